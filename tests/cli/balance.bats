#!/usr/bin/env bats
# mfs balance start|pause|resume|cancel|status: filters, convert between
# every pair of profiles, --dry-run, refusals, persistence across unmount
# and daemon crashes. Every operation is followed by a check of every
# file's sha256 (online, and offline through `mfs check` + a ro mount).

load helpers
load restripe

setup_file() {
	big_template
}

# small_fs N SIZE MKFS-OPTIONS...: N images of SIZE, a few MiB of files.
small_fs() {
	local n=$1 size=$2

	shift 2
	make_images "$n" "$size"
	mkdir -p "$T/src/d/e"
	gen_file "$T/src/f1" 5
	gen_file "$T/src/d/f2" 3
	head -c 12345 /dev/urandom >"$T/src/d/e/odd"
	echo hello >"$T/src/d/e/tiny"
	: >"$T/src/empty"
	mkfs.mfs -q "$@" -r "$T/src" $(imgs "$n")
	sums "$T/src" >"$T/want"
}

PROFILES="single dup raid0 raid1 raid1c3 raid1c4 raid10 raid5 raid6"

# ui_profile P: how dump-tree names the profile (upper case, except single).
ui_profile() {
	[ "$1" = single ] && echo single || tr a-z A-Z <<<"$1"
}

# ---------------------------------------------------------------------------

@test "balance: a full balance spreads data and metadata evenly over added devices" {
	# raid10 stripes every chunk over all devices (in pairs), so once every
	# chunk is relocated over four devices each one holds exactly a quarter.
	# (raid1 puts a chunk on two of three devices: the used bytes then differ
	# by up to a whole chunk stripe, a tenth of the filesystem - no profile
	# with devs_max limited can promise 10% on a small filesystem.)
	make_images 4 1G
	mkdir -p "$T/src"
	gen_file "$T/src/a" 150
	gen_file "$T/src/b" 90
	echo x >"$T/src/x"
	mkfs.mfs -q -d raid10 -m raid10 -r "$T/src" "$T/img1" "$T/img2"
	sums "$T/src" >"$T/want"
	mnt "$T/img1"
	verify_online

	run --separate-stderr mfs device add "$T/img3" "$T/img4" "$T/mnt"
	assert_success
	assert_stderr_empty
	[ "$(nr_devices "$T/img1")" = 4 ]
	[ "$(dev_used "$T/img1" 3)" = 0 ]
	[ "$(dev_used "$T/img1" 4)" = 0 ]

	# without --full-balance: btrfs's warning (no countdown without a terminal)
	run --separate-stderr mfs balance start "$T/mnt" </dev/null
	assert_success
	assert_line --index 0 "WARNING:"
	assert_line "	Full balance without filters requested. This operation is very"
	assert_line "	Use 'mfs balance start --full-balance' option to skip this"
	assert_line "Starting balance without any filters."
	assert_line --regexp '^Done, had to relocate [0-9]+ out of [0-9]+ chunks$'
	refute_line --regexp '^10 9 8'
	verify_online
	umnt

	# every chunk now spans the four devices, and they hold the same bytes
	chunk_layout "$T/img1" >"$T/layout"
	cat "$T/layout"
	run awk 'NF != 6 { print }' "$T/layout"
	assert_output ""
	for d in 1 2 3 4; do u[$d]=$(dev_used "$T/img1" $d); done
	echo "used: ${u[*]}"
	min=${u[1]} max=${u[1]}
	for d in 2 3 4; do
		((u[d] < min)) && min=${u[d]}
		((u[d] > max)) && max=${u[d]}
	done
	((min > 0))
	(((max - min) * 10 <= max))
	verify_offline "$T/img1"

	# --full-balance: no warning; offline the counts are exact: every chunk
	# is considered and relocated (empty ones by removal)
	before=$(chunk_layout "$T/img1" | wc -l)
	run --separate-stderr mfs balance start -q --full-balance "$T/img1"
	assert_success
	assert_output "Done, had to relocate $before out of $before chunks"
	assert_stderr_empty
	verify_offline "$T/img1"
}

# deletion_committed: the data used in $T/mnt, after an fsync, is back
# under 128 MiB (the kernel has let go of the deleted file and it was
# committed)
deletion_committed() {
	local used

	sync "$T/mnt/f"
	used=$(mfs filesystem df -b "$T/mnt" | awk -F'used=' '/^Data,/ { print $2 }')
	[ "$used" -lt $((128 * MiB)) ]
}

