#!/usr/bin/env bats
# Command dispatch: abbreviations, help, usage errors, global options,
# argv[0] dispatch.

load helpers

@test "dispatch: unique prefixes run the command, same output as the full names" {
	make_images 2
	mkfs.mfs -q -L abbr $(imgs 2)
	full=$(mfs filesystem show "$T/img1")
	[ -n "$full" ]
	for cmd in "fi sh" "f sh" "filesystem sh" "fi show"; do
		run --separate-stderr mfs $cmd "$T/img1"
		assert_success
		assert_output "$full"
	done
	run mfs fi l "$T/img1"
	assert_success
	assert_output abbr
	run mfs dev rea "$T/img1"
	assert_success
	run mfs insp dump-s "$T/img1"
	assert_success
	assert_line "superblock: bytenr=65536, device=$T/img1"
	run mfs ch "$T/img1"
	assert_success
	assert_line --partial "no error found"
	run mfs ver
	assert_success
	assert_output --regexp '^mfs v[0-9]+\.[0-9]+'
}

@test "dispatch: an ambiguous prefix lists the candidates, exit 1" {
	run --separate-stderr mfs inspect-internal dump /dev/null
	assert_failure 1
	assert_stdout_empty
	assert_stderr_line "mfs inspect-internal: ambiguous token 'dump'"
	assert_stderr_line "Did you mean one of these ?"
	assert_stderr_line $'\tdump-super'
	assert_stderr_line $'\tdump-tree'
	run --separate-stderr mfs i d /dev/null
	assert_failure 1
	assert_stderr_line "mfs inspect-internal: ambiguous token 'd'"
}

@test "dispatch: an unknown token names the token and shows the group usage, exit 1" {
	run --separate-stderr mfs foo
	assert_failure 1
	assert_stdout_empty
	assert_stderr_line "mfs: unknown token 'foo'"
	assert_stderr_regex '^usage: mfs '
	run --separate-stderr mfs filesystem frobnicate
	assert_failure 1
	assert_stderr_line "mfs filesystem: unknown token 'frobnicate'"
	assert_stderr_line "usage: mfs filesystem <command> [<args>]"
	run --separate-stderr mfs device scanx
	assert_failure 1
	assert_stderr_line "mfs device: unknown token 'scanx'"
}

@test "dispatch: --help at every level prints usage on stdout, exit 0" {
	while IFS=";" read -r args want; do
		run --separate-stderr mfs $args
		assert_success
		assert_stderr_empty
		assert_line --index 0 "$want"
	done <<-'EOF'
		--help;usage: mfs [--help] [--version] [--format <format>] [-v|--verbose] [-q|--quiet] <group> [<group>...] <command> [<args>]
		filesystem --help;usage: mfs filesystem <command> [<args>]
		filesystem show --help;usage: mfs filesystem show [options] [<path>|<uuid>|<device>|<label>]
		filesystem label --help;usage: mfs filesystem label <device> [<newlabel>]
		device --help;usage: mfs device <command> [<args>]
		device scan --help;usage: mfs device scan [-d|--all-devices] [<device>...]
		device ready --help;usage: mfs device ready [--udev] <device>
		inspect-internal --help;usage: mfs inspect-internal <command> <args>
		inspect-internal dump-super --help;usage: mfs inspect-internal dump-super [options] <device> [<device>...]
		inspect-internal dump-tree --help;usage: mfs inspect-internal dump-tree [options] <device> [<device>...]
		check --help;usage: mfs check [options] <device> [<device>...]
		mkfs --help;usage: mkfs.mfs [options] <dev> [<dev>...]
		version --help;usage: mfs version
		help --help;usage: mfs help [<group>...] [<command>]
	EOF
	# the usage of a command: synopsis, description, options
	run --separate-stderr mfs check --help
	assert_line "    Check structural integrity of an unmounted filesystem."
	assert_line --regexp '^    -s\|--super N +use superblock copy N \(0, 1 or 2\)$'
	# --help wins over other arguments, also after them
	run --separate-stderr mfs filesystem show /nonexistent --help
	assert_success
	assert_line --index 0 --partial "usage: mfs filesystem show"
	run --separate-stderr mkfs.mfs --help
	assert_success
	assert_line --index 0 "usage: mkfs.mfs [options] <dev> [<dev>...]"
	assert_line --regexp '^    -K\|--nodiscard +do not discard'
	# commands with JSON output say so
	run --separate-stderr mfs filesystem show --help
	assert_line "    Global options:"
	assert_line --regexp '^    --format TYPE +where TYPE is: text, json$'
}

@test "dispatch: help command and bare group/program" {
	run --separate-stderr mfs help
	assert_success
	assert_line --index 0 --partial "usage: mfs "
	run --separate-stderr mfs help filesystem show
	assert_success
	assert_line --index 0 "usage: mfs filesystem show [options] [<path>|<uuid>|<device>|<label>]"
	run --separate-stderr mfs help fi
	assert_success
	assert_line --index 0 "usage: mfs filesystem <command> [<args>]"
	run --separate-stderr mfs help nosuch
	assert_failure 1
	assert_stderr_line "mfs: unknown token 'nosuch'"

	# no command: usage on stderr, exit 1
	run --separate-stderr mfs
	assert_failure 1
	assert_stdout_empty
	assert_stderr_regex '^usage: mfs '
	assert_stderr_line "Any command name can be shortened as far as it stays unambiguous,"
	run --separate-stderr mfs filesystem
	assert_failure 1
	assert_stdout_empty
	assert_stderr_line "usage: mfs filesystem <command> [<args>]"
}

