#!/usr/bin/env python3
"""Fill a mounted mfs until ENOSPC and keep a manifest of what it acknowledged.

  enospc-fill.py fill MODE MNT MANIFEST   MODE: small | large | xattr
  enospc-fill.py free MNT MANIFEST FRACTION
  enospc-fill.py refill MNT MANIFEST
  enospc-fill.py verify MNT MANIFEST

A file (or xattr) goes into the manifest only after an fsync of it returned 0:
that is a promise the filesystem must keep across a remount. Every failure
must be ENOSPC: EROFS, EIO or EUCLEAN mean the mount died (exit 2). Contents
are derived from the path, so verify needs nothing but the manifest.
"""
import errno
import hashlib
import os
import sys

FILES_PER_DIR = 500


def content(path, size):
    seed = hashlib.sha256(path.encode()).digest()
    return (seed * (size // len(seed) + 1))[:size]


def die(msg):
    print("FATAL: " + msg, file=sys.stderr)
    sys.exit(2)


def enospc(e, what):
    if e.errno != errno.ENOSPC:
        die("%s: %s (only ENOSPC is acceptable)" % (what, os.strerror(e.errno)))


def fsync_path(path, directory=False):
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Manifest:
    def __init__(self, path):
        self.f = open(path, "a")

    def ack(self, entries):
        for e in entries:
            self.f.write(" ".join(str(x) for x in e) + "\n")
        self.f.flush()


def write_file(path, size, chunk=1 << 20):
    """Create path with its content; True when written, False on ENOSPC."""
    data = content(path, size)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    except OSError as e:
        enospc(e, "create " + path)
        return False
    ok = True
    try:
        for off in range(0, size, chunk):
            os.write(fd, data[off:off + chunk])
    except OSError as e:
        enospc(e, "write " + path)
        ok = False
    # with the kernel's writeback cache the error may only come now
    try:
        os.close(fd)
    except OSError as e:
        enospc(e, "close " + path)
        ok = False
    return ok


def sync_batch(mnt, pending, manifest):
    """fsync the batch; on success it is acknowledged, on ENOSPC it is not."""
    try:
        fsync_path(mnt, directory=True)
    except OSError as e:
        die("fsync after %d writes: %s" % (len(pending), os.strerror(e.errno)))
    manifest.ack(pending)
    pending.clear()


def fill(mode, mnt, manifest_path, prefix="f"):
    manifest = Manifest(manifest_path)
    pending = []
    n = 0
    failures = 0
    size = {"small": 2000, "large": 8 << 20, "xattr": 0}[mode]
    batch = {"small": 500, "large": 1, "xattr": 100}[mode]
    while failures < 3:
        d = os.path.join(mnt, "%s%s%03d" % (prefix, mode, n // FILES_PER_DIR))
        try:
            os.makedirs(d, exist_ok=True)
        except OSError as e:
            enospc(e, "mkdir " + d)
            failures += 1
            continue
        p = os.path.join(d, "%06d" % n)
        ok = True
        if mode == "xattr":
            try:
                os.mkdir(p)
                for k in range(8):
                    os.setxattr(p, "user.k%d" % k, content(p + str(k), 1500))
                pending.append(("x", os.path.relpath(p, mnt), 8))
            except OSError as e:
                enospc(e, "mkdir/setxattr " + p)
                ok = False
        else:
            ok = write_file(p, size)
            if ok:
                pending.append(("f", os.path.relpath(p, mnt), size))
        if not ok:
            failures += 1
            try:
                if mode == "xattr":
                    for k in range(8):
                        try:
                            os.removexattr(p, "user.k%d" % k)
                        except OSError:
                            pass
                    os.rmdir(p)
                else:
                    os.unlink(p)
            except FileNotFoundError:
                pass
            except OSError as e:
                die("cleanup of " + p + ": " + os.strerror(e.errno))
        n += 1
        if len(pending) >= batch or (not ok and pending):
            sync_batch(mnt, pending, manifest)
    if pending:
        sync_batch(mnt, pending, manifest)
    print("filled: %d written" % n)


def read_manifest(path):
    out = []
    with open(path) as f:
        for line in f:
            kind, rel, size = line.split()
            out.append((kind, rel, int(size)))
    return out


def free(mnt, manifest_path, fraction):
    entries = read_manifest(manifest_path)
    cut = int(len(entries) * fraction)
    for kind, rel, size in entries[:cut]:
        p = os.path.join(mnt, rel)
        try:
            if kind == "x":
                os.rmdir(p)
            else:
                os.unlink(p)
        except OSError as e:
            die("deleting %s on a full filesystem: %s" % (p, os.strerror(e.errno)))
    fsync_path(mnt, directory=True)
    with open(manifest_path, "w") as f:
        for e in entries[cut:]:
            f.write(" ".join(str(x) for x in e) + "\n")
    print("deleted %d" % cut)


def verify(mnt, manifest_path):
    bad = 0
    entries = read_manifest(manifest_path)
    for kind, rel, size in entries:
        p = os.path.join(mnt, rel)
        try:
            if kind == "x":
                for k in range(size):
                    if os.getxattr(p, "user.k%d" % k) != content(p + str(k), 1500):
                        raise ValueError("xattr user.k%d differs" % k)
            else:
                with open(p, "rb") as f:
                    if f.read() != content(p, size):
                        raise ValueError("contents differ")
        except (OSError, ValueError) as e:
            print("lost: %s: %s" % (rel, e), file=sys.stderr)
            bad += 1
    print("verified %d, lost %d" % (len(entries), bad))
    sys.exit(1 if bad else 0)


def main():
    cmd = sys.argv[1]
    if cmd == "fill":
        fill(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "free":
        free(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    elif cmd == "refill":
        fill(sys.argv[4] if len(sys.argv) > 4 else "small", sys.argv[2], sys.argv[3],
             prefix="r")
    elif cmd == "verify":
        verify(sys.argv[2], sys.argv[3])
    else:
        die("unknown command " + cmd)


if __name__ == "__main__":
    main()
