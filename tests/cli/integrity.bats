#!/usr/bin/env bats
# Never serve stale or foreign metadata (issue 15): an old copy of a member
# is caught up, never read as current; a copy of a filesystem never mixes
# with the original; a bad copy on any mirror is counted and repaired; a
# device that fails while mounted is dropped and the filesystem goes on.

load helpers

eval "helpers_$(declare -f teardown)"

teardown() {
	local l

	mfs_cleanup_mounts
	# loop devices over images on a tmpfs go before the tmpfs can
	if [ -n "${T:-}" ] && [ -f "$T/.loops" ]; then
		while read -r l; do
			[ -n "$l" ] && losetup -d "$l" 2>/dev/null
		done <"$T/.loops"
	fi
	helpers_teardown
}

# files NAME COUNT SIZE: COUNT files of random bytes under mnt
files() {
	local i

	for ((i = 1; i <= $2; i++)); do
		head -c "$3" /dev/urandom >"$T/mnt/$1$i"
	done
}

# history PROFILE N STALE: a filesystem on N images with a copy of image
# STALE taken between two rounds of commits (old files, then some deleted
# and new ones written); the sums of the final state in $T/sums; the old
# copy put back in place of the image.
history() {
	local profile=$1 n=$2 stale=$3

	make_images "$n"
	mkfs.mfs -q -f -d "$profile" -m raid1 $(imgs "$n")
	mfs_mount "$T/img1" "$T/mnt"
	files old 20 100000
	mkdir "$T/mnt/dir"
	mfs filesystem sync "$T/mnt"
	mfs umount "$T/mnt"
	cp --sparse=always "$T/img$stale" "$T/old"
	mfs_mount "$T/img1" "$T/mnt"
	rm "$T"/mnt/old1*
	files new 30 200000
	rmdir "$T/mnt/dir"
	mkdir "$T/mnt/newdir"
	echo later >"$T/mnt/newdir/f"
	mfs filesystem sync "$T/mnt"
	tree_sums "$T/mnt" >"$T/sums"
	mfs umount "$T/mnt"
	cp --sparse=always "$T/old" "$T/img$stale"
}

# stale_member_caught_up N STALE: the stale member is never served; the
# first read-write mount catches it up and leaves every copy current
stale_member_caught_up() {
	local n=$1 stale=$2

	# offline, read-only: the checker names the stale member
	run mfs check "$T/img1"
	assert_failure
	assert_output --regexp "superblock copy 0 on device $stale \($T/img$stale\) has generation"
	# a read-only mount never serves it where another copy exists
	mfs_mount -o ro,read_policy=devid:$stale "$T/img1" "$T/mnt"
	run tree_sums "$T/mnt"
	assert_output "$(cat "$T/sums")"
	mfs umount "$T/mnt"
	# the first read-write mount catches it up before anything else
	run --separate-stderr mfs mount -o read_policy=devid:$stale "$T/img1" "$T/mnt" 3>&-
	echo "$T/mnt" >>"$T/.mfs_mounts"
	assert_success
	assert_stderr_regex "^WARNING: device $stale \($T/img$stale\) was behind \(generation [0-9]+, the filesystem [0-9]+\): caught up, [1-9][0-9]* extents"
	run tree_sums "$T/mnt"
	assert_output "$(cat "$T/sums")"
	[ ! -e "$T/mnt/old10" ]
	[ ! -e "$T/mnt/dir" ]
	[ -e "$T/mnt/newdir/f" ]
	echo more >"$T/mnt/newdir/g"
	run mfs umount "$T/mnt"
	assert_success
	# every copy of every block and sector is good, the superblocks agree
	run mfs check --check-data-csum "$T/img1"
	assert_success
	assert_output --partial "no error found"
	# and what the mount caught up is read from the member itself now
	mfs_mount -o ro,read_policy=devid:$stale "$T/img1" "$T/mnt"
	run cat "$T/mnt/newdir/g"
	assert_output more
	mfs umount "$T/mnt"
	assert_equal "$(dev_stat "$T/img1" "$stale" generation_errs)" 0
	assert_equal "$(dev_stat "$T/img1" "$stale" corruption_errs)" 0
}

