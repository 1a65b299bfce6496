/*
 * mkfs.mfs: check every argument and device first, then write a new
 * filesystem with the engine and print a summary like mkfs.btrfs.
 */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <unistd.h>
#include <sys/stat.h>
#include <uuid/uuid.h>
#include "cmds/commands.h"
#include "common/help.h"
#include "common/messages.h"
#include "common/units.h"
#include "common/device-scan.h"
#include "common/open.h"
#include "common/device-check.h"
#include "kernel-shared/ops/create.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/block/csum.h"
#include "kernel-shared/format/profiles.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/block/io.h"
#include "kernel-shared/ops/open.h"
#include "mkfs/rootdir.h"

static const char * const cmd_mkfs_usage[] = {
	"mkfs.mfs [options] <dev> [<dev>...]",
	"",
	"Create a new mfs filesystem on one or more devices or image files.",
	"",
	OPTLINE("-d|--data PROFILE", "data profile: single, dup, raid0, raid1, raid1c3, raid1c4, raid10, raid5, raid6 (default: single)"),
	OPTLINE("-m|--metadata PROFILE", "metadata profile, same values (default: dup on one device, raid1 on several)"),
	OPTLINE("-L|--label LABEL", "set the filesystem label (less than 256 bytes)"),
	OPTLINE("-U|--uuid UUID", "set the filesystem UUID (must be unique)"),
	OPTLINE("-n|--nodesize SIZE", "size of tree nodes (default 16KiB, power of 2, 4KiB..64KiB)"),
	OPTLINE("-s|--sectorsize SIZE", "data block size (only 4096)"),
	OPTLINE("-b|--byte-count SIZE", "use SIZE bytes of each device"),
	OPTLINE("--csum TYPE", "checksum algorithm: crc32c (default), xxhash, sha256, blake2"),
	OPTLINE("--checksum TYPE", "alias for --csum"),
	OPTLINE("-O|--features LIST", "comma separated features to enable (^feature disables); -O list-all lists them"),
	OPTLINE("-r|--rootdir DIR", "copy the files and directories of DIR into the new filesystem"),
	OPTLINE("-f|--force", "overwrite existing filesystems or partition tables on the devices"),
	OPTLINE("-K|--nodiscard", "do not discard (TRIM) the devices; image files are not hole-punched"),
	OPTLINE("-q|--quiet", "print only errors"),
	OPTLINE("-v|--verbose", "print more"),
	OPTLINE("-V|--version", "print the version and exit"),
	NULL
};

static int cmd_mkfs(const struct cmd_struct *cmd, int argc, char **argv);
DEFINE_COMMAND(mkfs, "mkfs", cmd_mkfs, cmd_mkfs_usage, NULL, 0);

/* Features that -O knows; profiles turn on what they need by themselves. */
static const struct {
	const char *name;
	u64 flag;
	const char *desc;
} features[] = {
	{ "raid56", MFS_FEATURE_INCOMPAT_RAID56, "raid5 and raid6 profiles (write-hole free)" },
	{ "raid1c34", MFS_FEATURE_INCOMPAT_RAID1C34, "raid1c3 and raid1c4 profiles" },
	{ "compress-zlib", MFS_FEATURE_INCOMPAT_COMPRESS_ZLIB, "zlib compression of file data" },
};

static void list_features(void)
{
	size_t i;

	printf("Filesystem features available:\n");
	for (i = 0; i < ARRAY_SIZE(features); i++)
		printf("%-20s- %s\n", features[i].name, features[i].desc);
}

static int parse_features(char *list, u64 *flags)
{
	char *tok, *save = NULL;
	size_t i;

	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		bool off = tok[0] == '^';
		const char *name = off ? tok + 1 : tok;

		for (i = 0; i < ARRAY_SIZE(features); i++)
			if (strcmp(name, features[i].name) == 0)
				break;
		if (i == ARRAY_SIZE(features)) {
			error("unknown feature: %s (see -O list-all)", name);
			return -EINVAL;
		}
		if (off)
			*flags &= ~features[i].flag;
		else
			*flags |= features[i].flag;
	}
	return 0;
}

static int parse_profile_arg(const char *what, const char *arg, u64 *out)
{
	if (mfs_parse_profile(arg, out)) {
		error("unknown %s profile '%s' (valid: %s)", what, arg, mfs_profile_names());
		return -EINVAL;
	}
	return 0;
}

