/*
 * mfs restore: copy files out of a filesystem that will not mount, best
 * effort. It opens the devices read-only (members may be missing), reads
 * every file through the engine, which tries each copy and rebuilds from
 * parity, and leaves what no copy gives back as a hole, naming the file.
 * Nothing is ever written to the source devices.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "cmds/commands.h"
#include "common/help.h"
#include "common/messages.h"
#include "common/open.h"
#include "common/progress.h"
#include "kernel-shared/tree/alloc.h"
#include "kernel-shared/fs/inode.h"
#include "kernel-shared/ops/open.h"

static const char * const cmd_restore_usage[] = {
	"mfs restore [options] <device> [<device>...] <path>",
	"",
	"Try to salvage files from a damaged filesystem. Nothing is written to",
	"the devices; members may be missing. Each file is read from whichever",
	"copy or parity still verifies; what none gives back is left as a hole",
	"and the file is named.",
	"",
	OPTLINE("-x|--xattr", "restore extended attributes"),
	OPTLINE("-m|--metadata", "restore owner, mode and times"),
	OPTLINE("-S|--symlink", "restore symbolic links"),
	OPTLINE("-i|--ignore-errors", "go on after a file that could not be recovered whole"),
	OPTLINE("-o|--overwrite", "overwrite existing files"),
	OPTLINE("-D|--dry-run", "list what would be restored, write nothing"),
	OPTLINE("-u|--super N", "use superblock copy N (0, 1 or 2)"),
	OPTLINE("--path-regex REGEX", "restore only paths matching REGEX, e.g. '^/(|home(|/alice(|/.*)))$'"),
	OPTLINE("-c|--ignore-case", "the regex ignores case"),
	OPTLINE("-v|--verbose", "list each item restored"),
	NULL
};

struct restore_opts {
	bool xattr, metadata, symlink, ignore_errors, overwrite, dry_run, verbose;
	bool ignore_case, have_re;
	regex_t re;
	int super_mirror;
};

struct restore_ctx {
	struct mfs_fs_info *fs;
	const struct restore_opts *o;
	u64 damaged;		/* files not recovered whole */
	u64 failed;		/* items that could not be restored at all */
	bool skipped;		/* an existing file was left alone */
	bool stop;		/* an error without -i */
	/* the directories being restored, the root first: a damaged entry naming one is a loop */
	u64 *dirs;
	int nr_dirs, max_dirs;
	/* on stderr: the file data written of the data the filesystem holds */
	struct mfs_progress bar;
	u64 data_total, data_done;
};

/* one directory entry, collected before anything is restored from it */
struct restore_entry {
	char *name;
	u64 ino;
};

struct entry_list {
	struct restore_entry *e;
	int nr, max;
};

static int collect_entry(void *arg, const char *name, u64 ino, u32 type, u64 next)
{
	struct entry_list *l = arg;

	(void)type;
	(void)next;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	if (l->nr == l->max) {
		int max = l->max ? l->max * 2 : 64;
		struct restore_entry *e = realloc(l->e, max * sizeof(*e));

		if (!e)
			return -ENOMEM;
		l->e = e;
		l->max = max;
	}
	l->e[l->nr].name = strdup(name);
	if (!l->e[l->nr].name)
		return -ENOMEM;
	l->e[l->nr++].ino = ino;
	return 0;
}

static void free_entries(struct entry_list *l)
{
	int i;

	for (i = 0; i < l->nr; i++)
		free(l->e[i].name);
	free(l->e);
}

/*
 * An item that could not be restored: counted, and the end of the run
 * without -i. err 0: why says it all.
 */
static void item_failed(struct restore_ctx *c, const char *fspath, const char *why, int err)
{
	/* the root's path is "" (its entries' are "/name") */
	if (!fspath[0])
		fspath = "/";
	mfs_progress_break(&c->bar);
	if (err)
		error("cannot restore %s: %s: %s", fspath, why, strerror(-err));
	else
		error("cannot restore %s: %s", fspath, why);
	c->failed++;
	if (!c->o->ignore_errors)
		c->stop = true;
}

static bool path_selected(const struct restore_opts *o, const char *fspath)
{
	return !o->have_re || !regexec(&o->re, fspath, 0, NULL, 0);
}

/*
 * Where dst already exists: false (and a note) unless -o, in which case a
 * file or link is removed first. Directories are reused.
 */
static bool may_create(struct restore_ctx *c, const char *dst, bool is_dir)
{
	struct stat st;

	if (lstat(dst, &st))
		return true;
	if (is_dir && S_ISDIR(st.st_mode))
		return true;
	if (!c->o->overwrite) {
		mfs_progress_break(&c->bar);
		printf("Skipping existing file %s\n", dst);
		c->skipped = true;
		return false;
	}
	if (!c->o->dry_run && !S_ISDIR(st.st_mode) && unlink(dst)) {
		error("cannot overwrite %s: %m", dst);
		return false;
	}
	return true;
}

