/*
 * Chunk maps: where each logical byte lives on the devices, how a chunk is
 * laid out for every profile, chunk allocation, and logical read/write
 * including raid5/6 parity (DESIGN §3, §4).
 */
#include <stdlib.h>
#include <string.h>
#include "kernel-shared/volumes/fs.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/block/raid56.h"

/* ---------------- mapping ---------------- */

int mfs_num_copies(const struct mfs_chunk_map *map)
{
	const struct mfs_raid_attr *a = mfs_profile(map->type);

	/*
	 * raid5/6: 1 = the data itself, 2 = rebuilt from the rest of the row
	 * with P, 3.. (raid6) = rebuilt assuming one more column is bad too.
	 */
	if (a->nparity == 1)
		return 2;
	if (a->nparity == 2)
		return 2 + map->num_stripes - 1;
	if (a->sub_stripes > 1)
		return a->sub_stripes;
	return a->ncopies;
}

int mfs_map_block(const struct mfs_chunk_map *map, u64 logical, struct mfs_io_map *out)
{
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	u64 off, stripe_nr, stripe_off, slen = map->stripe_len;
	int n = map->num_stripes, i;

	if (logical < map->logical || logical >= map->logical + map->length)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->p_stripe = out->q_stripe = -1;
	off = logical - map->logical;
	stripe_nr = off / slen;
	stripe_off = off % slen;
	out->length = slen - stripe_off;

	if (a->nparity) {
		int ndata = n - a->nparity;
		u64 row = stripe_nr / ndata;
		int d = stripe_nr % ndata;
		int rot = row % n;

		out->row = row;
		out->data_index = d;
		out->ncopies = 1;
		out->stripe[0] = (d + rot) % n;
		out->physical[0] = map->stripes[out->stripe[0]].physical + row * slen + stripe_off;
		out->p_stripe = (ndata + rot) % n;
		if (a->nparity > 1)
			out->q_stripe = (ndata + 1 + rot) % n;
	} else if (a->sub_stripes > 1) {
		int factor = n / a->sub_stripes;
		int first = (stripe_nr % factor) * a->sub_stripes;
		u64 phys_off = (stripe_nr / factor) * slen + stripe_off;

		out->ncopies = a->sub_stripes;
		for (i = 0; i < a->sub_stripes; i++) {
			out->stripe[i] = first + i;
			out->physical[i] = map->stripes[first + i].physical + phys_off;
		}
	} else if (a->ncopies > 1) {
		/* dup, raid1, raid1c3/c4: every stripe is a full copy */
		out->length = map->logical + map->length - logical;
		out->ncopies = n;
		for (i = 0; i < n && i < MFS_MAX_COPIES; i++) {
			out->stripe[i] = i;
			out->physical[i] = map->stripes[i].physical + off;
		}
	} else if (n == 1) {
		out->length = map->logical + map->length - logical;
		out->ncopies = 1;
		out->stripe[0] = 0;
		out->physical[0] = map->stripes[0].physical + off;
	} else {
		/* raid0 */
		out->ncopies = 1;
		out->stripe[0] = stripe_nr % n;
		out->physical[0] = map->stripes[out->stripe[0]].physical +
				   (stripe_nr / n) * slen + stripe_off;
	}
	if (out->length > map->logical + map->length - logical)
		out->length = map->logical + map->length - logical;
	return 0;
}

/* ---------------- device health ---------------- */

bool mfs_dev_usable(const struct mfs_device *dev)
{
	return dev && dev->io && !dev->missing &&
	       !__atomic_load_n(&dev->failed, __ATOMIC_ACQUIRE);
}

void mfs_dev_count_error(struct mfs_fs_info *fs, struct mfs_device *dev, int stat)
{
	__atomic_add_fetch(&dev->stats[stat], 1, __ATOMIC_RELAXED);
	__atomic_store_n(&dev->stats_dirty, true, __ATOMIC_RELAXED);
	__atomic_store_n(&fs->dev_stats_dirty, 1, __ATOMIC_RELEASE);
}

static const char *stat_what(int stat)
{
	static const char * const names[MFS_DEV_STAT_VALUES_MAX] = {
		"write", "read", "flush", "corruption", "generation"
	};

	return stat >= 0 && stat < MFS_DEV_STAT_VALUES_MAX ? names[stat] : "I/O";
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

int mfs_unreadable_chunks(struct mfs_fs_info *fs)
{
	int i, n = 0;

	for (i = 0; i < fs->nr_chunks; i++)
		n += !mfs_chunk_readable(fs->chunks[i]);
	return n;
}

enum { READ_RANK_PREFERRED, READ_RANK_HEALTHY, READ_RANK_STALE, READ_RANK_UNUSABLE };

/* Reads go first to the read_policy device, then any healthy one, a stale one last. */
static int read_rank(const struct mfs_fs_info *fs, const struct mfs_device *dev)
{
	if (!mfs_dev_usable(dev))
		return READ_RANK_UNUSABLE;
	if (dev->stale_gen)
		return READ_RANK_STALE;
	if (fs->read_devid && dev->devid == fs->read_devid)
		return READ_RANK_PREFERRED;
	return READ_RANK_HEALTHY;
}

int mfs_mirror_order(struct mfs_fs_info *fs, const struct mfs_chunk_map *map, u64 logical,
		     int *order)
{
	int copies = mfs_num_copies(map), rank[copies], i, j, n = 0;
	struct mfs_io_map io;

	if (mfs_map_block(map, logical, &io)) {
		for (i = 0; i < copies; i++)
			order[i] = i + 1;
		return copies;
	}
	for (i = 0; i < copies; i++) {
		/* raid5/6: mirror 1 is the data column, the rest rebuild it */
		if (mfs_profile(map->type)->nparity)
			rank[i] = i ? READ_RANK_HEALTHY : read_rank(fs, map->stripes[io.stripe[0]].dev);
		else
			rank[i] = read_rank(fs, map->stripes[io.stripe[i]].dev);
	}
	/* a stable sort by rank: within one rank, the copies in their order */
	for (j = READ_RANK_PREFERRED; j <= READ_RANK_UNUSABLE; j++)
		for (i = 0; i < copies; i++)
			if (rank[i] == j)
				order[n++] = i + 1;
	return copies;
}

/* ---------------- chunk map table ---------------- */

struct mfs_chunk_map *mfs_alloc_chunk_map(int num_stripes)
{
	return calloc(1, sizeof(struct mfs_chunk_map) +
			 num_stripes * sizeof(struct mfs_map_stripe));
}

static int chunk_index(struct mfs_fs_info *fs, u64 logical)
{
	int lo = 0, hi = fs->nr_chunks - 1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		struct mfs_chunk_map *m = fs->chunks[mid];

		if (logical < m->logical)
			hi = mid - 1;
		else if (logical >= m->logical + m->length)
			lo = mid + 1;
		else
			return mid;
	}
	return -1;
}

