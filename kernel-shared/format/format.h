/*
 * The mfs on-disk format, v1: every structure that reaches a device.
 * Documentation/on-disk-format.md is the byte-offset reference for each one.
 */
#ifndef MFS_FORMAT_H
#define MFS_FORMAT_H

#include <assert.h>
#include "kernel-shared/format/kerncompat.h"

#define MFS_MAGIC		0x2131765f53464d5fULL	/* "_MFS_v1!" */
#define MFS_FORMAT_VERSION	1

#define MFS_SUPER_INFO_OFFSET	SZ_64K
#define MFS_SUPER_INFO_SIZE	4096
#define MFS_SUPER_MIRROR_MAX	3
#define MFS_SUPER_MIRROR_SHIFT	12
/* Nothing is allocated below this offset on any device. */
#define MFS_DEVICE_RESERVED	SZ_1M

#define MFS_CSUM_FIELD_SIZE	32
#define MFS_FSID_SIZE		16
#define MFS_UUID_SIZE		16
#define MFS_LABEL_SIZE		256
#define MFS_SYSTEM_CHUNK_ARRAY_SIZE 2048
#define MFS_STRIPE_LEN		SZ_64K
/*
 * The sector: the unit of data extents and of one data checksum, and the
 * only sectorsize a superblock may carry (format §2).
 */
#define MFS_SECTOR		4096ULL
#define MFS_MAX_LEVEL		8
#define MFS_NAME_LEN		255

/* Superblock copy i lives at 64 KiB, 64 MiB, 256 GiB. */
static inline u64 mfs_sb_offset(int mirror)
{
	u64 start = 16 * SZ_1K;

	if (mirror)
		return start << (MFS_SUPER_MIRROR_SHIFT * mirror);
	return MFS_SUPER_INFO_OFFSET;
}

/* ---- tree ids (objectids of ROOT_ITEMs) ---- */
#define MFS_ROOT_TREE_OBJECTID		1ULL
#define MFS_EXTENT_TREE_OBJECTID	2ULL
#define MFS_CHUNK_TREE_OBJECTID		3ULL
#define MFS_DEV_TREE_OBJECTID		4ULL
#define MFS_FS_TREE_OBJECTID		5ULL
#define MFS_CSUM_TREE_OBJECTID		7ULL

/* Special objectids used in keys. */
#define MFS_DEV_ITEMS_OBJECTID		1ULL
#define MFS_FIRST_CHUNK_TREE_OBJECTID	256ULL
#define MFS_BALANCE_OBJECTID		((u64)-4)
#define MFS_DEV_STATS_OBJECTID		0ULL
#define MFS_EXTENT_CSUM_OBJECTID	((u64)-10)
#define MFS_FIRST_FREE_OBJECTID		256ULL
#define MFS_ROOT_DIR_OBJECTID		256ULL

/* ---- key types ---- */
#define MFS_INODE_ITEM_KEY		1
#define MFS_INODE_REF_KEY		12
#define MFS_XATTR_ITEM_KEY		24
#define MFS_ORPHAN_ITEM_KEY		48
#define MFS_DIR_ITEM_KEY		84
#define MFS_DIR_INDEX_KEY		96
#define MFS_EXTENT_DATA_KEY		108
#define MFS_EXTENT_CSUM_KEY		128
#define MFS_ROOT_ITEM_KEY		132
#define MFS_EXTENT_ITEM_KEY		168
#define MFS_BLOCK_GROUP_ITEM_KEY	192
#define MFS_DEV_EXTENT_KEY		204
#define MFS_DEV_ITEM_KEY		216
#define MFS_CHUNK_ITEM_KEY		228
#define MFS_BALANCE_CHUNK_KEY		247
#define MFS_BALANCE_ITEM_KEY		248
#define MFS_PERSISTENT_ITEM_KEY		249
#define MFS_DEV_REPLACE_KEY		250

