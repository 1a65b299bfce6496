#!/usr/bin/env bats
# A full filesystem (Documentation/space-reservation.md): writing through
# the mount until ENOSPC with small files (inline: pure metadata), large
# files and xattrs must end in ENOSPC for the writer, never in a failed
# commit: the mount stays writable, every write an fsync acknowledged is
# there after a remount, deleting works and the space is used again, df
# says the space is gone, and check is clean.

load helpers

eval "helpers_$(declare -f teardown)"

teardown() {
	mfs_cleanup_mounts
	helpers_teardown
}

fill() {
	"$MFS_PY" "$BATS_TEST_DIRNAME/enospc-fill.py" "$@"
}

# avail_mib MNT: what df offers, in MiB
avail_mib() {
	echo $(($(stat -f -c '%a * %S' "$1") / MiB))
}

# mounted_rw MNT: the server is alive and takes writes: a create works or,
# on a full filesystem, fails with ENOSPC (not EROFS, EIO, EUCLEAN)
mounted_rw() {
	local err

	is_mounted "$1" && ls "$1" >/dev/null || return 1
	if err=$(touch "$1/.probe" 2>&1); then
		rm "$1/.probe"
	else
		echo "$err"
		[[ $err == *"No space left on device"* ]]
	fi
}

# full_cycle MODE MKFS-OPTIONS... -- IMAGES: fill, delete, refill, verify.
full_cycle() {
	local mode=$1 n avail
	shift

	mkfs.mfs -q -f "$@"
	mfs_mount "$T/img1" "$T/mnt"
	run fill fill "$mode" "$T/mnt" "$T/manifest"
	echo "$output"
	assert_success
	mounted_rw "$T/mnt"
	avail=$(avail_mib "$T/mnt")
	echo "avail after filling: $avail MiB"
	[ "$avail" -le 8 ]
	n=$(wc -l <"$T/manifest")
	[ "$n" -gt 0 ]

	# deleting on the full filesystem works and gives the space back
	run fill free "$T/mnt" "$T/manifest" 0.3
	echo "$output"
	assert_success
	run fill refill "$T/mnt" "$T/manifest" "$mode"
	echo "$output"
	assert_success
	[ "$(wc -l <"$T/manifest")" -gt $((n * 7 / 10)) ]
	mounted_rw "$T/mnt"
	run fill verify "$T/mnt" "$T/manifest"
	echo "$output"
	assert_success
	mfs umount "$T/mnt"

	run mfs check "$T/img1"
	echo "$output"
	assert_success
	mfs_mount "$T/img1" "$T/mnt"
	run fill verify "$T/mnt" "$T/manifest"
	echo "$output"
	assert_success
	mounted_rw "$T/mnt"
}

@test "small files fill a single-device filesystem (-m dup): ENOSPC, nothing lost" {
	make_images 1 256M
	full_cycle small -d single -m dup "$T/img1"
}

@test "large files fill a single-device filesystem (-m dup): ENOSPC, nothing lost" {
	make_images 1 256M
	full_cycle large -d single -m dup "$T/img1"
}

@test "xattrs and directories fill a single-device filesystem (-m single)" {
	make_images 1 256M
	full_cycle xattr -d single -m single "$T/img1"
}

@test "small files fill a two-device raid1 filesystem" {
	make_images 2 256M
	full_cycle small -d raid1 -m raid1 $(imgs 2)
}

@test "large files fill a two-device raid1 filesystem" {
	make_images 2 256M
	full_cycle large -d raid1 -m raid1 $(imgs 2)
}

