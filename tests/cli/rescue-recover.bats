#!/usr/bin/env bats
# mfs rescue chunk-recover: the chunk tree rebuilt from a scan of the
# devices (tree blocks, device extents, block groups) when every copy of it
# is damaged; nothing written before the answer, nor when it cannot be
# rebuilt (the device tree lost too). With members missing, their stripes
# are kept where every chunk can be read and ordered without them.

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

# ---------------- chunk-recover with members missing ----------------

# lose N DEVID...: of the N members, img<DEVID> taken away (kept as away<DEVID>);
# the paths of the others in $rest.
lose() {
	local n=$1 i
	shift
	rest=""
	for ((i = 1; i <= n; i++)); do
		if [[ " $* " == *" $i "* ]]; then
			mv "$T/img$i" "$T/away$i"
		else
			rest="$rest $T/img$i"
		fi
	done
}

# bring_back DEVID...
bring_back() {
	local d

	for d in "$@"; do
		mv "$T/away$d" "$T/img$d"
	done
}

# recover_without N DEVID...: every chunk tree copy damaged, the members
# DEVID taken away; chunk-recover with the rest keeps their stripes.
recover_without() {
	local n=$1
	corrupt_copies --what metadata --owner 3 "$T/img1" "$(seq -s, 1 "$n")"
	lose "$@"
	run mfs rescue chunk-recover -y -v $rest
	assert_success
	assert_line "Kept the stripes of $(($# - 1)) missing device(s): mount with -o degraded until they are back, replaced or deleted"
	assert_line --partial "Chunk tree recovered successfully"
}

# degraded_intact DEVID...: mounted -o degraded from $rest, every file reads
# back; check finds nothing wrong but the members DEVID missing.
degraded_intact() {
	local d

	mfs_mount -o degraded $rest "$T/mnt"
	diff -u "$T/sums" <(tree_sums "$T/mnt")
	mfs umount "$T/mnt"
	run --separate-stderr mfs check $rest
	assert_failure 1
	for d in "$@"; do
		assert_stderr_line "ERROR: device $d is missing"
	done
	assert_equal "$(grep -c '^ERROR' <<<"$stderr")" "$#"
}

# refused_without N DEVID...: every chunk tree copy damaged, DEVID taken
# away: chunk-recover with the rest refuses and writes nothing.
refused_without() {
	local n=$1 f
	corrupt_copies --what metadata --owner 3 "$T/img1" "$(seq -s, 1 "$n")"
	lose "$@"
	for f in $rest; do
		fingerprint "$f" >"$f.fp"
	done
	run mfs rescue chunk-recover -y $rest
	assert_failure 1
	assert_line "Chunk tree recovery failed; nothing was written"
	for f in $rest; do
		assert_untouched "$f" "$(cat "$f.fp")"
	done
}

@test "rescue chunk-recover: raid1, one of three missing: its stripes kept, degraded mount, the member back" {
	make_fs 3 raid1 raid1
	# the system chunk's item in the superblock names device 2 and its uuid
	recover_without 3 2
	assert_line --regexp '^device 2 is missing: uuid [0-9a-f-]{36}, size 536870912; its stripes are kept$'
	degraded_intact 2
	bring_back 2
	files_intact $(imgs 3)
	run mfs check --check-data-csum $(imgs 3)
	assert_success
}

@test "rescue chunk-recover: raid10, one of four missing: the order told from the data left; replaced" {
	make_fs 4 raid10 raid1
	recover_without 4 1
	assert_line --regexp '^chunk [0-9]+: stripe order told from [0-9]+ checksummed sectors$'
	degraded_intact 1
	truncate -s 512M "$T/new"
	# the others found by the registry, as a replace finds them
	run --separate-stderr mfs replace start 1 "$T/new" "$T/img2"
	assert_success
	files_intact "$T/new" $rest
	run mfs check --check-data-csum "$T/new" $rest
	assert_success
}

# stripes_of IMG PROFILE: the stripes (devid, offset) of the data chunks of PROFILE
stripes_of() {
	mfs inspect-internal dump-tree -t chunk "$1" |
		awk -v t="Data|$2" '/CHUNK_ITEM|DEV_ITEM/ { on = 0 } $NF == t { on = 1 } on && $1 == "stripe"'
}

@test "rescue chunk-recover: raid5, one of three missing: the order told without parity; the member back" {
	make_fs 3 raid5 raid1c3
	stripes_of "$T/img1" RAID5 >"$T/stripes"
	recover_without 3 3
	assert_line --regexp '^chunk [0-9]+: stripe order told from [0-9]+ checksummed sectors$'
	diff -u "$T/stripes" <(stripes_of "$T/img1" RAID5)
	degraded_intact 3
	bring_back 3
	files_intact $(imgs 3)
	run mfs check --check-data-csum $(imgs 3)
	assert_success
}

