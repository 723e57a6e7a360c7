/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * gemv.c - the products of a decoder's decode step: y[m, n] = x[m, k] @ W^T
 * for a few input rows (m <= NPT_GEMV_MAX_ROWS), where every weight byte is
 * read once per call and the time is the time to stream the weight from
 * memory. The pool's threads split the output columns; no memory is taken
 * per call (the padded, converted input rows live in a buffer kept between
 * calls, under the evaluation lock); each output is summed by one thread in
 * a fixed order, so results do not depend on the thread count.
 *
 * npt_gemv_f32: a plain float32 weight, rows of k floats ldw apart (a
 * model's [out, in] tensor, or a column slice of one). Four rows at a time,
 * AVX-512 or AVX2+FMA chosen at run time, a portable loop otherwise (the
 * choice capped by $NPT_KERNEL_ISA, core/isa.c).
 *
 * npt_gemv_packed: a weight in the layout npt_pack_weight made for this CPU
 * (pack.c), read in place. The layouts read here are oneDNN's blocked
 * panels with 64-column blocks outermost: for column block b and row block
 * r, a [R][64][P] panel at b * stride_n + r * stride_k elements, where an
 * input index k is (r, k_hi, k_lo) = (k / (R * P), k / P % R, k % P) and P
 * = 1 (f32), 2 (bf16 pairs) or 4 (int8 quads); the tag spells out R, 64, P,
 * both strides and the padded sizes (oneDNN pads with zeros; an int8 layout
 * may carry oneDNN's compensation after the panels, unread), and anything
 * else is NPT_E_UNSUPPORTED (the caller then uses npt_linear). Per column
 * block, four 16-lane accumulators per input row walk the panels in memory
 * order:
 *   f32   acc += broadcast(x[k]) * w[k][:]                   (AVX-512F)
 *   bf16  acc += dot of the pair (x[k], x[k+1]) in bf16 and w (AVX512_BF16)
 *   bf16x3 the same with x and w each as two bf16 terms (hi, lo: pack.c),
 *         acc += xh.wh + xh.wl + xl.wh: two weight streams, the high panels
 *         and the low ones lo_off bytes further (the bytes of an f32 weight)
 *   int8  acc += dot of the quad x8[k..k+3] + 128 (u8) and w (AVX512_VNNI),
 *         and one more VNNI dot of 1s gives the column sums, so that
 *         y = (acc - 128 * colsum) * xscale * wscale[n] (exact int32 sums)
 * Each step prefetches its panel 4 KiB ahead (one stream per column block
 * and little arithmetic per byte: the hardware prefetcher alone reached
 * 77 % of the read bandwidth on bf16 weights, 100 % with it).
 * The input is rounded as npt_linear rounds it for that layout: bf16 to
 * nearest even, int8 per row with scale max |x| / 127 and round half to even
 * (quant.c's arithmetic); so results equal npt_linear's up to the order of
 * the float32 sums.
 */
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define NB 64			/* columns per block of the packed layouts */
#define MAXR NPT_GEMV_MAX_ROWS

/* ------------------------------------------------------------ plain f32 */

struct f32_job;
typedef void (*f32_rows_fn)(const struct f32_job *, int64_t, int64_t);

struct f32_job {
	const float *x, *w;
	float *y;
	int64_t m, n, k, ldw;
	f32_rows_fn rows;	/* the kernel for this CPU */
};

static void f32_rows_c(const struct f32_job *j, int64_t r0, int64_t r1)
{
	for (int64_t r = r0; r < r1; r++)
		for (int64_t i = 0; i < j->m; i++) {
			const float *w = j->w + r * j->ldw, *x = j->x + i * j->k;
			float s[8] = { 0 };
			int64_t c = 0;

			for (; c + 8 <= j->k; c += 8)
				for (int l = 0; l < 8; l++)
					s[l] += w[c + l] * x[c + l];
			for (; c < j->k; c++)
				s[0] += w[c] * x[c];
			j->y[i * j->n + r] = ((s[0] + s[4]) + (s[1] + s[5])) +
					     ((s[2] + s[6]) + (s[3] + s[7]));
		}
}

__attribute__((target("avx512f"))) static void f32_rows_avx512(const struct f32_job *j,
								  int64_t r0, int64_t r1)
{
	const int64_t K = j->k, k16 = K & ~(int64_t)15;
	const __mmask16 tail = (__mmask16)((1u << (K - k16)) - 1);
	int64_t r = r0;

	for (; r < r1; r += 4) {
		int rows = r1 - r < 4 ? (int)(r1 - r) : 4;
		const float *w[4];

		for (int q = 0; q < 4; q++)
			w[q] = j->w + (r + (q < rows ? q : 0)) * j->ldw;
		for (int64_t i = 0; i < j->m; i++) {
			const float *x = j->x + i * K;
			__m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
			int64_t c = 0;

			for (; c < k16; c += 16) {
				__m512 xv = _mm512_loadu_ps(x + c);

				a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w[0] + c), xv, a0);
				a1 = _mm512_fmadd_ps(_mm512_loadu_ps(w[1] + c), xv, a1);
				a2 = _mm512_fmadd_ps(_mm512_loadu_ps(w[2] + c), xv, a2);
				a3 = _mm512_fmadd_ps(_mm512_loadu_ps(w[3] + c), xv, a3);
			}
			if (tail) {
				__m512 xv = _mm512_maskz_loadu_ps(tail, x + c);

				a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, w[0] + c), xv, a0);
				a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, w[1] + c), xv, a1);
				a2 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, w[2] + c), xv, a2);
				a3 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, w[3] + c), xv, a3);
			}
			float *y = j->y + i * j->n + r;
			float s[4] = { _mm512_reduce_add_ps(a0), _mm512_reduce_add_ps(a1),
				       _mm512_reduce_add_ps(a2), _mm512_reduce_add_ps(a3) };

			for (int q = 0; q < rows; q++)
				y[q] = s[q];
		}
	}
}

