// SPDX-License-Identifier: MIT
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * test_blocks.c - tests of libnptensor's model building blocks (kselftest
 * harness, TAP): npt_take (NumPy take, mode 'raise'), npt_linear (act(x @
 * W^T + b)) and npt_attention (softmax(q k^T * scale + bias) v), each against
 * a naive double-precision reference written here, over strided, sliced,
 * transposed and permuted views; that read-only and sliced weights are used
 * in place (no implicit copy in the stats) while operands BLAS cannot read
 * are copied and reported (refused in VIEW mode); that results do not
 * depend on the thread count; and every refusal (shapes, dtypes, flags,
 * out-of-bounds indices) with its message.
 */
#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"

/* Each test packs and multiplies BERT-sized weights at 1 and 2 threads: on a
 * shared 2-core machine under load (or under ASan) that can take longer than
 * the harness's 30 s; the limit only catches hangs. */
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 180
#include "nptensor.h"

static uint64_t rng_state = 88172645463325252ull;

static float frand(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (float)((rng_state >> 40) & 0xffffff) / (float)(1 << 23) - 1.0f;
}

static npt_tensor_t *randn(int nd, const int64_t *shape)
{
	npt_tensor_t *t = NULL;
	float *p;

	if (npt_tensor_empty(NPT_F32, nd, shape, &t) || npt_tensor_data(t, (void **)&p))
		return NULL;
	for (int64_t i = 0; i < npt_tensor_numel(t); i++)
		p[i] = frand();
	return t;
}

/* element at a multi-index of any view */
static double at(npt_tensor_t *t, const int64_t *idx)
{
	const int64_t *st = npt_tensor_strides(t);
	void *base;
	int64_t off = 0;

	npt_tensor_data(t, &base);
	for (int d = 0; d < npt_tensor_ndim(t); d++)
		off += idx[d] * st[d];
	switch (npt_tensor_dtype(t)) {
	case NPT_F32: return ((float *)base)[off];
	case NPT_I32: return ((int32_t *)base)[off];
	case NPT_I64: return (double)((int64_t *)base)[off];
	case NPT_I8: return ((int8_t *)base)[off];
	default: return NAN;
	}
}

static double at2(npt_tensor_t *t, int64_t i, int64_t j)
{
	int64_t idx[2] = { i, j };

	return at(t, idx);
}

static uint64_t materialized(void)
{
	npt_stats_t st;

	npt_stats_get(&st);
	return st.materialized_bytes;
}

/* ------------------------------------------------------------------ take */

TEST(take_rows_of_a_read_only_table)
{
	enum { V = 50, H = 24 };
	static float table[V * H];
	int64_t ts[2] = { V, H }, is[2] = { 3, 4 };
	int64_t ids[12] = { 0, 49, 7, 7, -1, -50, 3, 12, 25, 1, 2, 48 };
	npt_tensor_t *t, *ix, *r;
	uint64_t m0 = materialized();

	for (int i = 0; i < V * H; i++)
		table[i] = (float)i * 0.5f;
	ASSERT_EQ(NPT_OK, npt_tensor_from_data(table, NPT_F32, 2, ts, NULL, NPT_BORROW_READONLY,
					       NULL, NULL, &t));
	ASSERT_EQ(NPT_OK, npt_tensor_from_data(ids, NPT_I64, 2, is, NULL, NPT_BORROW_READONLY, NULL,
					       NULL, &ix));
	ASSERT_EQ(NPT_OK, npt_take(t, ix, 0, &r));
	ASSERT_EQ(3, npt_tensor_ndim(r));
	ASSERT_EQ(3, npt_tensor_shape(r)[0]);
	ASSERT_EQ(4, npt_tensor_shape(r)[1]);
	ASSERT_EQ(H, npt_tensor_shape(r)[2]);
	ASSERT_EQ(NPT_OK, npt_tensor_eval(r));
	for (int k = 0; k < 12; k++)
		for (int c = 0; c < H; c++) {
			int64_t row = ids[k] < 0 ? ids[k] + V : ids[k], idx[3] = { k / 4, k % 4, c };

			ASSERT_EQ(table[row * H + c], (float)at(r, idx));
		}
	ASSERT_EQ(m0, materialized());
	npt_tensor_free(r);
	npt_tensor_free(ix);
	npt_tensor_free(t);
}

TEST(take_any_axis_strides_and_index_dtypes)
{
	int64_t ts[3] = { 4, 5, 6 }, is[1] = { 5 };
	int8_t ids8[5] = { 2, -1, 0, 3, 3 };
	npt_tensor_t *a = randn(3, ts), *at_, *ix, *r;
	int perm[3] = { 2, 0, 1 };

	ASSERT_NE(NULL, a);
	/* a transposed (non-contiguous) source, axis 1 of [6, 4, 5] */
	ASSERT_EQ(NPT_OK, npt_tensor_permute(a, perm, &at_));
	ASSERT_EQ(NPT_OK, npt_tensor_from_data(ids8, NPT_I8, 1, is, NULL, 0, NULL, NULL, &ix));
	ASSERT_EQ(NPT_OK, npt_take(at_, ix, 1, &r));
	ASSERT_EQ(NPT_OK, npt_tensor_eval(r));
	ASSERT_EQ(6, npt_tensor_shape(r)[0]);
	ASSERT_EQ(5, npt_tensor_shape(r)[1]);
	ASSERT_EQ(5, npt_tensor_shape(r)[2]);
	for (int i = 0; i < 6; i++)
		for (int k = 0; k < 5; k++)
			for (int c = 0; c < 5; c++) {
				int64_t ri[3] = { i, k, c }, si[3] = { i, ids8[k] < 0 ? ids8[k] + 4 : ids8[k], c };

				ASSERT_EQ(at(at_, si), at(r, ri));
			}
	npt_tensor_free(r);
	/* axis -1, strided indices (every other element of an i32 vector) */
	int32_t ids32[6] = { 5, 99, 0, 99, 2, 99 };
	int64_t s2[1] = { 2 }, is3[1] = { 3 };

	npt_tensor_free(ix);
	ASSERT_EQ(NPT_OK, npt_tensor_from_data(ids32, NPT_I32, 1, is3, s2, 0, NULL, NULL, &ix));
	ASSERT_EQ(NPT_OK, npt_take(a, ix, -1, &r));
	ASSERT_EQ(NPT_OK, npt_tensor_eval(r));
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 5; j++)
			for (int k = 0; k < 3; k++) {
				int64_t ri[3] = { i, j, k }, si[3] = { i, j, ids32[2 * k] };

				ASSERT_EQ(at(a, si), at(r, ri));
			}
	npt_tensor_free(r);
	/* no index: an empty result */
	int64_t zero[1] = { 0 };

	npt_tensor_free(ix);
	ASSERT_EQ(NPT_OK, npt_tensor_from_data(ids32, NPT_I32, 1, zero, NULL, 0, NULL, NULL, &ix));
	ASSERT_EQ(NPT_OK, npt_take(a, ix, 0, &r));
	ASSERT_EQ(NPT_OK, npt_tensor_eval(r));
	ASSERT_EQ(0, npt_tensor_numel(r));
	npt_tensor_free(r);
	npt_tensor_free(ix);
	npt_tensor_free(at_);
	npt_tensor_free(a);
}

TEST(take_refusals)
{
	int64_t ts[2] = { 5, 3 }, is[1] = { 3 };
	int64_t ids[3] = { 1, 5, 0 };
	float fids[3] = { 0, 1, 2 };
	npt_tensor_t *a = randn(2, ts), *ix, *fx, *r = NULL;
	float *out;

	ASSERT_EQ(NPT_OK, npt_tensor_from_data(ids, NPT_I64, 1, is, NULL, 0, NULL, NULL, &ix));
	ASSERT_EQ(NPT_OK, npt_tensor_from_data(fids, NPT_F32, 1, is, NULL, 0, NULL, NULL, &fx));
	/* the bound is checked at evaluation, NumPy's message */
	ASSERT_EQ(NPT_OK, npt_take(a, ix, 0, &r));
	ASSERT_EQ(NPT_E_VALUE, npt_tensor_data(r, (void **)&out));
	ASSERT_STREQ("take: index 5 is out of bounds for axis 0 with size 5", npt_last_error());
	npt_tensor_free(r);
	ids[1] = -6;
	ASSERT_EQ(NPT_OK, npt_take(a, ix, 0, &r));
	ASSERT_EQ(NPT_E_VALUE, npt_tensor_eval(r));
	ASSERT_NE(NULL, strstr(npt_last_error(), "index -6 is out of bounds"));
	npt_tensor_free(r);
	ASSERT_EQ(NPT_E_DTYPE, npt_take(a, fx, 0, &r));
	ASSERT_NE(NULL, strstr(npt_last_error(), "must be integers"));
	ASSERT_EQ(NPT_E_AXIS, npt_take(a, ix, 2, &r));
	ASSERT_EQ(NPT_E_INVAL, npt_take(NULL, ix, 0, &r));
	ASSERT_EQ(NPT_E_INVAL, npt_take(a, NULL, 0, &r));
	ASSERT_EQ(NPT_E_INVAL, npt_take(a, ix, 0, NULL));
	npt_tensor_free(fx);
	npt_tensor_free(ix);
	npt_tensor_free(a);
}

/* ---------------------------------------------------------------- linear */

static double act(npt_activation_t a, double x)
{
	switch (a) {
	case NPT_ACT_GELU: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
	case NPT_ACT_TANH: return tanh(x);
	case NPT_ACT_RELU: return x > 0 ? x : 0;
	default: return x;
	}
}

/* y = act(x @ w^T + b) against doubles; x [M, K] and w [N, K] any views */
static double linear_error(npt_tensor_t *x, npt_tensor_t *w, npt_tensor_t *b,
			   npt_activation_t a, npt_tensor_t *y)
{
	int64_t M = npt_tensor_shape(x)[0], K = npt_tensor_shape(x)[1], N = npt_tensor_shape(w)[0];
	double worst = 0;

	for (int64_t i = 0; i < M; i++)
		for (int64_t j = 0; j < N; j++) {
			double s = 0, mag = 0;

			for (int64_t k = 0; k < K; k++) {
				s += at2(x, i, k) * at2(w, j, k);
				mag += fabs(at2(x, i, k) * at2(w, j, k));
			}
			if (b) {
				int64_t bi[1] = { j };

				s += at(b, bi);
				mag += fabs(at(b, bi));
			}
			double e = fabs(act(a, s) - at2(y, i, j)) / (mag + 1e-30);

			worst = e > worst || isnan(e) ? e : worst;	/* NaN stays */
			if (isnan(worst))
				return worst;
		}
	return worst;
}

TEST(linear_matches_reference_on_views)
{
	int64_t xs[2] = { 37, 48 }, ws[2] = { 60, 48 }, wts[2] = { 48, 60 }, bs[1] = { 60 };
	npt_tensor_t *x = randn(2, xs), *w = randn(2, ws), *wt = randn(2, wts), *b = randn(1, bs);
	npt_tensor_t *cases[4], *bias[4], *y;
	static const npt_activation_t acts[4] = { NPT_ACT_NONE, NPT_ACT_GELU, NPT_ACT_TANH,
						  NPT_ACT_RELU };
	static float wro[60 * 48];
	uint64_t m0 = materialized();
	float *wp;

	ASSERT_NE(NULL, x);
	/* the weight as stored, read-only; a transposed view; a row slice; a
	 * column slice (the two tensor-parallel splits) */
	npt_tensor_data(w, (void **)&wp);
	memcpy(wro, wp, sizeof(wro));
	ASSERT_EQ(NPT_OK, npt_tensor_from_data(wro, NPT_F32, 2, ws, NULL, NPT_BORROW_READONLY, NULL,
					       NULL, &cases[0]));
	ASSERT_EQ(NPT_OK, npt_tensor_transpose(wt, 0, 1, &cases[1]));
	ASSERT_EQ(NPT_OK, npt_tensor_slice(cases[0], 0, 20, 40, 1, &cases[2]));
	int64_t ws3[2] = { 60, 96 };
	npt_tensor_t *wide = randn(2, ws3);

	ASSERT_EQ(NPT_OK, npt_tensor_slice(wide, 1, 48, 96, 1, &cases[3]));
	bias[0] = b;
	bias[1] = NULL;
	ASSERT_EQ(NPT_OK, npt_tensor_slice(b, 0, 20, 40, 1, &bias[2]));
	ASSERT_EQ(NPT_OK, npt_tensor_slice(b, 0, 59, NPT_SLICE_END, -1, &bias[3])); /* stride -1 */
	for (int c = 0; c < 4; c++)
		for (int a = 0; a < 4; a++) {
			ASSERT_EQ(NPT_OK, npt_linear(x, cases[c], bias[c], acts[a], &y)) {
				TH_LOG("%s", npt_last_error());
			}
			ASSERT_EQ(NPT_OK, npt_tensor_eval(y));
			double e = linear_error(x, cases[c], bias[c], acts[a], y);

			ASSERT_TRUE(e < 2e-6) {
				TH_LOG("weight case %d, activation %d: relative error %g", c, a, e);
			}
			npt_tensor_free(y);
		}
	/* only the reversed bias (stride -1) needed a copy: 60 floats per use */
	ASSERT_EQ(m0 + 4 * 60 * sizeof(float), materialized());
	for (int c = 0; c < 4; c++)
		npt_tensor_free(cases[c]);
	npt_tensor_free(bias[2]);
	npt_tensor_free(bias[3]);
	npt_tensor_free(wide);
	npt_tensor_free(x);
	npt_tensor_free(w);
	npt_tensor_free(wt);
	npt_tensor_free(b);
}

