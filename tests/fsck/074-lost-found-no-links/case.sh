# a file with no name and link count 0 but no orphan item (so the mount
# would never free it): named in lost+found with link count 1
EXPECT='inode [0-9]+ is not referenced and not an orphan'
REPAIR=yes
damage() {
	cut_entry 256 data
	corrupt set fs "$DATA" INODE_ITEM 0 nlink 0
	sums_moved ./data "./lost+found/$DATA"
}
