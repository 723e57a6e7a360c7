/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * internal.h - private structures shared by the nptensor sources.
 *
 * Contracts: strides and offsets are in elements; a lazy tensor has
 * node != NULL and buf == NULL and C-contiguous strides; a materialised one
 * has buf != NULL and node == NULL. Only eval.c turns the first into the
 * second, under the evaluation lock.
 */
#ifndef NPT_INTERNAL_H
#define NPT_INTERNAL_H

#define NPT_BUILDING_LIBRARY 1
#include "nptensor.h"

#include <stdatomic.h>
#include <stdarg.h>
#include <pthread.h>

#define NPT_HIDDEN __attribute__((visibility("hidden")))
/* Kernels are compiled twice (AVX2+FMA+F16C and baseline) and picked at load. */
#define NPT_SIMD __attribute__((target_clones("arch=x86-64-v3", "default")))

/* ---- status.c ---- */
NPT_HIDDEN npt_status_t npt_fail(npt_status_t s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
NPT_HIDDEN void npt_log(npt_log_level_t lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* "(2,3)" into buf; returns buf */
NPT_HIDDEN char *npt_shape_str(char *buf, size_t len, int ndim, const int64_t *shape);
#define NPT_SHAPE_STRLEN 400

/* ---- config.c ---- */
NPT_HIDDEN npt_expand_mode_t npt_cfg_expand_mode(void);
NPT_HIDDEN size_t npt_cfg_warn_bytes(void);
#define NPT_REPRO_DEFAULT NPT_REPRO_INDEPENDENT
NPT_HIDDEN void npt_note_materialize(const char *op, int ndim_from, const int64_t *from,
				     int ndim_to, const int64_t *to, size_t bytes, const char *why);

/* ---- linear.c: an operand BLAS cannot read in place, copied (attention.c too) ---- */
NPT_HIDDEN npt_status_t npt_blas_operand(const char *op, npt_tensor_t *t, const char *what,
					 npt_tensor_t **out);

/* ---- buffer.c: refcounted buffers and the pool ---- */
typedef struct npt_buffer {
	atomic_int refs;
	char *data;
	size_t nbytes;       /* usable bytes */
	size_t capacity;     /* pooled capacity (owned) */
	int owned;           /* 1: from the pool; 0: borrowed */
	int readonly;
	void (*release)(void *);
	void *release_arg;
} npt_buffer_t;

NPT_HIDDEN npt_status_t npt_buffer_alloc(size_t nbytes, npt_buffer_t **out);
NPT_HIDDEN npt_buffer_t *npt_buffer_borrow(void *data, size_t nbytes, int readonly,
					   void (*release)(void *), void *arg);
NPT_HIDDEN void npt_buffer_retain(npt_buffer_t *b);
NPT_HIDDEN void npt_buffer_release(npt_buffer_t *b);
/* scratch memory for kernels (pooled, not a tensor) */
NPT_HIDDEN void *npt_scratch_alloc(size_t nbytes, size_t *cap);
NPT_HIDDEN void npt_scratch_free(void *p, size_t cap);
NPT_HIDDEN void npt_stats_add_inplace(size_t b);
NPT_HIDDEN void npt_stats_add_materialized(size_t b);

/* ---- tensor.c ---- */
typedef enum {
	NPT_NODE_EW = 1,      /* elementwise: op over 1..3 inputs, or CAST */
	NPT_NODE_REDUCE,
	NPT_NODE_ARGMAX,
	NPT_NODE_SOFTMAX,
	NPT_NODE_LAYERNORM,
	NPT_NODE_MATMUL,
	NPT_NODE_TAKE,        /* gather.c */
	NPT_NODE_LINEAR,      /* linear.c; op = npt_activation_t */
	NPT_NODE_ATTENTION,   /* attention.c; op = flags, eps = scale */
} npt_node_kind_t;

/* internal elementwise opcodes beyond npt_op_t */
enum { NPT_EW_CAST = NPT_OP_COUNT_, NPT_EW_COPY };

typedef struct npt_node {
	npt_node_kind_t kind;
	int op;               /* npt_op_t / NPT_EW_* / npt_reduce_op_t */
	int nin;
	npt_tensor_t *in[4];
	uint64_t axes;        /* reduce: bit i = reduce dim i of in[0] */
	int axis;
	int keepdims;
	double eps;
} npt_node_t;

struct npt_tensor {
	atomic_int refs;
	npt_dtype_t dtype;
	int ndim;
	int64_t offset;
	npt_buffer_t *buf;
	npt_node_t *node;
	int broadcast;        /* made by broadcast_to/expand: read-only (NumPy) */
	uint64_t mark;        /* evaluation epoch that fused this tensor (eval.c) */
	npt_tensor_t *lazy_prev, *lazy_next; /* live lazy tensors (eval.c) */
	const void *packed;   /* pack.c: this weight in the GEMM's layout (not owned) */
	void *packed_md;      /* its oneDNN memory descriptor (owned) */
	const float *packed_scales; /* int8 layouts: the N weight scales, else NULL */
	int packed_dt;        /* NPT_F32, NPT_BF16 or NPT_I8 when packed */
	int64_t shape[NPT_MAX_DIMS];
	int64_t strides[NPT_MAX_DIMS];
};

NPT_HIDDEN npt_status_t npt_tensor_new_lazy(npt_dtype_t dt, int ndim, const int64_t *shape,
					    npt_node_t *node, npt_tensor_t **out);
NPT_HIDDEN npt_status_t npt_tensor_new_view(npt_tensor_t *base, int ndim, const int64_t *shape,
					    const int64_t *strides, int64_t offset,
					    npt_tensor_t **out);
/* largest element count (and product of the nonzero dimensions) of a shape:
 * sizes in bytes of every dtype and offsets stay far from overflow */
#define NPT_MAX_NUMEL (INT64_MAX >> 4)
NPT_HIDDEN npt_status_t npt_check_shape(const char *op, int ndim, const int64_t *shape,
					int64_t *numel);
NPT_HIDDEN void npt_contig_strides(int ndim, const int64_t *shape, int64_t *strides);
NPT_HIDDEN int npt_is_contiguous(const npt_tensor_t *t);
NPT_HIDDEN int64_t npt_numel(int ndim, const int64_t *shape);
NPT_HIDDEN int npt_has_zero_stride(const npt_tensor_t *t);
NPT_HIDDEN npt_node_t *npt_node_new(npt_node_kind_t kind, int op);
NPT_HIDDEN void npt_node_free(npt_node_t *n, npt_tensor_t *owner);
NPT_HIDDEN char *npt_tensor_ptr(const npt_tensor_t *t); /* address of element 0 */
NPT_HIDDEN npt_status_t npt_broadcast_shapes(const char *op, int n, npt_tensor_t **ts,
					     int *ndim, int64_t *shape);
NPT_HIDDEN void npt_broadcast_strides(const npt_tensor_t *t, int ndim, const int64_t *shape,
				      int64_t *strides);
NPT_HIDDEN npt_status_t npt_normalize_axis(const char *op, int axis, int ndim, int *out);

/* ---- dtype.c ---- */
NPT_HIDDEN int npt_dtype_is_float(npt_dtype_t d);
NPT_HIDDEN int npt_dtype_is_int(npt_dtype_t d);
NPT_HIDDEN npt_dtype_t npt_float_for(npt_dtype_t d); /* exp/sqrt/... result type */
NPT_HIDDEN int npt_can_cast_same_kind(npt_dtype_t from, npt_dtype_t to);
/* register type: the C type kernels compute in (f16/bf16 -> f32) */
NPT_HIDDEN npt_dtype_t npt_rt(npt_dtype_t d);
NPT_HIDDEN uint16_t npt_f32_to_bf16(float f);
NPT_HIDDEN float npt_bf16_to_f32(uint16_t h);

/* ---- convert.c: typed copies, strides in elements ---- */
typedef void (*npt_conv_fn)(int64_t n, void *dst, int64_t ds, const void *src, int64_t ss);
NPT_HIDDEN npt_conv_fn npt_conv(npt_dtype_t from, npt_dtype_t to);

/* ---- kernels.c: elementwise loops over register types ---- */
/* binary: variant 0 = vector,vector; 1 = vector,scalar; 2 = scalar,vector */
typedef void (*npt_k2_fn)(int64_t n, void *o, const void *a, const void *b);
typedef void (*npt_k1_fn)(int64_t n, void *o, const void *a);
typedef void (*npt_k3_fn)(int64_t n, void *o, const void *c, int cs, const void *a, int as,
			  const void *b, int bs);
NPT_HIDDEN npt_k2_fn npt_kernel2(int op, npt_dtype_t rt, int variant);
NPT_HIDDEN npt_k1_fn npt_kernel1(int op, npt_dtype_t rt);
NPT_HIDDEN npt_k3_fn npt_kernel_where(npt_dtype_t rt);
NPT_HIDDEN void npt_round_f16(int64_t n, float *o, const float *a);
NPT_HIDDEN void npt_round_bf16(int64_t n, float *o, const float *a);
/* returns nonzero if any b[i] < 0 (integer pow check) */
NPT_HIDDEN int npt_any_negative(npt_dtype_t rt, int64_t n, const void *b);

/* ---- stream.c: non-temporal stores for outputs larger than the caches ---- */
#define NPT_STREAM_MIN_BYTES ((size_t)16 << 20)
NPT_HIDDEN void npt_stream_store(void *dst, const void *src, size_t bytes);
NPT_HIDDEN void npt_stream_fence(void);
/* o = a op b (f32 add/sub/mul/div) with streaming stores; 0 if op is not one */
NPT_HIDDEN int npt_stream_binary_f32(int op, int variant, int64_t n, float *o, const float *a,
				     const float *b);

/* ---- threads.c: thread pool ---- */
typedef void (*npt_task_fn)(void *arg, int64_t begin, int64_t end, int tid);
/* Run fn over [0, n) split in chunks of at least `grain` items (at most one
 * per thread). Results must not depend on which thread runs which range. */
NPT_HIDDEN void npt_parallel_for(int64_t n, int64_t grain, npt_task_fn fn, void *arg);
/* Run fn on each item of [0, n), handed out one at a time to free threads. */
NPT_HIDDEN void npt_parallel_items(int64_t n, npt_task_fn fn, void *arg);
NPT_HIDDEN int npt_pool_threads(void);

/* ---- iter.c: iteration spaces over several strided operands ---- */
#define NPT_MAX_OPERANDS 40
typedef struct {
	int ndim;
	int nop;
	int64_t shape[NPT_MAX_DIMS];
	int64_t strides[NPT_MAX_OPERANDS][NPT_MAX_DIMS];
} npt_space_t;
/* drop size-1 dims, merge adjacent dims that are contiguous for all operands;
 * with sort != 0, first order dims by decreasing |stride| of operand `key`
 * (for reductions; elementwise keeps C order of the output). */
NPT_HIDDEN void npt_space_simplify(npt_space_t *sp, int sort_key);

/* ---- ewise.c: fused elementwise programs ---- */
#define NPT_PROG_MAX_LEAVES 32
#define NPT_PROG_MAX_INSTR 96
#define NPT_BLOCK 1024
typedef struct {
	unsigned char op, rt;
	short dst, a, b, c;
} npt_instr_t;
typedef struct {
	int nleaf, ninstr, nreg, out_reg, nslot, block;
	short slot[NPT_PROG_MAX_LEAVES + NPT_PROG_MAX_INSTR]; /* buffer slot of each register */
	npt_tensor_t *leaf[NPT_PROG_MAX_LEAVES]; /* borrowed from the graph */
	short leaf_reg[NPT_PROG_MAX_LEAVES];
	char leaf_dead[NPT_PROG_MAX_LEAVES]; /* dies with this evaluation's root */
	npt_dtype_t leaf_rt[NPT_PROG_MAX_LEAVES];
	npt_dtype_t reg_rt[NPT_PROG_MAX_LEAVES + NPT_PROG_MAX_INSTR];
	npt_dtype_t out_dtype;  /* logical dtype of the program result */
	int has_int_pow;
	npt_instr_t ins[NPT_PROG_MAX_INSTR];
} npt_prog_t;
/* per-thread block state */
typedef struct npt_block_ctx npt_block_ctx_t;
NPT_HIDDEN npt_block_ctx_t *npt_block_ctx_get(const npt_prog_t *p);
/* free the calling thread's cached block and run buffers (worker exit) */
NPT_HIDDEN void npt_block_ctx_release(void);
NPT_HIDDEN void npt_reduce_tls_release(void);
/* Compute n program values at the block whose leaf element pointers are
 * ptr[i] with inner strides st[i]. Returns a pointer to values of register
 * type prog->reg_rt[out_reg]; *scalar set when all n values are the same
 * single element. If direct != NULL and the result type matches, the last
 * instruction writes into direct (returned); with nt it does so only when it
 * can use streaming stores (f32 add/sub/mul/div). NULL on a value error. */
NPT_HIDDEN const void *npt_block_run(npt_block_ctx_t *bc, const npt_prog_t *p, int64_t n,
				     char *const *ptr, const int64_t *st, void *direct,
				     int nt, int *scalar);
NPT_HIDDEN void npt_prog_release(npt_prog_t *p);
/* a program that just reads one tensor */
NPT_HIDDEN void npt_prog_single(npt_prog_t *p, npt_tensor_t *t);
/* space over `ndim/shape` with operand i = leaf i's broadcast strides */
NPT_HIDDEN void npt_prog_space(const npt_prog_t *p, int ndim, const int64_t *shape,
			       npt_space_t *sp);
NPT_HIDDEN npt_status_t npt_value_error(void);

/* ---- eval.c ---- */
NPT_HIDDEN npt_status_t npt_eval_locked(npt_tensor_t *t);
/* build the fused program rooted at lazy EW tensor root; evaluates the
 * inputs that cannot be fused first; marks fused tensors with `epoch` */
NPT_HIDDEN npt_status_t npt_build_prog(npt_tensor_t *root, npt_prog_t *p, uint64_t epoch);
NPT_HIDDEN void npt_eval_lock(void);
NPT_HIDDEN void npt_eval_unlock(void);
NPT_HIDDEN void npt_lazy_register(npt_tensor_t *t);
NPT_HIDDEN void npt_lazy_unregister(npt_tensor_t *t);
NPT_HIDDEN uint64_t npt_eval_epoch(void);
/* do the memory ranges of two materialised tensors' buffers overlap? */
NPT_HIDDEN int npt_buffers_overlap(const npt_tensor_t *a, const npt_tensor_t *b);

/* ---- ewise.c driver: compute program p (root shape ndim/shape) into out ---- */
NPT_HIDDEN npt_status_t npt_run_prog(const npt_prog_t *p, const char *opname, int ndim,
				     const int64_t *shape, npt_tensor_t *out);
NPT_HIDDEN npt_status_t npt_binary_types(int op, npt_dtype_t a, npt_dtype_t b,
					 npt_dtype_t *compute, npt_dtype_t *result);
NPT_HIDDEN npt_status_t npt_unary_types(int op, npt_dtype_t a, npt_dtype_t *compute,
					npt_dtype_t *result);

/* ---- reduce.c / nn.c / matmul.c: boundary kernels ----
 * t is the lazy node's tensor (inputs materialised); dst is a materialised,
 * C-contiguous tensor of t's shape and dtype that does not overlap the inputs. */
NPT_HIDDEN npt_status_t npt_run_reduce(npt_tensor_t *t, npt_tensor_t *dst);
NPT_HIDDEN npt_status_t npt_run_argmax(npt_tensor_t *t, npt_tensor_t *dst);
NPT_HIDDEN npt_status_t npt_run_softmax(npt_tensor_t *t, npt_tensor_t *dst);
NPT_HIDDEN npt_status_t npt_run_layernorm(npt_tensor_t *t, npt_tensor_t *dst);
NPT_HIDDEN npt_status_t npt_run_matmul(npt_tensor_t *t, npt_tensor_t *dst);
NPT_HIDDEN void npt_blas_set_threads(int n);

/* ---- gather.c / linear.c / act_vec.c: model building blocks ---- */
NPT_HIDDEN npt_status_t npt_run_take(npt_tensor_t *t, npt_tensor_t *dst);
NPT_HIDDEN npt_status_t npt_run_linear(npt_tensor_t *t, npt_tensor_t *dst);
/* y[i] = act(y[i] + bias[i]) for i < n (bias may be NULL), f32, vectorised */
NPT_HIDDEN void npt_act_rows_f32(int act, int64_t n, float *y, const float *bias);
/* x[i] = exp(x[i] - m) for i < n, f32, vectorised; returns the sum */
NPT_HIDDEN float npt_exp_sum_f32(int64_t n, float *x, float m);
NPT_HIDDEN npt_status_t npt_run_attention(npt_tensor_t *t, npt_tensor_t *dst);

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
} npt_gemm_t;

NPT_HIDDEN npt_status_t npt_gemm_f32(const npt_gemm_t *g);
/* the same on the calling thread alone, for kernels running in the pool (thread @tid):
 * oneDNN on one OpenMP thread, else cblas_sgemm (the caller keeps OpenBLAS on one thread) */
NPT_HIDDEN npt_status_t npt_gemm_f32_here(const npt_gemm_t *g, int tid);
/* quant.c: q = round(x / scale[m]) per row, scale[m] = max |x[m, :]| / 127 */
NPT_HIDDEN void npt_quantize_rows_s8(const float *x, int64_t M, int64_t K, int64_t ldx,
				     int8_t *q, float *scale);
/* gemm.c's oneDNN table and engine for pack.c; NULL when the GEMM is on OpenBLAS */
NPT_HIDDEN const void *npt_gemm_onednn(void **engine);
/* 1 when the GEMM's self-check found oneDNN's int8 (@s8) or bf16 product wrong here */
NPT_HIDDEN int npt_gemm_lowp_wrong(int s8);
/* pack.c: bytes from the start of a packed weight to its column @n0 (a multiple
 * of 64), and the descriptor of columns [n0, n0 + n) into *md (a dnnl_memory_desc_t) */
NPT_HIDDEN int64_t npt_pack_col_offset(const void *md, int64_t n0);
NPT_HIDDEN void npt_pack_slice_md(const void *md, int64_t n, void *out);

#endif
