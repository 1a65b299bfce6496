/*
 * mfs rescue chunk-recover: chunks rebuilt from block groups and device
 * extents (chunk-scan.c finds them), their stripe order told, and a new
 * chunk tree written in one commit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernel-shared/ops/chunk-recover-internal.h"
#include "kernel-shared/block/csum.h"
#include "kernel-shared/block/raid56.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/tree/alloc.h"
#include "kernel-shared/tree/transaction.h"
#include "kernel-shared/volumes/volumes.h"

/* A chunk whose stripes are placed by trying every order: no more than 8! of them. */
#define MAX_ORDERED_STRIPES	8
#define MAX_PROBES		256

static int cmp_dext(const void *a, const void *b)
{
	const struct rc_dev_extent *x = a, *y = b;

	if (x->chunk_offset != y->chunk_offset)
		return x->chunk_offset < y->chunk_offset ? -1 : 1;
	if (x->devid != y->devid)
		return x->devid < y->devid ? -1 : 1;
	return x->physical < y->physical ? -1 : x->physical > y->physical;
}

/*
 * Stripe i of map gets extent ext[order[i]], with its device's uuid; the
 * stripe of a missing member keeps its place with no device to read.
 */
static void place_stripes(struct rc_state *st, struct mfs_chunk_map *map,
			  struct rc_dev_extent **ext, const int *order)
{
	int i;

	for (i = 0; i < map->num_stripes; i++) {
		struct mfs_map_stripe *s = &map->stripes[i];
		struct mfs_device *dev = mfs_find_device(st->fs, ext[order[i]]->devid);

		s->devid = ext[order[i]]->devid;
		s->physical = ext[order[i]]->physical;
		s->dev = dev && !dev->missing ? dev : NULL;
		if (dev)
			memcpy(s->dev_uuid, dev->uuid, MFS_UUID_SIZE);
	}
}

static bool ext_missing(struct rc_state *st, const struct rc_dev_extent *e)
{
	struct mfs_device *dev = mfs_find_device(st->fs, e->devid);

	return !dev || dev->missing;
}

/* How many of a chunk's extents lie on missing members; their devids listed in out. */
static int count_missing(struct rc_state *st, struct rc_dev_extent **ext, int n, char *out,
			 size_t len)
{
	int i, k = 0, pos = 0;

	out[0] = 0;
	for (i = 0; i < n; i++) {
		if (!ext_missing(st, ext[i]))
			continue;
		if (pos < (int)len)
			pos += snprintf(out + pos, len - pos, "%s%llu", k ? ", " : "",
					(unsigned long long)ext[i]->devid);
		k++;
	}
	return k;
}

/* A surviving chunk item of this chunk naming exactly these extents: its order. */
static bool hint_order(struct rc_state *st, const struct mfs_chunk_map *map,
		       struct rc_dev_extent **ext, int *order)
{
	const struct rc_hint *best = NULL;
	int n = map->num_stripes, i, j;
	u64 h;

	for (h = 0; h < st->nr_hints; h++) {
		const struct rc_hint *hint = &st->hints[h];
		const struct mfs_chunk *c = (const struct mfs_chunk *)hint->item;
		int tmp[RC_MAX_STRIPES];

		if (hint->logical != map->logical || le64_to_cpu(c->length) != map->length ||
		    le64_to_cpu(c->type) != map->type || le16_to_cpu(c->num_stripes) != n ||
		    (best && best->generation >= hint->generation))
			continue;
		for (i = 0; i < n; i++) {
			for (j = 0; j < n; j++)
				if (le64_to_cpu(c->stripe[i].devid) == ext[j]->devid &&
				    le64_to_cpu(c->stripe[i].offset) == ext[j]->physical)
					break;
			if (j == n)
				break;
			tmp[i] = j;
		}
		if (i < n)
			continue;
		best = hint;
		memcpy(order, tmp, n * sizeof(*order));
	}
	return best != NULL;
}

struct probe {
	struct mfs_io_map io;
	u64 logical;
	u64 rel;		/* offset into the stripe's device extent */
	const u8 *csum;		/* data: the sector's checksum; NULL: a tree block */
	bool hit[RC_MAX_STRIPES];	/* found where extent j would put it */
};

