# a csum item of the wrong size
EXPECT='csum item for data extent [0-9]+ has 8 bytes, expected 12'
REPAIR=no
damage() {
	corrupt del csum EXTENT_CSUM EXTENT_CSUM "$DATA_BYTENR"
	corrupt insert csum EXTENT_CSUM EXTENT_CSUM "$DATA_BYTENR" 0000000011111111
}
