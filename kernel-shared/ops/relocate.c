/*
 * Moving one chunk: its data copied to the new layout (or its extents
 * evacuated into other chunks), read through every good copy, written in
 * parallel per device, then its items swapped in one transaction.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <time.h>
#include <uuid/uuid.h>
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/ops/restripe.h"
#include "kernel-shared/tree/alloc.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/tree/transaction.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/block/csum.h"
#include "kernel-shared/block/raid56.h"
#include "kernel-shared/block/testhook.h"
#include "kernel-shared/ops/restripe-internal.h"
#include "kernel-shared/ops/chunk-writer.h"

/*
 * MFS_TEST_RESTRIPE_DELAY_MS: a pause after each chunk is copied, before
 * it is swapped in, so that tests can pause, query or kill an operation
 * mid-way (and mid-chunk) however fast the copy is.
 * The same point is MFS_TEST_PAUSE_AT's "restripe-copied" (testhook.h).
 */
static void test_delay(void)
{
	static long ms = -1;

	if (ms < 0) {
		const char *v = getenv("MFS_TEST_RESTRIPE_DELAY_MS");

		ms = v ? atol(v) : 0;
		if (ms < 0 || ms > 60000)
			ms = 0;
	}
	mfs_test_pause_at("restripe-copied");
	if (ms) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

		nanosleep(&ts, NULL);
	}
}

/* ---------------- moving one chunk ---------------- */

int rs_delete_if_there(struct mfs_trans_handle *trans, struct mfs_root *root,
		       const struct mfs_key *key)
{
	struct mfs_path path;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_slot(trans, root, key, &path, -1, 1);
	if (ret == 0)
		ret = mfs_del_item(trans, root, &path);
	mfs_release_path(&path);
	return ret;
}

int rs_delete_key(struct mfs_trans_handle *trans, struct mfs_root *root, const struct mfs_key *key)
{
	int ret = rs_delete_if_there(trans, root, key);

	return ret > 0 ? -EUCLEAN : ret;
}

static int replace_chunk_items(struct mfs_trans_handle *trans, struct mfs_chunk_map *old,
			       struct mfs_chunk_map **new, int nnew)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_key key = { MFS_FIRST_CHUNK_TREE_OBJECTID, MFS_CHUNK_ITEM_KEY, old->logical };
	u64 oss = mfs_map_stripe_size(old);
	int i, m, ret;

	ret = rs_delete_key(trans, fs->chunk_root, &key);
	if (ret)
		return ret;
	for (m = 0; m < nnew; m++) {
		u32 size = mfs_chunk_item_size(new[m]->num_stripes);
		u8 *buf = malloc(size);

		if (!buf)
			return -ENOMEM;
		key.offset = new[m]->logical;
		mfs_chunk_map_to_item(fs, new[m], buf);
		ret = mfs_insert_item(trans, fs->chunk_root, &key, buf, size);
		free(buf);
		if (ret)
			return ret;
	}
	for (i = 0; i < old->num_stripes; i++) {
		struct mfs_key dk = { old->stripes[i].devid, MFS_DEV_EXTENT_KEY, old->stripes[i].physical };
		struct mfs_device *dev = mfs_find_device(fs, old->stripes[i].devid);

		ret = rs_delete_key(trans, fs->dev_root, &dk);
		if (ret)
			return ret;
		if (dev) {
			dev->bytes_used -= min_t(u64, oss, dev->bytes_used);
			dev->dirty = true;
		}
	}
	for (m = 0; m < nnew; m++) {
		u64 nss = mfs_map_stripe_size(new[m]);

		for (i = 0; i < new[m]->num_stripes; i++) {
			struct mfs_map_stripe *s = &new[m]->stripes[i];
			struct mfs_key dk = { s->devid, MFS_DEV_EXTENT_KEY, s->physical };
			struct mfs_dev_extent de = {
				.chunk_offset = cpu_to_le64(new[m]->logical),
				.length = cpu_to_le64(nss),
			};

			/* a stripe kept on a missing device (a replace of another one) has no s->dev */
			struct mfs_device *dev = mfs_find_device(fs, s->devid);

			ret = mfs_insert_item(trans, fs->dev_root, &dk, &de, sizeof(de));
			if (ret)
				return ret;
			if (dev) {
				dev->bytes_used += nss;
				dev->dirty = true;
			}
		}
	}
	return 0;
}

/* After the swap is committed the old places may be reused. */
static void release_old_extents(struct mfs_fs_info *fs, struct mfs_chunk_map *old,
				struct mfs_chunk_map **new, int nnew)
{
	int i, m;

	for (i = 0; i < old->num_stripes; i++) {
		struct mfs_device *dev = mfs_find_device(fs, old->stripes[i].devid);
		bool kept = false;

		for (m = 0; m < nnew; m++)
			kept |= mfs_stripe_kept(old, i, new[m]);
		if (dev && !kept)
			mfs_device_remove_extent(dev, old->stripes[i].physical);
	}
}

/*
 * An empty chunk is simply removed: no copy, and its space is free again.
 * bg is freed once the removal reaches its commit, whether that succeeds.
 */
static int remove_empty_chunk(struct mfs_fs_info *fs, struct mfs_block_group *bg)
{
	struct mfs_chunk_map *map = bg->map;
	struct mfs_trans_handle *trans;
	struct mfs_key key = { bg->start, MFS_BLOCK_GROUP_ITEM_KEY, bg->length };
	int ret;

	ret = mfs_start_transaction(fs, &trans);
	if (ret)
		return ret;
	ret = replace_chunk_items(trans, map, NULL, 0);
	if (!ret)
		ret = rs_delete_key(trans, fs->extent_root, &key);
	if (ret)
		return mfs_end_transaction_abort(trans, ret);
	mfs_remove_chunk_map(fs, map);
	mfs_remove_block_group(fs, bg);
	ret = mfs_commit_transaction(trans);
	if (!ret)
		release_old_extents(fs, map, NULL, 0);
	free(map);
	return ret;
}

/* Whether another data chunk of bg's profile exists. */
static bool other_of_profile(struct mfs_fs_info *fs, const struct mfs_block_group *bg)
{
	int i;

	for (i = 0; i < fs->nr_bgs; i++)
		if (fs->bgs[i] != bg && fs->bgs[i]->flags == bg->flags)
			return true;
	return false;
}

