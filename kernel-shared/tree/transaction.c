/*
 * Transactions and the commit. The order is the design (DESIGN §2):
 * settle the trees, write new nodes to fresh space, flush, write the
 * superblocks, flush. The old generation stays valid until the new
 * superblocks are durable.
 */
#include <stdlib.h>
#include <string.h>
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/tree/transaction.h"
#include "kernel-shared/tree/alloc.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/block/testhook.h"

int mfs_start_transaction(struct mfs_fs_info *fs, struct mfs_trans_handle **out)
{
	struct mfs_trans_handle *h;

	if (fs->fatal_error)
		return -EROFS;
	if (!(fs->open_flags & MFS_OPEN_WRITABLE))
		return -EROFS;
	if (!fs->running) {
		fs->running = calloc(1, sizeof(*fs->running));
		if (!fs->running)
			return -ENOMEM;
		fs->running->transid = fs->generation + 1;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->fs_info = fs;
	h->transid = fs->running->transid;
	*out = h;
	return 0;
}

void mfs_end_transaction(struct mfs_trans_handle *trans)
{
	free(trans);
}

int mfs_end_transaction_abort(struct mfs_trans_handle *trans, int err)
{
	struct mfs_fs_info *fs = trans->fs_info;

	if (!fs->fatal_error)
		fs->fatal_error = err;
	mfs_abort_transaction(fs);
	free(trans);
	return err;
}

int mfs_end_transaction_ret(struct mfs_trans_handle *trans, int ret)
{
	/* no space is no fault: what is made of the change stays consistent enough */
	if (ret && ret != -ENOSPC && ret != -EDQUOT && trans->changed)
		return mfs_end_transaction_abort(trans, ret);
	mfs_end_transaction(trans);
	return ret;
}

static void release_dirty_list(struct mfs_fs_info *fs, struct mfs_transaction *t)
{
	struct extent_buffer *eb = t->dirty_list;

	while (eb) {
		struct extent_buffer *next = eb->dirty_next;

		eb->dirty_next = NULL;
		eb->dirty = false;
		mfs_eb_put(fs, eb);
		eb = next;
	}
	t->dirty_list = NULL;
	t->nr_dirty = 0;
}

static void free_transaction(struct mfs_transaction *t)
{
	free(t->refs);
	free(t->ref_hash);
	free(t->pinned);
	free(t);
}

/*
 * The filesystem turns read-only with what it had in memory: the blocks
 * transaction t changed stay cached, each with a reference kept
 * (fs->aborted), so they are never evicted and read back from where they
 * never reached. Lookups and reads go on working; the disk keeps the last
 * committed generation, which the next mount sees.
 */
static void abort_one(struct mfs_fs_info *fs, struct mfs_transaction *t)
{
	while (t->dirty_list) {
		struct extent_buffer *eb = t->dirty_list;

		t->dirty_list = eb->dirty_next;
		eb->dirty = false;
		eb->dirty_next = fs->aborted;
		fs->aborted = eb;
	}
	t->nr_dirty = 0;
	mfs_drop_open_rows(fs);
	free_transaction(t);
	if (!fs->fatal_error)
		fs->fatal_error = -EIO;
}

void mfs_abort_transaction(struct mfs_fs_info *fs)
{
	if (!fs->running)
		return;
	abort_one(fs, fs->running);
	fs->running = NULL;
}

static int update_dev_items(struct mfs_trans_handle *trans, bool *did_work)
{
	struct mfs_fs_info *fs = trans->fs_info;
	int i, ret;

	for (i = 0; i < fs->nr_devices; i++) {
		struct mfs_device *dev = fs->devices[i];
		struct mfs_key key = { MFS_DEV_ITEMS_OBJECTID, MFS_DEV_ITEM_KEY, dev->devid };
		struct mfs_dev_item di = {
			.devid = cpu_to_le64(dev->devid),
			.total_bytes = cpu_to_le64(dev->total_bytes),
			.bytes_used = cpu_to_le64(dev->bytes_used),
			.generation = cpu_to_le64(trans->transid),
			.flags = cpu_to_le64(dev->flags),
			.sector_size = cpu_to_le32(fs->sectorsize),
		};
		struct mfs_path path;

		if (!dev->dirty)
			continue;
		dev->dirty = false;
		*did_work = true;
		memcpy(di.uuid, dev->uuid, MFS_UUID_SIZE);
		memcpy(di.fsid, fs->metadata_fsid, MFS_FSID_SIZE);
		mfs_init_path(&path);
		ret = mfs_search_slot(trans, fs->chunk_root, &key, &path, 0, 1);
		if (ret == 0) {
			memcpy(leaf_item_data(path.nodes[0], path.slots[0]), &di, sizeof(di));
			mfs_mark_buffer_dirty(trans, path.nodes[0]);
		}
		mfs_release_path(&path);
		if (ret < 0)
			return ret;
		if (ret > 0) {
			ret = mfs_insert_item(trans, fs->chunk_root, &key, &di, sizeof(di));
			if (ret)
				return ret;
			dev->joining = true;
		}
	}
	return 0;
}

/* Device error counters live in the device tree (btrfs: PERSISTENT_ITEM). */
static int update_dev_stats(struct mfs_trans_handle *trans, bool *did_work)
{
	struct mfs_fs_info *fs = trans->fs_info;
	int i, j, ret;

	if (!fs->dev_stats_dirty || !fs->dev_root)
		return 0;
	fs->dev_stats_dirty = 0;
	for (i = 0; i < fs->nr_devices; i++) {
		struct mfs_device *dev = fs->devices[i];
		struct mfs_key key = { MFS_DEV_STATS_OBJECTID, MFS_PERSISTENT_ITEM_KEY, dev->devid };
		struct mfs_dev_stats_item item;
		struct mfs_path path;

		if (!dev->stats_dirty)
			continue;
		dev->stats_dirty = false;
		*did_work = true;
		for (j = 0; j < MFS_DEV_STAT_VALUES_MAX; j++)
			item.values[j] = cpu_to_le64(dev->stats[j]);
		mfs_init_path(&path);
		ret = mfs_search_slot(trans, fs->dev_root, &key, &path, 0, 1);
		if (ret == 0) {
			memcpy(leaf_item_data(path.nodes[0], path.slots[0]), &item, sizeof(item));
			mfs_mark_buffer_dirty(trans, path.nodes[0]);
		}
		mfs_release_path(&path);
		if (ret > 0)
			ret = mfs_insert_item(trans, fs->dev_root, &key, &item, sizeof(item));
		if (ret)
			return ret;
	}
	return 0;
}

static int update_root_item(struct mfs_trans_handle *trans, struct mfs_root *root,
			    bool *did_work)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_key key = { root->objectid, MFS_ROOT_ITEM_KEY, 0 };
	struct mfs_path path;
	int ret;

	if (!root->dirty && le64_to_cpu(root->item.bytenr) == root->node->start &&
	    root->item.level == eb_level(root->node))
		return 0;
	root->dirty = false;
	*did_work = true;
	root->item.bytenr = cpu_to_le64(root->node->start);
	/* what a reader checks the root block against (DESIGN §2) */
	root->item.generation = cpu_to_le64(eb_generation(root->node));
	root->item.level = eb_level(root->node);
	mfs_init_path(&path);
	ret = mfs_search_slot(trans, fs->tree_root, &key, &path, 0, 1);
	if (ret == 0) {
		memcpy(leaf_item_data(path.nodes[0], path.slots[0]), &root->item,
		       sizeof(root->item));
		mfs_mark_buffer_dirty(trans, path.nodes[0]);
	}
	mfs_release_path(&path);
	if (ret > 0)
		ret = mfs_insert_item(trans, fs->tree_root, &key, &root->item,
				      sizeof(root->item));
	return ret;
}

