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

#define SECTOR 4096ULL

static u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * MFS_TEST_RESTRIPE_DELAY_MS: a pause after each chunk is copied, before
 * it is swapped in, so that tests can pause, query or kill an operation
 * mid-way (and mid-chunk) however fast the copy is.
 * The same point is MFS_TEST_PAUSE_AT's "restripe-copied" (testhook.h).
 */
static void test_delay(void)
{
	static long ms = -1;

	if (ms < 0) {
		const char *v = getenv("MFS_TEST_RESTRIPE_DELAY_MS");

		ms = v ? atol(v) : 0;
		if (ms < 0 || ms > 60000)
			ms = 0;
	}
	mfs_test_pause_at("restripe-copied");
	if (ms) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

		nanosleep(&ts, NULL);
	}
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
};

static struct mfs_restripe_status *status(struct mfs_fs_info *fs)
{
	if (!fs->restripe) {
		fs->restripe = calloc(1, sizeof(*fs->restripe));
		if (fs->restripe)
			fs->alloc_policy = &restripe_policy;
	}
	return fs->restripe;
}

/* A new operation's status; how the last replace ended is kept. */
static void reset_status(struct mfs_restripe_status *st)
{
	typeof(st->last_replace) last = st->last_replace;

	memset(st, 0, sizeof(*st));
	st->last_replace = last;
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

static int write_item(struct mfs_trans_handle *trans, struct mfs_restripe_status *st, bool paused)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_key key = { MFS_BALANCE_OBJECTID, MFS_BALANCE_ITEM_KEY, 0 };
	struct mfs_balance_item bi;
	struct mfs_path path;
	int i, ret;

	memset(&bi, 0, sizeof(bi));
	bi.op = cpu_to_le64(st->args.op);
	bi.flags = cpu_to_le64(st->args.flags | (paused ? MFS_BALANCE_PAUSED : 0));
	filter_to_disk(&bi.data, &st->args.data);
	filter_to_disk(&bi.meta, &st->args.meta);
	filter_to_disk(&bi.sys, &st->args.sys);
	bi.cursor = cpu_to_le64(st->cursor);
	bi.completed = cpu_to_le64(st->completed);
	bi.considered = cpu_to_le64(st->considered);
	bi.bytes_done = cpu_to_le64(st->bytes_done);
	bi.nr_devids = cpu_to_le64(st->args.nr_devids);
	for (i = 0; i < st->args.nr_devids; i++)
		bi.devids[i] = cpu_to_le64(st->args.devids[i]);
	bi.new_size = cpu_to_le64(st->args.new_size);
	bi.old_size = cpu_to_le64(st->args.old_size);
	bi.start_time = cpu_to_le64(st->start_time);
	bi.cancel_progress = cpu_to_le64(st->cancel_progress);
	mfs_init_path(&path);
	ret = mfs_search_slot(trans, fs->tree_root, &key, &path, 0, 1);
	if (ret == 0) {
		memcpy(leaf_item_data(path.nodes[0], path.slots[0]), &bi, sizeof(bi));
		mfs_mark_buffer_dirty(trans, path.nodes[0]);
	}
	mfs_release_path(&path);
	if (ret > 0)
		ret = mfs_insert_item(trans, fs->tree_root, &key, &bi, sizeof(bi));
	return ret;
}

static int delete_item(struct mfs_trans_handle *trans)
{
	struct mfs_key key = { MFS_BALANCE_OBJECTID, MFS_BALANCE_ITEM_KEY, 0 };
	struct mfs_path path;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_slot(trans, trans->fs_info->tree_root, &key, &path, -1, 1);
	if (ret == 0)
		ret = mfs_del_item(trans, trans->fs_info->tree_root, &path);
	else if (ret > 0)
		ret = 0;
	mfs_release_path(&path);
	return ret;
}

/* Save state and commit (fs->lock held). */
static int persist(struct mfs_fs_info *fs, bool paused)
{
	struct mfs_trans_handle *trans;
	int ret = mfs_start_transaction(fs, &trans);

	if (ret)
		return ret;
	ret = write_item(trans, fs->restripe, paused);
	if (ret) {
		mfs_end_transaction(trans);
		return ret;
	}
	return mfs_commit_transaction(trans);
}

static int select_chunks(struct mfs_fs_info *fs, const struct mfs_restripe_args *a, u64 cursor,
			 u64 **out, int *nout, u64 *bytes);
static void apply_targets(struct mfs_fs_info *fs, const struct mfs_restripe_args *args);

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
	st = status(fs);
	if (!st)
		return -ENOMEM;
	reset_status(st);
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
	apply_targets(fs, &st->args);
	/* what is left, for status before it is resumed */
	if (!select_chunks(fs, &st->args, st->cursor, &list, &n, &bytes)) {
		st->expected = st->completed + n;
		st->bytes_total = st->bytes_done + bytes;
		free(list);
	}
	return 0;
}

/* ---------------- selection ---------------- */

static const struct mfs_balance_filter *filter_for(const struct mfs_restripe_args *a, u64 type,
						   bool *selected)
{
	*selected = false;
	if (type & MFS_BLOCK_GROUP_DATA) {
		*selected = a->flags & MFS_BALANCE_DATA;
		return &a->data;
	}
	if (type & MFS_BLOCK_GROUP_SYSTEM) {
		*selected = a->flags & MFS_BALANCE_SYSTEM;
		return &a->sys;
	}
	*selected = a->flags & MFS_BALANCE_METADATA;
	return &a->meta;
}

static bool has_devid(const struct mfs_chunk_map *map, u64 devid)
{
	int i;

	for (i = 0; i < map->num_stripes; i++)
		if (map->stripes[i].devid == devid)
			return true;
	return false;
}

static u64 target_profile(const struct mfs_restripe_args *a, const struct mfs_chunk_map *map)
{
	bool sel;
	const struct mfs_balance_filter *f = filter_for(a, map->type, &sel);

	if (a->op == MFS_RESTRIPE_OP_BALANCE && sel && (f->flags & MFS_BALANCE_ARGS_CONVERT))
		return mfs_filter_bit_to_profile(f->target);
	return map->type & MFS_BLOCK_GROUP_PROFILE_MASK;
}

/* Does this chunk take part? counts[] tracks limit= per type. */
static bool chunk_selected(struct mfs_fs_info *fs, const struct mfs_restripe_args *a,
			   struct mfs_chunk_map *map, u64 *counts)
{
	struct mfs_block_group *bg = mfs_lookup_block_group(fs, map->logical);
	const struct mfs_balance_filter *f;
	u64 profile = map->type & MFS_BLOCK_GROUP_PROFILE_MASK;
	int tidx = (map->type & MFS_BLOCK_GROUP_DATA) ? 0 : (map->type & MFS_BLOCK_GROUP_SYSTEM) ? 2 : 1;
	bool sel;
	int i;

	if (!bg)
		return false;
	if (a->op == MFS_RESTRIPE_OP_DELETE) {
		for (i = 0; i < a->nr_devids; i++)
			if (has_devid(map, a->devids[i]))
				return true;
		return false;
	}
	if (a->op == MFS_RESTRIPE_OP_REPLACE)
		return has_devid(map, a->devids[0]);
	if (a->op == MFS_RESTRIPE_OP_RESIZE) {
		u64 ss = mfs_map_stripe_size(map);

		for (i = 0; i < map->num_stripes; i++)
			if (map->stripes[i].devid == a->devids[0] &&
			    map->stripes[i].physical + ss > a->new_size)
				return true;
		return false;
	}
	f = filter_for(a, map->type, &sel);
	if (!sel)
		return false;
	if ((f->flags & MFS_BALANCE_ARGS_PROFILES) &&
	    !(f->profiles & mfs_profile_to_filter_bit(profile)))
		return false;
	if (f->flags & MFS_BALANCE_ARGS_USAGE) {
		/*
		 * As btrfs: min% <= used < max% of the chunk; usage=0 means
		 * only empty chunks (nothing is below 0%).
		 */
		u64 lo = bg->length / 100 * f->usage_min + bg->length % 100 * f->usage_min / 100;
		u64 hi = f->usage_max == 0 ? 1 :
			 bg->length / 100 * f->usage_max + bg->length % 100 * f->usage_max / 100;

		if (bg->used < lo || bg->used >= hi)
			return false;
	}
	if ((f->flags & MFS_BALANCE_ARGS_DEVID) && !has_devid(map, f->devid))
		return false;
	if (f->flags & MFS_BALANCE_ARGS_DRANGE) {
		u64 ss = mfs_map_stripe_size(map);
		bool hit = false;

		for (i = 0; i < map->num_stripes; i++)
			if (map->stripes[i].devid == f->devid &&
			    map->stripes[i].physical < f->pend &&
			    map->stripes[i].physical + ss > f->pstart)
				hit = true;
		if (!hit)
			return false;
	}
	if ((f->flags & MFS_BALANCE_ARGS_VRANGE) &&
	    !(map->logical < f->vend && map->logical + map->length > f->vstart))
		return false;
	if ((f->flags & MFS_BALANCE_ARGS_STRIPES) &&
	    ((u32)map->num_stripes < f->stripes_min || (u32)map->num_stripes > f->stripes_max))
		return false;
	if ((f->flags & MFS_BALANCE_ARGS_CONVERT) && (f->flags & MFS_BALANCE_ARGS_SOFT) &&
	    profile == mfs_filter_bit_to_profile(f->target))
		return false;
	if (f->flags & MFS_BALANCE_ARGS_LIMIT) {
		if (counts[tidx] >= f->limit_max)
			return false;
		counts[tidx]++;
	}
	return true;
}

bool mfs_restripe_will_move(struct mfs_fs_info *fs, const struct mfs_block_group *bg)
{
	const struct mfs_restripe_status *st = fs->restripe;
	const struct mfs_balance_filter *f;
	u64 counts[3] = { 0, 0, 0 };
	bool sel;

	if (!st || st->state == MFS_RESTRIPE_NONE || bg->start < st->cursor || !bg->map)
		return false;
	/* usage and limit depend on what the chunk holds and on the order: not static */
	f = filter_for(&st->args, bg->flags, &sel);
	if (st->args.op == MFS_RESTRIPE_OP_BALANCE &&
	    (f->flags & (MFS_BALANCE_ARGS_USAGE | MFS_BALANCE_ARGS_LIMIT)))
		return false;
	return chunk_selected(fs, &st->args, bg->map, counts);
}

u64 mfs_restripe_new_chunk_stripe(struct mfs_fs_info *fs, u64 flags)
{
	const struct mfs_restripe_status *st = fs->restripe;
	const struct mfs_balance_filter *f;
	bool sel;

	if (!st || st->state == MFS_RESTRIPE_NONE || st->args.op != MFS_RESTRIPE_OP_BALANCE ||
	    (flags & MFS_BLOCK_GROUP_DATA))
		return 0;
	f = filter_for(&st->args, flags, &sel);
	return sel && (f->flags & MFS_BALANCE_ARGS_CONVERT) ? MFS_CONVERT_TREE_CHUNK_STRIPE : 0;
}

