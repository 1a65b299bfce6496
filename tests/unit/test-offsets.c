/*
 * Pins every on-disk structure of kernel-shared/format/format.h to the byte-offset
 * tables of Documentation/on-disk-format.md: sizes, field offsets and field
 * sizes as literal numbers, plus the key types, tree ids, flag bits, magic
 * and superblock mirror offsets. A change here is a format change.
 */
#include <stddef.h>
#include <sys/stat.h>

#include "kernel-shared/format/format.h"
#include "kernel-shared/block/csum.h"
#include "kernel-shared/fs/inode-internal.h"
#include "unit.h"

#define FIELD_SIZE(type, field) sizeof(((type *)0)->field)

/* offset and size of one field, as the document's table gives them */
#define PIN(type, field, off, size) do { \
	CHECK_EQ(offsetof(type, field), off); \
	CHECK_EQ(FIELD_SIZE(type, field), size); \
} while (0)

static void test_disk_key(void)
{
	CHECK_EQ(sizeof(struct mfs_disk_key), 17);
	PIN(struct mfs_disk_key, objectid, 0, 8);
	PIN(struct mfs_disk_key, type, 8, 1);
	PIN(struct mfs_disk_key, offset, 9, 8);
}

static void test_dev_item(void)
{
	CHECK_EQ(sizeof(struct mfs_dev_item), 80);
	PIN(struct mfs_dev_item, devid, 0, 8);
	PIN(struct mfs_dev_item, total_bytes, 8, 8);
	PIN(struct mfs_dev_item, bytes_used, 16, 8);
	PIN(struct mfs_dev_item, generation, 24, 8);
	PIN(struct mfs_dev_item, flags, 32, 8);
	PIN(struct mfs_dev_item, sector_size, 40, 4);
	PIN(struct mfs_dev_item, reserved0, 44, 4);
	PIN(struct mfs_dev_item, uuid, 48, 16);
	PIN(struct mfs_dev_item, fsid, 64, 16);
}

static void test_super_block(void)
{
	CHECK_EQ(sizeof(struct mfs_super_block), 4096);
	PIN(struct mfs_super_block, csum, 0, 32);
	PIN(struct mfs_super_block, fsid, 32, 16);
	PIN(struct mfs_super_block, bytenr, 48, 8);
	PIN(struct mfs_super_block, flags, 56, 8);
	PIN(struct mfs_super_block, magic, 64, 8);
	PIN(struct mfs_super_block, generation, 72, 8);
	PIN(struct mfs_super_block, root, 80, 8);
	PIN(struct mfs_super_block, chunk_root, 88, 8);
	PIN(struct mfs_super_block, chunk_root_generation, 96, 8);
	PIN(struct mfs_super_block, total_bytes, 104, 8);
	PIN(struct mfs_super_block, bytes_used, 112, 8);
	PIN(struct mfs_super_block, num_devices, 120, 8);
	PIN(struct mfs_super_block, incompat_flags, 128, 8);
	PIN(struct mfs_super_block, compat_ro_flags, 136, 8);
	PIN(struct mfs_super_block, sectorsize, 144, 4);
	PIN(struct mfs_super_block, nodesize, 148, 4);
	PIN(struct mfs_super_block, stripesize, 152, 4);
	PIN(struct mfs_super_block, sys_chunk_array_size, 156, 4);
	PIN(struct mfs_super_block, csum_type, 160, 2);
	PIN(struct mfs_super_block, root_level, 162, 1);
	PIN(struct mfs_super_block, chunk_root_level, 163, 1);
	PIN(struct mfs_super_block, format_version, 164, 4);
	PIN(struct mfs_super_block, dev_item, 168, 80);
	PIN(struct mfs_super_block, label, 248, 256);
	PIN(struct mfs_super_block, sys_chunk_array, 504, 2048);
	PIN(struct mfs_super_block, root_generation, 2552, 8);
	PIN(struct mfs_super_block, metadata_uuid, 2560, 16);
	PIN(struct mfs_super_block, pending_fsid, 2576, 16);
	PIN(struct mfs_super_block, reserved, 2592, 1504);
	/* the dev item inside the superblock, at absolute offsets */
	CHECK_EQ(offsetof(struct mfs_super_block, dev_item.devid), 168);
	CHECK_EQ(offsetof(struct mfs_super_block, dev_item.uuid), 216);
	CHECK_EQ(offsetof(struct mfs_super_block, dev_item.fsid), 232);
}

