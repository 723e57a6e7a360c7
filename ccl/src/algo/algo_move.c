/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * algo_move.c - collectives that move data without reducing it, built on
 * point-to-point messages: AllGather (ring, Bruck "recdoubling", direct),
 * Broadcast (pipelined chain "ring", pipelined binary tree, direct), Gather
 * and Scatter (direct, binomial tree), AllToAll (direct) and Barrier
 * (dissemination). `count` is the per-rank block for AllGather, Gather,
 * Scatter and AllToAll; in-place buffers follow npccl.h.
 */
#include "npccl_internal.h"
#include "transport/transport.h"
#include "algo/algo.h"

#include <string.h>

#define R(g, i) ((g)->ranks[(i)])

static npccl_status_t nomem(struct npccl_comm *c)
{
	return comm_fail(c, NPCCL_ERR_NOMEM, -1, "out of memory for buffers or requests");
}

npccl_status_t algo_allgather(struct npccl_comm *c, const struct group *g,
			      const struct coll_args *a, npccl_algo_t algo)
{
	int P = g->n, me = g->me;
	size_t bb = a->count * a->esize;
	char *mine = a->rbuf + (size_t)me * bb;
	if (mine != a->sbuf && bb)
		memmove(mine, a->sbuf, bb);
	if (P == 1)
		return NPCCL_OK;
	npccl_status_t st;
	if (algo == NPCCL_ALGO_DIRECT) {
		for (int k = 1; k < P; k++) {
			int to = (me + k) % P, from = (me - k + P) % P;
			if (!p2p_post_recv(c, R(g, from), a->rbuf + (size_t)from * bb, bb) ||
			    !p2p_post_send(c, R(g, to), mine, bb))
				return nomem(c);
		}
		return p2p_wait_all(c);
	}
	if (algo == NPCCL_ALGO_RECDOUBLING) {	/* Bruck: log2(P) rounds, any P */
		char *tmp = comm_scratch(c, bb * (size_t)P);
		if (!tmp && bb)
			return nomem(c);
		if (bb)
			memcpy(tmp, mine, bb);
		for (int dist = 1; dist < P; dist *= 2) {
			int cnt = MIN(dist, P - dist);
			st = p2p_sendrecv(c, R(g, (me - dist + P) % P), tmp, (size_t)cnt * bb,
					  R(g, (me + dist) % P), tmp + (size_t)dist * bb,
					  (size_t)cnt * bb);
			if (st)
				return st;
		}
		for (int i = 1; i < P && bb; i++)
			memcpy(a->rbuf + (size_t)((me + i) % P) * bb, tmp + (size_t)i * bb, bb);
		return NPCCL_OK;
	}
	int right = R(g, (me + 1) % P), left = R(g, (me - 1 + P) % P);
	for (int s = 0; s < P - 1; s++) {
		int sb = (me - s + P) % P, rb = (me - s - 1 + P) % P;
		st = p2p_sendrecv(c, right, a->rbuf + (size_t)sb * bb, bb, left,
				  a->rbuf + (size_t)rb * bb, bb);
		if (st)
			return st;
	}
	return NPCCL_OK;
}

npccl_status_t algo_broadcast(struct npccl_comm *c, const struct group *g,
			      const struct coll_args *a, npccl_algo_t algo)
{
	int P = g->n, me = g->me, rt = a->root;
	size_t es = a->esize, bytes = a->count * es;
	if (me == rt && a->rbuf != a->sbuf && bytes)
		memmove(a->rbuf, a->sbuf, bytes);
	if (P == 1)
		return NPCCL_OK;
	npccl_status_t st;
	if (algo == NPCCL_ALGO_DIRECT) {
		if (me != rt) {
			struct req *r = p2p_post_recv(c, R(g, rt), a->rbuf, bytes);
			return p2p_wait(c, &r, 1);
		}
		for (int k = 1; k < P; k++)
			if (!p2p_post_send(c, R(g, (me + k) % P), a->rbuf, bytes))
				return nomem(c);
		return p2p_wait_all(c);
	}
	int v = (me - rt + P) % P;
#define VR(x) R(g, ((x) + rt) % P)
	int parent, child[2];
	if (algo == NPCCL_ALGO_TREE) {
		parent = v == 0 ? -1 : VR((v - 1) / 2);
		child[0] = 2 * v + 1 < P ? VR(2 * v + 1) : -1;
		child[1] = 2 * v + 2 < P ? VR(2 * v + 2) : -1;
	} else {
		parent = v == 0 ? -1 : VR(v - 1);
		child[0] = v + 1 < P ? VR(v + 1) : -1;
		child[1] = -1;
	}
#undef VR
	size_t ce = MAX((size_t)1, npccl_config()->pipeline_chunk / es);
	size_t nchunks = MAX((a->count + ce - 1) / ce, (size_t)1);
	for (size_t k = 0; k < nchunks; k++) {
		size_t o = k * ce, len = a->count ? MIN(ce, a->count - o) : 0;
		if (parent >= 0) {
			struct req *r = p2p_post_recv(c, parent, a->rbuf + o * es, len * es);
			if ((st = p2p_wait(c, &r, 1)))
				return st;
		}
		for (int ch = 0; ch < 2; ch++)
			if (child[ch] >= 0 && !p2p_post_send(c, child[ch], a->rbuf + o * es, len * es))
				return nomem(c);
	}
	return p2p_wait_all(c);
}

static int lowbit_or_top(int v, int P)
{
	if (v)
		return v & -v;
	int top = 1;
	while (top < P)
		top <<= 1;
	return top;
}