/* Logical starts of the selected chunks at or after cursor. */
static int select_chunks(struct mfs_fs_info *fs, const struct mfs_restripe_args *a, u64 cursor,
			 u64 **out, int *nout, u64 *bytes)
{
	u64 counts[3] = { 0, 0, 0 };
	u64 *list;
	int i, n = 0;

	list = calloc(fs->nr_chunks + 1, sizeof(*list));
	if (!list)
		return -ENOMEM;
	*bytes = 0;
	for (i = 0; i < fs->nr_chunks; i++) {
		struct mfs_chunk_map *map = fs->chunks[i];

		if (map->logical < cursor || !chunk_selected(fs, a, map, counts))
			continue;
		list[n++] = map->logical;
		*bytes += mfs_lookup_block_group(fs, map->logical)->used;
	}
	*out = list;
	*nout = n;
	return 0;
}

/* ---------------- checks before anything moves ---------------- */

static int allocatable_devices(struct mfs_fs_info *fs, const struct mfs_restripe_args *a)
{
	int i, j, n = 0;

	for (i = 0; i < fs->nr_devices; i++) {
		bool excl = false;

		if (!mfs_device_allocatable(fs->devices[i]))
			continue;
		for (j = 0; a->op == MFS_RESTRIPE_OP_DELETE && j < a->nr_devids; j++)
			if (fs->devices[i]->devid == a->devids[j])
				excl = true;
		if (!excl)
			n++;
	}
	return n;
}

static const char *type_word(u64 type)
{
	if (type & MFS_BLOCK_GROUP_DATA)
		return "data";
	if (type & MFS_BLOCK_GROUP_SYSTEM)
		return "system";
	return "metadata";
}

/*
 * What a profile below its minimum device count could become on ndev
 * devices, keeping as much of its redundancy as they allow.
 */
static u64 delete_convert_target(u64 profile, bool data, int ndev)
{
	const struct mfs_raid_attr *p = mfs_profile(profile);

	if (ndev >= 3 && p->tolerated_failures >= 2)
		return MFS_BLOCK_GROUP_RAID1C3;
	if (ndev >= 2)
		return data && p->nparity ? MFS_BLOCK_GROUP_RAID5 : MFS_BLOCK_GROUP_RAID1;
	return data ? 0 : MFS_BLOCK_GROUP_DUP;
}

/*
 * A delete leaving ndev devices: refused when a profile in use needs more.
 * The message names the first such profile and suggests the convert that
 * covers every type below its minimum (system follows metadata), with -f
 * when metadata would lose redundancy; <mnt> is for the command to fill in.
 */
static int check_delete_minimum(struct mfs_fs_info *fs, int ndev, char *msg, size_t msglen)
{
	static const char *word[] = { "zero", "one", "two", "three", "four" };
	const struct mfs_raid_attr *first = NULL;
	u64 first_type = 0, dto = 0, mto = 0;
	bool dlow = false, mlow = false, force = false;
	char opts[128];
	int i;

	for (i = 0; i < fs->nr_chunks; i++) {
		u64 type = fs->chunks[i]->type;
		const struct mfs_raid_attr *p = mfs_profile(type);
		bool data = type & MFS_BLOCK_GROUP_DATA;
		u64 to;

		if (ndev >= p->devs_min)
			continue;
		if (!first) {
			first = p;
			first_type = type;
		}
		to = delete_convert_target(type, data, ndev);
		if (data) {
			/* several data profiles below: the least redundant target covers all */
			dto = dlow && mfs_profile(dto)->tolerated_failures < mfs_profile(to)->tolerated_failures ?
			      dto : to;
			dlow = true;
		} else {
			mto = mlow && mfs_profile(mto)->tolerated_failures < mfs_profile(to)->tolerated_failures ?
			      mto : to;
			mlow = true;
			if (mfs_profile(to)->tolerated_failures < p->tolerated_failures)
				force = true;
		}
	}
	if (!first)
		return 0;
	snprintf(opts, sizeof(opts), "%s%s%s%s%s%s", force ? "-f " : "",
		 dlow ? "-dconvert=" : "", dlow ? mfs_profile(dto)->name : "",
		 dlow && mlow ? " " : "", mlow ? "-mconvert=" : "", mlow ? mfs_profile(mto)->name : "");
	snprintf(msg, msglen,
		 "unable to go below %s devices on %s (%s chunks); convert first, e.g. 'mfs balance start %s <mnt>'",
		 first->devs_min < 5 ? word[first->devs_min] : "many", first->ui_name,
		 type_word(first_type), opts);
	return -EINVAL;
}

int mfs_restripe_check_args(struct mfs_fs_info *fs, const struct mfs_restripe_args *a,
			    char *msg, size_t msglen)
{
	int ndev = allocatable_devices(fs, a), i;
	const struct mfs_balance_filter *fl[3] = { &a->data, &a->meta, &a->sys };
	u64 flagbits[3] = { MFS_BALANCE_DATA, MFS_BALANCE_METADATA, MFS_BALANCE_SYSTEM };
	u64 types[3] = { MFS_BLOCK_GROUP_DATA, MFS_BLOCK_GROUP_METADATA, MFS_BLOCK_GROUP_SYSTEM };

	for (i = 0; i < 3 && a->op == MFS_RESTRIPE_OP_BALANCE; i++) {
		const struct mfs_raid_attr *t;

		if (!(a->flags & flagbits[i]) || !(fl[i]->flags & MFS_BALANCE_ARGS_CONVERT))
			continue;
		t = mfs_profile(mfs_filter_bit_to_profile(fl[i]->target));
		if (ndev < t->devs_min) {
			snprintf(msg, msglen,
				 "unable to convert %s to %s: it needs %d devices, the filesystem has %d",
				 type_word(types[i]), t->ui_name, t->devs_min, ndev);
			return -EINVAL;
		}
		if (i == 1 && !(a->flags & MFS_BALANCE_FORCE) &&
		    t->tolerated_failures < mfs_profile(fs->metadata_profile)->tolerated_failures) {
			snprintf(msg, msglen,
				 "converting metadata to %s reduces redundancy, use --force if you want this",
				 t->ui_name);
			return -EINVAL;
		}
	}
	if (a->op == MFS_RESTRIPE_OP_RESIZE) {
		struct mfs_device *dev = a->nr_devids == 1 ? mfs_find_device(fs, a->devids[0]) : NULL;

		if (!dev || dev->missing || !dev->io) {
			snprintf(msg, msglen, "cannot find devid: %llu",
				 (unsigned long long)(a->nr_devids ? a->devids[0] : 0));
			return -ENODEV;
		}
		/* growing is no restripe (mfs_device_grow) */
		if (a->new_size >= dev->total_bytes || a->new_size % SZ_4K) {
			snprintf(msg, msglen, "a shrink needs a new size below the current %llu bytes, in whole 4 KiB",
				 (unsigned long long)dev->total_bytes);
			return -EINVAL;
		}
		if (a->new_size < MFS_MIN_DEVICE_SIZE) {
			snprintf(msg, msglen, "the new size %llu is below the minimum device size %llu",
				 (unsigned long long)a->new_size, (unsigned long long)MFS_MIN_DEVICE_SIZE);
			return -EINVAL;
		}
	}
	if (a->op == MFS_RESTRIPE_OP_DELETE) {
		if (ndev == 0) {
			snprintf(msg, msglen, "unable to remove the only writeable device");
			return -EINVAL;
		}
		/* every profile in use must keep enough devices */
		return check_delete_minimum(fs, ndev, msg, msglen);
	}
	return 0;
}

struct released {
	struct mfs_device *dev;
	u64 physical, length, chunk_offset;
};

struct placed {
	struct mfs_chunk_map *old;
	struct mfs_chunk_map **maps;
	int nmaps;
};

/* Take back a chunk mfs_alloc_chunk made (a simulation's). */
static void unalloc_chunk(struct mfs_fs_info *fs, struct mfs_block_group *bg)
{
	struct mfs_chunk_map *map = bg->map;
	u64 ss = mfs_map_stripe_size(map);
	int i;

	for (i = 0; i < map->num_stripes; i++) {
		mfs_device_remove_extent(map->stripes[i].dev, map->stripes[i].physical);
		map->stripes[i].dev->bytes_used -= min_t(u64, ss, map->stripes[i].dev->bytes_used);
	}
	mfs_remove_chunk_map(fs, map);
	mfs_remove_block_group(fs, bg);
	free(map);
}

/*
 * A conversion sends new tree blocks to the target profile (apply_targets).
 * The chunks it will move take them until then (mfs_restripe_will_move), but
 * while the last of them is copied, a writer of the mounted filesystem
 * needs a chunk of the target, or of a profile as safe: unless one is there,
 * count a small one of the target profile (mfs_restripe_new_chunk_stripe),
 * as the run would make it.
 */
static int simulate_target_chunks(struct mfs_fs_info *fs, const struct mfs_restripe_args *a,
				  struct mfs_block_group **made, int *nmade)
{
	static const u64 types[2] = { MFS_BLOCK_GROUP_METADATA, MFS_BLOCK_GROUP_SYSTEM };
	const struct mfs_balance_filter *f[2] = { &a->meta, &a->sys };
	u64 sel[2] = { MFS_BALANCE_METADATA, MFS_BALANCE_SYSTEM };
	int t, i, ret;

	*nmade = 0;
	for (t = 0; t < 2 && a->op == MFS_RESTRIPE_OP_BALANCE; t++) {
		u64 flags = types[t] | mfs_filter_bit_to_profile(f[t]->target);
		bool have = false;

		if (!(a->flags & sel[t]) || !(f[t]->flags & MFS_BALANCE_ARGS_CONVERT))
			continue;
		/* as find_space: a chunk of the target, or of a profile as safe */
		for (i = 0; i < fs->nr_bgs; i++)
			if ((fs->bgs[i]->flags & MFS_BLOCK_GROUP_TYPE_MASK) == types[t] &&
			    mfs_profile_covers(fs->bgs[i]->flags, flags))
				have = true;
		if (have)
			continue;
		ret = mfs_alloc_chunk(fs, flags, MFS_CONVERT_TREE_CHUNK_STRIPE, &made[*nmade]);
		if (ret == -ENOSPC)
			continue;	/* then tree blocks go to chunks of the old profile */
		if (ret)
			return ret;
		(*nmade)++;
	}
	return 0;
}

/*
 * A data chunk whose new layout finds no room has its extents moved into
 * other chunks instead (evacuate.c), when the operation moves data only
 * where the allocator would put new data: not for a replace (its stripes
 * go to one device).
 */
static bool can_evacuate(const struct mfs_restripe_args *a, const struct mfs_chunk_map *map)
{
	return a->op != MFS_RESTRIPE_OP_REPLACE && (map->type & MFS_BLOCK_GROUP_DATA);
}

