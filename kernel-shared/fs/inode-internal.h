/*
 * Shared between inode.c (namespace) and extents.c, read.c, write.c (file
 * contents); not public.
 */
#ifndef MFS_INODE_INTERNAL_H
#define MFS_INODE_INTERNAL_H

#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/fs/inode.h"
#include "kernel-shared/format/items.h"

#define XATTR_CREATE_FLAG	0x1	/* as XATTR_CREATE */
#define XATTR_REPLACE_FLAG	0x2	/* as XATTR_REPLACE */

/* Largest item we create: half a leaf, so any two fit after a split. */
#define MFS_MAX_ITEM(fs)	(leaf_data_size(fs) / 2 - 2 * sizeof(struct mfs_item))
#define MFS_MAX_XATTR_ITEM(fs)	(MFS_MAX_ITEM(fs))
#define MFS_MAX_INLINE(fs)	min_t(u64, 4095, MFS_MAX_ITEM(fs) - MFS_FILE_EXTENT_INLINE_DATA_START)

void mfs_now(struct mfs_timespec *ts);
void mfs_inode_to_stat(u64 ino, const struct mfs_inode_item *ii, struct mfs_stat *st);
int mfs_read_inode(struct mfs_fs_info *fs, u64 ino, struct mfs_inode_item *ii);
int mfs_write_inode(struct mfs_trans_handle *trans, u64 ino, struct mfs_inode_item *ii);
u64 mfs_name_hash(const char *name, size_t len);
/* The MFS_FT_* a directory entry carries for an inode of this mode. */
u32 mfs_mode_to_ft(u32 mode);

/* A file extent item, parsed (extents.c). */
struct file_extent {
	u64 start;		/* file offset (key offset) */
	u64 len;		/* file bytes covered */
	u8 type;
	u8 compression;
	u64 disk_bytenr;
	u64 disk_num_bytes;
	u64 offset;
	u64 ram_bytes;
};

/* extents.c, read.c, write.c */
int mfs_write_inline(struct mfs_trans_handle *trans, u64 ino, const void *data, size_t len);
ssize_t mfs_read_inline(struct mfs_fs_info *fs, u64 ino, void *buf, size_t size);
/* Remove file extents in [start, end), splitting those that straddle. */
int mfs_drop_file_extents(struct mfs_trans_handle *trans, u64 ino, u64 start, u64 end);
int mfs_truncate(struct mfs_trans_handle *trans, u64 ino, u64 size);
int mfs_count_file_extents(struct mfs_fs_info *fs, u64 ino, u64 start, u64 end,
			   u64 limit, u64 *n, u64 *next);
int mfs_read_compressed(struct mfs_fs_info *fs, u64 disk_bytenr, u64 disk_len, u64 ram_bytes,
			u64 in_ext, u64 len, u8 *out);

/* compress.c: zlib; the output is padded with zeros to whole sectors. */
int mfs_compress(int level, const u8 *src, u64 len, u8 **out, u64 *out_len);
int mfs_decompress(const u8 *src, u64 src_len, u8 *dst, u64 dst_len);

/* extents.c */
int data_adjust_nbytes(struct mfs_trans_handle *trans, u64 ino, s64 delta);
int data_insert_inline_item(struct mfs_trans_handle *trans, u64 ino, const void *data,
		size_t len);
/* Data extents are capped so their checksums fit in one csum item. */
u64 data_max_extent_size(struct mfs_fs_info *fs);
/*
 * The first file extent of ino ending after pos (it may start after pos).
 * Returns 0 and fills fe, 1 when there is none.
 */
int data_next_file_extent(struct mfs_fs_info *fs, u64 ino, u64 pos, struct file_extent *fe);
int data_parse_file_extent(struct extent_buffer *leaf, int slot, const struct mfs_key *key,
		struct file_extent *fe);

/* read.c */
/* Read file bytes [off, off+len) that lie below size; holes read as zeros. */
int data_read_range(struct mfs_fs_info *fs, u64 ino, u64 off, u64 len, u8 *buf);

/* write.c */
int data_insert_file_extent(struct mfs_trans_handle *trans, u64 ino, u64 pos, u8 type,
		u8 compression, u64 bytenr, u64 disk_len, u64 ram_len);
/* Turn an inline extent into a regular one, before the file gets other extents. */
int data_uninline(struct mfs_trans_handle *trans, u64 ino);
/* Zero [from, to) inside one sector by rewriting that sector. */
int data_zero_partial_sector(struct mfs_trans_handle *trans, u64 ino, u64 size, u64 from, u64 to);

/* inode.c */
/*
 * Search the hashed item at key (DIR_ITEM or XATTR_ITEM) for the entry
 * called name: 0 with e pointing into path's leaf (release path once done
 * with e), -ENOENT, or -errno.
 */
int inode_find_entry(struct mfs_root *root, const struct mfs_key *key, bool xattr,
		     const char *name, size_t len, struct mfs_path *path, struct mfs_entry *e);
/* Append bytes to the item at key (creating it), e.g. a new hashed entry. */
int inode_item_append(struct mfs_trans_handle *trans, struct mfs_root *root,
		const struct mfs_key *key, const void *data, u32 len);
/* Cut [off, off+len) out of the item at key; the item goes when empty. */
int inode_item_cut(struct mfs_trans_handle *trans, struct mfs_root *root,
		const struct mfs_key *key, u32 off, u32 len);
void inode_ts_to_disk(struct mfs_timespec *out, const struct timespec *in);
/*
 * For the checker's repair, in the running transaction: the directory
 * lost+found in the root, created (mode 0700) when absent; -ENOTDIR when
 * that name is something else.
 */
int inode_lost_found_dir(struct mfs_trans_handle *trans, u64 *dir);
/*
 * Name inode ino, which no directory entry names, "<ino>" in dir (or
 * "<ino>.<ino>"... while the name is taken, as btrfs check does) and set
 * its link count to nlink. The name goes to name (MFS_NAME_LEN + 1 bytes).
 */
int inode_link_lost(struct mfs_trans_handle *trans, u64 dir, u64 ino, u32 nlink, char *name);

#endif
