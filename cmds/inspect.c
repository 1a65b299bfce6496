/* mfs inspect-internal: dump-super and dump-tree. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <uuid/uuid.h>
#include "cmds/commands.h"
#include "common/help.h"
#include "common/messages.h"
#include "common/open.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/block/csum.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/block/io.h"
#include "kernel-shared/format/items.h"

/* ---------------- dump-super ---------------- */

static const char * const cmd_inspect_dump_super_usage[] = {
	"mfs inspect-internal dump-super [options] <device> [<device>...]",
	"",
	"Dump superblocks from devices or image files.",
	"",
	OPTLINE("-f|--full", "also dump the bootstrap chunk array"),
	OPTLINE("-a|--all", "dump every copy present on the device"),
	OPTLINE("-s|--super N", "dump copy N (0, 1 or 2)"),
	OPTLINE("-F|--force", "dump even with a bad magic number"),
	NULL
};

static void print_uuid(const char *name, const u8 *uuid, const u8 *match)
{
	char buf[37];

	uuid_unparse(uuid, buf);
	printf("%s\t%s", name, buf);
	if (match)
		printf(" [%s]", memcmp(uuid, match, 16) ? "DON'T MATCH" : "match");
	printf("\n");
}

static void print_flag_words(u64 flags, const char * const *names, int nnames)
{
	int i, first = 1;

	if (!flags)
		return;
	for (i = 0; i < nnames; i++) {
		if (!(flags & (1ULL << i)) || !names[i])
			continue;
		printf("%s%s", first ? "\t\t\t( " : " |\n\t\t\t  ", names[i]);
		first = 0;
	}
	if (!first)
		printf(" )\n");
}

static void print_chunk_item(const struct mfs_chunk *c, int indent)
{
	const char *pad = indent ? "\t\t" : "\t";
	int i, n = le16_to_cpu(c->num_stripes);
	u64 type = le64_to_cpu(c->type);

	printf("%slength %llu owner %llu stripe_len %llu type %s|%s\n", pad,
	       (unsigned long long)le64_to_cpu(c->length),
	       (unsigned long long)le64_to_cpu(c->owner),
	       (unsigned long long)le64_to_cpu(c->stripe_len),
	       mfs_bg_type_name(type), mfs_profile_ui_name(type));
	printf("%sio_align %u io_width %u sector_size %u\n", pad, le32_to_cpu(c->io_align),
	       le32_to_cpu(c->io_width), le32_to_cpu(c->sector_size));
	printf("%snum_stripes %d sub_stripes %u\n", pad, n, le16_to_cpu(c->sub_stripes));
	for (i = 0; i < n; i++) {
		char uuid[37];

		uuid_unparse(c->stripe[i].dev_uuid, uuid);
		printf("%s\tstripe %d devid %llu offset %llu\n", pad, i,
		       (unsigned long long)le64_to_cpu(c->stripe[i].devid),
		       (unsigned long long)le64_to_cpu(c->stripe[i].offset));
		printf("%s\tdev_uuid %s\n", pad, uuid);
	}
}

static void print_sys_array(const struct mfs_super_block *sb)
{
	u32 size = le32_to_cpu(sb->sys_chunk_array_size), cur = 0;
	int item = 0;

	printf("sys_chunk_array[%d]:\n", MFS_SYSTEM_CHUNK_ARRAY_SIZE);
	while (size <= MFS_SYSTEM_CHUNK_ARRAY_SIZE &&
	       cur + sizeof(struct mfs_disk_key) + sizeof(struct mfs_chunk) <= size) {
		const struct mfs_disk_key *dk = (const void *)(sb->sys_chunk_array + cur);
		const struct mfs_chunk *c = (const void *)(sb->sys_chunk_array + cur + sizeof(*dk));
		u32 isz = mfs_chunk_item_size(le16_to_cpu(c->num_stripes));

		if (cur + sizeof(*dk) + isz > size)
			break;
		printf("\titem %d key (FIRST_CHUNK_TREE CHUNK_ITEM %llu)\n", item++,
		       (unsigned long long)le64_to_cpu(dk->offset));
		print_chunk_item(c, 1);
		cur += sizeof(*dk) + isz;
	}
}

