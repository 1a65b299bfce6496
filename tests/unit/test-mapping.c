/*
 * Logical -> physical mapping: an independent reference model written from
 * Documentation/on-disk-format.md §9, checked against mfs_map_block for every
 * profile and stripe count, with random chunk layouts and addresses, and a
 * check that the model maps every chunk one-to-one onto its stripes.
 */
#include <stdlib.h>

#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/format/profiles.h"
#include "unit.h"

#define UNIT		65536ULL	/* stripe_len, format §1 */
#define SECTOR		4096ULL
#define MAX_STRIPES	8
#define ADDRS_PER_CHUNK	12000
#define LAYOUTS_PER_CONFIG 4

/* ---------------- profiles, as the format document lists them ---------------- */

struct ref_profile {
	const char *name;
	u64 bit;		/* §9.1 */
	int min_stripes, max_stripes, step;	/* valid num_stripes, §9.1 */
	bool striped;		/* length/ndata is a multiple of 64 KiB (§7.2) */
};

static const struct ref_profile profiles[] = {
	{ "single",  0,     1, 1, 1, false },
	{ "dup",     0x20,  2, 2, 1, false },
	{ "raid0",   0x8,   1, 8, 1, true },
	{ "raid1",   0x10,  2, 2, 1, false },
	{ "raid1c3", 0x200, 3, 3, 1, false },
	{ "raid1c4", 0x400, 4, 4, 1, false },
	{ "raid10",  0x40,  2, 8, 2, true },
	{ "raid5",   0x80,  2, 8, 1, true },
	{ "raid6",   0x100, 3, 8, 1, true },
};

/* §9.2 */
static int ref_ndata(u64 bit, int n)
{
	switch (bit) {
	case 0x20: case 0x10: case 0x200: case 0x400:
		return 1;
	case 0x40:
		return n / 2;
	case 0x80:
		return n - 1;
	case 0x100:
		return n - 2;
	default:	/* single, raid0 */
		return n;
	}
}

static int ref_nparity(u64 bit)
{
	return bit == 0x80 ? 1 : bit == 0x100 ? 2 : 0;
}

/* §9.4: ways to read a block (raid6: direct, with P, then one per other column) */
static int ref_num_copies(u64 bit, int n)
{
	switch (bit) {
	case 0x20: case 0x10: case 0x200: case 0x400:
		return n;
	case 0x40:
		return 2;
	case 0x80:
		return 2;
	case 0x100:
		return n + 1;
	default:
		return 1;
	}
}

/* ---------------- one chunk as the document describes it ---------------- */

struct ref_chunk {
	const struct ref_profile *prof;
	u64 type;		/* type bit | profile bit */
	u64 logical;
	u64 length;
	u64 stripe_size;	/* S = length / ndata */
	int n;
	u64 devid[MAX_STRIPES];
	u64 phys[MAX_STRIPES];
};

struct ref_copy {
	int stripe;
	u64 physical;
};

struct ref_result {
	int ncopies;
	struct ref_copy copy[4];
	u64 run;		/* bytes mapped linearly from the address on */
	/* raid5/6 */
	u64 row;
	int column;
	int p_stripe, q_stripe;
};

