# a device extent that no chunk uses
EXPECT='device extent devid 1 physical 250000000 belongs to no chunk'
REPAIR=no
damage() {
	# chunk_offset 999999 (no chunk starts there), length 1 MiB
	corrupt insert dev 1 DEV_EXTENT 250000000 3f420f00000000000000100000000000
}
