/*
 * Space reports and resizing: mfs filesystem df / usage / resize and
 * mfs device usage, for mounted (ioctl) and unmounted filesystems alike.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
#include <json-c/json.h>
#include "cmds/commands.h"
#include "cmds/restripe-cli.h"
#include "common/help.h"
#include "common/messages.h"
#include "common/units.h"
#include "common/open.h"
#include "common/target.h"
#include "common/format-output.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/ops/restripe.h"

/* ---------------- the space picture ---------------- */

/* One type|profile present in the chunks: a df line, a usage section. */
struct bg_group {
	u64 flags;		/* type and profile bits */
	u64 total, used;	/* logical */
	u64 raw_total, raw_used;
};

#define MAX_GROUPS	(3 * MFS_NR_RAID_TYPES)

struct usage {
	struct mfs_space sp;
	int *order;		/* device indexes by devid */
	u64 *alloc;		/* raw bytes of chunks on each device */
	struct bg_group groups[MAX_GROUPS];
	int ngroups;
};

/* A reduced chunk (written degraded, format §7.4) is a group of its own. */
static u64 group_flags(u64 type)
{
	return type & (MFS_BLOCK_GROUP_TYPE_MASK | MFS_BLOCK_GROUP_PROFILE_MASK |
		       MFS_BLOCK_GROUP_REDUCED);
}

/* The profile a group is shown as: "DUP (reduced)" below the one asked for. */
static const char *group_profile(const struct bg_group *g, char *buf, size_t len)
{
	if (!(g->flags & MFS_BLOCK_GROUP_REDUCED))
		return mfs_profile_ui_name(g->flags);
	snprintf(buf, len, "%s (reduced)", mfs_profile_ui_name(g->flags));
	return buf;
}

/* The profile the filesystem asks for chunks of this type. */
static u64 requested_profile(const struct mfs_space *sp, u64 flags)
{
	if (flags & MFS_BLOCK_GROUP_DATA)
		return sp->data_profile;
	if (flags & MFS_BLOCK_GROUP_SYSTEM)
		return sp->system_profile;
	return sp->metadata_profile;
}

/* JSON of a reduced group: that it is, and what it should be. */
static void json_add_reduced(struct json_object *o, const struct mfs_space *sp,
			     const struct bg_group *g)
{
	if (!(g->flags & MFS_BLOCK_GROUP_REDUCED))
		return;
	json_object_object_add(o, "reduced", json_object_new_boolean(1));
	mfs_json_add_string(o, "requested-profile",
			    mfs_profile_ui_name(requested_profile(sp, g->flags)));
}

/* Raw bytes of a chunk: every stripe, copies and parity included. */
static u64 chunk_raw(const struct mfs_space_chunk *c)
{
	return c->stripe_size * c->num_stripes;
}

static u64 chunk_raw_used(const struct mfs_space_chunk *c)
{
	int ndata = mfs_nr_data_stripes(c->type, c->num_stripes);

	return ndata ? c->used * c->num_stripes / ndata : 0;
}

/* Raw bytes of group flags chunks exactly `width` stripes wide (0: any) on devid. */
static u64 dev_width_alloc(const struct mfs_space *sp, u64 devid, u64 flags, u64 width)
{
	u64 sum = 0;
	int i, s;

	for (i = 0; i < sp->nr_chunks; i++) {
		const struct mfs_space_chunk *c = &sp->chunks[i];

		if (group_flags(c->type) != flags || (width && c->num_stripes != width))
			continue;
		for (s = 0; (u64)s < c->num_stripes; s++)
			if (c->stripes[s].devid == devid)
				sum += c->stripe_size;
	}
	return sum;
}

/* Order of the types in usage (Data, Metadata, System) and in df (Data, System, Metadata). */
static int type_rank(u64 flags, bool df)
{
	if (flags & MFS_BLOCK_GROUP_DATA)
		return 0;
	if (flags & MFS_BLOCK_GROUP_SYSTEM)
		return df ? 1 : 2;
	return df ? 2 : 1;
}

static int cmp_group(const void *a, const void *b, void *df)
{
	const struct bg_group *x = a, *y = b;
	int rx = type_rank(x->flags, *(bool *)df), ry = type_rank(y->flags, *(bool *)df);

	if (rx != ry)
		return rx - ry;
	return (int)mfs_bg_flags_to_raid_index(x->flags) - (int)mfs_bg_flags_to_raid_index(y->flags);
}

static int cmp_devid(const void *a, const void *b, void *arg)
{
	const struct mfs_space *sp = arg;
	u64 x = sp->devs[*(const int *)a].devid, y = sp->devs[*(const int *)b].devid;

	return x < y ? -1 : x > y;
}

static void usage_free(struct usage *u)
{
	mfs_space_free(&u->sp);
	free(u->order);
	free(u->alloc);
	memset(u, 0, sizeof(*u));
}

