#!/usr/bin/env bats
# The progress display of every long operation goes through one helper
# (common/progress.c, whose text, bar and timing tests/unit/test-progress
# checks). Here each operation is shown to use it: MFS_TEST_PROGRESS=plain
# or =tty makes it show every update and the end, whatever the clock, so
# nothing waits for a second to pass.

load helpers
load restripe

LINE='[0-9.]+[KMGT]?i?B of [0-9.]+[KMGT]?i?B \([0-9]+%\), [0-9.]+[KMGT]?i?B/s, ETA ([0-9]+:[0-9]{2}:[0-9]{2}|--:--:--)'
DONE_RE='([0-9.]+[KMGT]?i?B) of \1 \(100%\), [0-9.]+[KMGT]?i?B/s, ETA 0:00:00'
# N/N chunks, then DONE_RE (whose group is the second here)
CHUNKS_DONE='^([0-9]+)/\1 chunks, ([0-9.]+[KMGT]?i?B) of \2 \(100%\), [0-9.]+[KMGT]?i?B/s, ETA 0:00:00$'

setup_fs() {
	make_images 3 1G
	mkdir -p "$T/src/d"
	gen_file "$T/src/f1" 6
	gen_file "$T/src/d/f2" 2
	mkfs.mfs -q -d raid1 -m raid1 -r "$T/src" "$T/img1" "$T/img2"
	mfs device scan "$T/img1" "$T/img2" >/dev/null
}

@test "progress: balance, convert, device delete, replace, resize: chunk lines ending at 100%" {
	setup_fs
	export MFS_TEST_PROGRESS=plain
	run mfs balance start --full-balance "$T/img1"
	assert_success
	assert_line --regexp "^[0-9]+/[0-9]+ chunks, $LINE\$"
	assert_line --regexp "$CHUNKS_DONE"
	run mfs balance start -dconvert=raid0 "$T/img1"
	assert_success
	assert_line --regexp "$CHUNKS_DONE"
	run mfs device add "$T/img3" "$T/img1"
	assert_success
	run mfs device delete 2 "$T/img1"
	assert_success
	assert_line --regexp "$CHUNKS_DONE"
	truncate -s 1G "$T/img4"
	run mfs replace start -B 3 "$T/img4" "$T/img1"
	assert_success
	assert_line --regexp "$CHUNKS_DONE"
	run mfs filesystem resize 1:-300m "$T/img1"
	assert_success
	assert_line --regexp "^[0-9]+/[0-9]+ chunks, "
	# -q: nothing
	run mfs balance start -q --full-balance "$T/img1"
	assert_success
	refute_line --regexp "chunks, "
}

@test "progress: scrub, check and restore: byte lines ending at 100%" {
	setup_fs
	export MFS_TEST_PROGRESS=plain
	run mfs scrub start -B "$T/img1"
	assert_success
	assert_line --regexp "^$DONE_RE\$"
	run -0 --separate-stderr mfs check --check-data-csum "$T/img1"
	# on stderr, with the phases; the total is the used data and metadata
	[[ $stderr =~ \[6/6\]\ checking\ data\ checksums ]]
	grep -qE "^$LINE\$" <<<"$stderr"
	grep -qE "^$DONE_RE\$" <<<"$stderr"
	refute_output --regexp "ETA"
	run -0 --separate-stderr mfs --format json check "$T/img1"
	grep -qE "^$DONE_RE\$" <<<"$stderr"
	run -0 --separate-stderr mfs check -q "$T/img1"
	refute [ -n "$(grep ETA <<<"$stderr")" ]

	mkdir "$T/out"
	run -0 --separate-stderr mfs restore "$T/img1" "$T/out"
	grep -qE "^8.00MiB of 8.00MiB \(100%\), [0-9.]+[KMGT]?i?B/s, ETA 0:00:00\$" <<<"$stderr"
	# the bar: redrawn in place, full at the end (run drops the final newline)
	mkdir "$T/out2"
	MFS_TEST_PROGRESS=tty run -0 --separate-stderr mfs restore "$T/img1" "$T/out2"
	[[ $stderr == *$'\r[####################] 8.00MiB of 8.00MiB (100%), '*'ETA 0:00:00' ]]
	[[ $stderr == *$'\r[##########'* ]]
	# -v lists the items instead
	mkdir "$T/out3"
	run -0 --separate-stderr mfs restore -v "$T/img1" "$T/out3"
	refute [ -n "$(grep ETA <<<"$stderr")" ]
}
