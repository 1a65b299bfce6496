/* Finding, probing and opening the block devices and image files mfs uses. */
#ifndef MFS_COMMON_DEVICE_SCAN_H
#define MFS_COMMON_DEVICE_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "kernel-shared/format/kerncompat.h"

/*
 * 1 if libblkid finds a filesystem, RAID member or partition table other than
 * mfs on @path; @type gets its name ("ext4", "gpt"), @label its label or "",
 * *@is_ptable whether it is a partition table. 0 if none, -errno on error.
 */
int mfs_probe_foreign_signature(const char *path, char *type, size_t typelen,
				char *label, size_t labellen, bool *is_ptable);

/*
 * 1 if @path is mounted (a block device by its device number or as the
 * source; an image file as the source or through a mounted loop device),
 * with the mount point in @mnt; 0 if not; -errno on error.
 */
int mfs_path_is_mounted(const char *path, char *mnt, size_t mntlen);

/* One mount of a mountinfo file, its paths unescaped. */
struct mfs_mountinfo {
	int id;
	dev_t dev;		/* the mount's st_dev (0:NN for FUSE) */
	const char *mnt, *fstype, *source;
};

/*
 * Call @fn for each mount in mountinfo file @path (NULL: this process's).
 * A non-zero return of @fn stops the walk and is returned; -errno when the
 * file cannot be read.
 */
int mfs_mountinfo_walk(const char *path, int (*fn)(const struct mfs_mountinfo *m, void *arg),
		       void *arg);

/* Undo mountinfo's \ooo escapes of space, tab, newline and backslash, in place. */
void mfs_unescape_mount_path(char *s);

/* Whether @a and @b name the same device, an image file and a loop device over it included. */
bool mfs_same_device(const char *a, const char *b);

/*
 * 1 if @path is an image file backing a loop device someone holds (a mount,
 * a filesystem daemon, another O_EXCL opener), with that device in @loop.
 */
int mfs_file_loop_busy(const char *path, char *loop, size_t looplen);

/*
 * Open @path so nobody else can hold it: O_EXCL for a block device, an
 * exclusive flock for a file. Returns the fd, -EBUSY if held, or -errno.
 */
int mfs_open_exclusive(const char *path, int flags);

/*
 * All block devices (disks, partitions, loop; not ram/zram nor empty ones)
 * from /proc/partitions, or from udev when that lists none. Returns 0 or
 * -errno; free the list with mfs_free_paths().
 */
int mfs_scan_block_devices(char ***paths, int *count);
void mfs_free_paths(char **paths, int count);

bool mfs_is_block_device(const char *path);
/* Size in bytes of an open block device or file. */
int mfs_device_size(int fd, u64 *size);
/*
 * Discard a byte range: BLKDISCARD on a block device, hole punching in a
 * file. -EOPNOTSUPP when the device cannot, which callers may ignore.
 */
int mfs_discard_range(int fd, u64 start, u64 len);

#endif
