/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * threads.c - a small pthread pool for data-parallel loops.
 *
 * npt_parallel_for(n, grain, fn, arg) splits [0, n) into at most one
 * contiguous range per thread, never smaller than `grain` items, so small
 * jobs run on the caller alone with no synchronisation at all.
 * npt_parallel_items(n, fn, arg) hands out the n items one at a time (for a
 * few coarse items of fixed extent, such as the pieces of a reduction). The
 * caller works too; idle workers sleep on a condition variable. A parallel
 * loop issued from inside a task runs inline.
 *
 * npt_parallel_for_hot() is npt_parallel_for() for a loop that the next one
 * follows within microseconds (a decode step's matrix-vector products, a
 * hundred and more per token, each a fraction of a millisecond): after it
 * the workers poll for the next job for up to NPT_POOL_SPIN_US (default 50)
 * microseconds before they sleep, and the caller polls for their end the
 * same way, so neither pays a wake-up per product. Other loops sleep at
 * once, leaving the cores to whatever runs between them (oneDNN's own
 * threads in a GEMM). A job's fields change only when no worker is inside
 * the previous job (tp_busy), so a worker that polls or wakes late never
 * reads a job being written.
 *
 * Contracts: ranges and items go to whichever thread asks first, so a task
 * must compute the same values whichever thread runs it and whatever else
 * that thread ran before (the tid argument names a thread for scratch
 * memory only; results never depend on it). Thread count =
 * $NPT_NUM_THREADS or npt_set_num_threads(), else the number of online
 * CPUs; changing it joins the workers (they are restarted on the next
 * parallel loop). Jobs are serialised by the caller's evaluation lock; the
 * pool itself has one job slot. OpenBLAS is given the same thread count.
 * Each thread keeps its kernels' scratch blocks (npt_thread_scratch); a
 * worker frees its own when it exits.
 */
#include "backend.h"

#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t tp_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tp_wake = PTHREAD_COND_INITIALIZER;
static pthread_cond_t tp_done = PTHREAD_COND_INITIALIZER;
static pthread_t *tp_workers;
static int tp_nworkers;      /* running workers */
static atomic_int tp_nthreads; /* configured, including caller; 0 = unread */
static _Atomic uint64_t tp_gen; /* bumped under tp_lock when a job is posted */
static atomic_int tp_stop;
static atomic_int tp_busy;   /* workers between taking a job and leaving it */
static atomic_llong tp_spin_ns = -1; /* polling time after a hot job; -1 = unread */
static _Thread_local int tp_inside;

static struct {
	npt_task_fn fn;
	void *arg;
	int64_t n, chunk, nchunks;
	int hot;
	atomic_llong next;
	atomic_llong left;
} job;

extern void openblas_set_num_threads(int n) __attribute__((weak));

void npt_blas_set_threads(int n)
{
	if (openblas_set_num_threads)
		openblas_set_num_threads(n);
}

static _Thread_local struct {
	void *p;
	size_t cap;
} tls_scratch[NPT_TLS_SLOTS_];

void *npt_thread_scratch(int slot, size_t bytes)
{
	if (tls_scratch[slot].cap < bytes) {
		size_t cap = (bytes + 63) & ~(size_t)63;

		free(tls_scratch[slot].p);
		tls_scratch[slot].p = aligned_alloc(64, cap);
		tls_scratch[slot].cap = tls_scratch[slot].p ? cap : 0;
	}
	return tls_scratch[slot].p;
}

static void thread_scratch_release(void)
{
	for (int i = 0; i < NPT_TLS_SLOTS_; i++) {
		free(tls_scratch[i].p);
		tls_scratch[i].p = NULL;
		tls_scratch[i].cap = 0;
	}
}

