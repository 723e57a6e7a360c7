/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * nn.c - softmax and layernorm along one axis (fusion boundaries).
 *
 * Each row along the axis is gathered into an f32 (f16/bf16/f32 inputs) or
 * f64 buffer (or computed into it: a lazy elementwise input, such as a
 * residual sum, comes as the scheduler's prologue program and is evaluated
 * row by row here, never stored), processed there (it fits in L1 for typical widths such as
 * 768) and written once: softmax = exp(x - max) / sum; layernorm =
 * (x - mean) / sqrt(var + eps) * weight + bias with the biased variance from
 * a second pass over the row. Rows are split across threads.
 *
 * Contracts: f16/bf16 compute in f32 and round once on store; max
 * propagates NaN (a row containing NaN becomes NaN, as NumPy's formula);
 * weight/bias broadcast against the input (checked when the op was built).
 */
#include "kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	npt_tensor_t *x, *w, *b, *dst; /* x NULL: the input is the prologue p */
	const npt_prog_t *p;
	npt_dtype_t xdt;
	int64_t lo[NPT_PROG_MAX_LEAVES][NPT_MAX_DIMS]; /* the leaves' outer strides */
	int64_t ls[NPT_PROG_MAX_LEAVES];               /* and strides along the axis */
	int axis;
	double eps;
	npt_dtype_t rt;
	int64_t oshape[NPT_MAX_DIMS], xo[NPT_MAX_DIMS], wo[NPT_MAX_DIMS], bo[NPT_MAX_DIMS],
		doff[NPT_MAX_DIMS];
	int ond;
	int64_t len, xs, ws, bs, ds;
	int w_const, b_const;
	float *wrow, *brow; /* f32 rows when constant across rows (rt f32) */
	double *wrowd, *browd;
	atomic_int nomem, value_error;
} row_job_t;

#define SUM16(T, NAME)                                                 \
	NPT_SIMD static T NAME(int64_t n, const T *x, T sub)           \
	{                                                              \
		T p[16] = { 0 }, s = 0;                                \
		int64_t i = 0;                                         \
		for (; i + 16 <= n; i += 16)                           \
			for (int k = 0; k < 16; k++)                   \
				p[k] += x[i + k] - sub;                \
		for (; i < n; i++)                                     \
			s += x[i] - sub;                               \
		for (int k = 0; k < 16; k++)                           \
			s += p[k];                                     \
		return s;                                              \
	}
#define SQSUM16(T, NAME)                                               \
	NPT_SIMD static T NAME(int64_t n, const T *x, T m)             \
	{                                                              \
		T p[16] = { 0 }, s = 0;                                \
		int64_t i = 0;                                         \
		for (; i + 16 <= n; i += 16)                           \
			for (int k = 0; k < 16; k++) {                 \
				T d = x[i + k] - m;                    \
				p[k] += d * d;                         \
			}                                              \
		for (; i < n; i++)                                     \
			s += (x[i] - m) * (x[i] - m);                  \
		for (int k = 0; k < 16; k++)                           \
			s += p[k];                                     \
		return s;                                              \
	}
#define NORM(T, NAME)                                                                     \
	NPT_SIMD static void NAME(int64_t n, T *y, const T *x, T m, T r, const T *w,       \
				  const T *b)                                               \
	{                                                                                 \
		if (w && b)                                                               \
			for (int64_t i = 0; i < n; i++)                                   \
				y[i] = (x[i] - m) * r * w[i] + b[i];                      \
		else if (w)                                                               \
			for (int64_t i = 0; i < n; i++)                                   \
				y[i] = (x[i] - m) * r * w[i];                             \
		else if (b)                                                               \
			for (int64_t i = 0; i < n; i++)                                   \
				y[i] = (x[i] - m) * r + b[i];                             \
		else                                                                      \
			for (int64_t i = 0; i < n; i++)                                   \
				y[i] = (x[i] - m) * r;                                    \
	}
SUM16(float, sum_f)
SUM16(double, sum_d)
SQSUM16(float, sqsum_f)
SQSUM16(double, sqsum_d)
NORM(float, norm_f)
NORM(double, norm_d)

/* softmax of one row; a NaN anywhere makes the whole row NaN, as NumPy */
#define SOFTMAX(T, name, EXP)                                                  \
	static void name(int64_t n, T *y, const T *x)                         \
	{                                                                      \
		T m = -INFINITY, s = 0;                                        \
		int nan = 0;                                                   \
		for (int64_t i = 0; i < n; i++) {                              \
			nan |= x[i] != x[i];                                   \
			m = x[i] > m ? x[i] : m;                               \
		}                                                              \
		if (nan)                                                       \
			m = NAN;                                               \
		for (int64_t i = 0; i < n; i++) {                              \
			y[i] = EXP(x[i] - m);                                  \
			s += y[i];                                             \
		}                                                              \
		for (int64_t i = 0; i < n; i++)                                \
			y[i] = y[i] / s;                                       \
	}
