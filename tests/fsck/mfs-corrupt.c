/*
 * mfs-corrupt: damage one item of an unmounted filesystem on purpose, for
 * the checker's tests. The change goes through the engine (copy-on-write,
 * commit), so every tree block stays well-formed and checksummed: only the
 * item's meaning is wrong.
 *
 *   mfs-corrupt [-d EXTRA-DEVICE]... DEVICE COMMAND ARGS
 *
 *   set TREE OBJECTID TYPE OFFSET FIELD VALUE
 *	change one field of an item in place
 *   del TREE OBJECTID TYPE OFFSET
 *	delete an item
 *   insert TREE OBJECTID TYPE OFFSET [HEX]
 *	insert an item holding the given bytes (none: an empty item)
 *
 * TREE: root, extent, chunk, dev, fs, csum. OBJECTID: a number, ORPHAN or
 * EXTENT_CSUM. TYPE: a number or a key type name (INODE_ITEM, DIR_ITEM,
 * DIR_INDEX, EXTENT_DATA, XATTR_ITEM, ORPHAN_ITEM, EXTENT_ITEM, EXTENT_CSUM).
 * OFFSET: a number, or hash:NAME for the name hash of NAME (DIR_ITEM and
 * XATTR_ITEM keys); with hash:NAME, DIR_ITEM fields are those of the entry
 * called NAME, else of the item's first entry.
 *
 * FIELD by item type: INODE_ITEM size nbytes nlink mode uid gid
 * dir_index_next; DIR_ITEM and DIR_INDEX child index type name (VALUE: a
 * name of the same length); EXTENT_DATA type compression disk_bytenr
 * disk_num_bytes offset num_bytes ram_bytes; EXTENT_ITEM refs flags; and
 * for any item u8@N u16@N u32@N u64@N (little-endian at byte N of its data).
 *
 *   block BYTENR COPY FIELD VALUE
 *	change a tree block as it is on disk, outside any transaction, and
 *	give it a valid checksum: COPY 0 every copy, else that one (1 = first
 *	stripe); FIELD bytenr, generation, owner, nritems, level, ptr:I (the
 *	block pointer of slot I of a node), key:I (VALUE J: slot I's key
 *	becomes slot J's, key order broken), u8@N u32@N u64@N (byte N of the
 *	block)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/tree/transaction.h"
#include "kernel-shared/fs/inode-internal.h"
#include "kernel-shared/ops/open.h"
#include "kernel-shared/volumes/volumes.h"

static const struct { const char *name; u8 type; } key_types[] = {
	{ "INODE_ITEM", MFS_INODE_ITEM_KEY }, { "XATTR_ITEM", MFS_XATTR_ITEM_KEY },
	{ "ORPHAN_ITEM", MFS_ORPHAN_ITEM_KEY }, { "DIR_ITEM", MFS_DIR_ITEM_KEY },
	{ "DIR_INDEX", MFS_DIR_INDEX_KEY }, { "EXTENT_DATA", MFS_EXTENT_DATA_KEY },
	{ "EXTENT_CSUM", MFS_EXTENT_CSUM_KEY }, { "ROOT_ITEM", MFS_ROOT_ITEM_KEY },
	{ "EXTENT_ITEM", MFS_EXTENT_ITEM_KEY },
	{ "BLOCK_GROUP_ITEM", MFS_BLOCK_GROUP_ITEM_KEY },
	{ "DEV_EXTENT", MFS_DEV_EXTENT_KEY }, { "DEV_ITEM", MFS_DEV_ITEM_KEY },
	{ "CHUNK_ITEM", MFS_CHUNK_ITEM_KEY },
};

/* A named field: byte offset and width inside the item (or its entry). */
struct field {
	u8 key_type;
	const char *name;
	size_t off;
	int width;
};

