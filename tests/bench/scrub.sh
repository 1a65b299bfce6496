#!/usr/bin/env bash
# Benchmark (not part of the test suite, not run by CI): scrub on mfs and
# on kernel btrfs, on the same loop devices (sparse images), in one run,
# against the raw floor of reading every copy. For each data profile
# (BENCH_PROFILES; metadata raid1) and each filesystem:
#
#   setup   mkfs on the profile's devices, BENCH_DATA_MIB of random data in
#           files of up to 256 MiB, sync, remount with cold caches
#   scrub   `scrub start -B` on the mounted filesystem (both read every
#           copy of every used block, data and metadata, and parity)
#
# While each scrub runs, a probe creates, writes (4 KiB), stats, reads back
# and unlinks small files in a loop and records how long each round took:
# the slowest (max) and the 99th percentile are the stalls a user sees.
#
# The raw floor: the bytes mfs's scrub read on each device (scrub status
# -d; raid5/6: with their parity) read again, direct, in reads of 4 MiB, all devices at once, cold
# caches, from where the filesystem wrote on each member: the members are
# discarded before each mkfs, so the data regions of their images are what
# that filesystem wrote (a hole reads as zeros without touching the disk,
# and chunks do not lie from a member's start: mostly empty metadata
# chunks come first). The wall time of the slowest. The files' sha256 are
# checked after each mfs scrub, and a scrub that reports errors is a
# failure.
#
# Needs root, the btrfs kernel module, btrfs-progs and python3.
#
#   BENCH_DATA_MIB=256 tests/bench/scrub.sh      # a quick run
#
# Environment (defaults in brackets):
#   BENCH_DATA_MIB [1024]      data written
#   BENCH_IMG_SIZE [4G]        size of each sparse image
#   BENCH_PROFILES ["raid1 raid5 raid0"]  data profiles (raid1: 2 devices,
#                              raid5: 3, raid0: 2, raid10: 4, raid6: 4)
#   BENCH_FS ["btrfs mfs"]     which filesystems to run, in this order
#   BENCH_PROBE [1]            0: no small-file probe during the scrubs
#   BENCH_TMPDIR [$TMPDIR or /tmp]  where the images live
#   MFS_BUILD [build/]         where the mfs binaries are
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${MFS_BUILD:-$top/build}
mfs=$build/mfs
data_mib=${BENCH_DATA_MIB:-1024}
img_size=${BENCH_IMG_SIZE:-4G}
profiles=${BENCH_PROFILES:-raid1 raid5 raid0}
fss=${BENCH_FS:-btrfs mfs}
probe_on=${BENCH_PROBE:-1}

# shellcheck source=tests/bench/lib.bash
. "$top/tests/bench/lib.bash"
bench_require
[ "$data_mib" -ge 1 ] 2>/dev/null || die "BENCH_DATA_MIB must be a positive number of MiB"

bench_tmp scrub
bench_loops 4 "$img_size"

bench_rand_files "$data_mib"

ndevs() {
	case "$1" in
	raid5) echo 3 ;;
	raid10 | raid6) echo 4 ;;
	*) echo 2 ;;
	esac
}

forget() {	# forget DEV...: out of both registries
	bench_forget mfs "$@"
	bench_forget btrfs "$@"
}
scrub_cleanup() {
	bench_unmount
	forget "${loops[@]}"
	bench_cleanup
}
trap scrub_cleanup EXIT

cold_caches() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
}

members() { echo "${loops[@]:0:$(ndevs "$1")}"; }

setup() {	# setup FS PROFILE
	local fs=$1 out=$tmp/mkfs.out i
	# shellcheck disable=SC2046
	set -- "$fs" "$2" $(members "$2")
	forget "${loops[@]}"
	# empty images: the raw read finds what this filesystem wrote
	for i in "${@:3}"; do
		blkdiscard -f "$i" || die "blkdiscard $i failed"
	done
	if [ "$fs" = mfs ]; then
		"$build/mkfs.mfs" -f -q -d "$2" -m raid1 "${@:3}"
	else
		mkfs.btrfs -f -q -d "$2" -m raid1 "${@:3}"
	fi >"$out" 2>&1 || { cat "$out" >&2; die "mkfs of $fs failed"; }
	mount_members "$fs" noatime "${@:3}"
	for ((i = 1; i <= nfiles; i++)); do
		cp "$tmp/rand.bin" "$mnt/f$i" || die "writing the files on $fs failed"
	done
	if [ "$fs" = mfs ]; then "$mfs" filesystem sync "$mnt"; else sync -f "$mnt"; fi
	bench_unmount
	cold_caches
	mount_members "$fs" noatime "${@:3}"
}

