#!/usr/bin/env python3
"""The state of a directory tree as the crash tests compare it, one sorted
line per entry below DIR: "PATH f:SHA256:SIZE:XATTRS" for a regular file,
"PATH d:XATTRS" for a directory, "PATH l:TARGET" for a symlink (XATTRS: a
digest of the user.* extended attributes, "-" when there are none).
With PATHs, only those entries, in the order given.

    snapshot.py DIR [PATH...]
"""
import hashlib
import os
import stat
import sys


def xattrs(path):
    names = sorted(n for n in os.listxattr(path, follow_symlinks=False)
                   if n.startswith("user."))
    if not names:
        return "-"
    h = hashlib.sha256()
    for n in names:
        h.update(n.encode() + b"=" + os.getxattr(path, n, follow_symlinks=False) + b"\0")
    return h.hexdigest()[:16]


def entry(root, rel):
    path = os.path.join(root, rel)
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return "%s l:%s" % (rel, os.readlink(path))
    if stat.S_ISDIR(st.st_mode):
        return "%s d:%s" % (rel, xattrs(path))
    if stat.S_ISREG(st.st_mode):
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        return "%s f:%s:%d:%s" % (rel, h.hexdigest(), st.st_size, xattrs(path))
    return "%s other:%o" % (rel, stat.S_IFMT(st.st_mode))


def main():
    root = sys.argv[1]
    if len(sys.argv) > 2:
        rels = sys.argv[2:]
    else:
        rels = []
        for dirpath, dirnames, filenames in os.walk(root):
            for name in dirnames + filenames:
                rels.append(os.path.relpath(os.path.join(dirpath, name), root))
        rels.sort()
    for rel in rels:
        print(entry(root, rel))


main()