static bool in_list(const u64 *list, int n, u64 logical)
{
	int i;

	for (i = 0; i < n; i++)
		if (list[i] == logical)
			return true;
	return false;
}

/*
 * Data of chunks that found no room for a new layout, to be moved into
 * other chunks (evacuate.c): how much, per target profile, and which
 * chunks give it up (they are removed, their room with them).
 */
struct evac_sim {
	u64 flags[MFS_NR_RAID_TYPES];
	u64 bytes[MFS_NR_RAID_TYPES];
	int nflags;
	u64 *gone;
	int ngone;
	u64 first;		/* the first such chunk, for the message */
};

static int evac_add(struct evac_sim *es, u64 flags, const struct mfs_block_group *bg)
{
	u64 *p = realloc(es->gone, (es->ngone + 1) * sizeof(*p));
	int i;

	if (!p)
		return -ENOMEM;
	es->gone = p;
	es->gone[es->ngone++] = bg->start;
	if (es->ngone == 1)
		es->first = bg->start;
	for (i = 0; i < es->nflags && es->flags[i] != flags; i++)
		;
	if (i == es->nflags) {
		es->flags[es->nflags] = flags;
		es->bytes[es->nflags++] = 0;
	}
	es->bytes[i] += bg->used + bg->reserved;
	return 0;
}

/*
 * After the simulated run: does the data to move fit where the allocator
 * would put it - the free room of the data chunks of its profile that
 * remain (relocated ones have the target profile by then), and what the
 * unallocated space (less the devices leaving) gives as new chunks?
 * Order is not simulated: the run itself stops with -ENOSPC, nothing lost,
 * in the rare layout where room comes too late.
 */
static int evac_fits(struct mfs_fs_info *fs, const struct mfs_restripe_args *a,
		     const struct evac_sim *es, const u64 *list, int n, u64 *needed,
		     u64 *available)
{
	u64 *free_space = calloc(fs->nr_devices + 1, sizeof(*free_space));
	bool fits = true;
	int i, j, k, nd = 0;

	if (!free_space)
		return -ENOMEM;
	*needed = *available = 0;
	for (k = 0; k < es->nflags; k++) {
		u64 room = 0;

		for (i = 0; i < fs->nr_bgs; i++) {
			struct mfs_block_group *bg = fs->bgs[i];
			u64 flags = bg->flags;
			bool gone = false;

			for (j = 0; j < es->ngone; j++)
				gone |= es->gone[j] == bg->start;
			if (in_list(list, n, bg->start))
				flags = (bg->flags & MFS_BLOCK_GROUP_TYPE_MASK) |
					target_profile(a, bg->map);
			if (!gone && flags == es->flags[k])
				room += mfs_free_space_total(bg);
		}
		nd = 0;
		for (i = 0; i < fs->nr_devices; i++) {
			struct mfs_device *dev = fs->devices[i];
			u64 used = mfs_device_reserved_bytes(dev->total_bytes);
			bool leaving = false;
			int e;

			for (j = 0; a->op == MFS_RESTRIPE_OP_DELETE && j < a->nr_devids; j++)
				leaving |= dev->devid == a->devids[j];
			if (leaving || !mfs_device_allocatable(dev))
				continue;
			for (e = 0; e < dev->nr_extents; e++)
				used += dev->extents[e].length;
			free_space[nd++] = dev->total_bytes > used ? dev->total_bytes - used : 0;
		}
		room += mfs_simulate_alloc_free(free_space, nd, es->flags[k]);
		fits &= room >= es->bytes[k];
		*needed += es->bytes[k];
		*available += room;
	}
	free(free_space);
	return fits ? 0 : -ENOSPC;
}

/*
 * Place every selected chunk's new layout with the real allocator, in the
 * order the run takes them (empty chunks first, they are only removed),
 * giving back each old layout's places once its chunk is placed - then
 * undo all of it. A data chunk that finds no room is counted to be
 * moved into other chunks instead (evacuate.c), which must then have the
 * room (evac_fits). -ENOSPC (with the raw size of the chunk that found no
 * room in *stuck and its logical start in *stuck_logical; or, for the data
 * to move, evac->short_of_room) when something would not fit.
 */
static int simulate_placement(struct mfs_fs_info *fs, const struct mfs_restripe_args *a,
			      const u64 *list, int n, u64 *stuck, u64 *stuck_logical,
			      struct mfs_restripe_evac_estimate *evac)
{
	struct mfs_block_group *made[2];
	struct evac_sim es = { 0 };
	struct placed *placed;
	struct released *rel;
	u64 excl[MFS_RESTRIPE_MAX_DEVIDS], incompat = fs->incompat_flags;
	int nexcl = 0, nplaced = 0, nrel = 0, nmade = 0, pass, i, j, ret = 0;

	placed = calloc(n + 1, sizeof(*placed));
	rel = calloc((size_t)n * 16 + 1, sizeof(*rel));
	if (!placed || !rel) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; a->op == MFS_RESTRIPE_OP_DELETE && i < a->nr_devids; i++)
		excl[nexcl++] = a->devids[i];
	ret = simulate_target_chunks(fs, a, made, &nmade);
	for (pass = 0; pass < 2 && !ret; pass++) {
		for (i = 0; i < n && !ret; i++) {
			struct mfs_chunk_map *map = mfs_find_chunk(fs, list[i]);
			struct mfs_block_group *bg = mfs_lookup_block_group(fs, list[i]);
			struct placed *p = &placed[nplaced];
			bool empty = bg && bg->used == 0 && bg->reserved == 0;

			if (!map || !bg || map->logical != list[i] || empty != (pass == 0))
				continue;
			if (!empty) {
				u64 flags = (map->type & MFS_BLOCK_GROUP_TYPE_MASK) |
					    target_profile(a, map);
				struct mfs_range *used = NULL;
				int nused = 0;

				ret = mfs_bg_used_ranges(fs, bg, &used, &nused);
				if (!ret)
					ret = mfs_alloc_chunk_at(fs, map, flags, excl, nexcl, used, nused,
								 &p->maps, &p->nmaps);
				free(used);
				/* no room for a new layout: its data may still fit elsewhere */
				if (ret == -ENOSPC && can_evacuate(a, map)) {
					p->maps = NULL;
					p->nmaps = 0;
					ret = evac_add(&es, flags, bg);
				}
				if (ret == -ENOSPC) {
					const struct mfs_raid_attr *t = mfs_profile(flags);
					int nd = allocatable_devices(fs, a);

					if (t->devs_max && nd > t->devs_max)
						nd = t->devs_max;
					nd -= nd % t->devs_increment;
					if (nd < 1)
						nd = 1;
					*stuck = map->length /
						 mfs_nr_data_stripes(flags, nd * t->dev_stripes) *
						 nd * t->dev_stripes;
					*stuck_logical = map->logical;
				}
				if (ret)
					break;
				p->old = map;
				nplaced++;
			}
			/* the old places are free once the chunk has moved */
			for (j = 0; j < map->num_stripes && nrel < n * 16; j++) {
				struct mfs_device *dev = mfs_find_device(fs, map->stripes[j].devid);

				if (!dev || (!empty && p->nmaps == 1 &&
					     mfs_stripe_kept(map, j, p->maps[0])))
					continue;
				if (mfs_device_remove_extent(dev, map->stripes[j].physical))
					continue;
				rel[nrel].dev = dev;
				rel[nrel].physical = map->stripes[j].physical;
				rel[nrel].length = mfs_map_stripe_size(map);
				rel[nrel++].chunk_offset = map->logical;
			}
		}
	}
	if (!ret && es.ngone) {
		ret = evac_fits(fs, a, &es, list, n, &evac->needed, &evac->available);
		if (ret == -ENOSPC) {
			*stuck = 0;
			*stuck_logical = es.first;
			evac->short_of_room = true;
		}
	}
	/* undo: the new places first, then the old ones come back */
	for (i = nplaced - 1; i >= 0; i--)
		mfs_free_chunk_layout(placed[i].maps, placed[i].nmaps, placed[i].old);
	for (i = nrel - 1; i >= 0; i--)
		mfs_device_add_extent(rel[i].dev, rel[i].physical, rel[i].length,
				      rel[i].chunk_offset);
	for (i = nmade - 1; i >= 0; i--)
		unalloc_chunk(fs, made[i]);
	fs->incompat_flags = incompat;
out:
	free(es.gone);
	free(placed);
	free(rel);
	return ret;
}

/* The estimate for what is left of an operation at logical cursor on. */
static int estimate_from(struct mfs_fs_info *fs, const struct mfs_restripe_args *a, u64 cursor,
			 struct mfs_restripe_estimate *est)
{
	struct mfs_device *shrunk = NULL;
	u64 *list, bytes, largest = 0, old_size = 0;
	int n, i, j, ret;

	memset(est, 0, sizeof(*est));
	ret = select_chunks(fs, a, cursor, &list, &n, &bytes);
	if (ret)
		return ret;
	/* a shrink places everything as if the device already had its new size */
	if (a->op == MFS_RESTRIPE_OP_RESIZE && a->nr_devids == 1)
		shrunk = mfs_find_device(fs, a->devids[0]);
	if (shrunk) {
		old_size = shrunk->total_bytes;
		shrunk->total_bytes = min_t(u64, a->new_size, old_size);
	}
	est->chunks = n;
	est->bytes = bytes;
	for (i = 0; i < n; i++) {
		struct mfs_chunk_map *map = mfs_find_chunk(fs, list[i]);
		u64 prof = target_profile(a, map);
		const struct mfs_raid_attr *t = mfs_profile(prof);
		int nd = allocatable_devices(fs, a);
		struct mfs_block_group *bg;
		u64 raw, net, kept = 0;

		if (t->devs_max && nd > t->devs_max)
			nd = t->devs_max;
		nd -= nd % t->devs_increment;
		if (nd < 1)
			nd = 1;
		raw = map->length / mfs_nr_data_stripes(prof, nd * t->dev_stripes) *
		      nd * t->dev_stripes;
		/* an empty chunk is just removed: it only frees space */
		bg = mfs_lookup_block_group(fs, map->logical);
		if (bg && bg->used == 0)
			continue;
		/*
		 * After the swap the chunk takes raw bytes in its new layout, and
		 * its old stripes on the devices that stay are free again; while
		 * it is copied, both are held.
		 */
		for (j = 0; j < map->num_stripes; j++) {
			bool gone = false;
			int k;

			for (k = 0; a->op == MFS_RESTRIPE_OP_DELETE && k < a->nr_devids; k++)
				if (map->stripes[j].devid == a->devids[k])
					gone = true;
			if (!gone)
				kept += mfs_map_stripe_size(map);
		}
		net = raw > kept ? raw - kept : 0;
		est->raw_needed += net;
		/* a delete keeps the stripes on staying devices in place */
		if (!(a->op == MFS_RESTRIPE_OP_DELETE &&
		      prof == (map->type & MFS_BLOCK_GROUP_PROFILE_MASK)))
			largest = max_t(u64, largest, raw - net);
	}
	/* the chunk being copied holds its old and new layout at once */
	est->raw_needed += n ? largest : 0;
	for (i = 0; i < fs->nr_devices; i++) {
		struct mfs_device *dev = fs->devices[i];
		bool excl = false;
		u64 used = 0;
		int e;

		for (j = 0; a->op == MFS_RESTRIPE_OP_DELETE && j < a->nr_devids; j++)
			if (dev->devid == a->devids[j])
				excl = true;
		if (excl || !mfs_device_allocatable(dev))
			continue;
		for (e = 0; e < dev->nr_extents; e++)
			used += dev->extents[e].length;
		used += SZ_1M + (dev->total_bytes > mfs_sb_offset(1) ? SZ_1M : 0);
		if (dev->total_bytes > used)
			est->raw_available += dev->total_bytes - used;
	}
	/*
	 * The sums say how much; whether it fits is decided by placing every
	 * chunk with the allocator itself (a chunk's stripes are contiguous,
	 * so free space in small holes may not do).
	 */
	{
		u64 stuck = 0;

		ret = simulate_placement(fs, a, list, n, &stuck, &est->stuck_logical,
					 &est->evac);
		est->fits = ret == 0;
		if (ret == -ENOSPC) {
			if (est->raw_needed <= est->raw_available) {
				est->holes_too_small = true;
				est->raw_needed = est->raw_available + stuck;
			}
			ret = 0;
		} else if (!ret && est->raw_needed > est->raw_available) {
			est->raw_needed = est->raw_available;
		}
	}
	if (shrunk)
		shrunk->total_bytes = old_size;
	free(list);
	return ret;
}