@test "stale member (raid1): an old image of a member is caught up at mount, never served" {
	history raid1 2 1
	stale_member_caught_up 2 1
}

@test "stale member (raid5): its columns are rebuilt from the rest of each row" {
	history raid5 3 2
	stale_member_caught_up 3 2
}

@test "stale member holding the only copy (raid0): refused with the reason, nothing lost" {
	history raid0 2 2
	run --separate-stderr mfs mount "$T/img1" "$T/mnt" 3>&-
	assert_failure
	assert_stderr_regex "^ERROR: device 2 \($T/img2\) is behind: its superblock is at generation [0-9]+, the filesystem at [0-9]+, and [1-9][0-9]* extents written since then have no good copy on the other devices; mount with -o degraded to go on without it"
	run is_mounted "$T/mnt"
	assert_failure
	# read-only, what the stale member cannot have is an I/O error, never old data
	mfs_mount -o ro "$T/img1" "$T/mnt"
	run cat "$T/mnt/new5"
	assert_failure
	assert_output --partial "Input/output error"
	run cat "$T/mnt/old5"
	assert_success
	mfs umount "$T/mnt"
}

# A crash between the superblock writes of a commit on a degraded raid5:
# a present member's superblock is behind while its data is all there.
# With a column of every old row gone, its parity cannot judge the stale
# column; the checksums do, and the member is caught up, not dropped
# (dropping it lost every chunk that also had a stripe on the missing one).
# torn_degraded_raid5: raid5 on three images, devid 3 gone, files written
# degraded (sums in $T/sums), devid 1's superblocks put back as they were
# one commit before the last.
torn_degraded_raid5() {
	local o

	make_images 3
	mkfs.mfs -q -f -d raid5 -m raid1 $(imgs 3)
	mfs_mount "$T/img1" "$T/mnt"
	head -c 4096 /dev/urandom >"$T/mnt/old"
	mfs umount "$T/mnt"
	mv "$T/img3" "$T/gone"
	mfs_mount -o degraded "$T/img1" "$T/img2" "$T/mnt" 2>/dev/null
	mfs filesystem sync "$T/mnt"
	# the superblock copies (64 KiB, 64 MiB) of devid 1 before the next commit
	for o in 16 16384; do
		dd if="$T/img1" of="$T/sb.$o" bs=4096 skip=$o count=1 status=none
	done
	# (new chunks: the dev tree leaf of the old chunk's stripes is rewritten)
	files new 2 300000
	mfs filesystem sync "$T/mnt"
	tree_sums "$T/mnt" >"$T/sums"
	mfs umount "$T/mnt"
	for o in 16 16384; do
		dd if="$T/sb.$o" of="$T/img1" bs=4096 seek=$o count=1 conv=notrunc status=none
	done
}

# mount_caught_up: mounted -o degraded, devid 1 is caught up (not dropped)
mount_caught_up() {
	run --separate-stderr mfs mount -o degraded "$T/img1" "$T/img2" "$T/mnt" 3>&-
	echo "$T/mnt" >>"$T/.mfs_mounts"
	assert_success
	assert_stderr_regex "^WARNING: device 1 \($T/img1\) was behind \(generation [0-9]+, the filesystem [0-9]+\): caught up"
}

@test "degraded raid5: a member whose superblock alone is behind is caught up, not dropped" {
	torn_degraded_raid5
	mount_caught_up
	run tree_sums "$T/mnt"
	assert_output "$(cat "$T/sums")"
	echo more >"$T/mnt/more"
	run mfs umount "$T/mnt"
	assert_success
	# nothing but the missing member is wrong, and devid 1 serves what it holds
	run mfs check --check-data-csum "$T/img1" "$T/img2"
	assert_output --partial "ERROR: device 3 is missing"
	refute_output --regexp "ERROR: (superblock|.*copy)"
	mfs_mount -o ro,degraded "$T/img1" "$T/img2" "$T/mnt"
	run cat "$T/mnt/more"
	assert_output more
	run tree_sums "$T/mnt"
	assert_output --partial "$(cat "$T/sums")"
}

