# a directory entry's type
EXPECT='dir 256 entry '"'"'data'"'"' has type 7, but inode [0-9]+ is a regular file'
REPAIR=no
damage() {
	corrupt set fs 256 DIR_ITEM hash:data type 7
	corrupt set fs 256 DIR_INDEX "$(dir_index_of "$W/img1" 256 data)" type 7
}
