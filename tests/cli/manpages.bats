#!/usr/bin/env bats
# Man pages (Documentation/man/*.rst): built by rst2man, installed where
# man(1) finds them, and saying what --help says: every option of every
# command, every command of every group, every mount option.

load helpers

MAN_SRC="$BATS_TEST_DIRNAME/../../Documentation/man"
PAGES="mfs.8 mkfs.mfs.8 fsck.mfs.8 mount.mfs.8 mfs-filesystem.8 mfs-device.8
mfs-balance.8 mfs-replace.8 mfs-scrub.8 mfs-check.8 mfs-rescue.8 mfs-restore.8 mfs-inspect-internal.8
mfs-monitor.8 mfs.5"

manpages() {
	python3 "$BATS_TEST_DIRNAME/helptext.py" "$@"
}

@test "manpages: every page is built and renders with its name and synopsis" {
	local p name

	for p in $PAGES; do
		[ -s "$MFS_BUILD/Documentation/man/$p" ] || {
			echo "$p was not built in $MFS_BUILD (is rst2man installed? python3-docutils)" >&2
			return 1
		}
		name=${p%.*}
		run env MANWIDTH=100 man -l "$MFS_BUILD/Documentation/man/$p"
		assert_success
		assert_line --regexp "^NAME$"
		assert_line --regexp "^ +$name - "
		assert_line --regexp "^(SYNOPSIS|DESCRIPTION)$"
		refute_output --partial "@MFS_"
	done
	# no page source outside the list, none in the list without a source
	run bash -c "cd '$MAN_SRC' && ls *.rst | sed 's/\.rst$//' | sort"
	assert_output "$(tr ' ' '\n' <<<"$PAGES" | grep . | sort)"
}

@test "manpages: every option of every command's --help is in its man page, and no other" {
	run manpages check
	assert_success
	assert_output ""
}

@test "manpages: every command group and command has its page or section" {
	run manpages coverage
	assert_success
	assert_output ""
}

@test "manpages: every mount option of 'mfs mount --help' is in mfs(5)" {
	run manpages mount-options
	assert_success
	assert_output ""
}

@test "manpages: the comparison catches a dropped, renamed or extra option, command or mount option" {
	cp -r "$MAN_SRC" "$T/man"
	# drop balance start --dry-run, rename device usage -t|--tbytes
	sed -i '/^--dry-run$/,/^$/d' "$T/man/mfs-balance.8.rst"
	sed -i 's/^-t|--tbytes$/-t|--terabytes/' "$T/man/mfs-device.8.rst"
	# document an option check does not have
	sed -i 's/^--force$/--clear-space-cache\n    not there\n\n--force/' "$T/man/mfs-check.8.rst"
	run env MFS_MAN_DIR="$T/man" python3 "$BATS_TEST_DIRNAME/helptext.py" check
	assert_failure
	assert_line "mfs balance start: --dry-run is in --help, not in mfs-balance.8 SUBCOMMAND / start"
	assert_line "mfs device usage: --tbytes is in --help, not in mfs-device.8 SUBCOMMAND / usage"
	assert_line "mfs device usage: --terabytes is in mfs-device.8 SUBCOMMAND / usage, not in --help"
	assert_line "mfs check: --clear-space-cache is in mfs-check.8 OPTIONS, not in --help"

	# a subcommand without its section
	sed -i '/^ready /{s/^ready /readiness /;n;s/$/----/}' "$T/man/mfs-device.8.rst"
	run env MFS_MAN_DIR="$T/man" python3 "$BATS_TEST_DIRNAME/helptext.py" coverage
	assert_failure
	assert_line "mfs device ready: no subsection in mfs-device.8"
	assert_line "mfs-device.8 documents 'readiness', which 'mfs device --help' does not list"

	sed -i 's/^skip_balance$/skip-balance/' "$T/man/mfs.5.rst"
	run env MFS_MAN_DIR="$T/man" python3 "$BATS_TEST_DIRNAME/helptext.py" mount-options
	assert_failure
	assert_output "mount option skip_balance is in 'mfs mount --help', not in mfs.5 MOUNT OPTIONS"
}

@test "manpages: installed, 'man mfs-balance' and 'man 5 mfs' find them" {
	run make -s -C "$MFS_BUILD" install-man DESTDIR="$T/root" mandir=/man
	assert_success
	[ -f "$T/root/man/man8/mfs-balance.8" ]
	[ -f "$T/root/man/man5/mfs.5" ]
	run env MANWIDTH=100 man -M "$T/root/man" -P cat mfs-balance
	assert_success
	assert_line --regexp "^ +mfs-balance - "
	assert_line --regexp "^ +start \[options\] <path>\|<device>\.\.\.$"
	run env MANWIDTH=100 man -M "$T/root/man" -P cat 5 mfs
	assert_success
	assert_line --regexp "^MOUNT OPTIONS$"
	run make -s -C "$MFS_BUILD" uninstall-man DESTDIR="$T/root" mandir=/man
	assert_success
	[ ! -e "$T/root/man/man8/mfs-balance.8" ]
}
