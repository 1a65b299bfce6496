/*
 * dirops: random namespace operations in a directory of a mounted
 * filesystem, checked against a model tree.
 *
 *   dirops [-S SEED] [-N OPS] [-m MODEL] [--resume] [options] DIR
 *
 * create, mkdir, mkfifo, symlink, link, unlink, rmdir, rename (plain,
 * overwriting, RENAME_NOREPLACE, RENAME_EXCHANGE, directories into other
 * directories), rewrites of file contents, unlink of an open file, and
 * user.* xattrs (set with XATTR_CREATE/XATTR_REPLACE, get, list, remove).
 * Every result and errno is compared with what the model says a POSIX
 * filesystem on Linux must return. Every --walk-every operations (and at
 * the start of a resumed run and at the end) the whole tree is walked
 * with readdir and lstat and compared with the model: names, types, link
 * counts, inode identity (hard links share one, inode numbers survive a
 * remount), file sizes and contents, symlink targets and xattrs.
 *
 * With -m the model is saved at the end; --resume loads it, verifies the
 * tree against it (after the caller remounted, say) and goes on.
 *
 * Exit status: 0 agreement, 1 a mismatch (the failing operation and the
 * operations before it are printed), 2 usage or setup error.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/xattr.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

#define MODEL_MAGIC	"mfs-dirops-model 1"
#define LOG_SIZE	48
#define LOG_LINE	320
#define MAX_INODES	260
#define MAX_DEPTH	9
#define MAX_PATH_USED	3500
#define MAX_FILE	20000

enum ntype { T_FILE, T_DIR, T_LINK, T_FIFO };
static const char type_char[] = "fdlp";

struct xattr {
	char *name;
	uint8_t *value;
	size_t len;
};

struct inode;

struct dentry {
	char *name;
	struct inode *inode;
};

struct inode {
	int id;
	enum ntype type;
	int nlink;		/* names (non-directories) */
	uint64_t content;	/* files: seed of the contents */
	uint64_t size;		/* files */
	char *target;		/* symlinks */
	struct xattr *xattrs;
	int nxattrs;
	struct dentry *children;	/* directories */
	int nchildren;
	struct inode *parent;		/* directories */
	uint64_t st_ino;		/* as seen by lstat; 0 = not yet */
	bool live;
};

static struct inode **inodes;
static int ninodes, live_inodes, next_id;
static struct inode *root;

static uint64_t rng, seed = 1, op_nr;
static size_t max_xattr = 4000, max_symlink = 4095;
static bool verbose;
static const char *model_path;

static char oplog[LOG_SIZE][LOG_LINE];
static uint64_t log_count;
static char cur_op[LOG_LINE];

/* ---------------- plumbing ---------------- */

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t x = (*state += 0x9e3779b97f4a7c15ULL);

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t next_rand(void)
{
	return splitmix64(&rng);
}

static uint64_t rand_below(uint64_t n)
{
	return n ? next_rand() % n : 0;
}

static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "dirops: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(2);
}

static void *xmalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	if (!p)
		die("out of memory");
	return p;
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die("out of memory");
	return p;
}

static char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		die("out of memory");
	return p;
}

static void print_log(void)
{
	uint64_t n = log_count < LOG_SIZE ? log_count : LOG_SIZE, i;

	fprintf(stderr, "last %" PRIu64 " operations:\n", n);
	for (i = log_count - n; i < log_count; i++)
		fprintf(stderr, "  %s\n", oplog[i % LOG_SIZE]);
}

static void __attribute__((noreturn, format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "dirops: operation %" PRIu64 " failed (seed %" PRIu64 "): %s: ",
		op_nr, seed, cur_op);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	print_log();
	exit(1);
}

/* Start an operation: its description goes to the log. */
static void __attribute__((format(printf, 1, 2))) begin(const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(cur_op, sizeof(cur_op), "%6" PRIu64 " ", op_nr);
	va_start(ap, fmt);
	vsnprintf(cur_op + n, sizeof(cur_op) - n, fmt, ap);
	va_end(ap);
	snprintf(oplog[log_count++ % LOG_SIZE], LOG_LINE, "%s", cur_op);
	if (verbose)
		fprintf(stderr, "%s\n", cur_op);
}

static const char *err_name(int e)
{
	static char buf[32];

	switch (e) {
	case 0: return "success";
	case ENOENT: return "ENOENT";
	case EEXIST: return "EEXIST";
	case ENOTDIR: return "ENOTDIR";
	case EISDIR: return "EISDIR";
	case ENOTEMPTY: return "ENOTEMPTY";
	case EINVAL: return "EINVAL";
	case EPERM: return "EPERM";
	case ENODATA: return "ENODATA";
	case ERANGE: return "ERANGE";
	case ENAMETOOLONG: return "ENAMETOOLONG";
	case E2BIG: return "E2BIG";
	case ENOSPC: return "ENOSPC";
	case EIO: return "EIO";
	case EUCLEAN: return "EUCLEAN";
	}
	snprintf(buf, sizeof(buf), "errno %d", e);
	return buf;
}

/* Compare a syscall's outcome (ret < 0 with errno, or not) with the model's. */
static void expect(int want, long ret, const char *call)
{
	int got = ret < 0 ? errno : 0;
	char *line = oplog[(log_count - 1) % LOG_SIZE];
	size_t len = strlen(line);

	snprintf(line + len, LOG_LINE - len, " -> %s", err_name(got));
	if (verbose)
		fprintf(stderr, "%s: %s\n", call, err_name(got));
	if (got != want)
		fail("%s: expected %s, got %s", call, err_name(want), err_name(got));
}

/* ---------------- the model ---------------- */

static struct inode *new_inode(enum ntype type)
{
	struct inode *in = xmalloc(sizeof(*in));

	in->id = next_id++;
	in->type = type;
	in->live = true;
	inodes = xrealloc(inodes, (ninodes + 1) * sizeof(*inodes));
	inodes[ninodes++] = in;
	live_inodes++;
	return in;
}

static void kill_inode(struct inode *in)
{
	int i;

	in->live = false;
	live_inodes--;
	for (i = 0; i < in->nxattrs; i++) {
		free(in->xattrs[i].name);
		free(in->xattrs[i].value);
	}
	free(in->xattrs);
	in->xattrs = NULL;
	in->nxattrs = 0;
	free(in->target);
	in->target = NULL;
}

static struct dentry *find_child(struct inode *dir, const char *name)
{
	int i;

	for (i = 0; i < dir->nchildren; i++)
		if (!strcmp(dir->children[i].name, name))
			return &dir->children[i];
	return NULL;
}

static void add_child(struct inode *dir, const char *name, struct inode *in)
{
	dir->children = xrealloc(dir->children, (dir->nchildren + 1) * sizeof(*dir->children));
	dir->children[dir->nchildren].name = xstrdup(name);
	dir->children[dir->nchildren].inode = in;
	dir->nchildren++;
	if (in->type == T_DIR)
		in->parent = dir;
	else
		in->nlink++;
}

