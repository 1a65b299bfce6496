/*
 * File contents: copy-on-write data extents, a checksum for every sector
 * verified on every read (with repair from another copy), holes,
 * preallocation, truncate and SEEK_DATA/SEEK_HOLE.
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
#include "kernel-shared/format/profiles.h"

#define SECTOR 4096ULL
/* Items turning an inline extent into a regular one changes, at most. */
#define UNINLINE_ITEMS 6

/* Data extents are capped so their checksums fit in one csum item. */
static u64 max_extent_size(struct mfs_fs_info *fs)
{
	u64 sectors = MFS_MAX_ITEM(fs) / fs->csum_size;

	return min_t(u64, 4 * SZ_1M, sectors * SECTOR);
}

/* ---------------- file extent items ---------------- */

struct file_extent {
	u64 start;		/* file offset (key offset) */
	u64 len;		/* file bytes covered */
	u8 type;
	u8 compression;
	u64 disk_bytenr;
	u64 disk_num_bytes;
	u64 offset;
	u64 ram_bytes;
};

static int parse_file_extent(struct extent_buffer *leaf, int slot, const struct mfs_key *key,
			     struct file_extent *fe)
{
	const struct mfs_file_extent_item *fi = leaf_item_data(leaf, slot);
	u32 size = leaf_item_size(leaf, slot);

	if (size < MFS_FILE_EXTENT_INLINE_DATA_START)
		return -EUCLEAN;
	memset(fe, 0, sizeof(*fe));
	fe->start = key->offset;
	fe->type = fi->type;
	fe->compression = fi->compression;
	if (fi->type == MFS_FILE_EXTENT_INLINE) {
		fe->len = size - MFS_FILE_EXTENT_INLINE_DATA_START;
		return 0;
	}
	if (size != sizeof(*fi) || (fi->type != MFS_FILE_EXTENT_REG &&
				    fi->type != MFS_FILE_EXTENT_PREALLOC))
		return -EUCLEAN;
	fe->disk_bytenr = le64_to_cpu(fi->disk_bytenr);
	fe->disk_num_bytes = le64_to_cpu(fi->disk_num_bytes);
	fe->offset = le64_to_cpu(fi->offset);
	fe->len = le64_to_cpu(fi->num_bytes);
	fe->ram_bytes = le64_to_cpu(fi->ram_bytes);
	if (!fe->len || fe->offset + fe->len > fe->ram_bytes || fe->start + fe->len < fe->start)
		return -EUCLEAN;
	return 0;
}

/*
 * The first file extent of ino ending after pos (it may start after pos).
 * Returns 0 and fills fe, 1 when there is none.
 */
static int next_file_extent(struct mfs_fs_info *fs, u64 ino, u64 pos, struct file_extent *fe)
{
	struct mfs_key key = { ino, MFS_EXTENT_DATA_KEY, pos };
	struct mfs_path path;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_slot(NULL, fs->fs_root, &key, &path, 0, 0);
	if (ret < 0)
		goto out;
	if (ret > 0) {
		/* the previous item may straddle pos */
		ret = mfs_prev_item(fs->fs_root, &path);
		if (ret < 0)
			goto out;
		if (ret == 0) {
			leaf_item_key(path.nodes[0], path.slots[0], &key);
			if (key.objectid == ino && key.type == MFS_EXTENT_DATA_KEY) {
				ret = parse_file_extent(path.nodes[0], path.slots[0], &key, fe);
				if (ret || fe->start + fe->len > pos)
					goto out;
			}
		}
		mfs_release_path(&path);
		key.objectid = ino;
		key.type = MFS_EXTENT_DATA_KEY;
		key.offset = pos;
		ret = mfs_search_forward(fs->fs_root, &key, &path);
		if (ret)
			goto out;
	}
	leaf_item_key(path.nodes[0], path.slots[0], &key);
	if (key.objectid != ino || key.type != MFS_EXTENT_DATA_KEY) {
		ret = 1;
		goto out;
	}
	ret = parse_file_extent(path.nodes[0], path.slots[0], &key, fe);
out:
	mfs_release_path(&path);
	return ret;
}

static int adjust_nbytes(struct mfs_trans_handle *trans, u64 ino, s64 delta)
{
	struct mfs_inode_item ii;
	int ret;

	if (!delta)
		return 0;
	ret = mfs_read_inode(trans->fs_info, ino, &ii);
	if (ret)
		return ret;
	ii.nbytes = cpu_to_le64((s64)le64_to_cpu(ii.nbytes) + delta < 0 ? 0 :
				(s64)le64_to_cpu(ii.nbytes) + delta);
	return mfs_write_inode(trans, ino, &ii);
}

static bool has_disk_extent(const struct file_extent *fe)
{
	return fe->type != MFS_FILE_EXTENT_INLINE && fe->disk_bytenr;
}

