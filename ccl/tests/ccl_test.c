/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * ccl_test.c - multi-process tests of libnpccl, printing TAP.
 *
 *   ccl-test matrix [--full] [--ranks A-B] [--tcp]   collectives vs reference
 *   ccl-test fault NAME                              one failure scenario
 *   ccl-test env-worker                              rank started by a launcher
 *   ccl-test netns-worker OUT                        rank in a network namespace
 *   ccl-test misc                                    API, split, explain, negatives
 *   ccl-test shm                                     shm AllReduce paths, npccl_mem_alloc
 *   ccl-test env-matrix                              launched rank: every collective x
 *                                                    dtype x counts (rank 0 prints TAP)
 *   ccl-test single-copy [--uids] [--seccomp] [--require-space] [--quick]
 *                                                    single-copy algorithms: correctness
 *                                                    and the path (copy counters)
 *   ccl-test single-copy-race [--uids] [--seccomp]  a rank's unmap, remap, CoW and exit
 *                                                    during single-copy calls
 *   ccl-test env-zc                                  launched rank: npccl_mem_alloc
 *                                                    buffers over RDMA, registration cache
 *   ccl-test env-usercache                           launched rank: other buffers over
 *                                                    RDMA, invalidation by the watch
 *   ccl-test env-fault NAME VICTIM                   launched rank: a mismatched call
 *
 * Ranks are forked children sharing a unique id made by the parent; results
 * travel back through a shared anonymous mapping. The parent is a watchdog:
 * a rank that does not finish within its budget is killed and the test
 * fails (never a hang). Inputs come from ccl_testlib.h: exact in any order.
 */
#include "ccl_tap.h"
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>

#include "ccl_testlib.h"

#ifndef MAX
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#endif

#define MAXR 8
#define MAXT 512
#define MSG 1100

struct result {
	int done;
	int ok;
	int status;
	double elapsed_ms;
	char msg[MSG];
};

struct shared {
	atomic_int barrier_count;
	int ntests;
	char names[MAXT][96];
	struct result res[MAXR][MAXT];
	atomic_int past_init[MAXR];	/* fault tests: the rank has its communicator */
	atomic_int past_first[MAXR];	/* late-kill: the rank finished its first call */
	atomic_int late_back;		/* late-kill: the late rank entered npccl again */
	atomic_int event;		/* single-copy races: the victim's change is done */
	atomic_int iter;		/* single-copy races: the victim's calls so far */
};

static struct shared *sh;

#define tap ccl_tap

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Forks p ranks running fn(rank, p, id, arg); waits up to budget_s seconds,
 * kills everything on a hang. Returns the number of ranks that did not exit 0
 * (or -1 on watchdog). */
typedef int (*rank_fn)(int rank, int p, const npccl_unique_id_t *id, void *arg);

static int run_ranks(int p, rank_fn fn, void *arg, double budget_s, pid_t *pids_out)
{
	npccl_unique_id_t id;
	if (npccl_get_unique_id(&id) != NPCCL_OK) {
		fprintf(stderr, "npccl_get_unique_id failed\n");
		return p;
	}
	pid_t pids[MAXR];
	fflush(stdout);
	for (int r = 0; r < p; r++) {
		pids[r] = fork();
		if (pids[r] == 0) {
			alarm((unsigned)budget_s + 30);	/* last resort */
			_exit(fn(r, p, &id, arg));
		}
		if (pids_out)
			pids_out[r] = pids[r];
	}
	int bad = 0, left = p;
	double end = now_ms() + budget_s * 1000;
	int alive[MAXR];
	for (int r = 0; r < p; r++)
		alive[r] = 1;
	while (left > 0) {
		int st;
		pid_t w = waitpid(-1, &st, WNOHANG);
		if (w > 0) {
			for (int r = 0; r < p; r++)
				if (pids[r] == w && alive[r]) {
					alive[r] = 0;
					left--;
					if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
						bad++;
				}
			continue;
		}
		if (now_ms() > end) {
			for (int r = 0; r < p; r++)
				if (alive[r]) {
					fprintf(stderr, "watchdog: rank %d (pid %d) still running after "
							"%.0f s: killed\n", r, pids[r], budget_s);
					kill(pids[r], SIGKILL);
				}
			while (waitpid(-1, NULL, 0) > 0)
				;
			return -1;
		}
		usleep(2000);
	}
	return bad;
}

/* ---------------------------------------------------------------- matrix */

static const npccl_coll_t colls[] = {
	NPCCL_COLL_ALLREDUCE, NPCCL_COLL_ALLGATHER, NPCCL_COLL_REDUCE_SCATTER,
	NPCCL_COLL_BROADCAST, NPCCL_COLL_REDUCE, NPCCL_COLL_GATHER, NPCCL_COLL_SCATTER,
	NPCCL_COLL_ALLTOALL, NPCCL_COLL_BARRIER, NPCCL_COLL_SEND,
};
#define NCOLLS (int)(sizeof(colls) / sizeof(colls[0]))

static int is_reducing(npccl_coll_t c)
{
	return c == NPCCL_COLL_ALLREDUCE || c == NPCCL_COLL_REDUCE_SCATTER || c == NPCCL_COLL_REDUCE;
}

struct matrix_opts {
	int full;
	int tcp;
};

/* element counts for p ranks; the last is the "several MiB" size */
static int counts_for(int p, size_t *c, int full)
{
	int n = 0;
	size_t base[] = { 0, 1, (size_t)(p > 1 ? p - 1 : 2), (size_t)p + 1, 7, 13, 31, 15, 17, 1023, 1025 };
	for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++)
		c[n++] = base[i];
	if (full) {
		c[n++] = 65537;
		c[n++] = 262143;
	}
	return n;
}

static char *xalloc(size_t n)
{
	char *p = malloc(n ? n : 1);
	if (!p)
		abort();
	return p;
}

static int set_algo(npccl_comm_t comm, npccl_coll_t coll, npccl_algo_t a)
{
	if (coll == NPCCL_COLL_SEND)
		return 0;
	return npccl_comm_set_algo(comm, coll, a);
}

/* One call of `coll` and its check. Returns 0 ok, else writes msg. */
static int one_call(npccl_comm_t comm, int me, int p, npccl_coll_t coll, npccl_dtype_t dt,
		    npccl_redop_t op, size_t count, int inplace, int root, char *msg)
{
	size_t es = npccl_dtype_size(dt);
	size_t in_n = count, out_n = count;
	switch (coll) {
	case NPCCL_COLL_ALLGATHER: out_n = count * (size_t)p; break;
	case NPCCL_COLL_REDUCE_SCATTER: in_n = count * (size_t)p; break;
	case NPCCL_COLL_GATHER: out_n = count * (size_t)p; break;
	case NPCCL_COLL_SCATTER: in_n = count * (size_t)p; break;
	case NPCCL_COLL_ALLTOALL: in_n = out_n = count * (size_t)p; break;
	default: break;
	}
	npccl_redop_t gop = is_reducing(coll) ? op : NPCCL_SUM;
	char *in = xalloc(in_n * es), *out = xalloc(MAX(in_n, out_n) * es);
	char *exp = xalloc(out_n * es);
	memset(out, 0xA5, MAX(in_n, out_n) * es);
	for (size_t i = 0; i < in_n; i++)
		put(dt, in, i, gen(dt, gop, me, i));
	npccl_status_t st = NPCCL_OK;
	const char *sb = in;
	char *rb = out;
	size_t check_off = 0;	/* where the result lives in `out` */
	switch (coll) {
	case NPCCL_COLL_ALLREDUCE:
		if (inplace) {
			memcpy(out, in, in_n * es);
			sb = out;
		}
		st = npccl_allreduce(sb, rb, count, dt, op, comm);
		for (size_t i = 0; i < count; i++)
			put_reduced(dt, op, p, exp, i, i);
		break;
	case NPCCL_COLL_REDUCE_SCATTER:
		if (inplace) {
			memcpy(out, in, in_n * es);
			sb = out;
			rb = out + (size_t)me * count * es;
			check_off = (size_t)me * count * es;
		}
		st = npccl_reduce_scatter(sb, rb, count, dt, op, comm);
		for (size_t i = 0; i < count; i++)
			put_reduced(dt, op, p, exp, i, (size_t)me * count + i);
		break;
	case NPCCL_COLL_REDUCE:
		if (inplace && me == root) {
			memcpy(out, in, in_n * es);
			sb = out;
		}
		st = npccl_reduce(sb, rb, count, dt, op, root, comm);
		for (size_t i = 0; i < count; i++)
			put_reduced(dt, op, p, exp, i, i);
		if (me != root)
			out_n = 0;
		break;
	case NPCCL_COLL_ALLGATHER:
		if (inplace) {
			memcpy(out + (size_t)me * count * es, in, count * es);
			sb = out + (size_t)me * count * es;
		}
		st = npccl_allgather(sb, rb, count, dt, comm);
		for (int r = 0; r < p; r++)
			for (size_t i = 0; i < count; i++)
				put(dt, exp, (size_t)r * count + i, gen(dt, gop, r, i));
		break;
	case NPCCL_COLL_BROADCAST:
		if (inplace) {
			if (me == root)
				memcpy(out, in, count * es);
			sb = out;
		}
		st = npccl_broadcast(sb, rb, count, dt, root, comm);
		for (size_t i = 0; i < count; i++)
			put(dt, exp, i, gen(dt, gop, root, i));
		break;
	case NPCCL_COLL_GATHER:
		if (inplace && me == root) {
			memcpy(out + (size_t)root * count * es, in, count * es);
			sb = out + (size_t)root * count * es;
		}
		st = npccl_gather(sb, rb, count, dt, root, comm);
		for (int r = 0; r < p; r++)
			for (size_t i = 0; i < count; i++)
				put(dt, exp, (size_t)r * count + i, gen(dt, gop, r, i));
		if (me != root)
			out_n = 0;
		break;
	case NPCCL_COLL_SCATTER:
		if (inplace && me == root) {
			memcpy(out, in, in_n * es);
			sb = out;
			rb = out + (size_t)root * count * es;
			check_off = (size_t)root * count * es;
		}
		st = npccl_scatter(sb, rb, count, dt, root, comm);
		for (size_t i = 0; i < count; i++)
			put(dt, exp, i, gen(dt, gop, root, (size_t)me * count + i));
		break;
	case NPCCL_COLL_ALLTOALL:
		if (inplace) {
			memcpy(out, in, in_n * es);
			sb = out;
		}
		st = npccl_alltoall(sb, rb, count, dt, comm);
		for (int j = 0; j < p; j++)
			for (size_t i = 0; i < count; i++)
				put(dt, exp, (size_t)j * count + i, gen(dt, gop, j, (size_t)me * count + i));
		break;
	case NPCCL_COLL_BARRIER: {
		static int round;
		round++;
		atomic_fetch_add(&sh->barrier_count, 1);
		st = npccl_barrier(comm);
		int seen = atomic_load(&sh->barrier_count);
		/* everyone incremented for this round before anyone left it */
		if (st == NPCCL_OK && seen < round * p) {
			snprintf(msg, MSG, "barrier round %d: left with counter %d < %d", round, seen,
				 round * p);
			free(in), free(out), free(exp);
			return 1;
		}
		/* second barrier so the counter of the next round is clean */
		if (st == NPCCL_OK)
			st = npccl_barrier(comm);
		round = round;	/* rounds counted per call pair */
		out_n = 0;
		break;
	}
	case NPCCL_COLL_SEND: {
		/* ring exchange with sendrecv, then ordered send/recv pairs */
		int right = (me + 1) % p, left = (me - 1 + p) % p;
		if (p == 1) {
			out_n = 0;
			break;
		}
		st = npccl_sendrecv(in, count, right, out, count, left, dt, comm);
		for (size_t i = 0; i < count; i++)
			put(dt, exp, i, gen(dt, gop, left, i));
		if (st == NPCCL_OK && p % 2 == 0) {
			/* even ranks send first to me+1, odd receive first */
			if (memcmp(out, exp, count * es)) {
				snprintf(msg, MSG, "sendrecv: wrong data from rank %d", left);
				free(in), free(out), free(exp);
				return 1;
			}
			int partner = me ^ 1;
			if (me % 2 == 0)
				st = npccl_send(in, count, dt, partner, comm);
			else
				st = npccl_recv(out, count, dt, partner, comm);
			if (st == NPCCL_OK)
				st = me % 2 ? npccl_send(in, count, dt, partner, comm)
					    : npccl_recv(out, count, dt, partner, comm);
			for (size_t i = 0; i < count; i++)
				put(dt, exp, i, gen(dt, gop, partner, i));
		}
		break;
	}
	default:
		break;
	}
	int bad = 0;
	if (st != NPCCL_OK) {
		snprintf(msg, MSG, "%s(count=%zu %s %s root=%d%s) returned %s: %s",
			 npccl_coll_name(coll), count, npccl_dtype_name(dt), npccl_redop_name(op),
			 root, inplace ? " in place" : "", npccl_strerror(st),
			 npccl_comm_last_error(comm));
		bad = 2;
	} else if (out_n && memcmp(out + check_off, exp, out_n * es)) {
		size_t i = 0;
		while (i < out_n && !memcmp(out + check_off + i * es, exp + i * es, es))
			i++;
		snprintf(msg, MSG, "%s(count=%zu %s %s root=%d%s): wrong result at element %zu of %zu",
			 npccl_coll_name(coll), count, npccl_dtype_name(dt), npccl_redop_name(op), root,
			 inplace ? " in place" : "", i, out_n);
		bad = 1;
	}
	free(in);
	free(out);
	free(exp);
	return bad;
}

struct test_item {
	npccl_coll_t coll;
	npccl_algo_t algo;
};

static int build_items(npccl_comm_t comm, struct test_item *items)
{
	int n = 0;
	for (int ci = 0; ci < NCOLLS; ci++) {
		npccl_coll_t coll = colls[ci];
		if (coll == NPCCL_COLL_SEND) {
			items[n++] = (struct test_item){ coll, NPCCL_ALGO_AUTO };
			continue;
		}
		for (int a = 1; a < NPCCL_NUM_ALGOS; a++)
			if (npccl_algo_supported(comm, coll, (npccl_algo_t)a))
				items[n++] = (struct test_item){ coll, (npccl_algo_t)a };
	}
	return n;
}

