/*
 * replay: rebuild devices from an mfs write log (kernel-shared/io.h) as they
 * would be after a crash at a chosen flush point, for the crash tests.
 *
 *   replay LOG --map ORIG=TARGET [--map ...] --count
 *   replay LOG --map ORIG=TARGET [--map ...] --upto K [--from J] [--reorder SEED]
 *   replay LOG --dump
 *
 * A flush point is the position right after a group of flush records, i.e.
 * every record k that is a flush and is followed by a write or the end of
 * the log. Flush point 0 is the start of the log. --upto K applies every
 * write before flush point K (K = count also applies trailing writes);
 * --from J skips the writes before flush point J (the targets already hold
 * them). --reorder SEED then lands a random subset of the 4 KiB sectors
 * written between flush point K and the next flush: a crash while those
 * writes were in flight, in any order.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel-shared/io.h"

#define SECTOR 4096ULL

struct rec {
	u32 op;
	const char *path;
	u32 path_len;
	u64 offset;
	u64 len;
	const u8 *data;
};

struct map {
	char *orig;
	char *target;
	int fd;
};

static struct rec *recs;
static size_t nrecs;
static size_t *points;	/* points[k] = index of the first record after flush point k */
static size_t npoints;	/* flush points, not counting point 0 */
static struct map *maps;
static int nmaps;

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "replay: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	exit(2);
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p)
		die("%s", "out of memory");
	return p;
}

static void parse_log(const u8 *buf, size_t size)
{
	size_t pos = 0, cap = 0;

	while (pos < size) {
		struct mfs_io_log_rec h;
		struct rec *r;

		if (size - pos < sizeof(h))
			die("%s", "log ends inside a record header");
		memcpy(&h, buf + pos, sizeof(h));
		if (h.magic != MFS_IO_LOG_REC_MAGIC)
			die("%s", "bad record magic");
		if (h.op != MFS_IO_WRITE && h.op != MFS_IO_FLUSH)
			die("%s", "unknown record op");
		pos += sizeof(h);
		if (h.path_len > size - pos || h.len > size - pos - h.path_len)
			die("%s", "log ends inside a record");
		if (nrecs == cap) {
			cap = cap ? cap * 2 : 1024;
			recs = xrealloc(recs, cap * sizeof(*recs));
		}
		r = &recs[nrecs++];
		r->op = h.op;
		r->path = (const char *)buf + pos;
		r->path_len = h.path_len;
		r->offset = h.offset;
		r->len = h.len;
		r->data = buf + pos + h.path_len;
		pos += h.path_len + h.len;
	}
}

static void find_flush_points(void)
{
	size_t k;

	points = xrealloc(NULL, (nrecs + 1) * sizeof(*points));
	points[0] = 0;
	for (k = 0; k < nrecs; k++)
		if (recs[k].op == MFS_IO_FLUSH &&
		    (k + 1 == nrecs || recs[k + 1].op == MFS_IO_WRITE))
			points[++npoints] = k + 1;
}

static struct map *map_of(const struct rec *r)
{
	int i;

	for (i = 0; i < nmaps; i++)
		if (strlen(maps[i].orig) == r->path_len &&
		    memcmp(maps[i].orig, r->path, r->path_len) == 0)
			return &maps[i];
	fprintf(stderr, "replay: the log writes to %.*s, which has no --map\n",
		(int)r->path_len, r->path);
	exit(2);
}

