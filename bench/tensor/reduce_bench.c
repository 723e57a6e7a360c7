/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * reduce_bench.c - time of the tensor library's reductions, layernorm and
 * softmax on fixed shapes, for several builds or settings of the library
 * loaded side by side in one process and called in turn, one evaluation
 * each, so that every configuration meets the same machine load (the host
 * is shared); plus a plain C parallel sum of the same 64 MiB (the
 * memory-read ceiling), also in turn.
 *
 *   reduce_bench THREADS SECONDS LIB[=MODE] ...
 *
 * LIB is a path to a libnptensor.so (each one is loaded privately, so give
 * two different files to compare two settings of one build); MODE is
 * independent or threads, set through npt_set_repro_mode (a build without
 * that call has one behaviour; give no MODE). $REDUCE_BENCH_CASES (names
 * separated by commas) runs only those cases. Output: one line per case and
 * configuration, "case<TAB>config<TAB>min_ms<TAB>median_ms<TAB>reps<TAB>
 * bytes_read<TAB>description" (reduce_run.sh turns them into a table).
 */
#define _GNU_SOURCE
#include "nptensor.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_CFG 6
#define MAX_REPS 4000

typedef struct {
	const char *label;
	void *dl;
	npt_status_t (*empty)(npt_dtype_t, int, const int64_t *, npt_tensor_t **);
	npt_status_t (*data)(npt_tensor_t *, void **);
	void (*tfree)(npt_tensor_t *);
	npt_status_t (*eval)(npt_tensor_t *);
	npt_status_t (*reduce)(npt_reduce_op_t, npt_tensor_t *, int, const int *, bool,
			       npt_tensor_t **);
	npt_status_t (*to_shape)(npt_tensor_t *, int, const int64_t *, npt_tensor_t **);
	npt_status_t (*mul)(npt_tensor_t *, npt_tensor_t *, npt_tensor_t **);
	npt_status_t (*layernorm)(npt_tensor_t *, int, npt_tensor_t *, npt_tensor_t *, double,
				  npt_tensor_t **);
	npt_status_t (*softmax)(npt_tensor_t *, int, npt_tensor_t **);
	npt_status_t (*threads)(int);
	const char *(*last_error)(void);
	npt_tensor_t *in[16];
} lib_t;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void *sym(void *dl, const char *name)
{
	void *p = dlsym(dl, name);

	if (!p) {
		fprintf(stderr, "reduce_bench: %s: %s\n", name, dlerror());
		exit(1);
	}
	return p;
}

static void load(lib_t *l, char *spec, int nt)
{
	char *mode = strchr(spec, '=');

	if (mode)
		*mode++ = 0;
	l->dl = dlopen(spec, RTLD_NOW | RTLD_LOCAL);
	if (!l->dl) {
		fprintf(stderr, "reduce_bench: %s\n", dlerror());
		exit(1);
	}
	*(void **)&l->empty = sym(l->dl, "npt_tensor_empty");
	*(void **)&l->data = sym(l->dl, "npt_tensor_data");
	*(void **)&l->tfree = sym(l->dl, "npt_tensor_free");
	*(void **)&l->eval = sym(l->dl, "npt_tensor_eval");
	*(void **)&l->reduce = sym(l->dl, "npt_reduce");
	*(void **)&l->to_shape = sym(l->dl, "npt_sum_to_shape");
	*(void **)&l->mul = sym(l->dl, "npt_mul");
	*(void **)&l->layernorm = sym(l->dl, "npt_layernorm");
	*(void **)&l->softmax = sym(l->dl, "npt_softmax");
	*(void **)&l->threads = sym(l->dl, "npt_set_num_threads");
	*(void **)&l->last_error = sym(l->dl, "npt_last_error");
	if (l->threads(nt)) {
		fprintf(stderr, "reduce_bench: %s\n", l->last_error());
		exit(1);
	}
	if (mode) {
		npt_status_t (*set)(int) = sym(l->dl, "npt_set_repro_mode");

		if (set(!strcmp(mode, "threads") ? 1 : !strcmp(mode, "independent") ? 0 : 99)) {
			fprintf(stderr, "reduce_bench: %s\n", l->last_error());
			exit(1);
		}
	}
	l->label = mode ? mode : "default";
}

static npt_tensor_t *filled(lib_t *l, npt_dtype_t dt, int nd, const int64_t *shape,
			    unsigned seed)
{
	npt_tensor_t *t = NULL;
	void *p;

	if (l->empty(dt, nd, shape, &t) || l->data(t, &p)) {
		fprintf(stderr, "reduce_bench: %s\n", l->last_error());
		exit(1);
	}
	srand(seed);
	int64_t n = 1;

	for (int i = 0; i < nd; i++)
		n *= shape[i];
	for (int64_t i = 0; i < n; i++) {
		double v = (double)rand() / RAND_MAX * 2 - 1;

		if (dt == NPT_F64)
			((double *)p)[i] = v;
		else
			((float *)p)[i] = (float)v;
	}
	return t;
}

