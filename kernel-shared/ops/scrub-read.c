/*
 * The scrub's reads (DESIGN §6): a step's extents lie in one chunk; its
 * rows that hold them are read in windows of WINDOW_STRIPE bytes of every
 * stripe at once, one reader thread per device, past the page cache, and
 * checked in memory - data sectors against their checksums, tree blocks
 * against their headers (checksum, address, filesystem, generation, level,
 * owner: what btrfs's scrub checks), raid5/6 parity against the data
 * read. Nothing here takes fs->lock or changes the scrub's state: the
 * results go back in the batch.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "kernel-shared/ops/scrub-internal.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/block/csum.h"
#include "kernel-shared/block/raid56.h"

#define WINDOW_STRIPE	(4ULL << 20)	/* bytes of each stripe read at once */

/* What one window holds: rows [w0, w1) of every stripe. */
struct window {
	u64 w0, w1;
	u64 lo, hi;		/* the logical bytes of those rows */
	int first;		/* the first extent that reaches into it */
	const struct mfs_chunk_map *map;
	u64 *off, *len;		/* per stripe, from its start */
	u8 **bufs;
	int *errs;
	int ret;		/* of the read */
};

/*
 * Logical bytes per row: a stripe unit of each data column (raid0, raid10,
 * raid5/6); a stripe unit of the chunk for the full copies (single, dup,
 * raid1*), whose offset in a stripe is the logical offset.
 */
static u64 row_bytes(const struct mfs_chunk_map *map)
{
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	int n = map->num_stripes, units;

	if (a->nparity)
		units = n - a->nparity;
	else if (a->sub_stripes > 1)
		units = n / a->sub_stripes;
	else if (a->ncopies > 1 || n == 1)
		units = 1;
	else
		units = n;
	return (u64)units * map->stripe_len;
}

/* Where copy c of logical lies in the window: NULL when not read whole. */
static const u8 *window_at(const struct window *w, const struct mfs_chunk_map *map,
			   u64 logical, int c, u64 *len, int *err)
{
	struct mfs_io_map io;
	int s;

	if (mfs_map_block(map, logical, &io) || c >= io.ncopies) {
		*err = -EIO;
		return NULL;
	}
	*len = io.length;
	s = io.stripe[c];
	*err = w->errs[s];
	if (*err)
		return NULL;
	return w->bufs[s] + (io.physical[c] - map->stripes[s].physical - w->off[s]);
}

static int mark_suspect(struct scrub_batch *b, int k, u64 first, u64 count)
{
	u64 nsect = b->r[k].len / MFS_SECTOR;

	if (!b->suspect[k]) {
		b->suspect[k] = calloc(nsect, 1);
		if (!b->suspect[k])
			return -ENOMEM;
	}
	memset(b->suspect[k] + first, 1, min_t(u64, count, nsect - first));
	return 0;
}

/*
 * The sectors of data extent k in [lo, hi) checked in every copy read
 * (raid5/6: the data column); a copy on a device out of service is left
 * to the caller (unverified), one that did not read is suspect.
 */
static int check_data(struct mfs_fs_info *fs, struct scrub_batch *b, int k,
		      const struct window *w, u64 lo, u64 hi)
{
	const struct mfs_chunk_map *map = b->map;
	const struct mfs_range *r = &b->r[k];
	int copies = mfs_profile(map->type)->nparity ? 1 : mfs_num_copies(map), c, ret = 0;
	u64 logical;

	for (c = 0; c < copies && !ret; c++) {
		for (logical = lo; logical < hi && !ret;) {
			u64 first = (logical - r->start) / MFS_SECTOR, n, s;
			int err;
			const u8 *p = window_at(w, map, logical, c, &n, &err);

			n = min_t(u64, n, hi - logical);
			if (err == -ENODEV) {
				logical += n;
				continue;
			}
			if (!p) {
				ret = mark_suspect(b, k, first, n / MFS_SECTOR);
				logical += n;
				continue;
			}
			for (s = 0; s < n / MFS_SECTOR && !ret; s++) {
				u8 sum[MFS_CSUM_SIZE];

				mfs_csum_compute(fs->csum_type, p + s * MFS_SECTOR, MFS_SECTOR, sum);
				if (memcmp(sum, b->csums[k] + (first + s) * fs->csum_size,
					   fs->csum_size))
					ret = mark_suspect(b, k, first + s, 1);
			}
			logical += n;
		}
	}
	return ret;
}

