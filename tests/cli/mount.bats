#!/usr/bin/env bats
# mfs mount / umount / mount.mfs and the mounted filesystem: finding members,
# exclusivity, ro, commit=, POSIX behaviour next to kernel btrfs, durability
# (unmount and crash), df figures, compression and permissions.

load helpers

# the common teardown, run after ours
eval "helpers_$(declare -f teardown)"

teardown() {
	# a daemon a test stopped goes on, or its mount could not be undone
	if [ -n "${T:-}" ] && [ -f "$T/.stopped" ]; then
		xargs -r kill -CONT <"$T/.stopped" 2>/dev/null
	fi
	mfs_cleanup_mounts
	if [ -n "${T:-}" ] && [ -f "$T/.fstab_marker" ]; then
		sed -i "/# $(cat "$T/.fstab_marker")\$/d" /etc/fstab
	fi
	if [ -n "${T:-}" ] && [ -f "$T/.mount_helper" ]; then
		rm -f /usr/sbin/mount.mfs
	fi
	if [ -n "${T:-}" ] && [ -f "$T/.rmdirs" ]; then
		xargs -r rmdir <"$T/.rmdirs" 2>/dev/null
	fi
	helpers_teardown
}

# mfs_fs PROFILE N [SIZE]: images img1..imgN with data and metadata PROFILE
mfs_fs() {
	make_images "$2" "${3:-1G}"
	mkfs.mfs -q -f -d "$1" -m "${4:-$1}" $(imgs "$2")
}

df_bytes() {
	df -B1 --output="$2" "$1" | tail -n 1 | tr -d ' '
}

# btrfs_mount DIR: kernel btrfs on a loop device, for side-by-side comparison
btrfs_mount() {
	local loop

	truncate -s 1G "$T/btrfs.img"
	loop=$(make_loop "$T/btrfs.img") || return 1
	mkfs.btrfs -q -f "$loop" >/dev/null || return 1
	mount_dev "$loop" "$1"
}

@test "mount, write, umount, check: umount waits for the server, so check runs at once and is clean" {
	mfs_fs raid1 2
	for round in 1 2 3; do
		mfs_mount "$T/img1" "$T/mnt"
		run awk -v m="$T/mnt" '$2 == m { print $1, $3 }' /proc/self/mounts
		assert_output "$T/img1 fuse.mfs"
		pid=$(mfs_daemon_pid "$T/mnt")
		head -c $((round * 3 * MiB + 17)) /dev/urandom >"$T/mnt/file$round"
		mkdir -p "$T/mnt/dir$round"
		run mfs umount "$T/mnt"
		assert_success
		# gone from the mount table and the server has exited when umount returns
		run is_mounted "$T/mnt"
		assert_failure
		[ ! -e "/proc/$pid" ] || [ "$(awk '{ print $3 }' "/proc/$pid/stat")" = Z ]
		run mfs check "$T/img1"
		assert_success
		assert_output --partial "no error found"
	done
	run mfs umount "$T/mnt"
	assert_failure
	assert_output --partial "is not a mounted mfs filesystem"
}

# waiting_or_gone PID OUT: the command PID said it waits (in OUT), or exited
waiting_or_gone() {
	grep -q "^waiting for the server" "$2" || ! kill -0 "$1" 2>/dev/null
}

@test "after a plain umount, a command waits for the server still writing its last commit" {
	mfs_fs raid1 2
	for cmd in check mount show; do
		mfs_mount -o commit=3600 "$T/img1" "$T/mnt"
		head -c $((3 * MiB)) /dev/urandom >"$T/mnt/$cmd"
		sum=$(sha256sum <"$T/mnt/$cmd")
		# umount(8) without umount.fuse.mfs (-i: an installed one is not
		# run) returns before the server is done: its last commit is held
		# (the test hook), the devices still its own
		echo 1 >"$T/hold-commit"
		umount -i "$T/mnt"
		wait_for_file "$T/hold-commit.held" 600
		case $cmd in
		check) mfs check "$T/img1" >"$T/cmd.out" 2>&1 & ;;
		mount) mfs mount "$T/img1" "$T/mnt" >"$T/cmd.out" 2>&1 & ;;
		# opens nothing exclusively: it would show the figures of the
		# commit before (FS bytes used without the file)
		show) mfs filesystem show "$T/img1" >"$T/cmd.out" 2>&1 & ;;
		esac
		pid=$!
		# it waits (and says so) instead of finding the images busy
		wait_until 600 waiting_or_gone $pid "$T/cmd.out"
		run cat "$T/cmd.out"
		assert_line --regexp "^waiting for the server of the previous mount \(pid [0-9]+\) to finish writing and let go of ($T/img[12]|its devices)\$"
		rm -f "$T/hold-commit" "$T/hold-commit.held"
		wait $pid
		run cat "$T/cmd.out"
		refute_output --partial "ERROR"
		if [ $cmd = check ]; then
			assert_output --partial "no error found"
		elif [ $cmd = show ]; then
			grep -v "^waiting for the server" "$T/cmd.out" >"$T/show.seen"
			mfs filesystem show "$T/img1" >"$T/show.after"
			run diff "$T/show.after" "$T/show.seen"
			assert_success
		else
			run sha256sum <"$T/mnt/$cmd"
			assert_output "$sum"
			mfs umount "$T/mnt"
		fi
	done
}

# in_sbin_namespace SCRIPT: run bash SCRIPT in a mount namespace of its own
# where /sbin has this build's umount.fuse.mfs and /run/mount (libmount's
# utab) is empty: nothing of it reaches the tests running beside this one
in_sbin_namespace() {
	mkdir -p "$T/sbin"
	ln -sf "$MFS_BUILD/umount.fuse.mfs" "$T/sbin/umount.fuse.mfs"
	unshare -m --propagation private bash -c '
		set -e
		# where umount(8) looks: /sbin, on Debian 12 a link to usr/sbin
		sbin=$(realpath /sbin)
		mount -t overlay overlay -o lowerdir="$T/sbin:$sbin" "$sbin"
		mkdir -p /run/mount
		mount -t tmpfs tmpfs /run/mount
		set +e
		bash "$1"' _ "$1"
}

@test "a plain umount(8) returns after the server's last commit (umount.fuse.mfs), -l at once" {
	mfs_fs raid1 2
	truncate -s 1G "$T/top.img"
	mkfs.mfs -q -f "$T/top.img"
	mkdir -p "$T/mnt" "$T/bind"
	export T MFS_BUILD
	cat >"$T/ns.sh" <<'EOF'
mfs=$MFS_BUILD/mfs
# a failure leaves no server behind: its mount is in this namespace only
trap 'pkill -CONT -f "^$mfs mount -o commit=3600 $T/"; umount -l "$T/bind" "$T/mnt" "$T/mnt" 2>/dev/null' EXIT
# server IMG: the pid of the server of IMG, mounted with a long commit interval
server() {
	"$mfs" mount -o commit=3600 "$1" "$T/mnt" || exit 1
	pgrep -f "^$mfs mount -o commit=3600 $1"
}
# gone PID: whether it has exited (a zombie at most: its parent not told yet)
gone() {
	local state
	state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)
	[ -z "$state" ] || [ "$state" = Z ]
}
await_hold() {
	local i
	for i in $(seq 1200); do [ -e "$T/hold-commit.held" ] && return; sleep 0.1; done
	echo "the server never reached its last commit"
	exit 1
}

