#!/usr/bin/env bats
# mfs filesystem df / usage / resize, mfs device usage, filesystem show <mountpoint>

load helpers

# chunk_info IMG: what the chunk tree on disk says, independently of the
# commands under test:
#   group <Type>, <profile> <logical total>
#   dev <devid> <total_bytes> <bytes_used> <end of its highest extent>
chunk_info() {
	mfs inspect-internal dump-tree -t chunk "$1" | python3 -c '
import re, sys
groups, devs, ends = {}, {}, {}
chunk = None
for line in sys.stdin:
    f = line.split()
    m = re.match(r"\s*devid (\d+) total_bytes (\d+) bytes_used (\d+)", line)
    if m:
        devs[int(m[1])] = (int(m[2]), int(m[3]))
        continue
    if "length" in f and "type" in f:
        t, p = f[f.index("type") + 1].split("|")
        chunk = {"len": int(f[1]), "type": t, "prof": p, "stripes": []}
        groups[(t, p)] = groups.get((t, p), 0) + chunk["len"]
    elif f[:1] == ["num_stripes"] and chunk:
        chunk["n"] = int(f[1])
        p, n = chunk["prof"], chunk["n"]
        ndata = {"RAID5": n - 1, "RAID6": n - 2, "RAID10": n // 2, "RAID0": n,
                 "single": n}.get(p, 1)
        chunk["ss"] = chunk["len"] // ndata
    elif f[:1] == ["stripe"] and chunk:
        d, off = int(f[3]), int(f[5])
        ends[d] = max(ends.get(d, 0), off + chunk["ss"])
for (t, p), total in groups.items():
    print("group %s, %s %d" % (t, p, total))
for d in sorted(devs):
    print("dev %d %d %d %d" % (d, devs[d][0], devs[d][1], ends.get(d, 0)))
'
}

# field NAME: the value after "NAME:" in $output (usage -b), first number
field() {
	awk -F'\t+' -v k="    $1:" '$1 == k { split($2, a, " "); print a[1]; exit }' <<<"$output"
}

# min_field: the number in "(min: N)"
min_field() {
	sed -n 's/.*(min: \([0-9]*\)).*/\1/p' <<<"$output"
}

# within A B PCT: |A - B| <= PCT% of B (and a MiB of slack)
within() {
	python3 -c '
import sys
a, b, pct = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
ok = abs(a - b) <= b * pct / 100 + 1048576
if not ok:
    print("%d is not within %s%% of %d" % (a, sys.argv[3], b), file=sys.stderr)
sys.exit(0 if ok else 1)' "$1" "$2" "$3"
}

# df_value TYPE PROFILE total|used: from `mfs filesystem df -b` in $output
df_value() {
	sed -n "s/^$1, $2: total=\([0-9]*\), used=\([0-9]*\)\$/\1 \2/p" <<<"$output" |
		awk -v w="$3" '{ print (w == "total") ? $1 : $2 }'
}

# The profiles under test: devices, data profile, metadata profile, data ratio.
CONFIGS=(
	"1 single dup 1.00"
	"1 dup dup 2.00"
	"3 raid0 raid0 1.00"
	"2 raid1 raid1 2.00"
	"4 raid10 raid10 2.00"
	"3 raid5 raid5 1.50"
	"4 raid6 raid6 2.00"
	"3 raid1c3 raid1c3 3.00"
)

# expected_free PROFILE NDEVS DATA_FREE UNALLOC...: what new data chunks can
# still get when every device has about the same unallocated space (all
# chunks span all devices), by the profile's arithmetic alone.
expected_free() {
	python3 -c '
import sys
prof, n, data_free = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
un = [int(x) for x in sys.argv[4:]]
per_dev = {"single": sum(un), "dup": sum(un) // 2, "raid0": sum(un),
           "raid1": min(un), "raid10": min(un) * n // 2, "raid5": min(un) * (n - 1),
           "raid6": min(un) * (n - 2), "raid1c3": min(un)}[prof]
print(data_free + per_dev)' "$@"
}

