#!/usr/bin/env bats
# Degraded operation (DESIGN §6): with members missing, -o degraded mounts
# read-write when every chunk can still be read, writes never go into a
# chunk with a missing stripe (new chunks on the present devices, marked
# reduced when the profile had to give way), and the members that come
# back are caught up: nothing stale is ever served.

load helpers

eval "helpers_$(declare -f teardown)"

teardown() {
	mfs_cleanup_mounts
	helpers_teardown
}

# write_files MNT TAG: three files of random data, their sha256 taken from
# the source before they are written, added to $T/want.
write_files() {
	local mnt=$1 tag=$2 i

	mkdir -p "$T/src"
	for i in 1 2 3; do
		head -c $((i * 3 * MiB + i * 4097)) /dev/urandom >"$T/src/$tag-$i"
		(cd "$T/src" && sha256sum "$tag-$i") >>"$T/want"
		cp "$T/src/$tag-$i" "$mnt/$tag-$i"
	done
}

# verify_files MNT: every file of $T/want reads back as written.
verify_files() {
	(cd "$1" && sha256sum -c --quiet "$T/want")
}

# verify_unlocked MNT: verify_files, with every read served as reads are
# when nothing is wrong: without the lock (the hook "read-locked" is
# armed). Reading again under the lock also mends a rebuild gone wrong,
# so that what goes there passes, slowly, and hides it.
verify_unlocked() {
	local pid rc=0

	echo 1 >"$T/hold-relock"
	verify_files "$1" &
	pid=$!
	# a read held there cannot finish: no race with its end
	while kill -0 "$pid" 2>/dev/null && [ ! -e "$T/hold-relock.held" ]; do
		sleep 0.1
	done
	if [ -e "$T/hold-relock.held" ]; then
		rm -f "$T/hold-relock.held"
		wait "$pid" || :
		echo "a read fell back to reading under the lock"
		return 1
	fi
	wait "$pid" || rc=$?
	rm -f "$T/hold-relock"
	return "$rc"
}

# generation IMG: the superblock generation of an image.
generation() {
	mfs inspect-internal dump-super "$1" | awk '$1 == "generation" { print $2 }'
}

# new_extents GEN IMG...: every extent allocated after GEN, a line each:
# "EXTENT GEN CHUNK TYPE DEVIDS" with the chunk holding it, its type
# (Data|RAID1) and the devids of its stripes (comma separated).
new_extents() {
	local gen=$1
	shift
	mfs inspect-internal dump-tree -t chunk "$@" >"$T/chunks" 2>/dev/null
	mfs inspect-internal dump-tree -t extent "$@" >"$T/extents" 2>/dev/null
	"$MFS_PY" - "$gen" "$T/chunks" "$T/extents" <<'PY'
import re, sys
gen = int(sys.argv[1])
chunks, cur = [], None
for line in open(sys.argv[2]):
    m = re.search(r"key \(FIRST_CHUNK_TREE CHUNK_ITEM (\d+)\)", line)
    if m:
        cur = [int(m.group(1)), 0, "?", set()]
        chunks.append(cur)
        continue
    m = re.search(r"^\s+length (\d+) owner .* type (\S+)", line)
    if m and cur:
        cur[1], cur[2] = int(m.group(1)), m.group(2)
    m = re.search(r"stripe \d+ devid (\d+) offset", line)
    if m and cur:
        cur[3].add(int(m.group(1)))
key = None
for line in open(sys.argv[3]):
    m = re.search(r"key \((\d+) EXTENT_ITEM (\d+)\)", line)
    if m:
        key = int(m.group(1))
        continue
    m = re.search(r"refs \d+ gen (\d+)", line)
    if m and key is not None:
        if int(m.group(1)) > gen:
            held = [c for c in chunks if c[0] <= key < c[0] + c[1]]
            start, _, typ, devs = held[0] if held else (0, 0, "none", set())
            print(key, m.group(1), start, typ, ",".join(map(str, sorted(devs))) or "-")
        key = None
PY
}

# new_extents_off_missing GEN DEVIDS IMG...: no extent allocated after GEN
# lies in a chunk with a stripe on one of DEVIDS (comma separated); prints
# how many extents were allocated after GEN, and fails on the first one
# that went into such a chunk.
new_extents_off_missing() {
	local gen=$1 devids=$2 key egen chunk typ devs n=0
	shift 2
	new_extents "$gen" "$@" >"$T/new" || return 1
	while read -r key egen chunk typ devs; do
		n=$((n + 1))
		if grep -qxF -f <(tr , '\n' <<<"$devids") <(tr , '\n' <<<"$devs"); then
			echo "extent $key (gen $egen) lies in chunk $chunk, which has a stripe on missing device(s) of $devids ($devs)"
			return 1
		fi
	done <"$T/new"
	echo "$n"
}

