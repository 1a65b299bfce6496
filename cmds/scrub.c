/*
 * mfs scrub start|status|pause|cancel|resume: read and verify every copy
 * of every used block, repair the bad ones (DESIGN §6); output and exit
 * codes as btrfs scrub, plus the files hit.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include <uuid/uuid.h>
#include "cmds/commands.h"
#include "cmds/restripe-cli.h"
#include "cmds/space.h"
#include "common/help.h"
#include "common/messages.h"
#include "common/units.h"
#include "common/target.h"
#include "common/progress.h"
#include "common/format-output.h"
#include "kernel-shared/ops/scrub.h"
#include "kernel-shared/ops/admin.h"

/* ---------------- the filesystem, mounted or not ---------------- */

static int target_ioctl(struct mfs_target *t, unsigned long cmd, void *arg)
{
	return ioctl(t->fd, cmd, arg) < 0 ? -errno : 0;
}

static int scrub_start(struct mfs_target *t, struct mfs_ioctl_scrub_args *a)
{
	int ret;

	if (!t->online)
		return mfs_scrub_start(t->fs, a);
	ret = target_ioctl(t, MFS_IOC_SCRUB_START, a);
	return ret ? ret : a->result;
}

static int scrub_status(struct mfs_target *t, struct mfs_ioctl_scrub_status *st)
{
	if (!t->online) {
		mfs_scrub_status(t->fs, st);
		return 0;
	}
	return target_ioctl(t, MFS_IOC_SCRUB_STATUS, st);
}

static int scrub_ctl(struct mfs_target *t, unsigned int cmd)
{
	struct mfs_ioctl_scrub_ctl c = { .cmd = cmd };
	int ret;

	if (!t->online)
		return mfs_scrub_ctl(t->fs, cmd);
	ret = target_ioctl(t, MFS_IOC_SCRUB_CTL, &c);
	return ret ? ret : c.result;
}

/* ---------------- output ---------------- */

struct show_opts {
	bool devices;		/* -d */
	bool raw;		/* -R */
	unsigned int units;
};

static const char *state_name(const struct mfs_ioctl_scrub_status *st)
{
	switch (st->state) {
	case MFS_SCRUB_RUNNING:
		return st->cancel_req ? "running, cancel requested" :
		       st->pause_req ? "running, pause requested" : "running";
	case MFS_SCRUB_PAUSED: return "paused";
	case MFS_SCRUB_FINISHED: return "finished";
	case MFS_SCRUB_CANCELED: return "aborted";
	}
	return "interrupted";
}

static void print_duration(const char *label, u64 secs)
{
	printf("%-18s%llu:%02llu:%02llu\n", label, (unsigned long long)secs / 3600,
	       (unsigned long long)secs / 60 % 60, (unsigned long long)secs % 60);
}

static void print_time(const char *label, time_t when)
{
	char buf[64];

	strftime(buf, sizeof(buf), "%a %b %e %H:%M:%S %Y", localtime(&when));
	printf("%-18s%s\n", label, buf);
}

static void print_errors(const struct mfs_ioctl_scrub_counts *c, const char *indent)
{
	if (!c->read_errors && !c->super_errors && !c->csum_errors && !c->verify_errors &&
	    !c->parity_errors && !c->uncorrectable_errors) {
		printf("%s%-18s%s\n", indent, "Error summary:", "no errors found");
		/* copies on missing devices: there, but not checked */
		if (c->unverified_errors)
			printf("%s  %-16s%llu\n", indent, "Unverified:",
			       (unsigned long long)c->unverified_errors);
		return;
	}
	printf("%s%-17s", indent, "Error summary:");
	if (c->read_errors)
		printf(" read=%llu", (unsigned long long)c->read_errors);
	if (c->super_errors)
		printf(" super=%llu", (unsigned long long)c->super_errors);
	if (c->verify_errors)
		printf(" verify=%llu", (unsigned long long)c->verify_errors);
	if (c->csum_errors)
		printf(" csum=%llu", (unsigned long long)c->csum_errors);
	if (c->parity_errors)
		printf(" parity=%llu", (unsigned long long)c->parity_errors);
	printf("\n");
	printf("%s  %-16s%llu\n", indent, "Corrected:", (unsigned long long)c->corrected_errors);
	printf("%s  %-16s%llu\n", indent, "Uncorrectable:",
	       (unsigned long long)c->uncorrectable_errors);
	printf("%s  %-16s%llu\n", indent, "Unverified:", (unsigned long long)c->unverified_errors);
}

