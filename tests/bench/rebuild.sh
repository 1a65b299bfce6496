#!/usr/bin/env bash
# Benchmark (not part of the test suite, not run by CI): rebuilding a
# degraded filesystem onto a new device, on mfs and on kernel btrfs, on the
# same loop devices (sparse images), in one run. For each data profile
# (BENCH_PROFILES; metadata raid1, 3 devices) and each filesystem, twice:
#
#   setup        mkfs on 3 devices, BENCH_DATA_MIB of random data in files of
#                up to 256 MiB, sync, unmount; then member 3 goes missing
#                (forgotten by the filesystem's device registry, its loop
#                device detached) and the filesystem is mounted -o degraded
#   replace      method A: replace start -B <devid of the missing member>
#                onto a fourth device
#   add+delete   method B (from a new setup): device add of the fourth
#                device, then device delete missing
#
# Each timed step starts with cold caches (sync + drop_caches) and ends with
# a commit. After each rebuild, filesystem show must list no missing member
# and, on mfs, the files' sha256 must match what was written.
#
# The raw floor of a rebuild: the bytes the missing member held (per chunk
# with a stripe on it, the chunk's used bytes times its share on that
# device: all of them for raid1, half for raid5 on 3 devices; from the mfs
# daemon's chunk list before the rebuild starts) and the time dd takes to
# copy that many bytes of random data from one loop device to another,
# conv=fdatasync (median of BENCH_RAW_REPS). Printed: wall times, mfs/btrfs,
# the bytes, the raw time and mfs/raw, with the goals: mfs/btrfs <= 0.5 and
# mfs/raw <= 1.3 (PASS or MISS per row). A raid5 rebuild reads more than
# it writes - the missing column is rebuilt from both survivors' columns:
# its floor ("floor s", mfs/floor) is the time to read those bytes from
# two places at once while the rebuilt bytes are written, all three
# together (for raid1 the copy is the floor).
#
# Needs root, the btrfs kernel module, btrfs-progs and python3.
#
#   BENCH_DATA_MIB=256 tests/bench/rebuild.sh      # a quick run
#
# Environment (defaults in brackets):
#   BENCH_DATA_MIB [1024]      data written before each rebuild
#   BENCH_IMG_SIZE [4G]        size of each sparse image
#   BENCH_PROFILES ["raid1 raid5"]  data profiles
#   BENCH_FS ["btrfs mfs"]     which filesystems to run, in this order
#   BENCH_DROP_CACHES [1]      drop the page cache before each timed step
#   BENCH_RAW_REPS [3]         runs of each raw copy (the median counts)
#   BENCH_TMPDIR [$TMPDIR or /tmp]  where the images live
#   MFS_BUILD [build/]         where the mfs binaries are
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${MFS_BUILD:-$top/build}
mfs=$build/mfs
data_mib=${BENCH_DATA_MIB:-1024}
img_size=${BENCH_IMG_SIZE:-4G}
profiles=${BENCH_PROFILES:-raid1 raid5}
fss=${BENCH_FS:-btrfs mfs}
drop=${BENCH_DROP_CACHES:-1}
raw_reps=${BENCH_RAW_REPS:-3}
methods="replace add+delete"

# shellcheck source=tests/bench/lib.bash
. "$top/tests/bench/lib.bash"
bench_require
[ "$data_mib" -ge 1 ] 2>/dev/null || die "BENCH_DATA_MIB must be a positive number of MiB"

bench_tmp rebuild
# loops[0..2]: the members; loops[3]: the new device; loops[4]: the raw
# copy's source. Member 3's loop device is detached to make it missing and
# a new one (over a new blank image) attached for the next setup: its name
# may change, so the others are always named through loops[].
bench_loops 5 "$img_size"
# the kernel keeps btrfs members it has seen, by loop device, after the
# images are gone: forget them before the names go back to the system
rebuild_cleanup() {
	bench_unmount
	forget btrfs "${loops[@]}"
	bench_cleanup
}
trap rebuild_cleanup EXIT

# the data: files of up to 256 MiB of random bytes, BENCH_DATA_MIB in all
bench_rand_files "$data_mib"

# ---- setting up a degraded filesystem ----

cold() {
	sync
	[ "$drop" = 1 ] && echo 3 >/proc/sys/vm/drop_caches
	return 0
}

