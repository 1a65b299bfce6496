/* RAID5/6 stripe parity: generate P (and Q) and rebuild any lost blocks. */
#ifndef MFS_RAID56_H
#define MFS_RAID56_H

#include "kernel-shared/format/kerncompat.h"

/*
 * Q weighs data block i by g^i with g = 2 of order 255 in GF(2^8), so more
 * than 255 data blocks would give two blocks the same weight.
 */
#define MFS_RAID56_MAX_DATA 255

/*
 * blocks[0..ndata-1] are data, blocks[ndata] is P and blocks[ndata + 1] is
 * Q (raid6 only); each is len bytes, len <= INT_MAX. Any alignment works;
 * 32-byte aligned blocks with len a multiple of 32 take ISA-L's fastest path.
 * P is the XOR of the data, Q the Linux RAID-6 syndrome sum(g^i * D_i) over
 * GF(2^8) with polynomial 0x11d; with one data block P = Q = D0.
 */
int mfs_raid56_gen(int ndata, int nparity, size_t len, void **blocks);

/*
 * Rebuild the nfailed (0..nparity) blocks whose indices are in failed[]:
 * their contents are garbage on entry and correct on return, the other
 * blocks are only read. Returns 0, -EINVAL or -ENOMEM.
 */
int mfs_raid56_rebuild(int ndata, int nparity, size_t len, void **blocks,
		       int nfailed, const int *failed);

#endif