struct mfs_chunk_map *mfs_find_chunk(struct mfs_fs_info *fs, u64 logical)
{
	int i = chunk_index(fs, logical);

	return i < 0 ? NULL : fs->chunks[i];
}

static int add_chunk_map_locked(struct mfs_fs_info *fs, struct mfs_chunk_map *map)
{
	int i;

	for (i = 0; i < fs->nr_chunks; i++) {
		struct mfs_chunk_map *m = fs->chunks[i];

		if (map->logical < m->logical + m->length &&
		    m->logical < map->logical + map->length)
			return -EEXIST;
		if (m->logical > map->logical)
			break;
	}
	if (fs->nr_chunks == fs->max_chunks) {
		int nmax = fs->max_chunks ? fs->max_chunks * 2 : 16;
		void *p = realloc(fs->chunks, nmax * sizeof(*fs->chunks));

		if (!p)
			return -ENOMEM;
		fs->chunks = p;
		fs->max_chunks = nmax;
	}
	memmove(&fs->chunks[i + 1], &fs->chunks[i],
		(fs->nr_chunks - i) * sizeof(*fs->chunks));
	fs->chunks[i] = map;
	fs->nr_chunks++;
	return 0;
}

/* The map array changes under map_lock: data I/O without fs->lock reads it. */
int mfs_add_chunk_map(struct mfs_fs_info *fs, struct mfs_chunk_map *map)
{
	int ret;

	pthread_rwlock_wrlock(&fs->map_lock);
	ret = add_chunk_map_locked(fs, map);
	pthread_rwlock_unlock(&fs->map_lock);
	return ret;
}

void mfs_remove_chunk_map(struct mfs_fs_info *fs, struct mfs_chunk_map *map)
{
	int i;

	pthread_rwlock_wrlock(&fs->map_lock);
	for (i = 0; i < fs->nr_chunks; i++) {
		if (fs->chunks[i] == map) {
			memmove(&fs->chunks[i], &fs->chunks[i + 1],
				(fs->nr_chunks - i - 1) * sizeof(*fs->chunks));
			fs->nr_chunks--;
			break;
		}
	}
	pthread_rwlock_unlock(&fs->map_lock);
}

void mfs_replace_chunk_map(struct mfs_fs_info *fs, struct mfs_chunk_map *old,
			   struct mfs_chunk_map *new)
{
	int i;

	pthread_rwlock_wrlock(&fs->map_lock);
	for (i = 0; i < fs->nr_chunks; i++)
		if (fs->chunks[i] == old)
			fs->chunks[i] = new;
	pthread_rwlock_unlock(&fs->map_lock);
}

/* ---------------- chunk items ---------------- */

static bool is_power_of_2(u64 x)
{
	return x && !(x & (x - 1));
}

int mfs_check_chunk_item(struct mfs_fs_info *fs, u64 logical,
			 const struct mfs_chunk *chunk, u32 item_size)
{
	const struct mfs_raid_attr *a;
	u64 type, length, profile, stripe_len;
	int num_stripes, sub_stripes, ndata;

	if (item_size < sizeof(*chunk))
		return -EUCLEAN;
	num_stripes = le16_to_cpu(chunk->num_stripes);
	sub_stripes = le16_to_cpu(chunk->sub_stripes);
	if (num_stripes < 1 || item_size != mfs_chunk_item_size(num_stripes))
		return -EUCLEAN;
	type = le64_to_cpu(chunk->type);
	length = le64_to_cpu(chunk->length);
	stripe_len = le64_to_cpu(chunk->stripe_len);
	profile = type & MFS_BLOCK_GROUP_PROFILE_MASK;
	if (!(type & MFS_BLOCK_GROUP_TYPE_MASK) ||
	    (type & ~(MFS_BLOCK_GROUP_TYPE_MASK | MFS_BLOCK_GROUP_PROFILE_MASK)))
		return -EUCLEAN;
	if (profile && !is_power_of_2(profile))
		return -EUCLEAN;
	if (stripe_len != MFS_STRIPE_LEN)
		return -EUCLEAN;
	if (!length || logical % fs->sectorsize || length % fs->sectorsize ||
	    logical + length < logical)
		return -EUCLEAN;
	a = mfs_profile(type);
	if (num_stripes < a->devs_min * a->dev_stripes)
		return -EUCLEAN;
	if (a->devs_max && num_stripes > a->devs_max * a->dev_stripes)
		return -EUCLEAN;
	if (num_stripes % a->devs_increment)
		return -EUCLEAN;
	if (sub_stripes != a->sub_stripes)
		return -EUCLEAN;
	ndata = mfs_nr_data_stripes(type, num_stripes);
	if (ndata < 1 || length % ndata)
		return -EUCLEAN;
	if (a->nparity || a->sub_stripes > 1 || (a->ncopies == 1 && num_stripes > 1)) {
		/* striped profiles: each stripe is a whole number of stripe_len */
		if ((length / ndata) % stripe_len)
			return -EUCLEAN;
	}
	return 0;
}

int mfs_chunk_map_from_item(struct mfs_fs_info *fs, u64 logical,
			    const struct mfs_chunk *chunk, u32 item_size,
			    struct mfs_chunk_map **out)
{
	struct mfs_chunk_map *map;
	int i, n, ret;

	ret = mfs_check_chunk_item(fs, logical, chunk, item_size);
	if (ret)
		return ret;
	n = le16_to_cpu(chunk->num_stripes);
	map = mfs_alloc_chunk_map(n);
	if (!map)
		return -ENOMEM;
	map->logical = logical;
	map->length = le64_to_cpu(chunk->length);
	map->type = le64_to_cpu(chunk->type);
	map->stripe_len = le64_to_cpu(chunk->stripe_len);
	map->num_stripes = n;
	map->sub_stripes = le16_to_cpu(chunk->sub_stripes);
	for (i = 0; i < n; i++) {
		const struct mfs_stripe *s = &chunk->stripe[i];

		map->stripes[i].devid = le64_to_cpu(s->devid);
		map->stripes[i].physical = le64_to_cpu(s->offset);
		memcpy(map->stripes[i].dev_uuid, s->dev_uuid, MFS_UUID_SIZE);
		map->stripes[i].dev = mfs_find_device(fs, map->stripes[i].devid);
		if (map->stripes[i].dev && map->stripes[i].dev->missing)
			map->stripes[i].dev = NULL;
	}
	*out = map;
	return 0;
}

