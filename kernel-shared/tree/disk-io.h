/* Opening and closing a filesystem, superblocks, and the tree-block cache. */
#ifndef MFS_DISK_IO_H
#define MFS_DISK_IO_H

#include "kernel-shared/tree/ctree.h"

struct mfs_open_ctl {
	const char * const *paths;	/* candidate devices/images */
	int npaths;
	/*
	 * The first nnamed paths are the devices the admin named; the rest
	 * were found by a scan (registry, block devices) and never outrank
	 * them (DESIGN §2). 0: all were named.
	 */
	int nnamed;
	unsigned int flags;		/* MFS_OPEN_* */
	const u8 *fsid;			/* only this filesystem (else the first path's) */
	const u8 *alt_fsid;		/* MFS_OPEN_CHANGE_FSID: the other fsid of an interrupted change */
	int sb_mirror;			/* use this superblock copy of the first path; -1 = best */
	void (*log)(void *arg, const char *msg);	/* becomes fs->log */
	void *log_arg;
	/* out */
	u64 missing_devid;		/* first missing device when -ENODEV */
	const char *failed_path;	/* path a device error came from */
	/* why the open failed, when the error code alone cannot say (else "") */
	char detail[512];
	/* what the caller should know even when the open succeeds (else "") */
	char note[512];
};

/* Read and validate copy `mirror` of a device's superblock. */
int mfs_read_super_copy(struct mfs_io_dev *io, int mirror, struct mfs_super_block *sb);
/* Copy `mirror` as it is on disk, unchecked (for dump-super); -ENOENT past the end. */
int mfs_read_super_raw(struct mfs_io_dev *io, int mirror, struct mfs_super_block *sb);
/* Newest valid copy on a device; -EUCLEAN if no copy is valid, -ENOENT if none is mfs. */
int mfs_read_super(struct mfs_io_dev *io, struct mfs_super_block *sb, int *mirror);
/* Structural checks on a superblock read from bytenr (untrusted input). */
int mfs_check_super(const struct mfs_super_block *sb, u64 bytenr);
void mfs_csum_super(struct mfs_super_block *sb);
/* Write the superblock (all copies that fit) to every present device. */
int mfs_write_all_supers(struct mfs_fs_info *fs);
/*
 * The superblocks of the devices whose items go in at this commit (joining
 * members): the number written, or -errno with strict_io.
 */
int mfs_write_joining_supers(struct mfs_fs_info *fs);

/*
 * Give the filesystem new_fsid (format §3.8, fsid.c): two rounds of
 * superblock writes to every member. Offline, writable, every member
 * present and current (-ENODEV otherwise).
 */
int mfs_change_fsid(struct mfs_fs_info *fs, const u8 *new_fsid);

struct mfs_fs_info *mfs_alloc_fs_info(void);
int mfs_open_fs(struct mfs_open_ctl *ctl, struct mfs_fs_info **out);
/* Profiles new chunks get, from the chunks there are (no convert in progress). */
void mfs_init_alloc_profiles(struct mfs_fs_info *fs);
/* Commit pending changes (if writable), close devices, free everything. */
int mfs_close_fs(struct mfs_fs_info *fs);
/* Free without committing. */
void mfs_free_fs_info(struct mfs_fs_info *fs);
/* Read one tree root referenced by a root item. */
int mfs_read_root(struct mfs_fs_info *fs, u64 objectid, struct mfs_root **out);
void mfs_free_root(struct mfs_fs_info *fs, struct mfs_root *root);
/* Write every dirty buffer of the running transaction. */
int mfs_write_dirty_buffers(struct mfs_fs_info *fs);

#endif