@test "degraded raid5: bad sectors on another member do not get the member that is behind dropped" {
	torn_degraded_raid5
	# every data column devid 2 holds damaged: what devid 1 answers for
	# (its own columns, what its parity rebuilds) still verifies
	run corrupt_copies --what data "$T/img1" 2
	assert_success
	assert_output --regexp "damaged devid 2 data_sectors [1-9]"
	mount_caught_up
	# the new files have their copy on devid 1 (raid5 on the two present)
	for f in new1 new2; do
		run sha256sum "$T/mnt/$f"
		assert_output "$(grep " ./$f\$" "$T/sums" | cut -d' ' -f1)  $T/mnt/$f"
	done
	run mfs umount "$T/mnt"
	assert_success
}

@test "copies of the members never mix with the original; change-uuid lets them live beside it" {
	make_images 2
	mkfs.mfs -q -f -d raid1 -m raid1 $(imgs 2)
	mfs_mount "$T/img1" "$T/mnt"
	echo original >"$T/mnt/f"
	mfs umount "$T/mnt"
	cp --sparse=always "$T/img1" "$T/c1"
	cp --sparse=always "$T/img2" "$T/c2"
	fp1=$(fingerprint "$T/img1")
	fp2=$(fingerprint "$T/img2")

	# the registry knows the originals: they never complete the copy
	run --separate-stderr mfs mount "$T/c1" "$T/mnt" 3>&-
	assert_failure
	assert_stderr_line "ERROR: device 2 is missing; found the other members but not this one"
	assert_stderr_line "ERROR: $T/img1 also claims to be device 1 of this filesystem (a copy?): only the devices named are used"
	# named, the copy's members are used, and only they are written
	run --separate-stderr mfs mount "$T/c1" "$T/c2" "$T/mnt" 3>&-
	echo "$T/mnt" >>"$T/.mfs_mounts"
	assert_success
	assert_stderr_regex "^WARNING: $T/img[12] also claims to be device [12] of this filesystem"
	echo copy >"$T/mnt/f"
	mfs umount "$T/mnt"
	assert_untouched "$T/img1" "$fp1"
	assert_untouched "$T/img2" "$fp2"
	# two named devices claiming one devid: refused, naming both
	run --separate-stderr mfs mount "$T/img1" "$T/c1" "$T/mnt" 3>&-
	assert_failure
	assert_stderr_line "ERROR: $T/img1 and $T/c1 both claim to be device 1 of this filesystem (is one a copy of the other?); name only one of them, or give the copy a new uuid with 'mfs filesystem change-uuid'"
	# once the copies are registered too, only the devices named count
	mfs device scan "$T/c1" "$T/c2" >/dev/null
	run mfs filesystem show "$T/img1"
	assert_line --partial "Total devices 2 "
	assert_line "	*** devid 1 is claimed by more than one device (a copy of a member?)"
	run --separate-stderr mfs mount "$T/img1" "$T/mnt" 3>&-
	assert_failure
	assert_stderr_line "ERROR: device 2 is missing; found the other members but not this one"
	mfs_mount "$T/img1" "$T/img2" "$T/mnt"
	run cat "$T/mnt/f"
	assert_output original
	mfs umount "$T/mnt"
	fp1=$(fingerprint "$T/img1")

	# a new uuid for the copy: both mount at once, each from one path
	old=$(fs_uuid "$T/img1")
	run mfs filesystem change-uuid "$T/c1" "$T/c2"
	assert_success
	assert_line "Current fsid: $old"
	new=$(fs_uuid "$T/c1")
	assert_line "New fsid: $new"
	[ "$new" != "$old" ]
	[ "$(fs_uuid "$T/c2")" = "$new" ]
	assert_equal "$(super_field "$T/c2" incompat_flags)" 0x8
	assert_untouched "$T/img1" "$fp1"
	mfs_mount "$T/img1" "$T/mnt"
	mfs_mount "$T/c1" "$T/mnt2"
	run cat "$T/mnt/f" "$T/mnt2/f"
	assert_output "original
copy"
	mfs umount "$T/mnt2"
	mfs umount "$T/mnt"
	run mfs check "$T/c1"
	assert_success
	run mfs check "$T/img1"
	assert_success
	# -U sets a given uuid; going back to the original clears the feature
	run mfs filesystem change-uuid -U 01234567-89ab-cdef-0123-456789abcdef "$T/c1"
	assert_success
	assert_equal "$(fs_uuid "$T/c2")" 01234567-89ab-cdef-0123-456789abcdef
	run mfs filesystem change-uuid -U "$new" "$T/c1"
	assert_success
	run --separate-stderr mfs filesystem change-uuid -U "$new" "$T/c1"
	assert_failure
	assert_stderr_line "ERROR: the filesystem on $T/c1 already has uuid $new"
	run --separate-stderr mfs filesystem change-uuid -U nonsense "$T/c1"
	assert_failure
	assert_stderr_line "ERROR: invalid uuid: nonsense"
}