/* A tree block copy of bytenr at exactly devid/physical? */
static bool block_at(struct rc_state *st, u64 bytenr, u64 devid, u64 physical)
{
	u64 i;

	for (i = rc_first_block(st, bytenr); i < st->nr_blocks && st->blocks[i].bytenr == bytenr; i++)
		if (st->blocks[i].devid == devid && st->blocks[i].physical == physical)
			return true;
	return false;
}

static bool sector_at(struct rc_state *st, const u8 *csum, u64 devid, u64 physical)
{
	struct mfs_device *dev = mfs_find_device(st->fs, devid);
	u8 buf[MFS_SECTOR], sum[MFS_CSUM_SIZE];

	if (!dev || !dev->io || mfs_io_read(dev->io, buf, sizeof(buf), physical))
		return false;
	mfs_csum_compute(st->fs->csum_type, buf, sizeof(buf), sum);
	return !memcmp(sum, csum, st->fs->csum_size);
}

static int add_probe(struct rc_state *st, const struct mfs_chunk_map *map,
		     struct rc_dev_extent **ext, struct probe *p, u64 logical, const u8 *csum)
{
	int j;

	if (mfs_map_block(map, logical, &p->io) || !p->io.ncopies)
		return 0;
	p->logical = logical;
	p->csum = csum;
	p->rel = p->io.physical[0] - map->stripes[p->io.stripe[0]].physical;
	for (j = 0; j < map->num_stripes; j++)
		p->hit[j] = csum ? sector_at(st, csum, ext[j]->devid, ext[j]->physical + p->rel) :
			block_at(st, logical, ext[j]->devid, ext[j]->physical + p->rel);
	return 1;
}

/*
 * What tells where a chunk's stripes go: tree blocks found inside it
 * (metadata, system), or one data sector per stripe unit with a checksum.
 */
static int collect_probes(struct rc_state *st, const struct mfs_chunk_map *map,
			  struct rc_dev_extent **ext, struct probe *p)
{
	u64 end = map->logical + map->length, last = 0, i;
	int n = 0;

	if (map->type & MFS_BLOCK_GROUP_DATA) {
		for (i = 0; i < st->nr_csums && n < MAX_PROBES; i++)
			if (st->csums[i].logical >= map->logical && st->csums[i].logical < end)
				n += add_probe(st, map, ext, &p[n], st->csums[i].logical,
					       st->csums[i].csum);
		return n;
	}
	for (i = 0; i < st->nr_blocks && n < MAX_PROBES; i++) {
		u64 b = st->blocks[i].bytenr;

		if (b < map->logical || b >= end || (n && b == last))
			continue;
		last = b;
		n += add_probe(st, map, ext, &p[n], b, NULL);
	}
	return n;
}

static bool next_permutation(int *a, int n)
{
	int i = n - 2, j, t;

	while (i >= 0 && a[i] >= a[i + 1])
		i--;
	if (i < 0)
		return false;
	for (j = n - 1; a[j] <= a[i]; j--)
		;
	t = a[i], a[i] = a[j], a[j] = t;
	for (i++, j = n - 1; i < j; i++, j--)
		t = a[i], a[i] = a[j], a[j] = t;
	return true;
}

static int score(const struct probe *p, int np, const int *perm)
{
	int i, c, s = 0;

	/* every copy counts: a raid10 set must hold the sector on both its mirrors */
	for (i = 0; i < np; i++)
		for (c = 0; c < p[i].io.ncopies; c++)
			s += p[i].hit[perm[p[i].io.stripe[c]]];
	return s;
}

/* raid10: the mirrors of a set in either order are the same chunk; count one. */
static bool canonical(const int *perm, int n, int sub)
{
	int i;

	for (i = 0; sub > 1 && i + 1 < n; i++)
		if ((i + 1) % sub && perm[i] > perm[i + 1])
			return false;
	return true;
}

