# raid6 with a member missing and a link count wrong: --repair mends it
# from the copies present (opened as a degraded mount is); the member,
# back, is caught up and the filesystem is whole and clean
PROFILE=raid6
EXPECT='inode [0-9]+ \(regular file\) has link count 7, expected 2'
REPAIR=yes
damage() {
	corrupt set fs "$F" INODE_ITEM 0 nlink 7 || return 1
	mv "$W/img4" "$W/img4.away"
	IMGS="$W/img1 $W/img2 $W/img3"
}
repair() {
	local out rc
	# shellcheck disable=SC2086
	out=$(timeout 120 "$mfs" check --repair --force $IMGS 2>&1)
	rc=$?
	echo "$out"
	mv "$W/img4.away" "$W/img4"
	# what is left: the member that was missing, nothing else
	[ "$rc" -eq 1 ] && grep -q '^Repaired 1 problem(s); checking again$' <<<"$out" &&
		grep -q '^WARNING: device 4 is missing: repairing from the copies' <<<"$out" &&
		[ "$(sed -n '/^Repaired/,$p' <<<"$out" | grep -c '^ERROR')" = 1 ] &&
		sed -n '/^Repaired/,$p' <<<"$out" | grep -q '^ERROR: device 4 is missing$'
}
