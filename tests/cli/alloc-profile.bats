#!/usr/bin/env bats
# Which profile new chunks get when a filesystem is opened whose chunks of
# a type have several profiles: the target of a convert still under way
# (paused), else the most redundant one present (as btrfs chooses) - not
# the profile of whichever chunk happens to lie highest.

load helpers
load restripe

# three_devices: 3 x 512M, 400 MiB of single data (three 153 MiB chunks),
# raid1 metadata
three_devices() {
	make_images 3 512M
	mkdir -p "$T/src"
	gen_file "$T/src/a" 200
	gen_file "$T/src/b" 200
	mkfs.mfs -q -d single -m raid1 -r "$T/src" $(imgs 3)
	sums "$T/src" >"$T/want"
}

# last_logical DEV: the highest chunk's logical start
last_logical() {
	chunk_layout "$1" | awk '{ print $1 }' | sort -n | tail -n 1
}

# new_chunks DEV AFTER: "type" of every chunk above logical AFTER
new_chunks() {
	chunk_layout "$1" | awk -v a="$2" '$1 > a { print $2 }'
}

# mixed DEV: the lowest data chunk is raid1, the highest still single
mixed() {
	run awk '$2 ~ /^Data/ { print $2 }' <(chunk_layout "$1")
	assert_line --index 0 "Data|RAID1"
	[ "${lines[${#lines[@]} - 1]}" = "Data|single" ]
}

# write_more: 150 MiB more on the mount, more than the data chunks have
# left, so new data chunks are allocated
write_more() {
	gen_file "$T/mnt/c" 150
	sync "$T/mnt/c"
	sums "$T/mnt" >"$T/want"
}

@test "alloc profile: after a partial convert (limit=), new chunks get the most redundant profile" {
	three_devices
	run --separate-stderr mfs balance start -q -dconvert=raid1,limit=1 "$T/img1"
	assert_success
	assert_output --regexp '^Done, had to relocate 1 out of [0-9]+ chunks$'
	# the raid1 chunk is the lowest: the highest one is still single
	mixed "$T/img1"
	before=$(last_logical "$T/img1")
	mnt "$T/img1"
	write_more
	umnt
	run new_chunks "$T/img1" "$before"
	assert_line --regexp '^Data'
	refute_line --regexp '^Data\|single$'
	verify_offline "$T/img1"
}

@test "alloc profile: a paused convert's target is used for new chunks after a remount" {
	three_devices
	mnt "$T/img1"
	hold_at 1
	mfs balance start -q -dconvert=raid1 "$T/mnt" >"$T/out" 2>&1 &
	echo $! >>"$T/.pids"
	while_held mfs balance pause "$T/mnt"
	umnt
	mixed "$T/img1"
	before=$(last_logical "$T/img1")
	# still paused: skip_balance keeps it so while new data comes in
	mnt -o skip_balance "$T/img1"
	run mfs balance status "$T/mnt"
	assert_failure 1
	write_more
	umnt
	run new_chunks "$T/img1" "$before"
	assert_line --regexp '^Data'
	refute_line --regexp '^Data\|single$'
	verify_offline "$T/img1"
	run --separate-stderr mfs balance cancel "$T/img1"
	assert_success
	verify_offline "$T/img1"
}
