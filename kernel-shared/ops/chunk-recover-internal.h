/*
 * What chunk-recover.c and chunk-scan.c share: the tree blocks a scan of
 * the devices found, and what was read from the trees through them.
 */
#ifndef MFS_CHUNK_RECOVER_INTERNAL_H
#define MFS_CHUNK_RECOVER_INTERNAL_H

#include "kernel-shared/ops/chunk-recover.h"
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/block/csum.h"

/* A block that verified (checksum, fsid, layout) where the scan found it. */
struct rc_block {
	u64 bytenr;
	u64 generation;
	u64 owner;
	int level;
	u64 devid;
	u64 physical;
};

struct rc_dev_extent {
	u64 devid;
	u64 physical;
	u64 chunk_offset;
	u64 length;
	bool claimed;		/* a block group took it */
};

struct rc_bg {
	u64 start;
	u64 length;
	u64 flags;
};

/* A chunk item that survives somewhere: stripe order to keep. */
struct rc_hint {
	u64 logical;
	u64 generation;
	u32 size;
	u8 *item;		/* struct mfs_chunk + stripes */
};

/* A device item that survives in an old chunk tree leaf: a missing member's uuid and size. */
struct rc_dev_hint {
	u64 generation;
	struct mfs_dev_item item;
};

/* One sector's checksum, to tell the stripe order of a data chunk. */
struct rc_csum {
	u64 logical;
	u8 csum[MFS_CSUM_SIZE];
};

/* Chunks with more stripes than this are not rebuilt. */
#define RC_MAX_STRIPES	32

#define RC_ARRAY(type, name) type *name; u64 nr_##name, max_##name

struct rc_state {
	struct mfs_fs_info *fs;
	struct mfs_chunk_recover *rc;
	RC_ARRAY(struct rc_block, blocks);
	RC_ARRAY(struct rc_dev_extent, dexts);
	RC_ARRAY(struct rc_bg, bgs);
	RC_ARRAY(struct rc_hint, hints);
	RC_ARRAY(struct rc_dev_hint, dev_hints);
	RC_ARRAY(struct rc_csum, csums);
	u64 root_bytenr[8], root_gen[8];	/* ROOT_ITEMs, by tree id */
	int root_level[8];
	char missing_why[512];	/* what of a missing member cannot be learnt (else "") */
};

void rc_say(struct rc_state *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* rc->why, for the caller's error: the reason the rebuild cannot be done. */
void rc_why(struct rc_state *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* chunk-scan.c */
/* Index of the first block found with this bytenr (nr_blocks if none). */
u64 rc_first_block(const struct rc_state *st, u64 bytenr);
/* Every present device read end to end for tree blocks of this filesystem. */
int rc_scan_devices(struct rc_state *st);
/* The root tree, then the device, extent and csum trees, through the blocks found. */
int rc_read_trees(struct rc_state *st);
/*
 * Chunk and device items of the chunk tree leaves found (any generation)
 * and the chunk items of the system array.
 */
int rc_collect_hints(struct rc_state *st);

/* chunk-missing.c */
/*
 * Each member holding device extents that is not present, as a missing
 * device: its uuid and size from surviving chunk and device items and
 * the superblock's total. What cannot be learnt waits in missing_why.
 */
int rc_add_missing(struct rc_state *st);
/* -ENODEV (rc->why says why) when a missing member's uuid or size is not known. */
int rc_missing_known(struct rc_state *st);

#endif
