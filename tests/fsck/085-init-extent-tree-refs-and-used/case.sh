# a data extent's count too high, a tree block's item gone, a leftover
# item for nothing, a block group's used bytes wrong: --init-extent-tree
# puts every one right at once
EXPECT='block group [0-9]+ \(Data\): used [0-9]+ but its extents add up to [0-9]+'
REPAIR=yes
REPAIR_OPTION=--init-extent-tree
damage() {
	# the tree block's item last: its space must not go to the others' new blocks
	corrupt set extent "$DATA_BYTENR" EXTENT_ITEM 12288 refs 3 &&
	corrupt set extent "$(bg_of Data)" BLOCK_GROUP_ITEM "$(bg_len_of Data)" u64@0 4096 &&
	corrupt insert extent $(($(bg_of Data) + $(bg_len_of Data) - 65536)) EXTENT_ITEM 4096 \
		0100000000000000010000000000000001000000000000000500000000000000000100000000000000000000000000 &&
	corrupt del extent "$(tree_root csum)" EXTENT_ITEM 16384
}
