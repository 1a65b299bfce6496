# a file extent pointing past its extent
EXPECT='inode [0-9]+ file extent at 0: offset 4096 \+ num_bytes 12288 exceeds ram_bytes 12288'
REPAIR=no
damage() {
	corrupt set fs "$DATA" EXTENT_DATA 0 offset 4096
}