static int check_profile_devices(const char *what, u64 profile, int ndevs)
{
	const struct mfs_raid_attr *a = mfs_profile(profile);

	if (ndevs < a->devs_min) {
		error("unable to create FS with %s profile %s (have %d devices but %d devices are required)",
		      what, a->ui_name, ndevs, a->devs_min);
		return -EINVAL;
	}
	return 0;
}

static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (stat(a, &sa) || stat(b, &sb))
		return false;
	if (S_ISBLK(sa.st_mode) && S_ISBLK(sb.st_mode))
		return sa.st_rdev == sb.st_rdev;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int check_uuid_unique(const u8 *fsid, char **devs, int ndevs)
{
	struct mfs_scan scan;
	int i, j;

	if (mfs_scan_all(NULL, 0, &scan))
		return 0;
	for (i = 0; i < scan.nr; i++) {
		bool ours = false;

		for (j = 0; j < ndevs; j++)
			if (same_file(scan.devs[i].path, devs[j]))
				ours = true;
		if (!ours && memcmp(scan.devs[i].sb.fsid, fsid, MFS_FSID_SIZE) == 0) {
			char buf[37];

			uuid_unparse(fsid, buf);
			error("non-unique UUID: %s (in use by %s)", buf, scan.devs[i].path);
			mfs_scan_free(&scan);
			return -EEXIST;
		}
	}
	mfs_scan_free(&scan);
	return 0;
}

static void discard_device(const char *path, u64 size, bool quiet)
{
	struct mfs_io_dev *io;

	if (mfs_io_open(path, true, false, &io))
		return;
	if (!quiet)
		printf("Performing full device TRIM %s (%s) ...\n", path, pretty_size(size));
	/* best effort: a device without discard support is simply not trimmed */
	mfs_io_discard(io, 0, size);
	mfs_io_close(io);
}

/* --rootdir is checked before anything is written. */
static int check_rootdir(const char *dir)
{
	struct stat st;
	int fd;

	if (stat(dir, &st)) {
		error("cannot access rootdir '%s': %m", dir);
		return -errno;
	}
	if (!S_ISDIR(st.st_mode)) {
		error("rootdir '%s' is not a directory", dir);
		return -ENOTDIR;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		error("cannot open rootdir '%s': %m", dir);
		return -errno;
	}
	close(fd);
	return 0;
}

/*
 * Fill the filesystem mfs_make_fs just wrote. Until the last commit its
 * superblocks say CHANGING, so a failure leaves nothing that mounts.
 */
static int populate_rootdir(const char *dir, char **devs, int ndevs)
{
	struct mfs_open_ctl ctl = {
		.paths = (const char * const *)devs,
		.npaths = ndevs,
		.flags = MFS_OPEN_WRITABLE,
		.sb_mirror = -1,
	};
	struct mfs_rootdir_ctl rc = { .srcdir = dir };
	dev_t skip_dev[ARRAY_SIZE(((struct mfs_mkfs_params *)0)->dev_size)];
	ino_t skip_ino[ARRAY_SIZE(skip_dev)];
	struct mfs_fs_info *fs;
	struct stat st;
	int i, ret;

	for (i = 0; i < ndevs; i++) {
		if (stat(devs[i], &st) == 0 && S_ISREG(st.st_mode)) {
			skip_dev[rc.nskip] = st.st_dev;
			skip_ino[rc.nskip++] = st.st_ino;
		}
	}
	rc.skip_dev = skip_dev;
	rc.skip_ino = skip_ino;
	ret = mfs_open_fs(&ctl, &fs);
	if (ret) {
		error("cannot open the new filesystem: %s", strerror(-ret));
		return ret;
	}
	ret = mfs_mkfs_set_changing(fs, true);
	if (!ret)
		ret = mfs_rootdir_populate(fs, &rc);
	if (!ret)
		ret = mfs_mkfs_set_changing(fs, false);
	if (ret) {
		mfs_free_fs_info(fs);
		if (ret == -ENOSPC)
			error("not enough space on the devices for the contents of '%s' (%llu bytes of file data copied)",
			      dir, (unsigned long long)rc.stats.data_bytes);
		else
			error("copying '%s' failed: %s", dir, strerror(-ret));
		error("the filesystem on the devices is incomplete and will not mount; run mkfs.mfs again");
		return ret;
	}
	ret = mfs_close_fs(fs);
	if (ret) {
		error("cannot write the new filesystem: %s", strerror(-ret));
		return ret;
	}
	if (mfs_verbose)
		printf("Rootdir from %s: %llu directories, %llu files, %llu symlinks, %llu special files, %llu hard links, %llu xattrs, %llu bytes of data\n",
		       dir, (unsigned long long)rc.stats.dirs, (unsigned long long)rc.stats.files,
		       (unsigned long long)rc.stats.symlinks, (unsigned long long)rc.stats.special,
		       (unsigned long long)rc.stats.hardlinks, (unsigned long long)rc.stats.xattrs,
		       (unsigned long long)rc.stats.data_bytes);
	return 0;
}

