#!/usr/bin/env bash
# Crash consistency of the restriper: log every write and flush of a convert
# (raid0 -> raid5), of a convert on small devices that replaces chunks by
# several pieces each, of a device delete and of a replace, rebuild the devices as they were
# at each flush point, and require that every state checks clean, mounts,
# and holds every file written before the operation began. A state from the
# middle of the operation must also finish it when mounted read-write.
# One TAP line per configuration.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${MFS_BUILD:-$top/build}
mfs=$build/mfs
mkfs=$build/mkfs.mfs
replay=$build/tests/crash/replay
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mfs-crash-restripe.XXXXXX")
export MFS_REGISTRY=$tmp/registry
cleanup() {
	mountpoint -q "$tmp/mnt" 2>/dev/null && "$mfs" umount "$tmp/mnt"
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/mnt"

tests=0
tap() {	# tap OK|FAIL description
	tests=$((tests + 1))
	if [ "$1" = OK ]; then echo "ok $tests - $2"; else echo "not ok $tests - $2"; fi
}

# make_fs N PROFILE_ARGS...: N images with files on them, hashes in $tmp/sums
# (DEV_SIZE: image size, 512M by default; FILL_MIB: one more file that big)
make_fs() {
	local n=$1 i
	shift
	rm -f "$tmp"/d*.img "$tmp"/b*.img "$tmp/registry"
	imgs=()
	for i in $(seq 1 "$n"); do
		truncate -s "${DEV_SIZE:-512M}" "$tmp/d$i.img"
		imgs+=("$tmp/d$i.img")
	done
	"$mkfs" -q -f -K "$@" "${imgs[@]}" || return 1
	"$mfs" mount "${imgs[0]}" "$tmp/mnt" || return 1
	for i in 1 2 3 4 5 6; do
		head -c $((i * 3))M /dev/urandom > "$tmp/mnt/file$i"
	done
	[ -n "${FILL_MIB:-}" ] && head -c "${FILL_MIB}M" /dev/urandom > "$tmp/mnt/filefill"
	mkdir "$tmp/mnt/dir" && echo small > "$tmp/mnt/dir/small"
	(cd "$tmp/mnt" && sha256sum file* dir/small) > "$tmp/sums"
	"$mfs" umount "$tmp/mnt" || return 1
	for i in $(seq 1 "$n"); do
		cp --sparse=always "$tmp/d$i.img" "$tmp/b$i.img"
	done
}

# state_at K: the images as a crash at flush point K would leave them
state_at() {
	local k=$1 i maps=()
	for i in $(seq 1 ${#imgs[@]}); do
		cp --sparse=always "$tmp/b$i.img" "$tmp/s$i.img"
		maps+=(--map "$tmp/d$i.img=$tmp/s$i.img")
	done
	"$replay" "$tmp/log" "${maps[@]}" --upto "$k" >/dev/null
}

# verify_state K: check clean, files intact on a read-only mount
verify_state() {
	local k=$1 first=$tmp/s1.img out
	out=$("$mfs" check "$tmp"/s*.img 2>&1) || { echo "# K=$k check: $out" | head -5; return 1; }
	"$mfs" mount -o ro "$tmp"/s*.img "$tmp/mnt" 2>/dev/null || { echo "# K=$k mount failed"; return 1; }
	if ! (cd "$tmp/mnt" && sha256sum -c --quiet "$tmp/sums" >/dev/null 2>&1); then
		echo "# K=$k file contents differ"
		"$mfs" umount "$tmp/mnt"
		return 1
	fi
	"$mfs" umount "$tmp/mnt"
	: "$first"
}

# finish_state K: mounting read-write resumes and completes the operation
finish_state() {
	local k=$1 out
	"$mfs" mount "$tmp"/s*.img "$tmp/mnt" 2>/dev/null || { echo "# K=$k rw mount failed"; return 1; }
	for _ in $(seq 1 100); do
		out=$("$mfs" balance status "$tmp/mnt" 2>&1) && break
		sleep 0.2
	done
	(cd "$tmp/mnt" && sha256sum -c --quiet "$tmp/sums" >/dev/null 2>&1) || { echo "# K=$k files differ after resume"; "$mfs" umount "$tmp/mnt"; return 1; }
	"$mfs" umount "$tmp/mnt"
	"$mfs" balance status "$tmp"/s1.img >/dev/null 2>&1 || true
	"$mfs" check "$tmp"/s*.img >/dev/null 2>&1 || { echo "# K=$k check after resume failed"; return 1; }
}

run_config() {	# name, then the operation to log (run on the d*.img)
	local name=$1 count k step bad=0 mid
	shift
	rm -f "$tmp/log"
	if ! MFS_WRITE_LOG=$tmp/log "$@" >/dev/null 2>"$tmp/op.err"; then
		echo "# operation failed: $(head -3 "$tmp/op.err")"
		tap FAIL "$name: operation"
		return
	fi
	count=$("$replay" "$tmp/log" --count 2>/dev/null | tail -1)
	step=$(( count > 40 ? count / 40 : 1 ))
	mid=$(( count / 2 ))
	for k in $(seq 0 "$step" "$count") "$count"; do
		state_at "$k" && verify_state "$k" || { bad=1; break; }
		if [ "$k" -eq "$mid" ] || { [ "$k" -lt "$mid" ] && [ $((k + step)) -gt "$mid" ]; }; then
			finish_state "$k" || { bad=1; break; }
		fi
	done
	if [ "$bad" = 0 ]; then
		tap OK "$name: $count flush points, every state clean and intact"
	else
		tap FAIL "$name"
	fi
	rm -f "$tmp"/s*.img
}

if make_fs 3 -d raid0 -m raid1; then
	run_config "convert raid0 -> raid5" "$mfs" balance start -q -dconvert=raid5 "${imgs[@]}"
else
	tap FAIL "convert raid0 -> raid5: setup"
fi
# 3 x 256M with 138 MiB: the metadata chunk as DUP fits no device whole
if DEV_SIZE=256M FILL_MIB=75 make_fs 3 -d raid0 -m raid1; then
	run_config "convert in pieces (raid0 -> single, raid1 -> dup)" \
		"$mfs" balance start -q -f -dconvert=single -mconvert=dup "${imgs[@]}"
else
	tap FAIL "convert in pieces: setup"
fi
if make_fs 3 -d raid1 -m raid1; then
	run_config "device delete" "$mfs" device delete -q 3 "${imgs[0]}"
else
	tap FAIL "device delete: setup"
fi
# replace: the target is a fourth image, blank before the operation
if make_fs 3 -d raid1 -m raid1; then
	truncate -s 512M "$tmp/d4.img" "$tmp/b4.img"
	imgs+=("$tmp/d4.img")
	# the target joins the registry: not the one the replayed states are
	# opened with, where its final state would be taken for their member
	cp "$tmp/registry" "$tmp/op-registry"
	run_config "replace" env MFS_REGISTRY="$tmp/op-registry" \
		"$mfs" replace start -K 2 "$tmp/d4.img" "${imgs[0]}"
else
	tap FAIL "replace: setup"
fi
echo "1..$tests"
