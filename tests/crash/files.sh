#!/usr/bin/env bash
# Crash consistency of file data and the namespace: mount a fresh
# filesystem with every device write and flush logged ($MFS_WRITE_LOG), run
# rounds of operations (tests/crash/workload.bash: create, overwrite,
# append, truncate, rename, rename over, unlink, symlinks, hard links,
# xattrs, mkdir, rmdir, directory renames), each ended by fsync of
# everything, the last one by the unmount. Then rebuild the devices at the
# log's crash points (tests/crash/replay: each device holds what its own
# flushes made durable), each also with random parts of the writes in
# flight landing, and require of every state: `mfs check --check-data-csum`
# clean, and, mounted read-only, every entry (file content and size,
# directory, symlink target, xattrs) exactly as the last round whose
# fsyncs had returned left it, or as the round being fsynced leaves it
# (a commit is atomic: nothing in between). Where a round's operations
# themselves made the filesystem commit, each entry may be old, new or
# absent (if one of them lacks it), not anything else. The last point
# holds exactly the final state, and the unmount leaves every write
# durable. Each state is then mounted read-write (a copy of it: the open
# catches up a member a torn commit left behind) and must show the same
# tree and check clean after. Three configurations run their rounds
# degraded (raid5 and raid10 with a member gone, raid6 with two, over
# chunks filled with them there), so the catch-up meets rows with columns
# missing; their states are then mounted with the gone members back too
# (caught up from their first round on), the same tree and a clean check
# required. lib.bash says which points (full or sampled mode). One TAP line
# per configuration, with the states replayed. Every engine run has a time
# limit.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/crash/lib.bash
. "$top/tests/crash/lib.bash"
crash_setup files
ROUNDS=${MFS_CRASH_ROUNDS:-12}
# crash points replayed per configuration in sampled mode (at least its commits)
SAMPLE=${MFS_CRASH_SAMPLE:-12}
# shellcheck source=tests/crash/workload.bash
. "$top/tests/crash/workload.bash"

# ---------------- verification ----------------

# The last round whose fsyncs had returned at crash point K (0: none).
round_at() {	# round_at K
	awk -v k="$1" '$3 <= k { r = $1 } END { print r + 0 }' "$tmp/rounds"
}

# Round R's line of $tmp/rounds (workload.bash): R, the crash points where
# its fsyncs (the unmount for the last) began and had returned, and the
# log's flushes at those two moments.
round_line() {	# round_line R
	awk -v r="$1" '$1 == r' "$tmp/rounds"
}

# Each entry seen must be as round J or round J+1 left it, or absent if
# one of them lacks it; an entry only round J+1's operations had for a
# while (its temporary file) may be there as it was written.
verify_entries() {	# verify_entries J
	local j=$1
	awk -v j="$j" '
		FILENAME == ARGV[1] { old[$1] = $2; names[$1] = 1; next }
		FILENAME == ARGV[2] { new[$1] = $2; names[$1] = 1; next }
		FILENAME == ARGV[3] { temp[$1] = $2; next }
		{ seen[$1] = $2 }
		END {
			bad = 0
			for (f in names) {
				if (!(f in seen)) {
					if ((f in old) && (f in new)) {
						printf "%s is missing (rounds %d and %d have it)\n", f, j, j + 1
						bad = 1
					}
				} else if (!((f in old) && seen[f] == old[f]) && !((f in new) && seen[f] == new[f])) {
					printf "%s is %s, neither round %d nor %d left it so\n", f, seen[f], j, j + 1
					bad = 1
				}
			}
			for (f in seen)
				if (!(f in names) && !((f in temp) && seen[f] == temp[f])) {
					printf "%s (%s) exists, but no state of rounds %d..%d has it\n", f, seen[f], j, j + 1
					bad = 1
				}
			exit bad
		}' "$tmp/state.$j" "$tmp/state.$((j + 1))" "$tmp/temps.$((j + 1))" "$tmp/seen"
}

