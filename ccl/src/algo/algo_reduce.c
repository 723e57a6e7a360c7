/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * algo_reduce.c - reducing collectives built on point-to-point messages, for
 * any transport: AllReduce (ring, double binary tree, recursive doubling,
 * Rabenseifner, direct), ReduceScatter (ring, direct) and Reduce (chain,
 * tree, direct). They run over a `group` (the communicator, one host, or one
 * rank per host), treat AVG as SUM (the caller divides once at the end), and
 * work on the caller's receive buffer (AllReduce: it already holds this
 * rank's input) plus the communicator's persistent scratch buffers.
 */
#include "npccl_internal.h"
#include "transport/transport.h"
#include "algo/algo.h"

#include <string.h>

#define R(g, i) ((g)->ranks[(i)])

void block_range(size_t n, int parts, int i, size_t *off, size_t *len)
{
	size_t base = n / (size_t)parts, rem = n % (size_t)parts;
	size_t ui = (size_t)i;
	*off = ui * base + MIN(ui, rem);
	*len = base + (ui < rem ? 1 : 0);
}

static size_t blk_off(size_t n, int parts, int i)
{
	size_t off, len;
	if (i >= parts)
		return n;
	block_range(n, parts, i, &off, &len);
	return off;
}

/* Ring reduce-scatter: afterwards member me holds the fully reduced block
 * (me + 1) % P in rbuf. Reads the input from sbuf (which may equal rbuf):
 * step 0 sends block me straight from it, and every receive reduces into a
 * block of rbuf not touched before, from the same block of sbuf, so rbuf
 * needs no copy of the input first. */
static npccl_status_t ring_rs_phase(struct npccl_comm *c, const struct group *g,
				    const struct coll_args *a)
{
	int P = g->n, me = g->me;
	int right = R(g, (me + 1) % P), left = R(g, (me - 1 + P) % P);
	size_t es = a->esize;
	for (int s = 0; s < P - 1; s++) {
		int sb = (me - s + P) % P, rb = (me - s - 1 + P) % P;
		size_t so, sl, ro, rl;
		block_range(a->count, P, sb, &so, &sl);
		block_range(a->count, P, rb, &ro, &rl);
		struct req *r[2];
		r[0] = p2p_post_recv_reduce_from(c, left, a->rbuf + ro * es, a->sbuf + ro * es,
						 rl * es, a->dtype, a->op);
		r[1] = p2p_post_send(c, right, (s == 0 ? a->sbuf : a->rbuf) + so * es, sl * es);
		npccl_status_t st = p2p_wait(c, r, 2);
		if (st)
			return st;
	}
	return NPCCL_OK;
}

/* Ring allgather of the blocks left by ring_rs_phase. */
static npccl_status_t ring_ag_phase(struct npccl_comm *c, const struct group *g,
				    const struct coll_args *a)
{
	int P = g->n, me = g->me;
	int right = R(g, (me + 1) % P), left = R(g, (me - 1 + P) % P);
	size_t es = a->esize;
	for (int s = 0; s < P - 1; s++) {
		int sb = (me + 1 - s + P) % P, rb = (me - s + P) % P;
		size_t so, sl, ro, rl;
		block_range(a->count, P, sb, &so, &sl);
		block_range(a->count, P, rb, &ro, &rl);
		npccl_status_t st = p2p_sendrecv(c, right, a->rbuf + so * es, sl * es, left,
						 a->rbuf + ro * es, rl * es);
		if (st)
			return st;
	}
	return NPCCL_OK;
}

static npccl_status_t ring_allreduce(struct npccl_comm *c, const struct group *g,
				     const struct coll_args *a)
{
	npccl_status_t st = ring_rs_phase(c, g, a);
	return st ? st : ring_ag_phase(c, g, a);
}

/* Fold to a power of two: returns the new index, or -1 for ranks that sit
 * out (they sent their data to their odd neighbour). */
static int fold_in(struct npccl_comm *c, const struct group *g, const struct coll_args *a,
		   int p2, npccl_status_t *st)
{
	int me = g->me, extra = g->n - p2;
	size_t bytes = a->count * a->esize;
	*st = NPCCL_OK;
	if (me < 2 * extra) {
		if (me % 2 == 0) {
			struct req *r = p2p_post_send(c, R(g, me + 1), a->rbuf, bytes);
			*st = p2p_wait(c, &r, 1);
			return -1;
		}
		struct req *r = p2p_post_recv_reduce(c, R(g, me - 1), a->rbuf, bytes, a->dtype,
						     a->op);
		*st = p2p_wait(c, &r, 1);
		return me / 2;
	}
	return me - extra;
}