static void print_raw(const struct mfs_ioctl_scrub_counts *c, u64 cursor)
{
	printf("\tbytes_scrubbed: %llu\n", (unsigned long long)c->bytes_done);
	printf("\tread_errors: %llu\n", (unsigned long long)c->read_errors);
	printf("\tcsum_errors: %llu\n", (unsigned long long)c->csum_errors);
	printf("\tverify_errors: %llu\n", (unsigned long long)c->verify_errors);
	printf("\tparity_errors: %llu\n", (unsigned long long)c->parity_errors);
	printf("\tsuper_errors: %llu\n", (unsigned long long)c->super_errors);
	printf("\tuncorrectable_errors: %llu\n", (unsigned long long)c->uncorrectable_errors);
	printf("\tunverified_errors: %llu\n", (unsigned long long)c->unverified_errors);
	printf("\tcorrected_errors: %llu\n", (unsigned long long)c->corrected_errors);
	printf("\tlast_logical: %llu\n", (unsigned long long)cursor);
}

/* The files hit (and degraded chunks); corrected files with -v only. */
static void print_files(const struct mfs_ioctl_scrub_status *st)
{
	char *copy = strndup(st->files, sizeof(st->files)), *line, *save = NULL;

	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == 'U' && line[1] == ' ')
			printf("Uncorrectable error in: %s\n", line + 2);
		else if (line[0] == 'C' && line[1] == ' ' && mfs_verbose)
			printf("Corrected error in:     %s\n", line + 2);
		else if (line[0] == 'D' && line[1] == ' ')
			printf("Degraded:         %s\n", line + 2);
	}
	free(copy);
}

static void print_device(const struct mfs_ioctl_scrub_dev *d, const char *path,
			 const struct mfs_ioctl_scrub_status *st, const struct show_opts *o)
{
	printf("\nScrub device %s (id %llu) %s\n", path, (unsigned long long)d->devid,
	       st->state == MFS_SCRUB_RUNNING ? "status" : "history");
	if (o->raw) {
		print_raw(&d->c, st->cursor);
		return;
	}
	printf("%-18s%s\n", "Bytes scrubbed:", pretty_size_mode(d->c.bytes_done, o->units));
	print_errors(&d->c, "");
}

/* The path of devid, from the error counters' report ds. */
static void device_path(const struct mfs_ioctl_dev_stats *ds, u64 devid, char *buf, size_t size)
{
	u64 i;

	snprintf(buf, size, "devid %llu", (unsigned long long)devid);
	for (i = 0; i < ds->nr_devices && i < MFS_DEV_STATS_MAX_DEVS; i++)
		if (ds->devs[i].devid == devid && ds->devs[i].path[0])
			snprintf(buf, size, "%s", ds->devs[i].path);
}

/* ---------------- --format json (Documentation/json-output.md) ---------------- */

static void json_counts(struct json_object *o, const struct mfs_ioctl_scrub_counts *c)
{
	mfs_json_add_u64(o, "bytes_scrubbed", c->bytes_done);
	mfs_json_add_u64(o, "read_errors", c->read_errors);
	mfs_json_add_u64(o, "csum_errors", c->csum_errors);
	mfs_json_add_u64(o, "verify_errors", c->verify_errors);
	mfs_json_add_u64(o, "parity_errors", c->parity_errors);
	mfs_json_add_u64(o, "super_errors", c->super_errors);
	mfs_json_add_u64(o, "corrected_errors", c->corrected_errors);
	mfs_json_add_u64(o, "uncorrectable_errors", c->uncorrectable_errors);
	mfs_json_add_u64(o, "unverified_errors", c->unverified_errors);
}

