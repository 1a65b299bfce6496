/*
 * FUSE low-level operations mapped onto the engine (kernel-shared/inode.h).
 * Thin on purpose: inode numbers, lookup counts for unlinked-but-open
 * files, the periodic commit and the admin ioctls live here; everything
 * about the filesystem lives in the engine.
 */
#define FUSE_USE_VERSION 312
#include <fuse3/fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <time.h>
#include <sys/xattr.h>
#include "fuse/server.h"
#include "kernel-shared/inode.h"
#include "kernel-shared/ioctl.h"
#include "kernel-shared/transaction.h"
#include "kernel-shared/disk-io.h"

#define ATTR_TIMEOUT 1.0

struct ino_count {
	u64 ino;
	u64 nlookup;
	bool orphan;
	struct ino_count *next;
};

#define INO_HASH 4096

struct server {
	struct mfs_fs_info *fs;
	const struct mfs_mount_opts *opts;
	struct fuse_session *se;
	pthread_mutex_t ilock;
	struct ino_count *counts[INO_HASH];
	pthread_t committer;
	pthread_mutex_t stop_lock;
	pthread_cond_t stop_cond;
	bool stopping;
};

static struct server *srv(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* FUSE's root is 1; ours is 256. Every other number is the same. */
static u64 to_mfs(fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? MFS_ROOT_DIR_OBJECTID : ino;
}

static fuse_ino_t to_fuse(u64 ino)
{
	return ino == MFS_ROOT_DIR_OBJECTID ? FUSE_ROOT_ID : ino;
}

static void stat_to_fuse(const struct mfs_stat *m, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = to_fuse(m->ino);
	st->st_mode = m->mode;
	st->st_nlink = m->nlink;
	st->st_uid = m->uid;
	st->st_gid = m->gid;
	st->st_rdev = m->rdev;
	st->st_size = m->size;
	st->st_blksize = 4096;
	st->st_blocks = m->nbytes / 512;
	st->st_atim = m->atime;
	st->st_mtim = m->mtime;
	st->st_ctim = m->ctime;
}

/* ---------------- lookup counts and orphans ---------------- */

static struct ino_count **count_slot(struct server *s, u64 ino)
{
	struct ino_count **pp = &s->counts[ino % INO_HASH];

	while (*pp && (*pp)->ino != ino)
		pp = &(*pp)->next;
	return pp;
}

static void count_lookup(struct server *s, u64 ino)
{
	struct ino_count **pp;

	pthread_mutex_lock(&s->ilock);
	pp = count_slot(s, ino);
	if (!*pp) {
		*pp = calloc(1, sizeof(**pp));
		if (*pp)
			(*pp)->ino = ino;
	}
	if (*pp)
		(*pp)->nlookup++;
	pthread_mutex_unlock(&s->ilock);
}

/* Returns true when the inode is an orphan nobody references any more. */
static bool count_forget(struct server *s, u64 ino, u64 n)
{
	struct ino_count **pp, *c;
	bool evict = false;

	pthread_mutex_lock(&s->ilock);
	pp = count_slot(s, ino);
	c = *pp;
	if (c) {
		c->nlookup -= n < c->nlookup ? n : c->nlookup;
		if (!c->nlookup) {
			evict = c->orphan;
			*pp = c->next;
			free(c);
		}
	}
	pthread_mutex_unlock(&s->ilock);
	return evict;
}

/* The inode lost its last link: free it now or when the kernel forgets it. */
static void orphaned(struct server *s, u64 ino)
{
	struct ino_count **pp;
	bool now;

	pthread_mutex_lock(&s->ilock);
	pp = count_slot(s, ino);
	now = !*pp;
	if (*pp)
		(*pp)->orphan = true;
	pthread_mutex_unlock(&s->ilock);
	if (now)
		mfs_evict(s->fs, ino);
}

/* ---------------- replies ---------------- */

static void reply_entry(fuse_req_t req, const struct mfs_stat *st)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	e.ino = to_fuse(st->ino);
	e.generation = st->generation;
	e.attr_timeout = ATTR_TIMEOUT;
	e.entry_timeout = ATTR_TIMEOUT;
	stat_to_fuse(st, &e.attr);
	count_lookup(srv(req), st->ino);
	if (fuse_reply_entry(req, &e) == -ENOENT)
		count_forget(srv(req), st->ino, 1);
}

