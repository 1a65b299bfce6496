#!/usr/bin/env bats
# mfs device add / delete (remove): live and offline, refusals that change
# nothing, delete in one pass never onto another device being deleted,
# pause/resume/cancel/status of a delete, survival of unmount and of a
# killed daemon. Every operation is followed by a check of every file's
# sha256 (online, and offline through `mfs check` + a ro mount).

load helpers
load restripe

setup_file() {
	big_template
}

# ---------------------------------------------------------------------------

@test "device add online: filesystem show has it at once and new chunks use it" {
	# 2 x 512M, single data in 102 MiB chunks
	fs_with -n 2 3 512M 150 -d single -m raid1
	mnt "$T/img1"
	[ "$(nr_devices "$T/img1")" = 2 ]
	run --separate-stderr mfs device add "$T/img3" "$T/mnt"
	assert_success
	assert_output ""
	assert_stderr_empty
	# at once, before anything else is written
	[ "$(nr_devices "$T/img1")" = 3 ]
	run show_line "$T/img1" 3
	assert_output "	devid    3 size 512.00MiB used 0.00B path $T/img3"
	verify_online

	# write more than the data chunks have free: the new chunk goes to the
	# device with the most room, the new one
	gen_file "$T/mnt/more" 120
	sync "$T/mnt/more"
	sums "$T/mnt" >"$T/want"
	used3=$(dev_used "$T/img1" 3)
	echo "used on devid 3: $used3"
	((used3 > 0))
	verify_online
	umnt
	run awk '$2 ~ /^Data/ && / 3:/' <(chunk_layout "$T/img1")
	refute_output ""
	verify_offline "$T/img1"
	verify_offline "$T/img3"
}

@test "device add offline: several at once, -K; the members know them" {
	fs_with -n 2 4 512M 20 -d raid1 -m raid1
	for i in 3 4; do seed_image "$T/img$i"; done
	run --separate-stderr mfs device add -K "$T/img3" "$T/img4" "$T/img1"
	assert_success
	assert_output ""
	assert_stderr_empty
	[ "$(nr_devices "$T/img2")" = 4 ]
	run show_line "$T/img1" 4
	assert_output "	devid    4 size 512.00MiB used 0.00B path $T/img4"
	# every member's superblock counts four devices
	for i in 1 2 3 4; do [ "$(super_field "$T/img$i" num_devices)" = 4 ]; done
	verify_offline "$T/img1"
	# and the new devices take part: raid1c4 now possible
	run mfs balance start -q -dconvert=raid1c4 "$T/img1"
	assert_success
	run awk '$2 ~ /^Data/ && NF != 6 { print }' <(chunk_layout "$T/img1")
	assert_output ""
	verify_offline "$T/img4"
}

@test "a device that left without being wiped: add and replace ask for -f, then take it" {
	fs_with -n 2 3 512M 20 -d raid1 -m raid1
	# img2 leaves while it is missing: replaced by img3, its superblock kept
	mv "$T/img2" "$T/img2.away"
	run mfs replace start 2 "$T/img3" "$T/img1"
	assert_success
	mv "$T/img2.away" "$T/img2"
	run show_line "$T/img1" 2
	assert_output --partial "path $T/img3"
	left="ERROR: $T/img2 was devid 2 of this filesystem, which it left (replaced or removed) without being wiped"

	run --separate-stderr mfs device add "$T/img2" "$T/img1"
	assert_failure 1
	assert_stderr_line "$left"
	assert_stderr_line "ERROR: use the -f option to force overwrite of $T/img2"
	run --separate-stderr mfs replace start 1 "$T/img2" "$T/img1"
	assert_failure
	assert_stderr_line "$left"
	[ "$(nr_devices "$T/img1")" = 2 ]
	# a member is refused as ever, -f or not
	run --separate-stderr mfs device add -f "$T/img3" "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: $T/img3 is already a member of this filesystem"
	run --separate-stderr mfs replace start -f 1 "$T/img3" "$T/img1"
	assert_failure
	assert_stderr_line "ERROR: target device $T/img3 is a member of this filesystem"

	# with -f the device that left is taken as a new one (it used to be
	# refused as a member, -f or not: only a wipe let it back)
	run --separate-stderr mfs device add -f "$T/img2" "$T/img1"
	assert_success
	[ "$(nr_devices "$T/img1")" = 3 ]
	run show_line "$T/img1" 3
	assert_output --partial "path $T/img2"
	verify_offline "$T/img1"
}

