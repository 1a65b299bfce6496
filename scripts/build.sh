#!/usr/bin/env bash
# Builds mfs out of tree: build/ (normal) or, with --sanitizers, build-san/ (ASan+UBSan).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# MFS_BUILD_DIR puts the build elsewhere (e.g. one per parallel worker).
dir=${MFS_BUILD_DIR:-build}; conf=""
if [ "${1:-}" = "--sanitizers" ]; then dir=${MFS_BUILD_DIR:-build-san}; conf="--enable-sanitizers"; fi
cd "$top"
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt Makefile.in ]; then
	autoreconf -fi >/dev/null 2>&1 || autoreconf -fi
fi
mkdir -p "$dir"
cd "$dir"
if [ ! -f Makefile ] || [ "$top/configure" -nt Makefile ]; then
	"$top/configure" -q $conf
fi
make -j"$(nproc)" -s all
make -j"$(nproc)" -s check TESTS= >/dev/null
echo "built in $(pwd)"
