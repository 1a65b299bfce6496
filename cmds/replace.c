/*
 * mfs replace start|status|cancel|pause|resume: move everything a device
 * holds onto a new one, chunk by chunk, on the restriper (DESIGN §5).
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include "cmds/commands.h"
#include "cmds/space.h"
#include "cmds/restripe-cli.h"
#include "common/help.h"
#include "common/messages.h"
#include "common/target.h"
#include "common/device-check.h"
#include "common/device-scan.h"
#include "common/open.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/ops/restripe.h"

static int replace_status(struct mfs_target *t, struct mfs_ioctl_restripe_status *st)
{
	int ret = mfs_target_restripe_status(t, st);

	if (ret)
		error("cannot read the replace status of '%s': %s", t->mnt, strerror(-ret));
	return ret;
}

static bool is_replace(const struct mfs_ioctl_restripe_status *st)
{
	return st->state != MFS_RESTRIPE_NONE && st->args.op == MFS_RESTRIPE_OP_REPLACE;
}

/* ---------------- start ---------------- */

static const char * const cmd_replace_start_usage[] = {
	"mfs replace start [-Bfr] [-K] <srcdev>|<devid>|missing <targetdev> <path>|<device>",
	"",
	"Replace a device: every stripe it holds moves to the target, the other",
	"copies stay where they are; then the source leaves the filesystem and the",
	"target takes its devid, as a member of its own size. The target may be",
	"smaller than the source if what is allocated on the source fits. A missing",
	"source (by devid, or 'missing' for the first one; mounted -o degraded) is",
	"rebuilt on the target from the other copies and parity. Unlike btrfs it",
	"can be paused and resumed and survives unmount. New chunks avoid both",
	"devices while it runs.",
	"",
	OPTLINE("-B", "stay in the foreground and show progress (the default on an unmounted filesystem)"),
	OPTLINE("-f", "overwrite an existing filesystem on the target"),
	OPTLINE("-r", "read the source only when no other good copy exists"),
	OPTLINE("-K|--nodiscard", "do not discard (TRIM) the target"),
	NULL
};

/* "missing": the first member that is not there; prints why not. */
static int resolve_missing(struct mfs_space *sp, const char *mnt, u64 *devid)
{
	int i;

	for (i = 0; i < sp->nr_devs; i++) {
		if (sp->devs[i].missing) {
			*devid = sp->devs[i].devid;
			return 0;
		}
	}
	error("no missing device to replace in filesystem '%s': every member is present; name the source by its devid or path",
	      mnt);
	return -ENOENT;
}

/* The devid of a member given by path, devid or "missing"; prints why not. */
static int resolve_source(struct mfs_space *sp, const char *arg, const char *mnt, u64 *devid)
{
	char real[PATH_MAX], other[PATH_MAX];
	int i;

	if (!strcmp(arg, "missing"))
		return resolve_missing(sp, mnt, devid);
	if (arg[0] >= '0' && arg[0] <= '9' && !strchr(arg, '/')) {
		char *end;
		u64 v = strtoull(arg, &end, 10);

		if (!*end) {
			for (i = 0; i < sp->nr_devs; i++) {
				if (sp->devs[i].devid != v)
					continue;
				*devid = v;
				return 0;
			}
			error("'%s' is not a valid devid for filesystem '%s'", arg, mnt);
			return -ENOENT;
		}
	}
	if (!realpath(arg, real)) {
		error("cannot access source device '%s': %m", arg);
		return -ENOENT;
	}
	for (i = 0; i < sp->nr_devs; i++) {
		if (sp->devs[i].path[0] && realpath(sp->devs[i].path, other) && !strcmp(other, real)) {
			*devid = sp->devs[i].devid;
			return 0;
		}
	}
	error("source device '%s' is not a member of filesystem '%s'", arg, mnt);
	return -ENOENT;
}

