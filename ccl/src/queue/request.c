/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * request.c - calls in flight: the per-communicator queue, the exec role,
 * the worker thread, requests (test, wait, callbacks, free) and groups.
 *
 * Every call, blocking or not, becomes a request queued in call order. The
 * queue runs on whichever thread holds the communicator's exec role:
 *  - a thread waiting without a timeout takes the role when nobody holds it
 *    and runs the queue up to its own request (so every blocking call of a
 *    lone thread runs in that thread, with no thread switch);
 *  - otherwise the worker thread, started by the first non-blocking call,
 *    runs whatever is queued and moves pending messages.
 * Collectives run to completion one after the other. A send or receive
 * posts its message to the per-peer queue when its turn comes and then
 * completes in the background (the `pend` list), while later calls run: a
 * rank can post a send and a receive to the same peer and wait for both.
 *
 * Contracts: q_lock guards the queue, exec_busy and the worker fields; the
 * rest of the communicator belongs to the exec role. A request completes
 * once: status and text first, then its callback (no lock held), then
 * `done` under q_lock with a broadcast of q_cond. After `done` only the
 * request's owner touches it (requests on a blocking caller's stack die
 * with the call). Heap requests are freed when both the caller's handle
 * and the communicator's reference are gone.
 */
#include "npccl_internal.h"
#include "transport/transport.h"
#include "algo/algo.h"
#include "dispatch/dispatch.h"
#include "queue/queue.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

npccl_status_t req_queue_init(struct npccl_comm *c)
{
	pthread_condattr_t ca;

	c->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c->wake_fd < 0)
		return NPCCL_ERR_SYSTEM;
	pthread_mutex_init(&c->q_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->q_cond, &ca);
	pthread_condattr_destroy(&ca);
	c->q_ready = true;
	return NPCCL_OK;
}

void req_queue_free(struct npccl_comm *c)
{
	if (c->wake_fd >= 0)
		close(c->wake_fd);
	c->wake_fd = -1;
	if (!c->q_ready)
		return;
	pthread_mutex_destroy(&c->q_lock);
	pthread_cond_destroy(&c->q_cond);
	c->q_ready = false;
}

bool req_queue_nonempty(struct npccl_comm *c)
{
	return atomic_load_explicit(&c->q_len, memory_order_relaxed) > 0;
}

static void wake_exec(struct npccl_comm *c)
{
	if (atomic_load(&c->exec_polling) && c->wake_fd >= 0) {
		uint64_t one = 1;
		ssize_t n = write(c->wake_fd, &one, sizeof(one));
		(void)n;
	}
}

static void req_release(struct npccl_request *r)
{
	if (atomic_fetch_sub(&r->refs, 1) == 1)
		free(r);
}

/* With the exec role (or at shutdown), q_lock not held. */
static void req_complete(struct npccl_comm *c, struct npccl_request *r, npccl_status_t st,
			 const char *text)
{
	bool heap = r->heap;
	npccl_request_fn cb;
	void *user;

	r->status = st;
	if (st != NPCCL_OK) {
		if (text != r->err)
			snprintf(r->err, sizeof(r->err), "%s", text && *text ? text : npccl_strerror(st));
	} else {
		r->err[0] = 0;
	}
	atomic_store(&r->final, 1);	/* the callback may read the text */
	if (!heap && st == NPCCL_OK) {
		/* a blocking call's request: never handed out, so no callback */
		pthread_mutex_lock(&c->q_lock);
		atomic_store(&r->done, 1);
		pthread_cond_broadcast(&c->q_cond);
		pthread_mutex_unlock(&c->q_lock);
		return;
	}
	pthread_mutex_lock(&c->q_lock);
	r->cb_ran = true;	/* status final: a later npccl_request_set_callback calls at once */
	cb = r->cb;
	user = r->cb_user;
	if (st != NPCCL_OK)
		snprintf(c->shown_err, sizeof(c->shown_err), "%s", r->err);
	pthread_mutex_unlock(&c->q_lock);
	if (cb)
		cb(r, st, user);
	pthread_mutex_lock(&c->q_lock);
	atomic_store(&r->done, 1);
	pthread_cond_broadcast(&c->q_cond);
	pthread_mutex_unlock(&c->q_lock);
	if (heap)
		req_release(r);
}

