# a directory with files cut off from the root (its entry in the root
# gone): it moves into lost+found with everything under it; the root's
# size and link count are set to what its entries say
EXPECT='inode [0-9]+ is not referenced and not an orphan'
REPAIR=yes
damage() {
	cut_entry 256 a
	sums_moved ./a "./lost+found/$A"
}
