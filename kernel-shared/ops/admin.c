/*
 * The admin interface in one place: the FUSE server answers ioctls with
 * these functions, and offline commands call the very same ones
 * in-process, so online and offline behave alike (DESIGN §7).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/ops/admin.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/tree/alloc.h"
#include "kernel-shared/ops/restripe.h"
#include "kernel-shared/fs/inode.h"
#include "kernel-shared/tree/transaction.h"

static void filter_from_ioctl(struct mfs_balance_filter *f, const struct mfs_ioctl_balance_filter *i)
{
	f->flags = i->flags;
	f->profiles = i->profiles;
	f->usage_min = i->usage_min;
	f->usage_max = i->usage_max;
	f->devid = i->devid;
	f->pstart = i->pstart;
	f->pend = i->pend;
	f->vstart = i->vstart;
	f->vend = i->vend;
	f->target = i->target;
	f->limit_min = i->limit_min;
	f->limit_max = i->limit_max;
	f->stripes_min = i->stripes_min;
	f->stripes_max = i->stripes_max;
}

static void filter_to_ioctl(struct mfs_ioctl_balance_filter *i, const struct mfs_balance_filter *f)
{
	memset(i, 0, sizeof(*i));
	i->flags = f->flags;
	i->profiles = f->profiles;
	i->usage_min = f->usage_min;
	i->usage_max = f->usage_max;
	i->devid = f->devid;
	i->pstart = f->pstart;
	i->pend = f->pend;
	i->vstart = f->vstart;
	i->vend = f->vend;
	i->target = f->target;
	i->limit_min = f->limit_min;
	i->limit_max = f->limit_max;
	i->stripes_min = f->stripes_min;
	i->stripes_max = f->stripes_max;
}

void mfs_restripe_args_from_ioctl(struct mfs_restripe_args *a, const struct mfs_ioctl_restripe_args *i)
{
	unsigned int n;

	memset(a, 0, sizeof(*a));
	a->op = i->op;
	a->flags = i->flags;
	filter_from_ioctl(&a->data, &i->data);
	filter_from_ioctl(&a->meta, &i->meta);
	filter_from_ioctl(&a->sys, &i->sys);
	a->nr_devids = i->nr_devids > MFS_RESTRIPE_MAX_DEVIDS ? MFS_RESTRIPE_MAX_DEVIDS : i->nr_devids;
	for (n = 0; n < (unsigned int)a->nr_devids; n++)
		a->devids[n] = i->devids[n];
	a->new_size = i->new_size;
}

static void args_to_ioctl(struct mfs_ioctl_restripe_args *i, const struct mfs_restripe_args *a)
{
	int n;

	memset(i, 0, sizeof(*i));
	i->op = a->op;
	i->flags = a->flags;
	filter_to_ioctl(&i->data, &a->data);
	filter_to_ioctl(&i->meta, &a->meta);
	filter_to_ioctl(&i->sys, &a->sys);
	i->nr_devids = a->nr_devids;
	for (n = 0; n < a->nr_devids; n++)
		i->devids[n] = a->devids[n];
	i->new_size = a->new_size;
}

void mfs_admin_restripe_status(struct mfs_fs_info *fs, struct mfs_ioctl_restripe_status *out)
{
	struct mfs_restripe_status *st;
	struct timespec ts;

	memset(out, 0, sizeof(*out));
	/* the restriper changes these under the lock (bytes_done alone is atomic) */
	pthread_mutex_lock(&fs->lock);
	st = fs->restripe;
	if (!st) {
		pthread_mutex_unlock(&fs->lock);
		return;
	}
	out->state = st->state;
	out->last_result = st->last_result;
	out->pause_req = st->pause_req;
	out->cancel_req = st->cancel_req;
	out->expected = st->expected;
	out->considered = st->considered;
	out->completed = st->completed;
	out->bytes_done = __atomic_load_n(&st->bytes_done, __ATOMIC_RELAXED);
	/* a piece copied while the total is being counted anew is not past it */
	out->bytes_total = max_t(u64, st->bytes_total, out->bytes_done);
	out->bytes_at_start = st->bytes_at_start;
	if (st->state == MFS_RESTRIPE_RUNNING && st->start_ns) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		out->elapsed_ns = (u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec - st->start_ns;
	}
	args_to_ioctl(&out->args, &st->args);
	out->start_time = st->start_time;
	out->cancel_progress = st->cancel_progress;
	out->read_errs = st->read_errs;
	out->write_errs = st->write_errs;
	out->last_replace = st->last_replace.outcome;
	out->last_start_time = st->last_replace.start_time;
	out->last_end_time = st->last_replace.end_time;
	out->last_progress = st->last_replace.progress;
	out->last_write_errs = st->last_replace.write_errs;
	out->last_read_errs = st->last_replace.read_errs;
	out->spare_time = st->last_replace.spare_time;
	out->spare_src_devid = st->last_replace.spare_src;
	out->spare_devid = st->last_replace.spare_devid;
	pthread_mutex_unlock(&fs->lock);
}

