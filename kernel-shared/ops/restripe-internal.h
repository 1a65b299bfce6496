/*
 * What the restriper's files (restripe.c: state and run loop,
 * restripe-plan.c: selection and planning, relocate.c: moving a chunk,
 * device-add.c: add, grow, replace start) share and no one else uses.
 */
#ifndef MFS_RESTRIPE_INTERNAL_H
#define MFS_RESTRIPE_INTERNAL_H

#include "kernel-shared/ops/restripe.h"

/* restripe.c */
/* Another exclusive operation holds the filesystem: say which state it is in. */
int rs_busy(const struct mfs_restripe_status *st, char *msg, size_t msglen);
/* Save state and commit (fs->lock held). */
int rs_persist(struct mfs_fs_info *fs, bool paused);
/* A new operation's status; how the last replace ended is kept. */
void rs_reset_status(struct mfs_restripe_status *st);
struct mfs_restripe_status *rs_status(struct mfs_fs_info *fs);
int rs_write_item(struct mfs_trans_handle *trans, struct mfs_restripe_status *st, bool paused);

/* restripe-plan.c */
/* Logical starts of the selected chunks at or after cursor. */
int rs_select_chunks(struct mfs_fs_info *fs, const struct mfs_restripe_args *a, u64 cursor,
		u64 **out, int *nout, u64 *bytes);
/*
 * A data chunk whose new layout finds no room has its extents moved into
 * other chunks instead (evacuate.c), when the operation moves data only
 * where the allocator would put new data: not for a replace (its stripes
 * go to one device).
 */
bool rs_can_evacuate(const struct mfs_restripe_args *a, const struct mfs_chunk_map *map);
u64 rs_target_profile(const struct mfs_restripe_args *a, const struct mfs_chunk_map *map);
/* New chunks follow a conversion at once. */
void rs_apply_targets(struct mfs_fs_info *fs, const struct mfs_restripe_args *args);
/* Why an operation that does not fit is refused, for the command to print. */
void rs_no_space_message(struct mfs_fs_info *fs, const struct mfs_restripe_args *a,
		const struct mfs_restripe_estimate *est, char *msg, size_t msglen);
/* The estimate for what is left of an operation at logical cursor on. */
int rs_estimate_from(struct mfs_fs_info *fs, const struct mfs_restripe_args *a, u64 cursor,
		struct mfs_restripe_estimate *est);

/* device-add.c */
/* The end of a replace: the target becomes device devid (the source's), in trans. */
int rs_replace_take_devid(struct mfs_trans_handle *trans, struct mfs_device *tgt, u64 devid);

/* relocate.c */
int rs_relocate_chunk(struct mfs_fs_info *fs, u64 logical);
/* Delete the item at key: -EUCLEAN when it is not there. */
int rs_delete_key(struct mfs_trans_handle *trans, struct mfs_root *root, const struct mfs_key *key);
/* Delete the item at key if there is one: 1 when there is none. */
int rs_delete_if_there(struct mfs_trans_handle *trans, struct mfs_root *root,
		       const struct mfs_key *key);
/* Whether bg is the only chunk of its type (data, metadata or system). */
bool rs_last_of_type(struct mfs_fs_info *fs, const struct mfs_block_group *bg);

/*
 * reloc-source.c: the first copy of a chunk's used ranges (sorted), read
 * ahead of a relocation's copy in large windows, from logical from on;
 * raid5/6 with column >= 0: that stripe's part of the rows alone, read
 * from its device (the other columns only for a row it fails) or, when
 * the device is out of service, rebuilt from the others. A read a device
 * in service fails is counted against it (fs) and logged.
 */
struct reloc_source;
int rs_source_open(struct mfs_fs_info *fs, const struct mfs_chunk_map *map,
		   const struct mfs_range *r, int n, u64 from, int column, struct reloc_source **out);
void rs_source_close(struct reloc_source *s);
/* Bytes from logical on that the window holding it holds; 0: none holds it. */
u64 rs_source_span(struct reloc_source *s, u64 logical);
/* [logical, +len) of the first copy into buf: 0, or 1 when it is not held whole. */
int rs_source_read(struct reloc_source *s, u64 logical, u64 len, u8 *buf);
/*
 * raid5/6: row of the chunk as it is on disk, every stripe's part into
 * slots[stripe] unless that is NULL (a part that could not be read
 * rebuilt from the others; a row the windows do not hold read alone) -
 * with a column read alone, that column's part at least: 0, or 1 when
 * more failed than parity makes up for.
 */
int rs_source_fill_row(struct reloc_source *s, u64 row, u8 **slots);

/* reloc-record.c: the checkpoint of a chunk's copy (format: BALANCE_CHUNK) */
struct rs_reloc {
	u64 logical;			/* the chunk: read-only while the record exists */
	u64 copied;			/* logical: its used bytes below are in the new layout */
	u64 counted;			/* of them, counted in bytes_done */
	struct mfs_chunk_map **maps;	/* the new layout, its stripes taken on the devices */
	int nmaps;
	bool stale;			/* not to be followed (took nothing): copied again */
};
/* Whether a record of this layout fits in a leaf (else the chunk is copied without). */
bool rs_reloc_fits(struct mfs_fs_info *fs, const struct rs_reloc *rc);
int rs_reloc_write(struct mfs_trans_handle *trans, const struct rs_reloc *rc);
int rs_reloc_delete(struct mfs_trans_handle *trans, u64 logical);
/* At open, once the operation is loaded: its record, if any, into fs->restripe->reloc. */
int rs_reloc_load(struct mfs_fs_info *fs);
/*
 * Around an estimate of what is left (fs->lock held throughout): the
 * record's chunk is placed like any other, so the stripes it took are
 * handed back meanwhile and taken again after.
 */
void rs_reloc_estimate_begin(struct mfs_fs_info *fs);
void rs_reloc_estimate_end(struct mfs_fs_info *fs);
/* After the commit that deleted it: its stripes free again, its chunk writable. */
void rs_reloc_forget(struct mfs_fs_info *fs);
/* Delete the record in a commit of its own, then forget it (fs->lock held). */
int rs_reloc_drop(struct mfs_fs_info *fs);
/* The record's memory, when the filesystem is freed (its devices are gone). */
void rs_reloc_free(struct mfs_fs_info *fs);
/* The bytes of chunk logical that its record counted in bytes_done. */
u64 rs_reloc_counted(const struct mfs_restripe_status *st, u64 logical);

#endif