/* The formulas of §9.3, for off = logical - chunk start. */
static void ref_map(const struct ref_chunk *c, u64 off, struct ref_result *r)
{
	u64 bit = c->prof->bit, u = off / UNIT, o = off % UNIT;
	u64 to_unit_end = UNIT - o, to_chunk_end = c->length - off;
	int n = c->n, i;

	memset(r, 0, sizeof(*r));
	r->p_stripe = r->q_stripe = -1;
	switch (bit) {
	case 0:		/* single */
		r->ncopies = 1;
		r->copy[0].stripe = 0;
		r->copy[0].physical = c->phys[0] + off;
		r->run = to_chunk_end;
		break;
	case 0x20: case 0x10: case 0x200: case 0x400:	/* dup, raid1, c3, c4 */
		r->ncopies = n;
		for (i = 0; i < n; i++) {
			r->copy[i].stripe = i;
			r->copy[i].physical = c->phys[i] + off;
		}
		r->run = to_chunk_end;
		break;
	case 0x8:	/* raid0 */
		r->ncopies = 1;
		r->copy[0].stripe = u % n;
		r->copy[0].physical = c->phys[u % n] + (u / n) * UNIT + o;
		/* one stripe is single under another name: contiguous to the end */
		r->run = n == 1 ? to_chunk_end : to_unit_end;
		break;
	case 0x40: {	/* raid10 */
		u64 m = n / 2, pair = u % m;

		r->ncopies = 2;
		for (i = 0; i < 2; i++) {
			r->copy[i].stripe = 2 * pair + i;
			r->copy[i].physical = c->phys[2 * pair + i] + (u / m) * UNIT + o;
		}
		r->run = to_unit_end;
		break;
	}
	case 0x80: case 0x100: {	/* raid5, raid6 */
		int q = ref_nparity(bit), ndata = n - q;
		u64 row = u / ndata;
		int d = u % ndata;
		int s = (d + row) % n;

		r->ncopies = 1;
		r->copy[0].stripe = s;
		r->copy[0].physical = c->phys[s] + row * UNIT + o;
		r->row = row;
		r->column = d;
		r->p_stripe = (ndata + row) % n;
		if (q == 2)
			r->q_stripe = (ndata + 1 + row) % n;
		r->run = to_unit_end;
		break;
	}
	}
	if (r->run > to_chunk_end)
		r->run = to_chunk_end;
}

/* ---------------- building the chunk item bytes of §7.2 ---------------- */

static void put_le(u8 *p, u64 v, int bytes)
{
	int i;

	for (i = 0; i < bytes; i++)
		p[i] = (u8)(v >> (8 * i));
}

/* The chunk item as the document lays it out, with the writer's values. */
static size_t ref_chunk_item(const struct ref_chunk *c, u8 *buf)
{
	size_t size = 48 + 32 * (size_t)c->n;
	int i, j;

	memset(buf, 0, size);
	put_le(buf + 0, c->length, 8);
	put_le(buf + 8, 2, 8);				/* owner: extent tree */
	put_le(buf + 16, UNIT, 8);			/* stripe_len */
	put_le(buf + 24, c->type, 8);
	put_le(buf + 32, UNIT, 4);			/* io_align */
	put_le(buf + 36, UNIT, 4);			/* io_width */
	put_le(buf + 40, SECTOR, 4);			/* sector_size */
	put_le(buf + 44, c->n, 2);
	put_le(buf + 46, c->prof->bit == 0x40 ? 2 : 1, 2);	/* sub_stripes */
	for (i = 0; i < c->n; i++) {
		u8 *s = buf + 48 + 32 * i;

		put_le(s + 0, c->devid[i], 8);
		put_le(s + 8, c->phys[i], 8);
		for (j = 0; j < 16; j++)
			s[16 + j] = (u8)(c->devid[i] * 16 + j);
	}
	return size;
}

static struct mfs_fs_info fake_fs = { .sectorsize = SECTOR };

/* The engine's map of c, made from the item bytes through the real parser. */
static struct mfs_chunk_map *engine_map(const struct ref_chunk *c)
{
	u8 item[48 + 32 * MAX_STRIPES], back[48 + 32 * MAX_STRIPES];
	size_t size = ref_chunk_item(c, item);
	struct mfs_chunk_map *map = NULL;
	int ret, i;

	ret = mfs_chunk_map_from_item(&fake_fs, c->logical, (struct mfs_chunk *)item,
				      size, &map);
	CHECK_EQ(ret, 0);
	if (ret)
		return NULL;
	CHECK(map->logical == c->logical);
	CHECK(map->length == c->length);
	CHECK(map->type == c->type);
	CHECK_EQ(map->stripe_len, UNIT);
	CHECK_EQ(map->num_stripes, c->n);
	for (i = 0; i < c->n; i++) {
		CHECK(map->stripes[i].devid == c->devid[i]);
		CHECK(map->stripes[i].physical == c->phys[i]);
	}
	/* and the writer produces exactly the bytes of the document's table */
	mfs_chunk_map_to_item(&fake_fs, map, back);
	CHECK(memcmp(item, back, size) == 0);
	return map;
}