@test "device add refusals: member, other mfs, ext4, mounted, too small; nothing changes" {
	fs_with -n 2 2 512M 8 -d raid1 -m raid1
	foreign_devices 100M
	declare -A fp
	for f in img1 img2 other e4 small; do fp[$f]=$(fingerprint "$T/$f"); done
	layout=$(chunk_layout "$T/img1")

	refused() {
		local where=$1 dev=$2 f
		shift 2
		run --separate-stderr mfs device add "$dev" "$where"
		assert_failure 1
		assert_stdout_empty
		for line in "$@"; do assert_stderr_line "$line"; done
		[ "$(nr_devices "$T/img1")" = 2 ]
	}
	untouched() {
		for f in "$@"; do assert_untouched "$T/$f" "${fp[$f]}"; done
	}

	# offline
	refused "$T/img1" "$T/img2" "ERROR: $T/img2 is already a member of this filesystem"
	refused "$T/img1" "$T/img1" "ERROR: $T/img1 is already a member of this filesystem"
	refused "$T/img1" "$T/other" "ERROR: $T/other appears to contain an existing filesystem (type=mfs)" \
		"ERROR: use the -f option to force overwrite of $T/other"
	refused "$T/img1" "$T/e4" "ERROR: $T/e4 appears to contain an existing filesystem (type=ext4)" \
		"ERROR: use the -f option to force overwrite of $T/e4"
	refused "$T/img1" "$T/small" "ERROR: '$T/small' is too small to make a usable filesystem (100.00MiB)" \
		"ERROR: minimum size for each mfs device is 134217728 (128.00MiB)"
	run --separate-stderr mfs device add -f "$T/small" "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: '$T/small' is too small to make a usable filesystem (100.00MiB)"
	# several devices: all are checked before the first is touched
	run --separate-stderr mfs device add -f "$T/e4" "$T/e4" "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: $T/e4 is given twice (as $T/e4)"
	run --separate-stderr mfs device add -f "$T/e4" "$T/small" "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: '$T/small' is too small to make a usable filesystem (100.00MiB)"
	[ "$(nr_devices "$T/img1")" = 2 ]
	untouched img1 img2 other e4 small
	verify_offline "$T/img1"

	# online, plus a device mounted elsewhere (refused even with -f)
	mnt "$T/img1"
	refused "$T/mnt" "$T/img2" "ERROR: $T/img2 is already a member of this filesystem"
	refused "$T/mnt" "$T/img1" "ERROR: $T/img1 is already a member of this filesystem"
	refused "$T/mnt" "$T/other" "ERROR: $T/other appears to contain an existing filesystem (type=mfs)"
	refused "$T/mnt" "$T/e4" "ERROR: $T/e4 appears to contain an existing filesystem (type=ext4)"
	refused "$T/mnt" "$T/small" "ERROR: '$T/small' is too small to make a usable filesystem (100.00MiB)"
	mkdir "$T/mnt2"
	MFS_REGISTRY="$T/other-registry" mfs mount "$T/other" "$T/mnt2"
	echo "$T/mnt2" >>"$T/.mounts"
	run --separate-stderr mfs device add -f "$T/other" "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: $T/other is mounted on $T/mnt2"
	[ "$(nr_devices "$T/img1")" = 2 ]
	mfs umount "$T/mnt2"
	verify_online
	umnt
	untouched other e4 small
	[ "$(chunk_layout "$T/img1")" = "$layout" ]
	verify_offline "$T/img1"

	# -f takes a foreign filesystem's device
	mnt "$T/img1"
	run --separate-stderr mfs device add -f "$T/e4" "$T/mnt"
	assert_success
	[ "$(nr_devices "$T/img1")" = 3 ]
	run blkid -p -o value -s TYPE "$T/e4"
	refute_output "ext4"
	verify_online
	umnt
	verify_offline "$T/img1"
}