static void reply_attr(fuse_req_t req, const struct mfs_stat *st)
{
	struct stat s;

	stat_to_fuse(st, &s);
	fuse_reply_attr(req, &s, ATTR_TIMEOUT);
}

static int ro_check(fuse_req_t req)
{
	if (srv(req)->opts->ro) {
		fuse_reply_err(req, EROFS);
		return 1;
	}
	return 0;
}

/* ---------------- operations ---------------- */

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct server *s = userdata;

	conn->max_write = 1024 * 1024;
	conn->max_readahead = 1024 * 1024;
	if (conn->capable & FUSE_CAP_WRITEBACK_CACHE && !s->opts->ro)
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	if (conn->capable & FUSE_CAP_IOCTL_DIR)
		conn->want |= FUSE_CAP_IOCTL_DIR;
	if (conn->capable & FUSE_CAP_POSIX_ACL)
		conn->want |= FUSE_CAP_POSIX_ACL;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	/* let the kernel clear suid/sgid on writes by others */
	conn->want &= ~FUSE_CAP_HANDLE_KILLPRIV;
	conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mfs_stat st;
	int ret = mfs_lookup(srv(req)->fs, to_mfs(parent), name, &st);

	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	reply_entry(req, &st);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct server *s = srv(req);

	if (count_forget(s, to_mfs(ino), nlookup))
		mfs_evict(s->fs, to_mfs(ino));
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct server *s = srv(req);
	size_t i;

	for (i = 0; i < count; i++)
		if (count_forget(s, to_mfs(forgets[i].ino), forgets[i].nlookup))
			mfs_evict(s->fs, to_mfs(forgets[i].ino));
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mfs_stat st;
	int ret = mfs_getattr(srv(req)->fs, to_mfs(ino), &st);

	(void)fi;
	if (ret)
		fuse_reply_err(req, -ret);
	else
		reply_attr(req, &st);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct mfs_stat in, out;
	unsigned int mask = 0;
	int ret;

	(void)fi;
	if (ro_check(req))
		return;
	memset(&in, 0, sizeof(in));
	in.mode = attr->st_mode;
	in.uid = attr->st_uid;
	in.gid = attr->st_gid;
	in.size = attr->st_size;
	in.atime = attr->st_atim;
	in.mtime = attr->st_mtim;
	in.ctime = attr->st_ctim;
	if (to_set & FUSE_SET_ATTR_MODE)
		mask |= MFS_SET_MODE;
	if (to_set & FUSE_SET_ATTR_UID)
		mask |= MFS_SET_UID;
	if (to_set & FUSE_SET_ATTR_GID)
		mask |= MFS_SET_GID;
	if (to_set & FUSE_SET_ATTR_SIZE)
		mask |= MFS_SET_SIZE;
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		mask |= MFS_SET_ATIME_NOW;
	else if (to_set & FUSE_SET_ATTR_ATIME)
		mask |= MFS_SET_ATIME;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		mask |= MFS_SET_MTIME_NOW;
	else if (to_set & FUSE_SET_ATTR_MTIME)
		mask |= MFS_SET_MTIME;
	if (to_set & FUSE_SET_ATTR_CTIME)
		mask |= MFS_SET_CTIME;
	ret = mfs_setattr(srv(req)->fs, to_mfs(ino), mask, &in, &out);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		reply_attr(req, &out);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[4096];
	int ret = mfs_readlink(srv(req)->fs, to_mfs(ino), buf, sizeof(buf));

	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_readlink(req, buf);
}