static int best_score(const struct probe *p, int np, int n, int sub)
{
	int perm[RC_MAX_STRIPES], i, best = 0, s;

	for (i = 0; i < n; i++)
		perm[i] = i;
	do {
		if (canonical(perm, n, sub) && (s = score(p, np, perm)) > best)
			best = s;
	} while (next_permutation(perm, n));
	return best;
}

static bool read_sector(const struct mfs_map_stripe *s, u64 rel, u8 *buf)
{
	return s->dev && s->dev->io && !mfs_io_read(s->dev->io, buf, MFS_SECTOR, s->physical + rel);
}

/* What the parity of a row says of an order. */
enum verdict {
	PARITY_FAILS,
	PARITY_HOLDS,
	PARITY_UNCHECKED,	/* as many columns missing as there are parity strips */
};

/* The stripe column c of a raid5/6 row lies on: data 0..ndata-1, then P, then Q. */
static int column_stripe(const struct mfs_chunk_map *map, const struct mfs_io_map *io,
			 int ndata, int c)
{
	if (c < ndata)
		return (c + io->row % map->num_stripes) % map->num_stripes;
	return c == ndata ? io->p_stripe : io->q_stripe;
}

/*
 * One row of a raid5/6 chunk at rel: its data columns, P and Q as read
 * (n sectors), the parity the data makes after them. A column on a
 * missing member is rebuilt from the others when a parity strip is left
 * over to check the result with; else the row cannot be checked.
 */
static enum verdict row_parity(const struct mfs_chunk_map *map, const struct mfs_io_map *io,
			       u64 rel, int nparity, u8 *buf)
{
	int n = map->num_stripes, ndata = n - nparity, c, nfailed = 0;
	void *blocks[MAX_ORDERED_STRIPES], *made[MAX_ORDERED_STRIPES];
	int failed[MAX_ORDERED_STRIPES];

	for (c = 0; c < n; c++) {
		const struct mfs_map_stripe *s = &map->stripes[column_stripe(map, io, ndata, c)];

		blocks[c] = made[c] = buf + c * MFS_SECTOR;
		if (!s->dev)
			failed[nfailed++] = c;
		else if (!read_sector(s, rel, blocks[c]))
			return PARITY_FAILS;
	}
	if (nfailed >= nparity)
		return PARITY_UNCHECKED;
	if (nfailed && mfs_raid56_rebuild(ndata, nparity, MFS_SECTOR, blocks, nfailed, failed))
		return PARITY_FAILS;
	for (c = 0; c < nparity; c++)
		made[ndata + c] = buf + (n + c) * MFS_SECTOR;
	if (mfs_raid56_gen(ndata, nparity, MFS_SECTOR, made))
		return PARITY_FAILS;
	for (c = ndata; c < n; c++)
		if (memcmp(blocks[c], made[c], MFS_SECTOR))
			return PARITY_FAILS;
	return PARITY_HOLDS;
}

/*
 * raid5/6 in the order perm: P (and Q) of each probe's row are what the
 * row's data columns make at the probe's offset. What tells the parity
 * strips from a data column no probe lies in, and P from Q. Unchecked if
 * some row cannot be checked (a member missing) and none fails. Other
 * profiles: it holds.
 */
static enum verdict parity_holds(struct rc_state *st, struct mfs_chunk_map *map,
				 struct rc_dev_extent **ext, const int *perm,
				 const struct probe *p, int np)
{
	int nparity = mfs_profile(map->type)->nparity, i;
	enum verdict v = PARITY_HOLDS, row;
	u8 *buf;

	if (!nparity)
		return PARITY_HOLDS;
	buf = malloc((map->num_stripes + nparity) * MFS_SECTOR);
	if (!buf)
		return PARITY_FAILS;
	place_stripes(st, map, ext, perm);
	for (i = 0; i < np && v != PARITY_FAILS; i++) {
		struct mfs_io_map io;

		if (mfs_map_block(map, p[i].logical, &io) || io.p_stripe < 0) {
			v = PARITY_FAILS;
			break;
		}
		row = row_parity(map, &io, io.physical[0] - map->stripes[io.stripe[0]].physical,
				 nparity, buf);
		if (row != PARITY_HOLDS)
			v = row;
	}
	free(buf);
	return v;
}

