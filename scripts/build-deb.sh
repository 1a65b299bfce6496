#!/usr/bin/env bash
# Builds the Debian package (dpkg-buildpackage -us -uc -b, debian/) from a
# copy of the source tree, so that the tree itself never holds an in-tree
# build; the .deb lands in OUTDIR (default: the current directory).
#
#   build-deb.sh [--head] [OUTDIR]
#
# The copy is the working tree (tracked and untracked files git does not
# ignore), or with --head the last commit.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
from=worktree
if [ "${1:-}" = "--head" ]; then
	from=head
	shift
fi
out=$(mkdir -p "${1:-.}" && cd "${1:-.}" && pwd)

for tool in dpkg-buildpackage dh fakeroot; do
	command -v "$tool" >/dev/null || {
		echo "ERROR: $tool not found: apt-get install dpkg-dev debhelper fakeroot" >&2
		exit 1
	}
done

work=$(mktemp -d "${TMPDIR:-/tmp}/mfs-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/mfs"
if [ "$from" = head ]; then
	git -C "$top" archive HEAD | tar -x -C "$work/mfs"
else
	(cd "$top" && git ls-files -z -co --exclude-standard |
		while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
		tar --null -T - -cf -) | tar -x -C "$work/mfs"
fi
(cd "$work/mfs" && dpkg-buildpackage -us -uc -b)
cp "$work"/*.deb "$out/"
ls "$out"/mfs_*.deb
