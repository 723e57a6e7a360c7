/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * costmodel.c - alpha-beta-gamma model used to pick an algorithm per call.
 *
 * alpha: per-message latency, beta: per-byte transfer time, gamma: per-byte
 * reduction time. Measured at init, in a few milliseconds: gamma and the
 * memory copy rate (shm beta) once per process on 256 KiB buffers; shm
 * alpha by 0-byte ping-pongs between local ranks 0 and 1; TCP alpha and beta
 * by ping-pongs between rank 0 and the first rank on another host. The
 * constants are then agreed with a MAX AllReduce so every rank predicts the
 * same and therefore picks the same algorithm. The formulas are the usual
 * ones (Thakur, Rabenseifner and Gropp 2005), with the shared-memory path
 * modelled as copies in parallel.
 */
#include "npccl_internal.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MB (1024.0 * 1024.0)
/* shm alpha above this is a disturbed measurement (see costmodel_measure) */
#define SHM_ALPHA_SANE_US 20.0
#define MEASURE_ATTEMPTS 3
#define MEASURE_PAUSE_US 20000
/* process_vm_readv/writev: system call and page pinning, per call */
#define CMA_CALL_US 3.0

static pthread_once_t local_once = PTHREAD_ONCE_INIT;
static double local_copy_us_per_mb = 70, local_gamma_us_per_mb = 60;

static void measure_local(void)
{
	size_t n = 256 << 10;
	char *a = malloc(n), *b = malloc(n);
	if (!a || !b) {
		free(a);
		free(b);
		return;
	}
	memset(a, 1, n);
	memset(b, 2, n);
	double best_copy = 1e9, best_red = 1e9;
	for (int rep = 0; rep < 5; rep++) {
		uint64_t t0 = now_ns();
		memcpy(b, a, n);
		uint64_t t1 = now_ns();
		reduce_inplace(NPCCL_FLOAT32, NPCCL_SUM, a, b, n / 4);
		uint64_t t2 = now_ns();
		best_copy = MIN(best_copy, (double)(t1 - t0));
		best_red = MIN(best_red, (double)(t2 - t1));
	}
	local_copy_us_per_mb = best_copy / 1000.0 / ((double)n / MB);
	local_gamma_us_per_mb = best_red / 1000.0 / ((double)n / MB);
	free(a);
	free(b);
}

/* round-trip halves between this rank and `peer`; `lead` sends first */
static npccl_status_t pingpong(struct npccl_comm *c, int peer, bool lead, size_t bytes, int reps,
			       double *us)
{
	char *buf = comm_scratch(c, MAX(bytes, (size_t)64));
	if (!buf)
		return NPCCL_ERR_NOMEM;
	npccl_status_t st = NPCCL_OK;
	double best = 1e12;
	for (int i = 0; i < reps && !st; i++) {
		uint64_t t0 = now_ns();
		if (lead) {
			st = npccl_send(buf, bytes, NPCCL_UINT8, peer, c);
			if (!st)
				st = npccl_recv(buf, 0, NPCCL_UINT8, peer, c);
		} else {
			st = npccl_recv(buf, bytes, NPCCL_UINT8, peer, c);
			if (!st)
				st = npccl_send(buf, 0, NPCCL_UINT8, peer, c);
		}
		best = MIN(best, (double)(now_ns() - t0) / 1000.0);
	}
	*us = best;
	return st;
}

/* One measurement of the link constants into v[0] (shm alpha), v[2] (tcp
 * alpha) and v[3] (tcp beta) on the ranks that take part; others leave 0. */
