/*
 * collectives.c - the public collective and point-to-point calls: argument
 * checks, the operation descriptor and sequence number, the deadline, the
 * algorithm choice (forced, NPCCL_ALGO, or the cost model), dispatch, AVG
 * finalisation, and turning failures into npccl_comm_last_error() text.
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
	snprintf(c->lasterr, sizeof(c->lasterr), fmt, what);
	return NPCCL_ERR_INVALID_ARG;
}

/* Starts an operation; on success the caller must call op_end(). */
static npccl_status_t op_begin(npccl_comm_t c, npccl_coll_t coll, size_t count,
			       npccl_dtype_t dt, npccl_redop_t op, int root, uint64_t seq)
{
	c->lasterr[0] = 0;
	if (c->failed) {
		snprintf(c->lasterr, sizeof(c->lasterr),
			 "the communicator failed earlier and can only be destroyed: %s", c->errmsg);
		return c->failed;
	}
	if ((unsigned)dt >= NPCCL_NUM_DTYPES)
		return arg_error(c, "invalid dtype %s", "(not an npccl_dtype_t)");
	if ((unsigned)op >= NPCCL_NUM_REDOPS)
		return arg_error(c, "invalid reduction %s", "(not an npccl_redop_t)");
	if (root < -1 || root >= c->nranks)
		return arg_error(c, "root %s is outside 0..nranks-1", "");
	if (count > (SIZE_MAX / 8) / (size_t)c->nranks)
		return arg_error(c, "count %s overflows the address space", "");
	c->cur = (struct op_desc){ .seq = seq, .count = count, .root = root,
				   .coll = (uint8_t)coll, .dtype = (uint8_t)dt,
				   .redop = (uint8_t)op, .algo = 0 };
	c->in_op = true;
	c->waiting_on = -1;
	c->deadline_ns = now_ns() + (uint64_t)c->timeout_ms * 1000000ull;
	atomic_fetch_add(&c->in_call, 1);
	return NPCCL_OK;
}

static npccl_status_t op_end(npccl_comm_t c, npccl_status_t st)
{
	c->in_op = false;
	if (st == NPCCL_OK && c->failed)
		st = c->failed;
	if (st == NPCCL_OK) {
		if (c->cur.coll != NPCCL_COLL_SEND)
			c->completed_seq = c->cur.seq;
	} else if (!c->lasterr[0]) {
		snprintf(c->lasterr, sizeof(c->lasterr), "%s",
			 c->errmsg[0] ? c->errmsg : npccl_strerror(st));
	}
	atomic_fetch_sub(&c->in_call, 1);
	return st;
}

/* Every rank must pick the same algorithm: the choice depends only on the
 * call, the forced/env setting and the agreed cost model. */
