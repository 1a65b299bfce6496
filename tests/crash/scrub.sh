#!/usr/bin/env bash
# Crash consistency of a scrub repairing: a raid1 filesystem whose second
# copies of the file data (on devid 2) are damaged (tests/cli/
# corrupt-copies.py), scrubbed offline with every write and flush logged;
# the devices are rebuilt at the log's crash points (tests/crash/replay),
# each also with random parts of the writes in flight landing. Every
# state must:
#  - pass `mfs check --check-data-csum` but for checksum mismatches of
#    copy 2 on devid 2 (the damage not yet repaired there), and never more
#    of them than an earlier durable state had: a repair, once durable,
#    is not undone (also in a state where a member's superblock is a
#    generation behind);
#  - mounted read-only, hold exactly the tree written before the damage
#    (every read takes the good copy);
#  - when resumed (scrub resume if the scrub is left running, paused or
#    interrupted, else a new scrub), finish with nothing uncorrectable, a
#    clean check and the tree intact.
#
# lib.bash says which points (full or sampled mode; here MFS_CRASH_SAMPLE
# is 4: the suite's share is under a minute); full mode resumes every
# state, sampled mode the first and last state and MFS_CRASH_RESUMES (1)
# more drawn at random. One TAP line per configuration, and the "states
# replayed" comment (tests/reliability-report.sh).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/crash/lib.bash
. "$top/tests/crash/lib.bash"
crash_setup scrub
SAMPLE=${MFS_CRASH_SAMPLE:-4}
RESUMES=${MFS_CRASH_RESUMES:-1}

mount_images() {	# mount_images OPTIONS IMAGE...
	local opts=$1
	shift
	timeout 60 "$mfs" mount -o "$opts" "$@" "$tmp/mnt" 2>"$tmp/mount.err" && return 0
	sed 's/^/# /' "$tmp/mount.err" >&2
	return 1
}

tree_intact() {
	timeout 120 "$python" "$top/tests/crash/snapshot.py" "$tmp/mnt" >"$tmp/seen" 2>&1 &&
		cmp -s "$tmp/tree" "$tmp/seen" && return 0
	diff "$tmp/tree" "$tmp/seen" | sed 's/^/# /' | head -10 >&2
	return 1
}

