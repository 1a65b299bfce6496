#!/usr/bin/env bats
# mfs inspect-internal dump-super / dump-tree

load helpers

# the common teardown, run after ours (one test mounts)
eval "helpers_$(declare -f teardown)"

teardown() {
	mfs_cleanup_mounts
	helpers_teardown
}

@test "dump-super: header and fields of the primary copy" {
	make_images 3
	mkfs.mfs -q -L lbl -d raid5 -m raid1 $(imgs 3)
	u=$(fs_uuid "$T/img1")
	run --separate-stderr mfs inspect-internal dump-super "$T/img2"
	assert_success
	assert_line --index 0 "superblock: bytenr=65536, device=$T/img2"
	assert_line --index 1 "---------------------------------------------------------"
	assert_line $'csum_type\t\t0 (crc32c)'
	assert_line $'csum_size\t\t4'
	assert_line --regexp $'^csum\t\t\t0x[0-9a-f]{8} \\[match\\]$'
	assert_line $'bytenr\t\t\t65536'
	assert_line $'magic\t\t\t_MFS_v1! [match]'
	assert_line $'fsid\t\t\t'"$u"
	assert_line $'label\t\t\tlbl'
	assert_line --regexp $'^generation\t\t[0-9]+$'
	assert_line --regexp $'^root\t\t\t[0-9]+$'
	assert_line --regexp $'^chunk_root\t\t[0-9]+$'
	assert_line $'total_bytes\t\t'"$((3 * GiB))"
	assert_line $'sectorsize\t\t4096'
	assert_line $'nodesize\t\t16384'
	assert_line $'stripesize\t\t65536'
	assert_line $'num_devices\t\t3'
	assert_line $'incompat_flags\t\t0x1'
	assert_line $'\t\t\t( RAID56 )'
	assert_line $'dev_item.devid\t\t2'
	assert_line --regexp $'^dev_item.uuid\t\t[0-9a-f-]{36}$'
	assert_line $'dev_item.fsid\t\t'"$u [match]"
	assert_line $'dev_item.total_bytes\t'"$GiB"
	assert_stderr_empty
	# every member has its own devid and dev uuid, the same fsid
	[ "$(super_field "$T/img3" dev_item.devid)" = 3 ]
	[ "$(fs_uuid "$T/img3")" = "$u" ]
	[ "$(super_field "$T/img1" dev_item.uuid)" != "$(super_field "$T/img2" dev_item.uuid)" ]
	# several devices in one call
	run mfs inspect-internal dump-super "$T/img1" "$T/img3"
	assert_success
	assert_line "superblock: bytenr=65536, device=$T/img1"
	assert_line "superblock: bytenr=65536, device=$T/img3"
}

@test "dump-super: -s 1, -a and the copies that fit" {
	make_images 1
	truncate -s 200M "$T/small"
	mkfs.mfs -q "$T/img1"
	mkfs.mfs -q "$T/small"
	run --separate-stderr mfs inspect-internal dump-super -s 1 "$T/img1"
	assert_success
	assert_line --index 0 "superblock: bytenr=67108864, device=$T/img1"
	assert_line $'bytenr\t\t\t67108864'
	assert_line --regexp $'^csum\t\t\t0x[0-9a-f]{8} \\[match\\]$'
	run --separate-stderr mfs inspect-internal dump-super --super 0 "$T/img1"
	assert_line --index 0 "superblock: bytenr=65536, device=$T/img1"
	for f in "$T/img1" "$T/small"; do
		run --separate-stderr mfs inspect-internal dump-super -a "$f"
		assert_success
		assert_stderr_empty
		[ "$(count_lines '^superblock: ')" -eq 2 ]
		assert_line "superblock: bytenr=65536, device=$f"
		assert_line "superblock: bytenr=67108864, device=$f"
	done
	# copy 2 (256 GiB) does not fit: asking for it is an error
	run --separate-stderr mfs inspect-internal dump-super -s 2 "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: superblock copy 2 at 274877906944 is past the end of $T/img1"
}

