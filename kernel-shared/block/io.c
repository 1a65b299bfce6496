/* Device I/O with fault injection and a write log for crash tests. */
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <linux/fs.h>
#include <linux/falloc.h>
#include "kernel-shared/block/io.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static int log_fd = -1;
static bool log_env_checked;

static const char * const op_names[MFS_IO_NR_OPS] = { "read", "write", "flush" };

static int write_all(int fd, const void *buf, size_t len);

/* One line to MFS_IO_COUNT's file, if it names one (O_APPEND: whole lines). */
static void count_note(const char *fmt, ...)
{
	const char *p = getenv("MFS_IO_COUNT");
	char line[PATH_MAX + 128];
	va_list ap;
	int fd, n;

	if (!p || !*p)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line))
		return;
	fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	write_all(fd, line, n);
	close(fd);
}

int mfs_io_log_open(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

	if (fd < 0)
		return -errno;
	pthread_mutex_lock(&log_lock);
	if (log_fd >= 0)
		close(log_fd);
	log_fd = fd;
	log_env_checked = true;
	pthread_mutex_unlock(&log_lock);
	return 0;
}

void mfs_io_log_close(void)
{
	pthread_mutex_lock(&log_lock);
	if (log_fd >= 0)
		close(log_fd);
	log_fd = -1;
	pthread_mutex_unlock(&log_lock);
}

static void log_env_open(void)
{
	const char *p;

	pthread_mutex_lock(&log_lock);
	if (log_env_checked) {
		pthread_mutex_unlock(&log_lock);
		return;
	}
	log_env_checked = true;
	pthread_mutex_unlock(&log_lock);
	p = getenv("MFS_WRITE_LOG");
	if (p && *p)
		mfs_io_log_open(p);
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= n;
	}
	return 0;
}

/* Log under one lock so records of concurrent writers never interleave. */
static void log_record(struct mfs_io_dev *dev, enum mfs_io_op op,
		       const void *buf, u64 len, u64 off)
{
	struct mfs_io_log_rec rec = {
		.magic = MFS_IO_LOG_REC_MAGIC,
		.op = op,
		.path_len = strlen(dev->path),
		.offset = off,
		.len = op == MFS_IO_WRITE ? len : 0,
	};

	pthread_mutex_lock(&log_lock);
	if (log_fd >= 0) {
		write_all(log_fd, &rec, sizeof(rec));
		write_all(log_fd, dev->path, rec.path_len);
		if (op == MFS_IO_WRITE)
			write_all(log_fd, buf, len);
	}
	pthread_mutex_unlock(&log_lock);
}

void mfs_io_set_fault(struct mfs_io_dev *dev, enum mfs_io_op op, u64 nth, bool sticky)
{
	pthread_mutex_lock(&dev->lock);
	dev->fail_nth[op] = nth ? dev->op_count[op] + nth : 0;
	dev->fail_sticky[op] = sticky;
	pthread_mutex_unlock(&dev->lock);
}

/* Parse MFS_FAULT entries that name this device (or every device). */
static void fault_env_apply(struct mfs_io_dev *dev)
{
	const char *env = getenv("MFS_FAULT");
	char *copy, *tok, *save = NULL;

	if (!env || !*env)
		return;
	copy = strdup(env);
	if (!copy)
		return;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *at = strchr(tok, '@');
		char opname[16];
		unsigned long long nth;
		char sticky = 0;
		int op;

		if (at) {
			*at = 0;
			if (!strstr(dev->path, at + 1))
				continue;
		}
		bool after_open = false;
		char *colon = strchr(tok, ':');

		if (colon && colon[1] == '+') {
			memmove(colon + 1, colon + 2, strlen(colon + 2) + 1);
			after_open = true;
		}
		if (sscanf(tok, "%15[a-z]:%llu:%c", opname, &nth, &sticky) < 2)
			continue;
		for (op = 0; op < MFS_IO_NR_OPS; op++) {
			if (strcmp(opname, op_names[op]))
				continue;
			if (after_open) {
				dev->fail_after_open[op] = nth;
				dev->fail_sticky[op] = sticky == 's';
			} else {
				mfs_io_set_fault(dev, op, nth, sticky == 's');
			}
		}
	}
	free(copy);
}

