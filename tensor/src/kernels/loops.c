/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * kernels.c - elementwise inner loops over register types (bool, i8, u8,
 * i32, i64, f32, f64), each in vector-vector, vector-scalar and
 * scalar-vector forms so that stride-0 operands never get expanded.
 *
 * Contracts: operands are unit-stride blocks of n elements (or a single
 * element for the scalar side); the output may be identical to an input
 * (same index) but must not otherwise overlap. Integer arithmetic wraps
 * (computed in the unsigned type), float ops are IEEE with NumPy's NaN rules
 * (maximum/minimum propagate NaN). The simple loops are vectorised by GCC
 * (-O3, AVX2 clone via target_clones; see docs/tensor.md for the
 * -fopt-info-vec evidence). f16/bf16 values live in f32 registers and are
 * rounded back by npt_round_f16/npt_round_bf16 after each op.
 */
#include "kernels.h"

#include <math.h>

typedef uint8_t b8;

/* ---- scalar semantics ---- */
#define WRAP(T, U, x, op, y) ((T)((U)(x) op (U)(y)))

#define IPOW(T, U)                                                     \
	static inline T ipow_##T(T b, T e)                                 \
	{                                                                  \
		U r = 1, base = (U)b;                                      \
		uint64_t ee = (uint64_t)e;                                 \
		while (ee) {                                               \
			if (ee & 1)                                        \
				r = (U)(r * base);                         \
			base = (U)(base * base);                           \
			ee >>= 1;                                          \
		}                                                          \
		return (T)r;                                               \
	}
IPOW(int8_t, uint8_t)
IPOW(uint8_t, uint8_t)
IPOW(int32_t, uint32_t)
IPOW(int64_t, uint64_t)

/* ---- loop generators ---- */
#define BIN3(NAME, T, OT, EXPR)                                                             \
	NPT_SIMD static void NAME##_vv(int64_t n, void *o_, const void *a_, const void *b_)  \
	{                                                                                   \
		OT *o = o_;                                                                 \
		const T *a = a_, *b = b_;                                                   \
		for (int64_t i = 0; i < n; i++) {                                           \
			T x = a[i], y = b[i];                                               \
			o[i] = (OT)(EXPR);                                                  \
		}                                                                           \
	}                                                                                   \
	NPT_SIMD static void NAME##_vs(int64_t n, void *o_, const void *a_, const void *b_)  \
	{                                                                                   \
		OT *o = o_;                                                                 \
		const T *a = a_;                                                            \
		const T y = *(const T *)b_;                                                 \
		for (int64_t i = 0; i < n; i++) {                                           \
			T x = a[i];                                                         \
			o[i] = (OT)(EXPR);                                                  \
		}                                                                           \
	}                                                                                   \
	NPT_SIMD static void NAME##_sv(int64_t n, void *o_, const void *a_, const void *b_)  \
	{                                                                                   \
		OT *o = o_;                                                                 \
		const T x = *(const T *)a_;                                                 \
		const T *b = b_;                                                            \
		for (int64_t i = 0; i < n; i++) {                                           \
			T y = b[i];                                                         \
			o[i] = (OT)(EXPR);                                                  \
		}                                                                           \
	}

#define UN(NAME, T, EXPR)                                                       \
	NPT_SIMD static void NAME(int64_t n, void *o_, const void *a_)           \
	{                                                                       \
		T *o = o_;                                                      \
		const T *a = a_;                                                \
		for (int64_t i = 0; i < n; i++) {                               \
			T x = a[i];                                             \
			o[i] = (T)(EXPR);                                       \
		}                                                               \
	}

