#!/usr/bin/env bats
# mfs filesystem show / label

load helpers

UUID_RE='[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'

# two filesystems: "alpha" on img1+img2 (metadata RAID1), unlabelled on img3
make_two_fs() {
	make_images 3
	mkfs.mfs -q -L alpha "$T/img1" "$T/img2"
	mkfs.mfs -q "$T/img3"
	A=$(fs_uuid "$T/img1")
	B=$(fs_uuid "$T/img3")
}

@test "filesystem show: no argument lists every registered filesystem" {
	make_two_fs
	run --separate-stderr mfs filesystem show
	assert_success
	assert_line "Label: 'alpha'  uuid: $A"
	assert_line "Label: none  uuid: $B"
	assert_line --regexp $'^\tdevid    1 size 1.00GiB used [0-9.]+MiB path '"$T/img1\$"
	assert_line --regexp $'^\tdevid    2 size 1.00GiB used [0-9.]+MiB path '"$T/img2\$"
	assert_line --regexp $'^\tdevid    1 size 1.00GiB used [0-9.]+MiB path '"$T/img3\$"
	# neither is missing a member (the scan also lists the filesystems other
	# tests running beside this one have on loop devices, whose warnings may
	# be on stderr: only these two entries are judged)
	shown=$output
	for u in "$A" "$B"; do
		awk -v u="uuid: $u" '/^Label:/ { p = index($0, u) > 0 } p' <<<"$shown" >"$T/entry"
		[ -s "$T/entry" ]
		run grep -i missing "$T/entry"
		assert_failure
	done
	# one "Label:" header per filesystem, not per device
	[ "$(grep -c "uuid: $A\$" <<<"$shown")" -eq 1 ]
	[ "$(grep -c "uuid: $B\$" <<<"$shown")" -eq 1 ]
}

@test "filesystem show: layout of the text output" {
	make_two_fs
	mfs filesystem show "$T/img1" >"$T/out"
	run cat "$T/out"
	assert_line --index 0 "Label: 'alpha'  uuid: $A"
	assert_line --index 1 --regexp $'^\tTotal devices 2 FS bytes used [0-9]+\\.[0-9]{2}KiB$'
	assert_line --index 2 --regexp $'^\tdevid    1 size 1\\.00GiB used [0-9]+\\.[0-9]{2}MiB path '"$T/img1\$"
	assert_line --index 3 --regexp $'^\tdevid    2 size 1\\.00GiB used [0-9]+\\.[0-9]{2}MiB path '"$T/img2\$"
	# exactly those four lines and a blank line after the entry
	[ "$(wc -l <"$T/out")" -eq 5 ]
	[ -z "$(tail -n 1 "$T/out")" ]
	# FS bytes used is the superblock's bytes_used; used per device from the dev items
	run mfs filesystem show --raw "$T/img1"
	assert_line --index 1 $'\tTotal devices 2 FS bytes used '"$(super_field "$T/img1" bytes_used)"
	assert_line --index 2 $'\tdevid    1 size 1073741824 used '"$(super_field "$T/img1" dev_item.bytes_used) path $T/img1"
	assert_line --index 3 $'\tdevid    2 size 1073741824 used '"$(super_field "$T/img2" dev_item.bytes_used) path $T/img2"
	run mfs filesystem show "$T/img3"
	assert_line --index 0 "Label: none  uuid: $B"
}

@test "filesystem show: select by path, uuid, label and member device" {
	make_two_fs
	for arg in "$T/img1" "$A" alpha "$T/img2"; do
		run --separate-stderr mfs filesystem show "$arg"
		assert_success
		assert_line "Label: 'alpha'  uuid: $A"
		refute_line --partial "$B"
		refute_line --partial "$T/img3"
		[ "$(count_lines '^Label:')" -eq 1 ]
	done
	for arg in "$T/img3" "$B"; do
		run --separate-stderr mfs filesystem show "$arg"
		assert_success
		assert_line "Label: none  uuid: $B"
		refute_line --partial "$A"
	done
	# a relative path and the abbreviated command
	run --separate-stderr mfs fi sh img2
	assert_success
	assert_line "Label: 'alpha'  uuid: $A"
}

