/* mfs device: scan, ready. */
#include <blkid.h>
#include <getopt.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <uuid/uuid.h>
#include "cmds/commands.h"
#include "cmds/space.h"
#include "common/help.h"
#include "common/messages.h"
#include "common/open.h"
#include "common/device-scan.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/ops/restripe.h"
#include "kernel-shared/ops/open.h"
#include "common/target.h"
#include "common/device-check.h"
#include "common/units.h"
#include "cmds/restripe-cli.h"
#include <sys/stat.h>
#include <limits.h>
#include <stdint.h>

static const char * const cmd_device_scan_usage[] = {
	"mfs device scan [-d|--all-devices] [<device>...]",
	"mfs device scan -u|--forget [<device>...]",
	"",
	"Find mfs members and remember them, so one path is enough later.",
	"Image files must be scanned (or named) to be found; block devices are",
	"always found by scanning.",
	"",
	OPTLINE("-d|--all-devices", "scan all block devices (the default without arguments)"),
	OPTLINE("-u|--forget", "forget the given devices, or every stale one"),
	NULL
};

static int cmd_device_scan(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "all-devices", no_argument, NULL, 'd' },
		{ "forget", no_argument, NULL, 'u' },
		{ NULL, 0, NULL, 0 }
	};
	bool all = false, forget = false;
	int c, i, ret = 0;

	while ((c = getopt_long(argc, argv, "du", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			all = true;
			break;
		case 'u':
			forget = true;
			break;
		default:
			usage_unknown_option(cmd, argv);
		}
	}
	if (all && forget) {
		error("--all-devices and --forget cannot be used together");
		usage(cmd, 1);
	}
	if (forget) {
		if (optind == argc)
			return mfs_registry_forget(NULL) ? 1 : 0;
		for (i = optind; i < argc; i++) {
			if (mfs_registry_forget(argv[i])) {
				error("cannot forget %s", argv[i]);
				ret = 1;
			}
		}
		return ret;
	}
	if (optind == argc || all) {
		struct mfs_scan scan;

		printf("Scanning for mfs filesystems\n");
		mfs_registry_forget(NULL);
		if (mfs_scan_all(NULL, 0, &scan)) {
			error("device scan failed");
			return 1;
		}
		for (i = 0; i < scan.nr; i++)
			mfs_registry_add(scan.devs[i].path);
		mfs_scan_free(&scan);
		if (optind == argc)
			return 0;
	}
	for (i = optind; i < argc; i++) {
		struct mfs_super_block sb;
		int err;

		printf("Scanning for mfs filesystems on '%s'\n", argv[i]);
		if (access(argv[i], F_OK)) {
			/* not "not an mfs device": the path itself is wrong */
			error("device scan failed on '%s': %m", argv[i]);
			ret = 1;
			continue;
		}
		err = mfs_probe_super(argv[i], &sb);
		if (err == -ENOENT) {
			error("device scan failed on '%s': not an mfs device", argv[i]);
			ret = 1;
			continue;
		}
		if (err) {
			error("device scan failed on '%s': %s", argv[i],
			      err == -EUCLEAN ? "no valid superblock" : strerror(-err));
			ret = 1;
			continue;
		}
		err = mfs_registry_add(argv[i]);
		if (err) {
			error("device scan failed on '%s': %s", argv[i], strerror(-err));
			ret = 1;
		}
	}
	return ret;
}
DEFINE_SIMPLE_COMMAND(device_scan, "scan");

static const char * const cmd_device_ready_usage[] = {
	"mfs device ready [--udev] <device>",
	"",
	"Exit 0 when every member of the device's filesystem is present, 1 otherwise.",
	"When the filesystem is mounted, its server is asked: a member missing or",
	"failing (filesystem show, filesystem status) is not ready either.",
	"",
	OPTLINE("--udev", "print the device's udev properties (ID_FS_TYPE=mfs, ID_FS_UUID, ID_FS_LABEL, MFS_DEVID, MFS_READY=1 or 0, and MFS_MOUNT_DEGRADED=1 when an /etc/fstab line mounts its filesystem with degraded) and exit 0 when it holds mfs, for the udev rule"),
	NULL
};

