#!/usr/bin/env bats
# Boot-time assembly, the mount's part (mfs(5) BOOT-TIME ASSEMBLY):
# x-mfs.device-timeout makes mount.mfs wait for missing members, then
# mount whole, degraded when the options say degraded, or refuse naming
# the missing member. The member that appears during the wait is a loop
# device attached once the mount says it waits: nothing sleeps to sync.

load helpers

# two_members: raid1 on two loop devices ($L1, $L2), $L2 then detached
two_members() {
	make_images 2 512M
	L1=$(make_loop "$T/img1")
	L2=$(make_loop "$T/img2")
	mkfs.mfs -q -f -d raid1 -m raid1 "$L1" "$L2"
	UUID=$(fs_uuid "$L1")
	losetup -d "$L2"
	mkdir -p "$T/mnt"
}

@test "mount wait: the timeout passes, no degraded: refused (32), naming the missing member" {
	two_members
	run --separate-stderr "$MFS_BUILD/mount.mfs" "$L1" "$T/mnt" -o x-mfs.device-timeout=1
	[ "$status" -eq 32 ]
	assert_stderr_line "waiting up to 1 s for the missing members of $L1"
	assert_stderr_line "$L1: members still missing after 1 s; not mounting (no 'degraded')"
	assert_stderr_line "ERROR: device 2 is missing; found the other members but not this one"
	run is_mounted "$T/mnt"
	assert_failure
	# without the option nothing waits, as before
	run --separate-stderr "$MFS_BUILD/mount.mfs" "$L1" "$T/mnt"
	[ "$status" -eq 32 ]
	refute [ -n "$(grep waiting <<<"$stderr")" ]
	# a bad value is refused before anything
	run --separate-stderr "$MFS_BUILD/mount.mfs" "$L1" "$T/mnt" -o x-mfs.device-timeout=soon
	[ "$status" -eq 32 ]
	assert_stderr_line "ERROR: invalid x-mfs.device-timeout 'soon' (0..86400 seconds)"
}

@test "mount wait: the timeout passes with degraded in the options: mounted degraded" {
	two_members
	run --separate-stderr "$MFS_BUILD/mount.mfs" "$L1" "$T/mnt" -o degraded,x-mfs.device-timeout=1 3>&-
	assert_success
	echo "$T/mnt" >>"$T/.mounts"
	assert_stderr_line "$L1: members still missing after 1 s; mounting degraded"
	run is_mounted "$T/mnt"
	assert_success
	run mfs --format json filesystem show "$T/mnt"
	assert_success
	assert_output --partial '"missing_devices": 1'
	echo data >"$T/mnt/f"
	mfs umount "$T/mnt"
}

@test "mount wait: the missing member appears during the wait: mounted whole, not degraded" {
	two_members
	# the member comes back once the mount says it waits (polling its
	# stderr, not the clock); the timeout is only there for a hang
	"$MFS_BUILD/mount.mfs" "$L1" "$T/mnt" -o degraded,x-mfs.device-timeout=600 \
		>"$T/out" 2>"$T/err" 3>&- &
	pid=$!
	wait_until 600 grep -q "^waiting up to 600 s for the missing members of $L1\$" "$T/err"
	make_loop "$T/img2" >/dev/null
	rc=0
	wait "$pid" || rc=$?
	cat "$T/err" >&2
	[ "$rc" -eq 0 ]
	echo "$T/mnt" >>"$T/.mounts"
	run grep -c 'still missing' "$T/err"
	assert_output 0
	run mfs --format json filesystem show "$T/mnt"
	assert_output --partial '"missing_devices": 0'
	run mfs device ready "$L1"
	assert_success
	mfs umount "$T/mnt"
}
