/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * dispatch.c - a call when its turn comes (the exec role, called by the
 * queue in request.c): op_run() gives it a sequence number, a deadline and
 * a descriptor (published for the shared-memory mismatch checks), chooses
 * the algorithm (the deterministic mode's, forced, NPCCL_ALGO, or the cost
 * model), dispatches to the algorithms, finishes AVG, and turns failures
 * into the request's text. coll_internal() runs a collective the library
 * itself needs (at communicator setup) the same way, without the queue.
 */
#include "npccl_internal.h"
#include "transport/transport.h"
#include "algo/algo.h"
#include "dispatch/dispatch.h"

#include <stdio.h>
#include <string.h>

/* Starts an operation with the exec role; on success op_end() follows. */
static npccl_status_t op_begin(npccl_comm_t c, npccl_coll_t coll, size_t count,
			       npccl_dtype_t dt, npccl_redop_t op, int root, uint64_t seq)
{
	c->lasterr[0] = 0;
	if (c->failed) {
		snprintf(c->lasterr, sizeof(c->lasterr),
			 "the communicator failed earlier and can only be destroyed: %s", c->errmsg);
		return c->failed;
	}
	c->cur = (struct op_desc){ .seq = seq, .count = count, .root = root,
				   .coll = (uint8_t)coll, .dtype = (uint8_t)dt,
				   .redop = (uint8_t)op, .algo = 0 };
	c->in_op = true;
	c->waiting_on = -1;
	c->req_gen++;
	c->deadline_ns = now_ns() + (uint64_t)c->op_timeout_ms * 1000000ull;
	return NPCCL_OK;
}

static npccl_status_t op_end(npccl_comm_t c, npccl_status_t st)
{
	c->in_op = false;
	if (st == NPCCL_OK && c->failed)
		st = c->failed;
	if (st == NPCCL_OK) {
		if (c->cur.coll != NPCCL_COLL_SEND) {
			c->completed_seq = c->cur.seq;
			if (c->nlocal > 1)
				atomic_store_explicit(&c->ctl[c->local_index]->done_seq, c->cur.seq,
						      memory_order_release);
		}
	} else {
		p2p_abandon(c);
		if (!c->lasterr[0])
			snprintf(c->lasterr, sizeof(c->lasterr), "%s",
				 c->errmsg[0] ? c->errmsg : npccl_strerror(st));
	}
	return st;
}

/* Every rank must pick the same algorithm: the choice depends only on the
 * call, the forced/env setting and the agreed cost model. */
static npccl_algo_t choose(npccl_comm_t c, npccl_coll_t coll, size_t bytes, npccl_algo_t forced)
{
	npccl_algo_t a = forced;
	if (a != NPCCL_ALGO_AUTO && algo_valid(c, coll, a))
		return a;
	a = npccl_config()->algo[coll];
	if (a != NPCCL_ALGO_AUTO && algo_valid(c, coll, a))
		return a;
	if (c->choice[coll] != NPCCL_ALGO_AUTO && c->choice_bytes[coll] == bytes)
		return c->choice[coll];
	c->choice_bytes[coll] = bytes;
	return c->choice[coll] = costmodel_choose(c, coll, bytes, NULL);
}

/* The shared-memory mismatch checks: the call's descriptor in the control
 * block, and a hash of it (plus the set of npccl_mem_alloc buffers, which
 * every rank must have made alike) that the fast path puts next to its
 * step counters. */
static void publish_op(npccl_comm_t c)
{
	const struct op_desc *d = &c->cur;
	c->cur_hash = (d->count * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)(uint32_t)d->root << 32) ^
		      ((uint64_t)d->coll << 24) ^ ((uint64_t)d->dtype << 16) ^
		      ((uint64_t)d->redop << 8) ^ d->algo ^ (d->seq * 0xc2b2ae3d27d4eb4full) ^
		      c->mem_sig;
	if (c->nlocal > 1) {
		struct shm_ctl *me = c->ctl[c->local_index];
		me->op_count = d->count;
		me->op_root = d->root;
		me->op_coll = d->coll;
		me->op_dtype = d->dtype;
		me->op_redop = d->redop;
		me->op_algo = d->algo;
		me->op_mem_sig = c->mem_sig;
		atomic_store_explicit(&me->op_seq, d->seq, memory_order_release);
	}
}

