/*
 * The daemon's background threads: the periodic commit, the restriper and
 * the scrubber, and the restripe a read-write mount starts by itself.
 */
#include <pthread.h>
#include <errno.h>
#include <time.h>
#include "fuse/server-internal.h"
#include "kernel-shared/fs/inode.h"
#include "kernel-shared/ops/admin.h"
#include "kernel-shared/ops/restripe.h"
#include "kernel-shared/ops/scrub.h"
#include "kernel-shared/block/testhook.h"

/*
 * A commit, then empty data chunks back to the unallocated pool (as
 * btrfs's commit wakes its cleaner).
 */
int commit_and_clean(struct server *s)
{
	int ret = mfs_sync_fs(s->fs);

	return ret ? ret : mfs_remove_unused_chunks(s->fs);
}

/*
 * A member missing or failing and a hot spare that can take its place:
 * the replace of that member by the spare starts (replace status shows
 * it, the log says so). true when it started.
 */
static bool take_spare(struct server *s)
{
	struct mfs_fs_info *fs = s->fs;
	u64 src, spare;
	int ret = 1;

	pthread_mutex_lock(&fs->lock);
	if (mfs_spare_wanted(fs, &src, &spare))
		ret = mfs_replace_start_spare(fs, src, spare);
	pthread_mutex_unlock(&fs->lock);
	return !ret && !start_restriper(s);
}

/*
 * The engine's word that a member failed (fs->dev_failed): the committer
 * wakes to look for a spare. Any lock may be held: only a wake-up here.
 */
void member_failed(void *arg)
{
	struct server *s = arg;

	__atomic_store_n(&s->spare_check, 1, __ATOMIC_RELEASE);
	if (pthread_mutex_trylock(&s->stop_lock) == 0) {
		pthread_cond_signal(&s->stop_cond);
		pthread_mutex_unlock(&s->stop_lock);
	}
}

/*
 * The periodic commit: every commit_interval seconds, until the unmount
 * wakes it; and a hot spare's takeover, on a member's failure or (missing
 * members, a spare added) at the next period.
 */
void *committer(void *arg)
{
	struct server *s = arg;

	pthread_mutex_lock(&s->stop_lock);
	while (!s->stopping) {
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += s->opts->commit_interval;
		if (!__atomic_load_n(&s->spare_check, __ATOMIC_ACQUIRE))
			pthread_cond_timedwait(&s->stop_cond, &s->stop_lock, &until);
		if (s->stopping)
			break;
		pthread_mutex_unlock(&s->stop_lock);
		__atomic_store_n(&s->spare_check, 0, __ATOMIC_RELEASE);
		commit_and_clean(s);
		take_spare(s);
		pthread_mutex_lock(&s->stop_lock);
	}
	pthread_mutex_unlock(&s->stop_lock);
	return NULL;
}

/*
 * Run fn(s) in *thread. The thread the previous operation ran in has ended
 * or is about to (one operation at a time); it is joined first.
 */
static int start_thread(pthread_t *thread, bool *started, void *(*fn)(void *),
			struct server *s)
{
	if (*started) {
		pthread_join(*thread, NULL);
		*started = false;
	}
	if (pthread_create(thread, NULL, fn, s))
		return -EAGAIN;
	*started = true;
	return 0;
}

/* The restriper runs in its own thread; one at a time. */
static void *restripe_thread(void *arg)
{
	struct server *s = arg;

	mfs_restripe_run(s->fs);
	return NULL;
}

int start_restriper(struct server *s)
{
	return start_thread(&s->restriper, &s->restriper_started, restripe_thread, s);
}

void stop_restriper(struct server *s)
{
	if (!s->restriper_started)
		return;
	pthread_mutex_lock(&s->fs->lock);
	if (s->fs->restripe && s->fs->restripe->state == MFS_RESTRIPE_RUNNING)
		__atomic_store_n(&s->fs->restripe->pause_req, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&s->fs->lock);
	mfs_test_pause_at("restriper-stop");	/* the pause is asked for */
	pthread_join(s->restriper, NULL);
	s->restriper_started = false;
}

/*
 * At mount, every member present, usable and caught up (a device that was
 * away is back): the chunks written reduced while it was away go back to
 * their profile, as a balance the daemon runs (pausable, shown by balance
 * status; skip_balance leaves them for a later mount).
 */
static void convert_reduced_chunks(struct server *s)
{
	struct mfs_fs_info *fs = s->fs;
	int ret;

	pthread_mutex_lock(&fs->lock);
	ret = mfs_restripe_start_reduced(fs);
	pthread_mutex_unlock(&fs->lock);
	if (ret > 0)
		start_restriper(s);
}

/*
 * At a read-write mount (without skip_balance): an operation interrupted
 * by unmount or a crash carries on, else the reduced chunks' convert
 * starts when there is one to do.
 */
void restripe_at_mount(struct server *s)
{
	struct mfs_fs_info *fs = s->fs;

	if (fs->restripe && fs->restripe->state == MFS_RESTRIPE_PAUSED &&
	    mfs_admin_restripe_ctl(fs, MFS_RESTRIPE_CTL_RESUME) == 0)
		start_restriper(s);
	else if (!take_spare(s))
		convert_reduced_chunks(s);
}

/* The scrub runs in its own thread too, in bounded steps under fs->lock. */
static void *scrub_thread(void *arg)
{
	struct server *s = arg;

	mfs_scrub_run(s->fs);
	return NULL;
}

int start_scrubber(struct server *s)
{
	return start_thread(&s->scrubber, &s->scrubber_started, scrub_thread, s);
}

/*
 * At a read-write mount (without skip_scrub): a scrub an unmount paused or
 * a crash stopped goes on where it stopped (one the admin paused stays
 * paused). Beside an operation resumed at mount it waits: it is paused
 * still, and the next mount tries again.
 */
void scrub_at_mount(struct server *s)
{
	if (!mfs_scrub_interrupted(s->fs) || mfs_scrub_ctl(s->fs, MFS_SCRUB_CTL_RESUME))
		return;
	mfs_log(s->fs, "resuming the scrub an unmount or a crash interrupted ('mfs scrub status' follows it; -o skip_scrub leaves it paused)");
	start_scrubber(s);
}

/* At unmount a running scrub pauses where it is, to go on at the next mount. */
void stop_scrubber(struct server *s)
{
	if (!s->scrubber_started)
		return;
	mfs_scrub_ctl(s->fs, MFS_SCRUB_CTL_INTERRUPT);
	mfs_test_pause_at("scrubber-stop");	/* the pause is asked for */
	pthread_join(s->scrubber, NULL);
	s->scrubber_started = false;
}

/*
 * At unmount: the committer first (it may start a spare's replace), then
 * the scrub and the restripe pause where they are.
 */
void stop_background(struct server *s)
{
	if (!s->opts->ro) {
		pthread_mutex_lock(&s->stop_lock);
		s->stopping = true;
		pthread_cond_signal(&s->stop_cond);
		pthread_mutex_unlock(&s->stop_lock);
		pthread_join(s->committer, NULL);
	}
	stop_scrubber(s);
	stop_restriper(s);
}
