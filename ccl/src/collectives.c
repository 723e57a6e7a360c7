/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * collectives.c - the public collective and point-to-point calls, blocking
 * and non-blocking: argument checks (in the calling thread, reported at
 * once), then a request (request.c) that runs in call order. When its turn
 * comes, op_run() gives it a sequence number, a deadline and a descriptor,
 * chooses the algorithm (forced, NPCCL_ALGO, or the cost model), dispatches,
 * finishes AVG, and turns failures into the request's text.
 */
#include "npccl_internal.h"

#include <stdio.h>
#include <string.h>

static bool overlaps(const void *a, size_t alen, const void *b, size_t blen)
{
	const char *x = a, *y = b;
	return alen && blen && x < y + blen && y < x + alen;
}

static npccl_status_t arg_error(npccl_comm_t c, const char *fmt, const char *what)
{
	tls_error_set(c, fmt, what);
	return NPCCL_ERR_INVALID_ARG;
}

/* dtype, reduction and count checks shared by every call */
static npccl_status_t check_common(npccl_comm_t c, const char *name, size_t count,
				   npccl_dtype_t dt, npccl_redop_t op)
{
	if ((unsigned)dt >= NPCCL_NUM_DTYPES) {
		tls_error_set(c, "%s: invalid dtype %d (not an npccl_dtype_t)", name, (int)dt);
		return NPCCL_ERR_INVALID_ARG;
	}
	if ((unsigned)op >= NPCCL_NUM_REDOPS) {
		tls_error_set(c, "%s: invalid reduction %d (not an npccl_redop_t)", name, (int)op);
		return NPCCL_ERR_INVALID_ARG;
	}
	if (count > (SIZE_MAX / 8) / (size_t)c->nranks) {
		tls_error_set(c, "%s: count %zu overflows the address space", name, count);
		return NPCCL_ERR_INVALID_ARG;
	}
	return NPCCL_OK;
}

