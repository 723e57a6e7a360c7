/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * costmodel.c - alpha-beta-gamma model used to pick an algorithm per call.
 *
 * alpha: per-message latency, beta: per-byte transfer time, gamma: per-byte
 * reduction time, measured and agreed at init (api/measure.c), so every
 * rank predicts the same and therefore picks the same algorithm; which
 * algorithms a collective has here (algo_valid). The formulas are the usual
 * ones (Thakur, Rabenseifner and Gropp 2005), with the shared-memory path
 * modelled as copies in parallel.
 */
#include "npccl_internal.h"
#include "transport/transport.h"
#include "algo/algo.h"
#include "dispatch/dispatch.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MB (1024.0 * 1024.0)
/* a single copy's fixed cost (system call, page pinning) where init could
 * not time one */
#define CMA_CALL_US 3.0

/* A single copy between local ranks: its fixed cost (us), and its cost per
 * byte, a memcpy's (@cp) times the ratio timed and agreed at init
 * (api/comm.c) where that is far above 1. Init times a chunk in the
 * peer's cache against one in this core's: 1.1-1.8x here, natively and in
 * the emulated VM, which large messages, cold on both paths, do not see
 * (measured: the single-copy AllReduce 3x faster than shm's at 4-16 MiB);
 * a ratio past CMA_RATIO_MIN means the pinning itself is dear. */
#define CMA_RATIO_MIN 2.5

static double cma_call(const struct npccl_comm *c)
{
	return c->cma_call_us > 0 ? c->cma_call_us : CMA_CALL_US;
}

