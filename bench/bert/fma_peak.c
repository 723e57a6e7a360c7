// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The npushm authors
/*
 * fma_peak.c - the machine's arithmetic peak for the BERT benchmark, measured
 * in the same run as the engines: independent chains of fused multiply-adds
 * held in registers (no memory traffic), 512-bit where the CPU has AVX-512F,
 * 256-bit (AVX2 + FMA) otherwise, chosen at run time from CPUID; on 1 and on
 * THREADS threads at once (best of many short trials). For information it also measures the reduced-
 * precision dot products the CPU has: bf16 (AVX512_BF16 vdpbf16ps) and int8
 * (AVX512_VNNI or AVX-VNNI vpdpbusd). Prints one JSON object:
 *
 *   {"fp32": {"isa": "avx512f", "gflops": {"1": G1, "2": G2}}, "fp32_256": ...,
 *    "bf16": ... or null, "int8": ... or null}
 *
 * fp32 is the best fp32 width (the peak); fp32_256 the 256-bit figure alone.
 * gflops counts 2 operations per multiply-add lane (int8: GOP/s).
 *
 *     fma-peak [THREADS]    (default 2; the 1-thread figure is always taken)
 *     fma-peak --help | --version
 */
#include <cpuid.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef NPUSHM_VERSION
#define NPUSHM_VERSION "(unknown version)"
#endif

typedef double (*kernel_fn)(long iters);

/*
 * Distinct starting values the compiler cannot see, so that it can neither
 * merge the chains nor fold the loop.
 */
static volatile float seed_f[16] = { 1.00f, 1.01f, 1.02f, 1.03f, 1.04f, 1.05f, 1.06f, 1.07f,
				     1.08f, 1.09f, 1.10f, 1.11f, 1.12f, 1.13f, 1.14f, 1.15f };
static volatile int seed_i[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/*
 * Each kernel keeps N (16 or 12) accumulators a0..a(N-1) in registers and
 * updates each once per iteration with op; the chains are independent, so
 * the loop runs at the units' throughput rather than their latency. The sum
 * is returned so that nothing is optimised away. 512-bit kernels use 16
 * chains (32 zmm registers), 256-bit ones 12 (16 ymm: 12 + the operands).
 */
#define STEP12(op) do { \
	a0 = op(a0); a1 = op(a1); a2 = op(a2); a3 = op(a3); a4 = op(a4); a5 = op(a5); \
	a6 = op(a6); a7 = op(a7); a8 = op(a8); a9 = op(a9); a10 = op(a10); a11 = op(a11); \
} while (0)
#define STEP16(op) do { \
	STEP12(op); a12 = op(a12); a13 = op(a13); a14 = op(a14); a15 = op(a15); \
} while (0)
#define SUM12(add) add(add(add(add(a0, a1), add(a2, a3)), add(a4, a5)), \
		       add(add(add(a6, a7), add(a8, a9)), add(a10, a11)))
#define SUM16(add) add(add(add(add(a0, a1), add(a2, a3)), add(add(a4, a5), add(a6, a7))), \
		       add(add(add(a8, a9), add(a10, a11)), add(add(a12, a13), add(a14, a15))))
#define SEED12(T, set1, s) \
	T a0 = set1(s[0]), a1 = set1(s[1]), a2 = set1(s[2]), a3 = set1(s[3]); \
	T a4 = set1(s[4]), a5 = set1(s[5]), a6 = set1(s[6]), a7 = set1(s[7]); \
	T a8 = set1(s[8]), a9 = set1(s[9]), a10 = set1(s[10]), a11 = set1(s[11])
#define SEED16(T, set1, s) \
	SEED12(T, set1, s); \
	T a12 = set1(s[12]), a13 = set1(s[13]), a14 = set1(s[14]), a15 = set1(s[15])

