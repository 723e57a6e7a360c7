/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * gemm.c - the f32 GEMM behind matmul and linear: C = act(op(A) @ op(B) +
 * bias), on oneDNN's matmul primitive when it has a real kernel for this CPU,
 * else on OpenBLAS.
 *
 * oneDNN picks its kernels from the CPU (brgemm on AVX-512, its jit sgemm on
 * AVX2, ...) whatever OPENBLAS_CORETYPE says; a primitive whose
 * implementation is oneDNN's reference code ("ref:...") is not used and the
 * call goes to cblas_sgemm instead, which is also the portable fallback
 * when oneDNN cannot create a primitive at all. NPT_GEMM=openblas forces
 * OpenBLAS, NPT_GEMM=onednn forces oneDNN even with a reference kernel
 * (tests compare both); the default is auto.
 *
 * Primitives are made once per shape and kept in a small cache per pool
 * thread (keyed by every field of the call and the OpenMP thread count,
 * which oneDNN's blocking depends on), as oneDNN's own guide says; memory
 * objects are kept with the primitive and only their data handles change
 * per call. Bias and activation run as the primitive's post-ops (GELU in
 * erf form, tanh), so the output is written once; ReLU runs after the
 * product (oneDNN's post-op makes NaN 0, the library's ReLU keeps NaN).
 *
 * Threads: with more than one, the library's pool splits the output's
 * columns into panels of GEMM_NBLK (rows, with packed weights) and each
 * thread runs oneDNN on one OpenMP thread over its range (NPT_GEMM_OMP=1:
 * one primitive on OpenMP with all the threads instead); a product too
 * small to split runs on one thread. K is never split, but oneDNN may pick
 * another kernel for a panel than for the whole product, so results can
 * differ in the last bits between thread counts.
 *
 * Packed float32 weights run on the library's register tiles instead
 * (tiles.c) where the CPU has AVX-512F or AVX2+FMA: oneDNN's f32 layout is
 * panels of 64 columns, K rows of 64 floats each, which the tiles read in
 * place (tile_panels, tile_task).
 *
 * bf16x3 weights (pack.c: float32 as two bf16 terms, AMX only) run as three
 * bf16 products into the same output, c = xh wh + bias, c += xh wl,
 * c = act(c + xl wh) (oneDNN's sum post-op; run_one), each thread on its
 * own rows.
 *
 * Self-check: before the first product, oneDNN's matmul runs once on a
 * small problem (bias, then no post-op, a scale, GELU, tanh) and is
 * compared with the same arithmetic in double and libm. A post-op that gives
 * wrong values on this CPU is no longer asked of oneDNN: its activation runs
 * here after the product (npt_act_rows_f32); a wrong product itself sends
 * every GEMM to OpenBLAS. Either is logged as a warning and named by
 * npt_gemm_self_check(). The int8 and bf16 products (where oneDNN has real
 * kernels) are checked on small integers, exactly: a wrong one makes pack.c
 * refuse to pack or read weights in that precision. Found so: under qemu 7.2's TCG (AVX2 emulated)
 * oneDNN 2.6.3's AVX2 tanh post-op is wrong by up to 0.4 while its GEMM and
 * the other post-ops are right.
 *
 * Contracts: called under the evaluation lock (one GEMM at a time; each
 * thread's cache has its own lock anyway). B may be NULL with packed
 * weights that have no plain copy (never with OpenBLAS: such weights exist
 * only where oneDNN runs). A and B have a unit stride in
 * one dimension and a leading dimension >= the other (what cblas accepts);
 * C is row-major with ldc >= N; bias is N contiguous floats or NULL;
 * M, N, K > 0.
 */
#include "backend.h"
#include "onednn.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GEMM_CACHE 128

typedef struct {
	int64_t M, N, K, lda, ldb, ldc;
	int ta, tb, bias, act, threads, s8, bf16, accum;
	float alpha;
	int64_t wblk[5];     /* packed weights' layout (pack.c's form), zero = plain */
} gemm_key_t;

typedef struct {
	gemm_key_t key;
	int used;
	int blas;            /* oneDNN has only a reference kernel: use OpenBLAS */
	dnnl_primitive_t prim;
	dnnl_memory_t src, wei, bia, dst, scratch;
	size_t scratch_bytes;
} gemm_entry_t;

/* one per pool thread: its primitives and its stream (streams are not shared) */
typedef struct {
	pthread_mutex_t lock;
	dnnl_stream_t stream;
	gemm_entry_t e[GEMM_CACHE];
	int next;
	void *scratch;       /* oneDNN's scratchpad for this thread's primitives, kept */
	size_t scratch_cap;
} gemm_cache_t;

#define GEMM_MAX_THREADS 256
#define GEMM_NBLK 64         /* columns per panel when threads split a product */
#define GEMM_MROWS 8         /* fewest rows per thread when they split packed products */
#define GEMM_PANEL_ROWS 512  /* packed f32 products with fewer rows split columns */
#define TILE_MROWS 252       /* rows per block on the register tiles (42 tiles of 6) */
#define TILE_KC 1024         /* steps along K per block on the register tiles */

static pthread_mutex_t gemm_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t gemm_once = PTHREAD_ONCE_INIT;
static const npt_dnnl_t *D;
static dnnl_engine_t gemm_engine;
static int gemm_mode;        /* 0 auto, 1 onednn, 2 openblas */
static int gemm_omp;         /* NPT_GEMM_OMP=1: oneDNN's own threads */
static gemm_cache_t *gemm_caches[GEMM_MAX_THREADS];
static char gemm_impl[64];   /* implementation of the last oneDNN primitive made */
static unsigned gemm_own_act; /* 1 << act: activations the self-check took from oneDNN */
/* ReLU never runs on oneDNN: its post-op turns NaN into 0 where the library's
 * ReLU, elementwise or fused, keeps NaN */
#define GEMM_OWN_ALWAYS (1u << NPT_ACT_RELU)
static char gemm_check[256]; /* what the self-check found wrong, "" when nothing */
static unsigned gemm_bad_lowp; /* bit 0: oneDNN's bf16 product is wrong here, bit 1: int8 */

static int entry_make(const gemm_key_t *k, const dnnl_memory_desc_t *wmd, gemm_entry_t *e);
static void entry_clear(gemm_entry_t *e);
static void self_check(void);

static void gemm_init(void)
{
	const char *e = getenv("NPT_GEMM");

	if (e && !strcmp(e, "openblas"))
		gemm_mode = 2;
	else if (e && !strcmp(e, "onednn"))
		gemm_mode = 1;
	if (gemm_mode == 2)
		return;
	if (!(D = npt_dnnl_load())) {
		npt_log(NPT_LOG_INFO, "gemm: OpenBLAS: %s", npt_dnnl_why());
		return;
	}
	e = getenv("NPT_GEMM_OMP");
	gemm_omp = e && !strcmp(e, "1");
	/* oneDNN prints nothing unless DNNL_VERBOSE asks it to */
	if (D->dnnl_engine_create(&gemm_engine, dnnl_cpu, 0) != dnnl_success) {
		gemm_engine = NULL;
		npt_log(NPT_LOG_WARN, "gemm: oneDNN has no CPU engine here; using OpenBLAS");
		return;
	}
	self_check();
}

/* thread @tid's cache, made at its first use; NULL when out of memory */
static gemm_cache_t *cache_of(int tid)
{
	gemm_cache_t *c;

	if (tid < 0 || tid >= GEMM_MAX_THREADS)
		return NULL;
	pthread_mutex_lock(&gemm_lock);
	c = gemm_caches[tid];
	if (!c && (c = calloc(1, sizeof(*c)))) {
		pthread_mutex_init(&c->lock, NULL);
		if (D->dnnl_stream_create(&c->stream, gemm_engine, dnnl_stream_default_flags)) {
			free(c);
			c = NULL;
		}
		gemm_caches[tid] = c;
	}
	pthread_mutex_unlock(&gemm_lock);
	return c;
}

static void entry_clear(gemm_entry_t *e)
{
	D->dnnl_memory_destroy(e->src);
	D->dnnl_memory_destroy(e->wei);
	D->dnnl_memory_destroy(e->bia);
	D->dnnl_memory_destroy(e->dst);
	D->dnnl_memory_destroy(e->scratch);
	D->dnnl_primitive_destroy(e->prim);
	memset(e, 0, sizeof(*e));
}

static dnnl_alg_kind_t act_alg(int act)
{
	switch (act) {
	case NPT_ACT_GELU: return dnnl_eltwise_gelu_erf;
	case NPT_ACT_TANH: return dnnl_eltwise_tanh;
	case NPT_ACT_RELU: return dnnl_eltwise_relu;
	default: return dnnl_alg_kind_undef;
	}
}

/* the primitive for @k into @e; 0, or -1 when oneDNN cannot make one */
static int entry_make(const gemm_key_t *k, const dnnl_memory_desc_t *wmd, gemm_entry_t *e)
{
	dnnl_dims_t sd = { k->M, k->K }, wd = { k->K, k->N }, dd = { k->M, k->N }, bd = { 1, k->N };
	dnnl_dims_t ss = { k->ta ? 1 : k->lda, k->ta ? k->lda : 1 };
	dnnl_dims_t ws = { k->tb ? 1 : k->ldb, k->tb ? k->ldb : 1 };
	dnnl_dims_t ds = { k->ldc, 1 }, bs = { k->N, 1 };
	dnnl_memory_desc_t src, wei, dst, bia;
	dnnl_primitive_attr_t attr = NULL;
	dnnl_post_ops_t po = NULL;
	dnnl_primitive_desc_t pd = NULL;
	dnnl_matmul_desc_t md;
	const char *impl = "";
	int ret = -1;

	if (D->dnnl_memory_desc_init_by_strides(&src, 2, sd, k->s8 ? dnnl_s8 :
						    k->bf16 ? dnnl_bf16 : dnnl_f32, ss) ||
	    D->dnnl_memory_desc_init_by_strides(&dst, 2, dd, k->s8 ? dnnl_s32 : dnnl_f32, ds) ||
	    D->dnnl_memory_desc_init_by_strides(&bia, 2, bd, dnnl_f32, bs))
		return -1;
	if (wmd)
		wei = *wmd;
	else if (D->dnnl_memory_desc_init_by_strides(&wei, 2, wd, dnnl_f32, ws))
		return -1;
	if (D->dnnl_matmul_desc_init(&md, &src, &wei, k->bias ? &bia : NULL, &dst) ||
	    D->dnnl_primitive_attr_create(&attr))
		return -1;
	/* the scratchpad is ours (one per thread, kept): no allocation per product */
	if (D->dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user))
		goto out_attr;
	if (k->act != NPT_ACT_NONE || k->alpha != 1.0f || k->accum) {
		if (D->dnnl_post_ops_create(&po) ||
		    (k->alpha != 1.0f &&
		     D->dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear, k->alpha, 0.0f)) ||
		    (k->accum && D->dnnl_post_ops_append_sum(po, 1.0f)) ||
		    (k->act != NPT_ACT_NONE &&
		     D->dnnl_post_ops_append_eltwise(po, 1.0f, act_alg(k->act), 0.0f, 0.0f)) ||
		    D->dnnl_primitive_attr_set_post_ops(attr, po))
			goto out_attr;
	}
	if (D->dnnl_primitive_desc_create(&pd, &md, attr, gemm_engine, NULL)) {
		npt_log(NPT_LOG_DEBUG, "gemm: oneDNN has no matmul for [%lld, %lld] x [%lld, %lld]%s",
			(long long)k->M, (long long)k->K, (long long)k->K, (long long)k->N,
			wmd ? " with packed weights" : "");
		goto out_attr;
	}
	D->dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
	pthread_mutex_lock(&gemm_lock);
	snprintf(gemm_impl, sizeof(gemm_impl), "%s", impl);
	pthread_mutex_unlock(&gemm_lock);
	if (!strncmp(impl, "ref", 3) && gemm_mode != 1) {
		npt_log(NPT_LOG_DEBUG, "gemm: oneDNN has only %s for [%lld, %lld] x [%lld, %lld]%s",
			impl, (long long)k->M, (long long)k->K, (long long)k->K, (long long)k->N,
			wmd ? " with packed weights" : "");
		e->blas = 1;
		ret = 0;
		goto out_pd;
	}
	if (D->dnnl_primitive_create(&e->prim, pd))
		goto out_pd;
	const dnnl_memory_desc_t *smd = D->dnnl_primitive_desc_query_md(pd,
									 dnnl_query_scratchpad_md, 0);

	e->scratch_bytes = smd ? D->dnnl_memory_desc_get_size(smd) : 0;
	if (D->dnnl_memory_create(&e->src, &src, gemm_engine, DNNL_MEMORY_NONE) ||
	    D->dnnl_memory_create(&e->wei, &wei, gemm_engine, DNNL_MEMORY_NONE) ||
	    D->dnnl_memory_create(&e->dst, &dst, gemm_engine, DNNL_MEMORY_NONE) ||
	    (k->bias && D->dnnl_memory_create(&e->bia, &bia, gemm_engine, DNNL_MEMORY_NONE)) ||
	    (e->scratch_bytes &&
	     D->dnnl_memory_create(&e->scratch, smd, gemm_engine, DNNL_MEMORY_NONE))) {
		entry_clear(e);
		goto out_pd;
	}
	ret = 0;
out_pd:
	D->dnnl_primitive_desc_destroy(pd);
out_attr:
	D->dnnl_post_ops_destroy(po);
	D->dnnl_primitive_attr_destroy(attr);
	return ret;
}

