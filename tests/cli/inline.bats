#!/usr/bin/env bats
# Small files are stored inline in the fs tree (up to 2048 bytes, btrfs's
# default max_inline): no data extent, no checksum item. Growing past that,
# preallocating or writing whole blocks turns the inline extent into a
# regular one; shrinking keeps it inline. Contents always match a model file
# on the host filesystem, across remounts, and check stays clean.

load helpers

eval "helpers_$(declare -f teardown)"

teardown() {
	mfs_cleanup_mounts
	helpers_teardown
}

# extent_types IMG INO: the types of the inode's file extents, in order.
extent_types() {
	mfs inspect-internal dump-tree -t fs "$1" |
		awk -v k="($2 EXTENT_DATA" 'index($0, "key " k) { want = 1; next }
			want && /type [0-9]/ { print $5; want = 0 }'
}

@test "files up to 2048 bytes are inline; larger ones are not; contents survive a remount" {
	local s ino

	make_images 2
	mkfs.mfs -q -f -d raid1 -m raid1 $(imgs 2)
	mfs_mount "$T/img1" "$T/mnt"
	mkdir "$T/model"
	for s in 1 100 2047 2048 2049 4096; do
		head -c "$s" /dev/urandom >"$T/model/f$s"
		cp "$T/model/f$s" "$T/mnt/f$s"
	done
	: >"$T/mnt/f0"
	: >"$T/model/f0"
	# st_blocks counts whole 4 KiB blocks, as btrfs does
	[ "$(stat -c %b "$T/mnt/f100")" = 8 ]
	[ "$(stat -c %b "$T/mnt/f0")" = 0 ]
	mfs umount "$T/mnt"

	for s in 1 100 2047 2048; do
		mfs_mount "$T/img1" "$T/mnt"
		ino=$(stat -c %i "$T/mnt/f$s")
		mfs umount "$T/mnt"
		run extent_types "$T/img1" "$ino"
		assert_output "(inline)"
	done
	for s in 2049 4096; do
		mfs_mount "$T/img1" "$T/mnt"
		ino=$(stat -c %i "$T/mnt/f$s")
		mfs umount "$T/mnt"
		run extent_types "$T/img1" "$ino"
		assert_output "(regular)"
	done
	run mfs check --check-data-csum "$T/img1"
	assert_success
	mfs_mount "$T/img1" "$T/mnt"
	for s in 0 1 100 2047 2048 2049 4096; do
		cmp "$T/model/f$s" "$T/mnt/f$s"
	done
	[ "$(stat -c %b "$T/mnt/f100")" = 8 ]
}

@test "inline files grow, shrink, get holes and preallocation like any file" {
	make_images 2
	mkfs.mfs -q -f -d raid0 -m raid1 $(imgs 2)
	mfs_mount "$T/img1" "$T/mnt"
	mkdir "$T/model"
	# every step on the mfs file and a model file on the host, compared
	# after each step (through the page cache and with O_DIRECT reads)
	run "$MFS_PY" -c '
import mmap, os, sys
mnt, model = sys.argv[1], sys.argv[2]
buf = mmap.mmap(-1, 1 << 20)
def both(name, f):
    for d in (mnt, model):
        f(os.path.join(d, name))
def same(name, step):
    a = open(os.path.join(mnt, name), "rb").read()
    b = open(os.path.join(model, name), "rb").read()
    fd = os.open(os.path.join(mnt, name), os.O_RDONLY | os.O_DIRECT)
    n = os.preadv(fd, [buf], 0)
    os.close(fd)
    if a != b or buf[:n] != b:
        print("%s differs after %s (%d/%d/%d bytes)" % (name, step, len(a), n, len(b)))
        sys.exit(1)
def write(off, data):
    def f(p):
        fd = os.open(p, os.O_WRONLY | os.O_CREAT, 0o644)
        os.pwrite(fd, data, off)
        os.close(fd)
    return f
def trunc(n):
    return lambda p: os.truncate(p, n)
def falloc(mode, off, n):
    def f(p):
        fd = os.open(p, os.O_WRONLY)
        os.posix_fallocate(fd, off, n) if mode == 0 else fallocate(fd, mode, off, n)
        os.close(fd)
    return f
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def fallocate(fd, mode, off, n):
    if libc.fallocate(fd, mode, ctypes.c_long(off), ctypes.c_long(n)):
        raise OSError(ctypes.get_errno(), "fallocate")
PUNCH = 0x02 | 0x01
steps = [
    ("a", "write 100", write(0, os.urandom(100))),
    ("a", "overwrite middle", write(40, b"x" * 20)),
    ("a", "append to 2048", write(100, os.urandom(1948))),
    ("a", "append past 2048", write(2048, b"tail")),
    ("a", "shrink to 10", trunc(10)),
    ("b", "write 1000", write(0, os.urandom(1000))),
    ("b", "shrink to 500", trunc(500)),
    ("b", "shrink to 0", trunc(0)),
    ("b", "write again", write(0, b"again")),
    ("b", "extend to 100000", trunc(100000)),
    ("b", "write at 50000", write(50000, b"far")),
    ("c", "write 300", write(0, os.urandom(300))),
    ("c", "punch 10..20", falloc(PUNCH, 10, 10)),
    ("d", "write 300", write(0, os.urandom(300))),
    ("d", "preallocate 0..16384", falloc(0, 0, 16384)),
    ("e", "write 200", write(0, os.urandom(200))),
    ("e", "whole block at 4096", write(4096, os.urandom(4096))),
    ("f", "write 2000 at 48", write(48, os.urandom(2000))),
]
for name, step, f in steps:
    both(name, f)
    same(name, step)
' "$T/mnt" "$T/model"
	assert_success
	# SEEK_DATA/SEEK_HOLE on an inline file: data at 0, the hole at its size
	echo small >"$T/mnt/s"
	run "$MFS_PY" -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
print(os.lseek(fd, 0, os.SEEK_DATA), os.lseek(fd, 0, os.SEEK_HOLE))
' "$T/mnt/s"
	assert_output "0 6"
	mfs umount "$T/mnt"
	run mfs check --check-data-csum "$T/img1"
	assert_success
	assert_line --partial "no error found"
	mfs_mount "$T/img1" "$T/mnt"
	for f in a b c d e f; do
		cmp "$T/model/$f" "$T/mnt/$f"
	done
}
