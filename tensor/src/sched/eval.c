/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * eval.c - the scheduler: evaluation of lazy graphs, buffer planning and the
 * NumPy output rules of npt_tensor_eval_into.
 *
 * npt_eval_locked(t) materialises t. An elementwise root has its fused
 * chain planned (fuse.c), the chain's leaves materialised in order, and the
 * program run (kernels/ewise.c) into a fresh pooled buffer, or into the
 * buffer of a dead intermediate leaf of the same size (in-place planning).
 * Any other node has its inputs materialised first (the elementwise input of
 * a reduction, softmax or layernorm is planned as its prologue instead,
 * computed block by block or row by row inside the kernel), laid out as its kernel asks (operands.c), an output allocated,
 * then its kernel called with those buffers. When t's node is freed its
 * inputs are released, so dead intermediates go back to the pool at once
 * and the next allocation in the same evaluation reuses them.
 *
 * Contracts: one evaluation at a time (a global lock; kernels parallelise
 * inside); the thread count changes only between evaluations. Every live
 * lazy tensor is on a list (core/tensor.c); before anything is written
 * into an existing buffer, the lazy tensors that read that memory are
 * evaluated first, so deferred reads never see later writes.
 */
#include "sched.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t eval_mutex = PTHREAD_MUTEX_INITIALIZER;
static uint64_t epoch_counter;
static uint64_t walk_counter;	/* graph walks: each marks what it reached (tensor->walk) */

/* an explicit stack of @n elements of @size at @st (first @local, of @cap
 * elements) made twice as big; NULL when out of memory (@st kept) */
static void *stack_grow(void *st, void *local, size_t *cap, size_t n, size_t size)
{
	void *ns = malloc(2 * *cap * size);

	if (!ns)
		return NULL;
	memcpy(ns, st, n * size);
	if (st != local)
		free(st);
	*cap *= 2;
	return ns;
}

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

/* evaluate every live lazy tensor (not fused in `epoch`) that reads memory
 * overlapping `w` directly */
static npt_status_t flush_readers(npt_tensor_t *w, uint64_t epoch)
{
	for (;;) {
		npt_tensor_t *hit = npt_lazy_reader_of(w, epoch);

		if (!hit)
			return NPT_OK;
		npt_status_t s = npt_eval_locked(hit);

		npt_tensor_free(hit);
		if (s)
			return s;
	}
}

static npt_status_t alloc_for(npt_tensor_t *t)
{
	int64_t n = npt_tensor_numel(t);

	return npt_buffer_alloc((size_t)n * npt_dtype_size(t->dtype), &t->buf);
}

/* a leaf whose buffer dies with this evaluation and can hold the output */
static npt_tensor_t *dead_leaf(const npt_prog_t *p, npt_tensor_t *t)
{
	size_t bytes = (size_t)npt_tensor_numel(t) * npt_dtype_size(t->dtype);

	for (int k = 0; k < p->nleaf; k++) {
		npt_tensor_t *l = p->leaf[k];

		/* held only by the program and one node that dies with the root */
		if (!p->leaf_dead[k] || atomic_load(&l->refs) != 2 || !l->buf->owned ||
		    atomic_load(&l->buf->refs) != 1 || l->offset != 0 || !npt_is_contiguous(l) ||
		    l->ndim != t->ndim || memcmp(l->shape, t->shape, t->ndim * sizeof(int64_t)) ||
		    npt_dtype_size(l->dtype) != npt_dtype_size(t->dtype) || l->buf->nbytes != bytes)
			continue;
		return l;
	}
	return NULL;
}

/*
 * The fused program of lazy elementwise @root: planned, then its leaves
 * materialised in order (in expansion mode MATERIALIZE, a leaf broadcast to
 * the root's bigger shape is copied out at that shape first). A leaf whose
 * buffer nothing outlives this evaluation holds is marked dead.
 */