__attribute__((target("avx2,fma"))) static float hsum256(__m256 v)
{
	__m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));

	r = _mm_add_ps(r, _mm_movehl_ps(r, r));
	r = _mm_add_ss(r, _mm_movehdup_ps(r));
	return _mm_cvtss_f32(r);
}

__attribute__((target("avx2,fma"))) static void f32_rows_avx2(const struct f32_job *j,
							      int64_t r0, int64_t r1)
{
	const int64_t K = j->k, k8 = K & ~(int64_t)7;

	for (int64_t r = r0; r < r1; r += 4) {
		int rows = r1 - r < 4 ? (int)(r1 - r) : 4;
		const float *w[4];

		for (int q = 0; q < 4; q++)
			w[q] = j->w + (r + (q < rows ? q : 0)) * j->ldw;
		for (int64_t i = 0; i < j->m; i++) {
			const float *x = j->x + i * K;
			__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
			float s[4];
			int64_t c = 0;

			for (; c < k8; c += 8) {
				__m256 xv = _mm256_loadu_ps(x + c);

				a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w[0] + c), xv, a0);
				a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w[1] + c), xv, a1);
				a2 = _mm256_fmadd_ps(_mm256_loadu_ps(w[2] + c), xv, a2);
				a3 = _mm256_fmadd_ps(_mm256_loadu_ps(w[3] + c), xv, a3);
			}
			s[0] = hsum256(a0);
			s[1] = hsum256(a1);
			s[2] = hsum256(a2);
			s[3] = hsum256(a3);
			for (int q = 0; q < rows; q++) {
				for (int64_t t = c; t < K; t++)
					s[q] += w[q][t] * x[t];
				j->y[i * j->n + r + q] = s[q];
			}
		}
	}
}

static void f32_task(void *arg, int64_t begin, int64_t end, int tid)
{
	const struct f32_job *j = arg;

	(void)tid;
	j->rows(j, begin * 4, end * 4 < j->n ? end * 4 : j->n);
}

