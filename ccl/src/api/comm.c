/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * comm.c - communicator lifetime: init from a unique id, split, destroy,
 * abort, getters and settings (the scratch buffers: algo/scratch.c).
 *
 * Contracts: init either returns a fully connected communicator (cost model
 * measured and agreed) or NULL with a message; destroy and abort accept NULL
 * and never block for long (destroy lets the calls already issued finish
 * first, each within its deadline); abort may run while other threads are
 * inside calls on the same communicator (they return NPCCL_ERR_ABORTED
 * first) and completes the requests still pending with NPCCL_ERR_ABORTED.
 */
#include "npccl_internal.h"
#include "transport/transport.h"
#include "algo/algo.h"
#include "dispatch/dispatch.h"
#include "queue/queue.h"
#include "api/api.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void parse_fault(struct npccl_comm *c)
{
	/* NPCCL_FAULT_INJECT=corrupt:RANK:SEQ | truncate:RANK:SEQ |
	 * slowalpha:RANK:COUNT | setupkill:RANK:0 | setupfail:RANK:0 | qperr:RANK:SEQ |
	 * loadkill:RANK:CHUNK | loadcorrupt:RANK:CHUNK (tests only) */
	const char *f = npccl_config()->fault;
	char kind[16];
	int rank;
	unsigned long long seq;
	if (!f[0] || sscanf(f, "%15[a-z]:%d:%llu", kind, &rank, &seq) != 3)
		return;
	c->fault_kind = !strcmp(kind, "corrupt") ? FAULT_CORRUPT_FRAME
			: !strcmp(kind, "truncate") ? FAULT_TRUNCATE_FRAME
			: !strcmp(kind, "slowalpha") ? FAULT_SLOW_ALPHA
			: !strcmp(kind, "setupkill") ? FAULT_SETUP_KILL
			: !strcmp(kind, "setupfail") ? FAULT_SETUP_FAIL
			: !strcmp(kind, "qperr") ? FAULT_QP_ERROR
			: !strcmp(kind, "loadkill") ? FAULT_LOAD_KILL
			: !strcmp(kind, "loadcorrupt") ? FAULT_LOAD_CORRUPT : FAULT_NONE;
	c->fault_rank = rank;
	c->fault_seq = seq;
}

static void comm_free(struct npccl_comm *c)
{
	if (!c)
		return;
	shm_mem_free_all(c);
	for (int i = 0; c->peers && i < c->nranks; i++) {
		struct peer *p = &c->peers[i];
		if (p->ctl_fd >= 0)
			close(p->ctl_fd);
		if (p->data_fd >= 0)
			close(p->data_fd);
		if (p->pidfd >= 0)
			close(p->pidfd);
		if (p->doorbell_fd >= 0)
			close(p->doorbell_fd);
		if (p->space_fd >= 0)
			close(p->space_fd);
		free(p->bounce);
	}
	rdma_teardown(c);
	shm_teardown(c);
	if (c->listen_fd >= 0)
		close(c->listen_fd);
	if (c->unix_listen_fd >= 0)
		close(c->unix_listen_fd);
	p2p_free_all_reqs(c);
	req_queue_free(c);
	if (c->scratch)
		munmap(c->scratch, c->scratch_size);
	if (c->scratch2)
		munmap(c->scratch2, c->scratch2_size);
	free(c->peers);
	free(c->host_of);
	free(c->local_ranks);
	free(c->all_ranks);
	free(c->cross_ranks);
	free(c);
}

static npccl_status_t build_groups(struct npccl_comm *c)
{
	c->all_ranks = malloc(sizeof(int) * (size_t)c->nranks);
	c->cross_ranks = malloc(sizeof(int) * (size_t)c->nhosts);
	if (!c->all_ranks || !c->cross_ranks)
		return NPCCL_ERR_NOMEM;
	for (int i = 0; i < c->nranks; i++)
		c->all_ranks[i] = i;
	c->g_all = (struct group){ c->nranks, c->rank, c->all_ranks };
	c->g_local = (struct group){ c->nlocal, c->local_index, c->local_ranks };
	/* cross group: the rank with my local index on every host */
	int n = 0, me = 0;
	for (int h = 0; h < c->nhosts; h++) {
		int k = 0;
		for (int i = 0; i < c->nranks; i++)
			if (c->host_of[i] == h) {
				if (k == c->local_index) {
					if (i == c->rank)
						me = n;
					c->cross_ranks[n++] = i;
					break;
				}
				k++;
			}
	}
	c->g_cross = (struct group){ n, me, c->cross_ranks };
	return NPCCL_OK;
}