static npccl_status_t measure_links(struct npccl_comm *c, double *v)
{
	npccl_status_t st;
	/* shm alpha: local ranks 0 and 1 of host 0 */
	if (c->host_index == 0 && c->nlocal > 1 && c->local_index < 2) {
		int peer = c->local_ranks[1 - c->local_index];
		double rt0, rt;
		if ((st = pingpong(c, peer, c->local_index == 0, 0, 3, &rt0)) ||
		    (st = pingpong(c, peer, c->local_index == 0, 0, 20, &rt)))
			return st;
		v[0] = rt / 2;
		if (c->fault_kind == FAULT_SLOW_ALPHA && c->rank == c->fault_rank &&
		    c->fault_seq > 0) {
			c->fault_seq--;
			v[0] += 1e5;	/* tests: a disturbed measurement (100 ms) */
		}
	}
	/* tcp: rank 0 and the lowest rank on host 1 */
	if (c->nhosts > 1) {
		int other = -1;
		for (int i = 0; i < c->nranks && other < 0; i++)
			if (c->host_of[i] == 1)
				other = i;
		if (c->rank == 0 || c->rank == other) {
			int peer = c->rank == 0 ? other : 0;
			double rt, big;
			if ((st = pingpong(c, peer, c->rank == 0, 0, 10, &rt)) ||
			    (st = pingpong(c, peer, c->rank == 0, 1 << 20, 3, &big)))
				return st;
			v[2] = rt / 2;
			v[3] = MAX(big - rt, 1.0);	/* us per MiB one way */
		}
	}
	return NPCCL_OK;
}

npccl_status_t costmodel_measure(struct npccl_comm *c)
{
	pthread_once(&local_once, measure_local);
	npccl_cost_model_t *m = &c->model;
	m->shm_alpha_us = 0.5;
	m->shm_beta_us_per_mb = local_copy_us_per_mb;
	m->tcp_alpha_us = 25;
	m->tcp_beta_us_per_mb = 800;
	m->gamma_us_per_mb = local_gamma_us_per_mb;
	if (c->nranks == 1)
		return NPCCL_OK;
	double v[6];
	npccl_status_t st;
	/* A ping-pong through the FIFOs takes a few microseconds on any host;
	 * far more means the two ranks were sharing their cores with something
	 * (processes still spinning in a previous job's finalize, say), and a
	 * communicator keeps its constants for life. So measure again, after a
	 * pause, while the agreed value says so, unless ranks are oversubscribed
	 * (then a long round trip is the truth). The decision is taken on agreed
	 * (MAX-reduced) values only, hence alike on every rank. */
	for (int attempt = 0;; attempt++) {
		v[0] = 0, v[1] = m->shm_beta_us_per_mb, v[2] = 0, v[3] = 0;
		v[4] = m->gamma_us_per_mb, v[5] = c->oversubscribed;
		if ((st = measure_links(c, v)))
			return st;
		/* the constants differ per rank until agreed: use a fixed algorithm */
		c->forced[NPCCL_COLL_ALLREDUCE] = NPCCL_ALGO_DIRECT;
		st = coll_internal(c, NPCCL_COLL_ALLREDUCE, v, v, 6, NPCCL_FLOAT64, NPCCL_MAX);
		c->forced[NPCCL_COLL_ALLREDUCE] = NPCCL_ALGO_AUTO;
		if (st)
			return st;
		if (v[0] <= SHM_ALPHA_SANE_US || v[5] > 0 || attempt + 1 >= MEASURE_ATTEMPTS)
			break;
		npccl_log(NPCCL_LOG_INFO, "rank %d: shm latency measured %.1f us, expected below "
			  "%.0f us: the cores were busy; measuring again", c->rank, v[0],
			  SHM_ALPHA_SANE_US);
		usleep(MEASURE_PAUSE_US);
	}
	memset(c->choice, 0, sizeof(c->choice));	/* constants changed */
	if (v[0] > 0)
		m->shm_alpha_us = v[0];
	m->shm_beta_us_per_mb = v[1];
	if (v[2] > 0)
		m->tcp_alpha_us = v[2];
	if (v[3] > 0)
		m->tcp_beta_us_per_mb = v[3];
	m->gamma_us_per_mb = v[4];
	return NPCCL_OK;
}

static bool is_pow2(int n)
{
	return n > 0 && (n & (n - 1)) == 0;
}