enum { X16M, X1M, X64K16, X4K1K, X64X256K, XBIG, XBERT, W768, B768, A4M, B4M, D8M, ATT, NIN };

static void inputs(lib_t *l)
{
	static const int64_t s16m[1] = { 16 << 20 }, s1m[1] = { 1 << 20 },
		s64k16[2] = { 65536, 16 }, s4k1k[2] = { 4096, 1024 }, s64x256k[2] = { 64, 262144 },
		sbig[3] = { 64, 512, 768 }, sbert[3] = { 8, 128, 768 }, s768[1] = { 768 },
		s4m[1] = { 4 << 20 }, s8m[1] = { 8 << 20 }, satt[3] = { 96, 128, 128 };

	l->in[X16M] = filled(l, NPT_F32, 1, s16m, 1);
	l->in[X1M] = filled(l, NPT_F32, 1, s1m, 2);
	l->in[X64K16] = filled(l, NPT_F32, 2, s64k16, 3);
	l->in[X4K1K] = filled(l, NPT_F32, 2, s4k1k, 4);
	l->in[X64X256K] = filled(l, NPT_F32, 2, s64x256k, 5);
	l->in[XBIG] = filled(l, NPT_F32, 3, sbig, 6);
	l->in[XBERT] = filled(l, NPT_F32, 3, sbert, 7);
	l->in[W768] = filled(l, NPT_F32, 1, s768, 8);
	l->in[B768] = filled(l, NPT_F32, 1, s768, 9);
	l->in[A4M] = filled(l, NPT_F32, 1, s4m, 10);
	l->in[B4M] = filled(l, NPT_F32, 1, s4m, 11);
	l->in[D8M] = filled(l, NPT_F64, 1, s8m, 12);
	l->in[ATT] = filled(l, NPT_F32, 3, satt, 13);
}

enum { C_SUM16M, C_SUM1M, C_MEAN64KX16, C_SUM4KX1K, C_SUM64X256K, C_SUMLAST, C_TOROW,
       C_MEANLAST, C_PROLOGUE, C_SUMF64, C_LN, C_LNBIG, C_SOFTMAX, NCASES };
static const struct {
	const char *name, *desc;
	double bytes;
} cases[NCASES] = {
	{ "sum16M", "sum of 16 Mi f32 (64 MiB, all axes)", 64 << 20 },
	{ "sum1M", "sum of 1 Mi f32 (4 MiB)", 4 << 20 },
	{ "mean64kx16", "mean over axis 0 of (65536,16) f32", 4 << 20 },
	{ "sum4kx1k", "sum over axis 0 of (4096,1024) f32", 16 << 20 },
	{ "sum64x256k", "sum over axis 0 of (64,262144) f32", 64 << 20 },
	{ "sumlast", "sum over axis -1 of (4096,1024) f32", 16 << 20 },
	{ "to_row", "sum_to_shape (64,512,768)->(768,) f32", 96 << 20 },
	{ "meanlast", "mean over axis -1 keepdims of (8,128,768) f32", 3 << 20 },
	{ "prologue", "sum(x*y), fused prologue, 2 x 4 Mi f32", 32 << 20 },
	{ "sumf64", "sum of 8 Mi f64 (64 MiB)", 64 << 20 },
	{ "layernorm", "layernorm (8,128,768) f32, weight and bias", 3 << 20 },
	{ "layernormbig", "layernorm (64,512,768) f32, weight and bias", 96 << 20 },
	{ "softmax", "softmax over the last axis of (96,128,128) f32", 6 << 20 },
};

static npt_status_t build(lib_t *l, int c, npt_tensor_t **o)
{
	npt_tensor_t **in = l->in, *m = NULL;
	int64_t row = 768;
	npt_status_t s;

	switch (c) {
	case C_SUM16M: return l->reduce(NPT_RED_SUM, in[X16M], -1, NULL, false, o);
	case C_SUM1M: return l->reduce(NPT_RED_SUM, in[X1M], -1, NULL, false, o);
	case C_MEAN64KX16: return l->reduce(NPT_RED_MEAN, in[X64K16], 1, (int[]){ 0 }, false, o);
	case C_SUM4KX1K: return l->reduce(NPT_RED_SUM, in[X4K1K], 1, (int[]){ 0 }, false, o);
	case C_SUM64X256K: return l->reduce(NPT_RED_SUM, in[X64X256K], 1, (int[]){ 0 }, false, o);
	case C_SUMLAST: return l->reduce(NPT_RED_SUM, in[X4K1K], 1, (int[]){ -1 }, false, o);
	case C_TOROW: return l->to_shape(in[XBIG], 1, &row, o);
	case C_MEANLAST: return l->reduce(NPT_RED_MEAN, in[XBERT], 1, (int[]){ -1 }, true, o);
	case C_PROLOGUE:
		s = l->mul(in[A4M], in[B4M], &m);
		if (!s)
			s = l->reduce(NPT_RED_SUM, m, -1, NULL, false, o);
		l->tfree(m);
		return s;
	case C_SUMF64: return l->reduce(NPT_RED_SUM, in[D8M], -1, NULL, false, o);
	case C_LN: return l->layernorm(in[XBERT], -1, in[W768], in[B768], 1e-12, o);
	case C_LNBIG: return l->layernorm(in[XBIG], -1, in[W768], in[B768], 1e-12, o);
	default: return l->softmax(in[ATT], -1, o);
	}
}

