# directory D gets a DIR_INDEX entry naming file F with an empty name (a
# 27-byte item, header only): no entry at all. The image fuzzer found the
# checker copying such a name from a NULL buffer
# (tests/fuzz/regress/check-dir-entry-empty-name).
EXPECT='dir [0-9]+: DIR_INDEX 900 has size 27, not one entry'
REPAIR=no
damage() {
	local le
	# struct mfs_dir_item: child F, index 900, transid 1 (le64 each),
	# name_len 0 (le16), type 1 (a file); no name
	le=$(printf '%016x' "$F" | sed 's/../& /g' | awk '{ for (i = NF; i > 0; i--) printf "%s", $i }')
	corrupt insert fs "$D" DIR_INDEX 900 "${le}8403000000000000""0100000000000000""0000""01"
}