static void print_summary(struct mfs_mkfs_params *p, const u8 *fsid, u64 incompat)
{
	char uuid[37];
	u64 total = 0;
	int i;
	size_t f;
	bool any = false;

	uuid_unparse(fsid, uuid);
	for (i = 0; i < p->npaths; i++)
		total += p->dev_size[i];
	printf("Label:              %s\n", p->label && p->label[0] ? p->label : "(null)");
	printf("UUID:               %s\n", uuid);
	printf("Node size:          %u\n", p->nodesize);
	printf("Sector size:        %u\t(CPU page size: %ld)\n", p->sectorsize, sysconf(_SC_PAGESIZE));
	printf("Filesystem size:    %s\n", pretty_size(total));
	printf("Block group profiles:\n");
	printf("  Data:             %-8s %16s\n", mfs_profile_ui_name(p->data_profile),
	       pretty_size(p->data_bytes));
	printf("  Metadata:         %-8s %16s\n", mfs_profile_ui_name(p->metadata_profile),
	       pretty_size(p->meta_bytes));
	printf("  System:           %-8s %16s\n", mfs_profile_ui_name(p->metadata_profile),
	       pretty_size(p->sys_bytes));
	printf("Features:           ");
	for (f = 0; f < ARRAY_SIZE(features); f++) {
		if (incompat & features[f].flag) {
			printf("%s%s", any ? ", " : "", features[f].name);
			any = true;
		}
	}
	printf("%s\n", any ? "" : "none");
	printf("Checksum:           %s\n", mfs_csum_name(p->csum_type));
	printf("Number of devices:  %d\n", p->npaths);
	printf("Devices:\n");
	printf("   ID        SIZE  PATH\n");
	for (i = 0; i < p->npaths; i++)
		printf("  %3d  %10s  %s\n", i + 1, pretty_size(p->dev_size[i]), p->paths[i]);
	printf("\n");
}

enum { OPT_CSUM = 256, OPT_HELP };

/* What the command line asks for. */
struct mkfs_opts {
	u64 data_profile, meta_profile, byte_count, incompat;
	bool data_set, meta_set, force, nodiscard, quiet;
	const char *label, *rootdir;
	u32 nodesize, sectorsize;
	int csum_type;
	u8 fsid[MFS_FSID_SIZE];
};

static int check_label(const char *label)
{
	if (strlen(label) >= MFS_LABEL_SIZE) {
		error("label %s is too long (max %d)", label, MFS_LABEL_SIZE - 1);
		return -1;
	}
	if (strchr(label, '\n')) {
		error("label must not contain a newline");
		return -1;
	}
	return 0;
}

static int parse_u32_size(const char *what, const char *arg, u32 *out)
{
	u64 v;

	if (parse_size(arg, &v) || v > UINT32_MAX) {
		error("invalid %s: %s", what, arg);
		return -1;
	}
	*out = v;
	return 0;
}

/*
 * An option whose value is checked here (profiles, label, uuid, sizes,
 * checksum): 0, -EINVAL after the error message, -ENOENT for no such option.
 */
