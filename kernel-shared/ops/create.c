/*
 * mkfs in the engine: wipe old superblocks, allocate the first chunks with
 * the normal allocator, create every tree empty and commit generation 1
 * with the normal commit, so mkfs obeys the same write ordering as
 * everything else.
 */
#include <stdlib.h>
#include <string.h>
#include <uuid/uuid.h>
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/ops/create.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/tree/alloc.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/tree/transaction.h"
#include "kernel-shared/block/csum.h"
#include "kernel-shared/fs/inode.h"

int mfs_mkfs_device_size(const char *path, u64 byte_count, u64 *size)
{
	struct mfs_io_dev *io;
	int ret = mfs_io_open(path, false, false, &io);

	if (ret)
		return ret;
	*size = io->size;
	mfs_io_close(io);
	if (byte_count) {
		if (byte_count > *size)
			return -EFBIG;
		*size = byte_count;
	}
	*size = round_down(*size, SZ_4K);
	return 0;
}

/* Zero what could make an old filesystem (ours or another) look valid. */
static int wipe_device(struct mfs_device *dev)
{
	static const u8 zero[SZ_64K];
	u64 off, end = dev->total_bytes;
	int i, ret;

	for (off = 0; off < SZ_1M && off < end; off += sizeof(zero)) {
		ret = mfs_io_write(dev->io, zero, min_t(u64, sizeof(zero), end - off), off);
		if (ret)
			return ret;
	}
	for (i = 1; i < MFS_SUPER_MIRROR_MAX; i++) {
		off = mfs_sb_offset(i);
		if (off + MFS_SUPER_INFO_SIZE > dev->io->size)
			break;
		ret = mfs_io_write(dev->io, zero, MFS_SUPER_INFO_SIZE, off);
		if (ret)
			return ret;
	}
	if (end > 2 * SZ_1M) {
		for (off = end - SZ_1M; off < end; off += sizeof(zero)) {
			ret = mfs_io_write(dev->io, zero, sizeof(zero), off);
			if (ret)
				return ret;
		}
	}
	return 0;
}

static int open_new_devices(struct mfs_fs_info *fs, struct mfs_mkfs_params *p)
{
	int i, ret;

	for (i = 0; i < p->npaths; i++) {
		struct mfs_device *dev = calloc(1, sizeof(*dev));

		if (!dev)
			return -ENOMEM;
		ret = mfs_io_open(p->paths[i], true, p->exclusive, &dev->io);
		if (ret) {
			free(dev);
			p->failed_path = p->paths[i];
			return ret;
		}
		dev->path = strdup(p->paths[i]);
		dev->devid = i + 1;
		uuid_generate(dev->uuid);
		dev->total_bytes = round_down(dev->io->size, SZ_4K);
		if (p->byte_count)
			dev->total_bytes = min_t(u64, dev->total_bytes, p->byte_count);
		dev->dirty = true;
		ret = mfs_add_device(fs, dev);
		if (!dev->path || ret) {
			mfs_io_close(dev->io);
			free(dev->path);
			free(dev);
			return ret ? ret : -ENOMEM;
		}
		p->dev_size[i] = dev->total_bytes;
	}
	return 0;
}

static void init_super(struct mfs_fs_info *fs, struct mfs_mkfs_params *p)
{
	struct mfs_super_block *sb = &fs->super;

	memset(sb, 0, sizeof(*sb));
	memcpy(sb->fsid, fs->fsid, MFS_FSID_SIZE);
	sb->magic = cpu_to_le64(MFS_MAGIC);
	sb->sectorsize = cpu_to_le32(p->sectorsize);
	sb->nodesize = cpu_to_le32(p->nodesize);
	sb->stripesize = cpu_to_le32(MFS_STRIPE_LEN);
	sb->csum_type = cpu_to_le16(p->csum_type);
	sb->format_version = cpu_to_le32(MFS_FORMAT_VERSION);
	if (p->label)
		strncpy(sb->label, p->label, MFS_LABEL_SIZE - 1);
}