@test "change-uuid: an interrupted change is refused at mount and finished by running it again" {
	make_images 2
	mkfs.mfs -q -f -d raid1 -m raid1 $(imgs 2)
	mfs_mount "$T/img1" "$T/mnt"
	echo data >"$T/mnt/f"
	mfs umount "$T/mnt"
	# the second round of superblock writes fails on img2: each has two copies
	run env MFS_FAULT="write:3@img2" mfs filesystem change-uuid -U 11111111-2222-3333-4444-555555555555 "$T/img1" "$T/img2"
	assert_failure
	assert_equal "$(fs_uuid "$T/img1")" 11111111-2222-3333-4444-555555555555
	assert_equal "$(super_field "$T/img2" pending_fsid)" 11111111-2222-3333-4444-555555555555
	run --separate-stderr mfs mount "$T/img1" "$T/mnt" 3>&-
	assert_failure
	assert_stderr_regex "^ERROR: $T/img2 is still being changed to this filesystem's uuid: a 'mfs filesystem change-uuid' was interrupted"
	run --separate-stderr mfs mount "$T/img2" "$T/mnt" 3>&-
	assert_failure
	assert_stderr_regex "change-uuid' of this filesystem was interrupted"
	# another uuid than the interrupted one is refused; the same command finishes it
	run --separate-stderr mfs filesystem change-uuid -U 99999999-2222-3333-4444-555555555555 "$T/img2"
	assert_failure
	assert_stderr_regex "^ERROR: an earlier change of this filesystem's uuid to 11111111-2222-3333-4444-555555555555 was interrupted"
	run mfs filesystem change-uuid "$T/img2"
	assert_success
	assert_equal "$(fs_uuid "$T/img2")" 11111111-2222-3333-4444-555555555555
	mfs_mount "$T/img1" "$T/mnt"
	run cat "$T/mnt/f"
	assert_output data
	mfs umount "$T/mnt"
	run mfs check "$T/img2"
	assert_success
}

@test "a member whose device uuid is not the filesystem's is refused by name" {
	make_images 3
	mkfs.mfs -q -f -d raid1 -m raid1 "$T/img1" "$T/img2"
	uuid=$(fs_uuid "$T/img1")
	# another filesystem with the same fsid, made where mkfs cannot see the first
	MFS_REGISTRY="$T/other-registry" mkfs.mfs -q -f -U "$uuid" "$T/img3"
	mfs_mount "$T/img1" "$T/mnt"
	echo x >"$T/mnt/f"
	mfs umount "$T/mnt"
	run --separate-stderr mfs mount "$T/img3" "$T/img2" "$T/mnt" 3>&-
	assert_failure
	assert_stderr_line "ERROR: $T/img3 claims to be device 1, but its device uuid is not the one the filesystem has for device 1 (a device from an earlier mkfs or device add?)"
}