/*
 * The filesystem of path is mounted: 1 when its server has every member
 * and none is failing, 0 when not; -1 when it is not mounted.
 */
static int mounted_members_ready(const char *path)
{
	struct mfs_ioctl_health *h;
	struct mfs_target t;
	char mnt[PATH_MAX];
	const char *m = mnt;
	int ready = 0;

	if (!mfs_find_mount_of_device(path, mnt, sizeof(mnt)))
		return -1;
	h = calloc(1, sizeof(*h));
	if (h && mfs_target_open(&m, 1, false, &t) == 0) {
		ready = mfs_target_health(&t, h) == 0 && h->present_devices == h->total_devices &&
			!h->failing_devices;
		mfs_target_close(&t);
	}
	free(h);
	return ready;
}

/* Whether an fstab source (UUID=, LABEL= or a path) names the filesystem of sb. */
static bool fstab_names(const char *source, const struct mfs_super_block *sb)
{
	struct mfs_super_block other;
	char uuid[37];

	uuid_unparse(sb->fsid, uuid);
	if (!strncasecmp(source, "UUID=", 5))
		return !strcasecmp(source + 5, uuid);
	if (!strncmp(source, "LABEL=", 6))
		return sb->label[0] && !strncmp(source + 6, sb->label, sizeof(sb->label)) &&
		       strlen(source + 6) <= sizeof(sb->label);
	return source[0] == '/' && !mfs_probe_super(source, &other) &&
	       !memcmp(other.fsid, sb->fsid, MFS_FSID_SIZE);
}

/*
 * Whether /etc/fstab ($MFS_FSTAB for tests) mounts the filesystem of sb
 * with 'degraded': its mount, not udev, then decides when to stop
 * waiting for the missing members (x-mfs.device-timeout).
 */
static bool fstab_mounts_degraded(const struct mfs_super_block *sb)
{
	const char *path = getenv("MFS_FSTAB") ? getenv("MFS_FSTAB") : "/etc/fstab";
	FILE *f = setmntent(path, "r");
	struct mntent *e;
	bool found = false;

	if (!f)
		return false;
	while (!found && (e = getmntent(f)))
		found = !strcmp(e->mnt_type, "mfs") && hasmntopt(e, "degraded") &&
			fstab_names(e->mnt_fsname, sb);
	endmntent(f);
	return found;
}

/*
 * What the udev rule imports (IMPORT{program}): the properties libblkid
 * gives the filesystems it knows (it does not know mfs), MFS_READY, and
 * MFS_MOUNT_DEGRADED when the fstab line of a filesystem with a member
 * missing says degraded (the rule then lets its mount run).
 */
static void print_udev_properties(const struct mfs_super_block *sb, bool ready)
{
	char uuid[37], label[MFS_LABEL_SIZE], safe[MFS_LABEL_SIZE];
	char enc[MFS_LABEL_SIZE * 4];

	uuid_unparse(sb->fsid, uuid);
	printf("ID_FS_TYPE=mfs\n");
	printf("ID_FS_USAGE=filesystem\n");
	printf("ID_FS_VERSION=%u\n", le32_to_cpu(sb->format_version));
	printf("ID_FS_UUID=%s\nID_FS_UUID_ENC=%s\n", uuid, uuid);
	uuid_unparse(sb->dev_item.uuid, uuid);
	printf("ID_FS_UUID_SUB=%s\nID_FS_UUID_SUB_ENC=%s\n", uuid, uuid);
	snprintf(label, sizeof(label), "%.*s", (int)sizeof(sb->label), sb->label);
	if (label[0] && !blkid_safe_string(label, safe, sizeof(safe)) &&
	    !blkid_encode_string(label, enc, sizeof(enc)))
		printf("ID_FS_LABEL=%s\nID_FS_LABEL_ENC=%s\n", safe, enc);
	printf("MFS_DEVID=%llu\n", (unsigned long long)le64_to_cpu(sb->dev_item.devid));
	printf("MFS_READY=%d\n", ready);
	if (!ready && fstab_mounts_degraded(sb))
		printf("MFS_MOUNT_DEGRADED=1\n");
}

enum { OPT_UDEV = 256, OPT_SPARE };

