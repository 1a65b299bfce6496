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
#include "common/format-output.h"
#include "common/progress.h"
#include "kernel-shared/ops/check.h"
#include "kernel-shared/ops/open.h"
#include "kernel-shared/tree/disk-io.h"

static const char * const cmd_check_usage[] = {
	"mfs check [options] <device> [<device>...]",
	"",
	"Check structural integrity of an unmounted filesystem.",
	"Other member devices are found by scanning; image files can be listed.",
	"",
	OPTLINE("--readonly", "run in read-only mode (default)"),
	OPTLINE("--repair", "repair what has a trustworthy source (copies, counts, directory entries), name lost inodes in /lost+found; asks first"),
	OPTLINE("--init-csum-tree", "rebuild the data checksum tree from the data (the first copy that reads), then check and repair as --repair does"),
	OPTLINE("--init-extent-tree", "rebuild the extent tree from the other trees (tree blocks, file extents, block groups), then check and repair as --repair does"),
	OPTLINE("-s|--super N", "use superblock copy N (0, 1 or 2)"),
	OPTLINE("--force", "check even if the filesystem is mounted (results may be inconsistent); with --repair, --init-csum-tree or --init-extent-tree, do not ask"),
	OPTLINE("--check-data-csum", "also verify every copy of every data sector"),
	OPTLINE("-q|--quiet", "print only errors and the summary"),
	NULL
};

/* The bar (stderr) of the bytes the phases check: tree blocks, then data. */
struct check_progress {
	struct mfs_progress bar;
	u64 total;
};

/* arg: the check_progress of the phases (a bar's line ends first), or NULL */
static void report_problem(void *arg, const char *msg)
{
	if (arg)
		mfs_progress_break(&((struct check_progress *)arg)->bar);
	error("%s", msg);
}

static void report_warning(void *arg, const char *msg)
{
	if (arg)
		mfs_progress_break(&((struct check_progress *)arg)->bar);
	warning("%s", msg);
}

/*
 * Where the lines other than errors go: stdout, or stderr with --format
 * json, whose stdout is the summary document only.
 */
static FILE *info;

static void report_fix(void *arg, const char *msg)
{
	(void)arg;
	fprintf(info, "[repair] %s\n", msg);
}

enum { EXIT_CLEAN = 0, EXIT_ERRORS, EXIT_CANNOT_RUN };

/* What the last check found: the summary, in text or JSON. */
struct check_summary {
	bool opened;
	char uuid[37];
	u64 bytes_used, errors, csum_bytes, tree_bytes, data_bytes;
	int repaired;
};

struct check_opts {
	int super_mirror;
	bool force;
	bool quiet;
	bool data_csum;
	bool repair;
	bool init_csum;		/* --init-csum-tree (implies repair) */
	bool init_extent;	/* --init-extent-tree (implies repair) */
	bool yes;		/* repair without asking (--force, fsck -y/-p/-a) */
	bool degraded;		/* repair with members missing, from the copies present */
};

static void check_progress(void *arg, u64 checked)
{
	struct check_progress *cp = arg;

	mfs_progress_update(&cp->bar, "", checked, cp->total, checked,
			    mfs_progress_elapsed(&cp->bar));
}

static void phase(const struct check_opts *o, struct check_progress *cp, int n, const char *what)
{
	mfs_progress_break(&cp->bar);
	if (!o->quiet)
		fprintf(stderr, "[%d/%d] %s\n", n, o->data_csum ? 6 : 5, what);
}

/* Phases 1 to 5 (6 with --check-data-csum); 0 or the -errno that stopped them. */
static int run_phases(struct mfs_fs_info *fs, const struct check_opts *o,
		      struct mfs_check_ctl *ctl)
{
	static const struct {
		const char *what;
		int (*fn)(struct mfs_fs_info *, struct mfs_check_ctl *);
	} phases[] = {
		{ "checking superblocks", mfs_check_supers },
		{ "checking chunks and device extents", mfs_check_chunks },
		{ "checking tree blocks", mfs_check_trees },
		{ "checking extents and block groups", mfs_check_extents },
		{ "checking fs tree", mfs_check_fs_tree },
		{ "checking data checksums", mfs_check_data_csums },
	};
	int i, n = o->data_csum ? 6 : 5, ret = 0;
	struct check_progress cp = { .total = mfs_check_bytes_to_check(fs, o->data_csum) };