# damaged_mirror PROFILE N BAD: a file of 20 sectors whose copies on devid
# BAD are damaged; read through devid BAD, it is right, one corruption
# error per damaged sector is counted there, and the copies are repaired.
damaged_mirror() {
	local profile=$1 n=$2 bad=$3 d sectors

	make_images "$n"
	mkfs.mfs -q -f -d "$profile" -m "$profile" $(imgs "$n")
	mfs_mount "$T/img1" "$T/mnt"
	head -c $((20 * 4096)) /dev/urandom >"$T/src"
	cp "$T/src" "$T/mnt/f"
	mfs umount "$T/mnt"
	run corrupt_copies --what data "$T/img1" "$bad"
	assert_success
	assert_line --regexp "^devid $bad bytes [1-9][0-9]*\$"
	sectors=$(awk -v d="$bad" '$1 == "devid" && $2 == d { print $4 / 4096 }' <<<"$output")
	[ "$profile" = raid10 ] || assert_equal "$sectors" 20
	mfs_mount -o "read_policy=devid:$bad" "$T/img1" "$T/mnt"
	cmp "$T/src" "$T/mnt/f"
	mfs umount "$T/mnt"
	for ((d = 1; d <= n; d++)); do
		if [ "$d" = "$bad" ]; then
			assert_equal "$(dev_stat "$T/img1" "$d" corruption_errs)" "$sectors"
		else
			assert_equal "$(dev_stat "$T/img1" "$d" corruption_errs)" 0
		fi
	done
	run mfs check --check-data-csum "$T/img1"
	assert_success
}

@test "bad copies on the second mirror (raid1) are counted sector by sector and repaired" {
	damaged_mirror raid1 2 2
}

@test "bad copies on the third copy (raid1c3) are counted and repaired" {
	damaged_mirror raid1c3 3 3
}

@test "bad copies on the second device of a raid10 pair are counted and repaired" {
	damaged_mirror raid10 4 2
}

@test "tree blocks bad on the second mirror are counted against it and repaired" {
	make_images 2
	mkfs.mfs -q -f -d raid1 -m raid1 $(imgs 2)
	mfs_mount "$T/img1" "$T/mnt"
	for i in $(seq 1 300); do echo "$i" >"$T/mnt/s$i"; done
	tree_sums "$T/mnt" >"$T/sums"
	mfs umount "$T/mnt"
	run corrupt_copies --what metadata "$T/img1" 2
	assert_success
	mfs_mount -o read_policy=devid:2 "$T/img1" "$T/mnt"
	run tree_sums "$T/mnt"
	assert_output "$(cat "$T/sums")"
	mfs umount "$T/mnt"
	(($(dev_stat "$T/img1" 2 corruption_errs) > 0))
	assert_equal "$(dev_stat "$T/img1" 1 corruption_errs)" 0
}

@test "read errors on one raid10 device are counted and the data served from its pair" {
	make_images 4
	mkfs.mfs -q -f -d raid10 -m raid10 $(imgs 4)
	mfs_mount "$T/img1" "$T/mnt"
	head -c $((8 * MiB)) /dev/urandom >"$T/src"
	cp "$T/src" "$T/mnt/f"
	mfs umount "$T/mnt"
	# once mounted, every read of img3 fails (the open's own reads still work)
	MFS_FAULT="read:+1:s@img3" mfs_mount -o read_policy=devid:3 "$T/img1" "$T/mnt"
	cmp "$T/src" "$T/mnt/f"
	run mfs device stats "$T/mnt"
	assert_line --regexp "^\[$T/img3\]\.read_io_errs +[1-9][0-9]*\$"
	assert_line --regexp "^\[$T/img1\]\.read_io_errs +0\$"
	mfs umount "$T/mnt"
	(($(dev_stat "$T/img1" 3 read_io_errs) > 0))
	run mfs check --check-data-csum "$T/img1"
	assert_success
}

