/*
 * Device health for the admin: the names of the member states and
 * mfs filesystem status, the zpool-status-like summary of whether the
 * filesystem is whole, how much of its data has full, reduced or no
 * redundancy left, and what is lost (DESIGN §6).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uuid/uuid.h>
#include <json-c/json.h>
#include "cmds/commands.h"
#include "common/help.h"
#include "common/messages.h"
#include "common/units.h"
#include "common/target.h"
#include "common/format-output.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/volumes/fs.h"

const char * const mfs_dev_health_names[MFS_DEV_HEALTH_NR] = {
	[MFS_DEV_HEALTH_OK] = "ok",
	[MFS_DEV_HEALTH_MISSING] = "missing",
	[MFS_DEV_HEALTH_FAILING] = "failing",
	[MFS_DEV_HEALTH_REBUILDING] = "rebuilding",
	[MFS_DEV_HEALTH_REPLACING] = "replacing",
	[MFS_DEV_HEALTH_REPLACE_TARGET] = "replace-target",
	[MFS_DEV_HEALTH_DELETING] = "deleting",
	[MFS_DEV_HEALTH_SPARE] = "spare",
};

const char *mfs_dev_health_name(u64 state)
{
	return state < MFS_DEV_HEALTH_NR ? mfs_dev_health_names[state] : "unknown";
}

bool mfs_dev_health_bad(u64 state)
{
	return state == MFS_DEV_HEALTH_MISSING || state == MFS_DEV_HEALTH_FAILING;
}

/* ---------------- filesystem status ---------------- */

static const char * const cmd_filesystem_status_usage[] = {
	"mfs filesystem status [options] <path>|<device> [<device>...]",
	"",
	"Show whether the filesystem is whole: its state (online, degraded or",
	"data lost), which members are present and in what state, and per",
	"block group type and profile how many of the bytes in use keep the",
	"full redundancy of their profile, a reduced one, none, or cannot be",
	"read. An unmounted filesystem is opened read-only, degraded if members",
	"are missing.",
	"Exit status: 0 online, 1 degraded, 2 data lost, 3 the status could not",
	"be read (the filesystem cannot be opened, or is not mfs).",
	"",
	UNIT_OPTLINES,
	NULL
};

/* The state, which is also the exit status; STATUS_ERROR: none could be read. */
enum { STATUS_ONLINE, STATUS_DEGRADED, STATUS_LOST, STATUS_ERROR };

static const char * const status_names[] = { "online", "degraded", "data lost" };

static int health_status(const struct mfs_ioctl_health *h)
{
	u64 i;

	if (h->unreadable_chunks)
		return STATUS_LOST;
	if (h->present_devices < h->total_devices || h->failing_devices ||
	    h->rebuilding_devices)
		return STATUS_DEGRADED;
	for (i = 0; i < h->nr_groups && i < MFS_HEALTH_MAX_GROUPS; i++)
		if (h->groups[i].reduced || h->groups[i].none)
			return STATUS_DEGRADED;
	return STATUS_ONLINE;
}

static void status_text(const struct mfs_target *t, const struct mfs_ioctl_health *h,
			int status, unsigned int units)
{
	char uuid[37];
	u64 i;

	uuid_unparse(t->fsid, uuid);
	printf("Filesystem: %s  uuid: %s\n", t->mnt, uuid);
	printf("State: %s\n", status_names[status]);
	printf("Devices: %llu of %llu present, %llu failing, %llu rebuilding\n",
	       (unsigned long long)h->present_devices, (unsigned long long)h->total_devices,
	       (unsigned long long)h->failing_devices, (unsigned long long)h->rebuilding_devices);
	for (i = 0; i < h->nr_devices && i < MFS_HEALTH_MAX_DEVS; i++) {
		const struct mfs_ioctl_health_dev *d = &h->devs[i];

		printf("\tdevid %4llu %-14s %s\n", (unsigned long long)d->devid,
		       mfs_dev_health_name(d->state), d->path[0] ? d->path : "<missing disk>");
	}
	printf("%-9s %-8s %6s %10s %10s %10s %10s\n", "Type", "Profile", "Chunks", "Full",
	       "Reduced", "None", "Lost");
	for (i = 0; i < h->nr_groups && i < MFS_HEALTH_MAX_GROUPS; i++) {
		const struct mfs_ioctl_health_group *g = &h->groups[i];

		printf("%-9s %-8s %6llu", mfs_bg_type_name(g->flags),
		       mfs_profile_ui_name(g->flags), (unsigned long long)g->chunks);
		printf(" %10s", pretty_size_mode(g->full, units));
		printf(" %10s", pretty_size_mode(g->reduced, units));
		printf(" %10s", pretty_size_mode(g->none, units));
		printf(" %10s\n", pretty_size_mode(g->lost, units));
	}
	printf("Unreadable chunks: %llu\n", (unsigned long long)h->unreadable_chunks);
}

