/*
 * Scrub (DESIGN §6): the used extents of each block group in logical
 * order, each copy read in large pieces and verified (data sectors against
 * their checksums, tree blocks against their headers); a bad copy is
 * counted on its device and rewritten from a good one; raid5/6 parity is
 * recomputed from the verified data and compared. The work goes in steps
 * of at most SCRUB_STEP used bytes, each under fs->lock, so that user I/O
 * goes on between them.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "kernel-shared/ops/scrub.h"
#include "kernel-shared/ops/scrub-internal.h"
#include "kernel-shared/ops/restripe.h"
#include "kernel-shared/fs/inode.h"
#include "kernel-shared/tree/alloc.h"
#include "kernel-shared/tree/transaction.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/block/csum.h"
#include "kernel-shared/block/testhook.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/volumes/volumes.h"

#define SCRUB_STEP	(16ULL << 20)	/* used bytes per step */
#define SCRUB_PIECE	(1ULL << 20)	/* bytes of one copy read at once */
#define SCRUB_COMMIT	(64ULL << 20)	/* scrubbed between two commits of the cursor */

static u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* One line of st.files; lines that do not fit are dropped. */
void mfs_scrub_add_line(struct mfs_scrub *sc, const char *fmt, ...)
{
	size_t room = sizeof(sc->st.files) - sc->files_used;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(sc->st.files + sc->files_used, room, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n + 1 >= room) {
		sc->st.files[sc->files_used] = 0;
		return;
	}
	sc->files_used += n;
	sc->st.files[sc->files_used++] = '\n';
	sc->st.files[sc->files_used] = 0;
	sc->st.nr_files++;
}

/* The per-device counts of devid (added on first use). */
static struct mfs_ioctl_scrub_counts *dev_counts(struct mfs_scrub *sc, u64 devid)
{
	static struct mfs_ioctl_scrub_counts spill;
	u32 i;

	for (i = 0; i < sc->st.nr_devs; i++)
		if (sc->st.devs[i].devid == devid)
			return &sc->st.devs[i].c;
	if (i == MFS_SCRUB_MAX_DEVS)
		return &spill;
	sc->st.devs[i].devid = devid;
	sc->st.nr_devs++;
	return &sc->st.devs[i].c;
}

/*
 * A copy that could not be checked or was bad: counted by kind, on the
 * scrub and on its device (whose error counter the caller raised). A copy
 * on a missing device is no error: false, it was counted as unverified.
 */
static bool count_bad_copy(struct mfs_scrub *sc, struct mfs_device *dev, u64 devid, int stat,
			   bool tree)
{
	struct mfs_ioctl_scrub_counts *dc = dev_counts(sc, devid);

	if (!mfs_dev_usable(dev))
		return false;	/* counted as unverified where it was skipped */
	if (stat == MFS_DEV_STAT_READ_ERRS) {
		sc->st.c.read_errors++;
		dc->read_errors++;
	} else if (tree) {
		sc->st.c.verify_errors++;
		dc->verify_errors++;
	} else {
		sc->st.c.csum_errors++;
		dc->csum_errors++;
	}
	return true;
}

static void count_corrected(struct mfs_scrub *sc, u64 devid)
{
	sc->st.c.corrected_errors++;
	dev_counts(sc, devid)->corrected_errors++;
}

/* Bytes read from the device(s) holding [logical, +len) of copy mirror. */
static void count_read(struct mfs_scrub *sc, struct mfs_chunk_map *map, u64 logical, u64 len,
		       int mirror)
{
	struct mfs_io_map io;
	int idx;

	if (mfs_map_block(map, logical, &io))
		return;
	idx = mfs_profile(map->type)->nparity || mirror > io.ncopies ? 0 : mirror - 1;
	dev_counts(sc, map->stripes[io.stripe[idx]].devid)->bytes_done += len;
}

/* ---------------- data ---------------- */

/* One suspect sector: every copy checked by the self-heal code, counted. */
static int scrub_sector(struct mfs_fs_info *fs, struct mfs_scrub *sc, struct mfs_chunk_map *map,
			u64 logical, const u8 *want, u64 ino, u8 *tmp)
{
	struct mfs_heal_report rep = { .report_only = sc->st.flags & MFS_SCRUB_READONLY };
	bool errors = false;
	int ret, i;

	ret = mfs_heal_data_sector(fs, logical, want, tmp, &rep);
	if (ret && ret != -EIO)
		return ret;
	for (i = 0; i < rep.nbad; i++) {
		struct mfs_device *dev = mfs_mirror_device(map, logical, rep.mirror[i]);
		u64 devid = dev ? dev->devid : 0;

		if (!count_bad_copy(sc, dev, devid, rep.stat[i], false))
			continue;
		errors = true;
		if (!ret && i < rep.rewritten)
			count_corrected(sc, devid);
	}
	if (ret == -EIO) {
		sc->st.c.uncorrectable_errors++;
		mfs_scrub_note_ino(sc, ino, true);
		sc->row_data_bad = true;
	} else if (errors) {
		mfs_scrub_note_ino(sc, ino, false);
		if (!rep.rewritten)
			sc->row_data_bad = true;
	}
	return 0;
}

/*
 * Copy m of a piece into bufs[m - 1] (raid5/6: the data column only, an
 * open row's from memory), the read results into errs: the copies of a
 * mirrored chunk read in parallel. Returns the number of copies read.
 */
static int read_piece_copies(struct mfs_fs_info *fs, struct mfs_chunk_map *map, u64 logical,
			     u64 len, u8 **bufs, int *errs)
{
	if (!mfs_profile(map->type)->nparity)
		return mfs_read_mirrors(map, logical, len, bufs, errs);
	errs[0] = -ENODEV;
	if (mfs_dev_usable(mfs_mirror_device(map, logical, 1)))
		errs[0] = mfs_read_logical(fs, logical, bufs[0], len, 1);
	return 1;
}

