/*
 * fsx: random operations on one file of a mounted filesystem, checked
 * against an in-memory model of its contents (after the classic fsx).
 *
 *   fsx [-S SEED] [-N OPS] [-m MODEL] [--resume] [options] FILE
 *
 * Writes (any offset, 1 B .. 1 MiB, some far past EOF), reads, mapped reads
 * and writes, unaligned O_DIRECT reads and writes, truncates up and down,
 * fallocate (plain, KEEP_SIZE, PUNCH_HOLE|KEEP_SIZE, ZERO_RANGE), fsync,
 * cache drops and SEEK_DATA/SEEK_HOLE, each compared with the model. With
 * -m the model is saved when the run ends; a later run with --resume loads
 * it and first verifies the whole file against it (e.g. after the caller
 * unmounted and mounted again), then goes on with more operations. Bytes
 * written by operation N hold (N % 255) + 1 at even file offsets, so a
 * wrong byte names the write it came from.
 *
 * Exit status: 0 all operations agreed with the model, 1 a mismatch (the
 * failing operation and the operations before it are printed), 2 usage or
 * setup error.
 */
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
#include <linux/falloc.h>
#include <sys/mman.h>
#include <sys/stat.h>

#define MODEL_MAGIC	0x4c45444f4d585346ULL	/* "FSXMODEL" */
#define LOG_SIZE	64
#define MAX_IO		(1024 * 1024)

enum op_type {
	OP_READ, OP_WRITE, OP_MAPREAD, OP_MAPWRITE, OP_TRUNCATE, OP_PUNCH,
	OP_FALLOC_KEEP, OP_FALLOC, OP_ZERO_RANGE, OP_FSYNC, OP_SEEK_DATA, OP_SEEK_HOLE,
	OP_DROP_CACHE, OP_REOPEN, OP_DIRECT_READ, OP_DIRECT_WRITE, OP_NR
};

static const char * const op_names[OP_NR] = {
	"read", "write", "mapread", "mapwrite", "truncate", "punch_hole",
	"falloc_keep", "falloc", "zero_range", "fsync", "seek_data", "seek_hole",
	"drop_cache", "reopen", "dio_read", "dio_write",
};

/* Relative frequency of each operation. */
static unsigned int op_weight[OP_NR] = {
	[OP_READ] = 20, [OP_WRITE] = 26, [OP_MAPREAD] = 4, [OP_MAPWRITE] = 4,
	[OP_TRUNCATE] = 8, [OP_PUNCH] = 6, [OP_FALLOC_KEEP] = 4, [OP_FALLOC] = 4,
	[OP_ZERO_RANGE] = 4,
	[OP_FSYNC] = 3, [OP_SEEK_DATA] = 5, [OP_SEEK_HOLE] = 5,
	[OP_DROP_CACHE] = 4, [OP_REOPEN] = 2, [OP_DIRECT_READ] = 4, [OP_DIRECT_WRITE] = 6,
};

struct log_entry {
	uint64_t nr;
	uint32_t op;
	uint32_t flags;
	uint64_t off;
	uint64_t len;
	uint64_t size_before;
	uint64_t size_after;
	int64_t result;
};

/* The saved model: this header, then the file's bytes. */
struct model_header {
	uint64_t magic;
	uint64_t size;
	uint64_t maxlen;
	uint64_t seed;
	uint64_t ops_done;
	uint64_t log_count;
	struct log_entry log[LOG_SIZE];
};

static const char *path;
static const char *model_path;
static int fd = -1;
static int dfd = -1;		/* the same file opened with O_DIRECT, or -1 */
static uint8_t *good;		/* the model: what the file must hold */
static uint8_t *buf;		/* scratch for reads and writes */
static uint64_t file_size;
static uint64_t maxlen = 16 * 1024 * 1024;
static uint64_t op_nr;		/* number of the operation running */
static uint64_t rng;
static uint64_t seed = 1;
static bool verbose;
static long page_size;

static struct log_entry oplog[LOG_SIZE];
static uint64_t log_count;