@test "balance filters: usage, devid, drange, vrange, profiles, limit, stripes, convert+soft" {
	# 2 x 256M, single data: 51 MiB data chunks, each on one device.
	# One 127 MiB file fills two chunks and about half of a third; a
	# file written and deleted online leaves a fourth chunk empty.
	make_images 2 256M
	mkdir -p "$T/src"
	gen_file "$T/src/f" 127
	mkfs.mfs -q -d single -m raid1 -r "$T/src" $(imgs 2)
	sums "$T/src" >"$T/want"
	mnt -o commit=3600 "$T/img1"
	gen_file "$T/mnt/tmp" 40
	sync "$T/mnt/tmp"
	rm "$T/mnt/tmp"
	verify_online
	# the deletion committed (an fsync commits everything), then a crash:
	# the cleaner that umount's commit runs would remove the empty chunk
	wait_until 600 deletion_committed
	kill_daemon
	mkdir "$T/orig"
	cp --sparse=always $(imgs 2) "$T/orig/"
	chunk_usage "$T/img1" >"$T/usage"
	chunk_layout "$T/img1" >"$T/layout0"
	cat "$T/usage" "$T/layout0"
	total=$(wc -l <"$T/layout0")
	data=$(awk '$4 ~ /^Data/ { print $1 }' "$T/usage")
	[ "$(wc -w <<<"$data")" = 4 ]
	empty=$(awk '$4 ~ /^Data/ && $3 == 0 { print $1 }' "$T/usage")
	[ "$(wc -w <<<"$empty")" = 1 ]
	full=$(awk '$4 ~ /^Data/ && $3 * 100 >= $2 * 90 { print $1 }' "$T/usage")
	[ "$(wc -w <<<"$full")" = 2 ]
	half=$(awk '$4 ~ /^Data/ && $3 * 100 > $2 * 30 && $3 * 100 < $2 * 70 { print $1 }' "$T/usage")
	[ "$(wc -w <<<"$half")" = 1 ]
	# pct of the half-full chunk, rounded down: usage=pct must not take it
	# (used < pct% is false), usage=pct+1 must
	full1=$(head -n 1 <<<"$full")
	pct=$(awk -v l="$half" '$1 == l { print int($3 * 100 / $2) }' "$T/usage")

	# case EXPECTED-LOGICALS BALANCE-ARGS...: from the original images,
	# exactly these chunks move; the Done line counts them; files intact.
	case_() {
		local want n
		want=$(tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -n)
		n=$(sed '/^$/d' <<<"$want" | wc -l)
		shift
		cp --sparse=always "$T"/orig/img* "$T/"
		chunk_layout "$T/img1" >"$T/before"
		run --separate-stderr mfs balance start -q "$@" "$T/img1"
		assert_success
		assert_output "Done, had to relocate $n out of $total chunks"
		chunk_layout "$T/img1" >"$T/after"
		got=$(moved "$T/before" "$T/after")
		if [ "$got" != "$want" ]; then
			echo "balance $*: moved [$got], expected [$want]" >&2
			return 1
		fi
		verify_offline "$T/img1"
	}

	# usage: min% <= used < max%, as btrfs (usage=0: only empty chunks);
	# sel_usage MIN MAX: the data chunks that rule picks
	sel_usage() {
		awk -v lo="$1" -v hi="$2" '$4 ~ /^Data/ {
			l = $2; a = int(l / 100) * lo + int((l % 100) * lo / 100)
			b = hi == 0 ? 1 : int(l / 100) * hi + int((l % 100) * hi / 100)
			if ($3 >= a && $3 < b) print $1 }' "$T/usage"
	}
	[ "$(sel_usage 0 0)" = "$empty" ]
	[ "$(sel_usage 0 $pct | sort -n)" = "$empty" ]
	[ "$(sel_usage $pct $((pct + 1)))" = "$half" ]
	case_ "$empty" -dusage=0
	case_ "$empty" -dusage=$pct
	case_ "$empty $half" -dusage=$((pct + 1))
	case_ "$half" -dusage=$pct..$((pct + 1))
	case_ "$(sel_usage 0 100)" -dusage=0..100
	case_ "" -dusage=$((pct + 1))..$((pct + 2))
	case_ "$(sel_usage 1 100)" -dusage=1..100

	# devid: every data chunk with a stripe there
	d=$(awk -v l="$full1" '$1 == l { split($3, s, ":"); print s[1] }' "$T/layout0")
	want=$(awk -v d="$d" '$2 ~ /^Data/ { for (i = 3; i <= NF; i++) { split($i, s, ":"); if (s[1] == d) print $1 } }' "$T/layout0")
	[ -n "$want" ]
	case_ "$want" -ddevid="$d"
	# drange: only the chunk whose stripe on that device overlaps the range
	off=$(awk -v l="$full1" '$1 == l { split($3, s, ":"); print s[2] }' "$T/layout0")
	case_ "$full1" -ddevid="$d",drange=$off..$((off + 1))
	case_ "" -ddevid="$d",drange=0..$((1024 * 1024))
	# vrange: logical overlap
	case_ "$half" -dvrange=$half..$((half + 1))
	first=$(head -n 1 <<<"$data") last=$(tail -n 1 <<<"$data")
	case_ "$(grep -vx "$last" <<<"$data")" -dvrange=$first..$last
	# profiles: -m covers the system chunks too
	case_ "$data" -dprofiles=single
	case_ "$(awk '$2 !~ /^Data/ { print $1 }' "$T/layout0")" -mprofiles=raid1
	case_ "" -dprofiles=raid1\|raid5
	# limit: the first N selected chunks (in logical order)
	case_ "$(head -n 1 <<<"$data")" -dlimit=1
	case_ "$(head -n 2 <<<"$data")" -dlimit=1..2
	# stripes: single chunks have one stripe
	case_ "$data" -dstripes=1..1
	case_ "" -dstripes=2..4

	# convert with limit: one chunk becomes raid1 (after the empty chunk
	# is gone: two raid1 stripes need room on both devices), then
	# profiles=, stripes= and soft pick by profile
	cp --sparse=always "$T"/orig/img* "$T/"
	run mfs balance start -q -dusage=0 "$T/img1"
	assert_success
	run mfs balance start -q -dconvert=raid1,limit=1 "$T/img1"
	assert_success
	assert_output "Done, had to relocate 1 out of $((total - 1)) chunks"
	chunk_layout "$T/img1" >"$T/layout0"
	run awk '$2 ~ /^Data/ { print $1, $2 }' "$T/layout0"
	assert_line --index 0 "$first Data|RAID1"
	assert_line --index 1 --regexp ' Data\|single$'
	assert_line --index 2 --regexp ' Data\|single$'
	rest=$(awk -v f="$first" '$2 ~ /^Data/ && $1 != f { print $1 }' "$T/layout0")
	verify_offline "$T/img1"
	cp --sparse=always $(imgs 2) "$T/orig/"
	total=$(wc -l <"$T/layout0")
	case_ "$first" -dprofiles=raid1
	case_ "$rest" -dprofiles=single
	case_ "$first $rest" -dprofiles=raid1\|single
	case_ "$first" -dstripes=2
	case_ "$first" -dstripes=2..2
	case_ "$rest" -dstripes=..1
	# soft: only what is not single yet; without soft every data chunk
	case_ "$first" -dconvert=single,soft
	run awk '$2 ~ /^Data/ && $2 != "Data|single" { print }' <(chunk_layout "$T/img1")
	assert_output ""
	case_ "$first $rest" -dconvert=single
	# -s needs -f; then only the system chunks move
	case_ "$(awk '$2 ~ /^System/ { print $1 }' "$T/layout0")" -f -s
}

