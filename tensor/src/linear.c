/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * linear.c - npt_linear: act(x @ weight^T + bias), torch.nn.functional.linear
 * with a fused activation, the dense layer of a transformer.
 *
 * weight is [out, in] as models store it (Hugging Face / PyTorch), read in
 * place through its strides: the GEMM takes it transposed, so a read-only
 * shared weight, or a row slice (column-parallel split) or column slice
 * (row-parallel split) of one, is used without a copy. x is [..., in]; its
 * leading dims are one run of rows when their strides allow (a contiguous
 * tensor, or a strided row view such as hidden[:, 0, :]), so BLAS reads it in
 * place too. One GEMM (gemm.c: oneDNN's matmul with the bias and the
 * activation as post-ops, or cblas_sgemm and a parallel epilogue pass)
 * computes act(x @ weight^T + bias) into the output.
 *
 * A weight with packed int8 layout (pack.c) runs in int8: x is quantised
 * per row (quant.c), the product accumulates exactly in int32 and the
 * scales, bias and activation are applied on the way out (gemm.c). One
 * with a bf16 layout rounds x to bf16 and accumulates in float32.
 *
 * Contracts: f32 tensors only. Operands BLAS cannot address (stride 0, negative
 * strides, no unit stride) are copied first, reported like matmul's copies
 * and refused in NPT_EXPAND_VIEW mode. A fusion boundary (its inputs are
 * evaluated first).
 */
#include "internal.h"

#include <string.h>

NPT_API npt_status_t npt_linear(npt_tensor_t *x, npt_tensor_t *weight, npt_tensor_t *bias,
				npt_activation_t act, npt_tensor_t **out)
{
	char a[NPT_SHAPE_STRLEN], b[NPT_SHAPE_STRLEN];
	int64_t shape[NPT_MAX_DIMS];
	npt_node_t *n;

	if (!out)
		return npt_fail(NPT_E_INVAL, "linear: out is NULL");
	*out = NULL;
	if (!x || !weight)
		return npt_fail(NPT_E_INVAL, "linear: %s is NULL", x ? "weight" : "the input");
	if ((int)act < NPT_ACT_NONE || act > NPT_ACT_RELU)
		return npt_fail(NPT_E_INVAL, "linear: activation %d is not one of NPT_ACT_NONE, "
				"NPT_ACT_GELU, NPT_ACT_TANH, NPT_ACT_RELU", (int)act);
	if (x->dtype != NPT_F32 || weight->dtype != NPT_F32 || (bias && bias->dtype != NPT_F32))
		return npt_fail(NPT_E_DTYPE, "linear: input %s, weight %s%s%s: float32 only (cast "
				"first, or use matmul)", npt_dtype_name(x->dtype),
				npt_dtype_name(weight->dtype), bias ? ", bias " : "",
				bias ? npt_dtype_name(bias->dtype) : "");
	if (x->ndim < 1 || weight->ndim != 2)
		return npt_fail(NPT_E_SHAPE, "linear: input of shape %s and weight of shape %s: the "
				"input needs at least one dimension and the weight must be "
				"[out_features, in_features]",
				npt_shape_str(a, sizeof(a), x->ndim, x->shape),
				npt_shape_str(b, sizeof(b), weight->ndim, weight->shape));
	if (x->shape[x->ndim - 1] != weight->shape[1])
		return npt_fail(NPT_E_SHAPE, "linear: input of shape %s has %lld features but the "
				"weight of shape %s takes %lld (weight is [out_features, "
				"in_features])", npt_shape_str(a, sizeof(a), x->ndim, x->shape),
				(long long)x->shape[x->ndim - 1],
				npt_shape_str(b, sizeof(b), weight->ndim, weight->shape),
				(long long)weight->shape[1]);
	if (bias && (bias->ndim != 1 || bias->shape[0] != weight->shape[0]))
		return npt_fail(NPT_E_SHAPE, "linear: bias of shape %s does not match the weight's "
				"%lld output features; it must have shape (%lld,)",
				npt_shape_str(a, sizeof(a), bias->ndim, bias->shape),
				(long long)weight->shape[0], (long long)weight->shape[0]);
	memcpy(shape, x->shape, (size_t)x->ndim * sizeof(int64_t));
	shape[x->ndim - 1] = weight->shape[0];
	if (!(n = npt_node_new(NPT_NODE_LINEAR, (int)act)))
		return npt_fail(NPT_E_NOMEM, "linear: out of memory");
	n->in[0] = npt_tensor_retain(x);
	n->in[1] = npt_tensor_retain(weight);
	n->nin = 2;
	if (bias) {
		n->in[2] = npt_tensor_retain(bias);
		n->nin = 3;
	}
	return npt_tensor_new_lazy(NPT_F32, x->ndim, shape, n, out);
}

