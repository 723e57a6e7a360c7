/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * q4.c - 4-bit weights in groups of 32 with an f16 scale (the numbers of
 * llama.cpp's Q4_0): packing a float32 [N, K] weight, and the product
 * y[M, N] = x[M, K] @ w^T reading the packed bytes in place.
 *
 * Format (npt_q4_size): row-major blocks, K / 32 per row, 18 bytes each: the
 * scale d as an IEEE half, then 16 bytes whose low nibbles are elements
 * 0..15 of the group and high nibbles elements 16..31, each q in 0..15
 * standing for (q - 8) * d. d is the group's largest-magnitude element
 * divided by -8, so that element is exactly -8 * d and the rest round to
 * the nearest step, clamped to 0..15.
 *
 * The product (npt_q4_linear; npt_q4_linear_strided reads rows further apart:
 * a column slice of a wider weight, as a tensor-parallel rank reads its
 * columns in place): each pool thread takes a range of output rows and reads each
 * weight byte once per call whatever M is. Up to NPT_Q4_INT_ROWS input rows
 * (decode) on AVX2 CPUs: every input row is first quantised per group of
 * 32 to int8 (scale max |x| / 127, round to nearest even), and each group's
 * product is an exact integer dot product (maddubs/madd) minus 8 x the sum
 * of the input's group, times the two scales: the arithmetic of llama.cpp's
 * Q4_0 x Q8_0. On CPUs with AVX512_VNNI and VBMI the decode rows go 4
 * groups per step: a byte permutation of the 4 blocks' 72 bytes puts their
 * 16-byte halves side by side in one 64-byte vector and their 4 scales in
 * another, the low and high nibbles meet the input laid out to match
 * (prepared once per call) in two VNNI dot products, and each 4-lane
 * group's int32 sum is scaled by its weight scale times its input scale.
 * Each thread reads 4 parts of its rows side by side (4 streams from
 * memory) with a software prefetch 4 KiB ahead: with this much arithmetic
 * per byte, one stream and the hardware prefetcher alone left the memory
 * idle half of the time. More rows
 * (prefill) on AVX512_VNNI CPUs: the same integer
 * arithmetic in tiles, for every input row quantised the same way. Each
 * thread takes 16 weight rows at a time and lays their 4-bit values out as
 * unsigned bytes in VNNI order ([group][4 inputs][16 rows][4]: one 64-byte
 * vector per 4 inputs, in a per-thread buffer kept between calls), then for
 * 8 input rows at a time sums each group with 8 VNNI dot products per row
 * (exact int32), subtracts 8 x the input group's sum and adds it times the
 * two scales into float accumulators: the weights are read from memory once
 * per call and each unpacked vector serves 8 input rows. Other CPUs: one
 * weight row at a time is expanded into a float row in L1 and dotted with
 * every input row in float (AVX2 with F16C and FMA, AVX-512, or a portable
 * loop). A row's sum is computed by one thread in a fixed order: results do
 * not depend on the thread count. The kernels are chosen at run time from
 * the CPU's features, capped by $NPT_KERNEL_ISA (core/isa.c).
 */
#include <immintrin.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define G NPT_Q4_GROUP
#define BLOCK (2 + G / 2)
#define NPT_Q4_INT_ROWS 4
#ifndef PREFETCH
#define PREFETCH 2048
#endif

NPT_API npt_status_t npt_q4_size(int64_t n, int64_t k, size_t *nbytes)
{
	if (!nbytes)
		return npt_fail(NPT_E_INVAL, "npt_q4_size: nbytes is NULL");
	if (n < 1 || k < G || k % G)
		return npt_fail(NPT_E_SHAPE, "npt_q4_size: a [%lld, %lld] weight: 4-bit groups need "
				"K a positive multiple of %d (and N >= 1)", (long long)n,
				(long long)k, G);
	if (n > (INT64_C(1) << 40) / k)
		return npt_fail(NPT_E_OVERFLOW, "npt_q4_size: a [%lld, %lld] weight is too big: "
				"4-bit weights hold at most 2^40 elements", (long long)n,
				(long long)k);
	*nbytes = (size_t)(n * (k / G) * BLOCK);
	return NPT_OK;
}

static void pack_group(const float *x, int64_t stride, uint8_t *out)
{
	float amax = 0, v = 0, id;
	_Float16 d;

	for (int j = 0; j < G; j++)
		if (fabsf(x[j * stride]) > amax) {
			amax = fabsf(x[j * stride]);
			v = x[j * stride];
		}
	d = (_Float16)(v / -8.0f);
	id = (float)d != 0 ? 1.0f / (float)d : 0;
	memcpy(out, &d, 2);
	for (int j = 0; j < G / 2; j++) {
		int lo = (int)floorf(x[j * stride] * id + 8.5f);
		int hi = (int)floorf(x[(j + G / 2) * stride] * id + 8.5f);

		lo = lo < 0 ? 0 : lo > 15 ? 15 : lo;
		hi = hi < 0 ? 0 : hi > 15 ? 15 : hi;
		out[2 + j] = (uint8_t)(lo | hi << 4);
	}
}

NPT_API npt_status_t npt_q4_pack(npt_tensor_t *w, void *dst, size_t nbytes)
{
	const int64_t *sh, *st;
	size_t need;
	npt_status_t s;
	float *data;

	if (!w || !dst)
		return npt_fail(NPT_E_INVAL, "npt_q4_pack: %s is NULL", w ? "dst" : "the weight");
	if (npt_tensor_dtype(w) != NPT_F32 || npt_tensor_ndim(w) != 2)
		return npt_fail(NPT_E_DTYPE, "npt_q4_pack: the weight must be a 2-D float32 tensor");
	if (w->packed_only)
		return npt_plain_refused("npt_q4_pack", w);
	sh = npt_tensor_shape(w);
	if ((s = npt_q4_size(sh[0], sh[1], &need)))
		return s;
	if (nbytes != need)
		return npt_fail(NPT_E_INVAL, "npt_q4_pack: %zu bytes given, a [%lld, %lld] weight "
				"takes %zu", nbytes, (long long)sh[0], (long long)sh[1], need);
	if ((s = npt_tensor_data(w, (void **)&data)))
		return s;
	st = npt_tensor_strides(w);
	for (int64_t r = 0; r < sh[0]; r++)
		for (int64_t b = 0; b < sh[1] / G; b++)
			pack_group(data + r * st[0] + b * G * st[1], st[1],
				   (uint8_t *)dst + (r * (sh[1] / G) + b) * BLOCK);
	return NPT_OK;
}

/* ---- kernels: expand one row, dot it with an input row ---- */

static void expand_c(const uint8_t *q, int64_t k, float *out)
{
	for (int64_t b = 0; b < k / G; b++, q += BLOCK, out += G) {
		_Float16 h;
		float d;

		memcpy(&h, q, 2);
		d = (float)h;
		for (int j = 0; j < G / 2; j++) {
			out[j] = (float)((q[2 + j] & 15) - 8) * d;
			out[j + G / 2] = (float)((q[2 + j] >> 4) - 8) * d;
		}
	}
}

static float dot_c(const float *a, const float *b, int64_t k)
{
	float s[8] = { 0 };

	for (int64_t i = 0; i < k; i += 8)
		for (int j = 0; j < 8; j++)
			s[j] += a[i + j] * b[i + j];
	return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

__attribute__((target("avx2,fma,f16c"))) static void expand_avx2(const uint8_t *q, int64_t k,
								  float *out)
{
	const __m128i m4 = _mm_set1_epi8(15);
	const __m256i eight = _mm256_set1_epi32(8);

	for (int64_t b = 0; b < k / G; b++, q += BLOCK, out += G) {
		uint16_t h;
		__m128i v, lo, hi;
		__m256 d;

		memcpy(&h, q, 2);
		d = _mm256_set1_ps(_cvtsh_ss(h));
		v = _mm_loadu_si128((const __m128i *)(q + 2));
		lo = _mm_and_si128(v, m4);
		hi = _mm_and_si128(_mm_srli_epi16(v, 4), m4);
#define EXPAND(src, off)                                                                      \
	_mm256_storeu_ps(out + (off), _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_sub_epi32(     \
					 _mm256_cvtepu8_epi32(src), eight))))
		EXPAND(lo, 0);
		EXPAND(_mm_srli_si128(lo, 8), 8);
		EXPAND(hi, 16);
		EXPAND(_mm_srli_si128(hi, 8), 24);
#undef EXPAND
	}
}

