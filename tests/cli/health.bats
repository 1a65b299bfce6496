#!/usr/bin/env bats
# Device health (DESIGN §6): each member's state in `filesystem show`
# (text and JSON), `filesystem show --check` and `device ready` failing
# when a member is missing or failing, `filesystem status` (state, the
# redundancy left per type and profile, exit 0/1/2), device error
# counters that survive a remount, and the failing threshold that keeps
# new chunks off a device that errs too often.

load helpers
load restripe

eval "helpers_$(declare -f teardown)"

teardown() {
	mfs_cleanup_mounts
	helpers_teardown
}

# raid1_fs N [MKFS_OPTS]: N images with raid1 data and metadata (or
# MKFS_OPTS) and a 3 MiB file f, written and unmounted; $T/sum its sha256.
raid1_fs() {
	make_images "$1"
	mkfs.mfs -q -f ${2:--d raid1 -m raid1} $(imgs "$1")
	head -c $((3 * MiB)) /dev/urandom >"$T/f"
	sha256sum <"$T/f" >"$T/sum"
	mfs_mount "$T/img1" "$T/mnt"
	cp "$T/f" "$T/mnt/f"
	mfs umount "$T/mnt"
}

# same_file MNT: f reads back as written
same_file() {
	[ "$(sha256sum <"$1/f")" = "$(cat "$T/sum")" ]
}

# json_states [ARGS]: "devid state" of each device of `filesystem show --format json ARGS`
json_states() {
	mfs --format json filesystem show "$@" | "$MFS_PY" -c '
import json, sys
for f in json.load(sys.stdin)["filesystems"]:
    for d in f["devices"]:
        print(d["devid"], d["state"])'
}

# status_json ARGS...: `filesystem status --format json ARGS`
status_json() {
	mfs --format json filesystem status "$@"
}

@test "filesystem show: every member ok, --check 0, JSON state ok; mounted and not" {
	raid1_fs 2
	run mfs filesystem show --check "$T/img1"
	assert_success
	assert_line --regexp $'^\tdevid    1 size 1\\.00GiB used [0-9.]+MiB path '"$T/img1\$"
	assert_line --regexp $'^\tdevid    2 size 1\\.00GiB used [0-9.]+MiB path '"$T/img2\$"
	run json_states "$T/img1"
	assert_output "1 ok
2 ok"
	run mfs device ready "$T/img1"
	assert_success
	mfs_mount "$T/img1" "$T/mnt"
	for arg in "$T/mnt" "$T/img2"; do
		run mfs filesystem show --check "$arg"
		assert_success
		refute_output --regexp 'MISSING|FAILING'
		run json_states "$arg"
		assert_output "1 ok
2 ok"
	done
	run mfs device ready "$T/img2"
	assert_success
}

@test "filesystem show: a missing member, unmounted and mounted degraded; --check and device ready fail" {
	raid1_fs 2
	mv "$T/img2" "$T/gone2"
	run --separate-stderr mfs filesystem show --check "$T/img1"
	assert_failure 1
	assert_stderr_line "warning, device 2 is missing"
	assert_line $'\t*** Some devices missing'
	run json_states "$T/img1"
	assert_output "1 ok
2 missing"
	# without --check a missing member does not change the exit status (btrfs)
	run mfs filesystem show "$T/img1"
	assert_success
	run mfs device ready "$T/img1"
	assert_failure 1

	mfs_mount -o degraded "$T/img1" "$T/mnt"
	run mfs filesystem show --check "$T/mnt"
	assert_failure 1
	assert_line $'\tdevid    2 size 0 used 0 path <missing disk> MISSING'
	assert_line --regexp $'^\tdevid    1 size 1\\.00GiB used [0-9.]+MiB path '"$T/img1\$"
	run json_states "$T/mnt"
	assert_output "1 ok
2 missing"
	# the member present asks the server, which misses devid 2
	run mfs device ready "$T/img1"
	assert_failure 1
}

