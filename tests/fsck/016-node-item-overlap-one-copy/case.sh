# item 1 of the first copy of the root tree overlaps item 0 (its offset set to 0)
EXPECT='root tree block [0-9]+ level [0-9]+: copy 1 .*'
REPAIR=yes
damage() {
	corrupt block "$(tree_root root)" 1 u32@$((85 + 25 + 17)) 0
}
