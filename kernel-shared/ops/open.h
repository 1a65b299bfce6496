/* Opening a filesystem from its member devices, closing it, changing its fsid. */
#ifndef MFS_OPEN_H
#define MFS_OPEN_H

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
	/*
	 * Hooks of an operation that rebuilds what the open reads
	 * (chunk-recover.h): load_chunks loads the chunk maps and devices in
	 * place of the system chunk array and the chunk tree; trees_loaded
	 * runs once the trees are read, stale members caught up and the
	 * allocation profiles known, so that it may write. NULL: none.
	 */
	int (*load_chunks)(struct mfs_fs_info *fs, struct mfs_open_ctl *ctl);
	int (*trees_loaded)(struct mfs_fs_info *fs, struct mfs_open_ctl *ctl);
	void *hook_arg;
	/* out */
	u64 missing_devid;		/* first missing device when -ENODEV */
	const char *failed_path;	/* path a device error came from */
	/* why the open failed, when the error code alone cannot say (else "") */
	char detail[512];
	/* what the caller should know even when the open succeeds (else "") */
	char note[512];
};

/*
 * Open the filesystem on ctl's devices (flags MFS_OPEN_*): -ENODEV with
 * ctl->missing_devid when a member is missing and the flags do not allow
 * it, ctl->detail when the error code alone cannot say why.
 */
int mfs_open_fs(struct mfs_open_ctl *ctl, struct mfs_fs_info **out);
/*
 * How many chunks of these types the devices present cannot read; with
 * why into out: which devices are missing and what the profile survives
 * ("1 data chunk cannot be read: device 2 missing, and a RAID0 chunk ...").
 */
int mfs_explain_unreadable(struct mfs_fs_info *fs, u64 types, char *out, size_t len);
/* Commit pending changes (if writable), close devices, free everything. */
int mfs_close_fs(struct mfs_fs_info *fs);

/*
 * Give the filesystem new_fsid (format §3.8, fsid.c): two rounds of
 * superblock writes to every member. Offline, writable, every member
 * present and current (-ENODEV otherwise).
 */
int mfs_change_fsid(struct mfs_fs_info *fs, const u8 *new_fsid);

#endif
