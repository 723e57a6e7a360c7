/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * views.c - zero-copy views: reshape, permute, transpose, squeeze,
 * unsqueeze, slice, broadcast_to, expand, contiguous, cast.
 *
 * Contracts: a view shares its base's buffer; the view of a lazy tensor
 * evaluates the base first (views are fusion boundaries). broadcast_to and
 * expand results are read-only (NumPy). reshape copies only when no strides
 * can describe the result (as NumPy), and says so through the log when the
 * copy is large; in NPT_EXPAND_VIEW mode it fails instead.
 */
#include "internal.h"

#include <string.h>

npt_status_t npt_tensor_new_view(npt_tensor_t *base, int ndim, const int64_t *shape,
				 const int64_t *strides, int64_t offset, npt_tensor_t **out)
{
	npt_status_t s;

	if ((s = npt_tensor_eval(base)))
		return s;
	if (base->packed_only)
		return npt_plain_refused("view", base);
	npt_tensor_t *t = NULL;

	/* a zero-size tensor is enough to get a struct; fill it in by hand */
	int64_t zero = 0;

	if ((s = npt_tensor_wrap("view", NULL, base->dtype, 1, &zero, NULL, 0, NULL, NULL, &t)))
		return s;
	npt_buffer_release(t->buf);
	npt_buffer_retain(base->buf);
	t->buf = base->buf;
	t->ndim = ndim;
	if (ndim) {
		memcpy(t->shape, shape, ndim * sizeof(int64_t));
		memcpy(t->strides, strides, ndim * sizeof(int64_t));
	}
	t->offset = offset;
	t->broadcast = base->broadcast;
	*out = t;
	return NPT_OK;
}

static npt_status_t check_args(const char *op, npt_tensor_t *t, npt_tensor_t **out)
{
	if (!out)
		return npt_fail(NPT_E_INVAL, "%s: out is NULL", op);
	*out = NULL;
	if (!t)
		return npt_fail(NPT_E_INVAL, "%s: input tensor is NULL", op);
	return NPT_OK;
}

/* strides for `nshape` viewing t without a copy, or 0 if impossible */
static int reshape_strides(const npt_tensor_t *t, int nd, const int64_t *ns, int64_t *nst)
{
	int od = 0;
	int64_t oshape[NPT_MAX_DIMS], ost[NPT_MAX_DIMS];

	for (int i = 0; i < t->ndim; i++)
		if (t->shape[i] != 1) {
			oshape[od] = t->shape[i];
			ost[od] = t->strides[i];
			od++;
		}
	int oi = 0, ni = 0;

	while (ni < nd || oi < od) {
		if (ni < nd && ns[ni] == 1) {
			nst[ni++] = 0;
			continue;
		}
		if (oi >= od || ni >= nd)
			return 0;
		/* group old dims [oi, oj) with new dims [ni, nj) of equal product */
		int oj = oi + 1, nj = ni + 1;
		int64_t op = oshape[oi], np = ns[ni];

		while (op != np) {
			if (op < np) {
				if (oj >= od)
					return 0;
				op *= oshape[oj++];
			} else {
				if (nj >= nd)
					return 0;
				np *= ns[nj++];
			}
		}
		for (int k = oi; k < oj - 1; k++)
			if (ost[k] != ost[k + 1] * oshape[k + 1])
				return 0;
		int64_t st = ost[oj - 1];

		for (int k = nj - 1; k >= ni; k--) {
			nst[k] = st;
			st *= ns[k];
		}
		oi = oj;
		ni = nj;
	}
	return 1;
}

