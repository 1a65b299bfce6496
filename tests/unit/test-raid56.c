/* Unit tests for kernel-shared/block/raid56.c: parity against a byte-wise reference
 * and rebuild of every one- and two-block loss pattern. */
#include <limits.h>

#include "kernel-shared/block/raid56.h"
#include "unit.h"

#define MAX_BLOCKS (MFS_RAID56_MAX_DATA + 2)

/* Odd lengths reach the paths ISA-L's aligned kernels cannot take. */
static const size_t test_lens[] = { 65536, 4096 + 32, 100, 1 };

struct stripe {
	int ndata;
	int nparity;
	size_t len;
	void *blocks[MAX_BLOCKS];
	u8 *mem[MAX_BLOCKS];
	u8 *orig[MAX_BLOCKS];
};


static int stripe_blocks(const struct stripe *s)
{
	return s->ndata + s->nparity;
}

static void stripe_free(struct stripe *s)
{
	int i;

	for (i = 0; i < stripe_blocks(s); i++) {
		free(s->mem[i]);
		free(s->orig[i]);
	}
}

/* misalign shifts each block off the 64-byte boundary aligned_alloc gives. */
static int stripe_init(struct stripe *s, int ndata, int nparity, size_t len,
		       size_t misalign)
{
	int i;

	memset(s, 0, sizeof(*s));
	s->ndata = ndata;
	s->nparity = nparity;
	s->len = len;
	for (i = 0; i < ndata + nparity; i++) {
		s->mem[i] = aligned_alloc(64, round_up(len + misalign, 64));
		s->orig[i] = malloc(len);
		if (!s->mem[i] || !s->orig[i])
			return -ENOMEM;
		s->blocks[i] = s->mem[i] + misalign;
	}
	for (i = 0; i < ndata + nparity; i++)
		unit_fill_random(s->blocks[i], len);
	return 0;
}

static void stripe_save(struct stripe *s)
{
	int i;

	for (i = 0; i < stripe_blocks(s); i++)
		memcpy(s->orig[i], s->blocks[i], s->len);
}

static void stripe_restore(struct stripe *s)
{
	int i;

	for (i = 0; i < stripe_blocks(s); i++)
		memcpy(s->blocks[i], s->orig[i], s->len);
}

static bool stripe_intact(const struct stripe *s)
{
	int i;

	for (i = 0; i < stripe_blocks(s); i++)
		if (memcmp(s->orig[i], s->blocks[i], s->len))
			return false;
	return true;
}

static u8 ref_gf_mul2(u8 v)
{
	return (v << 1) ^ ((v & 0x80) ? 0x1d : 0);
}

/* Slow P and Q straight from the definition, Q by Horner's rule. */
static bool parity_matches_reference(const struct stripe *s)
{
	const u8 *p = s->blocks[s->ndata];
	const u8 *q = s->nparity == 2 ? s->blocks[s->ndata + 1] : NULL;
	size_t b;
	int i;

	for (b = 0; b < s->len; b++) {
		u8 ref_p = 0, ref_q = 0;

		for (i = s->ndata - 1; i >= 0; i--) {
			u8 d = ((const u8 *)s->blocks[i])[b];

			ref_p ^= d;
			ref_q = ref_gf_mul2(ref_q) ^ d;
		}
		if (p[b] != ref_p || (q && q[b] != ref_q))
			return false;
	}
	return true;
}

/* Scribble over the lost blocks, rebuild them, compare the whole stripe. */
static bool lose_and_rebuild(struct stripe *s, int nfailed, const int *failed)
{
	int i, ret;

	for (i = 0; i < nfailed; i++)
		unit_fill_random(s->blocks[failed[i]], s->len);
	ret = mfs_raid56_rebuild(s->ndata, s->nparity, s->len, s->blocks,
				 nfailed, failed);
	if (ret || !stripe_intact(s)) {
		fprintf(stderr, "# ndata %d nparity %d len %zu "
			"lost %d,%d: %d\n",
			s->ndata, s->nparity, s->len, failed[0],
			nfailed > 1 ? failed[1] : -1, ret);
		stripe_restore(s);
		return false;
	}
	return true;
}

static void check_every_loss(struct stripe *s)
{
	int n = stripe_blocks(s);
	int lost[2];

	for (lost[0] = 0; lost[0] < n; lost[0]++) {
		CHECK(lose_and_rebuild(s, 1, lost));
		if (s->nparity < 2)
			continue;
		for (lost[1] = lost[0] + 1; lost[1] < n; lost[1]++)
			CHECK(lose_and_rebuild(s, 2, lost));
	}
}

static void check_profile(int nparity, int min_devs, size_t misalign)
{
	struct stripe s;
	size_t l;
	int devs;

	for (devs = min_devs; devs <= 8; devs++) {
		for (l = 0; l < ARRAY_SIZE(test_lens); l++) {
			int ndata = devs - nparity;

			if (stripe_init(&s, ndata, nparity, test_lens[l],
					misalign)) {
				CHECK(!"out of memory");
				stripe_free(&s);
				return;
			}
			CHECK_EQ(mfs_raid56_gen(ndata, nparity, s.len,
						s.blocks), 0);
			CHECK(parity_matches_reference(&s));
			stripe_save(&s);
			check_every_loss(&s);
			stripe_free(&s);
		}
	}
}

static void test_raid5_every_loss(void)
{
	check_profile(1, 2, 0);
}

static void test_raid6_every_loss(void)
{
	check_profile(2, 3, 0);
}

