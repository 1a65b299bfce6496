/*
 * The checker behind `mfs check`: walks superblocks, chunks, every copy of
 * every tree block and the extent tree, and reports each inconsistency.
 * The fs tree and data phases are in check-fs.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/ops/check.h"
#include "kernel-shared/ops/catchup.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/tree/alloc.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/ops/restripe.h"

#define problem mfs_check_problem

/* A problem (counted as an error) or a warning, formatted, to the caller. */
static void emit(struct mfs_check_ctl *ctl, bool warn, const char *fmt, va_list ap)
{
	char buf[1536];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	if (warn) {
		ctl->warnings++;
		if (ctl->warn)
			ctl->warn(ctl->arg, buf);
		return;
	}
	ctl->errors++;
	if (ctl->report)
		ctl->report(ctl->arg, buf);
}

void mfs_check_problem(struct mfs_check_ctl *ctl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(ctl, false, fmt, ap);
	va_end(ap);
}

static void check_warning(struct mfs_check_ctl *ctl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(ctl, true, fmt, ap);
	va_end(ap);
}

struct mfs_check_stale {
	const struct mfs_device *dev;
	u64 *chunks;		/* NULL with all: every chunk counts as placed since */
	int n;
	bool all;
};

void mfs_check_free(struct mfs_check_ctl *ctl)
{
	int i;

	for (i = 0; i < ctl->nr_fixes; i++)
		free(ctl->fixes[i].entry);
	free(ctl->fixes);
	ctl->fixes = NULL;
	ctl->nr_fixes = ctl->max_fixes = 0;
	free(ctl->blocks);
	ctl->blocks = NULL;
	ctl->nr_blocks = ctl->max_blocks = 0;
	for (i = 0; i < ctl->nr_stale; i++)
		free(ctl->stale[i].chunks);
	free(ctl->stale);
	ctl->stale = NULL;
	ctl->nr_stale = 0;
	ctl->stale_loaded = false;
}

/* For each stale member, the chunks with a stripe placed on it since. */
static void load_stale(struct mfs_fs_info *fs, struct mfs_check_ctl *ctl)
{
	int i, n = 0;

	ctl->stale_loaded = true;
	ctl->stale = calloc(fs->nr_devices, sizeof(*ctl->stale));
	for (i = 0; ctl->stale && i < fs->nr_devices; i++) {
		struct mfs_device *dev = fs->devices[i];
		struct mfs_check_stale *st = &ctl->stale[n];

		if (!dev->stale_gen)
			continue;
		st->dev = dev;
		/* the device tree unreadable: judge none of its copies */
		st->all = mfs_stripes_placed_since(fs, dev, dev->stale_gen, &st->chunks, &st->n) != 0;
		n++;
	}
	ctl->nr_stale = n;
}

bool mfs_chunk_has_stale(const struct mfs_chunk_map *map)
{
	int i;

	for (i = 0; i < map->num_stripes; i++)
		if (map->stripes[i].dev && map->stripes[i].dev->stale_gen)
			return true;
	return false;
}

bool mfs_check_copy_judged(struct mfs_fs_info *fs, struct mfs_check_ctl *ctl,
			   const struct mfs_chunk_map *map, const struct mfs_device *dev, u64 gen)
{
	int i, k;

	if (!dev)
		return false;
	if (!dev->stale_gen)
		return true;
	if (gen > dev->stale_gen)
		return false;
	if (!ctl->stale_loaded)
		load_stale(fs, ctl);
	if (!ctl->stale)
		return false;
	for (i = 0; i < ctl->nr_stale; i++) {
		if (ctl->stale[i].dev != dev)
			continue;
		if (ctl->stale[i].all)
			return false;
		for (k = 0; k < ctl->stale[i].n; k++)
			if (ctl->stale[i].chunks[k] == map->logical)
				return false;
		return true;
	}
	return false;
}

/* ---------------- phase 1: superblocks ---------------- */

/*
 * Was the last commit cut short while writing superblocks? Then some
 * present member still holds a copy one generation behind.
 */
