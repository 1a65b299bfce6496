/*
 * Inodes, directories, xattrs and symlinks in the fs tree. File data lives
 * in extents.c, read.c and write.c. Public functions take fs->lock; the
 * static helpers expect it.
 */
#include <stdio.h>
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
/* ---------------- inode items ---------------- */

/*
 * The clock of every time the engine stamps: the kernel's coarse one (a
 * tick), which Linux filesystems stamp with and which the kernel uses for
 * the mtime/ctime of writes through the FUSE cache. A fine clock here dated
 * a new file after the write that followed it in the same tick, and that
 * write's time change cost a SETATTR round trip per created file.
 */
void mfs_now(struct mfs_timespec *ts)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME_COARSE, &now);
	ts->sec = cpu_to_le64(now.tv_sec);
	ts->nsec = cpu_to_le32(now.tv_nsec);
}

static void ts_to_cpu(struct timespec *out, const struct mfs_timespec *in)
{
	out->tv_sec = le64_to_cpu(in->sec);
	out->tv_nsec = le32_to_cpu(in->nsec);
}

void inode_ts_to_disk(struct mfs_timespec *out, const struct timespec *in)
{
	out->sec = cpu_to_le64(in->tv_sec);
	out->nsec = cpu_to_le32(in->tv_nsec);
}

void mfs_inode_to_stat(u64 ino, const struct mfs_inode_item *ii, struct mfs_stat *st)
{
	memset(st, 0, sizeof(*st));
	st->ino = ino;
	st->size = le64_to_cpu(ii->size);
	st->nbytes = le64_to_cpu(ii->nbytes);
	st->rdev = le64_to_cpu(ii->rdev);
	st->generation = le64_to_cpu(ii->generation);
	st->nlink = le32_to_cpu(ii->nlink);
	st->uid = le32_to_cpu(ii->uid);
	st->gid = le32_to_cpu(ii->gid);
	st->mode = le32_to_cpu(ii->mode);
	ts_to_cpu(&st->atime, &ii->atime);
	ts_to_cpu(&st->mtime, &ii->mtime);
	ts_to_cpu(&st->ctime, &ii->ctime);
	ts_to_cpu(&st->btime, &ii->otime);
}

int mfs_read_inode(struct mfs_fs_info *fs, u64 ino, struct mfs_inode_item *ii)
{
	struct mfs_key key = { ino, MFS_INODE_ITEM_KEY, 0 };
	struct mfs_path path;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_slot(NULL, fs->fs_root, &key, &path, 0, 0);
	if (ret > 0)
		ret = -ENOENT;
	if (ret == 0) {
		if (leaf_item_size(path.nodes[0], path.slots[0]) != sizeof(*ii))
			ret = -EUCLEAN;
		else
			memcpy(ii, leaf_item_data(path.nodes[0], path.slots[0]), sizeof(*ii));
	}
	mfs_release_path(&path);
	return ret;
}

int mfs_write_inode(struct mfs_trans_handle *trans, u64 ino, struct mfs_inode_item *ii)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_key key = { ino, MFS_INODE_ITEM_KEY, 0 };
	struct mfs_path path;
	int ret;

	ii->transid = cpu_to_le64(trans->transid);
	mfs_init_path(&path);
	ret = mfs_search_slot(trans, fs->fs_root, &key, &path, 0, 1);
	if (ret > 0)
		ret = -ENOENT;
	if (ret == 0) {
		memcpy(leaf_item_data(path.nodes[0], path.slots[0]), ii, sizeof(*ii));
		mfs_mark_buffer_dirty(trans, path.nodes[0]);
	}
	mfs_release_path(&path);
	return ret;
}

u32 mfs_mode_to_ft(u32 mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return MFS_FT_REG_FILE;
	case S_IFDIR: return MFS_FT_DIR;
	case S_IFCHR: return MFS_FT_CHRDEV;
	case S_IFBLK: return MFS_FT_BLKDEV;
	case S_IFIFO: return MFS_FT_FIFO;
	case S_IFSOCK: return MFS_FT_SOCK;
	case S_IFLNK: return MFS_FT_SYMLINK;
	}
	return MFS_FT_UNKNOWN;
}

u64 mfs_name_hash(const char *name, size_t len)
{
	return mfs_crc32c(~1U, name, len);
}

/* ---------------- multi-entry hashed items (dir items, xattrs) ---------------- */

/*
 * DIR_ITEM and XATTR_ITEM items hold every entry whose name has the item's
 * hash (their entries are walked with format/items.h).
 */