/* Remove a name; a non-directory losing its last name (or a directory) dies. */
static void remove_child(struct inode *dir, const char *name)
{
	struct dentry *d = find_child(dir, name);
	struct inode *in;

	if (!d)
		die("model: no %s to remove", name);
	in = d->inode;
	free(d->name);
	*d = dir->children[--dir->nchildren];
	if (in->type == T_DIR) {
		in->parent = NULL;
		kill_inode(in);
	} else if (--in->nlink == 0) {
		kill_inode(in);
	}
}

static int subdirs(const struct inode *dir)
{
	int i, n = 0;

	for (i = 0; i < dir->nchildren; i++)
		n += dir->children[i].inode->type == T_DIR;
	return n;
}

static int model_nlink(const struct inode *in)
{
	return in->type == T_DIR ? 2 + subdirs(in) : in->nlink;
}

static int depth(const struct inode *dir)
{
	int d = 0;

	while (dir != root) {
		dir = dir->parent;
		d++;
	}
	return d;
}

/* Levels of directories below dir. */
static int height(const struct inode *dir)
{
	int i, h = 0;

	for (i = 0; i < dir->nchildren; i++) {
		const struct inode *c = dir->children[i].inode;

		if (c->type == T_DIR && 1 + height(c) > h)
			h = 1 + height(c);
	}
	return h;
}

/* Is a an ancestor of b, or b itself? */
static bool ancestor_or_self(const struct inode *a, const struct inode *b)
{
	while (b) {
		if (a == b)
			return true;
		b = b->parent;
	}
	return false;
}

static const char *dir_path(const struct inode *dir, char *buf, size_t size)
{
	char tmp[8192];
	const struct inode *d;

	if (dir == root) {
		snprintf(buf, size, ".");
		return buf;
	}
	buf[0] = 0;
	for (d = dir; d != root; d = d->parent) {
		const struct inode *p = d->parent;
		int i;

		for (i = 0; i < p->nchildren; i++)
			if (p->children[i].inode == d)
				break;
		if (i == p->nchildren)
			die("model: directory %d has no name", d->id);
		snprintf(tmp, sizeof(tmp), "/%s%s", p->children[i].name, buf);
		snprintf(buf, size, "%s", tmp);
	}
	snprintf(tmp, sizeof(tmp), ".%s", buf);
	snprintf(buf, size, "%s", tmp);
	return buf;
}

static void entry_path(const struct inode *dir, const char *name, char *buf, size_t size)
{
	char d[8192];

	snprintf(buf, size, "%s/%s", dir_path(dir, d, sizeof(d)), name);
}

/* File contents derive from a seed. */
static void fill_content(uint8_t *p, uint64_t content, uint64_t size)
{
	uint64_t state = content, i;

	for (i = 0; i < size; i += 8) {
		uint64_t x = splitmix64(&state);

		memcpy(p + i, &x, size - i < 8 ? size - i : 8);
	}
}

/* ---------------- random choices ---------------- */

static char long_name[256], too_long_name[257];

static const char *pick_name(void)
{
	static const char * const pool[] = {
		"a", "b", "c", "d", "e", "f", "g", "h", "i", "j",
		"x y", ".hid", "\xc3\xa9t\xc3\xa9", "name-with-dashes-0123456789",
	};
	uint64_t r = rand_below(100);

	if (r < 2)
		return long_name;
	return pool[rand_below(sizeof(pool) / sizeof(pool[0]))];
}

static void collect(struct inode *dir, struct inode ***dirs, int *ndirs,
		    struct inode ***parents, const char ***names, int *nents)
{
	int i;

	*dirs = xrealloc(*dirs, (*ndirs + 1) * sizeof(**dirs));
	(*dirs)[(*ndirs)++] = dir;
	for (i = 0; i < dir->nchildren; i++) {
		*parents = xrealloc(*parents, (*nents + 1) * sizeof(**parents));
		*names = xrealloc(*names, (*nents + 1) * sizeof(**names));
		(*parents)[*nents] = dir;
		(*names)[*nents] = dir->children[i].name;
		(*nents)++;
		if (dir->children[i].inode->type == T_DIR)
			collect(dir->children[i].inode, dirs, ndirs, parents, names, nents);
	}
}

/* The tree, flattened for picking (rebuilt for every operation). */
static struct inode **all_dirs, **ent_dir;
static const char **ent_name;
static int nall_dirs, nents;

static void flatten(void)
{
	free(all_dirs);
	free(ent_dir);
	free(ent_name);
	all_dirs = ent_dir = NULL;
	ent_name = NULL;
	nall_dirs = nents = 0;
	collect(root, &all_dirs, &nall_dirs, &ent_dir, &ent_name, &nents);
}

static struct inode *pick_dir(void)
{
	return all_dirs[rand_below(nall_dirs)];
}

/* An existing entry (false if there is none). */
static bool pick_entry(struct inode **dir, const char **name)
{
	uint64_t i;

	if (!nents)
		return false;
	i = rand_below(nents);
	*dir = ent_dir[i];
	*name = ent_name[i];
	return true;
}

/* An existing entry of a type (tries a few times). */
static bool pick_entry_of(enum ntype type, struct inode **dir, const char **name)
{
	int tries;

	for (tries = 0; tries < 20; tries++)
		if (pick_entry(dir, name) && find_child(*dir, *name)->inode->type == type)
			return true;
	return false;
}

static bool pick_empty_dir(struct inode **dir, const char **name)
{
	int tries;

	for (tries = 0; tries < 30; tries++) {
		struct dentry *d;

		if (!pick_entry(dir, name))
			return false;
		d = find_child(*dir, *name);
		if (d->inode->type == T_DIR && !d->inode->nchildren)
			return true;
	}
	return false;
}

/* Mostly existing entries, sometimes a fresh name in some directory. */
static void pick_target(struct inode **dir, const char **name)
{
	if (rand_below(3) == 0 || !pick_entry(dir, name)) {
		*dir = pick_dir();
		*name = pick_name();
	}
}

static bool path_ok(const char *p)
{
	return strlen(p) < MAX_PATH_USED;
}

/* ---------------- checks against the filesystem ---------------- */

static void check_file_content(const char *path, int fd, const struct inode *in)
{
	uint8_t *want = xmalloc(in->size + 1), *got = xmalloc(in->size + 16);
	ssize_t n, total = 0;

	fill_content(want, in->content, in->size);
	for (;;) {
		n = read(fd, got + total, in->size + 16 - total);
		if (n < 0)
			fail("read %s: %s", path, strerror(errno));
		if (n == 0)
			break;
		total += n;
		if ((uint64_t)total == in->size + 16)
			break;
	}
	if ((uint64_t)total != in->size)
		fail("%s holds %zd bytes, the model %" PRIu64, path, total, in->size);
	if (memcmp(want, got, in->size))
		fail("%s: contents differ from the model", path);
	free(want);
	free(got);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char * const *)a, *(const char * const *)b);
}

