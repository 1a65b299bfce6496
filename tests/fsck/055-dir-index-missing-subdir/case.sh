# a subdirectory's DIR_INDEX deleted, its DIR_ITEM left: the repair rebuilds
# it, and the parent's link count and size are taken as the rebuilt entry
# makes them (not lowered to what the damaged directory counts)
EXPECT='dir 256 entry '"'"'d'"'"' \(index [0-9]+\) has no DIR_INDEX'
REPAIR=yes
damage() {
	corrupt del fs 256 DIR_INDEX "$(dir_index_of "$W/img1" 256 d)"
}
