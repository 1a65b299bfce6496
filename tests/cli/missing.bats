#!/usr/bin/env bats
# The missing-device path (DESIGN §5, §6): `device delete missing` and
# `replace start <devid>|missing` rebuild what a missing member held from
# the other copies and parity, online (-o degraded) and offline; the
# target of a replace takes the source's devid; no chunk is left reduced
# afterwards; refusals change nothing; pause, resume and a remount mid-way.

load helpers
load restripe

eval "helpers_$(declare -f teardown)"

teardown() {
	mfs_cleanup_mounts
	helpers_teardown
}

# lose N...: take members img<N> away (kept as gone<N>)
lose() {
	local d

	for d in "$@"; do
		mv "$T/img$d" "$T/gone$d"
	done
}

# degraded_write MIB: mounted -o degraded at $T/mnt (first image present),
# files of MIB MiB and a few small ones written, $T/want updated from their
# sources
degraded_write() {
	local first

	first=$(ls "$T"/img* | head -n 1)
	mnt -o degraded "$first"
	mkdir -p "$T/src/degraded"
	gen_file "$T/src/degraded/big" "$1"
	head -c 555555 /dev/urandom >"$T/src/degraded/odd"
	cp -r "$T/src/degraded" "$T/mnt/"
	sums "$T/src" >"$T/want"
	verify_online
}

# whole DEV N: N members, none missing, no chunk reduced, every file as
# written, and the data checksums all hold (the filesystem unmounted)
whole() {
	run mfs filesystem show "$1"
	assert_success
	assert_line --partial "Total devices $2 "
	refute_output --partial "MISSING"
	refute_output --partial "missing"
	run mfs inspect-internal dump-tree -t extent "$1"
	refute_output --partial "REDUCED"
	run mfs check --check-data-csum "$1"
	assert_success
	assert_line --partial "no error found"
	mnt -o ro "$1"
	verify_online
	run mfs filesystem df "$T/mnt"
	refute_output --partial "reduced"
	umnt
}

# devid_path DEV DEVID: the path `filesystem show` gives that member
devid_path() {
	show_line "$1" "$2" | awk '{ print $NF }'
}

@test "raid1, one of three missing: device delete missing online rebuilds it on the two left" {
	fs_with 3 1G 40 -d raid1 -m raid1
	lose 3
	degraded_write 12
	run mfs filesystem show "$T/mnt"
	assert_line --regexp "^	devid +3 size 0 used 0 path <missing disk> MISSING$"
	run --separate-stderr mfs device delete missing "$T/mnt"
	assert_success
	verify_online
	run mfs filesystem show "$T/mnt"
	refute_output --partial "MISSING"
	umnt
	run devids_in_chunks "$T/img1"
	assert_output "$(printf '1\n2')"
	whole "$T/img1" 2
}

@test "raid5, one of four missing: device delete missing online" {
	fs_with 4 1G 40 -d raid5 -m raid1
	lose 2
	degraded_write 10
	mfs device delete missing "$T/mnt"
	verify_online
	umnt
	run devids_in_chunks "$T/img1"
	assert_output "$(printf '1\n3\n4')"
	whole "$T/img1" 3
}

@test "raid5 on three of four devices, one missing: delete missing rebuilds its column alone on the fourth" {
	# the chunks keep their stripes on the two present members; the
	# missing one's column is rebuilt from them onto the fourth device
	fs_with -n 3 4 1G 40 -d raid5 -m raid1
	mfs device add "$T/img4" "$T/img1"
	chunk_layout "$T/img1" | awk '$2 ~ /^Data/' >"$T/before"
	[ -s "$T/before" ]
	lose 3
	degraded_write 10
	mfs device delete missing "$T/mnt"
	verify_online
	umnt
	run devids_in_chunks "$T/img1"
	assert_output "$(printf '1\n2\n4')"
	whole "$T/img1" 3
	# every data chunk that was on 1, 2 and 3 kept its stripes on 1 and 2
	chunk_layout "$T/img1" >"$T/after"
	while read -r logical type stripes; do
		for s in $stripes; do
			case $s in
			1:* | 2:*)
				grep -qE "^$logical .* $s( |\$)" "$T/after" ||
					fail "chunk $logical ($type) lost its stripe $s"
				;;
			esac
		done
	done <"$T/before"
	# the rebuilt parity agrees with the data beside it: every file reads
	# back with another member gone
	mv "$T/img1" "$T/gone1"
	mnt -o degraded,ro "$T/img2"
	verify_online
	umnt
}

