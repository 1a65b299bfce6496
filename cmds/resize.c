/*
 * mfs filesystem resize: grow a device in place, or shrink it through the
 * restriper, mounted or not.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cmds/commands.h"
#include "cmds/restripe-cli.h"
#include "cmds/space.h"
#include "common/help.h"
#include "common/messages.h"
#include "common/units.h"
#include "common/target.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/ops/restripe.h"

static const char * const cmd_filesystem_resize_usage[] = {
	"mfs filesystem resize [options] [<devid>:][+/-]<size>[kKmMgGtTpPeE]|[<devid>:]max <path>|<device>",
	"mfs filesystem resize cancel <path>|<device>",
	"",
	"Resize one device of a filesystem, mounted or not.",
	"The devid defaults to 1. max is the whole underlying device. Growing is",
	"immediate; shrinking first moves every chunk that lies past the new end",
	"(through the restriper, with progress), and is refused before anything",
	"moves when those chunks cannot fit elsewhere.",
	"",
	OPTLINE("--offline", "accepted for compatibility (not needed)"),
	OPTLINE("-q|--quiet", "no progress output while chunks move"),
	NULL
};

enum resize_kind { RESIZE_ABS, RESIZE_GROW_BY, RESIZE_SHRINK_BY, RESIZE_MAX };

struct resize_req {
	bool has_devid;
	u64 devid;
	enum resize_kind kind;
	u64 amount;
};

static int parse_resize(const char *arg, struct resize_req *r)
{
	const char *colon = strchr(arg, ':'), *s = arg;

	memset(r, 0, sizeof(*r));
	if (colon) {
		char *end;

		if (colon == arg || arg[0] < '0' || arg[0] > '9')
			return -EINVAL;
		r->devid = strtoull(arg, &end, 10);
		if (end != colon)
			return -EINVAL;
		r->has_devid = true;
		s = colon + 1;
	}
	if (!strcmp(s, "max")) {
		r->kind = RESIZE_MAX;
		return 0;
	}
	if (*s == '+' || *s == '-') {
		r->kind = *s == '+' ? RESIZE_GROW_BY : RESIZE_SHRINK_BY;
		s++;
	}
	if (*s < '0' || *s > '9')
		return -EINVAL;
	return parse_size(s, &r->amount);
}

static bool chunk_past(const struct mfs_space_chunk *c, u64 devid, u64 new_size)
{
	int s;

	for (s = 0; (u64)s < c->num_stripes; s++)
		if (c->stripes[s].devid == devid && c->stripes[s].physical + c->stripe_size > new_size)
			return true;
	return false;
}

/* What a shrink moves: the chunks with a stripe past the new end, and their used bytes. */
static void shrink_moves(const struct mfs_space *sp, u64 devid, u64 new_size, u64 *nmove, u64 *bytes)
{
	int i;

	*nmove = *bytes = 0;
	for (i = 0; i < sp->nr_chunks; i++) {
		if (!chunk_past(&sp->chunks[i], devid, new_size))
			continue;
		(*nmove)++;
		*bytes += sp->chunks[i].used;
	}
}

static int resize_cancel(struct mfs_target *t)
{
	struct mfs_ioctl_restripe_status st;
	int ret;

	ret = mfs_target_restripe_status(t, &st);
	if (ret) {
		/* a refusal (a user without CAP_SYS_ADMIN) is no "none in progress" */
		error("unable to cancel resize on '%s': %s", t->mnt, strerror(-ret));
		return 1;
	}
	if (st.state == MFS_RESTRIPE_NONE || st.args.op != MFS_RESTRIPE_OP_RESIZE) {
		error("unable to cancel resize on '%s': no resize in progress", t->mnt);
		return 1;
	}
	ret = mfs_target_restripe_ctl(t, MFS_RESTRIPE_CTL_CANCEL);
	if (ret) {
		error("unable to cancel resize on '%s': %s", t->mnt, strerror(-ret));
		return 1;
	}
	printf("Request to cancel resize\n");
	return 0;
}

/*
 * The device a resize acts on: devid, or with none given devid 1, else the
 * lowest (with btrfs's warning). NULL after an error message.
 */
static const struct mfs_ioctl_space_dev *resize_device(const struct mfs_space *sp,
						       const struct resize_req *r, const char *mnt)
{
	const struct mfs_ioctl_space_dev *d = NULL;
	u64 devid = r->has_devid ? r->devid : 1;
	int i;

	for (i = 0; i < sp->nr_devs; i++)
		if (sp->devs[i].devid == devid)
			d = &sp->devs[i];
	if (!d && !r->has_devid && sp->nr_devs) {
		d = &sp->devs[0];
		for (i = 1; i < sp->nr_devs; i++)
			if (sp->devs[i].devid < d->devid)
				d = &sp->devs[i];
		warning("no devid specified means devid 1 which does not exist, using lowest devid %llu as a fallback",
			(unsigned long long)d->devid);
	}
	if (!d) {
		error("cannot find devid: %llu", (unsigned long long)devid);
		return NULL;
	}
	if (dev_missing(d)) {
		error("unable to resize '%s': device %llu is missing", mnt,
		      (unsigned long long)d->devid);
		return NULL;
	}
	return d;
}

