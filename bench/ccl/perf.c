/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * perf.c - npccl-perf: the nccl-tests style collective benchmark, one source
 * for every backend (backend.h).
 *
 *   npccl-perf [-c allreduce|allgather|reduce_scatter|broadcast|reduce|alltoall]
 *              [-b MINBYTES] [-e MAXBYTES] [-f FACTOR] [-t SECONDS] [-w WARMUP]
 *              [-d f32|f64|i32] [--odd] [--fresh] [--shared]
 *              [backend options: -n N --bind]
 *   npccl-perf --help | --version
 *
 * For each size: warm-up, then enough iterations for -t seconds (default
 * 0.5, agreed by all ranks), out of place and in place. t is the mean time
 * per op averaged over ranks; also the slowest rank's mean and rank 0's
 * per-op p50/p99. algbw = S/t (S per-rank bytes; for allgather,
 * reduce_scatter, alltoall S = count*p*elemsize), busbw = algbw*F with
 * F = 2(p-1)/p allreduce, (p-1)/p allgather/reduce_scatter/alltoall, 1 for
 * broadcast and reduce. Results are verified after the timed loop (#wrong):
 * inputs are small integers, exact in any summation order. --fresh maps a
 * new output buffer for every call (page faults included); --shared takes
 * the buffers from the library's shared allocator (npccl_mem_alloc: the
 * zero-copy AllReduce) instead of private anonymous memory.
 */
#include "backend.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *coll_names[] = { "allreduce", "allgather", "reduce_scatter", "broadcast",
				    "reduce", "alltoall" };
static const char *dt_names[] = { "float", "double", "int32" };

static size_t esize(enum bk_dtype d)
{
	return d == BK_F64 ? 8 : 4;
}

static double val(int rank, size_t i)
{
	return (double)((rank + (int)(i % 7)) % 7) - 3.0;
}

static void put(enum bk_dtype d, void *p, size_t i, double v)
{
	if (d == BK_F32)
		((float *)p)[i] = (float)v;
	else if (d == BK_F64)
		((double *)p)[i] = v;
	else
		((int *)p)[i] = (int)v;
}

static double get(enum bk_dtype d, const void *p, size_t i)
{
	return d == BK_F32 ? ((const float *)p)[i] : d == BK_F64 ? ((const double *)p)[i]
								 : ((const int *)p)[i];
}

struct bufs {
	char *send, *recv;
	size_t bytes;
};

/* input of this rank (the whole send buffer) */
static void fill(enum bk_coll c, enum bk_dtype d, char *buf, size_t count, int rank, int p)
{
	size_t n = (c == BK_REDUCE_SCATTER || c == BK_ALLTOALL) ? count * (size_t)p : count;
	for (size_t i = 0; i < n; i++)
		put(d, buf, i, val(rank, i));
}

static size_t check(enum bk_coll c, enum bk_dtype d, const char *out, size_t count, int rank,
		    int p, int root)
{
	size_t wrong = 0;
	switch (c) {
	case BK_ALLREDUCE:
	case BK_REDUCE:
		if (c == BK_REDUCE && rank != root)
			return 0;
		for (size_t i = 0; i < count; i++) {
			double s = 0;
			for (int r = 0; r < p; r++)
				s += val(r, i);
			wrong += get(d, out, i) != s;
		}
		break;
	case BK_REDUCE_SCATTER:
		for (size_t i = 0; i < count; i++) {
			double s = 0;
			for (int r = 0; r < p; r++)
				s += val(r, (size_t)rank * count + i);
			wrong += get(d, out, i) != s;
		}
		break;
	case BK_ALLGATHER:
		for (int r = 0; r < p; r++)
			for (size_t i = 0; i < count; i++)
				wrong += get(d, out, (size_t)r * count + i) != val(r, i);
		break;
	case BK_BROADCAST:
		for (size_t i = 0; i < count; i++)
			wrong += get(d, out, i) != val(root, i);
		break;
	case BK_ALLTOALL:
		for (int j = 0; j < p; j++)
			for (size_t i = 0; i < count; i++)
				wrong += get(d, out, (size_t)j * count + i) != val(j, (size_t)rank * count + i);
		break;
	default:
		break;
	}
	return wrong;
}

/* BYTES with an optional K, M or G (powers of 1024), > 0; false if @v is not one */
static bool parse_size(const char *v, size_t *n)
{
	int shift = 0;
	char *end;

	errno = 0;
	*n = strtoull(v, &end, 0);
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (errno || end == v || *v == '-' || !*n || end[shift ? 1 : 0] || *n > (SIZE_MAX >> shift))
		return false;
	*n <<= shift;
	return true;
}