static int parse_value_option(int c, const char *arg, struct mkfs_opts *o)
{
	switch (c) {
	case 'd':
		o->data_set = true;
		return parse_profile_arg("data", arg, &o->data_profile) ? -EINVAL : 0;
	case 'm':
		o->meta_set = true;
		return parse_profile_arg("metadata", arg, &o->meta_profile) ? -EINVAL : 0;
	case 'L':
		o->label = arg;
		return check_label(arg) ? -EINVAL : 0;
	case 'U':
		if (uuid_parse(arg, o->fsid)) {
			error("could not parse UUID: %s", arg);
			return -EINVAL;
		}
		return 0;
	case 'n':
		return parse_u32_size("nodesize", arg, &o->nodesize) ? -EINVAL : 0;
	case 's':
		return parse_u32_size("sectorsize", arg, &o->sectorsize) ? -EINVAL : 0;
	case 'b':
		if (parse_size(arg, &o->byte_count) || !o->byte_count) {
			error("invalid byte count: %s", arg);
			return -EINVAL;
		}
		return 0;
	case OPT_CSUM:
		o->csum_type = mfs_csum_parse(arg);
		if (o->csum_type < 0) {
			error("unknown checksum type %s (valid: crc32c, xxhash, sha256, blake2)", arg);
			return -EINVAL;
		}
		if (mfs_csum_available(o->csum_type) == -ELIBACC) {
			error("checksum %s needs OpenSSL's libcrypto (libcrypto.so.3), which cannot be loaded",
			      mfs_csum_name(o->csum_type));
			return -ELIBACC;
		}
		return 0;
	}
	return -ENOENT;
}

/* The options: 0 to go on, 1 to exit 0 (-V, -O list-all), -1 after an error. */
static int parse_mkfs_options(const struct cmd_struct *cmd, int argc, char **argv,
			      struct mkfs_opts *o)
{
	static const struct option longopts[] = {
		{ "data", required_argument, NULL, 'd' },
		{ "metadata", required_argument, NULL, 'm' },
		{ "label", required_argument, NULL, 'L' },
		{ "uuid", required_argument, NULL, 'U' },
		{ "nodesize", required_argument, NULL, 'n' },
		{ "sectorsize", required_argument, NULL, 's' },
		{ "byte-count", required_argument, NULL, 'b' },
		{ "csum", required_argument, NULL, OPT_CSUM },
		{ "checksum", required_argument, NULL, OPT_CSUM },
		{ "features", required_argument, NULL, 'O' },
		{ "rootdir", required_argument, NULL, 'r' },
		{ "force", no_argument, NULL, 'f' },
		{ "nodiscard", no_argument, NULL, 'K' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 }
	};
	int c, ret;

	while ((c = getopt_long(argc, argv, "d:m:L:U:n:s:b:O:r:fKqvV", longopts, NULL)) != -1) {
		switch (c) {
		case 'O':
			if (strcmp(optarg, "list-all") == 0) {
				list_features();
				return 1;
			}
			if (parse_features(optarg, &o->incompat))
				return -1;
			break;
		case 'r':
			o->rootdir = optarg;
			break;
		case 'f':
			o->force = true;
			break;
		case 'K':
			o->nodiscard = true;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'v':
			mfs_verbose++;
			break;
		case 'V':
			printf("mkfs.mfs, part of mfs v%s\n", MFS_VERSION);
			return 1;
		case OPT_HELP:
			usage(cmd, 0);
		default:
			ret = parse_value_option(c, optarg, o);
			if (ret == -ENOENT)
				usage_unknown_option(cmd, argv);
			if (ret)
				return -1;
		}
	}
	return 0;
}

/* Every refusal, before anything is written. */
static int check_mkfs_args(struct mkfs_opts *o, char **devs, int ndevs)
{
	u64 size;
	int i, j;

	if (o->rootdir && check_rootdir(o->rootdir))
		return -1;
	if (o->sectorsize != MFS_SECTOR) {
		error("sectorsize %u is not supported (only 4096)", o->sectorsize);
		return -1;
	}
	if (o->nodesize < o->sectorsize || o->nodesize > SZ_64K ||
	    (o->nodesize & (o->nodesize - 1))) {
		error("invalid nodesize %u: must be a power of 2 between %u and 65536", o->nodesize,
		      o->sectorsize);
		return -1;
	}
	if (ndevs > MFS_MKFS_MAX_DEVICES) {
		error("too many devices: %d (at most %d)", ndevs, MFS_MKFS_MAX_DEVICES);
		return -1;
	}
	if (!o->meta_set)
		o->meta_profile = ndevs > 1 ? MFS_BLOCK_GROUP_RAID1 : MFS_BLOCK_GROUP_DUP;
	if (!o->data_set)
		o->data_profile = 0;
	if (check_profile_devices("metadata", o->meta_profile, ndevs) ||
	    check_profile_devices("data", o->data_profile, ndevs))
		return -1;
	for (i = 0; i < ndevs; i++) {
		for (j = 0; j < i; j++) {
			if (strcmp(devs[i], devs[j]) == 0 || same_file(devs[i], devs[j])) {
				error("device %s is listed more than once (as %s)", devs[i], devs[j]);
				return -1;
			}
		}
	}
	for (i = 0; i < ndevs; i++) {
		if (mfs_check_new_device(devs[i], o->force, o->byte_count, NULL, &size))
			return -1;
	}
	if (memcmp(o->fsid, (u8[MFS_FSID_SIZE]){ 0 }, MFS_FSID_SIZE) &&
	    check_uuid_unique(o->fsid, devs, ndevs))
		return -1;
	return 0;
}

