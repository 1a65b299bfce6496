/*
 * Runs the image fuzzing harness once on each file named (or each file of
 * each directory named), without libFuzzer: the test suite replays the
 * seed corpus and the regression inputs this way under ASan+UBSan. The TAP
 * plan first, then one line per file: a crash or a sanitizer report ends
 * the run short of its plan, which the suite counts as a failure, and the
 * "# replaying" line before it names the input.
 *
 *   fuzz-replay [-m N] [-w DIR] PATH...
 *
 * -m N: after each file, N mutants of it too, each a few bytes past the
 * input's header changed by a generator seeded from the file's name and
 * the mutant's number: the same mutants every run, with any compiler.
 * MFS_FUZZ_MUTANT=FILE: each mutant is written there before it runs, so
 * after a crash FILE holds the input that crashed.
 * -w DIR: nothing is run; the image each input and mutant stands for
 * (checksums fixed as the harness fixes them) is written into DIR as a
 * sparse file, NAME.img and NAME.mNNNN.img, for the real programs to run
 * on (tests/security/crafted.sh). An input that is no image writes none.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tests/fuzz/fuzz-image.h"

/* the harness input's header (fuzz-image.c): mutants keep it */
#define INPUT_HEADER 16

static char **paths;
static int nr_paths, nr_run, nr_failed;
static unsigned long nr_mutants;
static const char *image_dir;	/* -w: write the images there */

static uint64_t next_random(uint64_t *state)
{
	/* xorshift64*: small, and the same everywhere */
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * 0x2545f4914f6cdd1dULL;
}

static uint64_t name_seed(const char *path)
{
	const char *base = strrchr(path, '/');
	uint64_t h = 0xcbf29ce484222325ULL;	/* FNV-1a */

	for (base = base ? base + 1 : path; *base; base++)
		h = (h ^ (uint8_t)*base) * 0x100000001b3ULL;
	return h;
}

static void save_mutant(const uint8_t *data, size_t size)
{
	const char *path = getenv("MFS_FUZZ_MUTANT");
	FILE *f;

	if (!path || !(f = fopen(path, "wb")))
		return;
	if (fwrite(data, 1, size, f) != size)
		perror(path);
	fclose(f);
}

/* Mutant n of data into buf: one to eight bytes set, flipped or bumped. */
static void mutate(const char *path, unsigned long n, const uint8_t *data, size_t size,
		   uint8_t *buf)
{
	static const uint8_t values[] = { 0x00, 0x01, 0x7f, 0x80, 0xff };
	uint64_t state = name_seed(path) ^ (n + 1) * 0x9e3779b97f4a7c15ULL;
	int i, k;

	memcpy(buf, data, size);
	next_random(&state);
	k = 1 + next_random(&state) % 8;
	for (i = 0; i < k; i++) {
		size_t at = INPUT_HEADER + next_random(&state) % (size - INPUT_HEADER);
		uint64_t r = next_random(&state);

		switch (r % 3) {
		case 0: buf[at] = values[(r >> 8) % sizeof(values)]; break;
		case 1: buf[at] ^= 1U << ((r >> 8) % 8); break;
		default: buf[at] += 1 + (r >> 8) % 16; break;
		}
	}
}

/*
 * -w: the image of input data (mutant n of path, or path itself for n < 0)
 * into image_dir. 0, also for an input that stands for no image; -1 when
 * the image could not be written.
 */
static int write_image(const char *path, long n, const uint8_t *data, size_t size)
{
	const char *base = strrchr(path, '/');
	uint64_t image_size;
	char out[4096];
	int fd, ret, len;

	fd = fuzz_make_image(data, size, &image_size);
	if (fd < 0)
		return 0;
	base = base ? base + 1 : path;
	if (n < 0)
		len = snprintf(out, sizeof(out), "%s/%s.img", image_dir, base);
	else
		len = snprintf(out, sizeof(out), "%s/%s.m%04ld.img", image_dir, base, n);
	ret = len < (int)sizeof(out) ? fuzz_save_image(fd, image_size, out) : -1;
	if (ret)
		fprintf(stderr, "%s: %s\n", out, strerror(errno));
	close(fd);
	return ret;
}

/* One input (n < 0) or mutant: run by the harness, or its image written. */
static int run_one(const char *path, long n, const uint8_t *data, size_t size)
{
	if (image_dir)
		return write_image(path, n, data, size);
	LLVMFuzzerTestOneInput(data, size);
	return 0;
}

static int run_mutants(const char *path, const uint8_t *data, size_t size)
{
	int ret = 0;

	uint8_t *buf;
	unsigned long n;

	if (!nr_mutants || size <= INPUT_HEADER || !(buf = malloc(size)))
		return 0;
	for (n = 0; n < nr_mutants && !ret; n++) {
		mutate(path, n, data, size, buf);
		save_mutant(buf, size);
		ret = run_one(path, n, buf, size);
	}
	free(buf);
	return ret;
}

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
	} else if (run_one(path, -1, data, size) || run_mutants(path, data, size)) {
		printf("not ok %d - %s: an image could not be written\n", nr_run, path);
		nr_failed++;
	} else {
		if (nr_mutants)
			printf("ok %d - %s and %lu mutants\n", nr_run, path, nr_mutants);
		else
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
	int i, opt;

	while ((opt = getopt(argc, argv, "m:w:")) != -1) {
		if (opt == 'm') {
			nr_mutants = strtoul(optarg, NULL, 10);
		} else if (opt == 'w') {
			image_dir = optarg;
		} else {
			fprintf(stderr, "usage: fuzz-replay [-m MUTANTS] [-w DIR] PATH...\n");
			return 2;
		}
	}
	for (i = optind; i < argc; i++) {
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
