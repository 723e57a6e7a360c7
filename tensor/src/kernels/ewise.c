/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * ewise.c - the elementwise kernel: runs a fused program (npt_prog_t,
 * compiled by sched/fuse.c) over an output space.
 *
 * The output space is coalesced and walked in blocks sized for L1/L2
 * (npt_prog_t.block); each block runs every instruction over block-sized
 * register buffers (the calling thread's scratch), so a chain of k ops
 * makes one pass over memory and allocates no intermediate tensor.
 * Unit-stride leaves of the register type are read in place, and the last
 * instruction writes straight into a unit-stride output; outputs larger than
 * the caches are written with streaming stores.
 *
 * Contracts: the program's leaves are materialised. npt_run_prog writes
 * `out` (any strides, shape equal to the program's) and reports integer **
 * negative as NPT_E_VALUE.
 */
#include "kernels.h"

#include <stdlib.h>
#include <string.h>

#define MAXREG (NPT_PROG_MAX_LEAVES + NPT_PROG_MAX_INSTR)

void npt_prog_space(const npt_prog_t *p, int ndim, const int64_t *shape, npt_space_t *sp)
{
	sp->ndim = ndim;
	memcpy(sp->shape, shape, ndim * sizeof(int64_t));
	sp->nop = p->nleaf;
	for (int k = 0; k < p->nleaf; k++)
		npt_broadcast_strides(p->leaf[k], ndim, shape, sp->strides[k]);
}

/* ---- block execution ---- */

size_t npt_prog_block_bytes(const npt_prog_t *p)
{
	return (size_t)p->nslot * p->block * 8 + 64;
}

const void *npt_block_run(char *blocks, const npt_prog_t *p, int64_t n, char *const *ptr,
			  const int64_t *st, void *direct, int nt, int *scalar)
{
	const void *val[MAXREG];
	char sc[MAXREG];
	const size_t slot_bytes = (size_t)p->block * 8;

#define SLOT(r) (blocks + (size_t)p->slot[r] * slot_bytes)
	for (int k = 0; k < p->nleaf; k++) {
		int r = p->leaf_reg[k];
		npt_dtype_t dt = p->leaf[k]->dtype, rt = p->leaf_rt[k];

		if (st[k] == 0) {
			npt_conv(dt, rt)(1, SLOT(r), 1, ptr[k], 0);
			val[r] = SLOT(r);
			sc[r] = 1;
		} else if (st[k] == 1 && dt == rt) {
			val[r] = ptr[k];
			sc[r] = 0;
		} else {
			npt_conv(dt, rt)(n, SLOT(r), 1, ptr[k], st[k]);
			val[r] = SLOT(r);
			sc[r] = 0;
		}
	}
	for (int i = 0; i < p->ninstr; i++) {
		const npt_instr_t *in = &p->ins[i];
		int allsc = sc[in->a] && (in->b < 0 || sc[in->b]) && (in->c < 0 || sc[in->c]);
		int64_t nn = allsc ? 1 : n;
		int last = direct && i == p->ninstr - 1 && !allsc;
		void *dst = last && !nt ? direct : SLOT(in->dst);

		if (in->op <= NPT_OP_GE) {
			int v = sc[in->a] ? 2 : sc[in->b] ? 1 : 0;

			if (allsc)
				v = 0;
			if (last && nt && in->rt == NPT_F32 &&
			    npt_stream_binary_f32(in->op, v, nn, direct, val[in->a], val[in->b])) {
				val[in->dst] = direct;
				sc[in->dst] = 0;
				continue;
			}
			if (in->op == NPT_OP_POW && p->has_int_pow &&
			    npt_any_negative(p->reg_rt[in->b], sc[in->b] ? 1 : nn, val[in->b]))
				return NULL;
			npt_kernel2(in->op, p->reg_rt[in->a], v)(nn, dst, val[in->a], val[in->b]);
		} else if (in->op <= NPT_OP_ERF) {
			npt_kernel1(in->op, in->rt)(nn, dst, val[in->a]);
		} else if (in->op == NPT_OP_WHERE) {
			npt_kernel_where(in->rt)(nn, dst, val[in->a], allsc ? 0 : sc[in->a],
						 val[in->b], allsc ? 0 : sc[in->b], val[in->c],
						 allsc ? 0 : sc[in->c]);
		} else if (in->op == NPT_EW_CAST) {
			npt_conv(p->reg_rt[in->a], in->rt)(nn, dst, 1, val[in->a], 1);
		} else if (in->op == NPT_EW_ROUND_F16) {
			npt_round_f16(nn, dst, val[in->a]);
		} else {
			npt_round_bf16(nn, dst, val[in->a]);
		}
		val[in->dst] = dst;
		sc[in->dst] = (char)allsc;
	}
#undef SLOT
	*scalar = sc[p->out_reg];
	return val[p->out_reg];
}

npt_status_t npt_value_error(void)
{
	return npt_fail(NPT_E_VALUE, "power: integers to negative integer powers are not "
			"allowed (as NumPy's ValueError); use a floating-point base or "
			"non-negative exponents");
}

/* ---- the elementwise driver ---- */

typedef struct {
	const npt_prog_t *p;
	npt_space_t sp;     /* operand 0 = output, 1.. = leaves */
	char *base[NPT_MAX_OPERANDS];
	size_t isz[NPT_MAX_OPERANDS];
	npt_dtype_t out_dt;
	int64_t inner, nblk, blk;
	int direct_ok;
	int stream;         /* big unit-stride output: block in L1, then streaming stores */
	atomic_int failed;
} ew_job_t;

static void ew_task(void *arg, int64_t begin, int64_t end, int tid)
{
	ew_job_t *j = arg;
	const npt_prog_t *p = j->p;
	const npt_space_t *sp = &j->sp;
	int nd = sp->ndim, nop = sp->nop;
	char *blocks = npt_thread_scratch(NPT_TLS_BLOCK, npt_prog_block_bytes(p));
	char *rowp[NPT_MAX_OPERANDS], *ptr[NPT_MAX_OPERANDS];
	int64_t st[NPT_MAX_OPERANDS];
	int64_t cur = -1;

	(void)tid;
	if (!blocks) {
		atomic_store(&j->failed, 2);
		return;
	}
	for (int o = 0; o < nop; o++)
		st[o] = sp->strides[o][nd - 1];
	for (int64_t it = begin; it < end; it++) {
		int64_t o = it / j->nblk, b = it % j->nblk;

		if (o != cur) {
			int64_t rem = o;

			for (int k = 0; k < nop; k++)
				rowp[k] = j->base[k];
			for (int d = nd - 2; d >= 0; d--) {
				int64_t idx = rem % sp->shape[d];

				rem /= sp->shape[d];
				for (int k = 0; k < nop; k++)
					rowp[k] += idx * sp->strides[k][d] * (int64_t)j->isz[k];
			}
			cur = o;
		}
		int64_t start = b * j->blk, n = j->inner - start;

		if (n > j->blk)
			n = j->blk;
		for (int k = 0; k < nop; k++)
			ptr[k] = rowp[k] + start * st[k] * (int64_t)j->isz[k];
		int scalar;
		const void *v = npt_block_run(blocks, p, n, ptr + 1, st + 1,
					      j->direct_ok || j->stream ? ptr[0] : NULL, j->stream,
					      &scalar);

		if (!v) {
			atomic_store(&j->failed, 1);
			return;
		}
		if (v == ptr[0])
			continue;
		if (j->stream && !scalar && p->reg_rt[p->out_reg] == j->out_dt)
			npt_stream_store(ptr[0], v, (size_t)n * j->isz[0]);
		else
			npt_conv(p->reg_rt[p->out_reg], j->out_dt)(n, ptr[0], st[0], v,
								    scalar ? 0 : 1);
	}
	if (j->stream)
		npt_stream_fence();
}

npt_status_t npt_run_prog(const npt_prog_t *p, const char *opname, int ndim, const int64_t *shape,
			  npt_tensor_t *out)
{
	ew_job_t *j = calloc(1, sizeof(*j));

	if (!j)
		return npt_fail(NPT_E_NOMEM, "%s: out of memory", opname);
	if (npt_numel(ndim, shape) == 0) {
		free(j);
		return NPT_OK;
	}
	j->p = p;
	j->sp.ndim = ndim;
	memcpy(j->sp.shape, shape, ndim * sizeof(int64_t));
	j->sp.nop = p->nleaf + 1;
	memcpy(j->sp.strides[0], out->strides, ndim * sizeof(int64_t));
	for (int k = 0; k < p->nleaf; k++)
		npt_broadcast_strides(p->leaf[k], ndim, shape, j->sp.strides[k + 1]);
	npt_space_simplify(&j->sp, 0);
	j->base[0] = npt_tensor_ptr(out);
	j->isz[0] = npt_dtype_size(out->dtype);
	for (int k = 0; k < p->nleaf; k++) {
		j->base[k + 1] = npt_tensor_ptr(p->leaf[k]);
		j->isz[k + 1] = npt_dtype_size(p->leaf[k]->dtype);
	}
	j->out_dt = out->dtype;
	j->inner = j->sp.shape[j->sp.ndim - 1];
	j->direct_ok = j->sp.strides[0][j->sp.ndim - 1] == 1 &&
		       out->dtype == p->reg_rt[p->out_reg] && p->ninstr > 0;
	if (j->direct_ok && (size_t)npt_numel(ndim, shape) * j->isz[0] >= NPT_STREAM_MIN_BYTES) {
		j->direct_ok = 0; /* the last op writes L1; streaming stores copy it out */
		j->stream = 1;
	}
	/* streaming: keep the block that is copied out small enough to stay in L1 */
	int64_t maxblk = j->stream && p->block > 2048 ? 2048 : p->block;

	j->nblk = (j->inner + maxblk - 1) / maxblk;
	/* equal blocks per row (multiples of 64 elements), at most the slot size */
	j->blk = ((j->inner + j->nblk - 1) / j->nblk + 63) & ~(int64_t)63;
	if (j->blk > maxblk)
		j->blk = maxblk;
	j->nblk = (j->inner + j->blk - 1) / j->blk;
	int64_t items = npt_numel(j->sp.ndim, j->sp.shape) / j->inner * j->nblk;
	int64_t per_item = j->inner < j->blk ? j->inner : j->blk;
	int64_t grain = (64 * 1024 + per_item - 1) / per_item;

	npt_parallel_for(items, grain, ew_task, j);
	int failed = atomic_load(&j->failed);

	free(j);
	if (failed == 1)
		return npt_value_error();
	if (failed)
		return npt_fail(NPT_E_NOMEM, "%s: out of memory for block buffers", opname);
	return NPT_OK;
}
