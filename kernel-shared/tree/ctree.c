/*
 * The copy-on-write B+tree: search, insert, delete, iterate, with node
 * splits on the way down and merges after deletion. A block written in an
 * earlier transaction is never changed: it is copied to fresh space first.
 */
#include <stdlib.h>
#include <string.h>
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/tree/alloc.h"
#include "kernel-shared/tree/transaction.h"

#define ITEM_SZ sizeof(struct mfs_item)
#define PTR_SZ sizeof(struct mfs_key_ptr)

void mfs_init_path(struct mfs_path *path)
{
	memset(path, 0, sizeof(*path));
}

void mfs_release_path(struct mfs_path *path)
{
	int i;

	for (i = 0; i < MFS_MAX_LEVEL; i++) {
		if (path->nodes[i]) {
			struct extent_buffer *eb = path->nodes[i];

			path->nodes[i] = NULL;
			if (--eb->refs == 0)
				free(eb);
		}
		path->slots[i] = 0;
	}
}

/* ---------------- leaf geometry ---------------- */

static u32 leaf_data_end(struct mfs_fs_info *fs, struct extent_buffer *leaf)
{
	u32 n = eb_nritems(leaf);

	return n ? le32_to_cpu(leaf_item(leaf, n - 1)->offset) : leaf_data_size(fs);
}

static u32 leaf_used(struct mfs_fs_info *fs, struct extent_buffer *leaf)
{
	return eb_nritems(leaf) * ITEM_SZ + leaf_data_size(fs) - leaf_data_end(fs, leaf);
}

static u32 leaf_free(struct mfs_fs_info *fs, struct extent_buffer *leaf)
{
	return leaf_data_size(fs) - leaf_used(fs, leaf);
}

static u8 *leaf_data_base(struct extent_buffer *leaf)
{
	return leaf->data + sizeof(struct mfs_header);
}

static void set_nritems(struct extent_buffer *eb, u32 n)
{
	eb_header(eb)->nritems = cpu_to_le32(n);
}

/* Binary search: 0 and the slot if found, else 1 and the insert position. */
static int bin_search(struct extent_buffer *eb, const struct mfs_key *key, int *slot)
{
	int lo = 0, hi = eb_nritems(eb);
	struct mfs_key k;

	while (lo < hi) {
		int mid = (lo + hi) / 2;
		int c;

		eb_item_key(eb, mid, &k);
		c = mfs_comp_keys(&k, key);
		if (c < 0) {
			lo = mid + 1;
		} else if (c > 0) {
			hi = mid;
		} else {
			*slot = mid;
			return 0;
		}
	}
	*slot = lo;
	return 1;
}

/* ---------------- buffers and COW ---------------- */

/* eb joins the running transaction's dirty blocks (a copy-on-write, or a change). */
static void mark_dirty(struct mfs_trans_handle *trans, struct extent_buffer *eb)
{
	struct mfs_transaction *t = trans->fs_info->running;

	if (eb->dirty)
		return;
	eb->dirty = true;
	eb->dirty_next = t->dirty_list;
	t->dirty_list = mfs_eb_get(eb);
	t->nr_dirty++;
}

/* An item was changed in place in eb: the handle has changed the tree. */
void mfs_mark_buffer_dirty(struct mfs_trans_handle *trans, struct extent_buffer *eb)
{
	trans->changed = true;
	mark_dirty(trans, eb);
}

/*
 * A tree block's reference dropped (copy-on-write, a merge, a failed
 * allocation): the tree's contents are the same, the handle has changed
 * nothing.
 */
static int drop_block_ref(struct mfs_trans_handle *trans, u64 bytenr)
{
	bool changed = trans->changed;
	int ret = mfs_free_extent(trans, bytenr, trans->fs_info->nodesize);

	trans->changed = changed;
	return ret;
}

