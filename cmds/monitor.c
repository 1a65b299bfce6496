/*
 * mfs monitor: watch mounted filesystems and report what happens to their
 * devices and long operations, as mdadm --monitor and ZFS's zed do.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <mntent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <uuid/uuid.h>
#include "cmds/commands.h"
#include "common/help.h"
#include "common/messages.h"
#include "common/target.h"
#include "kernel-shared/format/ioctl.h"
#include "kernel-shared/ops/restripe.h"

static const char * const cmd_monitor_usage[] = {
	"mfs monitor [options] [<path>...]",
	"",
	"Watch mounted mfs filesystems (those named, or every one) and report what",
	"happens to them: on stdout, to syslog, and by running a program. Each check",
	"is compared with the one before (the first with a healthy filesystem); events:",
	"device-missing, device-failing (write or flush errors: it is left out),",
	"errors-rising (read, corruption or generation errors), spare-taken (the",
	"daemon began replacing a missing or failing member with a hot spare), and",
	"balance-, delete-, resize- or replace-finished, -failed or -cancelled.",
	"",
	OPTLINE("-1|--oneshot", "check once and exit"),
	OPTLINE("-p|--program PROGRAM", "run 'PROGRAM EVENT MOUNTPOINT [DEVID]' for each event, with MFS_EVENT, MFS_FSID, MFS_MOUNT, MFS_DEVID, MFS_DEVICE and MFS_DETAILS in its environment"),
	OPTLINE("-y|--syslog", "log each event to syslog (the default without --program)"),
	OPTLINE("-d|--delay SECONDS", "time between two checks (default 60)"),
	OPTLINE("-s|--state FILE", "start from the check saved in FILE and save each check there: with --oneshot, report what changed since the last run"),
	NULL
};

/* What one check saw of one filesystem. */
struct dev_seen {
	u64 devid;
	bool missing;
	u64 values[MFS_DEV_STATS_NR_VALUES];	/* MFS_DEV_STAT_* */
	char path[192];
};

struct fs_seen {
	char fsid[37];
	char mnt[PATH_MAX];
	u32 op_state;		/* MFS_RESTRIPE_NONE/RUNNING/PAUSED */
	u32 op;			/* MFS_RESTRIPE_OP_* of the operation last seen */
	int last_result;	/* how it ended: 0 or -errno (this check only) */
	u64 spare_time;		/* the last hot spare taken into use (0 none) */
	u64 spare_src, spare_devid;	/* for which member, and which spare */
	int nr_devs;
	struct dev_seen devs[MFS_DEV_STATS_MAX_DEVS];
};

struct monitor {
	const char *program;
	bool use_syslog;
	const char *state_file;
	struct fs_seen *seen;	/* the last check */
	int nr_seen;
};

struct event {
	const char *name;
	int priority;		/* syslog's */
	const struct fs_seen *fs;
	const struct dev_seen *dev;	/* NULL: about the filesystem */
	char details[256];
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static const char *op_name(u32 op)
{
	static const char * const names[] = {
		[MFS_RESTRIPE_OP_BALANCE] = "balance",
		[MFS_RESTRIPE_OP_DELETE] = "delete",
		[MFS_RESTRIPE_OP_RESIZE] = "resize",
		[MFS_RESTRIPE_OP_REPLACE] = "replace",
	};

	return op < ARRAY_SIZE(names) && names[op] ? names[op] : "balance";
}

/* ---------------- looking ---------------- */

/* One check of the filesystem mounted on mnt. */
static int look(const char *mnt, struct fs_seen *out)
{
	struct mfs_ioctl_fs_info *info = calloc(1, sizeof(*info));
	struct mfs_ioctl_dev_stats *ds = calloc(1, sizeof(*ds));
	struct mfs_ioctl_restripe_status *rs = calloc(1, sizeof(*rs));
	int fd, i, ret = 0;

	memset(out, 0, sizeof(*out));
	fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!info || !ds || !rs || fd < 0) {
		ret = fd < 0 ? -errno : -ENOMEM;
		goto out;
	}
	if (ioctl(fd, MFS_IOC_FS_INFO, info) < 0 || ioctl(fd, MFS_IOC_DEV_STATS, ds) < 0 ||
	    ioctl(fd, MFS_IOC_RESTRIPE_STATUS, rs) < 0) {
		ret = -errno;
		goto out;
	}
	uuid_unparse(info->fsid, out->fsid);
	snprintf(out->mnt, sizeof(out->mnt), "%s", mnt);
	out->op_state = rs->state;
	out->op = rs->args.op;
	out->last_result = rs->last_result;
	out->spare_time = rs->spare_time;
	out->spare_src = rs->spare_src_devid;
	out->spare_devid = rs->spare_devid;
	for (i = 0; i < (int)ds->nr_devices && i < MFS_DEV_STATS_MAX_DEVS; i++) {
		struct dev_seen *d = &out->devs[i];

		d->devid = ds->devs[i].devid;
		d->missing = ds->devs[i].missing;
		memcpy(d->values, ds->devs[i].values, sizeof(d->values));
		snprintf(d->path, sizeof(d->path), "%s", ds->devs[i].path);
	}
	out->nr_devs = i;
out:
	if (fd >= 0)
		close(fd);
	free(info);
	free(ds);
	free(rs);
	return ret;
}

