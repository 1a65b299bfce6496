/*
 * The admin ioctls on the mount's root directory (format/ioctl.h): who may
 * make each request and which engine call answers it.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include "fuse/server-internal.h"
#include "kernel-shared/format/ioctl.h"
#include "kernel-shared/ops/admin.h"
#include "kernel-shared/ops/restripe.h"
#include "kernel-shared/ops/scrub.h"

/* Admin operations need CAP_SYS_ADMIN in the calling process. */
static bool caller_is_admin(fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	char path[64], line[256];
	bool admin = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)ctx->pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long caps;

		if (sscanf(line, "CapEff: %llx", &caps) == 1) {
			admin = caps & (1ULL << 21);	/* CAP_SYS_ADMIN */
			break;
		}
	}
	fclose(f);
	return admin;
}

/*
 * The argument of a restricted ioctl: a zeroed struct of the size the
 * command number encodes, holding the caller's copy when the command takes
 * one in. NULL after replying EINVAL (a buffer smaller than the struct) or
 * ENOMEM.
 */
static void *ioctl_arg(fuse_req_t req, unsigned int cmd, const void *in_buf, size_t in_bufsz,
		       size_t out_bufsz)
{
	size_t size = _IOC_SIZE(cmd);
	bool in = _IOC_DIR(cmd) & _IOC_WRITE, out = _IOC_DIR(cmd) & _IOC_READ;
	void *arg;

	if ((in && in_bufsz < size) || (out && out_bufsz < size)) {
		fuse_reply_err(req, EINVAL);
		return NULL;
	}
	arg = calloc(1, size);
	if (!arg) {
		fuse_reply_err(req, ENOMEM);
		return NULL;
	}
	if (in)
		memcpy(arg, in_buf, size);
	return arg;
}

/* Reply with the argument ioctl_arg gave, as the command left it, and free it. */
static void ioctl_reply_arg(fuse_req_t req, unsigned int cmd, void *arg)
{
	fuse_reply_ioctl(req, 0, arg, _IOC_SIZE(cmd));
	free(arg);
}

/* MFS_IOC_DEV_STATS: every device's error counters; optionally reset them. */
static void ioctl_dev_stats(fuse_req_t req, struct server *s, const void *in_buf,
			    size_t in_bufsz, size_t out_bufsz)
{
	struct mfs_ioctl_dev_stats *ds = ioctl_arg(req, MFS_IOC_DEV_STATS, in_buf, in_bufsz,
						   out_bufsz);
	int ret;

	if (!ds)
		return;
	ret = mfs_admin_dev_stats(s->fs, ds);
	if (ret) {
		free(ds);
		fuse_reply_err(req, -ret);
		return;
	}
	ioctl_reply_arg(req, MFS_IOC_DEV_STATS, ds);
}

static void ioctl_sync(fuse_req_t req, struct server *s, const void *in_buf,
		       size_t in_bufsz, size_t out_bufsz)
{
	(void)in_buf;
	(void)in_bufsz;
	(void)out_bufsz;
	/* anyone may commit, as anyone may fsync; read-only: nothing to write */
	fuse_reply_ioctl(req, s->opts->ro ? 0 : commit_and_clean(s), NULL, 0);
}

static void fill_fs_info(struct server *s, void *arg)
{
	struct mfs_ioctl_fs_info *info = arg;

	mfs_admin_fs_info(s->fs, info);
	info->daemon_pid = getpid();
	snprintf(info->first_device, sizeof(info->first_device), "%s",
		 s->opts->fsname ? s->opts->fsname : "");
}

static void fill_space(struct server *s, void *arg)
{
	mfs_admin_space(s->fs, arg);
}

static void fill_health(struct server *s, void *arg)
{
	mfs_admin_health(s->fs, arg);
}

static void fill_restripe_start(struct server *s, void *arg)
{
	struct mfs_ioctl_restripe_args *a = arg;

	if (mfs_admin_restripe_start(s->fs, a) == 0)
		a->result = start_restriper(s);
}

static void fill_replace_start(struct server *s, void *arg)
{
	struct mfs_ioctl_replace_start *r = arg;

	if (mfs_admin_replace_start(s->fs, r) == 0)
		r->result = start_restriper(s);
}

static void fill_restripe_status(struct server *s, void *arg)
{
	mfs_admin_restripe_status(s->fs, arg);
}

static void fill_restripe_estimate(struct server *s, void *arg)
{
	mfs_admin_restripe_estimate(s->fs, arg);
}

static int restripe_state(struct server *s)
{
	int state;

	pthread_mutex_lock(&s->fs->lock);
	state = s->fs->restripe ? s->fs->restripe->state : MFS_RESTRIPE_NONE;
	pthread_mutex_unlock(&s->fs->lock);
	return state;
}

static void fill_restripe_ctl(struct server *s, void *arg)
{
	struct mfs_ioctl_restripe_ctl *c = arg;
	int was = restripe_state(s);

	c->result = mfs_admin_restripe_ctl(s->fs, c->cmd);
	/* a paused replace cancelled runs on, moving back what it moved */
	if (c->result == 0 && (c->cmd == MFS_RESTRIPE_CTL_RESUME ||
			       (c->cmd == MFS_RESTRIPE_CTL_CANCEL && was == MFS_RESTRIPE_PAUSED &&
				restripe_state(s) == MFS_RESTRIPE_RUNNING)))
		c->result = start_restriper(s);
}

