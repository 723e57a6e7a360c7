/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * nptensor.h - strided tensor views with NumPy broadcasting, lazy fused
 * evaluation and buffer reuse (npushm's "broadcast math" library).
 *
 * Tutorial
 * --------
 *   npt_tensor_t *x, *bias, *y, *z;
 *   int64_t xs[3] = {32, 128, 768}, bs[1] = {768};
 *   npt_tensor_from_data(act, NPT_F32, 3, xs, NULL, 0, NULL, NULL, &x);  // borrow, no copy
 *   npt_tensor_from_data(w, NPT_F32, 1, bs, NULL, NPT_BORROW_READONLY, NULL, NULL, &bias);
 *   npt_add(x, bias, &y);            // lazy: builds a graph node, checks shapes now
 *   npt_unary(NPT_OP_GELU, y, &z);   // still lazy; (x + bias) and gelu fuse into one pass
 *   if (npt_tensor_eval(z) != NPT_OK)
 *           fprintf(stderr, "%s\n", npt_last_error());
 *   float *out; npt_tensor_data(z, (void **)&out);   // 32*128*768 results, C order
 *   npt_tensor_free(y); npt_tensor_free(z); npt_tensor_free(x); npt_tensor_free(bias);
 *
 * Model
 * -----
 * A tensor is a view: dtype, shape (rank 0..NPT_MAX_DIMS), strides counted in
 * ELEMENTS (not bytes; negative and zero allowed), and an element offset into
 * a reference-counted buffer. The buffer is owned (allocated by the library,
 * from a pool that recycles freed allocations) or borrowed (any user memory:
 * the library never frees it and calls the caller's release callback when the
 * last view of it goes away). A borrowed buffer may be read-only (e.g. shared
 * model weights mapped PROT_READ): every write into it fails with
 * NPT_E_READONLY. Views with a stride-0 dimension of size > 1 (broadcast_to,
 * expand) can never be written (NPT_E_READONLY): NumPy's output rule.
 *
 * Ops (npt_binary, npt_unary, npt_where, npt_reduce, npt_matmul, ...) return a
 * NEW lazy tensor: shape, dtype and every static error (broadcasting, axes,
 * dtype support, a result of more than 2^59 - 1 elements: NPT_E_OVERFLOW, as
 * stride-0 operands can make) are checked when the op is built; the values
 * are computed by npt_tensor_eval() (or anything that needs them:
 * npt_tensor_data, views of a lazy tensor, npt_tensor_eval_into). Evaluation fuses maximal chains of
 * elementwise ops (broadcasts folded into indexing) into one blocked pass and
 * never allocates an intermediate for a fused chain; reductions, matmul,
 * softmax and layernorm are fusion boundaries. Lazy ops read their inputs at
 * evaluation time; writing into a buffer (npt_tensor_eval_into, in-place ops)
 * first evaluates every pending lazy tensor that reads that buffer, so results
 * are always what eager NumPy would give.
 *
 * Semantics follow NumPy 1.24 (broadcasting, type promotion, NaN propagation
 * of maximum/minimum, integer wrap-around, errors) for the dtypes both have;
 * see docs/tensor.md for the exact rules, including bf16 and where NumPy's
 * result type (i16, u64) does not exist here.
 *
 * Ownership
 * ---------
 * Every function that returns a tensor through `npt_tensor_t **out` gives the
 * caller one reference; drop it with npt_tensor_free() (accepts NULL). On
 * failure *out is set to NULL (when out itself is not NULL) and nothing is
 * kept. Arrays passed with a count (shape, strides, perm, axes) are read
 * for that many entries and not kept; a shape may be NULL only for rank 0
 * (npt_reduce's axes: NULL means all). A view holds a reference to its
 * buffer, a lazy tensor to its inputs, so inputs may be freed right after
 * building an op. Pointers returned by npt_tensor_shape() and friends live
 * as long as the tensor. npt_last_error() returns a
 * thread-local string valid until the calling thread's next failing call.
 *
 * Thread safety
 * -------------
 * All functions may be called from any thread. Tensors are reference counted
 * atomically and may be shared between threads; building ops on shared inputs
 * is safe. Evaluation is serialised by a library-wide lock (the internal
 * thread pool parallelises each evaluation). Writing into a buffer while
 * another thread reads it is a data race, as with any array library.
 * Configuration setters are global and atomic. Results never depend on how
 * the pool's threads were scheduled: every float reduction is bitwise
 * reproducible (npt_set_repro_mode).
 */
#ifndef NPTENSOR_H
#define NPTENSOR_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(NPT_BUILDING_LIBRARY)
#define NPT_API __attribute__((visibility("default")))
#else
#define NPT_API
#endif

/** Largest supported rank (as NumPy 1.24). */
#define NPT_MAX_DIMS 32

/** Status of every fallible call. npt_last_error() has the details. */
typedef enum npt_status {
	NPT_OK = 0,
	NPT_E_INVAL,      /**< bad argument (NULL, bad flag, bad axis list) */
	NPT_E_SHAPE,      /**< shapes do not broadcast / do not match */
	NPT_E_RANK,       /**< rank above NPT_MAX_DIMS */
	NPT_E_OVERFLOW,   /**< size in elements or bytes overflows */
	NPT_E_DTYPE,      /**< dtype not supported by the op, or casting rule */
	NPT_E_READONLY,   /**< write into a read-only or broadcast view */
	NPT_E_AXIS,       /**< axis out of range or repeated */
	NPT_E_EMPTY,      /**< max/min/argmax of an empty reduction */
	NPT_E_VALUE,      /**< a value is not allowed (integer ** negative) */
	NPT_E_NOMEM,      /**< out of memory */
	NPT_E_WOULD_COPY, /**< VIEW expansion mode forbids a needed copy */
	NPT_E_UNSUPPORTED,/**< feature not available (e.g. DLPack device) */
} npt_status_t;

NPT_API const char *npt_strerror(npt_status_t s);
/** Message of the calling thread's last failure: names the op, the shapes
 *  and what to do. Never NULL. */
NPT_API const char *npt_last_error(void);

typedef enum npt_dtype {
	NPT_BOOL = 0, NPT_I8, NPT_U8, NPT_I32, NPT_I64,
	NPT_F16, NPT_BF16, NPT_F32, NPT_F64,
	NPT_NDTYPES
} npt_dtype_t;

NPT_API size_t npt_dtype_size(npt_dtype_t dt);
NPT_API const char *npt_dtype_name(npt_dtype_t dt);
/** Result dtype of a binary arithmetic op on a and b (docs/tensor.md). */
NPT_API npt_status_t npt_promote_types(npt_dtype_t a, npt_dtype_t b, npt_dtype_t *out);

typedef struct npt_tensor npt_tensor_t;

/* ---- creation ---------------------------------------------------------- */

/** Flags for npt_tensor_from_data. */
#define NPT_BORROW_READONLY 0x1u

/** Uninitialised contiguous tensor from the buffer pool. A shape is refused
 *  (NPT_E_OVERFLOW) when its nonzero dimensions multiply to more than 2^59 - 1,
 *  even if another dimension is 0 (NumPy refuses np.empty((0, 2**62, 4))). */
NPT_API npt_status_t npt_tensor_empty(npt_dtype_t dt, int ndim, const int64_t *shape,
				      npt_tensor_t **out);
NPT_API npt_status_t npt_tensor_zeros(npt_dtype_t dt, int ndim, const int64_t *shape,
				      npt_tensor_t **out);
/**
 * Wrap user memory without copying.
 * @param [in] data      address of element (0,...,0); borrowed, never freed here
 * @param [in] strides   element strides, NULL for C-contiguous
 * @param [in] flags     0 or NPT_BORROW_READONLY
 * @param [in] release   called once with release_arg when the last view of
 *                       the buffer is freed (may be NULL)
 * The memory must stay valid until release is called (or until every view
 * is freed when release is NULL), and must hold every element the shape and
 * strides reach (which cannot be checked here); strides whose reach
 * overflows the address range are NPT_E_OVERFLOW. On failure release is
 * not called.
 */
NPT_API npt_status_t npt_tensor_from_data(void *data, npt_dtype_t dt, int ndim,
					  const int64_t *shape, const int64_t *strides,
					  unsigned flags, void (*release)(void *),
					  void *release_arg, npt_tensor_t **out);
/** Add a reference. Returns t. */
NPT_API npt_tensor_t *npt_tensor_retain(npt_tensor_t *t);
/** Drop a reference; frees at zero. Accepts NULL. */
NPT_API void npt_tensor_free(npt_tensor_t *t);

/* ---- introspection (valid for lazy tensors too) ---------------------------
 * A NULL tensor gives dtype NPT_NDTYPES, ndim -1, shape and strides NULL,
 * offset and numel 0, and false. */

NPT_API npt_dtype_t npt_tensor_dtype(const npt_tensor_t *t);
NPT_API int npt_tensor_ndim(const npt_tensor_t *t);
NPT_API const int64_t *npt_tensor_shape(const npt_tensor_t *t);
/** Element strides; a lazy tensor reports the C-contiguous strides it will have. */
NPT_API const int64_t *npt_tensor_strides(const npt_tensor_t *t);
NPT_API int64_t npt_tensor_offset(const npt_tensor_t *t);
NPT_API int64_t npt_tensor_numel(const npt_tensor_t *t);
NPT_API bool npt_tensor_is_lazy(const npt_tensor_t *t);
NPT_API bool npt_tensor_is_writable(const npt_tensor_t *t);
/** Same buffer? (views of one allocation) */
NPT_API bool npt_tensor_shares_buffer(const npt_tensor_t *a, const npt_tensor_t *b);
/** Evaluates if lazy, then gives the address of element (0,...,0). */
NPT_API npt_status_t npt_tensor_data(npt_tensor_t *t, void **ptr);

/* ---- views (never copy, except reshape where NumPy copies too) ------------ */

/** NumPy reshape; one dim may be -1. A view when strides allow, else a
 *  contiguous copy (reported when above the materialisation threshold;
 *  NPT_E_WOULD_COPY in NPT_EXPAND_VIEW mode). */
NPT_API npt_status_t npt_tensor_reshape(npt_tensor_t *t, int ndim, const int64_t *shape,
					npt_tensor_t **out);
NPT_API npt_status_t npt_tensor_permute(npt_tensor_t *t, const int *perm, npt_tensor_t **out);
NPT_API npt_status_t npt_tensor_transpose(npt_tensor_t *t, int axis0, int axis1,
					  npt_tensor_t **out);
/** Remove size-1 dim `axis`, or all size-1 dims when axis == NPT_AXIS_ALL.
 *  A 0-d tensor accepts axis 0 or -1 (NumPy). */
NPT_API npt_status_t npt_tensor_squeeze(npt_tensor_t *t, int axis, npt_tensor_t **out);
NPT_API npt_status_t npt_tensor_unsqueeze(npt_tensor_t *t, int axis, npt_tensor_t **out);
/** Python slice semantics on one axis (start/stop clamped, negative counts
 *  from the end, step != 0; any int64 is accepted, INT64_MIN as a step is
 *  -INT64_MAX as Python clamps it). Use NPT_SLICE_END for an open bound. */
#define NPT_SLICE_END INT64_MIN
NPT_API npt_status_t npt_tensor_slice(npt_tensor_t *t, int axis, int64_t start, int64_t stop,
				      int64_t step, npt_tensor_t **out);
/** Stride-0 read-only view with NumPy broadcasting rules; copies nothing. */
NPT_API npt_status_t npt_tensor_broadcast_to(npt_tensor_t *t, int ndim, const int64_t *shape,
					     npt_tensor_t **out);
/** As broadcast_to, with -1 meaning "keep this dim" (torch's expand). */
NPT_API npt_status_t npt_tensor_expand(npt_tensor_t *t, int ndim, const int64_t *shape,
				       npt_tensor_t **out);
/** Contiguous tensor with t's values: t itself (new reference) if already
 *  C-contiguous, else a lazy copy. */
NPT_API npt_status_t npt_tensor_contiguous(npt_tensor_t *t, npt_tensor_t **out);
/** Lazy elementwise cast (NumPy astype, unsafe casting). */
NPT_API npt_status_t npt_tensor_cast(npt_tensor_t *t, npt_dtype_t dt, npt_tensor_t **out);

/* ---- ops (all return lazy tensors) ---------------------------------------- */

typedef enum npt_op {
	/* binary */
	NPT_OP_ADD, NPT_OP_SUB, NPT_OP_MUL, NPT_OP_DIV, NPT_OP_POW,
	NPT_OP_MAXIMUM, NPT_OP_MINIMUM,
	NPT_OP_EQ, NPT_OP_NE, NPT_OP_LT, NPT_OP_LE, NPT_OP_GT, NPT_OP_GE,
	/* unary */
	NPT_OP_NEG, NPT_OP_ABS, NPT_OP_EXP, NPT_OP_LOG, NPT_OP_SQRT, NPT_OP_RSQRT,
	NPT_OP_TANH, NPT_OP_SIGMOID, NPT_OP_RELU, NPT_OP_GELU, NPT_OP_ERF,
	/* ternary */
	NPT_OP_WHERE,
	NPT_OP_COUNT_
} npt_op_t;

NPT_API const char *npt_op_name(npt_op_t op);

NPT_API npt_status_t npt_binary(npt_op_t op, npt_tensor_t *a, npt_tensor_t *b,
				npt_tensor_t **out);
NPT_API npt_status_t npt_unary(npt_op_t op, npt_tensor_t *a, npt_tensor_t **out);
NPT_API npt_status_t npt_where(npt_tensor_t *cond, npt_tensor_t *a, npt_tensor_t *b,
			       npt_tensor_t **out);
NPT_API npt_status_t npt_add(npt_tensor_t *a, npt_tensor_t *b, npt_tensor_t **out);
NPT_API npt_status_t npt_sub(npt_tensor_t *a, npt_tensor_t *b, npt_tensor_t **out);
NPT_API npt_status_t npt_mul(npt_tensor_t *a, npt_tensor_t *b, npt_tensor_t **out);
NPT_API npt_status_t npt_div(npt_tensor_t *a, npt_tensor_t *b, npt_tensor_t **out);

typedef enum npt_reduce_op {
	NPT_RED_SUM, NPT_RED_PROD, NPT_RED_MEAN, NPT_RED_MAX, NPT_RED_MIN
} npt_reduce_op_t;

#define NPT_AXIS_ALL INT32_MIN

/** Reduce over `naxes` axes (negative count from the end); axes == NULL or
 *  naxes < 0 reduces over all axes, naxes == 0 over none. As NumPy 1.24, a
 *  0-d tensor accepts one axis 0 or -1 (naxes == 1) for sum, prod, max and
 *  min, not for mean. Float results are bitwise reproducible (see
 *  npt_set_repro_mode). */
NPT_API npt_status_t npt_reduce(npt_reduce_op_t op, npt_tensor_t *t, int naxes,
				const int *axes, bool keepdims, npt_tensor_t **out);
/** Index (i64) of the first maximum along axis, or of the C-order flattened
 *  tensor when axis == NPT_AXIS_ALL. NaN counts as the maximum. A 0-d tensor
 *  accepts axis 0 or -1 (result 0, as NumPy). */
NPT_API npt_status_t npt_argmax(npt_tensor_t *t, int axis, bool keepdims, npt_tensor_t **out);
/** Sum t down to `shape` (which must broadcast to t's shape): the gradient
 *  of a broadcast. */
NPT_API npt_status_t npt_sum_to_shape(npt_tensor_t *t, int ndim, const int64_t *shape,
				      npt_tensor_t **out);
/** exp(x - max) / sum(exp(x - max)) along axis; floating dtypes only. A 0-d
 *  tensor accepts axis 0 or -1 (one row of one element). */
NPT_API npt_status_t npt_softmax(npt_tensor_t *t, int axis, npt_tensor_t **out);
/** (x - mean) / sqrt(var + eps) along axis (biased variance), then * weight
 *  + bias when given (NULL allowed; they broadcast against x). */
NPT_API npt_status_t npt_layernorm(npt_tensor_t *t, int axis, npt_tensor_t *weight,
				   npt_tensor_t *bias, double eps, npt_tensor_t **out);
/** NumPy matmul (1-D promotion, batch broadcasting); f32/f64 on OpenBLAS. */
NPT_API npt_status_t npt_matmul(npt_tensor_t *a, npt_tensor_t *b, npt_tensor_t **out);

/* ---- model building blocks (lazy; fusion boundaries) ---------------------- */

/**
 * NumPy take(a, indices, axis) with mode='raise' (an embedding lookup:
 * npt_take(table, token_ids, 0, &rows)). Result shape a.shape[:axis] +
 * indices.shape + a.shape[axis+1:], dtype of a. indices: any integer dtype
 * (not bool or floating). Negative indices count from the end; an index
 * outside [-n, n) fails the EVALUATION with NPT_E_VALUE ("take: index 7 is
 * out of bounds for axis 0 with size 5"), before anything is written. a is
 * read in place through its strides (a read-only shared table is never
 * copied); only the picked slices are written.
 */
NPT_API npt_status_t npt_take(npt_tensor_t *a, npt_tensor_t *indices, int axis,
			      npt_tensor_t **out);

typedef enum npt_activation {
	NPT_ACT_NONE = 0,
	NPT_ACT_GELU,   /**< 0.5 x (1 + erf(x / sqrt 2)), as NPT_OP_GELU */
	NPT_ACT_TANH,
	NPT_ACT_RELU,
} npt_activation_t;

/**
 * torch.nn.functional.linear with a fused activation: act(x @ weight^T +
 * bias). x [..., in_features], weight [out_features, in_features] (the
 * layout models store), bias [out_features] or NULL; result [...,
 * out_features]; float32 only. Weight views are read in place whenever one
 * of their strides is 1 (a read-only shared weight, a row slice or a column
 * slice of one: no copy); x's leading dims are read in place when they
 * collapse into one row stride (contiguous x, or a row view such as
 * hidden[:, 0, :]). Other operands are copied first, reported as matmul's
 * are (NPT_E_WOULD_COPY in NPT_EXPAND_VIEW mode). The bias and activation
 * are applied right after the GEMM, while the output is in cache; where the
 * CPU has AVX2 or AVX-512, GELU uses the library's vector erf (within 3.2e-7
 * of erf) and tanh glibc's vector tanhf (within 4 ulp), so they may differ
 * from NPT_OP_GELU/NPT_OP_TANH in the last bits. ReLU keeps NaN.
 */
NPT_API npt_status_t npt_linear(npt_tensor_t *x, npt_tensor_t *weight, npt_tensor_t *bias,
				npt_activation_t act, npt_tensor_t **out);

/** npt_attention flag: the result is [..., Sq, heads, dv] (see below). */
#define NPT_ATTN_HEADS_LAST 0x1u

/**
 * Scaled dot-product attention per batch entry: softmax(q @ k^T * scale +
 * bias) @ v (torch's scaled_dot_product_attention without dropout).
 * q [..., Sq, d], k [..., Sk, d], v [..., Sk, dv] with the same leading
 * (batch) dims; bias NULL or broadcastable to [..., Sq, Sk] (an additive
 * mask: -inf or the most negative float for keys to ignore). Result
 * [..., Sq, dv]; with NPT_ATTN_HEADS_LAST (rank >= 3, q [..., heads, Sq, d])
 * [..., Sq, heads, dv], the layout in which the heads merge into
 * [..., Sq, heads * dv] by a reshape that copies nothing. float32 only.
 * The [Sq, Sk] scores of an entry never leave the cache (no [..., Sq, Sk]
 * tensor is written); q, k, v are read in place when each matrix has one
 * unit stride (permuted views of a [B, S, heads, d] projection do). A row is
 * reduced by one thread in a fixed order: results do not depend on the
 * thread count. The exp uses glibc's vector math (libmvec, within 4 ulp)
 * on AVX2/AVX-512 CPUs.
 */
NPT_API npt_status_t npt_attention(npt_tensor_t *q, npt_tensor_t *k, npt_tensor_t *v,
				   npt_tensor_t *bias, double scale, unsigned flags,
				   npt_tensor_t **out);

/* ---- evaluation ------------------------------------------------------------ */

/** Compute a lazy tensor's values (no-op for a materialised one). */
NPT_API npt_status_t npt_tensor_eval(npt_tensor_t *t);
/**
 * Compute src into out, NumPy's `out=` rules: out.shape must equal
 * src.shape exactly (an output is never broadcast), out must be writable,
 * and src's dtype must cast to out's dtype under 'same_kind'. Overlap
 * between out and src's inputs is handled (a temporary is used when needed).
 * src may be lazy (its graph is fused into the write) or materialised (copy).
 */
NPT_API npt_status_t npt_tensor_eval_into(npt_tensor_t *src, npt_tensor_t *out);

/* ---- configuration ------------------------------------------------------------ */

/** Threads used by evaluation (including the caller). 0 = number of online
 *  CPUs. Default: $NPT_NUM_THREADS, else online CPUs. */
NPT_API npt_status_t npt_set_num_threads(int n);
NPT_API int npt_get_num_threads(void);

/* ---- packed weights ----------------------------------------------------------
 * A linear weight [N, K] (float32) can be stored once in the GEMM's own layout
 * (in float32, or quantised to int8)
 * (oneDNN's blocked panels for this CPU), for example by a model loader into
 * shared memory, and used in place by npt_linear in every process. A layout
 * is named by a tag that spells out what the bytes depend on (library and
 * version, CPU ISA, shape, blocking); a process uses packed bytes only if its
 * own tag for that weight is the same string. */
#define NPT_PACK_TAG_MAX 256
/* Every function below that takes a tag reads at most NPT_PACK_TAG_MAX bytes
 * of it: a tag with no NUL within them is no tag of this library and is
 * refused (NPT_E_UNSUPPORTED; NPT_E_INVAL for npt_pack_weight). A tag's
 * numbers and blocks are checked against nbytes before any byte is read, so
 * damaged or crafted tags are refused, never followed out of bounds. */

/**
 * The layout this library and CPU pack an [n, k] weight into, in precision
 * dt: NPT_F32 (the same values in the GEMM's layout), NPT_BF16 (rounded to
 * bfloat16; the product rounds its input to bf16 too and accumulates in
 * float32; only where oneDNN has bf16 kernels, AVX512_BF16) or NPT_I8 (int8
 * weights, symmetric per output channel: scale[n] = max |w[n, :]| / 127; the
 * product then quantises its input per row, symmetric int8, and accumulates
 * exactly in int32, with VNNI where the CPU has it). Gives its tag
 * (NUL-terminated, at most tag_size bytes) and its size in bytes.
 * NPT_E_UNSUPPORTED when there is nothing to pack (the GEMM runs on
 * OpenBLAS, or oneDNN keeps this shape plain). Thread-safe.
 */
NPT_API npt_status_t npt_pack_query(npt_dtype_t dt, int64_t n, int64_t k, char *tag,
				    size_t tag_size, size_t *nbytes);
/**
 * Since 1.3: the layout for float32 products done as three bfloat16
 * products (bf16x3, PyTorch's "high" float32 matmul precision): the weight
 * is stored as two bf16 terms, hi = w rounded to bf16 and lo = w - hi
 * rounded to bf16 (the bytes of a float32 weight); npt_linear splits its
 * input x the same way and sums xh wh + xh wl + xl wh with float32
 * accumulation, so each product term is off by less than 2^-15 of its
 * magnitude (float32's own rounding is 2^-24). Offered only where oneDNN
 * runs bf16 products on AMX tiles, where the three are faster than one
 * float32 product on FMA units; NPT_E_UNSUPPORTED elsewhere (and as
 * npt_pack_query otherwise). Tags name "bf16x3"; npt_pack_weight,
 * npt_tensor_set_packed, npt_tensor_from_packed and npt_unpack_weight
 * (hi + lo) take them. Thread-safe.
 */
NPT_API npt_status_t npt_pack_query_bf16x3(int64_t n, int64_t k, char *tag, size_t tag_size,
					   size_t *nbytes);
/**
 * Write w ([N, K] float32, any strides; evaluated if lazy) into dst
 * (64-byte aligned, nbytes as npt_pack_query said) in layout tag, which must
 * be this library's tag for the shape (NPT_E_INVAL otherwise). dst is the
 * caller's; nothing is kept. Thread-safe.
 */
NPT_API npt_status_t npt_pack_weight(npt_tensor_t *w, const char *tag, void *dst, size_t nbytes);
/**
 * Let npt_linear read weight w from packed bytes (64-byte aligned, read in
 * place, never copied or written; they must outlive w). Refused with
 * NPT_E_UNSUPPORTED and a message naming both layouts when tag is not what
 * this CPU and library would make for w (another CPU, another oneDNN): w is
 * then used plain, as before the call. tag and data both NULL detaches.
 * Only w itself uses them (views of w are plain). Thread-safe.
 */
NPT_API npt_status_t npt_tensor_set_packed(npt_tensor_t *w, const char *tag, const void *data,
					   size_t nbytes);
/**
 * Since 1.2: a float32 [n, k] weight that exists only in its packed layout
 * (a model stored without the plain copy, `npushm load --packed-only`):
 * npt_linear reads it as its weight, in place; anything else that would read
 * its elements (other ops, views, npt_tensor_data, DLPack, packing) is
 * refused with NPT_E_UNSUPPORTED. Refused like npt_tensor_set_packed when
 * tag is not what this CPU and library would make (then unpack it privately
 * with npt_unpack_weight, or give up). data is read in place and must
 * outlive the tensor. *out: free with npt_tensor_free. Thread-safe.
 */
NPT_API npt_status_t npt_tensor_from_packed(const char *tag, const void *data, size_t nbytes,
					    int64_t n, int64_t k, npt_tensor_t **out);
/**
 * Since 1.2: the plain [n, k] float32 weight held by packed bytes data
 * (nbytes) in layout tag, written into dst (n * k floats, C order, the
 * caller's): the inverse of npt_pack_weight, for a layout made by any CPU
 * and oneDNN version, without oneDNN (the tag spells out the whole blocked
 * layout). int8 layouts give the dequantised weights (q * scale[n]), bf16
 * ones the rounded values. NPT_E_UNSUPPORTED, with nothing read, for a tag
 * that is not one of npt_pack_query's; NPT_E_INVAL when the tag's shape is
 * not [n, k] or its layout does not fit in nbytes. data must hold nbytes
 * readable bytes (any alignment); only bytes inside them are read. Thread-safe.
 */
NPT_API npt_status_t npt_unpack_weight(const char *tag, const void *data, size_t nbytes,
				       int64_t n, int64_t k, float *dst);

/* ---- 4-bit weights ------------------------------------------------------------
 * An [N, K] float32 weight stored in 4 bits per element: groups of
 * NPT_Q4_GROUP consecutive elements of a row share an IEEE half scale d, each
 * element is (q - 8) * d with q in 0..15 (the numbers of llama.cpp's Q4_0:
 * d is the group's largest-magnitude element / -8). 18 bytes per group, row
 * after row (tensor/src/q4.c describes the bytes). For decoders at batch 1:
 * the product reads the packed bytes in place, once per call. */
#define NPT_Q4_GROUP 32

/** Bytes of an [n, k] weight in 4-bit groups; NPT_E_SHAPE unless k is a
 *  positive multiple of NPT_Q4_GROUP and n >= 1, NPT_E_OVERFLOW past 2^40
 *  elements. Thread-safe. */
NPT_API npt_status_t npt_q4_size(int64_t n, int64_t k, size_t *nbytes);
/** Quantise w ([N, K] float32, any strides; evaluated if lazy) into dst
 *  (nbytes as npt_q4_size says; the caller's, nothing is kept). */
NPT_API npt_status_t npt_q4_pack(npt_tensor_t *w, void *dst, size_t nbytes);
/** y[m, n] = x[m, k] @ W^T with W the 4-bit weight q (npt_q4_pack's bytes,
 *  read in place, any alignment); x and y C-contiguous float32, the caller's.
 *  Eager (not a lazy op), on the evaluation threads; AVX2/AVX-512 kernels
 *  chosen at run time. Results do not depend on the thread count. */
NPT_API npt_status_t npt_q4_linear(const float *x, int64_t m, const void *q, int64_t n,
				   int64_t k, float *y);
/** npt_q4_linear on rows ldq bytes apart (ldq >= k / NPT_Q4_GROUP * 18): W is
 *  the [n, k] block of a wider 4-bit weight whose rows start at q, q + ldq,
 *  ..., for example columns [c, c + k) of a [N, K] weight (c and k multiples
 *  of NPT_Q4_GROUP: q = its bytes + c / NPT_Q4_GROUP * 18, ldq = K /
 *  NPT_Q4_GROUP * 18). NPT_E_OVERFLOW when n rows ldq apart, or m rows of x
 *  or y, overflow the address range. (NPTENSOR_1.1) */
NPT_API npt_status_t npt_q4_linear_strided(const float *x, int64_t m, const void *q, size_t ldq,
					   int64_t n, int64_t k, float *y);

/* ---- decode-step products ------------------------------------------------------
 * y[m, n] = x[m, k] @ W^T for the few input rows of a decoder's decode step,
 * where the time is the time to stream W from memory: every weight byte is
 * read once per call, the evaluation threads split the output columns, no
 * memory is taken per call, and each output is summed by one thread in a
 * fixed order (results do not depend on the thread count). x and y are
 * C-contiguous float32, the caller's; W is read in place. Kernels for
 * AVX-512 (and AVX2 for plain f32) are chosen at run time. */
#define NPT_GEMV_MAX_ROWS 4

/** W plain float32: row r of the [n, k] weight at w + r * ldw (ldw >= k; a
 *  model's [out, in] tensor, or a column slice of one). 1 <= m <=
 *  NPT_GEMV_MAX_ROWS. NPT_E_OVERFLOW when n rows ldw apart overflow the
 *  address range. */
NPT_API npt_status_t npt_gemv_f32(const float *x, int64_t m, const float *w, int64_t ldw,
				  int64_t n, int64_t k, float *y);
/**
 * W in a packed layout (npt_pack_weight's bytes and tag, nbytes as
 * npt_pack_query said, 64-byte aligned): float32, bfloat16 (the input is
 * rounded to bf16), bf16x3 (since 1.3: the input split into two bf16 terms,
 * three products) or int8 (the input quantised per row as npt_linear does,
 * exact int32 sums), so the results are npt_linear's up to the order of the
 * float sums. NPT_E_UNSUPPORTED when this function does not read that
 * layout, or the CPU lacks its instructions (AVX-512F; AVX512_BF16 for
 * bf16 and bf16x3, AVX512_VNNI for int8): use npt_linear then.
 */
NPT_API npt_status_t npt_gemv_packed(const float *x, int64_t m, const char *tag, const void *data,
				     size_t nbytes, int64_t n, int64_t k, float *y);

/**
 * The f32 GEMM behind npt_matmul and npt_linear, as text: "onednn 2.6.3
 * brg:avx512_core" (oneDNN's kernel for this CPU, the last one it picked) or
 * "openblas" (oneDNN unusable here, or NPT_GEMM=openblas). Chosen at the
 * first GEMM from the CPU's features, never from OPENBLAS_CORETYPE; a shape
 * for which oneDNN has only its reference code goes to OpenBLAS. The string
 * is static and changes with later calls; thread-safe.
 */
NPT_API const char *npt_gemm_backend(void);

/**
 * What oneDNN got wrong on this CPU, or NULL. Before its first product the
 * GEMM runs oneDNN once on a small problem (the product, a scaled product,
 * GELU, tanh, ReLU; the int8 and bf16 products exactly on small integers)
 * and compares with double arithmetic: a wrong activation is then applied by
 * libnptensor after oneDNN's product, a wrong f32 product sends every GEMM to
 * OpenBLAS, a wrong int8 or bf16 product makes weights in that precision
 * refused by npt_pack_query/npt_tensor_set_packed (all logged as warnings). The text names each
 * wrong case and its error, e.g. "oneDNN's tanh is wrong by 0.43 at 1.2" (seen
 * on qemu 7.2's emulated AVX2). Static string; thread-safe.
 */
NPT_API const char *npt_gemm_self_check(void);

/** How a broadcast operand is expanded. */
typedef enum npt_expand_mode {
	NPT_EXPAND_AUTO = 0,    /**< FUSED for elementwise consumers, MATERIALIZE only
				     where a consumer needs contiguous data */
	NPT_EXPAND_VIEW,        /**< never copy: ops that would need a copy fail
				     with NPT_E_WOULD_COPY */
	NPT_EXPAND_MATERIALIZE, /**< copy every broadcast operand of an elementwise op
				     into a contiguous buffer first (the naive way) */
	NPT_EXPAND_FUSED,       /**< as AUTO, and also recompute broadcast lazy
				     intermediates inside the consumer instead of
				     materialising them */
} npt_expand_mode_t;
/** Default: $NPT_EXPAND_MODE (auto|view|materialize|fused), else AUTO (another
 * value of the variable is logged as a warning). A mode outside the enum is
 * ignored, with a warning: the mode stays as it was. */
NPT_API void npt_set_expand_mode(npt_expand_mode_t mode);
NPT_API npt_expand_mode_t npt_get_expand_mode(void);

/** Implicit materialisations of at least this many bytes are reported to the
 *  log callback (level NPT_LOG_WARN). Default $NPT_MATERIALIZE_WARN_BYTES,
 *  else 16 MiB. */
NPT_API void npt_set_materialize_threshold(size_t bytes);
NPT_API size_t npt_get_materialize_threshold(void);

/**
 * Reproducibility of float reductions (sum, prod, mean, sum_to_shape and the
 * fused prologue of a reduction). In every mode the work is cut into pieces
 * of fixed extent before any thread starts, each piece is reduced in a
 * fixed order into its own partial result and the partial results are
 * combined in a fixed pairwise tree, so the bits never depend on which
 * thread ran which piece: the same input, settings and thread count give
 * the same bits on every run. The modes differ in what fixes the pieces
 * (docs/tensor.md, "Reproducibility"):
 */
typedef enum npt_repro_mode {
	/** Pieces fixed by the element counts alone (at least 16 Ki input
	 *  elements and 128 per partial result, at most 256 pieces): the same
	 *  bits at any thread count, 1 included. The default. */
	NPT_REPRO_INDEPENDENT = 0,
	/** One piece per thread (the fewest partial results): the same bits
	 *  for the same thread count; another thread count may round
	 *  differently. */
	NPT_REPRO_THREADS = 1,
} npt_repro_mode_t;
/** Default: $NPT_REPRO (independent|threads), else NPT_REPRO_INDEPENDENT.
 *  NPT_E_INVAL for any other value. Affects evaluations that start
 *  afterwards. Integer reductions, max/min/argmax, softmax and layernorm
 *  (one row per thread, in a fixed order) give the same bits in both modes
 *  at any thread count. matmul is OpenBLAS's: the same bits on every run at
 *  a fixed thread count, not necessarily at another (docs/tensor.md). */
NPT_API npt_status_t npt_set_repro_mode(npt_repro_mode_t mode);
NPT_API npt_repro_mode_t npt_get_repro_mode(void);

typedef enum npt_log_level { NPT_LOG_ERROR = 0, NPT_LOG_WARN = 1, NPT_LOG_INFO = 2,
			     NPT_LOG_DEBUG = 3 } npt_log_level_t;
typedef void (*npt_log_fn)(npt_log_level_t level, const char *msg, void *arg);
/** Install a log callback (NULL removes it). Without one, messages go to
 *  stderr only when $NPT_LOG is set (error|warn|info|debug). */
NPT_API void npt_set_log_callback(npt_log_fn fn, void *arg);

/* ---- memory accounting ------------------------------------------------------------ */

typedef struct npt_stats {
	uint64_t os_bytes;      /**< bytes of fresh memory obtained from the OS */
	uint64_t os_allocs;
	uint64_t reused_bytes;  /**< bytes served from the buffer pool */
	uint64_t reused_allocs;
	uint64_t inplace_bytes; /**< outputs written into a dead intermediate's buffer */
	uint64_t materialized_bytes; /**< implicit copies (broadcast/reshape/BLAS operands) */
	uint64_t pool_cached_bytes;  /**< global: bytes currently idle in the pool */
} npt_stats_t;

/** Counters of allocations made by the calling thread since its last reset
 *  (evaluations allocate on the calling thread). */
NPT_API void npt_stats_get(npt_stats_t *st);
NPT_API void npt_stats_reset(void);
/** Return idle pooled memory to the OS. Pool size cap: $NPT_POOL_MAX_BYTES
 *  (default 1 GiB). */
NPT_API void npt_pool_trim(void);

/* ---- DLPack (v0.6 ABI, CPU only) ---------------------------------------------------- */

struct DLManagedTensor;
/** Export: a DLManagedTensor holding a reference to t (evaluated first).
 *  The consumer calls its deleter. bool exports as kDLUInt 8 (DLPack 0.6
 *  has no bool type); bf16 as kDLBfloat 16. Negative strides are exported as
 *  they are. */
NPT_API npt_status_t npt_tensor_to_dlpack(npt_tensor_t *t, struct DLManagedTensor **out);
/** Import a CPU tensor: on success takes ownership of m (its deleter runs
 *  when the last view goes); on failure the caller still owns m. Its shape
 *  and strides are copied (NULL strides: C order) and checked as
 *  npt_tensor_from_data checks them; its data must hold what they reach. */
NPT_API npt_status_t npt_tensor_from_dlpack(struct DLManagedTensor *m, bool readonly,
					    npt_tensor_t **out);

#ifdef __cplusplus
}
#endif
#endif /* NPTENSOR_H */
