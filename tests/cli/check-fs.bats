#!/usr/bin/env bats
# mfs check, phases 5 and 6: the fs tree (inodes, link counts, orphans,
# directory entries, file extents, data extent references, checksum items)
# of filesystems written through a real mount, and --check-data-csum reading
# every copy of every data sector. Damage is done by tests/fsck/mfs-corrupt,
# which changes one item through the engine so the tree stays well-formed.

load helpers

CORRUPT="$MFS_BUILD/tests/fsck/mfs-corrupt"

# the common teardown, run after ours
eval "helpers_$(declare -f teardown)"

teardown() {
	mfs_cleanup_mounts
	helpers_teardown
}

# disk_bytenr_of, dir_index_of, inode_field: readers of dump-tree output
. "$BATS_TEST_DIRNAME/../fsck/dump.bash"

# A small single-device filesystem written through a mount: a/f with a
# second name d/g, a symlink, a 3-sector file, an empty dir. Sets F, D, A,
# S, DATA (inode numbers) and DATA_BYTENR.
small_fs() {
	make_images 1 512M
	mkfs.mfs -q "$T/img1"
	mfs_mount "$T/img1" "$T/mnt"
	mkdir "$T/mnt/a" "$T/mnt/d" "$T/mnt/empty"
	echo hello >"$T/mnt/a/f"
	ln "$T/mnt/a/f" "$T/mnt/d/g"
	ln -s a/f "$T/mnt/s"
	head -c 12288 /dev/urandom >"$T/mnt/data"
	F=$(stat -c %i "$T/mnt/a/f")
	D=$(stat -c %i "$T/mnt/d")
	A=$(stat -c %i "$T/mnt/a")
	S=$(stat -c %i "$T/mnt/s")
	DATA=$(stat -c %i "$T/mnt/data")
	mfs umount "$T/mnt"
	DATA_BYTENR=$(disk_bytenr_of "$T/img1" "$DATA")
	[ -n "$DATA_BYTENR" ]
	run mfs check "$T/img1"
	assert_success
	cp --sparse=always "$T/img1" "$T/pristine"
}

restore_fs() {
	cp --sparse=always "$T/pristine" "$T/img1"
}

# check_reports LINE...: mfs check fails with exactly these ERROR lines.
check_reports() {
	local line n=$#

	run --separate-stderr mfs check "$T/img1"
	assert_failure 1
	for line in "$@"; do
		assert_stderr_line "ERROR: $line"
	done
	if [ "$(grep -c '^ERROR' <<<"$stderr")" -ne "$n" ]; then
		printf 'expected %d ERROR lines:\n%s\n' "$n" "$stderr" >&2
		return 1
	fi
	assert_line "$n error(s) found"
}

