/*
 * --format json of balance status (device delete status) and replace
 * status: the restriper's status as Documentation/json-output.md lays it out.
 */
#include <stdio.h>
#include "cmds/restripe-cli.h"
#include "common/format-output.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/ops/restripe.h"

static const char *op_json_name(const struct mfs_ioctl_restripe_status *st)
{
	if (st->state == MFS_RESTRIPE_NONE)
		return "none";
	switch (st->args.op) {
	case MFS_RESTRIPE_OP_DELETE: return "device delete";
	case MFS_RESTRIPE_OP_RESIZE: return "resize";
	case MFS_RESTRIPE_OP_REPLACE: return "device replace";
	}
	return "balance";
}

static const char *state_json_name(u32 state)
{
	return state == MFS_RESTRIPE_RUNNING ? "running" :
	       state == MFS_RESTRIPE_PAUSED ? "paused" : "none";
}

static void add_bool(struct json_object *o, const char *key, bool v)
{
	json_object_object_add(o, key, json_object_new_boolean(v));
}

/* One filter of balance start (-d/-m/-s), the parts that are set. */
static void json_filter(struct json_object *filters, const char *type,
			const struct mfs_ioctl_balance_filter *f)
{
	struct json_object *o = mfs_json_array_add_object(filters);

	if (!o)
		return;
	mfs_json_add_string(o, "bg-type", type);
	if (f->flags & MFS_BALANCE_ARGS_CONVERT) {
		mfs_json_add_string(o, "convert",
				    mfs_profile_ui_name(mfs_filter_bit_to_profile(f->target)));
		add_bool(o, "soft", f->flags & MFS_BALANCE_ARGS_SOFT);
	}
	if (f->flags & MFS_BALANCE_ARGS_USAGE) {
		mfs_json_add_u64(o, "usage-min", f->usage_min);
		mfs_json_add_u64(o, "usage-max", f->usage_max);
	}
	if (f->flags & MFS_BALANCE_ARGS_DEVID)
		mfs_json_add_u64(o, "devid", f->devid);
	if (f->flags & MFS_BALANCE_ARGS_LIMIT)
		mfs_json_add_u64(o, "limit", f->limit_max);
	add_bool(o, "reduced-only", f->flags & MFS_BALANCE_ARGS_REDUCED);
}

/* The rate of this run in bytes per second, and the ETA in seconds (-1: unknown). */
static void rate_eta(const struct mfs_ioctl_restripe_status *st, u64 *rate, s64 *eta)
{
	double secs = st->elapsed_ns / 1e9;
	u64 left = st->bytes_total > st->bytes_done ? st->bytes_total - st->bytes_done : 0;

	*rate = 0;
	if (st->state == MFS_RESTRIPE_RUNNING && secs > 0.5)
		*rate = (st->bytes_done - st->bytes_at_start) / secs;
	*eta = !left ? 0 : *rate ? (s64)(left / *rate) : -1;
}

void mfs_balance_status_json(const char *path, const struct mfs_ioctl_restripe_status *st)
{
	struct json_object *arr, *root = mfs_json_start("balance-status", &arr);
	struct json_object *o = root ? mfs_json_array_add_object(arr) : NULL;
	struct json_object *devids, *filters;
	u64 rate;
	s64 eta;
	u32 i;

	if (!o) {
		json_object_put(root);
		return;
	}
	rate_eta(st, &rate, &eta);
	mfs_json_add_string(o, "path", path);
	mfs_json_add_string(o, "operation", op_json_name(st));
	mfs_json_add_string(o, "state", state_json_name(st->state));
	add_bool(o, "pause-requested", st->state != MFS_RESTRIPE_NONE && st->pause_req);
	add_bool(o, "cancel-requested", st->state != MFS_RESTRIPE_NONE && st->cancel_req);
	mfs_json_add_u64(o, "chunks-expected", st->expected);
	mfs_json_add_u64(o, "chunks-considered", st->considered);
	mfs_json_add_u64(o, "chunks-completed", st->completed);
	mfs_json_add_u64(o, "bytes-total", st->bytes_total);
	mfs_json_add_u64(o, "bytes-done", st->bytes_done);
	mfs_json_add_u64(o, "rate", rate);
	mfs_json_add_s64(o, "eta", eta);
	devids = mfs_json_add_array(o, "devids");
	for (i = 0; devids && st->state != MFS_RESTRIPE_NONE && i < st->args.nr_devids &&
	     i < MFS_RESTRIPE_MAX_DEVIDS; i++)
		json_object_array_add(devids, json_object_new_uint64(st->args.devids[i]));
	filters = mfs_json_add_array(o, "filters");
	if (filters && st->state != MFS_RESTRIPE_NONE && st->args.op == MFS_RESTRIPE_OP_BALANCE) {
		if (st->args.flags & MFS_BALANCE_DATA)
			json_filter(filters, "Data", &st->args.data);
		if (st->args.flags & MFS_BALANCE_METADATA)
			json_filter(filters, "Metadata", &st->args.meta);
		if (st->args.flags & MFS_BALANCE_SYSTEM)
			json_filter(filters, "System", &st->args.sys);
	}
	mfs_json_print_free(root);
}

/* The words of the text's status line: running, suspended, ... */
static const char *replace_json_status(const struct mfs_ioctl_restripe_status *st, bool active)
{
	if (active) {
		if (st->args.flags & MFS_BALANCE_REPLACE_CANCELLING)
			return "canceling";
		return st->state == MFS_RESTRIPE_PAUSED ? "suspended" : "running";
	}
	if (st->last_replace == MFS_REPLACE_FINISHED)
		return "finished";
	if (st->last_replace == MFS_REPLACE_CANCELED)
		return "canceled";
	return "never";
}

void mfs_replace_status_json(const char *path, const struct mfs_ioctl_restripe_status *st)
{
	struct json_object *arr, *root = mfs_json_start("replace-status", &arr);
	struct json_object *o = root ? mfs_json_array_add_object(arr) : NULL;
	bool active = st->state != MFS_RESTRIPE_NONE && st->args.op == MFS_RESTRIPE_OP_REPLACE;
	u64 pm = 0;

	if (!o) {
		json_object_put(root);
		return;
	}
	if (active)
		pm = st->bytes_total ? st->bytes_done * 1000 / st->bytes_total : 1000;
	else if (st->last_replace == MFS_REPLACE_FINISHED)
		pm = 1000;
	else if (st->last_replace == MFS_REPLACE_CANCELED)
		pm = st->last_progress;
	if (pm > 1000)
		pm = 1000;
	mfs_json_add_string(o, "path", path);
	mfs_json_add_string(o, "status", replace_json_status(st, active));
	mfs_json_add_u64(o, "source-devid", active && st->args.nr_devids ? st->args.devids[0] : 0);
	mfs_json_add_ratio(o, "progress", pm / 10.0);
	mfs_json_add_ratio(o, "cancel-progress",
			   active && (st->args.flags & MFS_BALANCE_REPLACE_CANCELLING) ?
			   st->cancel_progress / 10.0 : 0);
	mfs_json_add_u64(o, "started", active ? st->start_time : st->last_start_time);
	mfs_json_add_u64(o, "ended", active ? 0 : st->last_end_time);
	mfs_json_add_u64(o, "bytes-total", active ? st->bytes_total : 0);
	mfs_json_add_u64(o, "bytes-done", active ? st->bytes_done : 0);
	mfs_json_add_u64(o, "write-errors", active ? st->write_errs : st->last_write_errs);
	mfs_json_add_u64(o, "uncorrectable-read-errors", active ? st->read_errs : st->last_read_errs);
	mfs_json_print_free(root);
}
