/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * test_tensor.c - C tests of libnptensor (TAP): negative tests (NULLs, rank
 * and size overflow, writes into broadcast and read-only views, dtypes an op
 * does not support, bad axes), error messages that name the op and the
 * shapes, buffer accounting (a fused chain allocates only its output; the
 * pool serves repeated evaluations; dead intermediates are reused in
 * place), thread-count equivalence, bitwise reproducibility of reductions
 * (run to run, and across thread counts in NPT_REPRO_INDEPENDENT mode),
 * NumPy's size limit with zero dimensions and its 0-d axis rules, slices at
 * the ends of int64, and a randomised differential test of broadcasting
 * elementwise ops against a naive reference written here.
 * The NumPy differential test is tests/test_numpy.py.
 *
 * Each test is a function returning 1 (CHECK prints what failed and returns
 * 0), run as one kselftest_harness.h TEST (in a child process of its own;
 * TAP from the harness).
 */
#include "nptensor.h"

#include <dlpack/dlpack.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"

/* Some tests run reductions at several thread counts on a loaded 2-core machine. */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 300

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			printf("#   %s:%d: check failed: %s\n#   ", __FILE__,  \
			       __LINE__, #cond);                               \
			printf(__VA_ARGS__);                                   \
			printf("\n");                                          \
			return 0;                                              \
		}                                                              \
	} while (0)

#define OK(call) CHECK((call) == NPT_OK, "%s -> %s", #call, npt_last_error())

static npt_tensor_t *f32_tensor(int nd, const int64_t *shape, unsigned seed)
{
	npt_tensor_t *t = NULL;
	float *p;

	if (npt_tensor_empty(NPT_F32, nd, shape, &t) || npt_tensor_data(t, (void **)&p))
		return NULL;
	srand(seed);
	for (int64_t i = 0; i < npt_tensor_numel(t); i++)
		p[i] = (float)(rand() % 2001 - 1000) / 64.0f;
	return t;
}

/* ---- negative tests ---- */

static int t_null_and_free(void)
{
	npt_tensor_t *t = NULL;

	npt_tensor_free(NULL);
	CHECK(npt_add(NULL, NULL, &t) == NPT_E_INVAL, "NULL operands");
	CHECK(strstr(npt_last_error(), "add"), "message names the op: %s", npt_last_error());
	CHECK(npt_tensor_empty(NPT_F32, 1, (int64_t[]){ 3 }, NULL) == NPT_E_INVAL, "NULL out");
	CHECK(npt_tensor_empty((npt_dtype_t)99, 0, NULL, &t) == NPT_E_DTYPE, "bad dtype code");
	CHECK(strcmp(npt_strerror(NPT_E_SHAPE), "") && strcmp(npt_strerror((npt_status_t)77), ""),
	      "strerror");
	/* the accessors of a NULL tensor answer "no tensor", as is_writable does */
	CHECK(npt_tensor_dtype(NULL) == NPT_NDTYPES && npt_tensor_ndim(NULL) == -1 &&
	      !npt_tensor_shape(NULL) && !npt_tensor_strides(NULL) && !npt_tensor_offset(NULL) &&
	      !npt_tensor_numel(NULL) && !npt_tensor_is_lazy(NULL) && !npt_tensor_is_writable(NULL),
	      "accessors of a NULL tensor");
	return 1;
}

static int t_rank_and_overflow(void)
{
	int64_t shape[40];
	npt_tensor_t *t = NULL, *r = NULL;

	for (int i = 0; i < 40; i++)
		shape[i] = 1;
	CHECK(npt_tensor_empty(NPT_F32, 33, shape, &t) == NPT_E_RANK, "rank 33 accepted");
	CHECK(strstr(npt_last_error(), "32"), "message says the limit: %s", npt_last_error());
	OK(npt_tensor_empty(NPT_F32, 32, shape, &t));
	CHECK(npt_tensor_unsqueeze(t, 0, &r) == NPT_E_RANK, "unsqueeze past 32");
	npt_tensor_free(t);
	int64_t big[2] = { INT64_MAX / 2, 4 };

	CHECK(npt_tensor_empty(NPT_F32, 2, big, &t) == NPT_E_OVERFLOW, "overflowing size");
	int64_t neg[1] = { -3 };

	CHECK(npt_tensor_empty(NPT_F32, 1, neg, &t) == NPT_E_INVAL, "negative dim");
	int64_t huge[3] = { 1 << 30, 1 << 30, 1 << 30 };

	CHECK(npt_tensor_empty(NPT_F64, 3, huge, &t) == NPT_E_OVERFLOW, "2^90 elements");
	/* broadcast_to an overflowing shape */
	int64_t one = 1;

	OK(npt_tensor_zeros(NPT_F32, 1, &one, &t));
	int64_t bb[3] = { INT64_MAX / 4, INT64_MAX / 4, 2 };

	CHECK(npt_tensor_broadcast_to(t, 3, bb, &r) == NPT_E_OVERFLOW, "broadcast overflow: %s",
	      npt_last_error());
	npt_tensor_free(t);
	return 1;
}

static int t_broadcast_errors(void)
{
	int64_t s1[2] = { 2, 3 }, s2[1] = { 4 };
	npt_tensor_t *a = f32_tensor(2, s1, 1), *b = f32_tensor(1, s2, 2), *c = NULL;

	CHECK(a && b, "setup");
	CHECK(npt_add(a, b, &c) == NPT_E_SHAPE && !c, "mismatched shapes accepted");
	CHECK(strstr(npt_last_error(), "add: operands could not be broadcast together with "
		     "shapes (2,3) (4,)"), "message: %s", npt_last_error());
	npt_tensor_t *w = NULL;

	CHECK(npt_where(a, a, b, &w) == NPT_E_SHAPE, "where 3-way mismatch");
	CHECK(strstr(npt_last_error(), "(2,3) (2,3) (4,)"), "where message: %s", npt_last_error());
	npt_tensor_free(a);
	npt_tensor_free(b);
	return 1;
}

static int t_write_broadcast_view(void)
{
	int64_t s[1] = { 4 }, big[2] = { 3, 4 };
	npt_tensor_t *row = f32_tensor(1, s, 3), *v = NULL, *sum = NULL, *other = NULL;

	OK(npt_tensor_broadcast_to(row, 2, big, &v));
	CHECK(!npt_tensor_is_writable(v), "broadcast view is writable");
	CHECK(npt_tensor_shares_buffer(v, row), "broadcast_to copied");
	CHECK(npt_tensor_strides(v)[0] == 0, "stride 0 expected");
	other = f32_tensor(2, big, 4);
	OK(npt_add(other, other, &sum));
	CHECK(npt_tensor_eval_into(sum, v) == NPT_E_READONLY, "write into a broadcast view");
	CHECK(strstr(npt_last_error(), "broadcast"), "message: %s", npt_last_error());
	/* the output is never broadcast: (1,4) out for a (3,4) result */
	npt_tensor_t *small = NULL;
	int64_t s14[2] = { 1, 4 };

	OK(npt_tensor_zeros(NPT_F32, 2, s14, &small));
	CHECK(npt_tensor_eval_into(sum, small) == NPT_E_SHAPE, "broadcast output");
	npt_tensor_free(small);
	npt_tensor_free(sum);
	npt_tensor_free(other);
	npt_tensor_free(v);
	npt_tensor_free(row);
	return 1;
}

static int released;
static void on_release(void *arg)
{
	released += *(int *)arg;
}

static int t_readonly_borrowed(void)
{
	static float weights[6] = { 1, 2, 3, 4, 5, 6 };
	int64_t s[2] = { 2, 3 };
	int one = 1;
	npt_tensor_t *w = NULL, *y = NULL, *view = NULL;
	float *p;

	released = 0;
	OK(npt_tensor_from_data(weights, NPT_F32, 2, s, NULL, NPT_BORROW_READONLY, on_release,
				&one, &w));
	CHECK(!npt_tensor_is_writable(w), "read-only borrowed is writable");
	OK(npt_add(w, w, &y));
	OK(npt_tensor_data(y, (void **)&p));
	CHECK(p[5] == 12.0f, "reading borrowed memory");
	CHECK(npt_tensor_eval_into(y, w) == NPT_E_READONLY, "write into read-only weights");
	CHECK(strstr(npt_last_error(), "read-only"), "message: %s", npt_last_error());
	OK(npt_tensor_transpose(w, 0, 1, &view));
	npt_tensor_free(w);
	CHECK(released == 0, "released while a view is alive");
	npt_tensor_free(view);
	npt_tensor_free(y);
	CHECK(released == 1, "release callback ran %d times", released);
	CHECK(npt_tensor_from_data(weights, NPT_F32, 2, s, NULL, 0x8, NULL, NULL, &w) ==
	      NPT_E_INVAL, "unknown flag accepted");
	return 1;
}

