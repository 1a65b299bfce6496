# a symlink's size
EXPECT='symlink [0-9]+ has size 9, its target is 3 bytes'
REPAIR=no
damage() {
	corrupt set fs "$S" INODE_ITEM 0 size 9
}
