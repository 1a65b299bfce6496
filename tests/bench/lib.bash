# What the benchmarks share (sourced): checks of what they need, a
# temporary folder with loop devices over sparse images that is cleaned up
# on exit, and the measuring helpers. The caller sets build (the build
# folder) and mfs (its mfs binary) before sourcing.

die() { echo "ERROR: $*" >&2; exit 1; }

# bench_require: root, the mfs build, btrfs-progs, python3, kernel btrfs.
bench_require() {
	[ "$(id -u)" -eq 0 ] || die "needs root (loop devices, mount, drop_caches)"
	[ -x "$mfs" ] || die "$mfs not built (run scripts/build.sh)"
	command -v mkfs.btrfs >/dev/null ||
		die "mkfs.btrfs not found (btrfs-progs, scripts/install-deps.sh)"
	command -v python3 >/dev/null || die "python3 not found"
	grep -qw btrfs /proc/filesystems || modprobe btrfs 2>/dev/null ||
		die "the kernel has no btrfs"
}

# bench_tmp NAME: $tmp (removed on exit, with the loop devices in $loops
# detached and $mnt unmounted), $mnt, and a device registry of its own so
# the bench's devices stay out of the host's.
bench_tmp() {
	tmp=$(mktemp -d "${BENCH_TMPDIR:-${TMPDIR:-/tmp}}/mfs-bench-$1.XXXXXX")
	mnt=$tmp/mnt
	mkdir -p "$mnt"
	loops=()
	mounted=""	# "mfs" or "btrfs" while $mnt is mounted
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
	export MFS_REGISTRY=$tmp/registry
}

bench_unmount() {
	case "$mounted" in
	mfs) "$mfs" umount "$mnt" ;;
	btrfs) umount "$mnt" ;;
	esac
	mounted=""
}

bench_cleanup() {
	local l

	bench_unmount
	for l in "${loops[@]}"; do
		losetup -d "$l" 2>/dev/null
	done
	rm -rf "$tmp"
}

# bench_loops N SIZE: N sparse images of SIZE in $tmp, each on a loop device ($loops).
bench_loops() {
	local i l

	for ((i = 1; i <= $1; i++)); do
		truncate -s "$2" "$tmp/d$i.img"
		l=$(losetup -f --show "$tmp/d$i.img") || die "losetup failed"
		loops+=("$l")
	done
}

# bench_mkfiles: $tmp/mkfiles, the creating process of the small-file
# benchmarks, compiled here so that the loop itself costs next to nothing:
#   $tmp/mkfiles DIR N SIZE DIRS
# makes DIR and DIRS directories in it, then N files of SIZE bytes spread
# over them in turn, one open O_CREAT|O_EXCL, write, close each.
bench_mkfiles() {
	command -v cc >/dev/null || die "no C compiler (cc)"
	cat >"$tmp/mkfiles.c" <<'EOF'
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = atol(argv[2]), size = atol(argv[3]), dirs = atol(argv[4]), i;
	char path[4096], *data = malloc(size);

	for (i = 0; i < size; i++)
		data[i] = (char)(i * 7 + 1);
	if (mkdir(argv[1], 0755))
		return perror(argv[1]), 1;
	for (i = 0; i < dirs; i++) {
		snprintf(path, sizeof(path), "%s/d%03ld", argv[1], i);
		if (mkdir(path, 0755))
			return perror(path), 1;
	}
	for (i = 0; i < n; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/d%03ld/f%07ld", argv[1], i % dirs, i);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0 || write(fd, data, size) != size || close(fd))
			return perror(path), 1;
	}
	return 0;
}
EOF
	cc -O2 -o "$tmp/mkfiles" "$tmp/mkfiles.c" ||
		die "cannot compile the file creator"
}

now_ns() { date +%s%N; }

# bench_commit mfs|btrfs: commit what was written to the filesystem at
# $mnt. sync -f on btrfs; Linux sends a FUSE server no syncfs request, so
# on mfs sync -f only hands over the page cache: mfs filesystem sync.
bench_commit() {
	if [ "$1" = mfs ]; then "$mfs" filesystem sync "$mnt"; else sync -f "$mnt"; fi
}

# mount_members mfs|btrfs OPTIONS DEV...: the filesystem on DEV... at $mnt.
mount_members() {
	local fs=$1 opts=$2 d
	shift 2
	if [ "$fs" = mfs ]; then
		"$mfs" mount -o "$opts" "$@" "$mnt" || die "mfs mount -o $opts failed"
	else
		for d in "${@:2}"; do opts="$opts,device=$d"; done
		mount -t btrfs -o "$opts" "$1" "$mnt" || die "btrfs mount -o $opts failed"
	fi
	mounted=$fs
}

