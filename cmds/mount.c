/* mfs mount, mount.mfs (mount -t mfs, /etc/fstab), mfs umount and umount.fuse.mfs (umount(8)). */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include "cmds/commands.h"
#include "common/device-scan.h"
#include "common/help.h"
#include "common/messages.h"
#include "common/open.h"
#include "common/target.h"
#include "common/utab.h"
#include "common/units.h"
#include "fuse/server.h"
#include "kernel-shared/format/ioctl.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/volumes/volumes.h"

static const char * const cmd_mount_usage[] = {
	"mfs mount [options] <device> [<device>...] <mountpoint>",
	"",
	"Mount an mfs filesystem (starts its FUSE server).",
	"Other members are found by scanning block devices and registered images;",
	"image files and extra devices can also be named with -o device=PATH.",
	"",
	OPTLINE("-o OPTIONS", "comma separated: device=PATH, ro, rw, commit=SECONDS (default 30), compress=zlib[:LEVEL], compress=no, noatime, relatime, cache_size=SIZE, nodev, nosuid, noexec, skip_balance (leave an interrupted balance paused, and chunks written reduced while a member was missing as they are), skip_scrub (leave a scrub an unmount or a crash interrupted paused), read_policy=least-busy|devid:N (which copy reads take), fail_threshold=N (a device with more than N I/O and checksum errors in one mount is failing: nothing new is allocated on it; default 100, 0 never), degraded (mount with members missing: read-write while every chunk is readable), x-mfs.device-timeout=SECONDS (wait up to that long for missing members to appear, then mount degraded if degraded is given, else refuse naming them; default 0, no wait)"),
	OPTLINE("-f|--foreground", "keep the server in the foreground"),
	OPTLINE("-d|--debug", "foreground, with FUSE request tracing"),
	NULL
};

struct mount_args {
	struct mfs_mount_opts opts;
	const char **devices;
	int ndevices;
	int npositional;	/* devices[0..npositional): named on the command line */
	int compress;
	u64 read_devid;		/* read_policy=devid:N */
	u64 fail_threshold;	/* fail_threshold=N */
	bool degraded;
	unsigned int device_timeout;	/* x-mfs.device-timeout=SECONDS */
};

/*
 * A member to open: those named on the command line first, in their order
 * (the first is the mount's source, as the mount table shows it), then
 * those of device= options.
 */
static int add_device(struct mount_args *m, const char *path, bool positional)
{
	const char **p = realloc(m->devices, (m->ndevices + 1) * sizeof(*p));
	int at = positional ? m->npositional++ : m->ndevices;

	if (!p)
		return -ENOMEM;
	m->devices = p;
	memmove(&m->devices[at + 1], &m->devices[at], (m->ndevices - at) * sizeof(*p));
	m->devices[at] = path;
	m->ndevices++;
	return 0;
}

/* Options mount(8) may pass that mean nothing to us. */
static bool generic_option(const char *o)
{
	static const char * const ignored[] = {
		"defaults", "auto", "noauto", "user", "nouser", "users",
		"_netdev", "nofail", "async", "sync",
		"strictatime", "lazytime", "nolazytime", "loud", "silent",
	};
	size_t i;

	if (!strncmp(o, "x-", 2) || !strncmp(o, "comment=", 8))
		return true;
	for (i = 0; i < ARRAY_SIZE(ignored); i++)
		if (!strcmp(o, ignored[i]))
			return true;
	return false;
}