# the entry of a server that died, its ID= dropped by libmount (2.38
# rewrites utab without it): replaced by the next mount's own
echo "SRC=$T/img1 TARGET=$T/mnt ROOT=/ OPTS=x-mfs-umount-helper" >/run/mount/utab
pid=$(server "$T/img1")
# the mount's entry tells umount(8) its type, fuse.mfs (statfs says "fuse")
grep -c "SRC=$T/img1 TARGET=$T/mnt ROOT=/ OPTS=x-mfs-umount-helper" /run/mount/utab
head -c 3000000 /dev/urandom >"$T/mnt/f"
sha256sum <"$T/mnt/f" >"$T/sum"
# umount waits while the last commit is held
echo 1 >"$T/hold-commit"
umount "$T/mnt" & u=$!
await_hold
kill -0 $u 2>/dev/null && echo "umount waits"
rm -f "$T/hold-commit.held"
wait $u
echo "umount status $?"
gone "$pid" && echo "server gone"
grep -c x-mfs-umount-helper /run/mount/utab
"$mfs" check "$T/img1" >/dev/null 2>&1 && echo "check clean"

# -l detaches without waiting, as the kernel does: umount returns while
# the server's last commit is still held
pid=$(server "$T/img1")
echo more >"$T/mnt/g"
echo 1 >"$T/hold-commit"
timeout 120 umount -l "$T/mnt"
echo "lazy status $?"
await_hold
gone "$pid" || echo "server still committing"
rm -f "$T/hold-commit.held"
while ! gone "$pid"; do sleep 0.1; done

# bound elsewhere too: unmounting one of the two does not wait for the
# server, which serves on; the last one does
pid=$(server "$T/img1")
mount --bind "$T/mnt" "$T/bind"
timeout 120 umount "$T/mnt"
echo "first of two status $?"
cat "$T/bind/g"
# (the helper by name: a bind mount has no utab entry of its own, so
# umount(8) would unmount it without the helper)
timeout 120 /sbin/umount.fuse.mfs "$T/bind"
echo "last status $?"
gone "$pid" && echo "server gone"

# two mounts on one mount point: the top one's server is the one waited for
low=$(server "$T/img1")
top=$(server "$T/top.img")
timeout 120 umount "$T/mnt"
echo "top status $?"
gone "$top" && echo "top server gone"
gone "$low" || echo "low server serves on"
cat "$T/mnt/g"

# a busy mount stays mounted, umount says so; -r remounts it read-only,
# and it keeps its entry (umount(8) removes one when the helper succeeds)
(cd "$T/mnt" && umount "$T/mnt" 2>&1; echo "busy status $?")
(cd "$T/mnt" && umount -r "$T/mnt" 2>&1; echo "busy -r status $?")
touch "$T/mnt/h" 2>/dev/null || echo "read-only"
grep -c "TARGET=$T/mnt " /run/mount/utab
# a stopped server is not waited for (the helper itself: umount(8) would
# stat the mount point, which a stopped server does not answer)
kill -STOP "$low"
timeout 120 /sbin/umount.fuse.mfs "$T/mnt" 2>&1
echo "stopped status $?"
kill -CONT "$low"
while ! gone "$low"; do sleep 0.1; done

# a server that unmounts itself (SIGTERM) takes its entry away
pid=$(server "$T/img1")
kill -TERM "$pid"
while ! gone "$pid"; do sleep 0.1; done
echo "terminated: $(grep -c x-mfs-umount-helper /run/mount/utab)"

# a killed server's mount taken away by mfs umount: its entry goes too
pid=$(server "$T/img1")
kill -KILL "$pid"
while ! gone "$pid"; do sleep 0.1; done
"$mfs" umount "$T/mnt" 2>/dev/null
echo "dead status $?"
grep -c x-mfs-umount-helper /run/mount/utab
exit 0
EOF
	run in_sbin_namespace "$T/ns.sh"
	assert_success
	assert_output --regexp "^1
umount waits
umount status 0
server gone
0
check clean
lazy status 0
server still committing
first of two status 0
more
last status 0
server gone
top status 0
top server gone
low server serves on
more
ERROR: cannot unmount $T/mnt: Device or resource busy
busy status 32
WARNING: $T/mnt is busy; remounted read-only
busy -r status 0
read-only
1
WARNING: the server of $T/img1 \(pid [0-9]+\) is stopped; not waiting for its last commit
stopped status 0
terminated: 0
dead status 0
0\$"
	# both files are in the last commits
	mfs_mount "$T/img1" "$T/mnt"
	run sha256sum <"$T/mnt/f"
	assert_output "$(cat "$T/sum")"
	run cat "$T/mnt/g"
	assert_output more
}

@test "the server keeps none of its caller's descriptors: a reader of mount's output gets its end" {
	mfs_fs raid1 2
	mkdir -p "$T/mnt"
	echo "$T/mnt" >>"$T/.mfs_mounts"
	# the command substitution reads until every writer of its pipe has
	# closed it: a server keeping fd 9 held it for as long as the mount
	run timeout 60 bash -c 'out=$(mfs mount "$1" "$2" 9>&1 3>&-); echo "returned [$out]"' _ \
		"$T/img1" "$T/mnt"
	assert_success
	assert_output "returned []"
	run is_mounted "$T/mnt"
	assert_success
	pid=$(mfs_daemon_pid "$T/mnt")
	run bash -c "ls -l /proc/$pid/fd | grep -c pipe:"
	assert_output 0
}

@test "SIGTERM to the server unmounts, the mount point given relative or not" {
	# the server works from /: it looked for a relative mount point there
	# and left the mount behind, dead ("Transport endpoint is not connected")
	local pid

	mfs_fs raid1 2
	mkdir -p "$T/mnt"
	echo "$T/mnt" >>"$T/.mfs_mounts"
	(cd "$T" && mfs mount img1 mnt 3>&-)
	echo kept >"$T/mnt/f"
	pid=$(mfs_daemon_pid "$T/mnt")
	kill -TERM "$pid"
	wait_pid_exit "$pid"
	run is_mounted "$T/mnt"
	assert_failure
	mfs_mount "$T/img1" "$T/mnt"
	run cat "$T/mnt/f"
	assert_output kept
	pid=$(mfs_daemon_pid "$T/mnt")
	kill -TERM "$pid"
	wait_pid_exit "$pid"
	run is_mounted "$T/mnt"
	assert_failure
}