static void dump_super(const struct mfs_super_block *sb, u64 bytenr, const char *dev, bool full)
{
	static const char * const incompat_names[] = { "RAID56", "RAID1C34", "COMPRESS_ZLIB",
						       "METADATA_UUID" };
	int csum_type = le16_to_cpu(sb->csum_type);
	int csize = mfs_csum_size(csum_type);
	u8 calc[MFS_CSUM_SIZE];
	int i;

	printf("superblock: bytenr=%llu, device=%s\n", (unsigned long long)bytenr, dev);
	printf("---------------------------------------------------------\n");
	printf("csum_type\t\t%d (%s)\n", csum_type,
	       mfs_csum_name(csum_type) ? mfs_csum_name(csum_type) : "INVALID");
	printf("csum_size\t\t%d\n", csize);
	printf("csum\t\t\t0x");
	for (i = 0; i < (csize > 0 ? csize : 4); i++)
		printf("%02x", sb->csum[i]);
	if (csize > 0) {
		mfs_csum_compute(csum_type, (const u8 *)sb + MFS_CSUM_FIELD_SIZE,
				 MFS_SUPER_INFO_SIZE - MFS_CSUM_FIELD_SIZE, calc);
		printf(" [%s]", memcmp(calc, sb->csum, csize) ? "DON'T MATCH" : "match");
	}
	printf("\n");
	printf("bytenr\t\t\t%llu\n", (unsigned long long)le64_to_cpu(sb->bytenr));
	printf("flags\t\t\t0x%llx\n", (unsigned long long)le64_to_cpu(sb->flags));
	printf("magic\t\t\t%.8s [%s]\n", (const char *)&sb->magic,
	       le64_to_cpu(sb->magic) == MFS_MAGIC ? "match" : "DON'T MATCH");
	print_uuid("fsid\t\t", sb->fsid, NULL);
	if (le64_to_cpu(sb->incompat_flags) & MFS_FEATURE_INCOMPAT_METADATA_UUID)
		print_uuid("metadata_uuid\t", sb->metadata_uuid, NULL);
	if (le64_to_cpu(sb->flags) & MFS_SUPER_FLAG_CHANGING_FSID)
		print_uuid("pending_fsid\t", sb->pending_fsid, NULL);
	printf("label\t\t\t%.*s\n", MFS_LABEL_SIZE, sb->label);
	printf("format_version\t\t%u\n", le32_to_cpu(sb->format_version));
	printf("generation\t\t%llu\n", (unsigned long long)le64_to_cpu(sb->generation));
	printf("root\t\t\t%llu\n", (unsigned long long)le64_to_cpu(sb->root));
	printf("root_level\t\t%u\n", sb->root_level);
	printf("chunk_root\t\t%llu\n", (unsigned long long)le64_to_cpu(sb->chunk_root));
	printf("chunk_root_level\t%u\n", sb->chunk_root_level);
	printf("root_generation\t\t%llu\n", (unsigned long long)le64_to_cpu(sb->root_generation));
	printf("chunk_root_generation\t%llu\n",
	       (unsigned long long)le64_to_cpu(sb->chunk_root_generation));
	printf("total_bytes\t\t%llu\n", (unsigned long long)le64_to_cpu(sb->total_bytes));
	printf("bytes_used\t\t%llu\n", (unsigned long long)le64_to_cpu(sb->bytes_used));
	printf("sectorsize\t\t%u\n", le32_to_cpu(sb->sectorsize));
	printf("nodesize\t\t%u\n", le32_to_cpu(sb->nodesize));
	printf("stripesize\t\t%u\n", le32_to_cpu(sb->stripesize));
	printf("num_devices\t\t%llu\n", (unsigned long long)le64_to_cpu(sb->num_devices));
	printf("sys_array_size\t\t%u\n", le32_to_cpu(sb->sys_chunk_array_size));
	printf("compat_ro_flags\t\t0x%llx\n", (unsigned long long)le64_to_cpu(sb->compat_ro_flags));
	printf("incompat_flags\t\t0x%llx\n", (unsigned long long)le64_to_cpu(sb->incompat_flags));
	print_flag_words(le64_to_cpu(sb->incompat_flags), incompat_names,
			 ARRAY_SIZE(incompat_names));
	printf("dev_item.devid\t\t%llu\n", (unsigned long long)le64_to_cpu(sb->dev_item.devid));
	print_uuid("dev_item.uuid\t", sb->dev_item.uuid, NULL);
	print_uuid("dev_item.fsid\t", sb->dev_item.fsid, sb->fsid);
	printf("dev_item.total_bytes\t%llu\n",
	       (unsigned long long)le64_to_cpu(sb->dev_item.total_bytes));
	printf("dev_item.bytes_used\t%llu\n",
	       (unsigned long long)le64_to_cpu(sb->dev_item.bytes_used));
	printf("dev_item.generation\t%llu\n",
	       (unsigned long long)le64_to_cpu(sb->dev_item.generation));
	printf("dev_item.flags\t\t0x%llx\n", (unsigned long long)le64_to_cpu(sb->dev_item.flags));
	if (full)
		print_sys_array(sb);
	printf("\n");
}

