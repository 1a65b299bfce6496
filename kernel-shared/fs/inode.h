/*
 * The filesystem proper: inodes, directories, file data with checksums,
 * symlinks, xattrs. Every call takes fs->lock for its duration and runs in
 * the current transaction; durability comes from commit (fsync, timer).
 */
#ifndef MFS_INODE_H
#define MFS_INODE_H

#include <sys/types.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include "kernel-shared/tree/ctree.h"

/*
 * The checksums of the data extent at disk_bytenr (disk_len bytes), one per
 * sector, in a malloc'd *out; 1 (and NULL) when it has no csum item (never
 * written: preallocated), -EUCLEAN when the item has the wrong size.
 */
int mfs_extent_csums(struct mfs_fs_info *fs, u64 disk_bytenr, u64 disk_len, u8 **out);
/* The checksum the csum tree holds for the data sector at logical into out; 1: none. */
int mfs_data_sector_csum(struct mfs_fs_info *fs, u64 logical, u8 *out);
/*
 * Read [bytenr, +len) of a data extent whose sector checksums are csums,
 * healing bad copies from good ones (-EIO when a sector has none).
 */
int mfs_read_data_verified(struct mfs_fs_info *fs, u64 bytenr, u64 len, const u8 *csums, u8 *buf);
/* What mfs_heal_data_sector found: the bad copies, and what it rewrote. */
struct mfs_heal_report {
	bool report_only;		/* in: count the bad copies, rewrite none */
	int nbad;			/* copies unreadable or not matching */
	int mirror[MFS_MAX_COPIES];	/* their mirror numbers */
	int stat[MFS_MAX_COPIES];	/* and MFS_DEV_STAT_* kind */
	int rewritten;			/* of them rewritten with the good data */
};
/*
 * Every copy of the data sector at logical checked against want; the bad
 * ones counted on their devices and rewritten with a good one, which goes
 * to out. -EIO: no copy is good. rep may be NULL.
 */
int mfs_heal_data_sector(struct mfs_fs_info *fs, u64 logical, const u8 *want, u8 *out,
			 struct mfs_heal_report *rep);
struct mfs_trans_handle;
/* The csum item of a data extent: one checksum per sector of len bytes. */
int mfs_insert_data_csums(struct mfs_trans_handle *trans, u64 bytenr, const u8 *sums, u64 len);
/*
 * Point every file extent item of ino that names the data extent at
 * old_bytenr at new_bytenr instead (the extent moved; same length and
 * contents). *nrefs: how many there were; *first_offset: the file offset
 * of the first.
 */
int mfs_repoint_file_extents(struct mfs_trans_handle *trans, u64 ino, u64 old_bytenr,
			     u64 new_bytenr, int *nrefs, u64 *first_offset);

struct mfs_stat {
	u64 ino;
	u64 size;
	u64 nbytes;
	u64 rdev;
	u64 generation;
	u32 nlink;
	u32 uid;
	u32 gid;
	u32 mode;
	struct timespec atime, mtime, ctime, btime;
};

/* setattr mask */
#define MFS_SET_MODE	(1U << 0)
#define MFS_SET_UID	(1U << 1)
#define MFS_SET_GID	(1U << 2)
#define MFS_SET_SIZE	(1U << 3)
#define MFS_SET_ATIME	(1U << 4)
#define MFS_SET_MTIME	(1U << 5)
#define MFS_SET_CTIME	(1U << 6)
#define MFS_SET_ATIME_NOW (1U << 7)
#define MFS_SET_MTIME_NOW (1U << 8)
/*
 * Clear set-user-ID / set-group-ID of a non-directory, from the mode it has
 * under the lock (a write, truncate or chown by someone who may not keep
 * them): SGID where the group may execute, SGID_ANY whatever the mode.
 */
#define MFS_SET_KILL_SUID (1U << 9)
#define MFS_SET_KILL_SGID (1U << 10)
#define MFS_SET_KILL_SGID_ANY (1U << 11)
#define MFS_SET_KILL	(MFS_SET_KILL_SUID | MFS_SET_KILL_SGID | MFS_SET_KILL_SGID_ANY)

/* rename flags (as renameat2) */
#define MFS_RENAME_NOREPLACE	(1U << 0)
#define MFS_RENAME_EXCHANGE	(1U << 1)