static int t_dtype_errors(void)
{
	int64_t s[1] = { 3 };
	npt_tensor_t *b = NULL, *i = NULL, *r = NULL;

	OK(npt_tensor_zeros(NPT_BOOL, 1, s, &b));
	OK(npt_tensor_zeros(NPT_I32, 1, s, &i));
	CHECK(npt_sub(b, b, &r) == NPT_E_DTYPE, "bool subtract (NumPy TypeError)");
	CHECK(npt_unary(NPT_OP_NEG, b, &r) == NPT_E_DTYPE, "bool negative");
	CHECK(npt_softmax(i, 0, &r) == NPT_E_DTYPE, "softmax of int");
	CHECK(strstr(npt_last_error(), "int32"), "message names the dtype: %s", npt_last_error());
	CHECK(npt_layernorm(i, 0, NULL, NULL, 1e-5, &r) == NPT_E_DTYPE, "layernorm of int");
	/* float result into an int output: same_kind violation */
	npt_tensor_t *f = NULL, *e = NULL;

	OK(npt_tensor_zeros(NPT_F32, 1, s, &f));
	OK(npt_add(f, f, &e));
	CHECK(npt_tensor_eval_into(e, i) == NPT_E_DTYPE, "same_kind casting");
	npt_tensor_free(e);
	/* integer ** negative: a value error at evaluation */
	int32_t *ip;

	OK(npt_tensor_data(i, (void **)&ip));
	ip[1] = -1;
	OK(npt_binary(NPT_OP_POW, i, i, &r));
	CHECK(npt_tensor_eval(r) == NPT_E_VALUE, "int ** negative");
	CHECK(strstr(npt_last_error(), "negative integer powers"), "%s", npt_last_error());
	npt_tensor_free(r);
	npt_tensor_free(f);
	npt_tensor_free(b);
	npt_tensor_free(i);
	return 1;
}

static int t_axis_and_empty(void)
{
	int64_t s[2] = { 0, 3 };
	npt_tensor_t *t = NULL, *r = NULL;
	int ax[2] = { 1, 1 }, bad = 2;

	OK(npt_tensor_zeros(NPT_F32, 2, s, &t));
	CHECK(npt_reduce(NPT_RED_MAX, t, 1, (int[]){ 0 }, false, &r) == NPT_E_EMPTY,
	      "max over empty axis");
	CHECK(strstr(npt_last_error(), "zero-size array to reduction operation maximum"), "%s",
	      npt_last_error());
	OK(npt_reduce(NPT_RED_MAX, t, 1, (int[]){ 1 }, false, &r)); /* (0,) result: fine */
	npt_tensor_free(r);
	CHECK(npt_argmax(t, NPT_AXIS_ALL, false, &r) == NPT_E_EMPTY, "argmax of empty");
	OK(npt_reduce(NPT_RED_SUM, t, -1, NULL, false, &r));
	double *d;
	float *fp;

	OK(npt_tensor_data(r, (void **)&fp));
	CHECK(*fp == 0.0f, "sum of empty is 0");
	npt_tensor_free(r);
	OK(npt_reduce(NPT_RED_PROD, t, -1, NULL, false, &r));
	OK(npt_tensor_data(r, (void **)&fp));
	CHECK(*fp == 1.0f, "prod of empty is 1");
	npt_tensor_free(r);
	CHECK(npt_reduce(NPT_RED_SUM, t, 2, ax, false, &r) == NPT_E_AXIS, "duplicate axis");
	CHECK(npt_reduce(NPT_RED_SUM, t, 1, &bad, false, &r) == NPT_E_AXIS, "axis range");
	CHECK(strstr(npt_last_error(), "axis 2 is out of bounds"), "%s", npt_last_error());
	npt_tensor_t *m = NULL;
	int64_t e1[1] = { 0 };

	npt_tensor_free(t);
	OK(npt_tensor_zeros(NPT_I32, 1, e1, &t));
	OK(npt_reduce(NPT_RED_MEAN, t, -1, NULL, false, &m));
	OK(npt_tensor_data(m, (void **)&d));
	CHECK(isnan(*d) && npt_tensor_dtype(m) == NPT_F64, "mean of empty int is f64 NaN");
	npt_tensor_free(m);
	npt_tensor_free(t);
	return 1;
}

static int t_matmul_errors(void)
{
	int64_t s1[2] = { 2, 3 }, s2[2] = { 4, 5 }, s0 = 0;
	npt_tensor_t *a = f32_tensor(2, s1, 5), *b = f32_tensor(2, s2, 6), *r = NULL, *z = NULL;

	CHECK(npt_matmul(a, b, &r) == NPT_E_SHAPE, "core dim mismatch");
	CHECK(strstr(npt_last_error(), "(2,3) (4,5)"), "%s", npt_last_error());
	OK(npt_tensor_zeros(NPT_F32, 0, &s0, &z));
	CHECK(npt_matmul(z, a, &r) == NPT_E_SHAPE, "0-d operand");
	npt_tensor_free(z);
	npt_tensor_free(a);
	npt_tensor_free(b);
	return 1;
}

/* ---- accounting ---- */

static int t_fused_chain_allocates_output_only(void)
{
	int64_t s[2] = { 512, 256 }, row[1] = { 256 }, col[2] = { 512, 1 };
	npt_tensor_t *a = f32_tensor(2, s, 7), *b = f32_tensor(1, row, 8), *c = f32_tensor(2, col, 9);
	npt_tensor_t *t1, *t2, *t3, *t4, *t5;
	npt_stats_t st;

	/* (a*b + c)/b - c: five ops, row and column broadcasts */
	OK(npt_mul(a, b, &t1));
	OK(npt_add(t1, c, &t2));
	npt_tensor_free(t1);
	OK(npt_div(t2, b, &t3));
	npt_tensor_free(t2);
	OK(npt_sub(t3, c, &t4));
	npt_tensor_free(t3);
	OK(npt_unary(NPT_OP_EXP, t4, &t5));
	npt_tensor_free(t4);
	npt_stats_reset();
	OK(npt_tensor_eval(t5));
	npt_stats_get(&st);
	CHECK(st.os_bytes + st.reused_bytes == 512 * 256 * 4,
	      "fused chain allocated %llu bytes; the output is %d",
	      (unsigned long long)(st.os_bytes + st.reused_bytes), 512 * 256 * 4);
	CHECK(st.materialized_bytes == 0, "broadcasts were copied");
	npt_tensor_free(t5);
	/* the same chain again: served from the pool, no fresh memory */
	OK(npt_mul(a, b, &t1));
	OK(npt_add(t1, c, &t2));
	npt_tensor_free(t1);
	npt_stats_reset();
	OK(npt_tensor_eval(t2));
	npt_stats_get(&st);
	CHECK(st.os_bytes == 0 && st.reused_bytes == 512 * 256 * 4,
	      "pool reuse: os %llu reused %llu", (unsigned long long)st.os_bytes,
	      (unsigned long long)st.reused_bytes);
	npt_tensor_free(t2);
	npt_tensor_free(a);
	npt_tensor_free(b);
	npt_tensor_free(c);
	return 1;
}

static int t_reduce_prologue_fused(void)
{
	int64_t s[3] = { 64, 32, 48 }, w[1] = { 48 };
	npt_tensor_t *a = f32_tensor(3, s, 30), *b = f32_tensor(1, w, 31), *m, *r, *ref, *ma;
	npt_stats_t st;
	float *p, *q;

	OK(npt_mul(a, b, &m));
	OK(npt_sum_to_shape(m, 1, w, &r));
	npt_tensor_free(m);
	npt_stats_reset();
	OK(npt_tensor_eval(r));
	npt_stats_get(&st);
	CHECK(st.os_bytes + st.reused_bytes == 48 * 4, "sum_to_shape(a*b) allocated %llu bytes",
	      (unsigned long long)(st.os_bytes + st.reused_bytes));
	/* same values as with a materialised product */
	OK(npt_mul(a, b, &ma));
	OK(npt_tensor_eval(ma));
	OK(npt_sum_to_shape(ma, 1, w, &ref));
	OK(npt_tensor_data(r, (void **)&p));
	OK(npt_tensor_data(ref, (void **)&q));
	CHECK(!memcmp(p, q, 48 * 4), "fused and unfused sums differ");
	npt_tensor_free(ma);
	npt_tensor_free(ref);
	npt_tensor_free(r);
	npt_tensor_free(a);
	npt_tensor_free(b);
	return 1;
}

/* outputs >= 16 MiB take the streaming-store path: same bits as plain math */
static int t_streaming_outputs(void)
{
	int64_t s[2] = { 4100, 1030 }, r[1] = { 1030 }, c[2] = { 4100, 1 }, os[2] = { 4100, 1031 };
	npt_tensor_t *x = f32_tensor(2, s, 40), *row = f32_tensor(1, r, 41), *col = f32_tensor(2, c, 42);
	npt_tensor_t *t1, *t2, *t3, *t4, *big, *view;
	float *px, *pr, *pc, *po;

	OK(npt_mul(x, row, &t1));
	OK(npt_add(t1, col, &t2));
	OK(npt_div(t2, row, &t3));
	OK(npt_sub(col, t3, &t4)); /* scalar-vector form last */
	OK(npt_tensor_zeros(NPT_F32, 2, os, &big));
	OK(npt_tensor_slice(big, 1, 1, NPT_SLICE_END, 1, &view)); /* misaligned rows */
	OK(npt_tensor_eval_into(t4, view));
	OK(npt_tensor_data(x, (void **)&px));
	OK(npt_tensor_data(row, (void **)&pr));
	OK(npt_tensor_data(col, (void **)&pc));
	OK(npt_tensor_data(view, (void **)&po));
	for (int64_t i = 0; i < s[0]; i++)
		for (int64_t j = 0; j < s[1]; j++) {
			volatile float m = px[i * s[1] + j] * pr[j];
			volatile float a = m + pc[i];
			volatile float d = a / pr[j];
			float want = pc[i] - d, got = po[i * os[1] + j];

			CHECK(memcmp(&want, &got, 4) == 0, "(%lld,%lld): got %a want %a", (long long)i,
			      (long long)j, got, want);
		}
	OK(npt_tensor_eval(t4)); /* fresh big output, aligned */
	OK(npt_tensor_data(t4, (void **)&po));
	for (int64_t i = 0; i < s[0]; i += 97)
		for (int64_t j = 0; j < s[1]; j++) {
			float got = po[i * s[1] + j];
			float *v;

			OK(npt_tensor_data(view, (void **)&v));
			CHECK(memcmp(&got, &v[i * os[1] + j], 4) == 0, "fresh vs out= differ");
		}
	/* layernorm rows: streamed (16.9 MB output) and cached (a 2000-row slice) agree */
	npt_tensor_t *ln, *part, *lnp;
	float *a1, *a2;

	OK(npt_layernorm(x, 1, row, NULL, 1e-5, &ln));
	OK(npt_tensor_slice(x, 0, 0, 2000, 1, &part));
	OK(npt_layernorm(part, 1, row, NULL, 1e-5, &lnp));
	OK(npt_tensor_data(ln, (void **)&a1));
	OK(npt_tensor_data(lnp, (void **)&a2));
	CHECK(!memcmp(a1, a2, 2000 * 1030 * 4), "streamed layernorm differs");
	npt_tensor_free(ln);
	npt_tensor_free(lnp);
	npt_tensor_free(part);
	npt_tensor_free(t1);
	npt_tensor_free(t2);
	npt_tensor_free(t3);
	npt_tensor_free(t4);
	npt_tensor_free(view);
	npt_tensor_free(big);
	npt_tensor_free(x);
	npt_tensor_free(row);
	npt_tensor_free(col);
	return 1;
}