static int matrix_rank(int me, int p, const npccl_unique_id_t *id, void *arg)
{
	struct matrix_opts *o = arg;
	npccl_comm_t comm;
	char err[512];
	npccl_status_t st = npccl_comm_init_rank_err(&comm, p, id, me, err, sizeof(err));
	if (st) {
		snprintf(sh->res[me][0].msg, MSG, "init: %s", err);
		sh->res[me][0].done = 1;
		return 1;
	}
	struct test_item items[64];
	int n = build_items(comm, items);
	if (me == 0) {
		sh->ntests = n + 1;
		for (int t = 0; t < n; t++)
			snprintf(sh->names[t], sizeof(sh->names[t]), "%s algo=%s", npccl_coll_name(items[t].coll),
				 items[t].coll == NPCCL_COLL_SEND ? "p2p" : npccl_algo_name(items[t].algo));
		snprintf(sh->names[n], sizeof(sh->names[n]), "large messages, every dtype and op");
	}
	size_t counts[32];
	int ncounts = counts_for(p, counts, o->full);
	int call = 0;
	for (int t = 0; t < n; t++) {
		struct result *r = &sh->res[me][t];
		double t0 = now_ms();
		r->ok = 1;
		if (set_algo(comm, items[t].coll, items[t].algo)) {
			r->ok = 0;
			snprintf(r->msg, MSG, "set_algo refused: %s", npccl_comm_last_error(comm));
		}
		int reducing = is_reducing(items[t].coll);
		int nops = reducing ? NPCCL_NUM_REDOPS : 1;
		int ndt = items[t].coll == NPCCL_COLL_BARRIER ? 1 : NPCCL_NUM_DTYPES;
		for (int d = 0; d < ndt && r->ok; d++)
			for (int op = 0; op < nops && r->ok; op++)
				for (int k = 0; k < ncounts && r->ok; k++) {
					if (items[t].coll == NPCCL_COLL_BARRIER && k > 0)
						break;
					int inplace = (k + d + op) % 2;
					int root = call % p;
					call++;
					int bad = one_call(comm, me, p, items[t].coll, (npccl_dtype_t)d,
							   (npccl_redop_t)op, counts[k], inplace, root,
							   r->msg);
					if (bad) {
						r->ok = 0;
						r->status = bad;
					}
				}
		r->elapsed_ms = now_ms() - t0;
		r->done = 1;
		if (!r->ok && r->status == 2)	/* communicator unusable */
			break;
	}
	/* large: one call per (coll, algo) rotating dtype and op, 1-5 MiB */
	struct result *r = &sh->res[me][n];
	double t_large = now_ms();
	r->ok = 1;
	int rot = 0;
	for (int t = 0; t < n && r->ok; t++) {
		if (items[t].coll == NPCCL_COLL_BARRIER)
			continue;
		set_algo(comm, items[t].coll, items[t].algo);
		int reps = o->full ? NPCCL_NUM_DTYPES * NPCCL_NUM_REDOPS : 1;
		for (int rep = 0; rep < reps && r->ok; rep++, rot++) {
			npccl_dtype_t d = (npccl_dtype_t)((rot + p) % NPCCL_NUM_DTYPES);
			npccl_redop_t op = (npccl_redop_t)((rot / 2 + p) % NPCCL_NUM_REDOPS);
			size_t target = items[t].coll == NPCCL_COLL_ALLREDUCE ? (5u << 20) : (1u << 20);
			size_t per_rank = items[t].coll == NPCCL_COLL_ALLGATHER ||
						  items[t].coll == NPCCL_COLL_REDUCE_SCATTER ||
						  items[t].coll == NPCCL_COLL_GATHER ||
						  items[t].coll == NPCCL_COLL_SCATTER ||
						  items[t].coll == NPCCL_COLL_ALLTOALL
					  ? (size_t)p : 1;
			size_t count = target / npccl_dtype_size(d) / per_rank + (size_t)(rot % 3);
			if (one_call(comm, me, p, items[t].coll, d, op, count, rot % 2, rot % p,
				     r->msg))
				r->ok = 0;
		}
	}
	r->elapsed_ms = now_ms() - t_large;
	r->done = 1;
	npccl_comm_destroy(comm);
	return 0;
}

/* One TAP line per item of sh->names, ok if every one of the @p ranks
 * passed it; @rc: run_ranks()'s verdict. Returns the failures. */
static int report_items(int p, int rc, const char *label)
{
	int n = sh->ntests, failed = 0;
	if (n == 0) {
		tap(0, "%s p=%d: ranks did not start: %s", label, p, sh->res[0][0].msg);
		return 1;
	}
	for (int t = 0; t < n; t++) {
		int ok = 1;
		double ms = 0;
		for (int r = 0; r < p; r++) {
			struct result *res = &sh->res[r][t];
			if (!res->done || !res->ok) {
				const char *why = res->done ? res->msg
						  : rc < 0 ? "rank hung (watchdog)" : "rank did not finish";
				ok = 0;
				printf("# rank %d: %s\n", r, why[0] ? why : "rank did not finish");
			}
			ms = MAX(ms, res->elapsed_ms);
		}
		tap(ok, "%s p=%d %s (%.0f ms)", label, p, sh->names[t], ms);
		failed += !ok;
	}
	if (rc != 0) {
		tap(0, "%s p=%d: %d rank(s) exited abnormally", label, p, rc);
		failed++;
	}
	return failed;
}

static int cmd_matrix(int argc, char **argv)
{
	struct matrix_opts o = { 0, 0 };
	int lo = 1, hi = 8;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--full"))
			o.full = 1;
		else if (!strcmp(argv[i], "--tcp"))
			o.tcp = 1;
		else if (!strcmp(argv[i], "--ranks") && i + 1 < argc)
			sscanf(argv[++i], "%d-%d", &lo, &hi);
	}
	if (o.tcp)
		setenv("NPCCL_DISABLE_SHM", "1", 1);
	int failed = 0;
	for (int p = lo; p <= hi; p++) {
		memset(sh, 0, sizeof(*sh));
		double t0 = now_ms();
		int rc = run_ranks(p, matrix_rank, &o, o.full ? 1200 : 120, NULL);
		failed += report_items(p, rc, o.tcp ? "tcp" : "shm");
		printf("# p=%d took %.1f s\n", p, (now_ms() - t0) / 1000);
	}
	ccl_tap_plan();
	return failed ? 1 : 0;
}

/* ---------------------------------------------------------------- faults */

struct fault_arg {
	const char *name;
	int victim;
	size_t count;
};

static void record(int me, npccl_status_t st, npccl_comm_t comm, const char *extra)
{
	struct result *r = &sh->res[me][0];
	r->status = st;
	snprintf(r->msg, MSG, "%s%s", extra ? extra : "", comm ? npccl_comm_last_error(comm) : "");
	r->done = 1;
}

static void *abort_later(void *comm)
{
	usleep(300000);
	npccl_comm_abort(comm);	/* must return although another thread is blocked */
	return NULL;
}

/*
 * Fault case @nm ("mismatch-count[-large]", "-dtype", "-op", "-coll",
 * "-root"): one agreed AllReduce, then a call in which rank @victim differs
 * from the others, then a barrier, so that a rank whose own part of the
 * mismatched call completed (a root whose sends were buffered) learns of it
 * on its next call.
 */
static npccl_status_t mismatched_call(const char *nm, int me, int victim, float *buf, size_t n,
				      npccl_comm_t comm)
{
	npccl_status_t st = npccl_allreduce(buf, buf, n, NPCCL_FLOAT32, NPCCL_SUM, comm);

	if (st != NPCCL_OK)
		return st;
	if (me == victim) {
		if (!strncmp(nm, "mismatch-count", 14))
			st = npccl_allreduce(buf, buf, n + 1, NPCCL_FLOAT32, NPCCL_SUM, comm);
		else if (!strcmp(nm, "mismatch-dtype"))
			st = npccl_allreduce(buf, buf, n, NPCCL_INT32, NPCCL_SUM, comm);
		else if (!strcmp(nm, "mismatch-op"))
			st = npccl_allreduce(buf, buf, n, NPCCL_FLOAT32, NPCCL_MAX, comm);
		else if (!strcmp(nm, "mismatch-coll"))
			st = npccl_broadcast(buf, buf, n, NPCCL_FLOAT32, 0, comm);
		else
			st = npccl_broadcast(buf, buf, n, NPCCL_FLOAT32, 1, comm);
	} else if (!strcmp(nm, "mismatch-root")) {
		st = npccl_broadcast(buf, buf, n, NPCCL_FLOAT32, 0, comm);
	} else {
		st = npccl_allreduce(buf, buf, n, NPCCL_FLOAT32, NPCCL_SUM, comm);
	}
	if (st == NPCCL_OK)
		st = npccl_barrier(comm);
	return st;
}

static int fault_rank(int me, int p, const npccl_unique_id_t *id, void *argp)
{
	struct fault_arg *a = argp;
	npccl_comm_t comm;
	char err[512];
	double t_init = now_ms();
	npccl_status_t st = npccl_comm_init_rank_err(&comm, p, id, me, err, sizeof(err));
	if (st) {
		sh->res[me][0].elapsed_ms = now_ms() - t_init;
		record(me, st, NULL, err);
		if (!strcmp(a->name, "setupfail") && me == a->victim)
			sleep(8);	/* a failed rank that lives on: the others must not wait for it */
		return 1;
	}
	atomic_store(&sh->past_init[me], 1);
	size_t n = a->count;
	float *buf = calloc(n + 8, sizeof(float));
	double t0 = now_ms();
	const char *nm = a->name;
	if (!strcmp(nm, "mismatch-count") || !strcmp(nm, "mismatch-dtype") ||
	    !strcmp(nm, "mismatch-op") || !strcmp(nm, "mismatch-coll") ||
	    !strcmp(nm, "mismatch-root")) {
		st = mismatched_call(nm, me, a->victim, buf, n, comm);
	} else if (!strcmp(nm, "absent")) {
		/* the victim makes one call fewer and then idles */
		st = npccl_allreduce(buf, buf, n, NPCCL_FLOAT32, NPCCL_SUM, comm);
		if (me == a->victim) {
			sleep(4);
		} else if (st == NPCCL_OK) {
			st = npccl_allreduce(buf, buf, n, NPCCL_FLOAT32, NPCCL_SUM, comm);
		}
	} else if (!strcmp(nm, "abort-thread")) {
		if (me == a->victim) {
			pthread_t th;
			pthread_create(&th, NULL, abort_later, comm);
			st = npccl_allreduce(buf, buf, n, NPCCL_FLOAT32, NPCCL_SUM, comm);
			pthread_join(th, NULL);
			sh->res[me][0].elapsed_ms = now_ms() - t0;
			record(me, st, NULL, "blocked call returned when another thread aborted");
			free(buf);
			return 0;
		}
		usleep(800000);
		/* the victim's data may already be complete: then the next call fails */
		st = npccl_allreduce(buf, buf, n, NPCCL_FLOAT32, NPCCL_SUM, comm);
		if (st == NPCCL_OK)
			st = npccl_barrier(comm);
	} else if (!strcmp(nm, "abort")) {
		st = npccl_allreduce(buf, buf, n, NPCCL_FLOAT32, NPCCL_SUM, comm);
		if (me == a->victim) {
			usleep(200000);
			npccl_comm_abort(comm);
			record(me, NPCCL_ERR_ABORTED, NULL, "aborted");
			free(buf);
			return 0;
		}
		if (st == NPCCL_OK)
			st = npccl_allreduce(buf, buf, n, NPCCL_FLOAT32, NPCCL_SUM, comm);
	} else if (!strncmp(nm, "late-kill", 9)) {
		/*
		 * Rank 0 stays outside npccl (up to 15 s, until the waiting rank
		 * has its result) while rank 1 waits in a barrier or AllReduce and
		 * the victim is killed: rank 1 must name the dead victim, not wait
		 * for the deadline and blame the late rank 0.
		 */
		int ar = !strcmp(nm, "late-kill-allreduce");
		st = npccl_allreduce(buf, buf, n, NPCCL_FLOAT32, NPCCL_SUM, comm);
		atomic_store(&sh->past_first[me], 1);
		if (st == NPCCL_OK && me == 0) {
			double until = now_ms() + 15000;
			while (!sh->res[1][0].done && now_ms() < until)
				usleep(2000);
			atomic_store(&sh->late_back, 1);
		}
		if (st == NPCCL_OK)
			st = ar ? npccl_allreduce(buf, buf, n, NPCCL_FLOAT32, NPCCL_SUM, comm)
				: npccl_barrier(comm);
		/* rank 0's part may have completed from what was sent: its next call fails */
		if (st == NPCCL_OK)
			st = npccl_barrier(comm);
		sh->res[me][0].elapsed_ms = now_ms() - t0;
		record(me, st, comm, me == 1 && atomic_load(&sh->late_back) ?
					     "(reported after rank 0 came back) " : NULL);
		npccl_comm_destroy(comm);
		free(buf);
		return 0;
	} else {
		/* kill9, sigstop, corrupt, truncate: loop until something fails */
		for (int it = 0; it < 100000 && st == NPCCL_OK; it++)
			st = npccl_allreduce(buf, buf, n, NPCCL_FLOAT32, NPCCL_SUM, comm);
	}
	sh->res[me][0].elapsed_ms = now_ms() - t0;
	record(me, st, comm, NULL);
	npccl_comm_destroy(comm);
	free(buf);
	return 0;
}

struct fault_case {
	const char *name;
	int p;
	int victim;
	size_t count;
	int tcp;
	const char *inject;
	npccl_status_t expect;
	const char *expect_text;	/* must appear in every survivor's message */
	int timeout_ms;
};

