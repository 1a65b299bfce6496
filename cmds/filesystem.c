/* mfs filesystem: show, label. */
#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <uuid/uuid.h>
#include <json-c/json.h>
#include "cmds/commands.h"
#include "common/help.h"
#include "common/messages.h"
#include "common/units.h"
#include "common/open.h"
#include "common/format-output.h"
#include "common/target.h"
#include "kernel-shared/tree/disk-io.h"
#include "kernel-shared/tree/transaction.h"
#include "kernel-shared/volumes/volumes.h"
#include "kernel-shared/ops/open.h"

/* ---------------- show ---------------- */

static const char * const cmd_filesystem_show_usage[] = {
	"mfs filesystem show [options] [<path>|<uuid>|<device>|<label>]",
	"",
	"Show the structure of a filesystem.",
	"Without an argument, every filesystem found on block devices and",
	"registered image files is shown.",
	"",
	OPTLINE("-d|--all-devices", "scan every block device (default)"),
	OPTLINE("--check", "exit 1 when a member of a filesystem shown is missing or failing"),
	OPTLINE("--raw", "show raw numbers in bytes"),
	OPTLINE("--human-readable", "show human friendly numbers, base 1024 (default)"),
	OPTLINE("--iec", "use 1024 as a base (KiB, MiB, GiB, TiB)"),
	OPTLINE("--si", "use 1000 as a base (kB, MB, GB, TB)"),
	OPTLINE("--kbytes", "show sizes in KiB, or kB with --si"),
	OPTLINE("--mbytes", "show sizes in MiB, or MB with --si"),
	OPTLINE("--gbytes", "show sizes in GiB, or GB with --si"),
	OPTLINE("--tbytes", "show sizes in TiB, or TB with --si"),
	NULL
};

/* One member as shown: from the chunk tree when the fs opens, else its superblock. */
struct show_dev {
	u64 devid;
	u64 size;
	u64 used;
	const char *path;	/* NULL when missing */
	u64 state;		/* MFS_DEV_HEALTH_* */
	bool duplicate;		/* claims the devid of the one before it */
};

struct show_fs {
	u8 fsid[MFS_FSID_SIZE];
	char label[MFS_LABEL_SIZE];
	u64 bytes_used;
	struct show_dev *devs;
	int ndevs;
	int nmissing;
	int total;
	bool mounted;		/* from the running daemon; paths are owned */
};

static void show_fs_free(struct show_fs *f)
{
	int i;

	for (i = 0; f->mounted && i < f->ndevs; i++)
		free((char *)f->devs[i].path);
	free(f->devs);
}

static int cmp_show_dev(const void *a, const void *b)
{
	const struct show_dev *x = a, *y = b;

	return x->devid < y->devid ? -1 : x->devid > y->devid;
}