int inode_find_entry(struct mfs_root *root, const struct mfs_key *key, bool xattr,
		     const char *name, size_t len, struct mfs_path *path, struct mfs_entry *e)
{
	int ret;

	mfs_init_path(path);
	ret = mfs_search_slot(NULL, root, key, path, 0, 0);
	if (ret > 0)
		return -ENOENT;
	if (ret)
		return ret;
	return mfs_entry_find(leaf_item_data(path->nodes[0], path->slots[0]),
			      leaf_item_size(path->nodes[0], path->slots[0]), xattr, name, len, e);
}

/* Append bytes to the item at key (creating it), e.g. a new hashed entry. */
int inode_item_append(struct mfs_trans_handle *trans, struct mfs_root *root,
		       const struct mfs_key *key, const void *data, u32 len)
{
	struct mfs_path path;
	u32 old;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_slot(trans, root, key, &path, len, 1);
	if (ret < 0)
		goto out;
	if (ret > 0) {
		mfs_release_path(&path);
		ret = mfs_insert_item(trans, root, key, data, len);
		goto out;
	}
	old = leaf_item_size(path.nodes[0], path.slots[0]);
	ret = mfs_extend_item(trans, root, &path, len);
	if (!ret)
		memcpy((u8 *)leaf_item_data(path.nodes[0], path.slots[0]) + old, data, len);
out:
	mfs_release_path(&path);
	return ret;
}

/* Cut [off, off+len) out of the item at key; the item goes when empty. */
int inode_item_cut(struct mfs_trans_handle *trans, struct mfs_root *root,
		    const struct mfs_key *key, u32 off, u32 len)
{
	struct mfs_path path;
	u32 size;
	u8 *buf;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_slot(trans, root, key, &path, -1, 1);
	if (ret > 0)
		ret = -ENOENT;
	if (ret)
		goto out;
	size = leaf_item_size(path.nodes[0], path.slots[0]);
	if (off + len > size) {
		ret = -EUCLEAN;
		goto out;
	}
	if (len == size) {
		ret = mfs_del_item(trans, root, &path);
		goto out;
	}
	buf = malloc(size);
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	memcpy(buf, leaf_item_data(path.nodes[0], path.slots[0]), size);
	memmove(buf + off, buf + off + len, size - off - len);
	memcpy(leaf_item_data(path.nodes[0], path.slots[0]), buf, size - len);
	free(buf);
	ret = mfs_truncate_item(trans, &path, size - len);
out:
	mfs_release_path(&path);
	return ret;
}

/* ---------------- directory entries ---------------- */

struct dir_entry {
	u64 child;
	u64 index;
	u8 type;
};

static int find_dir_entry(struct mfs_fs_info *fs, u64 dir, const char *name,
			  struct dir_entry *out)
{
	size_t len = strlen(name);
	struct mfs_key key = { dir, MFS_DIR_ITEM_KEY, mfs_name_hash(name, len) };
	struct mfs_path path;
	struct mfs_entry e;
	int ret;

	if (len > MFS_NAME_LEN)
		return -ENAMETOOLONG;
	ret = inode_find_entry(fs->fs_root, &key, false, name, len, &path, &e);
	if (!ret) {
		out->child = le64_to_cpu(e.di->child);
		out->index = le64_to_cpu(e.di->index);
		out->type = e.di->type;
	}
	mfs_release_path(&path);
	return ret;
}

static int add_dir_entry(struct mfs_trans_handle *trans, u64 dir, const char *name,
			 u64 child, u8 type)
{
	struct mfs_fs_info *fs = trans->fs_info;
	size_t len = strlen(name);
	struct mfs_inode_item dii;
	struct mfs_key key;
	u8 buf[sizeof(struct mfs_dir_item) + MFS_NAME_LEN];
	struct mfs_dir_item *di = (void *)buf;
	u64 index;
	int ret;

	ret = mfs_read_inode(fs, dir, &dii);
	if (ret)
		return ret;
	index = le64_to_cpu(dii.dir_index_next);
	di->child = cpu_to_le64(child);
	di->index = cpu_to_le64(index);
	di->transid = cpu_to_le64(trans->transid);
	di->name_len = cpu_to_le16(len);
	di->type = type;
	memcpy(di + 1, name, len);

	key.objectid = dir;
	key.type = MFS_DIR_ITEM_KEY;
	key.offset = mfs_name_hash(name, len);
	ret = inode_item_append(trans, fs->fs_root, &key, buf, sizeof(*di) + len);
	if (ret)
		return ret;
	key.type = MFS_DIR_INDEX_KEY;
	key.offset = index;
	ret = mfs_insert_item(trans, fs->fs_root, &key, buf, sizeof(*di) + len);
	if (ret)
		return ret;
	dii.dir_index_next = cpu_to_le64(index + 1);
	dii.size = cpu_to_le64(le64_to_cpu(dii.size) + len);
	mfs_now(&dii.mtime);
	dii.ctime = dii.mtime;
	return mfs_write_inode(trans, dir, &dii);
}