/* The mount points to check: those named (devices resolved), or every mfs one. */
static int mount_points(char **paths, int npaths, bool quiet_missing, char ***out)
{
	char **list = NULL;
	int n = 0, i;

	if (npaths) {
		list = calloc(npaths, sizeof(*list));
		for (i = 0; list && i < npaths; i++) {
			char mnt[PATH_MAX];
			struct stat st;

			if (!stat(paths[i], &st) && S_ISDIR(st.st_mode))
				snprintf(mnt, sizeof(mnt), "%s", paths[i]);
			else if (!mfs_find_mount_of_member(paths[i], mnt, sizeof(mnt))) {
				if (!quiet_missing)
					warning("%s is not a mounted mfs filesystem or a member of one",
						paths[i]);
				continue;
			}
			list[n++] = strdup(mnt);
		}
	} else {
		struct mntent *me;
		FILE *f = setmntent("/proc/self/mounts", "r");

		while (f && (me = getmntent(f))) {
			char **more;

			if (strcmp(me->mnt_type, "fuse.mfs"))
				continue;
			more = realloc(list, (n + 1) * sizeof(*list));
			if (!more)
				break;
			list = more;
			list[n++] = strdup(me->mnt_dir);
		}
		if (f)
			endmntent(f);
	}
	*out = list;
	return n;
}

/* ---------------- reporting ---------------- */

