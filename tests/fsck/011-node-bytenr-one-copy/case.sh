# the second copy of the fs tree root names another bytenr (checksum valid)
EXPECT='fs tree block [0-9]+ level [0-9]+: copy 2 .*: checksum, header or item mismatch'
REPAIR=yes
damage() {
	corrupt block "$(tree_root fs)" 2 bytenr 4096
}
