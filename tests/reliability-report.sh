#!/usr/bin/env bash
# Reliability as figures (issue 21, DESIGN.md §9): runs the crash replay
# (tests/crash/*.sh), the EIO sweep (tests/fault/sweep.sh), the image
# fuzzer and the load run (tests/load/run.sh), each with a time limit, and
# prints one summary taken from what the tools print themselves: their
# "states replayed" and "faults injected, bytes verified" comments, the
# "# load:" line, the fuzzer's counts and the TAP results.
#
#   tests/reliability-report.sh [--quick]
#
# --quick (within 20 minutes on 2 cores): the crash and fault drivers in
# their sampled modes with smaller samples than the suite's
# (MFS_CRASH_SAMPLE=3, MFS_CRASH_RESUMES=2, no reorderings, MFS_FAULT_SAMPLE=2:
# still every commit's stretch of each log, the first and last fault of
# each kind), the
# fuzz corpus and regression inputs with 300 fixed mutants each
# (fuzz-replay), 12 crafted images given to the daemon and the commands
# (tests/security/crafted.sh), LOAD_TIME (60) seconds of load on raid1 and
# raid5. The default is the full run: make crash-test and make
# fault-test's full modes, the fuzz replay with 3000 mutants each under
# ASan+UBSan (build-san/), libFuzzer for FUZZ_TIME (600) seconds when clang
# can build it, every fuzz input and 20 mutants of each as crafted images
# (MFS_SEC_MUTANTS), and LOAD_TIME (1800) seconds of load on raid1, raid5
# and raid6: hours. The load run's length is set by LOAD_TIME, so the
# full run has it beside the other parts (REPORT_LANES=2; 1 runs them one
# after another, as --quick does by default).
#
# Ends with the lines "states replayed: N", "faults injected: N", "bytes
# verified: N" (read back and compared by the fault sweep and the load
# run), "load hours: N" (hours the stress tool ran, decimal) and
# "failures: N" (failing tests, and parts that crashed, timed out or
# printed no figures); exit status 0 when failures is 0. Each part's log
# is kept in REPORT_LOGS (a temporary directory by default). MFS_BUILD
# names the build directory (build/).
set -u
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
quick=0
case ${1:-} in
--quick) quick=1 ;;
"") ;;
*) echo "usage: tests/reliability-report.sh [--quick]" >&2; exit 2 ;;
esac
build=${MFS_BUILD:-$top/build}
logs=${REPORT_LOGS:-$(mktemp -d "${TMPDIR:-/tmp}/mfs-report.XXXXXX")}
mkdir -p "$logs"
export MFS_BUILD=$build

states=0
faults=0
bytes=0
load_secs=0
fuzz_inputs=0
crafted=0
failures=0
rows=()

