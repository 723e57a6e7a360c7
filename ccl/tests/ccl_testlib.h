/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * ccl_testlib.h - input generators and a naive reference for the ccl tests.
 *
 * Inputs are small integers chosen so every result is exact in every dtype
 * and any reduction order: sums stay within +-32, products are +-2^k with
 * k <= 8 (integer products wrap identically everywhere), min/max in -5..10.
 * The reference computes in int64/double and converts once; AVG divides the
 * exact sum once, as the library does. bf16 rounding is implemented here
 * independently of the library (differential check).
 */
#ifndef CCL_TESTLIB_H
#define CCL_TESTLIB_H

#include <stdint.h>
#include <string.h>
#include "npccl.h"

static inline int is_signed_dt(npccl_dtype_t d)
{
	return d == NPCCL_INT8 || d == NPCCL_INT32 || d == NPCCL_INT64 || d >= NPCCL_FLOAT16;
}

static inline int is_float_dt(npccl_dtype_t d)
{
	return d >= NPCCL_FLOAT16;
}

/* value of element i on rank r for operation op */
static inline int64_t gen(npccl_dtype_t d, npccl_redop_t op, int r, size_t i)
{
	uint64_t x = (uint64_t)r * 7 + i * 13 + (i >> 7);
	switch (op) {
	case NPCCL_PROD: {
		int64_t v = (r + (int64_t)(i % 7)) % 3 == 0 ? 2 : 1;
		if (is_signed_dt(d) && (r * 3 + i) % 5 == 0)
			v = -v;
		return v;
	}
	case NPCCL_MIN:
	case NPCCL_MAX:
		return is_signed_dt(d) ? (int64_t)((r * 31 + i * 17) % 11) - 5
				       : (int64_t)((r * 31 + i * 17) % 11);
	default:
		return is_signed_dt(d) ? (int64_t)(x % 5) - 2 : (int64_t)(x % 5);
	}
}

static inline uint16_t t_f32_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	/* round to nearest even on the dropped 16 bits */
	uint32_t lower = u & 0xffff, upper = u >> 16;
	if (lower > 0x8000 || (lower == 0x8000 && (upper & 1)))
		upper++;
	return (uint16_t)upper;
}

static inline float t_bf16_to_f32(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* store an exact integer value v as dtype d at p[i] */
static inline void put(npccl_dtype_t d, void *p, size_t i, int64_t v)
{
	switch (d) {
	case NPCCL_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
	case NPCCL_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
	case NPCCL_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
	case NPCCL_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
	case NPCCL_INT64: ((int64_t *)p)[i] = v; break;
	case NPCCL_UINT64: ((uint64_t *)p)[i] = (uint64_t)v; break;
	case NPCCL_FLOAT16: ((_Float16 *)p)[i] = (_Float16)(float)v; break;
	case NPCCL_BFLOAT16: ((uint16_t *)p)[i] = t_f32_to_bf16((float)v); break;
	case NPCCL_FLOAT32: ((float *)p)[i] = (float)v; break;
	case NPCCL_FLOAT64: ((double *)p)[i] = (double)v; break;
	default: break;
	}
}

/* store / load a value v as float dtype d (f16, bf16, f32, else f64) at p[i] */
static inline void put_f(npccl_dtype_t d, void *p, size_t i, double v)
{
	switch (d) {
	case NPCCL_FLOAT16: ((_Float16 *)p)[i] = (_Float16)v; break;
	case NPCCL_BFLOAT16: ((uint16_t *)p)[i] = t_f32_to_bf16((float)v); break;
	case NPCCL_FLOAT32: ((float *)p)[i] = (float)v; break;
	default: ((double *)p)[i] = v; break;
	}
}

static inline double get_f(npccl_dtype_t d, const void *p, size_t i)
{
	switch (d) {
	case NPCCL_FLOAT16: return (float)((const _Float16 *)p)[i];
	case NPCCL_BFLOAT16: return t_bf16_to_f32(((const uint16_t *)p)[i]);
	case NPCCL_FLOAT32: return ((const float *)p)[i];
	default: return ((const double *)p)[i];
	}
}

/* expected reduction over ranks 0..p-1 of gen(.., i) (offset: element index
 * in the generator), stored as dtype d at out[i] */
static inline void put_reduced(npccl_dtype_t d, npccl_redop_t op, int p, void *out, size_t i,
			       size_t gi)
{
	int64_t acc = gen(d, op, 0, gi);
	uint64_t uacc = (uint64_t)acc;
	for (int r = 1; r < p; r++) {
		int64_t v = gen(d, op, r, gi);
		switch (op) {
		case NPCCL_PROD: uacc *= (uint64_t)v; acc = (int64_t)uacc; break;
		case NPCCL_MIN: acc = v < acc ? v : acc; break;
		case NPCCL_MAX: acc = v > acc ? v : acc; break;
		default: acc += v; break;
		}
	}
	if (op != NPCCL_AVG) {
		put(d, out, i, acc);
		return;
	}
	switch (d) {
	case NPCCL_FLOAT16: ((_Float16 *)out)[i] = (_Float16)((float)acc / (float)p); break;
	case NPCCL_BFLOAT16: ((uint16_t *)out)[i] = t_f32_to_bf16((float)acc / (float)p); break;
	case NPCCL_FLOAT32: ((float *)out)[i] = (float)acc / (float)p; break;
	case NPCCL_FLOAT64: ((double *)out)[i] = (double)acc / (double)p; break;
	case NPCCL_UINT8: ((uint8_t *)out)[i] = (uint8_t)((uint8_t)acc / (uint8_t)p); break;
	case NPCCL_UINT32: ((uint32_t *)out)[i] = (uint32_t)acc / (uint32_t)p; break;
	case NPCCL_UINT64: ((uint64_t *)out)[i] = (uint64_t)acc / (uint64_t)p; break;
	case NPCCL_INT8: ((int8_t *)out)[i] = (int8_t)((int8_t)acc / (int8_t)p); break;
	case NPCCL_INT32: ((int32_t *)out)[i] = (int32_t)acc / p; break;
	default: ((int64_t *)out)[i] = acc / p; break;
	}
}

#endif
