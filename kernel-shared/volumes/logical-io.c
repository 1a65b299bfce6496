/*
 * Logical reads and writes through the chunk maps: mirrors, raid5/6
 * rows written whole with their parity, rebuilds, self-healing reads and
 * device flushes (DESIGN §3).
 */
#include <stdlib.h>
#include <string.h>
#include "kernel-shared/volumes/fs.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/block/raid56.h"

enum { READ_RANK_PREFERRED, READ_RANK_HEALTHY, READ_RANK_STALE, READ_RANK_UNUSABLE };

/* Reads go first to the read_policy device, then any healthy one, a stale one last. */
static int read_rank(const struct mfs_fs_info *fs, const struct mfs_device *dev)
{
	if (!mfs_dev_usable(dev))
		return READ_RANK_UNUSABLE;
	if (dev->stale_gen)
		return READ_RANK_STALE;
	if (fs->read_devid && dev->devid == fs->read_devid)
		return READ_RANK_PREFERRED;
	return READ_RANK_HEALTHY;
}

int mfs_mirror_order(struct mfs_fs_info *fs, const struct mfs_chunk_map *map, u64 logical,
		     int *order)
{
	int copies = mfs_num_copies(map), rank[copies], i, j, n = 0;
	struct mfs_io_map io;

	if (mfs_map_block(map, logical, &io)) {
		for (i = 0; i < copies; i++)
			order[i] = i + 1;
		return copies;
	}
	for (i = 0; i < copies; i++) {
		/* raid5/6: mirror 1 is the data column, the rest rebuild it */
		if (mfs_profile(map->type)->nparity)
			rank[i] = i ? READ_RANK_HEALTHY : read_rank(fs, map->stripes[io.stripe[0]].dev);
		else
			rank[i] = read_rank(fs, map->stripes[io.stripe[i]].dev);
	}
	/* a stable sort by rank: within one rank, the copies in their order */
	for (j = READ_RANK_PREFERRED; j <= READ_RANK_UNUSABLE; j++)
		for (i = 0; i < copies; i++)
			if (rank[i] == j)
				order[n++] = i + 1;
	return copies;
}

/* ---------------- logical I/O ---------------- */

/*
 * raid5/6 rows are written whole, once (DESIGN §3): writes land in an
 * in-memory row until the row is full or the transaction commits, then
 * data and parity go out together.
 */
struct mfs_open_row {
	struct mfs_chunk_map *map;
	u64 row;
	/*
	 * ROW_UNIT blocks written so far, each counted once (space given back
	 * and handed out again is written twice); a block only partly written
	 * is not counted, so such a row waits for the commit.
	 */
	u64 filled;
	u8 *written;		/* bitmap of those blocks */
	u8 *buf;		/* ndata * stripe_len */
	/*
	 * Full, and being written without fs->lock by the writer that filled
	 * it (mfs_write_full_rows); it stays listed, so reads under the lock
	 * find its data here until that writer releases it.
	 */
	bool writing;
	struct mfs_open_row *next;
	struct mfs_open_row *next_full;	/* in that writer's list (NULL unless writing) */
};

static struct mfs_open_row *find_open_row(struct mfs_fs_info *fs,
					  struct mfs_chunk_map *map, u64 row)
{
	struct mfs_open_row *r;

	for (r = fs->open_rows; r; r = r->next)
		if (r->map == map && r->row == row)
			return r;
	return NULL;
}

/* A strict write (the restriper's new stripes): any failure fails it. */
static int write_stripe(struct mfs_map_stripe *s, const void *buf, u64 len, u64 physical)
{
	if (!mfs_dev_usable(s->dev))
		return -EIO;
	return mfs_io_write(s->dev->io, buf, len, physical);
}

/*
 * One copy of a redundant write: 0 written, 1 not (its device is gone, or
 * fails now and is marked failed): the other copies carry the data; -EIO
 * when it fails and the others cannot do without it.
 */
static int write_copy(struct mfs_fs_info *fs, struct mfs_map_stripe *s, const void *buf,
		      u64 len, u64 physical)
{
	int ret;

	if (!mfs_dev_usable(s->dev))
		return 1;
	ret = mfs_io_write(s->dev->io, buf, len, physical);
	if (!ret)
		return 0;
	return mfs_dev_fail(fs, s->dev, MFS_DEV_STAT_WRITE_ERRS, ret) ? 1 : -EIO;
}

static int read_stripe(struct mfs_map_stripe *s, void *buf, u64 len, u64 physical)
{
	if (!mfs_dev_usable(s->dev))
		return -EIO;
	return mfs_io_read(s->dev->io, buf, len, physical);
}

/* read_stripe, naming in *blame (when not NULL) a device in service that failed it. */
static int read_stripe_blamed(struct mfs_map_stripe *s, void *buf, u64 len, u64 physical,
			      struct mfs_device **blame)
{
	int ret = read_stripe(s, buf, len, physical);

	if (ret && blame && mfs_dev_usable(s->dev))
		*blame = s->dev;
	return ret;
}

/* Stripe index of data column d / parity in a row (rotation as mfs_map_block). */
int mfs_row_stripe(const struct mfs_chunk_map *map, u64 row, int col)
{
	return (col + row % map->num_stripes) % map->num_stripes;
}

/* blocks[] = the row's data columns, then its parity computed into parity. */
static int row_blocks(const struct mfs_chunk_map *map, const u8 *data, u8 *parity, void **blocks)
{
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	int ndata = map->num_stripes - a->nparity, i;
	u64 slen = map->stripe_len;

	for (i = 0; i < ndata; i++)
		blocks[i] = (void *)(data + i * slen);
	for (i = 0; i < a->nparity; i++)
		blocks[ndata + i] = parity + i * slen;
	return mfs_raid56_gen(ndata, a->nparity, slen, blocks);
}

