#!/usr/bin/env bash
# Load: tests/load/mfs-stress runs on a mounted mfs for LOAD_TIME seconds
# per configuration while admin operations run one after another under
# it: scrub, full balance, convert of the data to another profile and
# back, device add, device delete and replace, each restriping one held
# after its first chunk (scrub: its first step; MFS_TEST_PAUSE_AT),
# paused there, left paused for LOAD_PAUSE seconds of load and resumed
# to the end. Afterwards the stress tool's own read-back and model agree,
# `mfs check --check-data-csum` is clean, and after a remount the tree is
# exactly the model (every file, its sha256, xattrs, hard links) and the
# fill files written before the load read back with their sha256.
#
# Prints, per configuration, a table: each admin operation, its time, its
# result, and the user-visible calls during it (how many, the slowest and
# which operation it was, the p99, the calls that failed); then max and
# p99 per operation type over the whole run. Ends with lines a script
# can read: "# load: seconds N, operations N, bytes verified N,
# failures N".
#
# LOAD_TIME (300) seconds of load per configuration (the admin operation
# under way when it runs out is finished first); LOAD_CONFIGS ("raid1
# raid5 raid6"); LOAD_PROCS (4) stress processes; LOAD_SEED (1);
# LOAD_PAUSE (5) seconds an operation stays paused; LOAD_FILL_MIB (192)
# of files written before the load, which the restripes move;
# LOAD_IMG_SIZE (1G); LOAD_KEEP=1 keeps the work directory. A failing
# check leaves its images in the work directory and says so.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${MFS_BUILD:-$top/build}
mfs=$build/mfs
mkfs=$build/mkfs.mfs
stress=$build/tests/load/mfs-stress
LOAD_TIME=${LOAD_TIME:-300}
LOAD_CONFIGS=${LOAD_CONFIGS:-"raid1 raid5 raid6"}
LOAD_PROCS=${LOAD_PROCS:-4}
LOAD_SEED=${LOAD_SEED:-1}
LOAD_PAUSE=${LOAD_PAUSE:-5}
LOAD_FILL_MIB=${LOAD_FILL_MIB:-192}
LOAD_IMG_SIZE=${LOAD_IMG_SIZE:-1G}
# a single call slower than this is a hang (mfs-stress -H)
LOAD_HANG=${LOAD_HANG:-300}
python=/usr/bin/python3
[ -x "$python" ] || python=python3

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mfs-load.XXXXXX")
mnt=$tmp/mnt
export MFS_REGISTRY=$tmp/registry
export MFS_LOG=$tmp/daemon.log
stress_pid=""
keep=${LOAD_KEEP:-}

cleanup() {
	if [ -n "$stress_pid" ]; then
		kill "$stress_pid" 2>/dev/null
		wait "$stress_pid" 2>/dev/null
	fi
	if mountpoint -q "$mnt" 2>/dev/null; then
		timeout 120 "$mfs" umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null
	fi
	if [ -n "$keep" ]; then
		echo "# work directory kept: $tmp"
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$mnt"

total_secs=0
total_ops=0
total_bytes=0
failures=0

now() {
	date +%s.%N
}

note() {
	echo "# $*"
}

fail() {
	failures=$((failures + 1))
	keep=1
	echo "FAIL: $*"
}

# wait_until SECONDS CMD...: poll CMD until it succeeds; the bound is there
# for a hang, to fail rather than wait for ever
wait_until() {
	local end=$((SECONDS + $1))

	shift
	until "$@"; do
		if ((SECONDS >= end)); then
			echo "timed out waiting for: $*" >&2
			return 1
		fi
		sleep 0.1
	done
}

balance_done() {
	"$mfs" balance status "$mnt" >/dev/null 2>&1
}

balance_paused() {
	"$mfs" balance status "$mnt" 2>/dev/null | head -n 1 | grep -q ' is paused$'
}

restripe_requested() {
	"$mfs" balance status "$mnt" 2>/dev/null | head -n 1 | grep -qE ', (pause|cancel) requested$'
}

scrub_state() {
	"$mfs" scrub status "$mnt" 2>/dev/null | awk '$1 == "Status:" { $1 = ""; print substr($0, 2) }'
}

scrub_requested() {
	[ "$(scrub_state)" = "running, pause requested" ]
}

scrub_over() {
	case $(scrub_state) in
	finished|aborted|paused|"") return 0 ;;
	esac
	return 1
}

