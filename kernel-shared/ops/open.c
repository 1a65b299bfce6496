/*
 * Opening a filesystem from its member devices (which to take, stale and
 * duplicate members, the chunk and device trees, the roots, catching up
 * stale members, an interrupted restripe) and closing it.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernel-shared/block/csum.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/tree/alloc.h"
#include "kernel-shared/tree/transaction.h"
#include "kernel-shared/fs/inode.h"
#include "kernel-shared/ops/open.h"
#include "kernel-shared/ops/restripe.h"
#include "kernel-shared/ops/catchup.h"

static bool partial(struct mfs_fs_info *fs)
{
	return fs->open_flags & MFS_OPEN_PARTIAL;
}

/* Set the in-memory geometry from a validated superblock. */
static void init_from_super(struct mfs_fs_info *fs)
{
	struct mfs_super_block *sb = &fs->super;

	memcpy(fs->fsid, sb->fsid, MFS_FSID_SIZE);
	if (le64_to_cpu(sb->incompat_flags) & MFS_FEATURE_INCOMPAT_METADATA_UUID)
		memcpy(fs->metadata_fsid, sb->metadata_uuid, MFS_FSID_SIZE);
	else
		memcpy(fs->metadata_fsid, sb->fsid, MFS_FSID_SIZE);
	fs->nodesize = le32_to_cpu(sb->nodesize);
	fs->sectorsize = le32_to_cpu(sb->sectorsize);
	fs->csum_type = le16_to_cpu(sb->csum_type);
	fs->csum_size = mfs_csum_size(fs->csum_type);
	fs->generation = le64_to_cpu(sb->generation);
	fs->incompat_flags = le64_to_cpu(sb->incompat_flags);
}

/* A device that claims to be a member, before it is taken. */
struct candidate {
	const char *path;
	struct mfs_io_dev *io;
	struct mfs_super_block sb;
	bool named;		/* the admin named it (else a scan found it) */
	bool forced;		/* its superblock copy was chosen by the caller */
};

static u64 cand_devid(const struct candidate *c)
{
	return le64_to_cpu(c->sb.dev_item.devid);
}

static void drop_candidate(struct candidate *c)
{
	mfs_io_close(c->io);
	c->io = NULL;
}

/*
 * A finished replace gives its target the source's devid (restripe.c); a
 * source whose superblock was not wiped still claims that devid, with
 * another device uuid and an older generation: it is no member any more.
 * Its superblock says REPLACE_SOURCE after a crash in the replace's last
 * commit; a failed disk that took no more writes (a hot spare replaced
 * it), or a member that was away while it was replaced, says nothing -
 * such a one is dropped when a scan found it or the newer one was named
 * too: one the admin named instead of a scanned one is left for the chunk
 * tree's check to refuse by name. Copies share their device uuid: never
 * taken here.
 */
static void drop_replaced_sources(struct candidate *c, int n)
{
	int i, j;

	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++)
			if (i != j && c[i].io && c[j].io && cand_devid(&c[i]) == cand_devid(&c[j]) &&
			    (!c[i].named || c[j].named ||
			     (le64_to_cpu(c[i].sb.dev_item.flags) & MFS_DEV_STATE_REPLACE_SOURCE)) &&
			    memcmp(c[i].sb.dev_item.uuid, c[j].sb.dev_item.uuid, MFS_UUID_SIZE) &&
			    le64_to_cpu(c[i].sb.generation) < le64_to_cpu(c[j].sb.generation))
				drop_candidate(&c[i]);
}

/*
 * Two candidates with one devid: one of them is a copy of the other (an
 * image copied with cp or dd, a disk cloned) or an older member. A device
 * the admin named wins over one a scan found - and then no scanned device
 * is trusted for this filesystem at all, since the copy's partners cannot
 * be told from the original's. Between two of the same kind nothing can
 * choose: refused, naming both.
 */