static int alloc_block(struct mfs_trans_handle *trans, struct mfs_root *root,
		       int level, struct extent_buffer **out)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct extent_buffer *eb;
	struct mfs_header *h;
	u64 bytenr;
	int ret;

	ret = mfs_alloc_tree_block(trans, root->objectid, level, &bytenr);
	if (ret)
		return ret;
	eb = mfs_alloc_eb(fs, bytenr);
	if (!eb) {
		drop_block_ref(trans, bytenr);
		return -ENOMEM;
	}
	h = eb_header(eb);
	memcpy(h->fsid, fs->metadata_fsid, MFS_FSID_SIZE);
	h->bytenr = cpu_to_le64(bytenr);
	h->generation = cpu_to_le64(trans->transid);
	h->owner = cpu_to_le64(root->objectid);
	h->level = level;
	mark_dirty(trans, eb);
	*out = eb;
	return 0;
}

static int free_block(struct mfs_trans_handle *trans, struct extent_buffer *eb)
{
	struct mfs_fs_info *fs = trans->fs_info;
	u64 start = eb->start;

	/* a block never written needs no write: drop it from the commit */
	eb->dirty = false;
	mfs_eb_forget(fs, start);
	return drop_block_ref(trans, start);
}

static bool block_is_writable(struct mfs_trans_handle *trans, struct extent_buffer *eb)
{
	return eb->dirty && eb_generation(eb) == trans->transid;
}

/*
 * Make buf writable: a block from an earlier transaction is copied to new
 * space and the parent (or the root) is pointed at the copy. Consumes the
 * caller's reference to buf and returns one to the result.
 */
static int cow_block(struct mfs_trans_handle *trans, struct mfs_root *root,
		     struct extent_buffer *buf, struct extent_buffer *parent,
		     int parent_slot, struct extent_buffer **out)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct extent_buffer *cow;
	struct mfs_header *h;
	int ret;

	if (block_is_writable(trans, buf)) {
		*out = buf;
		return 0;
	}
	ret = alloc_block(trans, root, eb_level(buf), &cow);
	if (ret) {
		mfs_eb_put(fs, buf);
		return ret;
	}
	memcpy(cow->data + MFS_CSUM_FIELD_SIZE, buf->data + MFS_CSUM_FIELD_SIZE,
	       fs->nodesize - MFS_CSUM_FIELD_SIZE);
	h = eb_header(cow);
	h->bytenr = cpu_to_le64(cow->start);
	h->generation = cpu_to_le64(trans->transid);
	h->owner = cpu_to_le64(root->objectid);
	if (!parent) {
		struct extent_buffer *old = root->node;

		root->node = mfs_eb_get(cow);
		mfs_eb_put(fs, old);
		root->dirty = true;
	} else {
		node_ptr(parent, parent_slot)->blockptr = cpu_to_le64(cow->start);
		node_ptr(parent, parent_slot)->generation = cpu_to_le64(trans->transid);
		mark_dirty(trans, parent);
	}
	ret = free_block(trans, buf);
	mfs_eb_put(fs, buf);
	if (ret) {
		mfs_eb_put(fs, cow);
		return ret;
	}
	*out = cow;
	return 0;
}

static int read_child(struct mfs_fs_info *fs, struct mfs_root *root,
		      struct extent_buffer *parent, int slot, struct extent_buffer **out)
{
	struct mfs_tree_check chk;
	struct mfs_key key;

	mfs_child_check(parent, slot, root->objectid, &key, &chk);
	return mfs_read_tree_block(fs, node_blockptr(parent, slot), &chk, out);
}

/* After the first key of nodes[level-1] changed, fix the keys above it. */
static void fixup_low_keys(struct mfs_trans_handle *trans, struct mfs_path *path,
			   int level, const struct mfs_key *key)
{
	int i;

	for (i = level; i < MFS_MAX_LEVEL && path->nodes[i]; i++) {
		int slot = path->slots[i];

		mfs_cpu_key_to_disk(&node_ptr(path->nodes[i], slot)->key, key);
		mark_dirty(trans, path->nodes[i]);
		if (slot != 0)
			break;
	}
}

static void first_key(struct extent_buffer *eb, struct mfs_key *key)
{
	eb_item_key(eb, 0, key);
}

