#!/usr/bin/env bash
# Race tests: the FUSE server built with ThreadSanitizer (scripts/build.sh
# --tsan) serves a mount while parallel writers, readers, small-file
# churn, a scrub (its reads run without the filesystem lock), a convert to
# raid5 data with its progress polled, and a full balance run against
# it. Any ThreadSanitizer report fails the test. So does a job that fails,
# a convert that does not reach its profiles, a check that is not clean
# afterwards, or a file that is not what was written: every expected
# content is known before the race (random data from the local disk, the
# churn's end state computed), never taken from the mount. Prints TAP.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
tsan=${MFS_TSAN_BUILD:-$top/build-tsan}/mfs
mfs=${MFS_BUILD:-$top/build}/mfs

echo "1..3"
if [ ! -x "$tsan" ] || [ ! -x "$mfs" ]; then
	echo "not ok 1 - ThreadSanitizer build missing (scripts/build.sh --tsan)"
	echo "not ok 2 - # skipped"
	echo "not ok 3 - # skipped"
	exit 1
fi
tmp=$(mktemp -d /tmp/mfs-tsan.XXXXXX)
export MFS_REGISTRY=$tmp/registry
cleanup() {
	mountpoint -q "$tmp/mnt" && timeout 300 "$mfs" umount "$tmp/mnt"
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$tmp/mnt" "$tmp/src" "$tmp/jobs"
m=$tmp/mnt

# sums DIR: sha256 of every file under DIR, sorted by name
sums() {
	(cd "$1" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum)
}

# the files the mount must end up with: random data, and what the small-file
# churn leaves (s<i> truncated to 7*i bytes of "y", every third one removed)
for k in 1 2; do
	head -c $((48 << 20)) /dev/urandom >"$tmp/src/base$k"
done
for k in 1 2 3; do
	head -c $((40 << 20)) /dev/urandom >"$tmp/src/w$k"
done
head -c $((48 << 20)) /dev/urandom >"$tmp/src/shared"
python3 - "$tmp/src" <<'PY'
import os, sys
for i in range(300):
    if i % 3:
        with open(os.path.join(sys.argv[1], "s%d" % i), "w") as f:
            f.write("y" * (i * 7))
PY
sums "$tmp/src" >"$tmp/want"

truncate -s 2G "$tmp/a.img" "$tmp/b.img" "$tmp/c.img"
"$mfs" mkfs -q -f -d raid0 -m raid1 "$tmp/a.img" "$tmp/b.img" || exit 1

TSAN_OPTIONS="log_path=$tmp/tsan halt_on_error=0" \
	"$tsan" mount -o "device=$tmp/b.img" "$tmp/a.img" "$m" || {
	echo "not ok 1 - the ThreadSanitizer build did not mount"
	exit 1
}
# base files to read while the rest runs
cp "$tmp/src/base1" "$tmp/src/base2" "$m/" || exit 1
"$mfs" device add "$tmp/c.img" "$m" >/dev/null || exit 1

# four processes write the blocks of one file, then small files churn
cat >"$tmp/writers.py" <<'PY'
import os, sys
m, src = sys.argv[1], open(sys.argv[2], "rb").read()
fd = os.open(os.path.join(m, "shared"), os.O_WRONLY | os.O_CREAT, 0o644)
kids = []
for p in range(4):
    pid = os.fork()
    if pid == 0:
        for b in range(p, 48, 4):
            os.pwrite(fd, src[b << 20:(b + 1) << 20], b << 20)
        os._exit(0)
    kids.append(pid)
failed = sum(os.waitpid(k, 0)[1] != 0 for k in kids)
for i in range(300):
    p = os.path.join(m, "s%d" % i)
    with open(p, "w") as f:
        f.write("y" * (i * 23))
    os.truncate(p, i * 7)
    if i % 3 == 0:
        os.unlink(p)
sys.exit(1 if failed else 0)
PY

# job NAME CMD...: run CMD in the background; its exit status goes to jobs/NAME
pids=()
job() {
	local name=$1
	shift
	( "$@"; echo $? >"$tmp/jobs/$name" ) &
	pids+=($!)
}
# the progress lines poll the status while the scrubber and the restriper work
convert() {
	"$mfs" scrub start -B "$m" >"$tmp/scrub.out" &&
		"$mfs" balance start -dconvert=raid5 -mconvert=raid1 "$m" >/dev/null &&
		"$mfs" filesystem df -b "$m" >"$tmp/df-after-convert" &&
		"$mfs" balance start --full-balance -d "$m" >/dev/null
}
readers() {
	local r

	for r in 1 2 3; do
		sha256sum <"$m/base$1" || return 1
	done >"$tmp/reads$1"
}
job balance convert
for k in 1 2 3; do
	job "w$k" dd if="$tmp/src/w$k" of="$m/w$k" bs=1M status=none
done
job writers python3 "$tmp/writers.py" "$m" "$tmp/src/shared"
for k in 1 2; do
	job "reads$k" readers "$k"
done
wait "${pids[@]}"

problems=()
for name in balance w1 w2 w3 writers reads1 reads2; do
	rc=$(cat "$tmp/jobs/$name" 2>/dev/null || echo "no status")
	[ "$rc" = 0 ] || problems+=("job $name: $rc")
done
for k in 1 2; do
	want=$(sha256sum <"$tmp/src/base$k")
	[ "$(sort -u "$tmp/reads$k" 2>/dev/null)" = "$want" ] ||
		problems+=("reads of base$k saw other data")
done
# the convert reached its profiles before the balance after it
profiles=$(sed -n 's/^\(Data\|Metadata\|System\), \([^:]*\):.*/\1 \2/p' "$tmp/df-after-convert" 2>/dev/null |
	sort -u | tr '\n' ' ')
[ "$profiles" = "Data RAID5 Metadata RAID1 System RAID1 " ] ||
	problems+=("after the convert: '$profiles'")
sums "$m" >"$tmp/got" && cmp -s "$tmp/want" "$tmp/got" ||
	problems+=("the files on the mount are not what was written")
timeout 300 "$mfs" umount "$m" || problems+=("umount failed")

reports=$(cat "$tmp"/tsan.* 2>/dev/null | grep -c "WARNING: ThreadSanitizer")
if [ "$reports" = 0 ]; then
	echo "ok 1 - no data race under parallel I/O, file churn, scrub, convert, balance and status polling"
else
	echo "not ok 1 - ThreadSanitizer reported $reports races"
	cat "$tmp"/tsan.* | grep -A12 "WARNING: ThreadSanitizer" | sed 's/^/# /' | head -120
fi
if [ ${#problems[@]} = 0 ]; then
	echo "ok 2 - every job succeeded, the convert reached raid5, the files are what was written"
else
	echo "not ok 2 - jobs or contents during the race"
	printf '# %s\n' "${problems[@]}"
	diff "$tmp/want" "$tmp/got" 2>/dev/null | head -20 | sed 's/^/# /'
fi
if "$mfs" check --check-data-csum "$tmp/a.img" >"$tmp/check" 2>&1 &&
	"$mfs" mount "$tmp/a.img" "$m" &&
	sums "$m" >"$tmp/got2" && cmp -s "$tmp/want" "$tmp/got2"; then
	echo "ok 3 - check clean and every file intact after remount"
else
	echo "not ok 3 - check or contents after remount"
	sed 's/^/# /' "$tmp/check"
fi
