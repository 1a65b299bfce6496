#!/usr/bin/python3
# Set-user-ID, set-group-ID and file capabilities around writes, truncates
# and chowns, for tests/cli/mount.bats: runs a fixed sequence in the
# directory given (as root) and prints one line per observation. The output
# on mfs must equal the output on kernel btrfs.
#
#   privs-probe.py DIR run     the sequence, then the listing
#   privs-probe.py DIR list    the listing only (after a remount)
#
# "user" steps run in a child that dropped to uid/gid 1234 (no capabilities
# left, CAP_FSETID among them) and works through descriptors root opened or
# through /proc/self/fd, so the directory's own permissions do not matter.
import ctypes
import errno
import os
import stat
import sys

D, WHAT = sys.argv[1], sys.argv[2]
os.chdir(D)
UID = GID = 1234
# security.capability, VFS_CAP_REVISION_2, effective, CAP_NET_RAW permitted
CAP = bytes.fromhex("01000002" "00200000" "00000000" "00000000" "00000000")


def out(name, value):
    print(f"{name}: {value}")


def mode(path):
    return oct(stat.S_IMODE(os.stat(path).st_mode))


def has_cap(path):
    try:
        os.getxattr(path, "security.capability")
        return "cap"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


libc = ctypes.CDLL(None, use_errno=True)


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def drop_fsetid():
    hdr, data = CapHeader(0x20080522, 0), (CapData * 2)()
    if libc.capget(ctypes.byref(hdr), data):
        raise OSError(ctypes.get_errno(), "capget")
    data[0].effective &= ~(1 << 4)	# CAP_FSETID
    if libc.capset(ctypes.byref(hdr), data):
        raise OSError(ctypes.get_errno(), "capset")


ID = open("/usr/bin/id", "rb").read()
# user::rwx user:1235:rwx group::r-x mask::rwx other::r-x
ACL = bytes.fromhex("02000000" "01000700ffffffff" "02000700d3040000" "04000500ffffffff"
                    "10000700ffffffff" "20000500ffffffff")


def exec_euid(name):
    """the effective uid `id -u` runs with when uid 1235 executes NAME"""
    fd = os.open(name, os.O_RDONLY)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.dup2(w, 1)
        os.setgroups([])
        os.setgid(UID + 1)
        os.setuid(UID + 1)
        os.execve(fd, ["id", "-u"], {})
    os.close(w)
    res = os.read(r, 4096).decode().strip()
    os.close(r)
    os.waitpid(pid, 0)
    os.close(fd)
    return res


def as_user(fn, root_without_fsetid=False):
    """fn() in a child as uid/gid 1234 (or root without CAP_FSETID); its
    result or its errno name"""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            if root_without_fsetid:
                drop_fsetid()
            else:
                os.setgroups([])
                os.setgid(GID)
                os.setuid(UID)
            res = fn()
            res = "ok" if res is None else str(res)
        except OSError as e:
            res = errno.errorcode.get(e.errno, str(e.errno))
        os.write(w, res.encode())
        os._exit(0)
    os.close(w)
    res = os.read(r, 4096).decode()
    os.close(r)
    os.waitpid(pid, 0)
    return res


def make(name, m, uid=UID, gid=GID, data=b"0123456789"):
    with open(name, "wb") as f:
        f.write(data)
    os.chown(name, uid, gid)
    os.chmod(name, m)


def user_on(name, flags, fn, root_without_fsetid=False):
    """fn(fd) as_user, fd: NAME opened by root with FLAGS"""
    fd = os.open(name, flags)
    try:
        return as_user(lambda: fn(fd), root_without_fsetid)
    finally:
        os.close(fd)


def user_write(name, root_without_fsetid=False):
    return user_on(name, os.O_WRONLY | os.O_APPEND, lambda fd: os.write(fd, b"more") and None,
                   root_without_fsetid)


def root_write(name):
    with open(name, "ab") as f:
        f.write(b"more")


