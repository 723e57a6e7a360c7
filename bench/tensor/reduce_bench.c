/*
 * reduce_bench.c - time of the tensor library's reductions, layernorm and
 * softmax on fixed shapes, next to a plain C parallel sum of the same 64 MiB
 * (the memory-read ceiling). One configuration per process: the thread count
 * is argv[1], the reproducibility mode comes from $NPT_REPRO, and the library
 * is whichever libnptensor.so the loader finds ($LD_LIBRARY_PATH), so
 * reduce_run.sh can interleave an older build with this one in one run.
 *
 *   reduce_bench THREADS [SECONDS_PER_CASE]
 *
 * Output: one line per case, "case<TAB>median_ms<TAB>GB/s<TAB>description",
 * GB/s counting every input byte read once. Uses only the public API that
 * every version of the library has.
 */
#include "nptensor.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static npt_tensor_t *filled(npt_dtype_t dt, int nd, const int64_t *shape, unsigned seed)
{
	npt_tensor_t *t = NULL;
	void *p;

	if (npt_tensor_empty(dt, nd, shape, &t) || npt_tensor_data(t, &p)) {
		fprintf(stderr, "reduce_bench: %s\n", npt_last_error());
		exit(1);
	}
	srand(seed);
	for (int64_t i = 0; i < npt_tensor_numel(t); i++) {
		double v = (double)rand() / RAND_MAX * 2 - 1;

		if (dt == NPT_F64)
			((double *)p)[i] = v;
		else
			((float *)p)[i] = (float)v;
	}
	return t;
}

typedef npt_status_t (*build_fn)(npt_tensor_t **in, npt_tensor_t **out);

static double seconds = 0.4;

/* median time of build + evaluate + free, in ms */
static double time_case(build_fn fn, npt_tensor_t **in)
{
	double ts[1000];
	int n = 0;
	double end;

	for (int w = 0; w < 2; w++) {
		npt_tensor_t *o = NULL;

		if (fn(in, &o) || npt_tensor_eval(o)) {
			fprintf(stderr, "reduce_bench: %s\n", npt_last_error());
			exit(1);
		}
		npt_tensor_free(o);
	}
	end = now() + seconds;
	while (n < 5 || (n < 1000 && now() < end)) {
		npt_tensor_t *o = NULL;
		double t0 = now();

		fn(in, &o);
		npt_tensor_eval(o);
		ts[n++] = now() - t0;
		npt_tensor_free(o);
	}
	qsort(ts, n, sizeof(double), cmp_d);
	return ts[n / 2] * 1e3;
}

static npt_status_t sum_all(npt_tensor_t **in, npt_tensor_t **o)
{
	return npt_reduce(NPT_RED_SUM, in[0], -1, NULL, false, o);
}

static npt_status_t sum_ax0(npt_tensor_t **in, npt_tensor_t **o)
{
	return npt_reduce(NPT_RED_SUM, in[0], 1, (int[]){ 0 }, false, o);
}

static npt_status_t mean_ax0(npt_tensor_t **in, npt_tensor_t **o)
{
	return npt_reduce(NPT_RED_MEAN, in[0], 1, (int[]){ 0 }, false, o);
}

static npt_status_t sum_last(npt_tensor_t **in, npt_tensor_t **o)
{
	return npt_reduce(NPT_RED_SUM, in[0], 1, (int[]){ -1 }, false, o);
}

static npt_status_t mean_last_keep(npt_tensor_t **in, npt_tensor_t **o)
{
	return npt_reduce(NPT_RED_MEAN, in[0], 1, (int[]){ -1 }, true, o);
}

static npt_status_t to_row(npt_tensor_t **in, npt_tensor_t **o)
{
	int64_t s = npt_tensor_shape(in[0])[npt_tensor_ndim(in[0]) - 1];

	return npt_sum_to_shape(in[0], 1, &s, o);
}

static npt_status_t sum_prod(npt_tensor_t **in, npt_tensor_t **o)
{
	npt_tensor_t *m = NULL;
	npt_status_t s = npt_mul(in[0], in[1], &m);

	if (!s)
		s = npt_reduce(NPT_RED_SUM, m, -1, NULL, false, o);
	npt_tensor_free(m);
	return s;
}

static npt_status_t layernorm(npt_tensor_t **in, npt_tensor_t **o)
{
	return npt_layernorm(in[0], -1, in[1], in[2], 1e-12, o);
}

