#!/usr/bin/env bats
# The suite runner (tests/run-all.sh) itself: skipped tests are counted
# apart from passed ones; a runner that hangs, dies before its plan is
# complete, prints no plan, runs no test or exits non-zero is a failure; a
# unit test listed in Makefile.am that was not built fails.

load helpers

setup() {
	T=$(mktemp -d "${BATS_TEST_TMPDIR:-$BATS_TMPDIR}/w.XXXXXX")
	# shellcheck source=tests/run-all.sh
	. "$BATS_TEST_DIRNAME/../run-all.sh"
}

teardown() {
	rm -rf "$T"
}

# tap LINE...: a runner that prints these lines
tap=(printf '%s\n')

@test "runner: passed, failed and skipped are counted apart" {
	run_tap one 60 "${tap[@]}" "1..4" "ok 1 - a" "ok 2 - b # skip (no loop devices)" "not ok 3 - c" "ok 4 - d # SKIP"
	run_tap two 60 "${tap[@]}" "ok 1 - e" "1..1"
	run summary
	assert_line "  one: not ok 3 - c;"
	assert_line --index $((${#lines[@]} - 1)) "2 passed, 1 failed, 2 skipped"
}

@test "runner: a plan the results do not meet, no plan, an empty plan, two plans, a bad exit" {
	run_tap short 60 "${tap[@]}" "1..3" "ok 1 - a" "ok 2 - b"
	run_tap noplan 60 "${tap[@]}" "ok 1 - a"
	run_tap empty 60 "${tap[@]}" "1..0"
	run_tap twice 60 "${tap[@]}" "1..1" "ok 1 - a" "1..1"
	run_tap status 60 bash -c 'echo 1..1; echo ok 1 - a; exit 3'
	run summary
	assert_line "  short: planned 3 tests, 2 reported"
	assert_line "  noplan: no TAP plan (exit status 0, 1 results)"
	assert_line "  empty: runs no test"
	assert_line "  twice: more than one TAP plan"
	assert_line "  status: exited 3"
	assert_line --index $((${#lines[@]} - 1)) "5 passed, 5 failed, 0 skipped"
}

@test "runner: a hang is stopped by the time limit and named" {
	run_tap hang 1 bash -c 'echo 1..2; echo ok 1 - a; exec sleep 600'
	run summary
	assert_line "  hang: timed out (1 results before it was stopped)"
	assert_line --index $((${#lines[@]} - 1)) "1 passed, 1 failed, 0 skipped"
}

@test "runner: the unit tests are Makefile.am's list; one not built fails" {
	run unit_tests
	assert_success
	assert_line tests/unit/test-csum
	assert_equal "${#lines[@]}" "$(ls "$BATS_TEST_DIRNAME"/../unit/test-*.c | wc -l)"
	mkdir -p "$T/b/tests/unit"
	for t in $(unit_tests); do
		printf '#!/bin/sh\necho 1..1\necho ok 1 - only\n' >"$T/b/$t"
		chmod +x "$T/b/$t"
	done
	rm "$T/b/tests/unit/test-csum"
	printf '#!/bin/sh\necho 1..0\n' >"$T/b/tests/unit/test-units"
	run_units "$T/b" unit
	run summary
	assert_line "  unit/test-csum: not built ($T/b/tests/unit/test-csum missing)"
	assert_line "  unit/test-units: runs no test"
	n=$(($(unit_tests | wc -l) - 2))
	assert_line --index $((${#lines[@]} - 1)) "$n passed, 2 failed, 0 skipped"
}

@test "runner: bats files in two lanes are all run, shown and tallied in name order" {
	local i

	# (printf: a test line in this file would be taken for one of its own)
	for i in 1 2 3; do
		printf '%s "f%s a" { true; }\n%s "f%s b" { [ %s != 2 ]; }\n' \
			@test "$i" @test "$i" "$i" >"$T/f$i.bats"
	done
	BATS_JOBS=2
	run run_bats_files "$T/f1.bats" "$T/f2.bats" "$T/f3.bats"
	assert_success
	# each file's TAP in name order, whichever lane ran it
	assert_equal "$(grep -E '^(not )?ok' <<<"$output" | sed 's/^not //' | cut -d' ' -f3-)" \
		"$(printf 'f1 a\nf1 b\nf2 a\nf2 b\nf3 a\nf3 b')"
	run_bats_files "$T/f1.bats" "$T/f2.bats" "$T/f3.bats" >/dev/null
	run summary
	assert_line --partial "cli/f2.bats: not ok 2 f2 b"
	assert_line --index $((${#lines[@]} - 1)) "5 passed, 1 failed, 0 skipped"
}
