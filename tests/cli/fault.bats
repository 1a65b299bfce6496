#!/usr/bin/env bats
# Fault injection through the device I/O layer (MFS_FAULT): a failing
# write, flush or read surfaces as a clean error, never as a half-made or
# corrupt filesystem, and a failing copy is served from another one.

load helpers

# raid1_four_with_a_file: raid1 on img1..img4 (256 MiB), an 8 MiB file on it
raid1_four_with_a_file() {
	make_images 4 256M
	mkfs.mfs -q -f -K -d raid1 -m raid1 img1 img2 img3 img4
	mkdir -p mnt
	mfs mount img1 img2 img3 img4 mnt 3>&-
	head -c $((8 * 1024 * 1024)) /dev/urandom >mnt/f
	mfs umount mnt
}

@test "fault: a failing flush during mkfs is reported and leaves no filesystem" {
	make_images 2
	run --separate-stderr env MFS_FAULT="flush:2@img2" mkfs.mfs -q -f -K -d raid1 img1 img2
	assert_failure
	assert_stderr_line "ERROR: mkfs failed: Input/output error"
	# the commit never completed: no valid superblock anywhere
	run mfs check img1
	assert_failure
	# without the fault it works on the same images
	run mkfs.mfs -q -f -K -d raid1 img1 img2
	assert_success
	run mfs check img1
	assert_success
}

@test "fault: failing writes on one raid1 device: the commit completes on the other, the error is counted" {
	make_images 2
	mkfs.mfs -q -f -K -d raid1 -m raid1 img1 img2
	before=$(super_field img1 generation)
	assert_equal "$(super_field img2 generation)" "$before"
	# the label change is one commit: fail every write to img2 from the first on
	run --separate-stderr env MFS_FAULT="write:1:s@img2" mfs filesystem label img1 faulty
	assert_success
	assert_stderr_regex "^WARNING: devid 2 \($T/img2\) failed: write error: Input/output error"
	[ "$(super_field img1 generation)" -gt "$before" ]
	# the fault fired: img2 never got the new superblock, and its error is on record
	assert_equal "$(super_field img2 generation)" "$before"
	assert_equal "$(dev_stat img1 2 write_io_errs)" 1
	assert_equal "$(dev_stat img1 1 write_io_errs)" 0
	run mfs filesystem label img1
	assert_output "faulty"
}

@test "fault: reads failing on one raid1 device are served by the other" {
	make_images 2
	mkfs.mfs -q -f -K -d raid1 -m raid1 img1 img2
	mkdir mnt
	mfs mount img1 mnt 3>&-
	echo mnt >>"$T/.mounts"
	head -c 8M /dev/urandom >src
	cp src mnt/file
	mfs umount mnt
	# once mounted, every read of img1 fails: data comes from img2
	# (the reads of the open still work); reads prefer img1, so they meet
	# the fault
	MFS_FAULT="read:+1:s@img1" mfs mount -o ro,read_policy=devid:1 img1 img2 mnt 3>&-
	run cmp src mnt/file
	assert_success
	run mfs device stats mnt
	assert_line --regexp "^\[$T/img1\]\.read_io_errs +[1-9][0-9]*\$"
	assert_line --regexp "^\[$T/img2\]\.read_io_errs +0\$"
	mfs umount mnt
	# and the checker, which reads each copy on its own, names the failing one
	run env MFS_FAULT="read:20:s@img1" mfs check --check-data-csum img1 img2
	assert_failure
	assert_output --regexp "copy 1 \(on devid 1\)"
	assert_output --partial "Input/output error"
}

