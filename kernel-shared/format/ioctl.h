/*
 * Admin ioctls on the mount point (DESIGN §7). FUSE passes only restricted
 * ioctls: every argument is a fixed-size struct, under 16 KiB.
 */
#ifndef MFS_IOCTL_H
#define MFS_IOCTL_H

#include <linux/ioctl.h>
#include <stdint.h>

#define MFS_IOCTL_MAGIC 0xE5

/*
 * The name (comm) the server takes once its mount is gone: it still
 * writes its last commit and holds the devices, and a command that finds
 * one of them busy waits for it (common/open.c) - a plain umount(8) of a
 * FUSE mount returns before the server is done.
 */
#define MFS_SERVER_UNMOUNTING_NAME "mfs-unmounting"

struct mfs_ioctl_fs_info {
	uint64_t daemon_pid;
	uint8_t fsid[16];
	uint64_t num_devices;
	uint64_t generation;
	uint32_t nodesize;
	uint32_t sectorsize;
	char first_device[4096];
};

#define MFS_IOC_FS_INFO		_IOR(MFS_IOCTL_MAGIC, 1, struct mfs_ioctl_fs_info)
/* Commit the running transaction (sync); any caller, as fsync; 0 on a read-only mount. */
#define MFS_IOC_SYNC		_IO(MFS_IOCTL_MAGIC, 2)

_Static_assert(sizeof(struct mfs_ioctl_fs_info) < 16384, "restricted ioctl size");

/* ---- restripe: balance, convert, device delete, resize, replace ---- */
struct mfs_ioctl_balance_filter {
	uint32_t flags;			/* MFS_BALANCE_ARGS_* */
	uint32_t stripes_min;
	uint32_t stripes_max;
	uint32_t pad;
	uint64_t profiles;
	uint64_t usage_min, usage_max;
	uint64_t devid;
	uint64_t pstart, pend;
	uint64_t vstart, vend;
	uint64_t target;
	uint64_t limit_min, limit_max;
};

struct mfs_ioctl_restripe_args {
	uint32_t op;			/* MFS_RESTRIPE_OP_* */
	uint32_t nr_devids;
	uint64_t flags;			/* MFS_BALANCE_DATA | ... | FORCE */
	struct mfs_ioctl_balance_filter data, meta, sys;
	uint64_t devids[16];
	uint64_t new_size;
	int32_t result;			/* out: 0 or -errno */
	char msg[512];			/* out: why it was refused */
};
#define MFS_IOC_RESTRIPE_START	_IOWR(MFS_IOCTL_MAGIC, 10, struct mfs_ioctl_restripe_args)

struct mfs_ioctl_restripe_status {
	uint32_t state;			/* MFS_RESTRIPE_NONE/RUNNING/PAUSED */
	int32_t last_result;
	uint32_t pause_req, cancel_req;
	uint64_t expected, considered, completed;
	uint64_t bytes_total, bytes_done;
	uint64_t elapsed_ns;		/* of the current run */
	uint64_t bytes_at_start;	/* bytes_done when this run started */
	struct mfs_ioctl_restripe_args args;
	uint64_t start_time;		/* seconds since the epoch; 0 unknown */
	uint64_t cancel_progress;	/* replace being cancelled: tenths of a percent */
	uint64_t read_errs, write_errs;	/* replace */
	/* the last replace that ended (kept on disk: the replace item) */
	uint32_t last_replace;		/* MFS_REPLACE_NEVER/FINISHED/CANCELED */
	uint32_t pad;
	uint64_t last_start_time, last_end_time, last_progress;
	uint64_t last_write_errs, last_read_errs;
	/* the last hot spare taken into use since the filesystem was opened */
	uint64_t spare_time;		/* seconds since the epoch; 0 none */
	uint64_t spare_src_devid;	/* the member it replaces (whose devid it gets) */
	uint64_t spare_devid;		/* the spare's devid when it was taken */
};
#define MFS_IOC_RESTRIPE_STATUS	_IOR(MFS_IOCTL_MAGIC, 11, struct mfs_ioctl_restripe_status)

#define MFS_RESTRIPE_CTL_PAUSE	1
#define MFS_RESTRIPE_CTL_CANCEL	2
#define MFS_RESTRIPE_CTL_RESUME	3
struct mfs_ioctl_restripe_ctl {
	uint32_t cmd;
	int32_t result;
};
#define MFS_IOC_RESTRIPE_CTL	_IOWR(MFS_IOCTL_MAGIC, 12, struct mfs_ioctl_restripe_ctl)

/*
 * balance start --dry-run: what the restripe `args` describe would move and
 * whether it fits; nothing is changed. Allowed on a read-only mount.
 */
