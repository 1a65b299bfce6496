/*
 * Bringing a stale member up to date (DESIGN §2, §6): a device whose
 * superblock is behind the filesystem's holds nothing written after its
 * generation, and gets those writes from the other copies before it is
 * trusted again.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/ops/catchup.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/tree/alloc.h"
#include "kernel-shared/fs/inode.h"
#include "kernel-shared/block/csum.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/block/raid56.h"

/*
 * A copy-on-write filesystem knows what a device missed without keeping a
 * log: nothing is written in place, so every byte written after generation
 * G belongs to an extent whose extent item has a generation above G, and
 * every stripe placed on the device after G (a balance, a convert, a
 * replace) has a dev extent item inserted after G. Both items live in tree
 * blocks written after G, which hang below pointers of generation above G:
 * walking the extent and device trees down those pointers only finds them
 * all without reading the rest.
 */
struct catchup {
	struct mfs_fs_info *fs;
	struct mfs_device *dev;
	u64 since;			/* the device holds everything up to here */
	u64 *chunks;			/* chunks whose stripe on dev is newer than since */
	int nr_chunks;
	/* raid5/6: rows of this chunk below row_done were already rebuilt */
	const struct mfs_chunk_map *row_map;
	u64 row_done;
	/* raid5/6: the used ranges of ranges_map's chunk (row_verifies_as_is) */
	const struct mfs_chunk_map *ranges_map;
	struct mfs_range *ranges;
	int nranges;
	struct mfs_catchup_result *res;
};

static int walk_block(struct mfs_fs_info *fs, struct extent_buffer *eb, u64 owner, u64 since,
		      int (*fn)(struct extent_buffer *, int, void *), void *arg)
{
	int i, n = eb_nritems(eb), ret = 0;

	if (eb_level(eb) == 0) {
		for (i = 0; i < n && !ret; i++)
			ret = fn(eb, i, arg);
		return ret;
	}
	for (i = 0; i < n && !ret; i++) {
		struct mfs_tree_check chk;
		struct extent_buffer *child;
		struct mfs_key key;

		if (le64_to_cpu(node_ptr(eb, i)->generation) <= since)
			continue;	/* nothing below changed since */
		mfs_child_check(eb, i, owner, &key, &chk);
		ret = mfs_read_tree_block(fs, node_blockptr(eb, i), &chk, &child);
		if (ret)
			break;
		ret = walk_block(fs, child, owner, since, fn, arg);
		mfs_eb_put(fs, child);
	}
	return ret;
}

int mfs_walk_items_since(struct mfs_fs_info *fs, struct mfs_root *root, u64 since,
			 int (*fn)(struct extent_buffer *leaf, int slot, void *arg), void *arg)
{
	if (!root || !root->node || eb_generation(root->node) <= since)
		return 0;
	return walk_block(fs, root->node, root->objectid, since, fn, arg);
}

static bool map_on_dev(const struct mfs_chunk_map *map, const struct mfs_device *dev)
{
	int i;

	for (i = 0; i < map->num_stripes; i++)
		if (map->stripes[i].dev == dev)
			return true;
	return false;
}

/* Dev extents of the device in leaves written since: stripes placed there since. */
struct placed {
	u64 devid;
	u64 *chunks;
	int n, max;
};

static int note_placed(struct extent_buffer *leaf, int slot, void *arg)
{
	struct placed *p = arg;
	struct mfs_dev_extent *de;
	struct mfs_key key;

	leaf_item_key(leaf, slot, &key);
	if (key.type != MFS_DEV_EXTENT_KEY || key.objectid != p->devid)
		return 0;
	if (leaf_item_size(leaf, slot) != sizeof(*de))
		return -EUCLEAN;
	de = leaf_item_data(leaf, slot);
	if (MFS_ARRAY_RESERVE(p->chunks, p->n, p->max, 16))
		return -ENOMEM;
	p->chunks[p->n++] = le64_to_cpu(de->chunk_offset);
	return 0;
}

