/*
 * The writer of a relocation's copy: windows of rows of the new layout,
 * parity per row, written by a thread while the next window fills
 * (chunk-writer.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/block/raid56.h"
#include "kernel-shared/ops/chunk-writer.h"

/* Where stripe i's part of row lies in the window. */
static u8 *slot(struct chunk_writer *w, struct window *win, int i, u64 row)
{
	return win->buf + (i * w->rows_max + (row - win->row0)) * w->map->stripe_len;
}

/* P (and Q) of every row of the window, from its data columns. */
static int window_parity(struct chunk_writer *w, struct window *win)
{
	struct mfs_chunk_map *map = w->map;
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	int ndata = map->num_stripes - a->nparity, d, ret = 0;
	u64 slen = map->stripe_len, row;
	void *blocks[map->num_stripes];

	for (row = win->row0; !ret && row < win->row0 + win->rows; row++) {
		struct mfs_io_map io;

		for (d = 0; d < ndata && !ret; d++) {
			ret = mfs_map_block(map, map->logical + (row * ndata + d) * slen, &io);
			blocks[d] = slot(w, win, io.stripe[0], row);
		}
		if (ret)
			break;
		blocks[ndata] = slot(w, win, io.p_stripe, row);
		if (a->nparity > 1)
			blocks[ndata + 1] = slot(w, win, io.q_stripe, row);
		ret = mfs_raid56_gen(ndata, a->nparity, slen, blocks);
	}
	return ret;
}

/* One stripe's part of the window being written: one large write. */
struct stripe_write {
	struct chunk_writer *w;
	int i, ret;
	pthread_t thread;
};

static void *write_stripe_part(void *arg)
{
	struct stripe_write *sw = arg;
	struct chunk_writer *w = sw->w;
	struct window *win = w->writing;
	struct mfs_map_stripe *s = &w->map->stripes[sw->i];
	u64 slen = w->map->stripe_len;

	/*
	 * A stripe of a missing device is one a replace of another device
	 * keeps where it was (new layouts place nothing on missing devices):
	 * it cannot be written, and a device that comes back is caught up for
	 * this chunk (its dev extent is newer than the device's superblock).
	 */
	if (!s->dev) {
		sw->ret = 0;
		return NULL;
	}
	sw->ret = s->dev->io ?
		  mfs_io_write_direct(s->dev->io, slot(w, win, sw->i, win->row0), win->rows * slen,
				      s->physical + win->row0 * slen) : -EIO;
	return NULL;
}

/*
 * The devices the writer writes (stripes not kept), flushed in parallel.
 * Every RESTRIPE_FLUSH_EVERY bytes per stripe, so that no flush has a
 * whole chunk to write back: while a device flushes, every other request
 * to it waits (a loop device syncs its backing file), a user's file write
 * included. The flush when the copy ends (copy_pieces) and the commit's
 * then find little left.
 */
#define RESTRIPE_FLUSH_EVERY	(32 * SZ_1M)

int rs_flush_written(struct mfs_fs_info *fs, struct mfs_chunk_map **maps, int nmaps,
			 const u8 *keep)
{
	int m, i, j, n = 0, total = 0, ret;

	for (m = 0; m < nmaps; m++)
		total += maps[m]->num_stripes;

	struct mfs_io_dev *io[total ? total : 1];
	struct mfs_device *devs[total ? total : 1];
	int rets[total ? total : 1];

	for (m = 0; m < nmaps; m++)
		for (i = 0; i < maps[m]->num_stripes; i++) {
			struct mfs_device *dev = maps[m]->stripes[i].dev;

			if (!dev || !dev->io || (keep && keep[i]))
				continue;
			for (j = 0; j < n && io[j] != dev->io; j++)
				;
			if (j == n) {
				devs[n] = dev;
				io[n++] = dev->io;
			}
		}
	ret = mfs_flush_io_devices(io, n, rets);
	/* named and counted as a write error is: the operation stops on it */
	for (j = 0; j < n; j++) {
		if (!rets[j])
			continue;
		mfs_dev_count_error(fs, devs[j], MFS_DEV_STAT_FLUSH_ERRS);
		mfs_log(fs, "devid %llu (%s): flush error while moving a chunk onto it: %s",
			(unsigned long long)devs[j]->devid, devs[j]->path, strerror(-rets[j]));
	}
	return ret;
}

/* Parity, then every stripe's part at once: the devices write in parallel. */
static void *write_window(void *arg)
{
	struct chunk_writer *w = arg;
	struct mfs_chunk_map *map = w->map;
	struct stripe_write sw[map->num_stripes];
	bool started[map->num_stripes];
	int i, n = map->num_stripes, ret = 0;

	if (mfs_profile(map->type)->nparity && !w->as_filled)
		ret = window_parity(w, w->writing);
	if (ret)
		n = 0;
	for (i = n - 1; i >= 0; i--) {	/* stripe 0 here, the others in threads */
		sw[i] = (struct stripe_write){ .w = w, .i = i };
		started[i] = false;
		if (w->keep && w->keep[i] && !w->writing->all)
			continue;
		started[i] = i > 0 && !pthread_create(&sw[i].thread, NULL, write_stripe_part, &sw[i]);
		if (!started[i])
			write_stripe_part(&sw[i]);
	}
	for (i = 0; i < n; i++) {
		struct mfs_device *dev = map->stripes[i].dev;

		if (started[i])
			pthread_join(sw[i].thread, NULL);
		if (!sw[i].ret)
			continue;
		/* named and counted: the operation stops on it, the admin sees which */
		if (dev) {
			mfs_dev_count_error(w->fs, dev, MFS_DEV_STAT_WRITE_ERRS);
			mfs_log(w->fs, "devid %llu (%s): write error while moving a chunk onto it: %s",
				(unsigned long long)dev->devid, dev->path, strerror(-sw[i].ret));
		}
		if (!ret)
			ret = sw[i].ret;
	}
	w->unflushed += w->writing->rows * map->stripe_len;
	/* the kept stripes written too are flushed at once: no later flush sees them */
	if (!ret && w->writing->all) {
		ret = rs_flush_written(w->fs, &w->map, 1, NULL);
		w->unflushed = 0;
	}
	if (!ret && w->unflushed >= RESTRIPE_FLUSH_EVERY) {
		ret = rs_flush_written(w->fs, &w->map, 1, w->keep);
		w->unflushed = 0;
	}
	w->ret = ret;
	return NULL;
}