int mfs_restripe_estimate(struct mfs_fs_info *fs, const struct mfs_restripe_args *a,
			  struct mfs_restripe_estimate *est)
{
	return estimate_from(fs, a, 0, est);
}

/* New chunks follow a conversion at once. */
static void apply_targets(struct mfs_fs_info *fs, const struct mfs_restripe_args *args)
{
	if (args->op != MFS_RESTRIPE_OP_BALANCE)
		return;
	if ((args->flags & MFS_BALANCE_DATA) && (args->data.flags & MFS_BALANCE_ARGS_CONVERT))
		fs->data_profile = mfs_filter_bit_to_profile(args->data.target);
	if ((args->flags & MFS_BALANCE_METADATA) && (args->meta.flags & MFS_BALANCE_ARGS_CONVERT)) {
		fs->metadata_profile = mfs_filter_bit_to_profile(args->meta.target);
		if (!(args->flags & MFS_BALANCE_SYSTEM))
			fs->system_profile = fs->metadata_profile;
	}
	if ((args->flags & MFS_BALANCE_SYSTEM) && (args->sys.flags & MFS_BALANCE_ARGS_CONVERT))
		fs->system_profile = mfs_filter_bit_to_profile(args->sys.target);
}

/* Why an operation that does not fit is refused, for the command to print. */
static void no_space_message(struct mfs_fs_info *fs, const struct mfs_restripe_args *a,
			     const struct mfs_restripe_estimate *est, char *msg, size_t msglen)
{
	struct mfs_chunk_map *map = mfs_find_chunk(fs, est->stuck_logical);
	u64 missing = est->raw_needed > est->raw_available ?
		      est->raw_needed - est->raw_available : 0;

	if (a->op == MFS_RESTRIPE_OP_RESIZE && map) {
		snprintf(msg, msglen,
			 "no enough free space to move what lies past %llu bytes on device %llu: the %s,%s chunk at %llu (%llu bytes) fits nowhere else",
			 (unsigned long long)a->new_size, (unsigned long long)a->devids[0],
			 mfs_bg_type_name(map->type), mfs_profile(map->type)->ui_name,
			 (unsigned long long)map->logical, (unsigned long long)map->length);
	} else if (est->evac.short_of_room) {
		u64 short_by = est->evac.needed - min_t(u64, est->evac.needed, est->evac.available);

		snprintf(msg, msglen, a->op == MFS_RESTRIPE_OP_DELETE ?
			 "not enough space on the remaining devices: %llu bytes needed, %llu available (%llu missing)" :
			 "not enough free space for the data to move: %llu bytes needed, %llu available (%llu missing); nothing was moved",
			 (unsigned long long)est->evac.needed, (unsigned long long)est->evac.available,
			 (unsigned long long)short_by);
	} else if (est->holes_too_small && map) {
		snprintf(msg, msglen,
			 "not enough contiguous free space: the %s,%s chunk at %llu (%llu bytes) finds no holes large enough for its new layout, though %llu bytes are free in all; nothing was moved",
			 mfs_bg_type_name(map->type), mfs_profile(map->type)->ui_name,
			 (unsigned long long)map->logical, (unsigned long long)map->length,
			 (unsigned long long)est->raw_available);
	} else if (a->op == MFS_RESTRIPE_OP_DELETE) {
		snprintf(msg, msglen,
			 "not enough space on the remaining devices: %llu bytes needed, %llu available (%llu missing)",
			 (unsigned long long)est->raw_needed,
			 (unsigned long long)est->raw_available, (unsigned long long)missing);
	} else {
		snprintf(msg, msglen,
			 "not enough free space for the new layouts: %llu bytes needed, %llu available (%llu missing); nothing was moved",
			 (unsigned long long)est->raw_needed,
			 (unsigned long long)est->raw_available, (unsigned long long)missing);
	}
}

/* Another exclusive operation holds the filesystem: say which state it is in. */
static int busy(const struct mfs_restripe_status *st, char *msg, size_t msglen)
{
	snprintf(msg, msglen, "another operation is %s",
		 st->state == MFS_RESTRIPE_PAUSED ? "paused" : "running");
	return -EINPROGRESS;
}

int mfs_restripe_start(struct mfs_fs_info *fs, const struct mfs_restripe_args *args,
		       char *msg, size_t msglen)
{
	struct mfs_restripe_status *st = status(fs);
	struct mfs_restripe_estimate est;
	struct mfs_device *shrunk = NULL;
	u64 *list;
	int ret, n, i;

	msg[0] = 0;
	if (!st)
		return -ENOMEM;
	if (st->state != MFS_RESTRIPE_NONE)
		return busy(st, msg, msglen);
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
		no_space_message(fs, args, &est, msg, msglen);
		return -ENOSPC;
	}
	reset_status(st);
	st->args = *args;
	st->start_time = time(NULL);
	ret = select_chunks(fs, args, 0, &list, &n, &st->bytes_total);
	if (ret)
		return ret;
	st->expected = n;
	free(list);
	st->state = MFS_RESTRIPE_RUNNING;
	apply_targets(fs, args);
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
	ret = persist(fs, false);
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

	ret = select_chunks(fs, &st->args, st->cursor, &list, &n, &st->bytes_total);
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

		ret = estimate_from(fs, &st->args, st->cursor, &est);
		if (ret)
			return ret;
		if (!est.fits)
			return -ENOSPC;
	}
	ret = run_from_cursor(fs);
	if (!ret)
		apply_targets(fs, &st->args);
	return ret;
}

/* ---------------- moving one chunk ---------------- */

static int delete_key(struct mfs_trans_handle *trans, struct mfs_root *root, const struct mfs_key *key)
{
	struct mfs_path path;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_slot(trans, root, key, &path, -1, 1);
	if (ret > 0)
		ret = -EUCLEAN;
	if (ret == 0)
		ret = mfs_del_item(trans, root, &path);
	mfs_release_path(&path);
	return ret;
}

static int replace_chunk_items(struct mfs_trans_handle *trans, struct mfs_chunk_map *old,
			       struct mfs_chunk_map **new, int nnew)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_key key = { MFS_FIRST_CHUNK_TREE_OBJECTID, MFS_CHUNK_ITEM_KEY, old->logical };
	u64 oss = mfs_map_stripe_size(old);
	int i, m, ret;

	ret = delete_key(trans, fs->chunk_root, &key);
	if (ret)
		return ret;
	for (m = 0; m < nnew; m++) {
		u32 size = mfs_chunk_item_size(new[m]->num_stripes);
		u8 *buf = malloc(size);

		if (!buf)
			return -ENOMEM;
		key.offset = new[m]->logical;
		mfs_chunk_map_to_item(fs, new[m], buf);
		ret = mfs_insert_item(trans, fs->chunk_root, &key, buf, size);
		free(buf);
		if (ret)
			return ret;
	}
	for (i = 0; i < old->num_stripes; i++) {
		struct mfs_key dk = { old->stripes[i].devid, MFS_DEV_EXTENT_KEY, old->stripes[i].physical };
		struct mfs_device *dev = mfs_find_device(fs, old->stripes[i].devid);

		ret = delete_key(trans, fs->dev_root, &dk);
		if (ret)
			return ret;
		if (dev) {
			dev->bytes_used -= min_t(u64, oss, dev->bytes_used);
			dev->dirty = true;
		}
	}
	for (m = 0; m < nnew; m++) {
		u64 nss = mfs_map_stripe_size(new[m]);

		for (i = 0; i < new[m]->num_stripes; i++) {
			struct mfs_map_stripe *s = &new[m]->stripes[i];
			struct mfs_key dk = { s->devid, MFS_DEV_EXTENT_KEY, s->physical };
			struct mfs_dev_extent de = {
				.chunk_offset = cpu_to_le64(new[m]->logical),
				.length = cpu_to_le64(nss),
			};

			ret = mfs_insert_item(trans, fs->dev_root, &dk, &de, sizeof(de));
			if (ret)
				return ret;
			s->dev->bytes_used += nss;
			s->dev->dirty = true;
		}
	}
	return 0;
}

/* After the swap is committed the old places may be reused. */
static void release_old_extents(struct mfs_fs_info *fs, struct mfs_chunk_map *old,
				struct mfs_chunk_map **new, int nnew)
{
	int i, m;

	for (i = 0; i < old->num_stripes; i++) {
		struct mfs_device *dev = mfs_find_device(fs, old->stripes[i].devid);
		bool kept = false;

		for (m = 0; m < nnew; m++)
			kept |= mfs_stripe_kept(old, i, new[m]);
		if (dev && !kept)
			mfs_device_remove_extent(dev, old->stripes[i].physical);
	}
}

