/*
 * Superblocks, the tree-block cache with verification of every block read,
 * and the in-memory filesystem's allocation and teardown. Opening a
 * filesystem from its member devices is ops/open.c.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/tree/alloc.h"
#include "kernel-shared/block/csum.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/tree/transaction.h"

/* ---------------- superblocks ---------------- */

void mfs_csum_super(struct mfs_super_block *sb)
{
	u8 out[MFS_CSUM_SIZE];

	mfs_csum_compute(le16_to_cpu(sb->csum_type), (u8 *)sb + MFS_CSUM_FIELD_SIZE,
			 MFS_SUPER_INFO_SIZE - MFS_CSUM_FIELD_SIZE, out);
	memcpy(sb->csum, out, MFS_CSUM_FIELD_SIZE);
}

static bool is_pow2(u64 x)
{
	return x && !(x & (x - 1));
}

int mfs_check_super(const struct mfs_super_block *sb, u64 bytenr)
{
	u8 out[MFS_CSUM_SIZE];
	int csum_type = le16_to_cpu(sb->csum_type);
	u32 nodesize = le32_to_cpu(sb->nodesize);
	u32 sectorsize = le32_to_cpu(sb->sectorsize);
	int ret;

	if (le64_to_cpu(sb->magic) != MFS_MAGIC)
		return -ENOENT;
	if (mfs_csum_size(csum_type) < 0)
		return -EUCLEAN;
	ret = mfs_csum_compute(csum_type, (const u8 *)sb + MFS_CSUM_FIELD_SIZE,
			       MFS_SUPER_INFO_SIZE - MFS_CSUM_FIELD_SIZE, out);
	if (ret == -ELIBACC)
		return ret;	/* an algorithm whose library cannot be loaded */
	if (memcmp(out, sb->csum, MFS_CSUM_FIELD_SIZE))
		return -EUCLEAN;
	if (le64_to_cpu(sb->bytenr) != bytenr)
		return -EUCLEAN;
	if (le32_to_cpu(sb->format_version) != MFS_FORMAT_VERSION)
		return -EUCLEAN;
	if (sectorsize != MFS_SECTOR || !is_pow2(nodesize) || nodesize < sectorsize ||
	    nodesize > SZ_64K)
		return -EUCLEAN;
	if (le32_to_cpu(sb->stripesize) != MFS_STRIPE_LEN)
		return -EUCLEAN;
	if (le32_to_cpu(sb->sys_chunk_array_size) > MFS_SYSTEM_CHUNK_ARRAY_SIZE)
		return -EUCLEAN;
	if (sb->root_level >= MFS_MAX_LEVEL || sb->chunk_root_level >= MFS_MAX_LEVEL)
		return -EUCLEAN;
	if (le64_to_cpu(sb->root) % sectorsize || le64_to_cpu(sb->chunk_root) % sectorsize)
		return -EUCLEAN;
	if (le64_to_cpu(sb->num_devices) < 1 || le64_to_cpu(sb->generation) < 1)
		return -EUCLEAN;
	if (le64_to_cpu(sb->incompat_flags) & ~MFS_FEATURE_INCOMPAT_SUPP)
		return -EOPNOTSUPP;
	if (memcmp(sb->fsid, sb->dev_item.fsid, MFS_FSID_SIZE))
		return -EUCLEAN;
	if (memchr(sb->label, 0, MFS_LABEL_SIZE) == NULL)
		return -EUCLEAN;
	return 0;
}

int mfs_read_super_raw(struct mfs_io_dev *io, int mirror, struct mfs_super_block *sb)
{
	u64 off = mfs_sb_offset(mirror);

	if (off + MFS_SUPER_INFO_SIZE > io->size)
		return -ENOENT;
	return mfs_io_read(io, sb, sizeof(*sb), off);
}

int mfs_read_super_copy(struct mfs_io_dev *io, int mirror, struct mfs_super_block *sb)
{
	u64 off = mfs_sb_offset(mirror);
	int ret;

	if (off + MFS_SUPER_INFO_SIZE > io->size)
		return -ENOENT;
	ret = mfs_io_read(io, sb, sizeof(*sb), off);
	if (ret)
		return ret;
	return mfs_check_super(sb, off);
}

