#!/usr/bin/env bash
# Benchmark (not part of the test suite, not run by CI): the admin operations
# of /work/shared/bench/btrfs-baseline.sh on mfs and on kernel btrfs, on the
# same five loop devices (sparse images), in one run:
#
#   write        BENCH_DATA_MIB of random data in 256 MiB files on 2 devices
#                (data raid0, metadata dup) + sync
#   device-add   add a third device
#   balance      full balance (data and metadata)
#   convert      data to raid5, metadata to raid1
#   scrub        scrub start -B (tests/bench/scrub.sh measures it against
#                the raw read of every copy)
#   replace      device 2 -> device 4
#   delete       delete device 4 (holding what device 2 held before the
#                replace)
#
# and, on the same loop devices, the raw-device limit of the restripe steps
# (balance, convert, delete): the time dd takes to copy the bytes the step
# moves (the used bytes of the chunks it relocates, asked of the mfs daemon
# before it starts) from one loop device to another, conv=fdatasync; and,
# since raid5 and mirrors write more than they move, the time to read the
# moved bytes plus write what their new layout stores, at the raw read and
# write rates. Printed: wall times, mfs/btrfs, and for the restripe steps the
# bytes, the raw times and mfs/raw (for a replace: the bytes its source
# holds). The goals: each restripe step at most 0.5x btrfs's time and at
# most 1.3x the raw copy (a replace 1.1x).
#
# During balance, convert, replace and delete a probe creates, writes,
# stats and deletes a small file every 10 ms; the table gives its slowest
# and 99.9th-percentile time (ms) on each filesystem: how long a user's file
# operation stalls while the filesystem restripes (issue 23's goal: under 100
# ms worst and 50 ms at the 99.9th percentile).
#
# Every timed step starts with cold caches (sync + drop_caches; mfs keeps its
# tree-block cache) unless BENCH_DROP_CACHES=0. The mfs daemon's user and
# system CPU seconds per step come from /proc/PID/stat.
#
# Needs root, the btrfs kernel module, btrfs-progs and python3.
#
#   BENCH_DATA_MIB=512 tests/bench/admin.sh      # a quick run
#
# Environment (defaults in brackets):
#   BENCH_DATA_MIB [2048]      data written before the operations
#   BENCH_IMG_SIZE [4G]        size of each of the five sparse images
#   BENCH_FS ["btrfs mfs"]     which filesystems to run, in this order
#   BENCH_DROP_CACHES [1]      drop the page cache before each timed step
#   BENCH_RAW_REPS [3]         runs of each raw measurement (the median counts)
#   BENCH_TMPDIR [$TMPDIR or /tmp]  where the images live
#   MFS_BUILD [build/]         where the mfs binaries are
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${MFS_BUILD:-$top/build}
mfs=$build/mfs
data_mib=${BENCH_DATA_MIB:-2048}
img_size=${BENCH_IMG_SIZE:-4G}
fss=${BENCH_FS:-btrfs mfs}
drop=${BENCH_DROP_CACHES:-1}
raw_reps=${BENCH_RAW_REPS:-3}

# shellcheck source=tests/bench/lib.bash
. "$top/tests/bench/lib.bash"
bench_require
[ "$data_mib" -ge 1 ] 2>/dev/null || die "BENCH_DATA_MIB must be a positive number of MiB"

bench_tmp admin
bench_loops 5 "$img_size"
L1=${loops[0]} L2=${loops[1]} L3=${loops[2]} L4=${loops[3]} L5=${loops[4]}

# the data: files of up to 256 MiB of random bytes, BENCH_DATA_MIB in all
file_mib=$((data_mib < 256 ? data_mib : 256))
nfiles=$((data_mib / file_mib))
head -c "${file_mib}M" /dev/urandom > "$tmp/rand.bin"

# ---- measuring ----

cold() {
	sync
	[ "$drop" = 1 ] && echo 3 >/proc/sys/vm/drop_caches
	return 0
}

