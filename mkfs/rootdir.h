/* mkfs.mfs --rootdir: fill a new filesystem from a directory tree. */
#ifndef MFS_MKFS_ROOTDIR_H
#define MFS_MKFS_ROOTDIR_H

#include <sys/types.h>
#include "kernel-shared/tree/ctree.h"

struct mfs_rootdir_stats {
	u64 dirs;
	u64 files;
	u64 symlinks;
	u64 special;	/* fifos, sockets, character and block devices */
	u64 hardlinks;	/* extra names of an inode already copied */
	u64 xattrs;
	u64 data_bytes;	/* bytes of file data written (holes excluded) */
};

struct mfs_rootdir_ctl {
	const char *srcdir;
	/* files never copied (the new filesystem's own images inside srcdir) */
	const dev_t *skip_dev;
	const ino_t *skip_ino;
	int nskip;
	/* out */
	struct mfs_rootdir_stats stats;
};

/*
 * Copy the tree below ctl->srcdir into the root directory of fs, opened
 * writable: contents (holes stay holes), directories, symlinks, hard links,
 * device nodes, fifos and sockets, xattrs, owners, modes and timestamps;
 * the root directory takes srcdir's attributes. The caller commits.
 * Prints an ERROR line naming the entry and returns -errno on failure.
 */
int mfs_rootdir_populate(struct mfs_fs_info *fs, struct mfs_rootdir_ctl *ctl);

#endif
