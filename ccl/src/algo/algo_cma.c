/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * algo_cma.c - single-copy collectives between private buffers of the ranks
 * of one host: each rank copies what it needs straight out of (or into) its
 * peers' buffers, all ranks at once, instead of a copy into and a copy out
 * of shared memory. Here the common steps and the collectives that move
 * data without reducing it: AllGather, Broadcast, Gather, Scatter and
 * AllToAll (algo_cma_reduce.c has AllReduce, Reduce and ReduceScatter).
 * For two ranks the broadcast root also writes half of the message into the
 * receiver's buffer, so both cores copy; Gather's ranks write their blocks
 * into the root's buffer, Scatter's read theirs from it, in parallel.
 *
 * Two kernel paths: with the npushm module each rank has a space (its
 * descriptor passed to the local peers at setup, transport_shm.c) and
 * grants each call's buffers in it, read or write, before publishing them;
 * peers copy with pread/pwrite on it, which needs no ptrace access (other
 * uids, any Yama scope, seccomp filters against process_vm_readv, other pid
 * namespaces); the grants are revoked once every peer is done. Without a
 * peer's space, cross-memory attach (process_vm_readv/writev): same user,
 * same pid namespace, ptrace access allowed. Grants live for one call, not
 * longer: a peer can reach a buffer only while a call that handed it over
 * runs (two system calls per buffer and call; caching them would leave
 * freed heap memory open to the peers, which no watch sees being reused).
 * cma_probe_begin() and cma_probe_peers() check at init that every rank can
 * read every peer one way or the other, and comm.c agrees the result, so
 * all ranks choose alike. Each call publishes its buffers' addresses in the
 * control block, then `staged` (with the step hash, as the shm fast path,
 * so mismatched calls are caught); a rank copies, then publishes `reduced`
 * and waits for every peer's `reduced`: nobody's buffer is released while a
 * peer may still read or write it. Every copy is counted by path
 * (npccl_comm_copy_stats).
 */
#include "npccl_internal.h"
#include "transport/transport.h"
#include "algo/algo.h"
#include "algo/cma.h"
#include "npushm_space.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

enum { CNT_STAGED, CNT_REDUCED };

struct cma_wait {
	struct npccl_comm *c;
	int which;
	uint64_t target;
};