static uint64_t next_rand(void)
{
	uint64_t x = (rng += 0x9e3779b97f4a7c15ULL);

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Uniform in [lo, hi]. */
static uint64_t rand_range(uint64_t lo, uint64_t hi)
{
	return lo + next_rand() % (hi - lo + 1);
}

static struct log_entry *log_op(enum op_type op, uint64_t off, uint64_t len)
{
	struct log_entry *e = &oplog[log_count++ % LOG_SIZE];

	memset(e, 0, sizeof(*e));
	e->nr = op_nr;
	e->op = op;
	e->off = off;
	e->len = len;
	e->size_before = file_size;
	return e;
}

static void print_log(void)
{
	uint64_t n = log_count < LOG_SIZE ? log_count : LOG_SIZE;
	uint64_t i;

	fprintf(stderr, "last %" PRIu64 " operations (nr op off len size-before size-after result):\n", n);
	for (i = log_count - n; i < log_count; i++) {
		const struct log_entry *e = &oplog[i % LOG_SIZE];

		fprintf(stderr, "  %6" PRIu64 " %-11s 0x%-8" PRIx64 " 0x%-7" PRIx64
			" 0x%-8" PRIx64 " 0x%-8" PRIx64 " %" PRId64 "%s\n",
			e->nr, e->op < OP_NR ? op_names[e->op] : "?", e->off, e->len,
			e->size_before, e->size_after, e->result,
			e->flags == 1 ? " (past EOF)" : e->flags == 2 ? " (keep size)" : "");
	}
}

static void __attribute__((noreturn, format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fsx: %s: operation %" PRIu64 " failed (seed %" PRIu64 "): ",
		path, op_nr, seed);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	print_log();
	exit(1);
}

static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fsx: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(2);
}

/* Show where got and the model differ, and which write each side came from. */
static void report_diff(uint64_t off, const uint8_t *got, uint64_t len)
{
	uint64_t i, first = len, bad = 0;

	for (i = 0; i < len; i++) {
		if (got[i] != good[off + i]) {
			if (first == len)
				first = i;
			bad++;
		}
	}
	if (first == len)
		return;
	fprintf(stderr, "fsx: %" PRIu64 " bad bytes in 0x%" PRIx64 "..0x%" PRIx64
		", first at 0x%" PRIx64 "\n", bad, off, off + len, off + first);
	fprintf(stderr, "  offset      file model\n");
	for (i = first; i < len && i < first + 16; i++) {
		uint64_t pos = off + i;
		uint64_t even = pos & ~1ULL;

		fprintf(stderr, "  0x%08" PRIx64 "  %02x   %02x%s", pos, got[i], good[pos],
			got[i] != good[pos] ? "  <-" : "");
		if (pos == even && got[i] != good[pos])
			fprintf(stderr, "  (file byte from op %%255 = %d, model from %d)",
				got[i] ? got[i] - 1 : -1, good[pos] ? good[pos] - 1 : -1);
		fprintf(stderr, "\n");
	}
}

/* ---------------- I/O helpers ---------------- */

static void open_file(bool create)
{
	fd = open(path, O_RDWR | (create ? O_CREAT | O_TRUNC : 0), 0644);
	if (fd < 0)
		die("cannot open %s: %s", path, strerror(errno));
	if (op_weight[OP_DIRECT_READ] || op_weight[OP_DIRECT_WRITE]) {
		/* unaligned direct I/O reaches the filesystem as it is */
		dfd = open(path, O_RDWR | O_DIRECT);
		if (dfd < 0)
			op_weight[OP_DIRECT_READ] = op_weight[OP_DIRECT_WRITE] = 0;
	}
}

static void close_file(void)
{
	if (dfd >= 0 && close(dfd))
		fail("close (O_DIRECT): %s", strerror(errno));
	dfd = -1;
	if (close(fd))
		fail("close: %s", strerror(errno));
	fd = -1;
}

static ssize_t full_pread_fd(int rfd, void *p, size_t len, off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(rfd, (char *)p + done, len - done, off + done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		done += n;
	}
	return done;
}

static ssize_t full_pwrite_fd(int wfd, const void *p, size_t len, off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(wfd, (const char *)p + done, len - done, off + done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += n;
	}
	return done;
}

