# a directory named in two directories
EXPECT='directory [0-9]+ has more than one parent.*'
REPAIR=no
damage() {
	for k in DIR_ITEM:hash:data DIR_INDEX:$(dir_index_of "$W/img1" 256 data); do
		corrupt set fs 256 "${k%%:*}" "${k#*:}" child "$A"
		corrupt set fs 256 "${k%%:*}" "${k#*:}" type 2
	done
}