@test "check of a degraded raid5: the missing member named once, the rebuilds it prevents not blamed on the others" {
	# every data sector on a present member has a second copy, rebuilt
	# from parity, which needs the missing column: that is no error of
	# theirs (it was one per sector); a damaged sector still is
	fs_with 3 1G 20 -d raid5 -m raid1
	lose 3
	run mfs check --check-data-csum "$T/img1" "$T/img2"
	assert_failure
	assert_line "ERROR: device 3 is missing"
	assert_equal "$(grep -c '^ERROR' <<<"$output")" 1
	run corrupt_copies --what data --max 4096 "$T/img1" 1
	assert_success
	run mfs check --check-data-csum "$T/img1" "$T/img2"
	assert_failure
	assert_line --regexp '^ERROR: data extent [0-9]+ sector [0-9]+ \(logical [0-9]+\): copy 1 \(on devid 1\): checksum mismatch$'
}

@test "raid6, two of six missing: both deleted in one go, offline" {
	fs_with 6 1G 40 -d raid6 -m raid1c3
	lose 2 5
	degraded_write 10
	umnt
	run --separate-stderr mfs device delete missing missing "$T/img1"
	assert_success
	run devids_in_chunks "$T/img1"
	assert_output "$(printf '1\n3\n4\n6')"
	whole "$T/img1" 4
}

@test "raid10 and raid1c3, one missing: device delete by devid online" {
	fs_with 6 1G 40 -d raid10 -m raid1
	lose 4
	degraded_write 10
	mfs device delete 4 "$T/mnt"
	verify_online
	umnt
	run devids_in_chunks "$T/img1"
	assert_output "$(printf '1\n2\n3\n5\n6')"
	whole "$T/img1" 5

	fs_with 5 2G 40 -d raid1c3 -m raid1c3
	lose 1
	degraded_write 10
	mfs device delete missing "$T/mnt"
	verify_online
	umnt
	run devids_in_chunks "$T/img2"
	assert_output "$(printf '2\n3\n4\n5')"
	whole "$T/img2" 4
}

@test "replace missing online (raid1): the target rebuilt, under the missing device's devid" {
	fs_with 3 1G 40 -d raid1 -m raid1
	lose 2
	degraded_write 10
	truncate -s 1G "$T/new"
	run --separate-stderr mfs replace start -B missing "$T/new" "$T/mnt"
	assert_success
	verify_online
	assert_equal "$(devid_path "$T/mnt" 2)" "$T/new"
	run mfs replace status -1 "$T/mnt"
	assert_output --regexp '^Started on .*, finished on .*, 0 write errs, 0 uncorr\. read errs$'
	run mfs device stats "$T/mnt"
	assert_line --regexp "^\[$T/new\]\.write_io_errs +0$"
	run mfs device stats -T "$T/mnt"
	assert_line --regexp "^ *2 +$T/new +0 +0 +0 +0 +0$"
	umnt
	run devids_in_chunks "$T/img1"
	assert_output "$(printf '1\n2\n3')"
	run mfs device stats --offline "$T/img1"
	assert_line --regexp "^\[$T/new\]\.corruption_errs +0$"
	whole "$T/img1" 3
	# an ordinary member under devid 2: it grows by that devid
	truncate -s 2G "$T/new"
	mnt "$T/img1"
	mfs filesystem resize 2:max "$T/mnt"
	run show_line "$T/mnt" 2
	assert_output --partial "size 2.00GiB"
	umnt
}

@test "replace missing offline (raid5 and raid6 with two missing), by devid" {
	fs_with 4 1G 40 -d raid5 -m raid1
	lose 3
	degraded_write 10
	umnt
	truncate -s 1G "$T/new3"
	run --separate-stderr mfs replace start 3 "$T/new3" "$T/img1"
	assert_success
	assert_equal "$(devid_path "$T/img1" 3)" "$T/new3"
	run devids_in_chunks "$T/img1"
	assert_output "$(printf '1\n2\n3\n4')"
	whole "$T/img1" 4

	fs_with 5 1G 40 -d raid6 -m raid1c3
	lose 1 4
	degraded_write 10
	umnt
	truncate -s 1G "$T/new1" "$T/new4"
	mfs replace start missing "$T/new1" "$T/img2"
	mfs replace start missing "$T/new4" "$T/img2"
	assert_equal "$(devid_path "$T/img2" 1)" "$T/new1"
	assert_equal "$(devid_path "$T/img2" 4)" "$T/new4"
	whole "$T/img2" 5
}

