/*
 * Command dispatch through cmd_group tables, unique-prefix abbreviation, usage
 * formatting and argument-count checks shared by every mfs command.
 */
#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kernel-shared/format/kerncompat.h"
#include "common/help.h"
#include "common/messages.h"

#ifndef MFS_VERSION
#define MFS_VERSION "0.0"
#endif

/* Usage layout: options at column 4, their text at column 30, width 98. */
#define USAGE_INDENT		4
#define USAGE_OPT_WIDTH		24
#define USAGE_OPT_GAP		2
#define USAGE_TEXT_COL		(USAGE_INDENT + USAGE_OPT_WIDTH + USAGE_OPT_GAP)
#define USAGE_MAX_WIDTH		98
#define USAGE_LIST_WIDTH	16

enum { GETOPT_VAL_HELP = 256, GETOPT_VAL_VERSION, GETOPT_VAL_FORMAT };

static const char * const output_format_names[] = {
	[MFS_OUTPUT_TEXT] = "text",
	[MFS_OUTPUT_JSON] = "json",
};

int mfs_output_format = MFS_OUTPUT_TEXT;

/* Where dispatch is: "mfs device add" and the command it names. */
static const char *prog_name = "mfs";
static const struct cmd_group *top_group;
static char full_name[256] = "mfs";
static const struct cmd_struct *full_name_cmd;

static void push_full_name(const struct cmd_struct *cmd)
{
	size_t len = strlen(full_name);

	snprintf(full_name + len, sizeof(full_name) - len, " %s", cmd->token);
	full_name_cmd = cmd;
}

const char *cmd_full_name(const struct cmd_struct *cmd)
{
	static char guess[256];
	const char *syn;
	size_t i;

	if (cmd == full_name_cmd)
		return full_name;
	if (!cmd->usagestr || !cmd->usagestr[0])
		return cmd->token;
	/* Not dispatched (tests, direct calls): the synopsis up to its arguments. */
	syn = cmd->usagestr[0];
	for (i = 0; syn[i] && i < sizeof(guess) - 1; i++) {
		if (strchr("<[{|\n", syn[i]) || (i && syn[i - 1] == ' ' && syn[i] == '-'))
			break;
		guess[i] = syn[i];
	}
	while (i && guess[i - 1] == ' ')
		i--;
	guess[i] = '\0';
	return guess;
}

/* Usage printing */

static void print_pad(FILE *f, int n)
{
	while (n-- > 0)
		fputc(' ', f);
}

/*
 * Print @text from column @col, breaking between words so that no line
 * passes USAGE_MAX_WIDTH; continuation lines start at column @indent.
 */
static void print_wrapped(FILE *f, const char *text, int col, int indent)
{
	bool line_start = true;

	while (*text) {
		size_t len;

		if (*text == ' ') {
			text++;
			continue;
		}
		if (*text == '\n') {
			fputc('\n', f);
			print_pad(f, indent);
			col = indent;
			line_start = true;
			text++;
			continue;
		}
		len = strcspn(text, " \n");
		if (!line_start && col + 1 + (int)len > USAGE_MAX_WIDTH) {
			fputc('\n', f);
			print_pad(f, indent);
			col = indent;
			line_start = true;
		}
		if (!line_start) {
			fputc(' ', f);
			col++;
		}
		fwrite(text, 1, len, f);
		col += len;
		text += len;
		line_start = false;
	}
	fputc('\n', f);
}

static void print_option(FILE *f, const char *opt, int optlen, const char *text)
{
	print_pad(f, USAGE_INDENT);
	fwrite(opt, 1, optlen, f);
	if (optlen > USAGE_OPT_WIDTH) {
		fputc('\n', f);
		print_pad(f, USAGE_TEXT_COL);
	} else {
		print_pad(f, USAGE_TEXT_COL - USAGE_INDENT - optlen);
	}
	print_wrapped(f, text, USAGE_TEXT_COL, USAGE_TEXT_COL);
}