/* New inodes: the caller's ids; a set-group-ID directory passes its group on. */
static void do_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      dev_t rdev, const char *target, struct fuse_file_info *fi)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct mfs_stat dir, st;
	u32 gid = ctx->gid;
	int ret;

	if (ro_check(req))
		return;
	ret = mfs_getattr(srv(req)->fs, to_mfs(parent), &dir);
	if (!ret && (dir.mode & S_ISGID)) {
		gid = dir.gid;
		if (S_ISDIR(mode))
			mode |= S_ISGID;
	}
	if (!ret)
		ret = mfs_create(srv(req)->fs, to_mfs(parent), name, mode, rdev, ctx->uid, gid,
				 target, &st);
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	if (fi) {
		struct fuse_entry_param e;

		memset(&e, 0, sizeof(e));
		e.ino = to_fuse(st.ino);
		e.generation = st.generation;
		e.attr_timeout = e.entry_timeout = ATTR_TIMEOUT;
		stat_to_fuse(&st, &e.attr);
		count_lookup(srv(req), st.ino);
		if (fuse_reply_create(req, &e, fi) == -ENOENT)
			count_forget(srv(req), st.ino, 1);
		return;
	}
	reply_entry(req, &st);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	do_create(req, parent, name, mode, rdev, NULL, NULL);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	do_create(req, parent, name, S_IFDIR | (mode & 07777), 0, NULL, NULL);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	do_create(req, parent, name, S_IFLNK | 0777, 0, link, NULL);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	do_create(req, parent, name, S_IFREG | (mode & 07777), 0, NULL, fi);
}

static void do_unlink(fuse_req_t req, fuse_ino_t parent, const char *name, bool rmdir)
{
	u64 victim = 0;
	bool orph = false;
	int ret;

	if (ro_check(req))
		return;
	ret = mfs_unlink(srv(req)->fs, to_mfs(parent), name, rmdir, &victim, &orph);
	if (!ret && orph)
		orphaned(srv(req), victim);
	fuse_reply_err(req, -ret);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	do_unlink(req, parent, name, false);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	do_unlink(req, parent, name, true);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	unsigned int mflags = 0;
	u64 victim = 0;
	bool orph = false;
	int ret;

	if (ro_check(req))
		return;
	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (flags & RENAME_NOREPLACE)
		mflags |= MFS_RENAME_NOREPLACE;
	if (flags & RENAME_EXCHANGE)
		mflags |= MFS_RENAME_EXCHANGE;
	ret = mfs_rename(srv(req)->fs, to_mfs(parent), name, to_mfs(newparent), newname,
			 mflags, &victim, &orph);
	if (!ret && orph)
		orphaned(srv(req), victim);
	fuse_reply_err(req, -ret);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct mfs_stat st;
	int ret;

	if (ro_check(req))
		return;
	ret = mfs_link(srv(req)->fs, to_mfs(ino), to_mfs(newparent), newname, &st);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		reply_entry(req, &st);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	if ((fi->flags & O_ACCMODE) != O_RDONLY && srv(req)->opts->ro) {
		fuse_reply_err(req, EROFS);
		return;
	}
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct server *s = srv(req);
	char *buf = malloc(size ? size : 1);
	ssize_t n;

	(void)fi;
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = mfs_read(s->fs, to_mfs(ino), off, size, buf);
	if (n < 0)
		fuse_reply_err(req, -n);
	else
		fuse_reply_buf(req, buf, n);
	free(buf);
	if (n > 0 && !s->opts->noatime && !s->opts->ro)
		mfs_touch_atime(s->fs, to_mfs(ino));
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	ssize_t n;

	(void)fi;
	if (ro_check(req))
		return;
	n = mfs_write(srv(req)->fs, to_mfs(ino), off, size, buf);
	if (n < 0)
		fuse_reply_err(req, -n);
	else
		fuse_reply_write(req, n);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino;
	(void)datasync;
	(void)fi;
	fuse_reply_err(req, -mfs_sync_fs(srv(req)->fs));
}

struct dirbuf {
	fuse_req_t req;
	char *buf;
	size_t size, used;
};

