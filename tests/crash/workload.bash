# The file workload of the crash tests (files.sh, stale.sh), sourced:
# rounds of operations on files, directories, symlinks, hard links and
# xattrs of a mounted filesystem whose every device write and flush is
# logged ($MFS_WRITE_LOG), each round ended by fsync of everything, with
# the mirror directory holding what the filesystem should. $tmp/rounds
# gets a line per round: R, the log's last crash point before its fsyncs
# and the one after them, and the log's flushes at those two moments.
# The caller sets tmp, top, mfs, mkfs, replay and ROUNDS, and python
# (lib.bash).

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

# PICK = a random existing entry of the mirror of type T (find -type), or "".
pick_type() {	# pick_type T
	local all
	mapfile -t all < <(cd "$tmp/mirror" && find . -mindepth 1 -type "$1" -printf '%P\n' | sort)
	PICK=""
	[ ${#all[@]} -eq 0 ] || PICK=${all[RANDOM % ${#all[@]}]}
}

# One line per entry: path, type, content, xattrs (tests/crash/snapshot.py).
snapshot() {	# snapshot DIR [PATH...]
	"$python" "$top/tests/crash/snapshot.py" "$@"
}

# xattr changes, made in the filesystem and the mirror by one process:
# "set PATH NAME VALUE", or "remove-first PATH" (the first user.* xattr
# the mirror's PATH has, if any).
both_xattr() {	# both_xattr set|remove-first PATH [NAME VALUE]
	"$python" -c '
import os, sys
op, rel = sys.argv[3], sys.argv[4]
trees = sys.argv[1:3]
if op == "set":
	for t in trees:
		os.setxattr(os.path.join(t, rel), "user." + sys.argv[5], sys.argv[6].encode())
else:
	names = sorted(n for n in os.listxattr(os.path.join(trees[1], rel)) if n.startswith("user."))
	for t in trees:
		if names:
			os.removexattr(os.path.join(t, rel), names[0])
' "$tmp/mnt" "$tmp/mirror" "$@"
}

# The log's last crash point and its number of flushes (the daemon may be
# mid-record: try again).
log_count() {
	local c i
	for i in 1 2 3 4 5; do
		c=$("$replay" "$tmp/log" --stats 2>/dev/null) && break
		sleep 0.2
	done
	[ -n "$c" ] && echo "$c" | awk '{ print $2, $6 }'
}

# Whether devid I is one of MISSING.
is_missing() {	# is_missing I
	case " ${MISSING:-} " in *" $1 "*) return 0 ;; esac
	return 1
}

# Mount IMAGE... at $tmp/vmnt with OPTIONS and require there the tree of
# the snapshot file EXPECTED. Prints why not.
mounted_tree_is() {	# mounted_tree_is WHAT OPTIONS EXPECTED IMAGE...
	local what=$1 opts=$2 expected=$3
	shift 3
	if ! timeout 120 "$mfs" mount -o "$opts" "$@" "$tmp/vmnt" 2>"$tmp/mount.err"; then
		echo "$what: mount -o $opts failed: $(head -1 "$tmp/mount.err")"
		return 1
	fi
	snapshot "$tmp/vmnt" >"$tmp/seen"
	timeout 120 "$mfs" umount "$tmp/vmnt" || { echo "$what: umount failed"; return 1; }
	if ! diff -u "$expected" "$tmp/seen" >"$tmp/diff"; then
		echo "$what: the tree differs from the one expected ($(basename "$expected"))"
		sed 's/^/# /' "$tmp/diff" | head -20 >&2
		return 1
	fi
}

# fsync every entry of the filesystem, noting the crash points around it
durable_point() {	# durable_point ROUND
	local before after
	before=$(log_count) || return 1
	(cd "$tmp/mnt" && find . ! -type l -print0 | xargs -0 sync --) || return 1
	snapshot "$tmp/mirror" >"$tmp/state.$1"
	after=$(log_count) || return 1
	echo "$1 $before $after" | awk '{ print $1, $2, $4, $3, $5 }' >>"$tmp/rounds"
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
	# (not two names of one file: mv refuses that)
	if [ -n "$f" ] && [ -n "$g" ] && ! [ "$tmp/mirror/$f" -ef "$tmp/mirror/$g" ]; then
		both mv -f "$f" "$g" || return 1
	fi
	pick_file	# write a temporary file, then replace a file with it
	f=$PICK
	if [ -n "$f" ]; then
		make_src
		both cp "$tmp/src" "tmp$r" || return 1
		snapshot "$tmp/mirror" "tmp$r" >>"$tmp/temps.$r"
		both mv -f "tmp$r" "$f" || return 1
	fi
	if [ $((RANDOM % 2)) = 0 ]; then	# unlink
		pick_file
		[ -z "$PICK" ] || both rm -f "$PICK" || return 1
	fi
	pick_file	# a symlink to a file (it may move or go later: dangling is fine)
	both ln -s "${PICK:-nowhere}" "l$r" || return 1
	if [ $((RANDOM % 2)) = 0 ]; then	# a hard link
		pick_file
		[ -z "$PICK" ] || both ln "$PICK" "h$r" || return 1
	fi
	pick_type l	# rename or remove a symlink
	if [ -n "$PICK" ]; then
		if [ $((RANDOM % 2)) = 0 ]; then
			both mv "$PICK" "m$r" || return 1
		else
			both rm "$PICK" || return 1
		fi
	fi
	for k in 1 2; do	# xattrs on files and directories
		if [ $((RANDOM % 3)) = 0 ]; then pick_type d; else pick_file; fi
		[ -z "$PICK" ] || both_xattr set "$PICK" "a$((RANDOM % 3))" "r$r.$k.$RANDOM" || return 1
	done
	pick_file	# remove an xattr a file has
	[ -z "$PICK" ] || both_xattr remove-first "$PICK" || return 1
	case $((RANDOM % 4)) in	# directories: nest, rename, remove an empty one
	0)
		pick_type d
		[ -z "$PICK" ] || both mkdir "$PICK/n$r" || return 1 ;;
	1)
		pick_type d
		[ -z "$PICK" ] || [ -e "$tmp/mirror/$PICK.r$r" ] || both mv "$PICK" "$PICK.r$r" || return 1 ;;
	2)
		PICK=$(cd "$tmp/mirror" && find . -mindepth 1 -type d -empty -printf '%P\n' | sort | head -1)
		[ -z "$PICK" ] || both rmdir "$PICK" || return 1 ;;
	esac
	return 0
}