# Both keep a registry of the members they have seen; a member left in it
# would be looked for at the next mount.
forget() {	# forget FS DEV...
	bench_forget "$@"
}

# A blank image under a new loop device as member 3.
new_member3() {
	rm -f "$tmp/d3.img"
	truncate -s "$img_size" "$tmp/d3.img"
	loops[2]=$(losetup -f --show "$tmp/d3.img") || die "losetup failed"
}

make_member3_missing() {	# make_member3_missing FS
	forget "$1" "${loops[2]}"
	losetup -d "${loops[2]}" || die "cannot detach ${loops[2]}"
	loops[2]=""
	rm -f "$tmp/d3.img"
}

write_files() {
	local i
	for ((i = 1; i <= nfiles; i++)); do
		cp "$tmp/rand.bin" "$mnt/f$i" || return 1
	done
}

# setup FS PROFILE: the data on 3 members, then member 3 missing and the
# filesystem mounted degraded on the other two
setup() {
	local fs=$1 out=$tmp/mkfs.out
	[ -n "${loops[2]}" ] || new_member3
	forget "$fs" "${loops[@]:0:4}"
	if [ "$fs" = mfs ]; then
		"$build/mkfs.mfs" -f -q -d "$2" -m raid1 "${loops[@]:0:3}"
	else
		mkfs.btrfs -f -q -d "$2" -m raid1 "${loops[@]:0:3}"
	fi >"$out" 2>&1 || { cat "$out" >&2; die "mkfs of $fs failed"; }
	mount_members "$fs" noatime "${loops[@]:0:3}"
	write_files || die "writing the files on $fs failed"
	if [ "$fs" = mfs ]; then "$mfs" filesystem sync "$mnt"; else sync -f "$mnt"; fi
	bench_unmount
	make_member3_missing "$fs"
	mount_members "$fs" noatime,degraded "${loops[@]:0:2}"
}

# The devid filesystem show marks missing (both print btrfs's line for it);
# mkfs gave the third device devid 3.
missing_devid() {
	local show id
	if [ "$1" = mfs ]; then show=("$mfs" filesystem show); else show=(btrfs filesystem show); fi
	id=$("${show[@]}" "$mnt" 2>/dev/null | awk '$1 == "devid" && /MISSING/ { print $2; exit }')
	echo "${id:-3}"
}

# held_bytes DEVID: what the member DEVID holds, from the mfs daemon's chunk
# list (MFS_IOC_SPACE): per chunk with stripes on it, the used bytes times
# the share of the chunk's stripe bytes on it (struct mfs_ioctl_space,
# kernel-shared/format/ioctl.h)
held_bytes() {
	python3 - "$mnt" "$1" <<'EOF'
import fcntl, os, struct, sys
NDEV, NCHUNK, NSTRIPE = 16, 32, 64
DEV = 6 * 8 + 512
CHUNK = 8 * 8
STRIPE = 2 * 8
HDR = 16 * 8                                    # through global_reserve_used
END = (1 << 64) - 1
size = HDR + NDEV * DEV + NCHUNK * CHUNK + NSTRIPE * STRIPE
req = (3 << 30) | (size << 16) | (0xE5 << 8) | 14  # _IOWR(0xE5, 14, ...)
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
devid = int(sys.argv[2])
chunks = {}                                     # logical -> [length, used, stripe_size, stripes on devid]
cur = [0, 0, 0]
while True:
    buf = bytearray(size)
    struct.pack_into("<3Q", buf, 0, *cur)
    fcntl.ioctl(fd, req, buf)
    cur = list(struct.unpack_from("<3Q", buf, 0))
    nchunk = struct.unpack_from("<Q", buf, 8 * 7)[0]
    s = 0
    for i in range(nchunk):
        off = HDR + NDEV * DEV + i * CHUNK
        logical, length, typ, used, nst, ssize, first, nr = struct.unpack_from("<8Q", buf, off)
        c = chunks.setdefault(logical, [length, used, ssize, 0])
        for k in range(nr):
            if struct.unpack_from("<Q", buf, HDR + NDEV * DEV + NCHUNK * CHUNK + (s + k) * STRIPE)[0] == devid:
                c[3] += 1
        s += nr
    if cur[0] == END and cur[1] == END:
        break
print(int(sum(used * ssize * n / length for length, used, ssize, n in chunks.values() if n and length)))
EOF
}

