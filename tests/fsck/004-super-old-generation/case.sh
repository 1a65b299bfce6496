# an old superblock mirror put back
EXPECT='superblock copy 1 on device 1 \(.*\) has generation [0-9]+, expected [0-9]+'
REPAIR=yes
damage() {
	dd if="$W/img1" of="$W/old" bs=4096 skip=$((67108864 / 4096)) count=1 status=none
	# two more commits
	corrupt set fs "$F" INODE_ITEM 0 uid 0
	corrupt set fs "$F" INODE_ITEM 0 uid 0
	dd if="$W/old" of="$W/img1" bs=4096 seek=$((67108864 / 4096)) conv=notrunc status=none
}
