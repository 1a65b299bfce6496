/*
 * The chunk map: where each logical byte of a chunk lies on the devices
 * for every profile, the table of chunk maps, chunk items and the
 * superblock's system chunk array (DESIGN §3).
 */
#include <stdlib.h>
#include <string.h>
#include "kernel-shared/volumes/fs.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/block/raid56.h"
#include "kernel-shared/block/testhook.h"

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
	if (MFS_ARRAY_RESERVE(fs->chunks, fs->nr_chunks, fs->max_chunks, 16))
		return -ENOMEM;
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

	if (pthread_rwlock_trywrlock(&fs->map_lock)) {
		/* the tests' hook: the swap waits for the maps' readers */
		mfs_test_pause_at("map-wait");
		pthread_rwlock_wrlock(&fs->map_lock);
	}
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
