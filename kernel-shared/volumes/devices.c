/*
 * The devices of a filesystem: their health and error counters, which
 * copies to read first, their dev extents and the holes between them.
 */
#include <stdlib.h>
#include <string.h>
#include "kernel-shared/volumes/fs.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/block/raid56.h"
#include "kernel-shared/format/ioctl.h"

/* ---------------- device health ---------------- */

bool mfs_dev_usable(const struct mfs_device *dev)
{
	return dev && dev->io && !dev->missing &&
	       !__atomic_load_n(&dev->failed, __ATOMIC_ACQUIRE);
}

static const char *stat_what(int stat)
{
	static const char * const names[MFS_DEV_STAT_VALUES_MAX] = {
		"write", "read", "flush", "corruption", "generation"
	};

	return stat >= 0 && stat < MFS_DEV_STAT_VALUES_MAX ? names[stat] : "I/O";
}

/*
 * Past the threshold: failing, said once. A generation error is an old
 * copy (a member that was away), not a sign of a bad disk: not counted.
 */
static void count_toward_failing(struct mfs_fs_info *fs, struct mfs_device *dev, int stat)
{
	u64 threshold = fs->fail_threshold, n;

	if (stat == MFS_DEV_STAT_GENERATION_ERRS)
		return;
	n = __atomic_add_fetch(&dev->mount_errors, 1, __ATOMIC_RELAXED);
	if (!threshold || n <= threshold ||
	    __atomic_exchange_n(&dev->failing, true, __ATOMIC_ACQ_REL))
		return;
	mfs_log(fs, "devid %llu (%s) is failing: %llu errors this mount (the last a %s error), more than fail_threshold=%llu; nothing new is allocated on it, replace it",
		(unsigned long long)dev->devid, dev->path ? dev->path : "?",
		(unsigned long long)n, stat_what(stat), (unsigned long long)threshold);
	if (fs->dev_failed)
		fs->dev_failed(fs->log_arg);
}

void mfs_dev_count_error(struct mfs_fs_info *fs, struct mfs_device *dev, int stat)
{
	__atomic_add_fetch(&dev->stats[stat], 1, __ATOMIC_RELAXED);
	__atomic_store_n(&dev->stats_dirty, true, __ATOMIC_RELAXED);
	__atomic_store_n(&fs->dev_stats_dirty, 1, __ATOMIC_RELEASE);
	count_toward_failing(fs, dev, stat);
}

void mfs_set_fail_threshold(struct mfs_fs_info *fs, u64 threshold)
{
	int i;

	fs->fail_threshold = threshold;
	/* the errors the open met are judged by the mount's threshold */
	for (i = 0; i < fs->nr_devices; i++) {
		struct mfs_device *dev = fs->devices[i];

		__atomic_store_n(&dev->failing, threshold && dev->mount_errors > threshold,
				 __ATOMIC_RELEASE);
	}
}

bool mfs_dev_failing(const struct mfs_device *dev)
{
	return __atomic_load_n(&dev->failed, __ATOMIC_ACQUIRE) ||
	       __atomic_load_n(&dev->failing, __ATOMIC_ACQUIRE);
}

bool mfs_fs_has_failing(struct mfs_fs_info *fs)
{
	int i;

	for (i = 0; i < fs->nr_devices; i++)
		if (mfs_dev_failing(fs->devices[i]))
			return true;
	return false;
}

int mfs_device_health(const struct mfs_device *dev)
{
	if (dev->missing || !dev->io)
		return MFS_DEV_HEALTH_MISSING;
	if (mfs_dev_failing(dev))
		return MFS_DEV_HEALTH_FAILING;
	if (dev->stale_gen)
		return MFS_DEV_HEALTH_REBUILDING;
	if (dev->flags & MFS_DEV_STATE_REPLACE_SOURCE)
		return MFS_DEV_HEALTH_REPLACING;
	if (dev->flags & MFS_DEV_STATE_REPLACE_TARGET)
		return MFS_DEV_HEALTH_REPLACE_TARGET;
	if (dev->flags & MFS_DEV_STATE_DELETING)
		return MFS_DEV_HEALTH_DELETING;
	if (dev->flags & MFS_DEV_STATE_SPARE)
		return MFS_DEV_HEALTH_SPARE;
	return MFS_DEV_HEALTH_OK;
}

static pthread_mutex_t dev_fail_lock = PTHREAD_MUTEX_INITIALIZER;