static double cma_byte(const struct npccl_comm *c, double cp)
{
	return c->cma_copy_ratio > CMA_RATIO_MIN ? cp * c->cma_copy_ratio : cp;
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
	/* the single-copy algorithms (algo_cma.c): every collective that moves
	 * data between ranks, where every rank reads every peer's memory */
	if (a == NPCCL_ALGO_CMA)
		return shm_ok && c->cma_ok && coll != NPCCL_COLL_BARRIER &&
		       coll != NPCCL_COLL_SEND && coll != NPCCL_COLL_RECV;
	switch (coll) {
	case NPCCL_COLL_ALLREDUCE:
		if (a == NPCCL_ALGO_SHM)
			return shm_ok;
		if (a == NPCCL_ALGO_HIER)
			return c->nhosts > 1 && c->uniform;
		return a == NPCCL_ALGO_RING || a == NPCCL_ALGO_TREE || a == NPCCL_ALGO_RECDOUBLING ||
		       a == NPCCL_ALGO_RABENSEIFNER || a == NPCCL_ALGO_DIRECT;
	case NPCCL_COLL_ALLGATHER:
		return a == NPCCL_ALGO_RING || a == NPCCL_ALGO_RECDOUBLING || a == NPCCL_ALGO_DIRECT;
	case NPCCL_COLL_REDUCE_SCATTER:
		return a == NPCCL_ALGO_RING || a == NPCCL_ALGO_DIRECT;
	case NPCCL_COLL_BROADCAST:
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
 * The deterministic mode's algorithm for a reducing call that would run
 * @chosen otherwise. On one host the shared-memory AllReduce and the
 * single-copy reductions (algo_cma_reduce.c) already reduce every element
 * over the ranks in rank order with these kernels (same bits, no cost):
 * kept; AllReduce on one host otherwise runs the shared-memory algorithm;
 * everything else the canonical algorithm (algo_canonical.c).
 */
npccl_algo_t canon_algo(struct npccl_comm *c, npccl_coll_t coll, npccl_algo_t chosen)
{
	if ((chosen == NPCCL_ALGO_SHM || chosen == NPCCL_ALGO_CMA) && algo_valid(c, coll, chosen))
		return chosen;
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
	double call = cma_call(c), ccp = cma_byte(c, cp);
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
		case NPCCL_ALGO_CMA:	/* my slice: read every peer's, reduce, write to every peer */
			return 2 * al + 2 * (P - 1) * call * ceil(n / P / chunk + 1) +
			       (P - 1) / P * n * (2 * ccp + ga);
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
			return 2 * al + (P - 1) * call * ceil(n / P / chunk + 1) +
			       (P - 1) / P * n * (ccp + ga) + n / P * cp;
		if (algo == NPCCL_ALGO_DIRECT)
			return (P - 1) * al + (P - 1) / P * n * (be + ga) + n * ga;
		return n * cp + (P - 1) * al + (P - 1) / P * n * (be + ga);
	case NPCCL_COLL_ALLGATHER:	/* n: the whole output */
		if (algo == NPCCL_ALGO_CMA)	/* every rank copies its share at once */
			return 2 * al + (P - 1) * call + (P - 1) / P * n * ccp;
		if (algo == NPCCL_ALGO_DIRECT)
			return (P - 1) * al + (P - 1) / P * n * be * 1.2;
		if (algo == NPCCL_ALGO_RECDOUBLING)
			return lg * al + (P - 1) / P * n * be + n * cp;
		return (P - 1) * al + (P - 1) / P * n * be;
	case NPCCL_COLL_BROADCAST:
	case NPCCL_COLL_REDUCE: {
		double g = coll == NPCCL_COLL_REDUCE ? ga : 0;
		double k = ceil(n / chunk), c1 = MIN(chunk, n);
		if (algo == NPCCL_ALGO_CMA && coll == NPCCL_COLL_REDUCE)	/* the root reads all */
			return 2 * al + (P - 1) * call * ceil(n / chunk + 1) +
			       (P - 1) * n * (ccp + ga);
		if (algo == NPCCL_ALGO_CMA)	/* two ranks: root and receiver copy half each */
			return 2 * al + call + n * ccp / (P == 2 ? 2 : 1);
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
		if (algo == NPCCL_ALGO_CMA)	/* every rank copies its own block at once */
			return 2 * al + call + n / P * ccp;
		if (algo == NPCCL_ALGO_TREE)
			return lg * al + (P - 1) / P * n * be + n * cp;
		return (P - 1) * al + (P - 1) / P * n * be;
	case NPCCL_COLL_ALLTOALL:
		if (algo == NPCCL_ALGO_CMA)	/* every rank reads its block of each peer's */
			return 2 * al + (P - 1) * call + (P - 1) / P * n * ccp;
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
	if (!c || !out)
		return NPCCL_ERR_INVALID_ARG;
	tls_error_clear(c);
	if ((unsigned)coll >= NPCCL_NUM_COLLS) {
		tls_error_set(c, "npccl_explain: invalid collective %d (not an npccl_coll_t)",
			      (int)coll);
		return NPCCL_ERR_INVALID_ARG;
	}
	if ((unsigned)dtype >= NPCCL_NUM_DTYPES) {
		tls_error_set(c, "npccl_explain: invalid dtype %d (not an npccl_dtype_t)", (int)dtype);
		return NPCCL_ERR_INVALID_ARG;
	}
	/* the collectives' own bound (collectives.c) */
	if (count > (SIZE_MAX / 8) / (size_t)c->nranks) {
		tls_error_set(c, "npccl_explain: count %zu overflows the address space", count);
		return NPCCL_ERR_INVALID_ARG;
	}
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
	if (a != NPCCL_ALGO_AUTO && algo_valid(c, coll, a)) {
		why = "forced by npccl_comm_set_algo";
	} else if ((a = npccl_config()->algo[coll]) != NPCCL_ALGO_AUTO && algo_valid(c, coll, a)) {
		why = "forced by NPCCL_ALGO";
	} else {
		a = costmodel_choose(c, coll, bytes, NULL);
	}
	if (det && canon_applies(coll, dtype)) {
		a = canon_algo(c, coll, a);
		why = a == NPCCL_ALGO_CANONICAL ? "deterministic mode"
						: "deterministic mode: one host, already in rank order";
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