# The states allowed at crash point K, and the mounted replay against them.
verify_namespace() {	# verify_namespace K COUNT
	local k=$1 count=$2 j next before flushes_before flushes_synced
	snapshot "$tmp/vmnt" >"$tmp/seen" || { echo "cannot read the tree"; return 1; }
	j=$(round_at "$k")
	next=$((j + 1))
	if [ "$k" -eq "$count" ] || [ ! -f "$tmp/state.$next" ]; then
		if ! diff -u "$tmp/state.final" "$tmp/seen" >"$tmp/diff"; then
			echo "the tree differs from the final state (the unmount's)"
			sed 's/^/# /' "$tmp/diff" | head -20 >&2
			return 1
		fi
		return 0
	fi
	read -r _ before _ flushes_before _ < <(round_line "$next")
	read -r _ _ _ _ flushes_synced < <(round_line "$j")
	if [ "$flushes_before" -gt "$flushes_synced" ]; then
		# round J+1's operations flushed (committed?) before its fsyncs
		verify_entries "$j"
		return
	fi
	cmp -s "$tmp/state.$j" "$tmp/seen" && return 0
	if [ "$k" -ge "$before" ] && cmp -s "$tmp/state.$next" "$tmp/seen"; then
		return 0
	fi
	if [ "$k" -ge "$before" ]; then
		echo "the tree is neither round $j's nor round $next's"
	else
		echo "the tree is not round $j's (round $next's fsyncs begin at crash point $before)"
	fi
	{ verify_entries "$j"; diff "$tmp/state.$j" "$tmp/seen"; } | sed 's/^/# /' | head -20 >&2
	return 1
}

# mfs check --check-data-csum of IMAGE...: clean, or with MISSING set
# nothing but those members named missing. Prints why not.
check_images() {	# check_images WHAT IMAGE...
	local what=$1 out rc=0
	shift
	out=$(timeout 120 "$mfs" check --check-data-csum "$@" 2>&1) || rc=$?
	[ $rc -eq 0 ] && return 0
	if [ -n "${MISSING:-}" ] && [ $rc -ne 124 ] && only_missing_named "$out" "${MISSING// /|}"; then
		return 0
	fi
	echo "$what: mfs check --check-data-csum is not clean (exit status $rc)"
	echo "$out" | grep -v '^\[' | sed 's/^/# /' | head -20 >&2
	return 1
}

# Check, mount read-only and compare the tree of the images; then mount
# them read-write (which catches up a member a torn commit left a
# generation behind), require the very same tree, and check again.
verify_images() {	# verify_images K COUNT WHAT IMAGE...
	local k=$1 count=$2 what=$3 out rc opts=${MISSING:+,degraded} img copies
	shift 3
	what="crash point $k of $count$what"
	check_images "$what" "$@" || return 1
	if ! timeout 60 "$mfs" mount -o "ro$opts" "$@" "$tmp/vmnt" 2>"$tmp/mount.err"; then
		echo "$what: read-only mount failed"
		sed 's/^/# /' "$tmp/mount.err" >&2
		return 1
	fi
	out=$(verify_namespace "$k" "$count")
	rc=$?
	timeout 60 "$mfs" umount "$tmp/vmnt" || { echo "$what: umount failed"; return 1; }
	[ $rc -eq 0 ] || { echo "$what: $out"; return 1; }
	mv "$tmp/seen" "$tmp/seen.ro"
	# (on copies: the images are where the replay goes on from)
	copies=()
	for img in "$@"; do
		cp --sparse=always "$img" "$img.rw"
		copies+=("$img.rw")
	done
	set -- "${copies[@]}"
	mounted_tree_is "$what, read-write" "rw$opts" "$tmp/seen.ro" "$@" || return 1
	check_images "$what, after a read-write mount" "$@" || return 1
	[ -n "${MISSING:-}" ] || { rm -f "$@"; return 0; }
	# the members that were gone come back: caught up, the same tree
	for img in $MISSING; do
		cp --sparse=always "$tmp/gone$img.img" "$tmp/gone$img.img.rw"
		set -- "$@" "$tmp/gone$img.img.rw"
	done
	mounted_tree_is "$what, the missing members back" rw "$tmp/seen.ro" "$@" || return 1
	MISSING="" check_images "$what, the missing members back" "$@" || return 1
	rm -f "$@"
}