/* ---------------- random layouts ---------------- */

static void random_chunk(const struct ref_profile *p, int n, bool big, struct ref_chunk *c)
{
	int ndata = ref_ndata(p->bit, n), i, j;
	u64 type_bits[] = { 0x1, 0x2, 0x4 };

	memset(c, 0, sizeof(*c));
	c->prof = p;
	c->n = n;
	c->type = type_bits[unit_rnd() % 3] | p->bit;
	c->logical = unit_rnd_range(1, 1ULL << 20) << 20;	/* 1 MiB aligned, < 1 PiB */
	if (p->striped)
		c->stripe_size = (big ? unit_rnd_range(1, 65536) : unit_rnd_range(1, 64)) * UNIT;
	else
		c->stripe_size = (big ? unit_rnd_range(1, 1ULL << 20) : unit_rnd_range(1, 1024)) * SECTOR;
	c->length = c->stripe_size * ndata;

	/* distinct devices (dup: both stripes on one), in random order */
	for (i = 0; i < n; i++) {
		bool again;

		do {
			c->devid[i] = unit_rnd_range(1, 64);
			again = false;
			for (j = 0; j < i; j++)
				again |= c->devid[j] == c->devid[i];
		} while (again);
		c->phys[i] = unit_rnd_range(1ULL << 8, 1ULL << 32) * SECTOR;
	}
	if (p->bit == 0x20) {
		c->devid[1] = c->devid[0];
		/* the second stripe before or after the first, never overlapping */
		u64 gap = unit_rnd_range(0, 255) * SECTOR;

		if ((unit_rnd() & 1) && c->phys[0] >= c->stripe_size + gap)
			c->phys[1] = c->phys[0] - c->stripe_size - gap;
		else
			c->phys[1] = c->phys[0] + c->stripe_size + gap;
	}
}

/* An offset inside the chunk; half of them next to a unit boundary. */
static u64 random_offset(const struct ref_chunk *c, int k)
{
	u64 units = div_round_up(c->length, UNIT), off;

	switch (k % 4) {
	case 0:
	case 1:
		return unit_rnd() % c->length;
	case 2:
		off = (unit_rnd() % units) * UNIT;
		break;
	default:
		off = (unit_rnd() % units) * UNIT + UNIT - 1 - unit_rnd() % 4;
		break;
	}
	return off < c->length ? off : c->length - 1;
}

/* ---------------- comparing engine and model ---------------- */

static int mismatches;

static void compare_one(const struct ref_chunk *c, const struct mfs_chunk_map *map, u64 off)
{
	struct ref_result r;
	struct mfs_io_map io;
	bool parity = ref_nparity(c->prof->bit) != 0;
	int ret, i, before = unit_failed_checks;

	ref_map(c, off, &r);
	ret = mfs_map_block(map, c->logical + off, &io);
	CHECK_EQ(ret, 0);
	if (ret)
		goto out;
	CHECK_EQ(io.ncopies, r.ncopies);
	for (i = 0; i < r.ncopies && i < io.ncopies; i++) {
		CHECK_EQ(io.stripe[i], r.copy[i].stripe);
		CHECK(io.physical[i] == r.copy[i].physical);
	}
	CHECK(io.length == r.run);
	CHECK_EQ(io.p_stripe, r.p_stripe);
	CHECK_EQ(io.q_stripe, r.q_stripe);
	if (parity) {
		CHECK(io.row == r.row);
		CHECK_EQ(io.data_index, r.column);
	}
out:
	if (unit_failed_checks != before && mismatches++ < 5)
		fprintf(stderr, "#   %s n=%d S=%llu: logical %llu (chunk offset %llu)\n",
			c->prof->name, c->n, (unsigned long long)c->stripe_size,
			(unsigned long long)(c->logical + off), (unsigned long long)off);
}