static ssize_t full_pwrite(const void *p, size_t len, off_t off)
{
	return full_pwrite_fd(fd, p, len, off);
}

static void check_size(const char *when)
{
	struct stat st;

	if (fstat(fd, &st))
		fail("fstat %s: %s", when, strerror(errno));
	if ((uint64_t)st.st_size != file_size)
		fail("size %s is 0x%llx, the model has 0x%" PRIx64, when,
		     (unsigned long long)st.st_size, file_size);
}

/* Compare [off, off+len) of the file, read through rfd, with the model. */
static void check_range_fd(int rfd, uint64_t off, uint64_t len, const char *what)
{
	uint64_t want = off >= file_size ? 0 : (off + len > file_size ? file_size - off : len);
	ssize_t n = full_pread_fd(rfd, buf, len, off);

	if (n < 0)
		fail("%s: pread 0x%" PRIx64 "+0x%" PRIx64 ": %s", what, off, len, strerror(errno));
	if ((uint64_t)n != want)
		fail("%s: pread 0x%" PRIx64 "+0x%" PRIx64 " returned 0x%zx bytes, expected 0x%" PRIx64,
		     what, off, len, (size_t)n, want);
	if (memcmp(buf, good + off, want)) {
		report_diff(off, buf, want);
		fail("%s: data mismatch in 0x%" PRIx64 "+0x%" PRIx64, what, off, want);
	}
}

static void check_range(uint64_t off, uint64_t len, const char *what)
{
	check_range_fd(fd, off, len, what);
}

static void check_whole_file(const char *what)
{
	uint64_t off;

	check_size(what);
	for (off = 0; off < file_size; off += MAX_IO)
		check_range(off, file_size - off < MAX_IO ? file_size - off : MAX_IO, what);
	/* nothing past EOF */
	check_range(file_size, 4096, what);
}

/* Write back and drop the page cache, so the next reads come from the filesystem. */
static void drop_cache(void)
{
	if (fsync(fd))
		fail("fsync: %s", strerror(errno));
	if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED))
		fail("fadvise DONTNEED: %s", strerror(errno));
}

/* ---------------- operation sizes and offsets ---------------- */

/* 1 B .. 1 MiB, mostly small. */
static uint64_t rand_len(void)
{
	unsigned int r = next_rand() % 100;
	uint64_t len;

	if (r < 40)
		len = rand_range(1, 4200);
	else if (r < 75)
		len = rand_range(1, 65536 + 100);
	else
		len = rand_range(1, MAX_IO);
	return len < maxlen / 2 ? len : maxlen / 2;
}

/* fallocate ranges: like writes, now and then up to 16 MiB (many extents). */
static uint64_t rand_range_len(void)
{
	uint64_t big = maxlen / 2 < 16 * MAX_IO ? maxlen / 2 : 16 * MAX_IO;

	if (next_rand() % 8 == 0)
		return rand_range(1, big);
	return rand_len();
}

/* Somewhere in or just after the file; sometimes sector aligned. */
static uint64_t rand_off(uint64_t len)
{
	uint64_t limit = file_size + 8192 < maxlen ? file_size + 8192 : maxlen;
	uint64_t off;

	if (len >= maxlen)
		return 0;
	if (limit + len > maxlen)
		limit = maxlen - len;
	off = rand_range(0, limit);
	if (next_rand() % 4 == 0)
		off &= ~4095ULL;
	return off;
}

static void fill_pattern(uint8_t *p, uint64_t off, uint64_t len)
{
	uint8_t tag = (uint8_t)(op_nr % 255 + 1);
	uint64_t i;

	for (i = 0; i < len; i++) {
		uint64_t pos = off + i;

		p[i] = pos % 2 ? (uint8_t)((pos >> 1) ^ (pos >> 9) ^ op_nr) : tag;
	}
}

static void model_set_size(uint64_t size)
{
	if (size < file_size)
		memset(good + size, 0, file_size - size);
	file_size = size;
}

/* ---------------- operations ---------------- */

