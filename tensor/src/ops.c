/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * ops.c - op constructors: validate operands, compute the result shape and
 * dtype (NumPy broadcasting and promotion), and add a lazy graph node.
 *
 * Contracts: every static error (shapes, axes, dtype support, empty
 * max/min/argmax) is reported here, with the op name and the shapes; only
 * value-dependent errors (integer ** negative) wait for evaluation. Inputs
 * are retained by the node, so callers may free them right away.
 */
#include "internal.h"

#include <string.h>

/* a new lazy tensor of node @kind/@op over @in, for the op the caller named @name */
static npt_status_t lazy(const char *name, npt_node_kind_t kind, int op, int nin,
			 npt_tensor_t **in, npt_dtype_t dt, int ndim, const int64_t *shape,
			 npt_node_t **nodep, npt_tensor_t **out)
{
	npt_node_t *n = npt_node_new(kind, op);
	npt_status_t s;

	if (nodep)
		*nodep = n;
	if (!n)
		return npt_fail(NPT_E_NOMEM, "%s: out of memory", name);
	n->nin = nin;
	for (int i = 0; i < nin; i++)
		n->in[i] = npt_tensor_retain(in[i]);
	if ((s = npt_check_shape(name, ndim, shape, NULL))) {
		npt_node_free(n);
		return s;
	}
	return npt_tensor_new_lazy(dt, ndim, shape, n, out);
}

static npt_status_t need_operands(const char *op, npt_tensor_t **out, int n, npt_tensor_t *a,
			 npt_tensor_t *b, npt_tensor_t *c)
{
	npt_tensor_t *v[3] = { a, b, c };

	if (!out)
		return npt_fail(NPT_E_INVAL, "%s: out is NULL", op);
	*out = NULL;
	for (int i = 0; i < n; i++)
		if (!v[i])
			return npt_fail(NPT_E_INVAL, "%s: operand %d is NULL", op, i);
	return NPT_OK;
}

NPT_API npt_status_t npt_binary(npt_op_t op, npt_tensor_t *a, npt_tensor_t *b, npt_tensor_t **out)
{
	npt_tensor_t *in[2] = { a, b };
	int64_t shape[NPT_MAX_DIMS];
	int nd;
	npt_dtype_t c, r;
	npt_status_t s;

	if (out)
		*out = NULL;
	if ((unsigned)op > NPT_OP_GE)
		return npt_fail(NPT_E_INVAL, "binary: %d is not a binary op (NPT_OP_ADD..NPT_OP_GE)", op);
	if ((s = need_operands(npt_op_name(op), out, 2, a, b, NULL)))
		return s;
	if ((s = npt_broadcast_shapes(npt_op_name(op), 2, in, &nd, shape)))
		return s;
	if ((s = npt_binary_types(op, a->dtype, b->dtype, &c, &r)))
		return s;
	return lazy(npt_op_name(op), NPT_NODE_EW, op, 2, in, r, nd, shape, NULL, out);
}

NPT_API npt_status_t npt_add(npt_tensor_t *a, npt_tensor_t *b, npt_tensor_t **out)
{
	return npt_binary(NPT_OP_ADD, a, b, out);
}
NPT_API npt_status_t npt_sub(npt_tensor_t *a, npt_tensor_t *b, npt_tensor_t **out)
{
	return npt_binary(NPT_OP_SUB, a, b, out);
}
NPT_API npt_status_t npt_mul(npt_tensor_t *a, npt_tensor_t *b, npt_tensor_t **out)
{
	return npt_binary(NPT_OP_MUL, a, b, out);
}
NPT_API npt_status_t npt_div(npt_tensor_t *a, npt_tensor_t *b, npt_tensor_t **out)
{
	return npt_binary(NPT_OP_DIV, a, b, out);
}

NPT_API npt_status_t npt_unary(npt_op_t op, npt_tensor_t *a, npt_tensor_t **out)
{
	npt_dtype_t c = NPT_F32, r = NPT_F32;
	npt_status_t s;

	if (out)
		*out = NULL;
	if (op < NPT_OP_NEG || op > NPT_OP_ERF)
		return npt_fail(NPT_E_INVAL, "unary: %d is not a unary op (NPT_OP_NEG..NPT_OP_ERF)", op);
	if ((s = need_operands(npt_op_name(op), out, 1, a, NULL, NULL)))
		return s;
	if ((s = npt_unary_types(op, a->dtype, &c, &r)))
		return s;
	return lazy(npt_op_name(op), NPT_NODE_EW, op, 1, &a, r, a->ndim, a->shape, NULL, out);
}

