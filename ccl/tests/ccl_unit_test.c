/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * ccl_unit_test.c - single-process tests of ccl internals, linked against
 * the library's objects: reduction kernels against a naive reference for
 * every dtype/op on random sizes (0 and 1 included), the multi-source /
 * multi-destination and streaming-store variants, bulk copies, f16/bf16 rounding to
 * nearest even including ties, wire header checksums, unique id text form,
 * block partitioning, names and status texts, and communicators made from
 * several threads at once. Prints TAP (ccl_tap.h).
 */
#include "npccl_internal.h"
#include "transport/transport.h"
#include "algo/algo.h"
#include "ccl_testlib.h"

#include <math.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ccl_tap.h"

static void tap(int ok, const char *name)
{
	ccl_tap(ok, "%s", name);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* naive reference of a op b for one element, in double/int64 */
static void ref_elem(npccl_dtype_t d, npccl_redop_t op, const void *a, const void *b, void *out,
		     size_t i)
{
	double x = 0, y = 0;
	int64_t xi = 0, yi = 0;
	uint64_t xu = 0, yu = 0;
	switch (d) {
#define INT_CASE(DT, T)                                                                    \
	case DT: {                                                                         \
		T va = ((const T *)a)[i], vb = ((const T *)b)[i], r;                         \
		if (op == NPCCL_SUM || op == NPCCL_AVG) r = (T)((uint64_t)va + (uint64_t)vb); \
		else if (op == NPCCL_PROD) r = (T)((uint64_t)va * (uint64_t)vb);             \
		else if (op == NPCCL_MIN) r = va < vb ? va : vb;                             \
		else r = va > vb ? va : vb;                                                  \
		((T *)out)[i] = r;                                                           \
		return;                                                                      \
	}
	INT_CASE(NPCCL_INT8, int8_t)
	INT_CASE(NPCCL_UINT8, uint8_t)
	INT_CASE(NPCCL_INT32, int32_t)
	INT_CASE(NPCCL_UINT32, uint32_t)
	INT_CASE(NPCCL_INT64, int64_t)
	INT_CASE(NPCCL_UINT64, uint64_t)
	case NPCCL_FLOAT16: x = (float)((const _Float16 *)a)[i]; y = (float)((const _Float16 *)b)[i]; break;
	case NPCCL_BFLOAT16: x = t_bf16_to_f32(((const uint16_t *)a)[i]); y = t_bf16_to_f32(((const uint16_t *)b)[i]); break;
	case NPCCL_FLOAT32: x = ((const float *)a)[i]; y = ((const float *)b)[i]; break;
	case NPCCL_FLOAT64: x = ((const double *)a)[i]; y = ((const double *)b)[i]; break;
	default: break;
	}
	(void)xi, (void)yi, (void)xu, (void)yu;
	double r;
	if (d == NPCCL_FLOAT64) {
		r = op == NPCCL_PROD ? x * y : op == NPCCL_MIN ? (y < x ? y : x) : op == NPCCL_MAX ? (y > x ? y : x) : x + y;
		((double *)out)[i] = r;
		return;
	}
	float fx = (float)x, fy = (float)y;
	float fr = op == NPCCL_PROD ? fx * fy : op == NPCCL_MIN ? (fy < fx ? fy : fx) : op == NPCCL_MAX ? (fy > fx ? fy : fx) : fx + fy;
	if (d == NPCCL_FLOAT32)
		((float *)out)[i] = fr;
	else if (d == NPCCL_FLOAT16)
		((_Float16 *)out)[i] = (_Float16)fr;
	else
		((uint16_t *)out)[i] = t_f32_to_bf16(fr);
}

static void fill_random(npccl_dtype_t d, void *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t r = rnd();
		switch (d) {
		case NPCCL_FLOAT16: ((_Float16 *)p)[i] = (_Float16)((double)(int64_t)(r % 20001 - 10000) / 97.0); break;
		case NPCCL_BFLOAT16: ((uint16_t *)p)[i] = t_f32_to_bf16((float)((double)(int64_t)(r % 2000001 - 1000000) / 977.0)); break;
		case NPCCL_FLOAT32: ((float *)p)[i] = (float)((double)(int64_t)r / 1e15); break;
		case NPCCL_FLOAT64: ((double *)p)[i] = (double)(int64_t)r / 1e12; break;
		default: memcpy((char *)p + i * npccl_dtype_size(d), &r, npccl_dtype_size(d));
		}
	}
}

