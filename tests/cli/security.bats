#!/usr/bin/env bats
# A user without CAP_SYS_ADMIN on a mount (issue 21, "Security"): the admin
# requests the other files do not already try as nobody. Tried elsewhere:
# balance start/pause/cancel/resume/status and --dry-run (balance.bats),
# device add and delete (device-mgmt.bats), replace start and cancel
# (replace.bats), device stats, umount and a raw restripe ioctl, and
# default_permissions (a 0600 file of root unreadable, mount.bats'
# permissions test). Here: scrub and resize.

load helpers

# the common teardown, run after ours
eval "helpers_$(declare -f teardown)"

teardown() {
	mfs_cleanup_mounts
	helpers_teardown
}

# as_nobody ARGS...: mfs ARGS as user nobody, with no capabilities
as_nobody() {
	setpriv --reuid="$(id -u nobody)" --regid="$(id -g nobody)" --clear-groups --inh-caps=-all \
		env MFS_REGISTRY="$T/noreg" "$MFS_BUILD/mfs" "$@"
}

@test "non-root: scrub and resize requests on a mount are refused, and change nothing" {
	make_images 1 1G
	mkfs.mfs -q -f "$T/img1"
	mfs_mount "$T/img1" "$T/mnt"
	# let an unprivileged user reach the mount point
	d=$T
	while [ "$d" != / ] && [ "$d" != /tmp ]; do chmod o+x "$d"; d=$(dirname "$d"); done
	id nobody >/dev/null 2>&1 || useradd -r -M nobody
	before=$(mfs filesystem show --raw "$T/mnt")

	run --separate-stderr as_nobody scrub start -B "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: scrub start failed on $T/mnt: Operation not permitted"
	run --separate-stderr as_nobody scrub status "$T/mnt"
	assert_failure
	assert_stderr_line "ERROR: scrub status on $T/mnt failed: Operation not permitted"
	for c in pause cancel resume; do
		run --separate-stderr as_nobody scrub $c "$T/mnt"
		assert_failure
		assert_stderr_line "ERROR: scrub $c failed on $T/mnt: Operation not permitted"
	done
	run --separate-stderr as_nobody scrub limit -a -l 1m "$T/mnt"
	assert_failure
	assert_stderr_regex "Operation not permitted"
	run --separate-stderr as_nobody filesystem resize 1:-100m "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: resize failed on '$T/mnt': Operation not permitted"
	run --separate-stderr as_nobody filesystem resize cancel "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: unable to cancel resize on '$T/mnt': Operation not permitted"

	# nothing ran: no scrub was ever started, the device kept its size
	run mfs scrub status "$T/mnt"
	assert_success
	assert_output --partial "no stats available"
	[ "$(mfs filesystem show --raw "$T/mnt")" = "$before" ]
	# root may: the same requests work
	run mfs scrub start -B "$T/mnt"
	assert_success
	run mfs filesystem resize 1:-100m "$T/mnt"
	assert_success
	mfs umount "$T/mnt"
	run mfs check "$T/img1"
	assert_success
}