static void test_header(void)
{
	CHECK_EQ(sizeof(struct mfs_header), 85);
	PIN(struct mfs_header, csum, 0, 32);
	PIN(struct mfs_header, fsid, 32, 16);
	PIN(struct mfs_header, bytenr, 48, 8);
	PIN(struct mfs_header, flags, 56, 8);
	PIN(struct mfs_header, generation, 64, 8);
	PIN(struct mfs_header, owner, 72, 8);
	PIN(struct mfs_header, nritems, 80, 4);
	PIN(struct mfs_header, level, 84, 1);
}

static void test_item(void)
{
	CHECK_EQ(sizeof(struct mfs_item), 25);
	PIN(struct mfs_item, key, 0, 17);
	PIN(struct mfs_item, offset, 17, 4);
	PIN(struct mfs_item, size, 21, 4);
}

static void test_key_ptr(void)
{
	CHECK_EQ(sizeof(struct mfs_key_ptr), 33);
	PIN(struct mfs_key_ptr, key, 0, 17);
	PIN(struct mfs_key_ptr, blockptr, 17, 8);
	PIN(struct mfs_key_ptr, generation, 25, 8);
}

static void test_stripe(void)
{
	CHECK_EQ(sizeof(struct mfs_stripe), 32);
	PIN(struct mfs_stripe, devid, 0, 8);
	PIN(struct mfs_stripe, offset, 8, 8);
	PIN(struct mfs_stripe, dev_uuid, 16, 16);
}

static void test_chunk(void)
{
	CHECK_EQ(sizeof(struct mfs_chunk), 48);
	PIN(struct mfs_chunk, length, 0, 8);
	PIN(struct mfs_chunk, owner, 8, 8);
	PIN(struct mfs_chunk, stripe_len, 16, 8);
	PIN(struct mfs_chunk, type, 24, 8);
	PIN(struct mfs_chunk, io_align, 32, 4);
	PIN(struct mfs_chunk, io_width, 36, 4);
	PIN(struct mfs_chunk, sector_size, 40, 4);
	PIN(struct mfs_chunk, num_stripes, 44, 2);
	PIN(struct mfs_chunk, sub_stripes, 46, 2);
	/* the stripe array follows the fixed part directly */
	CHECK_EQ(offsetof(struct mfs_chunk, stripe), 48);
	CHECK_EQ(mfs_chunk_item_size(1), 80);
	CHECK_EQ(mfs_chunk_item_size(2), 112);
	CHECK_EQ(mfs_chunk_item_size(8), 304);
}

static void test_dev_extent(void)
{
	CHECK_EQ(sizeof(struct mfs_dev_extent), 16);
	PIN(struct mfs_dev_extent, chunk_offset, 0, 8);
	PIN(struct mfs_dev_extent, length, 8, 8);
}

static void test_block_group_item(void)
{
	CHECK_EQ(sizeof(struct mfs_block_group_item), 24);
	PIN(struct mfs_block_group_item, used, 0, 8);
	PIN(struct mfs_block_group_item, chunk_objectid, 8, 8);
	PIN(struct mfs_block_group_item, flags, 16, 8);
}

static void test_extent_item(void)
{
	CHECK_EQ(sizeof(struct mfs_extent_item), 48);
	PIN(struct mfs_extent_item, refs, 0, 8);
	PIN(struct mfs_extent_item, generation, 8, 8);
	PIN(struct mfs_extent_item, flags, 16, 8);
	PIN(struct mfs_extent_item, owner_root, 24, 8);
	PIN(struct mfs_extent_item, owner_objectid, 32, 8);
	PIN(struct mfs_extent_item, owner_offset, 40, 8);
	CHECK_EQ(MFS_EXTENT_FLAG_DATA, 0x1);
	CHECK_EQ(MFS_EXTENT_FLAG_TREE_BLOCK, 0x2);
}

static void test_root_item(void)
{
	CHECK_EQ(sizeof(struct mfs_root_item), 64);
	PIN(struct mfs_root_item, bytenr, 0, 8);
	PIN(struct mfs_root_item, generation, 8, 8);
	PIN(struct mfs_root_item, root_dirid, 16, 8);
	PIN(struct mfs_root_item, bytes_used, 24, 8);
	PIN(struct mfs_root_item, flags, 32, 8);
	PIN(struct mfs_root_item, level, 40, 1);
	PIN(struct mfs_root_item, reserved, 41, 23);
}

