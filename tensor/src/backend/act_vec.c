/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * act_vec.c - activation epilogues of npt_linear on f32 rows, in place:
 * y = act(y + bias) with GELU (erf form), tanh or ReLU; and the rows of a
 * softmax: bias, maximum (NaN-aware) and exponentials with their sum.
 *
 * The vector activations are vmath.h's (the tiles apply the same ones in
 * registers): GELU on the library's own erf approximation (at most 3.2e-7 from
 * erf; the scalar libm erff the elementwise kernels and each row's tail use is
 * within 1-2 ulp), tanh on glibc's vector tanhf (4 ulp), picked at run time:
 * AVX-512F, else AVX2+FMA, else the scalar libm loop. The exponentials of the
 * softmax rows use glibc's vector expf.
 *
 * Contracts: the formula is the elementwise kernel's: 0.5 * x * (1 + erf(x *
 * sqrt(1/2))); bias may be NULL; rows are independent (threads split rows).
 */
#include "backend.h"
#include "vmath.h"

#include <immintrin.h>
#include <math.h>

extern __m512 _ZGVeN16v_expf(__m512 x);
extern __m256 _ZGVdN8v_expf(__m256 x);

static float act1(int act, float x)
{
	switch (act) {
	case NPT_ACT_GELU: return 0.5f * x * (1.0f + erff(x * NPT_SQRT1_2F));
	case NPT_ACT_TANH: return tanhf(x);
	case NPT_ACT_RELU: return x > 0.0f ? x : (x != x ? x : 0.0f);
	default: return x;
	}
}

static void act_scalar(int act, int64_t i, int64_t n, float *y, const float *b)
{
	for (; i < n; i++)
		y[i] = act1(act, b ? y[i] + b[i] : y[i]);
}

__attribute__((target("avx512f"))) static void act_avx512(int act, int64_t n, float *y,
							   const float *b)
{
	int64_t i = 0;

	for (; i + 16 <= n; i += 16) {
		__m512 x = _mm512_loadu_ps(y + i);

		if (b)
			x = _mm512_add_ps(x, _mm512_loadu_ps(b + i));
		_mm512_storeu_ps(y + i, npt_act16(act, x));
	}
	act_scalar(act, i, n, y, b);
}

__attribute__((target("avx2,fma"))) static void act_avx2(int act, int64_t n, float *y,
							 const float *b)
{
	int64_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256 x = _mm256_loadu_ps(y + i);

		if (b)
			x = _mm256_add_ps(x, _mm256_loadu_ps(b + i));
		_mm256_storeu_ps(y + i, npt_act8(act, x));
	}
	act_scalar(act, i, n, y, b);
}

/* x[i] = exp(x[i] - m); returns the sum (16 or 8 partial sums, then the tail) */
__attribute__((target("avx512f"))) static float expsum_avx512(int64_t n, float *x, float m)
{
	__m512 acc = _mm512_setzero_ps(), mm = _mm512_set1_ps(m);
	int64_t i = 0;
	float s;

	for (; i + 16 <= n; i += 16) {
		__m512 e = _ZGVeN16v_expf(_mm512_sub_ps(_mm512_loadu_ps(x + i), mm));

		_mm512_storeu_ps(x + i, e);
		acc = _mm512_add_ps(acc, e);
	}
	s = _mm512_reduce_add_ps(acc);
	for (; i < n; i++) {
		x[i] = expf(x[i] - m);
		s += x[i];
	}
	return s;
}

__attribute__((target("avx2,fma"))) static float expsum_avx2(int64_t n, float *x, float m)
{
	__m256 acc = _mm256_setzero_ps(), mm = _mm256_set1_ps(m);
	float lanes[8], s = 0;
	int64_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256 e = _ZGVdN8v_expf(_mm256_sub_ps(_mm256_loadu_ps(x + i), mm));

		_mm256_storeu_ps(x + i, e);
		acc = _mm256_add_ps(acc, e);
	}
	_mm256_storeu_ps(lanes, acc);
	for (int k = 0; k < 8; k++)
		s += lanes[k];
	for (; i < n; i++) {
		x[i] = expf(x[i] - m);
		s += x[i];
	}
	return s;
}

