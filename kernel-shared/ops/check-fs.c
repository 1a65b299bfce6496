/*
 * The checker's fs tree phase (inodes, link counts, orphans, directory
 * entries, file extents against the extent tree and the csum tree). The
 * optional phase that verifies every copy of every data sector is
 * check-data.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/ops/check.h"
#include "kernel-shared/block/csum.h"
#include "kernel-shared/fs/inode-internal.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/format/items.h"

#define problem mfs_check_problem

/* ---------------- what the walk learns about each inode ---------------- */

struct ino_rec {
	u64 ino;
	u64 size;
	u64 nbytes;
	u64 dir_index_next;
	u64 name_bytes;		/* dirs: name lengths of its DIR_INDEX entries */
	u64 extent_bytes;	/* num_bytes of its REG/PREALLOC file extents */
	u64 parent;		/* dirs: the directory of the first entry naming it */
	u32 mode;
	u32 nlink;
	u32 links;		/* DIR_INDEX entries naming it */
	u32 subdirs;		/* dirs: its entries naming directories */
	bool has_item;		/* else only an orphan item names it */
	bool bad;		/* item unusable, already reported: no more checks */
	bool orphan;
	u8 reach;		/* dirs: REACH_* */
};

/* Whether a directory's chain of parents ends at the root. */
enum { REACH_UNKNOWN, REACH_WALKING, REACH_ROOT, REACH_NOT };

/*
 * Records in ino order of creation (the fs tree walk creates them in key
 * order, so recs stays sorted); hash: open addressing, index+1, 0 = empty.
 */
struct ino_table {
	struct ino_rec *recs;
	u64 nr, max;
	u64 *hash;
	u64 hash_size;
};

static u64 ino_slot(u64 ino, u64 size)
{
	return (ino * 0x9e3779b97f4a7c15ULL >> 17) & (size - 1);
}

static int ino_hash_rebuild(struct ino_table *t, u64 size)
{
	u64 *h = calloc(size, sizeof(*h));
	u64 i, s;

	if (!h)
		return -ENOMEM;
	for (i = 0; i < t->nr; i++) {
		for (s = ino_slot(t->recs[i].ino, size); h[s]; s = (s + 1) & (size - 1))
			;
		h[s] = i + 1;
	}
	free(t->hash);
	t->hash = h;
	t->hash_size = size;
	return 0;
}

static struct ino_rec *ino_find(struct ino_table *t, u64 ino)
{
	u64 s;

	if (!t->hash_size)
		return NULL;
	for (s = ino_slot(ino, t->hash_size); t->hash[s]; s = (s + 1) & (t->hash_size - 1))
		if (t->recs[t->hash[s] - 1].ino == ino)
			return &t->recs[t->hash[s] - 1];
	return NULL;
}

/* The record of ino, created empty if absent. Invalidates earlier pointers. */
static struct ino_rec *ino_get(struct ino_table *t, u64 ino)
{
	struct ino_rec *r = ino_find(t, ino);
	u64 s;

	if (r)
		return r;
	if (MFS_ARRAY_RESERVE(t->recs, t->nr, t->max, 1024))
		return NULL;
	if ((t->nr + 1) * 2 > t->hash_size &&
	    ino_hash_rebuild(t, t->hash_size ? t->hash_size * 2 : 2048))
		return NULL;
	r = &t->recs[t->nr];
	memset(r, 0, sizeof(*r));
	r->ino = ino;
	for (s = ino_slot(ino, t->hash_size); t->hash[s]; s = (s + 1) & (t->hash_size - 1))
		;
	t->hash[s] = ++t->nr;
	return r;
}

static int cmp_ino_rec(const void *a, const void *b)
{
	const struct ino_rec *x = a, *y = b;

	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* ---------------- references to data extents ---------------- */

struct data_ref {
	u64 bytenr;
	u64 len;		/* disk_num_bytes */
	u64 ino;
	u64 offset;		/* file offset of the file extent item */
	bool prealloc;
};

/* A data extent item and what points at it, for the csum checks. */
struct data_extent {
	u64 bytenr;
	u64 len;
	u64 nreg;		/* REG file extent items pointing at it */
	u64 ino, offset;	/* the first of them, to name it */
	bool has_csum;
};

struct fs_check {
	struct mfs_fs_info *fs;
	struct mfs_check_ctl *ctl;
	struct ino_table inodes;
	struct data_ref *refs;
	u64 nr_refs, max_refs;
	struct data_extent *extents;
	u64 nr_extents, max_extents;
	int err;		/* -ENOMEM: the walk stops */
};

/* ---------------- names in messages ---------------- */

/* A directory entry name, quoted, with unprintable bytes escaped. */
static const char *quote_name(const u8 *name, u32 len, char *buf, size_t size)
{
	size_t o = 0;
	u32 i;

	buf[o++] = '\'';
	for (i = 0; i < len && o + 6 < size; i++) {
		if (name[i] >= 0x20 && name[i] < 0x7f && name[i] != '\\')
			buf[o++] = name[i];
		else
			o += snprintf(buf + o, size - o, "\\x%02x", name[i]);
	}
	buf[o++] = '\'';
	buf[o] = 0;
	return buf;
}

#define QNAME_SIZE (4 * MFS_NAME_LEN + 8)

static const char *mode_kind(u32 mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "regular file";
	case S_IFDIR: return "directory";
	case S_IFLNK: return "symlink";
	case S_IFCHR: return "character device";
	case S_IFBLK: return "block device";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "socket";
	}
	return "inode of unknown type";
}

/* ---------------- pass 1: inode and orphan items ---------------- */

static void note_inode_item(struct fs_check *c, const struct mfs_key *key,
			    struct extent_buffer *leaf, int slot)
{
	const struct mfs_inode_item *ii = leaf_item_data(leaf, slot);
	struct ino_rec *r = ino_get(&c->inodes, key->objectid);