/* path is relative to the test directory, our working directory */
static void check_xattrs(const char *path, const struct inode *in)
{
	char list[65536], *names[256], *p;
	const char *want[256];
	ssize_t n;
	int count = 0, i;

	if (in->type == T_LINK || in->type == T_FIFO) {
		/* user.* xattrs cannot exist there */
		n = llistxattr(path, list, sizeof(list));
		if (n < 0 && errno != EPERM && errno != ENOTSUP)
			fail("llistxattr %s: %s", path, strerror(errno));
		for (p = list; n > 0 && p < list + n; p += strlen(p) + 1)
			if (!strncmp(p, "user.", 5))
				fail("%s lists xattr %s, but it cannot have one", path, p);
		return;
	}
	n = llistxattr(path, list, sizeof(list));
	if (n < 0)
		fail("llistxattr %s: %s", path, strerror(errno));
	for (p = list; p < list + n; p += strlen(p) + 1) {
		if (count == 256)
			fail("%s: too many xattrs listed", path);
		names[count++] = p;
	}
	if (count != in->nxattrs)
		fail("%s lists %d xattrs, the model has %d", path, count, in->nxattrs);
	for (i = 0; i < in->nxattrs; i++)
		want[i] = in->xattrs[i].name;
	qsort(names, count, sizeof(*names), cmp_str);
	qsort(want, count, sizeof(*want), cmp_str);
	for (i = 0; i < count; i++)
		if (strcmp(names[i], want[i]))
			fail("%s lists xattr %s, the model has %s", path, names[i], want[i]);
	for (i = 0; i < in->nxattrs; i++) {
		const struct xattr *x = &in->xattrs[i];
		uint8_t val[8192];

		n = lgetxattr(path, x->name, val, sizeof(val));
		if (n < 0)
			fail("lgetxattr %s %s: %s", path, x->name, strerror(errno));
		if ((size_t)n != x->len || memcmp(val, x->value, n))
			fail("%s: xattr %s has a different value (%zd bytes, model %zu)",
			     path, x->name, n, x->len);
	}
}

static const struct inode *ino_owner(uint64_t st_ino);

/* Check one entry's lstat against the model; remember its inode number. */
static void check_stat(const char *path, const struct stat *st, struct inode *in)
{
	static const mode_t fmt[] = { S_IFREG, S_IFDIR, S_IFLNK, S_IFIFO };
	const struct inode *other;

	if ((st->st_mode & S_IFMT) != fmt[in->type])
		fail("%s: type %o, the model has %c", path, st->st_mode & S_IFMT,
		     type_char[in->type]);
	if ((int)st->st_nlink != model_nlink(in))
		fail("%s: %lu links, the model has %d", path, (unsigned long)st->st_nlink,
		     model_nlink(in));
	if (in->type == T_FILE && (uint64_t)st->st_size != in->size)
		fail("%s: size %lld, the model has %" PRIu64, path, (long long)st->st_size, in->size);
	if (in->type == T_LINK && (uint64_t)st->st_size != strlen(in->target))
		fail("%s: size %lld, the target has %zu bytes", path, (long long)st->st_size,
		     strlen(in->target));
	if (in->st_ino && in->st_ino != (uint64_t)st->st_ino)
		fail("%s: inode number %llu, earlier %" PRIu64, path,
		     (unsigned long long)st->st_ino, in->st_ino);
	other = ino_owner(st->st_ino);
	if (other && other != in)
		fail("%s: inode number %llu also belongs to model inode %d (this is %d)", path,
		     (unsigned long long)st->st_ino, other->id, in->id);
	in->st_ino = st->st_ino;
}

static const struct inode *ino_owner(uint64_t st_ino)
{
	int i;

	for (i = 0; i < ninodes; i++)
		if (inodes[i]->live && inodes[i]->st_ino == st_ino)
			return inodes[i];
	return NULL;
}

/* The whole tree below dir (open as dirfd) against the model. */
static void walk_dir(int dirfd, const char *path, struct inode *dir)
{
	DIR *d;
	struct dirent *de;
	char **seen = NULL;
	int nseen = 0, i, fd;
	struct stat st;

	fd = dup(dirfd);
	if (fd < 0 || !(d = fdopendir(fd)))
		fail("opendir %s: %s", path, strerror(errno));
	while ((errno = 0, de = readdir(d))) {
		struct dentry *ch;
		char sub[8192];

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		for (i = 0; i < nseen; i++)
			if (!strcmp(seen[i], de->d_name))
				fail("readdir %s lists %s twice", path, de->d_name);
		seen = xrealloc(seen, (nseen + 1) * sizeof(*seen));
		seen[nseen++] = xstrdup(de->d_name);
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		ch = find_child(dir, de->d_name);
		if (!ch)
			fail("readdir %s lists %s, which the model does not have", path, de->d_name);
		if (de->d_type != DT_UNKNOWN) {
			static const unsigned char dt[] = { DT_REG, DT_DIR, DT_LNK, DT_FIFO };

			if (de->d_type != dt[ch->inode->type])
				fail("readdir %s: d_type %d, the model has %c", sub, de->d_type,
				     type_char[ch->inode->type]);
		}
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			fail("lstat %s: %s", sub, strerror(errno));
		check_stat(sub, &st, ch->inode);
		check_xattrs(sub, ch->inode);
		switch (ch->inode->type) {
		case T_FILE:
			fd = openat(dirfd, de->d_name, O_RDONLY | O_NOFOLLOW);
			if (fd < 0)
				fail("open %s: %s", sub, strerror(errno));
			check_file_content(sub, fd, ch->inode);
			close(fd);
			break;
		case T_LINK: {
			char target[8192];
			ssize_t n = readlinkat(dirfd, de->d_name, target, sizeof(target));

			if (n < 0)
				fail("readlink %s: %s", sub, strerror(errno));
			if ((size_t)n != strlen(ch->inode->target) ||
			    memcmp(target, ch->inode->target, n))
				fail("readlink %s: a different target (%zd bytes, model %zu)", sub, n,
				     strlen(ch->inode->target));
			break;
		}
		case T_DIR:
			fd = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
			if (fd < 0)
				fail("open %s: %s", sub, strerror(errno));
			walk_dir(fd, sub, ch->inode);
			close(fd);
			break;
		default:
			break;
		}
	}
	if (errno)
		fail("readdir %s: %s", path, strerror(errno));
	closedir(d);
	if (nseen != dir->nchildren) {
		for (i = 0; i < dir->nchildren; i++) {
			int j;

			for (j = 0; j < nseen; j++)
				if (!strcmp(seen[j], dir->children[i].name))
					break;
			if (j == nseen)
				fail("readdir %s does not list %s", path, dir->children[i].name);
		}
	}
	for (i = 0; i < nseen; i++)
		free(seen[i]);
	free(seen);
}

