/*
 * Allocator invariants: chunk allocation of every type and profile on 1-6
 * devices of mixed sizes until space runs out, then extent allocation in
 * block groups, including the raid5/6 rule that a row holding committed
 * data takes no new allocations (DESIGN §3, §4).
 */
#include <inttypes.h>
#include <unistd.h>
#include <fcntl.h>
#include <ftw.h>

#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/ops/create.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/tree/transaction.h"
#include "kernel-shared/tree/alloc.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/ops/open.h"
#include "unit.h"

/* ---------------- random numbers ---------------- */

static u64 base_seed(void)
{
	return unit_base_seed(0x6d66732d616c6c6fULL);
}

static void seed_for(const char *name)
{
	u64 h = base_seed();

	while (*name)
		h = unit_mix64(h ^ (u8)*name++);
	unit_seed(h);
	fprintf(stderr, "# seed 0x%" PRIx64 " (MFS_TEST_SEED=0x%" PRIx64 ")\n", h, base_seed());
}

#define FAIL(...) do { \
	fprintf(stderr, "# %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); \
	fprintf(stderr, "\n"); \
	unit_failed_checks++; \
} while (0)

/* ---------------- images and filesystems ---------------- */

#define MAX_DEVS 6

struct images {
	char dir[64];
	char paths[MAX_DEVS][96];
	const char *pathv[MAX_DEVS];
	int n;
};

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(path);
}

