/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * stream_add.c - STREAM-style "add" (c[i] = a[i] + b[i], float32) with T
 * pthreads, the memory-bandwidth yardstick of bench/tensor/bench.py.
 *
 *   stream_add THREADS ELEMENTS REPS
 *
 * Arrays are first touched by the thread that uses them (as STREAM does);
 * bandwidth counts 3 * ELEMENTS * 4 bytes per repetition (two reads, one
 * write, no write-allocate traffic), like STREAM. Prints the median and best
 * GB/s as "add_gbs_median X" / "add_gbs_best Y".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static float *A, *B, *C;
static long N;
static int T;
static pthread_barrier_t bar;
static double *times;
static int reps;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *worker(void *arg)
{
	long id = (long)arg, lo = N * id / T, hi = N * (id + 1) / T;

	for (long i = lo; i < hi; i++) {
		A[i] = 1.0f;
		B[i] = 2.0f;
		C[i] = 0.0f;
	}
	for (int r = 0; r < reps; r++) {
		pthread_barrier_wait(&bar);
		double t0 = now();

		for (long i = lo; i < hi; i++)
			C[i] = A[i] + B[i];
		pthread_barrier_wait(&bar);
		if (id == 0)
			times[r] = now() - t0;
	}
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	T = argc > 1 ? atoi(argv[1]) : 2;
	N = argc > 2 ? atol(argv[2]) : 1L << 24;
	reps = argc > 3 ? atoi(argv[3]) : 20;
	if (T < 1 || N < T || reps < 1) {
		fprintf(stderr, "usage: stream_add THREADS ELEMENTS REPS\n");
		return 2;
	}
	if (posix_memalign((void **)&A, 4096, N * 4) || posix_memalign((void **)&B, 4096, N * 4) ||
	    posix_memalign((void **)&C, 4096, N * 4)) {
		fprintf(stderr, "stream_add: out of memory\n");
		return 1;
	}
	times = calloc(reps, sizeof(double));
	pthread_barrier_init(&bar, NULL, T);
	pthread_t th[256];

	for (long i = 0; i < T; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	for (int i = 0; i < T; i++)
		pthread_join(th[i], NULL);
	qsort(times + 1, reps - 1, sizeof(double), cmp); /* drop the first repetition */
	double bytes = 3.0 * N * 4;
	int m = reps > 1 ? 1 + (reps - 1) / 2 : 0;

	printf("add_gbs_median %.2f\nadd_gbs_best %.2f\ncheck %.1f\n", bytes / times[m] / 1e9,
	       bytes / times[reps > 1 ? 1 : 0] / 1e9, C[N / 2]);
	return 0;
}
