/*
 * mkfs.mfs --rootdir: walk a directory tree and recreate it in the new
 * filesystem through the engine's file API, like a copy onto a mount.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include "common/messages.h"
#include "kernel-shared/fs/inode.h"
#include "mkfs/rootdir.h"

/* File data is copied in pieces of the engine's largest data extent. */
#define COPY_BUF_SIZE	(4 * 1024 * 1024)
/* Commit after this many entries, to bound the running transaction. */
#define COMMIT_EVERY	65536
#define HARDLINK_BUCKETS 4096

/* An inode of the source tree with several names, and where it went. */
struct hardlink {
	dev_t dev;
	ino_t ino;
	u64 mfs_ino;
	struct hardlink *next;
};

struct walk {
	struct mfs_fs_info *fs;
	struct mfs_rootdir_ctl *ctl;
	char *path;		/* the entry being copied, for messages */
	size_t path_size;
	u8 *buf;
	struct hardlink *links[HARDLINK_BUCKETS];
	u64 entries;
};

static const char * const xattr_prefixes[] = {
	"user.", "trusted.", "security.",
	"system.posix_acl_access", "system.posix_acl_default",
};

static int source_error(struct walk *w, const char *what, int err)
{
	error("cannot %s '%s': %s", what, w->path, strerror(err));
	return -err;
}

static int target_error(struct walk *w, int ret)
{
	error("cannot copy '%s' into the new filesystem: %s", w->path, strerror(-ret));
	return ret;
}

/* Set w->path to the parent's path (its first len bytes) + "/" + name. */
static int path_push(struct walk *w, size_t len, const char *name)
{
	size_t need = len + 1 + strlen(name) + 1;

	if (need > w->path_size) {
		char *p = realloc(w->path, need * 2);

		if (!p)
			return -ENOMEM;
		w->path = p;
		w->path_size = need * 2;
	}
	w->path[len] = '/';
	strcpy(w->path + len + 1, name);
	return 0;
}

static u32 hardlink_bucket(dev_t dev, ino_t ino)
{
	return (u32)(((u64)ino * 0x9E3779B97F4A7C15ULL + dev) >> 40) % HARDLINK_BUCKETS;
}

static struct hardlink *hardlink_find(struct walk *w, const struct stat *st)
{
	struct hardlink *h;

	for (h = w->links[hardlink_bucket(st->st_dev, st->st_ino)]; h; h = h->next)
		if (h->dev == st->st_dev && h->ino == st->st_ino)
			return h;
	return NULL;
}

static int hardlink_add(struct walk *w, const struct stat *st, u64 mfs_ino)
{
	u32 b = hardlink_bucket(st->st_dev, st->st_ino);
	struct hardlink *h = malloc(sizeof(*h));

	if (!h)
		return -ENOMEM;
	h->dev = st->st_dev;
	h->ino = st->st_ino;
	h->mfs_ino = mfs_ino;
	h->next = w->links[b];
	w->links[b] = h;
	return 0;
}

static void hardlinks_free(struct walk *w)
{
	int i;

	for (i = 0; i < HARDLINK_BUCKETS; i++) {
		while (w->links[i]) {
			struct hardlink *h = w->links[i];

			w->links[i] = h->next;
			free(h);
		}
	}
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char * const *)a, *(char * const *)b);
}

static void free_names(char **names, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* The names in a directory, sorted so that the result is reproducible. */
static int read_names(struct walk *w, int dirfd, char ***out, size_t *nout)
{
	char **names = NULL;
	size_t n = 0, max = 0;
	struct dirent *de;
	int fd, ret = 0;
	DIR *d;

	fd = dup(dirfd);
	if (fd < 0)
		return source_error(w, "read directory", errno);
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return source_error(w, "read directory", errno);
	}
	rewinddir(d);
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno)
				ret = source_error(w, "read directory", errno);
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (MFS_ARRAY_RESERVE(names, n, max, 64)) {
			ret = -ENOMEM;
			break;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			ret = -ENOMEM;
			break;
		}
		n++;
	}
	closedir(d);
	if (ret) {
		free_names(names, n);
		return ret;
	}
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_names);
	*out = names;
	*nout = n;
	return 0;
}

