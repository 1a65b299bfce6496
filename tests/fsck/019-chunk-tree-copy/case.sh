# the second copy of the chunk tree root names the fs tree as owner
EXPECT='chunk tree block [0-9]+ level [0-9]+: copy 2 .*'
REPAIR=yes
damage() {
	corrupt block "$(tree_root chunk)" 2 owner 5
}
