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

# pwriters FILE NPROC SOURCE: NPROC processes write the 1 MiB blocks of
# SOURCE (random data on the local disk) into FILE, block b by process
# b % NPROC, in parallel; every writer must succeed and FILE then read back
# as SOURCE.
pwriters() {
	"$MFS_PY" -c '
import os, sys
path, nproc, src = sys.argv[1], int(sys.argv[2]), open(sys.argv[3], "rb").read()
fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
kids = []
for p in range(nproc):
    pid = os.fork()
    if pid == 0:
        for b in range(p, len(src) >> 20, nproc):
            os.pwrite(fd, src[b << 20:(b + 1) << 20], b << 20)
        os._exit(0)
    kids.append(pid)
failed = [k for k in kids if os.waitpid(k, 0)[1] != 0]
os.close(fd)
with open(path, "rb") as f:
    got = f.read()
if failed:
    print("%d writers failed" % len(failed))
if got != src:
    print("the file does not read back as written")
sys.exit(0 if not failed and got == src else 1)
' "$@"
}

# wait_jobs PID...: wait for each background job; all must have succeeded.
wait_jobs() {
	local pid bad=0

	for pid in "$@"; do
		wait "$pid" || { echo "job $pid exited $?" >&2; bad=1; }
	done
	return $bad
}

# verify_unmounted DEV: the files as written online, unmounted, offline
# from DEV, and a clean check of every data checksum.
verify_unmounted() {
	verify_online
	umnt
	verify_offline "$1"
	run mfs check --check-data-csum "$1"
	assert_success
}

# data_profiles MNT: the profiles of the data chunks, one line each.
data_profiles() {
	mfs filesystem df "$1" | sed -n 's/^Data, \([^:]*\):.*/\1/p' | sort -u
}

@test "parallel writers of one file and of many files, with readers, on raid1, raid10, raid5 and raid6" {
	local p

	# what the mount must hold, known before anything is written to it
	mkdir "$T/src"
	gen_file "$T/src/old" 48
	gen_file "$T/src/shared" 64
	for f in 1 2 3 4; do
		cp "$T/src/shared" "$T/src/copy$f"
	done
	sums "$T/src" >"$T/want"
	old=$(sha256sum <"$T/src/old")
	for p in raid1 raid10 raid5 raid6; do
		make_images 4 1G
		mkfs.mfs -q -f -d $p -m raid1 $(imgs 4)
		mnt "$T/img1"
		cp "$T/src/old" "$T/mnt/old"
		sync
		# readers of an existing file while eight processes write
		(for r in 1 2 3; do sha256sum <"$T/mnt/old" || exit 1; done >"$T/reads") &
		reader=$!
		run pwriters "$T/mnt/shared" 8 "$T/src/shared"
		assert_success
		# four files written at once with direct I/O, the page cache bypassed
		pids=()
		for f in 1 2 3 4; do
			dd if="$T/mnt/shared" of="$T/mnt/copy$f" bs=1M oflag=direct status=none &
			pids+=($!)
		done
		wait_jobs "${pids[@]}" "$reader"
		# every read of the old file saw what was written before
		run sort -u "$T/reads"
		assert_output "$old"
		verify_online
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
	local n wpid

	mkdir "$T/src"
	gen_file "$T/src/base" 200
	for n in $(seq 1 12); do
		gen_file "$T/src/w$n" 16
	done
	sums "$T/src" >"$T/want"
	make_images 3 2G
	mkfs.mfs -q -f -d raid1 -m raid1 $(imgs 3)
	mnt "$T/img1"
	cp "$T/src/base" "$T/mnt/base"
	sync
	(
		for n in $(seq 1 12); do
			cp "$T/src/w$n" "$T/mnt/w$n" || exit 1
		done
	) &
	wpid=$!
	run --separate-stderr mfs balance start -q -dconvert=$1 "$T/mnt"
	assert_success
	# the convert reached its target: every data chunk has the new profile
	run data_profiles "$T/mnt"
	assert_output "${1^^}"
	run --separate-stderr mfs balance start -q -d --full-balance "$T/mnt"
	assert_success
	wait_jobs "$wpid"
	sync
	verify_online
	run data_profiles "$T/mnt"
	assert_output "${1^^}"
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
import hashlib, mmap, os, random, sys
path = sys.argv[1]
N, GENS = 32, 9
# random blocks, one per block number and generation: a lost write or a
# stale piece reads back as none of them
def block(b, gen):
    return random.Random(b * 1000 + gen).randbytes(1 << 20)
valid = [{hashlib.sha256(block(b, g)).digest() for g in range(GENS)} for b in range(N)]
with open(path, "wb") as f:
    for b in range(N):
        f.write(block(b, 0))
pid = os.fork()
if pid == 0:
    # one direct write per block: a buffered writer can be caught half-way
    # through copying a block into the page cache, on any filesystem
    fd = os.open(path, os.O_WRONLY | os.O_DIRECT)
    wbuf = mmap.mmap(-1, 1 << 20)
    for gen in range(1, GENS):
        for b in range(N):
            wbuf[:] = block(b, gen)
            os.pwritev(fd, [wbuf], b << 20)
        os.fsync(fd)
    os._exit(0)
bad, reads = 0, 0
fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 1 << 20)
while True:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    for b in range(N):
        n = os.preadv(fd, [buf], b << 20)
        reads += 1
        if n != 1 << 20 or hashlib.sha256(buf[:n]).digest() not in valid[b]:
            if not bad:
                print("block %d: %d bytes, not any version written" % (b, n))
            bad += 1
