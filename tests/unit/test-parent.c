/*
 * What a tree pointer says of its block (DESIGN §2): a copy of the wrong
 * generation - what an old image of a device holds where the block now
 * lives - or with another first key is a bad copy. Crafted stale nodes on
 * one mirror of a raid1 filesystem are never served, are counted as
 * generation errors and are rewritten from the good copy.
 */
#include <fcntl.h>
#include <ftw.h>
#include <unistd.h>

#include "kernel-shared/tree/ctree.h"
#include "kernel-shared/ops/create.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/tree/transaction.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/ops/open.h"
#include "unit.h"

#define NDEVS 2

static char dir[64];
static char paths[NDEVS][96];
static const char *pathv[NDEVS];

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(path);
}

static void cleanup(void)
{
	if (dir[0])
		nftw(dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
	dir[0] = 0;
}

/* A raid1 filesystem (metadata profile meta) on ndevs fresh images. */
static int make_fs(int ndevs, u64 meta)
{
	struct mfs_mkfs_params p = { 0 };
	const char *tmp = getenv("TMPDIR");
	int i;

	snprintf(dir, sizeof(dir), "%s/mfs-parent-XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		return -errno;
	for (i = 0; i < ndevs; i++) {
		int fd;

		snprintf(paths[i], sizeof(paths[i]), "%s/d%d.img", dir, i);
		pathv[i] = paths[i];
		fd = open(paths[i], O_CREAT | O_RDWR | O_TRUNC, 0600);
		if (fd < 0 || ftruncate(fd, 512 * SZ_1M) < 0)
			return -EIO;
		close(fd);
	}
	p.paths = pathv;
	p.npaths = ndevs;
	p.data_profile = 0;
	p.metadata_profile = meta;
	p.nodesize = 4096;
	p.sectorsize = 4096;
	return mfs_make_fs(&p);
}

static int open_fs(int ndevs, unsigned int flags, struct mfs_fs_info **fs)
{
	struct mfs_open_ctl ctl = {
		.paths = pathv, .npaths = ndevs, .flags = flags, .sb_mirror = -1,
	};

	return mfs_open_fs(&ctl, fs);
}

/* Enough items in the fs tree for a root node over several leaves. */
static int fill_tree(struct mfs_fs_info *fs)
{
	struct mfs_trans_handle *trans;
	u8 data[200] = { 0 };
	int i, ret;

	ret = mfs_start_transaction(fs, &trans);
	for (i = 0; !ret && i < 400; i++) {
		struct mfs_key key = { 100000 + i, MFS_XATTR_ITEM_KEY, i };

		data[0] = i;
		ret = mfs_insert_item(trans, fs->fs_root, &key, data, sizeof(data));
	}
	if (!ret)
		ret = mfs_commit_transaction(trans);
	return ret;
}

/* The device and physical place of copy `mirror` of a block. */
static struct mfs_device *copy_place(struct mfs_fs_info *fs, u64 bytenr, int mirror, u64 *phys)
{
	struct mfs_chunk_map *map = mfs_find_chunk(fs, bytenr);
	struct mfs_io_map io;

	if (!map || mfs_map_block(map, bytenr, &io) || mirror > io.ncopies)
		return NULL;
	*phys = io.physical[mirror - 1];
	return map->stripes[io.stripe[mirror - 1]].dev;
}

/*
 * Put a stale version of the fs tree's leaf in slot 1 of the root on copy
 * `mirror`: the same block with an older generation (and a valid
 * checksum), or with its first key changed. Returns the leaf's bytenr and
 * the devid that holds the stale copy.
 */
static int plant_stale_copy(struct mfs_fs_info *fs, int mirror, bool change_key,
			    u64 *bytenr, u64 *devid, u8 *good)
{
	struct extent_buffer *root = fs->fs_root->node;
	struct mfs_header *h;
	struct mfs_device *dev;
	u8 *buf;
	u64 phys;
	int ret;

	if (eb_level(root) < 1 || eb_nritems(root) < 2)
		return -EINVAL;
	*bytenr = node_blockptr(root, 1);
	dev = copy_place(fs, *bytenr, mirror, &phys);
	if (!dev)
		return -EINVAL;
	*devid = dev->devid;
	buf = malloc(fs->nodesize);
	if (!buf)
		return -ENOMEM;
	ret = mfs_io_read(dev->io, buf, fs->nodesize, phys);
	memcpy(good, buf, fs->nodesize);
	h = (struct mfs_header *)buf;
	if (change_key) {
		struct mfs_item *it = (struct mfs_item *)(buf + sizeof(*h));

		it->key.offset = cpu_to_le64(le64_to_cpu(it->key.offset) + 1);
	} else {
		h->generation = cpu_to_le64(le64_to_cpu(h->generation) - 1);
	}
	mfs_csum_tree_block(fs, buf);
	if (!ret)
		ret = mfs_io_write(dev->io, buf, fs->nodesize, phys);
	free(buf);
	return ret;
}

static u8 *read_copy(struct mfs_fs_info *fs, u64 bytenr, int mirror)
{
	u8 *buf = malloc(fs->nodesize);
	struct mfs_device *dev;
	u64 phys;

	dev = copy_place(fs, bytenr, mirror, &phys);
	if (!buf || !dev || mfs_io_read(dev->io, buf, fs->nodesize, phys)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* Walk the fs tree (every block through its pointer) and count its items. */
static int count_items(struct mfs_fs_info *fs, u64 *n)
{
	struct mfs_key key = { 0, 0, 0 };
	struct mfs_path path;
	int ret;

	*n = 0;
	mfs_init_path(&path);
	ret = mfs_search_forward(fs->fs_root, &key, &path);
	while (ret == 0) {
		(*n)++;
		ret = mfs_next_item(fs->fs_root, &path);
	}
	mfs_release_path(&path);
	return ret < 0 ? ret : 0;
}

static void test_verify_against_pointer(void)
{
	struct mfs_fs_info *fs = NULL;
	struct extent_buffer *root;
	struct mfs_tree_check chk;
	struct mfs_key key;
	u8 *buf;
	int stat = -1;

	REQUIRE(make_fs(NDEVS, MFS_BLOCK_GROUP_RAID1) == 0);
	REQUIRE(open_fs(NDEVS, MFS_OPEN_WRITABLE, &fs) == 0);
	REQUIRE(fill_tree(fs) == 0);
	root = fs->fs_root->node;
	REQUIRE(eb_level(root) >= 1);
	buf = read_copy(fs, node_blockptr(root, 1), 1);
	REQUIRE(buf);
	mfs_child_check(root, 1, MFS_FS_TREE_OBJECTID, &key, &chk);
	CHECK_EQ(mfs_verify_tree_block(fs, buf, node_blockptr(root, 1), &chk, &stat), 0);
	/* an older generation: well formed, but stale */
	chk.transid++;
	CHECK_EQ(mfs_verify_tree_block(fs, buf, node_blockptr(root, 1), &chk, &stat), -EUCLEAN);
	CHECK_EQ(stat, MFS_DEV_STAT_GENERATION_ERRS);
	chk.transid--;
	/* another first key than the pointer's */
	key.offset++;
	CHECK_EQ(mfs_verify_tree_block(fs, buf, node_blockptr(root, 1), &chk, &stat), -EUCLEAN);
	CHECK_EQ(stat, MFS_DEV_STAT_CORRUPTION_ERRS);
	/* nothing known of the pointer: only the block itself is checked */
	CHECK_EQ(mfs_verify_tree_block(fs, buf, node_blockptr(root, 1), NULL, NULL), 0);
	free(buf);
	mfs_close_fs(fs);
	cleanup();
}

/*
 * copy: which mirror gets the stale block; writable: whether the open may
 * repair it. Every item stays readable, the stale copy is counted against
 * its device, and (writable) overwritten with the good block.
 */
static void stale_copy_case(int mirror, bool change_key, bool writable)
{
	struct mfs_fs_info *fs = NULL;
	struct mfs_device *dev;
	u8 *good = NULL, *after;
	u64 bytenr = 0, devid = 0, items = 0, items_before = 0;
	int stat = change_key ? MFS_DEV_STAT_CORRUPTION_ERRS : MFS_DEV_STAT_GENERATION_ERRS;

	REQUIRE(make_fs(NDEVS, MFS_BLOCK_GROUP_RAID1) == 0);
	REQUIRE(open_fs(NDEVS, MFS_OPEN_WRITABLE, &fs) == 0);
	REQUIRE(fill_tree(fs) == 0);
	REQUIRE(count_items(fs, &items_before) == 0);
	good = malloc(fs->nodesize);
	REQUIRE(good);
	REQUIRE(plant_stale_copy(fs, mirror, change_key, &bytenr, &devid, good) == 0);
	mfs_free_fs_info(fs);	/* no commit: the planted copy stays */

	/* read_policy points at the stale copy: it must not be what is served */
	REQUIRE(open_fs(NDEVS, writable ? MFS_OPEN_WRITABLE : 0, &fs) == 0);
	fs->read_devid = devid;
	CHECK_EQ(count_items(fs, &items), 0);
	CHECK_EQ(items, items_before);
	dev = mfs_find_device(fs, devid);
	REQUIRE(dev);
	CHECK_EQ(dev->stats[stat], 1);
	after = read_copy(fs, bytenr, mirror);
	REQUIRE(after);
	if (writable)
		CHECK(!memcmp(after, good, fs->nodesize));
	else
		CHECK(memcmp(after, good, fs->nodesize));
	free(after);
	if (writable) {
		/* the counter is persisted */
		CHECK_EQ(mfs_close_fs(fs), 0);
		REQUIRE(open_fs(NDEVS, 0, &fs) == 0);
		dev = mfs_find_device(fs, devid);
		REQUIRE(dev);
		CHECK_EQ(dev->stats[stat], 1);
	}
	mfs_free_fs_info(fs);
	free(good);
	cleanup();
}

static void test_stale_copy_on_mirror1_repaired(void)
{
	stale_copy_case(1, false, true);
}

static void test_stale_copy_on_mirror2_repaired(void)
{
	stale_copy_case(2, false, true);
}

static void test_stale_copy_read_only_not_written(void)
{
	stale_copy_case(2, false, false);
}

static void test_wrong_first_key_is_a_bad_copy(void)
{
	stale_copy_case(1, true, true);
}

/* With no other copy a stale block is an error, never the tree's contents. */
static void test_stale_only_copy_is_an_error(void)
{
	struct mfs_fs_info *fs = NULL;
	u8 *good;
	u64 bytenr, devid, items = 0;

	REQUIRE(make_fs(1, 0) == 0);
	REQUIRE(open_fs(1, MFS_OPEN_WRITABLE, &fs) == 0);
	REQUIRE(fill_tree(fs) == 0);
	good = malloc(fs->nodesize);
	REQUIRE(good);
	REQUIRE(plant_stale_copy(fs, 1, false, &bytenr, &devid, good) == 0);
	mfs_free_fs_info(fs);
	REQUIRE(open_fs(1, 0, &fs) == 0);
	CHECK_EQ(count_items(fs, &items), -EUCLEAN);
	CHECK_EQ(fs->devices[0]->stats[MFS_DEV_STAT_GENERATION_ERRS], 1);
	mfs_free_fs_info(fs);
	free(good);
	cleanup();
}

int main(void)
{
	RUN(test_verify_against_pointer);
	RUN(test_stale_copy_on_mirror1_repaired);
	RUN(test_stale_copy_on_mirror2_repaired);
	RUN(test_stale_copy_read_only_not_written);
	RUN(test_wrong_first_key_is_a_bad_copy);
	RUN(test_stale_only_copy_is_an_error);
	UNIT_EXIT();
}
