/*
 * Block groups and the extent allocator. Free space lives in memory (built
 * from the extent tree at open); the extent tree is changed only at commit,
 * from the delayed references collected during the transaction.
 */
#include <stdlib.h>
#include <string.h>
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/tree/alloc.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/tree/transaction.h"
#include "kernel-shared/tree/alloc-internal.h"

/* ---------------- free space ranges ---------------- */

static int free_grow(struct mfs_block_group *bg)
{
	return MFS_ARRAY_RESERVE(bg->free, bg->nr_free, bg->max_free, 8);
}

/* Add [start, start+len) as free, merging neighbours; overlap is corruption. */
int mfs_free_space_add(struct mfs_block_group *bg, u64 start, u64 len)
{
	int lo = 0, hi = bg->nr_free, i, ret;

	if (!len)
		return 0;
	if (start < bg->start || start + len > bg->start + bg->length)
		return -EUCLEAN;
	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (bg->free[mid].start < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	i = lo;	/* first range starting at or after start */
	if (i > 0 && bg->free[i - 1].start + bg->free[i - 1].len > start)
		return -EUCLEAN;
	if (i < bg->nr_free && start + len > bg->free[i].start)
		return -EUCLEAN;
	if (i > 0 && bg->free[i - 1].start + bg->free[i - 1].len == start) {
		bg->free[i - 1].len += len;
		if (i < bg->nr_free && start + len == bg->free[i].start) {
			bg->free[i - 1].len += bg->free[i].len;
			memmove(&bg->free[i], &bg->free[i + 1],
				(bg->nr_free - i - 1) * sizeof(*bg->free));
			bg->nr_free--;
		}
		return 0;
	}
	if (i < bg->nr_free && start + len == bg->free[i].start) {
		bg->free[i].start = start;
		bg->free[i].len += len;
		return 0;
	}
	ret = free_grow(bg);
	if (ret)
		return ret;
	memmove(&bg->free[i + 1], &bg->free[i], (bg->nr_free - i) * sizeof(*bg->free));
	bg->free[i].start = start;
	bg->free[i].len = len;
	bg->nr_free++;
	return 0;
}

/* Remove [start, start+len) from free space; it must be entirely free. */
int mfs_free_space_remove(struct mfs_block_group *bg, u64 start, u64 len)
{
	int lo = 0, hi = bg->nr_free - 1, i = -1, ret;
	struct mfs_free_range *r;
	u64 rend;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;

		if (bg->free[mid].start > start) {
			hi = mid - 1;
		} else if (bg->free[mid].start + bg->free[mid].len <= start) {
			lo = mid + 1;
		} else {
			i = mid;
			break;
		}
	}
	if (i < 0)
		return -EUCLEAN;
	r = &bg->free[i];
	rend = r->start + r->len;
	if (start + len > rend)
		return -EUCLEAN;
	if (start == r->start && len == r->len) {
		memmove(r, r + 1, (bg->nr_free - i - 1) * sizeof(*r));
		bg->nr_free--;
	} else if (start == r->start) {
		r->start += len;
		r->len -= len;
	} else if (start + len == rend) {
		r->len -= len;
	} else {
		ret = free_grow(bg);
		if (ret)
			return ret;
		r = &bg->free[i];
		memmove(r + 1, r, (bg->nr_free - i) * sizeof(*r));
		bg->nr_free++;
		r->len = start - r->start;
		r[1].start = start + len;
		r[1].len = rend - (start + len);
	}
	return 0;
}

/* Remove whatever part of [start, start+len) is free. */
static void free_space_clear(struct mfs_block_group *bg, u64 start, u64 len)
{
	int i;

	for (i = 0; i < bg->nr_free; i++) {
		struct mfs_free_range *r = &bg->free[i];
		u64 s = max_t(u64, r->start, start);
		u64 e = min_t(u64, r->start + r->len, start + len);

		if (r->start >= start + len)
			break;
		if (s < e) {
			mfs_free_space_remove(bg, s, e - s);
			i--;
		}
	}
}

u64 mfs_free_space_total(const struct mfs_block_group *bg)
{
	u64 total = 0;
	int i;

	for (i = 0; i < bg->nr_free; i++)
		total += bg->free[i].len;
	return total;
}

/* ---------------- block groups ---------------- */

static bool bg_is_raid56(const struct mfs_block_group *bg)
{
	return mfs_profile(bg->flags)->nparity != 0;
}

