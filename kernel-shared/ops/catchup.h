/* Bringing a member whose superblock is behind up to date (catchup.c). */
#ifndef MFS_CATCHUP_H
#define MFS_CATCHUP_H

#include "kernel-shared/tree/ctree.h"

struct mfs_catchup_result {
	u64 extents;		/* extents rewritten on the device */
	u64 bytes;		/* bytes written to it */
	u64 lost;		/* extents (raid5/6: sectors) no copy of which verifies */
};

/*
 * Rewrite on dev everything written after dev->stale_gen, from the other
 * copies (or parity), each piece verified first; with nothing lost, the
 * device is current again (stale_gen 0) and gets the next superblock.
 * Needs the filesystem opened writable, before its first commit.
 */
int mfs_catch_up_device(struct mfs_fs_info *fs, struct mfs_device *dev,
			struct mfs_catchup_result *res);

/*
 * Call fn for each item of root's leaves written after generation since,
 * reading only blocks below pointers newer than since. fn: 0 goes on,
 * anything else stops the walk and is returned.
 */
int mfs_walk_items_since(struct mfs_fs_info *fs, struct mfs_root *root, u64 since,
			 int (*fn)(struct extent_buffer *leaf, int slot, void *arg), void *arg);

/*
 * The chunks with a stripe placed on dev after generation since (by a
 * balance, convert or replace: their dev extent items lie in leaves
 * written since, which may hold older ones too): *chunks (malloc'd, the
 * caller frees it) their logical starts, *n how many.
 */
int mfs_stripes_placed_since(struct mfs_fs_info *fs, const struct mfs_device *dev, u64 since,
			     u64 **chunks, int *n);

#endif
