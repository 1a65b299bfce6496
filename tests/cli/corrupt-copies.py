#!/usr/bin/python3
"""Damage the copies that chosen devices hold of the live data and metadata.

usage: corrupt-copies.py [--zero] [--what data|metadata|all] [--max BYTES]
                         DEVICE DEVID[,DEVID...]

Reads the chunk and extent trees of the unmounted filesystem on DEVICE with
`mfs inspect-internal dump-tree`, maps every live extent (tree blocks and data
extents) to where it lies on the devices, the way the engine lays out each
profile (DESIGN §2, §3; kernel-shared/volumes.c mfs_map_block), and
overwrites the bytes that the given devices hold of it with random bytes (or
zeros) -- raid1/raid10 copies, raid5/6 data columns; parity and free space
are left alone, so that only "one device's copy" is bad. Member images are
found by devid through `mfs filesystem show --format json`.

Prints "devid logical_bytes_damaged" per device and the number of tree
blocks and data extents touched, so a test can check that something was hit.
"""
import argparse
import json
import os
import re
import subprocess
import sys

p = argparse.ArgumentParser()
p.add_argument("--zero", action="store_true")
p.add_argument("--what", choices=("data", "metadata", "all"), default="all")
p.add_argument("--max", type=int, default=0, help="stop after this many bytes per device")
p.add_argument("device")
p.add_argument("devids")
args = p.parse_args()
targets = {int(d) for d in args.devids.split(",")}


def run(*cmd):
    return subprocess.run(["mfs", *cmd], check=True, capture_output=True, text=True).stdout


# ---- members: devid -> path
show = json.loads(run("--format", "json", "filesystem", "show", args.device))
paths = {}
for fs in show["filesystems"]:
    for d in fs["devices"]:
        if d.get("path"):
            paths[int(d["devid"])] = d["path"]
for t in targets:
    if t not in paths:
        sys.exit(f"devid {t} has no path in 'mfs filesystem show {args.device}'")

# ---- chunks
chunks = []
cur = None
for line in run("inspect-internal", "dump-tree", "-t", "chunk", args.device).splitlines():
    m = re.search(r"key \(FIRST_CHUNK_TREE CHUNK_ITEM (\d+)\)", line)
    if m:
        cur = {"logical": int(m.group(1)), "stripes": []}
        chunks.append(cur)
        continue
    if cur is None:
        continue
    m = re.search(r"length (\d+) owner \d+ stripe_len (\d+) type (\S+)", line)
    if m:
        cur["length"], cur["stripe_len"] = int(m.group(1)), int(m.group(2))
        cur["type"] = m.group(3).upper()
        continue
    m = re.search(r"sub_stripes (\d+)", line)
    if m:
        cur["sub_stripes"] = int(m.group(1))
    m = re.search(r"stripe \d+ devid (\d+) offset (\d+)", line)
    if m:
        cur["stripes"].append((int(m.group(1)), int(m.group(2))))


def profile(c):
    for name in ("RAID10", "RAID1C3", "RAID1C4", "RAID1", "RAID0", "RAID5", "RAID6", "DUP"):
        if name in c["type"].split("|"):
            return name
    return "SINGLE"


def find_chunk(logical):
    for c in chunks:
        if c["logical"] <= logical < c["logical"] + c["length"]:
            return c
    sys.exit(f"no chunk maps logical {logical}")


def pieces(c, logical, length):
    """(devid, physical, len) of every copy of [logical, logical+length)."""
    prof = profile(c)
    n, slen = len(c["stripes"]), c["stripe_len"]
    out = []
    while length > 0:
        off = logical - c["logical"]
        stripe_nr, stripe_off = divmod(off, slen)
        step = min(length, slen - stripe_off)
        if prof in ("RAID5", "RAID6"):
            nparity = 1 if prof == "RAID5" else 2
            ndata = n - nparity
            row, d = divmod(stripe_nr, ndata)
            idx = (d + row % n) % n
            dev, phys = c["stripes"][idx]
            out.append((dev, phys + row * slen + stripe_off, step))
        elif prof == "RAID10":
            sub = c.get("sub_stripes", 2)
            factor = n // sub
            first = (stripe_nr % factor) * sub
            for i in range(first, first + sub):
                dev, phys = c["stripes"][i]
                out.append((dev, phys + (stripe_nr // factor) * slen + stripe_off, step))
        elif prof == "RAID0":
            dev, phys = c["stripes"][stripe_nr % n]
            out.append((dev, phys + (stripe_nr // n) * slen + stripe_off, step))
        else:
            # single, dup, raid1*: every stripe holds the whole chunk
            step = length
            for dev, phys in c["stripes"]:
                out.append((dev, phys + off, step))
        logical += step
        length -= step
    return out


# ---- live extents
extents = []
key = None
for line in run("inspect-internal", "dump-tree", "-t", "extent", args.device).splitlines():
    m = re.search(r"item \d+ key \((\d+) EXTENT_ITEM (\d+)\)", line)
    if m:
        key = (int(m.group(1)), int(m.group(2)))
        continue
    m = re.search(r"refs \d+ gen \d+ flags (\S+)", line)
    if m and key:
        kind = "metadata" if "TREE_BLOCK" in m.group(1) else "data"
        if args.what in ("all", kind):
            extents.append((key[0], key[1], kind))
        key = None

done = {t: 0 for t in targets}
hit = {"metadata": 0, "data": 0}
fds = {t: os.open(paths[t], os.O_WRONLY) for t in targets}
for logical, length, kind in extents:
    touched = False
    for dev, phys, n in pieces(find_chunk(logical), logical, length):
        if dev not in targets or (args.max and done[dev] >= args.max):
            continue
        os.pwrite(fds[dev], bytes(n) if args.zero else os.urandom(n), phys)
        done[dev] += n
        touched = True
    hit[kind] += touched
for t, fd in fds.items():
    os.fsync(fd)
    os.close(fd)
for t in sorted(done):
    print(f"devid {t} bytes {done[t]}")
print(f"tree_blocks {hit['metadata']} data_extents {hit['data']}")
