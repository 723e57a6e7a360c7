/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * progress.c - point-to-point requests and the one wait loop.
 *
 * Requests are queued per peer and direction; only the head of a queue makes
 * progress, so messages between two ranks match in posting order (every
 * algorithm posts them in the same order on both sides). comm_wait() is the
 * only place the library blocks: it spins for NPCCL_SPIN_US (briefly, with
 * sched_yield, when ranks outnumber cores), then sleeps in poll() on the
 * control channels, peers' pidfds, TCP sockets with pending work and this
 * rank's shared-memory doorbell (an eventfd peers write when they see our
 * "sleeping" flag). It enforces the operation's deadline, turns closed
 * connections and exited peers into errors, and answers control messages
 * (queries and abort verdicts) while waiting, so a rank blocked anywhere
 * still helps diagnose a failure elsewhere.
 */
#include "npccl_internal.h"
#include "transport/transport.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define REQ_BLOCK 64

struct req_block {
	struct req_block *next;
	struct req r[REQ_BLOCK];
};

static struct req *req_alloc(struct npccl_comm *c)
{
	struct req_block *b = (struct req_block *)c->reqs;
	for (; b; b = b->next)
		for (int i = 0; i < REQ_BLOCK; i++)
			if (!b->r[i].in_use) {
				memset(&b->r[i], 0, sizeof(b->r[i]));
				b->r[i].in_use = true;
				return &b->r[i];
			}
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->next = (struct req_block *)c->reqs;
	c->reqs = (struct req *)b;
	b->r[0].in_use = true;
	return &b->r[0];
}

void p2p_free_all_reqs(struct npccl_comm *c)
{
	struct req_block *b = (struct req_block *)c->reqs;
	while (b) {
		struct req_block *n = b->next;
		free(b);
		b = n;
	}
	c->reqs = NULL;
}

int wire_hdr_expect(struct npccl_comm *c, int rank, const struct wire_hdr *h,
		    const struct wire_hdr *e)
{
	if (h->type != FRAME_DATA || h->seq != e->seq || h->coll != e->coll ||
	    h->count != e->count || h->dtype != e->dtype || h->redop != e->redop ||
	    h->root != e->root || h->algo != e->algo) {
		struct op_desc d;
		wire_hdr_desc(h, &d);
		comm_mismatch(c, rank, &d);
		return -1;
	}
	if (h->len != e->len) {
		char who[128];
		peer_describe(c, rank, who, sizeof(who));
		comm_fail(c, NPCCL_ERR_MISMATCH, rank,
			  "%s sent %llu bytes where this rank expected %llu (different count or "
			  "algorithm on the two ranks)",
			  who, (unsigned long long)h->len, (unsigned long long)e->len);
		return -1;
	}
	return 0;
}

static void enqueue(struct req **head, struct req **tail, struct req *r)
{
	r->next = NULL;
	if (*tail)
		(*tail)->next = r;
	else
		*head = r;
	*tail = r;
}

static struct req *post(struct npccl_comm *c, enum req_kind kind, int peer, const void *sbuf,
			void *rbuf, size_t len)
{
	struct req *r = req_alloc(c);
	if (!r)
		return NULL;
	struct peer *p = &c->peers[peer];
	r->kind = kind;
	r->peer = p;
	r->sbuf = sbuf;
	r->rbuf = rbuf;
	r->len = len;
	r->gen = c->req_gen;
	p2p_set_hdr(c, &r->hdr, len);
	if (kind == REQ_SEND)
		enqueue(&p->sendq, &p->sendq_tail, r);
	else
		enqueue(&p->recvq, &p->recvq_tail, r);
	return r;
}

struct req *p2p_post_send(struct npccl_comm *c, int peer, const void *buf, size_t len)
{
	return post(c, REQ_SEND, peer, buf, NULL, len);
}

struct req *p2p_post_recv(struct npccl_comm *c, int peer, void *buf, size_t len)
{
	return post(c, REQ_RECV, peer, NULL, buf, len);
}

struct req *p2p_post_recv_reduce_from(struct npccl_comm *c, int peer, void *buf,
				      const void *src, size_t len, npccl_dtype_t dt,
				      npccl_redop_t op)
{
	struct req *r = post(c, REQ_RECV_REDUCE, peer, NULL, buf, len);
	if (r) {
		r->dtype = (uint8_t)dt;
		r->redop = (uint8_t)op;
		r->rsrc = src;
	}
	return r;
}

