/* Admin operations shared by the FUSE server's ioctls and offline commands. */
#ifndef MFS_ADMIN_H
#define MFS_ADMIN_H

#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/format/ioctl.h"
#include "kernel-shared/ops/restripe.h"

void mfs_restripe_args_from_ioctl(struct mfs_restripe_args *a, const struct mfs_ioctl_restripe_args *i);
void mfs_admin_restripe_status(struct mfs_fs_info *fs, struct mfs_ioctl_restripe_status *out);
/* Check and persist; the caller then runs mfs_restripe_run (thread or in-process). */
int mfs_admin_restripe_start(struct mfs_fs_info *fs, struct mfs_ioctl_restripe_args *io);
int mfs_admin_restripe_ctl(struct mfs_fs_info *fs, unsigned int cmd);
/* --dry-run: fills the estimate of io->args; changes nothing. Returns io->result. */
int mfs_admin_restripe_estimate(struct mfs_fs_info *fs, struct mfs_ioctl_restripe_estimate *io);
/* One page of devices, chunks and stripes, from the cursors in *sp (ioctl.h). */
void mfs_admin_space(struct mfs_fs_info *fs, struct mfs_ioctl_space *sp);
/* Check and persist a replace; the caller then runs mfs_restripe_run. */
int mfs_admin_replace_start(struct mfs_fs_info *fs, struct mfs_ioctl_replace_start *io);
/* flags: MFS_DEV_ADD_* */
int mfs_admin_device_add(struct mfs_fs_info *fs, const char *path, u64 flags, u64 *devid);
int mfs_admin_grow(struct mfs_fs_info *fs, u64 devid, u64 new_size);
/*
 * Every device's error counters into ds (by devid); with
 * MFS_DEV_STATS_RESET in ds->flags also zero them, durably before it
 * returns (-EROFS on a filesystem not open for writing).
 */
int mfs_admin_dev_stats(struct mfs_fs_info *fs, struct mfs_ioctl_dev_stats *ds);
/* The members' states and the redundancy left to the data (filesystem status). */
void mfs_admin_health(struct mfs_fs_info *fs, struct mfs_ioctl_health *h);
/* What FS_INFO says of the filesystem itself (the caller adds pid and device). */
void mfs_admin_fs_info(struct mfs_fs_info *fs, struct mfs_ioctl_fs_info *info);

#endif
