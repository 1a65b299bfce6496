#!/usr/bin/env bash
# Benchmark (not part of the test suite): mkfs.mfs against mkfs.btrfs on the
# same four sparse image files and on four loop devices over them, for a few
# profiles, with and without discard, in one run. Prints the mean and best
# wall time of each and the ratio mfs/btrfs of the means. Needs root (loop
# devices) and btrfs-progs.
#
#   tests/bench/mkfs.sh [-n REPS] [-s SIZE] [--no-loop]
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${MFS_BUILD:-$top/build}
mkfs_mfs=$build/mkfs.mfs
reps=5
size=10G
use_loop=1

while [ $# -gt 0 ]; do
	case "$1" in
	-n) reps=$2; shift 2 ;;
	-s) size=$2; shift 2 ;;
	--no-loop) use_loop=0; shift ;;
	*) echo "usage: $0 [-n REPS] [-s SIZE] [--no-loop]" >&2; exit 1 ;;
	esac
done

if [ ! -x "$mkfs_mfs" ]; then
	echo "ERROR: $mkfs_mfs not built (run scripts/build.sh)" >&2
	exit 1
fi
if ! command -v mkfs.btrfs >/dev/null; then
	echo "ERROR: mkfs.btrfs not found (btrfs-progs; see scripts/install-deps.sh)" >&2
	exit 1
fi

# shellcheck source=tests/bench/lib.bash
. "$top/tests/bench/lib.bash"
bench_tmp mkfs

images=()
for i in 1 2 3 4; do
	truncate -s "$size" "$tmp/d$i.img"
	images+=("$tmp/d$i.img")
done
if [ $use_loop = 1 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "WARNING: not root, skipping loop devices" >&2
		use_loop=0
	else
		for img in "${images[@]}"; do
			l=$(losetup -f --show "$img") || die "losetup failed"
			loops+=("$l")
		done
	fi
fi

# time_mkfs TOOL ARGS...: runs reps times, prints "mean_ms best_ms" (or "fail").
time_mkfs() {
	local r t0 t1 ms total=0 best=
	for r in $(seq 1 "$reps"); do
		t0=$(now_ns)
		if ! "$@" >/dev/null 2>"$tmp/err"; then
			sed 's/^/#   /' "$tmp/err" | head -5 >&2
			echo fail
			return
		fi
		t1=$(now_ns)
		ms=$(( (t1 - t0) / 1000 ))	# microseconds
		total=$((total + ms))
		if [ -z "$best" ] || [ $ms -lt $best ]; then best=$ms; fi
	done
	awk -v t=$total -v n=$reps -v b=$best 'BEGIN { printf "%.1f %.1f\n", t / n / 1000, b / 1000 }'
}

printf '# mkfs.mfs (%s) vs mkfs.btrfs (%s), 4 x %s, %d runs each\n' \
	"$("$mkfs_mfs" -V 2>/dev/null | head -1)" "$(mkfs.btrfs --version | head -1)" "$size" "$reps"
printf '%-6s %-22s %-9s %12s %12s %12s %12s %8s\n' target profiles discard \
	"mfs mean ms" "mfs best" "btrfs mean" "btrfs best" "ratio"

bench() {	# bench TARGET-NAME DISCARD PROFILE-ARGS -- DEVICES...
	local target=$1 discard=$2 prof=() devs=() k=() m b
	shift 2
	while [ "$1" != -- ]; do prof+=("$1"); shift; done
	shift
	devs=("$@")
	[ "$discard" = no ] && k=(-K)
	m=$(time_mkfs "$mkfs_mfs" -f -q "${k[@]}" "${prof[@]}" "${devs[@]}")
	b=$(time_mkfs mkfs.btrfs -f -q "${k[@]}" "${prof[@]}" "${devs[@]}")
	set -- $m $b
	if [ "$m" = fail ] || [ "$b" = fail ]; then
		printf '%-6s %-22s %-9s %s\n' "$target" "${prof[*]:-default}" "$discard" \
			"failed: mfs=$m btrfs=$b"
		return
	fi
	printf '%-6s %-22s %-9s %12s %12s %12s %12s %8s\n' "$target" "${prof[*]:-default}" \
		"$discard" "$1" "$2" "$3" "$4" "$(awk -v a="$1" -v b="$3" 'BEGIN { printf "%.2f", a / b }')"
}

targets=(files)
[ $use_loop = 1 ] && targets+=(loop)
for target in "${targets[@]}"; do
	if [ "$target" = files ]; then devs=("${images[@]}"); else devs=("${loops[@]}"); fi
	for discard in yes no; do
		bench "$target" "$discard" -- "${devs[@]}"
		bench "$target" "$discard" -d raid1 -m raid1 -- "${devs[@]}"
		bench "$target" "$discard" -d raid10 -m raid1c3 -- "${devs[@]}"
		bench "$target" "$discard" -d raid5 -m raid6 -- "${devs[@]}"
	done
done
