/*
 * mfs rescue chunk-recover: the chunk tree (and the superblock's system
 * chunk array) rebuilt from what the devices still hold, as btrfs rescue
 * chunk-recover does.
 */
#ifndef MFS_CHUNK_RECOVER_H
#define MFS_CHUNK_RECOVER_H

#include "kernel-shared/ops/open.h"

struct mfs_chunk_recover {
	/* each finding and each chunk rebuilt, one line (NULL: dropped) */
	void (*say)(void *arg, const char *msg);
	void *arg;
	/* out */
	u64 tree_blocks;	/* verified tree block copies the scan found */
	int nr_chunks;		/* chunks rebuilt */
	int nr_kept;		/* ... whose stripe order a surviving chunk item gave */
	int nr_probed;		/* ... whose stripe order the blocks or data found told */
	int nr_missing;		/* members missing whose stripes were kept */
	u64 old_blocks;		/* extents of the old chunk tree given back */
	char why[512];		/* why it cannot be rebuilt (also in the open's detail) */
};

/*
 * Make ctl's open rebuild the chunk map instead of reading the chunk
 * tree: every present device is read end to end for tree blocks of the
 * filesystem; the root tree the superblock names, then the device and
 * extent trees, are read through the places their blocks were found; each
 * block group with the device extents of its chunk becomes a chunk, its
 * stripes in the order a surviving chunk item gives, else the one the
 * tree blocks found there or the data checksums bear out. A member
 * missing keeps its stripes (its uuid and size from surviving chunk and
 * device items, chunk-missing.c) when every chunk can be read and
 * ordered without it, and the open goes on degraded (ctl->flags). The open
 * then reads the trees through the new map (a second proof of it).
 * Opened writable (MFS_OPEN_WRITABLE), a new chunk tree is written in
 * one commit (device items, chunk items, the system chunk array) and the
 * old tree's blocks are given back; nothing is written when the map
 * cannot be rebuilt (-EUCLEAN, -ENODEV, -EIO; rc->why and ctl->detail
 * say why). rc must outlive the open.
 */
void mfs_chunk_recover_setup(struct mfs_open_ctl *ctl, struct mfs_chunk_recover *rc);

#endif