@test "filesystem show: a device being deleted is DELETING, the status stays online" {
	make_images 3 256M
	mkfs.mfs -q -f -d raid0 -m raid1 $(imgs 3)
	mfs_mount "$T/img1" "$T/mnt"
	gen_file "$T/mnt/a" 40
	sums "$T/mnt" >"$T/want"
	hold_at 1
	mfs device delete --bg 3 "$T/mnt"
	wait_held
	run mfs filesystem show --check "$T/mnt"
	assert_success
	assert_line --regexp $'^\tdevid    3 size .* path '"$T/img3 DELETING\$"
	assert_line --regexp $'^\tdevid    1 size .* path '"$T/img1\$"
	run json_states "$T/mnt"
	assert_output "1 ok
2 ok
3 deleting"
	run status_json "$T/mnt"
	assert_success
	run mfs filesystem status "$T/mnt"
	assert_success
	assert_line --regexp $'^\tdevid    3 deleting +'"$T/img3\$"
	release
	wait_done "$T/mnt"
	verify_online
	run json_states "$T/mnt"
	assert_output "1 ok
2 ok"
}

@test "filesystem show: a replace's source is REPLACING, its target REPLACE-TARGET" {
	make_images 3 256M
	mkfs.mfs -q -f -d raid1 -m raid1 $(imgs 2)
	mfs_mount "$T/img1" "$T/mnt"
	gen_file "$T/mnt/a" 40
	sums "$T/mnt" >"$T/want"
	hold_at 1
	mfs replace start 2 "$T/img3" "$T/mnt"
	wait_held
	run mfs filesystem show "$T/mnt"
	assert_success
	assert_line --regexp $'^\tdevid    2 size .* path '"$T/img2 REPLACING\$"
	assert_line --regexp $'^\tdevid +[0-9]+ size .* path '"$T/img3 REPLACE-TARGET\$"
	run mfs filesystem show --check "$T/mnt"
	assert_success
	release
	wait_done "$T/mnt"
	verify_online
	run mfs filesystem show --check "$T/mnt"
	assert_success
	refute_output --regexp 'REPLAC'
	assert_line --regexp " path $T/img3\$"
	refute_line --regexp " path $T/img2\$"
}

@test "filesystem status: raid1 whole (0), one missing (1), raid0 one missing (2); text" {
	raid1_fs 2
	run mfs filesystem status "$T/img1"
	assert_success
	assert_line "State: online"
	assert_line "Devices: 2 of 2 present, 0 failing, 0 rebuilding"
	assert_line --regexp $'^\tdevid    1 ok +'"$T/img1\$"
	assert_line --regexp '^Type +Profile +Chunks +Full +Reduced +None +Lost$'
	assert_line --regexp '^Data +RAID1 +1 +3\.00MiB +0\.00B +0\.00B +0\.00B$'
	assert_line "Unreadable chunks: 0"
	# unit options: raw bytes
	run mfs filesystem status -b "$T/img1"
	assert_success
	assert_line --regexp "^Data +RAID1 +1 +$((3 * MiB)) +0 +0 +0\$"

	mv "$T/img2" "$T/gone2"
	fp=$(fingerprint "$T/img1")
	run mfs filesystem status "$T/img1"
	assert_failure 1
	assert_line "State: degraded"
	assert_line "Devices: 1 of 2 present, 0 failing, 0 rebuilding"
	assert_line $'\tdevid    2 missing        <missing disk>'
	# raid1 with a copy gone: no redundancy left, nothing lost
	assert_line --regexp '^Data +RAID1 +1 +0\.00B +0\.00B +3\.00MiB +0\.00B$'
	assert_line --regexp '^Metadata +RAID1 +1 +0\.00B +0\.00B +[1-9][0-9.]*KiB +0\.00B$'
	# read-only: the image is untouched
	assert_untouched "$T/img1" "$fp"
	# mounted degraded, the server says the same
	mfs_mount -o degraded "$T/img1" "$T/mnt"
	run mfs filesystem status "$T/mnt"
	assert_failure 1
	assert_line "State: degraded"
	mfs umount "$T/mnt"

	make_images 2
	mkfs.mfs -q -f -d raid0 -m raid1 $(imgs 2)
	mfs_mount "$T/img1" "$T/mnt"
	head -c $((4 * MiB)) /dev/urandom >"$T/mnt/f"
	mfs umount "$T/mnt"
	mv "$T/img2" "$T/gone2"
	run --separate-stderr mfs filesystem status "$T/img1"
	assert_failure 2
	assert_line "State: data lost"
	assert_line --regexp '^Data +RAID0 +1 +0\.00B +0\.00B +0\.00B +4\.00MiB$'
	assert_line "Unreadable chunks: 1"
}