static int t_strerror_all(void)
{
	for (int s = NPT_OK; s <= NPT_E_UNSUPPORTED; s++)
		for (int k = s + 1; k <= NPT_E_UNSUPPORTED; k++)
			CHECK(strcmp(npt_strerror(s), npt_strerror(k)), "statuses %d and %d share "
			      "a message", s, k);
	CHECK(strstr(npt_strerror((npt_status_t)999), "unknown"), "unknown status");
	for (int d = 0; d < NPT_NDTYPES; d++)
		CHECK(npt_dtype_size(d) > 0 && strcmp(npt_dtype_name(d), "invalid-dtype"), "dtype %d",
		      d);
	return 1;
}

static int t_dead_intermediate_reused_in_place(void)
{
	int64_t s[2] = { 256, 256 };
	int64_t one = 1;
	npt_tensor_t *a = f32_tensor(2, s, 10), *m, *sm, *y, *two = f32_tensor(1, &one, 3);
	npt_stats_t st;

	/* softmax is a fusion boundary: its result is an intermediate that dies
	 * when y is computed, so y is written into softmax's buffer */
	OK(npt_softmax(a, 1, &sm));
	OK(npt_mul(sm, two, &m));
	npt_tensor_free(sm);
	OK(npt_unary(NPT_OP_ABS, m, &sm));
	npt_tensor_free(m);
	OK(npt_unary(NPT_OP_SQRT, sm, &y));
	npt_tensor_free(sm);
	npt_stats_reset();
	OK(npt_tensor_eval(y));
	npt_stats_get(&st);
	CHECK(st.inplace_bytes == 256 * 256 * 4, "in-place bytes %llu",
	      (unsigned long long)st.inplace_bytes);
	CHECK(st.os_bytes + st.reused_bytes == 256 * 256 * 4, "allocated %llu",
	      (unsigned long long)(st.os_bytes + st.reused_bytes));
	float *p;

	OK(npt_tensor_data(y, (void **)&p));
	double rs = 0;

	float *tp;

	OK(npt_tensor_data(two, (void **)&tp));
	for (int i = 0; i < 256; i++)
		rs += p[i] * p[i];
	CHECK(fabs(rs - fabs(*tp)) < 1e-3, "sum of sqrt(softmax*c)^2 over a row is |c|: %g %g",
	      rs, *tp);
	npt_tensor_free(y);
	/* a held lazy intermediate keeps its input alive: no in-place reuse then */
	npt_tensor_t *held, *z, *smc;

	OK(npt_softmax(a, 1, &sm));
	OK(npt_mul(sm, two, &held)); /* the caller keeps `held` */
	npt_tensor_free(sm);
	OK(npt_unary(NPT_OP_ABS, held, &z));
	npt_stats_reset();
	OK(npt_tensor_eval(z));
	npt_stats_get(&st);
	CHECK(st.inplace_bytes == 0, "reused the buffer of a value a held tensor still needs");
	OK(npt_softmax(a, 1, &sm));
	OK(npt_mul(sm, two, &smc));
	npt_tensor_free(sm);
	float *h, *c;

	OK(npt_tensor_data(held, (void **)&h));
	OK(npt_tensor_data(smc, (void **)&c));
	CHECK(!memcmp(h, c, 256 * 256 * 4), "held lazy tensor computed wrong values");
	npt_tensor_free(smc);
	npt_tensor_free(z);
	npt_tensor_free(held);
	npt_tensor_free(two);
	npt_tensor_free(a);
	return 1;
}

static char logbuf[4096];
static void on_log(npt_log_level_t lvl, const char *msg, void *arg)
{
	(void)lvl;
	(void)arg;
	snprintf(logbuf, sizeof(logbuf), "%s", msg);
}

static int t_materialize_report(void)
{
	int64_t s[3] = { 4, 64, 32 }, w[2] = { 32, 16 };
	npt_tensor_t *a = f32_tensor(3, s, 11), *b = f32_tensor(2, w, 12), *bt, *r;

	npt_set_log_callback(on_log, NULL);
	npt_set_materialize_threshold(0);
	logbuf[0] = 0;
	/* a stride-0 batch of b is fine for BLAS (per-batch pointer); a stride-0
	 * inner dim is not: expand a (1,32)->(64,32) row as the matrix */
	int64_t one[2] = { 1, 32 }, ex[2] = { 64, 32 };
	npt_tensor_t *row = f32_tensor(2, one, 13);

	OK(npt_tensor_expand(row, 2, ex, &bt));
	OK(npt_matmul(bt, b, &r));
	OK(npt_tensor_eval(r));
	CHECK(strstr(logbuf, "matmul") && strstr(logbuf, "(64,32)"), "log: %s", logbuf);
	npt_tensor_free(r);
	npt_set_expand_mode(NPT_EXPAND_VIEW);
	OK(npt_matmul(bt, b, &r));
	CHECK(npt_tensor_eval(r) == NPT_E_WOULD_COPY, "VIEW mode must refuse the copy");
	npt_set_expand_mode(NPT_EXPAND_AUTO);
	npt_tensor_free(r);
	npt_set_materialize_threshold(16 << 20);
	npt_set_log_callback(NULL, NULL);
	npt_tensor_free(bt);
	npt_tensor_free(row);
	npt_tensor_free(a);
	npt_tensor_free(b);
	return 1;
}

/* ---- threads ---- */

static int t_threads_equivalence(void)
{
	int64_t s[2] = { 700, 900 }, r[1] = { 900 };
	float *res[3];

	for (int k = 0; k < 3; k++) {
		npt_tensor_t *a = f32_tensor(2, s, 14), *b = f32_tensor(1, r, 15), *t1, *t2, *t3;

		OK(npt_set_num_threads(k == 0 ? 1 : k == 1 ? 2 : 4));
		OK(npt_mul(a, b, &t1));
		OK(npt_unary(NPT_OP_TANH, t1, &t2));
		OK(npt_layernorm(t2, 1, NULL, NULL, 1e-5, &t3));
		float *p;

		OK(npt_tensor_data(t3, (void **)&p));
		res[k] = malloc(700 * 900 * sizeof(float));
		memcpy(res[k], p, 700 * 900 * sizeof(float));
		npt_tensor_free(t1);
		npt_tensor_free(t2);
		npt_tensor_free(t3);
		npt_tensor_free(a);
		npt_tensor_free(b);
	}
	OK(npt_set_num_threads(0));
	CHECK(npt_get_num_threads() >= 1, "thread count");
	CHECK(npt_set_num_threads(-1) == NPT_E_INVAL, "negative thread count");
	int same = !memcmp(res[0], res[1], 700 * 900 * 4) && !memcmp(res[0], res[2], 700 * 900 * 4);

	for (int k = 0; k < 3; k++)
		free(res[k]);
	CHECK(same, "results differ between 1, 2 and 4 threads");
	return 1;
}

/* ---- reproducibility of reductions ---- */

/* values over a wide range of magnitudes, so that any change in the order of
 * a float sum changes its bits */
static npt_tensor_t *wide_tensor(npt_dtype_t dt, int nd, const int64_t *shape, unsigned seed)
{
	npt_tensor_t *t = NULL;
	void *p;

	if (npt_tensor_empty(dt, nd, shape, &t) || npt_tensor_data(t, &p))
		return NULL;
	srand(seed);
	for (int64_t i = 0; i < npt_tensor_numel(t); i++) {
		double v = ((double)rand() / RAND_MAX * 2 - 1) * (double)(1 << (rand() % 24));

		if (dt == NPT_F64)
			((double *)p)[i] = v;
		else
			((float *)p)[i] = (float)v;
	}
	return t;
}

enum { R_SUM_ALL, R_MEAN_AX0, R_SUM_AX0_NARROW, R_SUM_TO_SHAPE, R_PROLOGUE, R_SUM_F64,
       R_PROD_AX1, R_MEAN_LAST, R_LAYERNORM, R_SOFTMAX, R_MAX_AX0, R_NCASES };
static const char *const repro_name[R_NCASES] = {
	"sum of (1048579,) f32", "mean over axis 0 of (65537,16) f32",
	"sum over axis 0 of (131071,3) f32", "sum_to_shape (96,300,64)->(64,) f32",
	"sum over axis 0 of x*y+x, (65536,8) f32 (fused prologue)", "sum of (524289,) f64",
	"prod over axis 1 of (5,262147) f64", "mean over axis -1 of (4,300000) f32",
	"layernorm (256,768) f32", "softmax (256,768) f32", "max over axis 0 of (65536,16) f32",
};