/*
 * One piece of a data extent that lies in one stripe unit: every copy read
 * (raid5/6: the data column) and its sectors checked; a sector bad in any
 * copy goes to scrub_sector, which checks and repairs all of them.
 */
static int scrub_data_piece(struct mfs_fs_info *fs, struct mfs_scrub *sc,
			    struct mfs_chunk_map *map, u64 logical, u64 len, const u8 *csums,
			    u64 ino, u8 **bufs)
{
	u64 nsect = len / MFS_SECTOR, s;
	int errs[MFS_MAX_COPIES], copies, m, ret = 0;
	bool suspect[nsect];

	copies = read_piece_copies(fs, map, logical, len, bufs, errs);
	if (copies < 0)
		return copies;
	memset(suspect, 0, sizeof(suspect));
	for (m = 0; m < copies; m++) {
		if (errs[m] == -ENODEV) {
			sc->st.c.unverified_errors += nsect;
			continue;
		}
		count_read(sc, map, logical, len, m + 1);
		for (s = 0; s < nsect; s++) {
			u8 sum[MFS_CSUM_SIZE];

			if (suspect[s])
				continue;
			mfs_csum_compute(fs->csum_type, bufs[m] + s * MFS_SECTOR, MFS_SECTOR, sum);
			suspect[s] = errs[m] || memcmp(sum, csums + s * fs->csum_size, fs->csum_size);
		}
	}
	for (s = 0; s < nsect && !ret; s++)
		if (suspect[s])
			ret = scrub_sector(fs, sc, map, logical + s * MFS_SECTOR,
					   csums + s * fs->csum_size, ino, bufs[0]);
	return ret;
}

static void free_bufs(u8 **bufs)
{
	int i;

	for (i = 0; i < MFS_MAX_COPIES; i++)
		free(bufs[i]);
}

static int scrub_data(struct mfs_fs_info *fs, struct mfs_scrub *sc, struct mfs_chunk_map *map,
		      const struct mfs_range *r)
{
	int copies = mfs_profile(map->type)->nparity ? 1 : mfs_num_copies(map), i;
	u8 *csums, *bufs[MFS_MAX_COPIES] = { NULL };
	u64 off = 0;
	int ret;

	if (copies > MFS_MAX_COPIES)
		return -EUCLEAN;
	ret = mfs_extent_csums(fs, r->start, r->len, &csums);
	if (ret)
		return ret > 0 ? 0 : ret;	/* preallocated: nothing written to check */
	/* aligned: the reads go past the page cache, to the disks */
	for (i = 0; i < copies && !ret; i++)
		if (posix_memalign((void **)&bufs[i], 4096, SCRUB_PIECE))
			ret = -ENOMEM;
	while (off < r->len && !ret) {
		struct mfs_io_map io;
		u64 n;

		ret = mfs_map_block(map, r->start + off, &io);
		if (ret)
			break;
		n = min_t(u64, min_t(u64, r->len - off, io.length), SCRUB_PIECE);
		ret = scrub_data_piece(fs, sc, map, r->start + off, n,
				       csums + off / MFS_SECTOR * fs->csum_size, r->level, bufs);
		off += n;
	}
	free_bufs(bufs);
	free(csums);
	return ret;
}

/* ---------------- tree blocks ---------------- */

/* Copy mirror of a tree block read and verified; if not, *stat says why (MFS_DEV_STAT_*). */
static bool tree_copy_ok(struct mfs_fs_info *fs, const struct mfs_range *r,
			 const struct mfs_tree_check *chk, u8 *buf, int mirror, int *stat)
{
	*stat = MFS_DEV_STAT_READ_ERRS;
	if (mfs_read_logical(fs, r->start, buf, fs->nodesize, mirror))
		return false;
	return mfs_verify_tree_block(fs, buf, r->start, chk, stat) == 0;
}

/*
 * Every copy of a tree block (raid5/6: the data column, then rebuilds from
 * parity until one is good) verified as a read from its parent would;
 * each bad copy counted and rewritten with a good one.
 */
static int scrub_tree_block(struct mfs_fs_info *fs, struct mfs_scrub *sc,
			    struct mfs_chunk_map *map, const struct mfs_range *r)
{
	struct mfs_tree_check chk = { .level = r->level, .owner = r->owner, .transid = r->gen };
	bool parity = mfs_profile(map->type)->nparity > 0;
	int copies = mfs_num_copies(map), bad[MFS_MAX_COPIES], stat[MFS_MAX_COPIES];
	int m, nbad = 0, good = -1, i;
	u8 *buf = malloc(fs->nodesize), *good_buf = malloc(fs->nodesize);