/* The files (U, C) and degraded chunks (D) of st.files, as arrays. */
static void json_files(struct json_object *o, const struct mfs_ioctl_scrub_status *st)
{
	char *copy = strndup(st->files, sizeof(st->files)), *line, *save = NULL;
	struct json_object *unc = mfs_json_add_array(o, "uncorrectable");
	struct json_object *cor = mfs_json_add_array(o, "corrected");
	struct json_object *deg = mfs_json_add_array(o, "degraded");

	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct json_object *a = line[0] == 'U' ? unc : line[0] == 'C' ? cor :
					line[0] == 'D' ? deg : NULL;

		if (a && line[1] == ' ')
			json_object_array_add(a, json_object_new_string(line + 2));
	}
	free(copy);
}

static void print_json(struct mfs_target *t, const struct mfs_ioctl_scrub_status *st,
		       struct mfs_ioctl_dev_stats *ds)
{
	struct json_object *arr, *root = mfs_json_start("scrub-status", &arr);
	struct json_object *o = root ? mfs_json_array_add_object(arr) : NULL, *devs;
	char uuid[40], path[256];
	u32 i;

	if (!o)
		return;
	uuid_unparse(t->fsid, uuid);
	mfs_json_add_string(o, "uuid", uuid);
	mfs_json_add_string(o, "status", st->state == MFS_SCRUB_NONE ? "none" : state_name(st));
	mfs_json_add_u64(o, "started", st->start_time);
	mfs_json_add_u64(o, "resumed", st->resumed);
	mfs_json_add_u64(o, "duration", st->elapsed_ns / 1000000000ULL);
	mfs_json_add_u64(o, "total_to_scrub", st->bytes_total);
	mfs_json_add_u64(o, "limit", st->limit);
	mfs_json_add_u64(o, "last_logical", st->cursor);
	json_counts(o, &st->c);
	json_files(o, st);
	devs = mfs_json_add_array(o, "devices");
	for (i = 0; devs && i < st->nr_devs && i < MFS_SCRUB_MAX_DEVS; i++) {
		struct json_object *d = mfs_json_array_add_object(devs);

		if (!d)
			break;
		device_path(ds, st->devs[i].devid, path, sizeof(path));
		mfs_json_add_u64(d, "devid", st->devs[i].devid);
		mfs_json_add_string(d, "path", path);
		json_counts(d, &st->devs[i].c);
	}
	mfs_json_print_free(root);
}

/* Every device's path, from the error counters' report (-d, json). */
static struct mfs_ioctl_dev_stats *device_paths(struct mfs_target *t)
{
	struct mfs_ioctl_dev_stats *ds = calloc(1, sizeof(*ds));

	if (ds && (t->online ? target_ioctl(t, MFS_IOC_DEV_STATS, ds) :
			       mfs_admin_dev_stats(t->fs, ds)))
		ds->nr_devices = 0;
	return ds;
}

static void print_text(struct mfs_target *t, const struct mfs_ioctl_scrub_status *st,
		       const struct show_opts *o, struct mfs_ioctl_dev_stats *ds)
{
	double secs = st->elapsed_ns / 1e9;
	char uuid[40], path[256];
	u32 i;

	uuid_unparse(t->fsid, uuid);
	printf("%-18s%s\n", "UUID:", uuid);
	if (st->state == MFS_SCRUB_NONE) {
		printf("\tno stats available\n");
		return;
	}
	print_time(st->resumed ? "Scrub resumed:" : "Scrub started:", st->start_time);
	printf("%-18s%s\n", "Status:", state_name(st));
	print_duration("Duration:", (u64)secs);
	if (st->state == MFS_SCRUB_RUNNING && st->c.bytes_done && secs > 0) {
		double rate = st->c.bytes_done / secs;
		u64 left = st->bytes_total > st->c.bytes_done ? st->bytes_total - st->c.bytes_done : 0;

		print_duration("Time left:", (u64)(left / rate));
		print_time("ETA:", time(NULL) + (time_t)(left / rate));
	}
	printf("%-18s%s\n", "Total to scrub:", pretty_size_mode(st->bytes_total, o->units));
	if (st->state == MFS_SCRUB_RUNNING || st->state == MFS_SCRUB_PAUSED)
		printf("%-18s%s  (%.2f%%)\n", "Bytes scrubbed:",
		       pretty_size_mode(st->c.bytes_done, o->units),
		       st->bytes_total ? 100.0 * st->c.bytes_done / st->bytes_total : 100.0);
	printf("%-18s%s/s", "Rate:", pretty_size_mode(secs > 0 ? (u64)(st->c.bytes_done / secs) : 0,
						      o->units));
	if (st->limit)
		printf(" (limit %s/s)", pretty_size_mode(st->limit, o->units));
	printf("\n");
	if (o->raw)
		print_raw(&st->c, st->cursor);
	else
		print_errors(&st->c, "");
	print_files(st);
	for (i = 0; o->devices && i < st->nr_devs && i < MFS_SCRUB_MAX_DEVS; i++) {
		device_path(ds, st->devs[i].devid, path, sizeof(path));
		print_device(&st->devs[i], path, st, o);
	}
}