/* One copy of a tree block as read: its header says what the extent tree says. */
static bool tree_copy_matches(struct mfs_fs_info *fs, const struct mfs_range *r, const u8 *buf)
{
	const struct mfs_header *h = (const struct mfs_header *)buf;
	u8 sum[MFS_CSUM_SIZE];

	mfs_csum_compute(fs->csum_type, buf + MFS_CSUM_FIELD_SIZE,
			 fs->nodesize - MFS_CSUM_FIELD_SIZE, sum);
	return !memcmp(sum, h->csum, fs->csum_size) && le64_to_cpu(h->bytenr) == r->start &&
	       !memcmp(h->fsid, fs->metadata_fsid, MFS_FSID_SIZE) &&
	       le64_to_cpu(h->generation) == r->gen && h->level == r->level &&
	       (!r->owner || le64_to_cpu(h->owner) == r->owner);
}

/*
 * Tree block k, when the window holds it whole: every copy read matches
 * (raid5/6: the data column, which must be present). A copy on a device
 * out of service is the caller's to count.
 */
static void check_tree(struct mfs_fs_info *fs, struct scrub_batch *b, int k,
		       const struct window *w)
{
	const struct mfs_range *r = &b->r[k];
	bool parity = mfs_profile(b->map->type)->nparity > 0;
	int copies = parity ? 1 : mfs_num_copies(b->map), c, err;
	bool ok = r->start >= w->lo && r->start + r->len <= w->hi && r->len == fs->nodesize;

	for (c = 0; c < copies && ok; c++) {
		u64 n;
		const u8 *p = window_at(w, b->map, r->start, c, &n, &err);

		if (err == -ENODEV && !parity)
			continue;
		ok = p && n >= r->len && tree_copy_matches(fs, r, p);
	}
	b->tree_ok[k] = ok;
}

/* raid5/6: the parity of each row of the window against its data, as read. */
static int check_rows(struct scrub_batch *b, const struct window *w, u8 *parity)
{
	const struct mfs_chunk_map *map = b->map;
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	int n = map->num_stripes, ndata = n - a->nparity, col;
	u64 slen = map->stripe_len, row;
	void *blocks[n];

	for (row = max_t(u64, w->w0, b->row0); row < w->w1 && row < b->row0 + b->nrows; row++) {
		bool ok = true;
		int ret;

		for (col = 0; col < n && ok; col++) {
			int s = mfs_row_stripe(map, row, col);

			ok = !w->errs[s];
			blocks[col] = w->bufs[s] + (row - w->w0) * slen;
		}
		if (!ok)
			continue;
		for (col = 0; col < a->nparity; col++)
			blocks[ndata + col] = parity + col * slen;
		ret = mfs_raid56_gen(ndata, a->nparity, slen, blocks);
		if (ret)
			return ret;
		for (col = 0; col < a->nparity && ok; col++)
			ok = !memcmp(parity + col * slen,
				     w->bufs[mfs_row_stripe(map, row, ndata + col)] + (row - w->w0) * slen,
				     slen);
		b->row_ok[row - b->row0] = ok;
	}
	return 0;
}

/* Read the window's rows [w0, w1) of every stripe (a thread of its own). */
static void *read_window(void *arg)
{
	struct window *w = arg;

	w->ret = mfs_read_stripe_rows(w->map, w->w0, w->w1, NULL, w->off, w->len, w->bufs,
				      w->errs);
	return NULL;
}

