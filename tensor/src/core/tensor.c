/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * tensor.c - tensor handles: creation over owned or borrowed buffers,
 * reference counting, lazy nodes, the list of live lazy tensors, and
 * introspection.
 *
 * Contracts: a handle is shared by reference count (atomic); freeing the
 * last reference of a lazy tensor frees its graph node (dropping its inputs)
 * and takes it off the list of live lazy tensors; freeing a materialised one
 * drops its buffer reference. Every lazy tensor is on that list from its
 * creation until it is freed or evaluated, so the scheduler can find the
 * deferred reads of a buffer before writing into it.
 */
#include "core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t lazy_mutex = PTHREAD_MUTEX_INITIALIZER;
static npt_tensor_t *lazy_head;

static void lazy_register(npt_tensor_t *t)
{
	pthread_mutex_lock(&lazy_mutex);
	t->lazy_prev = NULL;
	t->lazy_next = lazy_head;
	if (lazy_head)
		lazy_head->lazy_prev = t;
	lazy_head = t;
	pthread_mutex_unlock(&lazy_mutex);
}

static void lazy_unregister(npt_tensor_t *t)
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

npt_tensor_t *npt_lazy_reader_of(const npt_tensor_t *w, uint64_t epoch)
{
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
	return hit;
}

static npt_tensor_t *tensor_struct(npt_dtype_t dt, int ndim, const int64_t *shape)
{
	npt_tensor_t *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	atomic_init(&t->refs, 1);
	t->dtype = dt;
	t->ndim = ndim;
	if (ndim)
		memcpy(t->shape, shape, ndim * sizeof(int64_t));
	npt_contig_strides(ndim, shape, t->strides);
	return t;
}

static npt_status_t check_dtype(const char *op, npt_dtype_t dt)
{
	if ((unsigned)dt >= NPT_NDTYPES)
		return npt_fail(NPT_E_DTYPE, "%s: invalid dtype code %d (use an npt_dtype_t)", op, dt);
	return NPT_OK;
}

/* npt_tensor_empty, its errors in the words of @op (empty or zeros) */
static npt_status_t tensor_new(const char *op, npt_dtype_t dt, int ndim, const int64_t *shape,
			       npt_tensor_t **out)
{
	int64_t n;
	npt_status_t s;

	if (!out)
		return npt_fail(NPT_E_INVAL, "%s: out is NULL", op);
	*out = NULL;
	if ((s = check_dtype(op, dt)) || (s = npt_check_shape(op, ndim, shape, &n)))
		return s;
	npt_tensor_t *t = tensor_struct(dt, ndim, shape);

	if (!t)
		return npt_fail(NPT_E_NOMEM, "%s: out of memory", op);
	s = npt_buffer_alloc((size_t)n * npt_dtype_size(dt), &t->buf);
	if (s) {
		free(t);
		return s;
	}
	*out = t;
	return NPT_OK;
}

NPT_API npt_status_t npt_tensor_empty(npt_dtype_t dt, int ndim, const int64_t *shape,
				      npt_tensor_t **out)
{
	return tensor_new("empty", dt, ndim, shape, out);
}

NPT_API npt_status_t npt_tensor_zeros(npt_dtype_t dt, int ndim, const int64_t *shape,
				      npt_tensor_t **out)
{
	npt_status_t s = tensor_new("zeros", dt, ndim, shape, out);

	if (!s)
		memset((*out)->buf->data, 0, (*out)->buf->nbytes);
	return s;
}

npt_status_t npt_tensor_wrap(const char *op, void *data, npt_dtype_t dt, int ndim,
			     const int64_t *shape, const int64_t *strides, unsigned flags,
			     void (*release)(void *), void *release_arg, npt_tensor_t **out)
{
	int64_t n;
	npt_status_t s;

	if (!out)
		return npt_fail(NPT_E_INVAL, "%s: out is NULL", op);
	*out = NULL;
	if ((s = check_dtype(op, dt)) || (s = npt_check_shape(op, ndim, shape, &n)))
		return s;
	if (flags & ~NPT_BORROW_READONLY)
		return npt_fail(NPT_E_INVAL, "%s: unknown flag bits 0x%x (only "
				"NPT_BORROW_READONLY is defined)", op, flags & ~NPT_BORROW_READONLY);
	if (!data && n)
		return npt_fail(NPT_E_INVAL, "%s: data is NULL for %lld elements", op,
				(long long)n);
	npt_tensor_t *t = tensor_struct(dt, ndim, shape);

	if (!t)
		return npt_fail(NPT_E_NOMEM, "%s: out of memory", op);
	if (strides)
		memcpy(t->strides, strides, ndim * sizeof(int64_t));
	int64_t lo = 0, hi = 0;

	for (int i = 0; i < ndim && n; i++) {
		int64_t e;

		if (__builtin_mul_overflow(shape[i] - 1, t->strides[i], &e) ||
		    __builtin_add_overflow(e < 0 ? lo : hi, e, e < 0 ? &lo : &hi) ||
		    lo < -NPT_MAX_NUMEL || hi > NPT_MAX_NUMEL) {
			long long st = t->strides[i];

			free(t);
			return npt_fail(NPT_E_OVERFLOW, "%s: strides overflow the address "
					"range (axis %d stride %lld)", op, i, st);
		}
	}
	size_t isz = npt_dtype_size(dt);

	t->buf = npt_buffer_borrow((char *)data + lo * (int64_t)isz,
				   n ? (size_t)(hi - lo + 1) * isz : 0,
				   !!(flags & NPT_BORROW_READONLY), release, release_arg);
	if (!t->buf) {
		free(t);
		return npt_fail(NPT_E_NOMEM, "%s: out of memory", op);
	}
	t->offset = -lo;
	*out = t;
	return NPT_OK;
}

