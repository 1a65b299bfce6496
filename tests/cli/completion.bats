#!/usr/bin/env bats
# bash completion (contrib/bash-completion/mfs), driven through
# COMP_WORDS/COMP_CWORD as bash drives it (complete.bash): every command,
# subcommand and option --help lists, option values, balance filters with
# the devids of the filesystem at hand, mount options, mount points and
# devices.

load helpers

# the common teardown, run after ours (one test mounts)
eval "helpers_$(declare -f teardown)"

teardown() {
	mfs_cleanup_mounts
	helpers_teardown
}

COMPLETION="$BATS_TEST_DIRNAME/../../contrib/bash-completion/mfs"

# comp LINE: what completion offers at the end of LINE, one a line, sorted
comp() {
	bash "$BATS_TEST_DIRNAME/complete.bash" "$COMPLETION" "$1"
}

helptext() {
	python3 "$BATS_TEST_DIRNAME/helptext.py" "$@"
}

# sorted WORD...: the words, one a line, sorted
sorted() {
	printf '%s\n' "$@" | sort -u
}

# unique_prefix WORD WORD...: the shortest prefix (3 letters or more) of the
# first word that none of the others starts with
unique_prefix() {
	local w=$1 n o ok
	shift
	for ((n = 3; n < ${#w}; n++)); do
		ok=1
		for o in "$@"; do
			[ "$o" != "$w" ] && [ "${o:0:n}" = "${w:0:n}" ] && ok=0
		done
		[ $ok -eq 1 ] && break
	done
	echo "${w:0:n}"
}

@test "completion: every command and subcommand --help lists, prefixes resolved" {
	local cmd line bad="" top

	# the top level: the groups and commands of 'mfs --help'
	run comp "mfs "
	assert_success
	for cmd in $(helptext commands | awk '$1 == "mfs" { print $2 }' | sort -u); do
		grep -qx -- "$cmd" <<<"$output" || bad+=" mfs:$cmd"
	done
	# each group's commands, also through an abbreviated group name
	top=$(helptext commands | awk '$1 == "mfs" { print $2 }' | sort -u)
	while read -r line; do
		set -- $line
		[ $# -eq 3 ] || continue
		grep -qx -- "$3" <<<"$(comp "mfs $2 ")" || bad+=" [$line]"
		grep -qx -- "$3" <<<"$(comp "mfs $(unique_prefix "$2" $top) ")" ||
			bad+=" [abbreviated: $line]"
	done < <(helptext commands)
	[ -z "$bad" ] || { echo "not offered:$bad" >&2; return 1; }

	run comp "mfs fi"
	assert_output "filesystem"
	run comp "mfs dev re"
	assert_output "$(sorted ready remove replace)"
	# device replace is the replace group
	run comp "mfs device replace "
	assert_output "$(sorted start status cancel pause resume)"
	run comp "mfs help fi"
	assert_output "filesystem"
	run comp "mfs help balance "
	assert_output "$(sorted start pause cancel resume status)"
	# an unknown or ambiguous token: nothing to offer after it
	run comp "mfs foo "
	assert_output ""
	run comp "mfs -"
	assert_output "$(sorted --help --version --format -v --verbose -q --quiet)"
	run comp "mfs --format "
	assert_output "$(sorted text json)"
	run comp "mfs --format json fi"
	assert_output "filesystem"
}

@test "completion: every command's options are those of its --help" {
	local cmd opts want have bad="" n=0

	while IFS=$'\t' read -r cmd opts; do
		n=$((n + 1))
		want=$(sorted $opts --help)
		have=$(comp "$cmd -")
		if [ "$want" != "$have" ]; then
			bad+=$'\n'"$cmd: --help has [$(echo $want)], completion offers [$(echo $have)]"
		fi
	done < <(helptext options-help-all)
	# every command was compared (a helptext that listed none passes nothing)
	[ "$n" -eq "$(helptext commands | wc -l)" ] && [ "$n" -gt 40 ]
	[ -z "$bad" ] || { echo "$bad" >&2; return 1; }
	# abbreviated and aliased names complete as the command they resolve to
	run comp "mfs fi sh -"
	assert_output "$(comp "mfs filesystem show -")"
	run comp "mfs device remove -"
	assert_output "$(comp "mfs device delete -")"
	run comp "mfs device replace start -"
	assert_output "$(comp "mfs replace start -")"
}

@test "completion: option values: profiles, checksums, features, trees, copies, formats" {
	local profiles="single dup raid0 raid1 raid1c3 raid1c4 raid10 raid5 raid6"

	run comp "mkfs.mfs -d "
	assert_output "$(sorted $profiles)"
	run comp "mfs mkfs --metadata raid1"
	assert_output "$(sorted raid1 raid1c3 raid1c4 raid10)"
	run comp "mkfs.mfs --csum "
	assert_output "$(sorted crc32c xxhash sha256 blake2)"
	run comp "mkfs.mfs -O "
	assert_output "$(sorted list-all raid56 raid1c34 compress-zlib)"
	run comp "mfs inspect-internal dump-tree -t "
	assert_output "$(sorted root chunk extent dev fs csum)"
	run comp "mfs check --super "
	assert_output "$(sorted 0 1 2)"
	run comp "mfs filesystem df --format "
	assert_output "$(sorted text json)"
	# a value that is free text: nothing offered
	run comp "mkfs.mfs -L "
	assert_output ""
}

@test "completion: balance filters, convert= profiles, devid= the filesystem's devids" {
	local profiles="single dup raid0 raid1 raid1c3 raid1c4 raid10 raid5 raid6"
	local filters="profiles= usage= devid= drange= vrange= convert= soft limit= stripes="
	local f want

	run comp "mfs balance start -d"
	want="-d"
	for f in $filters; do
		want+=" -d$f"
	done
	assert_output "$(sorted $want)"
	run comp "mfs balance start -mconv"
	assert_output "-mconvert="
	# bash splits the word at '=': what follows it is completed
	run comp "mfs balance start -dconvert="
	assert_output "$(sorted $profiles)"
	run comp "mfs balance start -sconvert=raid1c"
	assert_output "$(sorted raid1c3 raid1c4)"
	# the next filter after a comma
	run comp "mfs balance start -dconvert=raid1,so"
	assert_output "raid1,soft"
	run comp "mfs balance start -dusage=50,li"
	assert_output "50,limit="
	# profiles=A|B: the profile after the '|'
	run comp "mfs balance start -dprofiles=raid1|raid1"
	assert_output "$(sorted raid1 raid1c3 raid1c4 raid10)"

	# devid=: the devids of the filesystem named on the line, mounted or not
	make_images 3
	mkfs.mfs -q -d raid0 $(imgs 3)
	run comp "mfs balance start -ddevid="
	assert_output ""
	run comp "mfs balance start $T/img2 -ddevid="
	assert_output "$(sorted 1 2 3)"
	mfs device delete -q "$T/img3" "$T/img1"
	run comp "mfs balance start $T/img1 -ddevid="
	assert_output "$(sorted 1 2)"
	# the same devids for device delete and replace start
	run comp "mfs device delete "
	assert_line "missing"
	assert_line "status"
	run comp "mfs replace start $T/img1 "
	refute_line "1"
}

@test "completion: devids, mount points and devices as arguments" {
	make_images 2
	mkfs.mfs -q -m raid1 $(imgs 2)
	touch "$T/other"

	# devices and image files: paths
	run comp "mfs check $T/im"
	assert_output "$(sorted "$T/img1" "$T/img2")"
	run comp "mkfs.mfs -f $T/o"
	assert_output "$T/other"

	mfs_mount "$T/img1" "$T/mnt"
	# mount points of mounted mfs filesystems, and only those
	run comp "mfs umount "
	assert_line "$T/mnt"
	refute_line "/"
	refute_line "/proc"
	run comp "mfs balance status $T/m"
	assert_line "$T/mnt"
	run comp "mfs device delete $T/mnt "
	assert_line "1"
	assert_line "2"
	assert_line "missing"
	refute_line "pause"	# only as the first argument
	run comp "mfs filesystem resize "
	assert_line "max"
	assert_line "cancel"
	assert_line "$T/mnt"
	run comp "mfs replace start "
	assert_line "$T/mnt"
}

@test "completion: mount options after -o, for mfs mount and mount.mfs" {
	run comp "mfs mount -o "
	assert_line "device="
	assert_line "degraded"
	assert_line "skip_balance"
	assert_line "read_policy="
	# the option after the last comma
	run comp "mfs mount -o noatime,com"
	assert_output "$(sorted noatime,commit= noatime,compress=)"
	# bash splits the word at '=': what follows it is completed
	run comp "mfs mount -o ro,compress="
	assert_output "$(sorted zlib zlib: no)"
	run comp "mount.mfs /dev/x /mnt -o read_policy="
	assert_output "least-busy"
	# every mount option 'mfs mount --help' lists is offered
	local name bad=""
	run comp "mfs mount -o "
	for name in $(helptext mount-options-help); do
		grep -q "^$name=\?\$" <<<"$output" || bad+=" $name"
	done
	[ -z "$bad" ] || { echo "mount options not offered:$bad" >&2; return 1; }
}

@test "completion: installed, bash-completion's loader finds it under each command's name" {
	local cmd

	run make -s -C "$MFS_BUILD" install-dist_bashcompDATA install-data-hook \
		DESTDIR="$T/root" bashcompdir=/share/bash-completion/completions
	assert_success
	for cmd in mfs mkfs.mfs fsck.mfs mount.mfs; do
		run env XDG_DATA_DIRS="$T/root/share" BASH_COMPLETION_USER_DIR="$T/none" bash -c '
			. /usr/share/bash-completion/bash_completion
			__load_completion "$1" && complete -p "$1"' _ "$cmd"
		assert_success
		assert_output --regexp "^complete -F _mfs(_tool)? $cmd\$"
	done
	run make -s -C "$MFS_BUILD" uninstall-dist_bashcompDATA uninstall-local \
		DESTDIR="$T/root" bashcompdir=/share/bash-completion/completions
	assert_success
	run ls -A "$T/root/share/bash-completion/completions"
	assert_output ""
}