@test "filesystem show: unit options" {
	make_images 1
	mkfs.mfs -q "$T/img1"
	run mfs filesystem show --raw "$T/img1"
	assert_success
	assert_line --regexp $'^\tTotal devices 1 FS bytes used [0-9]+$'
	assert_line --regexp $'^\tdevid    1 size 1073741824 used [0-9]+ path '
	run mfs filesystem show --si "$T/img1"
	assert_line --regexp $'^\tdevid    1 size 1\\.07GB used [0-9.]+MB path '
	assert_line --regexp 'FS bytes used [0-9.]+kB$'
	run mfs filesystem show --kbytes "$T/img1"
	assert_line --regexp $'^\tdevid    1 size 1048576\\.00KiB used [0-9.]+KiB path '
	run mfs filesystem show --mbytes "$T/img1"
	assert_line --regexp $'^\tdevid    1 size 1024\\.00MiB used [0-9.]+MiB path '
	run mfs filesystem show --gbytes "$T/img1"
	assert_line --regexp $'^\tdevid    1 size 1\\.00GiB used 0\\.[0-9]{2}GiB path '
	run mfs filesystem show --tbytes "$T/img1"
	assert_line --regexp $'^\tdevid    1 size 0\\.00TiB used 0\\.00TiB path '
	run mfs filesystem show --si --kbytes "$T/img1"
	assert_line --regexp $'^\tdevid    1 size 1073741\\.82kB used [0-9.]+kB path '
	run mfs filesystem show --kbytes --iec "$T/img1"
	assert_line --regexp $'^\tdevid    1 size 1048576\\.00KiB used '
	# the last one wins
	run mfs filesystem show --raw --human-readable "$T/img1"
	assert_line --regexp $'^\tdevid    1 size 1\\.00GiB used [0-9.]+MiB path '
	run mfs filesystem show --mbytes --raw "$T/img1"
	assert_line --regexp $'^\tdevid    1 size 1073741824 used [0-9]+ path '
	# filesystem show has only the long forms: -m is not --mbytes
	run mfs filesystem show -k "$T/img1"
	assert_failure 1
	refute_line --partial "devid"
}

@test "filesystem show: --format json is valid JSON with the right devices" {
	make_two_fs
	for cmd in "mfs --format json filesystem show $T/img1" "mfs filesystem show --format json $T/img1" \
		"mfs filesystem show --format=json alpha"; do
		run --separate-stderr $cmd
		assert_success
		python3 -m json.tool <<<"$output" >/dev/null
		run python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["__header"]["version"] == "1", d
fs = d["filesystems"]
assert len(fs) == 1, fs
f = fs[0]
assert f["label"] == "alpha" and f["uuid"] == sys.argv[1], f
assert f["total_devices"] == 2 and f["missing_devices"] == 0, f
assert [x["devid"] for x in f["devices"]] == [1, 2], f
assert [x["path"] for x in f["devices"]] == [sys.argv[2] + "/img1", sys.argv[2] + "/img2"], f
assert all(x["size"] == 1073741824 and x["used"] > 0 and not x["missing"] for x in f["devices"]), f
assert isinstance(f["bytes_used"], int) and f["bytes_used"] > 0
print("ok")
' "$A" "$T" <<<"$output"
		assert_success
		assert_output ok
	done
	# no argument: both filesystems
	run --separate-stderr mfs --format json filesystem show
	assert_success
	run python3 -c '
import json, sys
d = json.load(sys.stdin)
u = sorted(f["uuid"] for f in d["filesystems"])
assert sorted([sys.argv[1], sys.argv[2]]) == [x for x in u if x in sys.argv[1:]], u
print(len([x for x in u if x in sys.argv[1:]]))
' "$A" "$B" <<<"$output"
	assert_success
	assert_output 2
}

