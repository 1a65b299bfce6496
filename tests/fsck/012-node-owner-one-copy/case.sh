# the first copy of the csum tree root names the fs tree as owner
EXPECT='csum tree block [0-9]+ level [0-9]+: copy 1 .*: checksum, header or item mismatch'
REPAIR=yes
damage() {
	corrupt block "$(tree_root csum)" 1 owner 5
}