/* The model's own claims: copies inside their stripe, run really linear. */
static void check_model_sane(const struct ref_chunk *c, u64 off)
{
	struct ref_result r, last;
	int i;

	ref_map(c, off, &r);
	CHECK(r.run >= 1 && off + r.run <= c->length);
	ref_map(c, off + r.run - 1, &last);
	CHECK_EQ(last.ncopies, r.ncopies);
	for (i = 0; i < r.ncopies; i++) {
		const struct ref_copy *cp = &r.copy[i];

		CHECK(cp->physical >= c->phys[cp->stripe]);
		CHECK(cp->physical + r.run <= c->phys[cp->stripe] + c->stripe_size);
		CHECK_EQ(last.copy[i].stripe, cp->stripe);
		CHECK(last.copy[i].physical == cp->physical + r.run - 1);
	}
	for (i = 0; i < r.ncopies; i++)
		for (int j = i + 1; j < r.ncopies; j++)
			CHECK(c->devid[r.copy[i].stripe] != c->devid[r.copy[j].stripe] ||
			      r.copy[i].physical != r.copy[j].physical);
}

/* ---------------- the inverse: a set of (devid, physical) ---------------- */

struct phys_set {
	u64 *devid, *phys;
	u64 cap, count;
};

static void set_init(struct phys_set *s, u64 want)
{
	s->cap = 16;
	while (s->cap < 2 * want)
		s->cap <<= 1;
	s->devid = calloc(s->cap, sizeof(u64));
	s->phys = calloc(s->cap, sizeof(u64));
	s->count = 0;
}

static void set_free(struct phys_set *s)
{
	free(s->devid);
	free(s->phys);
}

/* false when (devid, phys) is already there; devid 0 marks an empty slot */
static bool set_add(struct phys_set *s, u64 devid, u64 phys)
{
	u64 h = (devid * 0x9e3779b97f4a7c15ULL) ^ (phys * 0xc2b2ae3d27d4eb4fULL);

	h ^= h >> 29;
	for (h &= s->cap - 1; s->devid[h]; h = (h + 1) & (s->cap - 1))
		if (s->devid[h] == devid && s->phys[h] == phys)
			return false;
	s->devid[h] = devid;
	s->phys[h] = phys;
	s->count++;
	return true;
}

/*
 * Map the byte at in-unit offset o of every 64 KiB unit of the chunk (and,
 * for raid5/6, place the parity units): no physical byte may be hit twice.
 * For the striped profiles the hits must also cover every unit of every
 * stripe, i.e. the mapping is a bijection onto the dev extents.
 */
static void check_inverse(const struct ref_chunk *c, const struct mfs_chunk_map *map, u64 o)
{
	int q = ref_nparity(c->prof->bit), ndata = c->n - q, i;
	u64 units = div_round_up(c->length, UNIT), u, expect = 0, dups = 0;
	struct phys_set set;

	set_init(&set, c->n * div_round_up(c->stripe_size, UNIT));
	for (u = 0; u < units; u++) {
		u64 off = u * UNIT + o;
		struct ref_result r;

		if (off >= c->length)
			continue;
		ref_map(c, off, &r);
		for (i = 0; i < r.ncopies; i++) {
			dups += !set_add(&set, c->devid[r.copy[i].stripe], r.copy[i].physical);
			expect++;
		}
		if (q && r.column == 0) {
			/* the parity units of this row */
			for (i = 0; i < q; i++) {
				int s = (ndata + i + r.row) % c->n;

				dups += !set_add(&set, c->devid[s], c->phys[s] + r.row * UNIT + o);
				expect++;
			}
		}
		if (u % 7 == 0)
			compare_one(c, map, off);
	}
	CHECK_EQ(dups, 0);
	CHECK(set.count == expect);
	if (c->prof->striped)
		CHECK(set.count == c->n * (c->stripe_size / UNIT));
	set_free(&set);
}

/* ---------------- the tests ---------------- */

static void check_profile_math(const struct ref_chunk *c, const struct mfs_chunk_map *map)
{
	int ndata = ref_ndata(c->prof->bit, c->n);

	CHECK_EQ(mfs_num_copies(map), ref_num_copies(c->prof->bit, c->n));
	CHECK_EQ(mfs_nr_data_stripes(c->type, c->n), ndata);
	CHECK(mfs_chunk_logical_length(c->type, c->n, c->stripe_size) == c->length);
	CHECK(c->length / ndata == c->stripe_size);
}

