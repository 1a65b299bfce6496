/*
 * Reading file data: a checksum for every sector verified on every read, with
 * repair of every bad copy from a good one, compressed extents, and reads
 * planned under the lock and done without it.
 */
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <linux/falloc.h>
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/fs/inode.h"
#include "kernel-shared/fs/inode-internal.h"
#include "kernel-shared/tree/transaction.h"
#include "kernel-shared/tree/alloc.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/block/csum.h"
#include "kernel-shared/block/testhook.h"
#include "kernel-shared/format/profiles.h"

/* Items turning an inline extent into a regular one changes, at most. */
#define UNINLINE_ITEMS 6
/* ---------------- checksummed data I/O ---------------- */

int mfs_extent_csums(struct mfs_fs_info *fs, u64 disk_bytenr, u64 disk_len, u8 **out)
{
	struct mfs_key key = { MFS_EXTENT_CSUM_OBJECTID, MFS_EXTENT_CSUM_KEY, disk_bytenr };
	u64 want = disk_len / MFS_SECTOR * fs->csum_size;
	struct mfs_path path;
	int ret;

	*out = NULL;
	if (!fs->csum_root)
		return 1;
	mfs_init_path(&path);
	ret = mfs_search_slot(NULL, fs->csum_root, &key, &path, 0, 0);
	if (ret == 0) {
		if (leaf_item_size(path.nodes[0], path.slots[0]) != want) {
			ret = -EUCLEAN;
		} else {
			*out = malloc(want);
			if (!*out)
				ret = -ENOMEM;
			else
				memcpy(*out, leaf_item_data(path.nodes[0], path.slots[0]), want);
		}
	}
	mfs_release_path(&path);
	return ret;
}

/* The csum item of a data extent that is read: it must have one. */
static int read_extent_csums(struct mfs_fs_info *fs, u64 disk_bytenr, u64 disk_len, u8 **out)
{
	int ret = mfs_extent_csums(fs, disk_bytenr, disk_len, out);

	return ret > 0 ? -EUCLEAN : ret;	/* data without checksums */
}

static bool sector_ok(struct mfs_fs_info *fs, const u8 *data, const u8 *want)
{
	u8 got[MFS_CSUM_SIZE];

	mfs_csum_compute(fs->csum_type, data, MFS_SECTOR, got);
	return memcmp(got, want, fs->csum_size) == 0;
}

/*
 * Self-heal one data sector: read every copy (raid5/6: the data column,
 * then rebuilds from parity until one is good), count each copy that is
 * unreadable or does not match want against its device, and rewrite it
 * with the good data, which goes to out (unless rep says report only).
 * -EIO when no copy is good. Checking every copy, not just until a good
 * one, finds the bad copy whichever copy a reader happened to read.
 * rep (may be NULL) gets the bad copies and how many were rewritten.
 */
int mfs_heal_data_sector(struct mfs_fs_info *fs, u64 logical, const u8 *want, u8 *out,
			 struct mfs_heal_report *rep)
{
	struct mfs_chunk_map *map = mfs_find_chunk(fs, logical);
	struct mfs_heal_report local = { 0 };
	int copies, m, ret = -EIO;
	bool parity;
	u8 *tmp;

	if (!rep)
		rep = &local;
	rep->nbad = rep->rewritten = 0;
	if (!map)
		return -EUCLEAN;
	copies = mfs_num_copies(map);
	parity = mfs_profile(map->type)->nparity > 0;
	tmp = malloc(MFS_SECTOR);
	if (!tmp)
		return -ENOMEM;
	for (m = 1; m <= copies; m++) {
		int err;

		if (parity && m > 1 && !ret)
			break;	/* a rebuild is only needed while the column is bad */
		err = mfs_read_logical(fs, logical, tmp, MFS_SECTOR, m);
		if (!err && sector_ok(fs, tmp, want)) {
			if (ret)
				memcpy(out, tmp, MFS_SECTOR);
			ret = 0;
			continue;
		}
		/* raid5/6: a rebuild that fails says nothing about one device */
		if ((parity && m > 1) || rep->nbad == MFS_MAX_COPIES)
			continue;
		rep->mirror[rep->nbad] = m;
		rep->stat[rep->nbad++] = err ? MFS_DEV_STAT_READ_ERRS : MFS_DEV_STAT_CORRUPTION_ERRS;
	}
	for (m = 0; m < rep->nbad; m++)
		if (mfs_dev_stat_inc(fs, logical, rep->mirror[m], rep->stat[m]) && !ret &&
		    !rep->report_only &&
		    !mfs_write_logical_mirror(fs, logical, out, MFS_SECTOR, rep->mirror[m]))
			rep->rewritten++;
	free(tmp);
	return ret;
}

