/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * backend.h - what the kernels run on: the thread pool (threads.c), the f32
 * GEMM on oneDNN or OpenBLAS (gemm.c, onednn.c), the register-tiled product
 * for in-cache blocks (tiles.c) and the vectorised activation epilogues
 * (act_vec.c). Below the kernels, above core/: nothing
 * here knows a graph node or evaluates a tensor.
 */
#ifndef NPT_BACKEND_H
#define NPT_BACKEND_H

#include "../core/core.h"

/* ---- threads.c: thread pool ---- */
typedef void (*npt_task_fn)(void *arg, int64_t begin, int64_t end, int tid);
/* Run fn over [0, n) split in chunks of at least `grain` items (at most one
 * per thread). Results must not depend on which thread runs which range. */
NPT_HIDDEN void npt_parallel_for(int64_t n, int64_t grain, npt_task_fn fn, void *arg);
/* The same for a loop the next one follows within microseconds (threads.c):
 * the threads poll for the next job briefly instead of sleeping at once. */
NPT_HIDDEN void npt_parallel_for_hot(int64_t n, int64_t grain, npt_task_fn fn, void *arg);
/* Run fn on each item of [0, n), handed out one at a time to free threads. */
NPT_HIDDEN void npt_parallel_items(int64_t n, npt_task_fn fn, void *arg);
NPT_HIDDEN int npt_pool_threads(void);
/* the thread count for the pool and OpenBLAS; the pool's workers are joined
 * (restarted by the next parallel loop). Not while a loop runs: the caller
 * holds the evaluation lock. */
NPT_HIDDEN void npt_pool_set_threads(int n);
/* OpenBLAS's own thread count (no-op when OpenBLAS has no threads) */
NPT_HIDDEN void npt_blas_set_threads(int n);
/* per-thread scratch blocks, kept and grown per thread, 64-byte aligned,
 * freed when a pool worker exits; NULL when out of memory */
enum { NPT_TLS_BLOCK, NPT_TLS_RUN, NPT_TLS_SCORES, NPT_TLS_KEYS, NPT_TLS_GEMM, NPT_TLS_SLOTS_ };
NPT_HIDDEN void *npt_thread_scratch(int slot, size_t bytes);

/* ---- act_vec.c: f32 epilogues, vectorised ---- */
/* y[i] = act(y[i] + bias[i]) for i < n (bias may be NULL) */
NPT_HIDDEN void npt_act_rows_f32(int act, int64_t n, float *y, const float *bias);
/* x[i] = exp(x[i] + bias[i] - m) for i < n, m the largest x[i] + bias[i] (bias
 * NULL: none; NaN when one is NaN, so that the row becomes NaN); returns the sum */
NPT_HIDDEN float npt_softmax_exp_f32(int64_t n, float *x, const float *bias);

/* ---- tiles.c: a register-tiled f32 product for blocks in the caches, one thread ----
 * c[i * ldc + j] = act(alpha * (sum over p < k of a[i * lda + p] * b[p * ldb + j]) / div[i]
 * (+ c[i * ldc + j] when accumulate) + bias[j]), i < m, j < n: one chain of fused
 * multiply-adds over p in order per element, then the scale, the division
 * (div NULL: none), the additions (bias NULL: none) and the activation (an
 * npt_activation_t, vmath.h's: the bits act_vec.c's rows give for the same
 * sum). next/next_bytes: memory the caller reads
 * next (NULL: none), prefetched into L2 while this product runs, so that a
 * weight streamed from memory panel by panel arrives in time. m, n, k >= 0. */
typedef struct {
	int64_t m, n, k, lda, ldb, ldc;
	const float *a, *b, *div, *bias;
	float *c;
	float alpha;
	int accumulate, act;
	const void *next;
	size_t next_bytes;
} npt_tile_t;
typedef void (*npt_tile_fn)(const npt_tile_t *t);
/* the product for this CPU, NULL when neither AVX-512F nor AVX2+FMA is there
 * (or allowed by $NPT_KERNEL_ISA): the caller runs a GEMM */
NPT_HIDDEN npt_tile_fn npt_tile_f32(void);
/* dst [cols, rows] (contiguous) = the transpose of src [rows, cols] (row stride lds) */
NPT_HIDDEN void npt_transpose_f32(int64_t rows, int64_t cols, const float *src, int64_t lds,
				  float *dst);

/* ---- gemm.c: c = act(op(a) @ op(b) + bias), f32, row-major, cblas's conventions ----
 * ta/tb as CblasTrans; bias is n contiguous floats or NULL; act an npt_activation_t.
 * packed/packed_desc: weights in oneDNN's layout (packed_desc a dnnl_memory_desc_t
 * for [K, N]) used instead of b when both are set. m, n, k > 0. */
typedef struct {
	int64_t M, N, K, lda, ldb, ldc;
	int ta, tb, act;
	float alpha;          /* scales the product (with no bias); 0 means 1 */
	const float *a, *b, *bias;
	float *c;
	const void *packed, *packed_desc;
	/* int8 weights (packed s8): a quantised per row into aq [M, K] with ascale [M];
	 * c = act(aq @ w8^T * ascale[m] * wscale[n] + bias); a stays for the fallback */
	const int8_t *aq;
	const float *ascale, *wscale;
	/* bf16 weights (packed bf16): a rounded to bf16 into abf [M, K] */
	const uint16_t *abf;
	/* float32 as bf16 pairs (packed bf16x3): a = abf + abf_lo, w = packed + packed_lo
	 * (both in packed_desc's layout); c = act(ah wh + ah wl + al wh + bias) */
	const uint16_t *abf_lo;
	const void *packed_lo;
	int accum;            /* internal: c += the product (oneDNN's sum post-op) */
} npt_gemm_t;

NPT_HIDDEN npt_status_t npt_gemm_f32(const npt_gemm_t *g);
/* the same on the calling thread alone, for kernels running in the pool (thread @tid):
 * oneDNN on one OpenMP thread, else cblas_sgemm (the caller keeps OpenBLAS on one thread) */
NPT_HIDDEN npt_status_t npt_gemm_f32_here(const npt_gemm_t *g, int tid);
/* gemm.c's oneDNN table and engine for pack.c; NULL when the GEMM is on OpenBLAS */
NPT_HIDDEN const void *npt_gemm_onednn(void **engine);
/* 1 when the GEMM's self-check found oneDNN's int8 (@s8) or bf16 product wrong here */
NPT_HIDDEN int npt_gemm_lowp_wrong(int s8);

#endif