static int run_fault(const struct fault_case *fc)
{
	memset(sh, 0, sizeof(*sh));
	char tmo[32];
	snprintf(tmo, sizeof(tmo), "%d", fc->timeout_ms);
	setenv("NPCCL_TIMEOUT_MS", tmo, 1);
	if (fc->tcp)
		setenv("NPCCL_DISABLE_SHM", "1", 1);
	else
		unsetenv("NPCCL_DISABLE_SHM");
	if (fc->inject)
		setenv("NPCCL_FAULT_INJECT", fc->inject, 1);
	else
		unsetenv("NPCCL_FAULT_INJECT");
	/*
	 * setupkill / setupfail: a rank dies, or fails and lives on, after the
	 * bootstrap, during the shared-memory setup. The others must notice
	 * within the operation deadline, not wait out the (here long) bootstrap
	 * deadline.
	 */
	int setupkill = !strncmp(fc->name, "setup", 5);
	if (setupkill)
		setenv("NPCCL_BOOTSTRAP_TIMEOUT_MS", "30000", 1);
	struct fault_arg a = { fc->name, fc->victim, fc->count };
	pid_t pids[MAXR];
	int late = !strncmp(fc->name, "late-kill", 9);
	int killer = !strcmp(fc->name, "kill9") || !strcmp(fc->name, "sigstop") || late;
	double t0 = now_ms();
	pid_t drv = 0;
	if (killer) {
		/* a helper process hits the victim once collectives are running */
		drv = fork();
		if (drv == 0) {
			usleep(300000);
			_exit(0);
		}
	}
	/* run_ranks with a side thread doing the kill */
	struct {
		pid_t *pids;
		int victim;
		int sig;
		int on;
	} kctx = { pids, fc->victim, !strcmp(fc->name, "sigstop") ? SIGSTOP : SIGKILL, killer };
	(void)kctx;
	int rc;
	if (killer) {
		/* fork ranks manually to know the victim's pid */
		npccl_unique_id_t id;
		npccl_get_unique_id(&id);
		for (int r = 0; r < fc->p; r++) {
			pids[r] = fork();
			if (pids[r] == 0) {
				alarm(60);
				_exit(fault_rank(r, fc->p, &id, &a));
			}
		}
		waitpid(drv, NULL, 0);
		/*
		 * Hit the victim once every rank has its communicator and is
		 * looping on allreduce. Before that a killed rank is one that never
		 * joined, which the others wait for until NPCCL_BOOTSTRAP_TIMEOUT_MS
		 * (a slow starter looks the same), not the case tested here.
		 */
		double ready_by = now_ms() + 30000;
		int ready = 0;
		while (ready < fc->p && now_ms() < ready_by) {
			ready = 0;
			for (int r = 0; r < fc->p; r++)
				ready += atomic_load(&sh->past_init[r]);
			if (ready < fc->p)
				usleep(1000);
		}
		/* late-kill: once every rank finished its first call */
		while (late && ready < 2 * fc->p && now_ms() < ready_by) {
			ready = fc->p;
			for (int r = 0; r < fc->p; r++)
				ready += atomic_load(&sh->past_first[r]);
			if (ready < 2 * fc->p)
				usleep(1000);
		}
		usleep(200000);
		kill(pids[fc->victim], kctx.sig);
		double end = now_ms() + fc->timeout_ms * 3 + 10000;
		int left = fc->p - 1;
		rc = 0;
		while (left > 0 && now_ms() < end) {
			pid_t w = waitpid(-1, NULL, WNOHANG);
			if (w > 0 && w != pids[fc->victim])
				left--;
			else
				usleep(2000);
		}
		if (left > 0)
			rc = -1;
		for (int r = 0; r < fc->p; r++)
			kill(pids[r], SIGKILL);
		kill(pids[fc->victim], SIGCONT);
		while (waitpid(-1, NULL, 0) > 0)
			;
	} else {
		rc = run_ranks(fc->p, fault_rank, &a, fc->timeout_ms * 3 / 1000.0 + 40, NULL);
	}
	double took = now_ms() - t0;
	int ok = rc >= 0;
	for (int r = 0; r < fc->p; r++) {
		if (r == fc->victim && (killer || setupkill || !strcmp(fc->name, "absent")))
			continue;
		struct result *res = &sh->res[r][0];
		int good = res->done && (int)res->status == (int)fc->expect &&
			   strstr(res->msg, fc->expect_text) != NULL;
		if (setupkill)
			good &= res->elapsed_ms < fc->timeout_ms;
		/* the rank that waited knew before the late rank came back */
		if (late && r == 1)
			good &= !strstr(res->msg, "after rank 0 came back");
		if (!strncmp(fc->name, "abort", 5) && r == fc->victim)
			good = res->done && res->status == NPCCL_ERR_ABORTED;
		printf("# rank %d: %s after %.0f ms: %s\n", r,
		       res->done ? npccl_strerror((npccl_status_t)res->status) : "(no result)",
		       res->elapsed_ms, res->msg);
		ok &= good;
	}
	tap(ok, "fault %s%s: every survivor fails with %s naming \"%s\" (%.1f s, deadline %d ms)",
	    fc->name, fc->tcp ? " (tcp)" : " (shm)", npccl_strerror(fc->expect), fc->expect_text,
	    took / 1000, fc->timeout_ms);
	unsetenv("NPCCL_FAULT_INJECT");
	unsetenv("NPCCL_DISABLE_SHM");
	unsetenv("NPCCL_BOOTSTRAP_TIMEOUT_MS");
	return ok;
}

static const struct fault_case fault_cases[] = {
	{ "kill9", 4, 2, 1 << 20, 0, NULL, NPCCL_ERR_PEER_DEAD, "rank 2", 5000 },
	{ "kill9", 3, 1, 1 << 18, 1, NULL, NPCCL_ERR_PEER_DEAD, "rank 1", 5000 },
	/* large frames over TCP: the victim dies mid-frame; still PEER_DEAD, not PROTOCOL */
	{ "kill9", 2, 1, 1 << 22, 1, NULL, NPCCL_ERR_PEER_DEAD, "rank 1", 5000 },
	{ "kill9", 2, 0, 1 << 22, 1, NULL, NPCCL_ERR_PEER_DEAD, "rank 0", 5000 },
	{ "kill9", 3, 2, 1 << 21, 1, NULL, NPCCL_ERR_PEER_DEAD, "rank 2", 5000 },
	/* rank 0 busy outside npccl while rank 2 is killed: rank 1 names rank 2 at once */
	{ "late-kill-barrier", 3, 2, 1000, 0, NULL, NPCCL_ERR_PEER_DEAD, "rank 2", 20000 },
	{ "late-kill-barrier", 3, 2, 1000, 1, NULL, NPCCL_ERR_PEER_DEAD, "rank 2", 20000 },
	{ "late-kill-allreduce", 3, 2, 1 << 16, 0, NULL, NPCCL_ERR_PEER_DEAD, "rank 2", 20000 },
	{ "late-kill-allreduce", 3, 2, 1 << 16, 1, NULL, NPCCL_ERR_PEER_DEAD, "rank 2", 20000 },
	{ "sigstop", 4, 1, 1 << 16, 0, NULL, NPCCL_ERR_TIMEOUT, "rank 1", 1500 },
	{ "sigstop", 3, 2, 1 << 16, 1, NULL, NPCCL_ERR_TIMEOUT, "rank 2", 1500 },
	{ "mismatch-count", 3, 1, 1000, 0, NULL, NPCCL_ERR_MISMATCH, "rank 1", 3000 },
	{ "mismatch-count", 3, 1, 100000, 1, NULL, NPCCL_ERR_MISMATCH, "rank 1", 3000 },
	{ "mismatch-dtype", 4, 3, 1000, 0, NULL, NPCCL_ERR_MISMATCH, "rank 3", 3000 },
	{ "mismatch-op", 2, 1, 100, 1, NULL, NPCCL_ERR_MISMATCH, "rank 1", 3000 },
	{ "mismatch-coll", 3, 2, 5000, 0, NULL, NPCCL_ERR_MISMATCH, "rank 2", 3000 },
	{ "mismatch-root", 3, 1, 5000, 1, NULL, NPCCL_ERR_MISMATCH, "rank 1", 3000 },
	{ "absent", 3, 1, 1000, 0, NULL, NPCCL_ERR_TIMEOUT, "rank 1", 1500 },
	{ "abort", 3, 0, 1000, 0, NULL, NPCCL_ERR_ABORTED, "rank 0", 5000 },
	{ "abort-thread", 3, 1, 1000, 0, NULL, NPCCL_ERR_ABORTED, "rank 1", 5000 },
	{ "abort-thread", 2, 1, 100000, 1, NULL, NPCCL_ERR_ABORTED, "rank 1", 5000 },
	{ "corrupt", 3, 1, 1 << 16, 1, "corrupt:1:4", NPCCL_ERR_PROTOCOL, "rank 1", 5000 },
	{ "truncate", 2, 1, 1 << 16, 1, "truncate:1:4", NPCCL_ERR_PROTOCOL, "rank 1", 5000 },
	/* rank 0 connects to rank 1; ranks 2 and 3 wait for 1 (and 0, once it has failed too) */
	{ "setupkill", 4, 1, 1000, 0, "setupkill:1:0", NPCCL_ERR_BOOTSTRAP, "1", 5000 },
	{ "setupkill", 3, 0, 1000, 0, "setupkill:0:0", NPCCL_ERR_BOOTSTRAP,
	  "local rank(s) 0 exited", 5000 },
	/* the failed rank lives on: failure notices (or a refused connection) tell the others */
	{ "setupfail", 4, 1, 1000, 0, "setupfail:1:0", NPCCL_ERR_BOOTSTRAP, "local rank 1 failed", 5000 },
	{ "setupfail", 3, 0, 1000, 0, "setupfail:0:0", NPCCL_ERR_BOOTSTRAP, "local rank 0 failed", 5000 },
};

static int cmd_fault(int argc, char **argv)
{
	int failed = 0;
	for (size_t i = 0; i < sizeof(fault_cases) / sizeof(fault_cases[0]); i++) {
		if (argc > 0 && strcmp(argv[0], fault_cases[i].name))
			continue;
		failed += !run_fault(&fault_cases[i]);
	}
	ccl_tap_plan();
	return failed ? 1 : 0;
}

/* ---------------------------------------------------------------- misc */

/* Float MIN/MAX with a NaN on one rank and signed zeros, by every AllReduce
 * algorithm, Reduce and ReduceScatter: element j < p is NaN on rank j only
 * (the result is NaN on every rank, whichever rank held it), the next two
 * are +0 on even and -0 on odd ranks, the rest plain numbers. 0 ok. */
static int minmax_nan_check(npccl_comm_t comm, int me, int p, char *msg)
{
	const size_t n = (size_t)p + 5;
	char in[8 * (MAXR + 5)], out[8 * MAXR * (MAXR + 5)];
	for (int d = NPCCL_FLOAT16; d <= NPCCL_FLOAT64; d++)
		for (int op = NPCCL_MIN; op <= NPCCL_MAX; op++)
			for (int a = 0; a < NPCCL_NUM_ALGOS + 2; a++) {
				npccl_dtype_t dt = (npccl_dtype_t)d;
				npccl_coll_t coll = a < NPCCL_NUM_ALGOS ? NPCCL_COLL_ALLREDUCE
						    : a == NPCCL_NUM_ALGOS ? NPCCL_COLL_REDUCE
									   : NPCCL_COLL_REDUCE_SCATTER;
				if (a < NPCCL_NUM_ALGOS &&
				    !npccl_algo_supported(comm, coll, (npccl_algo_t)a))
					continue;
				if (a < NPCCL_NUM_ALGOS)
					npccl_comm_set_algo(comm, coll, (npccl_algo_t)a);
				for (size_t i = 0; i < n; i++) {
					double v = (double)((me * 5 + (int)i * 3) % 7) - 3;
					if (i < (size_t)p)
						v = i == (size_t)me ? NAN : v;
					else if (i < (size_t)p + 2)
						v = me % 2 ? -0.0 : 0.0;
					put_f(dt, in, i, v);
				}
				memset(out, 0x55, sizeof(out));
				npccl_status_t st;
				if (coll == NPCCL_COLL_ALLREDUCE)
					st = npccl_allreduce(in, out, n, dt, (npccl_redop_t)op, comm);
				else if (coll == NPCCL_COLL_REDUCE)
					st = npccl_reduce(in, out, n, dt, (npccl_redop_t)op, 0, comm);
				else
					st = npccl_reduce_scatter(in, out, 1, dt, (npccl_redop_t)op,
								  comm);
				const char *what = coll == NPCCL_COLL_ALLREDUCE
							   ? npccl_algo_name((npccl_algo_t)a)
							   : npccl_coll_name(coll);
				if (st) {
					snprintf(msg, MSG, "%s %s %s: %s", npccl_dtype_name(dt),
						 npccl_redop_name((npccl_redop_t)op), what,
						 npccl_comm_last_error(comm));
					return 1;
				}
				size_t lo = 0, hi = n;
				if (coll == NPCCL_COLL_REDUCE && me != 0)
					hi = 0;
				if (coll == NPCCL_COLL_REDUCE_SCATTER)
					lo = (size_t)me, hi = lo + 1;
				for (size_t i = lo; i < hi; i++) {
					double v = get_f(dt, out, i - lo), want = op == NPCCL_MIN ? 1e9 : -1e9;
					int good;
					if (i < (size_t)p) {
						good = isnan(v);
					} else if (i < (size_t)p + 2) {
						int neg = op == NPCCL_MIN ? p > 1 : 0;
						good = v == 0 && !!signbit(v) == neg;
					} else {
						for (int r = 0; r < p; r++) {
							double x = (double)((r * 5 + (int)i * 3) % 7) - 3;
							want = op == NPCCL_MIN ? fmin(want, x) : fmax(want, x);
						}
						good = v == want;
					}
					if (!good) {
						snprintf(msg, MSG, "%s %s %s element %zu: got %g (%s)",
							 npccl_dtype_name(dt),
							 npccl_redop_name((npccl_redop_t)op), what, i, v,
							 i < (size_t)p ? "want NaN"
							 : i < (size_t)p + 2 ? "wrong sign of zero" : "wrong");
						return 1;
					}
				}
			}
	npccl_comm_set_algo(comm, NPCCL_COLL_ALLREDUCE, NPCCL_ALGO_AUTO);
	snprintf(msg, MSG, "every algorithm, f16/bf16/f32/f64");
	return 0;
}

