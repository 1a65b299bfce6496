/*
 * Moving the data out of a chunk into other chunks (DESIGN §5.3), for a
 * relocation whose new layout finds no room: the extents go wherever the
 * allocator puts new data (chunks of the target profile, new ones), and
 * the file extent items that name them are pointed at their new places.
 */
#include <stdlib.h>
#include <string.h>
#include "kernel-shared/block/csum.h"
#include "kernel-shared/block/testhook.h"
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/tree/alloc.h"
#include "kernel-shared/fs/inode.h"
#include "kernel-shared/ops/restripe.h"
#include "kernel-shared/tree/transaction.h"
#include "kernel-shared/volumes/volumes.h"

/* A transaction is committed after this much data has moved, so none grows large. */
#define EVACUATE_COMMIT_BYTES	(64 * SZ_1M)

/*
 * The bytes of extent r, csums its checksums, into buf, read without
 * fs->lock (held on entry and on return, no handle open) so that file
 * I/O goes on meanwhile: the chunk is read-only, nothing new is written
 * into it, so an extent a file still points at when the lock is taken
 * again holds what was read (mfs writes no data in place). A raid5/6 row
 * still in memory, an I/O error or a bad sector: read again under the
 * lock, which heals what it can.
 */
static int read_extent(struct mfs_fs_info *fs, const struct mfs_range *r, const u8 *csums,
		       u8 *buf)
{
	struct mfs_chunk_map *map = mfs_find_chunk(fs, r->start);
	struct mfs_read_range rr = { r->start, buf, r->len };
	u8 got[MFS_CSUM_SIZE];
	int ret = -EAGAIN;
	u64 i;

	if (map && !mfs_range_has_open_rows(fs, map, r->start, r->len)) {
		pthread_rwlock_rdlock(&fs->map_lock);
		pthread_mutex_unlock(&fs->lock);
		ret = mfs_read_ranges_unlocked(fs, 1, &rr);
		/* the tests' hook: an evacuation reading without the lock */
		mfs_test_pause_at("evacuate-read");
		for (i = 0; !ret && i < r->len / MFS_SECTOR; i++) {
			mfs_csum_compute(fs->csum_type, buf + i * MFS_SECTOR, MFS_SECTOR, got);
			if (memcmp(got, csums + i * fs->csum_size, fs->csum_size))
				ret = -EAGAIN;
		}
		pthread_rwlock_unlock(&fs->map_lock);
		pthread_mutex_lock(&fs->lock);
	}
	return ret ? mfs_read_data_verified(fs, r->start, r->len, csums, buf) : 0;
}

/*
 * Move one data extent (r; for data, r->level is the owner inode), its
 * bytes in buf as read_extent read them against csums (both NULL for a
 * preallocated extent, never written: nothing to copy): copy them to new
 * space, point the file at the copy, and drop the old extent. Called with
 * fs->lock held, in the running transaction. An extent no file points at
 * any more (freed in this transaction) is left to its commit: 1.
 */
static int move_extent(struct mfs_trans_handle *trans, const struct mfs_range *r,
		       const u8 *csums, const u8 *buf)
{
	struct mfs_fs_info *fs = trans->fs_info;
	u64 ino = r->level, nb = 0, got, first = 0;
	bool reserved = false;
	int refs = 0, i, ret;

	ret = mfs_reserve_data_extent(trans, r->len, r->len, &nb, &got);
	if (ret)
		goto out;
	reserved = true;
	if (csums) {
		ret = mfs_write_logical(fs, nb, buf, r->len);
		if (!ret)
			ret = mfs_insert_data_csums(trans, nb, csums, r->len);
		if (ret)
			goto out;
	}
	ret = mfs_repoint_file_extents(trans, ino, r->start, nb, &refs, &first);
	if (ret)
		goto out;
	ret = mfs_add_data_ref(trans, nb, r->len, r->owner, ino, first);
	if (ret)
		goto out;
	reserved = false;	/* the delayed reference owns it now */
	if (!refs) {
		/*
		 * Its last reference went in this transaction: the copy goes
		 * again, reservation and checksums with it (never on disk).
		 */
		ret = mfs_free_extent(trans, nb, r->len);
		ret = ret ? ret : 1;
		goto out;
	}
	for (i = 1; !ret && i < refs; i++)
		ret = mfs_inc_extent_ref(trans, nb, r->len);
	for (i = 0; !ret && i < refs; i++)
		ret = mfs_free_extent(trans, r->start, r->len);
out:
	if (ret < 0 && reserved)
		mfs_unreserve_extent(fs, nb, r->len);
	return ret;
}

int mfs_evacuate_block_group(struct mfs_fs_info *fs, struct mfs_block_group *bg,
			     mfs_evacuate_progress progress, void *arg)
{
	struct mfs_trans_handle *trans;
	struct mfs_range *r = NULL;
	u64 start = bg->start, since_commit = 0;
	int n = 0, i, ret;

	if (!(bg->flags & MFS_BLOCK_GROUP_DATA) || !bg->ro)
		return -EINVAL;
	ret = mfs_bg_used_ranges(fs, bg, &r, &n);
	for (i = 0; !ret && i < n; i++) {
		u8 *csums = NULL, *buf = NULL;

		if (!(r[i].flags & MFS_EXTENT_FLAG_DATA)) {
			ret = -EUCLEAN;
			break;
		}
		ret = mfs_extent_csums(fs, r[i].start, r[i].len, &csums);
		if (ret < 0)
			break;
		ret = 0;
		if (csums) {
			buf = malloc(r[i].len);
			ret = buf ? read_extent(fs, &r[i], csums, buf) : -ENOMEM;
			/* the lock was let go: the chunk may have gone */
			bg = ret ? NULL : mfs_lookup_block_group(fs, start);
			if (!ret && (!bg || bg->start != start))
				ret = -ENOENT;
		}
		if (!ret)
			ret = mfs_start_transaction(fs, &trans);
		if (ret) {
			free(buf);
			free(csums);
			break;
		}
		ret = move_extent(trans, &r[i], csums, buf);
		free(buf);
		free(csums);
		if (ret > 0)
			ret = 0;
		else if (!ret)
			ret = progress(trans, r[i].len, arg);
		since_commit += r[i].len;
		if (ret) {
			mfs_end_transaction_abort(trans, ret);
		} else if (since_commit >= EVACUATE_COMMIT_BYTES) {
			/* nothing is held across it: the flushes let go of the lock */
			ret = mfs_commit_transaction_unlocking(trans);
			if (!ret)
				progress(NULL, 0, arg);
			since_commit = 0;
		} else {
			mfs_end_transaction(trans);
		}
		if (ret)
			break;
		/* file I/O goes on between extents; the chunk takes no new ones (ro) */
		pthread_mutex_unlock(&fs->lock);
		pthread_mutex_lock(&fs->lock);
		bg = mfs_lookup_block_group(fs, start);
		if (!bg || bg->start != start) {
			ret = -ENOENT;
			break;
		}
	}
	free(r);
	if (!ret)
		ret = mfs_commit_if_dirty(fs);
	if (!ret)
		progress(NULL, 0, arg);
	/* every extent is gone once the frees are committed */
	bg = mfs_lookup_block_group(fs, start);
	if (!ret && bg && (bg->used || bg->reserved))
		ret = -EAGAIN;
	return ret;
}