/* the cached entry for @k, made on a miss; NULL when oneDNN is not usable */
static gemm_entry_t *entry_get(gemm_cache_t *c, const gemm_key_t *k,
			       const dnnl_memory_desc_t *wmd)
{
	gemm_entry_t *e;

	for (int i = 0; i < GEMM_CACHE; i++)
		if (c->e[i].used && !memcmp(&c->e[i].key, k, sizeof(*k)))
			return &c->e[i];
	e = &c->e[c->next];
	c->next = (c->next + 1) % GEMM_CACHE;
	if (e->used)
		entry_clear(e);
	if (entry_make(k, wmd, e))
		return NULL;
	e->key = *k;
	e->used = 1;
	return e;
}

/* columns per N block of a packed layout: its inner blocks along N */
static int64_t n_block(const dnnl_memory_desc_t *md)
{
	const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
	int64_t nb = 1;

	for (int i = 0; i < b->inner_nblks; i++)
		if (b->inner_idxs[i] == 1)
			nb *= b->inner_blks[i];
	return nb;
}

/* the descriptor of the first @n columns of a packed weight, into *out */
static void packed_slice_md(const void *md, int64_t n, void *out)
{
	dnnl_memory_desc_t *o = out;
	int64_t nb;

	*o = *(const dnnl_memory_desc_t *)md;
	nb = n_block(o);
	o->dims[1] = n;
	o->padded_dims[1] = (n + nb - 1) / nb * nb;
}