void mfs_chunk_map_to_item(struct mfs_fs_info *fs, const struct mfs_chunk_map *map, void *buf)
{
	struct mfs_chunk *c = buf;
	int i;

	memset(c, 0, mfs_chunk_item_size(map->num_stripes));
	c->length = cpu_to_le64(map->length);
	c->owner = cpu_to_le64(MFS_EXTENT_TREE_OBJECTID);
	c->stripe_len = cpu_to_le64(map->stripe_len);
	c->type = cpu_to_le64(map->type);
	c->io_align = cpu_to_le32(map->stripe_len);
	c->io_width = cpu_to_le32(map->stripe_len);
	c->sector_size = cpu_to_le32(fs->sectorsize);
	c->num_stripes = cpu_to_le16(map->num_stripes);
	c->sub_stripes = cpu_to_le16(map->sub_stripes);
	for (i = 0; i < map->num_stripes; i++) {
		c->stripe[i].devid = cpu_to_le64(map->stripes[i].devid);
		c->stripe[i].offset = cpu_to_le64(map->stripes[i].physical);
		memcpy(c->stripe[i].dev_uuid, map->stripes[i].dev_uuid, MFS_UUID_SIZE);
	}
}

/*
 * The superblock's bootstrap array: (disk key, chunk item) pairs for every
 * SYSTEM chunk, so the chunk tree can be read before it is known.
 */
int mfs_read_sys_array(struct mfs_fs_info *fs)
{
	struct mfs_super_block *sb = &fs->super;
	u32 size = le32_to_cpu(sb->sys_chunk_array_size);
	u32 cur = 0;

	if (size > MFS_SYSTEM_CHUNK_ARRAY_SIZE)
		return -EUCLEAN;
	while (cur < size) {
		struct mfs_disk_key *dk;
		struct mfs_chunk *chunk;
		struct mfs_chunk_map *map;
		struct mfs_key key;
		u32 item_size;
		int ret, n;

		if (size - cur < sizeof(*dk) + sizeof(*chunk))
			return -EUCLEAN;
		dk = (struct mfs_disk_key *)(sb->sys_chunk_array + cur);
		mfs_disk_key_to_cpu(&key, dk);
		if (key.type != MFS_CHUNK_ITEM_KEY)
			return -EUCLEAN;
		cur += sizeof(*dk);
		chunk = (struct mfs_chunk *)(sb->sys_chunk_array + cur);
		n = le16_to_cpu(chunk->num_stripes);
		item_size = mfs_chunk_item_size(n);
		if (n < 1 || item_size > size - cur)
			return -EUCLEAN;
		if (!(le64_to_cpu(chunk->type) & MFS_BLOCK_GROUP_SYSTEM))
			return -EUCLEAN;
		ret = mfs_chunk_map_from_item(fs, key.offset, chunk, item_size, &map);
		if (ret)
			return ret;
		ret = mfs_add_chunk_map(fs, map);
		if (ret) {
			free(map);
			return ret == -EEXIST ? -EUCLEAN : ret;
		}
		cur += item_size;
	}
	return 0;
}

