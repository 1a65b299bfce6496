/* Shared by balance, device delete and resize: start, follow, report. */
#ifndef MFS_CMDS_RESTRIPE_CLI_H
#define MFS_CMDS_RESTRIPE_CLI_H

#include "common/target.h"

int mfs_parse_balance_filters(const char *arg, struct mfs_ioctl_balance_filter *f);
/* Returns the exit code; what names the operation in messages. */
int mfs_run_restripe(struct mfs_target *t, struct mfs_ioctl_restripe_args *a, bool background,
		     bool quiet, const char *what);
/* The same, printing started (unless empty) once the operation is accepted. */
int mfs_run_restripe_started(struct mfs_target *t, struct mfs_ioctl_restripe_args *a,
			     bool background, bool quiet, const char *what, const char *started);
/* 0 when no other exclusive operation runs (or is paused, if allowed); else prints why, 1. */
int mfs_check_exclusive(struct mfs_target *t, const char *what, bool allow_paused);

/* How balance pause|resume|cancel|status name the operation in messages (default "balance"). */
void mfs_restripe_ctl_noun(const char *noun);

/* --format json of balance status and replace status (cmds/status-json.c). */
void mfs_balance_status_json(const char *path, const struct mfs_ioctl_restripe_status *st);
void mfs_replace_status_json(const char *path, const struct mfs_ioctl_restripe_status *st);

#endif
