/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * ccl_det_test.c - deterministic reductions (NPCCL_DETERMINISTIC=1,
 * npccl_comm_set_deterministic), printing TAP.
 *
 *   ccl-det-test [--tcp] [--api] [--ranks A-B]   forked ranks on this host
 *   ccl-det-test env [--quick]                   a rank started by a launcher
 *                                                (netns hosts; --quick: the
 *                                                model's algorithm only, 3
 *                                                sizes, for the VM); prints
 *                                                "detcheck rank R/P hosts H ok|FAIL ..."
 *
 * Every rank runs AllReduce (out of place and in place), ReduceScatter and
 * Reduce of f32, f64, f16 and bf16 sums (and AllReduce on npccl_mem_alloc
 * buffers), at sizes from 1 element to past
 * the canonical algorithm's piece and the other algorithms' chunks, once
 * with every algorithm the collective has forced (and the cost model's
 * choice), with ranks arriving in a shuffled order, and compares the bytes
 * of every result with a reference computed here from every rank's inputs
 * in the documented canonical order: ((x0 + x1) + x2) ... + x(p-1), each
 * step rounded to the dtype (f16/bf16 widened to f32 for the add). Equal
 * bits for every case mean: the same whatever algorithm, transport, size,
 * arrival order or placement, and the same on every rank. A control run
 * without the mode must find bits that differ for some algorithm (else the
 * inputs would not be order-sensitive and the test would prove nothing;
 * from 3 ranks on: with two, x0 + x1 is the only order).
 * Inputs: random mantissas with exponents over 2^-8..2^8, so sums round.
 */
#include "ccl_tap.h"
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ccl_testlib.h"

#define MAXR 8
#define PIECE (256u << 10)	/* algo_canonical.c's piece: the sizes cross it */

struct rank_result {
	int done, bad, cases, control_differ, control_cases, explain_ok;
	char msg[600];
};

static struct rank_result *res;
static int quick;	/* env --quick: the model's algorithm only, 3 sizes (slow VMs) */

static const npccl_dtype_t dts[] = { NPCCL_FLOAT32, NPCCL_FLOAT64, NPCCL_FLOAT16,
				     NPCCL_BFLOAT16 };
static const npccl_coll_t colls[] = { NPCCL_COLL_ALLREDUCE, NPCCL_COLL_REDUCE_SCATTER,
				      NPCCL_COLL_REDUCE };

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static double value(int r, size_t i, unsigned salt)
{
	uint64_t h = mix(((uint64_t)r << 40) ^ ((uint64_t)salt << 56) ^ i);
	double m = (double)(h & 0xfffff) / 0x100000 - 0.5;
	return ldexp(m, (int)((h >> 20) % 17) - 8);
}

static void store(npccl_dtype_t dt, void *p, size_t i, double v)
{
	switch (dt) {
	case NPCCL_FLOAT32: ((float *)p)[i] = (float)v; break;
	case NPCCL_FLOAT64: ((double *)p)[i] = v; break;
	case NPCCL_FLOAT16: ((_Float16 *)p)[i] = (_Float16)(float)v; break;
	default: ((uint16_t *)p)[i] = t_f32_to_bf16((float)v); break;
	}
}

/* acc = acc + x, rounded as the canonical order rounds each step */
static void add_into(npccl_dtype_t dt, void *acc, const void *x, size_t i)
{
	switch (dt) {
	case NPCCL_FLOAT32: ((float *)acc)[i] = ((float *)acc)[i] + ((const float *)x)[i]; break;
	case NPCCL_FLOAT64:
		((double *)acc)[i] = ((double *)acc)[i] + ((const double *)x)[i];
		break;
	case NPCCL_FLOAT16:
		((_Float16 *)acc)[i] = (_Float16)((float)((_Float16 *)acc)[i] +
						  (float)((const _Float16 *)x)[i]);
		break;
	default:
		((uint16_t *)acc)[i] = t_f32_to_bf16(t_bf16_to_f32(((uint16_t *)acc)[i]) +
						     t_bf16_to_f32(((const uint16_t *)x)[i]));
	}
}

