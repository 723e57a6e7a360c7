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

#include <string.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

/* Messages at least NPCCL_SHM_NT_MIN bytes are written to the caller's
 * output with non-temporal stores: they do not fit in the caches anyway,
 * and streaming stores skip the read-for-ownership of every output line. */

static void copy_out(void *dst, const void *src, size_t n, bool nt)
{
#if defined(__x86_64__)
	if (nt && n >= 256) {
		char *d = dst;
		const char *s = src;
		size_t head = (16 - ((uintptr_t)d & 15)) & 15;
		memcpy(d, s, head);
		d += head, s += head, n -= head;
		size_t i = 0;
		for (; i + 64 <= n; i += 64) {
			__m128i a = _mm_loadu_si128((const __m128i *)(s + i));
			__m128i b = _mm_loadu_si128((const __m128i *)(s + i + 16));
			__m128i c2 = _mm_loadu_si128((const __m128i *)(s + i + 32));
			__m128i e = _mm_loadu_si128((const __m128i *)(s + i + 48));
			_mm_stream_si128((__m128i *)(d + i), a);
			_mm_stream_si128((__m128i *)(d + i + 16), b);
			_mm_stream_si128((__m128i *)(d + i + 32), c2);
			_mm_stream_si128((__m128i *)(d + i + 48), e);
		}
		memcpy(d + i, s + i, n - i);
		return;
	}
#endif
	memcpy(dst, src, n);
}

static void copy_out_done(bool nt)
{
#if defined(__x86_64__)
	if (nt)
		_mm_sfence();
#endif
}

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

static bool peer_mismatch(struct npccl_comm *c, int k)
{
	struct shm_ctl *p = c->ctl[k];
	uint64_t seq = atomic_load_explicit(&p->op_seq, memory_order_acquire);
	if (seq != c->cur.seq)
		return false;
	struct op_desc d = { .seq = seq, .count = p->op_count, .root = p->op_root,
			     .coll = p->op_coll, .dtype = p->op_dtype, .redop = p->op_redop,
			     .algo = p->op_algo };
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
	struct op_desc d = { .seq = atomic_load(&p->op_seq), .count = p->op_count,
			     .root = p->op_root, .coll = p->op_coll, .dtype = p->op_dtype,
			     .redop = p->op_redop, .algo = p->op_algo };
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

static npccl_status_t fp_direct(struct npccl_comm *c, const struct coll_args *a)
{
	int nl = c->nlocal, me = c->local_index, K = c->layout.fp_slots;
	size_t bytes = a->count * a->esize;
	uint64_t g = c->fp_step++;
	size_t soff = (g % (uint64_t)K) * c->layout.fp_chunk;
	npccl_status_t st;
	if (g + 1 > (uint64_t)K && (st = fp_wait_all(c, CNT_REDUCED, g + 1 - (uint64_t)K)))
		return st;
	memcpy(c->fp_stage[me] + soff, a->sbuf, bytes);
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

npccl_status_t shm_allreduce(struct npccl_comm *c, const struct coll_args *a)
{
	const struct npccl_config *cfg = npccl_config();
	int nl = c->nlocal, me = c->local_index, K = c->layout.fp_slots;
	size_t es = a->esize, n = a->count, chunk = c->layout.fp_chunk;
	if (n == 0)
		return NPCCL_OK;
	if (n * es <= MIN(cfg->fp_direct_max, chunk))
		return fp_direct(c, a);
	size_t ce = chunk / es;
	bool nt = n * es >= cfg->shm_nt_min;
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

		/* 1. stage the slices the others reduce */
		if (g + 1 > (uint64_t)K && (st = fp_wait_all(c, CNT_REDUCED, g + 1 - (uint64_t)K)))
			return st;
		if (mlo)
			memcpy(stage, in, mlo * es);
		if (mlo + mlen < m)
			memcpy(stage + (mlo + mlen) * es, in + (mlo + mlen) * es,
			       (m - mlo - mlen) * es);
		fp_publish(c, CNT_STAGED, g + 1);

		/* 2. reduce my slice from my input and the peers' staging */
		if ((st = fp_wait_all(c, CNT_STAGED, g + 1)))
			return st;
		if (g + 1 > (uint64_t)K && (st = fp_wait_all(c, CNT_GATHERED, g + 1 - (uint64_t)K)))
			return st;
		char *res = c->fp_result[me] + soff + mlo * es;
		if (mlen) {
			const char *mine = in + mlo * es;
			bool first = true;
			for (int k = 0; k < nl; k++) {
				if (k == me)
					continue;
				const char *src = c->fp_stage[k] + soff + mlo * es;
				if (first)
					reduce_into(a->dtype, a->op, res, mine, src, mlen);
				else
					reduce_inplace(a->dtype, a->op, res, src, mlen);
				first = false;
			}
			copy_out(out + mlo * es, res, mlen * es, nt);
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
			if (len)
				copy_out(out + lo * es, c->fp_result[k] + soff + lo * es, len * es, nt);
		}
		fp_publish(c, CNT_GATHERED, g + 1);
	}
	copy_out_done(nt);
	return NPCCL_OK;
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