@test "filesystem status: JSON fields; raid6 with one member missing is reduced, with two none" {
	make_images 4 512M
	mkfs.mfs -q -f -d raid6 -m raid1c3 $(imgs 4)
	mfs_mount "$T/img1" "$T/mnt"
	head -c $((4 * MiB)) /dev/urandom >"$T/mnt/f"
	mfs umount "$T/mnt"
	run --separate-stderr status_json "$T/img1"
	assert_success
	"$MFS_PY" -c '
import json, sys
d = json.load(sys.stdin)
assert d["__header"]["version"] == "1", d
s = d["filesystem-status"][0]
assert s["state"] == "online" and s["devices-total"] == 4 and s["devices-present"] == 4, s
assert s["devices-failing"] == 0 and s["devices-rebuilding"] == 0 and s["unreadable-chunks"] == 0, s
assert s["fail-threshold"] == 100, s
assert [(x["devid"], x["state"], x["path"]) for x in s["devices"]] == \
    [(i, "ok", "%s/img%d" % (sys.argv[1], i)) for i in range(1, 5)], s
data = [g for g in s["redundancy"] if g["bg-type"] == "Data"]
assert [g["bg-profile"] for g in data] == ["RAID6"], data
assert data[0]["full"] == 4 << 20 and data[0]["reduced"] == data[0]["none"] == data[0]["lost"] == 0, data
' "$T" <<<"$output"
	mv "$T/img4" "$T/gone4"
	run --separate-stderr status_json "$T/img1"
	assert_failure 1
	"$MFS_PY" <<<"$output" -c '
import json, sys
s = json.load(sys.stdin)["filesystem-status"][0]
assert s["state"] == "degraded" and s["devices-present"] == 3, s
assert [x["state"] for x in s["devices"]] == ["ok", "ok", "ok", "missing"], s
g = {(x["bg-type"], x["bg-profile"]): x for x in s["redundancy"]}
assert g[("Data", "RAID6")]["reduced"] == 4 << 20 and g[("Data", "RAID6")]["full"] == 0, g
# raid1c3 missing one: reduced (two copies left, one more loss survived)
assert g[("Metadata", "RAID1C3")]["reduced"] > 0 and g[("Metadata", "RAID1C3")]["none"] == 0, g
'
	mv "$T/img3" "$T/gone3"
	run --separate-stderr status_json "$T/img1"
	assert_failure 1
	"$MFS_PY" <<<"$output" -c '
import json, sys
s = json.load(sys.stdin)["filesystem-status"][0]
g = {(x["bg-type"], x["bg-profile"]): x for x in s["redundancy"]}
assert g[("Data", "RAID6")]["none"] == 4 << 20 and g[("Data", "RAID6")]["lost"] == 0, g
# each raid1c3 chunk spans three of the four devices: one copy lost, one to spare
m = g[("Metadata", "RAID1C3")]
assert m["reduced"] > 0 and m["full"] == m["none"] == m["lost"] == 0, g
'
}