@test "dump-super: -s 3 and garbage are rejected" {
	make_images 1
	mkfs.mfs -q "$T/img1"
	for s in 3 -1 x; do
		run --separate-stderr mfs inspect-internal dump-super -s "$s" "$T/img1"
		assert_failure 1
		assert_stderr_line "ERROR: super mirror should be 0, 1 or 2: $s"
		assert_stdout_empty
	done
}

@test "dump-super: bad magic needs -F; -F dumps a non-mfs file" {
	truncate -s 1G "$T/plain"
	run --separate-stderr mfs inspect-internal dump-super "$T/plain"
	assert_failure 1
	assert_stderr_line "ERROR: bad magic on superblock on $T/plain at 65536 (use --force to dump it anyway)"
	assert_stdout_empty
	run --separate-stderr mfs inspect-internal dump-super -F "$T/plain"
	assert_success
	assert_line --index 0 "superblock: bytenr=65536, device=$T/plain"
	assert_line --regexp $'^magic\t\t\t.* \\[DON\'T MATCH\\]$'
	assert_line --regexp $'^csum\t\t\t0x[0-9a-f]+ \\[DON\'T MATCH\\]$'
	run --separate-stderr mfs inspect-internal dump-super "$T/nope"
	assert_failure 1
	assert_stderr_line "ERROR: cannot open $T/nope: No such file or directory"
}

@test "dump-super: a damaged copy shows a checksum mismatch" {
	make_images 1
	mkfs.mfs -q -L original "$T/img1"
	# change the label byte inside copy 1 only
	printf 'X' | dd of="$T/img1" bs=1 seek=$((64 * MiB + $(label_offset))) conv=notrunc status=none
	run mfs inspect-internal dump-super -s 1 "$T/img1"
	assert_success
	assert_line --regexp $'^csum\t\t\t0x[0-9a-f]{8} \\[DON\'T MATCH\\]$'
	assert_line $'label\t\t\tXriginal'
	run mfs inspect-internal dump-super -s 0 "$T/img1"
	assert_line --regexp $'^csum\t\t\t0x[0-9a-f]{8} \\[match\\]$'
	assert_line $'label\t\t\toriginal'
}

# offset of the label inside a superblock: find "original" in copy 0
label_offset() {
	dd if="$T/img1" bs=4096 skip=16 count=1 status=none | grep -boa original | head -n 1 | cut -d: -f1
}

@test "dump-super -f: the bootstrap chunk array" {
	make_images 1
	mkfs.mfs -q "$T/img1"
	run mfs inspect-internal dump-super -f "$T/img1"
	assert_success
	assert_line --regexp '^sys_chunk_array\[[0-9]+\]:$'
	assert_line $'\titem 0 key (FIRST_CHUNK_TREE CHUNK_ITEM 1048576)'
	assert_line --regexp $'^\t\tlength [0-9]+ owner 2 stripe_len 65536 type System\\|DUP$'
	assert_line $'\t\tnum_stripes 2 sub_stripes 1'
	[ "$(count_lines $'^\t\t\tstripe [01] devid 1 offset [0-9]+$')" -eq 2 ]
	run mfs inspect-internal dump-super "$T/img1"
	refute_line --partial "sys_chunk_array"
}

