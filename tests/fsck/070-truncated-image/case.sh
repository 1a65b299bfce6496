# a member image truncated to 100 MiB
EXPECT='device 2 \(.*\) is 104857600 bytes, less than the 268435456 the filesystem gives it'
REPAIR=no
damage() {
	truncate -s 100M "$W/img2"
}