static int misc_rank(int me, int p, const npccl_unique_id_t *id, void *arg)
{
	npccl_comm_t comm;
	char err[512];
	struct result *r = sh->res[me];
	if (npccl_comm_init_rank_err(&comm, p, id, me, err, sizeof(err))) {
		snprintf(r[0].msg, MSG, "init: %s", err);
		return 1;
	}
	int t = 0;
	/* 0: invalid arguments are rejected with a message and no failure */
	float x[4] = { 1, 2, 3, 4 };
	int ok = npccl_allreduce(NULL, x, 4, NPCCL_FLOAT32, NPCCL_SUM, comm) == NPCCL_ERR_INVALID_ARG &&
		 strstr(npccl_comm_last_error(comm), "NULL") &&
		 npccl_allreduce(x, x, 4, (npccl_dtype_t)99, NPCCL_SUM, comm) == NPCCL_ERR_INVALID_ARG &&
		 npccl_allreduce(x, x + 1, 2, NPCCL_FLOAT32, NPCCL_SUM, comm) == NPCCL_ERR_INVALID_ARG &&
		 npccl_broadcast(x, x, 4, NPCCL_FLOAT32, p, comm) == NPCCL_ERR_INVALID_ARG &&
		 npccl_send(x, 1, NPCCL_FLOAT32, me, comm) == NPCCL_ERR_INVALID_ARG &&
		 /* overlapping sendrecv buffers (silently wrong data before) */
		 (p == 1 || (npccl_sendrecv(x, 2, (me + 1) % p, x + 1, 2, (me + p - 1) % p,
					    NPCCL_FLOAT32, comm) == NPCCL_ERR_INVALID_ARG &&
			     strstr(npccl_comm_last_error(comm), "overlap") &&
			     npccl_sendrecv(x, 4, (me + 1) % p, x, 4, (me + p - 1) % p,
					    NPCCL_FLOAT32, comm) == NPCCL_ERR_INVALID_ARG)) &&
		 npccl_comm_set_timeout(comm, 0) == NPCCL_ERR_INVALID_ARG &&
		 strstr(npccl_comm_last_error(comm), "timeout of 0 ms") &&
		 npccl_comm_set_algo(comm, (npccl_coll_t)99, NPCCL_ALGO_RING) ==
			 NPCCL_ERR_INVALID_ARG && strstr(npccl_comm_last_error(comm), "collective 99") &&
		 npccl_explain(comm, NPCCL_COLL_ALLREDUCE, 4, (npccl_dtype_t)77, &(npccl_explanation_t){ 0 }) ==
			 NPCCL_ERR_INVALID_ARG && strstr(npccl_comm_last_error(comm), "dtype 77") &&
		 npccl_explain(comm, NPCCL_COLL_ALLREDUCE, SIZE_MAX, NPCCL_FLOAT32,
			       &(npccl_explanation_t){ 0 }) == NPCCL_ERR_INVALID_ARG &&
		 strstr(npccl_comm_last_error(comm), "overflows the address space") &&
		 npccl_explain(comm, (npccl_coll_t)42, 4, NPCCL_FLOAT32, &(npccl_explanation_t){ 0 }) ==
			 NPCCL_ERR_INVALID_ARG && strstr(npccl_comm_last_error(comm), "collective 42") &&
		 !strstr(npccl_comm_last_error(comm), "dtype") &&
		 /* a bad split color says so (it showed the previous call's error) */
		 npccl_comm_split(comm, -7, 0, &(npccl_comm_t){ NULL }) == NPCCL_ERR_INVALID_ARG &&
		 strstr(npccl_comm_last_error(comm), "color") &&
		 npccl_comm_split(comm, 0, 0, NULL) == NPCCL_ERR_INVALID_ARG &&
		 strstr(npccl_comm_last_error(comm), "newcomm") &&
		 npccl_allreduce(x, x, 4, NPCCL_FLOAT32, NPCCL_SUM, comm) == NPCCL_OK &&
		 x[0] == 1.0f * p;
	r[t].ok = ok;
	snprintf(r[t++].msg, MSG, "last error: %s", npccl_comm_last_error(comm));
	/* 1: explain names an algorithm and a positive prediction; set_algo works */
	npccl_explanation_t ex;
	ok = npccl_explain(comm, NPCCL_COLL_ALLREDUCE, 1 << 20, NPCCL_FLOAT32, &ex) == NPCCL_OK &&
	     ex.algo != NPCCL_ALGO_AUTO && ex.predicted_us > 0 && strstr(ex.text, "allreduce");
	npccl_comm_set_algo(comm, NPCCL_COLL_ALLREDUCE, NPCCL_ALGO_RING);
	npccl_explanation_t ex2;
	npccl_explain(comm, NPCCL_COLL_ALLREDUCE, 1 << 20, NPCCL_FLOAT32, &ex2);
	ok = ok && ex2.algo == NPCCL_ALGO_RING && strstr(ex2.text, "forced");
	ok = ok && npccl_comm_set_algo(comm, NPCCL_COLL_ALLTOALL, NPCCL_ALGO_TREE) == NPCCL_ERR_UNSUPPORTED;
	npccl_comm_set_algo(comm, NPCCL_COLL_ALLREDUCE, NPCCL_ALGO_AUTO);
	r[t].ok = ok;
	snprintf(r[t++].msg, MSG, "explain: %s | %s", ex.text, ex2.text);
	/* 2: split into even/odd ranks, reversed order by key */
	npccl_comm_t sub = NULL;
	npccl_status_t st = npccl_comm_split(comm, me % 2, -me, &sub);
	ok = st == NPCCL_OK && sub;
	if (ok) {
		int sr, ss;
		npccl_comm_rank(sub, &sr);
		npccl_comm_size(sub, &ss);
		int expect_size = (p + 1 - me % 2) / 2;
		float v = (float)me, sum = 0;
		st = npccl_allreduce(&v, &sum, 1, NPCCL_FLOAT32, NPCCL_SUM, sub);
		float esum = 0;
		for (int i = me % 2; i < p; i += 2)
			esum += (float)i;
		ok = ss == expect_size && sr == expect_size - 1 - me / 2 && st == NPCCL_OK && sum == esum;
		snprintf(r[t].msg, MSG, "split: size %d (want %d) rank %d sum %g (want %g) %s", ss,
			 expect_size, sr, sum, esum, npccl_comm_last_error(sub));
	} else {
		snprintf(r[t].msg, MSG, "split failed: %s", npccl_comm_last_error(comm));
	}
	npccl_comm_destroy(sub);
	npccl_comm_t none = (npccl_comm_t)1;
	ok = ok && npccl_comm_split(comm, NPCCL_SPLIT_NOCOLOR, 0, &none) == NPCCL_OK && none == NULL;
	r[t++].ok = ok;
	/* 3: cost model constants are positive and agreed */
	npccl_cost_model_t m;
	npccl_comm_cost_model(comm, &m);
	double v[5] = { m.shm_alpha_us, m.shm_beta_us_per_mb, m.tcp_alpha_us, m.tcp_beta_us_per_mb,
			m.gamma_us_per_mb }, mx[5];
	npccl_allreduce(v, mx, 5, NPCCL_FLOAT64, NPCCL_MAX, comm);
	ok = m.shm_alpha_us > 0 && m.gamma_us_per_mb > 0 && !memcmp(v, mx, sizeof(v));
	r[t].ok = ok;
	snprintf(r[t++].msg, MSG, "model: shm a=%.2fus b=%.1fus/MB tcp a=%.1fus b=%.1fus/MB g=%.1fus/MB",
		 m.shm_alpha_us, m.shm_beta_us_per_mb, m.tcp_alpha_us, m.tcp_beta_us_per_mb,
		 m.gamma_us_per_mb);
	/* 4: float min/max with a NaN on one rank, signed zeros */
	r[t].ok = !minmax_nan_check(comm, me, p, r[t].msg);
	t++;
	for (int i = 0; i < t; i++)
		r[i].done = 1;
	if (me == 0)
		sh->ntests = t;
	npccl_comm_destroy(comm);
	return 0;
}

static int remeasure_logs;
static void remeasure_log(npccl_log_level_t level, const char *msg, void *user)
{
	(void)level, (void)user;
	if (strstr(msg, "measuring again"))
		remeasure_logs++;
}

/* NPCCL_FAULT_INJECT=slowalpha:0:N set by the caller: res[me][0].ok when
 * init succeeded; msg: "ALPHA RETRIES" (the agreed shm alpha, and how many
 * times this rank was told to measure again) */
static int remeasure_rank(int me, int p, const npccl_unique_id_t *id, void *arg)
{
	(void)arg;
	struct result *r = &sh->res[me][0];
	npccl_comm_t comm;
	char err[512];
	remeasure_logs = 0;
	npccl_set_log_callback(remeasure_log, NULL);
	if (npccl_comm_init_rank_err(&comm, p, id, me, err, sizeof(err))) {
		snprintf(r->msg, MSG, "init: %s", err);
		r->done = 1;
		return 1;
	}
	npccl_cost_model_t m;
	npccl_comm_cost_model(comm, &m);
	float x = 1;
	r->ok = npccl_allreduce(&x, &x, 1, NPCCL_FLOAT32, NPCCL_SUM, comm) == NPCCL_OK &&
		x == (float)p;
	snprintf(r->msg, MSG, "%.2f %d", m.shm_alpha_us, remeasure_logs);
	r->done = 1;
	npccl_comm_destroy(comm);
	return 0;
}

static int bootstrap_fail_rank(int me, int p, const npccl_unique_id_t *id, void *arg)
{
	const char *mode = arg;
	npccl_comm_t comm;
	char err[512] = "";
	npccl_unique_id_t bad = *id;
	if (!strcmp(mode, "foreign") && me == 1)
		bad.internal[8] ^= 0x55;	/* another communicator's tag */
	if (!strcmp(mode, "missing") && me == p - 1) {
		sh->res[me][0].done = 1;
		return 0;	/* never joins */
	}
	npccl_status_t st = npccl_comm_init_rank_err(&comm, p, &bad, me, err, sizeof(err));
	sh->res[me][0].status = st;
	snprintf(sh->res[me][0].msg, MSG, "%s", err);
	sh->res[me][0].done = 1;
	if (st == NPCCL_OK)
		npccl_comm_destroy(comm);
	return 0;
}

static int cmd_misc(void)
{
	int failed = 0;
	for (int p = 1; p <= 4; p += (p == 1 ? 1 : 2)) {
		for (int tcp = 0; tcp < 2; tcp++) {
			if (tcp)
				setenv("NPCCL_DISABLE_SHM", "1", 1);
			else
				unsetenv("NPCCL_DISABLE_SHM");
			memset(sh, 0, sizeof(*sh));
			int rc = run_ranks(p, misc_rank, NULL, 60, NULL);
			const char *names[] = { "invalid arguments rejected, communicator still usable",
						"explain and set_algo", "split (even/odd, key order)",
						"cost model measured and agreed",
						"float min/max: a NaN on any rank gives NaN on every "
						"rank, -0 below +0 (every AllReduce algorithm, Reduce, "
						"ReduceScatter)" };
			for (int t = 0; t < 5; t++) {
				int ok = rc == 0;
				for (int r = 0; r < p; r++)
					if (!sh->res[r][t].done || !sh->res[r][t].ok) {
						ok = 0;
						printf("# rank %d: %s\n", r, sh->res[r][t].msg);
					}
				if (ok)
					printf("# %s\n", sh->res[0][t].msg);
				tap(ok, "%s p=%d: %s", tcp ? "tcp" : "shm", p, names[t]);
				failed += !ok;
			}
		}
	}
	unsetenv("NPCCL_DISABLE_SHM");
	/* a disturbed shm latency measurement is repeated (agreed on every
	 * rank), at most 3 times in all */
	static const struct {
		int slow, oversub, retries, kept_slow;
		const char *what;
	} rm[] = {
		{ 2, 0, 2, 0, "disturbed twice: measured again twice, the third value kept" },
		{ 5, 0, 2, 1, "disturbed every time: three measurements, then the last kept" },
		{ 2, 1, 0, 1, "oversubscribed ranks: a long round trip is believed" },
	};
	for (size_t i = 0; i < sizeof(rm) / sizeof(rm[0]); i++) {
		char spec[32];
		snprintf(spec, sizeof(spec), "slowalpha:0:%d", rm[i].slow);
		setenv("NPCCL_FAULT_INJECT", spec, 1);
		setenv("NPCCL_OVERSUBSCRIBED", rm[i].oversub ? "1" : "0", 1);
		memset(sh, 0, sizeof(*sh));
		int rc = run_ranks(2, remeasure_rank, NULL, 60, NULL);
		int ok = rc == 0;
		for (int r = 0; r < 2; r++) {
			double alpha = 0;
			int retries = -1;
			sscanf(sh->res[r][0].msg, "%lf %d", &alpha, &retries);
			/* kept_slow: the value kept carries the injected 100 ms
			 * (a real measurement, even a disturbed one, is far below) */
			int good = sh->res[r][0].done && sh->res[r][0].ok &&
				   retries == rm[i].retries && (alpha >= 1e5) == rm[i].kept_slow;
			printf("# rank %d: agreed shm alpha, times measured again: %s\n", r,
			       sh->res[r][0].msg);
			ok = ok && good;
		}
		tap(ok, "cost model p=2: %s", rm[i].what);
		failed += !ok;
	}
	unsetenv("NPCCL_FAULT_INJECT");
	unsetenv("NPCCL_OVERSUBSCRIBED");
	/* a rank with another communicator's tag is rejected with a clear error */
	memset(sh, 0, sizeof(*sh));
	setenv("NPCCL_BOOTSTRAP_TIMEOUT_MS", "1500", 1);
	run_ranks(2, bootstrap_fail_rank, "foreign", 30, NULL);
	int ok = sh->res[1][0].status == NPCCL_ERR_PROTOCOL &&
		 strstr(sh->res[1][0].msg, "another communicator") &&
		 sh->res[0][0].status == NPCCL_ERR_BOOTSTRAP && strstr(sh->res[0][0].msg, "did not join");
	printf("# rank 1: %s\n# rank 0: %s\n", sh->res[1][0].msg, sh->res[0][0].msg);
	tap(ok, "bootstrap: peer of another communicator rejected, root reports the missing rank");
	failed += !ok;
	/* an id used a second time: its root served the first communicator and
	 * left; the error says that an id serves one communicator */
	{
		npccl_unique_id_t once;
		npccl_comm_t c2 = NULL;
		char e2[512] = "";
		npccl_get_unique_id(&once);
		npccl_status_t s1 = npccl_comm_init_rank_err(&c2, 1, &once, 0, e2, sizeof(e2));
		npccl_comm_destroy(c2);
		c2 = NULL;
		npccl_status_t s2 = npccl_comm_init_rank_err(&c2, 1, &once, 0, e2, sizeof(e2));
		ok = s1 == NPCCL_OK && s2 == NPCCL_ERR_BOOTSTRAP && c2 == NULL &&
		     strstr(e2, "serves one communicator");
		printf("# %s\n", e2);
		tap(ok, "bootstrap: an id used twice fails saying an id serves one communicator");
		failed += !ok;
		npccl_comm_destroy(c2);
	}
	/* a rank that never joins is named */
	memset(sh, 0, sizeof(*sh));
	run_ranks(3, bootstrap_fail_rank, "missing", 30, NULL);
	ok = sh->res[0][0].status == NPCCL_ERR_BOOTSTRAP && strstr(sh->res[0][0].msg, ": 2") &&
	     sh->res[1][0].status == NPCCL_ERR_BOOTSTRAP;
	printf("# rank 0: %s\n", sh->res[0][0].msg);
	tap(ok, "bootstrap: a rank that never joins is named on the others");
	failed += !ok;
	/* port in use: rank 0 under a launcher cannot listen */
	int hold = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	bind(hold, (struct sockaddr *)&sa, sizeof(sa));
	listen(hold, 1);
	socklen_t sl = sizeof(sa);
	getsockname(hold, (struct sockaddr *)&sa, &sl);
	char port[16];
	snprintf(port, sizeof(port), "%d", ntohs(sa.sin_port));
	setenv("RANK", "0", 1);
	setenv("WORLD_SIZE", "2", 1);
	setenv("MASTER_ADDR", "127.0.0.1", 1);
	setenv("MASTER_PORT", port, 1);
	npccl_comm_t comm;
	char err[512];
	npccl_status_t st = npccl_comm_init_env(&comm, err, sizeof(err));
	ok = st == NPCCL_ERR_BOOTSTRAP && strstr(err, "already in use") && comm == NULL;
	printf("# %s\n", err);
	tap(ok, "bootstrap: port in use gives a clear error");
	failed += !ok;
	close(hold);
	unsetenv("RANK");
	unsetenv("WORLD_SIZE");
	unsetenv("MASTER_ADDR");
	unsetenv("MASTER_PORT");
	unsetenv("NPCCL_BOOTSTRAP_TIMEOUT_MS");
	/* the calling thread's last error on one communicator survives its calls
	 * on another (it was wiped by them: one text per thread) */
	{
		npccl_comm_t a = NULL, b = NULL;
		npccl_unique_id_t ia, ib;
		float v = 1;
		npccl_get_unique_id(&ia);
		npccl_get_unique_id(&ib);
		ok = !npccl_comm_init_rank(&a, 1, &ia, 0) && !npccl_comm_init_rank(&b, 1, &ib, 0);
		ok = ok && npccl_allreduce(&v, &v, 1, (npccl_dtype_t)55, NPCCL_SUM, a) ==
				   NPCCL_ERR_INVALID_ARG;
		const char *ma = ok ? npccl_comm_last_error(a) : "";
		ok = ok && npccl_allreduce(&v, &v, 1, NPCCL_FLOAT32, NPCCL_SUM, b) == NPCCL_OK &&
		     npccl_broadcast(&v, &v, 1, NPCCL_FLOAT32, 3, b) == NPCCL_ERR_INVALID_ARG;
		printf("# a: '%s' (text taken before the calls on b: '%s'); b: '%s'\n",
		       a ? npccl_comm_last_error(a) : "", ma, b ? npccl_comm_last_error(b) : "");
		ok = ok && strstr(npccl_comm_last_error(a), "dtype 55") && strstr(ma, "dtype 55") &&
		     strstr(npccl_comm_last_error(b), "root 3");
		tap(ok, "last error is per communicator: calls on another one leave it alone");
		failed += !ok;
		npccl_comm_destroy(a);
		npccl_comm_destroy(b);
	}
	/* destroy/abort accept NULL; bad init arguments */
	ok = npccl_comm_destroy(NULL) == NPCCL_OK && npccl_comm_abort(NULL) == NPCCL_OK &&
	     npccl_comm_init_rank(&comm, 0, NULL, 0) == NPCCL_ERR_INVALID_ARG &&
	     npccl_comm_init_env(&comm, err, sizeof(err)) == NPCCL_ERR_INVALID_ARG;
	tap(ok, "destroy/abort accept NULL, invalid init arguments rejected (%s)", err);
	failed += !ok;
	ccl_tap_plan();
	return failed ? 1 : 0;
}

