/*
 * mfs device stats: the per-device error counters (write, read, flush,
 * corruption, generation) that reads with self-heal, scrub and I/O errors
 * raise and every commit persists in the device tree (DESIGN §6). Online
 * through MFS_IOC_DEV_STATS on the mount point, offline from the
 * PERSISTENT_ITEM items of an unmounted filesystem.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include "cmds/commands.h"
#include "common/help.h"
#include "common/messages.h"
#include "common/open.h"
#include "common/target.h"
#include "common/format-output.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/format/ioctl.h"
#include "kernel-shared/ops/admin.h"

static const char * const cmd_device_stats_usage[] = {
	"mfs device stats [options] <path>|<device>",
	"",
	"Show device I/O error statistics.",
	"With a mount point, every device of the mounted filesystem is shown; with",
	"a device of a mounted filesystem, that device. --offline reads the counters",
	"an unmounted filesystem last committed, for all of its devices.",
	"",
	OPTLINE("-c|--check", "return non-zero if any stat counter is not zero"),
	OPTLINE("-z|--reset", "show current stats and reset values to zero"),
	OPTLINE("--offline", "read the stats of an unmounted filesystem from its device tree"),
	OPTLINE("-T", "print stats in a table format"),
	NULL
};

const char * const mfs_dev_stat_names[MFS_DEV_STATS_NR_VALUES] = {
	"write_io_errs", "read_io_errs", "flush_io_errs", "corruption_errs", "generation_errs",
};

static const char * const table_headers[MFS_DEV_STATS_NR_VALUES] = {
	"Write errors", "Read errors", "Flush errors", "Corruption errors", "Generation errors",
};

struct dev_stats {
	u64 devid;
	char path[PATH_MAX];	/* "devid:N" when missing */
	u64 values[MFS_DEV_STATS_NR_VALUES];
};

/* The counters as the command prints them: a missing device by its devid. */
static int to_dev_stats(const struct mfs_ioctl_dev_stats *ds, struct dev_stats **out, int *nout)
{
	struct dev_stats *st = calloc(ds->nr_devices ? ds->nr_devices : 1, sizeof(*st));
	int i, j;

	if (!st)
		return -ENOMEM;
	for (i = 0; i < (int)ds->nr_devices; i++) {
		st[i].devid = ds->devs[i].devid;
		if (ds->devs[i].missing || !ds->devs[i].path[0])
			snprintf(st[i].path, sizeof(st[i].path), "devid:%llu",
				 (unsigned long long)st[i].devid);
		else
			snprintf(st[i].path, sizeof(st[i].path), "%s", ds->devs[i].path);
		for (j = 0; j < MFS_DEV_STATS_NR_VALUES; j++)
			st[i].values[j] = ds->devs[i].values[j];
	}
	*out = st;
	*nout = ds->nr_devices;
	return 0;
}

static int get_online(int fd, bool reset, struct dev_stats **out, int *nout)
{
	struct mfs_ioctl_dev_stats *ds = calloc(1, sizeof(*ds));
	int ret;

	if (!ds)
		return -ENOMEM;
	ds->flags = reset ? MFS_DEV_STATS_RESET : 0;
	ret = ioctl(fd, MFS_IOC_DEV_STATS, ds) < 0 ? -errno : to_dev_stats(ds, out, nout);
	free(ds);
	return ret;
}

static int get_offline(const char *path, struct dev_stats **out, int *nout)
{
	struct mfs_ioctl_dev_stats *ds;
	struct mfs_fs_info *fs;
	int ret;

	/* read-only, with the shared device locks: refused while mounted */
	ret = mfs_open_for_cmd(&path, 1, MFS_OPEN_DEGRADED, &fs);
	if (ret)
		return 1;
	ds = calloc(1, sizeof(*ds));
	ret = ds ? mfs_admin_dev_stats(fs, ds) : -ENOMEM;
	if (!ret)
		ret = to_dev_stats(ds, out, nout);
	free(ds);
	mfs_free_fs_info(fs);
	return ret;
}

static void print_text(const struct dev_stats *st, int n)
{
	int i, j;

	for (i = 0; i < n; i++)
		for (j = 0; j < MFS_DEV_STATS_NR_VALUES; j++)
			printf("[%s].%-16s %llu\n", st[i].path, mfs_dev_stat_names[j],
			       (unsigned long long)st[i].values[j]);
}

static void print_table(const struct dev_stats *st, int n)
{
	int idw = 2, pathw = 4, w[MFS_DEV_STATS_NR_VALUES], i, j;
	char buf[32];

	for (j = 0; j < MFS_DEV_STATS_NR_VALUES; j++)
		w[j] = strlen(table_headers[j]);
	for (i = 0; i < n; i++) {
		idw = max_t(int, idw, snprintf(buf, sizeof(buf), "%llu",
					       (unsigned long long)st[i].devid));
		pathw = max_t(int, pathw, (int)strlen(st[i].path));
		for (j = 0; j < MFS_DEV_STATS_NR_VALUES; j++)
			w[j] = max_t(int, w[j], snprintf(buf, sizeof(buf), "%llu",
							 (unsigned long long)st[i].values[j]));
	}
	printf("%-*s %-*s", idw, "Id", pathw, "Path");
	for (j = 0; j < MFS_DEV_STATS_NR_VALUES; j++)
		printf(" %*s", w[j], table_headers[j]);
	printf("\n%.*s %.*s", idw, "------------------------", pathw, "");
	for (i = 0; i < pathw; i++)
		putchar('-');
	for (j = 0; j < MFS_DEV_STATS_NR_VALUES; j++) {
		putchar(' ');
		for (i = 0; i < w[j]; i++)
			putchar('-');
	}
	putchar('\n');
	for (i = 0; i < n; i++) {
		printf("%*llu %*s", idw, (unsigned long long)st[i].devid, pathw, st[i].path);
		for (j = 0; j < MFS_DEV_STATS_NR_VALUES; j++)
			printf(" %*llu", w[j], (unsigned long long)st[i].values[j]);
		putchar('\n');
	}
}

