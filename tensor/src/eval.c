/*
 * eval.c - evaluation of lazy graphs: scheduling, buffer planning and the
 * NumPy output rules of npt_tensor_eval_into.
 *
 * npt_eval_locked(t) materialises t: an elementwise root compiles its fused
 * chain (ewise.c) and writes into a fresh pooled buffer, or into the buffer
 * of a dead intermediate leaf of the same size (in-place planning); other
 * nodes evaluate their inputs, then run their kernel. When t's node is freed
 * its inputs are released, so dead intermediates go back to the pool at once
 * and the next allocation in the same evaluation reuses them.
 *
 * Contracts: one evaluation at a time (a global lock; kernels parallelise
 * inside). Every live lazy tensor is on a list; before anything is written
 * into an existing buffer, the lazy tensors that read that memory are
 * evaluated first, so deferred reads never see later writes.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static pthread_mutex_t eval_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lazy_mutex = PTHREAD_MUTEX_INITIALIZER;
static npt_tensor_t *lazy_head;
static uint64_t epoch_counter;

void npt_eval_lock(void)
{
	pthread_mutex_lock(&eval_mutex);
}

void npt_eval_unlock(void)
{
	pthread_mutex_unlock(&eval_mutex);
}

uint64_t npt_eval_epoch(void)
{
	return ++epoch_counter;
}

void npt_lazy_register(npt_tensor_t *t)
{
	pthread_mutex_lock(&lazy_mutex);
	t->lazy_prev = NULL;
	t->lazy_next = lazy_head;
	if (lazy_head)
		lazy_head->lazy_prev = t;
	lazy_head = t;
	pthread_mutex_unlock(&lazy_mutex);
}

void npt_lazy_unregister(npt_tensor_t *t)
{
	pthread_mutex_lock(&lazy_mutex);
	if (t->lazy_prev)
		t->lazy_prev->lazy_next = t->lazy_next;
	else if (lazy_head == t)
		lazy_head = t->lazy_next;
	if (t->lazy_next)
		t->lazy_next->lazy_prev = t->lazy_prev;
	t->lazy_prev = t->lazy_next = NULL;
	pthread_mutex_unlock(&lazy_mutex);
}

int npt_buffers_overlap(const npt_tensor_t *a, const npt_tensor_t *b)
{
	if (!a->buf || !b->buf)
		return 0;
	if (a->buf == b->buf)
		return 1;
	const char *a0 = a->buf->data, *a1 = a0 + a->buf->nbytes;
	const char *b0 = b->buf->data, *b1 = b0 + b->buf->nbytes;

	return a0 < b1 && b0 < a1;
}

/* evaluate every live lazy tensor (not fused in `epoch`) that reads memory
 * overlapping `w` directly */
static npt_status_t flush_readers(npt_tensor_t *w, uint64_t epoch)
{
	for (;;) {
		npt_tensor_t *hit = NULL;

		pthread_mutex_lock(&lazy_mutex);
		for (npt_tensor_t *t = lazy_head; t && !hit; t = t->lazy_next) {
			if ((epoch && t->mark == epoch) || !t->node)
				continue;
			for (int i = 0; i < t->node->nin && !hit; i++)
				if (t->node->in[i] && npt_buffers_overlap(t->node->in[i], w))
					hit = npt_tensor_retain(t);
		}
		pthread_mutex_unlock(&lazy_mutex);
		if (!hit)
			return NPT_OK;
		npt_status_t s = npt_eval_locked(hit);

		npt_tensor_free(hit);
		if (s)
			return s;
	}
}

static void finish(npt_tensor_t *t)
{
	npt_node_t *n = t->node;

	npt_lazy_unregister(t);
	npt_contig_strides(t->ndim, t->shape, t->strides);
	t->offset = 0;
	t->node = NULL;
	npt_node_free(n, t);
}

static npt_status_t alloc_for(npt_tensor_t *t)
{
	int64_t n = npt_tensor_numel(t);

	return npt_buffer_alloc((size_t)n * npt_dtype_size(t->dtype), &t->buf);
}

/* a leaf whose buffer dies with this evaluation and can hold the output */
static npt_tensor_t *dead_leaf(const npt_prog_t *p, npt_tensor_t *t)
{
	size_t need = (size_t)npt_tensor_numel(t) * npt_dtype_size(t->dtype);

	for (int k = 0; k < p->nleaf; k++) {
		npt_tensor_t *l = p->leaf[k];

		/* held only by the program and one node that dies with the root */
		if (!p->leaf_dead[k] || atomic_load(&l->refs) != 2 || !l->buf->owned ||
		    atomic_load(&l->buf->refs) != 1 || l->offset != 0 || !npt_is_contiguous(l) ||
		    l->ndim != t->ndim || memcmp(l->shape, t->shape, t->ndim * sizeof(int64_t)) ||
		    npt_dtype_size(l->dtype) != npt_dtype_size(t->dtype) || l->buf->nbytes != need)
			continue;
		return l;
	}
	return NULL;
}