typedef struct {
	npt_tensor_t *big, *m16, *m3, *s3, *x8, *y8, *big64, *p5, *w4, *ln;
} repro_in_t;

static void repro_free(repro_in_t *in)
{
	npt_tensor_t **t = &in->big;

	for (size_t i = 0; i < sizeof(*in) / sizeof(*t); i++)
		npt_tensor_free(t[i]);
}

static int repro_inputs(repro_in_t *in)
{
	int64_t sb[1] = { 1048579 }, s16[2] = { 65537, 16 }, s3[2] = { 131071, 3 },
		st[3] = { 96, 300, 64 }, s8[2] = { 65536, 8 }, s64[1] = { 524289 },
		sp[2] = { 5, 262147 }, sw[2] = { 4, 300000 }, sl[2] = { 256, 768 };
	void *p;

	memset(in, 0, sizeof(*in));
	in->big = wide_tensor(NPT_F32, 1, sb, 21);
	in->m16 = wide_tensor(NPT_F32, 2, s16, 22);
	in->m3 = wide_tensor(NPT_F32, 2, s3, 23);
	in->s3 = wide_tensor(NPT_F32, 3, st, 24);
	in->x8 = wide_tensor(NPT_F32, 2, s8, 25);
	in->y8 = wide_tensor(NPT_F32, 2, s8, 26);
	in->big64 = wide_tensor(NPT_F64, 1, s64, 27);
	in->w4 = wide_tensor(NPT_F32, 2, sw, 29);
	in->ln = f32_tensor(2, sl, 30);
	/* factors near 1, so that the product stays finite and every rounding shows */
	if (!npt_tensor_empty(NPT_F64, 2, sp, &in->p5) && !npt_tensor_data(in->p5, &p)) {
		srand(28);
		for (int64_t i = 0; i < 5 * sp[1]; i++)
			((double *)p)[i] = 1.0 + ((double)rand() / RAND_MAX - 0.5) * 1e-3;
	}
	return in->big && in->m16 && in->m3 && in->s3 && in->x8 && in->y8 && in->big64 &&
	       in->p5 && in->w4 && in->ln;
}

/* evaluate case c; *bits receives a malloc'ed copy of the result (*n bytes) */
static npt_status_t repro_run(const repro_in_t *in, int c, void **bits, size_t *n)
{
	npt_tensor_t *r = NULL, *m = NULL, *a = NULL;
	npt_status_t s;
	int64_t row = 64;
	void *p;

	switch (c) {
	case R_SUM_ALL: s = npt_reduce(NPT_RED_SUM, in->big, -1, NULL, false, &r); break;
	case R_MEAN_AX0: s = npt_reduce(NPT_RED_MEAN, in->m16, 1, (int[]){ 0 }, false, &r); break;
	case R_SUM_AX0_NARROW:
		s = npt_reduce(NPT_RED_SUM, in->m3, 1, (int[]){ 0 }, false, &r);
		break;
	case R_SUM_TO_SHAPE: s = npt_sum_to_shape(in->s3, 1, &row, &r); break;
	case R_PROLOGUE:
		s = npt_mul(in->x8, in->y8, &m);
		if (!s)
			s = npt_add(m, in->x8, &a);
		if (!s)
			s = npt_reduce(NPT_RED_SUM, a, 1, (int[]){ 0 }, false, &r);
		break;
	case R_SUM_F64: s = npt_reduce(NPT_RED_SUM, in->big64, -1, NULL, false, &r); break;
	case R_PROD_AX1: s = npt_reduce(NPT_RED_PROD, in->p5, 1, (int[]){ 1 }, false, &r); break;
	case R_MEAN_LAST:
		s = npt_reduce(NPT_RED_MEAN, in->w4, 1, (int[]){ -1 }, false, &r);
		break;
	case R_LAYERNORM: s = npt_layernorm(in->ln, -1, NULL, NULL, 1e-5, &r); break;
	case R_SOFTMAX: s = npt_softmax(in->ln, -1, &r); break;
	default: s = npt_reduce(NPT_RED_MAX, in->m16, 1, (int[]){ 0 }, false, &r); break;
	}
	if (!s)
		s = npt_tensor_data(r, &p);
	if (!s) {
		*n = (size_t)npt_tensor_numel(r) * npt_dtype_size(npt_tensor_dtype(r));
		*bits = malloc(*n);
		if (*bits)
			memcpy(*bits, p, *n);
		else
			s = NPT_E_NOMEM;
	}
	npt_tensor_free(r);
	npt_tensor_free(m);
	npt_tensor_free(a);
	return s;
}

/* at 2, 3 and 4 threads (4 oversubscribes a 2-core machine: threads are
 * preempted at random), in both modes, every run gives the first run's bits */
static int t_repro_fixed_threads(void)
{
	repro_in_t in;
	int ok = 1;

	CHECK(repro_inputs(&in), "setup");
	for (int mode = NPT_REPRO_INDEPENDENT; mode <= NPT_REPRO_THREADS; mode++) {
		OK(npt_set_repro_mode((npt_repro_mode_t)mode));
		for (int nt = 2; nt <= 4; nt++) {
			OK(npt_set_num_threads(nt));
			for (int c = 0; c < R_NCASES; c++) {
				void *first = NULL, *bits = NULL;
				size_t n0 = 0, n = 0;
				int differ = 0, reps = c == R_MEAN_AX0 || c == R_SUM_AX0_NARROW ? 40 : 12;

				OK(repro_run(&in, c, &first, &n0));
				for (int r = 1; r < reps; r++) {
					OK(repro_run(&in, c, &bits, &n));
					differ += n != n0 || memcmp(first, bits, n0);
					free(bits);
				}
				free(first);
				if (differ) {
					printf("#   %s: %d of %d runs differ from the first at %d "
					       "threads (mode %s)\n", repro_name[c], differ, reps - 1,
					       nt, mode == NPT_REPRO_THREADS ? "threads" :
					       "independent");
					ok = 0;
				}
			}
		}
	}
	npt_set_num_threads(0);
	npt_set_repro_mode(NPT_REPRO_INDEPENDENT);
	repro_free(&in);
	return ok;
}

/* NPT_REPRO_INDEPENDENT: 1, 2, 3 and 4 threads give the same bits */
static int t_repro_independent_of_threads(void)
{
	repro_in_t in;
	void *ref[R_NCASES] = { 0 };
	size_t nref[R_NCASES] = { 0 };
	int ok = 1;

	CHECK(repro_inputs(&in), "setup");
	OK(npt_set_repro_mode(NPT_REPRO_INDEPENDENT));
	CHECK(npt_get_repro_mode() == NPT_REPRO_INDEPENDENT, "mode not set");
	for (int nt = 1; nt <= 4; nt++) {
		OK(npt_set_num_threads(nt));
		for (int c = 0; c < R_NCASES; c++) {
			void *bits = NULL;
			size_t n = 0;

			OK(repro_run(&in, c, nt == 1 ? &ref[c] : &bits, nt == 1 ? &nref[c] : &n));
			if (nt > 1 && (n != nref[c] || memcmp(ref[c], bits, n))) {
				printf("#   %s: %d threads give other bits than 1 thread\n",
				       repro_name[c], nt);
				ok = 0;
			}
			free(bits);
		}
	}
	for (int c = 0; c < R_NCASES; c++)
		free(ref[c]);
	npt_set_num_threads(0);
	repro_free(&in);
	CHECK(npt_set_repro_mode((npt_repro_mode_t)2) == NPT_E_INVAL, "mode 2 accepted");
	CHECK(strstr(npt_last_error(), "NPT_REPRO_INDEPENDENT"), "%s", npt_last_error());
	CHECK(npt_set_repro_mode((npt_repro_mode_t)-1) == NPT_E_INVAL, "mode -1 accepted");
	CHECK(npt_get_repro_mode() == NPT_REPRO_INDEPENDENT, "a refused mode changed the mode");
	return ok;
}

/* OpenBLAS computes each output element in one thread with a fixed kernel:
 * the same bits on every run at a fixed thread count */
static int t_repro_matmul(void)
{
	int64_t sa[2] = { 8, 5000 }, sb[2] = { 5000, 300 };
	npt_tensor_t *a = wide_tensor(NPT_F32, 2, sa, 31), *b = wide_tensor(NPT_F32, 2, sb, 32);
	int differ = 0;

	CHECK(a && b, "setup");
	for (int nt = 1; nt <= 3; nt++) {
		void *first = NULL;

		OK(npt_set_num_threads(nt));
		for (int r = 0; r < 4; r++) {
			npt_tensor_t *c = NULL;
			void *p;

			OK(npt_matmul(a, b, &c));
			OK(npt_tensor_data(c, &p));
			if (!r) {
				first = malloc(8 * 300 * sizeof(float));
				CHECK(first, "malloc");
				memcpy(first, p, 8 * 300 * sizeof(float));
			} else {
				differ += memcmp(first, p, 8 * 300 * sizeof(float)) != 0;
			}
			npt_tensor_free(c);
		}
		free(first);
	}
	npt_set_num_threads(0);
	npt_tensor_free(a);
	npt_tensor_free(b);
	CHECK(!differ, "matmul changed bits between runs at a fixed thread count");
	return 1;
}

/* every way plan() cuts a reduction (ranges of a kept outer dimension, of a
 * kept inner or middle dimension, fixed pieces of the reduced one, a single
 * piece) counts every element once: small integers make f32 sums exact, so
 * the result must equal a naive sum bit for bit, in both modes, at 1..3
 * threads */
