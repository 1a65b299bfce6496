/*
 * The restriper (DESIGN §5): one engine for balance, convert, device
 * delete, shrink and replace. Chunks are copied to a new layout and swapped in
 * place, so logical addresses never change; progress is persisted.
 */
#ifndef MFS_RESTRIPE_H
#define MFS_RESTRIPE_H

#include "kernel-shared/tree/ctree.h"

struct mfs_balance_filter {
	u32 flags;		/* MFS_BALANCE_ARGS_* */
	u64 profiles;		/* profile bits, MFS_AVAIL_ALLOC_BIT_SINGLE for single */
	u64 usage_min, usage_max;
	u64 devid;
	u64 pstart, pend;
	u64 vstart, vend;
	u64 target;		/* convert: profile bits, MFS_AVAIL_ALLOC_BIT_SINGLE for single */
	u64 limit_min, limit_max;
	u32 stripes_min, stripes_max;
};

struct mfs_restripe_args {
	int op;			/* MFS_RESTRIPE_OP_* */
	u64 flags;		/* MFS_BALANCE_DATA | METADATA | SYSTEM | FORCE */
	struct mfs_balance_filter data, meta, sys;
	u64 devids[MFS_RESTRIPE_MAX_DEVIDS];
	int nr_devids;
	u64 new_size;
	u64 old_size;		/* resize: set by the engine at start, for cancel */
};

enum mfs_restripe_state {
	MFS_RESTRIPE_NONE,
	MFS_RESTRIPE_RUNNING,
	MFS_RESTRIPE_PAUSED,
};

struct rs_reloc;

/* What a running or paused operation reports (fs->restripe). */
struct mfs_restripe_status {
	int state;
	struct mfs_restripe_args args;
	u64 expected;		/* chunks selected */
	u64 considered;
	u64 completed;		/* chunks relocated */
	u64 bytes_total;	/* used bytes in the selected chunks */
	u64 bytes_done;		/* never more than is on disk: a crash takes nothing back */
	u64 bytes_pending;	/* moved in the running transaction, counted once committed */
	u64 cursor;
	u64 start_ns;		/* CLOCK_MONOTONIC when this run started */
	u64 bytes_at_start;	/* bytes_done when this run started (rate) */
	/*
	 * Set under fs->lock by whoever asks; the restriper polls them
	 * without it between pieces and chunks: the accesses without the
	 * lock are atomic.
	 */
	volatile int pause_req;
	volatile int cancel_req;
	int last_result;
	u64 operation;		/* counts operations begun while open (a run stays with its own) */
	u64 start_time;		/* wall clock (seconds) when the operation started; persisted */
	u64 cancel_progress;	/* replace: tenths of a percent done when cancelled; persisted */
	u64 read_errs;		/* replace: ranges no copy could give */
	u64 write_errs;		/* replace: failed writes to the target */
	struct rs_reloc *reloc;	/* the chunk whose copy stopped at a checkpoint, or NULL */
	/* the last replace that ended (the replace item, format §7.1) */
	struct {
		int outcome;	/* MFS_REPLACE_* */
		u64 start_time, end_time, progress;	/* progress: tenths of a percent */
		u64 write_errs, read_errs;
		/* the last hot spare taken since the open: when, for whom, which */
		u64 spare_time, spare_src, spare_devid;
	} last_replace;
};

/* FINISHED and CANCELED as the replace item says them (format §7.1) */
#define MFS_REPLACE_NEVER	0
#define MFS_REPLACE_FINISHED	MFS_REPLACE_ITEM_FINISHED
#define MFS_REPLACE_CANCELED	MFS_REPLACE_ITEM_CANCELED

/* Convert a profile bit mask for filters (single has no bg bit). */
static inline u64 mfs_profile_to_filter_bit(u64 profile)
{
	return profile ? profile : MFS_AVAIL_ALLOC_BIT_SINGLE;
}

static inline u64 mfs_filter_bit_to_profile(u64 bit)
{
	return bit == MFS_AVAIL_ALLOC_BIT_SINGLE ? 0 : bit;
}

/* Load a persisted operation at open: it is then paused until resumed. */
int mfs_restripe_load(struct mfs_fs_info *fs);
/*
 * Check and persist a new operation (state becomes RUNNING); then
 * mfs_restripe_run does the work. Errors that refuse the operation leave
 * the filesystem untouched; msg explains (for the command to print).
 */
int mfs_restripe_start(struct mfs_fs_info *fs, const struct mfs_restripe_args *args,
		       char *msg, size_t msglen);
/*
 * Relocate every selected chunk. Returns 0 when done, -EINTR when paused
 * (state kept on disk), -ECANCELED when cancelled, -errno on failure
 * (state kept, paused).
 */
int mfs_restripe_run(struct mfs_fs_info *fs);
/*
 * The convert that brings the chunks written reduced (degraded) back to
 * their profile, into *next, when there are such chunks and the devices
 * usable now allow it and it fits; false otherwise.
 */
bool mfs_restripe_reduced_pending(struct mfs_fs_info *fs, struct mfs_restripe_args *next);
/*
 * With every member usable and nothing else running: that convert started
 * (1, then mfs_restripe_run runs it), 0 when there is nothing to do.
 */