/* One row through the page cache (the restriper's copies into a new chunk). */
static int write_full_row(struct mfs_chunk_map *map, u64 row, const u8 *data)
{
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	int n = map->num_stripes, i, ret = 0;
	u64 slen = map->stripe_len;
	void *blocks[n];
	u8 *parity;

	parity = malloc(a->nparity * slen);
	if (!parity)
		return -ENOMEM;
	ret = row_blocks(map, data, parity, blocks);
	for (i = 0; !ret && i < n; i++) {
		int idx = mfs_row_stripe(map, row, i);
		struct mfs_map_stripe *s = &map->stripes[idx];

		ret = write_stripe(s, blocks[i], slen, s->physical + row * slen);
	}
	free(parity);
	return ret;
}

static int write_rows(struct mfs_fs_info *fs, struct mfs_open_row *rows, bool full_list);

static u64 row_logical(const struct mfs_open_row *r)
{
	const struct mfs_raid_attr *a = mfs_profile(r->map->type);

	return r->map->logical + r->row * (r->map->num_stripes - a->nparity) * r->map->stripe_len;
}

#define ROW_UNIT 4096

static void free_row(struct mfs_open_row *r)
{
	free(r->written);
	free(r->buf);
	free(r);
}

/* Count the whole ROW_UNIT blocks of [in_row, in_row + n) written the first time. */
static void mark_written(struct mfs_open_row *r, u64 in_row, u64 n)
{
	u64 b = (in_row + ROW_UNIT - 1) / ROW_UNIT, end = (in_row + n) / ROW_UNIT;

	for (; b < end; b++) {
		if (r->written[b / 8] & (1U << (b % 8)))
			continue;
		r->written[b / 8] |= 1U << (b % 8);
		r->filled++;
	}
}

static void unlist_row(struct mfs_fs_info *fs, struct mfs_open_row *r)
{
	struct mfs_open_row **pp;

	for (pp = &fs->open_rows; *pp; pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	}
	free_row(r);
}

/* A row reached the disk: the allocator must not reuse its free parts. */
static void row_sealed(struct mfs_fs_info *fs, u64 logical)
{
	if (fs->row_sealed)
		fs->row_sealed(fs, logical);
}

static int flush_row(struct mfs_fs_info *fs, struct mfs_open_row *r)
{
	int ret = write_rows(fs, r, true);	/* not writing: a list of one */

	/* the row is on disk now: the allocator must not reuse its free parts */
	row_sealed(fs, row_logical(r));
	unlist_row(fs, r);
	return ret;
}

/*
 * At commit: every row goes to disk, in one batch. A full row its writer
 * is still writing without the lock is written here as well (the same
 * bytes to the same place, both around the page cache), so the commit
 * never waits for that writer; the writer still owns it and unlists it.
 */
int mfs_flush_open_rows(struct mfs_fs_info *fs)
{
	struct mfs_open_row *r, *next;
	int ret = write_rows(fs, fs->open_rows, false);

	for (r = fs->open_rows; r; r = next) {
		next = r->next;
		if (r->writing)
			continue;
		/* on disk now: the allocator must not reuse the row's free parts */
		row_sealed(fs, row_logical(r));
		unlist_row(fs, r);
	}
	return ret;
}