@test "filesystem show: a missing member is reported, exit 0" {
	make_images 3
	mkfs.mfs -q -L trio $(imgs 3)
	u=$(fs_uuid "$T/img1")
	mv "$T/img2" "$T/elsewhere"
	run --separate-stderr mfs filesystem show "$T/img1"
	assert_success
	assert_stderr_line "warning, device 2 is missing"
	assert_line --index 0 "Label: 'trio'  uuid: $u"
	assert_line --index 1 --regexp $'^\tTotal devices 3 FS bytes used '
	assert_line --index 2 --regexp $'^\tdevid    1 size 1\\.00GiB used .* path '"$T/img1\$"
	assert_line --index 3 --regexp $'^\tdevid    3 size 1\\.00GiB used .* path '"$T/img3\$"
	assert_line --index 4 $'\t*** Some devices missing'
	refute_line --partial "devid    2"
	run --separate-stderr mfs --format json filesystem show trio
	assert_success
	run python3 -c '
import json, sys
f = json.load(sys.stdin)["filesystems"][0]
assert f["total_devices"] == 3 and f["missing_devices"] == 1, f
m = [x["devid"] for x in f["devices"] if x["missing"]]
assert m == [2], f
print("ok")' <<<"$output"
	assert_output ok
	# the no-argument listing too
	run --separate-stderr mfs filesystem show
	assert_success
	assert_stderr_line "warning, device 2 is missing"
	assert_line $'\t*** Some devices missing'
}

@test "filesystem show: devices named by relative paths are shown by absolute ones" {
	make_images 2
	cd "$T"
	mkfs.mfs -q -f img1
	run --separate-stderr mfs filesystem show img1
	assert_success
	assert_line --regexp $'^\tdevid    1 size .* path '"$T/img1\$"
	mkdir -p mnt
	mfs mount img1 mnt
	echo "$T/mnt" >>"$T/.mounts"
	mfs device add -f img2 mnt
	run --separate-stderr mfs filesystem show mnt
	assert_success
	assert_line --regexp $'^\tdevid    1 size .* path '"$T/img1\$"
	assert_line --regexp $'^\tdevid    2 size .* path '"$T/img2\$"
	mfs umount mnt
}

@test "filesystem show: an argument that matches nothing is an error" {
	make_two_fs
	truncate -s 1G "$T/plain"
	for arg in bogus "$T/plain" "$T/nope" 01234567-89ab-cdef-0123-456789abcdef; do
		run --separate-stderr mfs filesystem show "$arg"
		assert_failure 1
		assert_stderr_line "ERROR: not a valid mfs filesystem: $arg"
		assert_stdout_empty
	done
	run mfs filesystem show "$T/img1" "$T/img3"
	assert_failure 1
	assert_output "mfs filesystem show: too many arguments: 2 but at most 1 expected"
}

@test "filesystem show: loop devices are found without registering them" {
	make_images 2
	l1=$(make_loop "$T/img1")
	l2=$(make_loop "$T/img2")
	mkfs.mfs -q -L onloops "$l1" "$l2"
	u=$(fs_uuid "$l1")
	rm -f "$MFS_REGISTRY"
	for arg in "$l2" "$u" onloops; do
		run --separate-stderr mfs filesystem show "$arg"
		assert_success
		assert_line "Label: 'onloops'  uuid: $u"
		assert_line --regexp $'^\tdevid    1 size 1\\.00GiB used .* path '"$l1\$"
		assert_line --regexp $'^\tdevid    2 size 1\\.00GiB used .* path '"$l2\$"
		refute_line --partial "missing"
	done
	run --separate-stderr mfs filesystem show
	assert_success
	assert_line "Label: 'onloops'  uuid: $u"
	[ ! -e "$MFS_REGISTRY" ]
}

