/*
 * Device discovery and safety checks for the tools: foreign signatures
 * (libblkid), mount state (/proc/self/mountinfo), exclusive opens, the list
 * of block devices (libudev) and size/discard on devices and image files.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <linux/fs.h>

#include <blkid.h>
#include <libudev.h>

#include "common/device-scan.h"

static void copy_string(char *dst, size_t len, const char *src)
{
	if (len)
		snprintf(dst, len, "%s", src);
}

int mfs_probe_foreign_signature(const char *path, char *type, size_t typelen,
				char *label, size_t labellen, bool *is_ptable)
{
	const char *value;
	blkid_probe pr;
	int ret;

	copy_string(type, typelen, "");
	copy_string(label, labellen, "");
	*is_ptable = false;

	errno = 0;
	pr = blkid_new_probe_from_filename(path);
	if (!pr)
		return errno ? -errno : -EIO;
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE |
					  BLKID_SUBLKS_LABEL);
	blkid_probe_enable_partitions(pr, 1);

	ret = blkid_do_safeprobe(pr);
	if (ret == -2) {
		/* Several signatures: name the first one found. */
		blkid_reset_probe(pr);
		ret = blkid_do_probe(pr);
	}
	if (ret == 1) {
		ret = 0;
		goto out;
	}
	if (ret < 0) {
		ret = -EIO;
		goto out;
	}

	ret = 1;
	if (blkid_probe_lookup_value(pr, "TYPE", &value, NULL) == 0) {
		if (strcmp(value, "mfs") == 0) {
			ret = 0;
			goto out;
		}
		copy_string(type, typelen, value);
		if (blkid_probe_lookup_value(pr, "LABEL", &value, NULL) == 0)
			copy_string(label, labellen, value);
	} else if (blkid_probe_lookup_value(pr, "PTTYPE", &value, NULL) == 0) {
		copy_string(type, typelen, value);
		*is_ptable = true;
	} else {
		copy_string(type, typelen, "unknown");
	}
out:
	blkid_free_probe(pr);
	return ret;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
void mfs_unescape_mount_path(char *s)
{
	char *out = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*out++ = (s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0');
			s += 4;
		} else {
			*out++ = *s++;
		}
	}
	*out = '\0';
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	if (S_ISBLK(a->st_mode) && S_ISBLK(b->st_mode))
		return a->st_rdev == b->st_rdev;
	if (S_ISREG(a->st_mode) && S_ISREG(b->st_mode))
		return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
	return false;
}

static int read_sysfs_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	char *nl;

	if (!f)
		return -errno;
	if (!fgets(buf, len, f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
	return 0;
}

/*
 * Device numbers of the loop devices backed by the file @st describes, and
 * their names ("loop4") in @names when not NULL.
 */
static int find_backing_loops(const struct stat *st, dev_t *loops, char (*names)[256], int max)
{
	DIR *dir = opendir("/sys/block");
	struct dirent *de;
	int n = 0;

	if (!dir)
		return 0;
	while (n < max && (de = readdir(dir))) {
		char path[512], line[4096];
		unsigned int maj, min;
		struct stat bst;

		if (strncmp(de->d_name, "loop", 4) != 0)
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/loop/backing_file",
			 de->d_name);
		if (read_sysfs_line(path, line, sizeof(line)) ||
		    stat(line, &bst) || !same_file(st, &bst))
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/dev", de->d_name);
		if (read_sysfs_line(path, line, sizeof(line)) ||
		    sscanf(line, "%u:%u", &maj, &min) != 2)
			continue;
		if (names)
			copy_string(names[n], sizeof(names[n]), de->d_name);
		loops[n++] = makedev(maj, min);
	}
	closedir(dir);
	return n;
}

/*
 * Split one mountinfo line into mount id, device number, mount point and source:
 * "id parent maj:min root mountpoint opts [optional...] - fstype source ..."
 */
static bool parse_mountinfo_line(char *line, int *id, dev_t *dev, char **mnt,
				 char **fstype, char **source)
{
	char *field[6], *tok, *save;
	unsigned int maj, min;
	int i;

	for (i = 0, tok = strtok_r(line, " \n", &save); tok && i < 6;
	     tok = strtok_r(NULL, " \n", &save))
		field[i++] = tok;
	if (i < 6 || sscanf(field[0], "%d", id) != 1 ||
	    sscanf(field[2], "%u:%u", &maj, &min) != 2)
		return false;
	/* Skip the optional fields up to the "-" separator. */
	while (tok && strcmp(tok, "-") != 0)
		tok = strtok_r(NULL, " \n", &save);
	if (!tok)
		return false;
	*fstype = strtok_r(NULL, " \n", &save);
	if (!*fstype)
		return false;
	*source = strtok_r(NULL, " \n", &save);
	if (!*source)
		return false;
	*dev = makedev(maj, min);
	*mnt = field[4];
	mfs_unescape_mount_path(*mnt);
	mfs_unescape_mount_path(*source);
	return true;
}

