#!/usr/bin/env bats
# Fault injection through the device I/O layer (MFS_FAULT): a failing
# write, flush or read surfaces as a clean error, never as a half-made or
# corrupt filesystem, and a failing copy is served from another one.

load helpers

@test "fault: a failing flush during mkfs is reported and leaves no filesystem" {
	make_images 2
	run env MFS_FAULT="flush:2@img2" mkfs.mfs -q -f -K -d raid1 img1 img2
	assert_failure
	assert_output --partial "ERROR:"
	# the commit never completed: no valid superblock anywhere
	run mfs check img1
	assert_failure
	# without the fault it works on the same images
	run mkfs.mfs -q -f -K -d raid1 img1 img2
	assert_success
	run mfs check img1
	assert_success
}

@test "fault: a failing superblock write on one device still commits on the others" {
	make_images 2
	mkfs.mfs -q -f -K -d raid1 -m raid1 img1 img2
	before=$(mfs inspect-internal dump-super img1 | awk '$1 == "generation" { print $2 }')
	# the label change is one commit: fail every write to img2 from the first on
	run env MFS_FAULT="write:1:s@img2" mfs filesystem label img1 faulty
	after=$(mfs inspect-internal dump-super img1 | awk '$1 == "generation" { print $2 }')
	[ "$after" -gt "$before" ]
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
	# (the first reads, superblocks and tree roots at open, still work)
	MFS_FAULT="read:40:s@img1" mfs mount -o ro img1 img2 mnt 3>&-
	run cmp src mnt/file
	assert_success
	mfs umount mnt
	# and the checker, which reads each copy on its own, names the failing one
	run env MFS_FAULT="read:20:s@img1" mfs check --check-data-csum img1 img2
	assert_failure
	assert_output --regexp "copy 1 \(on devid 1\)"
	assert_output --partial "Input/output error"
}
