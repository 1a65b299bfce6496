/*
 * Writing file data: copy-on-write extents, their checksums, small writes
 * under the lock, large ones reserved then written without it, truncate.
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
/* ---------------- writing ---------------- */

static void compute_csums(struct mfs_fs_info *fs, const u8 *data, u64 len, u8 *sums)
{
	u64 i;

	for (i = 0; i < len / MFS_SECTOR; i++) {
		u8 c[MFS_CSUM_SIZE];

		mfs_csum_compute(fs->csum_type, data + i * MFS_SECTOR, MFS_SECTOR, c);
		memcpy(sums + i * fs->csum_size, c, fs->csum_size);
	}
}

int mfs_insert_data_csums(struct mfs_trans_handle *trans, u64 bytenr, const u8 *sums, u64 len)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_key key = { MFS_EXTENT_CSUM_OBJECTID, MFS_EXTENT_CSUM_KEY, bytenr };

	return mfs_insert_item(trans, fs->csum_root, &key, sums,
			       len / MFS_SECTOR * fs->csum_size);
}

static int insert_csums(struct mfs_trans_handle *trans, u64 bytenr, const u8 *data, u64 len)
{
	struct mfs_fs_info *fs = trans->fs_info;
	u8 *sums = malloc(len / MFS_SECTOR * fs->csum_size);
	int ret;

	if (!sums)
		return -ENOMEM;
	compute_csums(fs, data, len, sums);
	ret = mfs_insert_data_csums(trans, bytenr, sums, len);
	free(sums);
	return ret;
}

int data_insert_file_extent(struct mfs_trans_handle *trans, u64 ino, u64 pos, u8 type,
			      u8 compression, u64 bytenr, u64 disk_len, u64 ram_len)
{
	struct mfs_key key = { ino, MFS_EXTENT_DATA_KEY, pos };
	struct mfs_file_extent_item fi = {
		.generation = cpu_to_le64(trans->transid),
		.type = type,
		.compression = compression,
		.disk_bytenr = cpu_to_le64(bytenr),
		.disk_num_bytes = cpu_to_le64(disk_len),
		.offset = cpu_to_le64(0),
		.num_bytes = cpu_to_le64(ram_len),
		.ram_bytes = cpu_to_le64(ram_len),
	};

	return mfs_insert_item(trans, trans->fs_info->fs_root, &key, &fi, sizeof(fi));
}

int mfs_repoint_file_extents(struct mfs_trans_handle *trans, u64 ino, u64 old_bytenr,
			     u64 new_bytenr, int *nrefs, u64 *first_offset)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_key key = { ino, MFS_EXTENT_DATA_KEY, 0 };
	struct mfs_path path;
	u64 *offsets = NULL;
	int n = 0, max = 0, i, ret;

	/* the items first (a read-only walk), then each rewritten through a COW search */
	mfs_init_path(&path);
	ret = mfs_search_forward(fs->fs_root, &key, &path);
	while (ret == 0) {
		struct extent_buffer *leaf = path.nodes[0];
		struct file_extent fe;

		leaf_item_key(leaf, path.slots[0], &key);
		if (key.objectid != ino || key.type != MFS_EXTENT_DATA_KEY)
			break;
		ret = data_parse_file_extent(leaf, path.slots[0], &key, &fe);
		if (ret)
			break;
		if (fe.type != MFS_FILE_EXTENT_INLINE && fe.disk_bytenr == old_bytenr) {
			if (MFS_ARRAY_RESERVE(offsets, n, max, 8)) {
				ret = -ENOMEM;
				break;
			}
			offsets[n++] = key.offset;
		}
		ret = mfs_next_item(fs->fs_root, &path);
	}
	mfs_release_path(&path);
	if (ret < 0)
		goto out;
	for (i = 0; i < n; i++) {
		struct mfs_file_extent_item *fi;

		key = (struct mfs_key){ ino, MFS_EXTENT_DATA_KEY, offsets[i] };
		mfs_init_path(&path);
		ret = mfs_search_slot(trans, fs->fs_root, &key, &path, 0, 1);
		if (ret > 0)
			ret = -EUCLEAN;
		if (!ret) {
			fi = leaf_item_data(path.nodes[0], path.slots[0]);
			fi->disk_bytenr = cpu_to_le64(new_bytenr);
			mfs_mark_buffer_dirty(trans, path.nodes[0]);
		}
		mfs_release_path(&path);
		if (ret)
			goto out;
	}
	*nrefs = n;
	*first_offset = n ? offsets[0] : 0;
	ret = 0;
