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

tests=0
failures=0

tap() {	# tap OK|FAIL description
	tests=$((tests + 1))
	if [ "$1" = OK ]; then
		echo "ok $tests - $2"
	else
		failures=$((failures + 1))
		echo "not ok $tests - $2"
	fi
}

# ---------------- the workload ----------------

# Every operation runs in the mounted filesystem and in a mirror directory,
# so the mirror always holds what the filesystem should.
both() {
	(cd "$tmp/mnt" && "$@") && (cd "$tmp/mirror" && "$@")
}

# Random bytes for this operation in $tmp/src (1 B .. 3 MiB, mostly small).
make_src() {
	local n
	case $((RANDOM % 4)) in
	0) n=$((1 + RANDOM % 4096)) ;;
	1) n=$((1 + RANDOM * 4)) ;;
	2) n=$((4096 * (1 + RANDOM % 64))) ;;
	*) n=$((1 + RANDOM * 96)) ;;
	esac
	head -c "$n" /dev/urandom >"$tmp/src"
}

# PICK = a random existing regular file of the mirror (relative path), or "".
pick_file() {
	local files
	mapfile -t files < <(cd "$tmp/mirror" && find . -type f -printf '%P\n' | sort)
	PICK=""
	[ ${#files[@]} -eq 0 ] || PICK=${files[RANDOM % ${#files[@]}]}
}

# name hash, one line per regular file, sorted
snapshot() {	# snapshot DIR
	(cd "$1" && find . -type f -printf '%P\n' | sort | while read -r f; do
		echo "$f $(sha256sum <"$f" | cut -c1-64)"
	done)
}

# fsync every file and directory of the filesystem, then note the flush points
durable_point() {	# durable_point ROUND
	local c i
	(cd "$tmp/mnt" && find . -print0 | xargs -0 sync --) || return 1
	snapshot "$tmp/mirror" >"$tmp/state.$1"
	for i in 1 2 3 4 5; do
		# the log may be mid-record if the daemon is writing; try again
		c=$("$replay" "$tmp/log" --count 2>/dev/null) && break
		sleep 0.2
	done
	[ -n "$c" ] || return 1
	echo "$1 $c" >>"$tmp/rounds"
}

one_round() {	# one_round R
	local r=$1 f g size k
	: >"$tmp/temps.$r"
	for k in a b c; do
		make_src
		both cp "$tmp/src" "f$r.$k" || return 1
	done
	if [ $((RANDOM % 2)) = 0 ] && [ ! -d "$tmp/mirror/sub$((r % 3))" ]; then
		both mkdir "sub$((r % 3))" || return 1
	fi
	pick_file	# overwrite part of a file
	f=$PICK
	if [ -n "$f" ]; then
		make_src
		size=$(stat -c %s "$tmp/mirror/$f")
		both dd if="$tmp/src" of="$f" bs=65536 seek=$((RANDOM * 7 % (size + 1))) \
			oflag=seek_bytes iflag=count_bytes count=$((1 + RANDOM % 70000)) \
			conv=notrunc status=none || return 1
	fi
	pick_file	# append
	f=$PICK
	if [ -n "$f" ]; then
		make_src
		both sh -c 'cat "$1" >>"$2"' sh "$tmp/src" "$f" || return 1
	fi
	pick_file	# truncate, up or down
	f=$PICK
	if [ -n "$f" ]; then
		size=$(stat -c %s "$tmp/mirror/$f")
		both truncate -s $((RANDOM % 2 ? size / 3 : size + RANDOM * 3)) "$f" || return 1
	fi
	pick_file	# rename, into a subdirectory sometimes
	f=$PICK
	if [ -n "$f" ]; then
		g="r$r"
		[ -d "$tmp/mirror/sub$((r % 3))" ] && [ $((RANDOM % 2)) = 0 ] && g="sub$((r % 3))/r$r"
		[ "$f" = "$g" ] || both mv "$f" "$g" || return 1
	fi
	pick_file	# rename over another file
	f=$PICK
	pick_file
	g=$PICK
	if [ -n "$f" ] && [ -n "$g" ] && [ "$f" != "$g" ]; then
		both mv -f "$f" "$g" || return 1
	fi
	pick_file	# write a temporary file, then replace a file with it
	f=$PICK
	if [ -n "$f" ]; then
		make_src
		echo "tmp$r" >>"$tmp/temps.$r"
		both cp "$tmp/src" "tmp$r" || return 1
		both mv -f "tmp$r" "$f" || return 1
	fi
	if [ $((RANDOM % 2)) = 0 ]; then	# unlink
		pick_file
		[ -z "$PICK" ] || both rm -f "$PICK" || return 1
	fi
	return 0
}

# Mount with the write log, run the rounds, unmount. Globals: devs, names.
run_workload() {	# run_workload SEED NDEV MKFS-OPTIONS...
	local seed=$1 ndev=$2 r i
	shift 2
	rm -rf "$tmp"/*.img "$tmp/log" "$tmp/mirror" "$tmp"/state.* "$tmp"/temps.* "$tmp/rounds"
	mkdir -p "$tmp/mnt" "$tmp/vmnt" "$tmp/mirror"
	: >"$tmp/rounds"
	devs=()
	for i in $(seq 1 "$ndev"); do
		truncate -s 1G "$tmp/d$i.img"
		devs+=("$tmp/d$i.img")
	done
	timeout 60 "$mkfs" -q -f -K "$@" "${devs[@]}" || { echo "mkfs.mfs failed"; return 1; }
	for i in $(seq 1 "$ndev"); do
		cp --sparse=always "$tmp/d$i.img" "$tmp/b$i.img"
	done
	# no timer commits: the fsyncs (and the unmount) decide the durable states
	MFS_WRITE_LOG=$tmp/log timeout 60 "$mfs" mount -o commit=86400 "${devs[@]}" "$tmp/mnt" ||
		{ echo "mount failed"; return 1; }
	RANDOM=$seed
	for r in $(seq 1 "$ROUNDS"); do
		one_round "$r" || { echo "round $r failed"; return 1; }
		durable_point "$r" || { echo "fsync of round $r failed"; return 1; }
	done
	# a last round nobody fsyncs: the unmount must make it durable
	r=$((ROUNDS + 1))
	one_round "$r" || { echo "round $r failed"; return 1; }
	snapshot "$tmp/mirror" >"$tmp/state.$r"
	timeout 120 "$mfs" umount "$tmp/mnt" || { echo "umount failed"; return 1; }
	snapshot "$tmp/mirror" >"$tmp/state.final"
}

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