/* An empty chunk is simply removed: no copy, and its space is free again. */
static int remove_empty_chunk(struct mfs_fs_info *fs, struct mfs_block_group *bg)
{
	struct mfs_chunk_map *map = bg->map;
	struct mfs_trans_handle *trans;
	struct mfs_key key = { bg->start, MFS_BLOCK_GROUP_ITEM_KEY, bg->length };
	int ret;

	ret = mfs_start_transaction(fs, &trans);
	if (ret)
		return ret;
	ret = replace_chunk_items(trans, map, NULL, 0);
	if (!ret)
		ret = delete_key(trans, fs->extent_root, &key);
	if (ret) {
		mfs_end_transaction(trans);
		return ret;
	}
	mfs_remove_chunk_map(fs, map);
	mfs_remove_block_group(fs, bg);
	ret = mfs_commit_transaction(trans);
	if (!ret)
		release_old_extents(fs, map, NULL, 0);
	free(map);
	return ret;
}

/* Whether another data chunk of bg's profile exists. */
static bool other_of_profile(struct mfs_fs_info *fs, const struct mfs_block_group *bg)
{
	int i;

	for (i = 0; i < fs->nr_bgs; i++)
		if (fs->bgs[i] != bg && fs->bgs[i]->flags == bg->flags)
			return true;
	return false;
}

/* Whether bg is the only chunk of its type (data, metadata or system). */
static bool last_of_type(struct mfs_fs_info *fs, const struct mfs_block_group *bg)
{
	int i;

	for (i = 0; i < fs->nr_bgs; i++)
		if (fs->bgs[i] != bg && (fs->bgs[i]->flags & MFS_BLOCK_GROUP_TYPE_MASK) ==
					(bg->flags & MFS_BLOCK_GROUP_TYPE_MASK))
			return false;
	return true;
}

/*
 * Data chunks that became empty (their files deleted, or the writes made
 * during a convert come and gone) go back to the unallocated pool, where
 * any profile can use them, as btrfs's cleaner removes unused block
 * groups. Kept: metadata and system chunks (the space reservation counts
 * on them), the last data chunk of each profile (the profiles present
 * decide the allocation profile at the next mount), and everything while a
 * restripe runs (it removes the empty chunks it meets itself).
 */
