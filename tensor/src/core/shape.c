/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * shape.c - shape and stride arithmetic: element counts, C-order strides,
 * shape validation, NumPy broadcasting of shapes and strides, axis
 * normalisation, element addresses and buffer overlap.
 *
 * Contracts: pure functions of the shapes and strides they are given (they
 * read no lazy node and evaluate nothing); errors name the op. Shapes are
 * valid when rank <= 32, dims >= 0 and element and byte counts fit in int64.
 */
#include "core.h"

#include <stdio.h>
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

char *npt_tensor_ptr(const npt_tensor_t *t)
{
	if (!t->buf->data)
		return NULL;	/* an empty borrowed tensor (NULL data): nothing to address */
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
	if (!npt_numel(t->ndim, t->shape))
		return 0;	/* no element: none can alias another (NumPy's empty views) */
	for (int i = 0; i < t->ndim; i++)
		if (t->strides[i] == 0 && t->shape[i] > 1)
			return 1;
	return 0;
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
