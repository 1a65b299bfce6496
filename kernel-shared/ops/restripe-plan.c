/*
 * Planning a restripe before anything moves: which chunks it selects, the
 * checks of its arguments, and a simulated placement of every chunk that
 * says whether the new layouts (or the evacuated extents) fit, with the
 * estimate of the bytes to move.
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

u64 rs_target_profile(const struct mfs_restripe_args *a, const struct mfs_chunk_map *map)
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
	if ((f->flags & MFS_BALANCE_ARGS_REDUCED) && !bg->reduced)
		return false;
	/* a chunk written reduced is below what was asked for, whatever its profile */
	if ((f->flags & MFS_BALANCE_ARGS_CONVERT) && (f->flags & MFS_BALANCE_ARGS_SOFT) &&
	    profile == mfs_filter_bit_to_profile(f->target) && !bg->reduced)
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
int rs_select_chunks(struct mfs_fs_info *fs, const struct mfs_restripe_args *a, u64 cursor,
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
		 "unable to go below %s devices on %s (%s chunks): %d would remain; convert first, e.g. 'mfs balance start %s <mnt>'",
		 first->devs_min < 5 ? word[first->devs_min] : "many", first->ui_name,
		 type_word(first_type), ndev, opts);
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
 * Degraded, the tree blocks every commit of the run writes cannot go into
 * a chunk with a missing stripe (alloc.c): if every chunk of the type has
 * one, the first commit makes a new chunk, as the allocator would (the
 * profile asked for, its usual size). 0 when there is no need.
 */
static u64 degraded_tree_chunk(struct mfs_fs_info *fs, u64 type)
{
	int i;

	if (!mfs_fs_degraded(fs))
		return 0;
	for (i = 0; i < fs->nr_bgs; i++)
		if ((fs->bgs[i]->flags & MFS_BLOCK_GROUP_TYPE_MASK) == type &&
		    !mfs_chunk_degraded(fs->bgs[i]->map) && mfs_free_space_total(fs->bgs[i]))
			return 0;
	return type | mfs_target_profile(fs, type);
}

/*
 * A conversion sends new tree blocks to the target profile (apply_targets).
 * The chunks it will move take them until then (mfs_restripe_will_move), but
 * while the last of them is copied, a writer of the mounted filesystem
 * needs a chunk of the target, or of a profile as safe: unless one is there,
 * count a small one of the target profile (mfs_restripe_new_chunk_stripe),
 * as the run would make it. Degraded, with no chunk of the type writable,
 * the one the first commit makes (degraded_tree_chunk).
 */
static int simulate_target_chunks(struct mfs_fs_info *fs, const struct mfs_restripe_args *a,
				  struct mfs_block_group **made, int *nmade)
{
	static const u64 types[2] = { MFS_BLOCK_GROUP_METADATA, MFS_BLOCK_GROUP_SYSTEM };
	const struct mfs_balance_filter *f[2] = { &a->meta, &a->sys };
	u64 sel[2] = { MFS_BALANCE_METADATA, MFS_BALANCE_SYSTEM };
	int t, i, ret;

