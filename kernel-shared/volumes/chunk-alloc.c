/*
 * Chunk allocation: placing a new chunk's stripes on the devices, the
 * same simulated for space figures, and the layouts a restripe builds
 * beside the live map (DESIGN §4, §5).
 */
#include <stdlib.h>
#include <string.h>
#include "kernel-shared/volumes/fs.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/block/raid56.h"

/* ---------------- chunk allocation ---------------- */

struct dev_hole {
	struct mfs_device *dev;
	u64 start;
	u64 len;
};

static int cmp_hole_desc(const void *a, const void *b)
{
	const struct dev_hole *x = a, *y = b;

	if (x->len != y->len)
		return x->len < y->len ? 1 : -1;
	return x->dev->devid < y->dev->devid ? -1 : 1;
}

static u64 fs_writable_size(struct mfs_fs_info *fs)
{
	u64 total = 0;
	int i;

	for (i = 0; i < fs->nr_devices; i++)
		if (mfs_device_allocatable(fs->devices[i]))
			total += fs->devices[i]->total_bytes;
	return total;
}

static u64 chunk_policy_max_stripe(struct mfs_fs_info *fs, u64 flags)
{
	if (flags & MFS_BLOCK_GROUP_SYSTEM)
		return SZ_32M;
	if (flags & MFS_BLOCK_GROUP_DATA)
		return SZ_1G;
	return fs_writable_size(fs) > 50 * SZ_1G ? SZ_1G : SZ_256M;
}

/* Bytes the system chunks take in the superblock's bootstrap array. */
static u64 sys_array_used(struct mfs_fs_info *fs)
{
	u64 used = 0;
	int i;

	for (i = 0; i < fs->nr_chunks; i++)
		if (fs->chunks[i]->type & MFS_BLOCK_GROUP_SYSTEM)
			used += sizeof(struct mfs_disk_key) +
				mfs_chunk_item_size(fs->chunks[i]->num_stripes);
	return used;
}

static u64 next_chunk_logical(struct mfs_fs_info *fs)
{
	u64 start = SZ_1M;

	if (fs->nr_chunks) {
		struct mfs_chunk_map *last = fs->chunks[fs->nr_chunks - 1];

		start = round_up(last->logical + last->length, SZ_1M);
	}
	return start;
}

/* Give back the dev extents of map's stripes, stripe_size bytes each. */
static void unplace_stripes(struct mfs_chunk_map *map, u64 stripe_size)
{
	int i;

	for (i = 0; i < map->num_stripes; i++) {
		struct mfs_map_stripe *s = &map->stripes[i];

		mfs_device_remove_extent(s->dev, s->physical);
		s->dev->bytes_used -= stripe_size;
	}
}

/* Each allocatable device's largest hole that can take a stripe, largest first. */
static int gather_max_holes(struct mfs_fs_info *fs, const struct mfs_raid_attr *a,
			    struct dev_hole *holes)
{
	int ndevs = 0, i;

	for (i = 0; i < fs->nr_devices; i++) {
		struct mfs_device *dev = fs->devices[i];
		u64 start, len;

		if (!mfs_device_allocatable(dev))
			continue;
		len = mfs_device_max_hole(dev, &start);
		if (len < MFS_MIN_STRIPE_SIZE * a->dev_stripes)
			continue;
		holes[ndevs].dev = dev;
		holes[ndevs].start = start;
		holes[ndevs].len = len;
		ndevs++;
	}
	qsort(holes, ndevs, sizeof(*holes), cmp_hole_desc);
	return ndevs;
}

/*
 * The stripe size of a new chunk over holes[0..ndevs): what the smallest
 * hole takes, up to max_stripe (0: the policy's), no chunk larger than a
 * tenth of the filesystem, in whole MFS_CHUNK_ALIGN. 0: too small.
 *
 * With a member missing or failing, also no stripe larger than a tenth of
 * its device: the chunks made then lie on fewer devices, where few data
 * stripes carry many copies (raid6 on three devices writes each byte three
 * times), and a tenth of the filesystem would take a third of each device
 * for a nearly empty metadata chunk, leaving an interrupted balance or
 * delete no room to go on once the member is back.
 */
