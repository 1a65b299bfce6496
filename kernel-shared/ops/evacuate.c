/*
 * Moving the data out of a chunk into other chunks (DESIGN §5.3), for a
 * relocation whose new layout finds no room: the extents go wherever the
 * allocator puts new data (chunks of the target profile, new ones), and
 * the file extent items that name them are pointed at their new places.
 */
#include <stdlib.h>
#include <string.h>
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/tree/alloc.h"
#include "kernel-shared/fs/inode.h"
#include "kernel-shared/ops/restripe.h"
#include "kernel-shared/tree/transaction.h"
#include "kernel-shared/volumes/volumes.h"

/* A transaction is committed after this much data has moved, so none grows large. */
#define EVACUATE_COMMIT_BYTES	(64 * SZ_1M)

/*
 * Move one data extent (r; for data, r->level is the owner inode):
 * copy it, verified, to new space, point the file at the copy, and drop
 * the old extent. Called with fs->lock held, in the running transaction.
 * An extent no file points at any more (freed in this transaction) is
 * left to its commit: 1.
 */
static int move_extent(struct mfs_trans_handle *trans, const struct mfs_range *r)
{
	struct mfs_fs_info *fs = trans->fs_info;
	u64 ino = r->level, nb = 0, got, first = 0;
	u8 *csums = NULL, *buf = NULL;
	bool reserved = false;
	int refs = 0, i, ret;

	/* no checksums: preallocated, never written, nothing to copy */
	ret = mfs_extent_csums(fs, r->start, r->len, &csums);
	if (ret < 0)
		return ret;
	if (csums) {
		buf = malloc(r->len);
		ret = buf ? mfs_read_data_verified(fs, r->start, r->len, csums, buf) : -ENOMEM;
		if (ret)
			goto out;
	}
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
	free(buf);
	free(csums);
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
		if (!(r[i].flags & MFS_EXTENT_FLAG_DATA)) {
			ret = -EUCLEAN;
			break;
		}
		ret = mfs_start_transaction(fs, &trans);
		if (ret)
			break;
		ret = move_extent(trans, &r[i]);
		if (ret > 0)
			ret = 0;
		else if (!ret)
			ret = progress(trans, r[i].len, arg);
		since_commit += r[i].len;
		if (ret) {
			mfs_end_transaction_abort(trans, ret);
		} else if (since_commit >= EVACUATE_COMMIT_BYTES) {
			ret = mfs_commit_transaction(trans);
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