__attribute__((target("avx2,fma"))) static float dot_avx2(const float *a, const float *b,
							   int64_t k)
{
	__m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
	__m128 r;

	for (int64_t i = 0; i < k; i += 16) {
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
		s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
	}
	s0 = _mm256_add_ps(s0, s1);
	r = _mm_add_ps(_mm256_castps256_ps128(s0), _mm256_extractf128_ps(s0, 1));
	r = _mm_add_ps(r, _mm_movehl_ps(r, r));
	r = _mm_add_ss(r, _mm_movehdup_ps(r));
	return _mm_cvtss_f32(r);
}

__attribute__((target("avx512f"))) static float dot_avx512(const float *a, const float *b,
							     int64_t k)
{
	__m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
	int64_t i = 0;

	for (; i + 32 <= k; i += 32) {
		s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
		s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
	}
	return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

/*
 * x [k] to int8 groups: q [k], scale [k / G], group sums [k / G]: scale max
 * |x| / 127, q = x * (127 / max |x|) rounded to nearest even (adding and
 * taking away 1.5 x 2^23 rounds so, as |x * 127 / max| <= 127; no libm call)
 */
static void quant_row(const float *x, int64_t k, int8_t *q, float *scale, int32_t *sum)
{
	for (int64_t b = 0; b < k / G; b++) {
		float amax = 0, id;
		int32_t s = 0;

		for (int j = 0; j < G; j++) {
			float a = fabsf(x[b * G + j]);

			amax = a > amax ? a : amax;
		}
		scale[b] = amax / 127.0f;
		id = amax > 0 ? 127.0f / amax : 0;
		for (int j = 0; j < G; j++) {
			float r = (x[b * G + j] * id + 0x1.8p23f) - 0x1.8p23f;

			q[b * G + j] = (int8_t)(int)r;
			s += q[b * G + j];
		}
		sum[b] = s;
	}
}

__attribute__((target("avx2,fma,f16c"))) static float dot_int_avx2(const uint8_t *w, int64_t k,
								   const int8_t *q,
								   const float *scale,
								   const int32_t *sum)
{
	const __m128i m4 = _mm_set1_epi8(15);
	const __m256i ones = _mm256_set1_epi16(1);
	__m256 acc = _mm256_setzero_ps();
	float corr = 0;
	__m128 r;

	for (int64_t b = 0; b < k / G; b++, w += BLOCK) {
		uint16_t h;
		__m128i v;
		__m256i wq, p;
		float d;

		memcpy(&h, w, 2);
		d = _cvtsh_ss(h) * scale[b];
		v = _mm_loadu_si128((const __m128i *)(w + 2));
		wq = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m4), _mm_and_si128(v, m4));
		p = _mm256_madd_epi16(_mm256_maddubs_epi16(wq, _mm256_loadu_si256(
						 (const __m256i *)(q + b * G))), ones);
		acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(d), acc);
		corr += d * (float)(8 * sum[b]);
	}
	r = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
	r = _mm_add_ps(r, _mm_movehl_ps(r, r));
	r = _mm_add_ss(r, _mm_movehdup_ps(r));
	return _mm_cvtss_f32(r) - corr;
}