static bool xattr_copied(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(xattr_prefixes); i++)
		if (!strncmp(name, xattr_prefixes[i], strlen(xattr_prefixes[i])))
			return true;
	return false;
}

/*
 * Copy the xattrs of the entry, read through fd when it is open, else
 * through lpath without following a symlink.
 */
static int copy_xattrs(struct walk *w, u64 ino, int fd, const char *lpath)
{
	char *list = NULL, *name;
	void *value = NULL;
	ssize_t size, vsize;
	int ret = 0;

	size = fd >= 0 ? flistxattr(fd, NULL, 0) : llistxattr(lpath, NULL, 0);
	if (size < 0 && (errno == ENOTSUP || errno == ENOSYS))
		return 0;
	if (size < 0)
		return source_error(w, "list xattrs of", errno);
	if (size == 0)
		return 0;
	list = malloc(size);
	if (!list)
		return -ENOMEM;
	size = fd >= 0 ? flistxattr(fd, list, size) : llistxattr(lpath, list, size);
	if (size < 0) {
		ret = source_error(w, "list xattrs of", errno);
		goto out;
	}
	for (name = list; name < list + size; name += strlen(name) + 1) {
		if (!xattr_copied(name)) {
			warning("'%s': xattr %s not copied (mfs stores user., trusted., security. and POSIX ACLs)",
				w->path, name);
			continue;
		}
		vsize = fd >= 0 ? fgetxattr(fd, name, NULL, 0) : lgetxattr(lpath, name, NULL, 0);
		if (vsize < 0) {
			ret = source_error(w, "read xattrs of", errno);
			goto out;
		}
		free(value);
		value = malloc(vsize ? vsize : 1);
		if (!value) {
			ret = -ENOMEM;
			goto out;
		}
		vsize = fd >= 0 ? fgetxattr(fd, name, value, vsize) :
				  lgetxattr(lpath, name, value, vsize);
		if (vsize < 0) {
			ret = source_error(w, "read xattrs of", errno);
			goto out;
		}
		ret = mfs_setxattr(w->fs, ino, name, value, vsize, 0);
		if (ret == -E2BIG) {
			error("'%s': xattr %s (%zd bytes) is too large for this node size",
			      w->path, name, vsize);
			goto out;
		}
		if (ret) {
			ret = target_error(w, ret);
			goto out;
		}
		w->ctl->stats.xattrs++;
	}
out:
	free(list);
	free(value);
	return ret;
}

/* Contents of a regular file: only its data ranges, so holes stay holes. */
static int copy_data(struct walk *w, u64 ino, int fd, const struct stat *st)
{
	u64 size = st->st_size, pos = 0, written_end = 0;
	int ret;

	while (pos < size) {
		off_t data = lseek(fd, pos, SEEK_DATA), hole;

		if (data < 0 && errno == ENXIO)
			break;		/* only a hole up to the end */
		if (data < 0 && errno != EINVAL)
			return source_error(w, "read", errno);
		if (data < 0) {
			/* no SEEK_DATA here: everything is data */
			data = pos;
			hole = size;
		} else {
			hole = lseek(fd, data, SEEK_HOLE);
			if (hole < 0)
				return source_error(w, "read", errno);
		}
		if ((u64)hole > size)
			hole = size;
		for (pos = data; pos < (u64)hole;) {
			size_t want = min_t(u64, (u64)hole - pos, COPY_BUF_SIZE);
			ssize_t n = pread(fd, w->buf, want, pos);
			ssize_t done;

			if (n < 0)
				return source_error(w, "read", errno);
			if (n == 0)
				break;	/* it shrank while we copied */
			done = mfs_write(w->fs, ino, pos, n, w->buf);
			if (done < 0)
				return target_error(w, done);
			pos += n;
			written_end = pos;
			w->ctl->stats.data_bytes += n;
		}
		if (pos < (u64)hole)
			break;
	}
	if (written_end < size) {
		struct mfs_stat in = { .size = size }, out;

		ret = mfs_setattr(w->fs, ino, MFS_SET_SIZE, &in, &out);
		if (ret)
			return target_error(w, ret);
	}
	return 0;
}

