/*
 * POSIX ACLs for the daemon (fuse/server.c).
 * With FUSE_CAP_POSIX_ACL the kernel checks permissions against the ACLs
 * it reads through getxattr, but keeping the mode and the ACL in step is
 * the server's job, as in a kernel filesystem (fs/posix_acl.c): setting an
 * access ACL sets the mode (and an ACL the mode says all of is not stored),
 * chmod rewrites the access ACL, and a new inode inherits its directory's
 * default ACL instead of the umask.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "fuse/acl.h"
#include "kernel-shared/fs/inode.h"

#define ACL_XATTR_VERSION	2
#define ACL_USER_OBJ		0x01
#define ACL_USER		0x02
#define ACL_GROUP_OBJ		0x04
#define ACL_GROUP		0x08
#define ACL_MASK		0x10
#define ACL_OTHER		0x20

struct acl_entry {
	mfs_le16 tag;
	mfs_le16 perm;
	mfs_le32 id;
} __attribute__((packed));

/* Number of entries of a well-formed ACL xattr value, else -EINVAL. */
int acl_count(const void *value, size_t size)
{
	const struct acl_entry *e = (const void *)((const u8 *)value + 4);
	mfs_le32 version;
	int n, i;

	if (size < 4 || (size - 4) % sizeof(*e))
		return -EINVAL;
	memcpy(&version, value, 4);
	if (le32_to_cpu(version) != ACL_XATTR_VERSION)
		return -EINVAL;
	n = (size - 4) / sizeof(*e);
	for (i = 0; i < n; i++) {
		switch (le16_to_cpu(e[i].tag)) {
		case ACL_USER_OBJ: case ACL_USER: case ACL_GROUP_OBJ:
		case ACL_GROUP: case ACL_MASK: case ACL_OTHER:
			break;
		default:
			return -EINVAL;
		}
		if (le16_to_cpu(e[i].perm) & ~7)
			return -EINVAL;
	}
	return n;
}

/*
 * The permission bits an access ACL stands for (posix_acl_equiv_mode).
 * Returns 0 if the mode says everything the ACL says, 1 if not, <0 if bad.
 */
static int acl_equiv_mode(const void *value, size_t size, mode_t *mode)
{
	const struct acl_entry *e = (const void *)((const u8 *)value + 4);
	int n = acl_count(value, size), i, not_equiv = 0, mask = -1;
	mode_t m = 0;

	if (n < 0)
		return n;
	for (i = 0; i < n; i++) {
		u16 perm = le16_to_cpu(e[i].perm);

		switch (le16_to_cpu(e[i].tag)) {
		case ACL_USER_OBJ:
			m |= perm << 6;
			break;
		case ACL_GROUP_OBJ:
			m |= perm << 3;
			break;
		case ACL_OTHER:
			m |= perm;
			break;
		case ACL_MASK:
			mask = perm;
			not_equiv = 1;
			break;
		default:
			not_equiv = 1;
		}
	}
	if (mask >= 0)
		m = (m & ~070) | (mask << 3);
	*mode = m;
	return not_equiv;
}

/*
 * Mask a copy of a default ACL with the create mode (posix_acl_create_masq):
 * updates *mode, returns 1 if the ACL says more than the mode, 0 if not.
 */
int acl_create_masq(void *value, size_t size, mode_t *mode)
{
	struct acl_entry *e = (void *)((u8 *)value + 4);
	struct acl_entry *group_obj = NULL, *mask_obj = NULL;
	int n = acl_count(value, size), i, not_equiv = 0;
	mode_t m = *mode;

	for (i = 0; i < n; i++) {
		u16 perm = le16_to_cpu(e[i].perm);

		switch (le16_to_cpu(e[i].tag)) {
		case ACL_USER_OBJ:
			perm &= (m >> 6) & 7;
			m &= (perm << 6) | ~0700;
			e[i].perm = cpu_to_le16(perm);
			break;
		case ACL_USER:
		case ACL_GROUP:
			not_equiv = 1;
			break;
		case ACL_GROUP_OBJ:
			group_obj = &e[i];
			break;
		case ACL_OTHER:
			perm &= m & 7;
			m &= perm | ~07;
			e[i].perm = cpu_to_le16(perm);
			break;
		case ACL_MASK:
			mask_obj = &e[i];
			not_equiv = 1;
			break;
		}
	}
	if (mask_obj || group_obj) {
		struct acl_entry *g = mask_obj ? mask_obj : group_obj;
		u16 perm = le16_to_cpu(g->perm) & ((m >> 3) & 7);

		g->perm = cpu_to_le16(perm);
		m &= (perm << 3) | ~070;
	}
	*mode = m;
	return not_equiv;
}