/* The size asked for, from the current one; -1 after an error message. */
static int resize_target_size(const struct mfs_ioctl_space_dev *d, const char *arg,
			      const struct resize_req *r, const char *mnt, u64 *new_size)
{
	u64 old = d->total_bytes;

	switch (r->kind) {
	case RESIZE_MAX:
		*new_size = d->device_size;
		break;
	case RESIZE_GROW_BY:
		if (r->amount > (u64)-1 - old) {
			error("unable to resize '%s': %s is too large", mnt, arg);
			return -1;
		}
		*new_size = old + r->amount;
		break;
	case RESIZE_SHRINK_BY:
		if (r->amount > old) {
			error("current size is %s which is smaller than %s", pretty_size(old),
			      pretty_size(r->amount));
			return -1;
		}
		*new_size = old - r->amount;
		break;
	default:
		*new_size = r->amount;
	}
	*new_size = round_down(*new_size, SZ_4K);
	return 0;
}

static int resize_grow(struct mfs_target *t, const struct mfs_ioctl_space_dev *d, u64 new_size)
{
	int err;

	if (new_size > d->device_size) {
		error("unable to resize '%s': no enough free space (device %llu is %s, %s requested)",
		      t->mnt, (unsigned long long)d->devid, pretty_size(d->device_size),
		      pretty_size(new_size));
		return 1;
	}
	/* an exclusive operation, as in btrfs: not beside a running or paused one */
	if (mfs_check_exclusive(t, "resize", false))
		return 1;
	err = mfs_target_grow(t, d->devid, new_size);
	if (err == -EINPROGRESS)
		mfs_check_exclusive(t, "resize", false);
	else if (err)
		error("unable to resize '%s': %s", t->mnt,
		      err == -EFBIG ? "no enough free space" : strerror(-err));
	return err ? 1 : 0;
}

/* A shrink is a restripe: whether it fits is the engine's to say, before anything moves. */
static int resize_shrink(struct mfs_target *t, const struct mfs_space *sp,
			 const struct mfs_ioctl_space_dev *d, u64 new_size, bool quiet)
{
	struct mfs_ioctl_restripe_args *a;
	char started[128] = "";
	u64 nmove, bytes;
	int ret;

	if (new_size < MFS_MIN_DEVICE_SIZE) {
		error("unable to resize '%s': the new size %s is below the minimum device size %s",
		      t->mnt, pretty_size(new_size), pretty_size(MFS_MIN_DEVICE_SIZE));
		return 1;
	}
	shrink_moves(sp, d->devid, new_size, &nmove, &bytes);
	if (nmove && !quiet)
		snprintf(started, sizeof(started), "Relocating %llu chunk%s (%s used) past the new end",
			 (unsigned long long)nmove, nmove == 1 ? "" : "s", pretty_size(bytes));
	a = calloc(1, sizeof(*a));
	if (!a) {
		error("out of memory");
		return 1;
	}
	a->op = MFS_RESTRIPE_OP_RESIZE;
	a->devids[0] = d->devid;
	a->nr_devids = 1;
	a->new_size = new_size;
	ret = mfs_run_restripe_started(t, a, false, quiet, "resize", started);
	free(a);
	return ret;
}

static int do_resize(struct mfs_target *t, const char *arg, const struct resize_req *r, bool quiet)
{
	const struct mfs_ioctl_space_dev *d;
	struct mfs_space sp;
	u64 new_size;
	int ret = 1;

	if (mfs_target_space(t, &sp)) {
		error("cannot read the devices of '%s'", t->mnt);
		return 1;
	}
	d = resize_device(&sp, r, t->mnt);
	if (!d || resize_target_size(d, arg, r, t->mnt, &new_size))
		goto out;
	printf("Resize device id %llu (%s) from %s to %s\n", (unsigned long long)d->devid,
	       dev_path(d), pretty_size(d->total_bytes),
	       r->kind == RESIZE_MAX ? "max" : pretty_size(new_size));
	fflush(stdout);
	if (new_size == d->total_bytes)
		ret = 0;
	else if (new_size > d->total_bytes)
		ret = resize_grow(t, d, new_size);
	else
		ret = resize_shrink(t, &sp, d, new_size, quiet);
out:
	mfs_space_free(&sp);
	return ret;
}

static int cmd_filesystem_resize(const struct cmd_struct *cmd, int argc, char **argv)
{
	enum { OPT_OFFLINE = 256 };
	static const struct option longopts[] = {
		{ "offline", no_argument, NULL, OPT_OFFLINE },
		{ "quiet", no_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 }
	};
	struct resize_req req;
	struct mfs_target t;
	const char *arg;
	bool quiet = false, cancel;
	int c, ret, nopts;

	/* "-1g" is a size, not an option: options end before it */
	for (nopts = 1; nopts < argc; nopts++)
		if (argv[nopts][0] == '-' && argv[nopts][1] >= '0' && argv[nopts][1] <= '9')
			break;
	while ((c = getopt_long(nopts, argv, "+q", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_OFFLINE:
			break;
		case 'q':
			quiet = true;
			break;
		default:
			usage_unknown_option(cmd, argv);
		}
	}
	if (optind < argc && !strcmp(argv[optind], "--"))
		optind++;
	if (check_argc_min(argc - optind, 2))
		return 1;
	arg = argv[optind];
	cancel = !strcmp(arg, "cancel");
	if (!cancel && parse_resize(arg, &req)) {
		error("invalid resize argument: '%s'", arg);
		return 1;
	}
	if (mfs_target_open((const char * const *)argv + optind + 1, argc - optind - 1, true, &t))
		return 1;
	ret = cancel ? resize_cancel(&t) : do_resize(&t, arg, &req, quiet);
	if (mfs_target_close(&t))
		ret = 1;
	return ret;
}
DEFINE_SIMPLE_COMMAND(filesystem_resize, "resize");