struct req *p2p_post_recv_reduce(struct npccl_comm *c, int peer, void *buf, size_t len,
				 npccl_dtype_t dt, npccl_redop_t op)
{
	return p2p_post_recv_reduce_from(c, peer, buf, buf, len, dt, op);
}

/* Advance every queue; returns the failure status if a transport failed. */
npccl_status_t p2p_progress_all(struct npccl_comm *c)
{
	for (int i = 0; i < c->nranks; i++) {
		struct peer *p = &c->peers[i];
		while (p->sendq) {
			struct req *r = p->sendq;
			int rc = p->tp->progress_send(c, p, r);
			if (rc < 0)
				return c->failed ? c->failed : NPCCL_ERR_SYSTEM;
			if (rc == 0)
				break;
			r->complete = true;
			p->sendq = r->next;
			if (!p->sendq)
				p->sendq_tail = NULL;
		}
		while (p->recvq) {
			struct req *r = p->recvq;
			int rc = p->tp->progress_recv(c, p, r);
			if (rc < 0)
				return c->failed ? c->failed : NPCCL_ERR_SYSTEM;
			if (rc == 0)
				break;
			r->complete = true;
			p->recvq = r->next;
			if (!p->recvq)
				p->recvq_tail = NULL;
		}
	}
	return NPCCL_OK;
}

void p2p_abandon(struct npccl_comm *c)
{
	for (int i = 0; c->peers && i < c->nranks; i++) {
		struct peer *p = &c->peers[i];
		for (struct req *r = p->sendq; r && p->tp && p->tp->abandon_send; r = r->next)
			p->tp->abandon_send(c, p, r);
	}
}

struct wait_set {
	struct npccl_comm *c;
	struct req **r;
	int n;
	npccl_status_t st;
};

static bool reqs_done(void *arg)
{
	struct wait_set *w = arg;
	w->st = p2p_progress_all(w->c);
	if (w->st != NPCCL_OK)
		return true;
	for (int i = 0; i < w->n; i++)
		if (w->r[i] && !w->r[i]->complete)
			return false;
	return true;
}

static int waiting_peer(struct req **r, int n)
{
	for (int i = 0; i < n; i++)
		if (r[i] && !r[i]->complete)
			return r[i]->peer->rank;
	return -1;
}

npccl_status_t p2p_wait(struct npccl_comm *c, struct req **r, int n)
{
	for (int i = 0; i < n; i++)
		if (!r[i] && n > 0)
			return comm_fail(c, NPCCL_ERR_NOMEM, -1, "out of memory for requests");
	struct wait_set w = { c, r, n, NPCCL_OK };
	npccl_status_t st = comm_wait(c, reqs_done, &w, waiting_peer(r, n));
	if (st == NPCCL_OK)
		st = w.st;
	if (st == NPCCL_OK)
		for (int i = 0; i < n; i++)
			r[i]->in_use = false;
	return st;
}

static bool all_done(void *arg)
{
	struct wait_set *w = arg;
	w->st = p2p_progress_all(w->c);
	if (w->st != NPCCL_OK)
		return true;
	/* this operation's messages only: non-blocking sends and receives of
	 * the caller (gen 0) may still be queued ahead of them or not */
	uint64_t gen = w->c->req_gen;
	for (int i = 0; i < w->c->nranks; i++) {
		const struct peer *p = &w->c->peers[i];
		for (const struct req *r = p->sendq; r; r = r->next)
			if (r->gen == gen)
				return false;
		for (const struct req *r = p->recvq; r; r = r->next)
			if (r->gen == gen)
				return false;
	}
	return true;
}

npccl_status_t p2p_wait_all(struct npccl_comm *c)
{
	struct wait_set w = { c, NULL, 0, NPCCL_OK };
	int on = -1;
	for (int i = 0; i < c->nranks && on < 0; i++)
		if (c->peers[i].sendq || c->peers[i].recvq)
			on = i;
	npccl_status_t st = comm_wait(c, all_done, &w, on);
	if (st == NPCCL_OK)
		st = w.st;
	if (st == NPCCL_OK)
		for (struct req_block *b = (struct req_block *)c->reqs; b; b = b->next)
			for (int i = 0; i < REQ_BLOCK; i++)
				if (b->r[i].in_use && b->r[i].gen == c->req_gen)
					b->r[i].in_use = false;
	return st;
}