@test "balance: filter parse errors and refusals change nothing" {
	# big sparse images: chunks then hit their size caps (1 GiB data,
	# 256 MiB metadata) and a convert has room for both layouts of a chunk
	small_fs 3 4G -d raid1 -m raid1
	for i in 1 2 3; do fp[$i]=$(fingerprint "$T/img$i"); done

	refused() {
		local msg=$1 i
		shift
		run --separate-stderr mfs balance start "$@" "$T/img1"
		assert_failure 1
		assert_stderr_line "$msg"
		for i in 1 2 3; do assert_untouched "$T/img$i" "${fp[$i]}"; done
	}
	refused "ERROR: unrecognized balance option: foo" -dfoo
	refused "ERROR: unrecognized balance option: bar" -dusage=5,bar=1
	refused "ERROR: drange filter must be used with devid filter" -ddrange=0..100
	refused "ERROR: 'soft' option can be used only when converting profiles" -dsoft
	refused "ERROR: invalid usage argument: 101" -dusage=101
	refused "ERROR: invalid usage argument: x" -musage=x
	refused "ERROR: invalid convert argument: raid7 (valid: single, dup, raid0, raid1, raid1c3, raid1c4, raid10, raid5, raid6)" -dconvert=raid7
	refused "ERROR: invalid profiles argument: raid1|nope" -dprofiles=raid1\|nope
	refused "ERROR: invalid devid argument: 0" -ddevid=0
	refused "ERROR: invalid limit argument: x" -dlimit=x
	refused "ERROR: invalid limit argument: -3" -dlimit=-3
	refused "ERROR: invalid devid argument: -1" -ddevid=-1
	refused "ERROR: invalid usage argument: -5" -dusage=-5
	refused "ERROR: invalid vrange argument: 10" -dvrange=10
	refused "ERROR: invalid drange argument: 5" -mdevid=1,drange=5
	refused "ERROR: Refusing to explicitly operate on system chunks." -s
	assert_stderr_line "Pass --force if you really want to do that."
	refused "ERROR: Refusing to explicitly operate on system chunks." -sconvert=single
	# lowering metadata redundancy needs -f (raid1 tolerates one failure)
	refused "ERROR: balance: converting metadata to single reduces redundancy, use --force if you want this" -mconvert=single
	refused "ERROR: balance: converting metadata to DUP reduces redundancy, use --force if you want this" -mconvert=dup
	refused "ERROR: balance: converting metadata to RAID0 reduces redundancy, use --force if you want this" -mconvert=raid0
	# too few devices for the target
	refused "ERROR: balance: unable to convert data to RAID1C4: it needs 4 devices, the filesystem has 3" -dconvert=raid1c4
	# a dry run refuses what start would, before estimating space
	refused "ERROR: balance: converting metadata to single reduces redundancy, use --force if you want this" --dry-run -mconvert=single
	refused "ERROR: balance: unable to convert data to RAID1C4: it needs 4 devices, the filesystem has 3" --dry-run -dconvert=raid1c4
	run --separate-stderr mfs balance start --dry-run -f -mconvert=single "$T/img1"
	assert_success
	assert_line "It fits."
	verify_offline "$T/img1"

	# the same refusals online; no chunk moves either
	chunk_layout "$T/img1" >"$T/layout"
	mnt "$T/img1"
	run --separate-stderr mfs balance start -s "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: Refusing to explicitly operate on system chunks."
	run --separate-stderr mfs balance start -mconvert=dup "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: balance: converting metadata to DUP reduces redundancy, use --force if you want this"
	run --separate-stderr mfs balance start -dconvert=raid1c4 "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: balance: unable to convert data to RAID1C4: it needs 4 devices, the filesystem has 3"
	verify_online
	umnt
	chunk_layout "$T/img1" | diff "$T/layout" -

	# with -f lowering metadata redundancy is allowed; raising never needed it
	run --separate-stderr mfs balance start -q -f -mconvert=dup "$T/img1"
	assert_success
	run awk '$2 !~ /^Data/ && $2 !~ /DUP$/ { print }' <(chunk_layout "$T/img1")
	assert_output ""
	verify_offline "$T/img1"
	run mfs balance start -q -mconvert=raid1c3 "$T/img1"
	assert_success
	run awk '$2 !~ /^Data/ && $2 !~ /RAID1C3$/ { print }' <(chunk_layout "$T/img1")
	assert_output ""
	verify_offline "$T/img1"
}

