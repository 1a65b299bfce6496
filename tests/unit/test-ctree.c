/*
 * The COW B-tree against an in-memory model: random inserts, deletes,
 * in-place overwrites, extends, truncates, lookups and iteration on the fs
 * tree of a real (sparse image) filesystem, with commits, reopens, mass
 * deletions, structure checks and an extent-tree cross-check.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <unistd.h>
#include <fcntl.h>
#include <ftw.h>

#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/ops/create.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/tree/transaction.h"
#include "kernel-shared/tree/alloc.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/ops/open.h"
#include "unit.h"

/* ---------------- random numbers ---------------- */

static u64 base_seed(void)
{
	return unit_base_seed(0x6d66732d63747265ULL);
}

/* ---------------- the model ---------------- */

/*
 * Keys come from a universe of NSLOTS slots whose order is the key order:
 * slot i is (objectid (i>>5)*1000+7, type ((i>>2)&7)*20+1, offset with
 * i&3 in its top two bits and a hash below), so equal objectid/type pairs
 * compare on offsets spanning the whole u64 range.
 */
#define NSLOTS		(1U << 16)
#define NWORDS		(NSLOTS / 64)

struct model {
	u64 bits[NWORDS];	/* present slots */
	u32 size[NSLOTS];
	u32 seed[NSLOTS];	/* content version: bytes derive from slot and seed */
	u32 count;
	u32 next_seed;
};

static struct model *M;

static bool m_present(u32 slot)
{
	return M->bits[slot / 64] >> (slot % 64) & 1;
}

static void m_set(u32 slot, bool on)
{
	if (on && !m_present(slot)) {
		M->count++;
		M->bits[slot / 64] |= 1ULL << (slot % 64);
	} else if (!on && m_present(slot)) {
		M->count--;
		M->bits[slot / 64] &= ~(1ULL << (slot % 64));
	}
}

/* First present slot >= from, or NSLOTS. */
static u32 m_next(u32 from)
{
	u32 w = from / 64;
	u64 word;

	if (from >= NSLOTS)
		return NSLOTS;
	word = M->bits[w] & (~0ULL << (from % 64));
	while (!word) {
		if (++w == NWORDS)
			return NSLOTS;
		word = M->bits[w];
	}
	return w * 64 + __builtin_ctzll(word);
}

/* Last present slot <= from, or -1. */
static int m_prev(int from)
{
	int w;
	u64 word;

	if (from < 0)
		return -1;
	w = from / 64;
	word = M->bits[w] & (~0ULL >> (63 - from % 64));
	while (!word) {
		if (--w < 0)
			return -1;
		word = M->bits[w];
	}
	return w * 64 + 63 - __builtin_clzll(word);
}

static struct mfs_key slot_key(u32 slot)
{
	struct mfs_key k;

	k.objectid = (u64)(slot >> 5) * 1000 + 7;
	k.type = ((slot >> 2) & 7) * 20 + 1;
	k.offset = ((u64)(slot & 3) << 62) | (unit_mix64(slot) & ((1ULL << 61) - 1));
	return k;
}

/* Item content: 64-bit words derived from the slot and its seed. */
static void gen_content(u32 slot, u32 seed, u8 *buf, u32 len)
{
	u64 h = unit_mix64(((u64)slot << 32) | seed), w;
	u32 i;

	for (i = 0; i < len; i += 8) {
		w = unit_mix64(h + i);
		memcpy(buf + i, &w, min_t(u32, 8, len - i));
	}
}

/* ---------------- test context ---------------- */

struct variant {
	const char *name;
	int ndevs;
	u64 dev_size;
	u64 meta_profile;
	u64 data_profile;
	u32 nodesize;
	int nops;		/* mixed operations, besides fills and mass deletes */
	u32 fill;		/* most items the tree holds */
	int min_level;		/* the peak height the fill must reach */
};

struct ctx {
	const struct variant *v;
	char dir[64];
	char paths[8][96];
	const char *pathv[8];
	struct mfs_fs_info *fs;
	struct mfs_trans_handle *trans;
	u32 max_item;
	u8 *buf;
	int max_level_seen;
	u64 ops_done;
	int failures_before;
};

static struct ctx C;

#define FAIL(...) do { \
	fprintf(stderr, "# %s: ", C.v->name); \
	fprintf(stderr, __VA_ARGS__); \
	fprintf(stderr, " (op %" PRIu64 ")\n", C.ops_done); \
	unit_failed_checks++; \
} while (0)

/* Stop a variant after this many failures: one bug tends to cascade. */
static bool too_many_failures(void)
{
	return unit_failed_checks - C.failures_before > 20;
}

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(path);
}

