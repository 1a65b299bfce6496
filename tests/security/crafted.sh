#!/usr/bin/env bash
# Crafted images against the real programs (issue 21, "Security"): the
# image fuzzer's seed corpus and regression inputs, and K fixed mutants of
# each (fuzz-replay -w: the mutants the replay runs, checksums fixed), are
# made into image files, and each is given to the daemon and to every
# command that reads an unmounted filesystem, built with ASan+UBSan
# (scripts/build.sh --sanitizers).
#
#   tests/security/crafted.sh [INPUT|DIR...]
#
# The inputs (harness inputs, or directories of them) default to
# tests/fuzz/corpus and tests/fuzz/regress.
#
# Each image sits in a directory of its own beside two sentinel files. A
# run fails when it hangs (MFS_SEC_TIMEOUT seconds), dies of a signal,
# leaves an ASan/UBSan/LSan report, changes a sentinel, adds or removes a
# file beside the image, changes the image's size, or writes the image
# when it only reads (its mtime). The engine refuses I/O past a device's
# end (kernel-shared/block/io.c); on the first MFS_SEC_STRACE images the
# check also runs under strace, which proves no file but the image is
# opened in its directory and no read or write reaches past its end.
#
# The runs of each image, read-only ones first: check, check-csum (with
# --check-data-csum), repair (--repair --force, on a copy), restore,
# dump-super, dump-tree, fs-show, dev-stats (--offline), scrub (-B -r,
# offline), mount-ro and mount-rw (mfs mount in the foreground; the tree
# walked: ls -laR, every file read up to 1 MiB, every xattr, statfs; on
# the read-write mount a file written and synced; then mfs umount).
#
# Environment: MFS_SEC_MUTANTS (K, default 8), MFS_SEC_IMAGES (N: only N
# of the images, spread evenly over the sorted list; default all),
# MFS_SEC_RUNS (the runs by name, default all), MFS_SEC_TIMEOUT (default
# 60 s per run), MFS_SEC_STRACE (default 3), MFS_SAN_BUILD (build-san/).
# Prints TAP; ends with "# security: N images, M runs, F failures".
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${MFS_SAN_BUILD:-$top/build-san}
mfs=$build/mfs
replay=$build/tests/fuzz/fuzz-replay
mutants=${MFS_SEC_MUTANTS:-8}
nr_images=${MFS_SEC_IMAGES:-0}
limit=${MFS_SEC_TIMEOUT:-60}
nr_strace=${MFS_SEC_STRACE:-3}
all_runs="check check-csum repair restore dump-super dump-tree fs-show dev-stats scrub mount-ro mount-rw"
runs=${MFS_SEC_RUNS:-$all_runs}

if [ ! -x "$mfs" ] || [ ! -x "$replay" ]; then
	echo "1..1"
	echo "not ok 1 - no sanitizer build in $build (scripts/build.sh --sanitizers)"
	echo "# security: 0 images, 0 runs, 1 failures"
	exit 1
fi