@test "check-fs: a filesystem written through a mount checks clean, data checksums too" {
	make_images 2
	mkfs.mfs -q -d raid1 -m raid1 $(imgs 2)
	mfs_mount "$T/img1" "$T/mnt"
	cd "$T/mnt"
	mkdir -p a/b/c d x/y
	echo hello >a/f
	ln a/f d/hard
	ln a/f a/b/hard2
	ln -s ../a/f d/sym
	ln -s "$(printf 'x%.0s' {1..300})" longsym
	"$MFS_PY" -c '
import os
os.setxattr("a/f", b"user.k", b"v" * 100)
os.setxattr("a", b"user.dir", b"x")
os.setxattr("d/sym", b"trusted.t", b"1", follow_symlinks=False)'
	# several 1 MiB extents, then overwrites that split them
	head -c 3000000 /dev/urandom >big
	dd if=/dev/urandom of=big bs=4k seek=10 count=3 conv=notrunc status=none
	dd if=/dev/urandom of=big bs=1 seek=5000 count=10 conv=notrunc status=none
	# sparse, preallocated (also past EOF), punched, truncated
	truncate -s 50M sparse
	echo tail >>sparse
	echo mid | dd of=sparse bs=1 seek=20000000 conv=notrunc status=none
	fallocate -l 1M pre
	fallocate -n -o 2M -l 512K pre
	dd if=/dev/urandom of=pre bs=4k seek=3 count=2 conv=notrunc status=none
	head -c 200000 /dev/urandom >punch
	fallocate -p -o 8192 -l 50000 punch
	head -c 100000 /dev/urandom >tr
	truncate -s 5000 tr
	truncate -s 90000 tr
	# the same sector rewritten inside one transaction
	dd if=/dev/urandom of=ow bs=4k count=1 status=none
	dd if=/dev/urandom of=ow bs=4k count=1 conv=notrunc status=none
	# many names, some gone again; renames; special files
	for i in $(seq 1 300); do echo "$i" >"a/b/file$i"; done
	for i in $(seq 1 100); do rm "a/b/file$i"; done
	mv a/b/c d/c2
	rmdir x/y
	mv d dd
	echo one >o1
	echo two >o2
	mv o1 o2
	mkfifo fifo
	mknod cdev c 1 3
	md5sum big sparse pre punch tr >"$T/sums"
	cd "$T"
	mfs umount "$T/mnt"

	run --separate-stderr mfs check "$T/img1"
	assert_success
	assert_line --partial "no error found"
	assert_stderr_line "[5/5] checking fs tree"
	refute grep -q ERROR <<<"$stderr"
	assert_line --regexp '^total data bytes: [1-9][0-9]+$'
	assert_line --regexp '^total csum bytes: [1-9][0-9]+$'

	run --separate-stderr mfs check --check-data-csum "$T/img1"
	assert_success
	assert_stderr_line "[5/6] checking fs tree"
	assert_stderr_line "[6/6] checking data checksums"
	refute grep -q ERROR <<<"$stderr"

	run fsck.mfs "$T/img1"
	[ "$status" -eq 0 ]

	# and it reads back what was written
	mfs_mount "$T/img1" "$T/mnt"
	(cd "$T/mnt" && md5sum -c --quiet "$T/sums")
	"$MFS_PY" -c 'import os, sys; assert os.getxattr(sys.argv[1], "user.k") == b"v" * 100' \
		"$T/mnt/a/f"
	mfs umount "$T/mnt"
}

@test "check-fs: compressed raid5 data checks clean, every parity rebuild included" {
	make_images 3
	mkfs.mfs -q -d raid5 -m raid1 $(imgs 3)
	mfs_mount -o compress=zlib "$T/img1" "$T/mnt"
	"$MFS_PY" -c '
import random, sys
random.seed(7)
chunk = bytes(random.getrandbits(8) for _ in range(50000))
with open(sys.argv[1] + "/comp", "wb") as f:
	f.write(chunk * 40)
	f.seek(123456)
	f.write(b"z" * 70000)' "$T/mnt"
	head -c 300000 /dev/urandom >"$T/mnt/random"
	mfs umount "$T/mnt"
	run --separate-stderr mfs check --check-data-csum "$T/img1"
	assert_success
	refute grep -q ERROR <<<"$stderr"
}

@test "check-fs: --check-data-csum names the bad copy of raid1 data; plain check passes" {
	make_images 2
	mkfs.mfs -q -d raid1 -m raid1 $(imgs 2)
	mfs_mount "$T/img1" "$T/mnt"
	head -c 65536 /dev/urandom >"$T/mnt/file"
	cp "$T/mnt/file" "$T/orig"
	ino=$(stat -c %i "$T/mnt/file")
	mfs umount "$T/mnt"
	bytenr=$(disk_bytenr_of "$T/img1" "$ino")
	[ -n "$bytenr" ]
	# copy 1 is the chunk's first stripe
	read -r devid phys < <(physical_copies "$T/img1" "$bytenr" | head -1)
	[ -n "$phys" ]
	corrupt "$(path_of_devid "$devid")" $((phys + 2 * 4096 + 100))

	run --separate-stderr mfs check "$T/img1"
	assert_success
	assert_line --partial "no error found"

	run --separate-stderr mfs check --check-data-csum "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: data extent $bytenr sector 2 (logical $((bytenr + 8192))): copy 1 (on devid $devid): checksum mismatch"
	[ "$(grep -c '^ERROR' <<<"$stderr")" -eq 1 ]
	assert_line "1 error(s) found"
	run fsck.mfs "$T/img1"
	[ "$status" -eq 0 ]

	# a read through the mount gets the good copy and heals the bad one
	mfs_mount "$T/img1" "$T/mnt"
	cmp "$T/mnt/file" "$T/orig"
	mfs umount "$T/mnt"
	run mfs check --check-data-csum "$T/img1"
	assert_success
}