static void do_read(void)
{
	uint64_t len = rand_len(), off;
	struct log_entry *e;

	if (next_rand() % 20 == 0)
		off = file_size + rand_range(0, 65536);	/* at or past EOF */
	else
		off = file_size ? rand_range(0, file_size - 1) : 0;
	if (off + len > maxlen) {
		if (off >= maxlen)
			off = maxlen - 1;
		len = maxlen - off;
	}
	e = log_op(OP_READ, off, len);
	check_range(off, len, "read");
	e->size_after = file_size;
}

static void do_write(void)
{
	uint64_t len = rand_len(), off;
	struct log_entry *e;
	bool past = false;

	if (len > maxlen / 2)
		len = maxlen / 2;
	if (next_rand() % 10 == 0 && file_size + len < maxlen) {
		/* far past EOF: leaves a hole */
		off = rand_range(file_size, maxlen - len);
		past = true;
	} else {
		off = rand_off(len);
	}
	e = log_op(OP_WRITE, off, len);
	e->flags = past;
	fill_pattern(buf, off, len);
	if (full_pwrite(buf, len, off) < 0)
		fail("pwrite 0x%" PRIx64 "+0x%" PRIx64 ": %s", off, len, strerror(errno));
	memcpy(good + off, buf, len);
	if (off + len > file_size)
		file_size = off + len;
	e->size_after = file_size;
}

static void do_mapread(void)
{
	uint64_t len, off, pg, maplen;
	struct log_entry *e;
	uint8_t *p;

	if (!file_size)
		return;
	off = rand_range(0, file_size - 1);
	len = rand_len();
	if (off + len > file_size)
		len = file_size - off;
	e = log_op(OP_MAPREAD, off, len);
	pg = off & ~(uint64_t)(page_size - 1);
	maplen = off + len - pg;
	p = mmap(NULL, maplen, PROT_READ, MAP_SHARED, fd, pg);
	if (p == MAP_FAILED)
		fail("mmap read 0x%" PRIx64 "+0x%" PRIx64 ": %s", pg, maplen, strerror(errno));
	if (memcmp(p + (off - pg), good + off, len)) {
		report_diff(off, p + (off - pg), len);
		munmap(p, maplen);
		fail("mapread: data mismatch in 0x%" PRIx64 "+0x%" PRIx64, off, len);
	}
	munmap(p, maplen);
	e->size_after = file_size;
}

static void do_mapwrite(void)
{
	uint64_t len = rand_len(), off = rand_off(len), pg, maplen;
	struct log_entry *e;
	uint8_t *p;

	e = log_op(OP_MAPWRITE, off, len);
	/* a mapping cannot extend the file: grow it first */
	if (off + len > file_size) {
		if (ftruncate(fd, off + len))
			fail("ftruncate before mapwrite to 0x%" PRIx64 ": %s", off + len, strerror(errno));
		model_set_size(off + len);
	}
	pg = off & ~(uint64_t)(page_size - 1);
	maplen = off + len - pg;
	p = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, pg);
	if (p == MAP_FAILED)
		fail("mmap write 0x%" PRIx64 "+0x%" PRIx64 ": %s", pg, maplen, strerror(errno));
	fill_pattern(p + (off - pg), off, len);
	memcpy(good + off, p + (off - pg), len);
	if (next_rand() % 2 && msync(p, maplen, MS_SYNC))
		fail("msync: %s", strerror(errno));
	munmap(p, maplen);
	e->size_after = file_size;
}

static void do_truncate(void)
{
	uint64_t size;
	struct log_entry *e;
	unsigned int r = next_rand() % 10;

	if (r < 4 && file_size)
		size = rand_range(0, file_size);			/* shrink */
	else if (r < 8)
		size = rand_range(file_size, file_size + (maxlen - file_size) / 4);	/* grow */
	else
		size = rand_range(0, maxlen);
	if (next_rand() % 4 == 0)
		size &= ~4095ULL;
	e = log_op(OP_TRUNCATE, size, 0);
	if (ftruncate(fd, size))
		fail("ftruncate to 0x%" PRIx64 ": %s", size, strerror(errno));
	model_set_size(size);
	e->size_after = file_size;
}