static bool supers_interrupted(struct mfs_fs_info *fs)
{
	struct mfs_super_block sb;
	int i, m, err;

	for (i = 0; i < fs->nr_devices; i++) {
		if (fs->devices[i]->missing)
			continue;
		for (m = 0; m < MFS_SUPER_MIRROR_MAX; m++)
			if (mfs_super_copy_state(fs, fs->devices[i], m, &sb, &err) ==
			    MFS_SB_COPY_BEHIND)
				return true;
	}
	return false;
}

/*
 * A copy that was never written: an error, unless the last commit was
 * interrupted in its superblock writes and another copy on the same device
 * is current. That is a device joining in that commit (its copies go out
 * before the others', so a crash can land some of them only), and the
 * next commit writes the rest.
 */
static void missing_copy(struct mfs_fs_info *fs, struct mfs_check_ctl *ctl,
			 struct mfs_device *dev, int m, bool interrupted)
{
	struct mfs_super_block sb;
	int other, err;

	for (other = 0; interrupted && other < MFS_SUPER_MIRROR_MAX; other++) {
		if (other == m || mfs_super_copy_state(fs, dev, other, &sb, &err) != MFS_SB_COPY_OK)
			continue;
		check_warning(ctl, "superblock copy %d at %llu on device %llu (%s) is not written yet: the last commit was interrupted writing superblocks; the next commit writes it",
			      m, (unsigned long long)mfs_sb_offset(m),
			      (unsigned long long)dev->devid, dev->path);
		return;
	}
	problem(ctl, "superblock copy %d at %llu on device %llu (%s) is missing",
		m, (unsigned long long)mfs_sb_offset(m), (unsigned long long)dev->devid,
		dev->path);
}

/* Copy m of dev, reported by its state. */
static void check_super_copy(struct mfs_fs_info *fs, struct mfs_check_ctl *ctl,
			     struct mfs_device *dev, int m, bool interrupted)
{
	unsigned long long devid = dev->devid;
	struct mfs_super_block sb;
	int err;
	enum mfs_sb_copy_state st = mfs_super_copy_state(fs, dev, m, &sb, &err);

	if (st != MFS_SB_COPY_OK && st != MFS_SB_COPY_BEYOND)
		mfs_check_add_fix(ctl, MFS_FIX_SUPERS, 0, 0, 0);
	switch (st) {
	case MFS_SB_COPY_OK:
	case MFS_SB_COPY_BEYOND:
		break;
	case MFS_SB_COPY_MISSING:
		missing_copy(fs, ctl, dev, m, interrupted);
		break;
	case MFS_SB_COPY_CORRUPT:
		problem(ctl, "superblock copy %d at %llu on device %llu (%s) is corrupt: %s",
			m, (unsigned long long)mfs_sb_offset(m), devid, dev->path,
			err == -EUCLEAN ? "checksum or field mismatch" : strerror(-err));
		break;
	case MFS_SB_COPY_FOREIGN:
		problem(ctl, "superblock copy %d on device %llu belongs to another filesystem",
			m, devid);
		break;
	/*
	 * A crash between the superblock writes of one commit leaves copies
	 * one generation behind: the filesystem is consistent and the next
	 * commit rewrites them.
	 */
	case MFS_SB_COPY_BEHIND:
		check_warning(ctl, "superblock copy %d on device %llu (%s) is one generation behind (%llu); the next commit rewrites it",
			      m, devid, dev->path, (unsigned long long)le64_to_cpu(sb.generation));
		break;
	case MFS_SB_COPY_OTHER_GEN:
		problem(ctl, "superblock copy %d on device %llu (%s) has generation %llu, expected %llu",
			m, devid, dev->path, (unsigned long long)le64_to_cpu(sb.generation),
			(unsigned long long)fs->generation);
		break;
	case MFS_SB_COPY_WRONG_DEVID:
		problem(ctl, "superblock copy %d on %s names devid %llu, expected %llu",
			m, dev->path, (unsigned long long)le64_to_cpu(sb.dev_item.devid), devid);
		break;
	}
}