static npt_status_t eval_ew(npt_tensor_t *t)
{
	npt_prog_t *p = malloc(sizeof(*p));
	npt_status_t s;

	if (!p)
		return npt_fail(NPT_E_NOMEM, "%s: out of memory", npt_op_name(t->node->op));
	s = npt_build_prog(t, p, npt_eval_epoch());
	if (s) {
		npt_prog_release(p);
		free(p);
		return s;
	}
	npt_tensor_t *l = dead_leaf(p, t);

	npt_contig_strides(t->ndim, t->shape, t->strides);
	t->offset = 0;
	if (l) {
		npt_buffer_retain(l->buf);
		t->buf = l->buf;
		npt_stats_add_inplace(l->buf->nbytes);
	} else if ((s = alloc_for(t))) {
		npt_prog_release(p);
		free(p);
		return s;
	}
	s = npt_run_prog(p, npt_op_name(t->node->op), t->ndim, t->shape, t);
	npt_prog_release(p);
	free(p);
	return s;
}

static npt_status_t run_boundary(npt_tensor_t *t, npt_tensor_t *dst)
{
	switch (t->node->kind) {
	case NPT_NODE_REDUCE: return npt_run_reduce(t, dst);
	case NPT_NODE_ARGMAX: return npt_run_argmax(t, dst);
	case NPT_NODE_SOFTMAX: return npt_run_softmax(t, dst);
	case NPT_NODE_LAYERNORM: return npt_run_layernorm(t, dst);
	case NPT_NODE_MATMUL: return npt_run_matmul(t, dst);
	case NPT_NODE_TAKE: return npt_run_take(t, dst);
	case NPT_NODE_LINEAR: return npt_run_linear(t, dst);
	case NPT_NODE_ATTENTION: return npt_run_attention(t, dst);
	default: return npt_fail(NPT_E_INVAL, "internal: unknown node kind %d", t->node->kind);
	}
}

/* does lazy (or materialised) t read memory overlapping out? */
static int graph_overlaps(npt_tensor_t *t, npt_tensor_t *out, int depth)
{
	if (!t->node)
		return npt_buffers_overlap(t, out);
	if (depth > 4096)
		return 1; /* do not recurse forever: assume the worst */
	for (int i = 0; i < t->node->nin; i++)
		if (t->node->in[i] && graph_overlaps(t->node->in[i], out, depth + 1))
			return 1;
	return 0;
}

/* evaluate a boundary node's inputs; a reduction's elementwise input stays
 * lazy: reduce.c fuses it as the reduction's prologue */
static npt_status_t eval_inputs(npt_tensor_t *t)
{
	npt_status_t s;

	for (int i = 0; i < t->node->nin; i++) {
		npt_tensor_t *in = t->node->in[i];

		if (!in)
			continue;
		if (t->node->kind == NPT_NODE_REDUCE && in->node && in->node->kind == NPT_NODE_EW)
			continue;
		if ((s = npt_eval_locked(in)))
			return s;
	}
	return NPT_OK;
}

npt_status_t npt_eval_locked(npt_tensor_t *t)
{
	npt_status_t s;

	if (!t->node)
		return NPT_OK;
	if (t->node->kind == NPT_NODE_EW) {
		s = eval_ew(t);
	} else {
		if ((s = eval_inputs(t)))
			return s;
		npt_contig_strides(t->ndim, t->shape, t->strides);
		t->offset = 0;
		if ((s = alloc_for(t)))
			return s;
		s = run_boundary(t, t);
	}
	if (s) {
		npt_buffer_release(t->buf);
		t->buf = NULL;
		return s;
	}
	finish(t);
	return NPT_OK;
}

NPT_API npt_status_t npt_tensor_eval(npt_tensor_t *t)
{
	npt_status_t s;

	if (!t)
		return npt_fail(NPT_E_INVAL, "eval: tensor is NULL");
	if (!t->node)
		return NPT_OK;
	npt_eval_lock();
	s = npt_eval_locked(t);
	npt_eval_unlock();
	return s;
}

/* ---- eval_into: NumPy's out= rules ---- */

static npt_status_t check_out(const char *op, npt_tensor_t *src, npt_tensor_t *out)
{
	char a[NPT_SHAPE_STRLEN], b[NPT_SHAPE_STRLEN];

	if (out->ndim != src->ndim || memcmp(out->shape, src->shape, out->ndim * sizeof(int64_t)))
		return npt_fail(NPT_E_SHAPE, "%s: non-broadcastable output operand with shape %s "
				"doesn't match the result shape %s (an output is never broadcast)",
				op, npt_shape_str(a, sizeof(a), out->ndim, out->shape),
				npt_shape_str(b, sizeof(b), src->ndim, src->shape));
	if (out->broadcast || npt_has_zero_stride(out))
		return npt_fail(NPT_E_READONLY, "%s: the output of shape %s is a broadcast view "
				"(a stride-0 dimension); writing it would alias elements: write "
				"into a contiguous tensor instead", op,
				npt_shape_str(a, sizeof(a), out->ndim, out->shape));
	if (out->buf && out->buf->readonly)
		return npt_fail(NPT_E_READONLY, "%s: the output tensor is read-only (a borrowed "
				"read-only buffer, e.g. shared weights); write into a tensor you "
				"own", op);
	if (!npt_can_cast_same_kind(src->dtype, out->dtype))
		return npt_fail(NPT_E_DTYPE, "%s: cannot cast the result from %s to the output "
				"dtype %s with casting rule 'same_kind' (as NumPy)", op,
				npt_dtype_name(src->dtype), npt_dtype_name(out->dtype));
	return NPT_OK;
}

