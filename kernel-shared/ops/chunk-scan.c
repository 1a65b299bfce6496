/*
 * chunk-recover's eyes: every device read end to end for the tree blocks
 * of this filesystem, and the trees the chunk map is rebuilt from (root,
 * device, extent, csum) read through the places those blocks were found,
 * since without a chunk tree no logical address can be mapped.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernel-shared/ops/chunk-recover-internal.h"
#include "kernel-shared/block/csum.h"
#include "kernel-shared/volumes/volumes.h"

#define SCAN_WINDOW	(4 * SZ_1M)

void rc_say(struct rc_state *st, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (!st->rc->say)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	st->rc->say(st->rc->arg, buf);
}

void rc_why(struct rc_state *st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(st->rc->why, sizeof(st->rc->why), fmt, ap);
	va_end(ap);
}

/* A tree block of this filesystem at buf (found at devid/physical)? Noted if so. */
static int note_block(struct rc_state *st, const u8 *buf, u64 devid, u64 physical)
{
	const struct mfs_header *h = (const struct mfs_header *)buf;
	struct mfs_fs_info *fs = st->fs;
	u64 bytenr = le64_to_cpu(h->bytenr);
	struct rc_block *b;
	int ret;

	if (memcmp(h->fsid, fs->metadata_fsid, MFS_FSID_SIZE) || bytenr % fs->nodesize ||
	    h->level >= MFS_MAX_LEVEL)
		return 0;
	if (mfs_verify_tree_block(fs, buf, bytenr, NULL, NULL))
		return 0;
	ret = MFS_ARRAY_RESERVE(st->blocks, st->nr_blocks, st->max_blocks, 1024);
	if (ret)
		return ret;
	b = &st->blocks[st->nr_blocks++];
	*b = (struct rc_block){ bytenr, le64_to_cpu(h->generation), le64_to_cpu(h->owner),
				h->level, devid, physical };
	return 0;
}

static int scan_device(struct rc_state *st, struct mfs_device *dev, u8 *buf)
{
	u32 ns = st->fs->nodesize, step = st->fs->sectorsize;
	u64 end = dev->io->size, off;
	int ret;

	for (off = 0; off + ns <= end; off += SCAN_WINDOW) {
		u64 len = min_t(u64, SCAN_WINDOW + ns, end - off), p;

		ret = mfs_io_read(dev->io, buf, len, off);
		if (ret) {
			rc_say(st, "device %llu (%s): read error at %llu, %llu bytes skipped",
			       (unsigned long long)dev->devid, dev->path,
			       (unsigned long long)off, (unsigned long long)SCAN_WINDOW);
			continue;
		}
		for (p = 0; p < SCAN_WINDOW && p + ns <= len; p += step) {
			ret = note_block(st, buf + p, dev->devid, off + p);
			if (ret)
				return ret;
		}
	}
	return 0;
}

static int cmp_block(const void *a, const void *b)
{
	const struct rc_block *x = a, *y = b;

	if (x->bytenr != y->bytenr)
		return x->bytenr < y->bytenr ? -1 : 1;
	return x->generation > y->generation ? -1 : x->generation < y->generation;
}

int rc_scan_devices(struct rc_state *st)
{
	struct mfs_fs_info *fs = st->fs;
	u8 *buf = malloc(SCAN_WINDOW + fs->nodesize);
	int i, ret = 0;

	if (!buf)
		return -ENOMEM;
	for (i = 0; i < fs->nr_devices && !ret; i++)
		if (fs->devices[i]->io)
			ret = scan_device(st, fs->devices[i], buf);
	free(buf);
	if (ret)
		return ret;
	if (st->nr_blocks)
		qsort(st->blocks, st->nr_blocks, sizeof(*st->blocks), cmp_block);
	st->rc->tree_blocks = st->nr_blocks;
	rc_say(st, "scanned %d device(s): %llu tree block copies of this filesystem",
	       fs->nr_devices, (unsigned long long)st->nr_blocks);
	return 0;
}