@test "replace missing offline: a start that fails once the target joined is resumed (the target is registered)" {
	fs_with 4 1G 40 -d raid5 -m raid1
	lose 4
	truncate -s 1G "$T/new4"
	# the third flush on img1 after the open: the commit the target joins in
	run --separate-stderr env MFS_FAULT="flush:+3@/img1" mfs replace start -K 4 "$T/new4" "$T/img1"
	assert_failure
	assert_stderr_line "ERROR: ioctl(DEV_REPLACE_START) failed on \"$T/img1\": Input/output error"
	assert_stderr_line "$T/new4 joined the filesystem before the error: 'mfs replace status $T/img1' shows where the replace stands, 'mfs replace resume $T/img1' retries it, 'mfs replace cancel $T/img1' ends it"
	grep -qxF "$T/new4" "$MFS_REGISTRY"
	run mfs replace resume "$T/img1"
	assert_success
	assert_equal "$(devid_path "$T/img1" 4)" "$T/new4"
	whole "$T/img1" 4
}

# replace_lost3_faulty FAULT TARGET: raid5 on four (fs_with), member 3
# lost, replaced offline by TARGET (new, 1G) with MFS_FAULT=FAULT; run's
# status, output and stderr apart
replace_lost3_faulty() {
	fs_with 4 1G 40 -d raid5 -m raid1
	lose 3
	truncate -s 1G "$2"
	run --separate-stderr env MFS_FAULT="$1" mfs replace start 3 "$2" "$T/img1"
}

@test "replace missing (raid5): a read error on a survivor is retried row by row, named and counted" {
	# the first read of img2 after the open: the rebuild's first window
	# (4 MiB of img2's column) - once; the rows read again alone succeed
	replace_lost3_faulty "read:+1@/img2" "$T/new3"
	assert_success
	assert_stderr_regex "WARNING: devid 2 \($T/img2\): read error while copying chunk [0-9]+ \(rows [0-9]+-[0-9]+\): Input/output error"
	run mfs device stats --offline "$T/img1"
	assert_line --regexp "^\[$T/img2\]\.read_io_errs +1$"
	whole "$T/img1" 4

	# every read of img2 failing: the rows its column is needed for cannot
	# be rebuilt; the replace stops, naming img2 (counted), nothing lost
	# that was there
	replace_lost3_faulty "read:+1:s@/img2" "$T/new3b"
	assert_failure
	assert_stderr_line "ERROR: error during replace on '$T/img1': Input/output error"
	assert_stderr_regex "WARNING: devid 2 \($T/img2\): read error while copying chunk [0-9]+"
	run mfs device stats --offline "$T/img1"
	assert_line --regexp "^\[$T/img2\]\.read_io_errs +[1-9][0-9]*$"
	# paused with its source missing: the status is shown, and a cancel
	# keeps what was rebuilt (it cannot go back to a missing device) - the
	# target becomes an ordinary member, devid 3 stays missing
	run mfs replace status "$T/img1"
	assert_success
	assert_output --regexp "^Started on .*, suspended at [0-9.]+%"
	run --separate-stderr mfs replace cancel "$T/img1"
	assert_success
	assert_stderr_line "WARNING: replace cancelled with its source (devid 3) missing: what was rebuilt stays on devid 5, now an ordinary member; devid 3 stays missing"
	run mfs filesystem show "$T/img1"
	assert_line --regexp "^\s+devid +5 size .* path $T/new3b$"
	assert_line --partial "*** Some devices missing"
	mnt -o ro,degraded "$T/img1"
	verify_online
	umnt
	# the way on: delete missing (img2 reads again)
	run mfs device delete missing "$T/img1"
	assert_success
	whole "$T/img1" 4
}

@test "replace missing cancelled online mid-way: what was rebuilt stays, on the target as an ordinary member" {
	fs_with 4 1G 40 -d raid5 -m raid1
	lose 3
	truncate -s 1G "$T/new3"
	mnt -o degraded "$T/img1"
	export MFS_LOG="$T/log"
	hold_at 1
	mfs replace start 3 "$T/new3" "$T/mnt"
	run --separate-stderr while_held mfs replace cancel "$T/mnt"
	assert_success
	run mfs replace status -1 "$T/mnt"
	assert_success
	assert_output --regexp '^Started on .*, canceled on .* at [0-9]+\.[0-9]%'
	run mfs balance status "$T/mnt"
	assert_success
	run mfs filesystem show "$T/mnt"
	assert_line --regexp "^\s+devid +5 size .* path $T/new3$"
	refute_output --partial "REPLACE"
	assert_line --regexp "^\s+devid +3 size 0 used 0 path <missing disk> MISSING$"
	verify_online
	umnt
	# the chunk rebuilt before the cancel has a stripe on the new member
	run devids_in_chunks "$T/img1"
	assert_line 5
	run mfs device delete missing "$T/img1"
	assert_success
	whole "$T/img1" 4
}

