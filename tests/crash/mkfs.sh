#!/usr/bin/env bash
# Crash consistency of mkfs.mfs: log every write and flush of a mkfs run,
# rebuild the devices as they were at its crash points (tests/crash/replay:
# each device holds what its own flushes made durable) and classify each
# state with `mfs check --check-data-csum`: the old filesystem (if any, and
# only until its wipe is durable), no filesystem, the new one "torn" (the
# only errors are superblock copies or devices not written yet: the crash
# came while mkfs wrote them), or the new one clean. In crash point order
# the durable states only move forward through those (old, none, torn,
# clean), the last point holds the clean new filesystem, and mkfs returns
# with every write durable. Each point is also replayed with a random part
# of the writes in flight landing, device by device: then anything from the
# point's own class onwards is allowed, and a half-wiped old filesystem
# while the wipe is in flight; nothing else. One TAP line per configuration.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/crash/lib.bash
. "$top/tests/crash/lib.bash"
crash_setup mkfs

fsid_of() {	# prints the fsid in the superblock of an image, if any
	"$mfs" inspect-internal dump-super "$1" 2>/dev/null | awk '$1 == "fsid" { print $2; exit }'
}

# Succeeds when every error on stdin is one that superblocks not written
# yet explain: a missing superblock copy or device, or, with a device
# missing, something that could not be read (Input/output error: its copy
# lies on a missing device or its rebuild from parity needs one), and the
# blocks of a tree whose root could not be read found in no tree.
only_torn() {
	awk '
	/^ERROR: / { n++; line[n] = $0 }
	/^ERROR: device [0-9]+ is missing/ { nmissing++ }
	/^ERROR: [a-z]+ tree root cannot be read: Input\/output error$/ { unread[$2] = 1 }
	END {
		if (!n)
			exit 1
		for (i = 1; i <= n; i++) {
			l = line[i]
			if (l ~ /^ERROR: superblock copy [0-9]+ at [0-9]+ on device [0-9]+ \(.*\) is missing$/ ||
			    l ~ /^ERROR: device [0-9]+ is missing/ || l ~ /^ERROR: name it with -o device=/)
				continue
			if (nmissing && l ~ /: Input\/output error$/)
				continue
			if (match(l, /\(owner [a-z]+ tree\) is not referenced by any tree$/)) {
				split(substr(l, RSTART), f, / /)
				if (f[2] in unread)
					continue
			}
			exit 1
		}
	}'
}

# What `mfs check` says about the images: "none", or "clean UUID",
# "torn UUID" (every error one that superblocks not written yet explain) or
# "bad UUID". When the check cannot even say which filesystem it found (it
# could not open it), the images' superblocks do: torn if only some of them
# carry the new filesystem's. What the check said is left in $tmp/check.all.
classify() {
	local out err rc uuid img fsid first="" with_new=0
	out=$(timeout 60 "$mfs" check --check-data-csum "$@" 2>"$tmp/check.err")
	rc=$?
	err=$(cat "$tmp/check.err")
	{ echo "$out"; echo "$err"; } >"$tmp/check.all"
	uuid=$(echo "$out" | awk '$1 == "UUID:" { print $2; exit }')
	if [ $rc -eq 0 ]; then
		echo "clean $uuid"
		return
	fi
	if echo "$err" | grep -q "not a valid mfs filesystem"; then
		echo none
		return
	fi
	for img in "$@"; do
		fsid=$(fsid_of "$img")
		[ "$fsid" = "$new" ] && with_new=$((with_new + 1))
		[ -n "$first" ] || first=$fsid
	done
	if [ -z "$uuid" ]; then
		uuid=$first
		[ "$with_new" -eq 0 ] || uuid=$new
	fi
	if [ $rc -eq 1 ] && echo "$err" | only_torn; then
		echo "torn $uuid"
	elif [ $rc -eq 1 ] && [ "$with_new" -gt 0 ] && [ "$with_new" -lt $# ] &&
	     echo "$err" | grep -q "^ERROR: cannot open filesystem on .*: Input/output error$"; then
		echo "torn $uuid"
	else
		echo "bad $uuid"
	fi
}

# The rank of a state, in the order a mkfs moves through them; 9: never allowed.
rank() {	# rank STATE
	case "$1" in
	"clean ${old:-no-old-fs}"|"torn ${old:-no-old-fs}"|"bad ${old:-no-old-fs}") echo 0 ;;
	none) echo 1 ;;
	"torn $new") echo 2 ;;
	"clean $new") echo 3 ;;
	*) echo 9 ;;
	esac
}

restore_before() {
	local i
	for i in $(seq 1 "$ndev"); do
		cp --sparse=always "$tmp/b$i.img" "$tmp/w$i.img"
	done
}

