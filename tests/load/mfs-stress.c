/*
 * mfs-stress: random file operations from several processes on a mounted
 * filesystem, each process in its own subtree, checked against a model,
 * with the latency of every call recorded (driven by tests/load/run.sh).
 *
 *   mfs-stress run [-p PROCS] [-t SECONDS] [-n OPS] [-S SEED] [-f MAXSIZE]
 *                  [-l LATDIR] [-m MODEL] [-s STOPFILE] [-H HANGSECS] DIR
 *   mfs-stress verify -m MODEL DIR
 *   mfs-stress report [-w WINDOWS] LATDIR
 *
 * run: process N works in DIR/pN: create, write, truncate, rename, link,
 * unlink, fsync/fdatasync, setxattr, removexattr, mkdir, rmdir and read
 * (the contents compared with the model), each result and errno compared
 * with what the model says. The operations of a process are a function
 * of the seed and the process number (as long as the filesystem agrees
 * with the model); -t, -n and the stop file only say when to stop. At the
 * end each process reads back all its files and xattrs; -m saves the model
 * (every file's path, inode, size, sha256, whether its last change was
 * fsynced, xattrs). -l writes one record per call to LATDIR/lat.N (start
 * time, operation, latency, failed) and prints max and p99 per operation.
 * An operation that takes longer than HANGSECS (600) is a hang: the
 * stuck processes are named, with their kernel wait channel, and killed.
 *
 * verify: after a remount, the tree under DIR is exactly the model: no
 * file missing or extra, sizes, sha256, xattrs, hard links (one inode,
 * the right link count).
 *
 * report: from LATDIR's records, per window of WINDOWS (lines "START END
 * RESULT NAME...", times in seconds since the epoch) the number of calls,
 * the slowest (its operation), the p99 and the calls that failed; then
 * the same per operation over the whole run.
 *
 * Exit status: 0 agreement, 1 a mismatch or failure, 2 usage or setup
 * error, 3 a hang.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <openssl/evp.h>

#define NDIRS		6	/* d0 (never removed) .. d5 in each process's subtree */
#define NSLOTS		16	/* file names f0..f15 in each directory */
#define MAX_INODES	(NDIRS * NSLOTS)
#define NXATTRS		4	/* user.k0 .. user.k3 */
#define XATTR_MAX	32
#define MAX_PROCS	64
#define IO_CHUNK	(1 << 20)

enum op {
	OP_CREATE, OP_WRITE, OP_TRUNCATE, OP_RENAME, OP_LINK, OP_UNLINK,
	OP_FSYNC, OP_SETXATTR, OP_REMOVEXATTR, OP_MKDIR, OP_RMDIR, OP_READ,
	NR_OPS
};

static const struct {
	const char *name;
	int weight;
} ops[NR_OPS] = {
	[OP_CREATE]	 = { "create",	    8 },
	[OP_WRITE]	 = { "write",	   22 },
	[OP_TRUNCATE]	 = { "truncate",    5 },
	[OP_RENAME]	 = { "rename",	    8 },
	[OP_LINK]	 = { "link",	    4 },
	[OP_UNLINK]	 = { "unlink",	    6 },
	[OP_FSYNC]	 = { "fsync",	    8 },
	[OP_SETXATTR]	 = { "setxattr",    5 },
	[OP_REMOVEXATTR] = { "removexattr", 3 },
	[OP_MKDIR]	 = { "mkdir",	    2 },
	[OP_RMDIR]	 = { "rmdir",	    2 },
	[OP_READ]	 = { "read",	   12 },
};

/* One call, as written to LATDIR/lat.N. */
struct lat_rec {
	uint64_t start_ns;	/* CLOCK_REALTIME */
	uint64_t lat_ns;
	uint8_t op;
	uint8_t failed;
	uint8_t pad[6];
};

/* What each process is doing, shared with the parent (hang detection). */
struct proc_status {
	volatile uint64_t op_start_ns;	/* 0: between operations */
	volatile uint64_t nr_ops;
	volatile int op;
	volatile pid_t pid;
	char path[160];
};

struct inode {
	bool live;
	int nlink;
	uint8_t *data;
	size_t size, cap;
	bool synced;		/* unchanged since its last fsync returned */
	bool xset[NXATTRS];
	uint8_t xlen[NXATTRS];
	uint8_t xval[NXATTRS][XATTR_MAX];
};

/* the state of one process (each is its own) */
static int me;
static char root[PATH_MAX - 64];	/* DIR/pN; room for /dN/fN after it */
static uint64_t rng;
static int names[NDIRS][NSLOTS];	/* inode index or -1 */
static bool dir_live[NDIRS];
static struct inode inodes[MAX_INODES];
static size_t max_size = 512 << 10;
static uint64_t nr_ops_done, bytes_verified;
static FILE *lat_file;
static struct proc_status *status;
static const char *stop_file;
static uint8_t *iobuf;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* xorshift64*: deterministic from the seed */
static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ull;
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static void fill_random(uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i += 8) {
		uint64_t v = rnd();

		memcpy(p + i, &v, len - i < 8 ? len - i : 8);
	}
}