static int cmd_device_ready(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "udev", no_argument, NULL, OPT_UDEV },
		{ NULL, 0, NULL, 0 }
	};
	struct mfs_super_block sb;
	bool udev = false, ready;
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c != OPT_UDEV)
			usage_unknown_option(cmd, argv);
		udev = true;
	}
	if (check_argc_exact(argc - optind, 1))
		return 1;
	if (mfs_probe_super(argv[optind], &sb)) {
		/* udev runs it on every unknown block device: no noise there */
		if (!udev)
			error("not a valid mfs filesystem: %s", argv[optind]);
		return 1;
	}
	if (!udev) {
		int r = mounted_members_ready(argv[optind]);

		if (r >= 0)
			return r ? 0 : 1;
	}
	/* udev asks whether the members are there to be mounted: presence alone */
	ready = mfs_members_present((const char * const *)argv + optind, 1, &sb);
	if (udev) {
		print_udev_properties(&sb, ready);
		return 0;
	}
	return ready ? 0 : 1;
}
DEFINE_SIMPLE_COMMAND(device_ready, "ready");

/* ---------------- add ---------------- */

static const char * const cmd_device_add_usage[] = {
	"mfs device add [options] <device> [<device>...] <path>",
	"",
	"Add devices to a filesystem, mounted (path) or not (a device of it).",
	"New chunks use the new devices at once; 'mfs balance start' spreads",
	"the existing data onto them.",
	"",
	OPTLINE("-K|--nodiscard", "do not discard (TRIM) the device; image files are not hole-punched"),
	OPTLINE("-f|--force", "overwrite an existing filesystem on the device"),
	OPTLINE("--spare", "add as a hot spare: kept unused until a member goes missing or failing, then the mounted filesystem replaces that member with it"),
	NULL
};

/* 1 after an ERROR line for each device that cannot be added, 0 when all can. */
static int check_new_devices(struct mfs_target *t, char **devs, int ndev, bool force)
{
	int i, j, ret = 0;

	for (i = 0; i < ndev; i++) {
		struct mfs_super_block sb;
		u64 size;

		for (j = 0; j < i; j++) {
			if (mfs_same_device(devs[i], devs[j])) {
				error("%s is given twice (as %s)", devs[i], devs[j]);
				ret = 1;
			}
		}
		/*
		 * A member is held open by the filesystem: say what it is
		 * rather than that it is busy. One that left it is overwritten
		 * with -f, as any other filesystem.
		 */
		if (mfs_target_holds_super(t, devs[i], &sb) &&
		    check_own_fsid_device(t, devs[i], &sb, force, false)) {
			ret = 1;
			continue;
		}
		/* the same checks as mkfs */
		if (mfs_check_new_device(devs[i], force, 0, NULL, &size))
			ret = 1;
	}
	return ret;
}

