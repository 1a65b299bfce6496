#!/usr/bin/env bash
# A stale member swapped in (issue 15): run the file workload of files.sh
# with every device write logged, rebuild the final devices, then for
# crash points K put back one member as it was at K (what its own flushes
# had made durable by then, nothing after) beside the final others.
# Mounted read-only, the files must be exactly the final state (the stale
# member is never what is served); the first read-write mount catches it
# up; afterwards `mfs check --check-data-csum` is clean and the files are
# still the final state. The first stale state of each configuration (the
# first four in full mode) is caught up with its writes logged, and the
# catch-up is cut short at the crash points of that log: each state must
# hold the final files, read-only and read-write, and check clean after
# (verify_catchup_crashes). One TAP line per configuration; every engine run
# has a time limit. Full mode (lib.bash) puts a member back at every
# crash point but the last, sampled mode at the first, the one before the
# last, one in each commit's stretch of the log and more drawn at random
# up to MFS_CRASH_STALE_POINTS (default 4); each a fresh copy of every
# device.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/crash/lib.bash
. "$top/tests/crash/lib.bash"
crash_setup stale
ROUNDS=${MFS_CRASH_ROUNDS:-5}
POINTS=${MFS_CRASH_STALE_POINTS:-4}
# shellcheck source=tests/crash/workload.bash
. "$top/tests/crash/workload.bash"

# The final state must be what a mount of the current devices shows.
check_final() {	# check_final WHAT OPTIONS
	mounted_tree_is "$1" "$2" "$tmp/state.final" "${cur[@]}"
}

# mfs check --check-data-csum of IMAGE... clean; else WHY and its output.
check_clean() {	# check_clean WHY IMAGE...
	local why=$1 out
	shift
	out=$(timeout 120 "$mfs" check --check-data-csum "$@" 2>&1) && return 0
	echo "$why"
	echo "$out" | sed 's/^/# /' | head -20 >&2
	return 1
}

# Member S as it was at crash point K, the others final; caught up at mount.
verify_stale() {	# verify_stale S K COUNT NDEV
	local s=$1 k=$2 count=$3 ndev=$4 i maps=()
	cur=()
	for i in $(seq 1 "$ndev"); do
		cp --sparse=always "$tmp/w$i.img" "$tmp/c$i.img"
		cur+=("$tmp/c$i.img")
		maps+=(--map "$tmp/d$i.img=/dev/null")
	done
	cp --sparse=always "$tmp/b$s.img" "$tmp/c$s.img"
	maps[$((2 * s - 1))]="$tmp/d$s.img=$tmp/c$s.img"
	"$replay" "$tmp/log" "${maps[@]}" --upto "$k" || { echo "crash point $k: replay failed"; return 1; }
	check_final "devid $s stale at crash point $k of $count, read-only" ro || return 1
	if [ "$catchups" -gt 0 ]; then
		catchups=$((catchups - 1))
		verify_catchup_crashes "devid $s stale at crash point $k of $count" "$ndev" || return 1
	fi
	check_final "devid $s stale at crash point $k of $count, read-write" rw || return 1
	check_clean "devid $s stale at crash point $k of $count: mfs check is not clean after the catch-up" \
		"${cur[@]}" || return 1
	check_final "devid $s stale at crash point $k of $count, after the catch-up" ro
}