/* Whether bg is the only chunk of its type (data, metadata or system). */
bool rs_last_of_type(struct mfs_fs_info *fs, const struct mfs_block_group *bg)
{
	int i;

	for (i = 0; i < fs->nr_bgs; i++)
		if (fs->bgs[i] != bg && (fs->bgs[i]->flags & MFS_BLOCK_GROUP_TYPE_MASK) ==
					(bg->flags & MFS_BLOCK_GROUP_TYPE_MASK))
			return false;
	return true;
}

/*
 * Data chunks that became empty (their files deleted, or the writes made
 * during a convert come and gone) go back to the unallocated pool, where
 * any profile can use them, as btrfs's cleaner removes unused block
 * groups. Kept: metadata and system chunks (the space reservation counts
 * on them), the last data chunk of each profile (the profiles present
 * decide the allocation profile at the next mount), and everything while a
 * restripe runs (it removes the empty chunks it meets itself).
 */
int mfs_remove_unused_chunks(struct mfs_fs_info *fs)
{
	int i = 0, ret = 0;

	pthread_mutex_lock(&fs->lock);
	if (fs->fatal_error || fs->open_rows ||
	    (fs->restripe && fs->restripe->state == MFS_RESTRIPE_RUNNING))
		goto out;
	while (!ret && i < fs->nr_bgs) {
		struct mfs_block_group *bg = fs->bgs[i];

		if (!(bg->flags & MFS_BLOCK_GROUP_DATA) || (bg->flags & MFS_BLOCK_GROUP_METADATA) ||
		    bg->used || bg->reserved || bg->inflight || bg->ro ||
		    bg->new_chunk || !other_of_profile(fs, bg)) {
			i++;
			continue;
		}
		/* the commit it makes may allocate: make sure nothing goes there */
		bg->ro = true;
		ret = mfs_commit_if_dirty(fs);
		if (!ret && (bg->used || bg->reserved)) {
			bg->ro = false;
			i++;
			continue;
		}
		if (!ret)
			ret = remove_empty_chunk(fs, bg);	/* bgs[i] is the next one now */
		else
			bg->ro = false;
	}
out:
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

/*
 * A copy of the old layout that failed: counted against its device (the
 * relocation leaves it behind; a kept stripe waits for scrub). raid5/6
 * rebuilds (mirror > 1) say nothing about one device.
 */
static void count_bad_copy(struct mfs_fs_info *fs, struct mfs_chunk_map *old, u64 logical,
			   int mirror, int stat)
{
	struct mfs_device *dev;

	if (mfs_profile(old->type)->nparity && mirror > 1)
		return;
	dev = mfs_mirror_device(old, logical, mirror);
	/* one out of service was not read (mfs_dev_stat_inc says the same) */
	if (dev && mfs_dev_usable(dev))
		mfs_dev_count_error(fs, dev, stat);
}

/* Copy m of range r: copy 1 from src's windows (read ahead over old) when they hold it. */
static int read_copy(struct mfs_chunk_map *old, struct reloc_source *src, const struct mfs_range *r,
		     u8 *buf, int m)
{
	if (m == 1 && src && !rs_source_read(src, r->start, r->len, buf))
		return 0;
	return mfs_read_map(old, r->start, buf, r->len, m);
}

/*
 * Read range r from the old layout, picking a copy whose checksums hold;
 * src: what is read ahead of old (NULL: nothing).
 */
static int read_good(struct mfs_fs_info *fs, struct mfs_chunk_map *old, struct reloc_source *src,
		     const struct mfs_range *r, const u8 *csums, u8 *buf)
{
	int copies = mfs_num_copies(old), m, ret = -EIO, stat;
	u64 s, n;

	if (r->flags & MFS_EXTENT_FLAG_TREE_BLOCK) {
		struct mfs_tree_check chk = { .level = r->level, .owner = r->owner,
					      .transid = r->gen };

		for (m = 1; m <= copies; m++) {
			if (read_copy(old, src, r, buf, m)) {
				count_bad_copy(fs, old, r->start, m, MFS_DEV_STAT_READ_ERRS);
				continue;
			}
			if (!mfs_verify_tree_block(fs, buf, r->start, &chk, &stat))
				return 0;
			count_bad_copy(fs, old, r->start, m, stat);
		}
		return -EUCLEAN;
	}
	/*
	 * The first copy; where a piece of it cannot be read (a missing
	 * device: its column of a raid5/6 row, its copy of a mirror), that
	 * piece from another copy, or rebuilt. Sectors that do not match
	 * their checksums are tried in every other copy below.
	 */
	ret = read_copy(old, src, r, buf, 1);
	if (ret) {
		struct mfs_device *blame = NULL;
		bool degraded = mfs_chunk_degraded(old);

		/*
		 * With a member missing, a range reaching its column fails
		 * by design: it says nothing of the device where the range
		 * starts (counted, a degraded raid5 rebuild failed both
		 * survivors past fail_threshold)
		 */
		if (!degraded)
			count_bad_copy(fs, old, r->start, 1, MFS_DEV_STAT_READ_ERRS);
		ret = mfs_read_map_blamed(old, r->start, buf, r->len, 0, &blame);
		/*
		 * Read from no copy: where a device in service failed a
		 * read the rebuild needed, that one is named and counted
		 * (a degraded chunk has no other copy to tell it by)
		 */
		if (ret && degraded && blame) {
			mfs_dev_count_error(fs, blame, MFS_DEV_STAT_READ_ERRS);
			mfs_log(fs, "devid %llu (%s): read error while copying chunk %llu, which has a member missing: logical %llu cannot be rebuilt",
				(unsigned long long)blame->devid, blame->path,
				(unsigned long long)old->logical, (unsigned long long)r->start);
		}
	}
	if (ret)
		memset(buf, 0, r->len);
	if (!csums)
		return ret;
	n = r->len / MFS_SECTOR;
	for (s = 0; s < n; s++) {
		u8 got[MFS_CSUM_SIZE];
		u8 *sb = buf + s * MFS_SECTOR;
		const u8 *want = csums + s * fs->csum_size;
		bool ok = false;

		mfs_csum_compute(fs->csum_type, sb, MFS_SECTOR, got);
		if (ret == 0 && !memcmp(got, want, fs->csum_size))
			continue;
		if (!ret)
			count_bad_copy(fs, old, r->start + s * MFS_SECTOR, 1,
				       MFS_DEV_STAT_CORRUPTION_ERRS);
		for (m = 2; m <= copies && !ok; m++) {
			if (mfs_read_map(old, r->start + s * MFS_SECTOR, sb, MFS_SECTOR, m)) {
				count_bad_copy(fs, old, r->start + s * MFS_SECTOR, m,
					       MFS_DEV_STAT_READ_ERRS);
				continue;
			}
			mfs_csum_compute(fs->csum_type, sb, MFS_SECTOR, got);
			ok = !memcmp(got, want, fs->csum_size);
			if (!ok)
				count_bad_copy(fs, old, r->start + s * MFS_SECTOR, m,
					       MFS_DEV_STAT_CORRUPTION_ERRS);
		}
		if (!ok)
			return -EIO;
	}
	return 0;
}

static int extent_csums(struct mfs_fs_info *fs, const struct mfs_range *r, u8 **out)
{
	struct mfs_key key = { MFS_EXTENT_CSUM_OBJECTID, MFS_EXTENT_CSUM_KEY, r->start };
	struct mfs_path path;
	int ret;

	*out = NULL;
	if (!(r->flags & MFS_EXTENT_FLAG_DATA) || !fs->csum_root)
		return 0;
	mfs_init_path(&path);
	ret = mfs_search_slot(NULL, fs->csum_root, &key, &path, 0, 0);
	if (ret == 0 && leaf_item_size(path.nodes[0], path.slots[0]) ==
			r->len / MFS_SECTOR * fs->csum_size) {
		*out = malloc(r->len / MFS_SECTOR * fs->csum_size);
		if (*out)
			memcpy(*out, leaf_item_data(path.nodes[0], path.slots[0]),
			       r->len / MFS_SECTOR * fs->csum_size);
	}
	mfs_release_path(&path);
	return ret < 0 ? ret : 0;
}

/*
 * The copy streams. The used ranges of the next RESTRIPE_READAHEAD bytes
 * are asked of the devices ahead of the reads. The new layout is built in
 * memory a window of rows at a time: a row gives each stripe stripe_len
 * bytes at the same place, so a window is one large write per stripe,
 * bypassing the page cache. A thread writes one window while the next is
 * filled, so reading and writing overlap.
 */
#define RESTRIPE_READAHEAD	SZ_32M
#define RESTRIPE_WINDOW		(16 * SZ_1M)	/* all stripes of a window */

/*
 * Start reading what mirror 1 of map reads for logical [start, end): the
 * pieces each device holds, contiguous ones asked for at once (raid5/6
 * parity, and the other copies of mirrors, are left out).
 */
static void readahead_span(struct mfs_chunk_map *map, u64 start, u64 end)
{
	u64 from[map->num_stripes], to[map->num_stripes], n;
	int i;

	memset(to, 0, sizeof(to));
	for (; start < end; start += n) {
		struct mfs_io_map io;

		if (mfs_map_block(map, start, &io))
			break;
		n = min_t(u64, io.length, end - start);
		i = io.stripe[0];
		if (to[i] != io.physical[0]) {
			if (to[i] && map->stripes[i].dev && map->stripes[i].dev->io)
				mfs_io_readahead(map->stripes[i].dev->io, from[i], to[i] - from[i]);
			from[i] = io.physical[0];
		}
		to[i] = io.physical[0] + n;
	}
	for (i = 0; i < map->num_stripes; i++)
		if (to[i] && map->stripes[i].dev && map->stripes[i].dev->io)
			mfs_io_readahead(map->stripes[i].dev->io, from[i], to[i] - from[i]);
}

/* Read ahead the ranges from *next on that start below limit, near neighbours merged. */
static void readahead_ranges(struct mfs_chunk_map *map, const struct mfs_range *r, int n,
			     int *next, u64 limit)
{
	int i = *next;

	while (i < n && r[i].start < limit) {
		u64 start = r[i].start, end = r[i].start + r[i].len;

		for (i++; i < n && r[i].start < limit && r[i].start <= end + SZ_1M; i++)
			end = max_t(u64, end, r[i].start + r[i].len);
		readahead_span(map, start, end);
	}
	*next = i;
}

/*
 * Where a relocation reads and which stripes it writes. read is old with
 * its stripes in the order to try (a replace reads the source first, or
 * last with -r); old is read as it is when that fails. keep: stripes of
 * the new layout that already hold the data (NULL: write them all).
 * column: the one raid5/6 stripe that moves, copied alone (-1: none).
 */
struct copy_plan {
	struct mfs_chunk_map *old, *read;
	const u8 *keep;
	int column;
	struct reloc_job *job;
};

/*
 * One chunk's relocation: what its copy, its checkpoints and its swap
 * share. rec holds the new layout and how far the copy got on disk.
 */
struct reloc_job {
	struct mfs_fs_info *fs;
	struct mfs_block_group *bg;
	struct mfs_chunk_map *old;
	struct rs_reloc rec;
	struct mfs_range *ranges;	/* the chunk's used ranges, sorted */
	int n;
	u64 from;		/* the copy starts here: the chunk's start, or its record's cursor */
	u64 counted0;		/* the chunk's bytes counted in bytes_done before from */
	u64 base;		/* bytes_done without the chunk's */
	u64 since;		/* bytes copied since the last checkpoint */
	bool checkpoints;	/* its layout fits in a record */
	bool recorded;		/* a record of it is on disk */
};

/* Used bytes of the chunk in [start, end). */
static u64 used_between(const struct reloc_job *job, u64 start, u64 end)
{
	u64 sum = 0;
	int i;

	for (i = 0; i < job->n; i++) {
		u64 a = max_t(u64, job->ranges[i].start, start);
		u64 b = min_t(u64, job->ranges[i].start + job->ranges[i].len, end);

		if (a < b)
			sum += b - a;
	}
	return sum;
}

/*
 * bytes_done becomes `done` with the commit trans ends in: the item
 * written in it says so, the figure shown only once it is on disk, so a
 * crash never takes back what was shown.
 */
static int commit_progress(struct mfs_trans_handle *trans, struct mfs_restripe_status *st,
			   u64 done)
{
	int ret;

	st->bytes_pending = done - min_t(u64, done, st->bytes_done);
	ret = rs_write_item(trans, st, false);
	/*
	 * Its flushes and superblocks let go of fs->lock, so user I/O goes on
	 * meanwhile: the relocation holds nothing others may change across
	 * it (a checkpoint's copy is on disk; a swapped chunk's old map is its
	 * own, its old device extents are released after it).
	 */
	ret = ret ? mfs_end_transaction_abort(trans, ret) : mfs_commit_transaction_unlocking(trans);
	if (!ret)
		__atomic_add_fetch(&st->bytes_done, st->bytes_pending, __ATOMIC_RELAXED);
	st->bytes_pending = 0;
	return ret;
}

/*
 * Every RESTRIPE_CHECKPOINT bytes the copy is made durable: what it wrote
 * goes to stable storage, then one commit records how far it got (the
 * record, cut at a row of the new layout) with bytes_done. A pause or
 * cancel asked for meanwhile stops the copy there: -EINTR, -ECANCELED.
 */
#define RESTRIPE_CHECKPOINT	(64 * SZ_1M)

/* The record says the copy got to cursor, with bytes_done, in one commit. */
static int record_progress(struct reloc_job *job, u64 cursor)
{
	struct mfs_fs_info *fs = job->fs;
	struct mfs_trans_handle *trans;
	int ret;

	pthread_mutex_lock(&fs->lock);
	ret = mfs_start_transaction(fs, &trans);
	if (!ret) {
		job->rec.copied = cursor;
		job->rec.counted = job->counted0 + used_between(job, job->from, cursor);
		ret = rs_reloc_write(trans, &job->rec);
		if (ret)
			mfs_end_transaction_abort(trans, ret);
		else
			ret = commit_progress(trans, fs->restripe, job->base + job->rec.counted);
	}
	job->recorded |= !ret;
	pthread_mutex_unlock(&fs->lock);
	/* the tests' hook: after each checkpoint's commit, the last one too */
	mfs_test_pause_at("restripe-checkpoint");
	return ret;
}

static int checkpoint(const struct copy_plan *plan, struct chunk_writer *w, u64 next)
{
	struct reloc_job *job = plan->job;
	struct mfs_restripe_status *st = job->fs->restripe;
	struct mfs_chunk_map *map = w->map;
	u64 row_bytes = mfs_nr_data_stripes(map->type, map->num_stripes) * map->stripe_len;
	u64 row = (next - map->logical) / row_bytes, cursor = map->logical + row * row_bytes;
	int ret;

	if (!job->checkpoints || cursor <= job->rec.copied)
		return 0;
	job->since = 0;
	ret = cw_settle(w, row);
	if (!ret)
		ret = rs_flush_written(job->fs, job->rec.maps, job->rec.nmaps, plan->keep);
	if (!ret)
		ret = record_progress(job, cursor);
	if (!ret && __atomic_load_n(&st->cancel_req, __ATOMIC_RELAXED))
		return -ECANCELED;
	return !ret && __atomic_load_n(&st->pause_req, __ATOMIC_RELAXED) ? -EINTR : ret;
}

/*
 * One used range into the new layout, RESTRIPE_PIECE bytes at a time, so
 * the copy needs one buffer of that size whatever the extents on disk say.
 * mfs writes no data extent larger (fs/extents.c data_max_extent_size); a range read
 * from another image may be.
 */
#define RESTRIPE_PIECE		(4 * SZ_1M)

/* Piece r of the old layout into buf, read as the plan says, the old layout itself if that fails. */
static int read_piece(struct mfs_fs_info *fs, const struct copy_plan *plan, struct reloc_source *src,
		      const struct mfs_range *r, const u8 *sums, u8 *buf)
{
	int ret = read_good(fs, plan->read, src, r, sums, buf);

	if (ret && plan->read != plan->old)
		ret = read_good(fs, plan->old, NULL, r, sums, buf);
	return ret;
}

/*
 * A raid5/6 piece copied column-wise (moving_column): what lies in the
 * moving column is read from its old device alone, or rebuilt (checked
 * against its checksums either way, rebuilt, or read from a replace's
 * source, where that fails them); the rest of the piece only makes its
 * rows part of the copy - the writer takes the column's part of each row
 * (parity included) as the reloc source gives it, so the data of the
 * kept stripes is not checked (a rebuild reads it).
 */
static int copy_column(struct mfs_fs_info *fs, const struct copy_plan *plan,
		       struct chunk_writer *w, struct reloc_source *src,
		       const struct mfs_range *piece, const u8 *sums, u8 *buf)
{
	u64 pos, n;
	int ret = 0;

	for (pos = piece->start; pos < piece->start + piece->len && !ret; pos += n) {
		struct mfs_range seg = *piece;
		struct mfs_io_map io;
		u64 off = pos - piece->start;

		ret = mfs_map_block(plan->old, pos, &io);
		if (ret)
			break;
		n = min_t(u64, io.length, piece->start + piece->len - pos);
		if (io.stripe[0] != plan->column) {
			ret = cw_put(w, pos, NULL, n);
			continue;
		}
		seg.start = pos;
		seg.len = n;
		ret = read_piece(fs, plan, src, &seg,
				 sums ? sums + off / MFS_SECTOR * fs->csum_size : NULL, buf + off);
		if (!ret)
			ret = cw_put(w, pos, buf + off, n);
	}
	return ret;
}

static int copy_range(struct mfs_fs_info *fs, const struct copy_plan *plan,
		      struct chunk_writer *w, struct reloc_source *src, const struct mfs_range *r,
		      const u8 *csums, u8 *buf)
{
	struct mfs_restripe_status *st = fs->restripe;
	struct reloc_job *job = plan->job;
	u64 off, cnt;
	int ret = 0;

	for (off = 0; off < r->len && !ret; off += cnt) {
		struct mfs_range piece = *r;
		const u8 *sums = csums ? csums + off / MFS_SECTOR * fs->csum_size : NULL;
		u64 skip, held;
		bool tree = r->flags & MFS_EXTENT_FLAG_TREE_BLOCK;

		/*
		 * a tree block is read whole: its checksum covers all of it;
		 * data in pieces, none reaching past the window read ahead
		 */
		cnt = tree ? r->len : min_t(u64, r->len - off, RESTRIPE_PIECE);
		piece.start += off;
		/* what a resumed copy has on disk already is not copied again */
		if (piece.start + cnt <= job->from)
			continue;
		held = src ? rs_source_span(src, piece.start) : 0;
		if (!tree && held)
			cnt = min_t(u64, cnt, held);
		piece.len = cnt;
		skip = job->from > piece.start ? job->from - piece.start : 0;
		/*
		 * Column-wise, data in every case; a tree block when it lies
		 * in one stripe unit (always, as mfs places them; one from
		 * another image may not: it is read whole below).
		 */
		if (plan->column >= 0 && !skip &&
		    (!tree || piece.start % plan->old->stripe_len + cnt <= plan->old->stripe_len)) {
			ret = copy_column(fs, plan, w, src, &piece, sums, buf);
		} else {
			ret = read_piece(fs, plan, src, &piece, sums, buf);
			if (!ret)
				ret = cw_put(w, piece.start + skip, buf + skip, cnt - skip);
		}
		if (ret == -EIO || ret == -EUCLEAN)
			__atomic_add_fetch(&st->read_errs, 1, __ATOMIC_RELAXED);
		job->since += cnt - skip;
		if (!ret && job->since >= RESTRIPE_CHECKPOINT)
			ret = checkpoint(plan, w, piece.start + cnt);
	}
	return ret;
}

static int fill_row(void *arg, u64 row, u8 **slots)
{
	return rs_source_fill_row(arg, row, slots);
}

/*
 * Copy every used range of the chunk into the new layout (raid5/6 rows
 * whole, each written once), reading each range with read_good.
 */
static int copy_chunk(struct mfs_fs_info *fs, const struct copy_plan *plan,
		      struct mfs_chunk_map *new, struct mfs_range *r, u8 **csums, int n)
{
	struct mfs_restripe_status *st = fs->restripe;
	u64 slen = new->stripe_len, ra_limit = 0;
	struct chunk_writer w = { .fs = fs, .map = new, .keep = plan->keep };
	struct reloc_source *src = NULL;
	int i, ra_next = 0, ret = 0, err;
	u8 *buf;

	w.rows_max = max_t(u64, 1, RESTRIPE_WINDOW / (new->num_stripes * slen));
	for (i = 0; i < 2; i++) {
		w.win[i].buf = mfs_io_alloc_bulk(new->num_stripes * w.rows_max * slen);
		if (!w.win[i].buf)
			ret = -ENOMEM;
	}
	buf = malloc(RESTRIPE_PIECE);
	if (!buf)
		ret = -ENOMEM;
	/* without a window read ahead, the page cache reads ahead */
	if (!ret && n && rs_source_open(fs, plan->read, r, n, plan->job->from, plan->column, &src))
		src = NULL;
	/* parity kept: the rows as on disk come from the windows */
	if (w.keep && mfs_profile(new->type)->nparity) {
		w.fill = fill_row;
		w.fill_arg = src;
		w.as_filled = plan->column >= 0;
		if (!src && n && !ret)
			ret = -ENOMEM;
	}
	for (i = 0; i < n && !ret; i++) {
		if (!src && r[i].start + RESTRIPE_READAHEAD / 2 >= ra_limit) {
			ra_limit = r[i].start + RESTRIPE_READAHEAD;
			readahead_ranges(plan->read, r, n, &ra_next, ra_limit);
		}
		/*
		 * The checksums are looked up as the copy reaches each extent,
		 * the lock held only for that: file operations of a live
		 * filesystem wait for one lookup, not for a whole chunk's. The
		 * chunk takes no new extents, so an item found at the extent's
		 * start is that extent's (one freed meanwhile has none left).
		 */
		pthread_mutex_lock(&fs->lock);
		ret = extent_csums(fs, &r[i], &csums[i]);
		pthread_mutex_unlock(&fs->lock);
		if (!ret)
			ret = copy_range(fs, plan, &w, src, &r[i], csums[i], buf);
	}
	rs_source_close(src);
	if (!ret)
		ret = cw_flush(&w);
	err = cw_wait(&w);
	if (w.ret)
		__atomic_add_fetch(&st->write_errs, 1, __ATOMIC_RELAXED);
	free(w.win[0].buf);
	free(w.win[1].buf);
	free(buf);
	return ret ?: err;
}

/*
 * The chunk went into several pieces: in memory, its map and block group
 * give way to one per piece, with the used bytes of the extents each
 * holds (no extent straddles a cut); on disk its block group item goes
 * and the pieces' are written with this transaction (they are dirty).
 */
static int swap_in_pieces(struct mfs_trans_handle *trans, struct mfs_block_group *bg,
			  struct mfs_chunk_map *old, struct mfs_chunk_map **new, int nnew)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_key key = { bg->start, MFS_BLOCK_GROUP_ITEM_KEY, bg->length };
	struct mfs_range *r = NULL;
	u64 used[nnew];
	int nr = 0, i, m, ret;

	ret = mfs_bg_used_ranges(fs, bg, &r, &nr);
	if (ret)
		return ret;
	memset(used, 0, sizeof(used));
	for (i = 0, m = 0; i < nr; i++) {
		while (m < nnew && r[i].start >= new[m]->logical + new[m]->length)
			m++;
		if (m == nnew || r[i].start + r[i].len > new[m]->logical + new[m]->length) {
			free(r);
			return -EUCLEAN;	/* cut through an extent: never placed so */
		}
		used[m] += r[i].len;
	}
	free(r);
	mfs_remove_chunk_map(fs, old);
	mfs_remove_block_group(fs, bg);
	for (m = 0; m < nnew; m++) {
		struct mfs_block_group *piece;

		ret = mfs_add_chunk_map(fs, new[m]);
		if (!ret)
			ret = mfs_add_block_group(fs, new[m], used[m], false, &piece);
		if (ret)
			return ret;
		piece->dirty = true;
		ret = mfs_rebuild_bg_space(fs, piece);
		if (ret)
			return ret;
	}
	ret = rs_delete_key(trans, fs->extent_root, &key);
	if (!ret)
		ret = replace_chunk_items(trans, old, new, nnew);
	return ret;
}