/* x-mfs.device-timeout=SECONDS: 0 (no wait) to a day */
static int parse_device_timeout(const char *value, unsigned int *out)
{
	char *end;
	long v = strtol(value, &end, 10);

	if (!*value || *end || v < 0 || v > 86400) {
		error("invalid x-mfs.device-timeout '%s' (0..86400 seconds)", value);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_options(struct mount_args *m, char *list)
{
	char *tok, *save = NULL;

	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strncmp(tok, "device=", 7)) {
			if (add_device(m, tok + 7, false))
				return -1;
		} else if (!strcmp(tok, "ro")) {
			m->opts.ro = true;
		} else if (!strcmp(tok, "rw")) {
			m->opts.ro = false;
		} else if (!strncmp(tok, "commit=", 7)) {
			char *end;
			long v = strtol(tok + 7, &end, 10);

			if (*end || v < 1 || v > 86400) {
				error("invalid commit interval '%s' (1..86400 seconds)", tok + 7);
				return -1;
			}
			m->opts.commit_interval = v;
		} else if (!strcmp(tok, "compress") || !strcmp(tok, "compress=zlib")) {
			m->compress = 3;
		} else if (!strncmp(tok, "compress=zlib:", 14)) {
			char *end;
			long v = strtol(tok + 14, &end, 10);

			if (*end || v < 1 || v > 9) {
				error("invalid zlib level '%s' (1..9)", tok + 14);
				return -1;
			}
			m->compress = v;
		} else if (!strcmp(tok, "compress=no") || !strcmp(tok, "compress=none")) {
			m->compress = 0;
		} else if (!strncmp(tok, "compress=", 9)) {
			error("unsupported compression '%s' (zlib[:LEVEL] or no)", tok + 9);
			return -1;
		} else if (!strcmp(tok, "noatime")) {
			m->opts.noatime = true;
		} else if (!strcmp(tok, "relatime") || !strcmp(tok, "atime")) {
			m->opts.noatime = false;
		} else if (!strncmp(tok, "cache_size=", 11)) {
			if (parse_size(tok + 11, &m->opts.cache_size) ||
			    m->opts.cache_size < 16 * SZ_1M) {
				error("invalid cache_size '%s' (at least 16m)", tok + 11);
				return -1;
			}
		} else if (!strcmp(tok, "read_policy=least-busy")) {
			m->read_devid = 0;
		} else if (!strncmp(tok, "read_policy=devid:", 18)) {
			char *end;
			unsigned long long v = strtoull(tok + 18, &end, 10);

			if (*end || !v) {
				error("invalid read_policy '%s' (least-busy or devid:N)", tok + 12);
				return -1;
			}
			m->read_devid = v;
		} else if (!strncmp(tok, "read_policy=", 12)) {
			error("unknown read_policy '%s' (least-busy or devid:N)", tok + 12);
			return -1;
		} else if (!strncmp(tok, "fail_threshold=", 15)) {
			char *end;
			unsigned long long v = strtoull(tok + 15, &end, 10);

			if (!tok[15] || *end || tok[15] == '-') {
				error("invalid fail_threshold '%s' (a number of errors; 0: never)",
				      tok + 15);
				return -1;
			}
			m->fail_threshold = v;
		} else if (!strcmp(tok, "skip_balance")) {
			m->opts.skip_balance = true;
		} else if (!strcmp(tok, "skip_scrub")) {
			m->opts.skip_scrub = true;
		} else if (!strcmp(tok, "dev") || !strcmp(tok, "nodev")) {
			m->opts.nodev = tok[0] == 'n';
		} else if (!strcmp(tok, "suid") || !strcmp(tok, "nosuid")) {
			m->opts.nosuid = tok[0] == 'n';
		} else if (!strcmp(tok, "exec") || !strcmp(tok, "noexec")) {
			m->opts.noexec = tok[0] == 'n';
		} else if (!strcmp(tok, "degraded")) {
			m->degraded = true;
		} else if (!strncmp(tok, "x-mfs.device-timeout=", 21)) {
			if (parse_device_timeout(tok + 21, &m->device_timeout))
				return -1;
		} else if (!generic_option(tok)) {
			error("unknown mount option '%s'", tok);
			return -1;
		}
	}
	return 0;
}

