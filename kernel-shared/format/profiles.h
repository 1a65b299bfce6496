/* The profile table: the one source of every RAID profile fact. */
#ifndef MFS_PROFILES_H
#define MFS_PROFILES_H

#include "kernel-shared/format/kerncompat.h"

enum mfs_raid_type {
	MFS_RAID_SINGLE,
	MFS_RAID_DUP,
	MFS_RAID_RAID0,
	MFS_RAID_RAID1,
	MFS_RAID_RAID1C3,
	MFS_RAID_RAID1C4,
	MFS_RAID_RAID10,
	MFS_RAID_RAID5,
	MFS_RAID_RAID6,
	MFS_NR_RAID_TYPES
};

struct mfs_raid_attr {
	const char *name;	/* parsed, lower case */
	const char *ui_name;	/* shown: "single", "DUP", "RAID1C3" */
	u64 bg_flag;		/* MFS_BLOCK_GROUP_* bit, 0 for single */
	int devs_min;		/* devices a chunk needs */
	int devs_max;		/* devices a chunk spans, 0 = as many as have space */
	int tolerated_failures;
	int ncopies;		/* full copies of each byte */
	int nparity;		/* parity stripes per row */
	int devs_increment;	/* chunk device counts are multiples of this */
	int dev_stripes;	/* stripes per device (2 for dup) */
	int sub_stripes;	/* mirrors inside a stripe set (raid10) */
	u64 incompat;		/* feature bit the profile needs */
};

extern const struct mfs_raid_attr mfs_raid_array[MFS_NR_RAID_TYPES];

/* Profile index of a block-group flags word (type bits are ignored). */
enum mfs_raid_type mfs_bg_flags_to_raid_index(u64 flags);
const struct mfs_raid_attr *mfs_profile(u64 flags);
/* Parse "raid1", "RAID1", "single"…; returns 0 and the bg bit, or -EINVAL. */
int mfs_parse_profile(const char *name, u64 *bg_flag);
/* "single, dup, raid0, ...": every profile name, in table order, for messages. */
const char *mfs_profile_names(void);
const char *mfs_profile_ui_name(u64 flags);
const char *mfs_bg_type_name(u64 flags);	/* "Data", "Metadata", "System" */

/* How many of a chunk's stripes carry distinct data. */
int mfs_nr_data_stripes(u64 flags, int num_stripes);
/* Logical chunk length for a given per-device stripe size. */
u64 mfs_chunk_logical_length(u64 flags, int num_stripes, u64 stripe_size);
/* Raw bytes used per logical byte, as a fraction num/den. */
void mfs_profile_ratio(u64 flags, int num_stripes, u64 *num, u64 *den);
/* Fewest devices a filesystem can keep and still hold this profile. */
int mfs_profile_min_devices(u64 flags);
/*
 * May what asked for profile want be stored in a chunk of profile have:
 * it survives as many device failures, and has a second copy or parity
 * when want has one (btrfs's find_free_extent fills raid0 from raid1,
 * never dup from single).
 */
bool mfs_profile_covers(u64 have, u64 want);
/*
 * Of the profiles in raid_mask (bit i = enum mfs_raid_type i), the most
 * redundant in btrfs's order: raid1c4, raid6, raid1c3, raid5, raid10,
 * raid1, dup, raid0, single. Its bg bit (0 for single or an empty mask).
 */
u64 mfs_most_redundant_profile(unsigned int raid_mask);

/*
 * Of the profiles in raid_mask, the one a new chunk takes when the profile
 * asked for does not fit (degraded or failing devices): most losses
 * survived, then the asked profile's kind of redundancy (mirror or parity).
 * Its bg bit (0 for single or an empty mask).
 */
u64 mfs_fallback_profile(unsigned int raid_mask, u64 asked);

#endif