static void status_json(const struct mfs_target *t, const struct mfs_ioctl_health *h,
			int status)
{
	struct json_object *array, *root = mfs_json_start("filesystem-status", &array);
	struct json_object *o, *devs, *groups;
	char uuid[37];
	u64 i;

	o = root ? mfs_json_array_add_object(array) : NULL;
	if (!o) {
		error("out of memory");
		json_object_put(root);
		return;
	}
	uuid_unparse(t->fsid, uuid);
	mfs_json_add_string(o, "uuid", uuid);
	mfs_json_add_string(o, "state", status_names[status]);
	mfs_json_add_u64(o, "devices-total", h->total_devices);
	mfs_json_add_u64(o, "devices-present", h->present_devices);
	mfs_json_add_u64(o, "devices-failing", h->failing_devices);
	mfs_json_add_u64(o, "devices-rebuilding", h->rebuilding_devices);
	mfs_json_add_u64(o, "unreadable-chunks", h->unreadable_chunks);
	mfs_json_add_u64(o, "fail-threshold", h->fail_threshold);
	devs = mfs_json_add_array(o, "devices");
	groups = mfs_json_add_array(o, "redundancy");
	for (i = 0; i < h->nr_devices && i < MFS_HEALTH_MAX_DEVS; i++) {
		struct json_object *d = devs ? mfs_json_array_add_object(devs) : NULL;

		if (!d)
			break;
		mfs_json_add_u64(d, "devid", h->devs[i].devid);
		mfs_json_add_string(d, "path", h->devs[i].path);
		mfs_json_add_string(d, "state", mfs_dev_health_name(h->devs[i].state));
		mfs_json_add_u64(d, "mount-errors", h->devs[i].mount_errors);
	}
	for (i = 0; i < h->nr_groups && i < MFS_HEALTH_MAX_GROUPS; i++) {
		const struct mfs_ioctl_health_group *g = &h->groups[i];
		struct json_object *j = groups ? mfs_json_array_add_object(groups) : NULL;

		if (!j)
			break;
		mfs_json_add_string(j, "bg-type", mfs_bg_type_name(g->flags));
		mfs_json_add_string(j, "bg-profile", mfs_profile_ui_name(g->flags));
		mfs_json_add_u64(j, "chunks", g->chunks);
		mfs_json_add_u64(j, "unreadable-chunks", g->unreadable_chunks);
		mfs_json_add_u64(j, "full", g->full);
		mfs_json_add_u64(j, "reduced", g->reduced);
		mfs_json_add_u64(j, "none", g->none);
		mfs_json_add_u64(j, "lost", g->lost);
	}
	mfs_json_print_free(root);
}

static int cmd_filesystem_status(const struct cmd_struct *cmd, int argc, char **argv)
{
	unsigned int units = get_unit_mode_from_arg(&argc, argv, 1);
	struct mfs_ioctl_health *h;
	struct mfs_target t;
	int ret, status;

	clean_args_no_options(cmd, argc, argv);
	if (check_argc_min(argc - optind, 1))
		return 1;
	h = calloc(1, sizeof(*h));
	if (!h) {
		error("out of memory");
		return STATUS_ERROR;
	}
	/* members missing are what this command is for: open degraded, read-only */
	ret = mfs_target_open_flags((const char * const *)argv + optind, argc - optind,
				    MFS_OPEN_DEGRADED, &t);
	if (ret) {
		free(h);
		return STATUS_ERROR;
	}
	ret = mfs_target_health(&t, h);
	if (ret) {
		error("cannot get the status of '%s': %s", t.mnt, strerror(-ret));
		mfs_target_close(&t);
		free(h);
		return STATUS_ERROR;
	}
	status = health_status(h);
	if (mfs_output_format == MFS_OUTPUT_JSON)
		status_json(&t, h, status);
	else
		status_text(&t, h, status, units);
	mfs_target_close(&t);
	free(h);
	return status;
}
DEFINE_COMMAND(filesystem_status, "status", cmd_filesystem_status,
	       cmd_filesystem_status_usage, NULL, CMD_FORMAT_JSON);
