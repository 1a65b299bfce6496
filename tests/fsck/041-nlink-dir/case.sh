# a directory's link count
EXPECT='inode [0-9]+ \(directory\) has link count 9, expected 2'
REPAIR=yes
damage() {
	corrupt set fs "$D" INODE_ITEM 0 nlink 9
}