static void blas_epilogue(float *c, int64_t M, int64_t N, int64_t ldc, const float *bias, int act)
{
	if (!bias && act == NPT_ACT_NONE)
		return;
	for (int64_t r = 0; r < M; r++)
		npt_act_rows_f32(act, N, c + r * ldc, bias);
}

typedef struct {
	float *c;
	const float *bias;
	int64_t n, ldc;
	int act;
} epi_job_t;

static void epilogue_task(void *arg, int64_t begin, int64_t end, int tid)
{
	const epi_job_t *j = arg;

	(void)tid;
	blas_epilogue(j->c + begin * j->ldc, end - begin, j->n, j->ldc, j->bias, j->act);
}

static void run_blas(const npt_gemm_t *g)
{
	cblas_sgemm(CblasRowMajor, g->ta ? CblasTrans : CblasNoTrans,
		    g->tb ? CblasTrans : CblasNoTrans, g->M, g->N, g->K,
		    g->alpha != 0.0f ? g->alpha : 1.0f, g->a, g->lda, g->b, g->ldb, 0.0f, g->c, g->ldc);
	if (g->bias || g->act != NPT_ACT_NONE) {
		epi_job_t j = { g->c, g->bias, g->N, g->ldc, g->act };

		npt_parallel_for(g->M, 16384 / g->N + 1, epilogue_task, &j);
	}
}

