/*
 * mfs balance start|pause|resume|cancel|status: restripe filters, convert,
 * progress; the same commands see and control a device delete or shrink.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cmds/commands.h"
#include "cmds/restripe-cli.h"
#include "common/help.h"
#include "common/messages.h"
#include "common/units.h"
#include "common/target.h"
#include "common/format-output.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/ops/restripe.h"
#include "kernel-shared/ops/admin.h"
#include "kernel-shared/tree/disk-io.h"

static const char * const cmd_balance_start_usage[] = {
	"mfs balance start [options] <path>|<device>...",
	"",
	"Balance chunks across the devices, or convert their profile.",
	"Works on a mounted filesystem (path) or on the devices of an unmounted one.",
	"",
	OPTLINE("-d[filters]", "act on data chunks"),
	OPTLINE("-m[filters]", "act on metadata chunks (system chunks get the same filters)"),
	OPTLINE("-s[filters]", "act on system chunks (needs -f)"),
	OPTLINE("-f|--force", "allow -s, and reducing metadata redundancy"),
	OPTLINE("--full-balance", "no filters: relocate everything, without the warning"),
	OPTLINE("--bg|--background", "run in the background"),
	OPTLINE("--dry-run", "print what would move and whether it fits, move nothing"),
	OPTLINE("-q|--quiet", "no progress output"),
	"",
	"Filters (comma separated, e.g. -dusage=50,limit=3): profiles=P1|P2, usage=N or",
	"MIN..MAX (percent), devid=N, drange=MIN..MAX (needs devid), vrange=MIN..MAX,",
	"convert=PROFILE, soft (skip chunks already converted), limit=N or MIN..MAX,",
	"stripes=MIN..MAX.",
	NULL
};

/* ---------------- filters ---------------- */

static int parse_profiles(const char *s, u64 *mask)
{
	char *copy = strdup(s), *tok, *save = NULL;
	int ret = 0;

	*mask = 0;
	for (tok = strtok_r(copy, "|", &save); tok; tok = strtok_r(NULL, "|", &save)) {
		u64 bit;

		if (mfs_parse_profile(tok, &bit)) {
			ret = -EINVAL;
			break;
		}
		*mask |= mfs_profile_to_filter_bit(bit);
	}
	free(copy);
	return ret;
}

/* A plain decimal number: no sign (strtoull would take "-3" as 2^64-3), no blanks. */
static int parse_u64(const char *s, u64 *v)
{
	char *end;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return *end || errno ? -EINVAL : 0;
}

/* usage=MAX or usage=MIN..MAX, percents */
static int parse_usage(const char *val, struct mfs_ioctl_balance_filter *f)
{
	u64 a = 0, b;

	if (strstr(val, "..") ? parse_range(val, &a, &b) : parse_u64(val, &b))
		return -EINVAL;
	if (b > 100)
		return -EINVAL;
	f->usage_min = a;
	f->usage_max = b;
	return 0;
}

/* A byte range MIN..MAX with either end optional, as in btrfs. */
static int parse_byte_range(const char *val, u64 *start, u64 *end)
{
	if (!strstr(val, "..") || parse_range(val, start, end))
		return -EINVAL;
	return 0;
}

/* limit=N or limit=MIN..MAX chunks */
static int parse_limit(const char *val, struct mfs_ioctl_balance_filter *f)
{
	if (strstr(val, ".."))
		return parse_range(val, &f->limit_min, &f->limit_max);
	return parse_u64(val, &f->limit_max);
}

static int parse_stripes(const char *val, struct mfs_ioctl_balance_filter *f)
{
	u64 a, b;

	if (parse_range(val, &a, &b) || b > UINT32_MAX)
		return -EINVAL;
	f->stripes_min = a;
	f->stripes_max = b;
	return 0;
}

static int parse_convert(const char *val, struct mfs_ioctl_balance_filter *f)
{
	u64 bit;

	if (mfs_parse_profile(val, &bit)) {
		error("invalid convert argument: %s (valid: %s)", val, mfs_profile_names());
		return -EINVAL;
	}
	f->target = mfs_profile_to_filter_bit(bit);
	return 0;
}

