#!/usr/bin/env bash
# The whole test suite: unit tests, bats CLI tests (two files at a time,
# MFS_BATS_JOBS), crash-replay tests (two at a time, MFS_CRASH_JOBS), the
# fault-injection sweep, the fsck corpus (two cases at a time,
# MFS_FSCK_JOBS), the unit tests again built with ASan+UBSan with the image fuzzer's corpus and
# regression inputs replayed (tests/fuzz/: each once and 300 fixed
# mutants of each) and a sample of them as image files given to the daemon
# and the commands (tests/security/crafted.sh), and the ThreadSanitizer
# race test.
# Every runner has a time limit and its TAP plan is compared with the
# results it printed, so a hang, a crash or a test that never ran is a
# named failure. Ends with "N passed, N failed, N skipped".
set -u
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Time limits in seconds, per runner (one bats file, one unit binary, ...).
TIMEOUT_UNIT=${MFS_TIMEOUT_UNIT:-300}
TIMEOUT_BATS=${MFS_TIMEOUT_BATS:-3600}
TIMEOUT_CRASH=${MFS_TIMEOUT_CRASH:-3600}
TIMEOUT_FAULT=${MFS_TIMEOUT_FAULT:-900}
TIMEOUT_TSAN=${MFS_TIMEOUT_TSAN:-1800}

passed=0
failed=0
skipped=0
failures=()

# runner_failed NAME WHY: the runner as a whole failed, once.
runner_failed() {
	failed=$((failed + 1))
	failures+=("$1: $2")
}

# tally NAME LOG RC: count the TAP lines of one runner's LOG ("ok",
# "ok ... # skip", "not ok"). The runner fails as a whole, once, when it
# timed out, printed no plan or more than one, ran no test, printed another
# number of results than its plan says, or exited non-zero with no failing
# line.
tally() {
	local name=$1 log=$2 rc=$3 ok notok skip plans plan seen

	skip=$(grep -ciE '^ok\b.*#[[:space:]]*skip\b' "$log" || true)
	ok=$(($(grep -cE '^ok\b' "$log" || true) - skip))
	notok=$(grep -cE '^not ok\b' "$log" || true)
	passed=$((passed + ok))
	failed=$((failed + notok))
	skipped=$((skipped + skip))
	seen=$((ok + notok + skip))
	if [ "$notok" -gt 0 ]; then
		failures+=("$name: $(grep -E '^not ok\b' "$log" | head -5 | tr '\n' ';')")
	fi
	plans=$(grep -E '^1\.\.[0-9]+' "$log" || true)
	plan=$(sed -nE '1s/^1\.\.([0-9]+).*/\1/p' <<<"$plans")
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		runner_failed "$name" "timed out ($seen results before it was stopped)"
	elif [ -z "$plans" ]; then
		runner_failed "$name" "no TAP plan (exit status $rc, $seen results)"
	elif [ "$(wc -l <<<"$plans")" -ne 1 ]; then
		runner_failed "$name" "more than one TAP plan"
	elif [ "$plan" -eq 0 ]; then
		runner_failed "$name" "runs no test"
	elif [ "$seen" -ne "$plan" ]; then
		runner_failed "$name" "planned $plan tests, $seen reported"
	elif [ "$rc" -ne 0 ] && [ "$notok" -eq 0 ]; then
		runner_failed "$name" "exited $rc"
	fi
}

# run_tap NAME SECONDS CMD...: run one TAP producer with a time limit
# (TERM, then KILL 30 s later), show its output and tally it.
run_tap() {
	local name=$1 secs=$2 log rc
	shift 2

	log=$(mktemp)
	rc=0
	timeout -k 30 "$secs" "$@" >"$log" 2>&1 || rc=$?
	cat "$log"
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		echo "# $name: stopped after ${secs}s"
	fi
	tally "$name" "$log" "$rc"
	rm -f "$log"
}