/* Forget buffered rows (an aborted transaction); rows being written stay with their writers. */
void mfs_drop_open_rows(struct mfs_fs_info *fs)
{
	struct mfs_open_row **pp = &fs->open_rows;

	while (*pp) {
		struct mfs_open_row *r = *pp;

		if (r->writing) {
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		free_row(r);
	}
}

bool mfs_range_has_open_rows(struct mfs_fs_info *fs, const struct mfs_chunk_map *map,
			     u64 logical, u64 len)
{
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	u64 row_len = (map->num_stripes - a->nparity) * map->stripe_len;
	u64 first = (logical - map->logical) / row_len;
	u64 last = (logical + len - 1 - map->logical) / row_len;
	struct mfs_open_row *r;

	for (r = fs->open_rows; r; r = r->next)
		if (r->map == map && r->row >= first && r->row <= last)
			return true;
	return false;
}

/*
 * Copy into the open rows; a row that fills up is written at once, or with
 * full != NULL marked writing and appended to *full for the caller to
 * write without the lock.
 */
static int raid56_write(struct mfs_fs_info *fs, struct mfs_chunk_map *map,
			u64 logical, const u8 *buf, u64 len, struct mfs_open_row **full)
{
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	u64 ndata = map->num_stripes - a->nparity;
	u64 row_len = ndata * map->stripe_len;

	while (len) {
		u64 off = logical - map->logical;
		u64 row = off / row_len, in_row = off % row_len;
		u64 n = min_t(u64, len, row_len - in_row);
		struct mfs_open_row *r = find_open_row(fs, map, row);

		if (r && r->writing)
			return -EIO;	/* a full row taking more: the allocator broke */
		if (!r) {
			r = calloc(1, sizeof(*r));
			if (!r)
				return -ENOMEM;
			r->written = calloc(row_len / ROW_UNIT / 8 + 1, 1);
			/* aligned: written around the page cache when full */
			if (!r->written ||
			    posix_memalign((void **)&r->buf, MFS_IO_DIRECT_ALIGN, row_len)) {
				free(r->written);
				free(r);
				return -ENOMEM;
			}
			memset(r->buf, 0, row_len);
			r->map = map;
			r->row = row;
			r->next = fs->open_rows;
			fs->open_rows = r;
		}
		memcpy(r->buf + in_row, buf, n);
		mark_written(r, in_row, n);
		if (r->filled * ROW_UNIT >= row_len && full) {
			/* full: the allocator has nothing left here to give out */
			row_sealed(fs, row_logical(r));
			r->writing = true;
			while (*full)
				full = &(*full)->next_full;
			*full = r;
		} else if (r->filled * ROW_UNIT >= row_len) {
			int ret = flush_row(fs, r);

			if (ret)
				return ret;
		}
		logical += n;
		buf += n;
		len -= n;
	}
	return 0;
}

static int write_logical(struct mfs_fs_info *fs, u64 logical, const void *buf, u32 len,
			 struct mfs_open_row **full)
{
	const u8 *p = buf;

	while (len) {
		struct mfs_chunk_map *map = mfs_find_chunk(fs, logical);
		struct mfs_io_map io;
		u64 n;
		int i, ret, written;

		if (!map)
			return -EUCLEAN;
		if (mfs_profile(map->type)->nparity) {
			n = min_t(u64, len, map->logical + map->length - logical);
			ret = raid56_write(fs, map, logical, p, n, full);
			if (ret)
				return ret;
		} else {
			ret = mfs_map_block(map, logical, &io);
			if (ret)
				return ret;
			n = min_t(u64, len, io.length);
			written = 0;
			for (i = 0; i < io.ncopies; i++) {
				ret = write_copy(fs, &map->stripes[io.stripe[i]], p, n,
						 io.physical[i]);
				if (ret < 0)
					return ret;
				written += !ret;
			}
			if (!written)
				return -EIO;
		}
		logical += n;
		p += n;
		len -= n;
	}
	return 0;
}

int mfs_write_logical(struct mfs_fs_info *fs, u64 logical, const void *buf, u32 len)
{
	return write_logical(fs, logical, buf, len, NULL);
}

int mfs_write_logical_defer(struct mfs_fs_info *fs, u64 logical, const void *buf, u32 len,
			    struct mfs_open_row **full)
{
	return write_logical(fs, logical, buf, len, full);
}

void mfs_release_full_rows(struct mfs_fs_info *fs, struct mfs_open_row *full)
{
	while (full) {
		struct mfs_open_row *next = full->next_full;

		unlist_row(fs, full);
		full = next;
	}
}

/*
 * Data I/O without fs->lock: the caller holds map_lock shared and owns the
 * logical range (a reserved extent it writes, or an extent it read the
 * location of under the lock). Chunks with parity keep their open rows
 * under fs->lock and are refused with -EAGAIN.
 *
 * The pieces of a range (one per stripe unit and copy) are gathered into
 * one vectored transfer per run of adjacent space on a device, and the
 * transfers to different devices run in parallel.
 */
#define BATCH_IOV 64

struct dev_batch {
	struct mfs_device *dev;
	u64 physical;		/* where the run starts on dev */
	u64 len;
	int n;
	struct iovec iov[BATCH_IOV];
	bool write;
	bool cached;		/* a write through the page cache */
	int ret;
};

/*
 * A read's span of a raid5/6 chunk with a stripe on a device out of
 * service: read_rows_rebuilt, after the batches.
 */
struct rebuild_span {
	struct mfs_chunk_map *map;
	u64 logical, len;
	u8 *p;
};

struct batch_set {
	struct dev_batch *b;
	int n, max;
	struct rebuild_span *rb;
	int nrb, maxrb;
};

static int batch_add(struct batch_set *set, struct mfs_device *dev, u64 physical, void *buf,
		     u64 len, bool write)
{
	struct dev_batch *b;
	int i;

	for (i = 0; i < set->n; i++) {
		b = &set->b[i];
		if (b->dev == dev && b->physical + b->len == physical && b->n < BATCH_IOV)
			goto append;
	}
	if (MFS_ARRAY_RESERVE(set->b, set->n, set->max, 8))
		return -ENOMEM;
	b = &set->b[set->n++];
	b->dev = dev;
	b->physical = physical;
	b->len = 0;
	b->n = 0;
	b->write = write;
	b->cached = false;
	b->ret = 0;
append:
	b->iov[b->n].iov_base = buf;
	b->iov[b->n].iov_len = len;
	b->n++;
	b->len += len;
	return 0;
}

static void *batch_run(void *arg)
{
	struct dev_batch *b = arg;

	if (!b->write)
		__atomic_add_fetch(&b->dev->reads_in_flight, 1, __ATOMIC_RELAXED);
	if (b->cached)
		b->ret = mfs_io_write_vec(b->dev->io, b->iov, b->n, b->physical);
	else
		b->ret = mfs_io_rw_vec_direct(b->dev->io, b->iov, b->n, b->physical, b->write);
	if (!b->write)
		__atomic_sub_fetch(&b->dev->reads_in_flight, 1, __ATOMIC_RELAXED);
	return NULL;
}

/*
 * Run every batch, those after the first on their own threads unless
 * !parallel (then one after the other here); the first error.
 */
static int batches_run_as(struct batch_set *set, bool parallel)
{
	/* none at all: a read whose every span is rebuilt */
	pthread_t tid[set->n ? set->n : 1];
	bool started[set->n ? set->n : 1];
	int i, ret = 0;

	for (i = 1; i < set->n; i++)
		started[i] = parallel && pthread_create(&tid[i], NULL, batch_run, &set->b[i]) == 0;
	if (set->n)
		batch_run(&set->b[0]);
	for (i = 1; i < set->n; i++) {
		if (started[i])
			pthread_join(tid[i], NULL);
		else
			batch_run(&set->b[i]);
	}
	for (i = 0; i < set->n; i++)
		if (set->b[i].ret && !ret)
			ret = set->b[i].ret;
	return ret;
}

static int batches_run(struct batch_set *set)
{
	return batches_run_as(set, true);
}

/*
 * Writes of redundant data: a device whose transfer fails is counted and
 * marked failed, and the write stands on the other copies (the caller
 * checks that every piece kept one).
 */
static int batches_run_tolerant(struct mfs_fs_info *fs, struct batch_set *set)
{
	int i, ret = 0;

	batches_run(set);
	for (i = 0; i < set->n; i++)
		if (set->b[i].ret &&
		    !mfs_dev_fail(fs, set->b[i].dev, MFS_DEV_STAT_WRITE_ERRS, set->b[i].ret))
			ret = -EIO;
	return ret;
}

/*
 * Which copy of a piece a read takes (read_policy). With devid:N, the copy
 * on that device when it has one. Otherwise the least busy: each 256 MiB of
 * a chunk has a home copy, kept unless its device has clearly more reads
 * in flight than another (more than one stream's readahead), so a
 * sequential reader stays on one device - whose readahead then works -
 * while several readers spread over the copies.
 */
#define READ_REGION_SHIFT	28
#define READ_BUSY_MARGIN	8

static int pick_copy(struct mfs_fs_info *fs, const struct mfs_chunk_map *map,
		     const struct mfs_io_map *io, u64 logical)
{
	int i, home, best = -1, best_load = 0, home_load = 0;

	home = (int)(((logical - map->logical) >> READ_REGION_SHIFT) % io->ncopies);
	for (i = 0; i < io->ncopies; i++) {
		struct mfs_device *dev = map->stripes[io->stripe[i]].dev;
		int load;

		if (read_rank(fs, dev) > READ_RANK_PREFERRED + 1) {
			if (i == home)
				home = -1;
			continue;
		}
		if (read_rank(fs, dev) == READ_RANK_PREFERRED)
			return i;
		load = __atomic_load_n(&dev->reads_in_flight, __ATOMIC_RELAXED);
		if (i == home)
			home_load = load;
		if (best < 0 || load < best_load) {
			best = i;
			best_load = load;
		}
	}
	if (home >= 0 && home_load < best_load + READ_BUSY_MARGIN)
		return home;
	if (best >= 0)
		return best;
	/* no healthy copy: a stale one, whose reads are verified like any other */
	for (i = 0; i < io->ncopies; i++)
		if (read_rank(fs, map->stripes[io->stripe[i]].dev) == READ_RANK_STALE)
			return i;
	return -1;
}

/* Does a stripe of map lie on a device out of service? */
static bool map_degraded(const struct mfs_chunk_map *map)
{
	int i;

	for (i = 0; i < map->num_stripes; i++)
		if (!mfs_dev_usable(map->stripes[i].dev))
			return true;
	return false;
}

/*
 * The most of a read rebuilt at once from logical on (the buffers hold
 * every stripe of its rows): REBUILD_MAX of data, ending at a row's end.
 */
#define REBUILD_MAX	(4ULL << 20)
static u64 rebuild_span_max(const struct mfs_chunk_map *map, u64 logical)
{
	u64 row_len = (map->num_stripes - mfs_profile(map->type)->nparity) * map->stripe_len;
	u64 in_chunk = logical - map->logical;
	u64 end = round_down(in_chunk + max_t(u64, REBUILD_MAX, row_len), row_len);

	return end - in_chunk;
}

/*
 * Add the pieces of [logical, logical+len) to set: every copy (write) or
 * the least busy; a read's part in a raid5/6 chunk missing a stripe as a
 * span to rebuild.
 */
static int gather(struct mfs_fs_info *fs, struct batch_set *set, u64 logical, u8 *p, u64 len,
		  bool write)
{
	int ret = 0;

	while (!ret && len) {
		struct mfs_chunk_map *map = mfs_find_chunk(fs, logical);
		struct mfs_io_map io;
		u64 n;
		int c;

		if (!map)
			return -EUCLEAN;
		if (write && mfs_profile(map->type)->nparity)
			return -EAGAIN;
		if (!write && mfs_profile(map->type)->nparity && map_degraded(map)) {
			if (MFS_ARRAY_RESERVE(set->rb, set->nrb, set->maxrb, 4))
				return -ENOMEM;
			n = min_t(u64, len, map->logical + map->length - logical);
			n = min_t(u64, n, rebuild_span_max(map, logical));
			set->rb[set->nrb++] = (struct rebuild_span){ map, logical, n, p };
			logical += n;
			p += n;
			len -= n;
			continue;
		}
		ret = mfs_map_block(map, logical, &io);
		if (ret)
			return ret;
		n = min_t(u64, len, io.length);
		c = write ? 0 : pick_copy(fs, map, &io, logical);
		if (c < 0)
			return -EIO;
		for (; !ret && c < io.ncopies; c++) {
			struct mfs_map_stripe *s = &map->stripes[io.stripe[c]];

			if (!mfs_dev_usable(s->dev)) {
				if (!write)
					return -EIO;
				continue;	/* the other copies carry it */
			}
			ret = batch_add(set, s->dev, io.physical[c], p, n, write);
			if (!write)
				break;
		}
		logical += n;
		p += n;
		len -= n;
	}
	return ret;
}

/* Is there a usable copy of every piece of [logical, logical+len)? */
static bool range_readable(struct mfs_fs_info *fs, u64 logical, u64 len)
{
	while (len) {
		struct mfs_chunk_map *map = mfs_find_chunk(fs, logical);
		struct mfs_io_map io;
		u64 n;
		int c;

		if (!map || mfs_map_block(map, logical, &io))
			return false;
		for (c = 0; c < io.ncopies; c++)
			if (mfs_dev_usable(map->stripes[io.stripe[c]].dev))
				break;
		if (c == io.ncopies)
			return false;
		n = min_t(u64, len, io.length);
		logical += n;
		len -= n;
	}
	return true;
}

/*
 * Small writes (up to CACHED_WRITE_MAX) go through the page cache, their
 * writeback started at once: a user's file write then returns without
 * waiting behind what else is queued on the device - a restripe's
 * megabytes on a loop device held a 4 KiB write 12-45 ms - and the
 * commit's flush makes it durable before a superblock names it, as it does
 * for the writes under fs->lock (tree blocks, unaligned data). Larger
 * writes stay direct (no copy into the cache, no dirty pages piling up for
 * the commit to flush with fs->lock held). The two never meet in one page:
 * every range written here is an extent reserved for this write alone, and
 * chunks with parity, whose rows two writers share, are not written here.
 */
#define CACHED_WRITE_MAX	(64U << 10)

int mfs_write_logical_unlocked(struct mfs_fs_info *fs, u64 logical, const void *buf, u32 len)
{
	struct batch_set set = { 0 };
	int ret = gather(fs, &set, logical, (u8 *)buf, len, true), i;

	for (i = 0; i < set.n; i++)
		set.b[i].cached = len <= CACHED_WRITE_MAX;

	if (!ret)
		ret = batches_run_tolerant(fs, &set);
	if (!ret && !range_readable(fs, logical, len))
		ret = -EIO;
	free(set.b);
	return ret;
}

/*
 * The rows of a list (linked by next_full, or by next: all open rows) with
 * their parity, around the page cache (a buffered write could
 * collide with a direct one of the same row). Consecutive rows of a chunk
 * lie back to back on every device, so each device gets one vectored write
 * per run of rows, and the devices are written in parallel.
 */
static int write_rows(struct mfs_fs_info *fs, struct mfs_open_row *rows, bool full_list)
{
	struct batch_set set = { 0 };
	struct mfs_open_row *r;
	u8 **parity;
	int nrows = 0, i, ret = 0;

	for (r = rows; r; r = full_list ? r->next_full : r->next)
		nrows++;
	if (!nrows)
		return 0;
	parity = calloc(nrows, sizeof(*parity));
	if (!parity)
		return -ENOMEM;
	for (r = rows, i = 0; !ret && r; r = full_list ? r->next_full : r->next, i++) {
		struct mfs_chunk_map *map = r->map;
		int n = map->num_stripes, c;
		u64 slen = map->stripe_len;
		void *blocks[n];

		if (posix_memalign((void **)&parity[i], MFS_IO_DIRECT_ALIGN,
				   mfs_profile(map->type)->nparity * slen)) {
			ret = -ENOMEM;
			break;
		}
		ret = row_blocks(map, r->buf, parity[i], blocks);
		for (c = 0; !ret && c < n; c++) {
			struct mfs_map_stripe *s = &map->stripes[mfs_row_stripe(map, r->row, c)];

			/* a column whose device is gone is rebuilt from parity when read */
			if (mfs_dev_usable(s->dev))
				ret = batch_add(&set, s->dev, s->physical + r->row * slen,
						blocks[c], slen, true);
		}
	}
	if (!ret)
		ret = batches_run_tolerant(fs, &set);
	/* every row keeps enough columns to be read back */
	for (r = rows; !ret && r; r = full_list ? r->next_full : r->next)
		if (!mfs_chunk_readable(r->map))
			ret = -EIO;
	for (i = 0; i < nrows; i++)
		free(parity[i]);
	free(parity);
	free(set.b);
	return ret;
}

int mfs_write_full_rows(struct mfs_fs_info *fs, struct mfs_open_row *full)
{
	return write_rows(fs, full, true);
}

/* Each thread's buffer for read_rows_rebuilt, kept from one read to the next */
static struct mfs_thread_buf rebuild_buf = MFS_THREAD_BUF_INIT;

/*
 * [logical, +len) of a raid5/6 chunk with stripes on devices out of
 * service: the rows it spans read whole from the stripes still in service,
 * one direct read each, in this thread (see mfs_read_ranges_unlocked), and
 * the data columns gone rebuilt row by row. Rebuilding a whole span at
 * once instead of each stripe unit alone saves a buffer and a read per
 * column per unit. -EIO when more are gone than parity makes up for or a
 * read fails (the caller reads again under the lock, which counts it).
 */
static int read_rows_rebuilt(struct mfs_chunk_map *map, u64 logical, u8 *buf, u64 len)
{
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	int n = map->num_stripes, ndata = n - a->nparity, st, col, ret = 0;
	u64 slen = map->stripe_len, row_len = ndata * slen;
	u64 r0 = (logical - map->logical) / row_len;
	u64 r1 = (logical + len - 1 - map->logical) / row_len + 1;
	u64 span = (r1 - r0) * slen, row, pos;
	bool gone[n];
	u8 *cols;

	cols = mfs_thread_buf_get(&rebuild_buf, (size_t)n * span);
	if (!cols)
		return -ENOMEM;
	for (st = 0; st < n && !ret; st++) {
		struct mfs_map_stripe *s = &map->stripes[st];
		struct iovec iov = { cols + st * span, span };

		gone[st] = !mfs_dev_usable(s->dev);
		if (gone[st])
			continue;
		__atomic_add_fetch(&s->dev->reads_in_flight, 1, __ATOMIC_RELAXED);
		ret = mfs_io_rw_vec_direct(s->dev->io, &iov, 1, s->physical + r0 * slen, false);
		__atomic_sub_fetch(&s->dev->reads_in_flight, 1, __ATOMIC_RELAXED);
	}
	for (row = r0; !ret && row < r1; row++) {
		u64 row_start = map->logical + row * row_len;
		u64 lo = max_t(u64, logical, row_start);
		u64 hi = min_t(u64, logical + len, row_start + row_len);
		int failed[n], nfailed = 0;
		bool wanted = false;
		void *blocks[n];

		for (col = 0; col < n; col++) {
			st = mfs_row_stripe(map, row, col);
			blocks[col] = cols + st * span + (row - r0) * slen;
			if (!gone[st])
				continue;
			failed[nfailed++] = col;
			/* a data column the read wants */
			if (col < ndata && row_start + (col + 1) * slen > lo &&
			    row_start + col * slen < hi)
				wanted = true;
		}
		if (nfailed > a->nparity)
			ret = -EIO;
		else if (wanted)
			ret = mfs_raid56_rebuild(ndata, a->nparity, slen, blocks, nfailed, failed);
		for (pos = lo; !ret && pos < hi;) {
			u64 in_row = pos - row_start, off = in_row % slen;
			u64 k = min_t(u64, hi - pos, slen - off);

			memcpy(buf + (pos - logical), (u8 *)blocks[in_row / slen] + off, k);
			pos += k;
		}
	}
	return ret;
}

int mfs_read_ranges_unlocked(struct mfs_fs_info *fs, int n, const struct mfs_read_range *r)
{
	struct batch_set set = { 0 };
	int i, ret = 0;

	for (i = 0; !ret && i < n; i++)
		ret = gather(fs, &set, r[i].logical, r[i].buf, r[i].len, false);
	/*
	 * One device after the other, here: a file read is one FUSE request
	 * of many in flight (the kernel reads ahead, the server has a thread
	 * per request), so the devices are busy in parallel anyway, and a
	 * thread started and joined per device per request cost more than
	 * it saved - a cold read of 1 GiB from raid5 on three loop devices
	 * took 4.3-5.0 s and 3.1-3.2 s of server CPU with them, 2.6-3.3 s
	 * and 0.64-0.70 s without (three interleaved pairs).
	 */
	if (!ret)
		ret = batches_run_as(&set, false);
	for (i = 0; !ret && i < set.nrb; i++)
		ret = read_rows_rebuilt(set.rb[i].map, set.rb[i].logical, set.rb[i].p,
					set.rb[i].len);
	free(set.b);
	free(set.rb);
	return ret;
}

/*
 * Every copy of [logical, +len), which lies in one stripe unit of a
 * mirrored chunk (not raid5/6), read at once: copy m into bufs[m - 1], its
 * result into errs[m - 1] (-ENODEV: its device is not usable). Transfers
 * to different devices run in parallel, past the page cache when the
 * buffers are aligned: a scrub wants what the disks hold, not a cached
 * copy. Returns the number of copies, or -errno.
 */
int mfs_read_mirrors(struct mfs_chunk_map *map, u64 logical, u64 len, u8 **bufs, int *errs)
{
	struct batch_set set = { 0 };
	int batch[MFS_MAX_COPIES], i, ret;
	struct mfs_io_map io;

	ret = mfs_map_block(map, logical, &io);
	if (ret)
		return ret;
	if (mfs_profile(map->type)->nparity || len > io.length)
		return -EINVAL;
	for (i = 0; i < io.ncopies && !ret; i++) {
		struct mfs_map_stripe *s = &map->stripes[io.stripe[i]];

		batch[i] = -1;
		errs[i] = -ENODEV;
		if (!mfs_dev_usable(s->dev))
			continue;
		ret = batch_add(&set, s->dev, io.physical[i], bufs[i], len, false);
		batch[i] = set.n - 1;
	}
	if (!ret)
		batches_run(&set);
	for (i = 0; !ret && i < io.ncopies; i++)
		if (batch[i] >= 0)
			errs[i] = set.b[batch[i]].ret;
	free(set.b);
	return ret ? ret : io.ncopies;
}

/*
 * Rebuild len bytes of one data column of a raid5/6 row from the others.
 * lost_parity additionally treats P as unreadable (so Q is used).
 */
static int raid56_rebuild_read(struct mfs_chunk_map *map, const struct mfs_io_map *io,
			       u64 col_off, u8 *buf, u64 len, int also_bad, struct mfs_device **blame)
{
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	int n = map->num_stripes, ndata = n - a->nparity, i, ret = 0;
	int failed[2], nfailed = 0;
	void *blocks[n];
	u8 *tmp;

	if (also_bad >= 0 && a->nparity < 2)
		return -EIO;
	tmp = malloc((size_t)n * len);
	if (!tmp)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		int idx = mfs_row_stripe(map, io->row, i);
		struct mfs_map_stripe *s = &map->stripes[idx];

		blocks[i] = tmp + (size_t)i * len;
		if (i == io->data_index || i == also_bad)
			continue;
		ret = read_stripe_blamed(s, blocks[i], len,
					 s->physical + io->row * map->stripe_len + col_off, blame);
		if (ret)
			goto out;
	}
	failed[nfailed++] = io->data_index;
	if (also_bad >= 0)
		failed[nfailed++] = also_bad;
	ret = mfs_raid56_rebuild(ndata, a->nparity, len, blocks, nfailed, failed);
	if (!ret)
		memcpy(buf, blocks[io->data_index], len);
out:
	free(tmp);
	return ret;
}