@test "offline replace of a missing raid1 member: the progress counts the convert of the reduced chunks too" {
	fs_with 2 1G 30 -d raid1 -m raid1
	lose 2
	degraded_write 12
	umnt
	truncate -s 1G "$T/new"
	# over a second a chunk: progress lines, the last after the follow-up;
	# unmounted, the foreground with progress is the default (-B or not)
	MFS_TEST_RESTRIPE_DELAY_MS=1100 run --separate-stderr mfs replace start 2 "$T/new" "$T/img1"
	assert_success
	assert_line --regexp '^[0-9]+/[0-9]+ chunks, .* \(100%\), '
	# never more chunks done than expected (it ended on "2/0 chunks")
	run awk -F'[/ ]' '/^[0-9]+\/[0-9]+ chunks, / && $1 + 0 > $2 + 0' <<<"$output"
	assert_output ""
	run mfs filesystem df "$T/img1"
	refute_output --partial "reduced"
	whole "$T/img1" 2
}

@test "raid1 on two devices, one missing: device add, then delete missing gives the reduced chunks raid1 again" {
	fs_with 2 1G 30 -d raid1 -m raid1
	lose 2
	degraded_write 12
	run mfs filesystem df "$T/mnt"
	assert_line --regexp "^Data, DUP: .*\(reduced: written degraded, the filesystem asks for RAID1\)$"
	truncate -s 1G "$T/img3"
	mfs device add "$T/img3" "$T/mnt"
	mfs device delete missing "$T/mnt"
	verify_online
	run mfs filesystem df "$T/mnt"
	assert_success
	refute_output --partial "DUP"
	refute_output --partial "reduced"
	assert_line --regexp "^Data, RAID1: "
	umnt
	run chunk_layout "$T/img1"
	refute_output --partial "DUP"
	run devids_in_chunks "$T/img1"
	assert_output "$(printf '1\n3')"
	whole "$T/img1" 2
}

@test "raid1 on two devices, one missing: replace missing gives the reduced chunks raid1 again" {
	fs_with 2 1G 30 -d raid1 -m raid1
	lose 2
	degraded_write 12
	run mfs filesystem df "$T/mnt"
	assert_output --partial "reduced"
	truncate -s 1G "$T/new"
	run --separate-stderr mfs replace start -B missing "$T/new" "$T/mnt"
	assert_success
	verify_online
	run mfs filesystem df "$T/mnt"
	refute_output --partial "reduced"
	refute_output --partial "DUP"
	assert_equal "$(devid_path "$T/mnt" 2)" "$T/new"
	umnt
	run devids_in_chunks "$T/img1"
	assert_output "$(printf '1\n2')"
	whole "$T/img1" 2
}

@test "balance -dconvert=raid1,soft converts chunks written reduced, once the device is back" {
	fs_with 2 1G 20 -d raid1 -m raid1
	lose 2
	degraded_write 10
	umnt
	mv "$T/gone2" "$T/img2"
	# skip_balance: no conversion by the mount itself, the soft convert does it
	mnt -o skip_balance "$T/img1"
	run mfs filesystem df "$T/mnt"
	assert_output --partial "reduced"
	run --separate-stderr mfs balance start -dconvert=raid1,soft -mconvert=raid1,soft "$T/mnt"
	assert_success
	run mfs filesystem df "$T/mnt"
	refute_output --partial "reduced"
	refute_output --partial "DUP"
	verify_online
	umnt
	whole "$T/img1" 2
}