	mfs_progress_init(&cp.bar, stderr, o->quiet);
	ctl->progress = check_progress;
	ctl->arg = &cp;
	for (i = 0; i < n && !ret; i++) {
		phase(o, &cp, i + 1, phases[i].what);
		ret = phases[i].fn(fs, ctl);
	}
	mfs_progress_end(&cp.bar, "", ctl->checked, cp.total, ctl->checked,
			 mfs_progress_elapsed(&cp.bar));
	ctl->progress = NULL;
	ctl->arg = NULL;
	return ret;
}

static void note_summary(struct mfs_fs_info *fs, const struct mfs_check_ctl *ctl,
			 struct check_summary *sum)
{
	sum->bytes_used = le64_to_cpu(fs->super.bytes_used);
	sum->errors = ctl->errors;
	sum->csum_bytes = ctl->csum_bytes;
	sum->tree_bytes = ctl->tree_bytes;
	sum->data_bytes = ctl->data_bytes;
	if (mfs_output_format == MFS_OUTPUT_JSON)
		return;
	printf("found %llu bytes used, %s\n", (unsigned long long)sum->bytes_used,
	       ctl->errors ? "error(s) found" : "no error found");
	printf("total csum bytes: %llu\n", (unsigned long long)ctl->csum_bytes);
	printf("total tree bytes: %llu\n", (unsigned long long)ctl->tree_bytes);
	printf("total data bytes: %llu\n", (unsigned long long)ctl->data_bytes);
	if (ctl->errors)
		printf("%llu error(s) found\n", (unsigned long long)ctl->errors);
}

/* --format json: the summary of the last check and what the exit code says. */
static void print_json_summary(const char *device, const struct check_summary *sum,
			       int result, int exit_code)
{
	static const char * const results[] = {
		[EXIT_CLEAN] = "clean", [EXIT_ERRORS] = "errors", [EXIT_CANNOT_RUN] = "not-run",
	};
	struct json_object *arr, *root = mfs_json_start("check", &arr);
	struct json_object *o = root ? mfs_json_array_add_object(arr) : NULL;

	if (!o) {
		json_object_put(root);
		return;
	}
	mfs_json_add_string(o, "device", device);
	mfs_json_add_string(o, "uuid", sum->opened ? sum->uuid : "");
	mfs_json_add_string(o, "result", results[result]);
	mfs_json_add_u64(o, "exit-code", exit_code);
	mfs_json_add_u64(o, "errors", sum->errors);
	mfs_json_add_u64(o, "repaired", sum->repaired);
	mfs_json_add_u64(o, "bytes-used", sum->bytes_used);
	mfs_json_add_u64(o, "csum-bytes", sum->csum_bytes);
	mfs_json_add_u64(o, "tree-bytes", sum->tree_bytes);
	mfs_json_add_u64(o, "data-bytes", sum->data_bytes);
	mfs_json_print_free(root);
}

/*
 * --repair, after a check (read-only) that found errors: refused where the
 * open had to skip structures, and nothing to do when no fix has a
 * trustworthy source. True when it goes no further. With a member
 * missing, the repair is made from the copies present (o->degraded): the
 * filesystem is opened as a degraded mount is, which refuses where a
 * chunk cannot be read whole, and the member is caught up when it returns.
 */
static bool repair_refused(struct mfs_fs_info *fs, const struct mfs_check_ctl *ctl,
			   struct check_opts *o)
{
	int i;

