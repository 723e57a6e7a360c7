// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm_watch_race_test.c - watches under fire: threads unmap, discard
 * (MADV_DONTNEED), move and shrink (mremap) and replace the pages of an
 * arena while other threads add and delete ranges over it on one watch,
 * readers take the events, and watches are closed, or their process exits,
 * while their ranges fire.
 *
 * The kernel must stay sound: no list corruption, use-after-free, WARNING
 * or hang (the VM runner fails the run on any report, the debug lane adds
 * KASAN and lockdep, and each storm checks that the kernel gained no
 * taint). Every range must be reported at most once, with its own cookie,
 * and exactly once unless it was deleted.
 *
 * A storm runs for a fixed time, NPUSHM_STORM_MS (default 3000 ms), not a
 * fixed number of rounds, so that it fits its timeout on a debug kernel ten
 * times slower; it logs how many operations it made.
 */
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <time.h>

#include "npushm_fixture.h"
#include "npushm_watch.h"

#define MUTATORS	3
#define ADDERS		2
#define READERS		2
#define SLICE_PAGES	8	/* each mutator's own pages, then as many for mremap */
#define AREA_PAGES	(MUTATORS * 2 * SLICE_PAGES)
#define MAX_IDS		(1u << 20)
#define RING		256	/* live ranges per adder */

/* Kernel taint bits that mean a kernel report: bad page (KASAN), died, warning. */
#define TAINT_REPORTS	((1ul << 5) | (1ul << 7) | (1ul << 9))

struct storm {
	char *area;
	int w;
	volatile int stop;	/* mutators and adders */
	volatile int drained;	/* readers: nothing more will fire */
	unsigned long ops[3];	/* mutations, adds, events read */
	unsigned char *seen;	/* by id: events read */
	unsigned char *deleted;	/* by id: DEL returned 0 */
	uint64_t *cookie;	/* by id: the cookie ADD was given */
	uint64_t *got;		/* by id: the cookie read */
	uint64_t max_id;
	int bad;
	char why[160];
};