static npccl_status_t check_root(npccl_comm_t c, const char *name, int root)
{
	if (root < 0 || root >= c->nranks) {
		tls_error_set(c, "%s: root %d is outside 0..%d", name, root, c->nranks - 1);
		return NPCCL_ERR_INVALID_ARG;
	}
	return NPCCL_OK;
}

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
	} else if (!c->lasterr[0]) {
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
		c->cur.algo = (uint8_t)canon_algo(c, o->coll);
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
		st = a.algo == NPCCL_ALGO_CANONICAL ? canon_reduce(c, g, &a)
						    : algo_reduce(c, g, &a, a.algo);
		break;
	case NPCCL_COLL_GATHER: st = algo_gather(c, g, &a, a.algo); break;
	case NPCCL_COLL_SCATTER: st = algo_scatter(c, g, &a, a.algo); break;
	case NPCCL_COLL_ALLTOALL: st = algo_alltoall(c, g, &a, a.algo); break;
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

void op_run(struct npccl_comm *c, struct npccl_request *r)
{
	const struct op *o = &r->op;
	npccl_status_t st;
	c->op_timeout_ms = o->timeout_ms;
	switch (o->kind) {
	case OPK_COLL: st = coll_run(c, o); break;
	case OPK_SEND:
	case OPK_RECV: st = p2p_start(c, r); break;
	case OPK_MEM_ALLOC: st = shm_mem_alloc_run(c, o->count, o->out_ptr); break;
	case OPK_MEM_FREE: st = shm_mem_free_run(c, o->rbuf); break;
	default: st = NPCCL_ERR_INVALID_ARG; break;
	}
	r->status = st;
	if (st != NPCCL_OK)
		snprintf(r->err, sizeof(r->err), "%s",
			 c->lasterr[0] ? c->lasterr : npccl_strerror(st));
}

/* ---- submission ------------------------------------------------------------ */

#define CHECK_COMM(c)                                                                  \
	do {                                                                           \
		if (!(c))                                                              \
			return NPCCL_ERR_INVALID_ARG;                                  \
		tls_error_clear(c);                                                    \
	} while (0)

#define CHECK_REQ(c, req)                                                              \
	do {                                                                           \
		if (!(req))                                                            \
			return arg_error(c, "%s: req (the request to return) is NULL", \
					 __func__);                                    \
		*(req) = NULL;                                                         \
	} while (0)

static npccl_status_t submit_coll(npccl_comm_t c, npccl_coll_t coll, const void *s, void *r,
				  size_t count, npccl_dtype_t dt, npccl_redop_t op, int root,
				  npccl_request_t *req)
{
	if (group_depth() > 0) {
		tls_error_set(c, "npccl_%s inside npccl_group_start/npccl_group_end: a group "
				 "holds only npccl_send, npccl_recv and npccl_sendrecv; use "
				 "npccl_%s_async to overlap collectives", npccl_coll_name(coll),
			      npccl_coll_name(coll));
		return NPCCL_ERR_UNSUPPORTED;
	}
	struct op o = { .kind = OPK_COLL, .coll = coll, .sbuf = s, .rbuf = r, .count = count,
			.dtype = dt, .redop = op, .root = root, .peer = -1 };
	return req_submit(c, &o, req);
}

static npccl_status_t allreduce_check(npccl_comm_t c, const void *sendbuf, void *recvbuf,
				      size_t count, npccl_dtype_t dtype, npccl_redop_t op)
{
	npccl_status_t st = check_common(c, "allreduce", count, dtype, op);
	if (st)
		return st;
	size_t bytes = count * npccl_dtype_size(dtype);
	if (count && (!sendbuf || !recvbuf))
		return arg_error(c, "allreduce: %s buffer is NULL", !sendbuf ? "send" : "receive");
	if (sendbuf != recvbuf && overlaps(sendbuf, bytes, recvbuf, bytes))
		return arg_error(c, "allreduce: %s", "send and receive buffers overlap without "
						     "being equal (not in place)");
	return NPCCL_OK;
}

static npccl_status_t allreduce_post(const void *sendbuf, void *recvbuf, size_t count,
				     npccl_dtype_t dtype, npccl_redop_t op, npccl_comm_t c,
				     npccl_request_t *req)
{
	npccl_status_t st = allreduce_check(c, sendbuf, recvbuf, count, dtype, op);
	return st ? st : submit_coll(c, NPCCL_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op,
				     -1, req);
}

npccl_status_t npccl_allreduce(const void *sendbuf, void *recvbuf, size_t count,
			       npccl_dtype_t dtype, npccl_redop_t op, npccl_comm_t c)
{
	CHECK_COMM(c);
	return allreduce_post(sendbuf, recvbuf, count, dtype, op, c, NULL);
}

npccl_status_t npccl_allreduce_async(const void *sendbuf, void *recvbuf, size_t count,
				     npccl_dtype_t dtype, npccl_redop_t op, npccl_comm_t c,
				     npccl_request_t *req)
{
	CHECK_COMM(c);
	CHECK_REQ(c, req);
	return allreduce_post(sendbuf, recvbuf, count, dtype, op, c, req);
}

static npccl_status_t reduce_scatter_post(const void *sendbuf, void *recvbuf, size_t recvcount,
					  npccl_dtype_t dtype, npccl_redop_t op, npccl_comm_t c,
					  npccl_request_t *req)
{
	npccl_status_t st = check_common(c, "reduce_scatter", recvcount, dtype, op);
	if (st)
		return st;
	size_t es = npccl_dtype_size(dtype), bb = recvcount * es, P = (size_t)c->nranks;
	if (recvcount && (!sendbuf || !recvbuf))
		return arg_error(c, "reduce_scatter: %s buffer is NULL", !sendbuf ? "send" : "receive");
	bool inplace = (const char *)recvbuf == (const char *)sendbuf + (size_t)c->rank * bb;
	if (!inplace && overlaps(sendbuf, bb * P, recvbuf, bb))
		return arg_error(c, "reduce_scatter: %s", "buffers overlap; in place means "
							  "recvbuf == sendbuf + rank*recvcount");
	return submit_coll(c, NPCCL_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op,
			   -1, req);
}

npccl_status_t npccl_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
				    npccl_dtype_t dtype, npccl_redop_t op, npccl_comm_t c)
{
	CHECK_COMM(c);
	return reduce_scatter_post(sendbuf, recvbuf, recvcount, dtype, op, c, NULL);
}

