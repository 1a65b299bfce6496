#!/usr/bin/env bash
# Benchmark (not part of the test suite, not run by CI): small-file creation
# and a cold metadata walk on mfs against kernel btrfs, on the same two loop
# devices (data and metadata raid1), in one run:
#
#   create   BENCH_FILES files of BENCH_FILE_SIZE bytes from ONE process
#            (open O_CREAT|O_EXCL, write, close; spread over BENCH_DIRS
#            directories), by a small C program compiled here so that the
#            loop itself costs next to nothing
#   sync     the commit of all of it after it (bench_commit: sync -f on
#            btrfs, mfs filesystem sync on mfs)
#   ls-lR    ls -lR of the tree, cold (remount + drop_caches)
#
# Printed: wall times, microseconds per file, mfs/btrfs, and the mfs
# daemon's user/system CPU seconds per phase (/proc/PID/stat). Then, on a
# fresh mfs with the daemon under strace, the FUSE requests by kind of
# BENCH_TRACE_FILES creates and of a cold ls -lR of them: the round trips
# one create and one listed file cost.
#
# Needs root, the btrfs kernel module, btrfs-progs, a C compiler and, for the
# request count, strace (skipped without it).
#
#   BENCH_FILES=5000 tests/bench/smallfiles.sh      # a quick run
#
# Environment (defaults in brackets):
#   BENCH_FILES [20000]      number of files
#   BENCH_FILE_SIZE [1024]   bytes per file
#   BENCH_DIRS [20]          directories they are spread over
#   BENCH_IMG_SIZE [4G]      size of each of the two sparse images
#   BENCH_TRACE_FILES [300]  files traced for the request counts (0: none)
#   BENCH_TMPDIR [$TMPDIR or /tmp]  where the images live
#   MFS_BUILD [build/]       where the mfs binaries are
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${MFS_BUILD:-$top/build}
mfs=$build/mfs
nfiles=${BENCH_FILES:-20000}
file_size=${BENCH_FILE_SIZE:-1024}
ndirs=${BENCH_DIRS:-20}
img_size=${BENCH_IMG_SIZE:-4G}
ntrace=${BENCH_TRACE_FILES:-300}

# shellcheck source=tests/bench/lib.bash
. "$top/tests/bench/lib.bash"
bench_require

bench_tmp smallfiles
bench_loops 2 "$img_size"

bench_mkfiles

create_files() { "$tmp/mkfiles" "$mnt/files" "$nfiles" "$file_size" "$ndirs"; }

list_files() { ls -lR "$mnt/files" >/dev/null; }

declare -A WALL DUSR DSYS
phases="create sync ls-lR"

bench_fs() {	# bench_fs mfs|btrfs
	local fs=$1

	mkfs_fs "$fs" raid1
	mount_fs "$fs"
	run_phase "$fs" create_files
	WALL[$fs,create]=$wall DUSR[$fs,create]=$dusr DSYS[$fs,create]=$dsys
	run_phase "$fs" bench_commit "$fs"
	WALL[$fs,sync]=$wall DUSR[$fs,sync]=$dusr DSYS[$fs,sync]=$dsys
	cold
	run_phase "$fs" list_files
	WALL[$fs,ls-lR]=$wall DUSR[$fs,ls-lR]=$dusr DSYS[$fs,ls-lR]=$dsys
	bench_unmount
}