/* Insert a key pointer into nodes[level] at slot (room is guaranteed). */
static void insert_ptr(struct mfs_trans_handle *trans, struct mfs_path *path, int level,
		       int slot, const struct mfs_key *key, u64 bytenr)
{
	struct extent_buffer *node = path->nodes[level];
	u32 n = eb_nritems(node);
	struct mfs_key_ptr *p = node_ptr(node, slot);

	memmove(p + 1, p, (n - slot) * PTR_SZ);
	mfs_cpu_key_to_disk(&p->key, key);
	p->blockptr = cpu_to_le64(bytenr);
	p->generation = cpu_to_le64(trans->transid);
	set_nritems(node, n + 1);
	mark_dirty(trans, node);
}

/* Grow the tree by one level above nodes[level]. */
static int insert_new_root(struct mfs_trans_handle *trans, struct mfs_root *root,
			   struct mfs_path *path, int level)
{
	struct extent_buffer *lower = path->nodes[level], *c;
	struct mfs_key key;
	int ret;

	if (level + 1 >= MFS_MAX_LEVEL)
		return -EOVERFLOW;
	ret = alloc_block(trans, root, level + 1, &c);
	if (ret)
		return ret;
	if (eb_nritems(lower))
		first_key(lower, &key);
	else
		memset(&key, 0, sizeof(key));
	mfs_cpu_key_to_disk(&node_ptr(c, 0)->key, &key);
	node_ptr(c, 0)->blockptr = cpu_to_le64(lower->start);
	node_ptr(c, 0)->generation = cpu_to_le64(trans->transid);
	set_nritems(c, 1);
	mfs_eb_put(trans->fs_info, root->node);
	root->node = mfs_eb_get(c);
	root->dirty = true;
	path->nodes[level + 1] = c;
	path->slots[level + 1] = 0;
	return 0;
}

/* Split nodes[level] (an internal node) in two. */
static int split_node(struct mfs_trans_handle *trans, struct mfs_root *root,
		      struct mfs_path *path, int level)
{
	struct extent_buffer *c = path->nodes[level], *split;
	u32 n = eb_nritems(c), mid = n / 2;
	struct mfs_key key;
	int ret;

	if (!path->nodes[level + 1]) {
		ret = insert_new_root(trans, root, path, level);
		if (ret)
			return ret;
	}
	ret = alloc_block(trans, root, level, &split);
	if (ret)
		return ret;
	memcpy(node_ptr(split, 0), node_ptr(c, mid), (n - mid) * PTR_SZ);
	set_nritems(split, n - mid);
	set_nritems(c, mid);
	mark_dirty(trans, c);
	first_key(split, &key);
	insert_ptr(trans, path, level + 1, path->slots[level + 1] + 1, &key, split->start);
	mfs_eb_put(trans->fs_info, split);
	return 0;
}

/* Bytes an item takes in a leaf, header included. */
static u32 item_bytes(struct extent_buffer *leaf, int i)
{
	return leaf_item_size(leaf, i) + ITEM_SZ;
}

/*
 * Choose where to split a leaf so both halves are as even as possible,
 * counting the item about to be inserted at slot (or the growth of the
 * item at slot when extending). Returns the first item that moves right.
 */
static int leaf_split_point(struct extent_buffer *leaf, int slot, u32 need, bool extend)
{
	int n = eb_nritems(leaf), vn = extend ? n : n + 1, k, best_k = 1, i;
	u64 total = 0, left = 0, best = (u64)-1;
	u32 *sz = calloc(vn, sizeof(*sz));

	if (!sz)
		return n / 2;
	for (i = 0; i < vn; i++) {
		int real;

		if (extend) {
			sz[i] = item_bytes(leaf, i) + (i == slot ? need : 0);
		} else if (i == slot) {
			sz[i] = need;
			continue;
		} else {
			real = i < slot ? i : i - 1;
			sz[i] = item_bytes(leaf, real);
		}
	}
	for (i = 0; i < vn; i++)
		total += sz[i];
	for (k = 1; k < vn; k++) {
		u64 worst;

		left += sz[k - 1];
		worst = max_t(u64, left, total - left);
		if (worst < best) {
			best = worst;
			best_k = k;
		}
	}
	free(sz);
	if (extend)
		return best_k;
	return best_k <= slot ? best_k : best_k - 1;
}