static void run_program(const char *program, const struct event *ev)
{
	char devid[32] = "";
	pid_t pid;
	int status;

	if (ev->dev)
		snprintf(devid, sizeof(devid), "%llu", (unsigned long long)ev->dev->devid);
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		error("cannot run %s: %m", program);
		return;
	}
	if (pid == 0) {
		setenv("MFS_EVENT", ev->name, 1);
		setenv("MFS_FSID", ev->fs->fsid, 1);
		setenv("MFS_MOUNT", ev->fs->mnt, 1);
		setenv("MFS_DETAILS", ev->details, 1);
		if (ev->dev) {
			setenv("MFS_DEVID", devid, 1);
			setenv("MFS_DEVICE", ev->dev->path, 1);
		}
		execl(program, program, ev->name, ev->fs->mnt, ev->dev ? devid : NULL,
		      (char *)NULL);
		fprintf(stderr, "ERROR: cannot run %s: %m\n", program);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		warning("%s %s %s: exit status %d", program, ev->name, ev->fs->mnt,
			WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

/* On stdout (what a script reads), to syslog, and through the program. */
static void report(struct monitor *m, const struct event *ev)
{
	char dev[256] = "";

	if (ev->dev)
		snprintf(dev, sizeof(dev), " devid %llu (%s)", (unsigned long long)ev->dev->devid,
			 ev->dev->path[0] ? ev->dev->path : "missing");
	printf("%s %s%s: %s\n", ev->name, ev->fs->mnt, dev, ev->details);
	fflush(stdout);
	if (m->use_syslog)
		syslog(ev->priority, "%s %s%s: %s", ev->name, ev->fs->mnt, dev, ev->details);
	if (m->program)
		run_program(m->program, ev);
}

/* "read_io_errs 0 -> 3, corruption_errs 0 -> 1" for the counters in mask that rose. */
static bool rising(const struct dev_seen *old, const struct dev_seen *now, unsigned int mask,
		   char *buf, size_t len)
{
	size_t off = 0;
	int i;

	buf[0] = 0;
	for (i = 0; i < MFS_DEV_STATS_NR_VALUES; i++) {
		if (!(mask & (1U << i)) || now->values[i] <= old->values[i])
			continue;
		off += snprintf(buf + off, off < len ? len - off : 0, "%s%s %llu -> %llu",
				off ? ", " : "", mfs_dev_stat_names[i],
				(unsigned long long)old->values[i],
				(unsigned long long)now->values[i]);
	}
	return buf[0] != 0;
}

#define WRITE_ERRORS	(1U << MFS_DEV_STAT_WRITE_ERRS | 1U << MFS_DEV_STAT_FLUSH_ERRS)
#define READ_ERRORS	(1U << MFS_DEV_STAT_READ_ERRS | 1U << MFS_DEV_STAT_CORRUPTION_ERRS | \
			 1U << MFS_DEV_STAT_GENERATION_ERRS)

static void compare_device(struct monitor *m, const struct fs_seen *fs,
			   const struct dev_seen *old, const struct dev_seen *now)
{
	struct event ev = { .fs = fs, .dev = now, .priority = LOG_WARNING };

	if (now->missing && !old->missing) {
		ev.name = "device-missing";
		snprintf(ev.details, sizeof(ev.details), "not present");
		report(m, &ev);
	}
	/* the engine leaves a device out for the rest of the mount at its first write error */
	if (rising(old, now, WRITE_ERRORS, ev.details, sizeof(ev.details))) {
		ev.name = "device-failing";
		report(m, &ev);
	}
	if (rising(old, now, READ_ERRORS, ev.details, sizeof(ev.details))) {
		ev.name = "errors-rising";
		report(m, &ev);
	}
}

/* A long operation seen running last time and no longer. */
static void compare_operation(struct monitor *m, const struct fs_seen *old,
			      const struct fs_seen *now)
{
	struct event ev = { .fs = now, .priority = LOG_NOTICE };
	static char name[32];

	if (old->op_state != MFS_RESTRIPE_RUNNING || now->op_state == MFS_RESTRIPE_RUNNING)
		return;
	if (now->op_state == MFS_RESTRIPE_PAUSED && now->last_result == -EINTR)
		return;		/* paused on request */
	if (now->op_state == MFS_RESTRIPE_NONE && now->last_result == 0) {
		snprintf(name, sizeof(name), "%s-finished", op_name(old->op));
		snprintf(ev.details, sizeof(ev.details), "done");
	} else if (now->op_state == MFS_RESTRIPE_NONE && now->last_result == -ECANCELED) {
		snprintf(name, sizeof(name), "%s-cancelled", op_name(old->op));
		snprintf(ev.details, sizeof(ev.details), "cancelled");
	} else {
		snprintf(name, sizeof(name), "%s-failed", op_name(old->op));
		snprintf(ev.details, sizeof(ev.details), "%s%s",
			 now->op_state == MFS_RESTRIPE_PAUSED ? "paused by an error: " : "",
			 strerror(-now->last_result));
		ev.priority = LOG_WARNING;
	}
	ev.name = name;
	report(m, &ev);
}

static const struct dev_seen *find_dev(const struct fs_seen *fs, u64 devid);

/* A hot spare taken into use since the last check (the daemon did it). */
static void compare_spare(struct monitor *m, const struct fs_seen *old,
			  const struct fs_seen *now)
{
	struct event ev = { .fs = now, .priority = LOG_WARNING, .name = "spare-taken" };

	if (!now->spare_time || now->spare_time == old->spare_time)
		return;
	/* the member's devid: the spare has it, or will have it when the replace ends */
	ev.dev = find_dev(now, now->spare_src);
	snprintf(ev.details, sizeof(ev.details),
		 "devid %llu is being replaced by the hot spare devid %llu",
		 (unsigned long long)now->spare_src, (unsigned long long)now->spare_devid);
	report(m, &ev);
}

static const struct dev_seen *find_dev(const struct fs_seen *fs, u64 devid)
{
	int i;

	for (i = 0; fs && i < fs->nr_devs; i++)
		if (fs->devs[i].devid == devid)
			return &fs->devs[i];
	return NULL;
}

/* old NULL: the filesystem was not seen before, compare with a healthy one. */
static void compare(struct monitor *m, const struct fs_seen *old, const struct fs_seen *now)
{
	static const struct dev_seen healthy_dev;
	static const struct fs_seen healthy_fs;
	int i;

	for (i = 0; i < now->nr_devs; i++) {
		const struct dev_seen *o = find_dev(old, now->devs[i].devid);

		compare_device(m, now, o ? o : &healthy_dev, &now->devs[i]);
	}
	compare_operation(m, old ? old : &healthy_fs, now);
	compare_spare(m, old ? old : &healthy_fs, now);
}

/* ---------------- the state between two runs ---------------- */

/*
 * One line per filesystem and one per device after it:
 *   fs FSID OP_STATE OP MOUNTPOINT
 *   spare TIME SRC-DEVID SPARE-DEVID	(once a spare was taken)
 *   dev DEVID MISSING WRITE READ FLUSH CORRUPTION GENERATION PATH
 */
static int load_state(struct monitor *m)
{
	char line[PATH_MAX + 256];
	FILE *f = fopen(m->state_file, "r");
	struct fs_seen *fs = NULL;

	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v[MFS_DEV_STATS_NR_VALUES], devid;
		unsigned int state, op, missing;
		char fsid[37];
		int n = 0;

		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "fs %36s %u %u %n", fsid, &state, &op, &n) == 3 && n) {
			struct fs_seen *more = realloc(m->seen, (m->nr_seen + 1) * sizeof(*more));

			if (!more)
				break;
			m->seen = more;
			fs = &m->seen[m->nr_seen++];
			memset(fs, 0, sizeof(*fs));
			snprintf(fs->fsid, sizeof(fs->fsid), "%s", fsid);
			fs->op_state = state;
			fs->op = op;
			snprintf(fs->mnt, sizeof(fs->mnt), "%s", line + n);
		} else if (fs && sscanf(line, "spare %llu %llu %llu", &v[0], &v[1], &v[2]) == 3) {
			fs->spare_time = v[0];
			fs->spare_src = v[1];
			fs->spare_devid = v[2];
		} else if (fs && fs->nr_devs < MFS_DEV_STATS_MAX_DEVS &&
			   sscanf(line, "dev %llu %u %llu %llu %llu %llu %llu %n", &devid, &missing,
				  &v[0], &v[1], &v[2], &v[3], &v[4], &n) == 7 && n) {
			struct dev_seen *d = &fs->devs[fs->nr_devs++];
			int i;

			d->devid = devid;
			d->missing = missing;
			for (i = 0; i < MFS_DEV_STATS_NR_VALUES; i++)
				d->values[i] = v[i];
			snprintf(d->path, sizeof(d->path), "%s", line + n);
		}
	}
	fclose(f);
	return 0;
}