static npccl_algo_t choose(npccl_comm_t c, npccl_coll_t coll, size_t bytes)
{
	npccl_algo_t a = c->forced[coll];
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

/* Collective prologue shared by all: sequence number, peers alive, descriptor
 * published for the shared-memory mismatch check. */
static npccl_status_t coll_begin(npccl_comm_t c, npccl_coll_t coll, size_t count,
				 npccl_dtype_t dt, npccl_redop_t op, int root, size_t bytes)
{
	npccl_status_t st = op_begin(c, coll, count, dt, op, root, c->next_seq + 1);
	if (st)
		return st;
	c->next_seq++;
	c->cur.algo = (uint8_t)choose(c, coll, bytes);
	publish_op(c);
	return NPCCL_OK;
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

static struct coll_args make_args(npccl_comm_t c, npccl_coll_t coll, const void *s, void *r,
				  size_t count, npccl_dtype_t dt, npccl_redop_t op, int root)
{
	struct coll_args a = { .coll = coll, .sbuf = s, .rbuf = r, .count = count, .dtype = dt,
			       .op = op == NPCCL_AVG ? NPCCL_SUM : op, .root = root,
			       .esize = npccl_dtype_size(dt), .algo = (npccl_algo_t)c->cur.algo };
	return a;
}

#define CHECK_COMM(c)                                                                  \
	do {                                                                           \
		if (!(c))                                                              \
			return NPCCL_ERR_INVALID_ARG;                                  \
	} while (0)

npccl_status_t npccl_allreduce(const void *sendbuf, void *recvbuf, size_t count,
			       npccl_dtype_t dtype, npccl_redop_t op, npccl_comm_t c)
{
	CHECK_COMM(c);
	size_t es = npccl_dtype_size(dtype), bytes = count * es;
	if (count && (!sendbuf || !recvbuf))
		return arg_error(c, "allreduce: %s buffer is NULL", !sendbuf ? "send" : "receive");
	if (sendbuf != recvbuf && overlaps(sendbuf, bytes, recvbuf, bytes))
		return arg_error(c, "allreduce: %s", "send and receive buffers overlap without "
						     "being equal (not in place)");
	npccl_status_t st = coll_begin(c, NPCCL_COLL_ALLREDUCE, count, dtype, op, -1, bytes);
	if (st)
		return c->in_op ? op_end(c, st) : st;
	struct coll_args a = make_args(c, NPCCL_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, -1);
	if (a.algo == NPCCL_ALGO_SHM)
		st = shm_allreduce(c, &a);
	else if (a.algo == NPCCL_ALGO_HIER)
		st = hier_allreduce(c, &a);
	else
		st = algo_allreduce(c, &c->g_all, &a, a.algo);
	if (st == NPCCL_OK && op == NPCCL_AVG)
		reduce_scale_avg(dtype, recvbuf, count, c->nranks);
	return op_end(c, st);
}

npccl_status_t npccl_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
				    npccl_dtype_t dtype, npccl_redop_t op, npccl_comm_t c)
{
	CHECK_COMM(c);
	size_t es = npccl_dtype_size(dtype), bb = recvcount * es, P = (size_t)c->nranks;
	if (recvcount && (!sendbuf || !recvbuf))
		return arg_error(c, "reduce_scatter: %s buffer is NULL", !sendbuf ? "send" : "receive");
	bool inplace = (const char *)recvbuf == (const char *)sendbuf + (size_t)c->rank * bb;
	if (!inplace && overlaps(sendbuf, bb * P, recvbuf, bb))
		return arg_error(c, "reduce_scatter: %s", "buffers overlap; in place means "
							  "recvbuf == sendbuf + rank*recvcount");
	npccl_status_t st = coll_begin(c, NPCCL_COLL_REDUCE_SCATTER, recvcount, dtype, op, -1,
				       bb * P);
	if (st)
		return c->in_op ? op_end(c, st) : st;
	struct coll_args a = make_args(c, NPCCL_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount,
				       dtype, op, -1);
	st = algo_reduce_scatter(c, &c->g_all, &a, a.algo);
	if (st == NPCCL_OK && op == NPCCL_AVG)
		reduce_scale_avg(dtype, recvbuf, recvcount, c->nranks);
	return op_end(c, st);
}

npccl_status_t npccl_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
			       npccl_dtype_t dtype, npccl_comm_t c)
{
	CHECK_COMM(c);
	size_t es = npccl_dtype_size(dtype), bb = sendcount * es, P = (size_t)c->nranks;
	if (sendcount && (!sendbuf || !recvbuf))
		return arg_error(c, "allgather: %s buffer is NULL", !sendbuf ? "send" : "receive");
	bool inplace = (const char *)sendbuf == (const char *)recvbuf + (size_t)c->rank * bb;
	if (!inplace && overlaps(sendbuf, bb, recvbuf, bb * P))
		return arg_error(c, "allgather: %s", "buffers overlap; in place means "
						     "sendbuf == recvbuf + rank*sendcount");
	npccl_status_t st = coll_begin(c, NPCCL_COLL_ALLGATHER, sendcount, dtype, 0, -1, bb * P);
	if (st)
		return c->in_op ? op_end(c, st) : st;
	struct coll_args a = make_args(c, NPCCL_COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dtype,
				       0, -1);
	return op_end(c, algo_allgather(c, &c->g_all, &a, a.algo));
}

npccl_status_t npccl_broadcast(const void *sendbuf, void *recvbuf, size_t count,
			       npccl_dtype_t dtype, int root, npccl_comm_t c)
{
	CHECK_COMM(c);
	size_t bytes = count * npccl_dtype_size(dtype);
	if (root < 0 || root >= c->nranks)
		return arg_error(c, "broadcast: root %s is outside 0..nranks-1", "");
	if (count && (!recvbuf || (c->rank == root && !sendbuf)))
		return arg_error(c, "broadcast: %s buffer is NULL", !recvbuf ? "receive" : "send");
	if (c->rank == root && sendbuf != recvbuf && overlaps(sendbuf, bytes, recvbuf, bytes))
		return arg_error(c, "broadcast: %s", "buffers overlap without being equal");
	npccl_status_t st = coll_begin(c, NPCCL_COLL_BROADCAST, count, dtype, 0, root, bytes);
	if (st)
		return c->in_op ? op_end(c, st) : st;
	struct coll_args a = make_args(c, NPCCL_COLL_BROADCAST, sendbuf, recvbuf, count, dtype, 0,
				       root);
	return op_end(c, algo_broadcast(c, &c->g_all, &a, a.algo));
}