static int del_dir_entry(struct mfs_trans_handle *trans, u64 dir, const char *name,
			 u64 index)
{
	struct mfs_fs_info *fs = trans->fs_info;
	size_t len = strlen(name);
	struct mfs_key key = { dir, MFS_DIR_ITEM_KEY, mfs_name_hash(name, len) };
	struct mfs_inode_item dii;
	struct mfs_path path;
	struct mfs_entry e;
	int ret;

	ret = inode_find_entry(fs->fs_root, &key, false, name, len, &path, &e);
	mfs_release_path(&path);
	if (ret)
		return ret;
	ret = inode_item_cut(trans, fs->fs_root, &key, e.off, e.size);
	if (ret)
		return ret;
	key.type = MFS_DIR_INDEX_KEY;
	key.offset = index;
	mfs_init_path(&path);
	ret = mfs_search_slot(trans, fs->fs_root, &key, &path, -1, 1);
	if (ret > 0)
		ret = -EUCLEAN;
	if (ret == 0)
		ret = mfs_del_item(trans, fs->fs_root, &path);
	mfs_release_path(&path);
	if (ret)
		return ret;
	ret = mfs_read_inode(fs, dir, &dii);
	if (ret)
		return ret;
	dii.size = cpu_to_le64(le64_to_cpu(dii.size) - min_t(u64, len, le64_to_cpu(dii.size)));
	mfs_now(&dii.mtime);
	dii.ctime = dii.mtime;
	return mfs_write_inode(trans, dir, &dii);
}

static int dir_is_empty(struct mfs_fs_info *fs, u64 dir)
{
	struct mfs_key key = { dir, MFS_DIR_INDEX_KEY, 0 };
	struct mfs_path path;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_forward(fs->fs_root, &key, &path);
	if (ret == 0) {
		leaf_item_key(path.nodes[0], path.slots[0], &key);
		ret = !(key.objectid == dir && key.type == MFS_DIR_INDEX_KEY);
	} else if (ret > 0) {
		ret = 1;
	}
	mfs_release_path(&path);
	return ret;
}

/* ---------------- setup, root dir, orphans ---------------- */

static int add_orphan(struct mfs_trans_handle *trans, u64 ino)
{
	struct mfs_key key = { MFS_ORPHAN_OBJECTID, MFS_ORPHAN_ITEM_KEY, ino };
	/* an empty item; memcpy from NULL is undefined even for 0 bytes */
	int ret = mfs_insert_item(trans, trans->fs_info->fs_root, &key, "", 0);

	return ret == -EEXIST ? 0 : ret;
}

static int del_item_if_present(struct mfs_trans_handle *trans, struct mfs_root *root,
			       const struct mfs_key *key)
{
	struct mfs_path path;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_slot(trans, root, key, &path, -1, 1);
	if (ret == 0)
		ret = mfs_del_item(trans, root, &path);
	else if (ret > 0)
		ret = 0;
	mfs_release_path(&path);
	return ret;
}

static int init_inode(struct mfs_trans_handle *trans, u64 ino, u32 mode, u64 rdev,
		      u32 uid, u32 gid, struct mfs_inode_item *ii)
{
	struct mfs_key key = { ino, MFS_INODE_ITEM_KEY, 0 };

	memset(ii, 0, sizeof(*ii));
	ii->generation = cpu_to_le64(trans->transid);
	ii->transid = cpu_to_le64(trans->transid);
	ii->nlink = cpu_to_le32(S_ISDIR(mode) ? 2 : 1);
	ii->uid = cpu_to_le32(uid);
	ii->gid = cpu_to_le32(gid);
	ii->mode = cpu_to_le32(mode);
	ii->rdev = cpu_to_le64(rdev);
	ii->dir_index_next = cpu_to_le64(2);
	mfs_now(&ii->atime);
	ii->mtime = ii->ctime = ii->otime = ii->atime;
	return mfs_insert_item(trans, trans->fs_info->fs_root, &key, ii, sizeof(*ii));
}

int mfs_make_root_dir(struct mfs_trans_handle *trans, u32 uid, u32 gid)
{
	struct mfs_inode_item ii;

	trans->fs_info->next_ino = MFS_ROOT_DIR_OBJECTID + 1;
	return init_inode(trans, MFS_ROOT_DIR_OBJECTID, S_IFDIR | 0755, 0, uid, gid, &ii);
}

static int find_next_ino(struct mfs_fs_info *fs)
{
	struct mfs_key key = { MFS_ORPHAN_OBJECTID - 1, (u8)-1, (u64)-1 };
	struct mfs_path path;
	int ret;

	fs->next_ino = MFS_ROOT_DIR_OBJECTID + 1;
	mfs_init_path(&path);
	ret = mfs_search_slot(NULL, fs->fs_root, &key, &path, 0, 0);
	if (ret < 0)
		goto out;
	for (;;) {
		ret = mfs_prev_item(fs->fs_root, &path);
		if (ret) {
			ret = ret > 0 ? 0 : ret;
			break;
		}
		leaf_item_key(path.nodes[0], path.slots[0], &key);
		if (key.objectid < MFS_ORPHAN_OBJECTID) {
			if (key.objectid >= fs->next_ino)
				fs->next_ino = key.objectid + 1;
			break;
		}
	}
out:
	mfs_release_path(&path);
	return ret;
}