npccl_status_t algo_gather(struct npccl_comm *c, const struct group *g, const struct coll_args *a,
			   npccl_algo_t algo)
{
	int P = g->n, me = g->me, rt = a->root;
	size_t bb = a->count * a->esize;
	npccl_status_t st;
	if (algo != NPCCL_ALGO_TREE || P == 1) {
		if (me != rt) {
			struct req *r = p2p_post_send(c, R(g, rt), a->sbuf, bb);
			return p2p_wait(c, &r, 1);
		}
		char *mine = a->rbuf + (size_t)me * bb;
		if (mine != a->sbuf && bb)
			memmove(mine, a->sbuf, bb);
		for (int i = 0; i < P; i++)
			if (i != me && !p2p_post_recv(c, R(g, i), a->rbuf + (size_t)i * bb, bb))
				return nomem(c);
		return p2p_wait_all(c);
	}
	/* binomial tree in virtual order v = me - root; tmp holds blocks v.. */
	int v = (me - rt + P) % P, low = lowbit_or_top(v, P);
	char *tmp = comm_scratch(c, bb * (size_t)P);
	if (!tmp && bb)
		return nomem(c);
	if (bb)
		memcpy(tmp + (size_t)v * bb, a->sbuf, bb);
	for (int mask = 1; mask < low && v + mask < P; mask <<= 1) {
		int child = v + mask, cend = MIN(child + mask, P);
		struct req *r = p2p_post_recv(c, R(g, (child + rt) % P), tmp + (size_t)child * bb,
					      (size_t)(cend - child) * bb);
		if ((st = p2p_wait(c, &r, 1)))
			return st;
	}
	if (v) {
		int end = MIN(v + low, P);
		struct req *r = p2p_post_send(c, R(g, (v - low + rt) % P), tmp + (size_t)v * bb,
					      (size_t)(end - v) * bb);
		return p2p_wait(c, &r, 1);
	}
	for (int i = 0; i < P && bb; i++)
		memcpy(a->rbuf + (size_t)((i + rt) % P) * bb, tmp + (size_t)i * bb, bb);
	return NPCCL_OK;
}

npccl_status_t algo_scatter(struct npccl_comm *c, const struct group *g, const struct coll_args *a,
			    npccl_algo_t algo)
{
	int P = g->n, me = g->me, rt = a->root;
	size_t bb = a->count * a->esize;
	npccl_status_t st;
	if (algo != NPCCL_ALGO_TREE || P == 1) {
		if (me != rt) {
			struct req *r = p2p_post_recv(c, R(g, rt), a->rbuf, bb);
			return p2p_wait(c, &r, 1);
		}
		for (int i = 0; i < P; i++)
			if (i != me && !p2p_post_send(c, R(g, i), a->sbuf + (size_t)i * bb, bb))
				return nomem(c);
		if ((st = p2p_wait_all(c)))
			return st;
		const char *mine = a->sbuf + (size_t)me * bb;
		if (mine != a->rbuf && bb)
			memmove(a->rbuf, mine, bb);
		return NPCCL_OK;
	}
	int v = (me - rt + P) % P, low = lowbit_or_top(v, P);
	char *tmp = comm_scratch(c, bb * (size_t)P);
	if (!tmp && bb)
		return nomem(c);
	if (v == 0) {
		for (int i = 0; i < P && bb; i++)
			memcpy(tmp + (size_t)i * bb, a->sbuf + (size_t)((i + rt) % P) * bb, bb);
	} else {
		int end = MIN(v + low, P);
		struct req *r = p2p_post_recv(c, R(g, (v - low + rt) % P), tmp + (size_t)v * bb,
					      (size_t)(end - v) * bb);
		if ((st = p2p_wait(c, &r, 1)))
			return st;
	}
	for (int mask = low / 2; mask >= 1; mask >>= 1) {
		int child = v + mask;
		if (child >= P)
			continue;
		int cend = MIN(child + mask, P);
		if (!p2p_post_send(c, R(g, (child + rt) % P), tmp + (size_t)child * bb,
				   (size_t)(cend - child) * bb))
			return nomem(c);
	}
	if ((st = p2p_wait_all(c)))
		return st;
	if (bb && (v != 0 || a->rbuf != a->sbuf + (size_t)me * bb))
		memmove(a->rbuf, tmp + (size_t)v * bb, bb);
	return NPCCL_OK;
}

npccl_status_t algo_alltoall(struct npccl_comm *c, const struct group *g,
			     const struct coll_args *a, npccl_algo_t algo)
{
	int P = g->n, me = g->me;
	size_t bb = a->count * a->esize;
	const char *src = a->sbuf;
	if (a->sbuf == a->rbuf && bb) {	/* in place: send from a copy */
		char *tmp = comm_scratch(c, bb * (size_t)P);
		if (!tmp)
			return nomem(c);
		memcpy(tmp, a->sbuf, bb * (size_t)P);
		src = tmp;
	} else if (bb) {
		memcpy(a->rbuf + (size_t)me * bb, src + (size_t)me * bb, bb);
	}
	for (int k = 1; k < P; k++) {
		int to = (me + k) % P, from = (me - k + P) % P;
		if (!p2p_post_recv(c, R(g, from), a->rbuf + (size_t)from * bb, bb) ||
		    !p2p_post_send(c, R(g, to), src + (size_t)to * bb, bb))
			return nomem(c);
	}
	return p2p_wait_all(c);
}

npccl_status_t algo_barrier(struct npccl_comm *c, const struct group *g, npccl_algo_t algo)
{
	int P = g->n, me = g->me;
	for (int dist = 1; dist < P; dist *= 2) {
		npccl_status_t st = p2p_sendrecv(c, R(g, (me + dist) % P), NULL, 0,
						 R(g, (me - dist + P) % P), NULL, 0);
		if (st)
			return st;
	}
	return NPCCL_OK;
}
