#!/usr/bin/env bats
# A chunk's copy is checkpointed every 64 MiB (DESIGN §5.4, format
# BALANCE_CHUNK): a crash, a pause or an unmount in the middle of a large
# chunk goes on from the last checkpoint, and the bytes a status reports
# as moved are on disk - they never go back after a crash.

load helpers
load restripe

# big_chunk_fs N PROFILE: N images of 2G, data PROFILE, metadata raid1,
# mounted, with one data chunk holding a 200 MiB file (more than three
# checkpoints' worth) after a small file of an odd size, and a tiny one.
big_chunk_fs() {
	make_images "$1" 2G
	mkfs.mfs -q -d "$2" -m raid1 $(imgs "$1")
	mnt "$T/img1"
	# an odd size first: the big file's extents, and so the checkpoints,
	# fall in the middle of rows of the new layout
	mkdir "$T/mnt/d"
	head -c 777777 /dev/urandom >"$T/mnt/d/odd"
	sync -f "$T/mnt"
	gen_file "$T/mnt/big" 200
	echo hello >"$T/mnt/d/tiny"
	sync -f "$T/mnt"
	sums "$T/mnt" >"$T/want"
}

# moved MNT-OR-DEV: the bytes `balance status` reports moved, in KiB
moved() {
	mfs balance status "$1" | awk '/ moved/ {
		v = $1; u = v; sub(/[0-9.]+/, "", u); sub(/[A-Za-z]+$/, "", v)
		m = u == "GiB" ? 1048576 : u == "MiB" ? 1024 : u == "KiB" ? 1 : 1 / 1024
		printf "%d\n", v * m }'
}

# hold_ckpt N: hold the operation at its Nth checkpoint from now on
hold_ckpt() {
	echo "$1" >"$T/hold-ckpt"
}

wait_ckpt() {
	wait_for_file "$T/hold-ckpt.held" 600
}

release_ckpt() {
	rm -f "$T/hold-ckpt.held"
}

# convert_paused_at_checkpoint: a convert of $T/mnt's data to raid1,
# paused as it passes its first checkpoint (asked while it is held there)
convert_paused_at_checkpoint() {
	hold_ckpt 1
	mfs balance start --bg -dconvert=raid1 "$T/mnt"
	wait_ckpt
	mfs balance pause "$T/mnt" &
	wait_until 600 requested "$T/mnt"
	release_ckpt
	wait $!
}

# resumed_at_second_checkpoint: the images, left by a daemon killed after
# a chunk's second checkpoint, check clean; the mount resumes the copy
# from that checkpoint (past 128 MiB, and the 200 MiB file is not done),
# not from the chunk's start; every file as written, online and offline
resumed_at_second_checkpoint() {
	local in

	run mfs check "$T/img1"
	assert_success
	export MFS_LOG="$T/log"
	mnt "$T/img1"
	wait_done "$T/mnt"
	in=$(sed -n 's/.*its copy goes on from its checkpoint, \([0-9]*\) MiB in$/\1/p' "$T/log")
	((in >= 128 && in < 200))
	verify_online
	umnt
	verify_offline "$T/img1"
}

# crash_mid_chunk PROFILE N TARGET: convert the data of an N-device
# PROFILE filesystem to TARGET, SIGKILL the daemon after the chunk's second
# checkpoint, then check what the next mount makes of it.
crash_mid_chunk() {
	local before after recorded to=$3

	big_chunk_fs "$2" "$1"
	hold_ckpt 2
	mfs balance start --bg -dconvert="$to" "$T/mnt"
	wait_ckpt
	before=$(moved "$T/mnt")
	# two checkpoints: at least 128 MiB of the 200 are on disk
	((before >= 128 * 1024))
	kill_daemon
	release_ckpt
	# offline: paused, nothing lost of what was reported, a clean check
	run mfs balance status "$T/img1"
	assert_failure 1
	assert_line --index 0 "Balance on '$T/img1' is paused"
	after=$(moved "$T/img1")
	((after >= before))
	# the record of the chunk's copy counts what was reported (to the
	# 0.01 MiB the status prints)
	recorded=$(mfs inspect-internal dump-tree -t root "$T/img1" |
		awk '/BALANCE_CHUNK/ { getline; print $4 }')
	((recorded >= (before - 10) * 1024))
	resumed_at_second_checkpoint
	run mfs inspect-internal dump-tree -t root "$T/img1"
	refute_output --partial "BALANCE_CHUNK"
	run mfs filesystem df "$T/img1"
	assert_line --regexp "^Data, ${to^^}: "
}

@test "balance: a crash mid-chunk resumes its copy at the checkpoint (raid1); bytes moved never go back" {
	crash_mid_chunk single 2 raid1
}

