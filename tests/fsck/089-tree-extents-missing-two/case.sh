# two tree blocks' extent items deleted (the fs and device tree roots),
# on raid5 data: --repair makes both again before its own copy-on-write
# can take their space
PROFILE=raid5
EXPECT='(fs|device) tree block [0-9]+ has no extent item'
REPAIR=yes
damage() {
	corrupt del extent "$(tree_root fs)" EXTENT_ITEM 16384 &&
		corrupt del extent "$(tree_root dev)" EXTENT_ITEM 16384
}