/*
 * One mounted instance per device: the engine locks image files shared
 * when opened read-only, so a read-only mount takes them exclusively, as a
 * writable one does (block devices are O_EXCL either way).
 */
static int lock_members_exclusive(struct mfs_fs_info *fs)
{
	int i;

	for (i = 0; i < fs->nr_devices; i++) {
		struct mfs_device *dev = fs->devices[i];

		if (!dev->io || dev->io->is_blockdev)
			continue;
		if (flock(dev->io->fd, LOCK_EX | LOCK_NB) < 0) {
			error("%s is mounted or in use by another program", dev->path);
			return -1;
		}
	}
	return 0;
}

/*
 * x-mfs.device-timeout: until every member of the filesystem is present
 * (udev, a loop device being set up, an image registered) or the timeout
 * passes. Then the open decides: whole, degraded if asked, or refused
 * naming the missing member. Returns whether all are there.
 */
static bool wait_for_members(const struct mount_args *m)
{
	struct mfs_super_block sb;
	struct timespec start, now;
	bool notified = false;

	if (mfs_probe_super(m->devices[0], &sb))
		return false;	/* the open says why */
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		if (mfs_members_present(m->devices, m->ndevices, &sb))
			return true;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 >=
		    m->device_timeout)
			break;
		if (!notified)
			fprintf(stderr, "waiting up to %u s for the missing members of %s\n",
				m->device_timeout, m->devices[0]);
		notified = true;
		usleep(100000);
	}
	fprintf(stderr, "%s: members still missing after %u s; %s\n", m->devices[0],
		m->device_timeout, m->degraded ? "mounting degraded" : "not mounting (no 'degraded')");
	return false;
}

/* Open, then serve; the daemon keeps the device locks until it exits. */
static int do_mount(struct mount_args *m)
{
	struct mfs_fs_info *fs;
	struct stat st;
	unsigned int flags = 0;
	char real[PATH_MAX], mnt_abs[PATH_MAX];
	int i;

	/*
	 * The daemon keeps none of its caller's descriptors past stderr: one
	 * that is a pipe (x=$(mfs mount ... 3>&1), bats's fd 3) kept whoever
	 * reads it to its end waiting for as long as the mount lasted.
	 * Nothing of ours is open yet.
	 */
	close_range(3, ~0U, 0);

	if (!m->ndevices) {
		error("no device given");
		return 1;
	}
	if (stat(m->opts.mountpoint, &st) || !S_ISDIR(st.st_mode)) {
		error("mount point %s is not a directory", m->opts.mountpoint);
		return 1;
	}
	/*
	 * The daemon works from /: a relative mount point would not be found
	 * when it unmounts at SIGTERM (the mount was left behind, dead).
	 */
	if (realpath(m->opts.mountpoint, mnt_abs))
		m->opts.mountpoint = mnt_abs;
	for (i = 0; i < m->ndevices; i++) {
		char mnt[PATH_MAX];

		if (mfs_find_mount_of_member(m->devices[i], mnt, sizeof(mnt))) {
			error("%s is already mounted on %s (a filesystem can be mounted once)",
			      m->devices[i], mnt);
			return 1;
		}
	}
	if (m->device_timeout)
		wait_for_members(m);
	if (!m->opts.ro)
		flags |= MFS_OPEN_WRITABLE;
	if (m->degraded)
		flags |= MFS_OPEN_DEGRADED;
	if (mfs_open_for_cmd(m->devices, m->ndevices, flags, &fs))
		return 1;
	if (m->opts.ro && lock_members_exclusive(fs)) {
		mfs_free_fs_info(fs);
		return 1;
	}
	if (m->read_devid && !mfs_find_device(fs, m->read_devid)) {
		error("read_policy=devid:%llu: no such device in the filesystem",
		      (unsigned long long)m->read_devid);
		mfs_free_fs_info(fs);
		return 1;
	}
	fs->read_devid = m->read_devid;
	mfs_set_fail_threshold(fs, m->fail_threshold);
	fs->compress = m->compress;
	if (m->compress)
		fs->incompat_flags |= MFS_FEATURE_INCOMPAT_COMPRESS_ZLIB;
	if (!realpath(m->devices[0], real))
		snprintf(real, sizeof(real), "%s", m->devices[0]);
	m->opts.fsname = real;
	return mfs_fuse_serve(fs, &m->opts);
}

