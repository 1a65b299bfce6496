/*
 * Scrub (DESIGN §6): every copy and parity strip of every used block read
 * and verified, bad copies rewritten from good ones. The same engine code
 * runs in the daemon's scrub thread and in the offline command.
 */
#ifndef MFS_SCRUB_H
#define MFS_SCRUB_H

#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/format/ioctl.h"

/*
 * Set up a scrub of the whole filesystem (a->flags, a->limit); refused
 * with a message in a->msg while one runs or another exclusive operation
 * (balance, delete, replace, resize) is in progress. Takes fs->lock.
 * Then mfs_scrub_run does the work.
 */
int mfs_scrub_start(struct mfs_fs_info *fs, struct mfs_ioctl_scrub_args *a);
/*
 * Scrub from the cursor in bounded steps, taking fs->lock for each, until
 * done, paused or cancelled. Returns 0, -EINTR (paused), -ECANCELED or
 * -errno; the counts are in the status.
 */
int mfs_scrub_run(struct mfs_fs_info *fs);
/* The running, paused or last scrub; state MFS_SCRUB_NONE if none. Takes fs->lock. */
void mfs_scrub_status(struct mfs_fs_info *fs, struct mfs_ioctl_scrub_status *st);
/*
 * MFS_SCRUB_CTL_PAUSE / CANCEL a running (cancel: or paused) scrub;
 * RESUME a paused or cancelled one (then mfs_scrub_run). -ENOTCONN: nothing
 * to act on; -EBUSY: a restripe is in progress.
 */
int mfs_scrub_ctl(struct mfs_fs_info *fs, unsigned int cmd);
/*
 * The daemon's own pause at unmount (never an ioctl's): the item says the
 * scrub was interrupted, and the next read-write mount resumes it.
 */
#define MFS_SCRUB_CTL_INTERRUPT	100
/*
 * The read limit (bytes per second per device, 0 none) of the running,
 * paused or stopped scrub, changed at once (*old: the one it had); saved
 * with its state. -ENOTCONN: no scrub to change. Takes fs->lock.
 */
int mfs_scrub_set_limit(struct mfs_fs_info *fs, u64 limit, u64 *old);
/* A scrub paused by an unmount or stopped by a crash, to resume at mount? */
bool mfs_scrub_interrupted(struct mfs_fs_info *fs);
/*
 * A scrub is running or paused (also one an unmount or crash interrupted):
 * other exclusive operations must wait. Under fs->lock.
 */
bool mfs_scrub_in_progress(struct mfs_fs_info *fs);
/* The refusal of another exclusive operation while a scrub is in progress: -EBUSY. */
int mfs_scrub_busy(char *msg, size_t msglen);

#endif