int mfs_stripes_placed_since(struct mfs_fs_info *fs, const struct mfs_device *dev, u64 since,
			     u64 **chunks, int *n)
{
	struct placed p = { .devid = dev->devid };
	int ret = mfs_walk_items_since(fs, fs->dev_root, since, note_placed, &p);

	if (ret) {
		free(p.chunks);
		return ret;
	}
	*chunks = p.chunks;
	*n = p.n;
	return 0;
}

static bool chunk_is_new(const struct catchup *c, u64 logical)
{
	int i;

	for (i = 0; i < c->nr_chunks; i++)
		if (c->chunks[i] == logical)
			return true;
	return false;
}

/*
 * The contents of extent r as they should be, from a copy that verifies:
 * data against its checksums sector by sector, a tree block against its
 * header. The stale device's own copy is tried last (mfs_mirror_order).
 * 1: nothing to verify against (preallocated space): nothing to copy.
 */
static int read_good(struct catchup *c, const struct mfs_chunk_map *map,
		     const struct mfs_range *r, u8 *buf)
{
	struct mfs_fs_info *fs = c->fs;
	int copies = mfs_num_copies(map), order[copies], m, ret;
	u8 *csums = NULL;
	u64 s;

	mfs_mirror_order(fs, map, r->start, order);
	if (r->flags & MFS_EXTENT_FLAG_TREE_BLOCK) {
		struct mfs_tree_check chk = { .level = r->level, .owner = r->owner,
					      .transid = r->gen };

		for (m = 0; m < copies; m++)
			if (!mfs_read_logical(fs, r->start, buf, r->len, order[m]) &&
			    !mfs_verify_tree_block(fs, buf, r->start, &chk, NULL))
				return 0;
		return -EIO;
	}
	ret = mfs_extent_csums(fs, r->start, r->len, &csums);
	if (ret)
		return ret;
	for (s = 0; s < r->len / MFS_SECTOR; s++) {
		u8 *sb = buf + s * MFS_SECTOR, got[MFS_CSUM_SIZE];

		for (m = 0; m < copies; m++) {
			if (mfs_read_logical(fs, r->start + s * MFS_SECTOR, sb, MFS_SECTOR,
					     order[m]))
				continue;
			mfs_csum_compute(fs->csum_type, sb, MFS_SECTOR, got);
			if (!memcmp(got, csums + s * fs->csum_size, fs->csum_size))
				break;
		}
		if (m == copies) {
			free(csums);
			return -EIO;
		}
	}
	free(csums);
	return 0;
}

/* Write buf, the contents of [logical, +len), to every copy of it on the device. */
static int write_dev_copies(struct catchup *c, const struct mfs_chunk_map *map, u64 logical,
			    const u8 *buf, u64 len)
{
	while (len) {
		struct mfs_io_map io;
		u64 n;
		int i, ret = mfs_map_block(map, logical, &io);

		if (ret)
			return ret;
		n = min_t(u64, len, io.length);
		for (i = 0; i < io.ncopies; i++) {
			if (map->stripes[io.stripe[i]].dev != c->dev)
				continue;
			ret = mfs_io_write(c->dev->io, buf, n, io.physical[i]);
			if (ret)
				return ret;
		}
		logical += n;
		buf += n;
		len -= n;
	}
	return 0;
}

/*
 * A data column rebuilt from parity replaces the device's only where it
 * verifies, or where the device's own sector does not: a sector that
 * verifies on the device (it did not miss that write) is never
 * overwritten with a rebuild that does not. Sectors without a checksum
 * (free space) take the rebuild.
 */
static void choose_sectors(struct catchup *c, u64 logical, u8 *rebuilt, const u8 *cur,
			   bool cur_read, u64 len)
{
	struct mfs_fs_info *fs = c->fs;
	u8 want[MFS_CSUM_SIZE], got[MFS_CSUM_SIZE];
	u64 s;

	for (s = 0; s < len; s += MFS_SECTOR) {
		if (mfs_data_sector_csum(fs, logical + s, want))
			continue;
		mfs_csum_compute(fs->csum_type, rebuilt + s, MFS_SECTOR, got);
		if (!memcmp(got, want, fs->csum_size))
			continue;
		if (cur_read) {
			mfs_csum_compute(fs->csum_type, cur + s, MFS_SECTOR, got);
			if (!memcmp(got, want, fs->csum_size)) {
				memcpy(rebuilt + s, cur + s, MFS_SECTOR);
				continue;
			}
		}
		c->res->lost++;
	}
}