@test "device add: a member of another mounted mfs is refused by any name, even with -f" {
	fs_with -n 2 2 512M 8 -d raid1 -m raid1
	# the other filesystem's second member is mounted through a loop device
	truncate -s 512M "$T/o1" "$T/o2"
	loop=$(make_loop "$T/o2")
	MFS_REGISTRY="$T/other-registry" mkfs.mfs -q -d raid1 -m raid1 "$T/o1" "$loop"
	mkdir "$T/mnt2"
	MFS_REGISTRY="$T/other-registry" mfs mount -o device="$loop" "$T/o1" "$T/mnt2"
	echo "$T/mnt2" >>"$T/.mounts"
	echo precious >"$T/mnt2/keep"
	mnt "$T/img1"

	for dev in "$T/o2" "$loop"; do
		run --separate-stderr mfs device add -f "$dev" "$T/mnt"
		assert_failure 1
		assert_stderr_line "ERROR: $dev is mounted on $T/mnt2"
	done
	[ "$(nr_devices "$T/img1")" = 2 ]
	# a member that is not the mount's source resolves to its mount as well
	run --separate-stderr mfs balance status "$T/o2"
	assert_success
	assert_output "No balance found on '$T/mnt2'"
	mfs umount "$T/mnt2"
	run mfs check "$T/o1" "$loop"
	assert_success
	MFS_REGISTRY="$T/other-registry" mfs mount -o ro,device="$loop" "$T/o1" "$T/mnt2"
	[ "$(cat "$T/mnt2/keep")" = precious ]
	mfs umount "$T/mnt2"
	verify_online
}

@test "device delete of the mount's source device; it can be added back" {
	fs_with 3 512M 20 -d raid1 -m raid1
	mnt "$T/img1"
	run --separate-stderr mfs device delete "$T/img1" "$T/mnt"
	assert_success
	[ "$(nr_devices "$T/img2")" = 2 ]
	# the mount table still names img1 as the source: it is not mounted
	run --separate-stderr mfs device add -f "$T/img1" "$T/mnt"
	assert_success
	assert_stderr_empty
	[ "$(nr_devices "$T/img2")" = 3 ]
	# and a member resolves to the mount, the deleted source no longer does
	run --separate-stderr mfs balance status "$T/img3"
	assert_success
	assert_output "No balance found on '$T/mnt'"
	verify_online
	umnt
	verify_offline "$T/img2"
}

@test "mfs umount of a mount whose daemon was killed detaches it" {
	fs_with 2 512M 8 -d raid1 -m raid1
	mnt "$T/img1"
	kill -9 "$(daemon_pid)"
	run --separate-stderr mfs umount "$T/mnt"
	assert_success
	assert_stderr_line "WARNING: the daemon serving $T/mnt is gone; unmounting it (changes after the last commit are lost)"
	run ! is_mounted "$T/mnt"
	verify_offline "$T/img1"
	# a directory that is no mount at all is still an error
	run --separate-stderr mfs umount "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: $T/mnt is not a mounted mfs filesystem"
}

@test "device delete: by path and by devid, online; filesystem show at once; superblocks wiped" {
	fs_with 4 512M 60 -d raid1 -m raid1
	mnt "$T/img1"
	run --separate-stderr mfs device delete -q "$T/img4" "$T/mnt"
	assert_success
	assert_output ""
	assert_stderr_empty
	[ "$(nr_devices "$T/img1")" = 3 ]
	run show_line "$T/img1" 4
	assert_output ""
	run mfs inspect-internal dump-super "$T/img4"
	assert_failure
	verify_online
	run --separate-stderr mfs device remove 3 "$T/mnt"
	assert_success
	[ "$(nr_devices "$T/img1")" = 2 ]
	run mfs inspect-internal dump-super "$T/img3"
	assert_failure
	verify_online
	umnt
	[ "$(devids_in_chunks "$T/img1" | tr '\n' ' ')" = "1 2 " ]
	for i in 1 2; do [ "$(super_field "$T/img$i" num_devices)" = 2 ]; done
	verify_offline "$T/img1"
	# a removed device is blank for mfs: it can be added again without -f
	run --separate-stderr mfs device add "$T/img3" "$T/img4" "$T/img1"
	assert_success
	[ "$(nr_devices "$T/img1")" = 4 ]
	verify_offline "$T/img1"
}