/* Ends a foreground run: what happened, as an exit code. */
static int report_end(struct mfs_target *t, int ret)
{
	struct mfs_ioctl_restripe_status st;

	if (ret == -EINTR) {
		fprintf(stderr, "replace paused by user\n");
		return 0;
	}
	if (ret == 0 && !mfs_target_restripe_status(t, &st) &&
	    st.last_replace == MFS_REPLACE_CANCELED) {
		fprintf(stderr, "replace canceled by user\n");
		return 0;
	}
	if (ret) {
		error("error during replace on '%s': %s", t->mnt, strerror(-ret));
		if (!mfs_target_restripe_status(t, &st) && st.state == MFS_RESTRIPE_PAUSED)
			fprintf(stderr,
				"The replace is paused where it stopped: 'mfs replace resume %s' retries, 'mfs replace cancel %s' ends it.\n",
				t->mnt, t->mnt);
		return 1;
	}
	return 0;
}

/*
 * Before anything is written: src names a member (its devid and path come
 * back), tgt is not one, and passes mkfs's checks (not mounted, not busy,
 * no other filesystem unless force).
 */
static int check_replace_devices(struct mfs_target *t, const char *src, const char *tgt,
				 bool force, u64 *srcid, char *src_path, size_t len)
{
	struct mfs_super_block sb;
	struct mfs_space sp;
	u64 size;
	int i, err;

	if (mfs_target_space(t, &sp)) {
		error("cannot read the devices of %s", t->mnt);
		return -1;
	}
	err = resolve_source(&sp, src, t->mnt, srcid);
	for (i = 0; !err && i < sp.nr_devs; i++)
		if (sp.devs[i].devid == *srcid)
			snprintf(src_path, len, "%s", sp.devs[i].path);
	mfs_space_free(&sp);
	if (err)
		return -1;
	/*
	 * a member is held open by the filesystem: say what it is rather than
	 * busy; one that left it is overwritten with -f
	 */
	if (mfs_target_holds_super(t, tgt, &sb) && check_own_fsid_device(t, tgt, &sb, force, true))
		return -1;
	return mfs_check_new_device(tgt, force, 0, NULL, &size) ? -1 : 0;
}

/* Why the engine refused to start the replace. */
static void replace_refused(struct mfs_target *t, int err, const struct mfs_ioctl_replace_start *r)
{
	struct mfs_ioctl_restripe_status st;

	if (err == -EINPROGRESS && !replace_status(t, &st) && is_replace(&st))
		error("device replace on '%s' already started", t->mnt);
	else if (err == -EINPROGRESS)
		mfs_check_exclusive(t, "device replace", false);
	else if (r->msg[0])
		error("%s", r->msg);
	else
		error("ioctl(DEV_REPLACE_START) failed on \"%s\": %s", t->mnt, strerror(-err));
}