/*
 * Copy `mirror` of one piece that does not cross a stripe boundary, from
 * the disks; a device in service that failed it into *blame (NULL: not asked).
 */
static int read_mirror(struct mfs_chunk_map *map, const struct mfs_io_map *io, u64 logical,
		       u8 *buf, u64 len, int mirror, struct mfs_device **blame)
{
	if (mfs_profile(map->type)->nparity) {
		u64 col_off = (logical - map->logical) % map->stripe_len;
		int k = mirror - 3;

		if (mirror <= 1)
			return read_stripe_blamed(&map->stripes[io->stripe[0]], buf, len,
						  io->physical[0], blame);
		if (mirror == 2)
			return raid56_rebuild_read(map, io, col_off, buf, len, -1, blame);
		/* mirror 3.. : the k-th other column is assumed bad as well */
		if (k >= io->data_index)
			k++;
		if (k >= map->num_stripes)
			return -EINVAL;
		return raid56_rebuild_read(map, io, col_off, buf, len, k, blame);
	}
	if (mirror < 1)
		mirror = 1;
	if (mirror > io->ncopies)
		return -EINVAL;
	return read_stripe_blamed(&map->stripes[io->stripe[mirror - 1]], buf, len,
				  io->physical[mirror - 1], blame);
}

/* Read one piece: a raid5/6 row still in memory is served from there. */
static int read_piece(struct mfs_fs_info *fs, struct mfs_chunk_map *map,
		      u64 logical, u8 *buf, u64 len, int mirror)
{
	struct mfs_io_map io;
	int ret = mfs_map_block(map, logical, &io);

	if (ret)
		return ret;
	if (mfs_profile(map->type)->nparity) {
		u64 row_len = (map->num_stripes - mfs_profile(map->type)->nparity) * map->stripe_len;
		struct mfs_open_row *r = find_open_row(fs, map, io.row);

		if (r) {
			memcpy(buf, r->buf + (logical - map->logical) % row_len, len);
			return 0;
		}
	}
	return read_mirror(map, &io, logical, buf, len, mirror, NULL);
}

