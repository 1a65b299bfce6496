#!/usr/bin/python3
"""Damage the copies that chosen devices hold of the live data and metadata.

usage: corrupt-copies.py [--zero] [--what data|metadata|all] [--max BYTES]
                         [--copy K[,K...]] [--owner TREE[,TREE...]]
                         DEVICE DEVID[,DEVID...]

Reads the chunk and extent trees of the unmounted filesystem on DEVICE with
`mfs inspect-internal dump-tree`, maps every live extent (tree blocks and data
extents) to where it lies on the devices, the way the engine lays out each
profile (DESIGN §2, §3; kernel-shared/volumes/chunk-map.c mfs_map_block), and
overwrites the bytes that the given devices hold of it with random bytes (or
zeros) -- raid1/raid10 copies, raid5/6 data columns; parity and free space
are left alone, so that only "one device's copy" is bad. Member images are
found by devid through `mfs filesystem show --format json`.

--copy chooses which copies are damaged (on the given devices): K is the
copy's place in the chunk, 1 for the first stripe of dup and raid1*, the
first of a raid10 pair, 2 for the second, ...; for raid5/6, 1 is the data
column (the default there) and p and q are the row's parity strips at the
same offset. Without it every copy on the devices is damaged (raid5/6: the
data columns). --owner limits the tree blocks damaged to those of the given
trees (objectids: 1 root, 2 extent, 3 chunk, 4 dev, 5 fs, 7 csum).

Prints "devid D bytes B" per device (bytes damaged), then per device
"damaged devid D data_sectors S tree_blocks K" (4 KiB data sectors and tree
blocks damaged there, each copy counted), and the number of tree blocks and
data extents touched, so a test can check that something was hit and
compare error counters with what was damaged.
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
p.add_argument("--copy", default=None, help="which copies: 1,2,... (raid5/6: 1,p,q)")
p.add_argument("--owner", default=None, help="only tree blocks of these trees (objectids)")
p.add_argument("device")
p.add_argument("devids")
args = p.parse_args()
targets = {int(d) for d in args.devids.split(",")}
copies = None
if args.copy:
    copies = set()
    for k in args.copy.split(","):
        if k in ("p", "q"):
            copies.add(k)
        elif k.isdigit() and int(k) > 0:
            copies.add(int(k))
        else:
            sys.exit(f"--copy: bad copy '{k}' (1, 2, ... or p, q)")


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
    """(copy, devid, physical, len) of every copy of [logical, logical+length)."""
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
            # the row's columns in order: data 0..ndata-1, then P, Q; they rotate
            for copy, col in ((1, d), ("p", ndata), ("q", ndata + 1))[:1 + nparity]:
                dev, phys = c["stripes"][(col + row % n) % n]
                out.append((copy, dev, phys + row * slen + stripe_off, step))
        elif prof == "RAID10":
            sub = c.get("sub_stripes", 2)
            factor = n // sub
            first = (stripe_nr % factor) * sub
            for i in range(first, first + sub):
                dev, phys = c["stripes"][i]
                out.append((i - first + 1, dev, phys + (stripe_nr // factor) * slen + stripe_off, step))
        elif prof == "RAID0":
            dev, phys = c["stripes"][stripe_nr % n]
            out.append((1, dev, phys + (stripe_nr // n) * slen + stripe_off, step))
        else:
            # single, dup, raid1*: every stripe holds the whole chunk
            step = length
            for i, (dev, phys) in enumerate(c["stripes"]):
                out.append((i + 1, dev, phys + off, step))
        logical += step
        length -= step
    return out


# ---- live extents
owners = {int(o) for o in args.owner.split(",")} if args.owner else None
extents = []
key = None
block = None
for line in run("inspect-internal", "dump-tree", "-t", "extent", args.device).splitlines():
    m = re.search(r"item \d+ key \((\d+) EXTENT_ITEM (\d+)\)", line)
    if m:
        key = (int(m.group(1)), int(m.group(2)))
        continue
    m = re.search(r"refs \d+ gen \d+ flags (\S+)", line)
    if m and key:
        if "TREE_BLOCK" in m.group(1):
            block = key     # its owner is on the next line
        elif args.what in ("all", "data"):
            extents.append((key[0], key[1], "data"))
        key = None
        continue
    m = re.search(r"tree block owner (\d+) level \d+", line)
    if m and block:
        if args.what in ("all", "metadata") and (owners is None or int(m.group(1)) in owners):
            extents.append((block[0], block[1], "metadata"))
        block = None

done = {t: 0 for t in targets}
sectors = {t: 0 for t in targets}
blocks = {t: 0 for t in targets}
hit = {"metadata": 0, "data": 0}
# parity strips are shared by the extents of a row: each byte is damaged once
parity_done = set()
fds = {t: os.open(paths[t], os.O_WRONLY) for t in targets}
for logical, length, kind in extents:
    touched = False
    for copy, dev, phys, n in pieces(find_chunk(logical), logical, length):
        if dev not in targets or (args.max and done[dev] >= args.max):
            continue
        if (copies is None and copy in ("p", "q")) or (copies is not None and copy not in copies):
            continue
        if copy in ("p", "q"):
            if (dev, phys) in parity_done:
                continue
            parity_done.add((dev, phys))
        os.pwrite(fds[dev], bytes(n) if args.zero else os.urandom(n), phys)
        done[dev] += n
        if copy not in ("p", "q"):
            if kind == "data":
                sectors[dev] += n // 4096
            else:
                blocks[dev] += 1
        touched = True
    hit[kind] += touched
for t, fd in fds.items():
    os.fsync(fd)
    os.close(fd)
for t in sorted(done):
    print(f"devid {t} bytes {done[t]}")
for t in sorted(done):
    print(f"damaged devid {t} data_sectors {sectors[t]} tree_blocks {blocks[t]}")
print(f"tree_blocks {hit['metadata']} data_extents {hit['data']}")
