#!/usr/bin/env bats
# Self-heal: with one device's copy of data and metadata damaged (two devices
# for raid6) - a second or later copy, so that a heal that always rewrote
# the first copy fails - every file reads back correctly through the mount,
# the bad copies are rewritten, the device error counters rise by exactly
# what was damaged and persist, and check is clean afterwards. Bad raid5/6
# parity is never trusted. Also `mfs device stats` itself.

load helpers

eval "helpers_$(declare -f teardown)"

teardown() {
	mfs_cleanup_mounts
	helpers_teardown
}

# selfheal PROFILE NDEVS BAD_DEVIDS [corrupt-copies.py options]
# The first read pass mounts with read_policy=devid:BAD, so mirrored reads
# take the bad device's copies (raid5/6 read the data column first anyway):
# reads heal what they read; copies no read touches are for scrub.
selfheal() {
	local profile=$1 n=$2 bad=$3 d k v expected
	shift 3

	make_images "$n"
	mkfs.mfs -q -f -d "$profile" -m "$profile" $(imgs "$n")
	mfs_mount "$T/img1" "$T/mnt"
	populate "$T/mnt"
	tree_sums "$T/mnt" >"$T/sums"
	mfs umount "$T/mnt"
	run mfs check --check-data-csum "$T/img1"
	assert_success
	run stats_of "$T/img1"
	refute_output --regexp ' [1-9][0-9]*$'

	# damage every live block and data extent the bad devices hold (the
	# copies chosen)
	run corrupt_copies "$@" "$T/img1" "$bad"
	assert_success
	echo "# $profile: $(tr '\n' ' ' <<<"$output")" >&3
	assert_line --regexp '^tree_blocks [1-9][0-9]* data_extents [1-9][0-9]*$'
	for d in ${bad//,/ }; do
		assert_line --regexp "^devid $d bytes [1-9][0-9]{6,}\$"
		assert_line --regexp "^damaged devid $d data_sectors [1-9][0-9]* tree_blocks [1-9][0-9]*\$"
	done
	expected=$(damaged_counts "$bad")
	# check sees the damage
	run mfs check --check-data-csum "$T/img1"
	assert_failure

	# every file reads back correctly; reads prefer the damaged device's
	# copies (read_policy=devid:N), so each is found and healed
	mfs_mount -o "read_policy=devid:${bad%%,*}" "$T/img1" "$T/mnt"
	run read_all "$T/mnt" "$T/sums"
	assert_success
	# the counters rose on the damaged devices only, online ...
	run mfs device stats -c "$T/mnt"
	assert_equal "$status" 64
	for d in ${bad//,/ }; do
		assert_line --regexp "^\[$T/img$d\]\.corruption_errs +[1-9][0-9]*\$"
	done
	mfs umount "$T/mnt"

	# ... and persisted in the device tree: one error per damaged data
	# sector and tree block of each bad copy (each was read once, through
	# the bad copy, and rewritten)
	assert_corruption_errs "$T/img1" "$n" "$expected"

	# the bad copies were rewritten: check reads every copy and finds them good
	run mfs check --check-data-csum "$T/img1"
	assert_success
	assert_output --partial "no error found"

	# a second read pass finds nothing new
	mfs_mount "$T/img1" "$T/mnt"
	run read_all "$T/mnt" "$T/sums"
	assert_success
	mfs umount "$T/mnt"
	stats_of "$T/img1" >"$T/stats2"
	run diff "$T/stats1" "$T/stats2"
	assert_success
	run mfs check --check-data-csum "$T/img1"
	assert_success
}

# (mkfs gives every chunk its stripes in devid order: devid N holds copy N
# of raid1*, devids 2 and 4 the second copies of raid10's pairs; --copy
# makes sure no other copy is touched.) Of the metadata, the files' tree is
# damaged: the blocks the open reads (chunk tree, tree roots) are read
# before read_policy applies, from their first copy, so a bad later copy
# of those is met by no read - it is left for a scrub.
@test "raid1: the second copy of data and metadata damaged: read back, healed, counted, check clean" {
	selfheal raid1 2 2 --copy 2 --owner 5
}

@test "raid1c3: the third copy damaged: read back, healed, counted, check clean" {
	selfheal raid1c3 3 3 --copy 3 --owner 5
}

@test "raid10: the second copy of a pair damaged (zeroed): read back, healed, counted, check clean" {
	selfheal raid10 4 4 --zero --copy 2 --owner 5
}

@test "raid5: one device's data columns damaged: rebuilt from parity, healed, counted, check clean" {
	selfheal raid5 3 2
}

@test "raid5: one device zeroed" {
	selfheal raid5 3 1 --zero
}

@test "raid6: two devices damaged: rebuilt with P and Q, healed, counted, check clean" {
	selfheal raid6 4 1,3
}

@test "metadata alone damaged (raid1): tree blocks are healed and counted too" {
	make_images 2
	mkfs.mfs -q -f -d raid1 -m raid1 $(imgs 2)
	mfs_mount "$T/img1" "$T/mnt"
	populate "$T/mnt"
	tree_sums "$T/mnt" >"$T/sums"
	mfs umount "$T/mnt"
	run corrupt_copies --what metadata "$T/img1" 1
	assert_success
	assert_line --regexp '^tree_blocks [1-9][0-9]* data_extents 0$'
	assert_line --regexp '^damaged devid 1 data_sectors 0 tree_blocks [1-9][0-9]*$'
	# devid 1 holds the first copies, which every read tries first (the
	# open's too): each damaged block is met and counted once
	expected=$(awk '$1 == "damaged" { print $3, $7 }' <<<"$output")
	mfs_mount -o read_policy=devid:1 "$T/img1" "$T/mnt"
	run read_all "$T/mnt" "$T/sums"
	assert_success
	mfs umount "$T/mnt"
	run mfs check "$T/img1"
	assert_success
	assert_output --partial "no error found"
	assert_corruption_errs "$T/img1" 2 "$expected"
}

@test "dup: the second copy of data damaged: read back, healed, counted, check clean" {
	# reads take a dup chunk's first copy in its first 256 MiB and the
	# second above (kernel-shared/volumes/logical-io.c pick_copy): the file lies above,
	# past a filler removed again; a 4G device has a 409 MiB data chunk
	make_images 1 4G
	mkfs.mfs -q -f -d dup -m dup "$T/img1"
	mfs_mount "$T/img1" "$T/mnt"
	fallocate -l 260M "$T/mnt/filler"
	head -c $((3 * MiB)) /dev/urandom >"$T/src"
	cp "$T/src" "$T/mnt/f"
	rm "$T/mnt/filler"
	mfs umount "$T/mnt"
	run corrupt_copies --what data --copy 2 "$T/img1" 1
	assert_success
	assert_line "damaged devid 1 data_sectors $((3 * MiB / 4096)) tree_blocks 0"
	run mfs check --check-data-csum "$T/img1"
	assert_failure
	assert_line --regexp 'copy 2 \(on devid 1\): checksum mismatch$'
	refute_line --regexp 'copy 1 '
	mfs_mount "$T/img1" "$T/mnt"
	cmp "$T/src" "$T/mnt/f"
	mfs umount "$T/mnt"
	assert_corruption_errs "$T/img1" 1 "1 $((3 * MiB / 4096))"
	# the second copy was rewritten, not the first
	run mfs check --check-data-csum "$T/img1"
	assert_success
	assert_output --partial "no error found"
}

# parity_fs PROFILE N: N devices of PROFILE data (raid1 metadata) holding
# $T/src (8 MiB of random data) as f
parity_fs() {
	make_images "$2"
	mkfs.mfs -q -f -d "$1" -m raid1 $(imgs "$2")
	mfs_mount "$T/img1" "$T/mnt"
	head -c $((8 * MiB)) /dev/urandom >"$T/src"
	cp "$T/src" "$T/mnt/f"
	mfs umount "$T/mnt"
}

@test "raid5: bad parity is never used while the data is good, and check names it" {
	parity_fs raid5 3
	run corrupt_copies --what data --copy p "$T/img1" 1,2,3
	assert_success
	assert_line --regexp '^tree_blocks 0 data_extents [1-9][0-9]*$'
	mfs_mount "$T/img1" "$T/mnt"
	cmp "$T/src" "$T/mnt/f"
	mfs umount "$T/mnt"
	assert_corruption_errs "$T/img1" 3 ""
	# the data columns are good; what is rebuilt with P is not
	run mfs check --check-data-csum "$T/img1"
	assert_failure
	assert_line --regexp 'copy 2 \(rebuilt from parity, data on devid [1-3]\): checksum mismatch$'
	refute_line --regexp 'copy 1 '
}

@test "raid6: one device's data columns and every P strip damaged: rebuilt with Q, healed, counted" {
	parity_fs raid6 4
	run corrupt_copies --what data --copy 1 "$T/img1" 2
	assert_success
	assert_line --regexp '^damaged devid 2 data_sectors [1-9][0-9]* tree_blocks 0$'
	expected=$(damaged_counts 2)
	run corrupt_copies --what data --copy p "$T/img1" 1,2,3,4
	assert_success
	mfs_mount "$T/img1" "$T/mnt"
	cmp "$T/src" "$T/mnt/f"
	mfs umount "$T/mnt"
	# one error per damaged data sector, on the device that held it
	assert_corruption_errs "$T/img1" 4 "$expected"
	# the data columns were rewritten; the P strips are left for a scrub
	run mfs check --check-data-csum "$T/img1"
	assert_failure
	refute_line --regexp 'copy 1 '
	assert_line --regexp 'copy 2 \(rebuilt from parity, data on devid [1-4]\): checksum mismatch$'
}

@test "without another copy (single) damaged data is an I/O error, never wrong data" {
	make_images 1
	mkfs.mfs -q -f -d single -m dup "$T/img1"
	mfs_mount "$T/img1" "$T/mnt"
	head -c $((2 * MiB)) /dev/urandom >"$T/mnt/f"
	mfs umount "$T/mnt"
	run corrupt_copies --what data "$T/img1" 1
	assert_success
	mfs_mount "$T/img1" "$T/mnt"
	run cat "$T/mnt/f"
	assert_failure
	assert_output --partial "Input/output error"
	mfs umount "$T/mnt"
	(($(dev_stat "$T/img1" 1 corruption_errs) > 0))
}

@test "device stats: text, table, json, -c, -z; online and --offline" {
	make_images 2
	mkfs.mfs -q -f -d raid1 -m raid1 $(imgs 2)
	mfs_mount "$T/img1" "$T/mnt"
	head -c $((3 * MiB)) /dev/urandom >"$T/mnt/f"
	run mfs device stats "$T/mnt"
	assert_success
	assert_output "[$T/img1].write_io_errs    0
[$T/img1].read_io_errs     0
[$T/img1].flush_io_errs    0
[$T/img1].corruption_errs  0
[$T/img1].generation_errs  0
[$T/img2].write_io_errs    0
[$T/img2].read_io_errs     0
[$T/img2].flush_io_errs    0
[$T/img2].corruption_errs  0
[$T/img2].generation_errs  0"
	run mfs device stats -c "$T/mnt"
	assert_success
	# a member device of the mounted filesystem: just that one
	run mfs device stats "$T/img2"
	assert_success
	assert_equal "${#lines[@]}" 5
	assert_line "[$T/img2].corruption_errs  0"
	mfs umount "$T/mnt"

	run --separate-stderr mfs device stats "$T/img1"
	assert_failure
	assert_stderr_regex "to read device stats from a file image use --offline option"
	run --separate-stderr mfs device stats --offline -z "$T/img1"
	assert_failure
	assert_stderr_line "ERROR: --offline and --reset cannot be used together"

	corrupt_copies --what data "$T/img1" 1 >/dev/null
	mfs_mount -o read_policy=devid:1 "$T/img1" "$T/mnt"
	cat "$T/mnt/f" >/dev/null
	mfs umount "$T/mnt"
	n=$(dev_stat "$T/img1" 1 corruption_errs)
	((n == 3 * MiB / 4096))

	run mfs device stats --offline -T "$T/img1"
	assert_success
	w=${#T}
	w=$((w + 5))
	assert_line --index 0 --regexp "^Id Path +Write errors Read errors Flush errors Corruption errors Generation errors\$"
	assert_line --index 1 --regexp "^-- -{$w} -{12} -{11} -{12} -{17} -{17}\$"
	assert_line --index 2 --regexp "^ 1 $T/img1 +0 +0 +0 +$n +0\$"
	assert_line --index 3 --regexp "^ 2 $T/img2 +0 +0 +0 +0 +0\$"
	run mfs device stats --offline -c "$T/img1"
	assert_equal "$status" 64
	run mfs --format json device stats --offline "$T/img2"
	assert_success
	run "$MFS_PY" -c '
import json, sys
doc = json.loads(sys.argv[1])
assert doc["__header"]["version"] == "1"
for d in doc["device-stats"]:
    print(d["devid"], d["device"], d["write_io_errs"], d["corruption_errs"])
' "$output"
	assert_output "1 $T/img1 0 $n
2 $T/img2 0 0"
	# refused while mounted
	mfs_mount "$T/img1" "$T/mnt"
	run --separate-stderr mfs device stats --offline "$T/img1"
	assert_failure
	assert_stderr_line "ERROR: $T/img1 is mounted or in use by another program"
	# -z prints, then resets; the reset is persisted
	run mfs device stats -z "$T/mnt"
	assert_line "[$T/img1].corruption_errs  $n"
	run mfs device stats -c "$T/mnt"
	assert_success
	mfs umount "$T/mnt"
	assert_equal "$(dev_stat "$T/img1" 1 corruption_errs)" 0
	# the data was healed by the read before
	run mfs check --check-data-csum "$T/img1"
	assert_success
}

@test "read_policy=devid:N steers mirrored reads to that device's copies; bad values are refused" {
	make_images 2
	mkfs.mfs -q -f -d raid1 -m raid1 $(imgs 2)
	mfs_mount "$T/img1" "$T/mnt"
	head -c $((4 * MiB)) /dev/urandom >"$T/src"
	cp "$T/src" "$T/mnt/f"
	mfs umount "$T/mnt"
	corrupt_copies --what data "$T/img1" 1 >/dev/null
	# reads on devid 2: the damage on devid 1 is not even seen
	mfs_mount -o read_policy=devid:2 "$T/img1" "$T/mnt"
	cmp "$T/src" "$T/mnt/f"
	mfs umount "$T/mnt"
	[ "$(dev_stat "$T/img1" 1 corruption_errs)" = 0 ]
	# reads on devid 1: every block is found bad, served from devid 2, healed
	mfs_mount -o read_policy=devid:1 "$T/img1" "$T/mnt"
	cmp "$T/src" "$T/mnt/f"
	mfs umount "$T/mnt"
	[ "$(dev_stat "$T/img1" 1 corruption_errs)" = $((4 * MiB / 4096)) ]
	run mfs check --check-data-csum "$T/img1"
	assert_success

	run --separate-stderr mfs mount -o read_policy=devid:7 "$T/img1" "$T/mnt"
	assert_failure
	assert_stderr_line "ERROR: read_policy=devid:7: no such device in the filesystem"
	run --separate-stderr mfs mount -o read_policy=fastest "$T/img1" "$T/mnt"
	assert_failure
	assert_stderr_line "ERROR: unknown read_policy 'fastest' (least-busy or devid:N)"
}