/*
 * Whether every local rank can read its peers' memory (single-copy
 * collectives, algo_cma.c), and what a single copy costs: each publishes a
 * probe area, reads its peers' and times reads of one once all have (a
 * barrier), and the ranks agree (MIN of the verdicts, MAX of the times,
 * which every rank's cost model then uses alike).
 */
static npccl_status_t cma_agree(struct npccl_comm *c)
{
	if (!cma_probe_begin(c))
		return NPCCL_OK;
	npccl_status_t st = coll_internal(c, NPCCL_COLL_BARRIER, NULL, NULL, 0, NPCCL_UINT8,
					  NPCCL_SUM);
	int32_t ok = st ? 0 : cma_probe_peers(c), all = 0;
	double cost[2] = { c->cma_call_us, c->cma_copy_ratio }, agreed[2] = { 0, 0 };
	if (!st)
		st = coll_internal(c, NPCCL_COLL_ALLREDUCE, &ok, &all, 1, NPCCL_INT32, NPCCL_MIN);
	if (!st)
		st = coll_internal(c, NPCCL_COLL_ALLREDUCE, cost, agreed, 2, NPCCL_FLOAT64,
				   NPCCL_MAX);
	c->cma_ok = st == NPCCL_OK && all == 1;
	c->cma_call_us = c->cma_ok ? agreed[0] : 0;
	c->cma_copy_ratio = c->cma_ok ? agreed[1] : 0;
	cma_probe_end(c);	/* every peer is done with my area: it passed the agreement */
	if (c->cma_ok && c->rank == 0)
		npccl_log(NPCCL_LOG_INFO, "single copies between local ranks (%s): %.1f us, then "
			  "%.2fx a memcpy per byte", c->space ? "npushm spaces" : "cross-memory attach",
			  c->cma_call_us, c->cma_copy_ratio);
	/* choices made by the setup's own calls knew no single copy */
	for (int i = 0; i < NPCCL_NUM_COLLS; i++)
		c->choice[i] = NPCCL_ALGO_AUTO;
	return st;
}

npccl_status_t comm_init_common(npccl_comm_t *out, int nranks, const struct boot_src *src,
				int rank, char *err, size_t errlen)
{
	char dummy[8];
	if (!err || !errlen) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	err[0] = 0;
	if (!out || !src || (!src->id && !src->kv) || nranks <= 0 || rank < 0 || rank >= nranks) {
		snprintf(err, errlen, "invalid arguments: need comm, %s, nranks > 0 and 0 <= rank < "
				      "nranks (got nranks %d, rank %d)",
			 src && src->kv ? "store" : "id", nranks, rank);
		if (out)
			*out = NULL;
		return NPCCL_ERR_INVALID_ARG;
	}
	*out = NULL;
	npccl_config_reload();
	struct npccl_comm *c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory for a communicator");
		return NPCCL_ERR_NOMEM;
	}
	c->rank = rank;
	c->nranks = nranks;
	c->listen_fd = c->unix_listen_fd = c->doorbell_fd = c->wake_fd = -1;
	c->timeout_ms = c->op_timeout_ms = npccl_config()->timeout_ms;
	c->deterministic = npccl_config()->deterministic;
	tls_error_forget(c);
	if (req_queue_init(c) != NPCCL_OK) {
		snprintf(err, errlen, "eventfd: out of descriptors or memory");
		free(c);
		return NPCCL_ERR_SYSTEM;
	}
	c->peers = calloc((size_t)nranks, sizeof(*c->peers));
	if (!c->peers) {
		snprintf(err, errlen, "out of memory for the peers of a communicator of %d ranks",
			 nranks);
		req_queue_free(c);
		free(c);
		return NPCCL_ERR_NOMEM;
	}
	for (int i = 0; i < nranks; i++) {
		struct peer *p = &c->peers[i];
		p->rank = i;
		p->ctl_fd = p->data_fd = p->pidfd = p->doorbell_fd = p->space_fd = -1;
	}
	parse_fault(c);
	/* the cost model's own calls are not part of a group the caller opened */
	int grp = group_suspend();
	npccl_status_t st = bootstrap_run(c, src, err, errlen);
	if (st == NPCCL_OK)
		st = build_groups(c);
	if (st == NPCCL_OK) {
		st = costmodel_measure(c);
		if (st == NPCCL_OK)
			st = cma_agree(c);
		if (st != NPCCL_OK)
			snprintf(err, errlen, "rank %d: measuring the cost model failed: %s", rank,
				 c->errmsg[0] ? c->errmsg : npccl_strerror(st));
	}
	group_resume(grp);
	if (st != NPCCL_OK) {
		npccl_log(NPCCL_LOG_ERROR, "%s", err);
		comm_free(c);
		return st;
	}
	npccl_log(NPCCL_LOG_INFO, "rank %d/%d up: %d host(s), %d local rank(s), shm backend %s",
		  rank, nranks, c->nhosts, c->nlocal, shm_region_backend());
	*out = c;
	return NPCCL_OK;
}

