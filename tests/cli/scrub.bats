#!/usr/bin/env bats
# Scrub: bit-rot on one device (two for raid6 and raid1c3) is found on every
# copy and repaired - data, metadata and raid5/6 parity - the errors are
# counted on the devices that hold them, a second scrub finds nothing, every
# file reads back and check is clean. -r changes nothing; an error no copy
# can correct names its file and exits 3. Offline (images) and online
# (mounted, background, pause and resume).

load helpers
load restripe

eval "helpers_$(declare -f teardown)"

teardown() {
	mfs_cleanup_mounts
	helpers_teardown
}

# make_fs PROFILE NDEVS [SIZE]: PROFILE for data and metadata, populated
# (selfheal's populate); the files' sums in $T/sums
make_fs() {
	make_images "$2" "${3:-1G}"
	mkfs.mfs -q -f -d "$1" -m "$1" $(imgs "$2")
	mfs_mount "$T/img1" "$T/mnt"
	populate "$T/mnt"
	tree_sums "$T/mnt" >"$T/sums"
	mfs umount "$T/mnt"
}

# summary_value LABEL: the number after "LABEL" in $output's summary
summary_value() {
	awk -v l="$1" 'index($0, l) == 1 { print $NF; exit }' <<<"$output"
}

# error_class CLASS: the count of CLASS (csum, verify, read, parity) on the
# "Error summary:" line of $output, 0 when absent
error_class() {
	grep -m1 '^Error summary:' <<<"$output" | tr ' ' '\n' |
		awk -F= -v c="$1" '$1 == c { n = $2 } END { print n + 0 }'
}

# assert_intact N: check reads every copy clean, every file reads back
assert_intact() {
	run mfs check --check-data-csum "$T/img1"
	assert_success
	assert_output --partial "no error found"
	mfs_mount "$T/img1" "$T/mnt"
	run bash -c "cd '$T/mnt' && sha256sum -c --quiet '$T/sums'"
	assert_success
	mfs umount "$T/mnt"
}

# expected_errs: from corrupt_copies' $output, "devid min max" of the
# corruption errors each device must count: one per damaged data sector and
# tree block - but a few tree blocks (the root tree's path, those of the
# extent tree a commit rewrites) are moved by the scrub's own commits of its
# cursor before it reaches them: their damaged copies are free space then.
expected_errs() {
	awk '$1 == "damaged" { print $3, $5 + $7 - ($7 < 12 ? $7 : 12), $5 + $7 }' <<<"$output"
}

# scrub_repairs PROFILE NDEVS BAD_DEVIDS [corrupt-copies.py options]:
# damage, one offline scrub repairs all of it, counted exactly, a second
# finds nothing
scrub_repairs() {
	local profile=$1 n=$2 bad=$3 expected sectors blocks verify
	shift 3

	make_fs "$profile" "$n"
	run corrupt_copies "$@" "$T/img1" "$bad"
	assert_success
	assert_line --regexp '^tree_blocks [1-9][0-9]* data_extents [1-9][0-9]*$'
	sectors=$(awk '$1 == "damaged" { s += $5 } END { print s }' <<<"$output")
	blocks=$(awk '$1 == "damaged" { s += $7 } END { print s }' <<<"$output")
	expected=$(expected_errs)
	run mfs check --check-data-csum "$T/img1"
	assert_failure

	# (the tree blocks the open reads - tree roots - it heals itself, and
	# counts: the scrub meets the others)
	run --separate-stderr mfs scrub start -B $(imgs "$n")
	assert_success
	verify=$(error_class verify)
	((verify > 0 && verify <= blocks && blocks - verify < 16))
	assert_stderr_line "WARNING: errors detected during scrubbing, $((sectors + verify)) corrected"
	assert_equal "$(error_class csum)" "$sectors"
	assert_equal "$(summary_value '  Corrected:')" "$((sectors + verify))"
	assert_equal "$(summary_value '  Uncorrectable:')" 0
	assert_line --regexp '^Status: +finished$'
	assert_corruption_errs "$T/img1" "$n" "$expected"

	run mfs scrub start -B $(imgs "$n")
	assert_success
	assert_line --regexp '^Error summary: +no errors found$'
	assert_corruption_errs "$T/img1" "$n" "$expected"
	assert_intact
}