@test "dispatch: unknown options give the command name and a --help hint, exit 1" {
	run --separate-stderr mfs filesystem show --bogus
	assert_failure 1
	assert_stdout_empty
	assert_stderr_line "mfs filesystem show: unrecognized option '--bogus'"
	assert_stderr_line "Try 'mfs filesystem show --help' for more information"
	# abbreviated on the command line, full name in the message
	run --separate-stderr mfs fi sh --bogus
	assert_failure 1
	assert_stderr_line "mfs filesystem show: unrecognized option '--bogus'"
	run --separate-stderr mfs check -z /dev/null
	assert_failure 1
	assert_stderr_line "mfs check: invalid option 'z'"
	assert_stderr_line "Try 'mfs check --help' for more information"
	run --separate-stderr mfs inspect-internal dump-super -s
	assert_failure 1
	assert_stderr_regex "^mfs inspect-internal dump-super: .*'s'"
	run --separate-stderr mfs device ready --bogus x
	assert_failure 1
	assert_stderr_line "mfs device ready: unrecognized option '--bogus'"
	assert_stderr_line "Try 'mfs device ready --help' for more information"
	run --separate-stderr mkfs.mfs --bogus /dev/null
	assert_failure 1
	assert_stderr_line "Try 'mkfs.mfs --help' for more information"
}

@test "dispatch: -h is not help" {
	run --separate-stderr mfs filesystem show -h
	assert_failure 1
	assert_stdout_empty
	refute grep -q '^usage:' <<<"$stderr"
	assert_stderr_line "mfs filesystem show: invalid option 'h'"
	run --separate-stderr mfs check -h
	assert_failure 1
	assert_stdout_empty
	refute grep -q '^usage:' <<<"$stderr"
	run --separate-stderr mkfs.mfs -h
	assert_failure 1
	assert_stdout_empty
}

@test "dispatch: --version and version" {
	run --separate-stderr mfs --version
	assert_success
	assert_output --regexp '^mfs v[0-9]+\.[0-9]+\.[0-9]+$'
	v=$output
	run --separate-stderr mfs version
	assert_success
	assert_output "$v"
	run --separate-stderr mfs version extra
	assert_failure 1
	assert_stderr_line "mfs version: exactly 0 arguments expected, 1 given"
}

@test "dispatch: unknown global option exits 129" {
	run --separate-stderr mfs --bogus filesystem show
	[ "$status" -eq 129 ]
	assert_stderr_line "Unknown global option: --bogus"
	run --separate-stderr mfs -z filesystem show
	[ "$status" -eq 129 ]
	assert_stderr_line "Unknown global option: -z"
	run --separate-stderr mfs --format
	assert_failure 1
}

@test "dispatch: --format values and commands without JSON" {
	run --separate-stderr mfs --format xml filesystem show
	assert_failure 1
	assert_stderr_line 'ERROR: invalid output format "xml"'
	assert_stderr_line "Options for --format are: text, json"
	run --separate-stderr mfs --format json rescue super-recover /dev/null
	assert_failure 1
	assert_stderr_line "ERROR: output format json is unsupported for this command"
	# check has a JSON summary now: a check that could not run says so
	run --separate-stderr mfs --format json check /dev/null
	assert_failure 1
	assert_output --partial '"result": "not-run"'
	run --separate-stderr mfs --format json device ready /dev/null
	assert_failure 1
	assert_stderr_line "ERROR: output format json is unsupported for this command"
	make_images 1
	mkfs.mfs -q "$T/img1"
	run --separate-stderr mfs --format text filesystem show "$T/img1"
	assert_success
	assert_line --index 0 --regexp '^Label: none  uuid: '
}

@test "dispatch: argument count errors" {
	run --separate-stderr mfs device ready
	assert_failure 1
	assert_stderr_line "mfs device ready: exactly 1 argument expected, 0 given"
	run --separate-stderr mfs filesystem label a b c
	assert_failure 1
	assert_stderr_line "mfs filesystem label: too many arguments: 3 but at most 2 expected"
	run --separate-stderr mfs inspect-internal dump-super
	assert_failure 1
	assert_stderr_line "mfs inspect-internal dump-super: not enough arguments: 0 but at least 1 expected"
	run --separate-stderr mfs fi sh a b
	assert_failure 1
	assert_stderr_line "mfs filesystem show: too many arguments: 2 but at most 1 expected"
}

@test "dispatch: the program name selects mkfs.mfs / fsck.mfs behaviour" {
	ln -s "$MFS_BUILD/mfs" "$T/mkfs.mfs"
	ln -s "$MFS_BUILD/mfs" "$T/fsck.mfs"
	run --separate-stderr "$T/mkfs.mfs" -V
	assert_success
	assert_output --regexp '^mkfs\.mfs, part of mfs v'
	run --separate-stderr "$T/fsck.mfs"
	[ "$status" -eq 16 ]
	run --separate-stderr "$MFS_BUILD/mfs" -V
	[ "$status" -eq 129 ]
}