/* Bring the extent tree, device items and root items to a fixed point. */
static int settle_trees(struct mfs_trans_handle *trans)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_root *roots[] = { fs->extent_root, fs->dev_root, fs->fs_root, fs->csum_root };
	int pass, ret, i;

	for (pass = 0; pass < 64; pass++) {
		bool did = false;

		ret = mfs_finish_new_chunks(trans, &did);
		if (ret)
			return ret;
		if (mfs_delayed_refs_pending(fs))
			did = true;
		ret = mfs_run_delayed_refs(trans);
		if (ret)
			return ret;
		ret = update_dev_items(trans, &did);
		if (!ret)
			ret = update_dev_stats(trans, &did);
		if (ret)
			return ret;
		ret = mfs_write_dirty_block_groups(trans, &did);
		if (ret)
			return ret;
		for (i = 0; i < (int)ARRAY_SIZE(roots); i++) {
			if (!roots[i])
				continue;
			ret = update_root_item(trans, roots[i], &did);
			if (ret)
				return ret;
		}
		if (!did && !mfs_delayed_refs_pending(fs))
			return 0;
	}
	return -ELOOP;
}

static void update_super(struct mfs_fs_info *fs, u64 transid)
{
	struct mfs_super_block *sb = &fs->super;
	u64 used = 0, total = 0;
	int i;

	for (i = 0; i < fs->nr_bgs; i++)
		used += fs->bgs[i]->used;
	for (i = 0; i < fs->nr_devices; i++)
		total += fs->devices[i]->total_bytes;
	sb->generation = cpu_to_le64(transid);
	sb->root = cpu_to_le64(fs->tree_root->node->start);
	sb->root_level = eb_level(fs->tree_root->node);
	sb->root_generation = cpu_to_le64(eb_generation(fs->tree_root->node));
	sb->chunk_root = cpu_to_le64(fs->chunk_root->node->start);
	sb->chunk_root_level = eb_level(fs->chunk_root->node);
	sb->chunk_root_generation = cpu_to_le64(eb_generation(fs->chunk_root->node));
	sb->bytes_used = cpu_to_le64(used);
	sb->total_bytes = cpu_to_le64(total);
	sb->num_devices = cpu_to_le64(fs->nr_devices);
	sb->incompat_flags = cpu_to_le64(fs->incompat_flags);
}