SOFTMAX(float, softmax_f, expf)
SOFTMAX(double, softmax_d, exp)

static void setup(row_job_t *j, const npt_kcall_t *k, npt_space_t *sp)
{
	const npt_node_t *n = k->node;
	npt_tensor_t *dst = k->out;
	int64_t ws[NPT_MAX_DIMS] = { 0 }, bs[NPT_MAX_DIMS] = { 0 };
	const npt_prog_t *p = k->prologue;
	int xnd = p ? k->in_ndim : k->in[0]->ndim;
	const int64_t *xshape = p ? k->in_shape : k->in[0]->shape;

	j->x = p ? NULL : k->in[0];
	j->p = p;
	j->xdt = p ? p->out_dtype : j->x->dtype;
	j->w = k->nin > 1 ? k->in[1] : NULL;
	j->b = k->nin > 2 ? k->in[2] : NULL;
	j->dst = dst;
	j->axis = n->axis;
	j->eps = n->eps;
	j->rt = npt_rt(j->xdt);
	if (j->w)
		npt_broadcast_strides(j->w, xnd, xshape, ws);
	if (j->b)
		npt_broadcast_strides(j->b, xnd, xshape, bs);
	if (p)
		npt_prog_space(p, xnd, xshape, sp);
	j->w_const = j->b_const = 1;
	for (int d = 0; d < xnd; d++) {
		if (d == j->axis)
			continue;
		j->oshape[j->ond] = xshape[d];
		j->xo[j->ond] = p ? 0 : j->x->strides[d];
		for (int l = 0; p && l < p->nleaf; l++)
			j->lo[l][j->ond] = sp->strides[l][d];
		j->wo[j->ond] = ws[d];
		j->bo[j->ond] = bs[d];
		j->doff[j->ond] = dst->strides[d];
		if (ws[d] && xshape[d] > 1)
			j->w_const = 0;
		if (bs[d] && xshape[d] > 1)
			j->b_const = 0;
		j->ond++;
	}
	if (j->axis < 0) { /* a 0-d input (softmax): one row of one element */
		j->len = 1;
		j->xs = j->ds = 1;
		return;
	}
	j->len = xshape[j->axis];
	j->xs = p ? 0 : j->x->strides[j->axis];
	for (int l = 0; p && l < p->nleaf; l++)
		j->ls[l] = sp->strides[l][j->axis];
	j->ws = ws[j->axis];
	j->bs = bs[j->axis];
	j->ds = dst->strides[j->axis];
}

static void row_ptrs(row_job_t *j, int64_t o, const char **xp, const char **wp, const char **bp,
		     char **dp)
{
	int64_t rem = o;

	*xp = j->x ? npt_tensor_ptr(j->x) : NULL;
	*dp = npt_tensor_ptr(j->dst);
	*wp = j->w ? npt_tensor_ptr(j->w) : NULL;
	*bp = j->b ? npt_tensor_ptr(j->b) : NULL;
	for (int d = j->ond - 1; d >= 0; d--) {
		int64_t i = rem % j->oshape[d];

		rem /= j->oshape[d];
		*xp += i * j->xo[d] * (int64_t)npt_dtype_size(j->xdt);
		*dp += i * j->doff[d] * (int64_t)npt_dtype_size(j->dst->dtype);
		if (j->w)
			*wp += i * j->wo[d] * (int64_t)npt_dtype_size(j->w->dtype);
		if (j->b)
			*bp += i * j->bo[d] * (int64_t)npt_dtype_size(j->b->dtype);
	}
}

static void *load_row(row_job_t *j, npt_tensor_t *src, const char *p, int64_t stride, char *buf)
{
	if (stride == 1 && src->dtype == j->rt)
		return (void *)p;
	npt_conv(src->dtype, j->rt)(j->len, buf, 1, p, stride);
	return buf;
}

/* row @o of the input computed by the prologue into @buf, block by block in
 * the thread's @blocks; NULL on a value error */
static void *prologue_row(row_job_t *j, int64_t o, char *blocks, char *buf)
{
	const npt_prog_t *p = j->p;
	npt_dtype_t vt = p->reg_rt[p->out_reg];
	size_t esz = npt_dtype_size(j->rt);
	char *lp[NPT_PROG_MAX_LEAVES], *ptr[NPT_PROG_MAX_LEAVES];
	int64_t rem = o;

	for (int l = 0; l < p->nleaf; l++)
		lp[l] = npt_tensor_ptr(p->leaf[l]);
	for (int d = j->ond - 1; d >= 0; d--) {
		int64_t i = rem % j->oshape[d];

		rem /= j->oshape[d];
		for (int l = 0; l < p->nleaf; l++)
			lp[l] += i * j->lo[l][d] * (int64_t)npt_dtype_size(p->leaf[l]->dtype);
	}
	for (int64_t s = 0; s < j->len; s += p->block) {
		int64_t n = j->len - s < p->block ? j->len - s : p->block;
		int scalar;

		for (int l = 0; l < p->nleaf; l++)
			ptr[l] = lp[l] + s * j->ls[l] * (int64_t)npt_dtype_size(p->leaf[l]->dtype);
		const void *v = npt_block_run(blocks, p, n, ptr, j->ls, NULL, 0, &scalar);

		if (!v)
			return NULL;
		npt_conv(vt, j->rt)(n, buf + (size_t)s * esz, 1, v, scalar ? 0 : 1);
	}
	return buf;
}