# moved_bytes DATA_FACTOR META_FACTOR [DEVID]: the used bytes of the chunks
# a full balance (or, with DEVID, a delete of that device) relocates, and
# what they take in a new layout storing DATA_FACTOR bytes per data byte and
# META_FACTOR per metadata (and system) byte, from the daemon's chunk list
# (MFS_IOC_SPACE)
moved_bytes() {
	python3 - "$mnt" "$1" "$2" "${3:-0}" "${4:-}" <<'EOF'
import fcntl, os, struct, sys
# struct mfs_ioctl_space (kernel-shared/format/ioctl.h): devices, chunks and the
# stripes of a chunk come a page at a time, each with its cursor
NDEV, NCHUNK, NSTRIPE = 16, 32, 64
DEV = 6 * 8 + 512
CHUNK = 8 * 8
STRIPE = 2 * 8
HDR = 16 * 8                                    # through global_reserve_used
END = (1 << 64) - 1
BG_DATA = 1                                     # MFS_BLOCK_GROUP_DATA
size = HDR + NDEV * DEV + NCHUNK * CHUNK + NSTRIPE * STRIPE
req = (3 << 30) | (size << 16) | (0xE5 << 8) | 14  # _IOWR(0xE5, 14, ...)
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
fdata, fmeta, devid = float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
share = sys.argv[5] == "share"                  # a replace: one stripe's share of each
chunks = {}                                     # logical -> [type, used, devids]
cur = [0, 0, 0]
while True:
    buf = bytearray(size)
    struct.pack_into("<3Q", buf, 0, *cur)
    fcntl.ioctl(fd, req, buf)
    cur = list(struct.unpack_from("<3Q", buf, 0))
    nchunk, nstripe = struct.unpack_from("<QQ", buf, 8 * 7)
    s = 0
    for i in range(nchunk):
        off = HDR + NDEV * DEV + i * CHUNK
        logical, length, typ, used, nst, ssize, first, nr = struct.unpack_from("<8Q", buf, off)
        c = chunks.setdefault(logical, [typ, used, set(), nst])
        for k in range(nr):
            c[2].add(struct.unpack_from("<Q", buf, HDR + NDEV * DEV + NCHUNK * CHUNK + (s + k) * STRIPE)[0])
        s += nr
    if cur[0] == END and cur[1] == END:
        break
moved, written = 0, 0.0
for typ, used, devids, nst in chunks.values():
    if used and (devid == 0 or devid in devids):
        stored = used * (fdata if typ & BG_DATA else fmeta)
        if share:
            moved += stored / nst
            written += stored / nst
        else:
            moved += used
            written += stored
print(int(moved), int(written))
EOF
}

declare -A WALL CPU MOVED WRITTEN RAW RAWRW STALL

# A live filesystem must keep serving while a restripe runs. The probe
# creates, writes (4 KiB), stats and deletes a small file every 10 ms
# until told to stop, and keeps the slowest and the 99.9th percentile of
# those operations, in ms: how long a user's file operation can stall.
probe_start() {
	rm -f "$tmp/probe.stop" "$tmp/probe.out"
	python3 - "$mnt/.probe" "$tmp/probe.out" "$tmp/probe.stop" <<'EOF' &
import os, sys, time
d, out, stop = sys.argv[1:4]
os.makedirs(d, exist_ok=True)
lat, i = [], 0
while not os.path.exists(stop):
    t = time.monotonic()
    p = os.path.join(d, "p%d" % (i % 64))
    with open(p, "wb") as f:
        f.write(b"x" * 4096)
    os.stat(p)
    os.unlink(p)
    lat.append(time.monotonic() - t)
    i += 1
    time.sleep(0.01)
os.rmdir(d)
lat.sort()
with open(out, "w") as f:
    if lat:
        f.write("%.0f/%.0f\n" % (lat[-1] * 1000, lat[min(len(lat) - 1, int(len(lat) * 0.999))] * 1000))
    else:
        f.write("-\n")
EOF
	PROBE_PID=$!
}

probe_stop() {	# probe_stop FS NAME
	touch "$tmp/probe.stop"
	wait "$PROBE_PID"
	STALL[$1,$2]=$(cat "$tmp/probe.out" 2>/dev/null || echo -)
}

# step FS NAME CMD...: cold caches, run CMD then commit, record the wall time
# (and the mfs daemon's CPU time)
step() {
	local fs=$1 name=$2 t0 t1 pid="" u0 s0 u1 s1 out=$tmp/step.out
	shift 2
	cold
	if [ "$fs" = mfs ]; then
		pid=$(daemon_pid) || die "cannot find the mfs daemon"
		read -r u0 s0 < <(cpu_of "$pid")
	fi
	case "$name" in balance | convert | replace | delete) probe_start ;; esac
	t0=$(now_ns)
	"$@" >"$out" 2>&1 || { cat "$out" >&2; die "$fs $name failed: $*"; }
	bench_commit "$fs"
	t1=$(now_ns)
	case "$name" in balance | convert | replace | delete) probe_stop "$fs" "$name" ;; esac
	WALL[$fs,$name]=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
	CPU[$fs,$name]=-
	if [ -n "$pid" ] && [ -e "/proc/$pid/stat" ]; then
		read -r u1 s1 < <(cpu_of "$pid")
		CPU[$fs,$name]=$(awk -v a="$u0" -v b="$u1" -v c="$s0" -v d="$s1" \
			'BEGIN { printf "%.1f/%.1f", b - a, d - c }')
	fi
	echo "# $fs $name: ${WALL[$fs,$name]} s" >&2
}

