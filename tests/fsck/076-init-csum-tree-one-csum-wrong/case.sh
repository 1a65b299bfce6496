# one sector's checksum wrong (both copies of the data good): every copy
# fails it; --init-csum-tree makes it again from the data
EXPECT='data extent [0-9]+ sector 1 \(logical [0-9]+\): copy 1 \(on devid [0-9]+\): checksum mismatch'
REPAIR=yes
REPAIR_OPTION=--init-csum-tree
DATA_CSUM=1
damage() {
	corrupt set csum EXTENT_CSUM EXTENT_CSUM "$DATA_BYTENR" u32@4 305419896
}