int mfs_check_supers(struct mfs_fs_info *fs, struct mfs_check_ctl *ctl)
{
	bool interrupted = supers_interrupted(fs);
	int i, m;

	for (i = 0; i < fs->nr_problems; i++)
		problem(ctl, "%s", fs->problems[i]);
	for (i = 0; i < fs->nr_devices; i++) {
		struct mfs_device *dev = fs->devices[i];

		if (dev->missing) {
			problem(ctl, "device %llu is missing", (unsigned long long)dev->devid);
			continue;
		}
		for (m = 0; m < MFS_SUPER_MIRROR_MAX; m++)
			check_super_copy(fs, ctl, dev, m, interrupted);
	}
	if (le64_to_cpu(fs->super.num_devices) != (u64)fs->nr_devices)
		problem(ctl, "superblock says %llu devices, the chunk tree has %d",
			(unsigned long long)le64_to_cpu(fs->super.num_devices), fs->nr_devices);
	return 0;
}

/* ---------------- phase 2: chunks and device extents ---------------- */

static struct mfs_dev_extent_rec *find_dev_extent(struct mfs_device *dev, u64 physical)
{
	int i;

	for (i = 0; i < dev->nr_extents; i++)
		if (dev->extents[i].physical == physical)
			return &dev->extents[i];
	return NULL;
}

int mfs_check_chunks(struct mfs_fs_info *fs, struct mfs_check_ctl *ctl)
{
	int i, s, e;

	for (i = 0; i < fs->nr_chunks; i++) {
		struct mfs_chunk_map *map = fs->chunks[i];
		u64 stripe_size = map->length / mfs_nr_data_stripes(map->type, map->num_stripes);

		if (!mfs_lookup_block_group(fs, map->logical))
			problem(ctl, "chunk %llu has no block group item",
				(unsigned long long)map->logical);
		for (s = 0; s < map->num_stripes; s++) {
			struct mfs_map_stripe *st = &map->stripes[s];
			struct mfs_device *dev = mfs_find_device(fs, st->devid);
			struct mfs_dev_extent_rec *de;

			if (!dev) {
				problem(ctl, "chunk %llu stripe %d: unknown device %llu",
					(unsigned long long)map->logical, s,
					(unsigned long long)st->devid);
				continue;
			}
			if (memcmp(dev->uuid, st->dev_uuid, MFS_UUID_SIZE))
				problem(ctl, "chunk %llu stripe %d: device uuid does not match device %llu",
					(unsigned long long)map->logical, s,
					(unsigned long long)st->devid);
			if (st->physical + stripe_size > dev->total_bytes)
				problem(ctl, "chunk %llu stripe %d: ends past the end of device %llu",
					(unsigned long long)map->logical, s,
					(unsigned long long)st->devid);
			if (mfs_range_is_reserved(st->physical, stripe_size))
				problem(ctl, "chunk %llu stripe %d: covers a reserved range or superblock of device %llu",
					(unsigned long long)map->logical, s,
					(unsigned long long)st->devid);
			de = find_dev_extent(dev, st->physical);
			if (!de)
				problem(ctl, "chunk %llu stripe %d: no device extent at devid %llu physical %llu",
					(unsigned long long)map->logical, s,
					(unsigned long long)st->devid,
					(unsigned long long)st->physical);
			else if (de->length != stripe_size || de->chunk_offset != map->logical)
				problem(ctl, "device extent devid %llu physical %llu does not match chunk %llu stripe %d",
					(unsigned long long)st->devid,
					(unsigned long long)st->physical,
					(unsigned long long)map->logical, s);
		}
	}
	for (i = 0; i < fs->nr_devices; i++) {
		struct mfs_device *dev = fs->devices[i];
		u64 sum = 0;

		/* a device cut short (a truncated image, a smaller disk put in) */
		if (dev->io && dev->io->size < dev->total_bytes)
			problem(ctl, "device %llu (%s) is %llu bytes, less than the %llu the filesystem gives it",
				(unsigned long long)dev->devid, dev->path,
				(unsigned long long)dev->io->size,
				(unsigned long long)dev->total_bytes);
		for (e = 0; e < dev->nr_extents; e++) {
			struct mfs_dev_extent_rec *de = &dev->extents[e];
			struct mfs_chunk_map *map = mfs_find_chunk(fs, de->chunk_offset);
			bool found = false;

			/* where a chunk copied part of the way goes: no device extent yet */
			if (mfs_restripe_taken_stripe(fs, dev->devid, de->physical))
				continue;
			sum += de->length;
			if (map && map->logical == de->chunk_offset) {
				for (s = 0; s < map->num_stripes; s++)
					if (map->stripes[s].devid == dev->devid &&
					    map->stripes[s].physical == de->physical)
						found = true;
			}
			if (!found)
				problem(ctl, "device extent devid %llu physical %llu belongs to no chunk",
					(unsigned long long)dev->devid,
					(unsigned long long)de->physical);
		}
		if (sum != dev->bytes_used)
			problem(ctl, "device %llu: bytes_used %llu but its device extents add up to %llu",
				(unsigned long long)dev->devid,
				(unsigned long long)dev->bytes_used,
				(unsigned long long)sum);
	}
	return 0;
}

