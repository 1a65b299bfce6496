# a tree block's extent item with two references
EXPECT='tree block extent [0-9]+ has 2 references, expected 1'
REPAIR=no
damage() {
	corrupt set extent "$(tree_root csum)" EXTENT_ITEM 16384 refs 2
}
