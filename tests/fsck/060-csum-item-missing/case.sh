# the csum item of a data extent deleted
EXPECT='data extent [0-9]+ length 12288 \(inode [0-9]+ file extent at 0\) has no csum item'
REPAIR=no
damage() {
	corrupt del csum EXTENT_CSUM EXTENT_CSUM "$DATA_BYTENR"
}