int mfs_admin_replace_start(struct mfs_fs_info *fs, struct mfs_ioctl_replace_start *io)
{
	int ret;

	io->path[sizeof(io->path) - 1] = 0;
	pthread_mutex_lock(&fs->lock);
	ret = mfs_replace_start(fs, io->path, io->srcdevid, io->flags, io->discard, io->msg,
				sizeof(io->msg));
	if (!ret)
		io->devid = fs->restripe->args.devids[1];
	pthread_mutex_unlock(&fs->lock);
	io->result = ret;
	return ret;
}

int mfs_admin_restripe_start(struct mfs_fs_info *fs, struct mfs_ioctl_restripe_args *io)
{
	struct mfs_restripe_args a;
	int ret;

	mfs_restripe_args_from_ioctl(&a, io);
	pthread_mutex_lock(&fs->lock);
	ret = mfs_restripe_start(fs, &a, io->msg, sizeof(io->msg));
	pthread_mutex_unlock(&fs->lock);
	io->result = ret;
	return ret;
}

int mfs_admin_restripe_estimate(struct mfs_fs_info *fs, struct mfs_ioctl_restripe_estimate *io)
{
	struct mfs_restripe_estimate est;
	struct mfs_restripe_args a;

	mfs_restripe_args_from_ioctl(&a, &io->args);
	io->args.msg[0] = 0;
	pthread_mutex_lock(&fs->lock);
	/* what start would refuse first, the dry run refuses too */
	io->result = mfs_restripe_check_args(fs, &a, io->args.msg, sizeof(io->args.msg));
	if (!io->result)
		io->result = mfs_restripe_estimate(fs, &a, &est);
	pthread_mutex_unlock(&fs->lock);
	if (!io->result) {
		io->chunks = est.chunks;
		io->bytes = est.bytes;
		io->raw_needed = est.raw_needed;
		io->raw_available = est.raw_available;
		io->fits = est.fits;
	}
	return io->result;
}