/* Move items [mid, n) of the leaf at nodes[0] into a new right sibling. */
static int split_leaf(struct mfs_trans_handle *trans, struct mfs_root *root,
		      const struct mfs_key *ins_key, struct mfs_path *path,
		      u32 need, bool extend)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct extent_buffer *l = path->nodes[0], *right;
	int n = eb_nritems(l), mid, i, ret;
	u32 data_size = leaf_data_size(fs), copy_start, copy_end, delta;
	struct mfs_key key;

	if (extend && n < 2)
		return -EOVERFLOW;
	if (!path->nodes[1]) {
		ret = insert_new_root(trans, root, path, 0);
		if (ret)
			return ret;
	}
	mid = leaf_split_point(l, path->slots[0], need, extend);
	ret = alloc_block(trans, root, 0, &right);
	if (ret)
		return ret;
	/* data of items [mid, n) sits in [data_end, end of item mid-1's data) */
	copy_end = mid ? le32_to_cpu(leaf_item(l, mid - 1)->offset) : data_size;
	copy_start = leaf_data_end(fs, l);
	delta = data_size - copy_end;
	memcpy(leaf_data_base(right) + copy_start + delta, leaf_data_base(l) + copy_start,
	       copy_end - copy_start);
	memcpy(leaf_item(right, 0), leaf_item(l, mid), (n - mid) * ITEM_SZ);
	for (i = 0; i < n - mid; i++) {
		struct mfs_item *it = leaf_item(right, i);

		it->offset = cpu_to_le32(le32_to_cpu(it->offset) + delta);
	}
	set_nritems(right, n - mid);
	set_nritems(l, mid);
	mark_dirty(trans, l);
	if (n - mid)
		first_key(right, &key);
	else
		key = *ins_key;
	insert_ptr(trans, path, 1, path->slots[1] + 1, &key, right->start);
	mfs_eb_put(fs, right);
	return 0;
}

int mfs_search_slot(struct mfs_trans_handle *trans, struct mfs_root *root,
		    const struct mfs_key *key, struct mfs_path *path,
		    int ins_len, int cow)
{
	struct mfs_fs_info *fs;
	struct extent_buffer *b;
	int ret, slot, level, restarts = 0;

	/* a tree whose root could not be read (MFS_OPEN_PARTIAL) has nothing to find */
	if (!root)
		return -EUCLEAN;
	fs = root->fs_info;
	if (cow && !trans)
		return -EINVAL;
	if (ins_len > 0 && (u32)ins_len > leaf_data_size(fs) / 2)
		return -EOVERFLOW;
again:
	if (restarts++ > 8) {
		mfs_release_path(path);
		return -EOVERFLOW;
	}
	mfs_release_path(path);
	b = mfs_eb_get(root->node);
	if (cow) {
		ret = cow_block(trans, root, b, NULL, 0, &b);
		if (ret)
			return ret;
	}
	for (;;) {
		level = eb_level(b);
		path->nodes[level] = b;
		ret = bin_search(b, key, &slot);
		if (level == 0) {
			path->slots[0] = slot;
			if (cow && ins_len > 0) {
				bool extend = ret == 0;
				u32 room = leaf_free(fs, b);

				if (room < (u32)ins_len) {
					ret = split_leaf(trans, root, key, path, ins_len, extend);
					if (ret) {
						mfs_release_path(path);
						return ret;
					}
					goto again;
				}
			}
			return ret;
		}
		if (ret && slot > 0)
			slot--;
		path->slots[level] = slot;
		if (cow && ins_len > 0 && eb_nritems(b) >= node_max_ptrs(fs) - 2) {
			ret = split_node(trans, root, path, level);
			if (ret) {
				mfs_release_path(path);
				return ret;
			}
			goto again;
		}
		ret = read_child(fs, root, b, slot, &b);
		if (ret) {
			mfs_release_path(path);
			return ret;
		}
		if (cow) {
			ret = cow_block(trans, root, b, path->nodes[level], slot, &b);
			if (ret) {
				mfs_release_path(path);
				return ret;
			}
		}
	}
}

