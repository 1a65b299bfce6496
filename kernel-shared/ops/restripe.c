/*
 * The restriper: balance, convert, device delete, shrink and replace
 * (DESIGN §5).
 *
 * Per chunk: stop allocating from it and commit, build the new layout for
 * the same logical range, copy the used ranges (verifying checksums and
 * reading other copies where one is bad), then swap the chunk item and
 * device extents in one commit. Nothing that points at the chunk changes.
 * The old device extents stay reserved until that commit is on disk.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <time.h>
#include <uuid/uuid.h>
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/ops/restripe.h"
#include "kernel-shared/tree/alloc.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/tree/transaction.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/block/csum.h"
#include "kernel-shared/block/raid56.h"
#include "kernel-shared/block/testhook.h"
#include "kernel-shared/ops/restripe-internal.h"
#include "kernel-shared/ops/scrub.h"

static u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}


static bool policy_ahead(struct mfs_fs_info *fs, const struct mfs_block_group *bg)
{
	const struct mfs_restripe_status *st = fs->restripe;

	return st && st->state != MFS_RESTRIPE_NONE && bg->start >= st->cursor;
}

/* What the allocator must know of the operation in progress (alloc.h). */
static const struct mfs_alloc_policy restripe_policy = {
	.ahead = policy_ahead,
	.will_move = mfs_restripe_will_move,
	.new_chunk_stripe = mfs_restripe_new_chunk_stripe,
	.release = rs_reloc_free,
};

struct mfs_restripe_status *rs_status(struct mfs_fs_info *fs)
{
	if (!fs->restripe) {
		fs->restripe = calloc(1, sizeof(*fs->restripe));
		if (fs->restripe)
			fs->alloc_policy = &restripe_policy;
	}
	return fs->restripe;
}

/* A new operation's status; how the last replace ended is kept. */
void rs_reset_status(struct mfs_restripe_status *st)
{
	typeof(st->last_replace) last = st->last_replace;
	u64 operation = st->operation;

	memset(st, 0, sizeof(*st));
	st->last_replace = last;
	st->operation = operation + 1;
}

/* ---------------- the persistent item ---------------- */

static void filter_to_disk(struct mfs_disk_balance_args *d, const struct mfs_balance_filter *f)
{
	memset(d, 0, sizeof(*d));
	d->flags = cpu_to_le64(f->flags);
	d->profiles = cpu_to_le64(f->profiles);
	d->usage_min = cpu_to_le64(f->usage_min);
	d->usage_max = cpu_to_le64(f->usage_max);
	d->devid = cpu_to_le64(f->devid);
	d->pstart = cpu_to_le64(f->pstart);
	d->pend = cpu_to_le64(f->pend);
	d->vstart = cpu_to_le64(f->vstart);
	d->vend = cpu_to_le64(f->vend);
	d->target = cpu_to_le64(f->target);
	d->limit_min = cpu_to_le64(f->limit_min);
	d->limit_max = cpu_to_le64(f->limit_max);
	d->stripes_min = cpu_to_le32(f->stripes_min);
	d->stripes_max = cpu_to_le32(f->stripes_max);
}

static void filter_from_disk(struct mfs_balance_filter *f, const struct mfs_disk_balance_args *d)
{
	f->flags = le64_to_cpu(d->flags);
	f->profiles = le64_to_cpu(d->profiles);
	f->usage_min = le64_to_cpu(d->usage_min);
	f->usage_max = le64_to_cpu(d->usage_max);
	f->devid = le64_to_cpu(d->devid);
	f->pstart = le64_to_cpu(d->pstart);
	f->pend = le64_to_cpu(d->pend);
	f->vstart = le64_to_cpu(d->vstart);
	f->vend = le64_to_cpu(d->vend);
	f->target = le64_to_cpu(d->target);
	f->limit_min = le64_to_cpu(d->limit_min);
	f->limit_max = le64_to_cpu(d->limit_max);
	f->stripes_min = le32_to_cpu(d->stripes_min);
	f->stripes_max = le32_to_cpu(d->stripes_max);
}

int rs_write_item(struct mfs_trans_handle *trans, struct mfs_restripe_status *st, bool paused)
{
	struct mfs_key key = { MFS_BALANCE_OBJECTID, MFS_BALANCE_ITEM_KEY, 0 };
	struct mfs_balance_item bi;
	int i;

	memset(&bi, 0, sizeof(bi));
	bi.op = cpu_to_le64(st->args.op);
	bi.flags = cpu_to_le64(st->args.flags | (paused ? MFS_BALANCE_PAUSED : 0));
	filter_to_disk(&bi.data, &st->args.data);
	filter_to_disk(&bi.meta, &st->args.meta);
	filter_to_disk(&bi.sys, &st->args.sys);
	bi.cursor = cpu_to_le64(st->cursor);
	bi.completed = cpu_to_le64(st->completed);
	bi.considered = cpu_to_le64(st->considered);
	bi.bytes_done = cpu_to_le64(st->bytes_done + st->bytes_pending);
	bi.nr_devids = cpu_to_le64(st->args.nr_devids);
	for (i = 0; i < st->args.nr_devids; i++)
		bi.devids[i] = cpu_to_le64(st->args.devids[i]);
	bi.new_size = cpu_to_le64(st->args.new_size);
	bi.old_size = cpu_to_le64(st->args.old_size);
	bi.start_time = cpu_to_le64(st->start_time);
	bi.cancel_progress = cpu_to_le64(st->cancel_progress);
	return mfs_write_item(trans, trans->fs_info->tree_root, &key, &bi, sizeof(bi));
}

