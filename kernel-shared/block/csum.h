/* Checksums of tree nodes and data sectors: the algorithm table and one
 * entry point that fills a fixed-size on-disk csum field. */
#ifndef MFS_CSUM_H
#define MFS_CSUM_H

#include "kernel-shared/format/kerncompat.h"

enum mfs_csum_type {
	MFS_CSUM_CRC32C = 0,
	MFS_CSUM_XXHASH = 1,
	MFS_CSUM_SHA256 = 2,
	MFS_CSUM_BLAKE2 = 3,
};

/* Every on-disk csum field is this wide; shorter sums are zero-padded. */
#define MFS_CSUM_SIZE 32

int mfs_csum_size(int type);
const char *mfs_csum_name(int type);
int mfs_csum_parse(const char *name);
/* 0 when this build can compute type; -EINVAL (no such type) or -ELIBACC. */
int mfs_csum_available(int type);
/*
 * 0, -EINVAL (no such type), -ELIBACC (sha256 and blake2b: libcrypto
 * cannot be loaded) or -ENOMEM; out is zeroed on failure.
 */
int mfs_csum_compute(int type, const void *data, size_t len,
		     u8 out[MFS_CSUM_SIZE]);

/*
 * CRC-32C chained the btrfs way: mfs_crc32c(0, buf, len) is the standard
 * CRC-32C of buf, and feeding a result back as seed continues the stream.
 */
u32 mfs_crc32c(u32 seed, const void *data, size_t len);

#endif
