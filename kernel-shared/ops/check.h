/*
 * Read-only consistency checks of an opened filesystem. Each problem is
 * handed to the caller's report callback as one line naming the object;
 * the engine itself never prints.
 */
#ifndef MFS_CHECK_H
#define MFS_CHECK_H

#include "kernel-shared/tree/ctree.h"

struct mfs_check_block {
	u64 bytenr;
	u64 owner;
	int level;
	int seen;
	u64 gen;	/* what its parent's pointer says */
	bool read;	/* a copy verified */
};

/* What --repair can do about a problem a phase found (check-repair.c). */
enum mfs_check_fix_kind {
	MFS_FIX_SUPERS = 1,	/* rewrite every superblock copy from the open one */
	MFS_FIX_TREE_COPY,	/* copy `mirror` of tree block `bytenr` from a good copy */
	MFS_FIX_BG_USED,	/* block group `bytenr`: used = `value` */
	/* inode `bytenr` (its number): a field set from what the fs tree walk counted */
	MFS_FIX_NLINK,
	MFS_FIX_DIR_SIZE,
	MFS_FIX_NBYTES,
	/* dir `bytenr`: the missing twin of an entry, from `entry` (its other half) */
	MFS_FIX_DIR_ITEM,
	MFS_FIX_DIR_INDEX,
	/* inode `bytenr`, named by no entry: into lost+found, link count `value` */
	MFS_FIX_LOST_FOUND,
	/* tree block `bytenr` (chk: owner, level, generation) without an extent item */
	MFS_FIX_TREE_EXTENT,
};

struct mfs_check_fix {
	enum mfs_check_fix_kind kind;
	u64 bytenr;
	u64 value;
	int mirror;
	/* MFS_FIX_TREE_COPY: what the parent's pointer says of the block */
	struct mfs_tree_check chk;
	struct mfs_key first_key;
	/*
	 * MFS_FIX_DIR_ITEM/INDEX: the entry (struct mfs_dir_item + name);
	 * MFS_FIX_LOST_FOUND, once applied: the name it got. malloc'd.
	 */
	void *entry;
	u32 entry_len;
};

struct mfs_check_ctl {
	void (*report)(void *arg, const char *msg);
	/* not an error: e.g. a superblock copy the last commit did not reach */
	void (*warn)(void *arg, const char *msg);
	u64 warnings;
	void *arg;
	u64 errors;
	/* statistics for the summary */
	u64 tree_blocks;
	u64 tree_bytes;
	u64 data_bytes;		/* data extents referenced by file extent items */
	u64 csum_bytes;		/* data bytes covered by checksum items */
	/*
	 * Optional: called as the bytes checked grow (tree blocks read in
	 * phase 3, data verified in phase 6), with their running total; the
	 * total to expect is mfs_check_bytes_to_check().
	 */
	void (*progress)(void *arg, u64 checked);
	u64 checked;
	/* --repair: the phases record what can be fixed, mfs_check_repair applies it */
	bool repair;
	struct mfs_check_fix *fixes;
	int nr_fixes, max_fixes;
	/* tree blocks reached by the walk (phase 3), used by phase 4 */
	struct mfs_check_block *blocks;
	u64 nr_blocks, max_blocks;
	/* stale members: the chunks with a stripe placed on each since it fell behind */
	struct mfs_check_stale *stale;
	int nr_stale;
	bool stale_loaded;
};

/*
 * Can the copy that dev (stale or missing: NULL) holds in map of something
 * written in generation gen be judged? A missing member's cannot (it is
 * reported once, in phase 1); a stale member's can when it was written
 * before the member fell behind, in a stripe placed there before too.
 */
bool mfs_check_copy_judged(struct mfs_fs_info *fs, struct mfs_check_ctl *ctl,
			   const struct mfs_chunk_map *map, const struct mfs_device *dev, u64 gen);
/* Has map a stripe on a stale member? (A raid5/6 rebuild reading it proves nothing.) */
bool mfs_chunk_has_stale(const struct mfs_chunk_map *map);

/* What the progress callback's count reaches: used metadata, and data when verified. */
u64 mfs_check_bytes_to_check(const struct mfs_fs_info *fs, bool data_csums);
/* Count bytes checked and tell the progress callback. */
static inline void mfs_check_progress(struct mfs_check_ctl *ctl, u64 bytes)
{
	ctl->checked += bytes;
	if (ctl->progress)
		ctl->progress(ctl->arg, ctl->checked);
}

