/*
 * Space accounting: what statfs reports, and the metadata and data space
 * checks that refuse an operation before it changes anything.
 */
#include <string.h>
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/fs/inode.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/tree/alloc.h"
#include "kernel-shared/tree/transaction.h"

/*
 * df must tell the truth (DESIGN §4): capacity is the data chunks plus what
 * the unallocated space would give under the data profile, so a two-device
 * raid1 shows one device's worth, not two.
 */
int mfs_statfs(struct mfs_fs_info *fs, struct statvfs *st)
{
	u64 data_total = 0, data_used = 0, unalloc;
	int i;

	pthread_mutex_lock(&fs->lock);
	for (i = 0; i < fs->nr_bgs; i++) {
		struct mfs_block_group *bg = fs->bgs[i];

		if (!(bg->flags & MFS_BLOCK_GROUP_DATA))
			continue;
		data_total += bg->length;
		data_used += bg->used + bg->reserved;
	}
	unalloc = mfs_simulate_alloc(fs, MFS_BLOCK_GROUP_DATA | fs->data_profile);
	memset(st, 0, sizeof(*st));
	st->f_bsize = fs->sectorsize;
	st->f_frsize = fs->sectorsize;
	st->f_blocks = (data_total + unalloc) / fs->sectorsize;
	st->f_bfree = (data_total - min_t(u64, data_used, data_total) + unalloc) / fs->sectorsize;
	st->f_bavail = st->f_bfree;
	st->f_files = st->f_blocks + fs->next_ino;
	st->f_ffree = st->f_bfree;
	/* as btrfs: with metadata down to the global reserve, nothing more fits */
	if (fs->open_flags & MFS_OPEN_WRITABLE &&
	    mfs_metadata_free_blocks(fs) < 2 * mfs_global_reserve_blocks(fs))
		st->f_bavail = 0;
	st->f_favail = st->f_ffree;
	st->f_namemax = MFS_NAME_LEN;
	memcpy(&st->f_fsid, fs->fsid, sizeof(st->f_fsid));
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

/* ---------------- metadata space reservation ---------------- */

/*
 * An operation is admitted only when the worst case of what it and the
 * commit after it can allocate fits in the metadata space left
 * (Documentation/space-reservation.md):
 *
 *   free metadata >= op + commit + global reserve
 *
 * free metadata: free bytes of the metadata block groups plus what the
 * unallocated device space would give as new metadata chunks. Blocks freed
 * in the running transaction are not free yet (pinned until the commit), so
 * when the check fails the running transaction is committed first and the
 * check repeated. Operations that free space may dip into the global
 * reserve, so deleting on a full filesystem always works.
 */

/* Height of a tree, plus one for a new root the operation may add. */
static u64 tree_height(struct mfs_root *root)
{
	return root && root->node ? (u64)eb_level(root->node) + 2 : 2;
}

/* Blocks of a tree, counting no further than limit. */
static int count_tree_blocks(struct mfs_fs_info *fs, struct extent_buffer *eb,
			     u64 owner, u64 limit, u64 *count)
{
	u32 i, n = eb_nritems(eb);
	int ret = 0;

	*count += 1;
	if (eb_level(eb) == 0)
		return 0;
	if (eb_level(eb) == 1) {
		*count += n;
		return 0;
	}
	for (i = 0; i < n && *count < limit && !ret; i++) {
		struct extent_buffer *child;
		struct mfs_tree_check chk;
		struct mfs_key key;

		mfs_child_check(eb, i, owner, &key, &chk);
		ret = mfs_read_tree_block(fs, node_blockptr(eb, i), &chk, &child);
		if (ret)
			break;
		ret = count_tree_blocks(fs, child, owner, limit, count);
		mfs_eb_put(fs, child);
	}
	return ret;
}

static int tree_blocks(struct mfs_fs_info *fs, struct mfs_root *root, u64 limit, u64 *out)
{
	*out = 0;
	if (!root || !root->node)
		return 0;
	return count_tree_blocks(fs, root->node, root->objectid, limit, out);
}

/* The global reserve: a fixed share of the filesystem, in metadata blocks. */
u64 mfs_global_reserve_blocks(struct mfs_fs_info *fs)
{
	u64 size = 0, bytes;
	int i;

	for (i = 0; i < fs->nr_devices; i++)
		if (!(fs->devices[i]->flags & MFS_DEV_STATE_SPARE))	/* holds nothing */
			size += fs->devices[i]->total_bytes;
	bytes = min_t(u64, max_t(u64, size / 64, 4 * SZ_1M), 512 * SZ_1M);
	return bytes / fs->nodesize;
}

/* Metadata blocks that can still be allocated, now or as new chunks. */
u64 mfs_metadata_free_blocks(struct mfs_fs_info *fs)
{
	u64 bytes = 0;
	int i;

	for (i = 0; i < fs->nr_bgs; i++) {
		struct mfs_block_group *bg = fs->bgs[i];

		if (bg->ro || (bg->flags & MFS_BLOCK_GROUP_TYPE_MASK) != MFS_BLOCK_GROUP_METADATA)
			continue;
		bytes += mfs_free_space_total(bg);
	}
	bytes += mfs_new_chunk_capacity(fs, MFS_BLOCK_GROUP_METADATA);
	return bytes / fs->nodesize;
}

/*
 * What the commit of the running transaction can allocate when `refs`
 * extent references have changed in it: every change touches an extent
 * item (and a freed data extent its checksum item). Scattered over the
 * trees, each costs a path and a split; but no block is copied twice in a
 * transaction, so it never costs more than copying the extent and csum
 * trees whole plus the leaves inserts can add. The root, device and
 * block group items come on top.
 */
static int commit_blocks(struct mfs_fs_info *fs, u64 refs, u64 *out)
{
	u64 h_ext = tree_height(fs->extent_root);
	u64 scattered = refs * 2 * h_ext, whole = 0, n;
	u64 inserts, per_leaf;
	int ret;

	per_leaf = leaf_data_size(fs) / 2 /
		   (sizeof(struct mfs_item) + sizeof(struct mfs_extent_item));
	ret = tree_blocks(fs, fs->extent_root, scattered, &n);
	if (ret)
		return ret;
	whole += n;
	if (whole < scattered) {
		ret = tree_blocks(fs, fs->csum_root, scattered, &n);
		if (ret)
			return ret;
		whole += n;
	}
	/* copied extent tree blocks are new extents too */
	inserts = refs + whole;
	whole += 2 * (inserts / per_leaf + 1) + h_ext;
	*out = min_t(u64, scattered, whole) +
	       4 * (tree_height(fs->tree_root) + tree_height(fs->dev_root) + h_ext);
	return 0;
}

static int metadata_space_check(struct mfs_fs_info *fs, unsigned int items,
				enum mfs_reserve_kind kind)
{
	struct mfs_transaction *t = fs->running;
	u64 h = max_t(u64, tree_height(fs->fs_root), tree_height(fs->csum_root));
	u64 op, commit, refs, need;
	int ret;

	/* an insert may split every level; a deletion copies the path and one sibling */
	op = items * (kind == MFS_RESERVE_FREEING ? h + 1 : 2 * h);
	/* each block the operation copies adds a new and a freed extent */
	refs = (t ? (u64)max_t(int, t->refs_pending, 0) : 0) + 2 * op;
	ret = commit_blocks(fs, refs, &commit);
	if (ret)
		return ret;
	need = op + commit;
	if (kind != MFS_RESERVE_FREEING)
		need += mfs_global_reserve_blocks(fs);
	return mfs_metadata_free_blocks(fs) >= need ? 0 : -ENOSPC;
}

int mfs_start_transaction_reserve(struct mfs_fs_info *fs, unsigned int items,
				  enum mfs_reserve_kind kind, struct mfs_trans_handle **out)
{
	int ret;

	if (fs->fatal_error || !(fs->open_flags & MFS_OPEN_WRITABLE))
		return mfs_start_transaction(fs, out);
	ret = metadata_space_check(fs, items, kind);
	if (ret == -ENOSPC && (fs->running || fs->committing)) {
		/* what the running transaction freed is reusable once it is on disk */
		ret = mfs_commit_if_dirty(fs);
		if (!ret)
			ret = metadata_space_check(fs, items, kind);
	}
	if (ret)
		return ret;
	return mfs_start_transaction(fs, out);
}

/* Data bytes that can still be allocated, now or as new chunks. */
static u64 data_free_bytes(struct mfs_fs_info *fs)
{
	u64 bytes = 0;
	int i;

	for (i = 0; i < fs->nr_bgs; i++) {
		struct mfs_block_group *bg = fs->bgs[i];

		if (bg->ro || (bg->flags & MFS_BLOCK_GROUP_TYPE_MASK) != MFS_BLOCK_GROUP_DATA)
			continue;
		bytes += mfs_free_space_total(bg);
	}
	return bytes + mfs_new_chunk_capacity(fs, MFS_BLOCK_GROUP_DATA);
}

int mfs_data_space_check(struct mfs_fs_info *fs, u64 bytes)
{
	int ret;

	if (data_free_bytes(fs) >= bytes)
		return 0;
	if (!fs->running && !fs->committing)
		return -ENOSPC;
	/* extents freed (overwritten, deleted) in the running transaction */
	ret = mfs_commit_if_dirty(fs);
	if (ret)
		return ret;
	return data_free_bytes(fs) >= bytes ? 0 : -ENOSPC;
}
