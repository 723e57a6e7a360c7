/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * algo_shm.c - AllReduce and Barrier for communicators on one host, straight
 * through the ranks' shared regions (no FIFOs, no extra hops).
 *
 * The message is processed in chunks of NPCCL_SHM_CHUNK_BYTES (cache-sized)
 * through fp_slots staging and result slots per rank. Per chunk, every rank:
 * copies the slices of its input that other ranks reduce into its staging
 * slot and publishes `staged`; reduces its own slice from its private input
 * and the peers' staging slots into its result slot and its output, and
 * publishes `reduced`; copies the peers' result slices into its output and
 * publishes `gathered`. All ranks work in parallel on different slices. The
 * counters only grow (one step per chunk, identical on every rank), are
 * written with release and read with acquire, and also guard slot reuse:
 * a staging slot is rewritten only after every peer's `reduced` passed it, a
 * result slot after every `gathered`. Messages up to NPCCL_SHM_DIRECT_MAX use
 * one step in which every rank reduces the whole message (lowest latency).
 * While waiting, peers' published operation descriptors are compared, so a
 * mismatched call fails at once instead of at the deadline.
 */
#include "npccl_internal.h"
#include "transport/transport.h"
#include "algo/algo.h"

#include <string.h>

enum { CNT_STAGED, CNT_REDUCED, CNT_GATHERED };

struct fp_wait {
	struct npccl_comm *c;
	int which;
	uint64_t target;
	unsigned polls;
};

static atomic_uint_fast64_t *counter(struct shm_ctl *ctl, int which)
{
	return which == CNT_STAGED ? &ctl->staged
	       : which == CNT_REDUCED ? &ctl->reduced : &ctl->gathered;
}

/* the call a peer published in its control block, as sequence number seq */
static struct op_desc ctl_desc(const struct shm_ctl *p, uint64_t seq)
{
	return (struct op_desc){ .seq = seq, .count = p->op_count, .root = p->op_root,
				 .coll = p->op_coll, .dtype = p->op_dtype, .redop = p->op_redop,
				 .algo = p->op_algo };
}

static bool peer_mismatch(struct npccl_comm *c, int k)
{
	struct shm_ctl *p = c->ctl[k];
	uint64_t seq = atomic_load_explicit(&p->op_seq, memory_order_acquire);
	if (seq != c->cur.seq)
		return false;
	struct op_desc d = ctl_desc(p, seq);
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&p->op_seq, memory_order_relaxed) != seq)
		return false;
	if (d.coll == c->cur.coll && d.count == c->cur.count && d.dtype == c->cur.dtype &&
	    d.redop == c->cur.redop && d.root == c->cur.root && d.algo == c->cur.algo)
		return false;
	comm_mismatch(c, c->local_ranks[k], &d);
	return true;
}

/* The peer's step was published for another operation: name both calls. */
static void step_mismatch(struct npccl_comm *c, int k)
{
	if (peer_mismatch(c, k))
		return;
	struct shm_ctl *p = c->ctl[k];
	if (atomic_load_explicit(&p->op_seq, memory_order_acquire) == c->cur.seq &&
	    p->op_mem_sig != c->mem_sig) {
		char who[128];
		peer_describe(c, c->local_ranks[k], who, sizeof(who));
		comm_fail(c, NPCCL_ERR_MISMATCH, c->local_ranks[k],
			  "%s and this rank hold different npccl_mem_alloc buffers: every rank must "
			  "make the same npccl_mem_alloc/npccl_mem_free calls in the same order", who);
		return;
	}
	struct op_desc d = ctl_desc(p, atomic_load(&p->op_seq));
	comm_mismatch(c, c->local_ranks[k], &d);
}

static bool fp_ready(void *arg)
{
	struct fp_wait *w = arg;
	struct npccl_comm *c = w->c;
	for (int k = 0; k < c->nlocal; k++) {
		if (k == c->local_index)
			continue;
		uint64_t v = atomic_load_explicit(counter(c->ctl[k], w->which), memory_order_acquire);
		if (v >= w->target && w->which == CNT_STAGED &&
		    c->ctl[k]->step_hash[(w->target - 1) % 4] != c->cur_hash) {
			step_mismatch(c, k);
			return true;
		}
		if (v < w->target) {
			if ((++w->polls & 255) == 0 && peer_mismatch(c, k))
				return true;
			c->waiting_on = c->local_ranks[k];
			if (c->peers[c->waiting_on].gone) {
				comm_peer_lost(c, c->waiting_on, "its connection closed");
				return true;
			}
			return false;
		}
	}
	return true;
}