@test "filesystem df: one line per type and profile, totals as in the chunk tree" {
	local cfg n d m ratio reserve
	for cfg in "${CONFIGS[@]}"; do
		read -r n d m ratio <<<"$cfg"
		make_images "$n"
		mkfs.mfs -q -f -d "$d" -m "$m" $(imgs "$n")
		run --separate-stderr mfs filesystem df -b "$T/img1"
		assert_success
		assert_stderr_empty
		# as many lines as groups, each total equal to the chunk tree's, and
		# last the global reserve: 1/64 of the devices (4 MiB..512 MiB), unused
		[ "${#lines[@]}" -eq "$(($(chunk_info "$T/img1" | grep -c '^group') + 1))" ]
		reserve=$((n * 1024 * 1024 * 1024 / 64))
		((reserve > 512 * 1024 * 1024)) && reserve=$((512 * 1024 * 1024))
		assert_line --index $((${#lines[@]} - 1)) "GlobalReserve, single: total=$reserve, used=0"
		while read -r _ t p total; do
			t=${t%,}
			[ "$(df_value "$t" "$p" total)" = "$total" ] ||
				{ echo "$cfg: $t,$p df says $(df_value "$t" "$p" total), chunks $total"; false; }
			[ "$(df_value "$t" "$p" used)" -le "$total" ]
		done < <(chunk_info "$T/img1" | grep '^group')
		# human units by default, Data first
		run mfs filesystem df "$T/img1"
		assert_line --index 0 --regexp "^Data, $(mfs_ui "$d"): total=[0-9]+\.[0-9]{2}(MiB|GiB), used=[0-9.]+[KMG]?i?B$"
	done
}

# mfs_ui PROFILE: the profile as mfs shows it
mfs_ui() {
	case $1 in
	single) echo single ;;
	*) echo "$1" | tr a-z A-Z ;;
	esac
}

# json_of FILE ARGS...: `mfs --format json ARGS...` into FILE; it succeeds,
# prints nothing on stderr and starts with the version 1 header
json_of() {
	local file=$1
	shift
	run --separate-stderr mfs --format json "$@"
	assert_success
	assert_stderr_empty
	echo "$output" >"$file"
	[ "$(jq -r '.__header.version' "$file")" = 1 ]
}

@test "filesystem df --format json: valid, same numbers as the text" {
	make_images 3
	mkfs.mfs -q -d raid5 -m raid1 $(imgs 3)
	json_of "$T/df.json" filesystem df "$T/img1"
	[ "$(jq -r '."filesystem-df" | length' "$T/df.json")" = 4 ]
	jq -r '."filesystem-df"[] | "\(."bg-type"), \(."bg-profile"): total=\(.total), used=\(.used)"' \
		"$T/df.json" >"$T/from-json"
	mfs filesystem df --raw "$T/img1" >"$T/from-text"
	diff -u "$T/from-text" "$T/from-json"
	grep -qx 'Data, RAID5: total=[0-9]*, used=0' "$T/from-json"
	# a command without JSON output refuses the option
	run --separate-stderr mfs filesystem label --format json "$T/img1"
	assert_failure
}

@test "filesystem usage and device usage --format json: the numbers of the raw text output" {
	make_images 3
	mkfs.mfs -q -d raid5 -m raid1 $(imgs 3)
	json_of "$T/u.json" filesystem usage "$T/img1"
	mfs filesystem usage -b "$T/img1" >"$T/u.txt"
	fs='."filesystem-usage"[0]'
	# every overall figure equals the text's
	for pair in "Device size:device-size" "Device allocated:device-allocated" \
		"Device unallocated:device-unallocated" "Used:used" \
		"Free (statfs, df):free-statfs-df" "Data ratio:data-ratio" "Metadata ratio:metadata-ratio" \
		"Global reserve:global-reserve"; do
		text=$(awk -F':' -v k="    ${pair%%:*}" '$1 == k { gsub(/[ \t]/, "", $2); print $2 }' "$T/u.txt")
		json=$(jq -r "$fs.overall.\"${pair#*:}\"" "$T/u.json")
		echo "$pair: text $text json $json"
		[ -n "$text" ]
		[[ $json =~ ^[0-9.]+$ ]]
		awk -v a="$text" -v b="$json" 'BEGIN { exit !(a + 0 == b + 0) }'
	done
	est=$(jq -r "$fs.overall.\"free-estimated\"" "$T/u.json")
	grep -q "Free (estimated):[[:space:]]*$est[[:space:]]" "$T/u.txt"
	# per type and profile: size and used, and the bytes on each device
	jq -r "$fs.allocations[] | \"\(.\"bg-type\"),\(.\"bg-profile\"): Size:\(.size), Used:\(.used)\"" \
		"$T/u.json" >"$T/groups-json"
	sed -n 's/ (.*//p' "$T/u.txt" | grep ': Size:' >"$T/groups-text"
	diff -u "$T/groups-text" "$T/groups-json"
	[ "$(jq -r "$fs.allocations[0].devices | length" "$T/u.json")" = 3 ]
	[ "$(jq -r "[$fs.unallocated[].size] | add" "$T/u.json")" = \
		"$(jq -r "$fs.overall.\"device-unallocated\"" "$T/u.json")" ]

	json_of "$T/d.json" device usage "$T/img1"
	[ "$(jq -r '."device-usage" | length' "$T/d.json")" = 3 ]
	[ "$(jq -r '."device-usage"[].devid' "$T/d.json" | paste -sd' ')" = "1 2 3" ]
	[ "$(jq -r '."device-usage"[0].allocations[] | select(."bg-profile" == "RAID5") | .stripes' "$T/d.json")" = 3 ]
	# each device: its allocations plus unallocated plus the reserved 2 MiB make its size
	for i in 0 1 2; do
		[ "$(jq -r ".\"device-usage\"[$i] | ([.allocations[].size] | add) + .unallocated + 2097152 - .\"device-size\"" "$T/d.json")" = 0 ]
	done
	# the same numbers as the text with -b
	mfs device usage -b "$T/img1" | awk '/^   Data,RAID5\/3:/ { print $2 }' >"$T/r5-text"
	jq -r '."device-usage"[].allocations[] | select(."bg-profile" == "RAID5") | .size' "$T/d.json" >"$T/r5-json"
	diff -u "$T/r5-text" "$T/r5-json"
}

@test "filesystem usage: allocation adds up and Free (estimated) is the profile's arithmetic" {
	local cfg n d m ratio i sum alloc un exp data_total data_used
	for cfg in "${CONFIGS[@]}"; do
		read -r n d m ratio <<<"$cfg"
		make_images "$n"
		mkfs.mfs -q -f -d "$d" -m "$m" $(imgs "$n")
		run --separate-stderr mfs filesystem usage -b "$T/img1"
		assert_success
		assert_stderr_empty
		[ "$(field 'Device size')" -eq $((n * GiB)) ]
		# per-device lines of the type sections add up to Device allocated
		sum=$(awk '/^(Data|Metadata|System),/ { s = 1; next } /^Unallocated:/ { s = 0 }
			   s && /^   / { t += $NF } END { print t + 0 }' <<<"$output")
		alloc=$(field 'Device allocated')
		[ "$sum" -eq "$alloc" ] || { echo "$cfg: sections $sum, allocated $alloc"; false; }
		# and so do the device items on disk
		[ "$(chunk_info "$T/img1" | awk '$1 == "dev" { t += $4 } END { print t }')" -eq "$alloc" ]
		# unallocated: size minus chunks minus the reserved MiBs (start, 64 MiB copy)
		un=()
		while read -r _ devid total used _; do
			un+=($((total - used - 2 * MiB)))
			grep -qx "   $T/img$devid	 *$((total - used - 2 * MiB))" <<<"$output" ||
				grep -qx "   img$devid	 *$((total - used - 2 * MiB))" <<<"$output" ||
				{ echo "$cfg: no Unallocated line for devid $devid"; false; }
		done < <(chunk_info "$T/img1" | grep '^dev')
		[ "$(field 'Device unallocated')" -eq "$(IFS=+; echo $((${un[*]})))" ]
		[ "$(field 'Device missing')" -eq 0 ]
		[ "$(field 'Device slack')" -eq 0 ]
		[ "$(field 'Data ratio')" = "$ratio" ]
		[ "$(field 'Multiple profiles')" = no ]
		run mfs filesystem df -b "$T/img1"
		data_total=$(df_value Data "$(mfs_ui "$d")" total)
		data_used=$(df_value Data "$(mfs_ui "$d")" used)
		exp=$(expected_free "$d" "$n" $((data_total - data_used)) "${un[@]}")
		run mfs filesystem usage -b "$T/img1"
		within "$(field 'Free (estimated)')" "$exp" 2 || { echo "config $cfg"; false; }
		# the free space df(1) would show comes from the same simulation
		within "$(field 'Free (statfs, df)')" "$exp" 2
		if [ "$d" = single ] && [ "$m" = dup ]; then
			# min: the unallocated space given to DUP metadata instead
			within "$(min_field)" $((data_total - data_used + ${un[0]} / 2)) 2
		else
			[ "$(min_field)" -eq "$(field 'Free (estimated)')" ]
		fi
	done
}

@test "filesystem usage: uneven devices, Free (estimated) is what allocation can really use" {
	make_images 3
	# metadata raid1 lands on two of the three devices: raid5 data cannot
	# use all of the third device's extra space
	mkfs.mfs -q -d raid5 -m raid1 $(imgs 3)
	run mfs filesystem usage -b "$T/img1"
	assert_success
	# an independent greedy allocation of raid5 chunks: widest stripe set
	# of the devices with the most free space, stripes up to 1 GiB
	exp=$(chunk_info "$T/img1" | python3 -c '
import sys
free = []
for line in sys.stdin:
    f = line.split()
    if f[0] == "dev":
        free.append((int(f[2]) - int(f[3]) - 2 * 1048576) // 1048576 * 1048576)
total = 0
while True:
    free.sort(reverse=True)
    devs = [x for x in free if x >= 8 * 1048576]
    if len(devs) < 2:
        break
    stripe = min(devs[-1], 1 << 30) // 1048576 * 1048576
    total += stripe * (len(devs) - 1)
    for i in range(len(devs)):
        free[i] -= stripe
print(total)')
	run mfs filesystem df -b "$T/img1"
	data=$(df_value Data RAID5 total)
	run mfs filesystem usage -b "$T/img1"
	[ "$(field 'Free (estimated)')" -eq $((data + exp)) ]
	# the naive (N-1)/N of all unallocated space would promise more
	naive=$(( $(field 'Device unallocated') * 2 / 3 ))
	[ "$exp" -lt "$naive" ]
	# the metadata ratio is larger: min assumes raid1 chunks for the rest
	[ "$(field 'Metadata ratio')" = 2.00 ]
	[ "$(min_field)" -lt "$(field 'Free (estimated)')" ]
}

@test "filesystem usage: a type with two profiles (interrupted convert)" {
	mkdir "$T/src"
	head -c $((250 * MiB)) /dev/urandom >"$T/src/f"
	make_images 2
	mkfs.mfs -q -d single -m raid1 -r "$T/src" $(imgs 2)
	mfs balance start -q -dconvert=raid1,limit=1 "$T/img1" >/dev/null
	run mfs filesystem df -b "$T/img1"
	assert_success
	single_total=$(df_value Data single total)
	single_used=$(df_value Data single used)
	raid1_total=$(df_value Data RAID1 total)
	raid1_used=$(df_value Data RAID1 used)
	[ -n "$single_total" ]
	[ -n "$raid1_total" ]
	[ $((single_used + raid1_used)) -eq $((250 * MiB)) ]
	# Data lines first, single before RAID1
	assert_line --index 0 --regexp '^Data, single: '
	assert_line --index 1 --regexp '^Data, RAID1: '
	run mfs filesystem usage -b "$T/img1"
	assert_success
	assert_line --regexp $'^    Multiple profiles:\t\t {15}yes\t\(data\)$'
	assert_line --regexp '^Data,single: Size:'"$single_total"', Used:'"$single_used"' '
	assert_line --regexp '^Data,RAID1: Size:'"$raid1_total"', Used:'"$raid1_used"' '
	# data ratio over both kinds of chunk
	ratio=$(python3 -c "print('%.2f' % (($single_total + 2 * $raid1_total) / ($single_total + $raid1_total)))")
	[ "$(field 'Data ratio')" = "$ratio" ]
	un=($(chunk_info "$T/img1" | awk '$1 == "dev" { print $3 - $4 - 2097152 }'))
	data_free=$((single_total - single_used + raid1_total - raid1_used))
	min_un=$((un[0] < un[1] ? un[0] : un[1]))
	free=$(field 'Free (estimated)')
	# new data chunks get the target profile: single, or raid1 once converted
	[ "$free" -eq $((data_free + un[0] + un[1])) ] || [ "$free" -eq $((data_free + min_un)) ]
	# min: what is left if it all went to raid1 chunks
	[ "$(min_field)" -eq $((data_free + min_un)) ]
}

@test "filesystem usage: raw and unit flags, -T matrix, several filesystems" {
	make_images 4
	mkfs.mfs -q -d raid10 -m raid1 $(imgs 4)
	# --raw and -b: integers everywhere, 18 wide
	run mfs filesystem usage --raw "$T/img1"
	assert_success
	raw=$output
	run mfs filesystem usage -b "$T/img1"
	[ "$output" = "$raw" ]
	assert_line --regexp $'^    Device size:\t\t {8}[0-9]{10}$'
	assert_line --regexp $'^    Free \\(estimated\\):\t\t *[0-9]+\t\\(min: [0-9]+\\)$'
	assert_line --regexp $'^    Data ratio:\t\t\t {14}2\\.00$'
	assert_line --regexp "^Data,RAID10: Size:[0-9]+, Used:[0-9]+ \\([0-9]+\\.[0-9]{2}%\\)$"
	refute_line --regexp '[0-9]+\.[0-9]+[KMGT]i?B'
	# human by default, 10 wide; -m and --si -k fix the unit; the last one wins
	run mfs filesystem usage "$T/img1"
	assert_line --regexp $'^    Device size:\t\t   4\\.00GiB$'
	assert_line --regexp $'^   '"$T"$'/img1\t +[0-9]+\\.[0-9]{2}MiB$'
	run mfs filesystem usage -m "$T/img1"
	assert_line --regexp $'^    Device size:\t\t +4096\\.00MiB$'
	run mfs filesystem usage --si -k "$T/img1"
	assert_line --regexp $'^    Device size:\t\t +4294967\\.30kB$'
	run mfs filesystem usage -g -b "$T/img1"
	[ "$output" = "$raw" ]

	# -T: the overall block, then the matrix
	run --separate-stderr mfs filesystem usage -T "$T/img1"
	assert_success
	assert_stderr_empty
	assert_line --regexp '^ +Data +Metadata +System$'
	assert_line --regexp '^Id Path +RAID10 +RAID1 +RAID1 +Unallocated Total +Slack$'
	assert_line --regexp '^-- -+ -+ -+ -+ -+ -+ -+$'
	[ "$(count_lines '^-- -+')" -eq 2 ]
	for i in 1 2 3 4; do
		assert_line --regexp "^ $i $T/img$i +[0-9.]+MiB +([0-9.]+MiB|-) +([0-9.]+MiB|-) +[0-9.]+MiB +1\\.00GiB +-$"
	done
	assert_line --regexp '^   Total +[0-9.]+MiB +[0-9.]+MiB +[0-9.]+MiB +[0-9.]+GiB +4\.00GiB +0\.00B$'
	assert_line --regexp '^   Used +[0-9.]+K?i?B +[0-9.]+KiB +[0-9.]+KiB$'
	# no trailing blanks
	refute_line --regexp ' $'

	# two filesystems: two reports, a blank line between
	truncate -s 1G "$T/img5"
	mkfs.mfs -q -f "$T/img5"
	run mfs filesystem usage "$T/img1" "$T/img5"
	assert_success
	[ "$(count_lines '^Overall:$')" -eq 2 ]
	[ "$(grep -B1 '^Overall:$' <<<"$output" | head -1)" = Overall: ]
	[ "$(grep -B1 '^Overall:$' <<<"$output" | sed -n 3,4p)" = $'\nOverall:' ]
	# several members of one unmounted filesystem name it once
	run mfs filesystem usage "$T/img1" "$T/img2"
	[ "$(count_lines '^Overall:$')" -eq 1 ]
}

@test "device usage: a block per device in devid order, stripe counts for striped profiles" {
	make_images 3
	mkfs.mfs -q -d raid0 -m raid1 $(imgs 3)
	run --separate-stderr mfs device usage "$T/img2"
	assert_success
	assert_stderr_empty
	assert_line --index 0 "$T/img1, ID: 1"
	assert_line --regexp '^   Device size:             1\.00GiB$'
	assert_line --regexp '^   Device slack:              0\.00B$'
	assert_line --regexp '^   Data,RAID0/3: +[0-9.]+MiB$'
	assert_line --regexp '^   Metadata,RAID1: +[0-9.]+MiB$'
	assert_line --regexp '^   Unallocated: +[0-9.]+MiB$'
	[ "$(count_lines '^/.*, ID: [0-9]+$')" -eq 3 ]
	[ "$(count_lines '^$')" -eq 2 ]
	# values end in the same column
	[ "$(grep '^   ' <<<"$output" | awk '{ print length($0) }' | sort -u)" = 35 ]
	# blocks follow devid order
	[ "$(grep -o 'ID: [0-9]*' <<<"$output" | tr -d 'ID: ' | tr '\n' ' ')" = "1 2 3 " ]
	# raw numbers: each device's lines add up to its size
	run mfs device usage -b "$T/img1"
	awk '/ID:/ { if (n) exit 1; n = 1; t = 0; next }
	     /Device size|Device slack/ { next }
	     /^   / { t += $NF } /Unallocated/ { if (t + 2097152 != 1073741824) exit 1; n = 0 }' <<<"$output"
	# after a device add, new raid0 chunks are 4 wide: both widths show
	truncate -s 1G "$T/img4"
	mfs device add -K -f "$T/img4" "$T/img1"
	mkdir "$T/mnt"
	mfs mount "$T/img1" "$T/mnt"
	echo "$T/mnt" >>"$T/.mounts"
	head -c $((400 * MiB)) /dev/zero >"$T/mnt/f"
	sync "$T/mnt/f"
	run mfs device usage "$T/mnt"
	assert_success
	[ "$(count_lines '^   Data,RAID0/3: ')" -eq 3 ]
	[ "$(count_lines '^   Data,RAID0/4: ')" -eq 4 ]
	# narrowest first
	[ "$(grep -A4 'ID: 1$' <<<"$output" | grep -o 'RAID0/[0-9]' | tr '\n' ' ')" = "RAID0/3 RAID0/4 " ]
	mfs umount "$T/mnt"
}

@test "filesystem usage / df / device usage: mounted raid1 and raid5 with data" {
	local cfg n d
	for cfg in "2 raid1" "3 raid5"; do
		read -r n d <<<"$cfg"
		make_images "$n"
		mkfs.mfs -q -f -d "$d" -m raid1 $(imgs "$n")
		mkdir -p "$T/mnt"
		mfs mount "$T/img1" "$T/mnt"
		echo "$T/mnt" >>"$T/.mounts"
		head -c $((300 * MiB)) /dev/urandom >"$T/mnt/data"
		sync "$T/mnt/data"
		run --separate-stderr mfs filesystem df -b "$T/mnt"
		assert_success
		assert_stderr_empty
		used=$(df_value Data "$(mfs_ui "$d")" used)
		total=$(df_value Data "$(mfs_ui "$d")" total)
		[ "$used" -eq $((300 * MiB)) ]
		[ "$total" -ge "$used" ]
		run mfs filesystem usage -b "$T/mnt"
		assert_success
		alloc=$(field 'Device allocated')
		sum=$(awk '/^(Data|Metadata|System),/ { s = 1; next } /^Unallocated:/ { s = 0 }
			   s && /^   / { t += $NF } END { print t + 0 }' <<<"$output")
		[ "$sum" -eq "$alloc" ]
		# Used counts every copy (raid1) or the parity (raid5 on 3: 3/2)
		if [ "$d" = raid1 ]; then
			within "$(field 'Used')" $((2 * 300 * MiB)) 1
		else
			within "$(field 'Used')" $((3 * 300 * MiB / 2)) 1
		fi
		# df(1) shows the same free space as "Free (statfs, df)"
		avail=$(df -B1 --output=avail "$T/mnt" | tail -1 | tr -d ' ')
		within "$(field 'Free (statfs, df)')" "$avail" 0.5
		# Free (estimated): room left in the data chunks + the profile's share of the rest
		un=($(awk '/^Unallocated:/ { s = 1; next } s && /^   / { print $NF }' <<<"$output"))
		if [ "$d" = raid1 ]; then
			exp=$((total - used + $(printf '%s\n' "${un[@]}" | sort -n | head -1)))
			within "$(field 'Free (estimated)')" "$exp" 3
		fi
		run mfs device usage "$T/mnt"
		assert_success
		[ "$(count_lines ', ID: [0-9]+$')" -eq "$n" ]
		# show resolves the mount point, with what the daemon knows
		run --separate-stderr mfs filesystem show "$T/mnt"
		assert_success
		assert_stderr_empty
		assert_line --index 0 --regexp "^Label: none  uuid: $(fs_uuid "$T/img1")$"
		assert_line --regexp "^	Total devices $n FS bytes used 300\\.[0-9]{2}MiB$"
		[ "$(count_lines '^	devid +[0-9]+ size 1\.00GiB used [0-9.]+[MG]iB path ')" -eq "$n" ]
		mfs umount "$T/mnt"
	done
}

@test "filesystem show: a directory that is not an mfs mount point is an error" {
	mkdir "$T/plain"
	run --separate-stderr mfs filesystem show "$T/plain"
	assert_failure 1
	assert_stderr_line "ERROR: not a valid mfs filesystem: $T/plain"
	[ "$(grep -c . <<<"$stderr")" -eq 1 ]
}

# end_on IMG DEVID: where the highest extent on DEVID ends, per the chunk tree
end_on() {
	chunk_info "$1" | awk -v d="$2" '$1 == "dev" && $2 == d { print $5 }'
}

@test "filesystem resize: offline grow, max, refusals" {
	make_images 2
	mkfs.mfs -q -d raid1 -m raid1 $(imgs 2)
	truncate -s 2G "$T/img1"
	run --separate-stderr mfs filesystem resize 1:+512m "$T/img1"
	assert_success
	assert_output "Resize device id 1 ($T/img1) from 1.00GiB to 1.50GiB"
	assert_stderr_empty
	[ "$(chunk_info "$T/img1" | awk '$1 == "dev" && $2 == 1 { print $3 }')" -eq $((1536 * MiB)) ]
	run mfs filesystem usage -b "$T/img1"
	[ "$(field 'Device slack')" -eq $((512 * MiB)) ]
	# devid defaults to 1; max is the whole device
	run --separate-stderr mfs filesystem resize max "$T/img2"
	assert_success
	assert_output "Resize device id 1 ($T/img1) from 1.50GiB to max"
	[ "$(chunk_info "$T/img1" | awk '$1 == "dev" && $2 == 1 { print $3 }')" -eq $((2 * GiB)) ]
	# beyond the underlying device
	run --separate-stderr mfs filesystem resize 2:+4k "$T/img1"
	assert_failure 1
	assert_stderr_regex "^ERROR: unable to resize '$T/img1': no enough free space"
	# sizes count in 4 KiB: less is no change
	run --separate-stderr mfs filesystem resize 2:+1k "$T/img1"
	assert_success
	assert_output "Resize device id 2 ($T/img2) from 1.00GiB to 1.00GiB"
	run --separate-stderr mfs filesystem resize 2:2g "$T/img1"
	assert_failure 1
	assert_stderr_regex "^ERROR: unable to resize '$T/img1': no enough free space"
	run --separate-stderr mfs filesystem resize 7:max "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: cannot find devid: 7"
	run --separate-stderr mfs filesystem resize 2:-2g "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: current size is 1.00GiB which is smaller than 2.00GiB"
	run --separate-stderr mfs filesystem resize 2:100m "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: unable to resize '$T/img1': the new size 100.00MiB is below the minimum device size 128.00MiB"
	for bad in 1:2x x:1g 1: +g ""; do
		run --separate-stderr mfs filesystem resize "$bad" "$T/img1"
		assert_failure 1
		assert_stderr_line "ERROR: invalid resize argument: '$bad'"
	done
	run --separate-stderr mfs filesystem resize 1g
	assert_failure 1
	assert_stderr_regex "not enough arguments"
	# nothing to cancel
	run --separate-stderr mfs filesystem resize cancel "$T/img1"
	assert_failure 1
	assert_stderr_line "ERROR: unable to cancel resize on '$T/img1': no resize in progress"
	run mfs check "$T/img1"
	assert_success
}

@test "filesystem resize: without devid 1, the lowest devid is used with a warning" {
	make_images 2
	mkfs.mfs -q -d single -m single $(imgs 2)
	mfs device delete -q 1 "$T/img2"
	run --separate-stderr mfs filesystem resize -- -64m "$T/img2"
	assert_success
	assert_stderr_line "WARNING: no devid specified means devid 1 which does not exist, using lowest devid 2 as a fallback"
	assert_line "Resize device id 2 ($T/img2) from 1.00GiB to 960.00MiB"
	run mfs check "$T/img2"
	assert_success
}

@test "filesystem resize: offline shrink moves the chunks past the new end, files intact" {
	mkdir "$T/src"
	head -c $((120 * MiB)) /dev/urandom >"$T/src/big"
	head -c $((3 * MiB)) /dev/urandom >"$T/src/small"
	(cd "$T/src" && sha256sum big small) >"$T/sums"
	make_images 3
	mkfs.mfs -q -d raid1 -m raid1 -r "$T/src" $(imgs 3)
	end=$(end_on "$T/img1" 1)
	new=$(((end / MiB - 40) * MiB))
	run --separate-stderr mfs filesystem resize "1:$((new / MiB))m" "$T/img1"
	assert_success
	assert_line --index 0 --regexp "^Resize device id 1 \\($T/img1\\) from 1\\.00GiB to [0-9.]+MiB$"
	assert_line --index 1 --regexp '^Relocating [0-9]+ chunks? \([0-9.]+[KMG]?i?B used\) past the new end$'
	# nothing of devid 1 lies past the new end any more
	[ "$(end_on "$T/img1" 1)" -le "$new" ]
	[ "$(chunk_info "$T/img1" | awk '$1 == "dev" && $2 == 1 { print $3 }')" -eq "$new" ]
	run mfs check $(imgs 3)
	assert_success
	mkdir "$T/mnt"
	mfs mount -o ro "$T/img1" "$T/mnt"
	echo "$T/mnt" >>"$T/.mounts"
	(cd "$T/mnt" && sha256sum -c --quiet "$T/sums")
	mfs umount "$T/mnt"
}

@test "filesystem resize: a shrink that cannot fit is refused before anything moves" {
	mkdir "$T/src"
	head -c $((50 * MiB)) /dev/urandom >"$T/src/file"
	make_images 2
	mkfs.mfs -q -d raid1 -m raid1 -r "$T/src" $(imgs 2)
	fp1=$(fingerprint "$T/img1")
	fp2=$(fingerprint "$T/img2")
	# raid1 on two devices: the 256 MiB metadata chunk has no room below 200 MiB
	run --separate-stderr mfs filesystem resize 1:200m "$T/img1"
	assert_failure 1
	assert_line "Resize device id 1 ($T/img1) from 1.00GiB to 200.00MiB"
	assert_stderr_regex "^ERROR: unable to resize '$T/img1': no enough free space to move what lies past $((200 * MiB)) bytes on device 1: the (Data|Metadata|System),RAID1 chunk at [0-9]+ \\([0-9]+ bytes\\) fits nowhere else$"
	assert_untouched "$T/img1" "$fp1"
	assert_untouched "$T/img2" "$fp2"
}

# shrink_online N PROFILE: write files on a mounted filesystem, shrink
# device 1 so that chunks must move, check the files and the filesystem
shrink_online() {
	local n=$1 d=$2 end new
	make_images "$n"
	mkfs.mfs -q -d "$d" -m raid1 $(imgs "$n")
	mkdir -p "$T/mnt"
	mfs mount "$T/img1" "$T/mnt"
	echo "$T/mnt" >>"$T/.mounts"
	for i in 1 2 3; do
		head -c $((i * 40 * MiB)) /dev/urandom >"$T/mnt/file$i"
	done
	(cd "$T/mnt" && sha256sum file1 file2 file3) >"$T/sums"
	mfs umount "$T/mnt"
	end=$(end_on "$T/img1" 1)
	mfs mount "$T/img1" "$T/mnt"
	new=$(((end / MiB - 100) * MiB))
	run --separate-stderr mfs filesystem resize "1:$((new / MiB))M" "$T/mnt"
	assert_success
	assert_line --index 0 --regexp "^Resize device id 1 \\(.*img1\\) from 1\\.00GiB to [0-9.]+MiB$"
	assert_line --index 1 --regexp '^Relocating [0-9]+ chunks? '
	(cd "$T/mnt" && sha256sum -c --quiet "$T/sums")
	run mfs filesystem usage -b "$T/mnt"
	[ "$(awk '/^Unallocated:/ { s = 1; next } s && /img1/ { print $NF }' <<<"$output")" -ge 0 ]
	run mfs device usage -b "$T/mnt"
	assert_line --regexp '^   Device slack: +'$((GiB - new))'$'
	# growing back online is immediate
	run --separate-stderr mfs filesystem resize 1:max "$T/mnt"
	assert_success
	mfs umount "$T/mnt"
	[ "$(end_on "$T/img1" 1)" -le "$new" ]
	run mfs check $(imgs "$n")
	assert_success
	mfs mount -o ro "$T/img1" "$T/mnt"
	(cd "$T/mnt" && sha256sum -c --quiet "$T/sums")
	mfs umount "$T/mnt"
}

@test "filesystem resize: online shrink of a raid1 member, files intact, check clean" {
	shrink_online 3 raid1
}

@test "filesystem resize: online shrink of a raid5 member, files intact, check clean" {
	shrink_online 3 raid5
}

@test "filesystem resize: online grow and refusals on a mounted filesystem" {
	make_images 2
	mkfs.mfs -q -d raid1 -m raid1 $(imgs 2)
	truncate -s 1536M "$T/img2"
	mkdir "$T/mnt"
	mfs mount "$T/img1" "$T/mnt"
	echo "$T/mnt" >>"$T/.mounts"
	run --separate-stderr mfs filesystem resize 2:+256M "$T/mnt"
	assert_success
	assert_output --regexp "^Resize device id 2 \\(.*img2\\) from 1\\.00GiB to 1\\.25GiB$"
	run mfs filesystem usage -b "$T/mnt"
	[ "$(field 'Device size')" -eq $((2 * GiB + 256 * MiB)) ]
	[ "$(field 'Device slack')" -eq $((256 * MiB)) ]
	run --separate-stderr mfs filesystem resize 2:2G "$T/mnt"
	assert_failure 1
	assert_stderr_regex "^ERROR: unable to resize '$T/mnt': no enough free space"
	run --separate-stderr mfs filesystem resize 3:max "$T/mnt"
	assert_failure 1
	assert_stderr_line "ERROR: cannot find devid: 3"
	mfs umount "$T/mnt"
	run mfs check $(imgs 2)
	assert_success
}

@test "filesystem usage / df / device usage: 34 devices, chunks striped over all; online equals offline" {
	# More devices than one page of the space ioctl holds, and chunks of 34
	# stripes (more than a page holds with the others): every device and
	# every stripe must still be counted, mounted or not.
	local c want got
	make_images 34 256M
	mkdir -p "$T/src"
	head -c $((40 * MiB)) /dev/urandom >"$T/src/a"
	mkfs.mfs -q -d raid0 -m raid6 -r "$T/src" $(imgs 34)
	chunk_info "$T/img1" >"$T/info"

	cmds=("filesystem usage -b" "filesystem usage -b -T" "device usage -b" "filesystem df -b")
	for c in "${!cmds[@]}"; do
		run --separate-stderr mfs ${cmds[$c]} "$T/img1"
		assert_success
		assert_stderr_empty
		echo "$output" >"$T/off.$c"
	done

	# the truth, from the chunk tree: every device, with all it holds
	run cat "$T/off.2"
	[ "$(count_lines ', ID: [0-9]+$')" -eq 34 ]
	[ "$(count_lines '^   Data,RAID0/34: +26214400$')" -eq 34 ]
	[ "$(count_lines '^   Metadata,RAID6/34: ')" -eq 34 ]
	want=$(awk '$1 == "dev" { print $2, $4 }' "$T/info")
	got=$(awk '/, ID: / { id = $NF } /^   (Data|Metadata|System),/ { sum[id] += $NF }
		END { for (d in sum) print d, sum[d] }' "$T/off.2" | sort -n)
	[ "$want" = "$got" ]
	run cat "$T/off.0"
	[ "$(field 'Device size')" -eq $((34 * 256 * MiB)) ]
	[ "$(field 'Device allocated')" -eq "$(awk '$1 == "dev" { s += $4 } END { print s }' "$T/info")" ]

	mkdir -p "$T/mnt"
	mfs mount "$T/img1" "$T/mnt"
	echo "$T/mnt" >>"$T/.mounts"
	for c in "${!cmds[@]}"; do
		run --separate-stderr mfs ${cmds[$c]} "$T/mnt"
		assert_success
		assert_stderr_empty
		diff -u "$T/off.$c" - <<<"$output"
	done
	mfs umount "$T/mnt"
}

# data_total MNT|IMG: bytes of data chunks of every profile
data_total() {
	mfs filesystem df -b "$1" | awk -F'total=|,' '/^Data,/ { s += $3 } END { print s + 0 }'
}

# data_total_is BYTES: $T/mnt's data chunks hold BYTES at most
data_total_is() {
	[ "$(data_total "$T/mnt")" -le "$1" ]
}

# synced_data_total_is BYTES: the same after a commit
synced_data_total_is() {
	mfs filesystem sync "$T/mnt"
	data_total_is "$1"
}

@test "empty data chunks go back to the unallocated pool; the last one of a profile stays" {
	make_images 1 1G
	mkfs.mfs -q -f -d single -m dup "$T/img1"
	one=$(data_total "$T/img1")
	mfs_mount "$T/img1" "$T/mnt"
	for i in 1 2 3 4; do
		head -c 150M /dev/zero >"$T/mnt/f$i"
	done
	echo keep >"$T/mnt/keep"
	mfs filesystem sync "$T/mnt"
	full=$(data_total "$T/mnt")
	[ "$full" -ge $((4 * one)) ]
	rm "$T/mnt"/f*
	# the space comes back once the kernel forgets the files and a commit runs
	wait_until 600 synced_data_total_is "$one"
	assert_equal "$(data_total "$T/mnt")" "$one"
	run mfs filesystem df "$T/mnt"
	assert_line --regexp '^Data, single: total='
	# ... and by the periodic commit too, without asking
	mfs umount "$T/mnt"
	mfs_mount -o commit=1 "$T/img1" "$T/mnt"
	for i in 1 2 3; do
		head -c 150M /dev/zero >"$T/mnt/g$i"
	done
	sync "$T/mnt/g3"
	[ "$(data_total "$T/mnt")" -gt "$one" ]
	rm "$T/mnt"/g*
	wait_until 600 data_total_is "$one"
	assert_equal "$(data_total "$T/mnt")" "$one"
	assert_equal "$(cat "$T/mnt/keep")" keep
	mfs umount "$T/mnt"
	run mfs check "$T/img1"
	assert_success
}
