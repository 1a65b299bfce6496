/*
 * The progress display of every long operation (balance, convert, device
 * delete, resize, replace, scrub, restore, check): on a terminal a bar
 * redrawn in place with bytes, percentage, rate and ETA; otherwise the same
 * figures as a plain line after a second and then every five.
 */
#ifndef MFS_COMMON_PROGRESS_H
#define MFS_COMMON_PROGRESS_H

#include <stdbool.h>
#include <stdio.h>
#include <time.h>
#include "kernel-shared/format/kerncompat.h"

#define MFS_PROGRESS_BAR	20	/* characters between the brackets */
#define MFS_PROGRESS_FIRST	1.0	/* seconds before the first plain line */
#define MFS_PROGRESS_EVERY	5.0	/* seconds between plain lines */
#define MFS_PROGRESS_REDRAW	0.1	/* seconds between redraws of a bar */

struct mfs_progress {
	FILE *out;
	bool tty;		/* a bar redrawn in place, else plain lines */
	bool quiet;		/* nothing at all */
	bool every_update;	/* test hook: print each update, whatever the clock */
	bool printed;		/* something was shown: end() shows the last state */
	bool open_bar;		/* a bar is on the current line */
	double next_show;	/* seconds since start when the next display is due */
	struct timespec start;
};

/*
 * Start the clock. out: where the display goes (a bar when it is a
 * terminal). MFS_TEST_PROGRESS=plain or =tty (a test hook) prints every
 * update, as lines or as the bar, whatever out is and the clock says.
 */
void mfs_progress_init(struct mfs_progress *p, FILE *out, bool quiet);
/* Seconds since init. */
double mfs_progress_elapsed(const struct mfs_progress *p);

/*
 * The state now: what (a prefix such as "3/7 chunks, ", or ""), done of
 * total bytes, and the rate of moved bytes over secs. Shown when due: on a
 * terminal every MFS_PROGRESS_REDRAW seconds, else after
 * MFS_PROGRESS_FIRST seconds and then every MFS_PROGRESS_EVERY. True when
 * it was shown.
 */
bool mfs_progress_update(struct mfs_progress *p, const char *what, u64 done, u64 total,
			 u64 moved, double secs);
/* End the line of a bar, so that other output starts on its own line. */
void mfs_progress_break(struct mfs_progress *p);
/* The final state, when anything was shown (or under the hook); a bar's line is ended. */
void mfs_progress_end(struct mfs_progress *p, const char *what, u64 done, u64 total,
		      u64 moved, double secs);

/*
 * The text of one display, without "\r" or newline: with bar, "[####....] "
 * first; then "<what><done> of <total> (<pct>%), <rate>/s, ETA h:mm:ss"
 * ("--:--:--" while the rate is unknown). Returns snprintf's count.
 */
int mfs_progress_format(char *buf, size_t len, const char *what, u64 done, u64 total,
			u64 moved, double secs, bool bar);

#endif