/*
 * Read [logical, logical+len) of a data extent, verifying each sector
 * against csums (indexed from the extent start). Each piece comes from the
 * copy reads prefer (read_policy, never a stale device while another is
 * there); a sector that is bad or unreadable there is healed from the
 * other copies (mfs_heal_data_sector).
 */
static int read_verified(struct mfs_fs_info *fs, u64 extent_start, const u8 *csums,
			 u64 logical, u64 len, u8 *buf)
{
	u64 i, nsect = len / MFS_SECTOR;
	bool all_read;
	int ret;

	all_read = mfs_read_logical(fs, logical, buf, len, MFS_MIRROR_PREFERRED) == 0;
	for (i = 0; i < nsect; i++) {
		u64 sl = logical + i * MFS_SECTOR;
		const u8 *want = csums + (sl - extent_start) / MFS_SECTOR * fs->csum_size;
		u8 *sb = buf + i * MFS_SECTOR;

		if (all_read && sector_ok(fs, sb, want))
			continue;
		ret = mfs_heal_data_sector(fs, sl, want, sb, NULL);
		if (ret)
			return ret;
	}
	return 0;
}

int mfs_read_data_verified(struct mfs_fs_info *fs, u64 bytenr, u64 len, const u8 *csums, u8 *buf)
{
	return read_verified(fs, bytenr, csums, bytenr, len, buf);
}

int mfs_data_sector_csum(struct mfs_fs_info *fs, u64 logical, u8 *out)
{
	struct mfs_key key = { MFS_EXTENT_CSUM_OBJECTID, MFS_EXTENT_CSUM_KEY, logical };
	struct mfs_path path;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_slot(NULL, fs->csum_root, &key, &path, 0, 0);
	if (ret > 0)
		ret = mfs_prev_item(fs->csum_root, &path) ? 1 : 0;
	if (ret == 0) {
		struct extent_buffer *leaf = path.nodes[0];
		u64 idx;

		leaf_item_key(leaf, path.slots[0], &key);
		idx = (logical - key.offset) / MFS_SECTOR;
		ret = 1;
		if (key.objectid == MFS_EXTENT_CSUM_OBJECTID && key.type == MFS_EXTENT_CSUM_KEY &&
		    key.offset <= logical &&
		    (idx + 1) * fs->csum_size <= leaf_item_size(leaf, path.slots[0])) {
			memcpy(out, (u8 *)leaf_item_data(leaf, path.slots[0]) + idx * fs->csum_size,
			       fs->csum_size);
			ret = 0;
		}
	}
	mfs_release_path(&path);
	return ret;
}

/*
 * Sectors a read without the lock found bad: heal every copy of each (the
 * reader may have read any of them) against the checksum the trees hold
 * now, so an extent freed and reused meanwhile is not taken for damage.
 */
static void heal_suspects(struct mfs_fs_info *fs, const u64 *sectors, int n)
{
	u8 want[MFS_CSUM_SIZE], *tmp = malloc(MFS_SECTOR);
	int i;

	for (i = 0; tmp && i < n; i++)
		if (mfs_data_sector_csum(fs, sectors[i], want) == 0)
			mfs_heal_data_sector(fs, sectors[i], want, tmp, NULL);
	free(tmp);
}