/* The text of a call that fails because the communicator already failed. */
static void failed_text(struct npccl_comm *c, struct npccl_request *r)
{
	snprintf(r->err, sizeof(r->err), "%s", c->errmsg[0] ? c->errmsg : npccl_strerror(c->failed));
}

/* Completes the pending messages that are done, or all of them once the
 * communicator failed. With the exec role. */
static void sweep_pending(struct npccl_comm *c)
{
	struct npccl_request *r = c->pend_head, *prev = NULL;

	while (r) {
		struct npccl_request *next = r->pnext;
		bool fin = c->failed || r->ireq->complete;
		if (!fin) {
			prev = r;
			r = next;
			continue;
		}
		if (prev)
			prev->pnext = next;
		else
			c->pend_head = next;
		if (c->pend_tail == r)
			c->pend_tail = prev;
		c->bg_p2p--;
		if (r->ireq->complete && !c->failed) {
			r->ireq->in_use = false;
			req_complete(c, r, NPCCL_OK, NULL);
		} else {
			/* the message stays in the dead queue until the communicator
			 * goes, its buffer no longer reachable by the peer */
			p2p_abandon(c);
			failed_text(c, r);
			req_complete(c, r, c->failed, r->err);
		}
		r = next;
	}
}

static bool pend_ready(void *arg)
{
	struct npccl_comm *c = arg;

	if (p2p_progress_all(c) != NPCCL_OK)
		return true;
	for (struct npccl_request *r = c->pend_head; r; r = r->pnext)
		if (r->ireq->complete)
			return true;
	return req_queue_nonempty(c) || atomic_load_explicit(&c->aborting, memory_order_relaxed);
}

/* Moves the pending messages until one completes or a call is queued; the
 * oldest pending message's deadline and descriptor govern diagnosis. */
static void progress_pending(struct npccl_comm *c)
{
	struct npccl_request *r = c->pend_head;

	if (!c->failed && !pend_ready(c)) {
		c->cur = r->desc;
		c->deadline_ns = r->deadline_ns;
		c->in_op = true;
		comm_wait(c, pend_ready, c, r->op.peer);
		c->in_op = false;
	}
	sweep_pending(c);
}

static void run_one(struct npccl_comm *c, struct npccl_request *r)
{
	op_run(c, r);
	if ((r->op.kind == OPK_SEND || r->op.kind == OPK_RECV) && r->status == NPCCL_OK) {
		r->pnext = NULL;
		if (c->pend_tail)
			c->pend_tail->pnext = r;
		else
			c->pend_head = r;
		c->pend_tail = r;
		c->bg_p2p++;
		sweep_pending(c);
		return;
	}
	req_complete(c, r, r->status, r->err);
	if (c->failed)
		sweep_pending(c);
}

/*
 * Runs the queue (and moves pending messages) until `target` is done, or,
 * without a target, until nothing is queued or pending. Called and returns
 * with q_lock held and the exec role free; holds the role meanwhile.
 */
static void exec_loop(struct npccl_comm *c, struct npccl_request *target)
{
	c->exec_busy = true;
	for (;;) {
		if (target && atomic_load(&target->done))
			break;
		struct npccl_request *r = c->q_head;
		if (r) {
			c->q_head = r->qnext;
			if (!c->q_head)
				c->q_tail = NULL;
			atomic_fetch_sub(&c->q_len, 1);
			pthread_mutex_unlock(&c->q_lock);
			run_one(c, r);
			pthread_mutex_lock(&c->q_lock);
			continue;
		}
		if (!c->pend_head)
			break;
		pthread_mutex_unlock(&c->q_lock);
		progress_pending(c);
		pthread_mutex_lock(&c->q_lock);
	}
	c->exec_busy = false;
	pthread_cond_broadcast(&c->q_cond);
}