void mfs_io_arm_faults(struct mfs_io_dev *dev)
{
	int op;

	if (!dev)
		return;
	pthread_mutex_lock(&dev->lock);
	dev->armed = true;
	memcpy(dev->armed_at, dev->op_count, sizeof(dev->armed_at));
	pthread_mutex_unlock(&dev->lock);
	for (op = 0; op < MFS_IO_NR_OPS; op++)
		if (dev->fail_after_open[op])
			mfs_io_set_fault(dev, op, dev->fail_after_open[op], dev->fail_sticky[op]);
}

/* Count the op and say whether the fault hook wants it to fail. */
static bool fault_hit(struct mfs_io_dev *dev, enum mfs_io_op op)
{
	bool hit;
	u64 n;

	pthread_mutex_lock(&dev->lock);
	dev->op_count[op]++;
	hit = dev->fail_nth[op] &&
	      (dev->op_count[op] == dev->fail_nth[op] ||
	       (dev->fail_sticky[op] && dev->op_count[op] > dev->fail_nth[op]));
	n = dev->op_count[op] - dev->armed_at[op];
	pthread_mutex_unlock(&dev->lock);
	if (hit)
		count_note("fault %s %s %llu\n", dev->path, op_names[op], (unsigned long long)n);
	return hit;
}