static int t_reduce_cuts_exact(void)
{
	static const struct {
		int nd;
		int64_t shape[3];
		int naxes, axes[2];
		int transpose; /* reduce a transposed view */
	} c[] = {
		{ 1, { 1000003 }, -1, { 0 }, 0 },            /* pieces of the one run */
		{ 2, { 64, 8192 }, 1, { 0 }, 0 },            /* kept inner run split */
		{ 3, { 16, 4096, 3 }, 2, { 0, 2 }, 0 },      /* kept middle dim split */
		{ 2, { 70001, 5 }, 1, { 0 }, 0 },            /* pieces, few results */
		{ 2, { 300, 2000 }, 1, { 1 }, 0 },           /* kept outer dim */
		{ 3, { 33, 129, 65 }, 2, { 0, 1 }, 1 },      /* transposed input */
		{ 2, { 3, 5 }, 1, { 0 }, 0 },                /* tiny: one piece */
	};
	int ok = 1;

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		npt_tensor_t *x = NULL, *v = NULL;
		float *p;
		int64_t n = 1;

		for (int d = 0; d < c[i].nd; d++)
			n *= c[i].shape[d];
		OK(npt_tensor_empty(NPT_F32, c[i].nd, c[i].shape, &x));
		OK(npt_tensor_data(x, (void **)&p));
		srand(50 + (unsigned)i);
		for (int64_t k = 0; k < n; k++)
			p[k] = (float)(rand() % 9 - 4);
		if (c[i].transpose) {
			OK(npt_tensor_permute(x, (int[]){ 2, 0, 1 }, &v));
		} else {
			v = npt_tensor_retain(x);
		}
		/* naive reference over v's logical indices, in double (exact here) */
		int nd = npt_tensor_ndim(v);
		const int64_t *sh = npt_tensor_shape(v), *st = npt_tensor_strides(v);
		uint64_t mask = 0;
		int64_t rs[3], rn = 1, idx[3] = { 0 };

		for (int a = 0; a < (c[i].naxes < 0 ? nd : c[i].naxes); a++)
			mask |= 1ull << (c[i].naxes < 0 ? a : c[i].axes[a]);
		for (int d = nd - 1; d >= 0; d--) {
			rs[d] = (mask >> d & 1) ? 0 : rn;
			rn *= (mask >> d & 1) ? 1 : sh[d];
		}
		double *ref = calloc((size_t)rn, sizeof(double));

		CHECK(ref, "calloc");
		for (int64_t k = 0; k < n; k++) {
			int64_t off = 0, r = 0;

			for (int d = 0; d < nd; d++) {
				off += idx[d] * st[d];
				r += idx[d] * rs[d];
			}
			ref[r] += p[off];
			for (int d = nd - 1; d >= 0; d--) {
				if (++idx[d] < sh[d])
					break;
				idx[d] = 0;
			}
		}
		for (int mode = NPT_REPRO_INDEPENDENT; mode <= NPT_REPRO_THREADS; mode++) {
			OK(npt_set_repro_mode((npt_repro_mode_t)mode));
			for (int nt = 1; nt <= 3; nt++) {
				npt_tensor_t *r = NULL;
				float *q;
				int64_t bad = -1;

				OK(npt_set_num_threads(nt));
				OK(npt_reduce(NPT_RED_SUM, v, c[i].naxes, c[i].axes, false, &r));
				OK(npt_tensor_data(r, (void **)&q));
				CHECK(npt_tensor_numel(r) == rn, "case %zu: %lld results, want %lld", i,
				      (long long)npt_tensor_numel(r), (long long)rn);
				for (int64_t k = 0; k < rn && bad < 0; k++)
					if (q[k] != (float)ref[k])
						bad = k;
				if (bad >= 0) {
					printf("#   case %zu, mode %d, %d threads: result %lld is %g, "
					       "want %g\n", i, mode, nt, (long long)bad, q[bad],
					       ref[bad]);
					ok = 0;
				}
				npt_tensor_free(r);
			}
		}
		free(ref);
		npt_tensor_free(v);
		npt_tensor_free(x);
	}
	npt_set_num_threads(0);
	npt_set_repro_mode(NPT_REPRO_INDEPENDENT);
	return ok;
}

/* ---- NumPy's limits and 0-d rules ---- */

/* a zero dimension does not excuse the others: NumPy refuses
 * np.empty((0, 2**62, 4)) ("array is too big") */
static int t_zero_dim_too_big(void)
{
	int64_t z[3] = { 0, (int64_t)1 << 62, 4 }, zl[3] = { 2, 0, INT64_MAX },
		ok3[3] = { 0, (int64_t)1 << 40, (int64_t)1 << 18 }, one = 1;
	npt_tensor_t *t = NULL, *r = NULL, *e = NULL, *u = NULL, *v = NULL;
	static float dummy;

	CHECK(npt_tensor_empty(NPT_F32, 3, z, &t) == NPT_E_OVERFLOW && !t,
	      "empty (0,2^62,4) accepted");
	CHECK(strstr(npt_last_error(), "too big") && strstr(npt_last_error(), "(0,"),
	      "message: %s", npt_last_error());
	CHECK(npt_tensor_zeros(NPT_I8, 3, zl, &t) == NPT_E_OVERFLOW, "zeros (2,0,2^63-1)");
	CHECK(npt_tensor_from_data(&dummy, NPT_F32, 3, z, NULL, 0, NULL, NULL, &t) ==
	      NPT_E_OVERFLOW, "from_data (0,2^62,4)");
	/* within the limit a zero-size tensor is fine, whatever its other dims */
	OK(npt_tensor_empty(NPT_F64, 3, ok3, &e));
	CHECK(npt_tensor_numel(e) == 0, "numel of (0,2^40,2^18)");
	/* views and results: reshape, broadcast_to, expand, where */
	int64_t rz[3] = { 0, (int64_t)1 << 31, (int64_t)1 << 29 };

	CHECK(npt_tensor_reshape(e, 3, rz, &r) == NPT_E_OVERFLOW, "reshape to (0,2^31,2^29)");
	OK(npt_tensor_zeros(NPT_F32, 1, &one, &t));
	int64_t bz[3] = { 0, (int64_t)1 << 31, (int64_t)1 << 29 };

	CHECK(npt_tensor_broadcast_to(t, 3, bz, &r) == NPT_E_OVERFLOW, "broadcast_to (0,2^31,2^29)");
	CHECK(npt_tensor_expand(t, 3, bz, &r) == NPT_E_OVERFLOW, "expand (0,2^31,2^29)");
	int64_t b1[3] = { 0, 1, 1 }, b2[3] = { 1, (int64_t)1 << 31, 1 },
		b3[3] = { 1, 1, (int64_t)1 << 29 };
	npt_tensor_t *w1 = NULL, *w2 = NULL, *w3 = NULL;

	OK(npt_tensor_zeros(NPT_F32, 3, b1, &w1));
	OK(npt_tensor_broadcast_to(t, 3, b2, &w2));
	OK(npt_tensor_broadcast_to(t, 3, b3, &w3));
	OK(npt_add(w1, w2, &u)); /* (0, 2^31, 1): fine */
	CHECK(npt_where(w1, w2, w3, &v) == NPT_E_OVERFLOW, "where -> (0,2^31,2^29) accepted");
	npt_tensor_free(u);
	npt_tensor_free(w1);
	npt_tensor_free(w2);
	npt_tensor_free(w3);
	npt_tensor_free(t);
	npt_tensor_free(e);
	return 1;
}

static int value_is(npt_tensor_t *r, double want)
{
	void *p;

	if (npt_tensor_data(r, &p) || npt_tensor_ndim(r) != 0)
		return 0;
	switch (npt_tensor_dtype(r)) {
	case NPT_F32: return *(float *)p == (float)want;
	case NPT_F64: return *(double *)p == want;
	case NPT_I64: return *(int64_t *)p == (int64_t)want;
	default: return 0;
	}
}

/* NumPy 1.24: sum/prod/max/min/argmax of a 0-d array take axis 0 or -1 (one
 * integer); mean and tuples of axes do not; squeeze(axis=0) returns it */
static int t_zero_d_axes(void)
{
	npt_tensor_t *z = NULL, *zi = NULL, *r = NULL;
	float *p;

	OK(npt_tensor_empty(NPT_F32, 0, NULL, &z));
	OK(npt_tensor_data(z, (void **)&p));
	*p = 3.5f;
	OK(npt_tensor_empty(NPT_I32, 0, NULL, &zi));
	OK(npt_tensor_data(zi, (void **)&p));
	*(int32_t *)p = 7;
	for (int ax = -1; ax <= 0; ax++) {
		for (int op = NPT_RED_SUM; op <= NPT_RED_MIN; op++) {
			if (op == NPT_RED_MEAN) {
				CHECK(npt_reduce(op, z, 1, &ax, false, &r) == NPT_E_AXIS,
				      "mean of 0-d along %d accepted (NumPy refuses)", ax);
				continue;
			}
			for (int keep = 0; keep <= 1; keep++) {
				OK(npt_reduce(op, z, 1, &ax, keep, &r));
				CHECK(value_is(r, 3.5), "op %d axis %d keepdims %d", op, ax, keep);
				npt_tensor_free(r);
			}
		}
		OK(npt_reduce(NPT_RED_SUM, zi, 1, &ax, false, &r));
		CHECK(npt_tensor_dtype(r) == NPT_I64 && value_is(r, 7), "int sum along %d", ax);
		npt_tensor_free(r);
		for (int keep = 0; keep <= 1; keep++) {
			OK(npt_argmax(z, ax, keep, &r));
			CHECK(value_is(r, 0), "argmax along %d keepdims %d", ax, keep);
			npt_tensor_free(r);
		}
		OK(npt_tensor_squeeze(z, ax, &r));
		CHECK(npt_tensor_ndim(r) == 0, "squeeze");
		npt_tensor_free(r);
		OK(npt_softmax(z, ax, &r));
		CHECK(value_is(r, 1.0), "softmax of 0-d along %d", ax);
		npt_tensor_free(r);
	}
	int two[2] = { 0, -1 }, one = 1, m2 = -2;

	CHECK(npt_reduce(NPT_RED_SUM, z, 2, two, false, &r) == NPT_E_AXIS, "two axes on 0-d");
	CHECK(npt_reduce(NPT_RED_SUM, z, 1, &one, false, &r) == NPT_E_AXIS, "axis 1 on 0-d");
	CHECK(npt_reduce(NPT_RED_MAX, z, 1, &m2, false, &r) == NPT_E_AXIS, "axis -2 on 0-d");
	CHECK(npt_argmax(z, 1, false, &r) == NPT_E_AXIS, "argmax axis 1 on 0-d");
	CHECK(npt_layernorm(z, 0, NULL, NULL, 1e-5, &r) == NPT_E_AXIS, "layernorm of 0-d");
	OK(npt_reduce(NPT_RED_SUM, z, 0, NULL, false, &r)); /* axis=(): nothing reduced */
	CHECK(value_is(r, 3.5), "axis=()");
	npt_tensor_free(r);
	npt_tensor_free(z);
	npt_tensor_free(zi);
	return 1;
}