npccl_status_t npccl_comm_init_rank_err(npccl_comm_t *comm, int nranks, const npccl_unique_id_t *id,
					int rank, char *errbuf, size_t errlen)
{
	return comm_init_common(comm, nranks, &(struct boot_src){ .id = id }, rank, errbuf, errlen);
}

npccl_status_t npccl_comm_init_kv(npccl_comm_t *comm, int nranks, int rank,
				  const npccl_kv_store_t *store, const char *prefix, int timeout_ms,
				  char *errbuf, size_t errlen)
{
	char dummy[8];
	if (!errbuf || !errlen) {
		errbuf = dummy;
		errlen = sizeof(dummy);
	}
	if (!store || !store->set || !store->get) {
		snprintf(errbuf, errlen, "npccl_comm_init_kv: the store and its set and get "
					 "callbacks must not be NULL");
		if (comm)
			*comm = NULL;
		return NPCCL_ERR_INVALID_ARG;
	}
	struct boot_src src = { .kv = store, .prefix = prefix ? prefix : "",
				.timeout_ms = timeout_ms };
	return comm_init_common(comm, nranks, &src, rank, errbuf, errlen);
}

npccl_status_t npccl_comm_init_rank(npccl_comm_t *comm, int nranks, const npccl_unique_id_t *id,
				    int rank)
{
	char err[512];
	return comm_init_common(comm, nranks, &(struct boot_src){ .id = id }, rank, err,
				sizeof(err));
}

npccl_status_t npccl_comm_destroy(npccl_comm_t c)
{
	if (!c)
		return NPCCL_OK;
	/* the calls issued before run to their end (or their deadline) */
	req_drain(c);
	if (!req_shutdown(c, NPCCL_ERR_ABORTED, "npccl_comm_destroy ran before this call")) {
		npccl_log(NPCCL_LOG_WARN, "npccl_comm_destroy: the progress thread did not stop "
					  "within 2 s; the communicator's memory is leaked instead of freed");
		return NPCCL_ERR_ABORTED;
	}
	tls_error_forget(c);
	/* what this rank wrote over RDMA is in the peers' memory before the
	 * goodbye, as a TCP close delivers what the socket holds */
	rdma_flush(c, MIN(c->timeout_ms, 10000));
	for (int i = 0; i < c->nranks; i++)
		if (i != c->rank)
			/* a communicator that failed passes its verdict on, so peers
			 * still inside the call report the cause, not our leaving */
			comm_send_ctl(c, &c->peers[i], FRAME_BYE, -1, c->failed,
				      c->failed ? c->errmsg : NULL);
	comm_free(c);
	return NPCCL_OK;
}

