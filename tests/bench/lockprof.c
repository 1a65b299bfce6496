/*
 * A lock profiler for benchmarks (tests/bench/lockprof.sh builds it and
 * reads what it writes): preloaded into a process (LD_PRELOAD), it times
 * every pthread mutex from lock to unlock and, for each hold longer than
 * LOCKPROF_MS milliseconds (15), appends one line to LOCKPROF_OUT
 *
 *	HOLD <ms> <module>+0x<offset> ...
 *
 * with the call chain of the unlock, as offsets into their modules, for
 * addr2line. What it cannot see: a mutex taken by pthread_mutex_trylock,
 * and a condition wait's letting go (a hold across pthread_cond_wait is
 * timed whole - the daemon's committer waits so, on its own mutex). Not
 * part of mfs and not built by make; a tool to find who holds fs->lock
 * while users wait.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_HELD	16
#define MAX_FRAMES	14

static int (*real_lock)(pthread_mutex_t *);
static int (*real_unlock)(pthread_mutex_t *);
static __thread pthread_mutex_t *held[MAX_HELD];
static __thread double since[MAX_HELD];
static double threshold_ms = -1;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void setup(void)
{
	const char *t = getenv("LOCKPROF_MS");

	real_lock = dlsym(RTLD_NEXT, "pthread_mutex_lock");
	real_unlock = dlsym(RTLD_NEXT, "pthread_mutex_unlock");
	threshold_ms = t ? atof(t) : 15;
}

static void report(double ms)
{
	const char *out = getenv("LOCKPROF_OUT");
	void *frames[MAX_FRAMES];
	char line[4096];
	int n, i, off, fd;

	if (!out)
		return;
	n = backtrace(frames, MAX_FRAMES);
	off = snprintf(line, sizeof(line), "HOLD %.1f", ms);
	/* frame 0 is this function, 1 the unlock */
	for (i = 2; i < n && off < (int)sizeof(line) - 300; i++) {
		Dl_info info;

		if (!dladdr(frames[i], &info) || !info.dli_fname)
			continue;
		off += snprintf(line + off, sizeof(line) - off, " %s+0x%lx", info.dli_fname,
				(unsigned long)((char *)frames[i] - (char *)info.dli_fbase) - 1);
	}
	line[off++] = '\n';
	fd = open(out, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd < 0)
		return;
	if (write(fd, line, off) < 0)
		off = 0;
	close(fd);
}

int pthread_mutex_lock(pthread_mutex_t *m)
{
	int ret, i;

	if (!real_lock)
		setup();
	ret = real_lock(m);
	for (i = 0; !ret && i < MAX_HELD; i++) {
		if (!held[i]) {
			held[i] = m;
			since[i] = now_ms();
			break;
		}
	}
	return ret;
}

int pthread_mutex_unlock(pthread_mutex_t *m)
{
	int i;

	if (!real_unlock)
		setup();
	for (i = 0; i < MAX_HELD; i++) {
		if (held[i] == m) {
			double ms = now_ms() - since[i];

			held[i] = NULL;
			if (ms > threshold_ms)
				report(ms);
			break;
		}
	}
	return real_unlock(m);
}
