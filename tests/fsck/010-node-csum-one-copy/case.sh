# random bytes in the second copy of every fs tree block
EXPECT='fs tree block [0-9]+ level [0-9]+: copy 2 \(on devid [0-9]+\): checksum, header or item mismatch'
REPAIR=yes
damage() {
	corrupt_copies --what metadata --owner 5 --copy 2 "$W/img1" 1,2
}
