#!/usr/bin/env bats
# mfs restore: files out of an unmounted filesystem, members missing or
# copies damaged, never writing to the devices.

load helpers

eval "helpers_$(declare -f teardown)"

teardown() {
	mfs_cleanup_mounts
	helpers_teardown
}

# md5 of every image, one line each
image_sums() {
	md5sum "$@"
}

# A raid1 filesystem on N images with a tree of files, a sparse file, a
# symlink, xattrs, an odd mode and owner; $T/sums holds their sha256.
make_tree() {
	local n=$1

	make_images "$n" 512M
	mkfs.mfs -q -d raid1 -m raid1 $(imgs "$n")
	mfs_mount $(imgs "$n") "$T/mnt"
	mkdir -p "$T/mnt/a/b" "$T/mnt/empty"
	head -c 3000000 /dev/urandom >"$T/mnt/a/b/big"
	echo hello >"$T/mnt/top"
	ln -s top "$T/mnt/lnk"
	truncate -s 10M "$T/mnt/sparse"
	echo x | dd of="$T/mnt/sparse" bs=1 seek=5000000 conv=notrunc status=none
	"$MFS_PY" -c 'import os, sys; os.setxattr(sys.argv[1], "user.tag", b"v1")' "$T/mnt/top"
	chmod 640 "$T/mnt/top"
	chown 1234:5678 "$T/mnt/top"
	touch -d "2001-02-03 04:05:06" "$T/mnt/top" "$T/mnt/a"
	tree_sums "$T/mnt" >"$T/sums"
	mfs umount "$T/mnt"
}

@test "restore: every file back with -x -m -S, holes kept, a member missing, the devices untouched" {
	make_tree 3
	rm "$T/img3"
	image_sums "$T/img1" "$T/img2" >"$T/before"
	mkdir "$T/out"
	run --separate-stderr mfs restore -v -x -m -S "$T/img1" "$T/img2" "$T/out"
	assert_success
	assert_line "Restoring $T/out/a/b/big"
	assert_line "Restoring $T/out/lnk"
	diff -u "$T/sums" <(tree_sums "$T/out")
	[ "$(readlink "$T/out/lnk")" = top ]
	[ -d "$T/out/empty" ]
	run "$MFS_PY" -c 'import os, sys; print(os.getxattr(sys.argv[1], "user.tag").decode())' "$T/out/top"
	assert_output v1
	[ "$(stat -c '%a %u %g %y' "$T/out/top")" = "640 1234 5678 2001-02-03 04:05:06.000000000 +0000" ]
	[ "$(stat -c '%y' "$T/out/a")" = "2001-02-03 04:05:06.000000000 +0000" ]
	# the sparse file keeps its hole
	[ "$(stat -c %s "$T/out/sparse")" -eq $((10 * MiB)) ]
	[ "$(du -k "$T/out/sparse" | cut -f1)" -lt 1024 ]
	md5sum -c --quiet "$T/before"
}

@test "restore: without -S no symlinks, without -m no owner; existing files skipped unless -o" {
	make_tree 2
	mkdir "$T/out"
	echo mine >"$T/out/top"
	run --separate-stderr mfs restore $(imgs 2) "$T/out"
	assert_success
	assert_line "Skipping existing file $T/out/top"
	assert_stderr_line "If you wish to overwrite use -o"
	[ "$(cat "$T/out/top")" = mine ]
	[ ! -e "$T/out/lnk" ] && [ ! -L "$T/out/lnk" ]
	[ "$(cd "$T/out" && sha256sum ./a/b/big)" = "$(grep ' ./a/b/big$' "$T/sums")" ]
	run mfs restore -o $(imgs 2) "$T/out"
	assert_success
	[ "$(cat "$T/out/top")" = hello ]
	[ "$(stat -c '%u' "$T/out/top")" = 0 ]
}

@test "restore: --path-regex picks paths as btrfs restore does, -c ignores case; -D writes nothing" {
	make_tree 2
	mkdir "$T/out" "$T/dry"
	run --separate-stderr mfs restore --path-regex '^/(|A(|/B(|/.*)))$' -c $(imgs 2) "$T/out"
	assert_success
	[ -f "$T/out/a/b/big" ]
	[ ! -e "$T/out/top" ] && [ ! -e "$T/out/sparse" ] && [ ! -e "$T/out/empty" ]
	run --separate-stderr mfs restore -D -v $(imgs 2) "$T/dry"
	assert_success
	assert_line "This is a dry-run, no files are going to be restored"
	assert_line "Restoring $T/dry/a/b/big"
	[ -z "$(ls -A "$T/dry")" ]
}

