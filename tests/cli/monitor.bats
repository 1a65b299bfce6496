#!/usr/bin/env bats
# mfs monitor: events for missing and failing devices, rising error
# counters and long operations ending, on stdout and through --program;
# faults injected with MFS_FAULT (kernel-shared/block/io.c), operations held at a
# chunk (restripe.bash).

load helpers
load restripe

setup_file() {
	big_template
}

# the common teardown, run after ours (the tests mount)
eval "helpers_$(declare -f teardown)"

teardown() {
	mfs_cleanup_mounts
	helpers_teardown
}

# a program that records each run: its arguments, then the environment
make_program() {
	cat >"$T/prog" <<'EOF'
#!/bin/sh
{
	echo "args: $*"
	echo "event=$MFS_EVENT fsid=$MFS_FSID mount=$MFS_MOUNT devid=${MFS_DEVID:-} device=${MFS_DEVICE:-}"
	echo "details=$MFS_DETAILS"
} >>"$(dirname "$0")/events"
EOF
	chmod +x "$T/prog"
}

# monitor_has REGEX: the program recorded a line matching REGEX
monitor_has() {
	grep -qE "$1" "$T/events" 2>/dev/null
}

@test "monitor --oneshot: a missing device, with the program run; --state reports changes only" {
	make_images 2
	mkfs.mfs -q -d raid1 -m raid1 $(imgs 2)
	uuid=$(fs_uuid "$T/img1")
	make_program
	# img2 is not there: mounted read-only, degraded
	mfs device scan -u "$T/img2"
	mfs_mount -o ro,degraded "$T/img1" "$T/mnt"
	run --separate-stderr mfs monitor --oneshot --program "$T/prog" "$T/mnt"
	assert_success
	assert_output "device-missing $T/mnt devid 2 (missing): not present"
	run cat "$T/events"
	assert_output "$(printf '%s\n' "args: device-missing $T/mnt 2" \
		"event=device-missing fsid=$uuid mount=$T/mnt devid=2 device=" "details=not present")"

	# with a state file: the first run reports, the next has nothing new
	rm "$T/events"
	run mfs monitor -1 -p "$T/prog" -s "$T/state" "$T/mnt"
	assert_output --partial "device-missing $T/mnt devid 2"
	run mfs monitor -1 -p "$T/prog" -s "$T/state" "$T/mnt"
	assert_success
	assert_output ""
	run grep -c "^event=" "$T/events"
	assert_output 1
	# a member named instead of the mount point, and every mfs mount
	run mfs monitor -1 -p "$T/prog" "$T/img1"
	assert_output --partial "device-missing $T/mnt devid 2"
	run mfs monitor -1 -p "$T/prog"
	assert_line "device-missing $T/mnt devid 2 (missing): not present"
}

@test "monitor --oneshot: writes failing on a device (MFS_FAULT) make it device-failing; read errors, errors-rising" {
	make_images 2
	mkfs.mfs -q -d raid1 -m raid1 $(imgs 2)
	make_program
	mfs device scan "$T/img1" "$T/img2" >/dev/null
	# every write to img2 after the mount fails
	MFS_FAULT="write:+1:s@img2" mfs_mount "$T/img1" "$T/mnt"
	mfs monitor -1 -p "$T/prog" -s "$T/state" "$T/mnt"
	[ ! -e "$T/events" ]	# nothing written yet, nothing failed
	head -c $((2 * MiB)) /dev/urandom >"$T/mnt/f"
	mfs filesystem sync "$T/mnt"
	run mfs monitor -1 -p "$T/prog" -s "$T/state" "$T/mnt"
	assert_success
	assert_output --regexp "^device-failing $T/mnt devid 2 \($T/img2\): write_io_errs 0 -> [1-9][0-9]*\$"
	run cat "$T/events"
	assert_line "args: device-failing $T/mnt 2"
	assert_line --regexp "^event=device-failing .* devid=2 device=$T/img2\$"
	mfs umount "$T/mnt"

	# a new filesystem whose reads of img1 fail: counted, data from img2
	rm "$T/events"
	mkfs.mfs -q -f -d raid1 -m raid1 $(imgs 2)
	mfs_mount "$T/img1" "$T/mnt"
	head -c $((2 * MiB)) /dev/urandom >"$T/src"
	cp "$T/src" "$T/mnt/f"
	mfs umount "$T/mnt"
	MFS_FAULT="read:+1:s@img1" mfs_mount -o ro,read_policy=devid:1 "$T/img1" "$T/mnt"
	mfs monitor -1 -p "$T/prog" -s "$T/state2" "$T/mnt" >"$T/first"
	cmp "$T/src" "$T/mnt/f"
	run mfs monitor -1 -p "$T/prog" -s "$T/state2" "$T/mnt"
	assert_output --regexp "^errors-rising $T/mnt devid 1 \($T/img1\): read_io_errs [0-9]+ -> [1-9][0-9]*\$"
	assert_line --partial "$T/img1"
	refute_output --partial "devid 2"
	run grep -c "^event=errors-rising .* devid=1 " "$T/events"
	assert_output 1
}

