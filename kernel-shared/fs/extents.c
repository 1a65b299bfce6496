/*
 * File extent items: walking, trimming and dropping them, inline extents (symlink
 * targets and small files), preallocation and SEEK_DATA/SEEK_HOLE.
 */
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <linux/falloc.h>
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/fs/inode.h"
#include "kernel-shared/fs/inode-internal.h"
#include "kernel-shared/tree/transaction.h"
#include "kernel-shared/tree/alloc.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/block/csum.h"
#include "kernel-shared/format/profiles.h"

/* Items turning an inline extent into a regular one changes, at most. */
#define UNINLINE_ITEMS 6
/* Data extents are capped so their checksums fit in one csum item. */
u64 data_max_extent_size(struct mfs_fs_info *fs)
{
	u64 sectors = MFS_MAX_ITEM(fs) / fs->csum_size;

	return min_t(u64, 4 * SZ_1M, sectors * MFS_SECTOR);
}

/* ---------------- file extent items ---------------- */

int data_parse_file_extent(struct extent_buffer *leaf, int slot, const struct mfs_key *key,
			     struct file_extent *fe)
{
	const struct mfs_file_extent_item *fi = leaf_item_data(leaf, slot);
	u32 size = leaf_item_size(leaf, slot);

	if (size < MFS_FILE_EXTENT_INLINE_DATA_START)
		return -EUCLEAN;
	memset(fe, 0, sizeof(*fe));
	fe->start = key->offset;
	fe->type = fi->type;
	fe->compression = fi->compression;
	if (fi->type == MFS_FILE_EXTENT_INLINE) {
		fe->len = size - MFS_FILE_EXTENT_INLINE_DATA_START;
		return 0;
	}
	if (size != sizeof(*fi) || (fi->type != MFS_FILE_EXTENT_REG &&
				    fi->type != MFS_FILE_EXTENT_PREALLOC))
		return -EUCLEAN;
	fe->disk_bytenr = le64_to_cpu(fi->disk_bytenr);
	fe->disk_num_bytes = le64_to_cpu(fi->disk_num_bytes);
	fe->offset = le64_to_cpu(fi->offset);
	fe->len = le64_to_cpu(fi->num_bytes);
	fe->ram_bytes = le64_to_cpu(fi->ram_bytes);
	if (!fe->len || fe->offset + fe->len > fe->ram_bytes || fe->start + fe->len < fe->start)
		return -EUCLEAN;
	return 0;
}

/*
 * The first file extent of ino ending after pos (it may start after pos).
 * Returns 0 and fills fe, 1 when there is none.
 */
int data_next_file_extent(struct mfs_fs_info *fs, u64 ino, u64 pos, struct file_extent *fe)
{
	struct mfs_key key = { ino, MFS_EXTENT_DATA_KEY, pos };
	struct mfs_path path;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_slot(NULL, fs->fs_root, &key, &path, 0, 0);
	if (ret < 0)
		goto out;
	if (ret > 0) {
		/* the previous item may straddle pos */
		ret = mfs_prev_item(fs->fs_root, &path);
		if (ret < 0)
			goto out;
		if (ret == 0) {
			leaf_item_key(path.nodes[0], path.slots[0], &key);
			if (key.objectid == ino && key.type == MFS_EXTENT_DATA_KEY) {
				ret = data_parse_file_extent(path.nodes[0], path.slots[0], &key, fe);
				if (ret || fe->start + fe->len > pos)
					goto out;
			}
		}
		mfs_release_path(&path);
		key.objectid = ino;
		key.type = MFS_EXTENT_DATA_KEY;
		key.offset = pos;
		ret = mfs_search_forward(fs->fs_root, &key, &path);
		if (ret)
			goto out;
	}
	leaf_item_key(path.nodes[0], path.slots[0], &key);
	if (key.objectid != ino || key.type != MFS_EXTENT_DATA_KEY) {
		ret = 1;
		goto out;
	}
	ret = data_parse_file_extent(path.nodes[0], path.slots[0], &key, fe);
out:
	mfs_release_path(&path);
	return ret;
}

int data_adjust_nbytes(struct mfs_trans_handle *trans, u64 ino, s64 delta)
{
	struct mfs_inode_item ii;
	int ret;

	if (!delta)
		return 0;
	ret = mfs_read_inode(trans->fs_info, ino, &ii);
	if (ret)
		return ret;
	ii.nbytes = cpu_to_le64((s64)le64_to_cpu(ii.nbytes) + delta < 0 ? 0 :
				(s64)le64_to_cpu(ii.nbytes) + delta);
	return mfs_write_inode(trans, ino, &ii);
}