/* ---------------- phase 3: tree blocks ---------------- */

static int note_block(struct mfs_check_ctl *ctl, u64 bytenr, u64 owner, int level, u64 gen)
{
	if (MFS_ARRAY_RESERVE(ctl->blocks, ctl->nr_blocks, ctl->max_blocks, 1024))
		return -ENOMEM;
	ctl->blocks[ctl->nr_blocks] = (struct mfs_check_block){
		.bytenr = bytenr, .owner = owner, .level = level, .gen = gen,
	};
	ctl->nr_blocks++;
	return 0;
}

static const char *tree_name(u64 owner)
{
	switch (owner) {
	case MFS_ROOT_TREE_OBJECTID: return "root";
	case MFS_EXTENT_TREE_OBJECTID: return "extent";
	case MFS_CHUNK_TREE_OBJECTID: return "chunk";
	case MFS_DEV_TREE_OBJECTID: return "device";
	case MFS_FS_TREE_OBJECTID: return "fs";
	case MFS_CSUM_TREE_OBJECTID: return "csum";
	}
	return "unknown";
}

/* Why a copy failed verification against what its pointer says, for the report. */
static const char *copy_fault(struct mfs_fs_info *fs, const u8 *buf, u64 bytenr,
			      const struct mfs_tree_check *chk, char *why, size_t len)
{
	const struct mfs_header *h = (const struct mfs_header *)buf;
	int stat;

	if (!mfs_verify_tree_block(fs, buf, bytenr, chk, &stat))
		return NULL;
	if (stat == MFS_DEV_STAT_GENERATION_ERRS)
		snprintf(why, len, "generation %llu, its parent expects %llu (an old copy)",
			 (unsigned long long)le64_to_cpu(h->generation),
			 (unsigned long long)chk->transid);
	else if (chk->first_key && !mfs_verify_tree_block(fs, buf, bytenr,
				&(struct mfs_tree_check){ chk->level, chk->owner, chk->transid, NULL },
				NULL))
		snprintf(why, len, "first key differs from its parent's key");
	else
		snprintf(why, len, "checksum, header or item mismatch");
	return why;
}

/* Read each copy of the block on its own and report the bad ones. */
static void check_block_copies(struct mfs_fs_info *fs, struct mfs_check_ctl *ctl,
			       u64 bytenr, const struct mfs_tree_check *chk)
{
	struct mfs_chunk_map *map = mfs_find_chunk(fs, bytenr);
	struct mfs_io_map io;
	u8 *buf;
	int m, copies, ret;

	if (!map || mfs_map_block(map, bytenr, &io))
		return;
	buf = malloc(fs->nodesize);
	if (!buf)
		return;
	copies = mfs_num_copies(map);
	for (m = 1; m <= copies; m++) {
		const char *what = NULL, *where = "on devid";
		char why[160];
		int idx = mfs_profile(map->type)->nparity ? io.stripe[0] : io.stripe[m - 1];

		/*
		 * A stale device is reported once, with its superblock, and
		 * only its copies from before it fell behind are judged (no
		 * raid5/6 rebuild that reads a stale column); a missing one
		 * is reported as missing.
		 */
		if (map->stripes[idx].dev && map->stripes[idx].dev->stale_gen &&
		    !mfs_check_copy_judged(fs, ctl, map, map->stripes[idx].dev, chk->transid))
			continue;
		if (mfs_profile(map->type)->nparity && m > 1 && mfs_chunk_has_stale(map))
			continue;
		if (!map->stripes[idx].dev && (!mfs_profile(map->type)->nparity || m == 1))
			continue;
		if (mfs_profile(map->type)->nparity && m > 1)
			where = "rebuilt from parity, data on devid";
		ret = mfs_read_logical(fs, bytenr, buf, fs->nodesize, m);
		/*
		 * a rebuild that needs a missing column says nothing of the
		 * others; the member is reported missing, once, in phase 1
		 */
		if (ret && mfs_profile(map->type)->nparity && m > 1 && mfs_chunk_degraded(map))
			continue;
		if (ret)
			what = strerror(-ret);
		else
			what = copy_fault(fs, buf, bytenr, chk, why, sizeof(why));
		if (!what)
			continue;
		problem(ctl, "%s tree block %llu level %d: copy %d (%s %llu): %s",
			tree_name(chk->owner), (unsigned long long)bytenr, chk->level, m,
			where, (unsigned long long)map->stripes[idx].devid, what);
		/* raid5/6: the data column; bad parity is scrub's to rebuild */
		if (m == 1 || !mfs_profile(map->type)->nparity)
			mfs_check_add_tree_fix(ctl, bytenr, m, chk);
	}
	free(buf);
}