/* one product on @c's primitives, oneDNN on @omp threads; 1 = it needs OpenBLAS */
static int run_product(gemm_cache_t *c, const npt_gemm_t *g, int omp, npt_status_t *st)
{
	dnnl_memory_desc_t wmd;
	gemm_key_t k;
	gemm_entry_t *e;
	dnnl_status_t ds;

	memset(&k, 0, sizeof(k));
	k.M = g->M;
	k.N = g->N;
	k.K = g->K;
	k.lda = g->aq || g->abf ? g->K : g->lda;
	k.s8 = g->aq != NULL;
	k.bf16 = g->abf != NULL;
	k.ldb = g->packed ? 0 : g->ldb;
	k.ldc = g->ldc;
	k.ta = g->ta;
	k.tb = g->packed ? 0 : g->tb;
	k.bias = g->bias != NULL && !g->aq;   /* int8: bias and activation after the scales */
	k.act = g->aq || ((gemm_own_act | GEMM_OWN_ALWAYS) & (1u << g->act)) ? NPT_ACT_NONE :
		g->act;
	k.alpha = g->alpha != 0.0f ? g->alpha : 1.0f;
	k.accum = g->accum;
	k.threads = omp;
	if (g->packed) {
		const dnnl_blocking_desc_t *b = &((const dnnl_memory_desc_t *)g->packed_desc)
							 ->format_desc.blocking;

		if (g->aq || g->abf)
			wmd = *(const dnnl_memory_desc_t *)g->packed_desc;
		else
			packed_slice_md(g->packed_desc, g->N, &wmd);
		k.wblk[0] = wmd.padded_dims[0];
		k.wblk[1] = b->strides[0];
		k.wblk[2] = b->strides[1];
		k.wblk[3] = b->inner_blks[0];
		k.wblk[4] = b->inner_blks[1];
	}
	D->omp_set_num_threads(omp);
	pthread_mutex_lock(&c->lock);
	e = entry_get(c, &k, g->packed ? &wmd : NULL);
	if (!e || e->blas) {
		pthread_mutex_unlock(&c->lock);
		return 1;
	}
	if (e->scratch_bytes > c->scratch_cap) {
		void *n = aligned_alloc(64, (e->scratch_bytes + 63) / 64 * 64);

		if (!n) {
			pthread_mutex_unlock(&c->lock);
			*st = npt_fail(NPT_E_NOMEM, "gemm: out of memory for oneDNN's scratchpad "
				       "(%zu bytes)", e->scratch_bytes);
			return 0;
		}
		free(c->scratch);
		c->scratch = n;
		c->scratch_cap = e->scratch_bytes;
	}
	dnnl_exec_arg_t args[5] = {
		{ DNNL_ARG_SRC, e->src }, { DNNL_ARG_WEIGHTS, e->wei }, { DNNL_ARG_DST, e->dst },
		{ DNNL_ARG_SCRATCHPAD, e->scratch }, { DNNL_ARG_BIAS, e->bia },
	};
	int nargs = 3;

	if (e->scratch_bytes) {
		D->dnnl_memory_set_data_handle(e->scratch, c->scratch);
		nargs = 4;
	}
	if (k.bias)
		args[nargs++] = (dnnl_exec_arg_t){ DNNL_ARG_BIAS, e->bia };

	D->dnnl_memory_set_data_handle(e->src, g->aq ? (void *)g->aq : g->abf ? (void *)g->abf :
				       (void *)g->a);
	D->dnnl_memory_set_data_handle(e->wei, (void *)(g->packed ? g->packed : g->b));
	D->dnnl_memory_set_data_handle(e->dst, g->c);
	if (k.bias)
		D->dnnl_memory_set_data_handle(e->bia, (void *)g->bias);
	ds = D->dnnl_primitive_execute(e->prim, c->stream, nargs, args);
	if (!ds)
		ds = D->dnnl_stream_wait(c->stream);
	pthread_mutex_unlock(&c->lock);
	if (!ds && !g->aq && k.act != g->act)
		blas_epilogue(g->c, g->M, g->N, g->ldc, NULL, g->act);
	if (ds)
		*st = npt_fail(NPT_E_NOMEM, "gemm: oneDNN's matmul of [%lld, %lld] x [%lld, %lld] "
			       "failed (status %d, usually out of memory)", (long long)g->M,
			       (long long)g->K, (long long)g->K, (long long)g->N, (int)ds);
	return 0;
}

/*
 * run_product, and a float32 product with bf16x3 weights as its three bf16
 * products into the same output (pack.c): c = ah wh + bias, c += ah wl,
 * c = act(c + al wh); the dropped al wl is below 2^-16 of each term.
 */
static int run_one(gemm_cache_t *c, const npt_gemm_t *g, int omp, npt_status_t *st)
{
	npt_gemm_t p = *g;

	if (!g->packed_lo)
		return run_product(c, g, omp, st);
	p.abf_lo = NULL;
	p.packed_lo = NULL;
	p.act = NPT_ACT_NONE;
	if (run_product(c, &p, omp, st) || *st)
		return !*st;
	p.bias = NULL;
	p.accum = 1;
	p.packed = g->packed_lo;
	if (run_product(c, &p, omp, st) || *st)
		return !*st;
	p.abf = g->abf_lo;
	p.packed = g->packed;
	p.act = g->act;
	return run_product(c, &p, omp, st);
}

typedef struct {
	const npt_gemm_t *g;
	atomic_int blas;
	atomic_int failed;
	npt_status_t st;
} split_job_t;

/* one thread's part of a split product, on that thread's cache */
static void run_part(split_job_t *j, const npt_gemm_t *sub, int tid)
{
	gemm_cache_t *c = cache_of(tid);
	npt_status_t st = NPT_OK;

	if (!c || run_one(c, sub, 1, &st))
		atomic_store(&j->blas, 1);
	else if (st && !atomic_exchange(&j->failed, 1))
		j->st = st;
}

/* columns [begin, end) * GEMM_NBLK of the product, oneDNN on this thread alone */
/* @g restricted to columns [begin, end) * GEMM_NBLK (its output, plain weight and bias) */
static npt_gemm_t column_panel(const npt_gemm_t *g, int64_t begin, int64_t end)
{
	int64_t n0 = begin * GEMM_NBLK, n1 = end * GEMM_NBLK < g->N ? end * GEMM_NBLK : g->N;
	npt_gemm_t sub = *g;

	sub.N = n1 - n0;
	sub.b = g->b ? g->b + (g->tb ? n0 * g->ldb : n0) : NULL;
	sub.c = g->c + n0;
	sub.bias = g->bias ? g->bias + n0 : NULL;
	return sub;
}

static void split_task(void *arg, int64_t begin, int64_t end, int tid)
{
	split_job_t *j = arg;
	npt_gemm_t sub = column_panel(j->g, begin, end);

	run_part(j, &sub, tid);
}

/* one row of int32 sums (in place of the floats) times as * ws[n] */
NPT_SIMD512 static void s8_dequant_row(int64_t n, float *row, float as, const float *ws)
{
	for (int64_t k = 0; k < n; k++) {
		int32_t v;

		memcpy(&v, &row[k], sizeof(v));
		row[k] = (float)v * (as * ws[k]);
	}
}

/* int8: rows [m0, m1) of c hold int32 sums; make them act(sum * ascale[m] * wscale[n] + bias) */
static void s8_epilogue(const npt_gemm_t *g, int64_t m0, int64_t m1)
{
	for (int64_t r = m0; r < m1; r++) {
		float *row = g->c + r * g->ldc;

		s8_dequant_row(g->N, row, g->ascale[r], g->wscale);
		if (g->bias || g->act != NPT_ACT_NONE)
			npt_act_rows_f32(g->act, g->N, row, g->bias);
	}
}

