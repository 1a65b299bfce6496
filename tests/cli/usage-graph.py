#!/usr/bin/env python3
"""Check `mfs filesystem usage --graph` against the figures of `mfs --format
json device usage` for the same filesystem.

  usage-graph.py GRAPH_FILE DEVICE_USAGE_JSON

Each device's bar has WIDTH cells for the whole device; a segment (a type
and profile, reserved, unallocated, slack) must have its share of them to
within one cell, and at least one when it is not empty. Prints what is
wrong, one a line; exits 1 if anything is.
"""
import json
import re
import sys

WIDTH = 50
FIXED = {"reserved", "unallocated", "slack"}


def parse_graph(text):
    legend = {}
    bars = {}
    for line in text.splitlines():
        if line.startswith("Legend:"):
            for mark, name in re.findall(r"  (\S) (\S+)", line[len("Legend:"):]):
                legend[mark] = name
            continue
        m = re.match(r"^ +(\d+) (\S+) +\[(.*)\] +\S+$", line)
        if m:
            bars[int(m.group(1))] = m.group(3)
    return legend, bars


def shares(dev):
    """The bytes of each segment of one device of device usage's JSON."""
    seg = {}
    alloc = 0
    for a in dev["allocations"]:
        name = "%s,%s" % (a["bg-type"], a["bg-profile"])
        seg[name] = seg.get(name, 0) + a["size"]
        alloc += a["size"]
    size = dev["device-size"]
    slack = dev["device-slack"]
    unalloc = max(dev["unallocated"], 0)
    seg["reserved"] = size - slack - alloc - dev["unallocated"]
    seg["unallocated"] = unalloc
    seg["slack"] = slack
    return seg, size


def main():
    legend, bars = parse_graph(open(sys.argv[1]).read())
    devices = json.load(open(sys.argv[2]))["device-usage"]
    bad = []
    if not legend or not bars:
        bad.append("no legend or no bar in the graph")
    for dev in devices:
        bar = bars.get(dev["devid"])
        if bar is None:
            bad.append("devid %d: no bar" % dev["devid"])
            continue
        if len(bar) != WIDTH:
            bad.append("devid %d: %d cells, not %d" % (dev["devid"], len(bar), WIDTH))
        seg, size = shares(dev)
        names = {v: k for k, v in legend.items()}
        for name, nbytes in seg.items():
            exact = nbytes * WIDTH / size
            mark = names.get(name)
            got = bar.count(mark) if mark else 0
            if mark is None and nbytes:
                bad.append("devid %d: %s (%d bytes) not in the legend" % (dev["devid"], name, nbytes))
            elif abs(got - exact) > 1 or (nbytes and not got):
                bad.append("devid %d: %s has %d cells, its share is %.2f" %
                           (dev["devid"], name, got, exact))
        # the order: the chunks, reserved, unallocated, slack
        order = [m for m in dict.fromkeys(bar)]
        fixed = [legend[m] for m in order if legend.get(m) in FIXED]
        if fixed != [f for f in ("reserved", "unallocated", "slack") if f in fixed]:
            bad.append("devid %d: segments out of order: %s" % (dev["devid"], bar))
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