write_files() {
	local i
	for i in $(seq 1 "$nfiles"); do
		cp "$tmp/rand.bin" "$mnt/f$i" || return 1
	done
}

devid_of() {	# devid_of DEV: its devid in the mounted mfs
	"$mfs" filesystem show "$mnt" | awk -v d="$1" '$NF == d { print $2; exit }'
}

# ---- the two filesystems ----

run_btrfs() {
	mkfs.btrfs -q -f -d raid0 -m dup "$L1" "$L2" >/dev/null 2>&1 || die "mkfs.btrfs failed"
	mount -t btrfs -o device="$L2" "$L1" "$mnt" || die "btrfs mount failed"
	mounted=btrfs
	step btrfs write write_files
	step btrfs device-add btrfs device add -f "$L3" "$mnt"
	step btrfs balance btrfs balance start --full-balance -d -m "$mnt"
	step btrfs convert btrfs balance start -dconvert=raid5 -mconvert=raid1 "$mnt"
	step btrfs scrub btrfs scrub start -B "$mnt"
	step btrfs replace btrfs replace start -B -f "$L2" "$L4" "$mnt"
	step btrfs delete btrfs device delete "$L4" "$mnt"
	umount "$mnt" || die "btrfs umount failed"
	mounted=""
}

run_mfs() {
	local devid
	"$build/mkfs.mfs" -q -f -d raid0 -m dup "$L1" "$L2" >/dev/null || die "mkfs.mfs failed"
	"$mfs" mount "$L1" "$L2" "$mnt" || die "mfs mount failed"
	mounted=mfs
	step mfs write write_files
	(cd "$mnt" && sha256sum f*) > "$tmp/sums"
	step mfs device-add "$mfs" device add -K -f "$L3" "$mnt"
	# what each step's new layout stores per byte moved: data raid0 /
	# metadata dup; data raid5 on 3 devices / raid1; raid5 on 2 / raid1
	read -r 'MOVED[balance]' 'WRITTEN[balance]' < <(moved_bytes 1 2)
	step mfs balance "$mfs" balance start --full-balance "$mnt"
	read -r 'MOVED[convert]' 'WRITTEN[convert]' < <(moved_bytes 1.5 2)
	step mfs convert "$mfs" balance start -dconvert=raid5 -mconvert=raid1 "$mnt"
	step mfs scrub "$mfs" scrub start -B "$mnt"
	# a replace's floor: copying what the source holds (data raid5 on 3, raid1)
	read -r 'MOVED[replace]' 'WRITTEN[replace]' < <(moved_bytes 1.5 2 "$(devid_of "$L2")" share)
	step mfs replace "$mfs" replace start -B -f "$L2" "$L4" "$mnt"
	devid=$(devid_of "$L4")
	[ -n "$devid" ] || die "no devid for $L4"
	read -r 'MOVED[delete]' 'WRITTEN[delete]' < <(moved_bytes 2 2 "$devid")
	step mfs delete "$mfs" device delete "$L4" "$mnt"
	(cd "$mnt" && sha256sum --quiet -c "$tmp/sums") >&2 ||
		echo "# WARNING: mfs file contents changed during the run" >&2
	"$mfs" umount "$mnt" || die "mfs umount failed"
	mounted=""
	"$mfs" check "$L1" "$L3" >/dev/null 2>&1 || echo "# WARNING: mfs check after the run failed" >&2
}

# ---- the raw-device limit ----

# bytes/s from BYTES and the median of some seconds
rate() { awk -v b="$1" -v s="$(echo "$2" | median)" 'BEGIN { printf "%.0f", b / s }'; }

