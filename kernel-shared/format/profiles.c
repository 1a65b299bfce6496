/* The profile table (DESIGN §2): every check in the project reads it. */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "kernel-shared/format/format.h"
#include "kernel-shared/format/profiles.h"

const struct mfs_raid_attr mfs_raid_array[MFS_NR_RAID_TYPES] = {
	[MFS_RAID_SINGLE] = {
		.name = "single", .ui_name = "single", .bg_flag = 0,
		.devs_min = 1, .devs_max = 1, .tolerated_failures = 0,
		.ncopies = 1, .nparity = 0,
		.devs_increment = 1, .dev_stripes = 1, .sub_stripes = 1,
	},
	[MFS_RAID_DUP] = {
		.name = "dup", .ui_name = "DUP", .bg_flag = MFS_BLOCK_GROUP_DUP,
		.devs_min = 1, .devs_max = 1, .tolerated_failures = 0,
		.ncopies = 2, .nparity = 0,
		.devs_increment = 1, .dev_stripes = 2, .sub_stripes = 1,
	},
	[MFS_RAID_RAID0] = {
		.name = "raid0", .ui_name = "RAID0", .bg_flag = MFS_BLOCK_GROUP_RAID0,
		.devs_min = 1, .devs_max = 0, .tolerated_failures = 0,
		.ncopies = 1, .nparity = 0,
		.devs_increment = 1, .dev_stripes = 1, .sub_stripes = 1,
	},
	[MFS_RAID_RAID1] = {
		.name = "raid1", .ui_name = "RAID1", .bg_flag = MFS_BLOCK_GROUP_RAID1,
		.devs_min = 2, .devs_max = 2, .tolerated_failures = 1,
		.ncopies = 2, .nparity = 0,
		.devs_increment = 2, .dev_stripes = 1, .sub_stripes = 1,
	},
	[MFS_RAID_RAID1C3] = {
		.name = "raid1c3", .ui_name = "RAID1C3", .bg_flag = MFS_BLOCK_GROUP_RAID1C3,
		.devs_min = 3, .devs_max = 3, .tolerated_failures = 2,
		.ncopies = 3, .nparity = 0,
		.devs_increment = 3, .dev_stripes = 1, .sub_stripes = 1,
		.incompat = MFS_FEATURE_INCOMPAT_RAID1C34,
	},
	[MFS_RAID_RAID1C4] = {
		.name = "raid1c4", .ui_name = "RAID1C4", .bg_flag = MFS_BLOCK_GROUP_RAID1C4,
		.devs_min = 4, .devs_max = 4, .tolerated_failures = 3,
		.ncopies = 4, .nparity = 0,
		.devs_increment = 4, .dev_stripes = 1, .sub_stripes = 1,
		.incompat = MFS_FEATURE_INCOMPAT_RAID1C34,
	},
	[MFS_RAID_RAID10] = {
		.name = "raid10", .ui_name = "RAID10", .bg_flag = MFS_BLOCK_GROUP_RAID10,
		.devs_min = 2, .devs_max = 0, .tolerated_failures = 1,
		.ncopies = 2, .nparity = 0,
		.devs_increment = 2, .dev_stripes = 1, .sub_stripes = 2,
	},
	[MFS_RAID_RAID5] = {
		.name = "raid5", .ui_name = "RAID5", .bg_flag = MFS_BLOCK_GROUP_RAID5,
		.devs_min = 2, .devs_max = 0, .tolerated_failures = 1,
		.ncopies = 1, .nparity = 1,
		.devs_increment = 1, .dev_stripes = 1, .sub_stripes = 1,
		.incompat = MFS_FEATURE_INCOMPAT_RAID56,
	},
	[MFS_RAID_RAID6] = {
		.name = "raid6", .ui_name = "RAID6", .bg_flag = MFS_BLOCK_GROUP_RAID6,
		.devs_min = 3, .devs_max = 0, .tolerated_failures = 2,
		.ncopies = 1, .nparity = 2,
		.devs_increment = 1, .dev_stripes = 1, .sub_stripes = 1,
		.incompat = MFS_FEATURE_INCOMPAT_RAID56,
	},
};

enum mfs_raid_type mfs_bg_flags_to_raid_index(u64 flags)
{
	u64 profile = flags & MFS_BLOCK_GROUP_PROFILE_MASK;
	int i;

	for (i = 1; i < MFS_NR_RAID_TYPES; i++)
		if (profile == mfs_raid_array[i].bg_flag)
			return i;
	return MFS_RAID_SINGLE;
}

const struct mfs_raid_attr *mfs_profile(u64 flags)
{
	return &mfs_raid_array[mfs_bg_flags_to_raid_index(flags)];
}