static void test_dev_stats_item(void)
{
	CHECK_EQ(sizeof(struct mfs_dev_stats_item), 40);
	PIN(struct mfs_dev_stats_item, values, 0, 40);
	CHECK_EQ(offsetof(struct mfs_dev_stats_item, values[1]), 8);
	CHECK_EQ(offsetof(struct mfs_dev_stats_item, values[4]), 32);
	CHECK_EQ(MFS_DEV_STAT_WRITE_ERRS, 0);
	CHECK_EQ(MFS_DEV_STAT_READ_ERRS, 1);
	CHECK_EQ(MFS_DEV_STAT_FLUSH_ERRS, 2);
	CHECK_EQ(MFS_DEV_STAT_CORRUPTION_ERRS, 3);
	CHECK_EQ(MFS_DEV_STAT_GENERATION_ERRS, 4);
	CHECK_EQ(MFS_DEV_STAT_VALUES_MAX, 5);
}

/* ---- root tree: BALANCE_ITEM (section 7.1) ---- */

static void test_disk_balance_args(void)
{
	CHECK_EQ(sizeof(struct mfs_disk_balance_args), 136);
	PIN(struct mfs_disk_balance_args, flags, 0, 8);
	PIN(struct mfs_disk_balance_args, profiles, 8, 8);
	PIN(struct mfs_disk_balance_args, usage_min, 16, 8);
	PIN(struct mfs_disk_balance_args, usage_max, 24, 8);
	PIN(struct mfs_disk_balance_args, devid, 32, 8);
	PIN(struct mfs_disk_balance_args, pstart, 40, 8);
	PIN(struct mfs_disk_balance_args, pend, 48, 8);
	PIN(struct mfs_disk_balance_args, vstart, 56, 8);
	PIN(struct mfs_disk_balance_args, vend, 64, 8);
	PIN(struct mfs_disk_balance_args, target, 72, 8);
	PIN(struct mfs_disk_balance_args, limit_min, 80, 8);
	PIN(struct mfs_disk_balance_args, limit_max, 88, 8);
	PIN(struct mfs_disk_balance_args, stripes_min, 96, 4);
	PIN(struct mfs_disk_balance_args, stripes_max, 100, 4);
	PIN(struct mfs_disk_balance_args, reserved, 104, 32);
	CHECK_EQ(MFS_BALANCE_ARGS_PROFILES, 0x1);
	CHECK_EQ(MFS_BALANCE_ARGS_USAGE, 0x2);
	CHECK_EQ(MFS_BALANCE_ARGS_DEVID, 0x4);
	CHECK_EQ(MFS_BALANCE_ARGS_DRANGE, 0x8);
	CHECK_EQ(MFS_BALANCE_ARGS_VRANGE, 0x10);
	CHECK_EQ(MFS_BALANCE_ARGS_CONVERT, 0x20);
	CHECK_EQ(MFS_BALANCE_ARGS_SOFT, 0x40);
	CHECK_EQ(MFS_BALANCE_ARGS_LIMIT, 0x80);
	CHECK_EQ(MFS_BALANCE_ARGS_STRIPES, 0x100);
	CHECK_EQ(MFS_BALANCE_ARGS_REDUCED, 0x200);
	CHECK(MFS_AVAIL_ALLOC_BIT_SINGLE == 0x1000000000000ULL);
}