static int evict_locked(struct mfs_fs_info *fs, u64 ino);

int mfs_fs_setup(struct mfs_fs_info *fs)
{
	struct mfs_key key = { MFS_ORPHAN_OBJECTID, MFS_ORPHAN_ITEM_KEY, 0 };
	struct mfs_path path;
	u64 *orphans = NULL;
	int n = 0, i, ret;

	if (!fs->fs_root)
		return -EUCLEAN;
	pthread_mutex_lock(&fs->lock);
	ret = find_next_ino(fs);
	if (ret || !(fs->open_flags & MFS_OPEN_WRITABLE))
		goto out;
	/* inodes unlinked while still open when we last stopped */
	mfs_init_path(&path);
	ret = mfs_search_forward(fs->fs_root, &key, &path);
	while (ret == 0) {
		u64 *p;

		leaf_item_key(path.nodes[0], path.slots[0], &key);
		if (key.objectid != MFS_ORPHAN_OBJECTID || key.type != MFS_ORPHAN_ITEM_KEY)
			break;
		p = realloc(orphans, (n + 1) * sizeof(*orphans));
		if (!p) {
			ret = -ENOMEM;
			break;
		}
		orphans = p;
		orphans[n++] = key.offset;
		ret = mfs_next_item(fs->fs_root, &path);
	}
	mfs_release_path(&path);
	if (ret < 0)
		goto out;
	ret = 0;
	for (i = 0; i < n && !ret; i++)
		ret = evict_locked(fs, orphans[i]);
out:
	pthread_mutex_unlock(&fs->lock);
	free(orphans);
	return ret;
}

/* ---------------- public: lookup, getattr ---------------- */

int mfs_getattr(struct mfs_fs_info *fs, u64 ino, struct mfs_stat *st)
{
	struct mfs_inode_item ii;
	int ret;

	pthread_mutex_lock(&fs->lock);
	ret = mfs_read_inode(fs, ino, &ii);
	pthread_mutex_unlock(&fs->lock);
	if (!ret)
		mfs_inode_to_stat(ino, &ii, st);
	return ret;
}

static int lookup_locked(struct mfs_fs_info *fs, u64 dir, const char *name,
			 struct mfs_stat *st)
{
	struct mfs_inode_item ii;
	struct dir_entry de;
	int ret;

	ret = mfs_read_inode(fs, dir, &ii);
	if (ret)
		return ret;
	if (!S_ISDIR(le32_to_cpu(ii.mode)))
		return -ENOTDIR;
	ret = find_dir_entry(fs, dir, name, &de);
	if (ret)
		return ret;
	ret = mfs_read_inode(fs, de.child, &ii);
	if (ret == -ENOENT)
		ret = -EUCLEAN;	/* an entry pointing nowhere */
	if (!ret)
		mfs_inode_to_stat(de.child, &ii, st);
	return ret;
}

int mfs_lookup(struct mfs_fs_info *fs, u64 dir, const char *name, struct mfs_stat *st)
{
	int ret;

	pthread_mutex_lock(&fs->lock);
	ret = lookup_locked(fs, dir, name, st);
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

/* ---------------- create, link, unlink ---------------- */

static int change_nlink(struct mfs_trans_handle *trans, u64 ino, int delta,
			struct mfs_inode_item *out)
{
	struct mfs_inode_item ii;
	int ret = mfs_read_inode(trans->fs_info, ino, &ii);
	s64 n;

	if (ret)
		return ret;
	n = (s64)le32_to_cpu(ii.nlink) + delta;
	ii.nlink = cpu_to_le32(n < 0 ? 0 : n);
	mfs_now(&ii.ctime);
	ret = mfs_write_inode(trans, ino, &ii);
	if (out)
		*out = ii;
	return ret;
}

static int create_locked(struct mfs_trans_handle *trans, u64 dir, const char *name,
			 u32 mode, u64 rdev, u32 uid, u32 gid, const char *target,
			 struct mfs_stat *st)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_inode_item ii;
	struct dir_entry de;
	u64 ino;
	int ret;

	if (strlen(name) > MFS_NAME_LEN)
		return -ENAMETOOLONG;
	ret = mfs_read_inode(fs, dir, &ii);
	if (ret)
		return ret;
	if (!S_ISDIR(le32_to_cpu(ii.mode)))
		return -ENOTDIR;
	if (le32_to_cpu(ii.nlink) == 0)
		return -ENOENT;
	ret = find_dir_entry(fs, dir, name, &de);
	if (ret == 0)
		return -EEXIST;
	if (ret != -ENOENT)
		return ret;
	ino = fs->next_ino++;
	ret = init_inode(trans, ino, mode, rdev, uid, gid, &ii);
	if (ret)
		return ret;
	if (S_ISLNK(mode)) {
		ret = mfs_write_inline(trans, ino, target, strlen(target));
		if (ret)
			return ret;
		ret = mfs_read_inode(fs, ino, &ii);
		if (ret)
			return ret;
	}
	ret = add_dir_entry(trans, dir, name, ino, mfs_mode_to_ft(mode));
	if (!ret && S_ISDIR(mode))
		ret = change_nlink(trans, dir, 1, NULL);
	if (!ret)
		mfs_inode_to_stat(ino, &ii, st);
	return ret;
}

