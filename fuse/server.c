/*
 * FUSE low-level operations mapped onto the engine (kernel-shared/fs/inode.h).
 * Thin on purpose: inode numbers and lookup counts for unlinked-but-open
 * files live here, the POSIX ACL bookkeeping in acl.c, the admin ioctls in
 * admin-ioctl.c and the background threads in background.c; everything
 * about the filesystem lives in the engine.
 */
#define FUSE_USE_VERSION 312
#include <fuse3/fuse_lowlevel.h>
#include <limits.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <syslog.h>
#include "fuse/server-internal.h"
#include "fuse/acl.h"
#include "common/device-scan.h"
#include "common/utab.h"
#include "kernel-shared/fs/inode.h"
#include "kernel-shared/tree/transaction.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/ops/open.h"
#include "kernel-shared/format/ioctl.h"

/*
 * How long the kernel may trust what we told it. Names: as long as it
 * likes, positive or negative: every change to the namespace goes through
 * this mount's kernel side, which updates its dentries itself (offline
 * tools refuse a mounted filesystem). Attributes: briefly, because some
 * change here without the kernel knowing: st_blocks when written-back
 * pages reach us (the kernel refreshes it only at close), atime on reads.
 */
#define ATTR_TIMEOUT 1.0
#define ENTRY_TIMEOUT 3600.0

struct ino_count {
	u64 ino;
	u64 nlookup;
	bool orphan;
	int wb_error;		/* a writeback error not yet reported (see note_wb_error) */
	struct ino_count *next;
};

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
	st->st_blocks = (m->nbytes + 4095) / 4096 * 8;	/* whole 4 KiB blocks, as btrfs */
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
	e.entry_timeout = ENTRY_TIMEOUT;
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
	conn->max_readahead = 4 * 1024 * 1024;	/* the kernel keeps the smaller of this and the bdi value */
	if (conn->capable & FUSE_CAP_WRITEBACK_CACHE && !s->opts->ro) {
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
		/* the kernel owns mtime/ctime of cached writes and sends them */
		s->fs->caller_times = 1;
	}
	if (conn->capable & FUSE_CAP_IOCTL_DIR)
		conn->want |= FUSE_CAP_IOCTL_DIR;
	/*
	 * With POSIX ACLs the server applies default ACLs at create time, so
	 * the kernel must pass the mode unmasked (and the umask beside it).
	 */
	if ((conn->capable & FUSE_CAP_POSIX_ACL) && (conn->capable & FUSE_CAP_DONT_MASK)) {
		conn->want |= FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
		s->acl = true;
	}
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	/*
	 * Files need no per-open state here (no file handles, nothing done
	 * at release), so opens cost no round trip: OPEN answered ENOSYS
	 * makes the kernel open files itself, keep their cache and send no
	 * RELEASE (see op_open, op_create).
	 */
	if (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT)
		s->no_open = true;
	/*
	 * Always readdirplus: ls -l, find -type and friends then need no
	 * LOOKUP per name. (With the "auto" heuristic the kernel falls back
	 * to plain READDIR after the first batch when the stats hit its cache,
	 * and every later name costs a LOOKUP.)
	 */
	if (conn->capable & FUSE_CAP_READDIRPLUS) {
		conn->want |= FUSE_CAP_READDIRPLUS;
		conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	}
	/*
	 * Not the old KILLPRIV (a SETATTR to clear the bits per write by
	 * root too); KILLPRIV_V2 is negotiated by killpriv.c where the
	 * kernel offers it.
	 */
	conn->want &= ~FUSE_CAP_HANDLE_KILLPRIV;
	conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mfs_stat st;
	int ret = mfs_lookup(srv(req)->fs, to_mfs(parent), name, &st);

	if (ret == -ENOENT) {
		/*
		 * A negative entry the kernel may keep: a name that does not
		 * exist is asked for again and again (PATH and include-path
		 * searches, imports), and only a create through the kernel,
		 * which replaces the entry, can make it exist.
		 */
		struct fuse_entry_param e;

		memset(&e, 0, sizeof(e));
		e.entry_timeout = ENTRY_TIMEOUT;
		fuse_reply_entry(req, &e);
		return;
	}
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

/*
 * With the writeback cache a write() only fills the kernel's page cache;
 * when the WRITE of those pages fails later (ENOSPC, EIO, EROFS) the
 * kernel keeps the error for fsync and close, and further write() calls
 * go on succeeding: `dd if=/dev/zero of=f` on a full filesystem would
 * never stop. But a cached write() first refreshes the file's attributes
 * when they are stale, with a GETATTR that carries the open file, and
 * fails with that request's error. So a failed writeback WRITE records
 * its error and marks the attributes stale; the next GETATTR through an
 * open file of the inode returns the error once, and the write() that
 * asked fails with it (btrfs fails the write() itself, at reservation).
 */
