# an orphan item for an inode that does not exist
EXPECT='orphan item for inode 4000, which does not exist'
REPAIR=no
damage() {
	corrupt insert fs ORPHAN ORPHAN_ITEM 4000
}
