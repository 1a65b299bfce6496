/*
 * The daemon's state shared by its files: the file operations (server.c),
 * the admin ioctls (admin-ioctl.c) and the background threads
 * (background.c). Private to fuse/.
 */
#ifndef MFS_FUSE_SERVER_INTERNAL_H
#define MFS_FUSE_SERVER_INTERNAL_H

#define FUSE_USE_VERSION 312
#include <fuse3/fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include "fuse/server.h"

struct ino_count;

/*
 * One count per inode the kernel holds, and it holds every inode it has
 * seen until memory pressure: a few hundred thousand after a big untar.
 * Every LOOKUP, CREATE and FORGET walks a chain, so the chains must stay
 * short at that size (4096 buckets made a create's cost grow with the
 * number of files: 75 nodes a chain at 300k files).
 */
#define INO_HASH 65536

struct server {
	struct mfs_fs_info *fs;
	const struct mfs_mount_opts *opts;
	struct fuse_session *se;
	pthread_mutex_t ilock;
	struct ino_count *counts[INO_HASH];
	pthread_t committer;
	pthread_t restriper;
	bool restriper_started;
	pthread_t scrubber;
	bool scrubber_started;
	pthread_mutex_t stop_lock;
	pthread_cond_t stop_cond;
	bool stopping;
	int spare_check;	/* a member failed: see whether a hot spare takes its place */
	bool acl;		/* FUSE_CAP_POSIX_ACL: mode and ACLs are ours to keep in step */
	bool no_open;		/* FUSE_CAP_NO_OPEN_SUPPORT: the kernel opens files without us */
	long write_delay_ms;	/* MFS_TEST_WRITE_DELAY_MS */
	/* FUSE_HANDLE_KILLPRIV_V2 (killpriv.c) */
	uint64_t init_unique;	/* the INIT request, until it is answered */
	bool kernel_killpriv;	/* the kernel offers it */
	bool killpriv;		/* negotiated: clearing set-user-ID is ours */
};

static inline struct server *srv(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* background.c */
int commit_and_clean(struct server *s);
void *committer(void *arg);
int start_restriper(struct server *s);
void stop_restriper(struct server *s);
void restripe_at_mount(struct server *s);
void member_failed(void *arg);
void stop_background(struct server *s);
int start_scrubber(struct server *s);
void stop_scrubber(struct server *s);
void scrub_at_mount(struct server *s);

/* killpriv.c */
int killpriv_install(struct server *s);
bool killpriv_on(const struct server *s);
bool killpriv_write_asked(fuse_req_t req, fuse_ino_t ino, off_t off, size_t size);
bool killpriv_truncate_asked(fuse_req_t req, fuse_ino_t ino);
struct mfs_stat;
unsigned int killpriv_mask(fuse_req_t req, const struct mfs_stat *st, bool may_have_caps);
int killpriv_clear(fuse_req_t req, fuse_ino_t fino, u64 ino, bool ask_caps);
bool killpriv_acl_clears_sgid(fuse_req_t req, u64 ino);

/* admin-ioctl.c */
void op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
	      struct fuse_file_info *fi, unsigned int flags, const void *in_buf,
	      size_t in_bufsz, size_t out_bufsz);

#endif
