/* Unit display, size/range parsing and command-table dispatch of common/. */
#include <fcntl.h>
#include <getopt.h>
#include <unistd.h>
#include <sys/wait.h>

#include "tests/unit/unit.h"
#include "common/help.h"
#include "common/messages.h"
#include "common/units.h"

#define ARGV_MAX 16

/* Build a NULL-terminated, writable argv from a space-separated string. */
static int make_argv(char *buf, char **argv)
{
	int argc = 0;
	char *tok, *save;

	for (tok = strtok_r(buf, " ", &save); tok && argc < ARGV_MAX - 1;
	     tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;
	return argc;
}

static void test_pretty_size_binary(void)
{
	CHECK(!strcmp(pretty_size(0), "0.00B"));
	CHECK(!strcmp(pretty_size(1023), "1023.00B"));
	CHECK(!strcmp(pretty_size(1024), "1.00KiB"));
	CHECK(!strcmp(pretty_size(16384), "16.00KiB"));
	CHECK(!strcmp(pretty_size(256 * SZ_1M), "256.00MiB"));
	CHECK(!strcmp(pretty_size(2000398934016ULL), "1.82TiB"));
	CHECK(!strcmp(pretty_size(UINT64_MAX), "16.00EiB"));
	CHECK(!strcmp(pretty_size_mode(1536, UNITS_HUMAN_BINARY), "1.50KiB"));
}

static void test_pretty_size_modes(void)
{
	CHECK(!strcmp(pretty_size_mode(16384, UNITS_RAW), "16384"));
	CHECK(!strcmp(pretty_size_mode(0, UNITS_RAW | UNITS_DECIMAL), "0"));
	CHECK(!strcmp(pretty_size_mode(UINT64_MAX, UNITS_RAW),
		      "18446744073709551615"));
	CHECK(!strcmp(pretty_size_mode(999, UNITS_HUMAN_DECIMAL), "999.00B"));
	CHECK(!strcmp(pretty_size_mode(1000, UNITS_HUMAN_DECIMAL), "1.00kB"));
	CHECK(!strcmp(pretty_size_mode(16384, UNITS_HUMAN_DECIMAL), "16.38kB"));
	CHECK(!strcmp(pretty_size_mode(2000398934016ULL, UNITS_HUMAN_DECIMAL),
		      "2.00TB"));
	CHECK(!strcmp(pretty_size_mode(1024, UNITS_KBYTES | UNITS_BINARY),
		      "1.00KiB"));
	CHECK(!strcmp(pretty_size_mode(0, UNITS_KBYTES | UNITS_BINARY),
		      "0.00KiB"));
	CHECK(!strcmp(pretty_size_mode(SZ_1G, UNITS_MBYTES | UNITS_BINARY),
		      "1024.00MiB"));
	CHECK(!strcmp(pretty_size_mode(SZ_1G, UNITS_GBYTES | UNITS_DECIMAL),
		      "1.07GB"));
	CHECK(!strcmp(pretty_size_mode(SZ_1G, UNITS_TBYTES | UNITS_BINARY),
		      "0.00TiB"));
	CHECK(!strcmp(pretty_size_mode(1000000, UNITS_KBYTES | UNITS_DECIMAL),
		      "1000.00kB"));
}

static void test_pretty_size_buffers(void)
{
	const char *s[PRETTY_SIZE_BUFFERS];
	int i;

	/* Results stay valid until the ring wraps. */
	for (i = 0; i < PRETTY_SIZE_BUFFERS; i++)
		s[i] = pretty_size((u64)i * 1024);
	CHECK(!strcmp(s[0], "0.00B"));
	CHECK(!strcmp(s[1], "1.00KiB"));
	CHECK(!strcmp(s[PRETTY_SIZE_BUFFERS - 1], "15.00KiB"));
}

static unsigned int unit_mode_of(const char *args, int df_mode, char *rest)
{
	char buf[256], *argv[ARGV_MAX];
	unsigned int mode;
	int argc, i;

	snprintf(buf, sizeof(buf), "%s", args);
	argc = make_argv(buf, argv);
	mode = get_unit_mode_from_arg(&argc, argv, df_mode);
	rest[0] = '\0';
	for (i = 0; i < argc; i++) {
		strcat(rest, i ? " " : "");
		strcat(rest, argv[i]);
	}
	if (argv[argc] != NULL)
		strcat(rest, " <not NULL-terminated>");
	return mode;
}

static void test_unit_args(void)
{
	char rest[256];

	CHECK_EQ(unit_mode_of("df /mnt", 0, rest), UNITS_DEFAULT);
	CHECK(!strcmp(rest, "df /mnt"));
	CHECK_EQ(unit_mode_of("show --raw /mnt", 0, rest),
		 UNITS_RAW | UNITS_BINARY);
	CHECK(!strcmp(rest, "show /mnt"));
	/* Last one wins. */
	CHECK_EQ(unit_mode_of("show --raw --human-readable", 0, rest),
		 UNITS_HUMAN_BINARY);
	CHECK_EQ(unit_mode_of("show --kbytes --raw", 0, rest),
		 UNITS_RAW | UNITS_BINARY);
	CHECK_EQ(unit_mode_of("show --si --raw", 0, rest),
		 UNITS_RAW | UNITS_BINARY);
	/* --si/--iec change the base and keep the unit, in either order. */
	CHECK_EQ(unit_mode_of("show --si --mbytes /m", 0, rest),
		 UNITS_MBYTES | UNITS_DECIMAL);
	CHECK(!strcmp(rest, "show /m"));
	CHECK_EQ(unit_mode_of("show --gbytes --si", 0, rest),
		 UNITS_GBYTES | UNITS_DECIMAL);
	CHECK_EQ(unit_mode_of("show --si --iec --tbytes", 0, rest),
		 UNITS_TBYTES | UNITS_BINARY);
	CHECK_EQ(unit_mode_of("show --si", 0, rest), UNITS_HUMAN_DECIMAL);
	/* Nothing after "--" is a unit option. */
	CHECK_EQ(unit_mode_of("show --raw -- --si", 0, rest),
		 UNITS_RAW | UNITS_BINARY);
	CHECK(!strcmp(rest, "show -- --si"));
}

static void test_unit_args_short(void)
{
	char rest[256];

	/* Without df_mode the short forms belong to the command. */
	CHECK_EQ(unit_mode_of("show -b -m -h /mnt", 0, rest), UNITS_DEFAULT);
	CHECK(!strcmp(rest, "show -b -m -h /mnt"));

	CHECK_EQ(unit_mode_of("df -b /mnt", 1, rest), UNITS_RAW | UNITS_BINARY);
	CHECK(!strcmp(rest, "df /mnt"));
	CHECK_EQ(unit_mode_of("df -b -h", 1, rest), UNITS_HUMAN_BINARY);
	CHECK_EQ(unit_mode_of("df -H", 1, rest), UNITS_HUMAN_DECIMAL);
	CHECK_EQ(unit_mode_of("df -k", 1, rest), UNITS_KBYTES | UNITS_BINARY);
	CHECK_EQ(unit_mode_of("df -H -g", 1, rest), UNITS_GBYTES | UNITS_DECIMAL);
	CHECK_EQ(unit_mode_of("df -m -t /x -T", 1, rest),
		 UNITS_TBYTES | UNITS_BINARY);
	CHECK(!strcmp(rest, "df /x -T"));
	CHECK_EQ(unit_mode_of("df --raw -H", 1, rest), UNITS_HUMAN_DECIMAL);
}

static void test_parse_size(void)
{
	u64 v = 0;

	CHECK_EQ(parse_size("0", &v), 0);
	CHECK_EQ(v, 0);
	CHECK_EQ(parse_size("4096", &v), 0);
	CHECK_EQ(v, 4096);
	CHECK_EQ(parse_size("16k", &v), 0);
	CHECK_EQ(v, 16384);
	CHECK_EQ(parse_size("256M", &v), 0);
	CHECK_EQ(v, 256 * SZ_1M);
	CHECK_EQ(parse_size("1g", &v), 0);
	CHECK_EQ(v, SZ_1G);
	CHECK_EQ(parse_size("2T", &v), 0);
	CHECK_EQ(v, 2 * 1024 * SZ_1G);
	CHECK_EQ(parse_size("1p", &v), 0);
	CHECK_EQ(v, 1ULL << 50);
	CHECK_EQ(parse_size("15E", &v), 0);
	CHECK_EQ(v, 15ULL << 60);
	CHECK_EQ(parse_size("18446744073709551615", &v), 0);
	CHECK(v == UINT64_MAX);

	v = 7;
	CHECK_EQ(parse_size("", &v), -EINVAL);
	CHECK_EQ(parse_size("k", &v), -EINVAL);
	CHECK_EQ(parse_size("-1", &v), -EINVAL);
	CHECK_EQ(parse_size(" 1", &v), -EINVAL);
	CHECK_EQ(parse_size("1x", &v), -EINVAL);
	CHECK_EQ(parse_size("1kb", &v), -EINVAL);
	CHECK_EQ(parse_size("1.5g", &v), -EINVAL);
	CHECK_EQ(parse_size("16E", &v), -EINVAL);
	CHECK_EQ(parse_size("18446744073709551616", &v), -EINVAL);
	CHECK_EQ(parse_size("99999999999999999999999", &v), -EINVAL);
	CHECK_EQ(v, 7);
}

static void test_parse_range(void)
{
	u64 lo = 1, hi = 1;

	CHECK_EQ(parse_range("10..20", &lo, &hi), 0);
	CHECK_EQ(lo, 10);
	CHECK_EQ(hi, 20);
	CHECK_EQ(parse_range("5..", &lo, &hi), 0);
	CHECK_EQ(lo, 5);
	CHECK(hi == UINT64_MAX);
	CHECK_EQ(parse_range("..7", &lo, &hi), 0);
	CHECK_EQ(lo, 0);
	CHECK_EQ(hi, 7);
	CHECK_EQ(parse_range("42", &lo, &hi), 0);
	CHECK_EQ(lo, 42);
	CHECK_EQ(hi, 42);
	CHECK_EQ(parse_range("3..3", &lo, &hi), 0);
	CHECK_EQ(parse_range("1m..1g", &lo, &hi), 0);
	CHECK_EQ(lo, SZ_1M);
	CHECK_EQ(hi, SZ_1G);

	lo = hi = 99;
	CHECK_EQ(parse_range("", &lo, &hi), -EINVAL);
	CHECK_EQ(parse_range("..", &lo, &hi), -EINVAL);
	CHECK_EQ(parse_range("20..10", &lo, &hi), -EINVAL);
	CHECK_EQ(parse_range("1...2", &lo, &hi), -EINVAL);
	CHECK_EQ(parse_range("1.2", &lo, &hi), -EINVAL);
	CHECK_EQ(parse_range("a..b", &lo, &hi), -EINVAL);
	CHECK_EQ(parse_range("1..2x", &lo, &hi), -EINVAL);
	CHECK_EQ(parse_range("1-2", &lo, &hi), -EINVAL);
	CHECK_EQ(lo, 99);
	CHECK_EQ(hi, 99);
}

/* A small command tree to dispatch through. */
static const struct cmd_struct *last_run;
static int last_argc;
static char last_args[256];

static int fake_fn(const struct cmd_struct *cmd, int argc, char **argv)
{
	int i;

	last_run = cmd;
	last_argc = argc;
	last_args[0] = '\0';
	for (i = 1; i < argc; i++) {
		strcat(last_args, i > 1 ? " " : "");
		strcat(last_args, argv[i]);
	}
	return 0;
}

static const char * const fake_usage[] = {
	"mfs fake [options] <path>",
	"",
	"Do nothing, with options.",
	"",
	OPTLINE("-f|--force", "force"),
	OPTLINE("--a-rather-long-option-name <arg>", "text on the next line"),
	OPTLINE("-x", "a long text that goes on and on, word after word, until "
		"it has to wrap before column ninety-nine of the terminal"),
	NULL
};

#define FAKE(name, flags) \
	static const struct cmd_struct cmd_struct_##name = { \
		#name, fake_fn, fake_usage, NULL, flags }
FAKE(receive, 0);
FAKE(replace, 0);
FAKE(rescue, 0);
FAKE(restore, 0);
FAKE(balance, 0);
FAKE(add, 0);
FAKE(stats, CMD_FORMAT_JSON);
FAKE(delete, CMD_HIDDEN);
FAKE(re, 0);

static const char * const device_usage[] = { "mfs device <command>", NULL };
static const struct cmd_group device_cmd_group = {
	device_usage, "manage devices", {
		&cmd_struct_add, &cmd_struct_stats, &cmd_struct_delete, NULL
	}
};
static DEFINE_GROUP_COMMAND(device, "device");

static const char * const top_usage[] = { "mfs [global] <group> <command>", NULL };
static const struct cmd_group top_cmd_group = {
	top_usage, NULL, {
		&cmd_struct_receive, &cmd_struct_replace, &cmd_struct_rescue,
		&cmd_struct_restore, &cmd_struct_balance, &cmd_struct_device,
		NULL
	}
};
static const struct cmd_group exact_cmd_group = {
	top_usage, NULL, {
		&cmd_struct_receive, &cmd_struct_re, &cmd_struct_replace, NULL
	}
};

static void test_cmd_lookup(void)
{
	int amb = -1;

	CHECK(cmd_lookup(&top_cmd_group, "balance", &amb) == &cmd_struct_balance);
	CHECK_EQ(amb, 0);
	CHECK(cmd_lookup(&top_cmd_group, "bal", &amb) == &cmd_struct_balance);
	CHECK(cmd_lookup(&top_cmd_group, "b", &amb) == &cmd_struct_balance);
	CHECK(cmd_lookup(&top_cmd_group, "rece", &amb) == &cmd_struct_receive);
	CHECK(cmd_lookup(&top_cmd_group, "resc", &amb) == &cmd_struct_rescue);
	CHECK(cmd_lookup(&top_cmd_group, "rest", &amb) == &cmd_struct_restore);

	CHECK(cmd_lookup(&top_cmd_group, "re", &amb) == NULL);
	CHECK_EQ(amb, 1);
	CHECK(cmd_lookup(&top_cmd_group, "res", &amb) == NULL);
	CHECK_EQ(amb, 1);

	CHECK(cmd_lookup(&top_cmd_group, "foo", &amb) == NULL);
	CHECK_EQ(amb, 0);
	CHECK(cmd_lookup(&top_cmd_group, "balancer", &amb) == NULL);
	CHECK_EQ(amb, 0);
	CHECK(cmd_lookup(&top_cmd_group, "", &amb) == NULL);

	/* An exact match wins over the tokens it is a prefix of. */
	CHECK(cmd_lookup(&exact_cmd_group, "re", &amb) == &cmd_struct_re);
	CHECK_EQ(amb, 0);
	CHECK(cmd_lookup(&exact_cmd_group, "r", &amb) == NULL);
	CHECK_EQ(amb, 1);
}

/* Run mfs_dispatch with stdout and stderr captured into @out. */
static int dispatch(const char *args, char *out, size_t outlen)
{
	char buf[256], *argv[ARGV_MAX];
	int pipefd[2], saved_out, saved_err, argc, ret;
	ssize_t n;

	snprintf(buf, sizeof(buf), "%s", args);
	argc = make_argv(buf, argv);
	last_run = NULL;
	mfs_output_format = MFS_OUTPUT_TEXT;

	fflush(stdout);
	fflush(stderr);
	if (pipe(pipefd))
		return -1;
	saved_out = dup(1);
	saved_err = dup(2);
	dup2(pipefd[1], 1);
	dup2(pipefd[1], 2);
	close(pipefd[1]);
	ret = mfs_dispatch(&top_cmd_group, "mfs", argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(saved_out, 1);
	dup2(saved_err, 2);
	close(saved_out);
	close(saved_err);
	n = read(pipefd[0], out, outlen - 1);
	out[n > 0 ? n : 0] = '\0';
	close(pipefd[0]);
	return ret;
}

static void test_dispatch(void)
{
	char out[8192];

	CHECK_EQ(dispatch("mfs bal /mnt", out, sizeof(out)), 0);
	CHECK(last_run == &cmd_struct_balance);
	CHECK(!strcmp(last_args, "/mnt"));

	CHECK_EQ(dispatch("mfs dev a -f /dev/x /mnt", out, sizeof(out)), 0);
	CHECK(last_run == &cmd_struct_add);
	CHECK(!strcmp(cmd_full_name(&cmd_struct_add), "mfs device add"));
	CHECK(!strcmp(last_args, "-f /dev/x /mnt"));

	/* Hidden commands resolve but are not listed. */
	CHECK_EQ(dispatch("mfs device del /mnt", out, sizeof(out)), 0);
	CHECK(last_run == &cmd_struct_delete);
	CHECK_EQ(dispatch("mfs device --help", out, sizeof(out)), 0);
	CHECK(strstr(out, "usage: mfs device <command>\n"));
	CHECK(strstr(out, "    mfs fake [options] <path>\n"
			  "        Do nothing, with options.\n"));
	CHECK(!strstr(out, "del"));

	CHECK_EQ(dispatch("mfs re", out, sizeof(out)), 1);
	CHECK(last_run == NULL);
	CHECK(!strcmp(out, "mfs: ambiguous token 're'\n\nDid you mean one of these ?\n"
		      "\treceive\n\treplace\n\trescue\n\trestore\n"));
	CHECK_EQ(dispatch("mfs foo", out, sizeof(out)), 1);
	CHECK(!strncmp(out, "mfs: unknown token 'foo'\nusage: mfs [global]", 40));
	CHECK_EQ(dispatch("mfs device", out, sizeof(out)), 1);
	CHECK(!strncmp(out, "usage: mfs device <command>\n", 28));
	CHECK_EQ(dispatch("mfs", out, sizeof(out)), 1);
	CHECK(strstr(out, "Any command name can be shortened"));

	/* -h is a command option (human units), never help. */
	CHECK_EQ(dispatch("mfs balance -h /mnt", out, sizeof(out)), 0);
	CHECK(!strcmp(last_args, "-h /mnt"));
	CHECK_EQ(dispatch("mfs balance /mnt --help", out, sizeof(out)), 0);
	CHECK(last_run == NULL);
	CHECK(!strncmp(out, "usage: mfs fake [options] <path>\n\n"
		       "    Do nothing, with options.\n\n", 60));

	/* Global options. */
	CHECK_EQ(dispatch("mfs --foo balance", out, sizeof(out)), 129);
	CHECK(!strcmp(out, "Unknown global option: --foo\n"));
	CHECK_EQ(dispatch("mfs -vx balance", out, sizeof(out)), 129);
	CHECK(!strcmp(out, "Unknown global option: -x\n"));
	CHECK_EQ(dispatch("mfs -h balance", out, sizeof(out)), 129);
	mfs_verbose = 0;
	CHECK_EQ(dispatch("mfs -v --verbose -q balance /mnt", out, sizeof(out)), 0);
	CHECK_EQ(mfs_verbose, 2);
	CHECK(mfs_quiet);
	mfs_verbose = 0;
	mfs_quiet = false;
	CHECK_EQ(dispatch("mfs --version", out, sizeof(out)), 0);
	CHECK(!strncmp(out, "mfs v", 5));
	CHECK_EQ(dispatch("mfs --help", out, sizeof(out)), 0);
	CHECK(!strncmp(out, "usage: mfs [global]", 19));

	CHECK_EQ(dispatch("mfs --format xml balance", out, sizeof(out)), 1);
	CHECK(!strncmp(out, "ERROR: invalid output format \"xml\"\n", 35));
	CHECK_EQ(dispatch("mfs --format json balance /mnt", out, sizeof(out)), 1);
	CHECK(!strcmp(out, "ERROR: output format json is unsupported for this command\n"));
	CHECK(last_run == NULL);
	CHECK_EQ(dispatch("mfs --format json device stats /mnt", out, sizeof(out)), 0);
	CHECK(last_run == &cmd_struct_stats);
	CHECK_EQ(mfs_output_format, MFS_OUTPUT_JSON);
	CHECK_EQ(dispatch("mfs device stats --format json /mnt", out, sizeof(out)), 0);
	CHECK_EQ(mfs_output_format, MFS_OUTPUT_JSON);
	CHECK(!strcmp(last_args, "/mnt"));
	CHECK_EQ(last_argc, 2);
	CHECK_EQ(dispatch("mfs device stats /mnt --format=text", out, sizeof(out)), 0);
	CHECK_EQ(mfs_output_format, MFS_OUTPUT_TEXT);
	CHECK(!strcmp(last_args, "/mnt"));
}

/* Usage layout: options at column 4, text at 30, wrapped before column 99. */
static void test_usage_layout(void)
{
	char out[8192], *line;
	bool wrapped = false;

	CHECK_EQ(dispatch("mfs balance --help", out, sizeof(out)), 0);
	CHECK(strstr(out, "\n    -f|--force                force\n"));
	CHECK(strstr(out, "\n    --a-rather-long-option-name <arg>\n"
			  "                              text on the next line\n"));
	for (line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		CHECK(strlen(line) <= 98);
		if (!strncmp(line, "                              wrap before", 41))
			wrapped = true;
	}
	CHECK(wrapped);
}

/* usage_unknown_option() and check_argc_*() print the full command name. */
static int child_output(void (*fn)(void), char *out, size_t outlen)
{
	int pipefd[2], status;
	ssize_t n, total = 0;
	pid_t pid;

	if (pipe(pipefd))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		dup2(pipefd[1], 1);
		dup2(pipefd[1], 2);
		fn();
		exit(0);
	}
	close(pipefd[1]);
	while ((n = read(pipefd[0], out + total, outlen - 1 - total)) > 0)
		total += n;
	out[total] = '\0';
	close(pipefd[0]);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void bad_long_option(void)
{
	static const struct option opts[] = {
		{ "force", no_argument, NULL, 'f' }, { NULL, 0, NULL, 0 }
	};
	char buf[] = "add --foo /mnt", *argv[ARGV_MAX];
	int argc = make_argv(buf, argv);

	optind = 1;
	opterr = 0;
	while (getopt_long(argc, argv, "f", opts, NULL) != -1)
		usage_unknown_option(&cmd_struct_add, argv);
}

static void bad_short_option(void)
{
	char buf[] = "add -x /mnt", *argv[ARGV_MAX];
	int argc = make_argv(buf, argv);

	optind = 1;
	opterr = 0;
	while (getopt(argc, argv, "f") != -1)
		usage_unknown_option(&cmd_struct_add, argv);
}

static void bad_argc(void)
{
	exit(check_argc_exact(2, 1) + check_argc_min(1, 2) +
	     check_argc_max(3, 2));
}

static void test_usage_errors(void)
{
	char out[4096];

	/* The last dispatch left "mfs device stats" as the current command. */
	CHECK_EQ(dispatch("mfs device add /mnt", out, sizeof(out)), 0);
	CHECK_EQ(child_output(bad_long_option, out, sizeof(out)), 1);
	CHECK(!strcmp(out, "mfs device add: unrecognized option '--foo'\n"
		      "Try 'mfs device add --help' for more information\n"));
	CHECK_EQ(child_output(bad_short_option, out, sizeof(out)), 1);
	CHECK(!strcmp(out, "mfs device add: invalid option 'x'\n"
		      "Try 'mfs device add --help' for more information\n"));
	CHECK_EQ(child_output(bad_argc, out, sizeof(out)), 3);
	CHECK(!strcmp(out,
		"mfs device add: exactly 1 argument expected, 2 given\n"
		"mfs device add: not enough arguments: 1 but at least 2 expected\n"
		"mfs device add: too many arguments: 3 but at most 2 expected\n"));
}

int main(void)
{
	RUN(test_pretty_size_binary);
	RUN(test_pretty_size_modes);
	RUN(test_pretty_size_buffers);
	RUN(test_unit_args);
	RUN(test_unit_args_short);
	RUN(test_parse_size);
	RUN(test_parse_range);
	RUN(test_cmd_lookup);
	RUN(test_dispatch);
	RUN(test_usage_layout);
	RUN(test_usage_errors);
	UNIT_EXIT();
}
