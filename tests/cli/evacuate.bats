#!/usr/bin/env bats
# A chunk whose new layout finds no room has its data moved into other
# chunks instead, as btrfs relocates extent by extent (issue 15): a convert
# or balance is refused only when the data itself cannot fit.

load helpers
load restripe

# fragmented FS_ARGS...: two 3 GiB images, 21 files of 100 MiB written in
# order and every third one deleted, so each data chunk is a third empty
# and the unallocated space is smaller than one chunk's new layout.
fragmented() {
	local i

	make_images 2 3G
	mkfs.mfs -q -f "$@" "$T/img1" "$T/img2"
	mnt "$T/img1"
	for i in $(seq 1 21); do
		head -c $((100 * MiB)) /dev/urandom >"$T/mnt/f$i"
	done
	mfs filesystem sync "$T/mnt"
	for i in 2 5 8 11 14 17 20; do rm "$T/mnt/f$i"; done
	sums "$T/mnt" >"$T/want"
	umnt
}

# no_room_for_layouts IMG: the smallest unallocated space of a device is less
# than the largest data chunk's stripe, so no data chunk can get a new layout
# (the relocation must move extents instead).
no_room_for_layouts() {
	local stripe free

	stripe=$(mfs inspect-internal dump-tree -t chunk "$1" | awk '
		$1 == "length" && $NF ~ /^Data/ { len = $2; type = $NF }
		$1 == "num_stripes" && type != "" {
			d = 1
			if (type ~ /RAID5/) d = $2 - 1
			if (type ~ /RAID6/) d = $2 - 2
			if (type ~ /RAID0/) d = $2
			if (len / d > max) max = len / d
			type = ""
		}
		END { printf "%d\n", max }')
	free=$(mfs --format json device usage -b "$1" | "$MFS_PY" -c '
import json, sys
print(min(d["unallocated"] for d in json.load(sys.stdin)["device-usage"]))')
	echo "# largest data stripe $stripe, least unallocated $free" >&3
	((free < stripe))
}

unallocated() {
	mfs --format json filesystem usage -b "$1" | "$MFS_PY" -c '
import json, sys
print(json.load(sys.stdin)["filesystem-usage"][0]["overall"]["device-unallocated"])'
}

@test "convert with no room for a chunk's new layout moves its extents into other chunks" {
	fragmented -d raid1 -m raid1
	before=$(unallocated "$T/img1")
	no_room_for_layouts "$T/img1"
	run mfs balance start -q -dconvert=raid1 -mconvert=raid1 "$T/img1"
	assert_success
	assert_output "Done, had to relocate 6 out of 6 chunks"
	verify_offline "$T/img1"
	run mfs check --check-data-csum "$T/img1"
	assert_success
	# the emptied chunks went back: more is unallocated than before
	(($(unallocated "$T/img1") > before))
}

@test "a mounted balance moves extents of split, compressed and preallocated files; they read back" {
	make_images 2 3G
	mkfs.mfs -q -f -d raid1 -m raid1 "$T/img1" "$T/img2"
	# the filler uncompressed (zlib on 2 GiB of random bytes is minutes of CPU)
	mnt "$T/img1"
	for i in $(seq 1 20); do
		head -c $((100 * MiB)) /dev/urandom >"$T/mnt/f$i"
	done
	umnt
	mnt -o compress=zlib "$T/img1"
	# one extent named by three file extent items: a hole punched in its middle
	head -c $((3 * MiB)) /dev/urandom >"$T/mnt/split"
	fallocate -p -o $((1 * MiB)) -l $((512 * 1024)) "$T/mnt/split"
	# compressed text, preallocated space
	yes "compressible line of text" | head -c $((8 * MiB)) >"$T/mnt/text"
	fallocate -l $((5 * MiB)) "$T/mnt/prealloc"
	mfs filesystem sync "$T/mnt"
	for i in 2 5 8 11 14 17 20; do rm "$T/mnt/f$i"; done
	sums "$T/mnt" >"$T/want"
	mfs filesystem sync "$T/mnt"
	no_room_for_layouts "$T/img1"
	run mfs balance start -q -d "$T/mnt"
	assert_success
	verify_online
	[ "$(stat -c %s "$T/mnt/prealloc")" = $((5 * MiB)) ]
	umnt
	verify_offline "$T/img1"
	run mfs check --check-data-csum "$T/img1"
	assert_success
}

@test "convert to raid5 with no room for new layouts moves extents into raid5 chunks" {
	make_images 3 2G
	mkfs.mfs -q -f -d raid1 -m raid1 $(imgs 3)
	mnt "$T/img1"
	for i in $(seq 1 24); do
		head -c $((100 * MiB)) /dev/urandom >"$T/mnt/f$i"
	done
	mfs filesystem sync "$T/mnt"
	for i in 3 6 9 12 15 18 21 24; do rm "$T/mnt/f$i"; done
	sums "$T/mnt" >"$T/want"
	umnt
	no_room_for_layouts "$T/img1"
	run mfs balance start -q -dconvert=raid5 "$T/img1"
	assert_success
	run mfs filesystem df "$T/img1"
	assert_line --regexp "^Data, RAID5: "
	refute_line --regexp "^Data, RAID1: "
	verify_offline "$T/img1"
	run mfs check --check-data-csum "$T/img1"
	assert_success
}

@test "a convert whose data cannot fit at all is refused before anything moves" {
	make_images 2 2G
	mkfs.mfs -q -f -d raid0 -m raid1 "$T/img1" "$T/img2"
	mnt "$T/img1"
	for i in $(seq 1 25); do
		head -c $((100 * MiB)) /dev/urandom >"$T/mnt/f$i"
	done
	sums "$T/mnt" >"$T/want"
	umnt
	fp1=$(fingerprint "$T/img1")
	fp2=$(fingerprint "$T/img2")
	# 2.5 GiB of raid0 data does not fit in raid1 on two 2 GiB devices
	run --separate-stderr mfs balance start -q -dconvert=raid1 "$T/img1"
	assert_failure
	assert_stderr_regex "^ERROR: balance: not enough free space"
	assert_untouched "$T/img1" "$fp1"
	assert_untouched "$T/img2" "$fp2"
	verify_offline "$T/img1"
}

@test "a shrink whose data chunk finds no room for its layout moves the extents instead" {
	mkdir "$T/src"
	gen_file "$T/src/file" 50
	make_images 2
	mkfs.mfs -q -d raid1 -m raid1 -r "$T/src" $(imgs 2)
	sums "$T/src" >"$T/want"
	mnt "$T/img1"
	# what lies past 300 MiB on device 1 fits below it only as extents, not as a chunk
	run mfs filesystem resize 1:300m "$T/mnt"
	assert_success
	size=$(mfs filesystem show --raw "$T/mnt" | awk '$1 == "devid" && $2 == 1 { print $4 }')
	assert_equal "$size" $((300 * MiB))
	verify_online
	umnt
	verify_offline "$T/img1"
	run mfs check --check-data-csum "$T/img1"
	assert_success
}

# The extents are read without the filesystem lock (held by the test hook
# there): files are deleted, written and read meanwhile, the extent being
# read among them; what the evacuation moves afterwards is what the files
# hold then, and nothing freed meanwhile is moved or leaked.
@test "files deleted and written while an evacuation reads an extent without the lock" {
	fragmented -d raid1 -m raid1
	no_room_for_layouts "$T/img1"
	mnt "$T/img1"
	echo 1 >"$T/hold-evac"
	mfs balance start --bg -dconvert=raid1 "$T/mnt"
	wait_for_file "$T/hold-evac.held" 600
	for i in 1 3 4 6 7; do rm "$T/mnt/f$i"; done
	head -c $((5 * MiB)) /dev/urandom >"$T/mnt/f9"
	head -c $((3 * MiB)) /dev/urandom >"$T/mnt/new"
	sums "$T/mnt" >"$T/want"
	rm -f "$T/hold-evac.held"
	wait_until 600 balance_done "$T/mnt"
	verify_online
	umnt
	run mfs check --check-data-csum "$T/img1"
	assert_success
	verify_offline "$T/img1"
}