#define F(t, s, m) { t, #m, offsetof(struct s, m), sizeof(((struct s *)0)->m) }
static const struct field fields[] = {
	F(MFS_INODE_ITEM_KEY, mfs_inode_item, size),
	F(MFS_INODE_ITEM_KEY, mfs_inode_item, nbytes),
	F(MFS_INODE_ITEM_KEY, mfs_inode_item, nlink),
	F(MFS_INODE_ITEM_KEY, mfs_inode_item, mode),
	F(MFS_INODE_ITEM_KEY, mfs_inode_item, uid),
	F(MFS_INODE_ITEM_KEY, mfs_inode_item, gid),
	F(MFS_INODE_ITEM_KEY, mfs_inode_item, dir_index_next),
	F(MFS_DIR_ITEM_KEY, mfs_dir_item, child),
	F(MFS_DIR_ITEM_KEY, mfs_dir_item, index),
	F(MFS_DIR_ITEM_KEY, mfs_dir_item, type),
	F(MFS_EXTENT_DATA_KEY, mfs_file_extent_item, type),
	F(MFS_EXTENT_DATA_KEY, mfs_file_extent_item, compression),
	F(MFS_EXTENT_DATA_KEY, mfs_file_extent_item, disk_bytenr),
	F(MFS_EXTENT_DATA_KEY, mfs_file_extent_item, disk_num_bytes),
	F(MFS_EXTENT_DATA_KEY, mfs_file_extent_item, offset),
	F(MFS_EXTENT_DATA_KEY, mfs_file_extent_item, num_bytes),
	F(MFS_EXTENT_DATA_KEY, mfs_file_extent_item, ram_bytes),
	F(MFS_EXTENT_ITEM_KEY, mfs_extent_item, refs),
	F(MFS_EXTENT_ITEM_KEY, mfs_extent_item, flags),
};

struct target {
	struct mfs_root *root;
	struct mfs_key key;
	const char *entry_name;		/* from hash:NAME */
};

static void usage(void)
{
	fprintf(stderr,
		"usage: mfs-corrupt [-d DEVICE]... DEVICE set TREE OBJECTID TYPE OFFSET FIELD VALUE\n"
		"       mfs-corrupt [-d DEVICE]... DEVICE del TREE OBJECTID TYPE OFFSET\n"
		"       mfs-corrupt [-d DEVICE]... DEVICE insert TREE OBJECTID TYPE OFFSET [HEX]\n"
		"       mfs-corrupt [-d DEVICE]... DEVICE block BYTENR COPY FIELD VALUE\n");
	exit(2);
}

static int parse_u64(const char *s, u64 *out)
{
	char *end;

	if (!*s)
		return -1;
	*out = strtoull(s, &end, 0);
	return *end ? -1 : 0;
}

static struct mfs_root *parse_tree(struct mfs_fs_info *fs, const char *s)
{
	if (!strcmp(s, "root"))
		return fs->tree_root;
	if (!strcmp(s, "extent"))
		return fs->extent_root;
	if (!strcmp(s, "chunk"))
		return fs->chunk_root;
	if (!strcmp(s, "dev"))
		return fs->dev_root;
	if (!strcmp(s, "fs"))
		return fs->fs_root;
	if (!strcmp(s, "csum"))
		return fs->csum_root;
	return NULL;
}

static int parse_target(struct mfs_fs_info *fs, char **arg, struct target *t)
{
	size_t i;
	u64 v;

	memset(t, 0, sizeof(*t));
	t->root = parse_tree(fs, arg[0]);
	if (!t->root) {
		fprintf(stderr, "mfs-corrupt: unknown or unreadable tree '%s'\n", arg[0]);
		return -1;
	}
	if (!strcmp(arg[1], "ORPHAN"))
		t->key.objectid = MFS_ORPHAN_OBJECTID;
	else if (!strcmp(arg[1], "EXTENT_CSUM"))
		t->key.objectid = MFS_EXTENT_CSUM_OBJECTID;
	else if (parse_u64(arg[1], &t->key.objectid))
		return -1;
	for (i = 0; i < ARRAY_SIZE(key_types); i++)
		if (!strcasecmp(arg[2], key_types[i].name))
			break;
	if (i < ARRAY_SIZE(key_types))
		t->key.type = key_types[i].type;
	else if (!parse_u64(arg[2], &v) && v < 256)
		t->key.type = v;
	else
		return -1;
	if (!strncmp(arg[3], "hash:", 5)) {
		t->entry_name = arg[3] + 5;
		t->key.offset = mfs_name_hash(t->entry_name, strlen(t->entry_name));
	} else if (parse_u64(arg[3], &t->key.offset)) {
		return -1;
	}
	return 0;
}

/* Where the entry the field belongs to starts inside a DIR_ITEM. */
static int dir_entry_offset(const u8 *data, u32 size, const char *name, u32 *out)
{
	u32 off = 0;

	while (off + sizeof(struct mfs_dir_item) <= size) {
		const struct mfs_dir_item *di = (const void *)(data + off);
		u16 len = le16_to_cpu(di->name_len);

		if (!name || (len == strlen(name) && !memcmp(di + 1, name, len))) {
			*out = off;
			return 0;
		}
		off += sizeof(*di) + len;
	}
	return -1;
}