/* Rank r's n inputs into buf. */
static void inputs(npccl_dtype_t dt, void *buf, size_t n, int r, unsigned salt)
{
	for (size_t i = 0; i < n; i++)
		store(dt, buf, i, value(r, i, salt));
}

/* The canonical result of n elements over p ranks into ref (tmp: scratch). */
static void reference(npccl_dtype_t dt, void *ref, void *tmp, size_t n, int p, unsigned salt)
{
	inputs(dt, ref, n, 0, salt);
	for (int r = 1; r < p; r++) {
		inputs(dt, tmp, n, r, salt);
		for (size_t i = 0; i < n; i++)
			add_into(dt, ref, tmp, i);
	}
}

static npccl_status_t call(npccl_comm_t comm, npccl_coll_t coll, const void *in, void *out,
			   size_t n, npccl_dtype_t dt, int p, int root)
{
	switch (coll) {
	case NPCCL_COLL_ALLREDUCE: return npccl_allreduce(in, out, n, dt, NPCCL_SUM, comm);
	case NPCCL_COLL_REDUCE_SCATTER:
		return npccl_reduce_scatter(in, out, n / (size_t)p, dt, NPCCL_SUM, comm);
	default: return npccl_reduce(in, out, n, dt, NPCCL_SUM, root, comm);
	}
}

/* Bytes of this rank's output that must equal the reference, and where. */
static void expected(npccl_coll_t coll, size_t n, size_t es, int me, int p, int root,
		     size_t *off, size_t *len)
{
	*off = 0;
	*len = n * es;
	if (coll == NPCCL_COLL_REDUCE_SCATTER) {
		*off = (size_t)me * (n / (size_t)p) * es;
		*len = n / (size_t)p * es;
	} else if (coll == NPCCL_COLL_REDUCE && me != root) {
		*len = 0;
	}
}

/*
 * The checks on one rank; `api`: switch the mode on through the call (else
 * NPCCL_DETERMINISTIC=1 is in the environment). Returns the number of cases
 * whose bits differ from the reference.
 */
