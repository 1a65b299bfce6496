/* Superblocks, the tree-block cache, the in-memory filesystem. */
#ifndef MFS_DISK_IO_H
#define MFS_DISK_IO_H

#include "kernel-shared/tree/ctree.h"

/* Read and validate copy `mirror` of a device's superblock. */
int mfs_read_super_copy(struct mfs_io_dev *io, int mirror, struct mfs_super_block *sb);
/* Copy `mirror` as it is on disk, unchecked (for dump-super); -ENOENT past the end. */
int mfs_read_super_raw(struct mfs_io_dev *io, int mirror, struct mfs_super_block *sb);
/* Newest valid copy on a device; -EUCLEAN if no copy is valid, -ENOENT if none is mfs. */
int mfs_read_super(struct mfs_io_dev *io, struct mfs_super_block *sb, int *mirror);
/* Structural checks on a superblock read from bytenr (untrusted input). */
int mfs_check_super(const struct mfs_super_block *sb, u64 bytenr);
void mfs_csum_super(struct mfs_super_block *sb);
/* What one superblock copy of an open filesystem's member holds. */
enum mfs_sb_copy_state {
	MFS_SB_COPY_OK,
	MFS_SB_COPY_BEHIND,		/* one generation behind (a commit cut short) */
	MFS_SB_COPY_OTHER_GEN,		/* any other generation but the filesystem's */
	MFS_SB_COPY_WRONG_DEVID,	/* names another devid */
	MFS_SB_COPY_MISSING,		/* never written: no mfs magic there */
	MFS_SB_COPY_CORRUPT,		/* checksum or field mismatch, or unreadable */
	MFS_SB_COPY_FOREIGN,		/* another filesystem's */
	MFS_SB_COPY_BEYOND,		/* past the device's end: there is none */
};
/*
 * The state of copy m on dev against fs (its fsid, generation, devid);
 * sb gets the copy when it could be read, *err the read's error for
 * MFS_SB_COPY_CORRUPT.
 */
enum mfs_sb_copy_state mfs_super_copy_state(struct mfs_fs_info *fs, struct mfs_device *dev, int m,
					    struct mfs_super_block *sb, int *err);
/* Write the superblock (all copies that fit) to every present device. */
int mfs_write_all_supers(struct mfs_fs_info *fs);
/*
 * What a commit's superblocks go to, taken under fs->lock so that they can
 * be written without it: each member, its dev item as it is now, whether
 * it is still being caught up (it keeps its old superblock) or joins the
 * filesystem in this commit (its superblock goes first).
 */
struct mfs_super_target {
	struct mfs_device *dev;
	struct mfs_dev_item di;
	u64 end;		/* the device's size as di says it (copies past it: none) */
	bool stale;
	bool joining;
};
void mfs_fill_dev_item(struct mfs_fs_info *fs, struct mfs_device *dev, struct mfs_dev_item *di);
/* The targets of every member (*out, freed by the caller): their number, or -errno. */
int mfs_take_super_targets(struct mfs_fs_info *fs, struct mfs_super_target **out);
/*
 * super, with each target's dev item, to the usable targets that are not
 * stale: 0 when one device at least holds it (with strict_io, every one).
 */
int mfs_write_supers_to(struct mfs_fs_info *fs, const struct mfs_super_block *super,
			const struct mfs_super_target *t, int n);
/* Every copy that fits of super to one target; *primary: copy 0 went out. */
int mfs_write_dev_super(struct mfs_fs_info *fs, const struct mfs_super_block *super,
			const struct mfs_super_target *t, bool *primary);

struct mfs_fs_info *mfs_alloc_fs_info(void);
/* Profiles new chunks get, from the chunks there are (no convert in progress). */
void mfs_init_alloc_profiles(struct mfs_fs_info *fs);
/* Free without committing. */
void mfs_free_fs_info(struct mfs_fs_info *fs);
/* A root whose node is at bytenr (level, generation transid: a parent check). */
int mfs_load_root(struct mfs_fs_info *fs, u64 objectid, u64 bytenr, int level, u64 transid,
		  struct mfs_root **out);
/* Read one tree root referenced by a root item. */
int mfs_read_root(struct mfs_fs_info *fs, u64 objectid, struct mfs_root **out);
void mfs_free_root(struct mfs_fs_info *fs, struct mfs_root *root);
/* Write every dirty buffer of the running transaction. */
int mfs_write_dirty_buffers(struct mfs_fs_info *fs);

#endif