/*
 * With a member missing: does perm put no probe copy on a present member
 * that does not hold it? (Copies it puts on a missing one cannot be told.)
 */
static bool consistent(struct rc_state *st, struct rc_dev_extent **ext, const struct probe *p,
		       int np, const int *perm)
{
	int i, c;

	for (i = 0; i < np; i++)
		for (c = 0; c < p[i].io.ncopies; c++) {
			int j = perm[p[i].io.stripe[c]];

			if (!p[i].hit[j] && !ext_missing(st, ext[j]))
				return false;
		}
	return true;
}

/* What choose_order_missing found: the orders that fit. */
struct fit {
	int nfit;		/* consistent orders whose parity does not fail (counted to 2) */
	bool unchecked;		/* ... some only because it could not be checked */
};

/*
 * Of the orders in which the most probe copies are found where the chunk
 * would put them, the first whose parity holds. Several such orders are an
 * answer only when every probe copy was found and every probe the chunk
 * has was tried: they then differ only where nothing checksummed lies, so
 * each reads every sector the same. Else a tie is no answer.
 */
static bool choose_order(struct rc_state *st, struct mfs_chunk_map *map,
			 struct rc_dev_extent **ext, const struct probe *p, int np, int *order)
{
	int n = map->num_stripes, perm[RC_MAX_STRIPES], i, nbest = 0, copies = 0;
	int best = best_score(p, np, n, map->sub_stripes);
	bool chosen = false;

	for (i = 0; i < np; i++)
		copies += p[i].io.ncopies;
	for (i = 0; i < n; i++)
		perm[i] = i;
	do {
		if (!canonical(perm, n, map->sub_stripes) || score(p, np, perm) != best)
			continue;
		nbest++;
		if (!chosen && parity_holds(st, map, ext, perm, p, np) == PARITY_HOLDS) {
			memcpy(order, perm, n * sizeof(*order));
			chosen = true;
		}
	} while (next_permutation(perm, n));
	return best && chosen && (nbest == 1 || (best == copies && np < MAX_PROBES));
}

/*
 * With a member missing the most probe copies found is no guide: the true
 * order finds none of those on the missing member, while a wrong one may
 * find them on a parity strip that holds the same bytes (a row with one
 * data column written). An order is kept when every probe copy it puts on
 * a present member is there and its parity does not fail; a raid5/6 row
 * is checked only when a parity strip is left over once the missing
 * columns are rebuilt. Only one such order is an answer: two may differ
 * in where the missing member's stripe goes (P and the missing column of
 * a raid5 row where nothing checksummed lies on it, say), which nothing
 * present can tell.
 */
static bool choose_order_missing(struct rc_state *st, struct mfs_chunk_map *map,
				 struct rc_dev_extent **ext, const struct probe *p, int np,
				 int *order, struct fit *fit)
{
	int n = map->num_stripes, perm[RC_MAX_STRIPES], i;
	enum verdict v;

	for (i = 0; i < n; i++)
		perm[i] = i;
	do {
		if (!canonical(perm, n, map->sub_stripes) || !consistent(st, ext, p, np, perm))
			continue;
		v = parity_holds(st, map, ext, perm, p, np);
		if (v == PARITY_FAILS)
			continue;
		fit->unchecked |= v == PARITY_UNCHECKED;
		if (!fit->nfit++)
			memcpy(order, perm, n * sizeof(*order));
	} while (fit->nfit < 2 && next_permutation(perm, n));
	return fit->nfit == 1;
}

