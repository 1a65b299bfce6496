# every copy of the chunk tree damaged, data in raid5: with no chunk item
# left, chunk-recover must find the order of the data chunk's stripes
# from where the checksummed data sectors lie
PROFILE=raid5
EXPECT="the chunk tree \(root block [0-9]+\) cannot be read: .*'mfs rescue chunk-recover' rebuilds it.*"
REPAIR=yes
damage() {
	corrupt_copies --what metadata --owner 3 "$W/img1" 1,2,3
}
repair() {
	local out rc
	# shellcheck disable=SC2086
	out=$(timeout 120 "$mfs" rescue chunk-recover -y $IMGS 2>&1)
	rc=$?
	echo "$out"
	grep -q ', [1-9][0-9]* in the order the blocks and data found bear out$' <<<"$out" || return 2
	return $rc
}