static u64 end_of(struct mfs_chunk_map **maps, int n)
{
	return maps[n - 1]->logical + maps[n - 1]->length;
}

/* Copy each piece's share of the used ranges (sorted) into it. */
static int copy_pieces(struct mfs_fs_info *fs, const struct copy_plan *plan,
		       struct mfs_chunk_map **new, int nnew, struct mfs_range *r, u8 **csums, int n)
{
	int m, first = 0, ret = 0;

	for (m = 0; m < nnew && !ret; m++) {
		u64 end = new[m]->logical + new[m]->length;
		int last = first;

		while (last < n && r[last].start < end)
			last++;
		/* a resumed copy: only what lies past its cursor */
		while (first < last && r[first].start + r[first].len <= plan->job->from)
			first++;
		if (end > plan->job->from)
			ret = copy_chunk(fs, plan, new[m], r + first, csums + first, last - first);
		first = last;
	}
	/*
	 * What the devices still hold goes to stable storage now, before the
	 * lock is taken for the swap: the commit under the lock, which
	 * flushes every device again, then finds nothing left to write back.
	 * A last checkpoint then says the whole chunk is copied: the figure
	 * shown counts it at once, and a crash before the swap costs no copy.
	 */
	ret = ret ?: rs_flush_written(fs, new, nnew, plan->keep);
	if (!ret && plan->job->checkpoints &&
	    used_between(plan->job, plan->job->rec.copied, end_of(new, nnew)))
		ret = record_progress(plan->job, end_of(new, nnew));
	return ret;
}

