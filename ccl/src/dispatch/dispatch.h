/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * dispatch.h - the dispatch layer's calls (dispatch/): running a call when
 * its turn comes, the operation bracket, internal collectives, the cost
 * model. For queue/ and api/.
 */
#ifndef NPCCL_DISPATCH_H
#define NPCCL_DISPATCH_H

#include "npccl_internal.h"

/* runs one op (dispatch.c) with the exec role: fills r->status/r->err for
 * collectives; posts point-to-point messages (r->ireq) */
NPCCL_HIDDEN void op_run(struct npccl_comm *c, struct npccl_request *r);

/* ---- operation bracket (dispatch.c) ------------------------------------- */
/* Starts a collective-like operation `code` (deadline, sequence number,
 * descriptor published for the mismatch checks); op_end() finishes it. */
NPCCL_HIDDEN npccl_status_t comm_op_begin(struct npccl_comm *c, uint8_t code, uint64_t count);
NPCCL_HIDDEN npccl_status_t comm_op_end(struct npccl_comm *c, npccl_status_t st);
/* A collective the library needs itself (communicator setup: the cost
 * model's agreement, the CMA probe), run at once with the exec role, never
 * through the public calls or the queue. */
NPCCL_HIDDEN npccl_status_t coll_internal(struct npccl_comm *c, npccl_coll_t coll, const void *sbuf,
					  void *rbuf, size_t count, npccl_dtype_t dt,
					  npccl_redop_t op);

/* ---- cost model (costmodel.c) ------------------------------------------ */
NPCCL_HIDDEN npccl_status_t costmodel_measure(struct npccl_comm *c);
NPCCL_HIDDEN npccl_algo_t costmodel_choose(struct npccl_comm *c, npccl_coll_t coll,
					   size_t bytes, double *predicted_us);
NPCCL_HIDDEN double costmodel_predict(struct npccl_comm *c, npccl_coll_t coll,
				      npccl_algo_t algo, size_t bytes);
NPCCL_HIDDEN bool algo_valid(struct npccl_comm *c, npccl_coll_t coll, npccl_algo_t algo);
/* the deterministic mode's algorithm for a reducing collective that would
 * run @chosen otherwise */
NPCCL_HIDDEN npccl_algo_t canon_algo(struct npccl_comm *c, npccl_coll_t coll,
				     npccl_algo_t chosen);

#endif
