/*
 * The filesystem an admin command acts on: a mounted one (talked to with
 * ioctls on its mount point) or an unmounted one (opened in-process).
 * Both go through the same engine functions (kernel-shared/ops/admin.h).
 */
#ifndef MFS_COMMON_TARGET_H
#define MFS_COMMON_TARGET_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/format/ioctl.h"

struct mfs_target {
	bool online;
	int fd;				/* mount point, when online */
	struct mfs_fs_info *fs;		/* when offline */
	char mnt[PATH_MAX];		/* mount point or first device, for messages */
	u8 fsid[MFS_FSID_SIZE];		/* the filesystem's, once open */
};

/* A chunk with all its stripes. */
struct mfs_space_chunk {
	u64 logical, length, type, used;
	u64 num_stripes, stripe_size;
	struct mfs_ioctl_space_stripe *stripes;	/* num_stripes of them */
};

/* Every device and chunk, gathered page by page from one layout. */
struct mfs_space {
	struct mfs_ioctl_space_dev *devs;
	int nr_devs;
	struct mfs_space_chunk *chunks;
	int nr_chunks;
	u64 data_profile, metadata_profile, system_profile;
	u64 statfs_blocks, statfs_bfree;
	u64 global_reserve, global_reserve_used;
};

/*
 * paths: a mount point (or a device of a mounted filesystem, resolved to
 * its mount point), or the devices/images of an unmounted one. Prints an
 * ERROR line on failure.
 */
int mfs_target_open(const char * const *paths, int npaths, bool writable, struct mfs_target *t);
/*
 * The same with the engine's open flags (MFS_OPEN_*) for an unmounted
 * filesystem: MFS_OPEN_DEGRADED for the commands that deal with a missing
 * member (device delete missing, replace of a missing device).
 */
int mfs_target_open_flags(const char * const *paths, int npaths, unsigned int flags,
			  struct mfs_target *t);
/* Offline: commit and close. */
int mfs_target_close(struct mfs_target *t);
/* Whether path holds a superblock (into *sb) of t's filesystem. */
bool mfs_target_holds_super(const struct mfs_target *t, const char *path,
			    struct mfs_super_block *sb);
/*
 * Offline, after an operation that makes a device a member (device add, a
 * replace's target) failed: if path now holds a superblock of t's
 * filesystem - the error came after the commit it joined in - it is
 * registered, so that the next commands find it like the other members.
 * Whether it was.
 */
bool mfs_target_register_joined(const struct mfs_target *t, const char *path);

int mfs_target_space(struct mfs_target *t, struct mfs_space *sp);
/* The members' states and the redundancy left (MFS_IOC_HEALTH). */
int mfs_target_health(struct mfs_target *t, struct mfs_ioctl_health *h);
void mfs_space_free(struct mfs_space *sp);

int mfs_target_restripe_start(struct mfs_target *t, struct mfs_ioctl_restripe_args *a);
int mfs_target_restripe_status(struct mfs_target *t, struct mfs_ioctl_restripe_status *st);
int mfs_target_restripe_ctl(struct mfs_target *t, unsigned int cmd);
int mfs_target_restripe_estimate(struct mfs_target *t, struct mfs_ioctl_restripe_estimate *e);
/* flags: MFS_DEV_ADD_SPARE for a hot spare */
int mfs_target_device_add(struct mfs_target *t, const char *path, u64 flags, u64 *devid);
/* r->path, srcdevid and flags in; result, msg and devid out. Returns r->result. */
int mfs_target_replace_start(struct mfs_target *t, struct mfs_ioctl_replace_start *r);
int mfs_target_grow(struct mfs_target *t, u64 devid, u64 new_size);

/*
 * How often a command waiting for a mounted filesystem's restripe asks for
 * its status: often enough that it returns soon after the daemon finished.
 */
#define MFS_TARGET_POLL_MS	20

/*
 * Wait for the running restripe to stop (online: poll; offline: run it
 * here), printing progress unless quiet. Returns the operation's result:
 * 0 done, -EINTR paused, -ECANCELED cancelled, or -errno.
 */
int mfs_target_restripe_wait(struct mfs_target *t, bool quiet);

/*
 * query(mp, arg) - a question to the daemon serving the mfs mounted on mp:
 * 1 yes, 0 no, -errno - asked in a child process that gets
 * MFS_ASK_DAEMON_MS to answer. Commands that look for a device among
 * every mfs mounted on the host ask each daemon: one that does not answer
 * (stopped, stuck on a dead disk) must not hang them, as btrfs-progs's
 * mount checks never talk to another filesystem. -ETIMEDOUT: no answer.
 */
#define MFS_ASK_DAEMON_MS	5000
int mfs_ask_daemon(int (*query)(const char *mp, const void *arg), const char *mp,
		   const void *arg);

/*
 * The mfs mounted on mp, opened: a directory descriptor whose daemon
 * answered MFS_IOC_FS_INFO (into info, unless NULL); -errno otherwise
 * (-ENOTTY: a directory, but no mfs mount point).
 */
int mfs_open_mount(const char *mp, struct mfs_ioctl_fs_info *info);
/* The daemon's MFS_IOC_FS_INFO for the mfs mounted on mp; -errno. */
int mfs_get_fs_info(const char *mp, struct mfs_ioctl_fs_info *info);

/* Mount point of a mounted mfs whose source is this device, if any. */
bool mfs_find_mount_of_device(const char *dev, char *mnt, size_t len);
/*
 * The same, and whether its daemon answered (false: found by the mount
 * source alone, the daemon stopped or stuck - asking it more would hang).
 */
bool mfs_find_mount_of_device_asked(const char *dev, char *mnt, size_t len, bool *answered);
/*
 * The mount point of the mounted mfs with the fsid of the device at path:
 * also a member deleted since, or a copy of a member (not to be mounted
 * beside it).
 */
bool mfs_find_mount_of_member(const char *path, char *mnt, size_t len);

/*
 * An operation of an unmounted filesystem (restripe, scrub) run in a
 * thread of its own while the command shows its progress and watches for
 * Ctrl-C; the command sees its end at once, not at its next tick.
 */
struct mfs_job {
	int (*fn)(struct mfs_fs_info *fs);
	struct mfs_fs_info *fs;
	int result;
	bool done;
	pthread_mutex_t lock;
	pthread_cond_t ended;
	pthread_t thread;
};
/* Start fn(fs) in its thread; 0 or -errno. */
int mfs_job_start(struct mfs_job *job, int (*fn)(struct mfs_fs_info *fs),
		  struct mfs_fs_info *fs);
/* Until the job ends or ms milliseconds pass; whether it has ended. */
bool mfs_job_wait(struct mfs_job *job, unsigned int ms);
/* The ended job's thread joined; fn's result. */
int mfs_job_join(struct mfs_job *job);

#endif