/* Python's slice rules at the ends of int64 (no overflow, clamping) */
static int t_slice_extremes(void)
{
	int64_t s = 6;
	npt_tensor_t *t = f32_tensor(1, &s, 40), *r = NULL;
	struct {
		int64_t start, stop, step, n, first;
	} c[] = {
		{ INT64_MAX, NPT_SLICE_END, 1, 0, -1 },
		{ -INT64_MAX, NPT_SLICE_END, 1, 6, 0 },
		{ NPT_SLICE_END, INT64_MAX, 1, 6, 0 },
		{ NPT_SLICE_END, NPT_SLICE_END, INT64_MAX, 1, 0 },
		{ NPT_SLICE_END, NPT_SLICE_END, -INT64_MAX, 1, 5 },
		{ NPT_SLICE_END, NPT_SLICE_END, INT64_MIN, 1, 5 },
		{ INT64_MAX, NPT_SLICE_END, -1, 6, 5 },
		{ -INT64_MAX, NPT_SLICE_END, -1, 0, -1 },
		{ INT64_MAX, -INT64_MAX, -(INT64_MAX / 2), 1, 5 },
		{ 2, INT64_MAX, (int64_t)1 << 62, 1, 2 },
	};
	float *base, *p;

	CHECK(t, "setup");
	OK(npt_tensor_data(t, (void **)&base));
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		OK(npt_tensor_slice(t, 0, c[i].start, c[i].stop, c[i].step, &r));
		CHECK(npt_tensor_shape(r)[0] == c[i].n, "case %zu: %lld elements", i,
		      (long long)npt_tensor_shape(r)[0]);
		if (c[i].n) {
			OK(npt_tensor_data(r, (void **)&p));
			CHECK(p == base + c[i].first, "case %zu: wrong first element", i);
		}
		npt_tensor_free(r);
	}
	CHECK(npt_tensor_slice(t, 0, 0, 6, 0, &r) == NPT_E_INVAL, "step 0");
	npt_tensor_free(t);
	return 1;
}

/* ---- naive-reference differential test of broadcasting ---- */

static double ref_op(int op, double x, double y)
{
	switch (op) {
	case NPT_OP_ADD: return x + y;
	case NPT_OP_SUB: return x - y;
	case NPT_OP_MUL: return x * y;
	case NPT_OP_MAXIMUM: return x >= y ? x : y;
	default: return x < y;
	}
}

static int t_random_broadcast_vs_naive(void)
{
	unsigned seed = 4242;
	int ops[5] = { NPT_OP_ADD, NPT_OP_SUB, NPT_OP_MUL, NPT_OP_MAXIMUM, NPT_OP_LT };

	for (int iter = 0; iter < 300; iter++) {
		int nd = rand_r(&seed) % 5;
		int64_t os[4], as[4], bs[4];
		int na = nd - (nd ? rand_r(&seed) % (nd + 1) : 0), nb = nd;

		for (int d = 0; d < nd; d++) {
			os[d] = rand_r(&seed) % 4;
			as[d] = bs[d] = os[d];
			if (rand_r(&seed) % 3 == 0)
				bs[d] = 1;
		}
		for (int d = 0; d < na; d++)
			as[d] = rand_r(&seed) % 3 == 0 ? 1 : os[nd - na + d];
		/* b: a reversed (negative stride) view of a fresh tensor */
		npt_tensor_t *a = f32_tensor(na, as, iter), *b0 = f32_tensor(nb, bs, iter + 1000);
		npt_tensor_t *b = b0, *r = NULL;

		CHECK(a && b0, "setup");
		if (nb && bs[nb - 1] > 1)
			OK(npt_tensor_slice(b0, nb - 1, NPT_SLICE_END, NPT_SLICE_END, -1, &b));
		else
			npt_tensor_retain(b);
		int op = ops[iter % 5];

		OK(npt_binary(op, a, b, &r));
		void *rp;
		float *ap, *bp;

		OK(npt_tensor_data(r, &rp));
		OK(npt_tensor_data(a, (void **)&ap));
		OK(npt_tensor_data(b, (void **)&bp));
		int64_t n = npt_tensor_numel(r);
		const int64_t *rs = npt_tensor_shape(r);

		CHECK(npt_tensor_ndim(r) == nd, "result rank");
		for (int d = 0; d < nd; d++) /* a size-1 dim in both stays 1 */
			CHECK(rs[d] == os[d] || (rs[d] == 1 && bs[d] == 1), "result shape");

		for (int64_t i = 0; i < n; i++) {
			int64_t rem = i, ao = 0, bo = 0;

			for (int d = nd - 1; d >= 0; d--) {
				int64_t idx = rem % rs[d];

				rem /= rs[d];
				int ka = d - (nd - na);

				if (ka >= 0 && as[ka] != 1)
					ao += idx * npt_tensor_strides(a)[ka];
				if (bs[d] != 1)
					bo += idx * npt_tensor_strides(b)[d];
			}
			double want = ref_op(op, ap[ao], bp[bo]);
			double got = op == NPT_OP_LT ? ((uint8_t *)rp)[i] : ((float *)rp)[i];

			CHECK((float)want == (float)got, "iter %d op %s elem %lld: got %g want %g "
			      "(nd %d na %d: out %lld,%lld a %lld,%lld b %lld,%lld)",
			      iter, npt_op_name(op), (long long)i, got, want, nd, na,
			      (long long)os[0], (long long)os[1], (long long)as[0],
			      (long long)as[1], (long long)bs[2], (long long)bs[3]);
		}
		npt_tensor_free(r);
		npt_tensor_free(b);
		npt_tensor_free(b0);
		npt_tensor_free(a);
	}
	return 1;
}

static int t_dlpack_roundtrip(void)
{
	int64_t s[2] = { 3, 4 };
	npt_tensor_t *a = f32_tensor(2, s, 16), *t = NULL, *b = NULL;
	struct DLManagedTensor *m = NULL;

	OK(npt_tensor_transpose(a, 0, 1, &t));
	OK(npt_tensor_to_dlpack(t, &m));
	CHECK(m->dl_tensor.strides[0] == 1 && m->dl_tensor.strides[1] == 4, "element strides");
	OK(npt_tensor_from_dlpack(m, false, &b));
	CHECK(npt_tensor_shape(b)[0] == 4 && npt_tensor_strides(b)[1] == 4, "imported view");
	float *pa, *pb;

	OK(npt_tensor_data(t, (void **)&pa));
	OK(npt_tensor_data(b, (void **)&pb));
	CHECK(pa == pb, "zero copy");
	npt_tensor_free(t);
	npt_tensor_free(a);
	npt_tensor_free(b); /* runs the deleter, which frees the last reference */
	/* a byte_offset that wraps, or one on NULL data, is no address: refused,
	 * and the caller still owns the tensor */
	float x[4] = { 0 };
	int64_t four = 4;
	struct DLManagedTensor bad;

	memset(&bad, 0, sizeof(bad));
	bad.dl_tensor.data = x;
	bad.dl_tensor.device.device_type = kDLCPU;
	bad.dl_tensor.ndim = 1;
	bad.dl_tensor.dtype = (DLDataType){ kDLFloat, 32, 1 };
	bad.dl_tensor.shape = &four;
	bad.dl_tensor.byte_offset = UINT64_MAX;
	CHECK(npt_tensor_from_dlpack(&bad, false, &b) == NPT_E_OVERFLOW && !b,
	      "wrapping byte_offset: %s", npt_last_error());
	CHECK(strstr(npt_last_error(), "byte_offset"), "message: %s", npt_last_error());
	bad.dl_tensor.data = NULL;
	bad.dl_tensor.byte_offset = 64;
	CHECK(npt_tensor_from_dlpack(&bad, false, &b) == NPT_E_INVAL && !b,
	      "byte_offset on NULL data: %s", npt_last_error());
	return 1;
}

static int t_lazy_write_barrier(void)
{
	int64_t s[1] = { 8 };
	npt_tensor_t *a = f32_tensor(1, s, 17), *y = NULL, *z = NULL;
	float before, *p, *q;

	OK(npt_tensor_data(a, (void **)&p));
	before = p[3];
	OK(npt_add(a, a, &y)); /* lazy, reads a */
	OK(npt_mul(a, a, &z));
	OK(npt_tensor_eval_into(z, a)); /* a = a*a in place: y must see the old a */
	OK(npt_tensor_data(y, (void **)&q));
	CHECK(q[3] == before + before, "lazy reader saw a later write: %g vs %g", q[3],
	      2 * before);
	npt_tensor_free(y);
	npt_tensor_free(z);
	npt_tensor_free(a);
	return 1;
}