static void test_kernels(void)
{
	size_t sizes[] = { 0, 1, 2, 3, 15, 16, 17, 63, 64, 65, 255, 1000, 4097 };
	for (int d = 0; d < NPCCL_NUM_DTYPES; d++) {
		int ok = 1;
		char name[128];
		for (int op = 0; op < NPCCL_NUM_REDOPS; op++)
			for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]) + 3; s++) {
				size_t n = s < sizeof(sizes) / sizeof(sizes[0]) ? sizes[s] : rnd() % 5000;
				size_t es = npccl_dtype_size((npccl_dtype_t)d);
				char *a = malloc(n * es + 8), *b = malloc(n * es + 8), *r = malloc(n * es + 8),
				     *x = malloc(n * es + 8);
				fill_random((npccl_dtype_t)d, a, n);
				fill_random((npccl_dtype_t)d, b, n);
				for (size_t i = 0; i < n; i++)
					ref_elem((npccl_dtype_t)d, (npccl_redop_t)op, a, b, r, i);
				reduce_into((npccl_dtype_t)d, (npccl_redop_t)op, x, a, b, n);
				if (n && memcmp(x, r, n * es))
					ok = 0;
				memcpy(x, a, n * es);
				reduce_inplace((npccl_dtype_t)d, (npccl_redop_t)op, x, b, n);
				if (n && memcmp(x, r, n * es))
					ok = 0;
				free(a), free(b), free(r), free(x);
			}
		snprintf(name, sizeof(name), "reduction kernels %s: sum/prod/min/max/avg match the naive reference",
			 npccl_dtype_name((npccl_dtype_t)d));
		tap(ok, name);
	}
}

/* MIN/MAX of floats are commutative: a NaN in either operand gives NaN,
 * -0 < +0, whichever operand comes first (else the ranks of one AllReduce
 * could end with different results, depending on the order each combined) */
static void test_minmax_nan(void)
{
	static const double av[] = { NAN, 1, NAN, -0.0, 0.0, -3, 2 };
	static const double bv[] = { 1, NAN, NAN, 0.0, -0.0, 2, -3 };
	const size_t n = sizeof(av) / sizeof(av[0]);
	int ok = 1;
	for (int d = NPCCL_FLOAT16; d <= NPCCL_FLOAT64; d++)
		for (int op = NPCCL_MIN; op <= NPCCL_MAX; op++)
			for (int swap = 0; swap < 2; swap++) {
				char a[64], b[64], x[64];
				for (size_t i = 0; i < n; i++) {
					put_f((npccl_dtype_t)d, a, i, swap ? bv[i] : av[i]);
					put_f((npccl_dtype_t)d, b, i, swap ? av[i] : bv[i]);
				}
				reduce_into((npccl_dtype_t)d, (npccl_redop_t)op, x, a, b, n);
				for (size_t i = 0; i < n; i++) {
					double v = get_f((npccl_dtype_t)d, x, i);
					int good;
					if (isnan(av[i]) || isnan(bv[i]))
						good = isnan(v);
					else if (av[i] == 0 && bv[i] == 0)
						good = v == 0 && !!signbit(v) == (op == NPCCL_MIN);
					else
						good = v == (op == NPCCL_MIN ? -3 : 2);
					if (!good) {
						printf("# %s %s%s element %zu: got %g\n",
						       npccl_dtype_name((npccl_dtype_t)d),
						       npccl_redop_name((npccl_redop_t)op),
						       swap ? " (operands swapped)" : "", i, v);
						ok = 0;
					}
				}
			}
	tap(ok, "float min/max: NaN in either operand gives NaN, -0 below +0, in either order (f16/bf16/f32/f64)");
}

/* AVG's final division by the number of ranks in every integer dtype, for
 * numbers of ranks that do not fit the dtype (int8 from 128, uint8 from
 * 256): truncated toward zero, never a division by zero. In a child, so a
 * SIGFPE is a failure, not the end of the test program. */