static int fill_dir(void *arg, const char *name, u64 ino, u32 type, u64 next)
{
	static const mode_t ft_mode[] = { 0, S_IFREG, S_IFDIR, S_IFCHR, S_IFBLK, S_IFIFO,
					  S_IFSOCK, S_IFLNK };
	struct dirbuf *d = arg;
	struct stat st;
	size_t len;

	memset(&st, 0, sizeof(st));
	st.st_ino = to_fuse(ino);
	st.st_mode = type < ARRAY_SIZE(ft_mode) ? ft_mode[type] : 0;
	len = fuse_add_direntry(d->req, d->buf + d->used, d->size - d->used, name, &st, next);
	if (len > d->size - d->used)
		return 1;
	d->used += len;
	return 0;
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct dirbuf d = { req, malloc(size), size, 0 };
	int ret;

	(void)fi;
	if (!d.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ret = mfs_readdir(srv(req)->fs, to_mfs(ino), off, fill_dir, &d);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_buf(req, d.buf, d.used);
	free(d.buf);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	op_fsync(req, ino, datasync, fi);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs st;
	int ret = mfs_statfs(srv(req)->fs, &st);

	(void)ino;
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_statfs(req, &st);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	if (ro_check(req))
		return;
	fuse_reply_err(req, -mfs_setxattr(srv(req)->fs, to_mfs(ino), name, value, size, flags));
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	char *buf = size ? malloc(size) : NULL;
	ssize_t n;

	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = mfs_getxattr(srv(req)->fs, to_mfs(ino), name, buf, size);
	if (n < 0)
		fuse_reply_err(req, -n);
	else if (!size)
		fuse_reply_xattr(req, n);
	else
		fuse_reply_buf(req, buf, n);
	free(buf);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	char *buf = size ? malloc(size) : NULL;
	ssize_t n;

	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = mfs_listxattr(srv(req)->fs, to_mfs(ino), buf, size);
	if (n < 0)
		fuse_reply_err(req, -n);
	else if (!size)
		fuse_reply_xattr(req, n);
	else
		fuse_reply_buf(req, buf, n);
	free(buf);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	if (ro_check(req))
		return;
	fuse_reply_err(req, -mfs_removexattr(srv(req)->fs, to_mfs(ino), name));
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	(void)fi;
	if (ro_check(req))
		return;
	fuse_reply_err(req, -mfs_fallocate(srv(req)->fs, to_mfs(ino), mode, off, len));
}

static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	u64 result;
	int ret;

	(void)fi;
	if (whence != SEEK_DATA && whence != SEEK_HOLE) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	ret = mfs_lseek(srv(req)->fs, to_mfs(ino), off, whence, &result);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_lseek(req, result);
}

/* Admin operations need CAP_SYS_ADMIN in the calling process. */
static bool caller_is_admin(fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	char path[64], line[256];
	bool admin = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)ctx->pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long caps;

		if (sscanf(line, "CapEff: %llx", &caps) == 1) {
			admin = caps & (1ULL << 21);	/* CAP_SYS_ADMIN */
			break;
		}
	}
	fclose(f);
	return admin;
}

static void op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		     struct fuse_file_info *fi, unsigned int flags, const void *in_buf,
		     size_t in_bufsz, size_t out_bufsz)
{
	struct server *s = srv(req);

	(void)arg;
	(void)fi;
	(void)in_buf;
	(void)in_bufsz;
	if (ino != FUSE_ROOT_ID || !(flags & FUSE_IOCTL_DIR)) {
		fuse_reply_err(req, ENOTTY);
		return;
	}
	switch (cmd) {
	case MFS_IOC_FS_INFO: {
		struct mfs_ioctl_fs_info *info;

		if (out_bufsz < sizeof(*info)) {
			fuse_reply_err(req, EINVAL);
			return;
		}
		info = calloc(1, sizeof(*info));
		if (!info) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		info->daemon_pid = getpid();
		pthread_mutex_lock(&s->fs->lock);
		memcpy(info->fsid, s->fs->fsid, sizeof(info->fsid));
		info->num_devices = s->fs->nr_devices;
		info->generation = s->fs->generation;
		info->nodesize = s->fs->nodesize;
		info->sectorsize = s->fs->sectorsize;
		snprintf(info->first_device, sizeof(info->first_device), "%s",
			 s->opts->fsname ? s->opts->fsname : "");
		pthread_mutex_unlock(&s->fs->lock);
		fuse_reply_ioctl(req, 0, info, sizeof(*info));
		free(info);
		return;
	}
	case MFS_IOC_SYNC:
		if (!caller_is_admin(req)) {
			fuse_reply_err(req, EPERM);
			return;
		}
		fuse_reply_ioctl(req, mfs_sync_fs(s->fs), NULL, 0);
		return;
	}
	fuse_reply_err(req, ENOTTY);
}

