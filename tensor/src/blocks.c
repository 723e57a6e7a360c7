/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * blocks.c - constructors of the model building blocks: npt_take (the
 * embedding lookup), npt_linear (the dense layer with a fused activation)
 * and npt_attention (scaled dot-product attention). Each validates its
 * operands, computes the result's shape and adds one lazy node; the kernels
 * (kernels/gather.c, linear.c, attention.c) say what they compute.
 *
 * Contracts: every static error (dtypes, shapes, flags) is reported here
 * with the shapes in the message; index values are checked when the take
 * runs. Inputs are retained by the node.
 */
#include "internal.h"

#include <math.h>
#include <string.h>

NPT_API npt_status_t npt_take(npt_tensor_t *a, npt_tensor_t *indices, int axis, npt_tensor_t **out)
{
	npt_tensor_t *in[2] = { a, indices };
	int64_t shape[NPT_MAX_DIMS];
	npt_node_t *n;
	npt_status_t s;
	int ax, nd = 0;

	if (!out)
		return npt_fail(NPT_E_INVAL, "take: out is NULL");
	*out = NULL;
	if (!a || !indices)
		return npt_fail(NPT_E_INVAL, "take: %s is NULL", a ? "indices" : "the input tensor");
	if (!npt_dtype_is_int(indices->dtype))
		return npt_fail(NPT_E_DTYPE, "take: indices have dtype %s; they must be integers "
				"(cast them first, as NumPy's take refuses them too)",
				npt_dtype_name(indices->dtype));
	if ((s = npt_normalize_axis("take", axis, a->ndim, &ax)))
		return s;
	if (a->ndim - 1 + indices->ndim > NPT_MAX_DIMS)
		return npt_fail(NPT_E_RANK, "take: the result would have rank %d; tensors have at "
				"most %d dimensions", a->ndim - 1 + indices->ndim, NPT_MAX_DIMS);
	for (int d = 0; d < ax; d++)
		shape[nd++] = a->shape[d];
	for (int d = 0; d < indices->ndim; d++)
		shape[nd++] = indices->shape[d];
	for (int d = ax + 1; d < a->ndim; d++)
		shape[nd++] = a->shape[d];
	if ((s = npt_check_shape("take", nd, shape, NULL)))
		return s;
	if (!(n = npt_node_new(NPT_NODE_TAKE, 0)))
		return npt_fail(NPT_E_NOMEM, "take: out of memory");
	n->nin = 2;
	n->axis = ax;
	for (int i = 0; i < 2; i++)
		n->in[i] = npt_tensor_retain(in[i]);
	return npt_tensor_new_lazy(a->dtype, nd, shape, n, out);
}