void mfs_readahead_logical(struct mfs_fs_info *fs, u64 logical, u64 len, bool every_copy)
{
	struct mfs_chunk_map *map = mfs_find_chunk(fs, logical);
	struct mfs_io_map io;
	int c;

	if (!map || mfs_map_block(map, logical, &io))
		return;
	for (c = 0; c < (every_copy ? io.ncopies : 1); c++) {
		struct mfs_device *dev = map->stripes[io.stripe[c]].dev;

		if (mfs_dev_usable(dev))
			mfs_io_readahead(dev->io, io.physical[c], min_t(u64, len, io.length));
	}
}

int mfs_read_logical(struct mfs_fs_info *fs, u64 logical, void *buf, u32 len, int mirror)
{
	u8 *p = buf;

	while (len) {
		struct mfs_chunk_map *map = mfs_find_chunk(fs, logical);
		struct mfs_io_map io;
		u64 n;
		int ret, m, copies;

		if (!map)
			return -EUCLEAN;
		ret = mfs_map_block(map, logical, &io);
		if (ret)
			return ret;
		n = min_t(u64, len, io.length);
		if (mirror > 0) {
			ret = read_piece(fs, map, logical, p, n, mirror);
		} else {
			int *order;

			copies = mfs_num_copies(map);
			order = malloc(copies * sizeof(*order));
			if (!order)
				return -ENOMEM;
			mfs_mirror_order(fs, map, logical, order);
			ret = -EIO;
			for (m = 0; m < copies && ret; m++) {
				ret = read_piece(fs, map, logical, p, n, order[m]);
				if (mirror == MFS_MIRROR_PREFERRED)
					break;
			}
			free(order);
		}
		if (ret)
			return ret;
		logical += n;
		p += n;
		len -= n;
	}
	return 0;
}

