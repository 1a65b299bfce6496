/*
 * Device add and grow, and the start and end of a replace (the target
 * taking the source's devid): the device-level operations that go with
 * the restriper.
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

/* ---------------- device add and grow ---------------- */

/*
 * A new member on the opened io (taken over): the next devid, the whole
 * device, and nothing of a former filesystem left in the reserved area.
 * In fs->devices; its item and superblock follow at the next commit. On
 * failure io is closed.
 */
static int join_device(struct mfs_fs_info *fs, struct mfs_io_dev *io, const char *path,
		       u64 flags, struct mfs_device **out)
{
	static const u8 zero[SZ_64K];
	struct mfs_device *dev;
	u64 devid = 1, off;
	int i, ret = -ENOMEM;

	for (i = 0; i < fs->nr_devices; i++)
		if (fs->devices[i]->devid >= devid)
			devid = fs->devices[i]->devid + 1;
	dev = calloc(1, sizeof(*dev));
	if (!dev || !(dev->path = strdup(path)))
		goto fail;
	dev->io = io;
	dev->devid = devid;
	dev->flags = flags;
	uuid_generate(dev->uuid);
	dev->total_bytes = round_down(io->size, SZ_4K);
	dev->dirty = true;
	dev->generation = fs->generation;
	for (off = 0; off < SZ_1M; off += sizeof(zero)) {
		ret = mfs_io_write(io, zero, sizeof(zero), off);
		if (ret)
			goto fail;
	}
	for (i = 1; i < MFS_SUPER_MIRROR_MAX; i++) {
		off = mfs_sb_offset(i);
		if (off + MFS_SUPER_INFO_SIZE > io->size)
			break;
		ret = mfs_io_write(io, zero, MFS_SUPER_INFO_SIZE, off);
		if (ret)
			goto fail;
	}
	ret = mfs_io_flush(io);
	if (!ret)
		ret = mfs_add_device(fs, dev);
	if (ret)
		goto fail;
	*out = dev;
	return 0;
fail:
	mfs_io_close(io);
	if (dev)
		free(dev->path);
	free(dev);
	return ret;
}

/* Undo join_device before anything was committed. */
static void unjoin_device(struct mfs_fs_info *fs, struct mfs_device *dev)
{
	int i;

	for (i = 0; i < fs->nr_devices; i++) {
		if (fs->devices[i] == dev) {
			memmove(&fs->devices[i], &fs->devices[i + 1],
				(fs->nr_devices - i - 1) * sizeof(*fs->devices));
			fs->nr_devices--;
			break;
		}
	}
	mfs_io_close(dev->io);
	free(dev->path);
	free(dev->extents);
	free(dev);
}

/*
 * Would every stripe on src fit on an empty device of size bytes, placed
 * as the run will place them (chunk by chunk, smallest hole first)?
 */
static bool replace_fits(struct mfs_fs_info *fs, u64 src, u64 size)
{
	struct mfs_device tgt = { .total_bytes = round_down(size, SZ_4K) };
	bool fits = true;
	int c, i;

	for (c = 0; c < fs->nr_chunks && fits; c++) {
		struct mfs_chunk_map *map = fs->chunks[c];
		u64 ss = mfs_map_stripe_size(map), phys;

		for (i = 0; i < map->num_stripes && fits; i++)
			if (map->stripes[i].devid == src)
				fits = !mfs_device_best_fit(&tgt, ss, &phys) &&
				       !mfs_device_add_extent(&tgt, phys, ss, map->logical);
	}
	free(tgt.extents);
	return fits;
}

/* The smallest device size (whole MiBs) that replace_fits, up to hi. */
static u64 replace_required(struct mfs_fs_info *fs, u64 src, u64 hi)
{
	u64 lo = MFS_MIN_DEVICE_SIZE / SZ_1M, top = max_t(u64, hi / SZ_1M, lo);

	if (!replace_fits(fs, src, top * SZ_1M))
		return top * SZ_1M;
	while (lo < top) {
		u64 mid = lo + (top - lo) / 2;

		if (replace_fits(fs, src, mid * SZ_1M))
			top = mid;
		else
			lo = mid + 1;
	}
	return top * SZ_1M;
}

/*
 * A spare must be able to take the place of any member: what each has
 * allocated fits on it (as the replace would place it).
 */
