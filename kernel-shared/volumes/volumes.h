/*
 * The volume layer: devices (devices.c), chunk maps (chunk-map.c), chunk
 * allocation (chunk-alloc.c) and logical I/O (logical-io.c).
 */
#ifndef MFS_VOLUMES_H
#define MFS_VOLUMES_H

#include "kernel-shared/volumes/fs.h"

/* Smallest device mkfs and device add accept. */
#define MFS_MIN_DEVICE_SIZE	(128 * SZ_1M)
/* Smallest stripe the chunk allocator hands out. */
#define MFS_MIN_STRIPE_SIZE	(8 * SZ_1M)
#define MFS_CHUNK_ALIGN		SZ_1M

/* Pure mapping of one logical address inside map (no I/O). */
int mfs_map_block(const struct mfs_chunk_map *map, u64 logical, struct mfs_io_map *out);
/* Ways a block can be read: copies, or data + parity rebuilds for raid5/6. */
int mfs_num_copies(const struct mfs_chunk_map *map);

struct mfs_chunk_map *mfs_alloc_chunk_map(int num_stripes);
struct mfs_chunk_map *mfs_find_chunk(struct mfs_fs_info *fs, u64 logical);
int mfs_add_chunk_map(struct mfs_fs_info *fs, struct mfs_chunk_map *map);
void mfs_remove_chunk_map(struct mfs_fs_info *fs, struct mfs_chunk_map *map);
/* Put new where old was in the map array (relocation); old stays allocated. */
void mfs_replace_chunk_map(struct mfs_fs_info *fs, struct mfs_chunk_map *old,
			   struct mfs_chunk_map *new);

/* Chunk items: validate (untrusted bytes) and convert. */
int mfs_check_chunk_item(struct mfs_fs_info *fs, u64 logical,
			 const struct mfs_chunk *chunk, u32 item_size);
int mfs_chunk_map_from_item(struct mfs_fs_info *fs, u64 logical,
			    const struct mfs_chunk *chunk, u32 item_size,
			    struct mfs_chunk_map **out);
/* Fills buf (mfs_chunk_item_size(num_stripes) bytes). */
void mfs_chunk_map_to_item(struct mfs_fs_info *fs, const struct mfs_chunk_map *map, void *buf);
/* Bootstrap chunk array in the superblock. */
int mfs_read_sys_array(struct mfs_fs_info *fs);
int mfs_write_sys_array(struct mfs_fs_info *fs);

struct mfs_device *mfs_find_device(struct mfs_fs_info *fs, u64 devid);
int mfs_add_device(struct mfs_fs_info *fs, struct mfs_device *dev);
/*
 * dev becomes device devid in memory (a replace's target taking its
 * source's devid): its place in fs->devices and the stripes of the chunk
 * maps that name it. No other device may hold devid.
 */
void mfs_device_set_devid(struct mfs_fs_info *fs, struct mfs_device *dev, u64 devid);
int mfs_device_add_extent(struct mfs_device *dev, u64 physical, u64 length, u64 chunk_offset);
int mfs_device_remove_extent(struct mfs_device *dev, u64 physical);
/*
 * Where dev ends for the filesystem: its item's total_bytes, but never
 * past the device's own end. An item claiming more (damaged, or a
 * truncated image: `mfs check` reports it) must not give stripes or
 * superblock copies a place nothing can hold, nor make a walk over the
 * free space as long as the number it claims.
 */
u64 mfs_device_end(const struct mfs_device *dev);
/* Largest unallocated hole on dev, skipping reserved ranges. */
u64 mfs_device_max_hole(struct mfs_device *dev, u64 *start);
/*
 * Free bytes in the holes of at least min_hole (aligned as chunks are
 * placed): what new stripes can use, leaving out the fragments between
 * chunks that no stripe fits in.
 */
u64 mfs_device_usable_free(struct mfs_device *dev, u64 min_hole);
/* The smallest hole that takes need bytes, so big holes stay big (-ENOSPC if none). */
int mfs_device_best_fit(struct mfs_device *dev, u64 need, u64 *start);
/* Is [start, start+len) clear of superblock copies and the first MiB? */
bool mfs_range_is_reserved(u64 start, u64 len);
/* Bytes of a device of this size that are never allocated (reserved ranges). */
u64 mfs_device_reserved_bytes(u64 total_bytes);

