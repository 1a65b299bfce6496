/*
 * Attributes of an inode: setattr (mode, owner, size, times) and extended
 * attributes (get, set, list, remove) in XATTR_ITEMs.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/fs/inode.h"
#include "kernel-shared/fs/inode-internal.h"
#include "kernel-shared/tree/transaction.h"
#include "kernel-shared/block/csum.h"
#include "kernel-shared/tree/alloc.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/format/items.h"

/*
 * Tree items an operation changes, at most: what it reserves metadata
 * space for (Documentation/space-reservation.md).
 */
#define CREATE_ITEMS	6	/* inode, dir item, dir index, parent, symlink target */
#define LINK_ITEMS	5	/* dir item, dir index, inode, orphan, parent */
#define UNLINK_ITEMS	6	/* dir item, dir index, child, orphan, parent */
#define RENAME_ITEMS	14	/* both names twice, a replaced target, four inodes */
#define EVICT_ITEMS	16	/* inode, inline extent, xattrs, orphan */
#define EVICT_BATCH	8	/* file extents dropped per transaction */
#define XATTR_ITEMS	2	/* the xattr item, the inode */
#define SETATTR_ITEMS	2
/* ---------------- setattr ---------------- */

/*
 * Shrink a file with many extents past newsize in steps from the end,
 * EVICT_BATCH extents per transaction, each setting the size to where it
 * cut: every step is a consistent shorter file, and each fits the global
 * reserve on a full filesystem. The last step is the caller's.
 */
static int shrink_batched(struct mfs_fs_info *fs, u64 ino, u64 newsize)
{
	u64 pos = round_up(newsize, 4096), n, next, *cuts = NULL;
	size_t nr = 0, i;
	int ret;

	/* where each extent past the new size starts */
	for (;;) {
		u64 *p = realloc(cuts, (nr + 1) * sizeof(*cuts));

		if (!p) {
			ret = -ENOMEM;
			goto out;
		}
		cuts = p;
		cuts[nr++] = pos;
		ret = mfs_count_file_extents(fs, ino, pos, (u64)-1, 1, &n, &next);
		if (ret || !n || next == (u64)-1)
			break;
		pos = next;
	}
	for (i = nr - 1; !ret && i >= EVICT_BATCH; i -= EVICT_BATCH) {
		u64 cut = cuts[i - EVICT_BATCH + 1];
		struct mfs_trans_handle *trans;
		struct mfs_inode_item ii;

		ret = mfs_read_inode(fs, ino, &ii);
		if (!ret)
			ret = mfs_start_transaction_reserve(fs, 2 * EVICT_BATCH + SETATTR_ITEMS,
							    MFS_RESERVE_FREEING, &trans);
		if (ret)
			break;
		/* preallocated extents past the size go without moving it */
		if (cut < le64_to_cpu(ii.size))
			ret = mfs_truncate(trans, ino, cut);
		else
			ret = mfs_drop_file_extents(trans, ino, cut, (u64)-1);
		ret = mfs_end_transaction_ret(trans, ret);
	}
out:
	free(cuts);
	return ret;
}

/*
 * A shrinking truncate frees space (and may use the global reserve); it
 * changes the items of the extents past the new size, and rewrites the
 * sector the new size falls in.
 */
static int setattr_reserve(struct mfs_fs_info *fs, u64 ino, unsigned int mask,
			   const struct mfs_stat *in, struct mfs_trans_handle **trans)
{
	struct mfs_inode_item ii;
	u64 n, next, from;
	int ret;

	if (!(mask & MFS_SET_SIZE))
		return mfs_start_transaction_reserve(fs, SETATTR_ITEMS, MFS_RESERVE_NORMAL, trans);
	ret = mfs_read_inode(fs, ino, &ii);
	if (ret)
		return ret;
	if (in->size >= le64_to_cpu(ii.size))
		return mfs_start_transaction_reserve(fs, SETATTR_ITEMS, MFS_RESERVE_NORMAL, trans);
	from = in->size & ~4095ULL;
	ret = shrink_batched(fs, ino, in->size);
	if (!ret)
		ret = mfs_count_file_extents(fs, ino, from, (u64)-1, 1U << 20, &n, &next);
	if (!ret && in->size != from)
		ret = mfs_data_space_check(fs, 4096);
	if (ret)
		return ret;
	return mfs_start_transaction_reserve(fs, 2 * n + 6 + SETATTR_ITEMS,
					     MFS_RESERVE_FREEING, trans);
}

