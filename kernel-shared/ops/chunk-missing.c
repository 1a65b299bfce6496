/*
 * chunk-recover with members missing: who each one was (device uuid,
 * size, flags), learnt from what survives of the old chunk tree, so that
 * the rebuilt chunks keep its stripes for a degraded mount, a replace or
 * a 'device delete missing'. A superblock's device item only describes
 * its own device: the others are named by chunk and device items alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uuid/uuid.h>
#include "kernel-shared/ops/chunk-recover-internal.h"
#include "kernel-shared/volumes/volumes.h"

/* The device tree has an extent of devid at physical for the chunk at chunk_offset? */
static bool dext_at(const struct rc_state *st, u64 devid, u64 physical, u64 chunk_offset)
{
	u64 i;

	for (i = 0; i < st->nr_dexts; i++)
		if (st->dexts[i].devid == devid && st->dexts[i].physical == physical &&
		    st->dexts[i].chunk_offset == chunk_offset)
			return true;
	return false;
}

/*
 * The uuid the newest surviving chunk item gives devid, at a stripe the
 * device tree confirms (same devid, offset and chunk): an item of a chunk
 * since deleted, or of a devid since reused, does not count.
 */
static bool uuid_from_chunks(const struct rc_state *st, u64 devid, u8 *uuid)
{
	u64 gen = 0, h;
	bool found = false;
	int i;

	for (h = 0; h < st->nr_hints; h++) {
		const struct mfs_chunk *c = (const struct mfs_chunk *)st->hints[h].item;

		if (found && st->hints[h].generation <= gen)
			continue;
		for (i = 0; i < le16_to_cpu(c->num_stripes); i++) {
			if (le64_to_cpu(c->stripe[i].devid) != devid ||
			    !dext_at(st, devid, le64_to_cpu(c->stripe[i].offset), st->hints[h].logical))
				continue;
			memcpy(uuid, c->stripe[i].dev_uuid, MFS_UUID_SIZE);
			gen = st->hints[h].generation;
			found = true;
			break;
		}
	}
	return found;
}

/* The newest surviving device item of devid (of this uuid, when one is given). */
static const struct mfs_dev_item *dev_item_hint(const struct rc_state *st, u64 devid,
						const u8 *uuid)
{
	const struct rc_dev_hint *best = NULL;
	u64 i;

	for (i = 0; i < st->nr_dev_hints; i++) {
		const struct rc_dev_hint *h = &st->dev_hints[i];

		if (le64_to_cpu(h->item.devid) != devid ||
		    (uuid && memcmp(h->item.uuid, uuid, MFS_UUID_SIZE)) ||
		    (best && best->generation >= h->generation))
			continue;
		best = h;
	}
	return best ? &best->item : NULL;
}

static u64 extents_end(const struct rc_state *st, u64 devid)
{
	u64 end = 0, i;

	for (i = 0; i < st->nr_dexts; i++)
		if (st->dexts[i].devid == devid)
			end = max_t(u64, end, st->dexts[i].physical + st->dexts[i].length);
	return end;
}

static bool uuid_taken(const struct mfs_fs_info *fs, const u8 *uuid)
{
	int i;

	for (i = 0; i < fs->nr_devices; i++)
		if (!memcmp(fs->devices[i]->uuid, uuid, MFS_UUID_SIZE))
			return true;
	return false;
}

/*
 * Its uuid, from the newest surviving chunk item that names it at an
 * extent the device tree confirms, else from its newest device item.
 */
static bool learn_uuid(const struct rc_state *st, u64 devid, u8 *uuid,
		       const struct mfs_dev_item **di)
{
	bool named = uuid_from_chunks(st, devid, uuid);

	*di = dev_item_hint(st, devid, named ? uuid : NULL);
	if (!named && *di)
		memcpy(uuid, (*di)->uuid, MFS_UUID_SIZE);
	return (named || *di) && !uuid_taken(st->fs, uuid);
}

static void defer_why(struct rc_state *st, const char *why, u64 devid)
{
	if (!st->missing_why[0])
		snprintf(st->missing_why, sizeof(st->missing_why),
			 "device %llu is missing and %s: name the device (or 'mfs device scan' it) to rebuild the chunk tree",
			 (unsigned long long)devid, why);
}

/*
 * The missing member devid as a device of the filesystem, missing. Its
 * size is its surviving device item's (0: none). What cannot be learnt
 * is refused only once every chunk proved readable without it: a chunk
 * that cannot be read is the first reason to give.
 */