/*
 * columns [begin, end) * GEMM_NBLK of a product with packed float32 weights
 * and few rows: the panel of the weight is its N blocks from n0 (each
 * contiguous, pack.c), the output goes to this thread's scratch first
 * (oneDNN's blocked kernels take no output wider than the product) and is
 * copied into place. Each thread reads its share of the weight only, where
 * a split of few rows would have every thread read all of it with small
 * blocks of rows.
 */
static void panel_task(void *arg, int64_t begin, int64_t end, int tid)
{
	split_job_t *j = arg;
	const npt_gemm_t *g = j->g;
	const dnnl_memory_desc_t *md = g->packed_desc;
	int64_t n0 = begin * GEMM_NBLK;
	npt_gemm_t sub = column_panel(g, begin, end);
	float *out = npt_thread_scratch(NPT_TLS_GEMM, (size_t)(g->M * sub.N) * sizeof(float));

	if (!out) {
		if (!atomic_exchange(&j->failed, 1))
			j->st = npt_fail(NPT_E_NOMEM, "gemm: out of memory for a panel of the "
					 "output");
		return;
	}
	sub.packed = (const float *)g->packed +
		     n0 / n_block(md) * md->format_desc.blocking.strides[1];
	sub.c = out;
	sub.ldc = sub.N;
	run_part(j, &sub, tid);
	if (atomic_load(&j->blas) || atomic_load(&j->failed))
		return;
	for (int64_t r = 0; r < g->M; r++)
		memcpy(g->c + r * g->ldc + n0, out + r * sub.N, (size_t)sub.N * sizeof(float));
}

/*
 * Packed float32 weights in panels of GEMM_NBLK columns, each panel K' >= K
 * rows of GEMM_NBLK floats one after the other (pack.c's oneDNN layouts
 * "blk<R>k64n" with the row blocks of a panel adjacent, or 64n alone): the
 * register tiles (tiles.c) read a panel in place as their b operand.
 */
static int tile_panels(const dnnl_memory_desc_t *md)
{
	const dnnl_blocking_desc_t *b = &md->format_desc.blocking;

	if (md->data_type != dnnl_f32 || md->format_kind != dnnl_blocked)
		return 0;
	if (b->inner_nblks == 1)
		return b->inner_idxs[0] == 1 && b->inner_blks[0] == GEMM_NBLK &&
		       b->strides[0] == GEMM_NBLK;
	return b->inner_nblks == 2 && b->inner_idxs[0] == 0 && b->inner_idxs[1] == 1 &&
	       b->inner_blks[1] == GEMM_NBLK && b->strides[0] == b->inner_blks[0] * GEMM_NBLK;
}

/* columns [begin, end) * GEMM_NBLK of a product with tile_panels() weights, on
 * the register tiles, bias and activation applied in registers on the last K block */
static void tile_task(void *arg, int64_t begin, int64_t end, int tid)
{
	split_job_t *j = arg;
	const npt_gemm_t *g = j->g;
	const dnnl_memory_desc_t *md = g->packed_desc;
	npt_tile_fn tile = npt_tile_f32();
	int64_t pstride = md->format_desc.blocking.strides[1];

	(void)tid;
	/*
	 * Equal blocks of at most TILE_MROWS rows and of at most TILE_KC steps
	 * along K: a block of the input stays in L2 while the panels' blocks
	 * pass (each read once per row block, from L3 after the first), and the
	 * output is summed over the K blocks in place. The next block of panel
	 * is prefetched while the current one runs.
	 */
	int64_t mblocks = (g->M + TILE_MROWS - 1) / TILE_MROWS;
	int64_t rows = ((g->M + mblocks - 1) / mblocks + 5) / 6 * 6;	/* whole tiles */
	int64_t kblocks = (g->K + TILE_KC - 1) / TILE_KC;
	int64_t kc = (g->K + kblocks - 1) / kblocks;

	for (int64_t r0 = 0; r0 < g->M; r0 += rows) {
		int64_t mr = g->M - r0 < rows ? g->M - r0 : rows;

		for (int64_t k0 = 0; k0 < g->K; k0 += kc) {
			int64_t kk = g->K - k0 < kc ? g->K - k0 : kc;
			int last = k0 + kk == g->K;

			for (int64_t blk = begin; blk < end; blk++) {
				int64_t n0 = blk * GEMM_NBLK;
				int64_t nn = g->N - n0 < GEMM_NBLK ? g->N - n0 : GEMM_NBLK;
				const float *panel = (const float *)g->packed + blk * pstride;
				/* what runs next: the next panel's block, else the first
				 * panel's next block */
				const float *next = blk + 1 < end ? panel + pstride + k0 * GEMM_NBLK :
						    !last ? (const float *)g->packed +
							    begin * pstride + (k0 + kc) * GEMM_NBLK : NULL;
				npt_tile_t t = {
					.m = mr, .n = nn, .k = kk, .lda = g->lda, .ldb = GEMM_NBLK,
					.ldc = g->ldc, .a = g->a + r0 * g->lda + k0,
					.b = panel + k0 * GEMM_NBLK, .c = g->c + r0 * g->ldc + n0,
					.alpha = g->alpha != 0.0f ? g->alpha : 1.0f,
					.accumulate = k0 > 0, .next = next,
					.next_bytes = (size_t)kc * GEMM_NBLK * sizeof(float),
					/* on the last K block, in registers */
					.bias = last && g->bias ? g->bias + n0 : NULL,
					.act = last ? g->act : NPT_ACT_NONE,
				};

				tile(&t);
			}
		}
	}
}

/* rows [begin, end) of a product with packed weights (oneDNN's blocked
 * kernels take no output wider than the product, so packed products split
 * rows, each thread reading all of the packed weight) */