static bool fallocate_ok(int mode, uint64_t off, uint64_t len)
{
	if (fallocate(fd, mode, off, len) == 0)
		return true;
	if (errno == EOPNOTSUPP) {
		if (verbose)
			fprintf(stderr, "fsx: fallocate mode %#x not supported, no longer used\n", mode);
		return false;
	}
	fail("fallocate mode %#x 0x%" PRIx64 "+0x%" PRIx64 ": %s", mode, off, len, strerror(errno));
}

static void do_punch(void)
{
	uint64_t len = rand_range_len(), off;
	struct log_entry *e;

	if (!file_size)
		return;
	off = rand_range(0, file_size - 1);
	if (next_rand() % 3 == 0) {
		off &= ~4095ULL;
		len = (len + 4095) & ~4095ULL;
	}
	if (off + len > maxlen)
		len = maxlen - off;
	e = log_op(OP_PUNCH, off, len);
	if (!fallocate_ok(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len)) {
		op_weight[OP_PUNCH] = 0;
		return;
	}
	if (off < file_size)
		memset(good + off, 0, (off + len > file_size ? file_size : off + len) - off);
	e->size_after = file_size;
}

static void do_falloc(bool keep_size)
{
	uint64_t len = rand_range_len(), off = rand_off(len);
	struct log_entry *e;

	if (next_rand() % 5 == 0 && file_size + len < maxlen)
		off = rand_range(file_size, maxlen - len);	/* past EOF */
	e = log_op(keep_size ? OP_FALLOC_KEEP : OP_FALLOC, off, len);
	if (!fallocate_ok(keep_size ? FALLOC_FL_KEEP_SIZE : 0, off, len)) {
		op_weight[keep_size ? OP_FALLOC_KEEP : OP_FALLOC] = 0;
		return;
	}
	if (!keep_size && off + len > file_size)
		file_size = off + len;	/* the new bytes read as zeros */
	e->size_after = file_size;
}

/* FALLOC_FL_ZERO_RANGE, with or without KEEP_SIZE. */
static void do_zero_range(void)
{
	uint64_t len = rand_range_len(), off = rand_off(len), end;
	bool keep = next_rand() % 2;
	struct log_entry *e;

	if (next_rand() % 3 == 0) {
		off &= ~4095ULL;
		len = (len + 4095) & ~4095ULL;
		if (off + len > maxlen)
			len = maxlen - off;
	}
	e = log_op(OP_ZERO_RANGE, off, len);
	e->flags = keep ? 2 : 0;
	if (!fallocate_ok(FALLOC_FL_ZERO_RANGE | (keep ? FALLOC_FL_KEEP_SIZE : 0), off, len)) {
		op_weight[OP_ZERO_RANGE] = 0;
		return;
	}
	end = off + len;
	if (!keep && end > file_size)
		file_size = end;
	if (off < file_size)
		memset(good + off, 0, (end > file_size ? file_size : end) - off);
	e->size_after = file_size;
}

static void do_fsync(void)
{
	struct log_entry *e = log_op(OP_FSYNC, 0, 0);
	bool data = next_rand() % 2;

	if (data ? fdatasync(fd) : fsync(fd))
		fail("%s: %s", data ? "fdatasync" : "fsync", strerror(errno));
	e->size_after = file_size;
}

static bool all_zero(uint64_t from, uint64_t to)
{
	uint64_t i;

	for (i = from; i < to; i++)
		if (good[i])
			return false;
	return true;
}

/*
 * What every correct filesystem must answer, however coarsely it tracks
 * holes: past EOF both fail with ENXIO; SEEK_DATA lands in [off, size) and
 * skips only bytes that read as zero (or fails with ENXIO if all the rest
 * reads as zero); SEEK_HOLE lands in [off, size] on a byte that reads as zero
 * (or at EOF).
 */