tmp=$(realpath "$(mktemp -d "${TMPDIR:-/tmp}/mfs-sec.XXXXXX")")
mnt=$tmp/mnt
daemon=""
cleanup() {
	if [ -n "$daemon" ]; then
		fusermount3 -u -z "$mnt" 2>/dev/null
		kill -KILL "$daemon" 2>/dev/null
		wait "$daemon" 2>/dev/null
	fi
	mountpoint -q "$mnt" && { fusermount3 -u -z "$mnt" || umount -l "$mnt"; }
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$tmp/images" "$mnt" "$tmp/san"

# Reports go to files: a daemon's stderr is nobody's.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:log_path=$tmp/san/asan"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$tmp/san/ubsan"
# Each image has a registry of its own: the mutants share an fsid, and a
# command must never take another image as a member.
export MFS_REGISTRY

[ $# -gt 0 ] || set -- "$top/tests/fuzz/corpus" "$top/tests/fuzz/regress"
"$replay" -m "$mutants" -w "$tmp/images" "$@" >"$tmp/replay.log" 2>&1 || {
	echo "1..1"
	echo "not ok 1 - fuzz-replay -w could not write the images"
	sed 's/^/# /' "$tmp/replay.log"
	echo "# security: 0 images, 0 runs, 1 failures"
	exit 1
}
mapfile -t images < <(find "$tmp/images" -type f -printf '%f\n' | LC_ALL=C sort)
if [ "$nr_images" -gt 0 ] && [ "$nr_images" -lt "${#images[@]}" ]; then
	picked=()
	for ((i = 0; i < nr_images; i++)); do
		picked+=("${images[i * ${#images[@]} / nr_images]}")
	done
	images=("${picked[@]}")
fi
nr_runs=0
for r in $runs; do
	nr_runs=$((nr_runs + 1))
done
echo "1..$((${#images[@]} * nr_runs))"

n=0
failures=0
post=""		# run_cmd runs it after the command: more reasons to fail

# state DIR IMG: what must not change: the sentinels' contents and times,
# the names in DIR and in its parent (which holds DIR only), the image's size.
state() {
	(cd "$1" && sha1sum sentinel-* && stat -c '%n %Y %y' sentinel-* && ls -A . .. &&
	 stat -c 'size %s' "$2")
}

# san_reports: the sanitizer reports left since the last run, on stdout.
san_reports() {
	local f

	for f in "$tmp"/san/*; do
		[ -f "$f" ] && sed -n '1,25p' "$f"
	done
}

# tap_result NAME WHAT WHY: one TAP line, WHAT what happened; WHY (lines)
# empty is a pass.
tap_result() {
	local name=$1 rc=$2 why=$3

	n=$((n + 1))
	if [ -z "$why" ]; then
		echo "ok $n - $name ($rc)"
	else
		failures=$((failures + 1))
		echo "not ok $n - $name"
		sed 's/^/#   /' <<<"$why"
	fi
}

# judge RC DIR IMG BEFORE MTIME READONLY ERRFILE: why the run failed (empty: it did not).
judge() {
	local rc=$1 dir=$2 img=$3 before=$4 mtime=$5 ro=$6 err=$7 rep

	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		echo "hang: stopped after ${limit}s"
	elif [ "$rc" -gt 128 ]; then
		echo "killed by signal $((rc - 128))"
	fi
	rep=$(san_reports)
	[ -n "$rep" ] && echo "sanitizer report:" && echo "$rep"
	grep -m 5 -E 'AddressSanitizer|LeakSanitizer|runtime error:' "$err"
	[ "$(state "$dir" "$img")" = "$before" ] ||
		echo "sentinels, names or image size changed: $(diff <(echo "$before") <(state "$dir" "$img") | tr '\n' ' ')"
	if [ "$ro" = 1 ] && [ "$(stat -c %y "$dir/$img")" != "$mtime" ]; then
		echo "a read-only run wrote the image"
	fi
}

# strace_check LOG DIR IMG: every file opened in DIR is IMG, and every
# read and write of it lies within its size.
strace_check() {
	python3 - "$@" <<'PY'
import os, re, sys
log, d, img = sys.argv[1:4]
path = os.path.join(d, img)
size = os.stat(path).st_size
bad = []
call = re.compile(r'^(?:\d+ +)?(pread64|pwrite64|preadv|pwritev|openat)\((.*)\) += (-?\d+)')
for line in open(log, errors="replace"):
    m = call.match(line)
    if not m:
        continue
    name, args, ret = m.group(1), m.group(2), int(m.group(3))
    if name == "openat":
        p = re.search(r'"([^"]*)"', args)
        if p and os.path.dirname(os.path.abspath(p.group(1))) == d and \
           os.path.basename(p.group(1)) != img:
            bad.append(line.strip())
        continue
    if ("<%s>" % path) not in args.split(",")[0]:
        continue
    off = int(args.rsplit(",", 1)[1])
    if name.endswith("v"):
        length = sum(int(x) for x in re.findall(r'iov_len=(\d+)', args))
    else:
        length = int(args.rsplit(",", 2)[1])
    if off + length > size:
        bad.append(line.strip())
for b in bad[:5]:
    print("outside the device: " + b)
PY
}

# run_cmd NAME DIR IMG READONLY CMD...: one command on one image.
run_cmd() {
	local name=$1 dir=$2 img=$3 ro=$4 before mtime rc=0 why
	shift 4

	before=$(state "$dir" "$img")
	mtime=$(stat -c %y "$dir/$img")
	rm -f "$tmp"/san/*
	(cd "$dir" && timeout -k 10 "$limit" "$@") >"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
	why=$(judge "$rc" "$dir" "$img" "$before" "$mtime" "$ro" "$tmp/err"
	      [ -z "$post" ] || $post)
	tap_result "$image: $name" "exit $rc" "$why"
}

# walk DIR [rw]: what a user does on a mount, each step bounded.
walk() {
	timeout -k 5 "$limit" ls -laR "$1" >/dev/null 2>&1 || [ $? -lt 124 ] || return 124
	timeout -k 5 "$limit" python3 - "$@" <<'PY' || return $?
import os, sys
top, rw = sys.argv[1], sys.argv[2:] == ["rw"]
seen = 0
def attrs(p):
    try:
        for a in os.listxattr(p, follow_symlinks=False):
            try:
                os.getxattr(p, a, follow_symlinks=False)
            except OSError:
                pass
    except OSError:
        pass
for root, dirs, files in os.walk(top):
    attrs(root)
    for f in files:
        seen += 1
        if seen > 4000:
            break
        p = os.path.join(root, f)
        attrs(p)
        try:
            if os.path.isfile(p) and not os.path.islink(p):
                with open(p, "rb") as fh:
                    fh.read(1 << 20)
        except OSError:
            pass
try:
    os.statvfs(top)
except OSError:
    pass
if rw:
    try:
        fd = os.open(os.path.join(top, "security-probe"), os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, b"x" * 65536)
        os.fsync(fd)
        os.close(fd)
        os.sync()
    except OSError:
        pass
PY
}

# mounted: the daemon's mount is in the mount table
mounted() {
	awk -v m="$mnt" '$2 == m { f = 1 } END { exit !f }' /proc/self/mounts
}

# run_mount NAME DIR IMG OPTS: the daemon in the foreground on IMG, the
# tree walked, unmounted; a refusal to mount is a pass.
run_mount() {
	local name=$1 dir=$2 img=$3 opts=$4 before mtime rc=0 why="" i ro=0 what=refused

	[ "$opts" = ro ] && ro=1
	before=$(state "$dir" "$img")
	mtime=$(stat -c %y "$dir/$img")
	rm -f "$tmp"/san/*
	"$mfs" mount -f -o "$opts" "$dir/$img" "$mnt" >"$tmp/out" 2>"$tmp/err" </dev/null &
	daemon=$!
	for ((i = 0; i < limit * 10; i++)); do
		mounted && break
		kill -0 "$daemon" 2>/dev/null || break
		sleep 0.1
	done
	if mounted; then
		what=mounted
		if [ "$opts" = rw ]; then
			walk "$mnt" rw || rc=$?
		else
			walk "$mnt" || rc=$?
		fi
		if [ "$rc" -ge 124 ]; then
			why="hang: the walk was stopped after ${limit}s"
		elif ! timeout -k 5 "$limit" "$mfs" umount "$mnt" >>"$tmp/out" 2>>"$tmp/err"; then
			why="mfs umount failed: $(tail -n 2 "$tmp/err" | tr '\n' ' ')"
		fi
	fi
	# the daemon has unmounted, refused, or is stopped now
	for ((i = 0; i < limit * 10; i++)); do
		kill -0 "$daemon" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$daemon" 2>/dev/null; then
		why="${why:+$why
}hang: the daemon did not exit"
		fusermount3 -u -z "$mnt" 2>/dev/null
		kill -KILL "$daemon" 2>/dev/null
	fi
	rc=0
	wait "$daemon" || rc=$?
	daemon=""
	mounted && { fusermount3 -u -z "$mnt" || umount -l "$mnt"; }
	why=$(printf '%s\n%s' "$why" "$(judge "$rc" "$dir" "$img" "$before" "$mtime" "$ro" "$tmp/err")" |
	      sed '/^$/d')
	tap_result "$image: $name" "$what, exit $rc" "$why"
}

nr=0
for image in "${images[@]}"; do
	img=$image
	nr=$((nr + 1))
	dir=$tmp/run/$nr
	mkdir -p "$dir/restore"
	mv "$tmp/images/$img" "$dir/$img"
	head -c 4096 /dev/urandom >"$dir/sentinel-a"
	head -c 4096 /dev/urandom >"$dir/sentinel-z"
	cp --sparse=always "$dir/$img" "$dir/copy"
	MFS_REGISTRY=$tmp/registry.$nr
	echo "# image $nr/${#images[@]}: $img"
	for r in $runs; do
		case $r in
		check)
			if [ "$nr" -le "$nr_strace" ]; then
				# LeakSanitizer does not work under ptrace
				post="strace_check $tmp/strace $dir $img"
				ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 run_cmd check "$dir" "$img" 1 strace -f -y -qq -s 0 -o "$tmp/strace" \
					-e trace=openat,pread64,pwrite64,preadv,pwritev "$mfs" check "$img"
				post=""
			else
				run_cmd check "$dir" "$img" 1 "$mfs" check "$img"
			fi ;;
		check-csum)	run_cmd "$r" "$dir" "$img" 1 "$mfs" check --check-data-csum "$img" ;;
		repair)		run_cmd "$r" "$dir" copy 0 "$mfs" check --repair --force copy ;;
		restore)	run_cmd "$r" "$dir" "$img" 1 "$mfs" restore -x -m -S -i "$img" restore ;;
		dump-super)	run_cmd "$r" "$dir" "$img" 1 "$mfs" inspect-internal dump-super -f -a "$img" ;;
		dump-tree)	run_cmd "$r" "$dir" "$img" 1 "$mfs" inspect-internal dump-tree "$img" ;;
		fs-show)	run_cmd "$r" "$dir" "$img" 1 "$mfs" filesystem show "$dir/$img" ;;
		dev-stats)	run_cmd "$r" "$dir" "$img" 1 "$mfs" device stats --offline "$img" ;;
		scrub)		run_cmd "$r" "$dir" "$img" 1 "$mfs" scrub start -B -r "$img" ;;
		mount-ro)	run_mount "$r" "$dir" "$img" ro ;;
		mount-rw)	run_mount "$r" "$dir" "$img" rw ;;
		*)		tap_result "$img: $r" 0 "no such run" ;;
		esac
	done
	rm -rf "$dir"
done
echo "# security: ${#images[@]} images, $n runs, $failures failures"
[ "$failures" -eq 0 ]