struct mfs_ioctl_restripe_estimate {
	struct mfs_ioctl_restripe_args args;	/* in; msg out: why start would refuse */
	uint64_t chunks;		/* out: chunks selected */
	uint64_t bytes;			/* out: used bytes in them */
	uint64_t raw_needed;		/* out: raw space their new layouts take */
	uint64_t raw_available;		/* out: unallocated raw space usable for them */
	uint32_t fits;			/* out: 1 when every chunk can be placed */
	int32_t result;			/* out: 0 or -errno */
};
#define MFS_IOC_RESTRIPE_ESTIMATE _IOWR(MFS_IOCTL_MAGIC, 16, struct mfs_ioctl_restripe_estimate)

/* replace start: the target device's path and the source's devid. */
struct mfs_ioctl_replace_start {
	char path[4096];
	uint64_t srcdevid;
	uint64_t flags;			/* MFS_BALANCE_REPLACE_READ_OTHERS or 0 */
	uint32_t discard;		/* discard (TRIM) the target once it is accepted */
	uint32_t pad;
	uint64_t devid;			/* out: the target's devid */
	int32_t result;			/* out: 0 or -errno */
	char msg[512];			/* out: why it was refused */
};
#define MFS_IOC_REPLACE_START	_IOWR(MFS_IOCTL_MAGIC, 17, struct mfs_ioctl_replace_start)

#define MFS_DEV_ADD_SPARE	(1ULL << 0)	/* a hot spare (MFS_DEV_STATE_SPARE) */
struct mfs_ioctl_dev_add {
	char path[4096];
	uint64_t flags;			/* MFS_DEV_ADD_* */
	uint64_t devid;			/* out */
	int32_t result;
};
#define MFS_IOC_DEV_ADD		_IOWR(MFS_IOCTL_MAGIC, 13, struct mfs_ioctl_dev_add)

/*
 * A member's state as the admin sees it (filesystem show, filesystem
 * status, device ready; DESIGN §6): the first of these that applies.
 * failing: failed this mount (a write or flush error), or its errors this
 * mount went past the mount's fail_threshold; rebuilding: came back behind
 * the others and is being caught up.
 */
#define MFS_DEV_HEALTH_OK		0
#define MFS_DEV_HEALTH_MISSING		1
#define MFS_DEV_HEALTH_FAILING		2
#define MFS_DEV_HEALTH_REBUILDING	3
#define MFS_DEV_HEALTH_REPLACING	4	/* the source of a replace */
#define MFS_DEV_HEALTH_REPLACE_TARGET	5
#define MFS_DEV_HEALTH_DELETING		6
#define MFS_DEV_HEALTH_SPARE		7	/* a hot spare, unused */
#define MFS_DEV_HEALTH_NR		8

/*
 * ---- space: devices and chunks, a page at a time ----
 * A filesystem has any number of devices (device add has no limit) and a
 * raid0/10/5/6 chunk has a stripe on each of them, so devices, chunks and
 * the stripes of one chunk are all paged. Start with every cursor 0 and
 * call again with the cursors returned until dev_cursor and chunk_cursor
 * are both MFS_SPACE_END. When generation, total_devices or total_chunks
 * differ from the first page's, the layout changed in between: start over.
 */
#define MFS_SPACE_MAX_DEVS	16
#define MFS_SPACE_MAX_CHUNKS	32
/* small enough that a test filesystem of 34 devices spans pages mid-chunk */
#define MFS_SPACE_MAX_STRIPES	64
#define MFS_SPACE_END		(~(uint64_t)0)
struct mfs_ioctl_space_dev {
	uint64_t devid;
	uint64_t total_bytes;
	uint64_t bytes_used;
	uint64_t flags;
	uint64_t missing;
	uint64_t device_size;		/* size of the underlying device */
	uint64_t state;			/* MFS_DEV_HEALTH_* */
	uint8_t uuid[16];		/* the device's uuid (its dev item's) */
	char path[488];
};
struct mfs_ioctl_space_chunk {
	uint64_t logical;
	uint64_t length;
	uint64_t type;
	uint64_t used;
	uint64_t num_stripes;		/* of the whole chunk */
	uint64_t stripe_size;
	uint64_t first_stripe;		/* index in the chunk of its first stripe on this page */
	uint64_t nr_stripes;		/* its stripes on this page, next in stripes[] */
};
struct mfs_ioctl_space_stripe {
	uint64_t devid;
	uint64_t physical;		/* where the stripe starts on its device */
};
struct mfs_ioctl_space {
	/* in: where this page starts; out: where the next one does (or MFS_SPACE_END) */
	uint64_t dev_cursor;		/* device index */
	uint64_t chunk_cursor;		/* chunk index, in logical order */
	uint64_t stripe_cursor;		/* first stripe of chunk chunk_cursor */
	uint64_t generation;		/* out: of the last commit */
	uint64_t total_devices, total_chunks;
	uint64_t nr_devices, nr_chunks, nr_stripes;	/* out: on this page */
	uint64_t data_profile, metadata_profile, system_profile;
	uint64_t statfs_blocks, statfs_bfree;	/* df figures, bytes */
	/* the metadata kept back for deletes and commits, and how much of it is gone */
	uint64_t global_reserve, global_reserve_used;	/* bytes */
	struct mfs_ioctl_space_dev devs[MFS_SPACE_MAX_DEVS];
	struct mfs_ioctl_space_chunk chunks[MFS_SPACE_MAX_CHUNKS];
	struct mfs_ioctl_space_stripe stripes[MFS_SPACE_MAX_STRIPES];
};
#define MFS_IOC_SPACE		_IOWR(MFS_IOCTL_MAGIC, 14, struct mfs_ioctl_space)