int mfs_remove_unused_chunks(struct mfs_fs_info *fs)
{
	int i = 0, ret = 0;

	pthread_mutex_lock(&fs->lock);
	if (fs->fatal_error || fs->open_rows ||
	    (fs->restripe && fs->restripe->state == MFS_RESTRIPE_RUNNING))
		goto out;
	while (!ret && i < fs->nr_bgs) {
		struct mfs_block_group *bg = fs->bgs[i];

		if (!(bg->flags & MFS_BLOCK_GROUP_DATA) || (bg->flags & MFS_BLOCK_GROUP_METADATA) ||
		    bg->used || bg->pinned || bg->reserved || bg->inflight || bg->ro ||
		    bg->new_chunk || !other_of_profile(fs, bg)) {
			i++;
			continue;
		}
		/* the commit it makes may allocate: make sure nothing goes there */
		bg->ro = true;
		ret = mfs_commit_if_dirty(fs);
		if (!ret && (bg->used || bg->reserved || bg->pinned)) {
			bg->ro = false;
			i++;
			continue;
		}
		if (!ret)
			ret = remove_empty_chunk(fs, bg);	/* bgs[i] is the next one now */
		else
			bg->ro = false;
	}
out:
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

/*
 * A copy of the old layout that failed: counted against its device (the
 * relocation leaves it behind; a kept stripe waits for scrub). raid5/6
 * rebuilds (mirror > 1) say nothing about one device.
 */
static void count_bad_copy(struct mfs_fs_info *fs, struct mfs_chunk_map *old, u64 logical,
			   int mirror, int stat)
{
	struct mfs_device *dev;

	if (mfs_profile(old->type)->nparity && mirror > 1)
		return;
	dev = mfs_mirror_device(old, logical, mirror);
	if (dev)
		mfs_dev_count_error(fs, dev, stat);
}

/* Read range r from the old layout, picking a copy whose checksums hold. */
static int read_good(struct mfs_fs_info *fs, struct mfs_chunk_map *old, const struct mfs_range *r,
		     const u8 *csums, u8 *buf)
{
	int copies = mfs_num_copies(old), m, ret = -EIO, stat;
	u64 s, n;

	if (r->flags & MFS_EXTENT_FLAG_TREE_BLOCK) {
		struct mfs_tree_check chk = { .level = r->level, .owner = r->owner,
					      .transid = r->gen };

		for (m = 1; m <= copies; m++) {
			if (mfs_read_map(old, r->start, buf, r->len, m)) {
				count_bad_copy(fs, old, r->start, m, MFS_DEV_STAT_READ_ERRS);
				continue;
			}
			if (!mfs_verify_tree_block(fs, buf, r->start, &chk, &stat))
				return 0;
			count_bad_copy(fs, old, r->start, m, stat);
		}
		return -EUCLEAN;
	}
	if (mfs_read_map(old, r->start, buf, r->len, 1))
		memset(buf, 0, r->len), ret = -EIO;
	else
		ret = 0;
	if (!csums)
		return ret == -EIO ? mfs_read_map(old, r->start, buf, r->len, 2) : 0;
	n = r->len / SECTOR;
	for (s = 0; s < n; s++) {
		u8 got[MFS_CSUM_SIZE];
		u8 *sb = buf + s * SECTOR;
		const u8 *want = csums + s * fs->csum_size;
		bool ok = false;

		mfs_csum_compute(fs->csum_type, sb, SECTOR, got);
		if (ret == 0 && !memcmp(got, want, fs->csum_size))
			continue;
		count_bad_copy(fs, old, r->start + s * SECTOR, 1,
			       ret ? MFS_DEV_STAT_READ_ERRS : MFS_DEV_STAT_CORRUPTION_ERRS);
		for (m = 2; m <= copies && !ok; m++) {
			if (mfs_read_map(old, r->start + s * SECTOR, sb, SECTOR, m)) {
				count_bad_copy(fs, old, r->start + s * SECTOR, m, MFS_DEV_STAT_READ_ERRS);
				continue;
			}
			mfs_csum_compute(fs->csum_type, sb, SECTOR, got);
			ok = !memcmp(got, want, fs->csum_size);
			if (!ok)
				count_bad_copy(fs, old, r->start + s * SECTOR, m,
					       MFS_DEV_STAT_CORRUPTION_ERRS);
		}
		if (!ok)
			return -EIO;
	}
	return 0;
}

static int extent_csums(struct mfs_fs_info *fs, const struct mfs_range *r, u8 **out)
{
	struct mfs_key key = { MFS_EXTENT_CSUM_OBJECTID, MFS_EXTENT_CSUM_KEY, r->start };
	struct mfs_path path;
	int ret;

	*out = NULL;
	if (!(r->flags & MFS_EXTENT_FLAG_DATA) || !fs->csum_root)
		return 0;
	mfs_init_path(&path);
	ret = mfs_search_slot(NULL, fs->csum_root, &key, &path, 0, 0);
	if (ret == 0 && leaf_item_size(path.nodes[0], path.slots[0]) ==
			r->len / SECTOR * fs->csum_size) {
		*out = malloc(r->len / SECTOR * fs->csum_size);
		if (*out)
			memcpy(*out, leaf_item_data(path.nodes[0], path.slots[0]),
			       r->len / SECTOR * fs->csum_size);
	}
	mfs_release_path(&path);
	return ret < 0 ? ret : 0;
}

/*
 * The copy streams. The used ranges of the next RESTRIPE_READAHEAD bytes
 * are asked of the devices ahead of the reads. The new layout is built in
 * memory a window of rows at a time: a row gives each stripe stripe_len
 * bytes at the same place, so a window is one large write per stripe,
 * bypassing the page cache. A thread writes one window while the next is
 * filled, so reading and writing overlap.
 */
#define RESTRIPE_READAHEAD	SZ_32M
#define RESTRIPE_WINDOW		(16 * SZ_1M)	/* all stripes of a window */

/*
 * Start reading what mirror 1 of map reads for logical [start, end): the
 * pieces each device holds, contiguous ones asked for at once (raid5/6
 * parity, and the other copies of mirrors, are left out).
 */
static void readahead_span(struct mfs_chunk_map *map, u64 start, u64 end)
{
	u64 from[map->num_stripes], to[map->num_stripes], n;
	int i;

	memset(to, 0, sizeof(to));
	for (; start < end; start += n) {
		struct mfs_io_map io;

		if (mfs_map_block(map, start, &io))
			break;
		n = min_t(u64, io.length, end - start);
		i = io.stripe[0];
		if (to[i] != io.physical[0]) {
			if (to[i] && map->stripes[i].dev && map->stripes[i].dev->io)
				mfs_io_readahead(map->stripes[i].dev->io, from[i], to[i] - from[i]);
			from[i] = io.physical[0];
		}
		to[i] = io.physical[0] + n;
	}
	for (i = 0; i < map->num_stripes; i++)
		if (to[i] && map->stripes[i].dev && map->stripes[i].dev->io)
			mfs_io_readahead(map->stripes[i].dev->io, from[i], to[i] - from[i]);
}

/* Read ahead the ranges from *next on that start below limit, near neighbours merged. */
static void readahead_ranges(struct mfs_chunk_map *map, const struct mfs_range *r, int n,
			     int *next, u64 limit)
{
	int i = *next;

	while (i < n && r[i].start < limit) {
		u64 start = r[i].start, end = r[i].start + r[i].len;

		for (i++; i < n && r[i].start < limit && r[i].start <= end + SZ_1M; i++)
			end = max_t(u64, end, r[i].start + r[i].len);
		readahead_span(map, start, end);
	}
	*next = i;
}

struct window {
	u8 *buf;		/* per stripe, rows_max * stripe_len bytes */
	u64 row0, rows;		/* holds rows [row0, row0 + rows) */
};

struct chunk_writer {
	struct mfs_chunk_map *map;
	u64 rows_max;		/* rows per window */
	struct window win[2];
	int cur;		/* the window being filled */
	struct window *writing;	/* the other one, while the thread writes it */
	const u8 *keep;		/* per stripe: already holds the data, not written (or NULL) */
	pthread_t thread;
	int ret;		/* of the last window written */
	u64 unflushed;		/* bytes per stripe written since the last flush */
};

/* Where stripe i's part of row lies in the window. */
static u8 *slot(struct chunk_writer *w, struct window *win, int i, u64 row)
{
	return win->buf + (i * w->rows_max + (row - win->row0)) * w->map->stripe_len;
}

/* P (and Q) of every row of the window, from its data columns. */
static int window_parity(struct chunk_writer *w, struct window *win)
{
	struct mfs_chunk_map *map = w->map;
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	int ndata = map->num_stripes - a->nparity, d, ret = 0;
	u64 slen = map->stripe_len, row;
	void *blocks[map->num_stripes];

	for (row = win->row0; !ret && row < win->row0 + win->rows; row++) {
		struct mfs_io_map io;

		for (d = 0; d < ndata && !ret; d++) {
			ret = mfs_map_block(map, map->logical + (row * ndata + d) * slen, &io);
			blocks[d] = slot(w, win, io.stripe[0], row);
		}
		if (ret)
			break;
		blocks[ndata] = slot(w, win, io.p_stripe, row);
		if (a->nparity > 1)
			blocks[ndata + 1] = slot(w, win, io.q_stripe, row);
		ret = mfs_raid56_gen(ndata, a->nparity, slen, blocks);
	}
	return ret;
}

/* One stripe's part of the window being written: one large write. */
struct stripe_write {
	struct chunk_writer *w;
	int i, ret;
	pthread_t thread;
};

static void *write_stripe_part(void *arg)
{
	struct stripe_write *sw = arg;
	struct chunk_writer *w = sw->w;
	struct window *win = w->writing;
	struct mfs_map_stripe *s = &w->map->stripes[sw->i];
	u64 slen = w->map->stripe_len;

	sw->ret = s->dev && s->dev->io ?
		  mfs_io_write_direct(s->dev->io, slot(w, win, sw->i, win->row0), win->rows * slen,
				      s->physical + win->row0 * slen) : -EIO;
	return NULL;
}

/*
 * The devices the writer writes (stripes not kept), flushed in parallel.
 * Every RESTRIPE_FLUSH_EVERY bytes per stripe, so that no flush has a
 * whole chunk to write back: while a device flushes, every other request
 * to it waits (a loop device syncs its backing file), a user's file write
 * included. The flush when the copy ends (copy_pieces) and the commit's
 * then find little left.
 */
#define RESTRIPE_FLUSH_EVERY	(32 * SZ_1M)

static int flush_written(struct mfs_chunk_map **maps, int nmaps, const u8 *keep)
{
	int m, i, j, n = 0, total = 0;

	for (m = 0; m < nmaps; m++)
		total += maps[m]->num_stripes;

	struct mfs_io_dev *io[total ? total : 1];

	for (m = 0; m < nmaps; m++)
		for (i = 0; i < maps[m]->num_stripes; i++) {
			struct mfs_device *dev = maps[m]->stripes[i].dev;

			if (!dev || !dev->io || (keep && keep[i]))
				continue;
			for (j = 0; j < n && io[j] != dev->io; j++)
				;
			if (j == n)
				io[n++] = dev->io;
		}
	return mfs_flush_io_devices(io, n);
}

/* Parity, then every stripe's part at once: the devices write in parallel. */
static void *write_window(void *arg)
{
	struct chunk_writer *w = arg;
	struct mfs_chunk_map *map = w->map;
	struct stripe_write sw[map->num_stripes];
	bool started[map->num_stripes];
	int i, n = map->num_stripes, ret = 0;

	if (mfs_profile(map->type)->nparity)
		ret = window_parity(w, w->writing);
	if (ret)
		n = 0;
	for (i = n - 1; i >= 0; i--) {	/* stripe 0 here, the others in threads */
		sw[i] = (struct stripe_write){ .w = w, .i = i };
		started[i] = false;
		if (w->keep && w->keep[i])
			continue;
		started[i] = i > 0 && !pthread_create(&sw[i].thread, NULL, write_stripe_part, &sw[i]);
		if (!started[i])
			write_stripe_part(&sw[i]);
	}
	for (i = 0; i < n; i++) {
		if (started[i])
			pthread_join(sw[i].thread, NULL);
		if (sw[i].ret && !ret)
			ret = sw[i].ret;
	}
	w->unflushed += w->writing->rows * map->stripe_len;
	if (!ret && w->unflushed >= RESTRIPE_FLUSH_EVERY) {
		ret = flush_written(&w->map, 1, w->keep);
		w->unflushed = 0;
	}
	w->ret = ret;
	return NULL;
}

/* Wait for the window being written; its result. */
static int writer_wait(struct chunk_writer *w)
{
	if (w->writing) {
		pthread_join(w->thread, NULL);
		w->writing = NULL;
	}
	return w->ret;
}

/* Hand the filled window to a thread (or write it here) and start the other. */
static int writer_flush(struct chunk_writer *w)
{
	int ret = writer_wait(w);

	if (ret || !w->win[w->cur].rows)
		return ret;
	w->writing = &w->win[w->cur];
	if (pthread_create(&w->thread, NULL, write_window, w)) {
		write_window(w);
		w->writing = NULL;
	}
	w->cur ^= 1;
	w->win[w->cur].rows = 0;
	return w->writing ? 0 : w->ret;
}

/*
 * Place logical [logical, +len) of the new layout. Rows come in order;
 * a row is never split between windows, and rows left out (no data) are
 * not written at all. Bytes of a row that no range covers are zeros.
 */
static int writer_put(struct chunk_writer *w, u64 logical, const u8 *buf, u64 len)
{
	struct mfs_chunk_map *map = w->map;
	u64 slen = map->stripe_len;

	while (len) {
		struct window *win = &w->win[w->cur];
		struct mfs_io_map io;
		u64 in_stripe, row, cnt;
		int i, ret = mfs_map_block(map, logical, &io);

		if (ret)
			return ret;
		in_stripe = io.physical[0] - map->stripes[io.stripe[0]].physical;
		row = in_stripe / slen;
		cnt = min_t(u64, min_t(u64, len, io.length), slen - in_stripe % slen);
		if (win->rows && row < win->row0 + win->rows - 1)
			return -EINVAL;		/* out of order */
		if (win->rows && (row > win->row0 + win->rows ||
				  (row == win->row0 + win->rows && win->rows == w->rows_max))) {
			ret = writer_flush(w);
			if (ret)
				return ret;
			win = &w->win[w->cur];
		}
		if (!win->rows)
			win->row0 = row;
		if (row == win->row0 + win->rows) {
			for (i = 0; i < map->num_stripes; i++)
				memset(slot(w, win, i, row), 0, slen);
			win->rows++;
		}
		for (i = 0; i < io.ncopies; i++)
			memcpy(slot(w, win, io.stripe[i], row) + in_stripe % slen, buf, cnt);
		logical += cnt;
		buf += cnt;
		len -= cnt;
	}
	return 0;
}

/*
 * Where a relocation reads and which stripes it writes. read is old with
 * its stripes in the order to try (a replace reads the source first, or
 * last with -r); old is read as it is when that fails. keep: stripes of
 * the new layout that already hold the data (NULL: write them all).
 */
struct copy_plan {
	struct mfs_chunk_map *old, *read;
	const u8 *keep;
};

/*
 * One used range into the new layout, RESTRIPE_PIECE bytes at a time, so
 * the copy needs one buffer of that size whatever the extents on disk say.
 * mfs writes no data extent larger (data.c max_extent_size); a range read
 * from another image may be.
 */
#define RESTRIPE_PIECE		(4 * SZ_1M)

static int copy_range(struct mfs_fs_info *fs, const struct copy_plan *plan,
		      struct chunk_writer *w, const struct mfs_range *r, const u8 *csums, u8 *buf)
{
	struct mfs_restripe_status *st = fs->restripe;
	u64 off, cnt;
	int ret = 0;

	for (off = 0; off < r->len && !ret; off += cnt) {
		struct mfs_range piece = *r;
		const u8 *sums = csums ? csums + off / SECTOR * fs->csum_size : NULL;

		/* a tree block is read whole: its checksum covers all of it */
		cnt = r->flags & MFS_EXTENT_FLAG_TREE_BLOCK ? r->len :
		      min_t(u64, r->len - off, RESTRIPE_PIECE);
		piece.start += off;
		piece.len = cnt;
		ret = read_good(fs, plan->read, &piece, sums, buf);
		if (ret && plan->read != plan->old)
			ret = read_good(fs, plan->old, &piece, sums, buf);
		if (ret == -EIO || ret == -EUCLEAN)
			__atomic_add_fetch(&st->read_errs, 1, __ATOMIC_RELAXED);
		if (!ret)
			ret = writer_put(w, piece.start, buf, cnt);
		if (!ret)
			__atomic_add_fetch(&st->bytes_done, cnt, __ATOMIC_RELAXED);
	}
	return ret;
}

/*
 * Copy every used range of the chunk into the new layout (raid5/6 rows
 * whole, each written once), reading each range with read_good.
 */
static int copy_chunk(struct mfs_fs_info *fs, const struct copy_plan *plan,
		      struct mfs_chunk_map *new, struct mfs_range *r, u8 **csums, int n)
{
	struct mfs_restripe_status *st = fs->restripe;
	u64 slen = new->stripe_len, ra_limit = 0;
	struct chunk_writer w = { .map = new, .keep = plan->keep };
	int i, ra_next = 0, ret = 0, err;
	u8 *buf;

	w.rows_max = max_t(u64, 1, RESTRIPE_WINDOW / (new->num_stripes * slen));
	for (i = 0; i < 2; i++) {
		w.win[i].buf = aligned_alloc(MFS_IO_DIRECT_ALIGN, new->num_stripes * w.rows_max * slen);
		if (!w.win[i].buf)
			ret = -ENOMEM;
	}
	buf = malloc(RESTRIPE_PIECE);
	if (!buf)
		ret = -ENOMEM;
	for (i = 0; i < n && !ret; i++) {
		if (r[i].start + RESTRIPE_READAHEAD / 2 >= ra_limit) {
			ra_limit = r[i].start + RESTRIPE_READAHEAD;
			readahead_ranges(plan->read, r, n, &ra_next, ra_limit);
		}
		/*
		 * The checksums are looked up as the copy reaches each extent,
		 * the lock held only for that: file operations of a live
		 * filesystem wait for one lookup, not for a whole chunk's. The
		 * chunk takes no new extents, so an item found at the extent's
		 * start is that extent's (one freed meanwhile has none left).
		 */
		pthread_mutex_lock(&fs->lock);
		ret = extent_csums(fs, &r[i], &csums[i]);
		pthread_mutex_unlock(&fs->lock);
		if (!ret)
			ret = copy_range(fs, plan, &w, &r[i], csums[i], buf);
	}
	if (!ret)
		ret = writer_flush(&w);
	err = writer_wait(&w);
	if (w.ret)
		__atomic_add_fetch(&st->write_errs, 1, __ATOMIC_RELAXED);
	free(w.win[0].buf);
	free(w.win[1].buf);
	free(buf);
	return ret ?: err;
}

/*
 * The chunk went into several pieces: in memory, its map and block group
 * give way to one per piece, with the used bytes of the extents each
 * holds (no extent straddles a cut); on disk its block group item goes
 * and the pieces' are written with this transaction (they are dirty).
 */
static int swap_in_pieces(struct mfs_trans_handle *trans, struct mfs_block_group *bg,
			  struct mfs_chunk_map *old, struct mfs_chunk_map **new, int nnew)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_key key = { bg->start, MFS_BLOCK_GROUP_ITEM_KEY, bg->length };
	struct mfs_range *r = NULL;
	u64 used[nnew];
	int nr = 0, i, m, ret;

	ret = mfs_bg_used_ranges(fs, bg, &r, &nr);
	if (ret)
		return ret;
	memset(used, 0, sizeof(used));
	for (i = 0, m = 0; i < nr; i++) {
		while (m < nnew && r[i].start >= new[m]->logical + new[m]->length)
			m++;
		if (m == nnew || r[i].start + r[i].len > new[m]->logical + new[m]->length) {
			free(r);
			return -EUCLEAN;	/* cut through an extent: never placed so */
		}
		used[m] += r[i].len;
	}
	free(r);
	mfs_remove_chunk_map(fs, old);
	mfs_remove_block_group(fs, bg);
	for (m = 0; m < nnew; m++) {
		struct mfs_block_group *piece;

		ret = mfs_add_chunk_map(fs, new[m]);
		if (!ret)
			ret = mfs_add_block_group(fs, new[m], used[m], false, &piece);
		if (ret)
			return ret;
		piece->dirty = true;
		ret = mfs_rebuild_bg_space(fs, piece);
		if (ret)
			return ret;
	}
	ret = delete_key(trans, fs->extent_root, &key);
	if (!ret)
		ret = replace_chunk_items(trans, old, new, nnew);
	return ret;
}