static int unfold_rank(int newrank, int extra)
{
	return newrank < extra ? newrank * 2 + 1 : newrank + extra;
}

static npccl_status_t fold_out(struct npccl_comm *c, const struct group *g,
			       const struct coll_args *a, int p2)
{
	int me = g->me, extra = g->n - p2;
	size_t bytes = a->count * a->esize;
	if (me >= 2 * extra)
		return NPCCL_OK;
	struct req *r = me % 2 ? p2p_post_send(c, R(g, me - 1), a->rbuf, bytes)
			       : p2p_post_recv(c, R(g, me + 1), a->rbuf, bytes);
	return p2p_wait(c, &r, 1);
}

static int pow2_floor(int n)
{
	int p = 1;
	while (p * 2 <= n)
		p *= 2;
	return p;
}

static npccl_status_t recdoubling_allreduce(struct npccl_comm *c, const struct group *g,
					    const struct coll_args *a)
{
	int p2 = pow2_floor(g->n), extra = g->n - p2;
	size_t bytes = a->count * a->esize;
	npccl_status_t st;
	int nr = fold_in(c, g, a, p2, &st);
	if (st)
		return st;
	if (nr >= 0) {
		char *tmp = comm_scratch(c, bytes);
		if (!tmp && bytes)
			return comm_fail(c, NPCCL_ERR_NOMEM, -1, "no memory for %zu bytes", bytes);
		for (int mask = 1; mask < p2; mask <<= 1) {
			int partner = R(g, unfold_rank(nr ^ mask, extra));
			st = p2p_sendrecv(c, partner, a->rbuf, bytes, partner, tmp, bytes);
			if (st)
				return st;
			reduce_inplace(a->dtype, a->op, a->rbuf, tmp, a->count);
		}
	}
	return fold_out(c, g, a, p2);
}

static npccl_status_t rabenseifner_allreduce(struct npccl_comm *c, const struct group *g,
					     const struct coll_args *a)
{
	int p2 = pow2_floor(g->n), extra = g->n - p2;
	size_t es = a->esize, n = a->count;
	npccl_status_t st;
	int nr = fold_in(c, g, a, p2, &st);
	if (st)
		return st;
	if (nr >= 0) {
		int lo = 0, hi = p2;
		for (int mask = p2 / 2; mask >= 1; mask /= 2) {
			int partner = R(g, unfold_rank(nr ^ mask, extra));
			int mid = lo + (hi - lo) / 2;
			int klo = (nr & mask) ? mid : lo, khi = (nr & mask) ? hi : mid;
			int slo = (nr & mask) ? lo : mid, shi = (nr & mask) ? mid : hi;
			size_t ko = blk_off(n, p2, klo), ke = blk_off(n, p2, khi);
			size_t so = blk_off(n, p2, slo), se = blk_off(n, p2, shi);
			struct req *r[2];
			r[0] = p2p_post_recv_reduce(c, partner, a->rbuf + ko * es, (ke - ko) * es,
						    a->dtype, a->op);
			r[1] = p2p_post_send(c, partner, a->rbuf + so * es, (se - so) * es);
			if ((st = p2p_wait(c, r, 2)))
				return st;
			lo = klo;
			hi = khi;
		}
		for (int mask = 1; mask < p2; mask *= 2) {
			int partner = R(g, unfold_rank(nr ^ mask, extra));
			int plo = lo ^ mask, phi = plo + (hi - lo);
			size_t mo = blk_off(n, p2, lo), me_ = blk_off(n, p2, hi);
			size_t po = blk_off(n, p2, plo), pe = blk_off(n, p2, phi);
			st = p2p_sendrecv(c, partner, a->rbuf + mo * es, (me_ - mo) * es, partner,
					  a->rbuf + po * es, (pe - po) * es);
			if (st)
				return st;
			int width = hi - lo;
			lo = MIN(lo, plo);
			hi = lo + 2 * width;
		}
	}
	return fold_out(c, g, a, p2);
}

/* Double binary tree: half the data reduces up and broadcasts down tree A
 * (heap order of the ranks), the other half tree B (mirrored order), in
 * pipeline chunks, so every rank sends and receives in both directions. */