out:
	free(offsets);
	return ret;
}

/*
 * Write sector-aligned data at file offset pos into new extents and point
 * the file at them (copy-on-write: the old extents are released).
 */
static int write_aligned(struct mfs_trans_handle *trans, u64 ino, u64 pos, const u8 *data,
			 u64 len)
{
	struct mfs_fs_info *fs = trans->fs_info;
	u64 done = 0;
	int ret;

	while (done < len) {
		u64 want = min_t(u64, len - done, data_max_extent_size(fs));
		u64 bytenr, got, disk_len;
		u8 *cbuf = NULL;
		u8 compression = MFS_COMPRESS_NONE;
		const u8 *src = data + done;

		disk_len = want;
		if (fs->compress && want > MFS_SECTOR &&
		    mfs_compress(fs->compress, src, want, &cbuf, &disk_len) == 0) {
			compression = MFS_COMPRESS_ZLIB;
			src = cbuf;
		}
		/* space first: on ENOSPC the old contents must still be there */
		ret = mfs_reserve_data_extent(trans, disk_len, disk_len, &bytenr, &got);
		if (ret) {
			free(cbuf);
			return ret;
		}
		ret = mfs_drop_file_extents(trans, ino, pos + done, pos + done + want);
		if (!ret)
			ret = mfs_write_logical(fs, bytenr, src, disk_len);
		if (!ret)
			ret = insert_csums(trans, bytenr, src, disk_len);
		if (!ret)
			ret = data_insert_file_extent(trans, ino, pos + done, MFS_FILE_EXTENT_REG,
						 compression, bytenr, disk_len, want);
		if (!ret)
			ret = mfs_add_data_ref(trans, bytenr, disk_len, MFS_FS_TREE_OBJECTID,
					       ino, pos + done);
		free(cbuf);
		if (ret) {
			mfs_unreserve_extent(fs, bytenr, disk_len);
			return ret;
		}
		ret = data_adjust_nbytes(trans, ino, want);
		if (ret)
			return ret;
		done += want;
	}
	return 0;
}

/* Write [off, off+len), reading back the old bytes of partial sectors. */
static int write_locked(struct mfs_trans_handle *trans, u64 ino, u64 size, u64 off,
			u64 len, const u8 *data)
{
	struct mfs_fs_info *fs = trans->fs_info;
	u64 s = round_down(off, MFS_SECTOR), e = round_up(off + len, MFS_SECTOR);
	u8 *buf;
	int ret = 0;

	buf = calloc(1, e - s);
	if (!buf)
		return -ENOMEM;
	if (off > s && s < size)
		ret = data_read_range(fs, ino, s, min_t(u64, MFS_SECTOR, size - s), buf);
	if (!ret && off + len < e && e - MFS_SECTOR >= s + (off > s ? MFS_SECTOR : 0) &&
	    e - MFS_SECTOR < size)
		ret = data_read_range(fs, ino, e - MFS_SECTOR,
				      min_t(u64, MFS_SECTOR, size - (e - MFS_SECTOR)),
				      buf + (e - MFS_SECTOR - s));
	if (!ret) {
		memcpy(buf + (off - s), data, len);
		ret = write_aligned(trans, ino, s, buf, e - s);
	}
	free(buf);
	return ret;
}

/*
 * Small files live inline in the fs tree (as btrfs does up to max_inline):
 * an inline extent is then the file's only extent, at offset 0, and it
 * counts its length in nbytes. A file growing past MAX_INLINE_FILE, or
 * getting any other extent, has it turned into a regular extent first.
 */
#define MAX_INLINE_FILE 2048

/* 1 when the file's data is one inline extent (*len its length), 0 when not. */
static int inline_extent(struct mfs_fs_info *fs, u64 ino, u64 *len)
{
	struct file_extent fe;
	int ret = data_next_file_extent(fs, ino, 0, &fe);

	if (ret)
		return ret > 0 ? 0 : ret;
	if (fe.type != MFS_FILE_EXTENT_INLINE)
		return 0;
	*len = fe.len;
	return 1;
}