/* Copy file bytes [pos, pos+len) of one extent into out. */
static int read_extent(struct mfs_fs_info *fs, u64 ino, const struct file_extent *fe,
		       u64 pos, u64 len, u8 *out)
{
	u64 in_ext = fe->offset + (pos - fe->start);
	u64 a, b;
	u8 *csums = NULL, *tmp;
	int ret;

	if (fe->type == MFS_FILE_EXTENT_PREALLOC ||
	    (fe->type == MFS_FILE_EXTENT_REG && !fe->disk_bytenr)) {
		memset(out, 0, len);
		return 0;
	}
	if (fe->type == MFS_FILE_EXTENT_INLINE) {
		ssize_t n;

		tmp = malloc(fe->len);
		if (!tmp)
			return -ENOMEM;
		n = mfs_read_inline(fs, ino, tmp, fe->len);
		if (n >= 0)
			memcpy(out, tmp + (pos - fe->start), min_t(u64, len, (u64)n - (pos - fe->start)));
		free(tmp);
		return n < 0 ? n : 0;
	}
	if (fe->compression != MFS_COMPRESS_NONE) {
		ret = mfs_read_compressed(fs, fe->disk_bytenr, fe->disk_num_bytes, fe->ram_bytes,
					  in_ext, len, out);
		return ret;
	}
	ret = read_extent_csums(fs, fe->disk_bytenr, fe->disk_num_bytes, &csums);
	if (ret)
		return ret;
	a = round_down(in_ext, MFS_SECTOR);
	b = round_up(in_ext + len, MFS_SECTOR);
	tmp = malloc(b - a);
	if (!tmp) {
		free(csums);
		return -ENOMEM;
	}
	ret = read_verified(fs, fe->disk_bytenr, csums, fe->disk_bytenr + a, b - a, tmp);
	if (!ret)
		memcpy(out, tmp + (in_ext - a), len);
	free(tmp);
	free(csums);
	return ret;
}

int mfs_read_compressed(struct mfs_fs_info *fs, u64 disk_bytenr, u64 disk_len, u64 ram_bytes,
			u64 in_ext, u64 len, u8 *out)
{
	u8 *csums = NULL, *raw, *plain;
	int ret;

	ret = read_extent_csums(fs, disk_bytenr, disk_len, &csums);
	if (ret)
		return ret;
	raw = malloc(disk_len);
	plain = malloc(ram_bytes);
	if (!raw || !plain) {
		ret = -ENOMEM;
		goto out;
	}
	ret = read_verified(fs, disk_bytenr, csums, disk_bytenr, disk_len, raw);
	if (!ret)
		ret = mfs_decompress(raw, disk_len, plain, ram_bytes);
	if (!ret)
		memcpy(out, plain + in_ext, len);
out:
	free(raw);
	free(plain);
	free(csums);
	return ret;
}

/* Read file bytes [off, off+len) that lie below size; holes read as zeros. */
int data_read_range(struct mfs_fs_info *fs, u64 ino, u64 off, u64 len, u8 *buf)
{
	u64 pos = off, end = off + len;
	struct file_extent fe;
	int ret;

	memset(buf, 0, len);
	while (pos < end) {
		u64 s, e;

		ret = data_next_file_extent(fs, ino, pos, &fe);
		if (ret > 0)
			break;
		if (ret)
			return ret;
		if (fe.start >= end)
			break;
		s = max_t(u64, pos, fe.start);
		e = min_t(u64, end, fe.start + fe.len);
		ret = read_extent(fs, ino, &fe, s, e - s, buf + (s - off));
		if (ret)
			return ret;
		pos = e;
	}
	return 0;
}

/* Data sectors a read without the lock found bad or could not read. */
struct suspects {
	u64 *sector;
	int n, max;
};

static void suspect(struct suspects *sus, u64 logical)
{
	if (MFS_ARRAY_RESERVE(sus->sector, sus->n, sus->max, 16))
		return;	/* best effort: the locked read still verifies */
	sus->sector[sus->n++] = logical;
}

/*
 * The whole read under fs->lock: heals the sectors a read without the lock
 * found bad, then verifies, repairs bad copies, counts errors.
 */
static ssize_t read_locked(struct mfs_fs_info *fs, u64 ino, u64 off, size_t len, void *buf,
			   const struct suspects *sus)
{
	struct mfs_inode_item ii;
	u64 size;
	int ret;

	/* the tests' hook: a read that could not be served without the lock */
	mfs_test_pause_at("read-locked");
	pthread_mutex_lock(&fs->lock);
	heal_suspects(fs, sus->sector, sus->n);
	ret = mfs_read_inode(fs, ino, &ii);
	if (ret)
		goto out;
	if (S_ISDIR(le32_to_cpu(ii.mode))) {
		ret = -EISDIR;
		goto out;
	}
	size = le64_to_cpu(ii.size);
	if (off >= size) {
		pthread_mutex_unlock(&fs->lock);
		return 0;
	}
	len = min_t(u64, len, size - off);
	ret = data_read_range(fs, ino, off, len, buf);
out:
	pthread_mutex_unlock(&fs->lock);
	return ret ? ret : (ssize_t)len;
}