static npt_status_t check_rows(const char *op, const float *x, int64_t m, const void *w,
			       int64_t n, int64_t k, const float *y)
{
	if (!x || !w || !y)
		return npt_fail(NPT_E_INVAL, "%s: x, the weight and y must not be NULL", op);
	if (m < 1 || m > MAXR)
		return npt_fail(NPT_E_SHAPE, "%s: %lld input rows; it takes 1 to %d (a decode "
				"step's rows: use npt_linear for more)", op, (long long)m, MAXR);
	if (n < 1 || k < 1 || n > (INT64_C(1) << 31) || k > (INT64_C(1) << 31))
		return npt_fail(NPT_E_SHAPE, "%s: a [%lld, %lld] weight: both sizes must be in "
				"1..2^31", op, (long long)n, (long long)k);
	return NPT_OK;
}

NPT_API npt_status_t npt_gemv_f32(const float *x, int64_t m, const float *w, int64_t ldw,
				  int64_t n, int64_t k, float *y)
{
	struct f32_job j = { x, w, y, m, n, k, ldw, f32_rows_c };
	npt_status_t s;

	if ((s = check_rows("npt_gemv_f32", x, m, w, n, k, y)))
		return s;
	if (ldw < k)
		return npt_fail(NPT_E_SHAPE, "npt_gemv_f32: rows %lld floats apart cannot hold "
				"%lld columns", (long long)ldw, (long long)k);
	if (n > 1 && ldw > (PTRDIFF_MAX / (int64_t)sizeof(float) - k) / (n - 1))
		return npt_fail(NPT_E_OVERFLOW, "npt_gemv_f32: %lld rows %lld floats apart overflow "
				"the address range", (long long)n, (long long)ldw);
	if (npt_isa_has(NPT_ISA_AVX512, "avx512f"))
		j.rows = f32_rows_avx512;
	else if (npt_isa_has(NPT_ISA_AVX2, "avx2,fma"))
		j.rows = f32_rows_avx2;
	npt_eval_lock();
	npt_parallel_for_hot((n + 3) / 4, 8, f32_task, &j);
	npt_eval_unlock();
	return NPT_OK;
}

/* ------------------------------------------------------------ packed layouts */

/* a packed layout this file reads, from its tag */
struct blocked {
	int dtype;		/* NPT_F32, NPT_BF16, NPT_PACKED_BF16X3, NPT_I8 */
	int64_t pk, pn;		/* padded sizes */
	int64_t str_k, str_n;	/* elements between row blocks, between column blocks */
	int64_t R, P;		/* a panel: [R][64][P] */
	size_t scale_bytes;	/* int8: the N float scales first, padded to 64 bytes */
	size_t lo_off;		/* bf16x3: where the low terms start, from the high ones */
	size_t cells;		/* elements of the panels: (pn / 64) * str_n */
	int extra;		/* int8: oneDNN's compensation follows the weights */
};