/* ---- block group / chunk type bits (same values as btrfs) ---- */
#define MFS_BLOCK_GROUP_DATA		(1ULL << 0)
#define MFS_BLOCK_GROUP_SYSTEM		(1ULL << 1)
#define MFS_BLOCK_GROUP_METADATA	(1ULL << 2)
#define MFS_BLOCK_GROUP_RAID0		(1ULL << 3)
#define MFS_BLOCK_GROUP_RAID1		(1ULL << 4)
#define MFS_BLOCK_GROUP_DUP		(1ULL << 5)
#define MFS_BLOCK_GROUP_RAID10		(1ULL << 6)
#define MFS_BLOCK_GROUP_RAID5		(1ULL << 7)
#define MFS_BLOCK_GROUP_RAID6		(1ULL << 8)
#define MFS_BLOCK_GROUP_RAID1C3		(1ULL << 9)
#define MFS_BLOCK_GROUP_RAID1C4		(1ULL << 10)
#define MFS_BLOCK_GROUP_TYPE_MASK	(MFS_BLOCK_GROUP_DATA | \
					 MFS_BLOCK_GROUP_SYSTEM | \
					 MFS_BLOCK_GROUP_METADATA)
#define MFS_BLOCK_GROUP_PROFILE_MASK	(MFS_BLOCK_GROUP_RAID0 | \
					 MFS_BLOCK_GROUP_RAID1 | \
					 MFS_BLOCK_GROUP_DUP | \
					 MFS_BLOCK_GROUP_RAID10 | \
					 MFS_BLOCK_GROUP_RAID5 | \
					 MFS_BLOCK_GROUP_RAID6 | \
					 MFS_BLOCK_GROUP_RAID1C3 | \
					 MFS_BLOCK_GROUP_RAID1C4)
/*
 * In a block group item's flags only, never in a chunk's type: the chunk
 * got a less redundant profile than the filesystem asks for because
 * devices were missing when it was allocated (a degraded mount), and must
 * get the requested one back (format §7.4). Not a btrfs bit.
 */
#define MFS_BLOCK_GROUP_REDUCED		(1ULL << 11)
/*
 * With REDUCED, in the same flags: the profile the filesystem asked for
 * when the chunk was allocated, its profile bits shifted left by 32
 * (format §7.4), so that the profile asked for is known even when every
 * chunk of the type is reduced. 0 in an item written before: inferred
 * from the other chunks.
 */
#define MFS_BLOCK_GROUP_ASKED_SHIFT	32
#define MFS_BLOCK_GROUP_ASKED_MASK	(MFS_BLOCK_GROUP_PROFILE_MASK << MFS_BLOCK_GROUP_ASKED_SHIFT)

/* Superblock flags. */
#define MFS_SUPER_FLAG_SEEDING		(1ULL << 32)
/* Set by mkfs until its last commit: such a filesystem never mounts. */
#define MFS_SUPER_FLAG_CHANGING		(1ULL << 33)
/* A change of the fsid to pending_fsid is under way (change-uuid): never mounts. */
#define MFS_SUPER_FLAG_CHANGING_FSID	(1ULL << 34)

/* Feature flags (incompat): a reader that does not know one must refuse. */
#define MFS_FEATURE_INCOMPAT_RAID56	(1ULL << 0)
#define MFS_FEATURE_INCOMPAT_RAID1C34	(1ULL << 1)
#define MFS_FEATURE_INCOMPAT_COMPRESS_ZLIB (1ULL << 2)
/* tree blocks and DEV_ITEMs carry the superblock's metadata_uuid, not its fsid */
#define MFS_FEATURE_INCOMPAT_METADATA_UUID (1ULL << 3)
#define MFS_FEATURE_INCOMPAT_SUPP	(MFS_FEATURE_INCOMPAT_RAID56 | \
					 MFS_FEATURE_INCOMPAT_RAID1C34 | \
					 MFS_FEATURE_INCOMPAT_COMPRESS_ZLIB | \
					 MFS_FEATURE_INCOMPAT_METADATA_UUID)

/* ---- keys ---- */
struct mfs_disk_key {
	mfs_le64 objectid;
	u8 type;
	mfs_le64 offset;
} __attribute__((packed));
static_assert(sizeof(struct mfs_disk_key) == 17, "disk key");

/* In-memory key, host order; compared objectid, type, offset. */
struct mfs_key {
	u64 objectid;
	u8 type;
	u64 offset;
};

static inline void mfs_disk_key_to_cpu(struct mfs_key *k, const struct mfs_disk_key *d)
{
	k->objectid = le64_to_cpu(d->objectid);
	k->type = d->type;
	k->offset = le64_to_cpu(d->offset);
}