@test "balance --dry-run: chunks, bytes, space needed and whether it fits; nothing moves" {
	# 2 x 256M, 200 MiB of single data in 51 MiB chunks: as raid1 it
	# would need 400 MiB of the 512, with metadata on top
	make_images 2 256M
	mkdir -p "$T/src"
	gen_file "$T/src/a" 200
	mkfs.mfs -q -d single -m raid1 -r "$T/src" $(imgs 2)
	sums "$T/src" >"$T/want"
	for i in 1 2; do fp[$i]=$(fingerprint "$T/img$i"); done
	chunk_layout "$T/img1" >"$T/before"
	nd=$(awk '$2 ~ /^Data/' "$T/before" | wc -l)

	# bytes NUM UNIT-SUFFIXED: the byte count of "12.00MiB"
	bytes() {
		awk -v s="$1" 'BEGIN { n = s + 0; u = s; sub(/^[0-9.]+/, "", u);
			m["B"] = 1; m["KiB"] = 2^10; m["MiB"] = 2^20; m["GiB"] = 2^30; m["TiB"] = 2^40;
			printf "%d\n", n * m[u] }'
	}

	# moving the data chunks elsewhere, same profile: fits
	run --separate-stderr mfs balance start --dry-run -d "$T/img1"
	assert_success
	assert_line --index 0 --regexp "^Would relocate $nd chunks holding 200\.[0-9]+MiB$"
	assert_line --index 1 --regexp '^Space needed: +[0-9.]+(B|KiB|MiB|GiB)$'
	assert_line --index 2 --regexp '^Space available: +[0-9.]+(B|KiB|MiB|GiB)$'
	assert_line --index 3 "It fits."
	need=$(bytes "$(awk '/^Space needed/ { print $3 }' <<<"$output")")
	avail=$(bytes "$(awk '/^Space available/ { print $3 }' <<<"$output")")
	((need > 0 && need <= avail))

	# raid1 needs twice the data's space: it does not fit, exit 1
	run --separate-stderr mfs balance start --dry-run -dconvert=raid1 "$T/img1"
	assert_failure 1
	assert_line --index 0 --regexp "^Would relocate $nd chunks holding 200\.[0-9]+MiB$"
	assert_line --index 3 "It does NOT fit."
	need=$(bytes "$(awk '/^Space needed/ { print $3 }' <<<"$output")")
	avail=$(bytes "$(awk '/^Space available/ { print $3 }' <<<"$output")")
	((need > avail))

	# everything: no warning, every chunk counted
	run --separate-stderr mfs balance start --dry-run "$T/img1"
	refute_line "WARNING:"
	assert_line --index 0 --regexp "^Would relocate $(wc -l <"$T/before") chunks holding "

	# nothing was written
	for i in 1 2; do assert_untouched "$T/img$i" "${fp[$i]}"; done
	chunk_layout "$T/img1" | diff "$T/before" -
	verify_offline "$T/img1"

	# the balance that fits does what the dry run said
	run --separate-stderr mfs balance start -q -d "$T/img1"
	assert_success
	assert_output --regexp "^Done, had to relocate $nd out of [0-9]+ chunks$"
	verify_offline "$T/img1"
}

@test "balance --dry-run online: the offline output, by mount point or device; nothing moves; root only" {
	# the filesystem of the offline test: a raid1 convert of the data cannot
	# fit. (A device is resolved to its mount point when it is the one the
	# filesystem was mounted from.)
	make_images 2 256M
	mkdir -p "$T/src"
	gen_file "$T/src/a" 200
	mkfs.mfs -q -d single -m raid1 -r "$T/src" $(imgs 2)
	sums "$T/src" >"$T/want"
	chunk_layout "$T/img1" >"$T/before"
	opts=("-d" "-dconvert=raid1" "-dusage=90..100,limit=2" "-mconvert=dup -f" "")

	# offline first: the reference, output and exit code
	for o in "${!opts[@]}"; do
		run --separate-stderr mfs balance start --dry-run ${opts[$o]} "$T/img1"
		echo "exit $status" >"$T/off.$o"
		echo "$output" >>"$T/off.$o"
		assert_stderr_empty
	done
	grep -qx "It fits." "$T/off.0"
	grep -qx "exit 1" "$T/off.1"
	grep -qx "It does NOT fit." "$T/off.1"

	mnt "$T/img1"
	mfs filesystem usage -b "$T/mnt" >"$T/usage.before"
	mfs filesystem df -b "$T/mnt" >"$T/df.before"
	for o in "${!opts[@]}"; do
		for target in "$T/mnt" "$T/img1"; do
			run --separate-stderr mfs balance start --dry-run ${opts[$o]} "$target"
			assert_stderr_empty
			diff -u "$T/off.$o" - <<<"exit $status
$output"
		done
	done

	# nothing moved and no operation was started or persisted
	mfs filesystem usage -b "$T/mnt" | diff -u "$T/usage.before" -
	mfs filesystem df -b "$T/mnt" | diff -u "$T/df.before" -
	run mfs balance status "$T/mnt"
	assert_success
	assert_output "No balance found on '$T/mnt'"

	# an admin operation, as balance start is; allowed on a read-only mount
	d=$T
	while [ "$d" != / ] && [ "$d" != /tmp ]; do chmod o+x "$d"; d=$(dirname "$d"); done
	id nobody >/dev/null 2>&1 || useradd -r -M nobody
	run --separate-stderr setpriv --reuid="$(id -u nobody)" --regid="$(id -g nobody)" \
		--clear-groups --inh-caps=-all env MFS_REGISTRY="$T/noreg" \
		"$MFS_BUILD/mfs" balance start --dry-run -d "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: cannot estimate: Operation not permitted"
	verify_online
	umnt
	chunk_layout "$T/img1" | diff -u "$T/before" -
	run mfs inspect-internal dump-tree -t root "$T/img1"
	refute_output --partial BALANCE_ITEM
	mnt -o ro "$T/img1"
	run --separate-stderr mfs balance start --dry-run -dconvert=raid1 "$T/mnt"
	diff -u "$T/off.1" - <<<"exit $status
$output"
	umnt
	verify_offline "$T/img1"
}

