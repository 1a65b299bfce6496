/* Mounted (ioctl) or unmounted (in-process) filesystems behind one interface. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <poll.h>
#include <time.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "common/target.h"
#include "common/progress.h"
#include "common/open.h"
#include "common/device-scan.h"
#include "common/messages.h"
#include "common/units.h"
#include "kernel-shared/ops/admin.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/ops/restripe.h"
#include "kernel-shared/ops/open.h"

static int try_online(const char *path, struct mfs_target *t);

/*
 * Whether the daemon serving @mp has @dev (a path) open; -errno when it
 * cannot be asked. An mfs_ask_daemon question.
 */
static int mount_has_device(const char *mp, const void *dev)
{
	struct mfs_target t;
	struct mfs_space sp;
	int i, ret;

	memset(&t, 0, sizeof(t));
	ret = try_online(mp, &t);
	if (ret)
		return ret;
	ret = mfs_target_space(&t, &sp);
	close(t.fd);
	if (ret)
		return ret;
	for (i = 0; i < sp.nr_devs && !ret; i++)
		if (!sp.devs[i].missing && sp.devs[i].path[0] &&
		    mfs_same_device(dev, sp.devs[i].path))
			ret = 1;
	mfs_space_free(&sp);
	return ret;
}

/*
 * Mount points whose daemon gave no answer lately: not asked again for
 * MFS_ASK_SILENT_SECS, so that a command going over many devices (show
 * with no argument) waits for a stuck one once, not once per device.
 */
#define MFS_ASK_SILENT_SECS	60
static struct {
	char mp[PATH_MAX];
	time_t when;
} silent[8];

static bool silent_lately(const char *mp)
{
	time_t now = time(NULL);
	size_t i;

	for (i = 0; i < ARRAY_SIZE(silent); i++)
		if (silent[i].when && now - silent[i].when < MFS_ASK_SILENT_SECS &&
		    !strcmp(silent[i].mp, mp))
			return true;
	return false;
}

static void note_silent(const char *mp)
{
	size_t i, oldest = 0;

	for (i = 0; i < ARRAY_SIZE(silent); i++)
		if (silent[i].when < silent[oldest].when)
			oldest = i;
	snprintf(silent[oldest].mp, sizeof(silent[oldest].mp), "%s", mp);
	silent[oldest].when = time(NULL);
}

int mfs_ask_daemon(int (*query)(const char *mp, const void *arg), const char *mp,
		   const void *arg)
{
	struct pollfd pfd;
	int pipefd[2], ret;
	char answer;
	pid_t pid;

	if (silent_lately(mp))
		return -ETIMEDOUT;
	if (pipe2(pipefd, O_CLOEXEC))
		return query(mp, arg);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return query(mp, arg);
	}
	if (pid == 0) {
		ret = query(mp, arg);
		answer = ret == 1 ? 'y' : ret == 0 ? 'n' : 'e';
		_exit(write(pipefd[1], &answer, 1) == 1 ? 0 : 1);
	}
	close(pipefd[1]);
	pfd = (struct pollfd){ .fd = pipefd[0], .events = POLLIN };
	ret = poll(&pfd, 1, MFS_ASK_DAEMON_MS);
	if (ret == 1 && read(pipefd[0], &answer, 1) == 1) {
		ret = answer == 'y' ? 1 : answer == 'n' ? 0 : -EIO;
		waitpid(pid, NULL, 0);
	} else {
		/*
		 * Its request's wait is killable: reaped within a second as a
		 * rule (a long-lived caller, mfs monitor, must not pile up
		 * zombies), never waited for beyond that.
		 */
		int i;

		ret = -ETIMEDOUT;
		note_silent(mp);
		kill(pid, SIGKILL);
		for (i = 0; i < 100 && waitpid(pid, NULL, WNOHANG) == 0; i++)
			usleep(10000);
	}
	close(pipefd[0]);
	return ret;
}

