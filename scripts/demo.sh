#!/usr/bin/env bash
# The main job, end to end on sparse image files in a temporary directory:
# make multi-device filesystems, show them, check them.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$top/build:$PATH"
work=$(mktemp -d /tmp/mfs-demo.XXXXXX)
export MFS_REGISTRY="$work/registry"
trap 'rm -rf "$work"' EXIT
cd "$work"
run() { echo; echo "\$ $*"; "$@"; }

for i in 1 2 3 4 5; do truncate -s 2G "d$i.img"; done

run mkfs.mfs -L demo0 -d raid0 -m dup d1.img d2.img
run mkfs.mfs -L demo5 -d raid5 -m raid1 d3.img d4.img d5.img
run mfs filesystem show
run mfs filesystem show --format json demo5
run mfs check d1.img
run mfs check d3.img
echo
echo "demo finished: two filesystems made, shown and checked in $work"
