#!/usr/bin/env bats
# --format json against the schemas of Documentation/json-schema/: every
# command that prints JSON, on an unmounted and on a mounted filesystem,
# in the states that change its layout (a paused balance with filters, a
# finished replace, a check finding errors); and the schemas catch a field
# renamed, dropped, added or of the wrong type.

load helpers
load restripe

SCHEMAS="$BATS_TEST_DIRNAME/../../Documentation/json-schema"

# Every command whose --help offers --format, and the array it prints.
declare -gA ARRAY=(
	["mfs filesystem show"]=filesystems
	["mfs filesystem status"]=filesystem-status
	["mfs filesystem df"]=filesystem-df
	["mfs filesystem usage"]=filesystem-usage
	["mfs device usage"]=device-usage
	["mfs device stats"]=device-stats
	["mfs device delete"]=balance-status
	["mfs scrub status"]=scrub-status
	["mfs balance status"]=balance-status
	["mfs replace status"]=replace-status
	["mfs check"]=check
)

# json_ok ARRAY STATUS CMD...: `mfs --format json CMD...` exits STATUS and
# prints a document with ARRAY that its schema accepts; the document is
# left in $T/doc.json
json_ok() {
	local array=$1 want=$2

	shift 2
	run --separate-stderr mfs --format json "$@"
	[ "$status" -eq "$want" ] || {
		echo "mfs $* exited $status, not $want: $stderr" >&2
		return 1
	}
	printf '%s\n' "$output" >"$T/doc.json"
	run python3 "$BATS_TEST_DIRNAME/json-validate.py" "$SCHEMAS" "$array" <"$T/doc.json"
	assert_success
	assert_output ""
}

# field ARRAY KEY: KEY of the first object of ARRAY in $T/doc.json
field() {
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]][0][sys.argv[3]])' \
		"$T/doc.json" "$1" "$2"
}

# every_layout DEV...: each command on the filesystem of DEV (unmounted:
# images; mounted: the mount point), checked against its schema;
# $STATUS_RC: the exit status of filesystem status (1: degraded)
every_layout() {
	local offline=()

	[ -d "$1" ] || offline=(--offline)
	json_ok filesystem-status "${STATUS_RC:-0}" filesystem status "$@"
	json_ok filesystem-df 0 filesystem df "$@"
	json_ok filesystem-usage 0 filesystem usage "$@"
	json_ok device-usage 0 device usage "$@"
	json_ok device-stats 0 device stats "${offline[@]}" "$1"
	json_ok scrub-status 0 scrub status "$@"
	json_ok balance-status 0 balance status "$@"
	json_ok balance-status 0 device delete status "$1"
	json_ok replace-status 0 replace status "$1"
}

fs_with_files() {
	make_images 3 1G
	mkdir -p "$T/src/d"
	gen_file "$T/src/f1" 6
	gen_file "$T/src/d/f2" 3
	echo hello >"$T/src/d/tiny"
	mkfs.mfs -q -d raid1 -m raid1 -r "$T/src" "$T/img1" "$T/img2"
	mfs device scan "$T/img1" "$T/img2" >/dev/null
}