/* Misaligned blocks must take the fallbacks and give the same answers. */
static void test_raid5_misaligned(void)
{
	check_profile(1, 2, 1);
}

static void test_raid6_misaligned(void)
{
	check_profile(2, 3, 1);
	check_profile(2, 3, 16);
}

/* At the widest stripe g^i still tells every data block apart. */
static void test_raid6_widest_stripe(void)
{
	static const int losses[][2] = {
		{ 0, 254 }, { 253, 254 }, { 0, 1 }, { 127, 255 },
		{ 254, 256 }, { 255, 256 }, { 100, 200 },
	};
	struct stripe s;
	size_t i;

	if (stripe_init(&s, MFS_RAID56_MAX_DATA, 2, 96, 0)) {
		CHECK(!"out of memory");
		goto out;
	}
	CHECK_EQ(mfs_raid56_gen(s.ndata, 2, s.len, s.blocks), 0);
	CHECK(parity_matches_reference(&s));
	stripe_save(&s);
	for (i = 0; i < ARRAY_SIZE(losses); i++)
		CHECK(lose_and_rebuild(&s, 2, losses[i]));
out:
	stripe_free(&s);
}

static void test_single_data_block(void)
{
	struct stripe s;

	if (stripe_init(&s, 1, 2, 100, 0)) {
		CHECK(!"out of memory");
		goto out;
	}
	CHECK_EQ(mfs_raid56_gen(1, 2, s.len, s.blocks), 0);
	CHECK(!memcmp(s.blocks[1], s.blocks[0], s.len));
	CHECK(!memcmp(s.blocks[2], s.blocks[0], s.len));
out:
	stripe_free(&s);
}

static void test_rebuild_nothing(void)
{
	struct stripe s;

	if (stripe_init(&s, 3, 2, 64, 0)) {
		CHECK(!"out of memory");
		goto out;
	}
	CHECK_EQ(mfs_raid56_gen(3, 2, s.len, s.blocks), 0);
	stripe_save(&s);
	CHECK_EQ(mfs_raid56_rebuild(3, 2, s.len, s.blocks, 0, NULL), 0);
	CHECK(stripe_intact(&s));
out:
	stripe_free(&s);
}

static void test_bad_arguments(void)
{
	static u8 buf[6][64];
	void *blocks[6] = { buf[0], buf[1], buf[2], buf[3], buf[4], buf[5] };
	void *holed[6] = { buf[0], NULL, buf[2], buf[3], buf[4], buf[5] };
	const int dup[2] = { 1, 1 };
	const int one[1] = { 0 };
	const int two[2] = { 0, 1 };
	const int below[1] = { -1 };
	const int past5[1] = { 5 };
	const int past6[1] = { 6 };

	CHECK_EQ(mfs_raid56_gen(0, 1, 64, blocks), -EINVAL);
	CHECK_EQ(mfs_raid56_gen(-1, 2, 64, blocks), -EINVAL);
	CHECK_EQ(mfs_raid56_gen(MFS_RAID56_MAX_DATA + 1, 2, 64, blocks),
		 -EINVAL);
	CHECK_EQ(mfs_raid56_gen(4, 0, 64, blocks), -EINVAL);
	CHECK_EQ(mfs_raid56_gen(3, 3, 64, blocks), -EINVAL);
	CHECK_EQ(mfs_raid56_gen(4, 2, 64, NULL), -EINVAL);
	CHECK_EQ(mfs_raid56_gen(4, 2, 64, holed), -EINVAL);
	CHECK_EQ(mfs_raid56_gen(4, 2, (size_t)INT_MAX + 1, blocks), -EINVAL);

	CHECK_EQ(mfs_raid56_rebuild(0, 1, 64, blocks, 1, one), -EINVAL);
	CHECK_EQ(mfs_raid56_rebuild(4, 3, 64, blocks, 1, one), -EINVAL);
	CHECK_EQ(mfs_raid56_rebuild(5, 1, 64, blocks, 2, two), -EINVAL);
	CHECK_EQ(mfs_raid56_rebuild(4, 2, 64, blocks, 3, two), -EINVAL);
	CHECK_EQ(mfs_raid56_rebuild(4, 2, 64, blocks, -1, two), -EINVAL);
	CHECK_EQ(mfs_raid56_rebuild(4, 2, 64, blocks, 1, NULL), -EINVAL);
	CHECK_EQ(mfs_raid56_rebuild(4, 2, 64, blocks, 2, dup), -EINVAL);
	CHECK_EQ(mfs_raid56_rebuild(4, 2, 64, blocks, 1, below), -EINVAL);
	CHECK_EQ(mfs_raid56_rebuild(5, 1, 64, blocks, 1, past6), -EINVAL);
	CHECK_EQ(mfs_raid56_rebuild(4, 1, 64, blocks, 1, past5), -EINVAL);
	CHECK_EQ(mfs_raid56_rebuild(4, 2, 64, blocks, 1, past6), -EINVAL);
	CHECK_EQ(mfs_raid56_rebuild(4, 2, 64, holed, 1, one), -EINVAL);
}

int main(void)
{
	RUN(test_raid5_every_loss);
	RUN(test_raid6_every_loss);
	RUN(test_raid5_misaligned);
	RUN(test_raid6_misaligned);
	RUN(test_raid6_widest_stripe);
	RUN(test_single_data_block);
	RUN(test_rebuild_nothing);
	RUN(test_bad_arguments);
	UNIT_EXIT();
}