	for (i = 0; i < fs->nr_devices; i++) {
		if (fs->devices[i]->missing && !(fs->devices[i]->flags & MFS_DEV_STATE_SPARE)) {
			warning("device %llu is missing: repairing from the copies on the devices present; it is caught up when it comes back",
				(unsigned long long)fs->devices[i]->devid);
			o->degraded = true;
			break;
		}
	}
	if (fs->nr_problems) {
		error("cannot repair: the filesystem could not be opened whole (see above); nothing was written");
		return true;
	}
	if (!ctl->nr_fixes) {
		fprintf(info, "no error found can be repaired safely; nothing was written\n");
		return true;
	}
	return false;
}

static int open_fs(const struct check_opts *o, char **devs, int ndevs, bool writable,
		   struct mfs_fs_info **fs)
{
	unsigned int flags = MFS_OPEN_PARTIAL;

	/* degraded and writable: strict, as a degraded mount (every chunk readable) */
	if (writable && o->degraded)
		flags = MFS_OPEN_WRITABLE | MFS_OPEN_DEGRADED;
	else if (writable)
		flags |= MFS_OPEN_WRITABLE;
	else if (o->force && !o->repair)
		flags |= MFS_OPEN_NO_EXCL;
	return mfs_open_for_cmd_mirror((const char * const *)devs, ndevs, flags,
				       o->super_mirror, fs);
}

/* The fixes ctl recorded, on the filesystem opened writable: how many, or -errno. */
static int apply_repair(const struct check_opts *o, char **devs, int ndevs,
			struct mfs_check_ctl *ctl)
{
	struct mfs_fs_info *fs;
	u64 applied = 0;
	int ret;

	ret = open_fs(o, devs, ndevs, true, &fs);
	if (ret)
		return ret;
	ret = mfs_check_repair(fs, ctl, report_fix, &applied);
	if (ret) {
		/* what the failed transaction changed in memory is not committed */
		error("repair stopped: %s", strerror(-ret));
		mfs_free_fs_info(fs);
		return ret;
	}
	if (mfs_close_fs(fs)) {
		error("committing the repair failed");
		return -EIO;
	}
	return (int)applied;
}

static void report_csum_tree(void *arg, const char *msg)
{
	(void)arg;
	warning("%s", msg);
}

/*
 * The filesystem opened writable for an --init-* rebuild: refused
 * (nothing written) where the open had to skip structures or a member is
 * missing, as --repair is. 0 or -errno.
 */
static int open_for_rebuild(const struct check_opts *o, char **devs, int ndevs, const char *what,
			    struct mfs_fs_info **out)
{
	struct mfs_fs_info *fs;
	int ret, i;

	ret = open_fs(o, devs, ndevs, true, &fs);
	if (ret)
		return ret;
	for (i = 0; i < fs->nr_devices && !ret; i++)
		if (fs->devices[i]->missing)
			ret = -ENODEV;
	if (ret || fs->nr_problems) {
		error("cannot rebuild the %s tree: %s; nothing was written", what,
		      ret ? "a member is missing" : "the filesystem could not be opened whole");
		mfs_free_fs_info(fs);
		return ret ? ret : -EUCLEAN;
	}
	*out = fs;
	return 0;
}

/* --init-csum-tree, before the check. 0 or -errno. */
static int init_csum_tree(const struct check_opts *o, char **devs, int ndevs)
{
	struct mfs_fs_info *fs;
	u64 extents, bytes;
	int ret;

	ret = open_for_rebuild(o, devs, ndevs, "checksum", &fs);
	if (ret)
		return ret;
	fprintf(info, "Reinitialize checksum tree\n");
	fflush(info);
	ret = mfs_check_init_csum_tree(fs, report_csum_tree, NULL, &extents, &bytes);
	if (ret) {
		error("checksum tree refilling failed: %s; nothing was written", strerror(-ret));
		mfs_free_fs_info(fs);
		return ret;
	}
	if (mfs_close_fs(fs)) {
		error("committing the new checksum tree failed");
		return -EIO;
	}
	fprintf(info, "[repair] checksum tree rebuilt: %llu data extent(s), %llu bytes\n",
		(unsigned long long)extents, (unsigned long long)bytes);
	fflush(info);
	return 0;
}

static void report_extent_tree(void *arg, const char *msg)
{
	(void)arg;
	error("%s", msg);
}