struct flush_job {
	struct mfs_io_dev *io;
	int ret;
};

static void *flush_job_run(void *arg)
{
	struct flush_job *j = arg;

	j->ret = mfs_io_flush(j->io);
	return NULL;
}

/*
 * These devices' caches to stable storage, in parallel: a flush waits for
 * the device to write back what it holds, and one device's writeback need
 * not wait for another's. The first error is returned.
 */
int mfs_flush_io_devices(struct mfs_io_dev **io, int n, int *rets)
{
	struct flush_job job[n ? n : 1];
	pthread_t tid[n ? n : 1];
	bool started[n ? n : 1];
	int i, ret = 0;

	for (i = 0; i < n; i++)
		job[i] = (struct flush_job){ io[i], 0 };
	for (i = 1; i < n; i++)
		started[i] = pthread_create(&tid[i], NULL, flush_job_run, &job[i]) == 0;
	for (i = 0; i < n; i++) {
		if (i == 0 || !started[i])
			flush_job_run(&job[i]);
		else
			pthread_join(tid[i], NULL);
		if (rets)
			rets[i] = job[i].ret;
		if (job[i].ret && !ret)
			ret = job[i].ret;
	}
	return ret;
}

/*
 * The usable ones of these devices' caches to stable storage, in
 * parallel. A device whose flush fails is counted and marked failed: what
 * it was to keep stands on the other devices (the commit checks that
 * every chunk can still be read). Fails only when no device could flush.
 */