# unit_tests: the unit test programs Makefile.am lists in UNIT_TESTS.
unit_tests() {
	awk '/^UNIT_TESTS[ \t]*=/ { on = 1; sub(/^[^=]*=/, "") }
	     on { more = sub(/\\[ \t]*$/, ""); n = split($0, w); for (i = 1; i <= n; i++) print w[i]
		  if (!more) on = 0 }' "$top/Makefile.am"
}

# run_units BUILDDIR PREFIX: every listed unit test, from BUILDDIR; one
# that was not built fails.
run_units() {
	local dir=$1 prefix=$2 t list

	list=$(unit_tests)
	if [ -z "$list" ]; then
		runner_failed "$prefix" "no UNIT_TESTS in Makefile.am"
		return
	fi
	for t in $list; do
		if [ ! -x "$dir/$t" ]; then
			runner_failed "$prefix/$(basename "$t")" "not built ($dir/$t missing)"
			continue
		fi
		run_tap "$prefix/$(basename "$t")" "$TIMEOUT_UNIT" "$dir/$t"
	done
}

# Bats files run BATS_JOBS at a time, the crash replay drivers CRASH_JOBS
# at a time (each test and driver works in its own directory with its own
# registry, loop devices and mounts); 1: one after the other.
BATS_JOBS=${MFS_BATS_JOBS:-2}
CRASH_JOBS=${MFS_CRASH_JOBS:-2}

# lane DIR SECONDS CMD FILE...: run "CMD FILE" for each FILE no other lane
# has taken yet (a mkdir in DIR claims it), its output and exit status
# into DIR.
lane() {
	local dir=$1 secs=$2 cmd=$3 t name rc start
	shift 3

	for t in "$@"; do
		name=$(basename "$t")
		mkdir "$dir/$name.taken" 2>/dev/null || continue
		rc=0
		start=$SECONDS
		# shellcheck disable=SC2086
		timeout -k 30 "$secs" $cmd "$t" >"$dir/$name.log" 2>&1 || rc=$?
		echo "$rc" >"$dir/$name.rc"
		echo $((SECONDS - start)) >"$dir/$name.secs"
	done
}

