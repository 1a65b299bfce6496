/*
 * The writer of a relocation's copy (relocate.c): the new layout is built
 * in memory a window of rows at a time - a row gives each stripe
 * stripe_len bytes at the same place, so a window is one large write per
 * stripe, bypassing the page cache - with raid5/6 parity computed per
 * row. A thread writes one window while the next is filled.
 */
#ifndef MFS_CHUNK_WRITER_H
#define MFS_CHUNK_WRITER_H

#include <pthread.h>
#include "kernel-shared/tree/ctree.h"

struct window {
	u8 *buf;		/* per stripe, rows_max * stripe_len bytes */
	u64 row0, rows;		/* holds rows [row0, row0 + rows) */
	bool all;		/* a row not filled: every stripe written, kept ones too */
};

struct chunk_writer {
	struct mfs_fs_info *fs;
	struct mfs_chunk_map *map;
	u64 rows_max;		/* rows per window */
	struct window win[2];
	int cur;		/* the window being filled */
	struct window *writing;	/* the other one, while the thread writes it */
	const u8 *keep;		/* per stripe: already holds the data, not written (or NULL) */
	/*
	 * With parity and stripes kept: a row as it is on disk before the
	 * ranges are placed in it, so that the parity written agrees with
	 * what the kept stripes hold where no range is (0: filled).
	 */
	int (*fill)(void *arg, u64 row, u8 **slots);
	void *fill_arg;
	/*
	 * The fill gives the parts of the stripes written as they are to be
	 * (a replace's column copied): no parity is computed, and a row it
	 * cannot give is an error, never a row written anew. The slots of
	 * the kept stripes are then NULL: nothing of them is written.
	 */
	bool as_filled;
	pthread_t thread;
	int ret;		/* of the last window written */
	u64 unflushed;		/* bytes per stripe written since the last flush */
};

/* Wait for the window being written; its result. */
int cw_wait(struct chunk_writer *w);
/* Hand the filled window to a thread (or write it here) and start the other. */
int cw_flush(struct chunk_writer *w);
/*
 * Place logical [logical, +len) of the new layout. Rows come in order;
 * a row is never split between windows, and rows left out (no data) are
 * not written at all. Bytes of a row that no range covers are zeros, or
 * what the fill gives. buf NULL: the rows are written, their bytes as the
 * fill gives them.
 */
int cw_put(struct chunk_writer *w, u64 logical, const u8 *buf, u64 len);
/*
 * For a checkpoint: every row below `row` written (and waited for); the
 * row itself, when it is the one being filled, stays to be filled on.
 */
int cw_settle(struct chunk_writer *w, u64 row);
/*
 * Flush the devices the new layout maps write (stripes not kept), in
 * parallel; a failure is counted against its device and logged.
 */
int rs_flush_written(struct mfs_fs_info *fs, struct mfs_chunk_map **maps, int nmaps,
		     const u8 *keep);

#endif
