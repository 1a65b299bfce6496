#!/usr/bin/env bats
# mfs check / fsck.mfs: clean filesystems, exit codes, and detection of
# damaged superblocks, tree blocks and the chunk tree.

load helpers

@test "check: a clean filesystem exits 0 with 'no error found'" {
	make_images 3
	mkfs.mfs -q -d raid5 -m raid1c3 $(imgs 3)
	u=$(fs_uuid "$T/img1")
	run --separate-stderr mfs check "$T/img1"
	assert_success
	assert_line --index 0 "Checking filesystem on $T/img1"
	assert_line --index 1 "UUID: $u"
	assert_line "found $(super_field "$T/img1" bytes_used) bytes used, no error found"
	assert_line "total tree bytes: $((6 * 16384))"
	assert_line "total data bytes: 0"
	assert_line "total csum bytes: 0"
	refute_line --partial "error(s) found"
	assert_stderr_line "Opening filesystem to check..."
	assert_stderr_line "[1/5] checking superblocks"
	assert_stderr_line "[2/5] checking chunks and device extents"
	assert_stderr_line "[3/5] checking tree blocks"
	assert_stderr_line "[4/5] checking extents and block groups"
	assert_stderr_line "[5/5] checking fs tree"
	refute grep -q ERROR <<<"$stderr"
	# --readonly is the default and accepted
	run mfs check --readonly "$T/img3"
	assert_success
	# -q: no phase lines
	run --separate-stderr mfs check -q "$T/img2"
	assert_success
	assert_stderr_empty
	assert_line --partial "no error found"
}

@test "check: finds the other members by itself, or from the command line" {
	make_images 2
	mkfs.mfs -q -m raid1 $(imgs 2)
	run mfs check "$T/img2"
	assert_success
	rm -f "$MFS_REGISTRY"
	run mfs check "$T/img1" "$T/img2"
	assert_success
	assert_line --partial "no error found"
	run --separate-stderr mfs check "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: device 2 is missing"
	assert_line --partial "error(s) found"
}

@test "check: usage errors and things that are not filesystems" {
	truncate -s 1G "$T/plain"
	run --separate-stderr mfs check
	assert_failure 1
	assert_stderr_line "mfs check: not enough arguments: 0 but at least 1 expected"
	run --separate-stderr mfs check -s 3 "$T/plain"
	assert_failure 1
	assert_stderr_line "ERROR: super mirror should be less than 3"
	run --separate-stderr mfs check --super=x "$T/plain"
	assert_failure 1
	assert_stderr_line "ERROR: invalid superblock copy: x"
	run --separate-stderr mfs check --clear-space-cache "$T/plain"
	assert_failure 1
	assert_stderr_line "mfs check: unrecognized option '--clear-space-cache'"
	run --separate-stderr mfs check "$T/plain"
	assert_failure 1
	assert_stderr_line "ERROR: not a valid mfs filesystem: $T/plain"
	refute_output --partial "no error found"
	run --separate-stderr mfs check "$T/nope"
	assert_failure 1
	assert_stderr_line "ERROR: cannot access '$T/nope': No such file or directory"
}

@test "check: refuses a filesystem held by another program unless --force" {
	make_images 1
	mkfs.mfs -q "$T/img1"
	hold_flock "$T/img1"
	run --separate-stderr mfs check "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: $T/img1 is mounted or in use by another program"
	run --separate-stderr mfs check --force "$T/img1"
	assert_success
	assert_line --partial "no error found"
}

@test "fsck.mfs: exit codes 0, 4, 8 and 16" {
	make_images 2
	mkfs.mfs -q -m raid1 $(imgs 2)
	run --separate-stderr fsck.mfs "$T/img1"
	[ "$status" -eq 0 ]
	assert_stderr_empty
	assert_line --partial "no error found"
	run --separate-stderr fsck.mfs -a "$T/img1"
	[ "$status" -eq 0 ]
	run --separate-stderr fsck.mfs -v "$T/img1"
	[ "$status" -eq 0 ]
	assert_stderr_line "[1/5] checking superblocks"

	# 16: usage
	run --separate-stderr fsck.mfs
	[ "$status" -eq 16 ]
	assert_stderr_line "usage: fsck.mfs [-anpyfv] [-s N] <device>"
	run --separate-stderr fsck.mfs -Z "$T/img1"
	[ "$status" -eq 16 ]
	run --separate-stderr fsck.mfs -s 3 "$T/img1"
	[ "$status" -eq 16 ]

	# 8: cannot open / not mfs
	truncate -s 1G "$T/plain"
	run --separate-stderr fsck.mfs "$T/plain"
	[ "$status" -eq 8 ]
	assert_stderr_line "ERROR: not a valid mfs filesystem: $T/plain"
	run --separate-stderr fsck.mfs "$T/nope"
	[ "$status" -eq 8 ]

	# 4: errors found
	zero "$T/img2" 65536 4096
	run --separate-stderr fsck.mfs "$T/img1"
	[ "$status" -eq 4 ]
	assert_stderr_line "ERROR: superblock copy 0 at 65536 on device 2 ($T/img2) is missing"
	assert_line --partial "error(s) found"
}

