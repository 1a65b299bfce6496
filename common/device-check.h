/* Vetting a device before it becomes part of a filesystem (mkfs, device add). */
#ifndef MFS_COMMON_DEVICE_CHECK_H
#define MFS_COMMON_DEVICE_CHECK_H

#include "kernel-shared/format/kerncompat.h"

/*
 * Refuse (with an ERROR line) a device that is missing, mounted, busy,
 * holding another filesystem or partition table (unless force), already a
 * member of own_fsid's filesystem (always), or too small. *size is the
 * size it would give (byte_count caps it when non-zero).
 */
int mfs_check_new_device(const char *path, bool force, u64 byte_count, const u8 *own_fsid,
			 u64 *size);

#endif
