/*
 * The in-memory state of an open filesystem that every layer from the
 * volumes up shares: devices, chunk maps, block groups and struct
 * mfs_fs_info, which also holds the upper layers' state (tree roots, the
 * buffer cache, the running transaction, the restripe) by pointers to
 * types those layers define.
 */
#ifndef MFS_FS_H
#define MFS_FS_H

#include <pthread.h>
#include "kernel-shared/format/kerncompat.h"
#include "kernel-shared/format/format.h"
#include "kernel-shared/block/io.h"

struct mfs_fs_info;
struct mfs_root;
struct extent_buffer;
struct mfs_transaction;
struct mfs_open_row;
struct mfs_restripe_status;
struct mfs_scrub;
struct mfs_alloc_policy;

/* ---- devices ---- */
struct mfs_dev_extent_rec {
	u64 physical;
	u64 length;
	u64 chunk_offset;
};

struct mfs_device {
	u64 devid;
	u8 uuid[MFS_UUID_SIZE];
	u64 total_bytes;	/* size the fs uses on it */
	u64 bytes_used;		/* allocated to dev extents */
	u64 flags;		/* MFS_DEV_STATE_* */
	u64 generation;		/* generation of the superblock read from it */
	char *path;		/* NULL when missing */
	struct mfs_io_dev *io;	/* NULL when missing */
	bool missing;
	/*
	 * Failed this mount (a write or flush error, or it vanished): neither
	 * read nor written again until the next mount. Read without fs->lock.
	 */
	bool failed;
	/*
	 * Its errors this mount (mount_errors) went past fs->fail_threshold:
	 * still read and written, but nothing new is allocated on it. Read
	 * without fs->lock.
	 */
	bool failing;
	u64 mount_errors;	/* read, write, flush and corruption errors this mount */
	/*
	 * Its superblock was behind the filesystem's: it may lack what was
	 * written after this generation, so it is read only as a last resort
	 * until it is caught up (0: current).
	 */
	u64 stale_gen;
	bool in_tree;		/* has a device item in the chunk tree */
	bool dirty;		/* device item must be rewritten at commit */
	/*
	 * Its device item goes in at this commit: its own superblock must be
	 * durable before any other superblock names it (transaction.c).
	 */
	bool joining;
	u64 stats[5];		/* error counters (MFS_DEV_STAT_*), persisted at commit */
	bool stats_dirty;
	int reads_in_flight;	/* data reads issued without fs->lock (least-busy copy choice) */
	/* dev extents, sorted by physical */
	struct mfs_dev_extent_rec *extents;
	int nr_extents, max_extents;
};

/* ---- chunk maps ---- */
struct mfs_map_stripe {
	u64 devid;
	u64 physical;
	u8 dev_uuid[MFS_UUID_SIZE];
	struct mfs_device *dev;	/* NULL when the device is missing */
};

struct mfs_chunk_map {
	u64 logical;
	u64 length;
	u64 type;		/* MFS_BLOCK_GROUP_* */
	u64 stripe_len;
	int num_stripes;
	int sub_stripes;
	struct mfs_map_stripe stripes[];
};

/* One piece of a logical range as it lies on the devices. */
#define MFS_MAX_COPIES 4
struct mfs_io_map {
	u64 length;		/* bytes covered, up to the next stripe boundary */
	int ncopies;		/* mirrors holding these bytes */
	int stripe[MFS_MAX_COPIES];	/* stripe index of each copy */
	u64 physical[MFS_MAX_COPIES];
	/* raid5/6 only */
	u64 row;		/* full-stripe row inside the chunk */
	int data_index;		/* data stripe of the row (0..ndata-1) */
	int p_stripe;		/* stripe index holding P, -1 if none */
	int q_stripe;		/* stripe index holding Q, -1 if none */
};

/* ---- block groups and free space ---- */
struct mfs_free_range {
	u64 start;
	u64 len;
};

struct mfs_block_group {
	u64 start;
	u64 length;
	u64 flags;
	u64 used;		/* bytes of extents, as committed + this transaction */
	u64 reserved;		/* allocated, not yet accounted in used */
	u32 inflight;		/* reserved data extents being written without fs->lock */
	bool dirty;		/* item needs rewriting */
	bool ro;		/* takes no new allocations (restripe source) */
	bool new_chunk;		/* chunk/bg items still to be inserted */
	/* below the requested profile, allocated degraded (MFS_BLOCK_GROUP_REDUCED) */
	bool reduced;
	u64 asked;		/* reduced: the profile asked for (0: not recorded) */
	struct mfs_chunk_map *map;
	/* free space, sorted ranges */
	struct mfs_free_range *free;
	int nr_free, max_free;
	/* raid5/6 rows: live bytes per row and whether the row reached disk */
	u64 row_len;
	u64 nr_rows;
	u32 *row_used;
	u8 *row_sealed;
};

/* A used extent of a block group (mfs_bg_used_ranges, alloc.h). */
struct mfs_range {
	u64 start;
	u64 len;
	u64 flags;	/* MFS_EXTENT_FLAG_* */
	u64 owner;	/* tree blocks: tree; data: root */
	u64 level;	/* tree blocks */
	u64 gen;	/* the extent item's generation: a tree block's header must match */
};