/* Does the file have no extent at all? */
static int no_extents(struct mfs_fs_info *fs, u64 ino)
{
	struct file_extent fe;
	int ret = data_next_file_extent(fs, ino, 0, &fe);

	return ret < 0 ? ret : ret > 0;
}

/* Replace the file's inline extent (if any) by its first len bytes inline (none if 0). */
static int rewrite_inline(struct mfs_trans_handle *trans, u64 ino, const u8 *data, u64 len)
{
	int ret = mfs_drop_file_extents(trans, ino, 0, MFS_SECTOR);

	if (!ret && len)
		ret = data_insert_inline_item(trans, ino, data, len);
	if (!ret)
		ret = data_adjust_nbytes(trans, ino, len);
	return ret;
}

/* Turn an inline extent into a regular one, before the file gets other extents. */
int data_uninline(struct mfs_trans_handle *trans, u64 ino)
{
	struct mfs_fs_info *fs = trans->fs_info;
	u8 buf[MFS_SECTOR];
	u64 len = 0;
	ssize_t n;
	int ret = inline_extent(fs, ino, &len);

	if (ret <= 0)
		return ret;
	memset(buf, 0, sizeof(buf));
	n = mfs_read_inline(fs, ino, buf, len);
	if (n < 0)
		return n;
	ret = mfs_drop_file_extents(trans, ino, 0, MFS_SECTOR);
	if (!ret)
		ret = write_aligned(trans, ino, 0, buf, MFS_SECTOR);
	return ret;
}

/*
 * Write [off, off+len) of a file of size bytes: inline while the file stays
 * small and has no other extent, else as extents (an inline one converted).
 */
static int write_small_or_locked(struct mfs_trans_handle *trans, u64 ino, u64 size, u64 off,
				 u64 len, const u8 *data)
{
	struct mfs_fs_info *fs = trans->fs_info;
	u64 end = max_t(u64, size, off + len), ilen = 0;
	int inl, ret;

	inl = inline_extent(fs, ino, &ilen);
	if (inl < 0)
		return inl;
	if (end <= MAX_INLINE_FILE && size <= MAX_INLINE_FILE) {
		u8 buf[MAX_INLINE_FILE];
		ssize_t n = 0;

		ret = inl ? 0 : no_extents(fs, ino);
		if (ret < 0)
			return ret;
		if (inl || ret) {
			memset(buf, 0, sizeof(buf));
			if (inl)
				n = mfs_read_inline(fs, ino, buf, min_t(u64, ilen, size));
			if (n < 0)
				return n;
			memcpy(buf + off, data, len);
			return rewrite_inline(trans, ino, buf, end);
		}
	}
	if (inl) {
		ret = data_uninline(trans, ino);
		if (ret)
			return ret;
	}
	return write_locked(trans, ino, size, off, len, data);
}

/*
 * Commit when the transaction has grown large, to bound memory. The write
 * is done and holds nothing across it: the flushes let go of the lock.
 */
static int maybe_commit(struct mfs_fs_info *fs)
{
	if (fs->running && (u64)fs->running->nr_dirty * fs->nodesize > 64 * SZ_1M)
		return mfs_commit_if_dirty_unlocking(fs);
	return 0;
}

/* The inode of a file to write to: -EISDIR for a directory, -EINVAL for other kinds. */
static int read_file_inode(struct mfs_fs_info *fs, u64 ino, struct mfs_inode_item *ii)
{
	int ret = mfs_read_inode(fs, ino, ii);

	if (!ret && !S_ISREG(le32_to_cpu(ii->mode)))
		ret = S_ISDIR(le32_to_cpu(ii->mode)) ? -EISDIR : -EINVAL;
	return ret;
}

/* New size and times of a written file. */
static int finish_write(struct mfs_trans_handle *trans, u64 ino, u64 end)
{
	struct mfs_inode_item ii;
	int ret = mfs_read_inode(trans->fs_info, ino, &ii);

	if (ret)
		return ret;
	if (trans->fs_info->caller_times && end <= le64_to_cpu(ii.size))
		return 0;
	if (end > le64_to_cpu(ii.size))
		ii.size = cpu_to_le64(end);
	if (!trans->fs_info->caller_times) {
		mfs_now(&ii.mtime);
		ii.ctime = ii.mtime;
	}
	return mfs_write_inode(trans, ino, &ii);
}

