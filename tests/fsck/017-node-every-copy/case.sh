# every copy of every csum tree block damaged: nothing to repair from
EXPECT='csum tree root cannot be read: Structure needs cleaning'
REPAIR=no
damage() {
	corrupt_copies --what metadata --owner 7 "$W/img1" 1,2
}