static void walk(const char *why)
{
	struct stat st;
	int fd = open(".", O_RDONLY | O_DIRECTORY);

	begin("walk (%s)", why);
	if (fd < 0 || fstat(fd, &st))
		fail("open the test directory: %s", strerror(errno));
	check_stat(".", &st, root);
	walk_dir(fd, ".", root);
	close(fd);
}

/* ---------------- operations ---------------- */

static bool name_too_long(const char *name)
{
	return strlen(name) > 255;
}

/* Error a create-type operation at dir/name must give (0 if it creates). */
static int create_errno(struct inode *dir, const char *name)
{
	if (name_too_long(name))
		return ENAMETOOLONG;
	if (find_child(dir, name))
		return EEXIST;
	return 0;
}

static bool room_for_more(void)
{
	return live_inodes < MAX_INODES;
}

static void write_content(const char *path, int fd, struct inode *in)
{
	uint8_t *buf = xmalloc(in->size + 1);
	uint64_t done = 0;

	fill_content(buf, in->content, in->size);
	while (done < in->size) {
		ssize_t n = write(fd, buf + done, in->size - done);

		if (n <= 0)
			fail("write %s: %s", path, n < 0 ? strerror(errno) : "short write");
		done += n;
	}
	free(buf);
}

static uint64_t rand_file_size(void)
{
	return rand_below(4) == 0 ? 0 : rand_below(MAX_FILE);
}

static bool op_create(void)
{
	struct inode *dir = pick_dir(), *in;
	const char *name = rand_below(50) ? pick_name() : too_long_name;
	char path[8192];
	int want, fd;

	if (!room_for_more())
		return false;
	entry_path(dir, name, path, sizeof(path));
	if (!path_ok(path))
		return false;
	want = create_errno(dir, name);
	begin("create %s", path);
	fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
	expect(want, fd, "open O_CREAT|O_EXCL");
	if (fd < 0)
		return true;
	in = new_inode(T_FILE);
	in->content = next_rand();
	in->size = rand_file_size();
	add_child(dir, name, in);
	write_content(path, fd, in);
	if (close(fd))
		fail("close: %s", strerror(errno));
	return true;
}

static bool op_mkdir(void)
{
	struct inode *dir = pick_dir(), *in;
	const char *name = rand_below(50) ? pick_name() : too_long_name;
	char path[8192];
	int want;

	if (!room_for_more() || depth(dir) >= MAX_DEPTH - 1)
		return false;
	entry_path(dir, name, path, sizeof(path));
	if (!path_ok(path))
		return false;
	want = create_errno(dir, name);
	begin("mkdir %s", path);
	expect(want, mkdir(path, 0755), "mkdir");
	if (!want) {
		in = new_inode(T_DIR);
		add_child(dir, name, in);
	}
	return true;
}

static bool op_mkfifo(void)
{
	struct inode *dir = pick_dir(), *in;
	const char *name = pick_name();
	char path[8192];
	int want;

	if (!room_for_more())
		return false;
	entry_path(dir, name, path, sizeof(path));
	if (!path_ok(path))
		return false;
	want = create_errno(dir, name);
	begin("mkfifo %s", path);
	expect(want, mkfifo(path, 0644), "mkfifo");
	if (!want) {
		in = new_inode(T_FIFO);
		add_child(dir, name, in);
	}
	return true;
}

static char *rand_target(void)
{
	static const char chars[] = "abcdefghijklmnopqrstuvwxyz0123456789._-/ ";
	size_t len = rand_below(20) == 0 ? 1 + rand_below(max_symlink) : 1 + rand_below(64), i;
	char *t = xmalloc(len + 1);

	for (i = 0; i < len; i++)
		t[i] = chars[rand_below(sizeof(chars) - 1)];
	t[len] = 0;
	return t;
}

static bool op_symlink(void)
{
	struct inode *dir = pick_dir(), *in;
	const char *name = pick_name();
	char path[8192], *target;
	int want;

	if (!room_for_more())
		return false;
	entry_path(dir, name, path, sizeof(path));
	if (!path_ok(path))
		return false;
	want = create_errno(dir, name);
	target = rand_target();
	begin("symlink %s (target of %zu bytes)", path, strlen(target));
	expect(want, symlink(target, path), "symlink");
	if (want) {
		free(target);
		return true;
	}
	in = new_inode(T_LINK);
	in->target = target;
	add_child(dir, name, in);
	return true;
}

static bool op_link(void)
{
	struct inode *sdir, *ddir;
	const char *sname, *dname;
	char spath[8192], dpath[8192];
	struct dentry *src;
	int want;

	if (!pick_entry(&sdir, &sname))
		return false;
	if (rand_below(3))
		pick_target(&ddir, &dname);
	else {
		ddir = pick_dir();
		dname = pick_name();
	}
	entry_path(sdir, sname, spath, sizeof(spath));
	entry_path(ddir, dname, dpath, sizeof(dpath));
	if (!path_ok(spath) || !path_ok(dpath))
		return false;
	src = find_child(sdir, sname);
	if (name_too_long(dname))
		want = ENAMETOOLONG;
	else if (find_child(ddir, dname))
		want = EEXIST;
	else if (src->inode->type == T_DIR)
		want = EPERM;
	else
		want = 0;
	begin("link %s -> %s", spath, dpath);
	expect(want, linkat(AT_FDCWD, spath, AT_FDCWD, dpath, 0), "link");
	if (!want)
		add_child(ddir, dname, src->inode);
	return true;
}

static bool op_unlink(void)
{
	struct inode *dir;
	const char *name;
	char path[8192];
	struct dentry *d;
	int want;

	if (rand_below(8) == 0 || !pick_entry(&dir, &name)) {
		dir = pick_dir();
		name = pick_name();
	}
	entry_path(dir, name, path, sizeof(path));
	if (!path_ok(path))
		return false;
	d = find_child(dir, name);
	want = !d ? ENOENT : d->inode->type == T_DIR ? EISDIR : 0;
	begin("unlink %s", path);
	expect(want, unlink(path), "unlink");
	if (!want)
		remove_child(dir, name);
	return true;
}

static bool op_rmdir(void)
{
	struct inode *dir;
	const char *name;
	char path[8192];
	struct dentry *d;
	int want;

	if (rand_below(2) && pick_empty_dir(&dir, &name))
		;
	else if (rand_below(4) == 0 || !pick_entry_of(T_DIR, &dir, &name)) {
		if (!pick_entry(&dir, &name)) {
			dir = pick_dir();
			name = pick_name();
		}
	}
	entry_path(dir, name, path, sizeof(path));
	if (!path_ok(path))
		return false;
	d = find_child(dir, name);
	if (!d)
		want = ENOENT;
	else if (d->inode->type != T_DIR)
		want = ENOTDIR;
	else if (d->inode->nchildren)
		want = ENOTEMPTY;
	else
		want = 0;
	begin("rmdir %s", path);
	expect(want, rmdir(path), "rmdir");
	if (!want)
		remove_child(dir, name);
	return true;
}