# run_lanes JOBS SECONDS PREFIX CMD FILE...: "CMD FILE" for every FILE,
# JOBS at a time: each lane takes the next file not yet taken, the largest
# files first (roughly the longest, so that no lane is left with a long
# one at the end). The results are shown and tallied file by file in the
# order given once all lanes are done.
run_lanes() {
	local jobs=$1 secs=$2 prefix=$3 cmd=$4 dir i t name rc files=() order=() pids=()
	shift 4

	for t in "$@"; do
		[ -f "$t" ] && files+=("$t")
	done
	[ ${#files[@]} -gt 0 ] || return 0
	dir=$(mktemp -d)
	mapfile -t order < <(ls -S "${files[@]}")
	for ((i = 0; i < jobs; i++)); do
		lane "$dir" "$secs" "$cmd" "${order[@]}" &
		pids+=($!)
	done
	wait "${pids[@]}"
	for t in "${files[@]}"; do
		name=$(basename "$t")
		rc=$(cat "$dir/$name.rc" 2>/dev/null || echo 1)
		[ -f "$dir/$name.log" ] || : >"$dir/$name.log"
		cat "$dir/$name.log"
		# where the time goes: .ci/run must stay well under CI's limit
		echo "# $prefix/$name: $(cat "$dir/$name.secs" 2>/dev/null || echo "?") s"
		if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
			echo "# $prefix/$name: stopped after ${secs}s"
		fi
		tally "$prefix/$name" "$dir/$name.log" "$rc"
	done
	rm -rf "$dir"
}

run_bats_files() {
	run_lanes "$BATS_JOBS" "$TIMEOUT_BATS" cli "bats --tap" "$@"
}

summary() {
	if [ ${#failures[@]} -gt 0 ]; then
		echo "== failures"
		printf '  %s\n' "${failures[@]}"
	fi
	echo "# $((SECONDS / 60)) min $((SECONDS % 60)) s in all"
	echo "$passed passed, $failed failed, $skipped skipped"
}

# phase TITLE: a section of the run, with the time spent so far
phase() {
	echo "== $* (at $((SECONDS / 60)) min $((SECONDS % 60)) s)"
}

main() {
	local t

	cd "$top" || exit 1
	bash scripts/install-deps.sh >/dev/null || {
		echo "dependency install failed"
		echo "0 passed, 1 failed, 0 skipped"
		exit 1
	}

	phase "build"
	if ! bash scripts/build.sh; then
		echo "build failed"
		echo "0 passed, 1 failed, 0 skipped"
		exit 1
	fi
	export MFS_BUILD="$top/build"

	phase "unit tests"
	run_units build unit

	phase "crash replay tests ($CRASH_JOBS at a time)"
	run_lanes "$CRASH_JOBS" "$TIMEOUT_CRASH" crash bash tests/crash/*.sh

	phase "fault injection sweep (sampled)"
	run_tap "fault/sweep.sh" "$TIMEOUT_FAULT" bash tests/fault/sweep.sh

	phase "fsck corpus"
	run_tap "fsck/run.sh" "$TIMEOUT_CRASH" bash tests/fsck/run.sh

	phase "bats CLI tests ($BATS_JOBS at a time)"
	run_bats_files tests/cli/*.bats

	phase "unit tests under ASan+UBSan"
	if bash scripts/build.sh --sanitizers; then
		export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
		export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
		run_units build-san unit-asan
		phase "image fuzzing corpus under ASan+UBSan"
		run_tap "fuzz/replay" "$TIMEOUT_UNIT" build-san/tests/fuzz/fuzz-replay -m 300 \
			tests/fuzz/corpus tests/fuzz/regress
		# the failure paths of the day a disk dies are where leaks hide
		phase "fault sweep of the degraded configurations under ASan+UBSan (sampled)"
		run_tap "fault/sweep.sh (ASan, a member gone)" "$TIMEOUT_FAULT" \
			env MFS_BUILD="$top/build-san" MFS_FAULT_ONLY="with a member gone" \
			bash tests/fault/sweep.sh
		# degraded mounts read, write and rebuild through the daemon: a
		# UBSan stop there (8d29654) showed only as a dead mount
		phase "degraded mounts under ASan+UBSan"
		run_tap "cli/degraded.bats (ASan)" "$TIMEOUT_BATS" env MFS_BUILD="$top/build-san" \
			bats --tap tests/cli/degraded.bats
		# the regression inputs and two seeds that mount, unmutated (make
		# security-test runs every input and mutants)
		phase "crafted images against the daemon and commands under ASan+UBSan (sampled)"
		run_tap "security/crafted.sh" "$TIMEOUT_UNIT" env MFS_SAN_BUILD="$top/build-san" \
			MFS_SEC_MUTANTS=0 MFS_SEC_STRACE=1 \
			MFS_SEC_RUNS="check restore dump-tree scrub mount-ro mount-rw" \
			bash tests/security/crafted.sh tests/fuzz/regress \
			tests/fuzz/corpus/files-dup-4k-xxhash tests/fuzz/corpus/tree-levels-4k
	else
		runner_failed "unit-asan" "sanitizer build failed"
	fi

	phase "race tests under ThreadSanitizer"
	if bash scripts/build.sh --tsan; then
		run_tap "tsan/races.sh" "$TIMEOUT_TSAN" env MFS_TSAN_BUILD="$top/build-tsan" \
			bash tests/tsan/races.sh
	else
		runner_failed "tsan" "ThreadSanitizer build failed"
	fi

	summary
	[ "$failed" -eq 0 ]
}

# Sourced (tests/cli/runner.bats), it only defines the functions above.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	main "$@"
fi