npccl_status_t npccl_reduce_scatter_async(const void *sendbuf, void *recvbuf, size_t recvcount,
					  npccl_dtype_t dtype, npccl_redop_t op, npccl_comm_t c,
					  npccl_request_t *req)
{
	CHECK_COMM(c);
	CHECK_REQ(c, req);
	return reduce_scatter_post(sendbuf, recvbuf, recvcount, dtype, op, c, req);
}

static npccl_status_t allgather_post(const void *sendbuf, void *recvbuf, size_t sendcount,
				     npccl_dtype_t dtype, npccl_comm_t c, npccl_request_t *req)
{
	npccl_status_t st = check_common(c, "allgather", sendcount, dtype, NPCCL_SUM);
	if (st)
		return st;
	size_t es = npccl_dtype_size(dtype), bb = sendcount * es, P = (size_t)c->nranks;
	if (sendcount && (!sendbuf || !recvbuf))
		return arg_error(c, "allgather: %s buffer is NULL", !sendbuf ? "send" : "receive");
	bool inplace = (const char *)sendbuf == (const char *)recvbuf + (size_t)c->rank * bb;
	if (!inplace && overlaps(sendbuf, bb, recvbuf, bb * P))
		return arg_error(c, "allgather: %s", "buffers overlap; in place means "
						     "sendbuf == recvbuf + rank*sendcount");
	return submit_coll(c, NPCCL_COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, NPCCL_SUM,
			   -1, req);
}

npccl_status_t npccl_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
			       npccl_dtype_t dtype, npccl_comm_t c)
{
	CHECK_COMM(c);
	return allgather_post(sendbuf, recvbuf, sendcount, dtype, c, NULL);
}

npccl_status_t npccl_allgather_async(const void *sendbuf, void *recvbuf, size_t sendcount,
				     npccl_dtype_t dtype, npccl_comm_t c, npccl_request_t *req)
{
	CHECK_COMM(c);
	CHECK_REQ(c, req);
	return allgather_post(sendbuf, recvbuf, sendcount, dtype, c, req);
}

static npccl_status_t broadcast_post(const void *sendbuf, void *recvbuf, size_t count,
				     npccl_dtype_t dtype, int root, npccl_comm_t c,
				     npccl_request_t *req)
{
	npccl_status_t st = check_common(c, "broadcast", count, dtype, NPCCL_SUM);
	if (!st)
		st = check_root(c, "broadcast", root);
	if (st)
		return st;
	size_t bytes = count * npccl_dtype_size(dtype);
	if (count && (!recvbuf || (c->rank == root && !sendbuf)))
		return arg_error(c, "broadcast: %s buffer is NULL", !recvbuf ? "receive" : "send");
	if (c->rank == root && sendbuf != recvbuf && overlaps(sendbuf, bytes, recvbuf, bytes))
		return arg_error(c, "broadcast: %s", "buffers overlap without being equal");
	return submit_coll(c, NPCCL_COLL_BROADCAST, sendbuf, recvbuf, count, dtype, NPCCL_SUM, root,
			   req);
}

npccl_status_t npccl_broadcast(const void *sendbuf, void *recvbuf, size_t count,
			       npccl_dtype_t dtype, int root, npccl_comm_t c)
{
	CHECK_COMM(c);
	return broadcast_post(sendbuf, recvbuf, count, dtype, root, c, NULL);
}