static const struct mfs_key replace_key = { MFS_BALANCE_OBJECTID, MFS_PERSISTENT_ITEM_KEY, 0 };

/*
 * How the last replace ended, from its item, into st. None, or one that
 * makes no sense (it is informational: no reason to refuse the open), says
 * never.
 */
static int load_last_replace(struct mfs_fs_info *fs)
{
	struct mfs_restripe_status *st;
	struct mfs_replace_item ri;
	struct mfs_path path;
	u64 outcome;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_slot(NULL, fs->tree_root, &replace_key, &path, 0, 0);
	if (ret == 0) {
		if (leaf_item_size(path.nodes[0], path.slots[0]) != sizeof(ri))
			ret = 1;
		else
			memcpy(&ri, leaf_item_data(path.nodes[0], path.slots[0]), sizeof(ri));
	}
	mfs_release_path(&path);
	if (ret)
		return ret > 0 ? 0 : ret;
	outcome = le64_to_cpu(ri.outcome);
	if (outcome != MFS_REPLACE_ITEM_FINISHED && outcome != MFS_REPLACE_ITEM_CANCELED)
		return 0;
	st = rs_status(fs);
	if (!st)
		return -ENOMEM;
	st->last_replace.outcome = (int)outcome;
	st->last_replace.start_time = le64_to_cpu(ri.start_time);
	st->last_replace.end_time = le64_to_cpu(ri.end_time);
	st->last_replace.progress = min_t(u64, le64_to_cpu(ri.progress), 1000);
	st->last_replace.write_errs = le64_to_cpu(ri.write_errs);
	st->last_replace.read_errs = le64_to_cpu(ri.read_errs);
	return 0;
}

static int delete_item(struct mfs_trans_handle *trans)
{
	struct mfs_key key = { MFS_BALANCE_OBJECTID, MFS_BALANCE_ITEM_KEY, 0 };
	int ret = rs_delete_if_there(trans, trans->fs_info->tree_root, &key);

	return ret > 0 ? 0 : ret;
}

/* Save state and commit (fs->lock held). */
int rs_persist(struct mfs_fs_info *fs, bool paused)
{
	struct mfs_trans_handle *trans;
	int ret = mfs_start_transaction(fs, &trans);

	if (ret)
		return ret;
	ret = rs_write_item(trans, fs->restripe, paused);
	if (ret)
		return mfs_end_transaction_abort(trans, ret);
	return mfs_commit_transaction(trans);
}


int mfs_restripe_load(struct mfs_fs_info *fs)
{
	struct mfs_key key = { MFS_BALANCE_OBJECTID, MFS_BALANCE_ITEM_KEY, 0 };
	struct mfs_restripe_status *st;
	struct mfs_balance_item bi;
	struct mfs_path path;
	u64 *list, bytes;
	int ret, i, n;

	if (!fs->tree_root)
		return 0;
	ret = load_last_replace(fs);
	if (ret)
		return ret;
	mfs_init_path(&path);
	ret = mfs_search_slot(NULL, fs->tree_root, &key, &path, 0, 0);
	if (ret == 0) {
		if (leaf_item_size(path.nodes[0], path.slots[0]) != sizeof(bi))
			ret = -EUCLEAN;
		else
			memcpy(&bi, leaf_item_data(path.nodes[0], path.slots[0]), sizeof(bi));
	}
	mfs_release_path(&path);
	if (ret)
		return ret > 0 ? 0 : ret;
	st = rs_status(fs);
	if (!st)
		return -ENOMEM;
	rs_reset_status(st);
	st->state = MFS_RESTRIPE_PAUSED;
	st->args.op = le64_to_cpu(bi.op);
	st->args.flags = le64_to_cpu(bi.flags) & ~MFS_BALANCE_PAUSED;
	filter_from_disk(&st->args.data, &bi.data);
	filter_from_disk(&st->args.meta, &bi.meta);
	filter_from_disk(&st->args.sys, &bi.sys);
	st->cursor = le64_to_cpu(bi.cursor);
	st->completed = le64_to_cpu(bi.completed);
	st->considered = le64_to_cpu(bi.considered);
	st->bytes_done = le64_to_cpu(bi.bytes_done);
	st->args.nr_devids = min_t(u64, le64_to_cpu(bi.nr_devids), MFS_RESTRIPE_MAX_DEVIDS);
	for (i = 0; i < st->args.nr_devids; i++)
		st->args.devids[i] = le64_to_cpu(bi.devids[i]);
	st->args.new_size = le64_to_cpu(bi.new_size);
	st->args.old_size = le64_to_cpu(bi.old_size);
	st->start_time = le64_to_cpu(bi.start_time);
	st->cancel_progress = le64_to_cpu(bi.cancel_progress);
	if (st->args.op < MFS_RESTRIPE_OP_BALANCE || st->args.op > MFS_RESTRIPE_OP_REPLACE)
		return -EUCLEAN;
	if (st->args.op == MFS_RESTRIPE_OP_REPLACE &&
	    (st->args.nr_devids != 2 || !mfs_find_device(fs, st->args.devids[0]) ||
	     !mfs_find_device(fs, st->args.devids[1])))
		return -EUCLEAN;
	/* a convert under way, even paused: new chunks get its targets, as in btrfs */
	rs_apply_targets(fs, &st->args);
	/* a chunk copied part of the way: read-only, its new place taken */
	ret = rs_reloc_load(fs);
	if (ret)
		return ret;
	/* what is left, for status before it is resumed */
	if (!rs_select_chunks(fs, &st->args, st->cursor, &list, &n, &bytes)) {
		st->expected = st->completed + n;
		st->bytes_total = st->bytes_done + bytes;
		if (st->reloc)
			st->bytes_total -= min_t(u64, bytes, st->reloc->counted);
		free(list);
	}
	return 0;
}