/*
 * One new extent of a sector-aligned write. Its space is reserved under
 * fs->lock; the data and checksums are written without it (the extent is
 * private to this write until its items go in), then the items are
 * inserted under the lock again.
 */
struct write_piece {
	u64 pos;		/* file offset */
	u64 len;
	u64 bytenr;
	bool unlocked;		/* written without fs->lock: counted in bg->inflight */
	bool parity;		/* raid5/6: buffered in open rows, not written by itself */
	u8 *csums;
};

static void piece_done(struct mfs_fs_info *fs, struct write_piece *p)
{
	struct mfs_block_group *bg;

	if (!p->unlocked)
		return;
	p->unlocked = false;
	bg = mfs_lookup_block_group(fs, p->bytenr);
	if (bg && bg->inflight && !--bg->inflight)
		pthread_cond_broadcast(&fs->inflight_done);
}

/*
 * Reserve the extents of [pos, pos+len). Data for chunks with parity goes
 * into the open rows at once; the rows it fills are added to *full.
 */
static int reserve_pieces(struct mfs_trans_handle *trans, u64 pos, const u8 *buf, u64 len,
			  struct write_piece *pieces, int *npieces, struct mfs_open_row **full)
{
	struct mfs_fs_info *fs = trans->fs_info;
	u64 done = 0;
	int ret = 0;

	*npieces = 0;
	while (done < len) {
		struct write_piece *p = &pieces[*npieces];
		struct mfs_block_group *bg;
		u64 got;

		p->pos = pos + done;
		p->len = min_t(u64, len - done, data_max_extent_size(fs));
		p->unlocked = false;
		p->parity = false;
		p->csums = malloc(p->len / MFS_SECTOR * fs->csum_size);
		if (!p->csums)
			return -ENOMEM;
		ret = mfs_reserve_data_extent(trans, p->len, p->len, &p->bytenr, &got);
		if (ret) {
			free(p->csums);
			return ret;
		}
		(*npieces)++;
		bg = mfs_lookup_block_group(fs, p->bytenr);
		if (!bg)
			return -EUCLEAN;
		bg->inflight++;
		p->unlocked = true;
		if (mfs_profile(bg->flags)->nparity) {
			p->parity = true;
			ret = mfs_write_logical_defer(fs, p->bytenr, buf + done, p->len, full);
			if (ret)
				return ret;
		}
		done += p->len;
	}
	return 0;
}

/* Point the file at the written pieces (under fs->lock). */
static int link_pieces(struct mfs_trans_handle *trans, u64 ino, struct write_piece *pieces,
		       int npieces)
{
	struct mfs_fs_info *fs = trans->fs_info;
	int i, ret = 0;

	for (i = 0; i < npieces; i++) {
		struct write_piece *p = &pieces[i];
		bool referenced = false;

		if (!ret)
			ret = mfs_drop_file_extents(trans, ino, p->pos, p->pos + p->len);
		if (!ret)
			ret = mfs_insert_data_csums(trans, p->bytenr, p->csums, p->len);
		if (!ret)
			ret = data_insert_file_extent(trans, ino, p->pos, MFS_FILE_EXTENT_REG,
						 MFS_COMPRESS_NONE, p->bytenr, p->len, p->len);
		if (!ret)
			ret = mfs_add_data_ref(trans, p->bytenr, p->len, MFS_FS_TREE_OBJECTID,
					       ino, p->pos);
		if (!ret) {
			referenced = true;
			ret = data_adjust_nbytes(trans, ino, p->len);
		}
		if (!referenced)
			mfs_unreserve_extent(fs, p->bytenr, p->len);
	}
	return ret;
}