static npccl_status_t fp_wait_all(struct npccl_comm *c, int which, uint64_t target)
{
	if (target == 0)
		return NPCCL_OK;
	if (which == CNT_REDUCED && c->nlocal <= 64) {
		/* slot-reuse checks usually pass: skip the remote reads when the
		 * values seen last time already suffice */
		bool all = true;
		for (int k = 0; k < c->nlocal && all; k++)
			if (k != c->local_index && c->fp_seen_reduced[k] < target)
				all = false;
		if (all)
			return NPCCL_OK;
	}
	struct fp_wait w = { c, which, target, 0 };
	npccl_status_t st = fp_ready(&w) ? c->failed : comm_wait(c, fp_ready, &w, c->waiting_on);
	if (st == NPCCL_OK && which == CNT_REDUCED && c->nlocal <= 64)
		for (int k = 0; k < c->nlocal; k++)
			if (k != c->local_index)
				c->fp_seen_reduced[k] = MAX(c->fp_seen_reduced[k], target);
	return st;
}

static void fp_publish(struct npccl_comm *c, int which, uint64_t value)
{
	if (which == CNT_STAGED)
		c->ctl[c->local_index]->step_hash[(value - 1) % 4] = c->cur_hash;
	atomic_store_explicit(counter(c->ctl[c->local_index], which), value, memory_order_release);
	doorbell_ring_all_local(c);
}

/* slice k of an m-element chunk, on 64-byte boundaries */
static void slice(size_t m, size_t es, int nl, int k, size_t *lo, size_t *len)
{
	size_t per_line = 64 / es, lines = (m + per_line - 1) / per_line, lo_l, n_l;
	block_range(lines, nl, k, &lo_l, &n_l);
	*lo = MIN(lo_l * per_line, m);
	*len = MIN((lo_l + n_l) * per_line, m) - *lo;
}

/* At most 8 bytes: the data travels in the `staged` cache line itself. Slot
 * g % 2 is free again at step g + 2: a peer that published `staged` for step
 * g + 1 had finished step g, its reads of our slot included. */
static npccl_status_t fp_tiny(struct npccl_comm *c, const struct coll_args *a)
{
	int nl = c->nlocal, me = c->local_index;
	size_t bytes = a->count * a->esize;
	uint64_t g = c->fp_step++;
	uint64_t *mine = &c->ctl[me]->tiny[g % 2];
	memcpy(mine, a->sbuf, bytes);
	atomic_fetch_add_explicit(&c->copied.shm_bytes, bytes, memory_order_relaxed);
	fp_publish(c, CNT_STAGED, g + 1);
	npccl_status_t st = fp_wait_all(c, CNT_STAGED, g + 1);
	if (st)
		return st;
	uint64_t v[2];
	memcpy(&v[0], &c->ctl[0]->tiny[g % 2], 8);
	memcpy(&v[1], &c->ctl[1]->tiny[g % 2], 8);
	reduce_into(a->dtype, a->op, a->rbuf, &v[0], &v[1], a->count);
	for (int k = 2; k < nl; k++) {
		memcpy(&v[1], &c->ctl[k]->tiny[g % 2], 8);
		reduce_inplace(a->dtype, a->op, a->rbuf, &v[1], a->count);
	}
	atomic_store_explicit(&c->ctl[me]->gathered, g + 1, memory_order_relaxed);
	fp_publish(c, CNT_REDUCED, g + 1);
	return NPCCL_OK;
}