static inline void mfs_cpu_key_to_disk(struct mfs_disk_key *d, const struct mfs_key *k)
{
	d->objectid = cpu_to_le64(k->objectid);
	d->type = k->type;
	d->offset = cpu_to_le64(k->offset);
}

static inline int mfs_comp_keys(const struct mfs_key *a, const struct mfs_key *b)
{
	if (a->objectid != b->objectid)
		return a->objectid < b->objectid ? -1 : 1;
	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	if (a->offset != b->offset)
		return a->offset < b->offset ? -1 : 1;
	return 0;
}

/* ---- device item: one per device, in the chunk tree and the superblock ---- */
#define MFS_DEV_STATE_REPLACE_TARGET	(1ULL << 0)
#define MFS_DEV_STATE_DELETING		(1ULL << 1)
#define MFS_DEV_STATE_NOALLOC		(1ULL << 2)
#define MFS_DEV_STATE_REPLACE_SOURCE	(1ULL << 3)
/* a hot spare: holds nothing until a replace of a missing or failing member takes it */
#define MFS_DEV_STATE_SPARE		(1ULL << 4)

struct mfs_dev_item {
	mfs_le64 devid;
	mfs_le64 total_bytes;	/* size the filesystem uses on this device */
	mfs_le64 bytes_used;	/* bytes allocated to dev extents */
	mfs_le64 generation;	/* generation the item was last written */
	mfs_le64 flags;		/* MFS_DEV_STATE_* */
	mfs_le32 sector_size;
	mfs_le32 reserved0;
	u8 uuid[MFS_UUID_SIZE];
	u8 fsid[MFS_FSID_SIZE];
} __attribute__((packed));
static_assert(sizeof(struct mfs_dev_item) == 80, "dev item");

/* ---- superblock ---- */
struct mfs_super_block {
	u8 csum[MFS_CSUM_FIELD_SIZE];
	u8 fsid[MFS_FSID_SIZE];
	mfs_le64 bytenr;			/* physical offset of this copy */
	mfs_le64 flags;
	mfs_le64 magic;
	mfs_le64 generation;
	mfs_le64 root;			/* logical address of the root tree root */
	mfs_le64 chunk_root;		/* logical address of the chunk tree root */
	mfs_le64 chunk_root_generation;
	mfs_le64 total_bytes;
	mfs_le64 bytes_used;
	mfs_le64 num_devices;
	mfs_le64 incompat_flags;
	mfs_le64 compat_ro_flags;
	mfs_le32 sectorsize;
	mfs_le32 nodesize;
	mfs_le32 stripesize;
	mfs_le32 sys_chunk_array_size;
	mfs_le16 csum_type;
	u8 root_level;
	u8 chunk_root_level;
	mfs_le32 format_version;
	struct mfs_dev_item dev_item;
	char label[MFS_LABEL_SIZE];
	u8 sys_chunk_array[MFS_SYSTEM_CHUNK_ARRAY_SIZE];
	mfs_le64 root_generation;	/* generation of the root tree's root block */
	/* INCOMPAT_METADATA_UUID: the fsid tree blocks carry (the fsid before a change) */
	u8 metadata_uuid[MFS_FSID_SIZE];
	/* SUPER_FLAG_CHANGING_FSID: the fsid being changed to */
	u8 pending_fsid[MFS_FSID_SIZE];
	u8 reserved[1504];
} __attribute__((packed));
static_assert(sizeof(struct mfs_super_block) == MFS_SUPER_INFO_SIZE, "superblock");

/* ---- tree blocks ---- */
struct mfs_header {
	u8 csum[MFS_CSUM_FIELD_SIZE];
	u8 fsid[MFS_FSID_SIZE];
	mfs_le64 bytenr;		/* logical address of this block */
	mfs_le64 flags;
	mfs_le64 generation;	/* transaction that wrote it */
	mfs_le64 owner;		/* tree objectid */
	mfs_le32 nritems;
	u8 level;
} __attribute__((packed));
static_assert(sizeof(struct mfs_header) == 85, "header");

/* Leaf item; data lives at header end + offset, packed from the block end. */
struct mfs_item {
	struct mfs_disk_key key;
	mfs_le32 offset;
	mfs_le32 size;
} __attribute__((packed));
static_assert(sizeof(struct mfs_item) == 25, "item");

