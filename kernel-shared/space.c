/* Space accounting for statfs: what can really still be stored as data. */
#include <string.h>
#include "ctree.h"
#include "inode.h"
#include "volumes.h"

/*
 * df must tell the truth (DESIGN §4): capacity is the data chunks plus what
 * the unallocated space would give under the data profile, so a two-device
 * raid1 shows one device's worth, not two.
 */
int mfs_statfs(struct mfs_fs_info *fs, struct statvfs *st)
{
	u64 data_total = 0, data_used = 0, unalloc;
	int i;

	pthread_mutex_lock(&fs->lock);
	for (i = 0; i < fs->nr_bgs; i++) {
		struct mfs_block_group *bg = fs->bgs[i];

		if (!(bg->flags & MFS_BLOCK_GROUP_DATA))
			continue;
		data_total += bg->length;
		data_used += bg->used + bg->reserved;
	}
	unalloc = mfs_simulate_alloc(fs, MFS_BLOCK_GROUP_DATA | fs->data_profile);
	memset(st, 0, sizeof(*st));
	st->f_bsize = fs->sectorsize;
	st->f_frsize = fs->sectorsize;
	st->f_blocks = (data_total + unalloc) / fs->sectorsize;
	st->f_bfree = (data_total - min_t(u64, data_used, data_total) + unalloc) / fs->sectorsize;
	st->f_bavail = st->f_bfree;
	st->f_files = st->f_blocks + fs->next_ino;
	st->f_ffree = st->f_bfree;
	st->f_favail = st->f_ffree;
	st->f_namemax = MFS_NAME_LEN;
	memcpy(&st->f_fsid, fs->fsid, sizeof(st->f_fsid));
	pthread_mutex_unlock(&fs->lock);
	return 0;
}
