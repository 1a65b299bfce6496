#!/usr/bin/env bats
# Hot spares (issue 18, beyond btrfs; ZFS and mdadm have them):
# `mfs device add --spare` keeps a device unused; when a member fails or is
# missing on a read-write mount, the daemon replaces it with the spare by
# itself, says so in the log, and the spare takes the member's devid.

load helpers
load restripe

# spare_fs: img1 and img2 (1G) in raid1 with 200 MiB of files, mounted; the
# sums in $T/want; img3 (1G) a spare
spare_fs() {
	make_images 3 1G
	mkfs.mfs -q -d raid1 -m raid1 "$T/img1" "$T/img2"
	mnt "$T/img1"
	gen_file "$T/mnt/big" 200
	mkdir "$T/mnt/d"
	echo hello >"$T/mnt/d/tiny"
	sums "$T/mnt" >"$T/want"
	run mfs device add --spare "$T/img3" "$T/mnt"
	assert_success
}

# show_paths DEV-OR-MNT: "devid path state" of each member of `filesystem show`
show_paths() {
	mfs filesystem show "$1" | awk '$1 == "devid" { print $2, $8, ($9 == "" ? "ok" : $9) }'
}

@test "device add --spare: shown as a spare, never allocated, not counted as space, removable" {
	local size
	spare_fs
	run show_paths "$T/mnt"
	assert_output "1 $T/img1 ok
2 $T/img2 ok
3 $T/img3 SPARE"
	run mfs filesystem status "$T/mnt"
	assert_success
	assert_line --regexp "^	devid +3 spare +$T/img3$"
	# a full balance places nothing on it
	run mfs balance start --full-balance "$T/mnt"
	assert_success
	run mfs filesystem show "$T/mnt"
	assert_line --regexp "^	devid +3 size 1\.00GiB used 0\.00B path $T/img3 SPARE$"
	verify_online
	umnt
	# a missing spare does not make the filesystem degraded
	mv "$T/img3" "$T/away"
	mnt "$T/img1"
	verify_online
	umnt
	mv "$T/away" "$T/img3"
	# df: the spare is no space to write to; removed, nothing changes
	mnt "$T/img1"
	size=$(stat -f -c '%b' "$T/mnt")
	run mfs device remove 3 "$T/mnt"
	assert_success
	(($(stat -f -c '%b' "$T/mnt") == size))
	run show_paths "$T/mnt"
	assert_output "1 $T/img1 ok
2 $T/img2 ok"
	umnt
	verify_offline "$T/img1"
}

@test "device add --spare: one too small to replace every member is refused, nothing changed" {
	spare_fs
	truncate -s 200M "$T/small"
	run --separate-stderr mfs device add --spare "$T/small" "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: spare $T/small is too small: what a member has allocated would not fit on it, so it could not replace every member"
	run show_paths "$T/mnt"
	refute_output --partial "$T/small"
	# offline, the same
	umnt
	run --separate-stderr mfs device add --spare "$T/small" "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: spare $T/small is too small: what a member has allocated would not fit on it, so it could not replace every member"
	run show_paths "$T/img1"
	refute_output --partial "$T/small"
}

@test "a member failing while mounted is replaced by the spare by itself; the spare takes its devid" {
	spare_fs
	umnt
	export MFS_LOG="$T/log"
	# every write to img2 fails from the mount on: it fails, the spare comes in
	MFS_FAULT="write:1:s@img2" mnt "$T/img1"
	gen_file "$T/mnt/more" 20
	sync -f "$T/mnt"
	sums "$T/mnt" >"$T/want"
	wait_until 600 grep -q "replacing it with the hot spare devid 3 ($T/img3)" "$T/log"
	wait_done "$T/mnt"
	run show_paths "$T/mnt"
	assert_output "1 $T/img1 ok
2 $T/img3 ok"
	run mfs replace status -1 "$T/mnt"
	assert_output --regexp "finished on .*, 0 write errs, 0 uncorr. read errs"
	# nothing was left below raid1 by the writes made while img2 was failing
	run mfs filesystem df "$T/mnt"
	refute_line --regexp '^(Data|Metadata|System), DUP'
	refute_line --regexp '^(Data|Metadata|System), single'
	verify_online
	umnt
	# the failed disk (its superblock still names it devid 2) is no member
	run show_paths "$T/img1"
	assert_output "1 $T/img1 ok
2 $T/img3 ok"
	verify_offline "$T/img1"
}

@test "a degraded mount with a member missing: the spare takes its place at once" {
	spare_fs
	umnt
	mv "$T/img2" "$T/gone"
	export MFS_LOG="$T/log"
	mnt -o degraded "$T/img1"
	wait_until 600 grep -q "devid 2 (<missing disk>) is missing: replacing it with the hot spare devid 3" "$T/log"
	wait_done "$T/mnt"
	run show_paths "$T/mnt"
	assert_output "1 $T/img1 ok
2 $T/img3 ok"
	verify_online
	umnt
	# whole again: a plain mount, a clean check
	verify_offline "$T/img1"
	# the old member coming back is no member any more
	mv "$T/gone" "$T/img2"
	mfs device scan "$T/img2" >/dev/null
	run show_paths "$T/img1"
	assert_output "1 $T/img1 ok
2 $T/img3 ok"
	verify_offline "$T/img1"
}

@test "loop devices: a member whose backing disk fills up is replaced by the spare" {
	local l1 l2 l3

	make_images 3 1G
	mkdir "$T/tfs"
	mount -t tmpfs -o size=300M tmpfs "$T/tfs"
	echo "$T/tfs" >>"$T/.mounts"
	mv "$T/img2" "$T/tfs/img2"
	l1=$(make_loop "$T/img1")
	l2=$(make_loop "$T/tfs/img2")
	l3=$(make_loop "$T/img3")
	mkfs.mfs -q -f -d raid1 -m raid1 "$l1" "$l2"
	export MFS_LOG="$T/log"
	mnt "$l1"
	gen_file "$T/mnt/big" 30
	run mfs device add --spare "$l3" "$T/mnt"
	assert_success
	# the disk under l2 is full: its next writes fail, the spare comes in
	dd if=/dev/zero of="$T/tfs/fill" bs=1M status=none 2>/dev/null || true
	gen_file "$T/mnt/more" 30
	sync -f "$T/mnt"
	sums "$T/mnt" >"$T/want"
	wait_until 600 grep -q "replacing it with the hot spare devid 3 ($l3)" "$T/log"
	wait_done "$T/mnt"
	run show_paths "$T/mnt"
	assert_output "1 $l1 ok
2 $l3 ok"
	verify_online
	umnt
	verify_offline "$l1"
	# the full disk's loop device and its tmpfs go before the teardown
	losetup -d "$l2"
	rm -f "$T/tfs/fill"
	umount "$T/tfs"
}