@test "json-schema: every command offering --format has a schema and a case here" {
	local cmd covered=() offered=()

	while read -r cmd; do
		"$MFS_BUILD/${cmd%% *}" ${cmd#* } --help 2>/dev/null | grep -q -- '--format' &&
			offered+=("$cmd")
	done < <(python3 "$BATS_TEST_DIRNAME/helptext.py" commands | grep '^mfs ')
	covered=("${!ARRAY[@]}")
	run diff <(printf '%s\n' "${offered[@]}" | sort) <(printf '%s\n' "${covered[@]}" | sort)
	assert_success
	for cmd in "${covered[@]}"; do
		[ -s "$SCHEMAS/${ARRAY[$cmd]}.json" ] || {
			echo "no schema for $cmd: $SCHEMAS/${ARRAY[$cmd]}.json" >&2
			return 1
		}
		grep -q "^## \`${cmd#mfs }\`" "$BATS_TEST_DIRNAME/../../Documentation/json-output.md" ||
			[ "$cmd" = "mfs device delete" ] || {
			echo "$cmd has no section in json-output.md" >&2
			return 1
		}
	done
}

@test "json-schema: every layout of an unmounted filesystem; check clean, with errors, not run" {
	fs_with_files
	json_ok filesystems 0 filesystem show "$T/img1"
	[ "$(field filesystems total_devices)" = 2 ]
	every_layout "$T/img1" "$T/img2"
	[ "$(field replace-status status)" = never ]

	json_ok check 0 check "$T/img1"
	[ "$(field check result)" = clean ]
	[ "$(field check uuid)" = "$(fs_uuid "$T/img1")" ]
	# nothing but the document on stdout, the phases on stderr
	[[ $stderr == *"[1/5] checking superblocks"* ]]

	zero "$T/img2" 65536 4096
	json_ok check 1 check "$T/img1"
	[ "$(field check result)" = errors ]
	[ "$(field check errors)" -ge 1 ]
	[ "$(field check exit-code)" = 1 ]

	truncate -s 64M "$T/plain"
	json_ok check 1 check "$T/plain"
	[ "$(field check result)" = not-run ]
	[ "$(field check uuid)" = "" ]
}

@test "json-schema: every layout of a mounted filesystem; a finished replace, a scrub" {
	fs_with_files
	mnt "$T/img1"
	json_ok filesystems 0 filesystem show "$T/mnt"
	every_layout "$T/mnt"
	run mfs scrub start -B "$T/mnt"
	assert_success
	json_ok scrub-status 0 scrub status -d "$T/mnt"
	[ "$(field scrub-status status)" = finished ]

	run mfs replace start -B 2 "$T/img3" "$T/mnt"
	assert_success
	json_ok replace-status 0 replace status "$T/mnt"
	[ "$(field replace-status status)" = finished ]
	[ "$(field replace-status progress)" = 100.0 ]
	# the refusal of the other verbs of device delete
	run --separate-stderr mfs --format json device delete 2 "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: output format json is supported only by 'device delete status'"
}

@test "json-schema: a paused balance with filters, mounted and unmounted" {
	fs_with_files
	mnt "$T/img1"
	hold_at 1
	# three chunks: held at the first, paused after it
	run mfs balance start --bg -dconvert=raid0,soft -musage=100 "$T/mnt"
	assert_success
	wait_held
	json_ok balance-status 1 balance status "$T/mnt"
	[ "$(field balance-status state)" = running ]
	run while_held mfs balance pause "$T/mnt"
	assert_success
	json_ok balance-status 1 balance status "$T/mnt"
	[ "$(field balance-status state)" = paused ]
	[ "$(field balance-status operation)" = balance ]
	grep -q '"convert": "RAID0"' "$T/doc.json"
	grep -q '"usage-max": 100' "$T/doc.json"
	json_ok balance-status 1 device delete status "$T/mnt"
	umnt
	json_ok balance-status 1 balance status "$T/img1"
	[ "$(field balance-status state)" = paused ]
	run mfs balance cancel "$T/img1"
	assert_success
}

@test "json-schema: a degraded filesystem: a member missing, chunks written reduced" {
	make_images 2 1G
	mkfs.mfs -q -d raid1 -m raid1 "$T/img1" "$T/img2"
	mv "$T/img2" "$T/gone2"
	mnt -o degraded "$T/img1"
	head -c $((8 * MiB)) /dev/urandom >"$T/mnt/f"
	sync
	json_ok filesystems 0 filesystem show "$T/mnt"
	[ "$(field filesystems missing_devices)" = 1 ]
	STATUS_RC=1 every_layout "$T/mnt"
	json_ok filesystem-status 1 filesystem status "$T/mnt"
	[ "$(field filesystem-status state)" = degraded ]
	json_ok filesystem-df 0 filesystem df "$T/mnt"
	grep -q '"requested-profile": "RAID1"' "$T/doc.json"
	json_ok filesystem-usage 0 filesystem usage "$T/mnt"
	grep -q '"requested-profile": "RAID1"' "$T/doc.json"
	umnt
	json_ok filesystem-status 1 filesystem status "$T/img1"
	json_ok check 1 check "$T/img1"
}

@test "json-schema: the schemas refuse a renamed, missing, extra or mistyped field" {
	local name

	fs_with_files
	mfs --format json filesystem show "$T/img1" >"$T/filesystems"
	for name in filesystem-status filesystem-df filesystem-usage device-usage scrub-status \
		    balance-status; do
		mfs --format json ${name/-/ } "$T/img1" >"$T/$name" || [ "$name" = balance-status ]
	done
	mfs --format json device stats --offline "$T/img1" >"$T/device-stats"
	mfs --format json replace status "$T/img1" >"$T/replace-status"
	mfs --format json check "$T/img1" >"$T/check" 2>/dev/null
	for name in "${ARRAY[@]}"; do
		run python3 "$BATS_TEST_DIRNAME/json-validate.py" "$SCHEMAS" "$name" <"$T/$name"
		assert_success
		# the first field of the first object renamed: the schema names both
		python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
obj = doc[sys.argv[2]][0]
key = next(iter(obj))
obj[key + "_renamed"] = obj.pop(key)
json.dump(doc, sys.stdout)
print(key, file=sys.stderr)
' "$T/$name" "$name" >"$T/renamed" 2>"$T/key"
		run python3 "$BATS_TEST_DIRNAME/json-validate.py" "$SCHEMAS" "$name" <"$T/renamed"
		assert_failure 1
		assert_line "$name: $name/0: '$(cat "$T/key")' is a required property"
		assert_line --partial "('$(cat "$T/key")_renamed' was unexpected)"
	done
	# a number turned into a string, a nested field dropped
	sed 's/"total": \([0-9]*\)/"total": "\1"/' "$T/filesystem-df" >"$T/bad"
	run python3 "$BATS_TEST_DIRNAME/json-validate.py" "$SCHEMAS" filesystem-df <"$T/bad"
	assert_failure 1
	assert_line --regexp "^filesystem-df: filesystem-df/0/total: '[0-9]+' is not of type 'integer'$"
	grep -v '"free-estimated-min"' "$T/filesystem-usage" >"$T/bad"
	run python3 "$BATS_TEST_DIRNAME/json-validate.py" "$SCHEMAS" filesystem-usage <"$T/bad"
	assert_failure 1
	assert_output "filesystem-usage: filesystem-usage/0/overall: 'free-estimated-min' is a required property"
	# a state the documentation does not list
	sed 's/"state": "ok"/"state": "fine"/' "$T/filesystems" >"$T/bad"
	run python3 "$BATS_TEST_DIRNAME/json-validate.py" "$SCHEMAS" filesystems <"$T/bad"
	assert_failure 1
	assert_line --partial "filesystems: filesystems/0/devices/0/state: 'fine' is not one of"
}
