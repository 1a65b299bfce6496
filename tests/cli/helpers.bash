# Shared setup for the mfs CLI tests (bats 1.8).
#
# Every test works in its own directory $T under $BATS_TEST_TMPDIR, with its
# own device registry ($MFS_REGISTRY), so tests never see each other's
# images. Loop devices, mounts and helper processes a test creates are
# recorded and undone in teardown, whatever the test's outcome.

bats_require_minimum_version 1.5.0
bats_load_library bats-support
bats_load_library bats-assert

MFS_BUILD=${MFS_BUILD:-"$BATS_TEST_DIRNAME/../../build"}
MFS_BUILD=$(cd "$MFS_BUILD" && pwd)
export MFS_BUILD
export PATH="$MFS_BUILD:$PATH"

GiB=1073741824
MiB=1048576

setup() {
	[ -x "$MFS_BUILD/mfs" ] || {
		echo "mfs binaries not found in $MFS_BUILD (run scripts/build.sh)" >&2
		return 1
	}
	T=$(mktemp -d "${BATS_TEST_TMPDIR:-$BATS_TMPDIR}/w.XXXXXX")
	T=$(realpath "$T")
	export MFS_REGISTRY="$T/registry"
	# points where a test can hold an operation (restripe.bash: hold_at)
	export MFS_TEST_PAUSE_AT="restripe-copied:$T/hold,restripe-checkpoint:$T/hold-ckpt,restriper-stop:$T/hold-stop,scrub-step:$T/hold-scrub,scrubber-stop:$T/hold-scrub-stop,commit-supers:$T/hold-commit,evacuate-read:$T/hold-evac,map-wait:$T/hold-map,commit-wait:$T/hold-wait,read-locked:$T/hold-relock"
	: >"$T/.pids"
	: >"$T/.mounts"
	: >"$T/.loops"
	cd "$T" || return 1
}

teardown() {
	local pid m l

	cd / || true
	[ -n "${T:-}" ] || return 0
	while read -r pid; do
		[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	done <"$T/.pids"
	# unmount in reverse order, then detach the loop devices; a mount
	# that stays busy (a process killed above still exiting) is detached
	# lazily: left mounted, its server would keep the test's files (and
	# bats waiting for output it holds open)
	tac "$T/.mounts" | while read -r m; do
		[ -n "$m" ] && mountpoint -q "$m" || continue
		umount "$m" 2>/dev/null && continue
		# who holds it, into the TAP stream: seen once in CI, not explained
		echo "# teardown: $m busy: $(fuser -vm "$m" 2>&1 | grep -v '^Cannot stat' | tr -s ' \n' ' ')" >&3
		umount -l "$m" 2>/dev/null
	done
	while read -r l; do
		[ -n "$l" ] && losetup -d "$l" 2>/dev/null
	done <"$T/.loops"
	rm -rf "$T"
}

# make_images N [SIZE]: sparse image files $T/img1..imgN (default 1G each).
make_images() {
	local n=$1 size=${2:-1G} i

	for ((i = 1; i <= n; i++)); do
		rm -f "$T/img$i"
		truncate -s "$size" "$T/img$i"
	done
}

# imgs N: the absolute paths of img1..imgN, space separated.
imgs() {
	local i out=""

	for ((i = 1; i <= $1; i++)); do
		out="$out $T/img$i"
	done
	echo $out
}

# make_loop IMG: attach IMG to a free loop device, print its path.
make_loop() {
	local dev

	dev=$(losetup -f --show "$1") || return 1
	echo "$dev" >>"$T/.loops"
	echo "$dev"
}

# mount_dev DEV DIR: mount and remember it for teardown.
mount_dev() {
	mkdir -p "$2"
	mount "$1" "$2" || return 1
	echo "$2" >>"$T/.mounts"
}

# hold_flock FILE: keep an exclusive flock on FILE until teardown.
hold_flock() {
	local ready="$T/.flock.$RANDOM"

	(
		exec 9<>"$1"
		flock -x 9
		touch "$ready"
		exec sleep 300
	) 3>&- &
	echo $! >>"$T/.pids"
	wait_for_file "$ready"
}

# hold_excl DEV: keep DEV open with O_EXCL until teardown (a busy block device).
hold_excl() {
	local ready="$T/.excl.$RANDOM"

	python3 -c '
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_EXCL)
open(sys.argv[2], "w").close()
time.sleep(300)
' "$1" "$ready" 3>&- &
	echo $! >>"$T/.pids"
	wait_for_file "$ready"
}