NPT_API npt_status_t npt_tensor_reshape(npt_tensor_t *t, int ndim, const int64_t *shape,
					npt_tensor_t **out)
{
	npt_status_t s;
	int64_t ns[NPT_MAX_DIMS], nst[NPT_MAX_DIMS], known = 1, n;
	int neg = -1;
	char a[NPT_SHAPE_STRLEN], b[NPT_SHAPE_STRLEN];

	if ((s = check_args("reshape", t, out)))
		return s;
	if (ndim < 0 || ndim > NPT_MAX_DIMS || (ndim && !shape))
		return npt_check_shape("reshape", ndim, shape, NULL);
	for (int i = 0; i < ndim; i++) {
		ns[i] = shape[i];
		if (shape[i] == -1) {
			if (neg >= 0)
				return npt_fail(NPT_E_INVAL, "reshape: can only specify one unknown "
						"dimension (-1)");
			neg = i;
		} else if (shape[i] < 0) {
			return npt_fail(NPT_E_INVAL, "reshape: negative dimension %lld",
					(long long)shape[i]);
		} else if (__builtin_mul_overflow(known, shape[i], &known)) {
			return npt_fail(NPT_E_OVERFLOW, "reshape: target shape overflows");
		}
	}
	n = npt_tensor_numel(t);
	if (neg >= 0) {
		if (known == 0 || n % known)
			goto mismatch;
		ns[neg] = n / known;
	} else if (known != n) {
		goto mismatch;
	}
	if ((s = npt_check_shape("reshape", ndim, ns, NULL)))
		return s;
	if ((s = npt_tensor_eval(t)))
		return s;
	if (n == 0 || reshape_strides(t, ndim, ns, nst)) {
		if (n == 0)
			npt_contig_strides(ndim, ns, nst);
		return npt_tensor_new_view(t, ndim, ns, nst, t->offset, out);
	}
	/* no strides describe it: copy, as NumPy does */
	size_t bytes = (size_t)n * npt_dtype_size(t->dtype);

	if (npt_cfg_expand_mode() == NPT_EXPAND_VIEW)
		return npt_fail(NPT_E_WOULD_COPY, "reshape: a tensor of shape %s with these strides "
				"cannot be viewed as shape %s without copying %zu bytes, and "
				"expansion mode VIEW forbids copies (use contiguous() first or "
				"another mode)", npt_shape_str(a, sizeof(a), t->ndim, t->shape),
				npt_shape_str(b, sizeof(b), ndim, ns), bytes);
	npt_tensor_t *c;

	if ((s = npt_tensor_contiguous(t, &c)))
		return s;
	if ((s = npt_tensor_eval(c))) {
		npt_tensor_free(c);
		return s;
	}
	npt_note_materialize("reshape", t->ndim, t->shape, ndim, ns, bytes,
			     "strides cannot express the new shape");
	npt_contig_strides(ndim, ns, nst);
	s = npt_tensor_new_view(c, ndim, ns, nst, c->offset, out);
	npt_tensor_free(c);
	return s;
mismatch:
	return npt_fail(NPT_E_SHAPE, "reshape: cannot reshape a tensor of size %lld (shape %s) "
			"into shape %s", (long long)n, npt_shape_str(a, sizeof(a), t->ndim, t->shape),
			npt_shape_str(b, sizeof(b), ndim, shape));
}

NPT_API npt_status_t npt_tensor_permute(npt_tensor_t *t, const int *perm, npt_tensor_t **out)
{
	npt_status_t s;
	int64_t ns[NPT_MAX_DIMS], nst[NPT_MAX_DIMS];
	int seen[NPT_MAX_DIMS] = { 0 };

	if ((s = check_args("permute", t, out)))
		return s;
	if (!perm && t->ndim)
		return npt_fail(NPT_E_INVAL, "permute: perm is NULL");
	for (int i = 0; i < t->ndim; i++) {
		int p;

		if ((s = npt_normalize_axis("permute", perm[i], t->ndim, &p)))
			return s;
		if (seen[p]++)
			return npt_fail(NPT_E_AXIS, "permute: axis %d repeated in the permutation; "
					"give each of the %d axes once", perm[i], t->ndim);
		ns[i] = t->shape[p];
		nst[i] = t->strides[p];
	}
	return npt_tensor_new_view(t, t->ndim, ns, nst, t->offset, out);
}

NPT_API npt_status_t npt_tensor_transpose(npt_tensor_t *t, int a0, int a1, npt_tensor_t **out)
{
	int perm[NPT_MAX_DIMS], x, y;
	npt_status_t s;

	if ((s = check_args("transpose", t, out)))
		return s;
	if ((s = npt_normalize_axis("transpose", a0, t->ndim, &x)) ||
	    (s = npt_normalize_axis("transpose", a1, t->ndim, &y)))
		return s;
	for (int i = 0; i < t->ndim; i++)
		perm[i] = i;
	perm[x] = y;
	perm[y] = x;
	return npt_tensor_permute(t, perm, out);
}

NPT_API npt_status_t npt_tensor_squeeze(npt_tensor_t *t, int axis, npt_tensor_t **out)
{
	npt_status_t s;
	int64_t ns[NPT_MAX_DIMS], nst[NPT_MAX_DIMS];
	int nd = 0, ax = -1;

	if ((s = check_args("squeeze", t, out)))
		return s;
	if (t->ndim == 0 && (axis == 0 || axis == -1))
		axis = NPT_AXIS_ALL; /* NumPy: np.squeeze(0-d, axis=0) returns it */
	if (axis != NPT_AXIS_ALL) {
		if ((s = npt_normalize_axis("squeeze", axis, t->ndim, &ax)))
			return s;
		if (t->shape[ax] != 1)
			return npt_fail(NPT_E_SHAPE, "squeeze: cannot select axis %d to squeeze "
					"out: it has size %lld, not 1", axis,
					(long long)t->shape[ax]);
	}
	for (int i = 0; i < t->ndim; i++) {
		if (t->shape[i] == 1 && (ax < 0 || ax == i))
			continue;
		ns[nd] = t->shape[i];
		nst[nd++] = t->strides[i];
	}
	return npt_tensor_new_view(t, nd, ns, nst, t->offset, out);
}