npccl_status_t npccl_reduce(const void *sendbuf, void *recvbuf, size_t count, npccl_dtype_t dtype,
			    npccl_redop_t op, int root, npccl_comm_t c)
{
	CHECK_COMM(c);
	size_t bytes = count * npccl_dtype_size(dtype);
	if (root < 0 || root >= c->nranks)
		return arg_error(c, "reduce: root %s is outside 0..nranks-1", "");
	if (count && (!sendbuf || (c->rank == root && !recvbuf)))
		return arg_error(c, "reduce: %s buffer is NULL", !sendbuf ? "send" : "receive");
	if (c->rank == root && sendbuf != recvbuf && overlaps(sendbuf, bytes, recvbuf, bytes))
		return arg_error(c, "reduce: %s", "buffers overlap without being equal");
	npccl_status_t st = coll_begin(c, NPCCL_COLL_REDUCE, count, dtype, op, root, bytes);
	if (st)
		return c->in_op ? op_end(c, st) : st;
	struct coll_args a = make_args(c, NPCCL_COLL_REDUCE, sendbuf, recvbuf, count, dtype, op,
				       root);
	st = algo_reduce(c, &c->g_all, &a, a.algo);
	if (st == NPCCL_OK && op == NPCCL_AVG && c->rank == root)
		reduce_scale_avg(dtype, recvbuf, count, c->nranks);
	return op_end(c, st);
}

npccl_status_t npccl_gather(const void *sendbuf, void *recvbuf, size_t sendcount,
			    npccl_dtype_t dtype, int root, npccl_comm_t c)
{
	CHECK_COMM(c);
	size_t bb = sendcount * npccl_dtype_size(dtype), P = (size_t)c->nranks;
	if (root < 0 || root >= c->nranks)
		return arg_error(c, "gather: root %s is outside 0..nranks-1", "");
	if (sendcount && (!sendbuf || (c->rank == root && !recvbuf)))
		return arg_error(c, "gather: %s buffer is NULL", !sendbuf ? "send" : "receive");
	if (c->rank == root && (const char *)sendbuf != (const char *)recvbuf + (size_t)root * bb &&
	    overlaps(sendbuf, bb, recvbuf, bb * P))
		return arg_error(c, "gather: %s", "buffers overlap; in place means "
						  "sendbuf == recvbuf + root*sendcount");
	npccl_status_t st = coll_begin(c, NPCCL_COLL_GATHER, sendcount, dtype, 0, root, bb * P);
	if (st)
		return c->in_op ? op_end(c, st) : st;
	struct coll_args a = make_args(c, NPCCL_COLL_GATHER, sendbuf, recvbuf, sendcount, dtype, 0,
				       root);
	return op_end(c, algo_gather(c, &c->g_all, &a, a.algo));
}

npccl_status_t npccl_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
			     npccl_dtype_t dtype, int root, npccl_comm_t c)
{
	CHECK_COMM(c);
	size_t bb = recvcount * npccl_dtype_size(dtype), P = (size_t)c->nranks;
	if (root < 0 || root >= c->nranks)
		return arg_error(c, "scatter: root %s is outside 0..nranks-1", "");
	if (recvcount && (!recvbuf || (c->rank == root && !sendbuf)))
		return arg_error(c, "scatter: %s buffer is NULL", !recvbuf ? "receive" : "send");
	if (c->rank == root && (const char *)recvbuf != (const char *)sendbuf + (size_t)root * bb &&
	    overlaps(sendbuf, bb * P, recvbuf, bb))
		return arg_error(c, "scatter: %s", "buffers overlap; in place means "
						   "recvbuf == sendbuf + root*recvcount");
	npccl_status_t st = coll_begin(c, NPCCL_COLL_SCATTER, recvcount, dtype, 0, root, bb * P);
	if (st)
		return c->in_op ? op_end(c, st) : st;
	struct coll_args a = make_args(c, NPCCL_COLL_SCATTER, sendbuf, recvbuf, recvcount, dtype, 0,
				       root);
	return op_end(c, algo_scatter(c, &c->g_all, &a, a.algo));
}