/* One usage entry after the synopsis: blank, OPTLINE() or free text. */
static void print_usage_line(FILE *f, const char *line)
{
	if (!*line) {
		fputc('\n', f);
	} else if (line[0] == USAGE_OPT_MARK[0]) {
		const char *opt = line + 1;
		const char *text = strchr(opt, USAGE_TEXT_MARK[0]);

		if (!text)
			text = opt + strlen(opt);
		print_option(f, opt, text - opt, *text ? text + 1 : text);
	} else {
		print_pad(f, USAGE_INDENT);
		fprintf(f, "%s\n", line);
	}
}

/*
 * Print the synopsis lines (up to the first ""), the first after @first and
 * the others, also those after an embedded newline, at column @indent.
 * Returns the entry after them.
 */
static const char * const *print_synopsis(FILE *f, const char * const *us,
					  const char *first, int indent)
{
	bool is_first = true;

	for (; *us && **us; us++) {
		const char *c;

		if (is_first)
			fputs(first, f);
		else
			print_pad(f, indent);
		is_first = false;
		for (c = *us; *c; c++) {
			fputc(*c, f);
			if (*c == '\n')
				print_pad(f, indent);
		}
		fputc('\n', f);
	}
	return us;
}

/* The first description line: the summary shown in group listings. */
static const char *cmd_summary(const struct cmd_struct *cmd)
{
	const char * const *us = cmd->usagestr;

	if (!us)
		return "";
	while (*us && **us)
		us++;
	while (*us && !**us)
		us++;
	if (!*us || **us == USAGE_OPT_MARK[0])
		return "";
	return *us;
}

static void print_command_usage(const struct cmd_struct *cmd, FILE *f)
{
	const char * const *us = cmd->usagestr;

	if (!us || !*us) {
		fprintf(f, "No usage for '%s'\n", cmd->token);
		return;
	}
	us = print_synopsis(f, us, "usage: ", strlen("usage: "));
	for (; *us; us++)
		print_usage_line(f, *us);
	if (cmd->flags & CMD_FORMAT_JSON) {
		fputc('\n', f);
		print_usage_line(f, "Global options:");
		print_usage_line(f, OPTLINE("--format TYPE",
					    "where TYPE is: text, json"));
	}
	fputc('\n', f);
}

static void print_group_listing(const struct cmd_group *grp, FILE *f)
{
	bool need_sep = false;
	bool first = true;
	int i;

	for (i = 0; grp->commands[i]; i++) {
		const struct cmd_struct *cmd = grp->commands[i];

		if (cmd->flags & CMD_HIDDEN)
			continue;
		if (cmd->next) {
			/* A nested group: its own block, blank lines around it. */
			if (!first)
				fputc('\n', f);
			print_group_listing(cmd->next, f);
			need_sep = true;
		} else {
			if (need_sep)
				fputc('\n', f);
			need_sep = false;
			if (cmd->usagestr && cmd->usagestr[0]) {
				print_synopsis(f, cmd->usagestr, "    ", 4);
				fprintf(f, "        %s\n", cmd_summary(cmd));
			}
		}
		first = false;
	}
}

static void print_group_synopsis(const struct cmd_group *grp, FILE *f)
{
	const char * const *us = grp->usagestr;

	if (us && *us) {
		fprintf(f, "usage: %s\n", *us++);
		while (*us)
			fprintf(f, "   or: %s\n", *us++);
	}
}

static void print_group_usage(const struct cmd_group *grp, FILE *f)
{
	print_group_synopsis(grp, f);
	fputc('\n', f);
	print_group_listing(grp, f);
	fputc('\n', f);
	if (grp->infostr)
		fprintf(f, "%s\n", grp->infostr);
}

