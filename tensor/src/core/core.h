/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * core.h - the bottom layer of nptensor: status and log, settings, dtypes and
 * NumPy's result types, refcounted buffers, and the tensor object itself
 * (handles, lazy nodes, the list of live lazy tensors, shape and stride
 * arithmetic). Nothing here evaluates, runs a kernel or starts a thread.
 *
 * Layers, each calling only the ones below it (internal.h has the picture):
 * graph building (the files of src/) -> scheduler (sched/) -> kernels (kernels/) ->
 * backend (backend/: GEMM, thread pool) -> core (core/).
 *
 * Contracts: strides and offsets are in elements; a lazy tensor has
 * node != NULL and buf == NULL and C-contiguous strides; a materialised one
 * has buf != NULL and node == NULL. Only the scheduler turns the first into
 * the second, under the evaluation lock.
 */
#ifndef NPT_CORE_H
#define NPT_CORE_H

#define NPT_BUILDING_LIBRARY 1
#include "nptensor.h"

#include <stdatomic.h>
#include <stdarg.h>
#include <pthread.h>
#include <string.h>

#define NPT_HIDDEN __attribute__((visibility("hidden")))
/* Kernels are compiled twice (AVX2+FMA+F16C and baseline) and picked at load. */
#define NPT_SIMD __attribute__((target_clones("arch=x86-64-v3", "default")))
/* ... and those that are memory-bound streams at GEMM speed a third time, for
 * AVX-512 (x86-64-v4): a linear layer's input conversions */
#define NPT_SIMD512 __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

