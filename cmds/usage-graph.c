/*
 * mfs filesystem usage --graph: one bar per device, its space split into
 * the chunks of each type and profile, the reserved start, unallocated
 * space and slack, in proportion; coloured on a terminal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmds/space.h"
#include "common/units.h"
#include "kernel-shared/volumes/volumes.h"

/* The segments after the type|profile groups, in bar order. */
enum { SEG_RESERVED, SEG_UNALLOCATED, SEG_SLACK, NR_FIXED_SEGS };
#define MAX_SEGS	(MAX_GROUPS + NR_FIXED_SEGS)

struct seg_look {
	char mark;
	const char *color;	/* SGR parameters for a terminal */
};

/* The first profile of each type gets the upper-case letter, further ones lower case. */
static const struct seg_look fixed_looks[NR_FIXED_SEGS] = {
	[SEG_RESERVED] = { '+', "100;30" },
	[SEG_UNALLOCATED] = { '.', NULL },	/* the terminal's own colours */
	[SEG_SLACK] = { '~', "43;30" },
};

static struct seg_look group_look(const struct usage *u, int g)
{
	u64 type = u->groups[g].flags & MFS_BLOCK_GROUP_TYPE_MASK;
	struct seg_look l;
	int i, earlier = 0;

	for (i = 0; i < g; i++)
		if ((u->groups[i].flags & MFS_BLOCK_GROUP_TYPE_MASK) == type)
			earlier++;
	if (type & MFS_BLOCK_GROUP_DATA)
		l = (struct seg_look){ 'D', earlier ? "102;30" : "42;30" };
	else if (type & MFS_BLOCK_GROUP_SYSTEM)
		l = (struct seg_look){ 'S', earlier ? "105;30" : "45;30" };
	else
		l = (struct seg_look){ 'M', earlier ? "104;30" : "44;37" };
	if (earlier)
		l.mark += 'a' - 'A';
	return l;
}

/* How far a segment's cells are above its exact share (negative: below). */
static double excess(const u64 *bytes, u64 total, int width, const int *cells, int i)
{
	return cells[i] - (double)bytes[i] * width / total;
}

/*
 * Cells for each of n byte counts out of width: in proportion, the cells
 * left by rounding down going to the largest remainders; then a segment
 * that is not empty gets a cell at least, taken from the one whose share
 * suffers least (so every segment stays within a cell or so of its share).
 */
void graph_cells(const u64 *bytes, int n, int width, int *cells)
{
	u64 total = 0;
	int i, j, used = 0;

	for (i = 0; i < n; i++)
		total += bytes[i];
	for (i = 0; i < n; i++) {
		cells[i] = total ? (int)((double)bytes[i] * width / total) : 0;
		used += cells[i];
	}
	while (total && used < width) {
		int best = -1;

		for (i = 0; i < n; i++)
			if (bytes[i] && (best < 0 || excess(bytes, total, width, cells, i) <
						   excess(bytes, total, width, cells, best)))
				best = i;
		cells[best]++;
		used++;
	}
	for (i = 0; i < n; i++) {
		int from = -1;

		if (!bytes[i] || cells[i])
			continue;
		for (j = 0; j < n; j++)
			if (cells[j] > 1 && (from < 0 || excess(bytes, total, width, cells, j) >
							 excess(bytes, total, width, cells, from)))
				from = j;
		if (from < 0)
			break;
		cells[from]--;
		cells[i] = 1;
	}
}

/* The bytes of each segment of device k (in devid order) */
static void device_segments(const struct usage *u, int k, u64 *bytes)
{
	const struct mfs_ioctl_space_dev *d = &u->sp.devs[u->order[k]];
	s64 un = dev_unallocated(u, u->order[k]);
	int i;

	for (i = 0; i < u->ngroups; i++)
		bytes[i] = dev_width_alloc(&u->sp, d->devid, u->groups[i].flags, 0);
	bytes[u->ngroups + SEG_RESERVED] = mfs_device_reserved_bytes(d->total_bytes);
	bytes[u->ngroups + SEG_UNALLOCATED] = un > 0 ? (u64)un : 0;
	bytes[u->ngroups + SEG_SLACK] = dev_slack(d);
}

static struct seg_look seg_look(const struct usage *u, int s)
{
	return s < u->ngroups ? group_look(u, s) : fixed_looks[s - u->ngroups];
}

static void print_cells(struct seg_look l, int n, bool color)
{
	int i;

	color = color && n && l.color;
	if (color)
		printf("\033[%sm", l.color);
	for (i = 0; i < n; i++)
		putchar(l.mark);
	if (color)
		printf("\033[0m");
}

static void print_legend(const struct usage *u, bool color)
{
	static const char * const fixed_names[NR_FIXED_SEGS] = {
		[SEG_RESERVED] = "reserved", [SEG_UNALLOCATED] = "unallocated",
		[SEG_SLACK] = "slack",
	};
	char name[48];
	int s;

	printf("Legend:");
	for (s = 0; s < u->ngroups + NR_FIXED_SEGS; s++) {
		printf("  ");
		print_cells(seg_look(u, s), 1, color);
		if (s < u->ngroups)
			printf(" %s,%s", mfs_bg_type_name(u->groups[s].flags),
			       group_profile(&u->groups[s], name, sizeof(name)));
		else
			printf(" %s", fixed_names[s - u->ngroups]);
	}
	printf("\n");
}

void print_usage_graph(const struct usage *u, unsigned int units, bool color)
{
	const struct mfs_space *sp = &u->sp;
	int nseg = u->ngroups + NR_FIXED_SEGS, pathw = strlen("<missing>"), k, s;
	u64 bytes[MAX_SEGS];
	int cells[MAX_SEGS];

	for (k = 0; k < sp->nr_devs; k++) {
		int len = strlen(dev_path(&sp->devs[k]));

		if (len > pathw)
			pathw = len;
	}
	printf("Devices (each bar is the whole device, %d cells):\n", USAGE_GRAPH_WIDTH);
	for (k = 0; k < sp->nr_devs; k++) {
		const struct mfs_ioctl_space_dev *d = &sp->devs[u->order[k]];

		printf("  %3llu %-*s ", (unsigned long long)d->devid, pathw,
		       dev_missing(d) ? "<missing>" : dev_path(d));
		if (dev_missing(d)) {
			printf("[%-*s] %10s\n", USAGE_GRAPH_WIDTH, " missing: not read",
			       pretty_size_mode(d->total_bytes, units));
			continue;
		}
		device_segments(u, k, bytes);
		graph_cells(bytes, nseg, USAGE_GRAPH_WIDTH, cells);
		printf("[");
		for (s = 0; s < nseg; s++)
			print_cells(seg_look(u, s), cells[s], color);
		printf("] %10s\n", pretty_size_mode(d->device_size > d->total_bytes ?
						    d->device_size : d->total_bytes, units));
	}
	print_legend(u, color);
}