# part NAME SECONDS CMD...: run one part with a time limit (TERM, then KILL
# 30 s later), its output in $logs/NAME.log; sets rc and log; counts its
# failing TAP lines, or one failure if it failed without one.
part() {
	local name=$1 secs=$2 t0 notok
	shift 2
	log=$logs/${name//\//_}.log
	echo "== $name: $*" >&2
	t0=$(date +%s)
	rc=0
	timeout -k 30 "$secs" "$@" >"$log" 2>&1 || rc=$?
	elapsed=$(($(date +%s) - t0))
	notok=$(grep -cE '^not ok\b' "$log")
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		echo "# $name: stopped after ${secs}s" >>"$log"
		failures=$((failures + notok + 1))
		result="timeout"
	elif [ "$rc" -ne 0 ]; then
		failures=$((failures + (notok > 0 ? notok : 1)))
		result="FAIL($notok)"
	else
		failures=$((failures + notok))
		result=$([ "$notok" -eq 0 ] && echo ok || echo "FAIL($notok)")
	fi
}

# figure NAME LOG PATTERN: fig, the number after PATTERN on the last line
# that has it; a part that printed none counts as a failure
figure() {
	fig=$(grep -oE "$3 [0-9.]+" "$2" | tail -n 1 | awk '{ print $NF }')
	if [ -z "$fig" ]; then
		echo "# $1: no '$3' figure in $2" >&2
		failures=$((failures + 1))
		result="$result,nofigure"
		fig=0
	fi
}

row() {	# row NAME FIGURES
	rows+=("$(printf '%-22s %7s  %-12s %s' "$1" "$elapsed" "$result" "$2")")
}

# (make reliability-report has built them: REPORT_NO_BUILD=1)
if [ -z "${REPORT_NO_BUILD:-}" ] && ! MFS_BUILD_DIR=$build bash "$top/scripts/build.sh" >"$logs/build.log" 2>&1; then
	echo "build failed: $logs/build.log"
	echo "states replayed: 0"
	echo "faults injected: 0"
	echo "bytes verified: 0"
	echo "load hours: 0"
	echo "failures: 1"
	exit 1
fi

# the load run: its length is set by LOAD_TIME, not by the CPU, so with
# REPORT_LANES=2 (the full run's default; 1 for --quick, whose stalls
# figures are read alone) it runs beside the other parts, which replay
# and fuzz on the CPU, and the full run takes hours less
load_part() {
	if [ $quick = 1 ]; then
		part load/run.sh 900 env LOAD_TIME="${LOAD_TIME:-60}" LOAD_CONFIGS="${LOAD_CONFIGS:-raid1 raid5}" \
			bash "$top/tests/load/run.sh"
	else
		part load/run.sh 36000 env LOAD_TIME="${LOAD_TIME:-1800}" bash "$top/tests/load/run.sh"
	fi
}
lanes=${REPORT_LANES:-$([ $quick = 1 ] && echo 1 || echo 2)}
load_pid=""
if [ "$lanes" -gt 1 ]; then
	(
		failures=0
		load_part
		# quoted: a result such as FAIL(1) is no shell word
		printf 'rc=%q\nelapsed=%q\nresult=%q\nlog=%q\nfailures=$((failures + %q))\n' \
			"$rc" "$elapsed" "$result" "$log" "$failures" >"$logs/load.status"
	) &
	load_pid=$!
fi

# crash replay: every driver, sampled (quick) or full
for t in "$top"/tests/crash/*.sh; do
	name=crash/$(basename "$t")
	if [ $quick = 1 ]; then
		part "$name" 1800 env MFS_CRASH_SAMPLE="${MFS_CRASH_SAMPLE:-3}" \
			MFS_CRASH_RESUMES="${MFS_CRASH_RESUMES:-2}" \
			MFS_CRASH_REORDERS="${MFS_CRASH_REORDERS:-0}" bash "$t"
	else
		part "$name" 36000 env MFS_CRASH_MODE=full bash "$t"
	fi
	figure "$name" "$log" "states replayed:"
	states=$((states + fig))
	row "$name" "states replayed $fig"
done

# the EIO sweep
if [ $quick = 1 ]; then
	part fault/sweep.sh 900 env MFS_FAULT_SAMPLE="${MFS_FAULT_SAMPLE:-2}" bash "$top/tests/fault/sweep.sh"
else
	part fault/sweep.sh 36000 env MFS_FAULT_MODE=full bash "$top/tests/fault/sweep.sh"
fi
figure fault/sweep.sh "$log" "faults injected:"
n=$fig
figure fault/sweep.sh "$log" "bytes verified:"
b=$fig
faults=$((faults + n))
bytes=$((bytes + b))
row fault/sweep.sh "faults injected $n, bytes verified $b"

# the image fuzzer: corpus and regression inputs with fixed mutants; the
# full run under ASan+UBSan, then libFuzzer
replay_bin=$build/tests/fuzz/fuzz-replay
mutants=300
if [ $quick = 0 ]; then
	mutants=3000
	if bash "$top/scripts/build.sh" --sanitizers >"$logs/build-san.log" 2>&1; then
		replay_bin=$top/build-san/tests/fuzz/fuzz-replay
		export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
		export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
	else
		echo "# the sanitizer build failed ($logs/build-san.log): fuzz replay without it" >&2
		failures=$((failures + 1))
	fi
fi
part fuzz/replay 1800 "$replay_bin" -m "$mutants" "$top/tests/fuzz/corpus" "$top/tests/fuzz/regress"
files=$(grep -cE '^ok\b' "$log")
fuzz_inputs=$((fuzz_inputs + files * (mutants + 1)))
row fuzz/replay "$files inputs and $mutants mutants of each"
unset ASAN_OPTIONS UBSAN_OPTIONS
if [ $quick = 0 ]; then
	if command -v clang >/dev/null; then
		part fuzz/libfuzzer $((${FUZZ_TIME:-600} + 1800)) make -s -C "$build" fuzz \
			FUZZ_TIME="${FUZZ_TIME:-600}" FUZZ_CORPUS="$logs/fuzz-work"
		figure fuzz/libfuzzer "$log" "stat::number_of_executed_units:"
		fuzz_inputs=$((fuzz_inputs + fig))
		row fuzz/libfuzzer "$fig executions, ${FUZZ_TIME:-600} s"
	else
		echo "# no clang: no libFuzzer run" >&2
	fi
fi

# crafted images against the daemon and the offline commands, under
# ASan+UBSan: a sample (quick), or every input with 20 mutants of each
if bash "$top/scripts/build.sh" --sanitizers >"$logs/build-san.log" 2>&1; then
	if [ $quick = 1 ]; then
		part security/crafted.sh 900 env MFS_SAN_BUILD="$top/build-san" MFS_SEC_MUTANTS=2 \
			MFS_SEC_IMAGES=12 bash "$top/tests/security/crafted.sh"
	else
		part security/crafted.sh 7200 env MFS_SAN_BUILD="$top/build-san" \
			MFS_SEC_MUTANTS="${MFS_SEC_MUTANTS:-20}" bash "$top/tests/security/crafted.sh"
	fi
	figure security/crafted.sh "$log" "# security:"
	n=$fig
	figure security/crafted.sh "$log" "images,"
	r=$fig
	crafted=$((crafted + n))
	row security/crafted.sh "$n images, $r runs"
else
	echo "# the sanitizer build failed ($logs/build-san.log): no crafted images" >&2
	failures=$((failures + 1))
fi

# the load run, waited for when it ran beside the others
if [ -n "$load_pid" ]; then
	wait "$load_pid"
	if ! . "$logs/load.status"; then
		echo "# load/run.sh: its status in $logs/load.status cannot be read" >&2
		failures=$((failures + 1))
		result=nostatus
	fi
else
	load_part
fi
figure load/run.sh "$log" "# load: seconds"
s=$fig
figure load/run.sh "$log" "bytes verified"
b=$fig
load_secs=$(awk -v a="$load_secs" -v b="$s" 'BEGIN { print a + b }')
bytes=$((bytes + b))
row load/run.sh "$s s of load, bytes verified $b"

echo "== mfs reliability report ($([ $quick = 1 ] && echo quick || echo full)), $(date -u '+%Y-%m-%d %H:%M UTC'), $(git -C "$top" rev-parse --short HEAD 2>/dev/null), logs in $logs"
printf '%-22s %7s  %-12s %s\n' part "time s" result figures
printf '%s\n' "${rows[@]}"
echo "fuzz inputs run: $fuzz_inputs"
echo "crafted images run: $crafted"
echo "states replayed: $states"
echo "faults injected: $faults"
echo "bytes verified: $bytes"
echo "load hours: $(awk -v s="$load_secs" 'BEGIN { printf "%.3f", s / 3600 }')"
echo "failures: $failures"
[ "$failures" -eq 0 ]
