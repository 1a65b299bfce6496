/* mfs device: scan, ready. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cmds/commands.h"
#include "common/help.h"
#include "common/messages.h"
#include "common/open.h"
#include "common/device-scan.h"
#include "kernel-shared/disk-io.h"

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
	"mfs device ready <device>",
	"",
	"Exit 0 when every member of the device's filesystem is present, 1 otherwise.",
	NULL
};

static int cmd_device_ready(const struct cmd_struct *cmd, int argc, char **argv)
{
	struct mfs_super_block sb;
	struct mfs_scan scan;
	struct mfs_open_ctl ctl = { 0 };
	struct mfs_fs_info *fs;
	const char **paths;
	int i, n = 0, ret;

	clean_args_no_options(cmd, argc, argv);
	if (check_argc_exact(argc - optind, 1))
		return 1;
	if (mfs_probe_super(argv[optind], &sb)) {
		error("not a valid mfs filesystem: %s", argv[optind]);
		return 1;
	}
	if (mfs_scan_all((const char * const *)&argv[optind], 1, &scan))
		return 1;
	paths = calloc(scan.nr, sizeof(*paths));
	for (i = 0; paths && i < scan.nr; i++)
		if (!memcmp(scan.devs[i].sb.fsid, sb.fsid, MFS_FSID_SIZE))
			paths[n++] = scan.devs[i].path;
	ctl.paths = paths;
	ctl.npaths = n;
	ctl.flags = MFS_OPEN_NO_EXCL;
	ctl.fsid = sb.fsid;
	ctl.sb_mirror = -1;
	ret = paths ? mfs_open_fs(&ctl, &fs) : -ENOMEM;
	if (!ret)
		mfs_free_fs_info(fs);
	free(paths);
	mfs_scan_free(&scan);
	return ret ? 1 : 0;
}
DEFINE_SIMPLE_COMMAND(device_ready, "ready");

static const char * const device_cmd_group_usage[] = {
	"mfs device <command> [<args>]",
	NULL
};

static const struct cmd_group device_cmd_group = {
	device_cmd_group_usage, NULL, {
		&cmd_struct_device_scan,
		&cmd_struct_device_ready,
		NULL
	}
};
DEFINE_GROUP_COMMAND(device, "device");