@test "dump-tree -t chunk: device items, chunk items and their stripes" {
	make_images 3
	mkfs.mfs -q -d raid0 -m raid1 $(imgs 3)
	run --separate-stderr mfs inspect-internal dump-tree -t chunk "$T/img1"
	assert_success
	assert_line --index 0 --regexp '^mfs v[0-9]'
	assert_line --index 1 "chunk tree"
	assert_line --index 2 --regexp '^leaf [0-9]+ items 6 free space [0-9]+ generation [0-9]+ owner CHUNK_TREE$'
	for d in 1 2 3; do
		assert_line --regexp $'^\titem [0-9]+ key \\(DEV_ITEMS DEV_ITEM '"$d"$'\\) itemoff [0-9]+ itemsize [0-9]+$'
		assert_line --regexp $'^\t\tdevid '"$d"' total_bytes 1073741824 bytes_used [0-9]+ flags 0x0$'
		assert_line $'\t\tuuid '"$(super_field "$T/img$d" dev_item.uuid)"
	done
	[ "$(count_lines 'CHUNK_ITEM')" -eq 3 ]
	assert_line --regexp $'^\t\tlength [0-9]+ owner 2 stripe_len 65536 type System\\|RAID1$'
	assert_line --regexp $'^\t\tlength [0-9]+ owner 2 stripe_len 65536 type Metadata\\|RAID1$'
	assert_line --regexp $'^\t\tlength [0-9]+ owner 2 stripe_len 65536 type Data\\|RAID0$'
	assert_line $'\t\tnum_stripes 3 sub_stripes 1'
	assert_line --regexp $'^\t\t\tstripe 0 devid [123] offset [0-9]+$'
	# the chunk root from the superblock is the leaf shown
	cr=$(super_field "$T/img1" chunk_root)
	assert_line --index 2 --regexp "^leaf $cr "
	# other spellings of the tree name
	for t in CHUNK chunk_tree 3; do
		run mfs inspect-internal dump-tree -t "$t" "$T/img1"
		assert_success
		assert_line "chunk tree"
		refute_line "extent tree"
	done
}

@test "dump-tree -t extent: block group items and tree block extents" {
	make_images 2
	mkfs.mfs -q $(imgs 2)
	run --separate-stderr mfs inspect-internal dump-tree -t extent "$T/img1"
	assert_success
	assert_line "extent tree"
	[ "$(count_lines 'BLOCK_GROUP_ITEM')" -eq 3 ]
	assert_line --regexp $'^\t\tblock group used [0-9]+ chunk_objectid 256 flags System\\|RAID1$'
	assert_line --regexp $'^\t\tblock group used [0-9]+ chunk_objectid 256 flags Metadata\\|RAID1$'
	assert_line --regexp $'^\t\tblock group used 0 chunk_objectid 256 flags Data\\|single$'
	# one tree block extent per tree (root, extent, chunk, dev, fs, csum)
	[ "$(count_lines $'^\t\trefs 1 gen [0-9]+ flags TREE_BLOCK$')" -eq 6 ]
	cr=$(super_field "$T/img1" chunk_root)
	assert_line --regexp $'^\titem [0-9]+ key \\('"$cr"' EXTENT_ITEM 16384\) '
}

@test "dump-tree -t fs and -t csum: inodes, entries, xattrs, file extents, checksums" {
	make_images 1 512M
	mkfs.mfs -q "$T/img1"
	mfs_mount "$T/img1" "$T/mnt"
	head -c 8192 /dev/urandom >"$T/mnt/file"
	ln -s file "$T/mnt/link"
	"$MFS_PY" -c 'import os, sys; os.setxattr(sys.argv[1], b"user.color", b"blue")' "$T/mnt/file"
	ino=$(stat -c %i "$T/mnt/file")
	lnk=$(stat -c %i "$T/mnt/link")
	mfs umount "$T/mnt"

	run --separate-stderr mfs inspect-internal dump-tree -t fs "$T/img1"
	assert_success
	assert_line "fs tree"
	assert_line --regexp $'^\titem [0-9]+ key \\(256 INODE_ITEM 0\\) itemoff [0-9]+ itemsize 160$'
	assert_line --regexp $'^\t\tgeneration [0-9]+ transid [0-9]+ size 8 nbytes 0$'
	assert_line $'\t\tmode 40755 links 2 uid 0 gid 0 rdev 0'
	assert_line --regexp $'^\t\tmtime [0-9]+\\.[0-9]+ \\([0-9-]+ [0-9:]+\\)$'
	assert_line $'\t\tlocation key ('"$ino"' INODE_ITEM 0) type FILE'
	assert_line $'\t\tlocation key ('"$lnk"' INODE_ITEM 0) type SYMLINK'
	assert_line --regexp $'^\t\tindex 2 transid [0-9]+ name_len 4$'
	[ "$(count_lines $'^\t\tname: file$')" -eq 2 ]
	assert_line --regexp $'^\titem [0-9]+ key \\(256 DIR_INDEX 3\\) '
	assert_line $'\t\tdata_len 4 name_len 10'
	assert_line $'\t\tname: user.color'
	assert_line $'\t\tdata blue'
	assert_line --regexp $'^\t\tgeneration [0-9]+ type 1 \\(regular\\)$'
	assert_line --regexp $'^\t\textent data disk byte [0-9]+ nr 8192$'
	assert_line $'\t\textent data offset 0 nr 8192 ram 8192'
	assert_line $'\t\textent compression 0 (none)'
	assert_line --regexp $'^\t\tgeneration [0-9]+ type 0 \\(inline\\)$'
	assert_line $'\t\tinline extent data size 4 compression 0 (none)'
	bytenr=$(awk '$1 == "extent" && $3 == "disk" { print $5 }' <<<"$output")

	run --separate-stderr mfs inspect-internal dump-tree -t csum "$T/img1"
	assert_success
	assert_line --regexp $'^\titem 0 key \\(EXTENT_CSUM EXTENT_CSUM '"$bytenr"$'\\) itemoff [0-9]+ itemsize 8$'
	assert_line $'\t\trange start '"$bytenr"' end '"$((bytenr + 8192))"' length 8192'
	assert_line --regexp $'^\t\t\\['"$((bytenr + 4096))"$'\\] 0x[0-9a-f]{8}$'
}

