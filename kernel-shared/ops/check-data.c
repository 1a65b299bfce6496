/*
 * The checker's optional phase (--check-data-csum): every copy of every
 * checksummed data sector read and verified against its checksum (raid5/6:
 * the data column and each rebuild from parity).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/ops/check.h"
#include "kernel-shared/block/csum.h"
#include "kernel-shared/fs/inode-internal.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/tree/alloc.h"

#define problem mfs_check_problem

/* ---------------- optional phase: data checksums ---------------- */

/*
 * The device copy `mirror` of logical (written in transaction gen) is read
 * from, as for tree blocks; *skip when that copy cannot be judged.
 */
static void describe_copy(struct mfs_fs_info *fs, struct mfs_check_ctl *ctl,
			  const struct mfs_chunk_map *map, u64 logical, u64 gen, int mirror,
			  char *buf, size_t size, bool *skip)
{
	bool parity = mfs_profile(map->type)->nparity;
	struct mfs_io_map io;
	int idx;

	*skip = false;
	if (mfs_map_block(map, logical, &io)) {
		snprintf(buf, size, "unmapped");
		return;
	}
	idx = parity ? io.stripe[0] : io.stripe[mirror - 1];
	/*
	 * A missing device is reported once, in phase 1; of a stale one,
	 * what it was written with before it fell behind is checked; a
	 * raid5/6 rebuild that reads a stale column proves nothing.
	 */
	if (parity && mirror > 1)
		*skip = mfs_chunk_has_stale(map);
	else
		*skip = !mfs_check_copy_judged(fs, ctl, map, map->stripes[idx].dev, gen);
	snprintf(buf, size, "%s %llu",
		 parity && mirror > 1 ? "rebuilt from parity, data on devid" : "on devid",
		 (unsigned long long)map->stripes[idx].devid);
}

/* Compare each sector of one copy of an extent with its checksum. */
static void verify_copy(struct mfs_fs_info *fs, struct mfs_check_ctl *ctl,
			struct mfs_chunk_map *map, u64 bytenr, u64 gen, u64 nsect,
			const u8 *csums, u8 *buf, int mirror)
{
	bool whole = mfs_read_logical(fs, bytenr, buf, nsect * MFS_SECTOR, mirror) == 0;
	bool rebuilt = mfs_profile(map->type)->nparity && mirror > 1;
	u64 s;

	for (s = 0; s < nsect; s++) {
		u64 logical = bytenr + s * MFS_SECTOR;
		u8 *sector = buf + s * MFS_SECTOR;
		u8 sum[MFS_CSUM_SIZE];
		char where[96];
		bool skip;
		int ret = 0;

		describe_copy(fs, ctl, map, logical, gen, mirror, where, sizeof(where), &skip);
		if (skip)
			continue;
		if (!whole)
			ret = mfs_read_logical(fs, logical, sector, MFS_SECTOR, mirror);
		/*
		 * a rebuild that needs a missing column says nothing of the
		 * others; the member is reported missing, once, in phase 1
		 */
		if (ret && rebuilt && mfs_chunk_degraded(map))
			continue;
		if (ret) {
			problem(ctl, "data extent %llu sector %llu (logical %llu): copy %d (%s) cannot be read: %s",
				(unsigned long long)bytenr, (unsigned long long)s,
				(unsigned long long)logical, mirror, where, strerror(-ret));
			continue;
		}
		mfs_csum_compute(fs->csum_type, sector, MFS_SECTOR, sum);
		if (memcmp(sum, csums + s * fs->csum_size, fs->csum_size))
			problem(ctl, "data extent %llu sector %llu (logical %llu): copy %d (%s): checksum mismatch",
				(unsigned long long)bytenr, (unsigned long long)s,
				(unsigned long long)logical, mirror, where);
	}
}

/* Every copy of one data extent (written in gen) that has a well-formed csum item. */
static int verify_extent(struct mfs_fs_info *fs, struct mfs_check_ctl *ctl, u64 bytenr, u64 len,
			 u64 gen)
{
	struct mfs_key key = { MFS_EXTENT_CSUM_OBJECTID, MFS_EXTENT_CSUM_KEY, bytenr };
	struct mfs_chunk_map *map = mfs_find_chunk(fs, bytenr);
	u64 nsect = len / MFS_SECTOR;
	struct mfs_path path;
	u8 *csums = NULL, *buf;
	int ret, m, copies;

	/* phase 5 reports extents outside data chunks and missing or bad csum items */
	if (!mfs_check_in_data_chunk(fs, bytenr, len) || len % MFS_SECTOR || !map)
		return 0;
	mfs_init_path(&path);
	ret = mfs_search_slot(NULL, fs->csum_root, &key, &path, 0, 0);
	if (ret == 0 && leaf_item_size(path.nodes[0], path.slots[0]) == nsect * fs->csum_size) {
		csums = malloc(nsect * fs->csum_size);
		if (csums)
			memcpy(csums, leaf_item_data(path.nodes[0], path.slots[0]),
			       nsect * fs->csum_size);
		else
			ret = -ENOMEM;
	}
	mfs_release_path(&path);
	if (ret == -ENOMEM || !csums)
		return ret == -ENOMEM ? ret : 0;
	buf = malloc(len);
	if (!buf) {
		free(csums);
		return -ENOMEM;
	}
	copies = mfs_num_copies(map);
	for (m = 1; m <= copies; m++)
		verify_copy(fs, ctl, map, bytenr, gen, nsect, csums, buf, m);
	free(buf);
	free(csums);
	mfs_check_progress(ctl, len);
	return 0;
}

u64 mfs_check_bytes_to_check(const struct mfs_fs_info *fs, bool data_csums)
{
	u64 types = MFS_BLOCK_GROUP_METADATA | MFS_BLOCK_GROUP_SYSTEM;

	return mfs_used_bytes(fs, data_csums ? types | MFS_BLOCK_GROUP_DATA : types);
}

int mfs_check_data_csums(struct mfs_fs_info *fs, struct mfs_check_ctl *ctl)
{
	struct mfs_key key = { 0, 0, 0 };
	struct mfs_path path;
	int ret;

	if (!fs->extent_root || !fs->csum_root)
		return 0;
	mfs_init_path(&path);
	ret = mfs_search_forward(fs->extent_root, &key, &path);
	while (ret == 0) {
		struct extent_buffer *leaf = path.nodes[0];
		const struct mfs_extent_item *ei = leaf_item_data(leaf, path.slots[0]);

		leaf_item_key(leaf, path.slots[0], &key);
		if (key.type == MFS_EXTENT_ITEM_KEY &&
		    leaf_item_size(leaf, path.slots[0]) == sizeof(*ei) &&
		    (le64_to_cpu(ei->flags) & MFS_EXTENT_FLAG_DATA)) {
			ret = verify_extent(fs, ctl, key.objectid, key.offset,
					    le64_to_cpu(ei->generation));
			if (ret)
				break;
		}
		ret = mfs_next_item(fs->extent_root, &path);
	}
	mfs_release_path(&path);
	if (ret == -ENOMEM)
		return ret;
	if (ret < 0)
		mfs_check_walk_failed(ctl, "extent", ret);
	return 0;
}
