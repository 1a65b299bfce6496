# device 2's superblock mirror written on device 1
EXPECT='superblock copy 1 on .* names devid 2, expected 1'
REPAIR=yes
damage() {
	dd if="$W/img2" of="$W/img1" bs=4096 skip=$((67108864 / 4096)) seek=$((67108864 / 4096)) count=1 conv=notrunc status=none
}