static int resolve_duplicates(struct candidate *c, int n, struct mfs_open_ctl *ctl)
{
	bool distrust_scanned = false;
	int i, j;

	drop_replaced_sources(c, n);
	for (i = 0; i < n; i++) {
		for (j = i + 1; j < n; j++) {
			if (!c[i].io || !c[j].io || cand_devid(&c[i]) != cand_devid(&c[j]) ||
			    c[i].named == c[j].named)
				continue;
			distrust_scanned = true;
			snprintf(ctl->note, sizeof(ctl->note),
				 "%s also claims to be device %llu of this filesystem (a copy?): only the devices named are used",
				 c[c[i].named ? j : i].path, (unsigned long long)cand_devid(&c[i]));
		}
	}
	if (distrust_scanned)
		for (i = 0; i < n; i++)
			if (!c[i].named && c[i].io)
				drop_candidate(&c[i]);
	for (i = 0; i < n; i++) {
		for (j = i + 1; j < n; j++) {
			if (!c[i].io || !c[j].io || cand_devid(&c[i]) != cand_devid(&c[j]))
				continue;
			snprintf(ctl->detail, sizeof(ctl->detail),
				 "%s and %s both claim to be device %llu of this filesystem (is one a copy of the other?); name only one of them, or give the copy a new uuid with 'mfs filesystem change-uuid'",
				 c[i].path, c[j].path, (unsigned long long)cand_devid(&c[i]));
			return -EEXIST;
		}
	}
	return 0;
}

static int take_candidate(struct mfs_fs_info *fs, struct candidate *c)
{
	struct mfs_device *dev = calloc(1, sizeof(*dev));
	char real[PATH_MAX];
	int ret;

	/* shown as an absolute path, as the daemon (cwd /) must reopen it */
	if (dev && !realpath(c->path, real))
		snprintf(real, sizeof(real), "%s", c->path);
	if (!dev || !(dev->path = strdup(real))) {
		free(dev);
		return -ENOMEM;
	}
	dev->devid = cand_devid(c);
	dev->io = c->io;
	memcpy(dev->uuid, c->sb.dev_item.uuid, MFS_UUID_SIZE);
	dev->total_bytes = le64_to_cpu(c->sb.dev_item.total_bytes);
	dev->bytes_used = le64_to_cpu(c->sb.dev_item.bytes_used);
	dev->flags = le64_to_cpu(c->sb.dev_item.flags);
	dev->generation = le64_to_cpu(c->sb.generation);
	ret = mfs_add_device(fs, dev);
	if (ret) {
		free(dev->path);
		free(dev);
		return ret;
	}
	c->io = NULL;	/* the device owns it now */
	return 0;
}

/* Read every candidate's superblock; the first path's errors are the caller's. */
static int read_candidates(struct mfs_open_ctl *ctl, struct candidate *c)
{
	bool writable = ctl->flags & MFS_OPEN_WRITABLE;
	bool excl = !(ctl->flags & MFS_OPEN_NO_EXCL);
	int i, ret;

	for (i = 0; i < ctl->npaths; i++) {
		c[i].path = ctl->paths[i];
		c[i].named = ctl->nnamed ? i < ctl->nnamed || i == 0 : true;
		ret = mfs_io_open(ctl->paths[i], writable, excl, &c[i].io);
		if (ret) {
			c[i].io = NULL;
			/* a scanned device someone else holds is not taken */
			if (i == 0 || (ret == -EBUSY && c[i].named)) {
				ctl->failed_path = ctl->paths[i];
				return ret;
			}
			continue;
		}
		c[i].forced = i == 0 && ctl->sb_mirror >= 0;
		if (c[i].forced)
			ret = mfs_read_super_copy(c[i].io, ctl->sb_mirror, &c[i].sb);
		else
			ret = mfs_read_super(c[i].io, &c[i].sb, NULL);
		if (ret) {
			drop_candidate(&c[i]);
			if (i == 0) {
				ctl->failed_path = ctl->paths[i];
				return ret;
			}
		}
	}
	return 0;
}

/*
 * Open every candidate and keep the members of the chosen filesystem: the
 * fsid asked for, one device per devid (resolve_duplicates). The newest
 * superblock among them is the filesystem's; a member whose own is older
 * missed the writes since and is stale (read last, caught up when the
 * filesystem is opened writable).
 */