static bool cma_ready(void *arg)
{
	struct cma_wait *w = arg;
	struct npccl_comm *c = w->c;
	for (int k = 0; k < c->nlocal; k++) {
		if (k == c->local_index)
			continue;
		const struct shm_ctl *p = c->ctl[k];
		uint64_t v = atomic_load_explicit(w->which == CNT_STAGED ? &p->staged : &p->reduced,
						  memory_order_acquire);
		if (v >= w->target && w->which == CNT_STAGED &&
		    p->step_hash[(w->target - 1) % 4] != c->cur_hash) {
			struct op_desc d = { .seq = atomic_load(&p->op_seq), .count = p->op_count,
					     .root = p->op_root, .coll = p->op_coll,
					     .dtype = p->op_dtype, .redop = p->op_redop,
					     .algo = p->op_algo };
			comm_mismatch(c, c->local_ranks[k], &d);
			return true;
		}
		if (v < w->target) {
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

static npccl_status_t cma_wait_all(struct npccl_comm *c, int which, uint64_t target)
{
	struct cma_wait w = { c, which, target };
	return cma_ready(&w) ? c->failed : comm_wait(c, cma_ready, &w, c->waiting_on);
}

static void cma_publish(struct npccl_comm *c, int which, uint64_t v)
{
	struct shm_ctl *me = c->ctl[c->local_index];
	if (which == CNT_STAGED) {
		me->step_hash[(v - 1) % 4] = c->cur_hash;
		atomic_store_explicit(&me->staged, v, memory_order_release);
	} else {
		/* a step of the shared fast path's sequence: it never stages data */
		atomic_store_explicit(&me->gathered, v, memory_order_relaxed);
		atomic_store_explicit(&me->reduced, v, memory_order_release);
	}
	doorbell_ring_all_local(c);
}

/* Revoke this call's grants: no peer reads or writes my buffers after it. */
static void cma_revoke(struct npccl_comm *c)
{
	for (int i = 0; i < 2; i++) {
		if (c->space_grants[i])
			npushm_space_revoke(c->space, c->space_grants[i]);
		c->space_grants[i] = 0;
	}
}

/* Grant peers my send buffer (read, @slen bytes) and receive buffer
 * (write, @rlen bytes) in my space, if I have one. */
static npccl_status_t cma_grant(struct npccl_comm *c, const void *sbuf, size_t slen,
				const void *rbuf, size_t rlen)
{
	if (!c->space)
		return NPCCL_OK;
	if ((slen && npushm_space_grant(c->space, sbuf, slen, NPUSHM_SPACE_READ,
					&c->space_grants[0])) ||
	    (rlen && npushm_space_grant(c->space, rbuf, rlen, NPUSHM_SPACE_WRITE,
					&c->space_grants[1]))) {
		cma_revoke(c);
		return comm_fail(c, NPCCL_ERR_SYSTEM, -1, "cannot open my buffers to my peers: %s",
				 npushm_last_error());
	}
	return NPCCL_OK;
}

npccl_status_t cma_begin(struct npccl_comm *c, const void *sbuf, size_t slen, const void *rbuf,
			 size_t rlen, uint64_t *step)
{
	struct shm_ctl *me = c->ctl[c->local_index];
	npccl_status_t st = cma_grant(c, sbuf, slen, rbuf, rlen);
	if (st)
		return st;
	me->cma_sbuf = (uint64_t)(uintptr_t)sbuf;
	me->cma_rbuf = (uint64_t)(uintptr_t)rbuf;
	*step = c->fp_step++;
	cma_publish(c, CNT_STAGED, *step + 1);
	st = cma_wait_all(c, CNT_STAGED, *step + 1);
	if (st)
		cma_revoke(c);
	return st;
}

npccl_status_t cma_end(struct npccl_comm *c, uint64_t step, npccl_status_t st)
{
	if (!st) {
		cma_publish(c, CNT_REDUCED, step + 1);
		st = cma_wait_all(c, CNT_REDUCED, step + 1);
	}
	/* failed: a peer still reading my buffers gets an error, not my next data */
	cma_revoke(c);
	return st;
}

npccl_status_t cma_allgather(struct npccl_comm *c, const struct coll_args *a)
{
	int P = c->nlocal, me = c->local_index;
	size_t bb = a->count * a->esize;
	char *mine = a->rbuf + (size_t)me * bb;
	uint64_t step;
	npccl_status_t st = cma_begin(c, a->sbuf, bb, a->rbuf, 0, &step);
	if (st)
		return st;
	if (mine != a->sbuf && bb)
		memcpy(mine, a->sbuf, bb);
	for (int i = 1; i < P && !st; i++) {
		int k = (me + i) % P;
		st = cma_copy(c, k, a->rbuf + (size_t)k * bb, c->ctl[k]->cma_sbuf, bb, false);
	}
	return cma_end(c, step, st);
}

npccl_status_t cma_broadcast(struct npccl_comm *c, const struct coll_args *a)
{
	int P = c->nlocal, me = c->local_index, root = c->peers[a->root].local_index;
	size_t bytes = a->count * a->esize;
	uint64_t step;
	npccl_status_t st = me == root ? cma_begin(c, a->sbuf, bytes, a->rbuf, 0, &step)
				       : cma_begin(c, a->sbuf, 0, a->rbuf, P == 2 ? bytes : 0, &step);
	if (st)
		return st;
	/* two ranks: the root writes the second half while the other reads the first */
	size_t half = P == 2 ? ALIGN_UP(bytes / 2, 64) : bytes;
	half = MIN(half, bytes);
	if (me == root) {
		if (a->rbuf != a->sbuf && bytes)
			memcpy(a->rbuf, a->sbuf, bytes);
		if (P == 2 && bytes > half)
			st = cma_copy(c, 1 - me, (char *)a->sbuf + half, c->ctl[1 - me]->cma_rbuf + half,
				      bytes - half, true);
	} else {
		st = cma_copy(c, root, a->rbuf, c->ctl[root]->cma_sbuf, half, false);
	}
	return cma_end(c, step, st);
}

npccl_status_t cma_gather(struct npccl_comm *c, const struct coll_args *a)
{
	int P = c->nlocal, me = c->local_index, root = c->peers[a->root].local_index;
	size_t bb = a->count * a->esize;
	uint64_t step;
	npccl_status_t st = cma_begin(c, NULL, 0, a->rbuf, me == root ? bb * (size_t)P : 0, &step);
	if (st)
		return st;
	if (me == root) {
		char *own = a->rbuf + (size_t)me * bb;
		if (own != a->sbuf && bb)
			memmove(own, a->sbuf, bb);
	} else {
		st = cma_copy(c, root, (char *)a->sbuf, c->ctl[root]->cma_rbuf + (uint64_t)me * bb,
			      bb, true);
	}
	return cma_end(c, step, st);
}

npccl_status_t cma_scatter(struct npccl_comm *c, const struct coll_args *a)
{
	int P = c->nlocal, me = c->local_index, root = c->peers[a->root].local_index;
	size_t bb = a->count * a->esize;
	uint64_t step;
	npccl_status_t st = cma_begin(c, a->sbuf, me == root ? bb * (size_t)P : 0, NULL, 0, &step);
	if (st)
		return st;
	if (me == root) {
		const char *own = a->sbuf + (size_t)me * bb;
		if (own != a->rbuf && bb)
			memmove(a->rbuf, own, bb);
	} else {
		st = cma_copy(c, root, a->rbuf, c->ctl[root]->cma_sbuf + (uint64_t)me * bb, bb,
			      false);
	}
	return cma_end(c, step, st);
}

/* Each rank reads block `me` of every peer's input. In place, peers read
 * from a copy of it (the buffer's blocks are overwritten meanwhile). */
npccl_status_t cma_alltoall(struct npccl_comm *c, const struct coll_args *a)
{
	int P = c->nlocal, me = c->local_index;
	size_t bb = a->count * a->esize;
	const char *src = a->sbuf;
	if (a->sbuf == a->rbuf && bb) {
		char *tmp = comm_scratch(c, bb * (size_t)P);
		if (!tmp)
			return comm_fail(c, NPCCL_ERR_NOMEM, -1, "no memory for %zu bytes",
					 bb * (size_t)P);
		memcpy(tmp, a->sbuf, bb * (size_t)P);
		src = tmp;
	}
	uint64_t step;
	npccl_status_t st = cma_begin(c, src, bb * (size_t)P, NULL, 0, &step);
	if (st)
		return st;
	if (src == a->sbuf && bb)
		memcpy(a->rbuf + (size_t)me * bb, src + (size_t)me * bb, bb);
	for (int i = 1; i < P && !st; i++) {
		int k = (me + i) % P;
		st = cma_copy(c, k, a->rbuf + (size_t)k * bb, c->ctl[k]->cma_sbuf + (uint64_t)me * bb,
			      bb, false);
	}
	return cma_end(c, step, st);
}

/* bytes of the init probe area: a pipeline chunk, read once to time it */
#define PROBE_AREA ((size_t)256 << 10)

/* At init: can every rank read every local peer's memory? Each rank
 * publishes the address of an area whose first word holds its pid;
 * everyone reads the others' word, then times reads of its next peer's
 * area, and the verdict and the times are agreed (comm.c: MIN and MAX over
 * all ranks, those alone on their host agreeing); cma_probe_end() then
 * drops the area. The collectives here need one host; the shm transport's
 * rendezvous (transport_shm.c) serves local pairs of any communicator. */
bool cma_probe_begin(struct npccl_comm *c)
{
	c->cma_ok = false;
	c->cma_call_us = c->cma_copy_ratio = 0;
	/* the same verdict on every rank: some host has two ranks or more */
	if (c->nranks == c->nhosts || npccl_config()->disable_cma)
		return false;
	if (c->nlocal < 2)
		return true;	/* nothing to read here: agrees */
	void *a = mmap(NULL, PROBE_AREA, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	c->ctl[c->local_index]->cma_probe = 0;
	if (a == MAP_FAILED)
		return true;	/* peers cannot read it: they say so */
	c->cma_probe_area = a;
	uint64_t pid = (uint64_t)getpid();
	memcpy(a, &pid, sizeof(pid));
	if (c->space && npushm_space_grant(c->space, a, PROBE_AREA, NPUSHM_SPACE_READ,
					   &c->cma_probe_grant))
		npccl_log(NPCCL_LOG_INFO, "rank %d: %s", c->rank, npushm_last_error());
	c->ctl[c->local_index]->cma_probe = (uint64_t)(uintptr_t)a;
	return true;
}

/* @len bytes of local rank @k's probe area into @dst, without failing the
 * communicator: 0, or the errno (EPERM also for another pid namespace) */
static int probe_read(struct npccl_comm *c, int k, void *dst, size_t len)
{
	const struct peer *p = &c->peers[c->local_ranks[k]];
	uint64_t at = c->ctl[k]->cma_probe;
	if (!at)
		return ENOMEM;
	if (p->space_fd >= 0) {
		size_t n = 0;
		return npushm_space_read(p->space_fd, at, dst, len, &n) == NPUSHM_OK && n == len
			       ? 0 : npushm_last_errno() ? npushm_last_errno() : EIO;
	}
	if (p->info.pidns_id != c->peers[c->rank].info.pidns_id)
		return EPERM;
	struct iovec l = { dst, len }, r = { (void *)(uintptr_t)at, len };
	ssize_t n = process_vm_readv((pid_t)p->info.pid, &l, 1, &r, 1, 0);
	return n == (ssize_t)len ? 0 : n < 0 ? errno : EIO;
}

/* Best of @rounds reads of @len bytes of local rank @k's area, in us. */
static double probe_time(struct npccl_comm *c, int k, void *dst, size_t len, int rounds)
{
	double best = 1e30;
	for (int i = 0; i < rounds; i++) {
		uint64_t t0 = now_ns();
		if (probe_read(c, k, dst, len))
			return 0;
		best = MIN(best, (double)(now_ns() - t0) / 1000.0);
	}
	return best;
}

int32_t cma_probe_peers(struct npccl_comm *c)
{
	int32_t ok = 1;

	for (int k = 0; k < c->nlocal && ok; k++) {
		int rank = c->local_ranks[k];
		if (k == c->local_index)
			continue;
		const struct peer *p = &c->peers[rank];
		uint64_t v = 0;
		int e = probe_read(c, k, &v, sizeof(v));
		/* the peer's own pid as it sees it: compare with what it told us */
		ok = !e && v == p->info.pid;
		if (!ok)
			npccl_log(NPCCL_LOG_INFO, "rank %d: cannot read the memory of local rank %d "
				  "%s(%s): single-copy collectives off, FIFO copies instead", c->rank,
				  rank, p->space_fd >= 0 ? "through its npushm space " : "",
				  e ? strerror(e) : "another value");
	}
	if (!ok || c->nlocal < 2)
		return ok;
	/* the next local rank's area: a small read's cost, a chunk's, and a
	 * local memcpy of a chunk, all from caches alike */
	int k = (c->local_index + 1) % c->nlocal;
	char *dst = comm_scratch(c, PROBE_AREA);
	double small = dst ? probe_time(c, k, dst, 8, 5) : 0;
	double big = small ? probe_time(c, k, dst, PROBE_AREA, 3) : 0;
	double local = 1e30;
	for (int i = 0; big && i < 3; i++) {
		uint64_t t0 = now_ns();
		memcpy(dst, c->cma_probe_area, PROBE_AREA);
		local = MIN(local, (double)(now_ns() - t0) / 1000.0);
	}
	if (big) {
		c->cma_call_us = small;
		c->cma_copy_ratio = MAX(1.0, (big - small) / MAX(local, 0.01));
	}
	return ok;
}

void cma_probe_end(struct npccl_comm *c)
{
	if (c->cma_probe_grant)
		npushm_space_revoke(c->space, c->cma_probe_grant);
	c->cma_probe_grant = 0;
	if (c->cma_probe_area)
		munmap(c->cma_probe_area, PROBE_AREA);
	c->cma_probe_area = NULL;
	if (c->ctl && c->nlocal > 1)
		c->ctl[c->local_index]->cma_probe = 0;
}
