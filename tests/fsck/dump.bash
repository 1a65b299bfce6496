# Readers of `mfs inspect-internal dump-tree` output, for the checker's
# tests (tests/cli/check-fs.bats) and the fsck corpus (tests/fsck/).
# They run the mfs found in PATH.

# disk_bytenr_of IMG INO [FILE-OFFSET]: where the file extent item at that
# offset (default 0) points.
disk_bytenr_of() {
	mfs inspect-internal dump-tree -t fs "$1" | awk -v k="($2 EXTENT_DATA ${3:-0})" '
		/^\titem / { hit = index($0, "key " k " ") > 0 }
		hit && $1 == "extent" && $3 == "disk" { print $5; exit }'
}

# dir_index_of IMG DIR NAME: the DIR_INDEX number of DIR's entry NAME.
dir_index_of() {
	mfs inspect-internal dump-tree -t fs "$1" | awk -v d="$2" -v n="$3" '
		/^\titem / {
			idx = ""
			if (index($0, "key (" d " DIR_INDEX ")) {
				s = $0; sub(/.*DIR_INDEX /, "", s); sub(/\).*/, "", s); idx = s
			}
		}
		idx != "" && $1 == "name:" && $2 == n { print idx; exit }'
}

# inode_field IMG INO FIELD: size, nbytes or links of an inode item.
inode_field() {
	mfs inspect-internal dump-tree -t fs "$1" | awk -v k="($2 INODE_ITEM 0)" -v f="$3" '
		/^\titem / { hit = index($0, "key " k " ") > 0 }
		hit { for (i = 1; i < NF; i++) if ($i == f) { print $(i + 1); exit } }'
}
