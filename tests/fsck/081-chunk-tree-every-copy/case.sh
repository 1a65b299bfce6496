# every copy of the chunk tree damaged: the filesystem does not open;
# rescue chunk-recover rebuilds it from the device and extent trees
EXPECT="the chunk tree \(root block [0-9]+\) cannot be read: .*'mfs rescue chunk-recover' rebuilds it.*"
REPAIR=yes
damage() {
	corrupt_copies --what metadata --owner 3 "$W/img1" 1,2
}
repair() {
	# shellcheck disable=SC2086
	timeout 120 "$mfs" rescue chunk-recover -y $IMGS
}