static void why_no_order(struct rc_state *st, const struct mfs_chunk_map *map, int np,
			 int nmissing, const char *missing, const struct fit *fit)
{
	const char *what = (map->type & MFS_BLOCK_GROUP_DATA) ? "checksummed sectors" : "tree blocks";

	if (!nmissing || !fit->nfit) {
		rc_why(st, "the stripe order of %s chunk %llu cannot be told%s: the %d %s found there fit no single order whose parity holds",
		       mfs_profile_ui_name(map->type), (unsigned long long)map->logical,
		       nmissing ? " with a member missing" : "", np, what);
		return;
	}
	rc_why(st, "the stripe order of %s chunk %llu cannot be told with device%s %s missing: several orders fit the %d %s found there: %s; bring the device%s back to rebuild the chunk tree",
	       mfs_profile_ui_name(map->type), (unsigned long long)map->logical,
	       nmissing > 1 ? "s" : "", missing, np, what,
	       nmissing > 1 ? "nothing on the members present tells the missing stripes apart" :
	       fit->unchecked ? "the parity that would tell them apart cannot be checked without it (its stripe and a parity strip may be swapped)" :
	       "nothing found there tells them apart",
	       nmissing > 1 ? "s" : "");
}

/* The stripe order told by where the tree blocks or checksummed sectors lie. */
static int probe_order(struct rc_state *st, struct mfs_chunk_map *map,
		       struct rc_dev_extent **ext, int *order)
{
	const char *what = (map->type & MFS_BLOCK_GROUP_DATA) ? "checksummed sectors" : "tree blocks";
	int n = map->num_stripes, i, np, nmissing;
	struct fit fit = { 0 };
	char missing[64];
	struct probe *p;
	bool ok;

	if (n > MAX_ORDERED_STRIPES) {
		rc_why(st, "chunk %llu has %d stripes and no surviving chunk item: too many orders to try",
		       (unsigned long long)map->logical, n);
		return -EUCLEAN;
	}
	p = calloc(MAX_PROBES, sizeof(*p));
	if (!p)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		order[i] = i;
	place_stripes(st, map, ext, order);
	np = collect_probes(st, map, ext, p);
	nmissing = count_missing(st, ext, n, missing, sizeof(missing));
	/* nothing found in it: no live data or block, any order reads the same */
	ok = !np || (nmissing ? choose_order_missing(st, map, ext, p, np, order, &fit) :
		     choose_order(st, map, ext, p, np, order));
	free(p);
	if (!ok) {
		why_no_order(st, map, np, nmissing, missing, &fit);
		return -EUCLEAN;
	}
	if (np)
		rc_say(st, "chunk %llu: stripe order told from %d %s", (unsigned long long)map->logical,
		       np, what);
	return 0;
}

/* The device extents of a block group's chunk: contiguous after the sort. */
static int chunk_extents(struct rc_state *st, const struct rc_bg *bg, struct rc_dev_extent **ext)
{
	u64 i;
	int n = 0;

	for (i = 0; i < st->nr_dexts; i++) {
		if (st->dexts[i].chunk_offset != bg->start)
			continue;
		if (n == RC_MAX_STRIPES) {
			rc_why(st, "chunk %llu has more than %d device extents",
			       (unsigned long long)bg->start, RC_MAX_STRIPES);
			return -EUCLEAN;
		}
		st->dexts[i].claimed = true;
		ext[n++] = &st->dexts[i];
	}
	if (!n)
		rc_why(st, "block group %llu (%s) has no device extent in the device tree",
		       (unsigned long long)bg->start, mfs_bg_type_name(bg->flags));
	return n ? n : -EUCLEAN;
}

/* The chunk map as a chunk item must pass what a reader checks (format §7.2). */
static int validate(struct rc_state *st, const struct mfs_chunk_map *map,
		    struct rc_dev_extent **ext)
{
	u32 size = mfs_chunk_item_size(map->num_stripes);
	u64 ss = 0;
	void *buf = malloc(size);
	int ret, i;

	if (!buf)
		return -ENOMEM;
	mfs_chunk_map_to_item(st->fs, map, buf);
	ret = mfs_check_chunk_item(st->fs, map->logical, buf, size);
	free(buf);
	if (!ret)
		ss = mfs_map_stripe_size(map);
	for (i = 0; !ret && i < map->num_stripes; i++)
		if (ext[i]->length != ss)
			ret = -EUCLEAN;
	if (ret == -EUCLEAN)
		rc_why(st, "block group %llu (%s %s, length %llu) and its %d device extents do not make a valid chunk",
		       (unsigned long long)map->logical, mfs_bg_type_name(map->type),
		       mfs_profile_ui_name(map->type), (unsigned long long)map->length,
		       map->num_stripes);
	return ret;
}