int mfs_add_block_group(struct mfs_fs_info *fs, struct mfs_chunk_map *map,
			u64 used, bool new_chunk, struct mfs_block_group **out)
{
	struct mfs_block_group *bg;
	int i, ret;

	bg = calloc(1, sizeof(*bg));
	if (!bg)
		return -ENOMEM;
	bg->start = map->logical;
	bg->length = map->length;
	bg->flags = map->type;
	bg->used = used;
	bg->map = map;
	bg->new_chunk = new_chunk;
	bg->dirty = new_chunk;
	if (bg_is_raid56(bg)) {
		const struct mfs_raid_attr *a = mfs_profile(bg->flags);

		bg->row_len = (u64)(map->num_stripes - a->nparity) * map->stripe_len;
		bg->nr_rows = div_round_up(map->length, bg->row_len);
		bg->row_used = calloc(bg->nr_rows, sizeof(*bg->row_used));
		bg->row_sealed = calloc(bg->nr_rows, 1);
		if (!bg->row_used || !bg->row_sealed) {
			ret = -ENOMEM;
			goto fail;
		}
	}
	if (new_chunk) {
		ret = mfs_free_space_add(bg, bg->start, bg->length);
		if (ret)
			goto fail;
	}
	if (MFS_ARRAY_RESERVE(fs->bgs, fs->nr_bgs, fs->max_bgs, 16)) {
		ret = -ENOMEM;
		goto fail;
	}
	for (i = fs->nr_bgs; i > 0 && fs->bgs[i - 1]->start > bg->start; i--)
		fs->bgs[i] = fs->bgs[i - 1];
	fs->bgs[i] = bg;
	fs->nr_bgs++;
	if (out)
		*out = bg;
	return 0;
fail:
	free(bg->free);
	free(bg->row_used);
	free(bg->row_sealed);
	free(bg);
	return ret;
}

struct mfs_block_group *mfs_lookup_block_group(struct mfs_fs_info *fs, u64 bytenr)
{
	int lo = 0, hi = fs->nr_bgs - 1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		struct mfs_block_group *bg = fs->bgs[mid];

		if (bytenr < bg->start)
			hi = mid - 1;
		else if (bytenr >= bg->start + bg->length)
			lo = mid + 1;
		else
			return bg;
	}
	return NULL;
}

void mfs_free_block_groups(struct mfs_fs_info *fs)
{
	int i;

	for (i = 0; i < fs->nr_bgs; i++) {
		free(fs->bgs[i]->free);
		free(fs->bgs[i]->row_used);
		free(fs->bgs[i]->row_sealed);
		free(fs->bgs[i]);
	}
	free(fs->bgs);
	fs->bgs = NULL;
	fs->nr_bgs = fs->max_bgs = 0;
}

/* Account len bytes at start against the raid5/6 rows they touch. */
static void rows_account(struct mfs_block_group *bg, u64 start, u64 len, bool add)
{
	u64 off = start - bg->start;

	while (len) {
		u64 row = off / bg->row_len;
		u64 n = min_t(u64, len, bg->row_len - off % bg->row_len);

		if (row >= bg->nr_rows)
			return;
		if (add)
			bg->row_used[row] += n;
		else
			bg->row_used[row] -= min_t(u64, n, bg->row_used[row]);
		off += n;
		len -= n;
	}
}

/* Return space to a block group; a raid5/6 row comes back only when empty. */
static int give_back_space(struct mfs_block_group *bg, u64 start, u64 len)
{
	u64 off, first, last, row;

	if (!bg_is_raid56(bg))
		return mfs_free_space_add(bg, start, len);
	rows_account(bg, start, len, false);
	off = start - bg->start;
	first = off / bg->row_len;
	last = (off + len - 1) / bg->row_len;
	for (row = first; row <= last; row++) {
		u64 rs = bg->start + row * bg->row_len;
		u64 rl = min_t(u64, bg->row_len, bg->start + bg->length - rs);

		if (bg->row_sealed[row]) {
			if (bg->row_used[row] == 0) {
				bg->row_sealed[row] = 0;
				free_space_clear(bg, rs, rl);
				mfs_free_space_add(bg, rs, rl);
			}
		} else {
			u64 s = max_t(u64, rs, start);
			u64 e = min_t(u64, rs + rl, start + len);
			int ret = mfs_free_space_add(bg, s, e - s);

			if (ret)
				return ret;
		}
	}
	return 0;
}

/* A row with live extents that reached disk takes no more allocations. */
static void seal_row(struct mfs_block_group *bg, u64 row)
{
	if (bg->row_used[row] && !bg->row_sealed[row]) {
		bg->row_sealed[row] = 1;
		free_space_clear(bg, bg->start + row * bg->row_len, bg->row_len);
	}
}

void mfs_seal_open_rows(struct mfs_fs_info *fs)
{
	int i;
	u64 row;

	for (i = 0; i < fs->nr_bgs; i++) {
		struct mfs_block_group *bg = fs->bgs[i];

		if (!bg_is_raid56(bg))
			continue;
		for (row = 0; row < bg->nr_rows; row++)
			seal_row(bg, row);
	}
}