# The catch-up itself cut short: the stale state (cur) mounted read-write
# with its writes logged - the catch-up, then the commits of the mount and
# the unmount - and that log's crash points (all in full mode, a sample
# otherwise, each also with writes in flight reordered) replayed onto the
# stale state. At each the files must be the final ones read-only and
# read-write (that mount catches up what is left), and the check clean.
verify_catchup_crashes() {	# verify_catchup_crashes WHAT NDEV
	local what=$1 ndev=$2 i k r count maps=() imgs=()
	local points=$LOG_POINTS commits=$LOG_COMMITS unflushed=$LOG_UNFLUSHED supers=$LOG_SUPERS
	for i in $(seq 1 "$ndev"); do
		cp --sparse=always "$tmp/c$i.img" "$tmp/p$i.img"
		maps+=(--map "$tmp/c$i.img=$tmp/q$i.img")
		imgs+=("$tmp/q$i.img")
	done
	rm -f "$tmp/clog"
	if ! MFS_WRITE_LOG=$tmp/clog timeout 120 "$mfs" mount "${cur[@]}" "$tmp/vmnt" 2>"$tmp/mount.err"; then
		echo "$what: the logged read-write mount failed: $(head -1 "$tmp/mount.err")"
		return 1
	fi
	timeout 120 "$mfs" umount "$tmp/vmnt" || { echo "$what: umount failed"; return 1; }
	log_stats "$tmp/clog" || { echo "$what: replay --stats of the catch-up failed"; return 1; }
	count=$LOG_POINTS
	for k in $(choose_points "$count" "$CATCHUP_POINTS" "$what"); do
		for r in $(seq 0 "$CATCHUP_REORDERS"); do
			for i in $(seq 1 "$ndev"); do
				cp --sparse=always "$tmp/p$i.img" "$tmp/q$i.img"
			done
			"$replay" "$tmp/clog" "${maps[@]}" --upto "$k" ||
				{ echo "$what, catch-up crash point $k: replay failed"; return 1; }
			if [ "$r" -gt 0 ] && ! "$replay" "$tmp/clog" "${maps[@]}" --from "$k" --upto "$k" \
					--reorder "$(reorder_seed "$what" "$k" "$r")"; then
				echo "$what, catch-up crash point $k: replay --reorder failed"
				return 1
			fi
			state_replayed
			mounted_tree_is "$what, catch-up crash point $k of $count (reordering $r), read-only" \
				ro "$tmp/state.final" "${imgs[@]}" || return 1
			mounted_tree_is "$what, catch-up crash point $k of $count (reordering $r), read-write" \
				rw "$tmp/state.final" "${imgs[@]}" || return 1
			check_clean "$what, catch-up crash point $k of $count (reordering $r): mfs check is not clean after" \
				"${imgs[@]}" || return 1
		done
	done
	# (the workload's log figures again, for the caller)
	LOG_POINTS=$points LOG_COMMITS=$commits LOG_UNFLUSHED=$unflushed LOG_SUPERS=$supers
}

run_config() {	# run_config NAME SEED NDEV MKFS-OPTIONS...
	local name=$1 seed=$2 ndev=$3 i k s count points maps=() why="" n=0
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
	log_stats "$tmp/log" || { tap FAIL "$name: replay --stats failed"; return; }
	count=$LOG_POINTS
	if [ "$count" -lt "$ROUNDS" ]; then
		tap FAIL "$name: the workload made $count crash points, fewer than its $ROUNDS fsynced rounds"
		return
	fi
	if [ "$LOG_UNFLUSHED" -ne 0 ]; then
		tap FAIL "$name: the unmount left $LOG_UNFLUSHED writes no flush made durable"
		return
	fi
	"$replay" "$tmp/log" "${maps[@]}" --upto "$count" || { tap FAIL "$name: replay failed"; return; }
	# (not the last point: a member as it is there is not stale)
	points=$(choose_points $((count - 1)) "$POINTS" "$name")
	RANDOM=$seed
	catchups=$CATCHUP_STATES
	for k in $points; do
		s=$((1 + RANDOM % ndev))
		n=$((n + 1))
		state_replayed
		if ! verify_stale "$s" "$k" "$count" "$ndev" >"$tmp/why"; then
			why=$(cat "$tmp/why")
			why=${why:-"devid $s stale at crash point $k: verification failed"}
			break
		fi
		why=""
	done
	[ -n "$why" ] || why=$(too_few_states "$n" $((ROUNDS + 1)))
	if [ -z "$why" ]; then
		tap OK "$name: $n stale members (of $((count + 1)) crash points) caught up, the final files intact"
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

REORDERS=0	# a stale member is a durable state: nothing in flight
# the catch-up cut short: for how many stale states per configuration, at
# how many of its crash points (full mode: all), with how many reorderings
if [ "$CRASH_MODE" = full ]; then
	CATCHUP_STATES=${MFS_CRASH_CATCHUP_STATES:-4} CATCHUP_REORDERS=${MFS_CRASH_REORDERS:-4}
else
	CATCHUP_STATES=${MFS_CRASH_CATCHUP_STATES:-1} CATCHUP_REORDERS=${MFS_CRASH_REORDERS:-1}
fi
CATCHUP_POINTS=${MFS_CRASH_CATCHUP_POINTS:-6}
crash_mode_banner stale.sh
run_config "stale member, -d raid1 -m raid1, 2 devices" 31 2 -d raid1 -m raid1
run_config "stale member, -d raid5 -m raid1, 3 devices" 32 3 -d raid5 -m raid1
run_config "stale member, -d raid1c3 -m raid1c3, 3 devices" 33 3 -d raid1c3 -m raid1c3
crash_summary stale.sh
echo "1..$tests"
[ $failures -eq 0 ]