static void test_balance_item(void)
{
	CHECK_EQ(sizeof(struct mfs_balance_item), 664);
	PIN(struct mfs_balance_item, op, 0, 8);
	PIN(struct mfs_balance_item, flags, 8, 8);
	PIN(struct mfs_balance_item, data, 16, 136);
	PIN(struct mfs_balance_item, meta, 152, 136);
	PIN(struct mfs_balance_item, sys, 288, 136);
	PIN(struct mfs_balance_item, cursor, 424, 8);
	PIN(struct mfs_balance_item, completed, 432, 8);
	PIN(struct mfs_balance_item, considered, 440, 8);
	PIN(struct mfs_balance_item, bytes_done, 448, 8);
	PIN(struct mfs_balance_item, nr_devids, 456, 8);
	PIN(struct mfs_balance_item, devids, 464, 128);
	PIN(struct mfs_balance_item, new_size, 592, 8);
	PIN(struct mfs_balance_item, old_size, 600, 8);
	PIN(struct mfs_balance_item, start_time, 608, 8);
	PIN(struct mfs_balance_item, cancel_progress, 616, 8);
	PIN(struct mfs_balance_item, reserved, 624, 40);
	CHECK_EQ(offsetof(struct mfs_balance_item, sys.stripes_max), 388);
	CHECK_EQ(MFS_RESTRIPE_MAX_DEVIDS, 16);
	CHECK_EQ(MFS_RESTRIPE_OP_BALANCE, 1);
	CHECK_EQ(MFS_RESTRIPE_OP_DELETE, 2);
	CHECK_EQ(MFS_RESTRIPE_OP_RESIZE, 3);
	CHECK_EQ(MFS_RESTRIPE_OP_REPLACE, 4);
	CHECK_EQ(MFS_BALANCE_DATA, 0x1);
	CHECK_EQ(MFS_BALANCE_SYSTEM, 0x2);
	CHECK_EQ(MFS_BALANCE_METADATA, 0x4);
	CHECK_EQ(MFS_BALANCE_FORCE, 0x8);
	CHECK_EQ(MFS_BALANCE_PAUSED, 0x10);
	CHECK_EQ(MFS_BALANCE_REPLACE_READ_OTHERS, 0x20);
	CHECK_EQ(MFS_BALANCE_REPLACE_CANCELLING, 0x40);
	CHECK_EQ(MFS_BALANCE_REPLACE_SPARE, 0x80);
}

/* ---- root tree: the replace item (section 7.1) ---- */
static void test_replace_item(void)
{
	CHECK_EQ(sizeof(struct mfs_replace_item), 96);
	PIN(struct mfs_replace_item, outcome, 0, 8);
	PIN(struct mfs_replace_item, start_time, 8, 8);
	PIN(struct mfs_replace_item, end_time, 16, 8);
	PIN(struct mfs_replace_item, progress, 24, 8);
	PIN(struct mfs_replace_item, src_devid, 32, 8);
	PIN(struct mfs_replace_item, tgt_devid, 40, 8);
	PIN(struct mfs_replace_item, write_errs, 48, 8);
	PIN(struct mfs_replace_item, read_errs, 56, 8);
	PIN(struct mfs_replace_item, reserved, 64, 32);
	CHECK_EQ(MFS_REPLACE_ITEM_FINISHED, 1);
	CHECK_EQ(MFS_REPLACE_ITEM_CANCELED, 2);
	CHECK_EQ(MFS_PERSISTENT_ITEM_KEY, 249);
	CHECK_EQ(MFS_BALANCE_OBJECTID, (u64)-4);
}

static void test_balance_chunk_item(void)
{
	CHECK_EQ(sizeof(struct mfs_balance_chunk_item), 64);
	PIN(struct mfs_balance_chunk_item, copied, 0, 8);
	PIN(struct mfs_balance_chunk_item, bytes_done, 8, 8);
	PIN(struct mfs_balance_chunk_item, generation, 16, 8);
	PIN(struct mfs_balance_chunk_item, nr_pieces, 24, 4);
	PIN(struct mfs_balance_chunk_item, reserved0, 28, 4);
	PIN(struct mfs_balance_chunk_item, reserved, 32, 32);
	CHECK_EQ(MFS_BALANCE_CHUNK_MAX_PIECES, 64);
}