	if (!buf || !good_buf) {
		free(buf);
		free(good_buf);
		return -ENOMEM;
	}
	for (m = 1; m <= copies; m++) {
		int why;

		if (parity && m > 1 && good > 0)
			break;	/* a rebuild is only needed while the column is bad */
		if ((m == 1 || !parity) && !mfs_dev_usable(mfs_mirror_device(map, r->start, m))) {
			sc->st.c.unverified_errors++;
			continue;
		}
		if (m == 1 || !parity)
			count_read(sc, map, r->start, fs->nodesize, m);
		if (tree_copy_ok(fs, r, &chk, buf, m, &why)) {
			if (good < 0)
				memcpy(good_buf, buf, fs->nodesize);
			good = m;
		} else if ((!parity || m == 1) && nbad < MFS_MAX_COPIES) {
			bad[nbad] = m;
			stat[nbad++] = why;
		}
	}
	for (i = 0; i < nbad; i++) {
		struct mfs_device *dev = mfs_mirror_device(map, r->start, bad[i]);
		u64 devid = dev ? dev->devid : 0;
		bool usable = count_bad_copy(sc, dev, devid, stat[i], true);

		if (usable && mfs_dev_stat_inc(fs, r->start, bad[i], stat[i]) && good > 0 &&
		    !(sc->st.flags & MFS_SCRUB_READONLY) &&
		    !mfs_write_logical_mirror(fs, r->start, good_buf, fs->nodesize, bad[i]))
			count_corrected(sc, devid);
	}
	if (good < 0) {
		sc->st.c.uncorrectable_errors++;
		mfs_scrub_add_line(sc, "U tree block %llu of tree %llu",
			 (unsigned long long)r->start, (unsigned long long)r->owner);
	}
	if (nbad && (good < 0 || (sc->st.flags & MFS_SCRUB_READONLY)))
		sc->row_data_bad = true;
	free(buf);
	free(good_buf);
	return 0;
}

/* ---------------- raid5/6 parity ---------------- */

static bool repairing(const struct mfs_fs_info *fs, const struct mfs_scrub *sc)
{
	return !(sc->st.flags & MFS_SCRUB_READONLY) && (fs->open_flags & MFS_OPEN_WRITABLE);
}

/* The parity of the row waiting, checked now that all its extents are. */
static int flush_row(struct mfs_fs_info *fs, struct mfs_scrub *sc)
{
	struct mfs_chunk_map *map = sc->row_bg ? mfs_find_chunk(fs, sc->row_bg) : NULL;
	bool data_bad = sc->row_data_bad;
	u64 bad[2];
	int ret, i;

	sc->row_bg = 0;
	sc->row_data_bad = false;
	if (!map || data_bad)
		return 0;	/* parity is judged against good data only */
	if (mfs_scrub_batch_row_ok(sc->batch, map, sc->row))
		return 0;	/* read with the step: it matched */
	ret = mfs_scrub_row_parity(fs, map, sc->row, repairing(fs, sc), bad);
	if (ret == -EAGAIN || ret == -EIO)
		return 0;	/* still in memory, or a column is gone: unjudged */
	for (i = 0; i < ret; i++) {
		sc->st.c.parity_errors++;
		dev_counts(sc, bad[i])->parity_errors++;
		if (repairing(fs, sc))
			count_corrected(sc, bad[i]);
	}
	return ret < 0 ? ret : 0;
}

static void range_rows(const struct mfs_chunk_map *map, const struct mfs_range *r,
		       u64 *first, u64 *last)
{
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	u64 row_len = (u64)(map->num_stripes - a->nparity) * map->stripe_len;

	*first = (r->start - map->logical) / row_len;
	*last = (r->start + r->len - 1 - map->logical) / row_len;
}

/* ---------------- the results of a step's reads ---------------- */

/* Is r still the extent it was when the step was planned (not freed since)? */
static bool still_used(struct mfs_fs_info *fs, const struct mfs_range *r)
{
	struct mfs_range *x;
	bool same;
	int n;

	if (mfs_used_ranges(fs, r->start, r->start + 1, 1, &x, &n))
		return false;
	same = n >= 1 && x[0].start == r->start && x[0].len == r->len && x[0].gen == r->gen;
	free(x);
	return same;
}

/*
 * Each copy of [logical, +len) that was read counted on its device, each
 * on a device out of service counted unverified (per sector with sectors).
 */
static void count_copies(struct mfs_scrub *sc, struct mfs_chunk_map *map, u64 logical, u64 len,
			 int copies, bool sectors)
{
	while (len) {
		struct mfs_io_map io;
		u64 n;
		int m;

		if (mfs_map_block(map, logical, &io))
			return;
		n = min_t(u64, len, io.length);
		for (m = 1; m <= copies; m++) {
			if (mfs_dev_usable(mfs_mirror_device(map, logical, m)))
				count_read(sc, map, logical, n, m);
			else
				sc->st.c.unverified_errors += sectors ? n / MFS_SECTOR : 1;
		}
		logical += n;
		len -= n;
	}
}

/* Data extent k as the step read it: its suspect sectors checked again, repaired. */
static int judge_data(struct mfs_fs_info *fs, struct mfs_scrub *sc, struct mfs_chunk_map *map,
		      const struct scrub_batch *b, int k)
{
	const struct mfs_range *r = &b->r[k];
	u64 nsect = r->len / MFS_SECTOR, s;
	u8 *tmp;
	int ret = 0;

	if (!b->csums[k])
		return 0;	/* preallocated: nothing written to check */
	count_copies(sc, map, r->start, r->len,
		     mfs_profile(map->type)->nparity ? 1 : mfs_num_copies(map), true);
	if (!b->suspect[k] || !still_used(fs, r))
		return 0;
	if (posix_memalign((void **)&tmp, 4096, MFS_SECTOR))
		return -ENOMEM;
	for (s = 0; s < nsect && !ret; s++)
		if (b->suspect[k][s])
			ret = scrub_sector(fs, sc, map, r->start + s * MFS_SECTOR,
					   b->csums[k] + s * fs->csum_size, r->level, tmp);
	free(tmp);
	return ret;
}

/* Tree block k as the step read it: counted when good, else every copy looked at again. */
static int judge_tree(struct mfs_fs_info *fs, struct mfs_scrub *sc, struct mfs_chunk_map *map,
		      const struct scrub_batch *b, int k)
{
	const struct mfs_range *r = &b->r[k];

	if (b->tree_ok[k]) {
		count_copies(sc, map, r->start, fs->nodesize,
			     mfs_profile(map->type)->nparity ? 1 : mfs_num_copies(map), false);
		return 0;
	}
	return still_used(fs, r) ? scrub_tree_block(fs, sc, map, r) : 0;
}

