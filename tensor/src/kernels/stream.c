/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * stream.c - non-temporal (streaming) stores for large outputs.
 *
 * A result much larger than the last-level cache is never read back soon, so
 * writing it with ordinary stores costs a read of every destination line
 * first (write-allocate) and evicts useful data. Kernels that produce a big
 * output compute a block into an L1-resident buffer and copy it out with
 * npt_stream_store (SSE2 movntdq, part of the x86-64 baseline), then call
 * npt_stream_fence before their results are published.
 *
 * Contracts: dst and src must not overlap; any alignment and length.
 */
#include "kernels.h"

#include <emmintrin.h>
#include <string.h>

void npt_stream_store(void *dst, const void *src, size_t bytes)
{
	char *d = dst;
	const char *s = src;
	size_t head = (16 - ((uintptr_t)d & 15)) & 15;

	if (head > bytes)
		head = bytes;
	memcpy(d, s, head);
	d += head;
	s += head;
	bytes -= head;
	size_t n = bytes / 64;

	for (size_t i = 0; i < n; i++, d += 64, s += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)s);
		__m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
		__m128i e = _mm_loadu_si128((const __m128i *)(s + 48));

		_mm_stream_si128((__m128i *)d, a);
		_mm_stream_si128((__m128i *)(d + 16), b);
		_mm_stream_si128((__m128i *)(d + 32), c);
		_mm_stream_si128((__m128i *)(d + 48), e);
	}
	memcpy(d, s, bytes - n * 64);
}

void npt_stream_fence(void)
{
	_mm_sfence();
}

/*
 * Binary f32 arithmetic whose result goes straight to memory with streaming
 * stores: the last instruction of a fused chain with a big output. Same
 * IEEE operations as kernels.c (bit-identical results); AVX when the CPU has
 * it, SSE2 otherwise. variant: 0 vector-vector, 1 vector-scalar, 2 scalar-vector.
 */
#include <immintrin.h>

#define NT_LOOP(NAME, ATTR, VT, W, LOADU, SET1, STREAM, OPV, OPS)                        \
	ATTR static void NAME(int variant, int64_t n, float *o, const float *a,             \
			      const float *b)                                               \
	{                                                                                   \
		int64_t i = 0, sa = variant != 2, sb = variant != 1;                        \
		while (i < n && ((uintptr_t)(o + i) & (W * 4 - 1))) {                       \
			float x = a[i * sa], y = b[i * sb];                                 \
			o[i] = OPS;                                                         \
			i++;                                                                \
		}                                                                           \
		VT xs = SET1(a[0]), ys = SET1(b[0]);                                        \
		for (; i + W <= n; i += W) {                                                \
			VT x = sa ? LOADU(a + i) : xs, y = sb ? LOADU(b + i) : ys;          \
			STREAM(o + i, OPV);                                                 \
		}                                                                           \
		for (; i < n; i++) {                                                        \
			float x = a[i * sa], y = b[i * sb];                                 \
			o[i] = OPS;                                                         \
		}                                                                           \
	}

#define AVX_ATTR __attribute__((target("avx")))
NT_LOOP(nt_add_avx, AVX_ATTR, __m256, 8, _mm256_loadu_ps, _mm256_set1_ps, _mm256_stream_ps,
	_mm256_add_ps(x, y), x + y)
NT_LOOP(nt_sub_avx, AVX_ATTR, __m256, 8, _mm256_loadu_ps, _mm256_set1_ps, _mm256_stream_ps,
	_mm256_sub_ps(x, y), x - y)
NT_LOOP(nt_mul_avx, AVX_ATTR, __m256, 8, _mm256_loadu_ps, _mm256_set1_ps, _mm256_stream_ps,
	_mm256_mul_ps(x, y), x * y)
NT_LOOP(nt_div_avx, AVX_ATTR, __m256, 8, _mm256_loadu_ps, _mm256_set1_ps, _mm256_stream_ps,
	_mm256_div_ps(x, y), x / y)
NT_LOOP(nt_add_sse, , __m128, 4, _mm_loadu_ps, _mm_set1_ps, _mm_stream_ps, _mm_add_ps(x, y),
	x + y)
NT_LOOP(nt_sub_sse, , __m128, 4, _mm_loadu_ps, _mm_set1_ps, _mm_stream_ps, _mm_sub_ps(x, y),
	x - y)
NT_LOOP(nt_mul_sse, , __m128, 4, _mm_loadu_ps, _mm_set1_ps, _mm_stream_ps, _mm_mul_ps(x, y),
	x * y)
NT_LOOP(nt_div_sse, , __m128, 4, _mm_loadu_ps, _mm_set1_ps, _mm_stream_ps, _mm_div_ps(x, y),
	x / y)

int npt_stream_binary_f32(int op, int variant, int64_t n, float *o, const float *a,
			  const float *b)
{
	static int avx = -1;

	if (avx < 0)
		avx = __builtin_cpu_supports("avx");
	switch (op) {
	case NPT_OP_ADD: (avx ? nt_add_avx : nt_add_sse)(variant, n, o, a, b); return 1;
	case NPT_OP_SUB: (avx ? nt_sub_avx : nt_sub_sse)(variant, n, o, a, b); return 1;
	case NPT_OP_MUL: (avx ? nt_mul_avx : nt_mul_sse)(variant, n, o, a, b); return 1;
	case NPT_OP_DIV: (avx ? nt_div_avx : nt_div_sse)(variant, n, o, a, b); return 1;
	default: return 0;
	}
}