static int dump_one_copy(struct mfs_io_dev *io, const char *path, int mirror, bool full,
			 bool force, bool quiet_missing)
{
	struct mfs_super_block sb;
	u64 off = mfs_sb_offset(mirror);
	int ret = mfs_read_super_raw(io, mirror, &sb);

	if (ret == -ENOENT) {
		if (!quiet_missing)
			error("superblock copy %d at %llu is past the end of %s", mirror,
			      (unsigned long long)off, path);
		return quiet_missing ? 0 : 1;
	}
	if (ret) {
		error("cannot read superblock on %s at %llu: %s", path,
		      (unsigned long long)off, strerror(-ret));
		return 1;
	}
	if (le64_to_cpu(sb.magic) != MFS_MAGIC && !force) {
		error("bad magic on superblock on %s at %llu (use --force to dump it anyway)",
		      path, (unsigned long long)off);
		return 1;
	}
	dump_super(&sb, off, path, full);
	return 0;
}

static int cmd_inspect_dump_super(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "full", no_argument, NULL, 'f' },
		{ "all", no_argument, NULL, 'a' },
		{ "super", required_argument, NULL, 's' },
		{ "force", no_argument, NULL, 'F' },
		{ NULL, 0, NULL, 0 }
	};
	bool full = false, all = false, force = false;
	int mirror = 0, c, i, m, ret = 0;

	while ((c = getopt_long(argc, argv, "fas:F", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			full = true;
			break;
		case 'a':
			all = true;
			break;
		case 's': {
			char *end;

			mirror = strtol(optarg, &end, 10);
			if (*end || mirror < 0 || mirror >= MFS_SUPER_MIRROR_MAX) {
				error("super mirror should be 0, 1 or 2: %s", optarg);
				return 1;
			}
			break;
		}
		case 'F':
			force = true;
			break;
		default:
			usage_unknown_option(cmd, argv);
		}
	}
	if (check_argc_min(argc - optind, 1))
		return 1;
	for (i = optind; i < argc; i++) {
		struct mfs_io_dev *io;
		int err = mfs_io_open(argv[i], false, false, &io);

		if (err) {
			error("cannot open %s: %s", argv[i], strerror(-err));
			ret = 1;
			continue;
		}
		if (all) {
			for (m = 0; m < MFS_SUPER_MIRROR_MAX; m++)
				ret |= dump_one_copy(io, argv[i], m, full, force, true);
		} else {
			ret |= dump_one_copy(io, argv[i], mirror, full, force, false);
		}
		mfs_io_close(io);
	}
	return ret;
}
DEFINE_SIMPLE_COMMAND(inspect_dump_super, "dump-super");

/* ---------------- dump-tree ---------------- */

static const char * const cmd_inspect_dump_tree_usage[] = {
	"mfs inspect-internal dump-tree [options] <device> [<device>...]",
	"",
	"Dump tree blocks of an unmounted filesystem.",
	"",
	OPTLINE("-t|--tree TREE", "only this tree: root, chunk, extent, dev, fs, csum, or its id"),
	OPTLINE("-b|--block BYTENR", "only this block (repeatable)"),
	NULL
};

static const struct { const char *name; u64 id; } tree_names[] = {
	{ "root", MFS_ROOT_TREE_OBJECTID }, { "extent", MFS_EXTENT_TREE_OBJECTID },
	{ "chunk", MFS_CHUNK_TREE_OBJECTID }, { "dev", MFS_DEV_TREE_OBJECTID },
	{ "device", MFS_DEV_TREE_OBJECTID }, { "fs", MFS_FS_TREE_OBJECTID },
	{ "csum", MFS_CSUM_TREE_OBJECTID },
};

static const char *tree_upper_name(u64 id)
{
	switch (id) {
	case MFS_ROOT_TREE_OBJECTID: return "ROOT_TREE";
	case MFS_EXTENT_TREE_OBJECTID: return "EXTENT_TREE";
	case MFS_CHUNK_TREE_OBJECTID: return "CHUNK_TREE";
	case MFS_DEV_TREE_OBJECTID: return "DEV_TREE";
	case MFS_FS_TREE_OBJECTID: return "FS_TREE";
	case MFS_CSUM_TREE_OBJECTID: return "CSUM_TREE";
	}
	return NULL;
}