/* ---- prefill: VNNI tiles of 16 weight rows x 8 input rows ---- */

#define TILE_N 16
#define TILE_M 8

/* 16 weight rows from @q, @rb bytes apart (@rows of them real, the rest zero), into @w ([k/G][8][16][4]
 * unsigned 4-bit values) and @d ([k/G][16] scales) */
__attribute__((target("avx2,f16c"))) static void tile_unpack(const uint8_t *q, int64_t rb,
							      int rows, int64_t k, uint8_t *w,
							      float *d)
{
	const int64_t groups = k / G;
	const __m128i m4 = _mm_set1_epi8(15);

	for (int c = 0; c < TILE_N; c++) {
		const uint8_t *row = q + (int64_t)c * rb;

		for (int64_t g = 0; g < groups; g++) {
			uint32_t quad[8];
			uint16_t h;

			if (c >= rows) {
				d[g * TILE_N + c] = 0;
				for (int t = 0; t < 8; t++)
					memset(w + ((g * 8 + t) * TILE_N + c) * 4, 8, 4);
				continue;
			}
			memcpy(&h, row + g * BLOCK, 2);
			d[g * TILE_N + c] = _cvtsh_ss(h);
			__m128i v = _mm_loadu_si128((const __m128i *)(row + g * BLOCK + 2));

			_mm_storeu_si128((__m128i *)quad, _mm_and_si128(v, m4));
			_mm_storeu_si128((__m128i *)(quad + 4), _mm_and_si128(_mm_srli_epi16(v, 4), m4));
			for (int t = 0; t < 8; t++)
				memcpy(w + ((g * 8 + t) * TILE_N + c) * 4, &quad[t], 4);
		}
	}
}

