/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * tiles.c - a register-tiled f32 product for blocks that live in the caches:
 * c = alpha * a @ b, a [m, k] and b [k, n] row-major (unit column stride),
 * on one thread. Attention's two products per head (scores, then weights
 * times values) are such blocks: 128 x 128 x 64 for BERT, a few hundred
 * microseconds of work each, where a general GEMM's set-up and packing
 * cost as much as the arithmetic. So are the packed float32 linear layers
 * as gemm.c cuts them: one panel of 64 columns of the packed weight (read
 * in place as b) against a block of rows and of K, the K blocks summed in
 * place (accumulate), the next panel prefetched while this one runs.
 *
 * The kernel keeps a tile of c in registers, rows x (vectors of columns):
 * for each step along k it loads one row of b as vectors and broadcasts one
 * element of a per row of the tile, one fused multiply-add per (row, vector).
 * AVX-512F: 6 rows x 4 vectors of 16 (24 accumulators of 32 registers);
 * AVX2 with FMA: 6 rows x 2 vectors of 8 (12 of 16). Columns past n are
 * masked (loads read nothing there, stores write nothing), so no operand
 * needs padding and c may be a view inside a larger row (attention writes
 * each head's output into the merged-heads row).
 *
 * Every element is one chain of fused multiply-adds over k in order, then
 * one multiplication by alpha, when row divisors are given one division
 * (attention's softmax normalisation, applied to the [Sq, dv] output instead
 * of the [Sq, Sk] weights) and when accumulating one addition: the bits
 * depend on neither the tiling nor the thread that runs it. npt_tile_f32() returns NULL on a CPU with neither
 * instruction set, or when $NPT_KERNEL_ISA caps it below both: the caller
 * then runs a GEMM.
 */
#include "backend.h"
#include "vmath.h"

#include <immintrin.h>
#include <pthread.h>

#define ROWS 6			/* rows of c per tile */

/* one product's operands (npt_tile_t) and its prefetch plan */
struct tile_op {
	npt_tile_t p;		/* p.next: prefetched into L2 while the first column block runs */
	int64_t next_lines, per;	/* its 64-byte lines, and each row tile's share */
};

/* the next operand's lines the row tile at row i prefetches while it runs,
 * from *from: only the tiles of the first column block share them */
static inline __attribute__((always_inline)) int64_t
prefetch_share(const struct tile_op *t, int64_t i, int64_t j, const char **from)
{
	int64_t first = i / ROWS * t->per, left = t->next_lines - first;

	*from = (const char *)t->p.next + 64 * first;
	return j || !t->p.next || left <= 0 ? 0 : left < t->per ? left : t->per;
}

/* ------------------------------------------------------------- AVX-512F */


#define V512 4			/* vectors of 16 columns per tile */
#define COLS512 (V512 * 16)

/*
 * The activation of a tile just stored (r rows of 4 vectors at c, in L1),
 * out of line: called where no accumulator is live any more, so that the
 * product's loop keeps all of them in registers.
 */
__attribute__((noinline, target("avx512f"))) static void
act512(int act, int r, float *c, int64_t ldc, const __mmask16 *mk)
{
	for (int x = 0; x < r; x++)
		for (int v = 0; v < V512; v++) {
			float *p = c + x * ldc + 16 * v;
			__mmask16 k = mk ? mk[v] : 0xffff;

			_mm512_mask_storeu_ps(p, k, npt_act16(act, _mm512_maskz_loadu_ps(k, p)));
		}
}

/*
 * c[i..i+r, j..j+64) from a's rows i..i+r and b's columns j..j+64: r rows of
 * 4 accumulators; full: all 64 columns are inside n (plain loads and
 * stores), else the lanes of mk. r and full are constants where it is
 * inlined, so each shape is compiled on its own.
 */
static inline __attribute__((always_inline, target("avx512f"))) void
tile512(const struct tile_op *t, const int r, const int full, int64_t i, int64_t j,
	const __mmask16 *mk)
{
	const float *a = t->p.a + i * t->p.lda, *b = t->p.b + j;
	const char *pf;
	int64_t pf_lines = prefetch_share(t, i, j, &pf);
	const int64_t k = t->p.k, lda = t->p.lda, ldb = t->p.ldb;
	/* pf_burst lines every pf_step steps along k, spread over the whole tile */
	int64_t pf_burst = k > 0 ? (pf_lines + k - 1) / k : 0, pf_next = 0;
	int64_t pf_step = pf_burst ? k / ((pf_lines + pf_burst - 1) / pf_burst) : k + 1;
	float *c = t->p.c + i * t->p.ldc + j;
	__m512 acc[ROWS][V512];

#pragma GCC unroll 6
	for (int x = 0; x < ROWS; x++)
#pragma GCC unroll 4
		for (int v = 0; v < V512; v++)
			acc[x][v] = _mm512_setzero_ps();
	for (int64_t p = 0; p < k; p++) {
		const float *bp = b + p * ldb;
		__m512 bv[V512];

#pragma GCC unroll 4
		for (int v = 0; v < V512; v++)
			bv[v] = full ? _mm512_loadu_ps(bp + 16 * v) :
				       _mm512_maskz_loadu_ps(mk[v], bp + 16 * v);
		if (p == pf_next && pf_lines > 0) {
			for (int64_t l = 0; l < pf_burst; l++)
				_mm_prefetch(pf + 64 * l, _MM_HINT_T1);
			pf += 64 * pf_burst;
			pf_lines -= pf_burst;
			pf_next += pf_step;
		}
#pragma GCC unroll 6
		for (int x = 0; x < r; x++) {
			__m512 av = _mm512_set1_ps(a[x * lda + p]);

#pragma GCC unroll 4
			for (int v = 0; v < V512; v++)
				acc[x][v] = _mm512_fmadd_ps(av, bv[v], acc[x][v]);
		}
	}
	__m512 s = _mm512_set1_ps(t->p.alpha);

#pragma GCC unroll 6
	for (int x = 0; x < r; x++) {
		__m512 d = _mm512_set1_ps(t->p.div ? t->p.div[i + x] : 1.0f);

#pragma GCC unroll 4
		for (int v = 0; v < V512; v++) {
			__m512 y = _mm512_mul_ps(acc[x][v], s);

			if (t->p.div)
				y = _mm512_div_ps(y, d);
			if (t->p.accumulate)
				y = _mm512_add_ps(y, full ? _mm512_loadu_ps(c + x * t->p.ldc + 16 * v) :
						  _mm512_maskz_loadu_ps(mk[v], c + x * t->p.ldc + 16 * v));
			if (t->p.bias)
				y = _mm512_add_ps(y, full ? _mm512_loadu_ps(t->p.bias + j + 16 * v) :
						  _mm512_maskz_loadu_ps(mk[v], t->p.bias + j + 16 * v));
			if (full)
				_mm512_storeu_ps(c + x * t->p.ldc + 16 * v, y);
			else
				_mm512_mask_storeu_ps(c + x * t->p.ldc + 16 * v, mk[v], y);
		}
	}
	if (t->p.act)
		act512(t->p.act, r, c, t->p.ldc, full ? NULL : mk);
}

/* every row tile of the column block at j: whole tiles, then the last rows */
static inline __attribute__((always_inline, target("avx512f"))) void
rows512(const struct tile_op *t, const int full, int64_t j, const __mmask16 *mk)
{
	int64_t i = 0;

	for (; i + ROWS <= t->p.m; i += ROWS)
		tile512(t, ROWS, full, i, j, mk);
	switch (t->p.m - i) {
	case 5: tile512(t, 5, full, i, j, mk); break;
	case 4: tile512(t, 4, full, i, j, mk); break;
	case 3: tile512(t, 3, full, i, j, mk); break;
	case 2: tile512(t, 2, full, i, j, mk); break;
	case 1: tile512(t, 1, full, i, j, mk); break;
	default: break;
	}
}

__attribute__((target("avx512f"))) static void tiles512(const struct tile_op *t)
{
	for (int64_t j = 0; j < t->p.n; j += COLS512) {
		__mmask16 mk[V512];

		if (t->p.n - j >= COLS512) {
			rows512(t, 1, j, mk);
			continue;
		}
		for (int v = 0; v < V512; v++) {
			int64_t left = t->p.n - j - 16 * v;

			mk[v] = left >= 16 ? 0xffff : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
		}
		rows512(t, 0, j, mk);
	}
}

/* ---------------------------------------------------------- AVX2 + FMA */


#define V256 2			/* vectors of 8 columns per tile */
#define COLS256 (V256 * 8)

/* as act512 (the lanes of mk with the sign bit set; mk NULL: all) */
__attribute__((noinline, target("avx2,fma"))) static void
act256(int act, int r, float *c, int64_t ldc, const __m256i *mk)
{
	for (int x = 0; x < r; x++)
		for (int v = 0; v < V256; v++) {
			float *p = c + x * ldc + 8 * v;

			if (mk)
				_mm256_maskstore_ps(p, mk[v], npt_act8(act, _mm256_maskload_ps(p, mk[v])));
			else
				_mm256_storeu_ps(p, npt_act8(act, _mm256_loadu_ps(p)));
		}
}

/* as tile512, 2 vectors of 8 (the lanes of mk with the sign bit set) */
static inline __attribute__((always_inline, target("avx2,fma"))) void
tile256(const struct tile_op *t, const int r, const int full, int64_t i, int64_t j,
	const __m256i *mk)
{
	const float *a = t->p.a + i * t->p.lda, *b = t->p.b + j;
	const char *pf;
	int64_t pf_lines = prefetch_share(t, i, j, &pf);
	const int64_t k = t->p.k, lda = t->p.lda, ldb = t->p.ldb;
	/* pf_burst lines every pf_step steps along k, spread over the whole tile */
	int64_t pf_burst = k > 0 ? (pf_lines + k - 1) / k : 0, pf_next = 0;
	int64_t pf_step = pf_burst ? k / ((pf_lines + pf_burst - 1) / pf_burst) : k + 1;
	float *c = t->p.c + i * t->p.ldc + j;
	__m256 acc[ROWS][V256];

#pragma GCC unroll 6
	for (int x = 0; x < ROWS; x++)
#pragma GCC unroll 2
		for (int v = 0; v < V256; v++)
			acc[x][v] = _mm256_setzero_ps();
	for (int64_t p = 0; p < k; p++) {
		const float *bp = b + p * ldb;
		__m256 bv[V256];

#pragma GCC unroll 2
		for (int v = 0; v < V256; v++)
			bv[v] = full ? _mm256_loadu_ps(bp + 8 * v) : _mm256_maskload_ps(bp + 8 * v, mk[v]);
		if (p == pf_next && pf_lines > 0) {
			for (int64_t l = 0; l < pf_burst; l++)
				_mm_prefetch(pf + 64 * l, _MM_HINT_T1);
			pf += 64 * pf_burst;
			pf_lines -= pf_burst;
			pf_next += pf_step;
		}
#pragma GCC unroll 6
		for (int x = 0; x < r; x++) {
			__m256 av = _mm256_broadcast_ss(a + x * lda + p);

#pragma GCC unroll 2
			for (int v = 0; v < V256; v++)
				acc[x][v] = _mm256_fmadd_ps(av, bv[v], acc[x][v]);
		}
	}
	__m256 s = _mm256_set1_ps(t->p.alpha);

#pragma GCC unroll 6
	for (int x = 0; x < r; x++) {
		__m256 d = _mm256_set1_ps(t->p.div ? t->p.div[i + x] : 1.0f);

#pragma GCC unroll 2
		for (int v = 0; v < V256; v++) {
			__m256 y = _mm256_mul_ps(acc[x][v], s);

			if (t->p.div)
				y = _mm256_div_ps(y, d);
			if (t->p.accumulate)
				y = _mm256_add_ps(y, full ? _mm256_loadu_ps(c + x * t->p.ldc + 8 * v) :
						  _mm256_maskload_ps(c + x * t->p.ldc + 8 * v, mk[v]));
			if (t->p.bias)
				y = _mm256_add_ps(y, full ? _mm256_loadu_ps(t->p.bias + j + 8 * v) :
						  _mm256_maskload_ps(t->p.bias + j + 8 * v, mk[v]));
			if (full)
				_mm256_storeu_ps(c + x * t->p.ldc + 8 * v, y);
			else
				_mm256_maskstore_ps(c + x * t->p.ldc + 8 * v, mk[v], y);
		}
	}
	if (t->p.act)
		act256(t->p.act, r, c, t->p.ldc, full ? NULL : mk);
}

static inline __attribute__((always_inline, target("avx2,fma"))) void
rows256(const struct tile_op *t, const int full, int64_t j, const __m256i *mk)
{
	int64_t i = 0;

	for (; i + ROWS <= t->p.m; i += ROWS)
		tile256(t, ROWS, full, i, j, mk);
	switch (t->p.m - i) {
	case 5: tile256(t, 5, full, i, j, mk); break;
	case 4: tile256(t, 4, full, i, j, mk); break;
	case 3: tile256(t, 3, full, i, j, mk); break;
	case 2: tile256(t, 2, full, i, j, mk); break;
	case 1: tile256(t, 1, full, i, j, mk); break;
	default: break;
	}
}

__attribute__((target("avx2,fma"))) static void tiles256(const struct tile_op *t)
{
	for (int64_t j = 0; j < t->p.n; j += COLS256) {
		__m256i mk[V256];

		if (t->p.n - j >= COLS256) {
			rows256(t, 1, j, mk);
			continue;
		}
		for (int v = 0; v < V256; v++) {
			int32_t lane[8];

			for (int l = 0; l < 8; l++)
				lane[l] = j + 8 * v + l < t->p.n ? -1 : 0;
			mk[v] = _mm256_loadu_si256((const __m256i *)lane);
		}
		rows256(t, 0, j, mk);
	}
}

/* ---------------------------------------------------------- transpose */

/* dst[c * ldd + r] = src[r * lds + c] for r < rows, c < cols */
static void transpose_c(int64_t rows, int64_t cols, const float *src, int64_t lds, float *dst,
			int64_t ldd)
{
	for (int64_t r = 0; r < rows; r++)
		for (int64_t c = 0; c < cols; c++)
			dst[c * ldd + r] = src[r * lds + c];
}

/* dst[c * rows + r] = src[r * lds + c]: 8 x 8 blocks in registers (two
 * rounds of unpacks and shuffles, then lane swaps), the edges one by one */
__attribute__((target("avx2"))) static void transpose_avx2(int64_t rows, int64_t cols,
							   const float *src, int64_t lds,
							   float *dst)
{
	int64_t r = 0, c;

	for (; r + 8 <= rows; r += 8) {
		for (c = 0; c + 8 <= cols; c += 8) {
			const float *s = src + r * lds + c;
			float *d = dst + c * rows + r;
			__m256 x[8], t[8], u[8];

			for (int i = 0; i < 8; i++)
				x[i] = _mm256_loadu_ps(s + i * lds);
			for (int i = 0; i < 8; i += 2) {
				t[i] = _mm256_unpacklo_ps(x[i], x[i + 1]);
				t[i + 1] = _mm256_unpackhi_ps(x[i], x[i + 1]);
			}
			for (int i = 0; i < 8; i += 4) {
				u[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
				u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
				u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
				u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
			}
			for (int i = 0; i < 4; i++) {
				_mm256_storeu_ps(d + i * rows, _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
				_mm256_storeu_ps(d + (i + 4) * rows,
						 _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
			}
		}
		/* the last columns of these 8 rows, then the last rows */
		transpose_c(8, cols - c, src + r * lds + c, lds, dst + c * rows + r, rows);
	}
	transpose_c(rows - r, cols, src + r * lds, lds, dst + r, rows);
}

static void transpose_plain(int64_t rows, int64_t cols, const float *src, int64_t lds,
			    float *dst)
{
	transpose_c(rows, cols, src, lds, dst, rows);
}


/* ------------------------------------------------------------- choice */

static void (*chosen)(const struct tile_op *t);
static void (*chosen_transpose)(int64_t rows, int64_t cols, const float *src, int64_t lds,
				float *dst);
static pthread_once_t chosen_once = PTHREAD_ONCE_INIT;

static void choose(void)
{
	if (npt_isa_has(NPT_ISA_AVX512, "avx512f"))
		chosen = tiles512;
	else if (npt_isa_has(NPT_ISA_AVX2, "avx2,fma"))
		chosen = tiles256;
	chosen_transpose = npt_isa_has(NPT_ISA_AVX2, "avx2") ? transpose_avx2 : transpose_plain;
}

static void tiles(const npt_tile_t *p)
{
	struct tile_op t = {
		.p = *p, .next_lines = p->next ? (int64_t)(p->next_bytes / 64) : 0,
	};
	int64_t rows = (p->m + ROWS - 1) / ROWS;

	t.per = rows ? (t.next_lines + rows - 1) / rows : 0;
	chosen(&t);
}

npt_tile_fn npt_tile_f32(void)
{
	pthread_once(&chosen_once, choose);
	return chosen ? tiles : NULL;
}

void npt_transpose_f32(int64_t rows, int64_t cols, const float *src, int64_t lds, float *dst)
{
	pthread_once(&chosen_once, choose);
	chosen_transpose(rows, cols, src, lds, dst);
}