static void run_config(const struct ref_profile *p, int n)
{
	int layout, k;

	for (layout = 0; layout < LAYOUTS_PER_CONFIG; layout++) {
		struct ref_chunk c;
		struct mfs_chunk_map *map;
		struct mfs_io_map io;

		random_chunk(p, n, layout == LAYOUTS_PER_CONFIG - 1, &c);
		map = engine_map(&c);
		if (!map)
			continue;
		check_profile_math(&c, map);
		/* outside the chunk */
		CHECK(mfs_map_block(map, c.logical - 1, &io) == -EINVAL);
		CHECK(mfs_map_block(map, c.logical + c.length, &io) == -EINVAL);
		/* both ends and random addresses */
		compare_one(&c, map, 0);
		compare_one(&c, map, c.length - 1);
		for (k = 0; k < ADDRS_PER_CHUNK; k++) {
			u64 off = random_offset(&c, k);

			compare_one(&c, map, off);
			if (k % 8 == 0)
				check_model_sane(&c, off);
		}
		if (c.stripe_size / UNIT * n <= (1 << 19)) {
			check_inverse(&c, map, 0);
			check_inverse(&c, map, UNIT - 1);
			check_inverse(&c, map, unit_rnd() % UNIT);
		}
		free(map);
	}
}

static void run_profile(const struct ref_profile *p)
{
	int n;

	for (n = p->min_stripes; n <= p->max_stripes; n += p->step)
		run_config(p, n);
}

static void test_single(void) { run_profile(&profiles[0]); }
static void test_dup(void) { run_profile(&profiles[1]); }
static void test_raid0(void) { run_profile(&profiles[2]); }
static void test_raid1(void) { run_profile(&profiles[3]); }
static void test_raid1c3(void) { run_profile(&profiles[4]); }
static void test_raid1c4(void) { run_profile(&profiles[5]); }
static void test_raid10(void) { run_profile(&profiles[6]); }
static void test_raid5(void) { run_profile(&profiles[7]); }
static void test_raid6(void) { run_profile(&profiles[8]); }

/* The worked examples of §9.3, literally. */
static void test_worked_examples(void)
{
	static const int raid5_4[4][4] = {	/* D0 D1 D2 P */
		{ 0, 1, 2, 3 }, { 1, 2, 3, 0 }, { 2, 3, 0, 1 }, { 3, 0, 1, 2 },
	};
	static const int raid6_5[3][5] = {	/* D0 D1 D2 P Q */
		{ 0, 1, 2, 3, 4 }, { 1, 2, 3, 4, 0 }, { 2, 3, 4, 0, 1 },
	};
	struct ref_chunk c;
	struct mfs_chunk_map *map;
	struct mfs_io_map io;
	int row, d, i;

	random_chunk(&profiles[7], 4, false, &c);
	c.stripe_size = 4 * UNIT;
	c.length = 3 * c.stripe_size;
	map = engine_map(&c);
	REQUIRE(map);
	for (row = 0; row < 4; row++) {
		for (d = 0; d < 3; d++) {
			REQUIRE(mfs_map_block(map, c.logical + (row * 3 + d) * UNIT, &io) == 0);
			CHECK_EQ(io.stripe[0], raid5_4[row][d]);
			CHECK(io.physical[0] == c.phys[raid5_4[row][d]] + row * UNIT);
			CHECK_EQ(io.p_stripe, raid5_4[row][3]);
			CHECK_EQ(io.q_stripe, -1);
		}
	}
	/* "logical offset 0x50000 is on stripe 3 at P[3] + 0x10000" */
	REQUIRE(mfs_map_block(map, c.logical + 0x50000, &io) == 0);
	CHECK_EQ(io.stripe[0], 3);
	CHECK(io.physical[0] == c.phys[3] + 0x10000);
	free(map);

	random_chunk(&profiles[8], 5, false, &c);
	c.stripe_size = 3 * UNIT;
	c.length = 3 * c.stripe_size;
	map = engine_map(&c);
	REQUIRE(map);
	for (row = 0; row < 3; row++) {
		for (d = 0; d < 3; d++) {
			REQUIRE(mfs_map_block(map, c.logical + (row * 3 + d) * UNIT, &io) == 0);
			CHECK_EQ(io.stripe[0], raid6_5[row][d]);
			CHECK_EQ(io.p_stripe, raid6_5[row][3]);
			CHECK_EQ(io.q_stripe, raid6_5[row][4]);
		}
	}
	free(map);

	random_chunk(&profiles[6], 4, false, &c);
	c.stripe_size = 2 * UNIT;
	c.length = 2 * c.stripe_size;
	map = engine_map(&c);
	REQUIRE(map);
	for (i = 0; i < 4; i++) {	/* units 0..3 */
		REQUIRE(mfs_map_block(map, c.logical + i * UNIT, &io) == 0);
		CHECK_EQ(io.ncopies, 2);
		CHECK_EQ(io.stripe[0], 2 * (i % 2));
		CHECK_EQ(io.stripe[1], 2 * (i % 2) + 1);
		CHECK(io.physical[0] == c.phys[2 * (i % 2)] + (i / 2) * UNIT);
	}
	free(map);
}