/* Bare "mfs": one line per group and command, then the abbreviation hint. */
static void print_top_short_usage(const struct cmd_group *grp, FILE *f)
{
	int i;

	print_group_synopsis(grp, f);
	fprintf(f, "\nCommand groups:\n");
	for (i = 0; grp->commands[i]; i++) {
		const struct cmd_struct *cmd = grp->commands[i];

		if (!(cmd->flags & CMD_HIDDEN) && cmd->next)
			fprintf(f, "  %-*s  %s\n", USAGE_LIST_WIDTH, cmd->token,
				cmd->next->infostr ? cmd->next->infostr : "");
	}
	fprintf(f, "\nCommands:\n");
	for (i = 0; grp->commands[i]; i++) {
		const struct cmd_struct *cmd = grp->commands[i];

		if (!(cmd->flags & CMD_HIDDEN) && !cmd->next)
			fprintf(f, "  %-*s  %s\n", USAGE_LIST_WIDTH, cmd->token,
				cmd_summary(cmd));
	}
	fprintf(f, "\nFor an overview of a given command use '%s command --help'.\n",
		prog_name);
	fprintf(f, "Any command name can be shortened as far as it stays unambiguous,\n");
	fprintf(f, "however it is recommended to use full command names in scripts.\n");
}

static void print_usage_of(const struct cmd_struct *cmd, FILE *f)
{
	if (cmd->next && !cmd->usagestr)
		print_group_usage(cmd->next, f);
	else
		print_command_usage(cmd, f);
}

void usage(const struct cmd_struct *cmd, int error)
{
	print_usage_of(cmd, error ? stderr : stdout);
	exit(error ? 1 : 0);
}

void usage_unknown_option(const struct cmd_struct *cmd, char **argv)
{
	const char *name = cmd_full_name(cmd);
	const char *arg = optind > 0 ? argv[optind - 1] : "";

	fflush(stdout);
	/* glibc leaves optopt 0 for unknown long options, the option's val otherwise. */
	if (strncmp(arg, "--", 2) == 0 && optopt == 0)
		fprintf(stderr, "%s: unrecognized option '%s'\n", name, arg);
	else if (strncmp(arg, "--", 2) == 0 && strchr(arg, '='))
		fprintf(stderr, "%s: option '%.*s' doesn't allow an argument\n",
			name, (int)(strchr(arg, '=') - arg), arg);
	else if (strncmp(arg, "--", 2) == 0)
		fprintf(stderr, "%s: option '%s' requires an argument\n", name, arg);
	else if (optopt > 0 && optopt < 256 && isprint(optopt))
		fprintf(stderr, "%s: invalid option '%c'\n", name, optopt);
	else
		fprintf(stderr, "%s: unrecognized option '%s'\n", name, arg);
	fprintf(stderr, "Try '%s --help' for more information\n", name);
	exit(1);
}

/* Argument checks */

static const char *current_name(void)
{
	return full_name_cmd ? full_name : prog_name;
}

int check_argc_exact(int nargs, int expected)
{
	if (nargs == expected)
		return 0;
	fprintf(stderr, "%s: exactly %d argument%s expected, %d given\n",
		current_name(), expected, expected == 1 ? "" : "s", nargs);
	return 1;
}

int check_argc_min(int nargs, int expected)
{
	if (nargs >= expected)
		return 0;
	fprintf(stderr, "%s: not enough arguments: %d but at least %d expected\n",
		current_name(), nargs, expected);
	return 1;
}

int check_argc_max(int nargs, int expected)
{
	if (nargs <= expected)
		return 0;
	fprintf(stderr, "%s: too many arguments: %d but at most %d expected\n",
		current_name(), nargs, expected);
	return 1;
}

void clean_args_no_options(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "help", no_argument, NULL, GETOPT_VAL_HELP },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "", long_options, NULL)) != -1) {
		if (c == GETOPT_VAL_HELP)
			usage(cmd, 0);
		usage_unknown_option(cmd, argv);
	}
}

/* Dispatch */

const struct cmd_struct *cmd_lookup(const struct cmd_group *grp,
				    const char *token, int *ambiguous)
{
	const struct cmd_struct *found = NULL;
	size_t len = strlen(token);
	int matches = 0;
	int i;

	*ambiguous = 0;
	for (i = 0; grp->commands[i]; i++) {
		const struct cmd_struct *cmd = grp->commands[i];

		if (strcmp(cmd->token, token) == 0)
			return cmd;
		if (len && strncmp(cmd->token, token, len) == 0) {
			found = cmd;
			matches++;
		}
	}
	if (matches > 1) {
		*ambiguous = 1;
		return NULL;
	}
	return found;
}