static int make_images(struct images *im, int n, const u64 *sizes)
{
	const char *tmp = getenv("TMPDIR");
	int i;

	memset(im, 0, sizeof(*im));
	snprintf(im->dir, sizeof(im->dir), "%s/mfs-alloc-XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(im->dir))
		return -errno;
	for (i = 0; i < n; i++) {
		int fd;

		snprintf(im->paths[i], sizeof(im->paths[i]), "%s/d%d.img", im->dir, i);
		im->pathv[i] = im->paths[i];
		fd = open(im->paths[i], O_CREAT | O_RDWR | O_TRUNC, 0600);
		if (fd < 0)
			return -errno;
		if (ftruncate(fd, sizes[i]) < 0) {
			close(fd);
			return -errno;
		}
		close(fd);
		im->n++;
	}
	return 0;
}

static void remove_images(struct images *im)
{
	if (im->dir[0])
		nftw(im->dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

static int mkfs(struct images *im, u64 data, u64 meta)
{
	struct mfs_mkfs_params p = { 0 };

	p.paths = im->pathv;
	p.npaths = im->n;
	p.data_profile = data;
	p.metadata_profile = meta;
	p.nodesize = 16384;
	p.sectorsize = 4096;
	return mfs_make_fs(&p);
}

static int open_fs(struct images *im, struct mfs_fs_info **fs)
{
	struct mfs_open_ctl ctl = {
		.paths = im->pathv, .npaths = im->n,
		.flags = MFS_OPEN_WRITABLE, .sb_mirror = -1,
	};

	return mfs_open_fs(&ctl, fs);
}

static const u64 all_profiles[MFS_NR_RAID_TYPES] = {
	0, MFS_BLOCK_GROUP_DUP, MFS_BLOCK_GROUP_RAID0, MFS_BLOCK_GROUP_RAID1,
	MFS_BLOCK_GROUP_RAID1C3, MFS_BLOCK_GROUP_RAID1C4, MFS_BLOCK_GROUP_RAID10,
	MFS_BLOCK_GROUP_RAID5, MFS_BLOCK_GROUP_RAID6,
};
static const u64 all_types[3] = {
	MFS_BLOCK_GROUP_DATA, MFS_BLOCK_GROUP_METADATA, MFS_BLOCK_GROUP_SYSTEM,
};

/* ---------------- layout invariants ---------------- */

static bool overlaps(u64 a, u64 alen, u64 b, u64 blen)
{
	return a < b + blen && b < a + alen;
}

static const struct mfs_dev_extent_rec *find_dev_extent(const struct mfs_device *dev,
							u64 physical)
{
	int i;

	for (i = 0; i < dev->nr_extents; i++)
		if (dev->extents[i].physical == physical)
			return &dev->extents[i];
	return NULL;
}

/*
 * Everything about chunks and dev extents that must hold at all times.
 * Returns the number of failures found.
 */
static int check_layout(struct mfs_fs_info *fs)
{
	int before = unit_failed_checks, i, j, s, nstripes = 0, nextents = 0;

	for (i = 0; i < fs->nr_devices; i++) {
		struct mfs_device *dev = fs->devices[i];
		u64 sum = 0;

		for (j = 0; j < dev->nr_extents; j++) {
			const struct mfs_dev_extent_rec *e = &dev->extents[j];
			int m;

			sum += e->length;
			nextents++;
			if (!e->length)
				FAIL("devid %" PRIu64 ": empty dev extent at %" PRIu64,
				     dev->devid, e->physical);
			if (e->physical < SZ_1M)
				FAIL("devid %" PRIu64 ": dev extent at %" PRIu64 " in the first MiB",
				     dev->devid, e->physical);
			for (m = 1; m < MFS_SUPER_MIRROR_MAX; m++)
				if (overlaps(e->physical, e->length, mfs_sb_offset(m),
					     MFS_SUPER_INFO_SIZE))
					FAIL("devid %" PRIu64 ": dev extent [%" PRIu64 ", +%" PRIu64
					     ") covers superblock mirror %d", dev->devid,
					     e->physical, e->length, m);
			if (mfs_range_is_reserved(e->physical, e->length))
				FAIL("devid %" PRIu64 ": dev extent %" PRIu64 " in a reserved range",
				     dev->devid, e->physical);
			if (e->physical + e->length > dev->total_bytes)
				FAIL("devid %" PRIu64 ": dev extent %" PRIu64 " past the end",
				     dev->devid, e->physical);
			if (e->physical % MFS_CHUNK_ALIGN || e->length % MFS_CHUNK_ALIGN)
				FAIL("devid %" PRIu64 ": dev extent %" PRIu64 " unaligned",
				     dev->devid, e->physical);
			if (j && e->physical < dev->extents[j - 1].physical +
					       dev->extents[j - 1].length)
				FAIL("devid %" PRIu64 ": dev extents at %" PRIu64 " and %" PRIu64
				     " overlap or are unsorted", dev->devid,
				     dev->extents[j - 1].physical, e->physical);
			if (!mfs_find_chunk(fs, e->chunk_offset) ||
			    mfs_find_chunk(fs, e->chunk_offset)->logical != e->chunk_offset)
				FAIL("devid %" PRIu64 ": dev extent %" PRIu64 " names no chunk",
				     dev->devid, e->physical);
		}
		if (sum != dev->bytes_used)
			FAIL("devid %" PRIu64 ": bytes_used %" PRIu64 ", dev extents sum %" PRIu64,
			     dev->devid, dev->bytes_used, sum);
	}

	for (i = 0; i < fs->nr_chunks; i++) {
		struct mfs_chunk_map *map = fs->chunks[i];
		const struct mfs_raid_attr *a = mfs_profile(map->type);
		int ndevs = map->num_stripes / a->dev_stripes;
		int ndata = mfs_nr_data_stripes(map->type, map->num_stripes);
		struct mfs_block_group *bg = mfs_lookup_block_group(fs, map->logical);
		u64 stripe_size = ndata ? map->length / ndata : 0;

		nstripes += map->num_stripes;
		if (i && map->logical < fs->chunks[i - 1]->logical + fs->chunks[i - 1]->length)
			FAIL("chunks %" PRIu64 " and %" PRIu64 " overlap",
			     fs->chunks[i - 1]->logical, map->logical);
		if (map->num_stripes % a->dev_stripes || ndevs < a->devs_min ||
		    (a->devs_max && ndevs > a->devs_max) || ndevs % a->devs_increment)
			FAIL("chunk %" PRIu64 " (%s): %d stripes break the profile table",
			     map->logical, a->name, map->num_stripes);
		if (map->sub_stripes != a->sub_stripes || map->stripe_len != MFS_STRIPE_LEN)
			FAIL("chunk %" PRIu64 ": sub_stripes %d stripe_len %" PRIu64,
			     map->logical, map->sub_stripes, map->stripe_len);
		if (!ndata || map->length % ndata || stripe_size < MFS_MIN_STRIPE_SIZE ||
		    stripe_size % MFS_CHUNK_ALIGN)
			FAIL("chunk %" PRIu64 ": length %" PRIu64 " over %d data stripes",
			     map->logical, map->length, ndata);
		if (!bg || bg->start != map->logical || bg->length != map->length ||
		    bg->flags != map->type || bg->map != map)
			FAIL("chunk %" PRIu64 ": no matching block group", map->logical);
		for (s = 0; s < map->num_stripes; s++) {
			struct mfs_map_stripe *st = &map->stripes[s];
			struct mfs_device *dev = mfs_find_device(fs, st->devid);
			const struct mfs_dev_extent_rec *e = dev ? find_dev_extent(dev, st->physical) : NULL;

			if (!dev || st->dev != dev || memcmp(st->dev_uuid, dev->uuid, MFS_UUID_SIZE)) {
				FAIL("chunk %" PRIu64 " stripe %d: bad device %" PRIu64,
				     map->logical, s, st->devid);
				continue;
			}
			if (!e || e->length != stripe_size || e->chunk_offset != map->logical)
				FAIL("chunk %" PRIu64 " stripe %d: no dev extent of %" PRIu64
				     " bytes at devid %" PRIu64 " %" PRIu64, map->logical, s,
				     stripe_size, st->devid, st->physical);
			for (j = 0; j < s; j++) {
				bool same = map->stripes[j].devid == st->devid;

				if (a->dev_stripes > 1) {
					/* dup: every stripe on the one device, apart */
					if (!same)
						FAIL("chunk %" PRIu64 ": dup stripes on two devices",
						     map->logical);
					if (overlaps(map->stripes[j].physical, stripe_size,
						     st->physical, stripe_size))
						FAIL("chunk %" PRIu64 ": dup stripes overlap", map->logical);
				} else if (same) {
					FAIL("chunk %" PRIu64 " (%s): stripes %d and %d share devid %"
					     PRIu64, map->logical, a->name, j, s, st->devid);
				}
			}
		}
	}
	if (nstripes != nextents)
		FAIL("%d chunk stripes but %d dev extents", nstripes, nextents);
	if (fs->nr_bgs != fs->nr_chunks)
		FAIL("%d block groups for %d chunks", fs->nr_bgs, fs->nr_chunks);
	return unit_failed_checks - before;
}

/* ---------------- snapshots of the layout ---------------- */

struct snap_chunk {
	u64 logical, length, type;
	int num_stripes;
	u64 devid[16], physical[16];
};

struct snapshot {
	int nr_devices, nr_chunks, nr_bgs;
	u64 bytes_used[MAX_DEVS];
	int nr_extents[MAX_DEVS];
	struct mfs_dev_extent_rec *extents[MAX_DEVS];
	struct snap_chunk *chunks;
	u64 incompat;
};

static void snap_take(struct mfs_fs_info *fs, struct snapshot *sn)
{
	int i, s;

	memset(sn, 0, sizeof(*sn));
	sn->nr_devices = fs->nr_devices;
	sn->nr_chunks = fs->nr_chunks;
	sn->nr_bgs = fs->nr_bgs;
	sn->incompat = fs->incompat_flags;
	for (i = 0; i < fs->nr_devices && i < MAX_DEVS; i++) {
		struct mfs_device *dev = fs->devices[i];

		sn->bytes_used[i] = dev->bytes_used;
		sn->nr_extents[i] = dev->nr_extents;
		sn->extents[i] = malloc((dev->nr_extents + 1) * sizeof(*dev->extents));
		if (dev->nr_extents)
			memcpy(sn->extents[i], dev->extents,
			       dev->nr_extents * sizeof(*dev->extents));
	}
	sn->chunks = calloc(fs->nr_chunks + 1, sizeof(*sn->chunks));
	for (i = 0; i < fs->nr_chunks; i++) {
		struct mfs_chunk_map *m = fs->chunks[i];

		sn->chunks[i].logical = m->logical;
		sn->chunks[i].length = m->length;
		sn->chunks[i].type = m->type;
		sn->chunks[i].num_stripes = m->num_stripes;
		for (s = 0; s < m->num_stripes && s < 16; s++) {
			sn->chunks[i].devid[s] = m->stripes[s].devid;
			sn->chunks[i].physical[s] = m->stripes[s].physical;
		}
	}
}

static void snap_free(struct snapshot *sn)
{
	int i;

	for (i = 0; i < MAX_DEVS; i++)
		free(sn->extents[i]);
	free(sn->chunks);
}

/* Is the filesystem's layout still what the snapshot recorded? */
static bool snap_equal(struct mfs_fs_info *fs, const struct snapshot *sn, bool check_incompat)
{
	struct snapshot now;
	bool eq;
	int i;

	snap_take(fs, &now);
	eq = now.nr_devices == sn->nr_devices && now.nr_chunks == sn->nr_chunks &&
	     now.nr_bgs == sn->nr_bgs && (!check_incompat || now.incompat == sn->incompat);
	for (i = 0; eq && i < sn->nr_devices && i < MAX_DEVS; i++)
		eq = now.bytes_used[i] == sn->bytes_used[i] &&
		     now.nr_extents[i] == sn->nr_extents[i] &&
		     !memcmp(now.extents[i], sn->extents[i],
			     sn->nr_extents[i] * sizeof(*sn->extents[i]));
	for (i = 0; eq && i < sn->nr_chunks; i++)
		eq = !memcmp(&now.chunks[i], &sn->chunks[i], sizeof(sn->chunks[i]));
	snap_free(&now);
	return eq;
}

/* ---------------- chunk allocation ---------------- */

/* Bytes a system chunk takes in the superblock's bootstrap array. */
static u64 sys_array_bytes(struct mfs_fs_info *fs)
{
	u64 total = 0;
	int i;

	for (i = 0; i < fs->nr_chunks; i++)
		if (fs->chunks[i]->type & MFS_BLOCK_GROUP_SYSTEM)
			total += sizeof(struct mfs_disk_key) +
				 mfs_chunk_item_size(fs->chunks[i]->num_stripes);
	return total;
}

/*
 * What a chunk allocation must look like given the holes before it: as
 * many devices as have room (up to the profile's maximum, in whole
 * increments), those with the largest holes, stripes of at most max_stripe.
 */
static void check_new_chunk(struct mfs_fs_info *fs, struct mfs_block_group *bg,
			    u64 flags, u64 max_stripe, const u64 *hole_before)
{
	struct mfs_chunk_map *map = bg->map;
	const struct mfs_raid_attr *a = mfs_profile(flags);
	int eligible = 0, want, i, s, ndevs = map->num_stripes / a->dev_stripes;
	u64 stripe_size = map->length / mfs_nr_data_stripes(flags, map->num_stripes);
	u64 smallest_chosen = (u64)-1, largest_unchosen = 0;

	if (map->type != flags || bg->flags != flags)
		FAIL("chunk %" PRIu64 ": type %#" PRIx64 ", asked %#" PRIx64,
		     map->logical, map->type, flags);
	if (bg->used || bg->reserved || mfs_free_space_total(bg) != bg->length)
		FAIL("new chunk %" PRIu64 ": block group not empty", map->logical);
	for (i = 0; i < fs->nr_devices; i++)
		if (hole_before[i] >= MFS_MIN_STRIPE_SIZE * a->dev_stripes &&
		    mfs_device_allocatable(fs->devices[i]))
			eligible++;
	want = a->devs_max ? min_t(int, eligible, a->devs_max) : eligible;
	want -= want % a->devs_increment;
	if (ndevs != want)
		FAIL("chunk %" PRIu64 " (%s): %d devices, %d had room", map->logical,
		     a->name, ndevs, want);
	if (max_stripe && stripe_size > max_stripe)
		FAIL("chunk %" PRIu64 ": stripe %" PRIu64 " > max %" PRIu64,
		     map->logical, stripe_size, max_stripe);
	/* policy sizes (DESIGN §4) when the caller sets no maximum */
	if (!max_stripe && (flags & MFS_BLOCK_GROUP_SYSTEM) && stripe_size > SZ_32M)
		FAIL("system chunk %" PRIu64 ": stripe %" PRIu64, map->logical, stripe_size);
	if (!max_stripe && (flags & MFS_BLOCK_GROUP_METADATA) && stripe_size > SZ_1G)
		FAIL("metadata chunk %" PRIu64 ": stripe %" PRIu64, map->logical, stripe_size);
	if (!max_stripe && (flags & MFS_BLOCK_GROUP_DATA) && stripe_size > SZ_1G)
		FAIL("data chunk %" PRIu64 ": stripe %" PRIu64, map->logical, stripe_size);
	for (i = 0; i < fs->nr_devices; i++) {
		bool chosen = false;

		for (s = 0; s < map->num_stripes; s++)
			if (map->stripes[s].devid == fs->devices[i]->devid)
				chosen = true;
		if (chosen && hole_before[i] < smallest_chosen)
			smallest_chosen = hole_before[i];
		if (!chosen && mfs_device_allocatable(fs->devices[i]) &&
		    hole_before[i] > largest_unchosen)
			largest_unchosen = hole_before[i];
		if (chosen && stripe_size * a->dev_stripes > hole_before[i])
			FAIL("chunk %" PRIu64 ": stripes larger than devid %" PRIu64 "'s hole",
			     map->logical, fs->devices[i]->devid);
		/* degraded: no stripe over a tenth of its device (raid6 on three devices) */
		if (chosen && (mfs_fs_degraded(fs) || mfs_fs_has_failing(fs)) &&
		    stripe_size > max_t(u64, fs->devices[i]->total_bytes / 10 /
					a->dev_stripes, MFS_MIN_STRIPE_SIZE))
			FAIL("chunk %" PRIu64 " (%s): stripe %" PRIu64 " over a tenth of devid %" PRIu64,
			     map->logical, a->name, stripe_size, fs->devices[i]->devid);
	}
	if (largest_unchosen > smallest_chosen)
		FAIL("chunk %" PRIu64 " (%s): skipped a device with a larger hole",
		     map->logical, a->name);
}

struct chunk_stats {
	int ok[3][MFS_NR_RAID_TYPES];
	int enospc;
};

/*
 * One allocation attempt; checks the result against the state before.
 * Returns the engine's return code.
 */
static int try_alloc_chunk(struct mfs_fs_info *fs, u64 type, int prof, struct chunk_stats *st,
			   int max_stripe_mode)
{
	u64 flags = type | all_profiles[prof], max_stripe = 0, hole[16];
	const struct mfs_raid_attr *a = mfs_profile(flags);
	struct mfs_block_group *bg = NULL;
	struct snapshot before;
	int ret, i;

	switch (max_stripe_mode < 0 ? (int)unit_rnd_below(4) : max_stripe_mode) {
	case 0:
		max_stripe = SZ_1M * (8 + unit_rnd_below(max_stripe_mode < 0 ? 120 : 8));
		break;
	case 1:
		/* too small a stripe: must be refused */
		max_stripe = unit_rnd_below(4) ? SZ_1M * (1 + unit_rnd_below(7)) : 0;
		break;
	}
	for (i = 0; i < fs->nr_devices; i++)
		hole[i] = mfs_device_max_hole(fs->devices[i], NULL);
	snap_take(fs, &before);
	ret = mfs_alloc_chunk(fs, flags, max_stripe, &bg);
	if (ret == 0) {
		st->ok[type == MFS_BLOCK_GROUP_DATA ? 0 : type == MFS_BLOCK_GROUP_METADATA ? 1 : 2][prof]++;
		if (!bg || fs->nr_chunks != before.nr_chunks + 1) {
			FAIL("alloc %s %s: no new chunk", mfs_bg_type_name(type), a->name);
		} else {
			check_new_chunk(fs, bg, flags, max_stripe, hole);
			if (max_stripe && max_stripe < MFS_MIN_STRIPE_SIZE)
				FAIL("alloc with max stripe %" PRIu64 " succeeded", max_stripe);
		}
	} else if (ret == -ENOSPC) {
		st->enospc++;
		if (!snap_equal(fs, &before, true))
			FAIL("failed alloc %s %s changed the layout", mfs_bg_type_name(type), a->name);
		if (max_stripe == 0 || max_stripe >= MFS_MIN_STRIPE_SIZE) {
			/* refused: fewer devices with room than the profile needs */
			int eligible = 0;

			for (i = 0; i < fs->nr_devices; i++)
				if (hole[i] >= MFS_MIN_STRIPE_SIZE * a->dev_stripes)
					eligible++;
			eligible -= eligible % a->devs_increment;
			if (eligible >= a->devs_min &&
			    !((type & MFS_BLOCK_GROUP_SYSTEM) &&
			      sys_array_bytes(fs) + sizeof(struct mfs_disk_key) +
			      mfs_chunk_item_size(min_t(int, a->devs_max ? a->devs_max : 16,
							eligible) * a->dev_stripes) >
			      MFS_SYSTEM_CHUNK_ARRAY_SIZE))
				FAIL("alloc %s %s: ENOSPC with %d devices with room",
				     mfs_bg_type_name(type), a->name, eligible);
		}
	} else {
		FAIL("alloc %s %s: %d", mfs_bg_type_name(type), a->name, ret);
	}
	snap_free(&before);
	return ret;
}

static void chunk_config(const char *name, int n, const u64 *sizes_mb, u64 mkfs_meta)
{
	struct images im;
	struct mfs_fs_info *fs = NULL;
	struct mfs_trans_handle *trans = NULL;
	struct chunk_stats st = { 0 };
	struct snapshot full;
	u64 sizes[MAX_DEVS];
	int i, round, ret, t, live;

	fprintf(stderr, "# config %s:", name);
	for (i = 0; i < n; i++) {
		sizes[i] = sizes_mb[i] * SZ_1M;
		fprintf(stderr, " %" PRIu64 "M", sizes_mb[i]);
	}
	fprintf(stderr, "\n");
	ret = make_images(&im, n, sizes);
	CHECK_EQ(ret, 0);
	if (ret)
		goto out;
	ret = mkfs(&im, 0, mkfs_meta);
	CHECK_EQ(ret, 0);
	if (ret)
		goto out;
	ret = open_fs(&im, &fs);
	CHECK_EQ(ret, 0);
	if (ret)
		goto out;
	CHECK_EQ(check_layout(fs), 0);
	ret = mfs_start_transaction(fs, &trans);
	CHECK_EQ(ret, 0);
	if (ret)
		goto out;

	/* first one small chunk of each profile the devices allow */
	for (i = 0; i < 2 * MFS_NR_RAID_TYPES; i++) {
		t = i / MFS_NR_RAID_TYPES;
		if (mfs_raid_array[i % MFS_NR_RAID_TYPES].devs_min > n)
			continue;
		ret = try_alloc_chunk(fs, all_types[t], i % MFS_NR_RAID_TYPES, &st, 0);
		if (ret != 0)
			FAIL("first %s %s chunk: %d", mfs_bg_type_name(all_types[t]),
			     mfs_raid_array[i % MFS_NR_RAID_TYPES].name, ret);
	}
	CHECK_EQ(check_layout(fs), 0);

	/* rounds over every (type, profile) in random order until all fail */
	for (round = 0, live = 1; live && round < 2000; round++) {
		int order[3 * MFS_NR_RAID_TYPES];

		for (i = 0; i < 3 * MFS_NR_RAID_TYPES; i++)
			order[i] = i;
		for (i = 3 * MFS_NR_RAID_TYPES; i > 1; i--) {
			int j = unit_rnd_below(i), x = order[i - 1];

			order[i - 1] = order[j];
			order[j] = x;
		}
		live = 0;
		for (i = 0; i < 3 * MFS_NR_RAID_TYPES; i++) {
			int prof = order[i] % MFS_NR_RAID_TYPES;

			t = order[i] / MFS_NR_RAID_TYPES;
			/* a few system chunks: their items live in the superblock */
			if (t == 2 && unit_rnd_below(8))
				continue;
			ret = try_alloc_chunk(fs, all_types[t], prof, &st, -1);
			if (ret == 0 || t == 2)
				live = 1;
			if (ret != 0 && ret != -ENOSPC)
				goto out;
		}
		if (check_layout(fs))
			goto out;
	}
	/* the last attempts with policy sizes: single takes any 8 MiB hole */
	for (t = 0; t < 2; t++)
		CHECK_EQ(mfs_alloc_chunk(fs, all_types[t], 0, NULL), -ENOSPC);
	for (i = 0; i < fs->nr_devices; i++) {
		u64 hole = mfs_device_max_hole(fs->devices[i], NULL);

		if (hole >= MFS_MIN_STRIPE_SIZE)
			FAIL("devid %" PRIu64 ": %" PRIu64 " bytes hole left after ENOSPC",
			     fs->devices[i]->devid, hole);
	}
	fprintf(stderr, "# %d chunks, %d refusals; data/meta/sys by profile:", fs->nr_chunks,
		st.enospc);
	for (i = 0; i < MFS_NR_RAID_TYPES; i++)
		fprintf(stderr, " %s %d/%d/%d", mfs_raid_array[i].name, st.ok[0][i], st.ok[1][i],
			st.ok[2][i]);
	fprintf(stderr, "\n");
	/* every profile the device count allows was allocated at least once */
	for (i = 0; i < MFS_NR_RAID_TYPES; i++)
		if (mfs_raid_array[i].devs_min <= n && !st.ok[0][i] && !st.ok[1][i])
			FAIL("profile %s never allocated on %d devices", mfs_raid_array[i].name, n);

	/* the layout survives a commit and a reopen unchanged */
	snap_take(fs, &full);
	ret = mfs_commit_transaction(trans);
	trans = NULL;
	CHECK_EQ(ret, 0);
	CHECK(snap_equal(fs, &full, true));
	ret = mfs_close_fs(fs);
	fs = NULL;
	CHECK_EQ(ret, 0);
	ret = open_fs(&im, &fs);
	CHECK_EQ(ret, 0);
	if (!ret) {
		CHECK(snap_equal(fs, &full, false));
		CHECK_EQ(check_layout(fs), 0);
		for (t = 0; t < 3; t++)
			CHECK_EQ(mfs_alloc_chunk(fs, all_types[t], 0, NULL), -ENOSPC);
		CHECK(snap_equal(fs, &full, false));
	}
	snap_free(&full);
out:
	if (trans)
		mfs_end_transaction(trans);
	if (fs)
		mfs_free_fs_info(fs);
	remove_images(&im);
}

/* Sizes in MiB; several are over 65 MiB so the 64 MiB mirror lies inside. */
static void test_chunks_1dev(void)
{
	static const u64 s[] = { 3000 };

	seed_for("chunks1");
	chunk_config("1 device", 1, s, 0);
}

static void test_chunks_2dev(void)
{
	static const u64 s[] = { 700, 2048 };

	seed_for("chunks2");
	chunk_config("2 devices", 2, s, MFS_BLOCK_GROUP_RAID1);
}

static void test_chunks_3dev(void)
{
	static const u64 s[] = { 1024, 3072, 300 };

	seed_for("chunks3");
	chunk_config("3 devices", 3, s, MFS_BLOCK_GROUP_RAID1);
}

static void test_chunks_4dev(void)
{
	static const u64 s[] = { 2048, 2048, 2048, 130 };

	seed_for("chunks4");
	chunk_config("4 devices", 4, s, MFS_BLOCK_GROUP_RAID1C3);
}

static void test_chunks_5dev(void)
{
	/* one device past 256 GiB: the third superblock copy is inside it */
	static const u64 s[] = { 5000, 1000, 260 * 1024 + 7, 400, 3000 };

	seed_for("chunks5");
	chunk_config("5 devices", 5, s, MFS_BLOCK_GROUP_RAID6);
}

static void test_chunks_6dev(void)
{
	static const u64 s[] = { 10240, 512, 2048, 2048, 129, 4096 };

	seed_for("chunks6");
	chunk_config("6 devices", 6, s, MFS_BLOCK_GROUP_RAID10);
}

/*
 * System chunks are also listed in the superblock's 2 KiB bootstrap array:
 * a system chunk that does not fit there must be refused when it is
 * allocated, not discovered by the commit that cannot write it.
 */
static void test_system_array_full(void)
{
	static const u64 s[] = { 4096, 4096, 4096, 4096, 4096, 4096 };
	struct images im;
	struct mfs_fs_info *fs = NULL;
	struct mfs_trans_handle *trans = NULL;
	u64 sizes[MAX_DEVS];
	int i, ret, ok = 0;

	seed_for("sysarray");
	for (i = 0; i < 6; i++)
		sizes[i] = s[i] * SZ_1M;
	ret = make_images(&im, 6, sizes);
	if (!ret)
		ret = mkfs(&im, 0, MFS_BLOCK_GROUP_RAID1);
	if (!ret)
		ret = open_fs(&im, &fs);
	CHECK_EQ(ret, 0);
	if (ret)
		goto out;
	ret = mfs_start_transaction(fs, &trans);
	CHECK_EQ(ret, 0);
	if (ret)
		goto out;
	/* six-stripe chunks take 257 bytes of the array each */
	for (i = 0; i < 12; i++) {
		struct snapshot before;

		snap_take(fs, &before);
		ret = mfs_alloc_chunk(fs, MFS_BLOCK_GROUP_SYSTEM | MFS_BLOCK_GROUP_RAID6,
				      SZ_8M, NULL);
		if (ret == 0)
			ok++;
		else if (!snap_equal(fs, &before, true))
			FAIL("refused system chunk changed the layout");
		snap_free(&before);
		if (ret && ret != -ENOSPC)
			FAIL("system chunk %d: %d", i, ret);
		if (sys_array_bytes(fs) > MFS_SYSTEM_CHUNK_ARRAY_SIZE)
			FAIL("%d system chunks take %" PRIu64 " bytes of the %d byte array",
			     fs->nr_chunks, sys_array_bytes(fs), MFS_SYSTEM_CHUNK_ARRAY_SIZE);
		if (ret)
			break;
	}
	CHECK(ok >= 1);
	CHECK_EQ(check_layout(fs), 0);
	ret = mfs_commit_transaction(trans);
	trans = NULL;
	CHECK_EQ(ret, 0);
	if (!ret) {
		ret = mfs_close_fs(fs);
		fs = NULL;
		CHECK_EQ(ret, 0);
		ret = open_fs(&im, &fs);
		CHECK_EQ(ret, 0);
		if (!ret)
			CHECK_EQ(check_layout(fs), 0);
	}
out:
	if (trans)
		mfs_end_transaction(trans);
	if (fs)
		mfs_free_fs_info(fs);
	remove_images(&im);
}

/* ---------------- extent allocation ---------------- */

/*
 * A sector bitmap over the logical space: which sectors are handed out
 * (live or freed but pinned), and which hold data the last commit
 * references.
 */
struct space {
	u64 nsect;
	u8 *owned;
	u8 *committed;
};

struct ext {
	u64 start, len;
	bool tree;		/* tree block (else data) */
	u64 root;		/* tree blocks: owning tree */
	u64 transid;		/* allocated in */
	u32 pattern;		/* data written, 0 = none */
};

struct ext_ctx {
	struct images im;
	struct mfs_fs_info *fs;
	struct mfs_trans_handle *trans;
	struct space sp;
	struct ext *live;
	int nlive, maxlive;
	struct ext *pinned;	/* freed, space not reusable before the commit */
	int npinned, maxpinned;
	u64 data_profile, meta_profile;
	u64 allocs, frees, commits, reopens, raid56_checks;
	u8 *buf, *buf2;
	int fail_base;
};

static struct ext_ctx X;

/* One bug tends to cascade: stop a test after a screenful. */
static bool ext_too_many_failures(void)
{
	return unit_failed_checks - X.fail_base >= 30;
}

static void space_fit(void)
{
	struct mfs_chunk_map *last = X.fs->chunks[X.fs->nr_chunks - 1];
	u64 n = (last->logical + last->length) / 4096;

	if (n <= X.sp.nsect)
		return;
	X.sp.owned = realloc(X.sp.owned, n);
	X.sp.committed = realloc(X.sp.committed, n);
	memset(X.sp.owned + X.sp.nsect, 0, n - X.sp.nsect);
	memset(X.sp.committed + X.sp.nsect, 0, n - X.sp.nsect);
	X.sp.nsect = n;
}

static void space_mark(u64 start, u64 len, u8 *map, u8 v)
{
	memset(map + start / 4096, v, len / 4096);
}

static bool space_any(u64 start, u64 len, const u8 *map)
{
	u64 i;

	for (i = start / 4096; i < (start + len) / 4096; i++)
		if (map[i])
			return true;
	return false;
}

static void pattern_fill(u8 *buf, u64 start, u64 len, u32 pattern)
{
	u64 i;

	for (i = 0; i < len; i += 8) {
		u64 w = unit_mix64(start + i + ((u64)pattern << 40));

		memcpy(buf + i, &w, 8);
	}
}

/* A fresh range from the engine: check it against everything handed out. */
static bool check_new_range(u64 start, u64 len, u64 type, u64 align)
{
	struct mfs_block_group *bg = mfs_lookup_block_group(X.fs, start);
	bool ok = true;

	space_fit();
	if (!bg || start + len > bg->start + bg->length) {
		FAIL("range [%" PRIu64 ", +%" PRIu64 ") not inside one block group", start, len);
		return false;
	}
	if ((bg->flags & MFS_BLOCK_GROUP_TYPE_MASK) != type) {
		FAIL("range %" PRIu64 " in a %s block group, wanted %s", start,
		     mfs_bg_type_name(bg->flags), mfs_bg_type_name(type));
		ok = false;
	}
	if (bg->ro) {
		FAIL("range %" PRIu64 " in a read-only block group", start);
		ok = false;
	}
	if (start % align || len % X.fs->sectorsize || !len) {
		FAIL("range [%" PRIu64 ", +%" PRIu64 ") misaligned (align %" PRIu64 ")",
		     start, len, align);
		return false;
	}
	if (space_any(start, len, X.sp.owned)) {
		FAIL("range [%" PRIu64 ", +%" PRIu64 ") overlaps one handed out", start, len);
		ok = false;
	}
	if (mfs_profile(bg->flags)->nparity) {
		/* no-write-hole: the rows it touches hold no committed data */
		u64 row_len = bg->row_len, first, last, r;

		first = (start - bg->start) / row_len;
		last = (start + len - 1 - bg->start) / row_len;
		X.raid56_checks++;
		for (r = first; r <= last; r++) {
			u64 rs = bg->start + r * row_len;

			if (space_any(rs, min_t(u64, row_len, bg->start + bg->length - rs),
				      X.sp.committed)) {
				FAIL("range [%" PRIu64 ", +%" PRIu64 ") lands in row %" PRIu64
				     " of %s bg %" PRIu64 " that holds committed data",
				     start, len, r, mfs_profile(bg->flags)->name, bg->start);
				ok = false;
				break;
			}
		}
	}
	space_mark(start, len, X.sp.owned, 1);
	return ok;
}

static void live_add(const struct ext *e)
{
	if (X.nlive == X.maxlive) {
		X.maxlive = X.maxlive ? X.maxlive * 2 : 1024;
		X.live = realloc(X.live, X.maxlive * sizeof(*X.live));
	}
	X.live[X.nlive++] = *e;
}

static u64 ext_root_type(u64 root)
{
	return root == MFS_CHUNK_TREE_OBJECTID ? MFS_BLOCK_GROUP_SYSTEM : MFS_BLOCK_GROUP_METADATA;
}

static void alloc_tree_block(void)
{
	struct ext e = { 0 };
	int ret;

	e.root = unit_rnd_below(8) ? MFS_FS_TREE_OBJECTID : MFS_CHUNK_TREE_OBJECTID;
	ret = mfs_alloc_tree_block(X.trans, e.root, unit_rnd_below(3), &e.start);
	if (ret) {
		FAIL("alloc tree block for tree %" PRIu64 ": %d", e.root, ret);
		return;
	}
	X.allocs++;
	e.len = X.fs->nodesize;
	e.tree = true;
	e.transid = X.trans->transid;
	check_new_range(e.start, e.len, ext_root_type(e.root), X.fs->nodesize);
	live_add(&e);
}

static void alloc_data(void)
{
	struct ext e = { 0 };
	u64 len = 4096 * (1 + unit_rnd_below(unit_rnd_below(16) ? 16 : 256));
	u64 min_len = unit_rnd_below(2) ? len : 4096 * (1 + unit_rnd_below(len / 4096));
	u64 got;
	int ret;

	ret = mfs_reserve_data_extent(X.trans, len, min_len, &e.start, &got);
	if (ret) {
		FAIL("reserve data %" PRIu64 " (min %" PRIu64 "): %d", len, min_len, ret);
		return;
	}
	X.allocs++;
	if (got < min_len || got > len)
		FAIL("reserve data %" PRIu64 " (min %" PRIu64 "): got %" PRIu64, len, min_len, got);
	e.len = got;
	e.transid = X.trans->transid;
	if (!check_new_range(e.start, e.len, MFS_BLOCK_GROUP_DATA, X.fs->sectorsize))
		return;
	if (unit_rnd_below(5) == 0) {
		/* never used: the reservation goes straight back */
		mfs_unreserve_extent(X.fs, e.start, e.len);
		space_mark(e.start, e.len, X.sp.owned, 0);
		return;
	}
	ret = mfs_add_data_ref(X.trans, e.start, e.len, MFS_FS_TREE_OBJECTID, 257, e.start);
	if (ret) {
		FAIL("add data ref: %d", ret);
		return;
	}
	/* write most data so that raid5/6 rows and their parity are exercised */
	if (unit_rnd_below(4)) {
		e.pattern = 1 + unit_rnd_below(1U << 20);
		pattern_fill(X.buf, e.start, e.len, e.pattern);
		ret = mfs_write_logical(X.fs, e.start, X.buf, e.len);
		if (ret)
			FAIL("write data [%" PRIu64 ", +%" PRIu64 "): %d", e.start, e.len, ret);
	}
	live_add(&e);
}

static void free_random(void)
{
	int i = unit_rnd_below(X.nlive);
	struct ext e = X.live[i];
	int ret;

	X.live[i] = X.live[--X.nlive];
	ret = mfs_free_extent(X.trans, e.start, e.len);
	if (ret) {
		FAIL("free extent %" PRIu64 ": %d", e.start, ret);
		return;
	}
	X.frees++;
	if (e.transid == X.trans->transid) {
		/* never committed: reusable at once */
		space_mark(e.start, e.len, X.sp.owned, 0);
		return;
	}
	if (X.npinned == X.maxpinned) {
		X.maxpinned = X.maxpinned ? X.maxpinned * 2 : 1024;
		X.pinned = realloc(X.pinned, X.maxpinned * sizeof(*X.pinned));
	}
	X.pinned[X.npinned++] = e;
}

/* Read back every written live extent through each of its copies. */
static void verify_data(void)
{
	int i, bad = 0;

	for (i = 0; i < X.nlive && bad < 5; i++) {
		struct ext *e = &X.live[i];
		struct mfs_chunk_map *map = mfs_find_chunk(X.fs, e->start);
		int ret, mirror, copies = map ? mfs_num_copies(map) : 1;

		if (!e->pattern)
			continue;
		pattern_fill(X.buf, e->start, e->len, e->pattern);
		for (mirror = 1; mirror <= copies && bad < 5; mirror++) {
			ret = mfs_read_logical(X.fs, e->start, X.buf2, e->len, mirror);
			if (ret || memcmp(X.buf, X.buf2, e->len)) {
				u64 off = 0;

				while (!ret && off < e->len && X.buf[off] == X.buf2[off])
					off++;
				FAIL("data [%" PRIu64 ", +%" PRIu64 ") (transid %" PRIu64
				     ", %s) mirror %d: ret %d, differs at +%" PRIu64,
				     e->start, e->len, e->transid,
				     map ? mfs_profile(map->type)->name : "?", mirror, ret, off);
				bad++;
			}
		}
	}
}

static int cmp_ext(const void *a, const void *b)
{
	const struct ext *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * With nothing pending: extent items never overlap, sit in block groups
 * of their kind, and each live extent of ours has its item.
 */
static void check_extent_tree(void)
{
	struct mfs_key key = { 0, 0, 0 };
	struct mfs_path path;
	u64 prev_end = 0;
	int ret, j = 0, bad = 0;

	qsort(X.live, X.nlive, sizeof(*X.live), cmp_ext);
	mfs_init_path(&path);
	ret = mfs_search_forward(X.fs->extent_root, &key, &path);
	while (ret == 0 && bad < 10) {
		struct extent_buffer *leaf = path.nodes[0];
		struct mfs_extent_item *ei;
		struct mfs_block_group *bg;
		u64 want;

		leaf_item_key(leaf, path.slots[0], &key);
		if (key.type != MFS_EXTENT_ITEM_KEY)
			goto next;
		ei = leaf_item_data(leaf, path.slots[0]);
		bg = mfs_lookup_block_group(X.fs, key.objectid);
		want = le64_to_cpu(ei->flags) & MFS_EXTENT_FLAG_DATA ? MFS_BLOCK_GROUP_DATA :
		       ext_root_type(le64_to_cpu(ei->owner_root));
		if (key.objectid < prev_end) {
			FAIL("extent items overlap at %" PRIu64, key.objectid);
			bad++;
		}
		if (!bg || key.objectid + key.offset > bg->start + bg->length ||
		    (bg->flags & MFS_BLOCK_GROUP_TYPE_MASK) != want) {
			FAIL("extent [%" PRIu64 ", +%" PRIu64 ") not in a %s block group",
			     key.objectid, key.offset, mfs_bg_type_name(want));
			bad++;
		}
		prev_end = key.objectid + key.offset;
		while (j < X.nlive && X.live[j].start < key.objectid) {
			FAIL("live extent %" PRIu64 " has no extent item", X.live[j].start);
			bad++;
			j++;
		}
		if (j < X.nlive && X.live[j].start == key.objectid) {
			if (X.live[j].len != key.offset) {
				FAIL("extent item %" PRIu64 ": %" PRIu64 " bytes, we had %" PRIu64,
				     key.objectid, key.offset, X.live[j].len);
				bad++;
			}
			j++;
		}
next:
		ret = mfs_next_item(X.fs->extent_root, &path);
	}
	mfs_release_path(&path);
	if (ret < 0)
		FAIL("extent tree walk: %d", ret);
	if (j < X.nlive && bad < 10)
		FAIL("live extent %" PRIu64 " has no extent item", X.live[j].start);
}

static int ext_commit(void)
{
	int ret, i;

	ret = mfs_commit_transaction(X.trans);
	X.trans = NULL;
	X.commits++;
	if (ret) {
		FAIL("commit: %d", ret);
		return ret;
	}
	/* pinned space is free now; what is live is what the disk references */
	for (i = 0; i < X.npinned; i++)
		space_mark(X.pinned[i].start, X.pinned[i].len, X.sp.owned, 0);
	X.npinned = 0;
	memset(X.sp.committed, 0, X.sp.nsect);
	for (i = 0; i < X.nlive; i++)
		space_mark(X.live[i].start, X.live[i].len, X.sp.committed, 1);
	return mfs_start_transaction(X.fs, &X.trans);
}

static void set_profiles(void)
{
	X.fs->data_profile = X.data_profile;
	X.fs->metadata_profile = X.meta_profile;
}

/* Block group sanity with nothing pending (right after a commit or open). */
static void check_bgs(bool expect_data_empty)
{
	int i;

	for (i = 0; i < X.fs->nr_bgs; i++) {
		struct mfs_block_group *bg = X.fs->bgs[i];
		u64 free = mfs_free_space_total(bg);
		bool raid56 = mfs_profile(bg->flags)->nparity;

		if (raid56 ? bg->used + free > bg->length : bg->used + free != bg->length)
			FAIL("bg %" PRIu64 " (%s): used %" PRIu64 " + free %" PRIu64
			     " vs length %" PRIu64, bg->start, mfs_profile(bg->flags)->name,
			     bg->used, free, bg->length);
		if (expect_data_empty && (bg->flags & MFS_BLOCK_GROUP_DATA) &&
		    (bg->used || free != bg->length))
			FAIL("data bg %" PRIu64 " (%s): used %" PRIu64 " free %" PRIu64
			     " of %" PRIu64 " after freeing everything", bg->start,
			     mfs_profile(bg->flags)->name, bg->used, free, bg->length);
	}
}

static int ext_reopen(void)
{
	int ret = ext_commit();

	if (ret)
		return ret;
	mfs_end_transaction(X.trans);
	X.trans = NULL;
	ret = mfs_close_fs(X.fs);
	X.fs = NULL;
	if (ret) {
		FAIL("close: %d", ret);
		return ret;
	}
	ret = open_fs(&X.im, &X.fs);
	if (ret) {
		FAIL("reopen: %d", ret);
		return ret;
	}
	X.reopens++;
	set_profiles();
	check_bgs(false);
	check_extent_tree();
	verify_data();
	return mfs_start_transaction(X.fs, &X.trans);
}

/*
 * Random tree-block and data allocations, frees, commits and reopens
 * under each data profile the devices allow.
 */
static void extent_config(const char *name, int n, u64 dev_size, u64 meta,
			  const u64 *data_profiles, int nprof, int ops_per_profile)
{
	int p, i, ret;
	u64 sizes[MAX_DEVS];

	fprintf(stderr, "# extents %s: %d devices of %" PRIu64 " MiB\n", name, n, dev_size >> 20);
	memset(&X, 0, sizeof(X));
	X.fail_base = unit_failed_checks;
	X.buf = malloc(SZ_1M + 4096);
	X.buf2 = malloc(SZ_1M + 4096);
	for (i = 0; i < n; i++)
		sizes[i] = dev_size;
	ret = make_images(&X.im, n, sizes);
	CHECK_EQ(ret, 0);
	if (!ret)
		ret = mkfs(&X.im, 0, meta);
	CHECK_EQ(ret, 0);
	if (!ret)
		ret = open_fs(&X.im, &X.fs);
	CHECK_EQ(ret, 0);
	if (ret)
		goto out;
	X.meta_profile = meta;
	ret = mfs_start_transaction(X.fs, &X.trans);
	if (ret)
		goto out;
	for (p = 0; p < nprof; p++) {
		const struct mfs_raid_attr *a = mfs_profile(data_profiles[p]);
		u64 checks_before = X.raid56_checks;

		X.data_profile = data_profiles[p];
		set_profiles();
		if (ext_too_many_failures())
			break;
		for (i = 0; i < ops_per_profile && !ext_too_many_failures(); i++) {
			u32 r = unit_rnd_below(100);

			/* around 600 live extents */
			if (X.nlive > 600 && r < 65)
				r = 65;
			if (unit_rnd_below(150) == 0) {
				/* every eighth commit closes and reopens */
				if (X.commits % 8 == 7 ? ext_reopen() : ext_commit())
					goto out;
				if (unit_rnd_below(4) == 0)
					verify_data();
			} else if (r < 30) {
				alloc_tree_block();
			} else if (r < 65) {
				alloc_data();
			} else if (X.nlive) {
				free_random();
			}
		}
		if (a->nparity && X.raid56_checks == checks_before)
			FAIL("%s: no allocation reached a %s block group", name, a->name);
		fprintf(stderr, "# %s: %" PRIu64 " allocs, %" PRIu64 " frees, %" PRIu64
			" commits, %" PRIu64 " reopens, %d live\n", a->name, X.allocs,
			X.frees, X.commits, X.reopens, X.nlive);
		if (ext_reopen())
			goto out;
	}

	/* everything goes; after two commits every data block group is empty */
	if (ext_too_many_failures())
		goto out;
	while (X.nlive)
		free_random();
	if (ext_commit() || ext_commit())
		goto out;
	check_bgs(true);
	if (ext_reopen())
		goto out;
	check_bgs(true);
	CHECK_EQ(check_layout(X.fs), 0);
out:
	if (X.trans)
		mfs_end_transaction(X.trans);
	if (X.fs)
		CHECK_EQ(mfs_close_fs(X.fs), 0);
	remove_images(&X.im);
	free(X.sp.owned);
	free(X.sp.committed);
	free(X.live);
	free(X.pinned);
	free(X.buf);
	free(X.buf2);
}

static void test_extents_4dev(void)
{
	static const u64 prof[] = {
		0, MFS_BLOCK_GROUP_DUP, MFS_BLOCK_GROUP_RAID1, MFS_BLOCK_GROUP_RAID5,
		MFS_BLOCK_GROUP_RAID0, MFS_BLOCK_GROUP_RAID10, MFS_BLOCK_GROUP_RAID6,
		MFS_BLOCK_GROUP_RAID1C3, MFS_BLOCK_GROUP_RAID1C4,
	};

	seed_for("extents4");
	extent_config("4 devices", 4, 2 * SZ_1G, MFS_BLOCK_GROUP_RAID1, prof,
		      ARRAY_SIZE(prof), 4000);
}

/* Wide raid5/6 rows, and raid5/6 metadata too. */
static void test_extents_raid56_meta(void)
{
	static const u64 prof[] = { MFS_BLOCK_GROUP_RAID6, MFS_BLOCK_GROUP_RAID5 };

	seed_for("extents6");
	extent_config("6 devices raid6 metadata", 6, 2 * SZ_1G, MFS_BLOCK_GROUP_RAID6,
		      prof, ARRAY_SIZE(prof), 8000);
}

/*
 * raid5/6 regression: a row that filled up is written out at once; space
 * freed in it later in the same transaction must not be handed out again,
 * because writing the new extent would rewrite the whole row from a buffer
 * that holds only the new bytes and wipe the live extents beside it.
 */
static void test_raid56_reuse_in_transaction(void)
{
	static const u64 profiles[] = { MFS_BLOCK_GROUP_RAID5, MFS_BLOCK_GROUP_RAID6 };
	unsigned int p;

	seed_for("raid56reuse");
	for (p = 0; p < ARRAY_SIZE(profiles); p++) {
		struct images im;
		struct mfs_fs_info *fs = NULL;
		struct mfs_trans_handle *trans = NULL;
		struct mfs_block_group *bg;
		u64 sizes[4] = { SZ_1G, SZ_1G, SZ_1G, SZ_1G };
		u64 a, b, c, got, row_len, alen;
		u8 *pa = NULL, *pc = NULL, *rd = NULL;
		int ret;

		ret = make_images(&im, 4, sizes);
		if (!ret)
			ret = mkfs(&im, profiles[p], MFS_BLOCK_GROUP_RAID1);
		if (!ret)
			ret = open_fs(&im, &fs);
		CHECK_EQ(ret, 0);
		if (ret)
			goto next;
		ret = mfs_start_transaction(fs, &trans);
		CHECK_EQ(ret, 0);
		if (ret)
			goto next;
		/* the first row of the (empty) data chunk: A and B fill it */
		ret = mfs_reserve_data_extent(trans, 4096, 4096, &a, &got);
		CHECK_EQ(ret, 0);
		bg = ret ? NULL : mfs_lookup_block_group(fs, a);
		if (!bg || !(bg->flags & profiles[p]) || a != bg->start) {
			FAIL("unexpected first data extent %" PRIu64, a);
			goto next;
		}
		mfs_unreserve_extent(fs, a, 4096);
		row_len = bg->row_len;
		alen = row_len - 4096;
		ret = mfs_reserve_data_extent(trans, alen, alen, &a, &got);
		if (!ret)
			ret = mfs_reserve_data_extent(trans, 4096, 4096, &b, &got);
		CHECK_EQ(ret, 0);
		if (ret || a != bg->start || b != a + alen) {
			FAIL("row not filled as expected: a %" PRIu64 " b %" PRIu64, a, b);
			goto next;
		}
		pa = malloc(alen);
		pc = malloc(alen);
		rd = malloc(alen);
		pattern_fill(pa, a, alen, 1);
		pattern_fill(pc, b, 4096, 2);
		CHECK_EQ(mfs_add_data_ref(trans, a, alen, MFS_FS_TREE_OBJECTID, 257, 0), 0);
		CHECK_EQ(mfs_add_data_ref(trans, b, 4096, MFS_FS_TREE_OBJECTID, 258, 0), 0);
		CHECK_EQ(mfs_write_logical(fs, a, pa, alen), 0);
		CHECK_EQ(mfs_write_logical(fs, b, pc, 4096), 0);	/* the row is full: out it goes */
		/* B goes away in the same transaction, and something new comes */
		CHECK_EQ(mfs_free_extent(trans, b, 4096), 0);
		ret = mfs_reserve_data_extent(trans, 4096, 4096, &c, &got);
		CHECK_EQ(ret, 0);
		if (ret)
			goto next;
		if (c >= bg->start && c < bg->start + row_len)
			FAIL("%s: freed space of a written row was handed out again (%" PRIu64 ")",
			     mfs_profile(profiles[p])->name, c);
		pattern_fill(pc, c, 4096, 3);
		CHECK_EQ(mfs_add_data_ref(trans, c, 4096, MFS_FS_TREE_OBJECTID, 259, 0), 0);
		CHECK_EQ(mfs_write_logical(fs, c, pc, 4096), 0);
		ret = mfs_commit_transaction(trans);
		trans = NULL;
		CHECK_EQ(ret, 0);
		if (ret)
			goto next;
		ret = mfs_close_fs(fs);
		fs = NULL;
		CHECK_EQ(ret, 0);
		ret = open_fs(&im, &fs);
		CHECK_EQ(ret, 0);
		if (ret)
			goto next;
		for (ret = 1; ret <= 1 + mfs_profile(profiles[p])->nparity; ret++) {
			CHECK_EQ(mfs_read_logical(fs, a, rd, alen, ret), 0);
			if (memcmp(rd, pa, alen))
				FAIL("%s: extent A lost its data (mirror %d)",
				     mfs_profile(profiles[p])->name, ret);
			CHECK_EQ(mfs_read_logical(fs, c, rd, 4096, ret), 0);
			if (memcmp(rd, pc, 4096))
				FAIL("%s: extent C lost its data (mirror %d)",
				     mfs_profile(profiles[p])->name, ret);
		}
next:
		if (trans)
			mfs_end_transaction(trans);
		if (fs)
			mfs_free_fs_info(fs);
		free(pa);
		free(pc);
		free(rd);
		remove_images(&im);
	}
}

/*
 * Data space runs out with -ENOSPC once every device is full, and all of
 * it comes back when the reservations are given back.
 */
static void test_data_enospc(void)
{
	struct images im;
	struct mfs_fs_info *fs = NULL;
	struct mfs_trans_handle *trans = NULL;
	u64 sizes[3] = { 300 * SZ_1M, 700 * SZ_1M, 1200 * SZ_1M };
	u64 starts[4096], lens[4096], got, total = 0;
	int n = 0, ret, i;

	seed_for("enospc");
	ret = make_images(&im, 3, sizes);
	if (!ret)
		ret = mkfs(&im, MFS_BLOCK_GROUP_RAID5, MFS_BLOCK_GROUP_RAID1);
	if (!ret)
		ret = open_fs(&im, &fs);
	CHECK_EQ(ret, 0);
	if (ret)
		goto out;
	ret = mfs_start_transaction(fs, &trans);
	CHECK_EQ(ret, 0);
	if (ret)
		goto out;
	for (;;) {
		u64 len = SZ_1M * (1 + unit_rnd_below(64));

		if (n == (int)ARRAY_SIZE(starts)) {
			FAIL("no ENOSPC after %d reservations", n);
			break;
		}
		ret = mfs_reserve_data_extent(trans, len, 4096, &starts[n], &got);
		if (ret)
			break;
		lens[n++] = got;
		total += got;
	}
	CHECK_EQ(ret, -ENOSPC);
	CHECK_EQ(check_layout(fs), 0);
	/* raid5 needs two devices with room; at most one may have some left */
	for (i = 0, ret = 0; i < fs->nr_devices; i++)
		if (mfs_device_max_hole(fs->devices[i], NULL) >= MFS_MIN_STRIPE_SIZE)
			ret++;
	CHECK(ret < 2);
	for (i = 0; i < fs->nr_bgs; i++)
		if (fs->bgs[i]->flags & MFS_BLOCK_GROUP_DATA)
			CHECK_EQ(mfs_free_space_total(fs->bgs[i]), 0);
	fprintf(stderr, "# reserved %" PRIu64 " MiB of data in %d extents before ENOSPC\n",
		total >> 20, n);
	/*
	 * 300+700+1200 MiB, less 228 MiB of raid1 metadata and system on the
	 * two large ones: 3-wide raid5 until the small device is full (2 x
	 * ~290 MiB of data), then 2-wide until the middle one is (~180 MiB).
	 */
	CHECK(total >= 700 * SZ_1M);
	for (i = 0; i < n; i++)
		mfs_unreserve_extent(fs, starts[i], lens[i]);
	for (i = 0; i < fs->nr_bgs; i++) {
		struct mfs_block_group *bg = fs->bgs[i];

		if (bg->flags & MFS_BLOCK_GROUP_DATA) {
			CHECK_EQ(mfs_free_space_total(bg), bg->length);
			CHECK_EQ(bg->reserved, 0);
		}
	}
	ret = mfs_commit_transaction(trans);
	trans = NULL;
	CHECK_EQ(ret, 0);
out:
	if (trans)
		mfs_end_transaction(trans);
	if (fs)
		CHECK_EQ(mfs_close_fs(fs), 0);
	remove_images(&im);
}

/*
 * Space between chunks that no stripe fits in is not capacity: with the
 * unallocated space in 12 MiB holes, a dup chunk (both stripes in one
 * hole, 8 MiB at least) fits nowhere, and the capacity the space
 * reservation counts on must say so (it summed the holes, admitted
 * writes whose commit then failed with ENOSPC).
 */
static int cmp_map_physical(const void *a, const void *b)
{
	const struct mfs_chunk_map *x = *(struct mfs_chunk_map *const *)a;
	const struct mfs_chunk_map *y = *(struct mfs_chunk_map *const *)b;

	return x->stripes[0].physical < y->stripes[0].physical ? -1 :
	       x->stripes[0].physical > y->stripes[0].physical;
}

static void test_capacity_of_fragments(void)
{
	static const u64 sizes[1] = { 256 * SZ_1M };
	struct mfs_chunk_map *maps[64], *map;
	static const u64 flags[2] = { MFS_BLOCK_GROUP_METADATA | MFS_BLOCK_GROUP_DUP,
				      MFS_BLOCK_GROUP_DATA };
	struct mfs_fs_info *fs;
	struct images im;
	int n = 0, i, ret;
	u64 cap;

	if (make_images(&im, 1, sizes) || mkfs(&im, 0, MFS_BLOCK_GROUP_DUP) || open_fs(&im, &fs)) {
		FAIL("mkfs/open");
		remove_images(&im);
		return;
	}
	while (n < 64 && mfs_place_chunk(fs, MFS_BLOCK_GROUP_DATA, 12 * SZ_1M, &maps[n]) == 0)
		n++;
	/* every other one in the order they lie on the device: 12 MiB holes */
	qsort(maps, n, sizeof(*maps), cmp_map_physical);
	for (i = 0; i < n; i += 2)
		mfs_unplace_chunk(fs, maps[i]);
	for (i = 0; i < 2; i++) {
		cap = mfs_simulate_alloc(fs, flags[i]);
		ret = mfs_place_chunk(fs, flags[i], 0, &map);
		if ((cap > 0) != (ret == 0))
			FAIL("%s: capacity %" PRIu64 " but a new chunk: %d",
			     mfs_profile(flags[i])->name, cap, ret);
		if (!ret)
			mfs_unplace_chunk(fs, map);
	}
	/* take every hole a dup chunk fits in: the fragments left give nothing */
	while (mfs_place_chunk(fs, flags[0], 0, &map) == 0)
		;
	CHECK_EQ(mfs_simulate_alloc(fs, flags[0]), 0);
	mfs_free_fs_info(fs);
	remove_images(&im);
}

/*
 * A member failed (raid6 on 4 x 512 MiB): the chunks made on the other
 * three carry each byte three times; none takes more than a tenth of a
 * device, so a nearly empty metadata chunk leaves an interrupted balance
 * room to go on (the fault sweep's D1: it took 203 MiB of each).
 */
static void test_failed_member_chunk_size(void)
{
	static const u64 sizes[4] = { 512 * SZ_1M, 512 * SZ_1M, 512 * SZ_1M, 512 * SZ_1M };
	struct mfs_block_group *bg;
	struct mfs_fs_info *fs;
	struct images im;
	u64 stripe;

	if (make_images(&im, 4, sizes) || mkfs(&im, MFS_BLOCK_GROUP_RAID6, MFS_BLOCK_GROUP_RAID6) ||
	    open_fs(&im, &fs)) {
		FAIL("mkfs/open");
		remove_images(&im);
		return;
	}
	fs->devices[3]->failed = true;
	CHECK_EQ(mfs_alloc_chunk(fs, MFS_BLOCK_GROUP_METADATA | MFS_BLOCK_GROUP_RAID6, 0, &bg), 0);
	CHECK_EQ(bg->map->num_stripes, 3);
	stripe = bg->map->length / mfs_nr_data_stripes(bg->map->type, bg->map->num_stripes);
	if (stripe > 512 * SZ_1M / 10)
		FAIL("raid6 on three devices: stripe %" PRIu64 " over a tenth of a device", stripe);
	check_layout(fs);
	mfs_free_fs_info(fs);
	remove_images(&im);
}

/*
 * Mark every System block group reduced with the profile asked for (0: an
 * item from before that field), commit, reopen: the system profile new
 * chunks get afterwards.
 */
static u64 system_profile_after_reduced(struct images *im, u64 asked)
{
	struct mfs_trans_handle *trans;
	struct mfs_fs_info *fs;
	u64 profile = (u64)-1;
	int i;

	if (open_fs(im, &fs)) {
		FAIL("open");
		return profile;
	}
	for (i = 0; i < fs->nr_bgs; i++)
		if (fs->bgs[i]->flags & MFS_BLOCK_GROUP_SYSTEM) {
			fs->bgs[i]->reduced = true;
			fs->bgs[i]->asked = asked;
			fs->bgs[i]->dirty = true;
		}
	if (mfs_start_transaction(fs, &trans) || mfs_commit_transaction(trans))
		FAIL("commit");
	if (mfs_close_fs(fs) || open_fs(im, &fs)) {
		FAIL("reopen");
		return profile;
	}
	for (i = 0; i < fs->nr_bgs; i++)
		if ((fs->bgs[i]->flags & MFS_BLOCK_GROUP_SYSTEM) &&
		    (!fs->bgs[i]->reduced || fs->bgs[i]->asked != asked))
			FAIL("system block group %" PRIu64 ": reduced %d asked %#" PRIx64 ", wrote %#" PRIx64,
			     fs->bgs[i]->start, fs->bgs[i]->reduced, fs->bgs[i]->asked, asked);
	profile = fs->system_profile;
	mfs_close_fs(fs);
	return profile;
}

/*
 * A reduced chunk's block group item keeps the profile asked for (format
 * §7.4): once every chunk of a type is reduced, the filesystem still asks
 * for that profile, not for the reduced one it sees.
 */
static void test_reduced_keeps_asked_profile(void)
{
	static const u64 sizes[3] = { SZ_1G, SZ_1G, SZ_1G };
	struct images im;

	if (make_images(&im, 3, sizes) || mkfs(&im, MFS_BLOCK_GROUP_RAID1, MFS_BLOCK_GROUP_RAID1)) {
		FAIL("mkfs");
		remove_images(&im);
		return;
	}
	/* the System chunks are raid1, standing in for raid1c3 */
	CHECK_EQ(system_profile_after_reduced(&im, MFS_BLOCK_GROUP_RAID1C3), MFS_BLOCK_GROUP_RAID1C3);
	/* not recorded (an item written before the field): what the chunks are */
	CHECK_EQ(system_profile_after_reduced(&im, 0), MFS_BLOCK_GROUP_RAID1);
	remove_images(&im);
}

int main(void)
{
	RUN(test_chunks_1dev);
	RUN(test_chunks_2dev);
	RUN(test_chunks_3dev);
	RUN(test_chunks_4dev);
	RUN(test_chunks_5dev);
	RUN(test_chunks_6dev);
	RUN(test_system_array_full);
	RUN(test_raid56_reuse_in_transaction);
	RUN(test_data_enospc);
	RUN(test_extents_4dev);
	RUN(test_extents_raid56_meta);
	RUN(test_reduced_keeps_asked_profile);
	RUN(test_failed_member_chunk_size);
	RUN(test_capacity_of_fragments);
	UNIT_EXIT();
}