static int open_member_devices(struct mfs_fs_info *fs, struct mfs_open_ctl *ctl)
{
	struct candidate *c = calloc(ctl->npaths ? ctl->npaths : 1, sizeof(*c));
	int i, best = -1, ret;

	if (!c)
		return -ENOMEM;
	ret = read_candidates(ctl, c);
	if (ret)
		goto out;
	memcpy(fs->fsid, ctl->fsid ? ctl->fsid : c[0].sb.fsid, MFS_FSID_SIZE);
	for (i = 0; i < ctl->npaths; i++) {
		if (!c[i].io || !memcmp(c[i].sb.fsid, fs->fsid, MFS_FSID_SIZE))
			continue;
		if ((ctl->flags & MFS_OPEN_CHANGE_FSID) && ctl->alt_fsid &&
		    !memcmp(c[i].sb.fsid, ctl->alt_fsid, MFS_FSID_SIZE))
			continue;
		if ((le64_to_cpu(c[i].sb.flags) & MFS_SUPER_FLAG_CHANGING_FSID) &&
		    !memcmp(c[i].sb.pending_fsid, fs->fsid, MFS_FSID_SIZE) &&
		    !(ctl->flags & MFS_OPEN_CHANGE_FSID)) {
			snprintf(ctl->detail, sizeof(ctl->detail),
				 "%s is still being changed to this filesystem's uuid: a 'mfs filesystem change-uuid' was interrupted; run it again on the devices to finish it",
				 c[i].path);
			ret = -EUCLEAN;
			goto out;
		}
		drop_candidate(&c[i]);
	}
	ret = resolve_duplicates(c, ctl->npaths, ctl);
	if (ret)
		goto out;
	for (i = 0; i < ctl->npaths; i++) {
		if (!c[i].io)
			continue;
		if (best < 0 || c[i].forced ||
		    (!c[best].forced && le64_to_cpu(c[i].sb.generation) >
					le64_to_cpu(c[best].sb.generation)))
			best = i;
	}
	if (best < 0) {
		ret = -ENOENT;
		goto out;
	}
	memcpy(&fs->super, &c[best].sb, sizeof(fs->super));
	init_from_super(fs);
	for (i = 0; i < ctl->npaths && !ret; i++) {
		const struct mfs_super_block *sb = &c[i].sb;
		const u8 *meta = le64_to_cpu(sb->incompat_flags) & MFS_FEATURE_INCOMPAT_METADATA_UUID ?
				 sb->metadata_uuid : sb->fsid;

		/* the same fsid over other trees: not a member */
		if (c[i].io && memcmp(meta, fs->metadata_fsid, MFS_FSID_SIZE))
			drop_candidate(&c[i]);
		if (c[i].io)
			ret = take_candidate(fs, &c[i]);
	}
	for (i = 0; !ret && i < fs->nr_devices; i++)
		if (fs->devices[i]->generation < fs->generation)
			fs->devices[i]->stale_gen = fs->devices[i]->generation;
out:
	for (i = 0; i < ctl->npaths; i++)
		drop_candidate(&c[i]);
	free(c);
	return ret;
}

static void forget_device(struct mfs_fs_info *fs, struct mfs_device *dev)
{
	int i;

	for (i = 0; i < fs->nr_devices && fs->devices[i] != dev; i++)
		;
	if (i == fs->nr_devices)
		return;
	memmove(&fs->devices[i], &fs->devices[i + 1], (fs->nr_devices - i - 1) * sizeof(dev));
	fs->nr_devices--;
	mfs_io_close(dev->io);
	free(dev->path);
	free(dev);
}

/*
 * The device item of devid names the device uuid of a replace's target
 * that came with another devid: the replace finished (the target took its
 * source's devid) in a commit whose superblock the target missed. It is
 * that device now; the source, if it came, is no member any more.
 */
static void adopt_replace_target(struct mfs_fs_info *fs, const struct mfs_dev_item *di)
{
	u64 devid = le64_to_cpu(di->devid);
	struct mfs_device *tgt = NULL, *src = mfs_find_device(fs, devid);
	int i;

	for (i = 0; i < fs->nr_devices; i++)
		if (!memcmp(fs->devices[i]->uuid, di->uuid, MFS_UUID_SIZE))
			tgt = fs->devices[i];
	if (!tgt || tgt == src || !(tgt->flags & MFS_DEV_STATE_REPLACE_TARGET) ||
	    tgt->generation >= fs->generation)
		return;
	if (src && !(src->flags & MFS_DEV_STATE_REPLACE_SOURCE))
		return;
	if (src)
		forget_device(fs, src);
	mfs_device_set_devid(fs, tgt, devid);
}

static int load_dev_item(struct mfs_fs_info *fs, struct extent_buffer *leaf, int slot,
			 struct mfs_open_ctl *ctl)
{
	struct mfs_dev_item *di = leaf_item_data(leaf, slot);
	struct mfs_device *dev;
	u64 devid;