static void sha256_hex(const uint8_t *p, size_t len, char out[65])
{
	unsigned char md[32];
	unsigned int n = 0;
	int i;

	EVP_Digest(p, len, md, &n, EVP_sha256(), NULL);
	for (i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", md[i]);
}

static void file_path(char *buf, int d, int s)
{
	snprintf(buf, PATH_MAX, "%s/d%d/f%d", root, d, s);
}

static void dir_path(char *buf, int d)
{
	snprintf(buf, PATH_MAX, "%s/d%d", root, d);
}

static const char *err_name(int e)
{
	return e ? strerror(e) : "success";
}

/* A result the model did not expect: name it; the process stops. */
static bool mismatch(enum op op, const char *path, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mfs-stress: process %d, operation %" PRIu64 " (%s %s): ",
		me, nr_ops_done, ops[op].name, path);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return false;
}

static bool expect(enum op op, const char *path, int got, int want)
{
	if (got == want)
		return true;
	return mismatch(op, path, "expected %s, got %s", err_name(want), err_name(got));
}

static void timing_start(enum op op, const char *path)
{
	size_t len = strlen(path);

	/* the tail names the file when the path does not fit */
	if (len >= sizeof(status->path))
		path += len - (sizeof(status->path) - 1);
	status->op = op;
	strcpy(status->path, path);
	status->op_start_ns = now_ns();
}

static void timing_end(enum op op, bool failed)
{
	struct lat_rec r = { .op = op, .failed = failed };

	r.start_ns = status->op_start_ns;
	r.lat_ns = now_ns() - r.start_ns;
	status->op_start_ns = 0;
	status->nr_ops++;
	if (lat_file)
		fwrite(&r, sizeof(r), 1, lat_file);
}

/* ---------------- the model ---------------- */

static int new_inode(void)
{
	int i;

	for (i = 0; i < MAX_INODES; i++) {
		if (!inodes[i].live) {
			memset(&inodes[i], 0, sizeof(inodes[i]));
			inodes[i].live = true;
			inodes[i].nlink = 1;
			return i;
		}
	}
	return -1;	/* cannot happen: there are as many inodes as names */
}

static void drop_name(int d, int s)
{
	struct inode *ino = &inodes[names[d][s]];

	names[d][s] = -1;
	if (--ino->nlink == 0) {
		free(ino->data);
		ino->data = NULL;
		ino->live = false;
	}
}

static void resize(struct inode *ino, size_t size)
{
	if (size > ino->cap) {
		ino->data = realloc(ino->data, size);
		if (!ino->data) {
			perror("realloc");
			exit(2);
		}
		ino->cap = size;
	}
	if (size > ino->size)
		memset(ino->data + ino->size, 0, size - ino->size);
	ino->size = size;
}

static bool dir_empty(int d)
{
	int s;

	for (s = 0; s < NSLOTS; s++)
		if (names[d][s] >= 0)
			return false;
	return true;
}

/* A random name in use (false: none). */
static bool pick_used(int *d, int *s)
{
	int cand[NDIRS * NSLOTS], n = 0, i, j, c;

	for (i = 0; i < NDIRS; i++)
		for (j = 0; j < NSLOTS; j++)
			if (names[i][j] >= 0)
				cand[n++] = i * NSLOTS + j;
	if (!n)
		return false;
	c = cand[below(n)];
	*d = c / NSLOTS;
	*s = c % NSLOTS;
	return true;
}

/* A random free name in a directory that exists (false: none). */
static bool pick_free(int *d, int *s)
{
	int cand[NDIRS * NSLOTS], n = 0, i, j, c;

	for (i = 0; i < NDIRS; i++)
		for (j = 0; j < NSLOTS && dir_live[i]; j++)
			if (names[i][j] < 0)
				cand[n++] = i * NSLOTS + j;
	if (!n)
		return false;
	c = cand[below(n)];
	*d = c / NSLOTS;
	*s = c % NSLOTS;
	return true;
}

/* ---------------- operations: each true when the filesystem agrees ---------------- */

static int write_all(int fd, const uint8_t *p, size_t len, off_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0)
			return errno;
		if (n == 0)
			return EIO;
		p += n;
		len -= n;
		off += n;
	}
	return 0;
}

/* Read the whole file at path (up to limit bytes) into iobuf-sized pieces,
 * comparing with want/size; *err gets the errno. */
static bool read_compare(enum op op, const char *path, const struct inode *ino, int *err)
{
	size_t off = 0;
	int fd = open(path, O_RDONLY);

	*err = 0;
	if (fd < 0) {
		*err = errno;
		return mismatch(op, path, "open: %s", strerror(errno));
	}
	for (;;) {
		ssize_t n = pread(fd, iobuf, IO_CHUNK, off);

		if (n < 0) {
			*err = errno;
			close(fd);
			return mismatch(op, path, "read at %zu: %s", off, strerror(errno));
		}
		if (n == 0)
			break;
		if (off + n > ino->size) {
			close(fd);
			*err = EIO;
			return mismatch(op, path, "%zu bytes or more, the model has %zu",
					off + n, ino->size);
		}
		if (memcmp(iobuf, ino->data + off, n)) {
			ssize_t i = 0;

			while (iobuf[i] == ino->data[off + i])
				i++;
			close(fd);
			*err = EIO;
			return mismatch(op, path, "contents differ at byte %zu (size %zu)",
					off + i, ino->size);
		}
		off += n;
	}
	if (close(fd)) {
		*err = errno;
		return mismatch(op, path, "close: %s", strerror(errno));
	}
	if (off != ino->size) {
		*err = EIO;
		return mismatch(op, path, "%zu bytes read, the model has %zu", off, ino->size);
	}
	bytes_verified += off;
	return true;
}