/* Gather what to show for the filesystem with this fsid. */
static int collect_fs(struct mfs_scan *scan, const u8 *fsid, struct show_fs *out)
{
	const char **paths;
	struct mfs_open_ctl ctl = { 0 };
	struct mfs_fs_info *fs = NULL;
	struct mfs_super_block *best = NULL;
	int i, n = 0;

	memset(out, 0, sizeof(*out));
	memcpy(out->fsid, fsid, MFS_FSID_SIZE);
	if (scan->nr <= 0)
		return -ENOENT;
	paths = calloc(scan->nr, sizeof(*paths));
	out->devs = calloc(scan->nr + 64, sizeof(*out->devs));
	if (!paths || !out->devs) {
		free(paths);
		return -ENOMEM;
	}
	for (i = 0; i < scan->nr; i++) {
		struct mfs_super_block *sb = &scan->devs[i].sb;

		if (memcmp(sb->fsid, fsid, MFS_FSID_SIZE))
			continue;
		paths[n++] = scan->devs[i].path;
		if (!best || le64_to_cpu(sb->generation) > le64_to_cpu(best->generation))
			best = sb;
	}
	memcpy(out->label, best->label, MFS_LABEL_SIZE);
	out->bytes_used = le64_to_cpu(best->bytes_used);
	ctl.paths = paths;
	ctl.npaths = n;
	ctl.flags = MFS_OPEN_PARTIAL | MFS_OPEN_NO_EXCL;
	ctl.fsid = fsid;
	ctl.sb_mirror = -1;
	if (mfs_open_fs(&ctl, &fs) == 0) {
		for (i = 0; i < fs->nr_devices && i < scan->nr + 64; i++) {
			struct mfs_device *d = fs->devices[i];
			struct show_dev *sd = &out->devs[out->ndevs++];
			int j;

			sd->devid = d->devid;
			sd->size = d->total_bytes;
			sd->used = d->bytes_used;
			sd->state = mfs_device_health(d);
			sd->path = NULL;
			/* the engine keeps devices by absolute path */
			for (j = 0; !d->missing && j < n; j++) {
				char real[PATH_MAX];

				if (strcmp(paths[j], d->path) == 0 ||
				    (realpath(paths[j], real) && strcmp(real, d->path) == 0))
					sd->path = paths[j];
			}
			if (!sd->path)
				out->nmissing++;
		}
		out->bytes_used = le64_to_cpu(fs->super.bytes_used);
		out->total = out->ndevs;
		mfs_free_fs_info(fs);
	} else {
		/* cannot open: show what the superblocks say */
		for (i = 0; i < scan->nr; i++) {
			struct mfs_super_block *sb = &scan->devs[i].sb;
			struct show_dev *sd;

			if (memcmp(sb->fsid, fsid, MFS_FSID_SIZE))
				continue;
			sd = &out->devs[out->ndevs++];
			sd->devid = le64_to_cpu(sb->dev_item.devid);
			sd->size = le64_to_cpu(sb->dev_item.total_bytes);
			sd->used = le64_to_cpu(sb->dev_item.bytes_used);
			sd->path = scan->devs[i].path;
		}
		if ((u64)out->ndevs < le64_to_cpu(best->num_devices))
			out->nmissing = le64_to_cpu(best->num_devices) - out->ndevs;
		out->total = out->ndevs + out->nmissing;
	}
	qsort(out->devs, out->ndevs, sizeof(*out->devs), cmp_show_dev);
	/* two devices claiming one devid: one is a copy; the filesystem counts it once */
	for (i = 1; i < out->ndevs; i++)
		if (out->devs[i].devid == out->devs[i - 1].devid && out->devs[i].path &&
		    out->devs[i - 1].path) {
			out->devs[i].duplicate = true;
			out->total--;
		}
	free(paths);
	return 0;
}

/*
 * A mounted filesystem: what the daemon knows now (the superblocks on the
 * devices lag behind until the next commit). Returns -errno.
 */
static int collect_fs_mounted(const char *mnt, struct show_fs *out)
{
	struct mfs_ioctl_fs_info *info = calloc(1, sizeof(*info));
	struct mfs_super_block sb;
	struct mfs_target t;
	struct mfs_space sp;
	int i, ret;

	memset(out, 0, sizeof(*out));
	if (!info)
		return -ENOMEM;
	/* not an mfs mount point: say nothing, the caller reports it */
	ret = mfs_get_fs_info(mnt, info) ? -ENOTTY : 0;
	if (!ret)
		ret = mfs_target_open(&mnt, 1, false, &t);
	if (!ret) {
		ret = mfs_target_space(&t, &sp);
		mfs_target_close(&t);
	}
	if (ret)
		goto out;
	memcpy(out->fsid, info->fsid, MFS_FSID_SIZE);
	info->first_device[sizeof(info->first_device) - 1] = 0;
	if (mfs_probe_super(info->first_device, &sb) == 0)
		memcpy(out->label, sb.label, MFS_LABEL_SIZE);
	out->label[MFS_LABEL_SIZE - 1] = 0;
	out->mounted = true;
	out->devs = calloc(sp.nr_devs + 1, sizeof(*out->devs));
	if (!out->devs) {
		mfs_space_free(&sp);
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < sp.nr_devs; i++) {
		const struct mfs_ioctl_space_dev *d = &sp.devs[i];
		struct show_dev *sd = &out->devs[out->ndevs++];

		sd->devid = d->devid;
		sd->size = d->total_bytes;
		sd->used = d->bytes_used;
		sd->state = d->missing ? MFS_DEV_HEALTH_MISSING : d->state;
		sd->path = d->missing || !d->path[0] ? NULL : strdup(d->path);
		if (!sd->path)
			out->nmissing++;
	}
	for (i = 0; i < sp.nr_chunks; i++)
		out->bytes_used += sp.chunks[i].used;
	out->total = out->ndevs;
	qsort(out->devs, out->ndevs, sizeof(*out->devs), cmp_show_dev);
	mfs_space_free(&sp);
out:
	free(info);
	return ret;
}

