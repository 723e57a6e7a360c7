/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * attend.c - one query row's causal attention over a sequence's KV cache:
 * softmax(q . k_j * scale) over the cached positions j, then the weighted
 * sum of the v_j. Every decode step runs it once per head and layer, a
 * prefill once per token, head and layer, so it is written for the
 * vectoriser: each dot product is 16 independent partial sums (one vector
 * register, added in a fixed tree at the end), the weighted sum runs along
 * the head dimension. Compiled for AVX-512, AVX2 and the baseline
 * (target_clones: the loader picks the CPU's); the clones compute the same
 * sums in the same order, up to the fused multiply-adds AVX2 and AVX-512
 * have. -O3 (llama.mk).
 */
#include <math.h>

#include "internal.h"

#define CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#define LANES 16

static inline float dot(const float *a, const float *b, int d)
{
	float s[LANES] = { 0 };
	int i = 0;

	for (; i + LANES <= d; i += LANES)
		for (int l = 0; l < LANES; l++)
			s[l] += a[i + l] * b[i + l];
	for (int l = 0; i + l < d; l++)
		s[l] += a[i + l] * b[i + l];
	for (int w = LANES / 2; w > 0; w /= 2)
		for (int l = 0; l < w; l++)
			s[l] += s[l + w];
	return s[0];
}

CLONES void npl_attend(const float *q, const float *kc, const float *vc, int len, int stride,
		       int d, float scale, float *scores, float *out)
{
	float max = -INFINITY, sum = 0;

	for (int j = 0; j < len; j++) {
		scores[j] = dot(q, kc + (int64_t)j * stride, d) * scale;
		max = scores[j] > max ? scores[j] : max;
	}
	for (int j = 0; j < len; j++) {
		scores[j] = expf(scores[j] - max);
		sum += scores[j];
	}
	for (int i = 0; i < d; i++)
		out[i] = 0;
	for (int j = 0; j < len; j++) {
		const float *v = vc + (int64_t)j * stride;
		float p = scores[j] / sum;

		for (int i = 0; i < d; i++)
			out[i] += p * v[i];
	}
}
