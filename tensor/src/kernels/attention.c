/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * attention.c - the kernel of npt_attention: softmax(q @ k^T * scale + bias) @ v
 * per batch entry (scaled dot-product attention, as torch's without dropout).
 *
 * Each batch entry (for a transformer: one sequence and one head) is one
 * task: its scores [Sq, Sk] are computed by one single-threaded GEMM
 * (gemm.c's npt_gemm_f32_here: oneDNN on one thread, the scale as its
 * post-op, else OpenBLAS's sgemm) into the thread's scratch block (kept
 * from one call to the next) that stays in L1/L2, biased (the additive mask),
 * turned into probabilities in place (row max, vectorised exp and sum from
 * act_vec.c, one division per element) and multiplied by v straight into the
 * output, so no [batch, heads, Sq, Sk] tensor is ever written to memory.
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
	float *out;
	int64_t nb;			/* entries */
	atomic_llong next;		/* the next entry to take */
	atomic_int nomem;
} attn_job_t;

typedef float v8f_t __attribute__((vector_size(32)));
typedef int32_t v8i_t __attribute__((vector_size(32)));

/* row += bias (unit stride; NULL: none); the row's largest value, NaN if it
 * holds a NaN (the maximum is exact in any order; 8 lanes, then the tail) */
NPT_SIMD static float bias_max(int64_t n, float *row, const float *bias)
{
	v8f_t mv = { -INFINITY, -INFINITY, -INFINITY, -INFINITY,
		     -INFINITY, -INFINITY, -INFINITY, -INFINITY };
	v8i_t nanv = { 0 };
	float m = -INFINITY;
	int nan = 0;
	int64_t c = 0;

	if (bias)
		for (int64_t k = 0; k < n; k++)
			row[k] += bias[k];
	for (; c + 8 <= n; c += 8) {
		v8f_t v;
		v8i_t gt;

		memcpy(&v, row + c, sizeof(v));
		gt = v > mv;
		nanv |= v != v;
		mv = (v8f_t)(((v8i_t)v & gt) | ((v8i_t)mv & ~gt));
	}
	for (int k = 0; k < 8; k++) {
		nan |= nanv[k];
		m = mv[k] > m ? mv[k] : m;
	}
	for (; c < n; c++) {
		nan |= row[c] != row[c];
		m = row[c] > m ? row[c] : m;
	}
	return nan ? NAN : m;
}

NPT_SIMD static void divide_row(int64_t n, float *row, float s)
{
	for (int64_t c = 0; c < n; c++)
		row[c] = row[c] / s;
}

static void one(attn_job_t *j, int64_t bi, float *sc, int tid)
{
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
		} else if (npt_gemm_f32_here(&g, tid)) {
			atomic_store(&j->nomem, 1);
			return;
		}
	}
	for (int64_t i = 0; i < Sq; i++) {
		float *row = sc + i * Sk, s;
		const float *br = j->bias ? j->bias + bo + i * j->bstr[nd - 2] : NULL;
		int64_t bs = j->bstr[nd - 1];

		if (br && bs != 1)
			for (int64_t c = 0; c < Sk; c++)
				row[c] += br[c * bs];
		s = npt_exp_sum_f32(Sk, row, bias_max(Sk, row, bs == 1 ? br : NULL));
		divide_row(Sk, row, s);
	}
	npt_gemm_t g2 = {
		.M = Sq, .N = j->dv, .K = Sk, .lda = Sk, .ldb = j->mv.ld, .ldc = ldc,
		.ta = 0, .tb = j->mv.trans, .a = sc,
		.b = (const float *)npt_tensor_ptr(j->v) + vo, .c = o,
	};

	if (j->dv > 0 && npt_gemm_f32_here(&g2, tid))
		atomic_store(&j->nomem, 1);
}

/* one thread: take entries until none is left (a descheduled thread delays
 * only the entry it holds; which thread computes an entry does not change it) */
static void attn_task(void *arg, int64_t begin, int64_t end, int tid)
{
	attn_job_t *j = arg;
	float *sc = npt_thread_scratch(NPT_TLS_SCORES,
				       (size_t)(j->Sq * j->Sk > 0 ? j->Sq * j->Sk : 1) * sizeof(float));
	int64_t bi;

	(void)begin;
	(void)end;
	if (!sc) {
		atomic_store(&j->nomem, 1);
		return;
	}
	while ((bi = atomic_fetch_add(&j->next, 1)) < j->nb)
		one(j, bi, sc, tid);
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
	if (bias) {
		memcpy(sshape, j.q->shape, (size_t)nd * sizeof(int64_t));
		sshape[nd - 1] = j.Sk;
		npt_broadcast_strides(bias, nd, sshape, j.bstr);
		j.bias = (const float *)npt_tensor_ptr(bias);
	}
	/* one single-threaded GEMM per entry, whatever the thread count: the
	 * same kernels on the same data give the same bits */
	j.nb = nb;
	npt_blas_set_threads(1);
	if (threads > 1 && nb > 1)
		npt_parallel_for(nb < threads ? nb : threads, 1, attn_task, &j);
	else
		attn_task(&j, 0, 1, 0);
	npt_blas_set_threads(threads);
	if (atomic_load(&j.nomem))
		s = npt_fail(NPT_E_NOMEM, "attention: out of memory for a %lld x %lld score block",
			     (long long)j.Sq, (long long)j.Sk);
	return s;
}