/* ---- status.c ---- */
NPT_HIDDEN npt_status_t npt_fail(npt_status_t s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
NPT_HIDDEN void npt_log(npt_log_level_t lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* "(2,3)" into buf; returns buf */
NPT_HIDDEN char *npt_shape_str(char *buf, size_t len, int ndim, const int64_t *shape);
#define NPT_SHAPE_STRLEN 400

/* ---- isa.c: which instruction set the hand-written vector kernels may use ---- */
enum {
	NPT_ISA_C,		/* portable C */
	NPT_ISA_AVX2,		/* AVX2 with FMA and F16C */
	NPT_ISA_AVX512,		/* AVX-512 (each kernel checks the extensions it needs) */
};
/* The highest level those kernels may use: $NPT_KERNEL_ISA ("c", "avx2",
 * "avx512"; read once per process) caps it, default no cap. Thread-safe. */
NPT_HIDDEN int npt_isa_cap(void);
/* npt_isa_cap() >= @level and the CPU has every feature of @features
 * ("avx512f,avx512bw": names as __builtin_cpu_supports takes them) */
NPT_HIDDEN int npt_isa_has(int level, const char *features);

/* ---- config.c ---- */
NPT_HIDDEN npt_expand_mode_t npt_cfg_expand_mode(void);
NPT_HIDDEN size_t npt_cfg_warn_bytes(void);
#define NPT_REPRO_DEFAULT NPT_REPRO_INDEPENDENT
NPT_HIDDEN void npt_note_materialize(const char *op, int ndim_from, const int64_t *from,
				     int ndim_to, const int64_t *to, size_t bytes, const char *why);

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

/* ---- tensor.c: tensors and lazy nodes ---- */
typedef enum {
	NPT_NODE_EW = 1,      /* elementwise: op over 1..3 inputs, or CAST */
	NPT_NODE_REDUCE,
	NPT_NODE_ARGMAX,
	NPT_NODE_SOFTMAX,
	NPT_NODE_LAYERNORM,
	NPT_NODE_MATMUL,
	NPT_NODE_TAKE,        /* gather */
	NPT_NODE_LINEAR,      /* op = npt_activation_t */
	NPT_NODE_ATTENTION,   /* op = flags, eps = scale */
	NPT_NODE_KIND_COUNT_
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

/* packed_dt of a float32 weight kept as two bfloat16 terms (pack.c: bf16x3) */
#define NPT_PACKED_BF16X3 0x100

struct npt_tensor {
	atomic_int refs;
	npt_dtype_t dtype;
	int ndim;
	int64_t offset;
	npt_buffer_t *buf;
	npt_node_t *node;
	int broadcast;        /* made by broadcast_to/expand: read-only (NumPy) */
	uint64_t mark;        /* evaluation epoch that fused this tensor (sched/) */
	uint64_t walk;        /* sched/eval.c: the depth walk that last reached this tensor */
	int64_t height;       /* its lazy nodes below, longest path, in that walk */
	npt_tensor_t *lazy_prev, *lazy_next; /* live lazy tensors (tensor.c) */
	const void *packed;   /* pack.c: this weight in the GEMM's layout (not owned) */
	void *packed_md;      /* its oneDNN memory descriptor (owned) */
	const float *packed_scales; /* int8 layouts: the N weight scales, else NULL */
	const void *packed_lo; /* bf16x3 layouts: the low bf16 halves, else NULL */
	int packed_dt;        /* NPT_F32, NPT_BF16, NPT_I8 or NPT_PACKED_BF16X3 when packed */
	int packed_only;      /* npt_tensor_from_packed: no plain elements to read */
	int64_t shape[NPT_MAX_DIMS];
	int64_t strides[NPT_MAX_DIMS];
};

/* npt_tensor_from_data, its errors in the words of @op (the public call) */
NPT_HIDDEN npt_status_t npt_tensor_wrap(const char *op, void *data, npt_dtype_t dt, int ndim,
					const int64_t *shape, const int64_t *strides,
					unsigned flags, void (*release)(void *), void *release_arg,
					npt_tensor_t **out);
NPT_HIDDEN npt_status_t npt_tensor_new_lazy(npt_dtype_t dt, int ndim, const int64_t *shape,
					    npt_node_t *node, npt_tensor_t **out);
NPT_HIDDEN npt_node_t *npt_node_new(npt_node_kind_t kind, int op);
NPT_HIDDEN void npt_node_free(npt_node_t *n);
/* lazy @t, evaluated into its buffer: its node (and the node's hold on its
 * inputs) goes, it leaves the list of live lazy tensors */
NPT_HIDDEN void npt_tensor_settle(npt_tensor_t *t);
/* NPT_E_UNSUPPORTED for @op reading the elements of @t, a weight that
 * exists only in its packed layout (npt_tensor_from_packed) */
NPT_HIDDEN npt_status_t npt_plain_refused(const char *op, const npt_tensor_t *t);
/* the live lazy tensors, not fused in evaluation @epoch (0: none), one of
 * whose node's inputs reads memory overlapping @w's buffer; retained, or NULL */
NPT_HIDDEN npt_tensor_t *npt_lazy_reader_of(const npt_tensor_t *w, uint64_t epoch);

/* ---- shape.c: shapes, strides and addresses (arithmetic only) ---- */
/* largest element count (and product of the nonzero dimensions) of a shape:
 * sizes in bytes of every dtype and offsets stay far from overflow */
#define NPT_MAX_NUMEL (INT64_MAX >> 4)
NPT_HIDDEN npt_status_t npt_check_shape(const char *op, int ndim, const int64_t *shape,
					int64_t *numel);
NPT_HIDDEN void npt_contig_strides(int ndim, const int64_t *shape, int64_t *strides);
NPT_HIDDEN int npt_is_contiguous(const npt_tensor_t *t);
NPT_HIDDEN int64_t npt_numel(int ndim, const int64_t *shape);
NPT_HIDDEN int npt_has_zero_stride(const npt_tensor_t *t);
NPT_HIDDEN char *npt_tensor_ptr(const npt_tensor_t *t); /* address of element 0 */
NPT_HIDDEN npt_status_t npt_broadcast_shapes(const char *op, int n, npt_tensor_t **ts,
					     int *ndim, int64_t *shape);
NPT_HIDDEN void npt_broadcast_strides(const npt_tensor_t *t, int ndim, const int64_t *shape,
				      int64_t *strides);
NPT_HIDDEN npt_status_t npt_normalize_axis(const char *op, int axis, int ndim, int *out);
/* do the memory ranges of two materialised tensors' buffers overlap? */
NPT_HIDDEN int npt_buffers_overlap(const npt_tensor_t *a, const npt_tensor_t *b);

/* ---- dtype.c ---- */
NPT_HIDDEN int npt_dtype_is_float(npt_dtype_t d);
NPT_HIDDEN int npt_dtype_is_int(npt_dtype_t d);
NPT_HIDDEN npt_dtype_t npt_float_for(npt_dtype_t d); /* exp/sqrt/... result type */
NPT_HIDDEN int npt_can_cast_same_kind(npt_dtype_t from, npt_dtype_t to);
/* register type: the C type kernels compute in (f16/bf16 -> f32) */
NPT_HIDDEN npt_dtype_t npt_rt(npt_dtype_t d);
NPT_HIDDEN uint16_t npt_f32_to_bf16(float f);
NPT_HIDDEN float npt_bf16_to_f32(uint16_t h);

/*
 * x = hi + lo as two bfloat16 terms (bf16x3, pack.c): hi = x rounded to
 * nearest even, lo = x - hi (exact in float32) rounded the same way; a NaN
 * or an infinity goes to hi (a NaN quiet, its sign kept), lo = 0. Inline,
 * with the bits only, so that loops over it vectorise.
 */
static inline void npt_bf16_split(float x, uint16_t *hi, uint16_t *lo)
{
	uint32_t u, r;
	float h, rest;

	memcpy(&u, &x, sizeof(u));
	if ((u & 0x7fffffffu) >= 0x7f800000u) {
		*hi = (u & 0x7fffffffu) > 0x7f800000u ? (uint16_t)((u >> 16) | 0x40) :
			(uint16_t)(u >> 16);
		*lo = 0;
		return;
	}
	*hi = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
	r = (uint32_t)*hi << 16;
	memcpy(&h, &r, sizeof(h));
	rest = x - h;
	memcpy(&r, &rest, sizeof(r));
	*lo = (uint16_t)((r + 0x7fffu + ((r >> 16) & 1u)) >> 16);
}

/* ---- promote.c: the elementwise ops' names and result types (NumPy's rules) ---- */
/* a reduction's name (npt_reduce_op_t), as its errors say it: "sum", "max", ... */
NPT_HIDDEN const char *npt_reduce_name(int op);
NPT_HIDDEN npt_status_t npt_binary_types(int op, npt_dtype_t a, npt_dtype_t b,
					 npt_dtype_t *compute, npt_dtype_t *result);
NPT_HIDDEN npt_status_t npt_unary_types(int op, npt_dtype_t a, npt_dtype_t *compute,
					npt_dtype_t *result);

#endif