void mfs_seal_row(struct mfs_fs_info *fs, u64 logical)
{
	struct mfs_block_group *bg = mfs_lookup_block_group(fs, logical);
	u64 row;

	if (!bg || !bg_is_raid56(bg))
		return;
	row = (logical - bg->start) / bg->row_len;
	if (row < bg->nr_rows)
		seal_row(bg, row);
}

/* First free range in bg that fits len at the given alignment. */
static int bg_find_free(struct mfs_block_group *bg, u64 len, u64 min_len, u64 align,
			u64 *start, u64 *got)
{
	int i;
	u64 best_start = 0, best_len = 0;

	for (i = 0; i < bg->nr_free; i++) {
		struct mfs_free_range *r = &bg->free[i];
		u64 s = round_up(r->start - bg->start, align) + bg->start;
		u64 avail;

		if (s >= r->start + r->len)
			continue;
		avail = r->start + r->len - s;
		/* tree blocks must not straddle a stripe boundary */
		if (avail >= len) {
			*start = s;
			*got = len;
			return 0;
		}
		if (avail >= min_len && avail > best_len) {
			best_start = s;
			best_len = round_down(avail, align);
		}
	}
	if (best_len >= min_len && best_len) {
		*start = best_start;
		*got = best_len;
		return 0;
	}
	return -ENOSPC;
}

static int take_space(struct mfs_block_group *bg, u64 start, u64 len)
{
	int ret = mfs_free_space_remove(bg, start, len);

	if (ret)
		return ret;
	if (bg_is_raid56(bg))
		rows_account(bg, start, len, true);
	bg->reserved += len;
	return 0;
}

/*
 * An operation in progress (running or paused) that moves chunks will move
 * one it has not reached yet: until then that chunk may take new extents of
 * a profile it is as safe as, or of any profile if the operation will give
 * it a new layout (fs->alloc_policy, published by the restriper).
 */
static bool policy_ahead(struct mfs_fs_info *fs, const struct mfs_block_group *bg)
{
	const struct mfs_alloc_policy *pol = fs->alloc_policy;

	return pol && pol->ahead(fs, bg);
}

static bool policy_will_move(struct mfs_fs_info *fs, const struct mfs_block_group *bg)
{
	const struct mfs_alloc_policy *pol = fs->alloc_policy;

	return pol && pol->will_move(fs, bg);
}

static u64 policy_new_chunk_stripe(struct mfs_fs_info *fs, u64 flags)
{
	const struct mfs_alloc_policy *pol = fs->alloc_policy;

	return pol ? pol->new_chunk_stripe(fs, flags) : 0;
}

/*
 * Find space of a type: chunks of the target profile (or, while degraded,
 * chunks reduced to stand in for it) first; mid-convert,
 * then chunks still to be converted whose profile is at least as safe
 * (as btrfs does: no whole new chunk for a few tree blocks while the old
 * ones have room, which a convert on a small filesystem cannot spare);
 * then a new chunk; then any chunk of the type with room (e.g. mid-convert
 * to a more redundant profile). Never a chunk with a missing stripe.
 */
static int find_space(struct mfs_fs_info *fs, u64 type, u64 len, u64 min_len,
		      u64 align, u64 *start, u64 *got)
{
	u64 profile = mfs_target_profile(fs, type);
	struct mfs_block_group *bg;
	int pass, i, ret;

	for (pass = 0; pass < 4; pass++) {
		if (pass == 2) {
			if (type & MFS_BLOCK_GROUP_DATA)
				mfs_keep_metadata_headroom(fs);
			ret = mfs_alloc_new_chunk(fs, type, policy_new_chunk_stripe(fs, type), &bg);
			if (ret == 0 && bg_find_free(bg, len, min_len, align, start, got) == 0)
				return take_space(bg, *start, *got);
			if (ret && ret != -ENOSPC)
				return ret;
			continue;
		}
		for (i = 0; i < fs->nr_bgs; i++) {
			u64 p;

			bg = fs->bgs[i];
			p = bg->flags & MFS_BLOCK_GROUP_PROFILE_MASK;
			if (!bg_allocatable(bg) || (bg->flags & MFS_BLOCK_GROUP_TYPE_MASK) != type)
				continue;
			/*
			 * a reduced chunk stands in for the profile asked for
			 * while devices are missing; once the array is whole
			 * new extents go to chunks of that profile again
			 */
			if (pass == 0 && p != profile && !(bg->reduced && mfs_fs_degraded(fs)))
				continue;
			if (pass == 1 && (p == profile || !policy_ahead(fs, bg) ||
					  !(mfs_profile_covers(p, profile) ||
					    policy_will_move(fs, bg))))
				continue;
			if (bg_find_free(bg, len, min_len, align, start, got) == 0)
				return take_space(bg, *start, *got);
		}
	}
	return -ENOSPC;
}

