#!/usr/bin/env python3
"""Between an image file and the fuzzing harness's input (tests/fuzz/fuzz-image.c).

  image-pack.py pack IMAGE OUT [FLAGS]
                                   the image's non-zero bytes as records;
                                   FLAGS (default 1, FIX_CSUMS; 3 adds
                                   SUPER_COPY_1) as fuzz-image.c has them
  image-pack.py unpack INPUT OUT   the image an input stands for (checksums as
                                   the input has them: FIX_CSUMS is not applied)

Records hold the non-zero runs of each 4 KiB block, runs closer than GAP
zero bytes merged, so that a seed is small and a mutation lands on a
superblock, the system chunk array or a tree node rather than on zeros.
"""
import struct
import sys

MAGIC = b"MFZ1"
FIX_CSUMS = 1
BLOCK = 4096
GAP = 64


def runs(block):
    """(start, end) of the non-zero runs of block, close ones merged."""
    out = []
    i, n = 0, len(block)
    while i < n:
        if block[i] == 0:
            i += 1
            continue
        j = i
        while j < n and block[j] != 0:
            j += 1
        if out and i - out[-1][1] < GAP:
            out[-1] = (out[-1][0], j)
        else:
            out.append((i, j))
        i = j
    return out


def pack(image, out, flags=FIX_CSUMS):
    with open(image, "rb") as f:
        data = f.read()
    parts = [MAGIC, struct.pack("<B3xQ", flags, len(data))]
    for base in range(0, len(data), BLOCK):
        block = data[base:base + BLOCK]
        if not block.strip(b"\0"):
            continue
        for start, end in runs(block):
            parts.append(struct.pack("<QI", base + start, end - start))
            parts.append(block[start:end])
    with open(out, "wb") as f:
        f.write(b"".join(parts))


def unpack(inp, out):
    with open(inp, "rb") as f:
        data = f.read()
    if len(data) < 16 or data[:4] != MAGIC:
        sys.exit("not a harness input: %s" % inp)
    size = struct.unpack_from("<Q", data, 8)[0]
    with open(out, "wb") as f:
        f.truncate(size)
        pos = 16
        while len(data) - pos >= 12:
            off, n = struct.unpack_from("<QI", data, pos)
            pos += 12
            chunk = data[pos:pos + n]
            pos += len(chunk)
            if off < size:
                f.seek(off)
                f.write(chunk[:size - off])


def main():
    if sys.argv[1:2] == ["pack"] and len(sys.argv) in (4, 5):
        pack(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) == 5 else FIX_CSUMS)
    elif sys.argv[1:2] == ["unpack"] and len(sys.argv) == 4:
        unpack(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