static npt_status_t plan_prog(npt_tensor_t *root, npt_prog_t *p, uint64_t epoch)
{
	npt_status_t s = npt_fuse_plan(root, p, epoch);

	for (int k = 0; k < p->nleaf && !s; k++) {
		npt_tensor_t *l = p->leaf[k], *c;

		if ((s = npt_eval_locked(l)))
			break;
		if (l->packed_only) {
			s = npt_plain_refused(npt_op_name(root->node->op), l);
			break;
		}
		if (npt_cfg_expand_mode() != NPT_EXPAND_MATERIALIZE ||
		    (l->ndim == root->ndim && !memcmp(l->shape, root->shape,
						      l->ndim * sizeof(int64_t)))) {
			p->leaf_dead[k] = p->leaf_excl[k] && atomic_load(&l->refs) == 2;
			continue;
		}
		if ((s = npt_sched_copy(l, l->dtype, root->ndim, root->shape, &c)))
			break;
		npt_note_materialize(npt_op_name(root->node->op), l->ndim, l->shape, root->ndim,
				     root->shape, (size_t)npt_tensor_numel(c) *
				     npt_dtype_size(c->dtype), "expansion mode MATERIALIZE");
		npt_tensor_free(l);
		p->leaf[k] = c;
		p->leaf_dead[k] = 0;
	}
	return s;
}

static npt_status_t eval_ew(npt_tensor_t *t)
{
	npt_prog_t *p = malloc(sizeof(*p));
	npt_status_t s;

	if (!p)
		return npt_fail(NPT_E_NOMEM, "%s: out of memory", npt_op_name(t->node->op));
	s = plan_prog(t, p, npt_eval_epoch());
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

/* does node @t read its input 0 as a prologue (an elementwise chain computed
 * inside its kernel, never stored)? a reduction always (a plain read at
 * least), softmax and layernorm when that input is a lazy elementwise chain */
static int prologue_input(const npt_tensor_t *t)
{
	const npt_tensor_t *x = t->node->in[0];
	int ew = x && x->node && x->node->kind == NPT_NODE_EW;

	switch (t->node->kind) {
	case NPT_NODE_REDUCE: return 1;
	case NPT_NODE_SOFTMAX:
	case NPT_NODE_LAYERNORM: return ew;
	default: return 0;
	}
}

/* the name a node's errors go by: its reduction's, softmax, layernorm, its op's */
static const char *node_name(const npt_node_t *n)
{
	switch (n->kind) {
	case NPT_NODE_REDUCE: return npt_reduce_name(n->op);
	case NPT_NODE_SOFTMAX: return "softmax";
	case NPT_NODE_LAYERNORM: return "layernorm";
	default: return npt_op_name(n->op);
	}
}

/* a node's input 0 as a program: its elementwise chain (computed block by
 * block, never stored) or a plain read of the materialised input; @op names
 * the consumer in a refusal */
static npt_status_t input_program(npt_tensor_t *x, npt_prog_t *p, const char *op)
{
	npt_status_t s;

	if (x->node && x->node->kind == NPT_NODE_EW)
		return plan_prog(x, p, npt_eval_epoch());
	if ((s = npt_eval_locked(x)))
		return s;
	if (x->packed_only)
		return npt_plain_refused(op, x);
	npt_prog_single(p, x);
	return NPT_OK;
}

static npt_status_t dispatch(const npt_kcall_t *k)
{
	switch (k->node->kind) {
	case NPT_NODE_REDUCE: return npt_run_reduce(k);
	case NPT_NODE_ARGMAX: return npt_run_argmax(k);
	case NPT_NODE_SOFTMAX: return npt_run_softmax(k);
	case NPT_NODE_LAYERNORM: return npt_run_layernorm(k);
	case NPT_NODE_MATMUL: return npt_run_matmul(k);
	case NPT_NODE_TAKE: return npt_run_take(k);
	case NPT_NODE_LINEAR: return npt_run_linear(k);
	case NPT_NODE_ATTENTION: return npt_run_attention(k);
	default: return npt_fail(NPT_E_INVAL, "internal: unknown node kind %d", k->node->kind);
	}
}

/* run boundary node @t (its inputs materialised, but a reduction's
 * elementwise one) into @dst, a C-contiguous buffer that overlaps no input */
static npt_status_t run_boundary(npt_tensor_t *t, npt_tensor_t *dst)
{
	npt_kcall_t k = { .out = dst };
	npt_prog_t *p = NULL;
	npt_status_t s;

	if (prologue_input(t)) {
		npt_tensor_t *x = t->node->in[0];

		if (!(p = calloc(1, sizeof(*p))))
			return npt_fail(NPT_E_NOMEM, "out of memory");
		k.prologue = p;
		k.in_ndim = x->ndim;
		k.in_shape = x->shape;
		if (!(s = input_program(x, p, node_name(t->node))) &&
		    (s = npt_kcall_inputs(t, &k)) == NPT_OK) {
			npt_tensor_free(k.in[0]);	/* read through the prologue */
			k.in[0] = NULL;
		}
	} else {
		s = npt_kcall_inputs(t, &k);
	}
	if (!s)
		s = dispatch(&k);
	npt_kcall_release(&k);
	if (p) {
		npt_prog_release(p);
		free(p);
	}
	return s;
}

/* does lazy (or materialised) @t read memory overlapping @out? Iterative,
 * each tensor once: a graph that shares subexpressions (y = x * 0.5;
 * x = y + y, 40 times) has 2^40 paths but 80 nodes */
static int graph_overlaps(npt_tensor_t *t, npt_tensor_t *out)
{
	npt_tensor_t *local[64], **st = local;
	size_t n = 0, cap = 64;
	uint64_t w = ++walk_counter;
	int hit = 0;

	t->walk = w;
	st[n++] = t;
	while (n && !hit) {
		npt_tensor_t *x = st[--n];

		if (!x->node) {
			hit = npt_buffers_overlap(x, out);
			continue;
		}
		for (int i = 0; i < x->node->nin && !hit; i++) {
			npt_tensor_t *in = x->node->in[i], **ns;

			if (!in || in->walk == w)
				continue;
			in->walk = w;
			if (n == cap) {
				if (!(ns = stack_grow(st, local, &cap, n, sizeof(*st)))) {
					hit = 1;	/* out of memory: assume the worst */
					break;
				}
				st = ns;
			}
			st[n++] = in;
		}
	}
	if (st != local)
		free(st);
	return hit;
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
		if (i == 0 && prologue_input(t) && in->node)
			continue;	/* computed inside the kernel (run_boundary) */
		if ((s = npt_eval_locked(in)))
			return s;
	}
	return NPT_OK;
}

