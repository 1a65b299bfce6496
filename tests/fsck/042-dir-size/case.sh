# a directory's size
EXPECT='directory [0-9]+ has size 3, its entries'"'"' names add up to [0-9]+'
REPAIR=yes
damage() {
	corrupt set fs "$A" INODE_ITEM 0 size 3
}