npccl_status_t p2p_sendrecv(struct npccl_comm *c, int dst, const void *sbuf, size_t slen,
			    int src, void *rbuf, size_t rlen)
{
	struct req *r[2];
	r[0] = p2p_post_recv(c, src, rbuf, rlen);
	r[1] = p2p_post_send(c, dst, sbuf, slen);
	return p2p_wait(c, r, 2);
}

/* ---- doorbells ---------------------------------------------------------- */

void doorbell_ring(struct npccl_comm *c, int rank)
{
	struct peer *p = &c->peers[rank];
	if (!p->local || rank == c->rank)
		return;
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&c->ctl[p->local_index]->sleeping, memory_order_relaxed)) {
		uint64_t one = 1;
		ssize_t n = write(p->doorbell_fd, &one, sizeof(one));
		(void)n;
	}
}

void doorbell_ring_all_local(struct npccl_comm *c)
{
	atomic_thread_fence(memory_order_seq_cst);
	for (int i = 0; i < c->nlocal; i++) {
		int r = c->local_ranks[i];
		if (r == c->rank)
			continue;
		if (atomic_load_explicit(&c->ctl[i]->sleeping, memory_order_relaxed)) {
			uint64_t one = 1;
			ssize_t n = write(c->peers[r].doorbell_fd, &one, sizeof(one));
			(void)n;
		}
	}
}

/* ---- control channel ----------------------------------------------------- */

/* ---- the wait loop -------------------------------------------------------- */

/* every transport, for their communicator-wide sleep hooks */
static const struct transport_ops *const transports[] = { &shm_transport, &tcp_transport,
							  &rdma_transport };
#define NTRANSPORTS ((int)(sizeof(transports) / sizeof(transports[0])))

/* How long a collective may still complete from what a dead peer sent. */
#define DEAD_GRACE_NS (200ull * 1000000ull)

/*
 * A peer that died without saying goodbye (killed, crashed) inside or
 * before the current collective fails the call DEAD_GRACE_NS after its death
 * was seen, although this rank may be waiting on another, live but late,
 * rank: the call can no longer complete everywhere, and the culprit must be
 * named within the detection time, not at the deadline. A local peer that
 * had completed this call (its done_seq) is left to the next call.
 */
static npccl_status_t check_dead_peers(struct npccl_comm *c, uint64_t t)
{
	if (!c->in_op || c->cur.coll == NPCCL_COLL_SEND || c->cur.coll == NPCCL_COLL_RECV)
		return NPCCL_OK;
	for (int i = 0; i < c->nranks; i++) {
		struct peer *p = &c->peers[i];
		if (i == c->rank || !p->gone || p->said_bye)
			continue;
		if (p->local && c->nlocal > 1 && p->local_index >= 0 &&
		    atomic_load_explicit(&c->ctl[p->local_index]->done_seq,
					 memory_order_acquire) >= c->cur.seq)
			continue;
		if (c->dead_seen_seq != c->cur.seq) {
			c->dead_seen_seq = c->cur.seq;
			c->dead_seen_ns = t;
		}
		if (t - c->dead_seen_ns < DEAD_GRACE_NS)
			return NPCCL_OK;
		return comm_peer_lost(c, i, "its connection closed");
	}
	return NPCCL_OK;
}