static int make_fs(const struct mkfs_opts *o, char **devs, int ndevs,
		   struct mfs_mkfs_params *p)
{
	int ret;

	p->paths = (const char * const *)devs;
	p->npaths = ndevs;
	p->data_profile = o->data_profile;
	p->metadata_profile = o->meta_profile;
	p->nodesize = o->nodesize;
	p->sectorsize = o->sectorsize;
	p->csum_type = o->csum_type;
	memcpy(p->fsid, o->fsid, MFS_FSID_SIZE);
	p->label = o->label;
	p->byte_count = o->byte_count;
	p->exclusive = true;
	p->features = o->incompat;
	ret = mfs_make_fs(p);
	if (!ret)
		return 0;
	if (p->failed_path)
		error("failed writing %s: %s", p->failed_path, strerror(-ret));
	else if (ret == -ENOSPC)
		error("not enough space on the devices for the initial chunks");
	else
		error("mkfs failed: %s", strerror(-ret));
	return -1;
}

static int cmd_mkfs(const struct cmd_struct *cmd, int argc, char **argv)
{
	struct mkfs_opts o = { .nodesize = SZ_16K, .sectorsize = MFS_SECTOR,
			       .csum_type = MFS_CSUM_CRC32C };
	struct mfs_mkfs_params p = { 0 };
	int i, ndevs, ret;
	u64 size;
	char **devs;

	ret = parse_mkfs_options(cmd, argc, argv, &o);
	if (ret)
		return ret < 0 ? 1 : 0;
	ndevs = argc - optind;
	if (ndevs < 1) {
		error("no device specified");
		usage(cmd, 1);
	}
	devs = argv + optind;
	if (check_mkfs_args(&o, devs, ndevs))
		return 1;
	if (!o.quiet) {
		if (ndevs > 1 && (o.data_profile == MFS_BLOCK_GROUP_DUP ||
				  o.meta_profile == MFS_BLOCK_GROUP_DUP))
			warning("DUP is not recommended on filesystem with multiple devices");
		if (mfs_profile(o.meta_profile)->tolerated_failures <
		    mfs_profile(o.data_profile)->tolerated_failures)
			warning("metadata has lower redundancy than data!");
		printf("mfs v%s\nSee 'man mkfs.mfs' for more information.\n\n", MFS_VERSION);
	}
	if (!o.nodiscard) {
		for (i = 0; i < ndevs; i++) {
			mfs_mkfs_device_size(devs[i], 0, &size);
			discard_device(devs[i], size, o.quiet);
		}
	}
	if (make_fs(&o, devs, ndevs, &p))
		return 1;
	for (i = 0; i < ndevs; i++)
		mfs_registry_add(devs[i]);
	if (o.rootdir && populate_rootdir(o.rootdir, devs, ndevs))
		return 1;
	if (!o.quiet) {
		struct mfs_super_block sb;

		if (mfs_probe_super(devs[0], &sb) == 0) {
			o.incompat |= le64_to_cpu(sb.incompat_flags);
			memcpy(o.fsid, sb.fsid, MFS_FSID_SIZE);
		}
		print_summary(&p, o.fsid, o.incompat);
	}
	return 0;
}

int cmd_mkfs_main(int argc, char **argv)
{
	return cmd_mkfs(&cmd_struct_mkfs, argc, argv);
}