# held_or_done FILE DONE-CMD: the operation is held at FILE's point, or it
# has ended without getting there
held_or_done() {
	[ -e "$1.held" ] || "$2"
}

# members: the image paths of the mounted filesystem's members
members() {
	"$mfs" filesystem show "$mnt" | awk '$1 == "devid" { print $NF }'
}

mount_fs() {	# mount_fs OPTS
	local opts=$1

	# shellcheck disable=SC2046
	MFS_TEST_PAUSE_AT="restripe-copied:$tmp/hold,scrub-step:$tmp/hold-scrub" \
		timeout 120 "$mfs" mount -o "$opts" $(cat "$tmp/devs") "$mnt" 2>>"$tmp/admin.err"
}

# The windows file for mfs-stress report: START END RESULT NAME
window() {	# window START RESULT NAME
	echo "$1 $(now) $2 $3" >>"$tmp/windows"
}

# run_admin NAME CMD...: CMD in the foreground, as one window
run_admin() {
	local name=$1 t0 rc=0
	shift
	t0=$(now)
	timeout 1800 "$@" >"$tmp/op.out" 2>"$tmp/op.err" || rc=$?
	if [ $rc -eq 0 ]; then
		window "$t0" ok "$name"
	else
		window "$t0" "failed($rc)" "$name"
		fail "$name: $* exited $rc: $(grep -m2 -v '^$' "$tmp/op.err" | tr '\n' ' ')"
	fi
	return $rc
}

# last_chunk_held: the operation is held at the last chunk it has to
# move ("K out of about N chunks balanced", the held one not among the K)
last_chunk_held() {
	"$mfs" balance status "$mnt" 2>/dev/null |
		awk '$2 == "out" && $3 == "of" && $4 == "about" { last = ($1 + 1 >= $5) }
		     END { exit !last }'
}

# restripe NAME CMD...: a background restripe (balance, convert, delete,
# replace) held after its first chunk, paused there, left paused under
# load for LOAD_PAUSE s, resumed to the end, as one window. A restripe
# with less than one chunk to move ends before it could be held: a window
# without the pause ("ok-nopause"); one held at its only chunk finishes
# that chunk and ends, a pause asked for then finding nothing left to
# pause (as btrfs's: "ok-lastchunk").
restripe() {
	local name=$1 t0 rc=0 result=ok ctl=balance last=0
	shift
	[ "$1" = replace ] && ctl=replace
	t0=$(now)
	echo 1 >"$tmp/hold"
	if ! timeout 600 "$mfs" "$@" >"$tmp/op.out" 2>"$tmp/op.err"; then
		rm -f "$tmp/hold"
		window "$t0" failed "$name"
		fail "$name: mfs $* failed: $(grep -m2 -v '^$' "$tmp/op.err" | tr '\n' ' ')"
		return 1
	fi
	if ! wait_until 600 held_or_done "$tmp/hold" balance_done; then
		window "$t0" hang "$name"
		fail "$name: neither held nor done after 600 s: $("$mfs" balance status "$mnt" 2>&1 | head -2 | tr '\n' ' ')"
		rm -f "$tmp/hold" "$tmp/hold.held"
		return 1
	fi
	if [ ! -e "$tmp/hold.held" ]; then
		rm -f "$tmp/hold"
		result=ok-nopause
	else
		last_chunk_held && last=1
		timeout 600 "$mfs" "$ctl" pause "$mnt" >"$tmp/pause.out" 2>"$tmp/pause.err" &
		local pid=$!
		wait_until 600 restripe_requested || result=hang
		rm -f "$tmp/hold.held"
		wait "$pid" || rc=$?
		if [ $rc -ne 0 ] || [ "$result" = hang ]; then
			window "$t0" "pause($rc)" "$name"
			fail "$name: $ctl pause exited $rc: $(head -2 "$tmp/pause.err" | tr '\n' ' ')"
			return 1
		fi
		if [ $last = 1 ] && balance_done; then
			window "$t0" ok-lastchunk "$name"
			return 0
		fi
		if ! balance_paused; then
			window "$t0" notpaused "$name"
			fail "$name: not paused after the pause: $("$mfs" balance status "$mnt" 2>&1 | head -1)"
			return 1
		fi
		# the load goes on against the paused operation
		sleep "$LOAD_PAUSE"
		rc=0
		if [ "$ctl" = replace ]; then
			timeout 1800 "$mfs" replace resume "$mnt" >"$tmp/op.out" 2>"$tmp/op.err" || rc=$?
		else
			timeout 1800 "$mfs" balance resume "$mnt" >"$tmp/op.out" 2>"$tmp/op.err" || rc=$?
		fi
		if [ $rc -ne 0 ]; then
			window "$t0" "resume($rc)" "$name"
			fail "$name: $ctl resume exited $rc: $(grep -m2 -v '^$' "$tmp/op.err" | tr '\n' ' ')"
			return 1
		fi
	fi
	if ! wait_until 1800 balance_done; then
		window "$t0" hang "$name"
		fail "$name: still running 1800 s after the resume"
		return 1
	fi
	window "$t0" "$result" "$name"
}

