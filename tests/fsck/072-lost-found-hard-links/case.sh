# both names of a file with two hard links gone (and the two directories'
# sizes left too big): one name in lost+found, link count 1, sizes fixed
EXPECT='inode [0-9]+ is not referenced and not an orphan'
REPAIR=yes
damage() {
	cut_entry "$A" f
	cut_entry "$D" g
	sed -i '\|  ./d/g$|d' "$W/sums"
	sums_moved ./a/f "./lost+found/$F"
}