/* y[i, n0 .. n0+16) for input rows i0 .. i0+mr (mr <= TILE_M) from an unpacked tile */
__attribute__((target("avx512f,avx512vnni"))) static void tile_rows(
	const uint8_t *w, const float *d, int64_t k, const int8_t *xq, const float *xs,
	const int32_t *xsum, int64_t i0, int mr, float *y, int64_t n, int64_t n0)
{
	const int64_t groups = k / G;
	__m512 acc[TILE_M];
	__mmask16 keep = n - n0 >= TILE_N ? 0xffff : (__mmask16)((1u << (n - n0)) - 1);

	for (int r = 0; r < TILE_M; r++)
		acc[r] = _mm512_setzero_ps();
	for (int64_t g = 0; g < groups; g++) {
		const __m512i *wv = (const __m512i *)(w + g * 8 * TILE_N * 4);
		__m512i w0 = _mm512_load_si512(wv), w1 = _mm512_load_si512(wv + 1);
		__m512i w2 = _mm512_load_si512(wv + 2), w3 = _mm512_load_si512(wv + 3);
		__m512i w4 = _mm512_load_si512(wv + 4), w5 = _mm512_load_si512(wv + 5);
		__m512i w6 = _mm512_load_si512(wv + 6), w7 = _mm512_load_si512(wv + 7);
		__m512 dw = _mm512_load_ps(d + g * TILE_N);

		for (int r = 0; r < mr; r++) {
			const int32_t *xr = (const int32_t *)(xq + (i0 + r) * k + g * G);
			int64_t gi = (i0 + r) * groups + g;
			__m512i s = _mm512_set1_epi32(-8 * xsum[gi]);

			s = _mm512_dpbusd_epi32(s, w0, _mm512_set1_epi32(xr[0]));
			s = _mm512_dpbusd_epi32(s, w1, _mm512_set1_epi32(xr[1]));
			s = _mm512_dpbusd_epi32(s, w2, _mm512_set1_epi32(xr[2]));
			s = _mm512_dpbusd_epi32(s, w3, _mm512_set1_epi32(xr[3]));
			s = _mm512_dpbusd_epi32(s, w4, _mm512_set1_epi32(xr[4]));
			s = _mm512_dpbusd_epi32(s, w5, _mm512_set1_epi32(xr[5]));
			s = _mm512_dpbusd_epi32(s, w6, _mm512_set1_epi32(xr[6]));
			s = _mm512_dpbusd_epi32(s, w7, _mm512_set1_epi32(xr[7]));
			acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s),
						 _mm512_mul_ps(dw, _mm512_set1_ps(xs[gi])), acc[r]);
		}
	}
	for (int r = 0; r < mr; r++)
		_mm512_mask_storeu_ps(y + (i0 + r) * n + n0, keep, acc[r]);
}

/* per pool thread: an unpacked tile, kept between calls (the evaluation lock is held) */
static struct { uint8_t *w; float *d; int64_t k; } tiles[256];

struct vnni_row;

typedef void (*expand_fn)(const uint8_t *, int64_t, float *);
typedef float (*dot_fn)(const float *, const float *, int64_t);

struct q4_job {
	const float *x;
	const uint8_t *q;
	size_t ldq;		/* bytes between the weight's rows (k / G * BLOCK, or more) */
	float *y;
	int64_t m, n, k;
	expand_fn expand;
	dot_fn dot;
	float *scratch;		/* a row of k floats per pool thread */
	/* the integer paths: the m input rows quantised (NULL: the float path) */
	int8_t *xq;
	float *xs;
	int32_t *xsum;
	int tiles;		/* the prefill path: tasks are tiles of TILE_N weight rows */
	const struct vnni_row *vx;	/* the decode path on VNNI CPUs (NULL: AVX2) */
};