/* Timestamps go last: every change before would move mtime and ctime. */
static int set_times(struct walk *w, u64 ino, const struct stat *st)
{
	struct mfs_stat in = {
		.atime = st->st_atim,
		.mtime = st->st_mtim,
		.ctime = st->st_ctim,
	}, out;
	int ret;

	ret = mfs_setattr(w->fs, ino, MFS_SET_ATIME | MFS_SET_MTIME | MFS_SET_CTIME, &in, &out);
	return ret ? target_error(w, ret) : 0;
}

static int open_source(struct walk *w, int dirfd, const char *name, int flags)
{
	int fd = openat(dirfd, name, flags | O_CLOEXEC | O_NOATIME);

	/* O_NOATIME is for the owner (or CAP_FOWNER) only */
	if (fd < 0 && errno == EPERM)
		fd = openat(dirfd, name, flags | O_CLOEXEC);
	if (fd < 0)
		return source_error(w, "open", errno);
	return fd;
}

static bool skipped(struct walk *w, const struct stat *st)
{
	int i;

	for (i = 0; i < w->ctl->nskip; i++)
		if (w->ctl->skip_dev[i] == st->st_dev && w->ctl->skip_ino[i] == st->st_ino)
			return true;
	return false;
}

static int copy_dir(struct walk *w, int dirfd, u64 dir_ino);

/* One entry of the directory dirfd (already named in w->path). */
static int copy_entry(struct walk *w, int dirfd, u64 dir_ino, const char *name)
{
	struct mfs_stat ms;
	struct stat st;
	char lpath[64 + NAME_MAX];
	u32 mode;
	int fd = -1, ret;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return source_error(w, "stat", errno);
	mode = st.st_mode;
	if (S_ISREG(mode) && skipped(w, &st)) {
		warning("'%s' is a device of the new filesystem, not copied", w->path);
		return 0;
	}
	if (mfs_verbose >= 2)
		printf("ADD: %s\n", w->path);

	if (!S_ISDIR(mode) && st.st_nlink > 1) {
		struct hardlink *h = hardlink_find(w, &st);

		if (h) {
			ret = mfs_link(w->fs, h->mfs_ino, dir_ino, name, &ms);
			if (ret)
				return target_error(w, ret);
			w->ctl->stats.hardlinks++;
			/* linking moved the inode's ctime */
			return set_times(w, h->mfs_ino, &st);
		}
	}

	if (S_ISLNK(mode)) {
		/* the copy buffer is free here, and off the (recursing) stack */
		char *target = (char *)w->buf;
		ssize_t n = readlinkat(dirfd, name, target, PATH_MAX);

		if (n < 0)
			return source_error(w, "read symlink", errno);
		target[n] = 0;
		ret = mfs_create(w->fs, dir_ino, name, mode, 0, st.st_uid, st.st_gid, target, &ms);
		w->ctl->stats.symlinks++;
	} else if (S_ISDIR(mode) || S_ISREG(mode)) {
		struct stat now;

		/* O_NONBLOCK: should it have become a fifo since, open must not hang */
		fd = open_source(w, dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
				 (S_ISDIR(mode) ? O_DIRECTORY : 0));
		if (fd < 0)
			return fd;
		if (fstat(fd, &now) || now.st_ino != st.st_ino || now.st_dev != st.st_dev) {
			close(fd);
			error("'%s' changed while it was being copied", w->path);
			return -EAGAIN;
		}
		ret = mfs_create(w->fs, dir_ino, name, mode, 0, st.st_uid, st.st_gid, NULL, &ms);
		if (S_ISDIR(mode))
			w->ctl->stats.dirs++;
		else
			w->ctl->stats.files++;
	} else {
		ret = mfs_create(w->fs, dir_ino, name, mode, st.st_rdev, st.st_uid, st.st_gid,
				 NULL, &ms);
		w->ctl->stats.special++;
	}
	if (ret) {
		ret = target_error(w, ret);
		goto out;
	}

	if (fd >= 0) {
		ret = copy_xattrs(w, ms.ino, fd, NULL);
	} else {
		/* a short path to the entry whatever its depth, not followed if a symlink */
		snprintf(lpath, sizeof(lpath), "/proc/self/fd/%d/%s", dirfd, name);
		ret = copy_xattrs(w, ms.ino, -1, access("/proc/self/fd", X_OK) ? w->path : lpath);
	}
	if (!ret && S_ISREG(mode))
		ret = copy_data(w, ms.ino, fd, &st);
	if (!ret && S_ISDIR(mode))
		ret = copy_dir(w, fd, ms.ino);
	if (!ret && !S_ISDIR(mode) && st.st_nlink > 1)
		ret = hardlink_add(w, &st, ms.ino);
	if (!ret)
		ret = set_times(w, ms.ino, &st);
	if (!ret && ++w->entries % COMMIT_EVERY == 0) {
		ret = mfs_sync_fs(w->fs);
		if (ret)
			ret = target_error(w, ret);
	}
out:
	if (fd >= 0)
		close(fd);
	return ret;
}