@test "refused with nothing changed: too few devices, no room, nothing missing" {
	# raid1 on two devices: deleting the missing one leaves one
	fs_with 2 1G 20 -d raid1 -m raid1
	lose 2
	fp=$(fingerprint "$T/img1")
	run --separate-stderr mfs device delete missing "$T/img1"
	assert_failure
	assert_stderr_regex "^ERROR: device delete: unable to go below two devices on RAID1 \((data|metadata|system) chunks\): 1 would remain; "
	assert_untouched "$T/img1" "$fp"
	mnt -o degraded "$T/img1"
	run --separate-stderr mfs device delete missing "$T/mnt"
	assert_failure
	assert_stderr_regex "^ERROR: device delete: unable to go below two devices on RAID1"
	run mfs filesystem show "$T/mnt"
	assert_line --partial "MISSING"
	umnt

	# no room: what the missing device held does not fit on the others
	fs_with 3 400M 150 -d raid1 -m raid1
	lose 3
	fp1=$(fingerprint "$T/img1")
	fp2=$(fingerprint "$T/img2")
	run --separate-stderr mfs device delete missing "$T/img1"
	assert_failure
	assert_stderr_regex "^ERROR: device delete: not enough (contiguous )?(free )?space"
	assert_untouched "$T/img1" "$fp1"
	assert_untouched "$T/img2" "$fp2"

	# nothing missing
	fs_with 3 1G 10 -d raid1 -m raid1
	fp=$(fingerprint "$T/img1")
	truncate -s 1G "$T/new"
	run --separate-stderr mfs device delete missing "$T/img1"
	assert_failure
	assert_stderr_line "ERROR: error removing device 'missing': no missing devices found to remove"
	run --separate-stderr mfs replace start missing "$T/new" "$T/img1"
	assert_failure
	assert_stderr_line "ERROR: no missing device to replace in filesystem '$T/img1': every member is present; name the source by its devid or path"
	assert_untouched "$T/img1" "$fp"
	mnt "$T/img1"
	run --separate-stderr mfs replace start missing "$T/new" "$T/mnt"
	assert_failure
	assert_stderr_regex "^ERROR: no missing device to replace"
	run --separate-stderr mfs device delete missing "$T/mnt"
	assert_failure
	assert_stderr_line "ERROR: error removing device 'missing': no missing devices found to remove"
	umnt
	run mfs inspect-internal dump-super "$T/new"
	assert_failure
}

@test "delete missing paused, unmounted, mounted -o degraded again and resumed" {
	fs_with 4 1G 60 -d raid1 -m raid1
	lose 4
	degraded_write 10
	hold_at 1
	mfs device delete --bg missing "$T/mnt"
	run while_held mfs device delete pause "$T/mnt"
	assert_success
	run mfs balance status "$T/mnt"
	assert_line --regexp "paused"
	umnt
	# the delete is on disk: a plain mount still needs -o degraded; the
	# offline status (read only) shows it with the member missing
	run mfs inspect-internal dump-tree -t root "$T/img1"
	assert_output --partial "BALANCE_ITEM"
	run mfs balance status "$T/img1"
	assert_failure 1
	assert_line --regexp "^Device delete on '.*' is paused$"
	mnt -o degraded,skip_balance "$T/img1"
	run mfs balance status "$T/mnt"
	assert_line --regexp "paused"
	verify_online
	mfs device delete resume "$T/mnt"
	wait_done "$T/mnt"
	verify_online
	umnt
	run devids_in_chunks "$T/img1"
	assert_output "$(printf '1\n2\n3')"
	whole "$T/img1" 3
}

@test "offline resume with a member missing: the delete of it goes on; a plain balance is refused, nothing written" {
	fs_with 4 1G 60 -d raid1 -m raid1
	lose 4
	degraded_write 10
	# a plain balance, paused on the degraded mount, then unmounted
	hold_at 1
	mfs balance start --bg --full-balance "$T/mnt"
	run while_held mfs balance pause "$T/mnt"
	assert_success
	umnt
	fp=$(fingerprint "$T/img1")
	run --separate-stderr mfs balance resume "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: device 4 is missing, and the paused operation does not remove it"
	assert_stderr_line "Mount with -o degraded to resume it there, or add the device back."
	run --separate-stderr mfs balance cancel "$T/img1"
	assert_failure 1
	assert_untouched "$T/img1" "$fp"
	# the delete of the missing member, paused, goes on offline to the end
	mnt -o degraded,skip_balance "$T/img1"
	mfs balance cancel "$T/mnt"
	hold_at 1
	mfs device delete --bg missing "$T/mnt"
	run while_held mfs device delete pause "$T/mnt"
	assert_success
	umnt
	run mfs balance resume "$T/img1"
	assert_success
	run mfs balance status "$T/img1"
	assert_success
	whole "$T/img1" 3
}

@test "delete missing: SIGKILL of the daemon mid-way; mounted -o degraded again it resumes and completes" {
	fs_with 4 1G 60 -d raid1 -m raid1
	lose 2
	degraded_write 10
	# killed when the first chunk is copied, not yet swapped in
	hold_at 1
	mfs device delete --bg missing "$T/mnt"
	wait_held
	kill_daemon
	release
	# nothing wrong but the missing member
	run mfs check "$T/img1"
	assert_line "ERROR: device 2 is missing"
	assert_line "1 error(s) found"
	mnt -o degraded "$T/img1"
	wait_done "$T/mnt"
	verify_online
	run mfs filesystem show "$T/mnt"
	refute_output --partial "MISSING"
	umnt
	run devids_in_chunks "$T/img1"
	assert_output "$(printf '1\n3\n4')"
	whole "$T/img1" 3
}