# wait_until SECONDS CMD...: poll CMD until it succeeds. The bound is
# there for a hang, to fail rather than wait for ever; nothing waits for it.
wait_until() {
	local end=$((SECONDS + $1))

	shift
	until "$@"; do
		if ((SECONDS >= end)); then
			echo "timed out waiting for: $*" >&2
			return 1
		fi
		sleep 0.05
	done
}

# balance_done MNT: no balance, convert or delete runs or waits on MNT
# (balance status exits 0); with wait_until, until one the mount started
# by itself (a returning member's reduced chunks) has finished.
balance_done() {
	mfs balance status "$1" >/dev/null 2>&1
}

# wait_for_file FILE [SECONDS]: until FILE exists (60 s at most)
wait_for_file() {
	wait_until "${2:-60}" test -e "$1"
}

# seed_image FILE: random bytes where mkfs would write or trim (superblock
# copies, the first MiB, the bootstrap chunk area, data area, the end), so
# that any write or discard changes fingerprint().
seed_image() {
	local f=$1 size off

	size=$(stat -c %s "$f")
	for off in 0 16 64 1024 65536 66560 73728 74752 262144; do
		# offsets in KiB
		if ((off * 1024 + 65536 <= size)); then
			dd if=/dev/urandom of="$f" bs=1K seek="$off" count=64 conv=notrunc status=none
		fi
	done
	dd if=/dev/urandom of="$f" bs=1K seek=$((size / 1024 - 64)) count=64 conv=notrunc \
		status=none
}

# fingerprint FILE: size, allocated blocks and a digest of the interesting
# regions (first 96 MiB, the last MiB).
fingerprint() {
	local f=$1 size

	# flush first: delayed allocation changes st_blocks at writeback
	sync -- "$f"
	size=$(stat -c %s "$f")
	{
		stat -c '%s %b' "$f"
		dd if="$f" bs=1M count=96 status=none | md5sum
		dd if="$f" bs=1M skip=$((size / MiB - 1)) status=none | md5sum
	} | tr '\n' ' '
}

# assert_untouched FILE FINGERPRINT
assert_untouched() {
	local now

	now=$(fingerprint "$1")
	if [ "$now" != "$2" ]; then
		echo "$1 was modified: before [$2] after [$now]" >&2
		return 1
	fi
}

assert_no_registry() {
	if [ -e "$MFS_REGISTRY" ]; then
		echo "registry was written:" >&2
		cat "$MFS_REGISTRY" >&2
		return 1
	fi
}

# fs_uuid DEV: the fsid from the primary superblock.
fs_uuid() {
	mfs inspect-internal dump-super "$1" | awk -F'\t+' '$1 == "fsid" { print $2 }'
}

# super_field DEV NAME [COPY]: a numeric/plain field of dump-super.
super_field() {
	mfs inspect-internal dump-super -s "${3:-0}" "$1" |
		awk -F'\t+' -v k="$2" '$1 == k { print $2; exit }'
}

# tree_root_bytenr DEV TREE: the bytenr of the first block dump-tree prints
# for TREE (the root of that tree).
tree_root_bytenr() {
	mfs inspect-internal dump-tree -t "$2" "$1" | awk '$1 == "leaf" || $1 == "node" { print $2; exit }'
}