static int parse_tag(const char *tag, int64_t n, int64_t k, struct blocked *b)
{
	const char *p = tag;
	long long K, N, pk, pn, sk, sn, R, nb, P = 1;
	char dt[8], tail[64];
	int x3;
	int used = 0;

	for (int i = 0; i < 2 && p; i++)	/* "onednn-X.Y.Z/ISA/" */
		p = strchr(p + (i ? 1 : 0), '/');
	if (!p || sscanf(p, "/%7[a-z0-9]/k%lld.n%lld/pad%lld.%lld/str%lld.%lld/blk%lldk%lldn%n",
			 dt, &K, &N, &pk, &pn, &sk, &sn, &R, &nb, &used) != 9 || !used)
		return 0;
	p += used;
	tail[0] = 0;
	if (*p >= '0' && *p <= '9') {
		if (sscanf(p, "%lldk%63s", &P, tail) < 1)
			return 0;
	} else {
		snprintf(tail, sizeof(tail), "%s", p);
	}
	x3 = !strcmp(dt, "bf16x3");
	b->dtype = !strcmp(dt, "f32") ? NPT_F32 : !strcmp(dt, "bf16") ? NPT_BF16 :
		   x3 ? NPT_PACKED_BF16X3 : !strcmp(dt, "s8") ? NPT_I8 : -1;
	if (b->dtype < 0 || (b->dtype == NPT_F32 && P != 1) || ((b->dtype == NPT_BF16 || x3) &&
	    P != 2) || (b->dtype == NPT_I8 && P != 4))
		return 0;
	/*
	 * int8: plain s8 weights, with or without the compensation oneDNN appends
	 * after them for signed inputs (flag 1; this product sums the columns
	 * itself and never reads it); a scale adjustment (flag 2) is not read here
	 */
	b->extra = 0;
	if (b->dtype == NPT_I8 && !strncmp(tail, "/x1.", 4) && strstr(tail, "/scales-per-n"))
		b->extra = 1;
	else if (strcmp(tail, b->dtype == NPT_I8 ? "/x0.0/scales-per-n" : ""))
		return 0;
	/* numbers of any size may be written: none above 2^40 (as unpack.c) before
	 * they are multiplied, so that no product below overflows */
	if (K != k || N != n || nb != NB || R < 1 || pk < K || pn < N || R > (INT64_C(1) << 40) ||
	    pk > (INT64_C(1) << 40) || pn > (INT64_C(1) << 40) || pk % (R * P) ||
	    pn % NB || sk != R * NB * P || sn != pk * NB)
		return 0;
	b->pk = pk;
	b->pn = pn;
	b->str_k = sk;
	b->str_n = sn;
	b->R = R;
	b->P = P;
	b->scale_bytes = b->dtype == NPT_I8 ? ((size_t)n * sizeof(float) + 63) / 64 * 64 : 0;
	/* the panels' bytes, (pn / NB) * sn elements, must have a size */
	if (__builtin_mul_overflow((size_t)(pn / NB), (size_t)sn, &b->cells) ||
	    b->cells > SIZE_MAX / 8)
		return 0;
	b->lo_off = x3 ? (b->cells * 2 + 63) / 64 * 64 : 0;
	return 1;
}

struct packed_job {
	const struct blocked *b;
	const void *w;		/* the panels */
	const float *wscale;	/* int8 */
	const void *xin;	/* the input rows, padded to pk: f32, bf16 pairs or u8 quads
				 * (bf16x3: the high pairs, then m rows of the low ones) */
	const float *xscale;	/* int8 */
	float *y;
	int64_t m, n;
};

__attribute__((target("avx512f"))) static void store_block(float *y, int64_t n, int64_t c0,
							    const __m512 acc[4])
{
	int64_t left = n - c0;

	for (int q = 0; q < 4; q++, left -= 16) {
		if (left <= 0)
			break;
		if (left >= 16)
			_mm512_storeu_ps(y + c0 + 16 * q, acc[q]);
		else
			_mm512_mask_storeu_ps(y + c0 + 16 * q, (__mmask16)((1u << left) - 1),
					      acc[q]);
	}
}

#ifndef PREFETCH
#define PREFETCH 4096
#endif

/* the 256 bytes a panel step reads, PREFETCH bytes ahead: the hardware's
 * prefetcher alone leaves one stream's memory idle between misses */
static inline __attribute__((always_inline)) void prefetch_panel(const void *w)
{
	for (int l = 0; l < 256; l += 64)
		_mm_prefetch((const char *)w + PREFETCH + l, _MM_HINT_T0);
}

__attribute__((target("avx512f"))) static void packed_f32(const struct packed_job *j,
							    int64_t b0, int64_t b1)
{
	const struct blocked *b = j->b;
	const float *xs = j->xin;

	for (int64_t blk = b0; blk < b1; blk++) {
		const float *w = (const float *)j->w + blk * b->str_n;
		__m512 acc[MAXR][4];

		for (int i = 0; i < j->m; i++)
			for (int q = 0; q < 4; q++)
				acc[i][q] = _mm512_setzero_ps();
		for (int64_t k = 0; k < b->pk; k++, w += NB) {
			__m512 w0 = _mm512_load_ps(w), w1 = _mm512_load_ps(w + 16);
			__m512 w2 = _mm512_load_ps(w + 32), w3 = _mm512_load_ps(w + 48);

			prefetch_panel(w);

			for (int i = 0; i < j->m; i++) {
				__m512 xv = _mm512_set1_ps(xs[i * b->pk + k]);

				acc[i][0] = _mm512_fmadd_ps(xv, w0, acc[i][0]);
				acc[i][1] = _mm512_fmadd_ps(xv, w1, acc[i][1]);
				acc[i][2] = _mm512_fmadd_ps(xv, w2, acc[i][2]);
				acc[i][3] = _mm512_fmadd_ps(xv, w3, acc[i][3]);
			}
		}
		for (int i = 0; i < j->m; i++)
			store_block(j->y + i * j->n, j->n, blk * NB, acc[i]);
	}
}