npccl_status_t npccl_comm_abort(npccl_comm_t c)
{
	if (!c)
		return NPCCL_OK;
	atomic_store(&c->aborting, 1);
	if (!c->failed) {
		/* tell the peers, without touching the state another thread may use */
		struct npccl_comm tmp;
		memcpy(&tmp, c, sizeof(tmp));
		snprintf(tmp.errmsg, sizeof(tmp.errmsg),
			 "rank %d (pid %d) aborted the communicator (npccl_comm_abort) during or "
			 "after call #%llu",
			 c->rank, (int)getpid(), (unsigned long long)c->next_seq);
		tmp.failed = NPCCL_ERR_ABORTED;
		comm_broadcast_abort(&tmp, c->rank);
	}
	uint64_t one = 1;
	if (c->doorbell_fd >= 0) {
		ssize_t n = write(c->doorbell_fd, &one, sizeof(one));
		(void)n;
	}
	if (c->wake_fd >= 0) {
		ssize_t n = write(c->wake_fd, &one, sizeof(one));
		(void)n;
	}
	pthread_mutex_lock(&c->q_lock);
	pthread_cond_broadcast(&c->q_cond);
	pthread_mutex_unlock(&c->q_lock);
	/* wait (bounded) for calls running in other threads to leave, then for
	 * the progress thread: both fail fast now that `aborting` is set */
	uint64_t end = now_ns() + 2000000000ull;
	while (atomic_load(&c->in_call) > 0 && now_ns() < end)
		usleep(1000);
	if (atomic_load(&c->in_call) > 0 ||
	    !req_shutdown(c, NPCCL_ERR_ABORTED, "npccl_comm_abort ran before this call")) {
		npccl_log(NPCCL_LOG_WARN, "npccl_comm_abort: a call did not leave within 2 s; the "
					  "communicator's memory is leaked instead of freed");
		return NPCCL_ERR_ABORTED;
	}
	tls_error_forget(c);
	comm_free(c);
	return NPCCL_OK;
}

npccl_status_t npccl_comm_rank(npccl_comm_t c, int *rank)
{
	if (!c || !rank)
		return NPCCL_ERR_INVALID_ARG;
	*rank = c->rank;
	return NPCCL_OK;
}

npccl_status_t npccl_comm_size(npccl_comm_t c, int *size)
{
	if (!c || !size)
		return NPCCL_ERR_INVALID_ARG;
	*size = c->nranks;
	return NPCCL_OK;
}

npccl_status_t npccl_comm_hosts(npccl_comm_t c, int *nhosts, int *host)
{
	if (!c || !nhosts || !host)
		return NPCCL_ERR_INVALID_ARG;
	*nhosts = c->nhosts;
	*host = c->host_index;
	return NPCCL_OK;
}

npccl_status_t npccl_comm_set_timeout(npccl_comm_t c, int ms)
{
	if (!c)
		return NPCCL_ERR_INVALID_ARG;
	tls_error_clear(c);
	if (ms <= 0) {
		tls_error_set(c, "npccl_comm_set_timeout: a timeout of %d ms; give one > 0", ms);
		return NPCCL_ERR_INVALID_ARG;
	}
	pthread_mutex_lock(&c->q_lock);
	c->timeout_ms = ms;
	pthread_mutex_unlock(&c->q_lock);
	return NPCCL_OK;
}

npccl_status_t npccl_comm_set_algo(npccl_comm_t c, npccl_coll_t coll, npccl_algo_t algo)
{
	if (!c)
		return NPCCL_ERR_INVALID_ARG;
	tls_error_clear(c);
	if ((unsigned)coll >= NPCCL_NUM_COLLS || (unsigned)algo >= NPCCL_NUM_ALGOS) {
		tls_error_set(c, "npccl_comm_set_algo: collective %d or algorithm %d is not an "
			      "npccl_coll_t or npccl_algo_t", (int)coll, (int)algo);
		return NPCCL_ERR_INVALID_ARG;
	}
	if (algo != NPCCL_ALGO_AUTO && !algo_valid(c, coll, algo)) {
		tls_error_set(c, "%s has no algorithm %s on this communicator (%d host(s), %d local "
			      "rank(s))", npccl_coll_name(coll), npccl_algo_name(algo), c->nhosts,
			      c->nlocal);
		return NPCCL_ERR_UNSUPPORTED;
	}
	pthread_mutex_lock(&c->q_lock);
	c->forced[coll] = algo;
	pthread_mutex_unlock(&c->q_lock);
	return NPCCL_OK;
}

npccl_status_t npccl_comm_set_deterministic(npccl_comm_t c, int on)
{
	if (!c)
		return NPCCL_ERR_INVALID_ARG;
	tls_error_clear(c);
	pthread_mutex_lock(&c->q_lock);
	c->deterministic = on != 0;
	pthread_mutex_unlock(&c->q_lock);
	return NPCCL_OK;
}