u64 rc_first_block(const struct rc_state *st, u64 bytenr)
{
	u64 lo = 0, hi = st->nr_blocks;

	while (lo < hi) {
		u64 mid = lo + (hi - lo) / 2;

		if (st->blocks[mid].bytenr < bytenr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The block a pointer names, as chk describes it, from any place the scan
 * found a copy that verifies against it. -ENOENT: no such copy.
 */
static int read_found(struct rc_state *st, u64 bytenr, const struct mfs_tree_check *chk, u8 *buf)
{
	struct mfs_fs_info *fs = st->fs;
	u64 lo = rc_first_block(st, bytenr);

	for (; lo < st->nr_blocks && st->blocks[lo].bytenr == bytenr; lo++) {
		const struct rc_block *b = &st->blocks[lo];
		struct mfs_device *dev = mfs_find_device(fs, b->devid);

		if (b->generation != chk->transid || !dev || !dev->io)
			continue;
		if (mfs_io_read(dev->io, buf, fs->nodesize, b->physical))
			continue;
		if (!mfs_verify_tree_block(fs, buf, bytenr, chk, NULL))
			return 0;
	}
	return -ENOENT;
}

typedef int (*rc_leaf_fn)(struct rc_state *st, const u8 *leaf);

static const char *tree_name(u64 owner)
{
	switch (owner) {
	case MFS_ROOT_TREE_OBJECTID: return "root";
	case MFS_EXTENT_TREE_OBJECTID: return "extent";
	case MFS_DEV_TREE_OBJECTID: return "device";
	case MFS_CSUM_TREE_OBJECTID: return "csum";
	}
	return "chunk";
}

/* Every leaf of the tree under bytenr, in key order, to fn. */
static int walk(struct rc_state *st, const struct mfs_tree_check *chk, u64 bytenr, rc_leaf_fn fn)
{
	const struct mfs_header *h;
	u8 *buf = malloc(st->fs->nodesize);
	u32 i;
	int ret;

	if (!buf)
		return -ENOMEM;
	ret = read_found(st, bytenr, chk, buf);
	if (ret) {
		rc_why(st, "%s tree block %llu (generation %llu, level %d) has no copy that verifies on the devices present",
		       tree_name(chk->owner), (unsigned long long)bytenr,
		       (unsigned long long)chk->transid, chk->level);
		free(buf);
		return -EUCLEAN;
	}
	h = (const struct mfs_header *)buf;
	if (!h->level) {
		ret = fn(st, buf);
		free(buf);
		return ret;
	}
	for (i = 0; i < le32_to_cpu(h->nritems) && !ret; i++) {
		const struct mfs_key_ptr *p = (const struct mfs_key_ptr *)(buf + sizeof(*h)) + i;
		struct mfs_key key;
		struct mfs_tree_check child = { h->level - 1, chk->owner,
						le64_to_cpu(p->generation), &key };

		mfs_disk_key_to_cpu(&key, &p->key);
		ret = walk(st, &child, le64_to_cpu(p->blockptr), fn);
	}
	free(buf);
	return ret;
}

/* Item i of a verified leaf: its key, data and size. */
static const void *leaf_item_at(const u8 *leaf, u32 i, struct mfs_key *key, u32 *size)
{
	const struct mfs_item *it = (const struct mfs_item *)(leaf + sizeof(struct mfs_header)) + i;

	mfs_disk_key_to_cpu(key, &it->key);
	*size = le32_to_cpu(it->size);
	return leaf + sizeof(struct mfs_header) + le32_to_cpu(it->offset);
}

static u32 leaf_nritems(const u8 *leaf)
{
	return le32_to_cpu(((const struct mfs_header *)leaf)->nritems);
}

static int root_leaf(struct rc_state *st, const u8 *leaf)
{
	u32 i, size;

	for (i = 0; i < leaf_nritems(leaf); i++) {
		struct mfs_key key;
		const struct mfs_root_item *ri = leaf_item_at(leaf, i, &key, &size);

		if (key.type != MFS_ROOT_ITEM_KEY || key.objectid >= ARRAY_SIZE(st->root_bytenr) ||
		    size != sizeof(*ri))
			continue;
		st->root_bytenr[key.objectid] = le64_to_cpu(ri->bytenr);
		st->root_gen[key.objectid] = le64_to_cpu(ri->generation);
		st->root_level[key.objectid] = ri->level;
	}
	return 0;
}

static int dev_leaf(struct rc_state *st, const u8 *leaf)
{
	u32 i, size;
	int ret;

	for (i = 0; i < leaf_nritems(leaf); i++) {
		struct mfs_key key;
		const struct mfs_dev_extent *de = leaf_item_at(leaf, i, &key, &size);

		if (key.type != MFS_DEV_EXTENT_KEY)
			continue;
		if (size != sizeof(*de)) {
			rc_why(st, "device extent (devid %llu physical %llu) has size %u, not %zu",
			       (unsigned long long)key.objectid, (unsigned long long)key.offset,
			       size, sizeof(*de));
			return -EUCLEAN;
		}
		ret = MFS_ARRAY_RESERVE(st->dexts, st->nr_dexts, st->max_dexts, 64);
		if (ret)
			return ret;
		st->dexts[st->nr_dexts++] = (struct rc_dev_extent){
			key.objectid, key.offset, le64_to_cpu(de->chunk_offset),
			le64_to_cpu(de->length), false };
	}
	return 0;
}

static int extent_leaf(struct rc_state *st, const u8 *leaf)
{
	u32 i, size;
	int ret;

	for (i = 0; i < leaf_nritems(leaf); i++) {
		struct mfs_key key;
		const struct mfs_block_group_item *bi = leaf_item_at(leaf, i, &key, &size);

		if (key.type != MFS_BLOCK_GROUP_ITEM_KEY)
			continue;
		if (size != sizeof(*bi)) {
			rc_why(st, "block group item %llu has size %u, not %zu",
			       (unsigned long long)key.objectid, size, sizeof(*bi));
			return -EUCLEAN;
		}
		ret = MFS_ARRAY_RESERVE(st->bgs, st->nr_bgs, st->max_bgs, 64);
		if (ret)
			return ret;
		st->bgs[st->nr_bgs++] = (struct rc_bg){ key.objectid, key.offset,
							le64_to_cpu(bi->flags) };
	}
	return 0;
}

/* One checksum per 64 KiB stripe unit is enough to place a data stripe. */
static int csum_leaf(struct rc_state *st, const u8 *leaf)
{
	u32 i, size, cs = st->fs->csum_size, s;
	int ret;

	for (i = 0; i < leaf_nritems(leaf); i++) {
		struct mfs_key key;
		const u8 *sums = leaf_item_at(leaf, i, &key, &size);

		if (key.type != MFS_EXTENT_CSUM_KEY)
			continue;
		for (s = 0; s < size / cs; s++) {
			u64 logical = key.offset + s * MFS_SECTOR;

			if (s && logical % MFS_STRIPE_LEN)
				continue;
			ret = MFS_ARRAY_RESERVE(st->csums, st->nr_csums, st->max_csums, 256);
			if (ret)
				return ret;
			st->csums[st->nr_csums].logical = logical;
			memcpy(st->csums[st->nr_csums++].csum, sums + s * cs, cs);
		}
	}
	return 0;
}

static int walk_root(struct rc_state *st, u64 id, rc_leaf_fn fn)
{
	struct mfs_tree_check chk = { st->root_level[id], id, st->root_gen[id], NULL };

	if (!st->root_bytenr[id]) {
		rc_why(st, "the root tree has no root item for the %s tree", tree_name(id));
		return -EUCLEAN;
	}
	return walk(st, &chk, st->root_bytenr[id], fn);
}

int rc_read_trees(struct rc_state *st)
{
	struct mfs_super_block *sb = &st->fs->super;
	struct mfs_tree_check chk = { sb->root_level, MFS_ROOT_TREE_OBJECTID,
				      le64_to_cpu(sb->root_generation), NULL };
	int ret;

	ret = walk(st, &chk, le64_to_cpu(sb->root), root_leaf);
	if (!ret)
		ret = walk_root(st, MFS_DEV_TREE_OBJECTID, dev_leaf);
	if (!ret)
		ret = walk_root(st, MFS_EXTENT_TREE_OBJECTID, extent_leaf);
	/* only a help to order data stripes: a csum tree that cannot be read is no refusal */
	if (!ret && walk_root(st, MFS_CSUM_TREE_OBJECTID, csum_leaf)) {
		rc_say(st, "the csum tree cannot be read (%s): data chunks are ordered without it",
		       st->rc->why);
		st->rc->why[0] = 0;
		st->nr_csums = 0;
	}
	if (!ret)
		rc_say(st, "read %llu device extents and %llu block groups from the device and extent trees",
		       (unsigned long long)st->nr_dexts, (unsigned long long)st->nr_bgs);
	return ret;
}

static int add_hint(struct rc_state *st, u64 logical, u64 generation, const void *item, u32 size)
{
	struct rc_hint *h;
	int ret;

	if (size < sizeof(struct mfs_chunk) || mfs_check_chunk_item(st->fs, logical, item, size))
		return 0;
	ret = MFS_ARRAY_RESERVE(st->hints, st->nr_hints, st->max_hints, 64);
	if (ret)
		return ret;
	h = &st->hints[st->nr_hints];
	h->item = malloc(size);
	if (!h->item)
		return -ENOMEM;
	memcpy(h->item, item, size);
	h->logical = logical;
	h->generation = generation;
	h->size = size;
	st->nr_hints++;
	return 0;
}

static int add_dev_hint(struct rc_state *st, u64 generation, const void *item, u32 size)
{
	const struct mfs_dev_item *di = item;
	int ret;

	if (size != sizeof(*di) || memcmp(di->fsid, st->fs->metadata_fsid, MFS_FSID_SIZE))
		return 0;
	ret = MFS_ARRAY_RESERVE(st->dev_hints, st->nr_dev_hints, st->max_dev_hints, 16);
	if (ret)
		return ret;
	st->dev_hints[st->nr_dev_hints].generation = generation;
	memcpy(&st->dev_hints[st->nr_dev_hints++].item, di, sizeof(*di));
	return 0;
}

static int hints_of_leaf(struct rc_state *st, const struct rc_block *b, u8 *buf)
{
	struct mfs_device *dev = mfs_find_device(st->fs, b->devid);
	u32 i, size;
	int ret = 0;

	if (!dev || !dev->io || mfs_io_read(dev->io, buf, st->fs->nodesize, b->physical))
		return 0;
	for (i = 0; i < leaf_nritems(buf) && !ret; i++) {
		struct mfs_key key;
		const void *item = leaf_item_at(buf, i, &key, &size);

		if (key.type == MFS_CHUNK_ITEM_KEY)
			ret = add_hint(st, key.offset, b->generation, item, size);
		else if (key.type == MFS_DEV_ITEM_KEY)
			ret = add_dev_hint(st, b->generation, item, size);
	}
	return ret;
}

/* The superblock's bootstrap array, parsed as untrusted bytes. */
static int hints_of_sys_array(struct rc_state *st)
{
	struct mfs_super_block *sb = &st->fs->super;
	u32 size = le32_to_cpu(sb->sys_chunk_array_size), cur = 0;
	int ret = 0;

	if (size > MFS_SYSTEM_CHUNK_ARRAY_SIZE)
		return 0;
	while (!ret && size - cur >= sizeof(struct mfs_disk_key) + sizeof(struct mfs_chunk)) {
		const struct mfs_chunk *c;
		struct mfs_key key;
		u32 isz;

		mfs_disk_key_to_cpu(&key, (const struct mfs_disk_key *)(sb->sys_chunk_array + cur));
		cur += sizeof(struct mfs_disk_key);
		c = (const struct mfs_chunk *)(sb->sys_chunk_array + cur);
		isz = mfs_chunk_item_size(le16_to_cpu(c->num_stripes));
		if (key.type != MFS_CHUNK_ITEM_KEY || isz > size - cur)
			break;
		ret = add_hint(st, key.offset, le64_to_cpu(sb->generation), c, isz);
		cur += isz;
	}
	return ret;
}

int rc_collect_hints(struct rc_state *st)
{
	u8 *buf = malloc(st->fs->nodesize);
	u64 i;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	for (i = 0; i < st->nr_blocks && !ret; i++)
		if (st->blocks[i].owner == MFS_CHUNK_TREE_OBJECTID && st->blocks[i].level == 0)
			ret = hints_of_leaf(st, &st->blocks[i], buf);
	free(buf);
	if (!ret)
		ret = hints_of_sys_array(st);
	return ret;
}