/* Cut [start, end) out of one file extent item (found at fe->start). */
static int trim_one_extent(struct mfs_trans_handle *trans, u64 ino, const struct file_extent *fe,
			   u64 start, u64 end, s64 *nbytes)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_key key = { ino, MFS_EXTENT_DATA_KEY, fe->start };
	u64 es = fe->start, ee = fe->start + fe->len;
	struct mfs_file_extent_item *fi;
	struct mfs_path path;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_slot(trans, fs->fs_root, &key, &path, sizeof(*fi) + sizeof(struct mfs_item), 1);
	if (ret > 0)
		ret = -EUCLEAN;
	if (ret)
		goto out;
	if (es >= start && ee <= end) {
		ret = mfs_del_item(trans, fs->fs_root, &path);
		if (!ret && has_disk_extent(fe))
			ret = mfs_free_extent(trans, fe->disk_bytenr, fe->disk_num_bytes);
		*nbytes -= fe->len;
		goto out;
	}
	if (fe->type == MFS_FILE_EXTENT_INLINE) {
		ret = -EINVAL;
		goto out;
	}
	fi = leaf_item_data(path.nodes[0], path.slots[0]);
	if (es < start && ee > end) {
		struct mfs_file_extent_item tail = *fi;

		fi->num_bytes = cpu_to_le64(start - es);
		mfs_mark_buffer_dirty(trans, path.nodes[0]);
		mfs_release_path(&path);
		tail.offset = cpu_to_le64(fe->offset + (end - es));
		tail.num_bytes = cpu_to_le64(ee - end);
		key.offset = end;
		ret = mfs_insert_item(trans, fs->fs_root, &key, &tail, sizeof(tail));
		if (!ret && has_disk_extent(fe))
			ret = mfs_inc_extent_ref(trans, fe->disk_bytenr, fe->disk_num_bytes);
		*nbytes -= end - start;
	} else if (es < start) {
		fi->num_bytes = cpu_to_le64(start - es);
		mfs_mark_buffer_dirty(trans, path.nodes[0]);
		*nbytes -= ee - start;
	} else {
		struct mfs_key nk = { ino, MFS_EXTENT_DATA_KEY, end };

		fi->offset = cpu_to_le64(fe->offset + (end - es));
		fi->num_bytes = cpu_to_le64(ee - end);
		mfs_set_item_key_safe(trans, &path, &nk);
		*nbytes -= end - es;
	}
out:
	mfs_release_path(&path);
	return ret;
}

int mfs_drop_file_extents(struct mfs_trans_handle *trans, u64 ino, u64 start, u64 end)
{
	struct file_extent fe;
	s64 nbytes = 0;
	int ret;

	for (;;) {
		ret = next_file_extent(trans->fs_info, ino, start, &fe);
		if (ret)
			break;
		if (fe.start >= end)
			break;
		ret = trim_one_extent(trans, ino, &fe, start, end, &nbytes);
		if (ret)
			break;
	}
	if (ret > 0)
		ret = 0;
	if (!ret)
		ret = adjust_nbytes(trans, ino, nbytes);
	return ret;
}

/*
 * How many file extents of ino overlap [start, end), counting no more than
 * limit; *next is where the extent after the counted ones starts (end if
 * none). Space reservations size drops and truncates with it.
 */
int mfs_count_file_extents(struct mfs_fs_info *fs, u64 ino, u64 start, u64 end,
			   u64 limit, u64 *n, u64 *next)
{
	struct file_extent fe;
	u64 pos = start;
	int ret;

	*n = 0;
	*next = end;
	while (pos < end) {
		ret = next_file_extent(fs, ino, pos, &fe);
		if (ret < 0)
			return ret;
		if (ret || fe.start >= end)
			break;
		if (*n == limit) {
			*next = max_t(u64, fe.start, start);
			break;
		}
		(*n)++;
		pos = fe.start + fe.len;
	}
	return 0;
}

/* ---------------- inline (symlink targets) ---------------- */

static int insert_inline_item(struct mfs_trans_handle *trans, u64 ino, const void *data,
			      size_t len)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_key key = { ino, MFS_EXTENT_DATA_KEY, 0 };
	struct mfs_file_extent_item *fi;
	struct mfs_path path;
	u8 *item;
	int ret;

	if (len > MFS_MAX_INLINE(fs))
		return -ENAMETOOLONG;
	mfs_init_path(&path);
	ret = mfs_insert_empty_item(trans, fs->fs_root, &path, &key,
				    MFS_FILE_EXTENT_INLINE_DATA_START + len);
	if (!ret) {
		item = leaf_item_data(path.nodes[0], path.slots[0]);
		fi = (struct mfs_file_extent_item *)item;
		fi->generation = cpu_to_le64(trans->transid);
		fi->type = MFS_FILE_EXTENT_INLINE;
		fi->compression = MFS_COMPRESS_NONE;
		memcpy(item + MFS_FILE_EXTENT_INLINE_DATA_START, data, len);
	}
	mfs_release_path(&path);
	return ret;
}

int mfs_write_inline(struct mfs_trans_handle *trans, u64 ino, const void *data, size_t len)
{
	struct mfs_inode_item ii;
	int ret = insert_inline_item(trans, ino, data, len);

	if (ret)
		return ret;
	ret = mfs_read_inode(trans->fs_info, ino, &ii);
	if (ret)
		return ret;
	ii.size = cpu_to_le64(len);
	return mfs_write_inode(trans, ino, &ii);
}

ssize_t mfs_read_inline(struct mfs_fs_info *fs, u64 ino, void *buf, size_t size)
{
	struct mfs_key key = { ino, MFS_EXTENT_DATA_KEY, 0 };
	struct mfs_path path;
	ssize_t ret;

	mfs_init_path(&path);
	ret = mfs_search_slot(NULL, fs->fs_root, &key, &path, 0, 0);
	if (ret > 0)
		ret = -EUCLEAN;
	if (ret == 0) {
		const u8 *item = leaf_item_data(path.nodes[0], path.slots[0]);
		u32 isize = leaf_item_size(path.nodes[0], path.slots[0]);

		if (isize < MFS_FILE_EXTENT_INLINE_DATA_START ||
		    item[8] != MFS_FILE_EXTENT_INLINE) {
			ret = -EUCLEAN;
		} else {
			ret = min_t(size_t, size, isize - MFS_FILE_EXTENT_INLINE_DATA_START);
			memcpy(buf, item + MFS_FILE_EXTENT_INLINE_DATA_START, ret);
		}
	}
	mfs_release_path(&path);
	return ret;
}

/* ---------------- checksummed data I/O ---------------- */

int mfs_extent_csums(struct mfs_fs_info *fs, u64 disk_bytenr, u64 disk_len, u8 **out)
{
	struct mfs_key key = { MFS_EXTENT_CSUM_OBJECTID, MFS_EXTENT_CSUM_KEY, disk_bytenr };
	u64 want = disk_len / SECTOR * fs->csum_size;
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

	mfs_csum_compute(fs->csum_type, data, SECTOR, got);
	return memcmp(got, want, fs->csum_size) == 0;
}