bool mfs_dev_fail(struct mfs_fs_info *fs, struct mfs_device *dev, int stat, int err)
{
	bool failed;

	mfs_dev_count_error(fs, dev, stat);
	pthread_mutex_lock(&dev_fail_lock);
	failed = __atomic_load_n(&dev->failed, __ATOMIC_ACQUIRE);
	if (!failed && fs->strict_io) {
		pthread_mutex_unlock(&dev_fail_lock);
		return false;
	}
	if (!failed) {
		/* only while the others still hold every chunk */
		__atomic_store_n(&dev->failed, true, __ATOMIC_RELEASE);
		if (mfs_unreadable_chunks(fs)) {
			__atomic_store_n(&dev->failed, false, __ATOMIC_RELEASE);
			pthread_mutex_unlock(&dev_fail_lock);
			mfs_log(fs, "devid %llu (%s): %s error: %s; it holds the only good copy of some data, so the write fails",
				(unsigned long long)dev->devid, dev->path ? dev->path : "?",
				stat_what(stat), strerror(err < 0 ? -err : err));
			return false;
		}
		mfs_log(fs, "devid %llu (%s) failed: %s error: %s; it gets no more I/O until the filesystem is mounted again",
			(unsigned long long)dev->devid, dev->path ? dev->path : "?", stat_what(stat),
			strerror(err < 0 ? -err : err));
		if (fs->dev_failed)
			fs->dev_failed(fs->log_arg);
	}
	pthread_mutex_unlock(&dev_fail_lock);
	return true;
}

bool mfs_chunk_readable(const struct mfs_chunk_map *map)
{
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	int i, j, bad = 0;

	for (i = 0; i < map->num_stripes; i++)
		bad += !mfs_dev_usable(map->stripes[i].dev);
	if (a->nparity)
		return bad <= a->nparity;
	if (a->sub_stripes > 1) {
		for (i = 0; i < map->num_stripes; i += a->sub_stripes) {
			for (j = 0; j < a->sub_stripes; j++)
				if (mfs_dev_usable(map->stripes[i + j].dev))
					break;
			if (j == a->sub_stripes)
				return false;
		}
		return true;
	}
	if (a->ncopies > 1)
		return bad < map->num_stripes;
	return bad == 0;
}

/* raid10: the fewest usable copies any mirror set of map has. */
static int fewest_usable_in_sets(const struct mfs_chunk_map *map, int sub_stripes)
{
	int i, j, fewest = sub_stripes;

	for (i = 0; i + sub_stripes <= map->num_stripes; i += sub_stripes) {
		int usable = 0;

		for (j = 0; j < sub_stripes; j++)
			usable += mfs_dev_usable(map->stripes[i + j].dev);
		fewest = min_t(int, fewest, usable);
	}
	return fewest;
}

int mfs_chunk_failures_left(const struct mfs_chunk_map *map)
{
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	int i, bad = 0, left;

	if (!mfs_chunk_readable(map))
		return -1;
	for (i = 0; i < map->num_stripes; i++)
		bad += !mfs_dev_usable(map->stripes[i].dev);
	if (a->nparity)
		left = a->nparity - bad;
	else if (a->sub_stripes > 1)
		left = fewest_usable_in_sets(map, a->sub_stripes) - 1;
	else if (a->ncopies > 1)
		left = map->num_stripes - bad - 1;
	else
		left = 0;
	/* dup's second copy is on the same device: it survives no device loss */
	return min_t(int, left, a->tolerated_failures);
}

int mfs_unreadable_chunks(struct mfs_fs_info *fs)
{
	int i, n = 0;

	for (i = 0; i < fs->nr_chunks; i++)
		n += !mfs_chunk_readable(fs->chunks[i]);
	return n;
}

bool mfs_chunk_degraded(const struct mfs_chunk_map *map)
{
	int i;

	for (i = 0; i < map->num_stripes; i++)
		if (!mfs_dev_usable(map->stripes[i].dev))
			return true;
	return false;
}

bool mfs_fs_degraded(struct mfs_fs_info *fs)
{
	int i;

	for (i = 0; i < fs->nr_devices; i++)
		if (!mfs_dev_usable(fs->devices[i]))
			return true;
	return false;
}

