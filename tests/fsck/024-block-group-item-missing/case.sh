# the block group item of the data chunk deleted
EXPECT='chunk [0-9]+ has no block group item'
REPAIR=no
damage() {
	corrupt del extent "$(bg_of Data)" BLOCK_GROUP_ITEM "$(bg_len_of Data)"
}