/* rows of x as one matrix [M, K] with row stride *ld and unit column stride */
static int rows_layout(const npt_tensor_t *x, int64_t *ld)
{
	int nd = x->ndim;
	int64_t K = x->shape[nd - 1], rs = -1;

	if (K != 1 && x->strides[nd - 1] != 1)
		return 0;
	/* the leading dims must collapse into one stride */
	for (int d = nd - 2; d >= 0; d--) {
		if (x->shape[d] == 1)
			continue;
		if (rs < 0) {
			rs = x->strides[d];
		} else {
			int64_t inner = 1;

			for (int e = d + 1; e < nd - 1; e++)
				inner *= x->shape[e];
			if (x->strides[d] != rs * inner)
				return 0;
		}
	}
	if (rs < 0)
		rs = K > 0 ? K : 1;      /* a single row */
	if (rs < K || rs <= 0)
		return 0;
	*ld = rs;
	return 1;
}

/* weight [N, K] as BLAS's B = weight^T: *trans set, *ld its leading dimension */
static int weight_layout(const npt_tensor_t *w, int *trans, int64_t *ld)
{
	int64_t N = w->shape[0], K = w->shape[1], s0 = w->strides[0], s1 = w->strides[1];

	if ((s1 == 1 || K == 1) && (N == 1 || s0 >= K)) {
		*trans = 1; /* row-major [N, K]: B = W^T is op(W) with CblasTrans */
		*ld = N == 1 ? (K > 0 ? K : 1) : s0;
		return *ld > 0;
	}
	if ((s0 == 1 || N == 1) && (K == 1 || s1 >= N)) {
		*trans = 0; /* column-major: W^T is row-major [K, N] */
		*ld = K == 1 ? (N > 0 ? N : 1) : s1;
		return *ld > 0;
	}
	return 0;
}

/*
 * A contiguous, evaluated copy of @t for BLAS (also used by attention.c),
 * reported as an implicit materialisation; refused in expansion mode VIEW.
 * @what names the operand in the message ("the weight", "q", ...).
 */
npt_status_t npt_blas_operand(const char *op, npt_tensor_t *t, const char *what,
			      npt_tensor_t **out)
{
	npt_status_t s;
	npt_tensor_t *c;

	if (npt_cfg_expand_mode() == NPT_EXPAND_VIEW) {
		char a[NPT_SHAPE_STRLEN];

		return npt_fail(NPT_E_WOULD_COPY, "%s: %s of shape %s has strides BLAS "
				"cannot use and expansion mode VIEW forbids the copy", op, what,
				npt_shape_str(a, sizeof(a), t->ndim, t->shape));
	}
	if ((s = npt_tensor_contiguous(t, &c)))
		return s;
	if ((s = npt_eval_locked(c))) {
		npt_tensor_free(c);
		return s;
	}
	npt_note_materialize(op, t->ndim, t->shape, t->ndim, t->shape,
			     (size_t)npt_tensor_numel(t) * sizeof(float),
			     "BLAS needs one unit stride per matrix");
	*out = c;
	return NPT_OK;
}

