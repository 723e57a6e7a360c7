/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * algo_cma_reduce.c - the single-copy reductions between private buffers of
 * the ranks of one host (steps and copies: algo_cma.c): AllReduce, Reduce
 * and ReduceScatter. A rank reduces its part chunk by chunk, each peer's
 * chunk copied once into a cache-sized buffer, every element in rank order
 * ((x0 op x1) op x2 ...: the same bits as the shared-memory AllReduce).
 *
 * - ReduceScatter: rank r reduces block r of every input into its output.
 * - AllReduce: rank r reduces slice r of the inputs into its output and
 *   writes the result straight into every peer's output (slice r of every
 *   buffer is touched by rank r only: in place needs no extra step).
 *   npccl_mem_alloc buffers on every rank take the zero-copy path instead.
 * - Reduce: the root reduces everything (the others only open their input).
 */
#include "npccl_internal.h"
#include "transport/transport.h"
#include "algo/algo.h"
#include "algo/cma.h"

/* bytes per chunk: whole elements */
static size_t chunk_bytes(size_t es)
{
	return MAX(es, (npccl_config()->pipeline_chunk / es) * es);
}

/*
 * dst[0, len) = x_0 op x_1 op ... op x_{P-1}, x_k the @len bytes at offset
 * @at of local rank k's published send buffer (mine: @own), each peer's
 * copied into its slot of @bounce first. @dst may equal @own.
 */
static npccl_status_t reduce_chunk(struct npccl_comm *c, const struct coll_args *a, char *dst,
				   const char *own, uint64_t at, size_t len, char *bounce)
{
	int P = c->nlocal, me = c->local_index;
	size_t chunk = chunk_bytes(a->esize);
	const void **srcs = (const void **)c->fp_srcs;
	for (int k = 0, b = 0; k < P; k++) {
		if (k == me) {
			srcs[k] = own;
			continue;
		}
		char *buf = bounce + (size_t)b++ * chunk;
		npccl_status_t st = cma_copy(c, k, buf, c->ctl[k]->cma_sbuf + at, len, false);
		if (st)
			return st;
		srcs[k] = buf;
	}
	void *dsts[1] = { dst };
	reduce_multi(a->dtype, a->op, dsts, 1, 0, srcs, P, len / a->esize);
	return NPCCL_OK;
}

static char *bounce_buffers(struct npccl_comm *c, const struct coll_args *a)
{
	size_t bytes = chunk_bytes(a->esize) * (size_t)(c->nlocal - 1);
	char *b = comm_scratch(c, bytes);
	if (!b)
		comm_fail(c, NPCCL_ERR_NOMEM, -1, "no memory for %zu bytes", bytes);
	return b;
}

npccl_status_t cma_reduce_scatter(struct npccl_comm *c, const struct coll_args *a)
{
	int P = c->nlocal, me = c->local_index;
	size_t bb = a->count * a->esize, chunk = chunk_bytes(a->esize);
	char *bounce = bb ? bounce_buffers(c, a) : NULL;
	if (bb && !bounce)
		return c->failed;
	uint64_t step;
	npccl_status_t st = cma_begin(c, a->sbuf, bb * (size_t)P, NULL, 0, &step);
	if (st)
		return st;
	const char *own = a->sbuf + (size_t)me * bb;
	for (size_t off = 0; off < bb && !st; off += chunk)
		st = reduce_chunk(c, a, a->rbuf + off, own + off, (uint64_t)me * bb + off,
				  MIN(chunk, bb - off), bounce);
	return cma_end(c, step, st);
}

npccl_status_t cma_allreduce(struct npccl_comm *c, const struct coll_args *a)
{
	int P = c->nlocal, me = c->local_index;
	size_t es = a->esize, bytes = a->count * es, chunk = chunk_bytes(es);
	if (!bytes)
		return NPCCL_OK;
	bool done;
	npccl_status_t st = shm_allreduce_zero_copy(c, a, &done);
	if (st || done)
		return st;
	char *bounce = bounce_buffers(c, a);
	if (!bounce)
		return c->failed;
	uint64_t step;
	if ((st = cma_begin(c, a->sbuf, bytes, a->rbuf, bytes, &step)))
		return st;
	size_t lo, n;
	block_range(a->count, P, me, &lo, &n);
	for (size_t off = lo * es; off < (lo + n) * es && !st; off += chunk) {
		size_t len = MIN(chunk, (lo + n) * es - off);
		st = reduce_chunk(c, a, a->rbuf + off, a->sbuf + off, off, len, bounce);
		for (int i = 1; i < P && !st; i++) {
			int k = (me + i) % P;
			st = cma_copy(c, k, a->rbuf + off, c->ctl[k]->cma_rbuf + off, len, true);
		}
	}
	return cma_end(c, step, st);
}

npccl_status_t cma_reduce(struct npccl_comm *c, const struct coll_args *a)
{
	int me = c->local_index, root = c->peers[a->root].local_index;
	size_t bytes = a->count * a->esize, chunk = chunk_bytes(a->esize);
	char *bounce = bytes && me == root ? bounce_buffers(c, a) : NULL;
	if (bytes && me == root && !bounce)
		return c->failed;
	uint64_t step;
	npccl_status_t st = cma_begin(c, a->sbuf, me == root ? 0 : bytes, NULL, 0, &step);
	if (st)
		return st;
	for (size_t off = 0; me == root && off < bytes && !st; off += chunk)
		st = reduce_chunk(c, a, a->rbuf + off, a->sbuf + off, off, MIN(chunk, bytes - off),
				  bounce);
	return cma_end(c, step, st);
}