/* Items a write of [off, off+len) in npieces new extents changes, at most. */
static int write_items(struct mfs_fs_info *fs, u64 ino, u64 off, u64 len, u64 npieces,
		       unsigned int *items)
{
	u64 n, next;
	int ret;

	ret = mfs_count_file_extents(fs, ino, round_down(off, MFS_SECTOR),
				     round_up(off + len, MFS_SECTOR), 1U << 20, &n, &next);
	if (ret)
		return ret;
	/*
	 * each old extent: its item goes or is cut in two, its reference
	 * changes; each new one: file extent and checksum items, nbytes;
	 * then size and times
	 */
	*items = 2 * n + 3 * npieces + 2;
	return 0;
}

static int start_write_transaction(struct mfs_fs_info *fs, u64 ino, u64 off, u64 len,
				   u64 npieces, struct mfs_trans_handle **trans)
{
	unsigned int items;
	int ret = write_items(fs, ino, off, len, npieces, &items);

	if (ret)
		return ret;
	return mfs_start_transaction_reserve(fs, items, MFS_RESERVE_NORMAL, trans);
}

/*
 * A raid5/6 row that could not be written whole holds data that earlier
 * writes already pointed their files at (their pieces wait in the row for
 * it to fill): what the running transaction would commit is not all on
 * disk, so it is aborted and the filesystem keeps its last commit, as
 * after a commit whose writes failed. fs->lock held.
 */
static void rows_failed(struct mfs_fs_info *fs, int err)
{
	if (!fs->fatal_error)
		fs->fatal_error = err;
	mfs_abort_transaction(fs);
}

/*
 * A write of whole sectors (nothing old to merge in): the data goes to
 * disk without fs->lock, so writers of other ranges and readers proceed
 * meanwhile and a single file's parallel writeback runs in parallel.
 */
static int write_sectors(struct mfs_fs_info *fs, u64 ino, u64 off, u64 len, const void *data)
{
	struct mfs_trans_handle *trans;
	struct mfs_inode_item ii;
	struct write_piece *pieces;
	struct mfs_open_row *full = NULL;
	int npieces = 0, i, ret, rows_err = 0;
	u8 *buf = NULL;
	u64 done;

	pieces = calloc(len / data_max_extent_size(fs) + 1, sizeof(*pieces));
	if (!pieces || posix_memalign((void **)&buf, MFS_IO_DIRECT_ALIGN, len)) {
		free(pieces);
		return -ENOMEM;
	}
	memcpy(buf, data, len);

	pthread_mutex_lock(&fs->lock);
	/* the data, a sector for an inline extent turned regular, and its items */
	ret = mfs_data_space_check(fs, len + MFS_SECTOR);
	if (!ret)
		ret = mfs_start_transaction_reserve(fs, UNINLINE_ITEMS, MFS_RESERVE_NORMAL,
						    &trans);
	if (ret)
		goto unlock;
	ret = read_file_inode(fs, ino, &ii);
	if (!ret)
		ret = data_uninline(trans, ino);
	if (!ret)
		ret = reserve_pieces(trans, off, buf, len, pieces, &npieces, &full);
	ret = mfs_end_transaction_ret(trans, ret);
	if (ret) {
		/* rows this write filled may hold other writers' data: they go out */
		int err = mfs_write_full_rows(fs, full);

		if (err)
			rows_failed(fs, err);
		mfs_release_full_rows(fs, full);
		goto undo;
	}
	/* map_lock before dropping fs->lock: the maps stay as they are */
	pthread_rwlock_rdlock(&fs->map_lock);
	pthread_mutex_unlock(&fs->lock);

	for (i = 0, done = 0; i < npieces; done += pieces[i].len, i++) {
		compute_csums(fs, buf + done, pieces[i].len, pieces[i].csums);
		if (!ret && !pieces[i].parity)
			ret = mfs_write_logical_unlocked(fs, pieces[i].bytenr, buf + done,
							 pieces[i].len);
	}
	if (full)
		rows_err = mfs_write_full_rows(fs, full);
	if (!ret)
		ret = rows_err;

	pthread_rwlock_unlock(&fs->map_lock);
	pthread_mutex_lock(&fs->lock);
	if (rows_err)
		rows_failed(fs, rows_err);
	mfs_release_full_rows(fs, full);
	if (ret)
		goto undo;
	ret = start_write_transaction(fs, ino, off, len, npieces, &trans);
	if (ret)
		goto undo;
	/* the lock was dropped: the file must still be there to take the extents */
	ret = read_file_inode(fs, ino, &ii);
	if (ret) {
		ret = mfs_end_transaction_ret(trans, ret);
		goto undo;
	}
	ret = link_pieces(trans, ino, pieces, npieces);
	if (!ret)
		ret = finish_write(trans, ino, off + len);
	ret = mfs_end_transaction_ret(trans, ret);
	for (i = 0; i < npieces; i++)
		piece_done(fs, &pieces[i]);
	if (!ret)
		ret = maybe_commit(fs);
	goto unlock;
undo:
	for (i = 0; i < npieces; i++) {
		mfs_unreserve_extent(fs, pieces[i].bytenr, pieces[i].len);
		piece_done(fs, &pieces[i]);
	}
unlock:
	pthread_mutex_unlock(&fs->lock);
	for (i = 0; i < npieces; i++)
		free(pieces[i].csums);
	free(pieces);
	free(buf);
	return ret;
}