/*
 * What renameat2 must return, in the order Linux checks: the source must
 * exist; NOREPLACE needs no target, EXCHANGE needs one; a directory cannot
 * move into itself (EINVAL) and a target cannot be an ancestor of the
 * source (ENOTEMPTY, EINVAL when exchanging); two names of one inode is a
 * successful no-op; then the types must agree and a directory replaced
 * must be empty.
 */
static int rename_errno(struct inode *odir, const char *oname, struct inode *ndir,
			const char *nname, unsigned int flags)
{
	struct dentry *s = find_child(odir, oname), *t;

	if (!s)
		return ENOENT;
	if (name_too_long(nname))
		return ENAMETOOLONG;
	t = find_child(ndir, nname);
	if ((flags & RENAME_NOREPLACE) && t)
		return EEXIST;
	if ((flags & RENAME_EXCHANGE) && !t)
		return ENOENT;
	if (s->inode->type == T_DIR && ancestor_or_self(s->inode, ndir))
		return EINVAL;
	if (t && t->inode->type == T_DIR && ancestor_or_self(t->inode, odir))
		return flags & RENAME_EXCHANGE ? EINVAL : ENOTEMPTY;
	if (t && t->inode == s->inode)
		return 0;
	if (t && !(flags & RENAME_EXCHANGE)) {
		if (t->inode->type == T_DIR && s->inode->type != T_DIR)
			return EISDIR;
		if (t->inode->type != T_DIR && s->inode->type == T_DIR)
			return ENOTDIR;
		if (t->inode->type == T_DIR && t->inode->nchildren)
			return ENOTEMPTY;
	}
	return 0;
}

static void apply_rename(struct inode *odir, const char *oname, struct inode *ndir,
			 const char *nname, unsigned int flags)
{
	struct dentry *s = find_child(odir, oname), *t = find_child(ndir, nname);
	struct inode *sin = s->inode, *tin;
	char *on = xstrdup(oname), *nn = xstrdup(nname);

	if (t && t->inode == sin)
		goto out;	/* the same inode: nothing happens */
	if (flags & RENAME_EXCHANGE) {
		tin = t->inode;
		s->inode = tin;
		t->inode = sin;
		if (tin->type == T_DIR)
			tin->parent = odir;
		if (sin->type == T_DIR)
			sin->parent = ndir;
		goto out;
	}
	if (t)
		remove_child(ndir, nn);
	/* move the name: keep the inode alive across remove and add */
	s = find_child(odir, on);
	free(s->name);
	*s = odir->children[--odir->nchildren];
	ndir->children = xrealloc(ndir->children, (ndir->nchildren + 1) * sizeof(*ndir->children));
	ndir->children[ndir->nchildren].name = xstrdup(nn);
	ndir->children[ndir->nchildren].inode = sin;
	ndir->nchildren++;
	if (sin->type == T_DIR)
		sin->parent = ndir;
out:
	free(on);
	free(nn);
}

static bool op_rename(void)
{
	static const unsigned int flag_choice[] = { 0, 0, 0, RENAME_NOREPLACE, RENAME_EXCHANGE };
	unsigned int flags = flag_choice[rand_below(5)];
	struct inode *odir, *ndir;
	const char *oname, *nname;
	char opath[8192], npath[8192];
	struct dentry *s;
	int want;
	long ret;

	if (rand_below(10) == 0 || !pick_entry(&odir, &oname)) {
		odir = pick_dir();
		oname = pick_name();
	}
	if (rand_below(4) == 0 && nall_dirs > 1) {
		/* directories into other directories */
		pick_entry_of(T_DIR, &odir, &oname);
	}
	pick_target(&ndir, &nname);
	if (rand_below(30) == 0)
		nname = too_long_name;
	entry_path(odir, oname, opath, sizeof(opath));
	entry_path(ndir, nname, npath, sizeof(npath));
	if (!path_ok(opath) || !path_ok(npath))
		return false;
	s = find_child(odir, oname);
	/* keep paths short: no deep trees moved into deep places */
	if (s && s->inode->type == T_DIR && depth(ndir) + 1 + height(s->inode) >= MAX_DEPTH)
		return false;
	if (s && (flags & RENAME_EXCHANGE)) {
		struct dentry *t = find_child(ndir, nname);

		if (t && t->inode->type == T_DIR &&
		    depth(odir) + 1 + height(t->inode) >= MAX_DEPTH)
			return false;
	}
	want = rename_errno(odir, oname, ndir, nname, flags);
	begin("rename%s %s -> %s", flags == RENAME_NOREPLACE ? "(NOREPLACE)" :
	      flags == RENAME_EXCHANGE ? "(EXCHANGE)" : "", opath, npath);
	if (flags)
		ret = syscall(SYS_renameat2, AT_FDCWD, opath, AT_FDCWD, npath, flags);
	else
		ret = rename(opath, npath);
	expect(want, ret, "rename");
	if (!want)
		apply_rename(odir, oname, ndir, nname, flags);
	return true;
}

static bool op_rewrite(void)
{
	struct inode *dir;
	const char *name;
	char path[8192];
	struct inode *in;
	int fd;

	if (!pick_entry_of(T_FILE, &dir, &name))
		return false;
	entry_path(dir, name, path, sizeof(path));
	if (!path_ok(path))
		return false;
	in = find_child(dir, name)->inode;
	begin("rewrite %s", path);
	fd = open(path, O_WRONLY | O_TRUNC);
	expect(0, fd, "open O_TRUNC");
	in->content = next_rand();
	in->size = rand_file_size();
	write_content(path, fd, in);
	if (rand_below(4) == 0 && fsync(fd))
		fail("fsync %s: %s", path, strerror(errno));
	if (close(fd))
		fail("close: %s", strerror(errno));
	return true;
}

/* Unlink a file that is still open: its data must stay readable until close. */
static bool op_unlink_open(void)
{
	struct inode *dir, *in;
	const char *name;
	char path[8192];
	struct stat st;
	int fd;

	if (!pick_entry_of(T_FILE, &dir, &name))
		return false;
	in = find_child(dir, name)->inode;
	if (in->nlink != 1)
		return false;
	entry_path(dir, name, path, sizeof(path));
	if (!path_ok(path))
		return false;
	begin("unlink-open %s", path);
	fd = open(path, O_RDONLY);
	expect(0, fd, "open");
	expect(0, unlink(path), "unlink");
	if (fstat(fd, &st))
		fail("fstat: %s", strerror(errno));
	if (st.st_nlink != 0)
		fail("%lu links after the last unlink", (unsigned long)st.st_nlink);
	check_file_content(path, fd, in);
	if (close(fd))
		fail("close: %s", strerror(errno));
	remove_child(dir, name);
	return true;
}

static const char *pick_xattr_name(void)
{
	static const char * const pool[] = {
		"user.a", "user.b", "user.c", "user.d", "user.e", "user.mime_type",
		"user.a-rather-long-attribute-name-for-testing-0123456789-abcdefghijklmnop",
	};

	return pool[rand_below(sizeof(pool) / sizeof(pool[0]))];
}

