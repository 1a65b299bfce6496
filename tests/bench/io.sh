#!/usr/bin/env bash
# Benchmark (not part of the test suite, not run by CI): file I/O on mfs
# against kernel btrfs, on the same two loop devices, in one run. For each
# data profile (raid0, raid1; metadata raid1) and each filesystem:
#
#   seq-write   write BENCH_SIZE of one file (dd bs=1M, conv=fsync) + sync
#   write-4k    BENCH_SMALLW_SIZE of another file in 4 KiB write(2) calls (dd
#               bs=4k, conv=fsync) + sync: what each call costs (a logger,
#               tar, a build writing its objects), not the disk
#   seq-read    read it back, cold (remount + drop_caches); median of BENCH_REPEATS
#   rand-read   BENCH_RANDREADS random 4 KiB preads of it, cold, POSIX_FADV_RANDOM
#   create      BENCH_FILES files of BENCH_FILE_SIZE bytes (1000 per dir) + sync
#   ls-lR       ls -lR of those files, cold
#
# and prints the wall times, the ratio mfs/btrfs, and the CPU time the mfs
# daemon spent in each phase (user/sys from /proc/PID/stat), which tells
# daemon work apart from waiting (I/O, FUSE round trips).
#
# Needs root, the btrfs kernel module, btrfs-progs and python3 (all in
# scripts/install-deps.sh; no fio: random reads are a python3 loop).
#
#   BENCH_SIZE=512M BENCH_FILES=10000 tests/bench/io.sh      # a quick run
#
# Environment (defaults in brackets):
#   BENCH_SIZE [2G]        size of the sequential file
#   BENCH_SMALLW_SIZE [256M] bytes written 4 KiB at a time
#   BENCH_FILES [100000]   number of small files
#   BENCH_FILE_SIZE [1024] bytes per small file
#   BENCH_RANDREADS [20000] number of 4 KiB random reads
#   BENCH_IMG_SIZE [8G]    size of each of the two sparse images
#   BENCH_PROFILES ["raid0 raid1"]  data profiles
#   BENCH_REPEATS [3]      cold read passes of seq-read and rand-read (median kept)
#   BENCH_TMPDIR [$TMPDIR or /tmp]  where the images live
#   MFS_BUILD [build/]     where the mfs binaries are
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${MFS_BUILD:-$top/build}
mfs=$build/mfs
size=${BENCH_SIZE:-2G}
smallw=${BENCH_SMALLW_SIZE:-256M}
nfiles=${BENCH_FILES:-100000}
file_size=${BENCH_FILE_SIZE:-1024}
nrand=${BENCH_RANDREADS:-20000}
img_size=${BENCH_IMG_SIZE:-8G}
profiles=${BENCH_PROFILES:-raid0 raid1}
repeats=${BENCH_REPEATS:-3}

# shellcheck source=tests/bench/lib.bash
. "$top/tests/bench/lib.bash"
bench_require

to_bytes() {
	python3 -c '
import sys
s = sys.argv[1].strip().upper().rstrip("B").rstrip("I")
m = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
print(int(float(s[:-1]) * m[s[-1]]) if s[-1] in m else int(s))' "$1"
}
size_mb=$(( $(to_bytes "$size") / 1048576 ))
[ "$size_mb" -ge 1 ] || die "BENCH_SIZE must be at least 1M"
smallw_mb=$(( $(to_bytes "$smallw") / 1048576 ))
[ "$smallw_mb" -ge 1 ] || die "BENCH_SMALLW_SIZE must be at least 1M"

bench_tmp io
bench_loops 2 "$img_size"

# ---- measuring ----

# median_phase FS FUNC: FUNC run $repeats times from cold caches; $wall,
# $dusr and $dsys of the run with the median wall time (the virtual disks
# under the loop devices vary a lot from one read pass to the next)
median_phase() {
	local fs=$1 r runs=()

	for ((r = 0; r < repeats; r++)); do
		cold
		run_phase "$fs" "$2"
		runs+=("$wall $dusr $dsys")
	done
	read -r wall dusr dsys < <(printf '%s\n' "${runs[@]}" | sort -n | sed -n "$(((repeats + 1) / 2))p")
}

# ---- the phases ----

seq_write() {
	dd if=/dev/zero of="$mnt/seq" bs=1M count="$size_mb" conv=fsync status=none &&
		sync -f "$mnt"
}

write_4k() {
	dd if=/dev/zero of="$mnt/small-writes" bs=4k count=$((smallw_mb * 256)) conv=fsync status=none &&
		sync -f "$mnt"
}

seq_read() {
	dd if="$mnt/seq" of=/dev/null bs=1M status=none
}