static void *worker_main(void *arg)
{
	struct npccl_comm *c = arg;

	pthread_mutex_lock(&c->q_lock);
	for (;;) {
		if (!c->exec_busy && (c->q_head || c->pend_head)) {
			exec_loop(c, NULL);
			continue;
		}
		if (c->worker_stop)
			break;
		pthread_cond_wait(&c->q_cond, &c->q_lock);
	}
	c->worker_exited = true;
	pthread_cond_broadcast(&c->q_cond);
	pthread_mutex_unlock(&c->q_lock);
	return NULL;
}

/* q_lock held */
static int worker_start(struct npccl_comm *c)
{
	if (c->worker_started)
		return 0;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 << 10);
	int rc = pthread_create(&c->worker, &attr, worker_main, c);
	pthread_attr_destroy(&attr);
	if (rc)
		return rc;
	c->worker_started = true;
	return 0;
}

/* q_lock held on entry, released on return. timeout_ms < 0: no limit
 * (caller runs the queue when nobody does), 0: test, > 0: at most that. */
static npccl_status_t wait_locked(struct npccl_comm *c, struct npccl_request *r, int timeout_ms)
{
	struct timespec until;

	if (timeout_ms > 0) {
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += timeout_ms / 1000;
		until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
	}
	while (!atomic_load(&r->done)) {
		if (timeout_ms < 0 && !c->exec_busy) {
			exec_loop(c, r);
			continue;
		}
		if (timeout_ms == 0)
			break;
		if (timeout_ms > 0) {
			/* somebody must run the call while we sleep */
			if (!c->exec_busy && worker_start(c) == 0)
				pthread_cond_broadcast(&c->q_cond);
			if (pthread_cond_timedwait(&c->q_cond, &c->q_lock, &until) == ETIMEDOUT &&
			    !atomic_load(&r->done))
				break;
		} else {
			pthread_cond_wait(&c->q_cond, &c->q_lock);
		}
	}
	npccl_status_t st = atomic_load(&r->done) ? r->status : NPCCL_IN_PROGRESS;
	pthread_mutex_unlock(&c->q_lock);
	return st;
}

static void req_init(struct npccl_request *r, struct npccl_comm *c, const struct op *op,
		     bool heap)
{
	r->qnext = r->pnext = NULL;
	r->comm = c;
	r->op = *op;
	atomic_init(&r->refs, 2);
	atomic_init(&r->done, 0);
	atomic_init(&r->final, 0);
	r->heap = heap;
	r->cb_ran = false;
	r->status = NPCCL_OK;
	r->cb = NULL;
	r->cb_user = NULL;
	r->ireq = NULL;
	r->err[0] = 0;
}

/* q_lock held: appends r, capturing the communicator's settings */
static void enqueue(struct npccl_comm *c, struct npccl_request *r)
{
	r->op.timeout_ms = c->timeout_ms;
	r->op.forced = r->op.kind == OPK_COLL ? c->forced[r->op.coll] : NPCCL_ALGO_AUTO;
	r->op.deterministic = c->deterministic;
	if (c->q_tail)
		c->q_tail->qnext = r;
	else
		c->q_head = r;
	c->q_tail = r;
	atomic_fetch_add(&c->q_len, 1);
}

enum { SUBMIT_BLOCKING, SUBMIT_ASYNC, SUBMIT_DEFER };

