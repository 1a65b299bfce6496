# a data extent's reference count too high
EXPECT='data extent [0-9]+ length 12288 has refs 3, but 1 file extent item\(s\) point at it'
REPAIR=no
damage() {
	corrupt set extent "$DATA_BYTENR" EXTENT_ITEM 12288 refs 3
}