static void do_seek(int whence)
{
	enum op_type op = whence == SEEK_DATA ? OP_SEEK_DATA : OP_SEEK_HOLE;
	uint64_t off;
	struct log_entry *e;
	off_t r;

	if (file_size && next_rand() % 8)
		off = rand_range(0, file_size - 1);
	else
		off = file_size + rand_range(0, 8192);
	if (next_rand() % 3 == 0)
		off &= ~4095ULL;
	e = log_op(op, off, 0);
	e->size_after = file_size;
	r = lseek(fd, off, whence);
	e->result = r < 0 ? -errno : r;
	if (r < 0 && (errno == EINVAL || errno == EOPNOTSUPP) && off < file_size) {
		/* no SEEK_DATA/SEEK_HOLE support at all */
		op_weight[OP_SEEK_DATA] = op_weight[OP_SEEK_HOLE] = 0;
		return;
	}
	if (off >= file_size) {
		if (r >= 0 || errno != ENXIO)
			fail("%s at 0x%" PRIx64 " (EOF 0x%" PRIx64 ") returned %lld (%s), expected ENXIO",
			     op_names[op], off, file_size, (long long)r, r < 0 ? strerror(errno) : "ok");
		return;
	}
	if (whence == SEEK_DATA) {
		if (r < 0) {
			if (errno != ENXIO)
				fail("seek_data at 0x%" PRIx64 ": %s", off, strerror(errno));
			if (!all_zero(off, file_size))
				fail("seek_data at 0x%" PRIx64 " found no data, but the model has data before EOF 0x%" PRIx64,
				     off, file_size);
			return;
		}
		if ((uint64_t)r < off || (uint64_t)r >= file_size)
			fail("seek_data at 0x%" PRIx64 " returned 0x%llx, outside [off, EOF 0x%" PRIx64 ")",
			     off, (long long)r, file_size);
		if (!all_zero(off, r))
			fail("seek_data at 0x%" PRIx64 " returned 0x%llx, skipping nonzero model data",
			     off, (long long)r);
		return;
	}
	if (r < 0)
		fail("seek_hole at 0x%" PRIx64 ": %s", off, strerror(errno));
	if ((uint64_t)r < off || (uint64_t)r > file_size)
		fail("seek_hole at 0x%" PRIx64 " returned 0x%llx, outside [off, EOF 0x%" PRIx64 "]",
		     off, (long long)r, file_size);
	if ((uint64_t)r < file_size && good[r])
		fail("seek_hole at 0x%" PRIx64 " returned 0x%llx, where the model has data",
		     off, (long long)r);
}

/* O_DIRECT: unaligned requests go to the filesystem as they are. */
static void do_direct_read(void)
{
	uint64_t len = rand_len(), off;
	struct log_entry *e;

	off = file_size ? rand_range(0, file_size - 1) : 0;
	if (off + len > maxlen)
		len = maxlen - off;
	e = log_op(OP_DIRECT_READ, off, len);
	check_range_fd(dfd, off, len, "direct read");
	e->size_after = file_size;
}

static void do_direct_write(void)
{
	uint64_t len = rand_len(), off = rand_off(len);
	struct log_entry *e;

	if (next_rand() % 10 == 0 && file_size + len < maxlen)
		off = rand_range(file_size, maxlen - len);
	e = log_op(OP_DIRECT_WRITE, off, len);
	fill_pattern(buf, off, len);
	if (full_pwrite_fd(dfd, buf, len, off) < 0)
		fail("direct pwrite 0x%" PRIx64 "+0x%" PRIx64 ": %s", off, len, strerror(errno));
	memcpy(good + off, buf, len);
	if (off + len > file_size)
		file_size = off + len;
	e->size_after = file_size;
}

static void do_drop_cache(void)
{
	struct log_entry *e = log_op(OP_DROP_CACHE, 0, 0);

	drop_cache();
	e->size_after = file_size;
}

static void do_reopen(void)
{
	struct log_entry *e = log_op(OP_REOPEN, 0, 0);

	close_file();
	open_file(false);
	check_size("after reopen");
	e->size_after = file_size;
}

static enum op_type pick_op(void)
{
	unsigned int total = 0, r, i;

	for (i = 0; i < OP_NR; i++)
		total += op_weight[i];
	r = next_rand() % total;
	for (i = 0; i < OP_NR; i++) {
		if (r < op_weight[i])
			return i;
		r -= op_weight[i];
	}
	return OP_READ;
}