/* Device states that take no new chunks. */
#define MFS_DEV_STATE_NO_ALLOC	(MFS_DEV_STATE_DELETING | MFS_DEV_STATE_NOALLOC | \
				 MFS_DEV_STATE_REPLACE_TARGET | MFS_DEV_STATE_REPLACE_SOURCE | \
				 MFS_DEV_STATE_SPARE)
/* Where new chunks may go: devices present, healthy, current and not being removed. */
bool mfs_device_allocatable(const struct mfs_device *dev);
/*
 * Place a new chunk of type|profile in memory: picks devices and holes,
 * records dev extents and adds the map (mfs_alloc_chunk, alloc.h, gives it
 * its block group). max_stripe 0 = policy.
 */
int mfs_place_chunk(struct mfs_fs_info *fs, u64 flags, u64 max_stripe,
		    struct mfs_chunk_map **out);
/* Take back a chunk just placed: its map, its dev extents; frees map. */
void mfs_unplace_chunk(struct mfs_fs_info *fs, struct mfs_chunk_map *map);

/*
 * Logical I/O through the chunk maps. mirror 0: each piece from the first
 * copy that reads (in mfs_mirror_order); MFS_MIRROR_PREFERRED: each piece
 * from the copy reads prefer, no other.
 */
#define MFS_MIRROR_PREFERRED (-1)
int mfs_read_logical(struct mfs_fs_info *fs, u64 logical, void *buf, u32 len, int mirror);
/*
 * Start reading the copies of [logical, +len) (within one stripe unit)
 * into the page cache without waiting: every mirror when every_copy, else
 * the first; raid5/6 the data column. A hint: a walk asks for a node's
 * children before it reads them one by one.
 */
void mfs_readahead_logical(struct mfs_fs_info *fs, u64 logical, u64 len, bool every_copy);
int mfs_write_logical(struct mfs_fs_info *fs, u64 logical, const void *buf, u32 len);
/*
 * The same without fs->lock, with fs->map_lock held shared: writes for
 * chunks without parity only (-EAGAIN otherwise); reads of raid5/6 take the
 * data column (the caller checked no open row covers it). Writes go around the page cache
 * when buf, len and logical are MFS_IO_DIRECT_ALIGN aligned; reads take the
 * copy on the least busy device and neither verify nor repair.
 */
int mfs_write_logical_unlocked(struct mfs_fs_info *fs, u64 logical, const void *buf, u32 len);
struct mfs_read_range {
	u64 logical;
	void *buf;
	u64 len;
};
/*
 * Several ranges read at once: their transfers gathered into one per
 * device, run one device after the other in the calling thread (a file
 * read is one of many requests in flight: logical-io.c says why).
 */
int mfs_read_ranges_unlocked(struct mfs_fs_info *fs, int n, const struct mfs_read_range *r);
/*
 * raid5/6 data without holding fs->lock through the disk writes: under the
 * lock, mfs_write_logical_defer buffers the data in the open rows and hands
 * back the rows it filled; without the lock (map_lock shared) the caller
 * writes them with mfs_write_full_rows, then releases them under the lock
 * again. Until then reads under the lock find their data in memory, and a
 * commit writes them itself.
 */
struct mfs_open_row;
int mfs_write_logical_defer(struct mfs_fs_info *fs, u64 logical, const void *buf, u32 len,
			    struct mfs_open_row **full);
int mfs_write_full_rows(struct mfs_fs_info *fs, struct mfs_open_row *full);
void mfs_release_full_rows(struct mfs_fs_info *fs, struct mfs_open_row *full);
/* Whether [logical, logical+len) of a raid5/6 chunk touches a row in memory. */
bool mfs_range_has_open_rows(struct mfs_fs_info *fs, const struct mfs_chunk_map *map,
			     u64 logical, u64 len);
