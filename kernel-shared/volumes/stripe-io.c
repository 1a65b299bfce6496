/*
 * Whole stretches of a chunk's stripes read at once, one reader thread per
 * device: the scrub's large sequential reads (DESIGN §6).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/uio.h>
#include "kernel-shared/volumes/fs.h"
#include "kernel-shared/volumes/volumes.h"

/* The stripes of one device, read one after the other. */
struct dev_reader {
	struct mfs_device *dev;
	const struct mfs_chunk_map *map;
	const u64 *off, *len;
	u8 **bufs;
	int *errs;
};

static void *dev_reader_run(void *arg)
{
	struct dev_reader *r = arg;
	int s;

	__atomic_add_fetch(&r->dev->reads_in_flight, 1, __ATOMIC_RELAXED);
	for (s = 0; s < r->map->num_stripes; s++) {
		struct iovec iov = { r->bufs[s], r->len[s] };

		if (r->map->stripes[s].dev != r->dev || !r->len[s])
			continue;
		r->errs[s] = mfs_io_rw_vec_direct(r->dev->io, &iov, 1,
						  r->map->stripes[s].physical + r->off[s], false);
	}
	__atomic_sub_fetch(&r->dev->reads_in_flight, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* The reader of dev in rd[0..*n), added when it is new. */
static struct dev_reader *reader_of(struct dev_reader *rd, int *n, struct mfs_device *dev)
{
	int i;

	for (i = 0; i < *n; i++)
		if (rd[i].dev == dev)
			return &rd[i];
	rd[*n].dev = dev;
	return &rd[(*n)++];
}

int mfs_read_stripes(const struct mfs_chunk_map *map, const u64 *off, const u64 *len,
		     u8 **bufs, int *errs)
{
	int ns = map->num_stripes, nr = 0, s, i;
	struct dev_reader *rd;
	pthread_t *tid;
	bool *started;

	rd = calloc(ns, sizeof(*rd));
	tid = calloc(ns, sizeof(*tid));
	started = calloc(ns, sizeof(*started));
	if (!rd || !tid || !started) {
		free(rd);
		free(tid);
		free(started);
		return -ENOMEM;
	}
	for (s = 0; s < ns; s++) {
		struct dev_reader *r;

		errs[s] = 0;
		if (!len[s])
			continue;
		if (!mfs_dev_usable(map->stripes[s].dev)) {
			errs[s] = -ENODEV;
			continue;
		}
		r = reader_of(rd, &nr, map->stripes[s].dev);
		r->map = map;
		r->off = off;
		r->len = len;
		r->bufs = bufs;
		r->errs = errs;
	}
	for (i = 1; i < nr; i++)
		started[i] = pthread_create(&tid[i], NULL, dev_reader_run, &rd[i]) == 0;
	if (nr)
		dev_reader_run(&rd[0]);
	for (i = 1; i < nr; i++) {
		if (started[i])
			pthread_join(tid[i], NULL);
		else
			dev_reader_run(&rd[i]);
	}
	free(rd);
	free(tid);
	free(started);
	return 0;
}

int mfs_read_stripe_rows(const struct mfs_chunk_map *map, u64 w0, u64 w1, const bool *needed,
			 u64 *off, u64 *len, u8 **bufs, int *errs)
{
	int s;

	for (s = 0; s < map->num_stripes; s++) {
		off[s] = w0 * map->stripe_len;
		len[s] = !needed || needed[s] ? (w1 - w0) * map->stripe_len : 0;
	}
	return mfs_read_stripes(map, off, len, bufs, errs);
}