/*
 * Replace: old's layout with each stripe on device `from` moved to the
 * smallest hole on device `to` that holds it; the other stripes stay.
 * Recorded in memory like mfs_alloc_chunk_at's layouts.
 */
static int replace_layout(struct mfs_fs_info *fs, const struct mfs_chunk_map *old, u64 from,
			  u64 to, struct mfs_chunk_map ***out, int *nout)
{
	struct mfs_device *tgt = mfs_find_device(fs, to);
	u64 ss = mfs_map_stripe_size(old), phys;
	struct mfs_chunk_map **maps, *new;
	int i, ret = 0;

	if (!tgt || !tgt->io)
		return -ENODEV;
	maps = calloc(1, sizeof(*maps));
	new = mfs_alloc_chunk_map(old->num_stripes);
	if (!maps || !new) {
		free(maps);
		free(new);
		return -ENOMEM;
	}
	memcpy(new, old, sizeof(*old) + old->num_stripes * sizeof(old->stripes[0]));
	maps[0] = new;
	for (i = 0; i < new->num_stripes && !ret; i++) {
		struct mfs_map_stripe *s = &new->stripes[i];

		if (s->devid != from)
			continue;
		ret = mfs_device_best_fit(tgt, ss, &phys);
		if (!ret)
			ret = mfs_device_add_extent(tgt, phys, ss, old->logical);
		if (ret)
			break;
		s->devid = to;
		s->physical = phys;
		s->dev = tgt;
		memcpy(s->dev_uuid, tgt->uuid, MFS_UUID_SIZE);
	}
	if (ret) {
		mfs_free_chunk_layout(maps, 1, old);
		return ret;
	}
	*out = maps;
	*nout = 1;
	return 0;
}