/* Open a gap for a new item at path's slot in its leaf (room is there). */
static void setup_item(struct mfs_trans_handle *trans, struct mfs_path *path,
		       const struct mfs_key *key, u32 size)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct extent_buffer *leaf = path->nodes[0];
	int slot = path->slots[0], n = eb_nritems(leaf), i;
	u32 data_end = leaf_data_end(fs, leaf);
	u32 old_data = slot ? le32_to_cpu(leaf_item(leaf, slot - 1)->offset) : leaf_data_size(fs);
	u8 *base = leaf_data_base(leaf);
	struct mfs_item *it;

	memmove(base + data_end - size, base + data_end, old_data - data_end);
	for (i = slot; i < n; i++) {
		it = leaf_item(leaf, i);
		it->offset = cpu_to_le32(le32_to_cpu(it->offset) - size);
	}
	memmove(leaf_item(leaf, slot + 1), leaf_item(leaf, slot), (n - slot) * ITEM_SZ);
	it = leaf_item(leaf, slot);
	mfs_cpu_key_to_disk(&it->key, key);
	it->offset = cpu_to_le32(old_data - size);
	it->size = cpu_to_le32(size);
	set_nritems(leaf, n + 1);
	mark_dirty(trans, leaf);
	if (slot == 0)
		fixup_low_keys(trans, path, 1, key);
}

int mfs_insert_empty_item(struct mfs_trans_handle *trans, struct mfs_root *root,
			  struct mfs_path *path, const struct mfs_key *key, u32 size)
{
	int ret = mfs_search_slot(trans, root, key, path, size + ITEM_SZ, 1);

	if (ret == 0)
		return -EEXIST;
	if (ret < 0)
		return ret;
	trans->changed = true;
	setup_item(trans, path, key, size);
	memset(leaf_item_data(path->nodes[0], path->slots[0]), 0, size);
	return 0;
}

int mfs_insert_item(struct mfs_trans_handle *trans, struct mfs_root *root,
		    const struct mfs_key *key, const void *data, u32 size)
{
	struct mfs_path path;
	int ret;

	mfs_init_path(&path);
	ret = mfs_insert_empty_item(trans, root, &path, key, size);
	if (ret == 0 && size)
		memcpy(leaf_item_data(path.nodes[0], path.slots[0]), data, size);
	mfs_release_path(&path);
	return ret;
}

/*
 * The item at key set to data: overwritten in place when it has size
 * bytes, else (re)inserted. For the single items of long operations'
 * persistent state.
 */
int mfs_write_item(struct mfs_trans_handle *trans, struct mfs_root *root,
		   const struct mfs_key *key, const void *data, u32 size)
{
	struct mfs_path path;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_slot(trans, root, key, &path, 0, 1);
	if (ret == 0 && leaf_item_size(path.nodes[0], path.slots[0]) == size) {
		memcpy(leaf_item_data(path.nodes[0], path.slots[0]), data, size);
		mfs_mark_buffer_dirty(trans, path.nodes[0]);
		mfs_release_path(&path);
		return 0;
	}
	mfs_release_path(&path);
	if (ret == 0) {
		ret = mfs_search_slot(trans, root, key, &path, -1, 1);
		if (ret == 0)
			ret = mfs_del_item(trans, root, &path);
		mfs_release_path(&path);
	}
	if (ret < 0)
		return ret;
	return mfs_insert_item(trans, root, key, data, size);
}

/* ---------------- deletion and merging ---------------- */

static int del_ptr(struct mfs_trans_handle *trans, struct mfs_root *root,
		   struct mfs_path *path, int level, int slot);

/* Append all items of src (right neighbour) to dst. */
static void leaf_append(struct mfs_fs_info *fs, struct extent_buffer *dst,
			struct extent_buffer *src)
{
	u32 dn = eb_nritems(dst), sn = eb_nritems(src), i;
	u32 dend = leaf_data_end(fs, dst), send = leaf_data_end(fs, src);
	u32 sbytes = leaf_data_size(fs) - send;
	u32 shift = leaf_data_size(fs) - dend;