int mfs_flush_devices(struct mfs_fs_info *fs, struct mfs_device **devs, int ndevs)
{
	int n = ndevs ? ndevs : 1;
	struct flush_job job[n];
	struct mfs_device *dev[n];
	pthread_t tid[n];
	bool started[n];
	int i, nr = 0, flushed = 0, first_err = 0;

	for (i = 0; i < ndevs; i++)
		if (mfs_dev_usable(devs[i]))
			dev[nr++] = devs[i];
	for (i = 0; i < nr; i++) {
		job[i] = (struct flush_job){ dev[i]->io, 0 };
		started[i] = i > 0 && pthread_create(&tid[i], NULL, flush_job_run, &job[i]) == 0;
		if (i > 0 && !started[i])
			flush_job_run(&job[i]);
	}
	if (nr)
		flush_job_run(&job[0]);
	for (i = 0; i < nr; i++) {
		if (started[i])
			pthread_join(tid[i], NULL);
		if (!job[i].ret) {
			flushed++;
			continue;
		}
		if (!mfs_dev_fail(fs, dev[i], MFS_DEV_STAT_FLUSH_ERRS, job[i].ret) && !first_err)
			first_err = job[i].ret;
	}
	if (first_err || (!flushed && nr))
		return -EIO;
	return 0;
}

int mfs_flush_all_devices(struct mfs_fs_info *fs)
{
	return mfs_flush_devices(fs, fs->devices, fs->nr_devices);
}

/* Which stripe of map holds copy `mirror` of logical (raid5/6: the data column). */
static int mirror_stripe(struct mfs_chunk_map *map, u64 logical, int mirror, u64 *physical)
{
	struct mfs_io_map io;
	int idx;

	if (mfs_map_block(map, logical, &io))
		return -1;
	if (mfs_profile(map->type)->nparity || mirror < 1 || mirror > io.ncopies)
		idx = 0;
	else
		idx = mirror - 1;
	if (physical)
		*physical = io.physical[idx];
	return io.stripe[idx];
}