/*
 * The order a replace reads old in: within each set of mirrors, the
 * stripes on `from` first - or last with -r, and then, for parity
 * profiles, not at all (the data is rebuilt; old itself is read if
 * that fails).
 */
static struct mfs_chunk_map *replace_read_map(const struct mfs_chunk_map *old, u64 from,
					      bool others_first)
{
	const struct mfs_raid_attr *a = mfs_profile(old->type);
	struct mfs_chunk_map *r = mfs_alloc_chunk_map(old->num_stripes);
	int group = a->sub_stripes > 1 ? a->sub_stripes : a->ncopies > 1 ? old->num_stripes : 1;
	int g, i, j;

	if (!r)
		return NULL;
	memcpy(r, old, sizeof(*old) + old->num_stripes * sizeof(old->stripes[0]));
	if (a->nparity) {
		for (i = 0; others_first && i < r->num_stripes; i++)
			if (r->stripes[i].devid == from)
				r->stripes[i].dev = NULL;
		return r;
	}
	for (g = 0; group > 1 && g + group <= r->num_stripes; g += group) {
		int n = 0;

		/* a stable partition of the group: the preferred stripes first */
		for (j = 0; j < 2; j++)
			for (i = g; i < g + group; i++)
				if ((old->stripes[i].devid == from) == (j == (others_first ? 1 : 0)))
					r->stripes[g + n++] = old->stripes[i];
	}
	return r;
}