static const char *key_type_name(u8 type)
{
	switch (type) {
	case MFS_INODE_ITEM_KEY: return "INODE_ITEM";
	case MFS_INODE_REF_KEY: return "INODE_REF";
	case MFS_XATTR_ITEM_KEY: return "XATTR_ITEM";
	case MFS_ORPHAN_ITEM_KEY: return "ORPHAN_ITEM";
	case MFS_DIR_ITEM_KEY: return "DIR_ITEM";
	case MFS_DIR_INDEX_KEY: return "DIR_INDEX";
	case MFS_EXTENT_DATA_KEY: return "EXTENT_DATA";
	case MFS_EXTENT_CSUM_KEY: return "EXTENT_CSUM";
	case MFS_ROOT_ITEM_KEY: return "ROOT_ITEM";
	case MFS_EXTENT_ITEM_KEY: return "EXTENT_ITEM";
	case MFS_BLOCK_GROUP_ITEM_KEY: return "BLOCK_GROUP_ITEM";
	case MFS_DEV_EXTENT_KEY: return "DEV_EXTENT";
	case MFS_DEV_ITEM_KEY: return "DEV_ITEM";
	case MFS_CHUNK_ITEM_KEY: return "CHUNK_ITEM";
	case MFS_BALANCE_CHUNK_KEY: return "BALANCE_CHUNK";
	case MFS_BALANCE_ITEM_KEY: return "BALANCE_ITEM";
	case MFS_PERSISTENT_ITEM_KEY: return "PERSISTENT_ITEM";
	case MFS_DEV_REPLACE_KEY: return "DEV_REPLACE";
	}
	return NULL;
}

static void print_objectid(u64 objectid, u8 type)
{
	const char *n = NULL;

	if (type == MFS_DEV_ITEM_KEY && objectid == MFS_DEV_ITEMS_OBJECTID)
		n = "DEV_ITEMS";
	else if (type == MFS_CHUNK_ITEM_KEY && objectid == MFS_FIRST_CHUNK_TREE_OBJECTID)
		n = "FIRST_CHUNK_TREE";
	else if (type == MFS_ROOT_ITEM_KEY)
		n = tree_upper_name(objectid);
	else if (objectid == MFS_EXTENT_CSUM_OBJECTID)
		n = "EXTENT_CSUM";
	else if (objectid == MFS_ORPHAN_OBJECTID)
		n = "ORPHAN";
	if (n)
		printf("%s", n);
	else
		printf("%llu", (unsigned long long)objectid);
}

static void print_key(const struct mfs_key *k)
{
	const char *t = key_type_name(k->type);

	printf("key (");
	print_objectid(k->objectid, k->type);
	if (t)
		printf(" %s %llu)", t, (unsigned long long)k->offset);
	else
		printf(" UNKNOWN.%u %llu)", k->type, (unsigned long long)k->offset);
}

/* ---- fs and csum tree items, laid out as btrfs inspect-internal prints them ---- */

static void print_timespec(const char *name, const struct mfs_timespec *ts)
{
	time_t sec = le64_to_cpu(ts->sec);
	char buf[64] = "";
	struct tm tm;

	if (localtime_r(&sec, &tm))
		strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
	printf("\t\t%s %llu.%u (%s)\n", name, (unsigned long long)le64_to_cpu(ts->sec),
	       le32_to_cpu(ts->nsec), buf);
}

static void print_inode_item(const struct mfs_inode_item *ii)
{
	printf("\t\tgeneration %llu transid %llu size %llu nbytes %llu\n",
	       (unsigned long long)le64_to_cpu(ii->generation),
	       (unsigned long long)le64_to_cpu(ii->transid),
	       (unsigned long long)le64_to_cpu(ii->size),
	       (unsigned long long)le64_to_cpu(ii->nbytes));
	printf("\t\tmode %o links %u uid %u gid %u rdev %llu\n", le32_to_cpu(ii->mode),
	       le32_to_cpu(ii->nlink), le32_to_cpu(ii->uid), le32_to_cpu(ii->gid),
	       (unsigned long long)le64_to_cpu(ii->rdev));
	printf("\t\tflags 0x%llx dir_index_next %llu\n",
	       (unsigned long long)le64_to_cpu(ii->flags),
	       (unsigned long long)le64_to_cpu(ii->dir_index_next));
	print_timespec("atime", &ii->atime);
	print_timespec("ctime", &ii->ctime);
	print_timespec("mtime", &ii->mtime);
	print_timespec("otime", &ii->otime);
}

static const char *dir_type_name(u8 type)
{
	static const char * const names[] = {
		[MFS_FT_UNKNOWN] = "UNKNOWN", [MFS_FT_REG_FILE] = "FILE", [MFS_FT_DIR] = "DIR",
		[MFS_FT_CHRDEV] = "CHRDEV", [MFS_FT_BLKDEV] = "BLKDEV", [MFS_FT_FIFO] = "FIFO",
		[MFS_FT_SOCK] = "SOCK", [MFS_FT_SYMLINK] = "SYMLINK",
	};

	return type < ARRAY_SIZE(names) ? names[type] : "UNKNOWN";
}

