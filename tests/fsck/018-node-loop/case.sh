# the fs tree root (a node) points at itself from slot 1, on every copy
EXPECT='tree block [0-9]+ is referenced more than once'
REPAIR=no
damage() {
	corrupt block "$(tree_root fs)" 0 ptr:1 "$(tree_root fs)"
}