npccl_status_t npccl_broadcast_async(const void *sendbuf, void *recvbuf, size_t count,
				     npccl_dtype_t dtype, int root, npccl_comm_t c,
				     npccl_request_t *req)
{
	CHECK_COMM(c);
	CHECK_REQ(c, req);
	return broadcast_post(sendbuf, recvbuf, count, dtype, root, c, req);
}

static npccl_status_t reduce_post(const void *sendbuf, void *recvbuf, size_t count,
				  npccl_dtype_t dtype, npccl_redop_t op, int root, npccl_comm_t c,
				  npccl_request_t *req)
{
	npccl_status_t st = check_common(c, "reduce", count, dtype, op);
	if (!st)
		st = check_root(c, "reduce", root);
	if (st)
		return st;
	size_t bytes = count * npccl_dtype_size(dtype);
	if (count && (!sendbuf || (c->rank == root && !recvbuf)))
		return arg_error(c, "reduce: %s buffer is NULL", !sendbuf ? "send" : "receive");
	if (c->rank == root && sendbuf != recvbuf && overlaps(sendbuf, bytes, recvbuf, bytes))
		return arg_error(c, "reduce: %s", "buffers overlap without being equal");
	return submit_coll(c, NPCCL_COLL_REDUCE, sendbuf, recvbuf, count, dtype, op, root, req);
}

npccl_status_t npccl_reduce(const void *sendbuf, void *recvbuf, size_t count, npccl_dtype_t dtype,
			    npccl_redop_t op, int root, npccl_comm_t c)
{
	CHECK_COMM(c);
	return reduce_post(sendbuf, recvbuf, count, dtype, op, root, c, NULL);
}

npccl_status_t npccl_reduce_async(const void *sendbuf, void *recvbuf, size_t count,
				  npccl_dtype_t dtype, npccl_redop_t op, int root, npccl_comm_t c,
				  npccl_request_t *req)
{
	CHECK_COMM(c);
	CHECK_REQ(c, req);
	return reduce_post(sendbuf, recvbuf, count, dtype, op, root, c, req);
}

static npccl_status_t gather_post(const void *sendbuf, void *recvbuf, size_t sendcount,
				  npccl_dtype_t dtype, int root, npccl_comm_t c,
				  npccl_request_t *req)
{
	npccl_status_t st = check_common(c, "gather", sendcount, dtype, NPCCL_SUM);
	if (!st)
		st = check_root(c, "gather", root);
	if (st)
		return st;
	size_t bb = sendcount * npccl_dtype_size(dtype), P = (size_t)c->nranks;
	if (sendcount && (!sendbuf || (c->rank == root && !recvbuf)))
		return arg_error(c, "gather: %s buffer is NULL", !sendbuf ? "send" : "receive");
	if (c->rank == root && (const char *)sendbuf != (const char *)recvbuf + (size_t)root * bb &&
	    overlaps(sendbuf, bb, recvbuf, bb * P))
		return arg_error(c, "gather: %s", "buffers overlap; in place means "
						  "sendbuf == recvbuf + root*sendcount");
	return submit_coll(c, NPCCL_COLL_GATHER, sendbuf, recvbuf, sendcount, dtype, NPCCL_SUM,
			   root, req);
}

npccl_status_t npccl_gather(const void *sendbuf, void *recvbuf, size_t sendcount,
			    npccl_dtype_t dtype, int root, npccl_comm_t c)
{
	CHECK_COMM(c);
	return gather_post(sendbuf, recvbuf, sendcount, dtype, root, c, NULL);
}

npccl_status_t npccl_gather_async(const void *sendbuf, void *recvbuf, size_t sendcount,
				  npccl_dtype_t dtype, int root, npccl_comm_t c,
				  npccl_request_t *req)
{
	CHECK_COMM(c);
	CHECK_REQ(c, req);
	return gather_post(sendbuf, recvbuf, sendcount, dtype, root, c, req);
}

