# The file workload of the crash tests (files.sh, stale.sh), sourced:
# rounds of file operations on a mounted filesystem whose every device
# write and flush is logged ($MFS_WRITE_LOG), each round ended by fsync of
# everything, with the mirror directory holding what the filesystem should
# and the flush-point count noted at each round ($tmp/rounds). The caller
# sets tmp, mfs, mkfs, replay and ROUNDS.

tests=0
failures=0

tap() {	# tap OK|FAIL description
	tests=$((tests + 1))
	if [ "$1" = OK ]; then
		echo "ok $tests - $2"
	else
		failures=$((failures + 1))
		echo "not ok $tests - $2"
	fi
}

# ---------------- the workload ----------------

# Every operation runs in the mounted filesystem and in a mirror directory,
# so the mirror always holds what the filesystem should.
both() {
	(cd "$tmp/mnt" && "$@") && (cd "$tmp/mirror" && "$@")
}

# Random bytes for this operation in $tmp/src (1 B .. 3 MiB, mostly small).
make_src() {
	local n
	case $((RANDOM % 4)) in
	0) n=$((1 + RANDOM % 4096)) ;;
	1) n=$((1 + RANDOM * 4)) ;;
	2) n=$((4096 * (1 + RANDOM % 64))) ;;
	*) n=$((1 + RANDOM * 96)) ;;
	esac
	head -c "$n" /dev/urandom >"$tmp/src"
}

# PICK = a random existing regular file of the mirror (relative path), or "".
pick_file() {
	local files
	mapfile -t files < <(cd "$tmp/mirror" && find . -type f -printf '%P\n' | sort)
	PICK=""
	[ ${#files[@]} -eq 0 ] || PICK=${files[RANDOM % ${#files[@]}]}
}

# name hash, one line per regular file, sorted
snapshot() {	# snapshot DIR
	(cd "$1" && find . -type f -printf '%P\n' | sort | while read -r f; do
		echo "$f $(sha256sum <"$f" | cut -c1-64)"
	done)
}

# fsync every file and directory of the filesystem, then note the flush points
durable_point() {	# durable_point ROUND
	local c i
	(cd "$tmp/mnt" && find . -print0 | xargs -0 sync --) || return 1
	snapshot "$tmp/mirror" >"$tmp/state.$1"
	for i in 1 2 3 4 5; do
		# the log may be mid-record if the daemon is writing; try again
		c=$("$replay" "$tmp/log" --count 2>/dev/null) && break
		sleep 0.2
	done
	[ -n "$c" ] || return 1
	echo "$1 $c" >>"$tmp/rounds"
}

one_round() {	# one_round R
	local r=$1 f g size k
	: >"$tmp/temps.$r"
	for k in a b c; do
		make_src
		both cp "$tmp/src" "f$r.$k" || return 1
	done
	if [ $((RANDOM % 2)) = 0 ] && [ ! -d "$tmp/mirror/sub$((r % 3))" ]; then
		both mkdir "sub$((r % 3))" || return 1
	fi
	pick_file	# overwrite part of a file
	f=$PICK
	if [ -n "$f" ]; then
		make_src
		size=$(stat -c %s "$tmp/mirror/$f")
		both dd if="$tmp/src" of="$f" bs=65536 seek=$((RANDOM * 7 % (size + 1))) \
			oflag=seek_bytes iflag=count_bytes count=$((1 + RANDOM % 70000)) \
			conv=notrunc status=none || return 1
	fi
	pick_file	# append
	f=$PICK
	if [ -n "$f" ]; then
		make_src
		both sh -c 'cat "$1" >>"$2"' sh "$tmp/src" "$f" || return 1
	fi
	pick_file	# truncate, up or down
	f=$PICK
	if [ -n "$f" ]; then
		size=$(stat -c %s "$tmp/mirror/$f")
		both truncate -s $((RANDOM % 2 ? size / 3 : size + RANDOM * 3)) "$f" || return 1
	fi
	pick_file	# rename, into a subdirectory sometimes
	f=$PICK
	if [ -n "$f" ]; then
		g="r$r"
		[ -d "$tmp/mirror/sub$((r % 3))" ] && [ $((RANDOM % 2)) = 0 ] && g="sub$((r % 3))/r$r"
		[ "$f" = "$g" ] || both mv "$f" "$g" || return 1
	fi
	pick_file	# rename over another file
	f=$PICK
	pick_file
	g=$PICK
	if [ -n "$f" ] && [ -n "$g" ] && [ "$f" != "$g" ]; then
		both mv -f "$f" "$g" || return 1
	fi
	pick_file	# write a temporary file, then replace a file with it
	f=$PICK
	if [ -n "$f" ]; then
		make_src
		echo "tmp$r" >>"$tmp/temps.$r"
		both cp "$tmp/src" "tmp$r" || return 1
		both mv -f "tmp$r" "$f" || return 1
	fi
	if [ $((RANDOM % 2)) = 0 ]; then	# unlink
		pick_file
		[ -z "$PICK" ] || both rm -f "$PICK" || return 1
	fi
	return 0
}

# Mount with the write log, run the rounds, unmount. Globals: devs, names.
run_workload() {	# run_workload SEED NDEV MKFS-OPTIONS...
	local seed=$1 ndev=$2 r i
	shift 2
	rm -rf "$tmp"/*.img "$tmp/log" "$tmp/mirror" "$tmp"/state.* "$tmp"/temps.* "$tmp/rounds"
	mkdir -p "$tmp/mnt" "$tmp/vmnt" "$tmp/mirror"
	: >"$tmp/rounds"
	devs=()
	for i in $(seq 1 "$ndev"); do
		truncate -s 1G "$tmp/d$i.img"
		devs+=("$tmp/d$i.img")
	done
	timeout 60 "$mkfs" -q -f -K "$@" "${devs[@]}" || { echo "mkfs.mfs failed"; return 1; }
	for i in $(seq 1 "$ndev"); do
		cp --sparse=always "$tmp/d$i.img" "$tmp/b$i.img"
	done
	# no timer commits: the fsyncs (and the unmount) decide the durable states
	MFS_WRITE_LOG=$tmp/log timeout 60 "$mfs" mount -o commit=86400 "${devs[@]}" "$tmp/mnt" ||
		{ echo "mount failed"; return 1; }
	RANDOM=$seed
	for r in $(seq 1 "$ROUNDS"); do
		one_round "$r" || { echo "round $r failed"; return 1; }
		durable_point "$r" || { echo "fsync of round $r failed"; return 1; }
	done
	# a last round nobody fsyncs: the unmount must make it durable
	r=$((ROUNDS + 1))
	one_round "$r" || { echo "round $r failed"; return 1; }
	snapshot "$tmp/mirror" >"$tmp/state.$r"
	timeout 120 "$mfs" umount "$tmp/mnt" || { echo "umount failed"; return 1; }
	snapshot "$tmp/mirror" >"$tmp/state.final"
}