# new_extents_profiles GEN IMG...: the types (e.g. Data|RAID1) of the
# chunks holding extents allocated after GEN, one a line.
new_extents_profiles() {
	new_extents "$@" | awk '{ print $4 }' | sort -u
}

# degraded_cycle N MKFS_OPTS MISSING...: N images made with MKFS_OPTS, files
# written, the devices MISSING (numbers) taken away; a plain mount is
# refused, -o degraded mounts read-write, new files go only into chunks on
# the devices present; umount, mount degraded again, all verifies; with the
# devices back a plain mount serves everything right and check is clean.
degraded_cycle() {
	local n=$1 opts=$2 d gen new present=() devids
	shift 2
	make_images "$n"
	mkfs.mfs -q -f $opts $(imgs "$n")
	mfs_mount "$T/img1" "$T/mnt"
	write_files "$T/mnt" before
	mfs umount "$T/mnt"
	for d in "$@"; do
		mv "$T/img$d" "$T/gone$d"
	done
	devids=$(IFS=,; echo "$*")
	for ((d = 1; d <= n; d++)); do
		[ -e "$T/img$d" ] && present+=("$T/img$d")
	done

	# plain: refused, naming a missing device and the way on
	run --separate-stderr mfs mount "${present[0]}" "$T/mnt" 3>&-
	assert_failure
	assert_stderr_regex "^ERROR: device ($(IFS='|'; echo "$*")) is missing"
	assert_stderr_regex "use -o degraded"
	run is_mounted "$T/mnt"
	assert_failure

	gen=$(generation "${present[0]}")
	run --separate-stderr mfs_mount -o degraded "${present[0]}" "$T/mnt"
	assert_success
	write_files "$T/mnt" degraded
	verify_files "$T/mnt"
	mfs umount "$T/mnt"

	# what was written went to chunks wholly on the devices present
	run new_extents_off_missing "$gen" "$devids" "${present[@]}"
	assert_success
	((output > 0))

	# again degraded: everything there (rebuilt without falling back), and writable
	mfs_mount -o degraded "${present[0]}" "$T/mnt"
	run verify_unlocked "$T/mnt"
	assert_success
	write_files "$T/mnt" again
	verify_files "$T/mnt"
	mfs umount "$T/mnt"
	run new_extents_off_missing "$gen" "$devids" "${present[@]}"
	assert_success

	# the devices come back (older generation): caught up, nothing stale
	for d in "$@"; do
		mv "$T/gone$d" "$T/img$d"
	done
	mfs_mount "$T/img1" "$T/mnt"
	verify_files "$T/mnt"
	# the chunks written reduced go back to their profile in the background
	wait_until 300 balance_done "$T/mnt"
	mfs umount "$T/mnt"
	run mfs check --check-data-csum $(imgs "$n")
	assert_success
	assert_output --partial "no error found"
	# every member is current: the next mount has nothing to catch up
	run --separate-stderr mfs_mount "$T/img1" "$T/mnt"
	assert_success
	[[ "$stderr" != *behind* ]]
	verify_files "$T/mnt"
	mfs umount "$T/mnt"
}

@test "raid1, one of two devices missing: degraded read-write, reduced chunks, the device returns" {
	degraded_cycle 2 "-d raid1 -m raid1" 2
	# the new chunks were reduced (one device left; the next test shows
	# them); the mount the device returned at converted them back to RAID1
	run mfs inspect-internal dump-tree -t extent $(imgs 2)
	refute_output --partial "REDUCED"
	refute_output --partial "Data|DUP"
	assert_output --partial "Data|RAID1"
}