@test "a failing flush on one device is counted; the filesystem goes on without it" {
	make_images 2
	mkfs.mfs -q -f -d raid1 -m raid1 $(imgs 2)
	export MFS_LOG="$T/log"
	MFS_FAULT="flush:2@img2" mfs_mount "$T/img1" "$T/mnt"
	head -c $((4 * MiB)) /dev/urandom >"$T/src"
	cp "$T/src" "$T/mnt/f"
	mfs filesystem sync "$T/mnt"
	cp "$T/src" "$T/mnt/g"
	mfs filesystem sync "$T/mnt"
	touch "$T/mnt/still-writable"
	mfs umount "$T/mnt"
	run cat "$T/log"
	assert_output --regexp "devid 2 \($T/img2\) failed: flush error"
	(($(dev_stat "$T/img1" 2 flush_io_errs) > 0))
	mfs_mount "$T/img1" "$T/mnt"
	cmp "$T/src" "$T/mnt/g"
	mfs umount "$T/mnt"
	run mfs check --check-data-csum "$T/img1"
	assert_success
}

# dying_disk PROFILE N LOOP: member N sits on a tmpfs that fills up while
# mounted (LOOP: through a loop device). Writes and commits go on on the
# other members, the error is counted and logged by device; afterwards the
# member is caught up.
dying_disk() {
	local profile=$1 n=$2 loop=${3:-} i devs=() dev

	make_images "$n"
	mkdir "$T/tfs"
	mount -t tmpfs -o size=200M tmpfs "$T/tfs"
	echo "$T/tfs" >>"$T/.mounts"
	mv "$T/img$n" "$T/tfs/img$n"
	ln -s "$T/tfs/img$n" "$T/img$n"
	for ((i = 1; i <= n; i++)); do
		dev=$(realpath "$T/img$i")
		[ -n "$loop" ] && dev=$(make_loop "$dev")
		devs+=("$dev")
	done
	mkfs.mfs -q -f -d "$profile" -m raid1 "${devs[@]}"
	export MFS_LOG="$T/log"
	mfs_mount "${devs[@]}" "$T/mnt"
	head -c $((2 * MiB)) /dev/urandom >"$T/mnt/before"
	mfs filesystem sync "$T/mnt"
	dd if=/dev/zero of="$T/tfs/fill" bs=1M status=none 2>/dev/null || true
	head -c $((30 * MiB)) /dev/urandom >"$T/src"
	run "$MFS_PY" -c '
import os, shutil, sys
shutil.copyfile(sys.argv[1], sys.argv[2])
fd = os.open(sys.argv[2], os.O_RDONLY)
os.fsync(fd)
os.close(fd)
print("fsync ok")
' "$T/src" "$T/mnt/after"
	assert_success
	assert_output "fsync ok"
	mfs filesystem sync "$T/mnt"
	touch "$T/mnt/still-writable"
	cmp "$T/src" "$T/mnt/after"
	run mfs device stats "$T/mnt"
	assert_line --regexp "^\[${devs[$((n - 1))]}\]\.write_io_errs +[1-9][0-9]*\$"
	mfs umount "$T/mnt"
	run cat "$T/log"
	assert_output --regexp "devid $n \(${devs[$((n - 1))]}\) failed: write error"
	# room again: the member is caught up at the next mount
	rm "$T/tfs/fill"
	run --separate-stderr mfs mount "${devs[@]}" "$T/mnt" 3>&-
	echo "$T/mnt" >>"$T/.mfs_mounts"
	assert_success
	assert_stderr_regex "device $n .* was behind .* caught up"
	cmp "$T/src" "$T/mnt/after"
	mfs umount "$T/mnt"
	(($(mfs device stats --offline "${devs[0]}" | awk -v d="[${devs[$((n - 1))]}].write_io_errs" '$1 == d { print $2 }') > 0))
	run mfs check --check-data-csum "${devs[0]}"
	assert_success
}

