/*
 * The checkpoint of a chunk's copy (DESIGN §5.4, format: BALANCE_CHUNK):
 * every RESTRIPE_CHECKPOINT bytes the relocation puts what it copied on
 * stable storage and records how far it got and where the chunk goes, so
 * a pause, unmount or crash costs at most that much copying, and the
 * progress figure (bytes_done, committed with it) never goes back.
 *
 * While the record exists the chunk takes no new extents (it is read-only
 * from the open on) and the new layout's stripes are taken on their
 * devices, so nothing can be written into either. A record that cannot be
 * followed (a device of the new layout gone, one of its stripes taken) is
 * stale: it is deleted in a commit of its own before the chunk is copied
 * again from its start - never followed, and never left behind to be
 * followed later.
 */
#include <stdlib.h>
#include <string.h>
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/tree/transaction.h"
#include "kernel-shared/tree/alloc.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/ops/restripe-internal.h"

static struct mfs_key record_key(u64 logical)
{
	return (struct mfs_key){ MFS_BALANCE_OBJECTID, MFS_BALANCE_CHUNK_KEY, logical };
}

static u32 record_size(const struct rs_reloc *rc)
{
	u32 size = sizeof(struct mfs_balance_chunk_item);
	int m;

	for (m = 0; m < rc->nmaps; m++)
		size += sizeof(mfs_le64) + mfs_chunk_item_size(rc->maps[m]->num_stripes);
	return size;
}

bool rs_reloc_fits(struct mfs_fs_info *fs, const struct rs_reloc *rc)
{
	return rc->nmaps <= MFS_BALANCE_CHUNK_MAX_PIECES && record_size(rc) <= leaf_data_size(fs) / 4;
}

int rs_reloc_write(struct mfs_trans_handle *trans, const struct rs_reloc *rc)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_key key = record_key(rc->logical);
	u32 size = record_size(rc), off;
	struct mfs_balance_chunk_item *h;
	u8 *buf = calloc(1, size);
	int m, ret;

	if (!buf)
		return -ENOMEM;
	h = (struct mfs_balance_chunk_item *)buf;
	h->copied = cpu_to_le64(rc->copied);
	h->bytes_done = cpu_to_le64(rc->counted);
	h->generation = cpu_to_le64(trans->transid);
	h->nr_pieces = cpu_to_le32(rc->nmaps);
	off = sizeof(*h);
	for (m = 0; m < rc->nmaps; m++) {
		mfs_le64 logical = cpu_to_le64(rc->maps[m]->logical);

		memcpy(buf + off, &logical, sizeof(logical));
		off += sizeof(logical);
		mfs_chunk_map_to_item(fs, rc->maps[m], buf + off);
		off += mfs_chunk_item_size(rc->maps[m]->num_stripes);
	}
	ret = mfs_write_item(trans, fs->tree_root, &key, buf, size);
	free(buf);
	return ret;
}

int rs_reloc_delete(struct mfs_trans_handle *trans, u64 logical)
{
	struct mfs_key key = record_key(logical);
	int ret = rs_delete_if_there(trans, trans->fs_info->tree_root, &key);

	return ret > 0 ? 0 : ret;
}

/*
 * The pieces of a record's new layout, checked as chunk items are and
 * against the chunk they replace: they cover it exactly, in order, and
 * hold chunks of its type.
 */
static int parse_pieces(struct mfs_fs_info *fs, const struct mfs_chunk_map *old,
			const u8 *buf, u32 size, struct rs_reloc *rc)
{
	const struct mfs_balance_chunk_item *h = (const void *)buf;
	u32 off = sizeof(*h), n = le32_to_cpu(h->nr_pieces);
	u64 next = old->logical;
	int ret = 0;

	if (!n || n > MFS_BALANCE_CHUNK_MAX_PIECES)
		return -EUCLEAN;
	rc->maps = calloc(n, sizeof(*rc->maps));
	if (!rc->maps)
		return -ENOMEM;
	while (!ret && (u32)rc->nmaps < n) {
		const struct mfs_chunk *c = (const void *)(buf + off + sizeof(mfs_le64));
		mfs_le64 logical;
		u32 csize;

		if (off + sizeof(logical) + sizeof(*c) > size)
			return -EUCLEAN;
		memcpy(&logical, buf + off, sizeof(logical));
		csize = mfs_chunk_item_size(le16_to_cpu(c->num_stripes));
		if (le64_to_cpu(logical) != next || off + sizeof(logical) + csize > size)
			return -EUCLEAN;
		ret = mfs_chunk_map_from_item(fs, next, c, csize, &rc->maps[rc->nmaps]);
		if (ret)
			return ret;
		next += rc->maps[rc->nmaps]->length;
		if ((rc->maps[rc->nmaps++]->type ^ old->type) & MFS_BLOCK_GROUP_TYPE_MASK)
			return -EUCLEAN;
		off += sizeof(logical) + csize;
	}
	if (off != size || next != old->logical + old->length)
		return -EUCLEAN;
	return 0;
}