# The raw rates, each from the median of BENCH_RAW_REPS runs moving the most
# any restripe step moved: a copy from one loop device to another (the goal's
# measure), a read alone; and a write alone (conv=fdatasync) of the most any
# step wrote (up to the device size): a rate measured on less than a step
# writes would hide the write-back throttling that a larger write meets.
run_raw() {
	local i op bytes=0 wbytes=0 copy="" rd="" wr="" devsize
	for op in balance convert delete; do
		[ "${MOVED[$op]:-0}" -gt "$bytes" ] && bytes=${MOVED[$op]}
		[ "${WRITTEN[$op]:-0}" -gt "$wbytes" ] && wbytes=${WRITTEN[$op]}
	done
	[ "$bytes" -gt 0 ] || return 0
	devsize=$(blockdev --getsize64 "$L4")
	[ "$wbytes" -gt "$devsize" ] && wbytes=$devsize
	[ "$wbytes" -gt 0 ] || wbytes=$bytes
	# real data on the source device, not holes
	for i in $(seq 1 "$nfiles"); do cat "$tmp/rand.bin"; done |
		dd of="$L5" bs=4M iflag=fullblock conv=fdatasync status=none || die "filling $L5 failed"
	for i in $(seq 1 "$raw_reps"); do
		copy="$copy $(timed dd if="$L5" of="$L4" bs=4M count="$bytes" iflag=count_bytes conv=fdatasync status=none)"
		rd="$rd $(timed dd if="$L5" of=/dev/null bs=4M count="$bytes" iflag=count_bytes status=none)"
		wr="$wr $(timed dd if=/dev/zero of="$L4" bs=4M count="$wbytes" iflag=count_bytes conv=fdatasync status=none)"
	done
	echo "# raw, $bytes bytes: copy$copy s; read$rd s; $wbytes bytes: write$wr s" >&2
	RAW_COPY=$(rate "$bytes" "$copy") RAW_READ=$(rate "$bytes" "$rd") RAW_WRITE=$(rate "$wbytes" "$wr")
	for op in balance convert replace delete; do
		[ -n "${MOVED[$op]:-}" ] || continue
		RAW[$op]=$(awk -v b="${MOVED[$op]}" -v r="$RAW_COPY" 'BEGIN { printf "%.2f", b / r }')
		RAWRW[$op]=$(awk -v b="${MOVED[$op]}" -v w="${WRITTEN[$op]}" -v r="$RAW_READ" \
			-v x="$RAW_WRITE" 'BEGIN { printf "%.2f", b / r + w / x }')
	done
}

# ---- the run ----

echo "# mfs ($("$mfs" --version 2>/dev/null | head -1)) vs btrfs (kernel $(uname -r), $(mkfs.btrfs --version | head -1))"
echo "# 5 loop devices over ${img_size} sparse images in $tmp; ${data_mib} MiB in ${nfiles} files;" \
	"drop caches before each step: $drop; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for fs in $fss; do
	case "$fs" in
	btrfs) run_btrfs ;;
	mfs) run_mfs ;;
	*) die "unknown filesystem '$fs' in BENCH_FS" ;;
	esac
done
[[ " $fss " == *" mfs "* ]] && run_raw

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
mib() { awk -v b="$1" 'BEGIN { printf "%.0f", b / 1048576 }'; }

echo
if [ -n "${RAW_COPY:-}" ]; then
	echo "# raw loop-device rates: copy $(mib "$RAW_COPY") MiB/s, read $(mib "$RAW_READ") MiB/s," \
		"write $(mib "$RAW_WRITE") MiB/s; load average now $(cut -d' ' -f1-3 /proc/loadavg)"
fi
printf '%-10s %7s %7s %6s | %6s %6s | %6s %6s | %6s %6s | %8s | %11s %11s\n' step "btrfs s" "mfs s" "/btrfs" \
	"MiB mv" "MiB wr" "raw s" "/raw" "rw s" "/rw" "mfs u/s" "btrfs stall" "mfs stall"
for s in write device-add balance convert scrub replace delete; do
	b=${WALL[btrfs,$s]:-} m=${WALL[mfs,$s]:-}
	mv=- wr=- raw=- rr=- rw=- rrw=-
	if [ -n "${MOVED[$s]:-}" ]; then
		mv=$(mib "${MOVED[$s]}") wr=$(mib "${WRITTEN[$s]}")
		raw=${RAW[$s]:--} rr=$(ratio "$m" "${RAW[$s]:-}")
		rw=${RAWRW[$s]:--} rrw=$(ratio "$m" "${RAWRW[$s]:-}")
	fi
	printf '%-10s %7s %7s %6s | %6s %6s | %6s %6s | %6s %6s | %8s | %11s %11s\n' "$s" "${b:--}" "${m:-n/a}" \
		"$(ratio "$m" "$b")" "$mv" "$wr" "$raw" "$rr" "$rw" "$rrw" "${CPU[mfs,$s]:--}" \
		"${STALL[btrfs,$s]:--}" "${STALL[mfs,$s]:--}"
done
cat <<'EOF'
# /btrfs: mfs time / btrfs time. MiB mv: used bytes of the chunks the step
# relocates; MiB wr: what their new layout stores. raw s: a loop-device copy
# of MiB mv at the raw copy rate; rw s: reading MiB mv plus writing MiB wr at
# the raw read and write rates. mfs u/s: CPU seconds of the mfs daemon.
# stall: slowest/99.9th percentile ms of a create+write+stat+unlink probe run
# every 10 ms during the step (the filesystem serving while it restripes;
# with fewer than 1000 rounds the 99.9th percentile is the slowest); goals:
# < 100 ms slowest, < 50 ms 99.9th percentile.
# replace: MiB mv and MiB wr are what the source holds (one stripe's share
# of each of its chunks): the floor of a device copy.
# delete: both delete the replace target (holding what device 2 held).
# goals: restripe steps (balance, convert, delete) /btrfs <= 0.5 and /raw <= 1.3;
# replace /btrfs <= 0.5 and /raw <= 1.1
EOF