@test "filesystem label: print, set on any member, clean afterwards" {
	make_images 2
	mkfs.mfs -q $(imgs 2)
	run --separate-stderr mfs filesystem label "$T/img1"
	assert_success
	assert_output ""
	[ "${#lines[@]}" -eq 0 ]
	# an empty label is printed as an empty line
	[ "$(mfs filesystem label "$T/img1" | od -An -c | tr -d ' ')" = '\n' ]

	run --separate-stderr mfs filesystem label "$T/img2" "new label"
	assert_success
	assert_stdout_empty
	for i in 1 2; do
		run mfs filesystem label "$T/img$i"
		assert_output "new label"
		[ "$(super_field "$T/img$i" label)" = "new label" ]
	done
	run mfs filesystem show "new label"
	assert_success
	assert_line --regexp "^Label: 'new label'  uuid: $UUID_RE\$"
	run mfs check "$T/img1"
	assert_success
	assert_line --partial "no error found"

	# a trailing newline is dropped
	mfs filesystem label "$T/img1" $'with newline\n'
	run mfs filesystem label "$T/img2"
	assert_output "with newline"
	# clearing
	mfs filesystem label "$T/img1" ""
	run mfs filesystem label "$T/img1"
	assert_output ""
	run mfs filesystem show "$T/img1"
	assert_line --regexp "^Label: none  uuid: "
}

@test "filesystem label: too long or with a newline is refused and the label is kept" {
	make_images 1
	mkfs.mfs -q -L keep "$T/img1"
	long=$(printf 'y%.0s' $(seq 256))
	gen=$(super_field "$T/img1" generation)
	run mfs filesystem label "$T/img1" "$long"
	assert_failure 1
	assert_output "ERROR: label $long is too long (max 255)"
	run mfs filesystem label "$T/img1" $'two\nlines'
	assert_failure 1
	assert_output "ERROR: label must not contain a newline"
	run mfs filesystem label "$T/img1"
	assert_output keep
	[ "$(super_field "$T/img1" generation)" = "$gen" ]
	# 255 bytes is the maximum
	run mfs filesystem label "$T/img1" "${long:1}"
	assert_success
	run mfs filesystem label "$T/img1"
	assert_output "${long:1}"
}

@test "filesystem label: refused on a non-mfs file, a missing path, bad argument counts" {
	truncate -s 1G "$T/plain"
	seed_image "$T/plain"
	fp=$(fingerprint "$T/plain")
	run mfs filesystem label "$T/plain"
	assert_failure 1
	assert_output "ERROR: not a valid mfs filesystem: $T/plain"
	run mfs filesystem label "$T/plain" newlabel
	assert_failure 1
	assert_output "ERROR: not a valid mfs filesystem: $T/plain"
	assert_untouched "$T/plain" "$fp"
	run mfs filesystem label "$T/nope" x
	assert_failure 1
	assert_output "ERROR: cannot access '$T/nope': No such file or directory"
	run mfs filesystem label
	assert_failure 1
	assert_output "mfs filesystem label: not enough arguments: 0 but at least 1 expected"
	run mfs filesystem label a b c
	assert_failure 1
	assert_output "mfs filesystem label: too many arguments: 3 but at most 2 expected"
}

@test "filesystem label: setting needs every member; printing does not" {
	make_images 2
	mkfs.mfs -q -L both $(imgs 2)
	mv "$T/img2" "$T/away"
	run --separate-stderr mfs filesystem label "$T/img1" changed
	assert_failure 1
	assert_stderr_line "ERROR: device 2 is missing; found the other members but not this one"
	run mfs filesystem label "$T/img1"
	assert_success
	assert_output both
	mv "$T/away" "$T/img2"
	[ "$(super_field "$T/img2" label)" = both ]
}

@test "filesystem label: refused while another program holds the image" {
	make_images 1
	mkfs.mfs -q -L before "$T/img1"
	hold_flock "$T/img1"
	run mfs filesystem label "$T/img1" after
	assert_failure 1
	assert_output "ERROR: $T/img1 is mounted or in use by another program"
	run mfs filesystem label "$T/img1"
	assert_output before
}