/* Whether the mfs mounted on mp has the fsid fsid (mfs_ask_daemon's question). */
static int mount_has_fsid(const char *mp, const void *fsid)
{
	struct mfs_ioctl_fs_info *info = calloc(1, sizeof(*info));
	int ret;

	if (!info)
		return -ENOMEM;
	ret = mfs_get_fs_info(mp, info);
	if (!ret)
		ret = !memcmp(info->fsid, fsid, MFS_FSID_SIZE);
	free(info);
	return ret;
}

/*
 * The first mfs mount point whose daemon answers yes to @query(mp, @arg);
 * a daemon that cannot be asked (stopped, stuck) counts when its mount
 * source is @dev. *answered (if not NULL): found by the daemon's answer.
 */
static bool find_mount(int (*query)(const char *mp, const void *arg), const void *arg,
		       const char *dev, char *mnt, size_t len, bool *answered)
{
	char line[8192];
	FILE *f;
	bool found = false;

	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char mp[PATH_MAX], type[64], source[PATH_MAX];
		char *sep = strstr(line, " - ");
		int ret;

		if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1 ||
		    sscanf(sep + 3, "%63s %4095s", type, source) != 2 ||
		    strcmp(type, "fuse.mfs") != 0)
			continue;
		mfs_unescape_mount_path(mp);
		mfs_unescape_mount_path(source);
		ret = mfs_ask_daemon(query, mp, arg);
		if (ret == 1 || (ret < 0 && mfs_same_device(dev, source))) {
			snprintf(mnt, len, "%s", mp);
			found = true;
			if (answered)
				*answered = ret == 1;
		}
	}
	fclose(f);
	return found;
}

/*
 * The mount point of the mounted mfs holding @dev (any member, named as a
 * device, an image file or a loop device over it). Each daemon is asked for
 * the devices it has open; the mount source, which may be a member deleted
 * since, decides only for a daemon that does not answer. A device with no
 * mfs superblock is no member of any: no daemon is asked.
 */
bool mfs_find_mount_of_device_asked(const char *dev, char *mnt, size_t len, bool *answered)
{
	struct mfs_super_block sb;

	if (answered)
		*answered = false;
	if (mfs_probe_super(dev, &sb) == -ENOENT)
		return false;
	return find_mount(mount_has_device, dev, dev, mnt, len, answered);
}

bool mfs_find_mount_of_device(const char *dev, char *mnt, size_t len)
{
	return mfs_find_mount_of_device_asked(dev, mnt, len, NULL);
}

bool mfs_find_mount_of_member(const char *path, char *mnt, size_t len)
{
	struct mfs_super_block sb;

	if (mfs_probe_super(path, &sb))
		return false;
	return find_mount(mount_has_fsid, sb.fsid, path, mnt, len, NULL);
}

int mfs_open_mount(const char *mp, struct mfs_ioctl_fs_info *info)
{
	struct mfs_ioctl_fs_info *mine = info ? NULL : calloc(1, sizeof(*mine));
	int fd, ret;

	if (!info && !mine)
		return -ENOMEM;
	fd = open(mp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
	} else if (ioctl(fd, MFS_IOC_FS_INFO, info ? info : mine) < 0) {
		ret = errno == ENOTTY || errno == EINVAL ? -ENOTTY : -errno;
		close(fd);
	} else {
		ret = fd;
	}
	free(mine);
	return ret;
}