struct mfs_key_ptr {
	struct mfs_disk_key key;
	mfs_le64 blockptr;
	mfs_le64 generation;
} __attribute__((packed));
static_assert(sizeof(struct mfs_key_ptr) == 33, "key ptr");

/* ---- chunk tree: chunk items, key (FIRST_CHUNK_TREE, CHUNK_ITEM, logical) ---- */
struct mfs_stripe {
	mfs_le64 devid;
	mfs_le64 offset;		/* physical start on the device */
	u8 dev_uuid[MFS_UUID_SIZE];
} __attribute__((packed));
static_assert(sizeof(struct mfs_stripe) == 32, "stripe");

struct mfs_chunk {
	mfs_le64 length;		/* logical length */
	mfs_le64 owner;
	mfs_le64 stripe_len;
	mfs_le64 type;		/* MFS_BLOCK_GROUP_* */
	mfs_le32 io_align;
	mfs_le32 io_width;
	mfs_le32 sector_size;
	mfs_le16 num_stripes;
	mfs_le16 sub_stripes;
	struct mfs_stripe stripe[];
} __attribute__((packed));
static_assert(sizeof(struct mfs_chunk) == 48, "chunk");

static inline size_t mfs_chunk_item_size(int num_stripes)
{
	return sizeof(struct mfs_chunk) + (size_t)num_stripes * sizeof(struct mfs_stripe);
}

/* ---- device tree: key (devid, DEV_EXTENT, physical) ---- */
struct mfs_dev_extent {
	mfs_le64 chunk_offset;	/* logical start of the owning chunk */
	mfs_le64 length;
} __attribute__((packed));
static_assert(sizeof(struct mfs_dev_extent) == 16, "dev extent");

/* ---- extent tree ---- */
/* key (logical, BLOCK_GROUP_ITEM, length) */
struct mfs_block_group_item {
	mfs_le64 used;
	mfs_le64 chunk_objectid;
	mfs_le64 flags;
} __attribute__((packed));
static_assert(sizeof(struct mfs_block_group_item) == 24, "bg item");

/* key (bytenr, EXTENT_ITEM, num_bytes); one owner back-reference inline */
#define MFS_EXTENT_FLAG_DATA		(1ULL << 0)
#define MFS_EXTENT_FLAG_TREE_BLOCK	(1ULL << 1)
struct mfs_extent_item {
	mfs_le64 refs;
	mfs_le64 generation;
	mfs_le64 flags;
	mfs_le64 owner_root;	/* tree that references the extent */
	mfs_le64 owner_objectid;	/* data: inode number; tree block: level */
	mfs_le64 owner_offset;	/* data: file offset; tree block: 0 */
} __attribute__((packed));
static_assert(sizeof(struct mfs_extent_item) == 48, "extent item");

/* ---- root tree: key (tree objectid, ROOT_ITEM, 0) ---- */
struct mfs_root_item {
	mfs_le64 bytenr;
	mfs_le64 generation;
	mfs_le64 root_dirid;
	mfs_le64 bytes_used;
	mfs_le64 flags;
	u8 level;
	u8 reserved[23];
} __attribute__((packed));
static_assert(sizeof(struct mfs_root_item) == 64, "root item");

/* ---- csum tree: key (EXTENT_CSUM, EXTENT_CSUM, logical), array of csums ---- */
/*
 * One item per data extent, keyed by the extent's logical start, holding
 * the checksum of each sector of the extent as stored on disk.
 */

/* ---- fs tree ---- */
struct mfs_timespec {
	mfs_le64 sec;
	mfs_le32 nsec;
} __attribute__((packed));
static_assert(sizeof(struct mfs_timespec) == 12, "timespec");

/* key (ino, INODE_ITEM, 0) */
struct mfs_inode_item {
	mfs_le64 generation;	/* transaction that created the inode */
	mfs_le64 transid;	/* transaction that last changed it */
	mfs_le64 size;
	mfs_le64 nbytes;	/* bytes of data extents referenced */
	mfs_le32 nlink;
	mfs_le32 uid;
	mfs_le32 gid;
	mfs_le32 mode;
	mfs_le64 rdev;
	mfs_le64 flags;
	mfs_le64 dir_index_next;	/* directories: next DIR_INDEX number */
	struct mfs_timespec atime;
	struct mfs_timespec ctime;
	struct mfs_timespec mtime;
	struct mfs_timespec otime;	/* creation time */
	u8 reserved[40];
} __attribute__((packed));
static_assert(sizeof(struct mfs_inode_item) == 160, "inode item");

