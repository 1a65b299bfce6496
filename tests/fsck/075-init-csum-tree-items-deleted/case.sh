# every csum item deleted (the csum tree left empty): --init-csum-tree
# makes them all again from the data
EXPECT='data extent [0-9]+ length 12288 \(inode [0-9]+ file extent at 0\) has no csum item'
REPAIR=yes
REPAIR_OPTION=--init-csum-tree
damage() {
	local b
	for b in $("$mfs" inspect-internal dump-tree -t csum "$W/img1" |
		   sed -n 's/.*key (EXTENT_CSUM EXTENT_CSUM \([0-9]*\)).*/\1/p'); do
		corrupt del csum EXTENT_CSUM EXTENT_CSUM "$b" || return 1
	done
	[ -z "$("$mfs" inspect-internal dump-tree -t csum "$W/img1" | grep 'key (EXTENT_CSUM')" ]
}