/*
 * No room for the chunk's new layout: its data moves into other chunks
 * (those of the target profile first, new ones as needed), then the empty
 * chunk goes. Called and returns with fs->lock held.
 */
/*
 * Each extent moved counts in the balance item written in its
 * transaction, and in the figure shown once that is committed.
 */
static int evacuate_progress(struct mfs_trans_handle *trans, u64 bytes, void *arg)
{
	struct mfs_restripe_status *st = arg;

	if (!trans) {
		__atomic_add_fetch(&st->bytes_done, st->bytes_pending, __ATOMIC_RELAXED);
		st->bytes_pending = 0;
		return 0;
	}
	st->bytes_pending += bytes;
	return rs_write_item(trans, st, false);
}

static int evacuate_chunk(struct mfs_fs_info *fs, struct mfs_block_group *bg)
{
	struct mfs_restripe_status *st = fs->restripe;
	u64 start = bg->start, length = bg->length;
	int ret = mfs_evacuate_block_group(fs, bg, evacuate_progress, st);

	/* moves a failure took back are not counted */
	st->bytes_pending = 0;

	if (!ret) {
		/* the tests' hook runs where a relocation's copy ends, lock or not */
		pthread_mutex_unlock(&fs->lock);
		test_delay();
		pthread_mutex_lock(&fs->lock);
	}
	bg = mfs_lookup_block_group(fs, start);
	if (!bg || bg->start != start)
		return ret ? ret : -ENOENT;
	if (!ret)
		ret = remove_empty_chunk(fs, bg);
	if (ret) {
		/* a removal that failed in its commit has freed bg already */
		bg = mfs_lookup_block_group(fs, start);
		if (bg && bg->start == start)
			bg->ro = false;
		return ret;
	}
	st->completed++;
	/* passed; persisted with the next progress save */
	if (st->cursor < start + length)
		st->cursor = start + length;
	return 0;
}

/*
 * Get what is pending onto disk, then take no new allocations in bg. In
 * this order: the commit may need tree blocks, and with the chunk already
 * read-only the only metadata chunk could not give them - a second one
 * would be allocated, which may leave no room for the new layout. The lock
 * is held throughout, so nothing allocates between. Writers may still be
 * filling extents they reserved here before: wait until their items are
 * in (the wait drops the lock), then commit those too, so the extent tree
 * lists everything to copy. On failure bg takes allocations again.
 */
static int quiesce_chunk(struct mfs_fs_info *fs, struct mfs_block_group *bg)
{
	int ret = mfs_commit_if_dirty(fs);

	if (ret)
		return ret;
	bg->ro = true;
	if (!bg->inflight)
		return 0;
	while (bg->inflight)
		pthread_cond_wait(&fs->inflight_done, &fs->lock);
	ret = mfs_commit_if_dirty(fs);
	if (ret)
		bg->ro = false;
	return ret;
}

/* The new layout of old: a replace's, or one placed beside it. */
static int new_layout(struct mfs_fs_info *fs, const struct mfs_restripe_status *st,
		      struct mfs_chunk_map *old, const struct mfs_range *ranges, int n,
		      struct mfs_chunk_map ***new, int *nnew)
{
	u64 excl[MFS_RESTRIPE_MAX_DEVIDS];
	u64 flags = (old->type & MFS_BLOCK_GROUP_TYPE_MASK) | rs_target_profile(&st->args, old);
	int nexcl = 0, i;

