# a file whose only name is gone, with no orphan item
EXPECT='inode [0-9]+ is not referenced and not an orphan'
REPAIR=no
damage() {
	idx=$(dir_index_of "$W/img1" 256 data)
	size=$("$mfs" inspect-internal dump-tree -t fs "$W/img1" | awk '/key \(256 INODE_ITEM 0\)/ { getline; for (i = 1; i < NF; i++) if ($i == "size") { print $(i + 1); exit } }')
	corrupt del fs 256 DIR_INDEX "$idx"
	corrupt del fs 256 DIR_ITEM hash:data
	corrupt set fs 256 INODE_ITEM 0 size $((size - 4))
}
