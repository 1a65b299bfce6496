#!/usr/bin/env bash
# The fsck corpus: every case in tests/fsck/NNN-name/case.sh (see
# tests/fsck/lib.bash) is made, checked and repaired; one TAP line each.
# A case passes when `mfs check` exits 1 with an ERROR line matching its
# EXPECT, and then REPAIR=yes: `mfs check --repair --force` exits 0, a
# second check (with --check-data-csum) is clean and every file reads back
# with its sha256; REPAIR=no: --repair exits 1 and the images are unchanged.
# A case's REPAIR_OPTION replaces --repair (e.g. --init-csum-tree); a case
# that defines repair() runs it instead (e.g. mfs rescue chunk-recover).
# MFS_FSCK_ONLY=TEXT runs the cases whose name holds TEXT. The cases run
# MFS_FSCK_JOBS (2) at a time, each worker in a folder of its own (its own
# base filesystems, registry and mount point); TAP in the cases' order.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${MFS_BUILD:-$top/build}
mfs=$build/mfs
python=/usr/bin/python3
[ -x "$python" ] || python=python3
JOBS=${MFS_FSCK_JOBS:-2}
top_tmp=$(mktemp -d "${TMPDIR:-/tmp}/mfs-fsck.XXXXXX")
export PATH="$build:$PATH"
cleanup() {
	local m

	for m in "$top_tmp"/w*/mnt "$top_tmp"/w*/cache/*/mnt; do
		mountpoint -q "$m" 2>/dev/null && timeout 60 "$mfs" umount "$m"
	done
	rm -rf "$top_tmp"
}
trap cleanup EXIT
# shellcheck source=tests/fsck/lib.bash
. "$top/tests/fsck/lib.bash"

# The files read back, mounted read-only, are those of the base.
files_intact() {
	# shellcheck disable=SC2086
	timeout 60 "$mfs" mount -o ro $IMGS "$tmp/mnt" || { echo "cannot be mounted"; return 1; }
	if ! (cd "$tmp/mnt" && sha256sum --quiet -c "$W/sums") >/dev/null 2>&1; then
		timeout 60 "$mfs" umount "$tmp/mnt"
		echo "a file does not read back with its sha256"
		return 1
	fi
	timeout 60 "$mfs" umount "$tmp/mnt"
}

# run_case DIR: prints why it failed, if it did.
run_case() {
	local out rc sums csum=()
	unset -f damage repair
	EXPECT="" REPAIR="" DATA_CSUM=0 PROFILE=raid1 REPAIR_OPTION=--repair
	# shellcheck disable=SC1091
	. "$1/case.sh"
	[ "$DATA_CSUM" = 1 ] && csum=(--check-data-csum)
	base "$PROFILE" || { echo "the base filesystem could not be made"; return 1; }
	damage || { echo "damage failed"; return 1; }
	# shellcheck disable=SC2086
	out=$(timeout 120 "$mfs" check "${csum[@]}" $IMGS 2>&1)
	rc=$?
	if [ "$rc" -ne 1 ]; then
		echo "check exited $rc, not 1"
		return 1
	fi
	if ! grep -qE "^ERROR: ($EXPECT)\$" <<<"$out"; then
		echo "no ERROR line matches '$EXPECT':"
		grep '^ERROR' <<<"$out" | head -5 | sed 's/^/# /' >&2
		return 1
	fi
	sums=$(md5sum $IMGS)
	if declare -F repair >/dev/null; then
		REPAIR_OPTION=repair
		out=$(repair 2>&1)
	else
		# shellcheck disable=SC2086
		out=$(timeout 120 "$mfs" check "$REPAIR_OPTION" --force "${csum[@]}" $IMGS 2>&1)
	fi
	rc=$?
	case $REPAIR in
	yes)
		[ "$rc" -eq 0 ] || { echo "$REPAIR_OPTION exited $rc"; sed -n '/^ERROR/s/^/# /p' <<<"$out" | head -5 >&2; return 1; }
		# shellcheck disable=SC2086
		out=$(timeout 120 "$mfs" check --check-data-csum $IMGS 2>&1) ||
			{ echo "not clean after $REPAIR_OPTION"; sed -n '/^ERROR/s/^/# /p' <<<"$out" | head -5 >&2; return 1; }
		files_intact || return 1 ;;
	no)
		[ "$rc" -eq 1 ] || { echo "$REPAIR_OPTION exited $rc, not 1"; return 1; }
		[ "$sums" = "$(md5sum $IMGS)" ] || { echo "$REPAIR_OPTION wrote to the images"; return 1; } ;;
	*)
		echo "REPAIR is '$REPAIR', not yes or no"; return 1 ;;
	esac
}

# worker J: cases J, J + JOBS, ... of $cases, a line "INDEX ok" or
# "INDEX not ok WHY" each; its own tmp (CACHE, W, mnt for lib.bash).
worker() {
	local j=$1 i why

	tmp=$top_tmp/w$j
	CACHE=$tmp/cache
	W=$tmp/case
	mkdir -p "$CACHE" "$tmp/mnt"
	for ((i = j; i < ${#cases[@]}; i += JOBS)); do
		if why=$(run_case "${cases[i]}"); then
			echo "$i ok"
		else
			echo "$i not ok $(tr '\n' ' ' <<<"$why")"
		fi
	done
}

cases=()
for dir in "$top"/tests/fsck/[0-9][0-9][0-9]-*/; do
	[[ $(basename "$dir") == *"${MFS_FSCK_ONLY:-}"* ]] && cases+=("$dir")
done
pids=()
for ((j = 0; j < JOBS; j++)); do
	worker "$j" >"$top_tmp/results.$j" &
	pids+=($!)
done
wait "${pids[@]}"
failures=0
for ((i = 0; i < ${#cases[@]}; i++)); do
	name=$(basename "${cases[i]}")
	line=$(cat "$top_tmp"/results.* | awk -v i="$i" '$1 == i { $1 = ""; print substr($0, 2); exit }')
	case $line in
	ok) echo "ok $((i + 1)) - $name" ;;
	"not ok "*)
		failures=$((failures + 1))
		echo "not ok $((i + 1)) - $name: ${line#not ok }" ;;
	*)
		failures=$((failures + 1))
		echo "not ok $((i + 1)) - $name: no result (the worker stopped)" ;;
	esac
done
echo "1..${#cases[@]}"
echo "# ${#cases[@]} cases, $failures failed"
[ "$failures" -eq 0 ]
