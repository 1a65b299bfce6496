# Helpers shared by balance.bats and device-mgmt.bats (load after helpers).
#
# Every operation is followed by a content check: $T/want holds the sha256
# of every file the filesystem must contain; verify_online compares it with
# the mounted tree, verify_offline runs `mfs check` on the unmounted images
# and compares again through a read-only mount.

# sums DIR: "sha256  ./path" of every regular file under DIR, sorted by path.
sums() {
	(cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum)
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
	mfs mount "$@" "$T/mnt" || return 1
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
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	umount -l "$T/mnt"
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
