#!/usr/bin/env bats
# mfs rescue super-recover: bad superblock copies listed and rewritten from
# the newest good one, btrfs's output and exit codes, nothing written
# before the admin says yes.

load helpers

eval "helpers_$(declare -f teardown)"

teardown() {
	mfs_cleanup_mounts
	helpers_teardown
}

@test "rescue super-recover: every copy good exits 0 and writes nothing" {
	make_images 2
	mkfs.mfs -q -d raid1 -m raid1 $(imgs 2)
	md5sum $(imgs 2) >"$T/before"
	run --separate-stderr mfs rescue super-recover "$T/img1"
	assert_success
	assert_output "All supers are valid, no need to recover"
	run --separate-stderr mfs rescue super-recover -v "$T/img1"
	assert_success
	assert_line "[All good supers]:"
	[ "$(grep -c 'superblock bytenr' <<<"$output")" -eq 4 ]
	md5sum -c --quiet "$T/before"
}

@test "rescue super-recover: missing, corrupt and old copies listed, kept on 'no', rewritten on yes" {
	make_images 3
	mkfs.mfs -q -d raid1 -m raid1 $(imgs 3)
	# an old copy: the mirror of device 1 as it was before more commits
	dd if="$T/img1" of="$T/old" bs=4096 skip=$((67108864 / 4096)) count=1 status=none
	mfs_mount $(imgs 3) "$T/mnt"
	echo data >"$T/mnt/f"
	mfs filesystem sync "$T/mnt"
	echo more >"$T/mnt/g"
	mfs umount "$T/mnt"
	dd if="$T/old" of="$T/img1" bs=4096 seek=$((67108864 / 4096)) conv=notrunc status=none
	zero "$T/img2" 65536 4096
	corrupt "$T/img3" $((67108864 + 300))
	run --separate-stderr mfs check $(imgs 3)
	assert_failure 1
	md5sum $(imgs 3) >"$T/before"

	run --separate-stderr mfs rescue super-recover "$T/img1" <<<"n"
	[ "$status" -eq 4 ]
	assert_line "[All bad supers]:"
	assert_line --partial "Are you sure? [y/N]: Aborted to recover bad superblocks"
	# the bad ones, each with why
	bad=$(sed -n '/^\[All bad supers\]:/,$p' <<<"$output")
	grep -A2 -F "device name = $T/img1" <<<"$bad" | grep -qx $'\t\tstate = another generation'
	grep -A2 -F "device name = $T/img2" <<<"$bad" | grep -qx $'\t\tstate = missing'
	grep -A2 -F "device name = $T/img3" <<<"$bad" | grep -qx $'\t\tstate = corrupt'
	[ "$(grep -c 'superblock bytenr' <<<"$bad")" -eq 3 ]
	md5sum -c --quiet "$T/before"

	run --separate-stderr mfs rescue super-recover -y "$T/img1"
	[ "$status" -eq 2 ]
	assert_line "Recovered bad superblocks successful"
	run --separate-stderr mfs check $(imgs 3)
	assert_success
	refute grep -q '^ERROR\|^WARNING' <<<"$stderr"
	run mfs rescue super-recover "$T/img2"
	assert_success
	mfs_mount $(imgs 3) "$T/mnt"
	[ "$(cat "$T/mnt/f" "$T/mnt/g")" = "$(printf 'data\nmore')" ]
}

@test "rescue super-recover: usage, a mounted filesystem, not mfs" {
	make_images 2
	mkfs.mfs -q -d raid1 -m raid1 $(imgs 2)
	run --separate-stderr mfs rescue super-recover
	assert_failure 1
	truncate -s 1G "$T/plain"
	run --separate-stderr mfs rescue super-recover "$T/plain"
	[ "$status" -eq 3 ]
	mfs_mount $(imgs 2) "$T/mnt"
	run --separate-stderr mfs rescue super-recover -y "$T/img1"
	[ "$status" -eq 3 ]
	assert_stderr_line "ERROR: $T/img1 is mounted or in use by another program"
}
