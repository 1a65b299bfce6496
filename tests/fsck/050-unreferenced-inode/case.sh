# a file whose only name is gone, with no orphan item: --repair names it
# lost+found/<ino>, as btrfs check does
EXPECT='inode [0-9]+ is not referenced and not an orphan'
REPAIR=yes
damage() {
	local size
	size=$("$mfs" inspect-internal dump-tree -t fs "$W/img1" | awk '/key \(256 INODE_ITEM 0\)/ { getline; for (i = 1; i < NF; i++) if ($i == "size") { print $(i + 1); exit } }')
	cut_entry 256 data
	corrupt set fs 256 INODE_ITEM 0 size $((size - 4))
	sums_moved ./data "./lost+found/$DATA"
}