npccl_status_t comm_op_begin(struct npccl_comm *c, uint8_t code, uint64_t count)
{
	npccl_status_t st = op_begin(c, NPCCL_COLL_BARRIER, count, NPCCL_UINT8, 0, -1,
				     c->next_seq + 1);
	if (st)
		return st;
	c->next_seq++;
	c->cur.coll = code;
	publish_op(c);
	return NPCCL_OK;
}

npccl_status_t comm_op_end(struct npccl_comm *c, npccl_status_t st)
{
	return op_end(c, st);
}

/* bytes the algorithm choice is made for */
static size_t choice_bytes(const struct npccl_comm *c, const struct op *o)
{
	size_t bytes = o->count * npccl_dtype_size(o->dtype);
	switch (o->coll) {
	case NPCCL_COLL_ALLGATHER:
	case NPCCL_COLL_REDUCE_SCATTER:
	case NPCCL_COLL_GATHER:
	case NPCCL_COLL_SCATTER:
	case NPCCL_COLL_ALLTOALL:
		return bytes * (size_t)c->nranks;
	case NPCCL_COLL_BARRIER:
		return 0;
	default:
		return bytes;
	}
}

/* A collective, with the exec role. */
static npccl_status_t coll_run(npccl_comm_t c, const struct op *o)
{
	npccl_redop_t op = o->coll == NPCCL_COLL_ALLREDUCE || o->coll == NPCCL_COLL_REDUCE ||
				   o->coll == NPCCL_COLL_REDUCE_SCATTER ? o->redop : NPCCL_SUM;
	int root = o->coll == NPCCL_COLL_BROADCAST || o->coll == NPCCL_COLL_REDUCE ||
			   o->coll == NPCCL_COLL_GATHER || o->coll == NPCCL_COLL_SCATTER ? o->root : -1;
	npccl_dtype_t dt = o->coll == NPCCL_COLL_BARRIER ? NPCCL_UINT8 : o->dtype;
	npccl_status_t st = op_begin(c, o->coll, o->count, dt, op, root, c->next_seq + 1);
	if (st)
		return st;
	c->next_seq++;
	c->cur.algo = (uint8_t)choose(c, o->coll, choice_bytes(c, o), o->forced);
	if (o->deterministic && canon_applies(o->coll, dt))
		c->cur.algo = (uint8_t)canon_algo(c, o->coll, (npccl_algo_t)c->cur.algo);
	publish_op(c);
	struct coll_args a = { .coll = o->coll, .sbuf = o->sbuf, .rbuf = o->rbuf, .count = o->count,
			       .dtype = dt, .op = op == NPCCL_AVG ? NPCCL_SUM : op, .root = root,
			       .esize = npccl_dtype_size(dt), .algo = (npccl_algo_t)c->cur.algo };
	const struct group *g = &c->g_all;
	switch (o->coll) {
	case NPCCL_COLL_ALLREDUCE:
		if (a.algo == NPCCL_ALGO_CANONICAL)
			st = canon_reduce(c, g, &a);
		else if (a.algo == NPCCL_ALGO_SHM)
			st = shm_allreduce(c, &a);
		else if (a.algo == NPCCL_ALGO_HIER)
			st = hier_allreduce(c, &a);
		else if (a.algo == NPCCL_ALGO_CMA)
			st = cma_allreduce(c, &a);
		else
			st = algo_allreduce(c, g, &a, a.algo);
		break;
	case NPCCL_COLL_REDUCE_SCATTER:
		st = a.algo == NPCCL_ALGO_CMA		? cma_reduce_scatter(c, &a)
		     : a.algo == NPCCL_ALGO_CANONICAL ? canon_reduce(c, g, &a)
						      : algo_reduce_scatter(c, g, &a, a.algo);
		break;
	case NPCCL_COLL_ALLGATHER:
		st = a.algo == NPCCL_ALGO_CMA ? cma_allgather(c, &a) : algo_allgather(c, g, &a, a.algo);
		break;
	case NPCCL_COLL_BROADCAST:
		st = a.algo == NPCCL_ALGO_CMA ? cma_broadcast(c, &a) : algo_broadcast(c, g, &a, a.algo);
		break;
	case NPCCL_COLL_REDUCE:
		st = a.algo == NPCCL_ALGO_CMA		? cma_reduce(c, &a)
		     : a.algo == NPCCL_ALGO_CANONICAL ? canon_reduce(c, g, &a)
						      : algo_reduce(c, g, &a, a.algo);
		break;
	case NPCCL_COLL_GATHER:
		st = a.algo == NPCCL_ALGO_CMA ? cma_gather(c, &a) : algo_gather(c, g, &a, a.algo);
		break;
	case NPCCL_COLL_SCATTER:
		st = a.algo == NPCCL_ALGO_CMA ? cma_scatter(c, &a) : algo_scatter(c, g, &a, a.algo);
		break;
	case NPCCL_COLL_ALLTOALL:
		st = a.algo == NPCCL_ALGO_CMA ? cma_alltoall(c, &a) : algo_alltoall(c, g, &a, a.algo);
		break;
	case NPCCL_COLL_BARRIER:
		st = a.algo == NPCCL_ALGO_SHM ? shm_barrier(c) : algo_barrier(c, g, a.algo);
		break;
	default:
		st = comm_fail(c, NPCCL_ERR_INVALID_ARG, -1, "unknown collective %d", (int)o->coll);
	}
	if (st == NPCCL_OK && op == NPCCL_AVG &&
	    (o->coll != NPCCL_COLL_REDUCE || c->rank == root))
		reduce_scale_avg(dt, o->rbuf, o->count, c->nranks);
	return op_end(c, st);
}

