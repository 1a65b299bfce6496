/*
 * Device health: mfs_chunk_failures_left (what filesystem status sorts
 * into full, reduced, none and lost) against a brute-force reference, for
 * every profile, stripe count and set of lost devices; mfs_device_health's
 * order of states; the failing threshold of mfs_dev_count_error.
 */
#include <stdlib.h>

#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/format/ioctl.h"
#include "unit.h"

#define MAX_STRIPES	6

/* The profiles as the format document's table lists them (btrfs's too). */
struct ref_profile {
	u64 bit;
	int min_stripes, max_stripes, step;
	int tolerated;		/* device losses a whole chunk survives */
};

static const struct ref_profile profiles[] = {
	{ 0,     1, 1, 1, 0 },	/* single */
	{ 0x20,  2, 2, 1, 0 },	/* dup: both stripes on one device */
	{ 0x8,   1, 6, 1, 0 },	/* raid0 */
	{ 0x10,  2, 2, 1, 1 },	/* raid1 */
	{ 0x200, 3, 3, 1, 2 },	/* raid1c3 */
	{ 0x400, 4, 4, 1, 3 },	/* raid1c4 */
	{ 0x40,  2, 6, 2, 1 },	/* raid10: pairs of stripes mirror each other */
	{ 0x80,  2, 6, 1, 1 },	/* raid5 */
	{ 0x100, 3, 6, 1, 2 },	/* raid6 */
};

/* Which device holds stripe i: dup keeps both on one, the others one each. */
static int ref_dev_of(u64 bit, int i)
{
	return bit == 0x20 ? 0 : i;
}

static int ref_ndevs(u64 bit, int n)
{
	return bit == 0x20 ? 1 : n;
}

/* Can the chunk be read with the devices of `lost` (a bit per device) gone? */
static bool ref_readable(u64 bit, int n, unsigned int lost)
{
	int i, bad = 0;

	for (i = 0; i < n; i++)
		bad += !!(lost & (1U << ref_dev_of(bit, i)));
	switch (bit) {
	case 0x20: case 0x10: case 0x200: case 0x400:
		return bad < n;
	case 0x40:
		for (i = 0; i < n; i += 2)
			if ((lost & (1U << i)) && (lost & (1U << (i + 1))))
				return false;
		return true;
	case 0x80:
		return bad <= 1;
	case 0x100:
		return bad <= 2;
	default:
		return bad == 0;
	}
}

/* The most further losses (up to the profile's) every choice of which survives. */
static int ref_failures_left(const struct ref_profile *p, int n, unsigned int lost)
{
	unsigned int all = (1U << ref_ndevs(p->bit, n)) - 1, more;
	int left = p->tolerated;

	if (!ref_readable(p->bit, n, lost))
		return -1;
	for (more = 1; more <= all; more++) {
		if ((more & lost) || ref_readable(p->bit, n, lost | more))
			continue;
		if (__builtin_popcount(more) - 1 < left)
			left = __builtin_popcount(more) - 1;
	}
	return left;
}

static char fake_io;

static void test_failures_left(void)
{
	struct mfs_device devs[MAX_STRIPES];
	struct {
		struct mfs_chunk_map map;
		struct mfs_map_stripe stripes[MAX_STRIPES];
	} c;
	size_t pi;
	int n, i, cases = 0;
	unsigned int lost;

	for (pi = 0; pi < sizeof(profiles) / sizeof(profiles[0]); pi++) {
		const struct ref_profile *p = &profiles[pi];

		for (n = p->min_stripes; n <= p->max_stripes; n += p->step) {
			for (lost = 0; lost < (1U << ref_ndevs(p->bit, n)); lost++) {
				memset(&c, 0, sizeof(c));
				memset(devs, 0, sizeof(devs));
				c.map.type = MFS_BLOCK_GROUP_DATA | p->bit;
				c.map.num_stripes = n;
				for (i = 0; i < MAX_STRIPES; i++) {
					devs[i].devid = i + 1;
					devs[i].missing = !!(lost & (1U << i));
					devs[i].io = devs[i].missing ? NULL :
						     (struct mfs_io_dev *)&fake_io;
				}
				for (i = 0; i < n; i++)
					c.map.stripes[i].dev = &devs[ref_dev_of(p->bit, i)];
				CHECK_EQ(mfs_chunk_failures_left(&c.map),
					 ref_failures_left(p, n, lost));
				cases++;
			}
		}
	}
	CHECK(cases > 100);
}