/* An xattr value in a new buffer; 0 with *out NULL when there is none. */
ssize_t get_xattr_alloc(struct mfs_fs_info *fs, u64 ino, const char *name, void **out)
{
	ssize_t n;
	void *buf;

	*out = NULL;
	for (;;) {
		n = mfs_getxattr(fs, ino, name, NULL, 0);
		if (n == -ENODATA)
			return 0;
		if (n <= 0)
			return n;
		buf = malloc(n);
		if (!buf)
			return -ENOMEM;
		n = mfs_getxattr(fs, ino, name, buf, n);
		if (n > 0) {
			*out = buf;
			return n;
		}
		free(buf);
		if (n != -ERANGE)
			return n == -ENODATA ? 0 : n;
	}
}

/* chmod: the access ACL's owner, mask (or group) and other entries follow the mode. */
int acl_chmod(struct mfs_fs_info *fs, u64 ino, mode_t mode)
{
	struct acl_entry *e, *group_obj = NULL, *mask_obj = NULL;
	void *acl;
	ssize_t size = get_xattr_alloc(fs, ino, XATTR_ACL_ACCESS, &acl);
	int n, i, ret;

	if (size <= 0)
		return size;
	n = acl_count(acl, size);
	e = (void *)((u8 *)acl + 4);
	for (i = 0; i < n; i++) {
		switch (le16_to_cpu(e[i].tag)) {
		case ACL_USER_OBJ:
			e[i].perm = cpu_to_le16((mode >> 6) & 7);
			break;
		case ACL_GROUP_OBJ:
			group_obj = &e[i];
			break;
		case ACL_MASK:
			mask_obj = &e[i];
			break;
		case ACL_OTHER:
			e[i].perm = cpu_to_le16(mode & 7);
			break;
		}
	}
	if (mask_obj || group_obj)
		(mask_obj ? mask_obj : group_obj)->perm = cpu_to_le16((mode >> 3) & 7);
	ret = n < 0 ? n : mfs_setxattr(fs, ino, XATTR_ACL_ACCESS, acl, size, 0);
	free(acl);
	return ret;
}

/*
 * setxattr of an access ACL: set the mode it implies; store it only if it
 * says more. CLEAR_SGID: the caller may not keep set-group-ID (outside the
 * file's group, without CAP_FSETID: posix_acl_update_mode).
 */
int acl_set_access(struct mfs_fs_info *fs, u64 ino, const void *value, size_t size,
		   int flags, bool clear_sgid)
{
	struct mfs_stat cur, in, out;
	mode_t m;
	int not_equiv = acl_equiv_mode(value, size, &m), ret;

	if (not_equiv < 0)
		return not_equiv;
	ret = mfs_getattr(fs, ino, &cur);
	if (ret)
		return ret;
	if (not_equiv) {
		ret = mfs_setxattr(fs, ino, XATTR_ACL_ACCESS, value, size, flags);
		if (ret)
			return ret;
	} else {
		ret = mfs_removexattr(fs, ino, XATTR_ACL_ACCESS);
		if (ret && ret != -ENODATA)
			return ret;
	}
	memset(&in, 0, sizeof(in));
	in.mode = (cur.mode & ~0777) | m;
	if (clear_sgid)
		in.mode &= ~S_ISGID;
	return mfs_setattr(fs, ino, MFS_SET_MODE, &in, &out);
}
