# every copy of every fs tree block damaged: check reports it, restore
# (tests/cli/restore.bats) fails cleanly; the image fuzzer found restore
# following the missing root (tests/fuzz/regress/restore-fs-root-unreadable)
EXPECT='fs tree root cannot be read: Structure needs cleaning'
REPAIR=no
damage() {
	corrupt_copies --what metadata --owner 5 "$W/img1" 1,2
}
