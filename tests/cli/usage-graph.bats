#!/usr/bin/env bats
# mfs filesystem usage --graph: a bar per device whose segments are in
# proportion to the device usage figures (usage-graph.py checks every one
# against --format json device usage), colour only on a terminal.

load helpers
load restripe

# graph_matches DEV...: the graph agrees with device usage's figures
graph_matches() {
	mfs filesystem usage --graph "$@" >"$T/graph"
	mfs --format json device usage "$@" >"$T/du.json"
	run python3 "$BATS_TEST_DIRNAME/usage-graph.py" "$T/graph" "$T/du.json"
	assert_success
	assert_output ""
}

# cells DEVID MARK: how many cells of the bar of DEVID are MARK
cells() {
	local bar

	bar=$(sed -n "s/^ *$1 .*\\[\\(.*\\)\\] .*/\\1/p" "$T/graph")
	tr -cd "$2" <<<"$bar" | wc -c
}

@test "usage --graph: half the device is slack, half the bar is; every segment in proportion" {
	make_images 2 1G
	mkfs.mfs -q -d single -m raid1 -b 512M "$T/img1" "$T/img2"
	mfs device scan "$T/img1" "$T/img2" >/dev/null
	graph_matches "$T/img1"
	# the filesystem has half of each 1 GiB image: 25 of 50 cells, give or take the rounding
	for d in 1 2; do
		n=$(cells $d '~')
		[ "$n" -ge 24 ] && [ "$n" -le 26 ]
	done
	# the overall figures first, then the bars and the legend
	run mfs filesystem usage --graph "$T/img1"
	assert_success
	assert_line --index 0 "Overall:"
	assert_line "Devices (each bar is the whole device, 50 cells):"
	assert_line --regexp "^    1 $T/img1 \\[D+M+S\\+\\.+~+\\] +1\\.00GiB$"
	assert_line --regexp "^    2 $T/img2 \\[M+S\\+\\.+~+\\] +1\\.00GiB$"
	assert_line "Legend:  D Data,single  M Metadata,RAID1  S System,RAID1  + reserved  . unallocated  ~ slack"
	refute_output --partial $'\033'
}

@test "usage --graph: mounted, data filling half a device, and a second data profile" {
	make_images 2 1G
	mkfs.mfs -q -d single -m raid1 "$T/img1" "$T/img2"
	mnt "$T/img1"
	gen_file "$T/mnt/f" 480
	sync
	graph_matches "$T/mnt"
	# 480 MiB of single data over two 1 GiB devices: about a half of one
	# bar's worth in D cells altogether
	n=$(( $(cells 1 D) + $(cells 2 D) ))
	[ "$n" -ge 22 ] && [ "$n" -le 28 ]
	# a convert half done: both data profiles, the second in lower case
	hold_at 2
	run mfs balance start --bg -dconvert=raid1 "$T/mnt"
	assert_success
	wait_held
	graph_matches "$T/mnt"
	run mfs filesystem usage --graph "$T/mnt"
	assert_line --regexp "^Legend:  D Data,(single|RAID1)  d Data,(single|RAID1)  M Metadata,RAID1"
	run while_held mfs balance cancel "$T/mnt"
}

@test "usage --graph: colour on a terminal only, the same bars; refused with -T and json" {
	make_images 1 1G
	mkfs.mfs -q "$T/img1"
	mfs filesystem usage --graph "$T/img1" >"$T/plain"
	# script(1) gives the command a terminal
	TERM=xterm script -qec "mfs filesystem usage --graph '$T/img1'" /dev/null >"$T/tty"
	grep -q $'\033\\[42;30mD' "$T/tty" || grep -q $'\033\\[44;37mM' "$T/tty"
	grep -q $'\033\\[0m' "$T/tty"
	# without the colours and the terminal's CRs, the same text
	sed -e $'s/\033\\[[0-9;]*m//g' -e $'s/\r$//' "$T/tty" >"$T/stripped"
	diff -u "$T/plain" "$T/stripped"
	NO_COLOR=1 TERM=xterm script -qec "mfs filesystem usage --graph '$T/img1'" /dev/null >"$T/nocolor"
	run grep -c $'\033' "$T/nocolor"
	assert_output 0

	run --separate-stderr mfs filesystem usage --graph -T "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: --graph is a picture: not with -T or --format json"
	run --separate-stderr mfs --format json filesystem usage --graph "$T/img1"
	assert_failure 1
}