/*
 * raid5/6: the rows r covers have their parity checked once every extent
 * in them is verified: the rows before its last at once, its last when
 * the next extent lies past it. With b, the extent is b's k-th, as read
 * by the step; without, it is read here.
 */
static int scrub_range(struct mfs_fs_info *fs, struct mfs_scrub *sc, struct mfs_chunk_map *map,
		       const struct mfs_range *r, const struct scrub_batch *b, int k)
{
	bool parity = mfs_profile(map->type)->nparity > 0;
	u64 first = 0, last = 0, row;
	bool data_bad;
	int ret = 0;

	if (parity) {
		range_rows(map, r, &first, &last);
		if (sc->row_bg && !(sc->row_bg == map->logical && sc->row == first))
			ret = flush_row(fs, sc);
	}
	if (!ret && b)
		ret = (r->flags & MFS_EXTENT_FLAG_DATA) ? judge_data(fs, sc, map, b, k) :
							  judge_tree(fs, sc, map, b, k);
	else if (!ret)
		ret = (r->flags & MFS_EXTENT_FLAG_DATA) ? scrub_data(fs, sc, map, r) :
							  scrub_tree_block(fs, sc, map, r);
	if (ret || !parity)
		return ret;
	data_bad = sc->row_data_bad;
	for (row = first; row <= last && !ret; row++) {
		sc->row_bg = map->logical;
		sc->row = row;
		sc->row_data_bad = data_bad;
		if (row < last)
			ret = flush_row(fs, sc);
	}
	return ret;
}

/* ---------------- superblocks ---------------- */

/*
 * Every superblock copy of every present device read and checked
 * (checksum and structure, this filesystem, the last commit's
 * generation), as btrfs's scrub does; a bad one is counted on its
 * device. It is not written here: every commit rewrites all of them, and
 * a repairing scrub starts (and ends) with one.
 */
static void scrub_supers(struct mfs_fs_info *fs, struct mfs_scrub *sc)
{
	struct mfs_super_block *sb = malloc(sizeof(*sb));
	int i, m;

	for (i = 0; sb && i < fs->nr_devices; i++) {
		struct mfs_device *dev = fs->devices[i];

		if (!mfs_dev_usable(dev) || dev->stale_gen)
			continue;
		for (m = 0; m < MFS_SUPER_MIRROR_MAX; m++) {
			int err, stat = MFS_DEV_STAT_CORRUPTION_ERRS;
			enum mfs_sb_copy_state st = mfs_super_copy_state(fs, dev, m, sb, &err);

			if (st == MFS_SB_COPY_BEYOND)
				break;
			if (st == MFS_SB_COPY_OK)
				continue;
			if (st == MFS_SB_COPY_CORRUPT && err == -EIO)
				stat = MFS_DEV_STAT_READ_ERRS;
			else if (st == MFS_SB_COPY_BEHIND || st == MFS_SB_COPY_OTHER_GEN)
				stat = MFS_DEV_STAT_GENERATION_ERRS;
			mfs_dev_count_error(fs, dev, stat);
			sc->st.c.super_errors++;
			dev_counts(sc, dev->devid)->super_errors++;
			if (repairing(fs, sc)) {
				sc->st.c.corrected_errors++;
				dev_counts(sc, dev->devid)->corrected_errors++;
			}
		}
	}
	free(sb);
}

/* ---------------- steps ---------------- */

/* A block group with a stripe missing: what redundancy it has left is reported. */
static void note_degraded(struct mfs_scrub *sc, const struct mfs_block_group *bg)
{
	const struct mfs_chunk_map *map = bg->map;
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	int i, missing = 0;

	for (i = 0; i < map->num_stripes; i++)
		missing += !mfs_dev_usable(map->stripes[i].dev);
	if (!missing || sc->degraded_bg == bg->start)
		return;
	sc->degraded_bg = bg->start;
	mfs_scrub_add_line(sc, "D chunk %llu (%s): %d of %d stripes missing, %s",
		 (unsigned long long)bg->start, a->ui_name, missing, map->num_stripes,
		 missing >= a->tolerated_failures ? "no redundancy left" : "redundancy reduced");
}

static struct mfs_block_group *bg_at_or_after(struct mfs_fs_info *fs, u64 cursor)
{
	int i;

	for (i = 0; i < fs->nr_bgs; i++)
		if (fs->bgs[i]->start + fs->bgs[i]->length > cursor)
			return fs->bgs[i];
	return NULL;
}

/*
 * The step's reads, planned under fs->lock (the checksums of its data
 * extents), done without it: map_lock held shared keeps the chunk map.
 */
static int read_batch(struct mfs_fs_info *fs, struct mfs_scrub *sc, struct scrub_batch *b)
{
	int k, ret = 0;

	b->csums = calloc(b->n, sizeof(*b->csums));
	if (!b->csums)
		return -ENOMEM;
	for (k = 0; k < b->n && !ret; k++) {
		if (!(b->r[k].flags & MFS_EXTENT_FLAG_DATA) || b->r[k].gen > b->gen)
			continue;
		ret = mfs_extent_csums(fs, b->r[k].start, b->r[k].len, &b->csums[k]);
		if (ret > 0)
			ret = 0;	/* preallocated: nothing written to check */
	}
	if (ret)
		return ret;
	pthread_rwlock_rdlock(&fs->map_lock);
	pthread_mutex_unlock(&fs->lock);
	ret = mfs_scrub_batch_read(fs, b, &sc->bufs);
	pthread_rwlock_unlock(&fs->map_lock);
	pthread_mutex_lock(&fs->lock);
	return ret;
}