/* integer binary ops for one type */
#define INT_BIN(T, U)                                                          \
	BIN3(add_##T, T, T, WRAP(T, U, x, +, y))                                  \
	BIN3(sub_##T, T, T, WRAP(T, U, x, -, y))                                  \
	BIN3(mul_##T, T, T, WRAP(T, U, x, *, y))                                  \
	BIN3(pow_##T, T, T, ipow_##T(x, y))                                       \
	BIN3(max_##T, T, T, x >= y ? x : y)                                       \
	BIN3(min_##T, T, T, x <= y ? x : y)                                       \
	BIN3(eq_##T, T, b8, x == y) BIN3(ne_##T, T, b8, x != y)                   \
	BIN3(lt_##T, T, b8, x < y) BIN3(le_##T, T, b8, x <= y)                    \
	BIN3(gt_##T, T, b8, x > y) BIN3(ge_##T, T, b8, x >= y)

INT_BIN(int8_t, uint8_t)
INT_BIN(uint8_t, uint8_t)
INT_BIN(int32_t, uint32_t)
INT_BIN(int64_t, uint64_t)

/* bool: add = or, mul = and (NumPy); no sub, neg */
BIN3(add_b8, b8, b8, x | y)
BIN3(mul_b8, b8, b8, x & y)
BIN3(max_b8, b8, b8, x | y)
BIN3(min_b8, b8, b8, x & y)
BIN3(eq_b8, b8, b8, x == y) BIN3(ne_b8, b8, b8, x != y)
BIN3(lt_b8, b8, b8, x < y) BIN3(le_b8, b8, b8, x <= y)
BIN3(gt_b8, b8, b8, x > y) BIN3(ge_b8, b8, b8, x >= y)

#define FLT_BIN(T, POW)                                                         \
	BIN3(add_##T, T, T, x + y) BIN3(sub_##T, T, T, x - y)                      \
	BIN3(mul_##T, T, T, x * y) BIN3(div_##T, T, T, x / y)                      \
	BIN3(pow_##T, T, T, POW(x, y))                                             \
	BIN3(max_##T, T, T, (x >= y || x != x) ? x : y)                            \
	BIN3(min_##T, T, T, (x <= y || x != x) ? x : y)                            \
	BIN3(eq_##T, T, b8, x == y) BIN3(ne_##T, T, b8, x != y)                    \
	BIN3(lt_##T, T, b8, x < y) BIN3(le_##T, T, b8, x <= y)                     \
	BIN3(gt_##T, T, b8, x > y) BIN3(ge_##T, T, b8, x >= y)

FLT_BIN(float, powf)
FLT_BIN(double, pow)

/* unary */
#define INT_UN(T, U)                                                                     \
	UN(neg_##T, T, (T)(0 - (U)x))                                                     \
	UN(abs_##T, T, x < 0 ? (T)(0 - (U)x) : x)                                          \
	UN(relu_##T, T, x > 0 ? x : 0)
INT_UN(int8_t, uint8_t)
INT_UN(int32_t, uint32_t)
INT_UN(int64_t, uint64_t)
UN(neg_uint8_t, uint8_t, (uint8_t)(0 - (unsigned)x))
UN(abs_uint8_t, uint8_t, x)
UN(relu_uint8_t, uint8_t, x)
UN(abs_b8, b8, x)

#define SQRT1_2 0.70710678118654752440
#define FLT_UN(T, S)                                                                     \
	UN(neg_##T, T, -x)                                                                \
	UN(abs_##T, T, fabs##S(x))                                                        \
	UN(exp_##T, T, exp##S(x))                                                         \
	UN(log_##T, T, log##S(x))                                                         \
	UN(sqrt_##T, T, sqrt##S(x))                                                       \
	UN(rsqrt_##T, T, (T)1 / sqrt##S(x))                                               \
	UN(tanh_##T, T, tanh##S(x))                                                       \
	UN(sigmoid_##T, T, ({ T e_ = exp##S(-fabs##S(x)); x >= 0 ? (T)1 / ((T)1 + e_) :      \
			    e_ / ((T)1 + e_); }))                                              \
	UN(relu_##T, T, (x >= 0 || x != x) ? x : (T)0)                                    \
	UN(gelu_##T, T, (T)0.5 * x * ((T)1 + erf##S(x * (T)SQRT1_2)))                     \
	UN(erf_##T, T, erf##S(x))
FLT_UN(float, f)
FLT_UN(double, )

/* where(c, a, b); each operand may be a scalar (flag) */
#define WHERE(T)                                                                           \
	NPT_SIMD static void where_##T(int64_t n, void *o_, const void *c_, int cs,         \
				       const void *a_, int as, const void *b_, int bs)      \
	{                                                                                  \
		T *o = o_;                                                                 \
		const b8 *c = c_;                                                          \
		const T *a = a_, *b = b_;                                                  \
		if (!cs && !as && !bs) {                                                   \
			for (int64_t i = 0; i < n; i++)                                    \
				o[i] = c[i] ? a[i] : b[i];                                 \
			return;                                                            \
		}                                                                          \
		int64_t ci = !cs, ai = !as, bi = !bs;                                      \
		for (int64_t i = 0; i < n; i++)                                            \
			o[i] = c[i * ci] ? a[i * ai] : b[i * bi];                          \
	}
WHERE(b8)
WHERE(int8_t)
WHERE(uint8_t)
WHERE(int32_t)
WHERE(int64_t)
WHERE(float)
WHERE(double)

/* ---- tables ---- */
static int rt_index(npt_dtype_t rt)
{
	switch (rt) {
	case NPT_BOOL: return 0;
	case NPT_I8: return 1;
	case NPT_U8: return 2;
	case NPT_I32: return 3;
	case NPT_I64: return 4;
	case NPT_F32: return 5;
	case NPT_F64: return 6;
	default: return -1;
	}
}

#define V3(N) { N##_vv, N##_vs, N##_sv }
#define NO3 { 0, 0, 0 }
#define ROW_BIN(T) V3(add_##T), V3(sub_##T), V3(mul_##T), NO3, V3(pow_##T), V3(max_##T),    \
		V3(min_##T), V3(eq_##T), V3(ne_##T), V3(lt_##T), V3(le_##T), V3(gt_##T),     \
		V3(ge_##T)
#define ROW_FBIN(T) V3(add_##T), V3(sub_##T), V3(mul_##T), V3(div_##T), V3(pow_##T),        \
		V3(max_##T), V3(min_##T), V3(eq_##T), V3(ne_##T), V3(lt_##T), V3(le_##T),     \
		V3(gt_##T), V3(ge_##T)

static const npt_k2_fn k2_table[7][NPT_OP_GE + 1][3] = {
	{ V3(add_b8), NO3, V3(mul_b8), NO3, NO3, V3(max_b8), V3(min_b8), V3(eq_b8), V3(ne_b8),
	  V3(lt_b8), V3(le_b8), V3(gt_b8), V3(ge_b8) },
	{ ROW_BIN(int8_t) },
	{ ROW_BIN(uint8_t) },
	{ ROW_BIN(int32_t) },
	{ ROW_BIN(int64_t) },
	{ ROW_FBIN(float) },
	{ ROW_FBIN(double) },
};

npt_k2_fn npt_kernel2(int op, npt_dtype_t rt, int variant)
{
	int r = rt_index(rt);

	if (r < 0 || op < 0 || op > NPT_OP_GE)
		return NULL;
	return k2_table[r][op][variant];
}

#define NU 11 /* NEG .. ERF */
#define ROW_FUN(T) { neg_##T, abs_##T, exp_##T, log_##T, sqrt_##T, rsqrt_##T, tanh_##T,   \
		sigmoid_##T, relu_##T, gelu_##T, erf_##T }
#define ROW_IUN(T) { neg_##T, abs_##T, 0, 0, 0, 0, 0, 0, relu_##T, 0, 0 }
static const npt_k1_fn k1_table[7][NU] = {
	{ 0, abs_b8, 0, 0, 0, 0, 0, 0, 0, 0, 0 },
	ROW_IUN(int8_t), ROW_IUN(uint8_t), ROW_IUN(int32_t), ROW_IUN(int64_t),
	ROW_FUN(float), ROW_FUN(double),
};

npt_k1_fn npt_kernel1(int op, npt_dtype_t rt)
{
	int r = rt_index(rt);

	if (r < 0 || op < NPT_OP_NEG || op > NPT_OP_ERF)
		return NULL;
	return k1_table[r][op - NPT_OP_NEG];
}

static const npt_k3_fn k3_table[7] = {
	where_b8, where_int8_t, where_uint8_t, where_int32_t, where_int64_t, where_float,
	where_double
};

npt_k3_fn npt_kernel_where(npt_dtype_t rt)
{
	int r = rt_index(rt);

	return r < 0 ? NULL : k3_table[r];
}

NPT_SIMD void npt_round_f16(int64_t n, float *o, const float *a)
{
	for (int64_t i = 0; i < n; i++)
		o[i] = (float)(_Float16)a[i];
}

NPT_SIMD void npt_round_bf16(int64_t n, float *o, const float *a)
{
	for (int64_t i = 0; i < n; i++)
		o[i] = npt_bf16_to_f32(npt_f32_to_bf16(a[i]));
}

int npt_any_negative(npt_dtype_t rt, int64_t n, const void *b)
{
	int neg = 0;

	switch (rt) {
	case NPT_I8: for (int64_t i = 0; i < n; i++) neg |= ((const int8_t *)b)[i] < 0; break;
	case NPT_I32: for (int64_t i = 0; i < n; i++) neg |= ((const int32_t *)b)[i] < 0; break;
	case NPT_I64: for (int64_t i = 0; i < n; i++) neg |= ((const int64_t *)b)[i] < 0; break;
	default: break;
	}
	return neg;
}
