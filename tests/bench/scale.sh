#!/usr/bin/env bash
# Benchmark (not part of the test suite, not run by CI): how mfs scales with
# the number of small files, against kernel btrfs on the same two loop
# devices (data and metadata raid1), in one run. At each file count N of
# BENCH_SCALE_SIZES, on a fresh filesystem of each kind:
#
#   create   N files of BENCH_FILE_SIZE bytes from ONE process (open
#            O_CREAT|O_EXCL, write, close), BENCH_DIR_FILES to a directory,
#            by the small C program of lib.bash
#   commit   the commit after it: sync -f on btrfs, mfs filesystem sync on
#            mfs (Linux sends FUSE servers no syncfs request, so sync -f
#            would only hand mfs the cached pages, not commit them)
#   mount    a cold mount (unmounted, caches dropped), timed until the mount
#            point answers a stat of its root
#   check    the offline check of the unmounted filesystem from cold caches:
#            btrfs check on the first device, mfs check on both
#
# Printed: a line per size with the wall times on both, mfs/btrfs, the
# microseconds per file of create + commit and the mfs daemon's user/system
# CPU seconds during create + commit (/proc/PID/stat); last, the growth of
# each time from the smallest to the largest size: the ratio of the times
# divided by the ratio of the file counts (1.0: linear, below: better). The
# goals (issue 23): create + commit at most 1.5x btrfs, mount at most 1.0x
# and flat, check at most 1.0x, at every size; growth at most 1.0.
#
# Needs root, the btrfs kernel module, btrfs-progs (mkfs.btrfs, btrfs
# check), python3 and a C compiler.
#
#   BENCH_SCALE_SIZES="2000 5000" tests/bench/scale.sh      # a quick run
#
# Environment (defaults in brackets):
#   BENCH_SCALE_SIZES ["100000 200000 300000"]  the file counts
#   BENCH_FILE_SIZE [100]      bytes per file
#   BENCH_DIR_FILES [1000]     files per directory
#   BENCH_FS ["btrfs mfs"]     which filesystems to run, in this order
#   BENCH_IMG_SIZE [4G]        size of each of the two sparse images
#   BENCH_TMPDIR [$TMPDIR or /tmp]  where the images live
#   MFS_BUILD [build/]         where the mfs binaries are
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${MFS_BUILD:-$top/build}
mfs=$build/mfs
sizes=${BENCH_SCALE_SIZES:-100000 200000 300000}
file_size=${BENCH_FILE_SIZE:-100}
dir_files=${BENCH_DIR_FILES:-1000}
fss=${BENCH_FS:-btrfs mfs}
img_size=${BENCH_IMG_SIZE:-4G}

# shellcheck source=tests/bench/lib.bash
. "$top/tests/bench/lib.bash"
bench_require
command -v btrfs >/dev/null || die "btrfs not found (btrfs-progs, scripts/install-deps.sh)"
for n in $sizes $file_size $dir_files; do
	[ "$n" -ge 1 ] 2>/dev/null ||
		die "BENCH_SCALE_SIZES, BENCH_FILE_SIZE and BENCH_DIR_FILES must be positive numbers"
done
for fs in $fss; do
	case "$fs" in
	btrfs | mfs) ;;
	*) die "unknown filesystem '$fs' in BENCH_FS" ;;
	esac
done
# shellcheck disable=SC2086
sizes=$(printf '%s\n' $sizes | sort -nu | xargs)
first=${sizes%% *} last=${sizes##* }

bench_tmp scale
bench_loops 2 "$img_size"
bench_mkfiles

# Each size makes both filesystems anew on the same devices: neither
# registry may keep them as members of the one made before.
forget_all() {
	bench_forget mfs "${loops[@]}"
	bench_forget btrfs "${loops[@]}"
}
scale_cleanup() {
	bench_unmount
	forget_all
	bench_cleanup
}
trap scale_cleanup EXIT

create_files() {	# create_files N
	"$tmp/mkfiles" "$mnt/files" "$1" "$file_size" $(( ($1 + dir_files - 1) / dir_files ))
}

# mount_cold FS: mounts, then waits (10 s at most) until a stat of the
# mount point is answered by the mounted root rather than the folder under it.
mount_cold() {
	local under i

	under=$(stat -c %d "$mnt") || return 1
	mount_fs "$1"
	for ((i = 0; i < 10000; i++)); do
		[ "$(stat -c %d "$mnt")" != "$under" ] && return 0
		sleep 0.001
	done
	return 1
}

check_fs() {	# check_fs FS: the offline check, its output shown if it fails
	if [ "$1" = mfs ]; then
		"$mfs" check "${loops[@]}"
	else
		btrfs check "${loops[0]}"
	fi >"$tmp/check.out" 2>&1 || { cat "$tmp/check.out" >&2; return 1; }
}

sum() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a + b }'; }