# scrub_op: a scrub held after its first step, paused, resumed to the end
scrub_op() {
	local t0 rc=0 result=ok pid
	t0=$(now)
	echo 1 >"$tmp/hold-scrub"
	if ! timeout 600 "$mfs" scrub start "$mnt" >"$tmp/op.out" 2>"$tmp/op.err"; then
		rm -f "$tmp/hold-scrub"
		window "$t0" failed scrub
		fail "scrub start failed: $(head -2 "$tmp/op.err" | tr '\n' ' ')"
		return 1
	fi
	wait_until 600 held_or_done "$tmp/hold-scrub" scrub_over || { fail "scrub neither held nor done"; return 1; }
	if [ -e "$tmp/hold-scrub.held" ]; then
		timeout 600 "$mfs" scrub pause "$mnt" >"$tmp/pause.out" 2>"$tmp/pause.err" &
		pid=$!
		wait_until 600 scrub_requested || result=hang
		rm -f "$tmp/hold-scrub.held"
		wait "$pid" || rc=$?
		if [ $rc -ne 0 ] || [ "$result" = hang ] || [ "$(scrub_state)" != paused ]; then
			window "$t0" "pause($rc)" scrub
			fail "scrub pause exited $rc, state '$(scrub_state)': $(head -2 "$tmp/pause.err" | tr '\n' ' ')"
			return 1
		fi
		sleep "$LOAD_PAUSE"
		timeout 1800 "$mfs" scrub resume -B "$mnt" >"$tmp/op.out" 2>"$tmp/op.err" || rc=$?
	else
		rm -f "$tmp/hold-scrub"
		result=ok-nopause
		wait_until 1800 scrub_over
	fi
	if [ $rc -ne 0 ] || [ "$(scrub_state)" != finished ]; then
		window "$t0" "failed($rc)" scrub
		fail "scrub: exit $rc, state '$(scrub_state)': $(grep -m3 -iE 'error|uncorrect' "$tmp/op.out" "$tmp/op.err" | tr '\n' ' ')"
		return 1
	fi
	if grep -qE '^[[:space:]]*Uncorrectable:[[:space:]]*[1-9]' "$tmp/op.out"; then
		window "$t0" uncorrectable scrub
		fail "scrub found uncorrectable errors: $(grep -E 'Corrected|Uncorrectable' "$tmp/op.out" | tr '\n' ' ')"
		return 1
	fi
	window "$t0" "$result" scrub
}

# spare: an image not in the filesystem, blank
spare() {
	local i

	for i in $(seq 1 12); do
		if ! grep -qxF "$tmp/img$i" "$tmp/devs"; then
			rm -f "$tmp/img$i"
			truncate -s "$LOAD_IMG_SIZE" "$tmp/img$i"
			echo "$tmp/img$i"
			return
		fi
	done
}

# data_profiles: the profiles the data chunks have, e.g. "RAID5"
data_profiles() {
	"$mfs" filesystem df "$mnt" | awk -F'[ ,:]+' '$1 == "Data" { print $2 }' | sort -u | tr '\n' ' ' | sed 's/ $//'
}