static void print_status(struct mfs_target *t, const struct mfs_ioctl_scrub_status *st,
			 const struct show_opts *o)
{
	struct mfs_ioctl_dev_stats *ds = device_paths(t);

	if (!ds)
		return;
	if (mfs_output_format == MFS_OUTPUT_JSON)
		print_json(t, st, ds);
	else
		print_text(t, st, o, ds);
	free(ds);
}

/* ---------------- following a scrub ---------------- */

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

/*
 * Until the next look at the scrub: online, a status poll every 50 ms (a
 * short scrub is not kept waiting for a long tick); offline, 200 ms or
 * until it ends. True when an offline scrub has ended.
 */
static bool scrub_tick(const struct mfs_target *t, struct mfs_job *job)
{
	if (t->online) {
		usleep(50000);
		return false;
	}
	return mfs_job_wait(job, 200);
}

static void show_scrub_progress(struct mfs_progress *p, const struct mfs_ioctl_scrub_status *st,
				bool devices)
{
	u32 i;

	if (!mfs_progress_update(p, "", st->c.bytes_done, st->bytes_total, st->c.bytes_done,
				 st->elapsed_ns / 1e9))
		return;
	/* under each plain line, what each device read */
	for (i = 0; devices && !p->tty && i < st->nr_devs; i++)
		printf("  devid %llu: %s read\n", (unsigned long long)st->devs[i].devid,
		       pretty_size(st->devs[i].c.bytes_done));
}

/*
 * Until the scrub stops (online: polling its status; offline: running it
 * here), with the progress line unless quiet: live on a terminal, else
 * after a second and then every five. Ctrl-C pauses it. st gets the end.
 */
static int scrub_wait(struct mfs_target *t, struct mfs_ioctl_scrub_status *st, bool devices,
		      bool quiet)
{
	struct sigaction sa, old;
	struct mfs_progress prog;
	struct mfs_job job;
	int ret = 0;

	mfs_progress_init(&prog, stdout, quiet);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigaction(SIGINT, &sa, &old);
	if (!t->online && mfs_job_start(&job, mfs_scrub_run, t->fs)) {
		sigaction(SIGINT, &old, NULL);
		return -EAGAIN;
	}
	for (;;) {
		bool ended = scrub_tick(t, &job);

		if (interrupted) {
			interrupted = 0;
			scrub_ctl(t, MFS_SCRUB_CTL_PAUSE);
		}
		ret = scrub_status(t, st);
		if (ret || (t->online ? st->state != MFS_SCRUB_RUNNING : ended))
			break;
		show_scrub_progress(&prog, st, devices);
	}
	if (!t->online) {
		mfs_job_join(&job);
		scrub_status(t, st);
	}
	if (!ret)
		ret = st->last_result;
	mfs_progress_end(&prog, "", st->c.bytes_done, st->bytes_total, st->c.bytes_done,
			 st->elapsed_ns / 1e9);
	sigaction(SIGINT, &old, NULL);
	return ret;
}

