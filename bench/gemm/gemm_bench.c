/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * gemm_bench.c - npushm-bench-gemm: GFLOP/s of npt_linear on BERT's linear
 * shapes against the machine's FMA peak measured in the same run.
 *
 *   npushm-bench-gemm [--threads 1,2] [--seconds S] [--rounds R] [--weights plain|f32|bf16|int8]
 *                     [--act none|gelu]
 *
 * For each thread count: the FMA peak (a register-only loop of independent
 * fused multiply-adds, 512-bit where the CPU has AVX-512F, else 256-bit FMA,
 * one per thread; 256-bit too when DNNL_MAX_CPU_ISA caps oneDNN below
 * AVX-512, to measure an AVX2-only machine's path on this one), then y = x @ W^T + b for M = 1024 and 128 rows and
 * (N, K) in {768, 3072}^2 plus the fused QKV width 2304; each figure is the
 * best of R rounds of S seconds, rounds interleaved with peak runs so a
 * busy machine moves both. Prints the GEMM backend (npt_gemm_backend), the
 * CPU and the environment's OPENBLAS_CORETYPE. --weights: plain (the
 * default) or packed once (npt_pack_weight) in f32, bf16 or int8 before the
 * timing (int8 and bf16 figures are operations per second against the f32
 * FMA peak, whose ratio can pass 100 %). --act gelu: the fused GELU of an
 * FFN's first layer, counted as no FLOP. A measuring tool, not a test: it
 * asserts nothing (use NPT_GEMM=openblas to measure the fallback).
 */
#include <immintrin.h>
#include <nptensor.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define ACC 16

/* DNNL_MAX_CPU_ISA caps oneDNN below AVX-512 (AVX2, AVX, SSE41): the run then
 * measures what an AVX2-only machine gets, against the 256-bit peak */
static int capped_below_avx512(void)
{
	const char *isa = getenv("DNNL_MAX_CPU_ISA");

	return isa && *isa && strncasecmp(isa, "avx512", 6) && strncasecmp(isa, "all", 3);
}

/* flops done in about @sec seconds, 512-bit FMAs */
__attribute__((target("avx512f"))) static double fma512(double sec)
{
	__m512 a[ACC], b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
	double t0 = now(), n = 0;
	float out[16];

	for (int i = 0; i < ACC; i++)
		a[i] = _mm512_set1_ps((float)i);
	do {
		for (int r = 0; r < 4096; r++)
#pragma GCC unroll 16
			for (int i = 0; i < ACC; i++)
				a[i] = _mm512_fmadd_ps(a[i], b, c);
		n += 4096.0 * ACC * 32;
	} while (now() - t0 < sec);
	for (int i = 1; i < ACC; i++)
		a[0] = _mm512_add_ps(a[0], a[i]);
	_mm512_storeu_ps(out, a[0]);
	return out[0] == 12345.0f ? 0 : n;    /* keeps the loop */
}

__attribute__((target("avx2,fma"))) static double fma256(double sec)
{
	__m256 a[ACC], b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
	double t0 = now(), n = 0;
	float out[8];

	for (int i = 0; i < ACC; i++)
		a[i] = _mm256_set1_ps((float)i);
	do {
		for (int r = 0; r < 4096; r++)
#pragma GCC unroll 16
			for (int i = 0; i < ACC; i++)
				a[i] = _mm256_fmadd_ps(a[i], b, c);
		n += 4096.0 * ACC * 16;
	} while (now() - t0 < sec);
	for (int i = 1; i < ACC; i++)
		a[0] = _mm256_add_ps(a[0], a[i]);
	_mm256_storeu_ps(out, a[0]);
	return out[0] == 12345.0f ? 0 : n;
}

static int has512;
static double peak_sec;
static int packed_dt = -1;   /* -1: plain weights */
static npt_activation_t act = NPT_ACT_NONE;	/* --act */

static void *peak_thread(void *arg)
{
	double *flops = arg;

	*flops = has512 ? fma512(peak_sec) : fma256(peak_sec);
	return NULL;
}

