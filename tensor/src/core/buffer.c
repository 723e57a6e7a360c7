/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * buffer.c - reference-counted buffers and the pool that recycles them.
 *
 * Owned buffers of at least NPT_POOL_MIN bytes come from mmap (2 MiB
 * aligned, MADV_HUGEPAGE, so a fresh buffer costs few page faults) and go
 * back to a size-keyed free list when their last reference drops; the next
 * allocation of a similar size reuses them without touching the OS. This is
 * what makes "a fresh result per call" cheap. Smaller buffers use malloc.
 * Borrowed buffers wrap user memory and call the user's release callback.
 *
 * Contracts: thread-safe (one mutex for the free list); per-thread counters
 * record fresh vs reused bytes for npt_stats_get(). Pool capacity is capped
 * by $NPT_POOL_MAX_BYTES (default 1 GiB); beyond it idle blocks are unmapped.
 */
#include "core.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define NPT_POOL_MIN (64u << 10)
#define NPT_HUGE (2u << 20)
#define NPT_POOL_SLOTS 64

typedef struct {
	void *ptr;
	size_t cap;
	uint64_t stamp;
} pool_block_t;

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pool_block_t pool[NPT_POOL_SLOTS];
static int pool_n;
static size_t pool_bytes;
static uint64_t pool_clock;
static size_t pool_max = (size_t)-1;

static _Thread_local npt_stats_t tstats;

static size_t pool_limit(void)
{
	if (pool_max == (size_t)-1) {
		const char *e = getenv("NPT_POOL_MAX_BYTES");

		pool_max = (e && *e) ? (size_t)strtoull(e, NULL, 0) : (size_t)1 << 30;
	}
	return pool_max;
}

static size_t round_cap(size_t n)
{
	if (n >= NPT_HUGE)
		return (n + NPT_HUGE - 1) & ~(size_t)(NPT_HUGE - 1);
	return (n + 4095) & ~(size_t)4095;
}

static void *os_map(size_t cap)
{
	if (cap < NPT_HUGE) {
		void *p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		return p == MAP_FAILED ? NULL : p;
	}
	/* over-map to get a 2 MiB aligned range that THP can back */
	size_t len = cap + NPT_HUGE;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	uintptr_t a = ((uintptr_t)p + NPT_HUGE - 1) & ~(uintptr_t)(NPT_HUGE - 1);
	size_t head = a - (uintptr_t)p, tail = len - head - cap;

	if (head)
		munmap(p, head);
	if (tail)
		munmap((char *)a + cap, tail);
	madvise((void *)a, cap, MADV_HUGEPAGE);
	return (void *)a;
}

/* caller holds pool_lock; evict least recently pooled blocks until `need` fits */
static void pool_evict(size_t need)
{
	while (pool_n > 0 && pool_bytes + need > pool_limit()) {
		int oldest = 0;

		for (int i = 1; i < pool_n; i++)
			if (pool[i].stamp < pool[oldest].stamp)
				oldest = i;
		munmap(pool[oldest].ptr, pool[oldest].cap);
		pool_bytes -= pool[oldest].cap;
		pool[oldest] = pool[--pool_n];
	}
}

static void *pool_take(size_t n, size_t *cap)
{
	int best = -1;

	pthread_mutex_lock(&pool_lock);
	for (int i = 0; i < pool_n; i++) {
		if (pool[i].cap < n || pool[i].cap > 2 * n + NPT_HUGE)
			continue;
		if (best < 0 || pool[i].cap < pool[best].cap)
			best = i;
	}
	void *p = NULL;

	if (best >= 0) {
		p = pool[best].ptr;
		*cap = pool[best].cap;
		pool_bytes -= pool[best].cap;
		pool[best] = pool[--pool_n];
	}
	pthread_mutex_unlock(&pool_lock);
	return p;
}