/* The used ranges of map's chunk, read once per chunk into c->ranges. */
static int chunk_ranges(struct catchup *c, const struct mfs_chunk_map *map)
{
	struct mfs_block_group *bg;
	int ret;

	if (c->ranges_map == map)
		return 0;
	free(c->ranges);
	c->ranges = NULL;
	c->nranges = 0;
	c->ranges_map = NULL;
	bg = mfs_lookup_block_group(c->fs, map->logical);
	if (!bg || bg->start != map->logical)
		return -EUCLEAN;
	ret = mfs_bg_used_ranges(c->fs, bg, &c->ranges, &c->nranges);
	if (!ret)
		c->ranges_map = map;
	return ret;
}

/*
 * Whether what is used of r inside [start, end) verifies in buf, the bytes
 * of [start, end): data sectors against their checksums, a tree block
 * against its header. 0 yes, -EIO no (a tree block only partly inside
 * cannot be judged: no).
 */
static int range_verifies(struct mfs_fs_info *fs, const struct mfs_range *r, const u8 *buf,
			  u64 start, u64 end)
{
	u64 from = max_t(u64, r->start, start), to = min_t(u64, r->start + r->len, end), pos;
	u8 *csums = NULL;
	int ret;

	if (r->flags & MFS_EXTENT_FLAG_TREE_BLOCK) {
		struct mfs_tree_check chk = { .level = r->level, .owner = r->owner,
					      .transid = r->gen };

		if (from != r->start || to != r->start + r->len ||
		    mfs_verify_tree_block(fs, buf + (from - start), r->start, &chk, NULL))
			return -EIO;
		return 0;
	}
	ret = mfs_extent_csums(fs, r->start, r->len, &csums);
	if (ret)
		return ret == 1 ? 0 : ret;	/* 1: never written (preallocated) */
	for (pos = from; pos < to && !ret; pos += MFS_SECTOR) {
		u8 got[MFS_CSUM_SIZE];

		mfs_csum_compute(fs->csum_type, buf + (pos - start), MFS_SECTOR, got);
		if (memcmp(got, csums + (pos - r->start) / MFS_SECTOR * fs->csum_size,
			   fs->csum_size))
			ret = -EIO;
	}
	free(csums);
	return ret;
}

