# the second copy of every data extent damaged (scrub repairs it; check reports it)
EXPECT='data extent [0-9]+ sector [0-9]+ \(logical [0-9]+\): copy 2 \(on devid [0-9]+\): checksum mismatch'
REPAIR=no
DATA_CSUM=1
damage() {
	corrupt_copies --what data --copy 2 "$W/img1" 1,2
}