declare -A WALL CHECK DEVBYTES LAT

# probe DIR STOPFILE: rounds of small-file operations until STOPFILE exists;
# prints "max_ms p99_ms rounds"
probe() {
	python3 - "$1" "$2" <<'PY'
import os, sys, time
d, stop = sys.argv[1], sys.argv[2]
lat, i = [], 0
while i == 1 or not os.path.exists(stop):
    if i == 1:
        open(stop + ".ready", "w").close()
    p = os.path.join(d, "probe%d" % (i % 64))
    t = time.monotonic()
    fd = os.open(p, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    os.write(fd, b"x" * 4096)
    os.close(fd)
    os.stat(p)
    with open(p, "rb") as f:
        f.read()
    os.unlink(p)
    lat.append(time.monotonic() - t)
    i += 1
lat.sort()
if not lat:
    print("- - 0")
else:
    print("%.1f %.1f %d" % (lat[-1] * 1e3, lat[int(len(lat) * 0.99)] * 1e3, len(lat)))
PY
}

run_one() {	# run_one FS PROFILE
	local fs=$1 p=$2 key=$2,$1 t0 t1 out=$tmp/scrub.out
	setup "$fs" "$p"
	mkdir -p "$mnt/probe"
	cold_caches
	rm -f "$tmp/stop" "$tmp/stop.ready"
	local ppid="" w
	echo "- - 0" >"$tmp/probe.out"
	if [ "$probe_on" = 1 ]; then
		probe "$mnt/probe" "$tmp/stop" >"$tmp/probe.out" &
		ppid=$!
		# the probe runs before the scrub starts
		for ((w = 0; w < 600; w++)); do
			[ -e "$tmp/stop.ready" ] && break
			sleep 0.1
		done
	fi
	t0=$(now_ns)
	if [ "$fs" = mfs ]; then
		"$mfs" scrub start -B "$mnt" >"$out" 2>&1
	else
		btrfs scrub start -B "$mnt" >"$out" 2>&1
	fi
	local rc=$?
	t1=$(now_ns)
	touch "$tmp/stop"
	[ -z "$ppid" ] || wait "$ppid"
	LAT[$key]=$(cat "$tmp/probe.out")
	WALL[$key]=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
	CHECK[$key]=ok
	[ "$rc" -eq 0 ] || { sed "s/^/# $fs $p: /" "$out" >&2; CHECK[$key]="rc $rc"; }
	if [ "$fs" = mfs ]; then
		# bytes read per device, in member order
		DEVBYTES[$p]=$(dev_bytes)
		(cd "$mnt" && sha256sum --quiet -c "$tmp/sums") >&2 || CHECK[$key]=sha256
	fi
	echo "# $fs $p: ${WALL[$key]} s, ${CHECK[$key]}; probe max/p99 ms, rounds: ${LAT[$key]}" >&2
	bench_unmount
}

# The bytes mfs's scrub read on each member, by devid order (scrub status -d -R).
dev_bytes() {
	"$mfs" scrub status -d -R "$mnt" 2>/dev/null | awk '
		/^Scrub device/ { if (have) printf "%d ", n; n = 0; have = 1 }
		$1 == "bytes_scrubbed:" { n += $2 }
		END { if (have) printf "%d\n", n }'
}

declare -A RAW

# Every member read at once, as many bytes as mfs's scrub read on it (for
# raid5/6 its data strips and their parity), from the data regions of its
# image (SEEK_DATA), direct, 4 MiB a read.
run_raw() {	# run_raw PROFILE
	local p=$1 devs bytes i args=()
	read -ra devs <<<"$(members "$p")"
	read -ra bytes <<<"${DEVBYTES[$p]:-}"
	[ "${#bytes[@]}" -eq "${#devs[@]}" ] || { echo "# raw $p: no per-device figures" >&2; return; }
	# scrub status counts the data a device held; raid5/6 read its parity too
	local n=${#devs[@]} np=0
	case "$p" in raid5) np=1 ;; raid6) np=2 ;; esac
	for i in "${!devs[@]}"; do
		args+=("${devs[$i]}" "$((bytes[i] * n / (n - np)))")
	done
	cold_caches
	RAW[$p]=$(python3 - "${args[@]}" <<'PY'
import mmap, os, sys, threading, time
STEP = 4 << 20
def regions(dev):
    """The data regions of the image under loop device dev."""
    name = os.path.basename(os.path.realpath(dev))
    with open("/sys/block/%s/loop/backing_file" % name) as f:
        fd = os.open(f.read().strip(), os.O_RDONLY)
    out, off = [], 0
    try:
        while True:
            try:
                start = os.lseek(fd, off, os.SEEK_DATA)
            except OSError:
                break
            off = os.lseek(fd, start, os.SEEK_HOLE)
            out.append((start, off))
    finally:
        os.close(fd)
    return out
def read(dev, want, regs):
    fd = os.open(dev, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, STEP)
    for start, end in regs:
        start &= ~4095
        while start < end and want > 0:
            n = os.preadv(fd, [buf], start)
            if n <= 0:
                break
            start += n
            want -= n
    os.close(fd)
args = sys.argv[1:]
jobs = [(args[i], int(args[i + 1]), regions(args[i])) for i in range(0, len(args), 2)]
threads = [threading.Thread(target=read, args=j) for j in jobs]
t = time.monotonic()
for th in threads:
    th.start()
for th in threads:
    th.join()
print("%.2f" % (time.monotonic() - t))
PY
	) || die "the raw read failed"
	echo "# raw $p: ${args[*]} (device, bytes read), ${RAW[$p]} s" >&2
}

