/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * cma.h - the single-copy collectives' common steps (algo_cma.c), shared
 * by the moving ones (algo_cma.c) and the reducing ones
 * (algo_cma_reduce.c). Inside the algorithm layer only.
 */
#ifndef NPCCL_ALGO_CMA_H
#define NPCCL_ALGO_CMA_H

#include "npccl_internal.h"
#include "transport/transport.h"

/* Step 1 of every call: @slen bytes of @sbuf opened to the peers for
 * reading and @rlen bytes of @rbuf for writing (grants in my space, if I
 * have one), both addresses published, then every peer's awaited: on
 * success they are in c->ctl[k]->cma_sbuf/cma_rbuf and cma_end() follows. */
NPCCL_HIDDEN npccl_status_t cma_begin(struct npccl_comm *c, const void *sbuf, size_t slen,
				      const void *rbuf, size_t rlen, uint64_t *step);
/* Last step: done with the peers' buffers; waits until they are done with
 * mine, then closes mine (also after a failure @st, which it returns). */
NPCCL_HIDDEN npccl_status_t cma_end(struct npccl_comm *c, uint64_t step, npccl_status_t st);
/* Copy @len bytes between @local and local rank @k's address @remote
 * (read: from the peer; write: to it): peer_copy(). */
static inline npccl_status_t cma_copy(struct npccl_comm *c, int k, char *local, uint64_t remote,
				      size_t len, bool write)
{
	return peer_copy(c, c->local_ranks[k], local, remote, len, write);
}

#endif