/*
 * One NAME=VALUE (or NAME) of a filter list into f. The value checks
 * print their own message; the others share "invalid NAME argument".
 */
static int parse_one_filter(const char *tok, const char *val, struct mfs_ioctl_balance_filter *f)
{
	int ret;

	if (!strcmp(tok, "soft") && !val) {
		f->flags |= MFS_BALANCE_ARGS_SOFT;
		return 0;
	}
	if (!val) {
		error("unrecognized balance option: %s", tok);
		return -EINVAL;
	}
	if (!strcmp(tok, "convert")) {
		f->flags |= MFS_BALANCE_ARGS_CONVERT;
		return parse_convert(val, f);
	}
	if (!strcmp(tok, "profiles")) {
		f->flags |= MFS_BALANCE_ARGS_PROFILES;
		ret = parse_profiles(val, &f->profiles);
	} else if (!strcmp(tok, "usage")) {
		f->flags |= MFS_BALANCE_ARGS_USAGE;
		ret = parse_usage(val, f);
	} else if (!strcmp(tok, "devid")) {
		f->flags |= MFS_BALANCE_ARGS_DEVID;
		ret = parse_u64(val, &f->devid) || !f->devid ? -EINVAL : 0;
	} else if (!strcmp(tok, "drange")) {
		f->flags |= MFS_BALANCE_ARGS_DRANGE;
		ret = parse_byte_range(val, &f->pstart, &f->pend);
	} else if (!strcmp(tok, "vrange")) {
		f->flags |= MFS_BALANCE_ARGS_VRANGE;
		ret = parse_byte_range(val, &f->vstart, &f->vend);
	} else if (!strcmp(tok, "limit")) {
		f->flags |= MFS_BALANCE_ARGS_LIMIT;
		ret = parse_limit(val, f);
	} else if (!strcmp(tok, "stripes")) {
		f->flags |= MFS_BALANCE_ARGS_STRIPES;
		ret = parse_stripes(val, f);
	} else {
		error("unrecognized balance option: %s", tok);
		return -EINVAL;
	}
	if (ret)
		error("invalid %s argument: %s", tok, val);
	return ret ? -EINVAL : 0;
}

int mfs_parse_balance_filters(const char *arg, struct mfs_ioctl_balance_filter *f)
{
	char *copy, *tok, *save = NULL;
	int ret = 0;

	memset(f, 0, sizeof(*f));
	if (!arg || !*arg)
		return 0;
	copy = strdup(arg);
	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save)) {
		char *val = strchr(tok, '=');

		if (val)
			*val++ = 0;
		ret = parse_one_filter(tok, val, f);
	}
	free(copy);
	if (!ret && (f->flags & MFS_BALANCE_ARGS_DRANGE) && !(f->flags & MFS_BALANCE_ARGS_DEVID)) {
		error("drange filter must be used with devid filter");
		ret = -EINVAL;
	}
	if (!ret && (f->flags & MFS_BALANCE_ARGS_SOFT) && !(f->flags & MFS_BALANCE_ARGS_CONVERT)) {
		error("'soft' option can be used only when converting profiles");
		ret = -EINVAL;
	}
	return ret;
}

/* ---------------- start ---------------- */

static const char *op_name(int op)
{
	switch (op) {
	case MFS_RESTRIPE_OP_DELETE: return "Device delete";
	case MFS_RESTRIPE_OP_RESIZE: return "Resize";
	case MFS_RESTRIPE_OP_REPLACE: return "Device replace";
	}
	return "Balance";
}

/*
 * Refuse to start `what` while another exclusive operation runs (a paused
 * one is refused too unless allow_paused, as btrfs lets device add through).
 * Returns 0 when free, 1 after printing why not.
 */