/*
 * The GEMM backend: oneDNN whenever libdnnl.so.2 opens (unless NPT_GEMM says
 * openblas), whatever OPENBLAS_CORETYPE says; then a product with BERT's
 * inner sizes (K = 768 and 3072, N = 2304 and 768, rows not a multiple of
 * any block), bias and GELU, against the double reference.
 */
/*
 * The GEMM's self-check on a real CPU where oneDNN is wrong: without VNNI,
 * oneDNN 2.6.3's s8 x s8 product saturates on full-range int8 (its 16-bit
 * pair sums), so with its ISA capped below VNNI (DNNL_MAX_CPU_ISA, read at
 * oneDNN's first use: each test runs in a fresh process) the check must name
 * the int8 product and int8 weights must be refused for that reason, while
 * the f32 product stays on oneDNN and right.
 */
/*
 * Each activation over the whole line, fused into a linear layer with plain
 * and with packed float32 weights (the tiles' in-register epilogue, or the
 * rows' where the CPU has no tiles): y = act(x * 1 + 0) for x on a grid of
 * [-12, 12], powers of two down to 2^-60, huge values, infinities and NaN,
 * 70 output columns (64 in a full vector block, 6 masked). GELU within
 * 4e-7 |x| of the double formula (the vector erf is within 3.2e-7 of erf),
 * tanh within 4 ulp, ReLU exact; NaN stays NaN; GELU(+inf) is +inf.
 */
TEST(linear_activations_accurate_over_their_range)
{
	enum { GRID = 4801, N = 70 };
	static const npt_activation_t acts[3] = { NPT_ACT_GELU, NPT_ACT_TANH, NPT_ACT_RELU };
	static float xv[GRID + 140];
	int64_t M = 0, ws[2] = { N, 1 }, bs[1] = { N }, xs[2];
	npt_tensor_t *x, *w, *pk = NULL, *b, *y;
	char tag[NPT_PACK_TAG_MAX];
	size_t nbytes;
	void *packed;
	float *pw, *pb;
	npt_status_t s;
	int forms;

	for (int i = 0; i < GRID; i++)
		xv[M++] = -12.0f + 24.0f * (float)i / (GRID - 1);
	for (int e = 0; e <= 60; e++) {
		xv[M++] = ldexpf(1.0f, -e);
		xv[M++] = -ldexpf(1.0f, -e);
	}
	xv[M++] = 3.0e38f;
	xv[M++] = -3.0e38f;
	xv[M++] = INFINITY;
	xv[M++] = NAN;
	xs[0] = M;
	xs[1] = 1;
	ASSERT_EQ(NPT_OK, npt_tensor_from_data(xv, NPT_F32, 2, xs, NULL, NPT_BORROW_READONLY, NULL,
					       NULL, &x));
	ASSERT_EQ(NPT_OK, npt_tensor_empty(NPT_F32, 2, ws, &w));
	ASSERT_EQ(NPT_OK, npt_tensor_empty(NPT_F32, 1, bs, &b));
	ASSERT_EQ(NPT_OK, npt_tensor_data(w, (void **)&pw));
	ASSERT_EQ(NPT_OK, npt_tensor_data(b, (void **)&pb));
	for (int j = 0; j < N; j++) {
		pw[j] = 1.0f;
		pb[j] = 0.0f;
	}
	/* packed weights where this build packs them (with oneDNN) */
	s = npt_pack_query(NPT_F32, N, 1, tag, sizeof(tag), &nbytes);
	ASSERT_TRUE(s == NPT_OK || s == NPT_E_UNSUPPORTED);
	forms = s == NPT_OK ? 2 : 1;
	packed = s == NPT_OK ? aligned_alloc(64, (nbytes + 63) / 64 * 64) : NULL;
	if (forms == 2) {
		ASSERT_NE(NULL, packed);
		ASSERT_EQ(NPT_OK, npt_pack_weight(w, tag, packed, nbytes));
		ASSERT_EQ(NPT_OK, npt_tensor_from_packed(tag, packed, nbytes, N, 1, &pk));
	}
	for (int form = 0; form < forms; form++)
		for (int a = 0; a < 3; a++) {
			double worst = 0;
			float *py;

			ASSERT_EQ(NPT_OK, npt_linear(x, form ? pk : w, b, acts[a], &y));
			ASSERT_EQ(NPT_OK, npt_tensor_eval(y)) {
				TH_LOG("%s", npt_last_error());
			}
			ASSERT_EQ(NPT_OK, npt_tensor_data(y, (void **)&py));
			for (int64_t i = 0; i < M; i++)
				for (int j = 0; j < N; j++) {
					float v = py[i * N + j], in = xv[i];

					if (isnan(in)) {
						ASSERT_TRUE(isnan(v)) {
							TH_LOG("%s weights, activation %d of NaN: %g",
							       form ? "packed" : "plain", acts[a], v);
						}
						continue;
					}
					if (isinf(in) || fabsf(in) > 1e30f) {
						double want = acts[a] == NPT_ACT_TANH ? (in > 0 ? 1 : -1) :
							      in > 0 ? in : 0;

						ASSERT_TRUE(v == want) {
							TH_LOG("%s %s act %d of %g: %g", form ? "packed" :
							       "plain", "weights", acts[a], in, v);
						}
						continue;
					}
					double want = act(acts[a], in);
					double tol = acts[a] == NPT_ACT_GELU ? 4e-7 * fabs(in) :
						     acts[a] == NPT_ACT_TANH ? 4.8e-7 * fabs(want) : 0;
					double e = fabs(v - want) - tol;

					worst = e > worst ? e : worst;
					ASSERT_TRUE(e <= 0) {
						TH_LOG("%s weights, activation %d of %.9g (column %d): "
						       "%.9g, want %.9g", form ? "packed" : "plain",
						       acts[a], in, j, v, want);
					}
				}
			npt_tensor_free(y);
		}
	npt_tensor_free(pk);
	npt_tensor_free(x);
	npt_tensor_free(w);
	npt_tensor_free(b);
	free(packed);
}

TEST(gemm_self_check_refuses_int8_without_vnni)
{
	int64_t xs[2] = { 9, 40 }, ws[2] = { 70, 40 };
	const char *isa = __builtin_cpu_supports("avx512bw") ? "AVX512_CORE" : "AVX2";
	void *dnnl = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
	const char *want = getenv("NPT_GEMM"), *chk;
	char tag[256];
	size_t nbytes = 0;
	npt_tensor_t *x, *w, *y;

	if (dnnl)
		dlclose(dnnl);
	if (!dnnl || (want && !strcmp(want, "openblas")))
		SKIP(return, "the GEMM is not on oneDNN here (libdnnl.so.2 missing or NPT_GEMM=openblas)");
	if (!__builtin_cpu_supports("avx2"))
		SKIP(return, "no AVX2: oneDNN's int8 kernels are its reference code here");
	setenv("DNNL_MAX_CPU_ISA", isa, 1);
	chk = npt_gemm_self_check();
	ASSERT_NE(NULL, chk) {
		TH_LOG("DNNL_MAX_CPU_ISA=%s: the self-check found nothing wrong", isa);
	}
	ASSERT_NE(NULL, strstr(chk, "int8 product is wrong")) {
		TH_LOG("self-check: %s", chk);
	}
	ASSERT_EQ(0, strncmp(npt_gemm_backend(), "onednn", 6)) {
		TH_LOG("backend %s", npt_gemm_backend());
	}
	ASSERT_NE(NPT_OK, npt_pack_query(NPT_I8, 768, 768, tag, sizeof(tag), &nbytes));
	ASSERT_NE(NULL, strstr(npt_last_error(), "self-check")) {
		TH_LOG("%s", npt_last_error());
	}
	x = randn(2, xs);
	w = randn(2, ws);
	ASSERT_EQ(NPT_OK, npt_linear(x, w, NULL, NPT_ACT_TANH, &y));
	ASSERT_EQ(NPT_OK, npt_tensor_eval(y));
	ASSERT_TRUE(linear_error(x, w, NULL, NPT_ACT_TANH, y) < 2e-6);
	npt_tensor_free(y);
	npt_tensor_free(w);
	npt_tensor_free(x);
}

TEST(linear_gemm_backend_and_large_shapes)
{
	const char *want = getenv("NPT_GEMM"), *got;
	void *dnnl = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
	static const int64_t sh[2][3] = { { 7, 2304, 768 }, { 3, 768, 3072 } };
	npt_tensor_t *y;

	for (int i = 0; i < 2; i++) {
		int64_t xs[2] = { sh[i][0], sh[i][2] }, ws[2] = { sh[i][1], sh[i][2] };
		int64_t bs[1] = { sh[i][1] };
		npt_tensor_t *x = randn(2, xs), *w = randn(2, ws), *b = randn(1, bs);

		ASSERT_NE(NULL, b);
		ASSERT_EQ(NPT_OK, npt_linear(x, w, b, NPT_ACT_GELU, &y));
		ASSERT_EQ(NPT_OK, npt_tensor_eval(y));
		double e = linear_error(x, w, b, NPT_ACT_GELU, y);

		ASSERT_TRUE(e < 2e-6) {
			TH_LOG("[%lld, %lld] x [%lld, %lld]^T: relative error %g on %s",
			       (long long)xs[0], (long long)xs[1], (long long)ws[0],
			       (long long)ws[1], e, npt_gemm_backend());
		}
		npt_tensor_free(y);
		npt_tensor_free(x);
		npt_tensor_free(w);
		npt_tensor_free(b);
	}
	got = npt_gemm_backend();
	TH_LOG("GEMM backend: %s", got);
	if (want && !strcmp(want, "openblas")) {
		ASSERT_STREQ("openblas", got);
	} else if (dnnl) {
		ASSERT_EQ(0, strncmp(got, "onednn 2.", 9)) {
			TH_LOG("libdnnl.so.2 opens here but the GEMM runs on %s", got);
		}
	}
	if (dnnl)
		dlclose(dnnl);
	if (!dnnl && !(want && !strcmp(want, "openblas")))
		SKIP(return, "libdnnl.so.2 is not installed: the OpenBLAS path was tested");
}

/* the library runs packed float32 products with few rows and attention on
 * its register tiles: a CPU with AVX2 and FMA, the kernels not capped to C */
static int tiles_expected(void)
{
	const char *cap = getenv("NPT_KERNEL_ISA");

	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
	       !(cap && !strcmp(cap, "c"));
}

/*
 * Packed weights: packed once, attached, the plain copy then overwritten with
 * garbage, and linear still matches the reference computed before: the
 * product reads the packed bytes in place, at 1 and 2 threads, N a multiple
 * of the column block and not, rows in one block of the register tiles and
 * in two (300 rows), K in one block and in three (2500). A tag from another CPU is refused with both
 * tags named and the plain weight is used.
 */