static bool do_create(void)
{
	char path[PATH_MAX];
	size_t len = below(4) ? below(65536) : 0;
	int d, s, ino, fd, err = 0;

	if (!pick_free(&d, &s))
		return true;
	file_path(path, d, s);
	ino = new_inode();
	resize(&inodes[ino], len);
	fill_random(inodes[ino].data, len);
	timing_start(OP_CREATE, path);
	fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
	if (fd < 0)
		err = errno;
	else {
		err = write_all(fd, inodes[ino].data, len, 0);
		if (close(fd) && !err)
			err = errno;
	}
	timing_end(OP_CREATE, err != 0);
	names[d][s] = ino;
	return expect(OP_CREATE, path, err, 0);
}

static bool do_write(void)
{
	char path[PATH_MAX];
	struct inode *ino;
	size_t len, off, end;
	int d, s, fd, err = 0;

	if (!pick_used(&d, &s))
		return true;
	ino = &inodes[names[d][s]];
	file_path(path, d, s);
	len = 1 + below(below(8) ? 65536 : 262144);
	if (len > max_size)
		len = max_size;
	if (below(4) == 0)
		off = ino->size;	/* append */
	else
		off = below(ino->size + 8192);
	if (off + len > max_size)
		off = max_size - len;
	end = off + len;
	if (end > ino->size)
		resize(ino, end);
	fill_random(ino->data + off, len);
	ino->synced = false;
	timing_start(OP_WRITE, path);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		err = errno;
	else {
		err = write_all(fd, ino->data + off, len, off);
		if (close(fd) && !err)
			err = errno;
	}
	timing_end(OP_WRITE, err != 0);
	return expect(OP_WRITE, path, err, 0);
}

static bool do_truncate(void)
{
	char path[PATH_MAX];
	struct inode *ino;
	size_t size;
	int d, s, err;

	if (!pick_used(&d, &s))
		return true;
	ino = &inodes[names[d][s]];
	file_path(path, d, s);
	size = below(ino->size + 65536);
	if (size > max_size)
		size = max_size;
	timing_start(OP_TRUNCATE, path);
	err = truncate(path, size) ? errno : 0;
	timing_end(OP_TRUNCATE, err != 0);
	if (size < ino->size)
		ino->size = size;
	else
		resize(ino, size);
	ino->synced = false;
	return expect(OP_TRUNCATE, path, err, 0);
}

static bool do_rename(void)
{
	char from[PATH_MAX], to[PATH_MAX];
	int d, s, td, ts, err;

	if (!pick_used(&d, &s))
		return true;
	do
		td = below(NDIRS);
	while (!dir_live[td]);
	ts = below(NSLOTS);
	file_path(from, d, s);
	file_path(to, td, ts);
	timing_start(OP_RENAME, from);
	err = rename(from, to) ? errno : 0;
	timing_end(OP_RENAME, err != 0);
	/* onto itself or another name of the same inode: nothing changes */
	if (names[td][ts] != names[d][s]) {
		if (names[td][ts] >= 0)
			drop_name(td, ts);
		names[td][ts] = names[d][s];
		names[d][s] = -1;
	}
	return expect(OP_RENAME, from, err, 0);
}

static bool do_link(void)
{
	char from[PATH_MAX], to[PATH_MAX];
	int d, s, td, ts, err;

	if (!pick_used(&d, &s) || !pick_free(&td, &ts))
		return true;
	file_path(from, d, s);
	file_path(to, td, ts);
	timing_start(OP_LINK, from);
	err = link(from, to) ? errno : 0;
	timing_end(OP_LINK, err != 0);
	names[td][ts] = names[d][s];
	inodes[names[d][s]].nlink++;
	return expect(OP_LINK, from, err, 0);
}

static bool do_unlink(void)
{
	char path[PATH_MAX];
	int d, s, err;

	if (!pick_used(&d, &s))
		return true;
	file_path(path, d, s);
	timing_start(OP_UNLINK, path);
	err = unlink(path) ? errno : 0;
	timing_end(OP_UNLINK, err != 0);
	drop_name(d, s);
	return expect(OP_UNLINK, path, err, 0);
}

/* fsync (or fdatasync) of a file; one time in four also of its directory */
static bool do_fsync(void)
{
	char path[PATH_MAX], dir[PATH_MAX];
	bool data_only = below(3) == 0, and_dir = below(4) == 0;
	int d, s, fd, err = 0;

	if (!pick_used(&d, &s))
		return true;
	file_path(path, d, s);
	dir_path(dir, d);
	timing_start(OP_FSYNC, path);
	fd = open(path, O_RDWR);
	if (fd < 0)
		err = errno;
	else {
		if (data_only ? fdatasync(fd) : fsync(fd))
			err = errno;
		if (close(fd) && !err)
			err = errno;
	}
	if (!err && and_dir) {
		fd = open(dir, O_RDONLY | O_DIRECTORY);
		if (fd < 0 || fsync(fd))
			err = errno;
		if (fd >= 0)
			close(fd);
	}
	timing_end(OP_FSYNC, err != 0);
	if (!err)
		inodes[names[d][s]].synced = true;
	return expect(OP_FSYNC, path, err, 0);
}

