#!/usr/bin/env bash
# Crash consistency of file data: mount a fresh filesystem with every device
# write and flush logged ($MFS_WRITE_LOG), run rounds of file operations
# (create, overwrite, append, truncate, rename, rename over a file, unlink,
# mkdir) each ended by fsync of every file and directory, and note how many
# flush points the log holds when the fsyncs have returned. Then rebuild the
# devices at the flush points (every one, or a sample that always keeps the
# points around each fsync and the last one) and require `mfs check` clean
# and, mounted read-only, every file that the last fsync before that point
# made durable (and that the next round leaves alone) intact, and no file
# that should not exist; the last flush point holds exactly the final state.
# One TAP line per configuration. Every engine run has a time limit.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${MFS_BUILD:-$top/build}
mfs=$build/mfs
mkfs=$build/mkfs.mfs
replay=$build/tests/crash/replay
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mfs-crash-files.XXXXXX")
export MFS_REGISTRY=$tmp/registry
ROUNDS=${MFS_CRASH_ROUNDS:-12}
MAX_POINTS=${MFS_CRASH_MAX_POINTS:-60}

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

# ---------------- verification ----------------

# The round whose fsyncs are the last ones durable at flush point K (0: none).
round_at() {	# round_at K
	awk -v k="$1" '$2 <= k { r = $1 } END { print r + 0 }' "$tmp/rounds"
}

# Check the files of the mounted replay against round J's state.
verify_files() {	# verify_files K J LAST
	local k=$1 j=$2 last=$3 next=$(($2 + 1))
	snapshot "$tmp/vmnt" >"$tmp/seen" || { echo "flush point $k: cannot read the files"; return 1; }
	if [ "$last" = 1 ]; then
		if ! diff -u "$tmp/state.final" "$tmp/seen" >"$tmp/diff"; then
			echo "flush point $k (the last): the files differ from the final state"
			sed 's/^/# /' "$tmp/diff" | head -20 >&2
			return 1
		fi
		return 0
	fi
	[ "$j" -gt 0 ] || : >"$tmp/state.0"
	awk -v k="$k" -v j="$j" '
		FILENAME == ARGV[1] { durable[$1] = $2; next }	# state after round j
		FILENAME == ARGV[2] { next_state[$1] = $2; allowed[$1] = 1; next }
		FILENAME == ARGV[3] { allowed[$1] = 1; next }	# temporary names of round j+1
		{ seen[$1] = $2 }
		END {
			bad = 0
			for (f in durable) {
				allowed[f] = 1
				if (!(f in next_state) || next_state[f] != durable[f])
					continue	# round j+1 changes it: old, new or gone
				if (!(f in seen)) {
					printf "flush point %d: %s, durable since round %d, is missing\n", k, f, j
					bad = 1
				} else if (seen[f] != durable[f]) {
					printf "flush point %d: %s, durable since round %d, has other contents\n", k, f, j
					bad = 1
				}
			}
			for (f in seen)
				if (!(f in allowed)) {
					printf "flush point %d: %s exists, but no state of rounds %d..%d has it\n", k, f, j, j + 1
					bad = 1
				}
			exit bad
		}' "$tmp/state.$j" "$tmp/state.$next" "$tmp/temps.$next" "$tmp/seen"
}

# Which flush points to check: all when few, else a sample that keeps
# 0, the last, and the points just before and at every fsync's count.
choose_points() {	# choose_points COUNT
	local count=$1
	if [ "$count" -le "$MAX_POINTS" ]; then
		seq 0 "$count"
		return
	fi
	{
		echo 0
		echo "$count"
		awk '{ print $2 - 1; print $2 }' "$tmp/rounds"
		seq 0 $((count / (MAX_POINTS / 2) + 1)) "$count"
	} | awk -v c="$count" '$1 >= 0 && $1 <= c' | sort -n -u
}

verify_point() {	# verify_point K COUNT
	local k=$1 count=$2 j last=0 out
	[ "$k" -eq "$count" ] && last=1
	if ! out=$(timeout 120 "$mfs" check "${work[@]}" 2>&1); then
		echo "flush point $k of $count: mfs check is not clean"
		echo "$out" | sed 's/^/# /' | head -20 >&2
		return 1
	fi
	if ! timeout 60 "$mfs" mount -o ro "${work[@]}" "$tmp/vmnt" 2>"$tmp/mount.err"; then
		echo "flush point $k of $count: read-only mount failed"
		sed 's/^/# /' "$tmp/mount.err" >&2
		return 1
	fi
	j=$(round_at "$k")
	verify_files "$k" "$j" "$last"
	local rc=$?
	timeout 60 "$mfs" umount "$tmp/vmnt" || { echo "flush point $k: umount failed"; return 1; }
	return $rc
}

run_config() {	# run_config NAME SEED NDEV MKFS-OPTIONS...
	local name=$1 seed=$2 ndev=$3 i k prev=0 count maps=() why="" n=0 path
	shift 3
	if ! run_workload "$seed" "$ndev" "$@" >"$tmp/workload.out" 2>&1; then
		sed 's/^/# /' "$tmp/workload.out" | head -20 >&2
		tap FAIL "$name: workload: $(tail -1 "$tmp/workload.out")"
		return
	fi
	work=()
	for i in $(seq 1 "$ndev"); do
		cp --sparse=always "$tmp/b$i.img" "$tmp/w$i.img"
		work+=("$tmp/w$i.img")
	done
	# the log names the devices as the daemon opened them
	while read -r path; do
		i=$(basename "$path" .img)
		maps+=(--map "$path=$tmp/w${i#d}.img")
	done < <("$replay" "$tmp/log" --dump | awk '$2 == "write" { print $3 }' | sort -u)
	count=$("$replay" "$tmp/log" "${maps[@]}" --count) || { tap FAIL "$name: replay --count failed"; return; }
	for k in $(choose_points "$count"); do
		if ! "$replay" "$tmp/log" "${maps[@]}" --from "$prev" --upto "$k"; then
			why="flush point $k: replay failed"
			break
		fi
		prev=$k
		n=$((n + 1))
		if ! why=$(verify_point "$k" "$count"); then
			why=${why:-"flush point $k: verification failed"}
			break
		fi
		why=""
	done
	if [ -z "$why" ]; then
		tap OK "$name: $ROUNDS fsynced rounds, $n of $((count + 1)) flush points checked, the durable files intact at each"
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

run_config "files -d raid1 -m raid1, 2 devices" 21 2 -d raid1 -m raid1
run_config "files -d raid5 -m raid1, 3 devices" 22 3 -d raid5 -m raid1
echo "1..$tests"
[ $failures -eq 0 ]