/* Every part of the step's extents that lies in the window checked. */
static int check_window(struct mfs_fs_info *fs, struct scrub_batch *b, const struct window *w,
			int first, u8 *parity)
{
	int k, ret = 0;

	for (k = first; k < b->n && b->r[k].start < w->hi && !ret; k++) {
		const struct mfs_range *r = &b->r[k];

		if (r->gen > b->gen)
			continue;
		if (!(r->flags & MFS_EXTENT_FLAG_DATA))
			check_tree(fs, b, k, w);
		else if (b->csums[k])
			ret = check_data(fs, b, k, w, max_t(u64, r->start, w->lo),
					 min_t(u64, r->start + r->len, w->hi));
	}
	if (!ret && b->row_ok)
		ret = check_rows(b, w, parity);
	return ret;
}

static void free_window(struct window *w)
{
	free(w->off);
	free(w->len);
	free(w->errs);
}

/* Window w over set k of the reusable buffers, grown to wrows rows of each stripe. */
static int alloc_window(struct window *w, const struct mfs_chunk_map *map, u64 wrows,
			struct scrub_bufs *sb, int k)
{
	struct scrub_buf_set *set = &sb->set[k];
	int n = map->num_stripes, s;
	u64 bytes = wrows * map->stripe_len;

	w->map = map;
	w->off = calloc(n, sizeof(*w->off));
	w->len = calloc(n, sizeof(*w->len));
	w->errs = calloc(n, sizeof(*w->errs));
	if (!w->off || !w->len || !w->errs)
		return -ENOMEM;
	if (set->n < n || set->bytes < bytes) {
		for (s = 0; s < set->n; s++)
			free(set->buf[s]);
		free(set->buf);
		set->bytes = 0;
		set->buf = calloc(n, sizeof(*set->buf));
		set->n = set->buf ? n : 0;
		for (s = 0; s < set->n; s++)
			if (!(set->buf[s] = mfs_io_alloc_bulk(bytes)))
				return -ENOMEM;
		set->bytes = bytes;
	}
	w->bufs = set->buf;
	return set->buf ? 0 : -ENOMEM;
}

void mfs_scrub_bufs_free(struct scrub_bufs *sb)
{
	int k, s;

	for (k = 0; k < 2; k++) {
		for (s = 0; s < sb->set[k].n; s++)
			free(sb->set[k].buf[s]);
		free(sb->set[k].buf);
	}
	memset(sb, 0, sizeof(*sb));
}

static int alloc_results(struct scrub_batch *b)
{
	const struct mfs_chunk_map *map = b->map;
	u64 rl = row_bytes(map), last = b->r[b->n - 1].start + b->r[b->n - 1].len;

	b->suspect = calloc(b->n, sizeof(*b->suspect));
	b->tree_ok = calloc(b->n, sizeof(*b->tree_ok));
	if (!b->suspect || !b->tree_ok)
		return -ENOMEM;
	if (!mfs_profile(map->type)->nparity)
		return 0;
	b->row0 = (b->r[0].start - map->logical) / rl;
	b->nrows = (last - 1 - map->logical) / rl + 1 - b->row0;
	b->row_ok = calloc(b->nrows, 1);
	return b->row_ok ? 0 : -ENOMEM;
}

/*
 * The rows after w0 that the next window reads: at most wrows, and none
 * past the end of the last extent that starts within them.
 */
static u64 window_end(const struct scrub_batch *b, int i, u64 w0, u64 wrows)
{
	const struct mfs_chunk_map *map = b->map;
	u64 rl = row_bytes(map), limit = map->logical + (w0 + wrows) * rl, end = 0, w1;
	int k;

	for (k = i; k < b->n && b->r[k].start < limit; k++)
		end = b->r[k].start + b->r[k].len;
	w1 = (min_t(u64, end, limit) - 1 - map->logical) / rl + 1;
	w1 = min_t(u64, w1, map->length / rl);
	return max_t(u64, w1, w0 + 1);
}