/* Names are bytes: unprintable ones are shown escaped. */
static void print_name(const u8 *name, u32 len)
{
	u32 i;

	for (i = 0; i < len; i++) {
		if (name[i] >= 0x20 && name[i] < 0x7f && name[i] != '\\')
			putchar(name[i]);
		else
			printf("\\x%02x", name[i]);
	}
}

static void print_dir_item(const u8 *p, u32 size)
{
	struct mfs_entry_iter it;
	struct mfs_entry e;
	int ret;

	mfs_entry_iter_init(&it, p, size, false);
	while ((ret = mfs_entry_next(&it, &e)) == 1) {
		printf("\t\tlocation key (%llu INODE_ITEM 0) type %s\n",
		       (unsigned long long)le64_to_cpu(e.di->child), dir_type_name(e.di->type));
		printf("\t\tindex %llu transid %llu name_len %u\n",
		       (unsigned long long)le64_to_cpu(e.di->index),
		       (unsigned long long)le64_to_cpu(e.di->transid), e.name_len);
		printf("\t\tname: ");
		print_name(e.name, e.name_len);
		printf("\n");
	}
	if (ret < 0)
		printf("\t\t(truncated entry)\n");
}

static void print_xattr_item(const u8 *p, u32 size)
{
	struct mfs_entry_iter it;
	struct mfs_entry e;
	int ret;

	mfs_entry_iter_init(&it, p, size, true);
	while ((ret = mfs_entry_next(&it, &e)) == 1) {
		printf("\t\tdata_len %u name_len %u\n", e.value_len, e.name_len);
		printf("\t\tname: ");
		print_name(e.name, e.name_len);
		printf("\n\t\tdata ");
		print_name(e.value, e.value_len);
		printf("\n");
	}
	if (ret < 0)
		printf("\t\t(truncated entry)\n");
}

static void print_file_extent(const struct mfs_file_extent_item *fi, u32 size)
{
	static const char * const types[] = { "inline", "regular", "prealloc" };
	const char *type = fi->type < ARRAY_SIZE(types) ? types[fi->type] : "unknown";
	const char *comp = fi->compression == MFS_COMPRESS_NONE ? "none" :
			   fi->compression == MFS_COMPRESS_ZLIB ? "zlib" : "unknown";

	printf("\t\tgeneration %llu type %u (%s)\n",
	       (unsigned long long)le64_to_cpu(fi->generation), fi->type, type);
	if (fi->type == MFS_FILE_EXTENT_INLINE) {
		printf("\t\tinline extent data size %u compression %u (%s)\n",
		       size - MFS_FILE_EXTENT_INLINE_DATA_START, fi->compression, comp);
		return;
	}
	if (size != sizeof(*fi))
		return;
	printf("\t\textent data disk byte %llu nr %llu\n",
	       (unsigned long long)le64_to_cpu(fi->disk_bytenr),
	       (unsigned long long)le64_to_cpu(fi->disk_num_bytes));
	printf("\t\textent data offset %llu nr %llu ram %llu\n",
	       (unsigned long long)le64_to_cpu(fi->offset),
	       (unsigned long long)le64_to_cpu(fi->num_bytes),
	       (unsigned long long)le64_to_cpu(fi->ram_bytes));
	printf("\t\textent compression %u (%s)\n", fi->compression, comp);
}

/* One checksum per 4 KiB of the data extent starting at the key offset. */
static void print_csum_item(struct mfs_fs_info *fs, const struct mfs_key *k, const u8 *p,
			    u32 size)
{
	u32 n = fs->csum_size ? size / fs->csum_size : 0, i;
	int b;

	printf("\t\trange start %llu end %llu length %llu\n", (unsigned long long)k->offset,
	       (unsigned long long)(k->offset + (u64)n * 4096), (unsigned long long)n * 4096);
	for (i = 0; i < n; i++) {
		printf("\t\t[%llu] 0x", (unsigned long long)(k->offset + (u64)i * 4096));
		for (b = 0; b < fs->csum_size; b++)
			printf("%02x", p[i * fs->csum_size + b]);
		printf("\n");
	}
}

/* A block group item: used bytes, type, profile, REDUCED and the profile asked for. */
static void print_bg_item(const struct mfs_block_group_item *b)
{
	u64 f = le64_to_cpu(b->flags);
	u64 asked = (f & MFS_BLOCK_GROUP_ASKED_MASK) >> MFS_BLOCK_GROUP_ASKED_SHIFT;

	printf("\t\tblock group used %llu chunk_objectid %llu flags %s|%s%s",
	       (unsigned long long)le64_to_cpu(b->used),
	       (unsigned long long)le64_to_cpu(b->chunk_objectid),
	       mfs_bg_type_name(f), mfs_profile_ui_name(f),
	       (f & MFS_BLOCK_GROUP_REDUCED) ? "|REDUCED" : "");
	if (asked)
		printf(" (asked %s)", mfs_profile_ui_name(asked));
	printf("\n");
}

