/*
 * Runs the image fuzzing harness once on each file named (or each file of
 * each directory named), without libFuzzer: the test suite replays the
 * seed corpus and the regression inputs this way under ASan+UBSan. The TAP
 * plan first, then one line per file: a crash or a sanitizer report ends
 * the run short of its plan, which the suite counts as a failure, and the
 * "# replaying" line before it names the input.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char **paths;
static int nr_paths, nr_run, nr_failed;

static void add_path(const char *path)
{
	char **p = realloc(paths, (nr_paths + 1) * sizeof(*p));

	if (!p || !(p[nr_paths] = strdup(path))) {
		perror("replay");
		exit(2);
	}
	paths = p;
	nr_paths++;
}

static void replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *data = NULL;
	long size = -1;

	if (f && !fseek(f, 0, SEEK_END))
		size = ftell(f);
	if (size >= 0 && !fseek(f, 0, SEEK_SET))
		data = malloc(size ? size : 1);
	nr_run++;
	printf("# replaying %s\n", path);
	fflush(stdout);
	if (!data || fread(data, 1, size, f) != (size_t)size) {
		printf("not ok %d - %s: cannot be read\n", nr_run, path);
		nr_failed++;
	} else {
		LLVMFuzzerTestOneInput(data, size);
		printf("ok %d - %s\n", nr_run, path);
	}
	fflush(stdout);
	free(data);
	if (f)
		fclose(f);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static void add_dir(const char *dir)
{
	struct dirent **names;
	int n, i;

	n = scandir(dir, &names, NULL, by_name);
	for (i = 0; i < n; i++) {
		char path[4096];

		if (names[i]->d_name[0] != '.' &&
		    snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name) < (int)sizeof(path))
			add_path(path);
		free(names[i]);
	}
	free(names);
}

int main(int argc, char **argv)
{
	struct stat st;
	int i;

	for (i = 1; i < argc; i++) {
		if (!stat(argv[i], &st) && S_ISDIR(st.st_mode))
			add_dir(argv[i]);
		else
			add_path(argv[i]);
	}
	printf("1..%d\n", nr_paths);
	for (i = 0; i < nr_paths; i++) {
		replay_file(paths[i]);
		free(paths[i]);
	}
	free(paths);
	return nr_failed ? 1 : 0;
}