/*
 * key (dir ino, DIR_ITEM, crc32c(name)) and (dir ino, DIR_INDEX, index);
 * DIR_ITEM items may hold several entries whose names share a hash.
 */
struct mfs_dir_item {
	mfs_le64 child;		/* inode number */
	mfs_le64 index;		/* the entry's DIR_INDEX number */
	mfs_le64 transid;
	mfs_le16 name_len;
	u8 type;		/* MFS_FT_* */
	/* name_len bytes of name follow */
} __attribute__((packed));
static_assert(sizeof(struct mfs_dir_item) == 27, "dir item");

#define MFS_FT_UNKNOWN	0
#define MFS_FT_REG_FILE	1
#define MFS_FT_DIR	2
#define MFS_FT_CHRDEV	3
#define MFS_FT_BLKDEV	4
#define MFS_FT_FIFO	5
#define MFS_FT_SOCK	6
#define MFS_FT_SYMLINK	7

/*
 * key (ino, XATTR_ITEM, crc32c(name)); several entries per item on a hash
 * collision, each followed by name then value.
 */
struct mfs_xattr_item {
	mfs_le16 name_len;
	mfs_le16 value_len;
} __attribute__((packed));
static_assert(sizeof(struct mfs_xattr_item) == 4, "xattr item");

/* key (ino, EXTENT_DATA, file offset) */
#define MFS_FILE_EXTENT_INLINE	0	/* data follows the first 10 bytes (symlinks) */
#define MFS_FILE_EXTENT_REG	1
#define MFS_FILE_EXTENT_PREALLOC 2	/* allocated, reads as zeros */
#define MFS_COMPRESS_NONE	0
#define MFS_COMPRESS_ZLIB	1
struct mfs_file_extent_item {
	mfs_le64 generation;
	u8 type;		/* MFS_FILE_EXTENT_* */
	u8 compression;		/* MFS_COMPRESS_*; inline data is never compressed */
	/* regular and prealloc extents only: */
	mfs_le64 disk_bytenr;	/* logical start of the data extent */
	mfs_le64 disk_num_bytes;	/* its length on disk */
	mfs_le64 offset;	/* offset into the (decompressed) extent */
	mfs_le64 num_bytes;	/* file bytes this item covers */
	mfs_le64 ram_bytes;	/* decompressed length of the whole extent */
} __attribute__((packed));
static_assert(sizeof(struct mfs_file_extent_item) == 50, "file extent item");
#define MFS_FILE_EXTENT_INLINE_DATA_START 10

/*
 * key (BALANCE_OBJECTID, BALANCE_ITEM, 0) in the root tree: a restripe
 * (balance, convert, device delete, shrink) in progress, so it survives
 * pause, unmount and crashes (DESIGN §5).
 */
#define MFS_BALANCE_ARGS_PROFILES	(1U << 0)
#define MFS_BALANCE_ARGS_USAGE		(1U << 1)
#define MFS_BALANCE_ARGS_DEVID		(1U << 2)
#define MFS_BALANCE_ARGS_DRANGE		(1U << 3)
#define MFS_BALANCE_ARGS_VRANGE		(1U << 4)
#define MFS_BALANCE_ARGS_CONVERT	(1U << 5)
#define MFS_BALANCE_ARGS_SOFT		(1U << 6)
#define MFS_BALANCE_ARGS_LIMIT		(1U << 7)
#define MFS_BALANCE_ARGS_STRIPES	(1U << 8)
#define MFS_BALANCE_ARGS_REDUCED	(1U << 9)	/* only chunks written reduced (7.4) */
/* "single" as a profile-mask bit (its bg flag is 0) */
#define MFS_AVAIL_ALLOC_BIT_SINGLE	(1ULL << 48)