@test "check-fs: wrong link counts of a file and a directory" {
	small_fs
	"$CORRUPT" "$T/img1" set fs "$F" INODE_ITEM 0 nlink 5
	check_reports "inode $F (regular file) has link count 5, expected 2"
	run fsck.mfs "$T/img1"
	[ "$status" -eq 4 ]

	restore_fs
	"$CORRUPT" "$T/img1" set fs 256 INODE_ITEM 0 nlink 2
	check_reports "inode 256 (directory) has link count 2, expected 5"

	restore_fs
	"$CORRUPT" "$T/img1" set fs "$D" INODE_ITEM 0 nlink 0
	check_reports "inode $D (directory) has link count 0, expected 2"
}

@test "check-fs: an inode nothing names, and orphan items" {
	small_fs
	# drop both entries of 'data' and fix the directory size to match
	idx=$(dir_index_of "$T/img1" 256 data)
	size=$(inode_field "$T/img1" 256 size)
	"$CORRUPT" "$T/img1" del fs 256 DIR_INDEX "$idx"
	"$CORRUPT" "$T/img1" del fs 256 DIR_ITEM hash:data
	"$CORRUPT" "$T/img1" set fs 256 INODE_ITEM 0 size $((size - 4))
	check_reports "inode $DATA is not referenced and not an orphan"

	# with an orphan item and no links it is a valid unlinked-while-open inode
	"$CORRUPT" "$T/img1" set fs "$DATA" INODE_ITEM 0 nlink 0
	"$CORRUPT" "$T/img1" insert fs ORPHAN ORPHAN_ITEM "$DATA"
	run mfs check "$T/img1"
	assert_success

	restore_fs
	"$CORRUPT" "$T/img1" insert fs ORPHAN ORPHAN_ITEM "$F"
	check_reports "orphan item for inode $F, whose link count is 2"

	restore_fs
	"$CORRUPT" "$T/img1" insert fs ORPHAN ORPHAN_ITEM 4000
	check_reports "orphan item for inode 4000, which does not exist"
}

@test "check-fs: directory entries that disagree with each other or with the inode" {
	small_fs
	idx=$(dir_index_of "$T/img1" 256 data)

	# DIR_INDEX without its DIR_ITEM twin
	"$CORRUPT" "$T/img1" del fs 256 DIR_ITEM hash:data
	check_reports "dir 256 entry 'data' (index $idx) has no DIR_ITEM"

	# DIR_ITEM without its DIR_INDEX twin (the inode then has no link)
	restore_fs
	"$CORRUPT" "$T/img1" del fs 256 DIR_INDEX "$idx"
	check_reports "dir 256 entry 'data' (index $idx) has no DIR_INDEX" \
		"directory 256 has size $(inode_field "$T/pristine" 256 size), its entries' names add up to $(($(inode_field "$T/pristine" 256 size) - 4))" \
		"inode $DATA is not referenced and not an orphan"

	# the entry's type is not the inode's
	restore_fs
	"$CORRUPT" "$T/img1" set fs 256 DIR_ITEM hash:data type 7
	"$CORRUPT" "$T/img1" set fs 256 DIR_INDEX "$idx" type 7
	check_reports "dir 256 entry 'data' has type 7, but inode $DATA is a regular file"

	# the name no longer matches its hash
	restore_fs
	"$CORRUPT" "$T/img1" set fs 256 DIR_ITEM hash:data name dama
	"$CORRUPT" "$T/img1" set fs 256 DIR_INDEX "$idx" name dama
	run --separate-stderr mfs check "$T/img1"
	assert_failure 1
	assert_stderr_regex "^ERROR: dir 256 entry 'dama': name hash 0x[0-9a-f]+ does not match its DIR_ITEM key 0x[0-9a-f]+$"
	[ "$(grep -c '^ERROR' <<<"$stderr")" -eq 1 ]

	# "." is never a stored name
	restore_fs
	"$CORRUPT" "$T/img1" set fs 256 DIR_ITEM hash:s name .
	"$CORRUPT" "$T/img1" set fs 256 DIR_INDEX "$(dir_index_of "$T/img1" 256 s)" name .
	run --separate-stderr mfs check "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: dir 256 entry '.': invalid name"

	# an entry pointing at an inode that does not exist
	restore_fs
	"$CORRUPT" "$T/img1" set fs 256 DIR_ITEM hash:data child 5000
	"$CORRUPT" "$T/img1" set fs 256 DIR_INDEX "$idx" child 5000
	check_reports "dir 256 entry 'data' points at inode 5000, which does not exist" \
		"inode $DATA is not referenced and not an orphan"
}