@test "filesystem status: chunks written degraded below the profile count as reduced" {
	write_degraded 2 2 -d raid1 -m raid1
	mfs umount "$T/mnt"
	mv "$T/gone2" "$T/img2"
	# back, but behind: rebuilding until a mount catches it up
	run mfs filesystem status "$T/img1"
	assert_failure 1
	assert_line "Devices: 2 of 2 present, 0 failing, 1 rebuilding"
	assert_line --regexp $'^\tdevid    2 rebuilding +'"$T/img2\$"
	run json_states "$T/img1"
	assert_output "1 ok
2 rebuilding"
	# skip_balance: the mount converts no reduced chunk back by itself
	mfs_mount -o skip_balance "$T/img1" "$T/mnt"
	mfs umount "$T/mnt"
	# whole again, but the DUP chunk written while degraded is below RAID1
	run mfs filesystem status "$T/img1"
	assert_failure 1
	assert_line "State: degraded"
	assert_line "Devices: 2 of 2 present, 0 failing, 0 rebuilding"
	assert_line --regexp '^Data +DUP +1 +0\.00B +8\.00MiB +0\.00B +0\.00B$'
}

@test "filesystem status: refusals" {
	run --separate-stderr mfs filesystem status
	assert_failure 1
	assert_stderr_line "mfs filesystem status: not enough arguments: 0 but at least 1 expected"
	echo hello >"$T/plain"
	run --separate-stderr mfs filesystem status "$T/plain"
	assert_failure 3
	assert_stderr_regex "^ERROR: "
	mkdir "$T/dir"
	run --separate-stderr mfs filesystem status "$T/dir"
	assert_failure 3
	assert_stderr_line "ERROR: '$T/dir' is not a mounted mfs filesystem"
}

# damage_copy DEVID: damage the device's copy of f's data: reads through it
# (read_policy=devid:DEVID) meet 768 bad sectors
damage_copy() {
	run corrupt_copies --what data "$T/img1" "$1"
	assert_success
	assert_line --regexp "^damaged devid $1 data_sectors 768 "
}

@test "device stats: counters survive a remount; -c is 64; -z resets, and the reset survives a remount" {
	raid1_fs 2
	damage_copy 1
	mfs_mount -o read_policy=devid:1,fail_threshold=0 "$T/img1" "$T/mnt"
	same_file "$T/mnt"
	run mfs device stats -c "$T/mnt"
	assert_failure 64
	assert_line "[$T/img1].corruption_errs  768"
	assert_line "[$T/img2].corruption_errs  0"
	mfs umount "$T/mnt"
	# the next mount reads them back from the device tree
	mfs_mount "$T/img1" "$T/mnt"
	run mfs device stats -c "$T/mnt"
	assert_failure 64
	assert_line "[$T/img1].corruption_errs  768"
	assert_line "[$T/img1].read_io_errs     0"
	# the counters of a past mount do not make a device failing
	run mfs filesystem show --check "$T/mnt"
	assert_success
	run mfs device stats -z "$T/mnt"
	assert_success
	assert_line "[$T/img1].corruption_errs  768"
	run mfs device stats -c "$T/mnt"
	assert_success
	mfs umount "$T/mnt"
	mfs_mount "$T/img1" "$T/mnt"
	run mfs device stats -c "$T/mnt"
	assert_success
	assert_line "[$T/img1].corruption_errs  0"
}

@test "failing threshold: past fail_threshold errors a device is FAILING; new chunks avoid it" {
	# three devices: system and metadata on 1 and 2, data on 2 and 3
	raid1_fs 3
	damage_copy 2
	mfs_mount -o read_policy=devid:2,fail_threshold=10 "$T/img1" "$T/mnt"
	run mfs filesystem show --check "$T/mnt"
	assert_success
	same_file "$T/mnt"
	run mfs filesystem show --check "$T/mnt"
	assert_failure 1
	assert_line --regexp $'^\tdevid    2 size .* path '"$T/img2 FAILING\$"
	assert_line --regexp $'^\tdevid    1 size .* path '"$T/img1\$"
	run json_states "$T/mnt"
	assert_output "1 ok
2 failing
3 ok"
	run mfs device ready "$T/img1"
	assert_failure 1
	run --separate-stderr status_json "$T/mnt"
	assert_failure 1
	"$MFS_PY" <<<"$output" -c '
import json, sys
s = json.load(sys.stdin)["filesystem-status"][0]
assert s["state"] == "degraded" and s["devices-failing"] == 1 and s["fail-threshold"] == 10, s
d = s["devices"][1]
assert d["devid"] == 2 and d["state"] == "failing" and d["mount-errors"] == 768, s
'
	# every chunk moves to new ones: none of them on the failing device
	mfs balance start --full-balance "$T/mnt" >/dev/null
	same_file "$T/mnt"
	mfs umount "$T/mnt"
	run chunk_layout "$T/img1"
	assert_success
	refute_output --regexp ' 2:[0-9]+'
	assert_output --regexp ' 1:[0-9]+'
	assert_output --regexp ' 3:[0-9]+'
	# a new mount starts counting again
	mfs_mount "$T/img1" "$T/mnt"
	run mfs filesystem show --check "$T/mnt"
	assert_success
}

