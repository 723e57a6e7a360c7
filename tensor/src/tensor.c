/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * tensor.c - tensor handles: creation over owned or borrowed buffers,
 * reference counting, introspection, and the helpers every op uses
 * (shape checks, broadcasting, axis normalisation).
 *
 * Contracts: a handle is shared by reference count (atomic); freeing the
 * last reference of a lazy tensor frees its graph node (dropping its inputs)
 * and unregisters it from its inputs' buffers; freeing a materialised one
 * drops its buffer reference. Shapes are validated here: rank <= 32, dims
 * >= 0, element and byte counts that fit in int64.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t npt_numel(int ndim, const int64_t *shape)
{
	int64_t n = 1;

	for (int i = 0; i < ndim; i++)
		n *= shape[i];
	return n;
}

void npt_contig_strides(int ndim, const int64_t *shape, int64_t *strides)
{
	int64_t s = 1;

	for (int i = ndim - 1; i >= 0; i--) {
		strides[i] = s;
		s *= shape[i] > 1 ? shape[i] : 1;
	}
}

npt_status_t npt_check_shape(const char *op, int ndim, const int64_t *shape, int64_t *numel)
{
	int64_t nz = 1;
	int zero = 0;

	if (ndim < 0 || ndim > NPT_MAX_DIMS)
		return npt_fail(NPT_E_RANK, "%s: rank %d is not supported: tensors have at most %d "
				"dimensions (NPT_MAX_DIMS, as NumPy)", op, ndim, NPT_MAX_DIMS);
	if (ndim && !shape)
		return npt_fail(NPT_E_INVAL, "%s: shape is NULL for rank %d", op, ndim);
	for (int i = 0; i < ndim; i++)
		if (shape[i] < 0)
			return npt_fail(NPT_E_INVAL, "%s: negative dimension %lld at axis %d; "
					"dimensions must be >= 0", op, (long long)shape[i], i);
	/* as NumPy: a zero dimension does not excuse the others, whose product
	 * must stay within the size limit too ("array is too big") */
	for (int i = 0; i < ndim; i++) {
		if (!shape[i]) {
			zero = 1;
			continue;
		}
		if (__builtin_mul_overflow(nz, shape[i], &nz) || nz > NPT_MAX_NUMEL) {
			char s[NPT_SHAPE_STRLEN];

			return npt_fail(NPT_E_OVERFLOW, "%s: shape %s is too big: its nonzero "
					"dimensions multiply to more than 2^59 - 1 elements, so "
					"sizes in bytes would overflow a 64-bit integer (NumPy: "
					"\"array is too big\")", op,
					npt_shape_str(s, sizeof(s), ndim, shape));
		}
	}
	if (numel)
		*numel = zero ? 0 : nz;
	return NPT_OK;
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

NPT_API npt_status_t npt_tensor_empty(npt_dtype_t dt, int ndim, const int64_t *shape,
				      npt_tensor_t **out)
{
	int64_t n;
	npt_status_t s;

	if (!out)
		return npt_fail(NPT_E_INVAL, "empty: out is NULL");
	*out = NULL;
	if ((s = check_dtype("empty", dt)) || (s = npt_check_shape("empty", ndim, shape, &n)))
		return s;
	npt_tensor_t *t = tensor_struct(dt, ndim, shape);

	if (!t)
		return npt_fail(NPT_E_NOMEM, "empty: out of memory");
	s = npt_buffer_alloc((size_t)n * npt_dtype_size(dt), &t->buf);
	if (s) {
		free(t);
		return s;
	}
	*out = t;
	return NPT_OK;
}

NPT_API npt_status_t npt_tensor_zeros(npt_dtype_t dt, int ndim, const int64_t *shape,
				      npt_tensor_t **out)
{
	npt_status_t s = npt_tensor_empty(dt, ndim, shape, out);

	if (!s)
		memset((*out)->buf->data, 0, (*out)->buf->nbytes);
	return s;
}

NPT_API npt_status_t npt_tensor_from_data(void *data, npt_dtype_t dt, int ndim,
					  const int64_t *shape, const int64_t *strides,
					  unsigned flags, void (*release)(void *),
					  void *release_arg, npt_tensor_t **out)
{
	int64_t n;
	npt_status_t s;

	if (!out)
		return npt_fail(NPT_E_INVAL, "from_data: out is NULL");
	*out = NULL;
	if ((s = check_dtype("from_data", dt)) || (s = npt_check_shape("from_data", ndim, shape, &n)))
		return s;
	if (flags & ~NPT_BORROW_READONLY)
		return npt_fail(NPT_E_INVAL, "from_data: unknown flag bits 0x%x (only "
				"NPT_BORROW_READONLY is defined)", flags & ~NPT_BORROW_READONLY);
	if (!data && n)
		return npt_fail(NPT_E_INVAL, "from_data: data is NULL for %lld elements",
				(long long)n);
	npt_tensor_t *t = tensor_struct(dt, ndim, shape);

	if (!t)
		return npt_fail(NPT_E_NOMEM, "from_data: out of memory");
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
			return npt_fail(NPT_E_OVERFLOW, "from_data: strides overflow the address "
					"range (axis %d stride %lld)", i, st);
		}
	}
	size_t isz = npt_dtype_size(dt);

	t->buf = npt_buffer_borrow((char *)data + lo * (int64_t)isz,
				   n ? (size_t)(hi - lo + 1) * isz : 0,
				   !!(flags & NPT_BORROW_READONLY), release, release_arg);
	if (!t->buf) {
		free(t);
		return npt_fail(NPT_E_NOMEM, "from_data: out of memory");
	}
	t->offset = -lo;
	*out = t;
	return NPT_OK;
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
			npt_lazy_unregister(d);
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