@test "check-fs: a directory with two parents" {
	small_fs
	# turn root's entry 'data' into a second name of directory d
	idx=$(dir_index_of "$T/img1" 256 data)
	for k in "DIR_ITEM hash:data" "DIR_INDEX $idx"; do
		"$CORRUPT" "$T/img1" set fs 256 $k child "$D"
		"$CORRUPT" "$T/img1" set fs 256 $k type 2
	done
	"$CORRUPT" "$T/img1" set fs 256 INODE_ITEM 0 nlink 6
	"$CORRUPT" "$T/img1" set fs "$DATA" INODE_ITEM 0 nlink 0
	"$CORRUPT" "$T/img1" insert fs ORPHAN ORPHAN_ITEM "$DATA"
	check_reports "directory $D has more than one parent: dir 256 and dir 256 entry 'data'"
}

@test "check-fs: file extents against data extent items and checksums" {
	small_fs
	# reference count in the extent item
	"$CORRUPT" "$T/img1" set extent "$DATA_BYTENR" EXTENT_ITEM 12288 refs 3
	check_reports "data extent $DATA_BYTENR length 12288 has refs 3, but 1 file extent item(s) point at it"

	# a data extent nothing points at any more (a leak)
	restore_fs
	"$CORRUPT" "$T/img1" del fs "$DATA" EXTENT_DATA 0
	"$CORRUPT" "$T/img1" set fs "$DATA" INODE_ITEM 0 nbytes 0
	check_reports "data extent $DATA_BYTENR length 12288 is not referenced by any file extent"

	# nbytes
	restore_fs
	"$CORRUPT" "$T/img1" set fs "$DATA" INODE_ITEM 0 nbytes 4096
	check_reports "inode $DATA has nbytes 4096, its file extents add up to 12288"

	# no extent item behind a file extent
	restore_fs
	"$CORRUPT" "$T/img1" del extent "$DATA_BYTENR" EXTENT_ITEM 12288
	run --separate-stderr mfs check "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: data extent $DATA_BYTENR length 12288 (inode $DATA file extent at 0) has no extent item"

	# a file extent reaching past its data extent
	restore_fs
	"$CORRUPT" "$T/img1" set fs "$DATA" EXTENT_DATA 0 offset 4096
	check_reports "inode $DATA file extent at 0: offset 4096 + num_bytes 12288 exceeds ram_bytes 12288"

	# checksums: missing, wrong size, without a data extent
	restore_fs
	"$CORRUPT" "$T/img1" del csum EXTENT_CSUM EXTENT_CSUM "$DATA_BYTENR"
	check_reports "data extent $DATA_BYTENR length 12288 (inode $DATA file extent at 0) has no csum item"
	"$CORRUPT" "$T/img1" insert csum EXTENT_CSUM EXTENT_CSUM "$DATA_BYTENR" 0000000011111111
	check_reports "csum item for data extent $DATA_BYTENR has 8 bytes, expected 12"
	"$CORRUPT" "$T/img1" insert csum EXTENT_CSUM EXTENT_CSUM $((DATA_BYTENR + 1048576)) 00000000
	check_reports "csum item for data extent $DATA_BYTENR has 8 bytes, expected 12" \
		"csum item for extent $((DATA_BYTENR + 1048576)) (4096 bytes of data) has no data extent item"
}

