# a block group's used bytes
EXPECT='block group [0-9]+ \(Data\): used 4096 but its extents add up to [0-9]+'
REPAIR=yes
damage() {
	corrupt set extent "$(bg_of Data)" BLOCK_GROUP_ITEM "$(bg_len_of Data)" u64@0 4096
}