/* ---------------- delayed refs ---------------- */

static u32 ref_slot(u64 bytenr, u32 size)
{
	return (u32)((bytenr >> 12) * 0x9E3779B97F4A7C15ULL >> 32) & (size - 1);
}

static int ref_hash_rebuild(struct mfs_transaction *t, u32 size)
{
	int *h = calloc(size, sizeof(*h));
	int i;

	if (!h)
		return -ENOMEM;
	for (i = 0; i < t->nr_refs; i++) {
		u32 s = ref_slot(t->refs[i].bytenr, size);

		while (h[s])
			s = (s + 1) & (size - 1);
		h[s] = i + 1;
	}
	free(t->ref_hash);
	t->ref_hash = h;
	t->ref_hash_size = size;
	return 0;
}

/* The entry for bytenr, created empty (delta 0, not new) if absent. */
static struct mfs_delayed_ref *get_ref(struct mfs_transaction *t, u64 bytenr, u64 len)
{
	struct mfs_delayed_ref *r;
	u32 s;

	if (t->ref_hash_size) {
		for (s = ref_slot(bytenr, t->ref_hash_size); t->ref_hash[s];
		     s = (s + 1) & (t->ref_hash_size - 1)) {
			r = &t->refs[t->ref_hash[s] - 1];
			if (r->bytenr == bytenr) {
				if (!r->num_bytes)
					r->num_bytes = len;	/* revive a dead entry */
				return r;
			}
		}
	}
	if (MFS_ARRAY_RESERVE(t->refs, t->nr_refs, t->max_refs, 256))
		return NULL;
	if ((u32)(t->nr_refs + 1) * 2 > t->ref_hash_size &&
	    ref_hash_rebuild(t, t->ref_hash_size ? t->ref_hash_size * 2 : 1024))
		return NULL;
	r = &t->refs[t->nr_refs];
	memset(r, 0, sizeof(*r));
	r->bytenr = bytenr;
	r->num_bytes = len;
	for (s = ref_slot(bytenr, t->ref_hash_size); t->ref_hash[s];
	     s = (s + 1) & (t->ref_hash_size - 1))
		;
	t->ref_hash[s] = ++t->nr_refs;
	return r;
}

static bool ref_has_work(const struct mfs_delayed_ref *r)
{
	return r->num_bytes && (r->is_new || r->delta);
}

/* Change the entry and keep refs_pending in step. */
static void ref_update(struct mfs_transaction *t, struct mfs_delayed_ref *r,
		       s64 delta, bool make_new)
{
	bool before = ref_has_work(r);

	if (make_new)
		r->is_new = true;
	r->delta += delta;
	t->refs_pending += (int)ref_has_work(r) - (int)before;
}

static u64 tree_type(u64 root_objectid)
{
	if (root_objectid == MFS_CHUNK_TREE_OBJECTID)
		return MFS_BLOCK_GROUP_SYSTEM;
	return MFS_BLOCK_GROUP_METADATA;
}

static int new_extent_ref(struct mfs_fs_info *fs, u64 bytenr, u64 len, u64 flags,
			  u64 root, u64 objectid, u64 offset)
{
	struct mfs_transaction *t = fs->running;
	struct mfs_delayed_ref *r = get_ref(t, bytenr, len);

	if (!r)
		return -ENOMEM;
	r->num_bytes = len;
	r->flags = flags;
	r->owner_root = root;
	r->owner_objectid = objectid;
	r->owner_offset = offset;
	ref_update(t, r, 1, true);
	return 0;
}

int mfs_alloc_tree_block(struct mfs_trans_handle *trans, u64 root_objectid,
			 int level, u64 *bytenr)
{
	struct mfs_fs_info *fs = trans->fs_info;
	u64 got;
	int ret;

	ret = find_space(fs, tree_type(root_objectid), fs->nodesize, fs->nodesize,
			 fs->nodesize, bytenr, &got);
	if (ret)
		return ret;
	ret = new_extent_ref(fs, *bytenr, fs->nodesize, MFS_EXTENT_FLAG_TREE_BLOCK,
			     root_objectid, level, 0);
	if (ret)
		mfs_unreserve_extent(fs, *bytenr, fs->nodesize);
	return ret;
}

int mfs_reserve_data_extent(struct mfs_trans_handle *trans, u64 len, u64 min_len,
			    u64 *bytenr, u64 *got)
{
	struct mfs_fs_info *fs = trans->fs_info;

	return find_space(fs, MFS_BLOCK_GROUP_DATA, len, min_len, fs->sectorsize,
			  bytenr, got);
}

