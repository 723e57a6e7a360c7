// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The npushm authors
/*
 * read_bw.c - STREAM-style read bandwidth: T threads sum disjoint parts of
 * one float array (prefaulted), best of 5 passes, in GB/s. The ceiling the
 * decode benchmark compares bytes of weights per token x tokens/s with.
 *
 *   read_bw MIB THREADS
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static float *buf;
static size_t n;
static int nt;
static volatile float sink;

static void *part(void *arg)
{
	size_t t = (size_t)arg, b = n / nt * t, e = t + 1 == (size_t)nt ? n : n / nt * (t + 1);
	float s[16] = { 0 };

	for (size_t i = b; i + 16 <= e; i += 16)
		for (int j = 0; j < 16; j++)
			s[j] += buf[i + j];
	for (int j = 1; j < 16; j++)
		s[0] += s[j];
	sink = s[0];
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 1024;
	pthread_t th[64];
	double best = 0;

	nt = argc > 2 ? atoi(argv[2]) : 1;
	if (nt < 1 || nt > 64 || !mib)
		return 2;
	n = mib << 18;
	buf = malloc(n * sizeof(float));
	if (!buf)
		return 1;
	memset(buf, 1, n * sizeof(float));
	for (int pass = 0; pass < 5; pass++) {
		double t0 = now(), gbs;

		for (int t = 0; t < nt; t++)
			pthread_create(&th[t], NULL, part, (void *)(size_t)t);
		for (int t = 0; t < nt; t++)
			pthread_join(th[t], NULL);
		gbs = n * sizeof(float) / (now() - t0) / 1e9;
		if (gbs > best)
			best = gbs;
	}
	printf("%.2f\n", best);
	return 0;
}