static int t_long_chain(void)
{
	int64_t s[1] = { 1000 };
	npt_tensor_t *a = f32_tensor(1, s, 18), *x;
	npt_stats_t st;

	/* a 200000-node chain is freed without deep recursion */
	x = npt_tensor_retain(a);
	for (int i = 0; i < 200000; i++) {
		npt_tensor_t *y;

		OK(npt_unary(NPT_OP_NEG, x, &y));
		npt_tensor_free(x);
		x = y;
	}
	npt_tensor_free(x);
	x = npt_tensor_retain(a);
	for (int i = 0; i < 500; i++) { /* beyond one program's capacity: split, still right */
		npt_tensor_t *y;

		OK(npt_add(x, a, &y));
		npt_tensor_free(x);
		x = y;
	}
	npt_stats_reset();
	float *p, *pa;

	OK(npt_tensor_data(x, (void **)&p));
	npt_stats_get(&st);
	OK(npt_tensor_data(a, (void **)&pa));
	CHECK(fabsf(p[7] - 501 * pa[7]) <= 1e-3f * fabsf(501 * pa[7]) + 1e-3f, "%g vs %g", p[7],
	      501 * pa[7]);
	npt_tensor_free(x);
	npt_tensor_free(a);
	return 1;
}

/*
 * Very deep lazy graphs evaluate on a thread with a 4 MiB stack: 100000
 * reductions of reductions (one recursion level each before the fix, about
 * 15 MB of stack), a 1000000-op elementwise chain and a chain of shared
 * subexpressions (x = x * 0.5 + x * 0.5, 2^40000 paths) give NumPy's values.
 */
#include <pthread.h>

static void *deep_chains(void *arg)
{
	static float half = 0.5f, unit = 1.0f;
	int64_t one[1] = { 1 }, four[1] = { 4 };
	int ax0 = 0, *res = arg;
	npt_tensor_t *a = NULL, *h = NULL, *u = NULL, *x, *y, *z;
	float *p;

	*res = 0;
	if (npt_tensor_empty(NPT_F32, 1, four, &a) || npt_tensor_data(a, (void **)&p) ||
	    npt_tensor_from_data(&half, NPT_F32, 1, one, NULL, NPT_BORROW_READONLY, NULL, NULL,
				 &h) ||
	    npt_tensor_from_data(&unit, NPT_F32, 1, one, NULL, NPT_BORROW_READONLY, NULL, NULL,
				 &u))
		goto out;
	for (int i = 0; i < 4; i++)
		p[i] = 1.0f;
	/* x * 1, sum(x, 0, keepdims) alternately: [1 1 1 1] -> [4] -> [4] ... */
	x = npt_tensor_retain(a);
	for (int i = 0; i < 100000; i++) {
		if (i % 2 ? npt_reduce(NPT_RED_SUM, x, 1, &ax0, true, &y) :
		    npt_binary(NPT_OP_MUL, x, u, &y))
			goto out_x;
		npt_tensor_free(x);
		x = y;
	}
	if (npt_tensor_data(x, (void **)&p) || npt_tensor_numel(x) != 1 || p[0] != 4.0f)
		goto out_x;
	npt_tensor_free(x);
	x = npt_tensor_retain(a);
	for (int i = 0; i < 1000000; i++) {
		if (npt_binary(NPT_OP_ADD, x, a, &y))
			goto out_x;
		npt_tensor_free(x);
		x = y;
	}
	if (npt_tensor_data(x, (void **)&p) || p[3] != 1000001.0f)
		goto out_x;
	npt_tensor_free(x);
	x = npt_tensor_retain(a);
	for (int i = 0; i < 40000; i++) {	/* each node's two inputs are one tensor */
		if (npt_binary(NPT_OP_MUL, x, h, &y))
			goto out_x;
		if (npt_binary(NPT_OP_ADD, y, y, &z)) {
			npt_tensor_free(y);
			goto out_x;
		}
		npt_tensor_free(x);
		npt_tensor_free(y);
		x = z;
	}
	*res = !npt_tensor_data(x, (void **)&p) && p[2] == 1.0f;
out_x:
	npt_tensor_free(x);
out:
	npt_tensor_free(u);
	npt_tensor_free(h);
	npt_tensor_free(a);
	return NULL;
}

static int t_deep_graphs(void)
{
	pthread_attr_t attr;
	pthread_t th;
	int ok = 0;

	CHECK(!pthread_attr_init(&attr) && !pthread_attr_setstacksize(&attr, 4 << 20), "attr");
	CHECK(!pthread_create(&th, &attr, deep_chains, &ok), "pthread_create");
	pthread_join(th, NULL);
	pthread_attr_destroy(&attr);
	CHECK(ok, "a deep lazy graph gave a wrong value or failed: %s", npt_last_error());
	return 1;
}

/*
 * A batched product of empty operands (K = 0) whose data pointers are NULL, as
 * npushm.tensor passes for NumPy's empty arrays, with a negative batch stride:
 * zeros, and no pointer arithmetic on NULL (UBSan's "applying non-zero offset
 * to null pointer" in make check-sanitizers before the fix).
 */
static int t_matmul_empty_null_operands(void)
{
	int64_t sa[3] = { 2, 3, 0 }, ta[3] = { -1, 0, 1 }, sb[2] = { 0, 4 };
	npt_dtype_t dts[3] = { NPT_I8, NPT_F32, NPT_F64 };

	for (int k = 0; k < 3; k++) {
		npt_tensor_t *a, *b, *c;
		char *p;

		OK(npt_tensor_from_data(NULL, dts[k], 3, sa, ta, 0, NULL, NULL, &a));
		OK(npt_tensor_from_data(NULL, dts[k], 2, sb, NULL, 0, NULL, NULL, &b));
		OK(npt_matmul(a, b, &c));
		OK(npt_tensor_data(c, (void **)&p));
		CHECK(npt_tensor_ndim(c) == 3 && npt_tensor_numel(c) == 24, "shape");
		for (size_t i = 0; i < 24 * npt_dtype_size(dts[k]); i++)
			CHECK(p[i] == 0, "byte %zu of the %s product is %d", i,
			      npt_dtype_name(dts[k]), p[i]);
		npt_tensor_free(c);
		npt_tensor_free(b);
		npt_tensor_free(a);
	}
	return 1;
}

/*
 * Views with an offset of an empty tensor whose data is NULL (a slice of
 * NumPy's np.empty((0, 5)) through npushm.tensor) evaluate, copy and reduce
 * without computing an address from NULL (UBSan in make check-sanitizers
 * before the fix).
 */
static int t_empty_null_views(void)
{
	int64_t s[2] = { 0, 5 };
	npt_tensor_t *a, *v, *r, *w, *o;
	void *p;

	OK(npt_tensor_from_data(NULL, NPT_F32, 2, s, NULL, 0, NULL, NULL, &a));
	OK(npt_tensor_slice(a, 1, 4, NPT_SLICE_END, -2, &v));	/* (0, 3), offset 4 */
	OK(npt_tensor_data(v, &p));	/* as numpy() asks for it */
	CHECK(p == NULL, "the data of an empty view of NULL data is %p", p);
	OK(npt_binary(NPT_OP_ADD, v, v, &r));
	OK(npt_tensor_data(r, &p));
	CHECK(npt_tensor_numel(r) == 0, "numel");
	npt_tensor_free(r);
	OK(npt_reduce(NPT_RED_SUM, v, 1, (int[1]){ 0 }, false, &r));
	OK(npt_tensor_data(r, &p));
	CHECK(npt_tensor_numel(r) == 3 && ((float *)p)[0] == 0.0f && ((float *)p)[2] == 0.0f,
	      "sum over the empty axis");
	npt_tensor_free(r);
	OK(npt_tensor_contiguous(v, &w));
	OK(npt_tensor_data(w, &p));
	OK(npt_tensor_empty(NPT_F32, 2, s, &o));
	OK(npt_tensor_slice(o, 1, 0, 3, 1, &r));
	OK(npt_tensor_eval_into(v, r));	/* (0, 3) into (0, 3) */
	npt_tensor_free(r);
	npt_tensor_free(o);
	npt_tensor_free(w);
	npt_tensor_free(v);
	npt_tensor_free(a);
	return 1;
}

/*
 * Arguments a caller gets wrong: a NULL shape for a nonzero rank, an op
 * whose result shape overflows, bad DLPack fields. Each is refused with a
 * message that names the call the caller made (not an internal one).
 */
