# raid6 data whose csum item is deleted: --init-csum-tree reads the data
# columns, and a later --check-data-csum verifies them and both rebuilds
EXPECT='data extent [0-9]+ length 12288 \(inode [0-9]+ file extent at 0\) has no csum item'
REPAIR=yes
REPAIR_OPTION=--init-csum-tree
PROFILE=raid6
damage() {
	corrupt del csum EXTENT_CSUM EXTENT_CSUM "$DATA_BYTENR"
}