static double peak(int threads, double sec)
{
	pthread_t tid[64];
	double flops[64], sum = 0, t0 = now(), dt;

	peak_sec = sec;
	for (int i = 0; i < threads; i++)
		pthread_create(&tid[i], NULL, peak_thread, &flops[i]);
	for (int i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		sum += flops[i];
	}
	dt = now() - t0;
	return sum / dt / 1e9;
}

static int check(npt_status_t s, const char *what)
{
	if (s)
		fprintf(stderr, "npushm-bench-gemm: %s: %s\n", what, npt_last_error());
	return s != NPT_OK;
}

/* GFLOP/s of linear on [M, K] x [N, K]^T + b over about @sec seconds */
static double gemm(int64_t M, int64_t N, int64_t K, double sec)
{
	int64_t xs[2] = { M, K }, ws[2] = { N, K }, ys[2] = { M, N }, bs[1] = { N };
	npt_tensor_t *x = NULL, *w = NULL, *b = NULL, *y = NULL, *o = NULL;
	double t0, n = 0, r = -1;
	float *px, *pw, *pb;
	void *packed = NULL;

	if (check(npt_tensor_empty(NPT_F32, 2, xs, &x), "allocating x") ||
	    check(npt_tensor_empty(NPT_F32, 2, ws, &w), "allocating W") ||
	    check(npt_tensor_empty(NPT_F32, 1, bs, &b), "allocating b") ||
	    check(npt_tensor_empty(NPT_F32, 2, ys, &y), "allocating y"))
		goto out;
	if (check(npt_tensor_data(x, (void **)&px), "x") ||
	    check(npt_tensor_data(w, (void **)&pw), "W") ||
	    check(npt_tensor_data(b, (void **)&pb), "b"))
		goto out;
	for (int64_t i = 0; i < M * K; i++)
		px[i] = (float)(i % 17) * 0.01f;
	for (int64_t i = 0; i < N * K; i++)
		pw[i] = (float)(i % 13) * 0.01f;
	memset(pb, 0, (size_t)N * sizeof(float));
	if (packed_dt >= 0) {
		char tag[NPT_PACK_TAG_MAX];
		size_t nb;

		if (check(npt_pack_query((npt_dtype_t)packed_dt, N, K, tag, sizeof(tag), &nb),
			  "pack_query") ||
		    !(packed = aligned_alloc(64, (nb + 63) / 64 * 64)) ||
		    check(npt_pack_weight(w, tag, packed, nb), "packing") ||
		    check(npt_tensor_set_packed(w, tag, packed, nb), "set_packed"))
			goto out;
	}
	t0 = now();
	for (int warm = 1;; warm = 0) {
		if (check(npt_linear(x, w, b, act, &o), "linear") ||
		    check(npt_tensor_eval_into(o, y), "evaluating linear"))
			goto out;
		npt_tensor_free(o);
		o = NULL;
		if (warm) {
			t0 = now();
			continue;
		}
		n += 2.0 * (double)M * (double)N * (double)K;
		if (now() - t0 >= sec)
			break;
	}
	r = n / (now() - t0) / 1e9;
out:
	npt_tensor_free(o);
	npt_tensor_free(x);
	npt_tensor_free(w);
	npt_tensor_free(b);
	npt_tensor_free(y);
	free(packed);
	return r;
}

