/*
 * New chunks: the profile each type asks for, the fallback to a reduced
 * profile on a degraded mount, and the headroom kept before data takes
 * unallocated space (a system chunk for the chunk tree, metadata for the
 * space reservation). The extent allocator (alloc.c) calls in when no
 * block group has room.
 */
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/tree/alloc.h"
#include "kernel-shared/tree/alloc-internal.h"
#include "kernel-shared/tree/transaction.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/format/profiles.h"

int mfs_alloc_chunk(struct mfs_fs_info *fs, u64 flags, u64 max_stripe,
		    struct mfs_block_group **out)
{
	const struct mfs_raid_attr *a = mfs_profile(flags);
	struct mfs_chunk_map *map;
	struct mfs_block_group *bg;
	int ret = mfs_place_chunk(fs, flags, max_stripe, &map);

	if (ret)
		return ret;
	ret = mfs_add_block_group(fs, map, 0, true, &bg);
	if (ret) {
		mfs_unplace_chunk(fs, map);
		return ret;
	}
	if (a->incompat)
		fs->incompat_flags |= a->incompat;
	if (out)
		*out = bg;
	return 0;
}

u64 mfs_used_bytes(const struct mfs_fs_info *fs, u64 type_mask)
{
	u64 used = 0;
	int i;

	for (i = 0; i < fs->nr_bgs; i++)
		if (fs->bgs[i]->flags & type_mask)
			used += fs->bgs[i]->used;
	return used;
}

u64 mfs_bg_item_flags(const struct mfs_block_group *bg)
{
	if (!bg->reduced)
		return bg->flags;
	return bg->flags | MFS_BLOCK_GROUP_REDUCED |
	       ((bg->asked & MFS_BLOCK_GROUP_PROFILE_MASK) << MFS_BLOCK_GROUP_ASKED_SHIFT);
}

u64 mfs_target_profile(struct mfs_fs_info *fs, u64 type)
{
	if (type & MFS_BLOCK_GROUP_DATA)
		return fs->data_profile;
	if (type & MFS_BLOCK_GROUP_SYSTEM)
		return fs->system_profile;
	return fs->metadata_profile;
}

/*
 * Degraded, with too few devices left for the requested profile: the
 * profiles to fall back to, those the requested one covers (never more
 * redundant than asked) that the devices present can hold.
 */
static unsigned int reduced_profiles(struct mfs_fs_info *fs, u64 profile)
{
	int present = mfs_nr_allocatable_devices(fs), i;
	unsigned int mask = 0;

	for (i = 0; i < MFS_NR_RAID_TYPES; i++) {
		const struct mfs_raid_attr *a = &mfs_raid_array[i];

		if (a->bg_flag != profile && a->devs_min <= present &&
		    mfs_profile_covers(profile, a->bg_flag))
			mask |= 1U << i;
	}
	return mask;
}

/* Free bytes in the block groups of type that can take new extents. */
static u64 allocatable_free(struct mfs_fs_info *fs, u64 type)
{
	u64 free = 0;
	int i;

	for (i = 0; i < fs->nr_bgs; i++) {
		struct mfs_block_group *bg = fs->bgs[i];

		if (bg_allocatable(bg) && (bg->flags & MFS_BLOCK_GROUP_TYPE_MASK) == type)
			free += mfs_free_space_total(bg);
	}
	return free;
}

/*
 * Tree blocks the chunk tree may need in one commit that adds a chunk: its
 * path copied, a split, the device items beside it.
 */
#define MFS_SYSTEM_HEADROOM_BLOCKS	4

/*
 * A new data or metadata chunk is recorded in the chunk tree, whose blocks
 * live in SYSTEM chunks. Before one takes unallocated space, a system
 * chunk that can be written must have room for that record (as btrfs's
 * check_system_chunk); on a degraded mount none of the array's own system
 * chunks can be (they have a stripe on the device that is gone), so a
 * system chunk on the devices present comes first. Without that room the
 * new chunk could never be committed: -ENOSPC now, before it takes space
 * (the commit would otherwise fail and lose the transaction).
 */