@test "check: a damaged primary superblock is reported per device, the mirror still opens the fs" {
	make_images 3
	mkfs.mfs -q -L sbtest $(imgs 3)
	u=$(fs_uuid "$T/img1")
	# garbage inside the primary copy of device 2: checksum mismatch
	corrupt "$T/img2" $((65536 + 300))
	run --separate-stderr mfs check "$T/img1"
	assert_failure 1
	assert_line "UUID: $u"
	assert_stderr_line "ERROR: superblock copy 0 at 65536 on device 2 ($T/img2) is corrupt: checksum or field mismatch"
	[ "$(grep -c '^ERROR' <<<"$stderr")" -eq 1 ]
	assert_line "1 error(s) found"
	assert_line --regexp "^found [0-9]+ bytes used, error\\(s\\) found$"

	# opened through the damaged device itself: the copy at 64 MiB wins
	run --separate-stderr mfs check "$T/img2"
	assert_failure 1
	assert_line "UUID: $u"
	assert_stderr_line "ERROR: superblock copy 0 at 65536 on device 2 ($T/img2) is corrupt: checksum or field mismatch"
	run mfs filesystem show "$T/img2"
	assert_success
	assert_line "Label: 'sbtest'  uuid: $u"
	refute_line --partial "missing"
	run mfs device ready "$T/img2"
	assert_success

	# -s 1 uses the mirror explicitly
	run --separate-stderr mfs check -s 1 "$T/img2"
	assert_failure 1
	assert_line --index 0 "using SB copy 1, bytenr 67108864"
	assert_line "Checking filesystem on $T/img2"
	assert_line "UUID: $u"
	assert_line "1 error(s) found"
	run --separate-stderr mfs check -s 1 "$T/img1"
	assert_failure 1
	assert_line --index 0 "using SB copy 1, bytenr 67108864"
	# -s 0 on the damaged device: that copy cannot be used
	run --separate-stderr mfs check -s 0 "$T/img2"
	assert_failure 1
	assert_stderr_line "ERROR: superblock copy 0 at 65536 on $T/img2 is damaged"
	refute_output --partial "found"
	# copy 2 does not exist on a 1 GiB device
	run --separate-stderr mfs check -s 2 "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: no mfs superblock copy 2 at 274877906944 on $T/img1"
}

@test "check: a zeroed primary superblock on the first device" {
	make_images 2
	mkfs.mfs -q $(imgs 2)
	u=$(fs_uuid "$T/img2")
	zero "$T/img1" 65536 4096
	run --separate-stderr mfs check "$T/img1"
	assert_failure 1
	assert_line "UUID: $u"
	assert_stderr_line "ERROR: superblock copy 0 at 65536 on device 1 ($T/img1) is missing"
	assert_line "1 error(s) found"
	# both copies gone: not mfs any more
	zero "$T/img1" $((64 * MiB)) 4096
	run --separate-stderr mfs check "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: not a valid mfs filesystem: $T/img1"
}