/* Written aside and renamed, so a reader never sees half of it. */
static int save_state(const struct monitor *m)
{
	char tmp[PATH_MAX];
	FILE *f;
	int i, j;

	snprintf(tmp, sizeof(tmp), "%s.tmp", m->state_file);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	for (i = 0; i < m->nr_seen; i++) {
		const struct fs_seen *fs = &m->seen[i];

		fprintf(f, "fs %s %u %u %s\n", fs->fsid, fs->op_state, fs->op, fs->mnt);
		if (fs->spare_time)
			fprintf(f, "spare %llu %llu %llu\n", (unsigned long long)fs->spare_time,
				(unsigned long long)fs->spare_src, (unsigned long long)fs->spare_devid);
		for (j = 0; j < fs->nr_devs; j++) {
			const struct dev_seen *d = &fs->devs[j];
			int k;

			fprintf(f, "dev %llu %d", (unsigned long long)d->devid, d->missing);
			for (k = 0; k < MFS_DEV_STATS_NR_VALUES; k++)
				fprintf(f, " %llu", (unsigned long long)d->values[k]);
			fprintf(f, " %s\n", d->path);
		}
	}
	if (fclose(f))
		return -errno;
	return rename(tmp, m->state_file) ? -errno : 0;
}

/* ---------------- the checks ---------------- */