int mfs_parse_profile(const char *name, u64 *bg_flag)
{
	int i;

	for (i = 0; i < MFS_NR_RAID_TYPES; i++) {
		if (strcasecmp(name, mfs_raid_array[i].name) == 0) {
			*bg_flag = mfs_raid_array[i].bg_flag;
			return 0;
		}
	}
	return -EINVAL;
}

const char *mfs_profile_names(void)
{
	static __thread char names[128];
	size_t o = 0;
	int i;

	if (names[0])
		return names;
	for (i = 0; i < MFS_NR_RAID_TYPES; i++)
		o += snprintf(names + o, sizeof(names) - o, "%s%s", i ? ", " : "",
			      mfs_raid_array[i].name);
	return names;
}

const char *mfs_profile_ui_name(u64 flags)
{
	return mfs_profile(flags)->ui_name;
}

const char *mfs_bg_type_name(u64 flags)
{
	if (flags & MFS_BLOCK_GROUP_DATA)
		return "Data";
	if (flags & MFS_BLOCK_GROUP_SYSTEM)
		return "System";
	return "Metadata";
}

int mfs_nr_data_stripes(u64 flags, int num_stripes)
{
	const struct mfs_raid_attr *a = mfs_profile(flags);

	if (a->nparity)
		return num_stripes - a->nparity;
	if (a->sub_stripes > 1)
		return num_stripes / a->sub_stripes;
	if (a->ncopies > 1)
		return 1;
	return num_stripes;
}

u64 mfs_chunk_logical_length(u64 flags, int num_stripes, u64 stripe_size)
{
	return stripe_size * (u64)mfs_nr_data_stripes(flags, num_stripes);
}

void mfs_profile_ratio(u64 flags, int num_stripes, u64 *num, u64 *den)
{
	*num = num_stripes;
	*den = mfs_nr_data_stripes(flags, num_stripes);
}

int mfs_profile_min_devices(u64 flags)
{
	return mfs_profile(flags)->devs_min;
}

static bool has_redundancy(const struct mfs_raid_attr *a)
{
	return a->ncopies > 1 || a->nparity > 0;
}

bool mfs_profile_covers(u64 have, u64 want)
{
	const struct mfs_raid_attr *h = mfs_profile(have), *w = mfs_profile(want);

	return h->tolerated_failures >= w->tolerated_failures &&
	       (!has_redundancy(w) || has_redundancy(h));
}

/* Most to least redundant, as btrfs's btrfs_reduce_alloc_profile ranks them. */
static const enum mfs_raid_type redundancy_order[MFS_NR_RAID_TYPES] = {
	MFS_RAID_RAID1C4, MFS_RAID_RAID6, MFS_RAID_RAID1C3, MFS_RAID_RAID5,
	MFS_RAID_RAID10, MFS_RAID_RAID1, MFS_RAID_DUP, MFS_RAID_RAID0, MFS_RAID_SINGLE,
};

u64 mfs_most_redundant_profile(unsigned int raid_mask)
{
	int i;

	for (i = 0; i < MFS_NR_RAID_TYPES; i++)
		if (raid_mask & (1U << redundancy_order[i]))
			return mfs_raid_array[redundancy_order[i]].bg_flag;
	return 0;
}

/* 2 same kind of redundancy as the profile asked for, 1 both none, 0 other */
static int same_family(const struct mfs_raid_attr *a, const struct mfs_raid_attr *asked)
{
	if (!has_redundancy(a) && !has_redundancy(asked))
		return 1;
	if (a->nparity && asked->nparity)
		return 2;
	return a->ncopies > 1 && asked->ncopies > 1 ? 2 : 0;
}

/*
 * A new chunk that cannot have the profile asked for: the candidate that
 * survives the most device losses, then the one of the asked profile's kind
 * (mirrors for a mirror, parity for parity: raid1c3 metadata on two devices
 * becomes RAID1, not RAID5), then the plainer layout (raid1 before raid10).
 */
u64 mfs_fallback_profile(unsigned int raid_mask, u64 asked)
{
	static const enum mfs_raid_type order[MFS_NR_RAID_TYPES] = {
		MFS_RAID_RAID1C4, MFS_RAID_RAID6, MFS_RAID_RAID1C3, MFS_RAID_RAID5,
		MFS_RAID_RAID1, MFS_RAID_RAID10, MFS_RAID_DUP, MFS_RAID_RAID0, MFS_RAID_SINGLE,
	};
	const struct mfs_raid_attr *w = mfs_profile(asked), *best = NULL;
	int i;

	for (i = 0; i < MFS_NR_RAID_TYPES; i++) {
		const struct mfs_raid_attr *a = &mfs_raid_array[order[i]];

		if (!(raid_mask & (1U << order[i])))
			continue;
		if (!best || a->tolerated_failures > best->tolerated_failures ||
		    (a->tolerated_failures == best->tolerated_failures &&
		     same_family(a, w) > same_family(best, w)))
			best = a;
	}
	return best ? best->bg_flag : 0;
}
