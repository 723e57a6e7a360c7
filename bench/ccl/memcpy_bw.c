/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * memcpy_bw.c - single-core memcpy bandwidth, the intra-host ceiling printed
 * next to npccl-perf: copies SIZE bytes between two prefaulted buffers for
 * >= 1 s and prints "memcpy SIZE bytes: X GB/s" (bytes copied per second).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : (64u << 20);
	char *a = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	char *b = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (a == MAP_FAILED || b == MAP_FAILED)
		return 1;
	memset(a, 1, n);
	memset(b, 2, n);
	double best = 0;
	for (int rep = 0; rep < 5; rep++) {
		long it = 0;
		double t0 = now(), t;
		do {
			memcpy(b, a, n);
			it++;
		} while ((t = now()) - t0 < 0.2);
		double bw = (double)n * it / (t - t0) / 1e9;
		best = bw > best ? bw : best;
	}
	printf("memcpy %zu bytes: %.2f GB/s\n", n, best);
	return 0;
}
