/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * copy_kernels.c - bulk copies for the shared-memory paths: a cached copy
 * (for staging slots that must stay in the caches) and a streaming copy
 * (non-temporal stores, for outputs larger than the caches: they skip the
 * read-for-ownership of every destination line and do not evict the
 * staging slots).
 *
 * Contracts: any alignment and any length (0 included); source and
 * destination do not overlap. After streaming copies, copy_stream_fence()
 * must run before the data is published to another rank (streaming stores
 * are weakly ordered: a release store does not order them). Without x86
 * intrinsics both copies are memcpy and the fence is a compiler barrier.
 */
#include "npccl_internal.h"

#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

void copy_cached(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) static void stream_avx2(char *d, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i += 128) {
		__m256i a = _mm256_loadu_si256((const __m256i *)(s + i));
		__m256i b = _mm256_loadu_si256((const __m256i *)(s + i + 32));
		__m256i e = _mm256_loadu_si256((const __m256i *)(s + i + 64));
		__m256i f = _mm256_loadu_si256((const __m256i *)(s + i + 96));
		_mm256_stream_si256((__m256i *)(d + i), a);
		_mm256_stream_si256((__m256i *)(d + i + 32), b);
		_mm256_stream_si256((__m256i *)(d + i + 64), e);
		_mm256_stream_si256((__m256i *)(d + i + 96), f);
	}
}

static void stream_sse2(char *d, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i += 128)
		for (size_t k = 0; k < 128; k += 16)
			_mm_stream_si128((__m128i *)(d + i + k),
					 _mm_loadu_si128((const __m128i *)(s + i + k)));
}
#endif

void copy_stream(void *dst, const void *src, size_t n)
{
#if defined(__x86_64__)
	char *d = dst;
	const char *s = src;
	if (n < 512) {
		memcpy(d, s, n);
		return;
	}
	/* whole destination lines only: write-combining buffers flush full */
	size_t head = (64 - ((uintptr_t)d & 63)) & 63;
	memcpy(d, s, head);
	d += head, s += head, n -= head;
	size_t body = n & ~(size_t)127;
	if (__builtin_cpu_supports("avx2"))
		stream_avx2(d, s, body);
	else
		stream_sse2(d, s, body);
	memcpy(d + body, s + body, n - body);
#else
	memcpy(dst, src, n);
#endif
}

void copy_stream_fence(void)
{
#if defined(__x86_64__)
	_mm_sfence();
#else
	atomic_thread_fence(memory_order_seq_cst);
#endif
}