/* A chunk copied part of the way: how far, and the pieces of its new layout. */
static void print_balance_chunk(const u8 *p, u32 size)
{
	const struct mfs_balance_chunk_item *h = (const void *)p;
	u32 off = sizeof(*h), i, n;

	if (size < sizeof(*h))
		return;
	n = le32_to_cpu(h->nr_pieces);
	printf("\t\tcopied %llu bytes_done %llu generation %llu pieces %u\n",
	       (unsigned long long)le64_to_cpu(h->copied),
	       (unsigned long long)le64_to_cpu(h->bytes_done),
	       (unsigned long long)le64_to_cpu(h->generation), n);
	for (i = 0; i < n && off + sizeof(mfs_le64) + sizeof(struct mfs_chunk) <= size; i++) {
		const struct mfs_chunk *c = (const void *)(p + off + sizeof(mfs_le64));
		u32 csize = mfs_chunk_item_size(le16_to_cpu(c->num_stripes));
		mfs_le64 logical;

		if (off + sizeof(logical) + csize > size)
			break;
		memcpy(&logical, p + off, sizeof(logical));
		printf("\t\tpiece %u logical %llu\n", i, (unsigned long long)le64_to_cpu(logical));
		print_chunk_item(c, 1);
		off += sizeof(logical) + csize;
	}
}

static void print_item(struct mfs_fs_info *fs, struct extent_buffer *eb, int slot,
		       const struct mfs_key *k)
{
	const void *p = leaf_item_data(eb, slot);
	u32 size = leaf_item_size(eb, slot);

	switch (k->type) {
	case MFS_INODE_ITEM_KEY:
		if (size == sizeof(struct mfs_inode_item))
			print_inode_item(p);
		break;
	case MFS_DIR_ITEM_KEY:
	case MFS_DIR_INDEX_KEY:
		print_dir_item(p, size);
		break;
	case MFS_XATTR_ITEM_KEY:
		print_xattr_item(p, size);
		break;
	case MFS_EXTENT_DATA_KEY:
		if (size >= MFS_FILE_EXTENT_INLINE_DATA_START)
			print_file_extent(p, size);
		break;
	case MFS_EXTENT_CSUM_KEY:
		print_csum_item(fs, k, p, size);
		break;
	case MFS_ORPHAN_ITEM_KEY:
		printf("\t\torphan item\n");
		break;
	case MFS_DEV_ITEM_KEY:
		if (size == sizeof(struct mfs_dev_item)) {
			const struct mfs_dev_item *d = p;
			char uuid[37];

			uuid_unparse(d->uuid, uuid);
			printf("\t\tdevid %llu total_bytes %llu bytes_used %llu flags 0x%llx\n",
			       (unsigned long long)le64_to_cpu(d->devid),
			       (unsigned long long)le64_to_cpu(d->total_bytes),
			       (unsigned long long)le64_to_cpu(d->bytes_used),
			       (unsigned long long)le64_to_cpu(d->flags));
			printf("\t\tuuid %s\n", uuid);
		}
		break;
	case MFS_CHUNK_ITEM_KEY:
		if (size >= sizeof(struct mfs_chunk) &&
		    size == mfs_chunk_item_size(le16_to_cpu(((const struct mfs_chunk *)p)->num_stripes)))
			print_chunk_item(p, 1);
		break;
	case MFS_BALANCE_CHUNK_KEY:
		print_balance_chunk(p, size);
		break;
	case MFS_PERSISTENT_ITEM_KEY:
		if (k->objectid == MFS_BALANCE_OBJECTID && size == sizeof(struct mfs_replace_item)) {
			const struct mfs_replace_item *r = p;
			u64 outcome = le64_to_cpu(r->outcome);

			printf("		replace %s progress %llu start_time %llu end_time %llu\n",
			       outcome == MFS_REPLACE_ITEM_FINISHED ? "finished" :
			       outcome == MFS_REPLACE_ITEM_CANCELED ? "canceled" : "unknown",
			       (unsigned long long)le64_to_cpu(r->progress),
			       (unsigned long long)le64_to_cpu(r->start_time),
			       (unsigned long long)le64_to_cpu(r->end_time));
			printf("		src_devid %llu tgt_devid %llu write_errs %llu read_errs %llu\n",
			       (unsigned long long)le64_to_cpu(r->src_devid),
			       (unsigned long long)le64_to_cpu(r->tgt_devid),
			       (unsigned long long)le64_to_cpu(r->write_errs),
			       (unsigned long long)le64_to_cpu(r->read_errs));
		}
		break;
	case MFS_DEV_EXTENT_KEY:
		if (size == sizeof(struct mfs_dev_extent)) {
			const struct mfs_dev_extent *d = p;

			printf("\t\tchunk_offset %llu length %llu\n",
			       (unsigned long long)le64_to_cpu(d->chunk_offset),
			       (unsigned long long)le64_to_cpu(d->length));
		}
		break;
	case MFS_BLOCK_GROUP_ITEM_KEY:
		if (size == sizeof(struct mfs_block_group_item))
			print_bg_item(p);
		break;
	case MFS_EXTENT_ITEM_KEY:
		if (size == sizeof(struct mfs_extent_item)) {
			const struct mfs_extent_item *e = p;
			u64 f = le64_to_cpu(e->flags);

			printf("\t\trefs %llu gen %llu flags %s\n",
			       (unsigned long long)le64_to_cpu(e->refs),
			       (unsigned long long)le64_to_cpu(e->generation),
			       f & MFS_EXTENT_FLAG_TREE_BLOCK ? "TREE_BLOCK" : "DATA");
			if (f & MFS_EXTENT_FLAG_TREE_BLOCK)
				printf("\t\ttree block owner %llu level %llu\n",
				       (unsigned long long)le64_to_cpu(e->owner_root),
				       (unsigned long long)le64_to_cpu(e->owner_objectid));
			else
				printf("\t\tdata owner root %llu inode %llu offset %llu\n",
				       (unsigned long long)le64_to_cpu(e->owner_root),
				       (unsigned long long)le64_to_cpu(e->owner_objectid),
				       (unsigned long long)le64_to_cpu(e->owner_offset));
		}
		break;
	case MFS_ROOT_ITEM_KEY:
		if (size == sizeof(struct mfs_root_item)) {
			const struct mfs_root_item *r = p;

			printf("\t\tgeneration %llu root_dirid %llu bytenr %llu level %u\n",
			       (unsigned long long)le64_to_cpu(r->generation),
			       (unsigned long long)le64_to_cpu(r->root_dirid),
			       (unsigned long long)le64_to_cpu(r->bytenr), r->level);
		}
		break;
	}
}