bool algo_valid(struct npccl_comm *c, npccl_coll_t coll, npccl_algo_t a)
{
	bool shm_ok = c->nhosts == 1 && c->nlocal > 1;
	if (a == NPCCL_ALGO_CANONICAL)
		return coll == NPCCL_COLL_ALLREDUCE || coll == NPCCL_COLL_REDUCE_SCATTER ||
		       coll == NPCCL_COLL_REDUCE;
	switch (coll) {
	case NPCCL_COLL_ALLREDUCE:
		if (a == NPCCL_ALGO_SHM)
			return shm_ok;
		if (a == NPCCL_ALGO_HIER)
			return c->nhosts > 1 && c->uniform;
		return a == NPCCL_ALGO_RING || a == NPCCL_ALGO_TREE || a == NPCCL_ALGO_RECDOUBLING ||
		       a == NPCCL_ALGO_RABENSEIFNER || a == NPCCL_ALGO_DIRECT;
	case NPCCL_COLL_ALLGATHER:
		if (a == NPCCL_ALGO_CMA)
			return shm_ok && c->cma_ok;
		return a == NPCCL_ALGO_RING || a == NPCCL_ALGO_RECDOUBLING || a == NPCCL_ALGO_DIRECT;
	case NPCCL_COLL_REDUCE_SCATTER:
		if (a == NPCCL_ALGO_CMA)
			return shm_ok && c->cma_ok;
		return a == NPCCL_ALGO_RING || a == NPCCL_ALGO_DIRECT;
	case NPCCL_COLL_BROADCAST:
		if (a == NPCCL_ALGO_CMA)
			return shm_ok && c->cma_ok;
		return a == NPCCL_ALGO_RING || a == NPCCL_ALGO_TREE || a == NPCCL_ALGO_DIRECT;
	case NPCCL_COLL_REDUCE:
		return a == NPCCL_ALGO_RING || a == NPCCL_ALGO_TREE || a == NPCCL_ALGO_DIRECT;
	case NPCCL_COLL_GATHER:
	case NPCCL_COLL_SCATTER:
		return a == NPCCL_ALGO_DIRECT || a == NPCCL_ALGO_TREE;
	case NPCCL_COLL_ALLTOALL:
		return a == NPCCL_ALGO_DIRECT;
	case NPCCL_COLL_BARRIER:
		return a == NPCCL_ALGO_DIRECT || (a == NPCCL_ALGO_SHM && shm_ok);
	default:
		return false;
	}
	(void)is_pow2;
}

/*
 * The deterministic mode's algorithm for a reducing call: AllReduce on one
 * host runs the shared-memory algorithm, which already reduces every
 * element over the local ranks in rank order with these kernels (same bits,
 * no cost); everything else runs the canonical algorithm (algo_canonical.c).
 */
npccl_algo_t canon_algo(struct npccl_comm *c, npccl_coll_t coll)
{
	if (coll == NPCCL_COLL_ALLREDUCE && algo_valid(c, coll, NPCCL_ALGO_SHM))
		return NPCCL_ALGO_SHM;
	return NPCCL_ALGO_CANONICAL;
}