/*
 * Deep graphs. Evaluation recurses once per fused program or boundary node on
 * the path below a node, so a long lazy chain (a loop that adds to a tensor
 * 10^6 times, or 10^5 reductions of reductions) would overflow the stack.
 * Before a top-level evaluation, an iterative walk over the lazy graph below
 * the root visits nodes children first and evaluates every node whose
 * unevaluated part below is EVAL_MAX_HEIGHT nodes high: what remains below
 * any node is then lower than that, and so is the recursion. A graph of
 * ordinary depth is not touched (the walk only measures it).
 */
#define EVAL_MAX_HEIGHT 512

static int eval_nesting;	/* under eval_mutex: recursion depth of npt_eval_locked */

static npt_status_t eval_node(npt_tensor_t *t);

struct walk_frame {
	npt_tensor_t *t;
	int next;		/* next input to visit */
};

static npt_status_t eval_deep_parts(npt_tensor_t *root)
{
	struct walk_frame local[64], *st = local;
	size_t n = 0, cap = 64;
	uint64_t w = ++walk_counter;
	npt_status_t s = NPT_OK;

	root->walk = w;
	st[n++] = (struct walk_frame){ root, 0 };
	while (n && !s) {
		struct walk_frame *f = &st[n - 1];
		npt_node_t *node = f->t->node;

		if (f->next < node->nin) {
			npt_tensor_t *in = node->in[f->next++];

			if (!in || !in->node || in->walk == w)
				continue;
			in->walk = w;
			if (n == cap) {
				struct walk_frame *ns = stack_grow(st, local, &cap, n, sizeof(*st));

				if (!ns) {
					s = npt_fail(NPT_E_NOMEM, "eval: out of memory walking a "
						     "lazy graph of %zu levels", n);
					break;
				}
				st = ns;
			}
			st[n++] = (struct walk_frame){ in, 0 };
			continue;
		}
		/* every input done: inputs evaluated on the way are leaves now */
		npt_tensor_t *t = f->t;
		int64_t h = 0;

		for (int i = 0; i < node->nin; i++)
			if (node->in[i] && node->in[i]->node && node->in[i]->height + 1 > h)
				h = node->in[i]->height + 1;
		t->height = h;
		n--;
		if (h >= EVAL_MAX_HEIGHT && t != root)
			s = eval_node(t);	/* settles t: its parents read it as a leaf */
	}
	if (st != local)
		free(st);
	return s;
}

