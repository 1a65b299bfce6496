# the chunk tree and the device tree both damaged on every copy: no
# source for the chunks' stripes, chunk-recover says so and writes nothing
EXPECT="the chunk tree \(root block [0-9]+\) cannot be read: .*"
REPAIR=no
damage() {
	corrupt_copies --what metadata --owner 3,4 "$W/img1" 1,2
}
repair() {
	local out rc
	# shellcheck disable=SC2086
	out=$(timeout 120 "$mfs" rescue chunk-recover -y $IMGS 2>&1)
	rc=$?
	echo "$out"
	grep -q '^ERROR: the chunk tree cannot be rebuilt: device tree block [0-9]* .*has no copy that verifies' <<<"$out" || return 2
	return $rc
}