/* After a foreground run: the summary, and btrfs's exit code. */
static int finish_foreground(struct mfs_target *t, struct mfs_ioctl_scrub_status *st,
			     const struct show_opts *o, bool quiet, int ret)
{
	if (ret && ret != -EINTR && ret != -ECANCELED) {
		error("scrubbing %s failed: %s", t->mnt, strerror(-ret));
		return 1;
	}
	if (!quiet)
		print_status(t, st, o);
	if (ret == -EINTR)
		fprintf(stderr, "scrub paused\n");
	if (st->c.uncorrectable_errors) {
		error("there are %llu uncorrectable errors",
		      (unsigned long long)st->c.uncorrectable_errors);
		return 3;
	}
	if (st->c.read_errors || st->c.super_errors || st->c.csum_errors || st->c.verify_errors ||
	    st->c.parity_errors)
		warning("errors detected during scrubbing, %llu corrected",
			(unsigned long long)st->c.corrected_errors);
	return 0;
}

/* Online without -B: the daemon scrubs; the command says so and returns. */
static int announce_background(struct mfs_target *t, const char *verb)
{
	struct mfs_ioctl_fs_info *info = calloc(1, sizeof(*info));
	char uuid[40];

	uuid_unparse(t->fsid, uuid);
	if (info && !target_ioctl(t, MFS_IOC_FS_INFO, info))
		printf("scrub %s on %s, fsid %s (pid=%llu)\n", verb, t->mnt, uuid,
		       (unsigned long long)info->daemon_pid);
	else
		printf("scrub %s on %s, fsid %s\n", verb, t->mnt, uuid);
	free(info);
	return 0;
}

/*
 * A scrub just started or resumed on t: followed to its end in the
 * foreground (offline, or -B) with btrfs's exit code, or announced. t is
 * closed.
 */
static int follow_and_close(struct mfs_target *t, bool fg, const struct show_opts *o,
			    bool quiet, const char *verb)
{
	struct mfs_ioctl_scrub_status *st;
	int ret;

	if (t->online && !fg) {
		ret = announce_background(t, verb);
	} else {
		st = calloc(1, sizeof(*st));
		ret = st ? scrub_wait(t, st, o->devices, quiet) : -ENOMEM;
		ret = st ? finish_foreground(t, st, o, quiet, ret) : 1;
		free(st);
	}
	if (mfs_target_close(t) && !ret)
		ret = 1;
	return ret;
}

/* ---------------- commands ---------------- */

enum { OPT_LIMIT = 256 };

static const char * const cmd_scrub_start_usage[] = {
	"mfs scrub start [-BdqrR] [--limit <bytes/s>] <path>|<device>...",
	"",
	"Verify every copy of every used block and repair the bad ones.",
	"Every copy of data and metadata and every raid5/6 parity strip is read and",
	"checked; a bad copy is rewritten from a good one.",
	"Works on a mounted filesystem (in the background unless -B) or on the",
	"devices of an unmounted one (in the foreground).",
	"",
	OPTLINE("-B", "stay in the foreground, show progress, print the summary"),
	OPTLINE("-d", "print the statistics of each device"),
	OPTLINE("-q", "no progress and no summary"),
	OPTLINE("-r", "read only: report the errors, repair nothing"),
	OPTLINE("-R", "raw statistics"),
	OPTLINE("--limit <bytes/s>", "read at most this much per second from each device"),
	"",
	"Exit: 0 done (errors corrected are a warning), 1 not performed,",
	"3 uncorrectable errors left. mfs -v scrub start also names the files corrected.",
	NULL
};

