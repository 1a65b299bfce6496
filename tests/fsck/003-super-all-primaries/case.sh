# every member's primary superblock zeroed: the mirrors open it
EXPECT='superblock copy 0 at 65536 on device 1 \(.*\) is missing'
REPAIR=yes
damage() {
	zero "$W/img1" 65536 4096
	zero "$W/img2" 65536 4096
}