static bool do_setxattr(void)
{
	char path[PATH_MAX], key[16];
	struct inode *ino;
	int d, s, k, len, err;

	if (!pick_used(&d, &s))
		return true;
	ino = &inodes[names[d][s]];
	file_path(path, d, s);
	k = below(NXATTRS);
	len = 1 + below(XATTR_MAX);
	snprintf(key, sizeof(key), "user.k%d", k);
	fill_random(ino->xval[k], len);
	ino->xlen[k] = len;
	ino->xset[k] = true;
	timing_start(OP_SETXATTR, path);
	err = setxattr(path, key, ino->xval[k], len, 0) ? errno : 0;
	timing_end(OP_SETXATTR, err != 0);
	return expect(OP_SETXATTR, path, err, 0);
}

static bool do_removexattr(void)
{
	char path[PATH_MAX], key[16];
	struct inode *ino;
	int d, s, k, err, want;

	if (!pick_used(&d, &s))
		return true;
	ino = &inodes[names[d][s]];
	file_path(path, d, s);
	k = below(NXATTRS);
	snprintf(key, sizeof(key), "user.k%d", k);
	want = ino->xset[k] ? 0 : ENODATA;
	timing_start(OP_REMOVEXATTR, path);
	err = removexattr(path, key) ? errno : 0;
	timing_end(OP_REMOVEXATTR, err != 0 && err != want);
	ino->xset[k] = false;
	return expect(OP_REMOVEXATTR, path, err, want);
}

static bool do_mkdir(void)
{
	char path[PATH_MAX];
	int d = 1 + below(NDIRS - 1), err, want = dir_live[d] ? EEXIST : 0;

	dir_path(path, d);
	timing_start(OP_MKDIR, path);
	err = mkdir(path, 0755) ? errno : 0;
	timing_end(OP_MKDIR, err != want);
	dir_live[d] = true;
	return expect(OP_MKDIR, path, err, want);
}

static bool do_rmdir(void)
{
	char path[PATH_MAX];
	int d = 1 + below(NDIRS - 1), err, want;

	want = !dir_live[d] ? ENOENT : !dir_empty(d) ? ENOTEMPTY : 0;
	dir_path(path, d);
	timing_start(OP_RMDIR, path);
	err = rmdir(path) ? errno : 0;
	timing_end(OP_RMDIR, err != want);
	if (!want)
		dir_live[d] = false;
	return expect(OP_RMDIR, path, err, want);
}

static bool do_read(void)
{
	char path[PATH_MAX];
	bool ok;
	int d, s, err;

	if (!pick_used(&d, &s))
		return true;
	file_path(path, d, s);
	timing_start(OP_READ, path);
	ok = read_compare(OP_READ, path, &inodes[names[d][s]], &err);
	timing_end(OP_READ, !ok);
	return ok;
}

static bool (*const handlers[NR_OPS])(void) = {
	[OP_CREATE] = do_create, [OP_WRITE] = do_write, [OP_TRUNCATE] = do_truncate,
	[OP_RENAME] = do_rename, [OP_LINK] = do_link, [OP_UNLINK] = do_unlink,
	[OP_FSYNC] = do_fsync, [OP_SETXATTR] = do_setxattr,
	[OP_REMOVEXATTR] = do_removexattr, [OP_MKDIR] = do_mkdir,
	[OP_RMDIR] = do_rmdir, [OP_READ] = do_read,
};

static enum op pick_op(void)
{
	int total = 0, i, r;

	for (i = 0; i < NR_OPS; i++)
		total += ops[i].weight;
	r = below(total);
	for (i = 0; r >= ops[i].weight; i++)
		r -= ops[i].weight;
	return i;
}

/* Every file and xattr of this process read back and compared. */
static bool verify_own(void)
{
	char path[PATH_MAX], key[16];
	uint8_t val[XATTR_MAX + 1];
	int d, s, k, err;

	for (d = 0; d < NDIRS; d++) {
		for (s = 0; s < NSLOTS; s++) {
			struct inode *ino;

			if (names[d][s] < 0)
				continue;
			ino = &inodes[names[d][s]];
			file_path(path, d, s);
			if (!read_compare(OP_READ, path, ino, &err))
				return false;
			for (k = 0; k < NXATTRS; k++) {
				ssize_t n;

				snprintf(key, sizeof(key), "user.k%d", k);
				n = getxattr(path, key, val, sizeof(val));
				if (!ino->xset[k] && !(n < 0 && errno == ENODATA))
					return mismatch(OP_READ, path, "%s: expected none, got %zd (%s)",
							key, n, n < 0 ? strerror(errno) : "a value");
				if (ino->xset[k] && (n != ino->xlen[k] || memcmp(val, ino->xval[k], n)))
					return mismatch(OP_READ, path, "%s differs", key);
			}
		}
	}
	return true;
}

