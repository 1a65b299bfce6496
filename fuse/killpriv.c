/*
 * Set-user-ID and set-group-ID cleared by the server (FUSE_HANDLE_KILLPRIV_V2).
 *
 * Without it the kernel asks for security.capability before every write(2)
 * through the page cache: a GETXATTR round trip per call, because a FUSE
 * mount gets SB_NOSEC - which caches "nothing to clear" per inode - only
 * with this capability (256 MiB written 4 KiB at a time took 2.5x as long
 * as in 1 MiB calls). With it the kernel leaves the clearing to the server:
 * on a write or truncate by a caller without CAP_FSETID (the kernel flags
 * those requests), on a fallocate by one and on every chown, with the VFS's
 * rules for local filesystems (killpriv_mask). File capabilities are still
 * removed by the kernel (REMOVEXATTR).
 *
 * libfuse 3.14 neither negotiates the capability nor passes on the request
 * flags that carry the kernel's word, so the server reads and writes
 * /dev/fuse through the functions here (fuse_session_custom_io): the INIT
 * reply gains the flag when the kernel offers it, and each worker thread
 * keeps the raw request it is serving where the handlers can read it.
 */
#include <errno.h>
#include <linux/capability.h>
#include <linux/fuse.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include "fuse/server-internal.h"
#include "kernel-shared/fs/inode.h"

/* the request this worker thread read last, and serves now */
static __thread const struct fuse_in_header *cur_in;
static __thread size_t cur_len;

static ssize_t kp_read(int fd, void *buf, size_t len, void *userdata)
{
	struct server *s = userdata;
	ssize_t n = read(fd, buf, len);
	const struct fuse_in_header *in = buf;

	cur_in = NULL;
	if (n < (ssize_t)sizeof(*in))
		return n;
	cur_in = in;
	cur_len = n;
	if (in->opcode == FUSE_INIT &&
	    (size_t)n >= sizeof(*in) + offsetof(struct fuse_init_in, flags) + sizeof(uint32_t)) {
		const struct fuse_init_in *init = (const void *)(in + 1);

		s->kernel_killpriv = init->flags & FUSE_HANDLE_KILLPRIV_V2;
		__atomic_store_n(&s->init_unique, in->unique, __ATOMIC_RELEASE);
	}
	return n;
}

static ssize_t kp_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct server *s = userdata;
	const struct fuse_out_header *out = iov[0].iov_base;
	uint64_t init_unique = __atomic_load_n(&s->init_unique, __ATOMIC_ACQUIRE);
	struct fuse_init_out init;
	struct iovec v[2];

	if (!init_unique || count != 2 || iov[0].iov_len < sizeof(*out) ||
	    out->unique != init_unique)
		return writev(fd, iov, count);
	__atomic_store_n(&s->init_unique, 0, __ATOMIC_RELAXED);
	if (out->error || !s->kernel_killpriv || s->opts->ro ||
	    iov[1].iov_len < offsetof(struct fuse_init_out, flags) + sizeof(uint32_t) ||
	    iov[1].iov_len > sizeof(init))
		return writev(fd, iov, count);
	memcpy(&init, iov[1].iov_base, iov[1].iov_len);
	init.flags |= FUSE_HANDLE_KILLPRIV_V2;
	v[0] = iov[0];
	v[1] = (struct iovec){ &init, iov[1].iov_len };
	/* before the kernel has the reply, so before any request relies on it */
	__atomic_store_n(&s->killpriv, true, __ATOMIC_RELEASE);
	return writev(fd, v, 2);
}

int killpriv_install(struct server *s)
{
	static const struct fuse_custom_io io = {
		.read = kp_read,
		.writev = kp_writev,
	};

	return fuse_session_custom_io(s->se, &io, fuse_session_fd(s->se));
}

bool killpriv_on(const struct server *s)
{
	return __atomic_load_n(&s->killpriv, __ATOMIC_ACQUIRE);
}

/* the request being served, if it is OPCODE on NODEID with at least ARG bytes */
static const void *cur_args(uint32_t opcode, fuse_ino_t nodeid, size_t arg)
{
	if (!cur_in || cur_in->opcode != opcode || cur_in->nodeid != nodeid ||
	    cur_len < sizeof(*cur_in) + arg)
		return NULL;
	return cur_in + 1;
}