int mfs_get_fs_info(const char *mp, struct mfs_ioctl_fs_info *info)
{
	int fd = mfs_open_mount(mp, info);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

static int try_online(const char *path, struct mfs_target *t)
{
	struct mfs_ioctl_fs_info *info;
	struct stat st;
	int fd;

	if (stat(path, &st) || !S_ISDIR(st.st_mode))
		return -ENOTDIR;
	info = calloc(1, sizeof(*info));
	if (!info)
		return -ENOMEM;
	fd = mfs_open_mount(path, info);
	if (fd >= 0)
		memcpy(t->fsid, info->fsid, MFS_FSID_SIZE);
	free(info);
	if (fd < 0)
		return fd == -ENOMEM ? fd : -ENOTTY;
	t->online = true;
	t->fd = fd;
	snprintf(t->mnt, sizeof(t->mnt), "%s", path);
	return 0;
}

int mfs_target_open(const char * const *paths, int npaths, bool writable, struct mfs_target *t)
{
	return mfs_target_open_flags(paths, npaths, writable ? MFS_OPEN_WRITABLE : 0, t);
}

int mfs_target_open_flags(const char * const *paths, int npaths, unsigned int flags,
			  struct mfs_target *t)
{
	char mnt[PATH_MAX];
	struct stat st;
	int ret;

	memset(t, 0, sizeof(*t));
	t->fd = -1;
	if (npaths == 1 && try_online(paths[0], t) == 0)
		return 0;
	if (npaths == 1 && !stat(paths[0], &st) && S_ISDIR(st.st_mode)) {
		error("'%s' is not a mounted mfs filesystem", paths[0]);
		return -EINVAL;
	}
	if (npaths == 1 && mfs_find_mount_of_device(paths[0], mnt, sizeof(mnt)) &&
	    try_online(mnt, t) == 0)
		return 0;
	snprintf(t->mnt, sizeof(t->mnt), "%s", paths[0]);
	ret = mfs_open_for_cmd(paths, npaths, flags, &t->fs);
	if (!ret)
		memcpy(t->fsid, t->fs->fsid, MFS_FSID_SIZE);
	return ret;
}

bool mfs_target_holds_super(const struct mfs_target *t, const char *path,
			    struct mfs_super_block *sb)
{
	return mfs_probe_super(path, sb) == 0 && !memcmp(sb->fsid, t->fsid, MFS_FSID_SIZE);
}

bool mfs_target_register_joined(const struct mfs_target *t, const char *path)
{
	struct mfs_super_block sb;

	if (t->online || !mfs_target_holds_super(t, path, &sb))
		return false;
	mfs_registry_add(path);
	return true;
}

int mfs_target_close(struct mfs_target *t)
{
	int ret = 0;

	if (t->online) {
		close(t->fd);
	} else if (t->fs) {
		ret = mfs_close_fs(t->fs);
		if (ret)
			error("cannot write the filesystem: %s", strerror(-ret));
	}
	t->fs = NULL;
	t->fd = -1;
	return ret;
}

static int do_ioctl(struct mfs_target *t, unsigned long cmd, void *arg)
{
	return ioctl(t->fd, cmd, arg) < 0 ? -errno : 0;
}

int mfs_target_health(struct mfs_target *t, struct mfs_ioctl_health *h)
{
	if (t->online)
		return do_ioctl(t, MFS_IOC_HEALTH, h);
	mfs_admin_health(t->fs, h);
	return 0;
}

/* The first page: sizes the arrays and gives the figures that are not paged. */
static int space_first_page(struct mfs_space *sp, const struct mfs_ioctl_space *page)
{
	if (page->total_devices > INT_MAX || page->total_chunks > INT_MAX)
		return -EOVERFLOW;
	sp->devs = calloc(page->total_devices + 1, sizeof(*sp->devs));
	sp->chunks = calloc(page->total_chunks + 1, sizeof(*sp->chunks));
	if (!sp->devs || !sp->chunks)
		return -ENOMEM;
	sp->data_profile = page->data_profile;
	sp->metadata_profile = page->metadata_profile;
	sp->system_profile = page->system_profile;
	sp->statfs_blocks = page->statfs_blocks;
	sp->statfs_bfree = page->statfs_bfree;
	sp->global_reserve = page->global_reserve;
	sp->global_reserve_used = page->global_reserve_used;
	return 0;
}

/*
 * Append one page. -EAGAIN when it does not continue the pages before it
 * (the layout changed in between), -EIO when it makes no sense.
 */
static int space_add_page(struct mfs_space *sp, const struct mfs_ioctl_space *page,
			  const struct mfs_ioctl_space *first, u64 stripe_cursor)
{
	u64 i, s = 0;

	if (page->generation != first->generation || page->total_devices != first->total_devices ||
	    page->total_chunks != first->total_chunks)
		return -EAGAIN;
	if (page->nr_devices > MFS_SPACE_MAX_DEVS || page->nr_chunks > MFS_SPACE_MAX_CHUNKS ||
	    page->nr_stripes > MFS_SPACE_MAX_STRIPES ||
	    sp->nr_devs + page->nr_devices > page->total_devices)
		return -EIO;
	memcpy(sp->devs + sp->nr_devs, page->devs, page->nr_devices * sizeof(*sp->devs));
	sp->nr_devs += page->nr_devices;
	for (i = 0; i < page->nr_chunks; i++) {
		const struct mfs_ioctl_space_chunk *pc = &page->chunks[i];
		struct mfs_space_chunk *c;

		if (pc->num_stripes == 0 || pc->first_stripe + pc->nr_stripes > pc->num_stripes ||
		    s + pc->nr_stripes > page->nr_stripes)
			return -EIO;
		if (i == 0 && stripe_cursor && !pc->first_stripe)
			return -EAGAIN;
		if (pc->first_stripe) {
			/* the rest of the last chunk of the page before */
			c = sp->nr_chunks ? &sp->chunks[sp->nr_chunks - 1] : NULL;
			if (i || !c || c->logical != pc->logical || pc->first_stripe != stripe_cursor)
				return -EAGAIN;
		} else {
			if (sp->nr_chunks + 1 > (int)page->total_chunks)
				return -EIO;
			c = &sp->chunks[sp->nr_chunks++];
			c->logical = pc->logical;
			c->length = pc->length;
			c->type = pc->type;
			c->used = pc->used;
			c->num_stripes = pc->num_stripes;
			c->stripe_size = pc->stripe_size;
			c->stripes = calloc(pc->num_stripes, sizeof(*c->stripes));
			if (!c->stripes)
				return -ENOMEM;
		}
		memcpy(c->stripes + pc->first_stripe, page->stripes + s,
		       pc->nr_stripes * sizeof(*c->stripes));
		s += pc->nr_stripes;
	}
	return 0;
}

/* Every page, once; -EAGAIN when the layout changed on the way. */
static int space_read(struct mfs_target *t, struct mfs_space *sp, struct mfs_ioctl_space *page,
		      struct mfs_ioctl_space *first)
{
	u64 dev_cursor = 0, chunk_cursor = 0, stripe_cursor = 0;
	int ret = 0, n;

	for (n = 0; dev_cursor != MFS_SPACE_END || chunk_cursor != MFS_SPACE_END; n++) {
		memset(page, 0, sizeof(*page));
		page->dev_cursor = dev_cursor;
		page->chunk_cursor = chunk_cursor;
		page->stripe_cursor = stripe_cursor;
		if (t->online)
			ret = do_ioctl(t, MFS_IOC_SPACE, page);
		else
			mfs_admin_space(t->fs, page);
		if (ret)
			return ret;
		if (n == 0) {
			memcpy(first, page, sizeof(*first));
			ret = space_first_page(sp, page);
			if (ret)
				return ret;
		}
		ret = space_add_page(sp, page, first, stripe_cursor);
		if (ret)
			return ret;
		/* every page must move a cursor on */
		if (!page->nr_devices && !page->nr_stripes)
			return -EIO;
		dev_cursor = page->dev_cursor;
		chunk_cursor = page->chunk_cursor;
		stripe_cursor = page->stripe_cursor;
	}
	/* every chunk complete, every device there */
	if (sp->nr_devs != (int)first->total_devices || sp->nr_chunks != (int)first->total_chunks)
		return -EAGAIN;
	return 0;
}

int mfs_target_space(struct mfs_target *t, struct mfs_space *sp)
{
	struct mfs_ioctl_space *page = calloc(1, sizeof(*page));
	struct mfs_ioctl_space *first = calloc(1, sizeof(*first));
	int ret = -ENOMEM, tries;

	memset(sp, 0, sizeof(*sp));
	for (tries = 0; page && first && tries < 10; tries++) {
		ret = space_read(t, sp, page, first);
		if (ret != -EAGAIN)
			break;
		mfs_space_free(sp);
	}
	free(page);
	free(first);
	if (ret)
		mfs_space_free(sp);
	return ret;
}

void mfs_space_free(struct mfs_space *sp)
{
	int i;

	for (i = 0; i < sp->nr_chunks; i++)
		free(sp->chunks[i].stripes);
	free(sp->devs);
	free(sp->chunks);
	memset(sp, 0, sizeof(*sp));
}

int mfs_target_restripe_start(struct mfs_target *t, struct mfs_ioctl_restripe_args *a)
{
	int ret;

	if (!t->online)
		return mfs_admin_restripe_start(t->fs, a);
	ret = do_ioctl(t, MFS_IOC_RESTRIPE_START, a);
	return ret ? ret : a->result;
}

int mfs_target_restripe_status(struct mfs_target *t, struct mfs_ioctl_restripe_status *st)
{
	if (!t->online) {
		mfs_admin_restripe_status(t->fs, st);
		return 0;
	}
	return do_ioctl(t, MFS_IOC_RESTRIPE_STATUS, st);
}

int mfs_target_restripe_ctl(struct mfs_target *t, unsigned int cmd)
{
	struct mfs_ioctl_restripe_ctl c = { .cmd = cmd };
	int ret;

	if (!t->online)
		return mfs_admin_restripe_ctl(t->fs, cmd);
	ret = do_ioctl(t, MFS_IOC_RESTRIPE_CTL, &c);
	return ret ? ret : c.result;
}

int mfs_target_restripe_estimate(struct mfs_target *t, struct mfs_ioctl_restripe_estimate *e)
{
	int ret;

	if (!t->online)
		return mfs_admin_restripe_estimate(t->fs, e);
	ret = do_ioctl(t, MFS_IOC_RESTRIPE_ESTIMATE, e);
	return ret ? ret : e->result;
}

int mfs_target_device_add(struct mfs_target *t, const char *path, u64 flags, u64 *devid)
{
	struct mfs_ioctl_dev_add *d;
	int ret;

	if (!t->online)
		return mfs_admin_device_add(t->fs, path, flags, devid);
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	if (!realpath(path, d->path))
		snprintf(d->path, sizeof(d->path), "%s", path);
	d->flags = flags;
	ret = do_ioctl(t, MFS_IOC_DEV_ADD, d);
	if (!ret)
		ret = d->result;
	*devid = d->devid;
	free(d);
	return ret;
}

int mfs_target_replace_start(struct mfs_target *t, struct mfs_ioctl_replace_start *r)
{
	char real[PATH_MAX];
	int ret;

	/* the daemon has another working directory */
	if (realpath(r->path, real))
		snprintf(r->path, sizeof(r->path), "%s", real);
	if (!t->online)
		return mfs_admin_replace_start(t->fs, r);
	ret = do_ioctl(t, MFS_IOC_REPLACE_START, r);
	return ret ? ret : r->result;
}

int mfs_target_grow(struct mfs_target *t, u64 devid, u64 new_size)
{
	struct mfs_ioctl_resize r = { .devid = devid, .new_size = new_size };
	int ret;

	if (!t->online)
		return mfs_admin_grow(t->fs, devid, new_size);
	ret = do_ioctl(t, MFS_IOC_RESIZE, &r);
	return ret ? ret : r.result;
}

/* ---------------- progress ---------------- */

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void show_progress(struct mfs_progress *p, const struct mfs_ioctl_restripe_status *st,
			  bool end)
{
	char what[64];
	u64 moved = st->bytes_done - st->bytes_at_start;
	double secs = st->elapsed_ns / 1e9;

	snprintf(what, sizeof(what), "%llu/%llu chunks, ", (unsigned long long)st->completed,
		 (unsigned long long)st->expected);
	if (end)
		mfs_progress_end(p, what, st->bytes_done, st->bytes_total, moved, secs);
	else
		mfs_progress_update(p, what, st->bytes_done, st->bytes_total, moved, secs);
}

static void *job_thread(void *arg)
{
	struct mfs_job *job = arg;
	int result = job->fn(job->fs);

	pthread_mutex_lock(&job->lock);
	job->result = result;
	job->done = true;
	pthread_cond_signal(&job->ended);
	pthread_mutex_unlock(&job->lock);
	return NULL;
}

int mfs_job_start(struct mfs_job *job, int (*fn)(struct mfs_fs_info *fs),
		  struct mfs_fs_info *fs)
{
	int ret;

	memset(job, 0, sizeof(*job));
	job->fn = fn;
	job->fs = fs;
	pthread_mutex_init(&job->lock, NULL);
	pthread_cond_init(&job->ended, NULL);
	ret = pthread_create(&job->thread, NULL, job_thread, job);
	if (ret) {
		pthread_cond_destroy(&job->ended);
		pthread_mutex_destroy(&job->lock);
	}
	return -ret;
}

bool mfs_job_wait(struct mfs_job *job, unsigned int ms)
{
	struct timespec ts;
	bool done;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&job->lock);
	while (!job->done && pthread_cond_timedwait(&job->ended, &job->lock, &ts) == 0)
		;
	done = job->done;
	pthread_mutex_unlock(&job->lock);
	return done;
}