int mfs_admin_restripe_ctl(struct mfs_fs_info *fs, unsigned int cmd)
{
	struct mfs_restripe_status *st;
	int ret = 0;

	pthread_mutex_lock(&fs->lock);
	st = fs->restripe;
	switch (cmd) {
	case MFS_RESTRIPE_CTL_PAUSE:
		if (!st || st->state != MFS_RESTRIPE_RUNNING)
			ret = -ENOTCONN;
		else
			__atomic_store_n(&st->pause_req, 1, __ATOMIC_RELAXED);
		break;
	case MFS_RESTRIPE_CTL_CANCEL:
		if (!st || st->state == MFS_RESTRIPE_NONE)
			ret = -ENOTCONN;
		else if (st->state == MFS_RESTRIPE_RUNNING)
			__atomic_store_n(&st->cancel_req, 1, __ATOMIC_RELAXED);
		else
			ret = mfs_restripe_cancel_paused(fs);
		break;
	case MFS_RESTRIPE_CTL_RESUME:
		ret = mfs_restripe_resume(fs);
		break;
	default:
		ret = -EINVAL;
	}
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

static void space_devices(struct mfs_fs_info *fs, struct mfs_ioctl_space *sp, u64 first)
{
	u64 i;

	for (i = 0; first + i < (u64)fs->nr_devices && i < MFS_SPACE_MAX_DEVS; i++) {
		struct mfs_device *d = fs->devices[first + i];
		struct mfs_ioctl_space_dev *o = &sp->devs[i];

		o->devid = d->devid;
		o->total_bytes = d->total_bytes;
		o->bytes_used = d->bytes_used;
		o->flags = d->flags;
		o->missing = d->missing;
		o->device_size = d->io ? d->io->size : 0;
		o->state = mfs_device_health(d);
		memcpy(o->uuid, d->uuid, sizeof(o->uuid));
		snprintf(o->path, sizeof(o->path), "%s", d->path ? d->path : "");
	}
	sp->nr_devices = i;
	sp->dev_cursor = first + i < (u64)fs->nr_devices ? first + i : MFS_SPACE_END;
}

/* Chunks from index first, stripes of the first one from stripe on, while they fit. */
static void space_chunks(struct mfs_fs_info *fs, struct mfs_ioctl_space *sp, u64 first, u64 stripe)
{
	u64 idx = first;

	while (idx < (u64)fs->nr_chunks && sp->nr_chunks < MFS_SPACE_MAX_CHUNKS &&
	       sp->nr_stripes < MFS_SPACE_MAX_STRIPES) {
		struct mfs_chunk_map *m = fs->chunks[idx];
		struct mfs_block_group *bg = mfs_lookup_block_group(fs, m->logical);
		struct mfs_ioctl_space_chunk *c = &sp->chunks[sp->nr_chunks++];

		/* a cursor from an older layout: the caller starts over */
		if (stripe >= (u64)m->num_stripes)
			stripe = 0;
		c->logical = m->logical;
		c->length = m->length;
		/* chunks written degraded below the profile asked for say so */
		c->type = m->type | (bg && bg->reduced ? MFS_BLOCK_GROUP_REDUCED : 0);
		/* live: extents written since the last commit count too */
		c->used = bg ? min_t(u64, bg->used + bg->reserved, bg->length) : 0;
		c->num_stripes = m->num_stripes;
		c->stripe_size = mfs_map_stripe_size(m);
		c->first_stripe = stripe;
		for (; stripe < (u64)m->num_stripes && sp->nr_stripes < MFS_SPACE_MAX_STRIPES; stripe++) {
			sp->stripes[sp->nr_stripes].devid = m->stripes[stripe].devid;
			sp->stripes[sp->nr_stripes++].physical = m->stripes[stripe].physical;
			c->nr_stripes++;
		}
		if (stripe < (u64)m->num_stripes)
			break;		/* the rest of this chunk on the next page */
		idx++;
		stripe = 0;
	}
	sp->chunk_cursor = idx < (u64)fs->nr_chunks ? idx : MFS_SPACE_END;
	sp->stripe_cursor = idx < (u64)fs->nr_chunks ? stripe : 0;
}

void mfs_admin_space(struct mfs_fs_info *fs, struct mfs_ioctl_space *sp)
{
	u64 dev_cursor = sp->dev_cursor, chunk_cursor = sp->chunk_cursor;
	u64 stripe_cursor = sp->stripe_cursor, reserve, meta_free;
	struct statvfs sv;

	mfs_statfs(fs, &sv);
	pthread_mutex_lock(&fs->lock);
	memset(sp, 0, sizeof(*sp));
	sp->generation = fs->generation;
	sp->total_devices = fs->nr_devices;
	sp->total_chunks = fs->nr_chunks;
	sp->statfs_blocks = (u64)sv.f_blocks * sv.f_frsize;
	sp->statfs_bfree = (u64)sv.f_bavail * sv.f_frsize;
	sp->data_profile = fs->data_profile;
	sp->metadata_profile = fs->metadata_profile;
	sp->system_profile = fs->system_profile;
	reserve = mfs_global_reserve_blocks(fs);
	meta_free = mfs_metadata_free_blocks(fs);
	sp->global_reserve = reserve * fs->nodesize;
	sp->global_reserve_used = (reserve - min_t(u64, reserve, meta_free)) * fs->nodesize;
	space_devices(fs, sp, dev_cursor);
	space_chunks(fs, sp, chunk_cursor, stripe_cursor);
	pthread_mutex_unlock(&fs->lock);
}

int mfs_admin_device_add(struct mfs_fs_info *fs, const char *path, u64 flags, u64 *devid)
{
	struct mfs_restripe_status *st = fs->restripe;
	int ret;

	pthread_mutex_lock(&fs->lock);
	/* allowed while a balance is paused, as btrfs does */
	if (st && st->state == MFS_RESTRIPE_RUNNING)
		ret = -EINPROGRESS;
	else
		ret = mfs_device_add(fs, path,
				     (flags & MFS_DEV_ADD_SPARE) ? MFS_DEV_STATE_SPARE : 0, devid);
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

int mfs_admin_grow(struct mfs_fs_info *fs, u64 devid, u64 new_size)
{
	struct mfs_restripe_status *st = fs->restripe;
	int ret;

	pthread_mutex_lock(&fs->lock);
	/* resize is exclusive, as in btrfs: not even beside a paused balance */
	if (st && st->state != MFS_RESTRIPE_NONE)
		ret = -EINPROGRESS;
	else
		ret = mfs_device_grow(fs, devid, new_size);
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

int mfs_admin_dev_stats(struct mfs_fs_info *fs, struct mfs_ioctl_dev_stats *ds)
{
	bool reset = ds->flags & MFS_DEV_STATS_RESET;
	int i, j;

	memset(ds, 0, sizeof(*ds));
	if (reset && !(fs->open_flags & MFS_OPEN_WRITABLE))
		return -EROFS;
	pthread_mutex_lock(&fs->lock);
	for (i = 0; i < fs->nr_devices && i < MFS_DEV_STATS_MAX_DEVS; i++) {
		struct mfs_device *dev = fs->devices[i];
		struct mfs_ioctl_dev_stats_dev *d = &ds->devs[i];

		d->devid = dev->devid;
		d->missing = dev->missing || !dev->path;
		snprintf(d->path, sizeof(d->path), "%s", dev->path ? dev->path : "");
		for (j = 0; j < MFS_DEV_STATS_NR_VALUES; j++) {
			d->values[j] = dev->stats[j];
			if (reset && dev->stats[j]) {
				dev->stats[j] = 0;
				dev->stats_dirty = true;
				fs->dev_stats_dirty = 1;
			}
		}
	}
	ds->nr_devices = i;
	pthread_mutex_unlock(&fs->lock);
	/* a reset is on disk when the command returns */
	return reset ? mfs_sync_fs(fs) : 0;
}

void mfs_admin_fs_info(struct mfs_fs_info *fs, struct mfs_ioctl_fs_info *info)
{
	memset(info, 0, sizeof(*info));
	pthread_mutex_lock(&fs->lock);
	memcpy(info->fsid, fs->fsid, sizeof(info->fsid));
	info->num_devices = fs->nr_devices;
	info->generation = fs->generation;
	info->nodesize = fs->nodesize;
	info->sectorsize = fs->sectorsize;
	pthread_mutex_unlock(&fs->lock);
}

static void health_devices(struct mfs_fs_info *fs, struct mfs_ioctl_health *h)
{
	int i;

	h->total_devices = fs->nr_devices;
	for (i = 0; i < fs->nr_devices; i++) {
		struct mfs_device *d = fs->devices[i];
		int state = mfs_device_health(d);

		h->present_devices += state != MFS_DEV_HEALTH_MISSING;
		h->failing_devices += state == MFS_DEV_HEALTH_FAILING;
		h->rebuilding_devices += state == MFS_DEV_HEALTH_REBUILDING;
		if (i >= MFS_HEALTH_MAX_DEVS)
			continue;
		h->devs[i].devid = d->devid;
		h->devs[i].state = state;
		h->devs[i].mount_errors = __atomic_load_n(&d->mount_errors, __ATOMIC_RELAXED);
		if (state != MFS_DEV_HEALTH_MISSING)
			snprintf(h->devs[i].path, sizeof(h->devs[i].path), "%s", d->path ? d->path : "");
		h->nr_devices++;
	}
}

/* The group of chunks of this type and profile, added when new; NULL when full. */
static struct mfs_ioctl_health_group *health_group(struct mfs_ioctl_health *h, u64 flags)
{
	u64 key = flags & (MFS_BLOCK_GROUP_TYPE_MASK | MFS_BLOCK_GROUP_PROFILE_MASK);
	u64 i;

	for (i = 0; i < h->nr_groups; i++)
		if (h->groups[i].flags == key)
			return &h->groups[i];
	if (h->nr_groups == MFS_HEALTH_MAX_GROUPS)
		return NULL;
	h->groups[h->nr_groups].flags = key;
	return &h->groups[h->nr_groups++];
}

/* Each chunk's used bytes, by the redundancy its stripes on usable devices leave. */
static void health_chunks(struct mfs_fs_info *fs, struct mfs_ioctl_health *h)
{
	int i;

	for (i = 0; i < fs->nr_chunks; i++) {
		struct mfs_chunk_map *m = fs->chunks[i];
		struct mfs_block_group *bg = mfs_lookup_block_group(fs, m->logical);
		struct mfs_ioctl_health_group *g = health_group(h, m->type);
		int left = mfs_chunk_failures_left(m);
		u64 used = bg ? min_t(u64, bg->used + bg->reserved, bg->length) : 0;

		h->unreadable_chunks += left < 0;
		if (!g)
			continue;
		g->chunks++;
		if (left < 0) {
			g->unreadable_chunks++;
			g->lost += used;
		} else if (left == 0 && mfs_profile(m->type)->tolerated_failures > 0) {
			g->none += used;
		} else if (left < mfs_profile(m->type)->tolerated_failures ||
			   (bg && bg->reduced)) {
			g->reduced += used;
		} else {
			g->full += used;
		}
	}
}

void mfs_admin_health(struct mfs_fs_info *fs, struct mfs_ioctl_health *h)
{
	memset(h, 0, sizeof(*h));
	pthread_mutex_lock(&fs->lock);
	h->fail_threshold = fs->fail_threshold;
	health_devices(fs, h);
	health_chunks(fs, h);
	pthread_mutex_unlock(&fs->lock);
}
