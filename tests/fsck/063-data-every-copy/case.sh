# both copies of one data extent damaged
EXPECT='data extent [0-9]+ sector [0-9]+ \(logical [0-9]+\): copy 1 .*'
REPAIR=no
DATA_CSUM=1
damage() {
	corrupt_copies --what data --max 1 "$W/img1" 1,2
}