static u64 new_stripe_size(struct mfs_fs_info *fs, u64 flags, u64 max_stripe,
			   const struct dev_hole *holes, int ndevs, int ndata)
{
	const struct mfs_raid_attr *a = mfs_profile(flags);
	u64 stripe_size, max_logical, dev_cap;
	int i;

	if (!max_stripe)
		max_stripe = chunk_policy_max_stripe(fs, flags);
	stripe_size = min_t(u64, max_stripe, holes[ndevs - 1].len / a->dev_stripes);
	max_logical = max_t(u64, fs_writable_size(fs) / 10, MFS_MIN_STRIPE_SIZE);
	if (stripe_size * ndata > max_logical)
		stripe_size = max_logical / ndata;
	for (i = 0; (mfs_fs_degraded(fs) || mfs_fs_has_failing(fs)) && i < ndevs; i++) {
		dev_cap = max_t(u64, holes[i].dev->total_bytes / 10 / a->dev_stripes,
				MFS_MIN_STRIPE_SIZE);
		stripe_size = min_t(u64, stripe_size, dev_cap);
	}
	stripe_size = round_down(stripe_size, MFS_CHUNK_ALIGN);
	return stripe_size < MFS_MIN_STRIPE_SIZE ? 0 : stripe_size;
}

/* Record the dev extents of map's stripes; none on failure. */
static int place_stripes(struct mfs_chunk_map *map, u64 stripe_size)
{
	int i, ret;

	for (i = 0; i < map->num_stripes; i++) {
		struct mfs_map_stripe *s = &map->stripes[i];

		ret = mfs_device_add_extent(s->dev, s->physical, stripe_size, map->logical);
		if (ret) {
			while (--i >= 0) {
				mfs_device_remove_extent(map->stripes[i].dev,
							 map->stripes[i].physical);
				map->stripes[i].dev->bytes_used -= stripe_size;
			}
			return ret;
		}
		s->dev->bytes_used += stripe_size;
	}
	return 0;
}

int mfs_place_chunk(struct mfs_fs_info *fs, u64 flags, u64 max_stripe,
		    struct mfs_chunk_map **out)
{
	const struct mfs_raid_attr *a = mfs_profile(flags);
	struct dev_hole *holes;
	struct mfs_chunk_map *map;
	u64 stripe_size;
	int ndevs, i, j, num_stripes, ndata, ret = -ENOSPC;

	holes = calloc(fs->nr_devices, sizeof(*holes));
	if (!holes)
		return -ENOMEM;
	ndevs = gather_max_holes(fs, a, holes);
	if (a->devs_max && ndevs > a->devs_max)
		ndevs = a->devs_max;
	ndevs -= ndevs % a->devs_increment;
	if (ndevs < a->devs_min)
		goto out;
	num_stripes = ndevs * a->dev_stripes;
	ndata = mfs_nr_data_stripes(flags, num_stripes);
	/* a system chunk the superblock cannot list could never be committed */
	if ((flags & MFS_BLOCK_GROUP_SYSTEM) &&
	    sys_array_used(fs) + sizeof(struct mfs_disk_key) +
	    mfs_chunk_item_size(num_stripes) > MFS_SYSTEM_CHUNK_ARRAY_SIZE)
		goto out;
	stripe_size = new_stripe_size(fs, flags, max_stripe, holes, ndevs, ndata);
	if (!stripe_size)
		goto out;
	map = mfs_alloc_chunk_map(num_stripes);
	if (!map) {
		ret = -ENOMEM;
		goto out;
	}
	map->logical = next_chunk_logical(fs);
	map->length = stripe_size * ndata;
	map->type = flags;
	map->stripe_len = MFS_STRIPE_LEN;
	map->num_stripes = num_stripes;
	map->sub_stripes = a->sub_stripes;
	for (i = 0; i < ndevs; i++) {
		for (j = 0; j < a->dev_stripes; j++) {
			struct mfs_map_stripe *s = &map->stripes[i * a->dev_stripes + j];

			s->dev = holes[i].dev;
			s->devid = holes[i].dev->devid;
			s->physical = holes[i].start + j * stripe_size;
			memcpy(s->dev_uuid, holes[i].dev->uuid, MFS_UUID_SIZE);
		}
	}
	ret = place_stripes(map, stripe_size);
	if (!ret) {
		ret = mfs_add_chunk_map(fs, map);
		if (ret)
			unplace_stripes(map, stripe_size);
	}
	if (ret)
		free(map);
	else
		*out = map;
out:
	free(holes);
	return ret;
}