/* The mount point of a filesystem one of whose members is the source of a mount. */
static bool fs_mount_point(struct mfs_scan *scan, const u8 *fsid, char *mnt, size_t len,
			   bool *answered)
{
	int i;

	for (i = 0; i < scan->nr; i++)
		if (!memcmp(scan->devs[i].sb.fsid, fsid, MFS_FSID_SIZE) &&
		    mfs_find_mount_of_device_asked(scan->devs[i].path, mnt, len, answered))
			return true;
	return false;
}

/* As btrfs marks a missing member MISSING: any state but ok, upper case. */
static void print_state_suffix(u64 state)
{
	const char *name = mfs_dev_health_name(state);

	if (state != MFS_DEV_HEALTH_OK) {
		putchar(' ');
		while (*name)
			putchar(toupper((unsigned char)*name++));
	}
	putchar('\n');
}

/* --check: a member missing or failing. */
static bool fs_unhealthy(const struct show_fs *f)
{
	int i;

	if (f->nmissing)
		return true;
	for (i = 0; i < f->ndevs; i++)
		if (mfs_dev_health_bad(f->devs[i].state))
			return true;
	return false;
}

static void print_fs_text(const struct show_fs *f, unsigned int units)
{
	char uuid[37];
	int i;

	uuid_unparse(f->fsid, uuid);
	for (i = 0; !f->mounted && i < f->ndevs; i++)
		if (!f->devs[i].path)
			fprintf(stderr, "warning, device %llu is missing\n",
				(unsigned long long)f->devs[i].devid);
	if (f->label[0])
		printf("Label: '%s'  uuid: %s\n", f->label, uuid);
	else
		printf("Label: none  uuid: %s\n", uuid);
	printf("\tTotal devices %d FS bytes used %s\n", f->total,
	       pretty_size_mode(f->bytes_used, units));
	for (i = 0; i < f->ndevs; i++) {
		if (!f->devs[i].path) {
			/* as btrfs lists a missing member of a mounted filesystem */
			if (f->mounted)
				printf("\tdevid %4llu size 0 used 0 path <missing disk> MISSING\n",
				       (unsigned long long)f->devs[i].devid);
			continue;
		}
		printf("\tdevid %4llu size %s used %s path %s",
		       (unsigned long long)f->devs[i].devid,
		       pretty_size_mode(f->devs[i].size, units),
		       pretty_size_mode(f->devs[i].used, units), f->devs[i].path);
		print_state_suffix(f->devs[i].state);
	}
	for (i = 0; i < f->ndevs; i++)
		if (f->devs[i].duplicate)
			printf("\t*** devid %llu is claimed by more than one device (a copy of a member?)\n",
			       (unsigned long long)f->devs[i].devid);
	if (f->nmissing && !f->mounted)
		printf("\t*** Some devices missing\n");
	printf("\n");
}

static void add_fs_json(struct json_object *array, const struct show_fs *f)
{
	struct json_object *o = mfs_json_array_add_object(array);
	struct json_object *devs = json_object_new_array();
	char uuid[37];
	int i;

	uuid_unparse(f->fsid, uuid);
	mfs_json_add_string(o, "label", f->label);
	mfs_json_add_string(o, "uuid", uuid);
	mfs_json_add_u64(o, "total_devices", f->total);
	mfs_json_add_u64(o, "bytes_used", f->bytes_used);
	mfs_json_add_u64(o, "missing_devices", f->nmissing);
	for (i = 0; i < f->ndevs; i++) {
		struct json_object *d = json_object_new_object();

		mfs_json_add_u64(d, "devid", f->devs[i].devid);
		mfs_json_add_u64(d, "size", f->devs[i].size);
		mfs_json_add_u64(d, "used", f->devs[i].used);
		mfs_json_add_string(d, "path", f->devs[i].path ? f->devs[i].path : "");
		json_object_object_add(d, "missing", json_object_new_boolean(!f->devs[i].path));
		mfs_json_add_string(d, "state", mfs_dev_health_name(f->devs[i].path ?
								     f->devs[i].state :
								     MFS_DEV_HEALTH_MISSING));
		json_object_array_add(devs, d);
	}
	json_object_object_add(o, "devices", devs);
}

