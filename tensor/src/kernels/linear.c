/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * linear.c - the kernel of npt_linear: act(x @ weight^T + bias),
 * torch.nn.functional.linear with a fused activation, the dense layer of a
 * transformer.
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
 * with a bf16 layout rounds x to bf16 and accumulates in float32; one with
 * a bf16x3 layout splits x into two bf16 terms and sums three bf16 products
 * in float32 (pack.c).
 *
 * Contracts: f32 tensors only. Operands BLAS cannot address (stride 0, negative
 * strides, no unit stride) are copied by the scheduler first, as
 * npt_linear_operand() asks (reported like matmul's copies and refused in
 * NPT_EXPAND_VIEW mode); a packed weight is read as it is.
 */
#include "kernels.h"

#include <string.h>

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

npt_operand_t npt_linear_operand(int i, const npt_tensor_t *in, npt_dtype_t *dt,
				 const char **what)
{
	int64_t ld;
	int trans;

	*dt = NPT_F32;
	if (i == 0) {
		*what = "the input";
		return in->shape[in->ndim - 1] == 0 || rows_layout(in, &ld) ? NPT_OPERAND_AS_IS :
									       NPT_OPERAND_COPY;
	}
	if (i == 1) {
		*what = "the weight";
		return in->packed || in->shape[1] == 0 || weight_layout(in, &trans, &ld) ?
		       NPT_OPERAND_AS_IS : NPT_OPERAND_COPY;
	}
	*what = "the bias";
	return in->shape[0] > 1 && in->strides[0] != 1 ? NPT_OPERAND_COPY : NPT_OPERAND_AS_IS;
}

npt_status_t npt_run_linear(const npt_kcall_t *k)
{
	npt_tensor_t *x = k->in[0], *w = k->in[1], *dst = k->out;
	npt_tensor_t *bias = k->nin > 2 ? k->in[2] : NULL;
	int act = k->node->op;
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
	/* the scheduler made them addressable; a packed weight's plain view
	 * may not be (the GEMM then only reads the packed bytes) */
	if (K > 0 && !rows_layout(x, &lda))
		return npt_fail(NPT_E_INVAL, "internal: linear's input cannot be addressed");
	int plain = K > 0 && weight_layout(w, &trans, &ldb);

	if (K > 0 && !plain && !w->packed)
		return npt_fail(NPT_E_INVAL, "internal: linear's weight cannot be addressed");
	if (K == 0) {
		memset(y, 0, (size_t)(M * N) * sizeof(float));
		for (int64_t r = 0; r < M && (bias || act != NPT_ACT_NONE); r++)
			npt_act_rows_f32(act, N, y + r * N,
					 bias ? (const float *)npt_tensor_ptr(bias) : NULL);
	} else {
		const npt_tensor_t *w0 = w;
		npt_gemm_t g = {
			.M = M, .N = N, .K = K, .lda = lda, .ldb = ldb, .ldc = N,
			.ta = 0, .tb = trans, .act = act,
			.packed = w0->packed, .packed_desc = w0->packed_md,
			.wscale = w0->packed_scales,
			.a = (const float *)npt_tensor_ptr(x),
			.b = plain ? (const float *)npt_tensor_ptr(w) : NULL, .c = y,
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
		if (w0->packed_dt == NPT_PACKED_BF16X3) {
			/* bf16x3 weights: the input split into bf16 terms hi + lo, into scratch */
			size_t hb = ((size_t)(M * K) * 2 + 63) / 64 * 64;

			qbuf = npt_scratch_alloc(2 * hb, &qcap);
			if (!qbuf) {
				s = npt_fail(NPT_E_NOMEM, "linear: out of memory for the bf16x3 input");
				goto out;
			}
			g.abf = (const uint16_t *)qbuf;
			g.abf_lo = (const uint16_t *)(qbuf + hb);
			g.packed_lo = w0->packed_lo;
			npt_split_rows_bf16(g.a, M, K, lda, (uint16_t *)qbuf, (uint16_t *)(qbuf + hb));
		}
		if (w0->packed_dt == NPT_BF16) {
			/* bf16 weights: the input rounded to bf16 (nearest even), into scratch */
			qbuf = npt_scratch_alloc((size_t)(M * K) * 2, &qcap);
			if (!qbuf) {
				s = npt_fail(NPT_E_NOMEM, "linear: out of memory for the bf16 input");
				goto out;
			}
			g.abf = (const uint16_t *)qbuf;
			npt_round_rows_bf16(g.a, M, K, lda, (uint16_t *)qbuf);
		}
		s = npt_gemm_f32(&g);
	}
out:
	npt_scratch_free(qbuf, qcap);
	return s;
}