static void fill_dev_add(struct server *s, void *arg)
{
	struct mfs_ioctl_dev_add *d = arg;

	d->path[sizeof(d->path) - 1] = 0;
	d->result = mfs_admin_device_add(s->fs, d->path, d->flags, &d->devid);
}

static void fill_resize(struct server *s, void *arg)
{
	struct mfs_ioctl_resize *r = arg;

	r->result = mfs_admin_grow(s->fs, r->devid, r->new_size);
}

static void fill_scrub_start(struct server *s, void *arg)
{
	struct mfs_ioctl_scrub_args *a = arg;

	if (mfs_scrub_start(s->fs, a) == 0)
		a->result = start_scrubber(s);
}

static void fill_scrub_status(struct server *s, void *arg)
{
	mfs_scrub_status(s->fs, arg);
}

static void fill_scrub_ctl(struct server *s, void *arg)
{
	struct mfs_ioctl_scrub_ctl *c = arg;

	if (c->cmd == MFS_SCRUB_CTL_LIMIT) {
		c->result = mfs_scrub_set_limit(s->fs, c->value, &c->value);
		return;
	}
	c->result = c->cmd == MFS_SCRUB_CTL_INTERRUPT ? -EINVAL : mfs_scrub_ctl(s->fs, c->cmd);
	if (c->result == 0 && c->cmd == MFS_SCRUB_CTL_RESUME)
		c->result = start_scrubber(s);
}

/*
 * The admin requests (format/ioctl.h): who may make each, whether a
 * read-only mount takes it, and what answers it - fill, which completes
 * the fixed-size argument in place, or raw, which answers the request
 * itself.
 */
static const struct ioctl_op {
	unsigned int cmd;
	bool admin;		/* root only (CAP_SYS_ADMIN) */
	bool on_ro;		/* allowed on a read-only mount */
	void (*fill)(struct server *s, void *arg);
	void (*raw)(fuse_req_t req, struct server *s, const void *in_buf,
		    size_t in_bufsz, size_t out_bufsz);
} ioctl_ops[] = {
	{ MFS_IOC_DEV_STATS, .admin = true, .on_ro = true, .raw = ioctl_dev_stats },
	{ MFS_IOC_FS_INFO, .on_ro = true, .fill = fill_fs_info },
	{ MFS_IOC_SPACE, .on_ro = true, .fill = fill_space },
	{ MFS_IOC_HEALTH, .on_ro = true, .fill = fill_health },
	{ MFS_IOC_SYNC, .on_ro = true, .raw = ioctl_sync },
	{ MFS_IOC_RESTRIPE_START, .admin = true, .fill = fill_restripe_start },
	{ MFS_IOC_REPLACE_START, .admin = true, .fill = fill_replace_start },
	{ MFS_IOC_RESTRIPE_STATUS, .admin = true, .on_ro = true, .fill = fill_restripe_status },
	{ MFS_IOC_RESTRIPE_ESTIMATE, .admin = true, .on_ro = true, .fill = fill_restripe_estimate },
	{ MFS_IOC_RESTRIPE_CTL, .admin = true, .fill = fill_restripe_ctl },
	{ MFS_IOC_DEV_ADD, .admin = true, .fill = fill_dev_add },
	{ MFS_IOC_RESIZE, .admin = true, .fill = fill_resize },
	{ MFS_IOC_SCRUB_START, .admin = true, .on_ro = true, .fill = fill_scrub_start },
	{ MFS_IOC_SCRUB_STATUS, .admin = true, .on_ro = true, .fill = fill_scrub_status },
	{ MFS_IOC_SCRUB_CTL, .admin = true, .on_ro = true, .fill = fill_scrub_ctl },
};

void op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
	      struct fuse_file_info *fi, unsigned int flags, const void *in_buf,
	      size_t in_bufsz, size_t out_bufsz)
{
	struct server *s = srv(req);
	const struct ioctl_op *op = NULL;
	size_t i;
	void *a;

	(void)arg;
	(void)fi;
	for (i = 0; i < sizeof(ioctl_ops) / sizeof(ioctl_ops[0]); i++)
		if (ioctl_ops[i].cmd == cmd)
			op = &ioctl_ops[i];
	if (!op || ino != FUSE_ROOT_ID || !(flags & FUSE_IOCTL_DIR)) {
		fuse_reply_err(req, ENOTTY);
		return;
	}
	if (op->admin && !caller_is_admin(req)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if (s->opts->ro && !op->on_ro) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (op->raw) {
		op->raw(req, s, in_buf, in_bufsz, out_bufsz);
		return;
	}
	a = ioctl_arg(req, cmd, in_buf, in_bufsz, out_bufsz);
	if (!a)
		return;
	op->fill(s, a);
	ioctl_reply_arg(req, cmd, a);
}
