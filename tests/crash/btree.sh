#!/usr/bin/env bash
# Crash consistency of B-tree commits: log a run of random fs-tree
# transactions (tests/crash/btree-workload), rebuild the devices at the
# crash points of the log (tests/crash/replay: each device holds what its
# own flushes made durable) and require each state to open, pass every
# phase of the checker (data checksums of every copy included) and hold
# exactly the items of its generation; the generation never goes back and
# the last point holds the last commit. Each point is also replayed with a
# random part of the writes in flight landing, device by device, which may
# add the next commit but nothing else. lib.bash says which points (full or
# sampled mode). One TAP line per configuration, with the states replayed.
# Every engine run has a time limit, so a hang fails the test instead of
# the suite.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/crash/lib.bash
. "$top/tests/crash/lib.bash"
crash_setup btree
workload=$build/tests/crash/btree-workload
NTRANS=${MFS_CRASH_TRANSACTIONS:-20}
# another value gives other workloads and crash points (for longer sweeps)
SEED=${MFS_CRASH_SEED:-0}

# crash points replayed per configuration in sampled mode (at least its commits)
SAMPLE=${MFS_CRASH_SAMPLE:-30}

# Globals set by setup: devs, work, maps, count.
setup() {	# setup NDEV SEED MKFS-OPTIONS...
	local ndev=$1 seed=$2 i
	shift 2
	devs=(); work=(); maps=()
	# IMG_SIZE and MFS_WORKLOAD_SCALE may come from the caller
	rm -f "$tmp"/*.img "$tmp/log"
	for i in $(seq 1 "$ndev"); do
		truncate -s "${IMG_SIZE:-512M}" "$tmp/d$i.img"
		devs+=("$tmp/d$i.img")
		work+=("$tmp/w$i.img")
		maps+=(--map "$tmp/d$i.img=$tmp/w$i.img")
	done
	timeout 60 "$mkfs" -q -f -K "$@" "${devs[@]}" || { echo "mkfs.mfs failed"; return 1; }
	for i in $(seq 1 "$ndev"); do
		cp --sparse=always "$tmp/d$i.img" "$tmp/b$i.img"
	done
	MFS_WRITE_LOG=$tmp/log timeout 300 "$workload" run "$seed" "$NTRANS" "${devs[@]}" ||
		{ echo "the workload failed (exit $?)"; return 1; }
	log_stats "$tmp/log" || { echo "replay --stats failed"; return 1; }
	count=$LOG_POINTS
}

restore_before() {
	local i
	for i in $(seq 1 ${#devs[@]}); do
		cp --sparse=always "$tmp/b$i.img" "$tmp/w$i.img"
	done
}

# verify_state SEED IMAGE...: prints the generation, or fails.
verify_state() {
	local seed=$1 out
	shift
	if ! out=$(timeout 60 "$workload" verify "$seed" "$@" 2>"$tmp/verify.err"); then
		sed 's/^/# /' "$tmp/verify.err" | head -20 >&2
		return 1
	fi
	echo "$out" >"$tmp/verify.out"
	echo "$out" | awk '{ print $2 }'
}

# Point K plus REORDERS random parts of the writes in flight there, each on
# a copy of the durable state: the generation is G's or the next. Sets why
# when one fails.
reordered_states() {	# reordered_states NAME SEED K G
	local name=$1 seed=$2 k=$3 g=$4 r s i rg maps_r=() copies=()
	for i in $(seq 1 ${#work[@]}); do
		maps_r+=(--map "$tmp/d$i.img=$tmp/r$i.img")
		copies+=("$tmp/r$i.img")
	done
	for r in $(seq 1 "$REORDERS"); do
		s=$(reorder_seed "$name" "$k" "$r")
		for i in $(seq 1 ${#work[@]}); do
			cp --sparse=always "$tmp/w$i.img" "$tmp/r$i.img"
		done
		if ! "$replay" "$tmp/log" "${maps_r[@]}" --from "$k" --upto "$k" --reorder "$s"; then
			why="crash point $k: replay --reorder $s failed"
			return 1
		fi
		nreordered=$((nreordered + 1))
		state_replayed
		if ! rg=$(verify_state "$seed" "${copies[@]}"); then
			why="crash point $k + reorder seed $s: state does not verify"
			return 1
		fi
		if [ "$rg" != "$g" ] && [ "$rg" != $((g + 1)) ]; then
			why="crash point $k + reorder seed $s: generation $rg, expected $g or $((g + 1))"
			return 1
		fi
	done
}

# One workload, its crash points in order, each applied on top of the previous one.
run_config() {	# run_config NAME SEED NDEV MKFS-OPTIONS...
	local name=$1 seed=$2 ndev=$3 k g prev=0 first="" last=-1 why="" n=0
	shift 3
	nreordered=0
	if ! setup "$ndev" "$seed" "$@" >"$tmp/setup.out" 2>&1; then
		sed 's/^/# /' "$tmp/setup.out" | head -20 >&2
		tap FAIL "$name: $(tail -1 "$tmp/setup.out")"
		return
	fi
	if [ "$LOG_UNFLUSHED" -ne 0 ]; then
		tap FAIL "$name: the run returned with $LOG_UNFLUSHED writes no flush made durable"
		return
	fi
	restore_before
	for k in $(choose_points "$count" "$SAMPLE" "$name"); do
		if ! "$replay" "$tmp/log" "${maps[@]}" --from "$prev" --upto "$k"; then
			why="crash point $k: replay failed"
			break
		fi
		prev=$k
		n=$((n + 1))
		state_replayed
		if ! g=$(verify_state "$seed" "${work[@]}"); then
			why="crash point $k of $count: state does not verify"
			break
		fi
		if [ "$g" -lt "$last" ]; then
			why="crash point $k: generation went back from $last to $g"
			break
		fi
		first=${first:-$g}
		last=$g
		reordered_states "$name" "$seed" "$k" "$g" || break
	done
	if [ -z "$why" ] && [ "$last" -ne $((first + NTRANS)) ]; then
		why="the last crash point holds generation $last, expected $((first + NTRANS))"
	fi
	[ -n "$why" ] || why=$(too_few_states "$n" "$NTRANS")
	if [ -z "$why" ] && [ -n "${MIN_META_CHUNKS:-}" ] &&
	   [ "$(awk '{ print $6 }' "$tmp/verify.out")" -lt "$MIN_META_CHUNKS" ]; then
		# whether a run fills a chunk depends on its seed
		if [ "$SEED" = 0 ]; then
			why="the run never allocated a metadata chunk: $(cat "$tmp/verify.out")"
		else
			echo "# $name: no metadata chunk allocated with this seed" >&2
		fi
	fi
	if [ -z "$why" ]; then
		tap OK "$name: $n of $((count + 1)) crash points and $nreordered reordered states, generations $first..$last intact"
	else
		tap FAIL "$name: $why"
	fi
}

if [ ! -x "$replay" ] || [ ! -x "$workload" ]; then
	echo "not ok 1 - crash tools not built (run scripts/build.sh)"
	echo "1..1"
	exit 1
fi

crash_mode_banner btree.sh
run_config "btree -m raid1, 2 devices" $((SEED + 11)) 2 -d raid1 -m raid1
run_config "btree -m raid5, 3 devices" $((SEED + 12)) 3 -d raid5 -m raid5
run_config "btree -m raid6, 4 devices" $((SEED + 13)) 4 -d raid6 -m raid6
run_config "btree -m dup -n 4096, 1 device" $((SEED + 14)) 1 -d single -m dup -n 4096
run_config "btree -m raid5 -n 4096, 3 devices" $((SEED + 15)) 3 -d raid5 -m raid5 -n 4096
run_config "btree -m raid6 -n 4096, 5 devices" $((SEED + 16)) 5 -d raid6 -m raid6 -n 4096
# transactions 16 times larger on small devices: the metadata chunk fills
# and the commits allocate a new one (chunk tree and system array change)
IMG_SIZE=128M MFS_WORKLOAD_SCALE=16 MIN_META_CHUNKS=2 \
	run_config "btree -m raid1 x16 on 128M, 2 devices, new chunk" $((SEED + 17)) 2 -d raid1 -m raid1
crash_summary btree.sh
echo "1..$tests"
[ $failures -eq 0 ]