/*
 * The end of a commit whose superblocks are written, with their result
 * ret: what it freed becomes free space and its blocks are let go; or,
 * when they failed, it is aborted, and with it the transaction built on
 * it meanwhile. fs->lock held.
 */
static void end_commit(struct mfs_fs_info *fs, struct mfs_transaction *t, int ret)
{
	if (ret) {
		fs->fatal_error = ret;
		abort_one(fs, t);
		mfs_abort_transaction(fs);
		return;
	}
	mfs_seal_open_rows(fs);
	mfs_unpin_extents(fs, t);
	release_dirty_list(fs, t);
	free_transaction(t);
}

/*
 * The commit writing its superblocks without fs->lock, if there is one
 * (and, with seq, only that commit): wait until they are written and end
 * it; its result. fs->lock held: one commit at a time, a later one only
 * after the one before it ended, and nothing that needs what the last one
 * freed or wrote (space, fsync, an unmount) goes on before it.
 */
static int end_pending(struct mfs_fs_info *fs, u64 seq)
{
	struct mfs_transaction *t = fs->committing;
	int ret;

	if (!t || (seq && seq != fs->commit_seq))
		return 0;
	pthread_mutex_lock(&fs->commit_lock);
	if (fs->commit_done_seq != fs->commit_seq) {
		/* the tests' hook: someone waits for that commit, fs->lock held */
		pthread_mutex_unlock(&fs->commit_lock);
		mfs_test_pause_at("commit-wait");
		pthread_mutex_lock(&fs->commit_lock);
	}
	while (fs->commit_done_seq != fs->commit_seq)
		pthread_cond_wait(&fs->commit_cond, &fs->commit_lock);
	ret = fs->commit_ret;
	pthread_mutex_unlock(&fs->commit_lock);
	fs->committing = NULL;
	end_commit(fs, t, ret);
	return ret;
}

/*
 * The same, the wait for the superblocks made without fs->lock (held on
 * entry and on return), so that a sync or the periodic commit arriving
 * while another commit writes does not hold up everyone else meanwhile.
 * Not with a handle open: the lock let go, another commit could take the
 * handle's transaction.
 */
int mfs_end_pending_commit(struct mfs_fs_info *fs)
{
	while (fs->committing) {
		u64 seq = fs->commit_seq;

		pthread_mutex_unlock(&fs->lock);
		/* the tests' hook: someone waits for that commit, fs->lock let go */
		mfs_test_pause_at("commit-wait");
		pthread_mutex_lock(&fs->commit_lock);
		while (fs->commit_done_seq < seq)
			pthread_cond_wait(&fs->commit_cond, &fs->commit_lock);
		pthread_mutex_unlock(&fs->commit_lock);
		pthread_mutex_lock(&fs->lock);
		if (fs->committing && fs->commit_seq == seq)
			return end_pending(fs, seq);
	}
	/* ended by another thread: a sync waiting for it must still hear it failed */
	return fs->fatal_error;
}

/*
 * Steps 2 to 4 of the commit (DESIGN §2) to the devices taken under the
 * lock, each with its dev item of this commit: nothing here reads or
 * changes the trees, so it may run without fs->lock.
 */
static int write_supers(struct mfs_fs_info *fs, const struct mfs_super_block *super,
			struct mfs_super_target *tg, int n)
{
	struct mfs_device *devs[n ? n : 1];
	bool primary;
	int i, ret, joined = 0;