static bool parse_number(const char *v, double lo, double *x)
{
	char *end;

	errno = 0;
	*x = strtod(v, &end);
	return !errno && end != v && !*end && isfinite(*x) && *x >= lo;
}

static bool parse_int(const char *v, long lo, long hi)
{
	char *end;
	long x;

	errno = 0;
	x = strtol(v, &end, 10);
	return !errno && end != v && !*end && x >= lo && x <= hi;
}

/*
 * What option @a wants when its value @v is not that (for "-x 'v' is not
 * ..."), or NULL: @v is fine, or @a is no option with a value.
 */
static const char *bad_value(const char *a, const char *v)
{
	size_t n;
	double x;

	if (!strcmp(a, "-c")) {
		for (int k = 0; k < BK_NCOLLS; k++)
			if (!strcmp(v, coll_names[k]))
				return NULL;
		return "one of the collectives";
	}
	if (!strcmp(a, "-d"))
		return !strcmp(v, "f32") || !strcmp(v, "f64") || !strcmp(v, "i32") ? NULL :
		       "one of the data types";
	if (!strcmp(a, "-b") || !strcmp(a, "-e"))
		return parse_size(v, &n) ? NULL : "a size in bytes above 0 (K, M, G allowed)";
	if (!strcmp(a, "-f"))
		return parse_number(v, 0, &x) && x > 1 ? NULL : "a factor above 1";
	if (!strcmp(a, "-t"))
		return parse_number(v, 0, &x) ? NULL : "a finite number of seconds >= 0";
	if (!strcmp(a, "-w"))
		return parse_int(v, 0, 1000000) ? NULL : "a count of warm-up calls in 0..1000000";
	if (!strcmp(a, "-n"))	/* npccl backend */
		return parse_int(v, 1, 256) ? NULL : "a number of local ranks in 1..256";
	return NULL;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

struct result {
	double t_avg, t_max, p50, p99;
	size_t wrong;
};

static int fresh_output;	/* --fresh: a newly mapped output buffer for every call */

static int measure(enum bk_coll c, enum bk_dtype d, size_t count, int inplace, struct bufs *b,
		   int rank, int p, double min_time, int warmup, struct result *res)
{
	size_t es = esize(d), n_in = count, n_out = count;
	if (c == BK_ALLGATHER)
		n_out = count * (size_t)p;
	if (c == BK_REDUCE_SCATTER)
		n_in = count * (size_t)p;
	if (c == BK_ALLTOALL)
		n_in = n_out = count * (size_t)p;
	int root = 0;
	char *sb = b->send, *rb = b->recv;
	if (inplace) {
		sb = rb;
		if (c == BK_ALLGATHER)
			sb = rb + (size_t)rank * count * es;
	}
	/* warm up and estimate the per-op time */
	fill(c, d, inplace ? sb : b->send, count, rank, p);
	double t0 = now_s();
	for (int i = 0; i < warmup; i++)
		if (bk_run(c, sb, rb, count, d, root))
			return -1;
	double est = bk_max((now_s() - t0) / (warmup > 0 ? warmup : 1));
	long iters = (long)(min_time / (est > 1e-7 ? est : 1e-7)) + 1;
	if (iters > 1000000)
		iters = 1000000;
	if (iters < 5)
		iters = 5;
	double *lat = malloc(sizeof(double) * (size_t)iters);
	if (!lat)
		return -1;
	bk_barrier();
	double start = now_s(), prev = start;
	size_t out_bytes = (n_out > n_in ? n_out : n_in) * es;
	for (long i = 0; i < iters; i++) {
		char *o = rb;
		if (fresh_output && !inplace) {
			o = mmap(NULL, out_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (o == MAP_FAILED)
				return -1;
		}
		int bad = bk_run(c, sb, o, count, d, root);
		if (o != rb)
			munmap(o, out_bytes);
		if (bad) {
			free(lat);
			return -1;
		}
		double t = now_s();
		lat[i] = t - prev;
		prev = t;
	}
	double mean = (prev - start) / (double)iters;
	qsort(lat, (size_t)iters, sizeof(double), cmp_d);
	res->p50 = lat[iters / 2];
	res->p99 = lat[(long)((double)iters * 0.99)];
	free(lat);
	res->t_max = bk_max(mean);
	res->t_avg = bk_sum(mean) / p;
	/* verification on fresh input (in place: the buffer was reduced repeatedly) */
	fill(c, d, inplace ? sb : b->send, count, rank, p);
	if (bk_run(c, sb, rb, count, d, root))
		return -1;
	res->wrong = check(c, d, rb, count, rank, p, root);
	res->wrong = (size_t)bk_max((double)res->wrong);
	(void)n_in;
	(void)n_out;
	return 0;
}

#ifndef NPUSHM_VERSION
#define NPUSHM_VERSION "unknown"
#endif

static const char usage[] =
	"usage: %1$s [-c COLLECTIVE] [-b MINBYTES] [-e MAXBYTES] [-f FACTOR] [-t SECONDS]\n"
	"       %2$*3$s [-w WARMUP] [-d f32|f64|i32] [--odd] [--fresh] [--shared]\n"
	"       %2$*3$s [backend options]\n"
	"       %1$s --help | --version\n"
	"\n"
	"Collective benchmark in the style of nccl-tests: for each size from MINBYTES to\n"
	"MAXBYTES (times FACTOR), out of place and in place, the time per call, algbw,\n"
	"busbw and the number of wrong results.\n"
	"\n"
	"  -c COLLECTIVE  allreduce (default), allgather, reduce_scatter, broadcast, reduce,\n"
	"                 alltoall\n"
	"  -b, -e BYTES   smallest and largest size per rank (default 8 and 256M; K, M, G)\n"
	"  -f FACTOR      size step (default 2)\n"
	"  -t SECONDS     time per size, agreed by all ranks (default 0.5)\n"
	"  -w WARMUP      warm-up calls per size (default 5)\n"
	"  -d DTYPE       f32 (default), f64 or i32\n"
	"  --odd          sizes not multiples of the rank count\n"
	"  --fresh        a newly mapped output buffer for every call (page faults counted)\n"
	"  --shared       buffers from the library's shared allocator\n"
	"\n"
	"npccl backend: -n N forks N local ranks; without -n the ranks come from a\n"
	"launcher's environment (mpirun, torchrun: RANK/WORLD_SIZE, NPCCL_RANK/NPCCL_NRANKS);\n"
	"--bind pins rank r to CPU r.\n"
	"\n"
	"Exit status: 0 done and every result right, 1 a collective failed or a result\n"
	"was wrong, 2 bad usage.\n";

int main(int argc, char **argv)
{
	const char *prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	int rank, p;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf(usage, prog, "", (int)strlen(prog));
			return 0;
		}
		if (!strcmp(argv[i], "--version")) {
			printf("%s (npushm) %s\n", prog, NPUSHM_VERSION);
			return 0;
		}
	}
	/* Check the values before any rank starts. */
	size_t minb = 8, maxb = 256u << 20;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL, *want;

		if (!v && strlen(a) == 2 && strchr("cbeftwdn", a[1]) && a[0] == '-') {
			fprintf(stderr, "npccl-perf: %s needs a value (npccl-perf --help)\n", a);
			return 2;
		}
		want = v ? bad_value(a, v) : NULL;
		if (want) {
			fprintf(stderr, "npccl-perf: %s '%s' is not %s (npccl-perf --help)\n", a, v, want);
			return 2;
		}
		if (!strcmp(a, "-b"))
			parse_size(v, &minb);
		else if (!strcmp(a, "-e"))
			parse_size(v, &maxb);
	}
	if (minb > maxb) {
		fprintf(stderr, "npccl-perf: the smallest size (-b, default 8) is larger than the "
			"largest (-e, default 256M): no size to measure\n");
		return 2;
	}
	if (bk_init(&argc, &argv, &rank, &p))
		return 1;
	enum bk_coll c = BK_ALLREDUCE;
	enum bk_dtype d = BK_F32;
	double factor = 2, min_time = 0.5;
	int warmup = 5, odd = 0, shared = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
		if (!strcmp(a, "-c")) {
			for (int k = 0; k < BK_NCOLLS; k++)
				if (!strcmp(v, coll_names[k]))
					c = (enum bk_coll)k;
			i++;
		} else if (!strcmp(a, "-b") || !strcmp(a, "-e")) {
			i++;	/* read above */
		} else if (!strcmp(a, "-f")) {
			factor = atof(v), i++;
		} else if (!strcmp(a, "-t")) {
			min_time = atof(v), i++;
		} else if (!strcmp(a, "-w")) {
			warmup = atoi(v), i++;
		} else if (!strcmp(a, "-d")) {
			d = !strcmp(v, "f64") ? BK_F64 : !strcmp(v, "i32") ? BK_I32 : BK_F32;
			i++;
		} else if (!strcmp(a, "--odd")) {
			odd = 1;
		} else if (!strcmp(a, "--fresh")) {
			fresh_output = 1;
		} else if (!strcmp(a, "--shared")) {
			shared = 1;
		} else {
			if (rank == 0)
				fprintf(stderr, "npccl-perf: unknown option %s (npccl-perf --help)\n", a);
			bk_finalize();
			return 2;
		}
	}
	size_t es = esize(d);
	size_t mult = (c == BK_ALLGATHER || c == BK_REDUCE_SCATTER || c == BK_ALLTOALL) ? (size_t)p : 1;
	/* buffers for the largest size, prefaulted once */
	size_t cap = maxb + 64 * es;
	struct bufs b;
	b.bytes = cap + 4096;
	if (shared) {
		b.send = bk_alloc_shared(b.bytes);
		b.recv = bk_alloc_shared(b.bytes);
		if (!b.send || !b.recv) {
			if (rank == 0)
				fprintf(stderr, "npccl-perf: %s has no shared allocator\n", bk_name());
			bk_finalize();
			return 2;
		}
	} else {
		b.send = mmap(NULL, b.bytes, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		b.recv = mmap(NULL, b.bytes, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	}
	if (b.send == MAP_FAILED || b.recv == MAP_FAILED) {
		fprintf(stderr, "npccl-perf: cannot allocate %zu bytes\n", b.bytes);
		return 1;
	}
	double F = c == BK_ALLREDUCE ? 2.0 * (p - 1) / p
		   : (c == BK_BROADCAST || c == BK_REDUCE) ? 1.0 : (double)(p - 1) / p;
	if (rank == 0) {
		printf("# npccl-perf %s, backend %s, %d ranks, dtype %s, >= %.2f s per size%s%s\n",
		       coll_names[c], bk_name(), p, dt_names[d], min_time,
		       fresh_output ? ", out-of-place output freshly mapped for every call" : "",
		       shared ? ", buffers from the library's shared allocator" : "");
		if (*bk_info())
			printf("# %s\n", bk_info());
		printf("#%11s %11s %6s %6s %5s %10s %7s %7s %6s %10s %7s %7s %6s %9s %9s %9s  %s\n", "size",
		       "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
		       "algbw", "busbw", "#wrong", "tmax", "p50", "p99", "algo");
		printf("#%11s %11s %6s %6s %5s %10s %7s %7s %6s %10s %7s %7s %6s %9s %9s %9s\n", "(B)",
		       "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
		       "(GB/s)", "", "(us)", "(us)", "(us)");
		printf("#%65s %38s\n", "out-of-place", "in-place");
	}
	size_t sizes[128];
	int ns = 0;
	for (double s = (double)minb; s <= (double)maxb && ns < 100; s *= factor)
		sizes[ns++] = (size_t)s;
	int nodd = 0;
	if (odd) {	/* counts not divisible by p (nor by 2) */
		size_t extra[] = { 1, 7, 1023, 1025, 65537, 1048577, 16777217 };
		for (size_t k = 0; k < sizeof(extra) / sizeof(extra[0]); k++)
			if (extra[k] * es * mult <= maxb && extra[k] * es * mult >= minb)
				sizes[ns + nodd++] = extra[k] * es * mult;
	}
	int rc = 0;
	for (int k = 0; k < ns + nodd; k++) {
		size_t bytes = sizes[k];
		size_t count = bytes / es / mult;
		if (count == 0)
			continue;
		size_t S = count * es * mult;
		struct result r[2];
		if (measure(c, d, count, 0, &b, rank, p, min_time, warmup, &r[0]) ||
		    measure(c, d, count, 1, &b, rank, p, min_time, warmup, &r[1])) {
			rc = 1;
			break;
		}
		if (rank == 0) {
			double t0 = r[0].t_avg, t1 = r[1].t_avg;
			printf(" %11zu %11zu %6s %6s %5d %10.2f %7.2f %7.2f %6zu %10.2f %7.2f %7.2f %6zu %9.2f %9.2f %9.2f  %s\n",
			       S, count, dt_names[d], c == BK_ALLREDUCE || c == BK_REDUCE || c == BK_REDUCE_SCATTER ? "sum" : "none",
			       c == BK_BROADCAST || c == BK_REDUCE ? 0 : -1, t0 * 1e6, S / t0 / 1e9,
			       S / t0 / 1e9 * F, r[0].wrong, t1 * 1e6, S / t1 / 1e9, S / t1 / 1e9 * F,
			       r[1].wrong, r[0].t_max * 1e6, r[0].p50 * 1e6, r[0].p99 * 1e6,
			       bk_algo(c, count, d));
			fflush(stdout);
		}
		if (r[0].wrong || r[1].wrong)
			rc = 1;
	}
	bk_finalize();
	return rc;
}
