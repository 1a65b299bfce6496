/* Test hooks (testhook.h): MFS_TEST_PAUSE_AT holds an operation at a named point. */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "kernel-shared/block/testhook.h"

#define MAX_POINTS	16

struct hook {
	char point[64];
	char file[PATH_MAX];
};

static struct hook hooks[MAX_POINTS];
static int nr_hooks;
static pthread_once_t parsed = PTHREAD_ONCE_INIT;
/* arrivals count the control file down one at a time */
static pthread_mutex_t hook_lock = PTHREAD_MUTEX_INITIALIZER;

/* One "POINT:FILE" entry; a malformed one is ignored. */
static void parse_hook(const char *s, size_t len)
{
	struct hook *h = &hooks[nr_hooks];
	const char *colon = memchr(s, ':', len);
	size_t plen, flen;

	if (!colon || nr_hooks == MAX_POINTS)
		return;
	plen = colon - s;
	flen = len - plen - 1;
	if (!plen || plen >= sizeof(h->point) || !flen || flen >= sizeof(h->file))
		return;
	memcpy(h->point, s, plen);
	h->point[plen] = 0;
	memcpy(h->file, colon + 1, flen);
	h->file[flen] = 0;
	nr_hooks++;
}

static void parse_env(void)
{
	const char *v = getenv("MFS_TEST_PAUSE_AT");

	while (v && *v) {
		const char *comma = strchr(v, ',');
		size_t len = comma ? (size_t)(comma - v) : strlen(v);

		parse_hook(v, len);
		v = comma ? comma + 1 : NULL;
	}
}

/* The directory of path still exists. */
static int dir_exists(const char *path)
{
	char dir[PATH_MAX + 16];
	char *slash;
	struct stat st;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		return 1;
	if (slash == dir)
		slash[1] = 0;	/* the root */
	else
		*slash = 0;
	return stat(dir, &st) == 0;
}

/* The number in the control file; 0: not armed. */
static long armed(const char *file)
{
	char buf[32] = "";
	FILE *f = fopen(file, "re");
	long n;

	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	n = atol(buf);
	return n > 0 ? n : 1;
}

/* Count the control file down; at 1 it becomes FILE.held. true: hold here. */
static int arrive(const struct hook *h, char *held, size_t size)
{
	char tmp[PATH_MAX + 16];
	long n = armed(h->file);
	FILE *f;

	if (!n)
		return 0;
	snprintf(held, size, "%s.held", h->file);
	if (n == 1)
		return rename(h->file, held) == 0;
	snprintf(tmp, sizeof(tmp), "%s.tmp", h->file);
	f = fopen(tmp, "we");
	if (!f)
		return 0;
	fprintf(f, "%ld\n", n - 1);
	if (fclose(f) == 0)
		rename(tmp, h->file);
	return 0;
}

void mfs_test_pause_at(const char *point)
{
	char held[PATH_MAX + 16];
	int i, hold;

	pthread_once(&parsed, parse_env);
	for (i = 0; i < nr_hooks; i++) {
		if (strcmp(hooks[i].point, point))
			continue;
		pthread_mutex_lock(&hook_lock);
		hold = arrive(&hooks[i], held, sizeof(held));
		pthread_mutex_unlock(&hook_lock);
		while (hold && access(held, F_OK) == 0 && dir_exists(held))
			nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
}