int mfs_check_exclusive(struct mfs_target *t, const char *what, bool allow_paused)
{
	struct mfs_ioctl_restripe_status *st = calloc(1, sizeof(*st));
	int ret;

	if (!st)
		return 1;
	ret = mfs_target_restripe_status(t, st);
	if (ret) {
		error("%s failed on '%s': %s", what, t->mnt, strerror(-ret));
		free(st);
		return 1;
	}
	if (st->state == MFS_RESTRIPE_RUNNING ||
	    (st->state == MFS_RESTRIPE_PAUSED && !allow_paused)) {
		char name[64];

		/* btrfs's names: 'balance', 'balance paused', 'device delete', ... */
		snprintf(name, sizeof(name), "%s%s", op_name(st->args.op),
			 st->state == MFS_RESTRIPE_PAUSED ? " paused" : "");
		if (name[0] >= 'A' && name[0] <= 'Z')
			name[0] += 'a' - 'A';
		error("unable to start %s, another exclusive operation '%s' in progress",
		      what, name);
		free(st);
		return 1;
	}
	free(st);
	return 0;
}

/* Start, then follow in the foreground: shared by balance, device delete, resize. */
/* The engine's reason for a refusal, with the path the user gave for its "<mnt>". */
static void print_refusal(const char *what, const char *msg, const char *mnt)
{
	const char *at = strstr(msg, "<mnt>");

	if (at)
		error("%s: %.*s%s%s", what, (int)(at - msg), msg, mnt, at + strlen("<mnt>"));
	else
		error("%s: %s", what, msg);
}

int mfs_run_restripe_started(struct mfs_target *t, struct mfs_ioctl_restripe_args *a,
			     bool background, bool quiet, const char *what, const char *started)
{
	struct mfs_ioctl_restripe_status *st;
	int ret = mfs_target_restripe_start(t, a);

	if (ret) {
		st = calloc(1, sizeof(*st));
		if (ret == -EINPROGRESS && st && !mfs_target_restripe_status(t, st) &&
		    st->state != MFS_RESTRIPE_NONE) {
			mfs_check_exclusive(t, what, false);
		} else if (ret == -EBUSY && a->msg[0]) {
			/* a scrub holds the filesystem: btrfs's words */
			error("unable to start %s, %s", what, a->msg);
		} else if (a->msg[0] && a->op == MFS_RESTRIPE_OP_RESIZE)
			error("unable to resize '%s': %s", t->mnt, a->msg);	/* btrfs's words */
		else if (a->msg[0])
			print_refusal(what, a->msg, t->mnt);
		else
			error("%s failed on '%s': %s", what, t->mnt, strerror(-ret));
		free(st);
		return 1;
	}
	if (started && started[0]) {
		printf("%s\n", started);
		fflush(stdout);
	}
	if (background && t->online)
		return 0;
	ret = mfs_target_restripe_wait(t, quiet);
	st = calloc(1, sizeof(*st));
	if (st)
		mfs_target_restripe_status(t, st);
	if (ret == -EINTR) {
		fprintf(stderr, "%s paused by user\n", a->op == MFS_RESTRIPE_OP_BALANCE ? "balance" : what);
		ret = 0;
	} else if (ret == -ECANCELED) {
		fprintf(stderr, "%s canceled by user\n", a->op == MFS_RESTRIPE_OP_BALANCE ? "balance" : what);
		ret = 0;
	} else if (ret) {
		error("error during %s on '%s': %s", what, t->mnt, strerror(-ret));
		if (st && st->state == MFS_RESTRIPE_PAUSED)
			fprintf(stderr,
				"The %s is paused where it stopped: 'mfs balance resume %s' retries, 'mfs balance cancel %s' ends it.\n",
				what, t->mnt, t->mnt);
		ret = 1;
	} else if (a->op == MFS_RESTRIPE_OP_BALANCE && st) {
		printf("Done, had to relocate %llu out of %llu chunks\n",
		       (unsigned long long)st->completed, (unsigned long long)st->considered);
	}
	free(st);
	return ret;
}

int mfs_run_restripe(struct mfs_target *t, struct mfs_ioctl_restripe_args *a, bool background,
		     bool quiet, const char *what)
{
	return mfs_run_restripe_started(t, a, background, quiet, what, NULL);
}

