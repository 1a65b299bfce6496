#!/usr/bin/env bats
# The restriper on small, fairly full filesystems: a chunk whose new layout
# does not fit in one piece is replaced by several chunks over the same
# logical range (DESIGN §5), so a convert that fits in total space
# completes, online and offline; one that does not fit is refused before
# anything moves. Every operation is followed by a check of every file's
# sha256 and a clean `mfs check`.

load helpers
load restripe

# The template: 3 x 512M, data raid0 and metadata raid1, 600 MiB of files
# (about 55% of what df shows). Data chunks are 153 MiB raid0 stripes of
# 51 MiB on every device, the metadata chunk 153 MiB on two: as single and
# DUP they need holes the devices no longer have in one piece.
setup_file() {
	local src=$BATS_FILE_TMPDIR/src n

	mkdir -p "$src/d"
	for n in 1 2 3 4 5; do
		gen_file "$src/f$n" 100
	done
	gen_file "$src/d/g" 100
	echo small >"$src/d/small"
	truncate -s 512M "$BATS_FILE_TMPDIR/img1" "$BATS_FILE_TMPDIR/img2" "$BATS_FILE_TMPDIR/img3"
	MFS_REGISTRY="$BATS_FILE_TMPDIR/registry" mkfs.mfs -q -d raid0 -m raid1 -r "$src" \
		"$BATS_FILE_TMPDIR/img1" "$BATS_FILE_TMPDIR/img2" "$BATS_FILE_TMPDIR/img3"
	sums "$src" >"$BATS_FILE_TMPDIR/want"
	rm -rf "$src"
}

# nearly_full: a private copy of the template as $T/img1..3
nearly_full() {
	cp --sparse=always "$BATS_FILE_TMPDIR/img1" "$BATS_FILE_TMPDIR/img2" \
		"$BATS_FILE_TMPDIR/img3" "$T/"
	cp "$BATS_FILE_TMPDIR/want" "$T/want"
	mfs device scan "$T/img1" "$T/img2" "$T/img3" >/dev/null
}

# profiles_are DEV DATA META: every chunk has its type's profile
profiles_are() {
	run awk -v D="Data|$2" -v M="$3" '{ split($2, a, "|") }
		a[1] == "Data" && $2 != D || a[1] != "Data" && a[2] != M { print }' \
		<(chunk_layout "$1")
	assert_output ""
}

# ranges DEV: "start end" of each run of adjacent chunks, in order (the
# logical ranges the chunks cover, however many pieces they are in)
ranges() {
	mfs inspect-internal dump-tree -t chunk "$1" | awk '
		/CHUNK_ITEM/ { s = $0; sub(/.*CHUNK_ITEM /, "", s); sub(/\).*/, "", s); start = s }
		$1 == "length" && start != "" { print start, start + $2; start = "" }' |
		sort -n | awk 'NR > 1 && $1 == end { end = $2; next }
			NR > 1 { print begin, end } { begin = $1; end = $2 } END { print begin, end }'
}

@test "small fs: offline convert raid0 -> single, raid1 -> dup splits chunks and completes" {
	nearly_full
	ranges "$T/img1" >"$T/ranges"
	nbefore=$(chunk_layout "$T/img1" | wc -l)
	run --separate-stderr mfs balance start --dry-run -f -dconvert=single -mconvert=dup "$T/img1"
	assert_success
	assert_line "It fits."
	run --separate-stderr mfs balance start -q -f -dconvert=single -mconvert=dup "$T/img1"
	assert_success
	assert_output --regexp '^Done, had to relocate [0-9]+ out of [0-9]+ chunks$'
	run mfs balance status "$T/img1"
	assert_success
	profiles_are "$T/img1" single DUP
	# some chunks went in several pieces, over exactly the same ranges
	[ "$(chunk_layout "$T/img1" | wc -l)" -gt "$nbefore" ]
	ranges "$T/img1" | diff "$T/ranges" -
	# every chunk has its block group of the same length
	diff <(chunk_usage "$T/img1" | awk '{ print $1, $2 }') \
		<(mfs inspect-internal dump-tree -t chunk "$T/img1" | awk '
			/CHUNK_ITEM/ { s = $0; sub(/.*CHUNK_ITEM /, "", s); sub(/\).*/, "", s); l = s }
			$1 == "length" && l != "" { print l, $2; l = "" }')
	verify_offline "$T/img1"
}

@test "small fs: online convert raid0 -> single, raid1 -> dup completes; files intact" {
	nearly_full
	mnt "$T/img1"
	run --separate-stderr mfs balance start -q -f -dconvert=single -mconvert=dup "$T/mnt"
	assert_success
	assert_output --regexp '^Done, had to relocate [0-9]+ out of [0-9]+ chunks$'
	verify_online
	# the split chunks take writes and frees like any other
	gen_file "$T/mnt/new" 20
	rm "$T/mnt/f1"
	sync
	sums "$T/mnt" >"$T/want"
	umnt
	profiles_are "$T/img1" single DUP
	verify_offline "$T/img1"
}

@test "small fs: a convert that does not fit is refused before anything moves" {
	nearly_full
	for n in 1 2 3; do fp[$n]=$(fingerprint "$T/img$n"); done
	chunk_layout "$T/img1" >"$T/before"
	# raid1c3 keeps three copies of 600 MiB: more than the 1.5 GiB there is
	run --separate-stderr mfs balance start --dry-run -dconvert=raid1c3 "$T/img1"
	assert_failure 1
	assert_line "It does NOT fit."
	run --separate-stderr mfs balance start -dconvert=raid1c3 "$T/img1"
	assert_failure 1
	assert_stderr_regex '^ERROR: balance: not enough free space for (the new layouts|the data to move): [0-9]+ bytes needed, [0-9]+ available \([0-9]+ missing\); nothing was moved$'
	run mfs balance status "$T/img1"
	assert_success
	assert_output "No balance found on '$T/img1'"
	for n in 1 2 3; do assert_untouched "$T/img$n" "${fp[$n]}"; done
	chunk_layout "$T/img1" | diff "$T/before" -
	# online the same, and the mount goes on as before
	mnt "$T/img1"
	run --separate-stderr mfs balance start -dconvert=raid1c3 "$T/mnt"
	assert_failure 1
	assert_stderr_regex '^ERROR: balance: not enough free space for (the new layouts|the data to move): '
	run mfs balance status "$T/mnt"
	assert_success
	verify_online
	umnt
	chunk_layout "$T/img1" | diff "$T/before" -
	verify_offline "$T/img1"
}