void npt_node_free(npt_node_t *n, npt_tensor_t *owner)
{
	(void)owner; /* the tensor the node computed; kept for symmetry with callers */
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
		npt_node_free(node, NULL);
		return npt_fail(NPT_E_NOMEM, "out of memory building a graph node");
	}
	t->node = node;
	npt_lazy_register(t);
	*out = t;
	return NPT_OK;
}

char *npt_tensor_ptr(const npt_tensor_t *t)
{
	return t->buf->data + t->offset * (int64_t)npt_dtype_size(t->dtype);
}

int npt_is_contiguous(const npt_tensor_t *t)
{
	int64_t s = 1;

	for (int i = t->ndim - 1; i >= 0; i--) {
		if (t->shape[i] != 1 && t->strides[i] != s)
			return t->shape[i] == 0;
		s *= t->shape[i];
	}
	return 1;
}

int npt_has_zero_stride(const npt_tensor_t *t)
{
	for (int i = 0; i < t->ndim; i++)
		if (t->strides[i] == 0 && t->shape[i] > 1)
			return 1;
	return 0;
}

NPT_API npt_dtype_t npt_tensor_dtype(const npt_tensor_t *t) { return t->dtype; }
NPT_API int npt_tensor_ndim(const npt_tensor_t *t) { return t->ndim; }
NPT_API const int64_t *npt_tensor_shape(const npt_tensor_t *t) { return t->shape; }
NPT_API const int64_t *npt_tensor_strides(const npt_tensor_t *t) { return t->strides; }
NPT_API int64_t npt_tensor_offset(const npt_tensor_t *t) { return t->offset; }
NPT_API int64_t npt_tensor_numel(const npt_tensor_t *t) { return npt_numel(t->ndim, t->shape); }
NPT_API bool npt_tensor_is_lazy(const npt_tensor_t *t) { return t->node != NULL; }

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

NPT_API npt_status_t npt_tensor_data(npt_tensor_t *t, void **ptr)
{
	npt_status_t s;

	if (!t || !ptr)
		return npt_fail(NPT_E_INVAL, "data: NULL argument");
	if ((s = npt_tensor_eval(t)))
		return s;
	*ptr = npt_tensor_ptr(t);
	return NPT_OK;
}

npt_status_t npt_broadcast_shapes(const char *op, int n, npt_tensor_t **ts, int *ndim,
				  int64_t *shape)
{
	int nd = 0;

	for (int i = 0; i < n; i++)
		if (ts[i]->ndim > nd)
			nd = ts[i]->ndim;
	for (int d = 0; d < nd; d++)
		shape[d] = 1;
	for (int i = 0; i < n; i++) {
		const npt_tensor_t *t = ts[i];
		int off = nd - t->ndim;

		for (int d = 0; d < t->ndim; d++) {
			int64_t a = shape[off + d], b = t->shape[d];

			if (a == b || b == 1)
				continue;
			if (a == 1) {
				shape[off + d] = b;
				continue;
			}
			char msg[1024];
			size_t o = 0;

			for (int k = 0; k < n; k++) {
				char s[NPT_SHAPE_STRLEN];

				o += snprintf(msg + o, sizeof(msg) - o, " %s",
					      npt_shape_str(s, sizeof(s), ts[k]->ndim, ts[k]->shape));
				if (o >= sizeof(msg))
					break;
			}
			return npt_fail(NPT_E_SHAPE, "%s: operands could not be broadcast together "
					"with shapes%s (dimension %d: %lld vs %lld; sizes must be "
					"equal or 1)", op, msg, d - t->ndim, (long long)a,
					(long long)b);
		}
	}
	*ndim = nd;
	return NPT_OK;
}

void npt_broadcast_strides(const npt_tensor_t *t, int ndim, const int64_t *shape,
			   int64_t *strides)
{
	int off = ndim - t->ndim;

	for (int d = 0; d < ndim; d++) {
		int k = d - off;

		strides[d] = (k < 0 || t->shape[k] == 1 || shape[d] == 1) ? 0 : t->strides[k];
	}
}

npt_status_t npt_normalize_axis(const char *op, int axis, int ndim, int *out)
{
	if (axis < -ndim || axis >= ndim || (ndim == 0))
		return npt_fail(NPT_E_AXIS, "%s: axis %d is out of bounds for a tensor of "
				"dimension %d", op, axis, ndim);
	*out = axis < 0 ? axis + ndim : axis;
	return NPT_OK;
}