run_config() {	# run_config NAME SEED NDEV MKFS-OPTIONS...
	local name=$1 seed=$2 ndev=$3 i k r s prev=0 count maps=() rmaps=() rimgs=() why="" n=0 nr=0 path
	shift 3
	if ! run_workload "$seed" "$ndev" "$@" >"$tmp/workload.out" 2>&1; then
		sed 's/^/# /' "$tmp/workload.out" | head -20 >&2
		tap FAIL "$name: workload: $(tail -1 "$tmp/workload.out")"
		return
	fi
	work=()
	for i in $(seq 1 "$ndev"); do
		is_missing "$i" && continue
		cp --sparse=always "$tmp/b$i.img" "$tmp/w$i.img"
		work+=("$tmp/w$i.img")
		rimgs+=("$tmp/r$i.img")
	done
	# the log names the devices as the daemon opened them
	while read -r path; do
		i=$(basename "$path" .img)
		maps+=(--map "$path=$tmp/w${i#d}.img")
		rmaps+=(--map "$path=$tmp/r${i#d}.img")
	done < <("$replay" "$tmp/log" --dump | awk '$2 == "write" { print $3 }' | sort -u)
	log_stats "$tmp/log" || { tap FAIL "$name: replay --stats failed"; return; }
	count=$LOG_POINTS
	if [ "$LOG_UNFLUSHED" -ne 0 ]; then
		tap FAIL "$name: the unmount left $LOG_UNFLUSHED writes no flush made durable"
		return
	fi
	for k in $(choose_points "$count" "$SAMPLE" "$name"); do
		if ! "$replay" "$tmp/log" "${maps[@]}" --from "$prev" --upto "$k"; then
			why="crash point $k: replay failed"
			break
		fi
		prev=$k
		n=$((n + 1))
		state_replayed
		why=$(verify_images "$k" "$count" "" "${work[@]}") || break
		for r in $(seq 1 "$REORDERS"); do
			s=$(reorder_seed "$name" "$k" "$r")
			for i in $(seq 1 "$ndev"); do
				is_missing "$i" || cp --sparse=always "$tmp/w$i.img" "$tmp/r$i.img"
			done
			if ! "$replay" "$tmp/log" "${rmaps[@]}" --from "$k" --upto "$k" --reorder "$s"; then
				why="crash point $k: replay --reorder $s failed"
				break 2
			fi
			nr=$((nr + 1))
			state_replayed
			why=$(verify_images "$k" "$count" " + reorder $s" "${rimgs[@]}") || break 2
		done
	done
	[ -n "$why" ] || why=$(too_few_states "$n" $((ROUNDS + 1)))
	if [ -z "$why" ]; then
		tap OK "$name: $ROUNDS fsynced rounds, $n of $((count + 1)) crash points and $nr reordered states, each round's tree or the next"
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

crash_mode_banner files.sh
run_config "files -d raid1 -m raid1, 2 devices" 21 2 -d raid1 -m raid1
run_config "files -d raid5 -m raid1, 3 devices" 22 3 -d raid5 -m raid1
# degraded: the rounds run with member 3 gone (mounted -o degraded) over
# chunks a first round filled on all three; a torn commit leaves a present
# member a generation behind beside the missing one
MISSING=3 run_config "files -d raid5 -m raid1, 3 devices, devid 3 missing" 23 3 -d raid5 -m raid1
MISSING=4 run_config "files -d raid10 -m raid1, 4 devices, devid 4 missing" 25 4 -d raid10 -m raid1
MISSING="3 4" run_config "files -d raid6 -m raid1c3, 4 devices, devids 3 and 4 missing" 24 4 \
	-d raid6 -m raid1c3
crash_summary files.sh
echo "1..$tests"
[ $failures -eq 0 ]
