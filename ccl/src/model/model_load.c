/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * model_load.c - npccl_model_load: libnpushm's cluster model load
 * (npushm_cluster_load, npushm_cluster.h) over this communicator. It lends
 * the algorithm the communicator's ranks and hosts, its Broadcast and
 * AllGather, and npccl_mem_alloc memory for the file's chunks (the RDMA
 * transport moves it without copies), and turns the outcome back into
 * npccl's status and error text. The tests' fault injection of a load
 * (a rank killed before chunk k, chunk k damaged on arrival) counts the
 * broadcasts here: the first carries the offer, the others the chunks.
 */
#include "npccl_internal.h"
#include "transport/transport.h"
#include "npushm_cluster.h"

#include <signal.h>
#include <string.h>

struct lend {
	struct npccl_comm *c;
	uint64_t broadcasts;	/* so far: the offer, then chunk 0, 1, ... */
	npccl_status_t st;	/* the last collective's */
};

static int lend_host_of(void *ctx, int rank)
{
	return ((struct lend *)ctx)->c->host_of[rank];
}

static const char *lend_host_name(void *ctx, int rank)
{
	return ((struct lend *)ctx)->c->peers[rank].info.hostname;
}

static bool fault_here(const struct npccl_comm *c, int kind, uint64_t chunk)
{
	return c->fault_kind == kind && c->fault_rank == c->rank && c->fault_seq == chunk;
}

static int lend_broadcast(void *ctx, void *buf, size_t len, int root)
{
	struct lend *l = ctx;
	struct npccl_comm *c = l->c;
	uint64_t k = l->broadcasts++;
	if (k && fault_here(c, FAULT_LOAD_KILL, k - 1))
		raise(SIGKILL);	/* tests: a rank killed mid-broadcast */
	l->st = npccl_broadcast(buf, buf, len, NPCCL_UINT8, root, c);
	if (!l->st && k && len && fault_here(c, FAULT_LOAD_CORRUPT, k - 1))
		((unsigned char *)buf)[len / 2] ^= 0x5a;	/* tests: bytes damaged on arrival */
	return l->st;
}

static int lend_allgather(void *ctx, const void *mine, void *all, size_t len)
{
	struct lend *l = ctx;
	return l->st = npccl_allgather(mine, all, len, NPCCL_UINT8, l->c);
}

static const char *lend_last_error(void *ctx)
{
	return npccl_comm_last_error(((struct lend *)ctx)->c);
}

static void *lend_chunk_alloc(void *ctx, size_t len)
{
	struct lend *l = ctx;
	void *p = NULL;
	l->st = npccl_mem_alloc(l->c, len, &p);
	return l->st ? NULL : p;
}

static void lend_chunk_free(void *ctx, void *buf)
{
	struct lend *l = ctx;
	npccl_status_t st = npccl_mem_free(l->c, buf);
	if (!l->st)
		l->st = st;
}

npccl_status_t npccl_model_load(npccl_comm_t c, int root, const char *path, const char *name,
				uint32_t mode, npccl_model_load_result_t *result)
{
	if (!c)
		return NPCCL_ERR_INVALID_ARG;
	struct lend l = { .c = c };
	const npushm_cluster_ops_t ops = {
		.rank = c->rank, .nranks = c->nranks, .host_of = lend_host_of,
		.host_name = lend_host_name, .broadcast = lend_broadcast,
		.allgather = lend_allgather, .last_error = lend_last_error,
		.chunk_alloc = lend_chunk_alloc, .chunk_free = lend_chunk_free, .ctx = &l,
	};
	npushm_cluster_result_t r;
	tls_error_clear(c);
	npushm_status_t ps = npushm_cluster_load(&ops, root, path, name, mode, &r);
	if (result) {
		_Static_assert(sizeof(result->report) == sizeof(r.report), "report size");
		memcpy(result->hash, r.hash, sizeof(r.hash));
		memcpy(result->hash_hex, r.hash_hex, sizeof(r.hash_hex));
		result->source_size = r.source_size;
		result->nhosts = r.nhosts;
		result->published = r.published;
		result->deduplicated = r.deduplicated;
		memcpy(result->report, r.report, sizeof(r.report));
	}
	if (ps == NPUSHM_OK)
		return NPCCL_OK;
	tls_error_set(c, "%s", npushm_last_error());
	switch (r.cause) {
	case NPUSHM_CLUSTER_INPUT: return NPCCL_ERR_INVALID_ARG;
	case NPUSHM_CLUSTER_MISMATCH: return NPCCL_ERR_MISMATCH;
	case NPUSHM_CLUSTER_HASH: return NPCCL_ERR_PROTOCOL;
	case NPUSHM_CLUSTER_NO_MEMORY: return NPCCL_ERR_NOMEM;
	case NPUSHM_CLUSTER_TRANSPORT: return l.st ? l.st : NPCCL_ERR_SYSTEM;
	default: return NPCCL_ERR_SYSTEM;
	}
}