NPT_API npt_status_t npt_where(npt_tensor_t *cond, npt_tensor_t *a, npt_tensor_t *b,
			       npt_tensor_t **out)
{
	npt_tensor_t *in[3] = { cond, a, b };
	int64_t shape[NPT_MAX_DIMS];
	int nd;
	npt_dtype_t r;
	npt_status_t s;

	if ((s = need_operands("where", out, 3, cond, a, b)))
		return s;
	if ((s = npt_broadcast_shapes("where", 3, in, &nd, shape)))
		return s;
	if ((s = npt_promote_types(a->dtype, b->dtype, &r)))
		return s;
	return lazy("where", NPT_NODE_EW, NPT_OP_WHERE, 3, in, r, nd, shape, NULL, out);
}

NPT_API npt_status_t npt_tensor_cast(npt_tensor_t *t, npt_dtype_t dt, npt_tensor_t **out)
{
	npt_status_t s;

	if ((s = need_operands("cast", out, 1, t, NULL, NULL)))
		return s;
	if ((unsigned)dt >= NPT_NDTYPES)
		return npt_fail(NPT_E_DTYPE, "cast: invalid dtype code %d", dt);
	return lazy("cast", NPT_NODE_EW, NPT_EW_CAST, 1, &t, dt, t->ndim, t->shape, NULL, out);
}

NPT_API npt_status_t npt_tensor_contiguous(npt_tensor_t *t, npt_tensor_t **out)
{
	npt_status_t s;

	if ((s = need_operands("contiguous", out, 1, t, NULL, NULL)))
		return s;
	if (t->node || (npt_is_contiguous(t) && !t->broadcast)) {
		*out = npt_tensor_retain(t);
		return NPT_OK;
	}
	return lazy("contiguous", NPT_NODE_EW, NPT_EW_COPY, 1, &t, t->dtype, t->ndim, t->shape,
		    NULL, out);
}

/* ---- reductions ---- */

static npt_dtype_t red_dtype(npt_reduce_op_t op, npt_dtype_t d)
{
	switch (op) {
	case NPT_RED_SUM: case NPT_RED_PROD:
		return npt_dtype_is_float(d) ? d : NPT_I64; /* NumPy: u8 -> u64, here i64 */
	case NPT_RED_MEAN:
		return npt_dtype_is_float(d) ? d : NPT_F64;
	default:
		return d;
	}
}

static npt_status_t axes_mask(const char *op, npt_tensor_t *t, int naxes, const int *axes,
			      uint64_t *mask)
{
	npt_status_t s;

	*mask = 0;
	if (naxes < 0 || !axes) {
		*mask = t->ndim ? (~0ull >> (64 - t->ndim)) : 0;
		return NPT_OK;
	}
	/* NumPy 1.24's ufunc reductions take one integer axis 0 or -1 on a 0-d
	 * array (np.sum(np.float64(1), axis=0)); mean does not */
	if (t->ndim == 0 && naxes == 1 && (axes[0] == 0 || axes[0] == -1) &&
	    strcmp(op, "mean"))
		return NPT_OK;
	for (int i = 0; i < naxes; i++) {
		int ax;

		if ((s = npt_normalize_axis(op, axes[i], t->ndim, &ax)))
			return s;
		if (*mask & (1ull << ax))
			return npt_fail(NPT_E_AXIS, "%s: duplicate value in 'axis' (%d)", op, axes[i]);
		*mask |= 1ull << ax;
	}
	return NPT_OK;
}

static npt_status_t make_reduce(npt_reduce_op_t op, npt_tensor_t *t, uint64_t mask, int ond,
				const int64_t *oshape, npt_tensor_t **out)
{
	int64_t rn = 1;
	npt_node_t *n;
	npt_status_t s;

	for (int d = 0; d < t->ndim; d++)
		if (mask & (1ull << d))
			rn *= t->shape[d];
	if (rn == 0 && (op == NPT_RED_MAX || op == NPT_RED_MIN)) {
		char a[NPT_SHAPE_STRLEN];

		return npt_fail(NPT_E_EMPTY, "%s: zero-size array to reduction operation %s which "
				"has no identity (input shape %s, the reduced axes have size 0)",
				npt_reduce_name(op), op == NPT_RED_MAX ? "maximum" : "minimum",
				npt_shape_str(a, sizeof(a), t->ndim, t->shape));
	}
	s = lazy(npt_reduce_name(op), NPT_NODE_REDUCE, op, 1, &t, red_dtype(op, t->dtype), ond,
		 oshape, &n, out);
	if (!s)
		n->axes = mask;
	return s;
}