	memcpy(leaf_data_base(dst) + dend - sbytes, leaf_data_base(src) + send, sbytes);
	memcpy(leaf_item(dst, dn), leaf_item(src, 0), sn * ITEM_SZ);
	for (i = dn; i < dn + sn; i++) {
		struct mfs_item *it = leaf_item(dst, i);

		it->offset = cpu_to_le32(le32_to_cpu(it->offset) - shift);
	}
	set_nritems(dst, dn + sn);
}

static void node_append(struct extent_buffer *dst, struct extent_buffer *src)
{
	u32 dn = eb_nritems(dst), sn = eb_nritems(src);

	memcpy(node_ptr(dst, dn), node_ptr(src, 0), sn * PTR_SZ);
	set_nritems(dst, dn + sn);
}

static u32 eb_used(struct mfs_fs_info *fs, struct extent_buffer *eb)
{
	return eb_level(eb) ? eb_nritems(eb) * PTR_SZ : leaf_used(fs, eb);
}

/*
 * nodes[level] got small: fold it into a neighbour (or the right neighbour
 * into it) when both fit in one block.
 */
static int try_merge(struct mfs_trans_handle *trans, struct mfs_root *root,
		     struct mfs_path *path, int level)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct extent_buffer *node = path->nodes[level], *parent = path->nodes[level + 1];
	struct extent_buffer *sib, *dst, *src;
	int pslot = path->slots[level + 1], sslot, ret;
	u32 cap = leaf_data_size(fs);

	if (!parent || eb_used(fs, node) >= cap / 4)
		return 0;
	if (pslot + 1 < (int)eb_nritems(parent))
		sslot = pslot + 1;
	else if (pslot > 0)
		sslot = pslot - 1;
	else
		return 0;
	ret = read_child(fs, root, parent, sslot, &sib);
	if (ret)
		return ret;
	if (eb_used(fs, node) + eb_used(fs, sib) > (level ? node_max_ptrs(fs) * PTR_SZ : cap)) {
		mfs_eb_put(fs, sib);
		return 0;
	}
	ret = cow_block(trans, root, sib, parent, sslot, &sib);
	if (ret)
		return ret;
	dst = sslot > pslot ? node : sib;
	src = sslot > pslot ? sib : node;
	if (level)
		node_append(dst, src);
	else
		leaf_append(fs, dst, src);
	mark_dirty(trans, dst);
	set_nritems(src, 0);
	ret = free_block(trans, src);
	mfs_eb_put(fs, sib);
	if (ret)
		return ret;
	/* node stays referenced by the path; the emptied block is gone */
	return del_ptr(trans, root, path, level + 1, sslot > pslot ? sslot : pslot);
}

/* Replace a root that has a single child by that child. */
static int collapse_root(struct mfs_trans_handle *trans, struct mfs_root *root)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct extent_buffer *old = root->node, *child;
	int ret;

	while (eb_level(root->node) > 0 && eb_nritems(root->node) == 1) {
		old = root->node;
		ret = read_child(fs, root, old, 0, &child);
		if (ret)
			return ret;
		root->node = child;
		root->dirty = true;
		ret = free_block(trans, old);
		mfs_eb_put(fs, old);
		if (ret)
			return ret;
	}
	return 0;
}

static int del_ptr(struct mfs_trans_handle *trans, struct mfs_root *root,
		   struct mfs_path *path, int level, int slot)
{
	struct extent_buffer *node = path->nodes[level];
	u32 n = eb_nritems(node);
	struct mfs_key key;

	memmove(node_ptr(node, slot), node_ptr(node, slot + 1), (n - slot - 1) * PTR_SZ);
	set_nritems(node, n - 1);
	mark_dirty(trans, node);
	if (n - 1 == 0) {
		/* only reachable for a root whose last child went away */
		if (!path->nodes[level + 1]) {
			struct extent_buffer *leaf;
			int ret = alloc_block(trans, root, 0, &leaf);

			if (ret)
				return ret;
			mfs_eb_put(trans->fs_info, root->node);
			root->node = leaf;
			root->dirty = true;
			return free_block(trans, node);
		}
		return -EUCLEAN;
	}
	if (slot == 0) {
		first_key(node, &key);
		fixup_low_keys(trans, path, level + 1, &key);
	}
	if (!path->nodes[level + 1])
		return collapse_root(trans, root);
	return try_merge(trans, root, path, level);
}