@test "device delete: two devices in one pass, nothing lands on either" {
	fs_with 4 512M 100 -d raid1 -m raid1
	# spread every chunk's copies over all four first
	run mfs balance start -q --full-balance "$T/img1"
	assert_success
	run devids_in_chunks "$T/img1"
	assert_output "$(printf '1\n2\n3\n4')"
	mnt "$T/img1"
	run --separate-stderr mfs device delete "$T/img2" 4 "$T/mnt"
	assert_success
	[ "$(nr_devices "$T/img1")" = 2 ]
	verify_online
	umnt
	# no chunk uses either; both superblocks are gone
	run devids_in_chunks "$T/img1"
	assert_output "$(printf '1\n3')"
	for i in 2 4; do
		run mfs inspect-internal dump-super "$T/img$i"
		assert_failure
	done
	verify_offline "$T/img1"
}

@test "device delete refusals before anything moves: space, profile minimum, last device, unknown" {
	# not enough space: 3 x 256M single data holding 380 MiB (with the
	# raid1 metadata, more than two devices hold; 300 MiB would fit, in
	# pieces where no hole takes a whole chunk)
	fs_with 3 256M 380 -d single -m raid1
	for i in 1 2 3; do fp[$i]=$(fingerprint "$T/img$i"); done
	run --separate-stderr mfs device delete 3 "$T/img1"
	assert_failure 1
	assert_stdout_empty
	assert_stderr_regex '^ERROR: device delete: not enough space on the remaining devices: [0-9]+ bytes needed, [0-9]+ available \([1-9][0-9]* missing\)$'
	# "missing" is what the others lack
	read -r need avail miss < <(sed -E 's/.*: ([0-9]+) bytes needed, ([0-9]+) available \(([0-9]+) missing\)/\1 \2 \3/' <<<"$stderr")
	[ "$miss" = $((need - avail)) ]
	for i in 1 2 3; do assert_untouched "$T/img$i" "${fp[$i]}"; done
	run mfs balance status "$T/img1"
	assert_success
	# the same online
	layout=$(chunk_layout "$T/img1")
	mnt "$T/img1"
	run --separate-stderr mfs device delete "$T/img2" "$T/mnt"
	assert_failure 1
	assert_stderr_regex 'not enough space on the remaining devices: .*\([1-9][0-9]* missing\)$'
	verify_online
	umnt
	[ "$(chunk_layout "$T/img1")" = "$layout" ]
	[ "$(nr_devices "$T/img1")" = 3 ]
	verify_offline "$T/img1"
}

@test "device delete refusals: below a profile's minimum names it and suggests a convert" {
	# sparse 4G: converting the metadata chunk needs room for both layouts
	fs_with 3 4G 8 -d raid1 -m raid1c3
	for i in 1 2 3; do fp[$i]=$(fingerprint "$T/img$i"); done
	run --separate-stderr mfs device delete 3 "$T/img1"
	assert_failure 1
	assert_stderr_regex "^ERROR: device delete: unable to go below three devices on RAID1C3 \((metadata|system) chunks\): 2 would remain; convert first, e.g. 'mfs balance start -f -mconvert=raid1 $T/img1'$"
	for i in 1 2 3; do assert_untouched "$T/img$i" "${fp[$i]}"; done
	# after that convert (it lowers metadata redundancy: -f) the delete goes through
	run mfs balance start -q -mconvert=raid1 "$T/img1"
	assert_failure 1
	run mfs balance start -q -f -mconvert=raid1 "$T/img1"
	assert_success
	run --separate-stderr mfs device delete 3 "$T/img1"
	assert_success
	verify_offline "$T/img1"
	# raid1 data on two devices
	run --separate-stderr mfs device delete 1 "$T/img2"
	assert_failure 1
	assert_stderr_regex "^ERROR: device delete: unable to go below two devices on RAID1 \((data|metadata|system) chunks\): 1 would remain; convert first, e.g. 'mfs balance start -f -dconvert=single -mconvert=dup $T/img2'$"
	# two at once from three raid6
	fs2() { rm -f "$T"/img* "$MFS_REGISTRY"; fs_with 4 512M 8 -d raid6 -m raid1; }
	fs2
	run --separate-stderr mfs device delete 3 4 "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: device delete: unable to go below three devices on RAID6 (data chunks): 2 would remain; convert first, e.g. 'mfs balance start -dconvert=raid5 $T/img1'"
	verify_offline "$T/img1"
	# the only device
	rm -f "$T"/img* "$MFS_REGISTRY"
	fs_with 1 512M 8
	run --separate-stderr mfs device delete 1 "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: device delete: unable to remove the only writeable device"
	# not a member, no missing device
	run --separate-stderr mfs device delete 7 "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: error removing devid 7: not a device of this filesystem"
	truncate -s 200M "$T/stranger"
	run --separate-stderr mfs device delete "$T/stranger" "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: error removing device '$T/stranger': not a device of this filesystem"
	run --separate-stderr mfs device delete missing "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: error removing device 'missing': no missing devices found to remove"
	verify_offline "$T/img1"
}