	if (st->args.op == MFS_RESTRIPE_OP_REPLACE)
		return replace_layout(fs, old, st->args.devids[0], st->args.devids[1], new, nnew);
	if (st->args.op == MFS_RESTRIPE_OP_DELETE)
		for (i = 0; i < st->args.nr_devids; i++)
			excl[nexcl++] = st->args.devids[i];
	return mfs_alloc_chunk_at(fs, old, flags, excl, nexcl, ranges, n, new, nnew);
}

/*
 * Whether a device has a clean record: no error of any kind counted on
 * it, ever (the counters persist until `device stats -z`).
 */
static bool dev_clean_record(struct mfs_device *dev)
{
	size_t k;

	if (!mfs_dev_usable(dev) || mfs_dev_failing(dev))
		return false;
	for (k = 0; k < ARRAY_SIZE(dev->stats); k++)
		if (__atomic_load_n(&dev->stats[k], __ATOMIC_RELAXED))
			return false;
	return true;
}

/*
 * A raid5/6 layout that keeps every stripe but one in place (a replace's;
 * a delete's beside the stripes that stay) is copied column-wise: the
 * column that moves alone (the stripe returned; -1: every row whole). Its
 * old device in service with a clean record is read as it is, as md's
 * replace does: one read of it for each write of the target, where
 * rebuilding every row read all the columns. Its data and tree blocks
 * are checked against their checksums (what fails them is rebuilt from
 * the others, and counted: the chunks after it are copied row by row);
 * its parity, of rows written whole, is that of the kept stripes. A
 * missing raid5 column is rebuilt from the others column-wise, its data
 * checked the same way, its parity computed from the data beside it (a
 * bad sector there is lost with or without the copy: the parity that
 * could have rebuilt it was on the missing device). Row by row - every
 * column read and checked, the target's parity computed from the good
 * data - go: a device with errors on record (one replaced for its errors
 * passes on none), a replace with -r (the source's copies can make up
 * for a bad one elsewhere), and raid6 with the column missing (Q can).
 */
static int moving_column(const struct copy_plan *plan, const struct mfs_chunk_map *new)
{
	struct mfs_device *dev;
	int i, col = -1;

	if (!mfs_profile(plan->old->type)->nparity || !plan->keep ||
	    new->num_stripes != plan->old->num_stripes)
		return -1;
	for (i = 0; i < new->num_stripes; i++) {
		if (plan->keep[i])
			continue;
		if (col >= 0)
			return -1;
		col = i;
	}
	if (col < 0)
		return -1;
	dev = plan->old->stripes[col].dev;
	if (!mfs_dev_usable(dev))
		return mfs_profile(plan->old->type)->nparity == 1 ? col : -1;
	if (!plan->read->stripes[col].dev)
		return -1;
	return dev_clean_record(dev) ? col : -1;
}

/*
 * What the copy reads (a replace may avoid its source) and, without
 * parity, which stripes of a one-piece layout already hold their data.
 */
static int plan_copy(const struct mfs_restripe_status *st, struct mfs_chunk_map *old,
		     struct mfs_chunk_map **new, int nnew, struct copy_plan *plan, u8 **keep)
{
	int i;

	plan->old = plan->read = old;
	plan->column = -1;
	if (st->args.op == MFS_RESTRIPE_OP_REPLACE) {
		plan->read = replace_read_map(old, st->args.devids[0],
					      st->args.flags & MFS_BALANCE_REPLACE_READ_OTHERS);
		if (!plan->read)
			return -ENOMEM;
	}
	/*
	 * With parity, a stripe keeps its place only in a layout of the same
	 * geometry (a replace's); the copy then writes the other stripes'
	 * parts of whole rows as they are on disk (copy_chunk).
	 */
	if (nnew != 1)
		return 0;
	*keep = calloc(new[0]->num_stripes, 1);
	if (!*keep)
		return -ENOMEM;
	for (i = 0; i < new[0]->num_stripes; i++)
		if (((*keep)[i] = mfs_stripe_holds_old(old, new[0], i)))
			plan->keep = *keep;
	plan->column = moving_column(plan, new[0]);
	return 0;
}

/*
 * The copied chunk takes its new layout, with the restripe's cursor, in
 * one commit (its record, if any, goes in it). Swap in memory first: the
 * tree changes below may allocate, and the chunk (now in its new layout)
 * can take them, so relocating the only metadata chunk needs no second
 * one. The commit makes it all durable at once - one chunk or all its
 * pieces; a failed commit leaves the filesystem read-only. bg is gone
 * after a swap in pieces.
 */
static int swap_in(struct reloc_job *job)
{
	struct mfs_fs_info *fs = job->fs;
	struct mfs_restripe_status *st = fs->restripe;
	struct mfs_block_group *bg = job->bg;
	struct mfs_chunk_map *old = job->old, **new = job->rec.maps;
	int nnew = job->rec.nmaps;
	struct mfs_trans_handle *trans;
	int ret = mfs_start_transaction(fs, &trans);

	if (ret)
		return ret;
	st->cursor = old->logical + old->length;
	st->completed++;
	if (nnew == 1) {
		mfs_replace_chunk_map(fs, old, new[0]);
		bg->map = new[0];
		ret = mfs_rebuild_bg_space(fs, bg);
		bg->ro = false;
		if (!ret)
			ret = replace_chunk_items(trans, old, new, 1);
		/*
		 * the block group item records the profile, and whether it is
		 * below what was asked for (format §7.4): a reduced chunk
		 * given the profile asked for (a convert) is reduced no more
		 */
		if ((old->type & MFS_BLOCK_GROUP_PROFILE_MASK) !=
		    (new[0]->type & MFS_BLOCK_GROUP_PROFILE_MASK))
			bg->dirty = true;
		if (bg->reduced && (new[0]->type & MFS_BLOCK_GROUP_PROFILE_MASK) ==
				   mfs_target_profile(fs, new[0]->type)) {
			bg->dirty = true;
			bg->reduced = false;
			bg->asked = 0;
		}
	} else {
		ret = swap_in_pieces(trans, bg, old, new, nnew);
	}
	if (!ret && job->recorded)
		ret = rs_reloc_delete(trans, old->logical);
	if (ret) {
		ret = mfs_end_transaction_abort(trans, ret);
		/* swapped out of the table already (the pieces' may fail before) */
		if (mfs_find_chunk(fs, old->logical) != old)
			free(old);
		return ret;
	}
	ret = commit_progress(trans, st, job->base + job->counted0 +
					 used_between(job, job->from, old->logical + old->length));
	/* a failed commit keeps the old places (the disk still points there) */
	if (!ret)
		release_old_extents(fs, old, new, nnew);
	free(old);	/* out of the table since the swap, whether the commit held */
	return ret;
}