static bool spare_fits_all(struct mfs_fs_info *fs, u64 size)
{
	int i;

	for (i = 0; i < fs->nr_devices; i++)
		if (!(fs->devices[i]->flags & MFS_DEV_STATE_SPARE) &&
		    !replace_fits(fs, fs->devices[i]->devid, size))
			return false;
	return true;
}

int mfs_device_add(struct mfs_fs_info *fs, const char *path, u64 flags, u64 *devid_out)
{
	struct mfs_trans_handle *trans;
	struct mfs_device *dev;
	struct mfs_io_dev *io;
	int ret;

	ret = mfs_io_open(path, true, true, &io);
	if (ret)
		return ret;
	if (io->size < MFS_MIN_DEVICE_SIZE ||
	    ((flags & MFS_DEV_STATE_SPARE) && !spare_fits_all(fs, round_down(io->size, SZ_4K)))) {
		mfs_io_close(io);
		return -ENOSPC;
	}
	ret = join_device(fs, io, path, flags & MFS_DEV_STATE_SPARE, &dev);
	if (ret)
		return ret;
	ret = mfs_start_transaction(fs, &trans);
	if (!ret)
		ret = mfs_commit_transaction(trans);
	if (ret)
		return ret;	/* the commit failed: the fs is read-only now */
	*devid_out = dev->devid;
	return 0;
}

/*
 * The replace of src by tgt (a device of the filesystem now: new, or a
 * spare) starts: state and source flag in one commit.
 */
static int begin_replace(struct mfs_fs_info *fs, struct mfs_device *src,
			 struct mfs_device *tgt, u64 flags)
{
	struct mfs_restripe_status *st = fs->restripe;
	u64 *list;
	int ret, n;

	rs_reset_status(st);
	st->args.op = MFS_RESTRIPE_OP_REPLACE;
	st->args.flags = MFS_BALANCE_DATA | MFS_BALANCE_METADATA | MFS_BALANCE_SYSTEM |
			 (flags & (MFS_BALANCE_REPLACE_READ_OTHERS | MFS_BALANCE_REPLACE_SPARE));
	st->args.nr_devids = 2;
	st->args.devids[0] = src->devid;
	st->args.devids[1] = tgt->devid;
	st->start_time = time(NULL);
	ret = rs_select_chunks(fs, &st->args, 0, &list, &n, &st->bytes_total);
	if (ret)
		return ret;
	free(list);
	st->expected = n;
	st->state = MFS_RESTRIPE_RUNNING;
	/* from this commit on, the source takes no new chunks */
	src->flags |= MFS_DEV_STATE_REPLACE_SOURCE;
	src->dirty = true;
	ret = rs_persist(fs, false);
	if (ret) {
		/* the commit failed: the filesystem is read-only now */
		st->state = MFS_RESTRIPE_NONE;
		src->flags &= ~MFS_DEV_STATE_REPLACE_SOURCE;
	}
	return ret;
}

int mfs_replace_start(struct mfs_fs_info *fs, const char *path, u64 srcid, u64 flags,
		      bool discard, char *msg, size_t msglen)
{
	struct mfs_restripe_status *st = rs_status(fs);
	struct mfs_device *src, *tgt;
	struct mfs_io_dev *io;
	u64 size;
	int ret, i;

	msg[0] = 0;
	if (!st)
		return -ENOMEM;
	if (st->state != MFS_RESTRIPE_NONE)
		return rs_busy(st, msg, msglen);
	if (mfs_scrub_in_progress(fs))
		return mfs_scrub_busy(msg, msglen);
	src = mfs_find_device(fs, srcid);
	if (!src) {
		snprintf(msg, msglen, "'%llu' is not a valid devid for this filesystem",
			 (unsigned long long)srcid);
		return -ENODEV;
	}
	for (i = 0; i < fs->nr_devices; i++) {
		if (fs->devices[i]->path && !strcmp(fs->devices[i]->path, path)) {
			snprintf(msg, msglen, "target device %s is a member of this filesystem", path);
			return -EEXIST;
		}
	}
	ret = mfs_io_open(path, true, true, &io);
	if (ret) {
		snprintf(msg, msglen, "cannot open target device %s: %s", path, strerror(-ret));
		return ret;
	}
	size = round_down(io->size, SZ_4K);
	if (size < MFS_MIN_DEVICE_SIZE || !replace_fits(fs, srcid, size)) {
		u64 need = max_t(u64, MFS_MIN_DEVICE_SIZE,
				 replace_required(fs, srcid, max_t(u64, src->total_bytes, size)));

		snprintf(msg, msglen,
			 "target device smaller than source device (required %llu bytes)\nThe target may be smaller than the source (%llu bytes) as long as what is allocated on the source (%llu bytes) fits; this target (%llu bytes) cannot hold it.",
			 (unsigned long long)need, (unsigned long long)src->total_bytes,
			 (unsigned long long)src->bytes_used, (unsigned long long)size);
		mfs_io_close(io);
		return -ENOSPC;
	}
	if (discard)
		mfs_io_discard(io, 0, io->size);
	ret = join_device(fs, io, path, MFS_DEV_STATE_REPLACE_TARGET, &tgt);
	if (ret)
		return ret;
	ret = begin_replace(fs, src, tgt, flags & ~MFS_BALANCE_REPLACE_SPARE);
	if (ret && st->state == MFS_RESTRIPE_NONE && !fs->fatal_error)
		unjoin_device(fs, tgt);
	return ret;
}

