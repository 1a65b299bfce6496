/* Vetting a device before it becomes part of a filesystem (mkfs, device add). */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <limits.h>
#include <unistd.h>
#include <sys/stat.h>
#include "common/device-check.h"
#include "common/device-scan.h"
#include "common/messages.h"
#include "common/open.h"
#include "common/target.h"
#include "common/units.h"
#include "kernel-shared/ops/create.h"
#include "kernel-shared/volumes/volumes.h"

/* Everything that can refuse a device, before anything is written. */
int mfs_check_new_device(const char *path, bool force, u64 byte_count, const u8 *own_fsid,
			 u64 *size)
{
	char type[64] = "", label[256] = "", mnt[PATH_MAX] = "";
	struct mfs_super_block sb;
	bool ptable = false;
	struct stat st;
	int ret, fd;

	if (stat(path, &st)) {
		error("cannot access '%s': %m", path);
		return -errno;
	}
	if (!S_ISBLK(st.st_mode) && !S_ISREG(st.st_mode)) {
		error("%s is neither a block device nor a regular file", path);
		return -EINVAL;
	}
	if (mfs_path_is_mounted(path, mnt, sizeof(mnt)) == 1 ||
	    mfs_find_mount_of_device(path, mnt, sizeof(mnt))) {
		error("%s is mounted on %s", path, mnt);
		return -EBUSY;
	}
	if (mfs_file_loop_busy(path, mnt, sizeof(mnt)) == 1) {
		error("%s is in use: it backs %s, which is held open", path, mnt);
		return -EBUSY;
	}
	fd = mfs_open_exclusive(path, O_RDWR);
	if (fd < 0) {
		error("unable to open %s: %s", path, strerror(-fd));
		return fd;
	}
	close(fd);
	ret = mfs_probe_super(path, &sb);
	if (own_fsid && ret == 0 && !memcmp(sb.fsid, own_fsid, MFS_FSID_SIZE)) {
		error("%s is already a member of this filesystem", path);
		return -EEXIST;
	}
	if (!force) {
		if (ret == 0 || ret == -EUCLEAN) {
			error("%s appears to contain an existing filesystem (type=mfs)", path);
			error("use the -f option to force overwrite of %s", path);
			return -EEXIST;
		}
		ret = mfs_probe_foreign_signature(path, type, sizeof(type), label, sizeof(label),
						  &ptable);
		if (ret == 1) {
			if (ptable)
				error("%s appears to contain a partition table (%s)", path, type);
			else if (label[0])
				error("%s appears to contain an existing filesystem (type=%s, label=%s)",
				      path, type, label);
			else
				error("%s appears to contain an existing filesystem (type=%s)",
				      path, type);
			error("use the -f option to force overwrite of %s", path);
			return -EEXIST;
		}
	}
	ret = mfs_mkfs_device_size(path, 0, size);
	if (ret) {
		error("cannot read the size of %s: %s", path, strerror(-ret));
		return ret;
	}
	if (byte_count) {
		if (byte_count > *size) {
			error("%s is smaller than requested size, expected %llu, found %llu",
			      path, (unsigned long long)byte_count, (unsigned long long)*size);
			return -EINVAL;
		}
		*size = round_down(byte_count, SZ_4K);
	}
	if (*size < MFS_MIN_DEVICE_SIZE) {
		error("'%s' is too small to make a usable filesystem (%s)", path, pretty_size(*size));
		error("minimum size for each mfs device is %llu (%s)",
		      (unsigned long long)MFS_MIN_DEVICE_SIZE, pretty_size(MFS_MIN_DEVICE_SIZE));
		return -ENOSPC;
	}
	return 0;
}

