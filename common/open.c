/* Finding filesystem members and opening a filesystem on behalf of a command. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <fcntl.h>
#include <unistd.h>
#include <dirent.h>
#include <signal.h>
#include <poll.h>
#include <time.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <uuid/uuid.h>
#include "common/open.h"
#include "common/messages.h"
#include "common/device-scan.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/block/io.h"
#include "kernel-shared/ops/open.h"
#include "kernel-shared/format/ioctl.h"

static const char *registry_path(void)
{
	const char *p = getenv("MFS_REGISTRY");

	return p && *p ? p : "/run/mfs/devices";
}

/* Read the registry's lines; the caller frees. */
static int registry_read(char ***out, int *nout)
{
	FILE *f = fopen(registry_path(), "r");
	char line[PATH_MAX + 2];
	char **list = NULL;
	int n = 0;

	*out = NULL;
	*nout = 0;
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (fgets(line, sizeof(line), f)) {
		char **p;

		line[strcspn(line, "\n")] = 0;
		if (!line[0])
			continue;
		p = realloc(list, (n + 1) * sizeof(*list));
		if (!p)
			break;
		list = p;
		list[n] = strdup(line);
		if (list[n])
			n++;
	}
	fclose(f);
	*out = list;
	*nout = n;
	return 0;
}

static int registry_write(char **list, int n)
{
	const char *path = registry_path();
	char tmp[PATH_MAX];
	char *slash;
	FILE *f;
	int i;

	snprintf(tmp, sizeof(tmp), "%s", path);
	slash = strrchr(tmp, '/');
	if (slash && slash != tmp) {
		*slash = 0;
		mkdir(tmp, 0755);
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	for (i = 0; i < n; i++)
		if (list[i])
			fprintf(f, "%s\n", list[i]);
	if (fclose(f) || rename(tmp, path)) {
		unlink(tmp);
		return -errno;
	}
	return 0;
}

static void free_list(char **list, int n)
{
	int i;

	for (i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

int mfs_registry_add(const char *path)
{
	char real[PATH_MAX];
	char **list, **p;
	int n, i, ret;

	if (!realpath(path, real))
		return -errno;
	ret = registry_read(&list, &n);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		if (strcmp(list[i], real) == 0) {
			free_list(list, n);
			return 0;
		}
	}
	p = realloc(list, (n + 1) * sizeof(*list));
	if (!p) {
		free_list(list, n);
		return -ENOMEM;
	}
	list = p;
	list[n++] = strdup(real);
	ret = registry_write(list, n);
	free_list(list, n);
	return ret;
}

int mfs_registry_forget(const char *path)
{
	char real[PATH_MAX];
	char **list;
	int n, i, ret;

	if (path && !realpath(path, real))
		snprintf(real, sizeof(real), "%s", path);
	ret = registry_read(&list, &n);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		struct mfs_super_block sb;
		bool drop = path ? strcmp(list[i], real) == 0 : mfs_probe_super(list[i], &sb) != 0;

		if (drop) {
			free(list[i]);
			list[i] = NULL;
		}
	}
	ret = registry_write(list, n);
	free_list(list, n);
	return ret;
}

int mfs_probe_super(const char *path, struct mfs_super_block *sb)
{
	struct mfs_io_dev *io;
	int ret = mfs_io_open(path, false, false, &io);

	if (ret)
		return ret;
	ret = mfs_read_super(io, sb, NULL);
	mfs_io_close(io);
	return ret;
}

bool mfs_same_path(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];

	return realpath(a, ra) && realpath(b, rb) && !strcmp(ra, rb);
}