/* cmd_lookup, reporting failures as "<name>: unknown/ambiguous token". */
static const struct cmd_struct *resolve_token(const struct cmd_group *grp,
					      const char *token,
					      const char *name)
{
	const struct cmd_struct *cmd;
	int ambiguous;
	int i;

	cmd = cmd_lookup(grp, token, &ambiguous);
	if (cmd)
		return cmd;
	fflush(stdout);
	if (!ambiguous) {
		fprintf(stderr, "%s: unknown token '%s'\n", name, token);
		print_group_usage(grp, stderr);
		return NULL;
	}
	fprintf(stderr, "%s: ambiguous token '%s'\n", name, token);
	fprintf(stderr, "\nDid you mean one of these ?\n");
	for (i = 0; grp->commands[i]; i++) {
		if (strncmp(grp->commands[i]->token, token, strlen(token)) == 0)
			fprintf(stderr, "\t%s\n", grp->commands[i]->token);
	}
	return NULL;
}

static int set_output_format(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(output_format_names); i++) {
		if (strcasecmp(name, output_format_names[i]) == 0) {
			mfs_output_format = i;
			return 0;
		}
	}
	error("invalid output format \"%s\"", name);
	fprintf(stderr, "\nOptions for --format are:");
	for (i = 0; i < ARRAY_SIZE(output_format_names); i++)
		fprintf(stderr, "%s%s", i ? ", " : " ", output_format_names[i]);
	fputc('\n', stderr);
	return -EINVAL;
}

/* Remove "--format X" / "--format=X" given after the command (before "--"). */
static int take_format_args(int *argc, char **argv)
{
	int src, dst;

	for (src = 1, dst = 1; src < *argc; src++) {
		const char *arg = argv[src];

		if (strcmp(arg, "--") == 0) {
			while (src < *argc)
				argv[dst++] = argv[src++];
			break;
		}
		if (strncmp(arg, "--format=", 9) == 0) {
			if (set_output_format(arg + 9))
				return -EINVAL;
			continue;
		}
		if (strcmp(arg, "--format") == 0) {
			if (src + 1 >= *argc) {
				error("option '--format' requires an argument");
				return -EINVAL;
			}
			if (set_output_format(argv[++src]))
				return -EINVAL;
			continue;
		}
		argv[dst++] = argv[src];
	}
	*argc = dst;
	argv[dst] = NULL;
	return 0;
}

/*
 * glibc keeps the argument ordering of the first getopt call after optind was
 * set to 0; a dummy call makes the next command's getopt_long() permute
 * again (after the "+" of the global options) and forget any half-parsed
 * option cluster.
 */
static void reset_getopt(void)
{
	static char arg0[] = "mfs";
	static char *dummy[] = { arg0, NULL };
	static const struct option none[] = { { NULL, 0, NULL, 0 } };

	optind = 0;
	getopt_long(1, dummy, "", none, NULL);
	optind = 1;
}

bool mfs_help_requested(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (strcmp(argv[i], "--help") == 0)
			return true;
	}
	return false;
}

static int run_command(const struct cmd_struct *cmd, int argc, char **argv)
{
	if (mfs_help_requested(argc, argv)) {
		print_command_usage(cmd, stdout);
		return 0;
	}
	if (cmd->flags & CMD_FORMAT_JSON) {
		if (take_format_args(&argc, argv))
			return 1;
	} else if (mfs_output_format != MFS_OUTPUT_TEXT) {
		error("output format %s is unsupported for this command",
		      output_format_names[mfs_output_format]);
		return 1;
	}
	argv[0] = full_name;
	reset_getopt();
	return cmd->fn(cmd, argc, argv);
}