static const struct fs_seen *find_fs(const struct monitor *m, const char *fsid)
{
	int i;

	for (i = 0; i < m->nr_seen; i++)
		if (!strcmp(m->seen[i].fsid, fsid))
			return &m->seen[i];
	return NULL;
}

/* One check of every filesystem watched; it becomes the last check. */
static int check_all(struct monitor *m, char **paths, int npaths, bool oneshot)
{
	struct fs_seen *now;
	char **mnts;
	int n, i, nr_now = 0, ret = 0;

	n = mount_points(paths, npaths, !oneshot, &mnts);
	if (npaths && n < npaths && oneshot)
		ret = 1;
	now = calloc(n ? n : 1, sizeof(*now));
	if (!now) {
		error("out of memory");
		ret = 1;
		n = 0;
	}
	for (i = 0; i < n; i++) {
		int err = look(mnts[i], &now[nr_now]);

		if (err) {
			/* unmounted meanwhile: nothing to say; anything else is */
			if (err != -ENOENT && err != -ENOTCONN && err != -ENOTTY)
				error("cannot check %s: %s", mnts[i], strerror(-err));
			if (err == -EPERM || err == -EACCES)
				ret = 1;
			continue;
		}
		compare(m, find_fs(m, now[nr_now].fsid), &now[nr_now]);
		nr_now++;
	}
	for (i = 0; i < n; i++)
		free(mnts[i]);
	free(mnts);
	if (now) {
		free(m->seen);
		m->seen = now;
		m->nr_seen = nr_now;
	}
	if (m->state_file) {
		int err = save_state(m);

		if (err) {
			error("cannot write %s: %s", m->state_file, strerror(-err));
			ret = 1;
		}
	}
	return ret;
}

static int parse_delay(const char *arg, struct timespec *ts)
{
	char *end;
	double v = strtod(arg, &end);

	if (*end || !(v > 0) || v > 86400 * 365) {
		error("invalid delay '%s' (seconds, more than 0)", arg);
		return -1;
	}
	ts->tv_sec = (time_t)v;
	ts->tv_nsec = (long)((v - ts->tv_sec) * 1e9);
	return 0;
}

static int cmd_monitor(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "oneshot", no_argument, NULL, '1' },
		{ "program", required_argument, NULL, 'p' },
		{ "syslog", no_argument, NULL, 'y' },
		{ "delay", required_argument, NULL, 'd' },
		{ "state", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 }
	};
	struct monitor m = { 0 };
	struct timespec delay = { .tv_sec = 60 };
	struct sigaction sa = { .sa_handler = on_signal };
	bool oneshot = false;
	int c, ret;

	while ((c = getopt_long(argc, argv, "1p:yd:s:", longopts, NULL)) != -1) {
		switch (c) {
		case '1':
			oneshot = true;
			break;
		case 'p':
			m.program = optarg;
			break;
		case 'y':
			m.use_syslog = true;
			break;
		case 'd':
			if (parse_delay(optarg, &delay))
				return 1;
			break;
		case 's':
			m.state_file = optarg;
			break;
		default:
			usage_unknown_option(cmd, argv);
		}
	}
	if (m.program && access(m.program, X_OK)) {
		error("cannot run %s: %m", m.program);
		return 1;
	}
	if (!m.program)
		m.use_syslog = true;
	if (m.use_syslog)
		openlog("mfs-monitor", LOG_PID, LOG_DAEMON);
	if (m.state_file) {
		int err = load_state(&m);

		if (err) {
			error("cannot read %s: %s", m.state_file, strerror(-err));
			return 1;
		}
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	do {
		ret = check_all(&m, argv + optind, argc - optind, oneshot);
		if (oneshot)
			break;
		nanosleep(&delay, NULL);
	} while (!stop);
	free(m.seen);
	return oneshot ? ret : 0;
}
DEFINE_SIMPLE_COMMAND(monitor, "monitor");