/*
 * More of the chunk's stripes on missing members than any order of them
 * could read around (raid10: more than it has mirror sets)? Its order is
 * not looked for: the chunk is refused with the others that cannot be read.
 */
static bool surely_unreadable(struct rc_state *st, const struct mfs_chunk_map *map,
			      struct rc_dev_extent **ext)
{
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	int most = a->sub_stripes > 1 ? map->num_stripes / a->sub_stripes : a->tolerated_failures;
	char devids[64];

	return count_missing(st, ext, map->num_stripes, devids, sizeof(devids)) > most;
}

static int order_stripes(struct rc_state *st, struct mfs_chunk_map *map,
			 struct rc_dev_extent **ext, int *order)
{
	const struct mfs_raid_attr *a = mfs_profile(map->type);
	int i, ret;

	if (hint_order(st, map, ext, order)) {
		st->rc->nr_kept++;
		return 0;
	}
	for (i = 0; i < map->num_stripes; i++)
		order[i] = i;
	if (surely_unreadable(st, map, ext))
		return 0;
	/* every stripe a whole copy: any order maps the same bytes */
	if (!a->nparity && mfs_nr_data_stripes(map->type, map->num_stripes) == 1)
		return 0;
	ret = probe_order(st, map, ext, order);
	if (!ret)
		st->rc->nr_probed++;
	return ret;
}

static int build_chunk(struct rc_state *st, const struct rc_bg *bg)
{
	struct rc_dev_extent *ext[RC_MAX_STRIPES];
	int order[RC_MAX_STRIPES], n, ret;
	struct mfs_chunk_map *map;

	n = chunk_extents(st, bg, ext);
	if (n < 0)
		return n;
	map = mfs_alloc_chunk_map(n);
	if (!map)
		return -ENOMEM;
	map->logical = bg->start;
	map->length = bg->length;
	map->type = bg->flags & (MFS_BLOCK_GROUP_TYPE_MASK | MFS_BLOCK_GROUP_PROFILE_MASK);
	map->stripe_len = MFS_STRIPE_LEN;
	map->num_stripes = n;
	map->sub_stripes = mfs_profile(map->type)->sub_stripes;
	ret = validate(st, map, ext);
	if (!ret)
		ret = order_stripes(st, map, ext, order);
	if (!ret) {
		place_stripes(st, map, ext, order);
		ret = mfs_add_chunk_map(st->fs, map);
		if (ret == -EEXIST) {
			rc_why(st, "block group %llu overlaps another", (unsigned long long)bg->start);
			ret = -EUCLEAN;
		}
	}
	if (ret) {
		free(map);
		return ret;
	}
	st->rc->nr_chunks++;
	rc_say(st, "chunk %llu length %llu %s %s: %d stripe(s)", (unsigned long long)map->logical,
	       (unsigned long long)map->length, mfs_bg_type_name(map->type),
	       mfs_profile_ui_name(map->type), n);
	return 0;
}

/* Every device extent must belong to a chunk, every device be known (present or missing). */
static int check_devices(struct rc_state *st)
{
	struct mfs_fs_info *fs = st->fs;
	u64 i;
	int d;

	for (d = 0; d < fs->nr_devices; d++)
		fs->devices[d]->bytes_used = 0;
	for (i = 0; i < st->nr_dexts; i++) {
		const struct rc_dev_extent *e = &st->dexts[i];
		struct mfs_device *dev = mfs_find_device(fs, e->devid);

		if (!dev) {
			rc_why(st, "device %llu holds device extents but is not present",
			       (unsigned long long)e->devid);
			return -ENODEV;
		}
		if (!e->claimed) {
			rc_why(st, "device extent (devid %llu physical %llu) belongs to chunk %llu, which has no block group",
			       (unsigned long long)e->devid, (unsigned long long)e->physical,
			       (unsigned long long)e->chunk_offset);
			return -EUCLEAN;
		}
		dev->bytes_used += e->length;
	}
	for (d = 0; d < fs->nr_devices; d++)
		fs->devices[d]->in_tree = true;
	return 0;
}

