/*
 * The image fuzzing harness (fuzz-image.c) as replay.c calls it: the entry
 * point, and the image an input stands for, for the real programs to run
 * on (tests/security/crafted.sh).
 */
#ifndef MFS_FUZZ_IMAGE_H
#define MFS_FUZZ_IMAGE_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/*
 * The image of an input, as the harness runs it (checksums fixed when the
 * input's flags say so), in a sparse memfd: its descriptor, or -1 when the
 * input is no image (bad header, size out of range) or memory ran out.
 */
int fuzz_make_image(const uint8_t *data, size_t size, uint64_t *image_size);
/* The image in fd into a sparse file at path: 0, or -1 with errno set. */
int fuzz_save_image(int fd, uint64_t image_size, const char *path);

#endif