static int cmd_scrub_start(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "limit", required_argument, NULL, OPT_LIMIT },
		{ NULL, 0, NULL, 0 }
	};
	struct mfs_ioctl_scrub_args a = { 0 };
	struct show_opts o = { .units = UNITS_DEFAULT };
	bool fg = false, quiet = mfs_quiet;
	struct mfs_target t;
	int c, ret;

	optind = 0;
	while ((c = getopt_long(argc, argv, "BdqrR", longopts, NULL)) != -1) {
		switch (c) {
		case 'B': fg = true; break;
		case 'd': o.devices = true; break;
		case 'q': quiet = true; break;
		case 'r': a.flags |= MFS_SCRUB_READONLY; break;
		case 'R': o.raw = true; break;
		case OPT_LIMIT:
			if (parse_size(optarg, &a.limit)) {
				error("invalid --limit value: %s", optarg);
				return 1;
			}
			break;
		default:
			usage_unknown_option(cmd, argv);
		}
	}
	if (check_argc_min(argc - optind, 1))
		return 1;
	if (mfs_target_open((const char * const *)argv + optind, argc - optind,
			    !(a.flags & MFS_SCRUB_READONLY), &t))
		return 1;
	ret = scrub_start(&t, &a);
	if (ret) {
		if (a.msg[0])
			error("%s", a.msg);
		else
			error("scrub start failed on %s: %s", t.mnt, strerror(-ret));
		if (ret == -EINPROGRESS)
			fprintf(stderr, "Please use 'mfs scrub cancel' or 'mfs scrub status'.\n");
		mfs_target_close(&t);
		return 1;
	}
	return follow_and_close(&t, fg, &o, quiet, "started");
}
DEFINE_SIMPLE_COMMAND(scrub_start, "start");

static const char * const cmd_scrub_status_usage[] = {
	"mfs scrub status [-dR] [--raw|--human-readable|--iec|--si|--kbytes|--mbytes|--gbytes|--tbytes] <path>|<device>...",
	"",
	"Show the running, paused or last scrub.",
	"Bytes scrubbed, rate, errors, and the files with errors that could not",
	"be corrected.",
	"",
	OPTLINE("-d", "print the statistics of each device"),
	OPTLINE("-R", "raw statistics"),
	OPTLINE("--raw", "sizes in bytes"),
	OPTLINE("--human-readable", "sizes in human readable units (the default)"),
	OPTLINE("--iec", "powers of 1024 (KiB, MiB)"),
	OPTLINE("--si", "powers of 1000 (kB, MB)"),
	OPTLINE("--kbytes", "sizes in KiB (kB with --si)"),
	OPTLINE("--mbytes", "sizes in MiB"),
	OPTLINE("--gbytes", "sizes in GiB"),
	OPTLINE("--tbytes", "sizes in TiB"),
	NULL
};

static int cmd_scrub_status(const struct cmd_struct *cmd, int argc, char **argv)
{
	struct show_opts o = { 0 };
	struct mfs_ioctl_scrub_status *st;
	struct mfs_target t;
	int c, ret;

	o.units = get_unit_mode_from_arg(&argc, argv, 0);
	optind = 0;
	while ((c = getopt(argc, argv, "dR")) != -1) {
		if (c == 'd')
			o.devices = true;
		else if (c == 'R')
			o.raw = true;
		else
			usage_unknown_option(cmd, argv);
	}
	if (check_argc_min(argc - optind, 1))
		return 1;
	if (mfs_target_open((const char * const *)argv + optind, argc - optind, false, &t))
		return 1;
	st = calloc(1, sizeof(*st));
	ret = st ? scrub_status(&t, st) : -ENOMEM;
	if (ret)
		error("scrub status on %s failed: %s", t.mnt, strerror(-ret));
	else
		print_status(&t, st, &o);
	free(st);
	mfs_target_close(&t);
	return ret ? 1 : 0;
}
DEFINE_COMMAND(scrub_status, "status", cmd_scrub_status, cmd_scrub_status_usage, NULL,
	       CMD_FORMAT_JSON);

/* pause and cancel: asked, then followed until the scrub has stopped. */
static int stop_command(const struct cmd_struct *cmd, int argc, char **argv, unsigned int op,
			const char *verb)
{
	struct mfs_ioctl_scrub_status *st;
	struct mfs_target t;
	int ret;

	clean_args_no_options(cmd, argc, argv);
	if (check_argc_min(argc - optind, 1))
		return 1;
	if (mfs_target_open((const char * const *)argv + optind, argc - optind, true, &t))
		return 1;
	ret = scrub_ctl(&t, op);
	if (ret) {
		error("scrub %s failed on %s: %s", verb, t.mnt,
		      ret == -ENOTCONN ? "not running" : strerror(-ret));
		mfs_target_close(&t);
		return ret == -ENOTCONN ? 2 : 1;
	}
	st = calloc(1, sizeof(*st));
	while (st && !scrub_status(&t, st) && st->state == MFS_SCRUB_RUNNING)
		usleep(100000);
	free(st);
	printf("scrub %s\n", op == MFS_SCRUB_CTL_CANCEL ? "cancelled" : "paused");
	return mfs_target_close(&t) ? 1 : 0;
}

