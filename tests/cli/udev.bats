#!/usr/bin/env bats
# Boot-time assembly: 'mfs device ready --udev' and the udev rule
# (contrib/udev/64-mfs.rules.in) run by udevadm test on loop devices.
#
# udevadm test writes the udev database and /dev/disk links, so it runs in
# a mount namespace of its own: a tmpfs on /run/udev holding the rule under
# test and a tmpfs on /dev holding only the test's loop devices.

load helpers

RULE_IN="$BATS_TEST_DIRNAME/../../contrib/udev/64-mfs.rules.in"

# udev_props DEV: the properties udev gives DEV on an "add" event, with the
# rule running this build's mfs; then the RUN commands, as "run: '...'".
udev_props() {
	local l nodes=""

	while read -r l; do
		[ -n "$l" ] && [ -b "$l" ] && nodes+=" $l:$(cat "/sys/class/block/${l#/dev/}/dev")"
	done <"$T/.loops"
	sed -e "s|@MFS_SBINDIR@|$MFS_BUILD|g" -e "s|@MFS_UDEVADM@|/bin/udevadm|g" \
		"$RULE_IN" >"$T/64-mfs.rules"
	unshare --mount --propagation private bash -c '
		set -e
		mount -t tmpfs tmpfs /run/udev 2>/dev/null || { mkdir -p /run/udev && mount -t tmpfs tmpfs /run/udev; }
		mkdir /run/udev/rules.d
		cp "$1/64-mfs.rules" /run/udev/rules.d/
		# $T/fstab, when the test wrote one, is the /etc/fstab the rule reads
		[ ! -f "$1/fstab" ] || mount --bind "$1/fstab" /etc/fstab
		mount -t tmpfs tmpfs /dev
		mknod -m 666 /dev/null c 1 3
		for n in $2; do
			mknod "${n%%:*}" b $(tr ":" " " <<<"${n#*:}")
		done
		udevadm test --action=add "/sys/class/block/${3#/dev/}" 2>/dev/null
	' _ "$T" "$nodes" "$1"
}

# prop NAME: the value of NAME in $output (udev_props' lines), or nothing
prop() {
	sed -n "s/^$1=//p" <<<"$output"
}

@test "device ready --udev: a member's properties; MFS_READY follows the other members" {
	make_images 3
	mkfs.mfs -q -L "my data/x" -d raid1 $(imgs 2)
	uuid=$(fs_uuid "$T/img1")
	run --separate-stderr mfs device ready --udev "$T/img2"
	assert_success
	assert_stderr_empty
	assert_output "$(printf '%s\n' ID_FS_TYPE=mfs ID_FS_USAGE=filesystem ID_FS_VERSION=1 \
		"ID_FS_UUID=$uuid" "ID_FS_UUID_ENC=$uuid" \
		"ID_FS_UUID_SUB=$(super_field "$T/img2" dev_item.uuid)" \
		"ID_FS_UUID_SUB_ENC=$(super_field "$T/img2" dev_item.uuid)" \
		"ID_FS_LABEL=my_data/x" 'ID_FS_LABEL_ENC=my\x20data\x2fx' MFS_DEVID=2 MFS_READY=1)"
	run mfs device ready "$T/img2"
	assert_success

	# a member gone: still an mfs member (exit 0), not ready; ready says 1
	mfs device scan -u "$T/img1"
	run --separate-stderr mfs device ready --udev "$T/img2"
	assert_success
	assert_line MFS_READY=0
	assert_line "ID_FS_UUID=$uuid"
	run mfs device ready "$T/img2"
	assert_failure 1

	# no label, no label properties
	mkfs.mfs -q -f "$T/img1"
	run mfs device ready --udev "$T/img1"
	assert_success
	refute_line --regexp '^ID_FS_LABEL'
	assert_line MFS_READY=1

	# not mfs: exit 1 and nothing printed, on stderr either (udev runs it
	# on every block device it found no filesystem in)
	run --separate-stderr mfs device ready --udev "$T/img3"
	assert_failure 1
	assert_output ""
	assert_stderr_empty
}

@test "udev rule: a member of a complete filesystem is named by uuid and label, and ready" {
	local l1 l2

	make_images 2 256M
	l1=$(make_loop "$T/img1")
	l2=$(make_loop "$T/img2")
	mkfs.mfs -q -f -L "big pool" -m raid1 "$l1" "$l2"
	uuid=$(fs_uuid "$l1")
	run udev_props "$l2"
	assert_success
	[ "$(prop ID_FS_TYPE)" = mfs ]
	[ "$(prop ID_FS_UUID)" = "$uuid" ]
	[ "$(prop ID_FS_LABEL_ENC)" = 'big\x20pool' ]
	[ "$(prop MFS_DEVID)" = 2 ]
	[ "$(prop MFS_READY)" = 1 ]
	[ -z "$(prop SYSTEMD_READY)" ]
	[[ " $(prop DEVLINKS) " == *" /dev/disk/by-uuid/$uuid "* ]]
	[[ " $(prop DEVLINKS) " == *' /dev/disk/by-label/big\x20pool '* ]]
	# the members that waited for this one are looked at again
	assert_line "run: '/bin/udevadm trigger -s block -p MFS_READY=0'"
}

@test "udev rule: with a member missing, the device is not ready for systemd" {
	local l1 l2

	make_images 2 256M
	l1=$(make_loop "$T/img1")
	l2=$(make_loop "$T/img2")
	mkfs.mfs -q -f -d raid1 -m raid1 "$l1" "$l2"
	losetup -d "$l2"
	run udev_props "$l1"
	assert_success
	[ "$(prop ID_FS_TYPE)" = mfs ]
	[ "$(prop MFS_READY)" = 0 ]
	[ "$(prop SYSTEMD_READY)" = 0 ]
	refute_line --partial "run: '/bin/udevadm trigger"
}

@test "udev rule: with a member missing and an fstab line saying degraded, the mount may run" {
	local l1 l2 uuid

	make_images 3 256M
	l1=$(make_loop "$T/img1")
	l2=$(make_loop "$T/img2")
	mkfs.mfs -q -f -L pool -d raid1 -m raid1 "$l1" "$l2"
	mkfs.mfs -q -f -L other "$T/img3"
	uuid=$(fs_uuid "$l1")
	losetup -d "$l2"
	# (udev_props makes a node for each loop device listed: once)
	sed -i "\\|^$l2\$|d" "$T/.loops"
	# another filesystem's degraded line, and this one's line without degraded: still held
	printf '%s\n' "LABEL=other /o mfs degraded 0 0" "UUID=$uuid /data mfs defaults 0 2" >"$T/fstab"
	run udev_props "$l1"
	assert_success
	[ "$(prop SYSTEMD_READY)" = 0 ]
	[ -z "$(prop MFS_MOUNT_DEGRADED)" ]
	# by uuid, by label, by a member's path: the line says degraded
	for src in "UUID=$uuid" "LABEL=pool" "$l1"; do
		printf '%s\n' "# a comment" "$src /data mfs noatime,degraded,x-mfs.device-timeout=60 0 2" >"$T/fstab"
		run udev_props "$l1"
		assert_success
		[ "$(prop MFS_READY)" = 0 ]
		[ "$(prop MFS_MOUNT_DEGRADED)" = 1 ]
		[ -z "$(prop SYSTEMD_READY)" ]
		run env MFS_FSTAB="$T/fstab" mfs device ready --udev "$l1"
		assert_line MFS_MOUNT_DEGRADED=1
	done
	# whole again: ready, and the property is gone
	l2=$(make_loop "$T/img2")
	run udev_props "$l1"
	assert_success
	[ "$(prop MFS_READY)" = 1 ]
	[ -z "$(prop MFS_MOUNT_DEGRADED)" ]
}

@test "udev rule: nothing for another filesystem or for data mfs does not know" {
	local l1 l2

	make_images 2 256M
	mkfs.ext4 -q -L notmfs "$T/img1"
	l1=$(make_loop "$T/img1")
	l2=$(make_loop "$T/img2")
	run udev_props "$l1"
	assert_success
	[ "$(prop ID_FS_TYPE)" = ext4 ]
	[ -z "$(prop MFS_READY)" ]
	run udev_props "$l2"
	assert_success
	[ -z "$(prop ID_FS_TYPE)" ]
	[ -z "$(prop MFS_READY)" ]
	[ -z "$(prop SYSTEMD_READY)" ]
}