static int scan_add(struct mfs_scan *scan, const char *path)
{
	struct mfs_super_block sb;
	char real[PATH_MAX];
	void *p;
	int i;

	if (!realpath(path, real))
		return 0;
	for (i = 0; i < scan->nr; i++) {
		char other[PATH_MAX];

		if (realpath(scan->devs[i].path, other) && strcmp(other, real) == 0)
			return 0;
	}
	if (mfs_probe_super(path, &sb))
		return 0;
	p = realloc(scan->devs, (scan->nr + 1) * sizeof(*scan->devs));
	if (!p)
		return -ENOMEM;
	scan->devs = p;
	/* by the canonical name, as filesystem show lists it */
	scan->devs[scan->nr].path = strdup(real);
	if (!scan->devs[scan->nr].path)
		return -ENOMEM;
	memcpy(&scan->devs[scan->nr].sb, &sb, sizeof(sb));
	scan->nr++;
	return 0;
}

int mfs_scan_all(const char * const *extra, int nextra, struct mfs_scan *scan)
{
	char **list;
	int n, i, ret;

	memset(scan, 0, sizeof(*scan));
	for (i = 0; i < nextra; i++) {
		ret = scan_add(scan, extra[i]);
		if (ret)
			return ret;
	}
	if (registry_read(&list, &n) == 0) {
		for (i = 0; i < n; i++)
			scan_add(scan, list[i]);
		free_list(list, n);
	}
	if (mfs_scan_block_devices(&list, &n) == 0) {
		for (i = 0; i < n; i++)
			scan_add(scan, list[i]);
		mfs_free_paths(list, n);
	}
	return 0;
}

void mfs_scan_free(struct mfs_scan *scan)
{
	int i;

	for (i = 0; i < scan->nr; i++)
		free(scan->devs[i].path);
	free(scan->devs);
	memset(scan, 0, sizeof(*scan));
}

/* The engine's messages while a command has the filesystem open. */
void mfs_log_to_stderr(void *arg, const char *msg)
{
	(void)arg;
	warning("%s", msg);
}

static void explain_open_error(const char *path, int ret, const struct mfs_open_ctl *ctl)
{
	u64 missing_devid = ctl ? ctl->missing_devid : 0;

	if (ctl && ctl->detail[0]) {
		error("%s", ctl->detail);
		return;
	}
	switch (ret) {
	case -ENOENT:
		error("not a valid mfs filesystem: %s", path);
		break;
	case -EBUSY:
		error("%s is mounted or in use by another program", path);
		break;
	case -ENODEV:
		error("device %llu is missing; found the other members but not this one",
		      (unsigned long long)missing_devid);
		error("name it with -o device=PATH (or 'mfs device scan PATH'), or use -o degraded");
		if (ctl && ctl->note[0])
			error("%s", ctl->note);
		break;
	case -EUCLEAN:
		error("filesystem on %s is corrupt and cannot be opened; run 'mfs check' for details",
		      path);
		break;
	case -EOPNOTSUPP:
		error("filesystem on %s uses features this version does not support", path);
		break;
	case -ELIBACC:
		error("filesystem on %s uses a checksum (sha256 or blake2) that needs OpenSSL's libcrypto (libcrypto.so.3), which cannot be loaded",
		      path);
		break;
	default:
		error("cannot open filesystem on %s: %s", path, strerror(-ret));
	}
}

/* Whether process pid has the file st (stat of path) open. */
static bool holds_file(const char *pid, const struct stat *st)
{
	char dir[300], fdpath[600];
	struct dirent *d;
	bool found = false;
	DIR *fds;

	snprintf(dir, sizeof(dir), "/proc/%s/fd", pid);
	fds = opendir(dir);
	if (!fds)
		return false;
	while (!found && (d = readdir(fds))) {
		struct statx fst;
		dev_t rdev, dev;

		snprintf(fdpath, sizeof(fdpath), "%s/%s", dir, d->d_name);
		/*
		 * The attributes the kernel has at hand: a file on a FUSE
		 * mount whose server is stopped would never answer a stat.
		 */
		if (d->d_name[0] == '.' ||
		    statx(AT_FDCWD, fdpath, AT_STATX_DONT_SYNC, STATX_TYPE | STATX_INO, &fst))
			continue;
		rdev = makedev(fst.stx_rdev_major, fst.stx_rdev_minor);
		dev = makedev(fst.stx_dev_major, fst.stx_dev_minor);
		found = S_ISBLK(st->st_mode) ?
			S_ISBLK(fst.stx_mode) && rdev == st->st_rdev :
			dev == st->st_dev && fst.stx_ino == st->st_ino;
	}
	closedir(fds);
	return found;
}

