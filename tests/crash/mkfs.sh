#!/usr/bin/env bash
# Crash consistency of mkfs.mfs: log every write and flush of a mkfs run,
# rebuild the devices as they were at each flush point and require that
# `mfs check` finds either no filesystem (the old one, if any, is gone for
# good once the wipe is durable) or a clean new one, and that the new one
# never disappears again. The last flush point must hold a clean filesystem.
# A second pass lands a random part of the writes in flight after each flush
# point: then a filesystem whose superblocks were only partly written
# ("torn": the only errors are missing superblock copies or devices) is
# allowed too, and so is a half-wiped old filesystem before the wipe's
# flush; anything else is not. One TAP line per configuration and pass.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${MFS_BUILD:-$top/build}
mfs=$build/mfs
mkfs=$build/mkfs.mfs
replay=$build/tests/crash/replay
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mfs-crash-mkfs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# only the images named here: no registry entries from elsewhere
export MFS_REGISTRY=$tmp/registry

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

fsid_of() {	# prints the fsid in the superblock of an image, if any
	"$mfs" inspect-internal dump-super "$1" 2>/dev/null | awk '$1 == "fsid" { print $2; exit }'
}

# Succeeds when every error on stdin is a missing superblock copy, a missing
# device or a tree block copy unreadable because it lies on a missing device.
only_torn() {
	awk '
	/^ERROR: / { n++; line[n] = $0 }
	/^ERROR: device [0-9]+ is missing/ { missing[$3] = 1 }
	END {
		if (!n)
			exit 1
		for (i = 1; i <= n; i++) {
			l = line[i]
			if (l ~ /^ERROR: superblock copy [0-9]+ at [0-9]+ on device [0-9]+ \(.*\) is missing$/ ||
			    l ~ /^ERROR: device [0-9]+ is missing/ || l ~ /^ERROR: name it with -o device=/)
				continue
			if (match(l, /: copy [0-9]+ \(on devid [0-9]+\): Input\/output error$/)) {
				split(substr(l, RSTART), f, /[ )]/)
				if (f[6] in missing)
					continue
			}
			exit 1
		}
	}'
}

# What `mfs check` says about the work images: "none", "clean UUID",
# "torn" or "bad".
classify() {
	local out err rc
	out=$(timeout 60 "$mfs" check "$@" 2>"$tmp/check.err")
	rc=$?
	err=$(cat "$tmp/check.err")
	if [ $rc -eq 0 ]; then
		echo "clean $(echo "$out" | awk '$1 == "UUID:" { print $2; exit }')"
	elif echo "$err" | grep -q "not a valid mfs filesystem"; then
		echo none
	elif [ $rc -eq 1 ] && echo "$err" | only_torn; then
		echo torn
	else
		echo "bad $(echo "$out" | awk '$1 == "UUID:" { print $2; exit }')"
		{ echo "$out"; echo "$err"; } | sed 's/^/# /' | head -20 >&2
	fi
}

# run_config NAME NDEV OLDFS MKFS-OPTIONS...
run_config() {
	local name=$1 ndev=$2 oldfs=$3 i k count state phase new old="" why=""
	local devs=() work=() maps=()
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
	count=$("$replay" "$tmp/log" "${maps[@]}" --count) || { tap FAIL "$name: replay --count failed"; return; }
	# phase: 0 = old fs may still be there, 1 = no fs allowed, 2 = new fs seen
	phase=0
	[ "$oldfs" = 1 ] || phase=1
	for k in $(seq 0 "$count"); do
		for i in $(seq 1 "$ndev"); do
			cp --sparse=always "$tmp/b$i.img" "$tmp/w$i.img"
		done
		if ! "$replay" "$tmp/log" "${maps[@]}" --upto "$k"; then
			why="flush point $k: replay failed"
			break
		fi
		state=$(classify "${work[@]}")
		case "$state" in
		"clean $new")
			phase=2 ;;
		"clean ${old:-no-old-fs}")
			if [ $phase -gt 0 ] || [ -z "$old" ]; then
				why="flush point $k: the old filesystem is back"
				break
			fi ;;
		none)
			if [ $phase -eq 2 ]; then
				why="flush point $k: the new filesystem vanished"
				break
			fi
			phase=1 ;;
		*)
			why="flush point $k of $count: not clean ($state)"
			break ;;
		esac
	done
	if [ -z "$why" ] && [ $phase -ne 2 ]; then
		why="the last flush point ($count) holds no clean filesystem"
	fi
	if [ -z "$why" ]; then
		tap OK "$name: $count flush points, each none or clean"
	else
		tap FAIL "$name: $why"
		return
	fi
	reorder_pass "$name" "$count"
}

# Each flush point K plus a random part of the writes up to the next flush.
reorder_pass() {	# reorder_pass NAME COUNT (after run_config's setup)
	local name=$1 count=$2 k r state why="" n=0
	for k in $(seq 0 $((count - 1))); do
		for r in 1 2 3 4; do
			for i in $(seq 1 "$ndev"); do
				cp --sparse=always "$tmp/b$i.img" "$tmp/w$i.img"
			done
			if ! "$replay" "$tmp/log" "${maps[@]}" --upto "$k" --reorder "$((k * 100 + r))"; then
				why="flush point $k: replay failed"
				break 2
			fi
			n=$((n + 1))
			state=$(classify "${work[@]}")
			case "$state" in
			"clean $new"|none|torn)
				;;
			"clean ${old:-no-old-fs}"|"bad ${old:-no-old-fs}")
				# the wipe of the old filesystem may be cut short
				if [ "$k" -ne 0 ] || [ -z "$old" ]; then
					why="flush point $k + reorder $((k * 100 + r)): the old filesystem is back"
					break 2
				fi ;;
			*)
				why="flush point $k + reorder $((k * 100 + r)): $state"
				break 2 ;;
			esac
		done
	done
	if [ -z "$why" ]; then
		tap OK "$name, reordered: $n crash states none, torn or clean"
	else
		tap FAIL "$name, reordered: $why"
	fi
}

if [ ! -x "$replay" ] || [ ! -x "$mkfs" ]; then
	echo "not ok 1 - crash tools not built (run scripts/build.sh)"
	echo "1..1"
	exit 1
fi

run_config "mkfs -d raid5 -m raid1, 3 devices" 3 0 -d raid5 -m raid1
run_config "mkfs -d single -m dup, 1 device" 1 0 -d single -m dup
run_config "mkfs -d raid1 -m raid1, 2 devices" 2 0 -d raid1 -m raid1
run_config "mkfs -d raid6 -m raid6, 4 devices" 4 0 -d raid6 -m raid6
run_config "mkfs -d raid10 -m raid1c3, 4 devices, over an old mfs" 4 1 -d raid10 -m raid1c3
run_config "mkfs -d raid5 -m raid5 -n 4096, 3 devices, over an old mfs" 3 1 -d raid5 -m raid5 -n 4096
echo "1..$tests"
[ $failures -eq 0 ]