static void full_balance_warning(void)
{
	printf("WARNING:\n\n"
	       "\tFull balance without filters requested. This operation is very\n"
	       "\tintense and takes potentially very long. It is recommended to\n"
	       "\tuse the balance filters to narrow down the scope of balance.\n"
	       "\tUse 'mfs balance start --full-balance' option to skip this\n"
	       "\twarning.%s\n",
	       isatty(STDIN_FILENO) ? " The operation will start in 10 seconds.\n\tUse Ctrl-C to stop it." : "");
	if (isatty(STDIN_FILENO)) {
		int i;

		for (i = 10; i > 0; i--) {
			printf("%d ", i);
			fflush(stdout);
			sleep(1);
		}
		printf("\n");
	}
	printf("Starting balance without any filters.\n");
	fflush(stdout);
}

static int dry_run(struct mfs_target *t, struct mfs_ioctl_restripe_args *a);

enum { OPT_FULL = 256, OPT_BG, OPT_DRY };

static int cmd_balance_start(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "data", optional_argument, NULL, 'd' },
		{ "metadata", optional_argument, NULL, 'm' },
		{ "system", optional_argument, NULL, 's' },
		{ "force", no_argument, NULL, 'f' },
		{ "full-balance", no_argument, NULL, OPT_FULL },
		{ "bg", no_argument, NULL, OPT_BG },
		{ "background", no_argument, NULL, OPT_BG },
		{ "dry-run", no_argument, NULL, OPT_DRY },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 }
	};
	struct mfs_ioctl_restripe_args *a = calloc(1, sizeof(*a));
	bool full = false, bg = false, dry = false, quiet = false, sys_given = false;
	struct mfs_target t;
	int c, ret = 1;

	if (!a)
		return 1;
	a->op = MFS_RESTRIPE_OP_BALANCE;
	while ((c = getopt_long(argc, argv, "d::m::s::fvq", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			a->flags |= MFS_BALANCE_DATA;
			if (mfs_parse_balance_filters(optarg, &a->data))
				goto out;
			break;
		case 'm':
			a->flags |= MFS_BALANCE_METADATA;
			if (mfs_parse_balance_filters(optarg, &a->meta))
				goto out;
			break;
		case 's':
			a->flags |= MFS_BALANCE_SYSTEM;
			sys_given = true;
			if (mfs_parse_balance_filters(optarg, &a->sys))
				goto out;
			break;
		case 'f':
			a->flags |= MFS_BALANCE_FORCE;
			break;
		case OPT_FULL:
			full = true;
			break;
		case OPT_BG:
			bg = true;
			break;
		case OPT_DRY:
			dry = true;
			break;
		case 'v':
			break;
		case 'q':
			quiet = true;
			break;
		default:
			usage_unknown_option(cmd, argv);
		}
	}
	if (check_argc_min(argc - optind, 1))
		goto out;
	if (sys_given && !(a->flags & MFS_BALANCE_FORCE)) {
		error("Refusing to explicitly operate on system chunks.");
		fprintf(stderr, "Pass --force if you really want to do that.\n");
		goto out;
	}
	if (!(a->flags & (MFS_BALANCE_DATA | MFS_BALANCE_METADATA | MFS_BALANCE_SYSTEM))) {
		a->flags |= MFS_BALANCE_DATA | MFS_BALANCE_METADATA | MFS_BALANCE_SYSTEM;
		if (!full && !dry && !quiet)
			full_balance_warning();
	}
	/* metadata filters cover system chunks unless -s says otherwise */
	if ((a->flags & MFS_BALANCE_METADATA) && !sys_given) {
		a->flags |= MFS_BALANCE_SYSTEM;
		a->sys = a->meta;
	}
	if (mfs_target_open((const char * const *)argv + optind, argc - optind, !dry, &t))
		goto out;
	if (dry)
		ret = dry_run(&t, a);
	else
		ret = mfs_run_restripe(&t, a, bg, quiet, "balance");
	if (mfs_target_close(&t))
		ret = 1;
out:
	free(a);
	return ret;
}
DEFINE_SIMPLE_COMMAND(balance_start, "start");

/*
 * Beyond btrfs: what would move, and whether it fits, before anything does.
 * Mounted or not, the same engine function computes it.
 */
