/*
 * The device I/O layer's bounds: a read or write that does not lie wholly
 * on the device (an offset from a crafted chunk map or superblock) is
 * refused before it reaches the file, so it neither reads past the end
 * nor grows an image file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel-shared/block/io.h"
#include "unit.h"

#define DEV_SIZE	(64 * 1024)

static char path[64];

static struct mfs_io_dev *open_image(void)
{
	struct mfs_io_dev *dev = NULL;
	int fd;

	snprintf(path, sizeof(path), "%s/mfs-test-io.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	fd = mkstemp(path);

	if (fd < 0 || ftruncate(fd, DEV_SIZE)) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	close(fd);
	if (mfs_io_open(path, true, false, &dev))
		dev = NULL;
	return dev;
}

static off_t file_size(void)
{
	struct stat st;

	return stat(path, &st) ? -1 : st.st_size;
}

static void test_in_range(void)
{
	struct mfs_io_dev *dev = open_image();
	static char buf[8192];

	REQUIRE(dev);
	CHECK_EQ(mfs_io_write(dev, buf, 4096, DEV_SIZE - 4096), 0);
	CHECK_EQ(mfs_io_read(dev, buf, 4096, DEV_SIZE - 4096), 0);
	CHECK_EQ(mfs_io_read(dev, buf, 1, 0), 0);
	mfs_io_close(dev);
	unlink(path);
}

static void test_past_end(void)
{
	struct mfs_io_dev *dev = open_image();
	static char buf[8192] __attribute__((aligned(4096)));
	struct iovec iov[2] = { { buf, 4096 }, { buf + 4096, 4096 } };

	REQUIRE(dev);
	/* straddling the end, wholly past it, and offsets that wrap round */
	CHECK_EQ(mfs_io_read(dev, buf, 8192, DEV_SIZE - 4096), -EIO);
	CHECK_EQ(mfs_io_read(dev, buf, 1, DEV_SIZE), -EIO);
	CHECK_EQ(mfs_io_read(dev, buf, 4096, ~0ULL - 100), -EIO);
	CHECK_EQ(mfs_io_write(dev, buf, 1, DEV_SIZE), -EIO);
	CHECK_EQ(mfs_io_write(dev, buf, 8192, DEV_SIZE - 4096), -EIO);
	CHECK_EQ(mfs_io_write(dev, buf, 4096, ~0ULL - 100), -EIO);
	CHECK_EQ(mfs_io_write_direct(dev, buf, 4096, 1ULL << 40), -EIO);
	CHECK_EQ(mfs_io_rw_vec_direct(dev, iov, 2, DEV_SIZE - 4096, true), -EIO);
	CHECK_EQ(mfs_io_rw_vec_direct(dev, iov, 2, DEV_SIZE - 4096, false), -EIO);
	/* nothing reached the file */
	CHECK_EQ(file_size(), DEV_SIZE);
	mfs_io_close(dev);
	unlink(path);
}

int main(void)
{
	RUN(test_in_range);
	RUN(test_past_end);
	UNIT_EXIT();
}
