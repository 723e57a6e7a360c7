// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The npushm authors
/*
 * gemv_bw.c - the decode-step products alone against the read bandwidth, in
 * one process: the seven projections of L TinyLlama-shaped layers (hidden
 * 2048, FFN 5632, 32 heads of 64, 4 KV heads) in one weight format, each
 * called once per round with one input row, as a decode step calls them;
 * before each round, the same bytes read by a plain vectorised sum on the
 * same number of threads. Prints per thread count the median and the best
 * round of each, in GB/s of weight bytes, and their ratios (the median of
 * the per-round ratios: a loaded machine disturbs both passes alike).
 *
 *   gemv_bw FORMAT LAYERS ROUNDS THREADS...
 *
 * FORMAT: f32 (plain rows, npt_gemv_f32), packed-f32, bf16, bf16x3, int8
 * (the layouts npt_pack_weight makes here, npt_gemv_packed), q4
 * (npt_q4_linear).
 * One layer's weights are made and packed once, then copied L times. Built
 * by run.sh with -O3 -march=native, as read_bw.c: the read pass must be
 * vectorised to be bound by the memory.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nptensor.h"

#define NPROJ 7
static const int64_t shapes[NPROJ][2] = {	/* [out, in] */
	{ 2048, 2048 }, { 256, 2048 }, { 256, 2048 }, { 2048, 2048 },
	{ 5632, 2048 }, { 5632, 2048 }, { 2048, 5632 },
};

struct weight {
	const void *data;
	size_t bytes;
	int64_t n, k;
	char tag[NPT_PACK_TAG_MAX];
};