/* The model of this process, lines of the model file (verify). */
static void save_model(FILE *f, const char *top)
{
	const char *rel = root + strlen(top) + 1;
	char hex[65];
	int d, s, k;

	fprintf(f, "D %s\n", rel);
	for (d = 0; d < NDIRS; d++)
		if (dir_live[d])
			fprintf(f, "D %s/d%d\n", rel, d);
	for (d = 0; d < NDIRS; d++) {
		for (s = 0; s < NSLOTS; s++) {
			struct inode *ino;
			bool any = false;

			if (names[d][s] < 0)
				continue;
			ino = &inodes[names[d][s]];
			sha256_hex(ino->data, ino->size, hex);
			fprintf(f, "F %s/d%d/f%d p%d.%d %zu %s %d ", rel, d, s, me, names[d][s],
				ino->size, hex, ino->synced);
			for (k = 0; k < NXATTRS; k++) {
				int i;

				if (!ino->xset[k])
					continue;
				fprintf(f, "%sk%d=", any ? "," : "", k);
				for (i = 0; i < ino->xlen[k]; i++)
					fprintf(f, "%02x", ino->xval[k][i]);
				any = true;
			}
			fprintf(f, "%s\n", any ? "" : "-");
		}
	}
}

struct run_opts {
	int procs;
	long seconds;
	uint64_t max_ops;
	uint64_t seed;
	long hang_secs;
	const char *dir, *lat_dir, *model;
};

/* One process's run; its exit status. */
static int child(const struct run_opts *o, int n)
{
	uint64_t end = o->seconds ? now_ns() + o->seconds * 1000000000ull : 0;
	char path[PATH_MAX];
	bool ok = true;

	me = n;
	rng = (o->seed + 1) * 0x9e3779b97f4a7c15ull ^ ((uint64_t)n + 1) * 0xbf58476d1ce4e5b9ull;
	if (!rng)
		rng = 1;
	iobuf = malloc(IO_CHUNK);
	if (!iobuf)
		return 2;
	if ((size_t)snprintf(root, sizeof(root), "%s/p%d", o->dir, n) >= sizeof(root)) {
		fprintf(stderr, "mfs-stress: %s: path too long\n", o->dir);
		return 2;
	}
	memset(names, -1, sizeof(names));
	dir_path(path, 0);
	if (mkdir(root, 0755) || mkdir(path, 0755)) {
		fprintf(stderr, "mfs-stress: mkdir %s: %s\n", path, strerror(errno));
		return 2;
	}
	dir_live[0] = true;
	if (o->lat_dir) {
		snprintf(path, sizeof(path), "%s/lat.%d", o->lat_dir, n);
		lat_file = fopen(path, "w");
		if (!lat_file) {
			perror(path);
			return 2;
		}
	}
	while (ok) {
		if (o->max_ops && nr_ops_done >= o->max_ops)
			break;
		if (end && now_ns() >= end)
			break;
		if (stop_file && nr_ops_done % 16 == 0 && access(stop_file, F_OK) == 0)
			break;
		ok = handlers[pick_op()]();
		nr_ops_done++;
	}
	if (ok)
		ok = verify_own();
	if (lat_file && fclose(lat_file)) {
		perror("latency file");
		ok = false;
	}
	if (o->model) {
		FILE *f;

		snprintf(path, sizeof(path), "%s.%d", o->model, n);
		f = fopen(path, "w");
		if (!f || (save_model(f, o->dir), fclose(f))) {
			perror(path);
			return 2;
		}
	}
	printf("# process %d: %" PRIu64 " operations, %" PRIu64 " bytes verified%s\n",
	       n, nr_ops_done, bytes_verified, ok ? "" : ", MISMATCH");
	return ok ? 0 : 1;
}

static void report_hang(struct proc_status *st, int procs, uint64_t now)
{
	int i;

	for (i = 0; i < procs; i++) {
		char path[64], wchan[128] = "?";
		uint64_t t = st[i].op_start_ns;
		FILE *f;

		/* stuck for a second at least: not one that has just started */
		if (!t || t > now || now - t < 1000000000ull)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/wchan", st[i].pid);
		f = fopen(path, "r");
		if (f) {
			if (!fgets(wchan, sizeof(wchan), f))
				snprintf(wchan, sizeof(wchan), "?");
			fclose(f);
		}
		fprintf(stderr, "mfs-stress: HANG: process %d (pid %d) in %s %s for %" PRIu64
			" s, wchan %s, after %" PRIu64 " operations\n", i, st[i].pid,
			ops[st[i].op].name, st[i].path, (now - t) / 1000000000,
			wchan, st[i].nr_ops);
	}
}

static int load_records(const char *dir, struct lat_rec **out, size_t *count);
static void print_op_table(const struct lat_rec *r, size_t n);