/* Another exclusive operation holds the filesystem: say which state it is in. */
int rs_busy(const struct mfs_restripe_status *st, char *msg, size_t msglen)
{
	snprintf(msg, msglen, "another operation is %s",
		 st->state == MFS_RESTRIPE_PAUSED ? "paused" : "running");
	return -EINPROGRESS;
}

int mfs_restripe_start(struct mfs_fs_info *fs, const struct mfs_restripe_args *args,
		       char *msg, size_t msglen)
{
	struct mfs_restripe_status *st = rs_status(fs);
	struct mfs_restripe_estimate est;
	struct mfs_device *shrunk = NULL;
	u64 *list;
	int ret, n, i;

	msg[0] = 0;
	if (!st)
		return -ENOMEM;
	if (st->state != MFS_RESTRIPE_NONE)
		return rs_busy(st, msg, msglen);
	if (mfs_scrub_in_progress(fs))
		return mfs_scrub_busy(msg, msglen);
	/* a replace needs its target device: mfs_replace_start */
	if (args->op < MFS_RESTRIPE_OP_BALANCE || args->op > MFS_RESTRIPE_OP_RESIZE) {
		snprintf(msg, msglen, "unknown operation %d", args->op);
		return -EINVAL;
	}
	ret = mfs_restripe_check_args(fs, args, msg, msglen);
	if (ret)
		return ret;
	/*
	 * Whatever asked (CLI or a direct ioctl): place everything first, the
	 * way the run will, and refuse before anything moves if it would not
	 * fit - so a run never stops half-way for want of space.
	 */
	ret = mfs_restripe_estimate(fs, args, &est);
	if (ret)
		return ret;
	if (!est.fits) {
		rs_no_space_message(fs, args, &est, msg, msglen);
		return -ENOSPC;
	}
	rs_reset_status(st);
	st->args = *args;
	st->start_time = time(NULL);
	ret = rs_select_chunks(fs, args, 0, &list, &n, &st->bytes_total);
	if (ret)
		return ret;
	st->expected = n;
	free(list);
	st->state = MFS_RESTRIPE_RUNNING;
	rs_apply_targets(fs, args);
	if (args->op == MFS_RESTRIPE_OP_DELETE) {
		for (i = 0; i < args->nr_devids; i++) {
			struct mfs_device *dev = mfs_find_device(fs, args->devids[i]);

			if (dev) {
				dev->flags |= MFS_DEV_STATE_DELETING;
				dev->dirty = true;
			}
		}
	}
	if (args->op == MFS_RESTRIPE_OP_RESIZE) {
		/* nothing is allocated past the new end from now on; cancel gives the old size back */
		shrunk = mfs_find_device(fs, args->devids[0]);
		st->args.old_size = shrunk->total_bytes;
		shrunk->total_bytes = args->new_size;
		shrunk->dirty = true;
	}
	ret = rs_persist(fs, false);
	if (ret) {
		st->state = MFS_RESTRIPE_NONE;
		if (shrunk)
			shrunk->total_bytes = st->args.old_size;
	}
	return ret;
}

/* The operation runs again from its cursor: what is left counted anew. */
static int run_from_cursor(struct mfs_fs_info *fs)
{
	struct mfs_restripe_status *st = fs->restripe;
	u64 *list;
	int n, ret;

	ret = rs_select_chunks(fs, &st->args, st->cursor, &list, &n, &st->bytes_total);
	if (ret)
		return ret;
	free(list);
	st->bytes_total += st->bytes_done;
	st->expected = st->completed + n;
	st->pause_req = st->cancel_req = 0;
	st->state = MFS_RESTRIPE_RUNNING;
	return 0;
}