struct mfs_ioctl_resize {
	uint64_t devid;
	uint64_t new_size;
	int32_t result;
	char msg[256];
};
#define MFS_IOC_RESIZE		_IOWR(MFS_IOCTL_MAGIC, 15, struct mfs_ioctl_resize)

_Static_assert(sizeof(struct mfs_ioctl_restripe_status) < 16384, "restricted ioctl size");
_Static_assert(sizeof(struct mfs_ioctl_space) < 16384, "restricted ioctl size");
_Static_assert(sizeof(struct mfs_ioctl_dev_add) < 16384, "restricted ioctl size");
_Static_assert(sizeof(struct mfs_ioctl_replace_start) < 16384, "restricted ioctl size");
_Static_assert(sizeof(struct mfs_ioctl_restripe_estimate) < 16384, "restricted ioctl size");

/* ---- device error counters (mfs device stats) ---- */
#define MFS_DEV_STATS_MAX_DEVS	64
#define MFS_DEV_STATS_NR_VALUES	5	/* MFS_DEV_STAT_*: write, read, flush, corruption, generation */
#define MFS_DEV_STATS_RESET	(1ULL << 0)	/* in: zero the counters after reading them */
struct mfs_ioctl_dev_stats_dev {
	uint64_t devid;
	uint64_t missing;
	uint64_t values[MFS_DEV_STATS_NR_VALUES];
	char path[192];
};
struct mfs_ioctl_dev_stats {
	uint64_t flags;			/* in: MFS_DEV_STATS_* */
	uint64_t nr_devices;		/* out */
	struct mfs_ioctl_dev_stats_dev devs[MFS_DEV_STATS_MAX_DEVS];	/* out, by devid */
};
#define MFS_IOC_DEV_STATS	_IOWR(MFS_IOCTL_MAGIC, 30, struct mfs_ioctl_dev_stats)
_Static_assert(sizeof(struct mfs_ioctl_dev_stats) < 16384, "restricted ioctl size");

/*
 * ---- health (mfs filesystem status) ----
 * Each member's state, and per block-group type and profile the bytes in
 * use by the redundancy left to them with the devices usable now: full
 * (all the profile survives), reduced (less, but some: raid6 missing one,
 * or a chunk written degraded below the requested profile), none (one more
 * device loss loses data: raid1 missing one) and lost (unreadable).
 */
#define MFS_HEALTH_MAX_DEVS	64
#define MFS_HEALTH_MAX_GROUPS	32
struct mfs_ioctl_health_dev {
	uint64_t devid;
	uint64_t state;			/* MFS_DEV_HEALTH_* */
	uint64_t mount_errors;		/* errors this mount (toward fail_threshold) */
	char path[160];			/* "" when missing */
};
struct mfs_ioctl_health_group {
	uint64_t flags;			/* block group type | profile */
	uint64_t chunks;
	uint64_t unreadable_chunks;
	uint64_t full, reduced, none, lost;	/* used bytes */
};
struct mfs_ioctl_health {
	uint64_t total_devices;		/* members of the filesystem */
	uint64_t present_devices;	/* not missing */
	uint64_t failing_devices;
	uint64_t rebuilding_devices;
	uint64_t unreadable_chunks;
	uint64_t fail_threshold;	/* 0: never */
	uint64_t nr_devices;		/* in devs[], by devid (the first MFS_HEALTH_MAX_DEVS) */
	uint64_t nr_groups;		/* in groups[] */
	struct mfs_ioctl_health_dev devs[MFS_HEALTH_MAX_DEVS];
	struct mfs_ioctl_health_group groups[MFS_HEALTH_MAX_GROUPS];
};
#define MFS_IOC_HEALTH		_IOR(MFS_IOCTL_MAGIC, 50, struct mfs_ioctl_health)
_Static_assert(sizeof(struct mfs_ioctl_health) < 16384, "restricted ioctl size");