@test "restore: a range no copy gives back is a hole and the file is named; -i goes on" {
	make_images 2 512M
	mkfs.mfs -q -d raid1 -m raid1 $(imgs 2)
	mfs_mount $(imgs 2) "$T/mnt"
	# two extents: the first (the lowest logical address) is the one damaged
	head -c 65536 /dev/urandom >"$T/mnt/hurt"
	mfs filesystem sync "$T/mnt"
	head -c 65536 /dev/urandom >>"$T/mnt/hurt"
	head -c 200000 /dev/urandom >"$T/mnt/whole"
	cp "$T/mnt/hurt" "$T/hurt.orig"
	sha256sum <"$T/mnt/whole" >"$T/whole.sum"
	mfs umount "$T/mnt"
	run corrupt_copies --what data --max 1 "$T/img1" 1,2
	assert_success
	assert_line "devid 1 bytes 65536"
	assert_line "devid 2 bytes 65536"
	image_sums $(imgs 2) >"$T/before"

	mkdir "$T/out" "$T/all"
	run --separate-stderr mfs restore $(imgs 2) "$T/out"
	assert_failure 1
	assert_stderr_line "ERROR: /hurt: 65536 of 131072 bytes could not be read from any copy (first at offset 0); left as holes"
	assert_stderr_line "ERROR: 1 file(s) not recovered whole, 0 item(s) not restored (stopped at the first; -i goes on)"

	run --separate-stderr mfs restore -i $(imgs 2) "$T/all"
	assert_failure 1
	assert_stderr_line "ERROR: /hurt: 65536 of 131072 bytes could not be read from any copy (first at offset 0); left as holes"
	assert_stderr_line "ERROR: 1 file(s) not recovered whole, 0 item(s) not restored"
	sha256sum -c <(sed "s|-\$|$T/all/whole|" "$T/whole.sum")
	# the lost range is zeros, the rest is the file
	cmp <(head -c 65536 /dev/zero) <(head -c 65536 "$T/all/hurt")
	cmp <(tail -c 65536 "$T/hurt.orig") <(tail -c 65536 "$T/all/hurt")
	# read-only: nothing healed or counted on the devices
	md5sum -c --quiet "$T/before"
}

@test "restore: a tree no copy gives back (the fs tree) is an error, not a crash" {
	make_images 2 512M
	mkfs.mfs -q -d raid1 -m raid1 $(imgs 2)
	mfs_mount $(imgs 2) "$T/mnt"
	echo hello >"$T/mnt/f"
	mfs umount "$T/mnt"
	run corrupt_copies --what metadata --owner 5 "$T/img1" 1,2
	assert_success
	mkdir "$T/out"
	# the open leaves the fs tree out; every read of it used to follow a NULL root
	run --separate-stderr mfs restore $(imgs 2) "$T/out"
	assert_failure 1
	assert_stderr_line "ERROR: cannot restore /: reading the directory: Structure needs cleaning"
	[ -z "$(ls -A "$T/out")" ]
}

@test "restore: a directory entry naming a directory it is inside of is a loop, not a recursion" {
	make_images 1 256M
	mkdir -p "$T/root/a"
	echo hi >"$T/root/a/f"
	mkfs.mfs -q -r "$T/root" $(imgs 1)
	# a/f becomes root itself (256), in both halves of the entry
	local a k
	a=$(mfs inspect-internal dump-tree -t fs "$T/img1" |
		awk '/key \(256 DIR_INDEX/ { i = 1; next } i { sub(/.*location key \(/, ""); print $1; exit }')
	for k in "DIR_ITEM hash:f" "DIR_INDEX 2"; do
		"$MFS_BUILD/tests/fsck/mfs-corrupt" "$T/img1" set fs "$a" $k child 256 >/dev/null
		"$MFS_BUILD/tests/fsck/mfs-corrupt" "$T/img1" set fs "$a" $k type 2 >/dev/null
	done
	mkdir "$T/out"
	# -D creates nothing, so nothing but the loop check ends the recursion (it overflowed the stack)
	for o in -D -i; do
		run --separate-stderr mfs restore $o $(imgs 1) "$T/out"
		assert_failure 1
		assert_stderr_line "ERROR: cannot restore /a/f: it names a directory it is inside of (a loop in the fs tree)"
	done
	[ "$(cd "$T/out" && find . | sort | tr '\n' ' ')" = ". ./a " ]
}

@test "restore: an entry whose name is a path (../x) is damage: nothing is written outside the target" {
	make_images 1 256M
	mkdir -p "$T/root"
	echo hi >"$T/root/data"
	mkfs.mfs -q -r "$T/root" $(imgs 1)
	# the listing's half of the entry; the lookup's half keeps "data"
	"$MFS_BUILD/tests/fsck/mfs-corrupt" "$T/img1" set fs 256 DIR_INDEX 2 name ../x >/dev/null
	mkdir -p "$T/out/target"
	# a crafted image's "../evl" made restore write beside its target
	for o in -i -S; do
		run --separate-stderr mfs restore $o $(imgs 1) "$T/out/target"
		assert_failure 1
		assert_stderr_line "ERROR: cannot restore /: reading the directory: Structure needs cleaning"
	done
	[ "$(cd "$T/out" && find . | sort | tr '\n' ' ')" = ". ./target " ]
}

@test "restore: refusals" {
	make_images 2 512M
	mkfs.mfs -q -d raid1 -m raid1 $(imgs 2)
	touch "$T/file"
	run --separate-stderr mfs restore $(imgs 2) "$T/file"
	assert_failure 1
	assert_stderr_line "ERROR: $T/file is not a directory"
	run --separate-stderr mfs restore -c $(imgs 2) "$T"
	assert_failure 1
	assert_stderr_line "ERROR: -c|--ignore-case needs --path-regex"
	run --separate-stderr mfs restore --path-regex '(' $(imgs 2) "$T"
	assert_failure 1
	assert_stderr_regex "^ERROR: invalid regex '\(': "
	run --separate-stderr mfs restore -u 3 $(imgs 2) "$T"
	assert_failure 1
	assert_stderr_line "ERROR: super mirror should be 0, 1 or 2: 3"
	run --separate-stderr mfs restore "$T/img1"
	assert_failure 1
	# a mounted filesystem is refused
	mfs_mount $(imgs 2) "$T/mnt"
	mkdir "$T/out"
	run --separate-stderr mfs restore $(imgs 2) "$T/out"
	assert_failure 1
	assert_stderr_line "ERROR: $T/img1 is mounted or in use by another program"
	[ -z "$(ls -A "$T/out")" ]
}