/*
 * One step: the used extents from the cursor on, up to SCRUB_STEP bytes,
 * within one block group; planned and judged under fs->lock, read without
 * it (raid5/6 rows still in memory: all under it). 1 when the filesystem
 * is done. Extents of the running transaction are left alone: their data
 * may still be on its way to the disk.
 */
static int scrub_step(struct mfs_fs_info *fs, struct mfs_scrub *sc)
{
	struct mfs_block_group *bg = bg_at_or_after(fs, sc->st.cursor);
	struct scrub_batch b = { 0 };
	struct mfs_range *r;
	u64 done = 0, bg_start, bg_end;
	int i, n, ret;

	if (!bg) {
		ret = flush_row(fs, sc);
		return ret ? ret : 1;
	}
	if (sc->st.cursor <= bg->start) {
		ret = flush_row(fs, sc);
		if (ret)
			return ret;
		sc->st.cursor = bg->start;
		note_degraded(sc, bg);
	}
	bg_start = bg->start;
	bg_end = bg->start + bg->length;
	ret = mfs_used_ranges(fs, sc->st.cursor, bg_end, SCRUB_STEP, &r, &n);
	if (ret)
		return ret;
	b = (struct scrub_batch){ .map = bg->map, .gen = fs->generation, .r = r, .n = n };
	if (n && !(mfs_profile(bg->map->type)->nparity &&
		   mfs_range_has_open_rows(fs, bg->map, r[0].start,
					   r[n - 1].start + r[n - 1].len - r[0].start)))
		ret = read_batch(fs, sc, &b);
	/* the block group may have gone while the lock was let go */
	bg = bg_at_or_after(fs, bg_start);
	if (!bg || bg->start != bg_start)
		n = 0;
	sc->batch = b.csums ? &b : NULL;
	for (i = 0; i < n && !ret; i++) {
		if (r[i].gen <= b.gen)
			ret = scrub_range(fs, sc, bg->map, &r[i], sc->batch, i);
		sc->st.cursor = r[i].start + r[i].len;
		sc->st.c.bytes_done += r[i].len;
		done += r[i].len;
	}
	/* fewer than a step's bytes: the walk reached the block group's end */
	if (!ret && done < SCRUB_STEP) {
		ret = flush_row(fs, sc);
		sc->st.cursor = bg_end;
	}
	sc->batch = NULL;
	mfs_scrub_batch_free(&b);
	free(r);
	return ret;
}

/*
 * --limit: each device read at most limit bytes per second since the run
 * started or the limit last changed. How long to wait before the next
 * step, worked out under fs->lock.
 */
static u64 throttle_wait(struct mfs_scrub *sc)
{
	u64 most = 0, want, ran;
	u32 i;

	if (!sc->st.limit)
		return 0;
	for (i = 0; i < sc->st.nr_devs; i++)
		most = max_t(u64, most, sc->st.devs[i].c.bytes_done - sc->thr_dev_bytes[i]);
	want = (u64)((double)most * 1e9 / sc->st.limit);
	ran = now_ns() - sc->thr_start_ns;
	return want > ran ? want - ran : 0;
}

/* The wait, cut short by a pause, a cancel or a new limit. */
static void throttle_sleep(struct mfs_scrub *sc, u64 wait)
{
	u64 end = now_ns() + wait, t;

	while ((t = now_ns()) < end && !__atomic_load_n(&sc->pause_req, __ATOMIC_RELAXED) &&
	       !__atomic_load_n(&sc->cancel_req, __ATOMIC_RELAXED) &&
	       !__atomic_load_n(&sc->limit_changed, __ATOMIC_RELAXED)) {
		u64 ns = min_t(u64, end - t, 100000000ULL);
		struct timespec ts = { ns / 1000000000ULL, ns % 1000000000ULL };

		nanosleep(&ts, NULL);
	}
}

/* The rate is measured from now (fs->lock held). */
static void throttle_restart(struct mfs_scrub *sc)
{
	u32 i;

	sc->thr_start_ns = now_ns();
	for (i = 0; i < sc->st.nr_devs; i++)
		sc->thr_dev_bytes[i] = sc->st.devs[i].c.bytes_done;
}

/* ---------------- the persisted state (struct mfs_scrub_item) ---------------- */

static const struct mfs_key scrub_key = { MFS_SCRUB_OBJECTID, MFS_PERSISTENT_ITEM_KEY, 0 };
_Static_assert(MFS_SCRUB_RUNNING == MFS_SCRUB_STATE_RUNNING &&
	       MFS_SCRUB_PAUSED == MFS_SCRUB_STATE_PAUSED &&
	       MFS_SCRUB_FINISHED == MFS_SCRUB_STATE_FINISHED &&
	       MFS_SCRUB_CANCELED == MFS_SCRUB_STATE_CANCELED &&
	       MFS_SCRUB_ABORTED == MFS_SCRUB_STATE_ABORTED, "status and item states");

/* The run's scrubbing time so far. */
static u64 elapsed(const struct mfs_scrub *sc)
{
	return sc->elapsed_before + (sc->run_start_ns ? now_ns() - sc->run_start_ns : 0);
}

