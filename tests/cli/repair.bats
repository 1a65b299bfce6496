#!/usr/bin/env bats
# mfs check --repair and fsck.mfs -y/-p/-a/-n: what has a trustworthy
# source is repaired (superblock copies, tree block copies, block group
# used bytes), a second check is clean, the files are intact; what has
# none is left alone and nothing is written.

load helpers

CORRUPT="$MFS_BUILD/tests/fsck/mfs-corrupt"

eval "helpers_$(declare -f teardown)"

teardown() {
	mfs_cleanup_mounts
	helpers_teardown
}

# A raid1 filesystem on 2 images with files; their sums in $T/sums.
make_fs() {
	make_images 2 512M
	mkfs.mfs -q -d raid1 -m raid1 $(imgs 2)
	mfs_mount $(imgs 2) "$T/mnt"
	mkdir -p "$T/mnt/d"
	for i in $(seq 1 40); do
		head -c $((i * 3001)) /dev/urandom >"$T/mnt/d/f$i"
	done
	tree_sums "$T/mnt" >"$T/sums"
	mfs umount "$T/mnt"
}

# dir_index_of: a reader of dump-tree output
. "$BATS_TEST_DIRNAME/../fsck/dump.bash"

# cut_entry DIR NAME: both halves of DIR's entry NAME deleted.
cut_entry() {
	"$CORRUPT" -d "$T/img2" "$T/img1" del fs "$1" DIR_INDEX "$(dir_index_of "$T/img1" "$1" "$2")"
	"$CORRUPT" -d "$T/img2" "$T/img1" del fs "$1" DIR_ITEM "hash:$2"
}

files_intact() {
	mfs_mount $(imgs 2) "$T/mnt"
	diff -u "$T/sums" <(tree_sums "$T/mnt")
	mfs umount "$T/mnt"
}

@test "check --repair: bad superblock copies; asks first, 'no' writes nothing" {
	make_fs
	zero "$T/img2" 65536 4096
	corrupt "$T/img1" $((67108864 + 300))
	md5sum $(imgs 2) >"$T/before"
	run --separate-stderr mfs check --repair $(imgs 2) <<<"n"
	assert_failure 1
	assert_output "Aborted; nothing was written"
	assert_stderr_regex '^Do you want to continue\? \[y/N\]: ?$'
	md5sum -c --quiet "$T/before"

	run --separate-stderr mfs check --repair $(imgs 2) <<<"y"
	assert_success
	assert_line "[repair] superblocks: every copy rewritten from generation $(super_field "$T/img1" generation)"
	assert_line "Repaired 1 problem(s); checking again"
	assert_line "found $(super_field "$T/img1" bytes_used) bytes used, no error found"
	assert_stderr_line "ERROR: superblock copy 0 at 65536 on device 2 ($T/img2) is missing"
	run --separate-stderr mfs check $(imgs 2)
	assert_success
	refute grep -q '^ERROR' <<<"$stderr"
	files_intact
}

@test "fsck.mfs -y: bad tree block copies rewritten from the good ones, exit 1 (corrected)" {
	make_fs
	run corrupt_copies --what metadata "$T/img1" 2
	assert_success
	run --separate-stderr mfs check $(imgs 2)
	assert_failure 1
	nbad=$(grep -c '^ERROR: .* tree block [0-9]* level [0-9]*: copy 2 ' <<<"$stderr")
	[ "$nbad" -gt 2 ]
	run --separate-stderr fsck.mfs -y "$T/img1"
	[ "$status" -eq 1 ]
	[ "$(grep -c '^\[repair\] tree block [0-9]*: copy 2 rewritten from a good copy$' <<<"$output")" -eq "$nbad" ]
	run --separate-stderr mfs check $(imgs 2)
	assert_success
	run --separate-stderr fsck.mfs -n "$T/img1"
	[ "$status" -eq 0 ]
	files_intact
}