/*
 * Which member a spare should replace now, and which spare: a member
 * missing or failing (not already being replaced or deleted), and the
 * smallest present spare that holds what it has allocated. false when
 * there is none, or nothing to do.
 */
bool mfs_spare_wanted(struct mfs_fs_info *fs, u64 *srcid, u64 *spareid)
{
	int i, j;

	if (!(fs->open_flags & MFS_OPEN_WRITABLE) || fs->fatal_error ||
	    (fs->restripe && fs->restripe->state != MFS_RESTRIPE_NONE) || mfs_scrub_in_progress(fs))
		return false;
	for (i = 0; i < fs->nr_devices; i++) {
		struct mfs_device *src = fs->devices[i], *best = NULL;
		int h = mfs_device_health(src);

		if (h != MFS_DEV_HEALTH_MISSING && h != MFS_DEV_HEALTH_FAILING)
			continue;
		if (src->flags & (MFS_DEV_STATE_SPARE | MFS_DEV_STATE_DELETING))
			continue;
		for (j = 0; j < fs->nr_devices; j++) {
			struct mfs_device *d = fs->devices[j];

			if (mfs_device_health(d) != MFS_DEV_HEALTH_SPARE ||
			    !replace_fits(fs, src->devid, d->total_bytes))
				continue;
			if (!best || d->total_bytes < best->total_bytes)
				best = d;
		}
		if (best) {
			*srcid = src->devid;
			*spareid = best->devid;
			return true;
		}
	}
	return false;
}

int mfs_replace_start_spare(struct mfs_fs_info *fs, u64 srcid, u64 spareid)
{
	struct mfs_restripe_status *st = rs_status(fs);
	struct mfs_device *src = mfs_find_device(fs, srcid), *tgt = mfs_find_device(fs, spareid);
	const char *why;
	int ret;

	if (!st)
		return -ENOMEM;
	if (st->state != MFS_RESTRIPE_NONE || mfs_scrub_in_progress(fs))
		return -EINPROGRESS;
	if (!src || !tgt || mfs_device_health(tgt) != MFS_DEV_HEALTH_SPARE)
		return -ENODEV;
	if (!replace_fits(fs, srcid, tgt->total_bytes))
		return -ENOSPC;
	why = mfs_device_health(src) == MFS_DEV_HEALTH_MISSING ? "missing" : "failing";
	/* read from the other copies first: the source is missing or failing */
	tgt->flags = (tgt->flags & ~MFS_DEV_STATE_SPARE) | MFS_DEV_STATE_REPLACE_TARGET;
	tgt->dirty = true;
	ret = begin_replace(fs, src, tgt, MFS_BALANCE_REPLACE_READ_OTHERS | MFS_BALANCE_REPLACE_SPARE);
	if (ret && st->state == MFS_RESTRIPE_NONE) {
		tgt->flags = (tgt->flags & ~MFS_DEV_STATE_REPLACE_TARGET) | MFS_DEV_STATE_SPARE;
		return ret;
	}
	st->last_replace.spare_time = time(NULL);
	st->last_replace.spare_src = srcid;
	st->last_replace.spare_devid = spareid;
	mfs_log(fs, "devid %llu (%s) is %s: replacing it with the hot spare devid %llu (%s)",
		(unsigned long long)srcid, src->path ? src->path : "<missing disk>",
		why, (unsigned long long)spareid, tgt->path);
	return ret;
}

