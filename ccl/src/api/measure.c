/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * measure.c - the cost model's constants, measured at communicator init in
 * a few milliseconds: gamma and the memory copy rate (shm beta) once per
 * process on 256 KiB buffers; shm alpha by 0-byte ping-pongs between local
 * ranks 0 and 1; TCP alpha and beta by ping-pongs between rank 0 and the
 * first rank on another host, through the public send and receive calls
 * (what a call costs, queue included). The constants are then agreed with
 * a MAX AllReduce so every rank predicts the same (dispatch/costmodel.c).
 */
#include "npccl_internal.h"
#include "transport/transport.h"
#include "algo/algo.h"
#include "dispatch/dispatch.h"
#include "queue/queue.h"
#include "setup/setup.h"

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