static void print_json(const struct dev_stats *st, int n)
{
	struct json_object *array, *root = mfs_json_start("device-stats", &array);
	int i, j;

	if (!root)
		return;
	for (i = 0; i < n; i++) {
		struct json_object *o = mfs_json_array_add_object(array);

		if (!o)
			break;
		mfs_json_add_string(o, "device", st[i].path);
		mfs_json_add_u64(o, "devid", st[i].devid);
		for (j = 0; j < MFS_DEV_STATS_NR_VALUES; j++)
			mfs_json_add_u64(o, mfs_dev_stat_names[j], st[i].values[j]);
	}
	mfs_json_print_free(root);
}

/*
 * The counters of the mounted filesystem path is (a mount point) or is a
 * member of (then only that device's: *only_devid). -1 after an error.
 */
static int stats_of_mounted(const char *path, const struct stat *sb, bool reset,
			    struct dev_stats **st, int *n, u64 *only_devid)
{
	char mnt[PATH_MAX];
	int fd, ret;

	if (S_ISDIR(sb->st_mode)) {
		snprintf(mnt, sizeof(mnt), "%s", path);
	} else if (mfs_find_mount_of_member(path, mnt, sizeof(mnt))) {
		struct mfs_super_block sup;

		if (!mfs_probe_super(path, &sup))
			*only_devid = le64_to_cpu(sup.dev_item.devid);
	} else if (S_ISREG(sb->st_mode)) {
		error("'%s' is not part of a mounted filesystem; to read device stats from a file image use --offline option",
		      path);
		return -1;
	} else {
		error("'%s' is not a mounted mfs device; use --offline for an unmounted one",
		      path);
		return -1;
	}
	fd = mfs_open_mount(mnt, NULL);
	if (fd < 0) {
		error("'%s' is not a mounted mfs filesystem", mnt);
		return -1;
	}
	ret = get_online(fd, reset, st, n);
	close(fd);
	if (!ret)
		return 0;
	if (ret == -EPERM)
		error("cannot get device stats of '%s': %s (needs CAP_SYS_ADMIN)",
		      mnt, strerror(-ret));
	else
		error("cannot get device stats of '%s': %s", mnt, strerror(-ret));
	free(*st);
	*st = NULL;
	return -1;
}

static int cmd_device_stats(const struct cmd_struct *cmd, int argc, char **argv)
{
	enum { OPT_OFFLINE = 256 };
	static const struct option longopts[] = {
		{ "check", no_argument, NULL, 'c' },
		{ "reset", no_argument, NULL, 'z' },
		{ "offline", no_argument, NULL, OPT_OFFLINE },
		{ NULL, 0, NULL, 0 }
	};
	bool check = false, reset = false, offline = false, table = false;
	struct dev_stats *st = NULL;
	const char *path;
	struct stat sb;
	int c, n = 0, i, j, ret;
	u64 only_devid = 0;

	while ((c = getopt_long(argc, argv, "czT", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			check = true;
			break;
		case 'z':
			reset = true;
			break;
		case 'T':
			table = true;
			break;
		case OPT_OFFLINE:
			offline = true;
			break;
		default:
			usage_unknown_option(cmd, argv);
		}
	}
	if (check_argc_exact(argc - optind, 1))
		return 1;
	path = argv[optind];
	if (offline && reset) {
		error("--offline and --reset cannot be used together");
		return 1;
	}
	if (stat(path, &sb)) {
		error("cannot access '%s': %m", path);
		return 1;
	}
	if (offline) {
		if (S_ISDIR(sb.st_mode)) {
			error("--offline needs a device or image of an unmounted filesystem, not '%s'",
			      path);
			return 1;
		}
		ret = get_offline(path, &st, &n);
		if (ret) {
			if (ret < 0)
				error("cannot read device stats of '%s': %s", path, strerror(-ret));
			return 1;
		}
	} else if (stats_of_mounted(path, &sb, reset, &st, &n, &only_devid)) {
		return 1;
	}
	if (only_devid) {
		for (i = 0, j = 0; i < n; i++)
			if (st[i].devid == only_devid)
				st[j++] = st[i];
		n = j;
	}
	if (mfs_output_format == MFS_OUTPUT_JSON)
		print_json(st, n);
	else if (table)
		print_table(st, n);
	else
		print_text(st, n);
	ret = 0;
	if (check)
		for (i = 0; i < n; i++)
			for (j = 0; j < MFS_DEV_STATS_NR_VALUES; j++)
				if (st[i].values[j])
					ret = 64;
	free(st);
	return ret;
}
DEFINE_COMMAND(device_stats, "stats", cmd_device_stats, cmd_device_stats_usage, NULL,
	       CMD_FORMAT_JSON);