/*
 * Delete the item at path. The path is released afterwards because
 * merging may have moved its nodes.
 */
int mfs_del_item(struct mfs_trans_handle *trans, struct mfs_root *root,
		 struct mfs_path *path)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct extent_buffer *leaf = path->nodes[0];
	int slot = path->slots[0], n = eb_nritems(leaf), i, ret = 0;
	u32 dsize = leaf_item_size(leaf, slot);
	u32 data_end = leaf_data_end(fs, leaf);
	u32 item_off = le32_to_cpu(leaf_item(leaf, slot)->offset);
	u8 *base = leaf_data_base(leaf);
	struct mfs_key key;

	trans->changed = true;
	memmove(base + data_end + dsize, base + data_end, item_off - data_end);
	for (i = slot + 1; i < n; i++) {
		struct mfs_item *it = leaf_item(leaf, i);

		it->offset = cpu_to_le32(le32_to_cpu(it->offset) + dsize);
	}
	memmove(leaf_item(leaf, slot), leaf_item(leaf, slot + 1), (n - slot - 1) * ITEM_SZ);
	set_nritems(leaf, n - 1);
	mark_dirty(trans, leaf);

	if (n - 1 == 0) {
		if (path->nodes[1]) {
			struct extent_buffer *l = path->nodes[0];

			ret = free_block(trans, l);
			if (!ret)
				ret = del_ptr(trans, root, path, 1, path->slots[1]);
		}
	} else {
		if (slot == 0) {
			first_key(leaf, &key);
			fixup_low_keys(trans, path, 1, &key);
		}
		ret = try_merge(trans, root, path, 0);
	}
	mfs_release_path(path);
	return ret;
}

int mfs_truncate_item(struct mfs_trans_handle *trans, struct mfs_path *path, u32 new_size)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct extent_buffer *leaf = path->nodes[0];
	int slot = path->slots[0], n = eb_nritems(leaf), i;
	u32 old_size = leaf_item_size(leaf, slot), shrink, data_end;
	u32 item_off = le32_to_cpu(leaf_item(leaf, slot)->offset);
	u8 *base = leaf_data_base(leaf);

	trans->changed = true;
	if (new_size > old_size)
		return -EINVAL;
	shrink = old_size - new_size;
	if (!shrink)
		return 0;
	data_end = leaf_data_end(fs, leaf);
	/* keep the head of the item: move it and everything below up */
	memmove(base + data_end + shrink, base + data_end, item_off + new_size - data_end);
	for (i = slot; i < n; i++) {
		struct mfs_item *it = leaf_item(leaf, i);

		it->offset = cpu_to_le32(le32_to_cpu(it->offset) + shrink);
	}
	leaf_item(leaf, slot)->size = cpu_to_le32(new_size);
	mark_dirty(trans, leaf);
	return 0;
}

/* Grow the item at path by extra bytes at its end; the path must come
 * from mfs_search_slot with ins_len >= extra. */
int mfs_extend_item(struct mfs_trans_handle *trans, struct mfs_root *root,
		    struct mfs_path *path, u32 extra)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct extent_buffer *leaf = path->nodes[0];
	int slot = path->slots[0], n = eb_nritems(leaf), i;
	u32 old_size = leaf_item_size(leaf, slot), data_end;
	u32 item_off = le32_to_cpu(leaf_item(leaf, slot)->offset);
	u8 *base = leaf_data_base(leaf);

	trans->changed = true;
	(void)root;
	if (leaf_free(fs, leaf) < extra)
		return -ENOSPC;
	data_end = leaf_data_end(fs, leaf);
	memmove(base + data_end - extra, base + data_end, item_off + old_size - data_end);
	for (i = slot; i < n; i++) {
		struct mfs_item *it = leaf_item(leaf, i);

		it->offset = cpu_to_le32(le32_to_cpu(it->offset) - extra);
	}
	leaf_item(leaf, slot)->size = cpu_to_le32(old_size + extra);
	memset(base + le32_to_cpu(leaf_item(leaf, slot)->offset) + old_size, 0, extra);
	mark_dirty(trans, leaf);
	return 0;
}