@test "mount -t mfs and /etc/fstab go through /sbin/mount.mfs" {
	if [ -e /usr/sbin/mount.mfs ] &&
		[ "$(realpath /usr/sbin/mount.mfs)" != "$(realpath "$MFS_BUILD/mount.mfs")" ]; then
		skip "/usr/sbin/mount.mfs belongs to another build: $(realpath /usr/sbin/mount.mfs)"
	fi
	if [ ! -e /usr/sbin/mount.mfs ]; then
		ln -s "$MFS_BUILD/mount.mfs" /usr/sbin/mount.mfs
		touch "$T/.mount_helper"
	fi
	mfs_fs raid1 2
	mkdir -p "$T/mnt"
	echo "$T/mnt" >>"$T/.mfs_mounts"
	# members other than the named one come from the registry mkfs filled
	run mount -t mfs -o noatime,commit=5 "$T/img1" "$T/mnt" 3>&-
	assert_success
	run awk -v m="$T/mnt" '$2 == m { print $1, $3, $4 }' /proc/self/mounts
	assert_output --regexp "^$T/img1 fuse.mfs rw,noatime,"
	echo through-mount-t >"$T/mnt/a"
	mfs umount "$T/mnt"

	# fstab: a line of our own, found by mount point alone
	marker="mfs-bats-$$-$RANDOM"
	echo "$marker" >"$T/.fstab_marker"
	echo "$T/img1 $T/mnt mfs defaults,ro,device=$T/img2 0 0 # $marker" >>/etc/fstab
	run mount "$T/mnt" 3>&-
	assert_success
	# the device the line names is the source, not the one of device=
	# (mount -a tells a mounted line by it)
	run awk -v m="$T/mnt" '$2 == m { print $1, $3, substr($4, 1, 3) }' /proc/self/mounts
	assert_output "$T/img1 fuse.mfs ro,"
	run cat "$T/mnt/a"
	assert_output through-mount-t
	run touch "$T/mnt/b"
	assert_failure
	assert_output --partial "Read-only file system"
	mfs umount "$T/mnt"
	sed -i "/# $marker\$/d" /etc/fstab
	run grep -c "$marker" /etc/fstab
	assert_output 0
	run mfs check "$T/img1"
	assert_success
}

@test "members: the registry, -o device=, extra device arguments; a missing one is named" {
	mfs_fs raid1 3
	mkdir -p "$T/mnt"
	# mkfs registered the members: one path is enough
	mfs_mount "$T/img1" "$T/mnt"
	echo hello >"$T/mnt/f"
	mfs umount "$T/mnt"

	# a registry that knows nothing: only what the command line names is found
	rm -f "$MFS_REGISTRY"
	run --separate-stderr mfs mount "$T/img1" "$T/mnt"
	assert_failure
	assert_stderr_regex "^ERROR: device (2|3) is missing"
	assert_stderr_regex "use -o degraded"
	run is_mounted "$T/mnt"
	assert_failure
	run --separate-stderr mfs mount -o device="$T/img2" "$T/img1" "$T/mnt"
	assert_failure
	assert_stderr_line "ERROR: device 3 is missing; found the other members but not this one"
	assert_stderr_regex "-o device=PATH.*-o degraded"

	# -o device= names the others
	run mfs_mount -o device="$T/img2",device="$T/img3" "$T/img1" "$T/mnt"
	assert_success
	run cat "$T/mnt/f"
	assert_output hello
	mfs umount "$T/mnt"
	assert_no_registry

	# so do extra device arguments, in any order
	run mfs_mount "$T/img3" "$T/img1" "$T/img2" "$T/mnt"
	assert_success
	run cat "$T/mnt/f"
	assert_output hello
	mfs umount "$T/mnt"
	run mfs check "$T/img1" "$T/img2" "$T/img3"
	assert_success
}

@test "a mounted filesystem is not mounted twice nor opened by offline commands" {
	mfs_fs raid1 2
	truncate -s 1G "$T/other.img"
	mkfs.mfs -q -f -L other "$T/other.img"
	mkdir -p "$T/mnt2"
	for opts in rw ro; do
		mfs_mount -o "$opts" "$T/img1" "$T/mnt"
		for dev in img1 img2; do
			run --separate-stderr mfs mount "$T/$dev" "$T/mnt2"
			assert_failure
			assert_stderr_line "ERROR: $T/$dev is already mounted on $T/mnt (a filesystem can be mounted once)"
			run is_mounted "$T/mnt2"
			assert_failure
			run --separate-stderr mfs check "$T/$dev"
			assert_failure
			assert_stderr_line "ERROR: $T/$dev is mounted or in use by another program"
			run --separate-stderr mkfs.mfs -f "$T/$dev"
			assert_failure
			# (as mkfs.btrfs: the member named as the source is "mounted on",
			# the others are busy)
			assert_stderr_regex "^ERROR: ($T/$dev is mounted on $T/mnt|unable to open $T/$dev: Device or resource busy)\$"
			run --separate-stderr mfs filesystem label "$T/$dev" NEW
			assert_failure
			assert_stderr_line "ERROR: $T/$dev is mounted or in use by another program"
		done
		# the image itself, without the registry's help, still cannot be mounted twice
		run --separate-stderr env MFS_REGISTRY="$T/none" mfs mount -o ro "$T/img2" "$T/img1" "$T/mnt2"
		assert_failure
		run is_mounted "$T/mnt2"
		assert_failure
		# another filesystem mounts beside it
		run mfs_mount "$T/other.img" "$T/mnt3"
		assert_success
		mfs umount "$T/mnt3"
		mfs umount "$T/mnt"
	done
	# nothing was changed by the refused commands
	run mfs filesystem label "$T/img1"
	assert_output ""
	run mfs check "$T/img1"
	assert_success
}

@test "-o ro: every kind of write fails with EROFS and nothing is written" {
	mfs_fs raid1 2
	mfs_mount "$T/img1" "$T/mnt"
	echo data >"$T/mnt/f"
	mkdir "$T/mnt/d"
	mfs umount "$T/mnt"
	gen=$(super_field "$T/img1" generation)
	fp1=$(fingerprint "$T/img1")
	fp2=$(fingerprint "$T/img2")

	mfs_mount -o ro "$T/img1" "$T/mnt"
	run awk -v m="$T/mnt" '$2 == m { split($4, o, ","); print o[1] }' /proc/self/mounts
	assert_output ro
	run cat "$T/mnt/f"
	assert_output data
	for cmd in "touch $T/mnt/new" "mkdir $T/mnt/d2" "rm $T/mnt/f" "mv $T/mnt/f $T/mnt/g" \
		"chmod 600 $T/mnt/f" "ln -s x $T/mnt/l" "truncate -s 0 $T/mnt/f" "rmdir $T/mnt/d"; do
		run $cmd
		assert_failure
		assert_output --partial "Read-only file system"
	done
	run bash -c "echo more >>'$T/mnt/f'"
	assert_failure
	assert_output --partial "Read-only file system"
	run "$MFS_PY" -c 'import os, sys; os.setxattr(sys.argv[1], "user.x", b"1")' "$T/mnt/f"
	assert_failure
	assert_output --partial "Errno 30"
	mfs umount "$T/mnt"
	assert_equal "$(super_field "$T/img1" generation)" "$gen"
	assert_untouched "$T/img1" "$fp1"
	assert_untouched "$T/img2" "$fp2"
}

