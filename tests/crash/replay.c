/*
 * replay: rebuild devices from an mfs write log (kernel-shared/block/io.h) as they
 * would be after a crash at a chosen crash point, for the crash tests.
 *
 *   replay LOG --count
 *   replay LOG --stats
 *   replay LOG --points
 *   replay LOG --map ORIG=TARGET [--map ...] --upto K [--from J] [--reorder SEED]
 *   replay LOG --dump
 *
 * A flush makes durable only what was written to its own device before it.
 * A crash at a position P of the log leaves on each device D every write to
 * D that precedes D's last flush before P (durable), and any subset of D's
 * writes after that flush and before P (in flight: the device may have
 * written them back, in any order, or not).
 *
 * Crash point 0 is the start of the log; then comes the position right
 * before each flush record (of any device) and the end of the log, each
 * kept only if it differs from the point before it (a write or a flush that
 * made something durable lies between them). --count prints the number K of
 * the last crash point (the end of the log).
 *
 * --upto K applies the durable writes of crash point K. --from J skips the
 * writes already durable at crash point J (the targets hold crash point J's
 * durable state already). --reorder SEED then lands some of the writes in
 * flight at K: for each device the seed picks none, all, or a random subset
 * of its in-flight 4 KiB sectors, so devices disagree about how far they got.
 *
 * --stats prints "points K writes W flushes F commits C unflushed U": C is
 * the number of generations the log's primary superblocks carry (one per
 * commit), U the writes no later flush of their device made durable.
 *
 * --points prints a line per crash point, "K G1 G2 ...": the generation of
 * the primary superblock each device holds durably there, in the order the
 * log first names the devices (0: none the log wrote, or not a valid one).
 * Devices that disagree are a commit torn between its superblock writes.
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

#include "kernel-shared/block/io.h"
#include "kernel-shared/format/format.h"

#define SECTOR 4096ULL

struct rec {
	u32 op;
	int dev;		/* index into devs */
	u64 offset;
	u64 len;
	const u8 *data;
};

/* A device the log names, and where its writes go. */
struct dev {
	const char *path;
	u32 path_len;
	char *target;
	int fd;
};

static struct rec *recs;
static size_t nrecs;
static struct dev *devs;
static int ndevs;
/* Crash point k is right before record pos[k]; its last one is pos = nrecs. */
static size_t *pos;
static size_t npoints;		/* crash points, not counting point 0 */
/*
 * cut[k * ndevs + d]: the writes to device d before this record index are
 * durable at crash point k (the index of d's last flush before it, or 0).
 */
static size_t *cut;

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "replay: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	exit(2);
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die("%s", "out of memory");
	return p;
}

static int dev_index(const char *path, u32 len)
{
	int i;

	for (i = 0; i < ndevs; i++)
		if (devs[i].path_len == len && memcmp(devs[i].path, path, len) == 0)
			return i;
	devs = xrealloc(devs, (ndevs + 1) * sizeof(*devs));
	devs[ndevs] = (struct dev){ .path = path, .path_len = len, .fd = -1 };
	return ndevs++;
}

static void parse_log(const u8 *buf, size_t size)
{
	size_t at = 0, cap = 0;

	while (at < size) {
		struct mfs_io_log_rec h;
		struct rec *r;

		if (size - at < sizeof(h))
			die("%s", "log ends inside a record header");
		memcpy(&h, buf + at, sizeof(h));
		if (h.magic != MFS_IO_LOG_REC_MAGIC)
			die("%s", "bad record magic");
		if (h.op != MFS_IO_WRITE && h.op != MFS_IO_FLUSH)
			die("%s", "unknown record op");
		at += sizeof(h);
		if (h.path_len > size - at || h.len > size - at - h.path_len)
			die("%s", "log ends inside a record");
		if (nrecs == cap) {
			cap = cap ? cap * 2 : 1024;
			recs = xrealloc(recs, cap * sizeof(*recs));
		}
		r = &recs[nrecs++];
		r->op = h.op;
		r->dev = dev_index((const char *)buf + at, h.path_len);
		r->offset = h.offset;
		r->len = h.len;
		r->data = buf + at + h.path_len;
		at += h.path_len + h.len;
	}
}

static void add_point(size_t at, const size_t *last_flush)
{
	pos[npoints] = at;
	memcpy(cut + npoints * ndevs, last_flush, ndevs * sizeof(*cut));
	npoints++;
}

/*
 * One pass over the log: a crash point before every flush record and at
 * the end, unless nothing changed since the previous point (only flushes of
 * devices that had nothing unflushed lie between them).
 */
