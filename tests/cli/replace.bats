#!/usr/bin/env bats
# mfs replace start|status|cancel|pause|resume, online and offline, on
# raid1, raid10, raid5 and single/dup: every file's sha256 unchanged,
# `mfs check` clean, the target a member and the source gone; refusals
# that change nothing; pause, unmount, SIGKILL and cancel mid-way.

load helpers
load restripe

setup_file() {
	big_template
}

# has_path DEV PATH: `filesystem show` lists PATH as a member
has_path() {
	mfs filesystem show "$1" | awk -v p="$2" '$1 == "devid" && $NF == p { f = 1 } END { exit !f }'
}

# replaced DEV SOURCE TARGET: the target is a member, the source is not
# and holds no superblock any more
replaced() {
	has_path "$1" "$3"
	if has_path "$1" "$2"; then
		echo "$2 is still a member" >&2
		return 1
	fi
	if mfs inspect-internal dump-super "$2" >/dev/null 2>&1; then
		echo "$2 still holds a superblock" >&2
		return 1
	fi
}

STATUS_DONE='^Started on [ 0-9]{2}\.[A-Z][a-z]{2} [0-9:]{8}, finished on [ 0-9]{2}\.[A-Z][a-z]{2} [0-9:]{8}, 0 write errs, 0 uncorr\. read errs$'

@test "replace online: raid1 in the foreground, raid10 in the background" {
	fs_with -n 3 4 512M 60 -d raid1 -m raid1
	mnt "$T/img1"
	run mfs replace status -1 "$T/mnt"
	assert_success
	assert_output "Never started"
	run --separate-stderr mfs replace start -B "$T/img2" "$T/img4" "$T/mnt"
	assert_success
	assert_stderr_empty
	replaced "$T/img1" "$T/img2" "$T/img4"
	[ "$(nr_devices "$T/img1")" = 3 ]
	run mfs replace status -1 "$T/mnt"
	assert_success
	assert_output --regexp "$STATUS_DONE"
	verify_online
	umnt
	# how it ended is kept on disk: said on the unmounted devices too
	run mfs replace status -1 "$T/img1"
	assert_success
	assert_output --regexp "$STATUS_DONE"
	run devids_in_chunks "$T/img1"
	assert_output "$(printf '1\n2\n3')"
	show_line "$T/img1" 2 | grep -q " path $T/img4\$"
	verify_offline "$T/img1"

	fs_with -n 4 5 512M 60 -d raid10 -m raid10
	mnt "$T/img1"
	# by devid, daemonized: returns at once, nothing printed
	run --separate-stderr mfs device replace start 3 "$T/img5" "$T/mnt"
	assert_success
	assert_output ""
	assert_stderr_empty
	wait_done "$T/mnt"
	replaced "$T/img1" "$T/img3" "$T/img5"
	run mfs replace status "$T/mnt"
	assert_success
	assert_output --regexp "$STATUS_DONE"
	verify_online
	umnt
	run devids_in_chunks "$T/img1"
	assert_output "$(printf '1\n2\n3\n4')"
	verify_offline "$T/img1"
}

@test "replace offline: raid5 with -r, single data and dup metadata onto a smaller target" {
	fs_with -n 3 4 512M 60 -d raid5 -m raid5
	run --separate-stderr mfs replace start -r "$T/img1" "$T/img4" "$T/img2"
	assert_success
	# stdout: progress lines at most (they come once a second has passed)
	[ -z "$(grep -vE '^[0-9]+/[0-9]+ chunks, ' <<<"$output" | grep .)" ]
	replaced "$T/img2" "$T/img1" "$T/img4"
	run devids_in_chunks "$T/img2"
	assert_output "$(printf '1\n2\n3')"
	verify_offline "$T/img2"

	fs_with -n 2 3 1G 100 -d single -m dup
	truncate -s 400M "$T/img3"
	run --separate-stderr mfs replace start -B 1 "$T/img3" "$T/img2"
	assert_success
	replaced "$T/img2" "$T/img1" "$T/img3"
	# the target is a member of its own size
	show_line "$T/img2" 1 | grep -q ' size 400.00MiB '
	# an offline replace's outcome stays too, for a later status, mounted or not
	run mfs replace status -1 "$T/img2"
	assert_success
	assert_output --regexp "$STATUS_DONE"
	mnt "$T/img2"
	run mfs replace status -1 "$T/mnt"
	assert_success
	assert_output --regexp "$STATUS_DONE"
	umnt
	verify_offline "$T/img2"
}