# committed_size IMG NAME: the size the last commit on IMG records for the
# file NAME of the top directory (nothing while it records no such file)
committed_size() {
	mfs inspect-internal dump-tree -t fs "$1" 2>/dev/null | awk -v n="$2" '
		/location key \(/ { loc = $3; sub(/\(/, "", loc) }
		$1 == "name:" && $2 == n { ino = loc }
		ino != "" && $0 ~ "key \\(" ino " INODE_ITEM 0\\) itemoff" {
			getline
			for (i = 1; i < NF; i++)
				if ($i == "size") print $(i + 1)
			exit
		}'
}

# is_committed IMG NAME SIZE
is_committed() {
	[ "$(committed_size "$1" "$2")" = "$3" ]
}

@test "-o commit=N: the server commits by itself every N seconds" {
	mfs_fs single 1
	mfs_mount -o commit=1 "$T/img1" "$T/mnt"
	gen=$(super_field "$T/img1" generation)
	head -c 300000 /dev/urandom >"$T/mnt/committed"
	sum=$(sha256sum <"$T/mnt/committed")
	# no sync: the server's own commit puts the whole file on the disk
	wait_until 600 is_committed "$T/img1" committed 300000
	(($(super_field "$T/img1" generation) > gen))
	# a crash now loses nothing: the commit was on its own
	mfs_kill9 "$T/mnt"
	mfs_mount "$T/img1" "$T/mnt"
	run sha256sum <"$T/mnt/committed"
	assert_output "$sum"
	mfs umount "$T/mnt"

	# a long interval: nothing reaches the disk without a sync (the sleep
	# is no wait for anything: a window in which a commit must not come,
	# passed by a correct server however slow the machine)
	mfs_mount -o commit=3600 "$T/img1" "$T/mnt"
	gen=$(super_field "$T/img1" generation)
	echo later >"$T/mnt/later"
	sleep 2.5
	assert_equal "$(super_field "$T/img1" generation)" "$gen"
	assert_equal "$(committed_size "$T/img1" later)" ""
	mfs umount "$T/mnt"
	(($(super_field "$T/img1" generation) > gen))

	run mfs mount -o commit=0 "$T/img1" "$T/mnt"
	assert_failure
	assert_output --partial "invalid commit interval"
}

@test "POSIX behaviour matches kernel btrfs: files, links, special files, xattrs, rename, truncate, sparse, times" {
	command -v mkfs.btrfs >/dev/null || skip "mkfs.btrfs not installed"
	btrfs_mount "$T/btrfs"
	mfs_fs raid1 2
	mfs_mount "$T/img1" "$T/mnt"
	mkdir "$T/btrfs/p" "$T/mnt/p"
	run "$MFS_PY" "$BATS_TEST_DIRNAME/posix-probe.py" "$T/btrfs/p"
	assert_success
	echo "$output" >"$T/btrfs.out"
	run "$MFS_PY" "$BATS_TEST_DIRNAME/posix-probe.py" "$T/mnt/p"
	assert_success
	echo "$output" >"$T/mfs.out"
	(($(wc -l <"$T/mfs.out") >= 100))
	run diff -u "$T/btrfs.out" "$T/mfs.out"
	assert_success

	# the same again after a remount: what was stored is what is read
	mfs umount "$T/mnt"
	mfs_mount "$T/img1" "$T/mnt"
	for d in "$T/btrfs/p" "$T/mnt/p"; do
		tree_state "$d" >"$d.state"
	done
	(($(wc -l <"$T/mnt/p.state") > 400))
	run diff -u "$T/btrfs/p.state" "$T/mnt/p.state"
	assert_success
	mfs umount "$T/mnt"
	run mfs check "$T/img1"
	assert_success
}

@test "set-user-ID, set-group-ID and file capabilities on write, truncate and chown match kernel btrfs" {
	# the server clears them itself (FUSE_HANDLE_KILLPRIV_V2, fuse/killpriv.c)
	command -v mkfs.btrfs >/dev/null || skip "mkfs.btrfs not installed"
	btrfs_mount "$T/btrfs"
	mfs_fs single 1
	mfs_mount "$T/img1" "$T/mnt"
	mkdir "$T/btrfs/p" "$T/mnt/p"
	run "$MFS_PY" "$BATS_TEST_DIRNAME/privs-probe.py" "$T/btrfs/p" run
	assert_success
	echo "$output" >"$T/btrfs.out"
	run "$MFS_PY" "$BATS_TEST_DIRNAME/privs-probe.py" "$T/mnt/p" run
	assert_success
	echo "$output" >"$T/mfs.out"
	(($(grep -c '0o755' "$T/mfs.out") >= 10))
	run diff -u "$T/btrfs.out" "$T/mfs.out"
	assert_success
	# what the server cleared is on disk
	mfs umount "$T/mnt"
	mfs_mount "$T/img1" "$T/mnt"
	run "$MFS_PY" "$BATS_TEST_DIRNAME/privs-probe.py" "$T/mnt/p" list
	assert_success
	run diff -u <(grep '^list' "$T/btrfs.out") <(echo "$output")
	assert_success
	mfs umount "$T/mnt"
}

@test "write(2) through the cache asks the server nothing: no security.capability round trip per call" {
	mfs_fs single 1
	mkdir -p "$T/mnt"
	echo "$T/mnt" >>"$T/.mfs_mounts"
	mfs mount -d "$T/img1" "$T/mnt" >"$T/requests.log" 2>&1 3>&- &
	echo $! >>"$T/.pids"
	wait_until 60 is_mounted "$T/mnt"
	dd if=/dev/zero of="$T/mnt/f" bs=512 count=300 status=none
	dd if=/dev/zero of="$T/mnt/f" bs=4k count=300 conv=notrunc status=none
	n=$(grep -c 'opcode: GETXATTR' "$T/requests.log")
	mfs umount "$T/mnt"
	# the file's first write asks, the kernel keeps the answer until it
	# refreshes the file's attributes (each second at most: a slow run
	# asks a few times more); one per write without KILLPRIV_V2
	((n < 30)) || { echo "$n GETXATTR requests for 600 writes"; false; }
}

@test "POSIX ACLs (setfacl/getfacl) behave as on kernel btrfs: mode sync, chmod, default ACLs" {
	command -v setfacl >/dev/null || skip "acl not installed (scripts/install-deps.sh)"
	command -v mkfs.btrfs >/dev/null || skip "mkfs.btrfs not installed"
	btrfs_mount "$T/btrfs"
	mfs_fs single 1
	mfs_mount "$T/img1" "$T/mnt"
	for d in "$T/btrfs" "$T/mnt"; do
		(
			cd "$d"
			umask 022
			touch f
			setfacl -m u:1234:rw,g:99:r f
			getfacl -n f
			stat -c '%A' f
			chmod 640 f
			getfacl -n --omit-header f
			setfacl -m u::rwx,g::r,o::- f # says no more than the mode
			stat -c '%A' f
			setfacl -b f
			getfacl -n --omit-header f
			"$MFS_PY" -c 'import os; print(sorted(os.listxattr("f")))'
			mkdir dacl
			setfacl -d -m u:55:rwx,g:77:rx dacl
			touch dacl/child
			mkdir dacl/sub
			mkfifo dacl/fifo
			getfacl -n --omit-header dacl/child dacl/sub dacl/fifo
			stat -c '%n %A' dacl/child dacl/sub dacl/fifo
			umask 077
			touch dacl/masked # the default ACL, not the umask, decides
			stat -c '%n %A' dacl/masked
			mkdir plain
			touch plain/umasked
			stat -c '%n %A' plain/umasked
		) >"$d.acl" 2>&1
	done
	run diff -u "$T/btrfs.acl" "$T/mnt.acl"
	assert_success
	grep -q 'user:55:rwx' "$T/mnt.acl"
	grep -qx -- '-rw-rw-r--' "$T/mnt.acl"
	mfs umount "$T/mnt"
	# stored: the same after a remount
	mfs_mount "$T/img1" "$T/mnt"
	run getfacl -n --omit-header "$T/mnt/dacl/child"
	assert_line "user:55:rwx	#effective:rw-"
	mfs umount "$T/mnt"
	run mfs check "$T/img1"
	assert_success
}

# listing_probe DIR: namespace and attribute changes, each followed at once
# by ls -ln of the directory (the kernel's cached attributes) and again after
# the kernel dropped its dentries and inodes (attributes from readdirplus).
# Times, directory sizes and directory link counts (always 1 on btrfs)
# differ between the filesystems and are left out.
listing_probe() {
	local d=$1

	listing() {
		echo "== $1"
		ls -lnA --time-style=+ "$d" | awk '$1 != "total" { if ($1 ~ /^d/) $2 = $5 = "-"; print }'
		echo 2 >/proc/sys/vm/drop_caches
		ls -lnA --time-style=+ "$d" | awk '$1 != "total" { if ($1 ~ /^d/) $2 = $5 = "-"; print }'
	}
	(
		cd "$d" || exit 1
		umask 022
		echo a >a
		echo bb >b
		mkdir sub
		listing created
		ln a a2
		ln a sub/a3
		listing linked
		rm a2
		listing unlinked
		chmod 600 b
		chown 123:456 a
		listing chmod-chown
		mv b c
		listing renamed
		echo longer-contents >>a
		truncate -s 5000 c
		listing resized
		mkdir sub/x sub/y
		listing mkdir
		mv sub/x .
		listing moved-dir
		rmdir x
		rmdir sub/y
		listing rmdir
		echo t >t
		ln t t2
		mv c t
		listing rename-over-linked
		mv -T sub sub2
		ln -s a sym
		mkfifo fifo
		listing symlink-fifo
		if command -v setfacl >/dev/null; then
			setfacl -m u:1234:r,m::rw a
			listing acl-mode
		fi
		rm a sub2/a3 t2
		listing removed
		# names looked up while missing (cached as missing), then made
		stat n1 n2 n3 n4 n5 sub2/n6 >/dev/null 2>&1 || true
		ln t n1
		mv fifo n2
		mkdir n3
		ln -s t n4
		echo n5 >n5
		mv n3 sub2/n6
		stat -c '%n %F' n1 n2 n4 n5 sub2/n6
		listing made-after-lookup
	)
}

@test "ls -l right after link, unlink, rename, chmod, resize, mkdir, rmdir shows what btrfs shows" {
	command -v mkfs.btrfs >/dev/null || skip "mkfs.btrfs not installed"
	btrfs_mount "$T/btrfs"
	mfs_fs raid1 2
	mfs_mount "$T/img1" "$T/mnt"
	mkdir "$T/btrfs/l" "$T/mnt/l"
	listing_probe "$T/btrfs/l" >"$T/btrfs.ls" 2>&1
	listing_probe "$T/mnt/l" >"$T/mnt.ls" 2>&1
	(($(wc -l <"$T/mnt.ls") > 80))
	run diff -u "$T/btrfs.ls" "$T/mnt.ls"
	assert_success
	# directory link counts (2 + subdirectories) follow mkdir, rename and rmdir
	cd "$T/mnt"
	mkdir -p p/q p/r
	run bash -c 'ls -lnd p; echo 2 >/proc/sys/vm/drop_caches; ls -ln | grep " p$"'
	assert_line --index 0 --regexp '^drwxr-xr-x 4 '
	assert_line --index 1 --regexp '^drwxr-xr-x 4 '
	mv p/q .
	run bash -c 'ls -ln | grep -E " (p|q)$"'
	assert_line --index 0 --regexp '^drwxr-xr-x 3 .* p$'
	assert_line --index 1 --regexp '^drwxr-xr-x 2 .* q$'
	rmdir p/r
	run bash -c 'ls -ln | grep " p$"; echo 2 >/proc/sys/vm/drop_caches; ls -ln | grep " p$"'
	assert_line --index 0 --regexp '^drwxr-xr-x 2 '
	assert_line --index 1 --regexp '^drwxr-xr-x 2 '
	# a file the kernel knows only from a listing counts as looked up: open,
	# unlinked, it stays readable until closed
	echo kept >open-unlinked
	echo 2 >/proc/sys/vm/drop_caches
	ls -l >/dev/null
	exec 5<open-unlinked
	rm open-unlinked
	echo 2 >/proc/sys/vm/drop_caches
	run cat <&5
	exec 5<&-
	assert_output kept
	cd "$T"
	# hard links counted right in a listing of many entries (several readdirplus replies)
	mkdir "$T/mnt/many"
	for i in $(seq 1 600); do
		echo "$i" >"$T/mnt/many/f$i"
	done
	for i in $(seq 1 600 | awk '$1 % 3 == 0'); do
		ln "$T/mnt/many/f$i" "$T/mnt/many/g$i"
	done
	echo 2 >/proc/sys/vm/drop_caches
	run bash -c "ls -ln '$T/mnt/many' | awk '\$2 == 2' | wc -l"
	assert_output 400
	run bash -c "ls -ln '$T/mnt/many' | awk 'NR > 1' | wc -l"
	assert_output 800
	mfs umount "$T/mnt"
	run mfs check "$T/img1"
	assert_success
}

@test "fallocate, punch hole, zero range, SEEK_DATA/SEEK_HOLE and nanosecond times match kernel btrfs" {
	command -v mkfs.btrfs >/dev/null || skip "mkfs.btrfs not installed"
	btrfs_mount "$T/btrfs"
	mfs_fs single 1
	mfs_mount "$T/img1" "$T/mnt"
	head -c $((8 * MiB)) /dev/urandom >"$T/random"
	for d in "$T/btrfs" "$T/mnt"; do
		(
			cd "$d"
			fallocate -l 8M fa
			stat -c '%s %b' fa
			fallocate -n -o 8M -l 4M fa
			stat -c '%s %b' fa
			dd if="$T/random" of=fa bs=1M count=8 conv=notrunc status=none
			fallocate -p -o 1M -l 2M fa
			stat -c '%s %b' fa
			"$MFS_PY" -c 'import os; f = os.open("fa", 0); print(os.lseek(f, 0, os.SEEK_HOLE), os.lseek(f, 3 << 20, os.SEEK_DATA))'
			cmp -n 2M -i 1M fa /dev/zero && echo punched reads zero
			cmp -n 1M fa "$T/random" && echo head intact
			cmp -n 5M -i 3M fa "$T/random" && echo tail intact
			head -c 1M "$T/random" >fz
			fallocate -z -o 1000 -l 5000 fz
			cmp -n 5000 -i 1000 fz /dev/zero && echo zeroed
			fallocate -z -o 512K -l 2M fz
			stat -c '%s' fz
			fallocate -n -z -o 4M -l 1M fz
			stat -c '%s' fz
			sha256sum <fz
			fallocate -d fa # dig holes where it reads zero
			stat -c '%s' fa
			sha256sum <fa
			fallocate -c -o 0 -l 4096 fa 2>&1 | sed 's/^fallocate: //'
			truncate -s 100M sparse
			echo tail >>sparse
			stat -c '%s %b' sparse
			touch -d '2021-03-04 05:06:07.123456789' t
			touch -a -d '1969-12-31 23:59:58.5' t
			stat -c '%y|%x' t
			TZ=UTC touch -m -d '2262-04-11 23:47:16.854775807' t
			stat -c '%Y' t
		) >"$d.fa" 2>&1
	done
	run diff -u "$T/btrfs.fa" "$T/mnt.fa"
	assert_success
	grep -q 'punched reads zero' "$T/mnt.fa"
	grep -q 'zeroed' "$T/mnt.fa"
	mfs umount "$T/mnt"
	# and it all survives a remount
	mfs_mount "$T/img1" "$T/mnt"
	run env TZ=UTC stat -c '%y' "$T/mnt/t"
	assert_output --regexp '^2262-04-11 23:47:16.854775807'
	run cmp -n 5M -i 3M "$T/mnt/fa" "$T/random"
	assert_success
	mfs umount "$T/mnt"
	run mfs check "$T/img1"
	assert_success
}

@test "statfs: block size, name length and figures df reads" {
	mfs_fs single 1
	mfs_mount "$T/img1" "$T/mnt"
	run stat -f -c '%s %l %T' "$T/mnt"
	assert_output "4096 255 fuseblk"
	size=$(df_bytes "$T/mnt" size)
	avail=$(df_bytes "$T/mnt" avail)
	((size > 600 * MiB && size <= GiB))
	((avail <= size))
	mfs umount "$T/mnt"
}

@test "durability across unmount/mount: contents, sizes, modes, owners, times, links" {
	mfs_fs raid1 2
	mfs_mount "$T/img1" "$T/mnt"
	m=$T/mnt
	mkdir -p "$m/a/b/c" "$m/empty"
	for s in 0 1 4095 4096 4097 65535 65536 65537 1000000 $((4 * MiB)) $((4 * MiB + 1)) \
		$((9 * MiB + 12345)) $((17 * MiB)); do
		head -c "$s" /dev/urandom >"$m/a/f$s"
	done
	for i in $(seq 1 200); do
		echo "small file $i" >"$m/a/b/s$i"
	done
	yes "compressible line" | head -c $((6 * MiB)) >"$m/a/b/c/text"
	truncate -s 50M "$m/a/sparse"
	echo middle | dd of="$m/a/sparse" bs=1 seek=$((20 * MiB)) conv=notrunc status=none
	ln "$m/a/f4096" "$m/a/b/hardlink"
	ln -s ../f65536 "$m/a/b/symlink"
	mkfifo "$m/a/fifo"
	chmod 700 "$m/a/b/c"
	chown 1000:2000 "$m/a/f1"
	touch -d '2001-02-03 04:05:06.789' "$m/a/f0"
	"$MFS_PY" -c 'import os, sys; os.setxattr(sys.argv[1], "user.k", b"v" * 100)' "$m/a/f1"
	state() {
		(cd "$1" && find . -printf '%p %y %m %U %G %s %n %l %T@\n' | sort) && tree_sums "$1" &&
			xattr_dump "$1"
	}
	before=$(state "$m")
	mfs umount "$m"
	run mfs check "$T/img1"
	assert_success
	mfs_mount "$T/img1" "$m"
	after=$(state "$m")
	assert_equal "$after" "$before"
	# and once more, after changes on the remounted filesystem
	rm "$m/a/f65535"
	mv "$m/a/f1" "$m/a/b/moved"
	head -c $((5 * MiB)) /dev/urandom >>"$m/a/f4097"
	before=$(state "$m")
	mfs umount "$m"
	mfs_mount "$T/img2" "$m"
	assert_equal "$(state "$m")" "$before"
	mfs umount "$m"
	run mfs check "$T/img1"
	assert_success
}

@test "fsync, then kill -9 of the server: after remount the fsynced file is intact" {
	mfs_fs raid1 2
	mfs_mount -o commit=3600 "$T/img1" "$T/mnt"
	echo before >"$T/mnt/old"
	mfs umount "$T/mnt"
	mfs_mount -o commit=3600 "$T/img1" "$T/mnt"
	head -c $((6 * MiB + 333)) /dev/urandom >"$T/synced.src"
	"$MFS_PY" - "$T/synced.src" "$T/mnt/dir/synced" <<'PY'
import os, sys
os.makedirs(os.path.dirname(sys.argv[2]))
with open(sys.argv[1], "rb") as src, open(sys.argv[2], "wb") as dst:
    dst.write(src.read())
    dst.flush()
    os.fsync(dst.fileno())
d = os.open(os.path.dirname(sys.argv[2]), os.O_RDONLY)
os.fsync(d)
PY
	# more writes that were never synced
	head -c $((3 * MiB)) /dev/urandom >"$T/mnt/unsynced"
	rm "$T/mnt/old"
	mfs_kill9 "$T/mnt"
	run is_mounted "$T/mnt"
	assert_failure
	# what is on the devices is a consistent filesystem
	run mfs check "$T/img1"
	assert_success
	mfs_mount "$T/img1" "$T/mnt"
	run cmp "$T/synced.src" "$T/mnt/dir/synced"
	assert_success
	# after the crash the filesystem is fully usable
	echo after >"$T/mnt/new"
	mfs umount "$T/mnt"
	run mfs check "$T/img1"
	assert_success
}

@test "umount works when the root directory cannot be read" {
	mfs_fs single 1
	mfs_mount "$T/img1" "$T/mnt"
	# enough entries that the root's items are not all in what the mount reads
	mkdir "$T/mnt/many"
	for ((n = 0; n < 3000; n++)); do echo "$n"; done | (cd "$T/mnt/many" && xargs touch)
	mfs umount "$T/mnt"
	# every read after the open fails
	MFS_FAULT="read:+1:s@img1" mfs_mount "$T/img1" "$T/mnt"
	run ls "$T/mnt"
	assert_failure
	run --separate-stderr mfs umount "$T/mnt"
	assert_success
	assert_stderr_regex "^WARNING: cannot reach the root directory of $T/mnt \(Input/output error\); unmounting anyway"
	run is_mounted "$T/mnt"
	assert_failure
	# the server is gone: the image can be checked at once
	run mfs check "$T/img1"
	assert_success
}

@test "df: raid0 ~2 GiB, raid1 ~1 GiB (not 2), raid5 ~2 GiB; 100 MiB on raid1 costs ~100 MiB of Avail" {
	# raid0 and raid1 over 2 x 1 GiB (metadata raid1 for both)
	mfs_fs raid0 2 1G raid1
	mfs_mount "$T/img1" "$T/mnt"
	raid0=$(df_bytes "$T/mnt" size)
	mfs umount "$T/mnt"
	mfs_fs raid1 2 1G raid1
	mfs_mount "$T/img1" "$T/mnt"
	raid1=$(df_bytes "$T/mnt" size)
	echo "# raid0 $raid0 raid1 $raid1" >&3
	((raid0 > 3 * GiB / 2 && raid0 < 5 * GiB / 2))
	((raid1 > 3 * GiB / 4 && raid1 < 5 * GiB / 4))
	((raid1 * 10 < raid0 * 6))
	# 100 MiB written to raid1 takes 100 MiB of Avail, not 200
	avail=$(df_bytes "$T/mnt" avail)
	head -c $((100 * MiB)) /dev/urandom >"$T/mnt/f"
	sync "$T/mnt/f"
	used=$((avail - $(df_bytes "$T/mnt" avail)))
	echo "# raid1: 100 MiB written, Avail down by $((used / MiB)) MiB" >&3
	((used > 90 * MiB && used < 130 * MiB))
	mfs umount "$T/mnt"

	# raid5 over 3 x 1 GiB (metadata raid5 too: raid1 metadata would take
	# 512 MiB of raw space, a quarter of the 2 GiB)
	mfs_fs raid5 3 1G raid5
	mfs_mount "$T/img1" "$T/mnt"
	raid5=$(df_bytes "$T/mnt" size)
	echo "# raid5 $raid5" >&3
	((raid5 > 3 * GiB / 2 && raid5 < 5 * GiB / 2))
	((raid5 > raid1 * 3 / 2))
	avail=$(df_bytes "$T/mnt" avail)
	head -c $((60 * MiB)) /dev/urandom >"$T/mnt/f"
	sync "$T/mnt/f"
	used=$((avail - $(df_bytes "$T/mnt" avail)))
	((used > 50 * MiB && used < 80 * MiB))
	mfs umount "$T/mnt"
}

@test "-o compress=zlib stores compressible data smaller and reads it back; random data too" {
	yes "mfs compression test line, repeated and repeated" | head -c $((25 * MiB)) >"$T/text"
	head -c $((25 * MiB)) /dev/zero >"$T/zeros"
	head -c $((8 * MiB)) /dev/urandom >"$T/random"
	for c in none zlib; do
		mkdir -p "$T/$c"
		truncate -s 1G "$T/$c/img"
		mkfs.mfs -q -f "$T/$c/img"
		if [ $c = zlib ]; then
			mfs_mount -o compress=zlib "$T/$c/img" "$T/mnt"
		else
			mfs_mount "$T/$c/img" "$T/mnt"
		fi
		cp "$T/text" "$T/zeros" "$T/mnt/"
		mfs umount "$T/mnt"
		eval "used_$c=$(super_field "$T/$c/img" bytes_used)"
	done
	echo "# 50 MiB of text and zeros: $used_none bytes plain, $used_zlib bytes with zlib" >&3
	((used_none >= 50 * MiB))
	((used_zlib * 10 < used_none))
	run mfs filesystem show "$T/zlib/img"
	assert_output --regexp 'FS bytes used [0-9.]+(KiB|MiB)'

	# read back identical, with and without the option on the next mount
	for opt in "" "-o compress=zlib:9"; do
		mfs_mount $opt "$T/zlib/img" "$T/mnt"
		cmp "$T/text" "$T/mnt/text"
		cmp "$T/zeros" "$T/mnt/zeros"
		mfs umount "$T/mnt"
	done
	# incompressible data reads back identical and does not grow
	mfs_mount -o compress=zlib "$T/zlib/img" "$T/mnt"
	cp "$T/random" "$T/mnt/random"
	dd if="$T/random" of="$T/mnt/partial" bs=4096 count=333 status=none
	echo "appended" >>"$T/mnt/text"
	mfs umount "$T/mnt"
	grown=$(($(super_field "$T/zlib/img" bytes_used) - used_zlib))
	((grown < 8 * MiB + 4 * MiB))
	mfs_mount "$T/zlib/img" "$T/mnt"
	cmp "$T/random" "$T/mnt/random"
	cmp -n $((333 * 4096)) "$T/random" "$T/mnt/partial"
	run tail -c 9 "$T/mnt/text"
	assert_output appended
	mfs umount "$T/mnt"
	run mfs check "$T/zlib/img"
	assert_success

	run mfs mount -o compress=lzo "$T/zlib/img" "$T/mnt"
	assert_failure
	assert_output --partial "unsupported compression 'lzo'"
}

@test "permissions: another user cannot read 0600 files or write root's directories, nor run admin operations" {
	id mfstest >/dev/null 2>&1 || useradd -M -N -s /usr/sbin/nologin mfstest
	# a mount point the user can reach
	mnt=$(mktemp -d /tmp/mfs-perm.XXXXXX)
	echo "$mnt" >>"$T/.rmdirs"
	chmod 755 "$mnt"
	mfs_fs single 1
	mfs_mount "$T/img1" "$mnt"
	chmod 755 "$mnt"
	echo secret >"$mnt/secret"
	chmod 600 "$mnt/secret"
	echo public >"$mnt/public"
	chmod 644 "$mnt/public"
	mkdir -m 755 "$mnt/rootdir"
	mkdir -m 755 "$mnt/userdir"
	chown mfstest "$mnt/userdir"
	as_user() { runuser -u mfstest -- "$@"; }

	run as_user cat "$mnt/secret"
	assert_failure
	assert_output --partial "Permission denied"
	run as_user cat "$mnt/public"
	assert_success
	assert_output public
	run as_user touch "$mnt/rootdir/x"
	assert_failure
	assert_output --partial "Permission denied"
	run as_user mkdir "$mnt/rootdir/y"
	assert_failure
	run as_user rm "$mnt/public"
	assert_failure
	run as_user bash -c "echo x >>'$mnt/public'"
	assert_failure
	assert_output --partial "Permission denied"
	run as_user chmod 666 "$mnt/public"
	assert_failure
	assert_output --partial "Operation not permitted"
	run as_user chown mfstest "$mnt/public"
	assert_failure
	# the user's own directory works, with the user's ids
	run as_user bash -c "echo mine >'$mnt/userdir/f' && cat '$mnt/userdir/f'"
	assert_success
	assert_output mine
	run stat -c '%U %G' "$mnt/userdir/f"
	assert_output "mfstest $(id -gn mfstest)"
	# root still reads everything
	run cat "$mnt/secret"
	assert_output secret

	# admin operations: refused to the user, allowed to root
	run as_user "$MFS_BUILD/mfs" umount "$mnt"
	assert_failure
	assert_output --partial "Operation not permitted"
	is_mounted "$mnt"
	# an admin ioctl: pause the restripe (nothing runs: the call itself works)
	pause_ioctl='import fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
req = (3 << 30) | (8 << 16) | (0xE5 << 8) | 12	# MFS_IOC_RESTRIPE_CTL
try:
    fcntl.ioctl(fd, req, bytearray(struct.pack("<Ii", 1, 0)))
    print("ok")
except OSError as e:
    print(os.strerror(e.errno))'
	run as_user "$MFS_PY" -c "$pause_ioctl" "$mnt"
	assert_output "Operation not permitted"
	run "$MFS_PY" -c "$pause_ioctl" "$mnt"
	assert_output ok
	# a commit is not an admin operation (as btrfs filesystem sync, or fsync)
	run as_user "$MFS_BUILD/mfs" filesystem sync "$mnt"
	assert_success
	run as_user "$MFS_BUILD/mfs" device stats "$mnt"
	assert_failure
	assert_output --partial "Operation not permitted"
	# without CAP_SYS_ADMIN even uid 0 is refused
	run setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin "$MFS_PY" -c "$pause_ioctl" "$mnt"
	assert_output "Operation not permitted"
	mfs umount "$mnt"
	run mfs check "$T/img1"
	assert_success
}

@test "times of files written through the cache are the kernel's after remount" {
	# writeback of a file still open (here by sync) sends its data (WRITE)
	# and its times (SETATTR) without waiting between them, and the
	# server may run them in either order: a WRITE run last must not stamp
	# a later time of its own (the delay makes it run last)
	mfs_fs single 1
	MFS_TEST_WRITE_DELAY_MS=300 mfs_mount "$T/img1" "$T/mnt"
	"$MFS_PY" - "$T/mnt/f" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, os.urandom(300000))
os.sync()
os.close(fd)
PY
	before=$(stat -c '%s %Y.%y %Z.%z' "$T/mnt/f")
	mfs umount "$T/mnt"
	mfs_mount "$T/img1" "$T/mnt"
	assert_equal "$(stat -c '%s %Y.%y %Z.%z' "$T/mnt/f")" "$before"
	mfs umount "$T/mnt"
}

@test "a file written right after its create is never dated before its creation" {
	# The kernel stamps cached writes with its coarse clock (a tick); a
	# create stamped by the server's fine clock was later than the write
	# that followed it in the same tick (and cost a SETATTR per new file).
	mfs_fs single 1
	mfs_mount "$T/img1" "$T/mnt"
	cat >"$T/order.py" <<'PY'
import os, sys
d, first = sys.argv[1], sys.argv[2] == "create"
bad = []
for i in range(50):
    p = os.path.join(d, "t%d" % i)
    if first:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        born = os.fstat(fd).st_ctime_ns
        os.write(fd, b"x" * 100)
        os.close(fd)
        os.setxattr(p, "user.born", str(born).encode())
    born = int(os.getxattr(p, "user.born"))
    st = os.stat(p)
    if st.st_mtime_ns < born or st.st_ctime_ns < born:
        bad.append("%s: born %d, mtime %d, ctime %d" % (p, born, st.st_mtime_ns, st.st_ctime_ns))
print("%d dated before their creation" % len(bad))
print("\n".join(bad[:3]))
PY
	run "$MFS_PY" "$T/order.py" "$T/mnt" create
	assert_success
	assert_line --index 0 "0 dated before their creation"
	mfs umount "$T/mnt"
	mfs_mount "$T/img1" "$T/mnt"
	run "$MFS_PY" "$T/order.py" "$T/mnt" again
	assert_success
	assert_line --index 0 "0 dated before their creation"
	mfs umount "$T/mnt"
}

@test "mfs filesystem sync commits what sync(1) cannot: it survives a crash right after" {
	mfs_fs raid1 2
	mfs_mount -o commit=3600 "$T/img1" "$T/mnt"
	head -c $((3 * MiB + 5)) /dev/urandom >"$T/src"
	cp "$T/src" "$T/mnt/f"
	mkdir "$T/mnt/d"
	ln -s f "$T/mnt/d/link"
	run mfs filesystem sync "$T/mnt"
	assert_success
	assert_output ""
	mfs_kill9 "$T/mnt"
	run mfs check "$T/img1"
	assert_success
	mfs_mount "$T/img1" "$T/mnt"
	cmp "$T/src" "$T/mnt/f"
	assert_equal "$(readlink "$T/mnt/d/link")" f
	mfs umount "$T/mnt"
	# read-only: nothing to commit, not an error; and not an mfs: refused
	mfs_mount -o ro "$T/img1" "$T/mnt"
	run mfs filesystem sync "$T/mnt"
	assert_success
	mfs umount "$T/mnt"
	run mfs filesystem sync "$T"
	assert_failure 1
	assert_output "ERROR: not a mounted mfs filesystem: $T"
}

# An open that fails on what the disks hold says what (it said only "is
# corrupt and cannot be opened; run 'mfs check'").
@test "mount of a filesystem with an unreadable tree names the tree and the block" {
	make_images 2
	mkdir -p "$T/mnt"
	mkfs.mfs -q -f -d raid1 -m raid1 $(imgs 2)
	b=$(tree_root_bytenr "$T/img1" fs)
	[ -n "$b" ]
	corrupt_every_copy "$T/img1" "$b"
	run --separate-stderr mfs mount "$T/img1" "$T/mnt"
	assert_failure
	assert_stderr_line "ERROR: fs tree root cannot be read: Structure needs cleaning; 'mfs check' tells more"
	run is_mounted "$T/mnt"
	assert_failure
	# the root tree itself
	make_images 2
	mkfs.mfs -q -f -d raid1 -m raid1 $(imgs 2)
	b=$(super_field "$T/img1" root)
	corrupt_every_copy "$T/img1" "$b"
	run --separate-stderr mfs mount "$T/img1" "$T/mnt"
	assert_failure
	assert_stderr_regex "^ERROR: the root tree \(block $b\) cannot be read: .*; 'mfs check' tells more$"
}

# The mounted-device checks of mkfs, device add and the rest ask every mfs
# daemon on the host which devices it holds: one that does not answer
# (stopped here; stuck on a dead disk in real life) must not hang them.
@test "a daemon that does not answer holds up no other filesystem's mkfs, device add or show" {
	mfs_fs raid1 2
	mfs_mount "$T/img1" "$T/mnt"
	pid=$(mfs_daemon_pid "$T/mnt")
	truncate -s 1G "$T/a1.img" "$T/a2.img" "$T/a3.img" "$T/b.img"
	mkfs.mfs -q -f "$T/b.img"
	kill -STOP "$pid"
	echo "$pid" >>"$T/.stopped"
	# fresh devices: no daemon needs asking
	run timeout 120 mkfs.mfs -q -f -d raid1 "$T/a1.img" "$T/a2.img"
	kill -CONT "$pid"
	assert_success
	kill -STOP "$pid"
	# a device holding an mfs: asked, the stopped daemon given up on
	run timeout 120 mkfs.mfs -q -f "$T/b.img"
	assert_success
	mfs_mount "$T/a1.img" "$T/mnt2"
	run timeout 120 mfs device add "$T/a3.img" "$T/mnt2"
	assert_success
	run timeout 120 mfs filesystem show "$T/a3.img"
	assert_success
	assert_output --partial "$T/a3.img"
	# every filesystem: the stopped one's as its superblocks say, once
	# waited for (not once per device)
	run timeout 120 mfs filesystem show
	assert_success
	assert_output --partial "$T/a3.img"
	assert_output --partial "$T/img2"
	assert_output --partial "WARNING: the daemon serving $T/mnt does not answer"
	[ "$(grep -c 'does not answer' <<<"$output")" = 1 ]
	# its own device: known mounted by the mount source, without an answer
	mkdir -p "$T/mnt3"
	echo "$T/mnt3" >>"$T/.mfs_mounts"
	run --separate-stderr timeout 120 mfs mount "$T/img1" "$T/mnt3"
	assert_failure
	assert_stderr_line "ERROR: $T/img1 is already mounted on $T/mnt (a filesystem can be mounted once)"
	kill -CONT "$pid"
	# the stopped filesystem goes on as before
	echo still >"$T/mnt/still"
	run cat "$T/mnt/still"
	assert_output still
}
