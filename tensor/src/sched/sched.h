/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * sched.h - the scheduler: the one place that turns lazy tensors into
 * buffers. For a node it materialises the inputs (recursively), lays them
 * out as the node's kernel asks (operands.c), plans the fused elementwise
 * chains (fuse.c), allocates or reuses the output buffer, then calls the
 * kernel (kernels/) with concrete buffers. The graph-building layer above
 * (ops.c, views.c, blocks.c, ...) calls in through npt_eval_locked() or
 * the public npt_tensor_eval*().
 */
#ifndef NPT_SCHED_H
#define NPT_SCHED_H

#include "../kernels/kernels.h"

/* ---- eval.c ---- */
/* materialise t (a no-op when it is already); under the evaluation lock */
NPT_HIDDEN npt_status_t npt_eval_locked(npt_tensor_t *t);
NPT_HIDDEN void npt_eval_lock(void);
NPT_HIDDEN void npt_eval_unlock(void);
NPT_HIDDEN uint64_t npt_eval_epoch(void);

/* ---- fuse.c: the fused program rooted at lazy elementwise tensor root ----
 * Plans the chain (fused nodes marked with @epoch) and lists its leaves,
 * not yet evaluated: the scheduler materialises them before running it. */
NPT_HIDDEN npt_status_t npt_fuse_plan(npt_tensor_t *root, npt_prog_t *p, uint64_t epoch);
/* drop the program's references to its leaves */
NPT_HIDDEN void npt_prog_release(npt_prog_t *p);
/* a program that just reads one (materialised) tensor */
NPT_HIDDEN void npt_prog_single(npt_prog_t *p, npt_tensor_t *t);

/* ---- operands.c ---- */
/* a C-contiguous tensor of dtype @dt and shape @ndim/@shape holding
 * materialised @src broadcast to that shape and converted */
NPT_HIDDEN npt_status_t npt_sched_copy(npt_tensor_t *src, npt_dtype_t dt, int ndim,
				       const int64_t *shape, npt_tensor_t **out);
/* write materialised @src into @out (same shape, any strides) */
NPT_HIDDEN npt_status_t npt_sched_copy_into(npt_tensor_t *src, npt_tensor_t *out);
/* the inputs of boundary node @t (materialised) as its kernel reads them,
 * copied where it asks (references owned by k->in, released by
 * npt_kcall_release) */
NPT_HIDDEN npt_status_t npt_kcall_inputs(npt_tensor_t *t, npt_kcall_t *k);
NPT_HIDDEN void npt_kcall_release(npt_kcall_t *k);

#endif
