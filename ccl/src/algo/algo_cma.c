/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * algo_cma.c - AllGather, Broadcast and ReduceScatter between private
 * buffers of the ranks of one host with a single copy: each rank copies
 * what it needs straight out of its peers' buffers with process_vm_readv
 * (Linux cross-memory attach), all ranks at once, instead of a copy into
 * and a copy out of the shared FIFOs. For two ranks the broadcast root
 * also writes half of the message into the receiver's buffer
 * (process_vm_writev), so both cores copy.
 *
 * Two kernel paths: with the npushm module each rank has a space (its
 * descriptor passed to the local peers at setup, transport_shm.c) and
 * grants each call's buffers in it, read or write, before publishing them;
 * peers copy with pread/pwrite on it, which needs no ptrace access (other
 * uids, any Yama scope, seccomp filters against process_vm_readv, other pid
 * namespaces); the grants are revoked once every peer is done. Without a
 * peer's space, cross-memory attach: same user, same pid namespace, ptrace
 * access allowed. cma_probe_begin() and cma_probe_peers() check at init
 * that every rank can read every peer one way or the other, and comm.c
 * agrees the result, so all ranks choose alike. Each
 * call publishes its buffers' addresses in the control block, then `staged`
 * (with the step hash, as the shm fast path, so mismatched calls are caught);
 * a rank copies, then publishes `reduced` and waits for every peer's
 * `reduced`: nobody's buffer is released while a peer may still read it.
 */
#include "npccl_internal.h"
#include "transport/transport.h"
#include "algo/algo.h"
#include "npushm_space.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
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

/* Copies len bytes between local and peer k's address `remote` (read:
 * from the peer; write: to it). */
