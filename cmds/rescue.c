/*
 * mfs rescue: repairs for when the filesystem does not mount.
 * super-recover rewrites every bad superblock copy from the newest good
 * one, chunk-recover rebuilds the chunk tree from what the devices hold,
 * as btrfs rescue super-recover and chunk-recover do.
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
#include "kernel-shared/ops/chunk-recover.h"
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

/*
 * Rewrite every copy of every present member from the open fs's
 * superblock. A missing member (degraded) keeps its copies: only the
 * superblocks move, at the same generation, and it is caught up as any
 * member that comes back is.
 */
static int rewrite_supers(char **devs, int ndevs)
{
	struct mfs_fs_info *fs;
	int ret;

	ret = mfs_open_for_cmd((const char * const *)devs, ndevs,
			       MFS_OPEN_WRITABLE | MFS_OPEN_DEGRADED, &fs);
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
	for (c = 0; c < fs->nr_devices; c++)
		if (fs->devices[c]->missing)
			warning("device %llu is missing: its superblock copies are left as they are",
				(unsigned long long)fs->devices[c]->devid);
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

static const char * const cmd_rescue_chunk_recover_usage[] = {
	"mfs rescue chunk-recover [options] <device> [<device>...]",
	"",
	"Recover the chunk tree by scanning the devices one by one. Every",
	"device is read end to end for tree blocks; each block group of the",
	"extent tree and the device extents of its chunk make a chunk again.",
	"With members missing, the stripes of each are kept (its uuid and size",
	"from surviving chunk and device items) when every chunk can be read",
	"and ordered without it; mount with -o degraded afterwards.",
	"",
	OPTLINE("-y|--yes", "assume an answer of 'yes' to all questions"),
	OPTLINE("-v|--verbose", "print every chunk rebuilt and what the scan found"),
	NULL
};

static void say_line(void *arg, const char *msg)
{
	(void)arg;
	printf("%s\n", msg);
}

/* Open with the chunk map rebuilt; writable: the new chunk tree committed. */
static int open_recovered(char **devs, int ndevs, bool write, struct mfs_chunk_recover *rc,
			  struct mfs_fs_info **fs)
{
	struct mfs_open_ctl hooks = { 0 };

	mfs_chunk_recover_setup(&hooks, rc);
	return mfs_open_for_cmd_hooks((const char * const *)devs, ndevs,
				      write ? MFS_OPEN_WRITABLE : 0, &hooks, fs);
}

static int cmd_rescue_chunk_recover(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "yes", no_argument, NULL, 'y' },
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 }
	};
	struct mfs_chunk_recover rc = { 0 };
	bool yes = false;
	struct mfs_fs_info *fs;
	int c;

	while ((c = getopt_long(argc, argv, "yv", longopts, NULL)) != -1) {
		switch (c) {
		case 'y':
			yes = true;
			break;
		case 'v':
			rc.say = say_line;
			break;
		default:
			usage_unknown_option(cmd, argv);
		}
	}
	if (check_argc_min(argc - optind, 1))
		return 1;
	/* the map rebuilt in memory and every tree read through it: nothing written yet */
	if (open_recovered(argv + optind, argc - optind, false, &rc, &fs)) {
		printf("Chunk tree recovery failed; nothing was written\n");
		return 1;
	}
	mfs_free_fs_info(fs);
	printf("Rebuilt %d chunk(s) from %llu tree block copies: %d in the order of a surviving chunk item, %d in the order the blocks and data found bear out\n",
	       rc.nr_chunks, (unsigned long long)rc.tree_blocks, rc.nr_kept, rc.nr_probed);
	if (rc.nr_missing)
		printf("Kept the stripes of %d missing device(s): mount with -o degraded until they are back, replaced or deleted\n",
		       rc.nr_missing);
	fflush(stdout);
	if (!yes && !ask_yes(stdout, "We are going to rebuild the chunk tree on disk, it might destroy the old metadata on the disk, Are you sure?")) {
		printf("Chunk tree recovery aborted\n");
		return 1;
	}
	rc.say = NULL;
	if (open_recovered(argv + optind, argc - optind, true, &rc, &fs)) {
		printf("Chunk tree recovery failed\n");
		return 1;
	}
	if (mfs_close_fs(fs)) {
		error("committing after the new chunk tree failed");
		printf("Chunk tree recovery failed\n");
		return 1;
	}
	printf("Chunk tree recovered successfully\n");
	return 0;
}
DEFINE_SIMPLE_COMMAND(rescue_chunk_recover, "chunk-recover");

static const char * const rescue_cmd_group_usage[] = {
	"mfs rescue <command> [<args>]",
	NULL
};

static const struct cmd_group rescue_cmd_group = {
	rescue_cmd_group_usage, "toolbox for specific rescue operations", {
		&cmd_struct_rescue_super_recover,
		&cmd_struct_rescue_chunk_recover,
		NULL
	}
};
DEFINE_GROUP_COMMAND(rescue, "rescue");