	if (leaf_item_size(leaf, slot) != sizeof(*di))
		return -EUCLEAN;
	devid = le64_to_cpu(di->devid);
	adopt_replace_target(fs, di);
	dev = mfs_find_device(fs, devid);
	if (dev && memcmp(dev->uuid, di->uuid, MFS_UUID_SIZE) == 0) {
		dev->in_tree = true;
		dev->total_bytes = le64_to_cpu(di->total_bytes);
		dev->bytes_used = le64_to_cpu(di->bytes_used);
		dev->flags = le64_to_cpu(di->flags);
		return 0;
	}
	if (dev) {
		/* same devid, different uuid: a stranger, not our member */
		snprintf(ctl->detail, sizeof(ctl->detail),
			 "%s claims to be device %llu, but its device uuid is not the one the filesystem has for device %llu (a device from an earlier mkfs or device add?)",
			 dev->path, (unsigned long long)devid, (unsigned long long)devid);
		return -EUCLEAN;
	}
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->devid = devid;
	memcpy(dev->uuid, di->uuid, MFS_UUID_SIZE);
	dev->total_bytes = le64_to_cpu(di->total_bytes);
	dev->bytes_used = le64_to_cpu(di->bytes_used);
	dev->flags = le64_to_cpu(di->flags);
	dev->missing = true;
	dev->in_tree = true;
	return mfs_add_device(fs, dev);
}

static int read_chunk_tree(struct mfs_fs_info *fs, struct mfs_open_ctl *ctl)
{
	struct mfs_key key = { 0, 0, 0 };
	struct mfs_path path;
	int ret, i, s;

	ret = mfs_load_root(fs, MFS_CHUNK_TREE_OBJECTID, le64_to_cpu(fs->super.chunk_root),
			    fs->super.chunk_root_level,
			    le64_to_cpu(fs->super.chunk_root_generation), &fs->chunk_root);
	if (ret)
		return ret;
	mfs_init_path(&path);
	ret = mfs_search_forward(fs->chunk_root, &key, &path);
	while (ret == 0) {
		struct extent_buffer *leaf = path.nodes[0];
		int slot = path.slots[0];

		leaf_item_key(leaf, slot, &key);
		if (key.type == MFS_DEV_ITEM_KEY) {
			ret = load_dev_item(fs, leaf, slot, ctl);
			if (ret == -EUCLEAN && partial(fs)) {
				mfs_note_problem(fs, "device item %llu in the chunk tree is invalid",
						 (unsigned long long)key.offset);
				ret = 0;
			}
		} else if (key.type == MFS_CHUNK_ITEM_KEY) {
			struct mfs_chunk_map *map;

			ret = mfs_chunk_map_from_item(fs, key.offset, leaf_item_data(leaf, slot),
						      leaf_item_size(leaf, slot), &map);
			if (ret == 0) {
				struct mfs_chunk_map *old = mfs_find_chunk(fs, key.offset);

				if (old && old->logical == map->logical &&
				    old->length == map->length && (old->type & MFS_BLOCK_GROUP_SYSTEM)) {
					/* bootstrap copy from the superblock: the tree wins */
					mfs_remove_chunk_map(fs, old);
					free(old);
				}
				ret = mfs_add_chunk_map(fs, map);
				if (ret) {
					free(map);
					if (ret == -EEXIST)
						ret = -EUCLEAN;
				}
			}
			if (ret == -EUCLEAN && partial(fs)) {
				mfs_note_problem(fs, "chunk item at logical %llu is invalid (skipped)",
						 (unsigned long long)key.offset);
				ret = 0;
			}
		}
		if (ret)
			break;
		ret = mfs_next_item(fs->chunk_root, &path);
	}
	mfs_release_path(&path);
	if (ret < 0)
		return ret;
	/*
	 * A device whose superblock names this filesystem but which has no
	 * device item was removed (a crash before its superblock was wiped):
	 * it is no member any more.
	 */
	for (i = 0; i < fs->nr_devices; i++) {
		if (fs->devices[i]->in_tree)
			continue;
		forget_device(fs, fs->devices[i]);
		i--;
	}
	/* stripes may name devices the tree introduced after the map was read */
	for (i = 0; i < fs->nr_chunks; i++) {
		struct mfs_chunk_map *map = fs->chunks[i];

		for (s = 0; s < map->num_stripes; s++) {
			struct mfs_device *dev = mfs_find_device(fs, map->stripes[s].devid);

			if (!dev && partial(fs)) {
				mfs_note_problem(fs, "chunk %llu stripe %d names unknown device %llu",
						 (unsigned long long)map->logical, s,
						 (unsigned long long)map->stripes[s].devid);
				map->stripes[s].dev = NULL;
				continue;
			}
			if (!dev)
				return -EUCLEAN;
			map->stripes[s].dev = dev->missing ? NULL : dev;
		}
	}
	return 0;
}

/*
 * Something on the disks the open cannot use: a partial open (check,
 * restore) notes it and goes on (0); any other fails with ret, saying
 * what in ctl->detail for the command to print.
 */
