/*
 * The B-tree: tree blocks, paths, roots, delayed references and the
 * transaction, and the operations on them. The filesystem's shared state
 * (devices, chunk maps, block groups, struct mfs_fs_info) is volumes/fs.h.
 */
#ifndef MFS_CTREE_H
#define MFS_CTREE_H

#include <pthread.h>
#include "kernel-shared/format/kerncompat.h"
#include "kernel-shared/format/format.h"
#include "kernel-shared/block/io.h"
#include "kernel-shared/volumes/fs.h"

/* ---- tree blocks ---- */
struct extent_buffer {
	u64 start;
	u32 len;
	int refs;
	bool dirty;
	struct extent_buffer *hash_next;
	struct extent_buffer *lru_prev, *lru_next;
	struct extent_buffer *dirty_next;
	u8 data[];
};

struct mfs_path {
	struct extent_buffer *nodes[MFS_MAX_LEVEL];
	int slots[MFS_MAX_LEVEL];
	bool search_for_insert;	/* internal */
};

struct mfs_root {
	u64 objectid;
	struct extent_buffer *node;
	struct mfs_root_item item;
	bool dirty;		/* root item must be rewritten at commit */
	struct mfs_fs_info *fs_info;
};

/* ---- delayed extent references ---- */
/*
 * What the transaction did to one extent's reference count; applied to
 * the extent tree at commit. is_new: the extent was allocated in this
 * transaction and has no item yet. num_bytes == 0 marks a dead entry.
 */
struct mfs_delayed_ref {
	u64 bytenr;
	u64 num_bytes;
	s64 delta;
	bool is_new;
	u64 flags;		/* MFS_EXTENT_FLAG_* */
	u64 owner_root;
	u64 owner_objectid;
	u64 owner_offset;
};

struct mfs_pinned {
	u64 start;
	u64 len;
};

struct mfs_transaction {
	u64 transid;
	struct mfs_delayed_ref *refs;
	int nr_refs, max_refs;
	int *ref_hash;			/* open addressing: index+1 into refs, 0 = empty */
	u32 ref_hash_size;
	int refs_pending;		/* entries with work left for the commit */
	struct mfs_pinned *pinned;
	int nr_pinned, max_pinned;
	struct extent_buffer *dirty_list;
	int nr_dirty;
};

struct mfs_trans_handle {
	struct mfs_fs_info *fs_info;
	u64 transid;
	/*
	 * An item or an extent reference was changed through it: a failure
	 * after that leaves a half-made change (mfs_end_transaction_ret).
	 */
	bool changed;
};


/* ---- node accessors (ctree.c) ---- */
static inline struct mfs_header *eb_header(struct extent_buffer *eb)
{
	return (struct mfs_header *)eb->data;
}

static inline u32 eb_nritems(struct extent_buffer *eb)
{
	return le32_to_cpu(eb_header(eb)->nritems);
}

static inline int eb_level(struct extent_buffer *eb)
{
	return eb_header(eb)->level;
}

static inline u64 eb_generation(struct extent_buffer *eb)
{
	return le64_to_cpu(eb_header(eb)->generation);
}

static inline u64 eb_owner(struct extent_buffer *eb)
{
	return le64_to_cpu(eb_header(eb)->owner);
}

static inline struct mfs_item *leaf_item(struct extent_buffer *eb, int slot)
{
	return (struct mfs_item *)(eb->data + sizeof(struct mfs_header)) + slot;
}

static inline struct mfs_key_ptr *node_ptr(struct extent_buffer *eb, int slot)
{
	return (struct mfs_key_ptr *)(eb->data + sizeof(struct mfs_header)) + slot;
}

static inline u32 leaf_data_size(const struct mfs_fs_info *fs)
{
	return fs->nodesize - sizeof(struct mfs_header);
}

static inline u32 node_max_ptrs(const struct mfs_fs_info *fs)
{
	return leaf_data_size(fs) / sizeof(struct mfs_key_ptr);
}

static inline void *leaf_item_data(struct extent_buffer *eb, int slot)
{
	return eb->data + sizeof(struct mfs_header) +
	       le32_to_cpu(leaf_item(eb, slot)->offset);
}

static inline u32 leaf_item_size(struct extent_buffer *eb, int slot)
{
	return le32_to_cpu(leaf_item(eb, slot)->size);
}

static inline void leaf_item_key(struct extent_buffer *eb, int slot, struct mfs_key *k)
{
	mfs_disk_key_to_cpu(k, &leaf_item(eb, slot)->key);
}

static inline void node_key(struct extent_buffer *eb, int slot, struct mfs_key *k)
{
	mfs_disk_key_to_cpu(k, &node_ptr(eb, slot)->key);
}

static inline u64 node_blockptr(struct extent_buffer *eb, int slot)
{
	return le64_to_cpu(node_ptr(eb, slot)->blockptr);
}

