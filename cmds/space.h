/*
 * The space picture shared by the space reports (usage.c) and resize
 * (resize.c): what the chunks and devices of a filesystem add up to.
 */
#ifndef MFS_CMDS_SPACE_H
#define MFS_CMDS_SPACE_H

#include <stdbool.h>
#include <json-c/json.h>
#include "common/target.h"
#include "kernel-shared/format/profiles.h"

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

u64 group_flags(u64 type);
const char *group_profile(const struct bg_group *g, char *buf, size_t len);
u64 requested_profile(const struct mfs_space *sp, u64 flags);
void json_add_reduced(struct json_object *o, const struct mfs_space *sp,
		      const struct bg_group *g);
int type_rank(u64 flags, bool df);
double type_ratio(const struct usage *u, u64 type, u64 profile);

/* The picture of one filesystem (df: its groups in df's order); 0, or -errno once said why. */
int usage_load(struct mfs_target *t, struct usage *u, bool df);
void usage_free(struct usage *u);

/*
 * path holds a superblock of t's filesystem (sb): refused with an ERROR
 * when it names a member now (its devid with its device uuid), or - unless
 * force - when it is a device that left the filesystem without being wiped
 * (replaced or removed while missing). 0: it may be overwritten. target:
 * the target of a replace (the messages say so).
 */
int check_own_fsid_device(struct mfs_target *t, const char *path,
			  const struct mfs_super_block *sb, bool force, bool target);
bool dev_missing(const struct mfs_ioctl_space_dev *d);
const char *dev_path(const struct mfs_ioctl_space_dev *d);
u64 dev_slack(const struct mfs_ioctl_space_dev *d);
s64 dev_unallocated(const struct usage *u, int i);
u64 dev_width_alloc(const struct mfs_space *sp, u64 devid, u64 flags, u64 width);
u64 simulate(const struct usage *u, u64 flags);
const char *pretty_signed(s64 v, unsigned int units);

/* filesystem usage --graph (usage-graph.c): a bar of this many cells per device, a legend. */
#define USAGE_GRAPH_WIDTH	50
void print_usage_graph(const struct usage *u, unsigned int units, bool color);
/* Cells for each of n byte counts in a bar of width, in proportion (each non-empty one 1 at least). */
void graph_cells(const u64 *bytes, int n, int width, int *cells);

/* One filesystem the arguments name; first is true for the first one. */
typedef int (*target_fn)(struct mfs_target *t, void *ctx, bool first);
int run_json_or_text(const char *name, char **args, int nargs, target_fn fn, void *ctx,
		     struct json_object **array);

#endif
