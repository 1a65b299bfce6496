/* RAID5/6 parity generation and rebuild on top of ISA-L's xor_gen, pq_gen
 * and GF(2^8) dot products (ec_encode_data). */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <isa-l.h>

#include "kernel-shared/block/raid56.h"

/* xor_gen and pq_gen use aligned vector loads and stores. */
#define ISAL_ALIGN 32
#define GF_GEN 2

/* Which blocks of a stripe are lost. */
struct raid56_loss {
	int ndata;
	int data[2];
	bool p;
	bool q;
};

static bool isal_fits(int nvects, size_t len, void **array)
{
	int i;

	if (len % ISAL_ALIGN)
		return false;
	for (i = 0; i < nvects; i++)
		if ((uintptr_t)array[i] % ISAL_ALIGN)
			return false;
	return true;
}

static void xor_into(u8 *dst, const u8 *src, size_t len)
{
	size_t i = 0;

	/* memcpy keeps the word loads legal on unaligned blocks. */
	for (; i + sizeof(u64) <= len; i += sizeof(u64)) {
		u64 a, b;

		memcpy(&a, dst + i, sizeof(a));
		memcpy(&b, src + i, sizeof(b));
		a ^= b;
		memcpy(dst + i, &a, sizeof(a));
	}
	for (; i < len; i++)
		dst[i] ^= src[i];
}

/* array[nvects - 1] = XOR of the others, xor_gen's convention; nvects >= 2. */
static void xor_vects(int nvects, size_t len, void **array)
{
	u8 *dst = array[nvects - 1];
	int i;

	if (nvects >= 3 && isal_fits(nvects, len, array) &&
	    xor_gen(nvects, (int)len, array) == 0)
		return;
	memcpy(dst, array[0], len);
	for (i = 1; i < nvects - 1; i++)
		xor_into(dst, array[i], len);
}

/*
 * dst[r] = sum over c of coef[r * nsrc + c] * src[c] in GF(2^8).
 * ec_encode_data takes any length and alignment, so this is also the
 * fallback whenever pq_gen cannot run.
 */
static int gf_combine(int nsrc, int ndst, u8 *coef, size_t len, u8 **src,
		      u8 **dst)
{
	u8 *tables = malloc((size_t)nsrc * ndst * 32);

	if (!tables)
		return -ENOMEM;
	ec_init_tables(nsrc, ndst, coef, tables);
	ec_encode_data((int)len, nsrc, ndst, tables, src, dst);
	free(tables);
	return 0;
}

static int gen_p(int ndata, size_t len, void **blocks)
{
	xor_vects(ndata + 1, len, blocks);
	return 0;
}

/* Q alone, leaving P untouched. */
static int gen_q(int ndata, size_t len, void **blocks)
{
	u8 coef[MFS_RAID56_MAX_DATA];
	u8 g = 1;
	int i;

	for (i = 0; i < ndata; i++) {
		coef[i] = g;
		g = gf_mul(g, GF_GEN);
	}
	return gf_combine(ndata, 1, coef, len, (u8 **)blocks,
			  (u8 **)&blocks[ndata + 1]);
}

static int gen_pq(int ndata, size_t len, void **blocks)
{
	u8 coef[2 * MFS_RAID56_MAX_DATA];
	u8 g = 1;
	int i;

	if (ndata >= 2 && isal_fits(ndata + 2, len, blocks) &&
	    pq_gen(ndata + 2, (int)len, blocks) == 0)
		return 0;
	for (i = 0; i < ndata; i++) {
		coef[i] = 1;
		coef[ndata + i] = g;
		g = gf_mul(g, GF_GEN);
	}
	return gf_combine(ndata, 2, coef, len, (u8 **)blocks,
			  (u8 **)&blocks[ndata]);
}

static int check_stripe(int ndata, int nparity, size_t len, void **blocks)
{
	int i;

	if (ndata < 1 || ndata > MFS_RAID56_MAX_DATA)
		return -EINVAL;
	if (nparity != 1 && nparity != 2)
		return -EINVAL;
	if (!blocks || len > INT_MAX)
		return -EINVAL;
	for (i = 0; i < ndata + nparity; i++)
		if (!blocks[i])
			return -EINVAL;
	return 0;
}

int mfs_raid56_gen(int ndata, int nparity, size_t len, void **blocks)
{
	int ret = check_stripe(ndata, nparity, len, blocks);

	if (ret)
		return ret;
	if (nparity == 1)
		return gen_p(ndata, len, blocks);
	return gen_pq(ndata, len, blocks);
}