static void test_scrub_item(void)
{
	CHECK_EQ(sizeof(struct mfs_scrub_item), 192);
	PIN(struct mfs_scrub_item, state, 0, 8);
	PIN(struct mfs_scrub_item, flags, 8, 8);
	PIN(struct mfs_scrub_item, cursor, 16, 8);
	PIN(struct mfs_scrub_item, start_time, 24, 8);
	PIN(struct mfs_scrub_item, elapsed_ns, 32, 8);
	PIN(struct mfs_scrub_item, bytes_total, 40, 8);
	PIN(struct mfs_scrub_item, limit, 48, 8);
	PIN(struct mfs_scrub_item, bytes_done, 56, 8);
	PIN(struct mfs_scrub_item, read_errors, 64, 8);
	PIN(struct mfs_scrub_item, csum_errors, 72, 8);
	PIN(struct mfs_scrub_item, verify_errors, 80, 8);
	PIN(struct mfs_scrub_item, parity_errors, 88, 8);
	PIN(struct mfs_scrub_item, corrected_errors, 96, 8);
	PIN(struct mfs_scrub_item, uncorrectable_errors, 104, 8);
	PIN(struct mfs_scrub_item, unverified_errors, 112, 8);
	PIN(struct mfs_scrub_item, super_errors, 120, 8);
	PIN(struct mfs_scrub_item, reserved, 128, 64);
	CHECK_EQ(MFS_PERSISTENT_ITEM_KEY, 249);
	CHECK_EQ(MFS_SCRUB_STATE_RUNNING, 1);
	CHECK_EQ(MFS_SCRUB_STATE_PAUSED, 2);
	CHECK_EQ(MFS_SCRUB_STATE_FINISHED, 3);
	CHECK_EQ(MFS_SCRUB_STATE_CANCELED, 4);
	CHECK_EQ(MFS_SCRUB_STATE_ABORTED, 5);
	CHECK_EQ(sizeof(struct mfs_scrub_file), 16);
	PIN(struct mfs_scrub_file, ino, 0, 8);
	PIN(struct mfs_scrub_file, flags, 8, 8);
	CHECK_EQ(MFS_SCRUB_FILE_UNCORRECTABLE, 1);
	CHECK_EQ(MFS_SCRUB_FILES_MAX, 64);
	CHECK_EQ(MFS_SCRUB_ITEM_READONLY, 0x1);
	CHECK_EQ(MFS_SCRUB_ITEM_INTERRUPTED, 0x2);
}

/* ---- fs tree (section 7.5) ---- */

static void test_timespec(void)
{
	CHECK_EQ(sizeof(struct mfs_timespec), 12);
	PIN(struct mfs_timespec, sec, 0, 8);
	PIN(struct mfs_timespec, nsec, 8, 4);
}

static void test_inode_item(void)
{
	CHECK_EQ(sizeof(struct mfs_inode_item), 160);
	PIN(struct mfs_inode_item, generation, 0, 8);
	PIN(struct mfs_inode_item, transid, 8, 8);
	PIN(struct mfs_inode_item, size, 16, 8);
	PIN(struct mfs_inode_item, nbytes, 24, 8);
	PIN(struct mfs_inode_item, nlink, 32, 4);
	PIN(struct mfs_inode_item, uid, 36, 4);
	PIN(struct mfs_inode_item, gid, 40, 4);
	PIN(struct mfs_inode_item, mode, 44, 4);
	PIN(struct mfs_inode_item, rdev, 48, 8);
	PIN(struct mfs_inode_item, flags, 56, 8);
	PIN(struct mfs_inode_item, dir_index_next, 64, 8);
	PIN(struct mfs_inode_item, atime, 72, 12);
	PIN(struct mfs_inode_item, ctime, 84, 12);
	PIN(struct mfs_inode_item, mtime, 96, 12);
	PIN(struct mfs_inode_item, otime, 108, 12);
	PIN(struct mfs_inode_item, reserved, 120, 40);
	CHECK_EQ(offsetof(struct mfs_inode_item, mtime.nsec), 104);
	/* mode holds the Linux st_mode type values of the document's table */
	CHECK_EQ(S_IFMT, 0170000);
	CHECK_EQ(S_IFREG, 0100000);
	CHECK_EQ(S_IFDIR, 0040000);
	CHECK_EQ(S_IFLNK, 0120000);
	CHECK_EQ(S_IFCHR, 0020000);
	CHECK_EQ(S_IFBLK, 0060000);
	CHECK_EQ(S_IFIFO, 0010000);
	CHECK_EQ(S_IFSOCK, 0140000);
}

static void test_dir_item(void)
{
	CHECK_EQ(sizeof(struct mfs_dir_item), 27);
	PIN(struct mfs_dir_item, child, 0, 8);
	PIN(struct mfs_dir_item, index, 8, 8);
	PIN(struct mfs_dir_item, transid, 16, 8);
	PIN(struct mfs_dir_item, name_len, 24, 2);
	PIN(struct mfs_dir_item, type, 26, 1);
	CHECK_EQ(MFS_FT_UNKNOWN, 0);
	CHECK_EQ(MFS_FT_REG_FILE, 1);
	CHECK_EQ(MFS_FT_DIR, 2);
	CHECK_EQ(MFS_FT_CHRDEV, 3);
	CHECK_EQ(MFS_FT_BLKDEV, 4);
	CHECK_EQ(MFS_FT_FIFO, 5);
	CHECK_EQ(MFS_FT_SOCK, 6);
	CHECK_EQ(MFS_FT_SYMLINK, 7);
	CHECK_EQ(MFS_NAME_LEN, 255);
}