@test "replace refusals: member, other filesystems, mounted, too small, bad source, same device, busy; nothing changes" {
	fs_with -n 2 3 512M 150 -d raid1 -m raid1
	foreign_devices 160M
	seed_image "$T/img3"
	declare -A fp
	for f in img1 img2 img3 other e4 small; do fp[$f]=$(fingerprint "$T/$f"); done
	layout=$(chunk_layout "$T/img1")

	refused() {
		local where=$1 src=$2 dev=$3 line
		shift 3
		run --separate-stderr mfs replace start -B "$src" "$dev" "$where"
		assert_failure 1
		assert_stdout_empty
		for line in "$@"; do assert_stderr_regex "$line"; done
		[ "$(nr_devices "$T/img1")" = 2 ]
	}
	untouched() {
		for f in "$@"; do assert_untouched "$T/$f" "${fp[$f]}"; done
	}
	all_refused() {
		local w=$1
		refused "$w" 2 "$T/img1" "^ERROR: target device $T/img1 is a member of this filesystem$"
		refused "$w" 2 "$T/other" "^ERROR: $T/other appears to contain an existing filesystem \(type=mfs\)$" \
			"^ERROR: use the -f option to force overwrite of $T/other$"
		refused "$w" 2 "$T/e4" "^ERROR: $T/e4 appears to contain an existing filesystem \(type=ext4\)$"
		refused "$w" 2 "$T/small" "^ERROR: target device smaller than source device \(required [0-9]+ bytes\)$" \
			"^The target may be smaller than the source \([0-9]+ bytes\) as long as what is allocated on the source"
		refused "$w" 7 "$T/img3" "^ERROR: '7' is not a valid devid for filesystem '$w'$"
		refused "$w" "$T/other" "$T/img3" "^ERROR: source device '$T/other' is not a member of filesystem '$w'$"
		refused "$w" "$T/img3" "$T/img3" "^ERROR: source and target are the same device: $T/img3$"
		refused "$w" 2 "$T/nothere" "^ERROR: cannot access '$T/nothere'"
	}

	all_refused "$T/img1"
	untouched img1 img2 img3 other e4 small
	verify_offline "$T/img1"

	mnt "$T/img1"
	all_refused "$T/mnt"
	# a device mounted elsewhere, even with -f
	mkdir "$T/mnt2"
	MFS_REGISTRY="$T/other-registry" mfs mount "$T/other" "$T/mnt2"
	echo "$T/mnt2" >>"$T/.mounts"
	run --separate-stderr mfs replace start -f 2 "$T/other" "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: $T/other is mounted on $T/mnt2"
	mfs umount "$T/mnt2"
	# another exclusive operation, even paused
	hold_at 1
	mfs balance start --bg --full-balance "$T/mnt"
	while_held mfs balance pause "$T/mnt"
	refused "$T/mnt" 2 "$T/img3" \
		"^ERROR: unable to start device replace, another exclusive operation 'balance paused' in progress$"
	mfs balance cancel "$T/mnt"
	layout=$(chunk_layout "$T/img1")
	verify_online
	umnt
	untouched img3 other e4 small
	[ "$(chunk_layout "$T/img1")" = "$layout" ]
	verify_offline "$T/img1"
}

@test "replace: status, pause, unmount, resume at mount with skip_balance; balance status shows it" {
	big_fs
	truncate -s 256M "$T/img4"
	mnt "$T/img1"
	hold_at 2
	run --separate-stderr mfs replace start 2 "$T/img4" "$T/mnt"
	assert_success
	run mfs replace status -1 "$T/mnt"
	assert_success
	assert_output --regexp '^[0-9]+\.[0-9]% done, 0 write errs, 0 uncorr\. read errs$'
	run mfs balance status "$T/mnt"
	assert_failure 1
	assert_line --index 0 "Device replace on '$T/mnt' is running"
	run --separate-stderr mfs balance start --full-balance "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: unable to start balance, another exclusive operation 'device replace' in progress"
	run --separate-stderr mfs replace start 3 "$T/img4" "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: device replace on '$T/mnt' already started"
	run --separate-stderr while_held mfs replace pause "$T/mnt"
	assert_success
	run mfs replace status -1 "$T/mnt"
	assert_success
	assert_output --regexp '^Started on [ 0-9]{2}\.[A-Z][a-z]{2} [0-9:]{8}, suspended at [0-9]+\.[0-9]%, 0 write errs, 0 uncorr\. read errs$'
	run --separate-stderr mfs replace pause "$T/mnt"
	assert_failure 2
	assert_stderr_line "ERROR: replace pause on '$T/mnt' failed: Not running"
	verify_online
	umnt
	run mfs replace status -1 "$T/img1"
	assert_success
	assert_output --partial ", suspended at "
	run mfs check "$T/img1"
	assert_success
	mnt -o skip_balance "$T/img1"
	run mfs balance status "$T/mnt"
	assert_failure 1
	assert_line --index 0 "Device replace on '$T/mnt' is paused"
	run --separate-stderr mfs replace resume "$T/mnt"
	assert_success
	run --separate-stderr mfs replace resume "$T/mnt"
	assert_failure 2
	assert_stderr_line "ERROR: replace resume on '$T/mnt' failed: Not in progress"
	replaced "$T/img1" "$T/img2" "$T/img4"
	verify_online
	umnt
	run devids_in_chunks "$T/img1"
	assert_output "$(printf '1\n2\n3')"
	verify_offline "$T/img1"
}