int mfs_add_data_ref(struct mfs_trans_handle *trans, u64 bytenr, u64 len,
		     u64 root, u64 ino, u64 offset)
{
	trans->changed = true;
	return new_extent_ref(trans->fs_info, bytenr, len, MFS_EXTENT_FLAG_DATA,
			      root, ino, offset);
}

int mfs_inc_extent_ref(struct mfs_trans_handle *trans, u64 bytenr, u64 len)
{
	struct mfs_transaction *t = trans->fs_info->running;
	struct mfs_delayed_ref *r = get_ref(t, bytenr, len);

	trans->changed = true;
	if (!r)
		return -ENOMEM;
	ref_update(t, r, 1, false);
	return 0;
}

void mfs_unreserve_extent(struct mfs_fs_info *fs, u64 bytenr, u64 len)
{
	struct mfs_block_group *bg = mfs_lookup_block_group(fs, bytenr);

	if (!bg)
		return;
	bg->reserved -= min_t(u64, len, bg->reserved);
	give_back_space(bg, bytenr, len);
}

static int delete_csums(struct mfs_trans_handle *trans, u64 bytenr);

int mfs_free_extent(struct mfs_trans_handle *trans, u64 bytenr, u64 len)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_transaction *t = fs->running;
	struct mfs_delayed_ref *r = get_ref(t, bytenr, len);

	trans->changed = true;
	if (!r)
		return -ENOMEM;
	ref_update(t, r, -1, false);
	/* allocated in this transaction and dropped again: it never reached disk */
	if (r->is_new && r->delta == 0) {
		bool data = r->flags & MFS_EXTENT_FLAG_DATA;

		r->is_new = false;
		r->num_bytes = 0;
		t->refs_pending--;
		mfs_unreserve_extent(fs, bytenr, len);
		/*
		 * Its checksums went in with it; the space may be handed out
		 * again in this transaction, so they must go now too.
		 */
		if (data)
			return delete_csums(trans, bytenr);
	}
	return 0;
}

static int pin_extent(struct mfs_transaction *t, u64 bytenr, u64 len)
{
	if (MFS_ARRAY_RESERVE(t->pinned, t->nr_pinned, t->max_pinned, 64))
		return -ENOMEM;
	t->pinned[t->nr_pinned].start = bytenr;
	t->pinned[t->nr_pinned].len = len;
	t->nr_pinned++;
	return 0;
}

static int delete_csums(struct mfs_trans_handle *trans, u64 bytenr)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_key key = { MFS_EXTENT_CSUM_OBJECTID, MFS_EXTENT_CSUM_KEY, bytenr };
	struct mfs_path path;
	int ret;

	if (!fs->csum_root)
		return 0;
	mfs_init_path(&path);
	ret = mfs_search_slot(trans, fs->csum_root, &key, &path, -1, 1);
	if (ret == 0)
		ret = mfs_del_item(trans, fs->csum_root, &path);
	else if (ret > 0)
		ret = 0;	/* preallocated extents have no checksums */
	mfs_release_path(&path);
	return ret;
}

static int apply_ref(struct mfs_trans_handle *trans, const struct mfs_delayed_ref *ref)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_block_group *bg = mfs_lookup_block_group(fs, ref->bytenr);
	struct mfs_key key = { ref->bytenr, MFS_EXTENT_ITEM_KEY, ref->num_bytes };
	struct mfs_extent_item *ei;
	struct mfs_path path;
	bool is_data;
	s64 refs;
	int ret;

	if (!bg)
		return -EUCLEAN;
	if (ref->is_new) {
		struct mfs_extent_item item = {
			.refs = cpu_to_le64(ref->delta),
			.generation = cpu_to_le64(trans->transid),
			.flags = cpu_to_le64(ref->flags),
			.owner_root = cpu_to_le64(ref->owner_root),
			.owner_objectid = cpu_to_le64(ref->owner_objectid),
			.owner_offset = cpu_to_le64(ref->owner_offset),
		};

		if (ref->delta <= 0)
			return -EUCLEAN;
		ret = mfs_insert_item(trans, fs->extent_root, &key, &item, sizeof(item));
		if (ret)
			return ret == -EEXIST ? -EUCLEAN : ret;
		bg->used += ref->num_bytes;
		bg->reserved -= min_t(u64, ref->num_bytes, bg->reserved);
		bg->dirty = true;
		return 0;
	}
	mfs_init_path(&path);
	ret = mfs_search_slot(trans, fs->extent_root, &key, &path, -1, 1);
	if (ret > 0)
		ret = -EUCLEAN;	/* changing an extent nobody recorded */
	if (ret)
		goto out;
	ei = leaf_item_data(path.nodes[0], path.slots[0]);
	refs = (s64)le64_to_cpu(ei->refs) + ref->delta;
	if (refs < 0) {
		ret = -EUCLEAN;
		goto out;
	}
	if (refs > 0) {
		ei->refs = cpu_to_le64(refs);
		mfs_mark_buffer_dirty(trans, path.nodes[0]);
		goto out;
	}
	/* ei points into the leaf: read what we need before the item goes */
	is_data = le64_to_cpu(ei->flags) & MFS_EXTENT_FLAG_DATA;
	ret = mfs_del_item(trans, fs->extent_root, &path);
	if (ret)
		goto out;
	bg->used -= min_t(u64, ref->num_bytes, bg->used);
	bg->dirty = true;
	/* reusable only once the commit that forgets it is on disk */
	ret = pin_extent(fs->running, ref->bytenr, ref->num_bytes);
	if (!ret && is_data)
		ret = delete_csums(trans, ref->bytenr);