static int cmd_run(struct run_opts *o)
{
	struct proc_status *st;
	pid_t pids[MAX_PROCS];
	uint64_t start = now_ns(), ops_total = 0;
	int i, left, rc = 0, hung = 0;

	st = mmap(NULL, sizeof(*st) * o->procs, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (st == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	memset(st, 0, sizeof(*st) * o->procs);
	fflush(stdout);
	for (i = 0; i < o->procs; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			perror("fork");
			return 2;
		}
		if (pids[i] == 0) {
			status = &st[i];
			status->pid = getpid();
			exit(child(o, i));
		}
	}
	/* wait, watching for an operation that takes too long */
	for (left = o->procs; left > 0;) {
		int wst;
		pid_t p = waitpid(-1, &wst, WNOHANG);

		if (p > 0) {
			left--;
			if (!WIFEXITED(wst) || WEXITSTATUS(wst) != 0) {
				fprintf(stderr, "mfs-stress: process pid %d %s %d\n", p,
					WIFEXITED(wst) ? "exited" : "killed by signal",
					WIFEXITED(wst) ? WEXITSTATUS(wst) : WTERMSIG(wst));
				if (rc == 0)
					rc = WIFEXITED(wst) && WEXITSTATUS(wst) == 2 ? 2 : 1;
			}
			continue;
		}
		if (!hung) {
			uint64_t now = now_ns();

			for (i = 0; i < o->procs; i++) {
				uint64_t t = st[i].op_start_ns;

				if (t && now > t && now - t > o->hang_secs * 1000000000ull)
					hung = 1;
			}
			if (hung) {
				report_hang(st, o->procs, now);
				for (i = 0; i < o->procs; i++)
					kill(pids[i], SIGKILL);
			}
		}
		usleep(200000);
	}
	for (i = 0; i < o->procs; i++)
		ops_total += st[i].nr_ops;
	if (o->model) {
		char part[PATH_MAX];
		FILE *f = fopen(o->model, "w");

		for (i = 0; f && i < o->procs; i++) {
			FILE *p;
			int c;

			snprintf(part, sizeof(part), "%s.%d", o->model, i);
			p = fopen(part, "r");
			if (!p)
				continue;
			while ((c = getc(p)) != EOF)
				putc(c, f);
			fclose(p);
			unlink(part);
		}
		if (!f || fclose(f)) {
			perror(o->model);
			rc = 2;
		}
	}
	if (o->lat_dir) {
		struct lat_rec *r;
		size_t n;

		if (load_records(o->lat_dir, &r, &n) == 0) {
			print_op_table(r, n);
			free(r);
		}
	}
	printf("# mfs-stress: %d processes, %" PRIu64 " operations in %.1f s, seed %" PRIu64
	       ", %s\n", o->procs, ops_total, (now_ns() - start) / 1e9, o->seed,
	       hung ? "HANG" : rc ? "FAILED" : "ok");
	return hung ? 3 : rc;
}

/* ---------------- verify ---------------- */

struct entry {
	char *path;
	char type;		/* 'D' or 'F' */
	char *inode;		/* F: the model's inode tag */
	size_t size;
	char hash[65];
	int synced;
	char *xattrs;
	bool seen;
	ino_t st_ino;
};

static struct entry *entries;
static size_t nr_entries;
static const char *verify_top;
static long verify_errors;

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->path, ((const struct entry *)b)->path);
}

static struct entry *find_entry(const char *path)
{
	struct entry key = { .path = (char *)path };

	return bsearch(&key, entries, nr_entries, sizeof(*entries), by_path);
}