@test "check: a device that joined in a commit cut short in its superblock writes is not an error" {
	# the state a crash leaves when a joining device's mirror copy landed
	# and its primary did not: the others still one generation behind
	make_images 3
	mkfs.mfs -q -m raid1 -d raid1 $(imgs 2)
	local i off offs="65536 67108864"
	for i in 1 2; do
		for off in $offs; do
			dd if="$T/img$i" of="$T/sb$i.$off" bs=4096 skip=$((off / 4096)) count=1 status=none
		done
	done
	mfs device add "$T/img3" "$T/img1"
	for i in 1 2; do
		for off in $offs; do
			dd if="$T/sb$i.$off" of="$T/img$i" bs=4096 seek=$((off / 4096)) count=1 conv=notrunc status=none
		done
	done
	zero "$T/img3" 65536 4096
	run --separate-stderr mfs check $(imgs 3)
	assert_success
	assert_stderr_line "WARNING: superblock copy 0 at 65536 on device 3 ($T/img3) is not written yet: the last commit was interrupted writing superblocks; the next commit writes it"
	refute grep -q '^ERROR' <<<"$stderr"
	# the next commit writes it: clean, no warning
	mfs_mount $(imgs 3) "$T/mnt"
	echo data >"$T/mnt/f"
	mfs umount "$T/mnt"
	run --separate-stderr mfs check $(imgs 3)
	assert_success
	refute grep -q '^WARNING\|^ERROR' <<<"$stderr"
	# with every other copy current, the same missing copy is an error
	zero "$T/img3" 65536 4096
	run --separate-stderr mfs check $(imgs 3)
	assert_failure 1
	assert_stderr_line "ERROR: superblock copy 0 at 65536 on device 3 ($T/img3) is missing"
}

