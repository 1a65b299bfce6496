# a DIR_INDEX deleted, its DIR_ITEM left
EXPECT='dir 256 entry '"'"'data'"'"' \(index [0-9]+\) has no DIR_INDEX'
REPAIR=yes
damage() {
	corrupt del fs 256 DIR_INDEX "$(dir_index_of "$W/img1" 256 data)"
}