# A closed walk through the complete directed graph of the nine profiles
# (with loops): every ordered pair A->B appears exactly once among its 81
# steps, and it ends where it starts.
CONVERT_WALK="single raid6 raid6 raid5 raid6 raid10 raid6 raid1c4 raid6 raid1c3 raid6 raid1 raid6 raid0 raid6 dup raid6 single raid5 raid5 raid10 raid5 raid1c4 raid5 raid1c3 raid5 raid1 raid5 raid0 raid5 dup raid5 single raid10 raid10 raid1c4 raid10 raid1c3 raid10 raid1 raid10 raid0 raid10 dup raid10 single raid1c4 raid1c4 raid1c3 raid1c4 raid1 raid1c4 raid0 raid1c4 dup raid1c4 single raid1c3 raid1c3 raid1 raid1c3 raid0 raid1c3 dup raid1c3 single raid1 raid1 raid0 raid1 dup raid1 single raid0 raid0 dup raid0 single dup dup single single"

# One walk converts data and metadata at once, metadata 40 steps ahead on
# the (closed) walk, so the two differ at most steps and each goes through
# all 81 pairs. After each step every chunk has its type's target profile,
# check is clean and every file is intact.
@test "convert: data and metadata each between every pair of the nine profiles" {
	# 4 devices (raid1c4 needs four), sparse 4G: chunks hit their size
	# caps (1 GiB data, 256 MiB metadata), leaving room for the old and new
	# layout of a chunk at once (a dup copy of the data chunk takes 2 GiB
	# on one device)
	walk=($CONVERT_WALK)
	small_fs 4 4G -d "${walk[0]}" -m "${walk[40]}"
	[ "${#walk[@]}" = 82 ]
	dpairs="" mpairs=""
	for ((step = 1; step <= 81; step++)); do
		# (not $i: bats's own helpers use that global)
		dp=${walk[step - 1]} d=${walk[step]}
		mp=${walk[(step - 1 + 40) % 81]} m=${walk[(step + 40) % 81]}
		run --separate-stderr mfs balance start -q -f -dconvert=$d -mconvert=$m "$T/img1"
		if [ "$status" != 0 ]; then
			echo "step $step: data $dp -> $d, metadata $mp -> $m failed: $stderr" >&2
			return 1
		fi
		assert_output --regexp '^Done, had to relocate [1-9][0-9]* out of [0-9]+ chunks$'
		D=$(ui_profile "$d") M=$(ui_profile "$m")
		run awk -v D="$D" -v M="$M" '{ split($2, a, "|") }
			a[1] == "Data" && a[2] != D || a[1] != "Data" && a[2] != M { print }' \
			<(chunk_layout "$T/img1")
		if [ -n "$output" ]; then
			echo "step $step: data $dp -> $d, metadata $mp -> $m left:" >&2
			echo "$output" >&2
			return 1
		fi
		verify_offline "$T/img1"
		dpairs="$dpairs $dp>$d" mpairs="$mpairs $mp>$m"
	done
	# each went through all 81 ordered pairs
	[ "$(tr ' ' '\n' <<<"$dpairs" | sed '/^$/d' | sort -u | wc -l)" = 81 ]
	[ "$(tr ' ' '\n' <<<"$mpairs" | sed '/^$/d' | sort -u | wc -l)" = 81 ]
}

@test "convert online: files stay readable, new chunks take the new profile at once" {
	small_fs 4 4G -d single -m raid1
	mnt "$T/img1"
	for p in raid10 raid6 raid1c3; do
		run --separate-stderr mfs balance start -q -dconvert=$p "$T/mnt"
		assert_success
		assert_output --regexp '^Done, had to relocate [1-9][0-9]* out of [0-9]+ chunks$'
		verify_online
	done
	run --separate-stderr mfs balance start -q -mconvert=raid1c4 "$T/mnt"
	assert_success
	run --separate-stderr mfs balance start -q -f -mconvert=raid5 "$T/mnt"
	assert_success
	verify_online
	# data written now lands in raid1c3 chunks only
	gen_file "$T/mnt/new" 40
	sync "$T/mnt/new"
	sums "$T/mnt" >"$T/want"
	umnt
	run awk '$2 ~ /^Data/ && $2 != "Data|RAID1C3" { print }' <(chunk_layout "$T/img1")
	assert_output ""
	run awk '$2 ~ /^(Metadata|System)/ && $2 !~ /RAID5$/ { print }' <(chunk_layout "$T/img1")
	assert_output ""
	verify_offline "$T/img1"
}

