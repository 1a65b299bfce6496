/* The shared progress display (common/progress.c): its text, its bar, when it shows. */
#include <unistd.h>

#include "tests/unit/unit.h"
#include "common/progress.h"

#define MiB (1024ULL * 1024)
#define GiB (1024 * MiB)

static int count_char(const char *s, char c)
{
	int n = 0;

	for (; *s; s++)
		n += *s == c;
	return n;
}

static void test_line(void)
{
	char buf[256];

	/* 100 MiB moved in 10 s: 10 MiB/s, the 1 GiB left in 102 s */
	mfs_progress_format(buf, sizeof(buf), "3/7 chunks, ", GiB, 2 * GiB, 100 * MiB, 10, false);
	CHECK(!strcmp(buf, "3/7 chunks, 1.00GiB of 2.00GiB (50%), 10.00MiB/s, ETA 0:01:42"));
	/* under half a second the rate is unknown, and so the ETA */
	mfs_progress_format(buf, sizeof(buf), "", MiB, 4 * MiB, MiB, 0.2, false);
	CHECK(!strcmp(buf, "1.00MiB of 4.00MiB (25%), 0.00B/s, ETA --:--:--"));
	/* done: ETA 0 whatever the rate */
	mfs_progress_format(buf, sizeof(buf), "", 4 * MiB, 4 * MiB, 0, 0, false);
	CHECK(!strcmp(buf, "4.00MiB of 4.00MiB (100%), 0.00B/s, ETA 0:00:00"));
	/* hours: 10 GiB left at 1 MiB/s */
	mfs_progress_format(buf, sizeof(buf), "", 0, 10 * GiB, 60 * MiB, 60, false);
	CHECK(!strcmp(buf, "0.00B of 10.00GiB (0%), 1.00MiB/s, ETA 2:50:40"));
	/* more done than expected (shared extents, a grown total): capped at 100% */
	mfs_progress_format(buf, sizeof(buf), "", 5 * MiB, 4 * MiB, 0, 0, false);
	CHECK(!strcmp(buf, "5.00MiB of 4.00MiB (100%), 0.00B/s, ETA 0:00:00"));
	/* nothing to do is done */
	mfs_progress_format(buf, sizeof(buf), "", 0, 0, 0, 0, false);
	CHECK(!strcmp(buf, "0.00B of 0.00B (100%), 0.00B/s, ETA 0:00:00"));
}

/* The bar: MFS_PROGRESS_BAR cells, filled in proportion to done/total. */
static void test_bar(void)
{
	static const struct { u64 done, total; int fill; } cases[] = {
		{ 0, 100, 0 }, { 4, 100, 0 }, { 5, 100, 1 }, { 50, 100, 10 },
		{ 1, 3, 6 }, { 999, 1000, 19 }, { 100, 100, 20 }, { 200, 100, 20 },
		{ 3 * GiB, 4 * GiB, 15 },
	};
	char buf[256];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		mfs_progress_format(buf, sizeof(buf), "", cases[i].done, cases[i].total, 0, 0, true);
		REQUIRE(buf[0] == '[' && buf[MFS_PROGRESS_BAR + 1] == ']' &&
			buf[MFS_PROGRESS_BAR + 2] == ' ');
		buf[MFS_PROGRESS_BAR + 1] = 0;
		CHECK_EQ(count_char(buf, '#'), cases[i].fill);
		CHECK_EQ(count_char(buf, '.'), MFS_PROGRESS_BAR - cases[i].fill);
		/* the filled cells come first */
		CHECK_EQ(strspn(buf + 1, "#"), cases[i].fill);
	}
	mfs_progress_format(buf, sizeof(buf), "x, ", 1, 2, 0, 0, true);
	CHECK(!strcmp(buf, "[##########..........] x, 1.00B of 2.00B (50%), 0.00B/s, ETA --:--:--"));
}

/* Read back what a display wrote to f. */
static void slurp(FILE *f, char *buf, size_t len)
{
	size_t n;

	fflush(f);
	rewind(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = 0;
}

/*
 * When it shows, without waiting: the clock's start is moved instead, so
 * that a line is due (start in the past) or not yet (start in the future).
 */
static void test_when(void)
{
	struct mfs_progress p;
	char buf[1024];
	FILE *f = tmpfile();

	REQUIRE(f);
	unsetenv("MFS_TEST_PROGRESS");
	mfs_progress_init(&p, f, false);
	CHECK(!p.tty);
	p.start.tv_sec += 1000;
	CHECK(!mfs_progress_update(&p, "", 1, 4, 1, 1));
	/* nothing shown: the end shows nothing either (a quick operation is silent) */
	mfs_progress_end(&p, "", 4, 4, 4, 1);
	slurp(f, buf, sizeof(buf));
	CHECK(!strcmp(buf, ""));

	p.start.tv_sec -= 1000 + 2;	/* 2 s ago: the first line (1 s) is due */
	CHECK(mfs_progress_update(&p, "", 1, 4, 1, 2));
	/* the next is due MFS_PROGRESS_EVERY later */
	p.start.tv_sec += 1000;
	CHECK(!mfs_progress_update(&p, "", 2, 4, 2, 3));
	p.start.tv_sec -= 1000 + (time_t)MFS_PROGRESS_EVERY;
	CHECK(mfs_progress_update(&p, "", 3, 4, 3, 8));
	mfs_progress_end(&p, "", 4, 4, 4, 8);
	slurp(f, buf, sizeof(buf));
	CHECK(!strcmp(buf, "1.00B of 4.00B (25%), 0.00B/s, ETA 0:00:06\n"
			   "3.00B of 4.00B (75%), 0.00B/s, ETA 0:00:02\n"
			   "4.00B of 4.00B (100%), 0.00B/s, ETA 0:00:00\n"));
	fclose(f);
}

/* MFS_TEST_PROGRESS: every update shown, as lines or as the bar redrawn in place. */
static void test_hook(void)
{
	struct mfs_progress p;
	char buf[1024];
	FILE *f = tmpfile();

	REQUIRE(f);
	setenv("MFS_TEST_PROGRESS", "tty", 1);
	mfs_progress_init(&p, f, false);
	CHECK(p.tty);
	CHECK(mfs_progress_update(&p, "", 1, 2, 0, 0));
	mfs_progress_break(&p);
	mfs_progress_break(&p);		/* once only */
	CHECK(mfs_progress_update(&p, "", 2, 2, 0, 0));
	mfs_progress_end(&p, "", 2, 2, 0, 0);
	slurp(f, buf, sizeof(buf));
	CHECK(!strcmp(buf, "\r[##########..........] 1.00B of 2.00B (50%), 0.00B/s, ETA --:--:--    \n"
			   "\r[####################] 2.00B of 2.00B (100%), 0.00B/s, ETA 0:00:00    "
			   "\r[####################] 2.00B of 2.00B (100%), 0.00B/s, ETA 0:00:00    \n"));

	/* quiet wins over the hook */
	rewind(f);
	CHECK(!ftruncate(fileno(f), 0));
	setenv("MFS_TEST_PROGRESS", "plain", 1);
	mfs_progress_init(&p, f, true);
	CHECK(!mfs_progress_update(&p, "", 1, 2, 0, 0));
	mfs_progress_end(&p, "", 2, 2, 0, 0);
	slurp(f, buf, sizeof(buf));
	CHECK(!strcmp(buf, ""));
	unsetenv("MFS_TEST_PROGRESS");
	fclose(f);
}

int main(void)
{
	RUN(test_line);
	RUN(test_bar);
	RUN(test_when);
	RUN(test_hook);
	UNIT_EXIT();
}