echo "# mfs ($("$mfs" --version 2>/dev/null | head -1)) vs btrfs (kernel $(uname -r), $(mkfs.btrfs --version | head -1))"
echo "# loop devices over ${img_size} sparse images in $tmp; ${data_mib} MiB in ${nfiles} files;" \
	"load average $(cut -d' ' -f1-3 /proc/loadavg)"
for p in $profiles; do
	for fs in $fss; do
		case "$fs" in
		btrfs | mfs) run_one "$fs" "$p" ;;
		*) die "unknown filesystem '$fs' in BENCH_FS" ;;
		esac
	done
	# the raw read right after mfs's scrub, on its layout
	[[ " $fss " == *" mfs "* ]] && run_raw "$p"
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
goal() { awk -v r="$1" -v g="$2" 'BEGIN { if (r == "-") print "-"; else print (r + 0 <= g ? "PASS" : "MISS") }'; }

echo
row() { printf '%-7s %7s %7s %9s %7s %7s %-5s %-5s %-6s %-6s %9s %9s\n' "$@"; }
row profile "btrfs s" "mfs s" mfs/btrfs "raw s" mfs/raw "<=1.0" "<=1.3" btrfs mfs "btrfs ms" "mfs ms"
for p in $profiles; do
	b=${WALL[$p,btrfs]:-} s=${WALL[$p,mfs]:-} raw=${RAW[$p]:-}
	rb=$(ratio "$s" "$b") rr=$(ratio "$s" "$raw")
	lb=${LAT[$p,btrfs]:-- -} lm=${LAT[$p,mfs]:-- -}
	row "$p" "${b:--}" "${s:--}" "$rb" "${raw:--}" "$rr" "$(goal "$rb" 1.0)" "$(goal "$rr" 1.3)" \
		"${CHECK[$p,btrfs]:--}" "${CHECK[$p,mfs]:--}" "${lb% *}" "${lm% *}"
done
cat <<'EOF'
# mfs/btrfs: mfs scrub time / btrfs scrub time (goal <= 1.0); raw s: every
# member read at once, direct, as many bytes as mfs's scrub read on it,
# from where the filesystem wrote on it; mfs/raw goal <= 1.3.
# ok: exit 0 (and on mfs the files' sha256).
# btrfs ms, mfs ms: the slowest probe round and its 99th percentile (ms)
# during the scrub: create+write 4 KiB+stat+read+unlink of a small file.
EOF