TEST(linear_packed_weights_in_place_and_foreign_tags_refused)
{
	static const int64_t sh[4][3] = { { 9, 200, 96 }, { 33, 768, 768 }, { 300, 136, 40 },
					  { 20, 130, 2500 } };
	const char *mode = getenv("NPT_GEMM");
	char tag[NPT_PACK_TAG_MAX], bad[NPT_PACK_TAG_MAX + 16];
	size_t nbytes = 0;

	if (mode && !strcmp(mode, "openblas")) {
		ASSERT_EQ(NPT_E_UNSUPPORTED, npt_pack_query(NPT_F32, 200, 96, tag, sizeof(tag), &nbytes));
		ASSERT_NE(NULL, strstr(npt_last_error(), "OpenBLAS"));
		return;
	}
	if (npt_pack_query(NPT_F32, 200, 96, tag, sizeof(tag), &nbytes) == NPT_E_UNSUPPORTED)
		SKIP(return, "nothing to pack here: %s", npt_last_error());
	/* a short tag buffer is told the size the whole tag needs, which then fits */
	{
		char need[64], small[8];
		size_t len = strlen(tag);

		snprintf(need, sizeof(need), "the tag needs %zu bytes, the buffer has 8", len + 1);
		ASSERT_EQ(NPT_E_INVAL, npt_pack_query(NPT_F32, 200, 96, small, sizeof(small), &nbytes));
		ASSERT_NE(NULL, strstr(npt_last_error(), need)) {
			TH_LOG("%s (want '%s')", npt_last_error(), need);
		}
		ASSERT_EQ(NPT_E_INVAL, npt_pack_query(NPT_F32, 200, 96, bad, len, &nbytes));
		ASSERT_EQ(NPT_OK, npt_pack_query(NPT_F32, 200, 96, bad, len + 1, &nbytes));
		ASSERT_STREQ(tag, bad);
	}
	for (int i = 0; i < 4; i++) {
		int64_t xs[2] = { sh[i][0], sh[i][2] }, ws[2] = { sh[i][1], sh[i][2] };
		int64_t bs[1] = { sh[i][1] }, n = sh[i][1], k = sh[i][2];
		npt_tensor_t *x = randn(2, xs), *w = randn(2, ws), *b = randn(1, bs), *keep, *y;
		float *wp, *packed, *kp;

		ASSERT_NE(NULL, b);
		ASSERT_EQ(NPT_OK, npt_pack_query(NPT_F32, n, k, tag, sizeof(tag), &nbytes));
		ASSERT_EQ(0, strncmp(tag, "onednn-", 7));
		ASSERT_TRUE(nbytes >= (size_t)(n * k) * sizeof(float));
		packed = aligned_alloc(64, (nbytes + 63) / 64 * 64);
		ASSERT_NE(NULL, packed);
		ASSERT_EQ(NPT_OK, npt_pack_weight(w, tag, packed, nbytes)) {
			TH_LOG("%s", npt_last_error());
		}
		/* the reference needs the plain values: keep a copy (of the bytes:
		 * contiguous() of a contiguous tensor shares them), then spoil w */
		ASSERT_EQ(NPT_OK, npt_tensor_empty(NPT_F32, 2, ws, &keep));
		ASSERT_EQ(NPT_OK, npt_tensor_data(w, (void **)&wp));
		ASSERT_EQ(NPT_OK, npt_tensor_data(keep, (void **)&kp));
		memcpy(kp, wp, sizeof(float) * (size_t)(n * k));
		ASSERT_EQ(NPT_OK, npt_tensor_set_packed(w, tag, packed, nbytes)) {
			TH_LOG("%s", npt_last_error());
		}
		npt_tensor_data(w, (void **)&wp);
		for (int64_t e = 0; e < n * k; e++)
			wp[e] = NAN;
		float *y1 = malloc(sizeof(float) * (size_t)(sh[i][0] * n)), *yp;

		ASSERT_NE(NULL, y1);
		for (int threads = 1; threads <= 2; threads++) {
			ASSERT_EQ(NPT_OK, npt_set_num_threads(threads));
			ASSERT_EQ(NPT_OK, npt_linear(x, w, b, NPT_ACT_GELU, &y));
			ASSERT_EQ(NPT_OK, npt_tensor_eval(y));
			double e = linear_error(x, keep, b, NPT_ACT_GELU, y);

			ASSERT_TRUE(e < 2e-6) {
				TH_LOG("[%lld, %lld] packed, %d threads: relative error %g",
				       (long long)n, (long long)k, threads, e);
			}
			/* on the register tiles (AVX2+FMA, unless NPT_KERNEL_ISA=c)
			 * each output is one chain of operations whatever the
			 * thread count: the same bits */
			ASSERT_EQ(NPT_OK, npt_tensor_data(y, (void **)&yp));
			if (threads == 1)
				memcpy(y1, yp, sizeof(float) * (size_t)(sh[i][0] * n));
			else if (tiles_expected())
				ASSERT_EQ(0, memcmp(y1, yp, sizeof(float) * (size_t)(sh[i][0] * n)));
			npt_tensor_free(y);
		}
		free(y1);
		/* wrong size, misaligned, wrong shape */
		ASSERT_EQ(NPT_E_INVAL, npt_tensor_set_packed(w, tag, packed, nbytes - 4));
		ASSERT_EQ(NPT_E_INVAL, npt_tensor_set_packed(w, tag, (char *)packed + 4, nbytes));
		ASSERT_EQ(NPT_E_SHAPE, npt_tensor_set_packed(b, tag, packed, nbytes));
		ASSERT_EQ(NPT_E_INVAL, npt_pack_weight(keep, "onednn-0.0.0/x", packed, nbytes));
		/* a tag another CPU would write: refused, both named, w stays plain */
		char *isa = strchr(tag, '/');

		ASSERT_NE(NULL, isa);
		snprintf(bad, sizeof(bad), "%.*s/avx2_vnni%s", (int)(isa - tag), tag,
			 strchr(isa + 1, '/'));
		ASSERT_EQ(NPT_OK, npt_tensor_set_packed(w, NULL, NULL, 0));
		npt_tensor_free(w);
		w = keep;
		keep = NULL;
		ASSERT_EQ(NPT_E_UNSUPPORTED, npt_tensor_set_packed(w, bad, packed, nbytes));
		ASSERT_NE(NULL, strstr(npt_last_error(), bad));
		ASSERT_NE(NULL, strstr(npt_last_error(), tag));
		memset(packed, 0xff, nbytes);   /* NaNs if anything read it */
		ASSERT_EQ(NPT_OK, npt_linear(x, w, b, NPT_ACT_NONE, &y));
		ASSERT_EQ(NPT_OK, npt_tensor_eval(y));
		ASSERT_TRUE(linear_error(x, w, b, NPT_ACT_NONE, y) < 2e-6);
		npt_tensor_free(y);
		free(packed);
		npt_tensor_free(x);
		npt_tensor_free(w);
		npt_tensor_free(b);
	}
	ASSERT_EQ(NPT_OK, npt_set_num_threads(0));
}

/* v rounded to bfloat16, nearest even */
static double bf16_round(float v)
{
	uint32_t u;
	float r;

	memcpy(&u, &v, sizeof(u));
	u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
	memcpy(&r, &u, sizeof(r));
	return r;
}

/* largest |a - b| of two float tensors of one shape, compared in float32
 * (exact for f16 and bf16); NaN if either holds a NaN */
static double max_abs_diff(npt_tensor_t *a, npt_tensor_t *b)
{
	npt_tensor_t *fa = NULL, *fb = NULL;
	float *pa, *pb;
	double worst = 0;

	if (npt_tensor_cast(a, NPT_F32, &fa) || npt_tensor_cast(b, NPT_F32, &fb) ||
	    npt_tensor_data(fa, (void **)&pa) || npt_tensor_data(fb, (void **)&pb))
		worst = NAN;
	for (int64_t i = 0; worst == 0 && i < npt_tensor_numel(a); i++)
		worst = pa[i] != pa[i] || pb[i] != pb[i] ? NAN :
			fmax(worst, fabs((double)pa[i] - pb[i]));
	npt_tensor_free(fa);
	npt_tensor_free(fb);
	return worst;
}

/*
 * Weights with no plain copy (a model stored packed-only): npt_unpack_weight
 * reads every layout npt_pack_query makes back from its tag alone (f32 exact,
 * bf16 the rounded values, int8 q * scale[n] within half a scale step), also
 * when the tag names another CPU; npt_tensor_from_packed gives a weight that
 * npt_linear reads in place (its input rows strided too) and nothing else
 * can read; tags this library does not know are refused before any byte is
 * read, bytes that do not fit the tag too.
 */
