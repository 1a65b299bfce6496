#!/usr/bin/env bats
# mfs rescue chunk-recover: the chunk tree rebuilt from a scan of the
# devices (tree blocks, device extents, block groups) when every copy of it
# is damaged; nothing written before the answer, nor when it cannot be
# rebuilt (a member missing, the device tree lost too).

load helpers

eval "helpers_$(declare -f teardown)"

teardown() {
	mfs_cleanup_mounts
	helpers_teardown
}

# make_fs N DATA META: a filesystem on N images with files; sums in $T/sums,
# the inode number of d/f1 in $T/ino.
make_fs() {
	make_images "$1" 512M
	mkfs.mfs -q -d "$2" -m "$3" $(imgs "$1")
	mfs_mount $(imgs "$1") "$T/mnt"
	mkdir -p "$T/mnt/d"
	for i in $(seq 1 40); do
		head -c $((i * 7001)) /dev/urandom >"$T/mnt/d/f$i"
	done
	for i in $(seq 1 200); do
		echo "small $i" >"$T/mnt/d/s$i"
	done
	tree_sums "$T/mnt" >"$T/sums"
	stat -c %i "$T/mnt/d/f1" >"$T/ino"
	mfs umount "$T/mnt"
}

files_intact() {
	mfs_mount "$@" "$T/mnt"
	diff -u "$T/sums" <(tree_sums "$T/mnt")
	mfs umount "$T/mnt"
}

# chunk_items IMG: the chunk items as dump-tree prints them (keys, stripes).
chunk_items() {
	mfs inspect-internal dump-tree -t chunk "$1" |
		grep -E 'CHUNK_ITEM|DEV_ITEM|stripe [0-9]|type|devid [0-9]+ total_bytes'
}

@test "rescue chunk-recover: every chunk tree copy damaged; asks first, 'no' writes nothing, 'yes' rebuilds it" {
	make_fs 2 raid1 raid1
	chunk_items "$T/img1" >"$T/chunks-before"
	corrupt_copies --what metadata --owner 3 "$T/img1" 1,2
	run mfs check $(imgs 2)
	assert_failure 1
	assert_output --regexp "ERROR: the chunk tree \(root block [0-9]+\) cannot be read: Structure needs cleaning; 'mfs rescue chunk-recover' rebuilds it"
	md5sum $(imgs 2) >"$T/before"

	run mfs rescue chunk-recover $(imgs 2) <<<"n"
	assert_failure 1
	assert_line --regexp '^Rebuilt 3 chunk\(s\) from [0-9]+ tree block copies: 1 in the order of a surviving chunk item, 0 in the order'
	assert_output --partial "Are you sure? [y/N]"
	assert_line --partial "Chunk tree recovery aborted"
	md5sum -c --quiet "$T/before"

	run mfs rescue chunk-recover -v $(imgs 2) <<<"y"
	assert_success
	assert_line --regexp '^scanned 2 device\(s\): [0-9]+ tree block copies of this filesystem$'
	assert_line --regexp '^chunk [0-9]+ length [0-9]+ Data RAID1: 2 stripe\(s\)$'
	assert_line --regexp '^chunk [0-9]+ length [0-9]+ System RAID1: 2 stripe\(s\)$'
	assert_line --partial "Chunk tree recovered successfully"
	run mfs check --check-data-csum $(imgs 2)
	assert_success
	# the same chunks, stripes and devices as before (the device items' generation aside)
	diff -u "$T/chunks-before" <(chunk_items "$T/img1")
	files_intact $(imgs 2)
}