# traced WHAT N CMD...: the FUSE requests the daemon reads while CMD runs,
# by kind, per one of N: each read() of /dev/fuse is one request, its
# opcode the second 32-bit word of the header (strace prints the first 8
# bytes in hex). The bench's own FS_INFO ioctl is left out.
traced() {
	local what=$1 n=$2 pid spid log=$tmp/strace.log
	shift 2

	pid=$(daemon_pid) || die "cannot find the mfs daemon"
	strace -f -qq -e trace=read -e signal=none -xx -s 8 -o "$log" -p "$pid" &
	spid=$!
	sleep 1
	"$@" || die "traced command failed: $*"
	sleep 0.5
	kill "$spid"
	wait "$spid" 2>/dev/null
	python3 - "$log" "$what" "$n" <<'EOF'
import collections, re, sys
names = {1: "LOOKUP", 2: "FORGET", 3: "GETATTR", 4: "SETATTR", 8: "MKNOD", 9: "MKDIR",
         14: "OPEN", 15: "READ", 16: "WRITE", 17: "STATFS", 18: "RELEASE", 20: "FSYNC",
         22: "GETXATTR", 23: "LISTXATTR", 25: "FLUSH", 27: "OPENDIR", 28: "READDIR",
         29: "RELEASEDIR", 35: "CREATE", 39: "IOCTL", 42: "BATCH_FORGET", 44: "READDIRPLUS"}
what, n = sys.argv[2], int(sys.argv[3])
count = collections.Counter()
pat = re.compile(r'(?:read\(\d+, |read resumed>)"((?:\\x[0-9a-f]{2}){8})"')
for line in open(sys.argv[1]):
    m = pat.search(line)
    if m:
        b = bytes(int(h, 16) for h in m.group(1).split("\\x")[1:])
        count[int.from_bytes(b[4:8], "little")] += 1
del count[39]
print("# FUSE requests per %s: %.2f (%d of them)" % (what, sum(count.values()) / n, n))
print("   " + ", ".join("%s %.2f" % (names.get(k, "op%d" % k), v / n)
                        for k, v in count.most_common()))
EOF
}

# Requests per create ($ntrace files; the directories made first count
# too) and per file of a cold ls -lR of them.
count_requests() {
	mkfs_fs mfs raid1
	mount_fs mfs
	traced "create (+$((ndirs + 1)) mkdir)" "$ntrace" \
		"$tmp/mkfiles" "$mnt/files" "$ntrace" "$file_size" "$ndirs"
	cold
	traced "file of a cold ls -lR" "$ntrace" list_files
	bench_unmount
}

echo "# mfs ($("$mfs" --version 2>/dev/null | head -1)) vs btrfs (kernel $(uname -r), $(mkfs.btrfs --version | head -1))"
echo "# 2 loop devices over ${img_size} sparse images in $tmp; data and metadata raid1; noatime"
echo "# ${nfiles} files of ${file_size} bytes in ${ndirs} directories, one process"
bench_fs btrfs
bench_fs mfs
echo
printf '%-7s %9s %9s %9s %11s %11s %14s\n' phase "btrfs s" "mfs s" mfs/btrfs \
	"btrfs us/f" "mfs us/f" "mfs daemon u/s"
for ph in $phases; do
	b=${WALL[btrfs,$ph]} m=${WALL[mfs,$ph]}
	printf '%-7s %9s %9s %9s %11s %11s %14s\n' "$ph" "$b" "$m" \
		"$(awk -v a="$m" -v b="$b" 'BEGIN { printf "%.2f", a / b }')" \
		"$(awk -v s="$b" -v n="$nfiles" 'BEGIN { printf "%.1f", s * 1e6 / n }')" \
		"$(awk -v s="$m" -v n="$nfiles" 'BEGIN { printf "%.1f", s * 1e6 / n }')" \
		"${DUSR[mfs,$ph]}/${DSYS[mfs,$ph]}"
done
b=$(awk -v a="${WALL[btrfs,create]}" -v b="${WALL[btrfs,sync]}" 'BEGIN { print a + b }')
m=$(awk -v a="${WALL[mfs,create]}" -v b="${WALL[mfs,sync]}" 'BEGIN { print a + b }')
printf '%-7s %9s %9s %9s\n' "c+sync" "$b" "$m" "$(awk -v a="$m" -v b="$b" 'BEGIN { printf "%.2f", a / b }')"
if [ "$ntrace" -gt 0 ] && command -v strace >/dev/null; then
	echo
	count_requests
fi