# btrfs's figure for comparison: the bytes allocated on the member
# (btrfs device usage), which btrfs's replace reads only in part
btrfs_allocated() {	# btrfs_allocated DEVID
	btrfs device usage -b "$mnt" 2>/dev/null | awk -v id="$1" '
		/^[^ \t]/ { on = ($0 ~ ", ID: " id "$") }
		on && /^[ \t]+(Data|Metadata|System),/ { n += $NF }
		END { print n + 0 }'
}

# ---- the rebuilds ----

declare -A WALL BYTES BALLOC CHECK

rebuild() {	# rebuild FS METHOD DEVID
	local fs=$1 new=${loops[3]} cmd
	if [ "$fs" = mfs ]; then cmd=("$mfs"); else cmd=(btrfs); fi
	if [ "$2" = replace ]; then
		"${cmd[@]}" replace start -B -f "$3" "$new" "$mnt" || return 1
	elif [ "$fs" = mfs ]; then
		"$mfs" device add -f "$new" "$mnt" && "$mfs" device delete missing "$mnt" || return 1
	else
		btrfs device add -f "$new" "$mnt" && btrfs device remove missing "$mnt" || return 1
	fi
	# a commit: syncfs commits btrfs; FUSE gets no syncfs, mfs has its own
	if [ "$fs" = mfs ]; then "$mfs" filesystem sync "$mnt"; else sync -f "$mnt"; fi
}

# whole again: no member missing, and on mfs the files as written
verify() {	# verify FS
	if [ "$1" = mfs ]; then
		"$mfs" filesystem show --check "$mnt" >"$tmp/show.out" 2>&1 || { sed "s/^/# show: /" "$tmp/show.out" >&2; "$mfs" device stats "$mnt" 2>&1 | grep -v " 0$" | sed "s/^/# stats: /" >&2; echo "missing"; return; }
		"$mfs" balance status "$mnt" >/dev/null || { echo "busy"; return; }
		(cd "$mnt" && sha256sum --quiet -c "$tmp/sums") >&2 || { echo "sha256"; return; }
	else
		btrfs filesystem show "$mnt" | grep -q MISSING && { echo "missing"; return; }
	fi
	echo ok
}

run_one() {	# run_one FS PROFILE METHOD
	local fs=$1 key=$2,$3,$1 devid t0 t1 out=$tmp/step.out
	setup "$fs" "$2"
	devid=$(missing_devid "$fs")
	if [ "$fs" = mfs ]; then
		BYTES[$2,$3]=$(held_bytes "$devid") || die "cannot read the mfs chunk list"
	else
		BALLOC[$2,$3]=$(btrfs_allocated "$devid")
	fi
	cold
	t0=$(now_ns)
	if ! rebuild "$fs" "$3" "$devid" >"$out" 2>&1; then
		# the other rows still tell something: note it and go on
		sed "s/^/# $fs $2 $3: /" "$out" >&2
		CHECK[$key]=failed
		bench_unmount
		return
	fi
	t1=$(now_ns)
	WALL[$key]=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
	CHECK[$key]=$(verify "$fs")
	echo "# $fs $2 $3 (devid $devid): ${WALL[$key]} s, after: ${CHECK[$key]}" >&2
	bench_unmount
}

# ---- the raw floor ----

declare -A RAW FLOOR

# For each rebuild's bytes, the median time of a copy of them from one loop
# device (filled with random data first: holes read faster) to another.
run_raw() {
	local k bytes=0 src=${loops[4]} dst=${loops[3]} times r
	for k in "${!BYTES[@]}"; do
		[ "${BYTES[$k]}" -gt "$bytes" ] && bytes=${BYTES[$k]}
	done
	[ "$bytes" -gt 0 ] || return 0
	forget btrfs "$dst"
	forget mfs "$dst"
	while cat "$tmp/rand.bin"; do :; done 2>/dev/null |
		dd of="$src" bs=4M count=$((2 * bytes)) iflag=fullblock,count_bytes conv=fdatasync status=none ||
		die "filling $src failed"
	for k in "${!BYTES[@]}"; do
		times=""
		for ((r = 0; r < raw_reps; r++)); do
			times="$times $(timed dd if="$src" of="$dst" bs=4M count="${BYTES[$k]}" \
				iflag=count_bytes conv=fdatasync status=none)"
		done
		RAW[$k]=$(echo "$times" | median)
		echo "# raw copy of ${BYTES[$k]} bytes ($k):$times s" >&2
		FLOOR[$k]=${RAW[$k]}
		[[ $k == raid5,* ]] || continue
		times=""
		for ((r = 0; r < raw_reps; r++)); do
			times="$times $(timed rebuild_floor "$src" "$dst" "${BYTES[$k]}")"
		done
		FLOOR[$k]=$(echo "$times" | median)
		echo "# raid5 rebuild floor of ${BYTES[$k]} bytes ($k):$times s" >&2
	done
}

