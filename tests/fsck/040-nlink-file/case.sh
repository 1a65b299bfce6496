# a file's link count
EXPECT='inode [0-9]+ \(regular file\) has link count 5, expected 2'
REPAIR=yes
damage() {
	corrupt set fs "$F" INODE_ITEM 0 nlink 5
}