	if (!r) {
		c->err = -ENOMEM;
		return;
	}
	r->has_item = true;
	if (key->offset != 0 || leaf_item_size(leaf, slot) != sizeof(*ii)) {
		problem(c->ctl, "inode %llu: inode item (offset %llu, %u bytes) is malformed",
			(unsigned long long)key->objectid, (unsigned long long)key->offset,
			leaf_item_size(leaf, slot));
		r->bad = true;
		return;
	}
	r->size = le64_to_cpu(ii->size);
	r->nbytes = le64_to_cpu(ii->nbytes);
	r->dir_index_next = le64_to_cpu(ii->dir_index_next);
	r->mode = le32_to_cpu(ii->mode);
	r->nlink = le32_to_cpu(ii->nlink);
	if (mfs_mode_to_ft(r->mode) == MFS_FT_UNKNOWN) {
		problem(c->ctl, "inode %llu has invalid mode 0%o",
			(unsigned long long)key->objectid, r->mode);
		r->bad = true;
	}
}

static void note_orphan_item(struct fs_check *c, const struct mfs_key *key,
			     struct extent_buffer *leaf, int slot)
{
	struct ino_rec *r;

	if (key->type != MFS_ORPHAN_ITEM_KEY) {
		problem(c->ctl, "fs tree: unexpected item type %u at (ORPHAN %u %llu)",
			key->type, key->type, (unsigned long long)key->offset);
		return;
	}
	if (leaf_item_size(leaf, slot))
		problem(c->ctl, "orphan item for inode %llu has %u bytes, expected 0",
			(unsigned long long)key->offset, leaf_item_size(leaf, slot));
	r = ino_get(&c->inodes, key->offset);
	if (r)
		r->orphan = true;
	else
		c->err = -ENOMEM;
}

static int walk_inode_items(struct fs_check *c)
{
	struct mfs_key key = { 0, 0, 0 };
	struct mfs_root *root = c->fs->fs_root;
	struct mfs_path path;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_forward(root, &key, &path);
	while (ret == 0 && !c->err) {
		leaf_item_key(path.nodes[0], path.slots[0], &key);
		if (key.objectid == MFS_ORPHAN_OBJECTID)
			note_orphan_item(c, &key, path.nodes[0], path.slots[0]);
		else if (key.type == MFS_INODE_ITEM_KEY)
			note_inode_item(c, &key, path.nodes[0], path.slots[0]);
		ret = mfs_next_item(root, &path);
	}
	if (c->err)
		ret = c->err;
	mfs_release_path(&path);
	return ret < 0 ? ret : 0;
}

/* ---------------- pass 2: every item, one inode at a time ---------------- */

/* A DIR_ITEM entry waiting for its DIR_INDEX twin. */
struct dir_entry_rec {
	u64 index;
	u64 child;
	u64 transid;
	u32 name_off;		/* into names */
	u16 name_len;
	u8 type;
	bool matched;
	bool hash_ok;		/* under its name's hash */
};

/* State of the inode whose items the walk is in. */
struct cur_inode {
	u64 ino;
	struct ino_rec *rec;	/* NULL: no usable inode item */
	bool reported;		/* "has directory entries" said once already */
	/* directories */
	struct dir_entry_rec *entries;
	u64 nr_entries, max_entries;
	bool entries_sorted;
	u8 *names;
	u64 names_len, names_max;
	/* file extents */
	u64 extent_end;		/* end of the previous file extent */
	bool has_inline;
	u64 inline_len;
};

static int cmp_entry_index(const void *a, const void *b)
{
	const struct dir_entry_rec *x = a, *y = b;

	return x->index < y->index ? -1 : x->index > y->index;
}

static int add_dir_entry_rec(struct cur_inode *cur, const struct mfs_dir_item *di)
{
	u16 len = le16_to_cpu(di->name_len);
	struct dir_entry_rec *e;
	int ret;

	ret = MFS_ARRAY_RESERVE(cur->entries, cur->nr_entries, cur->max_entries, 256);
	if (ret)
		return ret;
	while (cur->names_len + len > cur->names_max) {
		u64 nmax = cur->names_max ? cur->names_max * 2 : 4096;
		void *p = realloc(cur->names, nmax);

		if (!p)
			return -ENOMEM;
		cur->names = p;
		cur->names_max = nmax;
	}
	e = &cur->entries[cur->nr_entries++];
	e->index = le64_to_cpu(di->index);
	e->child = le64_to_cpu(di->child);
	e->transid = le64_to_cpu(di->transid);
	e->hash_ok = true;
	e->name_off = cur->names_len;
	e->name_len = len;
	e->type = di->type;
	e->matched = false;
	memcpy(cur->names + cur->names_len, di + 1, len);
	cur->names_len += len;
	cur->entries_sorted = false;
	return 0;
}

static void check_dir_item(struct fs_check *c, struct cur_inode *cur,
			   const struct mfs_key *key, struct extent_buffer *leaf, int slot)
{
	struct mfs_entry_iter it;
	struct mfs_entry e;
	char q[QNAME_SIZE];
	int ret;

	mfs_entry_iter_init(&it, leaf_item_data(leaf, slot), leaf_item_size(leaf, slot), false);
	while ((ret = mfs_entry_next(&it, &e)) == 1) {
		u64 hash = mfs_name_hash((const char *)e.name, e.name_len);

		if (hash != key->offset)
			problem(c->ctl, "dir %llu entry %s: name hash 0x%llx does not match its DIR_ITEM key 0x%llx",
				(unsigned long long)cur->ino,
				quote_name(e.name, e.name_len, q, sizeof(q)),
				(unsigned long long)hash, (unsigned long long)key->offset);
		c->err = add_dir_entry_rec(cur, e.di);
		if (c->err)
			return;
		cur->entries[cur->nr_entries - 1].hash_ok = hash == key->offset;
	}
	if (ret < 0)
		problem(c->ctl, "dir %llu: DIR_ITEM %llu has a damaged entry (cut short, or a name of 0 or over 255 bytes)",
			(unsigned long long)cur->ino, (unsigned long long)key->offset);
}