@test "a disk filling up while mounted (raid1 images): counted, logged, the mount stays read-write" {
	dying_disk raid1 2
}

@test "a disk filling up while mounted (raid5 images)" {
	dying_disk raid5 3
}

@test "a disk filling up while mounted (raid1 on loop devices)" {
	dying_disk raid1 2 loop
}

@test "when every copy fails the write is an I/O error, never ENOSPC, and the disk keeps the last commit" {
	make_images 2
	mkfs.mfs -q -f -d raid1 -m raid1 $(imgs 2)
	MFS_FAULT="write:1:s@img1,write:1:s@img2" mfs_mount "$T/img1" "$T/img2" "$T/mnt"
	run "$MFS_PY" -c '
import os
fd = os.open("mnt/f", os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, os.urandom(300000))
try:
    os.fsync(fd)
    print("fsync ok")
except OSError as e:
    print("fsync", e.strerror)
'
	assert_output "fsync Input/output error"
	run mfs umount "$T/mnt"
	run mfs check "$T/img1"
	assert_success
}

@test "filesystem show on a mounted filesystem shows what was written since the last commit" {
	make_images 2
	mkfs.mfs -q -f -d raid1 -m raid1 $(imgs 2)
	mfs_mount -o commit=3600 "$T/img1" "$T/mnt"
	# around the page cache: the server has every byte, nothing is committed
	dd if=/dev/urandom of="$T/mnt/f" bs=1M count=100 oflag=direct status=none
	run mfs --format json filesystem show "$T/mnt"
	assert_success
	used=$("$MFS_PY" -c 'import json, sys; print(json.load(sys.stdin)["filesystems"][0]["bytes_used"])' <<<"$output")
	((used >= 100 * MiB)) || { echo "FS bytes used is $used" >&2; false; }
	mfs umount "$T/mnt"
}

@test "raid5 with two members missing: the devices and why their data is lost are named" {
	make_images 3
	mkfs.mfs -q -f -d raid5 -m raid1c3 $(imgs 3)
	mfs_mount "$T/img1" "$T/mnt"
	head -c $((10 * MiB)) /dev/urandom >"$T/mnt/f"
	mfs umount "$T/mnt"
	mv "$T/img2" "$T/gone2"
	mv "$T/img3" "$T/gone3"
	# the trees survive (raid1c3): read-only, degraded, with the loss named
	run --separate-stderr mfs mount -o ro,degraded "$T/img1" "$T/mnt" 3>&-
	echo "$T/mnt" >>"$T/.mfs_mounts"
	assert_success
	assert_stderr_line "WARNING: 1 data chunk cannot be read: devices 2, 3 missing, and a RAID5 chunk survives the loss of 1 device at most; reads of what they hold fail with an I/O error"
	run cat "$T/mnt/f"
	assert_failure
	assert_output --partial "Input/output error"
	mfs umount "$T/mnt"

	# metadata that is lost too: nothing can be mounted, and it says why
	mv "$T/gone2" "$T/img2"
	mv "$T/gone3" "$T/img3"
	mkfs.mfs -q -f -d raid5 -m raid1 $(imgs 3)
	# (the first raid1 chunks lie on devices 1 and 2)
	mv "$T/img1" "$T/gone1"
	mv "$T/img2" "$T/gone2"
	run --separate-stderr mfs mount -o ro,degraded "$T/img3" "$T/mnt" 3>&-
	assert_failure
	assert_stderr_regex "^ERROR: [0-9]+ (system|metadata) chunks? cannot be read: devices 1, 2 missing, and a RAID1 chunk survives the loss of 1 device at most\$"
}
