/* A tiny TAP-producing harness for the engine unit tests. */
#ifndef MFS_UNIT_H
#define MFS_UNIT_H

#include <stdio.h>
#include <stdlib.h>
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

#define RUN(fn) unit_run(#fn, fn)
#define UNIT_EXIT() do { printf("1..%d\n", unit_test_no); return unit_failures ? 1 : 0; } while (0)

#endif