enum mfs_sb_copy_state mfs_super_copy_state(struct mfs_fs_info *fs, struct mfs_device *dev, int m,
					    struct mfs_super_block *sb, int *err)
{
	u64 gen;
	int ret;

	*err = 0;
	if (mfs_sb_offset(m) + MFS_SUPER_INFO_SIZE > mfs_device_end(dev))
		return MFS_SB_COPY_BEYOND;
	ret = mfs_read_super_copy(dev->io, m, sb);
	if (ret == -ENOENT)
		return MFS_SB_COPY_MISSING;
	if (ret) {
		*err = ret;
		return MFS_SB_COPY_CORRUPT;
	}
	if (memcmp(sb->fsid, fs->fsid, MFS_FSID_SIZE))
		return MFS_SB_COPY_FOREIGN;
	gen = le64_to_cpu(sb->generation);
	if (gen + 1 == fs->generation)
		return MFS_SB_COPY_BEHIND;
	if (gen != fs->generation)
		return MFS_SB_COPY_OTHER_GEN;
	if (le64_to_cpu(sb->dev_item.devid) != dev->devid)
		return MFS_SB_COPY_WRONG_DEVID;
	return MFS_SB_COPY_OK;
}

int mfs_read_super(struct mfs_io_dev *io, struct mfs_super_block *sb, int *mirror)
{
	struct mfs_super_block tmp;
	int i, best = -1, seen_mfs = 0, unusable = 0, ret;
	u64 best_gen = 0;

	for (i = 0; i < MFS_SUPER_MIRROR_MAX; i++) {
		ret = mfs_read_super_copy(io, i, &tmp);
		if (ret == -ENOENT)
			continue;
		seen_mfs = 1;
		/* sound, but of features or a checksum this build cannot handle */
		if (ret == -EOPNOTSUPP || ret == -ELIBACC)
			unusable = ret;
		if (ret)
			continue;
		if (best < 0 || le64_to_cpu(tmp.generation) > best_gen) {
			best = i;
			best_gen = le64_to_cpu(tmp.generation);
			memcpy(sb, &tmp, sizeof(tmp));
		}
	}
	if (best < 0)
		return unusable ? unusable : seen_mfs ? -EUCLEAN : -ENOENT;
	if (mirror)
		*mirror = best;
	return 0;
}

void mfs_fill_dev_item(struct mfs_fs_info *fs, struct mfs_device *dev, struct mfs_dev_item *di)
{
	memset(di, 0, sizeof(*di));
	di->devid = cpu_to_le64(dev->devid);
	di->total_bytes = cpu_to_le64(dev->total_bytes);
	di->bytes_used = cpu_to_le64(dev->bytes_used);
	di->generation = cpu_to_le64(fs->generation);
	di->flags = cpu_to_le64(dev->flags);
	di->sector_size = cpu_to_le32(fs->sectorsize);
	memcpy(di->uuid, dev->uuid, MFS_UUID_SIZE);
	memcpy(di->fsid, fs->fsid, MFS_FSID_SIZE);
}

int mfs_write_dev_super(struct mfs_fs_info *fs, const struct mfs_super_block *super,
			const struct mfs_super_target *t, bool *primary)
{
	struct mfs_super_block sb;
	int m, ret;

	*primary = false;
	for (m = 0; m < MFS_SUPER_MIRROR_MAX; m++) {
		u64 off = mfs_sb_offset(m);

		if (off + MFS_SUPER_INFO_SIZE > t->end)
			break;
		memcpy(&sb, super, sizeof(sb));
		memcpy(&sb.dev_item, &t->di, sizeof(sb.dev_item));
		sb.bytenr = cpu_to_le64(off);
		mfs_csum_super(&sb);
		ret = mfs_io_write(t->dev->io, &sb, sizeof(sb), off);
		if (ret) {
			mfs_dev_fail(fs, t->dev, MFS_DEV_STAT_WRITE_ERRS, ret);
			return ret;
		}
		if (m == 0)
			*primary = true;
	}
	return 0;
}

