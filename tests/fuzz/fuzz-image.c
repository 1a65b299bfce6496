/*
 * The image fuzzing harness (libFuzzer's entry point): one input is a
 * single-device image in the sparse encoding below; it is checked, opened
 * the way a read-only mount opens it and walked the way `mfs restore`
 * walks it, all in-process. The engine must return an error for anything
 * on the image, never crash, hang, leak or hit undefined behaviour.
 *
 * Input (all integers little-endian), see tests/fuzz/image-pack.py; the
 * image size is a multiple of 64 KiB from 1 MiB to 1 GiB:
 *   "MFZ1"  u8 flags  u8[3] unused  u64 image size
 *   then records until the input ends: u64 offset, u32 len, len bytes
 * The image is zero but for the records. Flag FIX_CSUMS: before opening,
 * the checksum of every superblock copy and of every block that looks like
 * a tree node of this filesystem is recomputed, so that mutations reach
 * the parsers behind the checksum instead of stopping at it. Flag
 * SUPER_COPY_1: the check opens from superblock copy 1 (`mfs check -s 1`).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include "kernel-shared/block/csum.h"
#include "kernel-shared/fs/inode.h"
#include "kernel-shared/ops/check.h"
#include "kernel-shared/ops/open.h"
#include "kernel-shared/tree/disk-io.h"
#include "tests/fuzz/fuzz-image.h"

#define FUZZ_MAGIC		"MFZ1"
#define FUZZ_HEADER_SIZE	16
#define FUZZ_RECORD_HEADER	12
#define FUZZ_FLAG_FIX_CSUMS	(1U << 0)
#define FUZZ_FLAG_SUPER_COPY_1	(1U << 1)
/*
 * The image is a sparse memfd, so its size costs nothing (the seeds are
 * mkfs.mfs's minimum, 128 MiB); below 1 MiB nothing of mfs fits, and 1 GiB
 * leaves superblock copy 2 (at 256 GiB) to the code that finds it absent.
 */
#define FUZZ_MIN_IMAGE		SZ_1M
#define FUZZ_MAX_IMAGE		(1ULL << 30)

/* What one walk may do, so that a huge size or a long directory is no hang. */
#define WALK_MAX_DEPTH		16
#define WALK_MAX_ENTRIES	512
#define WALK_MAX_READ		(4ULL << 20)
#define WALK_BUF		(256 * 1024)