npccl_status_t npccl_alltoall(const void *sendbuf, void *recvbuf, size_t count,
			      npccl_dtype_t dtype, npccl_comm_t c)
{
	CHECK_COMM(c);
	size_t bb = count * npccl_dtype_size(dtype), P = (size_t)c->nranks;
	if (count && (!sendbuf || !recvbuf))
		return arg_error(c, "alltoall: %s buffer is NULL", !sendbuf ? "send" : "receive");
	if (sendbuf != recvbuf && overlaps(sendbuf, bb * P, recvbuf, bb * P))
		return arg_error(c, "alltoall: %s", "buffers overlap without being equal");
	npccl_status_t st = coll_begin(c, NPCCL_COLL_ALLTOALL, count, dtype, 0, -1, bb * P);
	if (st)
		return c->in_op ? op_end(c, st) : st;
	struct coll_args a = make_args(c, NPCCL_COLL_ALLTOALL, sendbuf, recvbuf, count, dtype, 0, -1);
	return op_end(c, algo_alltoall(c, &c->g_all, &a, a.algo));
}

npccl_status_t npccl_barrier(npccl_comm_t c)
{
	CHECK_COMM(c);
	npccl_status_t st = coll_begin(c, NPCCL_COLL_BARRIER, 0, NPCCL_UINT8, 0, -1, 0);
	if (st)
		return c->in_op ? op_end(c, st) : st;
	if (c->cur.algo == NPCCL_ALGO_SHM)
		st = shm_barrier(c);
	else
		st = algo_barrier(c, &c->g_all, (npccl_algo_t)c->cur.algo);
	return op_end(c, st);
}

/* ---- point to point ------------------------------------------------------ */

static npccl_status_t p2p_begin(npccl_comm_t c, size_t count, npccl_dtype_t dt, int peer,
				const char *what)
{
	if (peer < 0 || peer >= c->nranks || peer == c->rank) {
		snprintf(c->lasterr, sizeof(c->lasterr),
			 "%s: peer %d is not another rank of this communicator (0..%d, self %d)",
			 what, peer, c->nranks - 1, c->rank);
		return NPCCL_ERR_INVALID_ARG;
	}
	npccl_status_t st = op_begin(c, NPCCL_COLL_SEND, count, dt, 0, -1, 0);
	if (st)
		return st;
	return NPCCL_OK;
}

npccl_status_t npccl_send(const void *buf, size_t count, npccl_dtype_t dtype, int peer,
			  npccl_comm_t c)
{
	CHECK_COMM(c);
	if (count && !buf)
		return arg_error(c, "send: %s buffer is NULL", "the");
	npccl_status_t st = p2p_begin(c, count, dtype, peer, "send");
	if (st)
		return c->in_op ? op_end(c, st) : st;
	c->cur.seq = ++c->peers[peer].p2p_send_seq;
	struct req *r = p2p_post_send(c, peer, buf, count * npccl_dtype_size(dtype));
	return op_end(c, p2p_wait(c, &r, 1));
}

npccl_status_t npccl_recv(void *buf, size_t count, npccl_dtype_t dtype, int peer, npccl_comm_t c)
{
	CHECK_COMM(c);
	if (count && !buf)
		return arg_error(c, "recv: %s buffer is NULL", "the");
	npccl_status_t st = p2p_begin(c, count, dtype, peer, "recv");
	if (st)
		return c->in_op ? op_end(c, st) : st;
	c->cur.seq = ++c->peers[peer].p2p_recv_seq;
	struct req *r = p2p_post_recv(c, peer, buf, count * npccl_dtype_size(dtype));
	return op_end(c, p2p_wait(c, &r, 1));
}

npccl_status_t npccl_sendrecv(const void *sendbuf, size_t sendcount, int dst, void *recvbuf,
			      size_t recvcount, int src, npccl_dtype_t dtype, npccl_comm_t c)
{
	CHECK_COMM(c);
	if ((sendcount && !sendbuf) || (recvcount && !recvbuf))
		return arg_error(c, "sendrecv: %s buffer is NULL", sendcount && !sendbuf ? "send"
											  : "receive");
	if (src < 0 || src >= c->nranks || src == c->rank)
		return arg_error(c, "sendrecv: source %s is not another rank", "");
	npccl_status_t st = p2p_begin(c, sendcount, dtype, dst, "sendrecv");
	if (st)
		return c->in_op ? op_end(c, st) : st;
	size_t es = npccl_dtype_size(dtype);
	struct req *r[2];
	c->cur.seq = ++c->peers[src].p2p_recv_seq;
	c->cur.count = recvcount;
	r[0] = p2p_post_recv(c, src, recvbuf, recvcount * es);
	c->cur.seq = ++c->peers[dst].p2p_send_seq;
	c->cur.count = sendcount;
	r[1] = p2p_post_send(c, dst, sendbuf, sendcount * es);
	return op_end(c, p2p_wait(c, r, 2));
}
