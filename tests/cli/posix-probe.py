#!/usr/bin/python3
# POSIX behaviour probe for tests/cli/mount.bats: runs a fixed sequence of
# file system operations in the directory given and prints one line per
# observation ("name: result"). The output on mfs must equal the output on
# kernel btrfs, so print only what both should agree on (no inode numbers,
# no times, no directory link counts, which btrfs keeps at 1).
import ctypes
import errno
import os
import socket
import stat
import sys

D = sys.argv[1]
os.chdir(D)
libc = ctypes.CDLL(None, use_errno=True)
RENAME_NOREPLACE, RENAME_EXCHANGE = 1, 2
AT_FDCWD = -100


def out(name, value):
    print(f"{name}: {value}")


def err(fn, *a, **kw):
    try:
        r = fn(*a, **kw)
        return "ok" if r is None else f"ok {r}"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def renameat2(a, b, flags):
    r = libc.renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), flags)
    if r:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def kind(p):
    m = os.lstat(p).st_mode
    for n in ("REG", "DIR", "LNK", "FIFO", "CHR", "BLK", "SOCK"):
        if getattr(stat, "S_IS" + n)(m):
            return n
    return "?"


def readf(p):
    with open(p, "rb") as f:
        return f.read()


def writef(p, data, mode="wb"):
    with open(p, mode) as f:
        f.write(data)