@test "convert to more copies fits where the new copies do: metadata raid1c3/raid1c4 on 4 x 512M" {
	# metadata raid1 in a 204 MiB chunk; raid1c4 needs 4 x 204 MiB of 2 GiB
	fs_with 4 512M 20 -d single -m raid1
	run --separate-stderr mfs balance start --dry-run -mconvert=raid1c3 "$T/img1"
	assert_success
	assert_line --regexp '^Would relocate 2 chunks holding '
	assert_line "It fits."
	run --separate-stderr mfs balance start -q -mconvert=raid1c3 "$T/img1"
	assert_success
	assert_output "Done, had to relocate 2 out of 3 chunks"
	run --separate-stderr mfs balance start -mconvert=raid1c4 "$T/img1"
	assert_success
	run awk '$2 ~ /^(Metadata|System)/ && ($2 !~ /RAID1C4$/ || NF != 6) { print }' <(chunk_layout "$T/img1")
	assert_output ""
	run mfs check --check-data-csum "$T/img1"
	assert_success

	# online, tree blocks written meanwhile; back down needs -f
	mnt "$T/img1"
	mkdir "$T/mnt/many"
	(for i in $(seq 1 1500); do echo "$i" >"$T/mnt/many/f$i"; done) &
	writer=$!
	run --separate-stderr mfs balance start -f -mconvert=raid1c3 "$T/mnt"
	assert_success
	wait "$writer"
	sums "$T/mnt" >"$T/want"
	umnt
	run awk '$2 ~ /^(Metadata|System)/ && ($2 !~ /RAID1C3$/ || NF != 5) { print }' <(chunk_layout "$T/img1")
	assert_output ""
	verify_offline "$T/img1"
}

@test "balance of the only, empty data chunk keeps the profile it was converted to" {
	# data_types DEV: the profiles of the data chunks, sorted and unique
	data_types() {
		chunk_layout "$1" | awk '$2 ~ /^Data/ { print $2 }' | sort -u | paste -sd' '
	}
	make_images 3 512M
	mkfs.mfs -q -d raid1 -m raid1 $(imgs 3)
	# offline: usage=0 takes the empty chunk; it is copied, not removed
	run --separate-stderr mfs balance start -q -dusage=0 "$T/img1"
	assert_success
	assert_output "Done, had to relocate 1 out of 3 chunks"
	[ "$(data_types "$T/img1")" = "Data|RAID1" ]
	run mfs balance start -dconvert=raid0 "$T/img1"
	assert_success
	[ "$(data_types "$T/img1")" = "Data|RAID0" ]

	# online, across a remount: new data still goes raid0
	mnt "$T/img1"
	run mfs balance start -dconvert=raid1c4 "$T/mnt"
	assert_failure	# raid1c4 needs 4 devices
	run mfs balance start -dconvert=raid5 "$T/mnt"
	assert_success
	umnt
	[ "$(data_types "$T/img1")" = "Data|RAID5" ]
	mnt "$T/img1"
	gen_file "$T/mnt/f" 40
	sums "$T/mnt" >"$T/want"
	# data chunks emptied, converted, removed, then a delete
	rm "$T/mnt/f"
	mfs balance start -q -dconvert=raid1 "$T/mnt"
	run mfs balance start -dusage=0 "$T/mnt"
	assert_success
	run mfs device delete "$T/img3" "$T/mnt"
	assert_success
	umnt
	[ "$(data_types "$T/img1")" = "Data|RAID1" ]
	mnt "$T/img1"
	gen_file "$T/mnt/g" 30
	sums "$T/mnt" >"$T/want"
	umnt
	[ "$(data_types "$T/img1")" = "Data|RAID1" ]
	verify_offline "$T/img1"
}

