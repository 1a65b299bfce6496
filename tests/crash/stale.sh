#!/usr/bin/env bash
# A stale member swapped in (issue 15): run the file workload of files.sh
# with every device write logged, rebuild the final devices, then for a
# few random flush points K put back one member as it was at K (an old
# image of it: everything before K, nothing after) beside the final
# others. Mounted read-only, the files must be exactly the final state
# (the stale member is never what is served); the first read-write mount
# catches it up; afterwards `mfs check --check-data-csum` is clean and the
# files are still the final state. One TAP line per configuration; every
# engine run has a time limit. MFS_CRASH_STALE_POINTS sets how many flush
# points (default 4; each a fresh copy of every device).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${MFS_BUILD:-$top/build}
mfs=$build/mfs
mkfs=$build/mkfs.mfs
replay=$build/tests/crash/replay
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mfs-crash-stale.XXXXXX")
export MFS_REGISTRY=$tmp/registry
ROUNDS=${MFS_CRASH_ROUNDS:-8}
POINTS=${MFS_CRASH_STALE_POINTS:-4}

cleanup() {
	local m
	for m in "$tmp/mnt" "$tmp/vmnt"; do
		if mountpoint -q "$m" 2>/dev/null; then
			timeout 60 "$mfs" umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
		fi
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

# shellcheck source=tests/crash/workload.bash
. "$top/tests/crash/workload.bash"

# The final state must be what a mount of the current devices shows.
check_final() {	# check_final WHAT OPTIONS
	local what=$1 opts=$2
	if ! timeout 120 "$mfs" mount -o "$opts" "${cur[@]}" "$tmp/vmnt" 2>"$tmp/mount.err"; then
		echo "$what: mount -o $opts failed: $(head -1 "$tmp/mount.err")"
		return 1
	fi
	snapshot "$tmp/vmnt" >"$tmp/seen"
	timeout 120 "$mfs" umount "$tmp/vmnt" || { echo "$what: umount failed"; return 1; }
	if ! diff -u "$tmp/state.final" "$tmp/seen" >"$tmp/diff"; then
		echo "$what: the files differ from the final state"
		sed 's/^/# /' "$tmp/diff" | head -20 >&2
		return 1
	fi
}

# Member S as it was at flush point K, the others final; caught up at mount.
verify_stale() {	# verify_stale S K COUNT NDEV
	local s=$1 k=$2 count=$3 ndev=$4 i out maps=()
	cur=()
	for i in $(seq 1 "$ndev"); do
		cp --sparse=always "$tmp/w$i.img" "$tmp/c$i.img"
		cur+=("$tmp/c$i.img")
		maps+=(--map "$tmp/d$i.img=/dev/null")
	done
	cp --sparse=always "$tmp/b$s.img" "$tmp/c$s.img"
	maps[$((2 * s - 1))]="$tmp/d$s.img=$tmp/c$s.img"
	"$replay" "$tmp/log" "${maps[@]}" --upto "$k" || { echo "flush point $k: replay failed"; return 1; }
	check_final "devid $s stale at flush point $k of $count, read-only" ro || return 1
	check_final "devid $s stale at flush point $k of $count, read-write" rw || return 1
	if ! out=$(timeout 120 "$mfs" check --check-data-csum "${cur[@]}" 2>&1); then
		echo "devid $s stale at flush point $k of $count: mfs check is not clean after the catch-up"
		echo "$out" | sed 's/^/# /' | head -20 >&2
		return 1
	fi
	check_final "devid $s stale at flush point $k of $count, after the catch-up" ro
}

run_config() {	# run_config NAME SEED NDEV MKFS-OPTIONS...
	local name=$1 seed=$2 ndev=$3 i k s count maps=() why="" n=0
	shift 3
	if ! run_workload "$seed" "$ndev" "$@" >"$tmp/workload.out" 2>&1; then
		sed 's/^/# /' "$tmp/workload.out" | head -20 >&2
		tap FAIL "$name: workload: $(tail -1 "$tmp/workload.out")"
		return
	fi
	for i in $(seq 1 "$ndev"); do
		cp --sparse=always "$tmp/b$i.img" "$tmp/w$i.img"
		maps+=(--map "$tmp/d$i.img=$tmp/w$i.img")
	done
	count=$("$replay" "$tmp/log" "${maps[@]}" --count) || { tap FAIL "$name: replay --count failed"; return; }
	if [ "$count" -lt "$ROUNDS" ]; then
		tap FAIL "$name: the workload made $count flush points, fewer than its $ROUNDS fsynced rounds"
		return
	fi
	"$replay" "$tmp/log" "${maps[@]}" --upto "$count" || { tap FAIL "$name: replay failed"; return; }
	RANDOM=$seed
	for ((i = 0; i < POINTS; i++)); do
		k=$((RANDOM % count))
		s=$((1 + RANDOM % ndev))
		n=$((n + 1))
		if ! why=$(verify_stale "$s" "$k" "$count" "$ndev"); then
			why=${why:-"devid $s stale at flush point $k: verification failed"}
			break
		fi
		why=""
	done
	if [ -z "$why" ]; then
		tap OK "$name: $n stale members (of $((count + 1)) flush points) caught up, the final files intact"
	else
		tap FAIL "$name: $(echo "$why" | head -1)"
		echo "$why" | tail -n +2 | sed 's/^/# /' >&2
	fi
}

if [ ! -x "$replay" ] || [ ! -x "$mfs" ]; then
	echo "not ok 1 - crash tools not built (run scripts/build.sh)"
	echo "1..1"
	exit 1
fi

run_config "stale member, -d raid1 -m raid1, 2 devices" 31 2 -d raid1 -m raid1
run_config "stale member, -d raid5 -m raid1, 3 devices" 32 3 -d raid5 -m raid1
run_config "stale member, -d raid1c3 -m raid1c3, 3 devices" 33 3 -d raid1c3 -m raid1c3
echo "1..$tests"
[ $failures -eq 0 ]
