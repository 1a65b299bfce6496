/* mfs check / fsck.mfs: read-only consistency check of an unmounted filesystem. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uuid/uuid.h>
#include "cmds/commands.h"
#include "common/help.h"
#include "common/messages.h"
#include "common/open.h"
#include "kernel-shared/ops/check.h"
#include "kernel-shared/tree/disk-io.h"

static const char * const cmd_check_usage[] = {
	"mfs check [options] <device> [<device>...]",
	"",
	"Check structural integrity of an unmounted filesystem.",
	"Other member devices are found by scanning; image files can be listed.",
	"",
	OPTLINE("--readonly", "run in read-only mode (default)"),
	OPTLINE("-s|--super N", "use superblock copy N (0, 1 or 2)"),
	OPTLINE("--force", "check even if the filesystem is mounted (results may be inconsistent)"),
	OPTLINE("--check-data-csum", "also verify every copy of every data sector"),
	OPTLINE("-q|--quiet", "print only errors and the summary"),
	NULL
};

static void report_problem(void *arg, const char *msg)
{
	(void)arg;
	error("%s", msg);
}

static void report_warning(void *arg, const char *msg)
{
	(void)arg;
	warning("%s", msg);
}

enum { EXIT_CLEAN = 0, EXIT_ERRORS, EXIT_CANNOT_RUN };

struct check_opts {
	int super_mirror;
	bool force;
	bool quiet;
	bool data_csum;
};

static void phase(const struct check_opts *o, int n, const char *what)
{
	if (!o->quiet)
		fprintf(stderr, "[%d/%d] %s\n", n, o->data_csum ? 6 : 5, what);
}

/* Runs the phases; returns EXIT_CLEAN, EXIT_ERRORS or EXIT_CANNOT_RUN. */
static int run_check(const struct check_opts *o, char **devs, int ndevs)
{
	struct mfs_check_ctl ctl = { .report = report_problem, .warn = report_warning };
	struct mfs_fs_info *fs;
	unsigned int flags = MFS_OPEN_PARTIAL;
	char uuid[37];
	int ret;

	if (o->force)
		flags |= MFS_OPEN_NO_EXCL;
	if (!o->quiet)
		fprintf(stderr, "Opening filesystem to check...\n");
	ret = mfs_open_for_cmd_mirror((const char * const *)devs, ndevs, flags,
				      o->super_mirror, &fs);
	if (ret)
		return EXIT_CANNOT_RUN;
	if (o->super_mirror >= 0 && !o->quiet)
		printf("using SB copy %d, bytenr %llu\n", o->super_mirror,
		       (unsigned long long)mfs_sb_offset(o->super_mirror));
	uuid_unparse(fs->fsid, uuid);
	if (!o->quiet) {
		printf("Checking filesystem on %s\n", devs[0]);
		printf("UUID: %s\n", uuid);
		fflush(stdout);
	}
	phase(o, 1, "checking superblocks");
	ret = mfs_check_supers(fs, &ctl);
	if (!ret) {
		phase(o, 2, "checking chunks and device extents");
		ret = mfs_check_chunks(fs, &ctl);
	}
	if (!ret) {
		phase(o, 3, "checking tree blocks");
		ret = mfs_check_trees(fs, &ctl);
	}
	if (!ret) {
		phase(o, 4, "checking extents and block groups");
		ret = mfs_check_extents(fs, &ctl);
	}
	if (!ret) {
		phase(o, 5, "checking fs tree");
		ret = mfs_check_fs_tree(fs, &ctl);
	}
	if (!ret && o->data_csum) {
		phase(o, 6, "checking data checksums");
		ret = mfs_check_data_csums(fs, &ctl);
	}
	if (ret) {
		error("check aborted: %s", strerror(-ret));
		mfs_check_free(&ctl);
		mfs_free_fs_info(fs);
		return EXIT_CANNOT_RUN;
	}
	printf("found %llu bytes used, %s\n",
	       (unsigned long long)le64_to_cpu(fs->super.bytes_used),
	       ctl.errors ? "error(s) found" : "no error found");
	printf("total csum bytes: %llu\n", (unsigned long long)ctl.csum_bytes);
	printf("total tree bytes: %llu\n", (unsigned long long)ctl.tree_bytes);
	printf("total data bytes: %llu\n", (unsigned long long)ctl.data_bytes);
	if (ctl.errors)
		printf("%llu error(s) found\n", (unsigned long long)ctl.errors);
	mfs_check_free(&ctl);
	mfs_free_fs_info(fs);
	return ctl.errors ? EXIT_ERRORS : EXIT_CLEAN;
}

