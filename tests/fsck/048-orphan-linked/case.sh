# an orphan item for an inode that has links
EXPECT='orphan item for inode [0-9]+, whose link count is 2'
REPAIR=no
damage() {
	corrupt insert fs ORPHAN ORPHAN_ITEM "$F"
}