int mfs_io_open(const char *path, bool writable, bool exclusive,
		struct mfs_io_dev **out)
{
	struct mfs_io_dev *dev;
	struct stat st;
	int flags = (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC;
	int fd, ret;

	log_env_open();
	if (stat(path, &st) < 0)
		return -errno;
	if (S_ISBLK(st.st_mode) && exclusive)
		flags |= O_EXCL;
	fd = open(path, flags);
	if (fd < 0)
		return -errno;
	if (!S_ISBLK(st.st_mode) && exclusive &&
	    flock(fd, (writable ? LOCK_EX : LOCK_SH) | LOCK_NB) < 0) {
		ret = errno == EWOULDBLOCK ? -EBUSY : -errno;
		close(fd);
		return ret;
	}
	dev = calloc(1, sizeof(*dev));
	if (!dev || !(dev->path = strdup(path))) {
		free(dev);
		close(fd);
		return -ENOMEM;
	}
	dev->fd = fd;
	dev->direct_fd = -1;
	dev->is_blockdev = S_ISBLK(st.st_mode);
	if (dev->is_blockdev) {
		if (ioctl(fd, BLKGETSIZE64, &dev->size) < 0)
			dev->size = 0;
	} else {
		dev->size = st.st_size;
	}
	pthread_mutex_init(&dev->lock, NULL);
	fault_env_apply(dev);
	*out = dev;
	return 0;
}

void mfs_io_close(struct mfs_io_dev *dev)
{
	if (!dev)
		return;
	if (dev->armed)
		count_note("count %s read %llu write %llu flush %llu\n", dev->path,
			   (unsigned long long)(dev->op_count[MFS_IO_READ] - dev->armed_at[MFS_IO_READ]),
			   (unsigned long long)(dev->op_count[MFS_IO_WRITE] - dev->armed_at[MFS_IO_WRITE]),
			   (unsigned long long)(dev->op_count[MFS_IO_FLUSH] - dev->armed_at[MFS_IO_FLUSH]));
	close(dev->fd);
	if (dev->direct_tried && dev->direct_fd >= 0)
		close(dev->direct_fd);
	pthread_mutex_destroy(&dev->lock);
	free(dev->path);
	free(dev);
}

/* preadv/pwritev until all of iov is done (iov is consumed). */
static int rw_vec(int fd, struct iovec *iov, int n, u64 off, bool write)
{
	while (n) {
		ssize_t done = write ? pwritev(fd, iov, n, off) : preadv(fd, iov, n, off);

		if (done < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (done == 0)
			return -EIO;
		off += done;
		while (n && (size_t)done >= iov->iov_len) {
			done -= iov->iov_len;
			iov++;
			n--;
		}
		if (n) {
			iov->iov_base = (char *)iov->iov_base + done;
			iov->iov_len -= done;
		}
	}
	return 0;
}

/*
 * Whether [off, off + len) lies on the device. Offsets come from chunk
 * maps and superblocks read off the disks: a crafted one must not read
 * another file's bytes or grow an image file by writing past its end.
 * A block device whose size could not be read (size 0) is not checked.
 */
static bool in_device(const struct mfs_io_dev *dev, u64 off, u64 len)
{
	if (dev->is_blockdev && !dev->size)
		return true;
	return len <= dev->size && off <= dev->size - len;
}

/* pread/pwrite of the whole buffer. */
static int rw_all(int fd, const void *buf, size_t len, u64 off, bool write)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rw_vec(fd, &iov, 1, off, write);
}

int mfs_io_read(struct mfs_io_dev *dev, void *buf, size_t len, u64 off)
{
	if (!in_device(dev, off, len))
		return -EIO;
	if (fault_hit(dev, MFS_IO_READ))
		return -EIO;
	return rw_all(dev->fd, buf, len, off, false);
}

int mfs_io_write(struct mfs_io_dev *dev, const void *buf, size_t len, u64 off)
{
	if (!in_device(dev, off, len))
		return -EIO;
	if (fault_hit(dev, MFS_IO_WRITE))
		return -EIO;
	log_record(dev, MFS_IO_WRITE, buf, len, off);
	return rw_all(dev->fd, buf, len, off, true);
}

/* The O_DIRECT twin of dev->fd, opened at first use (the same file, no path lookup). */
static int direct_fd(struct mfs_io_dev *dev)
{
	char path[64];

	pthread_mutex_lock(&dev->lock);
	if (!dev->direct_tried) {
		dev->direct_tried = true;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", dev->fd);
		dev->direct_fd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	}
	pthread_mutex_unlock(&dev->lock);
	return dev->direct_fd;
}

int mfs_io_write_direct(struct mfs_io_dev *dev, const void *buf, size_t len, u64 off)
{
	int fd, ret;

	if (((uintptr_t)buf | len | off) & (MFS_IO_DIRECT_ALIGN - 1) || (fd = direct_fd(dev)) < 0)
		return mfs_io_write(dev, buf, len, off);
	if (!in_device(dev, off, len))
		return -EIO;
	if (fault_hit(dev, MFS_IO_WRITE))
		return -EIO;
	log_record(dev, MFS_IO_WRITE, buf, len, off);
	ret = rw_all(fd, buf, len, off, true);
	/* a file system that refuses this O_DIRECT write takes it buffered */
	if (ret == -EINVAL)
		ret = rw_all(dev->fd, buf, len, off, true);
	return ret;
}

/*
 * One vectored transfer: O_DIRECT when direct and every piece is aligned,
 * else through the page cache - a write then has its writeback started at
 * once, so that the flush of the next commit finds it under way.
 */
static int vec_transfer(struct mfs_io_dev *dev, const struct iovec *iov, int n, u64 off,
			bool write, bool direct)
{
	struct iovec v[n];
	uintptr_t misalign = off;
	u64 pos = off, len = 0;
	int i, fd = -1, ret;

	for (i = 0; i < n; i++) {
		v[i] = iov[i];
		misalign |= (uintptr_t)iov[i].iov_base | iov[i].iov_len;
		len += iov[i].iov_len;
	}
	if (!in_device(dev, off, len))
		return -EIO;
	if (direct && !(misalign & (MFS_IO_DIRECT_ALIGN - 1)))
		fd = direct_fd(dev);
	if (fault_hit(dev, write ? MFS_IO_WRITE : MFS_IO_READ))
		return -EIO;
	if (write) {
		for (i = 0; i < n; pos += iov[i].iov_len, i++)
			log_record(dev, MFS_IO_WRITE, iov[i].iov_base, iov[i].iov_len, pos);
	}
	ret = rw_vec(fd >= 0 ? fd : dev->fd, v, n, off, write);
	/* a file system that refuses O_DIRECT gets it buffered */
	if (ret == -EINVAL && fd >= 0) {
		for (i = 0; i < n; i++)
			v[i] = iov[i];
		ret = rw_vec(dev->fd, v, n, off, write);
		fd = -1;
	}
	/* a hint: a file system without it writes back at the flush */
	if (!ret && write && fd < 0 && len)
		sync_file_range(dev->fd, off, len, SYNC_FILE_RANGE_WRITE);
	return ret;
}

int mfs_io_rw_vec_direct(struct mfs_io_dev *dev, const struct iovec *iov, int n, u64 off,
			 bool write)
{
	return vec_transfer(dev, iov, n, off, write, true);
}

int mfs_io_write_vec(struct mfs_io_dev *dev, const struct iovec *iov, int n, u64 off)
{
	return vec_transfer(dev, iov, n, off, true, false);
}

int mfs_io_flush(struct mfs_io_dev *dev)
{
	if (fault_hit(dev, MFS_IO_FLUSH))
		return -EIO;
	log_record(dev, MFS_IO_FLUSH, NULL, 0, 0);
	if (fdatasync(dev->fd) < 0)
		return -errno;
	return 0;
}

#define BULK_ALIGN	(2U << 20)	/* a huge page on x86-64 and arm64 (4 KiB pages) */

void *mfs_io_alloc_bulk(size_t bytes)
{
	void *p;

	if (posix_memalign(&p, bytes >= BULK_ALIGN ? BULK_ALIGN : MFS_IO_DIRECT_ALIGN, bytes))
		return NULL;
	if (bytes >= BULK_ALIGN)
		madvise(p, bytes, MADV_HUGEPAGE);	/* a hint: without it, small pages */
	return p;
}

struct thread_buf {
	void *p;
	size_t size;
};

static void thread_buf_free(void *arg)
{
	struct thread_buf *b = arg;

	free(b->p);
	free(b);
}

void *mfs_thread_buf_get(struct mfs_thread_buf *tb, size_t size)
{
	static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;
	struct thread_buf *b;

	if (__atomic_load_n(&tb->state, __ATOMIC_ACQUIRE) == 0) {
		pthread_mutex_lock(&setup_lock);
		if (tb->state == 0)
			__atomic_store_n(&tb->state,
					 pthread_key_create(&tb->key, thread_buf_free) ? -1 : 1,
					 __ATOMIC_RELEASE);
		pthread_mutex_unlock(&setup_lock);
	}
	if (tb->state < 0)
		return NULL;	/* no key left: out of a resource, as out of memory */
	b = pthread_getspecific(tb->key);
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (!b || pthread_setspecific(tb->key, b)) {
			free(b);
			return NULL;
		}
	}
	if (b->size < size) {
		free(b->p);
		b->p = mfs_io_alloc_bulk(size);
		b->size = b->p ? size : 0;
	}
	return b->p;
}

void mfs_io_readahead(struct mfs_io_dev *dev, u64 off, u64 len)
{
	posix_fadvise(dev->fd, off, len, POSIX_FADV_WILLNEED);
}

int mfs_io_discard(struct mfs_io_dev *dev, u64 off, u64 len)
{
	if (dev->is_blockdev) {
		u64 range[2] = { off, len };

		if (ioctl(dev->fd, BLKDISCARD, range) < 0)
			return -errno;
		return 0;
	}
	if (fallocate(dev->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len) < 0)
		return -errno;
	return 0;
}