static void rows_task(void *arg, int64_t begin, int64_t end, int tid)
{
	split_job_t *j = arg;
	const npt_gemm_t *g = j->g;
	npt_gemm_t sub = *g;

	sub.M = end - begin;
	sub.a = g->a + (g->ta ? begin : begin * g->lda);
	sub.c = g->c + begin * g->ldc;
	if (g->aq) {
		sub.aq = g->aq + begin * g->K;
		sub.ascale = g->ascale + begin;
	}
	if (g->abf)
		sub.abf = g->abf + begin * g->K;
	if (g->abf_lo)
		sub.abf_lo = g->abf_lo + begin * g->K;
	run_part(j, &sub, tid);
	if (g->aq && !atomic_load(&j->blas) && !atomic_load(&j->failed))
		s8_epilogue(&sub, 0, sub.M);
}

/* the self-check's reference: act(alpha * z), z in double */
static double ref_act(int act, double alpha, double z)
{
	z *= alpha;
	switch (act) {
	case NPT_ACT_GELU: return 0.5 * z * (1.0 + erf(z / sqrt(2.0)));
	case NPT_ACT_TANH: return tanh(z);
	case NPT_ACT_RELU: return z > 0 ? z : 0;
	default: return z;
	}
}

/*
 * One small product on oneDNN, [M, K] @ [N, K]^T + bias, then @act (scaled by
 * @alpha), against double; the largest error relative to 1 + |reference|
 * into *err, the input at which it was into *at. -1 when oneDNN made no
 * primitive (nothing to check), 0 when it ran.
 */
static int check_one(dnnl_stream_t stream, int act, float alpha, double *err, double *at)
{
	enum { M = 24, K = 8, N = 80 };
	static float a[M * K], b[N * K], bias[N], c[M * N];
	gemm_key_t k = { .M = M, .N = N, .K = K, .lda = K, .ldb = K, .ldc = N, .tb = 1,
			 .bias = alpha == 1.0f, .act = act, .alpha = alpha, .threads = 1 };
	gemm_entry_t e;
	void *scratch = NULL;
	int ret = -1;

	memset(&e, 0, sizeof(e));
	/* pre-activations spread over [-7, 7]: every range of tanh's and erf's tables */
	for (int i = 0; i < M * K; i++)
		a[i] = (float)((i * 37) % 29 - 14) / 16.0f;
	for (int i = 0; i < N * K; i++)
		b[i] = (float)((i * 11) % 17 - 8) / 8.0f;
	for (int n = 0; n < N; n++)
		bias[n] = (float)(n % 9 - 4) / 4.0f;
	if (entry_make(&k, NULL, &e) || e.blas || !e.prim)
		goto out;
	if (e.scratch_bytes && !(scratch = aligned_alloc(64, (e.scratch_bytes + 63) / 64 * 64)))
		goto out;
	dnnl_exec_arg_t args[5] = {
		{ DNNL_ARG_SRC, e.src }, { DNNL_ARG_WEIGHTS, e.wei }, { DNNL_ARG_DST, e.dst },
	};
	int nargs = 3;

	if (e.scratch_bytes) {
		D->dnnl_memory_set_data_handle(e.scratch, scratch);
		args[nargs++] = (dnnl_exec_arg_t){ DNNL_ARG_SCRATCHPAD, e.scratch };
	}
	if (k.bias) {
		D->dnnl_memory_set_data_handle(e.bia, bias);
		args[nargs++] = (dnnl_exec_arg_t){ DNNL_ARG_BIAS, e.bia };
	}
	D->dnnl_memory_set_data_handle(e.src, a);
	D->dnnl_memory_set_data_handle(e.wei, b);
	D->dnnl_memory_set_data_handle(e.dst, c);
	if (D->dnnl_primitive_execute(e.prim, stream, nargs, args) ||
	    D->dnnl_stream_wait(stream))
		goto out;
	*err = 0;
	for (int m = 0; m < M; m++)
		for (int n = 0; n < N; n++) {
			double z = k.bias ? bias[n] : 0, r, d;

			for (int i = 0; i < K; i++)
				z += (double)a[m * K + i] * b[n * K + i];
			r = ref_act(act, alpha, z);
			d = fabs(c[m * N + n] - r) / (1.0 + fabs(r));
			if (!(d <= *err)) {
				*err = d;
				*at = z * alpha;
			}
		}
	ret = 0;
out:
	free(scratch);
	if (e.prim || e.src)
		entry_clear(&e);
	return ret;
}

/*
 * The int8 (s8 x s8 -> s32) or bf16 (-> f32) product, [M, K] @ [N, K]^T on
 * small integers, which both hold exactly: 1 when oneDNN's answer differs
 * from the exact one, 0 when it agrees or has no real kernel (nothing used).
 */
