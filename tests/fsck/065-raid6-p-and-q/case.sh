# raid6 P and Q strips both damaged, the data good
PROFILE=raid6
EXPECT='data extent [0-9]+ sector [0-9]+ \(logical [0-9]+\): copy [2-9] .*'
REPAIR=no
DATA_CSUM=1
damage() {
	corrupt_copies --what data --copy p,q "$W/img1" 1,2,3,4
}