int mfs_write_sys_array(struct mfs_fs_info *fs)
{
	struct mfs_super_block *sb = &fs->super;
	u32 cur = 0;
	int i;

	memset(sb->sys_chunk_array, 0, sizeof(sb->sys_chunk_array));
	for (i = 0; i < fs->nr_chunks; i++) {
		struct mfs_chunk_map *map = fs->chunks[i];
		struct mfs_disk_key dk;
		struct mfs_key key = { MFS_FIRST_CHUNK_TREE_OBJECTID, MFS_CHUNK_ITEM_KEY, map->logical };
		u32 isz = mfs_chunk_item_size(map->num_stripes);

		if (!(map->type & MFS_BLOCK_GROUP_SYSTEM))
			continue;
		if (cur + sizeof(dk) + isz > MFS_SYSTEM_CHUNK_ARRAY_SIZE)
			return -EFBIG;
		mfs_cpu_key_to_disk(&dk, &key);
		memcpy(sb->sys_chunk_array + cur, &dk, sizeof(dk));
		cur += sizeof(dk);
		mfs_chunk_map_to_item(fs, map, sb->sys_chunk_array + cur);
		cur += isz;
	}
	sb->sys_chunk_array_size = cpu_to_le32(cur);
	return 0;
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
	if (dev->nr_extents == dev->max_extents) {
		int nmax = dev->max_extents ? dev->max_extents * 2 : 16;
		void *p = realloc(dev->extents, nmax * sizeof(*dev->extents));

		if (!p)
			return -ENOMEM;
		dev->extents = p;
		dev->max_extents = nmax;
	}
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

/* Walk the free holes of dev in order; cb returns nonzero to stop. */
static void for_each_hole(struct mfs_device *dev,
			  int (*cb)(u64 start, u64 len, void *arg), void *arg)
{
	u64 cur = 0, end = dev->total_bytes;
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

static int max_hole_cb(u64 start, u64 len, void *arg)
{
	struct max_hole_arg *m = arg;
	/* holes are used from an aligned start */
	u64 astart = round_up(start, MFS_CHUNK_ALIGN);

	if (astart >= start + len)
		return 0;
	len -= astart - start;
	len = round_down(len, MFS_CHUNK_ALIGN);
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
	/* nothing new on a device that failed, nor on one not caught up */
	return mfs_dev_usable(dev) && !dev->stale_gen && !(dev->flags & MFS_DEV_STATE_NO_ALLOC);
}

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
		if (!fs->devices[i]->missing)
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

int mfs_place_chunk(struct mfs_fs_info *fs, u64 flags, u64 max_stripe,
		    struct mfs_chunk_map **out)
{
	const struct mfs_raid_attr *a = mfs_profile(flags);
	struct dev_hole *holes;
	struct mfs_chunk_map *map;
	u64 stripe_size, max_logical;
	int ndevs = 0, i, j, num_stripes, ndata, ret;

	holes = calloc(fs->nr_devices, sizeof(*holes));
	if (!holes)
		return -ENOMEM;
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
	if (a->devs_max && ndevs > a->devs_max)
		ndevs = a->devs_max;
	ndevs -= ndevs % a->devs_increment;
	if (ndevs < a->devs_min) {
		ret = -ENOSPC;
		goto out;
	}
	num_stripes = ndevs * a->dev_stripes;
	ndata = mfs_nr_data_stripes(flags, num_stripes);
	/* a system chunk the superblock cannot list could never be committed */
	if ((flags & MFS_BLOCK_GROUP_SYSTEM) &&
	    sys_array_used(fs) + sizeof(struct mfs_disk_key) +
	    mfs_chunk_item_size(num_stripes) > MFS_SYSTEM_CHUNK_ARRAY_SIZE) {
		ret = -ENOSPC;
		goto out;
	}

	if (!max_stripe)
		max_stripe = chunk_policy_max_stripe(fs, flags);
	stripe_size = min_t(u64, max_stripe, holes[ndevs - 1].len / a->dev_stripes);
	/* no chunk larger than a tenth of the filesystem */
	max_logical = max_t(u64, fs_writable_size(fs) / 10, MFS_MIN_STRIPE_SIZE);
	if (stripe_size * ndata > max_logical)
		stripe_size = max_logical / ndata;
	stripe_size = round_down(stripe_size, MFS_CHUNK_ALIGN);
	if (stripe_size < MFS_MIN_STRIPE_SIZE) {
		ret = -ENOSPC;
		goto out;
	}

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
	for (i = 0; i < num_stripes; i++) {
		struct mfs_map_stripe *s = &map->stripes[i];

		ret = mfs_device_add_extent(s->dev, s->physical, stripe_size, map->logical);
		if (ret) {
			while (--i >= 0)
				mfs_device_remove_extent(map->stripes[i].dev,
							 map->stripes[i].physical);
			free(map);
			goto out;
		}
		s->dev->bytes_used += stripe_size;
	}
	ret = mfs_add_chunk_map(fs, map);
	if (ret) {
		unplace_stripes(map, stripe_size);
		free(map);
		goto out;
	}
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

/* ---------------- logical I/O ---------------- */

/*
 * raid5/6 rows are written whole, once (DESIGN §3): writes land in an
 * in-memory row until the row is full or the transaction commits, then
 * data and parity go out together.
 */
struct mfs_open_row {
	struct mfs_chunk_map *map;
	u64 row;
	/*
	 * ROW_UNIT blocks written so far, each counted once (space given back
	 * and handed out again is written twice); a block only partly written
	 * is not counted, so such a row waits for the commit.
	 */
	u64 filled;
	u8 *written;		/* bitmap of those blocks */
	u8 *buf;		/* ndata * stripe_len */
	/*
	 * Full, and being written without fs->lock by the writer that filled
	 * it (mfs_write_full_rows); it stays listed, so reads under the lock
	 * find its data here until that writer releases it.
	 */
	bool writing;
	struct mfs_open_row *next;
	struct mfs_open_row *next_full;	/* in that writer's list (NULL unless writing) */
};

static struct mfs_open_row *find_open_row(struct mfs_fs_info *fs,
					  struct mfs_chunk_map *map, u64 row)
{
	struct mfs_open_row *r;

	for (r = fs->open_rows; r; r = r->next)
		if (r->map == map && r->row == row)
			return r;
	return NULL;
}

/* A strict write (the restriper's new stripes): any failure fails it. */
static int write_stripe(struct mfs_map_stripe *s, const void *buf, u64 len, u64 physical)
{
	if (!mfs_dev_usable(s->dev))
		return -EIO;
	return mfs_io_write(s->dev->io, buf, len, physical);
}

/*
 * One copy of a redundant write: 0 written, 1 not (its device is gone, or
 * fails now and is marked failed): the other copies carry the data; -EIO
 * when it fails and the others cannot do without it.
 */
static int write_copy(struct mfs_fs_info *fs, struct mfs_map_stripe *s, const void *buf,
		      u64 len, u64 physical)
{
	int ret;

	if (!mfs_dev_usable(s->dev))
		return 1;
	ret = mfs_io_write(s->dev->io, buf, len, physical);
	if (!ret)
		return 0;
	return mfs_dev_fail(fs, s->dev, MFS_DEV_STAT_WRITE_ERRS, ret) ? 1 : -EIO;
}

static int read_stripe(struct mfs_map_stripe *s, void *buf, u64 len, u64 physical)
{
	if (!mfs_dev_usable(s->dev))
		return -EIO;
	return mfs_io_read(s->dev->io, buf, len, physical);
}

/* Stripe index of data column d / parity in a row (rotation as mfs_map_block). */
static int row_stripe_index(const struct mfs_chunk_map *map, u64 row, int col)
{
	return (col + row % map->num_stripes) % map->num_stripes;
}

/* blocks[] = the row's data columns, then its parity computed into parity. */
static int row_blocks(const struct mfs_chunk_map *map, const u8 *data, u8 *parity, void **blocks)
{
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	int ndata = map->num_stripes - a->nparity, i;
	u64 slen = map->stripe_len;

	for (i = 0; i < ndata; i++)
		blocks[i] = (void *)(data + i * slen);
	for (i = 0; i < a->nparity; i++)
		blocks[ndata + i] = parity + i * slen;
	return mfs_raid56_gen(ndata, a->nparity, slen, blocks);
}

/* One row through the page cache (the restriper's copies into a new chunk). */
static int write_full_row(struct mfs_chunk_map *map, u64 row, const u8 *data)
{
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	int n = map->num_stripes, i, ret = 0;
	u64 slen = map->stripe_len;
	void *blocks[n];
	u8 *parity;

	parity = malloc(a->nparity * slen);
	if (!parity)
		return -ENOMEM;
	ret = row_blocks(map, data, parity, blocks);
	for (i = 0; !ret && i < n; i++) {
		int idx = row_stripe_index(map, row, i);
		struct mfs_map_stripe *s = &map->stripes[idx];

		ret = write_stripe(s, blocks[i], slen, s->physical + row * slen);
	}
	free(parity);
	return ret;
}

static int write_rows(struct mfs_fs_info *fs, struct mfs_open_row *rows, bool full_list);

static u64 row_logical(const struct mfs_open_row *r)
{
	const struct mfs_raid_attr *a = mfs_profile(r->map->type);

	return r->map->logical + r->row * (r->map->num_stripes - a->nparity) * r->map->stripe_len;
}

#define ROW_UNIT 4096

static void free_row(struct mfs_open_row *r)
{
	free(r->written);
	free(r->buf);
	free(r);
}

/* Count the whole ROW_UNIT blocks of [in_row, in_row + n) written the first time. */
static void mark_written(struct mfs_open_row *r, u64 in_row, u64 n)
{
	u64 b = (in_row + ROW_UNIT - 1) / ROW_UNIT, end = (in_row + n) / ROW_UNIT;

	for (; b < end; b++) {
		if (r->written[b / 8] & (1U << (b % 8)))
			continue;
		r->written[b / 8] |= 1U << (b % 8);
		r->filled++;
	}
}

static void unlist_row(struct mfs_fs_info *fs, struct mfs_open_row *r)
{
	struct mfs_open_row **pp;

	for (pp = &fs->open_rows; *pp; pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	}
	free_row(r);
}

/* A row reached the disk: the allocator must not reuse its free parts. */
static void row_sealed(struct mfs_fs_info *fs, u64 logical)
{
	if (fs->row_sealed)
		fs->row_sealed(fs, logical);
}

static int flush_row(struct mfs_fs_info *fs, struct mfs_open_row *r)
{
	int ret = write_rows(fs, r, true);	/* not writing: a list of one */

	/* the row is on disk now: the allocator must not reuse its free parts */
	row_sealed(fs, row_logical(r));
	unlist_row(fs, r);
	return ret;
}

/*
 * At commit: every row goes to disk, in one batch. A full row its writer
 * is still writing without the lock is written here as well (the same
 * bytes to the same place, both around the page cache), so the commit
 * never waits for that writer; the writer still owns it and unlists it.
 */
int mfs_flush_open_rows(struct mfs_fs_info *fs)
{
	struct mfs_open_row *r, *next;
	int ret = write_rows(fs, fs->open_rows, false);

	for (r = fs->open_rows; r; r = next) {
		next = r->next;
		if (r->writing)
			continue;
		/* on disk now: the allocator must not reuse the row's free parts */
		row_sealed(fs, row_logical(r));
		unlist_row(fs, r);
	}
	return ret;
}

/* Forget buffered rows (an aborted transaction); rows being written stay with their writers. */
void mfs_drop_open_rows(struct mfs_fs_info *fs)
{
	struct mfs_open_row **pp = &fs->open_rows;

	while (*pp) {
		struct mfs_open_row *r = *pp;

		if (r->writing) {
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		free_row(r);
	}
}

bool mfs_range_has_open_rows(struct mfs_fs_info *fs, const struct mfs_chunk_map *map,
			     u64 logical, u64 len)
{
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	u64 row_len = (map->num_stripes - a->nparity) * map->stripe_len;
	u64 first = (logical - map->logical) / row_len;
	u64 last = (logical + len - 1 - map->logical) / row_len;
	struct mfs_open_row *r;

	for (r = fs->open_rows; r; r = r->next)
		if (r->map == map && r->row >= first && r->row <= last)
			return true;
	return false;
}

/*
 * Copy into the open rows; a row that fills up is written at once, or with
 * full != NULL marked writing and appended to *full for the caller to
 * write without the lock.
 */
static int raid56_write(struct mfs_fs_info *fs, struct mfs_chunk_map *map,
			u64 logical, const u8 *buf, u64 len, struct mfs_open_row **full)
{
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	u64 ndata = map->num_stripes - a->nparity;
	u64 row_len = ndata * map->stripe_len;

	while (len) {
		u64 off = logical - map->logical;
		u64 row = off / row_len, in_row = off % row_len;
		u64 n = min_t(u64, len, row_len - in_row);
		struct mfs_open_row *r = find_open_row(fs, map, row);

		if (r && r->writing)
			return -EIO;	/* a full row taking more: the allocator broke */
		if (!r) {
			r = calloc(1, sizeof(*r));
			if (!r)
				return -ENOMEM;
			r->written = calloc(row_len / ROW_UNIT / 8 + 1, 1);
			/* aligned: written around the page cache when full */
			if (!r->written ||
			    posix_memalign((void **)&r->buf, MFS_IO_DIRECT_ALIGN, row_len)) {
				free(r->written);
				free(r);
				return -ENOMEM;
			}
			memset(r->buf, 0, row_len);
			r->map = map;
			r->row = row;
			r->next = fs->open_rows;
			fs->open_rows = r;
		}
		memcpy(r->buf + in_row, buf, n);
		mark_written(r, in_row, n);
		if (r->filled * ROW_UNIT >= row_len && full) {
			/* full: the allocator has nothing left here to give out */
			row_sealed(fs, row_logical(r));
			r->writing = true;
			while (*full)
				full = &(*full)->next_full;
			*full = r;
		} else if (r->filled * ROW_UNIT >= row_len) {
			int ret = flush_row(fs, r);

			if (ret)
				return ret;
		}
		logical += n;
		buf += n;
		len -= n;
	}
	return 0;
}

static int write_logical(struct mfs_fs_info *fs, u64 logical, const void *buf, u32 len,
			 struct mfs_open_row **full)
{
	const u8 *p = buf;

	while (len) {
		struct mfs_chunk_map *map = mfs_find_chunk(fs, logical);
		struct mfs_io_map io;
		u64 n;
		int i, ret, written;

		if (!map)
			return -EUCLEAN;
		if (mfs_profile(map->type)->nparity) {
			n = min_t(u64, len, map->logical + map->length - logical);
			ret = raid56_write(fs, map, logical, p, n, full);
			if (ret)
				return ret;
		} else {
			ret = mfs_map_block(map, logical, &io);
			if (ret)
				return ret;
			n = min_t(u64, len, io.length);
			written = 0;
			for (i = 0; i < io.ncopies; i++) {
				ret = write_copy(fs, &map->stripes[io.stripe[i]], p, n,
						 io.physical[i]);
				if (ret < 0)
					return ret;
				written += !ret;
			}
			if (!written)
				return -EIO;
		}
		logical += n;
		p += n;
		len -= n;
	}
	return 0;
}

int mfs_write_logical(struct mfs_fs_info *fs, u64 logical, const void *buf, u32 len)
{
	return write_logical(fs, logical, buf, len, NULL);
}

int mfs_write_logical_defer(struct mfs_fs_info *fs, u64 logical, const void *buf, u32 len,
			    struct mfs_open_row **full)
{
	return write_logical(fs, logical, buf, len, full);
}

void mfs_release_full_rows(struct mfs_fs_info *fs, struct mfs_open_row *full)
{
	while (full) {
		struct mfs_open_row *next = full->next_full;

		unlist_row(fs, full);
		full = next;
	}
}

/*
 * Data I/O without fs->lock: the caller holds map_lock shared and owns the
 * logical range (a reserved extent it writes, or an extent it read the
 * location of under the lock). Chunks with parity keep their open rows
 * under fs->lock and are refused with -EAGAIN.
 *
 * The pieces of a range (one per stripe unit and copy) are gathered into
 * one vectored transfer per run of adjacent space on a device, and the
 * transfers to different devices run in parallel.
 */
#define BATCH_IOV 64

struct dev_batch {
	struct mfs_device *dev;
	u64 physical;		/* where the run starts on dev */
	u64 len;
	int n;
	struct iovec iov[BATCH_IOV];
	bool write;
	int ret;
};

struct batch_set {
	struct dev_batch *b;
	int n, max;
};

static int batch_add(struct batch_set *set, struct mfs_device *dev, u64 physical, void *buf,
		     u64 len, bool write)
{
	struct dev_batch *b;
	int i;

	for (i = 0; i < set->n; i++) {
		b = &set->b[i];
		if (b->dev == dev && b->physical + b->len == physical && b->n < BATCH_IOV)
			goto append;
	}
	if (set->n == set->max) {
		int nmax = set->max ? set->max * 2 : 8;
		void *p = realloc(set->b, nmax * sizeof(*set->b));

		if (!p)
			return -ENOMEM;
		set->b = p;
		set->max = nmax;
	}
	b = &set->b[set->n++];
	b->dev = dev;
	b->physical = physical;
	b->len = 0;
	b->n = 0;
	b->write = write;
	b->ret = 0;
append:
	b->iov[b->n].iov_base = buf;
	b->iov[b->n].iov_len = len;
	b->n++;
	b->len += len;
	return 0;
}

static void *batch_run(void *arg)
{
	struct dev_batch *b = arg;

	if (!b->write)
		__atomic_add_fetch(&b->dev->reads_in_flight, 1, __ATOMIC_RELAXED);
	b->ret = mfs_io_rw_vec_direct(b->dev->io, b->iov, b->n, b->physical, b->write);
	if (!b->write)
		__atomic_sub_fetch(&b->dev->reads_in_flight, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* Run every batch, those after the first on their own threads; the first error. */
static int batches_run(struct batch_set *set)
{
	pthread_t tid[set->n];
	bool started[set->n];
	int i, ret = 0;

	for (i = 1; i < set->n; i++)
		started[i] = pthread_create(&tid[i], NULL, batch_run, &set->b[i]) == 0;
	if (set->n)
		batch_run(&set->b[0]);
	for (i = 1; i < set->n; i++) {
		if (started[i])
			pthread_join(tid[i], NULL);
		else
			batch_run(&set->b[i]);
	}
	for (i = 0; i < set->n; i++)
		if (set->b[i].ret && !ret)
			ret = set->b[i].ret;
	return ret;
}

/*
 * Writes of redundant data: a device whose transfer fails is counted and
 * marked failed, and the write stands on the other copies (the caller
 * checks that every piece kept one).
 */
static int batches_run_tolerant(struct mfs_fs_info *fs, struct batch_set *set)
{
	int i, ret = 0;

	batches_run(set);
	for (i = 0; i < set->n; i++)
		if (set->b[i].ret &&
		    !mfs_dev_fail(fs, set->b[i].dev, MFS_DEV_STAT_WRITE_ERRS, set->b[i].ret))
			ret = -EIO;
	return ret;
}

/*
 * Which copy of a piece a read takes (read_policy). With devid:N, the copy
 * on that device when it has one. Otherwise the least busy: each 256 MiB of
 * a chunk has a home copy, kept unless its device has clearly more reads
 * in flight than another (more than one stream's readahead), so a
 * sequential reader stays on one device - whose readahead then works -
 * while several readers spread over the copies.
 */
#define READ_REGION_SHIFT	28
#define READ_BUSY_MARGIN	8

static int pick_copy(struct mfs_fs_info *fs, const struct mfs_chunk_map *map,
		     const struct mfs_io_map *io, u64 logical)
{
	int i, home, best = -1, best_load = 0, home_load = 0;

	home = (int)(((logical - map->logical) >> READ_REGION_SHIFT) % io->ncopies);
	for (i = 0; i < io->ncopies; i++) {
		struct mfs_device *dev = map->stripes[io->stripe[i]].dev;
		int load;

		if (read_rank(fs, dev) > READ_RANK_PREFERRED + 1) {
			if (i == home)
				home = -1;
			continue;
		}
		if (read_rank(fs, dev) == READ_RANK_PREFERRED)
			return i;
		load = __atomic_load_n(&dev->reads_in_flight, __ATOMIC_RELAXED);
		if (i == home)
			home_load = load;
		if (best < 0 || load < best_load) {
			best = i;
			best_load = load;
		}
	}
	if (home >= 0 && home_load < best_load + READ_BUSY_MARGIN)
		return home;
	if (best >= 0)
		return best;
	/* no healthy copy: a stale one, whose reads are verified like any other */
	for (i = 0; i < io->ncopies; i++)
		if (read_rank(fs, map->stripes[io->stripe[i]].dev) == READ_RANK_STALE)
			return i;
	return -1;
}

/* Add the pieces of [logical, logical+len) to set: every copy (write) or the least busy. */
static int gather(struct mfs_fs_info *fs, struct batch_set *set, u64 logical, u8 *p, u64 len,
		  bool write)
{
	int ret = 0;

	while (!ret && len) {
		struct mfs_chunk_map *map = mfs_find_chunk(fs, logical);
		struct mfs_io_map io;
		u64 n;
		int c;

		if (!map)
			return -EUCLEAN;
		if (write && mfs_profile(map->type)->nparity)
			return -EAGAIN;
		ret = mfs_map_block(map, logical, &io);
		if (ret)
			return ret;
		n = min_t(u64, len, io.length);
		c = write ? 0 : pick_copy(fs, map, &io, logical);
		if (c < 0)
			return -EIO;
		for (; !ret && c < io.ncopies; c++) {
			struct mfs_map_stripe *s = &map->stripes[io.stripe[c]];

			if (!mfs_dev_usable(s->dev)) {
				if (!write)
					return -EIO;
				continue;	/* the other copies carry it */
			}
			ret = batch_add(set, s->dev, io.physical[c], p, n, write);
			if (!write)
				break;
		}
		logical += n;
		p += n;
		len -= n;
	}
	return ret;
}

/* Is there a usable copy of every piece of [logical, logical+len)? */
static bool range_readable(struct mfs_fs_info *fs, u64 logical, u64 len)
{
	while (len) {
		struct mfs_chunk_map *map = mfs_find_chunk(fs, logical);
		struct mfs_io_map io;
		u64 n;
		int c;

		if (!map || mfs_map_block(map, logical, &io))
			return false;
		for (c = 0; c < io.ncopies; c++)
			if (mfs_dev_usable(map->stripes[io.stripe[c]].dev))
				break;
		if (c == io.ncopies)
			return false;
		n = min_t(u64, len, io.length);
		logical += n;
		len -= n;
	}
	return true;
}

int mfs_write_logical_unlocked(struct mfs_fs_info *fs, u64 logical, const void *buf, u32 len)
{
	struct batch_set set = { 0 };
	int ret = gather(fs, &set, logical, (u8 *)buf, len, true);

	if (!ret)
		ret = batches_run_tolerant(fs, &set);
	if (!ret && !range_readable(fs, logical, len))
		ret = -EIO;
	free(set.b);
	return ret;
}

/*
 * The rows of a list (linked by next_full, or by next: all open rows) with
 * their parity, around the page cache (a buffered write could
 * collide with a direct one of the same row). Consecutive rows of a chunk
 * lie back to back on every device, so each device gets one vectored write
 * per run of rows, and the devices are written in parallel.
 */
static int write_rows(struct mfs_fs_info *fs, struct mfs_open_row *rows, bool full_list)
{
	struct batch_set set = { 0 };
	struct mfs_open_row *r;
	u8 **parity;
	int nrows = 0, i, ret = 0;

	for (r = rows; r; r = full_list ? r->next_full : r->next)
		nrows++;
	if (!nrows)
		return 0;
	parity = calloc(nrows, sizeof(*parity));
	if (!parity)
		return -ENOMEM;
	for (r = rows, i = 0; !ret && r; r = full_list ? r->next_full : r->next, i++) {
		struct mfs_chunk_map *map = r->map;
		int n = map->num_stripes, c;
		u64 slen = map->stripe_len;
		void *blocks[n];

		if (posix_memalign((void **)&parity[i], MFS_IO_DIRECT_ALIGN,
				   mfs_profile(map->type)->nparity * slen)) {
			ret = -ENOMEM;
			break;
		}
		ret = row_blocks(map, r->buf, parity[i], blocks);
		for (c = 0; !ret && c < n; c++) {
			struct mfs_map_stripe *s = &map->stripes[row_stripe_index(map, r->row, c)];

			/* a column whose device is gone is rebuilt from parity when read */
			if (mfs_dev_usable(s->dev))
				ret = batch_add(&set, s->dev, s->physical + r->row * slen,
						blocks[c], slen, true);
		}
	}
	if (!ret)
		ret = batches_run_tolerant(fs, &set);
	/* every row keeps enough columns to be read back */
	for (r = rows; !ret && r; r = full_list ? r->next_full : r->next)
		if (!mfs_chunk_readable(r->map))
			ret = -EIO;
	for (i = 0; i < nrows; i++)
		free(parity[i]);
	free(parity);
	free(set.b);
	return ret;
}

int mfs_write_full_rows(struct mfs_fs_info *fs, struct mfs_open_row *full)
{
	return write_rows(fs, full, true);
}

int mfs_read_ranges_unlocked(struct mfs_fs_info *fs, int n, const struct mfs_read_range *r)
{
	struct batch_set set = { 0 };
	int i, ret = 0;

	for (i = 0; !ret && i < n; i++)
		ret = gather(fs, &set, r[i].logical, r[i].buf, r[i].len, false);
	if (!ret)
		ret = batches_run(&set);
	free(set.b);
	return ret;
}

/*
 * Rebuild len bytes of one data column of a raid5/6 row from the others.
 * lost_parity additionally treats P as unreadable (so Q is used).
 */
static int raid56_rebuild_read(struct mfs_chunk_map *map, const struct mfs_io_map *io,
			       u64 col_off, u8 *buf, u64 len, int also_bad)
{
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	int n = map->num_stripes, ndata = n - a->nparity, i, ret = 0;
	int failed[2], nfailed = 0;
	void *blocks[n];
	u8 *tmp;

	if (also_bad >= 0 && a->nparity < 2)
		return -EIO;
	tmp = malloc((size_t)n * len);
	if (!tmp)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		int idx = row_stripe_index(map, io->row, i);
		struct mfs_map_stripe *s = &map->stripes[idx];

		blocks[i] = tmp + (size_t)i * len;
		if (i == io->data_index || i == also_bad)
			continue;
		ret = read_stripe(s, blocks[i], len, s->physical + io->row * map->stripe_len + col_off);
		if (ret)
			goto out;
	}
	failed[nfailed++] = io->data_index;
	if (also_bad >= 0)
		failed[nfailed++] = also_bad;
	ret = mfs_raid56_rebuild(ndata, a->nparity, len, blocks, nfailed, failed);
	if (!ret)
		memcpy(buf, blocks[io->data_index], len);
out:
	free(tmp);
	return ret;
}

/* Read one piece that does not cross a stripe boundary. */
/* Copy `mirror` of one piece that does not cross a stripe boundary, from the disks. */
static int read_mirror(struct mfs_chunk_map *map, const struct mfs_io_map *io, u64 logical,
		       u8 *buf, u64 len, int mirror)
{
	if (mfs_profile(map->type)->nparity) {
		u64 col_off = (logical - map->logical) % map->stripe_len;
		int k = mirror - 3;

		if (mirror <= 1)
			return read_stripe(&map->stripes[io->stripe[0]], buf, len, io->physical[0]);
		if (mirror == 2)
			return raid56_rebuild_read(map, io, col_off, buf, len, -1);
		/* mirror 3.. : the k-th other column is assumed bad as well */
		if (k >= io->data_index)
			k++;
		if (k >= map->num_stripes)
			return -EINVAL;
		return raid56_rebuild_read(map, io, col_off, buf, len, k);
	}
	if (mirror < 1)
		mirror = 1;
	if (mirror > io->ncopies)
		return -EINVAL;
	return read_stripe(&map->stripes[io->stripe[mirror - 1]], buf, len,
			   io->physical[mirror - 1]);
}

/* Read one piece: a raid5/6 row still in memory is served from there. */
static int read_piece(struct mfs_fs_info *fs, struct mfs_chunk_map *map,
		      u64 logical, u8 *buf, u64 len, int mirror)
{
	struct mfs_io_map io;
	int ret = mfs_map_block(map, logical, &io);

	if (ret)
		return ret;
	if (mfs_profile(map->type)->nparity) {
		u64 row_len = (map->num_stripes - mfs_profile(map->type)->nparity) * map->stripe_len;
		struct mfs_open_row *r = find_open_row(fs, map, io.row);

		if (r) {
			memcpy(buf, r->buf + (logical - map->logical) % row_len, len);
			return 0;
		}
	}
	return read_mirror(map, &io, logical, buf, len, mirror);
}

int mfs_read_logical(struct mfs_fs_info *fs, u64 logical, void *buf, u32 len, int mirror)
{
	u8 *p = buf;

	while (len) {
		struct mfs_chunk_map *map = mfs_find_chunk(fs, logical);
		struct mfs_io_map io;
		u64 n;
		int ret, m, copies;

		if (!map)
			return -EUCLEAN;
		ret = mfs_map_block(map, logical, &io);
		if (ret)
			return ret;
		n = min_t(u64, len, io.length);
		if (mirror > 0) {
			ret = read_piece(fs, map, logical, p, n, mirror);
		} else {
			int *order;

			copies = mfs_num_copies(map);
			order = malloc(copies * sizeof(*order));
			if (!order)
				return -ENOMEM;
			mfs_mirror_order(fs, map, logical, order);
			ret = -EIO;
			for (m = 0; m < copies && ret; m++) {
				ret = read_piece(fs, map, logical, p, n, order[m]);
				if (mirror == MFS_MIRROR_PREFERRED)
					break;
			}
			free(order);
		}
		if (ret)
			return ret;
		logical += n;
		p += n;
		len -= n;
	}
	return 0;
}

struct flush_job {
	struct mfs_io_dev *io;
	int ret;
};

static void *flush_job_run(void *arg)
{
	struct flush_job *j = arg;

	j->ret = mfs_io_flush(j->io);
	return NULL;
}

/*
 * These devices' caches to stable storage, in parallel: a flush waits for
 * the device to write back what it holds, and one device's writeback need
 * not wait for another's. The first error is returned.
 */
int mfs_flush_io_devices(struct mfs_io_dev **io, int n)
{
	struct flush_job job[n ? n : 1];
	pthread_t tid[n ? n : 1];
	bool started[n ? n : 1];
	int i, ret = 0;

	for (i = 0; i < n; i++)
		job[i] = (struct flush_job){ io[i], 0 };
	for (i = 1; i < n; i++)
		started[i] = pthread_create(&tid[i], NULL, flush_job_run, &job[i]) == 0;
	for (i = 0; i < n; i++) {
		if (i == 0 || !started[i])
			flush_job_run(&job[i]);
		else
			pthread_join(tid[i], NULL);
		if (job[i].ret && !ret)
			ret = job[i].ret;
	}
	return ret;
}

/*
 * Every usable device's cache to stable storage, in parallel. A device
 * whose flush fails is counted and marked failed: what it was to keep
 * stands on the other devices (the commit checks that every chunk can
 * still be read). Fails only when no device could flush.
 */
int mfs_flush_all_devices(struct mfs_fs_info *fs)
{
	int n = fs->nr_devices ? fs->nr_devices : 1;
	struct flush_job job[n];
	struct mfs_device *dev[n];
	pthread_t tid[n];
	bool started[n];
	int i, nr = 0, flushed = 0, first_err = 0;

	for (i = 0; i < fs->nr_devices; i++)
		if (mfs_dev_usable(fs->devices[i]))
			dev[nr++] = fs->devices[i];
	for (i = 0; i < nr; i++) {
		job[i] = (struct flush_job){ dev[i]->io, 0 };
		started[i] = i > 0 && pthread_create(&tid[i], NULL, flush_job_run, &job[i]) == 0;
		if (i > 0 && !started[i])
			flush_job_run(&job[i]);
	}
	if (nr)
		flush_job_run(&job[0]);
	for (i = 0; i < nr; i++) {
		if (started[i])
			pthread_join(tid[i], NULL);
		if (!job[i].ret) {
			flushed++;
			continue;
		}
		if (!mfs_dev_fail(fs, dev[i], MFS_DEV_STAT_FLUSH_ERRS, job[i].ret) && !first_err)
			first_err = job[i].ret;
	}
	if (first_err || (!flushed && nr))
		return -EIO;
	return 0;
}

/* Which stripe of map holds copy `mirror` of logical (raid5/6: the data column). */
static int mirror_stripe(struct mfs_chunk_map *map, u64 logical, int mirror, u64 *physical)
{
	struct mfs_io_map io;
	int idx;

	if (mfs_map_block(map, logical, &io))
		return -1;
	if (mfs_profile(map->type)->nparity || mirror < 1 || mirror > io.ncopies)
		idx = 0;
	else
		idx = mirror - 1;
	if (physical)
		*physical = io.physical[idx];
	return io.stripe[idx];
}

struct mfs_device *mfs_mirror_device(struct mfs_chunk_map *map, u64 logical, int mirror)
{
	int idx = mirror_stripe(map, logical, mirror, NULL);

	return idx < 0 ? NULL : map->stripes[idx].dev;
}

int mfs_write_logical_mirror(struct mfs_fs_info *fs, u64 logical, const void *buf,
			     u32 len, int mirror)
{
	struct mfs_chunk_map *map = mfs_find_chunk(fs, logical);
	u64 physical;
	int idx;

	if (!map)
		return -EUCLEAN;
	idx = mirror_stripe(map, logical, mirror, &physical);
	if (idx < 0)
		return -EINVAL;
	return write_copy(fs, &map->stripes[idx], buf, len, physical) ? -EIO : 0;
}

bool mfs_dev_stat_inc(struct mfs_fs_info *fs, u64 logical, int mirror, int stat)
{
	struct mfs_chunk_map *map = mfs_find_chunk(fs, logical);
	struct mfs_device *dev;
	int idx;

	if (!map)
		return false;
	idx = mirror_stripe(map, logical, mirror, NULL);
	if (idx < 0)
		return false;
	dev = map->stripes[idx].dev;
	if (!dev)
		return false;
	mfs_dev_count_error(fs, dev, stat);
	return mfs_dev_usable(dev) && (fs->open_flags & MFS_OPEN_WRITABLE);
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
	u64 *free_space, total;
	int n = 0, i;

	free_space = calloc(fs->nr_devices + 1, sizeof(*free_space));
	if (!free_space)
		return 0;
	for (i = 0; i < fs->nr_devices; i++) {
		struct mfs_device *dev = fs->devices[i];
		u64 used = mfs_device_reserved_bytes(dev->total_bytes);
		int e;

		if (!mfs_device_allocatable(dev))
			continue;
		for (e = 0; e < dev->nr_extents; e++)
			used += dev->extents[e].length;
		free_space[n++] = dev->total_bytes > used ? dev->total_bytes - used : 0;
	}
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

/* Read through a given map (no open rows: the range takes no writes). */
int mfs_read_map(struct mfs_chunk_map *map, u64 logical, void *buf, u64 len, int mirror)
{
	u8 *p = buf;

	while (len) {
		struct mfs_io_map io;
		u64 n;
		int ret = mfs_map_block(map, logical, &io);

		if (ret)
			return ret;
		n = min_t(u64, len, io.length);
		ret = read_mirror(map, &io, logical, p, n, mirror);
		if (ret)
			return ret;
		logical += n;
		p += n;
		len -= n;
	}
	return 0;
}

/* Write through a given map; raid5/6 maps take whole rows only. */
int mfs_write_map(struct mfs_chunk_map *map, u64 logical, const void *buf, u64 len)
{
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	const u8 *p = buf;

	if (a->nparity) {
		u64 row_len = (u64)(map->num_stripes - a->nparity) * map->stripe_len;
		u64 off = logical - map->logical;

		if (off % row_len || len % row_len)
			return -EINVAL;
		for (; len; len -= row_len, p += row_len, off += row_len) {
			int ret = write_full_row(map, off / row_len, p);

			if (ret)
				return ret;
		}
		return 0;
	}
	while (len) {
		struct mfs_io_map io;
		u64 n;
		int i, ret = mfs_map_block(map, logical, &io);

		if (ret)
			return ret;
		n = min_t(u64, len, io.length);
		for (i = 0; i < io.ncopies; i++) {
			ret = write_stripe(&map->stripes[io.stripe[i]], p, n, io.physical[i]);
			if (ret)
				return ret;
		}
		logical += n;
		p += n;
		len -= n;
	}
	return 0;
}

u64 mfs_map_stripe_size(const struct mfs_chunk_map *map)
{
	return map->length / mfs_nr_data_stripes(map->type, map->num_stripes);
}

bool mfs_stripe_kept(const struct mfs_chunk_map *old, int i, const struct mfs_chunk_map *new)
{
	int j;

	for (j = 0; new && j < new->num_stripes; j++)
		if (new->stripes[j].devid == old->stripes[i].devid &&
		    new->stripes[j].physical == old->stripes[i].physical)
			return true;
	return false;
}