static void find_crash_points(void)
{
	size_t *last_flush = xrealloc(NULL, ndevs * sizeof(*last_flush));
	bool *pending = xrealloc(NULL, ndevs * sizeof(*pending));
	bool changed = false;
	size_t k;

	pos = xrealloc(NULL, (nrecs + 2) * sizeof(*pos));
	cut = xrealloc(NULL, (nrecs + 2) * ndevs * sizeof(*cut));
	memset(last_flush, 0, ndevs * sizeof(*last_flush));
	memset(pending, 0, ndevs * sizeof(*pending));
	add_point(0, last_flush);
	for (k = 0; k <= nrecs; k++) {
		if (k == nrecs || recs[k].op == MFS_IO_FLUSH) {
			if (changed)
				add_point(k, last_flush);
			changed = false;
		}
		if (k == nrecs)
			break;
		if (recs[k].op == MFS_IO_WRITE) {
			pending[recs[k].dev] = true;
			changed = true;
		} else if (pending[recs[k].dev]) {
			pending[recs[k].dev] = false;
			last_flush[recs[k].dev] = k;
			changed = true;
		}
	}
	npoints--;	/* the number of the last point */
	free(last_flush);
	free(pending);
}

static size_t cut_of(size_t point, int dev)
{
	return cut[point * ndevs + dev];
}

/*
 * The generation of the primary superblock record k leaves on its device,
 * or -1 if it does not cover that superblock (0: it wipes it or writes
 * something that is not one).
 */
static long long super_gen_of(size_t k)
{
	const struct rec *r = &recs[k];
	struct mfs_super_block sb;

	if (r->op != MFS_IO_WRITE || r->offset > MFS_SUPER_INFO_OFFSET ||
	    r->offset + r->len < MFS_SUPER_INFO_OFFSET + sizeof(sb))
		return -1;
	memcpy(&sb, r->data + (MFS_SUPER_INFO_OFFSET - r->offset), sizeof(sb));
	if (le64_to_cpu(sb.magic) != MFS_MAGIC)
		return 0;
	return (long long)le64_to_cpu(sb.generation);
}

/* The generation of the primary superblock device dev holds durably at a crash point. */
static u64 durable_super_gen(size_t point, int dev)
{
	size_t k;

	for (k = cut_of(point, dev); k-- > 0;) {
		long long gen;

		if (recs[k].dev != dev)
			continue;
		gen = super_gen_of(k);
		if (gen >= 0)
			return gen;
	}
	return 0;
}