static const char * const cmd_scrub_cancel_usage[] = {
	"mfs scrub cancel <path>|<device>...",
	"",
	"Cancel a running or paused scrub; 'mfs scrub resume' continues it later.",
	"Exit 2 when no scrub runs.",
	NULL
};

static int cmd_scrub_cancel(const struct cmd_struct *cmd, int argc, char **argv)
{
	return stop_command(cmd, argc, argv, MFS_SCRUB_CTL_CANCEL, "cancel");
}
DEFINE_SIMPLE_COMMAND(scrub_cancel, "cancel");

static const char * const cmd_scrub_pause_usage[] = {
	"mfs scrub pause <path>|<device>...",
	"",
	"Pause a running scrub where it is; 'mfs scrub resume' continues it.",
	"Exit 2 when no scrub runs.",
	NULL
};

static int cmd_scrub_pause(const struct cmd_struct *cmd, int argc, char **argv)
{
	return stop_command(cmd, argc, argv, MFS_SCRUB_CTL_PAUSE, "pause");
}
DEFINE_SIMPLE_COMMAND(scrub_pause, "pause");

static const char * const cmd_scrub_resume_usage[] = {
	"mfs scrub resume [-BdqR] <path>|<device>...",
	"",
	"Continue a paused or cancelled scrub where it stopped.",
	"",
	OPTLINE("-B", "stay in the foreground, show progress, print the summary"),
	OPTLINE("-d", "print the statistics of each device"),
	OPTLINE("-q", "no progress and no summary"),
	OPTLINE("-R", "raw statistics"),
	"",
	"Exit: as scrub start; 2 when there is nothing to resume.",
	NULL
};

static int cmd_scrub_resume(const struct cmd_struct *cmd, int argc, char **argv)
{
	struct show_opts o = { .units = UNITS_DEFAULT };
	bool fg = false, quiet = mfs_quiet;
	struct mfs_target t;
	int c, ret;

	optind = 0;
	while ((c = getopt(argc, argv, "BdqR")) != -1) {
		switch (c) {
		case 'B': fg = true; break;
		case 'd': o.devices = true; break;
		case 'q': quiet = true; break;
		case 'R': o.raw = true; break;
		default: usage_unknown_option(cmd, argv);
		}
	}
	if (check_argc_min(argc - optind, 1))
		return 1;
	if (mfs_target_open((const char * const *)argv + optind, argc - optind, true, &t))
		return 1;
	ret = scrub_ctl(&t, MFS_SCRUB_CTL_RESUME);
	if (ret == -ENOTCONN) {
		printf("scrub: nothing to resume for %s\n", t.mnt);
		mfs_target_close(&t);
		return 2;
	}
	if (ret) {
		if (ret == -EBUSY)
			error("unable to resume scrub, another exclusive operation is in progress (see 'mfs balance status %s')",
			      t.mnt);
		else
			error("scrub resume failed on %s: %s", t.mnt,
			      ret == -EINPROGRESS ? "already running" : strerror(-ret));
		mfs_target_close(&t);
		return 1;
	}
	return follow_and_close(&t, fg, &o, quiet, "resumed");
}
DEFINE_SIMPLE_COMMAND(scrub_resume, "resume");

static const char * const cmd_scrub_limit_usage[] = {
	"mfs scrub limit [-a|--all] [-d|--devid <devid>] [-l|--limit <bytes/s>] <path>|<device>...",
	"",
	"Show or change the read limit of the running or paused scrub: at once,",
	"and kept with its state for resume. mfs reads every device at one limit.",
	"",
	OPTLINE("-a|--all", "set the limit of every device"),
	OPTLINE("-d|--devid <devid>", "refused: mfs has one limit for every device"),
	OPTLINE("-l|--limit <bytes/s>", "the new limit, 0 for none (needs -a)"),
	NULL
};