int mfs_job_join(struct mfs_job *job)
{
	pthread_join(job->thread, NULL);
	pthread_cond_destroy(&job->ended);
	pthread_mutex_destroy(&job->lock);
	return job->result;
}

/*
 * A restripe's wait: its progress line every WAIT_SHOW_MS; online its
 * status asked every MFS_TARGET_POLL_MS (a finished balance is not kept
 * waiting for a tick).
 */
#define WAIT_SHOW_MS	200

int mfs_target_restripe_wait(struct mfs_target *t, bool quiet)
{
	struct mfs_ioctl_restripe_status *st = calloc(1, sizeof(*st));
	struct sigaction sa, old;
	struct mfs_progress prog;
	struct mfs_job job;
	u64 last_elapsed = 0;
	unsigned int since_show = 0;
	int ret = 0;

	if (!st)
		return -ENOMEM;
	mfs_progress_init(&prog, stdout, quiet);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigaction(SIGINT, &sa, &old);
	if (!t->online && mfs_job_start(&job, mfs_restripe_run, t->fs)) {
		sigaction(SIGINT, &old, NULL);
		free(st);
		return -EAGAIN;
	}
	for (;;) {
		bool ended = false;

		if (t->online)
			usleep(MFS_TARGET_POLL_MS * 1000);
		else
			ended = mfs_job_wait(&job, WAIT_SHOW_MS);
		since_show += t->online ? MFS_TARGET_POLL_MS : WAIT_SHOW_MS;
		if (interrupted) {
			/* Ctrl-C pauses; the state stays on disk for resume */
			interrupted = 0;
			mfs_target_restripe_ctl(t, MFS_RESTRIPE_CTL_PAUSE);
		}
		if (t->online) {
			ret = mfs_target_restripe_status(t, st);
			if (ret)
				break;
			if (st->state != MFS_RESTRIPE_RUNNING) {
				ret = st->last_result;
				break;
			}
		} else {
			mfs_target_restripe_status(t, st);
			if (ended)
				break;
		}
		/* a finished run's status has no clock: the rate is of the run */
		if (st->elapsed_ns)
			last_elapsed = st->elapsed_ns;
		else
			st->elapsed_ns = last_elapsed;
		if (since_show < WAIT_SHOW_MS)
			continue;
		since_show = 0;
		show_progress(&prog, st, false);
	}
	if (!t->online) {
		ret = mfs_job_join(&job);
		mfs_target_restripe_status(t, st);
	}
	/* the rate over the whole run, not of a finished operation */
	if (!st->elapsed_ns)
		st->elapsed_ns = last_elapsed;
	show_progress(&prog, st, true);
	sigaction(SIGINT, &old, NULL);
	free(st);
	return ret;
}
