# a device item's bytes_used
EXPECT='device 1: bytes_used 4096 but its device extents add up to [0-9]+'
REPAIR=no
damage() {
	corrupt set chunk 1 DEV_ITEM 1 u64@16 4096
}
