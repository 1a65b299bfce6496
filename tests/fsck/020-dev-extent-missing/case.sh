# the device extent of a data chunk's stripe on device 2 deleted
EXPECT='chunk [0-9]+ stripe [0-9]+: no device extent at devid 2 physical [0-9]+'
REPAIR=no
damage() {
	corrupt del dev 2 DEV_EXTENT "$(dev_extent_of 2 Data)"
}
