/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * split.c - tensor parallelism: which part of the model a rank computes, and
 * the collectives that join the parts (npccl).
 *
 * Rank r of N takes heads [r*h/N, ...), KV heads [r*kv/N, ...) (so each of its
 * heads' KV head is its own: the group h/kv is the same on every rank), FFN
 * columns [r*F/N, ...) and output rows [r*C, min(V, (r+1)*C)) with C =
 * ceil(V/N). Its o_proj and down_proj products are partial sums of the full
 * [tokens, hidden] output, completed in place by an AllReduce of e->part,
 * which lives in npccl_mem_alloc memory (the zero-copy path on one host);
 * its logits go to its block of e->gather, which an in-place AllGather
 * completes. The buffers are grown collectively: every rank feeds the same
 * token counts, so every rank grows them at the same call. Collective time
 * is added to the engine's profile.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

npllama_status_t npl_split_make(const npllama_config_t *c, npccl_comm_t comm, npl_split_t *o)
{
	int n = 1, r = 0;

	if (comm && (npccl_comm_rank(comm, &r) || npccl_comm_size(comm, &n)))
		return npl_fail(NPLLAMA_ERR_INVALID, "npllama_create_tp: the communicator is not "
				"usable: %s", npccl_comm_last_error(comm));
	if (c->heads % n)
		return npl_fail(NPLLAMA_ERR_SPLIT, "tensor parallelism over %d ranks: the %d "
				"attention heads do not divide by %d (each rank computes whole "
				"heads); use a rank count that divides %d", n, c->heads, n,
				c->heads);
	if (c->kv_heads % n)
		return npl_fail(NPLLAMA_ERR_SPLIT, "tensor parallelism over %d ranks: the %d KV "
				"heads do not divide by %d (each rank keeps whole KV heads of its "
				"own); use a rank count that divides %d", n, c->kv_heads, n,
				c->kv_heads);
	if (c->ffn % n)
		return npl_fail(NPLLAMA_ERR_SPLIT, "tensor parallelism over %d ranks: the FFN "
				"width %d (intermediate_size) does not divide by %d; use a rank count "
				"that divides %d", n, c->ffn, n, c->ffn);
	memset(o, 0, sizeof(*o));
	o->rank = r;
	o->nranks = n;
	o->heads = c->heads / n;
	o->head0 = r * o->heads;
	o->kv_heads = c->kv_heads / n;
	o->kv0 = r * o->kv_heads;
	o->ffn = c->ffn / n;
	o->ffn0 = r * o->ffn;
	o->vocab_chunk = (c->vocab + n - 1) / n;
	o->vocab0 = r * o->vocab_chunk < c->vocab ? r * o->vocab_chunk : c->vocab;
	o->vocab_rows = c->vocab - o->vocab0 < o->vocab_chunk ? c->vocab - o->vocab0
							       : o->vocab_chunk;
	return NPLLAMA_OK;
}

static npllama_status_t comm_fail(struct npllama *e, const char *what)
{
	return npl_fail(NPLLAMA_ERR_COMM, "%s between the %d ranks failed on rank %d: %s", what,
			e->sp.nranks, e->sp.rank, npccl_comm_last_error(e->comm));
}

npllama_status_t npl_split_reserve(struct npllama *e, int tokens)
{
	void *p;

	if (!e->comm || tokens <= e->part_tokens)
		return NPLLAMA_OK;
	if (!e->gather) {
		if (npccl_mem_alloc(e->comm, sizeof(float) * (size_t)e->sp.vocab_chunk *
				    (size_t)e->sp.nranks, &p))
			return comm_fail(e, "allocating the shared logits buffer");
		e->gather = p;
	}
	if (e->part)
		npccl_mem_free(e->comm, e->part);
	e->part = NULL;
	e->part_tokens = 0;
	if (npccl_mem_alloc(e->comm, sizeof(float) * (size_t)tokens * (size_t)e->cfg.hidden, &p))
		return comm_fail(e, "allocating the shared partial-sum buffer");
	e->part = p;
	e->part_tokens = tokens;
	return NPLLAMA_OK;
}

void npl_split_free(struct npllama *e)
{
	if (!e->comm)
		return;
	npccl_mem_free(e->comm, e->part);
	npccl_mem_free(e->comm, e->gather);
	e->part = e->gather = NULL;
	e->part_tokens = 0;
}

npllama_status_t npl_split_allreduce(struct npllama *e, int n)
{
	double t0 = now();
	npccl_status_t cs;

	cs = npccl_allreduce(e->part, e->part, (size_t)n * (size_t)e->cfg.hidden, NPCCL_FLOAT32,
			     NPCCL_SUM, e->comm);
	e->prof.allreduce += now() - t0;
	e->prof.collectives++;
	return cs ? comm_fail(e, "the AllReduce of the partial sums") : NPLLAMA_OK;
}

npllama_status_t npl_split_logits(struct npllama *e, float *logits)
{
	size_t chunk = (size_t)e->sp.vocab_chunk;
	double t0 = now();
	npccl_status_t cs;

	cs = npccl_allgather(e->gather + chunk * (size_t)e->sp.rank, e->gather, chunk,
			     NPCCL_FLOAT32, e->comm);
	e->prof.allreduce += now() - t0;
	e->prof.collectives++;
	if (cs)
		return comm_fail(e, "the AllGather of the logits");
	memcpy(logits, e->gather, sizeof(float) * (size_t)e->cfg.vocab);
	return NPLLAMA_OK;
}

npllama_status_t npl_split_bcast_int(struct npllama *e, int *v)
{
	int32_t x = *v;

	if (!e->comm)
		return NPLLAMA_OK;
	if (npccl_broadcast(&x, &x, 1, NPCCL_INT32, 0, e->comm))
		return comm_fail(e, "a broadcast from rank 0");
	*v = x;
	return NPLLAMA_OK;
}

npllama_status_t npl_split_min_int(struct npllama *e, int *v)
{
	int32_t x = *v;

	if (!e->comm)
		return NPLLAMA_OK;
	if (npccl_allreduce(&x, &x, 1, NPCCL_INT32, NPCCL_MIN, e->comm))
		return comm_fail(e, "an agreement (AllReduce MIN)");
	*v = x;
	return NPLLAMA_OK;
}

npllama_status_t npl_split_gather(struct npllama *e, const float *mine, size_t count, float *all)
{
	if (npccl_allgather(mine, all, count, NPCCL_FLOAT32, e->comm))
		return comm_fail(e, "gathering the prefix's keys and values");
	return NPLLAMA_OK;
}