static int t_hostile_arguments(void)
{
	static float one[1];
	int64_t s2[2] = { 2, 3 }, big = INT64_C(1) << 32, z2[2] = { 0, 0 };
	int64_t as[2] = { big, 1 }, bs[2] = { 1, big }, neg[2] = { -1, 3 };
	int64_t far[2] = { INT64_MAX, 1 };
	npt_tensor_t *t = f32_tensor(2, s2, 3), *a, *b, *r = NULL;
	DLManagedTensor m;

	CHECK(t, "setup");
	CHECK(npt_tensor_reshape(t, 2, NULL, &r) == NPT_E_INVAL && !r, "reshape to a NULL shape");
	CHECK(strstr(npt_last_error(), "reshape: shape is NULL for rank 2"), "message: %s",
	      npt_last_error());
	/* rank 0 needs no shape: 6 elements are not one */
	CHECK(npt_tensor_reshape(t, 0, NULL, &r) == NPT_E_SHAPE && !r, "reshape (2,3) to ()");
	/* [2^32, 1] @ [1, 2^32]: operands of one element each, a result too big */
	OK(npt_tensor_from_data(one, NPT_F32, 2, as, z2, 0, NULL, NULL, &a));
	OK(npt_tensor_from_data(one, NPT_F32, 2, bs, z2, 0, NULL, NULL, &b));
	CHECK(npt_matmul(a, b, &r) == NPT_E_OVERFLOW && !r, "matmul result of 2^64 elements");
	CHECK(!strncmp(npt_last_error(), "matmul: shape (4294967296,4294967296) is too big", 47),
	      "message: %s", npt_last_error());
	npt_tensor_free(a);
	npt_tensor_free(b);
	/* DLPack fields: the errors are from_dlpack's */
	memset(&m, 0, sizeof(m));
	m.dl_tensor.data = one;
	m.dl_tensor.device.device_type = kDLCPU;
	m.dl_tensor.ndim = 2;
	m.dl_tensor.dtype = (DLDataType){ kDLFloat, 32, 1 };
	CHECK(npt_tensor_from_dlpack(&m, false, &r) == NPT_E_INVAL && !r, "NULL shape");
	CHECK(strstr(npt_last_error(), "from_dlpack: shape is NULL for rank 2"), "message: %s",
	      npt_last_error());
	m.dl_tensor.shape = neg;
	CHECK(npt_tensor_from_dlpack(&m, false, &r) == NPT_E_INVAL, "negative dimension");
	CHECK(strstr(npt_last_error(), "from_dlpack: negative dimension -1"), "message: %s",
	      npt_last_error());
	m.dl_tensor.shape = s2;
	m.dl_tensor.strides = far;
	CHECK(npt_tensor_from_dlpack(&m, false, &r) == NPT_E_OVERFLOW, "strides past the range");
	CHECK(strstr(npt_last_error(), "from_dlpack: strides overflow"), "message: %s",
	      npt_last_error());
	m.dl_tensor.strides = NULL;
	m.dl_tensor.data = NULL;
	CHECK(npt_tensor_from_dlpack(&m, false, &r) == NPT_E_INVAL, "NULL data");
	CHECK(strstr(npt_last_error(), "from_dlpack: data is NULL for 6 elements"), "message: %s",
	      npt_last_error());
	/* a failed call leaves *out NULL, whatever failed first */
	r = t;
	CHECK(npt_binary((npt_op_t)99, t, t, &r) == NPT_E_INVAL && !r, "binary op 99");
	r = t;
	CHECK(npt_unary((npt_op_t)99, t, &r) == NPT_E_INVAL && !r, "unary op 99");
	r = t;
	CHECK(npt_reduce((npt_reduce_op_t)99, t, -1, NULL, false, &r) == NPT_E_INVAL && !r,
	      "reduction 99");
	r = t;
	CHECK(npt_tensor_from_dlpack(NULL, false, &r) == NPT_E_INVAL && !r, "from_dlpack(NULL)");
	CHECK(strstr(npt_last_error(), "from_dlpack: the DLPack tensor is NULL"), "message: %s",
	      npt_last_error());
	DLManagedTensor *dl = &m;

	CHECK(npt_tensor_to_dlpack(NULL, &dl) == NPT_E_INVAL && !dl, "to_dlpack(NULL)");
	CHECK(npt_tensor_zeros(NPT_F32, 33, far, &r) == NPT_E_RANK && !r, "zeros of rank 33");
	CHECK(!strncmp(npt_last_error(), "zeros: rank 33", 14), "message: %s", npt_last_error());
	CHECK(npt_promote_types(NPT_F32, NPT_I8, NULL) == NPT_E_INVAL, "promote_types(.., NULL)");
	CHECK(strstr(npt_last_error(), "promote_types: out is NULL"), "message: %s",
	      npt_last_error());
	CHECK(npt_tensor_eval_into(t, NULL) == NPT_E_INVAL, "eval_into(t, NULL)");
	CHECK(strstr(npt_last_error(), "eval_into: the output tensor is NULL"), "message: %s",
	      npt_last_error());
	npt_tensor_free(t);
	return 1;
}

/*
 * One harness test per function. Each starts in the default expansion mode:
 * the accounting tests assume it, whatever the environment says.
 */
#define TENSOR_TEST(name, fn)                                                  \
	TEST(name)                                                             \
	{                                                                      \
		npt_set_expand_mode(NPT_EXPAND_AUTO);                          \
		ASSERT_TRUE(fn());                                             \
	}

/* NULL arguments, destroy(NULL), bad dtype codes */
TENSOR_TEST(null_arguments_destroy_null_bad_dtype_codes, t_null_and_free)

/* rank > 32 and overflowing sizes are refused */
TENSOR_TEST(rank_over_32_and_overflowing_sizes_are_refused, t_rank_and_overflow)

/* broadcast errors name the op and list the shapes */
TENSOR_TEST(broadcast_errors_name_the_op_and_list_the_shapes, t_broadcast_errors)

/* writes into broadcast views and broadcast outputs are refused */
TENSOR_TEST(writes_into_broadcast_views_and_outputs_are_refused, t_write_broadcast_view)

/* read-only borrowed buffers refuse writes; release runs once */
TENSOR_TEST(readonly_borrowed_buffers_refuse_writes_release_runs_once, t_readonly_borrowed)

/* unsupported dtypes, same_kind casting, int ** negative */
TENSOR_TEST(unsupported_dtypes_same_kind_casting_int_pow_negative, t_dtype_errors)

/* axis errors, empty max/argmax errors, sum/prod/mean identities */
TENSOR_TEST(axis_errors_empty_max_argmax_errors_sum_prod_mean_identities, t_axis_and_empty)

/* matmul shape errors */
TENSOR_TEST(matmul_shape_errors, t_matmul_errors)

/* a fused 5-op chain allocates only its output; the pool serves the next */
TENSOR_TEST(fused_5_op_chain_allocates_only_its_output_pool_serves_the_next, t_fused_chain_allocates_output_only)

/* a dead intermediate's buffer is reused in place */
TENSOR_TEST(dead_intermediate_buffer_is_reused_in_place, t_dead_intermediate_reused_in_place)

/* implicit materialisation is reported; VIEW mode refuses it */
TENSOR_TEST(implicit_materialisation_is_reported_view_mode_refuses_it, t_materialize_report)

/* 1, 2 and 4 threads give identical results */
TENSOR_TEST(one_two_and_four_threads_give_identical_results, t_threads_equivalence)

/* random broadcasting vs a naive reference (negative strides) */
TENSOR_TEST(random_broadcasting_vs_a_naive_reference_negative_strides, t_random_broadcast_vs_naive)

/* DLPack export/import round trip without copies */
TENSOR_TEST(dlpack_export_import_round_trip_without_copies, t_dlpack_roundtrip)

/* a write into a buffer evaluates lazy readers first */
TENSOR_TEST(write_into_a_buffer_evaluates_lazy_readers_first, t_lazy_write_barrier)

/* a 500-op chain evaluates correctly; a 200000-node graph frees */
TENSOR_TEST(chain_of_500_ops_evaluates_correctly_200000_node_graph_frees, t_long_chain)

/* 10^5 nested reductions, 10^6 chained ops, shared subexpressions: no stack overflow */
TENSOR_TEST(very_deep_lazy_graphs_evaluate_on_a_4_mib_stack, t_deep_graphs)

/* empty operands with NULL data and a negative batch stride: zeros, no NULL arithmetic */
TENSOR_TEST(matmul_of_empty_null_operands_with_negative_batch_strides, t_matmul_empty_null_operands)

/* views with an offset of an empty tensor over NULL data: no address from NULL */
TENSOR_TEST(views_of_empty_null_data_compute_no_address, t_empty_null_views)

/* an elementwise prologue fuses into sum_to_shape (no intermediate) */
TENSOR_TEST(elementwise_prologue_fuses_into_sum_to_shape, t_reduce_prologue_fused)

/* every status and dtype has its own name */
TENSOR_TEST(every_status_and_dtype_has_its_own_name, t_strerror_all)

/* outputs >= 16 MiB (streaming stores, misaligned rows) are bit-exact */
TENSOR_TEST(outputs_of_16_mib_and_more_are_bit_exact, t_streaming_outputs)

/* reductions give the same bits on every run at 2, 3, 4 threads (both modes) */
TENSOR_TEST(reductions_same_bits_every_run_at_2_3_4_threads_both_modes, t_repro_fixed_threads)

/* NPT_REPRO_INDEPENDENT: the same bits at 1, 2, 3 and 4 threads */
TENSOR_TEST(repro_independent_same_bits_at_1_2_3_4_threads, t_repro_independent_of_threads)

/* matmul gives the same bits on every run at a fixed thread count */
TENSOR_TEST(matmul_same_bits_every_run_at_a_fixed_thread_count, t_repro_matmul)

/* every cut of a reduction counts each element once (exact integer sums) */
TENSOR_TEST(every_cut_of_a_reduction_counts_each_element_once, t_reduce_cuts_exact)

/* a zero dimension does not excuse an oversized shape (NumPy: too big) */
TENSOR_TEST(zero_dimension_does_not_excuse_an_oversized_shape, t_zero_dim_too_big)

/* 0-d reductions along axis 0 or -1 as NumPy 1.24 */
TENSOR_TEST(zero_d_reductions_along_axis_0_or_minus_1_as_numpy, t_zero_d_axes)

/* slices at the ends of int64 follow Python's clamping */
TENSOR_TEST(slices_at_the_ends_of_int64_follow_python_clamping, t_slice_extremes)

/* NULL shapes, results too big, bad DLPack fields: refused in the caller's words */
TENSOR_TEST(hostile_arguments_are_refused_in_the_callers_words, t_hostile_arguments)

TEST_HARNESS_MAIN