/* ---- decode on AVX512_VNNI with VBMI: 4 groups per step ---- */

/*
 * An input row laid out for dot_vnni, per 4 groups Q: the low halves of the
 * 4 groups side by side (lo[Q], 64 bytes: group j's inputs 0..15 at 16 j),
 * their high halves (hi[Q]), per 4-byte lane -8 x the sum of the 8 inputs
 * it meets (corr[Q], 16 int32: the start of the lane's integer sum) and
 * each group's input scale 4 times (xs[Q], 16 floats).
 */
struct vnni_row {
	int8_t *lo, *hi;
	int32_t *corr;
	float *xs;
};

static void vnni_layout(const int8_t *xq, const float *scale, int64_t k, struct vnni_row *v)
{
	for (int64_t b = 0; b < k / G / 4 * 4; b++) {
		int64_t Q = b / 4, j = b % 4;

		memcpy(v->lo + Q * 64 + j * 16, xq + b * G, 16);
		memcpy(v->hi + Q * 64 + j * 16, xq + b * G + 16, 16);
		for (int l = 0; l < 4; l++) {
			int32_t t = 0;

			for (int e = 0; e < 4; e++)
				t += v->lo[Q * 64 + j * 16 + l * 4 + e] + v->hi[Q * 64 + j * 16 + l * 4 + e];
			v->corr[Q * 16 + j * 4 + l] = -8 * t;
			v->xs[Q * 16 + j * 4 + l] = scale[b];
		}
	}
}

/* groups [g0, g1) of one weight row against one quantised input row, in integers */
static float dot_groups(const uint8_t *w, int64_t g0, int64_t g1, const int8_t *q,
			const float *scale, const int32_t *sum)
{
	float y = 0;

	for (int64_t b = g0; b < g1; b++) {
		const uint8_t *blk = w + b * BLOCK;
		int32_t t = 0;
		_Float16 h;

		memcpy(&h, blk, 2);
		for (int e = 0; e < G / 2; e++)
			t += (blk[2 + e] & 15) * q[b * G + e] + (blk[2 + e] >> 4) * q[b * G + e + G / 2];
		y += (float)h * scale[b] * (float)(t - 8 * sum[b]);
	}
	return y;
}

/*
 * @R weight rows (w[0..R)) against @m input rows: per 4 groups (72 bytes)
 * of a row, one 64-byte load and one 8-byte load; a byte permutation (VBMI)
 * puts the 4 groups' 16 nibble bytes side by side and another their 4
 * scales, each 4 times, as 16 halves; two VNNI dots (low and high nibbles,
 * from the lane's correction) give 16 exact int32 sums, 4 per group, which
 * are scaled by weight scale x input scale into one float accumulator per
 * (weight row, input row). The R rows are R streams from memory, read
 * side by side, and each prefetched 4 KiB ahead: one stream with this much
 * arithmetic per byte leaves the memory idle between its misses.
 */