/* §9.1 / §7.2: the stripe counts and lengths a chunk item may have. */
static void test_chunk_item_rules(void)
{
	static const struct { int prof, n; } bad[] = {
		{ 0, 2 }, { 1, 1 }, { 1, 3 }, { 3, 1 }, { 3, 3 }, { 4, 2 }, { 4, 4 },
		{ 5, 3 }, { 5, 5 }, { 6, 1 }, { 6, 3 }, { 6, 5 }, { 7, 1 }, { 8, 2 },
	};
	u8 item[48 + 32 * MAX_STRIPES];
	struct ref_chunk c;
	size_t i, size;
	int p;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		const struct ref_profile *prof = &profiles[bad[i].prof];
		int n = bad[i].n, ndata = ref_ndata(prof->bit, n);

		random_chunk(prof, prof->min_stripes, false, &c);
		c.n = n;
		c.devid[n - 1] = 99;
		c.phys[n - 1] = SZ_1G;
		c.length = c.stripe_size * (ndata > 0 ? ndata : 1);
		size = ref_chunk_item(&c, item);
		CHECK(mfs_check_chunk_item(&fake_fs, c.logical, (struct mfs_chunk *)item, size) ==
		      -EUCLEAN);
	}
	/* striped profiles: a stripe size that is not whole units is refused */
	for (p = 0; p < (int)ARRAY_SIZE(profiles); p++) {
		const struct ref_profile *prof = &profiles[p];
		int n = prof->min_stripes == 1 && prof->striped ? 2 : prof->min_stripes;

		random_chunk(prof, n, false, &c);
		c.length = (c.stripe_size + SECTOR) * ref_ndata(prof->bit, n);
		size = ref_chunk_item(&c, item);
		CHECK_EQ(mfs_check_chunk_item(&fake_fs, c.logical, (struct mfs_chunk *)item, size),
			 prof->striped ? -EUCLEAN : 0);
		/* and the item size must match num_stripes exactly */
		CHECK(mfs_check_chunk_item(&fake_fs, c.logical, (struct mfs_chunk *)item,
					   size - 1) == -EUCLEAN);
	}
}

int main(void)
{
	const char *env = getenv("MFS_TEST_SEED");
	u64 seed = env ? strtoull(env, NULL, 0) : 0x6d66732d6d6170ULL;

	unit_seed(seed);
	printf("# seed 0x%llx (set MFS_TEST_SEED to repeat another)\n",
	       (unsigned long long)seed);
	RUN(test_single);
	RUN(test_dup);
	RUN(test_raid0);
	RUN(test_raid1);
	RUN(test_raid1c3);
	RUN(test_raid1c4);
	RUN(test_raid10);
	RUN(test_raid5);
	RUN(test_raid6);
	RUN(test_worked_examples);
	RUN(test_chunk_item_rules);
	UNIT_EXIT();
}