static npccl_status_t fp_direct(struct npccl_comm *c, const struct coll_args *a)
{
	int nl = c->nlocal, me = c->local_index, K = c->layout.fp_slots;
	size_t bytes = a->count * a->esize;
	if (bytes <= sizeof(c->ctl[0]->tiny[0]))
		return fp_tiny(c, a);
	uint64_t g = c->fp_step++;
	size_t soff = (g % (uint64_t)K) * c->layout.fp_chunk;
	npccl_status_t st;
	if (g + 1 > (uint64_t)K && (st = fp_wait_all(c, CNT_REDUCED, g + 1 - (uint64_t)K)))
		return st;
	memcpy(c->fp_stage[me] + soff, a->sbuf, bytes);
	atomic_fetch_add_explicit(&c->copied.shm_bytes, bytes, memory_order_relaxed);
	fp_publish(c, CNT_STAGED, g + 1);
	if ((st = fp_wait_all(c, CNT_STAGED, g + 1)))
		return st;
	reduce_into(a->dtype, a->op, a->rbuf, c->fp_stage[0] + soff, c->fp_stage[1] + soff,
		    a->count);
	for (int k = 2; k < nl; k++)
		reduce_inplace(a->dtype, a->op, a->rbuf, c->fp_stage[k] + soff, a->count);
	atomic_store_explicit(&c->ctl[me]->gathered, g + 1, memory_order_relaxed);
	fp_publish(c, CNT_REDUCED, g + 1);
	return NPCCL_OK;
}

/* Core-distance probe. A peer reads the staging and result slots right
 * after they were written, so they move core to core. On this kind of VM
 * the two vCPUs sit sometimes on nearby cores (round trip ~130 ns: such
 * transfers run at 15-20 GB/s) and sometimes far apart (~550 ns: 3-4 GB/s,
 * while data written with streaming stores and read back from memory still
 * moves at ~13 GB/s), and the hypervisor moves them every second or so. So
 * large calls between two ranks measure the round trip first (best of
 * PROBE_ROUNDS, a few microseconds) and each rank writes its slots with
 * streaming stores when it is long. Local ranks 0 and 1 only; never blocks:
 * a side that does not answer within PROBE_GIVEUP_NS leaves the previous
 * decision in place. */
#define PROBE_ROUNDS 4
#define PROBE_GIVEUP_NS 20000
#define PROBE_FAR_NS 300

static uint32_t probe_rtt(struct npccl_comm *c)
{
	int me = c->local_index;
	atomic_uint_fast64_t *mine = &c->ctl[me]->probe, *theirs = &c->ctl[1 - me]->probe;
	uint64_t base = ++c->probe_seq * (PROBE_ROUNDS + 1), best = UINT64_MAX, prev = 0;
	for (int i = 0; i < PROBE_ROUNDS; i++) {
		uint64_t v = base + (uint64_t)i, t0 = now_ns(), t;
		if (me == 0)
			atomic_store_explicit(mine, v, memory_order_release);
		while (atomic_load_explicit(theirs, memory_order_acquire) < v) {
			if (now_ns() - t0 > PROBE_GIVEUP_NS)
				return 0;
			cpu_relax();
		}
		t = now_ns();
		if (me == 1)
			atomic_store_explicit(mine, v, memory_order_release);
		if (me == 0)
			best = MIN(best, t - t0);
		else if (i > 0)
			best = MIN(best, t - prev);
		prev = t;
	}
	return best == UINT64_MAX ? 0 : (uint32_t)MIN(best, UINT32_MAX);
}

/* Staging path (any buffers): chunk by chunk, stage the slices the peers
 * reduce, reduce my slice in rank order into my output and my result slot in
 * one pass, then copy the peers' result slices into my output. */
