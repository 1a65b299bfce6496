#!/usr/bin/env bats
# File data moves to and from the disks without the filesystem lock (reads
# from the least busy copy, writes into extents reserved under the lock):
# parallel writers and readers of one file and of many, writes racing a
# balance that relocates the chunks they write into, and overwrites racing
# readers all leave exactly the data a serial order would, and check is clean.
# raid5/6 data too: full rows are written (with parity) without the lock
# while reads under it still find them in memory.

load helpers
load restripe

eval "helpers_$(declare -f teardown)"

teardown() {
	mfs_cleanup_mounts
	helpers_teardown
}

# pwriters FILE NPROC MIB: NPROC processes write disjoint 1 MiB blocks of
# FILE (block b by process b % NPROC) in parallel; each block's bytes are a
# function of the block number, so the expected file is known.
pwriters() {
	"$MFS_PY" -c '
import os, sys
path, nproc, mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def block(b):
    return bytes([(b * 7 + 1) & 255]) * 4096 * 255 + b.to_bytes(8, "little") * 512
fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
kids = []
for p in range(nproc):
    pid = os.fork()
    if pid == 0:
        for b in range(p, mib, nproc):
            os.pwrite(fd, block(b), b << 20)
        os._exit(0)
    kids.append(pid)
ok = all(os.waitpid(k, 0)[1] == 0 for k in kids)
os.close(fd)
want = b"".join(block(b) for b in range(mib))
with open(path, "rb") as f:
    got = f.read()
sys.exit(0 if ok and got == want else 1)
' "$@"
}

@test "parallel writers of one file and of many files, with readers, on raid1, raid10, raid5 and raid6" {
	local p

	for p in raid1 raid10 raid5 raid6; do
		make_images 4 1G
		mkfs.mfs -q -f -d $p -m raid1 $(imgs 4)
		mnt "$T/img1"
		gen_file "$T/mnt/old" 48
		sync
		sums "$T/mnt" >"$T/want-old"
		# readers of an existing file while eight processes write
		(for r in 1 2 3; do sha256sum "$T/mnt/old"; done >"$T/reads") &
		run pwriters "$T/mnt/shared" 8 64
		assert_success
		# four files written at once with direct I/O, the page cache bypassed
		for f in 1 2 3 4; do
			dd if="$T/mnt/shared" of="$T/mnt/copy$f" bs=1M oflag=direct status=none &
		done
		wait
		[ "$(sort -u "$T/reads" | wc -l)" = 1 ]
		grep -q "$(awk '/old$/ { print $1 }' "$T/want-old")" "$T/reads"
		sums "$T/mnt" >"$T/want"
		umnt
		# every copy reads back the same after a remount, and check is clean
		run mfs check --check-data-csum "$T/img1"
		assert_success
		assert_line --partial "no error found"
		mnt "$T/img1"
		verify_online
		for f in 1 2 3 4; do
			cmp "$T/mnt/shared" "$T/mnt/copy$f"
		done
		umnt
		rm -f "$T"/img*
	done
}

# writes_racing_balance PROFILE: writers keep filling new files while the
# data chunks are converted to PROFILE and relocated under them
writes_racing_balance() {
	make_images 3 2G
	mkfs.mfs -q -f -d raid1 -m raid1 $(imgs 3)
	mnt "$T/img1"
	gen_file "$T/mnt/base" 200
	sync
	(
		for n in $(seq 1 12); do
			gen_file "$T/mnt/w$n" 16 || exit 1
		done
	) &
	local wpid=$!
	run --separate-stderr mfs balance start -q -dconvert=$1 "$T/mnt"
	assert_success
	run --separate-stderr mfs balance start -q -d --full-balance "$T/mnt"
	assert_success
	wait $wpid
	sync
	sums "$T/mnt" >"$T/want"
	umnt
	verify_offline "$T/img1"
	run mfs check --check-data-csum "$T/img1"
	assert_success
}

@test "writes racing a balance that relocates the chunks they land in" {
	writes_racing_balance raid0
}

@test "writes racing a convert to raid5 and a balance of the raid5 chunks they land in" {
	writes_racing_balance raid5
}

# overwrites_racing_readers MKFS-OPTIONS...
overwrites_racing_readers() {
	make_images 3 1G
	mkfs.mfs -q -f "$@" $(imgs 3)
	mnt "$T/img1"
	run "$MFS_PY" -c '
import os, sys
path = sys.argv[1]
N = 32
def block(b, gen):
    return bytes([(b + gen * 17) & 255]) * (1 << 20)
with open(path, "wb") as f:
    for b in range(N):
        f.write(block(b, 0))
import mmap
pid = os.fork()
if pid == 0:
    # one direct write per block: a buffered writer can be caught half-way
    # through copying a block into the page cache, on any filesystem
    fd = os.open(path, os.O_WRONLY | os.O_DIRECT)
    wbuf = mmap.mmap(-1, 1 << 20)
    for gen in range(1, 9):
        for b in range(N):
            wbuf[:] = block(b, gen)
            os.pwritev(fd, [wbuf], b << 20)
        os.fsync(fd)
    os._exit(0)
bad = 0
fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 1 << 20)
while os.waitpid(pid, os.WNOHANG) == (0, 0):
    for b in range(N):
        n = os.preadv(fd, [buf], b << 20)
        data = buf[:n]
        if n != 1 << 20 or data.count(data[0:1]) != n or (data[0] - b) % 17 != 0:
            if not bad:
                kinds = sorted(set(data))
                print("block %d: %d bytes, values %s" % (b, n, kinds[:8]))
            bad += 1
sys.exit(1 if bad else 0)
' "$T/mnt/f"
	assert_success
	umnt
	run mfs check --check-data-csum "$T/img1"
	assert_success
}

@test "overwrites racing readers: a read returns old or new data of each block, never garbage" {
	overwrites_racing_readers -d raid1 -m raid1
}

@test "overwrites racing readers on raid5: never garbage" {
	overwrites_racing_readers -d raid5 -m raid1
}

@test "raid5: writers fsyncing while others' full rows are still being written" {
	# a commit (each fsync) writes the rows other writers are writing
	# without the lock; both writes go around the page cache, or the
	# kernel reports the collision as an I/O error at the next flush (of a
	# block device: hence loop devices here)
	local p pids=() loops=()
	make_images 3 2G
	for p in 1 2 3; do
		loops+=("$(make_loop "$T/img$p")")
	done
	mkfs.mfs -q -f -d raid5 -m raid1 "${loops[@]}"
	mnt "${loops[@]}"
	for p in 1 2 3 4; do
		dd if=/dev/zero of="$T/mnt/f$p" bs=1M count=256 conv=fsync status=none &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p"
	done
	[ "$(stat -c %s "$T/mnt/f4")" = $((256 << 20)) ]
	sums "$T/mnt" >"$T/want"
	umnt
	verify_offline "${loops[0]}"
	run mfs check --check-data-csum "${loops[0]}"
	assert_success
}