/* Does the search argument select this filesystem? */
static bool fs_matches(struct mfs_scan *scan, const u8 *fsid, const char *arg)
{
	u8 want[MFS_FSID_SIZE];
	char real[PATH_MAX];
	int i;

	if (!arg)
		return true;
	if (uuid_parse(arg, want) == 0)
		return memcmp(want, fsid, MFS_FSID_SIZE) == 0;
	if (realpath(arg, real)) {
		for (i = 0; i < scan->nr; i++) {
			char other[PATH_MAX];

			if (memcmp(scan->devs[i].sb.fsid, fsid, MFS_FSID_SIZE))
				continue;
			if (realpath(scan->devs[i].path, other) && strcmp(other, real) == 0)
				return true;
		}
		return false;
	}
	for (i = 0; i < scan->nr; i++)
		if (!memcmp(scan->devs[i].sb.fsid, fsid, MFS_FSID_SIZE) &&
		    strcmp(scan->devs[i].sb.label, arg) == 0)
			return true;
	return false;
}

/* What the show loop keeps: the output so far and what --check answers. */
struct show_ctx {
	unsigned int units;
	struct json_object *array;	/* --format json */
	int shown;
	bool unhealthy;
};

/* Print (or add to the JSON) one filesystem and free it. */
static void emit_fs(struct show_ctx *ctx, struct show_fs *f)
{
	if (ctx->array)
		add_fs_json(ctx->array, f);
	else
		print_fs_text(f, ctx->units);
	ctx->unhealthy |= fs_unhealthy(f);
	ctx->shown++;
	show_fs_free(f);
}

/* Every filesystem found by scanning that arg selects: mounted ones first, as they are now. */
static int show_scanned(struct show_ctx *ctx, const char *arg)
{
	struct mfs_scan scan;
	int i, j, pass;

	/* an unmounted filesystem as its last commit leaves it */
	mfs_wait_unmounting_servers();
	if (mfs_scan_all(arg ? &arg : NULL, arg ? 1 : 0, &scan)) {
		error("cannot scan devices");
		return -1;
	}
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < scan.nr; i++) {
			const u8 *fsid = scan.devs[i].sb.fsid;
			char mnt[PATH_MAX];
			struct show_fs f;
			bool dup = false, mounted, answered;

			for (j = 0; j < i; j++)
				if (!memcmp(scan.devs[j].sb.fsid, fsid, MFS_FSID_SIZE))
					dup = true;
			if (dup || !fs_matches(&scan, fsid, arg))
				continue;
			mounted = fs_mount_point(&scan, fsid, mnt, sizeof(mnt), &answered);
			if (mounted != (pass == 0))
				continue;
			/* a daemon that does not answer holds up no other filesystem's lines */
			if (mounted && !answered) {
				warning("the daemon serving %s does not answer: its filesystem as its superblocks say",
					mnt);
				mounted = false;
			}
			if (!(mounted && collect_fs_mounted(mnt, &f) == 0) &&
			    collect_fs(&scan, fsid, &f))
				continue;
			emit_fs(ctx, &f);
		}
	}
	mfs_scan_free(&scan);
	return 0;
}