out:
	mfs_release_path(&path);
	return ret;
}

bool mfs_delayed_refs_pending(struct mfs_fs_info *fs)
{
	return fs->running && fs->running->refs_pending > 0;
}

int mfs_run_delayed_refs(struct mfs_trans_handle *trans)
{
	struct mfs_transaction *t = trans->fs_info->running;
	int i, ret;

	while (t->refs_pending > 0) {
		bool worked = false;

		for (i = 0; i < t->nr_refs; i++) {
			struct mfs_delayed_ref ref = t->refs[i];

			if (!ref_has_work(&ref))
				continue;
			worked = true;
			/* processed: later changes to it in this commit start from the item */
			t->refs[i].delta = 0;
			t->refs[i].is_new = false;
			t->refs_pending--;
			ret = apply_ref(trans, &ref);
			if (ret)
				return ret;
		}
		/* the count and the entries disagree: never spin on it */
		if (!worked) {
			t->refs_pending = 0;
			return -EUCLEAN;
		}
	}
	return 0;
}

int mfs_write_dirty_block_groups(struct mfs_trans_handle *trans, bool *did_work)
{
	struct mfs_fs_info *fs = trans->fs_info;
	int i, ret;

	for (i = 0; i < fs->nr_bgs; i++) {
		struct mfs_block_group *bg = fs->bgs[i];
		struct mfs_key key = { bg->start, MFS_BLOCK_GROUP_ITEM_KEY, bg->length };
		struct mfs_block_group_item item = {
			.used = cpu_to_le64(bg->used),
			.chunk_objectid = cpu_to_le64(MFS_FIRST_CHUNK_TREE_OBJECTID),
			.flags = cpu_to_le64(mfs_bg_item_flags(bg)),
		};
		struct mfs_path path;

		if (!bg->dirty || bg->new_chunk)
			continue;
		bg->dirty = false;
		*did_work = true;
		mfs_init_path(&path);
		ret = mfs_search_slot(trans, fs->extent_root, &key, &path, 0, 1);
		if (ret == 0) {
			memcpy(leaf_item_data(path.nodes[0], path.slots[0]), &item, sizeof(item));
			mfs_mark_buffer_dirty(trans, path.nodes[0]);
			mfs_release_path(&path);
			continue;
		}
		mfs_release_path(&path);
		if (ret < 0)
			return ret;
		ret = mfs_insert_item(trans, fs->extent_root, &key, &item, sizeof(item));
		if (ret)
			return ret;
	}
	return 0;
}

/* Insert the items of chunks created during this transaction. */
int mfs_finish_new_chunks(struct mfs_trans_handle *trans, bool *did_work)
{
	struct mfs_fs_info *fs = trans->fs_info;
	int i, s, ret;

	for (i = 0; i < fs->nr_bgs; i++) {
		struct mfs_block_group *bg = fs->bgs[i];
		struct mfs_chunk_map *map = bg->map;
		struct mfs_key key = { MFS_FIRST_CHUNK_TREE_OBJECTID, MFS_CHUNK_ITEM_KEY, map->logical };
		u32 size = mfs_chunk_item_size(map->num_stripes);
		u8 *buf;

		if (!bg->new_chunk)
			continue;
		*did_work = true;
		bg->new_chunk = false;
		bg->dirty = true;
		buf = malloc(size);
		if (!buf)
			return -ENOMEM;
		mfs_chunk_map_to_item(fs, map, buf);
		ret = mfs_insert_item(trans, fs->chunk_root, &key, buf, size);
		free(buf);
		if (ret)
			return ret;
		for (s = 0; s < map->num_stripes; s++) {
			struct mfs_map_stripe *st = &map->stripes[s];
			struct mfs_key dk = { st->devid, MFS_DEV_EXTENT_KEY, st->physical };
			struct mfs_dev_extent de = {
				.chunk_offset = cpu_to_le64(map->logical),
				.length = cpu_to_le64(map->length /
					mfs_nr_data_stripes(map->type, map->num_stripes)),
			};

			ret = mfs_insert_item(trans, fs->dev_root, &dk, &de, sizeof(de));
			if (ret)
				return ret;
			if (st->dev)
				st->dev->dirty = true;
		}
	}
	return 0;
}

