/* The shared progress bar and periodic progress lines of long operations. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common/progress.h"
#include "common/units.h"

static double now_since(const struct timespec *start)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - start->tv_sec) + (t.tv_nsec - start->tv_nsec) / 1e9;
}

void mfs_progress_init(struct mfs_progress *p, FILE *out, bool quiet)
{
	const char *hook = getenv("MFS_TEST_PROGRESS");

	memset(p, 0, sizeof(*p));
	p->out = out;
	p->quiet = quiet;
	p->tty = isatty(fileno(out));
	if (hook && (!strcmp(hook, "plain") || !strcmp(hook, "tty"))) {
		p->every_update = true;
		p->tty = !strcmp(hook, "tty");
	}
	p->next_show = p->tty ? 0 : MFS_PROGRESS_FIRST;
	clock_gettime(CLOCK_MONOTONIC, &p->start);
}

double mfs_progress_elapsed(const struct mfs_progress *p)
{
	return now_since(&p->start);
}

static void format_eta(char *eta, size_t len, u64 left, double rate)
{
	u64 e;

	if (!left) {
		snprintf(eta, len, "0:00:00");
		return;
	}
	if (rate <= 0) {
		snprintf(eta, len, "--:--:--");
		return;
	}
	e = left / rate;
	snprintf(eta, len, "%llu:%02llu:%02llu", (unsigned long long)e / 3600,
		 (unsigned long long)e / 60 % 60, (unsigned long long)e % 60);
}

int mfs_progress_format(char *buf, size_t len, const char *what, u64 done, u64 total,
			u64 moved, double secs, bool bar)
{
	/* under half a second the rate is noise */
	double rate = secs > 0.5 ? moved / secs : 0;
	u64 left = total > done ? total - done : 0;
	double pct = total ? 100.0 * (done < total ? done : total) / total : 100.0;
	char eta[32], cells[MFS_PROGRESS_BAR + 4] = "";
	int i, fill = (int)(pct * MFS_PROGRESS_BAR / 100.0);

	format_eta(eta, sizeof(eta), left, rate);
	if (bar) {
		cells[0] = '[';
		for (i = 0; i < MFS_PROGRESS_BAR; i++)
			cells[i + 1] = i < fill ? '#' : '.';
		memcpy(cells + MFS_PROGRESS_BAR + 1, "] ", 3);
	}
	return snprintf(buf, len, "%s%s%s of %s (%.0f%%), %s/s, ETA %s", cells, what,
			pretty_size(done), pretty_size(total), pct, pretty_size((u64)rate), eta);
}

static void show(struct mfs_progress *p, const char *what, u64 done, u64 total, u64 moved,
		 double secs)
{
	char line[512];

	mfs_progress_format(line, sizeof(line), what, done, total, moved, secs, p->tty);
	/* the spaces wipe what a longer previous bar left */
	if (p->tty)
		fprintf(p->out, "\r%s    ", line);
	else
		fprintf(p->out, "%s\n", line);
	fflush(p->out);
	p->printed = true;
	p->open_bar = p->tty;
}

void mfs_progress_break(struct mfs_progress *p)
{
	if (!p->open_bar)
		return;
	fputc('\n', p->out);
	fflush(p->out);
	p->open_bar = false;
}

bool mfs_progress_update(struct mfs_progress *p, const char *what, u64 done, u64 total,
			 u64 moved, double secs)
{
	double now;

	if (p->quiet)
		return false;
	if (!p->every_update) {
		now = mfs_progress_elapsed(p);
		if (now < p->next_show)
			return false;
		while (p->next_show <= now)
			p->next_show += p->tty ? MFS_PROGRESS_REDRAW : MFS_PROGRESS_EVERY;
	}
	show(p, what, done, total, moved, secs);
	return true;
}

void mfs_progress_end(struct mfs_progress *p, const char *what, u64 done, u64 total,
		      u64 moved, double secs)
{
	/* under the test hook always: a test sees the end of a quick operation */
	if (p->quiet || (!p->printed && !p->every_update))
		return;
	show(p, what, done, total, moved, secs);
	mfs_progress_break(p);
	fflush(p->out);
}