static int walk_tree(struct mfs_fs_info *fs, struct mfs_check_ctl *ctl, u64 owner,
		     u64 bytenr, int level, u64 gen, const struct mfs_key *first)
{
	struct mfs_tree_check chk = { .level = level, .owner = owner, .transid = gen,
				      .first_key = first };
	struct extent_buffer *eb;
	struct mfs_key key;
	u64 noted;
	int ret, i, n;

	ret = note_block(ctl, bytenr, owner, level, gen);
	if (ret)
		return ret;
	noted = ctl->nr_blocks - 1;
	check_block_copies(fs, ctl, bytenr, &chk);
	ret = mfs_read_tree_block(fs, bytenr, &chk, &eb);
	if (ret) {
		problem(ctl, "%s tree block %llu level %d cannot be read: %s",
			tree_name(owner), (unsigned long long)bytenr, level,
			ret == -EUCLEAN ? "no good copy" : strerror(-ret));
		return 0;
	}
	ctl->blocks[noted].read = true;
	ctl->tree_blocks++;
	ctl->tree_bytes += fs->nodesize;
	mfs_check_progress(ctl, fs->nodesize);
	n = eb_nritems(eb);
	if (level > 0) {
		/* every copy of the children asked for at once: the walk finds them read */
		for (i = 0; i < n; i++)
			mfs_readahead_logical(fs, node_blockptr(eb, i), fs->nodesize, true);
		for (i = 0; i < n; i++) {
			node_key(eb, i, &key);
			ret = walk_tree(fs, ctl, owner, node_blockptr(eb, i), level - 1,
					le64_to_cpu(node_ptr(eb, i)->generation), &key);
			if (ret)
				break;
		}
	}
	mfs_eb_put(fs, eb);
	return ret;
}

/* The generation the pointer to a tree's root block records for it. */
static u64 root_transid(struct mfs_fs_info *fs, struct mfs_root *root)
{
	if (root == fs->tree_root)
		return le64_to_cpu(fs->super.root_generation);
	if (root == fs->chunk_root)
		return le64_to_cpu(fs->super.chunk_root_generation);
	return le64_to_cpu(root->item.generation);
}

static int walk_root(struct mfs_fs_info *fs, struct mfs_check_ctl *ctl, struct mfs_root *root)
{
	if (!root || !root->node)
		return 0;
	/* a root block's copies are checked against its pointer like any other */
	return walk_tree(fs, ctl, root->objectid, root->node->start, eb_level(root->node),
			 root_transid(fs, root), NULL);
}

