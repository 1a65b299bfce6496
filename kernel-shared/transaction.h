/* Transactions: one running at a time; commit in the order of DESIGN §2. */
#ifndef MFS_TRANSACTION_H
#define MFS_TRANSACTION_H

#include "ctree.h"

/* Join the running transaction or start one. */
int mfs_start_transaction(struct mfs_fs_info *fs, struct mfs_trans_handle **out);
/* Leave the transaction open; it commits later. */
void mfs_end_transaction(struct mfs_trans_handle *trans);
/*
 * Commit: settle the extent tree and root items, write every dirty node to
 * fresh space, flush every device, write the superblocks with the new
 * generation, flush again. A failure leaves the old generation on disk.
 */
int mfs_commit_transaction(struct mfs_trans_handle *trans);
/* Commit if anything is pending. */
int mfs_commit_if_dirty(struct mfs_fs_info *fs);
void mfs_abort_transaction(struct mfs_fs_info *fs);

#endif