void mfs_unpin_extents(struct mfs_fs_info *fs, struct mfs_transaction *t)
{
	int i;

	for (i = 0; i < t->nr_pinned; i++) {
		struct mfs_block_group *bg = mfs_lookup_block_group(fs, t->pinned[i].start);

		if (bg)
			give_back_space(bg, t->pinned[i].start, t->pinned[i].len);
	}
	t->nr_pinned = 0;
}

/* ---------------- loading ---------------- */

/*
 * Walk the extent tree once: block group items create block groups for
 * their chunks; extent items between them are subtracted from free space.
 */
int mfs_load_block_groups(struct mfs_fs_info *fs)
{
	struct mfs_key key = { 0, 0, 0 };
	struct mfs_path path;
	struct mfs_block_group *bg;
	int ret, i;

	mfs_init_path(&path);
	ret = mfs_search_forward(fs->extent_root, &key, &path);
	while (ret == 0) {
		struct extent_buffer *leaf = path.nodes[0];
		int slot = path.slots[0];

		leaf_item_key(leaf, slot, &key);
		if (key.type == MFS_BLOCK_GROUP_ITEM_KEY) {
			struct mfs_block_group_item *bi = leaf_item_data(leaf, slot);
			struct mfs_chunk_map *map = mfs_find_chunk(fs, key.objectid);

			if (leaf_item_size(leaf, slot) != sizeof(*bi) || !map ||
			    map->logical != key.objectid || map->length != key.offset ||
			    mfs_lookup_block_group(fs, key.objectid)) {
				ret = -EUCLEAN;
				break;
			}
			ret = mfs_add_block_group(fs, map, le64_to_cpu(bi->used), false, &bg);
			if (ret)
				break;
			bg->reduced = !!(le64_to_cpu(bi->flags) & MFS_BLOCK_GROUP_REDUCED);
			if (bg->reduced)
				bg->asked = (le64_to_cpu(bi->flags) >> MFS_BLOCK_GROUP_ASKED_SHIFT) &
					    MFS_BLOCK_GROUP_PROFILE_MASK;
		}
		ret = mfs_next_item(fs->extent_root, &path);
	}
	mfs_release_path(&path);
	if (ret < 0)
		return ret;
	/* every chunk needs its block group */
	if (fs->nr_bgs != fs->nr_chunks)
		return -EUCLEAN;

	for (i = 0; i < fs->nr_bgs; i++) {
		ret = mfs_free_space_add(fs->bgs[i], fs->bgs[i]->start, fs->bgs[i]->length);
		if (ret)
			return ret;
	}
	key.objectid = 0;
	key.type = 0;
	key.offset = 0;
	mfs_init_path(&path);
	ret = mfs_search_forward(fs->extent_root, &key, &path);
	while (ret == 0) {
		struct extent_buffer *leaf = path.nodes[0];

		leaf_item_key(leaf, path.slots[0], &key);
		if (key.type == MFS_EXTENT_ITEM_KEY) {
			bg = mfs_lookup_block_group(fs, key.objectid);
			if (!bg || key.offset == 0 ||
			    key.objectid + key.offset > bg->start + bg->length) {
				ret = -EUCLEAN;
				break;
			}
			ret = mfs_free_space_remove(bg, key.objectid, key.offset);
			if (ret)
				break;
			if (bg_is_raid56(bg))
				rows_account(bg, key.objectid, key.offset, true);
		}
		ret = mfs_next_item(fs->extent_root, &path);
	}
	mfs_release_path(&path);
	if (ret < 0)
		return ret;
	mfs_seal_open_rows(fs);
	return 0;
}

/* ---------------- restripe support ---------------- */

/* The ranges t pinned in bg out of its free space (t may be NULL). */
static void free_space_clear_pinned(struct mfs_block_group *bg, const struct mfs_transaction *t)
{
	int i;

	for (i = 0; t && i < t->nr_pinned; i++) {
		u64 s = max_t(u64, t->pinned[i].start, bg->start);
		u64 e = min_t(u64, t->pinned[i].start + t->pinned[i].len, bg->start + bg->length);

		if (s >= e)
			continue;
		free_space_clear(bg, s, e - s);
		/* the unpin takes them out of their rows again */
		if (bg_is_raid56(bg))
			rows_account(bg, s, e - s, true);
	}
}