bool killpriv_write_asked(fuse_req_t req, fuse_ino_t ino, off_t off, size_t size)
{
	const struct fuse_write_in *w = cur_args(FUSE_WRITE, ino, sizeof(*w));

	return killpriv_on(srv(req)) && w && w->offset == (uint64_t)off && w->size == size &&
	       (w->write_flags & FUSE_WRITE_KILL_SUIDGID);
}

bool killpriv_truncate_asked(fuse_req_t req, fuse_ino_t ino)
{
	const struct fuse_setattr_in *a = cur_args(FUSE_SETATTR, ino, sizeof(*a));

	return killpriv_on(srv(req)) && a && (a->valid & FATTR_SIZE) &&
	       (a->valid & FATTR_KILL_SUIDGID);
}

/* the caller is in group GID (its own or a supplementary one) */
static bool caller_in_group(fuse_req_t req, gid_t gid)
{
	gid_t groups[256];
	int n, i;

	if (fuse_req_ctx(req)->gid == gid)
		return true;
	n = fuse_req_getgroups(req, 256, groups);
	for (i = 0; i < n && i < 256; i++)
		if (groups[i] == gid)
			return true;
	return false;
}

/* the caller has CAP_FSETID (its effective set, from /proc; not known: no) */
static bool caller_fsetid(fuse_req_t req)
{
	char path[64], line[256];
	unsigned long long caps;
	bool has = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)fuse_req_ctx(req)->pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &caps) == 1) {
			has = caps & (1ULL << CAP_FSETID);
			break;
		}
	fclose(f);
	return has;
}

/*
 * What a write, truncate or chown by this caller clears of ST (the VFS's
 * setattr_should_drop_suidgid): set-user-ID; set-group-ID where the group
 * may execute or the caller is outside the file's group - unless it has
 * CAP_FSETID (MAY_HAVE_CAPS: a chown; the kernel flags only the writes and
 * truncates of callers without it).
 */
unsigned int killpriv_mask(fuse_req_t req, const struct mfs_stat *st, bool may_have_caps)
{
	unsigned int kill = MFS_SET_KILL_SUID | MFS_SET_KILL_SGID;

	if ((st->mode & S_ISGID) && !(st->mode & S_IXGRP) && !caller_in_group(req, st->gid) &&
	    !(may_have_caps && caller_fsetid(req)))
		kill |= MFS_SET_KILL_SGID_ANY;
	return kill;
}

/*
 * Before a write the kernel flagged (ASK_CAPS false) or a fallocate (the
 * kernel flags nothing: ask /proc). The kernel's copy of the mode is told
 * to go: it would keep the bits, and an exec honour them, until it asks.
 */
int killpriv_clear(fuse_req_t req, fuse_ino_t fino, u64 ino, bool ask_caps)
{
	struct mfs_stat st;
	int ret = mfs_getattr(srv(req)->fs, ino, &st);

	if (ret || S_ISDIR(st.mode) || !(st.mode & (S_ISUID | S_ISGID)))
		return ret;
	if (ask_caps && caller_fsetid(req))
		return 0;
	ret = mfs_kill_suidgid(srv(req)->fs, ino, killpriv_mask(req, &st, false));
	if (ret > 0) {
		fuse_lowlevel_notify_inval_inode(srv(req)->se, fino, -1, 0);
		ret = 0;
	}
	return ret;
}

/*
 * An access ACL set by someone outside the file's group and without
 * CAP_FSETID clears set-group-ID (posix_acl_update_mode). The kernel says
 * so only with FUSE_SETXATTR_EXT, which libfuse 3.14 does not negotiate:
 * decided here, whatever KILLPRIV says.
 */
bool killpriv_acl_clears_sgid(fuse_req_t req, u64 ino)
{
	struct mfs_stat st;

	return !mfs_getattr(srv(req)->fs, ino, &st) && (st.mode & S_ISGID) &&
	       !caller_in_group(req, st.gid) && !caller_fsetid(req);
}