static struct dir_entry_rec *find_entry_by_index(struct cur_inode *cur, u64 index)
{
	struct dir_entry_rec k = { .index = index };

	if (!cur->nr_entries)
		return NULL;
	if (!cur->entries_sorted) {
		qsort(cur->entries, cur->nr_entries, sizeof(*cur->entries), cmp_entry_index);
		cur->entries_sorted = true;
	}
	return bsearch(&k, cur->entries, cur->nr_entries, sizeof(k), cmp_entry_index);
}

/*
 * Can the missing twin of an entry be rebuilt from the half that is there?
 * Only when that half is sound: a valid name, naming an inode (not the
 * directory itself) of the entry's type.
 */
static bool entry_sound(struct fs_check *c, struct cur_inode *cur, u64 child_ino, u8 type,
			const u8 *name, u32 len)
{
	struct ino_rec *child = ino_find(&c->inodes, child_ino);

	return child && child->has_item && !child->bad && child_ino != cur->ino &&
	       type == mfs_mode_to_ft(child->mode) && mfs_dir_name_valid(name, len);
}

/* The DIR_ITEM twin of a DIR_INDEX entry: same index, name, child, type. */
static void match_dir_index(struct fs_check *c, struct cur_inode *cur,
			    const struct mfs_dir_item *di, const char *qname)
{
	u64 index = le64_to_cpu(di->index);
	u16 len = le16_to_cpu(di->name_len);
	struct dir_entry_rec *e = find_entry_by_index(cur, index);
	char q[QNAME_SIZE];

	if (!e) {
		problem(c->ctl, "dir %llu entry %s (index %llu) has no DIR_ITEM",
			(unsigned long long)cur->ino, qname, (unsigned long long)index);
		if (entry_sound(c, cur, le64_to_cpu(di->child), di->type, (const u8 *)(di + 1), len))
			mfs_check_add_entry_fix(c->ctl, MFS_FIX_DIR_ITEM, cur->ino, di,
						sizeof(*di) + len);
		return;
	}
	/* a duplicate index in DIR_ITEMs: the first unmatched one pairs */
	while (e > cur->entries && (e - 1)->index == index)
		e--;
	while (e->matched && e + 1 < cur->entries + cur->nr_entries && (e + 1)->index == index)
		e++;
	if (e->matched) {
		problem(c->ctl, "dir %llu entry %s (index %llu): index used twice",
			(unsigned long long)cur->ino, qname, (unsigned long long)index);
		return;
	}
	e->matched = true;
	if (e->name_len != len || memcmp(cur->names + e->name_off, di + 1, len) ||
	    e->child != le64_to_cpu(di->child) || e->type != di->type)
		problem(c->ctl, "dir %llu index %llu: DIR_INDEX (name %s inode %llu type %u) and DIR_ITEM (name %s inode %llu type %u) differ",
			(unsigned long long)cur->ino, (unsigned long long)index, qname,
			(unsigned long long)le64_to_cpu(di->child), di->type,
			quote_name(cur->names + e->name_off, e->name_len, q, sizeof(q)),
			(unsigned long long)e->child, e->type);
}

/* Count the entry against its child: links, subdirs, parents. */
static void count_dir_link(struct fs_check *c, struct cur_inode *cur,
			   const struct mfs_dir_item *di, const char *qname)
{
	u64 child_ino = le64_to_cpu(di->child);
	struct ino_rec *child = ino_find(&c->inodes, child_ino);

	if (!child || !child->has_item) {
		problem(c->ctl, "dir %llu entry %s points at inode %llu, which does not exist",
			(unsigned long long)cur->ino, qname, (unsigned long long)child_ino);
		return;
	}
	if (child->bad)
		return;
	if (di->type != mfs_mode_to_ft(child->mode))
		problem(c->ctl, "dir %llu entry %s has type %u, but inode %llu is a %s",
			(unsigned long long)cur->ino, qname, di->type,
			(unsigned long long)child_ino, mode_kind(child->mode));
	if (child_ino == cur->ino) {
		problem(c->ctl, "dir %llu entry %s points at the directory itself",
			(unsigned long long)cur->ino, qname);
		return;
	}
	child->links++;
	if (!S_ISDIR(child->mode))
		return;
	cur->rec->subdirs++;
	if (child_ino == MFS_ROOT_DIR_OBJECTID)
		problem(c->ctl, "root directory %llu is named by dir %llu entry %s",
			(unsigned long long)child_ino, (unsigned long long)cur->ino, qname);
	else if (child->links > 1)
		problem(c->ctl, "directory %llu has more than one parent: dir %llu and dir %llu entry %s",
			(unsigned long long)child_ino, (unsigned long long)child->parent,
			(unsigned long long)cur->ino, qname);
	else
		child->parent = cur->ino;
}

static void check_dir_index(struct fs_check *c, struct cur_inode *cur,
			    const struct mfs_key *key, struct extent_buffer *leaf, int slot)
{
	u32 size = leaf_item_size(leaf, slot);
	const struct mfs_dir_item *di;
	struct mfs_entry_iter it;
	struct mfs_entry e, e2;
	char qname[QNAME_SIZE];
	const u8 *name;
	u16 len;

	mfs_entry_iter_init(&it, leaf_item_data(leaf, slot), size, false);
	if (mfs_entry_next(&it, &e) != 1 || mfs_entry_next(&it, &e2) != 0) {
		problem(c->ctl, "dir %llu: DIR_INDEX %llu has size %u, not one entry",
			(unsigned long long)cur->ino, (unsigned long long)key->offset, size);
		return;
	}
	di = e.di;
	len = e.name_len;
	name = e.name;
	quote_name(name, len, qname, sizeof(qname));
	cur->rec->name_bytes += len;
	if (!mfs_dir_name_valid(name, len))
		problem(c->ctl, "dir %llu entry %s: invalid name",
			(unsigned long long)cur->ino, qname);
	if (le64_to_cpu(di->index) != key->offset)
		problem(c->ctl, "dir %llu entry %s: DIR_INDEX %llu holds index %llu",
			(unsigned long long)cur->ino, qname, (unsigned long long)key->offset,
			(unsigned long long)le64_to_cpu(di->index));
	else if (key->offset < 2 || key->offset >= cur->rec->dir_index_next)
		problem(c->ctl, "dir %llu entry %s: index %llu is outside 2..%llu, the directory's next index",
			(unsigned long long)cur->ino, qname, (unsigned long long)key->offset,
			(unsigned long long)cur->rec->dir_index_next);
	match_dir_index(c, cur, di, qname);
	count_dir_link(c, cur, di, qname);
}