@test "check: one bad copy of a RAID1 tree block names the block and the device" {
	make_images 2
	mkfs.mfs -q -m raid1 $(imgs 2)
	b=$(tree_root_bytenr "$T/img1" extent)
	[ -n "$b" ]
	run physical_copies "$T/img1" "$b"
	[ "${#lines[@]}" -eq 2 ]
	assert_line --index 0 --regexp '^1 [0-9]+$'
	assert_line --index 1 --regexp '^2 [0-9]+$'
	phys2=${lines[1]#2 }
	cp --sparse=always "$T/img1" "$T/save1"
	cp --sparse=always "$T/img2" "$T/save2"

	corrupt "$T/img2" $((phys2 + 200))
	run --separate-stderr mfs check "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: extent tree block $b level 0: copy 2 (on devid 2): checksum, header or item mismatch"
	[ "$(grep -c '^ERROR' <<<"$stderr")" -eq 1 ]
	assert_line "1 error(s) found"
	run fsck.mfs "$T/img1"
	[ "$status" -eq 4 ]
	# the good copy is still served
	run mfs inspect-internal dump-tree -t extent "$T/img1"
	assert_success
	assert_line --partial "BLOCK_GROUP_ITEM"

	# the other copy instead
	cp --sparse=always "$T/save2" "$T/img2"
	run mfs check "$T/img1"
	assert_success
	phys1=$(physical_copies "$T/img1" "$b" | awk '$1 == 1 { print $2 }')
	corrupt "$T/img1" $((phys1 + 1000))
	run --separate-stderr mfs check "$T/img2"
	assert_failure 1
	assert_stderr_line "ERROR: extent tree block $b level 0: copy 1 (on devid 1): checksum, header or item mismatch"

	# both copies: the block is unreadable
	corrupt "$T/img2" $((phys2 + 200))
	run --separate-stderr mfs check "$T/img1"
	assert_failure 1
	assert_stderr_regex '^ERROR: extent tree (root|block [0-9]+.*) cannot be read'
	assert_line --partial "error(s) found"
	run fsck.mfs "$T/img1"
	[ "$status" -ne 0 ]
}

@test "check: one bad copy of a DUP tree block on a single device" {
	make_images 1
	mkfs.mfs -q "$T/img1"
	b=$(tree_root_bytenr "$T/img1" fs)
	run physical_copies "$T/img1" "$b"
	[ "${#lines[@]}" -eq 2 ]
	assert_line --index 0 --regexp '^1 [0-9]+$'
	assert_line --index 1 --regexp '^1 [0-9]+$'
	[ "${lines[0]}" != "${lines[1]}" ]
	second=${lines[1]#1 }
	corrupt "$T/img1" $((second + 64))
	run --separate-stderr mfs check "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: fs tree block $b level 0: copy 2 (on devid 1): checksum, header or item mismatch"
	assert_line "1 error(s) found"
}

@test "check: a damaged chunk tree root" {
	make_images 2
	mkfs.mfs -q -m raid1 $(imgs 2)
	cr=$(super_field "$T/img1" chunk_root)
	copies=$(physical_copies "$T/img1" "$cr")
	[ "$(wc -l <<<"$copies")" -eq 2 ]
	phys2=$(awk '$1 == 2 { print $2 }' <<<"$copies")
	phys1=$(awk '$1 == 1 { print $2 }' <<<"$copies")

	# one copy: reported with its device, the fs still opens
	corrupt "$T/img2" $((phys2 + 300))
	run --separate-stderr mfs check "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: chunk tree block $cr level 0: copy 2 (on devid 2): checksum, header or item mismatch"
	assert_line "1 error(s) found"

	# every copy: the filesystem cannot be opened
	corrupt "$T/img1" $((phys1 + 300))
	run --separate-stderr mfs check "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: the chunk tree (root block $cr) cannot be read: Structure needs cleaning; 'mfs rescue chunk-recover' rebuilds it from the device and extent trees"
	refute_output --partial "no error found"
	run --separate-stderr fsck.mfs "$T/img1"
	[ "$status" -eq 8 ]
	run --separate-stderr mfs inspect-internal dump-tree -t chunk "$T/img1"
	assert_failure 1
	run --separate-stderr mfs device ready "$T/img1"
	assert_failure 1
	# what the message says to do
	run mfs rescue chunk-recover -y "$T/img1"
	assert_success
	run mfs check "$T/img1"
	assert_success
}

@test "check: a missing member of a RAID1 filesystem" {
	make_images 3
	mkfs.mfs -q -m raid1 -d raid1 $(imgs 3)
	mv "$T/img3" "$T/away"
	run --separate-stderr mfs check "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: device 3 is missing"
	run fsck.mfs "$T/img1"
	[ "$status" -eq 4 ]
	mv "$T/away" "$T/img3"
	run mfs check "$T/img1"
	assert_success
}

# A member that fell behind still holds good copies of everything written
# before: --check-data-csum checks them (it skipped every copy on a stale
# member, so thousands of bad copies went unreported).
@test "check: bad copies on a member that fell behind are found, what it missed is not judged" {
	make_images 2
	mkfs.mfs -q -f -d raid1 -m raid1 $(imgs 2)
	mfs_mount "$T/img1" "$T/mnt"
	for i in 1 2 3; do head -c $((i * MiB + 12345)) /dev/urandom >"$T/mnt/f$i"; done
	mfs umount "$T/mnt"
	# devid 2 falls behind: an image of it from before the next session
	cp --sparse=always "$T/img2" "$T/old2"
	mfs_mount "$T/img1" "$T/mnt"
	head -c $((64 * 1024)) /dev/urandom >"$T/mnt/new"
	mfs umount "$T/mnt"
	cp --sparse=always "$T/old2" "$T/img2"
	# the member behind is named; no copy is bad (the new file's copy on
	# devid 2 was never written there, and is not judged)
	run --separate-stderr mfs check --check-data-csum "$T/img1" "$T/img2"
	assert_stderr_regex "^(WARNING|ERROR): superblock copy 0 on device 2 \($T/img2\) (is one generation behind|has generation)"
	refute grep -q "copy [0-9] (on devid" <<<"$stderr"
	# its copies of the files written before are damaged: every one is found
	run corrupt_copies --what data "$T/img1" 2
	assert_success
	sectors=$(awk '$1 == "damaged" && $3 == 2 { print $5 }' <<<"$output")
	[ "$sectors" -ge 784 ]
	run --separate-stderr mfs check --check-data-csum "$T/img1" "$T/img2"
	assert_failure 1
	# all but the new file's 16 sectors
	assert_equal "$(grep -c 'copy 2 (on devid 2): checksum mismatch' <<<"$stderr")" $((sectors - 16))
}

@test "check: an old image of a member from before a balance: the stripes placed on it since are not judged" {
	make_images 2
	mkfs.mfs -q -f -d raid1 -m raid1 $(imgs 2)
	mfs_mount "$T/img1" "$T/mnt"
	for i in 1 2; do head -c $((i * MiB + 4321)) /dev/urandom >"$T/mnt/f$i"; done
	mfs umount "$T/mnt"
	cp --sparse=always "$T/img2" "$T/old2"
	# the balance copies every chunk to new stripes, on devid 2 too; the
	# extents keep their generations
	mfs_mount "$T/img1" "$T/mnt"
	run mfs balance start --full-balance "$T/mnt"
	assert_success
	mfs umount "$T/mnt"
	cp --sparse=always "$T/old2" "$T/img2"
	run --separate-stderr mfs check --check-data-csum "$T/img1" "$T/img2"
	assert_failure 1
	assert_stderr_regex "^ERROR: superblock copy 0 on device 2 \($T/img2\) has generation"
	refute grep -q "copy [0-9] (on devid" <<<"$stderr"
}