static npccl_status_t scatter_post(const void *sendbuf, void *recvbuf, size_t recvcount,
				   npccl_dtype_t dtype, int root, npccl_comm_t c,
				   npccl_request_t *req)
{
	npccl_status_t st = check_common(c, "scatter", recvcount, dtype, NPCCL_SUM);
	if (!st)
		st = check_root(c, "scatter", root);
	if (st)
		return st;
	size_t bb = recvcount * npccl_dtype_size(dtype), P = (size_t)c->nranks;
	if (recvcount && (!recvbuf || (c->rank == root && !sendbuf)))
		return arg_error(c, "scatter: %s buffer is NULL", !recvbuf ? "receive" : "send");
	if (c->rank == root && (const char *)recvbuf != (const char *)sendbuf + (size_t)root * bb &&
	    overlaps(sendbuf, bb * P, recvbuf, bb))
		return arg_error(c, "scatter: %s", "buffers overlap; in place means "
						   "recvbuf == sendbuf + root*recvcount");
	return submit_coll(c, NPCCL_COLL_SCATTER, sendbuf, recvbuf, recvcount, dtype, NPCCL_SUM,
			   root, req);
}

npccl_status_t npccl_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
			     npccl_dtype_t dtype, int root, npccl_comm_t c)
{
	CHECK_COMM(c);
	return scatter_post(sendbuf, recvbuf, recvcount, dtype, root, c, NULL);
}

npccl_status_t npccl_scatter_async(const void *sendbuf, void *recvbuf, size_t recvcount,
				   npccl_dtype_t dtype, int root, npccl_comm_t c,
				   npccl_request_t *req)
{
	CHECK_COMM(c);
	CHECK_REQ(c, req);
	return scatter_post(sendbuf, recvbuf, recvcount, dtype, root, c, req);
}

static npccl_status_t alltoall_post(const void *sendbuf, void *recvbuf, size_t count,
				    npccl_dtype_t dtype, npccl_comm_t c, npccl_request_t *req)
{
	npccl_status_t st = check_common(c, "alltoall", count, dtype, NPCCL_SUM);
	if (st)
		return st;
	size_t bb = count * npccl_dtype_size(dtype), P = (size_t)c->nranks;
	if (count && (!sendbuf || !recvbuf))
		return arg_error(c, "alltoall: %s buffer is NULL", !sendbuf ? "send" : "receive");
	if (sendbuf != recvbuf && overlaps(sendbuf, bb * P, recvbuf, bb * P))
		return arg_error(c, "alltoall: %s", "buffers overlap without being equal");
	return submit_coll(c, NPCCL_COLL_ALLTOALL, sendbuf, recvbuf, count, dtype, NPCCL_SUM, -1,
			   req);
}

npccl_status_t npccl_alltoall(const void *sendbuf, void *recvbuf, size_t count,
			      npccl_dtype_t dtype, npccl_comm_t c)
{
	CHECK_COMM(c);
	return alltoall_post(sendbuf, recvbuf, count, dtype, c, NULL);
}

npccl_status_t npccl_alltoall_async(const void *sendbuf, void *recvbuf, size_t count,
				    npccl_dtype_t dtype, npccl_comm_t c, npccl_request_t *req)
{
	CHECK_COMM(c);
	CHECK_REQ(c, req);
	return alltoall_post(sendbuf, recvbuf, count, dtype, c, req);
}

npccl_status_t npccl_barrier(npccl_comm_t c)
{
	CHECK_COMM(c);
	return submit_coll(c, NPCCL_COLL_BARRIER, NULL, NULL, 0, NPCCL_UINT8, NPCCL_SUM, -1, NULL);
}

npccl_status_t npccl_barrier_async(npccl_comm_t c, npccl_request_t *req)
{
	CHECK_COMM(c);
	CHECK_REQ(c, req);
	return submit_coll(c, NPCCL_COLL_BARRIER, NULL, NULL, 0, NPCCL_UINT8, NPCCL_SUM, -1, req);
}

/* ---- point to point ------------------------------------------------------ */