# expect_after NAME WHAT: the outcome an operation must leave (a profile
# for a convert, "gone PATH" for a delete, "replaced SRC DST" for a replace)
expect_after() {
	local name=$1 got
	shift
	case $1 in
	gone)
		! members | grep -qxF "$2" || fail "$name: $2 is still a member after the delete" ;;
	replaced)
		if ! members | grep -qxF "$3" || members | grep -qxF "$2"; then
			fail "$name: members after the replace of $2 by $3: $(members | tr '\n' ' ')"
		fi ;;
	*)
		got=$(data_profiles)
		[ "$got" = "${1^^}" ] || fail "$name: data is $got, expected ${1^^}" ;;
	esac
}

save_members() {
	members >"$tmp/devs.new" && [ -s "$tmp/devs.new" ] && mv "$tmp/devs.new" "$tmp/devs"
}

# One admin operation, the Nth of the cycle, on configuration PROFILE
# (converting to and from OTHER).
admin_step() {	# admin_step N PROFILE OTHER
	local n=$1 profile=$2 other=$3 dev src
	case $((n % 7)) in
	0) scrub_op ;;
	1) restripe "balance (full)" balance start --bg --full-balance "$mnt" ;;
	2)
		restripe "convert data $profile -> $other" balance start --bg -dconvert="$other" "$mnt" &&
			expect_after convert "$other"
		;;
	3)
		dev=$(spare)
		run_admin "device add" "$mfs" device add -K -f "$dev" "$mnt" &&
			{ members | grep -qxF "$dev" || fail "device add: $dev is not a member"; }
		save_members
		;;
	4)
		src=$(head -n 1 "$tmp/devs")
		restripe "device delete" device delete --bg "$src" "$mnt" &&
			expect_after "device delete" gone "$src"
		save_members
		;;
	5)
		src=$(head -n 1 "$tmp/devs")
		dev=$(spare)
		restripe "replace" replace start -K -f "$src" "$dev" "$mnt" &&
			expect_after replace replaced "$src" "$dev"
		save_members
		;;
	6)
		restripe "convert data $other -> $profile" balance start --bg -dconvert="$profile" "$mnt" &&
			expect_after convert "$profile"
		;;
	esac
}

# the fill files: written before the load, moved by every restripe
fill() {
	local i
	mkdir -p "$mnt/fill"
	for i in $(seq 1 4); do
		head -c $((LOAD_FILL_MIB / 4))M /dev/urandom >"$mnt/fill/f$i" || return 1
	done
	(cd "$mnt" && sha256sum fill/f*) >"$tmp/fill.sha256"
}