/* Posts a send or receive, with the exec role; request.c completes it. */
static npccl_status_t p2p_start(npccl_comm_t c, struct npccl_request *r)
{
	const struct op *o = &r->op;
	struct peer *p = &c->peers[o->peer];
	c->lasterr[0] = 0;
	if (c->failed) {
		snprintf(c->lasterr, sizeof(c->lasterr),
			 "the communicator failed earlier and can only be destroyed: %s", c->errmsg);
		return c->failed;
	}
	bool send = o->kind == OPK_SEND;
	c->cur = (struct op_desc){ .seq = send ? ++p->p2p_send_seq : ++p->p2p_recv_seq,
				   .count = o->count, .root = -1, .coll = NPCCL_COLL_SEND,
				   .dtype = (uint8_t)o->dtype };
	size_t bytes = o->count * npccl_dtype_size(o->dtype);
	r->ireq = send ? p2p_post_send(c, o->peer, o->sbuf, bytes)
		       : p2p_post_recv(c, o->peer, o->rbuf, bytes);
	if (!r->ireq) {
		npccl_status_t st = comm_fail(c, NPCCL_ERR_NOMEM, -1, "out of memory for requests");
		snprintf(c->lasterr, sizeof(c->lasterr), "%s", c->errmsg);
		return st;
	}
	r->ireq->gen = 0;
	r->desc = c->cur;
	r->deadline_ns = now_ns() + (uint64_t)o->timeout_ms * 1000000ull;
	return NPCCL_OK;
}

/* npccl_mem_alloc: collective (an operation with a sequence number) */
static npccl_status_t mem_alloc_run(npccl_comm_t c, const struct op *o)
{
	c->lasterr[0] = 0;
	npccl_status_t st = shm_mem_reserve(c);
	if (st)
		return st;
	st = comm_op_begin(c, COLL_MEM_ALLOC, o->count);
	if (st)
		return c->in_op ? op_end(c, st) : st;
	return op_end(c, shm_mem_alloc_run(c, o->count, o->out_ptr));
}

npccl_status_t coll_internal(struct npccl_comm *c, npccl_coll_t coll, const void *sbuf, void *rbuf,
			     size_t count, npccl_dtype_t dt, npccl_redop_t op)
{
	struct op o = { .kind = OPK_COLL, .coll = coll, .sbuf = sbuf, .rbuf = rbuf, .count = count,
			.dtype = dt, .redop = op, .root = -1, .peer = -1,
			.forced = c->forced[coll], .timeout_ms = c->timeout_ms };
	c->op_timeout_ms = o.timeout_ms;
	return coll_run(c, &o);
}

void op_run(struct npccl_comm *c, struct npccl_request *r)
{
	const struct op *o = &r->op;
	npccl_status_t st;
	c->op_timeout_ms = o->timeout_ms;
	switch (o->kind) {
	case OPK_COLL: st = coll_run(c, o); break;
	case OPK_SEND:
	case OPK_RECV: st = p2p_start(c, r); break;
	case OPK_MEM_ALLOC: st = mem_alloc_run(c, o); break;
	case OPK_MEM_FREE: st = shm_mem_free_run(c, o->rbuf); break;
	default: st = NPCCL_ERR_INVALID_ARG; break;
	}
	r->status = st;
	if (st != NPCCL_OK)
		snprintf(r->err, sizeof(r->err), "%s",
			 c->lasterr[0] ? c->lasterr : npccl_strerror(st));
}