struct mfs_disk_balance_args {
	mfs_le64 flags;		/* MFS_BALANCE_ARGS_* */
	mfs_le64 profiles;	/* mask of profile bits */
	mfs_le64 usage_min;	/* percent */
	mfs_le64 usage_max;
	mfs_le64 devid;
	mfs_le64 pstart;
	mfs_le64 pend;
	mfs_le64 vstart;
	mfs_le64 vend;
	mfs_le64 target;	/* convert: profile bits (AVAIL_ALLOC_BIT_SINGLE for single) */
	mfs_le64 limit_min;
	mfs_le64 limit_max;
	mfs_le32 stripes_min;
	mfs_le32 stripes_max;
	u8 reserved[32];
} __attribute__((packed));
static_assert(sizeof(struct mfs_disk_balance_args) == 136, "balance args");

#define MFS_BALANCE_DATA	(1ULL << 0)
#define MFS_BALANCE_SYSTEM	(1ULL << 1)
#define MFS_BALANCE_METADATA	(1ULL << 2)
#define MFS_BALANCE_FORCE	(1ULL << 3)
#define MFS_BALANCE_PAUSED	(1ULL << 4)
/* replace: read the source only when no other good copy exists (-r) */
#define MFS_BALANCE_REPLACE_READ_OTHERS	(1ULL << 5)
/* replace: cancelled, the moved stripes go back (devids swapped) */
#define MFS_BALANCE_REPLACE_CANCELLING	(1ULL << 6)
/* replace: the target was a hot spare; cancelled, it is a spare again */
#define MFS_BALANCE_REPLACE_SPARE	(1ULL << 7)

#define MFS_RESTRIPE_OP_BALANCE	1
#define MFS_RESTRIPE_OP_DELETE	2
#define MFS_RESTRIPE_OP_RESIZE	3
#define MFS_RESTRIPE_OP_REPLACE	4
#define MFS_RESTRIPE_MAX_DEVIDS	16

struct mfs_balance_item {
	mfs_le64 op;		/* MFS_RESTRIPE_OP_* */
	mfs_le64 flags;		/* MFS_BALANCE_* */
	struct mfs_disk_balance_args data;
	struct mfs_disk_balance_args meta;
	struct mfs_disk_balance_args sys;
	mfs_le64 cursor;	/* chunks below this logical address are done */
	mfs_le64 completed;	/* chunks relocated so far */
	mfs_le64 considered;
	mfs_le64 bytes_done;
	mfs_le64 nr_devids;	/* delete: devices being removed; resize: 1 */
	mfs_le64 devids[MFS_RESTRIPE_MAX_DEVIDS];
	mfs_le64 new_size;	/* resize: target size of devids[0] */
	mfs_le64 old_size;	/* resize: its size before, given back by a cancel (0: unknown) */
	mfs_le64 start_time;	/* seconds since the epoch when it started (0: unknown) */
	mfs_le64 cancel_progress; /* replace: tenths of a percent done when cancelled */
	u8 reserved[40];
} __attribute__((packed));
static_assert(sizeof(struct mfs_balance_item) == 16 + 3 * 136 + 40 + 128 + 32 + 40, "balance item");

/*
 * key (BALANCE_OBJECTID, PERSISTENT_ITEM, 0) in the root tree: how the last
 * replace ended, so that `replace status` says it after an unmount too
 * (btrfs keeps it in its dev_replace item). Rewritten in the commit that
 * ends each replace; absent until one has ended.
 */
#define MFS_REPLACE_ITEM_FINISHED	1
#define MFS_REPLACE_ITEM_CANCELED	2
struct mfs_replace_item {
	mfs_le64 outcome;	/* MFS_REPLACE_ITEM_* */
	mfs_le64 start_time;	/* seconds since the epoch */
	mfs_le64 end_time;
	mfs_le64 progress;	/* tenths of a percent moved when it ended (1000 finished) */
	mfs_le64 src_devid;	/* the device replaced */
	mfs_le64 tgt_devid;	/* the target's devid while it ran */
	mfs_le64 write_errs;	/* failed writes to the target */
	mfs_le64 read_errs;	/* ranges no copy could give */
	u8 reserved[32];
} __attribute__((packed));
static_assert(sizeof(struct mfs_replace_item) == 96, "replace item");

/*
 * key (BALANCE_OBJECTID, BALANCE_CHUNK, logical) in the root tree: the
 * chunk at logical is being copied and the copy was checkpointed (DESIGN
 * §5.4), so that a pause, unmount or crash goes on from `copied` instead of
 * copying the chunk again. While it exists the chunk takes no new extents
 * and the new layout's stripes are taken on their devices. After the
 * header, nr_pieces times: le64 logical, then a chunk item (struct
 * mfs_chunk and its stripes) - the new layout, as it will be swapped in.
 */
