# a superblock mirror with garbage inside
EXPECT='superblock copy 1 at 67108864 on device 1 \(.*\) is corrupt: checksum or field mismatch'
REPAIR=yes
damage() {
	printf garbage | dd of="$W/img1" bs=1 seek=$((67108864 + 300)) conv=notrunc status=none
}
