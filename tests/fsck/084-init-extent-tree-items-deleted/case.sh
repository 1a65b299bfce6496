# every data extent's item deleted, and the chunk tree block's (a tree
# block item deleted earlier would give its space to the next deletion's
# new blocks): --init-extent-tree makes them all again from the other
# trees, with the block groups' used bytes
EXPECT='data extent [0-9]+ length 12288 \(inode [0-9]+ file extent at 0\) has no extent item'
REPAIR=yes
REPAIR_OPTION=--init-extent-tree
damage() {
	local k
	for k in $("$mfs" inspect-internal dump-tree -t extent "$W/img1" | awk '
		/EXTENT_ITEM/ { s = $0; sub(/.*key \(/, "", s); split(s, a, " "); k = a[1] ":" a[3] + 0 }
		/flags DATA/ { print k }
		/tree block owner 3 / { chunk = k }
		END { print chunk }'); do
		corrupt del extent "${k%:*}" EXTENT_ITEM "${k#*:}" || return 1
	done
	[ "$("$mfs" inspect-internal dump-tree -t extent "$W/img1" | grep -c -e 'flags DATA' -e 'owner 3 ')" = 0 ]
}
