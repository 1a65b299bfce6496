/* The utab entry of an mfs mount (utab.h), written as libmount writes it. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include "common/utab.h"
#include "common/device-scan.h"

/*
 * What marks our entries. Not uhelper=: that would make umount(8) of a
 * non-root user run umount.fuse.mfs, which cannot unmount without root;
 * an x- option other than x-mfs.* is one mount.mfs and libmount ignore.
 */
#define MFS_UTAB_OPTS	"x-mfs-umount-helper"

static const char *utab_path(void)
{
	/* libmount's own override, honoured the same way */
	const char *p = getenv("LIBMOUNT_UTAB");

	return p && *p ? p : "/run/mount/utab";
}

struct mounts_on {
	const char *target;
	int n, top_id;
};

static int count_mount_on(const struct mfs_mountinfo *m, void *arg)
{
	struct mounts_on *on = arg;

	if (!strcmp(m->fstype, "fuse.mfs") && !strcmp(m->mnt, on->target)) {
		on->n++;
		on->top_id = m->id;	/* mounts over it come later */
	}
	return 0;
}

/*
 * How many mfs mounts there are on @target (mounts stack), or -errno when
 * the mount table cannot be read; the id of the top one into @top_id.
 */
static int mfs_mounts_on(const char *target, int *top_id)
{
	struct mounts_on on = { .target = target };
	int ret = mfs_mountinfo_walk(NULL, count_mount_on, &on);

	*top_id = on.top_id;
	return ret < 0 ? ret : on.n;
}

/* A path as libmount writes it: space, tab, newline and backslash in octal. */
static void mangle(char *out, size_t size, const char *s)
{
	size_t o = 0;

	for (; *s && o + 5 < size; s++) {
		if (strchr(" \t\n\\", *s))
			o += snprintf(out + o, size - o, "\\%03o", (unsigned char)*s);
		else
			out[o++] = *s;
	}
	out[o] = 0;
}

/* Whether utab line @line is ours, for mount point @target (mangled). */
static bool ours_on(const char *line, const char *target)
{
	char tgt[PATH_MAX * 4 + 16];

	snprintf(tgt, sizeof(tgt), " TARGET=%s ", target);
	return strstr(line, " OPTS=" MFS_UTAB_OPTS) && strstr(line, tgt);
}

/*
 * Rewrite utab under its lock, as libmount does (a new file renamed over
 * it). What stays of our entries for @target is counted from the mount
 * table under the lock (a mount or unmount beside us may change it): the
 * first N are kept where N mfs mounts stack on it now (the lowest first,
 * as they were added), one fewer when @mode is UTAB_ADD (its entry, the
 * top one's, is added anew), and one more added with UTAB_ADD_EXTRA (a
 * mount that stays although umount(8) is about to remove an entry). Every
 * other line is kept. Entries are told by mount point and count alone:
 * libmount 2.38 drops the ID= field when it rewrites the table. Entries of
 * other mount points are never touched: /run may be shared with mount
 * namespaces whose mounts this one does not see. Returns the top mount's
 * id or -errno.
 */
enum utab_mode { UTAB_ADD, UTAB_ADD_EXTRA, UTAB_PRUNE };

static int utab_rewrite(const char *source, const char *target, enum utab_mode mode)
{
	const char *path = utab_path();
	char lock[PATH_MAX], tmp[PATH_MAX], dir[PATH_MAX], line[8192], *slash;
	char src[PATH_MAX * 4], tgt[PATH_MAX * 4];
	int lfd, tfd, id = -1, n, keep, seen = 0, ret = 0;
	FILE *in, *out;

	mangle(src, sizeof(src), source ? source : "");
	mangle(tgt, sizeof(tgt), target);
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		mkdir(dir, 0755);
	}
	snprintf(lock, sizeof(lock), "%s.lock", path);
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
	lfd = open(lock, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
	if (lfd < 0)
		return -errno;
	if (flock(lfd, LOCK_EX)) {
		ret = -errno;
		goto out;
	}
	n = mfs_mounts_on(target, &id);
	if (n < 0 || (mode != UTAB_PRUNE && n == 0)) {
		ret = n < 0 ? n : -ENOENT;
		goto out;
	}
	keep = mode == UTAB_ADD ? n - 1 : n;
	in = fopen(path, "re");
	if (!in && errno != ENOENT) {
		ret = -errno;
		goto out;
	}
	if (mode == UTAB_PRUNE) {
		/* most unmounts leave nothing to drop: rewrite only when something is */
		while (in && fgets(line, sizeof(line), in))
			seen += ours_on(line, tgt);
		if (seen <= keep || (in && ferror(in))) {
			if (in)
				fclose(in);
			goto out;
		}
		rewind(in);
		seen = 0;
	}
	tfd = mkstemp(tmp);
	out = tfd >= 0 ? fdopen(tfd, "w") : NULL;
	if (!out) {
		ret = -errno;
		if (tfd >= 0) {
			close(tfd);
			unlink(tmp);
		}
		if (in)
			fclose(in);
		goto out;
	}
	while (in && fgets(line, sizeof(line), in))
		if (!ours_on(line, tgt) || seen++ < keep)
			fputs(line, out);
	/* a table read only in part is not written back */
	if (in && ferror(in))
		ret = -EIO;
	if (in)
		fclose(in);
	/* ID= for the libmount versions that match by it (2.39 on) */
	if (mode != UTAB_PRUNE)
		fprintf(out, "ID=%d SRC=%s TARGET=%s ROOT=/ OPTS=%s\n", id, src, tgt, MFS_UTAB_OPTS);
	if (!ret && (fchmod(tfd, 0644) || fflush(out) || fsync(tfd)))
		ret = -errno;
	if (fclose(out) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
out:
	close(lfd);
	return ret ? ret : id;
}

int mfs_utab_add(const char *source, const char *target)
{
	return utab_rewrite(source, target, UTAB_ADD);
}

int mfs_utab_add_extra(const char *source, const char *target)
{
	int ret = utab_rewrite(source, target, UTAB_ADD_EXTRA);

	return ret < 0 ? ret : 0;
}

void mfs_utab_remove(const char *target)
{
	(void)utab_rewrite(NULL, target, UTAB_PRUNE);
}

static int is_mount_id(const struct mfs_mountinfo *m, void *arg)
{
	return m->id == *(const int *)arg;
}

bool mfs_mount_id_present(int id)
{
	return mfs_mountinfo_walk(NULL, is_mount_id, &id) == 1;
}