/* Copy each piece's share of the used ranges (sorted) into it. */
static int copy_pieces(struct mfs_fs_info *fs, const struct copy_plan *plan,
		       struct mfs_chunk_map **new, int nnew, struct mfs_range *r, u8 **csums, int n)
{
	int m, first = 0, ret = 0;

	for (m = 0; m < nnew && !ret; m++) {
		int last = first;

		while (last < n && r[last].start < new[m]->logical + new[m]->length)
			last++;
		ret = copy_chunk(fs, plan, new[m], r + first, csums + first, last - first);
		first = last;
	}
	/*
	 * What the devices still hold goes to stable storage now, before the
	 * lock is taken for the swap: the commit under the lock, which
	 * flushes every device again, then finds nothing left to write back.
	 */
	return ret ?: flush_written(new, nnew, plan->keep);
}

/*
 * Replace: old's layout with each stripe on device `from` moved to the
 * smallest hole on device `to` that holds it; the other stripes stay.
 * Recorded in memory like mfs_alloc_chunk_at's layouts.
 */
static int replace_layout(struct mfs_fs_info *fs, const struct mfs_chunk_map *old, u64 from,
			  u64 to, struct mfs_chunk_map ***out, int *nout)
{
	struct mfs_device *tgt = mfs_find_device(fs, to);
	u64 ss = mfs_map_stripe_size(old), phys;
	struct mfs_chunk_map **maps, *new;
	int i, ret = 0;

	if (!tgt || !tgt->io)
		return -ENODEV;
	maps = calloc(1, sizeof(*maps));
	new = mfs_alloc_chunk_map(old->num_stripes);
	if (!maps || !new) {
		free(maps);
		free(new);
		return -ENOMEM;
	}
	memcpy(new, old, sizeof(*old) + old->num_stripes * sizeof(old->stripes[0]));
	maps[0] = new;
	for (i = 0; i < new->num_stripes && !ret; i++) {
		struct mfs_map_stripe *s = &new->stripes[i];

		if (s->devid != from)
			continue;
		ret = mfs_device_best_fit(tgt, ss, &phys);
		if (!ret)
			ret = mfs_device_add_extent(tgt, phys, ss, old->logical);
		if (ret)
			break;
		s->devid = to;
		s->physical = phys;
		s->dev = tgt;
		memcpy(s->dev_uuid, tgt->uuid, MFS_UUID_SIZE);
	}
	if (ret) {
		mfs_free_chunk_layout(maps, 1, old);
		return ret;
	}
	*out = maps;
	*nout = 1;
	return 0;
}

/*
 * The order a replace reads old in: within each set of mirrors, the
 * stripes on `from` first - or last with -r, and then, for parity
 * profiles, not at all (the data is rebuilt; old itself is read if
 * that fails).
 */
static struct mfs_chunk_map *replace_read_map(const struct mfs_chunk_map *old, u64 from,
					      bool others_first)
{
	const struct mfs_raid_attr *a = mfs_profile(old->type);
	struct mfs_chunk_map *r = mfs_alloc_chunk_map(old->num_stripes);
	int group = a->sub_stripes > 1 ? a->sub_stripes : a->ncopies > 1 ? old->num_stripes : 1;
	int g, i, j;

	if (!r)
		return NULL;
	memcpy(r, old, sizeof(*old) + old->num_stripes * sizeof(old->stripes[0]));
	if (a->nparity) {
		for (i = 0; others_first && i < r->num_stripes; i++)
			if (r->stripes[i].devid == from)
				r->stripes[i].dev = NULL;
		return r;
	}
	for (g = 0; group > 1 && g + group <= r->num_stripes; g += group) {
		int n = 0;

		/* a stable partition of the group: the preferred stripes first */
		for (j = 0; j < 2; j++)
			for (i = g; i < g + group; i++)
				if ((old->stripes[i].devid == from) == (j == (others_first ? 1 : 0)))
					r->stripes[g + n++] = old->stripes[i];
	}
	return r;
}

/*
 * No room for the chunk's new layout: its data moves into other chunks
 * (those of the target profile first, new ones as needed), then the empty
 * chunk goes. Called and returns with fs->lock held.
 */
static int evacuate_chunk(struct mfs_fs_info *fs, struct mfs_block_group *bg)
{
	struct mfs_restripe_status *st = fs->restripe;
	u64 start = bg->start, length = bg->length;
	int ret = mfs_evacuate_block_group(fs, bg, &st->bytes_done);

	if (!ret) {
		/* the tests' hook runs where a relocation's copy ends, lock or not */
		pthread_mutex_unlock(&fs->lock);
		test_delay();
		pthread_mutex_lock(&fs->lock);
	}
	bg = mfs_lookup_block_group(fs, start);
	if (!bg || bg->start != start)
		return ret ? ret : -ENOENT;
	if (!ret)
		ret = remove_empty_chunk(fs, bg);
	if (ret) {
		bg->ro = false;
		return ret;
	}
	st->completed++;
	/* passed; persisted with the next progress save */
	if (st->cursor < start + length)
		st->cursor = start + length;
	return 0;
}

