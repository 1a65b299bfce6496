/*
 * The entry of an mfs mount in libmount's table of userspace mount options
 * (/run/mount/utab), so that umount(8) runs umount.fuse.mfs for it: without
 * an entry util-linux learns a FUSE mount's type from statfs(2), which says
 * only "fuse", and unmounts by itself - before the server's last commit.
 */
#ifndef MFS_COMMON_UTAB_H
#define MFS_COMMON_UTAB_H

/*
 * Add the entry of the mfs mount on target (canonical; source as the mount
 * table has it), dropping ours for target whose mount is gone. 0 or -errno
 * (nothing is said: the mount works without it, umount(8) just does not
 * wait).
 */
int mfs_utab_add(const char *source, const char *target);

/*
 * Drop our entries for target (canonical) whose mount is gone: after an
 * unmount not made by umount(8), which removes the entry itself.
 */
void mfs_utab_remove(const char *target);

#endif