static bool has_disk_extent(const struct file_extent *fe)
{
	return fe->type != MFS_FILE_EXTENT_INLINE && fe->disk_bytenr;
}

/* Cut [start, end) out of one file extent item (found at fe->start). */
static int trim_one_extent(struct mfs_trans_handle *trans, u64 ino, const struct file_extent *fe,
			   u64 start, u64 end, s64 *nbytes)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_key key = { ino, MFS_EXTENT_DATA_KEY, fe->start };
	u64 es = fe->start, ee = fe->start + fe->len;
	struct mfs_file_extent_item *fi;
	struct mfs_path path;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_slot(trans, fs->fs_root, &key, &path, sizeof(*fi) + sizeof(struct mfs_item), 1);
	if (ret > 0)
		ret = -EUCLEAN;
	if (ret)
		goto out;
	if (es >= start && ee <= end) {
		ret = mfs_del_item(trans, fs->fs_root, &path);
		if (!ret && has_disk_extent(fe))
			ret = mfs_free_extent(trans, fe->disk_bytenr, fe->disk_num_bytes);
		*nbytes -= fe->len;
		goto out;
	}
	if (fe->type == MFS_FILE_EXTENT_INLINE) {
		ret = -EINVAL;
		goto out;
	}
	fi = leaf_item_data(path.nodes[0], path.slots[0]);
	if (es < start && ee > end) {
		struct mfs_file_extent_item tail = *fi;

		fi->num_bytes = cpu_to_le64(start - es);
		mfs_mark_buffer_dirty(trans, path.nodes[0]);
		mfs_release_path(&path);
		tail.offset = cpu_to_le64(fe->offset + (end - es));
		tail.num_bytes = cpu_to_le64(ee - end);
		key.offset = end;
		ret = mfs_insert_item(trans, fs->fs_root, &key, &tail, sizeof(tail));
		if (!ret && has_disk_extent(fe))
			ret = mfs_inc_extent_ref(trans, fe->disk_bytenr, fe->disk_num_bytes);
		*nbytes -= end - start;
	} else if (es < start) {
		fi->num_bytes = cpu_to_le64(start - es);
		mfs_mark_buffer_dirty(trans, path.nodes[0]);
		*nbytes -= ee - start;
	} else {
		struct mfs_key nk = { ino, MFS_EXTENT_DATA_KEY, end };

		fi->offset = cpu_to_le64(fe->offset + (end - es));
		fi->num_bytes = cpu_to_le64(ee - end);
		mfs_set_item_key_safe(trans, &path, &nk);
		*nbytes -= end - es;
	}
out:
	mfs_release_path(&path);
	return ret;
}

int mfs_drop_file_extents(struct mfs_trans_handle *trans, u64 ino, u64 start, u64 end)
{
	struct file_extent fe;
	s64 nbytes = 0;
	int ret;

	for (;;) {
		ret = data_next_file_extent(trans->fs_info, ino, start, &fe);
		if (ret)
			break;
		if (fe.start >= end)
			break;
		ret = trim_one_extent(trans, ino, &fe, start, end, &nbytes);
		if (ret)
			break;
	}
	if (ret > 0)
		ret = 0;
	if (!ret)
		ret = data_adjust_nbytes(trans, ino, nbytes);
	return ret;
}

/*
 * How many file extents of ino overlap [start, end), counting no more than
 * limit; *next is where the extent after the counted ones starts (end if
 * none). Space reservations size drops and truncates with it.
 */
int mfs_count_file_extents(struct mfs_fs_info *fs, u64 ino, u64 start, u64 end,
			   u64 limit, u64 *n, u64 *next)
{
	struct file_extent fe;
	u64 pos = start;
	int ret;

	*n = 0;
	*next = end;
	while (pos < end) {
		ret = data_next_file_extent(fs, ino, pos, &fe);
		if (ret < 0)
			return ret;
		if (ret || fe.start >= end)
			break;
		if (*n == limit) {
			*next = max_t(u64, fe.start, start);
			break;
		}
		(*n)++;
		pos = fe.start + fe.len;
	}
	return 0;
}

/* ---------------- inline (symlink targets) ---------------- */