static double run_once(lib_t *l, int c)
{
	npt_tensor_t *o = NULL;
	double t0 = now();

	if (build(l, c, &o) || l->eval(o)) {
		fprintf(stderr, "reduce_bench: %s\n", l->last_error());
		exit(1);
	}
	double t = now() - t0;

	l->tfree(o);
	return t;
}

/* the ceiling: a plain parallel sum, 16 lanes per thread, no library */
typedef struct {
	const float *x;
	int64_t n;
	float r;
} plain_arg_t;

static void *plain_sum(void *a_)
{
	plain_arg_t *a = a_;
	float p[16] = { 0 }, s = 0;
	int64_t i = 0;

	for (; i + 16 <= a->n; i += 16)
		for (int k = 0; k < 16; k++)
			p[k] += a->x[i + k];
	for (; i < a->n; i++)
		s += a->x[i];
	for (int k = 0; k < 16; k++)
		s += p[k];
	a->r = s;
	return NULL;
}

static double plain_once(const float *x, int64_t n, int nt)
{
	pthread_t th[64];
	plain_arg_t a[64];
	double t0 = now();

	for (int i = 0; i < nt; i++) {
		a[i].x = x + n / nt * i;
		a[i].n = i == nt - 1 ? n - n / nt * i : n / nt;
		if (i)
			pthread_create(&th[i], NULL, plain_sum, &a[i]);
	}
	plain_sum(&a[0]);
	for (int i = 1; i < nt; i++)
		pthread_join(th[i], NULL);
	return now() - t0;
}

static void report(const char *name, const char *cfg, double *ts, int n, double bytes,
		   const char *desc)
{
	qsort(ts, n, sizeof(double), cmp_d);
	printf("%s\t%s\t%.4f\t%.4f\t%d\t%.0f\t%s\n", name, cfg, ts[0] * 1e3, ts[n / 2] * 1e3, n,
	       bytes, desc);
}

int main(int argc, char **argv)
{
	static double ts[MAX_CFG + 1][MAX_REPS];
	static lib_t libs[MAX_CFG];
	int nt = argc > 1 ? atoi(argv[1]) : 0, ncfg = argc - 3;
	double seconds = argc > 2 ? atof(argv[2]) : 0;

	if (nt < 1 || nt > 64 || seconds <= 0 || ncfg < 1 || ncfg > MAX_CFG) {
		fprintf(stderr, "usage: reduce_bench THREADS(1..64) SECONDS LIB[=MODE]... "
			"(1..%d libraries)\n", MAX_CFG);
		return 2;
	}
	for (int k = 0; k < ncfg; k++) {
		load(&libs[k], argv[3 + k], nt);
		inputs(&libs[k]);
	}
	void *x16;

	libs[0].data(libs[0].in[X16M], &x16);
	const char *only = getenv("REDUCE_BENCH_CASES"); /* e.g. "sum16M,softmax" */

	for (int c = -1; c < NCASES; c++) {
		int reps = 0;
		double end;

		if (only && c >= 0) {
			const char *h = strstr(only, cases[c].name);
			size_t l = strlen(cases[c].name);

			if (!h || (h != only && h[-1] != ',') || (h[l] && h[l] != ','))
				continue;
		}

		/* warm up: pools, page faults, worker threads */
		for (int k = 0; k < ncfg && c >= 0; k++)
			for (int w = 0; w < 2; w++)
				run_once(&libs[k], c);
		end = now() + seconds;
		while (reps < 7 || (reps < MAX_REPS && now() < end)) {
			if (c < 0) {
				ts[0][reps] = plain_once(x16, 16 << 20, nt);
			} else {
				/* rotate the order so no configuration always runs first */
				for (int i = 0; i < ncfg; i++) {
					int k = (i + reps) % ncfg;

					ts[k][reps] = run_once(&libs[k], c);
				}
			}
			reps++;
		}
		if (c < 0) {
			report("ceiling", "plain C", ts[0], reps, 64 << 20,
			       "plain C parallel sum of the same 64 MiB (16 lanes per thread)");
			continue;
		}
		for (int k = 0; k < ncfg; k++) {
			char cfg[64];

			snprintf(cfg, sizeof(cfg), "%d:%s", k, libs[k].label);
			report(cases[c].name, cfg, ts[k], reps, cases[c].bytes, cases[c].desc);
		}
		fflush(stdout);
	}
	return 0;
}
