/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * kernels.h - the compute kernels: elementwise programs (ewise.c over the
 * typed loops of loops.c and convert.c), reductions and argmax (reduce.c),
 * softmax and layernorm (nn.c), matmul, linear, attention and take. Each
 * is a leaf: the scheduler (sched/) gives it concrete buffers and it
 * computes into them on the backend (backend/: threads, GEMM); it never
 * evaluates a tensor, builds a node or makes a copy of an operand.
 */
#ifndef NPT_KERNELS_H
#define NPT_KERNELS_H

#include "../backend/backend.h"

/* ---- convert.c: typed copies, strides in elements ---- */
typedef void (*npt_conv_fn)(int64_t n, void *dst, int64_t ds, const void *src, int64_t ss);
NPT_HIDDEN npt_conv_fn npt_conv(npt_dtype_t from, npt_dtype_t to);

/* ---- loops.c: elementwise loops over register types ---- */
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

/* ---- ewise.c: fused elementwise programs (compiled by sched/fuse.c) ---- */
#define NPT_PROG_MAX_LEAVES 32
#define NPT_PROG_MAX_INSTR 96
#define NPT_BLOCK 1024
/* opcodes past the internal elementwise ones: rounding to a 16-bit float */
enum { NPT_EW_ROUND_F16 = NPT_EW_COPY + 1, NPT_EW_ROUND_BF16 };
typedef struct {
	unsigned char op, rt;
	short dst, a, b, c;
} npt_instr_t;
typedef struct {
	int nleaf, ninstr, nreg, out_reg, nslot, block;
	short slot[NPT_PROG_MAX_LEAVES + NPT_PROG_MAX_INSTR]; /* buffer slot of each register */
	npt_tensor_t *leaf[NPT_PROG_MAX_LEAVES]; /* materialised when the program runs */
	short leaf_reg[NPT_PROG_MAX_LEAVES];
	char leaf_excl[NPT_PROG_MAX_LEAVES]; /* only nodes dying with the root hold it */
	char leaf_dead[NPT_PROG_MAX_LEAVES]; /* its buffer dies with this evaluation's root */
	npt_dtype_t leaf_rt[NPT_PROG_MAX_LEAVES];
	npt_dtype_t reg_rt[NPT_PROG_MAX_LEAVES + NPT_PROG_MAX_INSTR];
	npt_dtype_t out_dtype;  /* logical dtype of the program result */
	int has_int_pow;
	npt_instr_t ins[NPT_PROG_MAX_INSTR];
} npt_prog_t;
/* Compute n program values at the block whose leaf element pointers are
 * ptr[i] with inner strides st[i], in the calling thread's block buffers
 * (@blocks: npt_prog_block_bytes(p), from npt_thread_scratch). Returns a
 * pointer to values of register type prog->reg_rt[out_reg]; *scalar set when
 * all n values are the same single element. If direct != NULL and the result
 * type matches, the last instruction writes into direct (returned); with nt
 * it does so only when it can use streaming stores (f32 add/sub/mul/div).
 * NULL on a value error. */
NPT_HIDDEN const void *npt_block_run(char *blocks, const npt_prog_t *p, int64_t n,
				     char *const *ptr, const int64_t *st, void *direct,
				     int nt, int *scalar);
NPT_HIDDEN size_t npt_prog_block_bytes(const npt_prog_t *p);
/* space over `ndim/shape` with operand i = leaf i's broadcast strides */
NPT_HIDDEN void npt_prog_space(const npt_prog_t *p, int ndim, const int64_t *shape,
			       npt_space_t *sp);
NPT_HIDDEN npt_status_t npt_value_error(void);
/* compute program p (root shape ndim/shape) into out (any strides); integer
 * ** negative is NPT_E_VALUE */
NPT_HIDDEN npt_status_t npt_run_prog(const npt_prog_t *p, const char *opname, int ndim,
				     const int64_t *shape, npt_tensor_t *out);

/* ---- quant.c: q = round(x / scale[m]) per row, scale[m] = max |x[m, :]| / 127 ---- */
NPT_HIDDEN void npt_quantize_rows_s8(const float *x, int64_t M, int64_t K, int64_t ldx,
				     int8_t *q, float *scale);
/* h [M, K] = x rounded to bfloat16 (nearest even), rows threaded */
NPT_HIDDEN void npt_round_rows_bf16(const float *x, int64_t M, int64_t K, int64_t ldx,
				    uint16_t *h);
/* x = h + l: h [M, K] = x in bfloat16, l [M, K] = x - h in bfloat16, rows threaded */
NPT_HIDDEN void npt_split_rows_bf16(const float *x, int64_t M, int64_t K, int64_t ldx,
				    uint16_t *h, uint16_t *l);

/* ---- the node kernels ----
 * The scheduler hands each one the node's parameters, the node's inputs
 * materialised and laid out as its operand function asked, and a
 * C-contiguous output of the node's shape and dtype that overlaps no input. */
typedef struct {
	const npt_node_t *node;     /* kind, op and parameters (not its inputs) */
	int nin;
	npt_tensor_t *in[4];        /* materialised inputs (NULL where absent) */
	/* NPT_NODE_REDUCE: the input as a program (an elementwise chain computed
	 * block by block, or a single read) over the input's shape */
	const npt_prog_t *prologue;
	int in_ndim;
	const int64_t *in_shape;
	npt_tensor_t *out;
} npt_kcall_t;

NPT_HIDDEN npt_status_t npt_run_reduce(const npt_kcall_t *k);
NPT_HIDDEN npt_status_t npt_run_argmax(const npt_kcall_t *k);
NPT_HIDDEN npt_status_t npt_run_softmax(const npt_kcall_t *k);
NPT_HIDDEN npt_status_t npt_run_layernorm(const npt_kcall_t *k);
NPT_HIDDEN npt_status_t npt_run_matmul(const npt_kcall_t *k);
NPT_HIDDEN npt_status_t npt_run_take(const npt_kcall_t *k);
NPT_HIDDEN npt_status_t npt_run_linear(const npt_kcall_t *k);
NPT_HIDDEN npt_status_t npt_run_attention(const npt_kcall_t *k);

/* How a GEMM kernel reads input @i (of dtype and strides @in) of a node whose
 * result has dtype @out_dt: as it is (NPT_OPERAND_AS_IS), or from a
 * C-contiguous copy in *dt: a conversion to the dtype it computes in
 * (NPT_OPERAND_CAST), or a layout BLAS cannot address (NPT_OPERAND_COPY: an
 * implicit materialisation, reported and refused in NPT_EXPAND_VIEW mode;
 * *what names the operand in messages). */
typedef enum { NPT_OPERAND_AS_IS, NPT_OPERAND_CAST, NPT_OPERAND_COPY } npt_operand_t;
NPT_HIDDEN npt_operand_t npt_matmul_operand(npt_dtype_t out_dt, int i, const npt_tensor_t *in,
					    npt_dtype_t *dt, const char **what);
NPT_HIDDEN npt_operand_t npt_linear_operand(int i, const npt_tensor_t *in, npt_dtype_t *dt,
					    const char **what);
NPT_HIDDEN npt_operand_t npt_attention_operand(int i, const npt_tensor_t *in, npt_dtype_t *dt,
					       const char **what);

#endif
