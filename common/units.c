/* Size display modes and size/range parsing shared by the commands. */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "common/units.h"

static const char * const suffix_binary[] = {
	"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"
};
static const char * const suffix_decimal[] = {
	"B", "kB", "MB", "GB", "TB", "PB", "EB"
};

/* One table: option spelling, whether it is short (df_mode only), effect. */
enum unit_effect { SET_UNIT, SET_BASE, SET_BOTH };
static const struct unit_option {
	const char *name;
	bool short_form;
	enum unit_effect effect;
	unsigned int value;
} unit_options[] = {
	{ "--raw",		false,	SET_BOTH,	UNITS_RAW | UNITS_BINARY },
	{ "--human-readable",	false,	SET_BOTH,	UNITS_HUMAN_BINARY },
	{ "--iec",		false,	SET_BASE,	UNITS_BINARY },
	{ "--si",		false,	SET_BASE,	UNITS_DECIMAL },
	{ "--kbytes",		false,	SET_UNIT,	UNITS_KBYTES },
	{ "--mbytes",		false,	SET_UNIT,	UNITS_MBYTES },
	{ "--gbytes",		false,	SET_UNIT,	UNITS_GBYTES },
	{ "--tbytes",		false,	SET_UNIT,	UNITS_TBYTES },
	{ "-b",			true,	SET_BOTH,	UNITS_RAW | UNITS_BINARY },
	{ "-h",			true,	SET_BOTH,	UNITS_HUMAN_BINARY },
	{ "-H",			true,	SET_BOTH,	UNITS_HUMAN_DECIMAL },
	{ "-k",			true,	SET_UNIT,	UNITS_KBYTES },
	{ "-m",			true,	SET_UNIT,	UNITS_MBYTES },
	{ "-g",			true,	SET_UNIT,	UNITS_GBYTES },
	{ "-t",			true,	SET_UNIT,	UNITS_TBYTES },
};

static const struct unit_option *find_unit_option(const char *arg, int df_mode)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(unit_options); i++) {
		if (unit_options[i].short_form && !df_mode)
			continue;
		if (strcmp(arg, unit_options[i].name) == 0)
			return &unit_options[i];
	}
	return NULL;
}

unsigned int get_unit_mode_from_arg(int *argc, char **argv, int df_mode)
{
	unsigned int mode = UNITS_DEFAULT;
	int src, dst;

	for (src = 1, dst = 1; src < *argc; src++) {
		const struct unit_option *opt;

		if (strcmp(argv[src], "--") == 0) {
			/* Copy the separator and everything after it unchanged. */
			while (src < *argc)
				argv[dst++] = argv[src++];
			break;
		}
		opt = find_unit_option(argv[src], df_mode);
		if (!opt) {
			argv[dst++] = argv[src];
			continue;
		}
		switch (opt->effect) {
		case SET_UNIT:
			mode = (mode & UNITS_BASE_MASK) | opt->value;
			break;
		case SET_BASE:
			mode = (mode & UNITS_UNIT_MASK) | opt->value;
			break;
		case SET_BOTH:
			mode = opt->value;
			break;
		}
	}
	*argc = dst;
	argv[dst] = NULL;
	return mode;
}

const char *pretty_size_mode(u64 size, unsigned int mode)
{
	static __thread char bufs[PRETTY_SIZE_BUFFERS][32];
	static __thread unsigned int next;
	char *buf = bufs[next++ % PRETTY_SIZE_BUFFERS];
	const char * const *suffix = suffix_binary;
	unsigned int unit = mode & UNITS_UNIT_MASK;
	u64 mult = 1024;
	u64 div = 1;
	int power = 0;

	if (unit == UNITS_RAW) {
		snprintf(buf, sizeof(bufs[0]), "%llu", (unsigned long long)size);
		return buf;
	}
	if ((mode & UNITS_BASE_MASK) == UNITS_DECIMAL) {
		suffix = suffix_decimal;
		mult = 1000;
	}
	if (unit >= UNITS_KBYTES && unit <= UNITS_TBYTES) {
		for (power = 0; power <= (int)(unit - UNITS_KBYTES); power++)
			div *= mult;
	} else {
		/* Human: the largest unit that keeps the value at least 1. */
		while (power < (int)ARRAY_SIZE(suffix_binary) - 1 &&
		       size / div >= mult) {
			div *= mult;
			power++;
		}
	}
	/* long double keeps all 64 bits of size where the platform allows. */
	snprintf(buf, sizeof(bufs[0]), "%.2Lf%s",
		 (long double)size / (long double)div, suffix[power]);
	return buf;
}

const char *pretty_size(u64 size)
{
	return pretty_size_mode(size, UNITS_DEFAULT);
}

/* Parse one size at s; *end gets the first character not consumed. */
static int parse_size_prefix(const char *s, u64 *out, const char **end)
{
	unsigned int shift = 0;
	u64 value = 0;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	for (; isdigit((unsigned char)*s); s++) {
		unsigned int digit = *s - '0';

		if (value > (UINT64_MAX - digit) / 10)
			return -EINVAL;
		value = value * 10 + digit;
	}
	switch (tolower((unsigned char)*s)) {
	case 'e': shift = 60; break;
	case 'p': shift = 50; break;
	case 't': shift = 40; break;
	case 'g': shift = 30; break;
	case 'm': shift = 20; break;
	case 'k': shift = 10; break;
	default: break;
	}
	if (shift) {
		if (value > (UINT64_MAX >> shift))
			return -EINVAL;
		value <<= shift;
		s++;
	}
	*out = value;
	*end = s;
	return 0;
}

int parse_size(const char *s, u64 *out)
{
	const char *end;
	u64 value;
	int ret;

	ret = parse_size_prefix(s, &value, &end);
	if (ret)
		return ret;
	if (*end)
		return -EINVAL;
	*out = value;
	return 0;
}

int parse_range(const char *s, u64 *min, u64 *max)
{
	const char *end = s;
	u64 lo = 0, hi = UINT64_MAX;
	bool have_lo = false, have_hi = false;
	int ret;

	if (*s != '.') {
		ret = parse_size_prefix(s, &lo, &end);
		if (ret)
			return ret;
		have_lo = true;
	}
	if (*end == '\0') {
		if (!have_lo)
			return -EINVAL;
		hi = lo;
	} else {
		if (strncmp(end, "..", 2) != 0)
			return -EINVAL;
		end += 2;
		if (*end) {
			ret = parse_size_prefix(end, &hi, &end);
			if (ret || *end)
				return -EINVAL;
			have_hi = true;
		}
		if (!have_lo && !have_hi)
			return -EINVAL;
	}
	if (lo > hi)
		return -EINVAL;
	*min = lo;
	*max = hi;
	return 0;
}
