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
#define MAX_MOUNTS	4096

static const char *utab_path(void)
{
	/* libmount's own override, honoured the same way */
	const char *p = getenv("LIBMOUNT_UTAB");

	return p && *p ? p : "/run/mount/utab";
}

/*
 * The ids of the mfs mounts there are; their number, up to max, or -errno
 * when the mount table cannot be read. The id of the top mount on @target
 * into @target_id if not NULL.
 */
static int mfs_mount_ids(int *ids, int max, const char *target, int *target_id)
{
	char line[8192];
	int n = 0;
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char mp[PATH_MAX], type[64];
		char *sep = strstr(line, " - ");
		int id;

		if (!sep || sscanf(line, "%d %*s %*s %*s %4095s", &id, mp) != 2 ||
		    sscanf(sep + 3, "%63s", type) != 1 || strcmp(type, "fuse.mfs"))
			continue;
		if (n < max)
			ids[n++] = id;
		mfs_unescape_mount_path(mp);
		/* the newest one there: mounts over it come later */
		if (target && target_id && strcmp(mp, target) == 0)
			*target_id = id;
	}
	fclose(f);
	return n;
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

/* Whether utab line @line is ours, for @target (mangled), and its mount gone. */
static bool stale(const char *line, const char *target, const int *ids, int nids)
{
	char tgt[PATH_MAX * 4 + 16];
	int id, i;

	snprintf(tgt, sizeof(tgt), " TARGET=%s ", target);
	if (!strstr(line, " OPTS=" MFS_UTAB_OPTS) || !strstr(line, tgt) ||
	    sscanf(line, "ID=%d ", &id) != 1)
		return false;
	for (i = 0; i < nids; i++)
		if (ids[i] == id)
			return false;
	return true;
}

/*
 * Rewrite utab under its lock, as libmount does (a new file renamed over
 * it), keeping every line but our stale ones for @target (mangled) and
 * adding @add if not NULL. Entries of other mount points are never
 * touched: /run may be shared with mount namespaces whose mounts this one
 * does not see.
 */
static int utab_rewrite(const char *target, const char *add)
{
	const char *path = utab_path();
	char lock[PATH_MAX], tmp[PATH_MAX], dir[PATH_MAX], line[8192], *slash;
	int *ids = malloc(MAX_MOUNTS * sizeof(*ids));
	int nids, lfd = -1, tfd, ret = 0;
	FILE *in, *out;

	if (!ids)
		return -ENOMEM;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		mkdir(dir, 0755);
	}
	snprintf(lock, sizeof(lock), "%s.lock", path);
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
	lfd = open(lock, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
	if (lfd < 0 || flock(lfd, LOCK_EX)) {
		ret = -errno;
		goto out;
	}
	/* without the mount table nothing can be told stale */
	nids = mfs_mount_ids(ids, MAX_MOUNTS, NULL, NULL);
	if (nids < 0) {
		ret = nids;
		goto out;
	}
	in = fopen(path, "re");
	if (!in && errno != ENOENT) {
		ret = -errno;
		goto out;
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
		if (!stale(line, target, ids, nids))
			fputs(line, out);
	/* a table read only in part is not written back */
	if (in && ferror(in))
		ret = -EIO;
	if (in)
		fclose(in);
	if (add)
		fprintf(out, "%s\n", add);
	if (!ret && (fchmod(tfd, 0644) || fflush(out) || fsync(tfd)))
		ret = -errno;
	if (fclose(out) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
out:
	if (lfd >= 0)
		close(lfd);
	free(ids);
	return ret;
}

int mfs_utab_add(const char *source, const char *target)
{
	char src[PATH_MAX * 4], tgt[PATH_MAX * 4], entry[PATH_MAX * 9];
	int id = -1, ids[1];

	if (mfs_mount_ids(ids, 1, target, &id) < 0 || id < 0)
		return -ENOENT;
	mangle(src, sizeof(src), source);
	mangle(tgt, sizeof(tgt), target);
	snprintf(entry, sizeof(entry), "ID=%d SRC=%s TARGET=%s ROOT=/ OPTS=%s", id, src, tgt,
		 MFS_UTAB_OPTS);
	return utab_rewrite(tgt, entry);
}

void mfs_utab_remove(const char *target)
{
	char tgt[PATH_MAX * 4], line[8192];
	FILE *f = fopen(utab_path(), "re");
	bool ours = false;

	if (!f)
		return;
	mangle(tgt, sizeof(tgt), target);
	/* most machines have no mfs entry: rewrite only when there is one */
	while (!ours && fgets(line, sizeof(line), f))
		ours = strstr(line, " OPTS=" MFS_UTAB_OPTS) && strstr(line, tgt);
	fclose(f);
	if (ours)
		(void)utab_rewrite(tgt, NULL);
}
