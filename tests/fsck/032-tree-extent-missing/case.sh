# a tree block's extent item deleted
EXPECT='csum tree block [0-9]+ has no extent item'
REPAIR=yes
damage() {
	corrupt del extent "$(tree_root csum)" EXTENT_ITEM 16384
}
