/* zlib compression of data extents; incompressible data is stored raw. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/fs/inode-internal.h"

int mfs_compress(int level, const u8 *src, u64 len, u8 **out, u64 *out_len)
{
	uLongf dlen = compressBound(len);
	u8 *buf = malloc(dlen + 4096);
	u64 padded;

	if (!buf)
		return -ENOMEM;
	if (compress2(buf, &dlen, src, len, level) != Z_OK) {
		free(buf);
		return -EIO;
	}
	padded = round_up((u64)dlen, 4096);
	/* only worth it if at least one sector is saved */
	if (padded >= len) {
		free(buf);
		return -E2BIG;
	}
	memset(buf + dlen, 0, padded - dlen);
	*out = buf;
	*out_len = padded;
	return 0;
}

int mfs_decompress(const u8 *src, u64 src_len, u8 *dst, u64 dst_len)
{
	z_stream zs;
	int ret;

	memset(&zs, 0, sizeof(zs));
	if (inflateInit(&zs) != Z_OK)
		return -ENOMEM;
	zs.next_in = (u8 *)src;
	zs.avail_in = src_len;
	zs.next_out = dst;
	zs.avail_out = dst_len;
	ret = inflate(&zs, Z_FINISH);
	inflateEnd(&zs);
	if (ret != Z_STREAM_END || zs.total_out != dst_len)
		return -EUCLEAN;
	return 0;
}
