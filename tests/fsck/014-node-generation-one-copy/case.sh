# the second copy of the fs tree root from an old generation
EXPECT='fs tree block [0-9]+ level [0-9]+: copy 2 .*: generation 1, its parent expects [0-9]+ \(an old copy\)'
REPAIR=yes
damage() {
	corrupt block "$(tree_root fs)" 2 generation 1
}