static struct xattr *find_xattr(struct inode *in, const char *name)
{
	int i;

	for (i = 0; i < in->nxattrs; i++)
		if (!strcmp(in->xattrs[i].name, name))
			return &in->xattrs[i];
	return NULL;
}

static void set_xattr(struct inode *in, const char *name, const uint8_t *v, size_t len)
{
	struct xattr *x = find_xattr(in, name);

	if (!x) {
		in->xattrs = xrealloc(in->xattrs, (in->nxattrs + 1) * sizeof(*in->xattrs));
		x = &in->xattrs[in->nxattrs++];
		x->name = xstrdup(name);
		x->value = NULL;
	}
	free(x->value);
	x->value = xmalloc(len);
	memcpy(x->value, v, len);
	x->len = len;
}

static void del_xattr(struct inode *in, const char *name)
{
	struct xattr *x = find_xattr(in, name);

	free(x->name);
	free(x->value);
	*x = in->xattrs[--in->nxattrs];
}

/* Mostly a name the entry has (when it has any), else any name. */
static const char *pick_xattr_name_of(struct inode *dir, const char *name)
{
	struct dentry *d = find_child(dir, name);

	if (d && d->inode->nxattrs && rand_below(3))
		return d->inode->xattrs[rand_below(d->inode->nxattrs)].name;
	return pick_xattr_name();
}

/* The entry for an xattr operation: usually existing, sometimes not. */
static bool xattr_target(struct inode **dir, const char **name, char *path, size_t size)
{
	if (rand_below(15) == 0 || !pick_entry(dir, name)) {
		*dir = pick_dir();
		*name = pick_name();
	}
	entry_path(*dir, *name, path, size);
	return path_ok(path);
}

static bool op_setxattr(void)
{
	static const int flag_choice[] = { 0, 0, XATTR_CREATE, XATTR_REPLACE };
	int flags = flag_choice[rand_below(4)], want;
	struct inode *dir;
	const char *name, *xname = pick_xattr_name();
	char path[8192];
	uint8_t val[4096];
	size_t len = rand_below(10) == 0 ? rand_below(max_xattr + 1) : rand_below(200), i;
	struct dentry *d;

	if (!xattr_target(&dir, &name, path, sizeof(path)))
		return false;
	for (i = 0; i < len; i++)
		val[i] = (uint8_t)next_rand();
	d = find_child(dir, name);
	if (!d)
		want = ENOENT;
	else if (d->inode->type == T_LINK || d->inode->type == T_FIFO)
		want = EPERM;
	else if ((flags & XATTR_CREATE) && find_xattr(d->inode, xname))
		want = EEXIST;
	else if ((flags & XATTR_REPLACE) && !find_xattr(d->inode, xname))
		want = ENODATA;
	else
		want = 0;
	begin("setxattr%s %s %s (%zu bytes)", flags == XATTR_CREATE ? "(CREATE)" :
	      flags == XATTR_REPLACE ? "(REPLACE)" : "", path, xname, len);
	expect(want, lsetxattr(path, xname, val, len, flags), "lsetxattr");
	if (!want)
		set_xattr(d->inode, xname, val, len);
	return true;
}

static bool op_getxattr(void)
{
	struct inode *dir;
	const char *name, *xname;
	char path[8192];
	uint8_t val[8192];
	struct dentry *d;
	struct xattr *x = NULL;
	ssize_t n;
	int want;

	if (!xattr_target(&dir, &name, path, sizeof(path)))
		return false;
	xname = pick_xattr_name_of(dir, name);
	d = find_child(dir, name);
	if (d && d->inode->type != T_LINK && d->inode->type != T_FIFO)
		x = find_xattr(d->inode, xname);
	want = !d ? ENOENT : !x ? ENODATA : 0;
	begin("getxattr %s %s", path, xname);
	n = lgetxattr(path, xname, val, sizeof(val));
	expect(want, n, "lgetxattr");
	if (want)
		return true;
	if ((size_t)n != x->len || memcmp(val, x->value, n))
		fail("lgetxattr: %zd bytes, the model has %zu (or other bytes)", n, x->len);
	/* the size query, and a buffer one byte short */
	n = lgetxattr(path, xname, NULL, 0);
	if (n != (ssize_t)x->len)
		fail("lgetxattr size query: %zd, the model has %zu", n, x->len);
	if (x->len > 1) {	/* a size of 0 would be a size query */
		n = lgetxattr(path, xname, val, x->len - 1);
		expect(ERANGE, n, "lgetxattr with a short buffer");
	}
	return true;
}

static bool op_listxattr(void)
{
	struct inode *dir;
	const char *name;
	char path[8192], list[65536];
	struct dentry *d;
	ssize_t n, want_len = 0;
	int i;

	if (!xattr_target(&dir, &name, path, sizeof(path)))
		return false;
	d = find_child(dir, name);
	begin("listxattr %s", path);
	n = llistxattr(path, list, sizeof(list));
	expect(d ? 0 : ENOENT, n, "llistxattr");
	if (!d)
		return true;
	for (i = 0; i < d->inode->nxattrs; i++)
		want_len += strlen(d->inode->xattrs[i].name) + 1;
	if (n != want_len)
		fail("llistxattr: %zd bytes of names, the model has %zd", n, want_len);
	for (i = 0; i < d->inode->nxattrs; i++) {
		const char *p;

		for (p = list; p < list + n; p += strlen(p) + 1)
			if (!strcmp(p, d->inode->xattrs[i].name))
				break;
		if (p >= list + n)
			fail("llistxattr does not list %s", d->inode->xattrs[i].name);
	}
	n = llistxattr(path, NULL, 0);
	if (n != want_len)
		fail("llistxattr size query: %zd, the model has %zd", n, want_len);
	if (want_len > 1) {
		n = llistxattr(path, list, want_len - 1);
		expect(ERANGE, n, "llistxattr with a short buffer");
	}
	return true;
}

static bool op_removexattr(void)
{
	struct inode *dir;
	const char *name, *xname;
	char path[8192];
	struct dentry *d;
	int want;

	if (!xattr_target(&dir, &name, path, sizeof(path)))
		return false;
	xname = pick_xattr_name_of(dir, name);
	d = find_child(dir, name);
	if (!d)
		want = ENOENT;
	else if (d->inode->type == T_LINK || d->inode->type == T_FIFO)
		want = EPERM;
	else if (!find_xattr(d->inode, xname))
		want = ENODATA;
	else
		want = 0;
	begin("removexattr %s %s", path, xname);
	expect(want, lremovexattr(path, xname), "lremovexattr");
	if (!want)
		del_xattr(d->inode, xname);
	return true;
}