/*
 * Self-heal one data sector: read every copy (raid5/6: the data column,
 * then rebuilds from parity until one is good), count each copy that is
 * unreadable or does not match want against its device, and rewrite it
 * with the good data, which goes to out. -EIO when no copy is good.
 * Checking every copy, not just until a good one, finds the bad copy
 * whichever copy a reader happened to read.
 */
static int heal_sector(struct mfs_fs_info *fs, u64 logical, const u8 *want, u8 *out)
{
	struct mfs_chunk_map *map = mfs_find_chunk(fs, logical);
	int copies, m, nbad = 0, ret = -EIO;
	bool parity;
	int *bad, *stat;
	u8 *tmp;

	if (!map)
		return -EUCLEAN;
	copies = mfs_num_copies(map);
	parity = mfs_profile(map->type)->nparity > 0;
	tmp = malloc(SECTOR);
	bad = calloc(copies, sizeof(*bad));
	stat = calloc(copies, sizeof(*stat));
	if (!tmp || !bad || !stat) {
		ret = -ENOMEM;
		goto out;
	}
	for (m = 1; m <= copies; m++) {
		int err;

		if (parity && m > 1 && !ret)
			break;	/* a rebuild is only needed while the column is bad */
		err = mfs_read_logical(fs, logical, tmp, SECTOR, m);
		if (!err && sector_ok(fs, tmp, want)) {
			if (ret)
				memcpy(out, tmp, SECTOR);
			ret = 0;
			continue;
		}
		/* raid5/6: a rebuild that fails says nothing about one device */
		if (parity && m > 1)
			continue;
		bad[nbad] = m;
		stat[nbad++] = err ? MFS_DEV_STAT_READ_ERRS : MFS_DEV_STAT_CORRUPTION_ERRS;
	}
	for (m = 0; m < nbad; m++)
		if (mfs_dev_stat_inc(fs, logical, bad[m], stat[m]) && !ret)
			mfs_write_logical_mirror(fs, logical, out, SECTOR, bad[m]);
out:
	free(tmp);
	free(bad);
	free(stat);
	return ret;
}

/*
 * Read [logical, logical+len) of a data extent, verifying each sector
 * against csums (indexed from the extent start). Each piece comes from the
 * copy reads prefer (read_policy, never a stale device while another is
 * there); a sector that is bad or unreadable there is healed from the
 * other copies (heal_sector).
 */