int mfs_restripe_resume(struct mfs_fs_info *fs)
{
	struct mfs_restripe_status *st = fs->restripe;
	int ret;

	if (!st || st->state == MFS_RESTRIPE_NONE)
		return -ENOENT;
	if (st->state == MFS_RESTRIPE_RUNNING)
		return -EINPROGRESS;
	/*
	 * What was written while it was paused may leave no room for the rest
	 * (a replace has its own check, at start): refuse as start does, so
	 * that a run never stops half-way for want of space. It stays paused.
	 */
	if (st->args.op != MFS_RESTRIPE_OP_REPLACE) {
		struct mfs_restripe_estimate est;

		rs_reloc_estimate_begin(fs);
		ret = rs_estimate_from(fs, &st->args, st->cursor, &est);
		rs_reloc_estimate_end(fs);
		if (ret)
			return ret;
		if (!est.fits)
			return -ENOSPC;
	}
	ret = run_from_cursor(fs);
	if (!ret)
		rs_apply_targets(fs, &st->args);
	return ret;
}

/* ---------------- finishing ---------------- */

static void wipe_supers(struct mfs_device *dev)
{
	static const u8 zero[MFS_SUPER_INFO_SIZE];
	int m;

	for (m = 0; m < MFS_SUPER_MIRROR_MAX; m++) {
		u64 off = mfs_sb_offset(m);

		if (off + MFS_SUPER_INFO_SIZE > dev->io->size)
			break;
		mfs_io_write(dev->io, zero, sizeof(zero), off);
	}
	mfs_io_flush(dev->io);
}

/*
 * Take the (now empty) devices of a delete out of the filesystem; of a
 * replace, the one the stripes left (devids[0]), and the other becomes
 * an ordinary member - a finished replace's target under its source's
 * devid.
 */
static int drop_devices(struct mfs_fs_info *fs, struct mfs_trans_handle *trans,
			struct mfs_device **gone, int *ngone)
{
	struct mfs_restripe_status *st = fs->restripe;
	struct mfs_device *stays = NULL;
	int i, j, ret, ndrop = st->args.nr_devids;

	*ngone = 0;
	if (st->args.op == MFS_RESTRIPE_OP_REPLACE) {
		stays = mfs_find_device(fs, st->args.devids[1]);
		ndrop = 1;
		if (stays) {
			stays->flags &= ~(MFS_DEV_STATE_REPLACE_TARGET | MFS_DEV_STATE_REPLACE_SOURCE);
			stays->dirty = true;
		}
	}
	for (i = 0; i < ndrop; i++) {
		struct mfs_device *dev = mfs_find_device(fs, st->args.devids[i]);
		struct mfs_key key = { MFS_DEV_ITEMS_OBJECTID, MFS_DEV_ITEM_KEY, st->args.devids[i] };
		struct mfs_key skey = { MFS_DEV_STATS_OBJECTID, MFS_PERSISTENT_ITEM_KEY, st->args.devids[i] };

		if (!dev)
			continue;
		if (dev->nr_extents)
			return -EBUSY;
		/* a hot spare the cancelled replace took stays, a spare again */
		if ((st->args.flags & (MFS_BALANCE_REPLACE_CANCELLING | MFS_BALANCE_REPLACE_SPARE)) ==
		    (MFS_BALANCE_REPLACE_CANCELLING | MFS_BALANCE_REPLACE_SPARE)) {
			dev->flags = (dev->flags & ~MFS_DEV_STATE_REPLACE_TARGET) | MFS_DEV_STATE_SPARE;
			dev->dirty = true;
			continue;
		}
		ret = rs_delete_key(trans, fs->chunk_root, &key);
		if (ret)
			return ret;
		if (fs->dev_root)
			rs_delete_key(trans, fs->dev_root, &skey);
		for (j = 0; j < fs->nr_devices; j++) {
			if (fs->devices[j] == dev) {
				memmove(&fs->devices[j], &fs->devices[j + 1],
					(fs->nr_devices - j - 1) * sizeof(*fs->devices));
				fs->nr_devices--;
				break;
			}
		}
		gone[(*ngone)++] = dev;
	}
	if (stays && *ngone && !(st->args.flags & MFS_BALANCE_REPLACE_CANCELLING))
		return rs_replace_take_devid(trans, stays, st->args.devids[0]);
	return 0;
}

/* Tenths of a percent of the bytes moved. */
static u64 progress(const struct mfs_restripe_status *st)
{
	if (!st->bytes_total)
		return 1000;
	return min_t(u64, 1000, st->bytes_done * 1000 / st->bytes_total);
}

/*
 * The replace of st ends in trans (cancelled: cancel_progress, the
 * tenths of a percent it had moved): what `replace status` says
 * afterwards, now and after a remount (the replace item).
 */