static void check_xattr_item(struct fs_check *c, struct cur_inode *cur,
			     const struct mfs_key *key, struct extent_buffer *leaf, int slot)
{
	struct mfs_entry_iter it;
	struct mfs_entry e;
	char q[QNAME_SIZE];
	int ret;

	mfs_entry_iter_init(&it, leaf_item_data(leaf, slot), leaf_item_size(leaf, slot), true);
	while ((ret = mfs_entry_next(&it, &e)) == 1) {
		if (e.name_len == 0 || e.name_len > MFS_NAME_LEN)
			problem(c->ctl, "inode %llu: xattr with a name of %u bytes",
				(unsigned long long)cur->ino, e.name_len);
		else if (mfs_name_hash((const char *)e.name, e.name_len) != key->offset)
			problem(c->ctl, "inode %llu xattr %s: name hash does not match its key 0x%llx",
				(unsigned long long)cur->ino,
				quote_name(e.name, e.name_len, q, sizeof(q)),
				(unsigned long long)key->offset);
	}
	if (ret < 0)
		problem(c->ctl, "inode %llu: XATTR_ITEM %llu has a damaged entry (cut short, or a name of 0 or over 255 bytes)",
			(unsigned long long)cur->ino, (unsigned long long)key->offset);
}

/*
 * Inline file extents: a symlink's target, or the data of a small regular
 * file, which then has no other extent (and counts it in nbytes).
 */
static void check_inline_extent(struct fs_check *c, struct cur_inode *cur,
				const struct mfs_key *key, const struct mfs_file_extent_item *fi,
				u32 size)
{
	u64 ino = cur->ino;
	const char *what = S_ISLNK(cur->rec->mode) ? "symlink" : "file";

	if (!S_ISLNK(cur->rec->mode) && !S_ISREG(cur->rec->mode)) {
		problem(c->ctl, "inode %llu (%s) has an inline file extent at %llu; only symlinks and regular files have them",
			(unsigned long long)ino, mode_kind(cur->rec->mode),
			(unsigned long long)key->offset);
		return;
	}
	if (key->offset != 0) {
		problem(c->ctl, "%s %llu has an inline file extent at %llu, expected 0",
			what, (unsigned long long)ino, (unsigned long long)key->offset);
		return;
	}
	if (fi->compression != MFS_COMPRESS_NONE)
		problem(c->ctl, "%s %llu: inline file extent is compressed (%u)",
			what, (unsigned long long)ino, fi->compression);
	cur->has_inline = true;
	cur->inline_len = size - MFS_FILE_EXTENT_INLINE_DATA_START;
	cur->extent_end = cur->inline_len;
	if (S_ISREG(cur->rec->mode)) {
		if (!cur->inline_len || cur->inline_len >= MFS_SECTOR)
			problem(c->ctl, "file %llu: inline file extent of %llu bytes (1 to %llu allowed)",
				(unsigned long long)ino, (unsigned long long)cur->inline_len,
				(unsigned long long)MFS_SECTOR - 1);
		cur->rec->extent_bytes += cur->inline_len;
	}
}

static int add_data_ref(struct fs_check *c, u64 ino, u64 offset,
			const struct mfs_file_extent_item *fi)
{
	struct data_ref *r;
	int ret = MFS_ARRAY_RESERVE(c->refs, c->nr_refs, c->max_refs, 256);

	if (ret)
		return ret;
	r = &c->refs[c->nr_refs++];
	r->bytenr = le64_to_cpu(fi->disk_bytenr);
	r->len = le64_to_cpu(fi->disk_num_bytes);
	r->ino = ino;
	r->offset = offset;
	r->prealloc = fi->type == MFS_FILE_EXTENT_PREALLOC;
	return 0;
}

/* Where the disk extent lies: inside one DATA chunk. */
bool mfs_check_in_data_chunk(struct mfs_fs_info *fs, u64 bytenr, u64 len)
{
	struct mfs_chunk_map *map = mfs_find_chunk(fs, bytenr);

	return map && (map->type & MFS_BLOCK_GROUP_DATA) && len &&
	       bytenr + len >= bytenr && bytenr + len <= map->logical + map->length;
}

