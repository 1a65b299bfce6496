# a member missing: check reports it, repair writes nothing
EXPECT='device 2 is missing'
REPAIR=no
damage() {
	rm -f "$W/img2"
	IMGS="$W/img1"
}