static void dump_block(struct mfs_fs_info *fs, struct extent_buffer *eb)
{
	const char *owner = tree_upper_name(eb_owner(eb));
	int n = eb_nritems(eb), i;
	struct mfs_key k;
	char uuid[37];

	if (eb_level(eb) == 0) {
		u32 used = 0;

		for (i = 0; i < n; i++)
			used += sizeof(struct mfs_item) + leaf_item_size(eb, i);
		printf("leaf %llu items %d free space %u generation %llu owner %s\n",
		       (unsigned long long)eb->start, n, leaf_data_size(fs) - used,
		       (unsigned long long)eb_generation(eb), owner ? owner : "?");
	} else {
		printf("node %llu level %d items %d free %u generation %llu owner %s\n",
		       (unsigned long long)eb->start, eb_level(eb), n, node_max_ptrs(fs) - n,
		       (unsigned long long)eb_generation(eb), owner ? owner : "?");
	}
	uuid_unparse(eb_header(eb)->fsid, uuid);
	printf("fs uuid %s\n", uuid);
	for (i = 0; i < n; i++) {
		if (eb_level(eb) == 0) {
			leaf_item_key(eb, i, &k);
			printf("\titem %d ", i);
			print_key(&k);
			printf(" itemoff %u itemsize %u\n", le32_to_cpu(leaf_item(eb, i)->offset),
			       leaf_item_size(eb, i));
			print_item(fs, eb, i, &k);
		} else {
			node_key(eb, i, &k);
			printf("\t");
			print_key(&k);
			printf(" block %llu gen %llu\n", (unsigned long long)node_blockptr(eb, i),
			       (unsigned long long)le64_to_cpu(node_ptr(eb, i)->generation));
		}
	}
}

/* Depth-first dump of a whole tree; a block that cannot be read is reported. */
static int dump_subtree(struct mfs_fs_info *fs, u64 bytenr, const struct mfs_tree_check *chk)
{
	struct extent_buffer *eb;
	int i, ret = mfs_read_tree_block(fs, bytenr, chk, &eb);

	if (ret) {
		error("cannot read tree block %llu: %s", (unsigned long long)bytenr,
		      ret == -EUCLEAN ? "corrupt (no good copy)" : strerror(-ret));
		return 1;
	}
	dump_block(fs, eb);
	for (i = 0; eb_level(eb) > 0 && i < (int)eb_nritems(eb); i++) {
		struct mfs_tree_check child;
		struct mfs_key key;

		mfs_child_check(eb, i, chk->owner, &key, &child);
		ret |= dump_subtree(fs, node_blockptr(eb, i), &child);
	}
	mfs_eb_put(fs, eb);
	return ret;
}

