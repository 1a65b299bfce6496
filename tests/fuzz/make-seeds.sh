#!/usr/bin/env bash
# Makes the seed corpus of the image fuzzer (tests/fuzz/corpus/): a few
# small single-device filesystems from mkfs.mfs, each packed by
# image-pack.py. Run from anywhere; MFS_BUILD names the build (default
# build/). Device uuids and times differ from run to run; what is in each
# seed does not.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${MFS_BUILD:-$top/build}
out=${1:-$top/tests/fuzz/corpus}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mfs-seeds.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# The files: a directory, a hard link, a symlink, an inline file, a file of
# a few extents with a hole, an xattr where the filesystem takes one.
root=$tmp/root
mkdir -p "$root/d/e"
echo hello >"$root/f"
ln "$root/f" "$root/d/g"
ln -s f "$root/l"
seq 1 3000 >"$root/d/e/text"
truncate -s 40K "$root/sparse"
printf 'tail' >>"$root/sparse"
python3 -c "import os, sys; os.setxattr(sys.argv[1], 'user.k', b'v')" "$root/f" 2>/dev/null || true
touch -h -d 2024-01-01 "$root" "$root"/* "$root"/d/* "$root"/d/e/*

# Many small files: an fs tree of a node over leaves (4 KiB nodes), for
# the key pointers and the parent/child checks.
many=$tmp/many
mkdir -p "$many/d"
for i in $(seq 1 60); do
	echo "$i" >"$many/d/file-$i"
done
touch -h -d 2024-01-01 "$many" "$many/d" "$many"/d/*

# seed NAME FLAGS MKFS-OPTIONS...: a 128 MiB image (mkfs.mfs's minimum),
# packed with the harness FLAGS (image-pack.py).
seed() {
	local name=$1 flags=$2
	shift 2
	rm -f "$tmp/img"
	truncate -s 128M "$tmp/img"
	"$build/mkfs.mfs" -q -K -U 6d667366-757a-7a00-0000-000000000001 "$@" "$tmp/img"
	python3 "$top/tests/fuzz/image-pack.py" pack "$tmp/img" "$out/$name" "$flags"
}

mkdir -p "$out"
seed empty-dup-16k 1
seed files-single-4k 1 -n 4096 -m single -r "$root"
seed files-dup-4k-xxhash 1 -n 4096 --csum xxhash -r "$root"
seed files-dup-8k-sha256 1 -n 8192 --csum sha256 -r "$root"
seed tree-levels-4k 1 -n 4096 -m single -r "$many"
# the check opens from superblock copy 1 (at 64 MiB)
seed files-dup-4k-super1 3 -n 4096 -r "$root"
ls -l "$out"
