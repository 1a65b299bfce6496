/* A tiny TAP-producing harness for the engine unit tests. */
#ifndef MFS_UNIT_H
#define MFS_UNIT_H

#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

static int unit_failed_checks;
static int unit_test_no;
static int unit_failures;

/* CHECK records a failure but lets the test go on; the test fails at its end. */
#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "# %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
		unit_failed_checks++; \
	} } while (0)
#define CHECK_EQ(a, b) do { \
	long long _a = (long long)(a), _b = (long long)(b); \
	if (_a != _b) { \
		fprintf(stderr, "# %s:%d: %s == %lld, expected %s == %lld\n", \
			__FILE__, __LINE__, #a, _a, #b, _b); \
		unit_failed_checks++; \
	} } while (0)
/* REQUIRE stops the current test at the first failure. */
#define REQUIRE(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "# %s:%d: requirement failed: %s\n", __FILE__, __LINE__, #cond); \
		unit_failed_checks++; \
		return; \
	} } while (0)

static inline void unit_run(const char *name, void (*fn)(void))
{
	int before = unit_failed_checks;

	fn();
	unit_test_no++;
	if (unit_failed_checks == before) {
		printf("ok %d - %s\n", unit_test_no, name);
	} else {
		printf("not ok %d - %s\n", unit_test_no, name);
		unit_failures++;
	}
	fflush(stdout);
}

/*
 * The unit tests' one random generator (splitmix64): seedable, so a
 * failing seed can be run again.
 */
static uint64_t unit_rng_state;

static inline void unit_seed(uint64_t seed)
{
	unit_rng_state = seed;
}

/* splitmix64's mixing of x (also a hash for deriving bytes from a key). */
static inline uint64_t unit_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static inline uint64_t unit_rnd(void)
{
	uint64_t z = unit_mix64(unit_rng_state);

	unit_rng_state += 0x9e3779b97f4a7c15ULL;
	return z;
}

/* MFS_TEST_SEED, or the test program's own default. */
static inline uint64_t unit_base_seed(uint64_t dflt)
{
	const char *env = getenv("MFS_TEST_SEED");

	return env ? strtoull(env, NULL, 0) : dflt;
}

/* Uniform in [0, n) (0 when n is 0). */
static inline uint64_t unit_rnd_below(uint64_t n)
{
	return n ? unit_rnd() % n : 0;
}

/* Uniform in [lo, hi]. */
static inline uint64_t unit_rnd_range(uint64_t lo, uint64_t hi)
{
	return lo + unit_rnd() % (hi - lo + 1);
}

static inline void unit_fill_random(void *buf, size_t len)
{
	unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = unit_rnd() >> 56;
}

#define RUN(fn) unit_run(#fn, fn)
#define UNIT_EXIT() do { printf("1..%d\n", unit_test_no); return unit_failures ? 1 : 0; } while (0)

#endif