static int dump_root(struct mfs_fs_info *fs, struct mfs_root *root)
{
	const char *name = tree_upper_name(root ? root->objectid : 0);
	struct mfs_tree_check chk = { .level = -1 };
	char lower[32];
	int i;

	if (!root || !root->node)
		return 0;
	for (i = 0; name[i] && name[i] != '_' && i < 31; i++)
		lower[i] = name[i] + ('a' - 'A');
	lower[i] = 0;
	printf("%s tree\n", lower);
	chk.level = eb_level(root->node);
	chk.owner = root->objectid;
	return dump_subtree(fs, root->node->start, &chk);
}

static int parse_tree_arg(const char *arg, u64 *id)
{
	size_t i;
	char *end;

	for (i = 0; i < ARRAY_SIZE(tree_names); i++) {
		size_t n = strlen(tree_names[i].name);

		if (!strcasecmp(arg, tree_names[i].name) ||
		    (!strncasecmp(arg, tree_names[i].name, n) && !strcasecmp(arg + n, "_tree"))) {
			*id = tree_names[i].id;
			return 0;
		}
	}
	*id = strtoull(arg, &end, 10);
	if (*end || !tree_upper_name(*id))
		return -EINVAL;
	return 0;
}

static int cmd_inspect_dump_tree(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "tree", required_argument, NULL, 't' },
		{ "block", required_argument, NULL, 'b' },
		{ NULL, 0, NULL, 0 }
	};
	u64 tree = 0, blocks[32];
	int nblocks = 0, c, i, ret = 0;
	struct mfs_fs_info *fs;

	while ((c = getopt_long(argc, argv, "t:b:", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (parse_tree_arg(optarg, &tree)) {
				error("unrecognized tree value: %s", optarg);
				return 1;
			}
			break;
		case 'b': {
			char *end;

			if (nblocks == (int)ARRAY_SIZE(blocks)) {
				error("too many -b options (at most %zu)", ARRAY_SIZE(blocks));
				return 1;
			}
			blocks[nblocks] = strtoull(optarg, &end, 10);
			if (*end) {
				error("invalid block number: %s", optarg);
				return 1;
			}
			nblocks++;
			break;
		}
		default:
			usage_unknown_option(cmd, argv);
		}
	}
	if (check_argc_min(argc - optind, 1))
		return 1;
	if (mfs_open_for_cmd((const char * const *)argv + optind, argc - optind,
			     MFS_OPEN_PARTIAL | MFS_OPEN_NO_EXCL, &fs))
		return 1;
	printf("mfs v%s\n", MFS_VERSION);
	if (nblocks) {
		for (i = 0; i < nblocks; i++) {
			struct extent_buffer *eb;
			struct mfs_tree_check any = { .level = -1 };
			int err = mfs_read_tree_block(fs, blocks[i], &any, &eb);

			if (err) {
				error("cannot read tree block %llu: %s", (unsigned long long)blocks[i],
				      err == -EUCLEAN ? "corrupt or not a tree block" : strerror(-err));
				ret = 1;
				continue;
			}
			dump_block(fs, eb);
			mfs_eb_put(fs, eb);
		}
	} else {
		struct mfs_root *roots[] = { fs->tree_root, fs->chunk_root, fs->extent_root,
					     fs->dev_root, fs->fs_root, fs->csum_root };
		static const u64 ids[] = { MFS_ROOT_TREE_OBJECTID, MFS_CHUNK_TREE_OBJECTID,
					   MFS_EXTENT_TREE_OBJECTID, MFS_DEV_TREE_OBJECTID,
					   MFS_FS_TREE_OBJECTID, MFS_CSUM_TREE_OBJECTID };
		static const char * const names[] = { "root", "chunk", "extent", "device", "fs",
						      "csum" };

		for (i = 0; i < (int)ARRAY_SIZE(roots); i++) {
			if (tree && ids[i] != tree)
				continue;
			if (!roots[i] || !roots[i]->node) {
				/* an unreadable root must not look like an empty dump */
				error("%s tree root cannot be read", names[i]);
				ret = 1;
				continue;
			}
			ret |= dump_root(fs, roots[i]);
		}
	}
	mfs_free_fs_info(fs);
	return ret;
}
DEFINE_SIMPLE_COMMAND(inspect_dump_tree, "dump-tree");

static const char * const inspect_cmd_group_usage[] = {
	"mfs inspect-internal <command> <args>",
	NULL
};

static const struct cmd_group inspect_cmd_group = {
	inspect_cmd_group_usage, NULL, {
		&cmd_struct_inspect_dump_super,
		&cmd_struct_inspect_dump_tree,
		NULL
	}
};
DEFINE_GROUP_COMMAND(inspect, "inspect-internal");