static void restore_xattrs(struct restore_ctx *c, u64 ino, const char *fspath, const char *dst)
{
	ssize_t len = mfs_listxattr(c->fs, ino, NULL, 0), vlen;
	char *list, *name, *val;

	if (len <= 0)
		return;
	list = malloc(len);
	if (!list || mfs_listxattr(c->fs, ino, list, len) != len) {
		free(list);
		item_failed(c, fspath, "reading its xattrs", -EIO);
		return;
	}
	for (name = list; name < list + len; name += strlen(name) + 1) {
		vlen = mfs_getxattr(c->fs, ino, name, NULL, 0);
		val = vlen >= 0 ? malloc(vlen ? vlen : 1) : NULL;
		if (!val || mfs_getxattr(c->fs, ino, name, val, vlen) != vlen)
			item_failed(c, fspath, "reading an xattr", vlen < 0 ? (int)vlen : -EIO);
		else if (lsetxattr(dst, name, val, vlen, 0))
			warning("cannot set xattr %s on %s: %m", name, dst);
		free(val);
	}
	free(list);
}

/* Owner, mode and times of dst from st (-m); symlinks keep their mode. */
static void restore_metadata(const struct mfs_stat *st, const char *dst)
{
	struct timespec ts[2] = { st->atime, st->mtime };

	if (lchown(dst, st->uid, st->gid))
		warning("cannot set the owner of %s: %m", dst);
	if (!S_ISLNK(st->mode) && chmod(dst, st->mode & 07777))
		warning("cannot set the mode of %s: %m", dst);
	if (utimensat(AT_FDCWD, dst, ts, AT_SYMLINK_NOFOLLOW))
		warning("cannot set the times of %s: %m", dst);
}

/*
 * Read [off, off+len) of ino into buf. A range no copy gives back is
 * read again sector by sector; the sectors that still fail stay zero and
 * are added to *lost (with *first_lost the first offset).
 */
static void read_salvaging(struct restore_ctx *c, u64 ino, u64 off, size_t len, u8 *buf,
			   u64 *lost, u64 *first_lost)
{
	u32 sector = c->fs->sectorsize;
	size_t done;
	ssize_t n;

	n = mfs_read(c->fs, ino, off, len, buf);
	if (n == (ssize_t)len)
		return;
	for (done = 0; done < len; done += sector) {
		size_t piece = len - done < sector ? len - done : sector;

		n = mfs_read(c->fs, ino, off + done, piece, buf + done);
		if (n == (ssize_t)piece)
			continue;
		memset(buf + done, 0, piece);
		if (!*lost)
			*first_lost = off + done;
		*lost += piece;
	}
}

#define RESTORE_CHUNK (1024 * 1024)

/* The data of a regular file into fd, holes kept; the bytes lost into *lost. */
static int copy_file_data(struct restore_ctx *c, u64 ino, u64 size, int fd,
			  u64 *lost, u64 *first_lost)
{
	u8 *buf = malloc(RESTORE_CHUNK);
	u64 off = 0, data, hole;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	while (off < size && !ret) {
		ret = mfs_lseek(c->fs, ino, off, SEEK_DATA, &data);
		if (ret == -ENXIO) {
			ret = 0;
			break;
		}
		if (!ret)
			ret = mfs_lseek(c->fs, ino, data, SEEK_HOLE, &hole);
		if (ret) {
			/* the extent tree of the file is unreadable: try it all */
			data = off;
			hole = size;
			ret = 0;
		}
		for (off = data; off < hole && !ret; off += RESTORE_CHUNK) {
			size_t len = hole - off < RESTORE_CHUNK ? hole - off : RESTORE_CHUNK;

			read_salvaging(c, ino, off, len, buf, lost, first_lost);
			if (pwrite(fd, buf, len, off) != (ssize_t)len)
				ret = -errno;
			c->data_done += len;
			mfs_progress_update(&c->bar, "", c->data_done, c->data_total, c->data_done,
					    mfs_progress_elapsed(&c->bar));
		}
		off = hole;
	}
	if (!ret && ftruncate(fd, size))
		ret = -errno;
	free(buf);
	return ret;
}