static bool op_lstat(void)
{
	struct inode *dir;
	const char *name;
	char path[8192];
	struct dentry *d;
	struct stat st;
	int want;

	if (rand_below(5) == 0 || !pick_entry(&dir, &name)) {
		dir = pick_dir();
		name = rand_below(10) ? pick_name() : too_long_name;
	}
	entry_path(dir, name, path, sizeof(path));
	if (!path_ok(path))
		return false;
	d = find_child(dir, name);
	want = name_too_long(name) ? ENAMETOOLONG : d ? 0 : ENOENT;
	begin("lstat %s", path);
	expect(want, lstat(path, &st), "lstat");
	if (!want)
		check_stat(path, &st, d->inode);
	return true;
}

/* A path through a non-directory (ENOTDIR) or a missing directory (ENOENT). */
static bool op_bad_parent(void)
{
	struct inode *dir;
	const char *name;
	char path[8192], sub[8300];
	struct dentry *d;
	struct stat st;
	int want;

	if (rand_below(2) || !pick_entry(&dir, &name)) {
		dir = pick_dir();
		name = pick_name();
	}
	entry_path(dir, name, path, sizeof(path));
	if (!path_ok(path))
		return false;
	d = find_child(dir, name);
	if (d && (d->inode->type == T_DIR || d->inode->type == T_LINK))
		return false;	/* a good parent, or one the kernel would follow */
	want = d ? ENOTDIR : ENOENT;
	snprintf(sub, sizeof(sub), "%s/x", path);
	begin("bad parent %s", sub);
	switch (rand_below(4)) {
	case 0:
		expect(want, mkdir(sub, 0755), "mkdir");
		break;
	case 1:
		expect(want, lstat(sub, &st), "lstat");
		break;
	case 2:
		expect(want, open(sub, O_CREAT | O_EXCL | O_WRONLY, 0644), "open O_CREAT");
		break;
	default:
		expect(want, unlink(sub), "unlink");
		break;
	}
	return true;
}

static bool op_readdir(void)
{
	struct inode *dir = pick_dir();
	char path[8192];
	DIR *d;
	struct dirent *de;
	int n = 0;

	dir_path(dir, path, sizeof(path));
	if (!path_ok(path))
		return false;
	begin("readdir %s", path);
	d = opendir(path);
	if (!d)
		fail("opendir: %s", strerror(errno));
	while ((errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!find_child(dir, de->d_name))
			fail("lists %s, which the model does not have", de->d_name);
		n++;
	}
	if (errno)
		fail("readdir: %s", strerror(errno));
	closedir(d);
	if (n != dir->nchildren)
		fail("lists %d entries, the model has %d", n, dir->nchildren);
	return true;
}

static bool op_fsync(void)
{
	struct inode *dir = pick_dir();
	char path[8192];
	int fd;

	dir_path(dir, path, sizeof(path));
	if (!path_ok(path))
		return false;
	begin("fsync %s", path);
	fd = open(path, O_RDONLY | O_DIRECTORY);
	expect(0, fd, "open");
	expect(0, fsync(fd), "fsync");
	close(fd);
	return true;
}

struct op {
	const char *name;
	bool (*fn)(void);
	unsigned int weight;
};

static struct op ops[] = {
	{ "create", op_create, 12 },
	{ "mkdir", op_mkdir, 8 },
	{ "mkfifo", op_mkfifo, 2 },
	{ "symlink", op_symlink, 5 },
	{ "link", op_link, 7 },
	{ "unlink", op_unlink, 9 },
	{ "rmdir", op_rmdir, 6 },
	{ "rename", op_rename, 16 },
	{ "rewrite", op_rewrite, 4 },
	{ "unlink-open", op_unlink_open, 2 },
	{ "setxattr", op_setxattr, 8 },
	{ "getxattr", op_getxattr, 5 },
	{ "listxattr", op_listxattr, 3 },
	{ "removexattr", op_removexattr, 4 },
	{ "lstat", op_lstat, 4 },
	{ "bad-parent", op_bad_parent, 2 },
	{ "readdir", op_readdir, 2 },
	{ "fsync", op_fsync, 1 },
};

static void run_one(void)
{
	unsigned int total = 0, r, i;
	int tries;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		total += ops[i].weight;
	flatten();
	for (tries = 0; tries < 100; tries++) {
		r = rand_below(total);
		for (i = 0; r >= ops[i].weight; i++)
			r -= ops[i].weight;
		/* a full tree shrinks */
		if (!room_for_more() && ops[i].fn != op_unlink && ops[i].fn != op_rmdir &&
		    rand_below(2))
			continue;
		if (ops[i].fn())
			return;
	}
}

/* ---------------- the saved model ---------------- */

static void put_hex(FILE *f, const void *p, size_t len)
{
	const uint8_t *b = p;
	size_t i;

	if (!len)
		fputc('-', f);
	for (i = 0; i < len; i++)
		fprintf(f, "%02x", b[i]);
}

static size_t get_hex(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;

	if (!strcmp(s, "-"))
		return 0;
	while (s[0] && s[1] && n < max) {
		unsigned int v;

		if (sscanf(s, "%2x", &v) != 1)
			die("bad hex in the model");
		out[n++] = v;
		s += 2;
	}
	return n;
}

static void save_model(void)
{
	char tmp[4096];
	uint64_t n = log_count < LOG_SIZE ? log_count : LOG_SIZE, k;
	FILE *f;
	int i, j;

	snprintf(tmp, sizeof(tmp), "%s.tmp", model_path);
	f = fopen(tmp, "w");
	if (!f)
		die("cannot write %s: %s", tmp, strerror(errno));
	fprintf(f, "%s\nS %" PRIu64 " %" PRIu64 " %d\n", MODEL_MAGIC, seed, op_nr, next_id);
	for (i = 0; i < ninodes; i++) {
		const struct inode *in = inodes[i];

		if (!in->live)
			continue;
		fprintf(f, "I %d %c %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", in->id,
			type_char[in->type], in->content, in->size, in->st_ino);
		if (in->type == T_LINK) {
			fprintf(f, "L %d ", in->id);
			put_hex(f, in->target, strlen(in->target));
			fputc('\n', f);
		}
		for (j = 0; j < in->nxattrs; j++) {
			fprintf(f, "X %d ", in->id);
			put_hex(f, in->xattrs[j].name, strlen(in->xattrs[j].name));
			fputc(' ', f);
			put_hex(f, in->xattrs[j].value, in->xattrs[j].len);
			fputc('\n', f);
		}
	}
	for (i = 0; i < ninodes; i++) {
		const struct inode *in = inodes[i];

		if (!in->live || in->type != T_DIR)
			continue;
		for (j = 0; j < in->nchildren; j++) {
			fprintf(f, "E %d ", in->id);
			put_hex(f, in->children[j].name, strlen(in->children[j].name));
			fprintf(f, " %d\n", in->children[j].inode->id);
		}
	}
	for (k = log_count - n; k < log_count; k++)
		fprintf(f, "G %s\n", oplog[k % LOG_SIZE]);
	if (fclose(f))
		die("cannot write %s: %s", tmp, strerror(errno));
	if (rename(tmp, model_path))
		die("cannot rename %s: %s", tmp, strerror(errno));
}

