#!/usr/bin/env bats
# Shrinking goes through the restriper (op RESIZE): the engine itself
# refuses a shrink that does not fit, whoever asks (here a direct ioctl);
# cancelling a shrink - running, or paused and resumed later from the
# persisted balance item - gives the device its old size back; growing is
# an exclusive operation like the others, refused while one runs or is
# paused.

load helpers
load restripe

setup_file() {
	big_template
}

# dev_size DEV DEVID: the member's size from `filesystem show --raw`
dev_size() {
	mfs filesystem show --raw "$1" | awk -v d="$2" '$1 == "devid" && $2 == d { print $4 }'
}

# ioctl_shrink MNT DEVID NEW_SIZE: MFS_IOC_RESTRIPE_START with op RESIZE,
# as any program could send it; prints "result msg"
ioctl_shrink() {
	python3 - "$@" <<'EOF'
import fcntl, os, struct, sys
mnt, devid, new_size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
SIZE = 984			# struct mfs_ioctl_restripe_args
buf = bytearray(SIZE)
struct.pack_into("<IIQ", buf, 0, 3, 1, 0)	# op RESIZE, nr_devids 1, flags
struct.pack_into("<Q", buf, 328, devid)		# devids[0]
struct.pack_into("<Q", buf, 456, new_size)	# new_size
nr = (3 << 30) | (SIZE << 16) | (0xE5 << 8) | 10
fd = os.open(mnt, os.O_RDONLY)
fcntl.ioctl(fd, nr, buf)
os.close(fd)
result = struct.unpack_from("<i", buf, 464)[0]
msg = bytes(buf[468:980]).split(b"\0")[0].decode()
print(result, msg)
EOF
}

# ioctl_grow MNT DEVID NEW_SIZE: MFS_IOC_RESIZE; prints the result
ioctl_grow() {
	python3 - "$@" <<'EOF'
import fcntl, os, struct, sys
mnt, devid, new_size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
SIZE = 280			# struct mfs_ioctl_resize
buf = bytearray(SIZE)
struct.pack_into("<QQ", buf, 0, devid, new_size)
nr = (3 << 30) | (SIZE << 16) | (0xE5 << 8) | 15
fd = os.open(mnt, os.O_RDONLY)
fcntl.ioctl(fd, nr, buf)
os.close(fd)
print(struct.unpack_from("<i", buf, 16)[0])
EOF
}

@test "resize ioctl: the engine refuses a shrink that does not fit, before anything moves" {
	mkdir "$T/src"
	gen_file "$T/src/file" 50
	make_images 2
	mkfs.mfs -q -d raid1 -m raid1 -r "$T/src" $(imgs 2)
	sums "$T/src" >"$T/want"
	chunk_layout "$T/img1" >"$T/before"
	mnt "$T/img1"
	# raid1 on two devices: the 256 MiB metadata chunk has no room below 200 MiB
	run ioctl_shrink "$T/mnt" 1 $((200 * MiB))
	assert_success
	assert_output --regexp "^-28 no enough free space to move what lies past $((200 * MiB)) bytes on device 1: the (Data|Metadata|System),RAID1 chunk at [0-9]+ \\([0-9]+ bytes\\) fits nowhere else$"
	# not a shrink at all: refused too
	run ioctl_shrink "$T/mnt" 1 $((2 * GiB))
	assert_output --regexp '^-22 '
	run ioctl_shrink "$T/mnt" 7 $((300 * MiB))
	assert_output --regexp '^-19 cannot find devid: 7$'
	run mfs balance status "$T/mnt"
	assert_success
	[ "$(dev_size "$T/mnt" 1)" = "$GiB" ]
	verify_online
	umnt
	chunk_layout "$T/img1" | diff "$T/before" -
	# the command says the same, in its words
	run --separate-stderr mfs filesystem resize 1:200m "$T/img1"
	assert_failure 1
	assert_stderr_regex "^ERROR: unable to resize '$T/img1': no enough free space to move what lies past $((200 * MiB)) bytes on device 1: the (Data|Metadata|System),RAID1 chunk at [0-9]+ \\([0-9]+ bytes\\) fits nowhere else$"
	refute_output --partial "Relocating"
	chunk_layout "$T/img1" | diff "$T/before" -
	verify_offline "$T/img1"
}