int mfs_restripe_start_reduced(struct mfs_fs_info *fs);
/* A paused operation becomes RUNNING again (then call mfs_restripe_run). */
int mfs_restripe_resume(struct mfs_fs_info *fs);
/*
 * Whether devid's extent at physical is a stripe of the new layout of a
 * chunk copied part of the way (format: BALANCE_CHUNK): taken on the
 * device in memory, not a device extent on disk yet.
 */
bool mfs_restripe_taken_stripe(struct mfs_fs_info *fs, u64 devid, u64 physical);
/* Empty data chunks back to the unallocated pool (takes fs->lock). */
int mfs_remove_unused_chunks(struct mfs_fs_info *fs);

/*
 * Whether the restripe in progress (running or paused) will move bg, which
 * it has not reached yet, to the layout its filters give: then bg may take
 * new extents of the target profile whatever its own, since they get the
 * target layout when it moves. Only static filters count (not usage=,
 * limit=).
 */
bool mfs_restripe_will_move(struct mfs_fs_info *fs, const struct mfs_block_group *bg);

/*
 * The stripe size for a new chunk of flags (tree blocks) while a convert of
 * its type is in progress, 0 for the usual policy: small, since it only
 * bridges the copy of the last chunk to convert - a full-size one on top
 * of the chunks' new layouts would refuse a convert that fits.
 */
#define MFS_CONVERT_TREE_CHUNK_STRIPE	(32ULL * 1024 * 1024)
u64 mfs_restripe_new_chunk_stripe(struct mfs_fs_info *fs, u64 flags);
/* Cancel a paused one (a running one: set cancel_req). */
int mfs_restripe_cancel_paused(struct mfs_fs_info *fs);

/* --dry-run: chunks and bytes that would move and whether it fits. */
struct mfs_restripe_estimate {
	u64 chunks;
	u64 bytes;		/* used bytes moved */
	u64 raw_needed;		/* raw space the new layouts take */
	u64 raw_available;	/* unallocated raw space usable for them */
	u64 stuck_logical;	/* !fits: the first chunk that finds no room */
	bool fits;
	bool holes_too_small;	/* !fits although the sums do: free space too scattered */
	/*
	 * Data of chunks with no room for a new layout, to be moved into other
	 * chunks instead: how much, the room for it, and whether that is why
	 * it does not fit.
	 */
	struct mfs_restripe_evac_estimate {
		u64 needed, available;
		bool short_of_room;
	} evac;
};
/*
 * The refusals that do not depend on space (too few devices for a target
 * profile, metadata losing redundancy without force, a delete below a
 * profile's minimum, a bad shrink), with the reason in msg; 0 when none.
 */
int mfs_restripe_check_args(struct mfs_fs_info *fs, const struct mfs_restripe_args *args,
			    char *msg, size_t msglen);
int mfs_restripe_estimate(struct mfs_fs_info *fs, const struct mfs_restripe_args *args,
			  struct mfs_restripe_estimate *est);

/*
 * Replace (DESIGN §5): every stripe on device src moves to the device at
 * path, which joins as a new member (REPLACE_TARGET); at the end src
 * leaves. flags: MFS_BALANCE_REPLACE_READ_OTHERS or 0; discard: TRIM the
 * target once it passed the checks. Checks and
 * persists (state RUNNING); then mfs_restripe_run does the work. Refusals
 * change nothing; msg says why.
 */
int mfs_replace_start(struct mfs_fs_info *fs, const char *path, u64 src, u64 flags,
		      bool discard, char *msg, size_t msglen);

/* Device add (online and offline); the device must be unused. */
/* flags: MFS_DEV_STATE_SPARE for a hot spare (-ENOSPC when it could not replace every member). */
int mfs_device_add(struct mfs_fs_info *fs, const char *path, u64 flags, u64 *devid);
/*
 * A member missing or failing that a hot spare can replace, and the
 * spare (the smallest that holds it): true when a replace should start.
 */
bool mfs_spare_wanted(struct mfs_fs_info *fs, u64 *srcid, u64 *spareid);
/* Start the replace of srcid by the spare spareid (then mfs_restripe_run). */
int mfs_replace_start_spare(struct mfs_fs_info *fs, u64 srcid, u64 spareid);
/* Grow a device to new_size (shrinking goes through the restriper). */
int mfs_device_grow(struct mfs_fs_info *fs, u64 devid, u64 new_size);

/*
 * Move every data extent out of bg (already read-only, its pending writes
 * committed) into other chunks, as new data is placed, and point the files
 * at the copies. progress(trans, bytes, arg) is called in the transaction
 * that moves each extent, with its bytes (an error aborts it), and with
 * trans NULL after each commit evacuate makes: what it was told is on disk.
 * Called with fs->lock held; drops it between extents. 0 once bg is
 * empty (commits included).
 */
struct mfs_block_group;
typedef int (*mfs_evacuate_progress)(struct mfs_trans_handle *trans, u64 bytes, void *arg);
int mfs_evacuate_block_group(struct mfs_fs_info *fs, struct mfs_block_group *bg,
			     mfs_evacuate_progress progress, void *arg);

#endif
