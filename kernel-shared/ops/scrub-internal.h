/*
 * The scrub's reads without fs->lock (scrub-read.c): a step's extents,
 * planned under the lock, are read here in large windows of every stripe,
 * one reader per device, and checked in memory; what does not check out
 * is looked at again under the lock by scrub.c, which counts and repairs.
 */
#ifndef MFS_SCRUB_INTERNAL_H
#define MFS_SCRUB_INTERNAL_H

#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/format/ioctl.h"

struct mfs_trans_handle;

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

#define SCRUB_MAX_INOS	MFS_SCRUB_FILES_MAX	/* files named in the status */

struct scrub_ino {
	u64 ino;
	bool uncorrectable;
};

struct mfs_scrub {
	struct mfs_ioctl_scrub_status st;
	/* set under fs->lock; a throttled scrub's sleep polls them without it (atomic) */
	volatile int pause_req, cancel_req;
	u64 run_start_ns;		/* CLOCK_MONOTONIC when this run started */
	u64 elapsed_before;		/* scrubbing time of the earlier runs */
	/* --limit: each device's bytes and the time when the rate is measured from */
	u64 thr_start_ns;
	u64 thr_dev_bytes[MFS_SCRUB_MAX_DEVS];
	int limit_changed;		/* a sleeping scrub wakes to the new limit */
	/* raid5/6: the last row met, its parity checked once its extents are */
	u64 row_bg;			/* start of its block group, 0: none */
	u64 row;
	bool row_data_bad;		/* report only: its data is bad, parity unjudged */
	u64 degraded_bg;		/* the last block group reported degraded */
	struct scrub_ino inos[SCRUB_MAX_INOS];	/* files hit, not named yet */
	int nr_inos;
	bool files_dirty;		/* inos changed since they were saved */
	size_t files_used;
	u64 committed_at;		/* bytes_done when the item was last committed */
	/* the progress shown is what a commit holds: a crash never takes it back */
	u64 written_gen;		/* the transaction the item was last written in */
	u64 written_bytes;		/* the bytes_done it says */
	u64 durable_bytes;		/* bytes_done of the last commit known to hold it */
	/* paused by an unmount or stopped by a crash, not by the admin */
	bool interrupted;
	const struct scrub_batch *batch;	/* the step's reads, while it is judged */
	struct scrub_bufs bufs;			/* their buffers, kept for the run */
};


/* One line of st.files; lines that do not fit are dropped. */
void mfs_scrub_add_line(struct mfs_scrub *sc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* scrub-files.c: the files hit */
/* A file that had a bad copy (uncorrectable: none good), to name at the end. */
void mfs_scrub_note_ino(struct mfs_scrub *sc, u64 ino, bool uncorrectable);
/*
 * The files hit, as "U path" / "C path" lines; called without fs->lock.
 * Up to SCRUB_MAX_INOS files are named (the counts cover them all).
 */
void mfs_scrub_name_files(struct mfs_fs_info *fs, struct mfs_scrub *sc);
/* The files not named yet into trans when they changed (format: scrub files item). */
int mfs_scrub_files_save(struct mfs_trans_handle *trans, struct mfs_scrub *sc);
/* The files the last run saved (fs->lock held); -EUCLEAN: a bad item, none taken. */
int mfs_scrub_files_load(struct mfs_fs_info *fs, struct mfs_scrub *sc);

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