struct mfs_balance_chunk_item {
	mfs_le64 copied;	/* logical: the chunk's used bytes below it are in the new layout */
	mfs_le64 bytes_done;	/* of them, counted in the balance item's bytes_done */
	mfs_le64 generation;	/* transaction that wrote the checkpoint */
	mfs_le32 nr_pieces;
	mfs_le32 reserved0;
	u8 reserved[32];
} __attribute__((packed));
static_assert(sizeof(struct mfs_balance_chunk_item) == 64, "balance chunk item");
#define MFS_BALANCE_CHUNK_MAX_PIECES	64

/*
 * key (SCRUB_OBJECTID, PERSISTENT_ITEM, 0) in the root tree: the last scrub,
 * its cursor and counts, so that it survives pause, unmount and crashes
 * and its outcome stays visible (DESIGN §6).
 */
#define MFS_SCRUB_OBJECTID	((u64)-6)
#define MFS_SCRUB_STATE_RUNNING		1
#define MFS_SCRUB_STATE_PAUSED		2
#define MFS_SCRUB_STATE_FINISHED	3
#define MFS_SCRUB_STATE_CANCELED	4
#define MFS_SCRUB_STATE_ABORTED		5
#define MFS_SCRUB_ITEM_READONLY		(1ULL << 0)
/* PAUSED by an unmount, not by the admin: the next read-write mount resumes it */
#define MFS_SCRUB_ITEM_INTERRUPTED	(1ULL << 1)

struct mfs_scrub_item {
	mfs_le64 state;		/* MFS_SCRUB_STATE_* */
	mfs_le64 flags;		/* MFS_SCRUB_ITEM_* */
	mfs_le64 cursor;	/* logical: the used extents below it are scrubbed */
	mfs_le64 start_time;	/* seconds since the epoch */
	mfs_le64 elapsed_ns;	/* scrubbing time so far, pauses left out */
	mfs_le64 bytes_total;	/* used bytes when it started */
	mfs_le64 limit;		/* bytes per second per device, 0 none */
	mfs_le64 bytes_done;
	mfs_le64 read_errors;
	mfs_le64 csum_errors;
	mfs_le64 verify_errors;
	mfs_le64 parity_errors;
	mfs_le64 corrected_errors;
	mfs_le64 uncorrectable_errors;
	mfs_le64 unverified_errors;
	mfs_le64 super_errors;
	u8 reserved[64];
} __attribute__((packed));
static_assert(sizeof(struct mfs_scrub_item) == 192, "scrub item");

/*
 * key (SCRUB_OBJECTID, PERSISTENT_ITEM, 1) in the root tree: the files the
 * scrub found bad copies in and has not named yet, 1..MFS_SCRUB_FILES_MAX
 * of them (item size a multiple of 16); absent when there are none.
 */
struct mfs_scrub_file {
	mfs_le64 ino;
	mfs_le64 flags;		/* MFS_SCRUB_FILE_* */
} __attribute__((packed));
static_assert(sizeof(struct mfs_scrub_file) == 16, "scrub file");
#define MFS_SCRUB_FILE_UNCORRECTABLE	(1ULL << 0)	/* no good copy was found */
#define MFS_SCRUB_FILES_MAX		64

/* key (ORPHAN_OBJECTID, ORPHAN_ITEM, ino): unlinked while open; freed at mount */
#define MFS_ORPHAN_OBJECTID	((u64)-5)

/* key (DEV_STATS_OBJECTID, PERSISTENT_ITEM, devid) in the device tree */
#define MFS_DEV_STAT_WRITE_ERRS		0
#define MFS_DEV_STAT_READ_ERRS		1
#define MFS_DEV_STAT_FLUSH_ERRS		2
#define MFS_DEV_STAT_CORRUPTION_ERRS	3
#define MFS_DEV_STAT_GENERATION_ERRS	4
#define MFS_DEV_STAT_VALUES_MAX		5
struct mfs_dev_stats_item {
	mfs_le64 values[MFS_DEV_STAT_VALUES_MAX];
} __attribute__((packed));
static_assert(sizeof(struct mfs_dev_stats_item) == 40, "dev stats item");

#endif
