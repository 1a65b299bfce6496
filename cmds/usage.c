/*
 * Space reports: mfs filesystem df / usage and mfs device usage, for
 * mounted (ioctl) and unmounted filesystems alike.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>
#include "cmds/commands.h"
#include "cmds/space.h"
#include "common/help.h"
#include "common/messages.h"
#include "common/units.h"
#include "common/format-output.h"
#include "kernel-shared/format/profiles.h"

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
	OPTLINE("--graph", "after the overall figures, a bar per device: its chunks of each type and profile, reserved, unallocated and slack space in proportion, and a legend; coloured on a terminal (not with NO_COLOR)"),
	NULL
};

struct usage_ctx {
	unsigned int units;
	bool tabular;
	bool graph;
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

/* Colour on a terminal that has it, unless NO_COLOR (no-color.org) is set. */
static bool graph_colour(void)
{
	const char *term = getenv("TERM");

	return isatty(STDOUT_FILENO) && !getenv("NO_COLOR") && term && strcmp(term, "dumb");
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
	if (ctx->graph)
		print_usage_graph(&u, ctx->units, graph_colour());
	else if (ctx->tabular)
		print_tabular(&u, ctx->units);
	else
		print_linear(&u, ctx->units);
	usage_free(&u);
	return 0;
}

static int cmd_filesystem_usage(const struct cmd_struct *cmd, int argc, char **argv)
{
	enum { OPT_GRAPH = 256 };
	static const struct option longopts[] = {
		{ "graph", no_argument, NULL, OPT_GRAPH },
		{ NULL, 0, NULL, 0 }
	};
	struct usage_ctx ctx = { 0 };
	int c;

	ctx.units = get_unit_mode_from_arg(&argc, argv, 1);
	while ((c = getopt_long(argc, argv, "T", longopts, NULL)) != -1) {
		switch (c) {
		case 'T':
			ctx.tabular = true;
			break;
		case OPT_GRAPH:
			ctx.graph = true;
			break;
		default:
			usage_unknown_option(cmd, argv);
		}
	}
	if (check_argc_min(argc - optind, 1))
		return 1;
	if (ctx.graph && (ctx.tabular || mfs_output_format == MFS_OUTPUT_JSON)) {
		error("--graph is a picture: not with -T or --format json");
		return 1;
	}
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