struct worker {
	struct storm *s;
	unsigned int n;
	uint64_t rng;
};

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static long storm_ms(void)
{
	const char *e = getenv("NPUSHM_STORM_MS");
	long ms = e ? strtol(e, NULL, 10) : 3000;

	return ms > 0 ? ms : 3000;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static unsigned long taint(void)
{
	unsigned long t = 0;
	FILE *f = fopen("/proc/sys/kernel/tainted", "r");

	if (f) {
		if (fscanf(f, "%lu", &t) != 1)
			t = 0;
		fclose(f);
	}
	return t;
}

static void fail(struct storm *s, const char *what, long v)
{
	if (!__atomic_exchange_n(&s->bad, 1, __ATOMIC_SEQ_CST))
		snprintf(s->why, sizeof(s->why), "%s: %ld (%s)", what, v,
			 v < 0 ? strerror((int)-v) : "-");
	s->stop = 1;
}

/* Anonymous read-write pages at @p, which must be free. */
static int refill(char *p, size_t len)
{
	void *q = mmap(p, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (q == MAP_FAILED)
		return -errno;
	if (q != p) {
		munmap(q, len);
		return -EEXIST;
	}
	return 0;
}

static void touch(char *p, size_t pages)
{
	size_t i;

	for (i = 0; i < pages; i++)
		p[i * PG] = 1;
}

/*
 * Changes the mappings of its own slice only (so that it may touch them):
 * pages [0, SLICE_PAGES) are mapped between operations, the SLICE_PAGES
 * after them are mremap's destination. Ends with both halves mapped.
 */
static void *mutator(void *arg)
{
	struct worker *wk = arg;
	struct storm *s = wk->s;
	char *base = s->area + (size_t)wk->n * 2 * SLICE_PAGES * PG;
	char *scratch = base + SLICE_PAGES * PG;
	unsigned long n = 0;
	int ret;

	while (!s->stop) {
		size_t at = rnd(&wk->rng) % SLICE_PAGES;
		size_t k = 1 + rnd(&wk->rng) % (SLICE_PAGES - at);
		char *p = base + at * PG, *q;

		switch (rnd(&wk->rng) % 5) {
		case 0:
			touch(p, k);
			if (madvise(p, k * PG, MADV_DONTNEED))
				fail(s, "madvise(MADV_DONTNEED)", -errno);
			break;
		case 1:
			if (munmap(p, k * PG))
				fail(s, "munmap", -errno);
			else if ((ret = refill(p, k * PG)))
				fail(s, "mmap after munmap", ret);
			break;
		case 2:
			touch(p, k);
			q = mremap(p, k * PG, k * PG, MREMAP_MAYMOVE | MREMAP_FIXED,
				   scratch + at * PG);
			if (q == MAP_FAILED) {
				fail(s, "mremap away", -errno);
				break;
			}
			touch(q, k);
			if (mremap(q, k * PG, k * PG, MREMAP_MAYMOVE | MREMAP_FIXED,
				   p) == MAP_FAILED)
				fail(s, "mremap back", -errno);
			else if ((ret = refill(q, k * PG)))
				fail(s, "mmap after mremap", ret);
			break;
		case 3:
			if (k < 2) {
				at = at ? at - 1 : 0;
				k = 2;
				p = base + at * PG;
			}
			touch(p, k);
			if (mremap(p, k * PG, PG, 0) == MAP_FAILED)
				fail(s, "mremap shrink", -errno);
			else if ((ret = refill(p + PG, (k - 1) * PG)))
				fail(s, "mmap after shrink", ret);
			break;
		default:
			touch(p, k);
			if (mmap(p, k * PG, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != p)
				fail(s, "mmap(MAP_FIXED) over", -errno);
			break;
		}
		n++;
	}
	__atomic_add_fetch(&s->ops[0], n, __ATOMIC_RELAXED);
	return NULL;
}

static int del_one(struct storm *s, uint64_t id)
{
	int ret = w_del(s->w, id);

	if (ret)
		fail(s, "WATCH_DEL", ret);
	else
		s->deleted[id] = 1;
	return ret;
}

/* Adds ranges anywhere in the area, deletes half of them, some at once. */
static void *adder(void *arg)
{
	struct worker *wk = arg;
	struct storm *s = wk->s;
	uint64_t ring[RING];
	unsigned int live = 0;
	unsigned long n = 0;

	while (!s->stop) {
		size_t at = rnd(&wk->rng) % AREA_PAGES;
		size_t k = 1 + rnd(&wk->rng) % 8;
		uint64_t cookie = rnd(&wk->rng), max;
		long long id;

		if (at + k > AREA_PAGES)
			k = AREA_PAGES - at;
		id = w_add(s->w, s->area + at * PG, k * PG, cookie);
		if (id <= 0) {
			fail(s, "WATCH_ADD", (long)id);
			break;
		}
		if ((uint64_t)id >= MAX_IDS) {
			del_one(s, (uint64_t)id);
			s->stop = 1;
			break;
		}
		s->cookie[id] = cookie;
		max = __atomic_load_n(&s->max_id, __ATOMIC_RELAXED);
		while ((uint64_t)id > max &&
		       !__atomic_compare_exchange_n(&s->max_id, &max, (uint64_t)id, false,
						    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			;
		n++;
		if (rnd(&wk->rng) & 1) {
			if (del_one(s, (uint64_t)id))
				break;
			continue;
		}
		if (live == RING) {
			unsigned int i = rnd(&wk->rng) % RING;

			if (del_one(s, ring[i]))
				break;
			ring[i] = (uint64_t)id;
		} else {
			ring[live++] = (uint64_t)id;
		}
	}
	__atomic_add_fetch(&s->ops[1], n, __ATOMIC_RELAXED);
	return NULL;
}

/* Reads until told nothing more fires and nothing is left. */
static void *reader(void *arg)
{
	struct worker *wk = arg;
	struct storm *s = wk->s;
	struct npushm_watch_event ev[16];
	struct pollfd pfd = { .fd = s->w, .events = POLLIN };
	unsigned long got = 0;
	int i, n;

	for (;;) {
		bool last = s->drained;

		n = w_read(s->w, ev, 1 + rnd(&wk->rng) % 16);
		if (n == -EAGAIN) {
			if (last)
				break;
			poll(&pfd, 1, 5);
			continue;
		}
		if (n <= 0) {
			fail(s, "read", n);
			break;
		}
		for (i = 0; i < n; i++) {
			if (!ev[i].id || ev[i].id >= MAX_IDS) {
				fail(s, "event with an id never given", (long)ev[i].id);
				continue;
			}
			__atomic_fetch_add(&s->seen[ev[i].id], 1, __ATOMIC_RELAXED);
			s->got[ev[i].id] = ev[i].cookie;
		}
		got += n;
	}
	__atomic_add_fetch(&s->ops[2], got, __ATOMIC_RELAXED);
	return NULL;
}

static struct storm *storm_new(void)
{
	struct storm *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->seen = calloc(MAX_IDS, 1);
	s->deleted = calloc(MAX_IDS, 1);
	s->cookie = calloc(MAX_IDS, sizeof(*s->cookie));
	s->got = calloc(MAX_IDS, sizeof(*s->got));
	s->area = anon(AREA_PAGES * PG);
	s->w = -1;
	if (!s->seen || !s->deleted || !s->cookie || !s->got || !s->area) {
		free(s);
		return NULL;
	}
	return s;
}

static void storm_free(struct storm *s)
{
	if (s->area)
		munmap(s->area, AREA_PAGES * PG);
	free(s->seen);
	free(s->deleted);
	free(s->cookie);
	free(s->got);
	free(s);
}

static int start(pthread_t *t, struct worker *wk, struct storm *s,
		 unsigned int n, void *(*fn)(void *))
{
	wk->s = s;
	wk->n = n;
	wk->rng = 0x9e3779b97f4a7c15ull * (n + 1) ^ (uint64_t)(uintptr_t)fn;
	return pthread_create(t, NULL, fn, wk);
}

/*
 * The attack of issue 22: mutators race adders, deleters and readers on
 * one watch; then the area goes, firing every range still there, and the
 * readers drain. Deleted ranges may have been reported before their
 * deletion; every other one exactly once.
 */
TEST_F_TIMEOUT(npushm, storm_add_del_read_against_unmap_madvise_mremap, 120)
{
	unsigned long taint0 = taint();
	pthread_t tm[MUTATORS], ta[ADDERS], tr[READERS];
	struct worker wm[MUTATORS], wa[ADDERS], wr[READERS];
	volatile uint64_t *gen;
	struct storm *s = storm_new();
	unsigned long reported = 0, kept = 0;
	uint64_t id, wrong = 0;
	double t0;
	int i;

	ASSERT_NE(NULL, s);
	s->w = w_open(self->dev, false);
	ASSERT_LE(0, s->w);
	gen = w_gen(s->w);
	ASSERT_NE(MAP_FAILED, gen);
	for (i = 0; i < READERS; i++)
		ASSERT_EQ(0, start(&tr[i], &wr[i], s, i, reader));
	for (i = 0; i < ADDERS; i++)
		ASSERT_EQ(0, start(&ta[i], &wa[i], s, i, adder));
	for (i = 0; i < MUTATORS; i++)
		ASSERT_EQ(0, start(&tm[i], &wm[i], s, i, mutator));
	t0 = now_ms();
	while (!s->stop && now_ms() - t0 < storm_ms())
		usleep(20000);
	s->stop = 1;
	for (i = 0; i < MUTATORS; i++)
		pthread_join(tm[i], NULL);
	for (i = 0; i < ADDERS; i++)
		pthread_join(ta[i], NULL);
	/* Every range not deleted fires now, if it did not before. */
	EXPECT_EQ(0, munmap(s->area, AREA_PAGES * PG));
	s->area = NULL;
	s->drained = 1;
	for (i = 0; i < READERS; i++)
		pthread_join(tr[i], NULL);
	TH_LOG("%.0f ms: %lu mappings changed, %lu ranges added, %lu events read",
	       now_ms() - t0, s->ops[0], s->ops[1], s->ops[2]);
	EXPECT_EQ(0, s->bad) {
		TH_LOG("%s", s->why);
	}
	EXPECT_LT(0, s->ops[0]);
	EXPECT_LT(0, s->ops[1]);
	/* Two adders: the ids up to max_id were all given, to one of them. */
	for (id = 1; id <= s->max_id; id++) {
		reported += s->seen[id];
		kept += !s->deleted[id];
		if (!wrong && (s->seen[id] > 1 || (!s->deleted[id] && s->seen[id] != 1) ||
			       (s->seen[id] && s->got[id] != s->cookie[id])))
			wrong = id;
	}
	for (id = s->max_id + 1; id < MAX_IDS; id++)
		reported += s->seen[id];
	EXPECT_EQ(0, wrong) {
		TH_LOG("range %llu: read %u times, deleted %u, cookie %llx, read %llx",
		       (unsigned long long)wrong, s->seen[wrong], s->deleted[wrong],
		       (unsigned long long)s->cookie[wrong],
		       (unsigned long long)s->got[wrong]);
	}
	EXPECT_EQ(s->ops[2], reported);
	EXPECT_LE(kept, *gen);
	EXPECT_LE(reported, *gen);
	EXPECT_EQ(0, taint() & ~taint0 & TAINT_REPORTS) {
		TH_LOG("the kernel reported a problem during the storm: see its log");
	}
	munmap((void *)gen, PG);
	close(s->w);
	storm_free(s);
}

struct discarder {
	char *page;
	volatile int go;	/* rounds started */
	volatile int done;	/* rounds finished */
	volatile int quit;
	unsigned long discards;
};

/* Each round: discards its page until the round is over. */
static void *discard_loop(void *arg)
{
	struct discarder *d = arg;
	int round = 0;

	while (!d->quit) {
		if (d->go == round) {
			sched_yield();
			continue;
		}
		round = d->go;
		while (d->done != round) {
			d->page[0] = 1;
			madvise(d->page, PG, MADV_DONTNEED);
			d->discards++;
		}
	}
	return NULL;
}

/*
 * The release of a watch frees its ranges one by one while those not yet
 * removed may still fire: range 1 has fired (it is the last queued event),
 * ranges 2..n watch a page another thread keeps discarding, and the watch
 * is closed. A range firing after range 1 was freed must not be queued
 * behind it (before the fix: list corruption, a write to freed memory).
 * Removing a range waits out the invalidation in flight on it, and here one
 * nearly always is: on a starved TCG guest one round has taken minutes,
 * hence the longer timeout (a round takes 0.2-1.2 s otherwise).
 */
TEST_F_TIMEOUT(npushm, close_while_its_other_ranges_fire, 300)
{
	unsigned long taint0 = taint(), rounds = 0;
	struct discarder d = { 0 };
	char *fired = anon(PG);
	pthread_t t;
	double t0;
	int w, i;

	ASSERT_NE(NULL, fired);
	d.page = anon(PG);
	ASSERT_NE(NULL, d.page);
	ASSERT_EQ(0, pthread_create(&t, NULL, discard_loop, &d));
	t0 = now_ms();
	while (now_ms() - t0 < storm_ms()) {
		w = w_open(self->dev, false);
		ASSERT_LE(0, w);
		ASSERT_EQ(1, w_add(w, fired, PG, 1));
		ASSERT_EQ(0, madvise(fired, PG, MADV_DONTNEED));
		for (i = 2; i <= 2048; i++)
			ASSERT_EQ(i, w_add(w, d.page, PG, i));
		d.go++;
		close(w);
		d.done = d.go;
		rounds++;
	}
	d.quit = 1;
	pthread_join(t, NULL);
	TH_LOG("%.0f ms: %lu watches closed, page discarded %lu times",
	       now_ms() - t0, rounds, d.discards);
	EXPECT_LT(0, rounds);
	EXPECT_EQ(0, taint() & ~taint0 & TAINT_REPORTS) {
		TH_LOG("the kernel reported a problem: see its log");
	}
	munmap(fired, PG);
	munmap(d.page, PG);
}

/* Fills a fresh watch with ranges over the whole area, all live. */
static int fill_watch(struct storm *s, int dev, uint64_t *rng)
{
	int w = w_open(dev, false), i;

	if (w < 0)
		return w;
	for (i = 0; i < 64; i++) {
		size_t at = rnd(rng) % AREA_PAGES;
		long long id = w_add(w, s->area + at * PG,
				     (1 + rnd(rng) % 4) * PG, (uint64_t)i);

		if (id <= 0) {
			close(w);
			return id ? (int)id : -EPROTO;
		}
	}
	return w;
}

/*
 * The last close of a watch frees its ranges while the others of the same
 * watch keep firing: from this process, and from a child that inherited
 * the watch (its release runs in another address space).
 */
TEST_F_TIMEOUT(npushm, storm_close_while_ranges_fire, 120)
{
	unsigned long taint0 = taint(), rounds = 0;
	pthread_t tm[MUTATORS];
	struct worker wm[MUTATORS];
	struct storm *s = storm_new();
	uint64_t rng = 88172645463325252ull;
	double t0;
	int i, w, status;
	pid_t pid;

	ASSERT_NE(NULL, s);
	for (i = 0; i < MUTATORS; i++)
		ASSERT_EQ(0, start(&tm[i], &wm[i], s, i, mutator));
	t0 = now_ms();
	while (!s->stop && now_ms() - t0 < storm_ms()) {
		w = fill_watch(s, self->dev, &rng);
		if (w < 0) {
			fail(s, "a watch full of ranges", w);
			break;
		}
		if (rounds++ % 8 == 7) {
			pid = fork();
			if (pid < 0) {
				fail(s, "fork", -errno);
				close(w);
				break;
			}
			if (!pid) {
				usleep(1000);
				close(w);
				_exit(0);
			}
			close(w);
			if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
				fail(s, "the child closing the watch", status);
		} else {
			close(w);
		}
	}
	s->stop = 1;
	for (i = 0; i < MUTATORS; i++)
		pthread_join(tm[i], NULL);
	TH_LOG("%.0f ms: %lu watches closed, %lu mappings changed",
	       now_ms() - t0, rounds, s->ops[0]);
	EXPECT_EQ(0, s->bad) {
		TH_LOG("%s", s->why);
	}
	EXPECT_LT(0, rounds);
	EXPECT_EQ(0, taint() & ~taint0 & TAINT_REPORTS) {
		TH_LOG("the kernel reported a problem during the storm: see its log");
	}
	storm_free(s);
}

/*
 * A process exits with its watch open while its threads change mappings:
 * one exiting thread tears the address space down (firing every range)
 * while another, the last to drop the descriptor table, releases the
 * watch.
 */
static int exit_while_firing(int dev)
{
	pthread_t tm[MUTATORS];
	struct worker wm[MUTATORS];
	struct storm *s = storm_new();
	uint64_t rng = 2463534242ull * (uint64_t)getpid();
	int i, w;

	if (!s)
		return 1;
	for (i = 0; i < MUTATORS; i++)
		if (start(&tm[i], &wm[i], s, i, mutator))
			return 2;
	w = fill_watch(s, dev, &rng);
	if (w < 0)
		return 3;
	usleep(rnd(&rng) % 2000);
	/* exit_group() with the mutators running and the watch open */
	_exit(s->bad ? 4 : 0);
}

TEST_F_TIMEOUT(npushm, storm_exit_while_ranges_fire, 120)
{
	unsigned long taint0 = taint(), rounds = 0;
	double t0 = now_ms();
	int status;
	pid_t pid;

	while (now_ms() - t0 < storm_ms()) {
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid)
			exit_while_firing(self->dev);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		ASSERT_EQ(0, WEXITSTATUS(status));
		rounds++;
	}
	TH_LOG("%.0f ms: %lu processes exited with their watch open",
	       now_ms() - t0, rounds);
	EXPECT_LT(0, rounds);
	EXPECT_EQ(0, taint() & ~taint0 & TAINT_REPORTS) {
		TH_LOG("the kernel reported a problem during the storm: see its log");
	}
}

TEST_HARNESS_MAIN
