/*
 * The space picture the reports share (mfs filesystem df / usage, mfs
 * device usage, resize): a filesystem's chunks, devices and groups, and
 * the loop over the filesystems the arguments name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
#include <json-c/json.h>
#include "cmds/space.h"
#include "common/help.h"
#include "common/messages.h"
#include "common/units.h"
#include "common/open.h"
#include "common/format-output.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/volumes/volumes.h"

/* A reduced chunk (written degraded, format §7.4) is a group of its own. */
u64 group_flags(u64 type)
{
	return type & (MFS_BLOCK_GROUP_TYPE_MASK | MFS_BLOCK_GROUP_PROFILE_MASK |
		       MFS_BLOCK_GROUP_REDUCED);
}

/* The profile a group is shown as: "DUP (reduced)" below the one asked for. */
const char *group_profile(const struct bg_group *g, char *buf, size_t len)
{
	if (!(g->flags & MFS_BLOCK_GROUP_REDUCED))
		return mfs_profile_ui_name(g->flags);
	snprintf(buf, len, "%s (reduced)", mfs_profile_ui_name(g->flags));
	return buf;
}

/* The profile the filesystem asks for chunks of this type. */
u64 requested_profile(const struct mfs_space *sp, u64 flags)
{
	if (flags & MFS_BLOCK_GROUP_DATA)
		return sp->data_profile;
	if (flags & MFS_BLOCK_GROUP_SYSTEM)
		return sp->system_profile;
	return sp->metadata_profile;
}

/* JSON of a reduced group: that it is, and what it should be. */
void json_add_reduced(struct json_object *o, const struct mfs_space *sp,
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
u64 dev_width_alloc(const struct mfs_space *sp, u64 devid, u64 flags, u64 width)
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
int type_rank(u64 flags, bool df)
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

void usage_free(struct usage *u)
{
	mfs_space_free(&u->sp);
	free(u->order);
	free(u->alloc);
	memset(u, 0, sizeof(*u));
}

int usage_load(struct mfs_target *t, struct usage *u, bool df)
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

int check_own_fsid_device(struct mfs_target *t, const char *path,
			  const struct mfs_super_block *sb, bool force, bool target)
{
	u64 devid = le64_to_cpu(sb->dev_item.devid);
	struct mfs_space sp;
	bool member = true;	/* when the members cannot be listed */
	int i;

	_Static_assert(sizeof(sp.devs[0].uuid) == MFS_UUID_SIZE, "device uuid");
	if (!mfs_target_space(t, &sp)) {
		member = false;
		for (i = 0; i < sp.nr_devs; i++)
			member |= sp.devs[i].devid == devid &&
				  !memcmp(sp.devs[i].uuid, sb->dev_item.uuid, MFS_UUID_SIZE);
		mfs_space_free(&sp);
	}
	if (member) {
		if (target)
			error("target device %s is a member of this filesystem", path);
		else
			error("%s is already a member of this filesystem", path);
		return -EEXIST;
	}
	if (!force) {
		error("%s was devid %llu of this filesystem, which it left (replaced or removed) without being wiped",
		      path, (unsigned long long)devid);
		error("use the -f option to force overwrite of %s", path);
		return -EEXIST;
	}
	return 0;
}

bool dev_missing(const struct mfs_ioctl_space_dev *d)
{
	return d->missing || !d->path[0];
}

const char *dev_path(const struct mfs_ioctl_space_dev *d)
{
	return dev_missing(d) ? "missing" : d->path;
}

u64 dev_slack(const struct mfs_ioctl_space_dev *d)
{
	return d->device_size > d->total_bytes ? d->device_size - d->total_bytes : 0;
}

/* What chunks could still get: size minus chunks minus reserved ranges (may be negative while shrinking). */
s64 dev_unallocated(const struct usage *u, int i)
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
u64 simulate(const struct usage *u, u64 flags)
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
double type_ratio(const struct usage *u, u64 type, u64 profile)
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
const char *pretty_signed(s64 v, unsigned int units)
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
int run_json_or_text(const char *name, char **args, int nargs, target_fn fn, void *ctx,
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