def run():
    # a write by someone without CAP_FSETID clears set-user-ID, and
    # set-group-ID where the group may execute; root's writes keep both
    for name, m in (("w-4755", 0o4755), ("w-2755", 0o2755), ("w-2745", 0o2745),
                    ("w-6711", 0o6711), ("w-0755", 0o755)):
        make(name, m)
        out(f"user write {name}", user_write(name))
        out(f"  mode {name}", mode(name))
    # an exec right after such a write runs without them (the kernel's
    # copy of the mode must not keep them until it asks again)
    make("x-4755", 0o4755, data=ID)
    out("exec x-4755 before, euid", exec_euid("x-4755"))
    user_write("x-4755")
    out("exec x-4755 right after a user write, euid", exec_euid("x-4755"))
    # set-group-ID without group execute, written by someone outside the group
    make("w-2757", 0o2757, 0, 0)
    out("user write w-2757 (not in the group)", user_write("w-2757"))
    out("  mode w-2757", mode("w-2757"))
    # root without CAP_FSETID is like anyone else
    make("w-nocap-6755", 0o6755)
    out("root without CAP_FSETID write w-nocap-6755", user_write("w-nocap-6755", True))
    out("  mode w-nocap-6755", mode("w-nocap-6755"))
    make("f-nocap-4755", 0o4755)
    out("root without CAP_FSETID fallocate f-nocap-4755",
        user_on("f-nocap-4755", os.O_WRONLY, lambda fd: os.posix_fallocate(fd, 0, 8192), True))
    out("  mode f-nocap-4755", mode("f-nocap-4755"))
    make("f-root-4755", 0o4755)
    fd = os.open("f-root-4755", os.O_WRONLY)
    os.posix_fallocate(fd, 0, 8192)
    os.close(fd)
    out("root fallocate f-root-4755", mode("f-root-4755"))
    make("w-root-6755", 0o6755)
    root_write("w-root-6755")
    out("root write w-root-6755", mode("w-root-6755"))

    # the same for truncate, by descriptor and by a truncating open
    for name, m in (("t-4755", 0o4755), ("t-2755", 0o2755)):
        make(name, m)
        out(f"user ftruncate {name}", user_on(name, os.O_WRONLY, lambda fd: os.ftruncate(fd, 3)))
        out(f"  mode {name}", mode(name))
    make("o-4755", 0o4755)
    out("user O_TRUNC o-4755", user_on("o-4755", os.O_RDONLY, lambda fd: os.close(
        os.open(f"/proc/self/fd/{fd}", os.O_WRONLY | os.O_TRUNC))))
    out("  mode o-4755", mode("o-4755"))
    make("t-root-4755", 0o4755)
    os.truncate("t-root-4755", 2)
    out("root truncate t-root-4755", mode("t-root-4755"))

    # a chown clears them (set-group-ID only where the group may execute),
    # root's too; a directory keeps both
    for name, m in (("c-4755", 0o4755), ("c-2755", 0o2755), ("c-2745", 0o2745)):
        make(name, m, 0, 0)
        os.chown(name, UID, -1)
        out(f"root chown {name}", mode(name))
    make("c-same-4755", 0o4755)
    os.chown("c-same-4755", UID, GID)
    out("root chown to the same owner c-same-4755", mode("c-same-4755"))
    os.mkfifo("c-fifo")
    os.chmod("c-fifo", 0o6777)
    os.chown("c-fifo", UID, GID)
    out("root chown c-fifo", mode("c-fifo"))
    os.mkdir("c-dir")
    os.chmod("c-dir", 0o3755)
    os.chown("c-dir", UID, GID)
    out("root chown c-dir", mode("c-dir"))
    # the owner giving the file to its own group, from a group it is not in
    make("g-2745", 0o2745, UID, 0)
    out("user chgrp g-2745", user_on("g-2745", os.O_RDONLY, lambda fd: os.fchown(fd, -1, GID)))
    out("  mode g-2745", mode("g-2745"))

    # an access ACL set by the owner from outside the file's group
    make("a-2775", 0o2775, UID, 0)
    os.mkdir("a-dir")
    os.chown("a-dir", UID, 0)
    os.chmod("a-dir", 0o2775)
    for name in ("a-2775", "a-dir"):
        out(f"user setfacl {name}", user_on(name, os.O_RDONLY,
                                            lambda fd: os.setxattr(fd, "system.posix_acl_access", ACL)))
        out(f"  mode {name}", mode(name))

    # set-user-ID given after writes that found nothing to clear
    make("later", 0o755)
    user_write("later")
    user_write("later")
    os.chmod("later", 0o4755)
    out("user write after chmod u+s", user_write("later"))
    out("  mode later", mode("later"))

    # a user's fallocate that changes the file clears them too
    make("f-4755", 0o4755)
    out("user fallocate f-4755",
        user_on("f-4755", os.O_WRONLY, lambda fd: os.posix_fallocate(fd, 0, 65536)))
    out("  mode f-4755", mode("f-4755"))

    # file capabilities: a write, even root's, removes them, as a chown does
    for name, act in (("cap-w", lambda n: root_write(n)),
                      ("cap-c", lambda n: os.chown(n, 0, 0)),
                      ("cap-uw", lambda n: user_write(n))):
        make(name, 0o755)
        os.setxattr(name, "security.capability", CAP)
        out(f"set {name}", has_cap(name))
        act(name)
        out(f"  after {name}", has_cap(name))
    make("cap-later", 0o755)
    user_write("cap-later")
    os.setxattr("cap-later", "security.capability", CAP)
    user_write("cap-later")
    out("write after setcap cap-later", has_cap("cap-later"))
    listing()


def listing():
    for name in sorted(os.listdir(".")):
        st = os.stat(name)
        out(f"list {name}", f"{oct(stat.S_IMODE(st.st_mode))} {st.st_uid}:{st.st_gid} "
            f"{st.st_size} {has_cap(name)}")


if WHAT == "run":
    run()
else:
    listing()