/* MFS_FUZZ_DEBUG set: what each step did, on stderr (for a look at one input). */
static void debug(const char *fmt, ...)
{
	va_list ap;

	if (!getenv("MFS_FUZZ_DEBUG"))
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

static u64 get_le64(const u8 *p)
{
	mfs_le64 v;

	memcpy(&v, p, sizeof(v));
	return le64_to_cpu(v);
}

static u32 get_le32(const u8 *p)
{
	mfs_le32 v;

	memcpy(&v, p, sizeof(v));
	return le32_to_cpu(v);
}

/* The records of the input onto fd (an image of image_size zero bytes). */
static int write_records(int fd, const u8 *data, size_t size, u64 image_size)
{
	size_t pos = FUZZ_HEADER_SIZE;

	while (size - pos >= FUZZ_RECORD_HEADER) {
		u64 off = get_le64(data + pos);
		size_t len = get_le32(data + pos + 8);

		pos += FUZZ_RECORD_HEADER;
		if (len > size - pos)
			len = size - pos;
		if (off < image_size) {
			size_t n = off + len > image_size ? image_size - off : len;

			if (pwrite(fd, data + pos, n, off) != (ssize_t)n)
				return -1;
		}
		pos += len;
	}
	return 0;
}

static bool super_usable(const struct mfs_super_block *sb)
{
	u32 nodesize = le32_to_cpu(sb->nodesize);

	return le64_to_cpu(sb->magic) == MFS_MAGIC &&
	       mfs_csum_size(le16_to_cpu(sb->csum_type)) > 0 &&
	       nodesize >= MFS_SECTOR && nodesize <= SZ_64K && !(nodesize & (nodesize - 1));
}

/* A node of this filesystem at off gets its checksum recomputed. */
static void fix_node(int fd, u64 off, const struct mfs_super_block *sb, const u8 *fsid, u8 *buf)
{
	u32 nodesize = le32_to_cpu(sb->nodesize);
	u8 sum[MFS_CSUM_SIZE];

	if (pread(fd, buf, nodesize, off) != (ssize_t)nodesize)
		return;
	if (memcmp(((struct mfs_header *)buf)->fsid, fsid, MFS_FSID_SIZE))
		return;
	mfs_csum_compute(le16_to_cpu(sb->csum_type), buf + MFS_CSUM_FIELD_SIZE,
			 nodesize - MFS_CSUM_FIELD_SIZE, sum);
	/* a failed write leaves the old sum: the input is merely less useful */
	(void)!pwrite(fd, sum, MFS_CSUM_FIELD_SIZE, off);
}

/*
 * Superblock copies first (the primary's nodesize, csum type and fsid then
 * say what a node is), then every node-aligned block a record touched.
 */
static void fix_csums(int fd, const u8 *data, size_t size, u64 image_size)
{
	struct mfs_super_block sb, primary;
	bool have_primary = false;
	size_t pos = FUZZ_HEADER_SIZE;
	const u8 *fsid;
	u8 *buf;
	int m;

	for (m = 0; m < MFS_SUPER_MIRROR_MAX; m++) {
		u64 off = mfs_sb_offset(m);

		if (off + sizeof(sb) > image_size ||
		    pread(fd, &sb, sizeof(sb), off) != (ssize_t)sizeof(sb) || !super_usable(&sb))
			continue;
		mfs_csum_super(&sb);
		if (pwrite(fd, &sb, sizeof(sb), off) != (ssize_t)sizeof(sb))
			continue;
		if (!m) {
			primary = sb;
			have_primary = true;
		}
	}
	if (!have_primary)
		return;
	fsid = le64_to_cpu(primary.incompat_flags) & MFS_FEATURE_INCOMPAT_METADATA_UUID ?
	       primary.metadata_uuid : primary.fsid;
	buf = malloc(SZ_64K);
	if (!buf)
		return;
	while (size - pos >= FUZZ_RECORD_HEADER) {
		u64 nodesize = le32_to_cpu(primary.nodesize);
		u64 off = get_le64(data + pos), len = get_le32(data + pos + 8), b;

		pos += FUZZ_RECORD_HEADER;
		if (len > size - pos)
			len = size - pos;
		pos += len;
		if (off >= image_size || !len)
			continue;
		if (len > image_size - off)
			len = image_size - off;
		for (b = off - off % nodesize; b < off + len && b + nodesize <= image_size;
		     b += nodesize)
			if (b >= MFS_DEVICE_RESERVED)
				fix_node(fd, b, &primary, fsid, buf);
	}
	free(buf);
}

struct walk {
	struct mfs_fs_info *fs;
	u64 entries;		/* left to visit */
	u64 read_left;		/* bytes left to read */
	u8 *buf;
};

struct dir_list {
	u64 ino[WALK_MAX_ENTRIES];
	char *name[WALK_MAX_ENTRIES];
	int nr;
};

static int collect(void *arg, const char *name, u64 ino, u32 type, u64 next,
		   const struct mfs_stat *st)
{
	struct dir_list *l = arg;

	(void)type;
	(void)next;
	(void)st;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	if (l->nr == WALK_MAX_ENTRIES)
		return 1;
	l->name[l->nr] = strdup(name);
	if (!l->name[l->nr])
		return 1;
	l->ino[l->nr++] = ino;
	return 0;
}

/* The data of a file as restore copies it: extent by extent, within the budget. */
static void walk_file(struct walk *w, const struct mfs_stat *st)
{
	u64 off = 0, data, hole;

	while (off < st->size && w->read_left) {
		if (mfs_lseek(w->fs, st->ino, off, SEEK_DATA, &data) ||
		    mfs_lseek(w->fs, st->ino, data, SEEK_HOLE, &hole) || hole <= data) {
			data = off;
			hole = st->size;
		}
		for (off = data; off < hole && w->read_left; ) {
			u64 len = hole - off;

			if (len > WALK_BUF)
				len = WALK_BUF;
			if (len > w->read_left)
				len = w->read_left;
			w->read_left -= len;
			if (mfs_read(w->fs, st->ino, off, len, w->buf) < 0)
				mfs_read(w->fs, st->ino, off, MFS_SECTOR, w->buf);
			off += len;
		}
		off = hole;
	}
}

static void walk_xattrs(struct walk *w, u64 ino)
{
	ssize_t len = mfs_listxattr(w->fs, ino, NULL, 0);
	char *list, *name;

	if (len <= 0 || len > WALK_BUF)
		return;
	list = malloc(len);
	if (list && mfs_listxattr(w->fs, ino, list, len) == len) {
		for (name = list; name < list + len; name += strlen(name) + 1) {
			if (!memchr(name, 0, list + len - name))
				break;
			mfs_getxattr(w->fs, ino, name, w->buf, WALK_BUF);
		}
	}
	free(list);
}

static void walk_dir(struct walk *w, u64 dir, int depth);

static void walk_inode(struct walk *w, u64 ino, int depth)
{
	struct mfs_stat st;
	char target[4096];

	if (!w->entries)
		return;
	w->entries--;
	if (mfs_getattr(w->fs, ino, &st))
		return;
	walk_xattrs(w, ino);
	if (S_ISDIR(st.mode))
		walk_dir(w, ino, depth + 1);
	else if (S_ISREG(st.mode))
		walk_file(w, &st);
	else if (S_ISLNK(st.mode))
		mfs_readlink(w->fs, ino, target, sizeof(target));
}

/* Each entry is looked up by name too, the way a mount's path walk finds it. */
static void walk_dir(struct walk *w, u64 dir, int depth)
{
	struct dir_list *l;
	struct mfs_stat st;
	int i;

	if (depth > WALK_MAX_DEPTH)
		return;
	l = calloc(1, sizeof(*l));
	if (!l)
		return;
	mfs_readdirplus(w->fs, dir, 0, collect, l);
	for (i = 0; i < l->nr; i++) {
		mfs_lookup(w->fs, dir, l->name[i], &st);
		walk_inode(w, l->ino[i], depth);
		free(l->name[i]);
	}
	free(l);
}

static void walk_fs(struct mfs_fs_info *fs)
{
	struct walk w = { .fs = fs, .entries = WALK_MAX_ENTRIES, .read_left = WALK_MAX_READ };
	struct statvfs sv;

	w.buf = malloc(WALK_BUF);
	if (!w.buf)
		return;
	mfs_statfs(fs, &sv);
	walk_inode(&w, MFS_ROOT_DIR_OBJECTID, 0);
	debug("walk: %llu inode(s), %llu byte(s) read\n",
	      (unsigned long long)(WALK_MAX_ENTRIES - w.entries),
	      (unsigned long long)(WALK_MAX_READ - w.read_left));
	free(w.buf);
}

int fuzz_save_image(int fd, uint64_t image_size, const char *path)
{
	static u8 zero[SZ_64K];
	u8 buf[SZ_64K];
	int out, ret = 0;
	u64 off;

	out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out < 0)
		return -1;
	if (ftruncate(out, image_size))
		ret = -1;
	/* only the blocks that hold something: the file stays sparse */
	for (off = 0; !ret && off < image_size; off += sizeof(buf)) {
		if (pread(fd, buf, sizeof(buf), off) != sizeof(buf))
			ret = -1;
		else if (memcmp(buf, zero, sizeof(buf)) &&
			 pwrite(out, buf, sizeof(buf), off) != sizeof(buf))
			ret = -1;
	}
	if (close(out))
		ret = -1;
	return ret;
}