@test "fault: a failed commit turns the mount read-only; everything stays readable; the disk keeps the last commit" {
	make_images 1 512M
	mkfs.mfs -q -f -d single -m dup img1
	mkdir mnt
	mfs mount img1 mnt 3>&-
	echo mnt >>"$T/.mounts"
	echo committed >mnt/a
	head -c 100000 /dev/urandom >src
	cp src mnt/big
	# enough items for a tree of several levels: the blocks the failed
	# transaction changed are not all reachable from the root node alone
	mkdir mnt/many
	for ((n = 0; n < 3000; n++)); do echo "$n"; done | (cd mnt/many && xargs touch)
	mfs umount mnt
	# every write to img1 fails from the first on: the next commit cannot
	# write its tree blocks (b is small: inline, no data write of its own)
	MFS_FAULT="write:1:s@img1" mfs mount img1 mnt 3>&-
	run "$MFS_PY" -c '
import os
fd = os.open("mnt/b", os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, b"fresh\n")
try:
    os.fsync(fd)
    print("fsync ok")
except OSError as e:
    print("fsync", e.strerror)
os.close(fd)
print(sorted(os.listdir("mnt")), open("mnt/a").read().strip(), open("mnt/b").read().strip(),
      len(os.listdir("mnt/many")))
def fsync_again():
    fd = os.open("mnt/big", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
for what, f in (("create", lambda: open("mnt/c", "w")), ("mkdir", lambda: os.mkdir("mnt/d")),
                ("unlink", lambda: os.unlink("mnt/a")), ("fsync again", fsync_again)):
    try:
        f()
        print(what, "ok")
    except OSError as e:
        print(what, e.strerror)
'
	assert_success
	assert_output "fsync Input/output error
['a', 'b', 'big', 'many'] committed fresh 3000
create Read-only file system
mkdir Read-only file system
unlink Read-only file system
fsync again Input/output error"
	cmp src mnt/big
	# umount says the last changes are lost, and still unmounts
	run --separate-stderr mfs umount mnt
	assert_failure
	assert_stderr_regex "^ERROR: cannot write the last changes to mnt: .*they are lost"
	run mountpoint -q mnt
	assert_failure
	# the failed transaction never reached the disk: a and big, no b
	mfs mount img1 mnt 3>&-
	run ls mnt
	assert_output "a
big
many"
	cmp src mnt/big
	mfs umount mnt
	run mfs check img1
	assert_success
}

@test "fault: a device failed by a write error is not also counted for the reads skipped on it" {
	# (the fault sweep's D5) raid1 on four devices, a full balance, the
	# first write to img3 fails: img3 is out of service for the rest of it
	raid1_four_with_a_file
	run --separate-stderr env MFS_FAULT="write:+1@img3" mfs balance start -q --full-balance img1
	run mfs device stats --offline img1
	assert_line --regexp "^\[.*img3\]\.write_io_errs +[1-9][0-9]*$"
	assert_line --regexp "^\[.*img3\]\.read_io_errs +0$"
}

@test "fault: a device failing on raid6 while files are written: the commit goes to new chunks on the others, nothing lost" {
	# (the fault sweep's D4) the first write after the mount fails on
	# img1: every chunk then has a stripe on a failed device, so the umount's
	# commit needs new chunks on the three others, and a system chunk for the
	# chunk tree that records them before the data and metadata chunks take
	# the space (it used to fail with ENOSPC and lose the mount's writes)
	make_images 4 256M
	mkfs.mfs -q -f -K -d raid6 -m raid6 img1 img2 img3 img4
	mkdir -p mnt
	head -c 3M /dev/urandom >pre
	head -c 2M /dev/urandom >new1
	head -c 700K /dev/urandom >new2
	mfs mount img1 img2 img3 img4 mnt 3>&-
	echo mnt >>"$T/.mounts"
	cp pre mnt/pre
	mfs umount mnt
	MFS_FAULT="write:+1@img1" mfs mount img1 img2 img3 img4 mnt 3>&-
	cp new1 new2 mnt/
	run --separate-stderr mfs umount mnt
	assert_success
	run mfs device stats --offline img2
	assert_line --regexp "^\[.*img1\]\.write_io_errs +[1-9][0-9]*$"
	# the mount with every member catches img1 up; everything is there
	mfs mount img1 img2 img3 img4 mnt 3>&-
	mfs umount mnt
	run mfs check --check-data-csum img1 img2 img3 img4
	assert_success
	mfs mount -o ro img1 img2 img3 img4 mnt 3>&-
	cmp pre mnt/pre
	cmp new1 mnt/new1
	cmp new2 mnt/new2
	mfs umount mnt
}

@test "fault: a flush failing while a balance moves a chunk names the device and counts it" {
	# (the fault sweep's D3, flush half) each of the first flushes of img3
	# fails in turn: the one the relocation issues after copying a chunk
	# onto img3 used to stop the balance with a bare EIO, counted nowhere
	raid1_four_with_a_file
	for i in 1 2 3 4; do cp --sparse=always "img$i" "base$i"; done
	local n err seen=0
	for n in 1 2 3 4 5 6 7 8; do
		for i in 1 2 3 4; do cp --sparse=always "base$i" "img$i"; done
		run --separate-stderr env MFS_FAULT="flush:+$n@img3" mfs balance start -q --full-balance img1
		err=$stderr
		[[ $err == *"devid 3 ("*"flush error"* ]] || continue
		run mfs device stats --offline img1
		assert_line --regexp "^\[.*img3\]\.flush_io_errs +[1-9][0-9]*$"
		[[ $err != *"flush error while moving a chunk onto it"* ]] || seen=$((seen + 1))
	done
	# the relocation's own flush was among them
	[ "$seen" -gt 0 ]
}

@test "fault: a device add that fails after the device joined leaves it registered, a member" {
	make_images 2
	mkfs.mfs -q -f -K img1
	# the third flush of img1 after the open: the commit the new device joins in
	run --separate-stderr env MFS_FAULT="flush:+3@img1" mfs device add -K "$T/img2" "$T/img1"
	assert_failure
	assert_stderr_line "ERROR: error adding device '$T/img2': Input/output error"
	assert_stderr_line "$T/img2 joined the filesystem before the error: it is a member ('mfs device delete $T/img2 $T/img1' takes it out again)"
	grep -qxF "$T/img2" "$MFS_REGISTRY"
	run mfs filesystem show "$T/img1"
	assert_line --partial "Total devices 2 "
	refute_output --partial "missing"
	run mfs check "$T/img1"
	assert_success
	run mfs device delete "$T/img2" "$T/img1"
	assert_success
	run mfs filesystem show "$T/img1"
	assert_line --partial "Total devices 1 "
}