static int parse_mirror(const char *arg, int *out)
{
	char *end;
	long v = strtol(arg, &end, 10);

	if (*end || v < 0) {
		error("invalid superblock copy: %s", arg);
		return -1;
	}
	if (v >= MFS_SUPER_MIRROR_MAX) {
		error("super mirror should be less than %d", MFS_SUPER_MIRROR_MAX);
		return -1;
	}
	*out = v;
	return 0;
}

enum { OPT_READONLY = 256, OPT_FORCE, OPT_CHECK_DATA_CSUM };

static int cmd_check(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "readonly", no_argument, NULL, OPT_READONLY },
		{ "super", required_argument, NULL, 's' },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "check-data-csum", no_argument, NULL, OPT_CHECK_DATA_CSUM },
		{ "quiet", no_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 }
	};
	struct check_opts o = { .super_mirror = -1 };
	int c, ret;

	while ((c = getopt_long(argc, argv, "s:q", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_READONLY:
			break;
		case 's':
			if (parse_mirror(optarg, &o.super_mirror))
				return 1;
			break;
		case OPT_FORCE:
			o.force = true;
			break;
		case OPT_CHECK_DATA_CSUM:
			o.data_csum = true;
			break;
		case 'q':
			o.quiet = true;
			break;
		default:
			usage_unknown_option(cmd, argv);
		}
	}
	if (check_argc_min(argc - optind, 1))
		return 1;
	ret = run_check(&o, argv + optind, argc - optind);
	return ret == EXIT_CLEAN ? 0 : 1;
}
DEFINE_COMMAND(check, "check", cmd_check, cmd_check_usage, NULL, 0);

static const char * const cmd_fsck_usage[] = {
	"fsck.mfs [-anpyfv] [-s N] <device>",
	"",
	"Check an unmounted filesystem, as fsck(8) runs it: 'mfs check' with",
	"fsck's exit codes (0 clean, 4 errors left uncorrected, 8 operational",
	"error, 16 usage error). Nothing is repaired yet.",
	"",
	OPTLINE("-a", "repair without asking (accepted for boot scripts; nothing is repaired)"),
	OPTLINE("-p", "same as -a"),
	OPTLINE("-y", "answer yes to every question (accepted; nothing is repaired)"),
	OPTLINE("-n", "check only (the default)"),
	OPTLINE("-f", "check even if the filesystem seems clean (always done)"),
	OPTLINE("-v", "print the phases and the summary"),
	OPTLINE("-s N", "use superblock copy N (0, 1 or 2)"),
	NULL
};

/* Not in a command group: fsck(8) runs it by name. */
static const struct cmd_struct fsck_helper = {
	.token = "fsck.mfs",
	.usagestr = cmd_fsck_usage,
};

/*
 * fsck.mfs: the same check with fsck(8) conventions. Repair options are
 * accepted so boot scripts work, but nothing is repaired yet.
 * Exit: 0 clean, 4 errors left uncorrected, 8 operational error, 16 usage.
 */
int cmd_fsck_main(int argc, char **argv)
{
	struct check_opts o = { .super_mirror = -1, .quiet = true };
	int c, ret;

	if (mfs_help_requested(argc, argv))
		usage(&fsck_helper, 0);
	opterr = 0;
	while ((c = getopt(argc, argv, "anpyfvs:")) != -1) {
		switch (c) {
		case 'a': case 'n': case 'p': case 'y': case 'f':
			break;
		case 'v':
			o.quiet = false;
			break;
		case 's':
			if (parse_mirror(optarg, &o.super_mirror))
				return 16;
			break;
		default:
			fprintf(stderr, "usage: %s\n", cmd_fsck_usage[0]);
			return 16;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "usage: %s\n", cmd_fsck_usage[0]);
		return 16;
	}
	ret = run_check(&o, argv + optind, argc - optind);
	if (ret == EXIT_CLEAN)
		return 0;
	return ret == EXIT_ERRORS ? 4 : 8;
}