/* ---------------------------------------------------------------- shm */

/* AllReduce of `count` elements through buffers at byte offsets inside
 * in_base/out_base (in place when in_base == NULL: the input is written to
 * out_base first); checks against the reference. 0 ok, 1 wrong, 2 failed. */
static int ar_call(npccl_comm_t comm, int me, int p, npccl_dtype_t dt, npccl_redop_t op,
		   size_t count, char *in_base, size_t in_off, char *out_base, size_t out_off,
		   char *msg)
{
	size_t es = npccl_dtype_size(dt);
	char *out = out_base + out_off, *in = in_base ? in_base + in_off : out;
	char *exp = xalloc(count * es);
	memset(out, 0xA5, count * es);
	for (size_t i = 0; i < count; i++) {
		put(dt, in, i, gen(dt, op, me, i));
		put_reduced(dt, op, p, exp, i, i);
	}
	npccl_status_t st = npccl_allreduce(in, out, count, dt, op, comm);
	int bad = 0;
	if (st) {
		snprintf(msg, MSG, "allreduce(count=%zu %s %s%s) returned %s: %s", count,
			 npccl_dtype_name(dt), npccl_redop_name(op), in_base ? "" : " in place",
			 npccl_strerror(st), npccl_comm_last_error(comm));
		bad = 2;
	} else if (count && memcmp(out, exp, count * es)) {
		size_t i = 0;
		while (i < count && !memcmp(out + i * es, exp + i * es, es))
			i++;
		snprintf(msg, MSG, "allreduce(count=%zu %s %s%s, offsets %zu/%zu): wrong result at "
			 "element %zu", count, npccl_dtype_name(dt), npccl_redop_name(op),
			 in_base ? "" : " in place", in_off, out_off, i);
		bad = 1;
	}
	free(exp);
	return bad;
}

/* counts around the chunk size (4 KiB in these tests) and primes */
static const size_t shm_counts[] = { 0, 1, 2, 3, 7, 13, 31, 61, 127, 509, 1021, 1024, 1025,
				     2053, 4093, 8191, 8209 };
#define NSHM_COUNTS (int)(sizeof(shm_counts) / sizeof(shm_counts[0]))

struct shm_case {
	const char *name;
	const char *env[4];	/* NAME=VALUE set before the communicator is made */
	int zero_copy;		/* 1: npccl_mem_alloc buffers, 2: rank 0 mixes in malloc */
};

static int zc_said;

static void zc_log(npccl_log_level_t level, const char *msg, void *user)
{
	if (strstr(msg, "zero-copy AllReduce"))
		zc_said = 1;
}

static int shm_rank(int me, int p, const npccl_unique_id_t *id, void *arg)
{
	const struct shm_case *sc = arg;
	struct result *r = &sh->res[me][0];
	npccl_comm_t comm;
	char err[512];
	npccl_set_log_callback(zc_log, NULL);
	if (npccl_comm_init_rank_err(&comm, p, id, me, err, sizeof(err))) {
		snprintf(r->msg, MSG, "init: %s", err);
		r->done = 1;
		return 1;
	}
	npccl_comm_set_algo(comm, NPCCL_COLL_ALLREDUCE, NPCCL_ALGO_SHM);
	size_t cap = 8209 * 8 + 256;
	char *in = NULL, *out = NULL;
	void *a = NULL, *b = NULL;
	r->ok = 1;
	if (sc->zero_copy) {
		if (npccl_mem_alloc(comm, cap, &a) || npccl_mem_alloc(comm, cap, &b)) {
			snprintf(r->msg, MSG, "npccl_mem_alloc: %s", npccl_comm_last_error(comm));
			r->ok = 0;
		}
		in = a, out = b;
		/* zeroed, page-aligned, writable */
		for (size_t i = 0; r->ok && i < cap; i += 4096)
			r->ok = !in[i] && !out[i] && ((uintptr_t)in & 4095) == 0;
		if (sc->zero_copy == 2 && me == 0)
			out = xalloc(cap);	/* one rank's output is private: staging for all */
	} else {
		in = xalloc(cap);
		out = xalloc(cap);
	}
	int k = 0;
	for (int d = 0; d < NPCCL_NUM_DTYPES && r->ok; d++)
		for (int op = 0; op < NPCCL_NUM_REDOPS && r->ok; op++)
			for (int c = 0; c < NSHM_COUNTS && r->ok; c++, k++) {
				size_t es = npccl_dtype_size((npccl_dtype_t)d);
				size_t io = (size_t)(k % 5) * es, oo = (size_t)((k / 5) % 7) * es;
				int inplace = k % 3 == 0;
				int bad = ar_call(comm, me, p, (npccl_dtype_t)d, (npccl_redop_t)op,
						  shm_counts[c], inplace ? NULL : in, io, out, oo,
						  r->msg);
				if (bad)
					r->ok = 0;
			}
	/* the zero-copy path ran exactly when every rank's buffers were shared */
	if (r->ok && zc_said != (sc->zero_copy == 1 && !getenv("NPCCL_DISABLE_SHM"))) {
		r->ok = 0;
		snprintf(r->msg, MSG, "zero-copy path %s", zc_said ? "used with private buffers"
								   : "not used");
	}
	if (sc->zero_copy) {
		/* after freeing, private buffers keep working */
		if (out != b)
			free(out);
		npccl_mem_free(comm, b);
		npccl_mem_free(comm, a);
		char *pa = xalloc(cap), *pb = xalloc(cap);
		for (int c = 0; c < NSHM_COUNTS && r->ok; c++)
			if (ar_call(comm, me, p, NPCCL_FLOAT32, NPCCL_SUM, shm_counts[c], pa, 0, pb, 0,
				    r->msg))
				r->ok = 0;
		free(pa), free(pb);
	} else {
		free(in), free(out);
	}
	r->done = 1;
	npccl_comm_destroy(comm);
	return 0;
}

/* Misuse of npccl_mem_alloc/free: each rank reports status and message. */
static int shm_neg_rank(int me, int p, const npccl_unique_id_t *id, void *arg)
{
	const char *mode = arg;
	struct result *r = &sh->res[me][0];
	npccl_comm_t comm;
	char err[512];
	if (npccl_comm_init_rank_err(&comm, p, id, me, err, sizeof(err))) {
		snprintf(r->msg, MSG, "init: %s", err);
		r->done = 1;
		return 1;
	}
	npccl_comm_set_timeout(comm, 5000);
	npccl_status_t st = NPCCL_OK;
	void *m = NULL, *m2 = NULL;
	size_t n = 1 << 16;
	float *x = calloc(n, sizeof(float));
	if (!strcmp(mode, "args")) {
		int x0 = 0;
		r->ok = npccl_mem_alloc(comm, 0, &m) == NPCCL_ERR_INVALID_ARG && m == NULL &&
			strstr(npccl_comm_last_error(comm), "size 0") &&
			npccl_mem_alloc(NULL, 16, &m) == NPCCL_ERR_INVALID_ARG &&
			npccl_mem_alloc(comm, 16, NULL) == NPCCL_ERR_INVALID_ARG &&
			npccl_mem_free(comm, NULL) == NPCCL_OK &&
			npccl_mem_free(comm, &x0) == NPCCL_ERR_INVALID_ARG &&
			strstr(npccl_comm_last_error(comm), "not a buffer from npccl_mem_alloc") &&
			npccl_mem_alloc(comm, SIZE_MAX, &m) == NPCCL_ERR_INVALID_ARG && m == NULL &&
			strstr(npccl_comm_last_error(comm), "overflow the address space");
		/* the communicator is still fine: allocate, use, free twice */
		st = npccl_mem_alloc(comm, 100, &m);
		if (!st) {
			((float *)m)[0] = 1;
			st = npccl_allreduce(m, m, 1, NPCCL_FLOAT32, NPCCL_SUM, comm);
			r->ok = r->ok && !st && ((float *)m)[0] == (float)p &&
				npccl_mem_free(comm, m) == NPCCL_OK &&
				npccl_mem_free(comm, m) == NPCCL_ERR_INVALID_ARG;
		}
		r->status = st;
		snprintf(r->msg, MSG, "%s", npccl_comm_last_error(comm));
	} else if (!strcmp(mode, "size")) {
		/* rank 1 asks for a different size */
		st = npccl_mem_alloc(comm, me == 1 ? 8192 : 4096, &m);
	} else if (!strcmp(mode, "free-one")) {
		/* rank 0 frees a buffer the others keep, then a large AllReduce on
		 * the shared-memory fast path (the only algorithm that uses the
		 * buffers; the cost model may pick another for this size) */
		npccl_comm_set_algo(comm, NPCCL_COLL_ALLREDUCE, NPCCL_ALGO_SHM);
		st = npccl_mem_alloc(comm, 4096, &m);
		if (!st)
			st = npccl_mem_alloc(comm, 4096, &m2);
		if (!st && me == 0)
			npccl_mem_free(comm, m);
		if (!st)
			st = npccl_allreduce(x, x, n, NPCCL_FLOAT32, NPCCL_SUM, comm);
	} else if (!strcmp(mode, "versus")) {
		/* rank 0 allocates while the others run an AllReduce */
		if (me == 0)
			st = npccl_mem_alloc(comm, 4096, &m);
		else
			st = npccl_allreduce(x, x, n, NPCCL_FLOAT32, NPCCL_SUM, comm);
	}
	if (strcmp(mode, "args")) {
		r->status = st;
		snprintf(r->msg, MSG, "%s", npccl_comm_last_error(comm));
	}
	r->done = 1;
	free(x);
	npccl_comm_destroy(comm);
	return 0;
}

static int cmd_shm(void)
{
	int failed = 0;
	static const struct shm_case cases[] = {
		{ "staged, cached slots", { "NPCCL_SHM_STAGE_NT=0" }, 0 },
		{ "staged, streaming slots and output", { "NPCCL_SHM_STAGE_NT=1", "NPCCL_SHM_NT_MIN=0" }, 0 },
		{ "staged, probe every call", { "NPCCL_SHM_STAGE_NT=-1", "NPCCL_SHM_PROBE_MIN=0" }, 0 },
		{ "zero-copy (npccl_mem_alloc)", { "NPCCL_SHM_NT_MIN=32K" }, 1 },
		{ "npccl_mem_alloc on all but one rank's output: staging", { NULL }, 2 },
	};
	for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++)
		for (int p = 2; p <= 4; p++) {
			const struct shm_case *sc = &cases[ci];
			/* 4 KiB chunks and no single-step path: every count above is
			 * chunked, the larger ones over several chunks */
			setenv("NPCCL_SHM_CHUNK_BYTES", "4096", 1);
			setenv("NPCCL_SHM_DIRECT_MAX", "0", 1);
			for (int e = 0; e < 4 && sc->env[e]; e++) {
				char kv[64], *eq;
				snprintf(kv, sizeof(kv), "%s", sc->env[e]);
				eq = strchr(kv, '=');
				*eq = 0;
				setenv(kv, eq + 1, 1);
			}
			memset(sh, 0, sizeof(*sh));
			double t0 = now_ms();
			int rc = run_ranks(p, shm_rank, (void *)sc, 120, NULL);
			int ok = rc == 0;
			for (int r = 0; r < p; r++)
				if (!sh->res[r][0].done || !sh->res[r][0].ok) {
					ok = 0;
					printf("# rank %d: %s\n", r, sh->res[r][0].done ? sh->res[r][0].msg
											: "did not finish");
				}
			tap(ok, "shm allreduce p=%d %s: every dtype, op and count %zu..%zu, "
				"unaligned, in and out of place (%.0f ms)", p, sc->name, shm_counts[0],
			    shm_counts[NSHM_COUNTS - 1], now_ms() - t0);
			failed += !ok;
			for (int e = 0; e < 4 && sc->env[e]; e++) {
				char kv[64];
				snprintf(kv, sizeof(kv), "%s", sc->env[e]);
				*strchr(kv, '=') = 0;
				unsetenv(kv);
			}
			unsetenv("NPCCL_SHM_CHUNK_BYTES");
			unsetenv("NPCCL_SHM_DIRECT_MAX");
		}
	/* npccl_mem_alloc over TCP only (every rank its own host): plain memory */
	setenv("NPCCL_DISABLE_SHM", "1", 1);
	static const struct shm_case tcp_case = { "over TCP", { NULL }, 1 };
	memset(sh, 0, sizeof(*sh));
	int rc = run_ranks(3, shm_rank, (void *)&tcp_case, 120, NULL);
	int ok = rc == 0;
	for (int r = 0; r < 3; r++)
		if (!sh->res[r][0].ok) {
			ok = 0;
			printf("# rank %d: %s\n", r, sh->res[r][0].msg);
		}
	tap(ok, "npccl_mem_alloc buffers with NPCCL_DISABLE_SHM=1 (TCP), p=3: allreduce correct");
	failed += !ok;
	unsetenv("NPCCL_DISABLE_SHM");

	/* misuse */
	struct {
		const char *mode, *what;
		int p;
		npccl_status_t want;
		const char *text;
	} neg[] = {
		{ "args", "bad arguments rejected with a message, communicator still usable", 2,
		  NPCCL_OK, "" },
		{ "size", "different sizes on the ranks: mismatch on every rank", 3,
		  NPCCL_ERR_MISMATCH, "same size" },
		{ "free-one", "a buffer freed on one rank only: the next shm allreduce fails", 2,
		  NPCCL_ERR_MISMATCH, "npccl_mem_alloc" },
		{ "versus", "npccl_mem_alloc against an allreduce: mismatch named", 3,
		  NPCCL_ERR_MISMATCH, "npccl_mem_alloc" },
	};
	for (size_t i = 0; i < sizeof(neg) / sizeof(neg[0]); i++) {
		memset(sh, 0, sizeof(*sh));
		rc = run_ranks(neg[i].p, shm_neg_rank, (void *)neg[i].mode, 60, NULL);
		ok = rc == 0;
		for (int r = 0; r < neg[i].p; r++) {
			struct result *res = &sh->res[r][0];
			int good = res->done && (int)res->status == (int)neg[i].want &&
				   strstr(res->msg, neg[i].text) &&
				   (!strcmp(neg[i].mode, "args") ? res->ok : 1);
			printf("# rank %d: %s: %s\n", r, npccl_strerror((npccl_status_t)res->status),
			       res->msg);
			ok = ok && good;
		}
		tap(ok, "npccl_mem_alloc/free p=%d: %s", neg[i].p, neg[i].what);
		failed += !ok;
	}
	ccl_tap_plan();
	return failed ? 1 : 0;
}