@test "failing threshold: raid1 on two devices, one failing: new data goes to reduced chunks on the other" {
	make_images 2 256M
	mkfs.mfs -q -f -d raid1 -m raid1 $(imgs 2)
	head -c $((3 * MiB)) /dev/urandom >"$T/f"
	sha256sum <"$T/f" >"$T/sum"
	mfs_mount "$T/img1" "$T/mnt"
	cp "$T/f" "$T/mnt/f"
	mfs umount "$T/mnt"
	damage_copy 1
	mfs_mount -o read_policy=devid:1,fail_threshold=5 "$T/img1" "$T/mnt"
	same_file "$T/mnt"
	run json_states "$T/mnt"
	assert_output "1 failing
2 ok"
	# more than the RAID1 data chunk has left: a new chunk is needed, and
	# RAID1 no longer fits without the failing device
	head -c $((60 * MiB)) /dev/urandom >"$T/g"
	cp "$T/g" "$T/mnt/g"
	cmp "$T/g" "$T/mnt/g"
	run --separate-stderr status_json "$T/mnt"
	assert_failure 1
	"$MFS_PY" <<<"$output" -c '
import json, sys
s = json.load(sys.stdin)["filesystem-status"][0]
g = {(x["bg-type"], x["bg-profile"]): x for x in s["redundancy"]}
assert g[("Data", "DUP")]["reduced"] > 0 and g[("Data", "DUP")]["full"] == 0, g
'
	mfs umount "$T/mnt"
	run chunk_layout "$T/img1"
	assert_output --regexp 'Data\|DUP'
	refute_output --regexp 'Data\|DUP[^ ]* .*1:[0-9]+'
	mfs_mount "$T/img1" "$T/mnt"
	same_file "$T/mnt"
	cmp "$T/g" "$T/mnt/g"
}

@test "failing threshold: the default is 100 errors; 0 never marks a device failing" {
	raid1_fs 2
	damage_copy 1
	mfs_mount -o read_policy=devid:1,fail_threshold=0 "$T/img1" "$T/mnt"
	same_file "$T/mnt"
	run json_states "$T/mnt"
	assert_output "1 ok
2 ok"
	mfs umount "$T/mnt"
	damage_copy 1
	mfs_mount -o read_policy=devid:1 "$T/img1" "$T/mnt"
	same_file "$T/mnt"
	run json_states "$T/mnt"
	assert_output "1 failing
2 ok"
	run --separate-stderr status_json "$T/mnt"
	assert_failure 1
	"$MFS_PY" <<<"$output" -c '
import json, sys
s = json.load(sys.stdin)["filesystem-status"][0]
assert s["fail-threshold"] == 100 and s["devices"][0]["mount-errors"] == 768, s
'
}

@test "failing threshold: bad values are refused before anything is written" {
	raid1_fs 2
	fp=$(fingerprint "$T/img1")
	for v in abc -1 "" 10x; do
		run --separate-stderr mfs mount -o "fail_threshold=$v" "$T/img1" "$T/mnt" 3>&-
		assert_failure
		assert_stderr_line "ERROR: invalid fail_threshold '$v' (a number of errors; 0: never)"
		run is_mounted "$T/mnt"
		assert_failure
	done
	assert_untouched "$T/img1" "$fp"
}