/* Every entry of the directory dirfd (w->path) into the directory dir_ino. */
static int copy_dir(struct walk *w, int dirfd, u64 dir_ino)
{
	size_t len = strlen(w->path), n = 0, i;
	char **names = NULL;
	int ret;

	ret = read_names(w, dirfd, &names, &n);
	if (ret)
		return ret;
	for (i = 0; i < n && !ret; i++) {
		ret = path_push(w, len, names[i]);
		if (!ret)
			ret = copy_entry(w, dirfd, dir_ino, names[i]);
		w->path[len] = 0;
	}
	free_names(names, n);
	return ret;
}

int mfs_rootdir_populate(struct mfs_fs_info *fs, struct mfs_rootdir_ctl *ctl)
{
	struct walk w = { .fs = fs, .ctl = ctl };
	struct mfs_stat in, out;
	struct rlimit rl;
	struct stat st;
	size_t len;
	int fd, ret;

	memset(&ctl->stats, 0, sizeof(ctl->stats));
	/* one open directory per level of the tree */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	w.path_size = strlen(ctl->srcdir) + 256;
	w.path = malloc(w.path_size);
	w.buf = malloc(COPY_BUF_SIZE);
	if (!w.path || !w.buf) {
		ret = -ENOMEM;
		goto out;
	}
	strcpy(w.path, ctl->srcdir);
	/* "dir/" and "dir" name entries the same way: "dir/name" */
	len = strlen(w.path);
	while (len > 1 && w.path[len - 1] == '/')
		w.path[--len] = 0;
	fd = open_source(&w, AT_FDCWD, ctl->srcdir, O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		ret = fd;
		goto out;
	}
	if (fstat(fd, &st)) {
		ret = source_error(&w, "stat", errno);
		close(fd);
		goto out;
	}
	if (len == 1 && w.path[0] == '/')
		w.path[0] = 0;	/* entries of / are "/name" */
	ret = copy_dir(&w, fd, MFS_ROOT_DIR_OBJECTID);
	if (!w.path[0])
		strcpy(w.path, "/");
	/* the root directory becomes srcdir itself */
	if (!ret)
		ret = copy_xattrs(&w, MFS_ROOT_DIR_OBJECTID, fd, NULL);
	close(fd);
	if (!ret) {
		in.mode = st.st_mode;
		in.uid = st.st_uid;
		in.gid = st.st_gid;
		ret = mfs_setattr(fs, MFS_ROOT_DIR_OBJECTID,
				  MFS_SET_MODE | MFS_SET_UID | MFS_SET_GID, &in, &out);
		if (ret)
			ret = target_error(&w, ret);
	}
	if (!ret)
		ret = set_times(&w, MFS_ROOT_DIR_OBJECTID, &st);
out:
	hardlinks_free(&w);
	free(w.path);
	free(w.buf);
	return ret;
}