static int det_rank(npccl_comm_t comm, int me, int p, int api, struct rank_result *rr)
{
	size_t maxb = (size_t)p * PIECE + 64 * 8;
	char *in = malloc(maxb), *out = malloc(maxb), *ref = malloc(maxb), *tmp = malloc(maxb);
	unsigned salt = 0;

	if (!in || !out || !ref || !tmp) {
		snprintf(rr->msg, sizeof(rr->msg), "out of memory");
		rr->bad = 1;
		goto out_free;
	}
	if (api)
		npccl_comm_set_deterministic(comm, 1);
	npccl_explanation_t ex;
	/* ring forced, which reduces in another order: AllReduce on one host
	 * runs the shared-memory algorithm (already rank order), the rest the
	 * canonical one (whatever the model would pick: it may keep cma) */
	int nhosts, hidx;
	npccl_comm_hosts(comm, &nhosts, &hidx);
	npccl_algo_t want = nhosts == 1 && p > 1 ? NPCCL_ALGO_SHM : NPCCL_ALGO_CANONICAL;
	npccl_comm_set_algo(comm, NPCCL_COLL_ALLREDUCE, NPCCL_ALGO_RING);
	npccl_comm_set_algo(comm, NPCCL_COLL_REDUCE, NPCCL_ALGO_RING);
	rr->explain_ok = npccl_explain(comm, NPCCL_COLL_ALLREDUCE, 1000, NPCCL_FLOAT32, &ex) ==
				 NPCCL_OK && ex.algo == want && strstr(ex.text, "deterministic mode") &&
			 npccl_explain(comm, NPCCL_COLL_REDUCE, 1000, NPCCL_FLOAT32, &ex) ==
				 NPCCL_OK && ex.algo == NPCCL_ALGO_CANONICAL;
	npccl_comm_set_algo(comm, NPCCL_COLL_ALLREDUCE, NPCCL_ALGO_AUTO);
	npccl_comm_set_algo(comm, NPCCL_COLL_REDUCE, NPCCL_ALGO_AUTO);
	/* the single-copy reductions reduce in rank order too: kept where forced */
	if (npccl_algo_supported(comm, NPCCL_COLL_REDUCE_SCATTER, NPCCL_ALGO_CMA)) {
		npccl_comm_set_algo(comm, NPCCL_COLL_REDUCE_SCATTER, NPCCL_ALGO_CMA);
		rr->explain_ok &= npccl_explain(comm, NPCCL_COLL_REDUCE_SCATTER, 1000, NPCCL_FLOAT32,
						&ex) == NPCCL_OK && ex.algo == NPCCL_ALGO_CMA &&
				  strstr(ex.text, "already in rank order") != NULL;
		npccl_comm_set_algo(comm, NPCCL_COLL_REDUCE_SCATTER, NPCCL_ALGO_AUTO);
	}
	for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
		npccl_dtype_t dt = dts[d];
		size_t es = npccl_dtype_size(dt);
		size_t sizes[] = { (size_t)p, 5 * (size_t)p, 1000, (size_t)p * (PIECE / es) + 7 };
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			size_t n = sizes[s];
			for (size_t k = 0; k < sizeof(colls) / sizeof(colls[0]); k++) {
				npccl_coll_t coll = colls[k];
				int root = (int)(salt % (unsigned)p);
				salt++;
				reference(dt, ref, tmp, n, p, salt);
				if (quick && s == 1)
					continue;
				for (int a = 0; a < NPCCL_NUM_ALGOS; a++) {
					if (a && (quick || !npccl_algo_supported(comm, coll,
										   (npccl_algo_t)a)))
						continue;
					for (int inplace = 0; inplace < 2; inplace++) {
						if (inplace && (coll != NPCCL_COLL_ALLREDUCE || a))
							continue;
						npccl_comm_set_algo(comm, coll, (npccl_algo_t)a);
						inputs(dt, in, n, me, salt);
						memset(out, 0xa5, n * es);
						/* shuffle the arrival order */
						uint64_t h = mix(salt * 977u + (unsigned)(a * 31 + me));
						if ((h & 3) == 0)
							usleep((useconds_t)(h >> 8) % 2000);
						npccl_status_t st = call(comm, coll, in,
									 inplace ? in : out, n, dt,
									 p, root);
						const char *got = inplace ? in : out;
						size_t off, len;
						expected(coll, n, es, me, p, root, &off, &len);
						rr->cases++;
						if (st == NPCCL_OK &&
						    !memcmp(got, ref + off, len))
							continue;
						if (!rr->bad++)
							snprintf(rr->msg, sizeof(rr->msg),
								 "first difference: %s of %zu %s, "
								 "algorithm %s%s, rank %d: %s",
								 npccl_coll_name(coll), n,
								 npccl_dtype_name(dt),
								 a ? npccl_algo_name((npccl_algo_t)a)
								   : "auto",
								 inplace ? " in place" : "", me,
								 st ? npccl_comm_last_error(comm)
								    : "result bits differ");
						if (st)
							goto out_free;
					}
				}
				npccl_comm_set_algo(comm, coll, NPCCL_ALGO_AUTO);
			}
		}
	}
	/* buffers from npccl_mem_alloc (one host: the zero-copy path) */
	for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
		npccl_dtype_t dt = dts[d];
		size_t es = npccl_dtype_size(dt), n = (size_t)p * (PIECE / es) + 7;
		void *sbuf = NULL, *rbuf = NULL;
		salt++;
		reference(dt, ref, tmp, n, p, salt);
		if (npccl_mem_alloc(comm, n * es, &sbuf) || npccl_mem_alloc(comm, n * es, &rbuf)) {
			snprintf(rr->msg, sizeof(rr->msg), "npccl_mem_alloc: %s",
				 npccl_comm_last_error(comm));
			rr->bad++;
			goto out_free;
		}
		inputs(dt, sbuf, n, me, salt);
		npccl_status_t st = npccl_allreduce(sbuf, rbuf, n, dt, NPCCL_SUM, comm);
		rr->cases++;
		if (st || memcmp(rbuf, ref, n * es)) {
			if (!rr->bad++)
				snprintf(rr->msg, sizeof(rr->msg), "first difference: allreduce of %zu %s "
					 "on npccl_mem_alloc buffers, rank %d: %s", n,
					 npccl_dtype_name(dt), me,
					 st ? npccl_comm_last_error(comm) : "result bits differ");
		}
		npccl_mem_free(comm, rbuf);
		npccl_mem_free(comm, sbuf);
		if (st)
			goto out_free;
	}
	/* the control: the same AllReduce without the mode, every algorithm */
	npccl_comm_set_deterministic(comm, 0);
	for (size_t n = 1000; n <= (size_t)p * (PIECE / 4) + 7; n = (size_t)p * (PIECE / 4) + 7) {
		salt++;
		reference(NPCCL_FLOAT32, ref, tmp, n, p, salt);
		for (int a = 1; a < NPCCL_NUM_ALGOS; a++) {
			if (a == NPCCL_ALGO_CANONICAL ||
			    !npccl_algo_supported(comm, NPCCL_COLL_ALLREDUCE, (npccl_algo_t)a))
				continue;
			npccl_comm_set_algo(comm, NPCCL_COLL_ALLREDUCE, (npccl_algo_t)a);
			inputs(NPCCL_FLOAT32, in, n, me, salt);
			if (npccl_allreduce(in, out, n, NPCCL_FLOAT32, NPCCL_SUM, comm)) {
				rr->bad++;
				goto out_free;
			}
			rr->control_cases++;
			rr->control_differ += memcmp(out, ref, n * 4) != 0;
		}
		if (n > 1000)
			break;
	}