static void note_wb_error(struct server *s, fuse_ino_t ino, int err)
{
	struct ino_count *c;

	/* kept with the inode's lookup count: it goes when the kernel forgets the inode */
	pthread_mutex_lock(&s->ilock);
	c = *count_slot(s, to_mfs(ino));
	if (c)
		c->wb_error = err;
	pthread_mutex_unlock(&s->ilock);
	fuse_lowlevel_notify_inval_inode(s->se, ino, -1, 0);
}

/* The recorded writeback error of ino, taken (0: none). */
static int take_wb_error(struct server *s, fuse_ino_t ino)
{
	struct ino_count *c;
	int err = 0;

	pthread_mutex_lock(&s->ilock);
	c = *count_slot(s, to_mfs(ino));
	if (c) {
		err = c->wb_error;
		c->wb_error = 0;
	}
	pthread_mutex_unlock(&s->ilock);
	return err;
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mfs_stat st;
	int ret = fi ? -take_wb_error(srv(req), ino) : 0;

	if (!ret)
		ret = mfs_getattr(srv(req)->fs, to_mfs(ino), &st);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		reply_attr(req, &st);
}

/*
 * With KILLPRIV_V2 (killpriv.c) a chown, and a truncate the kernel flags,
 * clear set-user-ID and set-group-ID here, in the same change.
 */