static int read_verified(struct mfs_fs_info *fs, u64 extent_start, const u8 *csums,
			 u64 logical, u64 len, u8 *buf)
{
	u64 i, nsect = len / SECTOR;
	bool all_read;
	int ret;

	all_read = mfs_read_logical(fs, logical, buf, len, MFS_MIRROR_PREFERRED) == 0;
	for (i = 0; i < nsect; i++) {
		u64 sl = logical + i * SECTOR;
		const u8 *want = csums + (sl - extent_start) / SECTOR * fs->csum_size;
		u8 *sb = buf + i * SECTOR;

		if (all_read && sector_ok(fs, sb, want))
			continue;
		ret = heal_sector(fs, sl, want, sb);
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
		idx = (logical - key.offset) / SECTOR;
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
	u8 want[MFS_CSUM_SIZE], *tmp = malloc(SECTOR);
	int i;

	for (i = 0; tmp && i < n; i++)
		if (mfs_data_sector_csum(fs, sectors[i], want) == 0)
			heal_sector(fs, sectors[i], want, tmp);
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
	a = round_down(in_ext, SECTOR);
	b = round_up(in_ext + len, SECTOR);
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
static int read_range(struct mfs_fs_info *fs, u64 ino, u64 off, u64 len, u8 *buf)
{
	u64 pos = off, end = off + len;
	struct file_extent fe;
	int ret;

	memset(buf, 0, len);
	while (pos < end) {
		u64 s, e;

		ret = next_file_extent(fs, ino, pos, &fe);
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
	if (sus->n == sus->max) {
		int max = sus->max ? sus->max * 2 : 16;
		u64 *p = realloc(sus->sector, max * sizeof(*p));

		if (!p)
			return;	/* best effort: the locked read still verifies */
		sus->sector = p;
		sus->max = max;
	}
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
	ret = read_range(fs, ino, off, len, buf);
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

	r->a = compressed ? 0 : round_down(in_ext, SECTOR);
	r->b = compressed ? fe->disk_num_bytes : round_up(in_ext + r->len, SECTOR);
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

	for (i = 0; i < (r->b - r->a) / SECTOR; i++) {
		if (sector_ok(fs, r->tmp + i * SECTOR,
			      r->csums + (r->a / SECTOR + i) * fs->csum_size))
			continue;
		suspect(sus, fe->disk_bytenr + r->a + i * SECTOR);
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
			for (s = segs[i].a; s < segs[i].b; s += SECTOR)
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

		ret = next_file_extent(fs, ino, pos, &fe);
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
		if (*nsegs == max) {
			void *p;

			max = max ? max * 2 : 8;
			p = realloc(*segs, max * sizeof(**segs));
			if (!p)
				return -ENOMEM;
			*segs = p;
		}
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

/* ---------------- writing ---------------- */

static void compute_csums(struct mfs_fs_info *fs, const u8 *data, u64 len, u8 *sums)
{
	u64 i;

	for (i = 0; i < len / SECTOR; i++) {
		u8 c[MFS_CSUM_SIZE];

		mfs_csum_compute(fs->csum_type, data + i * SECTOR, SECTOR, c);
		memcpy(sums + i * fs->csum_size, c, fs->csum_size);
	}
}

int mfs_insert_data_csums(struct mfs_trans_handle *trans, u64 bytenr, const u8 *sums, u64 len)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_key key = { MFS_EXTENT_CSUM_OBJECTID, MFS_EXTENT_CSUM_KEY, bytenr };

	return mfs_insert_item(trans, fs->csum_root, &key, sums, len / SECTOR * fs->csum_size);
}

static int insert_csums(struct mfs_trans_handle *trans, u64 bytenr, const u8 *data, u64 len)
{
	struct mfs_fs_info *fs = trans->fs_info;
	u8 *sums = malloc(len / SECTOR * fs->csum_size);
	int ret;

	if (!sums)
		return -ENOMEM;
	compute_csums(fs, data, len, sums);
	ret = mfs_insert_data_csums(trans, bytenr, sums, len);
	free(sums);
	return ret;
}

static int insert_file_extent(struct mfs_trans_handle *trans, u64 ino, u64 pos, u8 type,
			      u8 compression, u64 bytenr, u64 disk_len, u64 ram_len)
{
	struct mfs_key key = { ino, MFS_EXTENT_DATA_KEY, pos };
	struct mfs_file_extent_item fi = {
		.generation = cpu_to_le64(trans->transid),
		.type = type,
		.compression = compression,
		.disk_bytenr = cpu_to_le64(bytenr),
		.disk_num_bytes = cpu_to_le64(disk_len),
		.offset = cpu_to_le64(0),
		.num_bytes = cpu_to_le64(ram_len),
		.ram_bytes = cpu_to_le64(ram_len),
	};

	return mfs_insert_item(trans, trans->fs_info->fs_root, &key, &fi, sizeof(fi));
}

int mfs_repoint_file_extents(struct mfs_trans_handle *trans, u64 ino, u64 old_bytenr,
			     u64 new_bytenr, int *nrefs, u64 *first_offset)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_key key = { ino, MFS_EXTENT_DATA_KEY, 0 };
	struct mfs_path path;
	u64 *offsets = NULL;
	int n = 0, max = 0, i, ret;

	/* the items first (a read-only walk), then each rewritten through a COW search */
	mfs_init_path(&path);
	ret = mfs_search_forward(fs->fs_root, &key, &path);
	while (ret == 0) {
		struct extent_buffer *leaf = path.nodes[0];
		struct file_extent fe;

		leaf_item_key(leaf, path.slots[0], &key);
		if (key.objectid != ino || key.type != MFS_EXTENT_DATA_KEY)
			break;
		ret = parse_file_extent(leaf, path.slots[0], &key, &fe);
		if (ret)
			break;
		if (fe.type != MFS_FILE_EXTENT_INLINE && fe.disk_bytenr == old_bytenr) {
			if (n == max) {
				u64 *p;

				max = max ? max * 2 : 8;
				p = realloc(offsets, max * sizeof(*p));
				if (!p) {
					ret = -ENOMEM;
					break;
				}
				offsets = p;
			}
			offsets[n++] = key.offset;
		}
		ret = mfs_next_item(fs->fs_root, &path);
	}
	mfs_release_path(&path);
	if (ret < 0)
		goto out;
	for (i = 0; i < n; i++) {
		struct mfs_file_extent_item *fi;

		key = (struct mfs_key){ ino, MFS_EXTENT_DATA_KEY, offsets[i] };
		mfs_init_path(&path);
		ret = mfs_search_slot(trans, fs->fs_root, &key, &path, 0, 1);
		if (ret > 0)
			ret = -EUCLEAN;
		if (!ret) {
			fi = leaf_item_data(path.nodes[0], path.slots[0]);
			fi->disk_bytenr = cpu_to_le64(new_bytenr);
			mfs_mark_buffer_dirty(trans, path.nodes[0]);
		}
		mfs_release_path(&path);
		if (ret)
			goto out;
	}
	*nrefs = n;
	*first_offset = n ? offsets[0] : 0;
	ret = 0;
out:
	free(offsets);
	return ret;
}

/*
 * Write sector-aligned data at file offset pos into new extents and point
 * the file at them (copy-on-write: the old extents are released).
 */
static int write_aligned(struct mfs_trans_handle *trans, u64 ino, u64 pos, const u8 *data,
			 u64 len)
{
	struct mfs_fs_info *fs = trans->fs_info;
	u64 done = 0;
	int ret;

	while (done < len) {
		u64 want = min_t(u64, len - done, max_extent_size(fs));
		u64 bytenr, got, disk_len;
		u8 *cbuf = NULL;
		u8 compression = MFS_COMPRESS_NONE;
		const u8 *src = data + done;

		disk_len = want;
		if (fs->compress && want > SECTOR &&
		    mfs_compress(fs->compress, src, want, &cbuf, &disk_len) == 0) {
			compression = MFS_COMPRESS_ZLIB;
			src = cbuf;
		}
		/* space first: on ENOSPC the old contents must still be there */
		ret = mfs_reserve_data_extent(trans, disk_len, disk_len, &bytenr, &got);
		if (ret) {
			free(cbuf);
			return ret;
		}
		ret = mfs_drop_file_extents(trans, ino, pos + done, pos + done + want);
		if (!ret)
			ret = mfs_write_logical(fs, bytenr, src, disk_len);
		if (!ret)
			ret = insert_csums(trans, bytenr, src, disk_len);
		if (!ret)
			ret = insert_file_extent(trans, ino, pos + done, MFS_FILE_EXTENT_REG,
						 compression, bytenr, disk_len, want);
		if (!ret)
			ret = mfs_add_data_ref(trans, bytenr, disk_len, MFS_FS_TREE_OBJECTID,
					       ino, pos + done);
		free(cbuf);
		if (ret) {
			mfs_unreserve_extent(fs, bytenr, disk_len);
			return ret;
		}
		ret = adjust_nbytes(trans, ino, want);
		if (ret)
			return ret;
		done += want;
	}
	return 0;
}

/* Write [off, off+len), reading back the old bytes of partial sectors. */
static int write_locked(struct mfs_trans_handle *trans, u64 ino, u64 size, u64 off,
			u64 len, const u8 *data)
{
	struct mfs_fs_info *fs = trans->fs_info;
	u64 s = round_down(off, SECTOR), e = round_up(off + len, SECTOR);
	u8 *buf;
	int ret = 0;

	buf = calloc(1, e - s);
	if (!buf)
		return -ENOMEM;
	if (off > s && s < size)
		ret = read_range(fs, ino, s, min_t(u64, SECTOR, size - s), buf);
	if (!ret && off + len < e && e - SECTOR >= s + (off > s ? SECTOR : 0) && e - SECTOR < size)
		ret = read_range(fs, ino, e - SECTOR, min_t(u64, SECTOR, size - (e - SECTOR)),
				 buf + (e - SECTOR - s));
	if (!ret) {
		memcpy(buf + (off - s), data, len);
		ret = write_aligned(trans, ino, s, buf, e - s);
	}
	free(buf);
	return ret;
}

/*
 * Small files live inline in the fs tree (as btrfs does up to max_inline):
 * an inline extent is then the file's only extent, at offset 0, and it
 * counts its length in nbytes. A file growing past MAX_INLINE_FILE, or
 * getting any other extent, has it turned into a regular extent first.
 */
#define MAX_INLINE_FILE 2048

/* 1 when the file's data is one inline extent (*len its length), 0 when not. */
static int inline_extent(struct mfs_fs_info *fs, u64 ino, u64 *len)
{
	struct file_extent fe;
	int ret = next_file_extent(fs, ino, 0, &fe);

	if (ret)
		return ret > 0 ? 0 : ret;
	if (fe.type != MFS_FILE_EXTENT_INLINE)
		return 0;
	*len = fe.len;
	return 1;
}

/* Does the file have no extent at all? */
static int no_extents(struct mfs_fs_info *fs, u64 ino)
{
	struct file_extent fe;
	int ret = next_file_extent(fs, ino, 0, &fe);

	return ret < 0 ? ret : ret > 0;
}

/* Replace the file's inline extent (if any) by its first len bytes inline (none if 0). */
static int rewrite_inline(struct mfs_trans_handle *trans, u64 ino, const u8 *data, u64 len)
{
	int ret = mfs_drop_file_extents(trans, ino, 0, SECTOR);

	if (!ret && len)
		ret = insert_inline_item(trans, ino, data, len);
	if (!ret)
		ret = adjust_nbytes(trans, ino, len);
	return ret;
}

/* Turn an inline extent into a regular one, before the file gets other extents. */
static int uninline(struct mfs_trans_handle *trans, u64 ino)
{
	struct mfs_fs_info *fs = trans->fs_info;
	u8 buf[SECTOR];
	u64 len = 0;
	ssize_t n;
	int ret = inline_extent(fs, ino, &len);

	if (ret <= 0)
		return ret;
	memset(buf, 0, sizeof(buf));
	n = mfs_read_inline(fs, ino, buf, len);
	if (n < 0)
		return n;
	ret = mfs_drop_file_extents(trans, ino, 0, SECTOR);
	if (!ret)
		ret = write_aligned(trans, ino, 0, buf, SECTOR);
	return ret;
}

/*
 * Write [off, off+len) of a file of size bytes: inline while the file stays
 * small and has no other extent, else as extents (an inline one converted).
 */
static int write_small_or_locked(struct mfs_trans_handle *trans, u64 ino, u64 size, u64 off,
				 u64 len, const u8 *data)
{
	struct mfs_fs_info *fs = trans->fs_info;
	u64 end = max_t(u64, size, off + len), ilen = 0;
	int inl, ret;

	inl = inline_extent(fs, ino, &ilen);
	if (inl < 0)
		return inl;
	if (end <= MAX_INLINE_FILE && size <= MAX_INLINE_FILE) {
		u8 buf[MAX_INLINE_FILE];
		ssize_t n = 0;

		ret = inl ? 0 : no_extents(fs, ino);
		if (ret < 0)
			return ret;
		if (inl || ret) {
			memset(buf, 0, sizeof(buf));
			if (inl)
				n = mfs_read_inline(fs, ino, buf, min_t(u64, ilen, size));
			if (n < 0)
				return n;
			memcpy(buf + off, data, len);
			return rewrite_inline(trans, ino, buf, end);
		}
	}
	if (inl) {
		ret = uninline(trans, ino);
		if (ret)
			return ret;
	}
	return write_locked(trans, ino, size, off, len, data);
}

/* Commit when the transaction has grown large, to bound memory. */
static int maybe_commit(struct mfs_fs_info *fs)
{
	if (fs->running && (u64)fs->running->nr_dirty * fs->nodesize > 64 * SZ_1M)
		return mfs_commit_if_dirty(fs);
	return 0;
}

/* The inode of a file to write to: -EISDIR for a directory, -EINVAL for other kinds. */
static int read_file_inode(struct mfs_fs_info *fs, u64 ino, struct mfs_inode_item *ii)
{
	int ret = mfs_read_inode(fs, ino, ii);

	if (!ret && !S_ISREG(le32_to_cpu(ii->mode)))
		ret = S_ISDIR(le32_to_cpu(ii->mode)) ? -EISDIR : -EINVAL;
	return ret;
}

/* New size and times of a written file. */
static int finish_write(struct mfs_trans_handle *trans, u64 ino, u64 end)
{
	struct mfs_inode_item ii;
	int ret = mfs_read_inode(trans->fs_info, ino, &ii);

	if (ret)
		return ret;
	if (trans->fs_info->caller_times && end <= le64_to_cpu(ii.size))
		return 0;
	if (end > le64_to_cpu(ii.size))
		ii.size = cpu_to_le64(end);
	if (!trans->fs_info->caller_times) {
		mfs_now(&ii.mtime);
		ii.ctime = ii.mtime;
	}
	return mfs_write_inode(trans, ino, &ii);
}

/*
 * One new extent of a sector-aligned write. Its space is reserved under
 * fs->lock; the data and checksums are written without it (the extent is
 * private to this write until its items go in), then the items are
 * inserted under the lock again.
 */
struct write_piece {
	u64 pos;		/* file offset */
	u64 len;
	u64 bytenr;
	bool unlocked;		/* written without fs->lock: counted in bg->inflight */
	bool parity;		/* raid5/6: buffered in open rows, not written by itself */
	u8 *csums;
};

static void piece_done(struct mfs_fs_info *fs, struct write_piece *p)
{
	struct mfs_block_group *bg;

	if (!p->unlocked)
		return;
	p->unlocked = false;
	bg = mfs_lookup_block_group(fs, p->bytenr);
	if (bg && bg->inflight && !--bg->inflight)
		pthread_cond_broadcast(&fs->inflight_done);
}

/*
 * Reserve the extents of [pos, pos+len). Data for chunks with parity goes
 * into the open rows at once; the rows it fills are added to *full.
 */
static int reserve_pieces(struct mfs_trans_handle *trans, u64 pos, const u8 *buf, u64 len,
			  struct write_piece *pieces, int *npieces, struct mfs_open_row **full)
{
	struct mfs_fs_info *fs = trans->fs_info;
	u64 done = 0;
	int ret = 0;

	*npieces = 0;
	while (done < len) {
		struct write_piece *p = &pieces[*npieces];
		struct mfs_block_group *bg;
		u64 got;

		p->pos = pos + done;
		p->len = min_t(u64, len - done, max_extent_size(fs));
		p->unlocked = false;
		p->parity = false;
		p->csums = malloc(p->len / SECTOR * fs->csum_size);
		if (!p->csums)
			return -ENOMEM;
		ret = mfs_reserve_data_extent(trans, p->len, p->len, &p->bytenr, &got);
		if (ret) {
			free(p->csums);
			return ret;
		}
		(*npieces)++;
		bg = mfs_lookup_block_group(fs, p->bytenr);
		if (!bg)
			return -EUCLEAN;
		bg->inflight++;
		p->unlocked = true;
		if (mfs_profile(bg->flags)->nparity) {
			p->parity = true;
			ret = mfs_write_logical_defer(fs, p->bytenr, buf + done, p->len, full);
			if (ret)
				return ret;
		}
		done += p->len;
	}
	return 0;
}

/* Point the file at the written pieces (under fs->lock). */
static int link_pieces(struct mfs_trans_handle *trans, u64 ino, struct write_piece *pieces,
		       int npieces)
{
	struct mfs_fs_info *fs = trans->fs_info;
	int i, ret = 0;

	for (i = 0; i < npieces; i++) {
		struct write_piece *p = &pieces[i];
		bool referenced = false;

		if (!ret)
			ret = mfs_drop_file_extents(trans, ino, p->pos, p->pos + p->len);
		if (!ret)
			ret = mfs_insert_data_csums(trans, p->bytenr, p->csums, p->len);
		if (!ret)
			ret = insert_file_extent(trans, ino, p->pos, MFS_FILE_EXTENT_REG,
						 MFS_COMPRESS_NONE, p->bytenr, p->len, p->len);
		if (!ret)
			ret = mfs_add_data_ref(trans, p->bytenr, p->len, MFS_FS_TREE_OBJECTID,
					       ino, p->pos);
		if (!ret) {
			referenced = true;
			ret = adjust_nbytes(trans, ino, p->len);
		}
		if (!referenced)
			mfs_unreserve_extent(fs, p->bytenr, p->len);
	}
	return ret;
}

/* Items a write of [off, off+len) in npieces new extents changes, at most. */
static int write_items(struct mfs_fs_info *fs, u64 ino, u64 off, u64 len, u64 npieces,
		       unsigned int *items)
{
	u64 n, next;
	int ret;

	ret = mfs_count_file_extents(fs, ino, round_down(off, SECTOR),
				     round_up(off + len, SECTOR), 1U << 20, &n, &next);
	if (ret)
		return ret;
	/*
	 * each old extent: its item goes or is cut in two, its reference
	 * changes; each new one: file extent and checksum items, nbytes;
	 * then size and times
	 */
	*items = 2 * n + 3 * npieces + 2;
	return 0;
}

static int start_write_transaction(struct mfs_fs_info *fs, u64 ino, u64 off, u64 len,
				   u64 npieces, struct mfs_trans_handle **trans)
{
	unsigned int items;
	int ret = write_items(fs, ino, off, len, npieces, &items);

	if (ret)
		return ret;
	return mfs_start_transaction_reserve(fs, items, MFS_RESERVE_NORMAL, trans);
}

/*
 * A write of whole sectors (nothing old to merge in): the data goes to
 * disk without fs->lock, so writers of other ranges and readers proceed
 * meanwhile and a single file's parallel writeback runs in parallel.
 */
static int write_sectors(struct mfs_fs_info *fs, u64 ino, u64 off, u64 len, const void *data)
{
	struct mfs_trans_handle *trans;
	struct mfs_inode_item ii;
	struct write_piece *pieces;
	struct mfs_open_row *full = NULL;
	int npieces = 0, i, ret;
	u8 *buf = NULL;
	u64 done;

	pieces = calloc(len / max_extent_size(fs) + 1, sizeof(*pieces));
	if (!pieces || posix_memalign((void **)&buf, MFS_IO_DIRECT_ALIGN, len)) {
		free(pieces);
		return -ENOMEM;
	}
	memcpy(buf, data, len);

	pthread_mutex_lock(&fs->lock);
	/* the data, a sector for an inline extent turned regular, and its items */
	ret = mfs_data_space_check(fs, len + SECTOR);
	if (!ret)
		ret = mfs_start_transaction_reserve(fs, UNINLINE_ITEMS, MFS_RESERVE_NORMAL,
						    &trans);
	if (ret)
		goto unlock;
	ret = read_file_inode(fs, ino, &ii);
	if (!ret)
		ret = uninline(trans, ino);
	if (!ret)
		ret = reserve_pieces(trans, off, buf, len, pieces, &npieces, &full);
	mfs_end_transaction(trans);
	if (ret) {
		/* rows this write filled may hold other writers' data: they go out */
		mfs_write_full_rows(fs, full);
		mfs_release_full_rows(fs, full);
		goto undo;
	}
	/* map_lock before dropping fs->lock: the maps stay as they are */
	pthread_rwlock_rdlock(&fs->map_lock);
	pthread_mutex_unlock(&fs->lock);

	for (i = 0, done = 0; i < npieces; done += pieces[i].len, i++) {
		compute_csums(fs, buf + done, pieces[i].len, pieces[i].csums);
		if (!ret && !pieces[i].parity)
			ret = mfs_write_logical_unlocked(fs, pieces[i].bytenr, buf + done,
							 pieces[i].len);
	}
	if (full) {
		int err = mfs_write_full_rows(fs, full);

		if (!ret)
			ret = err;
	}

	pthread_rwlock_unlock(&fs->map_lock);
	pthread_mutex_lock(&fs->lock);
	mfs_release_full_rows(fs, full);
	if (ret)
		goto undo;
	ret = start_write_transaction(fs, ino, off, len, npieces, &trans);
	if (ret)
		goto undo;
	/* the lock was dropped: the file must still be there to take the extents */
	ret = read_file_inode(fs, ino, &ii);
	if (ret) {
		mfs_end_transaction(trans);
		goto undo;
	}
	ret = link_pieces(trans, ino, pieces, npieces);
	if (!ret)
		ret = finish_write(trans, ino, off + len);
	mfs_end_transaction(trans);
	for (i = 0; i < npieces; i++)
		piece_done(fs, &pieces[i]);
	if (!ret)
		ret = maybe_commit(fs);
	goto unlock;
undo:
	for (i = 0; i < npieces; i++) {
		mfs_unreserve_extent(fs, pieces[i].bytenr, pieces[i].len);
		piece_done(fs, &pieces[i]);
	}
unlock:
	pthread_mutex_unlock(&fs->lock);
	for (i = 0; i < npieces; i++)
		free(pieces[i].csums);
	free(pieces);
	free(buf);
	return ret;
}

ssize_t mfs_write(struct mfs_fs_info *fs, u64 ino, u64 off, size_t len, const void *data)
{
	struct mfs_trans_handle *trans;
	struct mfs_inode_item ii;
	int ret;

	if (!len)
		return 0;
	if (off + len < off)
		return -EFBIG;
	if (!fs->compress && !(off % SECTOR) && !(len % SECTOR)) {
		ret = write_sectors(fs, ino, off, len, data);
		return ret ? ret : (ssize_t)len;
	}
	pthread_mutex_lock(&fs->lock);
	/* whole sectors around the bytes, and an inline extent turned regular */
	ret = mfs_data_space_check(fs, round_up(len, SECTOR) + 2 * SECTOR);
	if (!ret)
		ret = start_write_transaction(fs, ino, off, len,
					      len / max_extent_size(fs) + 2, &trans);
	if (ret)
		goto unlock;
	ret = read_file_inode(fs, ino, &ii);
	if (!ret)
		ret = write_small_or_locked(trans, ino, le64_to_cpu(ii.size), off, len, data);
	if (!ret)
		ret = finish_write(trans, ino, off + len);
	mfs_end_transaction(trans);
	if (!ret)
		ret = maybe_commit(fs);
unlock:
	pthread_mutex_unlock(&fs->lock);
	return ret ? ret : (ssize_t)len;
}

/* Zero [from, to) inside one sector by rewriting that sector. */
static int zero_partial_sector(struct mfs_trans_handle *trans, u64 ino, u64 size, u64 from, u64 to)
{
	u8 zeros[SECTOR];

	if (from >= to || from >= size)
		return 0;
	memset(zeros, 0, sizeof(zeros));
	return write_locked(trans, ino, size, from, min_t(u64, to, size) - from, zeros);
}

int mfs_truncate(struct mfs_trans_handle *trans, u64 ino, u64 newsize)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_inode_item ii;
	u64 size, ilen = 0;
	int ret;

	ret = mfs_read_inode(fs, ino, &ii);
	if (ret)
		return ret;
	size = le64_to_cpu(ii.size);
	ret = inline_extent(fs, ino, &ilen);
	if (ret < 0)
		return ret;
	if (ret && newsize < ilen) {
		/* a small file stays inline: keep its first newsize bytes */
		u8 buf[SECTOR];
		ssize_t n = mfs_read_inline(fs, ino, buf, newsize);

		ret = n < 0 ? n : rewrite_inline(trans, ino, buf, newsize);
		if (!ret)
			ret = mfs_read_inode(fs, ino, &ii);
		if (ret)
			return ret;
	} else if (!ret && newsize < size) {
		ret = mfs_drop_file_extents(trans, ino, round_up(newsize, SECTOR), (u64)-1);
		if (!ret && newsize % SECTOR)
			ret = zero_partial_sector(trans, ino, size, newsize,
						  round_up(newsize, SECTOR));
		if (ret)
			return ret;
		ret = mfs_read_inode(fs, ino, &ii);
		if (ret)
			return ret;
	}
	ii.size = cpu_to_le64(newsize);
	return mfs_write_inode(trans, ino, &ii);
}

/* ---------------- fallocate, lseek ---------------- */

static int prealloc_range(struct mfs_trans_handle *trans, u64 ino, u64 start, u64 end)
{
	struct mfs_fs_info *fs = trans->fs_info;
	u64 pos = start;
	int ret;

	while (pos < end) {
		struct file_extent fe;
		u64 hole_end = end;

		ret = next_file_extent(fs, ino, pos, &fe);
		if (ret < 0)
			return ret;
		if (ret == 0 && fe.start <= pos) {
			pos = fe.start + fe.len;
			continue;
		}
		if (ret == 0 && fe.start < end)
			hole_end = fe.start;
		while (pos < hole_end) {
			u64 want = min_t(u64, hole_end - pos, max_extent_size(fs));
			u64 bytenr, got;

			ret = mfs_reserve_data_extent(trans, want, SECTOR, &bytenr, &got);
			if (ret)
				return ret;
			ret = insert_file_extent(trans, ino, pos, MFS_FILE_EXTENT_PREALLOC,
						 MFS_COMPRESS_NONE, bytenr, got, got);
			if (!ret)
				ret = mfs_add_data_ref(trans, bytenr, got, MFS_FS_TREE_OBJECTID, ino, pos);
			if (ret) {
				mfs_unreserve_extent(fs, bytenr, got);
				return ret;
			}
			ret = adjust_nbytes(trans, ino, got);
			if (ret)
				return ret;
			pos += got;
		}
	}
	return 0;
}

/*
 * Data for the partial sectors (and, unless punching, the whole range),
 * metadata for the extents dropped and the new ones: punching a hole
 * frees space and may use the global reserve.
 */
static int fallocate_reserve(struct mfs_fs_info *fs, u64 ino, int mode, u64 off, u64 len,
			     struct mfs_trans_handle **trans)
{
	bool punch = mode & FALLOC_FL_PUNCH_HOLE;
	u64 n, next, data = 2 * SECTOR;
	int ret;

	if (!punch)
		data += round_up(len, SECTOR);
	ret = mfs_data_space_check(fs, data);
	if (!ret)
		ret = mfs_count_file_extents(fs, ino, round_down(off, SECTOR),
					     round_up(off + len, SECTOR), 1U << 20, &n, &next);
	if (ret)
		return ret;
	n = 2 * n + (punch ? 0 : 3 * (len / max_extent_size(fs) + 1)) + UNINLINE_ITEMS + 8;
	return mfs_start_transaction_reserve(fs, min_t(u64, n, 1U << 30),
					     punch ? MFS_RESERVE_FREEING : MFS_RESERVE_NORMAL,
					     trans);
}

int mfs_fallocate(struct mfs_fs_info *fs, u64 ino, int mode, u64 off, u64 len)
{
	struct mfs_trans_handle *trans;
	struct mfs_inode_item ii;
	u64 end = off + len, size;
	int ret;

	if (!len || end < off)
		return -EINVAL;
	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE))
		return -EOPNOTSUPP;
	if ((mode & FALLOC_FL_PUNCH_HOLE) && !(mode & FALLOC_FL_KEEP_SIZE))
		return -EINVAL;
	if ((mode & FALLOC_FL_PUNCH_HOLE) && (mode & FALLOC_FL_ZERO_RANGE))
		return -EINVAL;
	pthread_mutex_lock(&fs->lock);
	ret = fallocate_reserve(fs, ino, mode, off, len, &trans);
	if (ret)
		goto unlock;
	ret = mfs_read_inode(fs, ino, &ii);
	if (!ret && !S_ISREG(le32_to_cpu(ii.mode)))
		ret = -ENODEV;
	/* extents other than an inline one: make that a regular one first */
	if (!ret)
		ret = uninline(trans, ino);
	if (!ret)
		ret = mfs_read_inode(fs, ino, &ii);
	if (ret)
		goto end;
	size = le64_to_cpu(ii.size);
	if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) {
		u64 a = round_up(off, SECTOR), b = round_down(end, SECTOR);

		if (a > b) {
			ret = zero_partial_sector(trans, ino, size, off, end);
		} else {
			ret = zero_partial_sector(trans, ino, size, off, a);
			if (!ret)
				ret = zero_partial_sector(trans, ino, size, b, end);
			if (!ret && a < b)
				ret = mfs_drop_file_extents(trans, ino, a, b);
			/* zero range: the space stays allocated, as unwritten extents */
			if (!ret && a < b && (mode & FALLOC_FL_ZERO_RANGE))
				ret = prealloc_range(trans, ino, a, b);
		}
		if (!ret)
			ret = mfs_read_inode(fs, ino, &ii);
		if (!ret) {
			if (!(mode & FALLOC_FL_KEEP_SIZE) && end > size)
				ii.size = cpu_to_le64(end);
			mfs_now(&ii.mtime);
			ii.ctime = ii.mtime;
			ret = mfs_write_inode(trans, ino, &ii);
		}
	} else {
		ret = prealloc_range(trans, ino, round_down(off, SECTOR), round_up(end, SECTOR));
		if (!ret && !(mode & FALLOC_FL_KEEP_SIZE) && end > size) {
			ret = mfs_read_inode(fs, ino, &ii);
			if (!ret) {
				ii.size = cpu_to_le64(end);
				mfs_now(&ii.ctime);
				ret = mfs_write_inode(trans, ino, &ii);
			}
		}
	}