int mfs_take_super_targets(struct mfs_fs_info *fs, struct mfs_super_target **out)
{
	struct mfs_super_target *t = calloc(fs->nr_devices ? fs->nr_devices : 1, sizeof(*t));
	int i;

	if (!t)
		return -ENOMEM;
	for (i = 0; i < fs->nr_devices; i++) {
		struct mfs_device *dev = fs->devices[i];

		t[i].dev = dev;
		t[i].end = mfs_device_end(dev);
		mfs_fill_dev_item(fs, dev, &t[i].di);
		/* a device still being caught up keeps its old superblock until it is */
		t[i].stale = dev->stale_gen;
		t[i].joining = dev->joining;
	}
	*out = t;
	return fs->nr_devices;
}

int mfs_write_supers_to(struct mfs_fs_info *fs, const struct mfs_super_block *super,
			const struct mfs_super_target *t, int n)
{
	int i, ret, written = 0, first_err = 0;
	bool primary;

	for (i = 0; i < n; i++) {
		if (!mfs_dev_usable(t[i].dev) || t[i].stale)
			continue;
		/* (a device that fails here and is needed keeps its old superblock) */
		ret = mfs_write_dev_super(fs, super, &t[i], &primary);
		if (ret && !first_err)
			first_err = ret;
		written += primary;
	}
	/* The commit stands if at least one device holds the new superblock. */
	if (fs->strict_io && first_err)
		return first_err;
	return written ? 0 : (first_err ? first_err : -EIO);
}

int mfs_write_all_supers(struct mfs_fs_info *fs)
{
	struct mfs_super_target *t;
	int n = mfs_take_super_targets(fs, &t), ret;

	if (n < 0)
		return n;
	ret = mfs_write_supers_to(fs, &fs->super, t, n);
	free(t);
	return ret;
}

/* ---------------- tree block cache ---------------- */

static u32 eb_hash(struct mfs_fs_info *fs, u64 bytenr)
{
	return (u32)((bytenr / fs->nodesize) * 2654435761u) & (fs->eb_hash_size - 1);
}

static void lru_unlink(struct mfs_fs_info *fs, struct extent_buffer *eb)
{
	if (eb->lru_prev)
		eb->lru_prev->lru_next = eb->lru_next;
	else if (fs->lru_head == eb)
		fs->lru_head = eb->lru_next;
	if (eb->lru_next)
		eb->lru_next->lru_prev = eb->lru_prev;
	else if (fs->lru_tail == eb)
		fs->lru_tail = eb->lru_prev;
	eb->lru_prev = eb->lru_next = NULL;
}

static void lru_push_front(struct mfs_fs_info *fs, struct extent_buffer *eb)
{
	eb->lru_next = fs->lru_head;
	eb->lru_prev = NULL;
	if (fs->lru_head)
		fs->lru_head->lru_prev = eb;
	fs->lru_head = eb;
	if (!fs->lru_tail)
		fs->lru_tail = eb;
}

static struct extent_buffer *cache_lookup(struct mfs_fs_info *fs, u64 bytenr)
{
	struct extent_buffer *eb;

	for (eb = fs->eb_hash[eb_hash(fs, bytenr)]; eb; eb = eb->hash_next)
		if (eb->start == bytenr)
			return eb;
	return NULL;
}

static void cache_remove(struct mfs_fs_info *fs, struct extent_buffer *eb)
{
	struct extent_buffer **pp = &fs->eb_hash[eb_hash(fs, eb->start)];

	for (; *pp; pp = &(*pp)->hash_next) {
		if (*pp == eb) {
			*pp = eb->hash_next;
			break;
		}
	}
	lru_unlink(fs, eb);
	fs->eb_cached--;
}

/* Drop clean, unreferenced buffers from the cold end while over the limit. */
static void cache_shrink(struct mfs_fs_info *fs)
{
	struct extent_buffer *eb = fs->lru_tail;

	while (eb && fs->eb_cached * fs->nodesize > fs->eb_cache_limit) {
		struct extent_buffer *prev = eb->lru_prev;

		if (eb->refs == 1 && !eb->dirty) {
			cache_remove(fs, eb);
			free(eb);
		}
		eb = prev;
	}
}