static inline void eb_item_key(struct extent_buffer *eb, int slot, struct mfs_key *k)
{
	if (eb_level(eb) == 0)
		leaf_item_key(eb, slot, k);
	else
		node_key(eb, slot, k);
}

/* ---- B-tree (ctree.c) ---- */
void mfs_init_path(struct mfs_path *path);
void mfs_release_path(struct mfs_path *path);
/*
 * Find key in root. Returns 0 if found (path at it), 1 if not (path at the
 * slot where it would be inserted), -errno on error. With a trans handle and
 * cow set, every node on the path is made writable; ins_len > 0 makes room
 * for an item of that many data bytes, ins_len < 0 prepares for deletion.
 * root NULL (a tree a partial open could not read): -EUCLEAN.
 */
int mfs_search_slot(struct mfs_trans_handle *trans, struct mfs_root *root,
		    const struct mfs_key *key, struct mfs_path *path,
		    int ins_len, int cow);
int mfs_insert_item(struct mfs_trans_handle *trans, struct mfs_root *root,
		    const struct mfs_key *key, const void *data, u32 size);
/* Overwrite the item at key with data (size bytes), or insert it. */
int mfs_write_item(struct mfs_trans_handle *trans, struct mfs_root *root,
		   const struct mfs_key *key, const void *data, u32 size);
/* Insert an empty item of size bytes; path points at it on return. */
int mfs_insert_empty_item(struct mfs_trans_handle *trans, struct mfs_root *root,
			  struct mfs_path *path, const struct mfs_key *key, u32 size);
int mfs_del_item(struct mfs_trans_handle *trans, struct mfs_root *root,
		 struct mfs_path *path);
int mfs_truncate_item(struct mfs_trans_handle *trans, struct mfs_path *path, u32 new_size);
int mfs_extend_item(struct mfs_trans_handle *trans, struct mfs_root *root,
		    struct mfs_path *path, u32 extra);
/* Step to the next/previous leaf item; 1 at the end of the tree. */
int mfs_next_item(struct mfs_root *root, struct mfs_path *path);
int mfs_prev_item(struct mfs_root *root, struct mfs_path *path);
/* First item with key >= *key; 1 when there is none. */
int mfs_search_forward(struct mfs_root *root, const struct mfs_key *key,
		       struct mfs_path *path);
/* Mark the leaf at path dirty after changing an item in place. */
void mfs_mark_buffer_dirty(struct mfs_trans_handle *trans, struct extent_buffer *eb);
/* A fresh empty root node for a new tree. */
int mfs_create_tree(struct mfs_trans_handle *trans, u64 objectid, struct mfs_root **out);
/* Set the key of the item at path (must keep the order). */
void mfs_set_item_key_safe(struct mfs_trans_handle *trans, struct mfs_path *path,
			   const struct mfs_key *key);

/* ---- buffers (disk-io.c) ---- */
/*
 * What the pointer to a tree block says the block must be (DESIGN §2,
 * "trust nothing a device says about its age"): a copy that disagrees is a
 * bad copy like one with a bad checksum. level < 0, owner 0, transid 0 and
 * first_key NULL each mean "not known".
 */
struct mfs_tree_check {
	int level;
	u64 owner;
	u64 transid;			/* generation the parent recorded for it */
	const struct mfs_key *first_key;	/* the parent's key for it */
};
/* What a pointer in node parent at slot says of its child. */
void mfs_child_check(struct extent_buffer *parent, int slot, u64 owner,
		     struct mfs_key *key_buf, struct mfs_tree_check *chk);
int mfs_read_tree_block(struct mfs_fs_info *fs, u64 bytenr, const struct mfs_tree_check *chk,
			struct extent_buffer **out);
struct extent_buffer *mfs_alloc_eb(struct mfs_fs_info *fs, u64 bytenr);
void mfs_free_eb(struct mfs_fs_info *fs, struct extent_buffer *eb);
struct extent_buffer *mfs_eb_get(struct extent_buffer *eb);
void mfs_eb_put(struct mfs_fs_info *fs, struct extent_buffer *eb);
void mfs_eb_forget(struct mfs_fs_info *fs, u64 bytenr);
/*
 * Verify a tree block image: checksum, bytenr, fsid, the expectations of
 * chk (NULL: none), item layout. -EUCLEAN when it is bad; *stat (if not
 * NULL) says which device counter the failure belongs to:
 * MFS_DEV_STAT_GENERATION_ERRS for a valid block of the wrong generation
 * (an old copy), else MFS_DEV_STAT_CORRUPTION_ERRS.
 */
int mfs_verify_tree_block(struct mfs_fs_info *fs, const u8 *buf, u64 bytenr,
			  const struct mfs_tree_check *chk, int *stat);
void mfs_csum_tree_block(struct mfs_fs_info *fs, u8 *buf);

#endif
