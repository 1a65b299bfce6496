# a file's nbytes
EXPECT='inode [0-9]+ has nbytes 4096, its file extents add up to 12288'
REPAIR=yes
damage() {
	corrupt set fs "$DATA" INODE_ITEM 0 nbytes 4096
}
