# the primary superblock of one member zeroed
EXPECT='superblock copy 0 at 65536 on device 2 \(.*\) is missing'
REPAIR=yes
damage() {
	zero "$W/img2" 65536 4096
}