struct tree_pos {
	int parent, child[2];
};

static void tree_links(const struct group *g, int mirror, struct tree_pos *t)
{
	int P = g->n;
	int q = mirror ? P - 1 - g->me : g->me;
#define IDX(pos) (mirror ? P - 1 - (pos) : (pos))
	t->parent = q == 0 ? -1 : R(g, IDX((q - 1) / 2));
	t->child[0] = 2 * q + 1 < P ? R(g, IDX(2 * q + 1)) : -1;
	t->child[1] = 2 * q + 2 < P ? R(g, IDX(2 * q + 2)) : -1;
#undef IDX
}

static npccl_status_t tree_allreduce(struct npccl_comm *c, const struct group *g,
				     const struct coll_args *a)
{
	size_t es = a->esize;
	size_t ce = MAX((size_t)1, npccl_config()->pipeline_chunk / es);
	struct tree_pos t[2];
	tree_links(g, 0, &t[0]);
	tree_links(g, 1, &t[1]);
	size_t half_off[2] = { 0, a->count / 2 }, half_len[2] = { a->count / 2,
							     a->count - a->count / 2 };
	size_t nchunks = MAX((half_len[1] + ce - 1) / ce, (size_t)1);
	npccl_status_t st;
	for (size_t k = 0; k < nchunks; k++)
		for (int h = 0; h < 2; h++) {
			size_t o = half_off[h] + k * ce;
			if (k * ce >= half_len[h] && !(k == 0 && half_len[h] == 0))
				continue;
			size_t len = k * ce < half_len[h] ? MIN(ce, half_len[h] - k * ce) : 0;
			struct req *r[2] = { NULL, NULL };
			int nr = 0;
			for (int ch = 0; ch < 2; ch++)
				if (t[h].child[ch] >= 0)
					r[nr++] = p2p_post_recv_reduce(c, t[h].child[ch],
								       a->rbuf + o * es, len * es,
								       a->dtype, a->op);
			if (nr && (st = p2p_wait(c, r, nr)))
				return st;
			if (t[h].parent >= 0 && !p2p_post_send(c, t[h].parent, a->rbuf + o * es,
								 len * es))
				return comm_fail(c, NPCCL_ERR_NOMEM, -1, "no memory for requests");
		}
	for (size_t k = 0; k < nchunks; k++)
		for (int h = 0; h < 2; h++) {
			size_t o = half_off[h] + k * ce;
			if (k * ce >= half_len[h] && !(k == 0 && half_len[h] == 0))
				continue;
			size_t len = k * ce < half_len[h] ? MIN(ce, half_len[h] - k * ce) : 0;
			if (t[h].parent >= 0) {
				struct req *r = p2p_post_recv(c, t[h].parent, a->rbuf + o * es,
							      len * es);
				if ((st = p2p_wait(c, &r, 1)))
					return st;
			}
			for (int ch = 0; ch < 2; ch++)
				if (t[h].child[ch] >= 0 &&
				    !p2p_post_send(c, t[h].child[ch], a->rbuf + o * es, len * es))
					return comm_fail(c, NPCCL_ERR_NOMEM, -1, "no memory");
		}
	return p2p_wait_all(c);
}

/* Everyone sends everything to everyone; all reduce in group order, so
 * every rank computes bit-identical results. For tiny messages. */
static npccl_status_t direct_allreduce(struct npccl_comm *c, const struct group *g,
				       const struct coll_args *a)
{
	int P = g->n, me = g->me;
	size_t bytes = a->count * a->esize;
	char *all = comm_scratch(c, bytes * (size_t)P);
	if (!all && bytes)
		return comm_fail(c, NPCCL_ERR_NOMEM, -1, "no memory for %zu bytes", bytes * P);
	if (bytes)
		memcpy(all + (size_t)me * bytes, a->rbuf, bytes);
	for (int k = 1; k < P; k++) {
		int to = (me + k) % P, from = (me - k + P) % P;
		if (!p2p_post_recv(c, R(g, from), all + (size_t)from * bytes, bytes) ||
		    !p2p_post_send(c, R(g, to), all + (size_t)me * bytes, bytes))
			return comm_fail(c, NPCCL_ERR_NOMEM, -1, "no memory for requests");
	}
	npccl_status_t st = p2p_wait_all(c);
	if (st)
		return st;
	if (bytes) {
		reduce_into(a->dtype, a->op, a->rbuf, all, all + bytes, a->count);
		for (int i = 2; i < P; i++)
			reduce_inplace(a->dtype, a->op, a->rbuf, all + (size_t)i * bytes, a->count);
	}
	return NPCCL_OK;
}

