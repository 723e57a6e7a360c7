/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * quant.c - a linear layer's input in the precision of its packed weights,
 * per row, threaded and vectorised. int8: dynamic quantisation,
 * scale[m] = max_k |x[m, k]| / 127 (1 for a row of zeros), q = round(x /
 * scale) in [-127, 127], round half to even (nearbyintf in the default
 * rounding mode). The product then accumulates q against the int8 weights
 * exactly in int32 (gemm.c), so its only errors are the two roundings.
 *
 * Contracts: x is M rows of K floats, row stride ldx, unit column stride;
 * q is M * K bytes, row-major; rows are independent (threads split rows).
 * A NaN or infinity in a row makes its scale NaN, so the row's outputs are
 * NaN (a float product would give NaN or infinities). bf16: each value
 * rounded to nearest even (NaN kept quiet), bit for bit npt_f32_to_bf16.
 */
#include "kernels.h"

#include <math.h>
#include <string.h>

typedef struct {
	const float *x;
	int64_t K, ldx;
	int8_t *q;
	float *scale;
} quant_job_t;

/*
 * max |x[k]| as the largest of the bit patterns with the sign cleared (for
 * such patterns the unsigned order is the order of the magnitudes, infinity
 * above every finite value and NaN above infinity): an integer maximum, which
 * vectorises where a float one with NaN rules does not
 */
NPT_SIMD512 static uint32_t amax_bits(const float *x, int64_t K)
{
	uint32_t m = 0;

	for (int64_t k = 0; k < K; k++) {
		uint32_t u;

		memcpy(&u, &x[k], sizeof(u));
		u &= 0x7fffffffu;
		m = u > m ? u : m;
	}
	return m;
}

NPT_SIMD512 static void quant_row(const float *x, int64_t K, int8_t *q, float *scale)
{
	uint32_t mb = amax_bits(x, K);
	float amax, inv;

	if (mb >= 0x7f800000u) {	/* an infinity or a NaN */
		for (int64_t k = 0; k < K; k++)
			q[k] = 0;
		*scale = NAN;
		return;
	}
	memcpy(&amax, &mb, sizeof(amax));
	*scale = amax > 0 ? amax / 127.0f : 1.0f;
	inv = 1.0f / *scale;
	for (int64_t k = 0; k < K; k++) {
		float v = nearbyintf(x[k] * inv);

		q[k] = (int8_t)(v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v);
	}
}

static void quant_task(void *arg, int64_t begin, int64_t end, int tid)
{
	const quant_job_t *j = arg;

	(void)tid;
	for (int64_t r = begin; r < end; r++)
		quant_row(j->x + r * j->ldx, j->K, j->q + r * j->K, j->scale + r);
}

NPT_SIMD512 static void bf16_row(const float *x, int64_t K, uint16_t *h)
{
	for (int64_t k = 0; k < K; k++) {
		uint32_t u;

		memcpy(&u, &x[k], sizeof(u));
		h[k] = (u & 0x7fffffffu) > 0x7f800000u ? (uint16_t)((u >> 16) | 0x40) :
			(uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
	}
}

/* x = h + l in two bfloat16 terms (npt_bf16_split) */
NPT_SIMD512 static void bf16_split_row(const float *x, int64_t K, uint16_t *h, uint16_t *l)
{
	for (int64_t k = 0; k < K; k++)
		npt_bf16_split(x[k], &h[k], &l[k]);
}

typedef struct {
	const float *x;
	int64_t K, ldx;
	uint16_t *h, *l;
} bf16_job_t;

static void bf16_task(void *arg, int64_t begin, int64_t end, int tid)
{
	const bf16_job_t *j = arg;

	(void)tid;
	for (int64_t r = begin; r < end; r++)
		if (j->l)
			bf16_split_row(j->x + r * j->ldx, j->K, j->h + r * j->K, j->l + r * j->K);
		else
			bf16_row(j->x + r * j->ldx, j->K, j->h + r * j->K);
}

void npt_round_rows_bf16(const float *x, int64_t M, int64_t K, int64_t ldx, uint16_t *h)
{
	bf16_job_t j = { x, K, ldx, h, NULL };

	npt_parallel_for(M, 65536 / (K ? K : 1) + 1, bf16_task, &j);
}

void npt_split_rows_bf16(const float *x, int64_t M, int64_t K, int64_t ldx, uint16_t *h,
			 uint16_t *l)
{
	bf16_job_t j = { x, K, ldx, h, l };

	npt_parallel_for(M, 65536 / (K ? K : 1) + 1, bf16_task, &j);
}

void npt_quantize_rows_s8(const float *x, int64_t M, int64_t K, int64_t ldx, int8_t *q,
			  float *scale)
{
	quant_job_t j = { x, K, ldx, q, scale };

	npt_parallel_for(M, 65536 / (K ? K : 1) + 1, quant_task, &j);
}