/* The states of the status are those of the item (format.h, ioctl.h). */
static void to_item(const struct mfs_scrub *sc, struct mfs_scrub_item *it)
{
	const struct mfs_ioctl_scrub_counts *c = &sc->st.c;

	memset(it, 0, sizeof(*it));
	it->state = cpu_to_le64(sc->st.state);
	it->flags = cpu_to_le64(((sc->st.flags & MFS_SCRUB_READONLY) ? MFS_SCRUB_ITEM_READONLY : 0) |
				(sc->interrupted && sc->st.state == MFS_SCRUB_PAUSED ?
				 MFS_SCRUB_ITEM_INTERRUPTED : 0));
	it->cursor = cpu_to_le64(sc->st.cursor);
	it->start_time = cpu_to_le64(sc->st.start_time);
	it->elapsed_ns = cpu_to_le64(elapsed(sc));
	it->bytes_total = cpu_to_le64(sc->st.bytes_total);
	it->limit = cpu_to_le64(sc->st.limit);
	it->bytes_done = cpu_to_le64(c->bytes_done);
	it->read_errors = cpu_to_le64(c->read_errors);
	it->csum_errors = cpu_to_le64(c->csum_errors);
	it->verify_errors = cpu_to_le64(c->verify_errors);
	it->parity_errors = cpu_to_le64(c->parity_errors);
	it->corrected_errors = cpu_to_le64(c->corrected_errors);
	it->uncorrectable_errors = cpu_to_le64(c->uncorrectable_errors);
	it->unverified_errors = cpu_to_le64(c->unverified_errors);
	it->super_errors = cpu_to_le64(c->super_errors);
}

/* A scrub found RUNNING was stopped without a word (unmount, crash): paused. */
static int from_item(struct mfs_scrub *sc, const struct mfs_scrub_item *it)
{
	struct mfs_ioctl_scrub_counts *c = &sc->st.c;
	u64 state = le64_to_cpu(it->state);

	if (state < MFS_SCRUB_STATE_RUNNING || state > MFS_SCRUB_STATE_ABORTED)
		return -EUCLEAN;
	sc->st.state = state == MFS_SCRUB_STATE_RUNNING ? MFS_SCRUB_PAUSED : state;
	sc->interrupted = state == MFS_SCRUB_STATE_RUNNING ||
			  (state == MFS_SCRUB_STATE_PAUSED &&
			   (le64_to_cpu(it->flags) & MFS_SCRUB_ITEM_INTERRUPTED));
	sc->st.flags = (le64_to_cpu(it->flags) & MFS_SCRUB_ITEM_READONLY) ? MFS_SCRUB_READONLY : 0;
	sc->st.cursor = le64_to_cpu(it->cursor);
	sc->st.start_time = le64_to_cpu(it->start_time);
	sc->elapsed_before = sc->st.elapsed_ns = le64_to_cpu(it->elapsed_ns);
	sc->st.bytes_total = le64_to_cpu(it->bytes_total);
	sc->st.limit = le64_to_cpu(it->limit);
	c->bytes_done = le64_to_cpu(it->bytes_done);
	c->read_errors = le64_to_cpu(it->read_errors);
	c->csum_errors = le64_to_cpu(it->csum_errors);
	c->verify_errors = le64_to_cpu(it->verify_errors);
	c->parity_errors = le64_to_cpu(it->parity_errors);
	c->corrected_errors = le64_to_cpu(it->corrected_errors);
	c->uncorrectable_errors = le64_to_cpu(it->uncorrectable_errors);
	c->unverified_errors = le64_to_cpu(it->unverified_errors);
	c->super_errors = le64_to_cpu(it->super_errors);
	sc->committed_at = sc->durable_bytes = sc->written_bytes = c->bytes_done;
	return 0;
}

/*
 * The bytes scrubbed that a commit holds (fs->lock held). Read-only, the
 * item is not written: the live figure.
 */
static u64 durable_bytes(struct mfs_fs_info *fs, struct mfs_scrub *sc)
{
	if (!(fs->open_flags & MFS_OPEN_WRITABLE))
		return sc->st.c.bytes_done;
	/* (a commit still writing its superblocks holds nothing yet) */
	if (sc->written_gen && fs->generation - !!fs->committing >= sc->written_gen)
		sc->durable_bytes = sc->written_bytes;
	return sc->durable_bytes;
}

/*
 * The scrub of fs (under fs->lock): the one in memory, else the one the
 * root tree holds; NULL when there is none (a bad item is reported and
 * taken for none: the next start writes a good one).
 */
static struct mfs_scrub *scrub_of(struct mfs_fs_info *fs)
{
	struct mfs_scrub_item it = { 0 };
	struct mfs_scrub *sc;
	struct mfs_path path;
	int ret;

	if (fs->scrub || !fs->tree_root)
		return fs->scrub;
	mfs_init_path(&path);
	ret = mfs_search_slot(NULL, fs->tree_root, &scrub_key, &path, 0, 0);
	if (ret == 0 && leaf_item_size(path.nodes[0], path.slots[0]) != sizeof(it))
		ret = -EUCLEAN;
	if (ret == 0)
		memcpy(&it, leaf_item_data(path.nodes[0], path.slots[0]), sizeof(it));
	mfs_release_path(&path);
	sc = ret ? NULL : calloc(1, sizeof(*sc));
	if (sc && from_item(sc, &it)) {
		free(sc);
		sc = NULL;
		ret = -EUCLEAN;
	}
	if (ret < 0)
		mfs_log(fs, "scrub: the saved scrub state is unreadable (%s); ignored",
			strerror(-ret));
	if (sc && mfs_scrub_files_load(fs, sc) < 0) {
		mfs_log(fs, "scrub: the saved list of files with errors is unreadable; ignored");
		sc->files_dirty = true;	/* the next save replaces it */
	}
	fs->scrub = sc;
	return sc;
}

/*
 * The state into the running transaction (fs->lock held), committed too
 * when commit says so: at start and end, and every SCRUB_COMMIT bytes; in
 * between, any commit (the daemon's timer, a sync) takes the latest
 * cursor along. A filesystem opened read-only is left as it is. unlocking:
 * the caller holds nothing across the call (between two steps), so the
 * commit lets go of fs->lock while it flushes.
 */