@test "replace: SIGKILL of the daemon mid-replace; it resumes at mount and completes" {
	big_fs
	truncate -s 256M "$T/img4"
	mnt "$T/img1"
	# killed when one chunk is done and the second copied, not yet swapped in
	hold_at 2
	mfs replace start 2 "$T/img4" "$T/mnt"
	wait_held
	kill_daemon
	release
	run mfs balance status "$T/img1"
	assert_failure 1
	assert_line --index 0 "Device replace on '$T/img1' is paused"
	run mfs check "$T/img1"
	assert_success
	mnt "$T/img1"
	wait_done "$T/mnt"
	replaced "$T/img1" "$T/img2" "$T/img4"
	verify_online
	umnt
	run devids_in_chunks "$T/img1"
	assert_output "$(printf '1\n2\n3')"
	verify_offline "$T/img1"
}

@test "replace cancel: online mid-way and offline when paused; the source stays, the target leaves" {
	big_fs
	truncate -s 256M "$T/img4"
	mnt "$T/img1"
	run --separate-stderr mfs replace cancel "$T/mnt"
	assert_failure 2
	assert_stderr_line "INFO: ioctl(DEV_REPLACE_CANCEL)\"$T/mnt\": not started"
	hold_at 3
	mfs replace start 2 "$T/img4" "$T/mnt"
	run --separate-stderr while_held mfs replace cancel "$T/mnt"
	assert_success
	run mfs replace status -1 "$T/mnt"
	assert_success
	assert_output --regexp '^Started on .*, canceled on [ 0-9]{2}\.[A-Z][a-z]{2} [0-9:]{8} at [0-9]+\.[0-9]%, 0 write errs, 0 uncorr\. read errs$'
	run mfs balance status "$T/mnt"
	assert_success
	has_path "$T/img1" "$T/img2"
	run ! has_path "$T/img1" "$T/img4"
	run mfs inspect-internal dump-super "$T/img4"
	assert_failure
	[ "$(nr_devices "$T/img1")" = 3 ]
	verify_online

	# paused, unmounted, cancelled offline: the way back runs there
	hold_at 2
	mfs replace start 3 "$T/img4" "$T/mnt"
	umnt_held
	run mfs replace status -1 "$T/img1"
	assert_success
	assert_output --partial ", suspended at "
	run --separate-stderr mfs replace cancel "$T/img1"
	assert_success
	run mfs replace status -1 "$T/img1"
	assert_success
	assert_output --regexp '^Started on .*, canceled on [ 0-9]{2}\.[A-Z][a-z]{2} [0-9:]{8} at [0-9]+\.[0-9]%, 0 write errs, 0 uncorr\. read errs$'
	run mfs balance status "$T/img1"
	assert_success
	run devids_in_chunks "$T/img1"
	assert_output "$(printf '1\n2\n3')"
	run mfs inspect-internal dump-super "$T/img4"
	assert_failure
	verify_offline "$T/img1"
	# the source takes new chunks again: its flags are clear
	[ "$(mfs inspect-internal dump-tree -t chunk "$T/img1" | awk '$1 == "devid" && $2 == 3 { print $8 }')" = 0x0 ]
}

