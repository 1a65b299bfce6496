/* The FUSE server: serves an opened filesystem at a mount point. */
#ifndef MFS_FUSE_SERVER_H
#define MFS_FUSE_SERVER_H

#include "kernel-shared/tree/ctree.h"

struct mfs_mount_opts {
	const char *mountpoint;
	const char *fsname;		/* shown as the mount source */
	bool ro;
	bool foreground;
	bool debug;
	bool noatime;
	bool nodev, nosuid, noexec;	/* as for kernel filesystems: off unless asked */
	bool skip_balance;	/* leave a persisted balance paused */
	bool skip_scrub;	/* leave a scrub an unmount or crash interrupted paused */
	unsigned int commit_interval;	/* seconds */
	u64 cache_size;			/* bytes of tree blocks to cache */
};

/*
 * Mount and serve until unmounted; commits and closes fs at the end.
 * ready_fd (or -1) gets one byte once the mount is live. Returns an exit code.
 */
int mfs_fuse_serve(struct mfs_fs_info *fs, const struct mfs_mount_opts *opts);

#endif