npt_status_t npt_eval_locked(npt_tensor_t *t)
{
	npt_status_t s;

	if (!t->node)
		return NPT_OK;
	eval_nesting++;
	s = eval_nesting == 1 ? eval_deep_parts(t) : NPT_OK;
	if (!s)
		s = eval_node(t);
	eval_nesting--;
	return s;
}

static npt_status_t eval_node(npt_tensor_t *t)
{
	npt_status_t s;

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
	npt_tensor_settle(t);
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
	if (out->packed_only)
		return npt_fail(NPT_E_READONLY, "%s: the output is a [%lld, %lld] weight that exists "
				"only in its packed layout (npt_tensor_from_packed): it has no "
				"elements to write; write into a tensor you own", op,
				(long long)out->shape[0], (long long)out->shape[1]);
	if (npt_has_zero_stride(out))
		return npt_fail(NPT_E_READONLY, "%s: the output of shape %s is a broadcast view "
				"(a stride-0 dimension); writing it would alias elements: write "
				"into a contiguous tensor instead", op,
				npt_shape_str(a, sizeof(a), out->ndim, out->shape));
	if (out->broadcast)
		return npt_fail(NPT_E_READONLY, "%s: the output of shape %s is a broadcast "
				"view (broadcast_to/expand) or a view of one, read-only as NumPy's: write "
				"into the tensor that was broadcast, or a copy (contiguous())", op,
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

			if ((s = npt_sched_copy(src, src->dtype, src->ndim, src->shape, &tmp)))
				return s;
			s = npt_sched_copy_into(tmp, out);
			npt_tensor_free(tmp);
			return s;
		}
		return npt_sched_copy_into(src, out);
	}
	if (src->node->kind != NPT_NODE_EW) {
		int direct = npt_is_contiguous(out) && out->dtype == src->dtype && out->offset >= 0;

		if ((s = eval_inputs(src)))
			return s;
		for (int i = 0; i < src->node->nin && direct; i++)
			if (src->node->in[i] && graph_overlaps(src->node->in[i], out))
				direct = 0;
		if ((s = flush_readers(out, 0)))
			return s;
		if (direct)
			return run_boundary(src, out);
		if ((s = npt_eval_locked(src)))
			return s;
		return npt_sched_copy_into(src, out);
	}
	/* elementwise: fuse the whole chain into the write */
	npt_prog_t *p = malloc(sizeof(*p));
	uint64_t ep = npt_eval_epoch();

	if (!p)
		return npt_fail(NPT_E_NOMEM, "%s: out of memory", op);
	src->mark = ep;
	if ((s = plan_prog(src, p, ep)))
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
				s = npt_sched_copy_into(tmp, out);
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
		return npt_fail(NPT_E_INVAL, "eval_into: the %s tensor is NULL",
				src ? "output" : "source");
	npt_eval_lock();
	s = eval_into_locked(src, out);
	npt_eval_unlock();
	return s;
}

NPT_API npt_status_t npt_tensor_data(npt_tensor_t *t, void **ptr)
{
	npt_status_t s;

	if (!t || !ptr)
		return npt_fail(NPT_E_INVAL, "data: %s is NULL", t ? "ptr" : "the tensor");
	if ((s = npt_tensor_eval(t)))
		return s;
	if (t->packed_only)
		return npt_plain_refused("data", t);
	*ptr = npt_tensor_ptr(t);
	return NPT_OK;
}

NPT_API npt_status_t npt_set_num_threads(int n)
{
	if (n < 0 || n > 256)
		return npt_fail(NPT_E_INVAL, "set_num_threads: %d threads requested; use 1..256, "
				"or 0 for the number of online CPUs", n);
	if (n == 0)
		n = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1)
		n = 1;
	npt_eval_lock();
	npt_pool_set_threads(n);
	npt_eval_unlock();
	return NPT_OK;
}
