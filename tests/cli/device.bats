#!/usr/bin/env bats
# mfs device scan / ready

load helpers

@test "device scan: registering members lets check find them from one path" {
	make_images 3
	mkfs.mfs -q -m raid1 $(imgs 3)
	rm -f "$MFS_REGISTRY"
	# without registration the other members are not found
	run --separate-stderr mfs check "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: device 2 is missing"
	assert_stderr_line "ERROR: device 3 is missing"

	run --separate-stderr mfs device scan "$T/img2" img3
	assert_success
	assert_line --index 0 "Scanning for mfs filesystems on '$T/img2'"
	assert_line --index 1 "Scanning for mfs filesystems on 'img3'"
	assert_stderr_empty
	# the registry holds absolute paths
	run cat "$MFS_REGISTRY"
	assert_line "$T/img2"
	assert_line "$T/img3"
	[ "${#lines[@]}" -eq 2 ]

	run mfs check "$T/img1"
	assert_success
	assert_line --partial "no error found"
	run mfs device ready "$T/img1"
	assert_success

	# scanning again does not duplicate entries
	mfs device scan "$T/img2" >/dev/null
	[ "$(grep -c "^$T/img2\$" "$MFS_REGISTRY")" -eq 1 ]
}

@test "device scan: a non-mfs file or a missing path is an error and is not registered" {
	make_images 1
	mkfs.mfs -q "$T/img1"
	truncate -s 1G "$T/plain"
	run --separate-stderr mfs device scan "$T/plain"
	assert_failure 1
	assert_line "Scanning for mfs filesystems on '$T/plain'"
	assert_stderr_line "ERROR: device scan failed on '$T/plain': not an mfs device"
	run --separate-stderr mfs device scan "$T/nope"
	assert_failure 1
	assert_stderr_line "ERROR: device scan failed on '$T/nope': No such file or directory"
	# one bad argument does not stop the others
	rm -f "$MFS_REGISTRY"
	run --separate-stderr mfs device scan "$T/plain" "$T/img1"
	assert_failure 1
	run cat "$MFS_REGISTRY"
	assert_output "$T/img1"
}

@test "device scan: an image whose every superblock is damaged is refused" {
	make_images 1
	mkfs.mfs -q "$T/img1"
	rm -f "$MFS_REGISTRY"
	corrupt "$T/img1" $((65536 + 300))
	corrupt "$T/img1" $((64 * MiB + 300))
	run --separate-stderr mfs device scan "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: device scan failed on '$T/img1': no valid superblock"
	[ ! -s "$MFS_REGISTRY" ]
}

@test "device scan --forget: one device, or every stale entry" {
	make_images 3
	mkfs.mfs -q -m raid1 $(imgs 3)
	run cat "$MFS_REGISTRY"
	[ "${#lines[@]}" -eq 3 ]

	run --separate-stderr mfs device scan --forget "$T/img3"
	assert_success
	refute grep -qx "$T/img3" "$MFS_REGISTRY"
	grep -qx "$T/img1" "$MFS_REGISTRY"
	grep -qx "$T/img2" "$MFS_REGISTRY"
	run mfs device ready "$T/img1"
	assert_failure 1

	# -u without arguments drops only entries that are no longer mfs
	mfs device scan "$T/img3" >/dev/null
	rm "$T/img2"
	run --separate-stderr mfs device scan -u
	assert_success
	run cat "$MFS_REGISTRY"
	assert_line "$T/img1"
	assert_line "$T/img3"
	refute_line "$T/img2"

	run --separate-stderr mfs device scan -d -u
	assert_failure 1
	assert_stderr_line "ERROR: --all-devices and --forget cannot be used together"
	assert_stderr_regex '^usage: mfs device scan '
}

@test "device scan without arguments registers block-device members and drops stale entries" {
	make_images 2
	l1=$(make_loop "$T/img1")
	l2=$(make_loop "$T/img2")
	mkfs.mfs -q "$l1" "$l2"
	echo "$T/gone" >"$MFS_REGISTRY"
	run --separate-stderr mfs device scan
	assert_success
	assert_output "Scanning for mfs filesystems"
	run cat "$MFS_REGISTRY"
	assert_line "$l1"
	assert_line "$l2"
	refute_line "$T/gone"
	run mfs device ready "$l2"
	assert_success
}

@test "device ready: 0 when complete (silent), 1 with a member missing" {
	make_images 3
	mkfs.mfs -q $(imgs 3)
	run --separate-stderr mfs device ready "$T/img2"
	assert_success
	assert_stdout_empty
	assert_stderr_empty
	mv "$T/img3" "$T/moved"
	run --separate-stderr mfs device ready "$T/img1"
	assert_failure 1
	assert_stdout_empty
	# naming the moved member makes it complete again
	mfs device scan "$T/moved" >/dev/null
	run mfs device ready "$T/img1"
	assert_success
}

@test "device ready: loop devices need no registration" {
	make_images 2
	l1=$(make_loop "$T/img1")
	l2=$(make_loop "$T/img2")
	mkfs.mfs -q "$l1" "$l2"
	rm -f "$MFS_REGISTRY"
	run mfs device ready "$l1"
	assert_success
	losetup -d "$l2"
	run mfs device ready "$l1"
	assert_failure 1
}

@test "device ready: 1 for a non-mfs file, a missing path, bad arguments" {
	truncate -s 1G "$T/plain"
	run --separate-stderr mfs device ready "$T/plain"
	assert_failure 1
	assert_stderr_line "ERROR: not a valid mfs filesystem: $T/plain"
	run --separate-stderr mfs device ready "$T/nope"
	assert_failure 1
	run --separate-stderr mfs device ready
	assert_failure 1
	assert_stderr_line "mfs device ready: exactly 1 argument expected, 0 given"
	run --separate-stderr mfs device ready a b
	assert_failure 1
	assert_stderr_line "mfs device ready: exactly 1 argument expected, 2 given"
}