static void mount_defaults(struct mount_args *m)
{
	memset(m, 0, sizeof(*m));
	m->opts.commit_interval = 30;
	m->fail_threshold = MFS_DEFAULT_FAIL_THRESHOLD;
}

static int cmd_mount(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "debug", no_argument, NULL, 'd' },
		{ NULL, 0, NULL, 0 }
	};
	struct mount_args m;
	int c, i, ret;

	mount_defaults(&m);
	while ((c = getopt_long(argc, argv, "o:fd", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (parse_options(&m, optarg))
				return 1;
			break;
		case 'f':
			m.opts.foreground = true;
			break;
		case 'd':
			m.opts.debug = true;
			break;
		default:
			usage_unknown_option(cmd, argv);
		}
	}
	if (check_argc_min(argc - optind, 2))
		return 1;
	for (i = optind; i < argc - 1; i++)
		if (add_device(&m, argv[i], true))
			return 1;
	m.opts.mountpoint = argv[argc - 1];
	ret = do_mount(&m);
	free(m.devices);
	return ret;
}
DEFINE_SIMPLE_COMMAND(mount, "mount");

static const char * const cmd_mount_helper_usage[] = {
	"mount.mfs <device> <mountpoint> [-sfnv] [-N <namespace>] [-o <options>] [-t <type>]",
	"",
	"Mount an mfs filesystem as mount(8) runs it for 'mount -t mfs' and",
	"/etc/fstab: 'mfs mount' with mount's helper interface. Exit 0 on",
	"success, 32 when the mount failed, 1 on a usage error.",
	"",
	OPTLINE("-o OPTIONS", "mount options, those of 'mfs mount -o' (see mfs(5))"),
	OPTLINE("-s", "sloppy: accepted and ignored"),
	OPTLINE("-f", "fake: check the arguments and options, mount nothing"),
	OPTLINE("-n", "do not write /etc/mtab: accepted and ignored"),
	OPTLINE("-v", "verbose: accepted and ignored"),
	OPTLINE("-N NAMESPACE", "mount namespace: accepted and ignored"),
	OPTLINE("-t TYPE", "filesystem type: accepted and ignored"),
	NULL
};

/* Not in a command group: mount(8) runs it by name. */
static const struct cmd_struct mount_helper = {
	.token = "mount.mfs",
	.usagestr = cmd_mount_helper_usage,
};

/* mount(8) runs: mount.mfs <device> <dir> [-sfnv] [-N ns] [-o options] [-t type] */
int cmd_mount_helper_main(int argc, char **argv)
{
	struct mount_args m;
	bool fake = false;
	int c, ret;

	if (mfs_help_requested(argc, argv))
		usage(&mount_helper, 0);
	mount_defaults(&m);
	opterr = 0;
	while ((c = getopt(argc, argv, "o:sfnvN:t:")) != -1) {
		if (c == 'o' && parse_options(&m, optarg))
			return 32;
		/* mount -f passes it on: everything but the mount itself */
		if (c == 'f')
			fake = true;
		if (c == '?') {
			error("mount.mfs: unknown option -%c", optopt);
			return 1;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "usage: mount.mfs <device> <mountpoint> [-o options]\n");
		return 1;
	}
	if (fake)
		return 0;
	if (add_device(&m, argv[optind], true))
		return 1;
	m.opts.mountpoint = argv[optind + 1];
	ret = do_mount(&m);
	free(m.devices);
	return ret ? 32 : 0;
}

