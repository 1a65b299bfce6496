/*
 * Private to the extent allocator (alloc.c) and its new-chunk policy
 * (new-chunks.c).
 */
#ifndef MFS_TREE_ALLOC_INTERNAL_H
#define MFS_TREE_ALLOC_INTERNAL_H

#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/volumes/volumes.h"

/*
 * Can bg take new extents? Not a restripe's source, and no stripe on a
 * missing or failed device: a chunk with a missing stripe is never written
 * (DESIGN §6), so what a degraded mount writes lies wholly on the devices
 * present and a returning device missed nothing it holds.
 */
static inline bool bg_allocatable(const struct mfs_block_group *bg)
{
	return !bg->ro && !mfs_chunk_degraded(bg->map);
}

/*
 * A new chunk of type in the profile new chunks of it get, or, degraded or
 * beside a failing device when that does not fit, in the most redundant
 * profile that does (marked reduced); a system chunk first when the chunk
 * tree has no room to record it.
 */
int mfs_alloc_new_chunk(struct mfs_fs_info *fs, u64 type, u64 max_stripe,
			struct mfs_block_group **out);
/* Before data takes unallocated space: metadata gets a chunk if short. */
void mfs_keep_metadata_headroom(struct mfs_fs_info *fs);

#endif