/* Part of a read whose disk data is fetched without fs->lock. */
struct read_seg {
	struct file_extent fe;
	u64 pos, len;		/* file range */
	u8 *out;
	u8 *csums;
	u8 *tmp;		/* the sectors read: out itself, or a bounce buffer */
	u64 a, b;		/* that sector range, relative to the extent's disk start */
};

/* Where a segment's sectors go: whole aligned sectors straight into out. */
static int seg_prepare(struct read_seg *r, struct mfs_read_range *range)
{
	const struct file_extent *fe = &r->fe;
	bool compressed = fe->compression != MFS_COMPRESS_NONE;
	u64 in_ext = fe->offset + (r->pos - fe->start);

	r->a = compressed ? 0 : round_down(in_ext, MFS_SECTOR);
	r->b = compressed ? fe->disk_num_bytes : round_up(in_ext + r->len, MFS_SECTOR);
	if (!compressed && r->a == in_ext && r->b - r->a == r->len &&
	    !((uintptr_t)r->out % MFS_IO_DIRECT_ALIGN))
		r->tmp = r->out;
	else if (posix_memalign((void **)&r->tmp, MFS_IO_DIRECT_ALIGN, r->b - r->a))
		return -ENOMEM;
	range->logical = fe->disk_bytenr + r->a;
	range->buf = r->tmp;
	range->len = r->b - r->a;
	return 0;
}

/*
 * Verify a segment read and put its bytes in place. A bad checksum (also
 * an extent freed and reused since it was looked up) is -EAGAIN: the
 * caller then reads under the lock, which repairs what is really bad.
 */
static int seg_finish(struct mfs_fs_info *fs, struct read_seg *r, struct suspects *sus)
{
	const struct file_extent *fe = &r->fe;
	u64 in_ext = fe->offset + (r->pos - fe->start), i;
	u8 *plain;
	int ret = 0;

	for (i = 0; i < (r->b - r->a) / MFS_SECTOR; i++) {
		if (sector_ok(fs, r->tmp + i * MFS_SECTOR,
			      r->csums + (r->a / MFS_SECTOR + i) * fs->csum_size))
			continue;
		suspect(sus, fe->disk_bytenr + r->a + i * MFS_SECTOR);
		ret = -EAGAIN;
	}
	if (ret)
		return ret;
	if (fe->compression != MFS_COMPRESS_NONE) {
		plain = malloc(fe->ram_bytes);
		ret = plain ? mfs_decompress(r->tmp, r->b - r->a, plain, fe->ram_bytes) : -ENOMEM;
		if (!ret)
			memcpy(r->out, plain + in_ext, r->len);
		free(plain);
		return ret && ret != -ENOMEM ? -EAGAIN : ret;
	}
	if (r->tmp != r->out)
		memcpy(r->out, r->tmp + (in_ext - r->a), r->len);
	return 0;
}

/*
 * Fetch every segment at once (device transfers in parallel) and verify
 * them. -EAGAIN with the sectors to heal in sus: the caller reads again
 * under the lock.
 */
static int read_segs_unlocked(struct mfs_fs_info *fs, struct read_seg *segs, int nsegs,
			      struct suspects *sus)
{
	struct mfs_read_range *ranges = calloc(nsegs, sizeof(*ranges));
	int i, ret = ranges ? 0 : -ENOMEM, err;
	u64 s;

	for (i = 0; !ret && i < nsegs; i++)
		ret = seg_prepare(&segs[i], &ranges[i]);
	if (!ret)
		ret = mfs_read_ranges_unlocked(fs, nsegs, ranges);
	if (ret && ret != -ENOMEM) {
		/* an I/O error on some copy: which sectors it hit is not known */
		for (i = 0; i < nsegs; i++)
			for (s = segs[i].a; s < segs[i].b; s += MFS_SECTOR)
				suspect(sus, segs[i].fe.disk_bytenr + s);
		free(ranges);
		return -EAGAIN;
	}
	/* every segment is verified, so every bad sector is named */
	for (i = 0; i < nsegs && (!ret || ret == -EAGAIN); i++) {
		err = seg_finish(fs, &segs[i], sus);
		if (err)
			ret = err;
	}
	free(ranges);
	return ret;
}