static void restore_file(struct restore_ctx *c, const struct mfs_stat *st, const char *fspath,
			 const char *dst)
{
	u64 lost = 0, first_lost = 0;
	int fd, ret;

	if (c->o->dry_run)
		return;
	fd = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		item_failed(c, fspath, dst, -errno);
		return;
	}
	ret = copy_file_data(c, st->ino, st->size, fd, &lost, &first_lost);
	if (close(fd) && !ret)
		ret = -errno;
	if (ret) {
		item_failed(c, fspath, "writing it", ret);
		return;
	}
	if (lost) {
		mfs_progress_break(&c->bar);
		error("%s: %llu of %llu bytes could not be read from any copy (first at offset %llu); left as holes",
		      fspath, (unsigned long long)lost, (unsigned long long)st->size,
		      (unsigned long long)first_lost);
		c->damaged++;
		if (!c->o->ignore_errors)
			c->stop = true;
	}
}

static void restore_symlink(struct restore_ctx *c, const struct mfs_stat *st,
			    const char *fspath, const char *dst)
{
	char target[4096];
	int ret;

	ret = mfs_readlink(c->fs, st->ino, target, sizeof(target));
	if (ret < 0) {
		item_failed(c, fspath, "reading the link", ret);
		return;
	}
	if (!c->o->dry_run && symlink(target, dst))
		item_failed(c, fspath, dst, -errno);
}

static bool dir_in_chain(const struct restore_ctx *c, u64 dir)
{
	int i;

	for (i = 0; i < c->nr_dirs; i++)
		if (c->dirs[i] == dir)
			return true;
	return false;
}

static void restore_dir(struct restore_ctx *c, u64 dir, const char *fspath, const char *dst);

/* One entry of a directory: fspath and dst are its paths in the filesystem and outside. */
static void restore_entry(struct restore_ctx *c, u64 ino, const char *fspath, const char *dst)
{
	struct mfs_stat st;
	int ret;

	ret = mfs_getattr(c->fs, ino, &st);
	if (ret) {
		item_failed(c, fspath, "reading its inode", ret);
		return;
	}
	if (!path_selected(c->o, fspath) || (S_ISLNK(st.mode) && !c->o->symlink))
		return;
	if (!S_ISDIR(st.mode) && !S_ISREG(st.mode) && !S_ISLNK(st.mode)) {
		if (c->o->verbose)
			printf("Skipping %s: not a file, directory or symlink\n", fspath);
		return;
	}
	/*
	 * An entry naming a directory it is inside of (damage: the fs tree is
	 * not a tree) would recurse until the stack or the path gives out.
	 */
	if (S_ISDIR(st.mode) && dir_in_chain(c, ino)) {
		item_failed(c, fspath, "it names a directory it is inside of (a loop in the fs tree)", 0);
		return;
	}
	if (!may_create(c, dst, S_ISDIR(st.mode)))
		return;
	if (c->o->verbose)
		printf("Restoring %s\n", dst);
	if (S_ISDIR(st.mode)) {
		if (!c->o->dry_run && mkdir(dst, 0755) && errno != EEXIST) {
			item_failed(c, fspath, dst, -errno);
			return;
		}
		restore_dir(c, ino, fspath, dst);
	} else if (S_ISREG(st.mode)) {
		restore_file(c, &st, fspath, dst);
	} else {
		restore_symlink(c, &st, fspath, dst);
	}
	if (c->o->dry_run || c->stop)
		return;
	if (c->o->xattr && !S_ISLNK(st.mode))
		restore_xattrs(c, ino, fspath, dst);
	/* after the contents, so a directory keeps its times */
	if (c->o->metadata)
		restore_metadata(&st, dst);
}

static char *join(const char *a, const char *b)
{
	size_t la = strlen(a);
	char *p = malloc(la + strlen(b) + 2);

	if (p)
		sprintf(p, "%s%s%s", a, la && a[la - 1] == '/' ? "" : "/", b);
	return p;
}

static void restore_dir(struct restore_ctx *c, u64 dir, const char *fspath, const char *dst)
{
	struct entry_list l = { 0 };
	int i, ret;

	if (c->nr_dirs == c->max_dirs) {
		int max = c->max_dirs ? c->max_dirs * 2 : 64;
		u64 *d = realloc(c->dirs, max * sizeof(*d));

		if (!d) {
			item_failed(c, fspath, "listing it", -ENOMEM);
			return;
		}
		c->dirs = d;
		c->max_dirs = max;
	}
	c->dirs[c->nr_dirs++] = dir;
	ret = mfs_readdir(c->fs, dir, 0, collect_entry, &l);
	if (ret < 0)
		item_failed(c, fspath, "reading the directory", ret);
	for (i = 0; i < l.nr && !c->stop; i++) {
		char *sub_fs = join(fspath, l.e[i].name), *sub_dst = join(dst, l.e[i].name);

		if (sub_fs && sub_dst)
			restore_entry(c, l.e[i].ino, sub_fs, sub_dst);
		else
			item_failed(c, fspath, "listing it", -ENOMEM);
		free(sub_fs);
		free(sub_dst);
	}
	free_entries(&l);
	c->nr_dirs--;
}