/* argv[0] is the group's own token; argv[1] names the command to run. */
static int dispatch_group(const struct cmd_group *grp, int argc, char **argv)
{
	const struct cmd_struct *cmd;

	if (argc < 2) {
		print_group_usage(grp, stderr);
		return 1;
	}
	if (strcmp(argv[1], "--help") == 0) {
		print_group_usage(grp, stdout);
		return 0;
	}
	cmd = resolve_token(grp, argv[1], current_name());
	if (!cmd)
		return 1;
	push_full_name(cmd);
	argc--;
	argv++;
	if (cmd->next)
		return cmd->fn(cmd, argc, argv);
	return run_command(cmd, argc, argv);
}

int handle_command_group(const struct cmd_struct *cmd, int argc, char **argv)
{
	return dispatch_group(cmd->next, argc, argv);
}

int mfs_dispatch(const struct cmd_group *top, const char *progname,
		 int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "help", no_argument, NULL, GETOPT_VAL_HELP },
		{ "version", no_argument, NULL, GETOPT_VAL_VERSION },
		{ "format", required_argument, NULL, GETOPT_VAL_FORMAT },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 }
	};
	bool want_help = false, want_version = false;
	int c;

	prog_name = progname;
	top_group = top;
	snprintf(full_name, sizeof(full_name), "%s", progname);
	full_name_cmd = NULL;

	/* Commands report bad options themselves, via usage_unknown_option(). */
	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, "+:vq", long_options, NULL)) != -1) {
		switch (c) {
		case 'v':
			mfs_verbose++;
			break;
		case 'q':
			mfs_quiet = true;
			break;
		case GETOPT_VAL_FORMAT:
			if (set_output_format(optarg))
				return 1;
			break;
		case GETOPT_VAL_HELP:
			want_help = true;
			break;
		case GETOPT_VAL_VERSION:
			want_version = true;
			break;
		case ':':
			error("option '%s' requires an argument", argv[optind - 1]);
			return 1;
		default:
			/* -v and -q cannot fail, so optopt 'v' means "--verbose=x". */
			if (optopt > 0 && optopt < 256 && !strchr("vq", optopt))
				fprintf(stderr, "Unknown global option: -%c\n", optopt);
			else
				fprintf(stderr, "Unknown global option: %s\n",
					argv[optind - 1]);
			return 129;
		}
	}
	if (want_help) {
		print_group_usage(top, stdout);
		return 0;
	}
	if (want_version) {
		printf("mfs v%s\n", MFS_VERSION);
		return 0;
	}
	if (optind >= argc) {
		print_top_short_usage(top, stderr);
		return 1;
	}
	/* The last global option stands in for the group token at argv[0]. */
	argc -= optind - 1;
	argv += optind - 1;
	reset_getopt();
	return dispatch_group(top, argc, argv);
}

/* "mfs help [<group>...] [<command>]" */

static const char * const cmd_help_usage[] = {
	"mfs help [<group>...] [<command>]",
	"",
	"Display help information",
	NULL
};

static int cmd_help(const struct cmd_struct *unused __unused, int argc,
		    char **argv)
{
	const struct cmd_group *grp = top_group;
	const struct cmd_struct *cmd = NULL;
	int i;

	if (!grp)
		return 1;
	for (i = 1; i < argc && grp; i++) {
		cmd = resolve_token(grp, argv[i], prog_name);
		if (!cmd)
			return 1;
		grp = cmd->next;
	}
	if (!cmd)
		print_group_usage(top_group, stdout);
	else
		print_usage_of(cmd, stdout);
	return 0;
}
DEFINE_SIMPLE_COMMAND(help, "help");

static const char * const cmd_version_usage[] = {
	"mfs version",
	"",
	"Display mfs version",
	NULL
};

static int cmd_version(const struct cmd_struct *cmd, int argc, char **argv)
{
	clean_args_no_options(cmd, argc, argv);
	if (check_argc_exact(argc - optind, 0))
		return 1;
	printf("mfs v%s\n", MFS_VERSION);
	return 0;
}
DEFINE_SIMPLE_COMMAND(version, "version");
