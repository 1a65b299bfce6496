/*
 * Finding the members of a filesystem (registry of scanned devices, block
 * device scan, paths given) and opening it for a command, with messages.
 */
#ifndef MFS_COMMON_OPEN_H
#define MFS_COMMON_OPEN_H

#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/ops/open.h"

/* A device or image holding an mfs superblock, as found by a scan. */
struct mfs_scanned_dev {
	char *path;
	struct mfs_super_block sb;	/* newest valid copy */
};

struct mfs_scan {
	struct mfs_scanned_dev *devs;
	int nr;
};

/*
 * The registry (like the kernel's list of scanned btrfs devices): image
 * files and devices named by `mfs device scan`, mkfs and device add, so
 * later commands find every member from one path. $MFS_REGISTRY overrides
 * the default /run/mfs/devices.
 */
int mfs_registry_add(const char *path);
int mfs_registry_forget(const char *path);	/* NULL = drop stale entries */

/* Read the newest valid superblock of path without locking it. */
int mfs_probe_super(const char *path, struct mfs_super_block *sb);

/*
 * Scan the given paths, the registry and every block device for mfs
 * superblocks (each path once). all_devices: also walk /dev.
 */
int mfs_scan_all(const char * const *extra, int nextra, struct mfs_scan *scan);
void mfs_scan_free(struct mfs_scan *scan);

/*
 * Whether every member of the filesystem of paths[0] (superblock sb) is
 * present: among paths, the registry and the block devices. Prints nothing.
 */
bool mfs_members_present(const char * const *paths, int npaths,
			 const struct mfs_super_block *sb);

/* Whether a and b name the same file (by their canonical paths). */
bool mfs_same_path(const char *a, const char *b);

/* fs->log for commands: each message of the engine as a WARNING line. */
void mfs_log_to_stderr(void *arg, const char *msg);

/*
 * The FUSE server holding path: a process with both path and /dev/fuse
 * open (the server of the mount whose source is path). 0: none found.
 * Asks the server nothing: it may be stopped or hung.
 */
pid_t mfs_fuse_server_holding(const char *path);

/* The number of process pid's descriptor of /dev/fuse (its connection), -1: none. */
int mfs_dev_fuse_fd(pid_t pid);

/* Whether process pid is stopped (SIGSTOP, or a tracer's stop). */
bool mfs_pid_stopped(pid_t pid);

/* Until process pid has exited or timeout_ms passed (-1: no bound): 1 exited, 0 not yet. */
int mfs_wait_pid_exit(pid_t pid, int timeout_ms);

/*
 * Until every server of a mount that is gone has exited (a plain umount(8)
 * returns before the server's last commit): before superblocks are read
 * without an exclusive open, which would wait for it by itself.
 */
void mfs_wait_unmounting_servers(void);

/*
 * Open the filesystem that the first of paths belongs to, adding members
 * found by scanning. Prints an ERROR line and returns -errno on failure.
 */
int mfs_open_for_cmd(const char * const *paths, int npaths, unsigned int flags,
		     struct mfs_fs_info **out);
/* Same, reading superblock copy `mirror` of the first path. */
int mfs_open_for_cmd_mirror(const char * const *paths, int npaths, unsigned int flags,
			    int mirror, struct mfs_fs_info **out);

/* Same, with the open hooks of hooks (load_chunks, trees_loaded, hook_arg). */
int mfs_open_for_cmd_hooks(const char * const *paths, int npaths, unsigned int flags,
			   const struct mfs_open_ctl *hooks, struct mfs_fs_info **out);

#endif