TEST(weights_packed_only_read_in_place_or_unpacked)
{
	/* NPT_F64 stands for bf16x3 (npt_pack_query_bf16x3) */
	static const npt_dtype_t dts[4] = { NPT_F32, NPT_BF16, NPT_I8, NPT_F64 };
	const char *mode = getenv("NPT_GEMM");
	int64_t n = 200, k = 96, M = 9;
	int64_t ws[2] = { n, k }, xs[2] = { 2 * M, k }, bs[1] = { n };
	npt_tensor_t *w = randn(2, ws), *x = randn(2, xs), *b = randn(1, bs);
	char tag[NPT_PACK_TAG_MAX], other[NPT_PACK_TAG_MAX + 32];
	size_t nbytes;
	float *pw, *plain = malloc((size_t)(n * k) * sizeof(float));

	ASSERT_NE(NULL, b);
	ASSERT_NE(NULL, plain);
	npt_tensor_data(w, (void **)&pw);
	if (mode && !strcmp(mode, "openblas"))
		SKIP(return, "nothing is packed on OpenBLAS");
	if (npt_pack_query(NPT_F32, n, k, tag, sizeof(tag), &nbytes) == NPT_E_UNSUPPORTED)
		SKIP(return, "nothing to pack here: %s", npt_last_error());
	for (int d = 0; d < 4; d++) {
		npt_tensor_t *pk, *y, *y0, *view, *sum, *rows;
		char *packed, *isa;
		double worst = 0;

		if (dts[d] == NPT_F64 ? npt_pack_query_bf16x3(n, k, tag, sizeof(tag), &nbytes) :
		    npt_pack_query(dts[d], n, k, tag, sizeof(tag), &nbytes)) {
			TH_LOG("%s not packed here: %s", dts[d] == NPT_F64 ? "bf16x3" :
			       npt_dtype_name(dts[d]), npt_last_error());
			continue;
		}
		packed = aligned_alloc(64, (nbytes + 63) / 64 * 64);
		ASSERT_NE(NULL, packed);
		ASSERT_EQ(NPT_OK, npt_pack_weight(w, tag, packed, nbytes));
		/* unpacked: the values the packed product computes with */
		ASSERT_EQ(NPT_OK, npt_unpack_weight(tag, packed, nbytes, n, k, plain)) {
			TH_LOG("%s", npt_last_error());
		}
		for (int64_t r = 0; r < n; r++) {
			float amax = 0;

			for (int64_t c = 0; c < k; c++)
				amax = fmaxf(amax, fabsf(pw[r * k + c]));
			for (int64_t c = 0; c < k; c++) {
				float v = pw[r * k + c], u = plain[r * k + c];
				double hi = bf16_round(v);
				double e = dts[d] == NPT_F32 ? fabs(u - v) :
					   dts[d] == NPT_BF16 ? fabs(u - hi) :
					   dts[d] == NPT_F64 ?
					   fabs(u - (hi + bf16_round((float)(v - hi)))) :
					   fabs(u - v) / (amax / 127.0f);

				worst = e > worst ? e : worst;
			}
		}
		ASSERT_TRUE(dts[d] == NPT_I8 ? worst <= 0.5 + 1e-4 : worst == 0) {
			TH_LOG("%s unpacked: worst error %g", npt_dtype_name(dts[d]), worst);
		}
		/* the same bytes under another CPU's tag: not read in place, still unpacked */
		isa = strchr(tag, '/');
		snprintf(other, sizeof(other), "%.*s/avx2%s", (int)(isa - tag), tag,
			 strchr(isa + 1, '/'));
		ASSERT_EQ(NPT_E_UNSUPPORTED, npt_tensor_from_packed(other, packed, nbytes, n, k, &pk));
		ASSERT_NE(NULL, strstr(npt_last_error(), other));
		ASSERT_EQ(NPT_OK, npt_unpack_weight(other, packed, nbytes, n, k, plain));
		/* read in place: the same result as the plain weight with the layout attached */
		ASSERT_EQ(NPT_OK, npt_tensor_from_packed(tag, packed, nbytes, n, k, &pk)) {
			TH_LOG("%s", npt_last_error());
		}
		ASSERT_EQ(NPT_OK, npt_tensor_set_packed(w, tag, packed, nbytes));
		ASSERT_EQ(NPT_OK, npt_linear(x, pk, b, NPT_ACT_GELU, &y));
		ASSERT_EQ(NPT_OK, npt_linear(x, w, b, NPT_ACT_GELU, &y0));
		ASSERT_EQ(NPT_OK, npt_tensor_eval(y));
		ASSERT_EQ(NPT_OK, npt_tensor_eval(y0));
		ASSERT_EQ(0.0, max_abs_diff(y, y0));
		npt_tensor_free(y);
		/* strided input rows (every other row, as hidden[:, 0, :]) */
		ASSERT_EQ(NPT_OK, npt_tensor_slice(x, 0, 0, 2 * M, 2, &rows));
		ASSERT_EQ(NPT_OK, npt_linear(rows, pk, NULL, NPT_ACT_NONE, &y));
		ASSERT_EQ(NPT_OK, npt_tensor_eval(y)) {
			TH_LOG("%s", npt_last_error());
		}
		npt_tensor_free(y);
		npt_tensor_free(rows);
		ASSERT_EQ(NPT_OK, npt_tensor_set_packed(w, NULL, NULL, 0));
		npt_tensor_free(y0);
		/* nothing else reads its elements */
		ASSERT_EQ(NPT_E_UNSUPPORTED, npt_tensor_data(pk, (void **)&pw));
		ASSERT_EQ(NPT_E_UNSUPPORTED, npt_tensor_transpose(pk, 0, 1, &view));
		ASSERT_EQ(NPT_OK, npt_add(pk, pk, &sum));
		ASSERT_EQ(NPT_E_UNSUPPORTED, npt_tensor_eval(sum));
		ASSERT_NE(NULL, strstr(npt_last_error(), "packed layout"));
		npt_tensor_free(sum);
		ASSERT_EQ(NPT_OK, npt_linear(pk, w, NULL, NPT_ACT_NONE, &sum));
		ASSERT_EQ(NPT_E_UNSUPPORTED, npt_tensor_eval(sum));
		npt_tensor_free(sum);
		/* a reduction and a softmax of it: refused in their own names */
		ASSERT_EQ(NPT_OK, npt_reduce(NPT_RED_SUM, pk, -1, NULL, false, &sum));
		ASSERT_EQ(NPT_E_UNSUPPORTED, npt_tensor_eval(sum));
		ASSERT_EQ(0, strncmp(npt_last_error(), "sum: ", 5)) {
			TH_LOG("%s", npt_last_error());
		}
		npt_tensor_free(sum);
		ASSERT_EQ(NPT_OK, npt_softmax(pk, -1, &sum));
		ASSERT_EQ(NPT_E_UNSUPPORTED, npt_tensor_eval(sum));
		ASSERT_EQ(0, strncmp(npt_last_error(), "softmax: ", 9)) {
			TH_LOG("%s", npt_last_error());
		}
		npt_tensor_free(sum);
		ASSERT_EQ(NPT_E_UNSUPPORTED, npt_pack_weight(pk, tag, packed, nbytes));
		ASSERT_EQ(NPT_E_UNSUPPORTED, npt_tensor_set_packed(pk, NULL, NULL, 0));
		npt_tensor_free(pk);
		npt_tensor_data(w, (void **)&pw);
		/* tags not understood: nothing read; bytes that do not fit */
		ASSERT_EQ(NPT_E_UNSUPPORTED, npt_unpack_weight("npt-q4_0/g32-f16/200x96", packed,
							       nbytes, n, k, plain));
		ASSERT_EQ(NPT_E_UNSUPPORTED, npt_unpack_weight("onednn-2.6.3/avx2/f64/k96.n200/"
							       "pad96.256/str64.6144/blk64n", packed,
							       nbytes, n, k, plain));
		snprintf(other, sizeof(other), "%s/more", tag);
		ASSERT_EQ(NPT_E_UNSUPPORTED, npt_unpack_weight(other, packed, nbytes, n, k, plain));
		ASSERT_EQ(NPT_E_INVAL, npt_unpack_weight(tag, packed, nbytes / 2, n, k, plain));
		ASSERT_EQ(NPT_E_INVAL, npt_unpack_weight(tag, packed, nbytes, n + 1, k, plain));
		free(packed);
	}
	free(plain);
	npt_tensor_free(w);
	npt_tensor_free(x);
	npt_tensor_free(b);
}

/*
 * bias + residual + LayerNorm in one pass: layernorm (and softmax) of a lazy
 * elementwise chain computes the chain row by row inside its kernel, so only
 * the output is allocated; the result is bitwise the unfused one (the chain
 * evaluated into a tensor first, then normalised), for f32 and f16, any
 * thread count, a broadcast bias, a strided residual and rows longer than a
 * block.
 */
TEST(layernorm_and_softmax_fuse_their_elementwise_input)
{
	static const int64_t shapes[3][2] = { { 33, 768 }, { 7, 5000 }, { 1, 1 } };
	static const npt_dtype_t dts[2] = { NPT_F32, NPT_F16 };

	for (int si = 0; si < 3; si++) {
		for (int di = 0; di < 2; di++) {
			int64_t T = shapes[si][0], H = shapes[si][1], th[2] = { T, H };
			int64_t h[1] = { H }, t2h[2] = { T, 2 * H };
			npt_tensor_t *y0 = randn(2, th), *wide = randn(2, t2h), *bias = randn(1, h);
			npt_tensor_t *g = randn(1, h), *b = randn(1, h), *y, *resid, *rs, *b0 = bias;
			npt_stats_t st;

			ASSERT_NE(NULL, b);
			ASSERT_EQ(NPT_OK, npt_tensor_cast(y0, dts[di], &y));
			ASSERT_EQ(NPT_OK, npt_tensor_eval(y));
			ASSERT_EQ(NPT_OK, npt_tensor_cast(b0, dts[di], &bias));
			ASSERT_EQ(NPT_OK, npt_tensor_eval(bias));
			npt_tensor_free(b0);
			/* a strided residual: every other column of a wider tensor */
			ASSERT_EQ(NPT_OK, npt_tensor_slice(wide, 1, 0, 2 * H, 2, &rs));
			ASSERT_EQ(NPT_OK, npt_tensor_cast(rs, dts[di], &resid));
			ASSERT_EQ(NPT_OK, npt_tensor_eval(resid));
			for (int threads = 1; threads <= 2; threads++) {
				npt_tensor_t *s1, *s2, *ln, *ln0, *sm, *sm0, *sum;

				ASSERT_EQ(NPT_OK, npt_set_num_threads(threads));
				/* unfused: the chain into a tensor, then the row ops */
				ASSERT_EQ(NPT_OK, npt_add(y, bias, &s1));
				ASSERT_EQ(NPT_OK, npt_add(s1, resid, &sum));
				ASSERT_EQ(NPT_OK, npt_tensor_eval(sum));
				ASSERT_EQ(NPT_OK, npt_layernorm(sum, -1, g, b, 1e-12, &ln0));
				ASSERT_EQ(NPT_OK, npt_softmax(sum, -1, &sm0));
				ASSERT_EQ(NPT_OK, npt_tensor_eval(ln0));
				ASSERT_EQ(NPT_OK, npt_tensor_eval(sm0));
				npt_tensor_free(sum);
				/* fused: one pass, only the output allocated */
				ASSERT_EQ(NPT_OK, npt_add(s1, resid, &s2));
				ASSERT_EQ(NPT_OK, npt_layernorm(s2, -1, g, b, 1e-12, &ln));
				npt_tensor_free(s2);
				npt_stats_reset();
				ASSERT_EQ(NPT_OK, npt_tensor_eval(ln));
				npt_stats_get(&st);
				ASSERT_EQ((uint64_t)(T * H) * npt_dtype_size(npt_tensor_dtype(ln)),
					  st.os_bytes + st.reused_bytes + st.inplace_bytes);
				ASSERT_EQ(0, st.materialized_bytes);
				ASSERT_EQ(0.0, max_abs_diff(ln, ln0)) {
					TH_LOG("layernorm [%lld, %lld] %s, %d threads: fused differs",
					       (long long)T, (long long)H, npt_dtype_name(dts[di]),
					       threads);
				}
				ASSERT_EQ(NPT_OK, npt_add(s1, resid, &s2));
				ASSERT_EQ(NPT_OK, npt_softmax(s2, -1, &sm));
				npt_tensor_free(s2);
				ASSERT_EQ(NPT_OK, npt_tensor_eval(sm));
				ASSERT_EQ(0.0, max_abs_diff(sm, sm0));
				npt_tensor_free(s1);
				npt_tensor_free(ln);
				npt_tensor_free(ln0);
				npt_tensor_free(sm);
				npt_tensor_free(sm0);
			}
			npt_tensor_free(y0);
			npt_tensor_free(y);
			npt_tensor_free(wide);
			npt_tensor_free(rs);
			npt_tensor_free(resid);
			npt_tensor_free(bias);
			npt_tensor_free(g);
			npt_tensor_free(b);
		}
	}
	ASSERT_EQ(NPT_OK, npt_set_num_threads(0));
}

/*
 * int8 weights: quantised per output channel at packing, the input per row
 * at each product, int32 sums. Two checks per element: against the same
 * arithmetic replayed here in double (the exact integer sum, the scales as
 * the library computes them in float): within 1e-6 of the magnitude; and
 * against the float64 product of the unquantised values: within the bound
 * the two roundings allow, sum_k |x| sw/2 + |w| sa/2 + 3 sa sw/4 (sa, sw the
 * row's and the channel's scale), times 1.13 for GELU (its steepest slope).
 */
static int8_t q8(float v, float inv)
{
	float r = nearbyintf(v * inv);

	return (int8_t)(r > 127 ? 127 : r < -127 ? -127 : r);
}