# two_devices: 2 x 320M, 240 MiB of single data in 64 MiB chunks, raid1
# metadata; device 1 ends past 260 MiB
two_devices() {
	local n

	make_images 2 320M
	mkdir -p "$T/src"
	for n in 1 2 3 4; do
		gen_file "$T/src/f$n" 60
	done
	mkfs.mfs -q -d single -m raid1 -r "$T/src" $(imgs 2)
	sums "$T/src" >"$T/want"
}

@test "resize: a shrink that fits only with chunks in pieces completes" {
	# the 64 MiB chunks past 200M on device 1 fit no hole of device 2 whole
	two_devices
	run --separate-stderr mfs filesystem resize 1:200m "$T/img1"
	assert_success
	assert_line --index 1 --regexp '^Relocating [0-9]+ chunks? \([0-9.]+[KMG]?i?B used\) past the new end$'
	[ "$(dev_size "$T/img1" 1)" = $((200 * MiB)) ]
	verify_offline "$T/img1"
}

@test "resize cancel: a running shrink cancelled gives the device its old size back" {
	two_devices
	mnt "$T/img1"
	hold_at 1
	mfs filesystem resize 1:160m "$T/mnt" >"$T/out" 2>&1 &
	echo $! >>"$T/.pids"
	wait_held
	# the device already counts its new size while chunks move
	[ "$(dev_size "$T/mnt" 1)" = $((160 * MiB)) ]
	run --separate-stderr while_held mfs filesystem resize cancel "$T/mnt"
	assert_success
	wait_done "$T/mnt"
	[ "$(dev_size "$T/mnt" 1)" = $((320 * MiB)) ]
	verify_online
	umnt
	[ "$(dev_size "$T/img1" 1)" = $((320 * MiB)) ]
	verify_offline "$T/img1"
}

@test "resize cancel: a paused shrink cancelled after a remount gives the old size back" {
	two_devices
	mnt "$T/img1"
	hold_at 1
	mfs filesystem resize 1:160m "$T/mnt" >"$T/out" 2>&1 &
	echo $! >>"$T/.pids"
	while_held mfs balance pause "$T/mnt"
	umnt
	# the old size comes from the balance item on disk
	run mfs balance status "$T/img1"
	assert_failure 1
	assert_line --partial "Resize on '$T/img1' is paused"
	[ "$(dev_size "$T/img1" 1)" = $((160 * MiB)) ]
	run --separate-stderr mfs balance cancel "$T/img1"
	assert_success
	run mfs balance status "$T/img1"
	assert_success
	[ "$(dev_size "$T/img1" 1)" = $((320 * MiB)) ]
	verify_offline "$T/img1"
}

@test "resize grow: refused while a restripe runs or is paused, like other exclusive operations" {
	big_fs
	truncate -s 300M "$T/img2"
	mnt "$T/img1"
	hold_at 1
	mfs balance start -q --full-balance "$T/mnt" >"$T/out" 2>&1 &
	echo $! >>"$T/.pids"
	wait_held
	run --separate-stderr mfs filesystem resize 2:+20m "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: unable to start resize, another exclusive operation 'balance' in progress"
	run --separate-stderr mfs filesystem resize 2:max "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: unable to start resize, another exclusive operation 'balance' in progress"
	# a program that asks directly gets EINPROGRESS
	run ioctl_grow "$T/mnt" 2 $((276 * MiB))
	assert_output "-115"
	while_held mfs balance pause "$T/mnt"
	run --separate-stderr mfs filesystem resize 2:+20m "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: unable to start resize, another exclusive operation 'balance paused' in progress"
	run ioctl_grow "$T/mnt" 2 $((276 * MiB))
	assert_output "-115"
	[ "$(dev_size "$T/mnt" 2)" = $((256 * MiB)) ]
	mfs balance cancel "$T/mnt"
	# nothing runs: growing works
	run --separate-stderr mfs filesystem resize 2:+20m "$T/mnt"
	assert_success
	[ "$(dev_size "$T/mnt" 2)" = $((276 * MiB)) ]
	verify_online
	umnt
	verify_offline "$T/img1"
}