void mfs_unplace_chunk(struct mfs_fs_info *fs, struct mfs_chunk_map *map)
{
	mfs_remove_chunk_map(fs, map);
	unplace_stripes(map, mfs_map_stripe_size(map));
	free(map);
}

static int cmp_u64_desc(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

u64 mfs_simulate_alloc_free(u64 *free_space, int n, u64 flags)
{
	const struct mfs_raid_attr *a = mfs_profile(flags);
	u64 total = 0;
	int i;

	/* holes are used in whole MiBs */
	for (i = 0; i < n; i++)
		free_space[i] = round_down(free_space[i], MFS_CHUNK_ALIGN);
	for (;;) {
		int ndevs = 0, ndata;
		u64 stripe;

		/* the most free devices first, as mfs_alloc_chunk orders holes */
		qsort(free_space, n, sizeof(*free_space), cmp_u64_desc);
		while (ndevs < n && free_space[ndevs] >= MFS_MIN_STRIPE_SIZE * a->dev_stripes)
			ndevs++;
		if (a->devs_max && ndevs > a->devs_max)
			ndevs = a->devs_max;
		ndevs -= ndevs % a->devs_increment;
		if (ndevs == 0 || ndevs < a->devs_min)
			break;
		stripe = min_t(u64, free_space[ndevs - 1] / a->dev_stripes, SZ_1G);
		stripe = round_down(stripe, MFS_CHUNK_ALIGN);
		ndata = mfs_nr_data_stripes(flags, ndevs * a->dev_stripes);
		total += stripe * ndata;
		for (i = 0; i < ndevs; i++)
			free_space[i] -= stripe * a->dev_stripes;
	}
	return total;
}

u64 mfs_simulate_alloc(struct mfs_fs_info *fs, u64 flags)
{
	const struct mfs_raid_attr *a = mfs_profile(flags);
	u64 *free_space, total;
	int n = 0, i;

	free_space = calloc(fs->nr_devices + 1, sizeof(*free_space));
	if (!free_space)
		return 0;
	/*
	 * only holes a stripe fits in: chunks removed between others leave
	 * fragments that the space reservation must not count on (a dup
	 * metadata chunk needs both its stripes in one hole)
	 */
	for (i = 0; i < fs->nr_devices; i++)
		if (mfs_device_allocatable(fs->devices[i]))
			free_space[n++] = mfs_device_usable_free(fs->devices[i],
								 MFS_MIN_STRIPE_SIZE * a->dev_stripes);
	total = mfs_simulate_alloc_free(free_space, n, flags);
	free(free_space);
	return total;
}

/* ---------------- restripe support: chunks built beside the live map ---------------- */

static bool devid_excluded(u64 devid, const u64 *excl, int nexcl)
{
	int i;

	for (i = 0; i < nexcl; i++)
		if (excl[i] == devid)
			return true;
	return false;
}

int mfs_layout_for_length(u64 flags, u64 length, const u64 *hole_len, int nholes,
			  u64 *stripe)
{
	const struct mfs_raid_attr *a = mfs_profile(flags);
	int n = a->devs_max ? min_t(int, nholes, a->devs_max) : nholes;

	for (; n >= a->devs_min && n > 0; n--) {
		int num_stripes, ndata;
		u64 s;

		if (n % a->devs_increment)
			continue;
		num_stripes = n * a->dev_stripes;
		ndata = mfs_nr_data_stripes(flags, num_stripes);
		if (length % ndata)
			continue;
		s = length / ndata;
		if ((a->nparity || a->sub_stripes > 1 || (a->ncopies == 1 && num_stripes > 1)) &&
		    s % MFS_STRIPE_LEN)
			continue;
		if (hole_len[n - 1] < s * a->dev_stripes)
			continue;
		*stripe = s;
		return n;
	}
	return -ENOSPC;
}

/*
 * A new layout of type|profile for the logical range [logical, +length),
 * on devices not in excl. Its dev extents are recorded in memory; the map
 * is not added to the chunk table (the caller swaps it in).
 */
static bool stripe_dev_in(const struct mfs_chunk_map *map, int upto, const struct mfs_device *dev)
{
	int i;

	for (i = 0; i < upto; i++)
		if (map->stripes[i].dev == dev)
			return true;
	return false;
}

/*
 * Stripe k of map (one of `stripe` bytes) on the allocatable device not in
 * excl with the most room, best fit there; a profile of one stripe per
 * device skips the devices the map already uses. The dev extent is
 * recorded in memory.
 */
static int place_stripe(struct mfs_fs_info *fs, struct mfs_chunk_map *map, int k, u64 stripe,
			const u64 *excl, int nexcl)
{
	bool distinct = mfs_profile(map->type)->dev_stripes == 1;
	struct mfs_map_stripe *st = &map->stripes[k];
	struct mfs_device *best = NULL;
	u64 best_hole = 0, start = 0;
	int d, ret;

	for (d = 0; d < fs->nr_devices; d++) {
		struct mfs_device *dev = fs->devices[d];
		u64 hole;

		if (!mfs_device_allocatable(dev) || devid_excluded(dev->devid, excl, nexcl))
			continue;
		if (distinct && stripe_dev_in(map, map->num_stripes, dev))
			continue;
		hole = mfs_device_max_hole(dev, NULL);
		if (hole >= stripe && hole > best_hole) {
			best = dev;
			best_hole = hole;
		}
	}
	if (!best || mfs_device_best_fit(best, stripe, &start))
		return -ENOSPC;
	ret = mfs_device_add_extent(best, start, stripe, map->logical);
	if (ret)
		return ret;
	st->dev = best;
	st->devid = best->devid;
	st->physical = start;
	memcpy(st->dev_uuid, best->uuid, MFS_UUID_SIZE);
	return 0;
}

/*
 * Same profile, some devices leaving: stripes on the devices that stay
 * stay where they are; only the others get new places. Much less moves,
 * and it fits where a whole new layout would not.
 */
static int alloc_keeping_stripes(struct mfs_fs_info *fs, const struct mfs_chunk_map *old,
				 const u64 *excl, int nexcl, struct mfs_chunk_map **out)
{
	u64 stripe = old->length / mfs_nr_data_stripes(old->type, old->num_stripes);
	struct mfs_chunk_map *map;
	int i, added = 0, ret = 0;

	map = mfs_alloc_chunk_map(old->num_stripes);
	if (!map)
		return -ENOMEM;
	memcpy(map, old, sizeof(*old) + old->num_stripes * sizeof(old->stripes[0]));
	for (i = 0; i < map->num_stripes && !ret; i++) {
		struct mfs_map_stripe *st = &map->stripes[i];

		if (st->dev && !devid_excluded(st->devid, excl, nexcl))
			continue;
		ret = place_stripe(fs, map, i, stripe, excl, nexcl);
		if (ret)
			break;
		added |= 1 << i;
	}
	if (ret) {
		for (i = 0; i < map->num_stripes; i++)
			if (added & (1 << i))
				mfs_device_remove_extent(map->stripes[i].dev, map->stripes[i].physical);
		free(map);
		return ret;
	}
	*out = map;
	return 0;
}

/* Profiles whose every stripe is a whole copy of the chunk: single, DUP, RAID1, RAID1C3/4. */
static bool whole_copies(u64 flags)
{
	const struct mfs_raid_attr *a = mfs_profile(flags);

	return a->devs_max && !a->nparity;
}

/*
 * A convert between profiles of whole copies (raid1 to raid1c3, raid1c4
 * to raid1, single to raid1...): the copies already on distinct devices
 * that stay are kept in place, the missing ones go to the devices with the
 * most room. Only the new copies need writing, and only their space.
 * -ENOSPC when no copy can be kept or a new one finds no room.
 */
static int alloc_keeping_copies(struct mfs_fs_info *fs, const struct mfs_chunk_map *old, u64 flags,
				const u64 *excl, int nexcl, struct mfs_chunk_map **out)
{
	const struct mfs_raid_attr *a = mfs_profile(flags);
	u64 stripe = old->length;
	struct mfs_chunk_map *map;
	int i, k = 0, first_new, ret = 0;

	map = mfs_alloc_chunk_map(a->devs_max);
	if (!map)
		return -ENOMEM;
	map->logical = old->logical;
	map->length = old->length;
	map->type = flags;
	map->stripe_len = old->stripe_len;
	map->num_stripes = a->devs_max;
	map->sub_stripes = a->sub_stripes;
	for (i = 0; i < old->num_stripes && k < map->num_stripes; i++) {
		const struct mfs_map_stripe *st = &old->stripes[i];

		if (st->dev && !st->dev->missing && st->dev->io &&
		    !devid_excluded(st->devid, excl, nexcl) && !stripe_dev_in(map, k, st->dev))
			map->stripes[k++] = *st;
	}
	if (!k) {
		free(map);
		return -ENOSPC;
	}
	for (first_new = k; k < map->num_stripes; k++) {
		ret = place_stripe(fs, map, k, stripe, excl, nexcl);
		if (ret)
			break;
	}
	if (ret) {
		for (i = first_new; i < k; i++)
			mfs_device_remove_extent(map->stripes[i].dev, map->stripes[i].physical);
		free(map);
		return ret;
	}
	if (a->incompat)
		fs->incompat_flags |= a->incompat;
	*out = map;
	return 0;
}

bool mfs_stripe_holds_old(const struct mfs_chunk_map *old, const struct mfs_chunk_map *new, int j)
{
	bool copies = whole_copies(old->type) && whole_copies(new->type);
	int i;

	for (i = 0; i < old->num_stripes; i++)
		if (new->stripes[j].devid == old->stripes[i].devid &&
		    new->stripes[j].physical == old->stripes[i].physical &&
		    (copies || (i == j && old->type == new->type && old->length == new->length &&
				old->num_stripes == new->num_stripes)))
			return true;
	return false;
}

/* Allocatable devices not in excl and their largest holes, largest first. */
static int gather_holes(struct mfs_fs_info *fs, const u64 *excl, int nexcl,
			struct dev_hole *holes)
{
	int i, n = 0;

	for (i = 0; i < fs->nr_devices; i++) {
		struct mfs_device *dev = fs->devices[i];
		u64 start, len;

		if (!mfs_device_allocatable(dev) || devid_excluded(dev->devid, excl, nexcl))
			continue;
		len = mfs_device_max_hole(dev, &start);
		if (!len)
			continue;
		holes[n].dev = dev;
		holes[n].start = start;
		holes[n].len = len;
		n++;
	}
	qsort(holes, n, sizeof(*holes), cmp_hole_desc);
	return n;
}

/*
 * A map of type|profile flags for [logical, +length) over the first n
 * devices of holes[], stripe bytes per stripe, best fit on each device;
 * its dev extents are recorded in memory.
 */
static int place_layout(struct mfs_fs_info *fs, const struct dev_hole *holes, int n, u64 flags,
			u64 logical, u64 length, u64 stripe, struct mfs_chunk_map **out)
{
	const struct mfs_raid_attr *a = mfs_profile(flags);
	struct mfs_chunk_map *map;
	int i, j, ret;

	map = mfs_alloc_chunk_map(n * a->dev_stripes);
	if (!map)
		return -ENOMEM;
	map->logical = logical;
	map->length = length;
	map->type = flags;
	map->stripe_len = MFS_STRIPE_LEN;
	map->num_stripes = n * a->dev_stripes;
	map->sub_stripes = a->sub_stripes;
	for (i = 0; i < n; i++) {
		u64 start = holes[i].start;

		/* best fit on each chosen device */
		mfs_device_best_fit(holes[i].dev, stripe * a->dev_stripes, &start);
		for (j = 0; j < a->dev_stripes; j++) {
			struct mfs_map_stripe *st = &map->stripes[i * a->dev_stripes + j];

			st->dev = holes[i].dev;
			st->devid = holes[i].dev->devid;
			st->physical = start + j * stripe;
			memcpy(st->dev_uuid, holes[i].dev->uuid, MFS_UUID_SIZE);
		}
	}
	for (i = 0; i < map->num_stripes; i++) {
		ret = mfs_device_add_extent(map->stripes[i].dev, map->stripes[i].physical,
					    stripe, logical);
		if (ret) {
			while (--i >= 0)
				mfs_device_remove_extent(map->stripes[i].dev,
							 map->stripes[i].physical);
			free(map);
			return ret;
		}
	}
	if (a->incompat)
		fs->incompat_flags |= a->incompat;
	*out = map;
	return 0;
}

/* The widest layout of the whole range in one chunk (-ENOSPC if none fits). */
static int alloc_whole(struct mfs_fs_info *fs, const struct mfs_chunk_map *old, u64 flags,
		       const u64 *excl, int nexcl, struct mfs_chunk_map **out)
{
	struct dev_hole *holes;
	u64 *lens, stripe = 0;
	int ndevs, n, i, ret;

	holes = calloc(fs->nr_devices + 1, sizeof(*holes));
	lens = calloc(fs->nr_devices + 1, sizeof(*lens));
	if (!holes || !lens) {
		ret = -ENOMEM;
		goto out;
	}
	ndevs = gather_holes(fs, excl, nexcl, holes);
	for (i = 0; i < ndevs; i++)
		lens[i] = holes[i].len;
	/* widest layout whose stripes divide the range and fit the holes */
	n = mfs_layout_for_length(flags, old->length, lens, ndevs, &stripe);
	ret = n < 0 ? n : place_layout(fs, holes, n, flags, old->logical, old->length, stripe, out);
out:
	free(holes);
	free(lens);
	return ret;
}

/* Does an extent of used[] (sorted by start) straddle pos? Its start if so. */
static bool cut_inside_extent(const struct mfs_range *used, int nused, u64 pos, u64 *extent_start)
{
	int lo = 0, hi = nused - 1;

	/* the last extent starting below pos */
	while (lo <= hi) {
		int mid = (lo + hi) / 2;

		if (used[mid].start < pos)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	if (hi >= 0 && used[hi].start + used[hi].len > pos) {
		*extent_start = used[hi].start;
		return true;
	}
	return false;
}

/*
 * The longest piece of [cur, end) that n devices of holes[] take: the
 * whole rest if it fits, else whole MiBs per stripe, cut where no extent
 * straddles the cut (an extent lies in one block group). 0 if none.
 */
static u64 piece_length(u64 flags, const struct dev_hole *holes, int n, u64 cur, u64 end,
			const struct mfs_range *used, int nused)
{
	const struct mfs_raid_attr *a = mfs_profile(flags);
	int num_stripes = n * a->dev_stripes;
	int ndata = mfs_nr_data_stripes(flags, num_stripes);
	bool striped = a->nparity || a->sub_stripes > 1 || (a->ncopies == 1 && num_stripes > 1);
	u64 max_stripe = round_down(holes[n - 1].len / a->dev_stripes, MFS_CHUNK_ALIGN);
	u64 rest = end - cur, unit = (u64)ndata * MFS_CHUNK_ALIGN, len, ext;

	if (rest % ndata == 0 && rest / ndata <= holes[n - 1].len / a->dev_stripes &&
	    (!striped || (rest / ndata) % MFS_STRIPE_LEN == 0))
		return rest;
	len = round_down(min_t(u64, rest, max_stripe * ndata), unit);
	while (len && cut_inside_extent(used, nused, cur + len, &ext))
		len = ext > cur ? round_down(ext - cur, unit) : 0;
	return len;
}

/* Bytes a chunk of num_stripes takes in the superblock's bootstrap array. */
static u64 sys_array_item(int num_stripes)
{
	return sizeof(struct mfs_disk_key) + mfs_chunk_item_size(num_stripes);
}

/*
 * The range in pieces, each as wide and as long as the holes allow at
 * the time it is placed (so later pieces see the earlier ones' space
 * taken). SYSTEM pieces must all fit the bootstrap array in place of old.
 */
static int alloc_pieces(struct mfs_fs_info *fs, const struct mfs_chunk_map *old, u64 flags,
			const u64 *excl, int nexcl, const struct mfs_range *used, int nused,
			struct mfs_chunk_map ***out, int *nout)
{
	const struct mfs_raid_attr *a = mfs_profile(flags);
	u64 cur = old->logical, end = old->logical + old->length;
	u64 sys_room = MFS_SYSTEM_CHUNK_ARRAY_SIZE - sys_array_used(fs) +
		       sys_array_item(old->num_stripes);
	struct mfs_chunk_map **maps = NULL;
	struct dev_hole *holes;
	int nmaps = 0, ret = 0;

	holes = calloc(fs->nr_devices + 1, sizeof(*holes));
	if (!holes)
		return -ENOMEM;
	while (cur < end) {
		int ndevs = gather_holes(fs, excl, nexcl, holes);
		int n = a->devs_max ? min_t(int, ndevs, a->devs_max) : ndevs;
		int best_n = 0;
		u64 best_len = 0;
		void *p;

		for (; n >= a->devs_min && n > 0; n--) {
			u64 len;

			if (n % a->devs_increment)
				continue;
			len = piece_length(flags, holes, n, cur, end, used, nused);
			if (len > best_len) {
				best_len = len;
				best_n = n;
			}
		}
		if (!best_len || ((flags & MFS_BLOCK_GROUP_SYSTEM) &&
				  sys_array_item(best_n * a->dev_stripes) > sys_room)) {
			ret = -ENOSPC;
			break;
		}
		if (flags & MFS_BLOCK_GROUP_SYSTEM)
			sys_room -= sys_array_item(best_n * a->dev_stripes);
		p = realloc(maps, (nmaps + 1) * sizeof(*maps));
		if (!p) {
			ret = -ENOMEM;
			break;
		}
		maps = p;
		ret = place_layout(fs, holes, best_n, flags, cur, best_len,
				   best_len / mfs_nr_data_stripes(flags, best_n * a->dev_stripes),
				   &maps[nmaps]);
		if (ret)
			break;
		cur += best_len;
		nmaps++;
	}
	free(holes);
	if (ret) {
		mfs_free_chunk_layout(maps, nmaps, NULL);
		return ret;
	}
	*out = maps;
	*nout = nmaps;
	return 0;
}

int mfs_alloc_chunk_at(struct mfs_fs_info *fs, const struct mfs_chunk_map *old, u64 flags,
		       const u64 *excl, int nexcl, const struct mfs_range *used, int nused,
		       struct mfs_chunk_map ***out, int *nout)
{
	struct mfs_chunk_map **maps = calloc(1, sizeof(*maps));
	int ret = -ENOSPC;

	if (!maps)
		return -ENOMEM;
	if (nexcl && old->type == flags)
		ret = alloc_keeping_stripes(fs, old, excl, nexcl, &maps[0]);
	else if (old->type != flags && whole_copies(old->type) && whole_copies(flags) &&
		 mfs_profile(flags)->dev_stripes == 1)
		ret = alloc_keeping_copies(fs, old, flags, excl, nexcl, &maps[0]);
	/* no room beside the kept stripes (raid5 on 3 devices losing one): a new layout */
	if (ret == -ENOSPC)
		ret = alloc_whole(fs, old, flags, excl, nexcl, &maps[0]);
	if (!ret) {
		*out = maps;
		*nout = 1;
		return 0;
	}
	free(maps);
	/* no room for it in one piece: several chunks over the same range (DESIGN §5) */
	if (ret == -ENOSPC)
		ret = alloc_pieces(fs, old, flags, excl, nexcl, used, nused, out, nout);
	return ret;
}

void mfs_free_chunk_layout(struct mfs_chunk_map **maps, int nmaps, const struct mfs_chunk_map *old)
{
	int i, j;

	for (i = 0; i < nmaps; i++) {
		for (j = 0; j < maps[i]->num_stripes; j++)
			if (!mfs_stripe_kept(maps[i], j, old))
				mfs_device_remove_extent(maps[i]->stripes[j].dev,
							 maps[i]->stripes[j].physical);
		free(maps[i]);
	}
	free(maps);
}
