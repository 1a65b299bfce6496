#!/usr/bin/env bash
# The main job, end to end on sparse image files in a temporary directory:
# make multi-device filesystems, mount one, write data, add a device,
# balance, convert, delete a device, replace one, show and check.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$top/build:$PATH"
work=$(mktemp -d /tmp/mfs-demo.XXXXXX)
export MFS_REGISTRY="$work/registry"
cleanup() {
	mountpoint -q "$work/mnt" 2>/dev/null && mfs umount "$work/mnt"
	rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
run() { echo; echo "\$ $*"; "$@"; }

for i in 1 2 3 4 5 6 7; do truncate -s 2G "d$i.img"; done

run mkfs.mfs -L demo5 -d raid5 -m raid1 d4.img d5.img d6.img
run mfs check d4.img
run mkfs.mfs -L demo -d raid0 -m dup d1.img d2.img
mkdir mnt
run mfs mount d1.img mnt
echo; echo "\$ (write 300 MiB of files)"
for i in 1 2 3; do head -c 100M /dev/urandom > "mnt/file$i"; done
mkdir mnt/dir && cp -a /etc/hostname mnt/dir/ && ln -s file1 mnt/link
sha256sum mnt/file* > sums
run df -h mnt
run mfs filesystem show demo
run mfs device add -K d3.img mnt
run mfs balance start --full-balance mnt
run mfs filesystem show demo
run mfs balance start -dconvert=raid5 -mconvert=raid1 mnt
run mfs device delete d2.img mnt
run mfs filesystem show demo
run mfs replace start -B d3.img d7.img mnt
run mfs replace status -1 mnt
run mfs filesystem show demo
run mfs scrub start -B mnt
run mfs filesystem status mnt
run sha256sum -c sums
run mfs umount mnt
run mfs check d1.img
echo
echo "demo finished: filesystems made, mounted, grown, balanced, converted, shrunk, replaced, scrubbed, shown and checked in $work"
