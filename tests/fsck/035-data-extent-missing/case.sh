# a data extent's extent item deleted
EXPECT='data extent [0-9]+ length 12288 \(inode [0-9]+ file extent at 0\) has no extent item'
REPAIR=no
damage() {
	corrupt del extent "$DATA_BYTENR" EXTENT_ITEM 12288
}