static void check_file_extent(struct fs_check *c, struct cur_inode *cur,
			      const struct mfs_key *key, struct extent_buffer *leaf, int slot)
{
	const struct mfs_file_extent_item *fi = leaf_item_data(leaf, slot);
	u32 size = leaf_item_size(leaf, slot);
	unsigned long long ino = cur->ino, pos = key->offset;
	u64 bytenr, disk_len, offset, num, ram;

	if (size < MFS_FILE_EXTENT_INLINE_DATA_START) {
		problem(c->ctl, "inode %llu file extent at %llu: item of %u bytes is too small",
			ino, pos, size);
		return;
	}
	if (fi->type == MFS_FILE_EXTENT_INLINE) {
		check_inline_extent(c, cur, key, fi, size);
		return;
	}
	if (fi->type != MFS_FILE_EXTENT_REG && fi->type != MFS_FILE_EXTENT_PREALLOC) {
		problem(c->ctl, "inode %llu file extent at %llu has unknown type %u",
			ino, pos, fi->type);
		return;
	}
	if (size != sizeof(*fi)) {
		problem(c->ctl, "inode %llu file extent at %llu: item has %u bytes, expected %zu",
			ino, pos, size, sizeof(*fi));
		return;
	}
	if (!S_ISREG(cur->rec->mode)) {
		problem(c->ctl, "inode %llu (%s) has a file extent at %llu",
			ino, mode_kind(cur->rec->mode), pos);
		return;
	}
	if (cur->has_inline)
		problem(c->ctl, "file %llu has an inline file extent and another one at %llu",
			ino, pos);
	bytenr = le64_to_cpu(fi->disk_bytenr);
	disk_len = le64_to_cpu(fi->disk_num_bytes);
	offset = le64_to_cpu(fi->offset);
	num = le64_to_cpu(fi->num_bytes);
	ram = le64_to_cpu(fi->ram_bytes);
	if (pos < cur->extent_end)
		problem(c->ctl, "inode %llu file extent at %llu overlaps the previous one, which ends at %llu",
			ino, pos, (unsigned long long)cur->extent_end);
	if (pos + num > cur->extent_end)
		cur->extent_end = pos + num;
	cur->rec->extent_bytes += num;
	if (!num || pos % MFS_SECTOR || num % MFS_SECTOR || offset % MFS_SECTOR ||
	    disk_len % MFS_SECTOR || pos + num < pos) {
		problem(c->ctl, "inode %llu file extent at %llu is not sector aligned (offset %llu num_bytes %llu disk_num_bytes %llu)",
			ino, pos, (unsigned long long)offset, (unsigned long long)num,
			(unsigned long long)disk_len);
		return;
	}
	if (offset + num > ram || offset + num < offset)
		problem(c->ctl, "inode %llu file extent at %llu: offset %llu + num_bytes %llu exceeds ram_bytes %llu",
			ino, pos, (unsigned long long)offset, (unsigned long long)num,
			(unsigned long long)ram);
	if (fi->compression > MFS_COMPRESS_ZLIB ||
	    (fi->type == MFS_FILE_EXTENT_PREALLOC && fi->compression != MFS_COMPRESS_NONE))
		problem(c->ctl, "inode %llu file extent at %llu has invalid compression %u",
			ino, pos, fi->compression);
	else if (fi->compression == MFS_COMPRESS_NONE && bytenr && ram != disk_len)
		problem(c->ctl, "inode %llu file extent at %llu: uncompressed, but ram_bytes %llu differs from disk_num_bytes %llu",
			ino, pos, (unsigned long long)ram, (unsigned long long)disk_len);
	if (fi->type == MFS_FILE_EXTENT_REG && pos >= round_up(cur->rec->size, MFS_SECTOR))
		problem(c->ctl, "inode %llu file extent at %llu lies beyond the inode size %llu",
			ino, pos, (unsigned long long)cur->rec->size);
	if (!bytenr)
		return;		/* a hole */
	if (!mfs_check_in_data_chunk(c->fs, bytenr, disk_len)) {
		problem(c->ctl, "inode %llu file extent at %llu: disk range %llu+%llu is not inside a data chunk",
			ino, pos, (unsigned long long)bytenr, (unsigned long long)disk_len);
		return;
	}
	c->err = add_data_ref(c, cur->ino, key->offset, fi);
}

/*
 * A DIR_ITEM entry with no DIR_INDEX: when it is sound and its index is
 * one the directory handed out and no other entry holds (an unmatched
 * entry's index matched no DIR_INDEX), its DIR_INDEX is rebuilt - and it
 * is counted now as the DIR_INDEX would count it (the child's links, the
 * directory's size), so the link count and size fixes derived from the
 * counts agree with the repaired directory.
 */
static void rebuild_dir_index(struct fs_check *c, struct cur_inode *cur,
			      const struct dir_entry_rec *e)
{
	u8 buf[sizeof(struct mfs_dir_item) + MFS_NAME_LEN];
	struct mfs_dir_item *di = (void *)buf;
	const u8 *name = cur->names + e->name_off;
	char q[QNAME_SIZE];

	if (!c->ctl->repair || !cur->rec || cur->rec->bad || !e->hash_ok ||
	    e->name_len > MFS_NAME_LEN || e->index < 2 || e->index >= cur->rec->dir_index_next ||
	    !entry_sound(c, cur, e->child, e->type, name, e->name_len))
		return;
	di->child = cpu_to_le64(e->child);
	di->index = cpu_to_le64(e->index);
	di->transid = cpu_to_le64(e->transid);
	di->name_len = cpu_to_le16(e->name_len);
	di->type = e->type;
	memcpy(di + 1, name, e->name_len);
	mfs_check_add_entry_fix(c->ctl, MFS_FIX_DIR_INDEX, cur->ino, di, sizeof(*di) + e->name_len);
	cur->rec->name_bytes += e->name_len;
	count_dir_link(c, cur, di, quote_name(name, e->name_len, q, sizeof(q)));
}

/* Checks that need all the items of one inode. */
static void finish_inode(struct fs_check *c, struct cur_inode *cur)
{
	char q[QNAME_SIZE];
	u64 i;

	for (i = 0; i < cur->nr_entries; i++) {
		struct dir_entry_rec *e = &cur->entries[i];

		if (!e->matched) {
			problem(c->ctl, "dir %llu entry %s (index %llu) has no DIR_INDEX",
				(unsigned long long)cur->ino,
				quote_name(cur->names + e->name_off, e->name_len, q, sizeof(q)),
				(unsigned long long)e->index);
			rebuild_dir_index(c, cur, e);
		}
	}
	if (cur->rec && !cur->rec->bad && S_ISLNK(cur->rec->mode)) {
		if (!cur->has_inline)
			problem(c->ctl, "symlink %llu has no target (no inline file extent)",
				(unsigned long long)cur->ino);
		else if (cur->inline_len != cur->rec->size)
			problem(c->ctl, "symlink %llu has size %llu, its target is %llu bytes",
				(unsigned long long)cur->ino,
				(unsigned long long)cur->rec->size,
				(unsigned long long)cur->inline_len);
	}
	if (cur->rec && !cur->rec->bad && S_ISREG(cur->rec->mode) && cur->has_inline &&
	    cur->inline_len > cur->rec->size)
		problem(c->ctl, "file %llu has size %llu, less than its %llu bytes of inline data",
			(unsigned long long)cur->ino, (unsigned long long)cur->rec->size,
			(unsigned long long)cur->inline_len);
	cur->nr_entries = 0;
	cur->names_len = 0;
	cur->extent_end = 0;
	cur->has_inline = false;
	cur->inline_len = 0;
	cur->reported = false;
}