int mfs_create(struct mfs_fs_info *fs, u64 dir, const char *name, u32 mode, u64 rdev,
	       u32 uid, u32 gid, const char *target, struct mfs_stat *st)
{
	struct mfs_trans_handle *trans;
	int ret;

	if (S_ISLNK(mode) && (!target || strlen(target) > MFS_MAX_INLINE(fs)))
		return target ? -ENAMETOOLONG : -EINVAL;
	pthread_mutex_lock(&fs->lock);
	ret = mfs_start_transaction_reserve(fs, CREATE_ITEMS, MFS_RESERVE_NORMAL, &trans);
	if (!ret) {
		ret = create_locked(trans, dir, name, mode, rdev, uid, gid, target, st);
		ret = mfs_end_transaction_ret(trans, ret);
	}
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

int mfs_link(struct mfs_fs_info *fs, u64 ino, u64 dir, const char *name, struct mfs_stat *st)
{
	struct mfs_trans_handle *trans;
	struct mfs_inode_item ii;
	struct dir_entry de;
	int ret;

	pthread_mutex_lock(&fs->lock);
	ret = mfs_start_transaction_reserve(fs, LINK_ITEMS, MFS_RESERVE_NORMAL, &trans);
	if (ret)
		goto unlock;
	ret = mfs_read_inode(fs, ino, &ii);
	if (!ret && S_ISDIR(le32_to_cpu(ii.mode)))
		ret = -EPERM;
	if (!ret && le32_to_cpu(ii.nlink) >= 65000)
		ret = -EMLINK;
	if (!ret) {
		ret = find_dir_entry(fs, dir, name, &de);
		ret = ret == 0 ? -EEXIST : (ret == -ENOENT ? 0 : ret);
	}
	if (!ret)
		ret = add_dir_entry(trans, dir, name, ino, mfs_mode_to_ft(le32_to_cpu(ii.mode)));
	if (!ret)
		ret = change_nlink(trans, ino, 1, &ii);
	if (!ret) {
		/* a linked orphan (O_TMPFILE style) is no longer one */
		struct mfs_key key = { MFS_ORPHAN_OBJECTID, MFS_ORPHAN_ITEM_KEY, ino };

		ret = del_item_if_present(trans, fs->fs_root, &key);
	}
	if (!ret)
		mfs_inode_to_stat(ino, &ii, st);
	ret = mfs_end_transaction_ret(trans, ret);
unlock:
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

/* ---------------- for the checker: lost+found ---------------- */

int inode_lost_found_dir(struct mfs_trans_handle *trans, u64 *dir)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_stat st;
	struct dir_entry de;
	int ret = find_dir_entry(fs, MFS_ROOT_DIR_OBJECTID, "lost+found", &de);

	if (ret == 0) {
		*dir = de.child;
		return de.type == MFS_FT_DIR ? 0 : -ENOTDIR;
	}
	if (ret != -ENOENT)
		return ret;
	/* e2fsck and btrfs check make it 0700: what it gathers was nobody's to see */
	ret = create_locked(trans, MFS_ROOT_DIR_OBJECTID, "lost+found", S_IFDIR | 0700, 0, 0, 0,
			    NULL, &st);
	if (!ret)
		*dir = st.ino;
	return ret;
}

int inode_link_lost(struct mfs_trans_handle *trans, u64 dir, u64 ino, u32 nlink, char *name)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_inode_item ii;
	struct dir_entry de;
	size_t len;
	u32 mode;
	int ret = mfs_read_inode(fs, ino, &ii);

	if (ret)
		return ret;
	mode = le32_to_cpu(ii.mode);
	len = snprintf(name, MFS_NAME_LEN + 1, "%llu", (unsigned long long)ino);
	while ((ret = find_dir_entry(fs, dir, name, &de)) == 0) {
		char suffix[24];
		size_t n = snprintf(suffix, sizeof(suffix), ".%llu", (unsigned long long)ino);

		if (len + n > MFS_NAME_LEN)
			return -EEXIST;
		memcpy(name + len, suffix, n + 1);
		len += n;
	}
	if (ret != -ENOENT)
		return ret;
	ret = add_dir_entry(trans, dir, name, ino, mfs_mode_to_ft(mode));
	if (!ret && S_ISDIR(mode))
		ret = change_nlink(trans, dir, 1, NULL);
	if (ret)
		return ret;
	ii.nlink = cpu_to_le32(nlink);
	mfs_now(&ii.ctime);
	return mfs_write_inode(trans, ino, &ii);
}