@test "raid1: one device's copies damaged: scrub repairs all, a second finds none" {
	scrub_repairs raid1 2 2
}

@test "raid10: the second copy of a pair damaged: repaired" {
	scrub_repairs raid10 4 4 --copy 2
}

@test "raid5: one device's data columns damaged: rebuilt from parity and repaired" {
	scrub_repairs raid5 3 2
}

@test "raid6: two devices damaged: rebuilt with P and Q and repaired" {
	scrub_repairs raid6 4 1,3
}

@test "raid1c3: two of the three copies damaged: repaired from the third" {
	scrub_repairs raid1c3 3 2,3
}

@test "dup: the second copy damaged: repaired" {
	scrub_repairs dup 1 1 --copy 2
}

@test "metadata only (raid1), the first copies: every tree block repaired" {
	local blocks verify

	make_fs raid1 2
	run corrupt_copies --what metadata --copy 1 "$T/img1" 1
	assert_success
	blocks=$(awk '$1 == "damaged" { print $7 }' <<<"$output")
	((blocks > 0))
	# the open heals the tree roots it reads first (their first copies);
	# the scrub all the others
	run mfs scrub start -B $(imgs 2)
	assert_success
	verify=$(error_class verify)
	((verify > 0 && verify <= blocks && blocks - verify < 16))
	assert_equal "$(error_class csum)" 0
	assert_equal "$(summary_value '  Corrected:')" "$verify"
	assert_corruption_errs "$T/img1" 2 "1 $blocks"
	assert_intact
}

# parity_only PROFILE N: every P (and Q) strip of the data damaged on all devices
parity_only() {
	local profile=$1 n=$2 copies=$3 d parity

	make_images "$n"
	mkfs.mfs -q -f -d "$profile" -m raid1 $(imgs "$n")
	mfs_mount "$T/img1" "$T/mnt"
	head -c $((8 * MiB)) /dev/urandom >"$T/mnt/f"
	tree_sums "$T/mnt" >"$T/sums"
	mfs umount "$T/mnt"
	run corrupt_copies --what data --copy "$copies" "$T/img1" "$(seq -s, 1 "$n")"
	assert_success
	run mfs check --check-data-csum "$T/img1"
	assert_failure
	run mfs scrub start -B -d $(imgs "$n")
	assert_success
	parity=$(error_class parity)
	((parity > 0))
	assert_equal "$(error_class csum)" 0
	assert_equal "$(summary_value '  Corrected:')" "$parity"
	# each bad strip counted on the device that holds it
	total=0
	for ((d = 1; d <= n; d++)); do
		total=$((total + $(dev_stat "$T/img1" "$d" corruption_errs)))
	done
	assert_equal "$total" "$parity"
	run mfs scrub start -B $(imgs "$n")
	assert_success
	assert_line --regexp '^Error summary: +no errors found$'
	assert_intact
}

@test "raid5: parity damaged alone: found, counted and rewritten" {
	parity_only raid5 3 p
}

@test "raid6: P and Q damaged alone: found, counted and rewritten" {
	parity_only raid6 4 p,q
}

@test "-r: errors reported, nothing on disk changes; then a scrub repairs" {
	local before

	make_fs raid1 2
	run corrupt_copies --copy 2 "$T/img1" 2
	assert_success
	before=$(sha256sum "$T/img1" "$T/img2")
	run --separate-stderr mfs scrub start -B -r $(imgs 2)
	assert_success
	assert_stderr_line "WARNING: errors detected during scrubbing, 0 corrected"
	(($(error_class csum) > 0))
	assert_equal "$(summary_value '  Corrected:')" 0
	assert_equal "$(sha256sum "$T/img1" "$T/img2")" "$before"
	run mfs scrub start -B $(imgs 2)
	assert_success
	(($(summary_value '  Corrected:') > 0))
	assert_intact
}

