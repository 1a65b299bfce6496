/*
 * POSIX ACL xattrs for the daemon: checking a value, masking an inherited
 * default ACL, and keeping the access ACL and the mode in step.
 */
#ifndef MFS_FUSE_ACL_H
#define MFS_FUSE_ACL_H

#include <sys/types.h>
#include "kernel-shared/tree/ctree.h"

#define XATTR_ACL_ACCESS	"system.posix_acl_access"
#define XATTR_ACL_DEFAULT	"system.posix_acl_default"

int acl_count(const void *value, size_t size);
int acl_create_masq(void *value, size_t size, mode_t *mode);
ssize_t get_xattr_alloc(struct mfs_fs_info *fs, u64 ino, const char *name, void **out);
int acl_chmod(struct mfs_fs_info *fs, u64 ino, mode_t mode);
int acl_set_access(struct mfs_fs_info *fs, u64 ino, const void *value, size_t size,
		   int flags, bool clear_sgid);

#endif
