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

/*
 * How many mfs mounts there are on @target (mounts stack), or -errno when
 * the mount table cannot be read; the id of the top one into @top_id.
 */
static int mfs_mounts_on(const char *target, int *top_id)
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
		mfs_unescape_mount_path(mp);
		if (strcmp(mp, target) == 0) {
			n++;
			*top_id = id;
		}
	}
	if (ferror(f))
		n = -EIO;
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

/* Whether utab line @line is ours, for mount point @target (mangled). */
static bool ours_on(const char *line, const char *target)
{
	char tgt[PATH_MAX * 4 + 16];

	snprintf(tgt, sizeof(tgt), " TARGET=%s ", target);
	return strstr(line, " OPTS=" MFS_UTAB_OPTS) && strstr(line, tgt);
}

/*
 * Rewrite utab under its lock, as libmount does (a new file renamed over
 * it), keeping the first @keep of our entries for @target (mangled) - one a
 * mount there, the lowest first, as they were added - and every other line,
 * and adding @add if not NULL. Entries are told by mount point and count
 * alone: libmount 2.38 drops the ID= field when it rewrites the table.
 * Entries of other mount points are never touched: /run may be shared with
 * mount namespaces whose mounts this one does not see.
 */
static int utab_rewrite(const char *target, int keep, const char *add)
{
	const char *path = utab_path();
	char lock[PATH_MAX], tmp[PATH_MAX], dir[PATH_MAX], line[8192], *slash;
	int lfd, tfd, seen = 0, ret = 0;
	FILE *in, *out;

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
		if (!ours_on(line, target) || seen++ < keep)
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
	close(lfd);
	return ret;
}

int mfs_utab_add(const char *source, const char *target)
{
	char src[PATH_MAX * 4], tgt[PATH_MAX * 4], entry[PATH_MAX * 9];
	int id = -1, n = mfs_mounts_on(target, &id);

	if (n <= 0)
		return n < 0 ? n : -ENOENT;
	mangle(src, sizeof(src), source);
	mangle(tgt, sizeof(tgt), target);
	/* ID= for the libmount versions that match by it (2.39 on) */
	snprintf(entry, sizeof(entry), "ID=%d SRC=%s TARGET=%s ROOT=/ OPTS=%s", id, src, tgt,
		 MFS_UTAB_OPTS);
	return utab_rewrite(tgt, n - 1, entry);
}

void mfs_utab_remove(const char *target)
{
	char tgt[PATH_MAX * 4], line[8192];
	FILE *f = fopen(utab_path(), "re");
	int id, n, ours = 0;

	if (!f)
		return;
	mangle(tgt, sizeof(tgt), target);
	while (fgets(line, sizeof(line), f))
		ours += ours_on(line, tgt);
	fclose(f);
	/* most unmounts leave nothing to drop: rewrite only when something is */
	n = mfs_mounts_on(target, &id);
	if (n >= 0 && ours > n)
		(void)utab_rewrite(tgt, n, NULL);
}