__attribute__((target("avx512f,avx512bf16"))) static void packed_bf16(const struct packed_job *j,
									int64_t b0, int64_t b1)
{
	const struct blocked *b = j->b;
	const uint32_t *xs = j->xin;	/* bf16 pairs */

	for (int64_t blk = b0; blk < b1; blk++) {
		const uint16_t *w = (const uint16_t *)j->w + blk * b->str_n;
		__m512 acc[MAXR][4];

		for (int i = 0; i < j->m; i++)
			for (int q = 0; q < 4; q++)
				acc[i][q] = _mm512_setzero_ps();
		for (int64_t k = 0; k < b->pk / 2; k++, w += 2 * NB) {
			prefetch_panel(w);
			__m512bh w0 = (__m512bh)_mm512_load_si512(w);
			__m512bh w1 = (__m512bh)_mm512_load_si512(w + 32);
			__m512bh w2 = (__m512bh)_mm512_load_si512(w + 64);
			__m512bh w3 = (__m512bh)_mm512_load_si512(w + 96);

			for (int i = 0; i < j->m; i++) {
				__m512bh xv = (__m512bh)_mm512_set1_epi32((int)xs[i * b->pk / 2 + k]);

				acc[i][0] = _mm512_dpbf16_ps(acc[i][0], xv, w0);
				acc[i][1] = _mm512_dpbf16_ps(acc[i][1], xv, w1);
				acc[i][2] = _mm512_dpbf16_ps(acc[i][2], xv, w2);
				acc[i][3] = _mm512_dpbf16_ps(acc[i][3], xv, w3);
			}
		}
		for (int i = 0; i < j->m; i++)
			store_block(j->y + i * j->n, j->n, blk * NB, acc[i]);
	}
}

__attribute__((target("avx512f,avx512bf16"))) static void packed_bf16x3(const struct packed_job *j,
									  int64_t b0, int64_t b1)
{
	const struct blocked *b = j->b;
	const uint32_t *xh = j->xin, *xl = xh + j->m * b->pk / 2;	/* bf16 pairs */

	for (int64_t blk = b0; blk < b1; blk++) {
		const uint16_t *w = (const uint16_t *)j->w + blk * b->str_n;
		const uint16_t *v = (const uint16_t *)((const char *)w + b->lo_off);
		__m512 acc[MAXR][4];

		for (int i = 0; i < j->m; i++)
			for (int q = 0; q < 4; q++)
				acc[i][q] = _mm512_setzero_ps();
		for (int64_t k = 0; k < b->pk / 2; k++, w += 2 * NB, v += 2 * NB) {
			prefetch_panel(w);
			prefetch_panel(v);
			__m512bh h[4], l[4];

			for (int q = 0; q < 4; q++) {
				h[q] = (__m512bh)_mm512_load_si512(w + 32 * q);
				l[q] = (__m512bh)_mm512_load_si512(v + 32 * q);
			}
			for (int i = 0; i < j->m; i++) {
				__m512bh xhv = (__m512bh)_mm512_set1_epi32((int)xh[i * b->pk / 2 + k]);
				__m512bh xlv = (__m512bh)_mm512_set1_epi32((int)xl[i * b->pk / 2 + k]);

				for (int q = 0; q < 4; q++) {
					acc[i][q] = _mm512_dpbf16_ps(acc[i][q], xlv, h[q]);
					acc[i][q] = _mm512_dpbf16_ps(acc[i][q], xhv, l[q]);
					acc[i][q] = _mm512_dpbf16_ps(acc[i][q], xhv, h[q]);
				}
			}
		}
		for (int i = 0; i < j->m; i++)
			store_block(j->y + i * j->n, j->n, blk * NB, acc[i]);
	}
}