static struct inode *inode_by_id(int id)
{
	int i;

	for (i = 0; i < ninodes; i++)
		if (inodes[i]->id == id)
			return inodes[i];
	die("model: no inode %d", id);
}

static void load_model(void)
{
	FILE *f = fopen(model_path, "r");
	static char line[40000];
	uint8_t *bin = xmalloc(20000);

	if (!f || !fgets(line, sizeof(line), f) || strncmp(line, MODEL_MAGIC, strlen(MODEL_MAGIC)))
		die("cannot read the model %s", model_path);
	while (fgets(line, sizeof(line), f)) {
		char a[20000], b[20000], t;
		uint64_t u1, u2, u3;
		int id, id2;
		size_t n;

		line[strcspn(line, "\n")] = 0;
		switch (line[0]) {
		case 'S':
			if (sscanf(line, "S %" SCNu64 " %" SCNu64 " %d", &u1, &op_nr, &next_id) != 3)
				die("bad model line: %s", line);
			seed = u1;
			break;
		case 'I': {
			struct inode *in;
			int saved = next_id;

			if (sscanf(line, "I %d %c %" SCNu64 " %" SCNu64 " %" SCNu64, &id, &t, &u1, &u2,
				   &u3) != 5 || !strchr(type_char, t))
				die("bad model line: %s", line);
			in = new_inode(strchr(type_char, t) - type_char);
			next_id = saved;
			in->id = id;
			in->content = u1;
			in->size = u2;
			in->st_ino = u3;
			if (id == 0)
				root = in;
			break;
		}
		case 'L':
			if (sscanf(line, "L %d %19999s", &id, a) != 2)
				die("bad model line: %s", line);
			n = get_hex(a, bin, 8192);
			inode_by_id(id)->target = xmalloc(n + 1);
			memcpy(inode_by_id(id)->target, bin, n);
			break;
		case 'X': {
			char nm[512];

			if (sscanf(line, "X %d %19999s %19999s", &id, a, b) != 3)
				die("bad model line: %s", line);
			n = get_hex(a, (uint8_t *)nm, sizeof(nm) - 1);
			nm[n] = 0;
			n = get_hex(b, bin, 20000);
			set_xattr(inode_by_id(id), nm, bin, n);
			break;
		}
		case 'E': {
			char nm[512];

			if (sscanf(line, "E %d %19999s %d", &id, a, &id2) != 3)
				die("bad model line: %s", line);
			n = get_hex(a, (uint8_t *)nm, sizeof(nm) - 1);
			nm[n] = 0;
			add_child(inode_by_id(id), nm, inode_by_id(id2));
			break;
		}
		case 'G':
			snprintf(oplog[log_count++ % LOG_SIZE], LOG_LINE, "%.*s", LOG_LINE - 1, line + 2);
			break;
		default:
			die("bad model line: %s", line);
		}
	}
	fclose(f);
	free(bin);
	if (!root)
		die("the model %s has no root", model_path);
}

/* ---------------- main ---------------- */

static void usage(void)
{
	fprintf(stderr,
		"usage: dirops [options] DIR\n"
		"  -S, --seed N         random seed (default 1)\n"
		"  -N, --ops N          operations to run (default 1000)\n"
		"  -m, --model PATH     save the model there at the end\n"
		"  -r, --resume         load the model from -m, verify DIR against it, go on\n"
		"  -w, --walk-every N   compare the whole tree every N operations (default 100)\n"
		"      --max-xattr N    largest xattr value (default 4000)\n"
		"      --max-symlink N  longest symlink target (default 4095)\n"
		"  -v, --verbose        print every operation\n");
	exit(2);
}

int main(int argc, char **argv)
{
	enum { OPT_MAX_XATTR = 256, OPT_MAX_SYMLINK };
	static const struct option longopts[] = {
		{ "seed", required_argument, NULL, 'S' },
		{ "ops", required_argument, NULL, 'N' },
		{ "model", required_argument, NULL, 'm' },
		{ "resume", no_argument, NULL, 'r' },
		{ "walk-every", required_argument, NULL, 'w' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "max-xattr", required_argument, NULL, OPT_MAX_XATTR },
		{ "max-symlink", required_argument, NULL, OPT_MAX_SYMLINK },
		{ NULL, 0, NULL, 0 }
	};
	uint64_t nops = 1000, walk_every = 100, first, i;
	bool resume = false;
	const char *dir;
	int c;

	while ((c = getopt_long(argc, argv, "S:N:m:rw:v", longopts, NULL)) != -1) {
		switch (c) {
		case 'S': seed = strtoull(optarg, NULL, 0); break;
		case 'N': nops = strtoull(optarg, NULL, 0); break;
		case 'm': model_path = optarg; break;
		case 'r': resume = true; break;
		case 'w': walk_every = strtoull(optarg, NULL, 0); break;
		case 'v': verbose = true; break;
		case OPT_MAX_XATTR: max_xattr = strtoull(optarg, NULL, 0); break;
		case OPT_MAX_SYMLINK: max_symlink = strtoull(optarg, NULL, 0); break;
		default: usage();
		}
	}
	if (optind + 1 != argc || (resume && !model_path) || max_xattr > 4095 ||
	    !max_symlink || max_symlink > 4095)
		usage();
	dir = argv[optind];
	if (model_path && model_path[0] != '/') {
		/* we change into DIR: keep the model where the caller meant */
		static char abs_model[8192];
		char cwd[4096];

		if (!getcwd(cwd, sizeof(cwd)))
			die("getcwd: %s", strerror(errno));
		snprintf(abs_model, sizeof(abs_model), "%s/%s", cwd, model_path);
		model_path = abs_model;
	}
	memset(long_name, 'L', 255);
	memset(too_long_name, 'T', 256);

	if (resume) {
		load_model();
		if (chdir(dir))
			die("cannot enter %s: %s", dir, strerror(errno));
		walk("verifying the tree against the saved model");
	} else {
		if (mkdir(dir, 0755) && errno != EEXIST)
			die("cannot create %s: %s", dir, strerror(errno));
		if (chdir(dir))
			die("cannot enter %s: %s", dir, strerror(errno));
		{
			DIR *d = opendir(".");
			struct dirent *de;

			while (d && (de = readdir(d)))
				if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
					die("%s is not empty", dir);
			if (d)
				closedir(d);
		}
		root = new_inode(T_DIR);
	}
	rng = seed * 0x2545f4914f6cdd1dULL + op_nr;
	first = op_nr;
	for (i = 0; i < nops; i++) {
		op_nr = first + i + 1;
		run_one();
		if (walk_every && op_nr % walk_every == 0)
			walk("periodic");
	}
	walk("final");
	if (model_path)
		save_model();
	printf("dirops: %s: %" PRIu64 " operations (%" PRIu64 " in total), %d inodes, all good\n",
	       dir, nops, op_nr, live_inodes);
	return 0;
}
