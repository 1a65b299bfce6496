/*
 * mfs rescue: repairs of structures the filesystem has copies of, for when
 * it does not mount. super-recover rewrites every bad superblock copy from
 * the newest good one, as btrfs rescue super-recover does.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cmds/commands.h"
#include "common/help.h"
#include "common/messages.h"
#include "common/open.h"
#include "kernel-shared/ops/open.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/volumes/volumes.h"

static const char * const cmd_rescue_super_recover_usage[] = {
	"mfs rescue super-recover [options] <device> [<device>...]",
	"",
	"Recover bad superblock copies from the newest good one. Every copy",
	"on every member is read; copies that are missing, corrupt, of another",
	"generation or naming another devid are rewritten.",
	"",
	OPTLINE("-y|--yes", "assume an answer of 'yes' to all questions"),
	OPTLINE("-v|--verbose", "list every copy, good and bad"),
	NULL
};

/* btrfs rescue super-recover's exit codes */
enum { SR_ALL_GOOD = 0, SR_USAGE = 1, SR_RECOVERED = 2, SR_FAILED = 3, SR_ABORTED = 4 };

static const char *copy_state_name(enum mfs_sb_copy_state st)
{
	switch (st) {
	case MFS_SB_COPY_OK: return "good";
	case MFS_SB_COPY_BEHIND: return "one generation behind";
	case MFS_SB_COPY_OTHER_GEN: return "another generation";
	case MFS_SB_COPY_WRONG_DEVID: return "names another devid";
	case MFS_SB_COPY_MISSING: return "missing";
	case MFS_SB_COPY_CORRUPT: return "corrupt";
	case MFS_SB_COPY_FOREIGN: return "another filesystem's";
	case MFS_SB_COPY_BEYOND: break;
	}
	return "none";
}

/*
 * Print the copies that are good (want_good) or bad, btrfs's way; the
 * number of them.
 */
static int list_copies(struct mfs_fs_info *fs, bool want_good, bool print)
{
	struct mfs_super_block sb;
	int i, m, err, n = 0;

	for (i = 0; i < fs->nr_devices; i++) {
		struct mfs_device *dev = fs->devices[i];

		if (dev->missing)
			continue;
		for (m = 0; m < MFS_SUPER_MIRROR_MAX; m++) {
			enum mfs_sb_copy_state st = mfs_super_copy_state(fs, dev, m, &sb, &err);

			if (st == MFS_SB_COPY_BEYOND || (st == MFS_SB_COPY_OK) != want_good)
				continue;
			n++;
			if (!print)
				continue;
			printf("\t\tdevice name = %s\n", dev->path);
			printf("\t\tsuperblock bytenr = %llu\n", (unsigned long long)mfs_sb_offset(m));
			if (!want_good)
				printf("\t\tstate = %s\n", copy_state_name(st));
			printf("\n");
		}
	}
	return n;
}

/* Rewrite every copy of every present member from the open fs's superblock. */
static int rewrite_supers(char **devs, int ndevs)
{
	struct mfs_fs_info *fs;
	int ret;

	ret = mfs_open_for_cmd((const char * const *)devs, ndevs, MFS_OPEN_WRITABLE, &fs);
	if (ret)
		return ret;
	ret = mfs_write_all_supers(fs);
	if (!ret)
		ret = mfs_flush_all_devices(fs);
	if (ret)
		error("writing the superblocks: %s", strerror(-ret));
	if (!ret && list_copies(fs, false, false)) {
		error("some copies are still bad after the rewrite");
		ret = -EIO;
	}
	mfs_close_fs(fs);
	return ret;
}

static int cmd_rescue_super_recover(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "yes", no_argument, NULL, 'y' },
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 }
	};
	bool yes = false, verbose = false;
	struct mfs_fs_info *fs;
	int c, bad;

	while ((c = getopt_long(argc, argv, "yv", longopts, NULL)) != -1) {
		switch (c) {
		case 'y':
			yes = true;
			break;
		case 'v':
			verbose = true;
			break;
		default:
			usage_unknown_option(cmd, argv);
		}
	}
	if (check_argc_min(argc - optind, 1))
		return SR_USAGE;
	/* read-only first: nothing is written before the admin says yes */
	if (mfs_open_for_cmd((const char * const *)argv + optind, argc - optind,
			     MFS_OPEN_PARTIAL, &fs))
		return SR_FAILED;
	bad = list_copies(fs, false, false);
	if (verbose || bad) {
		printf("[All good supers]:\n");
		list_copies(fs, true, true);
		printf("[All bad supers]:\n");
		list_copies(fs, false, true);
	}
	mfs_free_fs_info(fs);
	if (!bad) {
		printf("All supers are valid, no need to recover\n");
		return SR_ALL_GOOD;
	}
	if (!yes && !ask_yes(stdout, "Make sure this is an mfs disk otherwise the tool will destroy other fs, Are you sure?")) {
		printf("Aborted to recover bad superblocks\n");
		return SR_ABORTED;
	}
	if (rewrite_supers(argv + optind, argc - optind)) {
		printf("Failed to recover bad superblocks\n");
		return SR_FAILED;
	}
	printf("Recovered bad superblocks successful\n");
	return SR_RECOVERED;
}
DEFINE_SIMPLE_COMMAND(rescue_super_recover, "super-recover");

static const char * const rescue_cmd_group_usage[] = {
	"mfs rescue <command> [<args>]",
	NULL
};

static const struct cmd_group rescue_cmd_group = {
	rescue_cmd_group_usage, "toolbox for specific rescue operations", {
		&cmd_struct_rescue_super_recover,
		NULL
	}
};
DEFINE_GROUP_COMMAND(rescue, "rescue");