out_free:
	free(in);
	free(out);
	free(ref);
	free(tmp);
	return rr->bad;
}

static int run_p(int p, int tcp, int api)
{
	npccl_unique_id_t id;
	pid_t pids[MAXR];

	if (npccl_get_unique_id(&id) != NPCCL_OK)
		return 0;
	memset(res, 0, sizeof(*res) * MAXR);
	fflush(stdout);
	for (int r = 0; r < p; r++) {
		pids[r] = fork();
		if (pids[r] == 0) {
			npccl_comm_t comm;
			char err[512];
			alarm(240);
			if (npccl_comm_init_rank_err(&comm, p, &id, r, err, sizeof(err))) {
				snprintf(res[r].msg, sizeof(res[r].msg), "init: %s", err);
				res[r].bad = 1;
				_exit(1);
			}
			det_rank(comm, r, p, api, &res[r]);
			res[r].done = 1;
			npccl_comm_destroy(comm);
			_exit(0);
		}
	}
	int ok = 1;
	for (int r = 0; r < p; r++) {
		int st;
		if (waitpid(pids[r], &st, 0) != pids[r] || !WIFEXITED(st) || WEXITSTATUS(st))
			ok = 0;
	}
	int cases = 0, differ = 0, ctl = 0;
	for (int r = 0; r < p; r++) {
		ok &= res[r].done && !res[r].bad && res[r].explain_ok;
		cases += res[r].cases;
		differ += res[r].control_differ;
		ctl += res[r].control_cases;
		if (res[r].bad || !res[r].done)
			printf("# rank %d: %d of %d cases differ; %s\n", r, res[r].bad, res[r].cases,
			       res[r].msg);
		if (!res[r].explain_ok)
			printf("# rank %d: npccl_explain does not report the deterministic mode's "
			       "algorithm\n", r);
	}
	const char *tp = tcp ? "tcp" : "shm";
	ccl_tap(ok, "deterministic %s p=%d (mode by %s): %d results (AllReduce, in place too, "
		    "ReduceScatter, Reduce x f32 f64 f16 bf16 sums x 4 sizes up to past a piece x "
		    "every algorithm, shuffled arrival) bitwise equal to the rank-order reference "
		    "on every rank", tp, p, api ? "npccl_comm_set_deterministic" :
		    "NPCCL_DETERMINISTIC=1", cases);
	/* two ranks: x0 + x1 is the only order (addition commutes), no control */
	if (p < 3)
		return ok;
	ccl_tap(ok && differ > 0, "deterministic %s p=%d control: without the mode %d of %d "
				  "AllReduce results differ from it (the inputs are order-sensitive)",
		tp, p, differ, ctl);
	return ok && differ > 0;
}

