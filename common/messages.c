/* Error and warning helpers: one prefix, one stream, for every command. */
#include <stdarg.h>
#include <stdio.h>

#include "common/messages.h"

int mfs_verbose;
bool mfs_quiet;

static void print_prefixed(const char *prefix, const char *fmt, va_list ap)
{
	/* Keep stdout and stderr in order when both go to one terminal. */
	fflush(stdout);
	fputs(prefix, stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	print_prefixed("ERROR: ", fmt, ap);
	va_end(ap);
}

void warning(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	print_prefixed("WARNING: ", fmt, ap);
	va_end(ap);
}

bool ask_yes(FILE *out, const char *question)
{
	char answer[16];

	fprintf(out, "%s [y/N]: ", question);
	fflush(out);
	if (!fgets(answer, sizeof(answer), stdin))
		return false;
	return answer[0] == 'y' || answer[0] == 'Y';
}