static void test_xattr_item(void)
{
	CHECK_EQ(sizeof(struct mfs_xattr_item), 4);
	PIN(struct mfs_xattr_item, name_len, 0, 2);
	PIN(struct mfs_xattr_item, value_len, 2, 2);
}

static void test_file_extent_item(void)
{
	CHECK_EQ(sizeof(struct mfs_file_extent_item), 50);
	PIN(struct mfs_file_extent_item, generation, 0, 8);
	PIN(struct mfs_file_extent_item, type, 8, 1);
	PIN(struct mfs_file_extent_item, compression, 9, 1);
	PIN(struct mfs_file_extent_item, disk_bytenr, 10, 8);
	PIN(struct mfs_file_extent_item, disk_num_bytes, 18, 8);
	PIN(struct mfs_file_extent_item, offset, 26, 8);
	PIN(struct mfs_file_extent_item, num_bytes, 34, 8);
	PIN(struct mfs_file_extent_item, ram_bytes, 42, 8);
	/* inline data follows generation, type and compression */
	CHECK_EQ(MFS_FILE_EXTENT_INLINE_DATA_START, 10);
	CHECK_EQ(offsetof(struct mfs_file_extent_item, disk_bytenr),
		 MFS_FILE_EXTENT_INLINE_DATA_START);
	CHECK_EQ(MFS_FILE_EXTENT_INLINE, 0);
	CHECK_EQ(MFS_FILE_EXTENT_REG, 1);
	CHECK_EQ(MFS_FILE_EXTENT_PREALLOC, 2);
	CHECK_EQ(MFS_COMPRESS_NONE, 0);
	CHECK_EQ(MFS_COMPRESS_ZLIB, 1);
}

/* DIR_ITEM and XATTR_ITEM key offsets: the known answers of 7.5.3. */
static void test_name_hash(void)
{
	static const struct {
		const char *name;
		u64 hash;
	} known[] = {
		{ "a", 0x9e396c9d },
		{ "hello", 0x18ed5d2a },
		{ "user.foo", 0x616ec9b6 },
		{ "lost+found", 0x4125a43b },
		{ "123456789", 0x5322d397 },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(known); i++)
		CHECK(mfs_name_hash(known[i].name, strlen(known[i].name)) == known[i].hash);
	/* the standard CRC-32C from initial value 1 instead of 0xFFFFFFFF */
	CHECK(mfs_name_hash("123456789", 9) == mfs_crc32c(~1U, "123456789", 9));
}

/* The on-disk integer types are little-endian whatever the host. */
static void test_endianness(void)
{
	struct mfs_disk_key k;
	const u8 *b = (const u8 *)&k;
	struct mfs_key in = { 0x0102030405060708ULL, 0x09, 0x1112131415161718ULL };

	mfs_cpu_key_to_disk(&k, &in);
	CHECK_EQ(b[0], 0x08);
	CHECK_EQ(b[7], 0x01);
	CHECK_EQ(b[8], 0x09);
	CHECK_EQ(b[9], 0x18);
	CHECK_EQ(b[16], 0x11);
}

static void test_magic(void)
{
	static const u8 expect[8] = { '_', 'M', 'F', 'S', '_', 'v', '1', '!' };
	mfs_le64 m = cpu_to_le64(MFS_MAGIC);

	CHECK(MFS_MAGIC == 0x2131765f53464d5fULL);
	CHECK(memcmp(&m, expect, 8) == 0);
	CHECK_EQ(MFS_FORMAT_VERSION, 1);
}

static void test_constants(void)
{
	CHECK_EQ(MFS_SUPER_INFO_OFFSET, 65536);
	CHECK_EQ(MFS_SUPER_INFO_SIZE, 4096);
	CHECK_EQ(MFS_SUPER_MIRROR_MAX, 3);
	CHECK_EQ(MFS_DEVICE_RESERVED, 1048576);
	CHECK_EQ(MFS_CSUM_FIELD_SIZE, 32);
	CHECK_EQ(MFS_FSID_SIZE, 16);
	CHECK_EQ(MFS_UUID_SIZE, 16);
	CHECK_EQ(MFS_LABEL_SIZE, 256);
	CHECK_EQ(MFS_SYSTEM_CHUNK_ARRAY_SIZE, 2048);
	CHECK_EQ(MFS_STRIPE_LEN, 65536);
	CHECK_EQ(MFS_MAX_LEVEL, 8);
}