/* MODE (an inode item's) without what the MFS_SET_KILL_* bits of MASK clear */
static u32 killed_mode(u32 mode, unsigned int mask)
{
	if (S_ISDIR(mode))
		return mode;
	if (mask & MFS_SET_KILL_SUID)
		mode &= ~S_ISUID;
	if ((mask & MFS_SET_KILL_SGID_ANY) || ((mask & MFS_SET_KILL_SGID) && (mode & S_IXGRP)))
		mode &= ~S_ISGID;
	return mode;
}

int mfs_setattr(struct mfs_fs_info *fs, u64 ino, unsigned int mask,
		const struct mfs_stat *in, struct mfs_stat *out)
{
	struct mfs_trans_handle *trans;
	struct mfs_inode_item ii;
	struct mfs_timespec now;
	int ret;

	pthread_mutex_lock(&fs->lock);
	ret = setattr_reserve(fs, ino, mask, in, &trans);
	if (ret)
		goto unlock;
	ret = mfs_read_inode(fs, ino, &ii);
	if (ret)
		goto end;
	mfs_now(&now);
	if (mask & MFS_SET_SIZE) {
		if (S_ISDIR(le32_to_cpu(ii.mode))) {
			ret = -EISDIR;
			goto end;
		}
		ret = mfs_truncate(trans, ino, in->size);
		if (ret)
			goto end;
		ret = mfs_read_inode(fs, ino, &ii);
		if (ret)
			goto end;
		ii.mtime = now;
	}
	if (mask & MFS_SET_MODE)
		ii.mode = cpu_to_le32((le32_to_cpu(ii.mode) & S_IFMT) | (in->mode & 07777));
	ii.mode = cpu_to_le32(killed_mode(le32_to_cpu(ii.mode), mask));
	if (mask & MFS_SET_UID)
		ii.uid = cpu_to_le32(in->uid);
	if (mask & MFS_SET_GID)
		ii.gid = cpu_to_le32(in->gid);
	if (mask & MFS_SET_ATIME_NOW)
		ii.atime = now;
	else if (mask & MFS_SET_ATIME)
		inode_ts_to_disk(&ii.atime, &in->atime);
	if (mask & MFS_SET_MTIME_NOW)
		ii.mtime = now;
	else if (mask & MFS_SET_MTIME)
		inode_ts_to_disk(&ii.mtime, &in->mtime);
	if (mask & MFS_SET_CTIME)
		inode_ts_to_disk(&ii.ctime, &in->ctime);
	else
		ii.ctime = now;
	ret = mfs_write_inode(trans, ino, &ii);
	if (!ret)
		mfs_inode_to_stat(ino, &ii, out);
end:
	ret = mfs_end_transaction_ret(trans, ret);
unlock:
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

int mfs_kill_suidgid(struct mfs_fs_info *fs, u64 ino, unsigned int kill)
{
	struct mfs_inode_item ii;
	struct mfs_stat in, out;
	u32 mode;
	int ret;

	pthread_mutex_lock(&fs->lock);
	ret = mfs_read_inode(fs, ino, &ii);
	mode = le32_to_cpu(ii.mode);
	pthread_mutex_unlock(&fs->lock);
	if (ret || killed_mode(mode, kill) == mode)
		return ret;
	/* applied again to the mode of the moment, under the lock */
	memset(&in, 0, sizeof(in));
	ret = mfs_setattr(fs, ino, kill & MFS_SET_KILL, &in, &out);
	return ret ? ret : 1;
}

int mfs_readlink(struct mfs_fs_info *fs, u64 ino, char *buf, size_t size)
{
	struct mfs_inode_item ii;
	ssize_t n;
	int ret;

	pthread_mutex_lock(&fs->lock);
	ret = mfs_read_inode(fs, ino, &ii);
	if (!ret && !S_ISLNK(le32_to_cpu(ii.mode)))
		ret = -EINVAL;
	if (!ret) {
		n = mfs_read_inline(fs, ino, buf, size - 1);
		if (n < 0)
			ret = n;
		else
			buf[n] = 0;
	}
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

/* ---------------- xattrs ---------------- */

static bool xattr_name_ok(const char *name)
{
	static const char * const prefixes[] = { "user.", "trusted.", "security.", "system.posix_acl_access",
						  "system.posix_acl_default" };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(prefixes); i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

int mfs_setxattr(struct mfs_fs_info *fs, u64 ino, const char *name, const void *value,
		 size_t size, int flags)
{
	size_t nlen = strlen(name);
	struct mfs_key key = { ino, MFS_XATTR_ITEM_KEY, mfs_name_hash(name, nlen) };
	struct mfs_trans_handle *trans;
	struct mfs_inode_item ii;
	struct mfs_path path;
	struct mfs_entry e;
	bool exists = false;
	u32 old_off = 0, old_size = 0;
	int ret;
	u8 *buf;

	if (!xattr_name_ok(name))
		return -EOPNOTSUPP;
	if (nlen > MFS_NAME_LEN || nlen == 0)
		return -ERANGE;
	if (sizeof(struct mfs_xattr_item) + nlen + size > MFS_MAX_XATTR_ITEM(fs))
		return -E2BIG;
	pthread_mutex_lock(&fs->lock);
	ret = mfs_start_transaction_reserve(fs, XATTR_ITEMS, MFS_RESERVE_NORMAL, &trans);
	if (ret)
		goto unlock;
	ret = mfs_read_inode(fs, ino, &ii);
	if (ret)
		goto end;
	ret = inode_find_entry(fs->fs_root, &key, true, name, nlen, &path, &e);
	exists = ret == 0;
	if (exists) {
		u32 isize = leaf_item_size(path.nodes[0], path.slots[0]);

		old_off = e.off;
		old_size = e.size;
		if (isize - e.size + sizeof(*e.xi) + nlen + size > MFS_MAX_XATTR_ITEM(fs))
			ret = -E2BIG;
	}
	if (ret == -ENOENT)
		ret = 0;
	mfs_release_path(&path);
	if (ret)
		goto end;
	if ((flags & XATTR_CREATE_FLAG) && exists) {
		ret = -EEXIST;
		goto end;
	}
	if ((flags & XATTR_REPLACE_FLAG) && !exists) {
		ret = -ENODATA;
		goto end;
	}
	if (exists) {
		/* fs->lock is held throughout: the entry is where it was found */
		ret = inode_item_cut(trans, fs->fs_root, &key, old_off, old_size);
		if (ret)
			goto end;
	}
	buf = malloc(sizeof(struct mfs_xattr_item) + nlen + size);
	if (!buf) {
		ret = -ENOMEM;
		goto end;
	}
	((struct mfs_xattr_item *)buf)->name_len = cpu_to_le16(nlen);
	((struct mfs_xattr_item *)buf)->value_len = cpu_to_le16(size);
	memcpy(buf + sizeof(struct mfs_xattr_item), name, nlen);
	memcpy(buf + sizeof(struct mfs_xattr_item) + nlen, value, size);
	ret = inode_item_append(trans, fs->fs_root, &key, buf, sizeof(struct mfs_xattr_item) + nlen + size);
	free(buf);
	if (!ret) {
		ret = mfs_read_inode(fs, ino, &ii);
		if (!ret) {
			mfs_now(&ii.ctime);
			ret = mfs_write_inode(trans, ino, &ii);
		}
	}
end:
	ret = mfs_end_transaction_ret(trans, ret);
unlock:
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

ssize_t mfs_getxattr(struct mfs_fs_info *fs, u64 ino, const char *name, void *value,
		     size_t size)
{
	size_t nlen = strlen(name);
	struct mfs_key key = { ino, MFS_XATTR_ITEM_KEY, mfs_name_hash(name, nlen) };
	struct mfs_path path;
	struct mfs_entry e;
	ssize_t ret;

	pthread_mutex_lock(&fs->lock);
	ret = inode_find_entry(fs->fs_root, &key, true, name, nlen, &path, &e);
	if (ret) {
		ret = ret == -ENOENT ? -ENODATA : ret;
	} else {
		ret = e.value_len;
		if (size && size < e.value_len)
			ret = -ERANGE;
		else if (size)
			memcpy(value, e.value, e.value_len);
	}
	mfs_release_path(&path);
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

ssize_t mfs_listxattr(struct mfs_fs_info *fs, u64 ino, char *list, size_t size)
{
	struct mfs_key key = { ino, MFS_XATTR_ITEM_KEY, 0 };
	struct mfs_path path;
	size_t total = 0;
	int ret;

	pthread_mutex_lock(&fs->lock);
	mfs_init_path(&path);
	ret = mfs_search_forward(fs->fs_root, &key, &path);
	while (ret == 0) {
		struct mfs_entry_iter it;
		struct mfs_entry e;

		leaf_item_key(path.nodes[0], path.slots[0], &key);
		if (key.objectid != ino || key.type != MFS_XATTR_ITEM_KEY)
			break;
		mfs_entry_iter_init(&it, leaf_item_data(path.nodes[0], path.slots[0]),
				    leaf_item_size(path.nodes[0], path.slots[0]), true);
		while ((ret = mfs_entry_next(&it, &e)) == 1) {
			if (size) {
				if (total + e.name_len + 1 > size) {
					ret = -ERANGE;
					goto out;
				}
				memcpy(list + total, e.name, e.name_len);
				list[total + e.name_len] = 0;
			}
			total += e.name_len + 1;
		}
		if (ret < 0)
			goto out;
		ret = mfs_next_item(fs->fs_root, &path);
	}
	if (ret > 0)
		ret = 0;
out:
	mfs_release_path(&path);
	pthread_mutex_unlock(&fs->lock);
	return ret < 0 ? ret : (ssize_t)total;
}

int mfs_removexattr(struct mfs_fs_info *fs, u64 ino, const char *name)
{
	size_t nlen = strlen(name);
	struct mfs_key key = { ino, MFS_XATTR_ITEM_KEY, mfs_name_hash(name, nlen) };
	struct mfs_trans_handle *trans;
	struct mfs_path path;
	struct mfs_entry e;
	u32 esize = 0, off = 0;
	int ret;

	pthread_mutex_lock(&fs->lock);
	ret = inode_find_entry(fs->fs_root, &key, true, name, nlen, &path, &e);
	if (!ret) {
		off = e.off;
		esize = e.size;
	} else {
		ret = ret == -ENOENT ? -ENODATA : ret;
	}
	mfs_release_path(&path);
	if (!ret)
		ret = mfs_start_transaction_reserve(fs, XATTR_ITEMS, MFS_RESERVE_FREEING,
						    &trans);
	if (!ret) {
		ret = inode_item_cut(trans, fs->fs_root, &key, off, esize);
		ret = mfs_end_transaction_ret(trans, ret);
	}
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

/*
 * relatime: the access time moves when it is older than the last change
 * or a day old, so reads rarely cost a metadata write.
 */
int mfs_touch_atime(struct mfs_fs_info *fs, u64 ino)
{
	struct mfs_trans_handle *trans;
	struct mfs_inode_item ii;
	struct mfs_timespec now;
	u64 at;
	int ret;

	pthread_mutex_lock(&fs->lock);
	ret = mfs_read_inode(fs, ino, &ii);
	if (ret)
		goto out;
	mfs_now(&now);
	at = le64_to_cpu(ii.atime.sec);
	if (at > le64_to_cpu(ii.mtime.sec) && at > le64_to_cpu(ii.ctime.sec) &&
	    le64_to_cpu(now.sec) < at + 24 * 3600)
		goto out;
	ret = mfs_start_transaction_reserve(fs, 1, MFS_RESERVE_NORMAL, &trans);
	if (ret)
		goto out;
	ii.atime = now;
	ret = mfs_write_inode(trans, ino, &ii);
	ret = mfs_end_transaction_ret(trans, ret);
out:
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

int mfs_sync_fs(struct mfs_fs_info *fs)
{
	int ret;

	pthread_mutex_lock(&fs->lock);
	/* after a failed commit nothing since the last one will reach the disk */
	/* the devices flush without the lock: user I/O goes on meanwhile */
	ret = fs->fatal_error ? -EIO : mfs_commit_if_dirty_unlocking(fs);
	pthread_mutex_unlock(&fs->lock);
	return ret;
}
