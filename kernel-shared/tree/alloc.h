/* Block groups, free space, extent allocation and delayed back-references. */
#ifndef MFS_ALLOC_H
#define MFS_ALLOC_H

#include "kernel-shared/tree/ctree.h"

/*
 * What an operation that moves chunks (the restriper, ops/restripe.c) tells
 * the allocator, which never calls up into it. The operation installs its
 * policy in fs->alloc_policy; each function is called with fs->lock held.
 */
struct mfs_alloc_policy {
	/* bg lies ahead of the operation: it is still to be reached */
	bool (*ahead)(struct mfs_fs_info *fs, const struct mfs_block_group *bg);
	/* bg is ahead and will get a new layout (any profile may go into it) */
	bool (*will_move)(struct mfs_fs_info *fs, const struct mfs_block_group *bg);
	/* the stripe size a new chunk of flags gets (0: the usual one) */
	u64 (*new_chunk_stripe)(struct mfs_fs_info *fs, u64 flags);
	/* the operation's memory besides fs->restripe, freed with the filesystem */
	void (*release)(struct mfs_fs_info *fs);
};

int mfs_add_block_group(struct mfs_fs_info *fs, struct mfs_chunk_map *map,
			u64 used, bool new_chunk, struct mfs_block_group **out);
struct mfs_block_group *mfs_lookup_block_group(struct mfs_fs_info *fs, u64 bytenr);
void mfs_free_block_groups(struct mfs_fs_info *fs);
/* Build free space and raid5/6 row use from the extent tree (at open). */
int mfs_load_block_groups(struct mfs_fs_info *fs);

int mfs_free_space_add(struct mfs_block_group *bg, u64 start, u64 len);
int mfs_free_space_remove(struct mfs_block_group *bg, u64 start, u64 len);
u64 mfs_free_space_total(const struct mfs_block_group *bg);

/* Profile new chunks of this type get (data, metadata or system). */
u64 mfs_target_profile(struct mfs_fs_info *fs, u64 type);
/* The flags of bg's item: type, profile, REDUCED and the profile asked for (format §7.4). */
u64 mfs_bg_item_flags(const struct mfs_block_group *bg);
/* Logical bytes used in the block groups of any type in type_mask (MFS_BLOCK_GROUP_DATA...). */
u64 mfs_used_bytes(const struct mfs_fs_info *fs, u64 type_mask);
/*
 * Logical bytes new chunks of type can still take from unallocated space:
 * in the profile they get, or, degraded or beside a failing device when
 * that no longer fits, in the reduced profile they would fall back to.
 */
u64 mfs_new_chunk_capacity(struct mfs_fs_info *fs, u64 type);

/* Reserve space for a new tree block of root and record its back-reference. */
int mfs_alloc_tree_block(struct mfs_trans_handle *trans, u64 root_objectid,
			 int level, u64 *bytenr);
/*
 * Reserve up to len bytes (at least min_len) of data space; *got is how
 * much was reserved. The back-reference is added by mfs_add_data_ref.
 */
int mfs_reserve_data_extent(struct mfs_trans_handle *trans, u64 len, u64 min_len,
			    u64 *bytenr, u64 *got);
int mfs_add_data_ref(struct mfs_trans_handle *trans, u64 bytenr, u64 len,
		     u64 root, u64 ino, u64 offset);
/* One more file extent item points at an existing data extent. */
int mfs_inc_extent_ref(struct mfs_trans_handle *trans, u64 bytenr, u64 len);
bool mfs_delayed_refs_pending(struct mfs_fs_info *fs);
/* Give back a reservation that never got a reference. */
void mfs_unreserve_extent(struct mfs_fs_info *fs, u64 bytenr, u64 len);
/* Drop a reference: at zero the extent is pinned until commit (freed at once if new). */
int mfs_free_extent(struct mfs_trans_handle *trans, u64 bytenr, u64 len);

/* Commit helpers (transaction.c drives them). */
int mfs_run_delayed_refs(struct mfs_trans_handle *trans);
int mfs_write_dirty_block_groups(struct mfs_trans_handle *trans, bool *did_work);
int mfs_finish_new_chunks(struct mfs_trans_handle *trans, bool *did_work);
/* After the superblocks are on disk: freed space becomes reusable. */
void mfs_unpin_extents(struct mfs_fs_info *fs, struct mfs_transaction *t);
/* raid5/6: rows written this transaction take no more allocations. */
void mfs_seal_open_rows(struct mfs_fs_info *fs);
/*
 * raid5/6: the row holding logical was written out before the commit (it
 * filled up); space freed in it must not be handed out again until the row
 * is empty, or a second write of the row would wipe its live neighbours.
 */
void mfs_seal_row(struct mfs_fs_info *fs, u64 logical);
/*
 * Create a chunk of type|profile in memory (mfs_place_chunk) with an empty
 * block group flagged new_chunk (its items are inserted at commit).
 * max_stripe 0 = policy.
 */
int mfs_alloc_chunk(struct mfs_fs_info *fs, u64 flags, u64 max_stripe,
		    struct mfs_block_group **out);

/* Restripe support. */
int mfs_rebuild_bg_space(struct mfs_fs_info *fs, struct mfs_block_group *bg);
void mfs_remove_block_group(struct mfs_fs_info *fs, struct mfs_block_group *bg);
int mfs_bg_used_ranges(struct mfs_fs_info *fs, struct mfs_block_group *bg,
		       struct mfs_range **out, int *nout);
/*
 * The extents starting in [start, end), in order, until max_bytes of them
 * are gathered (the one that reaches it included): a walk in bounded steps.
 */
int mfs_used_ranges(struct mfs_fs_info *fs, u64 start, u64 end, u64 max_bytes,
		    struct mfs_range **out, int *nout);

#endif