/* --init-extent-tree, before the check (and before --init-csum-tree). 0 or -errno. */
static int init_extent_tree(const struct check_opts *o, char **devs, int ndevs)
{
	struct mfs_fs_info *fs;
	u64 tree, data;
	int ret;

	ret = open_for_rebuild(o, devs, ndevs, "extent", &fs);
	if (ret)
		return ret;
	fprintf(info, "Reinitialize extent tree\n");
	fflush(info);
	ret = mfs_check_init_extent_tree(fs, report_extent_tree, NULL, &tree, &data);
	if (ret) {
		error("extent tree rebuilding failed: %s; nothing was written", strerror(-ret));
		mfs_free_fs_info(fs);
		return ret;
	}
	if (mfs_close_fs(fs)) {
		error("committing the new extent tree failed");
		return -EIO;
	}
	fprintf(info, "[repair] extent tree rebuilt: %llu tree block(s), %llu data extent(s)\n",
		(unsigned long long)tree, (unsigned long long)data);
	fflush(info);
	return 0;
}

/*
 * Runs the phases on the filesystem opened read-only; with --repair and
 * errors, applies the fixes on it opened writable and checks again.
 * Returns EXIT_CLEAN, EXIT_ERRORS or EXIT_CANNOT_RUN; *sum: the summary
 * of the last check and the number of fixes applied.
 */
static int run_check(const struct check_opts *o, char **devs, int ndevs,
		     struct check_summary *sum)
{
	struct mfs_check_ctl ctl = { .report = report_problem, .warn = report_warning,
				     .repair = o->repair };
	struct check_opts again = *o, repair = *o;
	struct mfs_fs_info *fs;
	int ret, repaired;