/* Drop one link of child; an inode with no links left becomes an orphan. */
static int drop_link(struct mfs_trans_handle *trans, u64 child, bool *orphaned)
{
	struct mfs_inode_item ii;
	int ret = mfs_read_inode(trans->fs_info, child, &ii);

	if (ret)
		return ret;
	if (S_ISDIR(le32_to_cpu(ii.mode)))
		ii.nlink = cpu_to_le32(0);
	else
		ii.nlink = cpu_to_le32(le32_to_cpu(ii.nlink) ? le32_to_cpu(ii.nlink) - 1 : 0);
	mfs_now(&ii.ctime);
	ret = mfs_write_inode(trans, child, &ii);
	if (ret)
		return ret;
	*orphaned = le32_to_cpu(ii.nlink) == 0;
	if (*orphaned)
		ret = add_orphan(trans, child);
	return ret;
}

/*
 * Take name (pointing at de) out of dir: the child loses a link (an orphan
 * when it was the last); a directory must be empty, and its parent loses
 * the link of its "..".
 */
static int remove_entry(struct mfs_trans_handle *trans, u64 dir, const char *name,
			const struct dir_entry *de, bool is_dir, bool *orphaned)
{
	int ret;

	if (is_dir) {
		ret = dir_is_empty(trans->fs_info, de->child);
		if (ret < 0)
			return ret;
		if (!ret)
			return -ENOTEMPTY;
	}
	ret = del_dir_entry(trans, dir, name, de->index);
	if (!ret)
		ret = drop_link(trans, de->child, orphaned);
	if (!ret && is_dir)
		ret = change_nlink(trans, dir, -1, NULL);
	return ret;
}

static int unlink_locked(struct mfs_trans_handle *trans, u64 dir, const char *name,
			 bool rmdir, u64 *victim, bool *orphaned)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_inode_item ii;
	struct dir_entry de;
	bool is_dir;
	int ret;

	*orphaned = false;
	ret = find_dir_entry(fs, dir, name, &de);
	if (ret)
		return ret;
	ret = mfs_read_inode(fs, de.child, &ii);
	if (ret)
		return ret == -ENOENT ? -EUCLEAN : ret;
	is_dir = S_ISDIR(le32_to_cpu(ii.mode));
	if (rmdir && !is_dir)
		return -ENOTDIR;
	if (!rmdir && is_dir)
		return -EISDIR;
	ret = remove_entry(trans, dir, name, &de, is_dir, orphaned);
	*victim = de.child;
	return ret;
}