static int cmd_replace_start(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "nodiscard", no_argument, NULL, 'K' },
		{ "force", no_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 }
	};
	bool fg = false, force = false, discard = true;
	struct mfs_ioctl_replace_start *r = NULL;
	struct mfs_ioctl_restripe_status st;
	char src_real[PATH_MAX], tgt_real[PATH_MAX], src_path[512] = "";
	const char *src, *tgt, *where;
	struct mfs_target t;
	u64 srcid = 0, flags = 0;
	int c, ret = 1, err;

	while ((c = getopt_long(argc, argv, "BfrK", longopts, NULL)) != -1) {
		switch (c) {
		case 'B':
			fg = true;
			break;
		case 'f':
			force = true;
			break;
		case 'r':
			flags |= MFS_BALANCE_REPLACE_READ_OTHERS;
			break;
		case 'K':
			discard = false;
			break;
		default:
			usage_unknown_option(cmd, argv);
		}
	}
	if (check_argc_exact(argc - optind, 3))
		return 1;
	src = argv[optind];
	tgt = argv[optind + 1];
	where = argv[optind + 2];
	if (realpath(src, src_real) && realpath(tgt, tgt_real) && !strcmp(src_real, tgt_real)) {
		error("source and target are the same device: %s", tgt);
		return 1;
	}
	/* unmounted, a source named by devid or "missing" may not be there */
	if (mfs_target_open_flags(&where, 1, MFS_OPEN_WRITABLE |
				  (strspn(src, "0123456789") == strlen(src) || !strcmp(src, "missing") ?
				   MFS_OPEN_DEGRADED : 0), &t))
		return 1;
	if (replace_status(&t, &st))
		goto out;
	if (is_replace(&st)) {
		error("device replace on '%s' already started", t.mnt);
		goto out;
	}
	if (mfs_check_exclusive(&t, "device replace", false))
		goto out;
	if (check_replace_devices(&t, src, tgt, force, &srcid, src_path, sizeof(src_path)))
		goto out;
	r = calloc(1, sizeof(*r));
	if (!r)
		goto out;
	snprintf(r->path, sizeof(r->path), "%s", tgt);
	r->srcdevid = srcid;
	r->flags = flags;
	/* only once the engine accepted it: a refusal must leave the target as it was */
	r->discard = discard;
	err = mfs_target_replace_start(&t, r);
	if (err) {
		replace_refused(&t, err, r);
		/*
		 * failed after the target joined (an I/O error in the commit
		 * that made it a member): resume must find it like the others
		 */
		if (mfs_target_register_joined(&t, tgt))
			fprintf(stderr, "%s joined the filesystem before the error: 'mfs replace status %s' shows where the replace stands, 'mfs replace resume %s' retries it, 'mfs replace cancel %s' ends it\n",
				tgt, where, where, where);
		goto out;
	}
	mfs_registry_add(tgt);
	if (t.online && !fg) {
		ret = 0;
		goto out;
	}
	/* unmounted: in the foreground with progress, -B or not, as the help says */
	ret = report_end(&t, mfs_target_restripe_wait(&t, mfs_quiet));
	if (!ret && !replace_status(&t, &st) && st.last_replace == MFS_REPLACE_FINISHED &&
	    src_path[0])
		mfs_registry_forget(src_path);
out:
	free(r);
	if (mfs_target_close(&t))
		ret = 1;
	return ret;
}
DEFINE_SIMPLE_COMMAND(replace_start, "start");

/* ---------------- status ---------------- */

static const char * const cmd_replace_status_usage[] = {
	"mfs replace status [-1] <path>|<device>",
	"",
	"Show how far the replace is, refreshed every second until it ends, or",
	"how the last one ended.",
	"With --format json: printed once, as with -1.",
	"",
	OPTLINE("-1", "print once and exit"),
	NULL
};

static void fmt_time(u64 t, char *buf, size_t len)
{
	time_t tt = t;
	struct tm tm;

	if (!t || !localtime_r(&tt, &tm) || !strftime(buf, len, "%e.%b %T", &tm))
		snprintf(buf, len, "(unknown)");
}

/* One status line (no newline), as btrfs words it. */
static void status_line(const struct mfs_ioctl_restripe_status *st, char *buf, size_t len)
{
	u64 pm = st->bytes_total ? st->bytes_done * 1000 / st->bytes_total : 1000;
	char start[64], end[64];
	char errs[96];

	if (pm > 1000)
		pm = 1000;
	snprintf(errs, sizeof(errs), "%llu write errs, %llu uncorr. read errs",
		 (unsigned long long)st->write_errs, (unsigned long long)st->read_errs);
	if (is_replace(st)) {
		fmt_time(st->start_time, start, sizeof(start));
		if (st->args.flags & MFS_BALANCE_REPLACE_CANCELLING)
			snprintf(buf, len, "Started on %s, canceling at %llu.%llu%%: %llu.%llu%% moved back%s",
				 start, (unsigned long long)st->cancel_progress / 10,
				 (unsigned long long)st->cancel_progress % 10,
				 (unsigned long long)pm / 10, (unsigned long long)pm % 10,
				 st->state == MFS_RESTRIPE_PAUSED ? ", suspended" : "");
		else if (st->state == MFS_RESTRIPE_PAUSED)
			snprintf(buf, len, "Started on %s, suspended at %llu.%llu%%, %s", start,
				 (unsigned long long)pm / 10, (unsigned long long)pm % 10, errs);
		else
			snprintf(buf, len, "%llu.%llu%% done, %s", (unsigned long long)pm / 10,
				 (unsigned long long)pm % 10, errs);
		return;
	}
	fmt_time(st->last_start_time, start, sizeof(start));
	fmt_time(st->last_end_time, end, sizeof(end));
	snprintf(errs, sizeof(errs), "%llu write errs, %llu uncorr. read errs",
		 (unsigned long long)st->last_write_errs, (unsigned long long)st->last_read_errs);
	if (st->last_replace == MFS_REPLACE_FINISHED)
		snprintf(buf, len, "Started on %s, finished on %s, %s", start, end, errs);
	else if (st->last_replace == MFS_REPLACE_CANCELED)
		snprintf(buf, len, "Started on %s, canceled on %s at %llu.%llu%%, %s",
			 start, end, (unsigned long long)st->last_progress / 10,
			 (unsigned long long)st->last_progress % 10, errs);
	else
		snprintf(buf, len, "Never started");
}

