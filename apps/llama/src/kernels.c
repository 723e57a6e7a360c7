/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * kernels.c - the decoder's small per-token math, on concrete buffers: the
 * projections (GEMM/GEMV) are libnptensor's npt_linear (forward.c); what is
 * here is linear in the activations: RMSNorm, rotate-half RoPE and SwiGLU
 * (attention over the KV cache: attend.c).
 *
 * Conventions are Hugging Face's Llama: RMSNorm x * rsqrt(mean(x^2) + eps) *
 * w; RoPE rotates the pairs (i, i + d/2) by angle pos / scale * inv_freq[i];
 * SwiGLU silu(gate) * up.
 */
#include <math.h>

#include "internal.h"

void npl_rmsnorm(const float *x, const float *w, int n, double eps, float *out)
{
	double ss = 0;
	float r;

	for (int i = 0; i < n; i++)
		ss += (double)x[i] * x[i];
	r = (float)(1.0 / sqrt(ss / n + eps));
	for (int i = 0; i < n; i++)
		out[i] = w[i] * (x[i] * r);
}

void npl_rope(float *x, int heads, int d, int pos, const float *inv_freq, double scale)
{
	int half = d / 2;
	float t = (float)pos / (float)scale;

	for (int i = 0; i < half; i++) {
		float a = t * inv_freq[i];
		float c = cosf(a), s = sinf(a);

		for (int h = 0; h < heads; h++) {
			float *p = x + (int64_t)h * d;
			float x1 = p[i], x2 = p[i + half];

			p[i] = x1 * c - x2 * s;
			p[i + half] = x2 * c + x1 * s;
		}
	}
}

void npl_swiglu(float *gate, const float *up, int n)
{
	for (int i = 0; i < n; i++)
		gate[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}