# A failed workload leaves no mount behind for the next configuration.
abandon() {	# abandon WHY
	echo "$1"
	if mountpoint -q "$tmp/mnt" 2>/dev/null; then
		timeout 60 "$mfs" umount "$tmp/mnt" 2>/dev/null || umount -l "$tmp/mnt" 2>/dev/null
	fi
}

# Mount with the write log, run the rounds, unmount. Globals: devs (the
# members mounted); MISSING, if set, the devids (space-separated) absent
# from the logged mount.
run_workload() {	# run_workload SEED NDEV MKFS-OPTIONS...
	local seed=$1 ndev=$2 r i before
	shift 2
	rm -rf "$tmp"/*.img "$tmp/log" "$tmp/mirror" "$tmp"/state.* "$tmp"/temps.* "$tmp/rounds"
	mkdir -p "$tmp/mnt" "$tmp/vmnt" "$tmp/mirror"
	: >"$tmp/rounds"
	: >"$tmp/state.0"
	devs=()
	for i in $(seq 1 "$ndev"); do
		truncate -s 1G "$tmp/d$i.img"
		devs+=("$tmp/d$i.img")
	done
	timeout 60 "$mkfs" -q -f -K "$@" "${devs[@]}" || { echo "mkfs.mfs failed"; return 1; }
	RANDOM=$seed
	if [ -n "${MISSING:-}" ]; then
		# round 0 fills chunks striped over every member; then the
		# members MISSING are gone and the logged rounds run degraded
		timeout 60 "$mfs" mount "${devs[@]}" "$tmp/mnt" || { echo "mount failed"; return 1; }
		one_round 0 || { abandon "round 0 failed"; return 1; }
		snapshot "$tmp/mirror" >"$tmp/state.0"
		timeout 120 "$mfs" umount "$tmp/mnt" || { abandon "umount failed"; return 1; }
		for i in $MISSING; do
			unset "devs[$((i - 1))]"
			# (out of the device registry's sight: it would find it)
			mv "$tmp/d$i.img" "$tmp/gone$i.img"
		done
		devs=("${devs[@]}")
	fi
	for i in $(seq 1 "$ndev"); do
		is_missing "$i" || cp --sparse=always "$tmp/d$i.img" "$tmp/b$i.img"
	done
	# no timer commits: the fsyncs (and the unmount) decide the durable states
	MFS_WRITE_LOG=$tmp/log timeout 60 "$mfs" mount -o commit=86400${MISSING:+,degraded} \
		"${devs[@]}" "$tmp/mnt" || { echo "mount failed"; return 1; }
	before=$(log_count) || { abandon "cannot read the log"; return 1; }
	echo "0 $before $before" | awk '{ print $1, $2, $4, $3, $5 }' >>"$tmp/rounds"
	for r in $(seq 1 "$ROUNDS"); do
		one_round "$r" || { abandon "round $r failed"; return 1; }
		durable_point "$r" || { abandon "fsync of round $r failed"; return 1; }
	done
	# a last round nobody fsyncs: the unmount must make it durable
	r=$((ROUNDS + 1))
	one_round "$r" || { abandon "round $r failed"; return 1; }
	snapshot "$tmp/mirror" >"$tmp/state.$r"
	before=$(log_count) || { abandon "cannot read the log"; return 1; }
	timeout 120 "$mfs" umount "$tmp/mnt" || { abandon "umount failed"; return 1; }
	echo "$r $before $(log_count)" | awk '{ print $1, $2, $4, $3, $5 }' >>"$tmp/rounds"
	cp "$tmp/state.$r" "$tmp/state.final"
}