# ---- regular files and directories
writef("f1", b"hello world\n")
out("f1 size", os.stat("f1").st_size)
out("f1 content", readf("f1"))
writef("f1", b"more\n", "ab")
out("f1 append", readf("f1"))
writef("f1", b"x")
out("f1 O_TRUNC", readf("f1"))
out("O_EXCL on existing", err(os.open, "f1", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
out("open missing", err(os.open, "nope", os.O_RDONLY))
out("mkdir", err(os.mkdir, "d1"))
out("mkdir existing", err(os.mkdir, "d1"))
writef("d1/inner", b"1")
out("rmdir non-empty", err(os.rmdir, "d1"))
out("unlink dir", err(os.unlink, "d1"))
out("rmdir file", err(os.rmdir, "f1"))
out("create in file", err(os.open, "f1/x", os.O_CREAT | os.O_WRONLY))
os.makedirs("d2/a/b/c")
out("listdir d2", sorted(os.listdir("d2")))
for i in range(300):
    writef(f"d1/n{i:04d}", b"")
out("listdir 301", len(os.listdir("d1")))
out("name 255", err(writef, "n" * 255, b""))
out("name 256", err(os.open, "n" * 256, os.O_CREAT | os.O_WRONLY))
out("names", sorted(n for n in os.listdir(".") if not n.startswith("n")))
os.unlink("n" * 255)

# ---- hard links
writef("h1", b"data")
os.link("h1", "h2")
os.link("h1", "d2/h3")
out("nlink after 2 links", os.stat("h1").st_nlink)
out("link same inode", os.stat("h1").st_ino == os.stat("d2/h3").st_ino)
os.unlink("h1")
out("nlink after unlink", os.stat("h2").st_nlink)
out("content via link", readf("d2/h3"))
out("link to dir", err(os.link, "d2", "d2link"))
out("link existing", err(os.link, "h2", "d2/h3"))
out("link missing", err(os.link, "nope", "x"))

# ---- symlinks
os.symlink("f1", "s1")
os.symlink("/nonexistent/target", "s2")
os.symlink("t" * 1000, "s3")
out("s1 kind", kind("s1"))
out("s1 readlink", os.readlink("s1"))
out("s1 lstat size", os.lstat("s1").st_size)
out("s1 follows", readf("s1"))
out("s2 dangling stat", err(os.stat, "s2"))
out("s3 readlink len", len(os.readlink("s3")))
out("readlink of file", err(os.readlink, "f1"))
out("symlink existing", err(os.symlink, "x", "s1"))

# ---- special files
os.mkfifo("fifo", 0o640)
out("fifo kind", kind("fifo"))
out("fifo mode", oct(stat.S_IMODE(os.lstat("fifo").st_mode)))
os.mknod("null", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
out("chr kind", kind("null"))
out("chr rdev", (os.major(os.lstat("null").st_rdev), os.minor(os.lstat("null").st_rdev)))
with open("null", "wb") as f:
    f.write(b"into the void")
out("chr read", readf("null"))
os.mknod("blk", 0o600 | stat.S_IFBLK, os.makedev(7, 200))
out("blk rdev", (kind("blk"), os.major(os.lstat("blk").st_rdev), os.minor(os.lstat("blk").st_rdev)))
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("sock")
out("sock kind", kind("sock"))
s.close()

# ---- xattrs (values set through the mount, read back)
writef("x", b"")
for ns in ("user", "trusted", "security"):
    out(f"setxattr {ns}", err(os.setxattr, "x", f"{ns}.k", b"v-" + ns.encode()))
    out(f"getxattr {ns}", os.getxattr("x", f"{ns}.k"))
out("listxattr", sorted(a for a in os.listxattr("x") if not a.startswith("security.selinux")))
out("xattr CREATE existing", err(os.setxattr, "x", "user.k", b"1", os.XATTR_CREATE))
out("xattr REPLACE missing", err(os.setxattr, "x", "user.none", b"1", os.XATTR_REPLACE))
out("xattr REPLACE", err(os.setxattr, "x", "user.k", b"new", os.XATTR_REPLACE))
out("getxattr replaced", os.getxattr("x", "user.k"))
out("getxattr missing", err(os.getxattr, "x", "user.none"))
out("xattr big", err(os.setxattr, "x", "user.big", b"b" * 3000))
out("getxattr big", len(os.getxattr("x", "user.big")))
out("xattr empty value", err(os.setxattr, "x", "user.empty", b""))
out("getxattr empty", os.getxattr("x", "user.empty"))
out("removexattr", err(os.removexattr, "x", "user.k"))
out("removexattr missing", err(os.removexattr, "x", "user.k"))
out("xattr bad namespace", err(os.setxattr, "x", "bogus.k", b"1"))
out("xattr on dir", err(os.setxattr, "d2", "user.d", b"dir"))
out("xattr on symlink nofollow", err(os.setxattr, "s1", "trusted.l", b"l", follow_symlinks=False))
out("getxattr symlink", os.getxattr("s1", "trusted.l", follow_symlinks=False))

# ---- rename
writef("r1", b"one")
writef("r2", b"two")
os.rename("r1", "r2")
out("rename over file", (os.path.exists("r1"), readf("r2")))
os.mkdir("rd1")
os.mkdir("rd2")
writef("rd1/f", b"in rd1")
os.rename("rd1", "rd2")
out("rename dir over empty dir", (os.path.exists("rd1"), readf("rd2/f")))
os.mkdir("rd3")
out("rename dir over non-empty", err(os.rename, "rd3", "rd2"))
out("rename file over dir", err(os.rename, "r2", "rd3"))
out("rename dir over file", err(os.rename, "rd3", "r2"))
out("rename dir into itself", err(os.rename, "rd2", "rd2/sub"))
out("rename missing", err(os.rename, "nope", "x2"))
os.rename("r2", "d2/a/moved")
out("rename across dirs", readf("d2/a/moved"))
writef("e1", b"first")
writef("e2", b"second")
out("NOREPLACE existing", err(renameat2, "e1", "e2", RENAME_NOREPLACE))
out("NOREPLACE new", err(renameat2, "e1", "e3", RENAME_NOREPLACE))
out("after NOREPLACE", (os.path.exists("e1"), readf("e3")))
out("EXCHANGE", err(renameat2, "e3", "e2", RENAME_EXCHANGE))
out("after EXCHANGE", (readf("e2"), readf("e3")))
out("EXCHANGE file and dir", err(renameat2, "e2", "rd3", RENAME_EXCHANGE))
out("after EXCHANGE file/dir", (kind("e2"), kind("rd3"), readf("rd3")))
out("EXCHANGE missing", err(renameat2, "e3", "nope", RENAME_EXCHANGE))
out("EXCHANGE|NOREPLACE", err(renameat2, "e3", "e2", RENAME_EXCHANGE | RENAME_NOREPLACE))

# ---- truncate
writef("t", b"A" * 10000)
os.truncate("t", 5000)
out("truncate shrink", (os.stat("t").st_size, readf("t") == b"A" * 5000))
os.truncate("t", 20000)
d = readf("t")
out("truncate grow", (len(d), d[:5000] == b"A" * 5000, d[5000:] == bytes(15000)))
os.truncate("t", 0)
out("truncate zero", (os.stat("t").st_size, readf("t")))
with open("t", "r+b") as f:
    f.write(b"B" * 8192)
    f.truncate(4097)
    f.seek(0)
    out("ftruncate mid-sector", (len(f.read()), os.fstat(f.fileno()).st_size))
out("truncate dir", err(os.truncate, "d2", 0))

# ---- sparse files, SEEK_DATA / SEEK_HOLE
MiB = 1 << 20
with open("sparse", "wb") as f:
    f.write(b"s" * 4096)
    f.seek(10 * MiB)
    f.write(b"e" * 4096)
    f.seek(20 * MiB - 1)
    f.write(b"z")
with open("sparse", "rb") as f:
    fd = f.fileno()
    out("sparse size", os.fstat(fd).st_size)
    out("SEEK_DATA 0", os.lseek(fd, 0, os.SEEK_DATA))
    out("SEEK_HOLE 0", os.lseek(fd, 0, os.SEEK_HOLE))
    out("SEEK_DATA 8192", os.lseek(fd, 8192, os.SEEK_DATA))
    out("SEEK_HOLE 10MiB", os.lseek(fd, 10 * MiB, os.SEEK_HOLE))
    out("SEEK_DATA past end", err(os.lseek, fd, 30 * MiB, os.SEEK_DATA))
    out("SEEK_HOLE past end", err(os.lseek, fd, 30 * MiB, os.SEEK_HOLE))
    f.seek(5 * MiB)
    out("hole reads zero", f.read(4096) == bytes(4096))
out("sparse blocks small", os.stat("sparse").st_blocks * 512 < 1 * MiB)

# ---- timestamps, chmod, chown, utimens
writef("ts", b"")
os.utime("ts", ns=(1600000000123456789, 1700000000987654321))
st = os.stat("ts")
out("utime ns", (st.st_atime_ns, st.st_mtime_ns))
os.utime("ts", ns=(1, 2))
out("utime early", (os.stat("ts").st_atime_ns, os.stat("ts").st_mtime_ns))
os.utime("ts", ns=(-1000000001, 4102444800999999999))
out("utime pre-1970/2100", (os.stat("ts").st_atime_ns, os.stat("ts").st_mtime_ns))
c0 = os.stat("ts").st_ctime_ns
os.chmod("ts", 0o4751)
out("chmod", oct(os.stat("ts").st_mode))
out("chmod bumps ctime", os.stat("ts").st_ctime_ns >= c0)
os.chown("ts", 1234, 5678)
out("chown", (os.stat("ts").st_uid, os.stat("ts").st_gid))
out("chown clears suid", oct(stat.S_IMODE(os.stat("ts").st_mode)))
os.chown("s1", 42, 43, follow_symlinks=False)
out("lchown", (os.lstat("s1").st_uid, os.lstat("s1").st_gid, os.stat("s1").st_uid))
m0 = os.stat("d2").st_mtime_ns
writef("d2/newfile", b"")
out("dir mtime on create", os.stat("d2").st_mtime_ns >= m0)
os.chmod("d2", 0o2775)
os.chown("d2", 0, 777)
writef("d2/sgid-child", b"")
os.mkdir("d2/sgid-dir")
out("setgid dir: child gid", os.stat("d2/sgid-child").st_gid)
out("setgid dir: subdir mode", oct(os.stat("d2/sgid-dir").st_mode))

# ---- the creating open (the daemon may create with MKNOD and leave the
# open to the kernel): the new file is writable through it whatever its
# mode, the umask applies, a second open shares the data
old_umask = os.umask(0o022)
fd = os.open("ro-created", os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o444)
out("write through creating open of 0444", os.write(fd, b"abc"))
os.lseek(fd, 0, os.SEEK_SET)
out("read through creating open", os.read(fd, 10))
os.close(fd)
out("created 0444 mode", oct(stat.S_IMODE(os.stat("ro-created").st_mode)))
os.close(os.open("umasked", os.O_CREAT | os.O_WRONLY, 0o666))
out("create under umask 022", oct(stat.S_IMODE(os.stat("umasked").st_mode)))
os.umask(old_umask)
with open("two-opens", "w+b") as a, open("two-opens", "rb") as b:
    a.write(b"shared")
    a.flush()
    out("read through second open", b.read())
out("O_CREAT without O_EXCL on existing", err(os.close, os.open("two-opens", os.O_CREAT | os.O_WRONLY)))

# ---- unlinked but open
with open("open-unlinked", "w+b") as f:
    f.write(b"still here")
    os.unlink("open-unlinked")
    f.seek(0)
    out("read after unlink", f.read())
    out("nlink after unlink", os.fstat(f.fileno()).st_nlink)

# ---- statfs
sv = os.statvfs(".")
out("statvfs bsize", sv.f_bsize)
out("statvfs namemax", sv.f_namemax)
out("statvfs avail<=free<=blocks", sv.f_bavail <= sv.f_bfree <= sv.f_blocks)
