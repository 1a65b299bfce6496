# an inline file extent in a directory
EXPECT='inode [0-9]+ \(directory\) has an inline file extent at 0; only symlinks and regular files have them'
REPAIR=no
damage() {
	corrupt insert fs "$D" EXTENT_DATA 0 0100000000000000000078
}