/* Give back the stripes of map before stripe `end` that take_stripes took. */
static void give_back(struct rs_reloc *rc, const struct mfs_chunk_map *old, int mend, int end)
{
	int m, i;

	for (m = 0; m <= mend && m < rc->nmaps; m++) {
		struct mfs_chunk_map *map = rc->maps[m];

		for (i = 0; i < (m == mend ? end : map->num_stripes); i++)
			if (!mfs_stripe_kept(map, i, old) && map->stripes[i].dev)
				mfs_device_remove_extent(map->stripes[i].dev, map->stripes[i].physical);
	}
}

/*
 * Take the new layout's stripes on their devices (those it shares with
 * the old layout are taken already). false, with nothing taken, when it
 * cannot be followed: a device of it is not here, or a stripe is taken.
 */
static bool take_stripes(struct rs_reloc *rc, const struct mfs_chunk_map *old)
{
	int m, i;

	for (m = 0; m < rc->nmaps; m++) {
		struct mfs_chunk_map *map = rc->maps[m];

		for (i = 0; i < map->num_stripes; i++) {
			struct mfs_map_stripe *s = &map->stripes[i];

			if (mfs_stripe_kept(map, i, old))
				continue;
			if (!s->dev || !s->dev->io ||
			    mfs_device_add_extent(s->dev, s->physical, mfs_map_stripe_size(map),
						  rc->logical)) {
				give_back(rc, old, m, i);
				return false;
			}
		}
	}
	return true;
}

/* The stripes it took go back (a stale record took none), and the maps go. */
static void release_stripes(struct rs_reloc *rc, const struct mfs_chunk_map *old)
{
	int m;

	if (!rc->stale)
		give_back(rc, old, rc->nmaps, 0);
	for (m = 0; m < rc->nmaps; m++)
		free(rc->maps[m]);
	free(rc->maps);
	rc->maps = NULL;
	rc->nmaps = 0;
}

/* Why a stale record is not followed: said once, at the open. */
static void say_stale(struct mfs_fs_info *fs, const struct rs_reloc *rc)
{
	mfs_log(fs, "the checkpoint of the copy of chunk %llu cannot be followed (a device of its new layout is missing, or its space is taken): the chunk is copied again from its start",
		(unsigned long long)rc->logical);
}

/*
 * The record's key and a copy of its data (*buf, *size); 1 when there is
 * none. There is at most one: a second is corrupt.
 */
static int read_record(struct mfs_fs_info *fs, struct mfs_key *found, u8 **buf, u32 *size)
{
	struct mfs_key key = record_key(0), next;
	struct mfs_path path;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_forward(fs->tree_root, &key, &path);
	if (ret == 0) {
		leaf_item_key(path.nodes[0], path.slots[0], found);
		if (found->objectid != key.objectid || found->type != key.type)
			ret = 1;
	}
	if (ret == 0) {
		*size = leaf_item_size(path.nodes[0], path.slots[0]);
		*buf = malloc(*size);
		if (*buf)
			memcpy(*buf, leaf_item_data(path.nodes[0], path.slots[0]), *size);
		else
			ret = -ENOMEM;
	}
	if (ret == 0 && mfs_next_item(fs->tree_root, &path) == 0) {
		leaf_item_key(path.nodes[0], path.slots[0], &next);
		if (next.objectid == key.objectid && next.type == key.type)
			ret = -EUCLEAN;
	}
	mfs_release_path(&path);
	if (ret < 0) {
		free(*buf);
		*buf = NULL;
	}
	return ret;
}

/* The record's fields, checked against the chunk it is about. */
static int parse_record(struct mfs_fs_info *fs, u64 logical, const u8 *buf, u32 size,
			struct rs_reloc *rc)
{
	const struct mfs_balance_chunk_item *h = (const void *)buf;
	struct mfs_chunk_map *old = mfs_find_chunk(fs, logical);
	struct mfs_block_group *bg = mfs_lookup_block_group(fs, logical);

	rc->stale = true;	/* nothing taken on the devices yet */
	if (size < sizeof(*h) || !old || old->logical != logical || !bg || bg->start != logical)
		return -EUCLEAN;
	rc->logical = logical;
	rc->copied = le64_to_cpu(h->copied);
	rc->counted = le64_to_cpu(h->bytes_done);
	if (rc->copied < old->logical || rc->copied > old->logical + old->length)
		return -EUCLEAN;
	return parse_pieces(fs, old, buf, size, rc);
}

