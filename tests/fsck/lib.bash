# The fsck corpus (tests/fsck/NNN-name/case.sh): what every case gets.
# Sourced by tests/fsck/run.sh. A case is a small filesystem made the same
# way every time (base PROFILE) with one structure damaged (its damage
# function), the check's expected finding (EXPECT, an extended regex the
# text after "ERROR: " of one of its lines must match) and whether
# `mfs check --repair` repairs it (REPAIR=yes: a second check is clean and
# every file reads back with its sha256) or must write nothing (REPAIR=no).
# DATA_CSUM=1: the finding needs --check-data-csum.
# REPAIR_OPTION: what repairs it, if not --repair (e.g. --init-csum-tree);
# a repair function, if the case has one, repairs it instead (exit 0: done,
# 1: refused, nothing written).
#
# In damage: $W/img1..imgN are the images; IMGS lists them; F (a file with a
# hard link), D (a directory), A (a directory), DATA (a 12 KiB file),
# DATA_BYTENR (its data extent), S (a symlink) are inode numbers and
# addresses of that filesystem; corrupt, corrupt_copies, zero, tree_root,
# dir_index_of and devfile help.

# shellcheck source=tests/fsck/dump.bash
. "$top/tests/fsck/dump.bash"

# base PROFILE: the images of that base filesystem into $W (made once per
# run in $CACHE, copied for each case): raid1 (2 devices), raid5 (3),
# raid6 (4), each -m raid1 (raid6: -m raid1c3) and with the same files.
base() {
	local p=$1 n i
	case $p in
	raid1) n=2 ;;
	raid5) n=3 ;;
	raid6) n=4 ;;
	*) echo "unknown base $p" >&2; return 1 ;;
	esac
	[ -f "$CACHE/$p/vars" ] || make_base "$p" "$n" || return 1
	rm -rf "$W" && mkdir -p "$W"
	IMGS=""
	for ((i = 1; i <= n; i++)); do
		cp --sparse=always "$CACHE/$p/img$i" "$W/img$i"
		IMGS="$IMGS $W/img$i"
	done
	# the case's own registry: the copies, never the cached originals
	export MFS_REGISTRY=$W/registry
	# shellcheck disable=SC2086
	"$mfs" device scan $IMGS >/dev/null
	cp "$CACHE/$p/sums" "$W/sums"
	# shellcheck disable=SC1091
	. "$CACHE/$p/vars"
}

make_base() {
	local p=$1 n=$2 dir=$CACHE/$1 i meta=raid1 imgs=""
	[ "$p" = raid6 ] && meta=raid1c3
	mkdir -p "$dir/mnt"
	export MFS_REGISTRY=$dir/registry
	for ((i = 1; i <= n; i++)); do
		truncate -s 256M "$dir/img$i"
		imgs="$imgs $dir/img$i"
	done
	# shellcheck disable=SC2086
	"$mfs" mkfs -q -d "$p" -m "$meta" $imgs || return 1
	# shellcheck disable=SC2086
	timeout 60 "$mfs" mount $imgs "$dir/mnt" || return 1
	(
		cd "$dir/mnt" || exit 1
		mkdir a d
		echo hello >a/f
		ln a/f d/g
		ln -s a/f s
		head -c 12288 /dev/urandom >data
		for i in $(seq 1 300); do
			echo "small file $i" >"d/s$i"
		done
		for i in $(seq 1 8); do
			head -c $((i * 40000)) /dev/urandom >"a/big$i"
		done
	)
	{
		echo "F=$(stat -c %i "$dir/mnt/a/f")"
		echo "D=$(stat -c %i "$dir/mnt/d")"
		echo "A=$(stat -c %i "$dir/mnt/a")"
		echo "S=$(stat -c %i "$dir/mnt/s")"
		echo "DATA=$(stat -c %i "$dir/mnt/data")"
	} >"$dir/vars"
	(cd "$dir/mnt" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$dir/sums"
	timeout 60 "$mfs" umount "$dir/mnt" || return 1
	. "$dir/vars"
	echo "DATA_BYTENR=$(disk_bytenr_of "$dir/img1" "$DATA")" >>"$dir/vars"
}

# tree_root TREE: the bytenr of TREE's root block (dump-tree's first block).
tree_root() {
	"$mfs" inspect-internal dump-tree -t "$1" "$W/img1" | awk '$1 == "leaf" || $1 == "node" { print $2; exit }'
}

# cut_entry DIR NAME: both halves of DIR's entry NAME deleted (the
# directory's size left as it was).
cut_entry() {
	local idx
	idx=$(dir_index_of "$W/img1" "$1" "$2")
	corrupt del fs "$1" DIR_INDEX "$idx"
	corrupt del fs "$1" DIR_ITEM "hash:$2"
}

# sums_moved OLD NEW: the files under path OLD (./a, ./data) are read back
# under NEW instead, e.g. where the repair put them in lost+found.
sums_moved() {
	sed -i -E "s@  $1(/|\$)@  $2\1@" "$W/sums"
}

# corrupt ARGS...: tests/fsck/mfs-corrupt on the case's images.
corrupt() {
	local others=() i
	for i in $IMGS; do
		[ "$i" = "$W/img1" ] || others+=(-d "$i")
	done
	"$build/tests/fsck/mfs-corrupt" "${others[@]}" "$W/img1" "$@" >/dev/null
}

# corrupt_copies ARGS... DEVIDS: tests/cli/corrupt-copies.py on the images.
corrupt_copies() {
	"$python" "$top/tests/cli/corrupt-copies.py" "$@" >/dev/null
}

# zero FILE OFFSET COUNT
zero() {
	dd if=/dev/zero of="$1" bs=1 seek="$2" count="$3" conv=notrunc status=none
}

# bg_of TYPE / bg_len_of TYPE: the start and length of the first block
# group of TYPE (Data, Metadata, System).
bg_of() {
	"$mfs" inspect-internal dump-tree -t extent "$W/img1" | awk -v t="$1" '
		/BLOCK_GROUP_ITEM/ { s = $0; sub(/.*key \(/, "", s); split(s, k, " ") }
		/block group used/ && index($0, "flags " t) { print k[1]; exit }'
}
bg_len_of() {
	"$mfs" inspect-internal dump-tree -t extent "$W/img1" | awk -v t="$1" '
		/BLOCK_GROUP_ITEM/ { s = $0; sub(/.*key \(/, "", s); sub(/\).*/, "", s); split(s, k, " ") }
		/block group used/ && index($0, "flags " t) { print k[3]; exit }'
}

# dev_extent_of DEVID TYPE: the physical offset of DEVID's device extent of
# the first chunk of TYPE.
dev_extent_of() {
	local chunk
	chunk=$(bg_of "$2")
	"$mfs" inspect-internal dump-tree -t dev "$W/img1" | awk -v d="$1" -v c="$chunk" '
		match($0, "key \\(" d " DEV_EXTENT [0-9]+\\)") { s = substr($0, RSTART, RLENGTH); split(s, k, " "); off = k[4] + 0; next }
		off != "" && /chunk_offset/ { for (i = 1; i < NF; i++) if ($i == "chunk_offset" && $(i + 1) == c) { print off; exit } off = "" }'
}