# physical_copies DEV BYTENR: "devid physical" for each copy of the logical
# range at BYTENR, from the chunk tree (single, DUP and RAID1* chunks, where
# each stripe holds the whole chunk).
physical_copies() {
	mfs inspect-internal dump-tree -t chunk "$1" | awk -v b="$2" '
		/CHUNK_ITEM/ { s = $0; sub(/.*CHUNK_ITEM /, "", s); sub(/\).*/, "", s); logical = s + 0 }
		$1 == "length" { len = $2 + 0 }
		$1 == "stripe" && b >= logical && b < logical + len { print $4, $6 + (b - logical) }'
}

# write_degraded N GONE MKFS-OPTION...: mkfs over N images, image GONE
# moved away ($T/goneGONE), mounted -o degraded at $T/mnt, 8 MiB written
# and synced (into chunks made on the devices left)
write_degraded() {
	local n=$1 gone=$2

	shift 2
	make_images "$n"
	mkfs.mfs -q -f "$@" $(imgs "$n")
	mv "$T/img$gone" "$T/gone$gone"
	mfs_mount -o degraded "$T/img1" "$T/mnt"
	head -c $((8 * MiB)) /dev/urandom >"$T/mnt/f"
	sync
}

# corrupt_every_copy DEV BYTENR: damage every copy of the block at BYTENR
# (single, DUP and RAID1* chunks: physical_copies)
corrupt_every_copy() {
	local devid phys

	while read -r devid phys; do
		corrupt "$(path_of_devid "$devid")" $((phys + 200)) 64
	done < <(physical_copies "$1" "$2")
}