static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vnni,avx512vbmi")))
void dot_vnni_rows(const uint8_t *const *w, int R, int64_t quads, int m, const struct vnni_row *v,
		   float out[4][NPT_Q4_INT_ROWS])
{
	const __m512i m4 = _mm512_set1_epi8(15);
	__m512i nib_idx, sc_idx;
	__m512 acc[4][NPT_Q4_INT_ROWS];
	uint8_t ni[64], si[64];

	for (int j = 0; j < 4; j++)
		for (int e = 0; e < 16; e++) {
			ni[16 * j + e] = (uint8_t)(BLOCK * j + 2 + e);
			si[16 * j + e] = 0;
		}
	for (int l = 0; l < 16; l++) {	/* half l = the scale of group l / 4 */
		si[2 * l] = (uint8_t)(BLOCK * (l / 4));
		si[2 * l + 1] = (uint8_t)(BLOCK * (l / 4) + 1);
	}
	nib_idx = _mm512_loadu_si512(ni);
	sc_idx = _mm512_loadu_si512(si);
	for (int r = 0; r < R; r++)
		for (int i = 0; i < m; i++)
			acc[r][i] = _mm512_setzero_ps();
	for (int64_t Q = 0; Q < quads; Q++) {
		__m512i lo[4], hi[4];
		__m512 dw[4];

		for (int r = 0; r < R; r++) {
			const uint8_t *p = w[r] + Q * 4 * BLOCK;
			__m512i a = _mm512_loadu_si512(p);
			__m512i b = _mm512_castsi128_si512(_mm_loadl_epi64((const __m128i *)(p + 64)));
			__m512i q = _mm512_permutex2var_epi8(a, nib_idx, b);

			_mm_prefetch((const char *)p + PREFETCH, _MM_HINT_T0);
			dw[r] = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutex2var_epi8(
				a, sc_idx, b)));
			lo[r] = _mm512_and_si512(q, m4);
			hi[r] = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
		}
		for (int i = 0; i < m; i++) {
			__m512i c = _mm512_loadu_si512(v[i].corr + Q * 16);
			__m512i xl = _mm512_loadu_si512(v[i].lo + Q * 64);
			__m512i xh = _mm512_loadu_si512(v[i].hi + Q * 64);
			__m512 xs = _mm512_loadu_ps(v[i].xs + Q * 16);

			for (int r = 0; r < R; r++) {
				__m512i t = _mm512_dpbusd_epi32(c, lo[r], xl);

				t = _mm512_dpbusd_epi32(t, hi[r], xh);
				acc[r][i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t),
							    _mm512_mul_ps(dw[r], xs), acc[r][i]);
			}
		}
	}
	for (int r = 0; r < R; r++)
		for (int i = 0; i < m; i++)
			out[r][i] = _mm512_reduce_add_ps(acc[r][i]);
}

/* y[:, r] for the @R weight rows at @rows, one copy of the loop per (R, m) */
__attribute__((target("avx512f,avx512bw,avx512vnni,avx512vbmi"))) static void dot_vnni(
	const struct q4_job *j, const int64_t *rows, int R)
{
	const int64_t groups = j->k / G, quads = groups / 4, rb = (int64_t)j->ldq;
	const uint8_t *w[4] = { j->q, j->q, j->q, j->q };
	float s[4][NPT_Q4_INT_ROWS];

	for (int r = 0; r < R; r++)
		w[r] = j->q + rows[r] * rb;
#define CASE(rr, mm)                                                  \
	case (rr) * 8 + (mm):                                         \
		dot_vnni_rows(w, rr, quads, mm, j->vx, s);            \
		break
	switch (R * 8 + (int)j->m) {
	CASE(1, 1); CASE(1, 2); CASE(1, 3); CASE(1, 4);
	CASE(4, 1); CASE(4, 2); CASE(4, 3); CASE(4, 4);
	}
#undef CASE
	for (int r = 0; r < R; r++)
		for (int64_t i = 0; i < j->m; i++)
			j->y[i * j->n + rows[r]] = s[r][i] +
				dot_groups(w[r], quads * 4, groups, j->xq + i * j->k,
					   j->xs + i * groups, j->xsum + i * groups);
}

/* rows [begin, end) as 4 parts read side by side (4 streams), the rest one by one */
static void rows_vnni(const struct q4_job *j, int64_t begin, int64_t end)
{
	int64_t part = (end - begin) / 4, rows[4];

	for (int64_t i = 0; i < part; i++) {
		for (int r = 0; r < 4; r++)
			rows[r] = begin + r * part + i;
		dot_vnni(j, rows, 4);
	}
	for (int64_t r = begin + 4 * part; r < end; r++)
		dot_vnni(j, &r, 1);
}

static int tile_buffer(int tid, int64_t k)
{
	if (tid >= (int)(sizeof(tiles) / sizeof(tiles[0])))
		return -1;
	if (tiles[tid].k >= k)
		return 0;
	free(tiles[tid].w);
	free(tiles[tid].d);
	tiles[tid].w = aligned_alloc(64, (size_t)(k * TILE_N));
	tiles[tid].d = aligned_alloc(64, sizeof(float) * (size_t)(k / G * TILE_N));
	tiles[tid].k = tiles[tid].w && tiles[tid].d ? k : 0;
	return tiles[tid].k ? 0 : -1;
}

