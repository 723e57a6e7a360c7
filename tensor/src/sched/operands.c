/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * operands.c - a node's inputs as its kernel reads them. The GEMM kernels
 * (matmul, linear, attention) say per operand whether they read it as it is
 * or need a C-contiguous copy: to the dtype they compute in, or because BLAS
 * cannot address its strides (stride 0 from broadcasting, negative strides,
 * no unit stride). The scheduler makes such copies here, with the
 * elementwise kernel, so no kernel ever copies or evaluates an operand.
 *
 * Contracts: under the evaluation lock; the inputs are materialised. A copy
 * for the layout is an implicit materialisation: reported (npt_note_
 * materialize) and refused with NPT_E_WOULD_COPY in NPT_EXPAND_VIEW mode; a
 * dtype conversion is neither.
 */
#include "sched.h"

#include <stdlib.h>

npt_status_t npt_sched_copy_into(npt_tensor_t *src, npt_tensor_t *out)
{
	npt_prog_t *p;
	npt_status_t s;

	if (src->packed_only)
		return npt_plain_refused("copy", src);
	if (!(p = malloc(sizeof(*p))))
		return npt_fail(NPT_E_NOMEM, "copy: out of memory");
	npt_prog_single(p, src);
	s = npt_run_prog(p, "copy", out->ndim, out->shape, out);
	npt_prog_release(p);
	free(p);
	return s;
}

npt_status_t npt_sched_copy(npt_tensor_t *src, npt_dtype_t dt, int ndim, const int64_t *shape,
			    npt_tensor_t **out)
{
	npt_tensor_t *c;
	npt_status_t s;

	if ((s = npt_tensor_empty(dt, ndim, shape, &c)))
		return s;
	if ((s = npt_sched_copy_into(src, c))) {
		npt_tensor_free(c);
		return s;
	}
	*out = c;
	return NPT_OK;
}

static npt_operand_t operand_need(const npt_tensor_t *t, int i, const npt_tensor_t *in,
				  npt_dtype_t *dt, const char **what)
{
	switch (t->node->kind) {
	case NPT_NODE_MATMUL: return npt_matmul_operand(t->dtype, i, in, dt, what);
	case NPT_NODE_LINEAR: return npt_linear_operand(i, in, dt, what);
	case NPT_NODE_ATTENTION: return npt_attention_operand(i, in, dt, what);
	default: return NPT_OPERAND_AS_IS;
	}
}

static const char *kind_name(npt_node_kind_t kind)
{
	switch (kind) {
	case NPT_NODE_MATMUL: return "matmul";
	case NPT_NODE_LINEAR: return "linear";
	case NPT_NODE_ATTENTION: return "attention";
	case NPT_NODE_ARGMAX: return "argmax";
	case NPT_NODE_SOFTMAX: return "softmax";
	case NPT_NODE_LAYERNORM: return "layernorm";
	case NPT_NODE_TAKE: return "take";
	default: return "op";
	}
}

npt_status_t npt_kcall_inputs(npt_tensor_t *t, npt_kcall_t *k)
{
	const char *op = kind_name(t->node->kind);
	npt_status_t s;

	k->node = t->node;
	k->nin = t->node->nin;
	for (int i = 0; i < k->nin; i++) {
		npt_tensor_t *in = t->node->in[i];
		const char *what = "an operand";
		npt_dtype_t dt = in ? in->dtype : NPT_F32;
		npt_operand_t need = in ? operand_need(t, i, in, &dt, &what) : NPT_OPERAND_AS_IS;

		if (in && in->packed_only && !(t->node->kind == NPT_NODE_LINEAR && i == 1))
			return npt_plain_refused(op, in);
		if (need == NPT_OPERAND_AS_IS) {
			k->in[i] = npt_tensor_retain(in);
			continue;
		}
		if (need == NPT_OPERAND_COPY && npt_cfg_expand_mode() == NPT_EXPAND_VIEW) {
			char a[NPT_SHAPE_STRLEN];

			return npt_fail(NPT_E_WOULD_COPY, "%s: %s of shape %s has strides BLAS "
					"cannot use (broadcast, negative or non-unit in both dims) "
					"and expansion mode VIEW forbids the copy", op, what,
					npt_shape_str(a, sizeof(a), in->ndim, in->shape));
		}
		if ((s = npt_sched_copy(in, dt, in->ndim, in->shape, &k->in[i])))
			return s;
		if (need == NPT_OPERAND_COPY)
			npt_note_materialize(op, in->ndim, in->shape, in->ndim, in->shape,
					     (size_t)npt_tensor_numel(in) * npt_dtype_size(dt),
					     "BLAS needs one unit stride per matrix");
	}
	return NPT_OK;
}

void npt_kcall_release(npt_kcall_t *k)
{
	for (int i = 0; i < 4; i++) {
		npt_tensor_free(k->in[i]);
		k->in[i] = NULL;
	}
}
