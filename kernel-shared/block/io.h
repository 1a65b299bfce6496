/*
 * The device I/O layer: every engine read, write and flush goes through here,
 * so tests can fail the Nth operation of a device and log every write/flush.
 */
#ifndef MFS_IO_H
#define MFS_IO_H

#include <sys/uio.h>
#include <pthread.h>
#include "kernel-shared/format/kerncompat.h"

enum mfs_io_op { MFS_IO_READ, MFS_IO_WRITE, MFS_IO_FLUSH, MFS_IO_NR_OPS };

struct mfs_io_dev {
	int fd;
	char *path;
	u64 size;
	bool is_blockdev;
	int direct_fd;			/* O_DIRECT twin of fd (mfs_io_write_direct); -1: none */
	bool direct_tried;
	u64 op_count[MFS_IO_NR_OPS];	/* operations issued, for fault hooks */
	u64 fail_nth[MFS_IO_NR_OPS];	/* 0 = never; else fail the Nth op (1-based) */
	bool fail_sticky[MFS_IO_NR_OPS];/* keep failing from the Nth on */
	u64 fail_after_open[MFS_IO_NR_OPS];	/* N counted from mfs_io_arm_faults; 0 = none */
	bool armed;			/* mfs_io_arm_faults was called */
	u64 armed_at[MFS_IO_NR_OPS];	/* op_count then, for MFS_IO_COUNT */
	pthread_mutex_t lock;
};

/*
 * Open a device or image. exclusive: O_EXCL for block devices, a
 * non-blocking flock for files (-EBUSY when another holder has it).
 */
int mfs_io_open(const char *path, bool writable, bool exclusive,
		struct mfs_io_dev **out);
void mfs_io_close(struct mfs_io_dev *dev);
/*
 * Whole-buffer read/write; a transfer that does not lie wholly on the device
 * (its size at open) is refused with -EIO before any I/O, so that offsets
 * from a crafted image never reach another file or grow an image; a short
 * transfer (an image truncated since) is -EIO too.
 */
int mfs_io_read(struct mfs_io_dev *dev, void *buf, size_t len, u64 off);
int mfs_io_write(struct mfs_io_dev *dev, const void *buf, size_t len, u64 off);
int mfs_io_flush(struct mfs_io_dev *dev);
/*
 * mfs_io_write bypassing the page cache, for bulk copies (nothing to copy
 * into the cache and write back at the flush); same fault hook and log.
 * Buffers, lengths and offsets that are not MFS_IO_DIRECT_ALIGN aligned, and
 * devices that take no O_DIRECT, get a buffered write.
 */
#define MFS_IO_DIRECT_ALIGN 4096
/*
 * One vectored transfer at off: iov's pieces lie back to back on the device.
 * O_DIRECT when every piece is aligned; a write is logged piece by piece.
 */
int mfs_io_rw_vec_direct(struct mfs_io_dev *dev, const struct iovec *iov, int n, u64 off,
			 bool write);
/*
 * The same write through the page cache, its writeback started at once:
 * the caller does not wait behind other requests queued on the device (a
 * restripe's megabytes), and the next flush makes it durable. Never for a
 * range a direct write may cover before that flush: a direct write cannot
 * drop a dirty cached page, and the kernel then fails the next flush.
 */
int mfs_io_write_vec(struct mfs_io_dev *dev, const struct iovec *iov, int n, u64 off);
int mfs_io_write_direct(struct mfs_io_dev *dev, const void *buf, size_t len, u64 off);
/*
 * A buffer for bulk direct transfers (megabytes a window), freed with
 * free(): aligned and advised onto huge pages, so that pinning it for each
 * transfer takes a page table entry per 2 MiB instead of one per 4 KiB
 * (that pinning was a fifth of a scrub's CPU). NULL when out of memory.
 */
void *mfs_io_alloc_bulk(size_t bytes);

/*
 * A buffer per thread for such transfers, kept from one call to the next
 * and freed when the thread ends: one allocated per request has its pages
 * faulted in and zeroed every time (the allocator gives them back between
 * requests). Declare one per use, static, with MFS_THREAD_BUF_INIT.
 */
struct mfs_thread_buf {
	pthread_key_t key;
	int state;		/* 0 not set up, 1 ready, -1 no key could be had */
};
#define MFS_THREAD_BUF_INIT	{ .state = 0 }
/* At least size bytes, aligned as mfs_io_alloc_bulk's, for this thread; NULL when out of memory. */
void *mfs_thread_buf_get(struct mfs_thread_buf *tb, size_t size);
/* A hint, neither counted nor logged: start reading [off, +len) into the page cache. */
void mfs_io_readahead(struct mfs_io_dev *dev, u64 off, u64 len);
/* Discard (punch holes in images); best effort, -EOPNOTSUPP when unsupported. */
int mfs_io_discard(struct mfs_io_dev *dev, u64 off, u64 len);

/*
 * Fault hooks. Programmatic: fail the nth op of dev (sticky = every op from
 * the nth on). From the environment, read at each open:
 *   MFS_FAULT="op:nth[:s][@pathsubstring][,…]"  e.g. "write:3@d2.img"
 * nth written +N counts from when the filesystem has been opened
 * (mfs_io_arm_faults), so a test can fail the first reads after a mount.
 */
void mfs_io_set_fault(struct mfs_io_dev *dev, enum mfs_io_op op, u64 nth, bool sticky);
/* Start the +N faults of MFS_FAULT on dev: the open is over. */
void mfs_io_arm_faults(struct mfs_io_dev *dev);
/*
 * MFS_IO_COUNT=FILE appends a line to FILE for each fault the hook injects
 * ("fault PATH OP N", N counted like MFS_FAULT's +N) and, as an armed
 * device is closed, the ops it issued since it was armed ("count PATH
 * read R write W flush F"): what a test sweeps +N over.
 */

/*
 * Write log: when MFS_WRITE_LOG names a file (or after mfs_io_log_open),
 * every write and flush of every device is appended to it, so a harness
 * can rebuild the devices as they were after any flush. Record format:
 * struct mfs_io_log_rec followed by path_len path bytes and len data bytes.
 */
struct mfs_io_log_rec {
	u32 magic;		/* MFS_IO_LOG_REC_MAGIC */
	u32 op;			/* MFS_IO_WRITE or MFS_IO_FLUSH */
	u32 path_len;
	u32 reserved;
	u64 offset;
	u64 len;
} __attribute__((packed));
#define MFS_IO_LOG_REC_MAGIC 0x4c4f474dU
int mfs_io_log_open(const char *path);
void mfs_io_log_close(void);

#endif