static void test_avg_divisor(void)
{
	static const int divisors[] = { 2, 3, 127, 128, 129, 200, 255, 256, 257, 1000, 70000 };
	static const int64_t vals[] = { 0, 1, -1, 5, -7, 100, -100, 127, -128, 255, 65535, -32768,
					2147483647, -2147483647 - 1, 4294967295ll, INT64_MAX, INT64_MIN };
	const size_t nv = sizeof(vals) / sizeof(vals[0]);
	pid_t pid = fork();
	if (pid == 0) {
		int bad = 0;
		for (size_t k = 0; k < sizeof(divisors) / sizeof(divisors[0]); k++)
			for (int d = NPCCL_INT8; d <= NPCCL_UINT64; d++) {
				int64_t buf[32], want[32];
				for (size_t i = 0; i < nv; i++)
					put((npccl_dtype_t)d, buf, i, vals[i]);
				memcpy(want, buf, sizeof(buf));
				int64_t q = divisors[k];
				for (size_t i = 0; i < nv; i++)
					switch (d) {
					case NPCCL_INT8: ((int8_t *)want)[i] = (int8_t)(((int8_t *)want)[i] / q); break;
					case NPCCL_UINT8: ((uint8_t *)want)[i] = (uint8_t)(((uint8_t *)want)[i] / q); break;
					case NPCCL_INT32: ((int32_t *)want)[i] = (int32_t)(((int32_t *)want)[i] / q); break;
					case NPCCL_UINT32: ((uint32_t *)want)[i] = (uint32_t)(((uint32_t *)want)[i] / (uint64_t)q); break;
					case NPCCL_INT64: want[i] = want[i] / q; break;
					default: ((uint64_t *)want)[i] = ((uint64_t *)want)[i] / (uint64_t)q; break;
					}
				reduce_scale_avg((npccl_dtype_t)d, buf, nv, divisors[k]);
				if (memcmp(buf, want, nv * npccl_dtype_size((npccl_dtype_t)d))) {
					printf("# %s divided by %d: wrong quotient\n",
					       npccl_dtype_name((npccl_dtype_t)d), divisors[k]);
					bad = 1;
				}
			}
		fflush(stdout);
		_exit(bad);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	if (WIFSIGNALED(st))
		printf("# killed by signal %d (%s)\n", WTERMSIG(st), strsignal(WTERMSIG(st)));
	tap(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	    "integer AVG divides by any number of ranks (more than int8/uint8 hold: no SIGFPE, right sign)");
}

/* reduce_multi (fused and blocked paths, streaming or not, any alignment,
 * a destination aliasing the first source) against folding ref_elem */
static void test_reduce_multi(void)
{
	size_t sizes[] = { 0, 1, 2, 3, 7, 31, 61, 127, 1021, 4093, 9973 };
	int ns = (int)(sizeof(sizes) / sizeof(sizes[0]));
	for (int d = 0; d < NPCCL_NUM_DTYPES; d++) {
		npccl_dtype_t dt = (npccl_dtype_t)d;
		size_t es = npccl_dtype_size(dt);
		int ok = 1;
		char why[160] = "";
		for (int op = 0; op < NPCCL_NUM_REDOPS && ok; op++)
			for (int k = 0; k < ns + 4 && ok; k++) {
				size_t n = k < ns ? sizes[k] : rnd() % 20000;
				int nsrc = 1 + (int)(rnd() % 4), ndst = 1 + (int)(rnd() % 3);
				uint64_t mask = rnd() % 8;
				int alias = nsrc > 1 && rnd() % 3 == 0;
				char *sb[4], *db[3], *exp = malloc(n * es + 1), *acc = malloc(n * es + 1);
				void *dst[3];
				const void *src[4];
				for (int i = 0; i < nsrc; i++) {
					sb[i] = malloc(n * es + 128);
					src[i] = sb[i] + (rnd() % 64) / es * es;
					fill_random(dt, (void *)src[i], n);
				}
				memcpy(exp, src[0], n * es);
				for (int i = 1; i < nsrc; i++) {
					memcpy(acc, exp, n * es);
					for (size_t e = 0; e < n; e++)
						ref_elem(dt, (npccl_redop_t)op, acc, src[i], exp, e);
				}
				for (int i = 0; i < ndst; i++) {
					db[i] = malloc(n * es + 128);
					memset(db[i], 0x5a, n * es + 128);
					dst[i] = db[i] + (rnd() % 64) / es * es;
				}
				if (alias)
					dst[0] = (void *)src[0];
				reduce_multi(dt, (npccl_redop_t)op, dst, ndst, mask, src, nsrc, n);
				copy_stream_fence();
				for (int i = 0; i < ndst && ok; i++)
					if (n && memcmp(dst[i], exp, n * es)) {
						ok = 0;
						snprintf(why, sizeof(why), " (FAILED: op %d n %zu nsrc %d dst %d "
							 "mask %llu alias %d)", op, n, nsrc, i,
							 (unsigned long long)mask, alias);
					}
				for (int i = 0; i < ndst; i++)
					free(db[i]);
				for (int i = 0; i < nsrc; i++)
					free(sb[i]);
				free(exp), free(acc);
			}
		char name[256];
		snprintf(name, sizeof(name), "reduce_multi %s: 1-4 sources into 1-3 destinations, "
			 "streaming or not, unaligned, aliased: matches the reference%s",
			 npccl_dtype_name(dt), why);
		tap(ok, name);
	}
}

static void test_copy(void)
{
	int ok = 1;
	size_t sizes[] = { 0, 1, 63, 64, 65, 127, 511, 512, 513, 4099, 65536 + 7 };
	char *a = malloc(70000), *b = malloc(70200);
	fill_random(NPCCL_UINT8, a, 70000);
	for (int k = 0; k < 200 && ok; k++) {
		size_t n = k < 11 ? sizes[k] : rnd() % 66000;
		size_t so = rnd() % 64, dof = rnd() % 64;
		memset(b, 0x77, 70200);
		if (k % 2)
			copy_stream(b + dof, a + so, n);
		else
			copy_cached(b + dof, a + so, n);
		copy_stream_fence();
		ok = !memcmp(b + dof, a + so, n);
		for (size_t i = 0; i < dof && ok; i++)
			ok = b[i] == 0x77;
		for (size_t i = dof + n; i < 70200 && ok; i++)
			ok = b[i] == 0x77;
	}
	free(a), free(b);
	tap(ok, "copy_stream/copy_cached: every length and alignment, nothing outside touched");
}

static void test_half(void)
{
	/* bf16: ties go to even, NaN stays NaN, Inf stays Inf */
	int ok = f32_to_bf16(1.0f) == 0x3f80 && bf16_to_f32(0x3f80) == 1.0f;
	uint32_t tie_even = 0x3f808000u, tie_odd = 0x3f818000u, above = 0x3f808001u;
	float f;
	memcpy(&f, &tie_even, 4);
	ok &= f32_to_bf16(f) == 0x3f80;
	memcpy(&f, &tie_odd, 4);
	ok &= f32_to_bf16(f) == 0x3f82;
	memcpy(&f, &above, 4);
	ok &= f32_to_bf16(f) == 0x3f81;
	ok &= isnan(bf16_to_f32(f32_to_bf16(NAN))) && isinf(bf16_to_f32(f32_to_bf16(INFINITY)));
	for (int i = 0; i < 100000; i++) {
		uint32_t u = (uint32_t)rnd();
		memcpy(&f, &u, 4);
		if (!isnan(f) && f32_to_bf16(f) != t_f32_to_bf16(f))
			ok = 0;
	}
	tap(ok, "bf16 conversion rounds to nearest even (ties, NaN, Inf, 100k random values)");
	/* f16: 1 + 2^-11 is a tie between 1 and 1+2^-10 -> 1 (even); 1 + 3*2^-11 -> 1 + 2^-9 */
	ok = f32_to_f16(1.0f + 1.0f / 2048) == 0x3c00 && f32_to_f16(1.0f + 3.0f / 2048) == 0x3c02 &&
	     f16_to_f32(0x3c00) == 1.0f && f32_to_f16(65504.0f) == 0x7bff &&
	     f32_to_f16(1e6f) == 0x7c00;
	tap(ok, "f16 conversion rounds to nearest even (ties, max, overflow to Inf)");
	/* f16 spacing at 2048 is 2: 2048 + 1 ties to even 2048, 2050 + 1 ties to even 2052 */
	_Float16 a[2] = { (_Float16)2048.0f, (_Float16)2050.0f }, b[2] = { (_Float16)1.0f, (_Float16)1.0f }, r[2];
	reduce_into(NPCCL_FLOAT16, NPCCL_SUM, r, a, b, 2);
	tap((float)r[0] == 2048.0f && (float)r[1] == 2052.0f, "f16 sum computed in f32 and rounded once (RNE)");
}

static void test_misc(void)
{
	struct wire_hdr h;
	memset(&h, 0, sizeof(h));
	h.magic = WIRE_MAGIC;
	h.seq = 42;
	h.len = 1000;
	wire_hdr_seal(&h);
	int ok = wire_hdr_valid(&h);
	h.len ^= 1;
	ok &= !wire_hdr_valid(&h);
	h.len ^= 1;
	h.magic = 0;
	ok &= !wire_hdr_valid(&h);
	tap(ok, "wire header checksum detects corruption and bad magic");

	npccl_unique_id_t id, id2;
	memset(&id, 0, sizeof(id));
	memcpy(id.internal, "NPCCLID1", 8);
	for (int i = 8; i < NPCCL_UNIQUE_ID_BYTES; i++)
		id.internal[i] = (char)rnd();
	char s[NPCCL_UNIQUE_ID_STRLEN];
	ok = npccl_unique_id_to_string(&id, s) == NPCCL_OK && strlen(s) == 2 * NPCCL_UNIQUE_ID_BYTES &&
	     npccl_unique_id_from_string(s, &id2) == NPCCL_OK && !memcmp(&id, &id2, sizeof(id));
	/* as read from a file or $(cat file): a trailing newline is accepted */
	char line[NPCCL_UNIQUE_ID_STRLEN + 3];
	snprintf(line, sizeof(line), "%s\r\n", s);
	memset(&id2, 0, sizeof(id2));
	ok &= npccl_unique_id_from_string(line, &id2) == NPCCL_OK && !memcmp(&id, &id2, sizeof(id));
	s[5] = 'z';
	ok &= npccl_unique_id_from_string(s, &id2) == NPCCL_ERR_INVALID_ARG;
	ok &= npccl_unique_id_from_string("00", &id2) == NPCCL_ERR_INVALID_ARG;
	ok &= npccl_unique_id_from_string(NULL, &id2) == NPCCL_ERR_INVALID_ARG;
	tap(ok, "unique id text form round-trips (a trailing newline accepted); malformed text rejected");

	ok = 1;
	for (int t = 0; t < 2000; t++) {
		size_t n = t < 20 ? (size_t)t : rnd() % 100000;
		int parts = 1 + (int)(rnd() % 9);
		size_t expect = 0, mx = 0, mn = (size_t)-1;
		for (int i = 0; i < parts; i++) {
			size_t off, len;
			block_range(n, parts, i, &off, &len);
			if (off != expect)
				ok = 0;
			expect += len;
			mx = len > mx ? len : mx;
			mn = len < mn ? len : mn;
		}
		if (expect != n || mx - mn > 1)
			ok = 0;
	}
	tap(ok, "block partitioning covers every element once, balanced within one element");

	ok = 1;
	for (int st = 0; st < NPCCL_NUM_STATUS; st++)
		if (!npccl_strerror((npccl_status_t)st) || !strcmp(npccl_strerror((npccl_status_t)st), "unknown npccl status"))
			ok = 0;
	ok &= !strcmp(npccl_strerror((npccl_status_t)999), "unknown npccl status");
	ok &= npccl_dtype_size(NPCCL_BFLOAT16) == 2 && npccl_dtype_size((npccl_dtype_t)77) == 0;
	ok &= npccl_algo_from_name("RING") == NPCCL_ALGO_RING && npccl_algo_from_name("x") == NPCCL_NUM_ALGOS;
	tap(ok, "status texts, dtype sizes, algorithm names");

	/* host identity: same process, same id; differs from a made-up one */
	struct host_identity a, b;
	host_identity_get(&a);
	host_identity_get(&b);
	tap(a.host_id == b.host_id && a.host_id != 0 && a.pidns_id != 0,
	    "host identity (boot id + network namespace) is stable");

	/* shm region: create, pass over a socketpair, see the same bytes */
	int sv[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	struct shm_region *r1 = NULL, *r2 = NULL;
	char err[256];
	ok = shm_region_create(1 << 20, "t", &r1, err, sizeof(err)) == 0 && shm_region_send(r1, sv[0]) == 0 &&
	     shm_region_recv(sv[1], 1000, &r2, err, sizeof(err)) == 0 && shm_region_size(r2) == (1 << 20);
	if (ok) {
		strcpy(shm_region_addr(r1), "hello");
		ok = !strcmp(shm_region_addr(r2), "hello");
	}
	shm_region_close(r1);
	shm_region_close(r2);
	shm_region_close(NULL);
	close(sv[0]);
	ok &= shm_region_recv(sv[1], 100, &r2, err, sizeof(err)) < 0;	/* peer closed: error, no hang */
	close(sv[1]);
	tap(ok, "shared region created, passed over a Unix socket, mapped by the receiver");

	/* the same through a bare descriptor (npccl_mem_alloc's exchange) */
	r1 = r2 = NULL;
	ok = shm_region_create(3 << 20, "t", &r1, err, sizeof(err)) == 0 &&
	     shm_region_import(shm_region_fd(r1), &r2, err, sizeof(err)) == 0 &&
	     shm_region_size(r2) == (3 << 20) && shm_region_addr(r2) != shm_region_addr(r1);
	if (ok) {
		strcpy((char *)shm_region_addr(r2) + (2 << 20), "world");
		ok = !strcmp((char *)shm_region_addr(r1) + (2 << 20), "world");
	}
	shm_region_close(r2);
	r2 = NULL;
	ok &= shm_region_import(-1, &r2, err, sizeof(err)) < 0 && r2 == NULL && err[0];
	shm_region_close(r1);
	tap(ok, "shared region imported from its descriptor maps the same memory; bad fd rejected");
}

/* one-rank communicators made from several threads while another runs
 * collectives: each creation reloads the NPCCL_* configuration the running
 * one reads (the sanitizers suite runs this under ThreadSanitizer) */
static void *make_comms(void *arg)
{
	for (int i = 0; i < 4; i++) {
		npccl_unique_id_t id;
		npccl_comm_t c = NULL;

		if (npccl_get_unique_id(&id) || npccl_comm_init_rank(&c, 1, &id, 0))
			return arg;
		npccl_comm_destroy(c);
	}
	return NULL;
}

static void test_threads(void)
{
	enum { N = 300000 };
	npccl_unique_id_t id;
	npccl_comm_t c = NULL;
	pthread_t t[2];
	float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
	int ok = x && y && !npccl_get_unique_id(&id) && !npccl_comm_init_rank(&c, 1, &id, 0);
	void *rv;

	for (int i = 0; ok && i < N; i++)
		x[i] = (float)(i % 97);
	for (int i = 0; ok && i < 2; i++)
		ok = !pthread_create(&t[i], NULL, make_comms, (void *)1);
	for (int r = 0; ok && r < 20; r++) {
		ok = !npccl_allreduce(x, y, N, NPCCL_FLOAT32, NPCCL_SUM, c) && !npccl_barrier(c);
		for (int i = 0; ok && i < N; i += 997)
			ok = y[i] == x[i];
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], &rv);
		ok = ok && !rv;
	}
	npccl_comm_destroy(c);
	free(x);
	free(y);
	tap(ok, "communicators made in two threads while a third runs collectives");
}

int main(void)
{
	ksft_print_header();
	test_kernels();
	test_minmax_nan();
	test_avg_divisor();
	test_reduce_multi();
	test_copy();
	test_half();
	test_misc();
	test_threads();
	ccl_tap_plan();
	return ksft_get_fail_cnt() ? 1 : 0;
}