TEST(linear_int8_weights_exact_sums_and_quantisation_bound)
{
	static const int64_t sh[2][3] = { { 9, 200, 96 }, { 40, 768, 768 } };
	const char *mode = getenv("NPT_GEMM");
	char tag[NPT_PACK_TAG_MAX];
	size_t nbytes;

	if (mode && !strcmp(mode, "openblas")) {
		ASSERT_EQ(NPT_E_UNSUPPORTED, npt_pack_query(NPT_I8, 200, 96, tag, sizeof(tag), &nbytes));
		return;
	}
	if (npt_pack_query(NPT_I8, 200, 96, tag, sizeof(tag), &nbytes) == NPT_E_UNSUPPORTED)
		SKIP(return, "no int8 layout here: %s", npt_last_error());
	ASSERT_NE(NULL, strstr(tag, "/s8/"));
	for (int i = 0; i < 2; i++) {
		int64_t M = sh[i][0], N = sh[i][1], K = sh[i][2];
		int64_t xs[2] = { M, K }, ws[2] = { N, K }, bs[1] = { N };
		npt_tensor_t *x = randn(2, xs), *w = randn(2, ws), *b = randn(1, bs), *y;
		float *px, *pw, *pb, *py, *packed;
		double worst_exact = 0, worst_bound = 0, any_err = 0;

		ASSERT_NE(NULL, b);
		ASSERT_EQ(NPT_OK, npt_pack_query(NPT_I8, N, K, tag, sizeof(tag), &nbytes));
		packed = aligned_alloc(64, (nbytes + 63) / 64 * 64);
		ASSERT_NE(NULL, packed);
		ASSERT_EQ(NPT_OK, npt_pack_weight(w, tag, packed, nbytes)) {
			TH_LOG("%s", npt_last_error());
		}
		ASSERT_EQ(NPT_OK, npt_tensor_set_packed(w, tag, packed, nbytes));
		npt_tensor_data(x, (void **)&px);
		npt_tensor_data(w, (void **)&pw);
		npt_tensor_data(b, (void **)&pb);
		for (int a = 0; a < 2; a++) {
			npt_activation_t act = a ? NPT_ACT_GELU : NPT_ACT_NONE;

			ASSERT_EQ(NPT_OK, npt_linear(x, w, b, act, &y));
			ASSERT_EQ(NPT_OK, npt_tensor_eval(y));
			npt_tensor_data(y, (void **)&py);
			for (int64_t m = 0; m < M; m++) {
				float xa = 0, sa, inv;

				for (int64_t k = 0; k < K; k++)
					xa = fmaxf(xa, fabsf(px[m * K + k]));
				sa = xa > 0 ? xa / 127.0f : 1.0f;
				inv = 1.0f / sa;
				for (int64_t n = 0; n < N; n++) {
					float wa = 0, sw;
					int64_t acc = 0;
					double exact = 0, mag = fabs(pb[n]), bound = 0;

					for (int64_t k = 0; k < K; k++)
						wa = fmaxf(wa, fabsf(pw[n * K + k]));
					sw = wa > 0 ? wa / 127.0f : 1.0f;
					for (int64_t k = 0; k < K; k++) {
						float xv = px[m * K + k], wv = pw[n * K + k];
						float wq = nearbyintf(wv / sw);

						acc += (int64_t)q8(xv, inv) * (int64_t)(int8_t)wq;
						exact += (double)xv * wv;
						mag += fabs((double)xv * wv);
						bound += fabs(xv) * sw / 2 + fabs(wv) * sa / 2 +
							 0.75 * sa * sw;
					}
					double replay = (double)((float)acc * (sa * sw)) + pb[n];

					exact += pb[n];
					if (act == NPT_ACT_GELU) {
						replay = 0.5 * replay * (1 + erf(replay / sqrt(2.0)));
						exact = 0.5 * exact * (1 + erf(exact / sqrt(2.0)));
						bound *= 1.13;
					}
					double got = py[m * N + n];

					worst_exact = fmax(worst_exact, fabs(got - replay) / (mag + 1e-30));
					worst_bound = fmax(worst_bound, fabs(got - exact) /
							   (bound + 1e-6 * mag + 1e-30));
					any_err = fmax(any_err, fabs(got - exact) / (mag + 1e-30));
				}
			}
			TH_LOG("[%lld, %lld] x [%lld, %lld] int8, act %d: %.2g of the magnitude from "
			       "the replayed int8 arithmetic, error %.2g of the magnitude = %.2f of "
			       "the quantisation bound", (long long)M, (long long)K, (long long)K,
			       (long long)N, a, worst_exact, any_err, worst_bound);
			ASSERT_TRUE(worst_exact < 1e-6);
			ASSERT_TRUE(worst_bound <= 1.0);
			ASSERT_TRUE(any_err > 1e-5);   /* it did run in int8 */
			npt_tensor_free(y);
		}
		/* a NaN or an infinity in an input row makes that row's outputs NaN
		 * (its scale is NaN), and leaves the other rows as they were */
		{
			float keep0 = px[0], keep1 = px[K + 1], *py0;
			npt_tensor_t *y0;

			ASSERT_EQ(NPT_OK, npt_linear(x, w, b, NPT_ACT_NONE, &y0));
			ASSERT_EQ(NPT_OK, npt_tensor_eval(y0));
			npt_tensor_data(y0, (void **)&py0);
			px[0] = NAN;
			px[K + 1] = -INFINITY;
			ASSERT_EQ(NPT_OK, npt_linear(x, w, b, NPT_ACT_NONE, &y));
			ASSERT_EQ(NPT_OK, npt_tensor_eval(y));
			npt_tensor_data(y, (void **)&py);
			for (int64_t n = 0; n < N; n++) {
				ASSERT_TRUE(isnan(py[n]) && isnan(py[N + n]));
				for (int64_t m = 2; m < M; m++)
					ASSERT_EQ(py0[m * N + n], py[m * N + n]);
			}
			px[0] = keep0;
			px[K + 1] = keep1;
			npt_tensor_free(y);
			npt_tensor_free(y0);
		}
		free(packed);
		npt_tensor_free(x);
		npt_tensor_free(w);
		npt_tensor_free(b);
	}
}

/*
 * bf16 weights: rounded to bfloat16 (nearest even) at packing, the input at
 * each product, float32 sums. Against the products of the rounded values
 * summed in double: within 1e-5 of the magnitude (float32 summation); and
 * against the float64 product of the unrounded values: within 2^-8 of the
 * magnitude (each rounding is at most 2^-9 relative).
 */
TEST(linear_bf16_weights_rounded_once)
{
	const char *mode = getenv("NPT_GEMM");
	int64_t M = 33, N = 200, K = 96, xs[2] = { 33, 96 }, ws[2] = { 200, 96 }, bs[1] = { 200 };
	char tag[NPT_PACK_TAG_MAX];
	size_t nbytes;
	npt_tensor_t *x, *w, *b, *y;
	float *px, *pw, *pb, *py, *packed;
	double worst_replay = 0, worst = 0;

	if (mode && !strcmp(mode, "openblas"))
		return;
	if (npt_pack_query(NPT_BF16, N, K, tag, sizeof(tag), &nbytes) == NPT_E_UNSUPPORTED)
		SKIP(return, "no bf16 kernels here (AVX512_BF16): %s", npt_last_error());
	ASSERT_NE(NULL, strstr(tag, "/bf16/"));
	x = randn(2, xs);
	w = randn(2, ws);
	b = randn(1, bs);
	ASSERT_NE(NULL, b);
	packed = aligned_alloc(64, (nbytes + 63) / 64 * 64);
	ASSERT_NE(NULL, packed);
	ASSERT_EQ(NPT_OK, npt_pack_weight(w, tag, packed, nbytes)) {
		TH_LOG("%s", npt_last_error());
	}
	ASSERT_EQ(NPT_OK, npt_tensor_set_packed(w, tag, packed, nbytes));
	ASSERT_EQ(NPT_OK, npt_linear(x, w, b, NPT_ACT_NONE, &y));
	ASSERT_EQ(NPT_OK, npt_tensor_eval(y));
	npt_tensor_data(x, (void **)&px);
	npt_tensor_data(w, (void **)&pw);
	npt_tensor_data(b, (void **)&pb);
	npt_tensor_data(y, (void **)&py);
	for (int64_t m = 0; m < M; m++)
		for (int64_t n = 0; n < N; n++) {
			double replay = pb[n], exact = pb[n], mag = fabs(pb[n]);

			for (int64_t k = 0; k < K; k++) {
				replay += bf16_round(px[m * K + k]) * bf16_round(pw[n * K + k]);
				exact += (double)px[m * K + k] * pw[n * K + k];
				mag += fabs((double)px[m * K + k] * pw[n * K + k]);
			}
			worst_replay = fmax(worst_replay, fabs(py[m * N + n] - replay) / mag);
			worst = fmax(worst, fabs(py[m * N + n] - exact) / mag);
		}
	TH_LOG("bf16: %.2g of the magnitude from the rounded values' sums, %.2g from the exact "
	       "product", worst_replay, worst);
	ASSERT_TRUE(worst_replay < 1e-5);
	ASSERT_TRUE(worst < 1.0 / 256);
	ASSERT_TRUE(worst > 1e-6);   /* it did round */
	npt_tensor_free(y);
	free(packed);
	npt_tensor_free(x);
	npt_tensor_free(w);
	npt_tensor_free(b);
}

/* does /proc/cpuinfo list @flag? */
static int cpu_flag(const char *flag)
{
	char line[8192], word[64];
	FILE *f = fopen("/proc/cpuinfo", "r");
	int found = 0;

	snprintf(word, sizeof(word), " %s", flag);
	while (f && !found && fgets(line, sizeof(line), f))
		if (!strncmp(line, "flags", 5)) {
			char *p = strstr(line, word);

			found = p && (p[strlen(word)] == ' ' || p[strlen(word)] == '\n');
			break;
		}
	if (f)
		fclose(f);
	return found;
}

/* largest |y - act(x @ w^T + b)| over the magnitude of its terms (+ 1 with GELU),
 * the exact product in double; y [M, N], x [M, K], w [N, K], b [N] */
static double exact_error(npt_tensor_t *x, npt_tensor_t *w, npt_tensor_t *b, npt_tensor_t *y,
			  int gelu)
{
	int64_t M = npt_tensor_shape(x)[0], K = npt_tensor_shape(x)[1], N = npt_tensor_shape(w)[0];
	float *px, *pw, *pb, *py;
	double worst = 0;

	if (npt_tensor_data(x, (void **)&px) || npt_tensor_data(w, (void **)&pw) ||
	    npt_tensor_data(b, (void **)&pb) || npt_tensor_data(y, (void **)&py))
		return NAN;
	for (int64_t m = 0; m < M; m++)
		for (int64_t n = 0; n < N; n++) {
			double z = pb[n], mag = fabs(pb[n]);

			for (int64_t k = 0; k < K; k++) {
				z += (double)px[m * K + k] * pw[n * K + k];
				mag += fabs((double)px[m * K + k] * pw[n * K + k]);
			}
			if (gelu)
				z = 0.5 * z * (1.0 + erf(z / sqrt(2.0)));
			worst = fmax(worst, fabs(py[m * N + n] - z) / (mag + gelu));
		}
	return worst;
}

/*
 * bf16x3: float32 weights as two bf16 terms, the input split the same way,
 * three bf16 products summed in float32. Each output is within 2^-15 of the
 * magnitude of its terms of the exact product (float32's own error here is
 * about 2^-20), far closer than one bf16 product (2^-8), with the bias and
 * GELU applied once, rows split across threads or not; offered only with
 * AMX (refused with a message saying so elsewhere).
 */
TEST(linear_bf16x3_weights_float32_within_2_to_minus_15)
{
	const char *mode = getenv("NPT_GEMM");
	int64_t N = 200, K = 96, xs[2] = { 37, 96 }, ws[2] = { 200, 96 }, bs[1] = { 200 };
	char tag[NPT_PACK_TAG_MAX], ftag[NPT_PACK_TAG_MAX];
	size_t nbytes, fbytes;
	npt_tensor_t *x, *w, *b, *y, *y1;
	float *packed;
	double worst, worst_act;
	npt_status_t s;

	if (mode && !strcmp(mode, "openblas"))
		SKIP(return, "nothing is packed on OpenBLAS");
	s = npt_pack_query_bf16x3(N, K, tag, sizeof(tag), &nbytes);
	if (!cpu_flag("amx_bf16")) {
		TH_LOG("no AMX: %s", npt_last_error());
		ASSERT_EQ(NPT_E_UNSUPPORTED, s);
		ASSERT_NE(NULL, strstr(npt_last_error(), "AMX"));
		return;
	}
	ASSERT_EQ(NPT_OK, s) {
		TH_LOG("%s", npt_last_error());
	}
	ASSERT_NE(NULL, strstr(tag, "/bf16x3/"));
	ASSERT_EQ(NPT_E_DTYPE, npt_pack_query(NPT_F64, N, K, tag, sizeof(tag), &nbytes));
	/* about the bytes of the float32 layout */
	ASSERT_EQ(NPT_OK, npt_pack_query(NPT_F32, N, K, ftag, sizeof(ftag), &fbytes));
	ASSERT_TRUE(nbytes >= (size_t)(N * K) * 4 && nbytes <= fbytes + 64);
	x = randn(2, xs);
	w = randn(2, ws);
	b = randn(1, bs);
	ASSERT_NE(NULL, b);
	packed = aligned_alloc(64, (nbytes + 63) / 64 * 64);
	ASSERT_NE(NULL, packed);
	ASSERT_EQ(NPT_OK, npt_pack_weight(w, tag, packed, nbytes)) {
		TH_LOG("%s", npt_last_error());
	}
	ASSERT_EQ(NPT_E_INVAL, npt_tensor_set_packed(w, tag, packed, nbytes - 64));
	ASSERT_EQ(NPT_OK, npt_tensor_set_packed(w, tag, packed, nbytes));
	ASSERT_EQ(NPT_OK, npt_linear(x, w, b, NPT_ACT_NONE, &y));
	ASSERT_EQ(NPT_OK, npt_tensor_eval(y));
	ASSERT_EQ(NPT_OK, npt_linear(x, w, b, NPT_ACT_GELU, &y1));
	ASSERT_EQ(NPT_OK, npt_tensor_eval(y1));
	worst = exact_error(x, w, b, y, 0);
	worst_act = exact_error(x, w, b, y1, 1);
	TH_LOG("bf16x3: %.2g of the magnitude from the exact product (GELU: %.2g)", worst,
	       worst_act);
	ASSERT_TRUE(worst < 1.0 / 32768);
	ASSERT_TRUE(worst_act < 1.0 / 32768);
	npt_tensor_free(y);
	npt_tensor_free(y1);
	/* one thread: the same within the same bound (rows are not split) */
	ASSERT_EQ(NPT_OK, npt_set_num_threads(1));
	ASSERT_EQ(NPT_OK, npt_linear(x, w, b, NPT_ACT_NONE, &y));
	ASSERT_EQ(NPT_OK, npt_tensor_eval(y));
	ASSERT_TRUE(exact_error(x, w, b, y, 0) < 1.0 / 32768);
	ASSERT_EQ(NPT_OK, npt_set_num_threads(0));
	npt_tensor_free(y);
	free(packed);
	npt_tensor_free(x);
	npt_tensor_free(w);
	npt_tensor_free(b);
}

