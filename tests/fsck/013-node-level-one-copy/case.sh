# the second copy of the extent tree root claims level 1
EXPECT='extent tree block [0-9]+ level [0-9]+: copy 2 .*'
REPAIR=yes
damage() {
	corrupt block "$(tree_root extent)" 2 level 1
}
