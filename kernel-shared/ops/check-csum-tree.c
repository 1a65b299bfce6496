/*
 * mfs check --init-csum-tree: the data checksum tree rebuilt from scratch.
 * Every csum item goes, and each data extent a regular file extent points
 * at gets one again, computed from its data as a copy reads: with no
 * checksum left to tell a good copy from a bad one, the first copy that
 * reads whole is taken, and the copies that differ from it are said.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernel-shared/ops/check.h"
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/tree/transaction.h"
#include "kernel-shared/block/csum.h"
#include "kernel-shared/fs/inode-internal.h"
#include "kernel-shared/volumes/volumes.h"

struct csum_rebuild {
	struct mfs_fs_info *fs;
	void (*say)(void *arg, const char *msg);
	void *arg;
	struct csum_extent {
		u64 bytenr, len;
		u64 ino, offset;	/* the first file extent naming it */
	} *extents;
	u64 nr, max;
	u8 *data, *copy, *sums;	/* one extent's worth each */
};

static void say(const struct csum_rebuild *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void say(const struct csum_rebuild *r, const char *fmt, ...)
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

/*
 * A regular file extent's data extent, if it is one a csum item can be
 * made for: sector aligned, inside a data chunk, no longer than a csum
 * item covers. The others are said and left out (the check reports them).
 */
static int note_file_extent(struct csum_rebuild *r, const struct mfs_key *key,
			    struct extent_buffer *leaf, int slot)
{
	const struct mfs_file_extent_item *fi = leaf_item_data(leaf, slot);
	struct csum_extent *e;
	u64 bytenr, len;
	int ret;

	if (leaf_item_size(leaf, slot) != sizeof(*fi) || fi->type != MFS_FILE_EXTENT_REG)
		return 0;	/* inline, preallocated (never written) or malformed */
	bytenr = le64_to_cpu(fi->disk_bytenr);
	len = le64_to_cpu(fi->disk_num_bytes);
	if (!bytenr)
		return 0;	/* a hole */
	if (len % MFS_SECTOR || len > data_max_extent_size(r->fs) ||
	    !mfs_check_in_data_chunk(r->fs, bytenr, len)) {
		say(r, "inode %llu file extent at %llu: data extent %llu length %llu left without checksums: it is not a data extent a csum item can cover",
		    (unsigned long long)key->objectid, (unsigned long long)key->offset,
		    (unsigned long long)bytenr, (unsigned long long)len);
		return 0;
	}
	ret = MFS_ARRAY_RESERVE(r->extents, r->nr, r->max, 1024);
	if (ret)
		return ret;
	e = &r->extents[r->nr++];
	*e = (struct csum_extent){ bytenr, len, key->objectid, key->offset };
	return 0;
}

static int cmp_extent(const void *a, const void *b)
{
	const struct csum_extent *x = a, *y = b;

	if (x->bytenr != y->bytenr)
		return x->bytenr < y->bytenr ? -1 : 1;
	return x->len < y->len ? -1 : x->len > y->len;
}

/*
 * Each data extent once, in address order. File extents that disagree on
 * an extent's length leave no sound length to checksum: -EUCLEAN.
 */
static int sort_extents(struct csum_rebuild *r)
{
	u64 i, n = 0;

	if (r->nr)
		qsort(r->extents, r->nr, sizeof(*r->extents), cmp_extent);
	for (i = 0; i < r->nr; i++) {
		const struct csum_extent *e = &r->extents[i];

		if (n && r->extents[n - 1].bytenr == e->bytenr) {
			if (r->extents[n - 1].len == e->len)
				continue;
			say(r, "data extent %llu: inode %llu file extent at %llu says length %llu, inode %llu file extent at %llu says %llu",
			    (unsigned long long)e->bytenr,
			    (unsigned long long)r->extents[n - 1].ino,
			    (unsigned long long)r->extents[n - 1].offset,
			    (unsigned long long)r->extents[n - 1].len,
			    (unsigned long long)e->ino, (unsigned long long)e->offset,
			    (unsigned long long)e->len);
			return -EUCLEAN;
		}
		r->extents[n++] = *e;
	}
	r->nr = n;
	return 0;
}

int mfs_check_for_each_file_extent(struct mfs_fs_info *fs,
				   int (*fn)(void *arg, const struct mfs_key *key,
					     struct extent_buffer *leaf, int slot),
				   void *arg)
{
	struct mfs_key key = { 0, 0, 0 };
	struct mfs_root *root = fs->fs_root;
	struct mfs_path path;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_forward(root, &key, &path);
	while (ret == 0) {
		leaf_item_key(path.nodes[0], path.slots[0], &key);
		if (key.type == MFS_EXTENT_DATA_KEY && key.objectid != MFS_ORPHAN_OBJECTID) {
			ret = fn(arg, &key, path.nodes[0], path.slots[0]);
			if (ret)
				break;
		}
		ret = mfs_next_item(root, &path);
	}
	mfs_release_path(&path);
	return ret < 0 ? ret : 0;
}

static int note_extent_cb(void *arg, const struct mfs_key *key, struct extent_buffer *leaf,
			  int slot)
{
	return note_file_extent(arg, key, leaf, slot);
}

/* The data extents the fs tree's regular file extents point at. */
static int collect_extents(struct csum_rebuild *r)
{
	int ret = mfs_check_for_each_file_extent(r->fs, note_extent_cb, r);

	if (ret < 0)
		return ret;
	return sort_extents(r);
}

/* Every item of the csum tree deleted, the first each time. */
static int drop_csum_items(struct mfs_trans_handle *trans)
{
	struct mfs_root *root = trans->fs_info->csum_root;
	struct mfs_path path;
	int ret;

	for (;;) {
		struct mfs_key key = { 0, 0, 0 };

		mfs_init_path(&path);
		ret = mfs_search_slot(trans, root, &key, &path, -1, 1);
		if (ret >= 0 && path.slots[0] >= (int)eb_nritems(path.nodes[0]))
			ret = 1;	/* empty: only a root leaf can be */
		else if (ret >= 0)
			ret = mfs_del_item(trans, root, &path);
		mfs_release_path(&path);
		if (ret)
			return ret > 0 ? 0 : ret;
	}
}

/*
 * The extent's data into r->data from the first copy that reads whole
 * (else piece by piece from any copy, as a read does); then each other
 * copy compared with it. -EIO: some piece has no copy that reads.
 */
static int read_extent(struct csum_rebuild *r, const struct csum_extent *e)
{
	struct mfs_chunk_map *map = mfs_find_chunk(r->fs, e->bytenr);
	int copies = map ? mfs_num_copies(map) : 1, first = 0, m, ret;

	for (m = 1; m <= copies && !first; m++)
		if (!mfs_read_logical(r->fs, e->bytenr, r->data, e->len, m))
			first = m;
	if (!first) {
		ret = mfs_read_logical(r->fs, e->bytenr, r->data, e->len, 0);
		if (ret) {
			say(r, "data extent %llu length %llu (inode %llu file extent at %llu): no copy can be read: %s",
			    (unsigned long long)e->bytenr, (unsigned long long)e->len,
			    (unsigned long long)e->ino, (unsigned long long)e->offset,
			    strerror(-ret));
			return ret;
		}
	}
	for (m = 1; m <= copies; m++) {
		if (m == first)
			continue;
		ret = mfs_read_logical(r->fs, e->bytenr, r->copy, e->len, m);
		if (ret || memcmp(r->copy, r->data, e->len))
			say(r, "data extent %llu length %llu (inode %llu file extent at %llu): copy %d %s copy %d, whose data the checksums are made from",
			    (unsigned long long)e->bytenr, (unsigned long long)e->len,
			    (unsigned long long)e->ino, (unsigned long long)e->offset, m,
			    ret ? "cannot be read, unlike" : "differs from", first);
	}
	return 0;
}

static int csum_extent(struct mfs_trans_handle *trans, struct csum_rebuild *r,
		       const struct csum_extent *e)
{
	u32 csize = r->fs->csum_size;
	u64 s;
	int ret = read_extent(r, e);

	if (ret)
		return ret;
	for (s = 0; s < e->len / MFS_SECTOR; s++) {
		u8 sum[MFS_CSUM_SIZE];

		mfs_csum_compute(r->fs->csum_type, r->data + s * MFS_SECTOR, MFS_SECTOR, sum);
		memcpy(r->sums + s * csize, sum, csize);
	}
	return mfs_insert_data_csums(trans, e->bytenr, r->sums, e->len);
}

static int rebuild(struct mfs_trans_handle *trans, struct csum_rebuild *r, u64 *bytes)
{
	u64 i;
	int ret = drop_csum_items(trans);

	for (i = 0; i < r->nr && !ret; i++) {
		ret = csum_extent(trans, r, &r->extents[i]);
		*bytes += r->extents[i].len;
	}
	return ret;
}

int mfs_check_init_csum_tree(struct mfs_fs_info *fs, void (*say_fn)(void *arg, const char *msg),
			     void *arg, u64 *nr_extents, u64 *nr_bytes)
{
	struct csum_rebuild r = { .fs = fs, .say = say_fn, .arg = arg };
	u64 max = data_max_extent_size(fs);
	struct mfs_trans_handle *trans;
	int ret;

	*nr_extents = *nr_bytes = 0;
	if (!fs->fs_root || !fs->csum_root)
		return -EUCLEAN;
	ret = collect_extents(&r);
	if (ret)
		goto out;
	r.data = malloc(max);
	r.copy = malloc(max);
	r.sums = malloc(max / MFS_SECTOR * fs->csum_size);
	ret = -ENOMEM;
	if (!r.data || !r.copy || !r.sums)
		goto out;
	ret = mfs_start_transaction(fs, &trans);
	if (ret)
		goto out;
	/* all or nothing: a half-made csum tree would fail reads of what it lacks */
	ret = rebuild(trans, &r, nr_bytes);
	if (ret) {
		mfs_end_transaction(trans);
		mfs_abort_transaction(fs);
		*nr_bytes = 0;
		goto out;
	}
	ret = mfs_commit_transaction(trans);
	if (!ret)
		*nr_extents = r.nr;
out:
	free(r.extents);
	free(r.data);
	free(r.copy);
	free(r.sums);
	return ret;
}