static void start_inode(struct fs_check *c, struct cur_inode *cur, const struct mfs_key *key)
{
	struct ino_rec *r = ino_find(&c->inodes, key->objectid);

	cur->ino = key->objectid;
	cur->rec = r && r->has_item && !r->bad ? r : NULL;
	if (!r || !r->has_item)
		problem(c->ctl, "inode %llu has items but no inode item (first: type %u offset %llu)",
			(unsigned long long)key->objectid, key->type,
			(unsigned long long)key->offset);
}

static void check_fs_item(struct fs_check *c, struct cur_inode *cur,
			  const struct mfs_key *key, struct extent_buffer *leaf, int slot)
{
	bool is_dir = S_ISDIR(cur->rec->mode);

	switch (key->type) {
	case MFS_INODE_ITEM_KEY:
		break;
	case MFS_XATTR_ITEM_KEY:
		check_xattr_item(c, cur, key, leaf, slot);
		break;
	case MFS_DIR_ITEM_KEY:
	case MFS_DIR_INDEX_KEY:
		if (!is_dir) {
			if (!cur->reported)
				problem(c->ctl, "inode %llu (%s) has directory entries",
					(unsigned long long)cur->ino, mode_kind(cur->rec->mode));
			cur->reported = true;
		} else if (key->type == MFS_DIR_ITEM_KEY) {
			check_dir_item(c, cur, key, leaf, slot);
		} else {
			check_dir_index(c, cur, key, leaf, slot);
		}
		break;
	case MFS_EXTENT_DATA_KEY:
		check_file_extent(c, cur, key, leaf, slot);
		break;
	default:
		problem(c->ctl, "fs tree: unexpected item type %u at (%llu %u %llu)",
			key->type, (unsigned long long)key->objectid, key->type,
			(unsigned long long)key->offset);
	}
}

static int walk_fs_items(struct fs_check *c)
{
	struct mfs_key key = { 0, 0, 0 };
	struct mfs_root *root = c->fs->fs_root;
	struct cur_inode cur;
	struct mfs_path path;
	bool started = false;
	int ret;

	memset(&cur, 0, sizeof(cur));
	mfs_init_path(&path);
	ret = mfs_search_forward(root, &key, &path);
	while (ret == 0 && !c->err) {
		struct extent_buffer *leaf = path.nodes[0];
		int slot = path.slots[0];

		leaf_item_key(leaf, slot, &key);
		if (key.objectid == MFS_ORPHAN_OBJECTID)
			break;	/* orphan items: pass 1 */
		if (!started || key.objectid != cur.ino) {
			if (started)
				finish_inode(c, &cur);
			start_inode(c, &cur, &key);
			started = true;
		}
		if (cur.rec)
			check_fs_item(c, &cur, &key, leaf, slot);
		ret = mfs_next_item(root, &path);
	}
	if (started)
		finish_inode(c, &cur);
	mfs_release_path(&path);
	free(cur.entries);
	free(cur.names);
	if (c->err)
		return c->err;
	return ret < 0 ? ret : 0;
}

/* ---------------- per inode: sizes, link counts, orphans ---------------- */

static void check_links(struct fs_check *c, const struct ino_rec *r)
{
	unsigned long long ino = r->ino;
	u64 expected;

	if (r->orphan && r->nlink)
		problem(c->ctl, "orphan item for inode %llu, whose link count is %u", ino, r->nlink);
	if (ino == MFS_ROOT_DIR_OBJECTID) {
		expected = 2 + r->subdirs;
	} else if (!r->links) {
		if (!r->orphan) {
			problem(c->ctl, "inode %llu is not referenced and not an orphan", ino);
			/* a directory brings its subtree along: its entries were counted */
			mfs_check_add_fix(c->ctl, MFS_FIX_LOST_FOUND, ino,
					  S_ISDIR(r->mode) ? 2 + r->subdirs : 1, 0);
			return;
		}
		if (r->nlink)
			return;	/* reported as an orphan with links */
		expected = 0;
	} else if (S_ISDIR(r->mode)) {
		expected = 2 + r->subdirs;
	} else {
		expected = r->links;
	}
	if (r->nlink != expected) {
		problem(c->ctl, "inode %llu (%s) has link count %u, expected %llu",
			ino, mode_kind(r->mode), r->nlink, (unsigned long long)expected);
		mfs_check_add_fix(c->ctl, MFS_FIX_NLINK, ino, expected, 0);
	}
}

static void check_inode(struct fs_check *c, const struct ino_rec *r)
{
	unsigned long long ino = r->ino;

	if (!r->has_item) {
		problem(c->ctl, "orphan item for inode %llu, which does not exist", ino);
		return;
	}
	if (r->bad)
		return;
	if (S_ISDIR(r->mode) && r->size != r->name_bytes) {
		problem(c->ctl, "directory %llu has size %llu, its entries' names add up to %llu",
			ino, (unsigned long long)r->size, (unsigned long long)r->name_bytes);
		mfs_check_add_fix(c->ctl, MFS_FIX_DIR_SIZE, ino, r->name_bytes, 0);
	}
	if ((S_ISCHR(r->mode) || S_ISBLK(r->mode) || S_ISFIFO(r->mode) ||
	     S_ISSOCK(r->mode)) && r->size)
		problem(c->ctl, "inode %llu (%s) has size %llu, expected 0",
			ino, mode_kind(r->mode), (unsigned long long)r->size);
	if (r->nbytes != r->extent_bytes) {
		problem(c->ctl, "inode %llu has nbytes %llu, its file extents add up to %llu",
			ino, (unsigned long long)r->nbytes, (unsigned long long)r->extent_bytes);
		mfs_check_add_fix(c->ctl, MFS_FIX_NBYTES, ino, r->extent_bytes, 0);
	}
	check_links(c, r);
}