static double clock_s(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double now(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

/* the process's CPU time: on a machine shared with other work, time spent
 * descheduled is not counted */
static double cpu(void)
{
	return clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

/* ------------------------------------------------------------ the read pass */

struct reader {
	const struct weight *w;
	int nw, t, nt;
	double sink;
};

static void *read_part(void *arg)
{
	struct reader *r = arg;
	double s = 0;

	for (int i = 0; i < r->nw; i++) {
		const float *p = r->w[i].data;
		size_t n = r->w[i].bytes / sizeof(float) / 64 * 64;
		size_t b = n / 64 / r->nt * 64 * r->t;
		size_t e = r->t + 1 == r->nt ? n : n / 64 / r->nt * 64 * (r->t + 1);
		float a[16] = { 0 };

		for (size_t c = b; c < e; c += 16)
			for (int l = 0; l < 16; l++)
				a[l] += p[c + l];
		for (int l = 0; l < 16; l++)
			s += a[l];
	}
	r->sink = s;
	return NULL;
}

static double read_pass(const struct weight *w, int nw, int nt)
{
	pthread_t th[64];
	struct reader r[64];
	double t0 = now();

	for (int t = 0; t < nt; t++) {
		r[t] = (struct reader){ w, nw, t, nt, 0 };
		if (t)
			pthread_create(&th[t], NULL, read_part, &r[t]);
	}
	read_part(&r[0]);
	for (int t = 1; t < nt; t++)
		pthread_join(th[t], NULL);
	return now() - t0;
}

/* ------------------------------------------------------------ the weights */

static npt_tensor_t *random_weight(int64_t n, int64_t k, float **data)
{
	int64_t sh[2] = { n, k };
	npt_tensor_t *t;
	float *d = aligned_alloc(64, sizeof(float) * (size_t)(n * k));
	uint64_t s = 0x9e3779b97f4a7c15ull ^ (uint64_t)(n * 31 + k);

	if (!d)
		return NULL;
	for (int64_t i = 0; i < n * k; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		d[i] = ((float)(s >> 40) / (float)(1 << 24) - 0.5f) / sqrtf((float)k);
	}
	if (npt_tensor_from_data(d, NPT_F32, 2, sh, NULL, 0, NULL, NULL, &t)) {
		free(d);
		return NULL;
	}
	*data = d;
	return t;
}

/* one layer's projections in @fmt into @w; 0 or -1 with a message */
static int make_layer(const char *fmt, struct weight *w)
{
	for (int i = 0; i < NPROJ; i++) {
		int64_t n = shapes[i][0], k = shapes[i][1];
		npt_dtype_t dt = !strcmp(fmt, "bf16") ? NPT_BF16 : !strcmp(fmt, "int8") ? NPT_I8 :
				 NPT_F32;
		float *f;
		npt_tensor_t *t = random_weight(n, k, &f);
		void *dst;

		if (!t)
			return -1;
		w[i] = (struct weight){ .n = n, .k = k };
		if (!strcmp(fmt, "f32")) {
			w[i].data = f;
			w[i].bytes = sizeof(float) * (size_t)(n * k);
			npt_tensor_free(t);
			continue;
		}
		if (!strcmp(fmt, "q4")) {
			if (npt_q4_size(n, k, &w[i].bytes))
				return -1;
			dst = aligned_alloc(64, (w[i].bytes + 63) / 64 * 64);
			if (!dst || npt_q4_pack(t, dst, w[i].bytes))
				return -1;
		} else {
			if (!strcmp(fmt, "bf16x3") ?
			    npt_pack_query_bf16x3(n, k, w[i].tag, sizeof(w[i].tag), &w[i].bytes) :
			    npt_pack_query(dt, n, k, w[i].tag, sizeof(w[i].tag), &w[i].bytes)) {
				fprintf(stderr, "gemv_bw: no %s layout here: %s\n", fmt,
					npt_last_error());
				return -1;
			}
			dst = aligned_alloc(64, (w[i].bytes + 63) / 64 * 64);
			if (!dst || npt_pack_weight(t, w[i].tag, dst, w[i].bytes))
				return -1;
		}
		w[i].data = dst;
		npt_tensor_free(t);
		free(f);
	}
	return 0;
}

static int product(const char *fmt, const struct weight *w, const float *x, float *y)
{
	if (!strcmp(fmt, "f32"))
		return npt_gemv_f32(x, 1, w->data, w->k, w->n, w->k, y);
	if (!strcmp(fmt, "q4"))
		return npt_q4_linear(x, 1, w->data, w->n, w->k, y);
	return npt_gemv_packed(x, 1, w->tag, w->data, w->bytes, w->n, w->k, y);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const char *fmt = argc > 1 ? argv[1] : "f32";
	int layers = argc > 2 ? atoi(argv[2]) : 4, rounds = argc > 3 ? atoi(argv[3]) : 9;
	struct weight *w;
	float *x, *y;
	size_t total = 0;

	if (argc < 5 || layers < 1 || rounds < 1) {
		fprintf(stderr, "usage: gemv_bw f32|packed-f32|bf16|bf16x3|int8|q4 LAYERS ROUNDS "
			"THREADS...\n");
		return 2;
	}
	w = calloc((size_t)layers * NPROJ, sizeof(*w));
	x = malloc(sizeof(float) * 5632);
	y = malloc(sizeof(float) * 5632);
	if (!w || !x || !y || make_layer(fmt, w))
		return 1;
	for (int l = 1; l < layers; l++)
		for (int i = 0; i < NPROJ; i++) {
			void *d = aligned_alloc(64, (w[i].bytes + 63) / 64 * 64);

			if (!d)
				return 1;
			memcpy(d, w[i].data, w[i].bytes);
			w[l * NPROJ + i] = w[i];
			w[l * NPROJ + i].data = d;
		}
	for (int i = 0; i < layers * NPROJ; i++)
		total += w[i].bytes;
	for (int i = 0; i < 5632; i++)
		x[i] = sinf((float)i);
	printf("%s: %d layers, %.1f MiB of weights, %d rounds\n", fmt, layers, total / 1048576.0,
	       rounds);
	printf("%3s | %9s %9s %7s | %9s %9s %7s   (GB/s of weight bytes, medians)\n", "thr",
	       "read", "product", "ratio", "read cpu", "prod cpu", "ratio");
	for (int a = 4; a < argc; a++) {
		int nt = atoi(argv[a]);
		double *t[6];	/* wall read, wall product, cpu read, cpu product, ratios */

		for (int i = 0; i < 6; i++)
			t[i] = calloc(rounds, sizeof(double));
		if (nt < 1 || nt > 64 || !t[5] || npt_set_num_threads(nt))
			return 2;
		read_pass(w, layers * NPROJ, nt);	/* warm-up */
		for (int i = 0; i < layers * NPROJ; i++)
			if (product(fmt, &w[i], x, y)) {
				fprintf(stderr, "gemv_bw: %s\n", npt_last_error());
				return 1;
			}
		for (int r = 0; r < rounds; r++) {
			double t0 = now(), c0 = cpu();

			read_pass(w, layers * NPROJ, nt);
			t[0][r] = now() - t0;
			t[2][r] = (cpu() - c0) / nt;
			t0 = now();
			c0 = cpu();
			for (int i = 0; i < layers * NPROJ; i++)
				product(fmt, &w[i], x, y);
			t[1][r] = now() - t0;
			t[3][r] = (cpu() - c0) / nt;
			t[4][r] = t[0][r] / t[1][r];
			t[5][r] = t[2][r] / t[3][r];
		}
		for (int i = 0; i < 6; i++)
			qsort(t[i], rounds, sizeof(double), cmp);
		printf("%3d | %9.2f %9.2f %6.0f%% | %9.2f %9.2f %6.0f%%\n", nt,
		       total / t[0][rounds / 2] / 1e9, total / t[1][rounds / 2] / 1e9,
		       100 * t[4][rounds / 2], total / t[2][rounds / 2] / 1e9,
		       total / t[3][rounds / 2] / 1e9, 100 * t[5][rounds / 2]);
		for (int i = 0; i < 6; i++)
			free(t[i]);
	}
	return 0;
}