int data_insert_inline_item(struct mfs_trans_handle *trans, u64 ino, const void *data,
			      size_t len)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_key key = { ino, MFS_EXTENT_DATA_KEY, 0 };
	struct mfs_file_extent_item *fi;
	struct mfs_path path;
	u8 *item;
	int ret;

	if (len > MFS_MAX_INLINE(fs))
		return -ENAMETOOLONG;
	mfs_init_path(&path);
	ret = mfs_insert_empty_item(trans, fs->fs_root, &path, &key,
				    MFS_FILE_EXTENT_INLINE_DATA_START + len);
	if (!ret) {
		item = leaf_item_data(path.nodes[0], path.slots[0]);
		fi = (struct mfs_file_extent_item *)item;
		fi->generation = cpu_to_le64(trans->transid);
		fi->type = MFS_FILE_EXTENT_INLINE;
		fi->compression = MFS_COMPRESS_NONE;
		memcpy(item + MFS_FILE_EXTENT_INLINE_DATA_START, data, len);
	}
	mfs_release_path(&path);
	return ret;
}

int mfs_write_inline(struct mfs_trans_handle *trans, u64 ino, const void *data, size_t len)
{
	struct mfs_inode_item ii;
	int ret = data_insert_inline_item(trans, ino, data, len);

	if (ret)
		return ret;
	ret = mfs_read_inode(trans->fs_info, ino, &ii);
	if (ret)
		return ret;
	ii.size = cpu_to_le64(len);
	return mfs_write_inode(trans, ino, &ii);
}

ssize_t mfs_read_inline(struct mfs_fs_info *fs, u64 ino, void *buf, size_t size)
{
	struct mfs_key key = { ino, MFS_EXTENT_DATA_KEY, 0 };
	struct mfs_path path;
	ssize_t ret;

	mfs_init_path(&path);
	ret = mfs_search_slot(NULL, fs->fs_root, &key, &path, 0, 0);
	if (ret > 0)
		ret = -EUCLEAN;
	if (ret == 0) {
		const u8 *item = leaf_item_data(path.nodes[0], path.slots[0]);
		u32 isize = leaf_item_size(path.nodes[0], path.slots[0]);

		if (isize < MFS_FILE_EXTENT_INLINE_DATA_START ||
		    item[8] != MFS_FILE_EXTENT_INLINE) {
			ret = -EUCLEAN;
		} else {
			ret = min_t(size_t, size, isize - MFS_FILE_EXTENT_INLINE_DATA_START);
			memcpy(buf, item + MFS_FILE_EXTENT_INLINE_DATA_START, ret);
		}
	}
	mfs_release_path(&path);
	return ret;
}

/* ---------------- fallocate, lseek ---------------- */

static int prealloc_range(struct mfs_trans_handle *trans, u64 ino, u64 start, u64 end)
{
	struct mfs_fs_info *fs = trans->fs_info;
	u64 pos = start;
	int ret;

	while (pos < end) {
		struct file_extent fe;
		u64 hole_end = end;

		ret = data_next_file_extent(fs, ino, pos, &fe);
		if (ret < 0)
			return ret;
		if (ret == 0 && fe.start <= pos) {
			pos = fe.start + fe.len;
			continue;
		}
		if (ret == 0 && fe.start < end)
			hole_end = fe.start;
		while (pos < hole_end) {
			u64 want = min_t(u64, hole_end - pos, data_max_extent_size(fs));
			u64 bytenr, got;

			ret = mfs_reserve_data_extent(trans, want, MFS_SECTOR, &bytenr, &got);
			if (ret)
				return ret;
			ret = data_insert_file_extent(trans, ino, pos, MFS_FILE_EXTENT_PREALLOC,
						 MFS_COMPRESS_NONE, bytenr, got, got);
			if (!ret)
				ret = mfs_add_data_ref(trans, bytenr, got, MFS_FS_TREE_OBJECTID, ino, pos);
			if (ret) {
				mfs_unreserve_extent(fs, bytenr, got);
				return ret;
			}
			ret = data_adjust_nbytes(trans, ino, got);
			if (ret)
				return ret;
			pos += got;
		}
	}
	return 0;
}

/*
 * Data for the partial sectors (and, unless punching, the whole range),
 * metadata for the extents dropped and the new ones: punching a hole
 * frees space and may use the global reserve.
 */
static int fallocate_reserve(struct mfs_fs_info *fs, u64 ino, int mode, u64 off, u64 len,
			     struct mfs_trans_handle **trans)
{
	bool punch = mode & FALLOC_FL_PUNCH_HOLE;
	u64 n, next, data = 2 * MFS_SECTOR;
	int ret;

	if (!punch)
		data += round_up(len, MFS_SECTOR);
	ret = mfs_data_space_check(fs, data);
	if (!ret)
		ret = mfs_count_file_extents(fs, ino, round_down(off, MFS_SECTOR),
					     round_up(off + len, MFS_SECTOR), 1U << 20, &n, &next);
	if (ret)
		return ret;
	n = 2 * n + (punch ? 0 : 3 * (len / data_max_extent_size(fs) + 1)) + UNINLINE_ITEMS + 8;
	return mfs_start_transaction_reserve(fs, min_t(u64, n, 1U << 30),
					     punch ? MFS_RESERVE_FREEING : MFS_RESERVE_NORMAL,
					     trans);
}