@test "check --repair --force: a block group's used bytes from its extent items" {
	make_fs
	local bg len used
	read -r bg len used < <(mfs inspect-internal dump-tree -t extent "$T/img1" | awk '
		/BLOCK_GROUP_ITEM/ { s = $0; sub(/.*key \(/, "", s); split(s, k, /[ )]/) }
		/block group used/ && /Data/ { print k[1], k[3], $4; exit }')
	[ -n "$bg" ] && [ "$used" -gt 0 ]
	"$CORRUPT" -d "$T/img2" "$T/img1" set extent "$bg" BLOCK_GROUP_ITEM "$len" u64@0 $((used + 8192))
	run --separate-stderr mfs check $(imgs 2)
	assert_failure 1
	assert_stderr_line "ERROR: block group $bg (Data): used $((used + 8192)) but its extents add up to $used"
	run --separate-stderr mfs check --repair --force $(imgs 2)
	assert_success
	assert_line "[repair] block group $bg: used set to $used from its extent items"
	run mfs check $(imgs 2)
	assert_success
	files_intact
}

@test "check --repair: link count, directory size and nbytes of inodes from the fs tree" {
	make_fs
	local f d
	mfs_mount $(imgs 2) "$T/mnt"
	f=$(stat -c %i "$T/mnt/d/f7")
	d=$(stat -c %i "$T/mnt/d")
	mfs umount "$T/mnt"
	"$CORRUPT" -d "$T/img2" "$T/img1" set fs "$f" INODE_ITEM 0 nlink 3
	"$CORRUPT" -d "$T/img2" "$T/img1" set fs "$f" INODE_ITEM 0 nbytes 1
	"$CORRUPT" -d "$T/img2" "$T/img1" set fs "$d" INODE_ITEM 0 size 7
	run --separate-stderr mfs check $(imgs 2)
	assert_failure 1
	assert_stderr_line "ERROR: inode $f (regular file) has link count 3, expected 1"
	run --separate-stderr mfs check --repair --force $(imgs 2)
	assert_success
	assert_line "[repair] inode $f: link count set to 1"
	assert_line --regexp "^\[repair\] inode $f: nbytes set to [0-9]+ from its file extents$"
	assert_line --regexp "^\[repair\] directory $d: size set to [0-9]+ from its entries$"
	assert_line "Repaired 3 problem(s); checking again"
	run mfs check $(imgs 2)
	assert_success
	files_intact
	mfs_mount $(imgs 2) "$T/mnt"
	[ "$(stat -c %h "$T/mnt/d/f7")" -eq 1 ]
}

@test "check --repair: a file and a directory no entry names go to lost+found, named by inode" {
	make_fs
	local f d x sum_f sum_z
	mfs_mount $(imgs 2) "$T/mnt"
	mkdir -p "$T/mnt/x/y"
	head -c 70000 /dev/urandom >"$T/mnt/x/y/z"
	f=$(stat -c %i "$T/mnt/d/f7")
	d=$(stat -c %i "$T/mnt/d")
	x=$(stat -c %i "$T/mnt/x")
	sum_f=$(sha256sum <"$T/mnt/d/f7")
	sum_z=$(sha256sum <"$T/mnt/x/y/z")
	mfs umount "$T/mnt"
	cut_entry "$d" f7
	cut_entry 256 x
	run --separate-stderr mfs check $(imgs 2)
	assert_failure 1
	assert_stderr_line "ERROR: inode $f is not referenced and not an orphan"
	assert_stderr_line "ERROR: inode $x is not referenced and not an orphan"
	run --separate-stderr mfs check --repair --force $(imgs 2)
	assert_success
	assert_line "[repair] Moving file '$f' to 'lost+found' dir since it has no valid backref (inode $f, link count 1)"
	assert_line "[repair] Moving file '$x' to 'lost+found' dir since it has no valid backref (inode $x, link count 3)"
	run mfs check $(imgs 2)
	assert_success
	mfs_mount $(imgs 2) "$T/mnt"
	[ "$(sha256sum <"$T/mnt/lost+found/$f")" = "$sum_f" ]
	[ "$(sha256sum <"$T/mnt/lost+found/$x/y/z")" = "$sum_z" ]
	[ "$(stat -c '%a %h' "$T/mnt/lost+found")" = "700 3" ]
	[ "$(stat -c %h "$T/mnt/lost+found/$f")" -eq 1 ]
	[ ! -e "$T/mnt/d/f7" ]
	mfs umount "$T/mnt"
	# a second file found later goes into the lost+found that is there
	cut_entry "$d" f8
	run mfs check --repair --force $(imgs 2)
	assert_success
	run mfs check $(imgs 2)
	assert_success
	mfs_mount $(imgs 2) "$T/mnt"
	[ -f "$T/mnt/lost+found/$f" ] && [ -d "$T/mnt/lost+found/$x" ]
	[ "$(ls "$T/mnt/lost+found" | wc -l)" -eq 3 ]
}

@test "check --repair: lost+found taken by a file: nothing is written" {
	make_fs
	local d
	mfs_mount $(imgs 2) "$T/mnt"
	echo "not a directory" >"$T/mnt/lost+found"
	d=$(stat -c %i "$T/mnt/d")
	mfs umount "$T/mnt"
	cut_entry "$d" f3
	md5sum $(imgs 2) >"$T/before"
	run --separate-stderr mfs check --repair --force $(imgs 2)
	assert_failure 1
	assert_line "[repair] block group and inode items: not repaired: Not a directory"
	assert_stderr_line "ERROR: repair stopped: Not a directory"
	md5sum -c --quiet "$T/before"
}

@test "check --init-csum-tree: checksums made again from the data; asks first; a mount, check and scrub agree" {
	make_fs
	mfs_mount -o compress=zlib $(imgs 2) "$T/mnt"
	yes "compressible line" | head -c 300000 >"$T/mnt/z"
	tree_sums "$T/mnt" >"$T/sums"
	mfs umount "$T/mnt"
	local first second
	first=$(mfs inspect-internal dump-tree -t csum "$T/img1" |
		sed -n 's/.*key (EXTENT_CSUM EXTENT_CSUM \([0-9]*\)).*/\1/p' | head -1)
	second=$(mfs inspect-internal dump-tree -t csum "$T/img1" |
		 sed -n 's/.*key (EXTENT_CSUM EXTENT_CSUM \([0-9]*\)).*/\1/p' | sed -n 2p)
	"$CORRUPT" -d "$T/img2" "$T/img1" del csum EXTENT_CSUM EXTENT_CSUM "$first"
	"$CORRUPT" -d "$T/img2" "$T/img1" set csum EXTENT_CSUM EXTENT_CSUM "$second" u32@0 7
	run --separate-stderr mfs check --check-data-csum $(imgs 2)
	assert_failure 1
	assert_stderr_regex "^ERROR: data extent $first length [0-9]+ \(inode [0-9]+ file extent at 0\) has no csum item$"
	assert_stderr_regex "^ERROR: data extent $second sector 0 \(logical $second\): copy 2 \(on devid [0-9]+\): checksum mismatch$"

	md5sum $(imgs 2) >"$T/before"
	run --separate-stderr mfs check --init-csum-tree $(imgs 2) <<<"n"
	assert_failure 1
	assert_output "Aborted; nothing was written"
	md5sum -c --quiet "$T/before"
	run --separate-stderr mfs check --init-csum-tree --readonly $(imgs 2)
	assert_failure 1
	assert_stderr_line "ERROR: repair options are not compatible with --readonly"
	mv "$T/img2" "$T/img2.keep"
	rm -f "$MFS_REGISTRY"
	run --separate-stderr mfs check --init-csum-tree --force "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: cannot rebuild the checksum tree: a member is missing; nothing was written"
	mv "$T/img2.keep" "$T/img2"
	md5sum -c --quiet "$T/before"

	run --separate-stderr mfs check --init-csum-tree $(imgs 2) <<<"y"
	assert_success
	assert_line "Reinitialize checksum tree"
	assert_line --regexp '^\[repair\] checksum tree rebuilt: [0-9]+ data extent\(s\), [0-9]+ bytes$'
	assert_line --regexp 'no error found$'
	run mfs check --check-data-csum $(imgs 2)
	assert_success
	run mfs scrub start -B $(imgs 2)
	assert_success
	assert_line --regexp '^Error summary: +no errors found$'
	files_intact
}

@test "check --init-csum-tree: copies that differ are said; the first copy's data is kept, scrub mends the other" {
	make_fs
	run corrupt_copies --what data --copy 2 "$T/img1" 1,2
	assert_success
	run --separate-stderr mfs check --init-csum-tree --force $(imgs 2)
	assert_success
	assert_stderr_regex "^WARNING: data extent [0-9]+ length [0-9]+ \(inode [0-9]+ file extent at 0\): copy 2 differs from copy 1, whose data the checksums are made from$"
	# the checksums are copy 1's: copy 2 no longer matches them, and scrub mends it
	run mfs check --check-data-csum $(imgs 2)
	assert_failure 1
	run mfs scrub start -B $(imgs 2)
	assert_success
	run mfs check --check-data-csum $(imgs 2)
	assert_success
	files_intact
}

@test "check --repair: damage with no good source is left alone, nothing written, exit 4 from fsck" {
	make_fs
	cp --sparse=always "$T/img1" "$T/img1.orig"
	cp --sparse=always "$T/img2" "$T/img2.orig"
	# every copy of the data: the errors have no source to repair from
	run corrupt_copies --what data "$T/img1" 1,2
	assert_success
	md5sum $(imgs 2) >"$T/before"
	run --separate-stderr mfs check --repair --force --check-data-csum $(imgs 2)
	assert_failure 1
	assert_line "no error found can be repaired safely; nothing was written"
	md5sum -c --quiet "$T/before"
	# every copy of the fs tree's blocks: the open itself cannot load it whole
	cp --sparse=always "$T/img1.orig" "$T/img1"
	cp --sparse=always "$T/img2.orig" "$T/img2"
	run corrupt_copies --what metadata --owner 5 "$T/img1" 1,2
	assert_success
	md5sum $(imgs 2) >"$T/before"
	run --separate-stderr fsck.mfs -y "$T/img1"
	[ "$status" -eq 4 ]
	assert_stderr_line "ERROR: cannot repair: the filesystem could not be opened whole (see above); nothing was written"
	md5sum -c --quiet "$T/before"
}

@test "check --repair: refused with --readonly, on a mounted filesystem; nothing to do with the damage on a missing member" {
	make_fs
	zero "$T/img2" 65536 4096
	run --separate-stderr mfs check --repair --readonly --force $(imgs 2)
	assert_failure 1
	assert_stderr_line "ERROR: repair options are not compatible with --readonly"
	cp --sparse=always "$T/img2" "$T/img2.keep"
	rm "$T/img2"
	rm -f "$MFS_REGISTRY"
	md5sum "$T/img1" >"$T/before"
	run --separate-stderr mfs check --repair --force "$T/img1"
	assert_failure 1
	# the bad copy is on the missing member: repaired from the copies present, nothing is left to do
	assert_stderr_line "WARNING: device 2 is missing: repairing from the copies on the devices present; it is caught up when it comes back"
	assert_line "no error found can be repaired safely; nothing was written"
	md5sum -c --quiet "$T/before"
	mv "$T/img2.keep" "$T/img2"
	mfs_mount $(imgs 2) "$T/mnt"
	run --separate-stderr mfs check --repair --force $(imgs 2)
	assert_failure 1
	assert_stderr_line "ERROR: $T/img1 is mounted or in use by another program"
}