npccl_status_t algo_allreduce(struct npccl_comm *c, const struct group *g,
			      const struct coll_args *a, npccl_algo_t algo)
{
	size_t bytes = a->count * a->esize;
	/* the ring reads sbuf itself; the others work in rbuf from the start */
	bool in_rbuf = g->n == 1 || (algo != NPCCL_ALGO_RING && algo != NPCCL_ALGO_AUTO &&
				     algo <= NPCCL_ALGO_DIRECT);
	if (in_rbuf && a->sbuf != a->rbuf && bytes)
		memcpy(a->rbuf, a->sbuf, bytes);
	if (g->n == 1)
		return NPCCL_OK;
	switch (algo) {
	case NPCCL_ALGO_RING: return ring_allreduce(c, g, a);
	case NPCCL_ALGO_TREE: return tree_allreduce(c, g, a);
	case NPCCL_ALGO_RECDOUBLING: return recdoubling_allreduce(c, g, a);
	case NPCCL_ALGO_RABENSEIFNER: return rabenseifner_allreduce(c, g, a);
	case NPCCL_ALGO_DIRECT: return direct_allreduce(c, g, a);
	default: return ring_allreduce(c, g, a);
	}
}

/* ---- ReduceScatter: input count*P, output block me --------------------- */

npccl_status_t algo_reduce_scatter(struct npccl_comm *c, const struct group *g,
				   const struct coll_args *a, npccl_algo_t algo)
{
	int P = g->n, me = g->me;
	size_t bb = a->count * a->esize;	/* block bytes */
	npccl_status_t st;
	if (P == 1) {
		if (a->rbuf != a->sbuf && bb)
			memmove(a->rbuf, a->sbuf, bb);
		return NPCCL_OK;
	}
	if (algo == NPCCL_ALGO_DIRECT) {
		char *all = comm_scratch(c, bb * (size_t)P);
		if (!all && bb)
			return comm_fail(c, NPCCL_ERR_NOMEM, -1, "no memory");
		if (bb)
			memcpy(all + (size_t)me * bb, a->sbuf + (size_t)me * bb, bb);
		for (int k = 1; k < P; k++) {
			int to = (me + k) % P, from = (me - k + P) % P;
			if (!p2p_post_recv(c, R(g, from), all + (size_t)from * bb, bb) ||
			    !p2p_post_send(c, R(g, to), a->sbuf + (size_t)to * bb, bb))
				return comm_fail(c, NPCCL_ERR_NOMEM, -1, "no memory for requests");
		}
		if ((st = p2p_wait_all(c)))
			return st;
		if (bb) {
			reduce_into(a->dtype, a->op, a->rbuf, all, all + bb, a->count);
			for (int i = 2; i < P; i++)
				reduce_inplace(a->dtype, a->op, a->rbuf, all + (size_t)i * bb,
					       a->count);
		}
		return NPCCL_OK;
	}
	/* ring: work on a copy, finish owning block me */
	char *work = comm_scratch(c, bb * (size_t)P);
	if (!work && bb)
		return comm_fail(c, NPCCL_ERR_NOMEM, -1, "no memory");
	if (bb)
		memcpy(work, a->sbuf, bb * (size_t)P);
	int right = R(g, (me + 1) % P), left = R(g, (me - 1 + P) % P);
	for (int s = 0; s < P - 1; s++) {
		int sb = (me - s - 1 + P) % P, rb = (me - s - 2 + 2 * P) % P;
		struct req *r[2];
		r[0] = p2p_post_recv_reduce(c, left, work + (size_t)rb * bb, bb, a->dtype, a->op);
		r[1] = p2p_post_send(c, right, work + (size_t)sb * bb, bb);
		if ((st = p2p_wait(c, r, 2)))
			return st;
	}
	if (bb)
		memcpy(a->rbuf, work + (size_t)me * bb, bb);
	return NPCCL_OK;
}

/* ---- Reduce to root ------------------------------------------------------ */