TEST(linear_rows_of_a_strided_view_and_batches)
{
	/* x[:, 0, :] of [5, 7, 16]: rows 7*16 apart, read in place */
	int64_t xs[3] = { 5, 7, 16 }, ws[2] = { 9, 16 };
	npt_tensor_t *x = randn(3, xs), *w = randn(2, ws), *col, *first, *y, *y3;
	uint64_t m0 = materialized();

	ASSERT_EQ(NPT_OK, npt_tensor_slice(x, 1, 0, 1, 1, &col));
	ASSERT_EQ(NPT_OK, npt_tensor_squeeze(col, 1, &first));
	ASSERT_EQ(NPT_OK, npt_linear(first, w, NULL, NPT_ACT_TANH, &y));
	ASSERT_EQ(NPT_OK, npt_tensor_eval(y));
	ASSERT_TRUE(linear_error(first, w, NULL, NPT_ACT_TANH, y) < 2e-6);
	ASSERT_EQ(m0, materialized());
	/* a 3-D input: the leading dims are rows */
	ASSERT_EQ(NPT_OK, npt_linear(x, w, NULL, NPT_ACT_NONE, &y3));
	ASSERT_EQ(3, npt_tensor_ndim(y3));
	ASSERT_EQ(9, npt_tensor_shape(y3)[2]);
	ASSERT_EQ(NPT_OK, npt_tensor_eval(y3));
	for (int i = 0; i < 5; i++)
		for (int j = 0; j < 9; j++) {
			int64_t a[3] = { i, 0, j };

			ASSERT_TRUE(fabs(tanh(at(y3, a)) - at2(y, i, j)) < 1e-5);
		}
	npt_tensor_free(y3);
	npt_tensor_free(y);
	npt_tensor_free(first);
	npt_tensor_free(col);
	npt_tensor_free(w);
	npt_tensor_free(x);
}

TEST(linear_copies_what_blas_cannot_read)
{
	int64_t xs[2] = { 4, 8 }, ws1[1] = { 8 }, ws[2] = { 6, 8 };
	npt_tensor_t *x = randn(2, xs), *row = randn(1, ws1), *w, *y;
	uint64_t m0 = materialized();

	/* a broadcast weight (stride 0 in both dims of the row) */
	ASSERT_EQ(NPT_OK, npt_tensor_broadcast_to(row, 2, ws, &w));
	ASSERT_EQ(NPT_OK, npt_linear(x, w, NULL, NPT_ACT_NONE, &y));
	ASSERT_EQ(NPT_OK, npt_tensor_eval(y));
	ASSERT_TRUE(linear_error(x, w, NULL, NPT_ACT_NONE, y) < 2e-6);
	ASSERT_EQ(m0 + 6 * 8 * sizeof(float), materialized());
	npt_tensor_free(y);
	npt_set_expand_mode(NPT_EXPAND_VIEW);
	ASSERT_EQ(NPT_OK, npt_linear(x, w, NULL, NPT_ACT_NONE, &y));
	ASSERT_EQ(NPT_E_WOULD_COPY, npt_tensor_eval(y));
	ASSERT_NE(NULL, strstr(npt_last_error(), "linear: the weight of shape (6,8)"));
	npt_set_expand_mode(NPT_EXPAND_AUTO);
	npt_tensor_free(y);
	npt_tensor_free(w);
	npt_tensor_free(row);
	npt_tensor_free(x);
}

TEST(linear_refusals_and_edges)
{
	int64_t xs[2] = { 3, 4 }, ws[2] = { 5, 4 }, bad[2] = { 5, 3 }, bs[1] = { 4 };
	int64_t x0[2] = { 3, 0 }, w0[2] = { 5, 0 }, b5[1] = { 5 };
	npt_tensor_t *x = randn(2, xs), *w = randn(2, ws), *wb = randn(2, bad), *b = randn(1, bs);
	npt_tensor_t *i32, *y, *xe, *we, *b_5 = randn(1, b5);
	float *p;

	ASSERT_EQ(NPT_E_SHAPE, npt_linear(x, wb, NULL, NPT_ACT_NONE, &y));
	ASSERT_NE(NULL, strstr(npt_last_error(), "has 4 features but the weight of shape (5,3) takes 3"));
	ASSERT_EQ(NPT_E_SHAPE, npt_linear(x, w, b, NPT_ACT_NONE, &y));
	ASSERT_NE(NULL, strstr(npt_last_error(), "it must have shape (5,)"));
	ASSERT_EQ(NPT_E_SHAPE, npt_linear(x, b, NULL, NPT_ACT_NONE, &y));
	ASSERT_EQ(NPT_E_INVAL, npt_linear(x, w, NULL, (npt_activation_t)9, &y));
	ASSERT_EQ(NPT_E_INVAL, npt_linear(NULL, w, NULL, NPT_ACT_NONE, &y));
	ASSERT_EQ(NPT_E_INVAL, npt_linear(x, w, NULL, NPT_ACT_NONE, NULL));
	ASSERT_EQ(NPT_OK, npt_tensor_cast(x, NPT_I32, &i32));
	ASSERT_EQ(NPT_E_DTYPE, npt_linear(i32, w, NULL, NPT_ACT_NONE, &y));
	ASSERT_NE(NULL, strstr(npt_last_error(), "float32 only"));
	/* no input features: y = act(bias) */
	ASSERT_EQ(NPT_OK, npt_tensor_zeros(NPT_F32, 2, x0, &xe));
	ASSERT_EQ(NPT_OK, npt_tensor_zeros(NPT_F32, 2, w0, &we));
	ASSERT_EQ(NPT_OK, npt_linear(xe, we, b_5, NPT_ACT_RELU, &y));
	ASSERT_EQ(NPT_OK, npt_tensor_data(y, (void **)&p));
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 5; j++) {
			int64_t bj[1] = { j };

			ASSERT_EQ((float)act(NPT_ACT_RELU, at(b_5, bj)), p[i * 5 + j]);
		}
	npt_tensor_free(y);
	npt_tensor_free(we);
	npt_tensor_free(xe);
	npt_tensor_free(i32);
	npt_tensor_free(b_5);
	npt_tensor_free(b);
	npt_tensor_free(wb);
	npt_tensor_free(w);
	npt_tensor_free(x);
}

/* ------------------------------------------------------------- attention */

/* naive attention of entry (b, h) into ref[Sq][dv] */
static void attn_ref(npt_tensor_t *q, npt_tensor_t *k, npt_tensor_t *v, const float *mask,
		     double scale, int64_t b, int64_t h, double *ref)
{
	int64_t Sq = npt_tensor_shape(q)[2], Sk = npt_tensor_shape(k)[2];
	int64_t d = npt_tensor_shape(q)[3], dv = npt_tensor_shape(v)[3];
	double *p = malloc(sizeof(double) * (size_t)Sk);

	for (int64_t i = 0; i < Sq; i++) {
		double m = -INFINITY, s = 0;

		for (int64_t j = 0; j < Sk; j++) {
			double x = 0;

			for (int64_t c = 0; c < d; c++) {
				int64_t qi[4] = { b, h, i, c }, ki[4] = { b, h, j, c };

				x += at(q, qi) * at(k, ki);
			}
			p[j] = x * scale + (mask ? mask[b * Sk + j] : 0);
			m = p[j] > m ? p[j] : m;
		}
		for (int64_t j = 0; j < Sk; j++)
			s += (p[j] = exp(p[j] - m));
		for (int64_t c = 0; c < dv; c++) {
			double o = 0;

			for (int64_t j = 0; j < Sk; j++) {
				int64_t vi[4] = { b, h, j, c };

				o += p[j] / s * at(v, vi);
			}
			ref[i * dv + c] = o;
		}
	}
	free(p);
}

TEST(attention_matches_reference_with_mask_and_merged_heads)
{
	enum { B = 3, S = 11, NH = 4, D = 8 };
	/* q, k, v as [B, NH, S, D] permuted views of [B, S, NH, D] projections */
	int64_t ps[4] = { B, S, NH, D }, ms[4] = { B, 1, 1, S };
	static const int perm[4] = { 0, 2, 1, 3 };
	npt_tensor_t *pq = randn(4, ps), *pk = randn(4, ps), *pv = randn(4, ps);
	npt_tensor_t *q, *k, *v, *mask, *o, *om;
	static float mk[B * S];
	double ref[S * D], worst = 0;
	uint64_t m0;

	ASSERT_EQ(NPT_OK, npt_tensor_permute(pq, perm, &q));
	ASSERT_EQ(NPT_OK, npt_tensor_permute(pk, perm, &k));
	ASSERT_EQ(NPT_OK, npt_tensor_permute(pv, perm, &v));
	for (int b = 0; b < B; b++)
		for (int j = 0; j < S; j++)
			mk[b * S + j] = j < S - 3 * b ? 0.0f : -FLT_MAX;	/* padding */
	ASSERT_EQ(NPT_OK, npt_tensor_from_data(mk, NPT_F32, 4, ms, NULL, NPT_BORROW_READONLY, NULL,
					       NULL, &mask));
	m0 = materialized();
	ASSERT_EQ(NPT_OK, npt_attention(q, k, v, mask, 0.35, 0, &o));
	ASSERT_EQ(NPT_OK, npt_attention(q, k, v, mask, 0.35, NPT_ATTN_HEADS_LAST, &om));
	ASSERT_EQ(NPT_OK, npt_tensor_eval(o));
	ASSERT_EQ(NPT_OK, npt_tensor_eval(om));
	ASSERT_EQ(m0, materialized());	/* the permuted views were read in place */
	ASSERT_EQ(NH, npt_tensor_shape(o)[1]);
	ASSERT_EQ(S, npt_tensor_shape(om)[1]);
	ASSERT_EQ(NH, npt_tensor_shape(om)[2]);
	for (int b = 0; b < B; b++)
		for (int h = 0; h < NH; h++) {
			attn_ref(q, k, v, mk, 0.35, b, h, ref);
			for (int i = 0; i < S; i++)
				for (int c = 0; c < D; c++) {
					int64_t oi[4] = { b, h, i, c }, mi[4] = { b, i, h, c };

					worst = fmax(worst, fabs(at(o, oi) - ref[i * D + c]));
					ASSERT_EQ(at(o, oi), at(om, mi));
				}
		}
	ASSERT_TRUE(worst < 1e-5) {
		TH_LOG("largest error %g", worst);
	}
	npt_tensor_free(om);
	npt_tensor_free(o);
	npt_tensor_free(mask);
	npt_tensor_free(q);
	npt_tensor_free(k);
	npt_tensor_free(v);
	npt_tensor_free(pq);
	npt_tensor_free(pk);
	npt_tensor_free(pv);
}