/* ---------------------------------------------------------------- env */

/* Started by a launcher (mpirun, or the netns script with torchrun-style
 * variables): init from the environment, run a few collectives, check them,
 * print one line "envcheck rank R/P hosts H ok|FAIL ...". */
static int cmd_env_worker(void)
{
	npccl_comm_t comm;
	char err[512];
	npccl_status_t st = npccl_comm_init_env(&comm, err, sizeof(err));
	if (st) {
		printf("envcheck FAIL init: %s\n", err);
		return 1;
	}
	int me, p, nh, h;
	npccl_comm_rank(comm, &me);
	npccl_comm_size(comm, &p);
	npccl_comm_hosts(comm, &nh, &h);
	char msg[MSG] = "";
	int bad = 0;
	size_t counts[] = { 0, 1, 7, 1025, (size_t)p + 1, 300001 };
	npccl_algo_t algos[] = { NPCCL_ALGO_AUTO, NPCCL_ALGO_RING, NPCCL_ALGO_TREE,
				 NPCCL_ALGO_RECDOUBLING, NPCCL_ALGO_RABENSEIFNER, NPCCL_ALGO_DIRECT,
				 NPCCL_ALGO_HIER, NPCCL_ALGO_SHM };
	int k = 0;
	for (size_t a = 0; a < sizeof(algos) / sizeof(algos[0]) && !bad; a++) {
		if (!npccl_algo_supported(comm, NPCCL_COLL_ALLREDUCE, algos[a]))
			continue;
		npccl_comm_set_algo(comm, NPCCL_COLL_ALLREDUCE, algos[a]);
		for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]) && !bad; c++, k++)
			bad = one_call(comm, me, p, NPCCL_COLL_ALLREDUCE, (npccl_dtype_t)(k % NPCCL_NUM_DTYPES),
				       (npccl_redop_t)(k % NPCCL_NUM_REDOPS), counts[c], k % 2, 0, msg);
	}
	npccl_comm_set_algo(comm, NPCCL_COLL_ALLREDUCE, NPCCL_ALGO_AUTO);
	for (int ci = 1; ci < NCOLLS && !bad; ci++) {
		if (colls[ci] == NPCCL_COLL_BARRIER)
			continue;	/* its counter check needs shared memory */
		for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]) && !bad; c++, k++)
			bad = one_call(comm, me, p, colls[ci], (npccl_dtype_t)(k % NPCCL_NUM_DTYPES),
				       (npccl_redop_t)(k % NPCCL_NUM_REDOPS), counts[c], k % 2,
				       (int)(c % (size_t)p), msg);
	}
	if (!bad && npccl_barrier(comm) != NPCCL_OK) {
		bad = 1;
		snprintf(msg, MSG, "barrier: %s", npccl_comm_last_error(comm));
	}
	npccl_explanation_t ex;
	npccl_explain(comm, NPCCL_COLL_ALLREDUCE, 1 << 20, NPCCL_FLOAT32, &ex);
	printf("envcheck rank %d/%d hosts %d %s %s | %s\n", me, p, nh, bad ? "FAIL" : "ok", msg,
	       me == 0 ? ex.text : "");
	npccl_comm_destroy(comm);
	return bad;
}

/* Launched rank that loops AllReduce until it fails (fault tests across
 * namespaces): prints "envloop rank R status S: message". */
static int cmd_env_loop(void)
{
	npccl_comm_t comm;
	char err[512];
	if (npccl_comm_init_env(&comm, err, sizeof(err))) {
		printf("envloop init failed: %s\n", err);
		return 1;
	}
	int me;
	npccl_comm_rank(comm, &me);
	size_t n = 1 << 18;
	float *buf = calloc(n, sizeof(float));
	npccl_status_t st = NPCCL_OK;
	long it = 0;
	printf("envloop rank %d running\n", me);
	while (st == NPCCL_OK && it++ < 2000000)
		st = npccl_allreduce(buf, buf, n, NPCCL_FLOAT32, NPCCL_SUM, comm);
	printf("envloop rank %d status %s: %s\n", me, npccl_strerror(st), npccl_comm_last_error(comm));
	npccl_comm_destroy(comm);
	free(buf);
	return 0;
}

/* ---------------------------------------------------------------- launched ranks */

/* The transport between hosts must be NPCCL_EXPECT_TRANSPORT when set
 * ("rdma": the test is about RDMA and must not silently run on TCP). */
static int check_transport(npccl_comm_t comm, char *msg)
{
	const char *want = getenv("NPCCL_EXPECT_TRANSPORT");
	npccl_explanation_t ex;
	if (!want)
		return 0;
	npccl_explain(comm, NPCCL_COLL_ALLREDUCE, 1 << 20, NPCCL_FLOAT32, &ex);
	if (!strstr(ex.transport, want)) {
		snprintf(msg, MSG, "transport between hosts is %s, expected %s", ex.transport, want);
		return 1;
	}
	return 0;
}

/* every rank's verdict, gathered on all (MIN of ok); -1 if the call failed */
static int agree_ok(npccl_comm_t comm, int ok)
{
	int32_t v = ok;
	if (npccl_allreduce(&v, &v, 1, NPCCL_INT32, NPCCL_MIN, comm) != NPCCL_OK)
		return -1;
	return v;
}

/* Rank @me's verdict @ok (why not: @msg) agreed by all; rank 0 prints it as
 * one TAP line saying @what. 1 if it failed. */
static int agreed_verdict(npccl_comm_t comm, int me, int ok, const char *msg, const char *what)
{
	if (!ok)
		printf("# rank %d: %s\n", me, msg);
	int agreed = agree_ok(comm, ok);
	if (me == 0)
		ccl_tap(agreed == 1, "%s", what);
	return agreed != 1;
}

/* A seccomp filter refusing cross-memory attach (as container profiles do);
 * 0 once process_vm_readv fails with EPERM. */
static int refuse_cma(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_writev, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	char v = 0, w = 0;
	struct iovec l = { &w, 1 }, r = { &v, 1 };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return -1;
	return syscall(__NR_process_vm_readv, getpid(), &l, 1, &r, 1, 0) == -1 && errno == EPERM ? 0
												   : -1;
}

/*
 * Launched rank (npccl_comm_init_env): every collective with the algorithm
 * the cost model picks, and AllReduce with each of its algorithms
 * (hierarchical included where the layout allows), x every dtype x counts
 * 0, 1, p+1, 1025 (the reductions rotating through every op), plus one call
 * past the eager size per item (rotating dtype), against the reference. Rank
 * 0 prints one TAP line per item once every rank agreed on its verdict.
 */
static int cmd_env_matrix(void)
{
	npccl_comm_t comm;
	char err[512], msg[MSG] = "";
	double t_all = now_ms();
	npccl_status_t st = npccl_comm_init_env(&comm, err, sizeof(err));
	if (st) {
		ccl_tap(0, "init: %s", err);
		ccl_tap_plan();
		return 1;
	}
	int me, p, nh, h;
	npccl_comm_rank(comm, &me);
	npccl_comm_size(comm, &p);
	npccl_comm_hosts(comm, &nh, &h);
	struct test_item items[64];
	int n = 0;
	for (int ci = 0; ci < NCOLLS; ci++)
		items[n++] = (struct test_item){ colls[ci], NPCCL_ALGO_AUTO };
	for (int a = 1; a < NPCCL_NUM_ALGOS; a++)
		if (npccl_algo_supported(comm, NPCCL_COLL_ALLREDUCE, (npccl_algo_t)a))
			items[n++] = (struct test_item){ NPCCL_COLL_ALLREDUCE, (npccl_algo_t)a };
	size_t counts[] = { 0, 1, (size_t)p + 1, 1025, 70001 };
	const int ncounts = (int)(sizeof(counts) / sizeof(counts[0]));
	int failed = 0, call = 0;
	int bad = check_transport(comm, msg);
	int agreed = agree_ok(comm, !bad);
	if (me == 0)
		ccl_tap(agreed == 1, "%d ranks on %d hosts: transport between hosts as expected%s%s",
			p, nh, msg[0] ? ": " : "", msg);
	failed += agreed != 1;
	for (int t = 0; t < n && agreed >= 0; t++) {
		double t0 = now_ms();
		int ok = 1;
		msg[0] = 0;
		if (items[t].algo != NPCCL_ALGO_AUTO && set_algo(comm, items[t].coll, items[t].algo)) {
			ok = 0;
			snprintf(msg, MSG, "set_algo refused: %s", npccl_comm_last_error(comm));
		}
		int ndt = items[t].coll == NPCCL_COLL_BARRIER ? 1 : NPCCL_NUM_DTYPES;
		for (int d = 0; d < ndt && ok; d++)
			for (int k = 0; k < ncounts && ok; k++, call++) {
				/* the large count once per item, its dtype rotating */
				if (k == ncounts - 1 && d != (t + p) % NPCCL_NUM_DTYPES)
					continue;
				if (items[t].coll == NPCCL_COLL_BARRIER) {
					if (npccl_barrier(comm) != NPCCL_OK) {
						ok = 0;
						snprintf(msg, MSG, "barrier: %s", npccl_comm_last_error(comm));
					}
					continue;
				}
				npccl_redop_t op = (npccl_redop_t)((d + k + t) % NPCCL_NUM_REDOPS);
				if (one_call(comm, me, p, items[t].coll, (npccl_dtype_t)d, op, counts[k],
					     (k + d) % 2, call % p, msg))
					ok = 0;
			}
		if (items[t].algo != NPCCL_ALGO_AUTO)
			set_algo(comm, items[t].coll, NPCCL_ALGO_AUTO);
		if (!ok)
			printf("# rank %d: %s\n", me, msg);
		agreed = agree_ok(comm, ok);
		if (me == 0)
			ccl_tap(agreed == 1, "%d ranks on %d hosts: %s algo=%s, every dtype, counts 0 1 %d "
				"1025 and 70001 (%.0f ms)", p, nh,
			       npccl_coll_name(items[t].coll),
			       items[t].coll == NPCCL_COLL_SEND ? "p2p"
							      : npccl_algo_name(items[t].algo),
			       p + 1, now_ms() - t0);
		failed += agreed != 1;
	}
	if (agreed < 0) {
		printf("# rank %d: the communicator failed: %s\n", me, npccl_comm_last_error(comm));
		if (me == 0)
			ccl_tap(0, "the communicator failed");
		failed++;
	}
	npccl_comm_destroy(comm);
	if (me == 0) {
		printf("# %d ranks: %.1f s\n", p, (now_ms() - t_all) / 1000);
		ccl_tap_plan();
	}
	return failed ? 1 : 0;
}

/* ---------------------------------------------------------- single copy */

/*
 * ccl-test single-copy [--uids] [--seccomp] [--require-space] [--quick]
 *
 * 2 to 4 forked ranks (--quick: 2 and 3, counts 0, 1, p+1 and 1025) (--uids: each under its own uid, from root;
 * --seccomp: process_vm_readv/writev refused, as container profiles do).
 * Every collective with the single-copy algorithm, every dtype and op,
 * the matrix's counts, in place and not; then per collective one call whose
 * copies are counted (npccl_comm_copy_stats): every byte this rank moves
 * went by one copy, none through shared memory; Send/Recv of messages
 * larger than a FIFO likewise (rendezvous). --require-space: and all of
 * them through the peers' npushm spaces, none by cross-memory attach.
 */
struct sc_opts {
	int uids, seccomp, require_space;
	int quick;	/* 2 and 3 ranks, counts 0, 1, p+1 and 1025 (the emulated VM) */
};

/* A rank's own restrictions, before it joins: its uid, the filter. */
static int sc_restrict(const struct sc_opts *o, int me, char *msg)
{
	/* same group (the module's device is group-accessible), other user */
	if (o->uids && setresuid(60000 + (uid_t)me, 60000 + (uid_t)me, 60000 + (uid_t)me)) {
		snprintf(msg, MSG, "setresuid: %s (--uids needs root)", strerror(errno));
		return 1;
	}
	if (o->seccomp && refuse_cma()) {
		snprintf(msg, MSG, "seccomp filter refusing process_vm_readv: %s", strerror(errno));
		return 1;
	}
	return 0;
}

/* Bytes rank @me copies itself, by the single-copy path, in one call of
 * one_call(@coll, @count elements of @es bytes, root @root). */
