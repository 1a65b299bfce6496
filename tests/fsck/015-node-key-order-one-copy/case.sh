# the first key of the second copy of the device tree root copied from slot 2: keys out of order
EXPECT='device tree block [0-9]+ level [0-9]+: copy 2 .*'
REPAIR=yes
damage() {
	corrupt block "$(tree_root dev)" 2 key:0 2
}