NPT_API npt_status_t npt_tensor_unsqueeze(npt_tensor_t *t, int axis, npt_tensor_t **out)
{
	npt_status_t s;
	int64_t ns[NPT_MAX_DIMS], nst[NPT_MAX_DIMS];
	int ax;

	if ((s = check_args("unsqueeze", t, out)))
		return s;
	if (t->ndim + 1 > NPT_MAX_DIMS)
		return npt_check_shape("unsqueeze", t->ndim + 1, t->shape, NULL);
	if ((s = npt_normalize_axis("unsqueeze", axis, t->ndim + 1, &ax)))
		return s;
	for (int i = 0, j = 0; i <= t->ndim; i++) {
		if (i == ax) {
			ns[i] = 1;
			nst[i] = 0;
		} else {
			ns[i] = t->shape[j];
			nst[i] = t->strides[j++];
		}
	}
	return npt_tensor_new_view(t, t->ndim + 1, ns, nst, t->offset, out);
}

NPT_API npt_status_t npt_tensor_slice(npt_tensor_t *t, int axis, int64_t start, int64_t stop,
				      int64_t step, npt_tensor_t **out)
{
	npt_status_t s;
	int ax;

	if ((s = check_args("slice", t, out)))
		return s;
	if ((s = npt_normalize_axis("slice", axis, t->ndim, &ax)))
		return s;
	if (step == 0)
		return npt_fail(NPT_E_INVAL, "slice: step must be nonzero (Python: \"slice step "
				"cannot be zero\")");
	if (step == INT64_MIN)
		step = -INT64_MAX; /* as Python clamps it; one element at most either way */
	int64_t len = t->shape[ax];

	/* Python's PySlice_AdjustIndices */
	if (start == NPT_SLICE_END) {
		start = step < 0 ? len - 1 : 0;
	} else if (start < 0) {
		start += len;
		if (start < 0)
			start = step < 0 ? -1 : 0;
	} else if (start >= len) {
		start = step < 0 ? len - 1 : len;
	}
	if (stop == NPT_SLICE_END) {
		stop = step < 0 ? -1 : len;
	} else if (stop < 0) {
		stop += len;
		if (stop < 0)
			stop = step < 0 ? -1 : 0;
	} else if (stop >= len) {
		stop = step < 0 ? len - 1 : len;
	}
	int64_t n = 0;

	if (step < 0 ? stop < start : start < stop)
		n = step < 0 ? (start - stop - 1) / (-step) + 1 : (stop - start - 1) / step + 1;
	int64_t ns[NPT_MAX_DIMS], nst[NPT_MAX_DIMS];

	memcpy(ns, t->shape, t->ndim * sizeof(int64_t));
	memcpy(nst, t->strides, t->ndim * sizeof(int64_t));
	ns[ax] = n;
	/* with one element or none the stride is never used (and stride * step
	 * may not fit: a[::2**62]) */
	nst[ax] = n > 1 ? t->strides[ax] * step : t->strides[ax];
	if ((s = npt_tensor_eval(t)))
		return s;
	return npt_tensor_new_view(t, t->ndim, ns, nst, t->offset + (n ? start * t->strides[ax] : 0),
				   out);
}

static npt_status_t broadcast_view(const char *op, npt_tensor_t *t, int ndim, const int64_t *shape,
				   int allow_keep, npt_tensor_t **out)
{
	npt_status_t s;
	int64_t ns[NPT_MAX_DIMS], nst[NPT_MAX_DIMS];
	char a[NPT_SHAPE_STRLEN], b[NPT_SHAPE_STRLEN];

	if ((s = check_args(op, t, out)))
		return s;
	if (ndim > NPT_MAX_DIMS || ndim < 0 || (ndim && !shape))
		return npt_check_shape(op, ndim, shape, NULL);
	if (ndim < t->ndim)
		goto bad;
	int off = ndim - t->ndim;

	for (int d = 0; d < ndim; d++) {
		int k = d - off;

		ns[d] = shape[d];
		if (allow_keep && shape[d] == -1) {
			if (k < 0)
				return npt_fail(NPT_E_SHAPE, "%s: -1 (keep) given for new leading "
						"dimension %d of %s", op, d,
						npt_shape_str(b, sizeof(b), ndim, shape));
			ns[d] = t->shape[k];
		}
		if (k >= 0 && t->shape[k] == ns[d]) {
			nst[d] = t->strides[k];
			continue;
		}
		if (k >= 0 && t->shape[k] != 1)
			goto bad;
		nst[d] = 0;
	}
	if ((s = npt_check_shape(op, ndim, ns, NULL)))
		return s;
	if ((s = npt_tensor_new_view(t, ndim, ns, nst, t->offset, out)))
		return s;
	(*out)->broadcast = 1;
	return NPT_OK;
bad:
	return npt_fail(NPT_E_SHAPE, "%s: cannot broadcast a tensor of shape %s to shape %s "
			"(right-aligned sizes must be equal or 1 in the source)", op,
			npt_shape_str(a, sizeof(a), t->ndim, t->shape),
			npt_shape_str(b, sizeof(b), ndim, shape));
}

NPT_API npt_status_t npt_tensor_broadcast_to(npt_tensor_t *t, int ndim, const int64_t *shape,
					     npt_tensor_t **out)
{
	return broadcast_view("broadcast_to", t, ndim, shape, 0, out);
}

NPT_API npt_status_t npt_tensor_expand(npt_tensor_t *t, int ndim, const int64_t *shape,
				       npt_tensor_t **out)
{
	return broadcast_view("expand", t, ndim, shape, 1, out);
}