run_config() {	# run_config NAME NDEVS OTHER MKFS-ARGS...
	local name=$1 ndevs=$2 other=$3 i t0 rc n secs ops bytes out
	shift 3
	echo "== load: $name ($*, $ndevs devices), $LOAD_TIME s, $LOAD_PROCS processes, seed $LOAD_SEED"
	rm -f "$tmp"/img* "$tmp/registry" "$tmp/windows" "$tmp/stop" "$tmp/model"
	rm -rf "$tmp/lat"
	mkdir -p "$tmp/lat"
	: >"$tmp/devs"
	for i in $(seq 1 "$ndevs"); do
		truncate -s "$LOAD_IMG_SIZE" "$tmp/img$i"
		echo "$tmp/img$i" >>"$tmp/devs"
	done
	# shellcheck disable=SC2046
	if ! timeout 120 "$mkfs" -q -f -K "$@" $(cat "$tmp/devs") >/dev/null 2>"$tmp/admin.err" ||
	   ! mount_fs rw || ! fill; then
		fail "$name: setup: $(head -3 "$tmp/admin.err" | tr '\n' ' ')"
		! mountpoint -q "$mnt" || timeout 120 "$mfs" umount "$mnt"
		return
	fi
	mkdir -p "$mnt/stress"
	"$stress" run -p "$LOAD_PROCS" -S "$LOAD_SEED" -s "$tmp/stop" -H "$LOAD_HANG" \
		-l "$tmp/lat" -m "$tmp/model" "$mnt/stress" >"$tmp/stress.out" 2>"$tmp/stress.err" &
	stress_pid=$!
	t0=$(now)
	# the load alone first, for comparison
	sleep $((LOAD_TIME / 10 > 5 ? LOAD_TIME / 10 : 5))
	window "$t0" ok "(none: the load alone)"
	n=0
	while [ "$(( $(date +%s) - ${t0%.*} ))" -lt "$LOAD_TIME" ] && kill -0 "$stress_pid" 2>/dev/null; do
		admin_step "$n" "$name" "$other"
		n=$((n + 1))
	done
	touch "$tmp/stop"
	rc=0
	wait "$stress_pid" || rc=$?
	stress_pid=""
	secs=$(awk '/^# mfs-stress:/ { for (i = 1; i <= NF; i++) if ($i == "in") print $(i + 1) }' "$tmp/stress.out")
	ops=$(awk '/^# mfs-stress:/ { for (i = 1; i <= NF; i++) if ($i == "operations") print $(i - 1) }' "$tmp/stress.out")
	bytes=$(awk '/^# process/ { s += $(NF - 2) } END { printf "%.0f\n", s }' "$tmp/stress.out")
	total_secs=$(awk -v a="$total_secs" -v b="${secs:-0}" 'BEGIN { print a + b }')
	total_ops=$((total_ops + ${ops:-0}))
	total_bytes=$((total_bytes + bytes))
	if [ $rc -ne 0 ]; then
		fail "$name: mfs-stress exited $rc: $(head -5 "$tmp/stress.err" | tr '\n' ' ')"
	fi
	note "$name: $n admin operations under the load"
	"$stress" report -w "$tmp/windows" "$tmp/lat" | sed 's/^/  /'
	save_members
	if ! timeout 300 "$mfs" umount "$mnt" 2>>"$tmp/admin.err"; then
		fail "$name: umount failed: $(tail -2 "$tmp/admin.err" | tr '\n' ' ')"
		umount -l "$mnt" 2>/dev/null
		return
	fi
	# shellcheck disable=SC2046
	if ! out=$(timeout 600 "$mfs" check --check-data-csum $(cat "$tmp/devs") 2>&1); then
		fail "$name: mfs check is not clean: $(echo "$out" | grep -m5 -E '^ERROR' | tr '\n' ' ')"
		cp -r --sparse=always "$tmp" "$tmp.failed-$name" 2>/dev/null
		note "images kept in $tmp.failed-$name"
	fi
	if ! mount_fs ro; then
		fail "$name: the read-only remount failed: $(tail -2 "$tmp/admin.err" | tr '\n' ' ')"
		return
	fi
	if out=$("$stress" verify -m "$tmp/model" "$mnt/stress" 2>&1); then
		echo "$out" | sed 's/^/  /'
		bytes=$(echo "$out" | awk '/verify:/ { for (i = 1; i <= NF; i++) if ($i == "bytes") print $(i - 1) }')
		total_bytes=$((total_bytes + ${bytes:-0}))
	else
		fail "$name: after the remount the tree is not the model: $(echo "$out" | head -5 | tr '\n' ' ')"
	fi
	if (cd "$mnt" && sha256sum --quiet -c "$tmp/fill.sha256") >"$tmp/sum.out" 2>&1; then
		total_bytes=$((total_bytes + LOAD_FILL_MIB / 4 * 4 * 1048576))
	else
		fail "$name: fill files differ after the remount: $(head -3 "$tmp/sum.out" | tr '\n' ' ')"
	fi
	if [ -s "$tmp/daemon.log" ]; then
		note "$name: daemon warnings: $(sort "$tmp/daemon.log" | uniq -c | sort -rn | head -5 | tr '\n' ';')"
		: >"$tmp/daemon.log"
	fi
	timeout 300 "$mfs" umount "$mnt" 2>>"$tmp/admin.err" || fail "$name: umount of the read-only mount failed"
	if [ "$failures" -eq 0 ]; then
		rm -f "$tmp"/img*
	fi
}

if [ ! -x "$stress" ] || [ ! -x "$mfs" ]; then
	echo "mfs or tests/load/mfs-stress not built (scripts/build.sh)"
	echo "# load: seconds 0, operations 0, bytes verified 0, failures 1"
	exit 1
fi
start=$(date +%s)
for c in $LOAD_CONFIGS; do
	case $c in
	raid1) run_config raid1 3 raid5 -d raid1 -m raid1 ;;
	raid5) run_config raid5 4 raid1 -d raid5 -m raid1 ;;
	raid6) run_config raid6 4 raid5 -d raid6 -m raid1c3 ;;
	*) fail "unknown configuration $c" ;;
	esac
done
echo "# load: seconds $total_secs, operations $total_ops, bytes verified $total_bytes, failures $failures ($(($(date +%s) - start)) s)"
[ "$failures" -eq 0 ]