/*
 * The step's windows, in order: each from the row of the first extent not
 * yet held to its end, as window_end bounds it.
 */
static int plan_windows(const struct scrub_batch *b, u64 wrows, struct window **out, int *nout)
{
	const struct mfs_chunk_map *map = b->map;
	u64 rl = row_bytes(map), pos = b->r[0].start;
	struct window *ws = NULL;
	int i = 0, n = 0, max = 0;

	while (i < b->n) {
		struct window *w;

		if (MFS_ARRAY_RESERVE(ws, n, max, 8)) {
			free(ws);
			return -ENOMEM;
		}
		w = &ws[n++];
		memset(w, 0, sizeof(*w));
		w->first = i;
		w->w0 = (pos - map->logical) / rl;
		w->w1 = window_end(b, i, w->w0, wrows);
		w->lo = map->logical + w->w0 * rl;
		w->hi = min_t(u64, map->logical + w->w1 * rl, map->logical + map->length);
		while (i < b->n && b->r[i].start + b->r[i].len <= w->hi)
			i++;
		if (i < b->n)
			pos = max_t(u64, w->hi, b->r[i].start);
	}
	*out = ws;
	*nout = n;
	return 0;
}

/*
 * Windows are read ahead: the next one is read (its own thread, one more
 * per device) while this one is checked, into the other set of buffers.
 */
int mfs_scrub_batch_read(struct mfs_fs_info *fs, struct scrub_batch *b, struct scrub_bufs *sb)
{
	const struct mfs_chunk_map *map = b->map;
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	u64 wrows = max_t(u64, 1, WINDOW_STRIPE / map->stripe_len);
	struct window io[2] = { { 0 } }, *ws = NULL;
	u8 *parity = NULL;
	int nw = 0, j, ret;

	if (!b->n)
		return 0;
	ret = alloc_results(b);
	if (!ret)
		ret = plan_windows(b, wrows, &ws, &nw);
	for (j = 0; j < 2 && !ret; j++)
		ret = alloc_window(&io[j], map, wrows, sb, j);
	if (!ret && a->nparity && !(parity = malloc(a->nparity * map->stripe_len)))
		ret = -ENOMEM;
	if (!ret && nw) {
		io[0].w0 = ws[0].w0;
		io[0].w1 = ws[0].w1;
		read_window(&io[0]);
	}
	for (j = 0; j < nw && !ret; j++) {
		struct window *cur = &io[j % 2], *next = &io[(j + 1) % 2];
		pthread_t tid;
		bool ahead = false;

		if (j + 1 < nw) {
			next->w0 = ws[j + 1].w0;
			next->w1 = ws[j + 1].w1;
			ahead = pthread_create(&tid, NULL, read_window, next) == 0;
		}
		cur->lo = ws[j].lo;
		cur->hi = ws[j].hi;
		ret = cur->ret ? cur->ret : check_window(fs, b, cur, ws[j].first, parity);
		if (j + 1 < nw) {
			if (ahead)
				pthread_join(tid, NULL);
			else
				read_window(next);
		}
	}
	free(parity);
	free(ws);
	free_window(&io[0]);
	free_window(&io[1]);
	return ret;
}

bool mfs_scrub_batch_row_ok(const struct scrub_batch *b, const struct mfs_chunk_map *map, u64 row)
{
	return b && b->row_ok && b->map == map && row >= b->row0 && row < b->row0 + b->nrows &&
	       b->row_ok[row - b->row0];
}

void mfs_scrub_batch_free(struct scrub_batch *b)
{
	int k;

	for (k = 0; k < b->n; k++) {
		if (b->csums)
			free(b->csums[k]);
		if (b->suspect)
			free(b->suspect[k]);
	}
	free(b->csums);
	free(b->suspect);
	free(b->tree_ok);
	free(b->row_ok);
	memset(b, 0, sizeof(*b));
}