/* A kernel `name` for target isa: N chains of vector type T (lanes of type L). */
#define KERNEL(name, isa, N, T, L, set1, seed, operands, op, add, store) \
__attribute__((target(isa))) static double name(long iters) \
{ \
	operands; \
	SEED##N(T, set1, seed); \
	L out[sizeof(T) / sizeof(L)]; \
\
	for (long i = 0; i < iters; i++) \
		STEP##N(op); \
	store((void *)out, SUM##N(add)); \
	return out[0]; \
}

#define FMA512(v) _mm512_fmadd_ps(v, m, c)
KERNEL(fp32_512, "avx512f", 16, __m512, float, _mm512_set1_ps, seed_f,
       __m512 m = _mm512_set1_ps(0.999999f); __m512 c = _mm512_set1_ps(1e-7f),
       FMA512, _mm512_add_ps, _mm512_storeu_ps)

#define FMA256(v) _mm256_fmadd_ps(v, m, c)
KERNEL(fp32_256, "avx2,fma", 12, __m256, float, _mm256_set1_ps, seed_f,
       __m256 m = _mm256_set1_ps(0.999999f); __m256 c = _mm256_set1_ps(1e-7f),
       FMA256, _mm256_add_ps, _mm256_storeu_ps)

/* bf16 pairs 1.0 x ~6e-8 */
#define DPBF16(v) _mm512_dpbf16_ps(v, x, y)
KERNEL(bf16_512, "avx512f,avx512bf16", 16, __m512, float, _mm512_set1_ps, seed_f,
       __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80); __m512bh y = (__m512bh)_mm512_set1_epi16(0x3380),
       DPBF16, _mm512_add_ps, _mm512_storeu_ps)

#define DPBUSD512(v) _mm512_dpbusd_epi32(v, x, y)
KERNEL(int8_512, "avx512f,avx512vnni", 16, __m512i, int32_t, _mm512_set1_epi32, seed_i,
       __m512i x = _mm512_set1_epi8(1); __m512i y = _mm512_set1_epi8(1),
       DPBUSD512, _mm512_add_epi32, _mm512_storeu_si512)

#define DPBUSD256(v) _mm256_dpbusd_avx_epi32(v, x, y)
KERNEL(int8_256, "avx2,avxvnni", 12, __m256i, int32_t, _mm256_set1_epi32, seed_i,
       __m256i x = _mm256_set1_epi8(1); __m256i y = _mm256_set1_epi8(1),
       DPBUSD256, _mm256_add_epi32, _mm256_storeu_si256)

struct kernel {
	const char *key, *isa;
	kernel_fn fn;
	double ops_per_iter;	/* chains x lanes x 2 (x pairs per lane) */
	int ok;
};

struct job {
	kernel_fn fn;
	long iters;
	pthread_barrier_t *start;
	double sink, t0, t1;
};

static void *worker(void *p)
{
	struct job *j = p;

	pthread_barrier_wait(j->start);
	j->t0 = now();
	j->sink = j->fn(j->iters);
	j->t1 = now();
	return NULL;
}

/*
 * Wall time of `threads` threads each running fn(iters) from one barrier:
 * from the first thread's start to the last thread's end, as the threads
 * themselves see it (the main thread may be descheduled).
 */
static int timed(kernel_fn fn, long iters, int threads, double *secs, double *sink)
{
	pthread_t tid[threads];
	struct job jobs[threads];
	pthread_barrier_t start;
	double t0 = 0, t1 = 0;
	int i, n;

	if (pthread_barrier_init(&start, NULL, threads + 1))
		return -1;
	for (n = 0; n < threads; n++) {
		jobs[n] = (struct job){ .fn = fn, .iters = iters, .start = &start };
		if (pthread_create(&tid[n], NULL, worker, &jobs[n]))
			break;
	}
	if (n < threads) {
		fprintf(stderr, "fma-peak: cannot start thread %d of %d\n", n + 1, threads);
		exit(1);
	}
	pthread_barrier_wait(&start);
	for (i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		*sink += jobs[i].sink;
		if (!i || jobs[i].t0 < t0)
			t0 = jobs[i].t0;
		if (!i || jobs[i].t1 > t1)
			t1 = jobs[i].t1;
	}
	*secs = t1 - t0;
	pthread_barrier_destroy(&start);
	return 0;
}

/*
 * Best GFLOP/s (GOP/s) of 151 trials of about 2 ms each: short trials, so
 * that on a shared machine some of them run undisturbed.
 */