static void test_mirror_offsets(void)
{
	CHECK(mfs_sb_offset(0) == 65536ULL);
	CHECK(mfs_sb_offset(1) == 67108864ULL);
	CHECK(mfs_sb_offset(2) == 274877906944ULL);
}

static void test_key_types(void)
{
	CHECK_EQ(MFS_INODE_ITEM_KEY, 1);
	CHECK_EQ(MFS_INODE_REF_KEY, 12);
	CHECK_EQ(MFS_XATTR_ITEM_KEY, 24);
	CHECK_EQ(MFS_ORPHAN_ITEM_KEY, 48);
	CHECK_EQ(MFS_DIR_ITEM_KEY, 84);
	CHECK_EQ(MFS_DIR_INDEX_KEY, 96);
	CHECK_EQ(MFS_EXTENT_DATA_KEY, 108);
	CHECK_EQ(MFS_EXTENT_CSUM_KEY, 128);
	CHECK_EQ(MFS_ROOT_ITEM_KEY, 132);
	CHECK_EQ(MFS_EXTENT_ITEM_KEY, 168);
	CHECK_EQ(MFS_BLOCK_GROUP_ITEM_KEY, 192);
	CHECK_EQ(MFS_DEV_EXTENT_KEY, 204);
	CHECK_EQ(MFS_DEV_ITEM_KEY, 216);
	CHECK_EQ(MFS_CHUNK_ITEM_KEY, 228);
	CHECK_EQ(MFS_BALANCE_CHUNK_KEY, 247);
	CHECK_EQ(MFS_BALANCE_ITEM_KEY, 248);
	CHECK_EQ(MFS_PERSISTENT_ITEM_KEY, 249);
	CHECK_EQ(MFS_DEV_REPLACE_KEY, 250);
}

static void test_objectids(void)
{
	CHECK_EQ(MFS_ROOT_TREE_OBJECTID, 1);
	CHECK_EQ(MFS_EXTENT_TREE_OBJECTID, 2);
	CHECK_EQ(MFS_CHUNK_TREE_OBJECTID, 3);
	CHECK_EQ(MFS_DEV_TREE_OBJECTID, 4);
	CHECK_EQ(MFS_FS_TREE_OBJECTID, 5);
	CHECK_EQ(MFS_CSUM_TREE_OBJECTID, 7);
	CHECK_EQ(MFS_DEV_ITEMS_OBJECTID, 1);
	CHECK_EQ(MFS_FIRST_CHUNK_TREE_OBJECTID, 256);
	CHECK_EQ(MFS_FIRST_FREE_OBJECTID, 256);
	CHECK_EQ(MFS_ROOT_DIR_OBJECTID, 256);
	CHECK_EQ(MFS_DEV_STATS_OBJECTID, 0);
	CHECK(MFS_BALANCE_OBJECTID == 0xfffffffffffffffcULL);
	CHECK(MFS_ORPHAN_OBJECTID == 0xfffffffffffffffbULL);
	CHECK(MFS_SCRUB_OBJECTID == 0xfffffffffffffffaULL);
	CHECK(MFS_EXTENT_CSUM_OBJECTID == 0xfffffffffffffff6ULL);
}