static int open_problem(struct mfs_fs_info *fs, struct mfs_open_ctl *ctl, int ret,
			const char *fmt, ...)
{
	char msg[sizeof(ctl->detail) - 40];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (partial(fs)) {
		mfs_note_problem(fs, "%s", msg);
		return 0;
	}
	if (!ctl->detail[0])
		snprintf(ctl->detail, sizeof(ctl->detail), "%s; 'mfs check' tells more", msg);
	return ret;
}

static int read_dev_extents(struct mfs_fs_info *fs, struct mfs_open_ctl *ctl)
{
	struct mfs_key key = { 0, 0, 0 };
	struct mfs_path path;
	int ret;

	mfs_init_path(&path);
	ret = mfs_search_forward(fs->dev_root, &key, &path);
	while (ret == 0) {
		struct extent_buffer *leaf = path.nodes[0];
		int slot = path.slots[0];

		leaf_item_key(leaf, slot, &key);
		if (key.type == MFS_PERSISTENT_ITEM_KEY && key.objectid == MFS_DEV_STATS_OBJECTID) {
			struct mfs_dev_stats_item *si = leaf_item_data(leaf, slot);
			struct mfs_device *dev = mfs_find_device(fs, key.offset);
			int j;

			/* add: errors found while reading the trees up to here count too */
			if (dev && leaf_item_size(leaf, slot) == sizeof(*si))
				for (j = 0; j < MFS_DEV_STAT_VALUES_MAX; j++)
					dev->stats[j] += le64_to_cpu(si->values[j]);
		}
		if (key.type == MFS_DEV_EXTENT_KEY) {
			struct mfs_dev_extent *de = leaf_item_data(leaf, slot);
			struct mfs_device *dev = mfs_find_device(fs, key.objectid);

			if (leaf_item_size(leaf, slot) != sizeof(*de) || !dev) {
				ret = -EUCLEAN;
			} else {
				ret = mfs_device_add_extent(dev, key.offset, le64_to_cpu(de->length),
							    le64_to_cpu(de->chunk_offset));
				if (ret == -EEXIST)
					ret = -EUCLEAN;
			}
			if (ret == -EUCLEAN)
				ret = open_problem(fs, ctl, ret,
						   "device extent (devid %llu physical %llu) is invalid or overlaps another",
						   (unsigned long long)key.objectid,
						   (unsigned long long)key.offset);
			if (ret)
				break;
		}
		ret = mfs_next_item(fs->dev_root, &path);
	}
	mfs_release_path(&path);
	return ret < 0 ? ret : 0;
}

/*
 * Profiles new chunks get, when no convert is in progress (a paused or
 * interrupted convert's targets take over in mfs_restripe_load). A type
 * whose chunks have several profiles (an interrupted or limit= convert)
 * gets the most redundant of them that the present devices can hold, as
 * btrfs chooses (btrfs_reduce_alloc_profile): what the filesystem was
 * asked to keep is never silently weakened, and the choice does not
 * depend on which chunk happens to lie highest. Chunks allocated reduced
 * while degraded (format §7.4) do not count: their profile is not the one
 * asked for, unless no other chunk of the type says what was.
 */
void mfs_init_alloc_profiles(struct mfs_fs_info *fs)
{
	unsigned int seen[3] = { 0, 0, 0 }, seen_reduced[3] = { 0, 0, 0 }, ok = 0;
	u64 *out[3] = { &fs->data_profile, &fs->metadata_profile, &fs->system_profile };
	int i, present = 0;

	for (i = 0; i < fs->nr_devices; i++)
		if (!fs->devices[i]->missing)
			present++;
	for (i = 0; i < MFS_NR_RAID_TYPES; i++)
		if (mfs_raid_array[i].devs_min <= present)
			ok |= 1U << i;
	for (i = 0; i < fs->nr_chunks; i++) {
		u64 t = fs->chunks[i]->type;
		int k = (t & MFS_BLOCK_GROUP_DATA) ? 0 : (t & MFS_BLOCK_GROUP_SYSTEM) ? 2 : 1;
		struct mfs_block_group *bg = mfs_lookup_block_group(fs, fs->chunks[i]->logical);

		/* a reduced chunk stands for the profile asked for, where it says which */
		if (bg && bg->reduced && bg->asked)
			seen[k] |= 1U << mfs_bg_flags_to_raid_index(bg->asked);
		else if (bg && bg->reduced)
			seen_reduced[k] |= 1U << mfs_bg_flags_to_raid_index(t);
		else
			seen[k] |= 1U << mfs_bg_flags_to_raid_index(t);
	}
	for (i = 0; i < 3; i++) {
		if (!seen[i])
			seen[i] = seen_reduced[i];
		*out[i] = mfs_most_redundant_profile(seen[i] & ok ? seen[i] & ok : seen[i]);
	}
}

