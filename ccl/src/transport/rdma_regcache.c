/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * rdma_regcache.c - caller memory the RDMA transport may read and write
 * without copying: registrations looked up by address range.
 *
 * Two kinds of buffers are registered:
 *  - npccl_mem_alloc buffers, through libnpushm (npushm_region_reg_mr on
 *    their region) the first time the transport meets them; npccl controls
 *    their lifetime, so npccl_mem_free and npccl_comm_destroy drop the
 *    registration before the buffer is unmapped (rdma_mem_forget);
 *  - any other buffer (malloc, stack, the caller's mappings), with
 *    ibv_reg_mr on its pages, only while the kernel tells npccl when those
 *    pages change: each registration's range is watched (npushm_watch.h,
 *    the module's MMU notifiers) and fires on munmap, mremap,
 *    MADV_DONTNEED, a brk shrink, a copy-on-write break, before that call
 *    returns. Every lookup first compares the watch's generation counter
 *    (one load) and, when it moved, drops the fired registrations, so a
 *    stale registration (the old pages of a reused address) is never used.
 *    Without the module there is no watch: such buffers are copied through
 *    the registered FIFO slots, and the log says why, once.
 * The range registered for a caller buffer is its pages, merged with the
 * registrations it overlaps or touches (a ring's chunks of one buffer end
 * as one registration). The cache holds at most RDMA_USER_REGS caller
 * registrations and NPCCL_RDMA_CACHE_BYTES of them; the least recently used
 * go first. A registration leaving the cache (fired, merged, evicted) is
 * deregistered only once no zero-copy transfer is in flight: a peer may be
 * writing into it. A registration that fails is remembered for
 * npccl_mem_alloc buffers (copied from then on), logged for others.
 */
#include "transport/rdma.h"
#include "transport/transport.h"
#include "npushm.h"
#include "npushm_rdma.h"
#include "npushm_watch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RDMA_USER_REGS 64

static struct rdma_reg *reg_new(struct rdma_ctx *x)
{
	if (x->nregs == x->regs_cap) {
		int cap = x->regs_cap ? 2 * x->regs_cap : 8;
		struct rdma_reg *n = realloc(x->regs, sizeof(*n) * (size_t)cap);
		if (!n)
			return NULL;
		x->regs = n;
		x->regs_cap = cap;
	}
	struct rdma_reg *e = &x->regs[x->nregs++];
	memset(e, 0, sizeof(*e));
	return e;
}

static void reg_release(struct rdma_ctx *x, struct rdma_reg *e)
{
	if (e->watch_id && x->watch)
		npushm_watch_remove(x->watch, e->watch_id);
	if (e->nmr)
		npushm_mr_dereg(e->nmr);
	else if (e->mr)
		x->v->dereg_mr(e->mr);
}

static void reg_remove_at(struct rdma_ctx *x, int i)
{
	reg_release(x, &x->regs[i]);
	memmove(&x->regs[i], &x->regs[i + 1], sizeof(x->regs[0]) * (size_t)(x->nregs - i - 1));
	x->nregs--;
}

/* no peer can be reading or writing a registration now */
static bool rdma_quiescent(const struct npccl_comm *c)
{
	for (int j = 0; c->peers && j < c->nranks; j++) {
		const struct rdma_peer *rp = c->peers[j].rdma;
		if (rp && (rp->send_inflight > 0 || (rp->recv_zc && !rp->recv_zc_done)))
			return false;
	}
	return true;
}

/* deregister what left the cache, once nothing can be using it */
static void reg_reap(struct npccl_comm *c)
{
	struct rdma_ctx *x = c->rdma;
	if (!x->nstale || !rdma_quiescent(c))
		return;
	for (int i = x->nregs - 1; i >= 0; i--)
		if (x->regs[i].stale)
			reg_remove_at(x, i);
	x->nstale = 0;
}

static void reg_retire(struct rdma_ctx *x, struct rdma_reg *e)
{
	if (!e->stale) {
		e->stale = true;
		x->nstale++;
	}
}

/* Caller buffers only: one atomic load while nothing changed. Returns
 * whether the range @pending (being registered, not in the cache yet) fired. */
static bool user_regs_sync(struct npccl_comm *c, uint64_t pending)
{
	struct rdma_ctx *x = c->rdma;
	bool fired = false;
	if (!x->watch || npushm_watch_generation(x->watch) == x->watch_gen)
		return false;
	x->watch_gen = npushm_watch_generation(x->watch);
	npushm_watch_event_t ev[64];
	size_t n;
	while (npushm_watch_read(x->watch, ev, 64, &n) == NPUSHM_OK && n) {
		for (size_t k = 0; k < n; k++) {
			fired |= pending && ev[k].id == pending;
			for (int i = 0; i < x->nregs; i++) {
				struct rdma_reg *e = &x->regs[i];
				if (e->watch_id != ev[k].id || e->stale)
					continue;
				npccl_log(NPCCL_LOG_INFO, "rank %d: rdma: registration of buffer %p "
					  "(%zu bytes) dropped: its pages changed (unmapped, remapped or "
					  "released)", c->rank, (const void *)e->base, e->len);
				reg_retire(x, e);
			}
		}
	}
	return fired;
}

/* why caller buffers are copied: said once per communicator */
static bool user_regs_enabled(struct npccl_comm *c)
{
	struct rdma_ctx *x = c->rdma;
	if (x->watch)
		return true;
	if (x->watch_tried)
		return false;
	x->watch_tried = true;
	if (!npccl_config()->rdma_cache_bytes) {
		npccl_log(NPCCL_LOG_INFO, "rank %d: rdma: NPCCL_RDMA_CACHE_BYTES=0: buffers not from "
			  "npccl_mem_alloc are copied through the FIFO", c->rank);
		return false;
	}
	if (npushm_watch_open(&x->watch)) {
		x->watch = NULL;
		npccl_log(NPCCL_LOG_INFO, "rank %d: rdma: buffers not from npccl_mem_alloc are copied "
			  "through the FIFO: their registrations could not be kept safely (%s)",
			  c->rank, npushm_last_error());
		return false;
	}
	x->watch_gen = npushm_watch_generation(x->watch);
	return true;
}

/* make room for @need bytes: the least recently used caller registrations go */
static void user_regs_evict(struct rdma_ctx *x, size_t need)
{
	size_t cap = npccl_config()->rdma_cache_bytes;
	for (;;) {
		struct rdma_reg *lru = NULL;
		size_t live = 0;
		int nlive = 0;
		for (int i = 0; i < x->nregs; i++) {
			struct rdma_reg *e = &x->regs[i];
			if (e->owner || e->stale)
				continue;
			live += e->acct;
			nlive++;
			if (!lru || e->last_use < lru->last_use)
				lru = e;
		}
		if (!lru || (nlive < RDMA_USER_REGS && live + need <= cap))
			return;
		reg_retire(x, lru);
	}
}

/* Register [lo, hi) of the caller's memory into *out; 0, or -1 with *why.
 * The range is watched before its pages are pinned, so no change between
 * the two is missed; pinning may itself move pages (a copy-on-write break
 * fires the range): then the range is registered again, on the pages it
 * maps now. */
static int user_reg_make(struct npccl_comm *c, char *lo, char *hi, bool writable,
			 struct rdma_reg *out, char *why, size_t whylen)
{
	struct rdma_ctx *x = c->rdma;
	int access = writable ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE : 0;
	for (int attempt = 0; attempt < 3; attempt++) {
		uint64_t id;
		if (npushm_watch_add(x->watch, lo, (size_t)(hi - lo), ++x->reg_serial, &id)) {
			snprintf(why, whylen, "%s", npushm_last_error());
			return -1;
		}
		struct ibv_mr *mr = x->v->reg_mr(x->pd, lo, (size_t)(hi - lo), access);
		if (!mr) {
			snprintf(why, whylen, "ibv_reg_mr: %s", strerror(errno));
			npushm_watch_remove(x->watch, id);
			user_regs_sync(c, 0);
			return -1;
		}
		if (!user_regs_sync(c, id)) {
			out->base = lo;
			out->len = (size_t)(hi - lo);
			out->acct = out->len;
			out->mr_addr = lo;
			out->lkey = mr->lkey;
			out->rkey = mr->rkey;
			out->mr = mr;
			out->writable = writable;
			out->watch_id = id;
			return 0;
		}
		npushm_watch_remove(x->watch, id);
		x->v->dereg_mr(mr);
	}
	snprintf(why, whylen, "its pages kept changing while it was registered");
	return -1;
}

static struct rdma_reg *user_reg_add(struct npccl_comm *c, const struct rdma_reg *made)
{
	struct rdma_ctx *x = c->rdma;
	struct rdma_reg *e = reg_new(x);
	if (!e) {
		if (made->watch_id)
			npushm_watch_remove(x->watch, made->watch_id);
		if (made->mr)
			x->v->dereg_mr(made->mr);
		return NULL;
	}
	*e = *made;
	e->last_use = ++x->use_clock;
	return e;
}

/* A caller buffer that cannot be registered: remembered (copied) until its
 * pages change, so that the next calls do not try again; when even its
 * range cannot be watched (the module's limits), until it is evicted. A
 * refusal only ever costs copies. */
static void user_reg_refused(struct npccl_comm *c, char *lo, char *hi, const char *why)
{
	struct rdma_ctx *x = c->rdma;
	struct rdma_reg made;
	memset(&made, 0, sizeof(made));
	npccl_log(NPCCL_LOG_INFO, "rank %d: rdma: buffer %p (%zu bytes) not registered on %s (%s): "
		  "copied through the FIFO", c->rank, (void *)lo, (size_t)(hi - lo), x->dev, why);
	made.base = lo;
	made.len = (size_t)(hi - lo);
	made.failed = true;
	if (npushm_watch_add(x->watch, lo, made.len, ++x->reg_serial, &made.watch_id))
		made.watch_id = 0;
	user_reg_add(c, &made);
}

/* a caller buffer: registered (merged with what it touches) and watched */
static const struct rdma_reg *user_reg_find(struct npccl_comm *c, const char *q, size_t len,
					    bool writable, char **addr)
{
	struct rdma_ctx *x = c->rdma;
	if (!user_regs_enabled(c))
		return NULL;
	size_t cap = npccl_config()->rdma_cache_bytes;
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	char *lo0 = (char *)((uintptr_t)q & ~(pg - 1));
	char *hi0 = (char *)(((uintptr_t)q + len + pg - 1) & ~(pg - 1));
	char *lo = lo0, *hi = hi0;
	bool w = writable;
	/* merge with live registrations the range overlaps or touches */
	for (int i = 0; i < x->nregs; i++) {
		struct rdma_reg *e = &x->regs[i];
		if (e->owner || e->stale || e->failed || e->base > hi || e->base + e->len < lo)
			continue;
		if (e->base < lo)
			lo = (char *)e->base;
		if (e->base + e->len > hi)
			hi = (char *)e->base + e->len;
		w |= e->writable;
	}
	if ((size_t)(hi0 - lo0) > cap) {
		npccl_log(NPCCL_LOG_DEBUG, "rank %d: rdma: buffer %p (%zu bytes) is larger than "
			  "NPCCL_RDMA_CACHE_BYTES: copied through the FIFO", c->rank, (const void *)q,
			  len);
		return NULL;
	}
	if ((size_t)(hi - lo) > cap) {
		lo = lo0;
		hi = hi0;
		w = writable;
	}
	user_regs_evict(x, (size_t)(hi - lo));
	struct rdma_reg made;
	char why[256];
	memset(&made, 0, sizeof(made));
	if (user_reg_make(c, lo, hi, w, &made, why, sizeof(why)) &&
	    ((lo == lo0 && hi == hi0 && w == writable) ||
	     user_reg_make(c, lo0, hi0, writable, &made, why, sizeof(why)))) {
		user_reg_refused(c, lo0, hi0, why);
		return NULL;
	}
	/* what it covers leaves the cache */
	for (int i = 0; i < x->nregs; i++) {
		struct rdma_reg *e = &x->regs[i];
		if (!e->owner && !e->stale && !e->failed && e->base >= made.base &&
		    e->base + e->len <= made.base + made.len)
			reg_retire(x, e);
	}
	struct rdma_reg *e = user_reg_add(c, &made);
	if (!e)
		return NULL;
	npccl_log(NPCCL_LOG_INFO, "rank %d: rdma: buffer %p (%zu bytes, %s) registered on %s and "
		  "watched", c->rank, (void *)e->base, e->len, e->writable ? "read-write" : "read-only",
		  x->dev);
	*addr = e->mr_addr + (q - e->base);
	return e;
}

const struct rdma_reg *rdma_reg_find(struct npccl_comm *c, const void *p, size_t len,
				     bool writable, char **addr)
{
	struct rdma_ctx *x = c->rdma;
	const char *q = p;
	if (!x || !npccl_config()->rdma_zcopy || !len)
		return NULL;
	user_regs_sync(c, 0);
	reg_reap(c);
	for (int i = 0; i < x->nregs; i++) {
		struct rdma_reg *e = &x->regs[i];
		if (e->stale || q < e->base || q > e->base + e->len ||
		    len > e->len - (size_t)(q - e->base))
			continue;
		if (e->failed || (e->owner && writable && !e->writable))
			return NULL;
		if (writable && !e->writable)
			continue;	/* a caller buffer: registered again, writable */
		if (!e->owner)
			e->last_use = ++x->use_clock;
		*addr = e->mr_addr + (q - e->base);
		return e;
	}
	size_t off;
	struct shm_mem *m = shm_mem_find(c, p, len, &off);
	if (!m)
		return user_reg_find(c, q, len, writable, addr);
	struct rdma_reg *e = reg_new(x);
	if (!e)
		return NULL;
	char why[300];
	e->base = m->base;
	e->len = m->size;
	e->owner = m->id + 1;
	if (shm_region_reg_mr(m->region, x->pd, &e->nmr, &e->mr_addr, &e->lkey, &e->rkey, why,
			      sizeof(why))) {
		e->failed = true;
		npccl_log(NPCCL_LOG_INFO, "rank %d: rdma: npccl_mem_alloc buffer %p (%zu bytes) not "
			  "registered on %s (%s): copied through the FIFO instead", c->rank,
			  (void *)m->base, m->size, x->dev, why);
		return NULL;
	}
	e->writable = true;
	npccl_log(NPCCL_LOG_INFO, "rank %d: rdma: npccl_mem_alloc buffer %p (%zu bytes) registered "
		  "on %s through libnpushm (%s)", c->rank, (void *)m->base, m->size, x->dev, why);
	*addr = e->mr_addr + off;
	return e;
}

void rdma_mem_forget(struct npccl_comm *c, const void *base)
{
	struct rdma_ctx *x = c->rdma;
	for (int i = 0; x && i < x->nregs; i++)
		if (x->regs[i].base == base && x->regs[i].owner) {
			npccl_log(NPCCL_LOG_INFO, "rank %d: rdma: registration of npccl_mem_alloc "
				  "buffer %p dropped (freed)", c->rank, base);
			reg_remove_at(x, i);
			return;
		}
}

void rdma_reg_drop_all(struct npccl_comm *c)
{
	struct rdma_ctx *x = c->rdma;
	while (x && x->nregs)
		reg_remove_at(x, x->nregs - 1);
	if (x && x->watch) {
		npushm_watch_close(x->watch);
		x->watch = NULL;
	}
}
