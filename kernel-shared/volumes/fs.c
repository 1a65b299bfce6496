/* Messages of the engine (it never prints): fs->log and the problems list. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernel-shared/volumes/fs.h"

void mfs_log(struct mfs_fs_info *fs, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!fs->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fs->log(fs->log_arg, msg);
}

void mfs_note_problem(struct mfs_fs_info *fs, const char *fmt, ...)
{
	char *msg = NULL, **p;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	if (!msg)
		return;
	p = realloc(fs->problems, (fs->nr_problems + 1) * sizeof(*p));
	if (!p) {
		free(msg);
		return;
	}
	fs->problems = p;
	fs->problems[fs->nr_problems++] = msg;
}
