#!/usr/bin/env bats
# mkfs.mfs --rootdir: the new filesystem holds exactly the source tree
# (contents, holes, types, modes, owners, times, links, xattrs), and a bad
# or too large source is refused with a clear error.

load helpers

# manifest DIR: one line per entry of DIR (itself included) with everything
# --rootdir promises to keep. Each entry is stat'ed before its directory is
# read and every stat comes before any file is read, so the walk's own
# reads cannot move the access times it reports.
manifest() {
	python3 - "$1" <<'EOF'
import hashlib, os, stat, sys

root = sys.argv[1]
entries = []

def walk(rel):
    path = os.path.join(root, rel)
    st = os.lstat(path)
    entries.append((rel or ".", path, st))
    if stat.S_ISDIR(st.st_mode):
        for name in sorted(os.listdir(path)):
            walk(os.path.join(rel, name))

def data_map(path, size):
    fd = os.open(path, os.O_RDONLY)
    segs, pos = [], 0
    try:
        while pos < size:
            try:
                data = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:
                break
            hole = os.lseek(fd, data, os.SEEK_HOLE)
            segs.append("%d-%d" % (data, hole))
            pos = hole
    finally:
        os.close(fd)
    return ",".join(segs) or "none"

walk("")
for rel, path, st in entries:
    m = st.st_mode
    out = [rel, "mode=%o" % m, "uid=%d" % st.st_uid, "gid=%d" % st.st_gid,
           "nlink=%d" % st.st_nlink, "atime=%d" % st.st_atime_ns,
           "mtime=%d" % st.st_mtime_ns, "ctime=%d" % st.st_ctime_ns]
    if stat.S_ISREG(m):
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        out += ["size=%d" % st.st_size, "sha256=%s" % digest,
                "data=%s" % data_map(path, st.st_size)]
        # ext4 counts an out-of-inode xattr block in st_blocks
        if not os.listxattr(path):
            out.append("blocks=%d" % st.st_blocks)
    elif stat.S_ISLNK(m):
        out.append("target=%s" % os.readlink(path))
    elif stat.S_ISCHR(m) or stat.S_ISBLK(m):
        out.append("rdev=%d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev)))
    for name in sorted(os.listxattr(path, follow_symlinks=False)):
        value = os.getxattr(path, name, follow_symlinks=False)
        out.append("xattr:%s=%s" % (name, value.hex()))
    print(" ".join(out))
EOF
}

# make_tree DIR: every kind of entry, with owners, modes, xattrs and
# nanosecond times set on each.
make_tree() {
	local s=$1

	mkdir -p "$s/dir/sub/deeper/deepest" "$s/empty" "$s/many" "$s/private"
	: >"$s/empty-file"
	printf x >"$s/one-byte"
	head -c 4096 /dev/urandom >"$s/one-sector"
	head -c $((5 * MiB + 123)) /dev/urandom >"$s/dir/big"
	echo "spaces" >"$s/dir/name with spaces"
	echo "unicode" >"$s/dir/ünïcødé-名前"
	echo "long" >"$s/dir/$(printf 'n%.0s' {1..255})"
	for i in $(seq 1 400); do
		echo "file $i $RANDOM" >"$s/many/f$i"
	done
	# sparse: data, hole, data, trailing hole; and a leading hole
	truncate -s 64M "$s/sparse"
	dd if=/dev/urandom of="$s/sparse" bs=4K count=1 conv=notrunc status=none
	dd if=/dev/urandom of="$s/sparse" bs=4K seek=2560 count=2 conv=notrunc status=none
	truncate -s 8M "$s/dir/hole-first"
	dd if=/dev/urandom of="$s/dir/hole-first" bs=4K seek=2047 count=1 conv=notrunc \
		status=none
	truncate -s 1G "$s/all-hole"
	# hard links: one inode, three names in three directories
	echo "linked" >"$s/hl1"
	ln "$s/hl1" "$s/dir/hl2"
	ln "$s/hl1" "$s/dir/sub/hl3"
	# symlinks: relative, absolute, dangling, long
	ln -s one-byte "$s/sym-rel"
	ln -s /etc/hostname "$s/dir/sym-abs"
	ln -s does/not/exist "$s/sym-dangling"
	ln -s "$(printf 'x/%.0s' {1..500})end" "$s/sym-long"
	# special files
	mkfifo "$s/fifo"
	mknod "$s/chardev" c 1 3
	mknod "$s/blockdev" b 7 200
	python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$s/socket"
	# owners and modes
	chown 1234:5678 "$s/one-byte" "$s/dir/sub"
	chown -h 4321:8765 "$s/sym-rel"
	chown 99:99 "$s/fifo"
	chmod 4755 "$s/one-sector"
	chmod 2750 "$s/dir/big"
	chmod 1777 "$s/empty"
	chmod 0700 "$s/private"
	chmod 0600 "$s/hl1"
	chmod 0751 "$s"
	# xattrs in every namespace mfs stores, on files, dirs and a symlink
	python3 - "$s" <<'EOF'
import os, sys
s = sys.argv[1]
os.setxattr(s + "/one-byte", "user.color", b"blue")
os.setxattr(s + "/one-byte", "user.empty", b"")
os.setxattr(s + "/one-byte", "trusted.secret", bytes(range(256)))
os.setxattr(s + "/hl1", "security.label", b"linked\0")
os.setxattr(s + "/dir", "user.dir", b"a directory")
os.setxattr(s + "/sym-rel", "trusted.on-symlink", b"1", follow_symlinks=False)
os.setxattr(s, "user.root", b"the top")
os.setxattr(s + "/many/f7", "user.big", os.urandom(3000))
EOF
	# distinct atime and mtime with nanoseconds everywhere, children first
	python3 - "$s" <<'EOF'
import os, random, sys
random.seed(7)
def stamp(path):
    a = random.randrange(10**9, 17 * 10**8) * 10**9 + random.randrange(10**9)
    if os.path.islink(path):
        # readlink (mkfs's and ours) would move a past atime under relatime
        a = random.randrange(19 * 10**8, 20 * 10**8) * 10**9 + random.randrange(10**9)
    m = random.randrange(10**9, 17 * 10**8) * 10**9 + random.randrange(10**9)
    os.utime(path, ns=(a, m), follow_symlinks=False)

for top, dirs, files in os.walk(sys.argv[1], topdown=False):
    for name in files + [d for d in dirs if os.path.islink(os.path.join(top, d))]:
        stamp(os.path.join(top, name))
    stamp(top)
EOF
}

@test "rootdir: raid1 copy of every kind of entry matches the source" {
	make_tree "$T/src"
	make_images 2
	run --separate-stderr mkfs.mfs -d raid1 --rootdir "$T/src" $(imgs 2)
	assert_success
	assert_stderr_empty
	refute_line --partial "Rootdir"
	assert_line "Number of devices:  2"

	mkdir "$T/mnt"
	mfs mount -o noatime "$T/img1" "$T/mnt"
	echo "$T/mnt" >>"$T/.mounts"
	manifest "$T/src" >"$T/want"
	manifest "$T/mnt" >"$T/got"
	diff -u "$T/want" "$T/got"
	# spot checks of what the manifest holds
	grep -q '^hl1 .* nlink=3 ' "$T/got"
	grep -q '^dir/sub/hl3 .* nlink=3 ' "$T/got"
	grep -q '^dir .* nlink=3 ' "$T/got"
	grep -q '^empty-file .* size=0 .* data=none blocks=0$' "$T/got"
	grep -q '^sparse .* data=0-4096,10485760-10493952 blocks=24$' "$T/got"
	grep -q '^all-hole .* size=1073741824 .* data=none blocks=0$' "$T/got"
	grep -q '^blockdev mode=60644 .* rdev=7:200' "$T/got"
	[ "$(du -B1 "$T/mnt/sparse" | cut -f1)" = $((3 * 4096)) ]
	[ "$(du -sB1 "$T/mnt/dir/hole-first" | cut -f1)" = 4096 ]
	# a directory's size is the sum of its entries' name lengths
	[ "$(stat -c %s "$T/mnt/dir/sub")" = $((6 + 3)) ]
	[ "$(stat -c %s "$T/mnt/private")" = 0 ]
	mfs umount "$T/mnt"

	run mfs check "$T/img1"
	assert_success
	assert_line --partial "no error found"
	# raid1: the second device alone holds everything too
	rm -f "$MFS_REGISTRY"
	mfs mount -o ro,degraded "$T/img2" "$T/mnt"
	manifest "$T/mnt" >"$T/got2"
	mfs umount "$T/mnt"
	diff -u "$T/want" "$T/got2"
}

@test "rootdir: -r, -v summary line, a trailing slash and an empty directory" {
	mkdir "$T/empty"
	make_images 1
	run --separate-stderr mkfs.mfs -v -r "$T/empty/" "$T/img1"
	assert_success
	assert_line "Rootdir from $T/empty/: 0 directories, 0 files, 0 symlinks, 0 special files, 0 hard links, 0 xattrs, 0 bytes of data"
	mkdir "$T/mnt"
	mfs mount "$T/img1" "$T/mnt"
	echo "$T/mnt" >>"$T/.mounts"
	[ -z "$(ls -A "$T/mnt")" ]
	[ "$(stat -c '%a %u %g %Y' "$T/mnt")" = "$(stat -c '%a %u %g %Y' "$T/empty")" ]
	mfs umount "$T/mnt"
	run mfs check "$T/img1"
	assert_success
}

@test "rootdir: a missing or non-directory source is refused before anything is written" {
	make_images 1
	mkfs.mfs -q "$T/img1"
	rm -f "$MFS_REGISTRY"
	seed_image "$T/img1"
	fp=$(fingerprint "$T/img1")
	run --separate-stderr mkfs.mfs -f --rootdir "$T/nonexistent" "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: cannot access rootdir '$T/nonexistent': No such file or directory"
	assert_stdout_empty
	assert_untouched "$T/img1" "$fp"
	assert_no_registry
	echo data >"$T/file"
	run --separate-stderr mkfs.mfs -f -r "$T/file" "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: rootdir '$T/file' is not a directory"
	assert_untouched "$T/img1" "$fp"
	assert_no_registry
}

@test "rootdir: content larger than the filesystem fails clearly and leaves nothing mountable" {
	mkdir "$T/src"
	for i in 1 2 3; do
		head -c $((100 * MiB)) /dev/urandom >"$T/src/f$i"
	done
	make_images 1 256M
	run --separate-stderr mkfs.mfs -q -r "$T/src" "$T/img1"
	assert_failure 1
	assert_stderr_regex "^ERROR: cannot copy '$T/src/f[0-9]' into the new filesystem: No space left on device$"
	assert_stderr_regex "^ERROR: not enough space on the devices for the contents of '$T/src' \([0-9]+ bytes of file data copied\)$"
	assert_stderr_line "ERROR: the filesystem on the devices is incomplete and will not mount; run mkfs.mfs again"
	mkdir "$T/mnt"
	run --separate-stderr mfs mount "$T/img1" "$T/mnt"
	assert_failure
	assert_stderr_line "ERROR: the filesystem on $T/img1 was never finished: mkfs.mfs failed or was interrupted while filling it; run mkfs.mfs again"
	run --separate-stderr mfs check "$T/img1"
	assert_failure
}

@test "rootdir: the new filesystem's own image inside the source is not copied" {
	mkdir "$T/src"
	echo hello >"$T/src/file"
	truncate -s 1G "$T/src/image"
	run --separate-stderr mkfs.mfs -q -r "$T/src" "$T/src/image"
	assert_success
	assert_stderr_line "WARNING: '$T/src/image' is a device of the new filesystem, not copied"
	mkdir "$T/mnt"
	mfs mount "$T/src/image" "$T/mnt"
	echo "$T/mnt" >>"$T/.mounts"
	[ "$(ls "$T/mnt")" = file ]
	[ "$(cat "$T/mnt/file")" = hello ]
	mfs umount "$T/mnt"
}
