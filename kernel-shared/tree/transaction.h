/* Transactions: one running at a time; commit in the order of DESIGN §2. */
#ifndef MFS_TRANSACTION_H
#define MFS_TRANSACTION_H

#include "kernel-shared/tree/ctree.h"

/* Join the running transaction or start one. */
int mfs_start_transaction(struct mfs_fs_info *fs, struct mfs_trans_handle **out);
/*
 * Space reservation (Documentation/space-reservation.md): start the
 * transaction of an operation that changes up to `items` tree items only
 * if the metadata space left holds the worst case of the operation and of
 * the commit after it, committing the running transaction first if that
 * frees enough; -ENOSPC before anything changed otherwise. Operations that
 * free space (MFS_RESERVE_FREEING) may use the global reserve.
 */
enum mfs_reserve_kind {
	MFS_RESERVE_NORMAL,
	MFS_RESERVE_FREEING,
};
int mfs_start_transaction_reserve(struct mfs_fs_info *fs, unsigned int items,
				  enum mfs_reserve_kind kind, struct mfs_trans_handle **out);
/* -ENOSPC unless bytes of data space are left (committing first if that helps). */
int mfs_data_space_check(struct mfs_fs_info *fs, u64 bytes);
u64 mfs_global_reserve_blocks(struct mfs_fs_info *fs);
u64 mfs_metadata_free_blocks(struct mfs_fs_info *fs);
/* Leave the transaction open; it commits later. */
void mfs_end_transaction(struct mfs_trans_handle *trans);
/*
 * The handle failed with err after it may have changed trees or the
 * in-memory maps: a later commit would write that half-made change, so
 * the running transaction is aborted (the filesystem turns read-only, the
 * disk keeps the last commit; btrfs_abort_transaction) and err returned.
 */
int mfs_end_transaction_abort(struct mfs_trans_handle *trans, int err);
/*
 * The end of an operation's handle, with its result: an error after the
 * handle changed something (trans->changed) aborts the transaction as
 * mfs_end_transaction_abort does; an error before it (nothing found,
 * refused), or a lack of space (which the reservations make rare, and
 * which must not turn a full filesystem read-only, as btrfs's ENOSPC
 * aborts do), leaves the transaction as it is. Returns ret.
 */
int mfs_end_transaction_ret(struct mfs_trans_handle *trans, int ret);
/*
 * Commit: settle the extent tree and root items, write every dirty node to
 * fresh space, flush every device, write the superblocks with the new
 * generation, flush again. A failure leaves the old generation on disk.
 */
int mfs_commit_transaction(struct mfs_trans_handle *trans);
/*
 * The same, but fs->lock (held by the caller) is let go while the devices
 * flush and the superblocks are written, so that user I/O and the next
 * transaction go on meanwhile (btrfs lets new transactions start once a
 * commit is past TRANS_STATE_UNBLOCKED); the lock is held again on return.
 * For callers that hold nothing across the call that others may change:
 * the periodic commit, a sync, a restripe's progress record. The commit
 * ends (what it freed returns to free space) before the next one starts,
 * and before an fsync or a space check that needs it returns.
 */
int mfs_commit_transaction_unlocking(struct mfs_trans_handle *trans);
/*
 * A commit still writing its superblocks without fs->lock: wait for it,
 * letting go of the lock meanwhile, and end it; 0, or the filesystem's
 * fatal error. fs->lock held on entry and return; no handle open.
 */
int mfs_end_pending_commit(struct mfs_fs_info *fs);
/* Commit if anything is pending (or a commit is still being written: wait for it). */
int mfs_commit_if_dirty(struct mfs_fs_info *fs);
/* The same, unlocking; a commit still being written is waited for without the lock too. */
int mfs_commit_if_dirty_unlocking(struct mfs_fs_info *fs);
void mfs_abort_transaction(struct mfs_fs_info *fs);

#endif