static int check_lowp(dnnl_stream_t stream, int s8)
{
	enum { M = 20, K = 64, N = 48 };
	static int8_t a8[M * K], b8[N * K];
	static uint16_t a16[M * K], b16[N * K];
	static int32_t c[M * N];
	gemm_key_t k = { .M = M, .N = N, .K = K, .lda = K, .ldc = N, .s8 = s8, .bf16 = !s8,
			 .alpha = 1.0f, .threads = 1 };
	dnnl_dims_t wd = { K, N }, ws = { 1, K };
	dnnl_memory_desc_t wmd;
	gemm_entry_t e;
	void *scratch = NULL;
	int bad = 0;

	memset(&e, 0, sizeof(e));
	for (int i = 0; i < M * K; i++) {
		a8[i] = (int8_t)((i * 37) % 255 - 127);
		a16[i] = (uint16_t)(npt_f32_to_bf16((float)((i * 37) % 33 - 16)));
	}
	for (int i = 0; i < N * K; i++) {
		b8[i] = (int8_t)((i * 11) % 255 - 127);
		b16[i] = (uint16_t)(npt_f32_to_bf16((float)((i * 11) % 17 - 8)));
	}
	if (D->dnnl_memory_desc_init_by_strides(&wmd, 2, wd, s8 ? dnnl_s8 : dnnl_bf16, ws) ||
	    entry_make(&k, &wmd, &e) || e.blas || !e.prim)
		goto out;
	if (e.scratch_bytes && !(scratch = aligned_alloc(64, (e.scratch_bytes + 63) / 64 * 64)))
		goto out;
	dnnl_exec_arg_t args[4] = {
		{ DNNL_ARG_SRC, e.src }, { DNNL_ARG_WEIGHTS, e.wei }, { DNNL_ARG_DST, e.dst },
		{ DNNL_ARG_SCRATCHPAD, e.scratch },
	};

	if (e.scratch_bytes)
		D->dnnl_memory_set_data_handle(e.scratch, scratch);
	D->dnnl_memory_set_data_handle(e.src, s8 ? (void *)a8 : (void *)a16);
	D->dnnl_memory_set_data_handle(e.wei, s8 ? (void *)b8 : (void *)b16);
	D->dnnl_memory_set_data_handle(e.dst, c);
	if (D->dnnl_primitive_execute(e.prim, stream, e.scratch_bytes ? 4 : 3, args) ||
	    D->dnnl_stream_wait(stream))
		goto out;
	for (int m = 0; m < M && !bad; m++)
		for (int n = 0; n < N && !bad; n++) {
			int64_t z = 0;
			float f;

			for (int i = 0; i < K; i++)
				z += s8 ? (int64_t)a8[m * K + i] * b8[n * K + i] :
				     (int64_t)((m * K + i) * 37 % 33 - 16) *
				     ((n * K + i) * 11 % 17 - 8);
			memcpy(&f, &c[m * N + n], sizeof(f));
			bad = s8 ? c[m * N + n] != z : f != (float)z;
		}
out:
	free(scratch);
	if (e.prim || e.src)
		entry_clear(&e);
	return bad;
}

static void self_check(void)
{
	static const struct { int act; float alpha; const char *name; } cases[] = {
		{ NPT_ACT_NONE, 1.0f, "product" }, { NPT_ACT_NONE, 0.35f, "scaled product" },
		{ NPT_ACT_GELU, 1.0f, "GELU" }, { NPT_ACT_TANH, 1.0f, "tanh" },
	};
	const char *env = getenv("DNNL_MAX_CPU_ISA");
	dnnl_stream_t stream;
	int product_bad = 0;
	size_t o = 0;

	if (D->dnnl_stream_create(&stream, gemm_engine, dnnl_stream_default_flags))
		return;
	D->omp_set_num_threads(1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double err = 0, at = 0;

		/* 1e-4: oneDNN's own approximations are within a few ulp */
		if (check_one(stream, cases[i].act, cases[i].alpha, &err, &at) || err <= 1e-4)
			continue;
		if (o < sizeof(gemm_check))
			o += snprintf(gemm_check + o, sizeof(gemm_check) - o, "%soneDNN's %s is "
				      "wrong by %.3g at %.3g", o ? "; " : "", cases[i].name, err, at);
		if (i < 2) {
			product_bad = 1;
			break;
		}
		gemm_own_act |= 1u << cases[i].act;
	}
	for (int s8 = 0; s8 < 2 && !product_bad; s8++) {
		if (!check_lowp(stream, s8))
			continue;
		gemm_bad_lowp |= 1u << s8;
		if (o < sizeof(gemm_check))
			o += snprintf(gemm_check + o, sizeof(gemm_check) - o, "%soneDNN's %s "
				      "product is wrong", o ? "; " : "", s8 ? "int8" : "bf16");
	}
	D->dnnl_stream_destroy(stream);
	/* npt_gemm_backend() names the kernels of the caller's products, not these */
	pthread_mutex_lock(&gemm_lock);
	gemm_impl[0] = '\0';
	pthread_mutex_unlock(&gemm_lock);
	if (!gemm_check[0])
		return;
	if (product_bad) {
		npt_log(NPT_LOG_WARN, "gemm: %s on this CPU (%s%s): using OpenBLAS; "
			"DNNL_MAX_CPU_ISA=avx or lower may give right oneDNN kernels", gemm_check,
			env ? "DNNL_MAX_CPU_ISA=" : "ISA ", env ? env : "as detected");
		D->dnnl_engine_destroy(gemm_engine);
		gemm_engine = NULL;
		return;
	}
	npt_log(NPT_LOG_WARN, "gemm: %s on this CPU: %s%s%s", gemm_check,
		gemm_own_act ? "those activations run after oneDNN's product instead" : "",
		gemm_own_act && gemm_bad_lowp ? "; " : "",
		gemm_bad_lowp ? "packed weights in that precision are refused and the float32 "
		"weights used" : "");
}

int npt_gemm_lowp_wrong(int s8)
{
	pthread_once(&gemm_once, gemm_init);
	return (gemm_bad_lowp >> !!s8) & 1;
}

NPT_API const char *npt_gemm_self_check(void)
{
	pthread_once(&gemm_once, gemm_init);
	return gemm_check[0] ? gemm_check : NULL;
}

/*
 * oneDNN would not take a weight that has no plain copy (npt_tensor_from_packed)
 * for this product: its blocked kernels want unit-stride input rows, so
 * strided rows (hidden[:, 0, :]) are copied together and the product tried
 * again; anything else is refused.
 */
static npt_status_t packed_only(const npt_gemm_t *g)
{
	npt_gemm_t rows = *g;
	npt_status_t st;
	float *a;

	if ((!g->ta && g->lda == g->K) || g->aq || g->abf)
		return npt_fail(NPT_E_UNSUPPORTED, "gemm: oneDNN has no kernel for a [%lld, %lld] x "
				"[%lld, %lld] product with this packed weight, and the weight has "
				"no plain copy to fall back on", (long long)g->M, (long long)g->K,
				(long long)g->K, (long long)g->N);
	if (!(a = malloc((size_t)(g->M * g->K) * sizeof(float))))
		return npt_fail(NPT_E_NOMEM, "gemm: out of memory for the input rows");
	for (int64_t m = 0; m < g->M; m++)
		for (int64_t k = 0; k < g->K; k++)
			a[m * g->K + k] = g->ta ? g->a[k * g->lda + m] : g->a[m * g->lda + k];
	rows.a = a;
	rows.lda = g->K;
	rows.ta = 0;
	st = npt_gemm_f32(&rows);
	free(a);
	return st;
}