static npccl_status_t cma_copy(struct npccl_comm *c, int k, char *local, uint64_t remote,
			       size_t len, bool write)
{
	int rank = c->local_ranks[k];
	pid_t pid = (pid_t)c->peers[rank].info.pid;
	int space = c->peers[rank].space_fd;
	size_t done = 0;
	if (space >= 0 && len) {
		npushm_status_t ps = write ? npushm_space_write(space, remote, local, len, &done)
					   : npushm_space_read(space, remote, local, len, &done);
		if (ps == NPUSHM_OK)
			return NPCCL_OK;
		if (ps == NPUSHM_ERR_NOT_FOUND)
			return comm_peer_lost(c, rank, "its process exited");
		char who[128];
		peer_describe(c, rank, who, sizeof(who));
		return comm_fail(c, NPCCL_ERR_SYSTEM, rank, "cannot %s the buffer of %s: %s",
				 write ? "write" : "read", who, npushm_last_error());
	}
	while (done < len) {
		struct iovec l = { local + done, len - done };
		struct iovec r = { (void *)(uintptr_t)(remote + done), len - done };
		ssize_t n = write ? process_vm_writev(pid, &l, 1, &r, 1, 0)
				  : process_vm_readv(pid, &l, 1, &r, 1, 0);
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		int e = n < 0 ? errno : EFAULT;
		if (e == ESRCH)
			return comm_peer_lost(c, rank, "its process exited");
		char who[128];
		peer_describe(c, rank, who, sizeof(who));
		return comm_fail(c, NPCCL_ERR_SYSTEM, rank, "cannot %s the buffer of %s: %s",
				 write ? "write" : "read", who, strerror(e));
	}
	return NPCCL_OK;
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

/* Step 1 of every call: my buffers granted (@slen bytes of the send
 * buffer peers read, @rlen of the receive buffer they write), their
 * addresses, then `staged`; on return everyone's are readable in
 * c->ctl[k]->cma_*. */
static npccl_status_t cma_begin(struct npccl_comm *c, const void *sbuf, size_t slen,
				const void *rbuf, size_t rlen, uint64_t *step)
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

/* Last step: done with the peers' buffers; wait until they are with mine. */
static npccl_status_t cma_end(struct npccl_comm *c, uint64_t step, npccl_status_t st)
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

/* Block `me` of every rank's input, reduced straight into the output chunk
 * by chunk: my own block first, then each peer's (rank order), whose chunk
 * is first copied into a cache-sized buffer; own block and first peer are
 * combined in one pass. In place the output is my own block of the input:
 * that pass reads each element before it writes it, later ones only read
 * peers' copies. (Sum, product, min and max commute: any order is a valid
 * result; floats may round differently from the rank-order algorithms.) */
npccl_status_t cma_reduce_scatter(struct npccl_comm *c, const struct coll_args *a)
{
	int P = c->nlocal, me = c->local_index;
	size_t es = a->esize, bb = a->count * es;
	size_t chunk = MAX(es, (npccl_config()->pipeline_chunk / es) * es);
	char *in = comm_scratch(c, chunk);
	if (!in && bb)
		return comm_fail(c, NPCCL_ERR_NOMEM, -1, "no memory for %zu bytes", chunk);
	uint64_t step;
	npccl_status_t st = cma_begin(c, a->sbuf, bb * (size_t)P, a->rbuf, 0, &step);
	if (st)
		return st;
	const char *own = a->sbuf + (size_t)me * bb;
	for (size_t off = 0; off < bb && !st; off += chunk) {
		size_t len = MIN(chunk, bb - off), n = len / es;
		bool first = true;
		for (int k = 0; k < P && !st; k++) {
			if (k == me)
				continue;
			st = cma_copy(c, k, in, c->ctl[k]->cma_sbuf + (uint64_t)me * bb + off, len,
				      false);
			if (st)
				break;
			if (first)
				reduce_into(a->dtype, a->op, a->rbuf + off, own + off, in, n);
			else
				reduce_inplace(a->dtype, a->op, a->rbuf + off, in, n);
			first = false;
		}
	}
	return cma_end(c, step, st);
}

/* At init: can this rank read every local peer's memory? Each rank
 * publishes the address of a word holding its pid; everyone reads the
 * others' and the verdict is agreed (MIN over the ranks). */
bool cma_probe_begin(struct npccl_comm *c)
{
	c->cma_ok = false;
	if (c->nhosts != 1 || c->nlocal < 2 || npccl_config()->disable_cma)
		return false;
	c->cma_word = (uint64_t)getpid();
	c->ctl[c->local_index]->cma_probe = (uint64_t)(uintptr_t)&c->cma_word;
	/* the probe word stays granted for the communicator's life */
	uint64_t id;
	if (c->space &&
	    npushm_space_grant(c->space, &c->cma_word, sizeof(c->cma_word), NPUSHM_SPACE_READ, &id))
		npccl_log(NPCCL_LOG_INFO, "rank %d: %s", c->rank, npushm_last_error());
	return true;
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
		struct iovec l = { &v, sizeof(v) }, r = { (void *)(uintptr_t)c->ctl[k]->cma_probe,
							  sizeof(v) };
		errno = 0;
		if (p->space_fd >= 0) {
			/* the peer's own pid as it sees it: compare with what it told us */
			ok = npushm_space_read(p->space_fd, c->ctl[k]->cma_probe, &v, sizeof(v),
					       NULL) == NPUSHM_OK && v == p->info.pid;
			npccl_log(ok ? NPCCL_LOG_DEBUG : NPCCL_LOG_INFO, "rank %d: %s local rank %d's "
				  "memory through its npushm space%s%s", c->rank,
				  ok ? "reads" : "cannot read", rank, ok ? "" : ": ",
				  ok ? "" : npushm_last_error());
			continue;
		}
		ok = p->info.pidns_id == c->peers[c->rank].info.pidns_id &&
		     process_vm_readv((pid_t)p->info.pid, &l, 1, &r, 1, 0) == sizeof(v) &&
		     v == p->info.pid;
		if (!ok)
			npccl_log(NPCCL_LOG_INFO, "rank %d: cannot read the memory of local rank %d "
				  "(%s): single-copy collectives off, FIFO copies instead", c->rank,
				  rank, errno ? strerror(errno) : "other pid namespace or value");
	}
	return ok;
}
