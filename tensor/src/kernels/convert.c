/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * convert.c - typed strided copies between every pair of dtypes (NumPy
 * "unsafe" casting: C conversions, float->bool is x != 0, f16 uses the
 * compiler's _Float16 conversions, bf16 rounds to nearest even).
 *
 * Contracts: strides are in elements of the respective type; dst and src do
 * not overlap unless identical. Unit-stride copies have their own loop so
 * that GCC vectorises them.
 */
#include "kernels.h"

#include <string.h>

typedef uint8_t npt_bool_t;
typedef uint16_t npt_bf16_t;

static inline float bf16_ld(npt_bf16_t h) { return npt_bf16_to_f32(h); }
static inline npt_bf16_t bf16_st(float f) { return npt_f32_to_bf16(f); }

/* load: storage -> C value; store: C value -> storage */
#define LD_b8(x) (x)
#define LD_i8(x) (x)
#define LD_u8(x) (x)
#define LD_i32(x) (x)
#define LD_i64(x) (x)
#define LD_f16(x) ((float)(x))
#define LD_bf16(x) bf16_ld(x)
#define LD_f32(x) (x)
#define LD_f64(x) (x)

#define ST_b8(v) ((npt_bool_t)((v) != 0))
#define ST_i8(v) ((int8_t)(v))
#define ST_u8(v) ((uint8_t)(v))
#define ST_i32(v) ((int32_t)(v))
#define ST_i64(v) ((int64_t)(v))
#define ST_f16(v) ((_Float16)(v))
#define ST_bf16(v) bf16_st((float)(v))
#define ST_f32(v) ((float)(v))
#define ST_f64(v) ((double)(v))

#define T_b8 npt_bool_t
#define T_i8 int8_t
#define T_u8 uint8_t
#define T_i32 int32_t
#define T_i64 int64_t
#define T_f16 _Float16
#define T_bf16 npt_bf16_t
#define T_f32 float
#define T_f64 double

#define CONV(S, D)                                                                          \
	NPT_SIMD static void conv_##S##_##D(int64_t n, void *dst, int64_t ds, const void *src, \
					    int64_t ss)                                      \
	{                                                                                   \
		T_##D *d = dst;                                                             \
		const T_##S *s = src;                                                       \
		if (ds == 1 && ss == 1) {                                                   \
			for (int64_t i = 0; i < n; i++)                                     \
				d[i] = ST_##D(LD_##S(s[i]));                                \
		} else {                                                                    \
			for (int64_t i = 0; i < n; i++)                                     \
				d[i * ds] = ST_##D(LD_##S(s[i * ss]));                      \
		}                                                                           \
	}

#define CONV_FROM(S)                                                                         \
	CONV(S, b8) CONV(S, i8) CONV(S, u8) CONV(S, i32) CONV(S, i64) CONV(S, f16)      \
	CONV(S, bf16) CONV(S, f32) CONV(S, f64)

CONV_FROM(b8)
CONV_FROM(i8)
CONV_FROM(u8)
CONV_FROM(i32)
CONV_FROM(i64)
CONV_FROM(f16)
CONV_FROM(bf16)
CONV_FROM(f32)
CONV_FROM(f64)

#define ROW(S)                                                                              \
	{ conv_##S##_b8, conv_##S##_i8, conv_##S##_u8, conv_##S##_i32, conv_##S##_i64,   \
	  conv_##S##_f16, conv_##S##_bf16, conv_##S##_f32, conv_##S##_f64 }

static const npt_conv_fn conv_table[NPT_NDTYPES][NPT_NDTYPES] = {
	ROW(b8), ROW(i8), ROW(u8), ROW(i32), ROW(i64), ROW(f16), ROW(bf16), ROW(f32), ROW(f64)
};

npt_conv_fn npt_conv(npt_dtype_t from, npt_dtype_t to)
{
	return conv_table[from][to];
}