static int usage_load(struct mfs_target *t, struct usage *u, bool df)
{
	int i, j, s, ret;

	memset(u, 0, sizeof(*u));
	ret = mfs_target_space(t, &u->sp);
	if (ret) {
		error("cannot read the space information of '%s': %s", t->mnt, strerror(-ret));
		return ret;
	}
	u->order = calloc(u->sp.nr_devs + 1, sizeof(*u->order));
	u->alloc = calloc(u->sp.nr_devs + 1, sizeof(*u->alloc));
	if (!u->order || !u->alloc) {
		usage_free(u);
		error("out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < u->sp.nr_devs; i++)
		u->order[i] = i;
	qsort_r(u->order, u->sp.nr_devs, sizeof(*u->order), cmp_devid, &u->sp);
	for (i = 0; i < u->sp.nr_chunks; i++) {
		const struct mfs_space_chunk *c = &u->sp.chunks[i];
		u64 flags = group_flags(c->type);
		struct bg_group *g = NULL;

		for (j = 0; j < u->ngroups; j++)
			if (u->groups[j].flags == flags)
				g = &u->groups[j];
		if (!g) {
			if (u->ngroups == MAX_GROUPS)
				continue;
			g = &u->groups[u->ngroups++];
			g->flags = flags;
		}
		g->total += c->length;
		g->used += c->used;
		g->raw_total += chunk_raw(c);
		g->raw_used += chunk_raw_used(c);
		for (s = 0; (u64)s < c->num_stripes; s++)
			for (j = 0; j < u->sp.nr_devs; j++)
				if (u->sp.devs[j].devid == c->stripes[s].devid)
					u->alloc[j] += c->stripe_size;
	}
	qsort_r(u->groups, u->ngroups, sizeof(*u->groups), cmp_group, &df);
	return 0;
}

static bool dev_missing(const struct mfs_ioctl_space_dev *d)
{
	return d->missing || !d->path[0];
}

static const char *dev_path(const struct mfs_ioctl_space_dev *d)
{
	return dev_missing(d) ? "missing" : d->path;
}

static u64 dev_slack(const struct mfs_ioctl_space_dev *d)
{
	return d->device_size > d->total_bytes ? d->device_size - d->total_bytes : 0;
}

/* What chunks could still get: size minus chunks minus reserved ranges (may be negative while shrinking). */
static s64 dev_unallocated(const struct usage *u, int i)
{
	const struct mfs_ioctl_space_dev *d = &u->sp.devs[i];

	return (s64)d->total_bytes - (s64)u->alloc[i] -
	       (s64)mfs_device_reserved_bytes(d->total_bytes);
}

static bool dev_allocatable(const struct mfs_ioctl_space_dev *d)
{
	return !dev_missing(d) && !(d->flags & MFS_DEV_STATE_NO_ALLOC);
}

/* Logical bytes new chunks of type|profile could still get from the unallocated space. */
static u64 simulate(const struct usage *u, u64 flags)
{
	u64 *free_space = calloc(u->sp.nr_devs + 1, sizeof(*free_space)), ret;
	int i, n = 0;

	if (!free_space)
		return 0;
	for (i = 0; i < u->sp.nr_devs; i++) {
		s64 un = dev_unallocated(u, i);

		if (dev_allocatable(&u->sp.devs[i]))
			free_space[n++] = un > 0 ? (u64)un : 0;
	}
	ret = mfs_simulate_alloc_free(free_space, n, flags);
	free(free_space);
	return ret;
}

static int nr_allocatable(const struct usage *u)
{
	int i, n = 0;

	for (i = 0; i < u->sp.nr_devs; i++)
		n += dev_allocatable(&u->sp.devs[i]);
	return n;
}

/* Raw/logical of a type: from its chunks, else what a new chunk of the target profile would have. */
static double type_ratio(const struct usage *u, u64 type, u64 profile)
{
	const struct mfs_raid_attr *a = mfs_profile(profile);
	u64 raw = 0, logical = 0, num, den;
	int i, n;

	for (i = 0; i < u->ngroups; i++) {
		if (u->groups[i].flags & type) {
			raw += u->groups[i].raw_total;
			logical += u->groups[i].total;
		}
	}
	if (logical)
		return (double)raw / logical;
	n = nr_allocatable(u);
	if (a->devs_max && n > a->devs_max)
		n = a->devs_max;
	n -= n % a->devs_increment;
	if (n < a->devs_min)
		n = a->devs_min;
	mfs_profile_ratio(profile, n * a->dev_stripes, &num, &den);
	return den ? (double)num / den : 1.0;
}

/* Signed sizes: unallocated goes negative while a shrink is under way. */
static const char *pretty_signed(s64 v, unsigned int units)
{
	static __thread char bufs[8][40];
	static __thread unsigned int next;
	char *buf = bufs[next++ % 8];

	if (v >= 0)
		return pretty_size_mode((u64)v, units);
	snprintf(buf, sizeof(bufs[0]), "-%s", pretty_size_mode((u64)-v, units));
	return buf;
}

/* ---------------- targets ---------------- */

/*
 * The arguments name filesystems: a mount point each, or devices and
 * images, grouped by the filesystem their superblock names.
 */
typedef int (*target_fn)(struct mfs_target *t, void *ctx, bool first);

static int for_each_target(char **args, int nargs, bool writable, target_fn fn, void *ctx)
{
	const char **group = calloc(nargs + 1, sizeof(*group));
	bool *done = calloc(nargs + 1, sizeof(*done));
	int i, j, ret = 0, ngroups = 0;

	if (!group || !done) {
		free(group);
		free(done);
		error("out of memory");
		return 1;
	}
	for (i = 0; i < nargs; i++) {
		struct mfs_super_block sb, other;
		struct mfs_target t;
		struct stat st;
		char mnt[PATH_MAX];
		int n = 0;

		if (done[i])
			continue;
		group[n++] = args[i];
		done[i] = true;
		/* members of one unmounted filesystem open together */
		if (!(stat(args[i], &st) == 0 && S_ISDIR(st.st_mode)) &&
		    !mfs_find_mount_of_device(args[i], mnt, sizeof(mnt)) &&
		    mfs_probe_super(args[i], &sb) == 0) {
			for (j = i + 1; j < nargs; j++) {
				if (!done[j] && mfs_probe_super(args[j], &other) == 0 &&
				    !memcmp(sb.fsid, other.fsid, MFS_FSID_SIZE)) {
					group[n++] = args[j];
					done[j] = true;
				}
			}
		}
		if (mfs_target_open(group, n, writable, &t)) {
			ret = 1;
			continue;
		}
		if (fn(&t, ctx, ngroups++ == 0))
			ret = 1;
		if (mfs_target_close(&t))
			ret = 1;
	}
	free(group);
	free(done);
	return ret;
}

/*
 * Run fn on every target; with --format json, *array is the document's
 * array for fn to fill, printed when every target succeeded.
 */
static int run_json_or_text(const char *name, char **args, int nargs, target_fn fn, void *ctx,
			    struct json_object **array)
{
	struct json_object *root = NULL;
	int ret;

	if (mfs_output_format == MFS_OUTPUT_JSON) {
		root = mfs_json_start(name, array);
		if (!root) {
			error("out of memory");
			return 1;
		}
	}
	ret = for_each_target(args, nargs, false, fn, ctx);
	if (root) {
		if (ret)
			json_object_put(root);
		else
			mfs_json_print_free(root);
	}
	return ret;
}

/* ---------------- filesystem df ---------------- */

static const char * const cmd_filesystem_df_usage[] = {
	"mfs filesystem df [options] <path>|<device> [<device>...]",
	"",
	"Show space allocated to chunks and used in them, per type and profile.",
	"total is the logical size of the chunks of that type and profile,",
	"used what is stored in them.",
	"",
	UNIT_OPTLINES,
	NULL
};

struct df_ctx {
	unsigned int units;
	struct json_object *array;
};

static int df_one(struct mfs_target *t, void *arg, bool first)
{
	struct df_ctx *ctx = arg;
	struct usage u;
	int i;

	if (usage_load(t, &u, true))
		return 1;
	if (!first && !ctx->array)
		printf("\n");
	for (i = 0; i < u.ngroups; i++) {
		const struct bg_group *g = &u.groups[i];

		if (ctx->array) {
			struct json_object *o = mfs_json_array_add_object(ctx->array);

			mfs_json_add_string(o, "bg-type", mfs_bg_type_name(g->flags));
			mfs_json_add_string(o, "bg-profile", mfs_profile_ui_name(g->flags));
			mfs_json_add_u64(o, "total", g->total);
			mfs_json_add_u64(o, "used", g->used);
			json_add_reduced(o, &u.sp, g);
		} else {
			printf("%s, %s: total=%s, used=%s", mfs_bg_type_name(g->flags),
			       mfs_profile_ui_name(g->flags), pretty_size_mode(g->total, ctx->units),
			       pretty_size_mode(g->used, ctx->units));
			/* not a silent profile change: what it is below */
			if (g->flags & MFS_BLOCK_GROUP_REDUCED)
				printf(" (reduced: written degraded, the filesystem asks for %s)",
				       mfs_profile_ui_name(requested_profile(&u.sp, g->flags)));
			printf("\n");
		}
	}
	/* as btrfs: the reserve last, as a type of its own */
	if (ctx->array) {
		struct json_object *o = mfs_json_array_add_object(ctx->array);

		mfs_json_add_string(o, "bg-type", "GlobalReserve");
		mfs_json_add_string(o, "bg-profile", "single");
		mfs_json_add_u64(o, "total", u.sp.global_reserve);
		mfs_json_add_u64(o, "used", u.sp.global_reserve_used);
	} else {
		printf("GlobalReserve, single: total=%s, used=%s\n",
		       pretty_size_mode(u.sp.global_reserve, ctx->units),
		       pretty_size_mode(u.sp.global_reserve_used, ctx->units));
	}
	usage_free(&u);
	return 0;
}

static int cmd_filesystem_df(const struct cmd_struct *cmd, int argc, char **argv)
{
	struct df_ctx ctx = { 0 };

	ctx.units = get_unit_mode_from_arg(&argc, argv, 1);
	clean_args_no_options(cmd, argc, argv);
	if (check_argc_min(argc - optind, 1))
		return 1;
	return run_json_or_text("filesystem-df", argv + optind, argc - optind, df_one, &ctx,
				&ctx.array);
}
DEFINE_COMMAND(filesystem_df, "df", cmd_filesystem_df, cmd_filesystem_df_usage, NULL,
	       CMD_FORMAT_JSON);

/* ---------------- filesystem usage ---------------- */

static const char * const cmd_filesystem_usage_usage[] = {
	"mfs filesystem usage [options] <path>|<device> [<path>|<device>...]",
	"",
	"Show in detail how much space is allocated and used, overall and per device.",
	"Free (estimated) is the room left in data chunks plus what new data",
	"chunks of the data profile would get from each device's unallocated",
	"space, allocated the way the filesystem allocates them.",
	"",
	UNIT_OPTLINES,
	OPTLINE("-T", "show data in tabular format"),
	NULL
};

struct usage_ctx {
	unsigned int units;
	bool tabular;
	struct json_object *array;	/* --format json */
};

/* The "Overall" figures of filesystem usage. */
struct overall {
	u64 size, allocated, missing, slack, used, free_est, free_min, free_statfs;
	s64 unallocated;
	double data_ratio, meta_ratio;
	char multiple[64];	/* the types with several profiles, or "" */
};

static void compute_overall(const struct usage *u, struct overall *o)
{
	const struct mfs_space *sp = &u->sp;
	u64 data_free = 0;
	int i, j, counts[3] = { 0, 0, 0 };
	static const char * const type_words[3] = { "data", "metadata", "system" };

	memset(o, 0, sizeof(*o));
	for (i = 0; i < sp->nr_devs; i++) {
		const struct mfs_ioctl_space_dev *d = &sp->devs[i];

		o->size += d->total_bytes;
		o->slack += dev_slack(d);
		if (dev_missing(d))
			o->missing += d->total_bytes;
		o->unallocated += dev_unallocated(u, i);
	}
	for (i = 0; i < u->ngroups; i++) {
		const struct bg_group *g = &u->groups[i];

		o->allocated += g->raw_total;
		o->used += g->raw_used;
		if (g->flags & MFS_BLOCK_GROUP_DATA)
			data_free += g->total - min_t(u64, g->used, g->total);
		counts[type_rank(g->flags, false)]++;
	}
	o->data_ratio = type_ratio(u, MFS_BLOCK_GROUP_DATA, sp->data_profile);
	o->meta_ratio = type_ratio(u, MFS_BLOCK_GROUP_METADATA, sp->metadata_profile);
	o->free_est = data_free + simulate(u, MFS_BLOCK_GROUP_DATA | sp->data_profile);
	o->free_min = o->free_est;
	if (o->meta_ratio > o->data_ratio)
		o->free_min = data_free + simulate(u, MFS_BLOCK_GROUP_METADATA | sp->metadata_profile);
	o->free_statfs = sp->statfs_bfree;
	for (j = 0; j < 3; j++) {
		if (counts[j] < 2)
			continue;
		if (o->multiple[0])
			strcat(o->multiple, ", ");
		strcat(o->multiple, type_words[j]);
	}
}

static void print_overall(const struct usage *u, unsigned int units)
{
	int width = (units & UNITS_UNIT_MASK) == UNITS_HUMAN ? 10 : 18;
	struct overall o;

	compute_overall(u, &o);
	printf("Overall:\n");
	printf("    Device size:\t\t%*s\n", width, pretty_size_mode(o.size, units));
	printf("    Device allocated:\t\t%*s\n", width, pretty_size_mode(o.allocated, units));
	printf("    Device unallocated:\t\t%*s\n", width, pretty_signed(o.unallocated, units));
	printf("    Device missing:\t\t%*s\n", width, pretty_size_mode(o.missing, units));
	printf("    Device slack:\t\t%*s\n", width, pretty_size_mode(o.slack, units));
	printf("    Used:\t\t\t%*s\n", width, pretty_size_mode(o.used, units));
	printf("    Free (estimated):\t\t%*s\t(min: %s)\n", width, pretty_size_mode(o.free_est, units),
	       pretty_size_mode(o.free_min, units));
	printf("    Free (statfs, df):\t\t%*s\n", width, pretty_size_mode(o.free_statfs, units));
	printf("    Data ratio:\t\t\t%*.2f\n", width, o.data_ratio);
	printf("    Metadata ratio:\t\t%*.2f\n", width, o.meta_ratio);
	printf("    Global reserve:\t\t%*s\t(used: %s)\n", width,
	       pretty_size_mode(u->sp.global_reserve, units),
	       pretty_size_mode(u->sp.global_reserve_used, units));
	if (o.multiple[0])
		printf("    Multiple profiles:\t\t%*s\t(%s)\n", width, "yes", o.multiple);
	else
		printf("    Multiple profiles:\t\t%*s\n", width, "no");
}

/*
 * filesystem usage as JSON: the overall figures, then per type and profile
 * its size, use and the bytes on each device, then each device's
 * unallocated space. Bytes throughout, whatever the unit flags.
 */
static int usage_json(const struct usage *u, const char *mnt, struct json_object *array)
{
	const struct mfs_space *sp = &u->sp;
	struct json_object *fs = mfs_json_array_add_object(array), *o, *groups, *unalloc;
	struct overall ov;
	int i, k;

	if (!fs)
		return -ENOMEM;
	compute_overall(u, &ov);
	mfs_json_add_string(fs, "path", mnt);
	o = mfs_json_add_object(fs, "overall");
	groups = mfs_json_add_array(fs, "allocations");
	unalloc = mfs_json_add_array(fs, "unallocated");
	if (!o || !groups || !unalloc)
		return -ENOMEM;
	mfs_json_add_u64(o, "device-size", ov.size);
	mfs_json_add_u64(o, "device-allocated", ov.allocated);
	mfs_json_add_s64(o, "device-unallocated", ov.unallocated);
	mfs_json_add_u64(o, "device-missing", ov.missing);
	mfs_json_add_u64(o, "device-slack", ov.slack);
	mfs_json_add_u64(o, "used", ov.used);
	mfs_json_add_u64(o, "free-estimated", ov.free_est);
	mfs_json_add_u64(o, "free-estimated-min", ov.free_min);
	mfs_json_add_u64(o, "free-statfs-df", ov.free_statfs);
	mfs_json_add_ratio(o, "data-ratio", ov.data_ratio);
	mfs_json_add_ratio(o, "metadata-ratio", ov.meta_ratio);
	mfs_json_add_u64(o, "global-reserve", sp->global_reserve);
	mfs_json_add_u64(o, "global-reserve-used", sp->global_reserve_used);
	mfs_json_add_string(o, "multiple-profiles", ov.multiple[0] ? ov.multiple : "no");
	for (i = 0; i < u->ngroups; i++) {
		const struct bg_group *g = &u->groups[i];
		struct json_object *go = mfs_json_array_add_object(groups), *devs;

		if (!go)
			return -ENOMEM;
		mfs_json_add_string(go, "bg-type", mfs_bg_type_name(g->flags));
		mfs_json_add_string(go, "bg-profile", mfs_profile_ui_name(g->flags));
		mfs_json_add_u64(go, "size", g->total);
		mfs_json_add_u64(go, "used", g->used);
		json_add_reduced(go, sp, g);
		devs = mfs_json_add_array(go, "devices");
		for (k = 0; devs && k < sp->nr_devs; k++) {
			const struct mfs_ioctl_space_dev *d = &sp->devs[u->order[k]];
			u64 a = dev_width_alloc(sp, d->devid, g->flags, 0);
			struct json_object *dobj;

			if (!a)
				continue;
			dobj = mfs_json_array_add_object(devs);
			if (!dobj)
				return -ENOMEM;
			mfs_json_add_u64(dobj, "devid", d->devid);
			mfs_json_add_string(dobj, "path", dev_path(d));
			mfs_json_add_u64(dobj, "size", a);
		}
		if (!devs)
			return -ENOMEM;
	}
	for (k = 0; k < sp->nr_devs; k++) {
		const struct mfs_ioctl_space_dev *d = &sp->devs[u->order[k]];
		struct json_object *dobj = mfs_json_array_add_object(unalloc);

		if (!dobj)
			return -ENOMEM;
		mfs_json_add_u64(dobj, "devid", d->devid);
		mfs_json_add_string(dobj, "path", dev_path(d));
		mfs_json_add_s64(dobj, "size", dev_unallocated(u, u->order[k]));
	}
	return 0;
}

static void print_linear(const struct usage *u, unsigned int units)
{
	const struct mfs_space *sp = &u->sp;
	char name[40];
	int i, k;

	for (i = 0; i < u->ngroups; i++) {
		const struct bg_group *g = &u->groups[i];

		printf("%s,%s: Size:%s, Used:%s (%.2f%%)\n", mfs_bg_type_name(g->flags),
		       group_profile(g, name, sizeof(name)), pretty_size_mode(g->total, units),
		       pretty_size_mode(g->used, units),
		       g->total ? 100.0 * g->used / g->total : 0.0);
		for (k = 0; k < sp->nr_devs; k++) {
			const struct mfs_ioctl_space_dev *d = &sp->devs[u->order[k]];
			u64 a = dev_width_alloc(sp, d->devid, g->flags, 0);

			if (a)
				printf("   %s\t%10s\n", dev_path(d), pretty_size_mode(a, units));
		}
		printf("\n");
	}
	printf("Unallocated:\n");
	for (k = 0; k < sp->nr_devs; k++)
		printf("   %s\t%10s\n", dev_path(&sp->devs[u->order[k]]),
		       pretty_signed(dev_unallocated(u, u->order[k]), units));
}

/*
 * A text table: cells are left ('<') or right ('>') aligned, or filled
 * with dashes ('-'); columns are as wide as their widest cell, one space
 * apart.
 */
struct table {
	int ncols, nrows;
	/* the alignment character, then the text: a device path at most */
	char (*cells)[1 + sizeof(((struct mfs_ioctl_space_dev *)0)->path)];
};

static int table_init(struct table *tb, int ncols, int nrows)
{
	tb->ncols = ncols;
	tb->nrows = nrows;
	tb->cells = calloc((size_t)ncols * nrows, sizeof(*tb->cells));
	return tb->cells ? 0 : -ENOMEM;
}

static void table_set(struct table *tb, int col, int row, char align, const char *text)
{
	snprintf(tb->cells[row * tb->ncols + col], sizeof(tb->cells[0]), "%c%s", align, text);
}

static void table_print(struct table *tb)
{
	int *w = calloc(tb->ncols, sizeof(*w));
	char line[4096];
	int r, c;

	if (!w)
		return;
	for (c = 0; c < tb->ncols; c++)
		for (r = 0; r < tb->nrows; r++) {
			const char *cell = tb->cells[r * tb->ncols + c];
			int len = cell[0] ? (int)strlen(cell + 1) : 0;

			if (cell[0] != '-' && len > w[c])
				w[c] = len;
		}
	for (r = 0; r < tb->nrows; r++) {
		int pos = 0;

		for (c = 0; c < tb->ncols && pos + w[c] + 1 < (int)sizeof(line); c++) {
			const char *cell = tb->cells[r * tb->ncols + c];

			if (cell[0] == '-') {
				memset(line + pos, '-', w[c]);
				pos += w[c];
			} else {
				pos += snprintf(line + pos, sizeof(line) - pos, "%*s",
						cell[0] == '<' ? -w[c] : w[c], cell[0] ? cell + 1 : "");
			}
			if (c != tb->ncols - 1)
				line[pos++] = ' ';
		}
		while (pos > 0 && line[pos - 1] == ' ')
			pos--;
		line[pos] = 0;
		printf("%s\n", line);
	}
	free(w);
}

static void print_tabular(const struct usage *u, unsigned int units)
{
	const struct mfs_space *sp = &u->sp;
	int ncols = 2 + u->ngroups + 3, ndev = sp->nr_devs;
	int unalloc_col = 2 + u->ngroups, total_col = unalloc_col + 1, slack_col = unalloc_col + 2;
	int foot = 3 + ndev;
	s64 total_unalloc = 0;
	u64 total_size = 0, total_slack = 0;
	struct table tb;
	char num[32], name[40];
	int i, k;

	if (table_init(&tb, ncols, foot + 3)) {
		error("out of memory");
		return;
	}
	for (i = 0; i < u->ngroups; i++) {
		table_set(&tb, 2 + i, 0, '<', mfs_bg_type_name(u->groups[i].flags));
		table_set(&tb, 2 + i, 1, '<', group_profile(&u->groups[i], name, sizeof(name)));
	}
	table_set(&tb, 0, 1, '<', "Id");
	table_set(&tb, 1, 1, '<', "Path");
	table_set(&tb, unalloc_col, 1, '<', "Unallocated");
	table_set(&tb, total_col, 1, '<', "Total");
	table_set(&tb, slack_col, 1, '<', "Slack");
	for (i = 0; i < ncols; i++) {
		table_set(&tb, i, 2, '-', "");
		table_set(&tb, i, foot, '-', "");
	}
	for (k = 0; k < ndev; k++) {
		const struct mfs_ioctl_space_dev *d = &sp->devs[u->order[k]];
		s64 un = dev_unallocated(u, u->order[k]);
		u64 slack = dev_slack(d);

		snprintf(num, sizeof(num), "%llu", (unsigned long long)d->devid);
		table_set(&tb, 0, 3 + k, '>', num);
		table_set(&tb, 1, 3 + k, '<', dev_path(d));
		for (i = 0; i < u->ngroups; i++) {
			u64 a = dev_width_alloc(sp, d->devid, u->groups[i].flags, 0);

			table_set(&tb, 2 + i, 3 + k, '>', a ? pretty_size_mode(a, units) : "-");
		}
		table_set(&tb, unalloc_col, 3 + k, '>', pretty_signed(un, units));
		table_set(&tb, total_col, 3 + k, '>', pretty_size_mode(d->total_bytes, units));
		table_set(&tb, slack_col, 3 + k, '>', slack ? pretty_size_mode(slack, units) : "-");
		total_unalloc += un;
		total_size += d->total_bytes;
		total_slack += slack;
	}
	table_set(&tb, 1, foot + 1, '<', "Total");
	table_set(&tb, 1, foot + 2, '<', "Used");
	for (i = 0; i < u->ngroups; i++) {
		table_set(&tb, 2 + i, foot + 1, '>', pretty_size_mode(u->groups[i].total, units));
		table_set(&tb, 2 + i, foot + 2, '>', pretty_size_mode(u->groups[i].used, units));
	}
	table_set(&tb, unalloc_col, foot + 1, '>', pretty_signed(total_unalloc, units));
	table_set(&tb, total_col, foot + 1, '>', pretty_size_mode(total_size, units));
	table_set(&tb, slack_col, foot + 1, '>', pretty_size_mode(total_slack, units));
	table_print(&tb);
	free(tb.cells);
}

static int usage_one(struct mfs_target *t, void *arg, bool first)
{
	struct usage_ctx *ctx = arg;
	struct usage u;

	if (usage_load(t, &u, false))
		return 1;
	if (ctx->array) {
		int ret = usage_json(&u, t->mnt, ctx->array);

		if (ret)
			error("out of memory");
		usage_free(&u);
		return ret ? 1 : 0;
	}
	if (!first)
		printf("\n");
	print_overall(&u, ctx->units);
	printf("\n");
	if (ctx->tabular)
		print_tabular(&u, ctx->units);
	else
		print_linear(&u, ctx->units);
	usage_free(&u);
	return 0;
}

static int cmd_filesystem_usage(const struct cmd_struct *cmd, int argc, char **argv)
{
	struct usage_ctx ctx = { 0 };
	int c;

	ctx.units = get_unit_mode_from_arg(&argc, argv, 1);
	while ((c = getopt_long(argc, argv, "T", NULL, NULL)) != -1) {
		switch (c) {
		case 'T':
			ctx.tabular = true;
			break;
		default:
			usage_unknown_option(cmd, argv);
		}
	}
	if (check_argc_min(argc - optind, 1))
		return 1;
	return run_json_or_text("filesystem-usage", argv + optind, argc - optind, usage_one, &ctx,
				&ctx.array);
}
DEFINE_COMMAND(filesystem_usage, "usage", cmd_filesystem_usage, cmd_filesystem_usage_usage, NULL,
	       CMD_FORMAT_JSON);

/* ---------------- device usage ---------------- */

static const char * const cmd_device_usage_usage[] = {
	"mfs device usage [options] <path>|<device> [<path>|<device>...]",
	"",
	"Show, per device, the space allocated to each type and profile.",
	"Striped profiles show the number of stripes, e.g. Data,RAID0/3.",
	"",
	UNIT_OPTLINES,
	NULL
};

static bool profile_is_striped(u64 flags)
{
	return flags & (MFS_BLOCK_GROUP_RAID0 | MFS_BLOCK_GROUP_RAID10 |
			MFS_BLOCK_GROUP_RAID5 | MFS_BLOCK_GROUP_RAID6);
}

/* "   <label>:" padded so that the %10s values line up. */
static void print_dev_line(const char *label, const char *value)
{
	int pad = 20 - (int)strlen(label) + 1;

	printf("   %s:%*s%10s\n", label, pad > 1 ? pad : 1, "", value);
}

/* The next chunk width of a group above prev, or 0 when there is none. */
static u64 next_width(const struct mfs_space *sp, u64 flags, u64 prev)
{
	u64 best = 0;
	int i;

	for (i = 0; i < sp->nr_chunks; i++) {
		u64 w = sp->chunks[i].num_stripes;

		if (group_flags(sp->chunks[i].type) == flags && w > prev && (!best || w < best))
			best = w;
	}
	return best;
}

static void print_device_block(const struct usage *u, int idx, unsigned int units)
{
	const struct mfs_space *sp = &u->sp;
	const struct mfs_ioctl_space_dev *d = &sp->devs[idx];
	char label[64];
	int g;

	printf("%s, ID: %llu\n", dev_path(d), (unsigned long long)d->devid);
	print_dev_line("Device size", pretty_size_mode(d->device_size, units));
	print_dev_line("Device slack", pretty_size_mode(dev_slack(d), units));
	for (g = 0; g < u->ngroups; g++) {
		u64 flags = u->groups[g].flags, w, sum;
		const char *type = mfs_bg_type_name(flags), *prof = mfs_profile_ui_name(flags);

		if (!profile_is_striped(flags)) {
			sum = dev_width_alloc(sp, d->devid, flags, 0);
			snprintf(label, sizeof(label), "%s,%s", type, prof);
			if (sum)
				print_dev_line(label, pretty_size_mode(sum, units));
			continue;
		}
		/* striped profiles: a line per chunk width, narrowest first */
		for (w = next_width(sp, flags, 0); w; w = next_width(sp, flags, w)) {
			sum = dev_width_alloc(sp, d->devid, flags, w);
			snprintf(label, sizeof(label), "%s,%s/%llu", type, prof, (unsigned long long)w);
			if (sum)
				print_dev_line(label, pretty_size_mode(sum, units));
		}
	}
	print_dev_line("Unallocated", pretty_signed(dev_unallocated(u, idx), units));
}

/* One device of device usage as JSON: the same lines, bytes. */
static int device_json(const struct usage *u, int idx, struct json_object *array)
{
	const struct mfs_space *sp = &u->sp;
	const struct mfs_ioctl_space_dev *d = &sp->devs[idx];
	struct json_object *o = mfs_json_array_add_object(array), *allocs;
	int g;

	if (!o)
		return -ENOMEM;
	mfs_json_add_u64(o, "devid", d->devid);
	mfs_json_add_string(o, "path", dev_path(d));
	mfs_json_add_u64(o, "device-size", d->device_size);
	mfs_json_add_u64(o, "device-slack", dev_slack(d));
	allocs = mfs_json_add_array(o, "allocations");
	if (!allocs)
		return -ENOMEM;
	for (g = 0; g < u->ngroups; g++) {
		u64 flags = u->groups[g].flags, w = 0, sum;
		bool striped = profile_is_striped(flags);

		/* striped profiles: an entry per chunk width, as the text lines */
		do {
			struct json_object *a;

			if (striped) {
				w = next_width(sp, flags, w);
				if (!w)
					break;
			}
			sum = dev_width_alloc(sp, d->devid, flags, w);
			if (!sum)
				continue;
			a = mfs_json_array_add_object(allocs);
			if (!a)
				return -ENOMEM;
			mfs_json_add_string(a, "bg-type", mfs_bg_type_name(flags));
			mfs_json_add_string(a, "bg-profile", mfs_profile_ui_name(flags));
			if (striped)
				mfs_json_add_u64(a, "stripes", w);
			mfs_json_add_u64(a, "size", sum);
		} while (striped);
	}
	mfs_json_add_s64(o, "unallocated", dev_unallocated(u, idx));
	return 0;
}

struct device_usage_ctx {
	unsigned int units;
	struct json_object *array;	/* --format json */
};

static int device_usage_one(struct mfs_target *t, void *arg, bool first)
{
	struct device_usage_ctx *ctx = arg;
	struct usage u;
	int k, ret = 0;

	if (usage_load(t, &u, false))
		return 1;
	for (k = 0; k < u.sp.nr_devs && !ret; k++) {
		if (ctx->array) {
			ret = device_json(&u, u.order[k], ctx->array);
			continue;
		}
		if (!first || k)
			printf("\n");
		print_device_block(&u, u.order[k], ctx->units);
	}
	if (ret)
		error("out of memory");
	usage_free(&u);
	return ret ? 1 : 0;
}

static int cmd_device_usage(const struct cmd_struct *cmd, int argc, char **argv)
{
	struct device_usage_ctx ctx = { 0 };

	ctx.units = get_unit_mode_from_arg(&argc, argv, 1);
	clean_args_no_options(cmd, argc, argv);
	if (check_argc_min(argc - optind, 1))
		return 1;
	return run_json_or_text("device-usage", argv + optind, argc - optind, device_usage_one, &ctx,
				&ctx.array);
}
DEFINE_COMMAND(device_usage, "usage", cmd_device_usage, cmd_device_usage_usage, NULL,
	       CMD_FORMAT_JSON);

/* ---------------- filesystem resize ---------------- */

static const char * const cmd_filesystem_resize_usage[] = {
	"mfs filesystem resize [options] [<devid>:][+/-]<size>[kKmMgGtTpPeE]|[<devid>:]max <path>|<device>",
	"mfs filesystem resize cancel <path>|<device>",
	"",
	"Resize one device of a filesystem, mounted or not.",
	"The devid defaults to 1. max is the whole underlying device. Growing is",
	"immediate; shrinking first moves every chunk that lies past the new end",
	"(through the restriper, with progress), and is refused before anything",
	"moves when those chunks cannot fit elsewhere.",
	"",
	OPTLINE("--offline", "accepted for compatibility (not needed)"),
	OPTLINE("-q|--quiet", "no progress output while chunks move"),
	NULL
};

enum resize_kind { RESIZE_ABS, RESIZE_GROW_BY, RESIZE_SHRINK_BY, RESIZE_MAX };

struct resize_req {
	bool has_devid;
	u64 devid;
	enum resize_kind kind;
	u64 amount;
};

static int parse_resize(const char *arg, struct resize_req *r)
{
	const char *colon = strchr(arg, ':'), *s = arg;

	memset(r, 0, sizeof(*r));
	if (colon) {
		char *end;

		if (colon == arg || arg[0] < '0' || arg[0] > '9')
			return -EINVAL;
		r->devid = strtoull(arg, &end, 10);
		if (end != colon)
			return -EINVAL;
		r->has_devid = true;
		s = colon + 1;
	}
	if (!strcmp(s, "max")) {
		r->kind = RESIZE_MAX;
		return 0;
	}
	if (*s == '+' || *s == '-') {
		r->kind = *s == '+' ? RESIZE_GROW_BY : RESIZE_SHRINK_BY;
		s++;
	}
	if (*s < '0' || *s > '9')
		return -EINVAL;
	return parse_size(s, &r->amount);
}

static bool chunk_past(const struct mfs_space_chunk *c, u64 devid, u64 new_size)
{
	int s;

	for (s = 0; (u64)s < c->num_stripes; s++)
		if (c->stripes[s].devid == devid && c->stripes[s].physical + c->stripe_size > new_size)
			return true;
	return false;
}

/* What a shrink moves: the chunks with a stripe past the new end, and their used bytes. */
static void shrink_moves(const struct mfs_space *sp, u64 devid, u64 new_size, u64 *nmove, u64 *bytes)
{
	int i;

	*nmove = *bytes = 0;
	for (i = 0; i < sp->nr_chunks; i++) {
		if (!chunk_past(&sp->chunks[i], devid, new_size))
			continue;
		(*nmove)++;
		*bytes += sp->chunks[i].used;
	}
}

static int resize_cancel(struct mfs_target *t)
{
	struct mfs_ioctl_restripe_status st;
	int ret;

	ret = mfs_target_restripe_status(t, &st);
	if (ret || st.state == MFS_RESTRIPE_NONE || st.args.op != MFS_RESTRIPE_OP_RESIZE) {
		error("unable to cancel resize on '%s': no resize in progress", t->mnt);
		return 1;
	}
	ret = mfs_target_restripe_ctl(t, MFS_RESTRIPE_CTL_CANCEL);
	if (ret) {
		error("unable to cancel resize on '%s': %s", t->mnt, strerror(-ret));
		return 1;
	}
	printf("Request to cancel resize\n");
	return 0;
}

/*
 * The device a resize acts on: devid, or with none given devid 1, else the
 * lowest (with btrfs's warning). NULL after an error message.
 */
static const struct mfs_ioctl_space_dev *resize_device(const struct mfs_space *sp,
						       const struct resize_req *r, const char *mnt)
{
	const struct mfs_ioctl_space_dev *d = NULL;
	u64 devid = r->has_devid ? r->devid : 1;
	int i;

	for (i = 0; i < sp->nr_devs; i++)
		if (sp->devs[i].devid == devid)
			d = &sp->devs[i];
	if (!d && !r->has_devid && sp->nr_devs) {
		d = &sp->devs[0];
		for (i = 1; i < sp->nr_devs; i++)
			if (sp->devs[i].devid < d->devid)
				d = &sp->devs[i];
		warning("no devid specified means devid 1 which does not exist, using lowest devid %llu as a fallback",
			(unsigned long long)d->devid);
	}
	if (!d) {
		error("cannot find devid: %llu", (unsigned long long)devid);
		return NULL;
	}
	if (dev_missing(d)) {
		error("unable to resize '%s': device %llu is missing", mnt,
		      (unsigned long long)d->devid);
		return NULL;
	}
	return d;
}

/* The size asked for, from the current one; -1 after an error message. */
static int resize_target_size(const struct mfs_ioctl_space_dev *d, const char *arg,
			      const struct resize_req *r, const char *mnt, u64 *new_size)
{
	u64 old = d->total_bytes;

	switch (r->kind) {
	case RESIZE_MAX:
		*new_size = d->device_size;
		break;
	case RESIZE_GROW_BY:
		if (r->amount > (u64)-1 - old) {
			error("unable to resize '%s': %s is too large", mnt, arg);
			return -1;
		}
		*new_size = old + r->amount;
		break;
	case RESIZE_SHRINK_BY:
		if (r->amount > old) {
			error("current size is %s which is smaller than %s", pretty_size(old),
			      pretty_size(r->amount));
			return -1;
		}
		*new_size = old - r->amount;
		break;
	default:
		*new_size = r->amount;
	}
	*new_size = round_down(*new_size, SZ_4K);
	return 0;
}

static int resize_grow(struct mfs_target *t, const struct mfs_ioctl_space_dev *d, u64 new_size)
{
	int err;

	if (new_size > d->device_size) {
		error("unable to resize '%s': no enough free space (device %llu is %s, %s requested)",
		      t->mnt, (unsigned long long)d->devid, pretty_size(d->device_size),
		      pretty_size(new_size));
		return 1;
	}
	/* an exclusive operation, as in btrfs: not beside a running or paused one */
	if (mfs_check_exclusive(t, "resize", false))
		return 1;
	err = mfs_target_grow(t, d->devid, new_size);
	if (err == -EINPROGRESS)
		mfs_check_exclusive(t, "resize", false);
	else if (err)
		error("unable to resize '%s': %s", t->mnt,
		      err == -EFBIG ? "no enough free space" : strerror(-err));
	return err ? 1 : 0;
}

/* A shrink is a restripe: whether it fits is the engine's to say, before anything moves. */
static int resize_shrink(struct mfs_target *t, const struct mfs_space *sp,
			 const struct mfs_ioctl_space_dev *d, u64 new_size, bool quiet)
{
	struct mfs_ioctl_restripe_args *a;
	char started[128] = "";
	u64 nmove, bytes;
	int ret;

	if (new_size < MFS_MIN_DEVICE_SIZE) {
		error("unable to resize '%s': the new size %s is below the minimum device size %s",
		      t->mnt, pretty_size(new_size), pretty_size(MFS_MIN_DEVICE_SIZE));
		return 1;
	}
	shrink_moves(sp, d->devid, new_size, &nmove, &bytes);
	if (nmove && !quiet)
		snprintf(started, sizeof(started), "Relocating %llu chunk%s (%s used) past the new end",
			 (unsigned long long)nmove, nmove == 1 ? "" : "s", pretty_size(bytes));
	a = calloc(1, sizeof(*a));
	if (!a) {
		error("out of memory");
		return 1;
	}
	a->op = MFS_RESTRIPE_OP_RESIZE;
	a->devids[0] = d->devid;
	a->nr_devids = 1;
	a->new_size = new_size;
	ret = mfs_run_restripe_started(t, a, false, quiet, "resize", started);
	free(a);
	return ret;
}

static int do_resize(struct mfs_target *t, const char *arg, const struct resize_req *r, bool quiet)
{
	const struct mfs_ioctl_space_dev *d;
	struct mfs_space sp;
	u64 new_size;
	int ret = 1;

	if (mfs_target_space(t, &sp)) {
		error("cannot read the devices of '%s'", t->mnt);
		return 1;
	}
	d = resize_device(&sp, r, t->mnt);
	if (!d || resize_target_size(d, arg, r, t->mnt, &new_size))
		goto out;
	printf("Resize device id %llu (%s) from %s to %s\n", (unsigned long long)d->devid,
	       dev_path(d), pretty_size(d->total_bytes),
	       r->kind == RESIZE_MAX ? "max" : pretty_size(new_size));
	fflush(stdout);
	if (new_size == d->total_bytes)
		ret = 0;
	else if (new_size > d->total_bytes)
		ret = resize_grow(t, d, new_size);
	else
		ret = resize_shrink(t, &sp, d, new_size, quiet);
out:
	mfs_space_free(&sp);
	return ret;
}

static int cmd_filesystem_resize(const struct cmd_struct *cmd, int argc, char **argv)
{
	enum { OPT_OFFLINE = 256 };
	static const struct option longopts[] = {
		{ "offline", no_argument, NULL, OPT_OFFLINE },
		{ "quiet", no_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 }
	};
	struct resize_req req;
	struct mfs_target t;
	const char *arg;
	bool quiet = false, cancel;
	int c, ret, nopts;

	/* "-1g" is a size, not an option: options end before it */
	for (nopts = 1; nopts < argc; nopts++)
		if (argv[nopts][0] == '-' && argv[nopts][1] >= '0' && argv[nopts][1] <= '9')
			break;
	while ((c = getopt_long(nopts, argv, "+q", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_OFFLINE:
			break;
		case 'q':
			quiet = true;
			break;
		default:
			usage_unknown_option(cmd, argv);
		}
	}
	if (optind < argc && !strcmp(argv[optind], "--"))
		optind++;
	if (check_argc_min(argc - optind, 2))
		return 1;
	arg = argv[optind];
	cancel = !strcmp(arg, "cancel");
	if (!cancel && parse_resize(arg, &req)) {
		error("invalid resize argument: '%s'", arg);
		return 1;
	}
	if (mfs_target_open((const char * const *)argv + optind + 1, argc - optind - 1, true, &t))
		return 1;
	ret = cancel ? resize_cancel(&t) : do_resize(&t, arg, &req, quiet);
	if (mfs_target_close(&t))
		ret = 1;
	return ret;
}
DEFINE_SIMPLE_COMMAND(filesystem_resize, "resize");