static npccl_status_t staged_allreduce(struct npccl_comm *c, const struct coll_args *a, bool nt)
{
	const struct npccl_config *cfg = npccl_config();
	int nl = c->nlocal, me = c->local_index, K = c->layout.fp_slots;
	size_t es = a->esize, n = a->count, chunk = c->layout.fp_chunk, ce = chunk / es;
	const void **srcs = (const void **)c->fp_srcs;
	void **dsts = (void **)c->fp_dsts;
	bool probe = cfg->stage_nt < 0 && nl == 2 && n * es >= cfg->probe_min;
	bool snt = cfg->stage_nt > 0 || (cfg->stage_nt < 0 && c->probe_rtt_ns > PROBE_FAR_NS);
	npccl_status_t st;
	for (size_t off = 0; off < n; off += ce) {
		size_t m = MIN(ce, n - off);
		uint64_t g = c->fp_step++;
		size_t soff = (g % (uint64_t)K) * chunk;
		size_t mlo, mlen;
		slice(m, es, nl, me, &mlo, &mlen);
		const char *in = a->sbuf + off * es;
		char *out = a->rbuf + off * es;
		char *stage = c->fp_stage[me] + soff;

		/* 1. stage the slices the others reduce (slot free once every
		 * peer reduced the chunk that used it last) */
		if (g + 1 > (uint64_t)K && (st = fp_wait_all(c, CNT_REDUCED, g + 1 - (uint64_t)K)))
			return st;
		void (*copy)(void *, const void *, size_t) = snt ? copy_stream : copy_cached;
		if (mlo)
			copy(stage, in, mlo * es);
		if (mlo + mlen < m)
			copy(stage + (mlo + mlen) * es, in + (mlo + mlen) * es,
			     (m - mlo - mlen) * es);
		if (snt)
			copy_stream_fence();
		atomic_fetch_add_explicit(&c->copied.shm_bytes, (m - mlen) * es,
					  memory_order_relaxed);
		fp_publish(c, CNT_STAGED, g + 1);

		/* 2. reduce my slice from my input and the peers' staging, in rank
		 * order, into my output and my result slot */
		if ((st = fp_wait_all(c, CNT_STAGED, g + 1)))
			return st;
		if (probe && off == 0) {
			/* both ranks are here now: measure, apply from the next chunk */
			uint32_t rtt = probe_rtt(c);
			if (rtt)
				c->probe_rtt_ns = rtt;
			snt = c->probe_rtt_ns > PROBE_FAR_NS;
		}
		if (g + 1 > (uint64_t)K && (st = fp_wait_all(c, CNT_GATHERED, g + 1 - (uint64_t)K)))
			return st;
		if (mlen) {
			for (int k = 0; k < nl; k++)
				srcs[k] = k == me ? in + mlo * es : c->fp_stage[k] + soff + mlo * es;
			dsts[0] = out + mlo * es;
			dsts[1] = c->fp_result[me] + soff + mlo * es;
			reduce_multi(a->dtype, a->op, dsts, 2, (nt ? 1u : 0u) | (snt ? 2u : 0u),
				     srcs, nl, mlen);
			if (snt)
				copy_stream_fence();
		}
		fp_publish(c, CNT_REDUCED, g + 1);

		/* 3. gather the other slices */
		if ((st = fp_wait_all(c, CNT_REDUCED, g + 1)))
			return st;
		for (int k = 0; k < nl; k++) {
			if (k == me)
				continue;
			size_t lo, len;
			slice(m, es, nl, k, &lo, &len);
			if (!len)
				continue;
			if (nt)
				copy_stream(out + lo * es, c->fp_result[k] + soff + lo * es, len * es);
			else
				copy_cached(out + lo * es, c->fp_result[k] + soff + lo * es, len * es);
		}
		fp_publish(c, CNT_GATHERED, g + 1);
	}
	if (nt)
		copy_stream_fence();
	return NPCCL_OK;
}

/* Zero-copy path, step 1 ("hello"): every rank publishes where its buffers
 * are (allocation number and offset, or none) and waits for the others'.
 * Every rank then sees the same descriptors and the same allocations (the
 * step hash includes mem_sig), so all take the same decision: zero-copy
 * only if every rank's send and receive buffers are npccl_mem_alloc memory. */