/*
 * Look up the extents of [off, off+len) under fs->lock and fill in what
 * needs no disk read (holes, inline data) or must be read under the lock
 * (raid5/6 rows still in memory); list the rest.
 */
static int plan_read(struct mfs_fs_info *fs, u64 ino, u64 off, u64 len, u8 *buf,
		     struct read_seg **segs, int *nsegs)
{
	u64 pos = off, end = off + len;
	struct file_extent fe;
	int max = 0, ret;

	while (pos < end) {
		struct mfs_chunk_map *map;
		u64 s, e;

		ret = data_next_file_extent(fs, ino, pos, &fe);
		if (ret < 0)
			return ret;
		if (ret > 0 || fe.start >= end)
			break;
		s = max_t(u64, pos, fe.start);
		e = min_t(u64, end, fe.start + fe.len);
		memset(buf + (pos - off), 0, s - pos);	/* a hole before the extent */
		pos = e;
		if (fe.type != MFS_FILE_EXTENT_REG || !fe.disk_bytenr)
			map = NULL;
		else
			map = mfs_find_chunk(fs, fe.disk_bytenr);
		if (!map || (mfs_profile(map->type)->nparity &&
			     mfs_range_has_open_rows(fs, map, fe.disk_bytenr, fe.disk_num_bytes))) {
			ret = read_extent(fs, ino, &fe, s, e - s, buf + (s - off));
			if (ret)
				return ret;
			continue;
		}
		if (MFS_ARRAY_RESERVE(*segs, *nsegs, max, 8))
			return -ENOMEM;
		(*segs)[*nsegs] = (struct read_seg){ .fe = fe, .pos = s, .len = e - s,
						     .out = buf + (s - off) };
		ret = read_extent_csums(fs, fe.disk_bytenr, fe.disk_num_bytes,
					&(*segs)[*nsegs].csums);
		if (ret)
			return ret;
		(*nsegs)++;
	}
	memset(buf + (pos - off), 0, end - pos);	/* a hole to the end */
	return 0;
}

/*
 * Reads look up their extents under fs->lock and fetch the data without
 * it, from the least busy copy, so reads run in parallel with each other
 * and with writers. Anything unusual is read again under the lock.
 */
ssize_t mfs_read(struct mfs_fs_info *fs, u64 ino, u64 off, size_t len, void *buf)
{
	struct mfs_inode_item ii;
	struct read_seg *segs = NULL;
	struct suspects sus = { 0 };
	int nsegs = 0, i, ret;
	ssize_t n;
	u64 size;

	pthread_mutex_lock(&fs->lock);
	ret = mfs_read_inode(fs, ino, &ii);
	if (!ret && S_ISDIR(le32_to_cpu(ii.mode)))
		ret = -EISDIR;
	size = le64_to_cpu(ii.size);
	if (!ret && off >= size) {
		pthread_mutex_unlock(&fs->lock);
		return 0;
	}
	if (!ret) {
		len = min_t(u64, len, size - off);
		ret = plan_read(fs, ino, off, len, buf, &segs, &nsegs);
	}
	if (ret || !nsegs) {
		pthread_mutex_unlock(&fs->lock);
		goto out;
	}
	pthread_rwlock_rdlock(&fs->map_lock);
	pthread_mutex_unlock(&fs->lock);
	ret = read_segs_unlocked(fs, segs, nsegs, &sus);
	pthread_rwlock_unlock(&fs->map_lock);
out:
	for (i = 0; i < nsegs; i++) {
		free(segs[i].csums);
		if (segs[i].tmp != segs[i].out)
			free(segs[i].tmp);
	}
	free(segs);
	if (ret == -EAGAIN) {
		n = read_locked(fs, ino, off, len, buf, &sus);
		free(sus.sector);
		return n;
	}
	return ret ? ret : (ssize_t)len;
}