static npt_status_t softmax(npt_tensor_t **in, npt_tensor_t **o)
{
	return npt_softmax(in[0], -1, o);
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

static double time_plain(const float *x, int64_t n, int nt)
{
	double ts[1000];
	int reps = 0;
	double end = now() + seconds;

	while (reps < 5 || (reps < 1000 && now() < end)) {
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
		ts[reps++] = now() - t0;
	}
	qsort(ts, reps, sizeof(double), cmp_d);
	return ts[reps / 2] * 1e3;
}

int main(int argc, char **argv)
{
	int nt = argc > 1 ? atoi(argv[1]) : 2;

	if (argc > 2)
		seconds = atof(argv[2]);
	if (nt < 1 || nt > 64 || npt_set_num_threads(nt)) {
		fprintf(stderr, "usage: reduce_bench THREADS(1..64) [SECONDS_PER_CASE]\n");
		return 2;
	}
	int64_t s16m[1] = { 16 << 20 }, s1m[1] = { 1 << 20 }, s64k16[2] = { 65536, 16 },
		s4k1k[2] = { 4096, 1024 }, s64x256k[2] = { 64, 262144 },
		sbig[3] = { 64, 512, 768 }, sbert[3] = { 8, 128, 768 }, s768[1] = { 768 },
		s4m[1] = { 4 << 20 }, s8m[1] = { 8 << 20 }, satt[3] = { 96, 128, 128 };
	npt_tensor_t *x16m = filled(NPT_F32, 1, s16m, 1), *x1m = filled(NPT_F32, 1, s1m, 2),
		     *x64k16 = filled(NPT_F32, 2, s64k16, 3), *x4k1k = filled(NPT_F32, 2, s4k1k, 4),
		     *x64x256k = filled(NPT_F32, 2, s64x256k, 5), *xbig = filled(NPT_F32, 3, sbig, 6),
		     *xbert = filled(NPT_F32, 3, sbert, 7), *w = filled(NPT_F32, 1, s768, 8),
		     *b = filled(NPT_F32, 1, s768, 9), *a4m = filled(NPT_F32, 1, s4m, 10),
		     *b4m = filled(NPT_F32, 1, s4m, 11), *d8m = filled(NPT_F64, 1, s8m, 12),
		     *att = filled(NPT_F32, 3, satt, 13);
	struct {
		const char *name, *desc;
		build_fn fn;
		npt_tensor_t *in[3];
		double bytes;
	} cases[] = {
		{ "sum16M", "sum of 16 Mi f32 (64 MiB, all axes)", sum_all, { x16m }, 64 << 20 },
		{ "sum1M", "sum of 1 Mi f32 (4 MiB, fits L3)", sum_all, { x1m }, 4 << 20 },
		{ "mean64kx16", "mean over axis 0 of (65536,16) f32", mean_ax0, { x64k16 }, 4 << 20 },
		{ "sum4kx1k", "sum over axis 0 of (4096,1024) f32", sum_ax0, { x4k1k }, 16 << 20 },
		{ "sum64x256k", "sum over axis 0 of (64,262144) f32", sum_ax0, { x64x256k },
		  64 << 20 },
		{ "sumlast4kx1k", "sum over axis -1 of (4096,1024) f32", sum_last, { x4k1k },
		  16 << 20 },
		{ "to_row", "sum_to_shape (64,512,768)->(768,) f32", to_row, { xbig }, 96 << 20 },
		{ "meanlast", "mean over axis -1 keepdims of (8,128,768) f32", mean_last_keep,
		  { xbert }, 3 << 20 },
		{ "sum_x*y", "sum(x*y), fused prologue, 2 x 4 Mi f32", sum_prod, { a4m, b4m },
		  32 << 20 },
		{ "sum8Mf64", "sum of 8 Mi f64 (64 MiB)", sum_all, { d8m }, 64 << 20 },
		{ "layernorm", "layernorm (8,128,768) f32 with weight and bias", layernorm,
		  { xbert, w, b }, 3 << 20 },
		{ "layernormbig", "layernorm (64,512,768) f32 with weight and bias", layernorm,
		  { xbig, w, b }, 96 << 20 },
		{ "softmax", "softmax over the last axis of (96,128,128) f32", softmax, { att },
		  6 << 20 },
	};
	void *p16;

	npt_tensor_data(x16m, &p16);
	double pm = time_plain(p16, 16 << 20, nt);

	printf("ceiling\t%.4f\t%.2f\tplain C parallel sum of the same 64 MiB, no library\n", pm,
	       (double)(64 << 20) / pm / 1e6);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double ms = time_case(cases[i].fn, cases[i].in);

		printf("%s\t%.4f\t%.2f\t%s\n", cases[i].name, ms, cases[i].bytes / ms / 1e6,
		       cases[i].desc);
		fflush(stdout);
	}
	npt_tensor_t *all[] = { x16m, x1m, x64k16, x4k1k, x64x256k, xbig, xbert, w, b, a4m, b4m,
				d8m, att };

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		npt_tensor_free(all[i]);
	return 0;
}