ssize_t mfs_write(struct mfs_fs_info *fs, u64 ino, u64 off, size_t len, const void *data)
{
	struct mfs_trans_handle *trans;
	struct mfs_inode_item ii;
	int ret;

	if (!len)
		return 0;
	if (off + len < off)
		return -EFBIG;
	if (!fs->compress && !(off % MFS_SECTOR) && !(len % MFS_SECTOR)) {
		ret = write_sectors(fs, ino, off, len, data);
		return ret ? ret : (ssize_t)len;
	}
	pthread_mutex_lock(&fs->lock);
	/* whole sectors around the bytes, and an inline extent turned regular */
	ret = mfs_data_space_check(fs, round_up(len, MFS_SECTOR) + 2 * MFS_SECTOR);
	if (!ret)
		ret = start_write_transaction(fs, ino, off, len,
					      len / data_max_extent_size(fs) + 2, &trans);
	if (ret)
		goto unlock;
	ret = read_file_inode(fs, ino, &ii);
	if (!ret)
		ret = write_small_or_locked(trans, ino, le64_to_cpu(ii.size), off, len, data);
	if (!ret)
		ret = finish_write(trans, ino, off + len);
	ret = mfs_end_transaction_ret(trans, ret);
	if (!ret)
		ret = maybe_commit(fs);
unlock:
	pthread_mutex_unlock(&fs->lock);
	return ret ? ret : (ssize_t)len;
}

/* Zero [from, to) inside one sector by rewriting that sector. */
int data_zero_partial_sector(struct mfs_trans_handle *trans, u64 ino, u64 size, u64 from, u64 to)
{
	u8 zeros[MFS_SECTOR];

	if (from >= to || from >= size)
		return 0;
	memset(zeros, 0, sizeof(zeros));
	return write_locked(trans, ino, size, from, min_t(u64, to, size) - from, zeros);
}

int mfs_truncate(struct mfs_trans_handle *trans, u64 ino, u64 newsize)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_inode_item ii;
	u64 size, ilen = 0;
	int ret;

	ret = mfs_read_inode(fs, ino, &ii);
	if (ret)
		return ret;
	size = le64_to_cpu(ii.size);
	ret = inline_extent(fs, ino, &ilen);
	if (ret < 0)
		return ret;
	if (ret && newsize < ilen) {
		/* a small file stays inline: keep its first newsize bytes */
		u8 buf[MFS_SECTOR];
		ssize_t n = mfs_read_inline(fs, ino, buf, newsize);

		ret = n < 0 ? n : rewrite_inline(trans, ino, buf, newsize);
		if (!ret)
			ret = mfs_read_inode(fs, ino, &ii);
		if (ret)
			return ret;
	} else if (!ret && newsize < size) {
		ret = mfs_drop_file_extents(trans, ino, round_up(newsize, MFS_SECTOR), (u64)-1);
		if (!ret && newsize % MFS_SECTOR)
			ret = data_zero_partial_sector(trans, ino, size, newsize,
						  round_up(newsize, MFS_SECTOR));
		if (ret)
			return ret;
		ret = mfs_read_inode(fs, ino, &ii);
		if (ret)
			return ret;
	}
	ii.size = cpu_to_le64(newsize);
	return mfs_write_inode(trans, ino, &ii);
}