# run_config NAME NDEV OLDFS MKFS-OPTIONS...
run_config() {
	local name=$1 oldfs=$3 i k r s count state new old="" why="" n=0 nr=0
	local phase=0 rk
	ndev=$2
	devs=(); work=(); maps=()
	shift 3
	rm -f "$tmp"/*.img "$tmp/log"
	for i in $(seq 1 "$ndev"); do
		truncate -s 512M "$tmp/d$i.img"
		devs+=("$tmp/d$i.img")
		work+=("$tmp/w$i.img")
		maps+=(--map "$tmp/d$i.img=$tmp/w$i.img")
	done
	if [ "$oldfs" = 1 ]; then
		timeout 60 "$mkfs" -q -f -K "${devs[@]}" || { tap FAIL "$name: mkfs of the old filesystem failed"; return; }
		old=$(fsid_of "${devs[0]}")
	fi
	for i in $(seq 1 "$ndev"); do
		cp --sparse=always "$tmp/d$i.img" "$tmp/b$i.img"
	done
	if ! MFS_WRITE_LOG=$tmp/log timeout 60 "$mkfs" -q -f -K "$@" "${devs[@]}"; then
		tap FAIL "$name: mkfs.mfs failed"
		return
	fi
	new=$(fsid_of "${devs[0]}")
	log_stats "$tmp/log" || { tap FAIL "$name: replay --stats failed"; return; }
	count=$LOG_POINTS
	if [ "$LOG_UNFLUSHED" -ne 0 ]; then
		tap FAIL "$name: mkfs returned with $LOG_UNFLUSHED writes no flush made durable"
		return
	fi
	for k in $(choose_points "$count" "$count" "$name"); do
		restore_before
		if ! "$replay" "$tmp/log" "${maps[@]}" --upto "$k"; then
			why="crash point $k: replay failed"
			break
		fi
		n=$((n + 1))
		state_replayed
		state=$(classify "${work[@]}")
		rk=$(rank "$state")
		if [ "$rk" -lt "$phase" ] || [ "$rk" -eq 9 ]; then
			why="crash point $k of $count: $state after a state of rank $phase (0 old, 1 none, 2 torn, 3 clean)"
			break
		fi
		phase=$rk
		for r in $(seq 1 "$REORDERS"); do
			s=$(reorder_seed "$name" "$k" "$r")
			restore_before
			if ! "$replay" "$tmp/log" "${maps[@]}" --upto "$k" --reorder "$s"; then
				why="crash point $k: replay --reorder $s failed"
				break 2
			fi
			nr=$((nr + 1))
			state_replayed
			state=$(classify "${work[@]}")
			rk=$(rank "$state")
			# the wipe of the old filesystem may be cut short
			if [ "$rk" -eq 9 ] || { [ "$rk" -lt "$phase" ] && [ "$phase" -gt 1 ]; } ||
			   { [ "$rk" -eq 0 ] && [ "$phase" -ne 0 ]; }; then
				why="crash point $k + reorder $s: $state, but the durable state there has rank $phase"
				break 2
			fi
		done
	done
	if [ -z "$why" ] && [ "$phase" -ne 3 ]; then
		why="the last crash point ($count) holds no clean filesystem"
	fi
	[ -n "$why" ] || why=$(too_few_states "$n" 1)
	if [ -z "$why" ]; then
		tap OK "$name: $n of $((count + 1)) crash points and $nr reordered states, each old, none, torn or clean in order"
	else
		tap FAIL "$name: $why"
		grep . "$tmp/check.all" 2>/dev/null | sed 's/^/# /' | head -20 >&2
	fi
}

if [ ! -x "$replay" ] || [ ! -x "$mkfs" ]; then
	echo "not ok 1 - crash tools not built (run scripts/build.sh)"
	echo "1..1"
	exit 1
fi

crash_mode_banner mkfs.sh "every crash point (a mkfs makes few), $REORDERS reordering(s) each"
run_config "mkfs -d raid5 -m raid1, 3 devices" 3 0 -d raid5 -m raid1
run_config "mkfs -d single -m dup, 1 device" 1 0 -d single -m dup
run_config "mkfs -d raid1 -m raid1, 2 devices" 2 0 -d raid1 -m raid1
run_config "mkfs -d raid6 -m raid6, 4 devices" 4 0 -d raid6 -m raid6
run_config "mkfs -d raid10 -m raid1c3, 4 devices, over an old mfs" 4 1 -d raid10 -m raid1c3
run_config "mkfs -d raid5 -m raid5 -n 4096, 3 devices, over an old mfs" 3 1 -d raid5 -m raid5 -n 4096
crash_summary mkfs.sh
echo "1..$tests"
[ $failures -eq 0 ]