static int dry_run(struct mfs_target *t, struct mfs_ioctl_restripe_args *a)
{
	struct mfs_ioctl_restripe_estimate *est = calloc(1, sizeof(*est));
	int ret, fits;

	if (!est)
		return 1;
	est->args = *a;
	ret = mfs_target_restripe_estimate(t, est);
	if (ret && est->args.msg[0]) {
		error("balance: %s", est->args.msg);
		free(est);
		return 1;
	}
	if (ret) {
		error("cannot estimate: %s", strerror(-ret));
		free(est);
		return 1;
	}
	printf("Would relocate %llu chunks holding %s\n", (unsigned long long)est->chunks,
	       pretty_size(est->bytes));
	printf("Space needed:    %s\n", pretty_size(est->raw_needed));
	printf("Space available: %s\n", pretty_size(est->raw_available));
	printf("%s\n", est->fits ? "It fits." : "It does NOT fit.");
	fits = est->fits;
	free(est);
	return fits ? 0 : 1;
}

/* ---------------- pause, resume, cancel, status ---------------- */

/* What pause/resume/cancel/status call the operation: "balance", or "device delete" there. */
static const char *ctl_noun = "balance";

void mfs_restripe_ctl_noun(const char *noun)
{
	ctl_noun = noun;
}

/*
 * Unmounted with a member missing: the paused operation goes on (or is
 * cancelled) here only when it is the one that takes that member out - a
 * device delete or replace of it. Any other would write a degraded
 * filesystem the admin did not ask for: that takes a mount with -o
 * degraded, as btrfs. The missing devid, or 0 when none is in the way.
 */
static u64 missing_in_the_way(struct mfs_target *t)
{
	struct mfs_fs_info *fs = t->fs;
	const struct mfs_restripe_status *st = fs->restripe;
	int i, k;

	for (i = 0; i < fs->nr_devices; i++) {
		const struct mfs_device *dev = fs->devices[i];
		bool removed = false;

		if (!dev->missing)
			continue;
		for (k = 0; st && st->state != MFS_RESTRIPE_NONE && k < st->args.nr_devids; k++)
			if (st->args.devids[k] == dev->devid &&
			    (st->args.op == MFS_RESTRIPE_OP_DELETE ||
			     (st->args.op == MFS_RESTRIPE_OP_REPLACE && k == 0)))
				removed = true;
		if (!removed)
			return dev->devid;
	}
	return 0;
}

static int ctl_command(const struct cmd_struct *cmd, int argc, char **argv, unsigned int op,
		       const char *verb)
{
	struct mfs_target t;
	u64 missing;
	int ret;

	clean_args_no_options(cmd, argc, argv);
	if (check_argc_min(argc - optind, 1))
		return 1;
	/* unmounted, the operation may be the delete or replace of a missing member */
	if (mfs_target_open_flags((const char * const *)argv + optind, argc - optind,
				  MFS_OPEN_WRITABLE | MFS_OPEN_DEGRADED, &t))
		return 1;
	missing = t.online ? 0 : missing_in_the_way(&t);
	if (missing) {
		error("device %llu is missing, and the paused operation does not remove it",
		      (unsigned long long)missing);
		fprintf(stderr, "Mount with -o degraded to %s it there, or add the device back.\n",
			verb);
		mfs_free_fs_info(t.fs);		/* refused: nothing is written */
		return 1;
	}
	ret = mfs_target_restripe_ctl(&t, op);
	if (ret == -ENOTCONN || ret == -ENOENT) {
		error("%s %s on '%s' failed: %s", ctl_noun, verb, t.mnt,
		      op == MFS_RESTRIPE_CTL_PAUSE ? "Not running" : "Not in progress");
		mfs_target_close(&t);
		return 2;
	}
	if (ret == -ENOSPC && op == MFS_RESTRIPE_CTL_RESUME) {
		error("%s resume on '%s' failed: not enough free space for the rest of the operation (was data written while it was paused?)",
		      ctl_noun, t.mnt);
		fprintf(stderr, "It stays paused: free some space or add a device, then resume; or cancel it.\n");
		mfs_target_close(&t);
		return 1;
	}
	if (ret) {
		error("%s %s on '%s' failed: %s", ctl_noun, verb, t.mnt,
		      ret == -EINPROGRESS ? "Already running" : strerror(-ret));
		mfs_target_close(&t);
		return 1;
	}
	if (op == MFS_RESTRIPE_CTL_RESUME) {
		struct mfs_ioctl_restripe_status *st = calloc(1, sizeof(*st));
		struct mfs_ioctl_restripe_args *a = calloc(1, sizeof(*a));

		if (st && a && !mfs_target_restripe_status(&t, st)) {
			int r = mfs_target_restripe_wait(&t, false);

			mfs_target_restripe_status(&t, st);
			if (r == -EINTR)
				fprintf(stderr, "%s paused by user\n", ctl_noun);
			else if (r == -ECANCELED)
				fprintf(stderr, "%s canceled by user\n", ctl_noun);
			else if (r)
				error("error during balancing '%s': %s", t.mnt, strerror(-r)), ret = 1;
			else
				printf("Done, had to relocate %llu out of %llu chunks\n",
				       (unsigned long long)st->completed,
				       (unsigned long long)st->considered);
		}
		free(st);
		free(a);
	} else if (op == MFS_RESTRIPE_CTL_CANCEL || op == MFS_RESTRIPE_CTL_PAUSE) {
		/* like btrfs, return once the current chunk is finished */
		struct mfs_ioctl_restripe_status *st = calloc(1, sizeof(*st));

		while (t.online && st && !mfs_target_restripe_status(&t, st) &&
		       st->state == MFS_RESTRIPE_RUNNING)
			usleep(100000);
		free(st);
	}
	if (mfs_target_close(&t))
		ret = 1;
	return ret;
}