static npccl_status_t submit(struct npccl_comm *c, const struct op *op, int how,
			     npccl_request_t *out)
{
	struct npccl_request stack_r, *r = &stack_r;

	if (how != SUBMIT_BLOCKING) {
		r = malloc(sizeof(*r));
		if (!r) {
			tls_error_set(c, "out of memory for a request");
			return NPCCL_ERR_NOMEM;
		}
	}
	req_init(r, c, op, how != SUBMIT_BLOCKING);
	atomic_fetch_add(&c->in_call, 1);
	pthread_mutex_lock(&c->q_lock);
	if (how == SUBMIT_BLOCKING && op->kind != OPK_SEND && op->kind != OPK_RECV &&
	    !c->exec_busy && !c->q_head && !c->pend_head) {
		/* nothing queued or in flight: run it here without queueing it */
		c->exec_busy = true;
		r->op.timeout_ms = c->timeout_ms;
		r->op.forced = r->op.kind == OPK_COLL ? c->forced[r->op.coll] : NPCCL_ALGO_AUTO;
		r->op.deterministic = c->deterministic;
		pthread_mutex_unlock(&c->q_lock);
		op_run(c, r);
		pthread_mutex_lock(&c->q_lock);
		c->exec_busy = false;
		if (r->status != NPCCL_OK)
			snprintf(c->shown_err, sizeof(c->shown_err), "%s", r->err);
		pthread_cond_broadcast(&c->q_cond);
		pthread_mutex_unlock(&c->q_lock);
		atomic_fetch_sub(&c->in_call, 1);
		if (r->status != NPCCL_OK)
			tls_error_set(c, "%s", r->err);
		return r->status;
	}
	if (how == SUBMIT_ASYNC) {
		int rc = worker_start(c);
		if (rc) {
			pthread_mutex_unlock(&c->q_lock);
			atomic_fetch_sub(&c->in_call, 1);
			free(r);
			tls_error_set(c, "cannot start the communicator's progress thread: %s",
				      strerror(rc));
			return NPCCL_ERR_SYSTEM;
		}
	}
	enqueue(c, r);
	wake_exec(c);
	if (how != SUBMIT_BLOCKING) {
		if (how == SUBMIT_ASYNC && !c->exec_busy)
			pthread_cond_broadcast(&c->q_cond);
		pthread_mutex_unlock(&c->q_lock);
		atomic_fetch_sub(&c->in_call, 1);
		*out = r;
		return NPCCL_OK;
	}
	npccl_status_t st = wait_locked(c, r, -1);
	atomic_fetch_sub(&c->in_call, 1);
	if (st != NPCCL_OK)
		tls_error_set(c, "%s", r->err);
	return st;
}

npccl_status_t req_submit(struct npccl_comm *c, const struct op *op, npccl_request_t *out)
{
	return submit(c, op, out ? SUBMIT_ASYNC : SUBMIT_BLOCKING, out);
}

void req_drain(struct npccl_comm *c)
{
	pthread_mutex_lock(&c->q_lock);
	for (;;) {
		if (!c->q_head && !c->pend_head && !c->exec_busy)
			break;
		if (!c->exec_busy)
			exec_loop(c, NULL);
		else
			pthread_cond_wait(&c->q_cond, &c->q_lock);
	}
	pthread_mutex_unlock(&c->q_lock);
}

bool req_shutdown(struct npccl_comm *c, npccl_status_t st, const char *why)
{
	if (!c->q_ready)
		return true;
	pthread_mutex_lock(&c->q_lock);
	c->worker_stop = true;
	pthread_cond_broadcast(&c->q_cond);
	if (c->worker_started) {
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += 2;
		while (!c->worker_exited) {
			wake_exec(c);
			if (pthread_cond_timedwait(&c->q_cond, &c->q_lock, &until) == ETIMEDOUT &&
			    !c->worker_exited)
				break;
		}
		if (!c->worker_exited) {
			pthread_mutex_unlock(&c->q_lock);
			return false;
		}
		pthread_join(c->worker, NULL);
		c->worker_started = false;
	}
	struct npccl_request *q = c->q_head;
	c->q_head = c->q_tail = NULL;
	atomic_store(&c->q_len, 0);
	pthread_mutex_unlock(&c->q_lock);
	while (q) {
		struct npccl_request *next = q->qnext;
		req_complete(c, q, st, why);
		q = next;
	}
	while (c->pend_head) {
		struct npccl_request *r = c->pend_head;
		c->pend_head = r->pnext;
		req_complete(c, r, st, why);
	}
	c->pend_tail = NULL;
	return true;
}

