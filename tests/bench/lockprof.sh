#!/usr/bin/env bash
# Who holds a lock while users wait (not a benchmark of its own: a tool
# for reading one). Runs a command with tests/bench/lockprof.c preloaded -
# an mfs mount's daemon inherits it - which logs every pthread mutex held
# longer than LOCKPROF_MS (15) ms with the call chain that let it go; the
# report groups those holds by the functions that held them.
#
#   tests/bench/lockprof.sh run LOG CMD...    e.g. CMD = mfs mount DEV MNT
#   tests/bench/lockprof.sh report LOG [N]    the N (10) chains that held longest
#
# A line "== NAME" appended to LOG by hand (echo "== balance" >>LOG)
# starts a section: the report gives each section its own table, so one
# mount can be profiled through several operations. The holds of the
# daemon's committer thread on its own mutex across its timed wait show
# as long holds of pthread_cond_timedwait's caller: not fs->lock.
set -u
here=$(cd "$(dirname "$0")" && pwd)

usage() {
	echo "usage: tests/bench/lockprof.sh run LOG CMD... | report LOG [N]" >&2
	exit 2
}

[ $# -ge 2 ] || usage
case $1 in
run)
	[ $# -ge 3 ] || usage
	log=$(realpath -m "$2")
	shift 2
	so=${TMPDIR:-/tmp}/mfs-lockprof.so
	gcc -O2 -shared -fPIC -Wall -Wextra -Werror -o "$so" "$here/lockprof.c" -ldl ||
		{ echo "ERROR: cannot build the profiler" >&2; exit 1; }
	LD_PRELOAD=$so LOCKPROF_OUT=$log exec "$@"
	;;
report)
	[ -r "$2" ] || { echo "ERROR: cannot read $2" >&2; exit 1; }
	exec python3 - "$2" "${3:-10}" <<'PY'
import collections, subprocess, sys

path, top = sys.argv[1], int(sys.argv[2])
sections = collections.OrderedDict()
name = "(all)"
for line in open(path):
    if line.startswith("=="):
        name = line[2:].strip() or "(unnamed)"
        continue
    f = line.split()
    if len(f) < 2 or f[0] != "HOLD":
        continue
    frames = [x.rsplit("+", 1) for x in f[2:] if "+0x" in x]
    sections.setdefault(name, []).append((float(f[1]), frames))

# every module's offsets resolved at once
want = collections.defaultdict(set)
for holds in sections.values():
    for _, frames in holds:
        for mod, off in frames:
            want[mod].add(off)
names = {}
for mod, offs in want.items():
    offs = sorted(offs)
    try:
        out = subprocess.run(["addr2line", "-f", "-e", mod] + offs, capture_output=True,
                             text=True, check=False).stdout.split("\n")
    except OSError:
        out = []
    for i, off in enumerate(offs):
        fn = out[2 * i] if 2 * i < len(out) else "??"
        names[(mod, off)] = fn

for name, holds in sections.items():
    groups = collections.defaultdict(list)
    for ms, frames in holds:
        chain = [names.get((m, o), "??") for m, o in frames]
        chain = [c for c in chain if c != "??"][:4]
        groups[" <- ".join(chain) or "??"].append(ms)
    print("== %s: %d holds over the threshold" % (name, len(holds)))
    print("%6s %9s %9s  %s" % ("holds", "max ms", "total ms", "held by (innermost first)"))
    for chain, v in sorted(groups.items(), key=lambda kv: -sum(kv[1]))[:top]:
        print("%6d %9.1f %9.1f  %s" % (len(v), max(v), sum(v), chain))
PY
	;;
*)
	usage
	;;
esac