static const char * const cmd_balance_pause_usage[] = {
	"mfs balance pause <path>|<device>...",
	"",
	"Pause the running balance (or device delete); it can be resumed later.",
	NULL
};

static int cmd_balance_pause(const struct cmd_struct *cmd, int argc, char **argv)
{
	return ctl_command(cmd, argc, argv, MFS_RESTRIPE_CTL_PAUSE, "pause");
}
DEFINE_SIMPLE_COMMAND(balance_pause, "pause");

static const char * const cmd_balance_resume_usage[] = {
	"mfs balance resume <path>|<device>...",
	"",
	"Resume a paused balance (or device delete) in the foreground.",
	NULL
};

static int cmd_balance_resume(const struct cmd_struct *cmd, int argc, char **argv)
{
	return ctl_command(cmd, argc, argv, MFS_RESTRIPE_CTL_RESUME, "resume");
}
DEFINE_SIMPLE_COMMAND(balance_resume, "resume");

static const char * const cmd_balance_cancel_usage[] = {
	"mfs balance cancel <path>|<device>...",
	"",
	"Cancel a running or paused balance (or device delete).",
	NULL
};

static int cmd_balance_cancel(const struct cmd_struct *cmd, int argc, char **argv)
{
	return ctl_command(cmd, argc, argv, MFS_RESTRIPE_CTL_CANCEL, "cancel");
}
DEFINE_SIMPLE_COMMAND(balance_cancel, "cancel");

static void dump_filter(const char *name, const struct mfs_ioctl_balance_filter *f)
{
	printf("  %s (flags 0x%x):", name, f->flags);
	if (f->flags & MFS_BALANCE_ARGS_CONVERT)
		printf(" converting, target=%s, soft is %s,",
		       mfs_profile_ui_name(mfs_filter_bit_to_profile(f->target)),
		       (f->flags & MFS_BALANCE_ARGS_SOFT) ? "on" : "off");
	if (f->flags & MFS_BALANCE_ARGS_USAGE)
		printf(" usage=%llu..%llu,", (unsigned long long)f->usage_min,
		       (unsigned long long)f->usage_max);
	if (f->flags & MFS_BALANCE_ARGS_DEVID)
		printf(" devid=%llu,", (unsigned long long)f->devid);
	if (f->flags & MFS_BALANCE_ARGS_LIMIT)
		printf(" limit=%llu,", (unsigned long long)f->limit_max);
	if (f->flags & MFS_BALANCE_ARGS_REDUCED)
		printf(" chunks written reduced only,");
	printf(" balancing\n");
}

static const char * const cmd_balance_status_usage[] = {
	"mfs balance status [-v] <path>|<device>...",
	"",
	"Show the running or paused balance, device delete or resize, with",
	"bytes moved, rate and ETA. Exit 0: none, 1: running or paused, 2: error.",
	"",
	OPTLINE("-v", "also dump the filters"),
	NULL
};