@test "monitor --oneshot: a hot spare taken into use is spare-taken, once" {
	make_images 3
	mkfs.mfs -q -d raid1 -m raid1 "$T/img1" "$T/img2"
	make_program
	mfs device scan "$T/img1" "$T/img2" >/dev/null
	mfs_mount "$T/img1" "$T/mnt"
	mfs device add --spare "$T/img3" "$T/mnt"
	mfs monitor -1 -p "$T/prog" -s "$T/state" "$T/mnt"
	[ ! -e "$T/events" ]
	mfs umount "$T/mnt"
	# img2 fails at its first write: the daemon replaces it with the spare
	MFS_FAULT="write:+1:s@img2" mfs_mount "$T/img1" "$T/mnt"
	head -c $((2 * MiB)) /dev/urandom >"$T/mnt/f"
	mfs filesystem sync "$T/mnt"
	wait_until 600 bash -c "mfs replace status -1 '$T/mnt' | grep -q 'finished on'"
	# seen after the replace ended: reported all the same, under the devid
	run mfs monitor -1 -p "$T/prog" -s "$T/state" "$T/mnt"
	assert_success
	assert_line "spare-taken $T/mnt devid 2 ($T/img3): devid 2 is being replaced by the hot spare devid 3"
	run grep -c "^event=spare-taken .* devid=2 device=$T/img3\$" "$T/events"
	assert_output 1
	run mfs monitor -1 -p "$T/prog" -s "$T/state" "$T/mnt"
	refute_output --partial "spare-taken"
}

@test "monitor: watching, it runs the program when a device starts failing" {
	make_images 2
	mkfs.mfs -q -d raid1 -m raid1 $(imgs 2)
	make_program
	mfs device scan "$T/img1" "$T/img2" >/dev/null
	MFS_FAULT="write:+1:s@img2" mfs_mount "$T/img1" "$T/mnt"
	mfs monitor --delay 0.05 --program "$T/prog" --state "$T/state" "$T/mnt" \
		>"$T/monitor.out" 2>&1 3>&- &
	echo $! >>"$T/.pids"
	# it has checked once: a healthy filesystem, nothing reported
	wait_until 60 grep -q "^dev 2 0 0 0 0 0 0 $T/img2\$" "$T/state"
	[ ! -e "$T/events" ]
	head -c $((2 * MiB)) /dev/urandom >"$T/mnt/f"
	mfs filesystem sync "$T/mnt"
	wait_until 60 monitor_has "^event=device-failing .* devid=2 "
	run cat "$T/monitor.out"
	assert_line --regexp "^device-failing $T/mnt devid 2 \($T/img2\): write_io_errs 0 -> [1-9]"
}

@test "monitor: a balance that ends is balance-finished, a cancelled one balance-cancelled" {
	big_fs
	make_program
	mfs_mount "$T/img1" "$T/mnt"
	hold_at 1
	mfs balance start --bg --full-balance "$T/mnt" >/dev/null
	wait_held
	# seen running...
	run mfs monitor -1 -p "$T/prog" -s "$T/state" "$T/mnt"
	assert_output ""
	grep -q "^fs .* 1 1 $T/mnt\$" "$T/state"
	# ...then done
	release
	wait_done "$T/mnt"
	run mfs monitor -1 -p "$T/prog" -s "$T/state" "$T/mnt"
	assert_output "balance-finished $T/mnt: done"
	run cat "$T/events"
	assert_line "args: balance-finished $T/mnt"

	hold_at 1
	mfs balance start --bg -dconvert=raid1 "$T/mnt" >/dev/null
	wait_held
	mfs monitor -1 -p "$T/prog" -s "$T/state" "$T/mnt"
	while_held mfs balance cancel "$T/mnt"
	run mfs monitor -1 -p "$T/prog" -s "$T/state" "$T/mnt"
	assert_output "balance-cancelled $T/mnt: cancelled"
}

@test "monitor: bad arguments" {
	run --separate-stderr mfs monitor -1 --delay 0 "$T"
	assert_failure 1
	assert_stderr_line "ERROR: invalid delay '0' (seconds, more than 0)"
	run --separate-stderr mfs monitor -1 --program "$T/nothing"
	assert_failure 1
	assert_stderr_line "ERROR: cannot run $T/nothing: No such file or directory"
	touch "$T/plain"
	run --separate-stderr mfs monitor -1 -p /bin/true "$T/plain"
	assert_failure 1
	assert_stderr_line "WARNING: $T/plain is not a mounted mfs filesystem or a member of one"
}