@test "rescue chunk-recover: raid10 data, raid0 metadata: the stripe order told from the data and the tree blocks" {
	make_fs 4 raid10 raid0
	chunk_items "$T/img1" >"$T/chunks-before"
	corrupt_copies --what metadata --owner 3 "$T/img1" 1,2,3,4
	run mfs check $(imgs 4)
	assert_failure 1
	run mfs rescue chunk-recover -y $(imgs 4)
	assert_success
	# the system chunk from the superblock's array; data and metadata told apart by probing
	assert_line --regexp '^Rebuilt 3 chunk\(s\) from [0-9]+ tree block copies: 1 in the order of a surviving chunk item, 2 in the order the blocks and data found bear out$'
	run mfs check --check-data-csum $(imgs 4)
	assert_success
	diff -u "$T/chunks-before" <(chunk_items "$T/img1")
	files_intact $(imgs 4)
}

# small_parity_fs N DATA META: one 20000-byte file, so the data chunk's
# first row holds one data column: nothing lies in the others to tell
# where they go, only the parity does.
small_parity_fs() {
	make_images "$1" 512M
	mkfs.mfs -q -d "$2" -m "$3" $(imgs "$1")
	mfs_mount $(imgs "$1") "$T/mnt"
	head -c 20000 /dev/urandom >"$T/mnt/f"
	tree_sums "$T/mnt" >"$T/sums"
	mfs umount "$T/mnt"
}

# each_member_away N: every member in turn missing, the files read back.
each_member_away() {
	local gone rest i

	for ((gone = 1; gone <= $1; gone++)); do
		rest=""
		for ((i = 1; i <= $1; i++)); do
			[ "$i" = "$gone" ] || rest="$rest $T/img$i"
		done
		mv "$T/img$gone" "$T/away"
		rm -f "$MFS_REGISTRY"
		mfs_mount -o ro,degraded $rest "$T/mnt"
		diff -u "$T/sums" <(tree_sums "$T/mnt")
		mfs umount "$T/mnt"
		mv "$T/away" "$T/img$gone"
	done
}

@test "rescue chunk-recover: raid5 and raid6 with one data column used: parity places the rest; degraded reads agree" {
	local spec n
	for spec in "3 raid5 raid1" "4 raid6 raid1c3"; do
		set -- $spec
		n=$1
		rm -f "$MFS_REGISTRY"
		small_parity_fs "$@"
		corrupt_copies --what metadata --owner 3 "$T/img1" "$(seq -s, 1 "$n")"
		run mfs rescue chunk-recover -y -v $(imgs "$n")
		assert_success
		assert_line --regexp '^chunk [0-9]+: stripe order told from 1 checksummed sectors$'
		run mfs check --check-data-csum $(imgs "$n")
		assert_success
		files_intact $(imgs "$n")
		each_member_away "$n"
	done
}

@test "rescue chunk-recover: an intact filesystem gets the same chunk tree again" {
	make_fs 3 raid5 raid1
	chunk_items "$T/img1" >"$T/chunks-before"
	run mfs rescue chunk-recover -y $(imgs 3)
	assert_success
	run mfs check --check-data-csum $(imgs 3)
	assert_success
	diff -u "$T/chunks-before" <(chunk_items "$T/img1")
	files_intact $(imgs 3)
}

@test "rescue chunk-recover: refused with a member missing, nothing written" {
	make_fs 2 raid1 raid1
	corrupt_copies --what metadata --owner 3 "$T/img1" 1,2
	mv "$T/img2" "$T/away"
	md5sum "$T/img1" >"$T/before"
	run mfs rescue chunk-recover -y "$T/img1"
	assert_failure 1
	assert_line "ERROR: the chunk tree cannot be rebuilt: the filesystem has 2 devices and 1 are present: chunk-recover needs every member (name the others, or 'mfs device scan' them)"
	assert_line "Chunk tree recovery failed; nothing was written"
	md5sum -c --quiet "$T/before"
}

@test "rescue chunk-recover: the device tree lost too: refused, says which block, nothing written" {
	make_fs 2 raid1 raid1
	corrupt_copies --what metadata --owner 3,4 "$T/img1" 1,2
	md5sum $(imgs 2) >"$T/before"
	run mfs rescue chunk-recover -y $(imgs 2)
	assert_failure 1
	assert_line --regexp '^ERROR: the chunk tree cannot be rebuilt: device tree block [0-9]+ \(generation [0-9]+, level 0\) has no copy that verifies on the devices present$'
	assert_line "Chunk tree recovery failed; nothing was written"
	md5sum -c --quiet "$T/before"
}