static int cmd_device_add(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "nodiscard", no_argument, NULL, 'K' },
		{ "force", no_argument, NULL, 'f' },
		{ "spare", no_argument, NULL, OPT_SPARE },
		{ NULL, 0, NULL, 0 }
	};
	bool force = false, discard = true;
	u64 flags = 0;
	struct mfs_target t;
	int c, i, ret = 0, ndev;
	const char *where;

	while ((c = getopt_long(argc, argv, "Kf", longopts, NULL)) != -1) {
		switch (c) {
		case 'K':
			discard = false;
			break;
		case 'f':
			force = true;
			break;
		case OPT_SPARE:
			flags |= MFS_DEV_ADD_SPARE;
			break;
		default:
			usage_unknown_option(cmd, argv);
		}
	}
	if (check_argc_min(argc - optind, 2))
		return 1;
	ndev = argc - optind - 1;
	where = argv[argc - 1];
	if (mfs_target_open(&where, 1, true, &t))
		return 1;
	/* refused before any device is looked at, let alone discarded */
	if (mfs_check_exclusive(&t, "device add", true)) {
		mfs_target_close(&t);
		return 1;
	}
	/* every device is checked before the first one is touched */
	ret = check_new_devices(&t, argv + optind, ndev, force);
	if (ret) {
		mfs_target_close(&t);
		return 1;
	}
	for (i = 0; i < ndev; i++) {
		const char *dev = argv[optind + i];
		u64 devid;
		int err;

		if (discard) {
			struct mfs_io_dev *io;

			if (mfs_io_open(dev, true, false, &io) == 0) {
				mfs_io_discard(io, 0, io->size);
				mfs_io_close(io);
			}
		}
		err = mfs_target_device_add(&t, dev, flags, &devid);
		if (err == -ENOSPC && (flags & MFS_DEV_ADD_SPARE)) {
			error("spare %s is too small: what a member has allocated would not fit on it, so it could not replace every member",
			      dev);
			ret = 1;
			continue;
		}
		if (err == -EINPROGRESS) {
			/* one started meanwhile */
			if (!mfs_check_exclusive(&t, "device add", true))
				error("error adding device '%s': %s", dev, strerror(-err));
			ret = 1;
			continue;
		}
		if (err) {
			error("error adding device '%s': %s", dev, strerror(-err));
			/* failed after it joined: a member all the same */
			if (mfs_target_register_joined(&t, dev))
				fprintf(stderr, "%s joined the filesystem before the error: it is a member ('mfs device delete %s %s' takes it out again)\n",
					dev, dev, t.mnt);
			ret = 1;
			continue;
		}
		mfs_registry_add(dev);
	}
	if (mfs_target_close(&t))
		ret = 1;
	return ret;
}
DEFINE_SIMPLE_COMMAND(device_add, "add");

/* ---------------- delete / remove ---------------- */

static const char * const cmd_device_delete_usage[] = {
	"mfs device delete [options] <device>|<devid>|missing [...] <path>",
	"mfs device delete pause|resume|cancel|status <path>",
	"",
	"Remove devices: everything on them moves to the others in one pass, never",
	"onto another device being removed. Refused before anything moves when the",
	"rest cannot hold the data or would fall below a profile's minimum.",
	"Unlike btrfs it can be paused, resumed and cancelled, and survives unmount;",
	"'mfs balance status' shows it too; 'status' prints the same, --format json",
	"included.",
	"",
	OPTLINE("--bg|--background", "return once started (mounted filesystems)"),
	OPTLINE("-q|--quiet", "no progress output"),
	NULL
};

/* Resolve a path, devid or "missing" to a devid of the filesystem. */
static int resolve_devid(struct mfs_space *sp, const char *arg, const u64 *taken, int ntaken,
			 u64 *devid)
{
	char real[PATH_MAX], other[PATH_MAX];
	int i, j;

	if (!strcmp(arg, "missing")) {
		for (i = 0; i < sp->nr_devs; i++) {
			bool used = false;

			for (j = 0; j < ntaken; j++)
				if (taken[j] == sp->devs[i].devid)
					used = true;
			if (sp->devs[i].missing && !used) {
				*devid = sp->devs[i].devid;
				return 0;
			}
		}
		error("error removing device 'missing': no missing devices found to remove");
		return -ENOENT;
	}
	if (arg[0] >= '0' && arg[0] <= '9' && !strchr(arg, '/')) {
		char *end;
		u64 v = strtoull(arg, &end, 10);

		for (i = 0; !*end && i < sp->nr_devs; i++) {
			if (sp->devs[i].devid == v) {
				*devid = v;
				return 0;
			}
		}
		if (!*end) {
			error("error removing devid %s: not a device of this filesystem", arg);
			return -ENOENT;
		}
	}
	if (!realpath(arg, real)) {
		error("error removing device '%s': %m", arg);
		return -errno;
	}
	for (i = 0; i < sp->nr_devs; i++) {
		if (sp->devs[i].path[0] && realpath(sp->devs[i].path, other) && !strcmp(other, real)) {
			*devid = sp->devs[i].devid;
			return 0;
		}
	}
	error("error removing device '%s': not a device of this filesystem", arg);
	return -ENOENT;
}

/*
 * Unmounted, a member named by devid or as "missing" may be one that is
 * not there: the filesystem opens without it (degraded), as a mount would
 * need -o degraded. A member named by path is there, and all must be.
 */
static unsigned int delete_open_flags(char **devs, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(devs[i], "missing") || strspn(devs[i], "0123456789") == strlen(devs[i]))
			return MFS_OPEN_WRITABLE | MFS_OPEN_DEGRADED;
	return MFS_OPEN_WRITABLE;
}