static int cmd_replace_status(const struct cmd_struct *cmd, int argc, char **argv)
{
	struct mfs_ioctl_restripe_status st;
	bool once = false, tty = isatty(STDOUT_FILENO);
	char line[512], last[512] = "";
	struct mfs_target t;
	int c;

	while ((c = getopt(argc, argv, "1")) != -1) {
		if (c == '1')
			once = true;
		else
			usage_unknown_option(cmd, argv);
	}
	if (check_argc_exact(argc - optind, 1))
		return 1;
	/* a status reads only: unmounted, the source of the replace may be missing */
	if (mfs_target_open_flags((const char * const *)argv + optind, 1, MFS_OPEN_DEGRADED, &t))
		return 1;
	/* a JSON document is printed once: what -1 prints */
	if (mfs_output_format == MFS_OUTPUT_JSON) {
		c = replace_status(&t, &st);
		if (!c)
			mfs_replace_status_json(t.mnt, &st);
		mfs_target_close(&t);
		return c ? 1 : 0;
	}
	for (;;) {
		if (replace_status(&t, &st)) {
			mfs_target_close(&t);
			return 1;
		}
		status_line(&st, line, sizeof(line));
		if (once || !t.online || !is_replace(&st) || st.state != MFS_RESTRIPE_RUNNING)
			break;
		/* a terminal: the line redrawn in place; otherwise each change on a line */
		if (tty) {
			printf("\r%s\033[K", line);
			fflush(stdout);
		} else if (strcmp(line, last)) {
			printf("%s\n", line);
			fflush(stdout);
		}
		snprintf(last, sizeof(last), "%s", line);
		sleep(1);
	}
	if (tty && last[0])
		printf("\r%s\033[K\n", line);
	else if (strcmp(line, last))
		printf("%s\n", line);
	mfs_target_close(&t);
	return 0;
}
DEFINE_COMMAND(replace_status, "status", cmd_replace_status, cmd_replace_status_usage, NULL,
	       CMD_FORMAT_JSON);

/* ---------------- cancel, pause, resume ---------------- */

static const char * const cmd_replace_cancel_usage[] = {
	"mfs replace cancel <path>|<device>",
	"",
	"Cancel the replace: what was moved goes back to the source (this takes",
	"a while when much had moved), then the target leaves the filesystem.",
	"A missing source takes nothing back: what was rebuilt stays on the",
	"target, which stays as an ordinary member. Exit 2 when no replace is",
	"running or paused.",
	NULL
};

static const char * const cmd_replace_pause_usage[] = {
	"mfs replace pause <path>|<device>",
	"",
	"Pause the running replace after the current chunk; 'mfs replace resume'",
	"continues it, also after an unmount. Exit 2 when none runs.",
	NULL
};

static const char * const cmd_replace_resume_usage[] = {
	"mfs replace resume <path>|<device>",
	"",
	"Resume a paused replace in the foreground. Exit 2 when none is paused.",
	NULL
};

/* Wait until the operation stops running (online), or run it here (offline). */
static int follow(struct mfs_target *t, bool quiet)
{
	struct mfs_ioctl_restripe_status st;

	if (!t->online)
		return mfs_target_restripe_wait(t, quiet);
	while (!mfs_target_restripe_status(t, &st) && st.state == MFS_RESTRIPE_RUNNING)
		usleep(MFS_TARGET_POLL_MS * 1000);
	return 0;
}