double costmodel_predict(struct npccl_comm *c, npccl_coll_t coll, npccl_algo_t algo, size_t bytes)
{
	const npccl_cost_model_t *m = &c->model;
	double P = c->nranks, n = (double)bytes;
	bool tcp = c->nhosts > 1;
	double al = tcp ? m->tcp_alpha_us : m->shm_alpha_us;
	/* shm point-to-point: the sender copies in, the receiver copies out */
	double be = (tcp ? m->tcp_beta_us_per_mb : 2 * m->shm_beta_us_per_mb) / MB;
	double ga = m->gamma_us_per_mb / MB, cp = m->shm_beta_us_per_mb / MB;
	double lg = ceil(log2(P));
	double p2 = pow(2, floor(log2(P))), fold = p2 < P ? 2 * (al + n * be) : 0;
	double chunk = (double)npccl_config()->pipeline_chunk;
	if (c->nranks == 1)
		return 0.1 + n * cp;
	switch (coll) {
	case NPCCL_COLL_ALLREDUCE:
		switch (algo) {
		case NPCCL_ALGO_RING:
			return n * cp + 2 * (P - 1) * al + 2 * (P - 1) / P * n * be +
			       (P - 1) / P * n * ga;
		case NPCCL_ALGO_RECDOUBLING:
			return n * cp + fold + log2(p2) * (al + n * be + n * ga);
		case NPCCL_ALGO_RABENSEIFNER:
			return n * cp + fold + 2 * log2(p2) * al + 2 * (p2 - 1) / p2 * n * be +
			       (p2 - 1) / p2 * n * ga;
		case NPCCL_ALGO_TREE: {
			double k = ceil(n / 2 / chunk), depth = ceil(log2(P + 1));
			return n * cp + 2 * (depth + k - 1) * (al + MIN(chunk, n / 2) * (be + ga)) +
			       n * be;
		}
		case NPCCL_ALGO_DIRECT:
			return n * cp + (P - 1) * al + (P - 1) * n * (be + ga);
		case NPCCL_ALGO_CANONICAL:	/* direct reduce-scatter + allgather */
			return 2 * (P - 1) * al + 2 * (P - 1) / P * n * be + n * ga;
		case NPCCL_ALGO_SHM: {
			/* shm alpha is measured through the FIFOs (request handling
			 * included); a fast-path step is one flag store and load */
			double steps = MAX(1.0, ceil(n / (double)c->layout.fp_chunk));
			if (n <= (double)npccl_config()->fp_direct_max)
				return 0.5 * al + n * cp + (P - 1) * n * ga;
			/* chunks are pipelined: the three synchronisations per chunk
			 * overlap with the copies of the neighbouring chunks */
			return (1.5 + steps * 0.1) * al + n * cp * 2 * (P - 1) / P +
			       n / P * (P - 1) * ga + n / P * cp;
		}
		case NPCCL_ALGO_HIER: {
			double L = c->nlocal, H = c->nhosts, sb = 2 * m->shm_beta_us_per_mb / MB;
			double tb = m->tcp_beta_us_per_mb / MB;
			return n * cp + 2 * (L - 1) * (m->shm_alpha_us + n / L * sb) +
			       (L - 1) / L * n * ga + 2 * (H - 1) * m->tcp_alpha_us +
			       2 * (H - 1) / H * n / L * tb;
		}
		default:
			return 1e30;
		}
	case NPCCL_COLL_REDUCE_SCATTER:	/* n: all blocks */
		if (algo == NPCCL_ALGO_CANONICAL)
			return (P - 1) * al + (P - 1) / P * n * be + n * ga;
		if (algo == NPCCL_ALGO_CMA)	/* a system call per peer and chunk, one copy */
			return 2 * al + (P - 1) * CMA_CALL_US * ceil(n / P / chunk + 1) +
			       (P - 1) / P * n * (cp + ga) + n / P * cp;
		if (algo == NPCCL_ALGO_DIRECT)
			return (P - 1) * al + (P - 1) / P * n * (be + ga) + n * ga;
		return n * cp + (P - 1) * al + (P - 1) / P * n * (be + ga);
	case NPCCL_COLL_ALLGATHER:	/* n: the whole output */
		if (algo == NPCCL_ALGO_CMA)	/* every rank copies its share at once */
			return 2 * al + (P - 1) * CMA_CALL_US + (P - 1) / P * n * cp;
		if (algo == NPCCL_ALGO_DIRECT)
			return (P - 1) * al + (P - 1) / P * n * be * 1.2;
		if (algo == NPCCL_ALGO_RECDOUBLING)
			return lg * al + (P - 1) / P * n * be + n * cp;
		return (P - 1) * al + (P - 1) / P * n * be;
	case NPCCL_COLL_BROADCAST:
	case NPCCL_COLL_REDUCE: {
		double g = coll == NPCCL_COLL_REDUCE ? ga : 0;
		double k = ceil(n / chunk), c1 = MIN(chunk, n);
		if (algo == NPCCL_ALGO_CMA)	/* two ranks: root and receiver copy half each */
			return 2 * al + CMA_CALL_US + n * cp / (P == 2 ? 2 : 1);
		if (algo == NPCCL_ALGO_DIRECT)
			return (P - 1) * (al + n * (be + g));
		if (algo == NPCCL_ALGO_CANONICAL)
			return 2 * (P - 1) * al + 2 * (P - 1) / P * n * be + n * g;
		if (algo == NPCCL_ALGO_TREE)
			return (ceil(log2(P + 1)) + k - 1) * (al + 2 * c1 * (be + g));
		return (P - 1 + k - 1) * (al + c1 * (be + g));
	}
	case NPCCL_COLL_GATHER:
	case NPCCL_COLL_SCATTER:
		if (algo == NPCCL_ALGO_TREE)
			return lg * al + (P - 1) / P * n * be + n * cp;
		return (P - 1) * al + (P - 1) / P * n * be;
	case NPCCL_COLL_ALLTOALL:
		return (P - 1) * al + (P - 1) / P * n * be;
	case NPCCL_COLL_BARRIER:
		if (algo == NPCCL_ALGO_SHM)
			return 2 * m->shm_alpha_us;
		return lg * al;
	default:
		return 1e30;
	}
}