static int same_view(const npt_tensor_t *l, const npt_tensor_t *out, int ndim,
		     const int64_t *shape)
{
	int64_t st[NPT_MAX_DIMS];

	if (npt_tensor_ptr(l) != npt_tensor_ptr(out) ||
	    npt_dtype_size(l->dtype) != npt_dtype_size(out->dtype))
		return 0;
	npt_broadcast_strides(l, ndim, shape, st);
	for (int d = 0; d < ndim; d++)
		if (shape[d] > 1 && st[d] != out->strides[d])
			return 0;
	return 1;
}

static npt_status_t copy_into(npt_tensor_t *src, npt_tensor_t *out)
{
	npt_prog_t *p = malloc(sizeof(*p));
	npt_status_t s;

	if (!p)
		return npt_fail(NPT_E_NOMEM, "copy: out of memory");
	npt_prog_single(p, src);
	s = npt_run_prog(p, "copy", out->ndim, out->shape, out);
	npt_prog_release(p);
	free(p);
	return s;
}

static npt_status_t eval_into_locked(npt_tensor_t *src, npt_tensor_t *out)
{
	npt_status_t s;
	const char *op = src->node ? (src->node->kind == NPT_NODE_EW ?
				      npt_op_name(src->node->op) : "eval_into") : "copy";

	if ((s = npt_eval_locked(out)))
		return s;
	if ((s = check_out(op, src, out)))
		return s;
	if (!src->node) {
		if ((s = flush_readers(out, 0)))
			return s;
		if (src->buf == out->buf && same_view(src, out, out->ndim, out->shape))
			return NPT_OK;
		if (npt_buffers_overlap(src, out)) {
			npt_tensor_t *tmp;

			if ((s = npt_tensor_contiguous(src, &tmp)))
				return s;
			if (tmp == src) { /* already contiguous: force a copy */
				npt_tensor_free(tmp);
				if ((s = npt_tensor_empty(src->dtype, src->ndim, src->shape, &tmp)))
					return s;
				if ((s = copy_into(src, tmp))) {
					npt_tensor_free(tmp);
					return s;
				}
			} else if ((s = npt_eval_locked(tmp))) {
				npt_tensor_free(tmp);
				return s;
			}
			s = copy_into(tmp, out);
			npt_tensor_free(tmp);
			return s;
		}
		return copy_into(src, out);
	}
	if (src->node->kind != NPT_NODE_EW) {
		int direct = npt_is_contiguous(out) && out->dtype == src->dtype && out->offset >= 0;

		if ((s = eval_inputs(src)))
			return s;
		for (int i = 0; i < src->node->nin && direct; i++)
			if (src->node->in[i] && graph_overlaps(src->node->in[i], out, 0))
				direct = 0;
		if ((s = flush_readers(out, 0)))
			return s;
		if (direct)
			return run_boundary(src, out);
		if ((s = npt_eval_locked(src)))
			return s;
		return copy_into(src, out);
	}
	/* elementwise: fuse the whole chain into the write */
	npt_prog_t *p = malloc(sizeof(*p));
	uint64_t ep = npt_eval_epoch();

	if (!p)
		return npt_fail(NPT_E_NOMEM, "%s: out of memory", op);
	src->mark = ep;
	if ((s = npt_build_prog(src, p, ep)))
		goto done;
	if ((s = flush_readers(out, ep)))
		goto done;
	int hazard = 0;

	for (int k = 0; k < p->nleaf && !hazard; k++)
		if (npt_buffers_overlap(p->leaf[k], out) &&
		    !same_view(p->leaf[k], out, out->ndim, out->shape))
			hazard = 1;
	if (!hazard) {
		s = npt_run_prog(p, op, out->ndim, out->shape, out);
	} else {
		npt_tensor_t *tmp;

		if (!(s = npt_tensor_empty(src->dtype, src->ndim, src->shape, &tmp))) {
			if (!(s = npt_run_prog(p, op, tmp->ndim, tmp->shape, tmp)))
				s = copy_into(tmp, out);
			npt_tensor_free(tmp);
		}
	}
done:
	npt_prog_release(p);
	free(p);
	return s;
}

NPT_API npt_status_t npt_tensor_eval_into(npt_tensor_t *src, npt_tensor_t *out)
{
	npt_status_t s;

	if (!src || !out)
		return npt_fail(NPT_E_INVAL, "eval_into: NULL tensor");
	npt_eval_lock();
	s = eval_into_locked(src, out);
	npt_eval_unlock();
	return s;
}