static npccl_status_t zc_hello(struct npccl_comm *c, const struct coll_args *a, bool *zc)
{
	int nl = c->nlocal, me = c->local_index;
	size_t bytes = a->count * a->esize, soff = 0, roff = 0;
	struct shm_mem *sm = shm_mem_find(c, a->sbuf, bytes, &soff);
	struct shm_mem *rm = shm_mem_find(c, a->rbuf, bytes, &roff);
	struct shm_ctl *mine = c->ctl[me];
	mine->zc_sid = sm ? sm->id : UINT64_MAX;
	mine->zc_soff = soff;
	mine->zc_rid = rm ? rm->id : UINT64_MAX;
	mine->zc_roff = roff;
	mine->zc_seq = sm && rm ? c->cur.seq : 0;
	uint64_t g = c->fp_step++;
	fp_publish(c, CNT_STAGED, g + 1);
	npccl_status_t st = fp_wait_all(c, CNT_STAGED, g + 1);
	if (st)
		return st;
	*zc = true;
	for (int k = 0; k < nl && *zc; k++) {
		const struct shm_ctl *p = c->ctl[k];
		struct shm_mem *s = shm_mem_by_id(c, p->zc_sid), *r = shm_mem_by_id(c, p->zc_rid);
		*zc = p->zc_seq == c->cur.seq && s && r && p->zc_soff <= s->size &&
		      bytes <= s->size - p->zc_soff && p->zc_roff <= r->size &&
		      bytes <= r->size - p->zc_roff;
		if (*zc) {
			c->fp_srcs[k] = s->addr[k] + p->zc_soff;
			c->fp_dsts[k] = r->addr[k] + p->zc_roff;
		}
	}
	if (*zc && !c->zc_logged) {
		c->zc_logged = true;
		npccl_log(NPCCL_LOG_INFO, "rank %d: zero-copy AllReduce (npccl_mem_alloc buffers "
					  "on all %d local ranks)", c->rank, nl);
	}
	if (!*zc) {
		/* step g carried no data: complete it at once */
		atomic_store_explicit(&mine->gathered, g + 1, memory_order_relaxed);
		fp_publish(c, CNT_REDUCED, g + 1);
	}
	return NPCCL_OK;
}

/* Zero-copy path, step 2: reduce my slice of every rank's send buffer, in
 * rank order, into every rank's receive buffer; done when every rank is
 * (then nobody reads my input or writes my output any more). Per rank: the
 * message is read once and written once, the minimum. */
static npccl_status_t zc_allreduce(struct npccl_comm *c, const struct coll_args *a, bool nt)
{
	int nl = c->nlocal, me = c->local_index;
	size_t es = a->esize, lo, len;
	slice(a->count, es, nl, me, &lo, &len);
	if (len) {
		const void **srcs = (const void **)c->fp_srcs;
		void **dsts = (void **)c->fp_dsts;
		for (int k = 0; k < nl; k++) {
			srcs[k] = (const char *)srcs[k] + lo * es;
			dsts[k] = (char *)dsts[k] + lo * es;
		}
		reduce_multi(a->dtype, a->op, dsts, nl, nt ? UINT64_MAX : 0, srcs, nl, len);
	}
	if (nt)
		copy_stream_fence();	/* before `reduced` tells the peers */
	uint64_t g = c->fp_step - 1;
	atomic_store_explicit(&c->ctl[me]->gathered, g + 1, memory_order_relaxed);
	fp_publish(c, CNT_REDUCED, g + 1);
	return fp_wait_all(c, CNT_REDUCED, g + 1);
}

npccl_status_t shm_allreduce(struct npccl_comm *c, const struct coll_args *a)
{
	const struct npccl_config *cfg = npccl_config();
	size_t bytes = a->count * a->esize;
	if (a->count == 0)
		return NPCCL_OK;
	if (bytes <= MIN(cfg->fp_direct_max, c->layout.fp_chunk))
		return fp_direct(c, a);
	bool nt = bytes >= cfg->shm_nt_min;
	bool done = false;
	npccl_status_t st = shm_allreduce_zero_copy(c, a, &done);
	if (st || done)
		return st;
	return staged_allreduce(c, a, nt);
}

npccl_status_t shm_allreduce_zero_copy(struct npccl_comm *c, const struct coll_args *a,
				       bool *done)
{
	*done = false;
	if (c->nmems == 0 || a->count == 0)
		return NPCCL_OK;
	npccl_status_t st = zc_hello(c, a, done);
	if (st || !*done)
		return st;
	return zc_allreduce(c, a, a->count * a->esize >= npccl_config()->shm_nt_min);
}

npccl_status_t shm_barrier(struct npccl_comm *c)
{
	uint64_t g = c->fp_step++;
	fp_publish(c, CNT_STAGED, g + 1);
	npccl_status_t st = fp_wait_all(c, CNT_STAGED, g + 1);
	if (st)
		return st;
	atomic_store_explicit(&c->ctl[c->local_index]->gathered, g + 1, memory_order_relaxed);
	fp_publish(c, CNT_REDUCED, g + 1);
	return NPCCL_OK;
}
