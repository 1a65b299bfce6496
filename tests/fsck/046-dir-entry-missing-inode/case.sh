# a directory entry naming an inode that does not exist
EXPECT='dir 256 entry '"'"'data'"'"' points at inode 5000, which does not exist'
REPAIR=no
damage() {
	corrupt set fs 256 DIR_ITEM hash:data child 5000
	corrupt set fs 256 DIR_INDEX "$(dir_index_of "$W/img1" 256 data)" child 5000
}