/* The state letter of process pid (R, S, D, T, Z...), 0 when it is gone. */
static char proc_state(const char *pid)
{
	char path[300], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* "pid (comm) state ...": comm may hold anything, the state follows its last ')' */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* Whether process pid runs yet: not exited (a zombie waiting for its parent). */
static bool alive(const char *pid)
{
	char state = proc_state(pid);

	return state && state != 'Z' && state != 'X';
}

bool mfs_pid_stopped(pid_t pid)
{
	char name[32], state;

	snprintf(name, sizeof(name), "%d", (int)pid);
	state = proc_state(name);
	return state == 'T' || state == 't';
}

/* The first live process that match() accepts; 0: none. */
static pid_t find_process(bool (*match)(const char *pid, const void *arg), const void *arg)
{
	struct dirent *d;
	pid_t pid = 0;
	DIR *proc = opendir("/proc");

	if (!proc)
		return 0;
	while (!pid && (d = readdir(proc))) {
		if (d->d_name[0] < '1' || d->d_name[0] > '9')
			continue;
		if (match(d->d_name, arg) && alive(d->d_name))
			pid = atoi(d->d_name);
	}
	closedir(proc);
	return pid;
}

/* What an unmounting server is looked for by: the file it holds, or none (any). */
static bool is_unmounting_holder(const char *pid, const void *arg)
{
	const struct stat *st = arg;
	char comm_path[300], comm[32] = "";
	FILE *f;

	snprintf(comm_path, sizeof(comm_path), "/proc/%s/comm", pid);
	f = fopen(comm_path, "re");
	if (!f)
		return false;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = 0;
	fclose(f);
	comm[strcspn(comm, "\n")] = 0;
	return strcmp(comm, MFS_SERVER_UNMOUNTING_NAME) == 0 && (!st || holds_file(pid, st));
}

/* The pid of a server that lost its mount and holds path, or any (path NULL); 0: none. */
static pid_t unmounting_holder(const char *path)
{
	struct stat st;

	if (path && stat(path, &st))
		return 0;
	return find_process(is_unmounting_holder, path ? &st : NULL);
}

/*
 * The descriptor of /dev/fuse in process pid, judged by the fd links' text
 * alone: a stat would reach into whatever the process has open, a hung
 * network mount or a stopped FUSE server's files among them. -1: none.
 */
static int dev_fuse_fd(const char *pid)
{
	char dir[300], fdpath[600], link[64];
	struct dirent *d;
	int fd = -1;
	DIR *fds;
	ssize_t n;

	snprintf(dir, sizeof(dir), "/proc/%s/fd", pid);
	fds = opendir(dir);
	if (!fds)
		return -1;
	while (fd < 0 && (d = readdir(fds))) {
		snprintf(fdpath, sizeof(fdpath), "%s/%s", dir, d->d_name);
		n = readlink(fdpath, link, sizeof(link) - 1);
		if (n > 0) {
			link[n] = 0;
			if (strcmp(link, "/dev/fuse") == 0)
				fd = atoi(d->d_name);
		}
	}
	closedir(fds);
	return fd;
}

int mfs_dev_fuse_fd(pid_t pid)
{
	char name[32];

	snprintf(name, sizeof(name), "%d", (int)pid);
	return dev_fuse_fd(name);
}

static bool is_fuse_holder(const char *pid, const void *arg)
{
	return dev_fuse_fd(pid) >= 0 && holds_file(pid, arg);
}

pid_t mfs_fuse_server_holding(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return 0;
	return find_process(is_fuse_holder, &st);
}

int mfs_wait_pid_exit(pid_t pid, int timeout_ms)
{
	struct pollfd p = { .events = POLLIN };
	int waited, r;

	p.fd = syscall(SYS_pidfd_open, pid, 0);
	if (p.fd < 0) {
		if (errno == ESRCH)
			return 1;
		/* no pidfd (an old kernel): its existence polled */
		for (waited = 0; kill(pid, 0) == 0; waited += 20) {
			if (timeout_ms >= 0 && waited >= timeout_ms)
				return 0;
			usleep(20000);
		}
		return 1;
	}
	while ((r = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR)
		;
	close(p.fd);
	return r > 0;
}

#define UNMOUNTING_WAIT_MS	120000	/* a last commit on a slow disk; a hung server is given up on */

/*
 * path is busy (NULL: any device): when the holder is the server of a
 * mount that is gone (a plain umount(8) returns before the server has
 * written its last commit and exited), wait for it to exit, saying so
 * after a second. Returns whether it did - the open is worth trying again.
 */
static bool wait_unmounting_server(const char *path)
{
	pid_t pid = unmounting_holder(path);

	if (!pid)
		return false;
	if (mfs_wait_pid_exit(pid, 1000))
		return true;
	fprintf(stderr, "waiting for the server of the previous mount (pid %d) to finish writing and let go of %s\n",
		(int)pid, path ? path : "its devices");
	if (mfs_wait_pid_exit(pid, UNMOUNTING_WAIT_MS - 1000))
		return true;
	warning("the server of the previous mount (pid %d) still holds %s", (int)pid,
		path ? path : "its devices");
	return false;
}

void mfs_wait_unmounting_servers(void)
{
	int n;

	/* each one waited for, up to the bound (a server that hangs ends the wait) */
	for (n = 0; n < 16 && wait_unmounting_server(NULL); n++)
		;
}

static int open_for_cmd(const char * const *paths, int npaths, unsigned int flags,
			int mirror, const struct mfs_open_ctl *hooks, struct mfs_fs_info **out)
{
	struct mfs_super_block sb;
	struct mfs_open_ctl ctl = { 0 }, first;
	struct mfs_scan scan;
	const char **cand;
	int ncand = 0, i, ret;

	if (access(paths[0], F_OK)) {
		error("cannot access '%s': %m", paths[0]);
		return -errno;
	}
	if (mirror >= 0) {
		struct mfs_io_dev *io;

		ret = mfs_io_open(paths[0], false, false, &io);
		if (!ret) {
			ret = mfs_read_super_copy(io, mirror, &sb);
			mfs_io_close(io);
		}
	} else {
		ret = mfs_probe_super(paths[0], &sb);
	}
	if (ret) {
		if (ret == -EUCLEAN && mirror >= 0)
			error("superblock copy %d at %llu on %s is damaged", mirror,
			      (unsigned long long)mfs_sb_offset(mirror), paths[0]);
		else if (ret == -ENOENT && mirror >= 0)
			error("no mfs superblock copy %d at %llu on %s", mirror,
			      (unsigned long long)mfs_sb_offset(mirror), paths[0]);
		else if (ret == -EUCLEAN)
			error("no valid superblock on %s (all copies are damaged)", paths[0]);
		else
			explain_open_error(paths[0], ret, NULL);
		return ret;
	}
	if (le64_to_cpu(sb.flags) & MFS_SUPER_FLAG_CHANGING) {
		error("the filesystem on %s was never finished: mkfs.mfs failed or was interrupted while filling it; run mkfs.mfs again",
		      paths[0]);
		return -EUCLEAN;
	}
	ret = mfs_scan_all(paths, npaths, &scan);
	if (ret) {
		error("scanning devices: %s", strerror(-ret));
		return ret;
	}
	cand = calloc(scan.nr + npaths + 1, sizeof(*cand));
	if (!cand) {
		mfs_scan_free(&scan);
		return -ENOMEM;
	}
	/*
	 * The devices named come first, the first leading (its superblock
	 * copy may be forced); those found by scanning follow and never
	 * outrank them.
	 */
	for (i = 0; i < npaths; i++)
		cand[ncand++] = paths[i];
	for (i = 0; i < scan.nr; i++) {
		const struct mfs_super_block *s = &scan.devs[i].sb;
		int j;

		/* a member still being changed to this fsid goes too: the open refuses it */
		if (memcmp(s->fsid, sb.fsid, MFS_FSID_SIZE) &&
		    (!(le64_to_cpu(s->flags) & MFS_SUPER_FLAG_CHANGING_FSID) ||
		     memcmp(s->pending_fsid, sb.fsid, MFS_FSID_SIZE)))
			continue;
		for (j = 0; j < npaths; j++)
			if (mfs_same_path(scan.devs[i].path, paths[j]))
				break;
		if (j == npaths)
			cand[ncand++] = scan.devs[i].path;
	}
	ctl.paths = cand;
	ctl.npaths = ncand;
	ctl.nnamed = npaths;
	ctl.flags = flags;
	ctl.fsid = sb.fsid;
	ctl.sb_mirror = mirror;
	ctl.log = mfs_log_to_stderr;
	if (hooks) {
		ctl.load_chunks = hooks->load_chunks;
		ctl.trees_loaded = hooks->trees_loaded;
		ctl.hook_arg = hooks->hook_arg;
	}
	first = ctl;
	ret = mfs_open_fs(&ctl, out);
	if (ret == -EBUSY && ctl.failed_path && wait_unmounting_server(ctl.failed_path)) {
		ctl = first;
		ret = mfs_open_fs(&ctl, out);
	}
	if (ret)
		explain_open_error(ctl.failed_path ? ctl.failed_path : paths[0], ret, &ctl);
	else if (ctl.note[0])
		warning("%s", ctl.note);
	free(cand);
	mfs_scan_free(&scan);
	return ret;
}

int mfs_open_for_cmd_mirror(const char * const *paths, int npaths, unsigned int flags,
			    int mirror, struct mfs_fs_info **out)
{
	return open_for_cmd(paths, npaths, flags, mirror, NULL, out);
}

int mfs_open_for_cmd_hooks(const char * const *paths, int npaths, unsigned int flags,
			   const struct mfs_open_ctl *hooks, struct mfs_fs_info **out)
{
	return open_for_cmd(paths, npaths, flags, -1, hooks, out);
}

int mfs_open_for_cmd(const char * const *paths, int npaths, unsigned int flags,
		     struct mfs_fs_info **out)
{
	return mfs_open_for_cmd_mirror(paths, npaths, flags, -1, out);
}

bool mfs_members_present(const char * const *paths, int npaths,
			 const struct mfs_super_block *sb)
{
	struct mfs_scan scan;
	struct mfs_open_ctl ctl = { 0 };
	struct mfs_fs_info *fs;
	const char **same;
	int i, n = 0, ret;

	if (mfs_scan_all(paths, npaths, &scan))
		return false;
	same = calloc(scan.nr, sizeof(*same));
	for (i = 0; same && i < scan.nr; i++)
		if (!memcmp(scan.devs[i].sb.fsid, sb->fsid, MFS_FSID_SIZE))
			same[n++] = scan.devs[i].path;
	ctl.paths = same;
	ctl.npaths = n;
	ctl.nnamed = npaths < n ? npaths : n;	/* the scan lists the paths named first */
	ctl.flags = MFS_OPEN_NO_EXCL;
	ctl.fsid = sb->fsid;
	ctl.sb_mirror = -1;
	ret = same ? mfs_open_fs(&ctl, &fs) : -ENOMEM;
	if (!ret)
		mfs_free_fs_info(fs);
	free(same);
	mfs_scan_free(&scan);
	return ret == 0;
}