static int note_replace_end(struct mfs_trans_handle *trans, struct mfs_restripe_status *st,
			    bool cancelled, u64 cancel_progress)
{
	/* on the way back the devids are swapped */
	bool back = st->args.flags & MFS_BALANCE_REPLACE_CANCELLING;
	struct mfs_replace_item ri = { 0 };

	if (st->args.op != MFS_RESTRIPE_OP_REPLACE)
		return 0;
	st->last_replace.outcome = cancelled ? MFS_REPLACE_CANCELED : MFS_REPLACE_FINISHED;
	st->last_replace.start_time = st->start_time;
	st->last_replace.end_time = time(NULL);
	st->last_replace.progress = cancelled ? cancel_progress : 1000;
	st->last_replace.write_errs = st->write_errs;
	st->last_replace.read_errs = st->read_errs;
	ri.outcome = cpu_to_le64(st->last_replace.outcome);
	ri.start_time = cpu_to_le64(st->last_replace.start_time);
	ri.end_time = cpu_to_le64(st->last_replace.end_time);
	ri.progress = cpu_to_le64(st->last_replace.progress);
	ri.src_devid = cpu_to_le64(st->args.devids[back ? 1 : 0]);
	ri.tgt_devid = cpu_to_le64(st->args.devids[back ? 0 : 1]);
	ri.write_errs = cpu_to_le64(st->write_errs);
	ri.read_errs = cpu_to_le64(st->read_errs);
	return mfs_write_item(trans, trans->fs_info->tree_root, &replace_key, &ri, sizeof(ri));
}

/*
 * After a delete or a replace, with its devices dropped (in memory), or at
 * a mount with every member back: the chunks written reduced while
 * devices were missing (format §7.4) whose profile asked for the devices
 * now allow, to be converted to it - no chunk is left below its profile
 * (DESIGN §6). false when there are none, or when the convert would not
 * fit (said in the log: a balance with -dconvert=...,soft does it once
 * there is room).
 */
bool mfs_restripe_reduced_pending(struct mfs_fs_info *fs, struct mfs_restripe_args *next)
{
	struct mfs_balance_filter *f[3] = { &next->data, &next->meta, &next->sys };
	static const u64 sel[3] = { MFS_BALANCE_DATA, MFS_BALANCE_METADATA, MFS_BALANCE_SYSTEM };
	int ndev = mfs_nr_allocatable_devices(fs), i;
	struct mfs_restripe_estimate est;
	char msg[256];

	memset(next, 0, sizeof(*next));
	next->op = MFS_RESTRIPE_OP_BALANCE;
	for (i = 0; i < fs->nr_bgs; i++) {
		const struct mfs_block_group *bg = fs->bgs[i];
		int t = (bg->flags & MFS_BLOCK_GROUP_DATA) ? 0 :
			(bg->flags & MFS_BLOCK_GROUP_SYSTEM) ? 2 : 1;
		u64 want = mfs_target_profile(fs, bg->flags);

		if (!bg->reduced || mfs_profile(want)->devs_min > ndev)
			continue;
		next->flags |= sel[t];
		f[t]->flags = MFS_BALANCE_ARGS_CONVERT | MFS_BALANCE_ARGS_SOFT |
			      MFS_BALANCE_ARGS_REDUCED;
		f[t]->target = mfs_profile_to_filter_bit(want);
	}
	if (!next->flags)
		return false;
	if (mfs_restripe_check_args(fs, next, msg, sizeof(msg)) ||
	    mfs_restripe_estimate(fs, next, &est) || !est.fits) {
		mfs_log(fs, "chunks written reduced while degraded keep their profile for now: converting them does not fit; 'mfs balance start -dconvert=<profile>,soft -mconvert=<profile>,soft' does it once there is room");
		return false;
	}
	return true;
}

int mfs_restripe_start_reduced(struct mfs_fs_info *fs)
{
	struct mfs_restripe_args next;
	char msg[256];
	int ret;

	if (mfs_fs_degraded(fs) || mfs_scrub_in_progress(fs) ||
	    (fs->restripe && fs->restripe->state != MFS_RESTRIPE_NONE) ||
	    !mfs_restripe_reduced_pending(fs, &next))
		return 0;
	ret = mfs_restripe_start(fs, &next, msg, sizeof(msg));
	if (ret) {
		mfs_log(fs, "the chunks written reduced while a member was missing keep their profile for now: %s",
			msg[0] ? msg : strerror(-ret));
		return ret;
	}
	mfs_log(fs, "every member is present: converting the chunks written reduced while one was missing back to their profile ('mfs balance status' follows it)");
	return 1;
}

/* The operation goes on as next, from its start (finish: the same commit). */
static void start_followup(struct mfs_restripe_status *st, const struct mfs_restripe_args *next)
{
	u64 operation = st->operation;

	rs_reset_status(st);
	st->operation = operation;	/* the run that finished it goes on with it */
	st->args = *next;
	st->start_time = time(NULL);
	st->state = MFS_RESTRIPE_RUNNING;
}