static int classify_loss(int ndata, int nparity, int nfailed,
			 const int *failed, struct raid56_loss *loss)
{
	int i, j;

	memset(loss, 0, sizeof(*loss));
	if (nfailed < 0 || nfailed > nparity || (nfailed && !failed))
		return -EINVAL;
	for (i = 0; i < nfailed; i++) {
		int idx = failed[i];

		if (idx < 0 || idx >= ndata + nparity)
			return -EINVAL;
		for (j = 0; j < i; j++)
			if (failed[j] == idx)
				return -EINVAL;
		if (idx < ndata)
			loss->data[loss->ndata++] = idx;
		else if (idx == ndata)
			loss->p = true;
		else
			loss->q = true;
	}
	return 0;
}

/* D_x = P ^ every other data block. */
static int rebuild_from_p(int ndata, size_t len, void **blocks, int x)
{
	void *vects[MFS_RAID56_MAX_DATA + 1];
	int i, n = 0;

	for (i = 0; i <= ndata; i++)
		if (i != x)
			vects[n++] = blocks[i];
	vects[n++] = blocks[x];
	xor_vects(n, len, vects);
	return 0;
}

/* D_x = g^-x * (Q ^ sum over i != x of g^i * D_i), for when P is lost too. */
static int rebuild_from_q(int ndata, size_t len, void **blocks, int x)
{
	u8 *src[MFS_RAID56_MAX_DATA];
	u8 coef[MFS_RAID56_MAX_DATA];
	u8 gx = 1, g = 1, inv;
	int i, n = 0;

	for (i = 0; i < x; i++)
		gx = gf_mul(gx, GF_GEN);
	inv = gf_inv(gx);
	for (i = 0; i < ndata; i++, g = gf_mul(g, GF_GEN)) {
		if (i == x)
			continue;
		coef[n] = gf_mul(g, inv);
		src[n++] = blocks[i];
	}
	coef[n] = inv;
	src[n++] = blocks[ndata + 1];
	return gf_combine(n, 1, coef, len, src, (u8 **)&blocks[x]);
}

/*
 * With Pxy and Qxy the syndromes of the surviving data folded into P and Q,
 * Pxy = D_x ^ D_y and Qxy = g^x D_x ^ g^y D_y, so with A = 1 / (g^x ^ g^y):
 *   D_x = A * (g^y * Pxy ^ Qxy),  D_y = A * (g^x * Pxy ^ Qxy).
 * Expanding Pxy and Qxy gives each lost block as one dot product over the
 * survivors, which ec_encode_data computes in a single pass.
 */
static int rebuild_two_data(int ndata, size_t len, void **blocks, int x, int y)
{
	u8 *src[MFS_RAID56_MAX_DATA];
	u8 *dst[2] = { blocks[x], blocks[y] };
	u8 coef[2 * MFS_RAID56_MAX_DATA];
	u8 gx = 0, gy = 0, g = 1, a;
	int i, n = 0, k = ndata;

	for (i = 0; i < ndata; i++, g = gf_mul(g, GF_GEN)) {
		if (i == x)
			gx = g;
		if (i == y)
			gy = g;
	}
	a = gf_inv(gx ^ gy);
	g = 1;
	for (i = 0; i < ndata; i++, g = gf_mul(g, GF_GEN)) {
		if (i == x || i == y)
			continue;
		coef[n] = gf_mul(a, gy ^ g);
		coef[k + n] = gf_mul(a, gx ^ g);
		src[n++] = blocks[i];
	}
	coef[n] = gf_mul(a, gy);
	coef[k + n] = gf_mul(a, gx);
	src[n++] = blocks[ndata];
	coef[n] = a;
	coef[k + n] = a;
	src[n++] = blocks[ndata + 1];
	return gf_combine(k, 2, coef, len, src, dst);
}

static int rebuild_data(int ndata, size_t len, void **blocks,
			const struct raid56_loss *loss)
{
	if (loss->ndata == 2)
		return rebuild_two_data(ndata, len, blocks, loss->data[0],
					loss->data[1]);
	if (loss->p)
		return rebuild_from_q(ndata, len, blocks, loss->data[0]);
	return rebuild_from_p(ndata, len, blocks, loss->data[0]);
}

int mfs_raid56_rebuild(int ndata, int nparity, size_t len, void **blocks,
		       int nfailed, const int *failed)
{
	struct raid56_loss loss;
	int ret;

	ret = check_stripe(ndata, nparity, len, blocks);
	if (ret)
		return ret;
	ret = classify_loss(ndata, nparity, nfailed, failed, &loss);
	if (ret)
		return ret;
	/* Data first: lost parity is then regenerated from complete data. */
	if (loss.ndata) {
		ret = rebuild_data(ndata, len, blocks, &loss);
		if (ret)
			return ret;
	}
	if (loss.p && loss.q)
		return gen_pq(ndata, len, blocks);
	if (loss.p)
		return gen_p(ndata, len, blocks);
	if (loss.q)
		return gen_q(ndata, len, blocks);
	return 0;
}