@test "both copies of a file bad (raid1): its path is named, exit 3, nothing else harmed" {
	local sectors

	make_images 2
	mkfs.mfs -q -f -d raid1 -m raid1 $(imgs 2)
	mfs_mount "$T/img1" "$T/mnt"
	mkdir "$T/mnt/dir"
	head -c $((2 * MiB)) /dev/urandom >"$T/mnt/dir/victim"
	mfs umount "$T/mnt"
	# the only data so far: the victim's
	run corrupt_copies --what data "$T/img1" 1,2
	assert_success
	sectors=$(awk '$1 == "damaged" && $3 == 1 { print $5 }' <<<"$output")
	mfs_mount "$T/img1" "$T/mnt"
	populate "$T/mnt"
	(cd "$T/mnt" && sha256sum big/* small/s1 small/a/b/c/m3) >"$T/sums"
	mfs umount "$T/mnt"

	run --separate-stderr mfs scrub start -B $(imgs 2)
	assert_equal "$status" 3
	assert_stderr_line "ERROR: there are $sectors uncorrectable errors"
	assert_line "Uncorrectable error in: /dir/victim"
	assert_equal "$(summary_value '  Uncorrectable:')" "$sectors"
	assert_equal "$(error_class csum)" "$((2 * sectors))"
	refute_line --regexp 'Uncorrectable error in: /(big|small)'
	# counted against both devices, the rest intact
	assert_corruption_errs "$T/img1" 2 "1 $sectors
2 $sectors"
	mfs_mount "$T/img1" "$T/mnt"
	run bash -c "cd '$T/mnt' && sha256sum -c --quiet '$T/sums'"
	assert_success
	run cat "$T/mnt/dir/victim"
	assert_failure
	mfs umount "$T/mnt"
}

@test "scrub usage errors: no path, bad --limit, nothing to resume or cancel offline" {
	run mfs scrub start
	assert_failure
	make_images 2
	mkfs.mfs -q -f -d raid1 -m raid1 $(imgs 2)
	run --separate-stderr mfs scrub start --limit 12x $(imgs 2)
	assert_equal "$status" 1
	assert_stderr_line "ERROR: invalid --limit value: 12x"
	run mfs scrub resume $(imgs 2)
	assert_equal "$status" 2
	assert_output --partial "nothing to resume"
	run --separate-stderr mfs scrub cancel $(imgs 2)
	assert_equal "$status" 2
	assert_stderr_regex "^ERROR: scrub cancel failed on .*: not running$"
}

# scrub_state MNT: the Status: of mfs scrub status
scrub_state() {
	mfs scrub status "$1" | awk '$1 == "Status:" { print $2 }'
}

@test "online (raid1): scrub -B of the mount point repairs while files are written" {
	local expected

	make_fs raid1 2
	run corrupt_copies --copy 2 "$T/img1" 2
	assert_success
	expected=$(expected_errs)
	mfs_mount "$T/img1" "$T/mnt"
	# user I/O goes on beside the scrub
	(for i in $(seq 1 40); do head -c 100000 /dev/urandom >"$T/mnt/new$i"; done) &
	run --separate-stderr mfs -v scrub start -B -d "$T/mnt"
	wait $!
	assert_success
	# -v names the files whose bad copies were corrected
	assert_line --regexp '^Corrected error in: +/(big|small)/'
	refute_line --regexp '^Uncorrectable error in: '

	assert_line --regexp '^Status: +finished$'
	assert_line --regexp "^Scrub device $T/img2 \\(id 2\\) history\$"
	(($(error_class csum) > 0))
	assert_equal "$(summary_value '  Uncorrectable:')" 0
	run mfs device stats -c "$T/mnt"
	assert_equal "$status" 64
	assert_line --regexp "^\[$T/img2\]\.corruption_errs +[1-9][0-9]*\$"
	run mfs scrub status "$T/mnt"
	assert_success
	assert_line --regexp '^Status: +finished$'
	# the same figures as json, the daemon's file names and device counts too
	run mfs --format json scrub status "$T/mnt"
	assert_success
	"$MFS_PY" -c '
import json, sys
s = json.load(sys.stdin)["scrub-status"][0]
assert s["status"] == "finished", s
assert s["csum_errors"] > 0 and s["uncorrectable_errors"] == 0, s
assert s["corrected_errors"] == s["csum_errors"] + s["verify_errors"], s
assert s["bytes_scrubbed"] > 0 and s["uncorrectable"] == [], s
assert any(p.startswith(("/big/", "/small/")) for p in s["corrected"]), s
devs = {d["devid"]: d for d in s["devices"]}
assert devs[1]["csum_errors"] == 0 and devs[2]["csum_errors"] == s["csum_errors"], devs
assert devs[2]["path"] == sys.argv[1], devs
' "$T/img2" <<<"$output"
	run mfs scrub start -B "$T/mnt"
	assert_success
	assert_line --regexp '^Error summary: +no errors found$'
	mfs umount "$T/mnt"
	assert_corruption_errs "$T/img1" 2 "$expected"
	assert_intact
}

@test "online: background scrub, pause, status, refusals while paused, resume to the end" {
	local total done1

	make_fs raid1 2
	run corrupt_copies --copy 2 "$T/img1" 2
	assert_success
	mfs_mount "$T/img1" "$T/mnt"
	# held after its second step, the scrub is part of the way through
	echo 2 >"$T/hold-scrub"
	run mfs scrub start "$T/mnt"
	assert_success
	assert_output --regexp "^scrub started on $T/mnt, fsid [-0-9a-f]+ \\(pid=[0-9]+\\)\$"
	wait_for_file "$T/hold-scrub.held"
	run mfs scrub start "$T/mnt"
	assert_failure
	assert_output --partial "Scrub is already running"
	mfs scrub pause "$T/mnt" >"$T/pause.out" &
	wait_until 60 requested pause "$T/mnt"
	rm -f "$T/hold-scrub.held"
	wait $!
	assert_equal "$(scrub_state "$T/mnt")" paused
	run mfs scrub status -R "$T/mnt"
	done1=$(awk '$1 == "bytes_scrubbed:" { print $2 }' <<<"$output")
	total=$(mfs scrub status --raw "$T/mnt" | awk '$1 == "Total" { print $4 }')
	((done1 > 0 && done1 < total))
	# exclusive: no balance, delete or replace while a scrub is paused, no
	# second scrub
	run --separate-stderr mfs balance start --full-balance "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: unable to start balance, another exclusive operation 'scrub' in progress"
	run --separate-stderr mfs device delete 2 "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: unable to start device delete, another exclusive operation 'scrub' in progress"
	truncate -s 1G "$T/new"
	run --separate-stderr mfs replace start -B 2 "$T/new" "$T/mnt"
	assert_failure 1
	assert_stderr_regex "another exclusive operation 'scrub' in progress"
	run mfs scrub start -B "$T/mnt"
	assert_failure
	assert_output --partial "Scrub is already paused"
	run mfs scrub resume -B "$T/mnt"
	assert_success
	assert_line --regexp '^Scrub resumed: '
	assert_line --regexp '^Status: +finished$'
	(($(summary_value '  Corrected:') > 0))
	assert_equal "$(summary_value '  Uncorrectable:')" 0
	run mfs scrub status -R "$T/mnt"
	assert_line "	bytes_scrubbed: $total"
	run mfs scrub resume "$T/mnt"
	assert_equal "$status" 2
	mfs umount "$T/mnt"
	assert_intact
}

# requested WHAT MNT: a pause or cancel of the running scrub was asked for
requested() {
	mfs scrub status "$2" | grep -qE "^Status: +running, $1 requested\$"
}

@test "online cancel: stops, status says aborted, not resumed beside a balance, then resumed" {
	make_fs raid1 2
	mfs_mount "$T/img1" "$T/mnt"
	echo 1 >"$T/hold-scrub"
	run mfs scrub start "$T/mnt"
	assert_success
	wait_for_file "$T/hold-scrub.held"
	mfs scrub cancel "$T/mnt" >"$T/cancel.out" &
	wait_until 60 requested cancel "$T/mnt"
	rm -f "$T/hold-scrub.held"
	wait $!
	run cat "$T/cancel.out"
	assert_output "scrub cancelled"
	assert_equal "$(scrub_state "$T/mnt")" aborted
	run mfs scrub cancel "$T/mnt"
	assert_equal "$status" 2
	# a cancelled scrub lets a balance start; it is not resumed beside one
	hold_at 1
	run mfs balance start --bg --full-balance "$T/mnt"
	assert_success
	wait_held
	run --separate-stderr mfs scrub resume -B "$T/mnt"
	assert_failure 1
	assert_stderr_regex "^ERROR: unable to resume scrub, another exclusive operation is in progress"
	release
	wait_until 600 bash -c "mfs balance status '$T/mnt' >/dev/null"
	run mfs scrub resume -B "$T/mnt"
	assert_success
	assert_line --regexp '^Status: +finished$'
	assert_line --regexp '^Error summary: +no errors found$'
}

@test "degraded mount (raid1, a device gone): scrubs what is there, names the chunks without redundancy" {
	make_fs raid1 2
	mv "$T/img2" "$T/gone"
	mfs_mount -o degraded "$T/img1" "$T/mnt"
	run mfs scrub start -B "$T/mnt"
	assert_success
	assert_line --regexp '^Degraded: +chunk [0-9]+ \(RAID1\): 1 of 2 stripes missing, no redundancy left$'
	assert_line --regexp '^Status: +finished$'
	assert_line --regexp '^Error summary: +no errors found$'
	(($(summary_value '  Unverified:') > 0))
	mfs umount "$T/mnt"
}

@test "the cursor persists: paused by unmount, then the daemon killed, resumed offline where it stopped" {
	local done1 done2

	make_fs raid1 2
	run corrupt_copies --copy 2 "$T/img1" 2
	assert_success
	mfs_mount "$T/img1" "$T/mnt"
	echo 2 >"$T/hold-scrub"
	mfs scrub start "$T/mnt"
	wait_for_file "$T/hold-scrub.held"
	# the unmount asks the scrub to pause (held there until the scrub has
	# seen the request), and the scrub saves its cursor as it stops
	echo 1 >"$T/hold-scrub-stop"
	mfs umount "$T/mnt" &
	wait_for_file "$T/hold-scrub-stop.held"
	rm -f "$T/hold-scrub.held"
	rm -f "$T/hold-scrub-stop.held"
	wait $!

	# skip_scrub: the scrub the unmount interrupted stays paused
	mfs_mount -o skip_scrub "$T/img1" "$T/mnt"
	run mfs scrub status -R "$T/mnt"
	assert_line --regexp '^Status: +paused$'
	done1=$(awk '$1 == "bytes_scrubbed:" { print $2 }' <<<"$output")
	((done1 > 0))
	run --separate-stderr mfs balance start --full-balance "$T/mnt"
	assert_failure
	assert_stderr_regex "another exclusive operation 'scrub' in progress"
	# resumed, held after one more step, made durable by a sync, then a crash
	echo 1 >"$T/hold-scrub"
	run mfs scrub resume "$T/mnt"
	assert_success
	assert_output --regexp "^scrub resumed on $T/mnt"
	wait_for_file "$T/hold-scrub.held"
	mfs filesystem sync "$T/mnt"
	mfs_kill9 "$T/mnt"
	rm -f "$T/hold-scrub.held"

	# offline, the same state: resumed from the saved cursor to the end
	run mfs scrub status -R $(imgs 2)
	assert_line --regexp '^Status: +paused$'
	done2=$(awk '$1 == "bytes_scrubbed:" { print $2 }' <<<"$output")
	((done2 > done1))
	run mfs scrub resume -B $(imgs 2)
	assert_success
	assert_line --regexp '^Scrub resumed: '
	assert_line --regexp '^Status: +finished$'
	assert_equal "$(summary_value '  Uncorrectable:')" 0
	run mfs scrub resume $(imgs 2)
	assert_equal "$status" 2
	run mfs scrub start -B $(imgs 2)
	assert_success
	assert_line --regexp '^Error summary: +no errors found$'
	assert_intact
}

# scrub_state MNT: the Status: of MNT's scrub
scrub_state() {
	mfs scrub status "$1" | awk '$1 == "Status:" { print $2 }'
}

@test "files found bad before a crash are named when the resumed scrub ends" {
	local i

	make_images 2
	mkfs.mfs -q -f -d raid1 -m raid1 $(imgs 2)
	mfs_mount "$T/img1" "$T/mnt"
	mkdir "$T/mnt/dir"
	head -c $((2 * MiB)) /dev/urandom >"$T/mnt/dir/victim"
	mfs umount "$T/mnt"
	# the only data so far: the victim's, both copies
	run corrupt_copies --what data "$T/img1" 1,2
	assert_success
	mfs_mount "$T/img1" "$T/mnt"
	# data after it: steps are left once the scrub is past the victim
	head -c $((48 * MiB)) /dev/urandom >"$T/mnt/after"
	mfs filesystem sync "$T/mnt"
	echo 1 >"$T/hold-scrub"
	mfs scrub start "$T/mnt"
	for ((i = 0; i < 30; i++)); do
		wait_for_file "$T/hold-scrub.held"
		run mfs scrub status -R "$T/mnt"
		grep -q 'uncorrectable_errors: [1-9]' <<<"$output" && break
		echo 1 >"$T/hold-scrub"
		rm -f "$T/hold-scrub.held"
	done
	assert_line --regexp 'uncorrectable_errors: [1-9]'
	assert_line --regexp '^Status: +running$'
	# files are named when a scrub ends; a commit, then a crash before that
	mfs filesystem sync "$T/mnt"
	mfs_kill9 "$T/mnt"
	rm -f "$T/hold-scrub.held"

	run --separate-stderr mfs scrub resume -B $(imgs 2)
	assert_equal "$status" 3
	assert_line --regexp '^Status: +finished$'
	assert_line "Uncorrectable error in: /dir/victim"
	refute_line --regexp 'Uncorrectable error in: /after'
	# named once: the list is gone with the scrub that named it
	run --separate-stderr mfs scrub start -B -r $(imgs 2)
	assert_equal "$status" 3
	assert_line "Uncorrectable error in: /dir/victim"
	[ "$(grep -c 'Uncorrectable error in:' <<<"$output")" -eq 1 ]
}

@test "a crash mid-scrub takes back none of the bytes the status reported scrubbed" {
	local before after

	make_fs raid1 2
	# no timed commit while it is held: only the scrub's own make it durable
	mfs_mount -o commit=300 "$T/img1" "$T/mnt"
	echo 3 >"$T/hold-scrub"
	mfs scrub start "$T/mnt"
	wait_for_file "$T/hold-scrub.held"
	before=$(mfs scrub status -R "$T/mnt" | awk '$1 == "bytes_scrubbed:" { print $2 }')
	mfs_kill9 "$T/mnt"
	rm -f "$T/hold-scrub.held"
	after=$(mfs scrub status -R $(imgs 2) | awk '$1 == "bytes_scrubbed:" { print $2 }')
	((after >= before))
	# the next mount goes on from there to the end
	mfs_mount "$T/img1" "$T/mnt"
	wait_until 600 scrub_ended "$T/mnt"
	run mfs scrub status -R "$T/mnt"
	assert_line --regexp '^\s+uncorrectable_errors: 0$'
	mfs umount "$T/mnt"
	assert_intact
}

# scrub_ended MNT: MNT's scrub finished
scrub_ended() {
	[ "$(scrub_state "$1")" = finished ]
}

@test "a scrub an unmount or a crash interrupted goes on at the next mount; one the admin paused waits" {
	make_fs raid1 2
	run corrupt_copies --copy 2 "$T/img1" 2
	assert_success
	# interrupted by an unmount: resumed by the plain mount after it
	mfs_mount "$T/img1" "$T/mnt"
	echo 1 >"$T/hold-scrub"
	mfs scrub start "$T/mnt"
	wait_for_file "$T/hold-scrub.held"
	echo 1 >"$T/hold-scrub-stop"
	mfs umount "$T/mnt" &
	wait_for_file "$T/hold-scrub-stop.held"
	rm -f "$T/hold-scrub.held" "$T/hold-scrub-stop.held"
	wait $!
	run mfs scrub status -R $(imgs 2)
	assert_line --regexp '^Status: +paused$'
	mfs_mount "$T/img1" "$T/mnt"
	wait_until 600 scrub_ended "$T/mnt"
	run mfs scrub status -R "$T/mnt"
	assert_line --regexp '^Scrub resumed: '
	assert_line --regexp '^Status: +finished$'
	assert_line --regexp '^\s+uncorrectable_errors: 0$'
	assert_line --regexp '^\s+corrected_errors: [1-9][0-9]*$'
	mfs umount "$T/mnt"

	# stopped by a crash (the item says running): resumed too
	run corrupt_copies --copy 2 "$T/img1" 2
	assert_success
	mfs_mount "$T/img1" "$T/mnt"
	echo 1 >"$T/hold-scrub"
	mfs scrub start "$T/mnt"
	wait_for_file "$T/hold-scrub.held"
	mfs filesystem sync "$T/mnt"
	mfs_kill9 "$T/mnt"
	rm -f "$T/hold-scrub.held"
	mfs_mount "$T/img1" "$T/mnt"
	wait_until 600 scrub_ended "$T/mnt"
	mfs umount "$T/mnt"

	# paused by the admin: stays paused across unmount and mount
	mfs_mount "$T/img1" "$T/mnt"
	echo 1 >"$T/hold-scrub"
	mfs scrub start "$T/mnt"
	wait_for_file "$T/hold-scrub.held"
	mfs scrub pause "$T/mnt" &
	wait_until 60 requested pause "$T/mnt"
	rm -f "$T/hold-scrub.held"
	wait $!
	mfs umount "$T/mnt"
	mfs_mount "$T/img1" "$T/mnt"
	assert_equal "$(scrub_state "$T/mnt")" paused
	run mfs scrub resume "$T/mnt"
	assert_success
	wait_until 600 scrub_ended "$T/mnt"
	mfs umount "$T/mnt"
	run mfs check --check-data-csum $(imgs 2)
	assert_success
	assert_intact
}

@test "--limit: each device read at that rate at most" {
	local secs

	make_fs raid1 2
	# about 17 MiB on each device at 4 MiB/s: past the first 8 MiB step,
	# the throttle holds it at least two seconds
	run mfs scrub start -B --limit 4m $(imgs 2)
	assert_success
	assert_line --regexp '^Rate: +[0-9.]+[KM]iB/s \(limit 4.00MiB/s\)$'
	secs=$(awk '$1 == "Duration:" { split($2, t, ":"); print t[1] * 3600 + t[2] * 60 + t[3] }' <<<"$output")
	((secs >= 2))
}

@test "scrub limit: shown, changed while the scrub runs, kept for resume; refusals" {
	make_fs raid1 2
	mfs_mount "$T/img1" "$T/mnt"
	run --separate-stderr mfs scrub limit -l 1m "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: --limit needs --all"
	run --separate-stderr mfs scrub limit -d 1 -l 1m "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: mfs reads every device at one limit: use --all"
	run --separate-stderr mfs scrub limit -a -l 1m "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: no scrub running or paused on $T/mnt: 'mfs scrub start --limit' sets one for a new scrub"
	run mfs scrub limit "$T/mnt"
	assert_success
	assert_line --regexp "^ +1 unlimited +$T/img1$"

	# running at 1 MiB/s a device, held after its first step
	echo 1 >"$T/hold-scrub"
	mfs scrub start --limit 1m "$T/mnt"
	wait_for_file "$T/hold-scrub.held"
	run mfs scrub limit "$T/mnt"
	assert_line --regexp "^ +1 1.00MiB +$T/img1$"
	assert_line --regexp "^ +2 1.00MiB +$T/img2$"
	run mfs scrub limit -a -l 0 "$T/mnt"
	assert_success
	assert_output "Set the scrub limit of every device from 1.00MiB to unlimited"
	run mfs scrub status "$T/mnt"
	assert_line --regexp '^Status: +running$'
	refute_output --partial "(limit"
	# paused; a limit set now is kept, across a remount, for resume
	mfs scrub pause "$T/mnt" &
	rm -f "$T/hold-scrub.held"
	wait $!
	run mfs scrub limit -a -l 2m "$T/mnt"
	assert_success
	assert_output "Set the scrub limit of every device from unlimited to 2.00MiB"
	mfs umount "$T/mnt"
	mfs_mount "$T/img1" "$T/mnt"
	run mfs scrub limit "$T/mnt"
	assert_line --regexp "^ +2 2.00MiB +$T/img2$"
	run mfs scrub resume -B "$T/mnt"
	assert_success
	assert_line --regexp '^Rate: +[0-9.]+[KM]iB/s \(limit 2.00MiB/s\)$'
	assert_line --regexp '^Status: +finished$'
}

@test "a running balance refuses a scrub, with btrfs's words" {
	make_fs raid1 2
	mfs_mount "$T/img1" "$T/mnt"
	hold_at 1
	run mfs balance start --bg --full-balance "$T/mnt"
	assert_success
	wait_held
	run --separate-stderr mfs scrub start -B "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: unable to start scrub, another exclusive operation 'balance' in progress"
	release
	wait_until 600 bash -c "mfs balance status '$T/mnt' >/dev/null"
	run mfs scrub start -B "$T/mnt"
	assert_success
	assert_line --regexp '^Error summary: +no errors found$'
}

@test "online raid5: files written while the scrub is part-way are left to the next scrub, all clean" {
	make_fs raid5 3
	run corrupt_copies "$T/img1" 2
	assert_success
	mfs_mount "$T/img1" "$T/mnt"
	echo 1 >"$T/hold-scrub"
	run mfs scrub start "$T/mnt"
	assert_success
	wait_for_file "$T/hold-scrub.held"
	# the scrub holds no lock between its steps: writes go on, into new
	# rows (some still in memory when the scrub reaches them)
	for i in $(seq 1 20); do
		head -c $((i * 50000)) /dev/urandom >"$T/mnt/during$i"
	done
	rm -f "$T/hold-scrub.held"
	wait_until 600 bash -c "mfs scrub status '$T/mnt' | grep -qE '^Status: +finished$'"
	run mfs scrub status "$T/mnt"
	assert_equal "$(summary_value '  Uncorrectable:')" 0
	(($(summary_value '  Corrected:') > 0))
	tree_sums "$T/mnt" >"$T/sums"
	run mfs scrub start -B "$T/mnt"
	assert_success
	assert_line --regexp '^Error summary: +no errors found$'
	mfs umount "$T/mnt"
	assert_intact
}

@test "a bad superblock copy is found, counted, and rewritten by the scrub's commit" {
	make_fs raid1 2
	# the copy at 64 MiB of devid 2
	corrupt "$T/img2" $((64 * MiB + 200))
	run mfs inspect-internal dump-super -s 1 "$T/img2"
	assert_line --regexp "^csum.*\\[DON'T MATCH\\]\$"
	run mfs scrub start -B -d $(imgs 2)
	assert_success
	assert_line --regexp '^Error summary: +super=1$'
	assert_equal "$(summary_value '  Corrected:')" 1
	assert_equal "$(dev_stat "$T/img1" 2 corruption_errs)" 1
	assert_equal "$(dev_stat "$T/img1" 1 corruption_errs)" 0
	run mfs inspect-internal dump-super -s 1 "$T/img2"
	assert_success
	assert_line --regexp '^csum.*\[match\]$'
	run mfs scrub start -B $(imgs 2)
	assert_success
	assert_line --regexp '^Error summary: +no errors found$'
}
