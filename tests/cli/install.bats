#!/usr/bin/env bats
# make install / make uninstall (DESTDIR, prefix, sbindir) and the Debian
# packaging in debian/. The package itself is built by 'make deb'
# (scripts/build-deb.sh), outside the suite: it compiles everything again.

load helpers

TOP="$BATS_TEST_DIRNAME/../.."

# installed ROOT: every file and symlink under ROOT, relative, sorted
installed() {
	(cd "$1" && find . \( -type f -o -type l \) -printf '%P\n' | sort)
}

# expected_files PREFIX SBIN: what make install puts under DESTDIR
expected_files() {
	local prefix=$1 sbin=$2 p

	for p in mfs mkfs.mfs fsck.mfs mount.mfs; do
		echo "$sbin/$p"
		echo "$prefix/share/bash-completion/completions/$p"
	done
	echo "$sbin/umount.fuse.mfs"
	for p in mfs mkfs.mfs fsck.mfs mount.mfs mfs-filesystem mfs-device mfs-balance \
		mfs-replace mfs-scrub mfs-check mfs-rescue mfs-restore mfs-inspect-internal \
		mfs-monitor; do
		echo "$prefix/share/man/man8/$p.8"
	done
	echo "$prefix/share/man/man5/mfs.5"
	echo "$prefix/lib/udev/rules.d/64-mfs.rules"
	echo "$prefix/lib/systemd/system/mfs-monitor.service"
	for p in on-disk-format json-output space-reservation; do
		echo "$prefix/share/doc/mfs/$p.md"
	done
	for p in "$BATS_TEST_DIRNAME"/../../Documentation/json-schema/*.json; do
		echo "$prefix/share/doc/mfs/json-schema/${p##*/}"
	done
}

@test "install: DESTDIR and prefix are honoured, uninstall removes everything" {
	local ino p

	run make -s -C "$MFS_BUILD" install DESTDIR="$T/root" prefix=/opt/mfs
	assert_success
	run installed "$T/root"
	assert_output "$(expected_files opt/mfs opt/mfs/sbin | sort)"

	# one binary under five names (hard links), each acting as its name
	ino=$(stat -c %i "$T/root/opt/mfs/sbin/mfs")
	for p in mkfs.mfs fsck.mfs mount.mfs; do
		[ "$(stat -c %i "$T/root/opt/mfs/sbin/$p")" = "$ino" ]
		[ "$(readlink "$T/root/opt/mfs/share/bash-completion/completions/$p")" = mfs ]
	done
	[ "$(stat -c %i "$T/root/opt/mfs/sbin/umount.fuse.mfs")" = "$ino" ]
	run "$T/root/opt/mfs/sbin/umount.fuse.mfs" --help
	assert_line --index 0 --partial "usage: umount.fuse.mfs <mountpoint>"
	run "$T/root/opt/mfs/sbin/mkfs.mfs" --help
	assert_line --index 0 "usage: mkfs.mfs [options] <dev> [<dev>...]"
	run "$T/root/opt/mfs/sbin/fsck.mfs" --help
	assert_line --index 0 "usage: fsck.mfs [-anpyfv] [-s N] <device>"
	run "$T/root/opt/mfs/sbin/mount.mfs" --help
	assert_line --index 0 --partial "usage: mount.mfs <device> <mountpoint>"
	run "$T/root/opt/mfs/sbin/mfs" version
	assert_output --regexp '^mfs v'
	# the udev rule runs the installed mfs (configure's sbindir)
	run grep -c '^IMPORT{program}="/[^"]*/mfs device ready --udev $devnode"$' \
		"$T/root/opt/mfs/lib/udev/rules.d/64-mfs.rules"
	assert_output 1
	# the monitor's unit runs the installed mfs (configure's sbindir), watching and logging
	run grep -c '^ExecStart=/[^ ]*/mfs monitor --syslog --delay 60$' \
		"$T/root/opt/mfs/lib/systemd/system/mfs-monitor.service"
	assert_output 1
	run grep -c '^WantedBy=multi-user.target$' "$T/root/opt/mfs/lib/systemd/system/mfs-monitor.service"
	assert_output 1
	run env MANWIDTH=100 man -M "$T/root/opt/mfs/share/man" -P cat mfs-device
	assert_success
	assert_line --regexp "^ +mfs-device - "

	run make -s -C "$MFS_BUILD" uninstall DESTDIR="$T/root" prefix=/opt/mfs
	assert_success
	run installed "$T/root"
	assert_output ""
}

@test "install: sbindir=/sbin puts the helpers where mount(8) and fsck(8) look" {
	run make -s -C "$MFS_BUILD" install DESTDIR="$T/root" prefix=/usr sbindir=/sbin
	assert_success
	run installed "$T/root"
	assert_output "$(expected_files usr sbin | sort)"
	run make -s -C "$MFS_BUILD" uninstall DESTDIR="$T/root" prefix=/usr sbindir=/sbin
	assert_success
	run installed "$T/root"
	assert_output ""
}

@test "install: the Debian packaging builds with what install-deps.sh installs, at the build's version" {
	local pkgs dep missing=""

	# the version the package says is the one the programs say
	run dpkg-parsechangelog -l "$TOP/debian/changelog" -S Version
	assert_success
	assert_equal "mfs v$output" "$(mfs version)"
	# every build dependency but debhelper's own comes with the README's set-up
	pkgs=$(sed -n '/^PKGS="/,/"$/p' "$TOP/scripts/install-deps.sh" | tr -d '"' | sed 's/^PKGS=//')
	for dep in $(sed -n '/^Build-Depends:/,/^[A-Z]/p' "$TOP/debian/control" |
		sed 's/^Build-Depends://; /^[A-Z]/d' | tr ',' '\n' | awk '{ print $1 }'); do
		[ "$dep" = debhelper-compat ] && continue
		grep -qw -- "$dep" <<<"$pkgs" || missing+=" $dep"
	done
	[ -z "$missing" ] || { echo "not installed by install-deps.sh:$missing" >&2; return 1; }
	# the helpers go to /sbin; the suite, which needs root and FUSE, is not run
	grep -q -- '--sbindir=/sbin' "$TOP/debian/rules"
	run grep -c '^override_dh_auto_test:' "$TOP/debian/rules"
	assert_output 1
}

@test "install: the monitor's systemd unit is one systemd accepts" {
	command -v systemd-analyze >/dev/null || skip "no systemd-analyze on this machine"
	# named mfs-monitor.service, running this build's mfs (the unit checks it exists)
	sed "s|@MFS_SBINDIR@|$MFS_BUILD|" "$TOP/contrib/systemd/mfs-monitor.service.in" \
		>"$T/mfs-monitor.service"
	run systemd-analyze verify --man=no "$T/mfs-monitor.service"
	assert_success
	assert_output ""
	# a typo in a directive is caught
	sed -i 's/^Restart=/Restrat=/' "$T/mfs-monitor.service"
	run systemd-analyze verify --man=no "$T/mfs-monitor.service"
	assert_output --partial "Restrat"
}
