/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * attention.c - the kernel of npt_attention: softmax(q @ k^T * scale + bias) @ v
 * per batch entry (scaled dot-product attention, as torch's without dropout).
 *
 * Each batch entry (for a transformer: one sequence and one head) is one
 * task on one thread: its scores [Sq, Sk] land in the thread's scratch
 * block (kept from one call to the next, in L1/L2), are biased (the additive
 * mask) and exponentiated in place after their row maximum (act_vec.c), and
 * are multiplied by v straight into the output, so no [batch, heads, Sq, Sk]
 * tensor is ever written to memory.
 * Where the CPU has AVX-512F or AVX2+FMA (backend/tiles.c) and q's and v's
 * rows have unit stride, both products run on the register-tiled kernel:
 * k is transposed into a second scratch block first (unless it is stored
 * transposed), and the softmax's division is applied to the [Sq, dv] output
 * rows (one division per output element) instead of the [Sq, Sk] weights.
 * On BERT-base's blocks (128 x 128 x 64, one thread) that is 1.4x the
 * speed of the GEMM path, whose set-up costs as much as the arithmetic.
 * Elsewhere each product is a single-threaded GEMM (gemm.c's
 * npt_gemm_f32_here: oneDNN on one thread, the scale as its post-op, else
 * OpenBLAS's sgemm) and the weights are divided by their sum.
 * The pool's threads take entries one at a time from a shared counter (a
 * descheduled thread holds up one entry, not half of them), with OpenBLAS set
 * to one thread for the duration (it is set back after), so each entry is
 * computed by the same single-threaded kernels whatever the thread count.
 * Every thread uses oneDNN primitives of its own (per-thread caches).
 * With NPT_ATTN_HEADS_LAST the result of entry (..., head) lands at
 * [..., :, head, :] (ldc = heads * dv), the merged-heads layout the output
 * projection reads: no copy.
 *
 * Contracts: f32; q, k, v are read in place when each matrix has one unit
 * stride (any permuted view of a [B, S, heads, d] projection does), else
 * the scheduler copies them first, as npt_attention_operand() asks (reported
 * as matmul's copies, refused in NPT_EXPAND_VIEW mode). A row containing NaN becomes NaN; a row whose keys are all -inf
 * becomes NaN (0/0) as torch's; one masked with the most negative float gets
 * uniform weights. Each row is reduced by one thread in a fixed order: the
 * result does not depend on the thread count.
 */
#include "kernels.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	int trans;
	int64_t ld;
} blas_mat_t;

/* [rows, cols] with strides (rs, cs) as a BLAS operand */
static int mat_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, blas_mat_t *m)
{
	if ((cs == 1 || cols == 1) && (rows == 1 || rs >= cols) && rs > 0) {
		m->trans = 0;
		m->ld = rows == 1 ? (cols > 0 ? cols : 1) : rs;
		return 1;
	}
	if ((rs == 1 || rows == 1) && (cols == 1 || cs >= rows) && cs > 0) {
		m->trans = 1;
		m->ld = cols == 1 ? (rows > 0 ? rows : 1) : cs;
		return 1;
	}
	if (rows <= 1 && cols <= 1) {
		m->trans = 0;
		m->ld = 1;
		return 1;
	}
	return 0;
}

static int operand_ok(const npt_tensor_t *t, blas_mat_t *m)
{
	int nd = t->ndim;

	return mat_layout(t->shape[nd - 2], t->shape[nd - 1], t->strides[nd - 2],
			  t->strides[nd - 1], m);
}

npt_operand_t npt_attention_operand(int i, const npt_tensor_t *in, npt_dtype_t *dt,
				    const char **what)
{
	static const char *const names[] = { "q", "k", "v", "the mask" };
	blas_mat_t m;

	*dt = NPT_F32;
	*what = names[i];
	return i > 2 || operand_ok(in, &m) ? NPT_OPERAND_AS_IS : NPT_OPERAND_COPY;
}

typedef struct {
	const npt_tensor_t *q, *k, *v;
	const float *bias;
	int64_t bstr[NPT_MAX_DIMS];	/* bias broadcast strides over [..., Sq, Sk] */
	int nbd;			/* batch dims */
	int64_t Sq, Sk, d, dv, heads;
	float scale;
	int heads_last;
	blas_mat_t mq, mk, mv;
	npt_tile_fn tile;		/* the tiled kernel, NULL: GEMMs */
	float *out;
	int64_t nb;			/* entries */
	atomic_llong next;		/* the next entry to take */
	atomic_int nomem;
} attn_job_t;