int main(int argc, char **argv)
{
	static const int64_t shapes[][3] = {
		{ 1024, 768, 768 }, { 1024, 2304, 768 }, { 1024, 3072, 768 }, { 1024, 768, 3072 },
		{ 128, 768, 768 }, { 128, 2304, 768 }, { 128, 3072, 768 }, { 128, 768, 3072 },
	};
	const char *threads_arg = "1,2", *ct = getenv("OPENBLAS_CORETYPE"), *weights = "plain";
	const char *act_name = "none";
	double sec = 0.5;
	int rounds = 3;
	char list[64], *save = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
			threads_arg = argv[++i];
		} else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			sec = atof(argv[++i]);
		} else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
			rounds = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--weights") && i + 1 < argc) {
			weights = argv[++i];
			packed_dt = !strcmp(weights, "plain") ? -1 : !strcmp(weights, "f32") ? NPT_F32 :
				    !strcmp(weights, "bf16") ? NPT_BF16 :
				    !strcmp(weights, "int8") ? NPT_I8 : -2;
			if (packed_dt == -2) {
				fprintf(stderr, "npushm-bench-gemm: --weights plain, f32, bf16 or int8\n");
				return 2;
			}
		} else if (!strcmp(argv[i], "--act") && i + 1 < argc) {
			act_name = argv[++i];
			if (!strcmp(act_name, "none") || !strcmp(act_name, "gelu")) {
				act = !strcmp(act_name, "gelu") ? NPT_ACT_GELU : NPT_ACT_NONE;
			} else {
				fprintf(stderr, "npushm-bench-gemm: --act none or gelu\n");
				return 2;
			}
		} else if (!strcmp(argv[i], "--version")) {
			printf("npushm-bench-gemm (npushm) %s\n", NPUSHM_VERSION);
			return 0;
		} else {
			bool help = !strcmp(argv[i], "--help");

			fprintf(help ? stdout : stderr,
				"usage: npushm-bench-gemm [--threads 1,2] [--seconds S] "
				"[--rounds R] [--weights plain|f32|bf16|int8] [--act none|gelu]\n"
				"GFLOP/s of the GEMM on BERT's linear shapes against an FMA loop of the same run.\n");
			return help ? 0 : 2;
		}
	}
	if (sec <= 0 || rounds < 1) {
		fprintf(stderr, "npushm-bench-gemm: --seconds and --rounds must be positive\n");
		return 2;
	}
	__builtin_cpu_init();
	has512 = __builtin_cpu_supports("avx512f") && !capped_below_avx512();
	if (!has512 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
		fprintf(stderr, "npushm-bench-gemm: this CPU has neither AVX-512F nor AVX2+FMA; the "
			"peak loop needs one of them\n");
		return 1;
	}
	gemm(128, 768, 768, 0.01);      /* first use picks the backend */
	printf("# GEMM backend: %s; peak loop: %s FMA; OPENBLAS_CORETYPE=%s\n",
	       npt_gemm_backend(), has512 ? "512-bit" : "256-bit", ct ? ct : "(unset)");
	printf("# each figure: best of %d rounds of %.2f s; y = %s(x @ W^T + b) (npt_linear), "
	       "weights %s%s\n", rounds, sec, act == NPT_ACT_GELU ? "GELU" : "", weights,
	       packed_dt >= 0 ? " (packed once)" : "");
	printf("%-7s %5s %5s %5s %10s %10s %7s\n", "threads", "M", "N", "K", "GFLOP/s",
	       "peak", "%peak");
	snprintf(list, sizeof(list), "%s", threads_arg);
	for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int t = atoi(tok);

		if (t < 1 || t > 64 || check(npt_set_num_threads(t), "setting threads")) {
			fprintf(stderr, "npushm-bench-gemm: bad thread count '%s' (1..64)\n", tok);
			return 2;
		}
		for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
			double best = 0, pk = 0;

			for (int r = 0; r < rounds; r++) {
				double p = peak(t, sec / 2), g = gemm(shapes[s][0], shapes[s][1],
								      shapes[s][2], sec);

				if (g < 0)
					return 1;
				best = g > best ? g : best;
				pk = p > pk ? p : pk;
			}
			printf("%-7d %5lld %5lld %5lld %10.1f %10.1f %6.1f%%\n", t,
			       (long long)shapes[s][0], (long long)shapes[s][1],
			       (long long)shapes[s][2], best, pk, 100.0 * best / pk);
		}
	}
	printf("# backend after the run: %s\n", npt_gemm_backend());
	return 0;
}