declare -A WALL CPU	# WALL[FS,N,create|commit|c+c|mount|check], CPU[N] "u/s"

bench_size() {	# bench_size FS N
	local fs=$1 n=$2 u s

	forget_all
	mkfs_fs "$fs" raid1
	mount_fs "$fs"
	run_phase "$fs" create_files "$n"
	WALL[$fs,$n,create]=$wall u=$dusr s=$dsys
	run_phase "$fs" bench_commit "$fs"
	WALL[$fs,$n,commit]=$wall
	WALL[$fs,$n,c+c]=$(sum "${WALL[$fs,$n,create]}" "$wall")
	[ "$fs" = mfs ] && CPU[$n]=$(sum "$u" "$dusr")/$(sum "$s" "$dsys")
	bench_unmount
	bench_drop_caches
	run_phase offline mount_cold "$fs"
	WALL[$fs,$n,mount]=$wall
	bench_unmount
	bench_drop_caches
	run_phase offline check_fs "$fs"
	WALL[$fs,$n,check]=$wall
}

w() { echo "${WALL[$1]:--}"; }	# w KEY: a time, "-" where not measured
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
per_file() { awk -v s="$1" -v n="$2" 'BEGIN { if (s == "-") print "-"; else printf "%.1f", s * 1e6 / n }'; }

# Both filesystems side by side: create + commit, create, commit, us/file
# of create + commit, cold mount, check, mfs daemon CPU.
row_fmt='%7s | %7s %7s %5s | %7s %7s | %7s %7s | %6s %6s | %6s %6s %5s | %6s %6s %5s | %s\n'
row() {	# row N
	local n=$1 b m

	b=$(w "btrfs,$n,c+c") m=$(w "mfs,$n,c+c")
	set -- "$n" "$b" "$m" "$(ratio "$m" "$b")" \
		"$(w "btrfs,$n,create")" "$(w "mfs,$n,create")" \
		"$(w "btrfs,$n,commit")" "$(w "mfs,$n,commit")" \
		"$(per_file "$b" "$n")" "$(per_file "$m" "$n")"
	for ph in mount check; do
		b=$(w "btrfs,$n,$ph") m=$(w "mfs,$n,$ph")
		set -- "$@" "$b" "$m" "$(ratio "$m" "$b")"
	done
	# shellcheck disable=SC2059
	printf "$row_fmt" "$@" "${CPU[$n]:--}"
}

# growth FS PHASE: (time at the largest size / at the smallest) / (file ratio)
growth() {
	awk -v a="$(w "$1,$first,$2")" -v b="$(w "$1,$last,$2")" \
		-v na="$first" -v nb="$last" 'BEGIN {
		if (a == "-" || b == "-" || a + 0 == 0) print "-"; else printf "%.2f", b / a / (nb / na) }'
}

echo "# mfs ($("$mfs" --version 2>/dev/null | head -1)) vs btrfs (kernel $(uname -r), $(mkfs.btrfs --version | head -1))"
echo "# 2 loop devices over ${img_size} sparse images in $tmp; data and metadata raid1; noatime;" \
	"load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# files of ${file_size} bytes, ${dir_files} a directory, one process; times in seconds;" \
	"x: mfs/btrfs; us/f: microseconds a file of create + commit"
printf '%7s | %-21s | %-15s | %-15s | %-13s | %-19s | %-19s | %s\n' "" "create + commit" \
	create commit us/f "cold mount" check "mfs daemon"
# shellcheck disable=SC2059
printf "$row_fmt" files btrfs mfs x btrfs mfs btrfs mfs btrfs mfs btrfs mfs x btrfs mfs x "c+c u/s"
for n in $sizes; do
	for fs in $fss; do
		bench_size "$fs" "$n"
	done
	row "$n"
done
if [ "$first" != "$last" ]; then
	line="# growth $first -> $last files (time ratio / file ratio, 1.0 = linear):"
	for ph in c+c mount check; do
		line="$line $ph btrfs $(growth btrfs "$ph") mfs $(growth mfs "$ph");"
	done
	echo "${line%;}"
fi