/*
 * Each directory has one parent (more is reported as such), so following
 * parents from any named directory must end at the root; a chain that
 * comes back on itself is a loop of directories cut off from the tree.
 */
static void check_dir_loops(struct fs_check *c)
{
	u64 i;

	for (i = 0; i < c->inodes.nr; i++) {
		struct ino_rec *r = &c->inodes.recs[i], *p = r;
		u8 result;

		if (!r->has_item || r->bad || !S_ISDIR(r->mode) || !r->links || r->reach)
			continue;
		while (p && p->reach == REACH_UNKNOWN && p->ino != MFS_ROOT_DIR_OBJECTID &&
		       p->links) {
			p->reach = REACH_WALKING;
			p = ino_find(&c->inodes, p->parent);
		}
		if (p && (p->ino == MFS_ROOT_DIR_OBJECTID || p->reach == REACH_ROOT))
			result = REACH_ROOT;
		else
			result = REACH_NOT;
		if (p && p->reach == REACH_WALKING)
			problem(c->ctl, "directory %llu is in a loop of directories not reachable from the root",
				(unsigned long long)p->ino);
		for (p = r; p && p->reach == REACH_WALKING; p = ino_find(&c->inodes, p->parent))
			p->reach = result;
	}
}

static void check_inodes(struct fs_check *c)
{
	struct ino_rec *root;
	u64 i;

	root = ino_find(&c->inodes, MFS_ROOT_DIR_OBJECTID);
	if (!root || !root->has_item)
		problem(c->ctl, "root directory %llu does not exist",
			(unsigned long long)MFS_ROOT_DIR_OBJECTID);
	else if (!root->bad && !S_ISDIR(root->mode))
		problem(c->ctl, "root directory %llu is a %s",
			(unsigned long long)MFS_ROOT_DIR_OBJECTID, mode_kind(root->mode));
	check_dir_loops(c);
	/* orphan items (created last) break the creation order; the hash goes stale */
	if (c->inodes.nr)
		qsort(c->inodes.recs, c->inodes.nr, sizeof(*c->inodes.recs), cmp_ino_rec);
	free(c->inodes.hash);
	c->inodes.hash = NULL;
	c->inodes.hash_size = 0;
	for (i = 0; i < c->inodes.nr; i++)
		check_inode(c, &c->inodes.recs[i]);
}

/* ---------------- data extents: references and checksums ---------------- */