end:
	mfs_end_transaction(trans);
unlock:
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

int mfs_lseek(struct mfs_fs_info *fs, u64 ino, u64 off, int whence, u64 *result)
{
	struct mfs_inode_item ii;
	struct file_extent fe;
	u64 size, pos = off;
	int ret;

	pthread_mutex_lock(&fs->lock);
	ret = mfs_read_inode(fs, ino, &ii);
	if (ret)
		goto out;
	size = le64_to_cpu(ii.size);
	if (off >= size) {
		ret = -ENXIO;
		goto out;
	}
	for (;;) {
		ret = next_file_extent(fs, ino, pos, &fe);
		if (ret < 0)
			goto out;
		if (ret > 0 || fe.start >= size)
			break;
		if (fe.type == MFS_FILE_EXTENT_PREALLOC) {
			/* unwritten space reads as zeros: a hole for both lookups */
			if (whence == SEEK_HOLE)
				break;
			pos = max_t(u64, pos, fe.start + fe.len);
			continue;
		}
		if (whence == SEEK_DATA) {
			*result = max_t(u64, off, fe.start);
			ret = 0;
			goto out;
		}
		/* SEEK_HOLE: a data extent covering pos pushes the hole on */
		if (fe.start > pos)
			break;
		pos = fe.start + fe.len;
	}
	if (whence == SEEK_DATA) {
		ret = -ENXIO;
	} else {
		*result = min_t(u64, pos, size);
		ret = 0;
	}
out:
	pthread_mutex_unlock(&fs->lock);
	return ret;
}