int mfs_nr_allocatable_devices(struct mfs_fs_info *fs)
{
	int i, n = 0;

	for (i = 0; i < fs->nr_devices; i++)
		n += mfs_device_allocatable(fs->devices[i]);
	return n;
}

/* ---------------- devices ---------------- */

struct mfs_device *mfs_find_device(struct mfs_fs_info *fs, u64 devid)
{
	int i;

	for (i = 0; i < fs->nr_devices; i++)
		if (fs->devices[i]->devid == devid)
			return fs->devices[i];
	return NULL;
}

int mfs_add_device(struct mfs_fs_info *fs, struct mfs_device *dev)
{
	void *p = realloc(fs->devices, (fs->nr_devices + 1) * sizeof(*fs->devices));
	int i;

	if (!p)
		return -ENOMEM;
	fs->devices = p;
	for (i = fs->nr_devices; i > 0 && fs->devices[i - 1]->devid > dev->devid; i--)
		fs->devices[i] = fs->devices[i - 1];
	fs->devices[i] = dev;
	fs->nr_devices++;
	return 0;
}

void mfs_device_set_devid(struct mfs_fs_info *fs, struct mfs_device *dev, u64 devid)
{
	int i, s;

	for (i = 0; i < fs->nr_chunks; i++)
		for (s = 0; s < fs->chunks[i]->num_stripes; s++)
			if (fs->chunks[i]->stripes[s].devid == dev->devid)
				fs->chunks[i]->stripes[s].devid = devid;
	for (i = 0; i < fs->nr_devices && fs->devices[i] != dev; i++)
		;
	if (i == fs->nr_devices)
		return;
	/* fs->devices stays sorted by devid: take it out, put it back in its slot */
	memmove(&fs->devices[i], &fs->devices[i + 1], (fs->nr_devices - i - 1) * sizeof(dev));
	dev->devid = devid;
	for (i = fs->nr_devices - 1; i > 0 && fs->devices[i - 1]->devid > devid; i--)
		fs->devices[i] = fs->devices[i - 1];
	fs->devices[i] = dev;
}

int mfs_device_add_extent(struct mfs_device *dev, u64 physical, u64 length, u64 chunk_offset)
{
	int i;

	for (i = 0; i < dev->nr_extents; i++) {
		struct mfs_dev_extent_rec *e = &dev->extents[i];

		if (physical < e->physical + e->length && e->physical < physical + length)
			return -EEXIST;
		if (e->physical > physical)
			break;
	}
	if (MFS_ARRAY_RESERVE(dev->extents, dev->nr_extents, dev->max_extents, 16))
		return -ENOMEM;
	memmove(&dev->extents[i + 1], &dev->extents[i],
		(dev->nr_extents - i) * sizeof(*dev->extents));
	dev->extents[i].physical = physical;
	dev->extents[i].length = length;
	dev->extents[i].chunk_offset = chunk_offset;
	dev->nr_extents++;
	return 0;
}

int mfs_device_remove_extent(struct mfs_device *dev, u64 physical)
{
	int i;

	for (i = 0; i < dev->nr_extents; i++) {
		if (dev->extents[i].physical == physical) {
			memmove(&dev->extents[i], &dev->extents[i + 1],
				(dev->nr_extents - i - 1) * sizeof(*dev->extents));
			dev->nr_extents--;
			return 0;
		}
	}
	return -ENOENT;
}

/* Device ranges never allocated: the first MiB and a MiB at each mirror. */
static void reserved_range(int i, u64 *start, u64 *len)
{
	if (i == 0) {
		*start = 0;
		*len = MFS_DEVICE_RESERVED;
	} else {
		*start = mfs_sb_offset(i);
		*len = SZ_1M;
	}
}

u64 mfs_device_reserved_bytes(u64 total_bytes)
{
	u64 sum = 0;
	int i;

	for (i = 0; i < MFS_SUPER_MIRROR_MAX; i++) {
		u64 rs, rl;

		reserved_range(i, &rs, &rl);
		if (rs < total_bytes)
			sum += min_t(u64, rl, total_bytes - rs);
	}
	return sum;
}

bool mfs_range_is_reserved(u64 start, u64 len)
{
	int i;

	for (i = 0; i < MFS_SUPER_MIRROR_MAX; i++) {
		u64 rs, rl;

		reserved_range(i, &rs, &rl);
		if (start < rs + rl && rs < start + len)
			return true;
	}
	return false;
}