static void row_task(void *arg, int64_t begin, int64_t end, int tid, int softmax)
{
	row_job_t *j = arg;
	size_t esz = npt_dtype_size(j->rt), rb = (size_t)j->len * esz + 64;
	char *mem = malloc(rb * 4);
	char *blocks = j->p ? npt_thread_scratch(NPT_TLS_BLOCK, npt_prog_block_bytes(j->p)) : NULL;

	(void)tid;
	if (!mem || (j->p && !blocks)) {
		free(mem);
		atomic_store(&j->nomem, 1);
		return;
	}
	char *xb = mem, *yb = mem + rb, *wb = mem + 2 * rb, *bb = mem + 3 * rb;
	int direct = j->ds == 1 && j->dst->dtype == j->rt;
	/* a big output bypasses the caches: row in L1, then streaming stores */
	int stream = direct && (size_t)npt_tensor_numel(j->dst) * esz >= NPT_STREAM_MIN_BYTES;
	void *wr = NULL, *br = NULL;

	if (stream)
		direct = 0;

	for (int64_t o = begin; o < end; o++) {
		const char *xp, *wp, *bp;
		char *dp;

		row_ptrs(j, o, &xp, &wp, &bp, &dp);
		void *x = j->p ? prologue_row(j, o, blocks, xb) : load_row(j, j->x, xp, j->xs, xb);

		if (!x) {
			atomic_store(&j->value_error, 1);
			break;
		}
		void *y = direct ? (void *)dp : yb;

		if (softmax) {
			if (j->rt == NPT_F32)
				softmax_f(j->len, y, x);
			else
				softmax_d(j->len, y, x);
		} else {
			if (j->w && (!wr || !j->w_const))
				wr = load_row(j, j->w, wp, j->ws, wb);
			if (j->b && (!br || !j->b_const))
				br = load_row(j, j->b, bp, j->bs, bb);
			if (j->rt == NPT_F32) {
				float m = sum_f(j->len, x, 0) / (float)j->len;
				float v = sqsum_f(j->len, x, m) / (float)j->len;

				norm_f(j->len, y, x, m, 1.0f / sqrtf(v + (float)j->eps), wr, br);
			} else {
				double m = sum_d(j->len, x, 0) / (double)j->len;
				double v = sqsum_d(j->len, x, m) / (double)j->len;

				norm_d(j->len, y, x, m, 1.0 / sqrt(v + j->eps), wr, br);
			}
		}
		if (stream)
			npt_stream_store(dp, yb, (size_t)j->len * esz);
		else if (!direct)
			npt_conv(j->rt, j->dst->dtype)(j->len, dp, j->ds, yb, 1);
	}
	if (stream)
		npt_stream_fence();
	free(mem);
}

static void softmax_task(void *arg, int64_t b, int64_t e, int tid)
{
	row_task(arg, b, e, tid, 1);
}

static void layernorm_task(void *arg, int64_t b, int64_t e, int tid)
{
	row_task(arg, b, e, tid, 0);
}

static npt_status_t run_rows(const npt_kcall_t *k, int softmax)
{
	row_job_t *j = calloc(1, sizeof(*j));
	npt_space_t *sp = malloc(sizeof(*sp));

	if (!j || !sp) {
		free(j);
		free(sp);
		return npt_fail(NPT_E_NOMEM, "%s: out of memory", softmax ? "softmax" : "layernorm");
	}
	setup(j, k, sp);
	free(sp);
	int64_t rows = npt_numel(j->ond, j->oshape);

	if (j->len > 0 && rows > 0)
		npt_parallel_for(rows, 32768 / j->len + 1, softmax ? softmax_task : layernorm_task, j);
	int nomem = atomic_load(&j->nomem), value = atomic_load(&j->value_error);

	free(j);
	if (value)
		return npt_value_error();
	if (nomem)
		return npt_fail(NPT_E_NOMEM, "%s: out of memory for row buffers",
				softmax ? "softmax" : "layernorm");
	return NPT_OK;
}

npt_status_t npt_run_softmax(const npt_kcall_t *k)
{
	return run_rows(k, 1);
}

npt_status_t npt_run_layernorm(const npt_kcall_t *k)
{
	return run_rows(k, 0);
}