static int save_state(struct mfs_fs_info *fs, struct mfs_scrub *sc, bool commit, bool unlocking)
{
	struct mfs_trans_handle *trans;
	struct mfs_scrub_item it;
	int ret;

	if (!(fs->open_flags & MFS_OPEN_WRITABLE) || fs->fatal_error)
		return 0;
	to_item(sc, &it);
	ret = mfs_start_transaction(fs, &trans);
	if (ret)
		return ret;
	durable_bytes(fs, sc);
	ret = mfs_write_item(trans, fs->tree_root, &scrub_key, &it, sizeof(it));
	if (!ret)
		ret = mfs_scrub_files_save(trans, sc);
	if (!ret) {
		sc->written_gen = trans->transid;
		sc->written_bytes = sc->st.c.bytes_done;
	}
	commit |= sc->st.c.bytes_done - sc->committed_at >= SCRUB_COMMIT;
	if (ret)
		return mfs_end_transaction_abort(trans, ret);
	if (!commit) {
		mfs_end_transaction(trans);
		return 0;
	}
	sc->committed_at = sc->st.c.bytes_done;
	return unlocking ? mfs_commit_transaction_unlocking(trans) : mfs_commit_transaction(trans);
}

/* ---------------- running, status and control ---------------- */

bool mfs_scrub_in_progress(struct mfs_fs_info *fs)
{
	struct mfs_scrub *sc = scrub_of(fs);

	return sc && (sc->st.state == MFS_SCRUB_RUNNING || sc->st.state == MFS_SCRUB_PAUSED);
}

int mfs_scrub_busy(char *msg, size_t msglen)
{
	snprintf(msg, msglen, "another exclusive operation 'scrub' in progress");
	return -EBUSY;
}

static const char *restripe_name(const struct mfs_fs_info *fs)
{
	bool paused = fs->restripe->state == MFS_RESTRIPE_PAUSED;

	switch (fs->restripe->args.op) {
	case MFS_RESTRIPE_OP_DELETE:
		return paused ? "device remove paused" : "device remove";
	case MFS_RESTRIPE_OP_RESIZE:
		return "resize";
	case MFS_RESTRIPE_OP_REPLACE:
		return "device replace";
	}
	return paused ? "balance paused" : "balance";
}

int mfs_scrub_start(struct mfs_fs_info *fs, struct mfs_ioctl_scrub_args *a)
{
	struct mfs_scrub *sc;
	int i, ret = 0;

	a->msg[0] = 0;
	pthread_mutex_lock(&fs->lock);
	/*
	 * The superblocks are checked against fs->generation: not while a
	 * commit writes them (a failed one turns the filesystem read-only,
	 * and the state's commit below says so)
	 */
	mfs_end_pending_commit(fs);
	if (mfs_scrub_in_progress(fs)) {
		snprintf(a->msg, sizeof(a->msg), "Scrub is already %s.",
			 fs->scrub->st.state == MFS_SCRUB_PAUSED ? "paused" : "running");
		ret = -EINPROGRESS;
	} else if (fs->restripe && fs->restripe->state != MFS_RESTRIPE_NONE) {
		snprintf(a->msg, sizeof(a->msg),
			 "unable to start scrub, another exclusive operation '%s' in progress",
			 restripe_name(fs));
		ret = -EBUSY;
	} else if (!(a->flags & MFS_SCRUB_READONLY) && !(fs->open_flags & MFS_OPEN_WRITABLE)) {
		snprintf(a->msg, sizeof(a->msg), "the filesystem is read-only: use -r");
		ret = -EROFS;
	}
	sc = ret ? NULL : calloc(1, sizeof(*sc));
	if (!ret && !sc)
		ret = -ENOMEM;
	if (!ret) {
		sc->st.state = MFS_SCRUB_RUNNING;
		sc->st.flags = a->flags;
		sc->st.limit = a->limit;
		sc->st.start_time = time(NULL);
		sc->files_dirty = true;	/* the last scrub's files go */
		for (i = 0; i < fs->nr_bgs; i++)
			sc->st.bytes_total += fs->bgs[i]->used;
		free(fs->scrub);
		fs->scrub = sc;
		/* before the commit below, which rewrites every superblock */
		scrub_supers(fs, sc);
		ret = save_state(fs, sc, true, false);
		if (ret) {
			snprintf(a->msg, sizeof(a->msg), "cannot save the scrub's state: %s",
				 strerror(-ret));
			sc->st.state = MFS_SCRUB_ABORTED;
		}
	}
	pthread_mutex_unlock(&fs->lock);
	a->result = ret;
	return ret;
}

static void status_locked(struct mfs_fs_info *fs, struct mfs_ioctl_scrub_status *st)
{
	struct mfs_scrub *sc = scrub_of(fs);

	memset(st, 0, sizeof(*st));
	if (!sc)
		return;
	*st = sc->st;
	st->c.bytes_done = durable_bytes(fs, sc);
	st->pause_req = sc->pause_req;
	st->cancel_req = sc->cancel_req;
	if (sc->st.state == MFS_SCRUB_RUNNING)
		st->elapsed_ns = elapsed(sc);
	/* what was written while it ran is scrubbed too, if it lies ahead */
	st->bytes_total = max_t(u64, st->bytes_total, st->c.bytes_done);
}

void mfs_scrub_status(struct mfs_fs_info *fs, struct mfs_ioctl_scrub_status *st)
{
	pthread_mutex_lock(&fs->lock);
	status_locked(fs, st);
	pthread_mutex_unlock(&fs->lock);
}