NPT_API npt_status_t npt_reduce(npt_reduce_op_t op, npt_tensor_t *t, int naxes, const int *axes,
				bool keepdims, npt_tensor_t **out)
{
	uint64_t mask;
	int64_t os[NPT_MAX_DIMS];
	int ond = 0;
	npt_status_t s;

	if (out)
		*out = NULL;
	if ((unsigned)op > NPT_RED_MIN)
		return npt_fail(NPT_E_INVAL, "reduce: unknown reduction %d", op);
	if ((s = need_operands(npt_reduce_name(op), out, 1, t, NULL, NULL)))
		return s;
	if ((s = axes_mask(npt_reduce_name(op), t, naxes, axes, &mask)))
		return s;
	for (int d = 0; d < t->ndim; d++) {
		if (mask & (1ull << d)) {
			if (keepdims)
				os[ond++] = 1;
		} else {
			os[ond++] = t->shape[d];
		}
	}
	return make_reduce(op, t, mask, ond, os, out);
}

NPT_API npt_status_t npt_sum_to_shape(npt_tensor_t *t, int ndim, const int64_t *shape,
				      npt_tensor_t **out)
{
	npt_status_t s;
	uint64_t mask = 0;
	char a[NPT_SHAPE_STRLEN], b[NPT_SHAPE_STRLEN];

	if ((s = need_operands("sum_to_shape", out, 1, t, NULL, NULL)))
		return s;
	if ((s = npt_check_shape("sum_to_shape", ndim, shape, NULL)))
		return s;
	if (ndim > t->ndim)
		goto bad;
	int off = t->ndim - ndim;

	for (int d = 0; d < t->ndim; d++) {
		if (d < off) {
			mask |= 1ull << d;
			continue;
		}
		int64_t want = shape[d - off];

		if (want == t->shape[d])
			continue;
		if (want != 1)
			goto bad;
		mask |= 1ull << d;
	}
	return make_reduce(NPT_RED_SUM, t, mask, ndim, shape, out);
bad:
	return npt_fail(NPT_E_SHAPE, "sum_to_shape: shape %s does not broadcast to the input "
			"shape %s, so the input cannot be summed down to it",
			npt_shape_str(b, sizeof(b), ndim, shape),
			npt_shape_str(a, sizeof(a), t->ndim, t->shape));
}

NPT_API npt_status_t npt_argmax(npt_tensor_t *t, int axis, bool keepdims, npt_tensor_t **out)
{
	npt_status_t s;
	int64_t os[NPT_MAX_DIMS];
	int ond = 0, ax = -1;
	npt_node_t *n;
	int64_t rn;

	if ((s = need_operands("argmax", out, 1, t, NULL, NULL)))
		return s;
	if (t->ndim == 0 && (axis == 0 || axis == -1))
		axis = NPT_AXIS_ALL; /* NumPy 1.24: argmax of a 0-d array along 0 or -1 */
	if (axis != NPT_AXIS_ALL) {
		if ((s = npt_normalize_axis("argmax", axis, t->ndim, &ax)))
			return s;
		rn = t->shape[ax];
	} else {
		rn = npt_tensor_numel(t);
	}
	if (rn == 0)
		return npt_fail(NPT_E_EMPTY, "argmax: attempt to get argmax of an empty sequence "
				"(the reduced axis has size 0)");
	for (int d = 0; d < t->ndim; d++) {
		if (ax < 0 || d == ax) {
			if (keepdims)
				os[ond++] = 1;
		} else {
			os[ond++] = t->shape[d];
		}
	}
	s = lazy("argmax", NPT_NODE_ARGMAX, 0, 1, &t, NPT_I64, ond, os, &n, out);
	if (!s)
		n->axis = ax;
	return s;
}

/* ---- softmax, layernorm, matmul ---- */

NPT_API npt_status_t npt_softmax(npt_tensor_t *t, int axis, npt_tensor_t **out)
{
	npt_status_t s;
	npt_node_t *n;
	int ax;

	if ((s = need_operands("softmax", out, 1, t, NULL, NULL)))
		return s;
	if (!npt_dtype_is_float(t->dtype))
		return npt_fail(NPT_E_DTYPE, "softmax: dtype %s is not supported: floating-point "
				"inputs only (cast first)", npt_dtype_name(t->dtype));
	/* a 0-d tensor is one row of one element along 0 or -1 (as torch, and as
	 * NumPy's max and sum, which softmax is made of, accept those axes) */
	if (t->ndim == 0 && (axis == 0 || axis == -1))
		ax = -1;
	else if ((s = npt_normalize_axis("softmax", axis, t->ndim, &ax)))
		return s;
	s = lazy("softmax", NPT_NODE_SOFTMAX, 0, 1, &t, t->dtype, t->ndim, t->shape, &n, out);
	if (!s)
		n->axis = ax;
	return s;
}