static void pool_give(void *p, size_t cap)
{
	pthread_mutex_lock(&pool_lock);
	if (cap > pool_limit()) {
		pthread_mutex_unlock(&pool_lock);
		munmap(p, cap);
		return;
	}
	pool_evict(cap);
	if (pool_n == NPT_POOL_SLOTS)
		pool_evict(pool_limit()); /* flush all: slot table full */
	pool[pool_n].ptr = p;
	pool[pool_n].cap = cap;
	pool[pool_n].stamp = ++pool_clock;
	pool_n++;
	pool_bytes += cap;
	pthread_mutex_unlock(&pool_lock);
}

/* raw owned memory of at least n bytes; *cap set to what to give back */
static void *mem_get(size_t n, size_t *cap, int count)
{
	void *p;

	if (n < NPT_POOL_MIN) {
		*cap = n;
		if (posix_memalign(&p, 64, n ? n : 1))
			return NULL;
		if (count) {
			tstats.os_bytes += n;
			tstats.os_allocs++;
		}
		return p;
	}
	p = pool_take(n, cap);
	if (p) {
		if (count) {
			tstats.reused_bytes += n;
			tstats.reused_allocs++;
		}
		return p;
	}
	*cap = round_cap(n);
	p = os_map(*cap);
	if (!p) {
		/* give idle memory back and retry once */
		npt_pool_trim();
		p = os_map(*cap);
		if (!p)
			return NULL;
	}
	if (count) {
		tstats.os_bytes += n;
		tstats.os_allocs++;
	}
	return p;
}

static void mem_put(void *p, size_t cap)
{
	if (cap < NPT_POOL_MIN)
		free(p);
	else
		pool_give(p, cap);
}

npt_status_t npt_buffer_alloc(size_t nbytes, npt_buffer_t **out)
{
	npt_buffer_t *b = calloc(1, sizeof(*b));

	if (!b)
		return npt_fail(NPT_E_NOMEM, "out of memory allocating a buffer header");
	b->data = mem_get(nbytes, &b->capacity, 1);
	if (!b->data) {
		free(b);
		return npt_fail(NPT_E_NOMEM, "out of memory allocating %zu bytes for a tensor "
				"(free tensors or lower NPT_POOL_MAX_BYTES)", nbytes);
	}
	atomic_init(&b->refs, 1);
	b->nbytes = nbytes;
	b->owned = 1;
	*out = b;
	return NPT_OK;
}

npt_buffer_t *npt_buffer_borrow(void *data, size_t nbytes, int readonly, void (*release)(void *),
				void *arg)
{
	npt_buffer_t *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	atomic_init(&b->refs, 1);
	b->data = data;
	b->nbytes = nbytes;
	b->readonly = readonly;
	b->release = release;
	b->release_arg = arg;
	return b;
}

void npt_buffer_retain(npt_buffer_t *b)
{
	atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
}

void npt_buffer_release(npt_buffer_t *b)
{
	if (!b || atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1)
		return;
	if (b->owned)
		mem_put(b->data, b->capacity);
	else if (b->release)
		b->release(b->release_arg);
	free(b);
}

void *npt_scratch_alloc(size_t nbytes, size_t *cap)
{
	return mem_get(nbytes, cap, 0);
}

void npt_scratch_free(void *p, size_t cap)
{
	if (p)
		mem_put(p, cap);
}

void npt_stats_add_inplace(size_t b)
{
	tstats.inplace_bytes += b;
}

void npt_stats_add_materialized(size_t b)
{
	tstats.materialized_bytes += b;
}

NPT_API void npt_stats_get(npt_stats_t *st)
{
	if (!st)
		return;
	*st = tstats;
	pthread_mutex_lock(&pool_lock);
	st->pool_cached_bytes = pool_bytes;
	pthread_mutex_unlock(&pool_lock);
}

NPT_API void npt_stats_reset(void)
{
	memset(&tstats, 0, sizeof(tstats));
}

NPT_API void npt_pool_trim(void)
{
	pthread_mutex_lock(&pool_lock);
	for (int i = 0; i < pool_n; i++)
		munmap(pool[i].ptr, pool[i].cap);
	pool_n = 0;
	pool_bytes = 0;
	pthread_mutex_unlock(&pool_lock);
}