int rs_reloc_load(struct mfs_fs_info *fs)
{
	struct mfs_restripe_status *st = fs->restripe;
	struct mfs_key found;
	struct rs_reloc *rc;
	u8 *buf = NULL;
	u32 size = 0;
	int ret = read_record(fs, &found, &buf, &size);

	if (ret)
		return ret > 0 ? 0 : ret;
	rc = calloc(1, sizeof(*rc));
	ret = rc ? 0 : -ENOMEM;
	/* a record belongs to the operation under way */
	if (!ret && (!st || st->state == MFS_RESTRIPE_NONE))
		ret = -EUCLEAN;
	if (!ret)
		ret = parse_record(fs, found.offset, buf, size, rc);
	free(buf);
	if (ret) {
		if (rc)
			release_stripes(rc, NULL);
		free(rc);
		return ret;
	}
	/* from now on nothing is placed in the chunk, nor in its new layout */
	mfs_lookup_block_group(fs, rc->logical)->ro = true;
	rc->stale = !take_stripes(rc, mfs_find_chunk(fs, rc->logical));
	if (rc->stale)
		say_stale(fs, rc);
	st->reloc = rc;
	return 0;
}

void rs_reloc_estimate_begin(struct mfs_fs_info *fs)
{
	struct rs_reloc *rc = fs->restripe ? fs->restripe->reloc : NULL;

	if (rc && !rc->stale)
		give_back(rc, mfs_find_chunk(fs, rc->logical), rc->nmaps, 0);
}

void rs_reloc_estimate_end(struct mfs_fs_info *fs)
{
	struct rs_reloc *rc = fs->restripe ? fs->restripe->reloc : NULL;

	/* (nothing allocated in between: the lock was held) */
	if (rc && !rc->stale && !take_stripes(rc, mfs_find_chunk(fs, rc->logical))) {
		rc->stale = true;
		say_stale(fs, rc);
	}
}

void rs_reloc_forget(struct mfs_fs_info *fs)
{
	struct mfs_restripe_status *st = fs->restripe;
	struct rs_reloc *rc = st ? st->reloc : NULL;
	struct mfs_block_group *bg;

	if (!rc)
		return;
	release_stripes(rc, mfs_find_chunk(fs, rc->logical));
	bg = mfs_lookup_block_group(fs, rc->logical);
	if (bg && bg->start == rc->logical)
		bg->ro = false;
	free(rc);
	st->reloc = NULL;
}

int rs_reloc_drop(struct mfs_fs_info *fs)
{
	struct mfs_restripe_status *st = fs->restripe;
	struct mfs_trans_handle *trans;
	int ret;

	if (!st || !st->reloc)
		return 0;
	ret = mfs_start_transaction(fs, &trans);
	if (ret)
		return ret;
	/*
	 * What it counted stays counted (the figure never goes back): the
	 * chunk copied again adds to bytes_done and to the total alike.
	 */
	ret = rs_reloc_delete(trans, st->reloc->logical);
	if (!ret)
		ret = rs_write_item(trans, st, false);
	if (ret)
		return mfs_end_transaction_abort(trans, ret);
	ret = mfs_commit_transaction(trans);
	if (!ret)
		rs_reloc_forget(fs);
	return ret;
}

void rs_reloc_free(struct mfs_fs_info *fs)
{
	struct rs_reloc *rc = fs->restripe ? fs->restripe->reloc : NULL;
	int m;

	if (!rc)
		return;
	for (m = 0; m < rc->nmaps; m++)
		free(rc->maps[m]);
	free(rc->maps);
	free(rc);
	fs->restripe->reloc = NULL;
}

u64 rs_reloc_counted(const struct mfs_restripe_status *st, u64 logical)
{
	return st && st->reloc && st->reloc->logical == logical ? st->reloc->counted : 0;
}

bool mfs_restripe_taken_stripe(struct mfs_fs_info *fs, u64 devid, u64 physical)
{
	struct rs_reloc *rc = fs->restripe ? fs->restripe->reloc : NULL;
	const struct mfs_chunk_map *old;
	int m, i;

	if (!rc || rc->stale)
		return false;
	old = mfs_find_chunk(fs, rc->logical);
	for (m = 0; m < rc->nmaps; m++)
		for (i = 0; i < rc->maps[m]->num_stripes; i++)
			if (rc->maps[m]->stripes[i].devid == devid &&
			    rc->maps[m]->stripes[i].physical == physical &&
			    !mfs_stripe_kept(rc->maps[m], i, old))
				return true;
	return false;
}