npccl_algo_t costmodel_choose(struct npccl_comm *c, npccl_coll_t coll, size_t bytes,
			      double *predicted_us)
{
	npccl_algo_t best = NPCCL_ALGO_AUTO;
	double bt = 1e300;
	for (int a = 1; a < NPCCL_NUM_ALGOS; a++) {
		/* canonical order: chosen by the deterministic mode, never for speed */
		if (a == NPCCL_ALGO_CANONICAL || !algo_valid(c, coll, (npccl_algo_t)a))
			continue;
		double t = costmodel_predict(c, coll, (npccl_algo_t)a, bytes);
		if (t < bt) {
			bt = t;
			best = (npccl_algo_t)a;
		}
	}
	if (predicted_us)
		*predicted_us = best == NPCCL_ALGO_AUTO ? 0 : bt;
	return best;
}

npccl_status_t npccl_explain(npccl_comm_t c, npccl_coll_t coll, size_t count, npccl_dtype_t dtype,
			     npccl_explanation_t *out)
{
	if (!c || !out || (unsigned)coll >= NPCCL_NUM_COLLS || (unsigned)dtype >= NPCCL_NUM_DTYPES)
		return NPCCL_ERR_INVALID_ARG;
	memset(out, 0, sizeof(*out));
	size_t bytes = count * npccl_dtype_size(dtype);
	if (coll == NPCCL_COLL_ALLGATHER || coll == NPCCL_COLL_REDUCE_SCATTER ||
	    coll == NPCCL_COLL_GATHER || coll == NPCCL_COLL_SCATTER || coll == NPCCL_COLL_ALLTOALL)
		bytes *= (size_t)c->nranks;
	bool rdma = rdma_device(c) != NULL;
	out->transport = c->nhosts == 1 ? (c->nlocal > 1 ? "shm" : "none")
			 : c->nlocal > 1 ? (rdma ? "shm+rdma" : "shm+tcp") : rdma ? "rdma" : "tcp";
	const char *why = "cost model";
	pthread_mutex_lock(&c->q_lock);
	npccl_algo_t a = c->forced[coll];
	bool det = c->deterministic;
	pthread_mutex_unlock(&c->q_lock);
	if (det && canon_applies(coll, dtype)) {
		a = canon_algo(c, coll);
		why = a == NPCCL_ALGO_SHM ? "deterministic mode: one host, already in rank order"
					  : "deterministic mode";
	} else if (a != NPCCL_ALGO_AUTO && algo_valid(c, coll, a)) {
		why = "forced by npccl_comm_set_algo";
	} else if ((a = npccl_config()->algo[coll]) != NPCCL_ALGO_AUTO && algo_valid(c, coll, a)) {
		why = "forced by NPCCL_ALGO";
	} else {
		a = costmodel_choose(c, coll, bytes, NULL);
	}
	out->algo = a;
	if (coll == NPCCL_COLL_SEND || coll == NPCCL_COLL_RECV) {
		bool tcp = c->nhosts > 1;
		out->predicted_us = (tcp ? c->model.tcp_alpha_us : c->model.shm_alpha_us) +
				    (double)bytes * (tcp ? c->model.tcp_beta_us_per_mb
							 : 2 * c->model.shm_beta_us_per_mb) / MB;
		snprintf(out->text, sizeof(out->text), "%s of %zu bytes: point to point over %s, "
			 "predicted %.2f us", npccl_coll_name(coll), bytes, out->transport,
			 out->predicted_us);
		return NPCCL_OK;
	}
	out->predicted_us = costmodel_predict(c, coll, a, bytes);
	int len = snprintf(out->text, sizeof(out->text),
			   "%s of %zu bytes on %d ranks (%d host(s)): %s (%s), predicted %.2f us;",
			   npccl_coll_name(coll), bytes, c->nranks, c->nhosts, npccl_algo_name(a),
			   why, out->predicted_us);
	for (int k = 1; k < NPCCL_NUM_ALGOS && len < (int)sizeof(out->text) - 32; k++)
		if (k != (int)a && algo_valid(c, coll, (npccl_algo_t)k))
			len += snprintf(out->text + len, sizeof(out->text) - (size_t)len, " %s %.1f",
					npccl_algo_name((npccl_algo_t)k),
					costmodel_predict(c, coll, (npccl_algo_t)k, bytes));
	return NPCCL_OK;
}