TEST(attention_same_bits_for_any_thread_count)
{
	int64_t s[4] = { 2, 6, 33, 16 };
	npt_tensor_t *q = randn(4, s), *k = randn(4, s), *v = randn(4, s), *o1, *o2;
	float *a, *b;
	int keep = npt_get_num_threads();

	ASSERT_EQ(NPT_OK, npt_set_num_threads(1));
	ASSERT_EQ(NPT_OK, npt_attention(q, k, v, NULL, 0.25, 0, &o1));
	ASSERT_EQ(NPT_OK, npt_tensor_data(o1, (void **)&a));
	ASSERT_EQ(NPT_OK, npt_set_num_threads(3));
	ASSERT_EQ(NPT_OK, npt_attention(q, k, v, NULL, 0.25, 0, &o2));
	ASSERT_EQ(NPT_OK, npt_tensor_data(o2, (void **)&b));
	ASSERT_EQ(0, memcmp(a, b, (size_t)npt_tensor_numel(o1) * sizeof(float)));
	npt_set_num_threads(keep);
	npt_tensor_free(o1);
	npt_tensor_free(o2);
	npt_tensor_free(q);
	npt_tensor_free(k);
	npt_tensor_free(v);
}

/* softmax(q k^T * scale + bias) v of entry (b, h) into ref[Sq][dv], with a
 * [B, 1, Sq or 1, Sk] bias tensor of any strides (NULL: none) */
static void attn_ref_bias(npt_tensor_t *q, npt_tensor_t *k, npt_tensor_t *v, npt_tensor_t *bias,
			  double scale, int64_t b, int64_t h, double *ref)
{
	int64_t Sq = npt_tensor_shape(q)[2], Sk = npt_tensor_shape(k)[2];
	int64_t d = npt_tensor_shape(q)[3], dv = npt_tensor_shape(v)[3];
	double *p = malloc(sizeof(double) * (size_t)Sk);

	for (int64_t i = 0; i < Sq; i++) {
		double m = -INFINITY, s = 0;

		for (int64_t j = 0; j < Sk; j++) {
			int64_t bi[4] = { b, 0, npt_tensor_shape(bias ? bias : q)[2] == 1 ? 0 : i, j };
			double x = 0;

			for (int64_t c = 0; c < d; c++) {
				int64_t qi[4] = { b, h, i, c }, ki[4] = { b, h, j, c };

				x += at(q, qi) * at(k, ki);
			}
			p[j] = x * scale + (bias ? at(bias, bi) : 0);
			m = p[j] > m ? p[j] : m;
		}
		for (int64_t j = 0; j < Sk; j++)
			s += (p[j] = exp(p[j] - m));
		for (int64_t c = 0; c < dv; c++) {
			double o = 0;

			for (int64_t j = 0; j < Sk; j++) {
				int64_t vi[4] = { b, h, j, c };

				o += p[j] / s * at(v, vi);
			}
			ref[i * dv + c] = o;
		}
	}
	free(p);
}

/*
 * The kernel's edges, where its register tiles (6 rows x 64 or 16 columns)
 * end part-way: query counts that are not a multiple of 6, key counts and
 * value widths that are not a multiple of the vector width, odd feature
 * sizes, one of everything; keys stored transposed (read in place), a mask
 * per key and a bias per score read with a stride, a fully masked row. The
 * suite runs this file again with NPT_KERNEL_ISA=avx2 and c (run-blocks.sh),
 * so that the AVX-512, AVX2 and GEMM paths each meet these shapes.
 */
TEST(attention_every_edge_of_the_tiles)
{
	static const int64_t cases[][4] = {	/* Sq, Sk, d, dv */
		{ 13, 37, 9, 20 }, { 6, 64, 16, 64 }, { 1, 1, 1, 1 }, { 7, 100, 64, 17 },
		{ 128, 128, 64, 64 }, { 5, 16, 3, 48 }, { 19, 65, 33, 80 },
	};
	enum { B = 2, NH = 2 };

	for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++)
		for (int kind = 0; kind < 3; kind++) {
			/* 0: mask [B,1,1,Sk]; 1: bias [B,1,Sq,Sk] read with a stride and k
			 * stored transposed; 2: no bias, batch 1 fully masked by -inf */
			int64_t Sq = cases[ci][0], Sk = cases[ci][1], d = cases[ci][2], dv = cases[ci][3];
			int64_t qs[4] = { B, NH, Sq, d }, ks[4] = { B, NH, Sk, d }, kts[4] = { B, NH, d, Sk };
			int64_t vs[4] = { B, NH, Sk, dv }, ms[4] = { B, 1, 1, Sk }, bts[4] = { B, 1, Sk, Sq };
			npt_tensor_t *q = randn(4, qs), *v = randn(4, vs), *k, *kt = NULL, *bias = NULL;
			npt_tensor_t *bt = NULL, *o;
			double *ref = malloc(sizeof(double) * (size_t)(Sq * dv)), worst = 0;
			float *mp;

			ASSERT_NE(NULL, ref);
			if (kind == 1) {
				kt = randn(4, kts);
				ASSERT_EQ(NPT_OK, npt_tensor_transpose(kt, 2, 3, &k));
				bt = randn(4, bts);
				ASSERT_EQ(NPT_OK, npt_tensor_transpose(bt, 2, 3, &bias));
			} else {
				k = randn(4, ks);
				bias = randn(4, ms);
				ASSERT_EQ(NPT_OK, npt_tensor_data(bias, (void **)&mp));
				for (int64_t j = 0; j < B * Sk; j++)
					mp[j] = kind == 2 && j >= Sk ? -INFINITY : j % 3 ? 0.0f : -FLT_MAX;
			}
			ASSERT_EQ(NPT_OK, npt_attention(q, k, v, bias, 0.3, 0, &o));
			ASSERT_EQ(NPT_OK, npt_tensor_eval(o));
			for (int b = 0; b < B; b++)
				for (int h = 0; h < NH; h++) {
					attn_ref_bias(q, k, v, bias, 0.3, b, h, ref);
					for (int64_t i = 0; i < Sq; i++)
						for (int64_t c = 0; c < dv; c++) {
							int64_t oi[4] = { b, h, i, c };
							double x = at(o, oi);

							if (kind == 2 && b == 1) {
								/* every key -inf: 0/0, as torch */
								ASSERT_TRUE(isnan(x));
								continue;
							}
							worst = fmax(worst, fabs(x - ref[i * dv + c]));
						}
				}
			ASSERT_TRUE(worst < 1e-5) {
				TH_LOG("Sq %lld Sk %lld d %lld dv %lld, case %d: largest error %g",
				       (long long)Sq, (long long)Sk, (long long)d, (long long)dv, kind,
				       worst);
			}
			npt_tensor_free(o);
			npt_tensor_free(bias);
			npt_tensor_free(bt);
			npt_tensor_free(k);
			npt_tensor_free(kt);
			npt_tensor_free(q);
			npt_tensor_free(v);
			free(ref);
		}
}

/*
 * A decode step's products poll for the next job instead of sleeping
 * (threads.c, npt_parallel_for_hot): thousands back to back, with loops that
 * sleep at once between them and the thread count changing, on more threads
 * than this machine may have cores (workers late to a job, or descheduled
 * inside one, meet the next job's posting): every product keeps the bits it
 * has on one thread.
 */
TEST(decode_products_back_to_back_with_other_loops)
{
	enum { K = 64, NMAX = 97, ROUNDS = 20000 };
	static const int threads[] = { 3, 2, 4, 3 };
	float *w = malloc(sizeof(float) * NMAX * K), *ref = malloc(sizeof(float) * (NMAX + 1) * NMAX);
	float x[K], y[NMAX];
	int64_t s[4] = { 1, 4, 8, 16 };
	npt_tensor_t *q = randn(4, s), *o = NULL;
	int keep = npt_get_num_threads();

	ASSERT_NE(NULL, w);
	ASSERT_NE(NULL, ref);
	ASSERT_NE(NULL, q);
	for (int i = 0; i < NMAX * K; i++)
		w[i] = frand();
	for (int i = 0; i < K; i++)
		x[i] = frand();
	ASSERT_EQ(NPT_OK, npt_set_num_threads(1));
	for (int n = 1; n <= NMAX; n++)
		ASSERT_EQ(NPT_OK, npt_gemv_f32(x, 1, w, K, n, K, ref + (size_t)n * NMAX));
	for (int r = 0; r < ROUNDS; r++) {
		int n = 1 + (int)((r * 37u) % NMAX);

		if (r % (ROUNDS / 4) == 0)
			ASSERT_EQ(NPT_OK, npt_set_num_threads(threads[r / (ROUNDS / 4)]));
		ASSERT_EQ(NPT_OK, npt_gemv_f32(x, 1, w, K, n, K, y));
		ASSERT_EQ(0, memcmp(y, ref + (size_t)n * NMAX, sizeof(float) * n)) {
			TH_LOG("round %d, %d outputs: not the one-thread bits", r, n);
		}
		if (r % 97 == 0) {	/* a loop whose workers sleep at once */
			ASSERT_EQ(NPT_OK, npt_attention(q, q, q, NULL, 0.25, 0, &o));
			npt_tensor_free(o);
			o = NULL;
		}
	}
	npt_set_num_threads(keep);
	npt_tensor_free(q);
	free(w);
	free(ref);
}

TEST(decode_products_refuse_overflowing_sizes)
{
	float *x = calloc(64, sizeof(float)), *w = calloc(64, sizeof(float));
	float *y = calloc(64, sizeof(float));
	size_t nb;

	ASSERT_NE(NULL, x);
	ASSERT_NE(NULL, w);
	ASSERT_NE(NULL, y);
	/* rows ldw apart past the address range: refused before any row is read */
	ASSERT_EQ(NPT_E_OVERFLOW, npt_gemv_f32(x, 1, w, INT64_MAX, 4, 4, y));
	ASSERT_NE(NULL, strstr(npt_last_error(), "4 rows 9223372036854775807 floats apart"));
	ASSERT_EQ(NPT_E_OVERFLOW, npt_gemv_f32(x, 1, w, INT64_MAX / 8, 4, 4, y));
	ASSERT_EQ(NPT_OK, npt_gemv_f32(x, 1, w, INT64_MAX, 1, 4, y));	/* one row: no stride */
	ASSERT_EQ(NPT_OK, npt_q4_linear_strided(x, 1, w, SIZE_MAX, 1, 32, y));
	ASSERT_EQ(NPT_E_OVERFLOW, npt_q4_linear_strided(x, 1, w, SIZE_MAX, 2, 32, y));
	ASSERT_EQ(NPT_E_OVERFLOW, npt_q4_linear_strided(x, 1, w, (size_t)INT64_MAX, 2, 32, y));
	ASSERT_NE(NULL, strstr(npt_last_error(), "2 rows 9223372036854775807 bytes apart"));
	/* m rows of x and y past the address range (m * k wraps to 0): refused */
	ASSERT_EQ(NPT_E_OVERFLOW, npt_q4_linear(x, INT64_C(1) << 59, w, 1, 32, y));
	ASSERT_NE(NULL, strstr(npt_last_error(), "576460752303423488 rows of x (32 floats each)"));
	ASSERT_EQ(NPT_E_OVERFLOW, npt_q4_linear(x, INT64_MAX / 128, w, 64, 32, y));
	/* a well-formed shape that is too big is an overflow, not a bad K */
	ASSERT_EQ(NPT_E_OVERFLOW, npt_q4_size(INT64_MAX, 32, &nb));
	ASSERT_NE(NULL, strstr(npt_last_error(), "too big"));
	ASSERT_EQ(NPT_E_OVERFLOW, npt_q4_size(INT64_C(1) << 40, INT64_C(1) << 40, &nb));
	ASSERT_EQ(NPT_E_SHAPE, npt_q4_size(INT64_MAX, 16, &nb));
	ASSERT_EQ(NPT_OK, npt_q4_size(INT64_C(1) << 35, 32, &nb));
	ASSERT_EQ((size_t)18 << 35, nb);
	free(x);
	free(w);
	free(y);
}

/*
 * Stride-0 views make operands of any size with one element in memory: a
 * product of two valid shapes may overflow. linear's result and attention's
 * [..., Sq, Sk] scores (kept by its kernel) are refused like any shape past
 * 2^59 - 1 elements, not built with a wrapped element count.
 */