if status:
    print("the writer failed: status %d" % status)
# the last version of every block is what stays
for b in range(N):
    n = os.preadv(fd, [buf], b << 20)
    if buf[:n] != block(b, GENS - 1):
        print("block %d is not its last version" % b)
        bad += 1
print("%d reads" % reads)
sys.exit(1 if bad or status else 0)
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
	mkdir "$T/src"
	for p in 1 2 3 4; do
		gen_file "$T/src/f$p" 256
	done
	sums "$T/src" >"$T/want"
	make_images 3 2G
	for p in 1 2 3; do
		loops+=("$(make_loop "$T/img$p")")
	done
	mkfs.mfs -q -f -d raid5 -m raid1 "${loops[@]}"
	mnt "${loops[@]}"
	for p in 1 2 3 4; do
		dd if="$T/src/f$p" of="$T/mnt/f$p" bs=1M conv=fsync status=none &
		pids+=($!)
	done
	wait_jobs "${pids[@]}"
	verify_unmounted "${loops[0]}"
}

@test "raid1: 4 KiB writes through the page cache beside 1 MiB direct ones, fsyncing" {
	# writes of up to 64 KiB go through the page cache, larger ones
	# around it, into the same chunks; a direct write that met a dirty
	# cached page would fail the next flush of the block device (EIO at
	# fsync, then read-only): each small writer syncs every block
	local p pids=() loops=()
	mkdir "$T/src"
	gen_file "$T/src/f1" 4
	gen_file "$T/src/f2" 4
	gen_file "$T/src/f3" 64
	gen_file "$T/src/f4" 64
	sums "$T/src" >"$T/want"
	make_images 2 1G
	for p in 1 2; do
		loops+=("$(make_loop "$T/img$p")")
	done
	mkfs.mfs -q -f -d raid1 -m raid1 "${loops[@]}"
	mnt "${loops[@]}"
	for p in 1 2; do
		dd if="$T/src/f$p" of="$T/mnt/f$p" bs=4k oflag=dsync status=none &
		pids+=($!)
	done
	for p in 3 4; do
		dd if="$T/src/f$p" of="$T/mnt/f$p" bs=1M conv=fsync status=none &
		pids+=($!)
	done
	wait_jobs "${pids[@]}"
	verify_unmounted "${loops[0]}"
}

# A commit lets go of the filesystem lock while the devices flush and the
# superblocks are written (a device flush can take tens of milliseconds,
# more on a busy disk): held there by the test hook, file operations must
# go on, and a second sync must still wait for the held commit.
@test "file operations go on while a commit flushes and writes its superblocks" {
	make_images 2 1G
	mkfs.mfs -q -f -d raid1 -m raid1 $(imgs 2)
	mnt "$T/img1"
	echo before >"$T/mnt/before"
	echo 1 >"$T/hold-commit"
	mfs filesystem sync "$T/mnt" &
	sync1=$!
	wait_for_file "$T/hold-commit.held" 600
	# the commit is held between its flushes: create, write, read, list,
	# stat, rename, unlink and mkdir all complete (were they held up, the
	# hold is let go after the bound, and the test fails, not hangs)
	(
		cd "$T/mnt" && echo during >during && cat during && ls >/dev/null &&
			stat -c %s before && mv during moved && mkdir dir &&
			echo x >dir/x && rm dir/x && cat moved
		echo $? >"$T/ops.rc"
	) >"$T/ops.out" 2>&1 &
	ops=$!
	held_ok=0
	wait_until 300 test -e "$T/ops.rc" || held_ok=1
	# a sync started now returns only after the held commit is durable
	sync2=""
	if [ $held_ok = 0 ]; then
		(mfs filesystem sync "$T/mnt" && touch "$T/sync2.done") &
		sync2=$!
		run cat "$T/mnt/before"
		assert_output before
		[ ! -e "$T/sync2.done" ] || held_ok=2
	fi
	rm -f "$T/hold-commit.held"
	wait "$ops"
	wait "$sync1"
	[ -z "$sync2" ] || wait "$sync2"
	[ $held_ok = 0 ]
	run cat "$T/ops.rc" "$T/ops.out"
	assert_output "0
during
7
during"
	[ -e "$T/sync2.done" ]
	umnt
	run mfs check "$T/img1"
	assert_success
	mnt "$T/img1"
	run cat "$T/mnt/before" "$T/mnt/moved"
	assert_output "before
during"
	[ -d "$T/mnt/dir" ]
	[ ! -e "$T/mnt/dir/x" ]
	umnt
}

