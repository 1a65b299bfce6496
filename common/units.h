/* Size display modes (--raw, --human-readable, --si, -k ...) and size parsing. */
#ifndef MFS_COMMON_UNITS_H
#define MFS_COMMON_UNITS_H

#include "kernel-shared/format/kerncompat.h"

/*
 * A unit mode is a unit (low byte) combined with a base (next byte). The base
 * is ignored for UNITS_RAW.
 */
#define UNITS_RAW		1U
#define UNITS_HUMAN		2U
#define UNITS_KBYTES		3U
#define UNITS_MBYTES		4U
#define UNITS_GBYTES		5U
#define UNITS_TBYTES		6U
#define UNITS_UNIT_MASK		0xffU

#define UNITS_BINARY		(1U << 8)
#define UNITS_DECIMAL		(2U << 8)
#define UNITS_BASE_MASK		(0xffU << 8)

#define UNITS_HUMAN_BINARY	(UNITS_HUMAN | UNITS_BINARY)
#define UNITS_HUMAN_DECIMAL	(UNITS_HUMAN | UNITS_DECIMAL)
#define UNITS_DEFAULT		UNITS_HUMAN_BINARY

/*
 * Remove the unit options from argv[1..*argc-1] (up to "--"), shrink *argc
 * and return the resulting mode; the last option wins. With df_mode the
 * short forms -b -h -H -k -m -g -t are recognised as well.
 */
unsigned int get_unit_mode_from_arg(int *argc, char **argv, int df_mode);

/*
 * "%.2f" and a suffix ("16.00KiB", "0.00B"), or "%llu" for UNITS_RAW. The
 * result lives in one of a ring of per-thread buffers, so up to
 * PRETTY_SIZE_BUFFERS results may be used in one printf.
 */
#define PRETTY_SIZE_BUFFERS	16
const char *pretty_size_mode(u64 size, unsigned int mode);
const char *pretty_size(u64 size);

/* Digits with an optional k m g t p e suffix (any case, base 1024). */
int parse_size(const char *s, u64 *out);

/*
 * "a..b", "a..", "..b" or "a" (meaning a..a), each bound as for parse_size.
 * A missing lower bound is 0, a missing upper bound is U64_MAX.
 */
int parse_range(const char *s, u64 *min, u64 *max);

/*
 * The usage lines of the unit options get_unit_mode_from_arg takes with
 * short forms (filesystem df, usage, status; device usage).
 */
#define UNIT_OPTLINES \
	OPTLINE("-b|--raw", "show raw numbers in bytes"), \
	OPTLINE("-h|--human-readable", "show human friendly numbers, base 1024 (default)"), \
	OPTLINE("-H", "show human friendly numbers, base 1000"), \
	OPTLINE("--iec", "use 1024 as a base (KiB, MiB, GiB, TiB)"), \
	OPTLINE("--si", "use 1000 as a base (kB, MB, GB, TB)"), \
	OPTLINE("-k|--kbytes", "show sizes in KiB, or kB with --si"), \
	OPTLINE("-m|--mbytes", "show sizes in MiB, or MB with --si"), \
	OPTLINE("-g|--gbytes", "show sizes in GiB, or GB with --si"), \
	OPTLINE("-t|--tbytes", "show sizes in TiB, or TB with --si")

#endif