static int add_missing(struct rc_state *st, u64 devid)
{
	const struct mfs_dev_item *di;
	struct mfs_device *dev;
	u8 uuid[MFS_UUID_SIZE] = { 0 };
	int ret;

	if (!learn_uuid(st, devid, uuid, &di))
		defer_why(st, "holds device extents, but no surviving chunk or device item names its device uuid: its stripes cannot be kept",
			  devid);
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->devid = devid;
	memcpy(dev->uuid, uuid, MFS_UUID_SIZE);
	dev->total_bytes = di ? le64_to_cpu(di->total_bytes) : 0;
	dev->flags = di ? le64_to_cpu(di->flags) : 0;
	dev->missing = true;
	dev->in_tree = true;
	ret = mfs_add_device(st->fs, dev);
	if (ret)
		free(dev);
	return ret;
}

/*
 * The sizes of the missing members must add up with the present ones'
 * (their own superblocks give them) to the superblock's total: one not
 * known from a device item is what the total leaves; two are not told.
 */
static void settle_sizes(struct rc_state *st)
{
	struct mfs_fs_info *fs = st->fs;
	u64 total = le64_to_cpu(fs->super.total_bytes), known = 0;
	struct mfs_device *unknown = NULL, *missing = NULL;
	int i, nunknown = 0;

	for (i = 0; i < fs->nr_devices; i++) {
		known += fs->devices[i]->total_bytes;
		if (fs->devices[i]->missing && !missing)
			missing = fs->devices[i];
		if (fs->devices[i]->missing && !fs->devices[i]->total_bytes && !nunknown++)
			unknown = fs->devices[i];
	}
	if (nunknown > 1) {
		defer_why(st, "its size cannot be learnt: no surviving device item gives it, and more than one member is missing",
			  unknown->devid);
	} else if (nunknown == 1 && total > known && total - known >= extents_end(st, unknown->devid)) {
		unknown->total_bytes = total - known;
	} else if (nunknown == 1) {
		defer_why(st, "its size cannot be learnt: no surviving device item gives it, and the superblock's total leaves too little for its device extents",
			  unknown->devid);
	} else if (known != total) {
		defer_why(st, "the sizes the surviving device items give the missing members do not add up to the superblock's total: they are not told for certain",
			  missing->devid);
	}
	for (i = 0; i < fs->nr_devices; i++) {
		struct mfs_device *dev = fs->devices[i];

		if (dev->missing && dev->total_bytes && dev->total_bytes < extents_end(st, dev->devid))
			defer_why(st, "its size ends before its device extents do", dev->devid);
	}
}

static void say_missing(struct rc_state *st)
{
	char ustr[40];
	int i;

	for (i = 0; i < st->fs->nr_devices; i++) {
		const struct mfs_device *dev = st->fs->devices[i];

		if (!dev->missing)
			continue;
		uuid_unparse(dev->uuid, ustr);
		rc_say(st, "device %llu is missing: uuid %s, size %llu; its stripes are kept",
		       (unsigned long long)dev->devid, ustr, (unsigned long long)dev->total_bytes);
	}
}

int rc_add_missing(struct rc_state *st)
{
	struct mfs_fs_info *fs = st->fs;
	u64 want = le64_to_cpu(fs->super.num_devices), i;
	int n = 0, present = fs->nr_devices, ret = 0;

	for (i = 0; i < st->nr_dexts && !ret; i++) {
		if (mfs_find_device(fs, st->dexts[i].devid))
			continue;
		ret = add_missing(st, st->dexts[i].devid);
		n++;
	}
	if (ret)
		return ret;
	if ((u64)fs->nr_devices < want) {
		rc_why(st, "the filesystem has %llu devices, %d are present and %d missing ones hold device extents: the other %llu cannot be told (name them, or 'mfs device scan' them)",
		       (unsigned long long)want, present, n,
		       (unsigned long long)(want - fs->nr_devices));
		return -ENODEV;
	}
	if (!n)
		return 0;
	st->rc->nr_missing = n;
	settle_sizes(st);
	if (!st->missing_why[0])
		say_missing(st);
	return 0;
}

int rc_missing_known(struct rc_state *st)
{
	if (!st->missing_why[0])
		return 0;
	rc_why(st, "%s", st->missing_why);
	return -ENODEV;
}