__attribute__((target("avx512f,avx512vnni"))) static void packed_s8(const struct packed_job *j,
								      int64_t b0, int64_t b1)
{
	const struct blocked *b = j->b;
	const uint32_t *xs = j->xin;	/* u8 quads: x8 + 128 */
	const __m512i ones = _mm512_set1_epi8(1);

	for (int64_t blk = b0; blk < b1; blk++) {
		const int8_t *w = (const int8_t *)j->w + blk * b->str_n;
		__m512i acc[MAXR][4], cs[4];
		__m512 out[4];

		for (int q = 0; q < 4; q++) {
			cs[q] = _mm512_setzero_si512();
			for (int i = 0; i < j->m; i++)
				acc[i][q] = _mm512_setzero_si512();
		}
		for (int64_t k = 0; k < b->pk / 4; k++, w += 4 * NB) {
			__m512i w0 = _mm512_load_si512(w), w1 = _mm512_load_si512(w + 64);
			__m512i w2 = _mm512_load_si512(w + 128), w3 = _mm512_load_si512(w + 192);

			prefetch_panel(w);

			cs[0] = _mm512_dpbusd_epi32(cs[0], ones, w0);
			cs[1] = _mm512_dpbusd_epi32(cs[1], ones, w1);
			cs[2] = _mm512_dpbusd_epi32(cs[2], ones, w2);
			cs[3] = _mm512_dpbusd_epi32(cs[3], ones, w3);
			for (int i = 0; i < j->m; i++) {
				__m512i xv = _mm512_set1_epi32((int)xs[i * b->pk / 4 + k]);

				acc[i][0] = _mm512_dpbusd_epi32(acc[i][0], xv, w0);
				acc[i][1] = _mm512_dpbusd_epi32(acc[i][1], xv, w1);
				acc[i][2] = _mm512_dpbusd_epi32(acc[i][2], xv, w2);
				acc[i][3] = _mm512_dpbusd_epi32(acc[i][3], xv, w3);
			}
		}
		for (int i = 0; i < j->m; i++) {
			for (int q = 0; q < 4; q++) {
				int64_t c = blk * NB + 16 * q;
				__m512 ws = c + 16 <= j->n ? _mm512_loadu_ps(j->wscale + c) :
					    _mm512_maskz_loadu_ps(c < j->n ? (__mmask16)((1u << (j->n - c)) - 1) : 0,
								  j->wscale + (c < j->n ? c : 0));
				__m512i v = _mm512_sub_epi32(acc[i][q], _mm512_slli_epi32(cs[q], 7));

				out[q] = _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(v), ws),
						       _mm512_set1_ps(j->xscale[i]));
			}
			store_block(j->y + i * j->n, j->n, blk * NB, out);
		}
	}
}

typedef void (*packed_fn)(const struct packed_job *, int64_t, int64_t);

struct packed_run {
	const struct packed_job *j;
	packed_fn fn;
};

static void packed_task(void *arg, int64_t begin, int64_t end, int tid)
{
	const struct packed_run *r = arg;

	(void)tid;
	r->fn(r->j, begin, end);
}

/* the input rows as the kernels read them, kept between calls (evaluation lock held) */
static void *xbuf;
static size_t xbuf_size;

static void *input_buffer(size_t bytes)
{
	void *p;

	if (bytes <= xbuf_size)
		return xbuf;
	p = aligned_alloc(64, (bytes + 63) / 64 * 64);
	if (!p)
		return NULL;
	free(xbuf);
	xbuf = p;
	xbuf_size = bytes;
	return p;
}

