/*
 * The device I/O layer's bounds: a read or write that does not lie wholly
 * on the device (an offset from a crafted chunk map or superblock) is
 * refused before it reaches the file, so it neither reads past the end
 * nor grows an image file. The per-thread buffers of bulk transfers: kept
 * from one call to the next, one per thread, grown when asked for more,
 * freed when the thread ends (the ASan run sees a leak otherwise).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
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

static struct mfs_thread_buf tbuf = MFS_THREAD_BUF_INIT;

static void *other_thread(void *arg)
{
	u8 *p = mfs_thread_buf_get(&tbuf, 4096);

	if (p)
		p[4095] = 1;	/* writable, its own */
	*(void **)arg = p;
	return NULL;
}

static void test_thread_buf(void)
{
	u8 *a, *b, *c;
	void *other = NULL;
	pthread_t t;

	a = mfs_thread_buf_get(&tbuf, 8192);
	REQUIRE(a);
	CHECK_EQ((uintptr_t)a % 4096, 0);
	a[8191] = 1;
	/* the same buffer again, for as much or less */
	b = mfs_thread_buf_get(&tbuf, 100);
	CHECK(b == a);
	CHECK(mfs_thread_buf_get(&tbuf, 8192) == a);
	/* more: a bigger one, aligned, writable to its end */
	c = mfs_thread_buf_get(&tbuf, 3 << 20);
	REQUIRE(c);
	CHECK_EQ((uintptr_t)c % 4096, 0);
	c[(3 << 20) - 1] = 1;
	/* another thread has its own (freed as it ends) */
	REQUIRE(pthread_create(&t, NULL, other_thread, &other) == 0);
	pthread_join(t, NULL);
	CHECK(other != NULL);
	CHECK(other != c);
	CHECK(mfs_thread_buf_get(&tbuf, 1) == c);
}

int main(void)
{
	RUN(test_in_range);
	RUN(test_past_end);
	RUN(test_thread_buf);
	UNIT_EXIT();
}