static void test_block_group_flags(void)
{
	CHECK_EQ(MFS_BLOCK_GROUP_DATA, 0x1);
	CHECK_EQ(MFS_BLOCK_GROUP_SYSTEM, 0x2);
	CHECK_EQ(MFS_BLOCK_GROUP_METADATA, 0x4);
	CHECK_EQ(MFS_BLOCK_GROUP_RAID0, 0x8);
	CHECK_EQ(MFS_BLOCK_GROUP_RAID1, 0x10);
	CHECK_EQ(MFS_BLOCK_GROUP_DUP, 0x20);
	CHECK_EQ(MFS_BLOCK_GROUP_RAID10, 0x40);
	CHECK_EQ(MFS_BLOCK_GROUP_RAID5, 0x80);
	CHECK_EQ(MFS_BLOCK_GROUP_RAID6, 0x100);
	CHECK_EQ(MFS_BLOCK_GROUP_REDUCED, 0x800);
	CHECK_EQ(MFS_BLOCK_GROUP_REDUCED & (MFS_BLOCK_GROUP_TYPE_MASK |
					    MFS_BLOCK_GROUP_PROFILE_MASK), 0);
	CHECK_EQ(MFS_BLOCK_GROUP_ASKED_SHIFT, 32);
	CHECK_EQ(MFS_BLOCK_GROUP_ASKED_MASK, 0x7f800000000ULL);
	CHECK_EQ(MFS_BLOCK_GROUP_ASKED_MASK & (MFS_BLOCK_GROUP_TYPE_MASK |
					       MFS_BLOCK_GROUP_PROFILE_MASK |
					       MFS_BLOCK_GROUP_REDUCED), 0);
	CHECK_EQ(MFS_BLOCK_GROUP_RAID1C3, 0x200);
	CHECK_EQ(MFS_BLOCK_GROUP_RAID1C4, 0x400);
	CHECK_EQ(MFS_BLOCK_GROUP_TYPE_MASK, 0x7);
	CHECK_EQ(MFS_BLOCK_GROUP_PROFILE_MASK, 0x7f8);
}

static void test_super_and_feature_flags(void)
{
	CHECK(MFS_SUPER_FLAG_SEEDING == 0x100000000ULL);
	CHECK(MFS_SUPER_FLAG_CHANGING == 0x200000000ULL);
	CHECK(MFS_SUPER_FLAG_CHANGING_FSID == 0x400000000ULL);
	CHECK_EQ(MFS_FEATURE_INCOMPAT_RAID56, 0x1);
	CHECK_EQ(MFS_FEATURE_INCOMPAT_RAID1C34, 0x2);
	CHECK_EQ(MFS_FEATURE_INCOMPAT_COMPRESS_ZLIB, 0x4);
	CHECK_EQ(MFS_FEATURE_INCOMPAT_METADATA_UUID, 0x8);
	CHECK_EQ(MFS_FEATURE_INCOMPAT_SUPP, 0xf);
	CHECK_EQ(MFS_DEV_STATE_REPLACE_TARGET, 0x1);
	CHECK_EQ(MFS_DEV_STATE_DELETING, 0x2);
	CHECK_EQ(MFS_DEV_STATE_NOALLOC, 0x4);
	CHECK_EQ(MFS_DEV_STATE_REPLACE_SOURCE, 0x8);
	CHECK_EQ(MFS_DEV_STATE_SPARE, 0x10);
}

/* superblock csum_type values and the width of every csum field */
static void test_csum_types(void)
{
	CHECK_EQ(MFS_CSUM_CRC32C, 0);
	CHECK_EQ(MFS_CSUM_XXHASH, 1);
	CHECK_EQ(MFS_CSUM_SHA256, 2);
	CHECK_EQ(MFS_CSUM_BLAKE2, 3);
	CHECK_EQ(MFS_CSUM_SIZE, 32);
	CHECK_EQ(mfs_csum_size(MFS_CSUM_CRC32C), 4);
	CHECK_EQ(mfs_csum_size(MFS_CSUM_XXHASH), 8);
	CHECK_EQ(mfs_csum_size(MFS_CSUM_SHA256), 32);
	CHECK_EQ(mfs_csum_size(MFS_CSUM_BLAKE2), 32);
}

int main(void)
{
	RUN(test_disk_key);
	RUN(test_dev_item);
	RUN(test_super_block);
	RUN(test_header);
	RUN(test_item);
	RUN(test_key_ptr);
	RUN(test_stripe);
	RUN(test_chunk);
	RUN(test_dev_extent);
	RUN(test_block_group_item);
	RUN(test_extent_item);
	RUN(test_root_item);
	RUN(test_dev_stats_item);
	RUN(test_disk_balance_args);
	RUN(test_balance_item);
	RUN(test_replace_item);
	RUN(test_balance_chunk_item);
	RUN(test_scrub_item);
	RUN(test_timespec);
	RUN(test_inode_item);
	RUN(test_dir_item);
	RUN(test_xattr_item);
	RUN(test_file_extent_item);
	RUN(test_name_hash);
	RUN(test_endianness);
	RUN(test_magic);
	RUN(test_constants);
	RUN(test_mirror_offsets);
	RUN(test_key_types);
	RUN(test_objectids);
	RUN(test_block_group_flags);
	RUN(test_super_and_feature_flags);
	RUN(test_csum_types);
	UNIT_EXIT();
}