static int cmd_device_delete(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "bg", no_argument, NULL, 'b' },
		{ "background", no_argument, NULL, 'b' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "force", no_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 }
	};
	struct mfs_ioctl_restripe_args *a;
	bool bg = false, quiet = false;
	struct mfs_target t;
	struct mfs_space sp;
	const char *where;
	int c, i, ret = 1;

	while ((c = getopt_long(argc, argv, "qf", longopts, NULL)) != -1) {
		switch (c) {
		case 'b':
			bg = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'f':
			break;
		default:
			usage_unknown_option(cmd, argv);
		}
	}
	if (check_argc_min(argc - optind, 2))
		return 1;
	if (mfs_output_format == MFS_OUTPUT_JSON &&
	    (argc - optind != 2 || strcmp(argv[optind], "status"))) {
		error("output format json is supported only by 'device delete status'");
		return 1;
	}
	/* delete pause|resume|cancel|status <path>: the balance controls */
	if (argc - optind == 2) {
		static const char * const verbs[] = { "pause", "resume", "cancel", "status" };
		size_t v;

		for (v = 0; v < ARRAY_SIZE(verbs); v++) {
			if (!strcmp(argv[optind], verbs[v])) {
				char *sub[3] = { (char *)verbs[v], argv[optind + 1], NULL };
				const struct cmd_group *g = cmd_struct_balance.next;
				int k;

				for (k = 0; g->commands[k]; k++)
					if (!strcmp(g->commands[k]->token, verbs[v])) {
						optind = 1;
						mfs_restripe_ctl_noun("device delete");
						return g->commands[k]->fn(g->commands[k], 2, sub);
					}
			}
		}
	}
	where = argv[argc - 1];
	a = calloc(1, sizeof(*a));
	if (!a || mfs_target_open_flags(&where, 1, delete_open_flags(argv + optind, argc - optind - 1),
					&t)) {
		free(a);
		return 1;
	}
	if (mfs_target_space(&t, &sp)) {
		error("cannot read the devices of %s", where);
		goto out;
	}
	a->op = MFS_RESTRIPE_OP_DELETE;
	for (i = optind; i < argc - 1; i++) {
		if (a->nr_devids == MFS_RESTRIPE_MAX_DEVIDS) {
			error("at most %d devices at once", MFS_RESTRIPE_MAX_DEVIDS);
			mfs_space_free(&sp);
			goto out;
		}
		if (resolve_devid(&sp, argv[i], a->devids, a->nr_devids, &a->devids[a->nr_devids])) {
			mfs_space_free(&sp);
			goto out;
		}
		a->nr_devids++;
	}
	mfs_space_free(&sp);
	ret = mfs_run_restripe(&t, a, bg, quiet, "device delete");
out:
	if (mfs_target_close(&t))
		ret = 1;
	free(a);
	return ret;
}
/* --format json: for the status verb only */
DEFINE_COMMAND(device_delete, "delete", cmd_device_delete, cmd_device_delete_usage, NULL,
	       CMD_FORMAT_JSON);
/* btrfs's other name for it: resolvable, listed once (as delete) */
DEFINE_COMMAND(device_remove, "remove", cmd_device_delete, cmd_device_delete_usage, NULL,
	       CMD_HIDDEN | CMD_FORMAT_JSON);

/* cmds/stats.c */
extern const struct cmd_struct cmd_struct_device_stats;
/* cmds/usage.c */
extern const struct cmd_struct cmd_struct_device_usage;

static const char * const device_cmd_group_usage[] = {
	"mfs device <command> [<args>]",
	NULL
};

static const struct cmd_group device_cmd_group = {
	device_cmd_group_usage, NULL, {
		&cmd_struct_device_add,
		&cmd_struct_device_delete,
		&cmd_struct_device_remove,
		&cmd_struct_device_replace,
		&cmd_struct_device_scan,
		&cmd_struct_device_ready,
		&cmd_struct_device_stats,
		&cmd_struct_device_usage,
		NULL
	}
};
DEFINE_GROUP_COMMAND(device, "device");