/*
 * With members missing, every chunk must be readable from the others, as
 * a degraded mount asks: what the devices present cannot read could not
 * be kept by the new tree either (nor checked to be its right order).
 */
static int check_readable(struct rc_state *st)
{
	char why[sizeof(st->rc->why)];

	if (!mfs_explain_unreadable(st->fs, MFS_BLOCK_GROUP_SYSTEM | MFS_BLOCK_GROUP_METADATA,
				    why, sizeof(why)) &&
	    !mfs_explain_unreadable(st->fs, MFS_BLOCK_GROUP_DATA, why, sizeof(why)))
		return 0;
	rc_why(st, "%s", why);
	return -EIO;
}

static int build_chunks(struct rc_state *st)
{
	u64 i;
	int ret = 0;

	if (!st->nr_bgs) {
		rc_why(st, "the extent tree holds no block group");
		return -EUCLEAN;
	}
	for (i = 0; i < st->nr_bgs && !ret; i++)
		ret = build_chunk(st, &st->bgs[i]);
	if (!ret)
		ret = check_devices(st);
	if (!ret)
		ret = check_readable(st);
	return ret ? ret : rc_missing_known(st);
}

static void free_state(struct rc_state *st)
{
	u64 i;

	for (i = 0; i < st->nr_hints; i++)
		free(st->hints[i].item);
	free(st->hints);
	free(st->dev_hints);
	free(st->blocks);
	free(st->dexts);
	free(st->bgs);
	free(st->csums);
}

/* The open's load_chunks hook: the chunk maps, instead of the chunk tree. */
static int load_recovered_chunks(struct mfs_fs_info *fs, struct mfs_open_ctl *ctl)
{
	struct mfs_chunk_recover *rc = ctl->hook_arg;
	struct rc_state st = { .fs = fs, .rc = rc };
	int ret;

	rc->why[0] = 0;
	rc->nr_chunks = rc->nr_kept = rc->nr_probed = rc->nr_missing = 0;
	ret = rc_scan_devices(&st);
	if (!ret)
		ret = rc_read_trees(&st);
	if (!ret)
		ret = rc_collect_hints(&st);
	if (!ret && st.nr_dexts)
		qsort(st.dexts, st.nr_dexts, sizeof(*st.dexts), cmp_dext);
	/* the members missing first: the chunks keep their stripes */
	if (!ret)
		ret = rc_add_missing(&st);
	if (!ret)
		ret = build_chunks(&st);
	/* what is missing was weighed here: the open goes on without it, as a degraded one */
	if (!ret && rc->nr_missing)
		ctl->flags |= MFS_OPEN_DEGRADED;
	free_state(&st);
	if (ret && rc->why[0])
		snprintf(ctl->detail, sizeof(ctl->detail), "the chunk tree cannot be rebuilt: %.*s",
			 (int)sizeof(ctl->detail) - 40, rc->why);
	return ret;
}

/* The old chunk tree's blocks (all copies unreadable, maybe) given back by their extent items. */
static int drop_old_tree(struct mfs_trans_handle *trans, struct mfs_chunk_recover *rc)
{
	struct mfs_fs_info *fs = trans->fs_info;
	struct mfs_key key = { 0, MFS_EXTENT_ITEM_KEY, 0 };
	struct mfs_key *found = NULL;
	u64 n = 0, max = 0, i;
	struct mfs_path path;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_forward(fs->extent_root, &key, &path);
	while (ret == 0) {
		const struct mfs_extent_item *ei = leaf_item_data(path.nodes[0], path.slots[0]);

		leaf_item_key(path.nodes[0], path.slots[0], &key);
		if (key.type == MFS_EXTENT_ITEM_KEY &&
		    leaf_item_size(path.nodes[0], path.slots[0]) == sizeof(*ei) &&
		    (le64_to_cpu(ei->flags) & MFS_EXTENT_FLAG_TREE_BLOCK) &&
		    le64_to_cpu(ei->owner_root) == MFS_CHUNK_TREE_OBJECTID) {
			ret = MFS_ARRAY_RESERVE(found, n, max, 16);
			if (ret)
				break;
			found[n++] = key;
		}
		ret = mfs_next_item(fs->extent_root, &path);
	}
	mfs_release_path(&path);
	for (i = 0; i < n && ret >= 0; i++)
		ret = mfs_free_extent(trans, found[i].objectid, found[i].offset);
	free(found);
	rc->old_blocks = n;
	return ret < 0 ? ret : 0;
}

