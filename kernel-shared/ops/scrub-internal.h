/*
 * The scrub's reads without fs->lock (scrub-read.c): a step's extents,
 * planned under the lock, are read here in large windows of every stripe,
 * one reader per device, and checked in memory; what does not check out
 * is looked at again under the lock by scrub.c, which counts and repairs.
 */
#ifndef MFS_SCRUB_INTERNAL_H
#define MFS_SCRUB_INTERNAL_H

#include "kernel-shared/tree/ctree.h"

struct scrub_batch {
	const struct mfs_chunk_map *map;
	u64 gen;		/* extents of later transactions are left alone */
	const struct mfs_range *r;	/* the step's extents, in order */
	int n;
	u8 **csums;		/* per data extent: its checksums, NULL: none to check */
	u8 **suspect;		/* per data extent: per sector 1 = check again; NULL: none */
	bool *tree_ok;		/* per tree block: every copy read matched its header */
	/* raid5/6: the rows from row0 on, 1 where the parity read matched the data read */
	u64 row0, nrows;
	u8 *row_ok;
};

/* The read buffers, kept from step to step: two sets, a buffer per stripe. */
struct scrub_buf_set {
	int n;
	u64 bytes;	/* of each buffer, 0 while they are not all there */
	u8 **buf;
};
struct scrub_bufs {
	struct scrub_buf_set set[2];
};
void mfs_scrub_bufs_free(struct scrub_bufs *sb);

/*
 * Read and check every extent of b (b->map, r, n, gen, csums set by the
 * caller; the rest filled here), in the buffers of sb. Called with
 * map_lock held shared and without fs->lock. Returns 0 or -ENOMEM; read
 * errors make suspects.
 */
int mfs_scrub_batch_read(struct mfs_fs_info *fs, struct scrub_batch *b, struct scrub_bufs *sb);
/* Free what mfs_scrub_batch_read and the caller's csums hold (not r). */
void mfs_scrub_batch_free(struct scrub_batch *b);
/* Was row of b's chunk read whole with its parity matching its data? */
bool mfs_scrub_batch_row_ok(const struct scrub_batch *b, const struct mfs_chunk_map *map, u64 row);

#endif