struct extent_buffer *mfs_eb_get(struct extent_buffer *eb)
{
	eb->refs++;
	return eb;
}

void mfs_eb_put(struct mfs_fs_info *fs, struct extent_buffer *eb)
{
	(void)fs;
	if (!eb)
		return;
	if (--eb->refs == 0)
		free(eb);
}

/* A new buffer for bytenr, in the cache, with one reference for the caller. */
struct extent_buffer *mfs_alloc_eb(struct mfs_fs_info *fs, u64 bytenr)
{
	struct extent_buffer *eb = cache_lookup(fs, bytenr);
	u32 h;

	if (eb) {
		/* a stale clean copy of a block that was freed and reused */
		cache_remove(fs, eb);
		mfs_eb_put(fs, eb);
	}
	eb = calloc(1, sizeof(*eb) + fs->nodesize);
	if (!eb)
		return NULL;
	eb->start = bytenr;
	eb->len = fs->nodesize;
	eb->refs = 2;	/* the cache's and the caller's */
	h = eb_hash(fs, bytenr);
	eb->hash_next = fs->eb_hash[h];
	fs->eb_hash[h] = eb;
	lru_push_front(fs, eb);
	fs->eb_cached++;
	cache_shrink(fs);
	return eb;
}

void mfs_eb_forget(struct mfs_fs_info *fs, u64 bytenr)
{
	struct extent_buffer *eb = cache_lookup(fs, bytenr);

	if (eb) {
		cache_remove(fs, eb);
		mfs_eb_put(fs, eb);
	}
}

static void cache_free_all(struct mfs_fs_info *fs)
{
	u32 i;

	if (!fs->eb_hash)
		return;
	for (i = 0; i < fs->eb_hash_size; i++) {
		struct extent_buffer *eb = fs->eb_hash[i];

		while (eb) {
			struct extent_buffer *next = eb->hash_next;

			mfs_eb_put(fs, eb);
			eb = next;
		}
		fs->eb_hash[i] = NULL;
	}
	fs->lru_head = fs->lru_tail = NULL;
	fs->eb_cached = 0;
}

void mfs_csum_tree_block(struct mfs_fs_info *fs, u8 *buf)
{
	u8 out[MFS_CSUM_SIZE];

	mfs_csum_compute(fs->csum_type, buf + MFS_CSUM_FIELD_SIZE,
			 fs->nodesize - MFS_CSUM_FIELD_SIZE, out);
	memcpy(buf, out, MFS_CSUM_FIELD_SIZE);
}

/* Item pointers and packed item data of a node or leaf (untrusted bytes). */
static int verify_layout(struct mfs_fs_info *fs, const u8 *buf)
{
	const struct mfs_header *h = (const struct mfs_header *)buf;
	u32 nritems = le32_to_cpu(h->nritems), i;
	u32 data_size = fs->nodesize - sizeof(struct mfs_header);
	u32 data_end = data_size;	/* item data is packed downwards from the block end */
	struct mfs_key prev = { 0 }, cur;

	if (h->level > 0) {
		if (nritems == 0 || nritems > data_size / sizeof(struct mfs_key_ptr))
			return -EUCLEAN;
		for (i = 0; i < nritems; i++) {
			const struct mfs_key_ptr *p = (const struct mfs_key_ptr *)
				(buf + sizeof(*h)) + i;

			mfs_disk_key_to_cpu(&cur, &p->key);
			if (i && mfs_comp_keys(&prev, &cur) >= 0)
				return -EUCLEAN;
			if (le64_to_cpu(p->blockptr) % fs->nodesize)
				return -EUCLEAN;
			prev = cur;
		}
		return 0;
	}
	if (nritems > data_size / sizeof(struct mfs_item))
		return -EUCLEAN;
	for (i = 0; i < nritems; i++) {
		const struct mfs_item *it = (const struct mfs_item *)(buf + sizeof(*h)) + i;
		u32 off = le32_to_cpu(it->offset), size = le32_to_cpu(it->size);

		mfs_disk_key_to_cpu(&cur, &it->key);
		if (i && mfs_comp_keys(&prev, &cur) >= 0)
			return -EUCLEAN;
		if (off + size != data_end || off > data_size || size > data_size)
			return -EUCLEAN;
		if (off < (i + 1) * sizeof(struct mfs_item))
			return -EUCLEAN;
		data_end = off;
		prev = cur;
	}
	if (nritems && data_end < nritems * sizeof(struct mfs_item))
		return -EUCLEAN;
	return 0;
}