/*
 * The end of an operation, in one commit: its item goes (or, after a
 * delete or replace, becomes the convert of the chunks written reduced:
 * *followed), the devices it emptied leave.
 */
static int finish(struct mfs_fs_info *fs, bool *followed)
{
	struct mfs_restripe_status *st = fs->restripe;
	struct mfs_device *gone[MFS_RESTRIPE_MAX_DEVIDS];
	struct mfs_restripe_args next;
	struct mfs_trans_handle *trans;
	int i, ngone = 0, ret;
	bool leaves = st->args.op == MFS_RESTRIPE_OP_DELETE || st->args.op == MFS_RESTRIPE_OP_REPLACE;

	*followed = false;
	ret = mfs_start_transaction(fs, &trans);
	if (ret)
		return ret;
	if (leaves)
		ret = drop_devices(fs, trans, gone, &ngone);
	if (!ret)
		ret = note_replace_end(trans, st, st->args.flags & MFS_BALANCE_REPLACE_CANCELLING,
				       st->cancel_progress);
	if (!ret && leaves && !(st->args.flags & MFS_BALANCE_REPLACE_CANCELLING) &&
	    mfs_restripe_reduced_pending(fs, &next)) {
		start_followup(st, &next);
		rs_apply_targets(fs, &next);
		*followed = true;
		ret = rs_write_item(trans, st, false);
	} else if (!ret) {
		ret = delete_item(trans);
	}
	if (ret)
		return mfs_end_transaction_abort(trans, ret);
	ret = mfs_commit_transaction(trans);
	/* only now, with no superblock naming them, are the devices free */
	for (i = 0; i < ngone; i++) {
		if (!ret && gone[i]->io)
			wipe_supers(gone[i]);
		mfs_io_close(gone[i]->io);
		free(gone[i]->path);
		free(gone[i]->extents);
		free(gone[i]);
	}
	return ret;
}

/*
 * The total is what is done plus what the chunks still to move hold now:
 * writes that land in those meanwhile raise it, so the figure shown is
 * never past 100 %. Called with fs->lock held.
 */
static void refresh_total(struct mfs_fs_info *fs, const u64 *left, int n)
{
	struct mfs_restripe_status *st = fs->restripe;
	u64 total = __atomic_load_n(&st->bytes_done, __ATOMIC_RELAXED);
	int i;

	for (i = 0; i < n; i++) {
		struct mfs_block_group *bg = mfs_lookup_block_group(fs, left[i]);

		if (bg && bg->start == left[i])
			total += bg->used + bg->reserved -
				 min_t(u64, bg->used, rs_reloc_counted(st, left[i]));
	}
	st->bytes_total = total;
}

/* Every chunk from the cursor on (as btrfs counts them considered): starts and lengths. */
static int chunks_from_cursor(struct mfs_fs_info *fs, u64 cursor, u64 **all, u64 **alen,
			      int *nall)
{
	int i;

	*nall = 0;
	*all = calloc(fs->nr_chunks + 1, sizeof(**all));
	*alen = calloc(fs->nr_chunks + 1, sizeof(**alen));
	if (!*all || !*alen)
		return -ENOMEM;
	for (i = 0; i < fs->nr_chunks; i++) {
		if (fs->chunks[i]->logical < cursor)
			continue;
		(*all)[*nall] = fs->chunks[i]->logical;
		(*alen)[(*nall)++] = fs->chunks[i]->length;
	}
	return 0;
}

/*
 * Empty chunks of list first: removing them is free and makes room for the
 * rest. They count as considered here (removed[j]), not again later. (The
 * last chunk of a type is copied, not removed: it waits for its turn.)
 */
static int remove_empty_first(struct mfs_fs_info *fs, const u64 *list, int n, bool *removed)
{
	struct mfs_restripe_status *st = fs->restripe;
	int j, ret = 0;

	for (j = 0; !ret && j < n && !__atomic_load_n(&st->cancel_req, __ATOMIC_RELAXED) &&
		    !__atomic_load_n(&st->pause_req, __ATOMIC_RELAXED); j++) {
		struct mfs_block_group *bg;
		bool empty;

		pthread_mutex_lock(&fs->lock);
		bg = mfs_lookup_block_group(fs, list[j]);
		empty = bg && bg->start == list[j] && bg->used == 0 && bg->reserved == 0 &&
			!rs_last_of_type(fs, bg);
		pthread_mutex_unlock(&fs->lock);
		if (!empty)
			continue;
		ret = rs_relocate_chunk(fs, list[j]);
		removed[j] = !ret;
		pthread_mutex_lock(&fs->lock);
		if (!ret)
			st->considered++;
		pthread_mutex_unlock(&fs->lock);
	}
	return ret;
}