	for (i = 0; i < n; i++)
		devs[i] = tg[i].dev;
	/* 2. barrier: nothing may point at the new nodes before they are durable */
	ret = mfs_flush_devices(fs, devs, n);
	/*
	 * A device that failed a write or flush is out of this commit (it
	 * gets no superblock, so it stays at its last complete generation);
	 * the commit stands on the others if they still hold every chunk.
	 */
	if (!ret && mfs_unreadable_chunks(fs))
		ret = -EIO;
	if (ret)
		return ret;
	/* the tests' hook: a commit between its two flushes */
	mfs_test_pause_at("commit-supers");
	/*
	 * 3. the superblocks switch to the new generation; a device joining
	 * the filesystem in this commit gets its own first, durably: were the
	 * others' durable before it, they would name a member that has none
	 * (missing after a crash, the filesystem refusing to mount)
	 */
	for (i = 0; i < n; i++) {
		if (!tg[i].joining || !mfs_dev_usable(tg[i].dev))
			continue;
		/* one that fails is failed for this mount, like any member */
		ret = mfs_write_dev_super(fs, super, &tg[i], &primary);
		if (ret && fs->strict_io)
			return ret;
		joined += primary;
	}
	ret = joined ? mfs_flush_devices(fs, devs, n) : 0;
	if (!ret)
		ret = mfs_write_supers_to(fs, super, tg, n);
	/* 4. and are themselves durable before we report success */
	if (!ret)
		ret = mfs_flush_devices(fs, devs, n);
	if (!ret && mfs_unreadable_chunks(fs))
		ret = -EIO;
	return ret;
}

static int commit(struct mfs_trans_handle *trans, bool unlocking)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_transaction *t;
	struct mfs_super_target *tg = NULL;
	struct mfs_super_block *super = NULL;
	u64 transid = trans->transid, seq;
	int i, n = 0, ret;

	ret = end_pending(fs, 0);
	t = fs->running;
	if (ret || !t) {
		free(trans);
		return ret;
	}
	ret = settle_trees(trans);
	if (ret)
		goto fail;
	ret = mfs_write_sys_array(fs);
	if (ret)
		goto fail;
	update_super(fs, transid);

	/* 1. every new node and buffered raid5/6 row to its fresh location */
	ret = mfs_write_dirty_buffers(fs);
	if (!ret)
		ret = mfs_flush_open_rows(fs);
	if (ret)
		goto fail;
	/*
	 * The rest goes to what is taken now: the superblock and the devices
	 * with their dev items. A transaction started from here on is the
	 * next one (fs->generation + 1), its blocks copied from these.
	 */
	fs->generation = transid;
	super = malloc(sizeof(*super));
	n = super ? mfs_take_super_targets(fs, &tg) : -ENOMEM;
	if (n < 0) {
		ret = n;
		goto fail;
	}
	memcpy(super, &fs->super, sizeof(*super));
	for (i = 0; i < fs->nr_devices; i++)
		fs->devices[i]->joining = false;
	fs->running = NULL;
	fs->committing = t;
	pthread_mutex_lock(&fs->commit_lock);
	seq = ++fs->commit_seq;
	pthread_mutex_unlock(&fs->commit_lock);
	if (unlocking) {
		/* the maps stay as they are meanwhile (the chunks it checks) */
		pthread_rwlock_rdlock(&fs->map_lock);
		pthread_mutex_unlock(&fs->lock);
	}
	ret = write_supers(fs, super, tg, n);
	if (unlocking)
		pthread_rwlock_unlock(&fs->map_lock);
	pthread_mutex_lock(&fs->commit_lock);
	fs->commit_done_seq = seq;
	fs->commit_ret = ret;
	pthread_cond_broadcast(&fs->commit_cond);
	pthread_mutex_unlock(&fs->commit_lock);
	if (unlocking)
		pthread_mutex_lock(&fs->lock);
	/* ended here, unless the next commit ended it while we took the lock */
	end_pending(fs, seq);
	free(tg);
	free(super);
	free(trans);
	return ret;
fail:
	free(super);
	fs->fatal_error = ret;
	mfs_abort_transaction(fs);
	free(trans);
	return ret;
}

int mfs_commit_transaction(struct mfs_trans_handle *trans)
{
	return commit(trans, false);
}

int mfs_commit_transaction_unlocking(struct mfs_trans_handle *trans)
{
	return commit(trans, true);
}

static int commit_if_dirty(struct mfs_fs_info *fs, bool unlocking)
{
	struct mfs_trans_handle *trans;
	int ret;

	ret = unlocking ? mfs_end_pending_commit(fs) : end_pending(fs, 0);
	if (ret || (!fs->running && !fs->dev_stats_dirty))
		return ret;
	ret = mfs_start_transaction(fs, &trans);
	if (ret)
		return ret;
	return commit(trans, unlocking);
}

int mfs_commit_if_dirty(struct mfs_fs_info *fs)
{
	return commit_if_dirty(fs, false);
}

int mfs_commit_if_dirty_unlocking(struct mfs_fs_info *fs)
{
	return commit_if_dirty(fs, true);
}
