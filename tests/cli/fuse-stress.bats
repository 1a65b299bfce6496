#!/usr/bin/env bats
# Random file and namespace operations on mounted filesystems of every RAID
# profile: tests/fuse/fsx (two files) and tests/fuse/dirops (a tree) run at
# the same time, each checked against its own model; then unmount, a clean
# `mfs check`, mount again, the testers verify everything against their
# saved models and go on; unmount and check again.

load helpers

# teardown unmounts through mfs (waiting for the daemon), then the helpers clean up
eval "common_$(declare -f teardown)"
teardown() {
	if [ -n "${T:-}" ] && mountpoint -q "$T/mnt" 2>/dev/null; then
		mfs umount "$T/mnt" || umount -l "$T/mnt"
	fi
	common_teardown
}

FSX=$MFS_BUILD/tests/fuse/fsx
DIROPS=$MFS_BUILD/tests/fuse/dirops

# stress_mount NDEV [MOUNT-OPTIONS]
stress_mount() {
	mkdir -p "$T/mnt"
	run mfs mount ${2:+-o "$2"} $(imgs "$1") "$T/mnt" 3>&-
	assert_success
	mountpoint -q "$T/mnt"
}

# umount_unless_busy: mfs umount; false while it fails because the mount
# is busy
umount_unless_busy() {
	run mfs umount "$T/mnt"
	[ "$status" -eq 0 ] || ! grep -q "busy" <<<"$output"
}

stress_umount_check() {
	# the testers have just exited; the kernel may still count one of
	# their files as open for a moment
	wait_until 600 umount_unless_busy
	assert_success
	run mfs check $(imgs "$1")
	assert_success
}

# run_testers SEED FSX-OPS DIROPS-OPS [--resume]: all three at once; every
# failure's output is shown.
run_testers() {
	local seed=$1 fops=$2 dops=$3 resume=${4:-} rc=0 pids=() i

	"$FSX" $resume -S "$seed" -N "$fops" -m "$T/fsx1.model" "$T/mnt/fsx1" \
		>"$T/fsx1.out" 2>&1 3>&- &
	pids+=($!)
	"$FSX" $resume -S $((seed + 1)) -N "$fops" -l 4194304 -m "$T/fsx2.model" "$T/mnt/fsx2" \
		>"$T/fsx2.out" 2>&1 3>&- &
	pids+=($!)
	"$DIROPS" $resume -S "$seed" -N "$dops" -m "$T/dirops.model" "$T/mnt/tree" \
		>"$T/dirops.out" 2>&1 3>&- &
	pids+=($!)
	for i in 0 1 2; do
		wait "${pids[$i]}" || rc=1
	done
	if [ $rc -ne 0 ]; then
		for i in fsx1 fsx2 dirops; do
			echo "--- $i"
			cat "$T/$i.out"
		done >&2
	fi
	return $rc
}

# stress NDEV SEED MKFS-OPTIONS... [-- MOUNT-OPTIONS]
stress() {
	local ndev=$1 seed=$2 mopts=""
	shift 2
	local mkfs_args=()
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do
		mkfs_args+=("$1")
		shift
	done
	[ "${1:-}" = "--" ] && mopts=$2

	[ -x "$FSX" ] && [ -x "$DIROPS" ] || {
		echo "testers not built in $MFS_BUILD/tests/fuse (run scripts/build.sh)" >&2
		return 1
	}
	make_images "$ndev"
	run mkfs.mfs -q -f "${mkfs_args[@]}" $(imgs "$ndev")
	assert_success

	stress_mount "$ndev" "$mopts"
	run_testers "$seed" 3000 2000
	stress_umount_check "$ndev"

	stress_mount "$ndev" "$mopts"
	run_testers "$seed" 2000 1500 --resume
	stress_umount_check "$ndev"
}

@test "fuse stress: raid0 data and metadata, 3 devices" {
	stress 3 101 -d raid0 -m raid0
}

@test "fuse stress: raid1 data and metadata, 2 devices" {
	stress 2 102 -d raid1 -m raid1
}

@test "fuse stress: raid10 data and metadata, 4 devices" {
	stress 4 103 -d raid10 -m raid10
}

@test "fuse stress: raid5 data and metadata, 3 devices" {
	stress 3 104 -d raid5 -m raid5
}

@test "fuse stress: raid6 data and metadata, 5 devices" {
	stress 5 105 -d raid6 -m raid6
}

@test "fuse stress: raid5 data, raid1 metadata, zlib compression" {
	stress 3 106 -d raid5 -m raid1 -- compress=zlib
}

# The kernel does not write back cached pages before asking the server for
# SEEK_DATA/SEEK_HOLE: data only in the page cache must still be found.
@test "fuse stress: SEEK_DATA and SEEK_HOLE see data still in the page cache" {
	make_images 2
	run mkfs.mfs -q -f -d raid1 -m raid1 $(imgs 2)
	assert_success
	stress_mount 2
	run python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT | os.O_TRUNC)
os.ftruncate(fd, 1 << 20)
os.pwrite(fd, b"x" * 100, 500000)           # cached, not yet written back
print(os.lseek(fd, 0, os.SEEK_DATA))
os.pwrite(fd, b"y" * 100, 2 << 20)          # grows the file in the cache only
print(os.lseek(fd, 1500000, os.SEEK_HOLE))
print(os.lseek(fd, 1600000, os.SEEK_DATA))
' "$T/mnt/f"
	assert_success
	assert_output "$(printf '%s\n' 499712 1500000 2097152)"
	stress_umount_check 2
}