NPT_API npt_status_t npt_layernorm(npt_tensor_t *t, int axis, npt_tensor_t *weight,
				   npt_tensor_t *bias, double eps, npt_tensor_t **out)
{
	npt_status_t s;
	npt_node_t *n;
	npt_tensor_t *in[3] = { t, weight, bias };
	int ax, nd;
	int64_t shape[NPT_MAX_DIMS];
	char a[NPT_SHAPE_STRLEN], b[NPT_SHAPE_STRLEN];

	if ((s = need_operands("layernorm", out, 1, t, NULL, NULL)))
		return s;
	for (int i = 0; i < 3; i++) {
		if (in[i] && !npt_dtype_is_float(in[i]->dtype))
			return npt_fail(NPT_E_DTYPE, "layernorm: %s has dtype %s; floating-point "
					"tensors only (cast first)",
					i == 0 ? "input" : i == 1 ? "weight" : "bias",
					npt_dtype_name(in[i]->dtype));
		if (i && in[i]) {
			npt_tensor_t *pair[2] = { t, in[i] };

			if ((s = npt_broadcast_shapes("layernorm", 2, pair, &nd, shape)))
				return s;
			if (nd != t->ndim || memcmp(shape, t->shape, nd * sizeof(int64_t)))
				return npt_fail(NPT_E_SHAPE, "layernorm: %s of shape %s would "
						"broadcast the input of shape %s; it must broadcast "
						"to the input's shape",
						i == 1 ? "weight" : "bias",
						npt_shape_str(a, sizeof(a), in[i]->ndim, in[i]->shape),
						npt_shape_str(b, sizeof(b), t->ndim, t->shape));
		}
	}
	if ((s = npt_normalize_axis("layernorm", axis, t->ndim, &ax)))
		return s;
	if (!(eps >= 0))
		return npt_fail(NPT_E_VALUE, "layernorm: eps must be >= 0 (got %g)", eps);
	s = lazy("layernorm", NPT_NODE_LAYERNORM, 0, 3, in, t->dtype, t->ndim, t->shape, &n, out);
	if (!s) {
		n->axis = ax;
		n->eps = eps;
	}
	return s;
}

NPT_API npt_status_t npt_matmul(npt_tensor_t *a, npt_tensor_t *b, npt_tensor_t **out)
{
	npt_status_t s;
	npt_tensor_t *in[2] = { a, b };
	char x[NPT_SHAPE_STRLEN], y[NPT_SHAPE_STRLEN];
	npt_dtype_t r;

	if ((s = need_operands("matmul", out, 2, a, b, NULL)))
		return s;
	if (a->ndim == 0 || b->ndim == 0)
		return npt_fail(NPT_E_SHAPE, "matmul: input operand %d does not have enough "
				"dimensions (has 0, needs at least 1); use multiply for scalars",
				a->ndim == 0 ? 0 : 1);
	if ((s = npt_promote_types(a->dtype, b->dtype, &r)))
		return s;
	int64_t k1 = a->shape[a->ndim - 1];
	int64_t k2 = b->ndim == 1 ? b->shape[0] : b->shape[b->ndim - 2];

	if (k1 != k2)
		return npt_fail(NPT_E_SHAPE, "matmul: input operand 1 has a mismatch in its core "
				"dimension 0 (size %lld is different from %lld): shapes %s %s",
				(long long)k2, (long long)k1,
				npt_shape_str(x, sizeof(x), a->ndim, a->shape),
				npt_shape_str(y, sizeof(y), b->ndim, b->shape));
	/* batch dims broadcast */
	int na = a->ndim > 2 ? a->ndim - 2 : 0, nb = b->ndim > 2 ? b->ndim - 2 : 0;
	int nbat = na > nb ? na : nb;
	int64_t shape[NPT_MAX_DIMS + 2];

	for (int d = 0; d < nbat; d++) {
		int ia = d - (nbat - na), ib = d - (nbat - nb);
		int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;

		if (da != db && da != 1 && db != 1)
			return npt_fail(NPT_E_SHAPE, "matmul: batch dimensions of shapes %s and %s "
					"could not be broadcast together (%lld vs %lld)",
					npt_shape_str(x, sizeof(x), a->ndim, a->shape),
					npt_shape_str(y, sizeof(y), b->ndim, b->shape),
					(long long)da, (long long)db);
		shape[d] = da == 1 ? db : da;
	}
	int nd = nbat;

	if (a->ndim >= 2)
		shape[nd++] = a->shape[a->ndim - 2];
	if (b->ndim >= 2)
		shape[nd++] = b->shape[b->ndim - 1];
	return lazy("matmul", NPT_NODE_MATMUL, 0, 2, in, r, nd, shape, NULL, out);
}
