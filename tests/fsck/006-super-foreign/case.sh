# a superblock mirror of another filesystem
EXPECT='superblock copy 1 on device 2 belongs to another filesystem'
REPAIR=yes
damage() {
	truncate -s 256M "$W/other"
	"$mfs" mkfs -q -f "$W/other"
	dd if="$W/other" of="$W/img2" bs=4096 skip=$((67108864 / 4096)) seek=$((67108864 / 4096)) count=1 conv=notrunc status=none
	rm -f "$W/other"
}