void mfs_set_item_key_safe(struct mfs_trans_handle *trans, struct mfs_path *path,
			   const struct mfs_key *key)
{
	mfs_cpu_key_to_disk(&leaf_item(path->nodes[0], path->slots[0])->key, key);
	mfs_mark_buffer_dirty(trans, path->nodes[0]);
	if (path->slots[0] == 0)
		fixup_low_keys(trans, path, 1, key);
}

/* ---------------- iteration ---------------- */

/* Move path to the first item of the next leaf; 1 when there is none. */
static int next_leaf(struct mfs_root *root, struct mfs_path *path)
{
	struct mfs_fs_info *fs = root->fs_info;
	int level, ret;

	for (level = 1; level < MFS_MAX_LEVEL; level++) {
		if (!path->nodes[level])
			return 1;
		if (path->slots[level] + 1 < (int)eb_nritems(path->nodes[level]))
			break;
	}
	if (level == MFS_MAX_LEVEL)
		return 1;
	path->slots[level]++;
	while (level > 0) {
		struct extent_buffer *child;

		ret = read_child(fs, root, path->nodes[level], path->slots[level], &child);
		if (ret)
			return ret;
		level--;
		mfs_eb_put(fs, path->nodes[level]);
		path->nodes[level] = child;
		path->slots[level] = 0;
	}
	return 0;
}

int mfs_next_item(struct mfs_root *root, struct mfs_path *path)
{
	int ret;

	path->slots[0]++;
	while (path->slots[0] >= (int)eb_nritems(path->nodes[0])) {
		ret = next_leaf(root, path);
		if (ret)
			return ret;
	}
	return 0;
}

static int prev_leaf(struct mfs_root *root, struct mfs_path *path)
{
	struct mfs_fs_info *fs = root->fs_info;
	int level, ret;

	for (level = 1; level < MFS_MAX_LEVEL; level++) {
		if (!path->nodes[level])
			return 1;
		if (path->slots[level] > 0)
			break;
	}
	if (level == MFS_MAX_LEVEL)
		return 1;
	path->slots[level]--;
	while (level > 0) {
		struct extent_buffer *child;

		ret = read_child(fs, root, path->nodes[level], path->slots[level], &child);
		if (ret)
			return ret;
		level--;
		mfs_eb_put(fs, path->nodes[level]);
		path->nodes[level] = child;
		path->slots[level] = eb_nritems(child) - (level ? 1 : 0);
	}
	return 0;
}

int mfs_prev_item(struct mfs_root *root, struct mfs_path *path)
{
	int ret;

	while (path->slots[0] == 0) {
		ret = prev_leaf(root, path);
		if (ret)
			return ret;
		if (eb_nritems(path->nodes[0]))
			break;
	}
	path->slots[0]--;
	return 0;
}

int mfs_search_forward(struct mfs_root *root, const struct mfs_key *key,
		       struct mfs_path *path)
{
	int ret = mfs_search_slot(NULL, root, key, path, 0, 0);

	if (ret < 0)
		return ret;
	while (path->slots[0] >= (int)eb_nritems(path->nodes[0])) {
		ret = next_leaf(root, path);
		if (ret)
			return ret;
	}
	return 0;
}

int mfs_create_tree(struct mfs_trans_handle *trans, u64 objectid, struct mfs_root **out)
{
	struct mfs_root *root = calloc(1, sizeof(*root));
	int ret;

	trans->changed = true;
	if (!root)
		return -ENOMEM;
	root->objectid = objectid;
	root->fs_info = trans->fs_info;
	ret = alloc_block(trans, root, 0, &root->node);
	if (ret) {
		free(root);
		return ret;
	}
	root->dirty = true;
	*out = root;
	return 0;
}