static size_t sc_expected(npccl_coll_t coll, int me, int p, int root, size_t count, size_t es)
{
	size_t b = count * es, per = count / (size_t)p, rem = count % (size_t)p;
	switch (coll) {
	case NPCCL_COLL_ALLGATHER:
	case NPCCL_COLL_REDUCE_SCATTER:
	case NPCCL_COLL_ALLTOALL:
		return (size_t)(p - 1) * b;
	case NPCCL_COLL_ALLREDUCE:	/* my slice read from and written to every peer */
		return 2 * (size_t)(p - 1) * (per + ((size_t)me < rem)) * es;
	case NPCCL_COLL_BROADCAST: {
		size_t half = (b / 2 + 63) / 64 * 64;
		if (p != 2 || half > b)
			half = b;
		return me == root ? (p == 2 ? b - half : 0) : half;
	}
	case NPCCL_COLL_REDUCE:
		return me == root ? (size_t)(p - 1) * b : 0;
	case NPCCL_COLL_GATHER:
	case NPCCL_COLL_SCATTER:
		return me == root ? 0 : b;
	case NPCCL_COLL_SEND:	/* a ring sendrecv, with an even p a pair exchange too */
		return (p % 2 ? 1 : 2) * b;
	default:
		return 0;
	}
}

/* One call of @coll whose copies are counted; 0 if right and by one copy. */
static int sc_path_call(npccl_comm_t comm, int me, int p, npccl_coll_t coll, int inplace,
			int require_space, char *msg)
{
	const size_t count = 300001;	/* 1.2 MB of f32: more than a FIFO holds */
	int root = 1 % p;
	npccl_copy_stats_t s0, s1;
	npccl_comm_copy_stats(comm, &s0);
	if (one_call(comm, me, p, coll, NPCCL_FLOAT32, NPCCL_SUM, count, inplace, root, msg))
		return 1;
	npccl_comm_copy_stats(comm, &s1);
	uint64_t space = s1.space_bytes - s0.space_bytes, cma = s1.cma_bytes - s0.cma_bytes;
	uint64_t shm = s1.shm_bytes - s0.shm_bytes;
	size_t want = sc_expected(coll, me, p, root, count, sizeof(float));
	if (space + cma != want || shm || (require_space && cma)) {
		snprintf(msg, MSG, "%s%s: %llu bytes through spaces, %llu by cross-memory attach, "
			 "%llu through shared memory; expected %zu in single copies%s",
			 npccl_coll_name(coll), inplace ? " in place" : "", (unsigned long long)space,
			 (unsigned long long)cma, (unsigned long long)shm, want,
			 require_space ? ", all through spaces" : "");
		return 1;
	}
	return 0;
}

static int sc_rank(int me, int p, const npccl_unique_id_t *id, void *arg)
{
	const struct sc_opts *o = arg;
	npccl_comm_t comm;
	char err[512];
	if (sc_restrict(o, me, sh->res[me][0].msg)) {
		sh->res[me][0].done = 1;
		return 1;
	}
	if (npccl_comm_init_rank_err(&comm, p, id, me, err, sizeof(err))) {
		snprintf(sh->res[me][0].msg, MSG, "init: %s", err);
		sh->res[me][0].done = 1;
		return 1;
	}
	size_t counts[32] = { 0, 1, (size_t)p + 1, 1025 };
	int ncounts = o->quick ? 4 : counts_for(p, counts, 0), t = 0, call = 0;
	for (int ci = 0; ci < NCOLLS; ci++) {
		npccl_coll_t coll = colls[ci];
		if (coll == NPCCL_COLL_BARRIER)
			continue;
		struct result *r = &sh->res[me][t];
		double t0 = now_ms();
		r->ok = 1;
		if (coll != NPCCL_COLL_SEND && set_algo(comm, coll, NPCCL_ALGO_CMA)) {
			r->ok = 0;
			snprintf(r->msg, MSG, "%s: no single-copy algorithm: %s", npccl_coll_name(coll),
				 npccl_comm_last_error(comm));
		}
		int nops = is_reducing(coll) ? NPCCL_NUM_REDOPS : 1;
		for (int d = 0; d < NPCCL_NUM_DTYPES && r->ok; d++)
			for (int op = 0; op < nops && r->ok; op++)
				for (int k = 0; k < ncounts && r->ok; k++, call++)
					if (one_call(comm, me, p, coll, (npccl_dtype_t)d, (npccl_redop_t)op,
						     counts[k], (k + d + op) % 2, call % p, r->msg))
						r->ok = 0;
		r->elapsed_ms = now_ms() - t0;
		r->done = 1;
		if (me == 0)
			snprintf(sh->names[t], sizeof(sh->names[t]), "%s single copy: every dtype, "
				 "op and count, in place and not", npccl_coll_name(coll));
		t++;
		r = &sh->res[me][t];
		t0 = now_ms();
		r->ok = !sc_path_call(comm, me, p, coll, 0, o->require_space, r->msg) &&
			!sc_path_call(comm, me, p, coll, 1, o->require_space, r->msg);
		r->elapsed_ms = now_ms() - t0;
		r->done = 1;
		if (me == 0)
			snprintf(sh->names[t], sizeof(sh->names[t]), "%s of 1.2 MB: one copy per byte "
				 "(counted)%s", npccl_coll_name(coll),
				 o->require_space ? ", through spaces" : "");
		t++;
	}
	if (me == 0)
		sh->ntests = t;
	npccl_comm_destroy(comm);
	return 0;
}

static int sc_parse(int argc, char **argv, struct sc_opts *o)
{
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--uids"))
			o->uids = 1;
		else if (!strcmp(argv[i], "--seccomp"))
			o->seccomp = 1;
		else if (!strcmp(argv[i], "--require-space"))
			o->require_space = 1;
		else if (!strcmp(argv[i], "--quick"))
			o->quick = 1;
		else
			return -1;
	}
	return 0;
}

static const char *sc_label(const struct sc_opts *o)
{
	return o->uids && o->seccomp ? "single copy (other uids, seccomp)"
	       : o->uids	     ? "single copy (other uids)"
	       : o->seccomp	     ? "single copy (seccomp)"
				     : "single copy";
}

static int cmd_single_copy(int argc, char **argv)
{
	struct sc_opts o = { 0, 0, 0, 0 };
	if (sc_parse(argc, argv, &o)) {
		fprintf(stderr, "usage: ccl-test single-copy [--uids] [--seccomp] [--require-space] "
			"[--quick]\n");
		return 2;
	}
	int failed = 0;
	for (int p = 2; p <= (o.quick ? 3 : 4); p++) {
		memset(sh, 0, sizeof(*sh));
		double t0 = now_ms();
		failed += report_items(p, run_ranks(p, sc_rank, &o, 240, NULL), sc_label(&o));
		printf("# p=%d took %.1f s\n", p, (now_ms() - t0) / 1000);
	}
	ccl_tap_plan();
	return failed ? 1 : 0;
}

/*
 * ccl-test single-copy-race [--uids] [--seccomp]
 *
 * Three ranks broadcast rank 0's buffer (1 MB, in place, single copy: the
 * others copy out of it) over and over while a thread of rank 0 changes
 * what backs that buffer, each case once:
 *   unmap  munmap: every call that starts afterwards fails, naming rank 0;
 *   remap  new pages at the same address (mremap): calls that start
 *          afterwards deliver the new contents, never the old pages;
 *   cow    fork, then rank 0 writes its buffer (its pages are copied on
 *          write, the child keeps the old ones): calls that start
 *          afterwards deliver what rank 0 wrote;
 *   exit   the process exits: every call that starts afterwards fails with
 *          a dead peer, naming rank 0.
 * Never stale data, never a hang (a deadline of 10 s, a watchdog).
 */
#define RACE_COUNT (256u * 1024u)
#define RACE_CALLS 160
#define RACE_ACT_AT 40	/* rank 0's thread acts after this many of its calls */

struct race_arg {
	const char *mode;
	struct sc_opts o;
	float *buf;	/* rank 0's buffer */
	pid_t child;	/* cow: the child holding the old pages */
};

static void fill(float *b, float v)
{
	for (size_t i = 0; i < RACE_COUNT; i++)
		b[i] = v;
}

/* 1 if every element is @a or @b */
static int all_of(const float *b, float a, float v)
{
	for (size_t i = 0; i < RACE_COUNT; i++)
		if (b[i] != a && b[i] != v)
			return 0;
	return 1;
}

static void *race_act(void *argp)
{
	struct race_arg *a = argp;
	while (atomic_load(&sh->iter) < RACE_ACT_AT)
		usleep(500);
	usleep((useconds_t)(getpid() % 7) * 300);	/* somewhere inside a call */
	size_t bytes = RACE_COUNT * sizeof(float);
	if (!strcmp(a->mode, "unmap")) {
		munmap(a->buf, bytes);
	} else if (!strcmp(a->mode, "remap")) {
		float *b = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		fill(b, 2.0f);
		mremap(b, bytes, bytes, MREMAP_MAYMOVE | MREMAP_FIXED, a->buf);
	} else if (!strcmp(a->mode, "cow")) {
		a->child = fork();
		if (a->child == 0) {
			sleep(30);	/* holds the old pages until rank 0 ends it */
			_exit(0);
		}
		fill(a->buf, 2.0f);
	} else {
		atomic_store(&sh->event, 1);
		_exit(0);
	}
	atomic_store(&sh->event, 1);
	return NULL;
}

static int race_rank(int me, int p, const npccl_unique_id_t *id, void *argp)
{
	struct race_arg *a = argp;
	struct result *r = &sh->res[me][0];
	npccl_comm_t comm;
	char err[512];
	bool fails = !strcmp(a->mode, "unmap") || !strcmp(a->mode, "exit");
	if (sc_restrict(&a->o, me, r->msg) ||
	    npccl_comm_init_rank_err(&comm, p, id, me, err, sizeof(err))) {
		if (!r->msg[0])
			snprintf(r->msg, MSG, "init: %s", err);
		r->done = 1;
		return 1;
	}
	float *buf = mmap(NULL, RACE_COUNT * sizeof(float), PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	fill(buf, 1.0f);
	pthread_t th;
	a->buf = buf;
	if (npccl_comm_set_algo(comm, NPCCL_COLL_BROADCAST, NPCCL_ALGO_CMA)) {
		snprintf(r->msg, MSG, "no single-copy Broadcast: %s", npccl_comm_last_error(comm));
		r->done = 1;
		return 1;
	}
	if (me == 0)
		pthread_create(&th, NULL, race_act, a);
	double t0 = now_ms();
	npccl_status_t st = NPCCL_OK;
	int ok = 1, after = 0;
	for (int it = 0; it < RACE_CALLS && st == NPCCL_OK && ok; it++) {
		int ev = atomic_load(&sh->event);
		st = npccl_broadcast(buf, buf, RACE_COUNT, NPCCL_FLOAT32, 0, comm);
		if (me == 0) {
			atomic_store(&sh->iter, it + 1);
			continue;
		}
		if (st != NPCCL_OK)
			break;
		after += ev;
		if (ev && fails) {
			ok = 0;
			snprintf(r->msg, MSG, "call %d began after rank 0's %s and returned its data", it,
				 a->mode);
		} else if (!all_of(buf, ev ? 2.0f : 1.0f, 2.0f)) {
			ok = 0;
			snprintf(r->msg, MSG, "call %d (begun %s rank 0's %s): stale or wrong data", it,
				 ev ? "after" : "before", a->mode);
		}
		fill(buf, -1.0f);	/* no leftover can pass for the next call's data */
	}
	if (me == 0) {
		/* its own calls end with the others' verdict; the thread is done */
		if (strcmp(a->mode, "exit"))
			pthread_join(th, NULL);
		if (a->child > 0) {
			kill(a->child, SIGKILL);
			waitpid(a->child, NULL, 0);
		}
		r->ok = 1;
		r->done = 1;
		npccl_comm_destroy(comm);
		return 0;
	}
	if (ok && fails && (st == NPCCL_OK || !strstr(npccl_comm_last_error(comm), "rank 0"))) {
		ok = 0;
		snprintf(r->msg, MSG, "after rank 0's %s: %s", a->mode,
			 st == NPCCL_OK ? "every call succeeded" : npccl_comm_last_error(comm));
	}
	if (ok && !fails && (st != NPCCL_OK || !after)) {
		ok = 0;
		snprintf(r->msg, MSG, "after rank 0's %s: %s", a->mode,
			 st != NPCCL_OK ? npccl_comm_last_error(comm) : "no call began after it");
	}
	if (ok && fails)
		snprintf(r->msg, MSG, "no call begun after the %s succeeded: %s", a->mode,
			 npccl_comm_last_error(comm));
	else if (ok)
		snprintf(r->msg, MSG, "%d calls after the %s, each with the new contents", after,
			 a->mode);
	r->ok = ok;
	r->elapsed_ms = now_ms() - t0;
	r->done = 1;
	npccl_comm_destroy(comm);
	return 0;
}

static int cmd_single_copy_race(int argc, char **argv)
{
	struct race_arg a = { .mode = NULL };
	if (sc_parse(argc, argv, &a.o)) {
		fprintf(stderr, "usage: ccl-test single-copy-race [--uids] [--seccomp]\n");
		return 2;
	}
	const char *modes[] = { "unmap", "remap", "cow", "exit" };
	int failed = 0;
	setenv("NPCCL_TIMEOUT_MS", "10000", 1);
	for (int m = 0; m < 4; m++) {
		memset(sh, 0, sizeof(*sh));
		a.mode = modes[m];
		int rc = run_ranks(3, race_rank, &a, 60, NULL);
		int ok = rc >= 0;
		for (int r = 1; r < 3; r++) {
			const struct result *res = &sh->res[r][0];
			printf("# rank %d: %s\n", r, res->done ? res->msg : "no result");
			ok &= res->done && res->ok;
		}
		if (strcmp(modes[m], "exit") && !(sh->res[0][0].done && sh->res[0][0].ok)) {
			printf("# rank 0: %s\n", sh->res[0][0].msg);
			ok = 0;
		}
		tap(ok, "%s: rank 0's %s while the others copy out of its buffer: %s", sc_label(&a.o),
		    modes[m], m == 0 || m == 3 ? "later calls fail naming it, no stale data"
					       : "later calls deliver the new contents, never the old pages");
		failed += !ok;
	}
	unsetenv("NPCCL_TIMEOUT_MS");
	ccl_tap_plan();
	return failed ? 1 : 0;
}

static int zc_registered, zc_dropped;

static void zc_rdma_log(npccl_log_level_t level, const char *msg, void *user)
{
	if (strstr(msg, "rdma: npccl_mem_alloc buffer") && strstr(msg, "registered on"))
		zc_registered++;
	if (strstr(msg, "rdma: registration of npccl_mem_alloc buffer") && strstr(msg, "dropped"))
		zc_dropped++;
	if (level <= NPCCL_LOG_WARN)
		fprintf(stderr, "npccl: %s\n", msg);
}

/* AllReduce in place on an npccl_mem_alloc buffer of `bytes`; 0 if right */
static int zc_allreduce(npccl_comm_t comm, int me, int p, float *buf, size_t n, int round,
			char *msg)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = (float)((i * 7 + (size_t)me * 3 + (size_t)round) % 13);
	npccl_status_t st = npccl_allreduce(buf, buf, n, NPCCL_FLOAT32, NPCCL_SUM, comm);
	if (st) {
		snprintf(msg, MSG, "allreduce: %s", npccl_comm_last_error(comm));
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		float want = 0;
		for (int r = 0; r < p; r++)
			want += (float)((i * 7 + (size_t)r * 3 + (size_t)round) % 13);
		if (buf[i] != want) {
			snprintf(msg, MSG, "round %d: element %zu is %g, expected %g", round, i,
				 (double)buf[i], (double)want);
			return 1;
		}
	}
	return 0;
}