rand_read() {
	python3 - "$mnt/seq" "$nrand" <<'EOF'
import os, random, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
blocks = os.fstat(fd).st_size // 4096
rnd = random.Random(42)
for _ in range(int(sys.argv[2])):
    if len(os.pread(fd, 4096, rnd.randrange(blocks) * 4096)) != 4096:
        sys.exit("short read")
EOF
}

create_files() {
	python3 - "$mnt/files" "$nfiles" "$file_size" <<'EOF' && sync -f "$mnt"
import os, sys
top, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = bytes((i * 7 + 1) & 0xff for i in range(size))
os.mkdir(top)
for i in range(n):
    if i % 1000 == 0:
        d = os.path.join(top, "d%04d" % (i // 1000))
        os.mkdir(d)
    fd = os.open(os.path.join(d, "f%06d" % i), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, data)
    os.close(fd)
EOF
}

list_files() {
	ls -lR "$mnt/files" >/dev/null
}

# ---- the run ----

declare -A WALL DUSR DSYS
phases="seq-write write-4k seq-read rand-read create ls-lR"

bench_fs() {	# bench_fs mfs|btrfs PROFILE
	local fs=$1 prof=$2

	mkfs_fs "$fs" "$prof"
	mount_fs "$fs"
	run_phase "$fs" seq_write
	WALL[$fs,$prof,seq-write]=$wall DUSR[$fs,$prof,seq-write]=$dusr DSYS[$fs,$prof,seq-write]=$dsys
	run_phase "$fs" write_4k
	WALL[$fs,$prof,write-4k]=$wall DUSR[$fs,$prof,write-4k]=$dusr DSYS[$fs,$prof,write-4k]=$dsys
	median_phase "$fs" seq_read
	WALL[$fs,$prof,seq-read]=$wall DUSR[$fs,$prof,seq-read]=$dusr DSYS[$fs,$prof,seq-read]=$dsys
	median_phase "$fs" rand_read
	WALL[$fs,$prof,rand-read]=$wall DUSR[$fs,$prof,rand-read]=$dusr DSYS[$fs,$prof,rand-read]=$dsys
	run_phase "$fs" create_files
	WALL[$fs,$prof,create]=$wall DUSR[$fs,$prof,create]=$dusr DSYS[$fs,$prof,create]=$dsys
	cold
	run_phase "$fs" list_files
	WALL[$fs,$prof,ls-lR]=$wall DUSR[$fs,$prof,ls-lR]=$dusr DSYS[$fs,$prof,ls-lR]=$dsys
	bench_unmount
}

rate() {	# rate PHASE SECONDS: what the phase moved per second
	case "$1" in
	seq-write | seq-read) awk -v m="$size_mb" -v s="$2" 'BEGIN { printf "%.0f MiB/s", m / s }' ;;
	write-4k) awk -v m="$smallw_mb" -v s="$2" 'BEGIN { printf "%.0f MiB/s", m / s }' ;;
	rand-read) awk -v n="$nrand" -v s="$2" 'BEGIN { printf "%.0f IOPS", n / s }' ;;
	create | ls-lR) awk -v n="$nfiles" -v s="$2" 'BEGIN { printf "%.0f files/s", n / s }' ;;
	esac
}

echo "# mfs ($("$mfs" --version 2>/dev/null | head -1)) vs btrfs (kernel $(uname -r), $(mkfs.btrfs --version | head -1))"
echo "# 2 loop devices over ${img_size} sparse images in $tmp; metadata raid1; noatime"
echo "# seq file ${size_mb} MiB; ${smallw_mb} MiB in 4 KiB writes; ${nrand} random 4 KiB reads; ${nfiles} files of ${file_size} bytes"
for prof in $profiles; do
	bench_fs btrfs "$prof"
	bench_fs mfs "$prof"
	echo
	printf '%-7s %-10s %9s %9s %9s %16s %16s %14s\n' data phase "btrfs s" "mfs s" mfs/btrfs \
		"btrfs rate" "mfs rate" "mfs daemon u/s"
	for ph in $phases; do
		b=${WALL[btrfs,$prof,$ph]} m=${WALL[mfs,$prof,$ph]}
		printf '%-7s %-10s %9s %9s %9s %16s %16s %14s\n' "$prof" "$ph" "$b" "$m" \
			"$(awk -v a="$m" -v b="$b" 'BEGIN { printf "%.2f", a / b }')" \
			"$(rate "$ph" "$b")" "$(rate "$ph" "$m")" \
			"${DUSR[mfs,$prof,$ph]}/${DSYS[mfs,$prof,$ph]}"
	done
done