TEST(products_of_valid_shapes_that_overflow_are_refused)
{
	static float one[1];
	int64_t big = INT64_C(1) << 32;
	int64_t xs[2] = { big, 1 }, z2[2] = { 0, 0 }, z3[3] = { 0, 0, 0 };
	int64_t qs[3] = { 1, big, 1 }, vs[3] = { 1, big, 1 };
	npt_tensor_t *x, *q, *v, *o = NULL;

	ASSERT_EQ(NPT_OK, npt_tensor_from_data(one, NPT_F32, 2, xs, z2, 0, NULL, NULL, &x));
	ASSERT_EQ(NPT_E_OVERFLOW, npt_linear(x, x, NULL, NPT_ACT_NONE, &o));
	ASSERT_EQ(NULL, o);
	ASSERT_NE(NULL, strstr(npt_last_error(), "linear: shape (4294967296,4294967296) is too "
			       "big")) {
		TH_LOG("%s", npt_last_error());
	}
	ASSERT_EQ(NPT_OK, npt_tensor_from_data(one, NPT_F32, 3, qs, z3, 0, NULL, NULL, &q));
	ASSERT_EQ(NPT_OK, npt_tensor_from_data(one, NPT_F32, 3, vs, z3, 0, NULL, NULL, &v));
	/* result [1, 2^32, 1] is fine; the scores [1, 2^32, 2^32] are not */
	ASSERT_EQ(NPT_E_OVERFLOW, npt_attention(q, q, v, NULL, 1, 0, &o));
	ASSERT_EQ(NULL, o);
	ASSERT_NE(NULL, strstr(npt_last_error(), "scores of shape (1,4294967296,4294967296)")) {
		TH_LOG("%s", npt_last_error());
	}
	npt_tensor_free(x);
	npt_tensor_free(q);
	npt_tensor_free(v);
}

/* @tag copied to the very end of a readable page followed by an unreadable one */
static char *tag_before_guard(const char *tag, size_t len, void **map)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED || mprotect(p + pg, pg, PROT_NONE))
		return NULL;
	*map = p;
	memcpy(p + pg - len, tag, len);
	return p + pg - len;
}

/*
 * Layout tags come with the packed bytes (a model file): a crafted one is
 * refused, never trusted with arithmetic or reads. Blocks whose product
 * wraps (to 0: a division by zero), panels whose size wraps to the bytes
 * given, and a tag with no NUL in its first NPT_PACK_TAG_MAX bytes (nothing
 * past them is read) are refused by npt_unpack_weight, npt_gemv_packed,
 * npt_tensor_from_packed and npt_tensor_set_packed.
 */
TEST(crafted_layout_tags_are_refused)
{
	static char data[4096] __attribute__((aligned(64)));
	static float x[64], y[64], dst[64 * 64];
	char long_tag[NPT_PACK_TAG_MAX], tag[NPT_PACK_TAG_MAX], *t;
	int64_t ws[2] = { 64, 64 };
	npt_tensor_t *w, *pk = NULL;
	void *map;
	size_t nb;

	/* inner blocks along k multiplying to 2^64 */
	ASSERT_EQ(NPT_E_INVAL, npt_unpack_weight("onednn-2.6.3/avx2/f32/k4.n4/pad4.4/str4.1/"
						 "blk4294967296k4294967296k", data, sizeof(data),
						 4, 4, dst));
	ASSERT_NE(NULL, strstr(npt_last_error(), "does not fit"));
	ASSERT_EQ(NPT_E_INVAL, npt_unpack_weight("onednn-2.6.3/avx2/f32/k4.n4/pad4.4/str4.1/"
						 "blk8k1k", data, sizeof(data), 4, 4, dst));
	/* R * P = 2^64 (a division by zero); panels of 2^64 bytes (0 given) */
	ASSERT_EQ(NPT_E_UNSUPPORTED, npt_gemv_packed(x, 1, "onednn-2.6.3/avx512_core_vnni/s8/k64."
						     "n64/pad64.64/str0.4096/blk4611686018427387904k"
						     "64n4k/x0.0/scales-per-n", data, sizeof(data),
						     64, 64, y));
	ASSERT_EQ(NPT_E_UNSUPPORTED, npt_gemv_packed(x, 1, "onednn-2.6.3/avx512_core/f32/k64.n64/"
						     "pad268435456.17179869184/str64.17179869184/"
						     "blk1k64n", data, 0, 64, 64, y));
	/* a tag longer than any: refused from its first NPT_PACK_TAG_MAX bytes */
	memset(long_tag, '4', sizeof(long_tag));
	memcpy(long_tag, "onednn-2.6.3/avx2/f32/k4.n4/pad4.4/str4.1/blk", 45);
	t = tag_before_guard(long_tag, sizeof(long_tag), &map);
	ASSERT_NE(NULL, t);
	ASSERT_EQ(NPT_E_UNSUPPORTED, npt_unpack_weight(t, data, sizeof(data), 4, 4, dst));
	ASSERT_NE(NULL, strstr(npt_last_error(), "no NUL in its first 256 bytes"));
	ASSERT_EQ(NPT_E_UNSUPPORTED, npt_gemv_packed(x, 1, t, data, sizeof(data), 4, 4, y));
	munmap(map, 2 * sysconf(_SC_PAGESIZE));
	/* this library's own tag, then no NUL: not compared past the limit */
	ASSERT_EQ(NPT_OK, npt_tensor_zeros(NPT_F32, 2, ws, &w));
	if (npt_pack_query(NPT_F32, 64, 64, tag, sizeof(tag), &nb) == NPT_OK) {
		char *big = aligned_alloc(64, (nb + 63) / 64 * 64);

		ASSERT_NE(NULL, big);
		memset(long_tag, 'n', sizeof(long_tag));
		memcpy(long_tag, tag, strlen(tag));
		t = tag_before_guard(long_tag, sizeof(long_tag), &map);
		ASSERT_NE(NULL, t);
		ASSERT_EQ(NPT_E_UNSUPPORTED, npt_tensor_from_packed(t, big, nb, 64, 64, &pk));
		ASSERT_NE(NULL, strstr(npt_last_error(), "from_packed: the layout tag has no NUL"))
		{
			TH_LOG("%s", npt_last_error());
		}
		ASSERT_EQ(NPT_E_UNSUPPORTED, npt_tensor_set_packed(w, t, big, nb));
		ASSERT_NE(NULL, strstr(npt_last_error(), "set_packed: "));
		ASSERT_EQ(NPT_E_INVAL, npt_pack_weight(w, t, big, nb));
		munmap(map, 2 * sysconf(_SC_PAGESIZE));
		/* the shape is checked as from_packed's, the size in its words */
		ASSERT_EQ(NPT_E_OVERFLOW, npt_tensor_from_packed(tag, big, nb, INT64_C(1) << 40,
								 INT64_C(1) << 40, &pk));
		ASSERT_NE(NULL, strstr(npt_last_error(), "from_packed: shape"));
		ASSERT_EQ(NPT_E_INVAL, npt_tensor_from_packed(tag, big, nb - 64, 64, 64, &pk));
		ASSERT_NE(NULL, strstr(npt_last_error(), "from_packed: layout"));
		/* a packed-only weight has no elements: not an output, not 4-bit packed */
		ASSERT_EQ(NPT_OK, npt_pack_weight(w, tag, big, nb));
		ASSERT_EQ(NPT_OK, npt_tensor_from_packed(tag, big, nb, 64, 64, &pk));
		ASSERT_EQ(NPT_E_READONLY, npt_tensor_eval_into(w, pk));
		ASSERT_NE(NULL, strstr(npt_last_error(), "exists only in its packed layout")) {
			TH_LOG("%s", npt_last_error());
		}
		ASSERT_EQ(NPT_E_UNSUPPORTED, npt_q4_pack(pk, big, 64 * 2 * 18));
		ASSERT_NE(NULL, strstr(npt_last_error(), "npt_q4_pack: this [64, 64] weight"));
		npt_tensor_free(pk);
		free(big);
	} else {
		TH_LOG("nothing packed here (%s): from_packed's tags not tried", npt_last_error());
	}
	npt_tensor_free(w);
}

TEST(attention_refusals_and_edges)
{
	int64_t qs[3] = { 2, 4, 8 }, ks[3] = { 2, 5, 8 }, vs[3] = { 2, 5, 3 }, bad[3] = { 2, 5, 7 };
	int64_t q2[2] = { 4, 8 }, k0[3] = { 2, 0, 8 }, v0[3] = { 2, 0, 3 }, bs[2] = { 3, 5 };
	npt_tensor_t *q = randn(3, qs), *k = randn(3, ks), *v = randn(3, vs), *kb = randn(3, bad);
	npt_tensor_t *qq = randn(2, q2), *kz, *vz, *bb = randn(2, bs), *o, *i32;
	float *p;
	static float nanrow[2 * 4 * 5];
	int64_t nbs[3] = { 2, 4, 5 };
	npt_tensor_t *nb;

	ASSERT_EQ(NPT_E_SHAPE, npt_attention(q, kb, v, NULL, 1, 0, &o));
	ASSERT_NE(NULL, strstr(npt_last_error(), "the same feature size d"));
	ASSERT_EQ(NPT_E_SHAPE, npt_attention(qq, k, v, NULL, 1, 0, &o));
	ASSERT_EQ(NPT_E_SHAPE, npt_attention(q, k, v, bb, 1, 0, &o));
	ASSERT_NE(NULL, strstr(npt_last_error(), "does not broadcast to the scores' shape (2,4,5)"));
	ASSERT_EQ(NPT_E_SHAPE, npt_attention(qq, qq, qq, NULL, 1, NPT_ATTN_HEADS_LAST, &o));
	ASSERT_EQ(NPT_E_INVAL, npt_attention(q, k, v, NULL, 1, 0x10, &o));
	ASSERT_EQ(NPT_E_VALUE, npt_attention(q, k, v, NULL, INFINITY, 0, &o));
	ASSERT_EQ(NPT_E_INVAL, npt_attention(q, NULL, v, NULL, 1, 0, &o));
	ASSERT_EQ(NPT_OK, npt_tensor_cast(q, NPT_I32, &i32));
	ASSERT_EQ(NPT_E_DTYPE, npt_attention(i32, k, v, NULL, 1, 0, &o));
	/* no keys: zeros */
	ASSERT_EQ(NPT_OK, npt_tensor_zeros(NPT_F32, 3, k0, &kz));
	ASSERT_EQ(NPT_OK, npt_tensor_zeros(NPT_F32, 3, v0, &vz));
	ASSERT_EQ(NPT_OK, npt_attention(q, kz, vz, NULL, 1, 0, &o));
	ASSERT_EQ(NPT_OK, npt_tensor_data(o, (void **)&p));
	for (int i = 0; i < 2 * 4 * 3; i++)
		ASSERT_EQ(0.0f, p[i]);
	npt_tensor_free(o);
	/* a NaN in a row's scores makes that row NaN, the others stay finite */
	nanrow[1 * 20 + 2 * 5 + 3] = NAN;
	ASSERT_EQ(NPT_OK, npt_tensor_from_data(nanrow, NPT_F32, 3, nbs, NULL, 0, NULL, NULL, &nb));
	ASSERT_EQ(NPT_OK, npt_attention(q, k, v, nb, 1, 0, &o));
	ASSERT_EQ(NPT_OK, npt_tensor_data(o, (void **)&p));
	for (int bi = 0; bi < 2; bi++)
		for (int i = 0; i < 4; i++)
			for (int c = 0; c < 3; c++)
				ASSERT_EQ(bi == 1 && i == 2, isnan(p[(bi * 4 + i) * 3 + c]) != 0);
	npt_tensor_free(o);
	npt_tensor_free(nb);
	npt_tensor_free(i32);
	npt_tensor_free(kz);
	npt_tensor_free(vz);
	npt_tensor_free(bb);
	npt_tensor_free(qq);
	npt_tensor_free(kb);
	npt_tensor_free(q);
	npt_tensor_free(k);
	npt_tensor_free(v);
}

TEST_HARNESS_MAIN