/* Prepare the in-memory inode state after open (next inode number, orphans). */
int mfs_fs_setup(struct mfs_fs_info *fs);
/* mkfs: the root directory. */
int mfs_make_root_dir(struct mfs_trans_handle *trans, u32 uid, u32 gid);

int mfs_getattr(struct mfs_fs_info *fs, u64 ino, struct mfs_stat *st);
int mfs_lookup(struct mfs_fs_info *fs, u64 dir, const char *name, struct mfs_stat *st);
/* mknod/mkdir/create/symlink: mode carries the type; target only for symlinks. */
int mfs_create(struct mfs_fs_info *fs, u64 dir, const char *name, u32 mode, u64 rdev,
	       u32 uid, u32 gid, const char *target, struct mfs_stat *st);
int mfs_link(struct mfs_fs_info *fs, u64 ino, u64 dir, const char *name, struct mfs_stat *st);
/*
 * unlink/rmdir. *orphaned is set when the inode lost its last link: the
 * caller frees it with mfs_evict when the last user is gone.
 */
int mfs_unlink(struct mfs_fs_info *fs, u64 dir, const char *name, bool rmdir,
	       u64 *victim, bool *orphaned);
int mfs_rename(struct mfs_fs_info *fs, u64 olddir, const char *oldname, u64 newdir,
	       const char *newname, unsigned int flags, u64 *victim, bool *orphaned);
/* Free an inode whose link count is zero (its orphan item goes too). */
int mfs_evict(struct mfs_fs_info *fs, u64 ino);

/*
 * Directory listing in DIR_INDEX order from position pos ("." and ".." are
 * positions 0 and 1). fill returns nonzero to stop; next is the position of
 * the entry after this one.
 */
typedef int (*mfs_filldir_t)(void *arg, const char *name, u64 ino, u32 type, u64 next);
int mfs_readdir(struct mfs_fs_info *fs, u64 dir, u64 pos, mfs_filldir_t fill, void *arg);
/*
 * The same with each entry's attributes, for FUSE readdirplus. st is NULL
 * for "." and "..", and for an entry whose inode cannot be read (a lookup
 * of the name then reports why).
 */
typedef int (*mfs_filldir_plus_t)(void *arg, const char *name, u64 ino, u32 type, u64 next,
				  const struct mfs_stat *st);
int mfs_readdirplus(struct mfs_fs_info *fs, u64 dir, u64 pos, mfs_filldir_plus_t fill,
		    void *arg);

int mfs_setattr(struct mfs_fs_info *fs, u64 ino, unsigned int mask,
		const struct mfs_stat *in, struct mfs_stat *out);
/*
 * MFS_SET_KILL_* alone, and only if the mode has something to clear (no
 * change, not even of ctime, otherwise). Returns 1 when the mode changed.
 */
int mfs_kill_suidgid(struct mfs_fs_info *fs, u64 ino, unsigned int kill);
int mfs_readlink(struct mfs_fs_info *fs, u64 ino, char *buf, size_t size);

ssize_t mfs_read(struct mfs_fs_info *fs, u64 ino, u64 off, size_t len, void *buf);
ssize_t mfs_write(struct mfs_fs_info *fs, u64 ino, u64 off, size_t len, const void *buf);
/* mode: 0 or FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE|FALLOC_FL_KEEP_SIZE */
int mfs_fallocate(struct mfs_fs_info *fs, u64 ino, int mode, u64 off, u64 len);
/* SEEK_DATA / SEEK_HOLE */
int mfs_lseek(struct mfs_fs_info *fs, u64 ino, u64 off, int whence, u64 *result);

int mfs_setxattr(struct mfs_fs_info *fs, u64 ino, const char *name, const void *value,
		 size_t size, int flags);
/* Returns the value size; with size 0 only the size. -ENODATA if absent. */
ssize_t mfs_getxattr(struct mfs_fs_info *fs, u64 ino, const char *name, void *value,
		     size_t size);
ssize_t mfs_listxattr(struct mfs_fs_info *fs, u64 ino, char *list, size_t size);
int mfs_removexattr(struct mfs_fs_info *fs, u64 ino, const char *name);

int mfs_statfs(struct mfs_fs_info *fs, struct statvfs *st);
/* relatime update after a read. */
int mfs_touch_atime(struct mfs_fs_info *fs, u64 ino);
/* Commit everything (fsync, sync, umount). */
int mfs_sync_fs(struct mfs_fs_info *fs);

#endif