static int make_images(void)
{
	const char *tmp = getenv("TMPDIR");
	int i;

	snprintf(C.dir, sizeof(C.dir), "%s/mfs-ctree-XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(C.dir))
		return -errno;
	for (i = 0; i < C.v->ndevs; i++) {
		int fd;

		snprintf(C.paths[i], sizeof(C.paths[i]), "%s/d%d.img", C.dir, i);
		C.pathv[i] = C.paths[i];
		fd = open(C.paths[i], O_CREAT | O_RDWR | O_TRUNC, 0600);
		if (fd < 0)
			return -errno;
		if (ftruncate(fd, C.v->dev_size) < 0) {
			close(fd);
			return -errno;
		}
		close(fd);
	}
	return 0;
}

static int open_fs(void)
{
	struct mfs_open_ctl ctl = {
		.paths = C.pathv, .npaths = C.v->ndevs,
		.flags = MFS_OPEN_WRITABLE, .sb_mirror = -1,
	};

	return mfs_open_fs(&ctl, &C.fs);
}

static int start_trans(void)
{
	if (C.trans)
		return 0;
	return mfs_start_transaction(C.fs, &C.trans);
}

static int commit(void)
{
	int ret;

	if (!C.trans) {
		ret = start_trans();
		if (ret)
			return ret;
	}
	ret = mfs_commit_transaction(C.trans);
	C.trans = NULL;
	return ret;
}

static u64 metadata_used(struct mfs_fs_info *fs)
{
	u64 used = 0;
	int i;

	for (i = 0; i < fs->nr_bgs; i++)
		if (fs->bgs[i]->flags & MFS_BLOCK_GROUP_METADATA)
			used += fs->bgs[i]->used;
	return used;
}

/* ---------------- checks ---------------- */

static bool check_item(struct extent_buffer *leaf, int slot_in_leaf, u32 slot)
{
	u32 size = leaf_item_size(leaf, slot_in_leaf);

	if (size != M->size[slot]) {
		FAIL("slot %u: item size %u, model %u", slot, size, M->size[slot]);
		return false;
	}
	gen_content(slot, M->seed[slot], C.buf, size);
	if (memcmp(leaf_item_data(leaf, slot_in_leaf), C.buf, size)) {
		FAIL("slot %u: content differs (size %u seed %u)", slot, size, M->seed[slot]);
		return false;
	}
	return true;
}

static bool key_is_slot(const struct mfs_key *k, u32 slot)
{
	struct mfs_key want = slot_key(slot);

	return mfs_comp_keys(k, &want) == 0;
}

/* Walk forward from the path comparing up to n items with the model. */
static void compare_forward(struct mfs_path *path, u32 slot, u64 n)
{
	struct mfs_key k;
	int ret;

	while (n-- && !too_many_failures()) {
		if (slot == NSLOTS) {
			/* path is past the end; the tree must be too */
			return;
		}
		leaf_item_key(path->nodes[0], path->slots[0], &k);
		if (!key_is_slot(&k, slot)) {
			FAIL("forward: key (%" PRIu64 " %u %" PRIu64 "), model slot %u",
			     k.objectid, k.type, k.offset, slot);
			return;
		}
		check_item(path->nodes[0], path->slots[0], slot);
		ret = mfs_next_item(C.fs->fs_root, path);
		slot = m_next(slot + 1);
		if (ret < 0) {
			FAIL("next_item: %d", ret);
			return;
		}
		if (ret == 1) {
			if (slot != NSLOTS)
				FAIL("tree ended, model has slot %u next", slot);
			return;
		}
	}
}

static void compare_backward(struct mfs_path *path, int slot, int n)
{
	struct mfs_key k;
	int ret;

	while (n-- && !too_many_failures()) {
		ret = mfs_prev_item(C.fs->fs_root, path);
		slot = m_prev(slot - 1);
		if (ret < 0) {
			FAIL("prev_item: %d", ret);
			return;
		}
		if (ret == 1) {
			if (slot >= 0)
				FAIL("tree started, model has slot %d before", slot);
			return;
		}
		if (slot < 0) {
			FAIL("prev_item found an item before the model's first");
			return;
		}
		leaf_item_key(path->nodes[0], path->slots[0], &k);
		if (!key_is_slot(&k, slot)) {
			FAIL("backward: key (%" PRIu64 " %u %" PRIu64 "), model slot %d",
			     k.objectid, k.type, k.offset, slot);
			return;
		}
		check_item(path->nodes[0], path->slots[0], slot);
	}
}

/* The whole tree, forwards, against the model. */
static void compare_all(void)
{
	struct mfs_key zero = { 0, 0, 0 };
	struct mfs_path path;
	u32 first = m_next(0);
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_forward(C.fs->fs_root, &zero, &path);
	if (ret < 0) {
		FAIL("search_forward(0): %d", ret);
	} else if (ret == 1) {
		if (first != NSLOTS)
			FAIL("tree empty, model has %u items", M->count);
	} else if (first == NSLOTS) {
		FAIL("model empty, tree is not");
	} else {
		compare_forward(&path, first, (u64)-1);
	}
	mfs_release_path(&path);
}

/* Backwards over the whole tree from its last item. */
static void compare_all_backward(void)
{
	struct mfs_key last = { (u64)-1, 255, (u64)-1 };
	struct mfs_path path;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_slot(NULL, C.fs->fs_root, &last, &path, 0, 0);
	if (ret != 1) {
		FAIL("search for the max key: %d", ret);
	} else {
		compare_backward(&path, NSLOTS, NSLOTS);
	}
	mfs_release_path(&path);
}

struct walk {
	u64 nodes;
	u64 items;
	u64 leaves;
	u64 empty_leaves;
	u64 *blocks;		/* every tree block seen, for the extent check */
	u64 nblocks, maxblocks;
};

static void walk_add_block(struct walk *w, u64 bytenr)
{
	if (w->nblocks == w->maxblocks) {
		w->maxblocks = w->maxblocks ? w->maxblocks * 2 : 1024;
		w->blocks = realloc(w->blocks, w->maxblocks * sizeof(*w->blocks));
		if (!w->blocks)
			abort();
	}
	w->blocks[w->nblocks++] = bytenr;
}

/*
 * Structural check of a subtree: levels step down by one, keys strictly
 * increase and stay inside [lo, hi), every parent key equals its child's
 * first key, leaf item data is packed from the block end without gaps.
 */
static void walk_tree(struct mfs_root *root, struct extent_buffer *eb,
		      const struct mfs_key *lo, const struct mfs_key *hi,
		      bool is_root, struct walk *w)
{
	struct mfs_fs_info *fs = root->fs_info;
	u32 n = eb_nritems(eb), i;
	struct mfs_key k, prev;
	int level = eb_level(eb);

	w->nodes++;
	walk_add_block(w, eb->start);
	if (eb_owner(eb) != root->objectid)
		FAIL("tree %" PRIu64 " block %" PRIu64 ": owner %" PRIu64,
		     root->objectid, eb->start, eb_owner(eb));
	if (level == 0) {
		u32 end = leaf_data_size(fs);

		w->leaves++;
		w->items += n;
		if (n == 0 && !is_root)
			w->empty_leaves++;
		if (n * sizeof(struct mfs_item) > end) {
			FAIL("leaf %" PRIu64 ": %u items overflow", eb->start, n);
			return;
		}
		for (i = 0; i < n; i++) {
			struct mfs_item *it = leaf_item(eb, i);
			u32 off = le32_to_cpu(it->offset), size = le32_to_cpu(it->size);

			leaf_item_key(eb, i, &k);
			if (off + size != end || off < n * sizeof(struct mfs_item)) {
				FAIL("leaf %" PRIu64 " slot %u: data [%u,+%u) expected end %u",
				     eb->start, i, off, size, end);
				return;
			}
			end = off;
			if ((i && mfs_comp_keys(&prev, &k) >= 0) ||
			    (lo && mfs_comp_keys(&k, lo) < 0) ||
			    (hi && mfs_comp_keys(&k, hi) >= 0)) {
				FAIL("leaf %" PRIu64 " slot %u: key out of order", eb->start, i);
				return;
			}
			prev = k;
		}
		return;
	}
	if (n == 0) {
		FAIL("node %" PRIu64 " level %d has no items", eb->start, level);
		return;
	}
	for (i = 0; i < n; i++) {
		struct extent_buffer *child;
		struct mfs_key next, first;
		int ret;

		node_key(eb, i, &k);
		if ((i && mfs_comp_keys(&prev, &k) >= 0) ||
		    (lo && mfs_comp_keys(&k, lo) < 0) ||
		    (hi && mfs_comp_keys(&k, hi) >= 0)) {
			FAIL("node %" PRIu64 " slot %u: key out of order", eb->start, i);
			return;
		}
		prev = k;
		struct mfs_tree_check chk;
		struct mfs_key ck;

		mfs_child_check(eb, i, root->objectid, &ck, &chk);
		ret = mfs_read_tree_block(fs, node_blockptr(eb, i), &chk, &child);
		if (ret) {
			FAIL("node %" PRIu64 " slot %u: read child %" PRIu64 ": %d",
			     eb->start, i, node_blockptr(eb, i), ret);
			return;
		}
		if (eb_generation(child) != le64_to_cpu(node_ptr(eb, i)->generation))
			FAIL("node %" PRIu64 " slot %u: ptr generation %" PRIu64
			     ", child %" PRIu64, eb->start, i,
			     le64_to_cpu(node_ptr(eb, i)->generation), eb_generation(child));
		if (eb_nritems(child)) {
			eb_item_key(child, 0, &first);
			if (mfs_comp_keys(&first, &k) != 0)
				FAIL("node %" PRIu64 " slot %u: key differs from child's first",
				     eb->start, i);
		}
		if (i + 1 < n)
			node_key(eb, i + 1, &next);
		walk_tree(root, child, &k, i + 1 < n ? &next : hi, false, w);
		mfs_eb_put(fs, child);
		if (too_many_failures())
			return;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/*
 * Every reachable tree block has exactly one tree-block extent item, no
 * extent item is unreachable, and each block group's used bytes are the
 * sum of its extents (call with nothing pending, right after open/commit).
 */
static void check_extents(void)
{
	struct mfs_fs_info *fs = C.fs;
	struct mfs_root *roots[] = { fs->tree_root, fs->chunk_root, fs->extent_root,
				     fs->dev_root, fs->fs_root, fs->csum_root };
	struct walk w = { 0 };
	struct mfs_key key = { 0, 0, 0 };
	struct mfs_path path;
	u64 *bg_sum = calloc(fs->nr_bgs, sizeof(u64));
	u64 j = 0;
	unsigned int r;
	int ret, i;

	for (r = 0; r < ARRAY_SIZE(roots); r++)
		walk_tree(roots[r], roots[r]->node, NULL, NULL, true, &w);
	qsort(w.blocks, w.nblocks, sizeof(u64), cmp_u64);
	mfs_init_path(&path);
	ret = mfs_search_forward(fs->extent_root, &key, &path);
	while (ret == 0 && !too_many_failures()) {
		struct extent_buffer *leaf = path.nodes[0];
		struct mfs_extent_item *ei;

		leaf_item_key(leaf, path.slots[0], &key);
		if (key.type == MFS_EXTENT_ITEM_KEY) {
			struct mfs_block_group *bg = mfs_lookup_block_group(fs, key.objectid);

			ei = leaf_item_data(leaf, path.slots[0]);
			if (!bg) {
				FAIL("extent %" PRIu64 " outside block groups", key.objectid);
			} else {
				for (i = 0; fs->bgs[i] != bg; i++)
					;
				bg_sum[i] += key.offset;
			}
			if (le64_to_cpu(ei->flags) & MFS_EXTENT_FLAG_TREE_BLOCK) {
				if (key.offset != fs->nodesize)
					FAIL("tree block extent %" PRIu64 " len %" PRIu64,
					     key.objectid, key.offset);
				while (j < w.nblocks && w.blocks[j] < key.objectid) {
					FAIL("tree block %" PRIu64 " has no extent item", w.blocks[j]);
					j++;
				}
				if (j < w.nblocks && w.blocks[j] == key.objectid)
					j++;
				else
					FAIL("extent item %" PRIu64 " (owner %" PRIu64
					     ") is no reachable tree block: leaked",
					     key.objectid, le64_to_cpu(ei->owner_root));
			}
		}
		ret = mfs_next_item(fs->extent_root, &path);
	}
	mfs_release_path(&path);
	if (ret < 0)
		FAIL("extent tree walk: %d", ret);
	for (; j < w.nblocks && !too_many_failures(); j++)
		FAIL("tree block %" PRIu64 " has no extent item", w.blocks[j]);
	for (i = 0; i < fs->nr_bgs; i++) {
		struct mfs_block_group *bg = fs->bgs[i];

		if (bg_sum[i] != bg->used)
			FAIL("bg %" PRIu64 ": used %" PRIu64 ", extents sum %" PRIu64,
			     bg->start, bg->used, bg_sum[i]);
		if (bg->reserved)
			FAIL("bg %" PRIu64 ": reserved %" PRIu64 " with nothing pending",
			     bg->start, bg->reserved);
		if (!mfs_profile(bg->flags)->nparity &&
		    bg->used + mfs_free_space_total(bg) != bg->length)
			FAIL("bg %" PRIu64 ": used %" PRIu64 " + free %" PRIu64
			     " != length %" PRIu64, bg->start, bg->used,
			     mfs_free_space_total(bg), bg->length);
	}
	free(w.blocks);
	free(bg_sum);
}

/* Structure of the fs tree alone; returns its item count. */
static u64 check_fs_tree(void)
{
	struct walk w = { 0 };

	walk_tree(C.fs->fs_root, C.fs->fs_root->node, NULL, NULL, true, &w);
	if (w.items != M->count)
		FAIL("tree holds %" PRIu64 " items, model %u", w.items, M->count);
	if (w.empty_leaves)
		FAIL("%" PRIu64 " empty non-root leaves", w.empty_leaves);
	free(w.blocks);
	return w.items;
}

static int tree_level(void)
{
	return eb_level(C.fs->fs_root->node);
}

static void note_level(void)
{
	if (tree_level() > C.max_level_seen)
		C.max_level_seen = tree_level();
}

/* Commit, close, reopen from disk and check everything. */
static int reopen(void)
{
	int ret = commit();

	if (ret) {
		FAIL("commit before close: %d", ret);
		return ret;
	}
	ret = mfs_close_fs(C.fs);
	C.fs = NULL;
	if (ret) {
		FAIL("close: %d", ret);
		return ret;
	}
	ret = open_fs();
	if (ret) {
		FAIL("reopen: %d", ret);
		return ret;
	}
	check_fs_tree();
	compare_all();
	check_extents();
	return 0;
}

/* Delete every item of the fs tree (mkfs's root directory) and commit. */
static int clear_fs_tree(void)
{
	struct mfs_key key = { 0, 0, 0 };
	struct mfs_path path;
	int ret, n = 0;

	ret = start_trans();
	while (!ret) {
		mfs_init_path(&path);
		ret = mfs_search_forward(C.fs->fs_root, &key, &path);
		if (ret == 0)
			leaf_item_key(path.nodes[0], path.slots[0], &key);
		mfs_release_path(&path);
		if (ret)
			break;
		ret = mfs_search_slot(C.trans, C.fs->fs_root, &key, &path, -1, 1);
		if (ret == 0)
			ret = mfs_del_item(C.trans, C.fs->fs_root, &path);
		else if (ret > 0)
			ret = -EUCLEAN;
		mfs_release_path(&path);
		n++;
	}
	if (ret < 0)
		return ret;
	fprintf(stderr, "# %s: removed %d items mkfs created in the fs tree\n", C.v->name, n);
	return commit();
}

/* ---------------- operations ---------------- */

static u32 random_size(void)
{
	u32 r = unit_rnd_below(100), s;

	/* mostly small items so that trees get tall, some near the limit */
	if (r < 60)
		s = unit_rnd_below(64);
	else if (r < 90)
		s = unit_rnd_below(512);
	else
		s = unit_rnd_below(C.max_item + 1);
	return min_t(u32, s, C.max_item);
}

static void op_insert(u32 slot)
{
	struct mfs_key k = slot_key(slot);
	u32 size = random_size(), seed = ++M->next_seed;
	int ret;

	gen_content(slot, seed, C.buf, size);
	ret = mfs_insert_item(C.trans, C.fs->fs_root, &k, C.buf, size);
	if (m_present(slot)) {
		if (ret != -EEXIST)
			FAIL("insert of existing slot %u: %d", slot, ret);
		return;
	}
	if (ret) {
		FAIL("insert slot %u size %u: %d", slot, size, ret);
		return;
	}
	m_set(slot, true);
	M->size[slot] = size;
	M->seed[slot] = seed;
}

static void op_delete(u32 slot)
{
	struct mfs_key k = slot_key(slot);
	struct mfs_path path;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_slot(C.trans, C.fs->fs_root, &k, &path, -1, 1);
	if (ret < 0) {
		FAIL("search for delete of slot %u: %d", slot, ret);
	} else if (ret == 1) {
		if (m_present(slot))
			FAIL("delete: slot %u not found", slot);
	} else if (!m_present(slot)) {
		FAIL("delete: slot %u found but not in the model", slot);
	} else {
		ret = mfs_del_item(C.trans, C.fs->fs_root, &path);
		if (ret)
			FAIL("del_item slot %u: %d", slot, ret);
		else
			m_set(slot, false);
	}
	mfs_release_path(&path);
}

/* Position a COWed path at slot (ins_len as mfs_search_slot); false if absent. */
static bool find_for_change(u32 slot, int ins_len, struct mfs_path *path)
{
	struct mfs_key k = slot_key(slot);
	int ret;

	mfs_init_path(path);
	ret = mfs_search_slot(C.trans, C.fs->fs_root, &k, path, ins_len, 1);
	if (ret < 0)
		FAIL("search (ins_len %d) slot %u: %d", ins_len, slot, ret);
	else if (ret == 0 && !m_present(slot))
		FAIL("slot %u found but not in the model", slot);
	else if (ret == 1 && m_present(slot))
		FAIL("slot %u not found", slot);
	if (ret != 0)
		mfs_release_path(path);
	return ret == 0;
}

static void op_overwrite(u32 slot)
{
	struct mfs_path path;
	u32 seed = ++M->next_seed;

	if (!find_for_change(slot, 0, &path))
		return;
	if (check_item(path.nodes[0], path.slots[0], slot)) {
		gen_content(slot, seed, C.buf, M->size[slot]);
		memcpy(leaf_item_data(path.nodes[0], path.slots[0]), C.buf, M->size[slot]);
		mfs_mark_buffer_dirty(C.trans, path.nodes[0]);
		M->seed[slot] = seed;
	}
	mfs_release_path(&path);
}

static void op_extend(u32 slot)
{
	struct mfs_path path;
	u32 old = M->size[slot], extra;
	u8 *data;
	int ret;

	if (!m_present(slot) || old >= C.max_item) {
		/* still exercise the lookup of a missing key */
		if (!m_present(slot) && find_for_change(slot, 0, &path))
			mfs_release_path(&path);
		return;
	}
	extra = 1 + unit_rnd_below(min_t(u32, C.max_item - old, 1200));
	if (!find_for_change(slot, extra, &path))
		return;
	ret = mfs_extend_item(C.trans, C.fs->fs_root, &path, extra);
	if (ret) {
		FAIL("extend slot %u from %u by %u: %d", slot, old, extra, ret);
		mfs_release_path(&path);
		return;
	}
	data = leaf_item_data(path.nodes[0], path.slots[0]);
	if (leaf_item_size(path.nodes[0], path.slots[0]) != old + extra) {
		FAIL("extend slot %u: size %u, expected %u", slot,
		     leaf_item_size(path.nodes[0], path.slots[0]), old + extra);
	} else {
		u32 i;

		gen_content(slot, M->seed[slot], C.buf, old + extra);
		if (memcmp(data, C.buf, old))
			FAIL("extend slot %u: head changed", slot);
		for (i = old; i < old + extra; i++) {
			if (data[i]) {
				FAIL("extend slot %u: extension not zeroed", slot);
				break;
			}
		}
		memcpy(data + old, C.buf + old, extra);
		mfs_mark_buffer_dirty(C.trans, path.nodes[0]);
		M->size[slot] = old + extra;
	}
	mfs_release_path(&path);
}

static void op_truncate(u32 slot)
{
	struct mfs_path path;
	u32 new_size;
	int ret;

	if (!find_for_change(slot, 0, &path))
		return;
	new_size = unit_rnd_below(M->size[slot] + 1);
	ret = mfs_truncate_item(C.trans, &path, new_size);
	if (ret)
		FAIL("truncate slot %u to %u: %d", slot, new_size, ret);
	else
		M->size[slot] = new_size;
	if (!ret && leaf_item_size(path.nodes[0], path.slots[0]) != new_size)
		FAIL("truncate slot %u: size %u", slot, leaf_item_size(path.nodes[0], path.slots[0]));
	else if (!ret)
		check_item(path.nodes[0], path.slots[0], slot);
	mfs_release_path(&path);
}

static void op_lookup(u32 slot)
{
	struct mfs_key k = slot_key(slot);
	struct mfs_path path;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_slot(NULL, C.fs->fs_root, &k, &path, 0, 0);
	if (ret < 0)
		FAIL("lookup slot %u: %d", slot, ret);
	else if (ret == 0 && !m_present(slot))
		FAIL("lookup: slot %u found, model says deleted", slot);
	else if (ret == 1 && m_present(slot))
		FAIL("lookup: slot %u missing", slot);
	else if (ret == 0)
		check_item(path.nodes[0], path.slots[0], slot);
	mfs_release_path(&path);
}

/*
 * search_forward from a key that is a slot or lies between slots, then a
 * few steps forward or back.
 */
static void op_iterate(u32 slot)
{
	struct mfs_key k = slot_key(slot);
	struct mfs_path path;
	u32 first;
	int ret, kind = unit_rnd_below(4);

	switch (kind) {
	case 0:			/* the slot itself */
		first = slot;
		break;
	case 1:			/* just after the slot */
		k.offset++;
		first = slot + 1;
		break;
	case 2:			/* after its (objectid, type) group */
		k.type++;
		k.offset = 0;
		first = (slot | 3) + 1;
		break;
	default:		/* after its objectid */
		k.objectid++;
		k.type = 0;
		k.offset = 0;
		first = (slot | 31) + 1;
		break;
	}
	first = m_next(first);
	mfs_init_path(&path);
	ret = mfs_search_forward(C.fs->fs_root, &k, &path);
	if (ret < 0) {
		FAIL("search_forward: %d", ret);
	} else if (ret == 1) {
		if (first != NSLOTS)
			FAIL("search_forward found nothing, model has slot %u", first);
	} else if (first == NSLOTS) {
		FAIL("search_forward found an item past the model's last");
	} else if (unit_rnd_below(3) == 0) {
		struct mfs_key got;

		leaf_item_key(path.nodes[0], path.slots[0], &got);
		if (!key_is_slot(&got, first))
			FAIL("search_forward: wrong first item (want slot %u)", first);
		else
			compare_backward(&path, first, 1 + unit_rnd_below(300));
	} else {
		compare_forward(&path, first, 1 + unit_rnd_below(300));
	}
	mfs_release_path(&path);
}

/* Delete every present slot (or all but keep) in one of three orders. */
static void mass_delete(u32 keep)
{
	u32 *order = malloc(NSLOTS * sizeof(*order)), n = 0, i;
	int how = unit_rnd_below(3);

	for (i = m_next(0); i < NSLOTS; i = m_next(i + 1))
		order[n++] = i;
	if (how == 1) {
		for (i = 0; i < n / 2; i++) {
			u32 t = order[i];

			order[i] = order[n - 1 - i];
			order[n - 1 - i] = t;
		}
	} else if (how == 2) {
		for (i = n; i > 1; i--) {
			u32 j = unit_rnd_below(i), t = order[i - 1];

			order[i - 1] = order[j];
			order[j] = t;
		}
	}
	fprintf(stderr, "# %s: mass delete of %u items (%s order), keep %u, level %d\n",
		C.v->name, n - min_t(u32, keep, n),
		how == 0 ? "ascending" : how == 1 ? "descending" : "random", keep, tree_level());
	for (i = 0; i + keep < n && !too_many_failures(); i++) {
		op_delete(order[i]);
		if (unit_rnd_below(2000) == 0 && commit() == 0)
			start_trans();
		C.ops_done++;
	}
	free(order);
}

static void random_op(u32 target)
{
	u32 slot = unit_rnd_below(NSLOTS);
	u32 r = unit_rnd_below(100);
	u32 ins = M->count < target ? 45 : 20;

	/* half of the non-insert operations pick an existing item */
	if (r >= ins && M->count && unit_rnd_below(2)) {
		u32 s = m_next(slot);

		slot = s < NSLOTS ? s : m_next(0);
	}
	if (r < ins)
		op_insert(slot);
	else if (r < ins + 20)
		op_delete(slot);
	else if (r < ins + 28)
		op_overwrite(slot);
	else if (r < ins + 36)
		op_extend(slot);
	else if (r < ins + 42)
		op_truncate(slot);
	else if (r < ins + 52)
		op_iterate(slot);
	else
		op_lookup(slot);
}

static void run_variant(const struct variant *v)
{
	struct mfs_mkfs_params p = { 0 };
	u64 seed = base_seed() ^ unit_mix64(v->nodesize * 31 + v->ndevs);
	u64 mkfs_meta, level_before;
	int ret, phase, i;
	u32 target;

	memset(&C, 0, sizeof(C));
	C.v = v;
	C.failures_before = unit_failed_checks;
	unit_seed(seed);
	fprintf(stderr, "# %s: seed 0x%" PRIx64 " (MFS_TEST_SEED=0x%" PRIx64 ")\n",
		v->name, seed, base_seed());
	M = calloc(1, sizeof(*M));
	C.buf = malloc(SZ_64K);
	REQUIRE(M && C.buf);
	ret = make_images();
	CHECK_EQ(ret, 0);
	if (ret)
		goto out;

	p.paths = C.pathv;
	p.npaths = v->ndevs;
	p.data_profile = v->data_profile;
	p.metadata_profile = v->meta_profile;
	p.nodesize = v->nodesize;
	p.sectorsize = 4096;
	p.csum_type = 0;
	ret = mfs_make_fs(&p);
	CHECK_EQ(ret, 0);
	if (ret)
		goto out;
	ret = open_fs();
	CHECK_EQ(ret, 0);
	if (ret)
		goto out;
	/* the model starts from an empty tree: drop what mkfs put there */
	ret = clear_fs_tree();
	CHECK_EQ(ret, 0);
	if (ret)
		goto out;
	mkfs_meta = metadata_used(C.fs);
	check_extents();
	/* an insert takes size + item header and must fit half a leaf */
	C.max_item = min_t(u32, 2000, leaf_data_size(C.fs) / 2 - sizeof(struct mfs_item));

	/*
	 * Phases: fill to a target, random mixed operations around it,
	 * commit/close/reopen, mass-delete, reopen; targets vary so that
	 * each phase's tree has a different shape.
	 */
	for (phase = 0; phase < 4 && !too_many_failures(); phase++) {
		static const u32 pct[4] = { 40, 70, 100, 50 };
		int nops = v->nops / 4;

		target = (u64)v->fill * pct[phase] / 100;
		ret = start_trans();
		if (ret) {
			FAIL("start transaction: %d", ret);
			break;
		}
		while (M->count < target && !too_many_failures()) {
			op_insert(unit_rnd_below(NSLOTS));
			C.ops_done++;
			if (unit_rnd_below(3000) == 0 && (commit() || start_trans()))
				FAIL("commit during fill");
		}
		for (i = 0; i < nops && !too_many_failures(); i++) {
			random_op(target);
			C.ops_done++;
			note_level();
			if (unit_rnd_below(700) == 0) {
				ret = commit();
				if (ret)
					FAIL("commit: %d", ret);
				if (ret || start_trans())
					break;
			}
			if (unit_rnd_below(20000) == 0)
				compare_all();
			if (unit_rnd_below(25000) == 0) {
				check_fs_tree();
				compare_all_backward();
			}
		}
		if (too_many_failures())
			break;
		fprintf(stderr, "# %s: phase %d: %u items, level %d (max %d), %" PRIu64 " ops\n",
			v->name, phase, M->count, tree_level(), C.max_level_seen, C.ops_done);
		if (reopen())
			break;
		start_trans();
		compare_all_backward();

		/* empty most of the tree (all of it every other time) */
		level_before = tree_level();
		mass_delete(phase % 2 ? 0 : unit_rnd_below(8));
		check_fs_tree();
		compare_all();
		if (reopen())
			break;
		fprintf(stderr, "# %s: after mass delete: %u items, level %d (was %" PRIu64 ")\n",
			v->name, M->count, tree_level(), level_before);
		if (M->count == 0) {
			CHECK_EQ(tree_level(), 0);
			CHECK_EQ(eb_nritems(C.fs->fs_root->node), 0);
		} else {
			/* a handful of items needs no more than a root over leaves */
			CHECK(tree_level() <= 1);
		}
	}
	CHECK(C.max_level_seen >= v->min_level);

	/* finally everything goes: space must come back */
	if (!too_many_failures()) {
		u64 used;

		start_trans();
		mass_delete(0);
		CHECK_EQ(commit(), 0);
		CHECK_EQ(commit(), 0);
		used = metadata_used(C.fs);
		fprintf(stderr, "# %s: metadata used after mkfs %" PRIu64 ", now %" PRIu64
			" (%" PRIu64 " ops)\n", v->name, mkfs_meta, used, C.ops_done);
		/* the extent, root and dev trees may keep an extra node or two */
		CHECK(used <= mkfs_meta + 4 * (u64)v->nodesize);
		CHECK(reopen() == 0);
		if (C.fs) {
			CHECK_EQ(tree_level(), 0);
			CHECK_EQ(metadata_used(C.fs), used);
		}
	}
	CHECK(C.ops_done >= (u64)v->nops);
out:
	if (C.trans) {
		mfs_end_transaction(C.trans);
		C.trans = NULL;
	}
	if (C.fs)
		CHECK_EQ(mfs_close_fs(C.fs), 0);
	nftw(C.dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
	free(M);
	free(C.buf);
}

static const struct variant v16k = {
	"raid1 16k", 2, 2 * SZ_1G, MFS_BLOCK_GROUP_RAID1, 0, 16384, 100000, 60000, 2,
};
static const struct variant v4k = {
	"raid1 4k", 2, 2 * SZ_1G, MFS_BLOCK_GROUP_RAID1, 0, 4096, 100000, 30000, 2,
};
static const struct variant v4k_raid5 = {
	"raid5 4k", 3, 2 * SZ_1G, MFS_BLOCK_GROUP_RAID5, MFS_BLOCK_GROUP_RAID5, 4096, 40000, 15000, 2,
};

static void test_btree_raid1_16k(void)
{
	run_variant(&v16k);
}

static void test_btree_raid1_4k(void)
{
	run_variant(&v4k);
}

static void test_btree_raid5_4k(void)
{
	run_variant(&v4k_raid5);
}

/*
 * mfs_end_transaction_ret: a failure before the handle changed anything,
 * or a lack of space, leaves the transaction to commit; another failure
 * after a change aborts it (the half-made change never reaches disk).
 */
static int insert_one(u64 objectid)
{
	struct mfs_key key = { objectid, MFS_XATTR_ITEM_KEY, 0 };
	u8 data[32] = { 1 };

	return mfs_insert_item(C.trans, C.fs->fs_root, &key, data, sizeof(data));
}

static void test_end_transaction_ret(void)
{
	static const struct variant v = { "end_ret", 1, SZ_1G, 0, 0, 16384, 0, 0, 0 };
	struct mfs_mkfs_params p = { 0 };
	struct mfs_key key = { 1ULL << 40, MFS_XATTR_ITEM_KEY, 0 };
	struct mfs_path path;

	memset(&C, 0, sizeof(C));
	C.v = &v;
	REQUIRE(make_images() == 0);
	p.paths = C.pathv;
	p.npaths = 1;
	p.nodesize = 16384;
	p.sectorsize = 4096;
	REQUIRE(mfs_make_fs(&p) == 0);
	REQUIRE(open_fs() == 0);
	/* a lookup (copy-on-write along the path) changes nothing */
	REQUIRE(start_trans() == 0);
	mfs_init_path(&path);
	CHECK_EQ(mfs_search_slot(C.trans, C.fs->fs_root, &key, &path, 0, 1), 1);
	mfs_release_path(&path);
	CHECK(!C.trans->changed);
	CHECK_EQ(mfs_end_transaction_ret(C.trans, -ENOENT), -ENOENT);
	C.trans = NULL;
	CHECK_EQ(C.fs->fatal_error, 0);
	/* no space after a change: not an abort (a full disk is no fault) */
	REQUIRE(start_trans() == 0);
	CHECK_EQ(insert_one(1ULL << 40), 0);
	CHECK(C.trans->changed);
	CHECK_EQ(mfs_end_transaction_ret(C.trans, -ENOSPC), -ENOSPC);
	C.trans = NULL;
	CHECK_EQ(C.fs->fatal_error, 0);
	CHECK_EQ(commit(), 0);
	/* an I/O error after a change: aborted, nothing more is committed */
	REQUIRE(start_trans() == 0);
	CHECK_EQ(insert_one((1ULL << 40) + 1), 0);
	CHECK_EQ(mfs_end_transaction_ret(C.trans, -EIO), -EIO);
	C.trans = NULL;
	CHECK_EQ(C.fs->fatal_error, -EIO);
	CHECK(commit() != 0);
	mfs_close_fs(C.fs);
	nftw(C.dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
	RUN(test_end_transaction_ret);
	RUN(test_btree_raid1_16k);
	RUN(test_btree_raid1_4k);
	RUN(test_btree_raid5_4k);
	UNIT_EXIT();
}