@test "balance pause/resume/cancel/status: btrfs output and exit codes; survives umount; skip_balance" {
	big_fs
	truncate -s 1G "$T/new"
	seed_image "$T/new"
	fp=$(fingerprint "$T/new")
	mnt "$T/img1"
	chunk_layout "$T/img1" >"$T/before"
	hold_at 1
	run --separate-stderr mfs balance start --bg --full-balance "$T/mnt"
	assert_success
	assert_output ""
	assert_stderr_empty
	wait_held
	# a second exclusive operation is refused while it runs, before it
	# touches anything
	run --separate-stderr mfs device add "$T/new" "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: unable to start device add, another exclusive operation 'balance' in progress"
	run --separate-stderr mfs balance start --full-balance "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: unable to start balance, another exclusive operation 'balance' in progress"
	run mfs balance status "$T/mnt"
	assert_failure 1
	assert_line --index 0 "Balance on '$T/mnt' is running"
	assert_line --index 1 --regexp '^[0-9]+ out of about [0-9]+ chunks balanced \([0-9]+ considered\), +[0-9]+% left$'
	assert_line --index 2 --regexp '^[0-9.]+[KMG]?i?B of [0-9.]+[KMG]iB moved, [0-9.]+[KMG]?i?B/s'

	run --separate-stderr while_held mfs balance pause "$T/mnt"
	assert_success
	assert_output ""
	run mfs balance status "$T/mnt"
	assert_failure 1
	assert_line --index 0 "Balance on '$T/mnt' is paused"
	assert_line --index 1 --regexp '^1 out of about [0-9]+ chunks balanced'
	assert_untouched "$T/new" "$fp"
	# -v dumps the filters as btrfs does
	run mfs balance status -v "$T/mnt"
	assert_failure 1
	assert_line --regexp '^Dumping filters: flags 0x[0-9a-f]+, state 0x[0-9a-f]+, force is off$'
	assert_line --regexp '^  DATA \(flags 0x[0-9a-f]+\): balancing$'
	# paused, it still blocks the others
	run --separate-stderr mfs device delete 3 "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: unable to start device delete, another exclusive operation 'balance paused' in progress"
	# pausing again: nothing runs
	run --separate-stderr mfs balance pause "$T/mnt"
	assert_failure 2
	assert_stderr_line "ERROR: balance pause on '$T/mnt' failed: Not running"
	# a paused balance still blocks another one
	run --separate-stderr mfs balance start -dusage=50 "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: unable to start balance, another exclusive operation 'balance paused' in progress"
	verify_online
	umnt

	# the state is on disk: offline status sees it
	run mfs balance status "$T/img1"
	assert_failure 1
	assert_line --index 0 "Balance on '$T/img1' is paused"
	refute_line --partial "about 0 chunks"
	verify_offline "$T/img1"
	run mfs balance status "$T/img1"
	assert_failure 1

	# a rw mount resumes it by itself; pause it again
	hold_at 1
	mnt "$T/img1"
	wait_held
	run mfs balance status "$T/mnt"
	assert_failure 1
	assert_line --index 0 "Balance on '$T/mnt' is running"
	run --separate-stderr while_held mfs balance pause "$T/mnt"
	assert_success
	run mfs balance status "$T/mnt"
	assert_failure 1
	assert_line --index 0 "Balance on '$T/mnt' is paused"
	assert_line --index 1 --regexp '^2 out of about [0-9]+ chunks balanced'
	verify_online
	umnt

	# -o skip_balance leaves it paused (the mount decides before it returns:
	# the status does not change while files are read)
	mnt -o skip_balance "$T/img1"
	run mfs balance status "$T/mnt"
	assert_failure 1
	assert_line --index 0 "Balance on '$T/mnt' is paused"
	assert_line --index 1 --regexp '^2 out of about'
	verify_online
	run mfs balance status "$T/mnt"
	assert_failure 1
	assert_line --index 0 "Balance on '$T/mnt' is paused"
	assert_line --index 1 --regexp '^2 out of about'
	verify_online
	# device add is allowed while it is paused (as btrfs)
	run --separate-stderr mfs device add "$T/new" "$T/mnt"
	assert_success
	[ "$(nr_devices "$T/img1")" = 4 ]

	# resume completes it in the foreground
	run --separate-stderr mfs balance resume "$T/mnt"
	assert_success
	assert_line --regexp '^Done, had to relocate [0-9]+ out of [0-9]+ chunks$'
	run --separate-stderr mfs balance status "$T/mnt"
	assert_success
	assert_output "No balance found on '$T/mnt'"
	verify_online

	# nothing to act on: 2, with btrfs's messages
	run --separate-stderr mfs balance resume "$T/mnt"
	assert_failure 2
	assert_stderr_line "ERROR: balance resume on '$T/mnt' failed: Not in progress"
	run --separate-stderr mfs balance cancel "$T/mnt"
	assert_failure 2
	assert_stderr_line "ERROR: balance cancel on '$T/mnt' failed: Not in progress"
	run --separate-stderr mfs balance pause "$T/mnt"
	assert_failure 2
	assert_stderr_line "ERROR: balance pause on '$T/mnt' failed: Not running"

	# cancel a running one: returns when it has stopped, nothing left
	hold_at 1
	mfs balance start --bg --full-balance "$T/mnt"
	run --separate-stderr while_held mfs balance cancel "$T/mnt"
	assert_success
	run mfs balance status "$T/mnt"
	assert_success
	assert_output "No balance found on '$T/mnt'"
	verify_online
	# cancel a paused one
	hold_at 1
	mfs balance start --bg --full-balance "$T/mnt"
	run --separate-stderr while_held mfs balance pause "$T/mnt"
	assert_success
	run mfs balance status "$T/mnt"
	assert_failure 1
	run --separate-stderr mfs balance cancel "$T/mnt"
	assert_success
	run mfs balance status "$T/mnt"
	assert_success
	verify_online
	umnt
	run mfs balance status "$T/img1"
	assert_success
	assert_output "No balance found on '$T/img1'"
	verify_offline "$T/img1"
	# and a cancelled balance does not come back at mount
	mnt "$T/img1"
	run mfs balance status "$T/mnt"
	assert_success
	umnt

	# every chunk that existed at the start was relocated at some point
	chunk_layout "$T/img1" >"$T/after"
	run awk 'NR == FNR { a[$0] = 1; next } ($0 in a) { print "not moved:", $0 }' "$T/after" "$T/before"
	assert_output ""
}

# space_back: after a commit, $T/mnt has room again
space_back() {
	mfs filesystem sync "$T/mnt"
	[ "$(stat -f -c %a "$T/mnt")" -gt 1000 ]
}