@test "replace needs CAP_SYS_ADMIN" {
	fs_with -n 2 3 512M 8 -d raid1 -m raid1
	mnt "$T/img1"
	d=$T
	while [ "$d" != / ] && [ "$d" != /tmp ]; do chmod o+x "$d"; d=$(dirname "$d"); done
	id nobody >/dev/null 2>&1 || useradd -r -M nobody
	chmod 666 "$T/img3"
	seed_image "$T/img3"
	fp=$(fingerprint "$T/img3")
	as_nobody() { setpriv --reuid="$(id -u nobody)" --regid="$(id -g nobody)" --clear-groups --inh-caps=-all \
		env MFS_REGISTRY="$T/noreg" "$MFS_BUILD/mfs" "$@"; }
	run --separate-stderr as_nobody replace start -B 2 "$T/img3" "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: cannot read the replace status of '$T/mnt': Operation not permitted"
	assert_untouched "$T/img3" "$fp"
	run --separate-stderr as_nobody replace cancel "$T/mnt"
	assert_failure 1
	[ "$(nr_devices "$T/img1")" = 2 ]
	verify_online
	umnt
	verify_offline "$T/img1"
}

@test "replace of a missing raid5 member: the survivors are not blamed for the missing column" {
	# every range the rebuild reads that reaches the missing member's
	# column fails by design; counting that against the device where the
	# range starts made both survivors failing on a large rebuild
	make_images 4 1G
	mkfs.mfs -q -f -d raid5 -m raid1 "$T/img1" "$T/img2" "$T/img3"
	mnt "$T/img1"
	gen_file "$T/mnt/big" 40
	sums "$T/mnt" >"$T/want"
	umnt
	mfs device scan -u "$T/img3"
	rm "$T/img3"
	# one error more than none would make a survivor failing
	mnt -o degraded,fail_threshold=1 "$T/img1"
	run mfs replace start -B -f 3 "$T/img4" "$T/mnt"
	assert_success
	run mfs filesystem show --check "$T/mnt"
	assert_success
	run mfs device stats -c "$T/mnt"
	assert_success
	verify_online
	umnt
	verify_offline "$T/img1"
}

# holey_files DIR: files of odd sizes written together, every other one
# deleted: rows of the raid5/6 chunks hold data beside freed bytes that
# are not zeros (what the deleted files held)
holey_files() {
	local i

	for i in $(seq 1 60); do
		head -c $((i * 5321 + 40000)) /dev/urandom >"$1/h$i"
	done
	sync
	for i in $(seq 2 2 60); do
		rm "$1/h$i"
	done
	sync
}

# data_stripes_sum FS DEVID IMG: sha256 of what device DEVID (image IMG)
# holds of the raid5/6 data chunks
data_stripes_sum() {
	mfs inspect-internal dump-tree -t chunk "$1" | awk -v d="$2" '
		$1 == "length" { len = $2; data = $0 ~ /type Data/;
			par = $0 ~ /RAID6/ ? 2 : 1 }
		$1 == "num_stripes" { n = $2 }
		$1 == "stripe" && $4 == d && data { print $6, len / (n - par) }' |
		while read -r off len; do
			dd if="$3" bs=64K iflag=skip_bytes,count_bytes skip="$off" count="$len" 2>/dev/null
		done | sha256sum
}

# holey_fs PROFILE MPROFILE: images img1..img5, a filesystem on img1..img4
# with holey_files in it, their sums in $T/want, unmounted
holey_fs() {
	make_images 5 1G
	mkfs.mfs -q -f -d "$1" -m "$2" "$T/img1" "$T/img2" "$T/img3" "$T/img4"
	mnt "$T/img1"
	holey_files "$T/mnt"
	sums "$T/mnt" >"$T/want"
	umnt
}

# read_without DEV... : with these members gone, every file reads back from
# parity (mounted degraded, read-only) as it was
read_without() {
	local d

	for d in "$@"; do
		mfs device scan -u "$d"
		mv "$d" "$d.gone"
	done
	mnt -o degraded,ro "$T/img4"
	verify_online
	umnt
	for d in "$@"; do
		mv "$d.gone" "$d"
		mfs device scan "$d" >/dev/null
	done
}