/* The block's first key equals what its parent says (an empty block never has a parent). */
static bool first_key_matches(const u8 *buf, const struct mfs_key *want)
{
	const struct mfs_header *h = (const struct mfs_header *)buf;
	const struct mfs_disk_key *dk = (const struct mfs_disk_key *)(buf + sizeof(*h));
	struct mfs_key k;

	if (le32_to_cpu(h->nritems) == 0)
		return false;
	/* the key leads both an item and a key pointer */
	mfs_disk_key_to_cpu(&k, dk);
	return mfs_comp_keys(&k, want) == 0;
}

/* Every tree block read is checked before anything trusts it. */
int mfs_verify_tree_block(struct mfs_fs_info *fs, const u8 *buf, u64 bytenr,
			  const struct mfs_tree_check *chk, int *stat)
{
	const struct mfs_header *h = (const struct mfs_header *)buf;
	u64 gen = le64_to_cpu(h->generation);
	u8 out[MFS_CSUM_SIZE];
	int ret;

	if (stat)
		*stat = MFS_DEV_STAT_CORRUPTION_ERRS;
	mfs_csum_compute(fs->csum_type, buf + MFS_CSUM_FIELD_SIZE,
			 fs->nodesize - MFS_CSUM_FIELD_SIZE, out);
	if (memcmp(out, h->csum, fs->csum_size))
		return -EUCLEAN;
	if (le64_to_cpu(h->bytenr) != bytenr || memcmp(h->fsid, fs->metadata_fsid, MFS_FSID_SIZE))
		return -EUCLEAN;
	if (h->level >= MFS_MAX_LEVEL || (chk && chk->level >= 0 && h->level != chk->level))
		return -EUCLEAN;
	if (chk && chk->owner && le64_to_cpu(h->owner) != chk->owner)
		return -EUCLEAN;
	if (gen > fs->generation + 1)
		return -EUCLEAN;
	ret = verify_layout(fs, buf);
	if (ret)
		return ret;
	/*
	 * A well-formed block of another generation than its parent recorded
	 * is what an old copy of the device holds at this address (a block
	 * since freed and reused): stale, not damaged.
	 */
	if (chk && chk->transid && gen != chk->transid) {
		if (stat)
			*stat = MFS_DEV_STAT_GENERATION_ERRS;
		return -EUCLEAN;
	}
	if (chk && chk->first_key && !first_key_matches(buf, chk->first_key))
		return -EUCLEAN;
	return 0;
}

void mfs_child_check(struct extent_buffer *parent, int slot, u64 owner,
		     struct mfs_key *key_buf, struct mfs_tree_check *chk)
{
	node_key(parent, slot, key_buf);
	chk->level = eb_level(parent) - 1;
	chk->owner = owner;
	chk->transid = le64_to_cpu(node_ptr(parent, slot)->generation);
	chk->first_key = key_buf;
}

/* The cached copy of a block must still be what its pointer asks for. */
static bool cached_block_matches(struct extent_buffer *eb, const struct mfs_tree_check *chk)
{
	if (!chk)
		return true;
	if (chk->level >= 0 && eb_level(eb) != chk->level)
		return false;
	if (chk->transid && eb_generation(eb) != chk->transid)
		return false;
	return !chk->owner || eb_owner(eb) == chk->owner;
}

/*
 * Read a tree block: its copies in the order reads prefer (mfs_mirror_order),
 * until one verifies. Every copy that failed before the good one (all of
 * them, when none is good) is counted against its device (read error,
 * corruption, or generation for an old copy) and overwritten with the
 * good block. For raid5/6 the later
 * "mirrors" are rebuilds of the same data column, so only that column
 * (mirror 1) is a copy of its own.
 */