/* Free space and raid5/6 rows of bg recomputed from the extent tree (new layout). */
int mfs_rebuild_bg_space(struct mfs_fs_info *fs, struct mfs_block_group *bg)
{
	struct mfs_key key = { bg->start, 0, 0 };
	struct mfs_path path;
	int ret;

	bg->nr_free = 0;
	free(bg->row_used);
	free(bg->row_sealed);
	bg->row_used = NULL;
	bg->row_sealed = NULL;
	bg->row_len = bg->nr_rows = 0;
	bg->flags = bg->map->type;
	if (bg_is_raid56(bg)) {
		const struct mfs_raid_attr *a = mfs_profile(bg->flags);

		bg->row_len = (u64)(bg->map->num_stripes - a->nparity) * bg->map->stripe_len;
		bg->nr_rows = div_round_up(bg->length, bg->row_len);
		bg->row_used = calloc(bg->nr_rows, sizeof(*bg->row_used));
		bg->row_sealed = calloc(bg->nr_rows, 1);
		if (!bg->row_used || !bg->row_sealed)
			return -ENOMEM;
	}
	ret = mfs_free_space_add(bg, bg->start, bg->length);
	if (ret)
		return ret;
	mfs_init_path(&path);
	ret = mfs_search_forward(fs->extent_root, &key, &path);
	while (ret == 0) {
		leaf_item_key(path.nodes[0], path.slots[0], &key);
		if (key.objectid >= bg->start + bg->length)
			break;
		if (key.type == MFS_EXTENT_ITEM_KEY) {
			ret = mfs_free_space_remove(bg, key.objectid, key.offset);
			if (ret)
				break;
			if (bg_is_raid56(bg))
				rows_account(bg, key.objectid, key.offset, true);
		}
		ret = mfs_next_item(fs->extent_root, &path);
	}
	mfs_release_path(&path);
	if (ret < 0)
		return ret;
	/*
	 * Extents freed by a transaction not yet ended - one whose superblocks
	 * are still being written (fs->committing), or the running one whose
	 * references already ran - are gone from the extent tree but not free:
	 * their space comes back when that transaction ends (unpin). Counted
	 * free here, it could be handed out and then given back a second time.
	 */
	free_space_clear_pinned(bg, fs->committing);
	free_space_clear_pinned(bg, fs->running);
	/* relocated rows were written whole: they are sealed */
	if (bg_is_raid56(bg)) {
		u64 row;

		for (row = 0; row < bg->nr_rows; row++)
			if (bg->row_used[row]) {
				bg->row_sealed[row] = 1;
				free_space_clear(bg, bg->start + row * bg->row_len, bg->row_len);
			}
	}
	return 0;
}

void mfs_remove_block_group(struct mfs_fs_info *fs, struct mfs_block_group *bg)
{
	int i;

	for (i = 0; i < fs->nr_bgs; i++) {
		if (fs->bgs[i] == bg) {
			memmove(&fs->bgs[i], &fs->bgs[i + 1],
				(fs->nr_bgs - i - 1) * sizeof(*fs->bgs));
			fs->nr_bgs--;
			break;
		}
	}
	free(bg->free);
	free(bg->row_used);
	free(bg->row_sealed);
	free(bg);
}

/* Used ranges of a block group, in order (extent items). */
int mfs_used_ranges(struct mfs_fs_info *fs, u64 start, u64 end, u64 max_bytes,
		    struct mfs_range **out, int *nout)
{
	struct mfs_key key = { start, 0, 0 };
	struct mfs_range *r = NULL;
	struct mfs_path path;
	int n = 0, max = 0, ret;
	u64 bytes = 0;

	mfs_init_path(&path);
	ret = mfs_search_forward(fs->extent_root, &key, &path);
	while (ret == 0 && bytes < max_bytes) {
		leaf_item_key(path.nodes[0], path.slots[0], &key);
		if (key.objectid >= end)
			break;
		if (key.type == MFS_EXTENT_ITEM_KEY) {
			struct mfs_extent_item *ei = leaf_item_data(path.nodes[0], path.slots[0]);

			if (MFS_ARRAY_RESERVE(r, n, max, 256)) {
				ret = -ENOMEM;
				break;
			}
			r[n].start = key.objectid;
			r[n].len = key.offset;
			r[n].flags = le64_to_cpu(ei->flags);
			r[n].owner = le64_to_cpu(ei->owner_root);
			r[n].level = le64_to_cpu(ei->owner_objectid);
			r[n].gen = le64_to_cpu(ei->generation);
			bytes += key.offset;
			n++;
		}
		ret = mfs_next_item(fs->extent_root, &path);
	}
	mfs_release_path(&path);
	if (ret < 0) {
		free(r);
		return ret;
	}
	*out = r;
	*nout = n;
	return 0;
}

int mfs_bg_used_ranges(struct mfs_fs_info *fs, struct mfs_block_group *bg,
		       struct mfs_range **out, int *nout)
{
	return mfs_used_ranges(fs, bg->start, bg->start + bg->length, (u64)-1, out, nout);
}
