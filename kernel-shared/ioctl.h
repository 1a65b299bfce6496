/*
 * Admin ioctls on the mount point (DESIGN §7). FUSE passes only restricted
 * ioctls: every argument is a fixed-size struct, under 16 KiB.
 */
#ifndef MFS_IOCTL_H
#define MFS_IOCTL_H

#include <linux/ioctl.h>
#include <stdint.h>

#define MFS_IOCTL_MAGIC 0xE5

struct mfs_ioctl_fs_info {
	uint64_t daemon_pid;
	uint8_t fsid[16];
	uint64_t num_devices;
	uint64_t generation;
	uint32_t nodesize;
	uint32_t sectorsize;
	char first_device[4096];
};

#define MFS_IOC_FS_INFO		_IOR(MFS_IOCTL_MAGIC, 1, struct mfs_ioctl_fs_info)
/* Commit the running transaction (sync). */
#define MFS_IOC_SYNC		_IO(MFS_IOCTL_MAGIC, 2)

_Static_assert(sizeof(struct mfs_ioctl_fs_info) < 16384, "restricted ioctl size");

#endif