static const struct fuse_lowlevel_ops mfs_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.readdir = op_readdir,
	.fsyncdir = op_fsyncdir,
	.statfs = op_statfs,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.removexattr = op_removexattr,
	.create = op_create,
	.fallocate = op_fallocate,
	.lseek = op_lseek,
	.ioctl = op_ioctl,
};

/* ---------------- the periodic commit ---------------- */

static void *committer(void *arg)
{
	struct server *s = arg;

	pthread_mutex_lock(&s->stop_lock);
	while (!s->stopping) {
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += s->opts->commit_interval;
		pthread_cond_timedwait(&s->stop_cond, &s->stop_lock, &until);
		if (s->stopping)
			break;
		pthread_mutex_unlock(&s->stop_lock);
		mfs_sync_fs(s->fs);
		pthread_mutex_lock(&s->stop_lock);
	}
	pthread_mutex_unlock(&s->stop_lock);
	return NULL;
}

int mfs_fuse_serve(struct mfs_fs_info *fs, const struct mfs_mount_opts *opts)
{
	struct server *s = calloc(1, sizeof(*s));
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config *cfg;
	char optstr[4096];
	int ret = 1, i;

	if (!s) {
		mfs_close_fs(fs);
		return 1;
	}
	s->fs = fs;
	s->opts = opts;
	pthread_mutex_init(&s->ilock, NULL);
	pthread_mutex_init(&s->stop_lock, NULL);
	pthread_cond_init(&s->stop_cond, NULL);
	if (opts->cache_size)
		fs->eb_cache_limit = opts->cache_size;

	snprintf(optstr, sizeof(optstr),
		 "subtype=mfs,fsname=%s,default_permissions,allow_other%s",
		 opts->fsname, opts->ro ? ",ro" : "");
	fuse_opt_add_arg(&args, "mfs");
	fuse_opt_add_arg(&args, "-o");
	fuse_opt_add_arg(&args, optstr);
	if (opts->debug)
		fuse_opt_add_arg(&args, "-d");
	s->se = fuse_session_new(&args, &mfs_ops, sizeof(mfs_ops), s);
	if (!s->se)
		goto out_close;
	if (fuse_session_mount(s->se, opts->mountpoint)) {
		fprintf(stderr, "ERROR: cannot mount on %s\n", opts->mountpoint);
		goto out_session;
	}
	if (fuse_daemonize(opts->foreground || opts->debug))
		goto out_unmount;
	if (fuse_set_signal_handlers(s->se))
		goto out_unmount;
	if (!opts->ro)
		pthread_create(&s->committer, NULL, committer, s);
	cfg = fuse_loop_cfg_create();
	fuse_loop_cfg_set_clone_fd(cfg, 0);
	fuse_loop_cfg_set_max_threads(cfg, 16);
	ret = fuse_session_loop_mt(s->se, cfg) ? 1 : 0;
	fuse_loop_cfg_destroy(cfg);
	if (!opts->ro) {
		pthread_mutex_lock(&s->stop_lock);
		s->stopping = true;
		pthread_cond_signal(&s->stop_cond);
		pthread_mutex_unlock(&s->stop_lock);
		pthread_join(s->committer, NULL);
	}
	fuse_remove_signal_handlers(s->se);
out_unmount:
	fuse_session_unmount(s->se);
out_session:
	fuse_session_destroy(s->se);
out_close:
	fuse_opt_free_args(&args);
	/* evict what was unlinked while open, then the final commit */
	for (i = 0; i < INO_HASH; i++) {
		while (s->counts[i]) {
			struct ino_count *c = s->counts[i];

			s->counts[i] = c->next;
			if (c->orphan && !opts->ro)
				mfs_evict(fs, c->ino);
			free(c);
		}
	}
	if (mfs_close_fs(fs))
		ret = 1;
	free(s);
	return ret;
}