/* ---------------- umount ---------------- */

static const char * const cmd_umount_usage[] = {
	"mfs umount <mountpoint>",
	"",
	"Unmount and wait until the server has written everything and exited,",
	"so the devices can be checked or mounted again right away.",
	NULL
};

/*
 * Everything written through the mount onto stable storage: the kernel's
 * cached pages go to the server (syncfs), then the server commits
 * (MFS_IOC_SYNC). 0 or -errno. A plain sync(1) does only the first half:
 * Linux sends FUSE servers no syncfs request (only virtiofs gets one), so
 * its commit would wait for the periodic one.
 */
int mfs_sync_mount(const char *mnt)
{
	int fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	/*
	 * A page that failed to go out (ENOSPC, say - of a file deleted
	 * since, even) makes syncfs fail: that error belongs to the file's
	 * writers, who get it from fsync and close; here only the commit
	 * counts.
	 */
	(void)!syncfs(fd);
	if (ioctl(fd, MFS_IOC_SYNC) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

struct mfs_mount_at {
	const char *want;
	char *source;
	size_t size;
	dev_t dev;
	bool found;
};

static int match_mfs_mount(const struct mfs_mountinfo *m, void *arg)
{
	struct mfs_mount_at *at = arg;

	if (strcmp(m->fstype, "fuse.mfs") || strcmp(m->mnt, at->want))
		return 0;
	/* the last one wins: mounts over it come later */
	at->found = true;
	at->dev = m->dev;
	if (at->source)
		snprintf(at->source, at->size, "%s", m->source);
	return 0;
}

/*
 * The mountinfo entry of the mfs mount at exactly @want (the last one, on
 * top of any it hides): its source into @source if not NULL, its device
 * number into @dev if not NULL.
 */
static bool find_mfs_mount(const char *want, char *source, size_t size, dev_t *dev)
{
	struct mfs_mount_at at = { .want = want, .source = source, .size = size };

	mfs_mountinfo_walk(NULL, match_mfs_mount, &at);
	if (at.found && dev)
		*dev = at.dev;
	return at.found;
}

/*
 * Whether @mnt is the mount point of an mfs mount, live or with its daemon
 * gone; its source (the device it was mounted from) into @source if not NULL.
 * A path as the mount table has it is taken as it is, without touching the
 * mount (its server may be stopped); any other is resolved first.
 */
static bool is_mfs_mount_point(const char *mnt, char *source, size_t size)
{
	char real[PATH_MAX];

	if (find_mfs_mount(mnt, source, size, NULL))
		return true;
	return realpath(mnt, real) && find_mfs_mount(real, source, size, NULL);
}

/* After an unmount of @mnt: its utab entry goes (the path resolved now, with nothing on it). */
static void utab_forget(const char *mnt)
{
	char real[PATH_MAX];

	mfs_utab_remove(realpath(mnt, real) ? real : mnt);
}

/*
 * Until the server holding @dev has let go of it (it exits after the
 * unmount): its exclusive lock or O_EXCL open is free. For when the
 * server cannot be asked its pid.
 */
static void wait_device_released(const char *dev)
{
	int i, fd;

	for (i = 0; i < 6000; i++) {
		fd = mfs_open_exclusive(dev, O_RDONLY);
		if (fd >= 0) {
			close(fd);
			return;
		}
		if (fd != -EBUSY)
			return;
		usleep(20000);
	}
	warning("the server of %s still holds it after 120 s", dev);
}

/*
 * The daemon died (killed, crashed): the kernel keeps the mount, every
 * access failing with ENOTCONN. Take it away so the devices can be mounted
 * again; what was not committed is lost, as after a power cut.
 */
static int umount_dead(const char *mnt)
{
	warning("the daemon serving %s is gone; unmounting it (changes after the last commit are lost)",
		mnt);
	if (umount2(mnt, 0) && umount2(mnt, MNT_DETACH)) {
		error("cannot unmount %s: %m", mnt);
		return 1;
	}
	utab_forget(mnt);
	return 0;
}

/* Unmount with a busy mount point tolerated for a moment; 0 or 1 (said). */
static int umount_retrying(const char *mnt)
{
	int i, ret;

	/*
	 * Busy can be fleeting: admin commands open the mount points of
	 * every mfs to find theirs. Give those a moment before giving up.
	 */
	for (i = 0; (ret = umount2(mnt, 0)) && errno == EBUSY && i < 100; i++)
		usleep(50000);
	if (ret) {
		error("cannot unmount %s: %m", mnt);
		return 1;
	}
	return 0;
}

/*
 * The server is alive but its root directory cannot be opened (an I/O
 * error reading it): it cannot be asked to commit first, but it commits
 * what it can as it exits. Unmount and wait for it to let go of the device.
 */
static int umount_unreachable(const char *mnt, const char *source, int err)
{
	warning("cannot reach the root directory of %s (%s); unmounting anyway, the server writes what it can as it exits",
		mnt, strerror(-err));
	if (umount_retrying(mnt))
		return 1;
	utab_forget(mnt);
	wait_device_released(source);
	return 0;
}

static int cmd_umount(const struct cmd_struct *cmd, int argc, char **argv)
{
	struct mfs_ioctl_fs_info *info = calloc(1, sizeof(*info));
	char source[PATH_MAX];
	const char *mnt;
	int ret, synced;

	clean_args_no_options(cmd, argc, argv);
	if (check_argc_exact(argc - optind, 1) || !info) {
		free(info);
		return 1;
	}
	mnt = argv[optind];
	ret = mfs_get_fs_info(mnt, info);
	/*
	 * A dead server: ENOTCONN, or ECONNABORTED for a request that was
	 * already queued when its connection went (umount right after a kill)
	 */
	if ((ret == -ENOTCONN || ret == -ECONNABORTED) && is_mfs_mount_point(mnt, NULL, 0)) {
		free(info);
		return umount_dead(mnt);
	}
	if (ret && is_mfs_mount_point(mnt, source, sizeof(source))) {
		free(info);
		return umount_unreachable(mnt, source, ret);
	}
	if (ret) {
		error("%s is not a mounted mfs filesystem", mnt);
		free(info);
		return 1;
	}
	/*
	 * Commit first, where its result can be told: the commit the server
	 * makes as it exits has no one to report a failure to.
	 */
	synced = mfs_sync_mount(mnt);
	if (synced == -EROFS)
		synced = 0;	/* mounted read-only: nothing to write */
	if (synced)
		error("cannot write the last changes to %s: %s; they are lost (the disk keeps the last commit)",
		      mnt, strerror(-synced));
	if (umount_retrying(mnt)) {
		free(info);
		return 1;
	}
	utab_forget(mnt);
	mfs_wait_pid_exit((pid_t)info->daemon_pid, -1);
	free(info);
	return synced ? 1 : 0;
}
DEFINE_SIMPLE_COMMAND(umount, "umount");

/* ---------------- umount.fuse.mfs ---------------- */

static const char * const cmd_umount_helper_usage[] = {
	"umount.fuse.mfs <mountpoint> [-nlfvr] [-N <namespace>] [-t <type>]",
	"",
	"Unmount an mfs filesystem as umount(8) runs it: like a kernel",
	"filesystem's unmount, it returns once the server has written its last",
	"commit and let go of the devices. Exit 0 on success, 32 when the",
	"unmount failed, 1 on a usage error.",
	"",
	OPTLINE("-l", "lazy: detach the mount now, the server finishes after its last user (no wait)"),
	OPTLINE("-f", "force: abort the connection to the server (umount2 MNT_FORCE)"),
	OPTLINE("-r", "remount read-only when the mount is busy"),
	OPTLINE("-v", "verbose: say when it is unmounted"),
	OPTLINE("-n", "do not write /etc/mtab: accepted and ignored"),
	OPTLINE("-N NAMESPACE", "the mount namespace to unmount in (a /proc/PID/ns/mnt path)"),
	OPTLINE("-t TYPE", "filesystem type: accepted and ignored"),
	NULL
};

/* Not in a command group: umount(8) runs it by name for mounts of type fuse.mfs. */
static const struct cmd_struct umount_helper = {
	.token = "umount.fuse.mfs",
	.usagestr = cmd_umount_helper_usage,
};

#define SERVER_WAIT_NOTE_MS	5000	/* a last commit that long is worth a line */
#define FUSECTL_SUPER_MAGIC	0x65735543	/* the kernel's fusectl filesystem */

static int is_mount_of_dev(const struct mfs_mountinfo *m, void *arg)
{
	return m->dev == *(const dev_t *)arg;
}

/*
 * Whether the FUSE connection of device @dev (0:NN) outlived the unmount:
 * the filesystem is mounted elsewhere too (a bind mount, a copy in another
 * mount namespace), so its server goes on. The kernel's fusectl says so
 * where it is mounted; otherwise the mount table of every mount namespace
 * a process is in.
 */
static bool still_mounted(dev_t dev)
{
	char path[300], ns[64], seen[64][64];
	int nseen = 0, i;
	struct dirent *d;
	struct statfs sf;
	bool found = false;
	DIR *proc;
	ssize_t n;

	if (!statfs("/sys/fs/fuse/connections", &sf) && sf.f_type == FUSECTL_SUPER_MAGIC) {
		snprintf(path, sizeof(path), "/sys/fs/fuse/connections/%u", minor(dev));
		return access(path, F_OK) == 0;
	}
	proc = opendir("/proc");
	while (proc && !found && (d = readdir(proc))) {
		if (d->d_name[0] < '1' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/ns/mnt", d->d_name);
		n = readlink(path, ns, sizeof(ns) - 1);
		if (n <= 0)
			continue;
		ns[n] = 0;
		for (i = 0; i < nseen && strcmp(seen[i], ns); i++)
			;
		if (i < nseen)
			continue;
		if (nseen < 64)
			snprintf(seen[nseen++], sizeof(seen[0]), "%s", ns);
		snprintf(path, sizeof(path), "/proc/%s/mountinfo", d->d_name);
		found = mfs_mountinfo_walk(path, is_mount_of_dev, &dev) == 1;
	}
	if (proc)
		closedir(proc);
	return found;
}

/*
 * Whether the FUSE connection of the mount just unmounted lives on (the
 * filesystem is mounted elsewhere too). Exactly, from a duplicate of the
 * server's /dev/fuse descriptor (@connfd): an ended connection polls as an
 * error - the kernel ends it before umount2 returns, once the last mount
 * of the filesystem is gone. Without one (no pidfd_getfd: Linux < 5.6, or
 * not allowed), from the mount tables (still_mounted).
 */
static bool connection_lives(int connfd, dev_t dev)
{
	struct pollfd p = { .fd = connfd, .events = POLLIN };

	if (connfd < 0)
		return still_mounted(dev);
	return !(poll(&p, 1, 0) >= 0 && (p.revents & (POLLERR | POLLNVAL)));
}

/*
 * Until the server @pid of the mount of @source has exited (@pidfd: its
 * pidfd, taken when it was found; -1: none). Without a bound, as a kernel
 * filesystem's unmount waits for its disks - but not for a stopped server
 * (SIGSTOP, a debugger): that one finishes when it is continued.
 */
static void wait_server_exit(pid_t pid, int pidfd, const char *source)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	int waited, r;

	for (waited = 0;; waited += 200) {
		if (pidfd >= 0) {
			r = poll(&p, 1, 200);
			if (r > 0 || (r < 0 && errno != EINTR))
				return;
		} else if (mfs_wait_pid_exit(pid, 200)) {
			return;
		}
		if (mfs_pid_stopped(pid)) {
			warning("the server of %s (pid %d) is stopped; not waiting for its last commit",
				source, (int)pid);
			return;
		}
		if (waited == SERVER_WAIT_NOTE_MS)
			fprintf(stderr, "waiting for the server of %s (pid %d) to write its last commit\n",
				source, (int)pid);
	}
}

/* Into mount namespace @path (umount -N), as umount(8) would unmount there. */
static int enter_namespace(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || setns(fd, CLONE_NEWNS)) {
		error("cannot enter mount namespace %s: %m", path);
		if (fd >= 0)
			close(fd);
		return 1;
	}
	close(fd);
	return 0;
}

/* umount(8) runs: umount.fuse.mfs <dir> [-nlfvr] [-t type] [-N ns] */
int cmd_umount_helper_main(int argc, char **argv)
{
	bool lazy = false, force = false, rdonly = false, verbose = false;
	char source[PATH_MAX] = "";
	dev_t dev = 0;
	const char *mnt;
	pid_t server = 0;
	int c, pidfd = -1, connfd = -1, ret = 0;

	if (mfs_help_requested(argc, argv))
		usage(&umount_helper, 0);
	opterr = 0;
	while ((c = getopt(argc, argv, "nlfvrN:t:")) != -1) {
		switch (c) {
		case 'l':
			lazy = true;
			break;
		case 'f':
			force = true;
			break;
		case 'r':
			rdonly = true;
			break;
		case 'v':
			verbose = true;
			break;
		case 'N':
			if (enter_namespace(optarg))
				return 32;
			break;
		case 'n':
		case 't':
			break;
		default:
			error("umount.fuse.mfs: unknown option -%c", optopt);
			return 1;
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "usage: umount.fuse.mfs <mountpoint> [-nlfvr]\n");
		return 1;
	}
	mnt = argv[optind];
	/*
	 * The server is found before the mount goes (it holds the source and
	 * /dev/fuse), without asking it anything: it may be stopped or gone.
	 * A lazy unmount waits for nothing, as the kernel's does not.
	 */
	if (!lazy && find_mfs_mount(mnt, source, sizeof(source), &dev) && source[0]) {
		server = mfs_fuse_server_holding(source);
		if (server)
			pidfd = syscall(SYS_pidfd_open, server, 0);
		/* its connection, to tell after the unmount whether it ended */
		if (pidfd >= 0 && (c = mfs_dev_fuse_fd(server)) >= 0)
			connfd = syscall(SYS_pidfd_getfd, pidfd, c, 0);
	}
	if (umount2(mnt, (lazy ? MNT_DETACH : 0) | (force ? MNT_FORCE : 0))) {
		if (errno == EBUSY && rdonly && source[0] &&
		    !mount(source, mnt, NULL, MS_REMOUNT | MS_RDONLY, NULL)) {
			warning("%s is busy; remounted read-only", mnt);
			/* umount(8) removes an entry when we return 0: the mount keeps one */
			(void)mfs_utab_add_extra(source, mnt);
			ret = 0;
		} else {
			error("cannot unmount %s: %m", mnt);
			ret = 32;
		}
		goto out;
	}
	/*
	 * The utab entry is umount(8)'s to remove, after we return: the last
	 * one for the mount point, which is this mount's (mounts on top come
	 * later). Removed here, umount(8) would take the one of a mount below.
	 */
	/* mounted elsewhere too: the server serves on */
	if (server && !connection_lives(connfd, dev))
		wait_server_exit(server, pidfd, source);
	if (verbose)
		printf("umount: %s unmounted\n", mnt);
out:
	if (connfd >= 0)
		close(connfd);
	if (pidfd >= 0)
		close(pidfd);
	return ret;
}