NPT_SIMD static void divide_row(int64_t n, float *row, float s)
{
	for (int64_t c = 0; c < n; c++)
		row[c] = row[c] / s;
}

/* entry bi: scores in sc [Sq, Sk], the row sums of their exponentials after
 * them (sc + Sq * Sk), k^T in kt [d, Sk] when the tile reads it */
static void one(attn_job_t *j, int64_t bi, float *sc, float *kt, int tid)
{
	float *sums = sc + j->Sq * j->Sk;
	int64_t qo = 0, ko = 0, vo = 0, bo = 0, rem = bi, Sq = j->Sq, Sk = j->Sk, ldc;
	const int nd = j->q->ndim;
	float *o;

	for (int d = j->nbd - 1; d >= 0; d--) {
		int64_t i = rem % j->q->shape[d];

		rem /= j->q->shape[d];
		qo += i * j->q->strides[d];
		ko += i * j->k->strides[d];
		vo += i * j->v->strides[d];
		bo += i * j->bstr[d];
	}
	if (j->heads_last) {
		ldc = j->heads * j->dv;
		o = j->out + (bi / j->heads) * Sq * ldc + (bi % j->heads) * j->dv;
	} else {
		ldc = j->dv;
		o = j->out + bi * Sq * j->dv;
	}
	if (Sk == 0 || j->d == 0) {
		/* no keys: an empty weighted sum; no features: all scores are 0 */
		for (int64_t i = 0; i < Sq; i++)
			for (int64_t c = 0; c < j->dv; c++)
				o[i * ldc + c] = 0.0f;
		if (Sk == 0)
			return;
		memset(sc, 0, (size_t)(Sq * Sk) * sizeof(float));
	} else {
		npt_gemm_t g = {
			.M = Sq, .N = Sk, .K = j->d, .lda = j->mq.ld, .ldb = j->mk.ld, .ldc = Sk,
			.ta = j->mq.trans, .tb = !j->mk.trans, .alpha = j->scale,
			.a = (const float *)npt_tensor_ptr(j->q) + qo,
			.b = (const float *)npt_tensor_ptr(j->k) + ko, .c = sc,
		};

		if (g.alpha == 0.0f) {
			/* a zero scale: every score is 0 (alpha 0 would mean 1 below) */
			memset(sc, 0, (size_t)(Sq * Sk) * sizeof(float));
		} else if (j->tile) {
			/* the tile reads b by rows of keys: k^T [d, Sk] */
			if (!j->mk.trans) {
				npt_transpose_f32(Sk, j->d, g.b, j->mk.ld, kt);
				g.b = kt;
			}
			npt_tile_t t = {
				.m = Sq, .n = Sk, .k = j->d, .lda = g.lda,
				.ldb = j->mk.trans ? g.ldb : Sk, .ldc = Sk, .a = g.a, .b = g.b,
				.c = sc, .alpha = j->scale,
			};

			j->tile(&t);
		} else if (npt_gemm_f32_here(&g, tid)) {
			atomic_store(&j->nomem, 1);
			return;
		}
	}
	for (int64_t i = 0; i < Sq; i++) {
		float *row = sc + i * Sk;
		const float *br = j->bias ? j->bias + bo + i * j->bstr[nd - 2] : NULL;
		int64_t bs = j->bstr[nd - 1];

		if (br && bs != 1)
			for (int64_t c = 0; c < Sk; c++)
				row[c] += br[c * bs];
		sums[i] = npt_softmax_exp_f32(Sk, row, bs == 1 ? br : NULL);
		if (!j->tile)
			divide_row(Sk, row, sums[i]);
	}
	npt_gemm_t g2 = {
		.M = Sq, .N = j->dv, .K = Sk, .lda = Sk, .ldb = j->mv.ld, .ldc = ldc,
		.ta = 0, .tb = j->mv.trans, .a = sc,
		.b = (const float *)npt_tensor_ptr(j->v) + vo, .c = o,
	};

	if (j->tile) {
		npt_tile_t t = {
			.m = Sq, .n = j->dv, .k = Sk, .lda = Sk, .ldb = g2.ldb, .ldc = ldc,
			.a = sc, .b = g2.b, .div = sums, .c = o, .alpha = 1.0f,
		};

		j->tile(&t);
	} else if (j->dv > 0 && npt_gemm_f32_here(&g2, tid)) {
		atomic_store(&j->nomem, 1);
	}
}

