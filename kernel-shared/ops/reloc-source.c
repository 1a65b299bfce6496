/*
 * What a relocation's copy reads, read ahead in large windows (DESIGN §5):
 * rows [w0, w1) of each stripe that holds the first copy, one direct read
 * per device (volumes/stripe-io.c), the next two windows read by threads of
 * their own while the copy takes its pieces from this one. A window starts at
 * the first used range not yet held, so the holes between extents are not
 * read. What a window does not hold whole or could not read the copy
 * reads itself (mfs_read_map): the source only saves it syscalls.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "kernel-shared/ops/restripe-internal.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/block/raid56.h"

#define SOURCE_WINDOW	(4ULL << 20)	/* bytes of each stripe read at once */
#define SOURCE_MAX	(32ULL << 20)	/* bytes of all stripes of a window */
#define NWIN		3		/* windows held: this one and two read ahead */

struct src_window {
	u64 w0, w1;		/* rows of the chunk */
	const bool *needed;	/* per stripe: read (NULL: every one) */
	u64 lo, hi;		/* the logical bytes of those rows; lo == hi: none */
	u64 *off, *len;		/* per stripe, from its start */
	u8 **bufs;
	int *errs;
	int ret;
	const struct reloc_source *src;
};

struct reloc_source {
	struct mfs_fs_info *fs;
	const struct mfs_chunk_map *map;
	const struct mfs_range *r;
	int n, next;		/* next: the first range not below pos */
	/*
	 * The one stripe a raid5/6 copy moves, or -1: read alone when its
	 * device is in service, else rebuilt from all the others
	 */
	int column;
	u64 pos;		/* where the next window is planned from */
	u64 row_bytes, wrows, nrows;
	bool *needed;		/* per stripe: it holds part of the first copy */
	/* window i in win[i % NWIN]: the current one, the next NWIN - 1 read ahead */
	struct src_window win[NWIN];
	int cur;
	pthread_t tid[NWIN];
	bool reading[NWIN];	/* win[k] is being read by tid[k] */
	u8 *scratch;		/* raid5/6: room to rebuild the columns of a row */
	/*
	 * What scratch holds: the row of the window rebuilt last (NULL: none)
	 * - a copy asks for each row twice, for the piece it checks and for
	 * the row it writes, and rebuilds it once
	 */
	const struct src_window *built_w;
	u64 built_row;
};

static void *read_rows(void *arg)
{
	struct src_window *w = arg;

	w->ret = mfs_read_stripe_rows(w->src->map, w->w0, w->w1, w->needed, w->off, w->len,
				      w->bufs, w->errs);
	return NULL;
}

/* The window after the ranges held so far, into w (lo == hi: none left). */
static void plan_window(struct reloc_source *s, struct src_window *w)
{
	const struct mfs_chunk_map *map = s->map;
	u64 start;

	while (s->next < s->n && s->r[s->next].start + s->r[s->next].len <= s->pos)
		s->next++;
	w->lo = w->hi = 0;
	if (s->next == s->n)
		return;
	start = max_t(u64, s->r[s->next].start, s->pos);
	w->w0 = (start - map->logical) / s->row_bytes;
	if (w->w0 >= s->nrows)
		return;
	w->w1 = min_t(u64, w->w0 + s->wrows, s->nrows);
	w->lo = map->logical + w->w0 * s->row_bytes;
	w->hi = map->logical + w->w1 * s->row_bytes;
	s->pos = w->hi;
}

/* Plan the next window into win[k] (free) and start reading it. */
static void read_ahead(struct reloc_source *s, int k)
{
	struct src_window *w = &s->win[k];

	if (s->built_w == w)
		s->built_w = NULL;	/* its rows are read anew */
	plan_window(s, w);
	if (w->lo == w->hi)
		return;
	s->reading[k] = pthread_create(&s->tid[k], NULL, read_rows, w) == 0;
	if (!s->reading[k])
		read_rows(w);
}

/*
 * Reads of window w that a device in service failed: counted against it
 * and logged, once for the window (what it held is read again row by row,
 * or piece by piece, and a failure there is counted again: each is a read
 * the device failed).
 */
static void count_read_errors(struct reloc_source *s, const struct src_window *w)
{
	const struct mfs_chunk_map *map = s->map;
	int st;

	for (st = 0; st < map->num_stripes; st++) {
		struct mfs_device *dev = map->stripes[st].dev;

		if (!w->errs[st] || w->errs[st] == -ENODEV || !mfs_dev_usable(dev))
			continue;
		mfs_dev_count_error(s->fs, dev, MFS_DEV_STAT_READ_ERRS);
		mfs_log(s->fs, "devid %llu (%s): read error while copying chunk %llu (rows %llu-%llu): %s",
			(unsigned long long)dev->devid, dev->path, (unsigned long long)map->logical,
			(unsigned long long)w->w0, (unsigned long long)w->w1 - 1, strerror(-w->errs[st]));
	}
}