/* ---- scrub (DESIGN §6): every copy and parity strip of every used block ---- */
#define MFS_SCRUB_READONLY	(1U << 0)	/* count and report, rewrite nothing */
#define MFS_SCRUB_MAX_DEVS	32
#define MFS_SCRUB_FILES_SIZE	6144

/* start (or resume, with MFS_SCRUB_CTL_RESUME's state) a scrub */
struct mfs_ioctl_scrub_args {
	uint32_t flags;			/* in: MFS_SCRUB_* */
	int32_t result;			/* out: 0 or -errno */
	uint64_t limit;			/* in: bytes per second per device, 0 none */
	char msg[256];			/* out: why it was refused */
};
#define MFS_IOC_SCRUB_START	_IOWR(MFS_IOCTL_MAGIC, 60, struct mfs_ioctl_scrub_args)

#define MFS_SCRUB_NONE		0	/* never run since the filesystem was opened */
#define MFS_SCRUB_RUNNING	1
#define MFS_SCRUB_PAUSED	2
#define MFS_SCRUB_FINISHED	3
#define MFS_SCRUB_CANCELED	4
#define MFS_SCRUB_ABORTED	5	/* stopped by an error (last_result) */

/* the error classes of a scrub, as btrfs counts them */
struct mfs_ioctl_scrub_counts {
	uint64_t bytes_done;		/* of the used bytes, each counted once */
	uint64_t read_errors;		/* a copy could not be read */
	uint64_t csum_errors;		/* a data sector did not match its checksum */
	uint64_t verify_errors;		/* a tree block's checksum or header was bad */
	uint64_t parity_errors;		/* a raid5/6 P or Q strip did not match the data */
	uint64_t super_errors;		/* a superblock copy bad or old (the next commit rewrites it) */
	uint64_t corrected_errors;	/* bad copies rewritten from a good one */
	uint64_t uncorrectable_errors;	/* blocks with no good copy left */
	uint64_t unverified_errors;	/* copies not checked: device missing */
};

struct mfs_ioctl_scrub_dev {
	uint64_t devid;
	struct mfs_ioctl_scrub_counts c;	/* bytes_done: read from this device */
};

struct mfs_ioctl_scrub_status {
	uint32_t state;			/* MFS_SCRUB_* */
	uint32_t flags;			/* the run's MFS_SCRUB_* */
	int32_t last_result;
	uint32_t resumed;		/* the run continues an interrupted one */
	uint32_t pause_req, cancel_req;	/* asked for, not yet done */
	uint64_t start_time;		/* seconds since the epoch */
	uint64_t elapsed_ns;		/* scrubbing time, pauses left out */
	uint64_t bytes_total;		/* used bytes of the filesystem */
	uint64_t cursor;		/* logical address scrubbed up to */
	uint64_t limit;
	struct mfs_ioctl_scrub_counts c;
	uint32_t nr_devs;
	uint32_t nr_files;
	struct mfs_ioctl_scrub_dev devs[MFS_SCRUB_MAX_DEVS];
	/*
	 * "U path" (uncorrectable) or "C path" (corrected) lines; a line
	 * "U chunk <logical> has no redundancy left" for a degraded chunk.
	 */
	char files[MFS_SCRUB_FILES_SIZE];
};
#define MFS_IOC_SCRUB_STATUS	_IOR(MFS_IOCTL_MAGIC, 61, struct mfs_ioctl_scrub_status)

#define MFS_SCRUB_CTL_PAUSE	1
#define MFS_SCRUB_CTL_CANCEL	2
#define MFS_SCRUB_CTL_RESUME	3
#define MFS_SCRUB_CTL_LIMIT	4	/* value: the new limit; back: the old one */
struct mfs_ioctl_scrub_ctl {
	uint32_t cmd;
	int32_t result;
	uint64_t value;
};
#define MFS_IOC_SCRUB_CTL	_IOWR(MFS_IOCTL_MAGIC, 62, struct mfs_ioctl_scrub_ctl)
_Static_assert(sizeof(struct mfs_ioctl_scrub_status) < 16384, "restricted ioctl size");
_Static_assert(sizeof(struct mfs_ioctl_scrub_args) < 16384, "restricted ioctl size");

#endif
