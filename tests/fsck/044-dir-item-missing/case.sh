# a DIR_ITEM deleted, its DIR_INDEX left
EXPECT='dir 256 entry '"'"'data'"'"' \(index [0-9]+\) has no DIR_ITEM'
REPAIR=yes
damage() {
	corrupt del fs 256 DIR_ITEM hash:data
}