/* The chunk item of map rewritten where it is (same size: the stripes' devids changed). */
static int rewrite_chunk_item(struct mfs_trans_handle *trans, struct mfs_chunk_map *map)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_key key = { MFS_FIRST_CHUNK_TREE_OBJECTID, MFS_CHUNK_ITEM_KEY, map->logical };
	u32 size = mfs_chunk_item_size(map->num_stripes);
	struct mfs_path path;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_slot(trans, fs->chunk_root, &key, &path, 0, 1);
	if (ret > 0 || (!ret && leaf_item_size(path.nodes[0], path.slots[0]) != size))
		ret = -EUCLEAN;
	if (!ret) {
		mfs_chunk_map_to_item(fs, map, leaf_item_data(path.nodes[0], path.slots[0]));
		mfs_mark_buffer_dirty(trans, path.nodes[0]);
	}
	mfs_release_path(&path);
	return ret;
}

/*
 * The end of a replace: the target becomes device devid (its source's,
 * whose items are gone), as in btrfs, so that everything that names the
 * device by devid (resize, stats, status) goes on naming it. In trans:
 * its device item, dev extents, error counters and every chunk item with
 * a stripe on it move to devid. Its superblock says so from this commit
 * on (open.c finds it by uuid if a crash leaves its superblock behind).
 */
/*
 * A chunk made in the running transaction (a tree block COWed while the
 * replace finishes may need one, on any member, the target included) has
 * no items yet: they go in at the commit, from the map, under the devid
 * its stripes have then.
 */
static bool chunk_is_new(struct mfs_fs_info *fs, u64 logical)
{
	struct mfs_block_group *bg = mfs_lookup_block_group(fs, logical);

	return bg && bg->start == logical && bg->new_chunk;
}

int rs_replace_take_devid(struct mfs_trans_handle *trans, struct mfs_device *tgt, u64 devid)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_key key = { MFS_DEV_ITEMS_OBJECTID, MFS_DEV_ITEM_KEY, tgt->devid };
	struct mfs_key skey = { MFS_DEV_STATS_OBJECTID, MFS_PERSISTENT_ITEM_KEY, tgt->devid };
	u64 old = tgt->devid;
	int i, s, ret;

	ret = rs_delete_key(trans, fs->chunk_root, &key);
	if (!ret && fs->dev_root)
		ret = rs_delete_if_there(trans, fs->dev_root, &skey);
	if (ret > 0)
		ret = 0;
	for (i = 0; !ret && i < tgt->nr_extents; i++) {
		struct mfs_dev_extent_rec *e = &tgt->extents[i];
		struct mfs_key dk = { old, MFS_DEV_EXTENT_KEY, e->physical };
		struct mfs_dev_extent de = {
			.chunk_offset = cpu_to_le64(e->chunk_offset),
			.length = cpu_to_le64(e->length),
		};

		if (chunk_is_new(fs, e->chunk_offset))
			continue;
		ret = rs_delete_key(trans, fs->dev_root, &dk);
		dk.objectid = devid;
		if (!ret)
			ret = mfs_insert_item(trans, fs->dev_root, &dk, &de, sizeof(de));
	}
	if (ret)
		return ret;
	mfs_device_set_devid(fs, tgt, devid);
	for (i = 0; !ret && i < fs->nr_chunks; i++)
		for (s = 0; s < fs->chunks[i]->num_stripes; s++)
			if (fs->chunks[i]->stripes[s].dev == tgt &&
			    !chunk_is_new(fs, fs->chunks[i]->logical)) {
				ret = rewrite_chunk_item(trans, fs->chunks[i]);
				break;
			}
	if (fs->read_devid == old)
		fs->read_devid = devid;
	/* the item under the new devid goes in with the commit */
	tgt->dirty = true;
	tgt->stats_dirty = true;
	fs->dev_stats_dirty = 1;
	return ret;
}

int mfs_device_grow(struct mfs_fs_info *fs, u64 devid, u64 new_size)
{
	struct mfs_device *dev = mfs_find_device(fs, devid);
	struct mfs_trans_handle *trans;
	int ret;

	if (!dev || dev->missing)
		return -ENODEV;
	if (new_size > dev->io->size)
		return -EFBIG;
	dev->total_bytes = round_down(new_size, SZ_4K);
	dev->dirty = true;
	ret = mfs_start_transaction(fs, &trans);
	if (!ret)
		ret = mfs_commit_transaction(trans);
	return ret;
}