int mfs_fallocate(struct mfs_fs_info *fs, u64 ino, int mode, u64 off, u64 len)
{
	struct mfs_trans_handle *trans;
	struct mfs_inode_item ii;
	u64 end = off + len, size;
	int ret;

	if (!len || end < off)
		return -EINVAL;
	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE))
		return -EOPNOTSUPP;
	if ((mode & FALLOC_FL_PUNCH_HOLE) && !(mode & FALLOC_FL_KEEP_SIZE))
		return -EINVAL;
	if ((mode & FALLOC_FL_PUNCH_HOLE) && (mode & FALLOC_FL_ZERO_RANGE))
		return -EINVAL;
	pthread_mutex_lock(&fs->lock);
	ret = fallocate_reserve(fs, ino, mode, off, len, &trans);
	if (ret)
		goto unlock;
	ret = mfs_read_inode(fs, ino, &ii);
	if (!ret && !S_ISREG(le32_to_cpu(ii.mode)))
		ret = -ENODEV;
	/* extents other than an inline one: make that a regular one first */
	if (!ret)
		ret = data_uninline(trans, ino);
	if (!ret)
		ret = mfs_read_inode(fs, ino, &ii);
	if (ret)
		goto end;
	size = le64_to_cpu(ii.size);
	if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) {
		u64 a = round_up(off, MFS_SECTOR), b = round_down(end, MFS_SECTOR);

		if (a > b) {
			ret = data_zero_partial_sector(trans, ino, size, off, end);
		} else {
			ret = data_zero_partial_sector(trans, ino, size, off, a);
			if (!ret)
				ret = data_zero_partial_sector(trans, ino, size, b, end);
			if (!ret && a < b)
				ret = mfs_drop_file_extents(trans, ino, a, b);
			/* zero range: the space stays allocated, as unwritten extents */
			if (!ret && a < b && (mode & FALLOC_FL_ZERO_RANGE))
				ret = prealloc_range(trans, ino, a, b);
		}
		if (!ret)
			ret = mfs_read_inode(fs, ino, &ii);
		if (!ret) {
			if (!(mode & FALLOC_FL_KEEP_SIZE) && end > size)
				ii.size = cpu_to_le64(end);
			mfs_now(&ii.mtime);
			ii.ctime = ii.mtime;
			ret = mfs_write_inode(trans, ino, &ii);
		}
	} else {
		ret = prealloc_range(trans, ino, round_down(off, MFS_SECTOR),
				     round_up(end, MFS_SECTOR));
		if (!ret && !(mode & FALLOC_FL_KEEP_SIZE) && end > size) {
			ret = mfs_read_inode(fs, ino, &ii);
			if (!ret) {
				ii.size = cpu_to_le64(end);
				mfs_now(&ii.ctime);
				ret = mfs_write_inode(trans, ino, &ii);
			}
		}
	}
end:
	ret = mfs_end_transaction_ret(trans, ret);
unlock:
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

int mfs_lseek(struct mfs_fs_info *fs, u64 ino, u64 off, int whence, u64 *result)
{
	struct mfs_inode_item ii;
	struct file_extent fe;
	u64 size, pos = off;
	int ret;

	pthread_mutex_lock(&fs->lock);
	ret = mfs_read_inode(fs, ino, &ii);
	if (ret)
		goto out;
	size = le64_to_cpu(ii.size);
	if (off >= size) {
		ret = -ENXIO;
		goto out;
	}
	for (;;) {
		ret = data_next_file_extent(fs, ino, pos, &fe);
		if (ret < 0)
			goto out;
		if (ret > 0 || fe.start >= size)
			break;
		if (fe.type == MFS_FILE_EXTENT_PREALLOC) {
			/* unwritten space reads as zeros: a hole for both lookups */
			if (whence == SEEK_HOLE)
				break;
			pos = max_t(u64, pos, fe.start + fe.len);
			continue;
		}
		if (whence == SEEK_DATA) {
			*result = max_t(u64, off, fe.start);
			ret = 0;
			goto out;
		}
		/* SEEK_HOLE: a data extent covering pos pushes the hole on */
		if (fe.start > pos)
			break;
		pos = fe.start + fe.len;
	}
	if (whence == SEEK_DATA) {
		ret = -ENXIO;
	} else {
		*result = min_t(u64, pos, size);
		ret = 0;
	}
out:
	pthread_mutex_unlock(&fs->lock);
	return ret;
}