@test "check-fs: symlink and inline extent damage" {
	small_fs
	"$CORRUPT" "$T/img1" set fs "$S" INODE_ITEM 0 size 9
	check_reports "symlink $S has size 9, its target is 3 bytes"

	restore_fs
	"$CORRUPT" "$T/img1" del fs "$S" EXTENT_DATA 0
	check_reports "symlink $S has no target (no inline file extent)"

	# a/f ("hello") is a small file: its data is inline, at offset 0 only
	restore_fs
	"$CORRUPT" "$T/img1" insert fs "$F" EXTENT_DATA 1048576 0100000000000000000078
	check_reports "file $F has an inline file extent at 1048576, expected 0"

	restore_fs
	"$CORRUPT" "$T/img1" set fs "$F" INODE_ITEM 0 size 3
	check_reports "file $F has size 3, less than its 6 bytes of inline data"

	# no inline extent on a directory
	restore_fs
	"$CORRUPT" "$T/img1" insert fs "$D" EXTENT_DATA 0 0100000000000000000078
	check_reports "inode $D (directory) has an inline file extent at 0; only symlinks and regular files have them"
}

@test "check-fs: a loop of directories cut off from the root" {
	make_images 1 512M
	mkfs.mfs -q "$T/img1"
	mfs_mount "$T/img1" "$T/mnt"
	mkdir "$T/mnt/a" "$T/mnt/d"
	echo x >"$T/mnt/a/f"
	echo y >"$T/mnt/d/g"
	A=$(stat -c %i "$T/mnt/a")
	D=$(stat -c %i "$T/mnt/d")
	F=$(stat -c %i "$T/mnt/a/f")
	G=$(stat -c %i "$T/mnt/d/g")
	mfs umount "$T/mnt"
	# a/f becomes a name of d and d/g a name of a; root forgets both
	for k in "DIR_ITEM hash:f" "DIR_INDEX $(dir_index_of "$T/img1" "$A" f)"; do
		"$CORRUPT" "$T/img1" set fs "$A" $k child "$D"
		"$CORRUPT" "$T/img1" set fs "$A" $k type 2
	done
	for k in "DIR_ITEM hash:g" "DIR_INDEX $(dir_index_of "$T/img1" "$D" g)"; do
		"$CORRUPT" "$T/img1" set fs "$D" $k child "$A"
		"$CORRUPT" "$T/img1" set fs "$D" $k type 2
	done
	"$CORRUPT" "$T/img1" del fs 256 DIR_INDEX "$(dir_index_of "$T/img1" 256 a)"
	"$CORRUPT" "$T/img1" del fs 256 DIR_INDEX "$(dir_index_of "$T/img1" 256 d)"
	"$CORRUPT" "$T/img1" del fs 256 DIR_ITEM hash:a
	"$CORRUPT" "$T/img1" del fs 256 DIR_ITEM hash:d
	"$CORRUPT" "$T/img1" set fs 256 INODE_ITEM 0 size 0
	"$CORRUPT" "$T/img1" set fs 256 INODE_ITEM 0 nlink 2
	"$CORRUPT" "$T/img1" set fs "$A" INODE_ITEM 0 nlink 3
	"$CORRUPT" "$T/img1" set fs "$D" INODE_ITEM 0 nlink 3
	# the files lose their names: unlinked-while-open inodes
	for i in "$F" "$G"; do
		"$CORRUPT" "$T/img1" set fs "$i" INODE_ITEM 0 nlink 0
		"$CORRUPT" "$T/img1" insert fs ORPHAN ORPHAN_ITEM "$i"
	done
	check_reports "directory $A is in a loop of directories not reachable from the root"
}
