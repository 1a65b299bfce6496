# Helpers shared by balance.bats, device-mgmt.bats and replace.bats (load after helpers).
#
# Every operation is followed by a content check: $T/want holds the sha256
# of every file the filesystem must contain; verify_online compares it with
# the mounted tree, verify_offline runs `mfs check` on the unmounted images
# and compares again through a read-only mount.

# sums DIR: "sha256  ./path" of every regular file under DIR, sorted by path.
sums() {
	(cd "$1" && find . -type f -print0 | xargs -0r -n 1 -P 4 sha256sum | LC_ALL=C sort -k 2)
}

# gen_file FILE MIB: MIB MiB of incompressible data, every MiB different.
gen_file() {
	python3 -c '
import os, sys
b = bytearray(os.urandom(1 << 20))
with open(sys.argv[1], "wb") as f:
    for i in range(int(sys.argv[2])):
        b[0:8] = i.to_bytes(8, "little")
        f.write(b)
' "$1" "$2"
}

# mnt [-o OPTS] DEV...: mount at $T/mnt (recorded for teardown).
mnt() {
	mkdir -p "$T/mnt"
	# the server does not keep bats's fd 3 (bats waits for it to close)
	mfs mount "$@" "$T/mnt" 3>&- || return 1
	echo "$T/mnt" >>"$T/.mounts"
}

umnt() {
	mfs umount "$T/mnt"
}

verify_online() {
	sums "$T/mnt" >"$T/got"
	diff -u "$T/want" "$T/got"
}

# verify_offline DEV: check clean, then the same files through a ro mount.
verify_offline() {
	run mfs check "$1"
	assert_success
	assert_line --partial "no error found"
	mnt -o ro "$1"
	verify_online
	umnt
}

# daemon_pid: the `mfs mount` server of $T/mnt.
daemon_pid() {
	pgrep -f -- "mfs mount .*$T/mnt\$" | head -n 1
}

# kill_daemon: SIGKILL the server of $T/mnt and detach the dead mount.
kill_daemon() {
	local pid

	pid=$(daemon_pid)
	[ -n "$pid" ] || { echo "no daemon for $T/mnt" >&2; return 1; }
	kill -9 "$pid"
	wait_until 600 dead "$pid"
	umount -l "$T/mnt"
}

dead() {
	! kill -0 "$1" 2>/dev/null
}

# chunk_layout DEV: one line per chunk: "logical type devid:offset ...".
chunk_layout() {
	mfs inspect-internal dump-tree -t chunk "$1" | awk '
		function out() { if (logical != "") print logical, type, stripes }
		/CHUNK_ITEM/ { out(); s = $0; sub(/.*CHUNK_ITEM /, "", s); sub(/\).*/, "", s);
			logical = s; stripes = ""; type = "" }
		$1 == "length" { for (i = 1; i <= NF; i++) if ($i == "type") type = $(i + 1) }
		$1 == "stripe" && logical != "" { stripes = stripes " " $4 ":" $6 }
		END { out() }'
}

# chunk_usage DEV: "logical length used type" per block group.
chunk_usage() {
	mfs inspect-internal dump-tree -t extent "$1" | awk '
		/BLOCK_GROUP_ITEM/ { s = $0; sub(/.*key \(/, "", s); split(s, k, " ");
			logical = k[1]; len = k[3]; sub(/\).*/, "", len) }
		$1 == "block" && $2 == "group" && $3 == "used" { print logical, len, $4, $NF }'
}

# moved BEFORE AFTER: logicals of the chunks whose layout changed or vanished.
moved() {
	awk 'NR == FNR { after[$1] = $0; next } after[$1] != $0 { print $1 }' "$2" "$1" | sort -n
}

# dev_used DEV DEVID: "used" bytes of a member from `filesystem show --raw`.
dev_used() {
	mfs filesystem show --raw "$1" | awk -v d="$2" '$1 == "devid" && $2 == d { print $6 }'
}

# nr_devices DEV
nr_devices() {
	mfs filesystem show "$1" | awk '$1 == "Total" && $2 == "devices" { print $3 }'
}

# big_template: once per bats run (shared by balance.bats and
# device-mgmt.bats), three 256M images with 180 MiB of files, data and
# metadata raid0: three data chunks of up to 76 MiB that span every device,
# so a full balance or the delete of any device moves all of it. Tests that
# pause, kill or query an operation mid-way hold it at a chunk (hold_at).
big_template() {
	local big="$BATS_RUN_TMPDIR/restripe-big"

	(
		flock 9
		[ -e "$big/done" ] && exit 0
		rm -rf "$big"
		mkdir -p "$big/src/dir"
		gen_file "$big/src/a" 80
		gen_file "$big/src/b" 70
		gen_file "$big/src/dir/c" 30
		echo small >"$big/src/dir/small"
		truncate -s 256M "$big/img1" "$big/img2" "$big/img3"
		MFS_REGISTRY="$big/registry" mkfs.mfs -q -d raid0 -m raid0 -r "$big/src" \
			"$big/img1" "$big/img2" "$big/img3" || exit 1
		sums "$big/src" >"$big/want"
		rm -rf "$big/src"
		touch "$big/done"
	) 9>"$BATS_RUN_TMPDIR/restripe-big.lock"
}