static int cmd_balance_status(const struct cmd_struct *cmd, int argc, char **argv)
{
	struct mfs_ioctl_restripe_status *st;
	struct mfs_target t;
	bool verbose = false;
	int c, ret;

	while ((c = getopt(argc, argv, "v")) != -1) {
		if (c == 'v')
			verbose = true;
		else
			usage_unknown_option(cmd, argv);
	}
	if (check_argc_min(argc - optind, 1))
		return 2;
	/* a status reads only: unmounted, a member may be missing (a delete of it paused) */
	if (mfs_target_open_flags((const char * const *)argv + optind, argc - optind,
				  MFS_OPEN_DEGRADED, &t))
		return 2;
	st = calloc(1, sizeof(*st));
	ret = st ? mfs_target_restripe_status(&t, st) : -ENOMEM;
	if (ret) {
		error("%s status on '%s' failed: %s", ctl_noun, t.mnt, strerror(-ret));
		free(st);
		mfs_target_close(&t);
		return 2;
	}
	if (mfs_output_format == MFS_OUTPUT_JSON) {
		mfs_balance_status_json(t.mnt, st);
		ret = st->state == MFS_RESTRIPE_NONE ? 0 : 1;
	} else if (st->state == MFS_RESTRIPE_NONE) {
		printf("No %s found on '%s'\n", ctl_noun, t.mnt);
		ret = 0;
	} else {
		double pct = st->expected ? 100.0 * (st->expected - st->completed) / st->expected : 0;

		printf("%s on '%s' is %s%s\n", op_name(st->args.op), t.mnt,
		       st->state == MFS_RESTRIPE_RUNNING ? "running" : "paused",
		       st->cancel_req ? ", cancel requested" :
		       st->pause_req ? ", pause requested" : "");
		printf("%llu out of about %llu chunks balanced (%llu considered), %3.f%% left\n",
		       (unsigned long long)st->completed, (unsigned long long)st->expected,
		       (unsigned long long)st->considered, pct);
		if (st->state == MFS_RESTRIPE_RUNNING) {
			double secs = st->elapsed_ns / 1e9;
			double rate = secs > 0.5 ? (st->bytes_done - st->bytes_at_start) / secs : 0;
			u64 left = st->bytes_total > st->bytes_done ? st->bytes_total - st->bytes_done : 0;

			printf("%s of %s moved, %s/s", pretty_size(st->bytes_done),
			       pretty_size(st->bytes_total), pretty_size((u64)rate));
			if (rate > 0)
				printf(", ETA %llus", (unsigned long long)(left / rate));
			printf("\n");
		} else {
			printf("%s of %s moved\n", pretty_size(st->bytes_done),
			       pretty_size(st->bytes_total));
		}
		if (verbose) {
			printf("Dumping filters: flags 0x%llx, state 0x%x, force is %s\n",
			       (unsigned long long)st->args.flags, st->state,
			       (st->args.flags & MFS_BALANCE_FORCE) ? "on" : "off");
			if (st->args.flags & MFS_BALANCE_DATA)
				dump_filter("DATA", &st->args.data);
			if (st->args.flags & MFS_BALANCE_METADATA)
				dump_filter("METADATA", &st->args.meta);
			if (st->args.flags & MFS_BALANCE_SYSTEM)
				dump_filter("SYSTEM", &st->args.sys);
		}
		ret = 1;
	}
	free(st);
	mfs_target_close(&t);
	return ret;
}
DEFINE_COMMAND(balance_status, "status", cmd_balance_status, cmd_balance_status_usage, NULL,
	       CMD_FORMAT_JSON);

static const char * const balance_cmd_group_usage[] = {
	"mfs balance <command> [options] <path>",
	NULL
};

static const struct cmd_group balance_cmd_group = {
	balance_cmd_group_usage, NULL, {
		&cmd_struct_balance_start,
		&cmd_struct_balance_pause,
		&cmd_struct_balance_cancel,
		&cmd_struct_balance_resume,
		&cmd_struct_balance_status,
		NULL
	}
};
DEFINE_GROUP_COMMAND(balance, "balance");