	if (!o->quiet)
		fprintf(stderr, "Opening filesystem to check...\n");
	if (open_fs(o, devs, ndevs, false, &fs))
		return EXIT_CANNOT_RUN;
	if (o->super_mirror >= 0 && !o->quiet)
		fprintf(info, "using SB copy %d, bytenr %llu\n", o->super_mirror,
			(unsigned long long)mfs_sb_offset(o->super_mirror));
	uuid_unparse(fs->fsid, sum->uuid);
	sum->opened = true;
	if (!o->quiet) {
		fprintf(info, "Checking filesystem on %s\n", devs[0]);
		fprintf(info, "UUID: %s\n", sum->uuid);
		fflush(info);
	}
	ret = run_phases(fs, o, &ctl);
	if (ret)
		error("check aborted: %s", strerror(-ret));
	else
		note_summary(fs, &ctl, sum);
	if (ret || !o->repair || !ctl.errors || repair_refused(fs, &ctl, &repair)) {
		mfs_check_free(&ctl);
		mfs_free_fs_info(fs);
		return ret ? EXIT_CANNOT_RUN : ctl.errors ? EXIT_ERRORS : EXIT_CLEAN;
	}
	mfs_free_fs_info(fs);
	ret = apply_repair(&repair, devs, ndevs, &ctl);
	mfs_check_free(&ctl);
	if (ret <= 0)
		return EXIT_ERRORS;
	repaired = ret;
	fprintf(info, "Repaired %d problem(s); checking again\n", ret);
	fflush(info);
	again.repair = false;
	ret = run_check(&again, devs, ndevs, sum);
	sum->repaired = repaired;
	return ret;
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

enum {
	OPT_READONLY = 256, OPT_REPAIR, OPT_FORCE, OPT_CHECK_DATA_CSUM, OPT_INIT_CSUM_TREE,
	OPT_INIT_EXTENT_TREE,
};

/* --repair without --force: the admin says yes first, as btrfs warns first. */
static bool repair_confirmed(void)
{
	fprintf(stderr,
		"WARNING:\n\n"
		"\t--repair writes to the devices. It repairs only what it has a good\n"
		"\tsource for (another copy, sound extent items) and leaves the rest.\n"
		"\t--init-csum-tree takes the data as the first copy that reads has it.\n"
		"\t--init-extent-tree replaces the extent tree with one made from the others.\n"
		"\tNo fsck can repair every kind of damage: restore what you can\n"
		"\t('mfs restore') before you go on if the data matters.\n\n");
	return ask_yes(stderr, "Do you want to continue?");
}

static int cmd_check(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "readonly", no_argument, NULL, OPT_READONLY },
		{ "repair", no_argument, NULL, OPT_REPAIR },
		{ "super", required_argument, NULL, 's' },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "check-data-csum", no_argument, NULL, OPT_CHECK_DATA_CSUM },
		{ "init-csum-tree", no_argument, NULL, OPT_INIT_CSUM_TREE },
		{ "init-extent-tree", no_argument, NULL, OPT_INIT_EXTENT_TREE },
		{ "quiet", no_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 }
	};
	struct check_opts o = { .super_mirror = -1 };
	struct check_summary sum = { 0 };
	bool readonly = false;
	int c, ret;

	info = mfs_output_format == MFS_OUTPUT_JSON ? stderr : stdout;
	while ((c = getopt_long(argc, argv, "s:q", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_READONLY:
			readonly = true;
			break;
		case OPT_REPAIR:
			o.repair = true;
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
		case OPT_INIT_CSUM_TREE:
			o.init_csum = o.repair = true;
			break;
		case OPT_INIT_EXTENT_TREE:
			o.init_extent = o.repair = true;
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
	if (o.repair && readonly) {
		error("repair options are not compatible with --readonly");
		return 1;
	}
	if (o.repair && !o.force && !repair_confirmed()) {
		fprintf(info, "Aborted; nothing was written\n");
		return 1;
	}
	if ((o.init_extent && init_extent_tree(&o, argv + optind, argc - optind)) ||
	    (o.init_csum && init_csum_tree(&o, argv + optind, argc - optind)))
		ret = EXIT_CANNOT_RUN;
	else
		ret = run_check(&o, argv + optind, argc - optind, &sum);
	if (mfs_output_format == MFS_OUTPUT_JSON)
		print_json_summary(argv[optind], &sum, ret, ret == EXIT_CLEAN ? 0 : 1);
	return ret == EXIT_CLEAN ? 0 : 1;
}
DEFINE_COMMAND(check, "check", cmd_check, cmd_check_usage, NULL, CMD_FORMAT_JSON);

static const char * const cmd_fsck_usage[] = {
	"fsck.mfs [-anpyfv] [-s N] <device>",
	"",
	"Check an unmounted filesystem, as fsck(8) runs it: 'mfs check' with",
	"fsck's exit codes (0 clean, 1 errors corrected, 4 errors left",
	"uncorrected, 8 operational error, 16 usage error).",
	"",
	OPTLINE("-a", "repair without asking what 'mfs check --repair' repairs"),
	OPTLINE("-p", "same as -a"),
	OPTLINE("-y", "same as -a"),
	OPTLINE("-n", "check only, write nothing (the default)"),
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
 * fsck.mfs: the same check with fsck(8) conventions; -a, -p and -y repair
 * without asking, -n (the default) writes nothing.
 * Exit: 0 clean, 1 errors corrected, 4 errors left uncorrected, 8
 * operational error, 16 usage.
 */
int cmd_fsck_main(int argc, char **argv)
{
	struct check_opts o = { .super_mirror = -1, .quiet = true };
	struct check_summary sum = { 0 };
	bool no = false;
	int c, ret;

	if (mfs_help_requested(argc, argv))
		usage(&fsck_helper, 0);
	opterr = 0;
	while ((c = getopt(argc, argv, "anpyfvs:")) != -1) {
		switch (c) {
		case 'a': case 'p': case 'y':
			o.repair = true;
			break;
		case 'n':
			no = true;
			break;
		case 'f':
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
	if (no)
		o.repair = false;
	info = stdout;
	ret = run_check(&o, argv + optind, argc - optind, &sum);
	if (ret == EXIT_CLEAN)
		return sum.repaired ? 1 : 0;
	return ret == EXIT_ERRORS ? 4 : 8;
}