int mfs_unlink(struct mfs_fs_info *fs, u64 dir, const char *name, bool rmdir,
	       u64 *victim, bool *orphaned)
{
	struct mfs_trans_handle *trans;
	int ret;

	pthread_mutex_lock(&fs->lock);
	ret = mfs_start_transaction_reserve(fs, UNLINK_ITEMS, MFS_RESERVE_FREEING, &trans);
	if (!ret) {
		ret = unlink_locked(trans, dir, name, rmdir, victim, orphaned);
		ret = mfs_end_transaction_ret(trans, ret);
	}
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

/* Delete every item whose key has this objectid. */
static int delete_items_of(struct mfs_trans_handle *trans, struct mfs_root *root, u64 objectid)
{
	for (;;) {
		struct mfs_key key = { objectid, 0, 0 };
		struct mfs_path path;
		int ret;

		mfs_init_path(&path);
		ret = mfs_search_forward(root, &key, &path);
		if (ret == 0)
			leaf_item_key(path.nodes[0], path.slots[0], &key);
		mfs_release_path(&path);
		if (ret)
			return ret > 0 ? 0 : ret;
		if (key.objectid != objectid)
			return 0;
		ret = mfs_search_slot(trans, root, &key, &path, -1, 1);
		if (ret == 0)
			ret = mfs_del_item(trans, root, &path);
		mfs_release_path(&path);
		if (ret)
			return ret > 0 ? -EUCLEAN : ret;
	}
}

/*
 * Drop the file extents of ino from pos on, EVICT_BATCH per transaction,
 * each reserved as freeing space: a file of any size can be deleted on a
 * full filesystem. The orphan item keeps a half-dropped file found at the
 * next mount.
 */
static int drop_extents_batched(struct mfs_fs_info *fs, u64 ino, u64 pos)
{
	struct mfs_trans_handle *trans;
	u64 n, next;
	int ret;

	for (;;) {
		ret = mfs_count_file_extents(fs, ino, pos, (u64)-1, EVICT_BATCH, &n, &next);
		if (ret || !n)
			return ret;
		ret = mfs_start_transaction_reserve(fs, 2 * n + 1, MFS_RESERVE_FREEING, &trans);
		if (ret)
			return ret;
		ret = mfs_drop_file_extents(trans, ino, pos, next);
		ret = mfs_end_transaction_ret(trans, ret);
		if (ret || next == (u64)-1)
			return ret;
		pos = next;
	}
}

/* Every item of the inode goes; its data extents lose their references. */
static int evict_locked(struct mfs_fs_info *fs, u64 ino)
{
	struct mfs_key key = { MFS_ORPHAN_OBJECTID, MFS_ORPHAN_ITEM_KEY, ino };
	struct mfs_trans_handle *trans;
	int ret;

	ret = drop_extents_batched(fs, ino, 0);
	if (ret)
		return ret;
	ret = mfs_start_transaction_reserve(fs, EVICT_ITEMS, MFS_RESERVE_FREEING, &trans);
	if (ret)
		return ret;
	ret = mfs_drop_file_extents(trans, ino, 0, (u64)-1);
	if (!ret)
		ret = delete_items_of(trans, fs->fs_root, ino);
	if (!ret)
		ret = del_item_if_present(trans, fs->fs_root, &key);
	ret = mfs_end_transaction_ret(trans, ret);
	return ret;
}

int mfs_evict(struct mfs_fs_info *fs, u64 ino)
{
	int ret;

	pthread_mutex_lock(&fs->lock);
	ret = evict_locked(fs, ino);
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

/* ---------------- rename ---------------- */

static int rename_locked(struct mfs_trans_handle *trans, u64 olddir, const char *oldname,
			 u64 newdir, const char *newname, unsigned int flags,
			 u64 *victim, bool *orphaned)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct dir_entry src, dst;
	bool src_dir, dst_dir = false, have_dst;
	int ret;

	*orphaned = false;
	*victim = 0;
	if (strlen(newname) > MFS_NAME_LEN)
		return -ENAMETOOLONG;
	ret = find_dir_entry(fs, olddir, oldname, &src);
	if (ret)
		return ret;
	ret = find_dir_entry(fs, newdir, newname, &dst);
	if (ret && ret != -ENOENT)
		return ret;
	have_dst = ret == 0;
	src_dir = src.type == MFS_FT_DIR;
	if (have_dst)
		dst_dir = dst.type == MFS_FT_DIR;
	if ((flags & MFS_RENAME_NOREPLACE) && have_dst)
		return -EEXIST;
	if ((flags & MFS_RENAME_EXCHANGE) && !have_dst)
		return -ENOENT;
	if (have_dst && dst.child == src.child)
		return 0;	/* two names of one inode: POSIX says do nothing */

	if (flags & MFS_RENAME_EXCHANGE) {
		ret = del_dir_entry(trans, olddir, oldname, src.index);
		if (!ret)
			ret = del_dir_entry(trans, newdir, newname, dst.index);
		if (!ret)
			ret = add_dir_entry(trans, olddir, oldname, dst.child, dst.type);
		if (!ret)
			ret = add_dir_entry(trans, newdir, newname, src.child, src.type);
		if (!ret && olddir != newdir && src_dir != dst_dir) {
			ret = change_nlink(trans, src_dir ? olddir : newdir, -1, NULL);
			if (!ret)
				ret = change_nlink(trans, src_dir ? newdir : olddir, 1, NULL);
		}
		if (!ret)
			ret = change_nlink(trans, src.child, 0, NULL);
		if (!ret)
			ret = change_nlink(trans, dst.child, 0, NULL);
		return ret;
	}
	if (have_dst) {
		if (src_dir && !dst_dir)
			return -ENOTDIR;
		if (!src_dir && dst_dir)
			return -EISDIR;
		ret = remove_entry(trans, newdir, newname, &dst, dst_dir, orphaned);
		if (ret)
			return ret;
		*victim = dst.child;
	}
	ret = del_dir_entry(trans, olddir, oldname, src.index);
	if (!ret)
		ret = add_dir_entry(trans, newdir, newname, src.child, src.type);
	if (!ret && src_dir && olddir != newdir) {
		ret = change_nlink(trans, olddir, -1, NULL);
		if (!ret)
			ret = change_nlink(trans, newdir, 1, NULL);
	}
	if (!ret)
		ret = change_nlink(trans, src.child, 0, NULL);	/* ctime */
	return ret;
}

int mfs_rename(struct mfs_fs_info *fs, u64 olddir, const char *oldname, u64 newdir,
	       const char *newname, unsigned int flags, u64 *victim, bool *orphaned)
{
	struct mfs_trans_handle *trans;
	int ret;

	if ((flags & MFS_RENAME_NOREPLACE) && (flags & MFS_RENAME_EXCHANGE))
		return -EINVAL;
	pthread_mutex_lock(&fs->lock);
	ret = mfs_start_transaction_reserve(fs, RENAME_ITEMS, MFS_RESERVE_NORMAL, &trans);
	if (!ret) {
		ret = rename_locked(trans, olddir, oldname, newdir, newname, flags, victim,
				    orphaned);
		ret = mfs_end_transaction_ret(trans, ret);
	}
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

/* ---------------- readdir ---------------- */

/*
 * One walk for readdir and readdirplus: with fill_plus, each entry comes
 * with its inode's attributes (read from the leaf next to the one before
 * it, usually: children are numbered in creation order, as DIR_INDEX is).
 */
static int readdir_locked(struct mfs_fs_info *fs, u64 dir, u64 pos, mfs_filldir_t fill,
			  mfs_filldir_plus_t fill_plus, void *arg)
{
	struct mfs_key key = { dir, MFS_DIR_INDEX_KEY, pos < 2 ? 2 : pos };
	struct mfs_inode_item ii;
	struct mfs_path path;
	int ret;

	ret = mfs_read_inode(fs, dir, &ii);
	if (!ret && !S_ISDIR(le32_to_cpu(ii.mode)))
		ret = -ENOTDIR;
	if (ret)
		return ret;
	if (fill_plus) {
		if (pos == 0 && fill_plus(arg, ".", dir, MFS_FT_DIR, 1, NULL))
			return 0;
		if (pos <= 1 && fill_plus(arg, "..", dir, MFS_FT_DIR, 2, NULL))
			return 0;
	} else {
		if (pos == 0 && fill(arg, ".", dir, MFS_FT_DIR, 1))
			return 0;
		if (pos <= 1 && fill(arg, "..", dir, MFS_FT_DIR, 2))
			return 0;
	}
	mfs_init_path(&path);
	ret = mfs_search_forward(fs->fs_root, &key, &path);
	while (ret == 0) {
		struct extent_buffer *leaf = path.nodes[0];
		const struct mfs_dir_item *di;
		struct mfs_entry_iter it;
		struct mfs_entry e, e2;
		char name[MFS_NAME_LEN + 1];
		u64 child;
		u32 nlen;
		int stop;

		leaf_item_key(leaf, path.slots[0], &key);
		if (key.objectid != dir || key.type != MFS_DIR_INDEX_KEY)
			break;
		/* a DIR_INDEX holds exactly one entry */
		mfs_entry_iter_init(&it, leaf_item_data(leaf, path.slots[0]),
				    leaf_item_size(leaf, path.slots[0]), false);
		/* a name that is no name ("..", "a/b") must not reach a caller as one */
		if (mfs_entry_next(&it, &e) != 1 || mfs_entry_next(&it, &e2) != 0 ||
		    !mfs_dir_name_valid(e.name, e.name_len)) {
			ret = -EUCLEAN;
			break;
		}
		di = e.di;
		nlen = e.name_len;
		memcpy(name, e.name, nlen);
		name[nlen] = 0;
		child = le64_to_cpu(di->child);
		if (fill_plus) {
			struct mfs_stat st;

			/* an unreadable inode is left to lookup, which reports it */
			if (mfs_read_inode(fs, child, &ii) == 0) {
				mfs_inode_to_stat(child, &ii, &st);
				stop = fill_plus(arg, name, child, di->type, key.offset + 1, &st);
			} else {
				stop = fill_plus(arg, name, child, di->type, key.offset + 1, NULL);
			}
		} else {
			stop = fill(arg, name, child, di->type, key.offset + 1);
		}
		if (stop)
			break;
		ret = mfs_next_item(fs->fs_root, &path);
	}
	mfs_release_path(&path);
	return ret > 0 ? 0 : ret;
}

int mfs_readdir(struct mfs_fs_info *fs, u64 dir, u64 pos, mfs_filldir_t fill, void *arg)
{
	int ret;

	pthread_mutex_lock(&fs->lock);
	ret = readdir_locked(fs, dir, pos, fill, NULL, arg);
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

int mfs_readdirplus(struct mfs_fs_info *fs, u64 dir, u64 pos, mfs_filldir_plus_t fill,
		    void *arg)
{
	int ret;

	pthread_mutex_lock(&fs->lock);
	ret = readdir_locked(fs, dir, pos, NULL, fill, arg);
	pthread_mutex_unlock(&fs->lock);
	return ret;
}