/*
 * Launched rank, two or more hosts over RDMA: npccl_mem_alloc buffers are
 * registered through libnpushm on first use and moved without copies; a
 * buffer freed and allocated again (at the same address, typically) gets a
 * fresh registration, never the stale one of the freed pages (which would
 * leave the new buffer without the peers' data); private buffers still work
 * (env-usercache tests how).
 */
static int cmd_env_zc(void)
{
	npccl_comm_t comm;
	char err[512], msg[MSG] = "";
	npccl_set_log_callback(zc_rdma_log, NULL);
	if (npccl_comm_init_env(&comm, err, sizeof(err))) {
		ccl_tap(0, "init: %s", err);
		ccl_tap_plan();
		return 1;
	}
	int me, p, failed = 0;
	npccl_comm_rank(comm, &me);
	npccl_comm_size(comm, &p);
	size_t bytes = 3u << 20, n = bytes / sizeof(float);
	void *addr[2] = { NULL, NULL };
	int ok = !check_transport(comm, msg);
	for (int round = 0; round < 2 && ok; round++) {
		void *b = NULL;
		if (npccl_mem_alloc(comm, bytes, &b)) {
			snprintf(msg, MSG, "npccl_mem_alloc: %s", npccl_comm_last_error(comm));
			ok = 0;
			break;
		}
		addr[round] = b;
		if (zc_allreduce(comm, me, p, b, n, round, msg))
			ok = 0;
		if (ok && zc_registered != round + 1) {
			snprintf(msg, MSG, "round %d: %d registrations logged, expected %d", round,
				 zc_registered, round + 1);
			ok = 0;
		}
		/* point to point from the buffer into private memory and back */
		if (ok && p > 1) {
			float *priv = calloc(n, sizeof(float));
			int peer = me ^ 1;
			if (peer < p) {
				npccl_status_t st = me % 2 ? npccl_recv(priv, n, NPCCL_FLOAT32, peer, comm)
							   : npccl_send(b, n, NPCCL_FLOAT32, peer, comm);
				if (!st)
					st = me % 2 ? npccl_send(priv, n, NPCCL_FLOAT32, peer, comm)
						    : npccl_recv(priv, n, NPCCL_FLOAT32, peer, comm);
				if (st || memcmp(priv, b, bytes)) {
					snprintf(msg, MSG, "send/recv between a registered and a private "
						 "buffer: %s", st ? npccl_comm_last_error(comm) : "wrong data");
					ok = 0;
				}
			}
			free(priv);
		}
		if (npccl_mem_free(comm, b)) {
			snprintf(msg, MSG, "npccl_mem_free: %s", npccl_comm_last_error(comm));
			ok = 0;
		}
		if (ok && zc_dropped != round + 1) {
			snprintf(msg, MSG, "round %d: registration not dropped by npccl_mem_free", round);
			ok = 0;
		}
	}
	char what[300];
	snprintf(what, sizeof(what), "npccl_mem_alloc buffers over RDMA: registered through "
		 "libnpushm on first use, results right, registration dropped by npccl_mem_free; the "
		 "buffer allocated again (%s address) registered afresh and right",
		 addr[0] == addr[1] ? "same" : "another");
	failed += agreed_verdict(comm, me, ok, msg, what);
	/* a private buffer */
	ok = 1;
	float *a = malloc(bytes);
	if (zc_allreduce(comm, me, p, a, n, 7, msg))
		ok = 0;
	free(a);
	failed += agreed_verdict(comm, me, ok, msg, "a malloc'd buffer over RDMA after the "
				 "npccl_mem_alloc buffers were freed: results right");
	npccl_comm_destroy(comm);
	if (me == 0)
		ccl_tap_plan();
	return failed ? 1 : 0;
}

static int uc_registered, uc_dropped, uc_copied, uc_refused;

static void uc_log(npccl_log_level_t level, const char *msg, void *user)
{
	(void)user;
	if (strstr(msg, "rdma: buffer ") && strstr(msg, "registered on") && strstr(msg, "watched"))
		uc_registered++;
	if (strstr(msg, "rdma: registration of buffer") && strstr(msg, "its pages changed"))
		uc_dropped++;
	if (strstr(msg, "buffers not from npccl_mem_alloc are copied"))
		uc_copied++;
	if (strstr(msg, "rdma: buffer ") && strstr(msg, "not registered on"))
		uc_refused++;
	if (level <= NPCCL_LOG_WARN)
		fprintf(stderr, "npccl: %s\n", msg);
}

/*
 * Launched rank, two or more hosts over RDMA: buffers npccl did not
 * allocate. With the module's watches (the default), they are registered on
 * first use and used again without registering; a buffer unmapped and
 * mapped again at the same address, one whose pages MADV_DONTNEED released,
 * and malloc'd blocks freed and allocated again are never moved through the
 * old pages' registration (the results would be the old data). With
 * NPCCL_RDMA_CACHE_BYTES=0 nothing is registered and everything is right.
 */
static int cmd_env_usercache(void)
{
	npccl_comm_t comm;
	char err[512], msg[MSG] = "", what[300];
	npccl_set_log_callback(uc_log, NULL);
	if (npccl_comm_init_env(&comm, err, sizeof(err))) {
		ccl_tap(0, "init: %s", err);
		ccl_tap_plan();
		return 1;
	}
	const char *cb = getenv("NPCCL_RDMA_CACHE_BYTES");
	/* CCL_TEST_WATCH_LIMITED=1: the module lets this uid watch nothing */
	bool limited = getenv("CCL_TEST_WATCH_LIMITED") != NULL;
	bool cache = (!cb || strcmp(cb, "0")) && !limited;
	int me, p, failed = 0, ok;
	npccl_comm_rank(comm, &me);
	npccl_comm_size(comm, &p);
	size_t bytes = 3u << 20, n = bytes / sizeof(float);
	float *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ok = buf != MAP_FAILED && !check_transport(comm, msg);
	if (ok && zc_allreduce(comm, me, p, buf, n, 0, msg))
		ok = 0;
	int r0 = uc_registered;
	if (ok && zc_allreduce(comm, me, p, buf, n, 1, msg))
		ok = 0;
	if (ok && cache && (r0 < 1 || uc_registered != r0)) {
		snprintf(msg, MSG, "%d registrations in the first call, %d more in the second "
			 "(expected some, then none)", r0, uc_registered - r0);
		ok = 0;
	}
	if (ok && !cache && !limited && (uc_registered || uc_copied != 1)) {
		snprintf(msg, MSG, "NPCCL_RDMA_CACHE_BYTES=0: %d registrations, reason logged %d "
			 "times (expected none, once)", uc_registered, uc_copied);
		ok = 0;
	}
	/* refused once per buffer, not again at every progress step */
	if (ok && limited && (uc_registered || uc_refused < 1 || uc_refused > 4)) {
		snprintf(msg, MSG, "no range may be watched: %d registrations, %d refusals logged "
			 "(expected none, 1 to 4)", uc_registered, uc_refused);
		ok = 0;
	}
	if (limited)
		snprintf(what, sizeof(what), "the module lets this user watch no range: a private "
			 "mapping over RDMA is copied, never registered, the refusal remembered "
			 "(%d logged on rank %d), results right", uc_refused, me);
	else if (cache)
		snprintf(what, sizeof(what), "a private mapping over RDMA: registered on first use "
			 "(%d registrations on rank %d), the second call without registering, "
			 "results right", r0, me);
	else
		snprintf(what, sizeof(what), "NPCCL_RDMA_CACHE_BYTES=0: a private mapping over RDMA "
			 "is copied through the FIFO, never registered, the reason said once, "
			 "results right");
	failed += agreed_verdict(comm, me, ok, msg, what);

	/* unmapped, and mapped again at the same address: other pages */
	int r1 = uc_registered, d1 = uc_dropped;
	float *again = MAP_FAILED;
	ok = buf != MAP_FAILED && munmap(buf, bytes) == 0;
	if (ok)
		again = mmap(buf, bytes, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (ok && again != buf) {
		snprintf(msg, MSG, "could not map the same address again (%s)", strerror(errno));
		ok = 0;
	}
	if (ok && zc_allreduce(comm, me, p, buf, n, 2, msg))
		ok = 0;
	if (ok && cache && (uc_dropped <= d1 || uc_registered <= r1)) {
		snprintf(msg, MSG, "after munmap and mmap: %d registrations dropped, %d made "
			 "(expected at least one each)", uc_dropped - d1, uc_registered - r1);
		ok = 0;
	}
	failed += agreed_verdict(comm, me, ok, msg, cache
		? "a buffer unmapped and mapped again at the same address: the old registration "
		  "dropped (its watch fired), registered afresh, results right"
		: "a buffer unmapped and mapped again at the same address: results right");

	/* the pages released: the next touch maps new ones */
	int r2 = uc_registered, d2 = uc_dropped;
	ok = again == buf && madvise(buf, bytes, MADV_DONTNEED) == 0;
	if (ok && zc_allreduce(comm, me, p, buf, n, 3, msg))
		ok = 0;
	if (ok && cache && (uc_dropped <= d2 || uc_registered <= r2)) {
		snprintf(msg, MSG, "after MADV_DONTNEED: %d registrations dropped, %d made",
			 uc_dropped - d2, uc_registered - r2);
		ok = 0;
	}
	failed += agreed_verdict(comm, me, ok, msg, "a buffer whose pages MADV_DONTNEED released: "
			     "never moved through the old pages, results right");

	/* a read-only source: registered read-only (or copied) */
	ok = again == buf && mprotect(buf, bytes, PROT_READ) == 0;
	float *out = malloc(bytes);
	if (ok && out) {
		npccl_status_t st = npccl_allreduce(buf, out, n, NPCCL_FLOAT32, NPCCL_SUM, comm);
		for (size_t i = 0; !st && ok && i < n; i++)
			if (out[i] != buf[i] * (float)p) {
				snprintf(msg, MSG, "element %zu is %g, expected %g", i, (double)out[i],
					 (double)buf[i] * p);
				ok = 0;
			}
		if (st) {
			snprintf(msg, MSG, "allreduce: %s", npccl_comm_last_error(comm));
			ok = 0;
		}
	}
	free(out);
	failed += agreed_verdict(comm, me, ok, msg, "a read-only (PROT_READ) send buffer into a "
			     "malloc'd one: results right");
	if (again == buf)
		munmap(buf, bytes);

	/* malloc'd blocks freed and allocated again (mmap'd by malloc: freed = unmapped) */
	ok = 1;
	for (int k = 0; k < 4 && ok; k++) {
		size_t nb = (2u << 20) + (size_t)k * 4096;
		float *m = malloc(nb);
		if (!m || zc_allreduce(comm, me, p, m, nb / sizeof(float), 10 + k, msg))
			ok = 0;
		free(m);
	}
	failed += agreed_verdict(comm, me, ok, msg, "malloc'd blocks freed and allocated again, four "
			     "times: results right");
	npccl_comm_destroy(comm);
	if (me == 0)
		ccl_tap_plan();
	return failed ? 1 : 0;
}

/* Launched rank: a mismatched call (rank VICTIM differs); prints
 * "envfault rank R status S: message". */
static int cmd_env_fault(int argc, char **argv)
{
	npccl_comm_t comm;
	char err[512];
	if (argc < 2)
		return 2;
	const char *nm = argv[0];
	int victim = atoi(argv[1]);
	if (npccl_comm_init_env(&comm, err, sizeof(err))) {
		printf("envfault init failed: %s\n", err);
		return 1;
	}
	int me;
	npccl_comm_rank(comm, &me);
	size_t n = strstr(nm, "large") ? 300000 : 1000;
	float *buf = calloc(n + 8, sizeof(float));
	npccl_status_t st = mismatched_call(nm, me, victim, buf, n, comm);
	printf("envfault rank %d status %s: %s\n", me, npccl_strerror(st),
	       npccl_comm_last_error(comm));
	npccl_comm_destroy(comm);
	free(buf);
	return 0;
}

/* --help (tests/common/test_usage.c) */
const char npushm_test_usage[] =
	"COMMAND [ARGS]\n"
	"ccl's collective tests, TAP on stdout (make check-ccl runs them). Commands:\n"
	"  matrix [--full] [--tcp] [--ranks A-B]  every collective x dtype x count\n"
	"  fault | misc | shm                      fault injection, API negatives, shared memory\n"
	"  env-worker | env-loop | env-matrix | env-zc | env-usercache | env-fault NAME\n"
	"                                          one rank started by a launcher (RANK, WORLD_SIZE,\n"
	"                                          MASTER_ADDR, MASTER_PORT)\n";

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2) {
		fprintf(stderr, "usage: ccl-test matrix|fault|misc|env-worker [...]\n");
		return 2;
	}
	if (!strcmp(argv[1], "env-worker"))
		return cmd_env_worker();
	if (!strcmp(argv[1], "env-loop"))
		return cmd_env_loop();
	if (!strcmp(argv[1], "env-matrix"))
		return cmd_env_matrix();
	if (!strcmp(argv[1], "env-zc"))
		return cmd_env_zc();
	if (!strcmp(argv[1], "env-usercache"))
		return cmd_env_usercache();
	if (!strcmp(argv[1], "env-fault"))
		return cmd_env_fault(argc - 2, argv + 2);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 2;
	if (!strcmp(argv[1], "matrix"))
		return cmd_matrix(argc - 2, argv + 2);
	if (!strcmp(argv[1], "fault"))
		return cmd_fault(argc - 2, argv + 2);
	if (!strcmp(argv[1], "misc"))
		return cmd_misc();
	if (!strcmp(argv[1], "shm"))
		return cmd_shm();
	if (!strcmp(argv[1], "single-copy"))
		return cmd_single_copy(argc - 2, argv + 2);
	if (!strcmp(argv[1], "single-copy-race"))
		return cmd_single_copy_race(argc - 2, argv + 2);
	fprintf(stderr, "unknown command %s\n", argv[1]);
	return 2;
}