static int read_roots(struct mfs_fs_info *fs, struct mfs_open_ctl *ctl)
{
	static const struct { u64 id; const char *name; size_t off; } roots[] = {
		{ MFS_EXTENT_TREE_OBJECTID, "extent", offsetof(struct mfs_fs_info, extent_root) },
		{ MFS_DEV_TREE_OBJECTID, "device", offsetof(struct mfs_fs_info, dev_root) },
		{ MFS_FS_TREE_OBJECTID, "fs", offsetof(struct mfs_fs_info, fs_root) },
		{ MFS_CSUM_TREE_OBJECTID, "csum", offsetof(struct mfs_fs_info, csum_root) },
	};
	size_t i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(roots); i++) {
		struct mfs_root **slot = (struct mfs_root **)((char *)fs + roots[i].off);

		ret = mfs_read_root(fs, roots[i].id, slot);
		if (ret == -ENOENT)
			ret = -EUCLEAN;
		if (ret && ret != -ENOMEM)
			ret = open_problem(fs, ctl, ret, "%s tree root cannot be read: %s",
					   roots[i].name, strerror(-ret));
		if (ret)
			return ret;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/* Which chunks the devices present cannot read, and why (open.h). */
int mfs_explain_unreadable(struct mfs_fs_info *fs, u64 types, char *out, size_t len)
{
	const struct mfs_chunk_map *first = NULL;
	u64 devids[64];
	int i, s, n = 0, nd = 0, pos;

	for (i = 0; i < fs->nr_chunks; i++) {
		const struct mfs_chunk_map *map = fs->chunks[i];

		if (!(map->type & types) || mfs_chunk_readable(map))
			continue;
		if (!n++)
			first = map;
		for (s = 0; s < map->num_stripes; s++) {
			int k;

			if (mfs_dev_usable(map->stripes[s].dev))
				continue;
			for (k = 0; k < nd && devids[k] != map->stripes[s].devid; k++)
				;
			if (k == nd && nd < (int)ARRAY_SIZE(devids))
				devids[nd++] = map->stripes[s].devid;
		}
	}
	if (!n)
		return 0;
	qsort(devids, nd, sizeof(*devids), cmp_u64);
	pos = snprintf(out, len, "%d %s chunk%s cannot be read: device%s", n,
		       (first->type & MFS_BLOCK_GROUP_DATA) ? "data" :
		       (first->type & MFS_BLOCK_GROUP_SYSTEM) ? "system" : "metadata",
		       n > 1 ? "s" : "", nd > 1 ? "s" : "");
	for (i = 0; i < nd && pos < (int)len; i++)
		pos += snprintf(out + pos, len - pos, "%s %llu", i ? "," : "",
				(unsigned long long)devids[i]);
	if (pos < (int)len)
		snprintf(out + pos, len - pos,
			 " missing, and a %s chunk survives the loss of %d device%s at most",
			 mfs_profile_ui_name(first->type),
			 mfs_profile(first->type)->tolerated_failures,
			 mfs_profile(first->type)->tolerated_failures == 1 ? "" : "s");
	return n;
}

/* A member the filesystem goes on without (-o degraded): missing from now on. */
static void drop_member(struct mfs_fs_info *fs, struct mfs_device *dev)
{
	int i, s;

	for (i = 0; i < fs->nr_chunks; i++)
		for (s = 0; s < fs->chunks[i]->num_stripes; s++)
			if (fs->chunks[i]->stripes[s].dev == dev)
				fs->chunks[i]->stripes[s].dev = NULL;
	mfs_io_close(dev->io);
	dev->io = NULL;
	dev->missing = true;
	dev->stale_gen = 0;
}

/*
 * Members whose superblock is behind (DESIGN §2): opened writable, each is
 * caught up from the other copies before anything is written. One that
 * holds the only copy of something written since it fell behind cannot
 * be: the open is refused, or with -o degraded goes on without it.
 * Opened read-only, a stale member is only read where no other copy is.
 */
static int catch_up_members(struct mfs_fs_info *fs, struct mfs_open_ctl *ctl, int *caught_up)
{
	struct mfs_catchup_result res;
	char size[32];
	int i, ret;

	if (!(fs->open_flags & MFS_OPEN_WRITABLE))
		return 0;
	for (i = 0; i < fs->nr_devices; i++) {
		struct mfs_device *dev = fs->devices[i];
		u64 since = dev->stale_gen;

		if (!since || !mfs_dev_usable(dev))
			continue;
		ret = mfs_catch_up_device(fs, dev, &res);
		if (ret) {
			snprintf(ctl->detail, sizeof(ctl->detail),
				 "device %llu (%s) is behind (generation %llu, the filesystem %llu) and could not be caught up: %s",
				 (unsigned long long)dev->devid, dev->path, (unsigned long long)since,
				 (unsigned long long)fs->generation, strerror(-ret));
			return ret;
		}
		if (res.lost && (fs->open_flags & MFS_OPEN_DEGRADED)) {
			mfs_log(fs, "device %llu (%s) is behind (generation %llu, the filesystem %llu) and %llu extents written since have no other copy: going on without it (degraded)",
				(unsigned long long)dev->devid, dev->path, (unsigned long long)since,
				(unsigned long long)fs->generation, (unsigned long long)res.lost);
			drop_member(fs, dev);
			continue;
		}
		if (res.lost) {
			ctl->failed_path = NULL;
			snprintf(ctl->detail, sizeof(ctl->detail),
				 "device %llu (%s) is behind: its superblock is at generation %llu, the filesystem at %llu, and %llu extents written since then have no good copy on the other devices; mount with -o degraded to go on without it",
				 (unsigned long long)dev->devid, dev->path, (unsigned long long)since,
				 (unsigned long long)fs->generation, (unsigned long long)res.lost);
			return -ESTALE;
		}
		(*caught_up)++;
		snprintf(size, sizeof(size), "%llu KiB", (unsigned long long)(res.bytes / 1024));
		mfs_log(fs, "device %llu (%s) was behind (generation %llu, the filesystem %llu): caught up, %llu extents (%s) rewritten from the other copies",
			(unsigned long long)dev->devid, dev->path, (unsigned long long)since,
			(unsigned long long)fs->generation, (unsigned long long)res.extents, size);
	}
	return 0;
}

/* A superblock that says an operation on every member was interrupted. */
static int check_interrupted(struct mfs_fs_info *fs, struct mfs_open_ctl *ctl)
{
	u64 flags = le64_to_cpu(fs->super.flags);

	if (flags & MFS_SUPER_FLAG_CHANGING)
		return -EUCLEAN;
	if ((flags & MFS_SUPER_FLAG_CHANGING_FSID) && !(ctl->flags & MFS_OPEN_CHANGE_FSID)) {
		snprintf(ctl->detail, sizeof(ctl->detail),
			 "a 'mfs filesystem change-uuid' of this filesystem was interrupted; run it again on its devices to finish it");
		return -EUCLEAN;
	}
	return 0;
}

/*
 * With the chunk tree read: a missing member is refused unless the flags
 * allow it (ctl->missing_devid names it). Degraded, the trees must all be
 * readable; data that is not makes a read-only mount whose lost files read
 * as I/O errors (ctl->note says so), and refuses a writable one.
 */
static int check_missing(struct mfs_fs_info *fs, struct mfs_open_ctl *ctl)
{
	int i;

	ctl->missing_devid = 0;
	for (i = 0; i < fs->nr_devices; i++) {
		/* a hot spare holds nothing: without it the filesystem is whole */
		if (fs->devices[i]->missing && !(fs->devices[i]->flags & MFS_DEV_STATE_SPARE)) {
			ctl->missing_devid = fs->devices[i]->devid;
			break;
		}
	}
	if (ctl->missing_devid && !(ctl->flags & (MFS_OPEN_DEGRADED | MFS_OPEN_PARTIAL)))
		return -ENODEV;
	if (partial(fs))
		return 0;
	if (mfs_explain_unreadable(fs, MFS_BLOCK_GROUP_SYSTEM | MFS_BLOCK_GROUP_METADATA,
			       ctl->detail, sizeof(ctl->detail)))
		return -EIO;
	if (!mfs_explain_unreadable(fs, MFS_BLOCK_GROUP_DATA, ctl->note, sizeof(ctl->note)))
		return 0;
	if (ctl->flags & MFS_OPEN_WRITABLE) {
		memcpy(ctl->detail, ctl->note, sizeof(ctl->detail));
		strncat(ctl->detail, "; mount read-only (-o ro,degraded) to read the rest",
			sizeof(ctl->detail) - strlen(ctl->detail) - 1);
		ctl->note[0] = 0;
		return -EIO;
	}
	strncat(ctl->note, "; reads of what they hold fail with an I/O error",
		sizeof(ctl->note) - strlen(ctl->note) - 1);
	return 0;
}

/* The system chunk array, then the chunk tree it maps. */
static int load_chunks(struct mfs_fs_info *fs, struct mfs_open_ctl *ctl)
{
	int ret = mfs_read_sys_array(fs);

	if (ret)
		return ret;
	/* the chunk tree itself: what is missing can only be told from here */
	if (!partial(fs) && mfs_explain_unreadable(fs, MFS_BLOCK_GROUP_SYSTEM, ctl->detail,
					       sizeof(ctl->detail)))
		return -EIO;
	ret = read_chunk_tree(fs, ctl);
	if ((ret == -EUCLEAN || ret == -EIO) && !ctl->detail[0])
		snprintf(ctl->detail, sizeof(ctl->detail),
			 "the chunk tree (root block %llu) cannot be read: %s; 'mfs rescue chunk-recover' rebuilds it from the device and extent trees",
			 (unsigned long long)le64_to_cpu(fs->super.chunk_root), strerror(-ret));
	return ret;
}

/* The root tree, the roots it names, dev extents and block groups. */
static int load_trees(struct mfs_fs_info *fs, struct mfs_open_ctl *ctl)
{
	int ret = mfs_load_root(fs, MFS_ROOT_TREE_OBJECTID, le64_to_cpu(fs->super.root),
				fs->super.root_level, le64_to_cpu(fs->super.root_generation),
				&fs->tree_root);

	if (ret == -EUCLEAN || ret == -EIO)
		snprintf(ctl->detail, sizeof(ctl->detail),
			 "the root tree (block %llu) cannot be read: %s; 'mfs check' tells more",
			 (unsigned long long)le64_to_cpu(fs->super.root), strerror(-ret));
	if (!ret)
		ret = read_roots(fs, ctl);
	if (!ret && fs->dev_root)
		ret = read_dev_extents(fs, ctl);
	if (ret)
		return ret;
	ret = fs->extent_root ? mfs_load_block_groups(fs) : 0;
	if (ret == -EUCLEAN)
		ret = open_problem(fs, ctl, ret,
				   "block groups or extents in the extent tree are inconsistent");
	return ret;
}

int mfs_open_fs(struct mfs_open_ctl *ctl, struct mfs_fs_info **out)
{
	struct mfs_fs_info *fs = mfs_alloc_fs_info();
	int ret, i, caught_up = 0;

	if (!fs)
		return -ENOMEM;
	fs->open_flags = ctl->flags;
	fs->log = ctl->log;
	fs->log_arg = ctl->log_arg;
	ctl->detail[0] = ctl->note[0] = 0;
	ret = open_member_devices(fs, ctl);
	if (!ret)
		ret = check_interrupted(fs, ctl);
	if (!ret)
		ret = ctl->load_chunks ? ctl->load_chunks(fs, ctl) : load_chunks(fs, ctl);
	if (!ret)
		ret = check_missing(fs, ctl);
	if (!ret)
		ret = load_trees(fs, ctl);
	if (!ret)
		ret = catch_up_members(fs, ctl, &caught_up);
	if (ret)
		goto fail;
	mfs_init_alloc_profiles(fs);
	ret = mfs_restripe_load(fs);
	if (ret && !partial(fs))
		goto fail;
	/* with the allocation profiles known: a hook may write */
	if (ctl->trees_loaded) {
		ret = ctl->trees_loaded(fs, ctl);
		if (ret)
			goto fail;
	}
	if (fs->fs_root) {
		ret = mfs_fs_setup(fs);
		if (ret && !partial(fs))
			goto fail;
	}
	/*
	 * A member just caught up holds everything, but its superblock still
	 * says it is behind: a commit now gives it the current one, or an
	 * unmount with nothing written would leave it stale on disk (and the
	 * next open would catch it up all over again).
	 */
	if (caught_up) {
		struct mfs_trans_handle *trans;

		ret = mfs_start_transaction(fs, &trans);
		if (!ret)
			ret = mfs_commit_transaction(trans);
		if (ret)
			goto fail;
	}
	for (i = 0; i < fs->nr_devices; i++)
		mfs_io_arm_faults(fs->devices[i]->io);
	*out = fs;
	return 0;
fail:
	/* ctl->missing_devid and failed_path stay set for the caller's message */
	mfs_free_fs_info(fs);
	return ret;
}

int mfs_close_fs(struct mfs_fs_info *fs)
{
	int ret = 0;

	if (!fs)
		return 0;
	if ((fs->open_flags & MFS_OPEN_WRITABLE) && !fs->fatal_error)
		ret = mfs_commit_if_dirty(fs);
	mfs_free_fs_info(fs);
	return ret;
}
