/*
 * Changing a filesystem's fsid (format §3.8): what lets a copy of a
 * filesystem live beside the original. Only the superblocks change.
 */
#include <string.h>
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/ops/open.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/tree/transaction.h"

/* One round: the superblock as it is now, on every member, durably. */
static int write_round(struct mfs_fs_info *fs)
{
	int ret = mfs_write_all_supers(fs);

	if (!ret)
		ret = mfs_flush_all_devices(fs);
	return ret;
}

int mfs_change_fsid(struct mfs_fs_info *fs, const u8 *new_fsid)
{
	struct mfs_super_block *sb = &fs->super;
	int i, ret;

	if (!(fs->open_flags & MFS_OPEN_WRITABLE))
		return -EROFS;
	for (i = 0; i < fs->nr_devices; i++)
		if (!mfs_dev_usable(fs->devices[i]) || fs->devices[i]->stale_gen)
			return -ENODEV;	/* it would keep the old fsid */
	ret = mfs_commit_if_dirty(fs);
	if (ret)
		return ret;
	/* every member takes each round, or the change stops where it is */
	fs->strict_io = true;

	/* 1. say where the fsid is going, under the old one */
	sb->flags = cpu_to_le64(le64_to_cpu(sb->flags) | MFS_SUPER_FLAG_CHANGING_FSID);
	memcpy(sb->pending_fsid, new_fsid, MFS_FSID_SIZE);
	ret = write_round(fs);
	if (ret)
		return ret;

	/* 2. go there: the trees keep naming the metadata fsid */
	if (!memcmp(new_fsid, fs->metadata_fsid, MFS_FSID_SIZE)) {
		fs->incompat_flags &= ~MFS_FEATURE_INCOMPAT_METADATA_UUID;
		memset(sb->metadata_uuid, 0, MFS_FSID_SIZE);
	} else {
		fs->incompat_flags |= MFS_FEATURE_INCOMPAT_METADATA_UUID;
		memcpy(sb->metadata_uuid, fs->metadata_fsid, MFS_FSID_SIZE);
	}
	sb->incompat_flags = cpu_to_le64(fs->incompat_flags);
	memcpy(fs->fsid, new_fsid, MFS_FSID_SIZE);
	memcpy(sb->fsid, new_fsid, MFS_FSID_SIZE);
	sb->flags = cpu_to_le64(le64_to_cpu(sb->flags) & ~MFS_SUPER_FLAG_CHANGING_FSID);
	memset(sb->pending_fsid, 0, MFS_FSID_SIZE);
	return write_round(fs);
}