static int set_field(u8 *data, u32 size, const struct target *t, const char *fname,
		     const char *value)
{
	u8 type = t->key.type == MFS_DIR_INDEX_KEY ? MFS_DIR_ITEM_KEY : t->key.type;
	u32 base = 0, off = 0;
	int width = 0;
	size_t i;
	u64 v;

	if (type == MFS_DIR_ITEM_KEY &&
	    dir_entry_offset(data, size, t->entry_name, &base)) {
		fprintf(stderr, "mfs-corrupt: no such directory entry\n");
		return -1;
	}
	if (type == MFS_DIR_ITEM_KEY && !strcmp(fname, "name")) {
		struct mfs_dir_item *di = (void *)(data + base);

		if (strlen(value) != le16_to_cpu(di->name_len)) {
			fprintf(stderr, "mfs-corrupt: the new name must have %u bytes\n",
				le16_to_cpu(di->name_len));
			return -1;
		}
		memcpy(di + 1, value, strlen(value));
		return 0;
	}
	if (sscanf(fname, "u%d@%u", &width, &off) == 2) {
		width /= 8;
		base = 0;
	} else {
		for (i = 0; i < ARRAY_SIZE(fields); i++)
			if (fields[i].key_type == type && !strcmp(fields[i].name, fname))
				break;
		if (i == ARRAY_SIZE(fields)) {
			fprintf(stderr, "mfs-corrupt: unknown field '%s' for this item\n", fname);
			return -1;
		}
		off = fields[i].off;
		width = fields[i].width;
	}
	if ((width != 1 && width != 2 && width != 4 && width != 8) ||
	    base + off + width > size || parse_u64(value, &v)) {
		fprintf(stderr, "mfs-corrupt: bad field or value\n");
		return -1;
	}
	for (i = 0; i < (size_t)width; i++)
		data[base + off + i] = v >> (8 * i);
	return 0;
}

static int parse_hex(const char *s, u8 **out, u32 *len)
{
	size_t n = strlen(s), i;

	if (n % 2)
		return -1;
	*out = malloc(n / 2 + 1);
	if (!*out)
		return -1;
	for (i = 0; i < n / 2; i++) {
		unsigned int b;

		if (sscanf(s + 2 * i, "%2x", &b) != 1)
			return -1;
		(*out)[i] = b;
	}
	*len = n / 2;
	return 0;
}

static int run(struct mfs_trans_handle *trans, const char *cmd, char **arg, int narg)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_path path;
	struct target t;
	int ret;

	if (narg < 4 || parse_target(fs, arg, &t))
		usage();
	if (!strcmp(cmd, "insert")) {
		u8 *data = NULL;
		u32 len = 0;

		if (narg > 5 || (narg == 5 && parse_hex(arg[4], &data, &len)))
			usage();
		ret = mfs_insert_item(trans, t.root, &t.key, data ? (const void *)data : "", len);
		free(data);
		return ret;
	}
	if ((!strcmp(cmd, "set") && narg != 6) || (!strcmp(cmd, "del") && narg != 4))
		usage();
	mfs_init_path(&path);
	ret = mfs_search_slot(trans, t.root, &t.key, &path, !strcmp(cmd, "del") ? -1 : 0, 1);
	if (ret > 0) {
		fprintf(stderr, "mfs-corrupt: no item (%llu %u %llu)\n",
			(unsigned long long)t.key.objectid, t.key.type,
			(unsigned long long)t.key.offset);
		ret = -ENOENT;
	}
	if (ret == 0 && !strcmp(cmd, "del")) {
		ret = mfs_del_item(trans, t.root, &path);
	} else if (ret == 0) {
		ret = set_field(leaf_item_data(path.nodes[0], path.slots[0]),
				leaf_item_size(path.nodes[0], path.slots[0]), &t, arg[4], arg[5]);
		if (ret)
			ret = -EINVAL;
		else
			mfs_mark_buffer_dirty(trans, path.nodes[0]);
	}
	mfs_release_path(&path);
	return ret;
}