@test "rescue chunk-recover: a mounted filesystem is refused" {
	make_fs 2 raid1 raid1
	mfs_mount $(imgs 2) "$T/mnt"
	run mfs rescue chunk-recover -y $(imgs 2)
	assert_failure 1
	assert_line --partial "Chunk tree recovery failed"
	mfs umount "$T/mnt"
	run mfs check $(imgs 2)
	assert_success
}

# ---------------- mfs check --init-extent-tree ----------------

CORRUPT="$MFS_BUILD/tests/fsck/mfs-corrupt"

# extent_keys IMG: "bytenr:length" of each EXTENT_ITEM whose next line has PATTERN.
extent_keys() {
	mfs inspect-internal dump-tree -t extent "$1" | grep -A1 'EXTENT_ITEM' | grep -B1 -e "$2" |
		sed -n 's/.*key (\([0-9]*\) EXTENT_ITEM \([0-9]*\)).*/\1:\2/p'
}

@test "check --init-extent-tree: extent items rebuilt from the trees; asks first, --readonly and a missing member refused" {
	local k
	make_fs 2 raid1 raid1
	for k in $(extent_keys "$T/img1" 'flags DATA' | head -5); do
		"$CORRUPT" -d "$T/img2" "$T/img1" del extent "${k%:*}" EXTENT_ITEM "${k#*:}"
	done
	k=$(extent_keys "$T/img1" 'flags DATA' | tail -1)
	"$CORRUPT" -d "$T/img2" "$T/img1" set extent "${k%:*}" EXTENT_ITEM "${k#*:}" refs 9
	run --separate-stderr mfs check $(imgs 2)
	assert_failure 1
	assert_stderr_regex '^ERROR: data extent [0-9]+ length [0-9]+ \(inode [0-9]+ file extent at 0\) has no extent item$'
	assert_stderr_regex "^ERROR: data extent ${k%:*} length ${k#*:} has refs 9, but 1 file extent item\(s\) point at it$"

	md5sum $(imgs 2) >"$T/before"
	run --separate-stderr mfs check --init-extent-tree $(imgs 2) <<<"n"
	assert_failure 1
	assert_output "Aborted; nothing was written"
	run --separate-stderr mfs check --init-extent-tree --readonly $(imgs 2)
	assert_failure 1
	assert_stderr_line "ERROR: repair options are not compatible with --readonly"
	mv "$T/img2" "$T/img2.keep"
	rm -f "$MFS_REGISTRY"
	run --separate-stderr mfs check --init-extent-tree --force "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: cannot rebuild the extent tree: a member is missing; nothing was written"
	mv "$T/img2.keep" "$T/img2"
	md5sum -c --quiet "$T/before"

	run --separate-stderr mfs check --init-extent-tree $(imgs 2) <<<"y"
	assert_success
	assert_line "Reinitialize extent tree"
	assert_line --regexp '^\[repair\] extent tree rebuilt: [0-9]+ tree block\(s\), [0-9]+ data extent\(s\)$'
	assert_line --regexp 'no error found$'
	run mfs check --check-data-csum $(imgs 2)
	assert_success
	files_intact $(imgs 2)
	# the filesystem goes on: writes after the rebuild allocate around what it recorded
	mfs_mount $(imgs 2) "$T/mnt"
	head -c 1000000 /dev/urandom >"$T/mnt/new"
	tree_sums "$T/mnt" >"$T/sums"
	mfs umount "$T/mnt"
	run mfs check --check-data-csum $(imgs 2)
	assert_success
	files_intact $(imgs 2)
}