/* Each member with the scrub's limit, as btrfs lists its devices' limits. */
static int print_limits(struct mfs_target *t, u64 limit)
{
	struct mfs_space sp;
	char uuid[40];
	int i;

	if (mfs_target_space(t, &sp)) {
		error("cannot read the devices of %s", t->mnt);
		return 1;
	}
	uuid_unparse(t->fsid, uuid);
	printf("UUID: %s\n", uuid);
	printf("%-4s %-12s %s\n", "Id", "Limit", "Path");
	printf("%-4s %-12s %s\n", "--", "---------", "--------");
	for (i = 0; i < sp.nr_devs; i++)
		printf("%4llu %-12s %s\n", (unsigned long long)sp.devs[i].devid,
		       limit ? pretty_size(limit) : "unlimited", dev_path(&sp.devs[i]));
	mfs_space_free(&sp);
	return 0;
}

static int scrub_limit(struct mfs_target *t, u64 limit, u64 *old)
{
	struct mfs_ioctl_scrub_ctl c = { .cmd = MFS_SCRUB_CTL_LIMIT, .value = limit };
	int ret;

	if (!t->online)
		return mfs_scrub_set_limit(t->fs, limit, old);
	ret = target_ioctl(t, MFS_IOC_SCRUB_CTL, &c);
	*old = c.value;
	return ret ? ret : c.result;
}

static int cmd_scrub_limit(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "devid", required_argument, NULL, 'd' },
		{ "limit", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 }
	};
	struct mfs_ioctl_scrub_status *st;
	bool all = false, devid = false, set = false;
	u64 limit = 0, old = 0;
	struct mfs_target t;
	int c, ret;

	optind = 0;
	while ((c = getopt_long(argc, argv, "ad:l:", longopts, NULL)) != -1) {
		switch (c) {
		case 'a': all = true; break;
		case 'd': devid = true; break;
		case 'l':
			if (parse_size(optarg, &limit)) {
				error("invalid --limit value: %s", optarg);
				return 1;
			}
			set = true;
			break;
		default: usage_unknown_option(cmd, argv);
		}
	}
	if (check_argc_min(argc - optind, 1))
		return 1;
	if (devid) {
		error("mfs reads every device at one limit: use --all");
		return 1;
	}
	if (set && !all) {
		error("--limit needs --all");
		return 1;
	}
	if (mfs_target_open((const char * const *)argv + optind, argc - optind, set, &t))
		return 1;
	if (!set) {
		st = calloc(1, sizeof(*st));
		ret = !st || scrub_status(&t, st);
		if (!ret)
			ret = print_limits(&t, st->state == MFS_SCRUB_NONE ? 0 : st->limit);
		free(st);
		mfs_target_close(&t);
		return ret ? 1 : 0;
	}
	ret = scrub_limit(&t, limit, &old);
	if (ret) {
		if (ret == -ENOTCONN)
			error("no scrub running or paused on %s: 'mfs scrub start --limit' sets one for a new scrub",
			      t.mnt);
		else
			error("cannot change the scrub limit on %s: %s", t.mnt, strerror(-ret));
		mfs_target_close(&t);
		return 1;
	}
	printf("Set the scrub limit of every device from %s to %s\n",
	       old ? pretty_size(old) : "unlimited", limit ? pretty_size(limit) : "unlimited");
	return mfs_target_close(&t) ? 1 : 0;
}
DEFINE_SIMPLE_COMMAND(scrub_limit, "limit");

static const char * const scrub_cmd_group_usage[] = {
	"mfs scrub <command> [options] <path>|<device>",
	NULL
};

static const struct cmd_group scrub_cmd_group = {
	scrub_cmd_group_usage, NULL, {
		&cmd_struct_scrub_start,
		&cmd_struct_scrub_cancel,
		&cmd_struct_scrub_pause,
		&cmd_struct_scrub_resume,
		&cmd_struct_scrub_status,
		&cmd_struct_scrub_limit,
		NULL
	}
};
DEFINE_GROUP_COMMAND(scrub, "scrub");