/* FIELD VALUE of `block` into the block's bytes. */
static int set_block_field(u8 *buf, u32 nodesize, const char *field, u64 v)
{
	struct mfs_header *h = (struct mfs_header *)buf;
	u8 *items = buf + sizeof(*h);
	unsigned int i, n;
	char kind[8];

	if (!strcmp(field, "bytenr"))
		h->bytenr = cpu_to_le64(v);
	else if (!strcmp(field, "generation"))
		h->generation = cpu_to_le64(v);
	else if (!strcmp(field, "owner"))
		h->owner = cpu_to_le64(v);
	else if (!strcmp(field, "nritems"))
		h->nritems = cpu_to_le32(v);
	else if (!strcmp(field, "level"))
		h->level = v;
	else if (sscanf(field, "ptr:%u", &i) == 1 && h->level)
		((struct mfs_key_ptr *)items)[i].blockptr = cpu_to_le64(v);
	else if (sscanf(field, "key:%u", &i) == 1 && v < le32_to_cpu(h->nritems)) {
		size_t stride = h->level ? sizeof(struct mfs_key_ptr) : sizeof(struct mfs_item);

		memcpy(items + i * stride, items + v * stride, sizeof(struct mfs_disk_key));
	} else if (sscanf(field, "%7[u0-9]@%u", kind, &n) == 2 && n + 8 <= nodesize) {
		mfs_le32 v32 = cpu_to_le32(v);
		mfs_le64 v64 = cpu_to_le64(v);

		if (!strcmp(kind, "u8"))
			buf[n] = v;
		else if (!strcmp(kind, "u32"))
			memcpy(buf + n, &v32, sizeof(v32));
		else if (!strcmp(kind, "u64"))
			memcpy(buf + n, &v64, sizeof(v64));
		else
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	return 0;
}

/* block BYTENR COPY FIELD VALUE: see the top of the file. */
static int corrupt_block(struct mfs_fs_info *fs, char **arg, int narg)
{
	struct mfs_chunk_map *map;
	u64 bytenr, copy, v;
	int m, copies, ret;
	u8 *buf;

	if (narg != 4 || parse_u64(arg[0], &bytenr) || parse_u64(arg[1], &copy) ||
	    parse_u64(arg[3], &v))
		usage();
	map = mfs_find_chunk(fs, bytenr);
	if (!map)
		return -ENOENT;
	copies = mfs_num_copies(map);
	buf = malloc(fs->nodesize);
	if (!buf)
		return -ENOMEM;
	ret = mfs_read_logical(fs, bytenr, buf, fs->nodesize, copy ? (int)copy : 1);
	if (!ret)
		ret = set_block_field(buf, fs->nodesize, arg[2], v);
	if (!ret)
		mfs_csum_tree_block(fs, buf);
	for (m = 1; !ret && m <= copies; m++)
		if (!copy || (u64)m == copy)
			ret = mfs_write_logical_mirror(fs, bytenr, buf, fs->nodesize, m);
	if (!ret)
		ret = mfs_flush_all_devices(fs);
	free(buf);
	return ret;
}

int main(int argc, char **argv)
{
	const char *paths[16];
	struct mfs_open_ctl ctl = { .paths = paths, .flags = MFS_OPEN_WRITABLE, .sb_mirror = -1 };
	struct mfs_trans_handle *trans;
	struct mfs_fs_info *fs;
	int c, ret;

	while ((c = getopt(argc, argv, "+d:")) != -1) {
		if (c != 'd' || ctl.npaths == (int)ARRAY_SIZE(paths) - 1)
			usage();
		paths[++ctl.npaths] = optarg;
	}
	if (argc - optind < 2)
		usage();
	paths[0] = argv[optind];
	ctl.npaths++;
	if (strcmp(argv[optind + 1], "set") && strcmp(argv[optind + 1], "del") &&
	    strcmp(argv[optind + 1], "insert") && strcmp(argv[optind + 1], "block"))
		usage();
	ret = mfs_open_fs(&ctl, &fs);
	if (ret) {
		fprintf(stderr, "mfs-corrupt: cannot open %s: %s\n", paths[0], strerror(-ret));
		return 1;
	}
	if (!strcmp(argv[optind + 1], "block")) {
		/* no transaction: the block as it is on disk, nothing else */
		ret = corrupt_block(fs, argv + optind + 2, argc - optind - 2);
		if (ret)
			fprintf(stderr, "mfs-corrupt: %s\n", strerror(-ret));
		mfs_free_fs_info(fs);
		return ret ? 1 : 0;
	}
	pthread_mutex_lock(&fs->lock);
	ret = mfs_start_transaction(fs, &trans);
	if (!ret) {
		ret = run(trans, argv[optind + 1], argv + optind + 2, argc - optind - 2);
		if (ret)
			mfs_end_transaction(trans);
		else
			ret = mfs_commit_transaction(trans);
	}
	pthread_mutex_unlock(&fs->lock);
	if (ret) {
		fprintf(stderr, "mfs-corrupt: %s\n", strerror(-ret));
		mfs_free_fs_info(fs);
		return 1;
	}
	return mfs_close_fs(fs) ? 1 : 0;
}