/* The next window becomes the current one; the current one's buffers take another. */
static void advance(struct reloc_source *s)
{
	int old = s->cur;

	s->cur = (s->cur + 1) % NWIN;
	if (s->reading[s->cur])
		pthread_join(s->tid[s->cur], NULL);
	s->reading[s->cur] = false;
	if (s->win[s->cur].lo != s->win[s->cur].hi)
		count_read_errors(s, &s->win[s->cur]);
	read_ahead(s, old);
}

/*
 * Which stripes are read: the column alone when one is asked for and its
 * device is in service; else with parity every one (a column that cannot
 * be read is rebuilt from the others); of mirrors, for each part of a
 * row, the first copy in the map's order on a device in service.
 */
static void mark_needed(struct reloc_source *s)
{
	const struct mfs_chunk_map *map = s->map;
	u64 off;
	int i, c;

	if (s->column >= 0 && mfs_dev_usable(map->stripes[s->column].dev)) {
		s->needed[s->column] = true;
		return;
	}
	if (mfs_profile(map->type)->nparity) {
		for (i = 0; i < map->num_stripes; i++)
			s->needed[i] = i != s->column;
		return;
	}
	for (off = 0; off < s->row_bytes; off += map->stripe_len) {
		struct mfs_io_map io;

		if (mfs_map_block(map, map->logical + off, &io))
			continue;
		for (c = 0; c < io.ncopies; c++) {
			if (mfs_dev_usable(map->stripes[io.stripe[c]].dev)) {
				s->needed[io.stripe[c]] = true;
				break;
			}
		}
	}
}

/* w's arrays, and buffers of `rows` rows for the stripes `needed` says (NULL: all). */
static int alloc_window(struct reloc_source *s, struct src_window *w, u64 rows,
			const bool *needed)
{
	int n = s->map->num_stripes, i;

	w->src = s;
	w->needed = needed;
	w->off = calloc(n, sizeof(*w->off));
	w->len = calloc(n, sizeof(*w->len));
	w->errs = calloc(n, sizeof(*w->errs));
	w->bufs = calloc(n, sizeof(*w->bufs));
	if (!w->off || !w->len || !w->errs || !w->bufs)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		if ((!needed || needed[i]) &&
		    !(w->bufs[i] = mfs_io_alloc_bulk(rows * s->map->stripe_len)))
			return -ENOMEM;
	return 0;
}

static void free_window(const struct reloc_source *s, struct src_window *w)
{
	int i;

	for (i = 0; w->bufs && i < s->map->num_stripes; i++)
		free(w->bufs[i]);
	free(w->bufs);
	free(w->off);
	free(w->len);
	free(w->errs);
}

int rs_source_open(struct mfs_fs_info *fs, const struct mfs_chunk_map *map,
		   const struct mfs_range *r, int n, u64 from, int column, struct reloc_source **out)
{
	struct reloc_source *s = calloc(1, sizeof(*s));
	int ret = -ENOMEM, i, k = 0;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->fs = fs;
	s->map = map;
	s->r = r;
	s->n = n;
	s->column = column;
	s->pos = max_t(u64, from, map->logical);
	s->row_bytes = (u64)mfs_nr_data_stripes(map->type, map->num_stripes) * map->stripe_len;
	s->nrows = map->length / s->row_bytes;
	s->needed = calloc(map->num_stripes, sizeof(*s->needed));
	if (s->needed) {
		mark_needed(s);
		for (i = 0; i < map->num_stripes; i++)
			k += s->needed[i];
		s->wrows = max_t(u64, 1, min_t(u64, SOURCE_WINDOW, SOURCE_MAX / max_t(int, k, 1)) /
					 map->stripe_len);
		ret = 0;
		for (i = 0; i < NWIN && !ret; i++)
			ret = alloc_window(s, &s->win[i], s->wrows, s->needed);
	}
	if (!ret && mfs_profile(map->type)->nparity &&
	    !(s->scratch = mfs_io_alloc_bulk(mfs_profile(map->type)->nparity * map->stripe_len)))
		ret = -ENOMEM;
	if (ret) {
		rs_source_close(s);
		return ret;
	}
	/* the current window is empty: the first read moves on to win[0] */
	s->cur = NWIN - 1;
	for (i = 0; i < NWIN - 1; i++)
		read_ahead(s, i);
	*out = s;
	return 0;
}

void rs_source_close(struct reloc_source *s)
{
	int k;

	if (!s)
		return;
	for (k = 0; k < NWIN; k++)
		if (s->reading[k])
			pthread_join(s->tid[k], NULL);
	for (k = 0; k < NWIN; k++)
		free_window(s, &s->win[k]);
	free(s->needed);
	free(s->scratch);
	free(s);
}

u64 rs_source_span(struct reloc_source *s, u64 logical)
{
	struct src_window *w = &s->win[s->cur];

	while (logical >= w->hi && s->win[(s->cur + 1) % NWIN].lo != s->win[(s->cur + 1) % NWIN].hi) {
		advance(s);
		w = &s->win[s->cur];
	}
	if (w->lo == w->hi || logical < w->lo || logical >= w->hi)
		return 0;
	return w->hi - logical;
}