static int replace_ctl(const struct cmd_struct *cmd, int argc, char **argv, unsigned int op)
{
	struct mfs_ioctl_restripe_status st;
	struct mfs_target t;
	int ret = 1, err;

	clean_args_no_options(cmd, argc, argv);
	if (check_argc_exact(argc - optind, 1))
		return 1;
	/* unmounted, the source of the replace may be missing */
	if (mfs_target_open_flags((const char * const *)argv + optind, 1,
				  MFS_OPEN_WRITABLE | MFS_OPEN_DEGRADED, &t))
		return 1;
	if (replace_status(&t, &st))
		goto out;
	if (op == MFS_RESTRIPE_CTL_CANCEL && !is_replace(&st)) {
		fprintf(stderr, "INFO: ioctl(DEV_REPLACE_CANCEL)\"%s\": not started\n", t.mnt);
		ret = 2;
		goto out;
	}
	if ((op == MFS_RESTRIPE_CTL_PAUSE && (!is_replace(&st) || st.state != MFS_RESTRIPE_RUNNING)) ||
	    (op == MFS_RESTRIPE_CTL_RESUME && (!is_replace(&st) || st.state != MFS_RESTRIPE_PAUSED))) {
		error("replace %s on '%s' failed: %s", cmd->token, t.mnt,
		      is_replace(&st) && op == MFS_RESTRIPE_CTL_RESUME ? "Already running" :
		      op == MFS_RESTRIPE_CTL_PAUSE ? "Not running" : "Not in progress");
		ret = is_replace(&st) && op == MFS_RESTRIPE_CTL_RESUME ? 1 : 2;
		goto out;
	}
	err = mfs_target_restripe_ctl(&t, op);
	if (err) {
		error("replace %s on '%s' failed: %s", cmd->token, t.mnt, strerror(-err));
		goto out;
	}
	if (op == MFS_RESTRIPE_CTL_RESUME) {
		ret = report_end(&t, mfs_target_restripe_wait(&t, false));
		goto out;
	}
	/* pause: until the chunk under way is done; cancel: until all is back */
	if (op == MFS_RESTRIPE_CTL_PAUSE || t.online ||
	    (!replace_status(&t, &st) && st.state == MFS_RESTRIPE_RUNNING))
		err = follow(&t, true);
	ret = err && err != -ECANCELED ? report_end(&t, err) : 0;
out:
	if (mfs_target_close(&t))
		ret = 1;
	return ret;
}

static int cmd_replace_cancel(const struct cmd_struct *cmd, int argc, char **argv)
{
	return replace_ctl(cmd, argc, argv, MFS_RESTRIPE_CTL_CANCEL);
}
DEFINE_SIMPLE_COMMAND(replace_cancel, "cancel");

static int cmd_replace_pause(const struct cmd_struct *cmd, int argc, char **argv)
{
	return replace_ctl(cmd, argc, argv, MFS_RESTRIPE_CTL_PAUSE);
}
DEFINE_SIMPLE_COMMAND(replace_pause, "pause");

static int cmd_replace_resume(const struct cmd_struct *cmd, int argc, char **argv)
{
	return replace_ctl(cmd, argc, argv, MFS_RESTRIPE_CTL_RESUME);
}
DEFINE_SIMPLE_COMMAND(replace_resume, "resume");

static const char * const replace_cmd_group_usage[] = {
	"mfs replace <command> [<args>]",
	NULL
};

static const struct cmd_group replace_cmd_group = {
	replace_cmd_group_usage, "replace a device with another, pausable and resumable", {
		&cmd_struct_replace_start,
		&cmd_struct_replace_status,
		&cmd_struct_replace_cancel,
		&cmd_struct_replace_pause,
		&cmd_struct_replace_resume,
		NULL
	}
};
DEFINE_GROUP_COMMAND(replace, "replace");
/* "mfs device replace ...": the same group, listed once (under mfs replace) */
DEFINE_COMMAND(device_replace, "replace", handle_command_group, NULL, &replace_cmd_group, CMD_HIDDEN);