static int cmp_ref(const void *a, const void *b)
{
	const struct data_ref *x = a, *y = b;

	if (x->bytenr != y->bytenr)
		return x->bytenr < y->bytenr ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static void report_unbacked(struct fs_check *c, const struct data_ref *r)
{
	problem(c->ctl, "data extent %llu length %llu (inode %llu file extent at %llu) has no extent item",
		(unsigned long long)r->bytenr, (unsigned long long)r->len,
		(unsigned long long)r->ino, (unsigned long long)r->offset);
}

/* The references [first, end) all point at the extent item (bytenr, len). */
static void match_refs(struct fs_check *c, struct data_extent *de, u64 refs,
		       const struct data_ref *first, const struct data_ref *end)
{
	const struct data_ref *r;
	u64 n = end - first;

	for (r = first; r < end; r++) {
		if (r->len != de->len)
			problem(c->ctl, "inode %llu file extent at %llu says data extent %llu has length %llu, its extent item says %llu",
				(unsigned long long)r->ino, (unsigned long long)r->offset,
				(unsigned long long)de->bytenr, (unsigned long long)r->len,
				(unsigned long long)de->len);
		if (!r->prealloc && !de->nreg++) {
			de->ino = r->ino;
			de->offset = r->offset;
		}
	}
	if (!n)
		problem(c->ctl, "data extent %llu length %llu is not referenced by any file extent",
			(unsigned long long)de->bytenr, (unsigned long long)de->len);
	else if (refs != n)
		problem(c->ctl, "data extent %llu length %llu has refs %llu, but %llu file extent item(s) point at it",
			(unsigned long long)de->bytenr, (unsigned long long)de->len,
			(unsigned long long)refs, (unsigned long long)n);
	if (n)
		c->ctl->data_bytes += de->len;
}

/* Merge the sorted references with the extent tree's data extent items. */
static int check_data_extents(struct fs_check *c)
{
	struct mfs_key key = { 0, 0, 0 };
	struct mfs_path path;
	/* no references: refs may be NULL, and NULL + 0 is not C */
	const struct data_ref *r = c->refs, *end = c->nr_refs ? c->refs + c->nr_refs : r;
	int ret;

	if (c->nr_refs)
		qsort(c->refs, c->nr_refs, sizeof(*c->refs), cmp_ref);
	mfs_init_path(&path);
	ret = mfs_search_forward(c->fs->extent_root, &key, &path);
	while (ret == 0) {
		struct extent_buffer *leaf = path.nodes[0];
		const struct mfs_extent_item *ei = leaf_item_data(leaf, path.slots[0]);
		const struct data_ref *group;
		struct data_extent *de;

		leaf_item_key(leaf, path.slots[0], &key);
		if (key.type != MFS_EXTENT_ITEM_KEY || leaf_item_size(leaf, path.slots[0]) != sizeof(*ei) ||
		    !(le64_to_cpu(ei->flags) & MFS_EXTENT_FLAG_DATA))
			goto next;
		for (; r < end && r->bytenr < key.objectid; ) {
			report_unbacked(c, r);
			for (group = r; r < end && r->bytenr == group->bytenr; r++)
				;
		}
		ret = MFS_ARRAY_RESERVE(c->extents, c->nr_extents, c->max_extents, 256);
		if (ret)
			break;
		de = &c->extents[c->nr_extents++];
		memset(de, 0, sizeof(*de));
		de->bytenr = key.objectid;
		de->len = key.offset;
		for (group = r; r < end && r->bytenr == key.objectid; r++)
			;
		match_refs(c, de, le64_to_cpu(ei->refs), group, r);
next:
		ret = mfs_next_item(c->fs->extent_root, &path);
	}
	mfs_release_path(&path);
	if (ret < 0)
		return ret;
	while (r < end) {
		const struct data_ref *group = r;

		report_unbacked(c, r);
		for (; r < end && r->bytenr == group->bytenr; r++)
			;
	}
	return 0;
}

static int cmp_extent(const void *a, const void *b)
{
	const struct data_extent *x = a, *y = b;

	return x->bytenr < y->bytenr ? -1 : x->bytenr > y->bytenr;
}

static void check_csum_item(struct fs_check *c, const struct mfs_key *key, u32 size)
{
	struct data_extent k = { .bytenr = key->offset }, *de;
	unsigned long long bytenr = key->offset;
	u32 csize = c->fs->csum_size;

	if (key->objectid != MFS_EXTENT_CSUM_OBJECTID || key->type != MFS_EXTENT_CSUM_KEY) {
		problem(c->ctl, "csum tree: unexpected item (%llu %u %llu)",
			(unsigned long long)key->objectid, key->type, bytenr);
		return;
	}
	if (!size || size % csize) {
		problem(c->ctl, "csum item for extent %llu has %u bytes, not a multiple of the %u-byte checksum",
			bytenr, size, csize);
		return;
	}
	c->ctl->csum_bytes += size / csize * MFS_SECTOR;
	de = NULL;
	if (c->nr_extents)
		de = bsearch(&k, c->extents, c->nr_extents, sizeof(k), cmp_extent);
	if (!de) {
		problem(c->ctl, "csum item for extent %llu (%llu bytes of data) has no data extent item",
			bytenr, (unsigned long long)(size / csize * MFS_SECTOR));
		return;
	}
	de->has_csum = true;
	if (size != de->len / MFS_SECTOR * csize)
		problem(c->ctl, "csum item for data extent %llu has %u bytes, expected %llu",
			bytenr, size, (unsigned long long)(de->len / MFS_SECTOR * csize));
}

static int check_csums(struct fs_check *c)
{
	struct mfs_key key = { 0, 0, 0 };
	struct mfs_path path;
	u64 i;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_forward(c->fs->csum_root, &key, &path);
	while (ret == 0) {
		leaf_item_key(path.nodes[0], path.slots[0], &key);
		check_csum_item(c, &key, leaf_item_size(path.nodes[0], path.slots[0]));
		ret = mfs_next_item(c->fs->csum_root, &path);
	}
	mfs_release_path(&path);
	if (ret < 0)
		return ret;
	for (i = 0; i < c->nr_extents; i++) {
		struct data_extent *de = &c->extents[i];

		if (de->nreg && !de->has_csum)
			problem(c->ctl, "data extent %llu length %llu (inode %llu file extent at %llu) has no csum item",
				(unsigned long long)de->bytenr, (unsigned long long)de->len,
				(unsigned long long)de->ino, (unsigned long long)de->offset);
	}
	return 0;
}

static void free_fs_check(struct fs_check *c)
{
	free(c->inodes.recs);
	free(c->inodes.hash);
	free(c->refs);
	free(c->extents);
}

void mfs_check_walk_failed(struct mfs_check_ctl *ctl, const char *tree, int ret)
{
	problem(ctl, "%s tree cannot be walked: %s", tree, strerror(-ret));
}

/*
 * The inode fixes (link count, directory size, nbytes, lost+found) are
 * derived from the directory entries and file extents, and the block
 * group fixes from the extent items: trusted only when the inode fixes'
 * problems are the only ones this phase found. Otherwise both are
 * dropped, and what disagrees stays for the admin to look at.
 */
static void keep_derived_fixes_if_alone(struct mfs_check_ctl *ctl, u64 errors_before,
					int fixes_before)
{
	if (ctl->errors - errors_before == (u64)(ctl->nr_fixes - fixes_before))
		return;
	mfs_check_drop_fixes(ctl, MFS_FIX_NLINK);
	mfs_check_drop_fixes(ctl, MFS_FIX_DIR_SIZE);
	mfs_check_drop_fixes(ctl, MFS_FIX_NBYTES);
	mfs_check_drop_fixes(ctl, MFS_FIX_BG_USED);
	mfs_check_drop_fixes(ctl, MFS_FIX_LOST_FOUND);
}

int mfs_check_fs_tree(struct mfs_fs_info *fs, struct mfs_check_ctl *ctl)
{
	struct fs_check c = { .fs = fs, .ctl = ctl };
	u64 errors_before = ctl->errors;
	int fixes_before = ctl->nr_fixes;
	int ret;

	/* an unreadable root was reported when the filesystem was opened */
	if (!fs->fs_root || !fs->extent_root)
		return 0;
	ret = walk_inode_items(&c);
	if (ret == -ENOMEM)
		goto out;
	if (ret) {
		mfs_check_walk_failed(ctl, "fs", ret);
		ret = 0;
		goto out;
	}
	ret = walk_fs_items(&c);
	if (ret == -ENOMEM)
		goto out;
	if (ret) {
		/* link counts from a partial walk would only add noise */
		mfs_check_walk_failed(ctl, "fs", ret);
		ret = 0;
		goto out;
	}
	check_inodes(&c);
	ret = check_data_extents(&c);
	if (ret && ret != -ENOMEM) {
		mfs_check_walk_failed(ctl, "extent", ret);
		ret = 0;
		goto out;
	}
	if (!ret && fs->csum_root) {
		if (c.nr_extents)
			qsort(c.extents, c.nr_extents, sizeof(*c.extents), cmp_extent);
		ret = check_csums(&c);
		if (ret && ret != -ENOMEM) {
			mfs_check_walk_failed(ctl, "csum", ret);
			ret = 0;
		}
	}
out:
	keep_derived_fixes_if_alone(ctl, errors_before, fixes_before);
	free_fs_check(&c);
	return ret;
}