/* Phase 1: every superblock copy on every device. */
int mfs_check_supers(struct mfs_fs_info *fs, struct mfs_check_ctl *ctl);
/* Phase 2: chunk items against device extents and device items. */
int mfs_check_chunks(struct mfs_fs_info *fs, struct mfs_check_ctl *ctl);
/* Phase 3: every copy of every tree node: checksum, owner, level, key order. */
int mfs_check_trees(struct mfs_fs_info *fs, struct mfs_check_ctl *ctl);
/* Phase 4: extent items against reached blocks; block group used bytes. */
int mfs_check_extents(struct mfs_fs_info *fs, struct mfs_check_ctl *ctl);
/*
 * Phase 5 (check-fs.c): inodes, link counts, orphans, directory entries,
 * file extents against data extent items and their reference counts, and
 * checksum items against data extents.
 */
int mfs_check_fs_tree(struct mfs_fs_info *fs, struct mfs_check_ctl *ctl);
/* Optional phase (check-data.c): every copy of every checksummed data sector. */
int mfs_check_data_csums(struct mfs_fs_info *fs, struct mfs_check_ctl *ctl);
void mfs_check_free(struct mfs_check_ctl *ctl);

/* Record a fix (with ctl->repair); the phases call it beside the problem. */
void mfs_check_add_fix(struct mfs_check_ctl *ctl, enum mfs_check_fix_kind kind, u64 bytenr,
		       u64 value, int mirror);
/* Record the rebuild of a directory entry's missing DIR_ITEM or DIR_INDEX twin. */
void mfs_check_add_entry_fix(struct mfs_check_ctl *ctl, enum mfs_check_fix_kind kind, u64 dir,
			     const struct mfs_dir_item *di, u32 len);
/* Forget the recorded fixes of one kind (their source proved unsound). */
void mfs_check_drop_fixes(struct mfs_check_ctl *ctl, enum mfs_check_fix_kind kind);
/* A tree block the walk reached and read whose extent item is missing: one made for it. */
void mfs_check_add_tree_extent_fix(struct mfs_check_ctl *ctl, const struct mfs_check_block *b);
/* The fix of copy `mirror` of a tree block, verified against chk when read. */
void mfs_check_add_tree_fix(struct mfs_check_ctl *ctl, u64 bytenr, int mirror,
			    const struct mfs_tree_check *chk);
/*
 * Apply the recorded fixes to fs (opened writable), each in the order
 * found; a message per fix through ctl->warn-like `done` callback. The
 * number applied in *applied; -errno when writing failed.
 */
int mfs_check_repair(struct mfs_fs_info *fs, struct mfs_check_ctl *ctl,
		     void (*done)(void *arg, const char *msg), u64 *applied);

/*
 * --init-csum-tree (check-csum-tree.c), on fs opened writable: every csum
 * item dropped and one made again for each data extent a regular file
 * extent points at, from the first copy that reads, in one transaction
 * (nothing is written when a data extent cannot be read). Copies that
 * differ and file extents left out are said through say. The extents and
 * bytes checksummed in *nr_extents, *nr_bytes; -errno.
 */
int mfs_check_init_csum_tree(struct mfs_fs_info *fs, void (*say)(void *arg, const char *msg),
			     void *arg, u64 *nr_extents, u64 *nr_bytes);

/*
 * --init-extent-tree (check-extent-tree.c), on fs opened writable: a new
 * extent tree in place of the old one, in one transaction: an extent item
 * for every tree block reachable from the roots (count 1, its tree and
 * level as owner) and for every data extent a regular or preallocated
 * file extent points at (count: how many do), a block group item per
 * chunk with the used bytes they make. Nothing is written when a tree
 * block cannot be read, extents overlap or lie outside the block groups
 * (-EUCLEAN), or metadata is raid5/6 (-EOPNOTSUPP), said through say. The tree blocks and data extents
 * recorded in *nr_tree, *nr_data; -errno.
 */
int mfs_check_init_extent_tree(struct mfs_fs_info *fs, void (*say)(void *arg, const char *msg),
			       void *arg, u64 *nr_tree, u64 *nr_data);

/* Count one problem and hand it to ctl->report (for the phases' files). */
void mfs_check_problem(struct mfs_check_ctl *ctl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * check-csum-tree.c: fn for every file extent item of the fs tree (orphan
 * items left out), until it returns non-zero. Returns fn's error, the
 * walk's, or 0.
 */
int mfs_check_for_each_file_extent(struct mfs_fs_info *fs,
				   int (*fn)(void *arg, const struct mfs_key *key,
					     struct extent_buffer *leaf, int slot),
				   void *arg);

/* check-fs.c */
/* Where the disk extent lies: inside one DATA chunk. */
bool mfs_check_in_data_chunk(struct mfs_fs_info *fs, u64 bytenr, u64 len);
void mfs_check_walk_failed(struct mfs_check_ctl *ctl, const char *tree, int ret);

#endif