/* ---- the request API ------------------------------------------------------ */

npccl_status_t npccl_request_test(npccl_request_t r)
{
	if (!r)
		return NPCCL_ERR_INVALID_ARG;
	if (!atomic_load(&r->done))
		return NPCCL_IN_PROGRESS;
	if (r->status != NPCCL_OK)
		tls_error_set(r->comm, "%s", r->err);
	return r->status;
}

npccl_status_t npccl_request_wait(npccl_request_t r, int timeout_ms)
{
	if (!r)
		return NPCCL_ERR_INVALID_ARG;
	if (atomic_load(&r->done) || timeout_ms == 0)
		return npccl_request_test(r);
	struct npccl_comm *c = r->comm;
	atomic_fetch_add(&c->in_call, 1);
	pthread_mutex_lock(&c->q_lock);
	npccl_status_t st = wait_locked(c, r, timeout_ms < 0 ? -1 : timeout_ms);
	atomic_fetch_sub(&c->in_call, 1);
	if (st != NPCCL_OK && st != NPCCL_IN_PROGRESS)
		tls_error_set(c, "%s", r->err);
	return st;
}

const char *npccl_request_error(npccl_request_t r)
{
	if (!r)
		return "no request";
	return atomic_load(&r->final) ? r->err : "";
}

npccl_status_t npccl_request_set_callback(npccl_request_t r, npccl_request_fn fn, void *user)
{
	if (!r)
		return NPCCL_ERR_INVALID_ARG;
	if (!atomic_load(&r->done)) {
		struct npccl_comm *c = r->comm;
		pthread_mutex_lock(&c->q_lock);
		if (!r->cb_ran) {
			r->cb = fn;
			r->cb_user = user;
			pthread_mutex_unlock(&c->q_lock);
			return NPCCL_OK;
		}
		pthread_mutex_unlock(&c->q_lock);
	}
	if (fn)
		fn(r, r->status, user);
	return NPCCL_OK;
}

npccl_status_t npccl_request_free(npccl_request_t r)
{
	if (!r)
		return NPCCL_OK;
	if (!r->heap)
		return NPCCL_ERR_INVALID_ARG;
	req_release(r);
	return NPCCL_OK;
}

/* ---- groups ----------------------------------------------------------------- */

static __thread int grp_depth;
static __thread struct npccl_comm *grp_comm;
static __thread struct op *grp_ops;
static __thread int grp_n, grp_cap;

int group_depth(void)
{
	return grp_depth;
}

int group_suspend(void)
{
	int d = grp_depth;
	grp_depth = 0;
	return d;
}

void group_resume(int depth)
{
	grp_depth = depth;
}

npccl_status_t npccl_group_start(void)
{
	grp_depth++;
	return NPCCL_OK;
}

npccl_status_t group_record(struct npccl_comm *c, const struct op *op)
{
	if (grp_comm && grp_comm != c) {
		tls_error_set(c, "a group (npccl_group_start) holds the calls of one communicator; "
				 "this call is on another: end the group first");
		return NPCCL_ERR_INVALID_ARG;
	}
	if (grp_n == grp_cap) {
		int cap = grp_cap ? 2 * grp_cap : 16;
		struct op *n = realloc(grp_ops, sizeof(*n) * (size_t)cap);
		if (!n) {
			tls_error_set(c, "out of memory recording a grouped call");
			return NPCCL_ERR_NOMEM;
		}
		grp_ops = n;
		grp_cap = cap;
	}
	grp_ops[grp_n++] = *op;
	grp_comm = c;
	return NPCCL_OK;
}

/* Posts `n` point-to-point ops together and waits for all; the first
 * failure's status and text are the result. */
