# device 2's item in the chunk tree claims 4 EiB: check reports it; the
# free space ends at the device's own end (the image fuzzer found statfs
# walking the claimed size 1 GiB at a time: tests/fuzz/regress/statfs-device-item-huge)
EXPECT='device 2 \(.*\) is 268435456 bytes, less than the 4611686018561605632 the filesystem gives it'
REPAIR=no
damage() {
	corrupt set chunk 1 DEV_ITEM 2 u64@8 4611686018561605632
}