static inline void tp_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static int64_t tp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* $NPT_POOL_SPIN_US (0..10000 microseconds; default 50), read once */
static int64_t spin_ns(void)
{
	long long ns = atomic_load_explicit(&tp_spin_ns, memory_order_relaxed);

	if (ns < 0) {
		const char *e = getenv("NPT_POOL_SPIN_US");
		char *end;
		long us = 50;

		if (e && *e) {
			us = strtol(e, &end, 10);
			if (*end || us < 0 || us > 10000)
				us = 50;
		}
		ns = (long long)us * 1000;
		atomic_store_explicit(&tp_spin_ns, ns, memory_order_relaxed);
	}
	return ns;
}

/* Poll until *v differs from @old (or the pool stops) for up to @ns; whether it did. */
static int poll_u64(_Atomic uint64_t *v, uint64_t old, int64_t ns)
{
	int64_t t0 = 0;

	for (unsigned i = 1; ; i++) {
		if (atomic_load(v) != old || atomic_load_explicit(&tp_stop, memory_order_relaxed))
			return 1;
		tp_relax();
		if (!(i & 31)) {
			int64_t t = tp_now_ns();

			if (!t0)
				t0 = t;
			else if (t - t0 > ns)
				return 0;
		}
	}
}

static int default_threads(void)
{
	const char *e = getenv("NPT_NUM_THREADS");
	long n = e && *e ? strtol(e, NULL, 10) : 0;

	if (n <= 0)
		n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n <= 0)
		n = 1;
	if (n > 256)
		n = 256;
	return (int)n;
}

int npt_pool_threads(void)
{
	int n = atomic_load(&tp_nthreads);

	if (!n) {
		int exp = 0;

		n = default_threads();
		if (!atomic_compare_exchange_strong(&tp_nthreads, &exp, n))
			n = exp;
		npt_blas_set_threads(n);
	}
	return n;
}

static void run_chunks(int tid)
{
	for (;;) {
		int64_t c = atomic_fetch_add(&job.next, 1);

		if (c >= job.nchunks)
			break;
		int64_t b = c * job.chunk, e = b + job.chunk;

		if (e > job.n)
			e = job.n;
		job.fn(job.arg, b, e, tid);
		if (atomic_fetch_sub(&job.left, 1) == 1) {
			pthread_mutex_lock(&tp_lock);
			pthread_cond_signal(&tp_done);
			pthread_mutex_unlock(&tp_lock);
		}
	}
}

static void *worker(void *arg)
{
	int tid = (int)(intptr_t)arg;
	uint64_t seen = 0;

	tp_inside = 1;
	pthread_mutex_lock(&tp_lock);
	seen = atomic_load(&tp_gen);
	for (;;) {
		while (atomic_load(&tp_gen) == seen && !atomic_load(&tp_stop))
			pthread_cond_wait(&tp_wake, &tp_lock);
		if (atomic_load(&tp_stop))
			break;
		/* under tp_lock: the caller posts no new job while tp_busy > 0 */
		seen = atomic_load(&tp_gen);
		atomic_fetch_add(&tp_busy, 1);
		int hot = job.hot;

		pthread_mutex_unlock(&tp_lock);
		run_chunks(tid);
		atomic_fetch_sub(&tp_busy, 1);
		if (hot)
			poll_u64(&tp_gen, seen, spin_ns());
		pthread_mutex_lock(&tp_lock);
	}
	pthread_mutex_unlock(&tp_lock);
	thread_scratch_release();
	return NULL;
}

static void stop_workers(void)
{
	pthread_mutex_lock(&tp_lock);
	atomic_store(&tp_stop, 1);
	pthread_cond_broadcast(&tp_wake);
	pthread_mutex_unlock(&tp_lock);
	for (int i = 0; i < tp_nworkers; i++)
		pthread_join(tp_workers[i], NULL);
	free(tp_workers);
	tp_workers = NULL;
	tp_nworkers = 0;
	atomic_store(&tp_stop, 0);
}

static int start_workers(int want)
{
	tp_workers = calloc(want, sizeof(pthread_t));
	if (!tp_workers)
		return 0;
	for (int i = 0; i < want; i++) {
		if (pthread_create(&tp_workers[i], NULL, worker, (void *)(intptr_t)(i + 1)))
			break;
		tp_nworkers++;
	}
	return tp_nworkers;
}