@test "rescue chunk-recover: raid6, one of four missing: the rows checked through the missing column" {
	make_fs 4 raid6 raid1c3
	stripes_of "$T/img1" RAID6 >"$T/stripes"
	recover_without 4 1
	assert_line --regexp '^chunk [0-9]+: stripe order told from [0-9]+ checksummed sectors$'
	diff -u "$T/stripes" <(stripes_of "$T/img2" RAID6)
	degraded_intact 1
	bring_back 1
	files_intact $(imgs 4)
	run mfs check --check-data-csum $(imgs 4)
	assert_success
}

@test "rescue chunk-recover: raid6, two of four missing: sizes from a surviving device item; both replaced" {
	make_fs 4 raid6 raid1c4
	# the resize rewrites the chunk tree: its old leaf, with every device item, survives
	mfs_mount $(imgs 4) "$T/mnt"
	mfs filesystem resize 1:500m "$T/mnt"
	mfs umount "$T/mnt"
	recover_without 4 3 4
	assert_line --regexp '^device 3 is missing: uuid [0-9a-f-]{36}, size 536870912; its stripes are kept$'
	assert_line --regexp '^device 4 is missing: uuid [0-9a-f-]{36}, size 536870912; its stripes are kept$'
	degraded_intact 3 4
	truncate -s 512M "$T/new3" "$T/new4"
	mfs replace start 3 "$T/new3" "$T/img1"
	mfs replace start 4 "$T/new4" "$T/img1"
	files_intact $rest "$T/new3" "$T/new4"
	run mfs check --check-data-csum $rest "$T/new3" "$T/new4"
	assert_success
}

@test "rescue chunk-recover: a chunk that cannot be read with members missing: refused with figures, nothing written" {
	make_fs 2 raid0 raid1
	refused_without 2 2
	assert_line "ERROR: the chunk tree cannot be rebuilt: 1 data chunk cannot be read: device 2 missing, and a RAID0 chunk survives the loss of 0 devices at most"

	rm -f "$T"/img* "$T"/away* "$MFS_REGISTRY"
	make_fs 3 raid5 raid1c3
	refused_without 3 2 3
	assert_line "ERROR: the chunk tree cannot be rebuilt: 1 data chunk cannot be read: devices 2, 3 missing, and a RAID5 chunk survives the loss of 1 device at most"
}

@test "rescue chunk-recover: a missing member's uuid or size not learnt: refused, nothing written" {
	# raid1 on three: device 3 holds no stripe of the system chunk, no chunk tree leaf survives
	make_fs 3 raid1 raid1
	refused_without 3 3
	assert_line "ERROR: the chunk tree cannot be rebuilt: device 3 is missing and holds device extents, but no surviving chunk or device item names its device uuid: its stripes cannot be kept: name the device (or 'mfs device scan' it) to rebuild the chunk tree"

	# two missing and no device item of theirs: the superblock's total does not tell them apart
	rm -f "$T"/img* "$T"/away* "$MFS_REGISTRY"
	make_fs 4 raid1c3 raid1c4
	refused_without 4 3 4
	assert_line "ERROR: the chunk tree cannot be rebuilt: device 3 is missing and its size cannot be learnt: no surviving device item gives it, and more than one member is missing: name the device (or 'mfs device scan' it) to rebuild the chunk tree"
}

@test "rescue chunk-recover: a stripe order the members present cannot tell: refused, names the chunk, nothing written" {
	# raid6, two missing, no surviving chunk item: nothing tells their stripes apart
	make_fs 4 raid6 raid1c4
	refused_without 4 3 4
	assert_line --regexp "^ERROR: the chunk tree cannot be rebuilt: the stripe order of RAID6 chunk [0-9]+ cannot be told with devices 3, 4 missing: several orders fit the [0-9]+ checksummed sectors found there: nothing on the members present tells the missing stripes apart; bring the devices back to rebuild the chunk tree$"

	# raid5, one data column used: P and the missing column look alike, parity is no help
	rm -f "$T"/img* "$T"/away* "$MFS_REGISTRY"
	small_parity_fs 3 raid5 raid1c3
	refused_without 3 3
	assert_line --regexp "^ERROR: the chunk tree cannot be rebuilt: the stripe order of RAID5 chunk [0-9]+ cannot be told with device 3 missing: several orders fit the 1 checksummed sectors found there: the parity that would tell them apart cannot be checked without it \(its stripe and a parity strip may be swapped\); bring the device back to rebuild the chunk tree$"

	# raid6, the written column missing: P and Q hold its bytes, so orders that
	# put P or Q in its place find it too and their parity holds
	rm -f "$T"/img* "$T"/away* "$MFS_REGISTRY"
	small_parity_fs 4 raid6 raid1c3
	refused_without 4 1
	assert_line --regexp "^ERROR: the chunk tree cannot be rebuilt: the stripe order of RAID6 chunk [0-9]+ cannot be told with device 1 missing: several orders fit the 1 checksummed sectors found there: nothing found there tells them apart; bring the device back to rebuild the chunk tree$"
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