static void run_op(enum op_type op)
{
	switch (op) {
	case OP_READ: do_read(); break;
	case OP_WRITE: do_write(); break;
	case OP_MAPREAD: do_mapread(); break;
	case OP_MAPWRITE: do_mapwrite(); break;
	case OP_TRUNCATE: do_truncate(); break;
	case OP_PUNCH: do_punch(); break;
	case OP_FALLOC_KEEP: do_falloc(true); break;
	case OP_FALLOC: do_falloc(false); break;
	case OP_ZERO_RANGE: do_zero_range(); break;
	case OP_FSYNC: do_fsync(); break;
	case OP_SEEK_DATA: do_seek(SEEK_DATA); break;
	case OP_SEEK_HOLE: do_seek(SEEK_HOLE); break;
	case OP_DROP_CACHE: do_drop_cache(); break;
	case OP_REOPEN: do_reopen(); break;
	case OP_DIRECT_READ: do_direct_read(); break;
	case OP_DIRECT_WRITE: do_direct_write(); break;
	default: break;
	}
}

/* ---------------- the saved model ---------------- */

static void save_model(void)
{
	char tmp[4096];
	struct model_header *h = calloc(1, sizeof(*h));
	uint64_t n = log_count < LOG_SIZE ? log_count : LOG_SIZE, i;
	FILE *f;

	if (!h)
		die("out of memory");
	snprintf(tmp, sizeof(tmp), "%s.tmp", model_path);
	h->magic = MODEL_MAGIC;
	h->size = file_size;
	h->maxlen = maxlen;
	h->seed = seed;
	h->ops_done = op_nr;
	h->log_count = n;
	for (i = 0; i < n; i++)
		h->log[i] = oplog[(log_count - n + i) % LOG_SIZE];
	f = fopen(tmp, "w");
	if (!f || fwrite(h, sizeof(*h), 1, f) != 1 ||
	    (file_size && fwrite(good, file_size, 1, f) != 1) || fclose(f))
		die("cannot write the model %s: %s", tmp, strerror(errno));
	if (rename(tmp, model_path))
		die("cannot rename %s: %s", tmp, strerror(errno));
	free(h);
}

static void load_model(void)
{
	struct model_header *h = calloc(1, sizeof(*h));
	uint64_t i;
	FILE *f = fopen(model_path, "r");

	if (!h)
		die("out of memory");
	if (!f || fread(h, sizeof(*h), 1, f) != 1 || h->magic != MODEL_MAGIC)
		die("cannot read the model %s", model_path);
	if (h->size > h->maxlen || h->log_count > LOG_SIZE)
		die("bad model %s", model_path);
	maxlen = h->maxlen;
	good = calloc(1, maxlen);
	if (!good)
		die("out of memory");
	if (h->size && fread(good, h->size, 1, f) != 1)
		die("model %s is truncated", model_path);
	fclose(f);
	file_size = h->size;
	op_nr = h->ops_done;
	for (i = 0; i < h->log_count; i++)
		oplog[log_count++ % LOG_SIZE] = h->log[i];
	free(h);
}

/* ---------------- main ---------------- */

static void usage(void)
{
	fprintf(stderr,
		"usage: fsx [options] FILE\n"
		"  -S, --seed N        random seed (default 1)\n"
		"  -N, --ops N         operations to run (default 1000)\n"
		"  -m, --model PATH    save the model there at the end\n"
		"  -r, --resume        load the model from -m, verify FILE against it, go on\n"
		"  -l, --maxlen N      largest file size (default 16 MiB)\n"
		"  -c, --check-every N verify the whole file from the filesystem every N ops (default 500)\n"
		"      --no-mmap, --no-fallocate, --no-seek, --no-direct\n"
		"                      leave those operations out\n"
		"  -v, --verbose       print every operation\n");
	exit(2);
}

