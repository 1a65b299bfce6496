# raid6 data, raid1c3 metadata: every data extent's item deleted;
# --init-extent-tree counts them again from the file extents
PROFILE=raid6
EXPECT='data extent [0-9]+ length 12288 \(inode [0-9]+ file extent at 0\) has no extent item'
REPAIR=yes
REPAIR_OPTION=--init-extent-tree
damage() {
	local k
	for k in $("$mfs" inspect-internal dump-tree -t extent "$W/img1" |
		   grep -A1 'EXTENT_ITEM' | grep -B1 'flags DATA' |
		   sed -n 's/.*key (\([0-9]*\) EXTENT_ITEM \([0-9]*\)).*/\1:\2/p'); do
		corrupt del extent "${k%:*}" EXTENT_ITEM "${k#*:}" || return 1
	done
}