/* Wait for the window being written; its result. */
int cw_wait(struct chunk_writer *w)
{
	if (w->writing) {
		pthread_join(w->thread, NULL);
		w->writing = NULL;
	}
	return w->ret;
}

/* Hand the filled window to a thread (or write it here) and start the other. */
int cw_flush(struct chunk_writer *w)
{
	int ret = cw_wait(w);

	if (ret || !w->win[w->cur].rows)
		return ret;
	w->writing = &w->win[w->cur];
	if (pthread_create(&w->thread, NULL, write_window, w)) {
		write_window(w);
		w->writing = NULL;
	}
	w->cur ^= 1;
	w->win[w->cur].rows = 0;
	w->win[w->cur].all = false;
	return w->writing ? 0 : w->ret;
}

/*
 * Whether stripe i's part of a window is never looked at: a kept mirror
 * (no parity is computed over it, and with no fill nothing makes the
 * window write every stripe). Such a part is neither zeroed nor filled.
 */
static bool slot_unused(const struct chunk_writer *w, int i)
{
	return w->keep && w->keep[i] && !w->fill && !mfs_profile(w->map->type)->nparity;
}

/*
 * A new row of the window: as on disk when the writer fills rows, else
 * zeros. -EIO: the fill must give it and could not.
 */
static int start_row(struct chunk_writer *w, struct window *win, u64 row)
{
	u8 *slots[w->map->num_stripes];
	int i;

	/* as filled, a kept stripe's part is never written: the fill need not give it */
	for (i = 0; i < w->map->num_stripes; i++)
		slots[i] = w->as_filled && w->keep[i] ? NULL : slot(w, win, i, row);
	if (w->fill && !w->fill(w->fill_arg, row, slots))
		return 0;
	if (w->as_filled)
		return -EIO;
	for (i = 0; i < w->map->num_stripes; i++)
		if (!slot_unused(w, i))
			memset(slots[i], 0, w->map->stripe_len);
	if (w->fill)
		win->all = true;
	return 0;
}

/*
 * Place logical [logical, +len) of the new layout. Rows come in order;
 * a row is never split between windows, and rows left out (no data) are
 * not written at all. Bytes of a row that no range covers are zeros, or
 * what the writer's fill gives.
 */
int cw_put(struct chunk_writer *w, u64 logical, const u8 *buf, u64 len)
{
	struct mfs_chunk_map *map = w->map;
	u64 slen = map->stripe_len;

	while (len) {
		struct window *win = &w->win[w->cur];
		struct mfs_io_map io;
		u64 in_stripe, row, cnt;
		int i, ret = mfs_map_block(map, logical, &io);

		if (ret)
			return ret;
		in_stripe = io.physical[0] - map->stripes[io.stripe[0]].physical;
		row = in_stripe / slen;
		cnt = min_t(u64, min_t(u64, len, io.length), slen - in_stripe % slen);
		if (win->rows && row < win->row0 + win->rows - 1)
			return -EINVAL;		/* out of order */
		if (win->rows && (row > win->row0 + win->rows ||
				  (row == win->row0 + win->rows && win->rows == w->rows_max))) {
			ret = cw_flush(w);
			if (ret)
				return ret;
			win = &w->win[w->cur];
		}
		if (!win->rows)
			win->row0 = row;
		if (row == win->row0 + win->rows) {
			ret = start_row(w, win, row);
			if (ret)
				return ret;
			win->rows++;
		}
		for (i = 0; i < io.ncopies && buf; i++)
			if (!slot_unused(w, io.stripe[i]))
				memcpy(slot(w, win, io.stripe[i], row) + in_stripe % slen, buf, cnt);
		logical += cnt;
		buf = buf ? buf + cnt : NULL;
		len -= cnt;
	}
	return 0;
}

/*
 * For a checkpoint: every row below `row` written (and waited for); the
 * row itself, when it is the one being filled, stays to be filled on (a
 * row is written whole, so it is written once it is complete).
 */
int cw_settle(struct chunk_writer *w, u64 row)
{
	struct window *win = &w->win[w->cur], *next = &w->win[w->cur ^ 1];
	int ret = cw_wait(w), i;

	if (ret || !win->rows)
		return ret;
	if (win->row0 + win->rows - 1 < row)
		return cw_flush(w) ?: cw_wait(w);
	if (win->rows == 1)
		return 0;
	next->row0 = row;
	for (i = 0; i < w->map->num_stripes; i++)
		memcpy(slot(w, next, i, row), slot(w, win, i, row), w->map->stripe_len);
	win->rows--;
	ret = cw_flush(w);
	/* cw_flush started the other window empty: it holds the row */
	next->row0 = row;
	next->rows = 1;
	next->all = win->all;
	return ret ?: cw_wait(w);
}