# A relocated chunk's free space and raid5/6 rows are rebuilt from the
# extent tree when it is swapped in. The extents a commit still writing its
# superblocks freed are out of the extent tree but not free yet (they come
# back when that commit ends): counted free, they were taken out of their
# row a second time when it ended - the row, still holding a live file,
# went back to free space whole and the next write went over that file
# (tests/load/run.sh's raid5 scrub found the csum errors; with metadata the
# same left two tree blocks on the same bytes). Held here: the balance with
# the chunk copied, and a sync's commit that freed a file of that chunk,
# between its flushes; then the swap, which waits for the maps that commit
# reads and takes fs->lock before that commit can end.
@test "a chunk swapped in while a commit writes its superblocks keeps what that commit freed" {
	make_images 3 1G
	mkfs.mfs -q -f -d raid5 -m raid1 $(imgs 3)
	# no periodic commit: the held one is the sync's
	mnt -o commit=300 "$T/img1"
	head -c 4096 /dev/urandom >"$T/a"
	head -c 4096 /dev/urandom >"$T/b"
	cp "$T/a" "$T/mnt/a"
	cp "$T/b" "$T/mnt/b"
	mfs filesystem sync "$T/mnt"
	hold_at 1
	mfs balance start -d "$T/mnt" >"$T/balance.out" 2>&1 &
	bal=$!
	wait_held
	rm "$T/mnt/a"
	echo 1 >"$T/hold-commit"
	mfs filesystem sync "$T/mnt" &
	sync1=$!
	wait_for_file "$T/hold-commit.held" 600
	# the swap, with fs->lock, waits for the maps the held commit reads
	echo 1 >"$T/hold-map"
	release
	wait_for_file "$T/hold-map.held" 600
	# the held commit's end needs fs->lock: the chunk is swapped in first
	rm -f "$T/hold-commit.held" "$T/hold-map.held"
	wait "$sync1"
	wait "$bal"
	# new files: none may take b's bytes
	for i in $(seq 1 64); do head -c 65536 /dev/urandom >"$T/mnt/n$i"; done
	mfs filesystem sync "$T/mnt"
	umnt
	run mfs check --check-data-csum "$T/img1"
	assert_success
	mnt "$T/img1"
	cmp "$T/b" "$T/mnt/b"
	umnt
}

# A scrub checks every superblock copy against the filesystem's generation.
# Started while a commit writes its superblocks without fs->lock (the
# generation already the new one, the copies not all written), it counted
# the copies still behind as generation errors, in its summary and in the
# persisted device stats. It waits for that commit first.
@test "a scrub started while a commit writes its superblocks counts no superblock error" {
	make_images 2 1G
	mkfs.mfs -q -f -d raid1 -m raid1 $(imgs 2)
	# no periodic commit: the held one is the sync's
	mnt -o commit=300 "$T/img1"
	echo one >"$T/mnt/one"
	mfs filesystem sync "$T/mnt"
	echo two >"$T/mnt/two"
	echo 1 >"$T/hold-commit"
	mfs filesystem sync "$T/mnt" &
	sync1=$!
	wait_for_file "$T/hold-commit.held" 600
	# the scrub reaches a wait for the held commit (its own start's, or,
	# had it gone on, its state's commit after the superblocks)
	echo 1 >"$T/hold-wait"
	mfs scrub start -B "$T/mnt" >"$T/scrub.out" 2>&1 &
	scrub=$!
	wait_for_file "$T/hold-wait.held" 600
	rm -f "$T/hold-wait.held" "$T/hold-commit.held"
	wait "$sync1"
	rc=0
	wait "$scrub" || rc=$?
	run cat "$T/scrub.out"
	assert_output --partial "no errors found"
	[ "$rc" = 0 ]
	run mfs device stats -c "$T/mnt"
	assert_success
	umnt
}