/* NPT_GEMM_PANEL_ROWS overrides GEMM_PANEL_ROWS (0: always split rows), for measurements */
static int64_t panel_rows(void)
{
	static int64_t v = -1;
	const char *e;

	if (v < 0)
		v = (e = getenv("NPT_GEMM_PANEL_ROWS")) ? atoll(e) : GEMM_PANEL_ROWS;
	return v;
}

npt_status_t npt_gemm_f32(const npt_gemm_t *g)
{
	int threads = npt_pool_threads();
	npt_status_t st = NPT_OK;
	npt_gemm_t plain;
	gemm_cache_t *c;

	pthread_once(&gemm_once, gemm_init);
	if (!gemm_engine) {
		run_blas(g);
		return NPT_OK;
	}
	/*
	 * More than one thread: the library's pool splits the columns and each
	 * thread runs oneDNN alone on its panel (OpenMP's spinning barriers lose
	 * badly on a shared machine); NPT_GEMM_OMP=1 hands oneDNN all the
	 * threads instead, to compare. Products with packed weights split rows,
	 * or, packed float32 with fewer than GEMM_PANEL_ROWS rows, columns
	 * (panel_task; measured on BERT-base at 128 and 256 tokens, 2 threads:
	 * 8-11 % faster than rows; at 512 and more, rows are as fast or faster;
	 * with oneDNN's AMX kernels for bf16 and bf16x3, rows).
	 * A product too small to split runs on the calling thread alone (never
	 * on OpenMP's threads, whose barriers stall behind a descheduled one).
	 */
	int panels = g->packed && !g->aq && !g->abf && g->M < panel_rows() &&
		     GEMM_NBLK % n_block(g->packed_desc) == 0;

	/*
	 * Packed float32 where the CPU has the register tiles: each thread
	 * computes whole panels of columns on them, so each output element is
	 * the same chain of operations whatever the thread count. BERT-base,
	 * 2 threads: 1 x 128 55-56 ms (oneDNN's panels, and attention on GEMMs:
	 * 62-64), 8 x 128 423-429 ms (oneDNN on rows: 431-436).
	 */
	if (g->packed && !g->aq && !g->abf && !g->ta && npt_tile_f32() &&
	    tile_panels(g->packed_desc)) {
		split_job_t j = { .g = g };
		int64_t np = (g->N + GEMM_NBLK - 1) / GEMM_NBLK;

		if (threads > 1 && np > 1)
			npt_parallel_for(np, 1, tile_task, &j);
		else
			tile_task(&j, 0, np, 0);
		return NPT_OK;
	}

	if (threads > 1 && !gemm_omp && (panels || !g->packed ? g->N >= 2 * GEMM_NBLK :
					 g->M >= 2 * GEMM_MROWS)) {
		split_job_t j = { .g = g };

		if (panels)
			npt_parallel_for((g->N + GEMM_NBLK - 1) / GEMM_NBLK, 1, panel_task, &j);
		else if (g->packed)
			npt_parallel_for(g->M, GEMM_MROWS, rows_task, &j);
		else
			npt_parallel_for((g->N + GEMM_NBLK - 1) / GEMM_NBLK, 1, split_task, &j);
		if (atomic_load(&j.failed))
			return j.st;
		if (!atomic_load(&j.blas))
			return NPT_OK;
	} else if ((c = cache_of(0)) && !run_one(c, g, gemm_omp ? threads : 1, &st)) {
		if (!st && g->aq)
			s8_epilogue(g, 0, g->M);
		return st;
	}
	if (!g->packed) {
		run_blas(g);
		return NPT_OK;
	}
	if (!g->b)
		return packed_only(g);
	/* oneDNN would not take the packed layout for this product: the plain weight */
	npt_log(NPT_LOG_INFO, "gemm: oneDNN has no kernel for the packed weight in a [%lld, %lld] "
		"x [%lld, %lld] product; using the plain weight", (long long)g->M,
		(long long)g->K, (long long)g->K, (long long)g->N);
	plain = *g;
	plain.packed = plain.packed_desc = NULL;
	plain.aq = NULL;
	plain.abf = plain.abf_lo = NULL;
	plain.packed_lo = NULL;
	return npt_gemm_f32(&plain);
}

npt_status_t npt_gemm_f32_here(const npt_gemm_t *g, int tid)
{
	npt_status_t st = NPT_OK;
	gemm_cache_t *c;

	pthread_once(&gemm_once, gemm_init);
	if (gemm_engine && !g->aq && !g->abf && (c = cache_of(tid)) && !run_one(c, g, 1, &st))
		return st;
	cblas_sgemm(CblasRowMajor, g->ta ? CblasTrans : CblasNoTrans,
		    g->tb ? CblasTrans : CblasNoTrans, g->M, g->N, g->K,
		    g->alpha != 0.0f ? g->alpha : 1.0f, g->a, g->lda, g->b, g->ldb, 0.0f, g->c, g->ldc);
	if (g->bias || g->act != NPT_ACT_NONE)
		blas_epilogue(g->c, g->M, g->N, g->ldc, g->bias, g->act);
	return NPT_OK;
}

const void *npt_gemm_onednn(void **engine)
{
	pthread_once(&gemm_once, gemm_init);
	*engine = gemm_engine;
	return gemm_engine ? D : NULL;
}

NPT_API const char *npt_gemm_backend(void)
{
	static char name[128];
	const dnnl_version_t *v;

	pthread_once(&gemm_once, gemm_init);
	if (!gemm_engine)
		return "openblas";
	v = D->dnnl_version();
	pthread_mutex_lock(&gemm_lock);
	snprintf(name, sizeof(name), "onednn %d.%d.%d%s%s", v->major, v->minor, v->patch,
		 gemm_impl[0] ? " " : "", gemm_impl);
	pthread_mutex_unlock(&gemm_lock);
	return name;
}