static void put(struct map *m, const u8 *data, u64 len, u64 off)
{
	while (len) {
		ssize_t n = pwrite(m->fd, data, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("cannot write %s", m->target);
		data += n;
		off += n;
		len -= n;
	}
}

static void apply(size_t from, size_t to)
{
	size_t k;

	for (k = from; k < to; k++)
		if (recs[k].op == MFS_IO_WRITE)
			put(map_of(&recs[k]), recs[k].data, recs[k].len, recs[k].offset);
}

static u64 splitmix64(u64 *state)
{
	u64 x = (*state += 0x9e3779b97f4a7c15ULL);

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/*
 * Land a random subset of the sectors written from record `from` up to the
 * next flush. Each sector is kept with one probability drawn per seed, so
 * some seeds land almost nothing and some almost everything.
 */
static void apply_some(size_t from, u64 seed)
{
	u64 state = seed, keep = 1 + splitmix64(&state) % 7;	/* in eighths */
	size_t k;

	for (k = from; k < nrecs && recs[k].op == MFS_IO_WRITE; k++) {
		const struct rec *r = &recs[k];
		u64 pos = 0;

		while (pos < r->len) {
			u64 next = (r->offset + pos) / SECTOR * SECTOR + SECTOR - r->offset;
			u64 n = (next < r->len ? next : r->len) - pos;

			if (splitmix64(&state) % 8 < keep)
				put(map_of(r), r->data + pos, n, r->offset + pos);
			pos += n;
		}
	}
}

static void dump(void)
{
	size_t k, p = 1;

	for (k = 0; k < nrecs; k++) {
		printf("%zu %s %.*s %llu %llu\n", k,
		       recs[k].op == MFS_IO_WRITE ? "write" : "flush",
		       (int)recs[k].path_len, recs[k].path,
		       (unsigned long long)recs[k].offset, (unsigned long long)recs[k].len);
		if (p <= npoints && points[p] == k + 1)
			printf("-- flush point %zu\n", p++);
	}
}

static long parse_num(const char *s, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || *end || v < 0)
		die("bad %s", what);
	return v;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: replay LOG --map ORIG=TARGET [--map ...] --count\n"
		"       replay LOG --map ORIG=TARGET [--map ...] --upto K [--from J] [--reorder SEED]\n"
		"       replay LOG --dump\n");
	exit(1);
}

int main(int argc, char **argv)
{
	enum { OPT_MAP = 256, OPT_COUNT, OPT_UPTO, OPT_FROM, OPT_REORDER, OPT_DUMP };
	static const struct option longopts[] = {
		{ "map", required_argument, NULL, OPT_MAP },
		{ "count", no_argument, NULL, OPT_COUNT },
		{ "upto", required_argument, NULL, OPT_UPTO },
		{ "from", required_argument, NULL, OPT_FROM },
		{ "reorder", required_argument, NULL, OPT_REORDER },
		{ "dump", no_argument, NULL, OPT_DUMP },
		{ NULL, 0, NULL, 0 }
	};
	bool count = false, do_dump = false, reorder = false;
	long upto = -1, from = 0;
	u64 seed = 0;
	struct stat st;
	const u8 *buf = NULL;
	int c, fd, i;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_MAP: {
			char *eq = strchr(optarg, '=');

			if (!eq)
				usage();
			maps = xrealloc(maps, (nmaps + 1) * sizeof(*maps));
			maps[nmaps].orig = strndup(optarg, eq - optarg);
			maps[nmaps].target = strdup(eq + 1);
			maps[nmaps].fd = -1;
			nmaps++;
			break;
		}
		case OPT_COUNT:
			count = true;
			break;
		case OPT_UPTO:
			upto = parse_num(optarg, "flush point");
			break;
		case OPT_FROM:
			from = parse_num(optarg, "flush point");
			break;
		case OPT_REORDER:
			reorder = true;
			seed = strtoull(optarg, NULL, 0);
			break;
		case OPT_DUMP:
			do_dump = true;
			break;
		default:
			usage();
		}
	}
	if (optind + 1 != argc || (count + do_dump + (upto >= 0)) != 1)
		usage();

	fd = open(argv[optind], O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0)
		die("cannot open %s", argv[optind]);
	if (st.st_size) {
		buf = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (buf == MAP_FAILED)
			die("cannot map %s", argv[optind]);
	}
	parse_log(buf, st.st_size);
	find_flush_points();

	if (count) {
		printf("%zu\n", npoints);
		return 0;
	}
	if (do_dump) {
		dump();
		return 0;
	}
	if ((size_t)upto > npoints || from > upto)
		die("%s", "flush point out of range");
	for (i = 0; i < nmaps; i++) {
		maps[i].fd = open(maps[i].target, O_RDWR);
		if (maps[i].fd < 0)
			die("cannot open %s", maps[i].target);
	}
	apply(points[from], (size_t)upto == npoints ? nrecs : points[upto]);
	if (reorder && (size_t)upto < npoints)
		apply_some(points[upto], seed);
	for (i = 0; i < nmaps; i++)
		if (close(maps[i].fd) < 0)
			die("cannot write %s", maps[i].target);
	return 0;
}