static void quiet(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

static int open_image(const char *path, unsigned int flags, int sb_mirror,
		      struct mfs_fs_info **fs)
{
	const char *paths[] = { path };
	struct mfs_open_ctl ctl = {
		.paths = paths, .npaths = 1, .flags = flags | MFS_OPEN_NO_EXCL,
		.sb_mirror = sb_mirror, .log = quiet,
	};
	int ret = mfs_open_fs(&ctl, fs);

	debug("open (flags %#x): %s %s\n", flags, strerror(-ret), ctl.detail);
	return ret;
}

/* `mfs check --check-data-csum [-s N]`, read-only: every phase until one stops. */
static void run_check(const char *path, int sb_mirror)
{
	static int (*const phases[])(struct mfs_fs_info *, struct mfs_check_ctl *) = {
		mfs_check_supers, mfs_check_chunks, mfs_check_trees,
		mfs_check_extents, mfs_check_fs_tree, mfs_check_data_csums,
	};
	struct mfs_check_ctl ctl = { .report = quiet, .warn = quiet };
	struct mfs_fs_info *fs;
	size_t i;

	if (open_image(path, MFS_OPEN_PARTIAL, sb_mirror, &fs))
		return;
	for (i = 0; i < sizeof(phases) / sizeof(phases[0]); i++) {
		int ret = phases[i](fs, &ctl);

		debug("check phase %zu: %s, %llu error(s)\n", i + 1, strerror(-ret),
		      (unsigned long long)ctl.errors);
		if (ret)
			break;
	}
	mfs_check_free(&ctl);
	mfs_free_fs_info(fs);
}

/* A read-only mount, then `mfs restore`'s open (members missing, broken trees). */
static void run_walks(const char *path)
{
	static const unsigned int flags[] = { 0, MFS_OPEN_DEGRADED | MFS_OPEN_PARTIAL };
	struct mfs_fs_info *fs;
	size_t i;

	for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		if (open_image(path, flags[i], -1, &fs))
			continue;
		walk_fs(fs);
		mfs_close_fs(fs);
	}
}

int fuzz_make_image(const uint8_t *data, size_t size, uint64_t *image_size)
{
	int fd;

	if (size < FUZZ_HEADER_SIZE || memcmp(data, FUZZ_MAGIC, 4))
		return -1;
	*image_size = get_le64(data + 8);
	if (*image_size < FUZZ_MIN_IMAGE || *image_size > FUZZ_MAX_IMAGE || *image_size % SZ_64K)
		return -1;
	fd = memfd_create("mfs-fuzz", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (ftruncate(fd, *image_size) || write_records(fd, data, size, *image_size)) {
		close(fd);
		return -1;
	}
	if (data[4] & FUZZ_FLAG_FIX_CSUMS)
		fix_csums(fd, data, size, *image_size);
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *save = getenv("MFS_FUZZ_SAVE");
	u64 image_size;
	char path[64];
	int fd;

	fd = fuzz_make_image(data, size, &image_size);
	if (fd < 0)
		return 0;
	/* MFS_FUZZ_SAVE=FILE: the image as the engine is about to see it, for
	 * `mfs check` or `mfs inspect-internal` to look at an input that failed */
	if (save)
		fuzz_save_image(fd, image_size, save);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	run_check(path, data[4] & FUZZ_FLAG_SUPER_COPY_1 ? 1 : -1);
	run_walks(path);
	close(fd);
	return 0;
}