# Removing a missing device needs a writable filesystem: nothing missing,
# or a read-only mount, are refused and change nothing (an offline delete
# opens the filesystem degraded: tests/cli/missing.bats).
@test "device delete missing: refused with nothing missing or read-only; nothing changes" {
	fs_with 3 512M 8 -d raid1 -m raid1
	mnt "$T/img1"
	run --separate-stderr mfs device delete missing "$T/mnt"
	assert_failure 1
	assert_stdout_empty
	assert_stderr_line "ERROR: error removing device 'missing': no missing devices found to remove"
	[ "$(nr_devices "$T/img1")" = 3 ]
	umnt
	mv "$T/img3" "$T/away3"
	for i in 1 2; do fp[$i]=$(fingerprint "$T/img$i"); done
	# a read-only degraded mount refuses the delete
	mnt -o ro,degraded "$T/img1"
	run --separate-stderr mfs device delete missing "$T/mnt"
	assert_failure 1
	assert_stdout_empty
	assert_stderr_line "ERROR: device delete failed on '$T/mnt': Read-only file system"
	[ "$(nr_devices "$T/mnt")" = 3 ]
	run mfs balance status "$T/mnt"
	assert_success
	verify_online
	umnt
	for i in 1 2; do assert_untouched "$T/img$i" "${fp[$i]}"; done
	# with the device back, nothing is missing and nothing was lost
	mv "$T/away3" "$T/img3"
	verify_offline "$T/img1"
	[ "$(nr_devices "$T/img1")" = 3 ]
}

@test "device delete: pause/resume/cancel/status via device delete and balance status; survives umount" {
	big_fs
	mnt "$T/img1"
	hold_at 1
	run --separate-stderr mfs device delete --bg 3 "$T/mnt"
	assert_success
	assert_output ""
	wait_held
	run mfs device delete status "$T/mnt"
	assert_failure 1
	assert_line --index 0 "Device delete on '$T/mnt' is running"
	run --separate-stderr mfs balance start --full-balance "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: unable to start balance, another exclusive operation 'device delete' in progress"
	run --separate-stderr while_held mfs device delete pause "$T/mnt"
	assert_success
	run mfs balance status "$T/mnt"
	assert_failure 1
	assert_line --index 0 "Device delete on '$T/mnt' is paused"
	# still a member while paused; it takes no new chunks
	[ "$(nr_devices "$T/img1")" = 3 ]
	verify_online
	umnt
	run mfs device delete status "$T/img1"
	assert_failure 1
	assert_line --index 0 "Device delete on '$T/img1' is paused"
	verify_offline "$T/img1"

	# skip_balance: stays paused; resume in the foreground finishes it,
	# with periodic progress lines (no terminal)
	mnt -o skip_balance "$T/img1"
	run mfs device delete status "$T/mnt"
	assert_failure 1
	assert_line --index 0 "Device delete on '$T/mnt' is paused"
	run --separate-stderr mfs device delete resume "$T/mnt"
	assert_success
	run mfs device delete status "$T/mnt"
	assert_success
	assert_output "No device delete found on '$T/mnt'"
	[ "$(nr_devices "$T/img1")" = 2 ]
	run mfs inspect-internal dump-super "$T/img3"
	assert_failure
	verify_online

	# cancel: the device stays, and takes chunks again (img3 back as devid 4)
	run --separate-stderr mfs device add "$T/img3" "$T/mnt"
	assert_success
	hold_at 1
	run --separate-stderr mfs device delete --bg 2 "$T/mnt"
	assert_success
	run --separate-stderr while_held mfs device delete cancel "$T/mnt"
	assert_success
	run mfs device delete status "$T/mnt"
	assert_success
	assert_output "No device delete found on '$T/mnt'"
	run --separate-stderr mfs device delete cancel "$T/mnt"
	assert_failure 2
	assert_stderr_line "ERROR: device delete cancel on '$T/mnt' failed: Not in progress"
	[ "$(nr_devices "$T/img1")" = 3 ]
	verify_online
	umnt
	verify_offline "$T/img1"
	# no longer marked as leaving: its flags are clear again
	[ "$(mfs inspect-internal dump-tree -t chunk "$T/img1" | awk '$1 == "devid" && $2 == 2 { print $8 }')" = 0x0 ]
	run mfs balance status "$T/img1"
	assert_success
}