# big_fs: a private copy of the big template as $T/img1..3 (registered).
big_fs() {
	local big="$BATS_RUN_TMPDIR/restripe-big"

	cp --sparse=always "$big/img1" "$big/img2" "$big/img3" "$T/"
	cp "$big/want" "$T/want"
	mfs device scan "$T/img1" "$T/img2" "$T/img3" >/dev/null
}

# wait_done MNT: until no operation is running or paused.
wait_done() {
	wait_until 600 quiet mfs balance status "$1" || {
		mfs balance status "$1" >&2
		return 1
	}
}

quiet() {
	"$@" >/dev/null 2>&1
}

# ---------------- holding an operation at a chunk ----------------
#
# Instead of racing an operation with delays, a test holds it at a known
# point (MFS_TEST_PAUSE_AT, set up by helpers.bash; kernel-shared/block/testhook.h):
# "restripe-copied" is passed after each chunk is copied, before it is
# swapped in. Held at its Nth chunk, an operation has completed N-1 chunks
# and is mid-way through the Nth; it stays there until released.

# hold_at N: hold the next operation (or the one held now, once released)
# when it has copied its Nth chunk from now on
hold_at() {
	echo "$1" >"$T/hold"
}

# wait_held: until the operation is held
wait_held() {
	wait_for_file "$T/hold.held" 600
}

# release: let the held operation go on
release() {
	rm -f "$T/hold.held"
}

# requested MNT: a pause or cancel of the operation on MNT was asked for
requested() {
	mfs balance status "$1" | head -n 1 | grep -qE ', (pause|cancel) requested$'
}

# while_held CMD... (the mount point last): a pause or cancel, which
# returns once the operation has stopped, of the held operation: it is
# released once the request shows, so it stops right after the chunk it
# is held at. CMD's stdout, stderr and status are this function's.
while_held() {
	local mnt=${!#} pid rc=0

	wait_held
	"$@" >"$T/held.out" 2>"$T/held.err" &
	pid=$!
	wait_until 600 requested "$mnt"
	release
	wait "$pid" || rc=$?
	cat "$T/held.out"
	cat "$T/held.err" >&2
	return "$rc"
}

# umnt_held: unmount $T/mnt while its operation is held: the server asks
# the operation to pause as it stops (the point "restriper-stop"), then
# the operation is released and pauses right after the chunk it is held at.
umnt_held() {
	local pid rc=0

	wait_held
	echo 1 >"$T/hold-stop"
	umnt &
	pid=$!
	wait_for_file "$T/hold-stop.held" 600
	release
	rm -f "$T/hold-stop.held"
	wait "$pid" || rc=$?
	return "$rc"
}

# held_progress CMD...: a restripe in the foreground with its progress
# lines, held at the first checkpoint of its first data chunk (the bytes
# shown are those on disk: from there on some are) until it has printed a
# periodic line: so there is at least one besides the last, however fast
# the machine. CMD's stdout, stderr and status are this function's.
held_progress() {
	local pid rc=0

	echo 1 >"$T/hold-ckpt"
	"$@" >"$T/progress.out" 2>"$T/progress.err" &
	pid=$!
	wait_for_file "$T/hold-ckpt.held" 600
	wait_until 600 grep -q ' chunks, ' "$T/progress.out"
	rm -f "$T/hold-ckpt.held"
	wait "$pid" || rc=$?
	cat "$T/progress.out"
	cat "$T/progress.err" >&2
	return "$rc"
}

# fs_with N SIZE DATA-MIB MKFS-OPTIONS...: img1..imgN of SIZE, the first
# ones formatted (all N unless -n K is given first) with DATA-MIB MiB of
# files in a few sizes.
fs_with() {
	local k=0 n size mib

	if [ "$1" = -n ]; then
		k=$2
		shift 2
	fi
	n=$1 size=$2 mib=$3
	shift 3
	((k)) || k=$n
	make_images "$n" "$size"
	mkdir -p "$T/src/d"
	((mib > 2)) && gen_file "$T/src/big" $((mib - 2))
	gen_file "$T/src/d/one" 1
	head -c 777777 /dev/urandom >"$T/src/d/odd"
	echo hello >"$T/src/d/tiny"
	mkfs.mfs -q "$@" -r "$T/src" $(imgs "$k")
	sums "$T/src" >"$T/want"
}

# show_line DEV DEVID: that member's line of `filesystem show`
show_line() {
	mfs filesystem show "$1" | awk -v d="$2" '$1 == "devid" && $2 == d'
}

# devids_in_chunks DEV: the devids any chunk has a stripe on, sorted
devids_in_chunks() {
	chunk_layout "$1" | awk '{ for (i = 3; i <= NF; i++) { split($i, s, ":"); print s[1] } }' | sort -un
}

# foreign_devices SMALL_SIZE: devices that device add and replace must
# refuse: $T/other (another mfs), $T/e4 (ext4) and $T/small (SMALL_SIZE,
# seeded with a pattern, so a stray write shows).
foreign_devices() {
	truncate -s 512M "$T/other" "$T/e4"
	MFS_REGISTRY="$T/other-registry" mkfs.mfs -q "$T/other"
	mkfs.ext4 -q -F "$T/e4"
	truncate -s "$1" "$T/small"
	seed_image "$T/small"
}