int mfs_check_trees(struct mfs_fs_info *fs, struct mfs_check_ctl *ctl)
{
	struct mfs_root *roots[] = { fs->tree_root, fs->chunk_root, fs->extent_root,
				     fs->dev_root, fs->fs_root, fs->csum_root };
	size_t i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(roots); i++) {
		ret = walk_root(fs, ctl, roots[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/* ---------------- phase 4: extents and block groups ---------------- */

static int cmp_block(const void *a, const void *b)
{
	const struct mfs_check_block *x = a, *y = b;

	if (x->bytenr != y->bytenr)
		return x->bytenr < y->bytenr ? -1 : 1;
	return 0;
}

static struct mfs_check_block *find_block(struct mfs_check_ctl *ctl, u64 bytenr)
{
	struct mfs_check_block k = { .bytenr = bytenr };

	return bsearch(&k, ctl->blocks, ctl->nr_blocks, sizeof(k), cmp_block);
}

/*
 * A block group item's flags: type and profile bits, and REDUCED with the
 * profile asked for (format §7.4): one profile, only with REDUCED.
 */
static void check_bg_item(struct mfs_check_ctl *ctl, const struct mfs_key *key,
			  struct extent_buffer *leaf, int slot)
{
	const u64 known = MFS_BLOCK_GROUP_TYPE_MASK | MFS_BLOCK_GROUP_PROFILE_MASK |
			  MFS_BLOCK_GROUP_REDUCED | MFS_BLOCK_GROUP_ASKED_MASK;
	struct mfs_block_group_item *bi = leaf_item_data(leaf, slot);
	u64 flags, asked;

	if (leaf_item_size(leaf, slot) != sizeof(*bi))
		return;		/* the open refused such an item already */
	flags = le64_to_cpu(bi->flags);
	asked = (flags & MFS_BLOCK_GROUP_ASKED_MASK) >> MFS_BLOCK_GROUP_ASKED_SHIFT;
	if (flags & ~known)
		problem(ctl, "block group %llu has unknown flags 0x%llx",
			(unsigned long long)key->objectid, (unsigned long long)(flags & ~known));
	else if (asked && (!(flags & MFS_BLOCK_GROUP_REDUCED) || (asked & (asked - 1))))
		problem(ctl, "block group %llu: the profile asked for (0x%llx) %s",
			(unsigned long long)key->objectid, (unsigned long long)asked,
			(flags & MFS_BLOCK_GROUP_REDUCED) ? "is more than one profile" :
			"is set on a chunk that is not reduced");
}

static void check_extent_item(struct mfs_fs_info *fs, struct mfs_check_ctl *ctl,
			      const struct mfs_key *key, struct extent_buffer *leaf,
			      int slot)
{
	struct mfs_extent_item *ei = leaf_item_data(leaf, slot);
	struct mfs_block_group *bg = mfs_lookup_block_group(fs, key->objectid);
	u64 flags;

	if (leaf_item_size(leaf, slot) != sizeof(*ei)) {
		problem(ctl, "extent %llu: item size %u, expected %zu",
			(unsigned long long)key->objectid, leaf_item_size(leaf, slot), sizeof(*ei));
		return;
	}
	if (!bg || key->objectid + key->offset > bg->start + bg->length) {
		problem(ctl, "extent %llu length %llu lies outside every block group",
			(unsigned long long)key->objectid, (unsigned long long)key->offset);
		return;
	}
	flags = le64_to_cpu(ei->flags);
	if (flags & MFS_EXTENT_FLAG_TREE_BLOCK) {
		struct mfs_check_block *b = find_block(ctl, key->objectid);

		if (le64_to_cpu(ei->refs) != 1)
			problem(ctl, "tree block extent %llu has %llu references, expected 1",
				(unsigned long long)key->objectid,
				(unsigned long long)le64_to_cpu(ei->refs));
		if (key->offset != fs->nodesize)
			problem(ctl, "tree block extent %llu has length %llu, expected %u",
				(unsigned long long)key->objectid,
				(unsigned long long)key->offset, fs->nodesize);
		if (bg->flags & MFS_BLOCK_GROUP_DATA)
			problem(ctl, "tree block extent %llu lies in a data block group",
				(unsigned long long)key->objectid);
		if (!b) {
			problem(ctl, "tree block extent %llu (owner %s tree) is not referenced by any tree",
				(unsigned long long)key->objectid,
				tree_name(le64_to_cpu(ei->owner_root)));
		} else {
			b->seen++;
			if (b->owner != le64_to_cpu(ei->owner_root) ||
			    (u64)b->level != le64_to_cpu(ei->owner_objectid))
				problem(ctl, "tree block extent %llu: back-reference says %s tree level %llu, the block is in the %s tree at level %d",
					(unsigned long long)key->objectid,
					tree_name(le64_to_cpu(ei->owner_root)),
					(unsigned long long)le64_to_cpu(ei->owner_objectid),
					tree_name(b->owner), b->level);
		}
	} else if (flags & MFS_EXTENT_FLAG_DATA) {
		/* its references are counted against file extents in phase 5 */
		if (!(bg->flags & MFS_BLOCK_GROUP_DATA))
			problem(ctl, "data extent %llu lies in a %s block group",
				(unsigned long long)key->objectid, mfs_bg_type_name(bg->flags));
	} else {
		problem(ctl, "extent %llu has unknown flags 0x%llx",
			(unsigned long long)key->objectid, (unsigned long long)flags);
	}
}

int mfs_check_extents(struct mfs_fs_info *fs, struct mfs_check_ctl *ctl)
{
	struct mfs_key key = { 0, 0, 0 };
	u64 errors_before = ctl->errors;
	struct mfs_path path;
	u64 *bg_sums, prev_end = 0;
	u64 i;
	bool derivable;
	int ret, b;

	if (!fs->extent_root)
		return 0;
	qsort(ctl->blocks, ctl->nr_blocks, sizeof(*ctl->blocks), cmp_block);
	for (i = 1; i < ctl->nr_blocks; i++)
		if (ctl->blocks[i].bytenr == ctl->blocks[i - 1].bytenr)
			problem(ctl, "tree block %llu is referenced more than once",
				(unsigned long long)ctl->blocks[i].bytenr);
	bg_sums = calloc(fs->nr_bgs + 1, sizeof(*bg_sums));
	if (!bg_sums)
		return -ENOMEM;
	mfs_init_path(&path);
	ret = mfs_search_forward(fs->extent_root, &key, &path);
	while (ret == 0) {
		struct extent_buffer *leaf = path.nodes[0];
		int slot = path.slots[0];

		leaf_item_key(leaf, slot, &key);
		if (key.type == MFS_EXTENT_ITEM_KEY) {
			struct mfs_block_group *bg = mfs_lookup_block_group(fs, key.objectid);

			if (key.objectid < prev_end)
				problem(ctl, "extent %llu overlaps the previous extent",
					(unsigned long long)key.objectid);
			prev_end = key.objectid + key.offset;
			check_extent_item(fs, ctl, &key, leaf, slot);
			for (b = 0; bg && b < fs->nr_bgs; b++)
				if (fs->bgs[b] == bg)
					bg_sums[b] += key.offset;
		} else if (key.type == MFS_BLOCK_GROUP_ITEM_KEY) {
			check_bg_item(ctl, &key, leaf, slot);
		} else {
			problem(ctl, "extent tree: unexpected item type %u at (%llu %u %llu)",
				key.type, (unsigned long long)key.objectid, key.type,
				(unsigned long long)key.offset);
		}
		ret = mfs_next_item(fs->extent_root, &path);
	}
	mfs_release_path(&path);
	if (ret < 0)
		problem(ctl, "extent tree cannot be walked: %s", strerror(-ret));
	for (i = 0; i < ctl->nr_blocks; i++) {
		const struct mfs_check_block *blk = &ctl->blocks[i];
		struct mfs_block_group *bg;

		if (blk->seen || (i > 0 && blk->bytenr == ctl->blocks[i - 1].bytenr))
			continue;
		problem(ctl, "%s tree block %llu has no extent item", tree_name(blk->owner),
			(unsigned long long)blk->bytenr);
		/* the allocator would hand its space out: the item is made again */
		bg = mfs_lookup_block_group(fs, blk->bytenr);
		if (blk->read && bg && !(bg->flags & MFS_BLOCK_GROUP_DATA) &&
		    blk->bytenr + fs->nodesize <= bg->start + bg->length)
			mfs_check_add_tree_extent_fix(ctl, blk);
	}
	/* a used figure is derived from the extent items only when they are sound */
	derivable = ctl->errors == errors_before;
	for (b = 0; b < fs->nr_bgs; b++) {
		struct mfs_block_group *bg = fs->bgs[b];

		if (bg->used == bg_sums[b])
			continue;
		problem(ctl, "block group %llu (%s): used %llu but its extents add up to %llu",
			(unsigned long long)bg->start, mfs_bg_type_name(bg->flags),
			(unsigned long long)bg->used, (unsigned long long)bg_sums[b]);
		if (derivable)
			mfs_check_add_fix(ctl, MFS_FIX_BG_USED, bg->start, bg_sums[b], 0);
	}
	free(bg_sums);
	return 0;
}