int main(int argc, char **argv)
{
	enum { OPT_NO_MMAP = 256, OPT_NO_FALLOC, OPT_NO_SEEK, OPT_NO_DIRECT };
	static const struct option longopts[] = {
		{ "seed", required_argument, NULL, 'S' },
		{ "ops", required_argument, NULL, 'N' },
		{ "model", required_argument, NULL, 'm' },
		{ "resume", no_argument, NULL, 'r' },
		{ "maxlen", required_argument, NULL, 'l' },
		{ "check-every", required_argument, NULL, 'c' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "no-mmap", no_argument, NULL, OPT_NO_MMAP },
		{ "no-fallocate", no_argument, NULL, OPT_NO_FALLOC },
		{ "no-seek", no_argument, NULL, OPT_NO_SEEK },
		{ "no-direct", no_argument, NULL, OPT_NO_DIRECT },
		{ NULL, 0, NULL, 0 }
	};
	uint64_t nops = 1000, check_every = 500, first, i;
	bool resume = false;
	int c;

	while ((c = getopt_long(argc, argv, "S:N:m:rl:c:v", longopts, NULL)) != -1) {
		switch (c) {
		case 'S': seed = strtoull(optarg, NULL, 0); break;
		case 'N': nops = strtoull(optarg, NULL, 0); break;
		case 'm': model_path = optarg; break;
		case 'r': resume = true; break;
		case 'l': maxlen = strtoull(optarg, NULL, 0); break;
		case 'c': check_every = strtoull(optarg, NULL, 0); break;
		case 'v': verbose = true; break;
		case OPT_NO_MMAP: op_weight[OP_MAPREAD] = op_weight[OP_MAPWRITE] = 0; break;
		case OPT_NO_FALLOC:
			op_weight[OP_PUNCH] = op_weight[OP_FALLOC_KEEP] = op_weight[OP_FALLOC] = 0;
			op_weight[OP_ZERO_RANGE] = 0;
			break;
		case OPT_NO_SEEK: op_weight[OP_SEEK_DATA] = op_weight[OP_SEEK_HOLE] = 0; break;
		case OPT_NO_DIRECT: op_weight[OP_DIRECT_READ] = op_weight[OP_DIRECT_WRITE] = 0; break;
		default: usage();
		}
	}
	if (optind + 1 != argc || (resume && !model_path) || maxlen < 65536)
		usage();
	path = argv[optind];
	page_size = sysconf(_SC_PAGESIZE);
	buf = malloc(MAX_IO + 8192 > maxlen ? MAX_IO + 8192 : maxlen);
	if (!buf)
		die("out of memory");

	if (resume) {
		load_model();
		open_file(false);
		/* the remount dropped every cache: this reads what was stored */
		check_whole_file("verifying the file against the saved model");
		if (verbose)
			fprintf(stderr, "fsx: %s matches the model (0x%" PRIx64 " bytes, %" PRIu64 " ops so far)\n",
				path, file_size, op_nr);
	} else {
		good = calloc(1, maxlen);
		if (!good)
			die("out of memory");
		open_file(true);
	}
	/* a resumed run continues with fresh random choices */
	rng = seed * 0x2545f4914f6cdd1dULL + op_nr;
	first = op_nr;
	for (i = 0; i < nops; i++) {
		enum op_type op;

		op_nr = first + i + 1;
		op = pick_op();
		run_op(op);
		if (verbose && log_count && oplog[(log_count - 1) % LOG_SIZE].nr == op_nr) {
			const struct log_entry *e = &oplog[(log_count - 1) % LOG_SIZE];

			fprintf(stderr, "%" PRIu64 " %s 0x%" PRIx64 " 0x%" PRIx64 " -> size 0x%" PRIx64 "\n",
				e->nr, op_names[e->op], e->off, e->len, e->size_after);
		}
		if (check_every && op_nr % check_every == 0) {
			drop_cache();
			check_whole_file("periodic full check");
		}
	}
	drop_cache();
	check_whole_file("final full check");
	close_file();
	if (model_path)
		save_model();
	printf("fsx: %s: %" PRIu64 " operations (%" PRIu64 " in total), final size 0x%" PRIx64 ", all good\n",
	       path, nops, op_nr, file_size);
	return 0;
}