static int insert_items(struct mfs_trans_handle *trans)
{
	struct mfs_fs_info *fs = trans->fs_info;
	int i, ret = 0;

	for (i = 0; i < fs->nr_devices && !ret; i++) {
		struct mfs_device *dev = fs->devices[i];
		struct mfs_key key = { MFS_DEV_ITEMS_OBJECTID, MFS_DEV_ITEM_KEY, dev->devid };
		struct mfs_dev_item di = {
			.devid = cpu_to_le64(dev->devid),
			.total_bytes = cpu_to_le64(dev->total_bytes),
			.bytes_used = cpu_to_le64(dev->bytes_used),
			.generation = cpu_to_le64(trans->transid),
			.flags = cpu_to_le64(dev->flags),
			.sector_size = cpu_to_le32(fs->sectorsize),
		};

		memcpy(di.uuid, dev->uuid, MFS_UUID_SIZE);
		memcpy(di.fsid, fs->metadata_fsid, MFS_FSID_SIZE);
		dev->dirty = false;
		ret = mfs_insert_item(trans, fs->chunk_root, &key, &di, sizeof(di));
	}
	for (i = 0; i < fs->nr_chunks && !ret; i++) {
		const struct mfs_chunk_map *map = fs->chunks[i];
		struct mfs_key key = { MFS_FIRST_CHUNK_TREE_OBJECTID, MFS_CHUNK_ITEM_KEY, map->logical };
		u32 size = mfs_chunk_item_size(map->num_stripes);
		struct mfs_block_group *bg = mfs_lookup_block_group(fs, map->logical);
		u8 *buf;

		/* allocated in this transaction (degraded, say): the commit inserts its items */
		if (bg && bg->new_chunk)
			continue;
		buf = malloc(size);
		if (!buf)
			return -ENOMEM;
		mfs_chunk_map_to_item(fs, map, buf);
		ret = mfs_insert_item(trans, fs->chunk_root, &key, buf, size);
		free(buf);
	}
	return ret;
}

/*
 * The open's trees_loaded hook: opened writable, the new chunk tree in
 * one transaction. Its commit writes the system chunk array from the
 * maps and the superblocks that name the new root; until then the disk
 * keeps the old state, and a failure writes nothing.
 */
static int write_chunk_tree(struct mfs_fs_info *fs, struct mfs_open_ctl *ctl)
{
	struct mfs_chunk_recover *rc = ctl->hook_arg;
	struct mfs_trans_handle *trans;
	int ret;

	if (!(fs->open_flags & MFS_OPEN_WRITABLE))
		return 0;
	ret = mfs_start_transaction(fs, &trans);
	if (ret)
		return ret;
	ret = drop_old_tree(trans, rc);
	if (!ret)
		ret = mfs_create_tree(trans, MFS_CHUNK_TREE_OBJECTID, &fs->chunk_root);
	if (!ret)
		ret = insert_items(trans);
	if (ret) {
		snprintf(ctl->detail, sizeof(ctl->detail),
			 "writing the new chunk tree failed: %s; nothing was written", strerror(-ret));
		mfs_end_transaction(trans);
		mfs_abort_transaction(fs);
		return ret;
	}
	ret = mfs_commit_transaction(trans);
	if (ret)
		snprintf(ctl->detail, sizeof(ctl->detail), "committing the new chunk tree failed: %s",
			 strerror(-ret));
	return ret;
}

void mfs_chunk_recover_setup(struct mfs_open_ctl *ctl, struct mfs_chunk_recover *rc)
{
	ctl->load_chunks = load_recovered_chunks;
	ctl->trees_loaded = write_chunk_tree;
	ctl->hook_arg = rc;
}