int mfs_read_tree_block(struct mfs_fs_info *fs, u64 bytenr, const struct mfs_tree_check *chk,
			struct extent_buffer **out)
{
	struct mfs_chunk_map *map;
	struct extent_buffer *eb = cache_lookup(fs, bytenr);
	int *order, *bad_stat;
	int copies, i, ret = -EIO, good = -1;
	bool parity;
	u8 *buf;

	if (eb) {
		if (!cached_block_matches(eb, chk))
			return -EUCLEAN;
		lru_unlink(fs, eb);
		lru_push_front(fs, eb);
		*out = mfs_eb_get(eb);
		return 0;
	}
	if (bytenr % fs->nodesize)
		return -EUCLEAN;
	map = mfs_find_chunk(fs, bytenr);
	if (!map || bytenr + fs->nodesize > map->logical + map->length)
		return -EUCLEAN;
	copies = mfs_num_copies(map);
	buf = malloc(fs->nodesize);
	order = calloc(copies, sizeof(*order));
	bad_stat = calloc(copies, sizeof(*bad_stat));
	if (!buf || !order || !bad_stat) {
		ret = -ENOMEM;
		goto out;
	}
	parity = mfs_profile(map->type)->nparity > 0;
	mfs_mirror_order(fs, map, bytenr, order);
	for (i = 0; i < copies; i++) {
		int err = mfs_read_logical(fs, bytenr, buf, fs->nodesize, order[i]);

		bad_stat[i] = MFS_DEV_STAT_READ_ERRS;
		if (!err)
			err = mfs_verify_tree_block(fs, buf, bytenr, chk, &bad_stat[i]);
		if (!err) {
			good = i;
			break;
		}
		/* remember the worst: corruption beats a plain I/O error */
		if (ret != -EUCLEAN)
			ret = err;
	}
	for (i = 0; i < (good < 0 ? copies : good); i++) {
		if (parity && order[i] != 1)
			continue;
		if (mfs_dev_stat_inc(fs, bytenr, order[i], bad_stat[i]) && good >= 0)
			mfs_write_logical_mirror(fs, bytenr, buf, fs->nodesize, order[i]);
	}
	if (good < 0)
		goto out;
	eb = mfs_alloc_eb(fs, bytenr);
	ret = -ENOMEM;
	if (eb) {
		memcpy(eb->data, buf, fs->nodesize);
		*out = eb;
		ret = 0;
	}
out:
	free(order);
	free(bad_stat);
	free(buf);
	return ret;
}

/* ---------------- roots ---------------- */

static struct mfs_root *alloc_root(struct mfs_fs_info *fs, u64 objectid)
{
	struct mfs_root *root = calloc(1, sizeof(*root));

	if (root) {
		root->objectid = objectid;
		root->fs_info = fs;
	}
	return root;
}

void mfs_free_root(struct mfs_fs_info *fs, struct mfs_root *root)
{
	if (!root)
		return;
	mfs_eb_put(fs, root->node);
	free(root);
}

static int read_root_node(struct mfs_fs_info *fs, struct mfs_root *root,
			  u64 bytenr, int level, u64 transid)
{
	struct mfs_tree_check chk = { .level = level, .owner = root->objectid,
				      .transid = transid };

	return mfs_read_tree_block(fs, bytenr, &chk, &root->node);
}

int mfs_load_root(struct mfs_fs_info *fs, u64 objectid, u64 bytenr, int level, u64 transid,
		  struct mfs_root **out)
{
	struct mfs_root *root = alloc_root(fs, objectid);
	int ret;

	*out = NULL;
	if (!root)
		return -ENOMEM;
	ret = read_root_node(fs, root, bytenr, level, transid);
	if (ret) {
		free(root);
		return ret;
	}
	*out = root;
	return 0;
}

