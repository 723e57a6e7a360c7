/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * gather.c - the kernel of npt_take: NumPy take(a, indices, axis) with
 * mode='raise', the embedding lookup of a model (rows of a table picked by
 * token ids).
 *
 * The result has shape a.shape[:axis] + indices.shape + a.shape[axis+1:].
 * It is a fusion boundary: the kernel reads the (materialised) table
 * through its strides, so a read-only borrowed table (shared weights) is
 * never copied; only the picked slices are written into the output. Every
 * index is checked before anything is written: one out of [-n, n) fails the
 * evaluation with NPT_E_VALUE and NumPy's message; negative ones count from
 * the end, as NumPy's.
 *
 * Contracts: indices of any integer dtype (not bool, not floating: NumPy's
 * 'safe' cast to intp refuses floats); every dtype for a. Slices of the
 * table that are contiguous are copied with memcpy, others element by
 * element; large gathers are split across the thread pool.
 */
#include "kernels.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
	const npt_tensor_t *a;
	npt_tensor_t *dst;
	const int64_t *idx;     /* normalised indices, nidx of them */
	int64_t nidx, outer, inner;
	int axis;
	int inner_contig;       /* the slice a[o, i, ...] is one contiguous run */
	int64_t inner_shape[NPT_MAX_DIMS], inner_strides[NPT_MAX_DIMS];
	int inner_nd;
} take_job_t;

/* the indices as normalised int64, each checked against the axis size */
static npt_status_t load_indices(npt_tensor_t *ix, int64_t size, int axis, int64_t *idx)
{
	int64_t n = npt_tensor_numel(ix), k = 0, pos[NPT_MAX_DIMS] = { 0 };
	npt_conv_fn conv = npt_conv(ix->dtype, NPT_I64);
	const char *base = npt_tensor_ptr(ix);
	size_t esz = npt_dtype_size(ix->dtype);

	/* walk the index tensor in C order through its strides */
	for (k = 0; k < n; k++) {
		int64_t off = 0;

		for (int d = 0; d < ix->ndim; d++)
			off += pos[d] * ix->strides[d];
		conv(1, &idx[k], 1, base + off * (int64_t)esz, 1);
		for (int d = ix->ndim - 1; d >= 0; d--) {
			if (++pos[d] < ix->shape[d])
				break;
			pos[d] = 0;
		}
		int64_t v = idx[k];

		if (v < -size || v >= size)
			return npt_fail(NPT_E_VALUE, "take: index %lld is out of bounds for axis %d "
					"with size %lld", (long long)v, axis, (long long)size);
		if (v < 0)
			idx[k] = v + size;
	}
	return NPT_OK;
}

/* copy the slice of a at (outer o, index i) into dst at (o, j) */
static void copy_slice(const take_job_t *j, int64_t o, int64_t k, char *dp)
{
	const npt_tensor_t *a = j->a;
	size_t esz = npt_dtype_size(a->dtype);
	int64_t rem = o, off = 0;

	for (int d = j->axis - 1; d >= 0; d--) {
		off += (rem % a->shape[d]) * a->strides[d];
		rem /= a->shape[d];
	}
	off += j->idx[k] * a->strides[j->axis];
	const char *sp = npt_tensor_ptr(a) + off * (int64_t)esz;

	if (j->inner_contig) {
		memcpy(dp, sp, (size_t)j->inner * esz);
		return;
	}
	int64_t pos[NPT_MAX_DIMS] = { 0 };

	for (int64_t e = 0; e < j->inner; e++) {
		int64_t so = 0;

		for (int d = 0; d < j->inner_nd; d++)
			so += pos[d] * j->inner_strides[d];
		memcpy(dp + e * (int64_t)esz, sp + so * (int64_t)esz, esz);
		for (int d = j->inner_nd - 1; d >= 0; d--) {
			if (++pos[d] < j->inner_shape[d])
				break;
			pos[d] = 0;
		}
	}
}

static void take_task(void *arg, int64_t begin, int64_t end, int tid)
{
	const take_job_t *j = arg;
	size_t esz = npt_dtype_size(j->a->dtype);
	char *dbase = npt_tensor_ptr(j->dst);

	(void)tid;
	for (int64_t r = begin; r < end; r++) {
		int64_t o = r / (j->nidx ? j->nidx : 1), k = r % (j->nidx ? j->nidx : 1);

		copy_slice(j, o, k, dbase + r * j->inner * (int64_t)esz);
	}
}

npt_status_t npt_run_take(const npt_kcall_t *k)
{
	npt_tensor_t *a = k->in[0], *ix = k->in[1];
	take_job_t j = { .a = a, .dst = k->out, .axis = k->node->axis };
	int64_t nidx = npt_tensor_numel(ix), expect = 1;
	int64_t *idx;
	npt_status_t s;

	j.nidx = nidx;
	j.outer = npt_numel(j.axis, a->shape);
	j.inner = npt_numel(a->ndim - j.axis - 1, a->shape + j.axis + 1);
	j.inner_nd = a->ndim - j.axis - 1;
	j.inner_contig = 1;
	for (int d = a->ndim - 1; d > j.axis; d--) {
		j.inner_shape[d - j.axis - 1] = a->shape[d];
		j.inner_strides[d - j.axis - 1] = a->strides[d];
		if (a->shape[d] != 1 && a->strides[d] != expect)
			j.inner_contig = 0;
		expect *= a->shape[d];
	}
	idx = malloc((size_t)(nidx > 0 ? nidx : 1) * sizeof(int64_t));
	if (!idx)
		return npt_fail(NPT_E_NOMEM, "take: out of memory for %lld indices", (long long)nidx);
	s = load_indices(ix, a->shape[j.axis], j.axis, idx);
	if (!s && j.outer * nidx > 0 && j.inner > 0) {
		j.idx = idx;
		int64_t rows = j.outer * nidx;

		npt_parallel_for(rows, 65536 / j.inner + 1, take_task, &j);
	}
	free(idx);
	return s;
}