/* Write out buffered raid5/6 rows with their parity. */
int mfs_flush_open_rows(struct mfs_fs_info *fs);
void mfs_drop_open_rows(struct mfs_fs_info *fs);
int mfs_flush_all_devices(struct mfs_fs_info *fs);
/* The same for these devices (a commit's, taken under fs->lock). */
int mfs_flush_devices(struct mfs_fs_info *fs, struct mfs_device **devs, int ndevs);
/* Flush each of io[0..n) in parallel; each one's result in rets (may be NULL). */
int mfs_flush_io_devices(struct mfs_io_dev **io, int n, int *rets);
/* The device holding copy `mirror` of logical (raid5/6: the data column); NULL if gone. */
struct mfs_device *mfs_mirror_device(struct mfs_chunk_map *map, u64 logical, int mirror);
/* Rewrite one copy (raid5/6: the data column) of logical, e.g. to repair it. */
int mfs_write_logical_mirror(struct mfs_fs_info *fs, u64 logical, const void *buf,
			     u32 len, int mirror);
/*
 * Count an error against the device holding copy `mirror` of logical;
 * true when that device can take the repair. A device out of service
 * (missing, failed this mount) is not counted: it was not read.
 */
bool mfs_dev_stat_inc(struct mfs_fs_info *fs, u64 logical, int mirror, int stat);
/* Every copy of a range in one stripe unit of a mirrored chunk, read in parallel. */
int mfs_read_mirrors(struct mfs_chunk_map *map, u64 logical, u64 len, u8 **bufs, int *errs);
/*
 * For each stripe s of map with len[s] > 0, the bytes [stripes[s].physical
 * + off[s], +len[s]) into bufs[s] (aligned buffers: past the page cache),
 * one reader thread per device taking its stripes in order; errs[s] is 0,
 * -ENODEV (the device is not usable) or the read's error. The caller holds
 * fs->lock or map_lock shared. Returns 0 or -ENOMEM.
 */
int mfs_read_stripes(const struct mfs_chunk_map *map, const u64 *off, const u64 *len,
		     u8 **bufs, int *errs);
/*
 * Rows [w0, w1) of each stripe (of those needed[s], every one when needed
 * is NULL) through mfs_read_stripes; off and len are its per-stripe room.
 */
int mfs_read_stripe_rows(const struct mfs_chunk_map *map, u64 w0, u64 w1, const bool *needed,
			 u64 *off, u64 *len, u8 **bufs, int *errs);
/* The stripe index of column col (data columns, then P, Q) of a raid5/6 row. */
int mfs_row_stripe(const struct mfs_chunk_map *map, u64 row, int col);
/* raid5/6: P (and Q) of a row checked against its data columns (logical-io.c). */
int mfs_scrub_row_parity(struct mfs_fs_info *fs, struct mfs_chunk_map *map, u64 row,
			 bool repair, u64 *bad_devids);

/* ---- device health (DESIGN §6) ---- */
/* Present, open and not failed this mount: reads and writes may go to it. */
bool mfs_dev_usable(const struct mfs_device *dev);
/*
 * Count one error of kind stat (MFS_DEV_STAT_*); past fs->fail_threshold
 * errors this mount (generation errors, old copies, aside) the device is
 * failing. Safe without fs->lock.
 */
void mfs_dev_count_error(struct mfs_fs_info *fs, struct mfs_device *dev, int stat);
/* The default of fs->fail_threshold (the mount option fail_threshold). */
#define MFS_DEFAULT_FAIL_THRESHOLD	100
/* Before the filesystem is in use: set it, and judge the errors counted so far. */
void mfs_set_fail_threshold(struct mfs_fs_info *fs, u64 threshold);
/* Failed this mount, or failing: the state the admin sees as failing. */
bool mfs_dev_failing(const struct mfs_device *dev);
/* Any member failing (mfs_dev_failing)? */
bool mfs_fs_has_failing(struct mfs_fs_info *fs);
/* dev's state as the admin sees it, MFS_DEV_HEALTH_* (format/ioctl.h). */
int mfs_device_health(const struct mfs_device *dev);
/*
 * How many more device losses map survives with the devices usable now,
 * at most what its profile survives whole; -1 when it cannot be read.
 */
int mfs_chunk_failures_left(const struct mfs_chunk_map *map);
/*
 * A write or flush to dev failed (err): count it, and when the other
 * devices still hold every chunk, mark it failed for the rest of the mount
 * (no more reads or writes, no superblock), say so in the log and return
 * true. false: it holds the only copy of something; the caller's write
 * fails. Safe without fs->lock.
 */