static void verify_error(const char *path, const char *fmt, ...)
{
	va_list ap;

	if (verify_errors++ < 20) {
		fprintf(stderr, "mfs-stress verify: %s: ", path);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
}

static int load_model(const char *file)
{
	FILE *f = fopen(file, "r");
	char line[1024];
	size_t cap = 0;

	if (!f) {
		perror(file);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char type, path[512], inode[64], hash[65], xattrs[512];
		struct entry *e;
		size_t size = 0;
		int synced = 0, n;

		n = sscanf(line, "%c %511s %63s %zu %64s %d %511s", &type, path, inode, &size,
			   hash, &synced, xattrs);
		if (!((type == 'D' && n >= 2) || (type == 'F' && n == 7))) {
			fprintf(stderr, "mfs-stress: bad model line: %s", line);
			fclose(f);
			return -1;
		}
		if (nr_entries == cap) {
			cap = cap ? 2 * cap : 256;
			entries = realloc(entries, cap * sizeof(*entries));
			if (!entries)
				return -1;
		}
		e = &entries[nr_entries++];
		memset(e, 0, sizeof(*e));
		e->type = type;
		e->path = strdup(path);
		if (type == 'F') {
			e->inode = strdup(inode);
			e->size = size;
			memcpy(e->hash, hash, sizeof(e->hash));
			e->synced = synced;
			e->xattrs = strdup(xattrs);
		}
	}
	fclose(f);
	qsort(entries, nr_entries, sizeof(*entries), by_path);
	return 0;
}

/* The user.* xattrs of path as the model writes them ("-" for none). */
static void xattrs_of(const char *path, char *out, size_t len)
{
	char names_buf[4096], *name;
	ssize_t n = listxattr(path, names_buf, sizeof(names_buf));
	size_t used = 0;
	int k;

	out[0] = 0;
	if (n < 0) {
		snprintf(out, len, "(listxattr: %s)", strerror(errno));
		return;
	}
	/* the model lists k0..k3 in order: do the same */
	for (k = 0; k < NXATTRS; k++) {
		char key[16];

		snprintf(key, sizeof(key), "user.k%d", k);
		for (name = names_buf; name < names_buf + n; name += strlen(name) + 1) {
			uint8_t val[XATTR_MAX + 1];
			ssize_t vl, i;

			if (strcmp(name, key))
				continue;
			vl = getxattr(path, key, val, sizeof(val));
			used += snprintf(out + used, len - used, "%sk%d=", used ? "," : "", k);
			for (i = 0; i < vl && used < len; i++)
				used += snprintf(out + used, len - used, "%02x", val[i]);
		}
	}
	for (name = names_buf; name < names_buf + n; name += strlen(name) + 1)
		if (!strncmp(name, "user.", 5) && (strncmp(name, "user.k", 6) || strlen(name) != 7))
			used += snprintf(out + used, len - used, ",%s", name);
	if (!used)
		snprintf(out, len, "-");
}

static bool hash_file(const char *path, size_t *size, char hex[65])
{
	unsigned char md[32];
	unsigned int mdlen = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int fd = open(path, O_RDONLY), i;
	bool ok = true;

	*size = 0;
	if (fd < 0 || !ctx) {
		if (fd >= 0)
			close(fd);
		EVP_MD_CTX_free(ctx);
		return false;
	}
	EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	for (;;) {
		ssize_t n = read(fd, iobuf, IO_CHUNK);

		if (n < 0) {
			ok = false;
			break;
		}
		if (n == 0)
			break;
		EVP_DigestUpdate(ctx, iobuf, n);
		*size += n;
	}
	close(fd);
	EVP_DigestFinal_ex(ctx, md, &mdlen);
	EVP_MD_CTX_free(ctx);
	for (i = 0; i < 32; i++)
		sprintf(hex + 2 * i, "%02x", md[i]);
	return ok;
}

static int walk_one(const char *fpath, const struct stat *sb, int flag, struct FTW *ftw)
{
	const char *rel = fpath + strlen(verify_top);
	struct entry *e;

	(void)flag;
	if (ftw->level == 0)
		return 0;
	rel += *rel == '/';
	e = find_entry(rel);
	if (!e) {
		verify_error(rel, "not in the model");
		return 0;
	}
	e->seen = true;
	if (e->type == 'D' && !S_ISDIR(sb->st_mode))
		verify_error(rel, "not a directory");
	if (e->type == 'F' && !S_ISREG(sb->st_mode))
		verify_error(rel, "not a regular file");
	e->st_ino = sb->st_ino;
	return 0;
}

static int cmd_verify(const char *model, const char *dir)
{
	size_t i, j, files = 0, synced = 0;
	uint64_t bytes = 0;

	iobuf = malloc(IO_CHUNK);
	if (!iobuf || load_model(model))
		return 2;
	verify_top = dir;
	if (nftw(dir, walk_one, 32, FTW_PHYS)) {
		perror(dir);
		return 2;
	}
	for (i = 0; i < nr_entries; i++) {
		struct entry *e = &entries[i];
		char path[PATH_MAX], hex[65], xa[1024];
		struct stat sb;
		size_t size, links = 0;

		if (!e->seen) {
			verify_error(e->path, "missing");
			continue;
		}
		if (e->type != 'F')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->path);
		if (!hash_file(path, &size, hex)) {
			verify_error(e->path, "cannot be read: %s", strerror(errno));
			continue;
		}
		files++;
		synced += e->synced;
		bytes += size;
		if (size != e->size || strcmp(hex, e->hash))
			verify_error(e->path, "%zu bytes, sha256 %.16s..., the model has %zu bytes, %.16s...%s",
				     size, hex, e->size, e->hash, e->synced ? " (fsynced)" : "");
		xattrs_of(path, xa, sizeof(xa));
		if (strcmp(xa, e->xattrs))
			verify_error(e->path, "xattrs %s, the model has %s", xa, e->xattrs);
		/* hard links: the names of one model inode are one inode */
		for (j = 0; j < nr_entries; j++) {
			if (entries[j].type != 'F' || strcmp(entries[j].inode, e->inode))
				continue;
			links++;
			if (entries[j].seen && entries[j].st_ino != e->st_ino)
				verify_error(e->path, "not the same inode as %s", entries[j].path);
		}
		if (lstat(path, &sb) == 0 && (size_t)sb.st_nlink != links)
			verify_error(e->path, "link count %lu, the model has %zu",
				     (unsigned long)sb.st_nlink, links);
	}
	printf("# mfs-stress verify: %zu files (%zu unchanged since their fsync), %" PRIu64
	       " bytes verified, %ld errors\n", files, synced, bytes, verify_errors);
	return verify_errors ? 1 : 0;
}

/* ---------------- report ---------------- */

static int load_records(const char *dir, struct lat_rec **out, size_t *count)
{
	struct lat_rec *r = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d) {
		perror(dir);
		return -1;
	}
	while ((de = readdir(d))) {
		char path[PATH_MAX];
		struct stat sb;
		FILE *f;
		size_t want;

		if (strncmp(de->d_name, "lat.", 4))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		f = fopen(path, "r");
		if (!f || fstat(fileno(f), &sb)) {
			perror(path);
			closedir(d);
			return -1;
		}
		want = sb.st_size / sizeof(*r);
		if (n + want > cap) {
			cap = n + want + 1024;
			r = realloc(r, cap * sizeof(*r));
			if (!r) {
				fclose(f);
				closedir(d);
				return -1;
			}
		}
		n += fread(r + n, sizeof(*r), want, f);
		fclose(f);
	}
	closedir(d);
	*out = r;
	*count = n;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct summary {
	size_t calls, failed;
	uint64_t max_ns, p99_ns;
	int max_op;
};