/* one thread: take entries until none is left (a descheduled thread delays
 * only the entry it holds; which thread computes an entry does not change it) */
static void attn_task(void *arg, int64_t begin, int64_t end, int tid)
{
	attn_job_t *j = arg;
	float *sc = npt_thread_scratch(NPT_TLS_SCORES, (size_t)(j->Sq * j->Sk + j->Sq) * sizeof(float));
	float *kt = NULL;
	int64_t bi;

	(void)begin;
	(void)end;
	if (j->tile && !j->mk.trans)
		kt = npt_thread_scratch(NPT_TLS_KEYS, (size_t)(j->Sk * j->d > 0 ? j->Sk * j->d : 1) *
						      sizeof(float));
	if (!sc || (j->tile && !j->mk.trans && !kt)) {
		atomic_store(&j->nomem, 1);
		return;
	}
	while ((bi = atomic_fetch_add(&j->next, 1)) < j->nb)
		one(j, bi, sc, kt, tid);
}

npt_status_t npt_run_attention(const npt_kcall_t *kc)
{
	const npt_node_t *n = kc->node;
	npt_tensor_t *dst = kc->out;
	attn_job_t j = { .q = kc->in[0], .k = kc->in[1], .v = kc->in[2] };
	npt_tensor_t *bias = kc->nin > 3 ? kc->in[3] : NULL;
	int nd = j.q->ndim, threads = npt_pool_threads();
	int64_t sshape[NPT_MAX_DIMS], nb;
	npt_status_t s = NPT_OK;

	j.nbd = nd - 2;
	j.Sq = j.q->shape[nd - 2];
	j.d = j.q->shape[nd - 1];
	j.Sk = j.k->shape[nd - 2];
	j.dv = j.v->shape[nd - 1];
	j.heads = nd >= 3 ? j.q->shape[nd - 3] : 1;
	j.heads_last = (n->op & NPT_ATTN_HEADS_LAST) != 0;
	j.scale = (float)n->eps;
	j.out = (float *)npt_tensor_ptr(dst);
	nb = npt_numel(j.nbd, j.q->shape);
	if (nb == 0 || j.Sq == 0 || j.dv == 0)
		return NPT_OK;
	if (!operand_ok(j.q, &j.mq) || !operand_ok(j.k, &j.mk) || !operand_ok(j.v, &j.mv))
		return npt_fail(NPT_E_INVAL, "internal: attention's operands cannot be addressed");
	/* the per-thread blocks (scores and row sums, keys transposed) in bytes:
	 * every tensor and view has at most 2^59 - 1 elements, so this never
	 * fails today; the kernel does not rely on what its callers check */
	int64_t blk;

	if (__builtin_mul_overflow(j.Sq, j.Sk + 1, &blk) || blk > INT64_MAX / 4 ||
	    __builtin_mul_overflow(j.Sk, j.d, &blk) || blk > INT64_MAX / 4)
		return npt_fail(NPT_E_OVERFLOW, "attention: %lld queries, %lld keys of %lld features "
				"need scratch blocks larger than memory can address",
				(long long)j.Sq, (long long)j.Sk, (long long)j.d);
	if (bias) {
		memcpy(sshape, j.q->shape, (size_t)nd * sizeof(int64_t));
		sshape[nd - 1] = j.Sk;
		npt_broadcast_strides(bias, nd, sshape, j.bstr);
		j.bias = (const float *)npt_tensor_ptr(bias);
	}
	/* each entry on one thread by the same kernels, whatever the thread
	 * count: the same bits */
	if (!j.mq.trans && !j.mv.trans)
		j.tile = npt_tile_f32();
	j.nb = nb;
	if (!j.tile)	/* GEMMs, possibly OpenBLAS's: one thread each */
		npt_blas_set_threads(1);
	if (threads > 1 && nb > 1)
		npt_parallel_for(nb < threads ? nb : threads, 1, attn_task, &j);
	else
		attn_task(&j, 0, 1, 0);
	if (!j.tile)
		npt_blas_set_threads(threads);
	if (atomic_load(&j.nomem))
		s = npt_fail(NPT_E_NOMEM, "attention: out of memory for a %lld x %lld score block",
			     (long long)j.Sq, (long long)j.Sk);
	return s;
}
