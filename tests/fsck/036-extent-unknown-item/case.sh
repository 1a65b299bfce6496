# an item of a type the extent tree does not hold
EXPECT='extent tree: unexpected item type 77 at \(1 77 0\)'
REPAIR=no
damage() {
	corrupt insert extent 1 77 0
}