enum { OPT_PATH_REGEX = 256 };

/* The options into o; the index of the first device, or -1 after an error. */
static int parse_restore_options(const struct cmd_struct *cmd, int argc, char **argv,
				 struct restore_opts *o)
{
	static const struct option longopts[] = {
		{ "xattr", no_argument, NULL, 'x' },
		{ "metadata", no_argument, NULL, 'm' },
		{ "symlink", no_argument, NULL, 'S' },
		{ "ignore-errors", no_argument, NULL, 'i' },
		{ "overwrite", no_argument, NULL, 'o' },
		{ "dry-run", no_argument, NULL, 'D' },
		{ "super", required_argument, NULL, 'u' },
		{ "path-regex", required_argument, NULL, OPT_PATH_REGEX },
		{ "ignore-case", no_argument, NULL, 'c' },
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 }
	};
	const char *regex = NULL;
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "xmSioDu:cv", longopts, NULL)) != -1) {
		switch (c) {
		case 'x': o->xattr = true; break;
		case 'm': o->metadata = true; break;
		case 'S': o->symlink = true; break;
		case 'i': o->ignore_errors = true; break;
		case 'o': o->overwrite = true; break;
		case 'D': o->dry_run = true; break;
		case 'v': o->verbose = true; break;
		case 'c': o->ignore_case = true; break;
		case OPT_PATH_REGEX: regex = optarg; break;
		case 'u':
			o->super_mirror = strtol(optarg, &end, 10);
			if (*end || !*optarg || o->super_mirror < 0 ||
			    o->super_mirror >= MFS_SUPER_MIRROR_MAX) {
				error("super mirror should be 0, 1 or 2: %s", optarg);
				return -1;
			}
			break;
		default:
			usage_unknown_option(cmd, argv);
		}
	}
	if (check_argc_min(argc - optind, 2))
		return -1;
	if (o->ignore_case && !regex) {
		error("-c|--ignore-case needs --path-regex");
		return -1;
	}
	if (regex) {
		int flags = REG_EXTENDED | REG_NOSUB | (o->ignore_case ? REG_ICASE : 0);
		int ret = regcomp(&o->re, regex, flags);

		if (ret) {
			char why[256];

			regerror(ret, &o->re, why, sizeof(why));
			error("invalid regex '%s': %s", regex, why);
			return -1;
		}
		o->have_re = true;
	}
	return optind;
}

static int cmd_restore(const struct cmd_struct *cmd, int argc, char **argv)
{
	struct restore_opts o = { .super_mirror = -1 };
	struct restore_ctx c = { .o = &o };
	const char *dst;
	struct stat st;
	int first, ret;

	first = parse_restore_options(cmd, argc, argv, &o);
	if (first < 0)
		return 1;
	dst = argv[argc - 1];
	if (stat(dst, &st) || !S_ISDIR(st.st_mode)) {
		error("%s is not a directory", dst);
		ret = 1;
		goto out;
	}
	ret = mfs_open_for_cmd_mirror((const char * const *)argv + first, argc - 1 - first,
				      MFS_OPEN_DEGRADED | MFS_OPEN_PARTIAL, o.super_mirror, &c.fs);
	if (ret) {
		ret = 1;
		goto out;
	}
	if (o.dry_run)
		printf("This is a dry-run, no files are going to be restored\n");
	/* -v lists each item instead; a dry run reads no data */
	mfs_progress_init(&c.bar, stderr, o.verbose || o.dry_run);
	c.data_total = mfs_used_bytes(c.fs, MFS_BLOCK_GROUP_DATA);
	restore_dir(&c, MFS_ROOT_DIR_OBJECTID, "", dst);
	mfs_progress_end(&c.bar, "", c.data_done, c.data_total, c.data_done,
			 mfs_progress_elapsed(&c.bar));
	free(c.dirs);
	mfs_close_fs(c.fs);
	if (c.skipped && !o.overwrite)
		fprintf(stderr, "If you wish to overwrite use -o\n");
	if (c.damaged || c.failed)
		error("%llu file(s) not recovered whole, %llu item(s) not restored%s",
		      (unsigned long long)c.damaged, (unsigned long long)c.failed,
		      c.stop ? " (stopped at the first; -i goes on)" : "");
	ret = c.damaged || c.failed ? 1 : 0;
out:
	if (o.have_re)
		regfree(&o.re);
	return ret;
}
DEFINE_SIMPLE_COMMAND(restore, "restore");