int mfs_mountinfo_walk(const char *path, int (*fn)(const struct mfs_mountinfo *m, void *arg),
		       void *arg)
{
	char *line = NULL, *mnt, *fstype, *source;
	size_t linelen = 0;
	int ret = 0;
	FILE *f = fopen(path ? path : "/proc/self/mountinfo", "re");

	if (!f)
		return -errno;
	while (!ret && getline(&line, &linelen, f) > 0) {
		struct mfs_mountinfo m;

		if (!parse_mountinfo_line(line, &m.id, &m.dev, &mnt, &fstype, &source))
			continue;
		m.mnt = mnt;
		m.fstype = fstype;
		m.source = source;
		ret = fn(&m, arg);
	}
	if (!ret && ferror(f))
		ret = -EIO;
	free(line);
	fclose(f);
	return ret;
}

int mfs_path_is_mounted(const char *path, char *mnt, size_t mntlen)
{
	dev_t loops[8];
	struct stat st;
	char *line = NULL;
	size_t linelen = 0;
	int nloops = 0;
	int ret = 0;
	FILE *f;

	if (stat(path, &st))
		return -errno;
	if (S_ISREG(st.st_mode))
		nloops = find_backing_loops(&st, loops, NULL, ARRAY_SIZE(loops));

	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	while (!ret && getline(&line, &linelen, f) > 0) {
		char *mpoint, *fstype, *source;
		struct stat sst;
		dev_t dev;
		int i, id;

		if (!parse_mountinfo_line(line, &id, &dev, &mpoint, &fstype, &source))
			continue;
		if (S_ISBLK(st.st_mode) && dev == st.st_rdev)
			ret = 1;
		for (i = 0; i < nloops; i++) {
			if (dev == loops[i])
				ret = 1;
		}
		/*
		 * Other FUSE mounts have no device number; the source names the
		 * device. An mfs mount's source may be a member deleted since:
		 * mfs_find_mount_of_device() asks the daemon instead.
		 */
		if (!ret && strcmp(fstype, "fuse.mfs") != 0 && source[0] == '/' &&
		    stat(source, &sst) == 0 &&
		    same_file(&st, &sst))
			ret = 1;
		if (ret)
			copy_string(mnt, mntlen, mpoint);
	}
	free(line);
	fclose(f);
	return ret;
}

bool mfs_same_device(const char *a, const char *b)
{
	struct stat sa, sb;
	dev_t loops[8];
	int i, n;

	if (stat(a, &sa) || stat(b, &sb))
		return false;
	if (same_file(&sa, &sb))
		return true;
	/* an image file and a loop device over it */
	if (S_ISBLK(sa.st_mode) && S_ISREG(sb.st_mode)) {
		struct stat tmp = sa;

		sa = sb;
		sb = tmp;
	}
	if (!S_ISREG(sa.st_mode) || !S_ISBLK(sb.st_mode))
		return false;
	n = find_backing_loops(&sa, loops, NULL, ARRAY_SIZE(loops));
	for (i = 0; i < n; i++)
		if (loops[i] == sb.st_rdev)
			return true;
	return false;
}

int mfs_file_loop_busy(const char *path, char *loop, size_t looplen)
{
	char names[8][256];
	dev_t loops[8];
	struct stat st;
	int i, n;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return 0;
	n = find_backing_loops(&st, loops, names, ARRAY_SIZE(loops));
	for (i = 0; i < n; i++) {
		char node[300];
		struct stat nst;
		int fd;

		snprintf(node, sizeof(node), "/dev/%s", names[i]);
		if (stat(node, &nst) || !S_ISBLK(nst.st_mode) || nst.st_rdev != loops[i])
			continue;
		fd = open(node, O_RDONLY | O_EXCL | O_CLOEXEC);
		if (fd >= 0) {
			close(fd);
			continue;
		}
		if (errno == EBUSY) {
			copy_string(loop, looplen, node);
			return 1;
		}
	}
	return 0;
}

int mfs_open_exclusive(const char *path, int flags)
{
	struct stat st;
	int fd;

	if (stat(path, &st) == 0 && S_ISBLK(st.st_mode)) {
		/* The kernel refuses O_EXCL while the device is mounted or held. */
		fd = open(path, flags | O_EXCL | O_CLOEXEC);
		return fd < 0 ? -errno : fd;
	}

	fd = open(path, flags | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    flock(fd, LOCK_EX | LOCK_NB)) {
		int err = errno == EWOULDBLOCK ? EBUSY : errno;

		close(fd);
		return -err;
	}
	return fd;
}