npccl_status_t req_run_batch(struct npccl_comm *c, const struct op *ops, int n)
{
	npccl_request_t small[8], *rs = n <= 8 ? small : malloc(sizeof(*rs) * (size_t)n);
	npccl_status_t st = NPCCL_OK;
	int made = 0;

	if (!rs) {
		tls_error_set(c, "out of memory for %d grouped calls", n);
		return NPCCL_ERR_NOMEM;
	}
	for (; made < n; made++)
		if ((st = submit(c, &ops[made], SUBMIT_DEFER, &rs[made])) != NPCCL_OK)
			break;
	char err[800] = "";
	for (int i = 0; i < made; i++) {
		npccl_status_t s = npccl_request_wait(rs[i], -1);
		if (s != NPCCL_OK && st == NPCCL_OK) {
			st = s;
			snprintf(err, sizeof(err), "%s", rs[i]->err);
		}
		npccl_request_free(rs[i]);
	}
	if (rs != small)
		free(rs);
	if (err[0])
		tls_error_set(c, "%s", err);
	return st;
}

struct span {
	const char *lo, *hi;
	int idx;
	bool recv;
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Whether a grouped receive's buffer overlaps another grouped call's: all
 * travel at once, so the data would depend on timing. Sends may share
 * buffers. Sorted by start, a span overlaps an earlier one when it starts
 * below the earlier ones' highest end (of receives only, for a send). */
static npccl_status_t group_check_overlap(struct npccl_comm *c, const struct op *ops, int n)
{
	struct span *sp = malloc(sizeof(*sp) * (size_t)n);
	int m = 0;
	npccl_status_t st = NPCCL_OK;

	if (!sp) {
		tls_error_set(c, "out of memory checking %d grouped calls", n);
		return NPCCL_ERR_NOMEM;
	}
	for (int i = 0; i < n; i++) {
		size_t bytes = ops[i].count * npccl_dtype_size(ops[i].dtype);
		bool recv = ops[i].kind == OPK_RECV;
		const char *b = recv ? (const char *)ops[i].rbuf : (const char *)ops[i].sbuf;
		if (bytes)
			sp[m++] = (struct span){ b, b + bytes, i, recv };
	}
	qsort(sp, (size_t)m, sizeof(*sp), span_cmp);
	const struct span *any = NULL, *rcv = NULL;	/* highest end so far */
	for (int i = 0; i < m && !st; i++) {
		const struct span *hit = sp[i].recv && any && sp[i].lo < any->hi ? any
					 : rcv && sp[i].lo < rcv->hi ? rcv : NULL;
		if (hit) {
			const struct span *a = hit->idx < sp[i].idx ? hit : &sp[i];
			const struct span *b = a == hit ? &sp[i] : hit;
			tls_error_set(c, "npccl_group_end: the buffers of grouped calls #%d (%s peer %d) "
				      "and #%d (%s peer %d) overlap, and a receive is among them: they "
				      "travel at once, so nothing was posted; give each receive a "
				      "buffer of its own", a->idx + 1,
				      a->recv ? "receive from" : "send to", ops[a->idx].peer,
				      b->idx + 1, b->recv ? "receive from" : "send to",
				      ops[b->idx].peer);
			st = NPCCL_ERR_INVALID_ARG;
		}
		if (!any || sp[i].hi > any->hi)
			any = &sp[i];
		if (sp[i].recv && (!rcv || sp[i].hi > rcv->hi))
			rcv = &sp[i];
	}
	free(sp);
	return st;
}

npccl_status_t npccl_group_end(void)
{
	if (grp_depth <= 0)
		return NPCCL_ERR_INVALID_ARG;
	if (--grp_depth > 0)
		return NPCCL_OK;
	struct npccl_comm *c = grp_comm;
	int n = grp_n;
	grp_comm = NULL;
	grp_n = 0;
	if (!c || n == 0)
		return NPCCL_OK;
	struct op *ops = grp_ops;
	grp_ops = NULL;
	grp_cap = 0;
	tls_error_clear(c);
	npccl_status_t st = group_check_overlap(c, ops, n);
	if (st == NPCCL_OK)
		st = req_run_batch(c, ops, n);
	free(ops);
	return st;
}