static void put(struct dev *d, const u8 *data, u64 len, u64 off)
{
	if (d->fd < 0) {
		fprintf(stderr, "replay: the log writes to %.*s, which has no --map\n",
			(int)d->path_len, d->path);
		exit(2);
	}
	while (len) {
		ssize_t n = pwrite(d->fd, data, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("cannot write %s", d->target);
		data += n;
		off += n;
		len -= n;
	}
}

/* The writes durable at crash point `to` that were not at crash point `from`. */
static void apply_durable(size_t from, size_t to)
{
	size_t k, lo = SIZE_MAX, hi = 0;
	int d;

	for (d = 0; d < ndevs; d++) {
		lo = min_t(size_t, lo, cut_of(from, d));
		hi = max_t(size_t, hi, cut_of(to, d));
	}
	for (k = lo; k < hi; k++) {
		const struct rec *r = &recs[k];

		if (r->op == MFS_IO_WRITE && k >= cut_of(from, r->dev) && k < cut_of(to, r->dev))
			put(&devs[r->dev], r->data, r->len, r->offset);
	}
}

static u64 splitmix64(u64 *state)
{
	u64 x = (*state += 0x9e3779b97f4a7c15ULL);

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/*
 * Land some of the writes in flight at crash point k, sector by sector, in
 * log order. Each device gets its own share in eighths, drawn from the seed:
 * 0 (it wrote back nothing), 8 (everything) or anything between.
 */
static void apply_in_flight(size_t point, u64 seed)
{
	u64 state = seed, *keep = xrealloc(NULL, ndevs * sizeof(*keep));
	size_t k, lo = pos[point];
	int d;

	for (d = 0; d < ndevs; d++) {
		u64 r = splitmix64(&state) % 4;

		keep[d] = r == 0 ? 0 : r == 1 ? 8 : 1 + splitmix64(&state) % 7;
		lo = min_t(size_t, lo, cut_of(point, d));
	}
	for (k = lo; k < pos[point]; k++) {
		const struct rec *r = &recs[k];
		u64 at = 0;

		if (r->op != MFS_IO_WRITE || k < cut_of(point, r->dev))
			continue;
		while (at < r->len) {
			u64 next = (r->offset + at) / SECTOR * SECTOR + SECTOR - r->offset;
			u64 n = (next < r->len ? next : r->len) - at;

			if (splitmix64(&state) % 8 < keep[r->dev])
				put(&devs[r->dev], r->data + at, n, r->offset + at);
			at += n;
		}
	}
	free(keep);
}

static void dump(void)
{
	size_t k, p = 1;

	for (k = 0; k <= nrecs; k++) {
		if (p <= npoints && pos[p] == k)
			printf("-- crash point %zu\n", p++);
		if (k == nrecs)
			break;
		printf("%zu %s %.*s %llu %llu\n", k,
		       recs[k].op == MFS_IO_WRITE ? "write" : "flush",
		       (int)devs[recs[k].dev].path_len, devs[recs[k].dev].path,
		       (unsigned long long)recs[k].offset, (unsigned long long)recs[k].len);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

static void stats(void)
{
	size_t k, writes = 0, flushes = 0, unflushed = 0, commits = 0, ngens = 0;
	u64 *gens = xrealloc(NULL, nrecs * sizeof(*gens));

	for (k = 0; k < nrecs; k++) {
		const struct rec *r = &recs[k];
		long long gen;

		if (r->op == MFS_IO_FLUSH) {
			flushes++;
			continue;
		}
		writes++;
		if (k >= cut_of(npoints, r->dev))
			unflushed++;
		gen = super_gen_of(k);
		if (gen > 0)
			gens[ngens++] = gen;
	}
	/* a commit writes its generation to several devices, a joining one twice */
	qsort(gens, ngens, sizeof(*gens), cmp_u64);
	for (k = 0; k < ngens; k++)
		commits += !k || gens[k] != gens[k - 1];
	printf("points %zu writes %zu flushes %zu commits %zu unflushed %zu\n",
	       npoints, writes, flushes, commits, unflushed);
	free(gens);
}

static void points(void)
{
	size_t k;
	int d;

	for (k = 0; k <= npoints; k++) {
		printf("%zu", k);
		for (d = 0; d < ndevs; d++)
			printf(" %llu", (unsigned long long)durable_super_gen(k, d));
		printf("\n");
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
		"usage: replay LOG --count | --stats | --points | --dump\n"
		"       replay LOG --map ORIG=TARGET [--map ...] --upto K [--from J] [--reorder SEED]\n");
	exit(1);
}

/* Point each mapped device of the log at its target; maps for devices the log never names are fine. */
static void open_targets(char **orig, char **target, int nmaps)
{
	int i, d;

	for (i = 0; i < nmaps; i++)
		for (d = 0; d < ndevs; d++) {
			if (strlen(orig[i]) != devs[d].path_len ||
			    memcmp(orig[i], devs[d].path, devs[d].path_len))
				continue;
			devs[d].target = target[i];
			devs[d].fd = open(target[i], O_RDWR);
			if (devs[d].fd < 0)
				die("cannot open %s", target[i]);
		}
}

int main(int argc, char **argv)
{
	enum { OPT_MAP = 256, OPT_COUNT, OPT_STATS, OPT_POINTS, OPT_UPTO, OPT_FROM, OPT_REORDER,
	       OPT_DUMP };
	static const struct option longopts[] = {
		{ "map", required_argument, NULL, OPT_MAP },
		{ "count", no_argument, NULL, OPT_COUNT },
		{ "stats", no_argument, NULL, OPT_STATS },
		{ "points", no_argument, NULL, OPT_POINTS },
		{ "upto", required_argument, NULL, OPT_UPTO },
		{ "from", required_argument, NULL, OPT_FROM },
		{ "reorder", required_argument, NULL, OPT_REORDER },
		{ "dump", no_argument, NULL, OPT_DUMP },
		{ NULL, 0, NULL, 0 }
	};
	bool count = false, do_stats = false, do_points = false, do_dump = false, reorder = false;
	char **orig = NULL, **target = NULL;
	long upto = -1, from = 0;
	u64 seed = 0;
	struct stat st;
	const u8 *buf = NULL;
	int c, fd, d, nmaps = 0;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_MAP: {
			char *eq = strchr(optarg, '=');

			if (!eq)
				usage();
			orig = xrealloc(orig, (nmaps + 1) * sizeof(*orig));
			target = xrealloc(target, (nmaps + 1) * sizeof(*target));
			orig[nmaps] = strndup(optarg, eq - optarg);
			target[nmaps] = eq + 1;
			nmaps++;
			break;
		}
		case OPT_COUNT:
			count = true;
			break;
		case OPT_STATS:
			do_stats = true;
			break;
		case OPT_POINTS:
			do_points = true;
			break;
		case OPT_UPTO:
			upto = parse_num(optarg, "crash point");
			break;
		case OPT_FROM:
			from = parse_num(optarg, "crash point");
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
	if (optind + 1 != argc || (count + do_stats + do_points + do_dump + (upto >= 0)) != 1)
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
	find_crash_points();

	if (count) {
		printf("%zu\n", npoints);
		return 0;
	}
	if (do_stats) {
		stats();
		return 0;
	}
	if (do_points) {
		points();
		return 0;
	}
	if (do_dump) {
		dump();
		return 0;
	}
	if ((size_t)upto > npoints || from > upto)
		die("%s", "crash point out of range");
	open_targets(orig, target, nmaps);
	apply_durable(from, upto);
	if (reorder)
		apply_in_flight(upto, seed);
	for (d = 0; d < ndevs; d++)
		if (devs[d].fd >= 0 && close(devs[d].fd) < 0)
			die("cannot write %s", devs[d].target);
	for (d = 0; d < nmaps; d++)
		free(orig[d]);
	free(orig);
	free(target);
	return 0;
}