# rebuild_floor SRC DST BYTES: read BYTES twice from SRC (two survivors'
# columns, from two places) while BYTES are written to DST, direct
rebuild_floor() {
	dd if="$1" of=/dev/null bs=4M count="$3" iflag=count_bytes,direct status=none &
	dd if="$1" of=/dev/null bs=4M skip="$3" count="$3" iflag=skip_bytes,count_bytes,direct \
		status=none &
	dd if=/dev/zero of="$2" bs=4M count="$3" iflag=count_bytes oflag=direct \
		conv=fdatasync status=none
	wait
}

# ---- the run ----

echo "# mfs ($("$mfs" --version 2>/dev/null | head -1)) vs btrfs (kernel $(uname -r), $(mkfs.btrfs --version | head -1))"
echo "# loop devices over ${img_size} sparse images in $tmp; ${data_mib} MiB in ${nfiles} files;" \
	"drop caches before each step: $drop; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for p in $profiles; do
	for fs in $fss; do
		case "$fs" in
		btrfs | mfs) ;;
		*) die "unknown filesystem '$fs' in BENCH_FS" ;;
		esac
		for m in $methods; do
			run_one "$fs" "$p" "$m"
		done
	done
done
[[ " $fss " == *" mfs "* ]] && run_raw

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
goal() { awk -v r="$1" -v g="$2" 'BEGIN { if (r == "-") print "-"; else print (r + 0 <= g ? "PASS" : "MISS") }'; }
mib() { awk -v b="$1" 'BEGIN { if (b == "") print "-"; else printf "%.0f", b / 1048576 }'; }

echo
row() { printf '%-7s %-11s %7s %7s %9s %9s %7s %7s %7s %9s %-5s %-5s %-6s %-6s\n' "$@"; }
row profile method "btrfs s" "mfs s" mfs/btrfs "MiB rebu" "raw s" mfs/raw "floor s" mfs/floor \
	"<=0.5" "<=1.3" "btrfs" "mfs"
for p in $profiles; do
	for m in $methods; do
		b=${WALL[$p,$m,btrfs]:-} s=${WALL[$p,$m,mfs]:-} raw=${RAW[$p,$m]:-} fl=${FLOOR[$p,$m]:-}
		rb=$(ratio "$s" "$b") rr=$(ratio "$s" "$raw") rf=$(ratio "$s" "$fl")
		row "$p" "$m" "${b:--}" "${s:--}" "$rb" "$(mib "${BYTES[$p,$m]:-}")" "${raw:--}" "$rr" \
			"${fl:--}" "$rf" "$(goal "$rb" 0.5)" "$(goal "$rr" 1.3)" \
			"${CHECK[$p,$m,btrfs]:--}" "${CHECK[$p,$m,mfs]:--}"
	done
done
for p in $profiles; do
	for m in $methods; do
		[ -n "${BALLOC[$p,$m]:-}" ] &&
			echo "# btrfs $p $m: $(mib "${BALLOC[$p,$m]}") MiB allocated on the missing member (btrfs device usage)"
	done
done
cat <<'EOF'
# mfs/btrfs: mfs time / btrfs time (goal <= 0.5). MiB rebu: the used bytes
# the missing member held (mfs chunk list). raw s: a dd copy of those bytes
# from one loop device to another, conv=fdatasync (median); mfs/raw: goal
# <= 1.3. floor s: raid5, the survivors' bytes read (twice the bytes) while
# the rebuilt ones are written, all at once (median); raid1: the copy.
# btrfs, mfs: after the rebuild, ok = no member missing (and on mfs
# the files' sha256 as written), otherwise what was wrong.
# replace: replace start -B of the missing devid onto a new device;
# add+delete: device add of a new device, then device delete missing.
EOF