@test "replace on raid5/raid6 writes the target only; its parity agrees with the kept stripes beside freed bytes" {
	# The target's part of each row is written, the other stripes stay:
	# where a row holds freed bytes beside data, the parity written must
	# be that of the bytes on disk, or a later rebuild of the data beside
	# them (another member gone) returns garbage.
	holey_fs raid5 raid1
	data_stripes_sum "$T/img1" 3 "$T/img3" >"$T/kept"
	run mfs replace start -B 2 "$T/img5" "$T/img1"
	assert_success
	replaced "$T/img1" "$T/img2" "$T/img5"
	# the kept stripes were not written (the bytes are the same)
	data_stripes_sum "$T/img1" 3 "$T/img3" | diff - "$T/kept"
	verify_offline "$T/img1"
	read_without "$T/img1"
	read_without "$T/img3"

	# the source missing: its column rebuilt from parity, freed bytes too
	holey_fs raid5 raid1
	mfs device scan -u "$T/img2"
	rm "$T/img2"
	mnt -o degraded "$T/img1"
	run mfs replace start -B 2 "$T/img5" "$T/mnt"
	assert_success
	verify_online
	umnt
	verify_offline "$T/img1"
	read_without "$T/img1"

	# raid6: then two other members gone
	holey_fs raid6 raid1c3
	run mfs replace start -B 3 "$T/img5" "$T/img1"
	assert_success
	verify_offline "$T/img1"
	read_without "$T/img1" "$T/img2"
}

# damaged_raid5 COPIES: images img1..img5, raid5 data and metadata on
# img1..img4 with populate's files (their sums in $T/want), then the
# copies corrupt_copies --copy COPIES names damaged on devid 2
damaged_raid5() {
	make_images 5 1G
	mkfs.mfs -q -f -d raid5 -m raid5 "$T/img1" "$T/img2" "$T/img3" "$T/img4"
	mnt "$T/img1"
	populate "$T/mnt"
	sums "$T/mnt" >"$T/want"
	umnt
	run corrupt_copies --copy "$1" "$T/img1" 2
	assert_success
}

@test "replace on raid5 copies a source with a clean record as it is: its damaged data is rebuilt, none passed on" {
	# the source's column is read alone; where its data or tree blocks
	# fail their checksums they are rebuilt from the others
	damaged_raid5 1
	assert_line --regexp '^damaged devid 2 data_sectors [1-9][0-9]* tree_blocks [1-9][0-9]*$'
	run mfs replace start -B 2 "$T/img5" "$T/img1"
	assert_success
	replaced "$T/img1" "$T/img2" "$T/img5"
	run mfs check --check-data-csum "$T/img1"
	assert_success
	verify_offline "$T/img1"
	# the target's parity agrees with the data beside it
	read_without "$T/img1"
	read_without "$T/img3"

	# bad parity no read ever met, on a source with no error on record:
	# copied as it is (md's replace does the same), for the next scrub
	damaged_raid5 p
	run mfs replace start -B 2 "$T/img5" "$T/img1"
	assert_success
	run mfs scrub start -B "$T/img1"
	assert_success
	assert_line --regexp '^Error summary: .*parity=[1-9]'
	run mfs scrub start -B "$T/img1"
	assert_success
	assert_line --regexp '^Error summary: +no errors found$'
	verify_offline "$T/img1"
}

@test "replace on raid5 of a source with errors on record: every row rebuilt, the target's parity computed anew" {
	# data and parity damaged on devid 2; reading every file meets the
	# bad data (rebuilt, healed, counted on devid 2), never the parity
	damaged_raid5 1,p
	mnt "$T/img1"
	verify_online
	umnt
	(($(dev_stat "$T/img1" 2 corruption_errs) > 0))
	run mfs replace start -B 2 "$T/img5" "$T/img1"
	assert_success
	replaced "$T/img1" "$T/img2" "$T/img5"
	# nothing bad was passed on: the parity was computed from the data
	run mfs scrub start -B -r "$T/img1"
	assert_success
	assert_line --regexp '^Error summary: +no errors found$'
	verify_offline "$T/img1"
	read_without "$T/img1"
}

@test "device delete on raid5 beside a fourth device moves the leaving column alone: its damaged data rebuilt" {
	# chunks on devids 1-3, a fourth device added after: the delete of
	# devid 2 keeps the stripes on 1 and 3 and copies 2's column to 4
	make_images 4 1G
	mkfs.mfs -q -f -d raid5 -m raid5 "$T/img1" "$T/img2" "$T/img3"
	mnt "$T/img1"
	populate "$T/mnt"
	sums "$T/mnt" >"$T/want"
	umnt
	mfs device add "$T/img4" "$T/img1"
	run corrupt_copies --copy 1 "$T/img1" 2
	assert_success
	assert_line --regexp '^damaged devid 2 data_sectors [1-9][0-9]* tree_blocks [1-9][0-9]*$'
	run mfs device delete 2 "$T/img1"
	assert_success
	run devids_in_chunks "$T/img1"
	assert_output "$(printf '1\n3\n4')"
	run mfs check --check-data-csum "$T/img1"
	assert_success
	verify_offline "$T/img1"
	read_without "$T/img1"
	read_without "$T/img3"
}
