/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * timing.c - npushm-llama's latency figures: percentiles, and with --tp the
 * collectives' share of the decode time (from the engine's profile) beside
 * the latency of one AllReduce of a hidden vector, measured on the run's own
 * communicator in npccl shared memory (the buffer kind the engine reduces).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define LAT_WARMUP 20
#define LAT_ROUNDS 200

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

double percentile(double *v, int n, double p)
{
	int i;

	if (n < 1)
		return 0;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	i = (int)(p * (n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

double allreduce_latency(npccl_comm_t comm, int count)
{
	double lat[LAT_ROUNDS], p50 = -1;
	void *buf;

	if (npccl_mem_alloc(comm, sizeof(float) * (size_t)count, &buf)) {
		die("allocating the AllReduce latency buffer: %s", npccl_comm_last_error(comm));
		return -1;
	}
	memset(buf, 0, sizeof(float) * (size_t)count);
	for (int i = 0; i < LAT_WARMUP + LAT_ROUNDS; i++) {
		double t0 = now();

		if (npccl_allreduce(buf, buf, (size_t)count, NPCCL_FLOAT32, NPCCL_SUM, comm)) {
			die("AllReduce of %d floats: %s", count, npccl_comm_last_error(comm));
			goto out;
		}
		if (i >= LAT_WARMUP)
			lat[i - LAT_WARMUP] = now() - t0;
	}
	p50 = percentile(lat, LAT_ROUNDS, 0.5);
out:
	npccl_mem_free(comm, buf);
	return p50;
}

int print_collectives(const struct rank_ctx *x, const npllama_profile_t *p, int tokens)
{
	npllama_config_t c;
	double lat;

	npllama_get_config(x->llm, &c);
	lat = allreduce_latency(x->comm, c.hidden);
	if (lat < 0)
		return 1;
	if (x->rank == 0)
		printf("timing: tp %d: collectives %.6f s of %.6f s in the feeds (%.1f %%), %.1f per token, "
		       "%.1f us per token; AllReduce of one hidden vector (%d floats) p50 %.1f us\n",
		       x->nranks, p->allreduce, p->feed, p->feed > 0 ? 100 * p->allreduce / p->feed : 0,
		       tokens > 0 ? (double)p->collectives / tokens : 0,
		       tokens > 0 ? 1e6 * p->allreduce / tokens : 0, c.hidden, 1e6 * lat);
	return 0;
}