static int cmd_filesystem_show(const struct cmd_struct *cmd, int argc, char **argv)
{
	enum { OPT_CHECK = 256 };
	static const struct option longopts[] = {
		{ "all-devices", no_argument, NULL, 'd' },
		{ "check", no_argument, NULL, OPT_CHECK },
		{ NULL, 0, NULL, 0 }
	};
	struct show_ctx ctx = { .units = get_unit_mode_from_arg(&argc, argv, 0) };
	struct json_object *root = NULL;
	const char *arg = NULL;
	bool check = false;
	struct stat st;
	int c;

	while ((c = getopt_long(argc, argv, "d", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			break;
		case OPT_CHECK:
			check = true;
			break;
		default:
			usage_unknown_option(cmd, argv);
		}
	}
	if (check_argc_max(argc - optind, 1))
		return 1;
	if (optind < argc)
		arg = argv[optind];
	if (mfs_output_format == MFS_OUTPUT_JSON)
		root = mfs_json_start("filesystems", &ctx.array);
	if (arg && stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) {
		/* a mount point: the filesystem the daemon behind it serves */
		struct show_fs f;

		if (collect_fs_mounted(arg, &f) == 0)
			emit_fs(&ctx, &f);
	} else if (show_scanned(&ctx, arg)) {
		if (root)
			json_object_put(root);
		return 1;
	}
	if (root)
		mfs_json_print_free(root);
	if (arg && !ctx.shown) {
		error("not a valid mfs filesystem: %s", arg);
		return 1;
	}
	return check && ctx.unhealthy ? 1 : 0;
}
DEFINE_COMMAND(filesystem_show, "show", cmd_filesystem_show, cmd_filesystem_show_usage,
	       NULL, CMD_FORMAT_JSON);

/* ---------------- label ---------------- */

static const char * const cmd_filesystem_label_usage[] = {
	"mfs filesystem label <device> [<newlabel>]",
	"",
	"Get or change the label of an unmounted filesystem.",
	"With one argument the current label is printed; with two it is set.",
	NULL
};

static int cmd_filesystem_label(const struct cmd_struct *cmd, int argc, char **argv)
{
	struct mfs_fs_info *fs;
	struct mfs_trans_handle *trans;
	const char *dev;
	int ret;

	clean_args_no_options(cmd, argc, argv);
	if (check_argc_min(argc - optind, 1) || check_argc_max(argc - optind, 2))
		return 1;
	dev = argv[optind];
	if (argc - optind == 1) {
		struct mfs_super_block sb;

		ret = mfs_probe_super(dev, &sb);
		if (ret) {
			error("not a valid mfs filesystem: %s", dev);
			return 1;
		}
		printf("%s\n", sb.label);
		return 0;
	}
	{
		char label[MFS_LABEL_SIZE + 1];
		size_t len;

		snprintf(label, sizeof(label), "%s", argv[optind + 1]);
		len = strlen(argv[optind + 1]);
		if (len && argv[optind + 1][len - 1] == '\n')
			len--;
		if (len >= MFS_LABEL_SIZE) {
			error("label %s is too long (max %d)", argv[optind + 1], MFS_LABEL_SIZE - 1);
			return 1;
		}
		label[len] = 0;
		if (strchr(label, '\n')) {
			error("label must not contain a newline");
			return 1;
		}
		ret = mfs_open_for_cmd(&dev, 1, MFS_OPEN_WRITABLE, &fs);
		if (ret)
			return 1;
		memset(fs->super.label, 0, MFS_LABEL_SIZE);
		memcpy(fs->super.label, label, len);
		ret = mfs_start_transaction(fs, &trans);
		if (!ret)
			ret = mfs_commit_transaction(trans);
		if (ret) {
			error("cannot write the new label: %s", strerror(-ret));
			mfs_free_fs_info(fs);
			return 1;
		}
		mfs_close_fs(fs);
	}
	return 0;
}
DEFINE_SIMPLE_COMMAND(filesystem_label, "label");

/* ---------------- sync ---------------- */

static const char * const cmd_filesystem_sync_usage[] = {
	"mfs filesystem sync <path>",
	"",
	"Commit everything written to the mounted filesystem at <path>: the",
	"kernel's cached writes go to the server, which commits them to every",
	"device. sync(1) alone does not commit an mfs (Linux sends FUSE servers",
	"no syncfs request); use this, fsync, or wait for the commit interval.",
	NULL
};

static int cmd_filesystem_sync(const struct cmd_struct *cmd, int argc, char **argv)
{
	const char *mnt;
	int ret;

	clean_args_no_options(cmd, argc, argv);
	if (check_argc_exact(argc - optind, 1))
		return 1;
	mnt = argv[optind];
	ret = mfs_sync_mount(mnt);
	if (ret == -ENOTTY || ret == -EINVAL || ret == -ENOTDIR) {
		error("not a mounted mfs filesystem: %s", mnt);
		return 1;
	}
	if (ret) {
		error("sync of '%s' failed: %s", mnt, strerror(-ret));
		return 1;
	}
	return 0;
}
DEFINE_SIMPLE_COMMAND(filesystem_sync, "sync");

/* ---------------- change-uuid ---------------- */

static const char * const cmd_filesystem_change_uuid_usage[] = {
	"mfs filesystem change-uuid [-U <uuid>] <device> [<device>...]",
	"",
	"Give an unmounted filesystem a new uuid (random unless -U), as",
	"btrfstune -u does: what lets a copy of a filesystem (images copied",
	"with cp, a cloned disk) be used beside the original. Only the",
	"superblocks are rewritten, on every member, which must all be present.",
	"An interrupted change is finished by running the command again.",
	"",
	"-U|--uuid <uuid>   the new uuid",
	NULL
};

/*
 * The other fsid of an interrupted change that the devices of this one
 * (fsid) take part in: pending on some (they are still at fsid), or
 * reached by some (the others are still at the old one). NULL: none.
 */
static const u8 *interrupted_change(const struct mfs_scan *scan, const u8 *fsid)
{
	int i;

	for (i = 0; i < scan->nr; i++) {
		const struct mfs_super_block *sb = &scan->devs[i].sb;

		if (!(le64_to_cpu(sb->flags) & MFS_SUPER_FLAG_CHANGING_FSID))
			continue;
		if (!memcmp(sb->fsid, fsid, MFS_FSID_SIZE))
			return sb->pending_fsid;
		if (!memcmp(sb->pending_fsid, fsid, MFS_FSID_SIZE))
			return sb->fsid;
	}
	return NULL;
}

/*
 * The uuid the filesystem gets: an interrupted change's (it goes where it
 * was going; -U may only repeat it), else -U's, else a new one. -1 after
 * an error message.
 */
static int choose_new_fsid(const struct mfs_super_block *sb, const u8 *first, const u8 *other,
			   bool given, u8 *new_fsid, const char *dev)
{
	const u8 *target = NULL;
	char str[37];

	if (other)
		target = le64_to_cpu(sb->flags) & MFS_SUPER_FLAG_CHANGING_FSID ? other : first;
	if (target && given && memcmp(target, new_fsid, MFS_FSID_SIZE)) {
		uuid_unparse(target, str);
		error("an earlier change of this filesystem's uuid to %s was interrupted: finish it first (run this again without -U)",
		      str);
		return -1;
	}
	if (target)
		memcpy(new_fsid, target, MFS_FSID_SIZE);
	else if (!given)
		uuid_generate(new_fsid);
	if (!other && !memcmp(new_fsid, first, MFS_FSID_SIZE)) {
		uuid_unparse(first, str);
		error("the filesystem on %s already has uuid %s", dev, str);
		return -1;
	}
	return 0;
}

/*
 * The members to open: the named devices lead, those found by scanning
 * that carry the filesystem's fsid (or an interrupted change's other one)
 * follow. NULL when out of memory.
 */
static const char **change_uuid_members(const struct mfs_scan *scan, const char * const *named,
					int ndev, const u8 *first, const u8 *other, int *n)
{
	const char **cand = calloc(scan->nr + ndev, sizeof(*cand));
	int i, j;

	*n = 0;
	for (i = 0; cand && i < ndev; i++)
		cand[(*n)++] = named[i];
	for (i = 0; cand && i < scan->nr; i++) {
		const u8 *f = scan->devs[i].sb.fsid;

		if (memcmp(f, first, MFS_FSID_SIZE) && (!other || memcmp(f, other, MFS_FSID_SIZE)))
			continue;
		for (j = 0; j < ndev && !mfs_same_path(scan->devs[i].path, named[j]); j++)
			;
		if (j == ndev)
			cand[(*n)++] = scan->devs[i].path;
	}
	return cand;
}

static int cmd_filesystem_change_uuid(const struct cmd_struct *cmd, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "uuid", required_argument, NULL, 'U' },
		{ NULL, 0, NULL, 0 }
	};
	u8 new_fsid[MFS_FSID_SIZE], first[MFS_FSID_SIZE];
	struct mfs_open_ctl ctl = { 0 };
	struct mfs_super_block sb;
	struct mfs_fs_info *fs;
	struct mfs_scan scan;
	const char **cand;
	const u8 *other;
	char old_str[37], new_str[37];
	bool given = false;
	int c, n, ndev, ret;

	while ((c = getopt_long(argc, argv, "U:", longopts, NULL)) != -1) {
		switch (c) {
		case 'U':
			if (uuid_parse(optarg, new_fsid)) {
				error("invalid uuid: %s", optarg);
				return 1;
			}
			given = true;
			break;
		default:
			usage_unknown_option(cmd, argv);
		}
	}
	if (check_argc_min(argc - optind, 1))
		return 1;
	ndev = argc - optind;
	if (mfs_probe_super(argv[optind], &sb)) {
		error("not a valid mfs filesystem: %s", argv[optind]);
		return 1;
	}
	memcpy(first, sb.fsid, MFS_FSID_SIZE);
	if (mfs_scan_all((const char * const *)argv + optind, ndev, &scan))
		return 1;
	other = interrupted_change(&scan, first);
	if (choose_new_fsid(&sb, first, other, given, new_fsid, argv[optind])) {
		mfs_scan_free(&scan);
		return 1;
	}
	cand = change_uuid_members(&scan, (const char * const *)argv + optind, ndev, first, other,
				   &n);
	ctl.paths = cand;
	ctl.npaths = cand ? n : 0;
	ctl.nnamed = ndev;
	ctl.flags = MFS_OPEN_WRITABLE | MFS_OPEN_CHANGE_FSID;
	ctl.fsid = first;
	ctl.alt_fsid = other;
	ctl.sb_mirror = -1;
	ctl.log = mfs_log_to_stderr;
	ret = cand ? mfs_open_fs(&ctl, &fs) : -ENOMEM;
	free(cand);
	mfs_scan_free(&scan);
	if (ret == -ENODEV) {
		error("device %llu is missing: every member must be present to change the uuid (the missing one would keep the old)",
		      (unsigned long long)ctl.missing_devid);
		return 1;
	}
	if (ret) {
		error("cannot open the filesystem on %s: %s", argv[optind],
		      ctl.detail[0] ? ctl.detail : strerror(-ret));
		return 1;
	}
	uuid_unparse(fs->fsid, old_str);
	ret = mfs_change_fsid(fs, new_fsid);
	if (ret) {
		error("changing the uuid failed: %s; run the command again to finish it",
		      strerror(-ret));
		mfs_free_fs_info(fs);
		return 1;
	}
	mfs_free_fs_info(fs);
	uuid_unparse(new_fsid, new_str);
	if (!mfs_quiet) {
		printf("Current fsid: %s\n", old_str);
		printf("New fsid: %s\n", new_str);
	}
	return 0;
}
DEFINE_SIMPLE_COMMAND(filesystem_change_uuid, "change-uuid");

/* cmds/usage.c */
extern const struct cmd_struct cmd_struct_filesystem_df;
extern const struct cmd_struct cmd_struct_filesystem_usage;
extern const struct cmd_struct cmd_struct_filesystem_resize;
/* cmds/health.c */
extern const struct cmd_struct cmd_struct_filesystem_status;

static const char * const filesystem_cmd_group_usage[] = {
	"mfs filesystem <command> [<args>]",
	NULL
};

static const struct cmd_group filesystem_cmd_group = {
	filesystem_cmd_group_usage, NULL, {
		&cmd_struct_filesystem_show,
		&cmd_struct_filesystem_df,
		&cmd_struct_filesystem_usage,
		&cmd_struct_filesystem_status,
		&cmd_struct_filesystem_resize,
		&cmd_struct_filesystem_label,
		&cmd_struct_filesystem_sync,
		&cmd_struct_filesystem_change_uuid,
		NULL
	}
};
DEFINE_GROUP_COMMAND(filesystem, "filesystem");
