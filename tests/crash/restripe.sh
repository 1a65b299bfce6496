#!/usr/bin/env bash
# Crash consistency of the restriper: log every write and flush of a convert
# (raid0 -> raid5), of a convert of a chunk large enough to be checkpointed
# mid-copy, of a convert on small devices that replaces chunks by
# several pieces each, of a device delete and of a replace (raid1, raid5), and of a delete
# and a replace of a member that is missing (every state opened degraded,
# check allowed to name only that member as missing), and rebuild the
# devices at the log's crash points (tests/crash/replay: each device holds
# what its own flushes made durable), each also with random parts of the
# writes in flight landing. Every state must pass `mfs check
# --check-data-csum` and, mounted read-only, hold exactly the tree written
# before the operation began (file contents and sizes, the directory, the
# symlink, the xattrs: the operation changes none of them). Mounted
# read-write, a state must finish the operation if it had begun (the
# offline status says it is running or paused, or the layout has moved)
# and then show exactly the final layout (the profile of each block group
# type and the devices, by devid and image), or else show the initial
# one; once the durable state of a crash point finishes the operation no
# later state may undo it; afterwards the tree is still the same and the
# check clean.
#
# lib.bash says which points (full or sampled mode). Full mode resumes
# every state. Sampled mode resumes the first state found mid-operation,
# the last one, every durable state inside a commit's superblock writes
# (some members behind the others: the mount catches them up; where a
# replace's target joins), and MFS_CRASH_RESUMES - 2 more drawn at
# random. One TAP line per configuration, with the states
# replayed and resumed; MFS_CRASH_ONLY=TEXT runs only the configurations
# whose name holds TEXT. Every engine run has a time limit, and the exit
# status says whether all passed.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/crash/lib.bash
. "$top/tests/crash/lib.bash"
crash_setup restripe
# crash points replayed per configuration in sampled mode (at least one per commit)
SAMPLE=${MFS_CRASH_SAMPLE:-10}
# states drawn at random to resume per configuration in sampled mode, plus 2
RESUMES=${MFS_CRASH_RESUMES:-3}

# The profiles of every block group type and the devices (devid:image
# number) of the filesystem mounted at $tmp/mnt, on one line.
layout() {
	local df show
	df=$(timeout 60 "$mfs" filesystem df --format json "$tmp/mnt") || return 1
	show=$(timeout 60 "$mfs" filesystem show --format json "$tmp/mnt") || return 1
	"$python" -c '
import json, os, re, sys
df = json.loads(sys.argv[1])["filesystem-df"]
show = json.loads(sys.argv[2])["filesystems"][0]["devices"]
profiles = sorted(set("%s:%s" % (e["bg-type"], e["bg-profile"])
		      for e in df if e["bg-type"] != "GlobalReserve"))
devices = sorted("%d:%s" % (d["devid"], re.sub(r"\D", "", os.path.basename(d["path"])))
		 for d in show)
print(" ".join(profiles), "|", " ".join(devices))
' "$df" "$show"
}

# mount_images OPTIONS IMAGE...
mount_images() {
	local opts=$1${MOUNT_EXTRA:+,$MOUNT_EXTRA}
	shift
	timeout 60 "$mfs" mount -o "$opts" "$@" "$tmp/mnt" 2>"$tmp/mount.err" && return 0
	sed 's/^/# /' "$tmp/mount.err" >&2
	return 1
}

# The tree mounted at $tmp/mnt is exactly the one make_fs wrote.
tree_intact() {
	timeout 120 "$python" "$top/tests/crash/snapshot.py" "$tmp/mnt" >"$tmp/seen" 2>&1 &&
		cmp -s "$tmp/tree" "$tmp/seen" && return 0
	diff "$tmp/tree" "$tmp/seen" | sed 's/^/# /' | head -10 >&2
	return 1
}