@test "balance resume: refused while what was written during the pause leaves no room for the rest" {
	big_fs
	mnt "$T/img1"
	hold_at 1
	mfs balance start --bg -dconvert=raid1 "$T/mnt"
	run while_held mfs balance pause "$T/mnt"
	assert_success
	# new data goes to raid1 chunks at once: fill the filesystem
	run dd if=/dev/zero of="$T/mnt/fill" bs=1M conv=fsync status=none
	assert_failure
	run --separate-stderr mfs balance resume "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: balance resume on '$T/mnt' failed: not enough free space for the rest of the operation (was data written while it was paused?)"
	run mfs balance status "$T/mnt"
	assert_failure 1
	assert_line --index 0 "Balance on '$T/mnt' is paused"
	# with the room back it resumes and completes
	rm "$T/mnt/fill"
	# the space comes back once the kernel forgets the file and it is committed
	wait_until 600 space_back
	run mfs balance resume "$T/mnt"
	assert_success
	assert_line --regexp '^Done, had to relocate [0-9]+ out of [0-9]+ chunks$'
	verify_online
	umnt
	verify_offline "$T/img1"
	run mfs filesystem df "$T/img1"
	assert_line --regexp '^Data, RAID1: '
	refute_line --regexp '^Data, RAID0: '
}

@test "balance: SIGKILL of the daemon mid-balance; it resumes at mount and completes" {
	big_fs
	chunk_layout "$T/img1" >"$T/before"
	mnt "$T/img1"
	# killed when two chunks are done and the third copied, not yet swapped in
	hold_at 3
	mfs balance start --bg --full-balance "$T/mnt"
	wait_held
	kill_daemon
	release
	# the crash left a consistent filesystem with the balance on disk
	run mfs balance status "$T/img1"
	assert_failure 1
	assert_line --index 0 "Balance on '$T/img1' is paused"
	run mfs check "$T/img1"
	assert_success
	# the mount resumes it; it completes
	mnt "$T/img1"
	wait_done "$T/mnt"
	run mfs balance status "$T/mnt"
	assert_success
	verify_online
	umnt
	verify_offline "$T/img1"
	# every original chunk was relocated (the one cut off by the kill again)
	chunk_layout "$T/img1" >"$T/after"
	run awk 'NR == FNR { a[$0] = 1; next } ($0 in a) { print "not moved:", $0 }' "$T/after" "$T/before"
	assert_output ""
}

@test "balance: foreground progress lines without a terminal, a bar on one, nothing with -q" {
	big_fs
	mnt "$T/img1"
	run --separate-stderr held_progress mfs balance start --full-balance "$T/mnt"
	assert_success
	# periodic lines: chunks, bytes, percentage, rate and ETA
	[ "$(count_lines '^[0-9]+/[0-9]+ chunks, [0-9.]+[KMG]?i?B of [0-9.]+[KMG]iB \([0-9]+%\), [0-9.]+[KMG]?i?B/s, ETA [0-9]+:[0-9]{2}:[0-9]{2}$')" -ge 2 ]
	assert_line --regexp '^[0-9]+/[0-9]+ chunks, .* \(100%\), .*, ETA 0:00:00$'
	assert_line --index $((${#lines[@]} - 1)) --regexp '^Done, had to relocate [0-9]+ out of [0-9]+ chunks$'
	# bytes move from the first second on: no line without a rate
	refute_line --regexp ' 0\.00B/s, '
	verify_online
	# -q: only the result
	run --separate-stderr mfs balance start -q --full-balance "$T/mnt"
	assert_success
	assert_output --regexp '^Done, had to relocate [0-9]+ out of [0-9]+ chunks$'
	verify_online
	# on a terminal: one line redrawn with a bar
	script -qec "mfs balance start --full-balance '$T/mnt'" /dev/null >"$T/tty.out"
	grep -q $'\r\\[[#.]\\{20\\}\\] [0-9]*/[0-9]* chunks' "$T/tty.out"
	grep -q '^Done, had to relocate' <(tr '\r' '\n' <"$T/tty.out")
	verify_online
	umnt
	verify_offline "$T/img1"
	# offline the same lines; the one after the end still has the run's rate
	run --separate-stderr held_progress mfs balance start --full-balance "$T/img1"
	assert_success
	[ "$(count_lines '^[0-9]+/[0-9]+ chunks, .*/s, ETA ')" -ge 1 ]
	refute_line --regexp ' 0\.00B/s, '
	verify_offline "$T/img1"
}

@test "balance: admin operations need CAP_SYS_ADMIN" {
	small_fs 2 1G -d raid1 -m raid1
	mnt "$T/img1"
	# let an unprivileged user reach the mount point
	d=$T
	while [ "$d" != / ] && [ "$d" != /tmp ]; do chmod o+x "$d"; d=$(dirname "$d"); done
	id nobody >/dev/null 2>&1 || useradd -r -M nobody
	as_nobody() { setpriv --reuid="$(id -u nobody)" --regid="$(id -g nobody)" --clear-groups --inh-caps=-all \
		env MFS_REGISTRY="$T/noreg" "$MFS_BUILD/mfs" "$@"; }
	chunk_layout "$T/img1" >"$T/before"
	run --separate-stderr as_nobody balance start -dusage=100 "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: balance failed on '$T/mnt': Operation not permitted"
	run --separate-stderr as_nobody balance start --full-balance "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: balance failed on '$T/mnt': Operation not permitted"
	hold_at 1
	mfs balance start --bg --full-balance "$T/mnt"
	wait_held
	for c in pause cancel resume; do
		run --separate-stderr as_nobody balance $c "$T/mnt"
		assert_failure 1
		assert_stderr_line "ERROR: balance $c on '$T/mnt' failed: Operation not permitted"
	done
	run --separate-stderr as_nobody balance status "$T/mnt"
	assert_failure 2
	assert_stderr_line "ERROR: balance status on '$T/mnt' failed: Operation not permitted"
	release
	wait_done "$T/mnt"
	verify_online
	umnt
	verify_offline "$T/img1"
}
