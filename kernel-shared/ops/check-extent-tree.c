/*
 * mfs check --init-extent-tree: the extent tree rebuilt from scratch from
 * the other trees. Every tree block reachable from the roots gets an
 * extent item, every data extent a regular or preallocated file extent
 * points at gets one with the number of such items as its count, and every
 * chunk its block group item with the used bytes those extents make.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernel-shared/ops/check.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/tree/alloc.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/tree/transaction.h"
#include "kernel-shared/volumes/volumes.h"

struct new_extent {
	u64 bytenr, len;
	u64 refs, generation, flags;
	u64 root, objectid, offset;
};

struct extent_rebuild {
	struct mfs_fs_info *fs;
	void (*say)(void *arg, const char *msg);
	void *arg;
	struct new_extent *ext;
	u64 nr, max;
	/* the old extent tree's blocks: kept from reuse until the commit is on disk */
	u64 *old, nr_old, max_old;
};

static void say(const struct extent_rebuild *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void say(const struct extent_rebuild *r, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (!r->say)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	r->say(r->arg, buf);
}

static int add_extent(struct extent_rebuild *r, const struct new_extent *e)
{
	int ret = MFS_ARRAY_RESERVE(r->ext, r->nr, r->max, 1024);

	if (!ret)
		r->ext[r->nr++] = *e;
	return ret;
}

static const char *tree_name(u64 id)
{
	static const char * const names[] = { "?", "root", "extent", "chunk", "device", "fs",
					       "?", "csum" };

	return id < ARRAY_SIZE(names) ? names[id] : "?";
}

/* eb and every block under it; the old extent tree's only remembered. */
static int walk_blocks(struct extent_rebuild *r, u64 tree, struct extent_buffer *eb)
{
	struct new_extent e = { eb->start, r->fs->nodesize, 1, eb_generation(eb),
				MFS_EXTENT_FLAG_TREE_BLOCK, tree, eb_level(eb), 0 };
	int i, ret;

	if (tree == MFS_EXTENT_TREE_OBJECTID) {
		ret = MFS_ARRAY_RESERVE(r->old, r->nr_old, r->max_old, 64);
		if (!ret)
			r->old[r->nr_old++] = eb->start;
	} else {
		ret = add_extent(r, &e);
	}
	for (i = 0; !ret && eb_level(eb) && i < (int)eb_nritems(eb); i++) {
		struct mfs_tree_check chk;
		struct extent_buffer *child;
		struct mfs_key key;

		mfs_child_check(eb, i, tree, &key, &chk);
		ret = mfs_read_tree_block(r->fs, node_blockptr(eb, i), &chk, &child);
		if (ret) {
			say(r, "%s tree block %llu cannot be read: %s", tree_name(tree),
			    (unsigned long long)node_blockptr(eb, i), strerror(-ret));
			break;
		}
		ret = walk_blocks(r, tree, child);
		mfs_eb_put(r->fs, child);
	}
	return ret;
}

static int note_file_extent(struct extent_rebuild *r, const struct mfs_key *key,
			    struct extent_buffer *leaf, int slot)
{
	const struct mfs_file_extent_item *fi = leaf_item_data(leaf, slot);
	struct new_extent e;

	if (leaf_item_size(leaf, slot) != sizeof(*fi) ||
	    (fi->type != MFS_FILE_EXTENT_REG && fi->type != MFS_FILE_EXTENT_PREALLOC) ||
	    !le64_to_cpu(fi->disk_bytenr))
		return 0;	/* inline, a hole, or malformed (the check reports it) */
	e = (struct new_extent){ le64_to_cpu(fi->disk_bytenr), le64_to_cpu(fi->disk_num_bytes), 1,
				 le64_to_cpu(fi->generation), MFS_EXTENT_FLAG_DATA,
				 MFS_FS_TREE_OBJECTID, key->objectid,
				 key->offset - le64_to_cpu(fi->offset) };
	if (!e.len || !mfs_check_in_data_chunk(r->fs, e.bytenr, e.len)) {
		say(r, "inode %llu file extent at %llu: data extent %llu length %llu is not inside a data chunk",
		    (unsigned long long)key->objectid, (unsigned long long)key->offset,
		    (unsigned long long)e.bytenr, (unsigned long long)e.len);
		return -EUCLEAN;
	}
	return add_extent(r, &e);
}

static int note_extent_cb(void *arg, const struct mfs_key *key, struct extent_buffer *leaf,
			  int slot)
{
	return note_file_extent(arg, key, leaf, slot);
}

static int collect_data(struct extent_rebuild *r)
{
	int ret = mfs_check_for_each_file_extent(r->fs, note_extent_cb, r);

	if (ret < 0 && ret != -EUCLEAN)
		say(r, "the fs tree cannot be read whole: %s", strerror(-ret));
	return ret;
}

static int cmp_extent(const void *a, const void *b)
{
	const struct new_extent *x = a, *y = b;

	if (x->bytenr != y->bytenr)
		return x->bytenr < y->bytenr ? -1 : 1;
	/* the first file extent naming a data extent is its owner */
	if (x->objectid != y->objectid)
		return x->objectid < y->objectid ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/*
 * One item per extent, counting the file extents that share one; extents
 * that overlap, or file extents that disagree on a length, leave nothing
 * sound to record: -EUCLEAN.
 */
static int merge_extents(struct extent_rebuild *r)
{
	u64 i, n = 0;

	if (r->nr)
		qsort(r->ext, r->nr, sizeof(*r->ext), cmp_extent);
	for (i = 0; i < r->nr; i++) {
		const struct new_extent *e = &r->ext[i];
		struct new_extent *last = n ? &r->ext[n - 1] : NULL;

		if (last && last->bytenr == e->bytenr && last->len == e->len &&
		    (e->flags & MFS_EXTENT_FLAG_DATA) && (last->flags & MFS_EXTENT_FLAG_DATA)) {
			last->refs++;
			continue;
		}
		if (last && last->bytenr + last->len > e->bytenr) {
			say(r, "%s extent %llu length %llu overlaps %s extent %llu length %llu: no sound extent tree can be made",
			    (last->flags & MFS_EXTENT_FLAG_DATA) ? "data" : "tree block",
			    (unsigned long long)last->bytenr, (unsigned long long)last->len,
			    (e->flags & MFS_EXTENT_FLAG_DATA) ? "data" : "tree block",
			    (unsigned long long)e->bytenr, (unsigned long long)e->len);
			return -EUCLEAN;
		}
		r->ext[n++] = *e;
	}
	r->nr = n;
	return 0;
}

/* Whatever part of [start, start+len) the allocator sees as free, taken out. */
static int exclude(struct mfs_fs_info *fs, u64 start, u64 len)
{
	struct mfs_block_group *bg = mfs_lookup_block_group(fs, start);
	int i, ret;

	if (!bg || start + len > bg->start + bg->length)
		return -EUCLEAN;
	for (i = 0; i < bg->nr_free; i++) {
		u64 s = max_t(u64, bg->free[i].start, start);
		u64 e = min_t(u64, bg->free[i].start + bg->free[i].len, start + len);

		if (s >= e)
			continue;
		ret = mfs_free_space_remove(bg, s, e - s);
		if (ret)
			return ret;
		i = -1;	/* the ranges moved: look again */
	}
	return 0;
}

/*
 * What the allocator may hand out while the new tree is built: nothing a
 * live extent or a block of the old extent tree holds, whatever the old
 * tree said; and each block group's used bytes as the new items make them.
 */
static int prepare_space(struct extent_rebuild *r)
{
	struct mfs_fs_info *fs = r->fs;
	u64 i;
	int ret = 0, b;

	for (b = 0; b < fs->nr_bgs; b++) {
		fs->bgs[b]->used = 0;
		fs->bgs[b]->dirty = true;
	}
	for (i = 0; i < r->nr && !ret; i++) {
		struct mfs_block_group *bg = mfs_lookup_block_group(fs, r->ext[i].bytenr);

		ret = exclude(fs, r->ext[i].bytenr, r->ext[i].len);
		if (!ret)
			bg->used += r->ext[i].len;
	}
	for (i = 0; i < r->nr_old && !ret; i++)
		ret = exclude(fs, r->old[i], fs->nodesize);
	if (ret == -EUCLEAN)
		say(r, "an extent lies outside every block group: no sound extent tree can be made");
	return ret;
}

static int insert_extents(struct mfs_trans_handle *trans, struct extent_rebuild *r)
{
	u64 i;
	int ret = 0;

	for (i = 0; i < r->nr && !ret; i++) {
		const struct new_extent *e = &r->ext[i];
		struct mfs_key key = { e->bytenr, MFS_EXTENT_ITEM_KEY, e->len };
		struct mfs_extent_item item = {
			.refs = cpu_to_le64(e->refs),
			.generation = cpu_to_le64(e->generation),
			.flags = cpu_to_le64(e->flags),
			.owner_root = cpu_to_le64(e->root),
			.owner_objectid = cpu_to_le64(e->objectid),
			.owner_offset = cpu_to_le64(e->offset),
		};

		ret = mfs_insert_item(trans, trans->fs_info->extent_root, &key, &item, sizeof(item));
	}
	return ret;
}

/* A new, empty extent tree in place of the old, then the items; block group items at commit. */
static int rebuild(struct mfs_trans_handle *trans, struct extent_rebuild *r)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_root *old = fs->extent_root, *root;
	int ret = prepare_space(r);

	if (!ret)
		ret = mfs_create_tree(trans, MFS_EXTENT_TREE_OBJECTID, &root);
	if (ret)
		return ret;
	root->item = old->item;
	fs->extent_root = root;
	mfs_free_root(fs, old);
	return insert_extents(trans, r);
}

/*
 * The new tree's blocks are allocated while the allocator's view comes
 * from the old tree, mended by exclude(); raid5/6 space is handed out in
 * whole rows by a row count that view does not mend, so a new block could
 * share a row with a live one the old tree missed. Data chunks take no
 * allocation here.
 */
static int check_profiles(struct extent_rebuild *r)
{
	int b;

	for (b = 0; b < r->fs->nr_bgs; b++) {
		u64 flags = r->fs->bgs[b]->flags;

		if (!(flags & MFS_BLOCK_GROUP_DATA) && mfs_profile(flags)->nparity) {
			say(r, "%s block group %llu is %s: the extent tree is not rebuilt on raid5/raid6 metadata",
			    mfs_bg_type_name(flags), (unsigned long long)r->fs->bgs[b]->start,
			    mfs_profile_ui_name(flags));
			return -EOPNOTSUPP;
		}
	}
	return 0;
}

static int collect(struct extent_rebuild *r)
{
	struct mfs_fs_info *fs = r->fs;
	struct mfs_root *roots[] = { fs->tree_root, fs->chunk_root, fs->dev_root, fs->fs_root,
				     fs->csum_root, fs->extent_root };
	size_t i;
	int ret = 0;

	for (i = 0; i < ARRAY_SIZE(roots) && !ret; i++) {
		if (!roots[i] || !roots[i]->node) {
			say(r, "a tree root cannot be read: nothing to rebuild the extent tree from");
			return -EUCLEAN;
		}
		ret = walk_blocks(r, roots[i]->objectid, roots[i]->node);
	}
	if (!ret)
		ret = collect_data(r);
	return ret ? ret : merge_extents(r);
}

int mfs_check_init_extent_tree(struct mfs_fs_info *fs, void (*say_fn)(void *arg, const char *msg),
			       void *arg, u64 *nr_tree, u64 *nr_data)
{
	struct extent_rebuild r = { .fs = fs, .say = say_fn, .arg = arg };
	struct mfs_trans_handle *trans;
	u64 i;
	int ret;

	*nr_tree = *nr_data = 0;
	ret = check_profiles(&r);
	if (!ret)
		ret = collect(&r);
	if (ret)
		goto out;
	ret = mfs_start_transaction(fs, &trans);
	if (ret)
		goto out;
	/* all or nothing: the old tree stays on disk until the commit replaces it */
	ret = rebuild(trans, &r);
	if (ret) {
		mfs_end_transaction(trans);
		mfs_abort_transaction(fs);
		goto out;
	}
	ret = mfs_commit_transaction(trans);
	for (i = 0; !ret && i < r.nr; i++)
		(*((r.ext[i].flags & MFS_EXTENT_FLAG_DATA) ? nr_data : nr_tree))++;
out:
	free(r.ext);
	free(r.old);
	return ret;
}