static npccl_status_t p2p_check(npccl_comm_t c, const char *what, const void *buf, size_t count,
				npccl_dtype_t dt, int peer)
{
	npccl_status_t st = check_common(c, what, count, dt, NPCCL_SUM);
	if (st)
		return st;
	if (count && !buf) {
		tls_error_set(c, "%s: the buffer is NULL", what);
		return NPCCL_ERR_INVALID_ARG;
	}
	if (peer < 0 || peer >= c->nranks || peer == c->rank) {
		tls_error_set(c, "%s: peer %d is not another rank of this communicator (0..%d, self %d)",
			      what, peer, c->nranks - 1, c->rank);
		return NPCCL_ERR_INVALID_ARG;
	}
	return NPCCL_OK;
}

static struct op p2p_op(int kind, const void *s, void *r, size_t count, npccl_dtype_t dt, int peer)
{
	return (struct op){ .kind = (uint8_t)kind, .coll = kind == OPK_SEND ? NPCCL_COLL_SEND
									 : NPCCL_COLL_RECV,
			    .sbuf = s, .rbuf = r, .count = count, .dtype = dt, .root = -1,
			    .peer = peer };
}

npccl_status_t npccl_send(const void *buf, size_t count, npccl_dtype_t dtype, int peer,
			  npccl_comm_t c)
{
	CHECK_COMM(c);
	npccl_status_t st = p2p_check(c, "send", buf, count, dtype, peer);
	if (st)
		return st;
	struct op o = p2p_op(OPK_SEND, buf, NULL, count, dtype, peer);
	return group_depth() > 0 ? group_record(c, &o) : req_submit(c, &o, NULL);
}

npccl_status_t npccl_recv(void *buf, size_t count, npccl_dtype_t dtype, int peer, npccl_comm_t c)
{
	CHECK_COMM(c);
	npccl_status_t st = p2p_check(c, "recv", buf, count, dtype, peer);
	if (st)
		return st;
	struct op o = p2p_op(OPK_RECV, NULL, buf, count, dtype, peer);
	return group_depth() > 0 ? group_record(c, &o) : req_submit(c, &o, NULL);
}

npccl_status_t npccl_send_async(const void *buf, size_t count, npccl_dtype_t dtype, int peer,
				npccl_comm_t c, npccl_request_t *req)
{
	CHECK_COMM(c);
	CHECK_REQ(c, req);
	npccl_status_t st = p2p_check(c, "send", buf, count, dtype, peer);
	if (st)
		return st;
	struct op o = p2p_op(OPK_SEND, buf, NULL, count, dtype, peer);
	return req_submit(c, &o, req);
}

npccl_status_t npccl_recv_async(void *buf, size_t count, npccl_dtype_t dtype, int peer,
				npccl_comm_t c, npccl_request_t *req)
{
	CHECK_COMM(c);
	CHECK_REQ(c, req);
	npccl_status_t st = p2p_check(c, "recv", buf, count, dtype, peer);
	if (st)
		return st;
	struct op o = p2p_op(OPK_RECV, NULL, buf, count, dtype, peer);
	return req_submit(c, &o, req);
}

npccl_status_t npccl_sendrecv(const void *sendbuf, size_t sendcount, int dst, void *recvbuf,
			      size_t recvcount, int src, npccl_dtype_t dtype, npccl_comm_t c)
{
	CHECK_COMM(c);
	npccl_status_t st = p2p_check(c, "sendrecv (send)", sendbuf, sendcount, dtype, dst);
	if (!st)
		st = p2p_check(c, "sendrecv (receive)", recvbuf, recvcount, dtype, src);
	if (st)
		return st;
	struct op ops[2] = { p2p_op(OPK_RECV, NULL, recvbuf, recvcount, dtype, src),
			     p2p_op(OPK_SEND, sendbuf, NULL, sendcount, dtype, dst) };
	if (group_depth() > 0) {
		st = group_record(c, &ops[0]);
		return st ? st : group_record(c, &ops[1]);
	}
	return req_run_batch(c, ops, 2);
}