@test "raid1 whole again: new data goes to new RAID1 chunks, not to the reduced ones" {
	make_images 2
	mkfs.mfs -q -f -d raid1 -m raid1 $(imgs 2)
	mv "$T/img2" "$T/gone2"
	mfs_mount -o degraded "$T/img1" "$T/mnt"
	write_files "$T/mnt" degraded
	mfs umount "$T/mnt"
	mv "$T/gone2" "$T/img2"
	run mfs inspect-internal dump-tree -t extent $(imgs 2)
	assert_output --partial "Data|DUP|REDUCED"
	gen=$(generation "$T/img1")
	# skip_balance: the reduced chunk stays for this test (a plain mount
	# converts it back to RAID1 in the background)
	mfs_mount -o skip_balance "$T/img1" "$T/mnt"
	# more than the RAID1 data chunks hold: the rest needs a new chunk,
	# which must be RAID1 although the reduced DUP chunk has room
	free=$(mfs --format json filesystem df "$T/mnt" | "$MFS_PY" -c '
import json, sys
print(sum(l["total"] - l["used"] for l in json.load(sys.stdin)["filesystem-df"]
          if l["bg-type"] == "Data" and l["bg-profile"] == "RAID1" and not l.get("reduced")))')
	n=$(( free / (4 * MiB) + 6 ))
	for ((i = 0; i < n; i++)); do
		head -c $((4 * MiB)) /dev/urandom >"$T/src-whole-$i"
		(cd "$T" && sha256sum "src-whole-$i") | sed "s|src-whole-$i|whole-$i|" >>"$T/want"
		cp "$T/src-whole-$i" "$T/mnt/whole-$i"
		rm "$T/src-whole-$i"
	done
	verify_files "$T/mnt"
	mfs umount "$T/mnt"
	run new_extents_profiles "$gen" $(imgs 2)
	assert_success
	assert_line "Data|RAID1"
	refute_line --partial "DUP"
}

@test "raid1c3, two of three devices missing" {
	degraded_cycle 3 "-d raid1c3 -m raid1c3" 2 3
}

@test "raid5, one of three devices missing: new chunks stay raid5 on the two left" {
	degraded_cycle 3 "-d raid5 -m raid1" 3
	run mfs inspect-internal dump-tree -t extent $(imgs 3)
	refute_output --partial "Data|RAID5|REDUCED"
}

@test "raid6, two of four devices missing" {
	degraded_cycle 4 "-d raid6 -m raid1c3" 3 4
}

@test "dup metadata and raid1 data, the device without a dup chunk missing" {
	# system DUP on device 1, metadata DUP on 2, data RAID1 on 3 and 1
	degraded_cycle 3 "-d raid1 -m dup" 3
}

@test "df shows chunks reduced while degraded, text and JSON" {
	write_degraded 2 2 -d raid1 -m raid1
	run mfs filesystem df "$T/mnt"
	assert_success
	assert_line --regexp "^Data, DUP: total=.*, used=.* \(reduced: written degraded, the filesystem asks for RAID1\)$"
	assert_line --regexp "^Data, RAID1: total=.*, used=[^(]*$"
	run mfs --format json filesystem df "$T/mnt"
	assert_success
	"$MFS_PY" -c '
import json, sys
lines = json.load(sys.stdin)["filesystem-df"]
red = [l for l in lines if l.get("reduced")]
assert red and all(l["bg-profile"] == "DUP" and l["requested-profile"] == "RAID1" for l in red), lines
' <<<"$output"
	mfs umount "$T/mnt"
}

@test "raid1c3 with one of three devices missing: new chunks are RAID1 mirrors, not RAID5" {
	write_degraded 3 3 -d raid1c3 -m raid1c3
	run mfs --format json filesystem df "$T/mnt"
	assert_success
	# two devices survive one loss as RAID1 or RAID5 alike; a mirror keeps
	# the kind of redundancy asked for (and metadata off parity)
	"$MFS_PY" -c '
import json, sys
lines = json.load(sys.stdin)["filesystem-df"]
red = [l for l in lines if l.get("reduced")]
assert {l["bg-type"] for l in red} >= {"Data", "Metadata"}, lines
assert all(l["bg-profile"] == "RAID1" and l["requested-profile"] == "RAID1C3" for l in red), lines
' <<<"$output"
	mfs umount "$T/mnt"
}

@test "raid0 data with a device missing: read-write refused with the count, ro,degraded reads what is left, lost data is EIO" {
	make_images 2
	mkfs.mfs -q -f -d raid0 -m raid1 $(imgs 2)
	mfs_mount "$T/img1" "$T/mnt"
	head -c $((4 * MiB)) /dev/urandom >"$T/mnt/f"
	mfs umount "$T/mnt"
	mv "$T/img2" "$T/gone2"
	fp=$(fingerprint "$T/img1")
	run --separate-stderr mfs mount -o degraded "$T/img1" "$T/mnt" 3>&-
	assert_failure
	assert_stderr_line "ERROR: 1 data chunk cannot be read: device 2 missing, and a RAID0 chunk survives the loss of 0 devices at most; mount read-only (-o ro,degraded) to read the rest"
	run is_mounted "$T/mnt"
	assert_failure
	[ "$(fingerprint "$T/img1")" = "$fp" ]
	run --separate-stderr mfs_mount -o ro,degraded "$T/img1" "$T/mnt"
	assert_success
	assert_stderr_regex "^WARNING: 1 data chunk cannot be read: device 2 missing"
	run cat "$T/mnt/f"
	assert_failure
	assert_output --partial "Input/output error"
	mfs umount "$T/mnt"
}