static double measure(const struct kernel *k, int threads, double *sink)
{
	long iters = 1 << 16;
	double best = 0, s;
	int trial;

	for (;;) {	/* calibrate on one thread: a trial of >= 2 ms */
		timed(k->fn, iters, 1, &s, sink);
		if (s >= 0.002 || iters > (1L << 40))
			break;
		iters = s > 0.0002 ? (long)(iters * 0.0025 / s) : iters * 16;
	}
	for (trial = 0; trial < 151; trial++) {
		double g;

		timed(k->fn, iters, threads, &s, sink);
		g = k->ops_per_iter * iters * threads / s / 1e9;
		if (g > best)
			best = g;
	}
	return best;
}

static void print_kernel(const char *key, const struct kernel *k, int threads, double *sink, int comma)
{
	if (!k) {
		printf("\"%s\": null%s", key, comma ? ", " : "");
		return;
	}
	printf("\"%s\": {\"isa\": \"%s\", \"gflops\": {\"1\": %.1f", key, k->isa, measure(k, 1, sink));
	if (threads > 1)
		printf(", \"%d\": %.1f", threads, measure(k, threads, sink));
	printf("}}%s", comma ? ", " : "");
}

/* AVX-VNNI (CPUID.(7,1):EAX bit 4): not every compiler's __builtin_cpu_supports knows it. */
static int has_avxvnni(void)
{
	unsigned int a, b, c, d;

	return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 4 & 1);
}

int main(int argc, char **argv)
{
	struct kernel ks[] = {
		{ "fp32", "avx512f", fp32_512, 16 * 16 * 2, 0 },
		{ "fp32_256", "avx2+fma", fp32_256, 12 * 8 * 2, 0 },
		{ "bf16", "avx512_bf16", bf16_512, 16 * 16 * 2 * 2, 0 },
		{ "int8", "avx512_vnni", int8_512, 16 * 16 * 4 * 2, 0 },
		{ "int8", "avx_vnni", int8_256, 12 * 8 * 4 * 2, 0 },
	};
	const struct kernel *fp32 = NULL, *bf16 = NULL, *int8 = NULL;
	double sink = 0, g512 = 0, g256;
	int threads;

	if (argc > 1 && !strcmp(argv[1], "--help")) {
		printf("usage: fma-peak [THREADS]  (1..1024, default 2)\n"
		       "The machine's arithmetic peak for the BERT benchmark: independent FMA chains in\n"
		       "registers (512-bit with AVX-512F, else 256-bit AVX2+FMA) on 1 and THREADS\n"
		       "threads, and the bf16/int8 dot-product rates the CPU has, as one JSON object.\n");
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--version")) {
		printf("fma-peak %s\n", NPUSHM_VERSION);
		return 0;
	}
	threads = argc > 1 ? atoi(argv[1]) : 2;
	if (threads < 1 || threads > 1024) {
		fprintf(stderr, "usage: fma-peak [THREADS]  (1..1024, default 2)\n");
		return 2;
	}
	__builtin_cpu_init();
	ks[0].ok = __builtin_cpu_supports("avx512f");
	ks[1].ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
	ks[2].ok = ks[0].ok && __builtin_cpu_supports("avx512bf16");
	ks[3].ok = ks[0].ok && __builtin_cpu_supports("avx512vnni");
	ks[4].ok = ks[1].ok && has_avxvnni();
	if (!ks[1].ok) {
		fprintf(stderr, "fma-peak: this CPU has no AVX2+FMA; no FMA peak to measure\n");
		return 1;
	}
	/* The peak is the faster fp32 width (some CPUs run 512-bit at half rate). */
	g256 = measure(&ks[1], 1, &sink);
	if (ks[0].ok)
		g512 = measure(&ks[0], 1, &sink);
	fp32 = g512 > g256 ? &ks[0] : &ks[1];
	bf16 = ks[2].ok ? &ks[2] : NULL;
	int8 = ks[3].ok ? &ks[3] : ks[4].ok ? &ks[4] : NULL;

	printf("{");
	print_kernel("fp32", fp32, threads, &sink, 1);
	print_kernel("fp32_256", &ks[1], threads, &sink, 1);
	print_kernel("bf16", bf16, threads, &sink, 1);
	print_kernel("int8", int8, threads, &sink, 1);
	printf("\"sink\": %g}\n", sink > 0 ? 1.0 : 0.0);
	return 0;
}