NPT_API npt_status_t npt_tensor_from_data(void *data, npt_dtype_t dt, int ndim,
					  const int64_t *shape, const int64_t *strides,
					  unsigned flags, void (*release)(void *),
					  void *release_arg, npt_tensor_t **out)
{
	return npt_tensor_wrap("from_data", data, dt, ndim, shape, strides, flags, release,
			       release_arg, out);
}

NPT_API npt_tensor_t *npt_tensor_retain(npt_tensor_t *t)
{
	if (t)
		atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
	return t;
}

/* Frees iteratively: dropping the last reference of a long lazy chain frees
 * its nodes' inputs through an explicit stack, not by recursion. */
NPT_API void npt_tensor_free(npt_tensor_t *t)
{
	npt_tensor_t *local[64], **stack = local;
	size_t n = 0, cap = 64;

	if (!t || atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1)
		return;
	stack[n++] = t;
	while (n) {
		npt_tensor_t *d = stack[--n];
		npt_node_t *node = d->node;

		if (node) {
			lazy_unregister(d);
			for (int i = 0; i < node->nin; i++) {
				npt_tensor_t *in = node->in[i];

				if (!in || atomic_fetch_sub_explicit(&in->refs, 1,
								     memory_order_acq_rel) != 1)
					continue;
				if (n == cap) {
					npt_tensor_t **ns = malloc(2 * cap * sizeof(*ns));

					if (!ns) { /* out of memory: fall back to recursion */
						atomic_store(&in->refs, 1);
						npt_tensor_free(in);
						continue;
					}
					memcpy(ns, stack, n * sizeof(*ns));
					if (stack != local)
						free(stack);
					stack = ns;
					cap *= 2;
				}
				stack[n++] = in;
			}
			free(node);
		}
		npt_buffer_release(d->buf);
		free(d->packed_md);
		free(d);
	}
	if (stack != local)
		free(stack);
}

npt_node_t *npt_node_new(npt_node_kind_t kind, int op)
{
	npt_node_t *n = calloc(1, sizeof(*n));

	if (n) {
		n->kind = kind;
		n->op = op;
	}
	return n;
}

/* a lazy tensor evaluated into its buffer: its node goes, with its inputs */
void npt_tensor_settle(npt_tensor_t *t)
{
	npt_node_t *n = t->node;

	lazy_unregister(t);
	npt_contig_strides(t->ndim, t->shape, t->strides);
	t->offset = 0;
	t->node = NULL;
	npt_node_free(n);
}

void npt_node_free(npt_node_t *n)
{
	if (!n)
		return;
	for (int i = 0; i < n->nin; i++)
		npt_tensor_free(n->in[i]);
	free(n);
}

npt_status_t npt_tensor_new_lazy(npt_dtype_t dt, int ndim, const int64_t *shape, npt_node_t *node,
				 npt_tensor_t **out)
{
	npt_tensor_t *t = tensor_struct(dt, ndim, shape);

	if (!t) {
		npt_node_free(node);
		return npt_fail(NPT_E_NOMEM, "out of memory building a graph node");
	}
	t->node = node;
	lazy_register(t);
	*out = t;
	return NPT_OK;
}

/* a NULL tensor: no dtype, rank -1, no shape, nothing in it (as is_writable) */
NPT_API npt_dtype_t npt_tensor_dtype(const npt_tensor_t *t) { return t ? t->dtype : NPT_NDTYPES; }
NPT_API int npt_tensor_ndim(const npt_tensor_t *t) { return t ? t->ndim : -1; }
NPT_API const int64_t *npt_tensor_shape(const npt_tensor_t *t) { return t ? t->shape : NULL; }
NPT_API const int64_t *npt_tensor_strides(const npt_tensor_t *t) { return t ? t->strides : NULL; }
NPT_API int64_t npt_tensor_offset(const npt_tensor_t *t) { return t ? t->offset : 0; }
NPT_API int64_t npt_tensor_numel(const npt_tensor_t *t)
{
	return t ? npt_numel(t->ndim, t->shape) : 0;
}
NPT_API bool npt_tensor_is_lazy(const npt_tensor_t *t) { return t && t->node; }

NPT_API bool npt_tensor_is_writable(const npt_tensor_t *t)
{
	if (!t || t->broadcast || npt_has_zero_stride(t))
		return false;
	return t->node || !t->buf->readonly;
}

NPT_API bool npt_tensor_shares_buffer(const npt_tensor_t *a, const npt_tensor_t *b)
{
	return a && b && a->buf && a->buf == b->buf;
}

npt_status_t npt_plain_refused(const char *op, const npt_tensor_t *t)
{
	return npt_fail(NPT_E_UNSUPPORTED, "%s: this [%lld, %lld] weight exists only in its packed "
			"layout (npt_tensor_from_packed): npt_linear reads it as its weight, nothing "
			"else can read its elements (unpack it with npt_unpack_weight)", op,
			(long long)t->shape[0], (long long)t->shape[1]);
}