static int setattr_killpriv(fuse_req_t req, fuse_ino_t ino, unsigned int *mask)
{
	bool chown = *mask & (MFS_SET_UID | MFS_SET_GID);
	struct mfs_stat st;
	int ret;

	if (!killpriv_on(srv(req)) || (*mask & MFS_SET_MODE) ||
	    (!chown && !killpriv_truncate_asked(req, ino)))
		return 0;
	ret = mfs_getattr(srv(req)->fs, to_mfs(ino), &st);
	if (!ret)
		*mask |= killpriv_mask(req, &st, chown);
	return ret;
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
	ret = setattr_killpriv(req, ino, &mask);
	if (!ret)
		ret = mfs_setattr(srv(req)->fs, to_mfs(ino), mask, &in, &out);
	if (!ret && (mask & MFS_SET_MODE) && srv(req)->acl && !S_ISLNK(out.mode))
		ret = acl_chmod(srv(req)->fs, to_mfs(ino), out.mode);
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
	struct mfs_fs_info *fs = srv(req)->fs;
	struct mfs_stat dir, st;
	u32 gid = ctx->gid;
	void *dacl = NULL, *acl = NULL;
	ssize_t acl_size = 0;
	int ret, not_equiv = 0;

	if (ro_check(req))
		return;
	ret = mfs_getattr(fs, to_mfs(parent), &dir);
	if (!ret && (dir.mode & S_ISGID)) {
		gid = dir.gid;
		if (S_ISDIR(mode))
			mode |= S_ISGID;
	}
	if (!ret && srv(req)->acl && !S_ISLNK(mode)) {
		/* the directory's default ACL replaces the umask (posix_acl_create) */
		acl_size = get_xattr_alloc(fs, to_mfs(parent), XATTR_ACL_DEFAULT, &dacl);
		if (acl_size > 0 && acl_count(dacl, acl_size) > 0 &&
		    (acl = malloc(acl_size))) {
			mode_t m = mode & 07777;

			memcpy(acl, dacl, acl_size);
			not_equiv = acl_create_masq(acl, acl_size, &m);
			mode = (mode & ~07777) | m;
		} else {
			acl_size = 0;
			mode &= ~(ctx->umask & 0777);
		}
	}
	if (!ret)
		ret = mfs_create(fs, to_mfs(parent), name, mode, rdev, ctx->uid, gid, target, &st);
	if (!ret && acl_size > 0) {
		if (S_ISDIR(mode))
			ret = mfs_setxattr(fs, st.ino, XATTR_ACL_DEFAULT, dacl, acl_size, 0);
		if (!ret && not_equiv)
			ret = mfs_setxattr(fs, st.ino, XATTR_ACL_ACCESS, acl, acl_size, 0);
	}
	free(dacl);
	free(acl);
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	if (fi) {
		struct fuse_entry_param e;

		memset(&e, 0, sizeof(e));
		e.ino = to_fuse(st.ino);
		e.generation = st.generation;
		e.attr_timeout = ATTR_TIMEOUT;
		e.entry_timeout = ENTRY_TIMEOUT;
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

/*
 * With zero-message opens, CREATE answered ENOSYS once makes the kernel
 * create with MKNOD and open the new file itself: no RELEASE follows.
 */
static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	if (srv(req)->no_open) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
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
	if (srv(req)->no_open) {
		/* the kernel's default for a no-open file is keep_cache, as below */
		fuse_reply_err(req, ENOSYS);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY && srv(req)->opts->ro) {
		fuse_reply_err(req, EROFS);
		return;
	}
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

/*
 * Each request thread's read buffer, kept: page aligned, the engine reads
 * whole blocks straight into it (O_DIRECT). One allocated per request had
 * its pages faulted in every time - most of a degraded raid5 read's CPU,
 * whose rebuilt data is copied into it.
 */
static struct mfs_thread_buf read_buf = MFS_THREAD_BUF_INIT;

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct server *s = srv(req);
	char *buf;
	ssize_t n;

	(void)fi;
	buf = mfs_thread_buf_get(&read_buf, size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = mfs_read(s->fs, to_mfs(ino), off, size, buf);
	if (n < 0)
		fuse_reply_err(req, -n);
	else
		fuse_reply_buf(req, buf, n);
	if (n > 0 && !s->opts->noatime && !s->opts->ro)
		mfs_touch_atime(s->fs, to_mfs(ino));
}

/*
 * MFS_TEST_WRITE_DELAY_MS (read once at start): each WRITE waits this long
 * first, so that a test sees requests the kernel sent after it (the
 * writeback cache's SETATTR of the file's times) overtake it, as they may
 * under load.
 */
static long write_delay_from_env(void)
{
	const char *v = getenv("MFS_TEST_WRITE_DELAY_MS");
	long ms = v ? atol(v) : 0;

	return ms < 0 || ms > 10000 ? 0 : ms;
}

static void test_write_delay(const struct server *s)
{
	if (s->write_delay_ms)
		nanosleep(&(struct timespec){ s->write_delay_ms / 1000,
					     (s->write_delay_ms % 1000) * 1000000L }, NULL);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	ssize_t n;

	if (ro_check(req))
		return;
	test_write_delay(srv(req));
	n = killpriv_write_asked(req, ino, off, size) ? killpriv_clear(req, ino, to_mfs(ino), false) : 0;
	if (!n)
		n = mfs_write(srv(req)->fs, to_mfs(ino), off, size, buf);
	if (n < 0 && fi && fi->writepage)
		note_wb_error(srv(req), ino, (int)-n);
	if (n < 0)
		fuse_reply_err(req, -n);
	else
		fuse_reply_write(req, n);
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

/* The file type of a directory entry (MFS_FT_*) as st_mode bits. */
static const mode_t ft_to_mode[] = { 0, S_IFREG, S_IFDIR, S_IFCHR, S_IFBLK, S_IFIFO,
				     S_IFSOCK, S_IFLNK };

struct dirbuf {
	fuse_req_t req;
	char *buf;
	size_t size, used;
};

static int fill_dir(void *arg, const char *name, u64 ino, u32 type, u64 next)
{
	struct dirbuf *d = arg;
	struct stat st;
	size_t len;

	memset(&st, 0, sizeof(st));
	st.st_ino = to_fuse(ino);
	st.st_mode = type < ARRAY_SIZE(ft_to_mode) ? ft_to_mode[type] : 0;
	len = fuse_add_direntry(d->req, d->buf + d->used, d->size - d->used, name, &st, next);
	if (len > d->size - d->used)
		return 1;
	d->used += len;
	return 0;
}

/*
 * readdirplus: the entries with their attributes, so that ls -l and the
 * like need no LOOKUP per name. Every entry but "." and ".." counts as a
 * lookup, as the kernel counts it; if the reply does not reach the kernel
 * (the request was interrupted), those counts are taken back.
 */
struct dirbuf_plus {
	struct dirbuf d;
	u64 *counted;
	size_t ncounted, alloc;
};

static int fill_dir_plus(void *arg, const char *name, u64 ino, u32 type, u64 next,
			 const struct mfs_stat *st)
{
	struct dirbuf_plus *p = arg;
	struct dirbuf *d = &p->d;
	struct fuse_entry_param e;
	size_t len;

	memset(&e, 0, sizeof(e));
	if (st) {
		if (p->ncounted == p->alloc) {
			size_t n = p->alloc ? 2 * p->alloc : 64;
			u64 *c = realloc(p->counted, n * sizeof(*c));

			if (!c)
				return 1;
			p->counted = c;
			p->alloc = n;
		}
		e.ino = to_fuse(st->ino);
		e.generation = st->generation;
		e.attr_timeout = ATTR_TIMEOUT;
		e.entry_timeout = ENTRY_TIMEOUT;
		stat_to_fuse(st, &e.attr);
	} else {
		/* no attributes: a plain entry (ino 0 tells the kernel so) */
		e.attr.st_ino = to_fuse(ino);
		e.attr.st_mode = type < ARRAY_SIZE(ft_to_mode) ? ft_to_mode[type] : 0;
	}
	len = fuse_add_direntry_plus(d->req, d->buf + d->used, d->size - d->used, name, &e,
				     next);
	if (len > d->size - d->used)
		return 1;
	d->used += len;
	if (st) {
		count_lookup(srv(d->req), st->ino);
		p->counted[p->ncounted++] = st->ino;
	}
	return 0;
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	struct dirbuf_plus p = { { req, malloc(size), size, 0 }, NULL, 0, 0 };
	struct server *s = srv(req);
	size_t i;
	int ret;

	(void)fi;
	if (!p.d.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ret = mfs_readdirplus(s->fs, to_mfs(ino), off, fill_dir_plus, &p);
	/* an error after some entries: return those, the next call reports it */
	if (ret && !p.d.used) {
		fuse_reply_err(req, -ret);
	} else if (fuse_reply_buf(req, p.d.buf, p.d.used) == -ENOENT) {
		for (i = 0; i < p.ncounted; i++)
			if (count_forget(s, p.counted[i], 1))
				mfs_evict(s->fs, p.counted[i]);
	}
	free(p.counted);
	free(p.d.buf);
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
	struct server *s = srv(req);

	if (ro_check(req))
		return;
	if (s->acl && !strcmp(name, XATTR_ACL_ACCESS)) {
		fuse_reply_err(req, -acl_set_access(s->fs, to_mfs(ino), value, size, flags,
						    killpriv_acl_clears_sgid(req, to_mfs(ino))));
		return;
	}
	if (s->acl && !strcmp(name, XATTR_ACL_DEFAULT) && acl_count(value, size) < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	fuse_reply_err(req, -mfs_setxattr(s->fs, to_mfs(ino), name, value, size, flags));
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
	int ret = 0;

	(void)fi;
	if (ro_check(req))
		return;
	/* a fallocate by a caller without CAP_FSETID clears them too (unflagged) */
	if (killpriv_on(srv(req)))
		ret = killpriv_clear(req, ino, to_mfs(ino), true);
	if (!ret)
		ret = mfs_fallocate(srv(req)->fs, to_mfs(ino), mode, off, len);
	fuse_reply_err(req, -ret);
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
	/*
	 * With the writeback cache the kernel may hold written pages we have
	 * not seen, and the kernel does not write them back before asking.
	 * Have it write back (and drop) everything from off on first, or the
	 * answer could skip data or put EOF before the file's end.
	 */
	fuse_lowlevel_notify_inval_inode(srv(req)->se, ino, off, 0);
	ret = mfs_lseek(srv(req)->fs, to_mfs(ino), off, whence, &result);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_lseek(req, result);
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
	/*
	 * No flush: the kernel writes dirty pages back at close by itself,
	 * and there is nothing more to do (no locks are kept here). Without
	 * the op, the first FLUSH gets ENOSYS and the kernel sends no more:
	 * one round trip less for every close().
	 */
	.release = op_release,
	.fsync = op_fsync,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
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

/*
 * The kernel caps a FUSE mount's readahead at 128 KiB whatever max_readahead
 * says, so sequential reads arrive as 128 KiB requests, one or two at a time.
 * Raise it through the mount's backing device (root only; a failure leaves
 * the default) to 4 MiB, what btrfs gives its own mounts: up to four 1 MiB
 * requests in flight.
 */
struct fuse_mount_at {
	const char *mnt;
	dev_t dev;
	bool found;
};

static int match_fuse_mount(const struct mfs_mountinfo *m, void *arg)
{
	struct fuse_mount_at *at = arg;

	if (!strcmp(m->mnt, at->mnt) && !strncmp(m->fstype, "fuse", 4)) {
		at->dev = m->dev;
		at->found = true;	/* the last one is on top */
	}
	return 0;
}

static void raise_readahead(const char *mountpoint, unsigned int kib)
{
	char real[PATH_MAX], path[128];
	struct fuse_mount_at at = { .mnt = real };
	FILE *f;

	if (!realpath(mountpoint, real) || mfs_mountinfo_walk(NULL, match_fuse_mount, &at) < 0 ||
	    !at.found)
		return;
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", major(at.dev),
		 minor(at.dev));
	f = fopen(path, "we");
	if (f) {
		fprintf(f, "%u\n", kib);
		fclose(f);
	}
}

/*
 * The engine's messages once the daemon runs (a device failed, a member
 * caught up): syslog, tagged with the mount's device; in the foreground
 * also stderr; and, for tests and scripts, appended to $MFS_LOG if set.
 */
static void daemon_log(void *arg, const char *msg)
{
	const struct server *s = arg;
	const char *file = getenv("MFS_LOG");

	syslog(LOG_WARNING, "%s: %s", s->opts->fsname, msg);
	if (s->opts->foreground || s->opts->debug)
		fprintf(stderr, "WARNING: %s\n", msg);
	if (file && *file) {
		FILE *f = fopen(file, "ae");

		if (f) {
			fprintf(f, "%s: %s\n", s->opts->fsname, msg);
			fclose(f);
		}
	}
}

int mfs_fuse_serve(struct mfs_fs_info *fs, const struct mfs_mount_opts *opts)
{
	struct server *s = calloc(1, sizeof(*s));
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config *cfg;
	char optstr[4096];
	int ret = 1, i, utab_id = -1;
	bool self_unmount;

	if (!s) {
		mfs_close_fs(fs);
		return 1;
	}
	s->fs = fs;
	s->opts = opts;
	/*
	 * Every read and write handles buffers of up to a few MiB. Above
	 * glibc's mmap threshold each would be fresh pages: zeroed at the
	 * first touch, unmapped at free (a TLB shootdown per request, and
	 * mmap_lock contention between the threads). Keep them in the heap.
	 */
	mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
	mallopt(M_TRIM_THRESHOLD, 128 * 1024 * 1024);
	pthread_mutex_init(&s->ilock, NULL);
	pthread_mutex_init(&s->stop_lock, NULL);
	s->write_delay_ms = write_delay_from_env();
	pthread_cond_init(&s->stop_cond, NULL);
	if (opts->cache_size)
		fs->eb_cache_limit = opts->cache_size;

	snprintf(optstr, sizeof(optstr),
		 "subtype=mfs,fsname=%s,default_permissions,allow_other%s%s%s%s%s",
		 opts->fsname, opts->ro ? ",ro" : "",
		 /* libfuse defaults to nodev,nosuid; a root mount is like any other */
		 opts->nodev ? ",nodev" : ",dev", opts->nosuid ? ",nosuid" : ",suid",
		 opts->noexec ? ",noexec" : "", opts->noatime ? ",noatime" : "");
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
	if (killpriv_install(s)) {
		fprintf(stderr, "ERROR: cannot serve %s\n", opts->mountpoint);
		goto out_unmount;
	}
	raise_readahead(opts->mountpoint, 4096);
	/* so that a plain umount(8) runs umount.fuse.mfs, which waits for us */
	utab_id = mfs_utab_add(opts->fsname, opts->mountpoint);
	if (fuse_daemonize(opts->foreground || opts->debug))
		goto out_unmount;
	openlog("mfs", LOG_PID, LOG_DAEMON);
	pthread_mutex_lock(&fs->lock);
	fs->log = daemon_log;
	fs->log_arg = s;
	fs->dev_failed = member_failed;
	pthread_mutex_unlock(&fs->lock);
	if (fuse_set_signal_handlers(s->se))
		goto out_unmount;
	if (!opts->ro)
		pthread_create(&s->committer, NULL, committer, s);
	if (!opts->ro && !opts->skip_balance)
		restripe_at_mount(s);
	if (!opts->ro && !opts->skip_scrub)
		scrub_at_mount(s);
	cfg = fuse_loop_cfg_create();
	fuse_loop_cfg_set_clone_fd(cfg, 0);
	fuse_loop_cfg_set_max_threads(cfg, 16);
	ret = fuse_session_loop_mt(s->se, cfg) ? 1 : 0;
	/* the mount is gone (or going: a signal): say so to a command that waits for the devices */
	prctl(PR_SET_NAME, MFS_SERVER_UNMOUNTING_NAME);
	fuse_loop_cfg_destroy(cfg);
	stop_background(s);
	fuse_remove_signal_handlers(s->se);
out_unmount:
	/*
	 * Unmounting ourselves (a signal, a failure): the entry is ours to
	 * drop. After an unmount by umount(8) it is umount(8)'s: it removes
	 * the last one for the mount point once its helper has returned.
	 */
	self_unmount = utab_id >= 0 && mfs_mount_id_present(utab_id);
	fuse_session_unmount(s->se);
	if (self_unmount)
		mfs_utab_remove(opts->mountpoint);
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
