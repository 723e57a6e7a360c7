/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * collectives.c - the public collective, point-to-point and npccl_mem_*
 * calls, blocking and non-blocking: argument checks (in the calling
 * thread, reported at once), then a request (request.c) that runs in call
 * order; when its turn comes, dispatch.c runs it.
 */
#include "npccl_internal.h"
#include "transport/transport.h"
#include "algo/algo.h"
#include "dispatch/dispatch.h"
#include "queue/queue.h"
#include "setup/setup.h"

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

/*
 * The public collectives: one row each gives the blocking call and its
 * _async form, which differ only in the request (NULL: run now, blocking)
 * and in checking that the caller passed somewhere to return it.
 */
#define UNPAREN(...) __VA_ARGS__
#define COLL_CALLS(name, params, args)                                                 \
	npccl_status_t npccl_##name(UNPAREN params, npccl_comm_t c)                    \
	{                                                                              \
		CHECK_COMM(c);                                                         \
		return name##_post(UNPAREN args, c, NULL);                             \
	}                                                                              \
	npccl_status_t npccl_##name##_async(UNPAREN params, npccl_comm_t c,            \
					    npccl_request_t *req)                      \
	{                                                                              \
		CHECK_COMM(c);                                                         \
		CHECK_REQ(c, req);                                                     \
		return name##_post(UNPAREN args, c, req);                              \
	}

#define BUFS const void *sendbuf, void *recvbuf
COLL_CALLS(allreduce, (BUFS, size_t count, npccl_dtype_t dtype, npccl_redop_t op),
	   (sendbuf, recvbuf, count, dtype, op))
COLL_CALLS(reduce_scatter, (BUFS, size_t recvcount, npccl_dtype_t dtype, npccl_redop_t op),
	   (sendbuf, recvbuf, recvcount, dtype, op))
COLL_CALLS(allgather, (BUFS, size_t sendcount, npccl_dtype_t dtype),
	   (sendbuf, recvbuf, sendcount, dtype))
COLL_CALLS(broadcast, (BUFS, size_t count, npccl_dtype_t dtype, int root),
	   (sendbuf, recvbuf, count, dtype, root))
COLL_CALLS(reduce, (BUFS, size_t count, npccl_dtype_t dtype, npccl_redop_t op, int root),
	   (sendbuf, recvbuf, count, dtype, op, root))
COLL_CALLS(gather, (BUFS, size_t sendcount, npccl_dtype_t dtype, int root),
	   (sendbuf, recvbuf, sendcount, dtype, root))
COLL_CALLS(scatter, (BUFS, size_t recvcount, npccl_dtype_t dtype, int root),
	   (sendbuf, recvbuf, recvcount, dtype, root))
COLL_CALLS(alltoall, (BUFS, size_t count, npccl_dtype_t dtype), (sendbuf, recvbuf, count, dtype))
#undef BUFS

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
	/* both travel at once: the receive would overwrite what is still being sent */
	size_t es = npccl_dtype_size(dtype);
	if (overlaps(sendbuf, sendcount * es, recvbuf, recvcount * es))
		return arg_error(c, "sendrecv: %s", "the send and receive buffers overlap (in place "
						    "is not possible here: the message is received while "
						    "the other is still being sent); receive into a "
						    "separate buffer and copy");
	struct op ops[2] = { p2p_op(OPK_RECV, NULL, recvbuf, recvcount, dtype, src),
			     p2p_op(OPK_SEND, sendbuf, NULL, sendcount, dtype, dst) };
	if (group_depth() > 0) {
		st = group_record(c, &ops[0]);
		return st ? st : group_record(c, &ops[1]);
	}
	return req_run_batch(c, ops, 2);
}

/* ---- npccl_mem_alloc / npccl_mem_free (shm_mem.c runs them) ---------------- */

npccl_status_t npccl_mem_alloc(npccl_comm_t c, size_t bytes, void **ptr)
{
	if (!c || !ptr)
		return NPCCL_ERR_INVALID_ARG;
	tls_error_clear(c);
	*ptr = NULL;
	if (bytes == 0) {
		tls_error_set(c, "npccl_mem_alloc: size 0");
		return NPCCL_ERR_INVALID_ARG;
	}
	/* refused up front, as a collective's count, before the peers are involved
	 * (a failure there would leave the communicator unusable) */
	if (bytes > SIZE_MAX / 8) {
		tls_error_set(c, "npccl_mem_alloc: %zu bytes overflow the address space", bytes);
		return NPCCL_ERR_INVALID_ARG;
	}
	if (group_depth() > 0) {
		tls_error_set(c, "npccl_mem_alloc inside npccl_group_start/npccl_group_end: a "
				 "group holds only point-to-point calls");
		return NPCCL_ERR_UNSUPPORTED;
	}
	struct op o = { .kind = OPK_MEM_ALLOC, .count = bytes, .out_ptr = ptr, .root = -1,
			.peer = -1 };
	return req_submit(c, &o, NULL);
}

npccl_status_t npccl_mem_free(npccl_comm_t c, void *ptr)
{
	if (!c)
		return NPCCL_ERR_INVALID_ARG;
	tls_error_clear(c);
	if (!ptr)
		return NPCCL_OK;
	struct op o = { .kind = OPK_MEM_FREE, .rbuf = ptr, .root = -1, .peer = -1 };
	return req_submit(c, &o, NULL);
}
