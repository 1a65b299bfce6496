#!/usr/bin/env bash
# The whole test suite: unit tests, bats CLI tests, crash-replay tests, and the
# unit tests again built with ASan+UBSan. Ends with "N passed, N failed".
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
bash scripts/install-deps.sh >/dev/null || { echo "dependency install failed"; echo "0 passed, 1 failed"; exit 1; }

passed=0
failed=0
failures=()

# Count TAP lines of one runner; a runner that dies without a failing line counts as one failure.
tally() {
	local name=$1 log=$2 rc=$3 ok notok
	ok=$(grep -c '^ok ' "$log" || true)
	notok=$(grep -c '^not ok ' "$log" || true)
	passed=$((passed + ok))
	failed=$((failed + notok))
	if [ "$notok" -gt 0 ]; then
		failures+=("$name: $(grep '^not ok ' "$log" | head -5 | tr '\n' ';')")
	elif [ "$rc" -ne 0 ]; then
		failed=$((failed + 1))
		failures+=("$name: exited $rc")
	fi
}

run_tap() {
	local name=$1; shift
	local log
	log=$(mktemp)
	"$@" >"$log" 2>&1
	local rc=$?
	cat "$log"
	tally "$name" "$log" "$rc"
	rm -f "$log"
}

echo "== build"
if ! bash scripts/build.sh; then
	echo "build failed"
	echo "0 passed, 1 failed"
	exit 1
fi
export MFS_BUILD="$top/build"

echo "== unit tests"
for t in build/tests/unit/test-*; do
	[ -x "$t" ] || continue
	run_tap "unit/$(basename "$t")" "$t"
done

echo "== crash replay tests"
for t in tests/crash/*.sh; do
	[ -f "$t" ] || continue
	run_tap "crash/$(basename "$t")" bash "$t"
done

echo "== bats CLI tests"
if ls tests/cli/*.bats >/dev/null 2>&1; then
	run_tap "cli" bats --tap tests/cli
fi

echo "== unit tests under ASan+UBSan"
if bash scripts/build.sh --sanitizers; then
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
	export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
	for t in build-san/tests/unit/test-*; do
		[ -x "$t" ] || continue
		run_tap "unit-asan/$(basename "$t")" "$t"
	done
else
	failed=$((failed + 1))
	failures+=("sanitizer build failed")
fi

echo "== race tests under ThreadSanitizer"
if bash scripts/build.sh --tsan; then
	run_tap "tsan/races.sh" bash tests/tsan/races.sh
else
	failed=$((failed + 1))
	failures+=("ThreadSanitizer build failed")
fi

if [ ${#failures[@]} -gt 0 ]; then
	echo "== failures"
	printf '  %s\n' "${failures[@]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