struct path_list {
	char **paths;
	int count;
	int alloc;
};

static int path_list_add(struct path_list *list, const char *path)
{
	if (MFS_ARRAY_RESERVE(list->paths, list->count, list->alloc, 16))
		return -ENOMEM;
	list->paths[list->count] = strdup(path);
	if (!list->paths[list->count])
		return -ENOMEM;
	list->count++;
	return 0;
}

/* RAM disks never hold a filesystem worth scanning. */
static bool skip_device_name(const char *name)
{
	return strncmp(name, "ram", 3) == 0 || strncmp(name, "zram", 4) == 0;
}

static int scan_udev(struct path_list *list)
{
	struct udev_enumerate *en = NULL;
	struct udev_list_entry *entry;
	struct udev *udev;
	int ret = 0;

	udev = udev_new();
	if (!udev)
		return 0;
	en = udev_enumerate_new(udev);
	if (!en || udev_enumerate_add_match_subsystem(en, "block") < 0 ||
	    udev_enumerate_scan_devices(en) < 0)
		goto out;

	udev_list_entry_foreach(entry, udev_enumerate_get_list_entry(en)) {
		struct udev_device *dev;
		const char *node, *name, *size;

		dev = udev_device_new_from_syspath(udev,
						   udev_list_entry_get_name(entry));
		if (!dev)
			continue;
		node = udev_device_get_devnode(dev);
		name = udev_device_get_sysname(dev);
		size = udev_device_get_sysattr_value(dev, "size");
		if (node && name && !skip_device_name(name) &&
		    size && strcmp(size, "0") != 0)
			ret = path_list_add(list, node);
		udev_device_unref(dev);
		if (ret)
			break;
	}
out:
	udev_enumerate_unref(en);
	udev_unref(udev);
	return ret;
}

static int scan_proc_partitions(struct path_list *list)
{
	char line[512], name[256], path[300];
	unsigned long long blocks;
	unsigned int maj, min;
	int ret = 0;
	FILE *f;

	f = fopen("/proc/partitions", "re");
	if (!f)
		return -errno;
	while (!ret && fgets(line, sizeof(line), f)) {
		char *c;

		if (sscanf(line, " %u %u %llu %255s", &maj, &min, &blocks,
			   name) != 4)
			continue;
		if (blocks == 0 || skip_device_name(name))
			continue;
		/* Names with a slash ("cciss/c0d0") are listed with '!'. */
		for (c = name; *c; c++) {
			if (*c == '!')
				*c = '/';
		}
		snprintf(path, sizeof(path), "/dev/%s", name);
		ret = path_list_add(list, path);
	}
	fclose(f);
	return ret;
}

int mfs_scan_block_devices(char ***paths, int *count)
{
	struct path_list list = { 0 };
	int ret;

	/*
	 * The kernel's list of block devices in one read (what libblkid's
	 * probe-all reads too); libudev's walk of sysfs costs milliseconds
	 * (~1,000 system calls for ten devices) in every mount. udev where
	 * /proc/partitions cannot be read or lists nothing.
	 */
	ret = scan_proc_partitions(&list);
	if (ret || list.count == 0) {
		mfs_free_paths(list.paths, list.count);
		memset(&list, 0, sizeof(list));
		ret = scan_udev(&list);
	}
	if (ret) {
		mfs_free_paths(list.paths, list.count);
		return ret;
	}
	*paths = list.paths;
	*count = list.count;
	return 0;
}

void mfs_free_paths(char **paths, int count)
{
	int i;

	for (i = 0; i < count; i++)
		free(paths[i]);
	free(paths);
}

bool mfs_is_block_device(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISBLK(st.st_mode);
}

int mfs_device_size(int fd, u64 *size)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (S_ISBLK(st.st_mode)) {
		uint64_t bytes;

		if (ioctl(fd, BLKGETSIZE64, &bytes))
			return -errno;
		*size = bytes;
		return 0;
	}
	if (S_ISREG(st.st_mode)) {
		*size = st.st_size;
		return 0;
	}
	return -EINVAL;
}

int mfs_discard_range(int fd, u64 start, u64 len)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (S_ISBLK(st.st_mode)) {
		uint64_t range[2] = { start, len };

		if (ioctl(fd, BLKDISCARD, range))
			return errno == ENOTTY ? -EOPNOTSUPP : -errno;
		return 0;
	}
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      start, len))
		return errno == ENOSYS ? -EOPNOTSUPP : -errno;
	return 0;
}
