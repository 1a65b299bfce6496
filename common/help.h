/*
 * Command tables, dispatch with unique-prefix abbreviation, usage text and
 * argument-count checks, in the manner of btrfs-progs.
 */
#ifndef MFS_COMMON_HELP_H
#define MFS_COMMON_HELP_H

#include <stdbool.h>
#include <stddef.h>

struct cmd_struct;
struct cmd_group;

/* argv[0] is the command's token; options are parsed from optind == 1. */
typedef int (*cmd_fn)(const struct cmd_struct *cmd, int argc, char **argv);

struct cmd_struct {
	const char *token;
	cmd_fn fn;
	/*
	 * [0] synopsis, optionally more synopsis lines, then "", description
	 * lines (the first one is the summary shown in group listings), "",
	 * OPTLINE() entries; NULL-terminated. Free text may appear among the
	 * options and is indented like the description.
	 */
	const char * const *usagestr;
	const struct cmd_group *next;	/* set for a group of commands */
	unsigned int flags;
};

#define CMD_HIDDEN		1U	/* resolvable, but not listed */
#define CMD_FORMAT_JSON		2U	/* command accepts --format json */

struct cmd_group {
	const char * const *usagestr;	/* synopsis lines, NULL-terminated */
	const char *infostr;		/* printed after the listing */
	const struct cmd_struct * const commands[];	/* NULL-terminated */
};

#define DEFINE_COMMAND(name, _token, _fn, _usagestr, _next, _flags)	\
	const struct cmd_struct cmd_struct_##name = {			\
		.token = (_token),					\
		.fn = (_fn),						\
		.usagestr = (_usagestr),				\
		.next = (_next),					\
		.flags = (_flags),					\
	}
#define DEFINE_SIMPLE_COMMAND(name, _token)				\
	DEFINE_COMMAND(name, _token, cmd_##name, cmd_##name##_usage, NULL, 0)
#define DEFINE_GROUP_COMMAND(name, _token)				\
	DEFINE_COMMAND(name, _token, handle_command_group, NULL,	\
		       &name##_cmd_group, 0)

/*
 * One option line in a usage array. Printed as 4 spaces, the option padded
 * to 24 columns and 2 spaces, then the text (on the next line at column 30
 * when the option is longer), wrapped before column 99.
 */
#define USAGE_OPT_MARK		"\001"
#define USAGE_TEXT_MARK		"\002"
#define OPTLINE(opt, text)	USAGE_OPT_MARK opt USAGE_TEXT_MARK text

/* --format: set by dispatch before a command runs. */
#define MFS_OUTPUT_TEXT		0
#define MFS_OUTPUT_JSON		1
extern int mfs_output_format;

/*
 * Top level: parse the global options in argv[1..] (--format, -v, -q,
 * --help, --version), then dispatch the rest through @top. Returns the exit
 * code. @progname ("mfs") starts every full command name.
 */
int mfs_dispatch(const struct cmd_group *top, const char *progname,
		 int argc, char **argv);
/* The fn of a group command: argv[0] is the group token, argv[1] is looked up. */
int handle_command_group(const struct cmd_struct *cmd, int argc, char **argv);

/*
 * Find @token in @grp: an exact match wins, otherwise a unique prefix. NULL
 * when unknown or ambiguous; *ambiguous tells which.
 */
const struct cmd_struct *cmd_lookup(const struct cmd_group *grp,
				    const char *token, int *ambiguous);

/* "mfs device add": the resolved tokens of the command being run. */
const char *cmd_full_name(const struct cmd_struct *cmd);

/* Whether argv[1..] holds "--help" before any "--". */
bool mfs_help_requested(int argc, char **argv);

/* Print the usage; error != 0: to stderr and exit(1), else stdout and exit(0). */
__attribute__((noreturn))
void usage(const struct cmd_struct *cmd, int error);
/* After getopt returned '?': report the bad option and exit(1). */
__attribute__((noreturn))
void usage_unknown_option(const struct cmd_struct *cmd, char **argv);

/* Print "<full name>: ..." to stderr and return nonzero on a bad count. */
int check_argc_exact(int nargs, int expected);
int check_argc_min(int nargs, int expected);
int check_argc_max(int nargs, int expected);

/* For commands without options: accepts only --help and "--". */
void clean_args_no_options(const struct cmd_struct *cmd, int argc, char **argv);

/* "help" and "version" commands for the top-level group. */
extern const struct cmd_struct cmd_struct_help;
extern const struct cmd_struct cmd_struct_version;

#endif