# corrupt FILE OFFSET [COUNT]: overwrite COUNT (default 4) bytes with 0xde 0xad ...
corrupt() {
	local count=${3:-4}

	head -c "$count" /dev/zero | tr '\0' '\336' |
		dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# zero FILE OFFSET COUNT
zero() {
	dd if=/dev/zero of="$1" bs=1 seek="$2" count="$3" conv=notrunc status=none
}

# path_of_devid DEVID: the image file of that member (img<devid> by construction)
path_of_devid() {
	echo "$T/img$1"
}

# With `run --separate-stderr`: assert an exact line / a regex line on stderr.
assert_stderr_line() {
	if ! grep -qxF -- "$1" <<<"$stderr"; then
		printf 'stderr has no line: %s\n-- stderr --\n%s\n--\n' "$1" "$stderr" >&2
		return 1
	fi
}

assert_stderr_regex() {
	if ! grep -qE -- "$1" <<<"$stderr"; then
		printf 'stderr does not match: %s\n-- stderr --\n%s\n--\n' "$1" "$stderr" >&2
		return 1
	fi
}

assert_stdout_empty() {
	if [ -n "$output" ]; then
		printf 'stdout not empty:\n%s\n' "$output" >&2
		return 1
	fi
}

assert_stderr_empty() {
	if [ -n "$stderr" ]; then
		printf 'stderr not empty:\n%s\n' "$stderr" >&2
		return 1
	fi
}

# count_lines REGEX: how many lines of $output match
count_lines() {
	grep -cE -- "$1" <<<"$output" || true
}

# ---------------- mounted filesystems (mount.bats, selfheal.bats) ----------------
#
# A test that mounts calls mfs_cleanup_mounts from its teardown (before the
# common teardown): mounts made with mfs_mount are unmounted with
# `mfs umount`, which waits until the server has written everything and
# exited; the mount of a dead server is detached.

MFS_PY=${MFS_PY:-$(command -v /usr/bin/python3 || command -v python3)}

# is_mounted DIR: DIR is a mount point in the mount table (works for dead FUSE servers too)
is_mounted() {
	awk -v m="$1" '$2 == m { f = 1 } END { exit !f }' /proc/self/mounts
}

# mfs_mount [mfs mount options] DEV... MNT: mount and remember MNT.
mfs_mount() {
	local mnt=${!#}

	mkdir -p "$mnt"
	echo "$mnt" >>"$T/.mfs_mounts"
	mfs mount "$@" 3>&-
}

# mfs_daemon_pid MNT: pid of the server of the mfs mounted on MNT (MFS_IOC_FS_INFO).
mfs_daemon_pid() {
	"$MFS_PY" - "$1" <<'PY'
import fcntl, os, struct, sys
size = 8 + 16 + 8 + 8 + 4 + 4 + 4096	# struct mfs_ioctl_fs_info
req = (2 << 30) | (size << 16) | (0xE5 << 8) | 1	# _IOR(0xE5, 1, ...)
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
buf = bytearray(size)
fcntl.ioctl(fd, req, buf, True)
print(struct.unpack_from("<Q", buf)[0])
PY
}

# xattr_dump DIR: every xattr of everything under DIR (symlinks not followed), sorted.
xattr_dump() {
	"$MFS_PY" - "$1" <<'PY'
import os, sys
os.chdir(sys.argv[1])
for root, dirs, files in sorted(os.walk(".")):
    for n in sorted(dirs + files):
        p = os.path.join(root, n)
        for a in sorted(os.listxattr(p, follow_symlinks=False)):
            print(p, a, os.getxattr(p, a, follow_symlinks=False))
PY
}

# tree_state DIR: path, type, mode, owner, and for non-directories size, link
# count and target, of everything under DIR; then contents and xattrs.
# (Directory sizes and link counts are left out: btrfs and mfs count differently.)
tree_state() {
	(cd "$1" && find . -mindepth 1 \( -type d -printf '%p d %m %U %G\n' \) -o \
		-printf '%p %y %m %U %G %s %n %l\n' | sort) && tree_sums "$1" && xattr_dump "$1"
}

# wait_pid_exit PID [SECONDS]: until PID is gone (or a zombie).
wait_pid_exit() {
	local i state

	for ((i = 0; i < ${2:-60} * 20; i++)); do
		state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 0
		[ -z "$state" ] || [ "$state" = Z ] && return 0
		sleep 0.05
	done
	echo "process $1 did not exit" >&2
	return 1
}

# mfs_kill9 MNT: kill the server of MNT with SIGKILL (a crash) and detach the mount.
mfs_kill9() {
	local pid

	pid=$(mfs_daemon_pid "$1") || return 1
	kill -9 "$pid" || return 1
	wait_pid_exit "$pid" || return 1
	umount -l "$1"
}

mfs_cleanup_mounts() {
	local m

	[ -n "${T:-}" ] && [ -f "$T/.mfs_mounts" ] || return 0
	tac "$T/.mfs_mounts" | while read -r m; do
		[ -n "$m" ] && is_mounted "$m" || continue
		timeout 120 mfs umount "$m" >/dev/null 2>&1 || umount -l "$m" 2>/dev/null
	done
	return 0
}

# tree_sums DIR: "sha256  path" of every regular file under DIR, sorted.
tree_sums() {
	(cd "$1" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum)
}

# dev_stat IMG DEVID NAME: one counter of `mfs device stats --offline`.
dev_stat() {
	mfs device stats --offline "$1" |
		awk -v d="$(path_of_devid "$2")" -v n="$3" '$1 == "[" d "]." n { print $2 }'
}

# corrupt_copies [--zero] [--what data|metadata|all] DEV DEVID[,DEVID]: damage the
# copies the devices hold of every live tree block and data extent (tests/cli/corrupt-copies.py).
corrupt_copies() {
	"$MFS_PY" "$BATS_TEST_DIRNAME/corrupt-copies.py" "$@"
}

# ---------------- damaged copies (selfheal.bats, scrub.bats) ----------------

STATS="write_io_errs read_io_errs flush_io_errs corruption_errs generation_errs"

# populate MNT: files of assorted sizes, many small ones, a deep tree, xattrs
populate() {
	local m=$1 i s

	mkdir -p "$m/big" "$m/small/a/b/c"
	for s in 1 4095 4096 65537 300000 1048576 $((4 * MiB + 1)) $((7 * MiB + 4321)); do
		head -c "$s" /dev/urandom >"$m/big/f$s"
	done
	for i in $(seq 1 400); do
		echo "small file number $i" >"$m/small/s$i"
	done
	for i in $(seq 1 30); do
		head -c $((i * 7777)) /dev/urandom >"$m/small/a/b/c/m$i"
	done
	yes "text that compresses" | head -c $((2 * MiB)) >"$m/big/text"
	"$MFS_PY" -c '
import os, sys
for i in range(50):
    os.setxattr(os.path.join(sys.argv[1], "small", "s%d" % (i + 1)), "user.tag", b"x" * (i * 20))
' "$m"
}

# read_all MNT SUMS: walk everything (readdir, stat, xattrs) and verify every
# file, its data read with O_DIRECT one 128 KiB request at a time.
read_all() {
	ls -laR "$1" >/dev/null &&
		xattr_dump "$1" >/dev/null &&
		"$MFS_PY" -c '
import hashlib, mmap, os, sys
top, ok = sys.argv[1], True
buf = mmap.mmap(-1, 128 * 1024)
for line in open(sys.argv[2]):
    want, name = line.rstrip("\n").split("  ", 1)
    fd = os.open(os.path.join(top, name), os.O_RDONLY | os.O_DIRECT)
    h = hashlib.sha256()
    while True:
        n = os.readv(fd, [buf])
        if n <= 0:
            break
        h.update(buf[:n])
    os.close(fd)
    if h.hexdigest() != want:
        print("%s: FAILED" % name)
        ok = False
sys.exit(0 if ok else 1)
' "$1" "$2"
}

# stats_of IMG: "devid counter value" lines of the persisted counters
stats_of() {
	mfs --format json device stats --offline "$1" | "$MFS_PY" -c '
import json, sys
for d in json.load(sys.stdin)["device-stats"]:
    for k in sys.argv[1:]:
        print(d["devid"], k, d[k])
' $STATS
}

# damaged_counts DEVIDS: from corrupt_copies' $output, "devid min max" of
# the corruption errors the damage must cause on each device: one per data
# sector damaged there (every file is read through the bad copies), and at
# most one more per tree block damaged there. (A tree block the open reads
# before read_policy applies is read from its first copy; when the next
# commit copies it elsewhere, its bad copy is never met: it is free space.)
damaged_counts() {
	local d

	for d in ${1//,/ }; do
		awk -v d="$d" '$1 == "damaged" && $3 == d { print d, $5, $5 + $7 }' <<<"$output"
	done
}

# assert_corruption_errs IMG N EXPECTED: each device's persisted counters:
# corruption_errs as EXPECTED says ("devid count" or "devid min max"
# lines), 0 on the other devices, every other counter 0.
assert_corruption_errs() {
	local img=$1 n=$2 expected=$3 d k v min max

	stats_of "$img" >"$T/stats1"
	for ((d = 1; d <= n; d++)); do
		for k in $STATS; do
			v=$(awk -v d=$d -v k=$k '$1 == d && $2 == k { print $3 }' "$T/stats1")
			min=0 max=0
			if [ "$k" = corruption_errs ]; then
				read -r min max < <(awk -v d=$d '$1 == d { print $2, ($3 == "" ? $2 : $3) }' \
					<<<"$expected") || true
				min=${min:-0} max=${max:-0}
			fi
			if ! [[ $v =~ ^[0-9]+$ ]] || ((v < min || v > max)); then
				echo "devid $d: $k is $v, expected $min..$max" >&2
				return 1
			fi
		done
	done
}