/* A device failed this mount or failing counts as such, whatever else it is. */
static void test_health_order(void)
{
	struct mfs_device d;

	memset(&d, 0, sizeof(d));
	d.io = (struct mfs_io_dev *)&fake_io;
	CHECK_EQ(mfs_device_health(&d), MFS_DEV_HEALTH_OK);
	d.flags = MFS_DEV_STATE_SPARE;
	CHECK_EQ(mfs_device_health(&d), MFS_DEV_HEALTH_SPARE);
	CHECK(!mfs_device_allocatable(&d));
	d.flags = MFS_DEV_STATE_DELETING;
	CHECK_EQ(mfs_device_health(&d), MFS_DEV_HEALTH_DELETING);
	d.flags = MFS_DEV_STATE_REPLACE_TARGET;
	CHECK_EQ(mfs_device_health(&d), MFS_DEV_HEALTH_REPLACE_TARGET);
	d.flags = MFS_DEV_STATE_REPLACE_SOURCE | MFS_DEV_STATE_DELETING;
	CHECK_EQ(mfs_device_health(&d), MFS_DEV_HEALTH_REPLACING);
	d.stale_gen = 7;
	CHECK_EQ(mfs_device_health(&d), MFS_DEV_HEALTH_REBUILDING);
	d.failing = true;
	CHECK_EQ(mfs_device_health(&d), MFS_DEV_HEALTH_FAILING);
	CHECK(!mfs_device_allocatable(&d));
	d.failing = false;
	d.failed = true;
	CHECK_EQ(mfs_device_health(&d), MFS_DEV_HEALTH_FAILING);
	d.missing = true;
	CHECK_EQ(mfs_device_health(&d), MFS_DEV_HEALTH_MISSING);
}

/* Past the threshold, not at it; generation errors do not count; 0 never. */
static void test_fail_threshold(void)
{
	struct mfs_fs_info *fs = mfs_alloc_fs_info();
	struct mfs_device d;
	int i;

	REQUIRE(fs);
	memset(&d, 0, sizeof(d));
	d.io = (struct mfs_io_dev *)&fake_io;
	d.devid = 1;
	CHECK_EQ(fs->fail_threshold, MFS_DEFAULT_FAIL_THRESHOLD);
	fs->fail_threshold = 3;
	for (i = 0; i < 10; i++)
		mfs_dev_count_error(fs, &d, MFS_DEV_STAT_GENERATION_ERRS);
	CHECK(!d.failing);
	for (i = 0; i < 3; i++)
		mfs_dev_count_error(fs, &d, i % 2 ? MFS_DEV_STAT_READ_ERRS :
					    MFS_DEV_STAT_CORRUPTION_ERRS);
	CHECK(!d.failing);
	CHECK(mfs_device_allocatable(&d));
	mfs_dev_count_error(fs, &d, MFS_DEV_STAT_READ_ERRS);
	CHECK(d.failing);
	CHECK(!mfs_device_allocatable(&d));
	CHECK_EQ(d.stats[MFS_DEV_STAT_GENERATION_ERRS], 10);
	CHECK_EQ(d.mount_errors, 4);

	/* the mount's own threshold judges what the open counted */
	fs->devices = (struct mfs_device *[]){ &d };
	fs->nr_devices = 1;
	mfs_set_fail_threshold(fs, 0);
	CHECK(!d.failing);
	for (i = 0; i < 1000; i++)
		mfs_dev_count_error(fs, &d, MFS_DEV_STAT_WRITE_ERRS);
	CHECK(!d.failing);
	mfs_set_fail_threshold(fs, 500);
	CHECK(d.failing);
	fs->devices = NULL;
	fs->nr_devices = 0;
	mfs_free_fs_info(fs);
}

int main(void)
{
	RUN(test_failures_left);
	RUN(test_health_order);
	RUN(test_fail_threshold);
	UNIT_EXIT();
}
