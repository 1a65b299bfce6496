#!/usr/bin/env bash
# Builds mfs out of tree: build/ (normal), with --sanitizers build-san/
# (ASan+UBSan), with --tsan build-tsan/ (ThreadSanitizer).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# MFS_BUILD_DIR puts the build elsewhere (e.g. one per parallel worker).
dir=${MFS_BUILD_DIR:-build}; conf=""
tsan_flags=()
if [ "${1:-}" = "--sanitizers" ]; then dir=${MFS_BUILD_DIR:-build-san}; conf="--enable-sanitizers"; fi
# --tsan: build-tsan/, ThreadSanitizer (for tests/tsan)
if [ "${1:-}" = "--tsan" ]; then
	dir=${MFS_BUILD_DIR:-build-tsan}
	tsan_flags=("CFLAGS=-fsanitize=thread -g -O1" "LDFLAGS=-fsanitize=thread")
fi
cd "$top"
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt Makefile.in ]; then
	autoreconf -fi >/dev/null 2>&1 || autoreconf -fi
fi
mkdir -p "$dir"
cd "$dir"
if [ ! -f Makefile ] || [ "$top/configure" -nt Makefile ]; then
	"$top/configure" -q $conf "${tsan_flags[@]}"
fi
make -j"$(nproc)" -s all
make -j"$(nproc)" -s check TESTS= >/dev/null
echo "built in $(pwd)"