static void q4_tiles(const struct q4_job *j, int64_t begin, int64_t end, int tid)
{
	int64_t rb = (int64_t)j->ldq;

	if (tile_buffer(tid, j->k))
		return;	/* cannot happen after npt_q4_linear's own reservation */
	for (int64_t t = begin; t < end; t++) {
		int64_t n0 = t * TILE_N;
		int rows = j->n - n0 < TILE_N ? (int)(j->n - n0) : TILE_N;

		tile_unpack(j->q + n0 * rb, rb, rows, j->k, tiles[tid].w, tiles[tid].d);
		for (int64_t i = 0; i < j->m; i += TILE_M)
			tile_rows(tiles[tid].w, tiles[tid].d, j->k, j->xq, j->xs, j->xsum, i,
				  j->m - i < TILE_M ? (int)(j->m - i) : TILE_M, j->y, j->n, n0);
	}
}

static void q4_rows(void *arg, int64_t begin, int64_t end, int tid)
{
	const struct q4_job *j = arg;
	int64_t rb = (int64_t)j->ldq;
	float *row;

	if (j->tiles) {
		q4_tiles(j, begin, end, tid);
		return;
	}
	if (j->vx) {
		rows_vnni(j, begin, end);
		return;
	}
	if (j->xq) {
		for (int64_t r = begin; r < end; r++)
			for (int64_t i = 0; i < j->m; i++)
				j->y[i * j->n + r] = dot_int_avx2(j->q + r * rb, j->k,
								  j->xq + i * j->k,
								  j->xs + i * (j->k / G),
								  j->xsum + i * (j->k / G));
		return;
	}
	row = j->scratch + (int64_t)tid * j->k;
	for (int64_t r = begin; r < end; r++) {
		j->expand(j->q + r * rb, j->k, row);
		for (int64_t i = 0; i < j->m; i++)
			j->y[i * j->n + r] = j->dot(row, j->x + i * j->k, j->k);
	}
}

/* the quantised input rows, kept between calls (the evaluation lock is held) */
static struct {
	int8_t *xq;
	float *xs;
	int32_t *xsum;
	size_t elems;			/* m * k they hold */
	struct vnni_row v[NPT_Q4_INT_ROWS];
	int64_t vk;			/* k the VNNI layouts hold */
} in;

static int input_buffers(int64_t m, int64_t k, int vnni)
{
	size_t e = (size_t)(m * k);

	if (e > in.elems) {
		free(in.xq);
		free(in.xs);
		free(in.xsum);
		in.xq = malloc(e);
		in.xs = malloc(sizeof(float) * (e / G));
		in.xsum = malloc(sizeof(int32_t) * (e / G));
		in.elems = in.xq && in.xs && in.xsum ? e : 0;
		if (!in.elems)
			return -1;
	}
	if (vnni && k > in.vk) {
		size_t quads = (size_t)(k / G + 3) / 4;

		in.vk = 0;
		for (int i = 0; i < NPT_Q4_INT_ROWS; i++) {
			free(in.v[i].lo);
			free(in.v[i].hi);
			free(in.v[i].corr);
			free(in.v[i].xs);
			in.v[i].lo = calloc(quads, 64);
			in.v[i].hi = calloc(quads, 64);
			in.v[i].corr = calloc(quads, 64);
			in.v[i].xs = calloc(quads, 64);
			if (!in.v[i].lo || !in.v[i].hi || !in.v[i].corr || !in.v[i].xs)
				return -1;
		}
		in.vk = k;
	}
	return 0;
}

/* the float path's rows of k floats, one per pool thread, kept between calls */
static float *scratch_rows(int64_t k)
{
	static float *rows;
	static size_t have;
	size_t want = (size_t)k * (size_t)npt_pool_threads();

	if (want > have) {
		free(rows);
		rows = malloc(sizeof(float) * want);
		have = rows ? want : 0;
	}
	return rows;
}

NPT_API npt_status_t npt_q4_linear(const float *x, int64_t m, const void *q, int64_t n,
				   int64_t k, float *y)
{
	/* a K that is no multiple of the group: npt_q4_linear_strided's npt_q4_size says so */
	return npt_q4_linear_strided(x, m, q, k >= G ? (size_t)(k / G * BLOCK) : 0, n, k, y);
}

