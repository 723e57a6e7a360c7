/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * algo_canonical.c - reductions in one canonical order (NPCCL_ALGO_CANONICAL,
 * the deterministic mode's algorithm).
 *
 * Every element is reduced as ((x0 op x1) op x2) ... op x(p-1), the ranks'
 * contributions in rank order, by reduce_multi: the owner of the element
 * (the rank whose block holds it) receives every rank's copy of its block
 * and reduces them in that order. AllReduce then gathers the reduced blocks
 * on every rank, Reduce on the root; ReduceScatter's blocks are the outputs.
 * Blocks are handled in pieces of at most CANON_PIECE bytes; the pieces, the
 * transport, the arrival order and the placement of ranks on hosts change no
 * element's order, so the result's bits depend only on the inputs (and are
 * the same on every rank). Up to CANON_SMALL bytes, AllReduce and Reduce
 * instead send whole inputs in one exchange and reduce them in the same
 * order (same bits, half the latency). Built on point-to-point messages:
 * any transport.
 */
#include "npccl_internal.h"
#include "transport/transport.h"
#include "algo/algo.h"

#include <stdlib.h>

#define R(g, i) ((g)->ranks[(i)])
#define CANON_PIECE (256u << 10)
#define CANON_SMALL (16u << 10)	/* AllReduce/Reduce up to here: one exchange */

bool canon_applies(npccl_coll_t coll, npccl_dtype_t dt)
{
	bool reducing = coll == NPCCL_COLL_ALLREDUCE || coll == NPCCL_COLL_REDUCE_SCATTER ||
			coll == NPCCL_COLL_REDUCE;
	/* integer reductions are exact (or wrap alike) in any order */
	return reducing && (dt == NPCCL_FLOAT16 || dt == NPCCL_BFLOAT16 || dt == NPCCL_FLOAT32 ||
			    dt == NPCCL_FLOAT64);
}

/* Member r's block of the elements, for the collective's layout. */
static void owner_range(const struct coll_args *a, int P, int r, size_t *off, size_t *len)
{
	if (a->coll == NPCCL_COLL_REDUCE_SCATTER) {
		*off = (size_t)r * a->count;
		*len = a->count;
	} else {
		block_range(a->count, P, r, off, len);
	}
}

struct canon_bufs {
	struct req **rq;	/* 2 * P */
	const void **srcs;	/* P */
};

/* Each member reduces its block, in rank order, into `out`. */
static npccl_status_t canon_reduce_blocks(struct npccl_comm *c, const struct group *g,
					  const struct coll_args *a, char *out,
					  struct canon_bufs *b)
{
	int P = g->n, me = g->me;
	size_t es = a->esize, per = CANON_PIECE / es, moff, mlen, maxlen = 0;

	owner_range(a, P, me, &moff, &mlen);
	for (int r = 0; r < P; r++) {
		size_t o, l;
		owner_range(a, P, r, &o, &l);
		maxlen = MAX(maxlen, l);
	}
	char *slots = maxlen ? comm_scratch(c, (size_t)P * per * es) : NULL;
	if (maxlen && !slots)
		return comm_fail(c, NPCCL_ERR_NOMEM, -1, "out of memory for %d blocks of %zu bytes",
				 P, per * es);
	for (size_t at = 0; at < maxlen; at += per) {
		size_t ml = at < mlen ? MIN(per, mlen - at) : 0;
		int k = 0;
		for (int s = 0; s < P && ml; s++)
			if (s != me)
				b->rq[k++] = p2p_post_recv(c, R(g, s), slots + (size_t)s * per * es,
							   ml * es);
		for (int r = 0; r < P; r++) {
			size_t o, l;
			owner_range(a, P, r, &o, &l);
			if (r != me && at < l)
				b->rq[k++] = p2p_post_send(c, R(g, r), a->sbuf + (o + at) * es,
							   MIN(per, l - at) * es);
		}
		npccl_status_t st = k ? p2p_wait(c, b->rq, k) : NPCCL_OK;
		if (st)
			return st;
		if (!ml)
			continue;
		for (int s = 0; s < P; s++)
			b->srcs[s] = s == me ? a->sbuf + (moff + at) * es : slots + (size_t)s * per * es;
		void *dst = out + at * es;
		reduce_multi(a->dtype, a->op, &dst, 1, 0, b->srcs, P, ml);
	}
	return NPCCL_OK;
}

/* AllReduce: every member's reduced block to every member. Reduce: to the root. */
static npccl_status_t canon_collect(struct npccl_comm *c, const struct group *g,
				    const struct coll_args *a, const char *mine,
				    struct canon_bufs *b)
{
	int P = g->n, me = g->me, k = 0;
	size_t es = a->esize, moff, mlen;
	bool all = a->coll == NPCCL_COLL_ALLREDUCE;

	owner_range(a, P, me, &moff, &mlen);
	for (int r = 0; r < P; r++) {
		size_t o, l;
		owner_range(a, P, r, &o, &l);
		if (r == me)
			continue;
		if (l && (all || me == a->root))
			b->rq[k++] = p2p_post_recv(c, R(g, r), a->rbuf + o * es, l * es);
		if (mlen && (all || r == a->root))
			b->rq[k++] = p2p_post_send(c, R(g, r), mine, mlen * es);
	}
	return k ? p2p_wait(c, b->rq, k) : NPCCL_OK;
}

/*
 * Small AllReduce and Reduce in one exchange: every rank's whole input to
 * every rank (to the root), reduced there in rank order by the same kernel:
 * the same bits as the blocked form, one message latency instead of two.
 */
static npccl_status_t canon_small(struct npccl_comm *c, const struct group *g,
				  const struct coll_args *a, struct canon_bufs *b)
{
	int P = g->n, me = g->me, k = 0;
	size_t bytes = a->count * a->esize;
	bool all = a->coll == NPCCL_COLL_ALLREDUCE, here = all || me == a->root;
	char *slots = here ? comm_scratch(c, (size_t)P * bytes) : NULL;

	if (here && !slots)
		return comm_fail(c, NPCCL_ERR_NOMEM, -1, "out of memory for %d inputs of %zu bytes",
				 P, bytes);
	for (int r = 0; r < P; r++) {
		if (r == me)
			continue;
		if (here)
			b->rq[k++] = p2p_post_recv(c, R(g, r), slots + (size_t)r * bytes, bytes);
		if (all || r == a->root)
			b->rq[k++] = p2p_post_send(c, R(g, r), a->sbuf, bytes);
	}
	npccl_status_t st = k ? p2p_wait(c, b->rq, k) : NPCCL_OK;
	if (st || !here)
		return st;
	for (int s = 0; s < P; s++)
		b->srcs[s] = s == me ? a->sbuf : slots + (size_t)s * bytes;
	void *dst = a->rbuf;
	reduce_multi(a->dtype, a->op, &dst, 1, 0, b->srcs, P, a->count);
	return NPCCL_OK;
}

npccl_status_t canon_reduce(struct npccl_comm *c, const struct group *g, const struct coll_args *a)
{
	int P = g->n, me = g->me;
	size_t moff, mlen;
	struct canon_bufs b;
	npccl_status_t st;

	if (!a->count)
		return NPCCL_OK;
	b.rq = malloc(sizeof(*b.rq) * 2 * (size_t)P);
	b.srcs = malloc(sizeof(*b.srcs) * (size_t)P);
	if (!b.rq || !b.srcs) {
		st = comm_fail(c, NPCCL_ERR_NOMEM, -1, "out of memory for %d requests", 2 * P);
		goto out_free;
	}
	if (a->coll != NPCCL_COLL_REDUCE_SCATTER && a->count * a->esize <= CANON_SMALL) {
		st = canon_small(c, g, a, &b);
		goto out_free;
	}
	owner_range(a, P, me, &moff, &mlen);
	char *out;
	if (a->coll == NPCCL_COLL_REDUCE_SCATTER)
		out = a->rbuf;
	else if (a->coll == NPCCL_COLL_ALLREDUCE || me == a->root)
		out = a->rbuf + moff * a->esize;
	else
		out = mlen ? comm_scratch2(c, mlen * a->esize) : NULL;
	if (mlen && !out) {
		st = comm_fail(c, NPCCL_ERR_NOMEM, -1, "out of memory for a block of %zu bytes",
			       mlen * a->esize);
		goto out_free;
	}
	st = canon_reduce_blocks(c, g, a, out, &b);
	if (st == NPCCL_OK && a->coll != NPCCL_COLL_REDUCE_SCATTER)
		st = canon_collect(c, g, a, out, &b);
out_free:
	free(b.rq);
	free(b.srcs);
	return st;
}