NPT_API npt_status_t npt_linear(npt_tensor_t *x, npt_tensor_t *weight, npt_tensor_t *bias,
				npt_activation_t act, npt_tensor_t **out)
{
	char a[NPT_SHAPE_STRLEN], b[NPT_SHAPE_STRLEN];
	int64_t shape[NPT_MAX_DIMS];
	npt_node_t *n;
	npt_status_t s;

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
	/* x's rows times the weight's rows: each valid, their product may not be */
	if ((s = npt_check_shape("linear", x->ndim, shape, NULL)))
		return s;
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

NPT_API npt_status_t npt_attention(npt_tensor_t *q, npt_tensor_t *k, npt_tensor_t *v,
				   npt_tensor_t *bias, double scale, unsigned flags,
				   npt_tensor_t **out)
{
	char a[NPT_SHAPE_STRLEN], b[NPT_SHAPE_STRLEN], c[NPT_SHAPE_STRLEN];
	npt_tensor_t *in[4] = { q, k, v, bias };
	int64_t shape[NPT_MAX_DIMS];
	npt_node_t *n;
	npt_status_t s;
	int nd;

	if (!out)
		return npt_fail(NPT_E_INVAL, "attention: out is NULL");
	*out = NULL;
	if (!q || !k || !v)
		return npt_fail(NPT_E_INVAL, "attention: %s is NULL", !q ? "q" : !k ? "k" : "v");
	if (flags & ~NPT_ATTN_HEADS_LAST)
		return npt_fail(NPT_E_INVAL, "attention: unknown flags 0x%x (only "
				"NPT_ATTN_HEADS_LAST)", flags & ~NPT_ATTN_HEADS_LAST);
	if (!isfinite(scale))
		return npt_fail(NPT_E_VALUE, "attention: scale %g is not finite", scale);
	for (int i = 0; i < 4; i++)
		if (in[i] && in[i]->dtype != NPT_F32)
			return npt_fail(NPT_E_DTYPE, "attention: %s has dtype %s; float32 only",
					i == 0 ? "q" : i == 1 ? "k" : i == 2 ? "v" : "bias",
					npt_dtype_name(in[i]->dtype));
	nd = q->ndim;
	npt_shape_str(a, sizeof(a), q->ndim, q->shape);
	npt_shape_str(b, sizeof(b), k->ndim, k->shape);
	npt_shape_str(c, sizeof(c), v->ndim, v->shape);
	if (nd < 2 || k->ndim != nd || v->ndim != nd ||
	    memcmp(q->shape, k->shape, (size_t)(nd - 2) * sizeof(int64_t)) ||
	    memcmp(q->shape, v->shape, (size_t)(nd - 2) * sizeof(int64_t)))
		return npt_fail(NPT_E_SHAPE, "attention: q %s, k %s, v %s: they must be [..., Sq, d], "
				"[..., Sk, d], [..., Sk, dv] with the same leading (batch) "
				"dimensions", a, b, c);
	if (q->shape[nd - 1] != k->shape[nd - 1] || k->shape[nd - 2] != v->shape[nd - 2])
		return npt_fail(NPT_E_SHAPE, "attention: q %s, k %s, v %s: q and k need the same "
				"feature size d, k and v the same number of keys Sk", a, b, c);
	if ((flags & NPT_ATTN_HEADS_LAST) && nd < 3)
		return npt_fail(NPT_E_SHAPE, "attention: NPT_ATTN_HEADS_LAST needs a heads "
				"dimension: q %s has rank %d, at least 3 ([..., heads, Sq, d])", a, nd);
	memcpy(shape, q->shape, (size_t)nd * sizeof(int64_t));
	shape[nd - 1] = k->shape[nd - 2];		/* the scores' shape [..., Sq, Sk] */
	/* the kernel keeps an entry's [Sq, Sk] scores in memory: their size must
	 * be one a tensor could have (q and k may be stride-0 views) */
	if (npt_check_shape("attention", nd, shape, NULL))
		return npt_fail(NPT_E_OVERFLOW, "attention: q %s and k %s make scores of shape "
				"%s ([..., Sq, Sk]), more than 2^59 - 1 elements", a, b,
				npt_shape_str(c, sizeof(c), nd, shape));
	if (bias) {
		int ok = bias->ndim <= nd;

		for (int i = 1; ok && i <= bias->ndim; i++)
			ok = bias->shape[bias->ndim - i] == 1 ||
			     bias->shape[bias->ndim - i] == shape[nd - i];
		if (!ok)
			return npt_fail(NPT_E_SHAPE, "attention: bias of shape %s does not broadcast "
					"to the scores' shape %s ([..., Sq, Sk])",
					npt_shape_str(a, sizeof(a), bias->ndim, bias->shape),
					npt_shape_str(b, sizeof(b), nd, shape));
	}
	if (flags & NPT_ATTN_HEADS_LAST) {
		shape[nd - 3] = q->shape[nd - 2];
		shape[nd - 2] = q->shape[nd - 3];
	} else {
		shape[nd - 2] = q->shape[nd - 2];
	}
	shape[nd - 1] = v->shape[nd - 1];
	/* q's rows times v's columns: each valid, their product may not be */
	if ((s = npt_check_shape("attention", nd, shape, NULL)))
		return s;
	if (!(n = npt_node_new(NPT_NODE_ATTENTION, (int)flags)))
		return npt_fail(NPT_E_NOMEM, "attention: out of memory");
	n->nin = bias ? 4 : 3;
	for (int i = 0; i < n->nin; i++)
		n->in[i] = npt_tensor_retain(in[i]);
	n->eps = scale;
	return npt_tensor_new_lazy(NPT_F32, nd, shape, n, out);
}