# make_fs N: N raid1 images with files, a directory, a symlink and xattrs,
# the tree's snapshot in $tmp/tree; then the data's second copies on devid
# 2 damaged; the damaged images kept as b*.img
make_fs() {
	local n=$1 i
	rm -f "$tmp"/*.img "$tmp/registry"
	imgs=()
	for i in $(seq 1 "$n"); do
		truncate -s 512M "$tmp/d$i.img"
		imgs+=("$tmp/d$i.img")
	done
	timeout 60 "$mkfs" -q -f -K -d raid1 -m raid1 "${imgs[@]}" || return 1
	mount_images rw "${imgs[@]}" || return 1
	for i in 1 2 3 4 5 6; do
		head -c $((i * 3))M /dev/urandom >"$tmp/mnt/file$i"
	done
	mkdir "$tmp/mnt/dir" && echo small >"$tmp/mnt/dir/small" &&
		ln -s ../file2 "$tmp/mnt/dir/link" &&
		"$python" -c 'import os, sys
os.setxattr(sys.argv[1] + "/file1", "user.a", b"one")' "$tmp/mnt" || return 1
	timeout 120 "$python" "$top/tests/crash/snapshot.py" "$tmp/mnt" >"$tmp/tree" || return 1
	timeout 60 "$mfs" umount "$tmp/mnt" || return 1
	PATH=$build:$PATH timeout 120 "$python" "$top/tests/cli/corrupt-copies.py" --what data \
		--copy 2 "${imgs[0]}" 2 >"$tmp/corrupt.out" || return 1
	grep -qE '^damaged devid 2 data_sectors [1-9]' "$tmp/corrupt.out" || return 1
	for i in $(seq 1 "$n"); do
		cp --sparse=always "$tmp/d$i.img" "$tmp/b$i.img"
	done
}

# damage_left IMAGE...: the checksum mismatches check finds, all of them
# the damaged copies; prints their number (also where a member's
# superblock is a generation behind, inside a commit's superblock writes:
# check reads a stale member's copies of what was written before it fell
# behind, which is all the damaged data); fails on any other error
damage_left() {
	local out rc=0
	out=$(timeout 120 "$mfs" check --check-data-csum "$@" 2>&1) || rc=$?
	if [ $rc -ne 0 ] && echo "$out" | grep '^ERROR' | grep -vqE ': copy 2 \(on devid 2\): checksum mismatch$'; then
		echo "$out" | grep '^ERROR' | grep -vE ': copy 2 \(on devid 2\): checksum mismatch$' |
			head -5 | sed 's/^/# /' >&2
		return 1
	fi
	echo "$out" | grep -c '^ERROR'
	return 0
}

# resume_state IMAGE...: the scrub finished (resumed, or a new one), no
# uncorrectable error, check clean, the tree intact. Prints why not.
resume_state() {
	local state rc=0
	state=$(timeout 60 "$mfs" scrub status "$@" 2>/dev/null | awk '$1 == "Status:" { print $2 }')
	case $state in
	running*|paused|interrupted|aborted)
		timeout 300 "$mfs" scrub resume -B "$@" >"$tmp/scrub.out" 2>&1 || rc=$? ;;
	*)
		timeout 300 "$mfs" scrub start -B "$@" >"$tmp/scrub.out" 2>&1 || rc=$? ;;
	esac
	if [ $rc -ne 0 ]; then
		echo "the scrub ($state before) exited $rc: $(grep -m2 -E 'ERROR|Uncorrectable' "$tmp/scrub.out" | tr '\n' ' ')"
		return 1
	fi
	if ! timeout 120 "$mfs" check --check-data-csum "$@" >"$tmp/check.out" 2>&1; then
		echo "mfs check is not clean after the scrub: $(grep -m3 '^ERROR' "$tmp/check.out" | tr '\n' ' ')"
		return 1
	fi
	mount_images ro "$@" || { echo "read-only mount after the scrub failed"; return 1; }
	if ! tree_intact; then
		timeout 60 "$mfs" umount "$tmp/mnt"
		echo "the tree differs after the scrub"
		return 1
	fi
	timeout 60 "$mfs" umount "$tmp/mnt" || { echo "umount failed"; return 1; }
}

# check_state PREFIX RESUME: the state in PREFIX1.. verified (sets left,
# the damage still there), and resumed when RESUME is 1. Prints why not.
check_state() {
	local prefix=$1 resume=$2 i s=()
	for i in $(seq 1 ${#imgs[@]}); do
		s+=("$tmp/$prefix$i.img")
	done
	if ! left=$(damage_left "${s[@]}"); then
		echo "mfs check --check-data-csum finds more than the damaged copies"
		return 1
	fi
	mount_images ro "${s[@]}" || { echo "read-only mount failed"; return 1; }
	if ! tree_intact; then
		timeout 60 "$mfs" umount "$tmp/mnt"
		echo "the tree differs from the one written before the damage"
		return 1
	fi
	timeout 60 "$mfs" umount "$tmp/mnt" || { echo "umount failed"; return 1; }
	[ "$resume" = 1 ] || return 0
	resume_state "${s[@]}" || return 1
	resumed=$((resumed + 1))
}

copy_work() {	# copy_work PREFIX
	local i
	for i in $(seq 1 ${#imgs[@]}); do
		cp --sparse=always "$tmp/w$i.img" "$tmp/$1$i.img"
	done
}

run_config() {	# run_config NAME
	local name=$1 count k r s i prev=0 why="" n=0 nr=0 resume maps=() rmaps=() points resumes
	local last_left=""
	resumed=0
	rm -f "$tmp/log"
	if ! MFS_WRITE_LOG=$tmp/log timeout 600 "$mfs" scrub start -B "${imgs[@]}" >"$tmp/op.out" 2>&1; then
		echo "# scrub failed: $(grep -m3 -E 'ERROR|Uncorrectable' "$tmp/op.out")"
		tap FAIL "$name: the logged scrub failed"
		return
	fi
	if [ "$(damage_left "${imgs[@]}")" != 0 ]; then
		tap FAIL "$name: the logged scrub left damage or errors"
		return
	fi
	log_stats "$tmp/log" || { tap FAIL "$name: replay --stats failed"; return; }
	count=$LOG_POINTS
	if [ "$LOG_UNFLUSHED" -ne 0 ]; then
		tap FAIL "$name: the scrub returned with $LOG_UNFLUSHED writes no flush made durable"
		return
	fi
	for i in $(seq 1 ${#imgs[@]}); do
		cp --sparse=always "$tmp/b$i.img" "$tmp/w$i.img"
		maps+=(--map "${imgs[i - 1]}=$tmp/w$i.img")
		rmaps+=(--map "${imgs[i - 1]}=$tmp/x$i.img")
	done
	points=$(choose_points "$count" "$SAMPLE" "$name")
	resumes=$( { echo 0; echo "$count"; echo "$points" | pick_some "$RESUMES" "$name resume"; } | sort -n -u)
	for k in $points; do
		if ! "$replay" "$tmp/log" "${maps[@]}" --from "$prev" --upto "$k"; then
			why="crash point $k: replay failed"
			break
		fi
		prev=$k
		n=$((n + 1))
		state_replayed
		resume=0
		if [ "$CRASH_MODE" = full ] || echo "$resumes" | grep -qx "$k"; then
			resume=1
		fi
		copy_work s
		if ! check_state s "$resume" >"$tmp/why"; then
			why="crash point $k of $count: $(cat "$tmp/why")"
			break
		fi
		if [ -n "$last_left" ] && [ "$left" -gt "$last_left" ]; then
			why="crash point $k of $count: $left damaged sectors, $last_left at an earlier durable state: a repair undone"
			break
		fi
		last_left=$left
		for r in $(seq 1 "$REORDERS"); do
			s=$(reorder_seed "$name" "$k" "$r")
			copy_work x
			if ! "$replay" "$tmp/log" "${rmaps[@]}" --from "$k" --upto "$k" --reorder "$s"; then
				why="crash point $k: replay --reorder $s failed"
				break 2
			fi
			nr=$((nr + 1))
			state_replayed
			resume=0
			[ "$CRASH_MODE" = full ] && resume=1
			if ! check_state x "$resume" >"$tmp/why"; then
				why="crash point $k of $count + reorder $s: $(cat "$tmp/why")"
				break 2
			fi
		done
	done
	[ -n "$why" ] || why=$(too_few_states "$n" 1)
	if [ -z "$why" ] && [ "$last_left" != 0 ]; then
		why="the last crash point still holds $last_left damaged sectors"
	fi
	if [ -z "$why" ]; then
		tap OK "$name: $n of $((count + 1)) crash points and $nr reordered states clean but for the damage not yet repaired, never more of it, the tree intact, $resumed scrubbed to the end"
	else
		tap FAIL "$name: $why (after $n crash points and $nr reordered states)"
	fi
	rm -f "$tmp"/[swx]*.img
}

if [ ! -x "$replay" ] || [ ! -x "$mfs" ]; then
	echo "not ok 1 - crash tools not built (run scripts/build.sh)"
	echo "1..1"
	exit 1
fi

crash_mode_banner scrub.sh
name="scrub repairing raid1 (the data's second copies on devid 2 damaged)"
if ! wanted "$name"; then
	:
elif make_fs 2; then
	run_config "$name"
else
	tap FAIL "$name: setup: $(tail -1 "$tmp/corrupt.out" 2>/dev/null)"
fi
crash_summary scrub.sh
echo "1..$tests"
[ $failures -eq 0 ]