/*
 * raid5/6: the columns of a row of window w, in column order
 * (data, P, Q) into blocks; those that could not be read (or were not)
 * rebuilt into s->scratch. 0, or 1 when more failed than parity makes up
 * for.
 */
static int row_blocks(struct reloc_source *s, const struct src_window *w, u64 row, void **blocks)
{
	const struct mfs_chunk_map *map = s->map;
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	int n = map->num_stripes, failed[2], nfailed = 0, col, k;

	for (col = 0; col < n; col++) {
		int st = mfs_row_stripe(map, row, col);

		if (w->errs[st] || !w->bufs[st]) {
			if (nfailed == a->nparity)
				return 1;
			blocks[col] = s->scratch + nfailed * map->stripe_len;
			failed[nfailed++] = col;
			continue;
		}
		blocks[col] = w->bufs[st] + (row - w->w0) * map->stripe_len;
	}
	if (!nfailed || (w == s->built_w && row == s->built_row))
		return 0;
	/* a window of the copy's own is remembered; one read for a row alone is not */
	s->built_w = NULL;
	if (mfs_raid56_rebuild(n - a->nparity, a->nparity, map->stripe_len, blocks, nfailed, failed))
		return 1;
	for (k = 0; k < NWIN; k++) {
		if (w == &s->win[k]) {
			s->built_w = w;
			s->built_row = row;
		}
	}
	return 0;
}

/* Where the window holds piece io of logical (len bytes in one stripe unit); NULL: nowhere. */
static const u8 *held_at(struct reloc_source *s, const struct mfs_io_map *io, u64 logical)
{
	const struct mfs_chunk_map *map = s->map;
	const struct src_window *w = &s->win[s->cur];
	int c, st;

	if (mfs_profile(map->type)->nparity) {
		void *blocks[map->num_stripes];

		st = io->stripe[0];
		if (w->bufs[st] && !w->errs[st])
			return w->bufs[st] + (io->physical[0] - map->stripes[st].physical - w->off[st]);
		if (row_blocks(s, w, io->row, blocks))
			return NULL;
		return (const u8 *)blocks[io->data_index] +
		       (logical - map->logical) % map->stripe_len;
	}
	for (c = 0; c < io->ncopies; c++) {
		st = io->stripe[c];
		if (s->needed[st] && !w->errs[st])
			return w->bufs[st] + (io->physical[c] - map->stripes[st].physical - w->off[st]);
	}
	return NULL;
}

int rs_source_read(struct reloc_source *s, u64 logical, u64 len, u8 *buf)
{
	u64 pos, n;

	if (!s || rs_source_span(s, logical) < len || s->win[s->cur].ret)
		return 1;
	for (pos = logical; pos < logical + len; pos += n) {
		struct mfs_io_map io;
		const u8 *p;

		if (mfs_map_block(s->map, pos, &io))
			return 1;
		n = min_t(u64, io.length, logical + len - pos);
		p = held_at(s, &io, pos);
		if (!p)
			return 1;
		memcpy(buf + (pos - logical), p, n);
	}
	return 0;
}

/* The row's columns (blocks, in column order) into slots, by stripe (NULL: not wanted). */
static void put_row(const struct mfs_chunk_map *map, u64 row, void **blocks, u8 **slots)
{
	int col;

	for (col = 0; col < map->num_stripes; col++) {
		u8 *to = slots[mfs_row_stripe(map, row, col)];

		if (to)
			memcpy(to, blocks[col], map->stripe_len);
	}
}

/*
 * Row `row` read whole from the disks alone, past the windows (a row they
 * do not hold: a tree block reaching past one; a column read alone that
 * failed there), into slots.
 */
static int fill_row_alone(struct reloc_source *s, u64 row, u8 **slots)
{
	struct src_window t = { .w0 = row, .w1 = row + 1 };
	void *blocks[s->map->num_stripes];
	int ret = alloc_window(s, &t, 1, NULL);

	if (!ret) {
		read_rows(&t);
		count_read_errors(s, &t);
		ret = t.ret ? t.ret : row_blocks(s, &t, row, blocks);
	}
	if (!ret)
		put_row(s->map, row, blocks, slots);
	free_window(s, &t);
	return ret ? 1 : 0;
}

int rs_source_fill_row(struct reloc_source *s, u64 row, u8 **slots)
{
	const struct mfs_chunk_map *map = s->map;
	const struct src_window *w = &s->win[s->cur];
	void *blocks[map->num_stripes];

	if (!mfs_profile(map->type)->nparity)
		return 1;
	if (w->lo == w->hi || w->ret || row < w->w0 || row >= w->w1)
		return fill_row_alone(s, row, slots);
	/* the column read alone; rebuilt from the others when not read */
	if (s->column >= 0 && w->bufs[s->column]) {
		if (w->errs[s->column])
			return fill_row_alone(s, row, slots);
		memcpy(slots[s->column], w->bufs[s->column] + (row - w->w0) * map->stripe_len,
		       map->stripe_len);
		return 0;
	}
	/* a window read failed somewhere: this row read again alone may not */
	if (row_blocks(s, w, row, blocks))
		return fill_row_alone(s, row, slots);
	put_row(map, row, blocks, slots);
	return 0;
}