@test "device delete: progress lines without a terminal, nothing with -q; survives a remount mid-way" {
	big_fs
	mnt "$T/img1"
	run --separate-stderr held_progress mfs device delete "$T/img3" "$T/mnt"
	assert_success
	[ "$(count_lines '^[0-9]+/[0-9]+ chunks, [0-9.]+[KMG]?i?B of [0-9.]+[KMG]iB \([0-9]+%\), [0-9.]+[KMG]?i?B/s, ETA [0-9]+:[0-9]{2}:[0-9]{2}$')" -ge 2 ]
	assert_line --regexp '\(100%\).*ETA 0:00:00$'
	[ "$(nr_devices "$T/img1")" = 2 ]
	verify_online
	run --separate-stderr mfs device add "$T/img3" "$T/mnt"
	assert_success
	run --separate-stderr mfs device delete -q "$T/img2" "$T/mnt"
	assert_success
	assert_output ""
	assert_stderr_empty
	[ "$(nr_devices "$T/img1")" = 2 ]
	verify_online
	# started, the filesystem unmounted mid-way: the next mount finishes it
	run --separate-stderr mfs device add "$T/img2" "$T/mnt"
	assert_success
	hold_at 2
	run --separate-stderr mfs device delete --bg "$T/img3" "$T/mnt"
	assert_success
	umnt_held
	run mfs balance status "$T/img1"
	assert_failure 1
	assert_line --index 0 "Device delete on '$T/img1' is paused"
	assert_line --index 1 --regexp '^2 out of about [0-9]+ chunks balanced'
	mnt "$T/img1"
	wait_done "$T/mnt"
	[ "$(nr_devices "$T/img1")" = 2 ]
	run mfs filesystem show "$T/img1"
	refute_output --partial "$T/img3"
	verify_online
	umnt
	run mfs inspect-internal dump-super "$T/img3"
	assert_failure
	verify_offline "$T/img1"
}

@test "device delete: SIGKILL of the daemon mid-delete; it resumes at mount and completes" {
	big_fs
	mnt "$T/img1"
	# killed when one chunk is done and the second copied, not yet swapped in
	hold_at 2
	mfs device delete --bg 2 "$T/mnt"
	wait_held
	kill_daemon
	release
	run mfs balance status "$T/img1"
	assert_failure 1
	assert_line --index 0 "Device delete on '$T/img1' is paused"
	run mfs check "$T/img1"
	assert_success
	mnt "$T/img1"
	wait_done "$T/mnt"
	[ "$(nr_devices "$T/img1")" = 2 ]
	verify_online
	umnt
	run devids_in_chunks "$T/img1"
	assert_output "$(printf '1\n3')"
	run mfs inspect-internal dump-super "$T/img2"
	assert_failure
	verify_offline "$T/img1"
}

@test "device add and delete need CAP_SYS_ADMIN" {
	fs_with -n 2 3 512M 8 -d raid1 -m raid1
	mnt "$T/img1"
	d=$T
	while [ "$d" != / ] && [ "$d" != /tmp ]; do chmod o+x "$d"; d=$(dirname "$d"); done
	id nobody >/dev/null 2>&1 || useradd -r -M nobody
	chmod 666 "$T/img3"
	seed_image "$T/img3"
	fp=$(fingerprint "$T/img3")
	as_nobody() { setpriv --reuid="$(id -u nobody)" --regid="$(id -g nobody)" --clear-groups --inh-caps=-all \
		env MFS_REGISTRY="$T/noreg" "$MFS_BUILD/mfs" "$@"; }
	run --separate-stderr as_nobody device add "$T/img3" "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: device add failed on '$T/mnt': Operation not permitted"
	assert_untouched "$T/img3" "$fp"
	run --separate-stderr as_nobody device delete 2 "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: device delete failed on '$T/mnt': Operation not permitted"
	[ "$(nr_devices "$T/img1")" = 2 ]
	verify_online
	umnt
	verify_offline "$T/img1"
}