int mfs_read_root(struct mfs_fs_info *fs, u64 objectid, struct mfs_root **out)
{
	struct mfs_key key = { objectid, MFS_ROOT_ITEM_KEY, 0 };
	struct mfs_path path;
	struct mfs_root *root;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_slot(NULL, fs->tree_root, &key, &path, 0, 0);
	if (ret > 0)
		ret = -ENOENT;
	if (ret)
		goto out;
	if (leaf_item_size(path.nodes[0], path.slots[0]) != sizeof(struct mfs_root_item)) {
		ret = -EUCLEAN;
		goto out;
	}
	root = alloc_root(fs, objectid);
	if (!root) {
		ret = -ENOMEM;
		goto out;
	}
	memcpy(&root->item, leaf_item_data(path.nodes[0], path.slots[0]), sizeof(root->item));
	ret = read_root_node(fs, root, le64_to_cpu(root->item.bytenr), root->item.level,
			     le64_to_cpu(root->item.generation));
	if (ret) {
		free(root);
		goto out;
	}
	*out = root;
out:
	mfs_release_path(&path);
	return ret;
}

/* ---------------- open / close ---------------- */

struct mfs_fs_info *mfs_alloc_fs_info(void)
{
	struct mfs_fs_info *fs = calloc(1, sizeof(*fs));

	if (!fs)
		return NULL;
	fs->eb_hash_size = 1 << 14;
	fs->eb_hash = calloc(fs->eb_hash_size, sizeof(*fs->eb_hash));
	if (!fs->eb_hash) {
		free(fs);
		return NULL;
	}
	fs->eb_cache_limit = 256 * SZ_1M;
	fs->row_sealed = mfs_seal_row;
	fs->fail_threshold = MFS_DEFAULT_FAIL_THRESHOLD;
	pthread_mutex_init(&fs->lock, NULL);
	pthread_mutex_init(&fs->commit_lock, NULL);
	pthread_cond_init(&fs->commit_cond, NULL);
	pthread_rwlock_init(&fs->map_lock, NULL);
	pthread_cond_init(&fs->inflight_done, NULL);
	return fs;
}

void mfs_free_fs_info(struct mfs_fs_info *fs)
{
	int i;

	if (!fs)
		return;
	if (fs->running)
		mfs_abort_transaction(fs);
	mfs_drop_open_rows(fs);
	mfs_free_root(fs, fs->tree_root);
	mfs_free_root(fs, fs->chunk_root);
	mfs_free_root(fs, fs->extent_root);
	mfs_free_root(fs, fs->dev_root);
	mfs_free_root(fs, fs->fs_root);
	mfs_free_root(fs, fs->csum_root);
	while (fs->aborted) {
		struct extent_buffer *eb = fs->aborted;

		fs->aborted = eb->dirty_next;
		eb->dirty_next = NULL;
		mfs_eb_put(fs, eb);
	}
	cache_free_all(fs);
	free(fs->eb_hash);
	mfs_free_block_groups(fs);
	for (i = 0; i < fs->nr_chunks; i++)
		free(fs->chunks[i]);
	free(fs->chunks);
	for (i = 0; i < fs->nr_devices; i++) {
		struct mfs_device *dev = fs->devices[i];

		mfs_io_close(dev->io);
		free(dev->path);
		free(dev->extents);
		free(dev);
	}
	free(fs->devices);
	if (fs->alloc_policy && fs->alloc_policy->release)
		fs->alloc_policy->release(fs);
	free(fs->restripe);
	free(fs->scrub);
	for (i = 0; i < fs->nr_problems; i++)
		free(fs->problems[i]);
	free(fs->problems);
	pthread_mutex_destroy(&fs->lock);
	pthread_mutex_destroy(&fs->commit_lock);
	pthread_cond_destroy(&fs->commit_cond);
	pthread_rwlock_destroy(&fs->map_lock);
	pthread_cond_destroy(&fs->inflight_done);
	free(fs);
}

int mfs_write_dirty_buffers(struct mfs_fs_info *fs)
{
	struct mfs_transaction *t = fs->running;
	struct extent_buffer *eb;
	int ret;

	for (eb = t->dirty_list; eb; eb = eb->dirty_next) {
		if (!eb->dirty)
			continue;
		mfs_csum_tree_block(fs, eb->data);
		ret = mfs_write_logical(fs, eb->start, eb->data, fs->nodesize);
		if (ret)
			return ret;
	}
	return 0;
}