static int keep_system_headroom(struct mfs_fs_info *fs)
{
	u64 need = (u64)MFS_SYSTEM_HEADROOM_BLOCKS * fs->nodesize;
	struct mfs_block_group *bg;

	if (allocatable_free(fs, MFS_BLOCK_GROUP_SYSTEM) >= need)
		return 0;
	mfs_alloc_new_chunk(fs, MFS_BLOCK_GROUP_SYSTEM, 0, &bg);
	return allocatable_free(fs, MFS_BLOCK_GROUP_SYSTEM) >= need ? 0 : -ENOSPC;
}

/*
 * A new chunk of type in the profile new chunks of it get. When that does
 * not fit and devices are missing, the most redundant profile that does
 * (of the asked profile's kind: mfs_fallback_profile),
 * its block group marked reduced so that the requested profile can come
 * back (format §7.4); likewise when a device is failing. Never when all
 * devices are there and healthy, where a profile
 * that does not fit is ENOSPC as it always was.
 */
int mfs_alloc_new_chunk(struct mfs_fs_info *fs, u64 type, u64 max_stripe,
			struct mfs_block_group **out)
{
	u64 profile = mfs_target_profile(fs, type), p = 0;
	unsigned int mask;
	int ret;

	if (!(type & MFS_BLOCK_GROUP_SYSTEM)) {
		ret = keep_system_headroom(fs);
		if (ret)
			return ret;
	}
	ret = mfs_alloc_chunk(fs, type | profile, max_stripe, out);

	/* a failing device takes nothing new: the others may be too few too */
	if (ret != -ENOSPC || (!mfs_fs_degraded(fs) && !mfs_fs_has_failing(fs)))
		return ret;
	for (mask = reduced_profiles(fs, profile); mask;
	     mask &= ~(1U << mfs_bg_flags_to_raid_index(p))) {
		p = mfs_fallback_profile(mask, profile);
		ret = mfs_alloc_chunk(fs, type | p, max_stripe, out);
		if (ret == -ENOSPC)
			continue;
		if (ret)
			return ret;
		(*out)->reduced = true;
		(*out)->asked = profile;
		mfs_log(fs, "degraded: new %s chunk at %llu is %s, as the devices present allow; the filesystem asks for %s",
			mfs_bg_type_name(type), (unsigned long long)(*out)->start,
			mfs_profile_ui_name(p), mfs_profile_ui_name(profile));
		return 0;
	}
	return -ENOSPC;
}

u64 mfs_new_chunk_capacity(struct mfs_fs_info *fs, u64 type)
{
	u64 profile = mfs_target_profile(fs, type), p = 0;
	u64 bytes = mfs_simulate_alloc(fs, type | profile);
	unsigned int mask;

	/* what alloc_new_chunk falls back to when the profile no longer fits */
	if (bytes || (!mfs_fs_degraded(fs) && !mfs_fs_has_failing(fs)))
		return bytes;
	for (mask = reduced_profiles(fs, profile); mask && !bytes;
	     mask &= ~(1U << mfs_bg_flags_to_raid_index(p))) {
		p = mfs_fallback_profile(mask, profile);
		bytes = mfs_simulate_alloc(fs, type | p);
	}
	return bytes;
}

/*
 * Before a new data chunk takes unallocated space, metadata gets a chunk of
 * its own if its block groups are short of twice the global reserve: the
 * space reservation (space.c) counts unallocated space as metadata that
 * can still come, and data must not take it from under it.
 */
void mfs_keep_metadata_headroom(struct mfs_fs_info *fs)
{
	struct mfs_block_group *bg;
	u64 free = allocatable_free(fs, MFS_BLOCK_GROUP_METADATA);

	if (free / fs->nodesize >= 2 * mfs_global_reserve_blocks(fs))
		return;
	/* no room for one is fine: the reservation sees that too */
	mfs_alloc_new_chunk(fs, MFS_BLOCK_GROUP_METADATA, 0, &bg);
}