static int create_trees(struct mfs_trans_handle *trans)
{
	struct mfs_fs_info *fs = trans->fs_info;
	int ret;

	ret = mfs_create_tree(trans, MFS_CHUNK_TREE_OBJECTID, &fs->chunk_root);
	if (!ret)
		ret = mfs_create_tree(trans, MFS_ROOT_TREE_OBJECTID, &fs->tree_root);
	if (!ret)
		ret = mfs_create_tree(trans, MFS_EXTENT_TREE_OBJECTID, &fs->extent_root);
	if (!ret)
		ret = mfs_create_tree(trans, MFS_DEV_TREE_OBJECTID, &fs->dev_root);
	if (!ret)
		ret = mfs_create_tree(trans, MFS_FS_TREE_OBJECTID, &fs->fs_root);
	if (!ret)
		ret = mfs_create_tree(trans, MFS_CSUM_TREE_OBJECTID, &fs->csum_root);
	return ret;
}

int mfs_make_fs(struct mfs_mkfs_params *p)
{
	struct mfs_fs_info *fs;
	struct mfs_trans_handle *trans;
	struct mfs_block_group *bg;
	static const u8 zero_fsid[MFS_FSID_SIZE];
	int i, ret;

	if (p->npaths < 1 || p->npaths > (int)ARRAY_SIZE(p->dev_size))
		return -EINVAL;
	/* a checksum whose library cannot be loaded: -ELIBACC before anything is written */
	ret = mfs_csum_available(p->csum_type);
	if (ret)
		return ret;
	fs = mfs_alloc_fs_info();
	if (!fs)
		return -ENOMEM;
	fs->open_flags = MFS_OPEN_WRITABLE;
	fs->nodesize = p->nodesize;
	fs->sectorsize = p->sectorsize;
	fs->csum_type = p->csum_type;
	fs->csum_size = mfs_csum_size(p->csum_type);
	if (memcmp(p->fsid, zero_fsid, MFS_FSID_SIZE))
		memcpy(fs->fsid, p->fsid, MFS_FSID_SIZE);
	else
		uuid_generate(fs->fsid);
	memcpy(fs->metadata_fsid, fs->fsid, MFS_FSID_SIZE);
	fs->data_profile = p->data_profile;
	fs->metadata_profile = p->metadata_profile;
	fs->system_profile = p->metadata_profile;
	fs->incompat_flags = p->features;
	init_super(fs, p);
	fs->strict_io = true;

	ret = open_new_devices(fs, p);
	if (ret)
		goto out;
	/* old superblocks go first, and durably, so no crash revives them */
	for (i = 0; i < fs->nr_devices; i++) {
		ret = wipe_device(fs->devices[i]);
		if (ret) {
			p->failed_path = fs->devices[i]->path;
			goto out;
		}
	}
	ret = mfs_flush_all_devices(fs);
	if (ret)
		goto out;

	ret = mfs_start_transaction(fs, &trans);
	if (ret)
		goto out;
	ret = mfs_alloc_chunk(fs, MFS_BLOCK_GROUP_SYSTEM | fs->system_profile, SZ_8M, &bg);
	if (!ret) {
		p->sys_bytes = bg->length;
		ret = mfs_alloc_chunk(fs, MFS_BLOCK_GROUP_METADATA | fs->metadata_profile, 0, &bg);
	}
	if (!ret) {
		p->meta_bytes = bg->length;
		ret = mfs_alloc_chunk(fs, MFS_BLOCK_GROUP_DATA | fs->data_profile, 0, &bg);
	}
	if (!ret) {
		p->data_bytes = bg->length;
		ret = create_trees(trans);
	}
	if (!ret)
		ret = mfs_make_root_dir(trans, p->root_uid, p->root_gid);
	if (ret) {
		mfs_end_transaction(trans);
		goto out;
	}
	ret = mfs_commit_transaction(trans);
out:
	mfs_free_fs_info(fs);
	return ret;
}

int mfs_mkfs_set_changing(struct mfs_fs_info *fs, bool changing)
{
	struct mfs_trans_handle *trans;
	u64 flags;
	int ret;

	pthread_mutex_lock(&fs->lock);
	ret = mfs_start_transaction(fs, &trans);
	if (!ret) {
		flags = le64_to_cpu(fs->super.flags);
		if (changing)
			flags |= MFS_SUPER_FLAG_CHANGING;
		else
			flags &= ~MFS_SUPER_FLAG_CHANGING;
		fs->super.flags = cpu_to_le64(flags);
		/* a commit even when nothing else changed: the flag must reach disk */
		ret = mfs_commit_transaction(trans);
	}
	pthread_mutex_unlock(&fs->lock);
	return ret;
}