static int relocate_chunk(struct mfs_fs_info *fs, u64 logical)
{
	struct mfs_restripe_status *st = fs->restripe;
	struct mfs_chunk_map *old, **new = NULL;
	struct mfs_block_group *bg;
	struct mfs_trans_handle *trans;
	struct mfs_range *ranges = NULL;
	struct copy_plan plan = { NULL, NULL, NULL };
	u8 **csums = NULL, *keep = NULL;
	u64 excl[MFS_RESTRIPE_MAX_DEVIDS];
	int nexcl = 0, nnew = 0, n = 0, i, ret;
	bool replace = st->args.op == MFS_RESTRIPE_OP_REPLACE;
	/* a copy that does not finish counts for nothing: the chunk is copied again */
	u64 flags, done_before = __atomic_load_n(&st->bytes_done, __ATOMIC_RELAXED);

	pthread_mutex_lock(&fs->lock);
	old = mfs_find_chunk(fs, logical);
	bg = mfs_lookup_block_group(fs, logical);
	if (!old || !bg || old->logical != logical) {
		pthread_mutex_unlock(&fs->lock);
		return 0;	/* gone meanwhile */
	}
	if (st->args.op == MFS_RESTRIPE_OP_DELETE)
		for (i = 0; i < st->args.nr_devids; i++)
			excl[nexcl++] = st->args.devids[i];
	flags = (old->type & MFS_BLOCK_GROUP_TYPE_MASK) | target_profile(&st->args, old);
	/*
	 * Get what is pending onto disk, then take no new allocations here.
	 * In this order: the commit may need tree blocks, and with the chunk
	 * already read-only the only metadata chunk could not give them - a
	 * second one would be allocated, which may leave no room for the new
	 * layout. The lock is held throughout, so nothing allocates between.
	 */
	ret = mfs_commit_if_dirty(fs);
	if (ret) {
		pthread_mutex_unlock(&fs->lock);
		return ret;
	}
	bg->ro = true;
	/*
	 * Writers may still be filling extents they reserved here before: wait
	 * until their items are in (the wait drops the lock), then commit
	 * those too, so the extent tree lists everything to copy.
	 */
	if (bg->inflight) {
		while (bg->inflight)
			pthread_cond_wait(&fs->inflight_done, &fs->lock);
		ret = mfs_commit_if_dirty(fs);
		if (ret) {
			bg->ro = false;
			pthread_mutex_unlock(&fs->lock);
			return ret;
		}
	}
	if (bg->used == 0 && bg->reserved == 0 && !last_of_type(fs, bg)) {
		/*
		 * Relocated by removing it: it counts, as in btrfs. The last
		 * chunk of its type is relocated as any other (an empty copy):
		 * the profiles present decide the allocation profile at the
		 * next mount, so removing it would forget a convert.
		 */
		ret = remove_empty_chunk(fs, bg);
		if (!ret)
			st->completed++;
		pthread_mutex_unlock(&fs->lock);
		return ret;
	}
	/* the extents first: a layout in pieces is cut between them */
	ret = mfs_bg_used_ranges(fs, bg, &ranges, &n);
	if (!ret && replace)
		ret = replace_layout(fs, old, st->args.devids[0], st->args.devids[1], &new, &nnew);
	else if (!ret)
		ret = mfs_alloc_chunk_at(fs, old, flags, excl, nexcl, ranges, n, &new, &nnew);
	if (ret == -ENOSPC && can_evacuate(&st->args, old)) {
		free(ranges);
		ranges = NULL;
		n = 0;
		ret = evacuate_chunk(fs, bg);
		pthread_mutex_unlock(&fs->lock);
		return ret;
	}
	if (ret)
		goto fail_locked;
	plan.old = plan.read = old;
	if (replace) {
		plan.read = replace_read_map(old, st->args.devids[0],
					     st->args.flags & MFS_BALANCE_REPLACE_READ_OTHERS);
		if (!plan.read)
			ret = -ENOMEM;
	}
	/* without parity a stripe left in place holds its data already: not written */
	if (!ret && nnew == 1 && !mfs_profile(old->type)->nparity &&
	    !mfs_profile(new[0]->type)->nparity) {
		keep = calloc(new[0]->num_stripes, 1);
		if (!keep)
			ret = -ENOMEM;
		for (i = 0; !ret && i < new[0]->num_stripes; i++)
			keep[i] = mfs_stripe_holds_old(old, new[0], i);
		plan.keep = keep;
	}
	csums = calloc(n + 1, sizeof(*csums));	/* filled by the copy */
	if (!csums)
		ret = -ENOMEM;
	pthread_mutex_unlock(&fs->lock);

	/* the copy runs without the lock: the chunk only loses extents meanwhile */
	if (!ret)
		ret = copy_pieces(fs, &plan, new, nnew, ranges, csums, n);
	if (!ret)
		test_delay();

	pthread_mutex_lock(&fs->lock);
	if (ret)
		goto fail_new;
	ret = mfs_start_transaction(fs, &trans);
	if (ret)
		goto fail_new;
	/*
	 * Swap in memory first: the tree changes below may allocate, and the
	 * chunk (now in its new layout) can take them, so relocating the only
	 * metadata chunk needs no second one. The commit makes it all durable
	 * at once - one chunk or all its pieces; a failed commit leaves the
	 * filesystem read-only.
	 */
	st->cursor = logical + old->length;
	st->completed++;
	if (nnew == 1) {
		mfs_replace_chunk_map(fs, old, new[0]);
		bg->map = new[0];
		ret = mfs_rebuild_bg_space(fs, bg);
		bg->ro = false;
		if (!ret)
			ret = replace_chunk_items(trans, old, new, 1);
		/* the block group item records the profile */
		if ((old->type & MFS_BLOCK_GROUP_PROFILE_MASK) !=
		    (new[0]->type & MFS_BLOCK_GROUP_PROFILE_MASK))
			bg->dirty = true;
	} else {
		ret = swap_in_pieces(trans, bg, old, new, nnew);
	}
	bg = NULL;	/* freed by a swap in pieces */
	if (!ret)
		ret = write_item(trans, st, false);
	if (ret) {
		mfs_end_transaction(trans);
		goto out_locked;
	}
	ret = mfs_commit_transaction(trans);
	if (!ret) {
		release_old_extents(fs, old, new, nnew);
		free(old);
	}
	goto out_locked;
fail_new:
	mfs_free_chunk_layout(new, nnew, old);
	new = NULL;
fail_locked:
	bg->ro = false;
	__atomic_store_n(&st->bytes_done, done_before, __ATOMIC_RELAXED);
out_locked:
	pthread_mutex_unlock(&fs->lock);
	free(new);
	for (i = 0; csums && i < n; i++)
		free(csums[i]);
	free(csums);
	free(ranges);
	if (plan.read != plan.old)
		free(plan.read);
	free(keep);
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
 * an ordinary member.
 */
static int drop_devices(struct mfs_fs_info *fs, struct mfs_trans_handle *trans,
			struct mfs_device **gone, int *ngone)
{
	struct mfs_restripe_status *st = fs->restripe;
	int i, j, ret, ndrop = st->args.nr_devids;

	*ngone = 0;
	if (st->args.op == MFS_RESTRIPE_OP_REPLACE) {
		struct mfs_device *stays = mfs_find_device(fs, st->args.devids[1]);

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
		ret = delete_key(trans, fs->chunk_root, &key);
		if (ret)
			return ret;
		if (fs->dev_root)
			delete_key(trans, fs->dev_root, &skey);
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
	return 0;
}

static int finish(struct mfs_fs_info *fs)
{
	struct mfs_restripe_status *st = fs->restripe;
	struct mfs_device *gone[MFS_RESTRIPE_MAX_DEVIDS];
	struct mfs_trans_handle *trans;
	int i, ngone = 0, ret;

	ret = mfs_start_transaction(fs, &trans);
	if (ret)
		return ret;
	ret = delete_item(trans);
	if (!ret && (st->args.op == MFS_RESTRIPE_OP_DELETE || st->args.op == MFS_RESTRIPE_OP_REPLACE))
		ret = drop_devices(fs, trans, gone, &ngone);
	if (ret) {
		mfs_end_transaction(trans);
		return ret;
	}
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

/* Tenths of a percent of the bytes moved. */
static u64 progress(const struct mfs_restripe_status *st)
{
	if (!st->bytes_total)
		return 1000;
	return min_t(u64, 1000, st->bytes_done * 1000 / st->bytes_total);
}

/* A replace ended: what `replace status` says afterwards. */
static void note_replace_end(struct mfs_restripe_status *st)
{
	bool cancelled = st->args.flags & MFS_BALANCE_REPLACE_CANCELLING;

	if (st->args.op != MFS_RESTRIPE_OP_REPLACE)
		return;
	st->last_replace.outcome = cancelled ? MFS_REPLACE_CANCELED : MFS_REPLACE_FINISHED;
	st->last_replace.start_time = st->start_time;
	st->last_replace.end_time = time(NULL);
	st->last_replace.progress = cancelled ? st->cancel_progress : 1000;
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
			total += bg->used + bg->reserved;
	}
	st->bytes_total = total;
}

static int run_once(struct mfs_fs_info *fs)
{
	struct mfs_restripe_status *st = fs->restripe;
	u64 *list = NULL, *all = NULL, *alen = NULL, bytes;
	bool *removed = NULL;
	int n = 0, nall = 0, i, j, ret;

	st->start_ns = now_ns();
	st->bytes_at_start = st->bytes_done;
	pthread_mutex_lock(&fs->lock);
	ret = select_chunks(fs, &st->args, st->cursor, &list, &n, &bytes);
	/* every chunk from the cursor on is considered, as btrfs counts them */
	if (!ret) {
		all = calloc(fs->nr_chunks + 1, sizeof(*all));
		alen = calloc(fs->nr_chunks + 1, sizeof(*alen));
		if (!all || !alen)
			ret = -ENOMEM;
		for (i = 0; !ret && i < fs->nr_chunks; i++) {
			if (fs->chunks[i]->logical < st->cursor)
				continue;
			all[nall] = fs->chunks[i]->logical;
			alen[nall++] = fs->chunks[i]->length;
		}
	}
	pthread_mutex_unlock(&fs->lock);
	/*
	 * Empty chunks first: removing them is free and makes room for the
	 * rest. They count as considered here, not again below. (The last
	 * chunk of a type is copied, not removed: it waits for its turn.)
	 */
	removed = calloc(n + 1, sizeof(*removed));
	if (!ret && !removed)
		ret = -ENOMEM;
	for (j = 0; !ret && j < n && !st->cancel_req && !st->pause_req; j++) {
		struct mfs_block_group *bg;
		bool empty;

		pthread_mutex_lock(&fs->lock);
		bg = mfs_lookup_block_group(fs, list[j]);
		empty = bg && bg->start == list[j] && bg->used == 0 && bg->reserved == 0 &&
			!last_of_type(fs, bg);
		pthread_mutex_unlock(&fs->lock);
		if (!empty)
			continue;
		ret = relocate_chunk(fs, list[j]);
		removed[j] = !ret;
		pthread_mutex_lock(&fs->lock);
		if (!ret)
			st->considered++;
		pthread_mutex_unlock(&fs->lock);
	}
	for (i = 0, j = 0; !ret && i < nall; i++) {
		if (st->cancel_req) {
			ret = -ECANCELED;
			break;
		}
		if (st->pause_req) {
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
		if (j < n && list[j] == all[i]) {
			ret = relocate_chunk(fs, list[j++]);
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
	if (ret == 0) {
		ret = finish(fs);
		if (!ret) {
			note_replace_end(st);
			st->state = MFS_RESTRIPE_NONE;
		}
	} else if (ret == -ECANCELED) {
		ret = mfs_restripe_cancel_paused(fs) ?: -ECANCELED;
	} else {
		/* paused or failed: the state stays on disk for resume */
		st->state = MFS_RESTRIPE_PAUSED;
		persist(fs, true);
	}
	st->last_result = ret;
	st->pause_req = st->cancel_req = 0;
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

int mfs_restripe_run(struct mfs_fs_info *fs)
{
	struct mfs_restripe_status *st = fs->restripe;
	int ret;

	if (!st || st->state != MFS_RESTRIPE_RUNNING)
		return -ENOENT;
	/* a cancelled replace goes on, the other way (mfs_restripe_cancel_paused) */
	do {
		ret = run_once(fs);
	} while (ret == -ECANCELED && st->state == MFS_RESTRIPE_RUNNING);
	return ret;
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
	u64 tmp;
	int ret;

	if (!(st->args.flags & MFS_BALANCE_REPLACE_CANCELLING)) {
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
	ret = persist(fs, false);
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
	if (ret) {
		mfs_end_transaction(trans);
		return ret;
	}
	ret = mfs_commit_transaction(trans);
	if (!ret) {
		st->state = MFS_RESTRIPE_NONE;
		/* no target any more: the profiles the chunks have decide again */
		mfs_init_alloc_profiles(fs);
	}
	return ret;
}

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

int mfs_device_add(struct mfs_fs_info *fs, const char *path, u64 *devid_out)
{
	struct mfs_trans_handle *trans;
	struct mfs_device *dev;
	struct mfs_io_dev *io;
	int ret;

	ret = mfs_io_open(path, true, true, &io);
	if (ret)
		return ret;
	if (io->size < MFS_MIN_DEVICE_SIZE) {
		mfs_io_close(io);
		return -ENOSPC;
	}
	ret = join_device(fs, io, path, 0, &dev);
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

int mfs_replace_start(struct mfs_fs_info *fs, const char *path, u64 srcid, u64 flags,
		      bool discard, char *msg, size_t msglen)
{
	struct mfs_restripe_status *st = status(fs);
	struct mfs_device *src, *tgt;
	struct mfs_io_dev *io;
	u64 *list, size;
	int ret, n, i;

	msg[0] = 0;
	if (!st)
		return -ENOMEM;
	if (st->state != MFS_RESTRIPE_NONE)
		return busy(st, msg, msglen);
	src = mfs_find_device(fs, srcid);
	if (!src) {
		snprintf(msg, msglen, "'%llu' is not a valid devid for this filesystem",
			 (unsigned long long)srcid);
		return -ENODEV;
	}
	if (src->missing || !src->io) {
		snprintf(msg, msglen,
			 "source device %llu is missing: rebuilding it needs a read-write degraded mount, which mfs does not have yet",
			 (unsigned long long)srcid);
		return -ENXIO;
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
	reset_status(st);
	st->args.op = MFS_RESTRIPE_OP_REPLACE;
	st->args.flags = MFS_BALANCE_DATA | MFS_BALANCE_METADATA | MFS_BALANCE_SYSTEM |
			 (flags & MFS_BALANCE_REPLACE_READ_OTHERS);
	st->args.nr_devids = 2;
	st->args.devids[0] = srcid;
	st->args.devids[1] = tgt->devid;
	st->start_time = time(NULL);
	ret = select_chunks(fs, &st->args, 0, &list, &n, &st->bytes_total);
	if (ret) {
		unjoin_device(fs, tgt);
		return ret;
	}
	free(list);
	st->expected = n;
	st->state = MFS_RESTRIPE_RUNNING;
	/* from this commit on, the source takes no new chunks */
	src->flags |= MFS_DEV_STATE_REPLACE_SOURCE;
	src->dirty = true;
	ret = persist(fs, false);
	if (ret) {
		/* the commit failed: the filesystem is read-only now */
		st->state = MFS_RESTRIPE_NONE;
		src->flags &= ~MFS_DEV_STATE_REPLACE_SOURCE;
	}
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