/* x's rows, padded with zeros to pk, in the form the layout's kernel reads */
static void prepare_input(const struct blocked *b, const float *x, int64_t m, int64_t k,
			  void *buf, float *xscale)
{
	for (int64_t i = 0; i < m; i++) {
		const float *row = x + i * k;

		if (b->dtype == NPT_F32) {
			float *o = (float *)buf + i * b->pk;

			memcpy(o, row, sizeof(float) * (size_t)k);
			memset(o + k, 0, sizeof(float) * (size_t)(b->pk - k));
		} else if (b->dtype == NPT_BF16) {
			uint16_t *o = (uint16_t *)buf + i * b->pk;

			for (int64_t c = 0; c < b->pk; c++)
				o[c] = c < k ? npt_f32_to_bf16(row[c]) : 0;
		} else if (b->dtype == NPT_PACKED_BF16X3) {
			/* x = hi + lo as linear splits it (quant.c); the low rows after all high ones */
			uint16_t *o = (uint16_t *)buf + i * b->pk, *u = o + m * b->pk;

			for (int64_t c = 0; c < b->pk; c++)
				npt_bf16_split(c < k ? row[c] : 0.0f, &o[c], &u[c]);
		} else {
			uint8_t *o = (uint8_t *)buf + i * b->pk;
			float amax = 0, inv;

			for (int64_t c = 0; c < k; c++)
				amax = fmaxf(amax, fabsf(row[c]));
			xscale[i] = !isfinite(amax) ? NAN : amax > 0 ? amax / 127.0f : 1.0f;
			inv = isfinite(amax) ? 1.0f / xscale[i] : 0;
			for (int64_t c = 0; c < b->pk; c++) {
				float v = c < k ? nearbyintf(row[c] * inv) : 0;

				v = v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v;
				o[c] = (uint8_t)((int)v + 128);
			}
		}
	}
}

NPT_API npt_status_t npt_gemv_packed(const float *x, int64_t m, const char *tag, const void *data,
				     size_t nbytes, int64_t n, int64_t k, float *y)
{
	struct blocked b;
	struct packed_job j;
	struct packed_run r;
	float xscale[MAXR];
	size_t esize, need;
	npt_status_t s;
	void *buf;

	if ((s = check_rows("npt_gemv_packed", x, m, data, n, k, y)))
		return s;
	if (!tag || npt_tag_too_long(tag) || !parse_tag(tag, n, k, &b))
		return npt_fail(NPT_E_UNSUPPORTED, "npt_gemv_packed: layout '%.*s' is not one this "
				"product reads for a [%lld, %lld] weight (use npt_linear)",
				NPT_PACK_TAG_MAX - 1, tag ? tag : "(none)", (long long)n, (long long)k);
	if (!npt_isa_has(NPT_ISA_AVX512, b.dtype == NPT_BF16 ||
			    b.dtype == NPT_PACKED_BF16X3 ? "avx512f,avx512bf16" :
					    b.dtype == NPT_I8 ? "avx512f,avx512vnni" : "avx512f"))
		return npt_fail(NPT_E_UNSUPPORTED, "npt_gemv_packed: this CPU lacks the AVX-512 "
				"instructions for layout '%s' (use npt_linear)", tag);
	esize = b.dtype == NPT_F32 ? 4 : b.dtype == NPT_I8 ? 1 : 2;
	need = b.scale_bytes + b.lo_off + b.cells * esize;
	if ((b.extra ? nbytes <= need : nbytes != need) || (uintptr_t)data % 64)
		return npt_fail(NPT_E_INVAL, "npt_gemv_packed: layout '%s' takes %zu bytes at a "
				"64-byte aligned address; %zu bytes at %p given", tag, need, nbytes,
				data);
	npt_eval_lock();
	buf = input_buffer((size_t)m * (size_t)b.pk * esize * (b.lo_off ? 2 : 1));
	if (!buf) {
		npt_eval_unlock();
		return npt_fail(NPT_E_NOMEM, "npt_gemv_packed: out of memory for %lld input rows",
				(long long)m);
	}
	prepare_input(&b, x, m, k, buf, xscale);
	j = (struct packed_job){ .b = &b, .w = (const char *)data + b.scale_bytes,
				 .wscale = data, .xin = buf, .xscale = xscale, .y = y, .m = m,
				 .n = n };
	r.j = &j;
	r.fn = b.dtype == NPT_F32 ? packed_f32 : b.dtype == NPT_BF16 ? packed_bf16 :
	       b.dtype == NPT_PACKED_BF16X3 ? packed_bf16x3 : packed_s8;
	npt_parallel_for_hot((n + NB - 1) / NB, 1, packed_task, &r);
	npt_eval_unlock();
	return NPT_OK;
}
