/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * algo.h - the algorithm layer's calls (algo/): the collectives' algorithms
 * and their scratch buffers. For dispatch/ and above.
 */
#ifndef NPCCL_ALGO_H
#define NPCCL_ALGO_H

#include "npccl_internal.h"

/* ---- algorithms --------------------------------------------------------- */
struct coll_args {
	npccl_coll_t coll;
	const char *sbuf;
	char *rbuf;
	size_t count;		/* elements: per rank block for AG/RS/gather/scatter/a2a */
	npccl_dtype_t dtype;
	npccl_redop_t op;	/* AVG is run as SUM, then scaled */
	int root;
	size_t esize;
	npccl_algo_t algo;
};

NPCCL_HIDDEN void block_range(size_t n, int parts, int i, size_t *off, size_t *len);
NPCCL_HIDDEN char *comm_scratch(struct npccl_comm *c, size_t bytes);
NPCCL_HIDDEN char *comm_scratch2(struct npccl_comm *c, size_t bytes);

/* input in a->sbuf (may equal a->rbuf), result in a->rbuf */
NPCCL_HIDDEN npccl_status_t algo_allreduce(struct npccl_comm *c, const struct group *g,
					   const struct coll_args *a, npccl_algo_t algo);
NPCCL_HIDDEN npccl_status_t algo_allgather(struct npccl_comm *c, const struct group *g,
					   const struct coll_args *a, npccl_algo_t algo);
NPCCL_HIDDEN npccl_status_t algo_reduce_scatter(struct npccl_comm *c, const struct group *g,
						const struct coll_args *a, npccl_algo_t algo);
NPCCL_HIDDEN npccl_status_t algo_broadcast(struct npccl_comm *c, const struct group *g,
					   const struct coll_args *a, npccl_algo_t algo);
NPCCL_HIDDEN npccl_status_t algo_reduce(struct npccl_comm *c, const struct group *g,
					const struct coll_args *a, npccl_algo_t algo);
NPCCL_HIDDEN npccl_status_t algo_gather(struct npccl_comm *c, const struct group *g,
					const struct coll_args *a, npccl_algo_t algo);
NPCCL_HIDDEN npccl_status_t algo_scatter(struct npccl_comm *c, const struct group *g,
					 const struct coll_args *a, npccl_algo_t algo);
NPCCL_HIDDEN npccl_status_t algo_alltoall(struct npccl_comm *c, const struct group *g,
					  const struct coll_args *a, npccl_algo_t algo);
NPCCL_HIDDEN npccl_status_t algo_barrier(struct npccl_comm *c, const struct group *g,
					 npccl_algo_t algo);
NPCCL_HIDDEN npccl_status_t shm_allreduce(struct npccl_comm *c, const struct coll_args *a);
/* npccl_mem_alloc buffers on every local rank: the zero-copy AllReduce,
 * *done set; otherwise nothing moved (a step agreed that) */
NPCCL_HIDDEN npccl_status_t shm_allreduce_zero_copy(struct npccl_comm *c,
						    const struct coll_args *a, bool *done);
NPCCL_HIDDEN npccl_status_t shm_barrier(struct npccl_comm *c);
NPCCL_HIDDEN npccl_status_t hier_allreduce(struct npccl_comm *c, const struct coll_args *a);
NPCCL_HIDDEN npccl_status_t cma_allgather(struct npccl_comm *c, const struct coll_args *a);
NPCCL_HIDDEN npccl_status_t cma_broadcast(struct npccl_comm *c, const struct coll_args *a);
NPCCL_HIDDEN npccl_status_t cma_reduce_scatter(struct npccl_comm *c, const struct coll_args *a);
NPCCL_HIDDEN npccl_status_t cma_allreduce(struct npccl_comm *c, const struct coll_args *a);
NPCCL_HIDDEN npccl_status_t cma_reduce(struct npccl_comm *c, const struct coll_args *a);
NPCCL_HIDDEN npccl_status_t cma_gather(struct npccl_comm *c, const struct coll_args *a);
NPCCL_HIDDEN npccl_status_t cma_scatter(struct npccl_comm *c, const struct coll_args *a);
NPCCL_HIDDEN npccl_status_t cma_alltoall(struct npccl_comm *c, const struct coll_args *a);
/* Single-copy probe: publish this rank's probe area (false: single copies
 * not applicable), then, once every local rank has, read the peers' (1: all
 * readable) and time reads of one (c->cma_call_us, c->cma_copy_ratio: this
 * rank's measurement until agreed); once agreed, drop the area */
NPCCL_HIDDEN bool cma_probe_begin(struct npccl_comm *c);
NPCCL_HIDDEN int32_t cma_probe_peers(struct npccl_comm *c);
NPCCL_HIDDEN void cma_probe_end(struct npccl_comm *c);
/* canonical-order reductions (algo_canonical.c): AllReduce, ReduceScatter, Reduce */
NPCCL_HIDDEN npccl_status_t canon_reduce(struct npccl_comm *c, const struct group *g,
					 const struct coll_args *a);
NPCCL_HIDDEN bool canon_applies(npccl_coll_t coll, npccl_dtype_t dt);
NPCCL_HIDDEN void p2p_free_all_reqs(struct npccl_comm *c);

#endif