npccl_status_t comm_wait(struct npccl_comm *c, bool (*ready)(void *), void *arg, int waiting_on)
{
	const struct npccl_config *cfg = npccl_config();
	c->waiting_on = waiting_on;
	uint64_t spin_ns = c->oversubscribed ? 20000ull : (uint64_t)cfg->spin_us * 1000ull;
	uint64_t t0 = now_ns(), spin_until = t0 + spin_ns, next_ctl = t0 + 200000;
	unsigned iter = 0;
	for (;;) {
		/* messages of non-blocking sends/receives move during any wait */
		if (c->bg_p2p > 0 && p2p_progress_all(c) != NPCCL_OK)
			return c->failed ? c->failed : NPCCL_ERR_SYSTEM;
		if (ready(arg))
			return c->failed;
		if (c->failed)
			return c->failed;
		if (c->oversubscribed)
			sched_yield();
		else
			cpu_relax();
		if ((++iter & 31) != 0)
			continue;
		if (atomic_load_explicit(&c->aborting, memory_order_relaxed))
			return comm_fail(c, NPCCL_ERR_ABORTED, c->rank,
					 "the communicator was aborted by this process");
		uint64_t t = now_ns();
		if (t >= c->deadline_ns)
			return comm_diagnose_timeout(c);
		if (t >= next_ctl) {
			comm_poll_control(c, 0);
			if (check_dead_peers(c, t) != NPCCL_OK)
				return c->failed;
			next_ctl = t + 200000;
			continue;
		}
		if (t < spin_until)
			continue;

		/* sleep until a peer rings, a socket is ready, or the deadline */
		struct shm_ctl *me = c->nlocal > 1 ? c->ctl[c->local_index] : NULL;
		if (me)
			atomic_store_explicit(&me->sleeping, 1, memory_order_relaxed);
		atomic_store_explicit(&c->exec_polling, 1, memory_order_relaxed);
		atomic_thread_fence(memory_order_seq_cst);
		if (ready(arg)) {
			if (me)
				atomic_store_explicit(&me->sleeping, 0, memory_order_relaxed);
			atomic_store_explicit(&c->exec_polling, 0, memory_order_relaxed);
			return c->failed;
		}
		struct pollfd pf[3 * 64 + 3];
		int n = 0;
		if (c->doorbell_fd >= 0)
			pf[n++] = (struct pollfd){ .fd = c->doorbell_fd, .events = POLLIN };
		int wake_idx = -1;
		if (c->wake_fd >= 0) {
			wake_idx = n;
			pf[n++] = (struct pollfd){ .fd = c->wake_fd, .events = POLLIN };
		}
		bool ctl_pending = false, pending = false;
		int tp_first = n;
		bool slept[NTRANSPORTS] = { false };
		for (int k = 0; k < NTRANSPORTS && !pending; k++) {
			const struct transport_ops *tp = transports[k];
			int fd = tp->sleep_fd ? tp->sleep_fd(c, &pending) : -1;
			if (fd >= 0 && !pending) {
				pf[n++] = (struct pollfd){ .fd = fd, .events = POLLIN };
				slept[k] = true;
			}
		}
		int tp_end = n;
		if (pending) {
			if (me)
				atomic_store_explicit(&me->sleeping, 0, memory_order_relaxed);
			atomic_store_explicit(&c->exec_polling, 0, memory_order_relaxed);
			spin_until = now_ns() + spin_ns;
			continue;
		}
		for (int i = 0; i < c->nranks && n < 3 * 64; i++) {
			struct peer *p = &c->peers[i];
			if (i == c->rank)
				continue;
			if (p->ctl_fd >= 0 && !p->ctl_eof)
				pf[n++] = (struct pollfd){ .fd = p->ctl_fd, .events = POLLIN };
			if (p->pidfd >= 0 && !p->gone)
				pf[n++] = (struct pollfd){ .fd = p->pidfd, .events = POLLIN };
			short ev = 0;
			int fd = p->tp && p->tp->poll_fd ? p->tp->poll_fd(p, &ev) : -1;
			if (fd >= 0 && ev)
				pf[n++] = (struct pollfd){ .fd = fd, .events = ev };
		}
		uint64_t left_ms = (c->deadline_ns - t) / 1000000 + 1;
		int tmo = (int)MIN(left_ms, 100);
		int pr = poll(pf, (nfds_t)n, tmo);
		if (me)
			atomic_store_explicit(&me->sleeping, 0, memory_order_relaxed);
		atomic_store_explicit(&c->exec_polling, 0, memory_order_relaxed);
		if (pr > 0) {
			for (int k = 0; k < n; k++)
				if (pf[k].revents && pf[k].fd != c->doorbell_fd && k != wake_idx &&
				    (k < tp_first || k >= tp_end))
					ctl_pending = true;
			if (c->doorbell_fd >= 0 && pf[0].revents) {
				uint64_t v;
				ssize_t rn = read(c->doorbell_fd, &v, sizeof(v));
				(void)rn;
			}
			if (wake_idx >= 0 && pf[wake_idx].revents) {
				uint64_t v;
				ssize_t rn = read(c->wake_fd, &v, sizeof(v));
				(void)rn;
			}
		}
		for (int k = 0; k < NTRANSPORTS; k++)
			if (slept[k] && transports[k]->after_sleep)
				transports[k]->after_sleep(c);
		if (ctl_pending)
			comm_poll_control(c, 0);
		t = now_ns();
		if (check_dead_peers(c, t) != NPCCL_OK)
			return c->failed;
		spin_until = t + spin_ns;
		next_ctl = t + 200000;
	}
}