/* Lock tp_lock with no worker inside a job (one that finished a chunk claims once more before it leaves). */
static void lock_idle_pool(void)
{
	for (unsigned i = 1; ; i++) {
		if (!atomic_load(&tp_busy)) {
			pthread_mutex_lock(&tp_lock);
			if (!atomic_load(&tp_busy))
				return;
			pthread_mutex_unlock(&tp_lock);
		}
		tp_relax();
		if (!(i & 255))
			sched_yield();
	}
}

/* run [0, n) as nchunks chunks of `chunk` items on the pool (and the caller) */
static void run_job(int64_t n, int64_t chunk, npt_task_fn fn, void *arg, int hot)
{
	lock_idle_pool();
	job.fn = fn;
	job.arg = arg;
	job.n = n;
	job.chunk = chunk;
	job.nchunks = (n + chunk - 1) / chunk;
	job.hot = hot;
	atomic_store(&job.next, 0);
	atomic_store(&job.left, job.nchunks);
	atomic_fetch_add(&tp_gen, 1);
	pthread_cond_broadcast(&tp_wake);
	pthread_mutex_unlock(&tp_lock);
	tp_inside = 1;
	run_chunks(0);
	tp_inside = 0;
	if (hot) {
		int64_t t0 = 0;

		for (unsigned i = 1; atomic_load(&job.left) > 0; i++) {
			tp_relax();
			if (!(i & 31)) {
				int64_t t = tp_now_ns();

				if (!t0)
					t0 = t;
				else if (t - t0 > spin_ns())
					break;
			}
		}
	}
	if (atomic_load(&job.left) > 0) {
		pthread_mutex_lock(&tp_lock);
		while (atomic_load(&job.left) > 0)
			pthread_cond_wait(&tp_done, &tp_lock);
		pthread_mutex_unlock(&tp_lock);
	}
}

/* make sure the pool has nt - 1 workers; 0 when it cannot start them */
static int pool_ready(int nt)
{
	if (tp_nworkers == nt - 1)
		return 1;
	if (tp_nworkers)
		stop_workers();
	return start_workers(nt - 1) > 0;
}

static void parallel_for(int64_t n, int64_t grain, npt_task_fn fn, void *arg, int hot)
{
	int nt = npt_pool_threads();

	if (n <= 0)
		return;
	if (grain < 1)
		grain = 1;
	int64_t nchunks = (n + grain - 1) / grain;

	if (nchunks > nt)
		nchunks = nt;
	if (nchunks <= 1 || tp_inside || !pool_ready(nt)) {
		fn(arg, 0, n, 0);
		return;
	}
	if (nchunks > tp_nworkers + 1)
		nchunks = tp_nworkers + 1;
	run_job(n, (n + nchunks - 1) / nchunks, fn, arg, hot);
}

void npt_parallel_for(int64_t n, int64_t grain, npt_task_fn fn, void *arg)
{
	parallel_for(n, grain, fn, arg, 0);
}

void npt_parallel_for_hot(int64_t n, int64_t grain, npt_task_fn fn, void *arg)
{
	parallel_for(n, grain, fn, arg, 1);
}

void npt_parallel_items(int64_t n, npt_task_fn fn, void *arg)
{
	int nt = npt_pool_threads();

	if (n <= 0)
		return;
	if (n == 1 || nt <= 1 || tp_inside || !pool_ready(nt)) {
		fn(arg, 0, n, 0);
		return;
	}
	run_job(n, 1, fn, arg, 0);
}

void npt_pool_set_threads(int n)
{
	if (tp_nworkers)
		stop_workers();
	atomic_store(&tp_nthreads, n);
	npt_blas_set_threads(n);
}

NPT_API int npt_get_num_threads(void)
{
	return npt_pool_threads();
}