npt_status_t npt_run_linear(npt_tensor_t *t, npt_tensor_t *dst)
{
	npt_tensor_t *x = t->node->in[0], *w = t->node->in[1];
	npt_tensor_t *bias = t->node->nin > 2 ? t->node->in[2] : NULL;
	npt_tensor_t *cx = NULL, *cw = NULL, *cb = NULL;
	char *qbuf = NULL;
	size_t qcap = 0;
	int64_t K = w->shape[1], N = w->shape[0], M = npt_tensor_numel(dst) / (N ? N : 1);
	int64_t lda = 1, ldb = 1;
	npt_status_t s = NPT_OK;
	int trans = 1;
	float *y = (float *)npt_tensor_ptr(dst);

	if (N == 0)
		M = npt_numel(x->ndim - 1, x->shape);
	if (M == 0 || N == 0)
		return NPT_OK;
	if (K > 0 && !rows_layout(x, &lda)) {
		if ((s = npt_blas_operand("linear", x, "the input", &cx)))
			goto out;
		x = cx;
		rows_layout(x, &lda);
	}
	if (K > 0 && !weight_layout(w, &trans, &ldb)) {
		if ((s = npt_blas_operand("linear", w, "the weight", &cw)))
			goto out;
		w = cw;
		weight_layout(w, &trans, &ldb);
	}
	if (bias && bias->shape[0] > 1 && bias->strides[0] != 1) {
		if ((s = npt_blas_operand("linear", bias, "the bias", &cb)))
			goto out;
		bias = cb;
	}
	if (K == 0) {
		memset(y, 0, (size_t)(M * N) * sizeof(float));
		for (int64_t r = 0; r < M && (bias || t->node->op != NPT_ACT_NONE); r++)
			npt_act_rows_f32(t->node->op, N, y + r * N,
					 bias ? (const float *)npt_tensor_ptr(bias) : NULL);
	} else {
		npt_tensor_t *w0 = t->node->in[1];
		npt_gemm_t g = {
			.M = M, .N = N, .K = K, .lda = lda, .ldb = ldb, .ldc = N,
			.ta = 0, .tb = trans, .act = t->node->op,
			.packed = w0->packed, .packed_desc = w0->packed_md,
			.wscale = w0->packed_scales,
			.a = (const float *)npt_tensor_ptr(x),
			.b = (const float *)npt_tensor_ptr(w), .c = y,
			.bias = bias ? (const float *)npt_tensor_ptr(bias) : NULL,
		};

		if (w0->packed_scales) {
			/* int8 weights: the input quantised per row, into scratch */
			size_t qb = ((size_t)(M * K) + 63) / 64 * 64;

			qbuf = npt_scratch_alloc(qb + (size_t)M * sizeof(float), &qcap);
			if (!qbuf) {
				s = npt_fail(NPT_E_NOMEM, "linear: out of memory for the int8 input");
				goto out;
			}
			g.aq = (const int8_t *)qbuf;
			g.ascale = (const float *)(qbuf + qb);
			npt_quantize_rows_s8(g.a, M, K, lda, (int8_t *)qbuf, (float *)(qbuf + qb));
		}
		if (w0->packed_dt == NPT_BF16) {
			/* bf16 weights: the input rounded to bf16 (nearest even), into scratch */
			qbuf = npt_scratch_alloc((size_t)(M * K) * 2, &qcap);
			if (!qbuf) {
				s = npt_fail(NPT_E_NOMEM, "linear: out of memory for the bf16 input");
				goto out;
			}
			g.abf = (const uint16_t *)qbuf;
			for (int64_t r = 0; r < M; r++)
				npt_conv(NPT_F32, NPT_BF16)(K, qbuf + r * K * 2, 1, g.a + r * lda, 1);
		}
		s = npt_gemm_f32(&g);
	}
out:
	npt_scratch_free(qbuf, qcap);
	npt_tensor_free(cx);
	npt_tensor_free(cw);
	npt_tensor_free(cb);
	return s;
}
