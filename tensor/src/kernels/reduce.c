/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * reduce.c - sum, prod, mean, max, min over any set of axes (sum_to_shape
 * uses it too) and argmax.
 *
 * The input and a contiguous accumulator share an iteration space ordered
 * by the input's strides and coalesced (iter.c), so memory is read in order.
 * The innermost run is either reduced (a scalar reduction with 16 partial
 * sums, vectorised by GCC) or kept (accumulate a row into the accumulator:
 * acc[i] += x[i], vectorised).
 *
 * Bitwise reproducibility: the work is cut before any thread starts (plan()),
 * either along a kept dimension (each result is then computed by one thread
 * in the serial order) or into fixed pieces of a reduced dimension, each
 * reduced from the identity into its own partial result; the partial results
 * are combined in a pairwise tree in piece order. Which thread runs which
 * range or piece never changes a bit. The piece count is fixed by the
 * element counts (NPT_REPRO_INDEPENDENT: the same bits at any thread count)
 * or is the thread count (NPT_REPRO_THREADS).
 *
 * The input comes as a program (the scheduler's): an elementwise chain that
 * is computed block by block and never stored, or a plain read.
 *
 * Contracts: accumulators are i64 for integer/bool sum and prod (wrapping),
 * f32 for f16/bf16/f32, f64 for f64 (mean of integers: f64), the input's
 * own type for max/min. max/min propagate NaN; summation order differs from
 * NumPy's pairwise order, so float sums agree within a stated tolerance
 * (docs/tensor.md). argmax returns the first maximal index; a NaN is the
 * maximum (first NaN wins), as NumPy.
 */
#include "kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef void (*red_inner_fn)(int64_t n, const void *x, void *acc);
typedef void (*red_outer_fn)(int64_t n, const void *x, void *acc, int64_t as);

#define SUM_INNER(NAME, T)                                                        \
	NPT_SIMD static void NAME(int64_t n, const void *x_, void *acc)           \
	{                                                                         \
		const T *x = x_;                                                  \
		T p[16] = { 0 };                                                  \
		int64_t i = 0;                                                    \
		for (; i + 16 <= n; i += 16)                                      \
			for (int k = 0; k < 16; k++)                              \
				p[k] += x[i + k];                                 \
		T s = 0;                                                          \
		for (; i < n; i++)                                                \
			s += x[i];                                                \
		for (int k = 0; k < 16; k++)                                      \
			s += p[k];                                                \
		*(T *)acc += s;                                                   \
	}
#define PROD_INNER(NAME, T, MUL)                                                  \
	static void NAME(int64_t n, const void *x_, void *acc)                    \
	{                                                                         \
		const T *x = x_;                                                  \
		T s = *(T *)acc;                                                  \
		for (int64_t i = 0; i < n; i++)                                   \
			s = MUL(s, x[i]);                                         \
		*(T *)acc = s;                                                    \
	}
#define OUTER(NAME, T, EXPR)                                                      \
	NPT_SIMD static void NAME(int64_t n, const void *x_, void *acc_, int64_t as) \
	{                                                                         \
		const T *x = x_;                                                  \
		T *acc = acc_;                                                    \
		if (as == 1) {                                                    \
			for (int64_t i = 0; i < n; i++) {                         \
				T a = acc[i], v = x[i];                           \
				acc[i] = (EXPR);                                  \
			}                                                         \
		} else {                                                          \
			for (int64_t i = 0; i < n; i++) {                         \
				T a = acc[i * as], v = x[i];                      \
				acc[i * as] = (EXPR);                             \
			}                                                         \
		}                                                                 \
	}
#define MINMAX_INNER(NAME, T, CMP)                                                \
	static void NAME(int64_t n, const void *x_, void *acc)                    \
	{                                                                         \
		const T *x = x_;                                                  \
		T m = *(T *)acc;                                                  \
		for (int64_t i = 0; i < n; i++) {                                 \
			T v = x[i];                                               \
			if (v CMP m || v != v)                                    \
				m = v;                                            \
			if (m != m)                                               \
				break;                                            \
		}                                                                 \
		*(T *)acc = m;                                                    \
	}

#define WMUL64(a, b) ((int64_t)((uint64_t)(a) * (uint64_t)(b)))
#define FMUL(a, b) ((a) * (b))
#define WADD64(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))

NPT_SIMD static void sum_i64_inner(int64_t n, const void *x_, void *acc)
{
	const uint64_t *x = x_;
	uint64_t s = 0;

	for (int64_t i = 0; i < n; i++)
		s += x[i];
	*(int64_t *)acc = WADD64(*(int64_t *)acc, s);
}
SUM_INNER(sum_f32_inner, float)
SUM_INNER(sum_f64_inner, double)
/* f16/bf16 products round every step to the storage type, as NumPy's
 * multiply.reduce does for float16 (so overflow to inf happens where it does) */
#define MUL_F16(a, b) ((float)(_Float16)((a) * (b)))
#define MUL_BF16(a, b) npt_bf16_to_f32(npt_f32_to_bf16((a) * (b)))
PROD_INNER(prod_f16_inner, float, MUL_F16)
PROD_INNER(prod_bf16_inner, float, MUL_BF16)
OUTER(prod_f16_outer, float, MUL_F16(a, v))
OUTER(prod_bf16_outer, float, MUL_BF16(a, v))
PROD_INNER(prod_i64_inner, int64_t, WMUL64)
PROD_INNER(prod_f32_inner, float, FMUL)
PROD_INNER(prod_f64_inner, double, FMUL)
OUTER(sum_i64_outer, int64_t, WADD64(a, v))
OUTER(sum_f32_outer, float, a + v)
OUTER(sum_f64_outer, double, a + v)
OUTER(prod_i64_outer, int64_t, WMUL64(a, v))
OUTER(prod_f32_outer, float, a * v)
OUTER(prod_f64_outer, double, a * v)

#define MINMAX_TYPE(T, S)                                                         \
	MINMAX_INNER(max_##S##_inner, T, >)                                       \
	MINMAX_INNER(min_##S##_inner, T, <)                                       \
	OUTER(max_##S##_outer, T, (a >= v || a != a) ? a : v)                    \
	OUTER(min_##S##_outer, T, (a <= v || a != a) ? a : v)
MINMAX_TYPE(uint8_t, u8)
MINMAX_TYPE(int8_t, i8)
MINMAX_TYPE(int32_t, i32)
MINMAX_TYPE(int64_t, i64)
MINMAX_TYPE(float, f32)
MINMAX_TYPE(double, f64)

static npt_dtype_t acc_type(npt_reduce_op_t op, npt_dtype_t in)
{
	if (op == NPT_RED_MAX || op == NPT_RED_MIN)
		return npt_rt(in);
	if (in == NPT_F64)
		return NPT_F64;
	if (npt_dtype_is_float(in))
		return NPT_F32;
	return op == NPT_RED_MEAN ? NPT_F64 : NPT_I64;
}

static void pick(npt_reduce_op_t op, npt_dtype_t in, npt_dtype_t at, red_inner_fn *fi,
		 red_outer_fn *fo)
{
	int mx = op == NPT_RED_MAX;

	if (op == NPT_RED_PROD && (in == NPT_F16 || in == NPT_BF16)) {
		*fi = in == NPT_F16 ? prod_f16_inner : prod_bf16_inner;
		*fo = in == NPT_F16 ? prod_f16_outer : prod_bf16_outer;
		return;
	}

	switch (op) {
	case NPT_RED_SUM:
	case NPT_RED_MEAN:
		*fi = at == NPT_I64 ? sum_i64_inner : at == NPT_F32 ? sum_f32_inner : sum_f64_inner;
		*fo = at == NPT_I64 ? sum_i64_outer : at == NPT_F32 ? sum_f32_outer : sum_f64_outer;
		return;
	case NPT_RED_PROD:
		*fi = at == NPT_I64 ? prod_i64_inner : at == NPT_F32 ? prod_f32_inner : prod_f64_inner;
		*fo = at == NPT_I64 ? prod_i64_outer : at == NPT_F32 ? prod_f32_outer : prod_f64_outer;
		return;
	default:
		break;
	}
	switch (at) {
	case NPT_BOOL: case NPT_U8:
		*fi = mx ? max_u8_inner : min_u8_inner; *fo = mx ? max_u8_outer : min_u8_outer; break;
	case NPT_I8:
		*fi = mx ? max_i8_inner : min_i8_inner; *fo = mx ? max_i8_outer : min_i8_outer; break;
	case NPT_I32:
		*fi = mx ? max_i32_inner : min_i32_inner; *fo = mx ? max_i32_outer : min_i32_outer; break;
	case NPT_I64:
		*fi = mx ? max_i64_inner : min_i64_inner; *fo = mx ? max_i64_outer : min_i64_outer; break;
	case NPT_F32:
		*fi = mx ? max_f32_inner : min_f32_inner; *fo = mx ? max_f32_outer : min_f32_outer; break;
	default:
		*fi = mx ? max_f64_inner : min_f64_inner; *fo = mx ? max_f64_outer : min_f64_outer; break;
	}
}

/* fill n accumulators with the identity of op */
static void fill_identity(npt_reduce_op_t op, npt_dtype_t at, void *acc, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		switch (at) {
		case NPT_BOOL: case NPT_U8:
			((uint8_t *)acc)[i] = op == NPT_RED_MAX ? 0 : 0xff; break;
		case NPT_I8:
			((int8_t *)acc)[i] = op == NPT_RED_MAX ? INT8_MIN : INT8_MAX; break;
		case NPT_I32:
			((int32_t *)acc)[i] = op == NPT_RED_MAX ? INT32_MIN : INT32_MAX; break;
		case NPT_I64:
			((int64_t *)acc)[i] = op == NPT_RED_MAX ? INT64_MIN : op == NPT_RED_MIN ?
					      INT64_MAX : op == NPT_RED_PROD ? 1 : 0;
			break;
		case NPT_F32:
			((float *)acc)[i] = op == NPT_RED_MAX ? -INFINITY : op == NPT_RED_MIN ?
					    INFINITY : op == NPT_RED_PROD ? 1.0f : 0.0f;
			break;
		default:
			((double *)acc)[i] = op == NPT_RED_MAX ? -INFINITY : op == NPT_RED_MIN ?
					     INFINITY : op == NPT_RED_PROD ? 1.0 : 0.0;
			break;
		}
	}
	if (at == NPT_BOOL && op == NPT_RED_MIN)
		memset(acc, 1, n);
}

#define RUN_CHUNK 4096
/* work of one piece or parallel range, in elements of the input */
#define RED_GRAIN 65536
/* NPT_REPRO_INDEPENDENT: pieces of at least this many elements, at most
 * RED_MAX_PIECES of them */
#define RED_PIECE_MIN 16384
#define RED_MAX_PIECES 256
/* a piece reads at least this many elements per partial result, so combining
 * the partial results costs a few percent of the reduction at most */
#define RED_PER_PARTIAL 128
/* with at least this many results, threads split a kept dimension (no
 * partial results) rather than a reduced one */
#define RED_KEPT_SPLIT_MIN 4096

typedef struct {
	npt_space_t sp;          /* operand 0 = accumulator, 1.. = program leaves */
	const npt_prog_t *p;     /* elementwise prologue (or a single-tensor read) */
	char *lbase[NPT_PROG_MAX_LEAVES];
	size_t lsz[NPT_PROG_MAX_LEAVES];
	npt_dtype_t at;
	size_t asz;
	char *acc;               /* the result accumulator (and piece 0's partial) */
	char *parts;             /* partial accumulators of pieces 1..npieces-1 */
	int64_t acc_n, chunk;
	int sd;                  /* the dimension of sp that is cut between threads */
	int64_t sd_len;
	int64_t npieces;         /* fixed pieces of a reduced sd (0: sd is kept) */
	red_inner_fn fi;
	red_outer_fn fo;
	npt_reduce_op_t op;
	atomic_int failed;       /* 1 = value error (int ** negative), 2 = no memory */
} red_job_t;

/*
 * Reduce the part of the space whose index along dimension sd is in
 * [lo, hi) into acc. The order of the additions depends only on that range:
 * dimensions are walked outermost first, the innermost run in blocks of
 * j->chunk from its start, each block summed by fi's fixed lanes.
 */
static void red_range(red_job_t *j, char *acc, int64_t lo, int64_t hi)
{
	const npt_space_t *sp = &j->sp;
	const npt_prog_t *p = j->p;
	int nd = sp->ndim, nl = p->nleaf, in = nd - 1;
	int64_t as = sp->strides[0][in], st[NPT_PROG_MAX_LEAVES];
	npt_dtype_t vt = p->reg_rt[p->out_reg];
	npt_conv_fn cv = npt_conv(vt, j->at);
	char *blocks = npt_thread_scratch(NPT_TLS_BLOCK, npt_prog_block_bytes(p));
	char *run = npt_thread_scratch(NPT_TLS_RUN, RUN_CHUNK * 8);
	int64_t first[NPT_MAX_DIMS], end[NPT_MAX_DIMS], idx[NPT_MAX_DIMS];
	int64_t rb = 0, re = sp->shape[in], count = 1;

	if (!run || !blocks) {
		atomic_store(&j->failed, 2);
		return;
	}
	for (int k = 0; k < nl; k++)
		st[k] = sp->strides[k + 1][in];
	for (int d = 0; d < in; d++) {
		first[d] = d == j->sd ? lo : 0;
		end[d] = d == j->sd ? hi : sp->shape[d];
		idx[d] = first[d];
		count *= end[d] - first[d];
	}
	if (j->sd == in) {
		rb = lo;
		re = hi;
	}
	for (int64_t c = 0; c < count; c++) {
		char *lp[NPT_PROG_MAX_LEAVES], *ptr[NPT_PROG_MAX_LEAVES];
		int64_t ao = 0;

		for (int k = 0; k < nl; k++)
			lp[k] = j->lbase[k];
		for (int d = 0; d < in; d++) {
			ao += idx[d] * sp->strides[0][d];
			for (int k = 0; k < nl; k++)
				lp[k] += idx[d] * sp->strides[k + 1][d] * (int64_t)j->lsz[k];
		}
		for (int64_t s = rb; s < re; s += j->chunk) {
			int64_t n = re - s < j->chunk ? re - s : j->chunk;
			int scalar;

			for (int k = 0; k < nl; k++)
				ptr[k] = lp[k] + s * st[k] * (int64_t)j->lsz[k];
			const void *v = npt_block_run(blocks, p, n, ptr, st, NULL, 0, &scalar);

			if (!v) {
				atomic_store(&j->failed, 1);
				return;
			}
			if (scalar || vt != j->at) {
				cv(n, run, 1, v, scalar ? 0 : 1);
				v = run;
			}
			if (as == 0)
				j->fi(n, v, acc + ao * j->asz);
			else
				j->fo(n, v, acc + (ao + s * as) * j->asz, as);
		}
		for (int d = in - 1; d >= 0; d--) {
			if (++idx[d] < end[d])
				break;
			idx[d] = first[d];
		}
	}
}

/* piece c of a reduced sd: [piece_lo(c), piece_lo(c + 1)), sizes differing by 1 at most */
static int64_t piece_lo(const red_job_t *j, int64_t c)
{
	int64_t q = j->sd_len / j->npieces, r = j->sd_len % j->npieces;

	return c * q + (c < r ? c : r);
}

static char *piece_acc(const red_job_t *j, int64_t c)
{
	return c ? j->parts + (size_t)(c - 1) * j->acc_n * j->asz : j->acc;
}

/* results [begin, end) of the pairwise tree over the pieces, in piece order:
 * ((p0 p1) (p2 p3)) ..., the same tree for every result */
static void tree_task(void *arg, int64_t begin, int64_t end, int tid)
{
	red_job_t *j = arg;
	size_t off = (size_t)begin * j->asz;

	(void)tid;
	for (int64_t step = 1; step < j->npieces; step *= 2)
		for (int64_t c = 0; c + step < j->npieces; c += 2 * step)
			j->fo(end - begin, piece_acc(j, c + step) + off, piece_acc(j, c) + off, 1);
}

/* a range of a kept sd: every result it touches is its own */
static void kept_task(void *arg, int64_t begin, int64_t end, int tid)
{
	(void)tid;
	red_range(arg, ((red_job_t *)arg)->acc, begin, end);
}

/* pieces [begin, end) of a reduced sd, each into its own partial result */
static void piece_task(void *arg, int64_t begin, int64_t end, int tid)
{
	red_job_t *j = arg;

	(void)tid;
	for (int64_t c = begin; c < end; c++) {
		if (c)
			fill_identity(j->op, j->at, piece_acc(j, c), j->acc_n);
		red_range(j, piece_acc(j, c), piece_lo(j, c), piece_lo(j, c + 1));
	}
}

/*
 * How the work is cut (the space is ordered outermost = largest input
 * stride, so dimension 0 is the one read in the largest steps):
 *  - dimension 0 kept: threads take ranges of it; each result is computed
 *    by one thread in the serial order, so no partial results exist;
 *  - dimension 0 reduced, many results (>= RED_KEPT_SPLIT_MIN) and a kept
 *    dimension: threads take ranges of the largest kept dimension instead;
 *  - else dimension 0 is cut into npieces fixed pieces, each reduced into its
 *    own partial result, combined in a pairwise tree in piece order. The
 *    piece count is the thread count (NPT_REPRO_THREADS) or a function of
 *    the element counts alone (NPT_REPRO_INDEPENDENT).
 */
static void plan(red_job_t *j, int64_t total)
{
	const npt_space_t *sp = &j->sp;
	int nd = sp->ndim, kd = -1;

	j->sd = 0;
	j->sd_len = sp->shape[0];
	j->npieces = 0;
	if (sp->strides[0][0] != 0)
		return;
	for (int d = 1; d < nd; d++)
		if (sp->strides[0][d] != 0 && (kd < 0 || sp->shape[d] > sp->shape[kd]))
			kd = d;
	if (kd >= 0 && j->acc_n >= RED_KEPT_SPLIT_MIN) {
		j->sd = kd;
		j->sd_len = sp->shape[kd];
		return;
	}
	/* elements per index of dimension 0 (a whole sub-space; >= acc_n) */
	int64_t per = total / sp->shape[0], k, min;
	int threads = npt_get_repro_mode() == NPT_REPRO_THREADS;

	min = threads ? RED_GRAIN : RED_PIECE_MIN;
	if (min < RED_PER_PARTIAL * j->acc_n)
		min = RED_PER_PARTIAL * j->acc_n;
	k = sp->shape[0] / ((min + per - 1) / per);
	if (threads && k > npt_pool_threads())
		k = npt_pool_threads();
	if (k > RED_MAX_PIECES)
		k = RED_MAX_PIECES;
	j->npieces = k > 1 ? k : 1;
}

npt_status_t npt_run_reduce(const npt_kcall_t *k)
{
	const npt_node_t *node = k->node;
	const npt_prog_t *p = k->prologue;
	int xnd = k->in_ndim;
	const int64_t *xshape = k->in_shape;
	npt_tensor_t *dst = k->out;
	npt_reduce_op_t op = node->op;
	red_job_t *j = calloc(1, sizeof(*j));
	npt_status_t s = NPT_OK;
	size_t acc_cap = 0, parts_cap = 0;

	if (!j)
		return npt_fail(NPT_E_NOMEM, "reduce: out of memory");
	npt_dtype_t xdt = p->out_dtype;

	j->p = p;
	j->op = op;
	j->at = acc_type(op, xdt);
	j->asz = npt_dtype_size(j->at);
	j->chunk = p->block < RUN_CHUNK ? p->block : RUN_CHUNK;
	pick(op, xdt, j->at, &j->fi, &j->fo);
	/* accumulator strides over the input's dims */
	int64_t ast[NPT_MAX_DIMS], stride = 1, rcount = 1;

	for (int d = xnd - 1; d >= 0; d--) {
		if (node->axes & (1ull << d)) {
			ast[d] = 0;
			rcount *= xshape[d];
		} else {
			ast[d] = stride;
			stride *= xshape[d];
		}
	}
	j->acc_n = stride;
	npt_prog_space(p, xnd, xshape, &j->sp);
	/* insert the accumulator as operand 0 */
	for (int o = j->sp.nop; o > 0; o--)
		memcpy(j->sp.strides[o], j->sp.strides[o - 1], xnd * sizeof(int64_t));
	memcpy(j->sp.strides[0], ast, xnd * sizeof(int64_t));
	j->sp.nop++;
	npt_space_simplify(&j->sp, 1);
	for (int l = 0; l < p->nleaf; l++) {
		j->lbase[l] = npt_tensor_ptr(p->leaf[l]);
		j->lsz[l] = npt_dtype_size(p->leaf[l]->dtype);
	}
	int64_t total = npt_numel(xnd, xshape);

	j->acc = npt_scratch_alloc((size_t)(j->acc_n ? j->acc_n : 1) * j->asz, &acc_cap);
	if (!j->acc) {
		s = npt_fail(NPT_E_NOMEM, "reduce: out of memory for the accumulator");
		goto out;
	}
	fill_identity(op, j->at, j->acc, j->acc_n);
	if (total > 0) {
		plan(j, total);
		if (j->npieces > 1) {
			size_t pb = (size_t)j->acc_n * j->asz;

			j->parts = npt_scratch_alloc((size_t)(j->npieces - 1) * pb, &parts_cap);
			if (!j->parts) {
				s = npt_fail(NPT_E_NOMEM, "reduce: out of memory for partial results");
				goto out;
			}
			npt_parallel_items(j->npieces, piece_task, j);
		} else if (j->npieces == 1) {
			red_range(j, j->acc, 0, j->sd_len);
		} else {
			int64_t grain = total / j->sd_len;

			grain = (RED_GRAIN + grain - 1) / grain;
			npt_parallel_for(j->sd_len, grain, kept_task, j);
		}
	}
	if (atomic_load(&j->failed)) {
		s = atomic_load(&j->failed) == 1 ? npt_value_error() :
		    npt_fail(NPT_E_NOMEM, "reduce: out of memory for block buffers");
		goto out;
	}
	if (j->npieces > 1)
		npt_parallel_for(j->acc_n, (RED_GRAIN + j->npieces - 2) / (j->npieces - 1), tree_task,
				 j);
	if (op == NPT_RED_MEAN) {
		for (int64_t i = 0; i < j->acc_n; i++) {
			if (j->at == NPT_F32)
				((float *)j->acc)[i] /= (float)rcount;
			else
				((double *)j->acc)[i] /= (double)rcount;
		}
	}
	npt_conv(j->at, dst->dtype)(j->acc_n, npt_tensor_ptr(dst), 1, j->acc, 1);
out:
	npt_scratch_free(j->parts, parts_cap);
	npt_scratch_free(j->acc, acc_cap);
	free(j);
	return s;
}

/* ---- argmax ---- */

#define ARGMAX(S, T)                                                                  \
	static int64_t argmax_##S(int64_t n, const void *x_, T *best, int *nan)       \
	{                                                                             \
		const T *x = x_;                                                      \
		int64_t bi = -1;                                                      \
		for (int64_t i = 0; i < n; i++) {                                     \
			if (x[i] != x[i]) {                                           \
				*best = x[i];                                         \
				*nan = 1;                                             \
				return i;                                             \
			}                                                             \
			if (x[i] > *best) {                                           \
				*best = x[i];                                         \
				bi = i;                                               \
			}                                                             \
		}                                                                     \
		return bi;                                                            \
	}
ARGMAX(u8, uint8_t)
ARGMAX(i8, int8_t)
ARGMAX(i32, int32_t)
ARGMAX(i64, int64_t)
ARGMAX(f32, float)
ARGMAX(f64, double)

typedef struct {
	double fbest;
	int64_t ibest;
	int nan;
	int64_t idx;
} amax_state_t;

/* scan n values (type rt) and update the running first-maximum */
static void amax_scan(npt_dtype_t rt, int64_t n, const void *v, int64_t base, amax_state_t *st)
{
	int64_t i;

	if (st->nan)
		return;
	switch (rt) {
	case NPT_F32: {
		float b = (float)st->fbest;

		i = argmax_f32(n, v, &b, &st->nan);
		st->fbest = b;
		break;
	}
	case NPT_F64:
		i = argmax_f64(n, v, &st->fbest, &st->nan);
		break;
	case NPT_I8: {
		int8_t b = (int8_t)st->ibest;

		i = argmax_i8(n, v, &b, &st->nan);
		st->ibest = b;
		break;
	}
	case NPT_I32: {
		int32_t b = (int32_t)st->ibest;

		i = argmax_i32(n, v, &b, &st->nan);
		st->ibest = b;
		break;
	}
	case NPT_I64:
		i = argmax_i64(n, v, &st->ibest, &st->nan);
		break;
	default: {
		uint8_t b = (uint8_t)st->ibest;

		i = argmax_u8(n, v, &b, &st->nan);
		st->ibest = b;
		break;
	}
	}
	if (i >= 0)
		st->idx = base + i;
}

static void amax_init(npt_dtype_t rt, amax_state_t *st)
{
	st->nan = 0;
	st->idx = -1;
	st->fbest = -INFINITY;
	switch (rt) {
	case NPT_I8: st->ibest = INT8_MIN; break;
	case NPT_I32: st->ibest = INT32_MIN; break;
	case NPT_I64: st->ibest = INT64_MIN; break;
	default: st->ibest = 0; break;
	}
}

typedef struct {
	npt_tensor_t *x;
	int64_t oshape[NPT_MAX_DIMS], ostr[NPT_MAX_DIMS];
	int ond;
	int64_t len, step;
	npt_dtype_t rt;
	int64_t *out;
	atomic_int nomem;
} amax_job_t;

static void amax_row(amax_job_t *j, const char *p, amax_state_t *st, int64_t base, char *buf)
{
	size_t isz = npt_dtype_size(j->x->dtype);
	npt_conv_fn cv = npt_conv(j->x->dtype, j->rt);

	for (int64_t s = 0; s < j->len && !st->nan; s += RUN_CHUNK) {
		int64_t n = j->len - s < RUN_CHUNK ? j->len - s : RUN_CHUNK;

		cv(n, buf, 1, p + s * j->step * (int64_t)isz, j->step);
		/* the first-seen value is the initial best: covers all-minimum rows */
		if (st->idx < 0) {
			st->idx = base + s;
			if (j->rt == NPT_F32)
				st->fbest = ((float *)buf)[0];
			else if (j->rt == NPT_F64)
				st->fbest = ((double *)buf)[0];
			else if (j->rt == NPT_I8)
				st->ibest = ((int8_t *)buf)[0];
			else if (j->rt == NPT_I32)
				st->ibest = ((int32_t *)buf)[0];
			else if (j->rt == NPT_I64)
				st->ibest = ((int64_t *)buf)[0];
			else
				st->ibest = ((uint8_t *)buf)[0];
			if (st->fbest != st->fbest) {
				st->nan = 1;
				break;
			}
		}
		amax_scan(j->rt, n, buf, base + s, st);
	}
}

static void amax_task(void *arg, int64_t begin, int64_t end, int tid)
{
	amax_job_t *j = arg;
	size_t isz = npt_dtype_size(j->x->dtype);

	char *run = npt_thread_scratch(NPT_TLS_RUN, RUN_CHUNK * 8);

	(void)tid;
	if (!run) {
		atomic_store(&j->nomem, 1);
		return;
	}
	for (int64_t o = begin; o < end; o++) {
		const char *p = npt_tensor_ptr(j->x);
		int64_t rem = o;

		for (int d = j->ond - 1; d >= 0; d--) {
			p += (rem % j->oshape[d]) * j->ostr[d] * (int64_t)isz;
			rem /= j->oshape[d];
		}
		amax_state_t st;

		amax_init(j->rt, &st);
		amax_row(j, p, &st, 0, run);
		j->out[o] = st.idx;
	}
}

npt_status_t npt_run_argmax(const npt_kcall_t *k)
{
	npt_tensor_t *x = k->in[0], *dst = k->out;
	int ax = k->node->axis;
	amax_job_t *j = calloc(1, sizeof(*j));

	if (!j)
		return npt_fail(NPT_E_NOMEM, "argmax: out of memory");
	j->x = x;
	j->rt = npt_rt(x->dtype);
	j->out = (int64_t *)npt_tensor_ptr(dst);
	if (ax >= 0) {
		for (int d = 0; d < x->ndim; d++) {
			if (d == ax)
				continue;
			j->oshape[j->ond] = x->shape[d];
			j->ostr[j->ond++] = x->strides[d];
		}
		j->len = x->shape[ax];
		j->step = x->strides[ax];
		int64_t nout = npt_numel(j->ond, j->oshape);

		npt_parallel_for(nout, 65536 / (j->len ? j->len : 1) + 1, amax_task, j);
	} else {
		/* flattened in C order: rows of the last dim, running state */
		amax_state_t st;
		int64_t rows = 1;

		amax_init(j->rt, &st);
		j->len = x->ndim ? x->shape[x->ndim - 1] : 1;
		j->step = x->ndim ? x->strides[x->ndim - 1] : 0;
		for (int d = 0; d + 1 < x->ndim; d++) {
			j->oshape[j->ond] = x->shape[d];
			j->ostr[j->ond++] = x->strides[d];
			rows *= x->shape[d];
		}
		char *run = npt_thread_scratch(NPT_TLS_RUN, RUN_CHUNK * 8);

		if (!run) {
			free(j);
			return npt_fail(NPT_E_NOMEM, "argmax: out of memory");
		}
		for (int64_t r = 0; r < rows && !st.nan; r++) {
			const char *p = npt_tensor_ptr(x);
			int64_t rem = r;

			for (int d = j->ond - 1; d >= 0; d--) {
				p += (rem % j->oshape[d]) * j->ostr[d] *
				     (int64_t)npt_dtype_size(x->dtype);
				rem /= j->oshape[d];
			}
			amax_row(j, p, &st, r * j->len, run);
		}
		j->out[0] = st.idx;
	}
	int nomem = atomic_load(&j->nomem);

	free(j);
	if (nomem)
		return npt_fail(NPT_E_NOMEM, "argmax: out of memory");
	return NPT_OK;
}
