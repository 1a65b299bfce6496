/* Creating a new filesystem on a set of devices (the engine half of mkfs). */
#ifndef MFS_CREATE_H
#define MFS_CREATE_H

#include "kernel-shared/format/kerncompat.h"
#include "kernel-shared/format/format.h"

/* The most devices one mkfs takes. */
#define MFS_MKFS_MAX_DEVICES 64

struct mfs_mkfs_params {
	const char * const *paths;
	int npaths;
	u64 data_profile;	/* MFS_BLOCK_GROUP_* profile bit, 0 = single */
	u64 metadata_profile;	/* system chunks follow metadata */
	u32 nodesize;
	u32 sectorsize;
	int csum_type;
	u8 fsid[MFS_FSID_SIZE];	/* all zero: generate */
	const char *label;
	u64 byte_count;		/* bytes used on each device, 0 = all */
	bool exclusive;		/* lock the devices (O_EXCL / flock) */
	u64 features;		/* extra MFS_FEATURE_INCOMPAT_* bits (-O) */
	u32 root_uid, root_gid;	/* owner of the root directory */
	/* out */
	u64 dev_size[MFS_MKFS_MAX_DEVICES];	/* size used on each device */
	u64 sys_bytes, meta_bytes, data_bytes;	/* logical size of the first chunks */
	const char *failed_path;
};

/* Size a device gives the filesystem (per -b), or -errno. */
int mfs_mkfs_device_size(const char *path, u64 byte_count, u64 *size);
/* Write a new, empty filesystem; everything on the devices is replaced. */
int mfs_make_fs(struct mfs_mkfs_params *p);

struct mfs_fs_info;
/*
 * Commit with MFS_SUPER_FLAG_CHANGING set (or cleared): while mkfs fills a
 * new filesystem (--rootdir) a crash or an error leaves one that is refused
 * at open, never one that mounts half filled.
 */
int mfs_mkfs_set_changing(struct mfs_fs_info *fs, bool changing);

#endif