@test "dump-tree: every tree without -t; -b dumps one block" {
	make_images 1
	mkfs.mfs -q "$T/img1"
	run --separate-stderr mfs inspect-internal dump-tree "$T/img1"
	assert_success
	for t in root chunk extent dev fs csum; do
		assert_line "$t tree"
	done
	cr=$(super_field "$T/img1" chunk_root)
	root=$(super_field "$T/img1" root)
	run --separate-stderr mfs inspect-internal dump-tree -b "$cr" "$T/img1"
	assert_success
	assert_line --index 1 --regexp "^leaf $cr items [0-9]+ free space [0-9]+ generation [0-9]+ owner CHUNK_TREE\$"
	assert_line --partial "DEV_ITEM 1)"
	refute_line "chunk tree"
	run --separate-stderr mfs inspect-internal dump-tree -b "$root" -b "$cr" "$T/img1"
	assert_success
	assert_line --index 1 --regexp "^leaf $root .* owner ROOT_TREE\$"
	assert_line --regexp "^leaf $cr .* owner CHUNK_TREE\$"
	# a bytenr that is not a tree block
	run --separate-stderr mfs inspect-internal dump-tree -b $((cr + 4096)) "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: cannot read tree block $((cr + 4096)): corrupt or not a tree block"
	run --separate-stderr mfs inspect-internal dump-tree -b 12abc "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: invalid block number: 12abc"
}

@test "dump-tree: a bad -t value, a non-mfs file, no argument" {
	make_images 1
	mkfs.mfs -q "$T/img1"
	for t in bogus 99 chunkk; do
		run --separate-stderr mfs inspect-internal dump-tree -t "$t" "$T/img1"
		assert_failure 1
		assert_stderr_line "ERROR: unrecognized tree value: $t"
		assert_stdout_empty
	done
	truncate -s 1G "$T/plain"
	run --separate-stderr mfs inspect-internal dump-tree "$T/plain"
	assert_failure 1
	assert_stderr_line "ERROR: not a valid mfs filesystem: $T/plain"
	run --separate-stderr mfs inspect-internal dump-tree
	assert_failure 1
	assert_stderr_line "mfs inspect-internal dump-tree: not enough arguments: 0 but at least 1 expected"
}

@test "dump-tree: a tree whose root has no good copy is an error, not an empty dump" {
	make_images 2
	mkfs.mfs -q -m raid1 $(imgs 2)
	b=$(tree_root_bytenr "$T/img1" extent)
	corrupt_every_copy "$T/img1" "$b"
	run --separate-stderr mfs inspect-internal dump-tree -t extent "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: extent tree root cannot be read"
	refute_line "extent tree"
	# the other trees still dump
	run --separate-stderr mfs inspect-internal dump-tree -t chunk "$T/img1"
	assert_success
}