NPT_API npt_status_t npt_q4_linear_strided(const float *x, int64_t m, const void *q, size_t ldq,
					   int64_t n, int64_t k, float *y)
{
	struct q4_job j = { .x = x, .q = q, .ldq = ldq, .y = y, .m = m, .n = n, .k = k };
	int avx2, vnni;
	npt_status_t s;
	size_t nb;

	if (!x || !q || !y)
		return npt_fail(NPT_E_INVAL, "npt_q4_linear: x, q and y must not be NULL");
	if (m < 1)
		return npt_fail(NPT_E_SHAPE, "npt_q4_linear: %lld input rows; give at least one",
				(long long)m);
	if ((s = npt_q4_size(n, k, &nb)))
		return s;
	if (ldq < (size_t)(k / G * BLOCK))
		return npt_fail(NPT_E_SHAPE, "npt_q4_linear: rows %zu bytes apart cannot hold %lld "
				"columns (%lld bytes)", ldq, (long long)k, (long long)(k / G * BLOCK));
	if (n > 1 && ldq > (size_t)(PTRDIFF_MAX - k / G * BLOCK) / (size_t)(n - 1))
		return npt_fail(NPT_E_OVERFLOW, "npt_q4_linear: %lld rows %zu bytes apart overflow "
				"the address range", (long long)n, ldq);
	/* x [m, k] and y [m, n] floats, and the quantised copy of x, must have a size */
	if (m > PTRDIFF_MAX / (int64_t)sizeof(float) / (k > n ? k : n))
		return npt_fail(NPT_E_OVERFLOW, "npt_q4_linear: %lld rows of x (%lld floats each) "
				"and y (%lld each) overflow the address range", (long long)m,
				(long long)k, (long long)n);
	avx2 = npt_isa_has(NPT_ISA_AVX2, "avx2,fma,f16c");
	if (avx2) {
		j.expand = expand_avx2;
		j.dot = npt_isa_has(NPT_ISA_AVX512, "avx512f") ? dot_avx512 : dot_avx2;
	} else {
		j.expand = expand_c;
		j.dot = dot_c;
	}
	/* decode rows: 4 groups per step (VNNI, VBMI), else AVX2's maddubs, else float */
	vnni = m <= NPT_Q4_INT_ROWS && avx2 &&
	       npt_isa_has(NPT_ISA_AVX512, "avx512f,avx512bw,avx512vnni,avx512vbmi");
	/* prefill rows: the VNNI tiles, else float */
	j.tiles = m > NPT_Q4_INT_ROWS && avx2 && npt_isa_has(NPT_ISA_AVX512,
								  "avx512f,avx512vnni");
	npt_eval_lock();
	for (int t = 0; j.tiles && t < npt_pool_threads(); t++)
		if (tile_buffer(t, k)) {
			s = npt_fail(NPT_E_NOMEM, "npt_q4_linear: out of memory for the unpacked "
				     "weights of thread %d", t);
			goto out;
		}
	if ((m <= NPT_Q4_INT_ROWS && avx2) || j.tiles) {
		if (input_buffers(m, k, vnni)) {
			s = npt_fail(NPT_E_NOMEM, "npt_q4_linear: out of memory for %lld quantised "
				     "input rows", (long long)m);
			goto out;
		}
		j.xq = in.xq;
		j.xs = in.xs;
		j.xsum = in.xsum;
		for (int64_t i = 0; i < m; i++) {
			quant_row(x + i * k, k, j.xq + i * k, j.xs + i * (k / G),
				  j.xsum + i * (k / G));
			if (vnni)
				vnni_layout(j.xq + i * k, j.xs + i * (k / G), k, &in.v[i]);
		}
		j.vx = vnni ? in.v : NULL;
	} else if (!(j.scratch = scratch_rows(k))) {
		s = npt_fail(NPT_E_NOMEM, "npt_q4_linear: out of memory for %d rows of %lld floats",
			     npt_pool_threads(), (long long)k);
		goto out;
	}
	if (j.tiles)
		npt_parallel_for((n + TILE_N - 1) / TILE_N, 1, q4_rows, &j);
	else	/* a decode step: the next product follows at once */
		npt_parallel_for_hot(n, 16, q4_rows, &j);
out:
	npt_eval_unlock();
	return s;
}