/* Whether what is used of [start, +len) verifies in buf, its bytes (range_verifies). */
static int span_verifies(struct catchup *c, const u8 *buf, u64 start, u64 len)
{
	int lo = 0, hi = c->nranges, ret = 0;

	while (lo < hi) {	/* the first range that ends past start */
		int mid = lo + (hi - lo) / 2;

		if (c->ranges[mid].start + c->ranges[mid].len <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; !ret && lo < c->nranges && c->ranges[lo].start < start + len; lo++)
		ret = range_verifies(c->fs, &c->ranges[lo], buf, start, start + len);
	return ret;
}

/*
 * raid5/6: a row that has a column on a device that is gone, beside the
 * stale device's, so the parity cannot say whether the stale column is
 * current; the checksums can (see row_whole_as_is for why a member that
 * is behind may well hold everything). The gone columns are rebuilt from
 * the others as they are (the stale device's included) and what the
 * device's column answers for is verified - its own data, and the data
 * of the gone columns: 0 when all that is used there does (the row stands
 * as it is, whether the device's column is data or parity - parity that
 * rebuilds nothing used cannot matter), -EIO when something does not (a
 * column the device missed holds old bytes: its data does not verify, nor
 * does what its old parity rebuilds) or more columns are gone than the
 * parity covers.
 */
static int row_verifies_as_is(struct catchup *c, const struct mfs_chunk_map *map, u64 row)
{
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	int n = map->num_stripes, ndata = n - a->nparity, col, nlost = 0, ret;
	int lost[2];	/* at most nparity */
	u64 slen = map->stripe_len, start = map->logical + row * ndata * slen;
	bool judged[n];
	void *blocks[n];
	u8 *tmp;

	ret = chunk_ranges(c, map);
	if (ret)
		return ret;
	tmp = malloc((size_t)n * slen);
	if (!tmp)
		return -ENOMEM;
	for (col = 0; col < n && !ret; col++) {
		const struct mfs_map_stripe *s = &map->stripes[(col + row % n) % n];

		blocks[col] = tmp + (size_t)col * slen;
		/* what the device's column says: its data, and what it rebuilds */
		judged[col] = s->dev == c->dev || !mfs_dev_usable(s->dev);
		if (mfs_dev_usable(s->dev))
			ret = mfs_io_read(s->dev->io, blocks[col], slen, s->physical + row * slen);
		else if (nlost < a->nparity)
			lost[nlost++] = col;
		else
			ret = -EIO;
	}
	if (!ret && nlost)
		ret = mfs_raid56_rebuild(ndata, a->nparity, slen, blocks, nlost, lost);
	/* (a bad sector on another member's column is not this device's to answer for) */
	for (col = 0; col < ndata && !ret; col++)
		if (judged[col])
			ret = span_verifies(c, blocks[col], start + col * slen, slen);
	free(tmp);
	return ret;
}

/*
 * A row with more columns on members that are behind than its parity
 * covers. Such members may well hold everything: a crash between the
 * superblock writes of a commit leaves members whose superblock alone is
 * behind, their data having been flushed before any superblock went out
 * (the commit's step 2). raid5/6 rows are written whole, once, so a row
 * written while a member was away does not match its parity on that
 * member's old column. Read every column as it is: 0 when the parity
 * matches (the row is whole, nothing to rebuild), -EIO when it does not
 * or a column cannot be read, -ENODEV when a column's device is gone.
 */
static int row_whole_as_is(const struct mfs_chunk_map *map, u64 row)
{
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	int n = map->num_stripes, ndata = n - a->nparity, col, ret = 0;
	u64 slen = map->stripe_len;
	void *blocks[n];
	u8 *tmp, *stored;

	tmp = malloc((size_t)n * slen);
	stored = malloc((size_t)a->nparity * slen);
	if (!tmp || !stored) {
		ret = -ENOMEM;
		goto out;
	}
	for (col = 0; col < n && !ret; col++) {
		const struct mfs_map_stripe *s = &map->stripes[(col + row % n) % n];

		blocks[col] = tmp + (size_t)col * slen;
		if (!mfs_dev_usable(s->dev))
			ret = -ENODEV;
		else
			ret = mfs_io_read(s->dev->io, blocks[col], slen, s->physical + row * slen);
	}
	if (ret)
		goto out;
	memcpy(stored, blocks[ndata], (size_t)a->nparity * slen);
	ret = mfs_raid56_gen(ndata, a->nparity, slen, blocks);
	if (!ret && memcmp(stored, blocks[ndata], (size_t)a->nparity * slen))
		ret = -EIO;
out:
	free(stored);
	free(tmp);
	return ret;
}

/*
 * The device's column of a row is parity, computed anew from the data
 * columns in blocks (the others' parity too). Parity computed from a
 * data sector that went bad on its device would make the bad bytes the
 * only ones left: when a data column does not verify, the device's own
 * parity is tried on it first (the member may be behind in its superblock
 * alone, its parity current). 1: the device's parity rebuilds the bad
 * column's used data so that it verifies - keep it (the bad copy is the
 * scrub's to repair); 0: write the computed parity; -errno.
 */
static int parity_is_current(struct catchup *c, const struct mfs_chunk_map *map, u64 row,
			     void **blocks, int failed, u64 physical)
{
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	int n = map->num_stripes, ndata = n - a->nparity, col, bad = -1, lost[2], nlost = 0;
	u64 slen = map->stripe_len, start = map->logical + row * ndata * slen;
	void *mine[n];
	u8 *tmp;
	int ret = chunk_ranges(c, map);

	for (col = 0; !ret && col < ndata; col++) {
		int v = span_verifies(c, blocks[col], start + col * slen, slen);

		if (v == -EIO && bad < 0)
			bad = col;
		else if (v == -EIO)
			return 0;	/* two bad: beyond what one parity can tell */
		else if (v)
			ret = v;
	}
	if (ret || bad < 0)
		return ret;
	/*
	 * the device's parity as it is, the bad column (and any other
	 * parity) rebuilt from it into buffers of their own: blocks keeps
	 * the computed parity for the write; the rest is only read
	 */
	tmp = malloc((size_t)(a->nparity + 1) * slen);
	if (!tmp)
		return -ENOMEM;
	for (col = 0; col < n; col++) {
		mine[col] = blocks[col];
		if (col == failed || col == bad || col >= ndata)
			mine[col] = tmp + (size_t)(col == failed ? 0 : 1 + nlost) * slen;
		if (col == failed)
			ret = mfs_io_read(c->dev->io, mine[col], slen, physical) ? -EIO : ret;
		else if (col == bad || col >= ndata)
			lost[nlost++] = col;
	}
	if (!ret)
		ret = mfs_raid56_rebuild(ndata, a->nparity, slen, mine, nlost, lost);
	if (!ret)
		ret = span_verifies(c, mine[bad], start + bad * slen, slen) ? 0 : 1;
	else if (ret == -EIO)
		ret = 0;
	free(tmp);
	return ret;
}

/*
 * raid5/6: the device's column of one row, rebuilt from the other columns.
 * A column on a device that is gone or itself stale (raid6 with two
 * members back from a degraded period) is rebuilt alongside, never read:
 * raid6 has the parity for both.
 */
static int rebuild_row(struct catchup *c, const struct mfs_chunk_map *map, u64 row)
{
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	int n = map->num_stripes, ndata = n - a->nparity, col, ret = 0, failed = -1;
	int lost[2], nlost = 0;	/* at most nparity, 2 for raid6 */
	u64 slen = map->stripe_len;
	void *blocks[n];
	u8 *tmp;

	tmp = malloc((size_t)n * slen);
	if (!tmp)
		return -ENOMEM;
	for (col = 0; col < n; col++) {
		const struct mfs_map_stripe *s = &map->stripes[(col + row % n) % n];

		blocks[col] = tmp + (size_t)col * slen;
		if (s->dev == c->dev)
			failed = col;
		if (s->dev == c->dev || !mfs_dev_usable(s->dev) || s->dev->stale_gen) {
			if (nlost == a->nparity) {
				free(tmp);
				/* with a column gone too the checksums must say */
				ret = row_whole_as_is(map, row);
				return ret == -ENODEV ? row_verifies_as_is(c, map, row) : ret;
			}
			lost[nlost++] = col;
			continue;
		}
		ret = mfs_io_read(s->dev->io, blocks[col], slen, s->physical + row * slen);
		if (ret)
			break;
	}
	if (!ret && failed >= 0)
		ret = mfs_raid56_rebuild(ndata, a->nparity, slen, blocks, nlost, lost);
	if (!ret && failed >= 0) {
		const struct mfs_map_stripe *s = &map->stripes[(failed + row % n) % n];
		u64 physical = s->physical + row * slen;

		if (failed < ndata) {
			u8 *cur = malloc(slen);
			bool cur_read = cur && !mfs_io_read(c->dev->io, cur, slen, physical);

			choose_sectors(c, map->logical + (row * ndata + failed) * slen,
				       blocks[failed], cur, cur_read, slen);
			free(cur);
		} else if (nlost == 1) {
			ret = parity_is_current(c, map, row, blocks, failed, physical);
			if (ret == 1) {
				free(tmp);
				return 0;
			}
		}
		if (ret >= 0)
			ret = mfs_io_write(c->dev->io, blocks[failed], slen, physical);
	}
	free(tmp);
	return ret;
}

/* The rows of r whose column on the device is not rebuilt yet. */
static int rebuild_rows(struct catchup *c, const struct mfs_chunk_map *map,
			const struct mfs_range *r)
{
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	u64 row_len = (u64)(map->num_stripes - a->nparity) * map->stripe_len;
	u64 first = (r->start - map->logical) / row_len;
	u64 last = (r->start + r->len - 1 - map->logical) / row_len, row;
	int ret;

	if (c->row_map != map) {
		c->row_map = map;
		c->row_done = 0;
	}
	for (row = max_t(u64, first, c->row_done); row <= last; row++) {
		ret = rebuild_row(c, map, row);
		if (ret)
			return ret;
		c->row_done = row + 1;
		c->res->bytes += map->stripe_len;
	}
	return 0;
}

static int catch_up_range(struct catchup *c, const struct mfs_range *r)
{
	struct mfs_chunk_map *map = mfs_find_chunk(c->fs, r->start);
	u8 *buf;
	int ret;

	if (!map || !map_on_dev(map, c->dev))
		return 0;
	if (mfs_profile(map->type)->nparity) {
		ret = rebuild_rows(c, map, r);
	} else {
		buf = malloc(r->len);
		if (!buf)
			return -ENOMEM;
		ret = read_good(c, map, r, buf);
		if (!ret) {
			ret = write_dev_copies(c, map, r->start, buf, r->len);
			if (!ret)
				c->res->bytes += r->len;
		}
		free(buf);
		if (ret == 1)
			return 0;
	}
	if (ret == -EIO || ret == -EUCLEAN) {
		/* no copy verifies: the data is lost whatever the device holds */
		c->res->lost++;
		return 0;
	}
	if (!ret)
		c->res->extents++;
	return ret;
}

static int range_of_item(struct extent_buffer *leaf, int slot, struct mfs_range *r)
{
	struct mfs_extent_item *ei;
	struct mfs_key key;

	leaf_item_key(leaf, slot, &key);
	if (key.type != MFS_EXTENT_ITEM_KEY)
		return 1;
	if (leaf_item_size(leaf, slot) != sizeof(*ei))
		return -EUCLEAN;
	ei = leaf_item_data(leaf, slot);
	r->start = key.objectid;
	r->len = key.offset;
	r->flags = le64_to_cpu(ei->flags);
	r->owner = le64_to_cpu(ei->owner_root);
	r->level = le64_to_cpu(ei->owner_objectid);
	r->gen = le64_to_cpu(ei->generation);
	if (!r->len || r->start + r->len < r->start)
		return -EUCLEAN;
	return 0;
}

/* Extents written since, outside the chunks that are copied whole. */
static int catch_up_item(struct extent_buffer *leaf, int slot, void *arg)
{
	struct catchup *c = arg;
	struct mfs_chunk_map *map;
	struct mfs_range r;
	int ret = range_of_item(leaf, slot, &r);

	if (ret)
		return ret > 0 ? 0 : ret;
	if (r.gen <= c->since)
		return 0;
	map = mfs_find_chunk(c->fs, r.start);
	if (map && chunk_is_new(c, map->logical))
		return 0;
	return catch_up_range(c, &r);
}

/* Every extent of a chunk whose stripe on the device was placed since. */
static int catch_up_chunk(struct catchup *c, u64 logical)
{
	struct mfs_block_group *bg = mfs_lookup_block_group(c->fs, logical);
	struct mfs_range *r = NULL;
	int n = 0, i, ret;

	if (!bg || bg->start != logical)
		return 0;
	ret = mfs_bg_used_ranges(c->fs, bg, &r, &n);
	for (i = 0; !ret && i < n; i++)
		ret = catch_up_range(c, &r[i]);
	free(r);
	return ret;
}

int mfs_catch_up_device(struct mfs_fs_info *fs, struct mfs_device *dev,
			struct mfs_catchup_result *res)
{
	struct catchup c = { .fs = fs, .dev = dev, .since = dev->stale_gen, .res = res };
	int i, ret;

	memset(res, 0, sizeof(*res));
	if (!dev->stale_gen || !mfs_dev_usable(dev))
		return 0;
	ret = mfs_stripes_placed_since(fs, dev, c.since, &c.chunks, &c.nr_chunks);
	for (i = 0; !ret && i < c.nr_chunks; i++)
		ret = catch_up_chunk(&c, c.chunks[i]);
	if (!ret)
		ret = mfs_walk_items_since(fs, fs->extent_root, c.since, catch_up_item, &c);
	if (!ret)
		ret = mfs_io_flush(dev->io);
	free(c.chunks);
	free(c.ranges);
	if (!ret && !res->lost)
		dev->stale_gen = 0;	/* current: read like any member, its superblock rewritten */
	return ret;
}
