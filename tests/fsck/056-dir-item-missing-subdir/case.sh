# a subdirectory's DIR_ITEM deleted, its DIR_INDEX left: rebuilt from it
EXPECT='dir 256 entry '"'"'d'"'"' \(index [0-9]+\) has no DIR_ITEM'
REPAIR=yes
damage() {
	corrupt del fs 256 DIR_ITEM hash:d
}