@test "an unaligned overwrite on a full filesystem fails with ENOSPC and keeps the old bytes" {
	make_images 1 256M
	mkfs.mfs -q -f -d single -m dup "$T/img1"
	mfs_mount "$T/img1" "$T/mnt"
	head -c $((64 * 1024)) /dev/urandom >"$T/model"
	cp "$T/model" "$T/mnt/keep"
	sync "$T/mnt/keep"
	run fill fill large "$T/mnt" "$T/manifest"
	assert_success
	# the last sectors too: files of 1 MiB, 64 KiB, 4 KiB until ENOSPC
	run "$MFS_PY" -c '
import errno, os, sys
n = 0
for size in (1 << 20, 1 << 16, 1 << 12):
    while True:
        p = os.path.join(sys.argv[1], "last%d" % n)
        n += 1
        try:
            fd = os.open(p, os.O_WRONLY | os.O_CREAT)
            try:
                os.write(fd, b"y" * size)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as e:
            if e.errno != errno.ENOSPC:
                sys.exit(2)
            break
' "$T/mnt"
	assert_success
	# O_DIRECT: the bytes reach the server as they are, not as whole pages
	run "$MFS_PY" -c '
import errno, mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_DIRECT)
try:
    os.pwrite(fd, b"x" * 100, 5000)
    os.fsync(fd)
except OSError as e:
    sys.exit(0 if e.errno == errno.ENOSPC else 2)
sys.exit(1)
' "$T/mnt/keep"
	assert_success
	cmp "$T/model" "$T/mnt/keep"
	mfs umount "$T/mnt"
	mfs_mount "$T/img1" "$T/mnt"
	cmp "$T/model" "$T/mnt/keep"
}

@test "truncating a file of many extents to 0 works on a full filesystem" {
	make_images 1 256M
	mkfs.mfs -q -f -d single -m dup "$T/img1"
	mfs_mount "$T/img1" "$T/mnt"
	# 200 extents: every 4 KiB block written and committed on its own
	"$MFS_PY" -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT)
for i in range(200):
    os.pwrite(fd, os.urandom(4096), i * 4096)
    os.fsync(fd)
os.close(fd)
' "$T/mnt/many"
	run fill fill small "$T/mnt" "$T/manifest"
	assert_success
	truncate -s 0 "$T/mnt/many"
	sync "$T/mnt/many"
	[ "$(stat -c %s "$T/mnt/many")" = 0 ]
	mfs umount "$T/mnt"
	run mfs check "$T/img1"
	assert_success
}

# endless_dd FILE SECONDS: dd from /dev/zero into FILE must stop with ENOSPC
# from write() within SECONDS (it never calls fsync).
endless_dd() {
	run timeout "$2" dd if=/dev/zero of="$1" bs=1M
	echo "$output"
	assert_failure 1
	assert_line --partial "error writing '$1': No space left on device"
}

# fill_small_fs: a 256 MiB single/dup filesystem mounted at $T/mnt, filled
# by an endless writer of $T/mnt/fill.
fill_small_fs() {
	make_images 1 256M
	mkfs.mfs -q -f -d single -m dup "$T/img1"
	mfs_mount "$T/img1" "$T/mnt"
	endless_dd "$T/mnt/fill" 120
}

@test "an endless writer gets ENOSPC from write() once the filesystem is full" {
	# with the writeback cache write() only fills the page cache; the
	# failed writeback must still stop the writer (it never calls fsync)
	fill_small_fs
	# far less than the page cache could hold was accepted
	[ "$(stat -c %s "$T/mnt/fill")" -lt $((1024 * MiB)) ]
	mounted_rw "$T/mnt"
	# the file stays usable: stat and reads work, and it can be removed
	stat "$T/mnt/fill" >/dev/null
	head -c 1M "$T/mnt/fill" | cmp - <(head -c 1M /dev/zero)
	rm "$T/mnt/fill"
	echo again >"$T/mnt/small"
	mfs umount "$T/mnt"
	run mfs check "$T/img1"
	assert_success
}

@test "writeback errors of many files are all kept: a later endless writer still stops" {
	# each failed writeback is remembered with its inode until a write()
	# through an open file takes it; files closed after the error never
	# take theirs, and that must not use up room for the next writer's
	fill_small_fs
	local n
	for n in $(seq 1 80); do
		head -c 256K /dev/zero >"$T/mnt/f$n" 2>/dev/null || true
	done
	endless_dd "$T/mnt/endless" 60
	mounted_rw "$T/mnt"
	rm -f "$T/mnt"/f* "$T/mnt/endless"
	mfs umount "$T/mnt"
	run mfs check "$T/img1"
	assert_success
}
