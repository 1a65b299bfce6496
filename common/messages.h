/* Error and warning helpers for the tools; the engine never prints. */
#ifndef MFS_COMMON_MESSAGES_H
#define MFS_COMMON_MESSAGES_H

#include <stdbool.h>
#include <stdio.h>

/* Raised by -v/--verbose (repeatable) and -q/--quiet before the command. */
extern int mfs_verbose;
extern bool mfs_quiet;

/* "ERROR: <msg>\n" on stderr; a trailing newline in fmt is not needed. */
void error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "WARNING: <msg>\n" on stderr. */
void warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * A yes/no question before something is written: question and " [y/N]: "
 * on out, the answer from stdin; true only for an answer starting y or Y.
 */
bool ask_yes(FILE *out, const char *question);

#endif