# mount_fs mfs|btrfs: the two loop devices on $mnt, noatime.
mount_fs() {
	mount_members "$1" noatime "${loops[0]}" "${loops[1]}"
}

# mkfs_fs mfs|btrfs PROFILE: data PROFILE, metadata raid1, on all of $loops.
mkfs_fs() {
	local out=$tmp/mkfs.out

	if [ "$1" = mfs ]; then
		"$build/mkfs.mfs" -f -q -d "$2" -m raid1 "${loops[@]}" >"$out" 2>&1
	else
		mkfs.btrfs -f -q -d "$2" -m raid1 "${loops[@]}" >"$out" 2>&1
	fi || { cat "$out" >&2; die "mkfs of $1 failed"; }
}

# The kernel's page, dentry and inode caches dropped (also those of the
# image files under the loop devices).
bench_drop_caches() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
}

# Cold caches: remount (mfs keeps its own tree-block cache in the daemon)
# and drop the kernel's caches.
cold() {
	local fs=$mounted

	bench_unmount
	bench_drop_caches
	mount_fs "$fs"
}

# run_phase FS CMD...: runs CMD, sets $wall (seconds) and, for mfs,
# $dusr/$dsys (daemon CPU seconds during the phase; any other FS, such as
# "offline" when no daemon runs, leaves them "-")
run_phase() {
	local fs=$1 t0 t1 pid u0 s0 u1 s1
	shift
	dusr=- dsys=-
	if [ "$fs" = mfs ]; then
		pid=$(daemon_pid) || die "cannot find the mfs daemon"
		read -r u0 s0 < <(cpu_of "$pid")
	fi
	t0=$(now_ns)
	"$@" || die "phase failed: $*"
	t1=$(now_ns)
	wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
	if [ "$fs" = mfs ]; then
		read -r u1 s1 < <(cpu_of "$pid")
		dusr=$(awk -v a="$u0" -v b="$u1" 'BEGIN { printf "%.2f", b - a }')
		dsys=$(awk -v a="$s0" -v b="$s1" 'BEGIN { printf "%.2f", b - a }')
	fi
}

# The pid of the mfs daemon serving $mnt, from its FS_INFO ioctl.
daemon_pid() {
	python3 - "$mnt" <<'PY'
import fcntl, os, struct, sys
size = 8 + 16 + 8 + 8 + 4 + 4 + 4096          # struct mfs_ioctl_fs_info
req = (2 << 30) | (size << 16) | (0xE5 << 8) | 1  # _IOR(0xE5, 1, ...)
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
buf = bytearray(size)
fcntl.ioctl(fd, req, buf)
print(struct.unpack_from("<Q", buf)[0])
PY
}

# User and system CPU seconds of a process so far.
cpu_of() {
	awk -v hz="$(getconf CLK_TCK)" '{
		sub(/^.*\) /, "")	# the comm field may hold spaces
		printf "%.2f %.2f\n", $12 / hz, $13 / hz }' "/proc/$1/stat"
}

# timed CMD...: seconds CMD takes from cold caches (the caller's cold())
timed() {
	local t0 t1
	cold
	t0=$(now_ns)
	"$@" || die "failed: $*"
	t1=$(now_ns)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }'
}

# median: the median of the numbers on stdin
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# bench_rand_files MIB: $tmp/rand.bin (up to 256 MiB of random bytes) and
# $tmp/sums, the sha256 of files f1..f$nfiles of it making MIB in all.
bench_rand_files() {
	local i sum

	file_mib=$(($1 < 256 ? $1 : 256))
	nfiles=$(($1 / file_mib))
	head -c "${file_mib}M" /dev/urandom >"$tmp/rand.bin"
	sum=$(sha256sum "$tmp/rand.bin" | cut -d' ' -f1)
	for ((i = 1; i <= nfiles; i++)); do
		echo "$sum  f$i"
	done >"$tmp/sums"
}

# bench_forget FS DEV...: DEV out of FS's registry of members seen (mfs or btrfs)
bench_forget() {
	local fs=$1 d
	shift
	for d in "$@"; do
		if [ "$fs" = mfs ]; then
			"$mfs" device scan -u "$d"
		else
			btrfs device scan --forget "$d"
		fi
	done >/dev/null 2>&1
	return 0
}