/* Calls of op (or any, op < 0) starting in [from, to). */
static struct summary summarize(const struct lat_rec *r, size_t n, uint64_t from, uint64_t to,
				int op)
{
	struct summary s = { .max_op = -1 };
	uint64_t *v = malloc((n + 1) * sizeof(*v));
	size_t i;

	if (!v)
		return s;
	for (i = 0; i < n; i++) {
		if (r[i].start_ns < from || r[i].start_ns >= to || (op >= 0 && r[i].op != op))
			continue;
		v[s.calls++] = r[i].lat_ns;
		s.failed += r[i].failed;
		if (r[i].lat_ns >= s.max_ns) {
			s.max_ns = r[i].lat_ns;
			s.max_op = r[i].op;
		}
	}
	if (s.calls) {
		qsort(v, s.calls, sizeof(*v), cmp_u64);
		s.p99_ns = v[(s.calls * 99 + 99) / 100 - 1];
	}
	free(v);
	return s;
}

static void print_op_table(const struct lat_rec *r, size_t n)
{
	int op;

	printf("%-12s %9s %7s %10s %10s\n", "operation", "calls", "failed", "p99 ms", "max ms");
	for (op = 0; op < NR_OPS; op++) {
		struct summary s = summarize(r, n, 0, UINT64_MAX, op);

		printf("%-12s %9zu %7zu %10.2f %10.2f\n", ops[op].name, s.calls, s.failed,
		       s.p99_ns / 1e6, s.max_ns / 1e6);
	}
}

static int cmd_report(const char *lat_dir, const char *windows)
{
	struct lat_rec *r;
	char line[512];
	size_t n;
	FILE *f;

	if (load_records(lat_dir, &r, &n))
		return 2;
	if (windows) {
		f = fopen(windows, "r");
		if (!f) {
			perror(windows);
			return 2;
		}
		printf("%-36s %8s %-9s %8s %10s %-12s %9s %6s\n", "admin operation", "time s",
		       "result", "calls", "max ms", "(slowest)", "p99 ms", "errors");
		while (fgets(line, sizeof(line), f)) {
			double from, to;
			char result[32], name[256];
			struct summary s;

			if (sscanf(line, "%lf %lf %31s %255[^\n]", &from, &to, result, name) != 4)
				continue;
			s = summarize(r, n, (uint64_t)(from * 1e9), (uint64_t)(to * 1e9), -1);
			printf("%-36s %8.1f %-9s %8zu %10.2f %-12s %9.2f %6zu\n", name, to - from,
			       result, s.calls, s.max_ns / 1e6,
			       s.max_op >= 0 ? ops[s.max_op].name : "-", s.p99_ns / 1e6, s.failed);
		}
		fclose(f);
		printf("\n");
	}
	print_op_table(r, n);
	free(r);
	return 0;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: mfs-stress run [-p PROCS] [-t SECONDS] [-n OPS] [-S SEED] [-f MAXSIZE]\n"
		"                      [-l LATDIR] [-m MODEL] [-s STOPFILE] [-H HANGSECS] DIR\n"
		"       mfs-stress verify -m MODEL DIR\n"
		"       mfs-stress report [-w WINDOWS] LATDIR\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct run_opts o = { .procs = 4, .hang_secs = 600 };
	const char *windows = NULL, *cmd;
	int c;

	if (argc < 2)
		return usage();
	cmd = argv[1];
	argc--;
	argv++;
	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt(argc, argv, "p:t:n:S:f:l:m:s:H:w:")) != -1) {
		switch (c) {
		case 'p': o.procs = atoi(optarg); break;
		case 't': o.seconds = atol(optarg); break;
		case 'n': o.max_ops = strtoull(optarg, NULL, 0); break;
		case 'S': o.seed = strtoull(optarg, NULL, 0); break;
		case 'f': max_size = strtoull(optarg, NULL, 0); break;
		case 'l': o.lat_dir = optarg; break;
		case 'm': o.model = optarg; break;
		case 's': stop_file = optarg; break;
		case 'H': o.hang_secs = atol(optarg); break;
		case 'w': windows = optarg; break;
		default: return usage();
		}
	}
	if (optind != argc - 1)
		return usage();
	if (!strcmp(cmd, "run")) {
		o.dir = argv[optind];
		if (o.procs < 1 || o.procs > MAX_PROCS || max_size < 1 || o.hang_secs < 1 ||
		    (!o.seconds && !o.max_ops && !stop_file))
			return usage();
		return cmd_run(&o);
	}
	if (!strcmp(cmd, "verify") && o.model)
		return cmd_verify(o.model, argv[optind]);
	if (!strcmp(cmd, "report"))
		return cmd_report(argv[optind], windows);
	return usage();
}