@test "check --init-extent-tree: an fs tree block with no good copy: nothing written" {
	make_fs 2 raid1 raid1
	corrupt_copies --what metadata --owner 5 "$T/img1" 1,2
	md5sum $(imgs 2) >"$T/before"
	run --separate-stderr mfs check --init-extent-tree --force $(imgs 2)
	assert_failure 1
	assert_stderr_line "ERROR: cannot rebuild the extent tree: the filesystem could not be opened whole; nothing was written"
	md5sum -c --quiet "$T/before"
}

# ---------------- repairs with a member missing ----------------

@test "degraded: super-recover rewrites the copies on the members present, the missing one is caught up" {
	make_fs 3 raid1 raid1c3
	zero "$T/img1" $((65536 + 100)) 100
	mv "$T/img3" "$T/away"
	rm -f "$MFS_REGISTRY"
	run mfs rescue super-recover -y "$T/img1" "$T/img2"
	[ "$status" -eq 2 ]
	assert_line "WARNING: device 3 is missing: its superblock copies are left as they are"
	assert_line "Recovered bad superblocks successful"
	run mfs rescue super-recover "$T/img1" "$T/img2"
	assert_success
	assert_line "All supers are valid, no need to recover"
	mv "$T/away" "$T/img3"
	run mfs check $(imgs 3)
	assert_success
	files_intact $(imgs 3)
}

@test "degraded: check --repair mends from the copies present; the member, back, is caught up" {
	make_fs 3 raid1 raid1c3
	local ino
	ino=$(cat "$T/ino")
	"$MFS_BUILD/tests/fsck/mfs-corrupt" -d "$T/img2" -d "$T/img3" "$T/img1" set fs "$ino" INODE_ITEM 0 nlink 9
	mv "$T/img3" "$T/away"
	rm -f "$MFS_REGISTRY"
	run --separate-stderr mfs check "$T/img1" "$T/img2"
	assert_failure 1
	assert_stderr_line "ERROR: device 3 is missing"
	assert_stderr_regex "^ERROR: inode $ino \(regular file\) has link count 9, expected 1$"
	# copies on the missing member are not errors of their own
	refute_output --partial "on devid 3"

	run --separate-stderr mfs check --repair --force "$T/img1" "$T/img2"
	assert_failure 1
	assert_stderr_line "WARNING: device 3 is missing: repairing from the copies on the devices present; it is caught up when it comes back"
	assert_line "[repair] inode $ino: link count set to 1"
	assert_line "Repaired 1 problem(s); checking again"
	assert_line "1 error(s) found"
	mv "$T/away" "$T/img3"
	run mfs check --check-data-csum $(imgs 3)
	assert_success
	files_intact $(imgs 3)
	run mfs check --check-data-csum $(imgs 3)
	assert_success
	refute_output --partial "behind"
}

@test "degraded: check --repair refused where a chunk cannot be read whole, nothing written" {
	make_fs 2 raid0 raid1
	local ino
	ino=$(cat "$T/ino")
	"$MFS_BUILD/tests/fsck/mfs-corrupt" -d "$T/img2" "$T/img1" set fs "$ino" INODE_ITEM 0 nlink 9
	mv "$T/img2" "$T/away"
	rm -f "$MFS_REGISTRY"
	md5sum "$T/img1" >"$T/before"
	run --separate-stderr mfs check --repair --force "$T/img1"
	assert_failure 1
	assert_stderr_regex "^ERROR: 1 data chunk cannot be read: device 2 missing, and a RAID0 chunk survives the loss of 0 devices at most"
	refute_line --partial "[repair]"
	md5sum -c --quiet "$T/before"
}

@test "check --init-extent-tree: refused on raid5 metadata, nothing written" {
	make_fs 3 raid1 raid5
	md5sum $(imgs 3) >"$T/before"
	run --separate-stderr mfs check --init-extent-tree --force $(imgs 3)
	assert_failure 1
	assert_stderr_regex '^ERROR: (Metadata|System) block group [0-9]+ is RAID5: the extent tree is not rebuilt on raid5/raid6 metadata$'
	assert_stderr_line "ERROR: extent tree rebuilding failed: Operation not supported; nothing was written"
	md5sum -c --quiet "$T/before"
}