/* How a pass ended, with fs->lock held: finished, cancelled, or paused for resume. */
static int end_pass(struct mfs_fs_info *fs, int ret)
{
	struct mfs_restripe_status *st = fs->restripe;

	if (ret == 0) {
		bool followed;

		ret = finish(fs, &followed);
		if (!ret && !followed)
			st->state = MFS_RESTRIPE_NONE;
	} else if (ret == -ECANCELED) {
		ret = mfs_restripe_cancel_paused(fs) ?: -ECANCELED;
	} else {
		/* paused or failed: the state stays on disk for resume */
		st->state = MFS_RESTRIPE_PAUSED;
		rs_persist(fs, true);
	}
	st->last_result = ret;
	st->pause_req = st->cancel_req = 0;
	return ret;
}

static int run_once(struct mfs_fs_info *fs)
{
	struct mfs_restripe_status *st = fs->restripe;
	u64 *list = NULL, *all = NULL, *alen = NULL, bytes;
	bool *removed = NULL, selected;
	int n = 0, nall = 0, i, j, ret;

	pthread_mutex_lock(&fs->lock);
	st->start_ns = now_ns();
	st->bytes_at_start = st->bytes_done;
	ret = rs_select_chunks(fs, &st->args, st->cursor, &list, &n, &bytes);
	/* also for a follow-up (the convert of the chunks written reduced) */
	if (!ret)
		st->expected = st->completed + n;
	if (!ret)
		ret = chunks_from_cursor(fs, st->cursor, &all, &alen, &nall);
	pthread_mutex_unlock(&fs->lock);
	removed = calloc(n + 1, sizeof(*removed));
	if (!ret && !removed)
		ret = -ENOMEM;
	if (!ret)
		ret = remove_empty_first(fs, list, n, removed);
	for (i = 0, j = 0; !ret && i < nall; i++) {
		if (__atomic_load_n(&st->cancel_req, __ATOMIC_RELAXED)) {
			ret = -ECANCELED;
			break;
		}
		if (__atomic_load_n(&st->pause_req, __ATOMIC_RELAXED)) {
			ret = -EINTR;
			break;
		}
		while (j < n && list[j] < all[i])
			j++;
		if (j < n && list[j] == all[i] && removed[j]) {
			j++;
			continue;
		}
		/* status reads it under the lock */
		pthread_mutex_lock(&fs->lock);
		st->considered++;
		refresh_total(fs, list + j, n - j);
		pthread_mutex_unlock(&fs->lock);
		selected = j < n && list[j] == all[i];
		j += selected;
		/* a chunk copied part of the way is finished, selected or not */
		pthread_mutex_lock(&fs->lock);
		selected |= st->reloc && st->reloc->logical == all[i];
		pthread_mutex_unlock(&fs->lock);
		if (selected) {
			ret = rs_relocate_chunk(fs, all[i]);
		} else {
			/* passed over; persisted with the next progress save */
			pthread_mutex_lock(&fs->lock);
			if (st->cursor < all[i] + alen[i])
				st->cursor = all[i] + alen[i];
			pthread_mutex_unlock(&fs->lock);
		}
	}
	free(list);
	free(removed);
	free(all);
	free(alen);
	pthread_mutex_lock(&fs->lock);
	ret = end_pass(fs, ret);
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

/*
 * Still running the operation this run began with? The state changes
 * under fs->lock (end_pass, a new start); an operation started just after
 * this one ended belongs to the run its starter launches, not to this one.
 */
static bool rs_running(struct mfs_fs_info *fs, u64 *operation)
{
	struct mfs_restripe_status *st = fs->restripe;
	bool running;

	pthread_mutex_lock(&fs->lock);
	running = st && st->state == MFS_RESTRIPE_RUNNING;
	if (running && !*operation)
		*operation = st->operation;
	running = running && st->operation == *operation;
	pthread_mutex_unlock(&fs->lock);
	return running;
}

int mfs_restripe_run(struct mfs_fs_info *fs)
{
	u64 operation = 0;
	int ret;

	if (!rs_running(fs, &operation))
		return -ENOENT;
	/* a cancelled replace goes on, the other way (mfs_restripe_cancel_paused) */
	/* ... and a finished delete or replace may go on converting reduced chunks (finish) */
	do {
		ret = run_once(fs);
	} while ((ret == -ECANCELED || !ret) && rs_running(fs, &operation));
	return ret;
}

/*
 * Cancelling the replace of a missing source: what was rebuilt cannot go
 * back to it. It stays on the target, which becomes an ordinary member
 * under its own devid, with the redundancy it gave back; the source stays
 * missing with what it still holds ('mfs device delete missing' or
 * another replace rebuilds that). Otherwise a replace that cannot go on
 * (a survivor failing reads the rebuild needs) could not be ended at all.
 */
static int replace_keep_rebuilt(struct mfs_fs_info *fs)
{
	struct mfs_restripe_status *st = fs->restripe;
	/* on the way back already (the source went missing then), the devids are swapped */
	bool back = st->args.flags & MFS_BALANCE_REPLACE_CANCELLING;
	u64 src_devid = st->args.devids[back ? 1 : 0], target_devid = st->args.devids[back ? 0 : 1];
	struct mfs_trans_handle *trans;
	int i, ret;

	ret = mfs_start_transaction(fs, &trans);
	if (ret)
		return ret;
	for (i = 0; i < 2; i++) {
		struct mfs_device *dev = mfs_find_device(fs, st->args.devids[i]);

		if (dev) {
			dev->flags &= ~(MFS_DEV_STATE_REPLACE_TARGET | MFS_DEV_STATE_REPLACE_SOURCE);
			dev->dirty = true;
		}
	}
	ret = delete_item(trans);
	if (!ret)
		ret = note_replace_end(trans, st, true, back ? st->cancel_progress : progress(st));
	if (ret)
		return mfs_end_transaction_abort(trans, ret);
	ret = mfs_commit_transaction(trans);
	if (ret)
		return ret;
	if (!back) {
		st->cancel_progress = progress(st);
		st->args.flags |= MFS_BALANCE_REPLACE_CANCELLING;
	}
	rs_reloc_forget(fs);
	st->state = MFS_RESTRIPE_NONE;
	/* no target any more: the profiles the chunks have decide again */
	mfs_init_alloc_profiles(fs);
	mfs_log(fs, "replace cancelled with its source (devid %llu) missing: what was rebuilt stays on devid %llu, now an ordinary member; devid %llu stays missing",
		(unsigned long long)src_devid, (unsigned long long)target_devid,
		(unsigned long long)src_devid);
	return 0;
}

/*
 * Cancelling a replace: what moved goes back to the source, so the
 * operation turns round - same engine, devids swapped - and runs on
 * (state RUNNING, persisted) until the target holds nothing and leaves.
 * Cancelling it again changes nothing: it is already on its way back.
 */
static int replace_turn_round(struct mfs_fs_info *fs)
{
	struct mfs_restripe_status *st = fs->restripe;
	bool back = st->args.flags & MFS_BALANCE_REPLACE_CANCELLING;
	/* the replace's source: where a cancel moves things back to */
	struct mfs_device *src = mfs_find_device(fs, st->args.devids[back ? 1 : 0]);
	u64 tmp;
	int ret;

	/* a chunk copied part of the way stays where it was */
	ret = rs_reloc_drop(fs);
	if (ret)
		return ret;
	/* also on the way back: the source went missing meanwhile */
	if (!src || !src->io || src->missing)
		return replace_keep_rebuilt(fs);
	if (!back) {
		st->cancel_progress = progress(st);
		tmp = st->args.devids[0];
		st->args.devids[0] = st->args.devids[1];
		st->args.devids[1] = tmp;
		st->args.flags |= MFS_BALANCE_REPLACE_CANCELLING;
		st->args.flags &= ~MFS_BALANCE_REPLACE_READ_OTHERS;
		st->cursor = st->completed = st->considered = 0;
		st->read_errs = st->write_errs = 0;
		__atomic_store_n(&st->bytes_done, 0, __ATOMIC_RELAXED);
	}
	ret = run_from_cursor(fs);
	if (ret)
		return ret;
	ret = rs_persist(fs, false);
	if (ret)
		st->state = MFS_RESTRIPE_PAUSED;
	return ret;
}

int mfs_restripe_cancel_paused(struct mfs_fs_info *fs)
{
	struct mfs_restripe_status *st = fs->restripe;
	struct mfs_trans_handle *trans;
	int i, ret;

	if (!st || st->state == MFS_RESTRIPE_NONE)
		return -ENOENT;
	if (st->args.op == MFS_RESTRIPE_OP_REPLACE)
		return replace_turn_round(fs);
	ret = mfs_start_transaction(fs, &trans);
	if (ret)
		return ret;
	ret = delete_item(trans);
	if (!ret && st->reloc)
		ret = rs_reloc_delete(trans, st->reloc->logical);
	/* devices being deleted or shrunk take allocations again */
	for (i = 0; st->args.op == MFS_RESTRIPE_OP_DELETE && i < st->args.nr_devids; i++) {
		struct mfs_device *dev = mfs_find_device(fs, st->args.devids[i]);

		if (dev) {
			dev->flags &= ~MFS_DEV_STATE_DELETING;
			dev->dirty = true;
		}
	}
	if (st->args.op == MFS_RESTRIPE_OP_RESIZE && st->args.nr_devids == 1 && st->args.old_size) {
		struct mfs_device *dev = mfs_find_device(fs, st->args.devids[0]);

		/* what moved stays where it went; the space past the new end is free again */
		if (dev && dev->io && dev->total_bytes < st->args.old_size) {
			dev->total_bytes = min_t(u64, st->args.old_size, round_down(dev->io->size, SZ_4K));
			dev->dirty = true;
		}
	}
	if (ret)
		return mfs_end_transaction_abort(trans, ret);
	ret = mfs_commit_transaction(trans);
	if (!ret) {
		rs_reloc_forget(fs);
		st->state = MFS_RESTRIPE_NONE;
		/* no target any more: the profiles the chunks have decide again */
		mfs_init_alloc_profiles(fs);
	}
	return ret;
}