# make_fs N PROFILE_ARGS...: N images with a tree on them (files of
# random bytes, a directory, a symlink, xattrs), its snapshot in
# $tmp/tree, the layout in $tmp/initial (DEV_SIZE: image size, 512M by
# default; FILL_MIB: one more file that big)
make_fs() {
	local n=$1 i
	shift
	rm -f "$tmp"/*.img "$tmp/registry"
	imgs=()
	for i in $(seq 1 "$n"); do
		truncate -s "${DEV_SIZE:-512M}" "$tmp/d$i.img"
		imgs+=("$tmp/d$i.img")
	done
	timeout 60 "$mkfs" -q -f -K "$@" "${imgs[@]}" || return 1
	mount_images rw "${imgs[@]}" || return 1
	for i in 1 2 3 4 5 6; do
		head -c $((i * 3))M /dev/urandom > "$tmp/mnt/file$i"
	done
	[ -n "${FILL_MIB:-}" ] && head -c "${FILL_MIB}M" /dev/urandom > "$tmp/mnt/filefill"
	mkdir "$tmp/mnt/dir" && echo small > "$tmp/mnt/dir/small" &&
		ln -s ../file2 "$tmp/mnt/dir/link" &&
		"$python" -c 'import os, sys
os.setxattr(sys.argv[1] + "/file1", "user.a", b"one")
os.setxattr(sys.argv[1] + "/dir", "user.b", b"two")' "$tmp/mnt" || return 1
	timeout 120 "$python" "$top/tests/crash/snapshot.py" "$tmp/mnt" >"$tmp/tree" || return 1
	layout >"$tmp/initial" || return 1
	timeout 60 "$mfs" umount "$tmp/mnt" || return 1
	for i in $(seq 1 "$n"); do
		cp --sparse=always "$tmp/d$i.img" "$tmp/b$i.img"
	done
}

# Check and mount read-only: clean, the tree intact. Prints why not.
# check_clean IMAGE...: mfs check --check-data-csum finds nothing, its
# output in out; with MISSING_DEVID set (a configuration whose operation
# removes a missing member), nothing but that member being missing and the
# copies on it unreadable
check_clean() {
	check_rc=0
	out=$(timeout 120 "$mfs" check --check-data-csum "$@" 2>&1) || check_rc=$?
	[ "$check_rc" -eq 0 ] && return 0
	[ -n "${MISSING_DEVID:-}" ] || return 1
	! echo "$out" | grep '^ERROR' |
		grep -vE "^ERROR: device $MISSING_DEVID is missing\$|\(on devid $MISSING_DEVID\): Input/output error\$" | grep -q .
}

verify_state() {	# verify_state IMAGE...
	local out
	if ! check_clean "$@"; then
		echo "mfs check --check-data-csum is not clean (exit status $check_rc)"
		{ echo "$out" | grep '^ERROR' || echo "$out" | tail -5; } | sed 's/^/# /' | head -10 >&2
		return 1
	fi
	mount_images ro "$@" || { echo "read-only mount failed"; return 1; }
	if ! tree_intact; then
		timeout 60 "$mfs" umount "$tmp/mnt"
		echo "the tree differs from the one written before the operation"
		return 1
	fi
	timeout 60 "$mfs" umount "$tmp/mnt" || { echo "umount failed"; return 1; }
}

# Mount read-write, let a begun operation finish, and require the final
# layout (the initial one only if it had not begun), the tree intact, and
# a clean check afterwards. Sets finished=1 when the final layout is
# there. Prints why not.
resume_state() {	# resume_state IMAGE...
	local i rc seen out paused=0
	finished=0
	mount_images rw "$@" || { echo "read-write mount failed"; return 1; }
	# the operation is running until it is done (status 0); one that stays
	# paused for 5 s was not resumed
	for i in $(seq 1 600); do
		out=$(timeout 60 "$mfs" balance status "$tmp/mnt" 2>&1)
		rc=$?
		[ $rc -eq 0 ] || [ $rc -eq 2 ] && break
		echo "$out" | grep -q " is paused" && paused=$((paused + 1))
		[ "$paused" -lt 25 ] || break
		sleep 0.2
	done
	seen=$(layout)
	if ! tree_intact; then
		timeout 60 "$mfs" umount "$tmp/mnt"
		echo "the tree differs after the resume"
		return 1
	fi
	timeout 120 "$mfs" umount "$tmp/mnt" || { echo "umount after the resume failed"; return 1; }
	if [ $rc -eq 2 ]; then
		echo "balance status failed on the mount: $(echo "$out" | head -1)"
		return 1
	fi
	if [ "$paused" -ge 25 ]; then
		echo "the operation stays paused after a read-write mount"
		return 1
	fi
	if [ "$i" -eq 600 ] && [ $rc -ne 0 ]; then
		echo "the resumed operation did not finish in 600 status polls"
		return 1
	fi
	[ "$seen" != "$(cat "$tmp/initial")" ] && begun=1
	if [ "$begun" = 1 ] && [ "$seen" != "$(cat "$tmp/final")" ]; then
		echo "resumed to '$seen', expected '$(cat "$tmp/final")'"
		return 1
	fi
	[ "$begun" = 1 ] && finished=1
	if ! check_clean "$@"; then
		echo "mfs check --check-data-csum is not clean after the resume (exit status $check_rc)"
		{ echo "$out" | grep '^ERROR' || echo "$out" | tail -5; } | sed 's/^/# /' | head -10 >&2
		return 1
	fi
}

# The state of crash point K in images PREFIX1.. (a copy of the durable
# one, maybe with in-flight writes landed): verified, and resumed when
# RESUME is 1, or is "mid" and the offline status says the operation is
# running or paused there. Prints why not.
check_state() {	# check_state K PREFIX RESUME
	local k=$1 prefix=$2 resume=$3 i mid imgs_s=()
	for i in $(seq 1 ${#imgs[@]}); do
		imgs_s+=("$tmp/$prefix$i.img")
	done
	verify_state "${imgs_s[@]}" || return 1
	timeout 60 "$mfs" balance status "${imgs_s[@]}" >/dev/null 2>&1
	case $? in
	0) mid=0 ;;
	1) mid=1 ;;
	*) echo "offline balance status failed"; return 1 ;;
	esac
	begun=$mid
	[ "$resume" = mid ] && resume=$mid
	[ "$resume" = 1 ] || return 0
	resume_state "${imgs_s[@]}" || return 1
	resumed=$((resumed + 1))
	resumed_mid=$((resumed_mid + mid))
	# in flight at one crash point, the commit that finishes may land or
	# not: only a durable state finishes the operation for the points after
	if [ "$finished" = 1 ]; then
		[ "$prefix" != s ] || done_at=${done_at:-$k}
	elif [ -n "$done_at" ]; then
		echo "the operation is undone, though the durable state of crash point $done_at finished it"
		return 1
	fi
	return 0
}

copy_work() {	# copy_work PREFIX
	local i
	for i in $(seq 1 ${#imgs[@]}); do
		cp --sparse=always "$tmp/w$i.img" "$tmp/$1$i.img"
	done
}

# The states sampled mode resumes besides the first one mid-operation: the
# last, every one inside a commit's superblock writes, and RESUMES - 2
# drawn from POINTS. (Which points lie inside superblock writes depends on
# the order the devices were flushed in, which varies from run to run: a
# draw among them would check other states each time.)
sampled_resumes() {	# sampled_resumes NAME COUNT POINTS
	echo "$2"
	torn_points | awk '{ print $1 }'
	echo "$3" | pick_some $((RESUMES > 2 ? RESUMES - 2 : 0)) "$1 resume"
}

run_config() {	# name, then the operation to log (run on the d*.img)
	local name=$1 count k r s i d prev=0 why="" n=0 nr=0 resume maps=() rmaps=()
	local points resumes
	shift
	rm -f "$tmp/log"
	resumed=0
	resumed_mid=0
	done_at=""
	if ! MFS_WRITE_LOG=$tmp/log timeout 600 "$@" >/dev/null 2>"$tmp/op.err"; then
		echo "# operation failed: $(head -3 "$tmp/op.err")"
		tap FAIL "$name: the operation failed"
		return
	fi
	# read from copies named by position, as the states are (a replace's
	# target need not be the image numbered as its position)
	for i in $(seq 1 ${#imgs[@]}); do
		cp --sparse=always "${imgs[i - 1]}" "$tmp/z$i.img"
	done
	if ! { mount_images ro "$tmp"/z[0-9]*.img && layout >"$tmp/final" &&
	       timeout 60 "$mfs" umount "$tmp/mnt"; }; then
		tap FAIL "$name: cannot read the final layout"
		return
	fi
	if cmp -s "$tmp/initial" "$tmp/final"; then
		tap FAIL "$name: the operation changed no layout: $(cat "$tmp/final")"
		return
	fi
	log_stats "$tmp/log" || { tap FAIL "$name: replay --stats failed"; return; }
	count=$LOG_POINTS
	if [ "$LOG_UNFLUSHED" -ne 0 ]; then
		tap FAIL "$name: the operation returned with $LOG_UNFLUSHED writes no flush made durable"
		return
	fi
	# the states are numbered by position in imgs; each image's copy from
	# before the operation is its b*.img
	for i in $(seq 1 ${#imgs[@]}); do
		d=${imgs[i - 1]}
		cp --sparse=always "$(dirname "$d")/b$(basename "$d" | tr -dc 0-9).img" "$tmp/w$i.img"
		maps+=(--map "$d=$tmp/w$i.img")
		rmaps+=(--map "$d=$tmp/x$i.img")
	done
	resumes=""
	if [ "$CRASH_MODE" = sampled ]; then
		resumes=$(sampled_resumes "$name" "$count" "$(choose_points "$count" "$SAMPLE" "$name")")
		# shellcheck disable=SC2086
		points=$(choose_points "$count" "$SAMPLE" "$name" $resumes)
	else
		points=$(choose_points "$count" "$SAMPLE" "$name")
	fi
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
		elif [ "$resumed_mid" -eq 0 ]; then
			resume=mid
		fi
		copy_work s
		if ! check_state "$k" s "$resume" >"$tmp/why"; then
			why="crash point $k of $count: $(cat "$tmp/why")"
			break
		fi
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
			if ! check_state "$k" x "$resume" >"$tmp/why"; then
				why="crash point $k of $count + reorder $s: $(cat "$tmp/why")"
				break 2
			fi
		done
	done
	[ -n "$why" ] || why=$(too_few_states "$n" 2)
	if [ -z "$why" ] && [ "$resumed_mid" -eq 0 ]; then
		why="no state resumed was in the middle of the operation"
	fi
	if [ -z "$why" ]; then
		tap OK "$name: $n of $((count + 1)) crash points and $nr reordered states clean and intact, $resumed resumed ($resumed_mid mid-operation) to '$(cat "$tmp/final")'"
	else
		tap FAIL "$name: $why (after $n crash points and $nr reordered states)"
	fi
	rm -f "$tmp"/[swxz]*.img
}

if [ ! -x "$replay" ] || [ ! -x "$mfs" ]; then
	echo "not ok 1 - crash tools not built (run scripts/build.sh)"
	echo "1..1"
	exit 1
fi

crash_mode_banner restripe.sh
name="convert raid0 -> raid5"
if ! wanted "$name"; then
	:
elif make_fs 3 -d raid0 -m raid1; then
	run_config "$name" "$mfs" balance start -q -dconvert=raid5 "${imgs[@]}"
else
	tap FAIL "$name: setup"
fi
# a data chunk of more than 200 MiB: its copy is checkpointed every 64 MiB
# (format BALANCE_CHUNK); a state between checkpoints goes on from the last
name="convert with checkpoints (a chunk past 64 MiB, single -> raid5)"
if ! wanted "$name"; then
	:
elif DEV_SIZE=1G FILL_MIB=150 make_fs 3 -d single -m raid1; then
	run_config "$name" "$mfs" balance start -q -dconvert=raid5 "${imgs[@]}"
else
	tap FAIL "$name: setup"
fi
# 3 x 256M with 138 MiB: the metadata chunk as DUP fits no device whole
name="convert in pieces (raid0 -> single, raid1 -> dup)"
if ! wanted "$name"; then
	:
elif DEV_SIZE=256M FILL_MIB=75 make_fs 3 -d raid0 -m raid1; then
	run_config "$name" "$mfs" balance start -q -f -dconvert=single -mconvert=dup "${imgs[@]}"
else
	tap FAIL "$name: setup"
fi
name="device delete"
if ! wanted "$name"; then
	:
elif make_fs 3 -d raid1 -m raid1; then
	run_config "$name" "$mfs" device delete -q 3 "${imgs[0]}"
else
	tap FAIL "$name: setup"
fi
# replace_config NAME DATA-PROFILE DEVID: a replace of member DEVID of 3
# onto a fourth image, blank before the operation
replace_config() {
	if ! wanted "$1"; then
		:
	elif make_fs 3 -d "$2" -m raid1; then
		truncate -s 512M "$tmp/d4.img" "$tmp/b4.img"
		imgs+=("$tmp/d4.img")
		# the target joins the registry: not the one the replayed states are
		# opened with, where its final state would be taken for their member
		cp "$tmp/registry" "$tmp/op-registry"
		run_config "$1" env MFS_REGISTRY="$tmp/op-registry" \
			"$mfs" replace start -K "$3" "$tmp/d4.img" "${imgs[0]}"
	else
		tap FAIL "$1: setup"
	fi
}
replace_config "replace" raid1 2
# raid5: only the target is written, the source's column copied alone
# (a clean record: ops/relocate.c source_column)
replace_config "replace raid5" raid5 3
# delete of a missing member: the fourth image is gone before the
# operation, every state is opened without it (-o degraded), and it may
# show only as missing in check until the delete has removed it
name="device delete missing"
if ! wanted "$name"; then
	:
elif make_fs 4 -d raid1 -m raid1; then
	rm -f "$tmp/d4.img" "$tmp/b4.img"
	imgs=("$tmp/d1.img" "$tmp/d2.img" "$tmp/d3.img")
	MOUNT_EXTRA=degraded MISSING_DEVID=4
	if mount_images ro "${imgs[@]}" && layout >"$tmp/initial" && timeout 60 "$mfs" umount "$tmp/mnt"; then
		run_config "$name" "$mfs" device delete -q missing "${imgs[0]}"
	else
		tap FAIL "$name: setup"
	fi
	MOUNT_EXTRA="" MISSING_DEVID=""
else
	tap FAIL "$name: setup"
fi
# replace_missing_config NAME DATA-PROFILE: replace of a missing member:
# the same, onto a fifth image, blank before (raid5: the missing column
# rebuilt column-wise)
replace_missing_config() {
	if ! wanted "$1"; then
		:
	elif make_fs 4 -d "$2" -m raid1; then
		rm -f "$tmp/d4.img" "$tmp/b4.img"
		truncate -s 512M "$tmp/d5.img" "$tmp/b5.img"
		imgs=("$tmp/d1.img" "$tmp/d2.img" "$tmp/d3.img" "$tmp/d5.img")
		MOUNT_EXTRA=degraded MISSING_DEVID=4
		cp "$tmp/registry" "$tmp/op-registry"
		if mount_images ro "${imgs[@]:0:3}" && layout >"$tmp/initial" &&
			timeout 60 "$mfs" umount "$tmp/mnt"; then
			run_config "$1" env MFS_REGISTRY="$tmp/op-registry" \
				"$mfs" replace start -K missing "$tmp/d5.img" "${imgs[0]}"
		else
			tap FAIL "$1: setup"
		fi
		MOUNT_EXTRA="" MISSING_DEVID=""
	else
		tap FAIL "$1: setup"
	fi
}
replace_missing_config "replace missing" raid1
replace_missing_config "replace missing raid5" raid5
crash_summary restripe.sh
echo "1..$tests"
[ $failures -eq 0 ]