/* Where a run ended: the state it leaves, and the time it took. */
static void end_run(struct mfs_scrub *sc, int ret)
{
	sc->elapsed_before += now_ns() - sc->run_start_ns;
	sc->run_start_ns = 0;
	sc->st.elapsed_ns = sc->elapsed_before;
	sc->st.last_result = ret == 1 ? 0 : ret;
	sc->st.state = ret == 1 ? MFS_SCRUB_FINISHED :
		       ret == -EINTR ? MFS_SCRUB_PAUSED :
		       ret == -ECANCELED ? MFS_SCRUB_CANCELED : MFS_SCRUB_ABORTED;
	sc->pause_req = sc->cancel_req = 0;
}

int mfs_scrub_run(struct mfs_fs_info *fs)
{
	struct mfs_scrub *sc;
	int ret = 0;

	pthread_mutex_lock(&fs->lock);
	sc = fs->scrub;
	if (!sc || sc->st.state != MFS_SCRUB_RUNNING) {
		pthread_mutex_unlock(&fs->lock);
		return -ENOTCONN;
	}
	sc->run_start_ns = now_ns();
	throttle_restart(sc);
	while (!ret) {
		u64 wait = 0;

		if (sc->cancel_req || sc->pause_req) {
			ret = sc->cancel_req ? -ECANCELED : -EINTR;
			break;
		}
		ret = scrub_step(fs, sc);
		if (!ret)
			ret = save_state(fs, sc, false, true);
		if (!ret) {
			__atomic_store_n(&sc->limit_changed, 0, __ATOMIC_RELAXED);
			wait = throttle_wait(sc);
		}
		pthread_mutex_unlock(&fs->lock);
		/* between steps user I/O and commits go on */
		if (!ret) {
			mfs_test_pause_at("scrub-step");
			throttle_sleep(sc, wait);
		}
		pthread_mutex_lock(&fs->lock);
	}
	/* the files are named before the state says the scrub has ended */
	if (ret != -EINTR) {
		pthread_mutex_unlock(&fs->lock);
		mfs_scrub_name_files(fs, sc);
		pthread_mutex_lock(&fs->lock);
	}
	mfs_scrub_bufs_free(&sc->bufs);
	end_run(sc, ret);
	save_state(fs, sc, true, false);
	pthread_mutex_unlock(&fs->lock);
	return ret == 1 ? 0 : ret;
}

int mfs_scrub_set_limit(struct mfs_fs_info *fs, u64 limit, u64 *old)
{
	struct mfs_scrub *sc;
	int ret = -ENOTCONN;

	pthread_mutex_lock(&fs->lock);
	sc = scrub_of(fs);
	if (sc && (sc->st.state == MFS_SCRUB_RUNNING || sc->st.state == MFS_SCRUB_PAUSED ||
		   sc->st.state == MFS_SCRUB_CANCELED || sc->st.state == MFS_SCRUB_ABORTED)) {
		*old = sc->st.limit;
		sc->st.limit = limit;
		throttle_restart(sc);
		__atomic_store_n(&sc->limit_changed, 1, __ATOMIC_RELAXED);
		/* a running scrub saves it with its next step */
		ret = sc->st.state == MFS_SCRUB_RUNNING ? 0 : save_state(fs, sc, true, false);
	}
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

bool mfs_scrub_interrupted(struct mfs_fs_info *fs)
{
	const struct mfs_scrub *sc;
	bool ret;

	pthread_mutex_lock(&fs->lock);
	sc = scrub_of(fs);
	ret = sc && sc->st.state == MFS_SCRUB_PAUSED && sc->interrupted;
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

int mfs_scrub_ctl(struct mfs_fs_info *fs, unsigned int cmd)
{
	struct mfs_scrub *sc;
	int ret = -ENOTCONN;

	pthread_mutex_lock(&fs->lock);
	sc = scrub_of(fs);
	if (!sc) {
		pthread_mutex_unlock(&fs->lock);
		return ret;
	}
	if ((cmd == MFS_SCRUB_CTL_PAUSE || cmd == MFS_SCRUB_CTL_INTERRUPT) &&
	    sc->st.state == MFS_SCRUB_RUNNING) {
		__atomic_store_n(&sc->pause_req, 1, __ATOMIC_RELAXED);
		sc->interrupted = cmd == MFS_SCRUB_CTL_INTERRUPT;
		ret = 0;
	} else if (cmd == MFS_SCRUB_CTL_CANCEL && sc->st.state == MFS_SCRUB_RUNNING) {
		__atomic_store_n(&sc->cancel_req, 1, __ATOMIC_RELAXED);
		ret = 0;
	} else if (cmd == MFS_SCRUB_CTL_CANCEL && sc->st.state == MFS_SCRUB_PAUSED) {
		sc->st.state = MFS_SCRUB_CANCELED;
		ret = save_state(fs, sc, true, false);
	} else if (cmd == MFS_SCRUB_CTL_RESUME && fs->restripe &&
		   fs->restripe->state != MFS_RESTRIPE_NONE) {
		ret = -EBUSY;	/* e.g. a balance resumed at mount meanwhile */
	} else if (cmd == MFS_SCRUB_CTL_RESUME && (sc->st.state == MFS_SCRUB_PAUSED ||
						   sc->st.state == MFS_SCRUB_CANCELED ||
						   sc->st.state == MFS_SCRUB_ABORTED)) {
		sc->st.state = MFS_SCRUB_RUNNING;
		sc->st.resumed = 1;
		sc->interrupted = false;
		ret = 0;
	} else if (cmd == MFS_SCRUB_CTL_RESUME && sc->st.state == MFS_SCRUB_RUNNING) {
		ret = -EINPROGRESS;
	}
	pthread_mutex_unlock(&fs->lock);
	return ret;
}