	*nmade = 0;
	for (t = 0; t < 2; t++) {
		u64 flags = types[t] | mfs_filter_bit_to_profile(f[t]->target);
		bool have = false;

		if (a->op != MFS_RESTRIPE_OP_BALANCE || !(a->flags & sel[t]) ||
		    !(f[t]->flags & MFS_BALANCE_ARGS_CONVERT)) {
			flags = degraded_tree_chunk(fs, types[t]);
			if (flags) {
				ret = mfs_alloc_chunk(fs, flags, 0, &made[*nmade]);
				if (ret && ret != -ENOSPC)
					return ret;
				*nmade += !ret;
			}
			continue;
		}
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
bool rs_can_evacuate(const struct mfs_restripe_args *a, const struct mfs_chunk_map *map)
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
					rs_target_profile(a, bg->map);
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
 * The raw size a chunk found no room for: its length in the new profile,
 * striped over as many of the devices it may use as the profile takes.
 */
static u64 stuck_raw_size(struct mfs_fs_info *fs, const struct mfs_restripe_args *a,
			  const struct mfs_chunk_map *map, u64 flags)
{
	const struct mfs_raid_attr *t = mfs_profile(flags);
	int nd = allocatable_devices(fs, a);

	if (t->devs_max && nd > t->devs_max)
		nd = t->devs_max;
	nd -= nd % t->devs_increment;
	if (nd < 1)
		nd = 1;
	return map->length / mfs_nr_data_stripes(flags, nd * t->dev_stripes) *
	       nd * t->dev_stripes;
}

/*
 * Take a placed chunk's old places off their devices, noting each in rel
 * (up to max entries) to give back at the undo; the stripes the new
 * layout kept (kept: that layout, or NULL) stay. Returns the new count.
 */
static int release_old_places(struct mfs_fs_info *fs, const struct mfs_chunk_map *map,
			      const struct mfs_chunk_map *kept, struct released *rel, int nrel,
			      int max)
{
	int j;

	for (j = 0; j < map->num_stripes && nrel < max; j++) {
		struct mfs_device *dev = mfs_find_device(fs, map->stripes[j].devid);

		if (!dev || (kept && mfs_stripe_kept(map, j, kept)))
			continue;
		if (mfs_device_remove_extent(dev, map->stripes[j].physical))
			continue;
		rel[nrel].dev = dev;
		rel[nrel].physical = map->stripes[j].physical;
		rel[nrel].length = mfs_map_stripe_size(map);
		rel[nrel++].chunk_offset = map->logical;
	}
	return nrel;
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
	int nexcl = 0, nplaced = 0, nrel = 0, nmade = 0, pass, i, ret = 0;

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
					    rs_target_profile(a, map);
				struct mfs_range *used = NULL;
				int nused = 0;

				ret = mfs_bg_used_ranges(fs, bg, &used, &nused);
				if (!ret)
					ret = mfs_alloc_chunk_at(fs, map, flags, excl, nexcl, used, nused,
								 &p->maps, &p->nmaps);
				free(used);
				/* no room for a new layout: its data may still fit elsewhere */
				if (ret == -ENOSPC && rs_can_evacuate(a, map)) {
					p->maps = NULL;
					p->nmaps = 0;
					ret = evac_add(&es, flags, bg);
				}
				if (ret == -ENOSPC) {
					*stuck = stuck_raw_size(fs, a, map, flags);
					*stuck_logical = map->logical;
				}
				if (ret)
					break;
				p->old = map;
				nplaced++;
			}
			/* the old places are free once the chunk has moved */
			nrel = release_old_places(fs, map, !empty && p->nmaps == 1 ? p->maps[0] : NULL,
						  rel, nrel, n * 16);
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
/* Is devid one the delete a takes away? */
static bool deleting(const struct mfs_restripe_args *a, u64 devid)
{
	int k;

	for (k = 0; a->op == MFS_RESTRIPE_OP_DELETE && k < a->nr_devids; k++)
		if (devid == a->devids[k])
			return true;
	return false;
}

/* The unallocated bytes of the devices that stay and take new chunks. */
static u64 raw_available(struct mfs_fs_info *fs, const struct mfs_restripe_args *a)
{
	u64 avail = 0;
	int i, e;

	for (i = 0; i < fs->nr_devices; i++) {
		struct mfs_device *dev = fs->devices[i];
		u64 used = 0;

		if (deleting(a, dev->devid) || !mfs_device_allocatable(dev))
			continue;
		for (e = 0; e < dev->nr_extents; e++)
			used += dev->extents[e].length;
		used += SZ_1M + (dev->total_bytes > mfs_sb_offset(1) ? SZ_1M : 0);
		if (dev->total_bytes > used)
			avail += dev->total_bytes - used;
	}
	return avail;
}

/*
 * The sums say how much; whether it fits is decided by placing every
 * chunk with the allocator itself (a chunk's stripes are contiguous, so
 * free space in small holes may not do). est->fits, and the figures made
 * to agree with it.
 */
static int decide_fit(struct mfs_fs_info *fs, const struct mfs_restripe_args *a,
		      const u64 *list, int n, struct mfs_restripe_estimate *est)
{
	u64 stuck = 0;
	int ret = simulate_placement(fs, a, list, n, &stuck, &est->stuck_logical, &est->evac);

	est->fits = ret == 0;
	if (ret == -ENOSPC) {
		if (est->raw_needed <= est->raw_available) {
			est->holes_too_small = true;
			est->raw_needed = est->raw_available + stuck;
		}
		return 0;
	}
	if (!ret && est->raw_needed > est->raw_available)
		est->raw_needed = est->raw_available;
	return ret;
}

int rs_estimate_from(struct mfs_fs_info *fs, const struct mfs_restripe_args *a, u64 cursor,
			 struct mfs_restripe_estimate *est)
{
	struct mfs_device *shrunk = NULL;
	u64 *list, bytes, largest = 0, old_size = 0;
	int n, i, j, ret;

	memset(est, 0, sizeof(*est));
	ret = rs_select_chunks(fs, a, cursor, &list, &n, &bytes);
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
		u64 prof = rs_target_profile(a, map);
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
		for (j = 0; j < map->num_stripes; j++)
			if (!deleting(a, map->stripes[j].devid))
				kept += mfs_map_stripe_size(map);
		net = raw > kept ? raw - kept : 0;
		est->raw_needed += net;
		/* a delete keeps the stripes on staying devices in place */
		if (!(a->op == MFS_RESTRIPE_OP_DELETE &&
		      prof == (map->type & MFS_BLOCK_GROUP_PROFILE_MASK)))
			largest = max_t(u64, largest, raw - net);
	}
	/* the chunk being copied holds its old and new layout at once */
	est->raw_needed += n ? largest : 0;
	est->raw_available = raw_available(fs, a);
	ret = decide_fit(fs, a, list, n, est);
	if (shrunk)
		shrunk->total_bytes = old_size;
	free(list);
	return ret;
}

int mfs_restripe_estimate(struct mfs_fs_info *fs, const struct mfs_restripe_args *a,
			  struct mfs_restripe_estimate *est)
{
	return rs_estimate_from(fs, a, 0, est);
}

/* New chunks follow a conversion at once. */
void rs_apply_targets(struct mfs_fs_info *fs, const struct mfs_restripe_args *args)
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
void rs_no_space_message(struct mfs_fs_info *fs, const struct mfs_restripe_args *a,
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