struct mfs_device *mfs_mirror_device(struct mfs_chunk_map *map, u64 logical, int mirror)
{
	int idx = mirror_stripe(map, logical, mirror, NULL);

	return idx < 0 ? NULL : map->stripes[idx].dev;
}

int mfs_write_logical_mirror(struct mfs_fs_info *fs, u64 logical, const void *buf,
			     u32 len, int mirror)
{
	struct mfs_chunk_map *map = mfs_find_chunk(fs, logical);
	u64 physical;
	int idx;

	if (!map)
		return -EUCLEAN;
	idx = mirror_stripe(map, logical, mirror, &physical);
	if (idx < 0)
		return -EINVAL;
	return write_copy(fs, &map->stripes[idx], buf, len, physical) ? -EIO : 0;
}

bool mfs_dev_stat_inc(struct mfs_fs_info *fs, u64 logical, int mirror, int stat)
{
	struct mfs_chunk_map *map = mfs_find_chunk(fs, logical);
	struct mfs_device *dev;
	int idx;

	if (!map)
		return false;
	idx = mirror_stripe(map, logical, mirror, NULL);
	if (idx < 0)
		return false;
	dev = map->stripes[idx].dev;
	/*
	 * A device out of service (missing, or failed earlier in this mount)
	 * was not read: its copy counts as no error of its own, the failure
	 * that put it out was counted already.
	 */
	if (!dev || !mfs_dev_usable(dev))
		return false;
	mfs_dev_count_error(fs, dev, stat);
	return fs->open_flags & MFS_OPEN_WRITABLE;
}

/*
 * Scrub the parity of one raid5/6 row: read every column, compute P (and
 * Q) from the data columns as they are on disk and compare. A strip that
 * differs is counted against its device and, with repair, rewritten; its
 * devid goes to bad_devids (room for nparity). The data columns must have
 * been verified first: parity is made to match them. Returns the number of
 * bad strips, -EAGAIN for a row still in memory (its parity is not written
 * yet), -EIO when a column cannot be read.
 */
int mfs_scrub_row_parity(struct mfs_fs_info *fs, struct mfs_chunk_map *map, u64 row,
			 bool repair, u64 *bad_devids)
{
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	int n = map->num_stripes, ndata = n - a->nparity, i, nbad = 0, ret = 0;
	u64 slen = map->stripe_len;
	void *blocks[n];
	u8 *disk, *parity;

	if (find_open_row(fs, map, row))
		return -EAGAIN;
	disk = malloc((size_t)n * slen);
	parity = malloc(a->nparity * slen);
	if (!disk || !parity) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n && !ret; i++) {
		struct mfs_map_stripe *s = &map->stripes[mfs_row_stripe(map, row, i)];

		ret = read_stripe(s, disk + i * slen, slen, s->physical + row * slen);
	}
	if (!ret)
		ret = row_blocks(map, disk, parity, blocks);
	for (i = ndata; !ret && i < n; i++) {
		struct mfs_map_stripe *s = &map->stripes[mfs_row_stripe(map, row, i)];

		if (!memcmp(blocks[i], disk + i * slen, slen))
			continue;
		bad_devids[nbad++] = s->devid;
		mfs_dev_count_error(fs, s->dev, MFS_DEV_STAT_CORRUPTION_ERRS);
		if (repair && write_copy(fs, s, blocks[i], slen, s->physical + row * slen))
			ret = -EIO;
	}
out:
	free(disk);
	free(parity);
	return ret ? ret : nbad;
}

/*
 * Read through a given map (no open rows: the range takes no writes).
 * mirror 0: each piece from the first copy that reads, so that a range
 * across columns of a raid5/6 row with one column missing (the others
 * read directly, the missing one rebuilt) reads whole. On failure, a
 * device in service whose read failed into *blame (when not NULL).
 */
int mfs_read_map_blamed(struct mfs_chunk_map *map, u64 logical, void *buf, u64 len, int mirror,
			struct mfs_device **blame)
{
	int copies = mfs_num_copies(map);
	u8 *p = buf;

	while (len) {
		struct mfs_io_map io;
		u64 n;
		int ret = mfs_map_block(map, logical, &io), m;

		if (ret)
			return ret;
		n = min_t(u64, len, io.length);
		if (mirror)
			ret = read_mirror(map, &io, logical, p, n, mirror, blame);
		else
			for (m = 1, ret = -EIO; ret && m <= copies; m++)
				ret = read_mirror(map, &io, logical, p, n, m, blame);
		if (ret)
			return ret;
		logical += n;
		p += n;
		len -= n;
	}
	return 0;
}

int mfs_read_map(struct mfs_chunk_map *map, u64 logical, void *buf, u64 len, int mirror)
{
	return mfs_read_map_blamed(map, logical, buf, len, mirror, NULL);
}

/* Write through a given map; raid5/6 maps take whole rows only. */
int mfs_write_map(struct mfs_chunk_map *map, u64 logical, const void *buf, u64 len)
{
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	const u8 *p = buf;

	if (a->nparity) {
		u64 row_len = (u64)(map->num_stripes - a->nparity) * map->stripe_len;
		u64 off = logical - map->logical;

		if (off % row_len || len % row_len)
			return -EINVAL;
		for (; len; len -= row_len, p += row_len, off += row_len) {
			int ret = write_full_row(map, off / row_len, p);

			if (ret)
				return ret;
		}
		return 0;
	}
	while (len) {
		struct mfs_io_map io;
		u64 n;
		int i, ret = mfs_map_block(map, logical, &io);

		if (ret)
			return ret;
		n = min_t(u64, len, io.length);
		for (i = 0; i < io.ncopies; i++) {
			ret = write_stripe(&map->stripes[io.stripe[i]], p, n, io.physical[i]);
			if (ret)
				return ret;
		}
		logical += n;
		p += n;
		len -= n;
	}
	return 0;
}
