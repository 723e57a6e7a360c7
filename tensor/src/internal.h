/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * internal.h - what the graph-building layer of nptensor sees: the public
 * entry points that validate operands and add lazy nodes (ops.c, views.c,
 * blocks.c), import and export (dlpack.c), and packed weights (pack.c,
 * q4.c). Below it, each layer calls only the ones under it:
 *
 *   graph building   src/         build nodes; ask the scheduler to evaluate
 *   scheduler        sched/      order, materialise inputs, plan fusion,
 *                                allocate outputs, call kernels
 *   kernels          kernels/    compute into the buffers they are given
 *   backend          backend/    thread pool, GEMM (oneDNN / OpenBLAS)
 *   core             core/       status, settings, dtypes, buffers, tensors
 */
#ifndef NPT_INTERNAL_H
#define NPT_INTERNAL_H

#include "sched/sched.h"

/* ---- views.c ---- */
NPT_HIDDEN npt_status_t npt_tensor_new_view(npt_tensor_t *base, int ndim, const int64_t *shape,
					    const int64_t *strides, int64_t offset,
					    npt_tensor_t **out);

/* ---- pack.c, unpack.c, gemv.c: packed-layout tags ---- */
/* a tag is a string of fewer than NPT_PACK_TAG_MAX bytes: is @tag not (no NUL
 * in its first NPT_PACK_TAG_MAX bytes, no byte past them read)? */
static inline int npt_tag_too_long(const char *tag)
{
	return strnlen(tag, NPT_PACK_TAG_MAX) == NPT_PACK_TAG_MAX;
}

#endif