/* A launched rank (the netns suite's hosts): NPCCL_DETERMINISTIC=1 set by the caller. */
static int cmd_env(void)
{
	npccl_comm_t comm;
	char err[512];
	struct rank_result rr = { 0 };
	int me, p, nh, h;

	if (npccl_comm_init_env(&comm, err, sizeof(err))) {
		printf("detcheck FAIL init: %s\n", err);
		return 1;
	}
	npccl_comm_rank(comm, &me);
	npccl_comm_size(comm, &p);
	npccl_comm_hosts(comm, &nh, &h);
	det_rank(comm, me, p, 0, &rr);
	int ok = !rr.bad && rr.explain_ok;
	printf("detcheck rank %d/%d hosts %d %s: %d results bitwise equal to the reference, %d of "
	       "%d differ without the mode%s%s\n", me, p, nh, ok ? "ok" : "FAIL", rr.cases - rr.bad,
	       rr.control_differ, rr.control_cases, rr.bad ? "; " : "", rr.msg);
	npccl_comm_destroy(comm);
	return ok ? 0 : 1;
}

/* --help (tests/common/test_usage.c) */
const char npushm_test_usage[] =
	"[--tcp] [--api] [--ranks A-B] | env [--quick]\n"
	"Deterministic reductions: bits against the canonical-order reference, TAP on stdout\n"
	"(make check-ccl runs it); env: one rank started by a launcher.\n";

int main(int argc, char **argv)
{
	int lo = 2, hi = 5, tcp = 0, api = 0, failed = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (argc > 1 && !strcmp(argv[1], "env")) {
		quick = argc > 2 && !strcmp(argv[2], "--quick");
		return cmd_env();
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--tcp")) {
			tcp = 1;
		} else if (!strcmp(argv[i], "--api")) {
			api = 1;
		} else if (!strcmp(argv[i], "--ranks") && i + 1 < argc) {
			if (sscanf(argv[++i], "%d-%d", &lo, &hi) == 1)
				hi = lo;
		} else {
			fprintf(stderr, "usage: ccl-det-test [--tcp] [--api] [--ranks A-B] | env\n");
			return 2;
		}
	}
	if (lo < 1 || hi > MAXR || lo > hi) {
		fprintf(stderr, "ccl-det-test: --ranks must be within 1-%d\n", MAXR);
		return 2;
	}
	res = mmap(NULL, sizeof(*res) * MAXR, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		   -1, 0);
	if (res == MAP_FAILED)
		return 2;
	if (tcp)
		setenv("NPCCL_DISABLE_SHM", "1", 1);
	if (!api)
		setenv("NPCCL_DETERMINISTIC", "1", 1);
	for (int p = lo; p <= hi; p++)
		failed += !run_p(p, tcp, api);
	ccl_tap_plan();
	return failed ? 1 : 0;
}
