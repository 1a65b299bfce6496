/*
 * The entry of an mfs mount in libmount's table of userspace mount options
 * (/run/mount/utab), so that umount(8) runs umount.fuse.mfs for it: without
 * an entry util-linux learns a FUSE mount's type from statfs(2), which says
 * only "fuse", and unmounts by itself - before the server's last commit.
 */
#ifndef MFS_COMMON_UTAB_H
#define MFS_COMMON_UTAB_H

#include <stdbool.h>

/*
 * Add the entry of the mfs mount on target (canonical; source as the mount
 * table has it), dropping ours for target beyond the mounts below it.
 * Returns the mount's id or -errno (nothing is said: the mount works
 * without it, umount(8) just does not wait).
 */
int mfs_utab_add(const char *source, const char *target);

/*
 * One more entry for the mfs mount on target, which stays although
 * umount(8) will remove an entry for it (umount -r remounted it read-only).
 */
int mfs_utab_add_extra(const char *source, const char *target);

/*
 * Drop our entries for target (canonical) beyond the mfs mounts left on it:
 * after an unmount not made by umount(8), which removes the entry itself.
 */
void mfs_utab_remove(const char *target);

/* Whether the mount with id is still in this namespace's mount table. */
bool mfs_mount_id_present(int id);

#endif
