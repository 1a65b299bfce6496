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