bool mfs_dev_fail(struct mfs_fs_info *fs, struct mfs_device *dev, int stat, int err);
/* Can every byte of map be read from the usable devices? */
bool mfs_chunk_readable(const struct mfs_chunk_map *map);
int mfs_unreadable_chunks(struct mfs_fs_info *fs);
/*
 * Has map a stripe on a device that is missing or failed? Such a chunk is
 * never written (DESIGN §6): a write could not reach every copy, and the
 * device's return would bring back what it missed.
 */
bool mfs_chunk_degraded(const struct mfs_chunk_map *map);
/* Is a member missing or failed (the filesystem runs degraded)? */
bool mfs_fs_degraded(struct mfs_fs_info *fs);
/* How many devices new chunks may go on (mfs_device_allocatable). */
int mfs_nr_allocatable_devices(struct mfs_fs_info *fs);
/*
 * The mirrors (1-based, as mfs_read_logical takes them) of logical in the
 * order a read tries them: the read_policy device's copy first, stale and
 * unusable devices' last. Fills mfs_num_copies(map) entries; returns that.
 */
int mfs_mirror_order(struct mfs_fs_info *fs, const struct mfs_chunk_map *map, u64 logical,
		     int *order);
/* Logical bytes unallocated space could still give chunks of type|profile. */
u64 mfs_simulate_alloc(struct mfs_fs_info *fs, u64 flags);
/*
 * The same, pure: free_space[n] is each allocatable device's unallocated
 * space (reserved ranges already taken out) and is used up in place.
 * Chunks are allocated as mfs_alloc_chunk does: the devices with the most
 * free space first, the profile's device counts and stripes per device,
 * stripes of MFS_MIN_STRIPE_SIZE up to 1 GiB in whole MiBs; parity and
 * copies take raw space but give no logical bytes.
 */
u64 mfs_simulate_alloc_free(u64 *free_space, int n, u64 flags);

/*
 * The widest layout of type|profile for a chunk of length logical bytes
 * whose stripes fit the holes hole_len[] (one per device, largest first):
 * returns how many of those devices it spans and the stripe size, or
 * -ENOSPC. mfs_alloc_chunk_at places relocated chunks this way.
 */
int mfs_layout_for_length(u64 flags, u64 length, const u64 *hole_len, int nholes,
			  u64 *stripe);
/*
 * Restripe: a second layout of type|profile flags for old's logical range
 * (not yet live), on devices not in excl. One chunk when the holes take
 * it (same profile with devices leaving: stripes on staying devices stay
 * put; a convert between profiles of whole copies keeps the copies it
 * can); else several chunks that cover the range in order, cut only where
 * no extent of used[] (sorted by start) straddles the cut. Their dev
 * extents are recorded in memory; the maps are not in the chunk table.
 * *out is a malloc'd array of *nout maps; -ENOSPC if it does not fit.
 */
int mfs_alloc_chunk_at(struct mfs_fs_info *fs, const struct mfs_chunk_map *old, u64 flags,
		       const u64 *excl, int nexcl, const struct mfs_range *used, int nused,
		       struct mfs_chunk_map ***out, int *nout);
/* Undo mfs_alloc_chunk_at: give back the places (but those kept from old) and free. */
void mfs_free_chunk_layout(struct mfs_chunk_map **maps, int nmaps, const struct mfs_chunk_map *old);
/*
 * Does stripe j of new already hold its data, as a stripe of old left in
 * place: the same stripe of the same layout, or any copy when both
 * profiles keep whole copies (mfs_alloc_chunk_at keeps those on a convert)?
 */
bool mfs_stripe_holds_old(const struct mfs_chunk_map *old, const struct mfs_chunk_map *new, int j);
/* Does the new layout keep stripe i of the old one in place? */
bool mfs_stripe_kept(const struct mfs_chunk_map *old, int i, const struct mfs_chunk_map *new);
/* mirror 0: each piece from the first copy that reads (missing devices, rebuilds) */
int mfs_read_map(struct mfs_chunk_map *map, u64 logical, void *buf, u64 len, int mirror);
/* Same; on failure, a device in service whose read failed into *blame (left alone when none). */
int mfs_read_map_blamed(struct mfs_chunk_map *map, u64 logical, void *buf, u64 len, int mirror,
			struct mfs_device **blame);
int mfs_write_map(struct mfs_chunk_map *map, u64 logical, const void *buf, u64 len);
u64 mfs_map_stripe_size(const struct mfs_chunk_map *map);

#endif