npccl_status_t algo_reduce(struct npccl_comm *c, const struct group *g, const struct coll_args *a,
			   npccl_algo_t algo)
{
	int P = g->n, me = g->me, rt = a->root;
	size_t es = a->esize, bytes = a->count * es;
	npccl_status_t st;
	/* work buffer: the root's receive buffer, a scratch copy elsewhere */
	char *work = me == rt ? a->rbuf : comm_scratch2(c, bytes);
	if (!work && bytes)
		return comm_fail(c, NPCCL_ERR_NOMEM, -1, "no memory");
	if (work != a->sbuf && bytes)
		memmove(work, a->sbuf, bytes);
	if (P == 1)
		return NPCCL_OK;
	if (algo == NPCCL_ALGO_DIRECT) {
		if (me != rt) {
			struct req *r = p2p_post_send(c, R(g, rt), work, bytes);
			return p2p_wait(c, &r, 1);
		}
		char *all = comm_scratch(c, bytes * (size_t)P);
		if (!all && bytes)
			return comm_fail(c, NPCCL_ERR_NOMEM, -1, "no memory");
		if (bytes)
			memcpy(all + (size_t)me * bytes, work, bytes);
		for (int i = 0; i < P; i++)
			if (i != me && !p2p_post_recv(c, R(g, i), all + (size_t)i * bytes, bytes))
				return comm_fail(c, NPCCL_ERR_NOMEM, -1, "no memory for requests");
		if ((st = p2p_wait_all(c)))
			return st;
		if (bytes) {
			reduce_into(a->dtype, a->op, a->rbuf, all, all + bytes, a->count);
			for (int i = 2; i < P; i++)
				reduce_inplace(a->dtype, a->op, a->rbuf, all + (size_t)i * bytes,
					       a->count);
		}
		return NPCCL_OK;
	}
	int v = (me - rt + P) % P;
#define VR(x) R(g, ((x) + rt) % P)
	int parent, child[2];
	if (algo == NPCCL_ALGO_TREE) {
		parent = v == 0 ? -1 : VR((v - 1) / 2);
		child[0] = 2 * v + 1 < P ? VR(2 * v + 1) : -1;
		child[1] = 2 * v + 2 < P ? VR(2 * v + 2) : -1;
	} else {	/* chain toward the root */
		parent = v == 0 ? -1 : VR(v - 1);
		child[0] = v + 1 < P ? VR(v + 1) : -1;
		child[1] = -1;
	}
#undef VR
	size_t ce = MAX((size_t)1, npccl_config()->pipeline_chunk / es);
	size_t nchunks = MAX((a->count + ce - 1) / ce, (size_t)1);
	for (size_t k = 0; k < nchunks; k++) {
		size_t o = k * ce, len = a->count ? MIN(ce, a->count - o) : 0;
		struct req *r[2];
		int nr = 0;
		for (int ch = 0; ch < 2; ch++)
			if (child[ch] >= 0)
				r[nr++] = p2p_post_recv_reduce(c, child[ch], work + o * es, len * es,
							       a->dtype, a->op);
		if (nr && (st = p2p_wait(c, r, nr)))
			return st;
		if (parent >= 0 && !p2p_post_send(c, parent, work + o * es, len * es))
			return comm_fail(c, NPCCL_ERR_NOMEM, -1, "no memory for requests");
	}
	return p2p_wait_all(c);
}

/* ---- hierarchical AllReduce (several hosts, same ranks per host) -------- */

npccl_status_t hier_allreduce(struct npccl_comm *c, const struct coll_args *a)
{
	const struct group *lg = &c->g_local, *xg = &c->g_cross;
	npccl_status_t st;
	if (lg->n > 1 && (st = ring_rs_phase(c, lg, a)))
		return st;
	size_t off, len;
	block_range(a->count, lg->n, (lg->me + 1) % lg->n, &off, &len);
	struct coll_args sub = *a;
	sub.rbuf = a->rbuf + off * a->esize;
	/* one rank per host: the input is still in sbuf */
	sub.sbuf = lg->n > 1 ? sub.rbuf : a->sbuf + off * a->esize;
	sub.count = len;
	npccl_algo_t x = len * a->esize >= (64 << 10) || xg->n < 3 ? NPCCL_ALGO_RING
								    : NPCCL_ALGO_RECDOUBLING;
	if ((st = algo_allreduce(c, xg, &sub, x)))
		return st;
	return lg->n > 1 ? ring_ag_phase(c, lg, a) : NPCCL_OK;
}