static float expsum_plain(int64_t n, float *x, float m)
{
	float s = 0;

	for (int64_t i = 0; i < n; i++) {
		x[i] = expf(x[i] - m);
		s += x[i];
	}
	return s;
}

/* x[i] += bias[i] (bias NULL: none); the largest x[i], NaN when one is NaN
 * (the maximum is exact in any order) */
__attribute__((target("avx512f"))) static float max_avx512(int64_t n, float *x,
							  const float *bias)
{
	__m512 mv = _mm512_set1_ps(-INFINITY);
	__mmask16 nan = 0;
	int64_t i = 0;

	for (; i < n; i += 16) {
		__mmask16 k = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
		__m512 v = _mm512_mask_loadu_ps(mv, k, x + i);

		if (bias) {
			v = _mm512_mask_add_ps(v, k, v, _mm512_maskz_loadu_ps(k, bias + i));
			_mm512_mask_storeu_ps(x + i, k, v);
		}
		nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
		mv = _mm512_max_ps(mv, v);
	}
	return nan ? NAN : _mm512_reduce_max_ps(mv);
}

__attribute__((target("avx2"))) static float max_avx2(int64_t n, float *x, const float *bias)
{
	__m256 mv = _mm256_set1_ps(-INFINITY), nan = _mm256_setzero_ps();
	float lanes[8], m = -INFINITY;
	int64_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256 v = _mm256_loadu_ps(x + i);

		if (bias) {
			v = _mm256_add_ps(v, _mm256_loadu_ps(bias + i));
			_mm256_storeu_ps(x + i, v);
		}
		nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
		mv = _mm256_max_ps(mv, v);
	}
	_mm256_storeu_ps(lanes, mv);
	for (int k = 0; k < 8; k++)
		m = lanes[k] > m ? lanes[k] : m;
	if (_mm256_movemask_ps(nan))
		return NAN;
	for (; i < n; i++) {
		if (bias)
			x[i] += bias[i];
		if (x[i] != x[i])
			return NAN;
		m = x[i] > m ? x[i] : m;
	}
	return m;
}

static float max_plain(int64_t n, float *x, const float *bias)
{
	float m = -INFINITY;
	int nan = 0;

	for (int64_t i = 0; i < n; i++) {
		if (bias)
			x[i] += bias[i];
		nan |= x[i] != x[i];
		m = x[i] > m ? x[i] : m;
	}
	return nan ? NAN : m;
}

typedef void (*act_fn)(int act, int64_t n, float *y, const float *b);
typedef float (*expsum_fn)(int64_t n, float *x, float m);
typedef float (*max_fn)(int64_t n, float *x, const float *bias);

static void act_plain(int act, int64_t n, float *y, const float *b)
{
	act_scalar(act, 0, n, y, b);
}

static act_fn chosen;
static expsum_fn chosen_expsum;
static max_fn chosen_max;
static pthread_once_t chosen_once = PTHREAD_ONCE_INIT;

static void choose(void)
{
	if (npt_isa_has(NPT_ISA_AVX512, "avx512f")) {
		chosen = act_avx512;
		chosen_expsum = expsum_avx512;
		chosen_max = max_avx512;
	} else if (npt_isa_has(NPT_ISA_AVX2, "avx2,fma")) {
		chosen = act_avx2;
		chosen_expsum = expsum_avx2;
		chosen_max = max_avx2;
	} else {
		chosen = act_plain;
		chosen_expsum = expsum_plain;
		chosen_max = max_plain;
	}
}

float npt_softmax_exp_f32(int64_t n, float *x, const float *bias)
{
	pthread_once(&chosen_once, choose);
	return chosen_expsum(n, x, chosen_max(n, x, bias));
}

void npt_act_rows_f32(int act, int64_t n, float *y, const float *bias)
{
	pthread_once(&chosen_once, choose);
	if (act != NPT_ACT_NONE || bias)
		chosen(act, n, y, bias);
}