/*
 * An empty chunk is relocated by removing it: it counts, as in btrfs. The
 * last chunk of its type is relocated as any other (an empty copy): the
 * profiles present decide the allocation profile at the next mount, so
 * removing it would forget a convert.
 */
static bool relocate_by_removing(struct mfs_fs_info *fs, struct mfs_block_group *bg)
{
	return bg->used == 0 && bg->reserved == 0 && !rs_last_of_type(fs, bg);
}

/*
 * A chunk whose copy stopped at a checkpoint goes on from it, with the
 * layout its record gives (the chunk has been read-only since).
 */
static int resume_job(struct reloc_job *job)
{
	struct mfs_fs_info *fs = job->fs;
	struct mfs_restripe_status *st = fs->restripe;
	struct rs_reloc *rc = st->reloc;

	job->rec = *rc;
	free(rc);
	st->reloc = NULL;
	job->recorded = job->checkpoints = true;
	job->from = job->rec.copied;
	job->counted0 = job->rec.counted;
	job->base = st->bytes_done - min_t(u64, st->bytes_done, job->counted0);
	mfs_log(fs, "chunk %llu: its copy goes on from its checkpoint, %llu MiB in",
		(unsigned long long)job->old->logical,
		(unsigned long long)((job->from - job->old->logical) >> 20));
	return mfs_bg_used_ranges(fs, job->bg, &job->ranges, &job->n);
}

/*
 * With fs->lock held: the chunk read-only and its new layout, a record's
 * or a new one. 1 when nothing is left to copy: the chunk is gone, or
 * was removed or emptied here. On failure the chunk takes extents again.
 */
static int start_job(struct reloc_job *job, u64 logical)
{
	struct mfs_fs_info *fs = job->fs;
	struct mfs_restripe_status *st = fs->restripe;
	int ret;

	job->old = mfs_find_chunk(fs, logical);
	job->bg = mfs_lookup_block_group(fs, logical);
	if (!job->old || !job->bg || job->old->logical != logical)
		return 1;	/* gone meanwhile */
	if (st->reloc && st->reloc->logical == logical) {
		if (!st->reloc->stale)
			return resume_job(job);
		ret = rs_reloc_drop(fs);
		if (ret)
			return ret;
	}
	ret = quiesce_chunk(fs, job->bg);
	if (!ret && relocate_by_removing(fs, job->bg)) {
		ret = remove_empty_chunk(fs, job->bg);
		if (!ret)
			st->completed++;
		return ret ?: 1;
	}
	if (ret)
		return ret;
	/* the extents first: a layout in pieces is cut between them */
	ret = mfs_bg_used_ranges(fs, job->bg, &job->ranges, &job->n);
	if (!ret)
		ret = new_layout(fs, st, job->old, job->ranges, job->n, &job->rec.maps,
				 &job->rec.nmaps);
	if (ret == -ENOSPC && rs_can_evacuate(&st->args, job->old))
		return evacuate_chunk(fs, job->bg) ?: 1;
	if (ret) {
		job->bg->ro = false;
		return ret;
	}
	job->rec.logical = job->rec.copied = job->from = logical;
	job->base = st->bytes_done;
	/*
	 * Data chunks only: a checkpoint commits, and a commit writes tree
	 * blocks - into metadata chunks, which a metadata chunk being copied
	 * (read-only, often the only one) cannot take; a second one may find
	 * no devices (a replace's) and the commit would fail. Metadata is
	 * small: its chunks are copied whole.
	 */
	job->checkpoints = (job->old->type & MFS_BLOCK_GROUP_TYPE_MASK) == MFS_BLOCK_GROUP_DATA &&
			   rs_reloc_fits(fs, &job->rec);
	return 0;
}

/*
 * The copy stopped (fs->lock held). At a checkpoint, for a pause or a
 * cancel, the record stays, for the resume or the cancel to deal with;
 * otherwise the new layout goes - its record first, in a commit - and the
 * chunk takes extents again. bytes_done stays what is on disk.
 */
static void stop_job(struct reloc_job *job, int err)
{
	struct mfs_fs_info *fs = job->fs;
	struct mfs_restripe_status *st = fs->restripe;
	struct rs_reloc *rc;

	if (job->recorded && (rc = malloc(sizeof(*rc)))) {
		*rc = job->rec;
		st->reloc = rc;
		job->rec.maps = NULL;
		if (err != -EINTR && err != -ECANCELED)
			rs_reloc_drop(fs);
		return;
	}
	/* (without memory for it, a record's chunk stays read-only until the next open) */
	if (!job->recorded)
		job->bg->ro = false;
	mfs_free_chunk_layout(job->rec.maps, job->rec.nmaps, job->old);
	job->rec.maps = NULL;
}

int rs_relocate_chunk(struct mfs_fs_info *fs, u64 logical)
{
	struct reloc_job job = { .fs = fs };
	struct copy_plan plan = { .job = &job };
	u8 **csums = NULL, *keep = NULL;
	int i, ret;

	pthread_mutex_lock(&fs->lock);
	ret = start_job(&job, logical);
	if (ret) {
		if (ret < 0 && job.recorded)
			stop_job(&job, ret);
		pthread_mutex_unlock(&fs->lock);
		free(job.ranges);
		return ret > 0 ? 0 : ret;
	}
	ret = plan_copy(fs->restripe, job.old, job.rec.maps, job.rec.nmaps, &plan, &keep);
	csums = calloc(job.n + 1, sizeof(*csums));	/* filled by the copy */
	if (!csums)
		ret = -ENOMEM;
	pthread_mutex_unlock(&fs->lock);

	/* the copy runs without the lock: the chunk only loses extents meanwhile */
	if (!ret)
		ret = copy_pieces(fs, &plan, job.rec.maps, job.rec.nmaps, job.ranges, csums, job.n);
	if (!ret)
		test_delay();

	pthread_mutex_lock(&fs->lock);
	if (!ret)
		ret = swap_in(&job);
	else
		stop_job(&job, ret);
	pthread_mutex_unlock(&fs->lock);
	free(job.rec.maps);
	for (i = 0; csums && i < job.n; i++)
		free(csums[i]);
	free(csums);
	free(job.ranges);
	if (plan.read != plan.old)
		free(plan.read);
	free(keep);
	return ret;
}