u64 mfs_device_end(const struct mfs_device *dev)
{
	if (dev->io && dev->io->size && dev->io->size < dev->total_bytes)
		return dev->io->size;
	return dev->total_bytes;
}

/* Walk the free holes of dev in order; cb returns nonzero to stop. */
static void for_each_hole(struct mfs_device *dev,
			  int (*cb)(u64 start, u64 len, void *arg), void *arg)
{
	u64 cur = 0, end = mfs_device_end(dev);
	int e = 0, r;

	while (cur < end) {
		u64 next = end;

		/* skip allocated extents and reserved ranges starting at cur */
		for (;;) {
			bool moved = false;

			for (; e < dev->nr_extents &&
			       dev->extents[e].physical + dev->extents[e].length <= cur; e++)
				;
			if (e < dev->nr_extents && dev->extents[e].physical <= cur) {
				cur = dev->extents[e].physical + dev->extents[e].length;
				moved = true;
			}
			for (r = 0; r < MFS_SUPER_MIRROR_MAX; r++) {
				u64 rs, rl;

				reserved_range(r, &rs, &rl);
				if (rs <= cur && cur < rs + rl) {
					cur = rs + rl;
					moved = true;
				}
			}
			if (!moved)
				break;
		}
		if (cur >= end)
			break;
		next = end;
		if (e < dev->nr_extents && dev->extents[e].physical < next)
			next = dev->extents[e].physical;
		for (r = 0; r < MFS_SUPER_MIRROR_MAX; r++) {
			u64 rs, rl;

			reserved_range(r, &rs, &rl);
			if (rs > cur && rs < next)
				next = rs;
		}
		if (cb(cur, next - cur, arg))
			return;
		cur = next;
	}
}

struct max_hole_arg {
	u64 start;
	u64 len;
};

/* The part of a hole stripes can use: from an aligned start, whole MFS_CHUNK_ALIGN. */
static u64 aligned_hole(u64 start, u64 len, u64 *astart)
{
	*astart = round_up(start, MFS_CHUNK_ALIGN);
	if (*astart >= start + len)
		return 0;
	return round_down(start + len - *astart, MFS_CHUNK_ALIGN);
}

static int max_hole_cb(u64 start, u64 len, void *arg)
{
	struct max_hole_arg *m = arg;
	u64 astart;

	len = aligned_hole(start, len, &astart);
	if (len > m->len) {
		m->len = len;
		m->start = astart;
	}
	return 0;
}

u64 mfs_device_max_hole(struct mfs_device *dev, u64 *start)
{
	struct max_hole_arg m = { 0, 0 };

	for_each_hole(dev, max_hole_cb, &m);
	if (start)
		*start = m.start;
	return m.len;
}

struct usable_arg {
	u64 min_hole;
	u64 total;
};

static int usable_cb(u64 start, u64 len, void *arg)
{
	struct usable_arg *u = arg;
	u64 astart;

	len = aligned_hole(start, len, &astart);
	if (len && len >= u->min_hole)
		u->total += len;
	return 0;
}

u64 mfs_device_usable_free(struct mfs_device *dev, u64 min_hole)
{
	struct usable_arg u = { min_hole, 0 };

	for_each_hole(dev, usable_cb, &u);
	return u.total;
}

struct best_fit_arg {
	u64 need;
	u64 start;
	u64 len;
};

static int best_fit_cb(u64 start, u64 len, void *arg)
{
	struct best_fit_arg *b = arg;
	u64 astart = round_up(start, MFS_CHUNK_ALIGN);

	if (astart >= start + len || start + len - astart < b->need)
		return 0;
	len = start + len - astart;
	if (!b->len || len < b->len) {
		b->len = len;
		b->start = astart;
	}
	return 0;
}

int mfs_device_best_fit(struct mfs_device *dev, u64 need, u64 *start)
{
	struct best_fit_arg b = { need, 0, 0 };

	for_each_hole(dev, best_fit_cb, &b);
	if (!b.len)
		return -ENOSPC;
	*start = b.start;
	return 0;
}

bool mfs_device_allocatable(const struct mfs_device *dev)
{
	/* nothing new on a device that failed or is failing, nor on one not caught up */
	return mfs_dev_usable(dev) && !__atomic_load_n(&dev->failing, __ATOMIC_ACQUIRE) &&
	       !dev->stale_gen && !(dev->flags & MFS_DEV_STATE_NO_ALLOC);
}