@test "balance: a crash mid-chunk resumes its copy at the checkpoint (raid5 rows); bytes moved never go back" {
	crash_mid_chunk single 3 raid5
}

@test "balance: a pause stops mid-chunk at a checkpoint, the chunk stays reserved offline, resume finishes it" {
	local before

	big_chunk_fs 2 single
	convert_paused_at_checkpoint
	run mfs balance status "$T/mnt"
	assert_failure 1
	assert_line --index 0 "Balance on '$T/mnt' is paused"
	before=$(moved "$T/mnt")
	((before >= 64 * 1024 && before < 200 * 1024))
	# writes go on while paused, never into the chunk or its new place
	gen_file "$T/mnt/more" 20
	sums "$T/mnt" >"$T/want"
	umnt
	run mfs check "$T/img1"
	assert_success
	assert_line --partial "no error found"
	mnt -o skip_balance "$T/img1"
	mfs balance resume "$T/mnt"
	wait_done "$T/mnt"
	verify_online
	umnt
	verify_offline "$T/img1"
	run mfs filesystem df "$T/img1"
	refute_line --regexp '^Data, single: '
}

@test "balance: cancel after a mid-chunk stop gives the chunk back; nothing stays taken" {
	big_chunk_fs 2 single
	convert_paused_at_checkpoint
	umnt
	# offline cancel: the record goes with the operation
	run mfs balance cancel "$T/img1"
	assert_success
	run mfs inspect-internal dump-tree -t root "$T/img1"
	refute_output --partial "BALANCE_CHUNK"
	refute_output --partial "BALANCE_ITEM"
	run mfs check "$T/img1"
	assert_success
	# the chunk takes writes again: fill most of the space, all of it readable
	mnt "$T/img1"
	gen_file "$T/mnt/more" 300
	sums "$T/mnt" >"$T/want"
	umnt
	verify_offline "$T/img1"
}

@test "a crash between a chunk's last checkpoint and its swap: the next mount finishes it, on small devices too" {
	local i

	# 3 x 512M in raid1, as full as the crash-replay's device delete: the
	# resume's estimate must count the recorded chunk's new place once
	make_images 3 512M
	mkfs.mfs -q -d raid1 -m raid1 $(imgs 3)
	mnt "$T/img1"
	for i in 1 2 3 4 5 6; do
		head -c $((i * 3))M /dev/urandom >"$T/mnt/file$i"
	done
	sums "$T/mnt" >"$T/want"
	# held after the first data chunk's copy: its record says it is all copied
	hold_ckpt 1
	mfs device delete 3 "$T/mnt" &
	wait_ckpt
	kill_daemon
	release_ckpt
	wait $! || true
	run mfs inspect-internal dump-tree -t root "$T/img1"
	assert_output --partial "BALANCE_CHUNK"
	mnt "$T/img1"
	wait_done "$T/mnt"
	run show_line "$T/img1" 3
	assert_output ""
	verify_online
	umnt
	verify_offline "$T/img1"
}

@test "a replace in a two-device raid1: the only metadata chunk is copied whole, no checkpoint needs room there is not" {
	# a checkpoint commits, and a commit needs tree blocks: with the only
	# metadata chunk read-only while it moves, and no two devices free for
	# a new raid1 one (the replace's source and target take none), it
	# could not - so metadata chunks are never checkpointed
	make_images 3 1G
	mkfs.mfs -q -d raid1 -m raid1 "$T/img1" "$T/img2"
	mnt "$T/img1"
	gen_file "$T/mnt/big" 40
	sums "$T/mnt" >"$T/want"
	run mfs replace start -B "$T/img2" "$T/img3" "$T/mnt"
	assert_success
	run mfs replace status -1 "$T/mnt"
	assert_output --regexp "finished on .*, 0 write errs, 0 uncorr. read errs"
	verify_online
	umnt
	verify_offline "$T/img1"
}

@test "replace on raid5: a crash mid-chunk resumes its column copy at the checkpoint" {
	local before

	# the source's column alone is copied (a clean record); the resumed
	# copy starts inside the chunk, in the middle of a row of extents
	big_chunk_fs 3 raid5
	truncate -s 2G "$T/new"
	hold_ckpt 2
	mfs replace start "$T/img2" "$T/new" "$T/mnt"
	wait_ckpt
	before=$(moved "$T/mnt")
	((before >= 128 * 1024))
	kill_daemon
	release_ckpt
	resumed_at_second_checkpoint
	run mfs filesystem show "$T/img1"
	assert_output --partial "$T/new"
	refute_output --partial "$T/img2"
	# the target's column agrees with the parity beside it: every file
	# reads back with another member gone
	mfs device scan -u "$T/img1"
	mv "$T/img1" "$T/gone1"
	mnt -o degraded,ro "$T/img3"
	verify_online
	umnt
}