int npccl_algo_supported(npccl_comm_t c, npccl_coll_t coll, npccl_algo_t algo)
{
	if (!c || (unsigned)coll >= NPCCL_NUM_COLLS || (unsigned)algo >= NPCCL_NUM_ALGOS)
		return 0;
	return algo == NPCCL_ALGO_AUTO || algo_valid(c, coll, algo);
}

npccl_status_t npccl_comm_cost_model(npccl_comm_t c, npccl_cost_model_t *out)
{
	if (!c || !out)
		return NPCCL_ERR_INVALID_ARG;
	*out = c->model;
	return NPCCL_OK;
}

npccl_status_t npccl_comm_copy_stats(npccl_comm_t c, npccl_copy_stats_t *out)
{
	if (!c || !out)
		return NPCCL_ERR_INVALID_ARG;
	*out = (npccl_copy_stats_t){
		.space_bytes = atomic_load_explicit(&c->copied.space_bytes, memory_order_relaxed),
		.space_copies = atomic_load_explicit(&c->copied.space_copies, memory_order_relaxed),
		.cma_bytes = atomic_load_explicit(&c->copied.cma_bytes, memory_order_relaxed),
		.cma_copies = atomic_load_explicit(&c->copied.cma_copies, memory_order_relaxed),
		.shm_bytes = atomic_load_explicit(&c->copied.shm_bytes, memory_order_relaxed),
	};
	return NPCCL_OK;
}

/* ---- split ---------------------------------------------------------------- */

struct split_entry {
	int32_t color, key;
	npccl_unique_id_t id;
};

npccl_status_t npccl_comm_split(npccl_comm_t c, int color, int key, npccl_comm_t *newcomm)
{
	if (!c)
		return NPCCL_ERR_INVALID_ARG;
	tls_error_clear(c);
	if (!newcomm || color < NPCCL_SPLIT_NOCOLOR) {
		tls_error_set(c, "npccl_comm_split: %s", !newcomm
			      ? "newcomm (where to return the new communicator) is NULL"
			      : "color must be >= 0, or NPCCL_SPLIT_NOCOLOR (-1) for no new communicator");
		return NPCCL_ERR_INVALID_ARG;
	}
	*newcomm = NULL;
	int P = c->nranks;
	struct split_entry *all = calloc((size_t)P, sizeof(*all));
	if (!all)
		return NPCCL_ERR_NOMEM;
	struct split_entry mine = { color, key, { { 0 } } };
	/* 1: everyone's color and key */
	npccl_status_t st = npccl_allgather(&mine, all, sizeof(mine), NPCCL_UINT8, c);
	if (st)
		goto out;
	/* 2: the lowest old rank of each color serves the rendezvous */
	int leader = -1;
	for (int i = 0; i < P && color >= 0; i++)
		if (all[i].color == color) {
			leader = i;
			break;
		}
	char err[512] = "";
	if (leader == c->rank) {
		uint32_t ip = c->peers[c->rank].info.ipv4;
		if (c->nhosts == 1)
			ip = htonl(INADDR_LOOPBACK);
		st = unique_id_create(ip, 0, -1, 0, &mine.id, err, sizeof(err));
		if (st) {
			tls_error_set(c, "split: %s", err);
			/* still take part in the exchange so the others do not hang */
		}
	}
	npccl_status_t st2 = npccl_allgather(&mine, all, sizeof(mine), NPCCL_UINT8, c);
	if (st2 || st) {
		st = st2 ? st2 : st;
		goto out;
	}
	if (color < 0)
		goto out;
	int n = 0, newrank = 0;
	for (int i = 0; i < P; i++) {
		if (all[i].color != color)
			continue;
		if (all[i].key < key || (all[i].key == key && i < c->rank))
			newrank++;
		n++;
	}
	st = comm_init_common(newcomm, n, &(struct boot_src){ .id = &all[leader].id }, newrank, err,
			      sizeof(err));
	if (st) {
		tls_error_set(c, "split: %s", err);
	} else {
		pthread_mutex_lock(&c->q_lock);
		(*newcomm)->timeout_ms = c->timeout_ms;
		pthread_mutex_unlock(&c->q_lock);
	}
out:
	free(all);
	return st;
}