/* ---- the filesystem ---- */
#define MFS_OPEN_WRITABLE	(1U << 0)
#define MFS_OPEN_DEGRADED	(1U << 1)
#define MFS_OPEN_NO_EXCL	(1U << 2)	/* do not take the device locks */
#define MFS_OPEN_PARTIAL	(1U << 3)	/* check/dump: tolerate broken trees */
/* change-uuid: members may carry ctl->alt_fsid too; an interrupted change opens */
#define MFS_OPEN_CHANGE_FSID	(1U << 4)

struct mfs_fs_info {
	struct mfs_super_block super;	/* the copy we commit from */
	u8 fsid[MFS_FSID_SIZE];
	u8 metadata_fsid[MFS_FSID_SIZE];	/* in tree blocks and DEV_ITEMs (format §3.8) */
	u32 nodesize;
	u32 sectorsize;
	int csum_type;
	int csum_size;
	unsigned int open_flags;
	u64 generation;			/* last committed */

	struct mfs_device **devices;	/* sorted by devid */
	int nr_devices;

	struct mfs_chunk_map **chunks;	/* sorted by logical */
	int nr_chunks, max_chunks;

	struct mfs_block_group **bgs;	/* sorted by start, one per chunk */
	int nr_bgs, max_bgs;

	struct mfs_root *tree_root;
	struct mfs_root *chunk_root;
	struct mfs_root *extent_root;
	struct mfs_root *dev_root;
	struct mfs_root *fs_root;
	struct mfs_root *csum_root;

	/* buffer cache */
	struct extent_buffer **eb_hash;
	u32 eb_hash_size;
	u64 eb_cached;
	u64 eb_cache_limit;
	struct extent_buffer *lru_head, *lru_tail;

	struct mfs_transaction *running;
	pthread_mutex_t lock;		/* one big lock for tree and alloc state */
	/*
	 * The transaction whose flushes and superblocks are being written
	 * without fs->lock (mfs_commit_transaction_unlocking), NULL when
	 * none. Its end (unpinning what it freed, letting go of its blocks)
	 * is made under fs->lock once its superblocks are written, by its
	 * committer or by the next one who needs it ended.
	 */
	struct mfs_transaction *committing;
	pthread_mutex_t commit_lock;	/* the three below (commit_seq: and fs->lock to change) */
	pthread_cond_t commit_cond;
	u64 commit_seq;			/* the last commit let go of fs->lock */
	u64 commit_done_seq;		/* the last whose superblocks are written */
	int commit_ret;			/* how */
	/*
	 * File data I/O that runs without fs->lock (reads, and writes into
	 * reserved extents) holds map_lock shared, taken while fs->lock is
	 * still held; whoever changes the chunk map array or retires a map
	 * holds fs->lock and takes map_lock exclusive. A holder of map_lock
	 * never waits for fs->lock, so the order is always lock -> map_lock.
	 */
	pthread_rwlock_t map_lock;
	pthread_cond_t inflight_done;	/* a block group's inflight dropped to 0 */

	/* allocation policy */
	u64 data_profile;		/* profile new data chunks get */
	u64 metadata_profile;
	u64 system_profile;
	u64 incompat_flags;

	/* set when a commit fails: nothing more is written */
	int fatal_error;
	struct extent_buffer *aborted;	/* blocks of the failed transaction, kept readable */

	/* raid5/6 open rows waiting for their parity write */
	struct mfs_open_row *open_rows;
	/*
	 * A raid5/6 row reached the disk (its logical start): set by the
	 * allocator (mfs_seal_row), which must not reuse its free parts.
	 */
	void (*row_sealed)(struct mfs_fs_info *fs, u64 logical);

	/* the filesystem layer (inode.c) */
	u64 next_ino;
	int compress;			/* 0 none, else zlib level 1..9 */
	u64 read_devid;			/* read_policy=devid:N: copies there first; 0 none */
	/*
	 * The caller keeps mtime/ctime of written files itself (the FUSE
	 * writeback cache sends them with SETATTR); a write leaves them alone,
	 * or it could stamp a time later than the one the kernel set.
	 */
	int caller_times;
	u64 dev_stats_dirty;		/* device error counters changed */
	/*
	 * A device with more errors than this in one mount is failing
	 * (mount option fail_threshold; 0: never).
	 */
	u64 fail_threshold;

	/* balance/convert/delete/resize in progress (restripe.c) */
	struct mfs_restripe_status *restripe;
	/* the scrub running, paused or last run (ops/scrub.c; one flat allocation) */
	struct mfs_scrub *scrub;
	/* what it tells the allocator (alloc.h), NULL: nothing */
	const struct mfs_alloc_policy *alloc_policy;

	/*
	 * Where the engine's messages go (it never prints): a device that
	 * failed, a copy repaired. NULL: dropped.
	 */
	void (*log)(void *arg, const char *msg);
	void *log_arg;
	/*
	 * A member failed or went failing (called with log_arg, any lock
	 * may be held: it must only wake someone). NULL: nobody listens.
	 */
	void (*dev_failed)(void *arg);
	/*
	 * Every device must take every write (mkfs): a failing one fails the
	 * operation instead of leaving the filesystem without it.
	 */
	bool strict_io;

	/* MFS_OPEN_PARTIAL: what could not be loaded, for check to report */
	char **problems;
	int nr_problems;
};

/* Hand a message to fs->log. */
void mfs_log(struct mfs_fs_info *fs, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Record a problem found while opening with MFS_OPEN_PARTIAL. */
void mfs_note_problem(struct mfs_fs_info *fs, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
