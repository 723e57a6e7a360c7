// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm_watch_test.c - watches (NPUSHM_IOC_WATCH): a range fires, once,
 * when its pages may change (munmap, MADV_DONTNEED, mremap, brk shrink, a
 * CoW break, the process's exit) and not when they stay (mprotect, touching,
 * fork, an unrelated munmap); the generation page, read(), poll() and
 * blocking reads report it; ids are never reused; only the owning address
 * space adds and deletes; a watch outlives its process; deletes race
 * readers; every field and limit is checked.
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <sys/mman.h>

#include "npushm_fixture.h"
#include "npushm_watch.h"

/* Exactly one pending event, (id, cookie); none after it. */
#define EXPECT_ONE_EVENT(w, want_id, want_cookie) do {			\
	struct npushm_watch_event _ev[4];				\
	EXPECT_EQ(1, w_read(w, _ev, 4));				\
	EXPECT_EQ((uint64_t)(want_id), _ev[0].id);			\
	EXPECT_EQ((uint64_t)(want_cookie), _ev[0].cookie);		\
	EXPECT_EQ(-EAGAIN, w_read(w, _ev, 4));				\
} while (0)

#define EXPECT_NO_EVENT(w) do {						\
	struct npushm_watch_event _ev[1];				\
	EXPECT_EQ(-EAGAIN, w_read(w, _ev, 1));				\
} while (0)

TEST_F(npushm, watch_is_advertised)
{
	EXPECT_TRUE(self->q0.features & NPUSHM_FEAT_WATCH);
}

TEST_F(npushm, watch_open_checks_flags)
{
	struct npushm_watch_open o = { .flags = 1 };
	struct npushm_query q;
	int w;

	EXPECT_EQ(-EINVAL, npu_ioctl(self->dev, NPUSHM_IOC_WATCH, &o));
	o.flags = 1u << 31;
	EXPECT_EQ(-EINVAL, npu_ioctl(self->dev, NPUSHM_IOC_WATCH, &o));
	w = w_open(self->dev, true);
	ASSERT_LE(0, w);
	EXPECT_EQ(FD_CLOEXEC, fcntl(w, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(O_RDONLY, fcntl(w, F_GETFL) & O_ACCMODE);
	EXPECT_EQ(-1, write(w, "x", 1));
	EXPECT_EQ(EBADF, errno);
	/* Each file takes only its own ioctls. */
	EXPECT_EQ(-ENOTTY, npu_ioctl(w, NPUSHM_IOC_WATCH, &o));
	EXPECT_EQ(-ENOTTY, npu_ioctl(w, NPUSHM_IOC_QUERY, &q));
	EXPECT_EQ(-ENOTTY, w_del(self->dev, 1));
	close(w);
}

TEST_F(npushm, watch_add_checks_fields)
{
	struct npushm_watch_range r;
	char *p = anon(2 * PG);
	int w = w_open(self->dev, false);
	long long id;

	ASSERT_NE(NULL, p);
	ASSERT_LE(0, w);
	memset(&r, 0, sizeof(r));
	r.start = (uintptr_t)p;
	r.len = PG;
	r.flags = 1;
	EXPECT_EQ(-EINVAL, npu_ioctl(w, NPUSHM_IOC_WATCH_ADD, &r));
	r.flags = 0;
	r.reserved = 1;
	EXPECT_EQ(-EINVAL, npu_ioctl(w, NPUSHM_IOC_WATCH_ADD, &r));
	r.reserved = 0;
	r.len = 0;
	EXPECT_EQ(-EINVAL, npu_ioctl(w, NPUSHM_IOC_WATCH_ADD, &r));
	EXPECT_EQ(-EINVAL, w_add(w, (void *)(uintptr_t)(UINT64_MAX - PG), 2 * PG, 0));
	EXPECT_EQ(-EINVAL, w_add(w, p, UINT64_MAX, 0));
	/* Beyond user space (even with 5-level page tables). */
	EXPECT_EQ(-EINVAL, w_add(w, (void *)(1ULL << 62), PG, 0));
	EXPECT_EQ(-EINVAL, w_add(w, p, 1ULL << 62, 0));
	/* A short struct, and unknown non-zero trailing bytes. */
	EXPECT_EQ(-EINVAL, npu_ioctl(w, _IOC(_IOC_READ | _IOC_WRITE, NPUSHM_IOC_MAGIC,
					     0x21, 32), &r));
	{
		struct { struct npushm_watch_range r; uint64_t more; } big = {
			.r = { .start = (uintptr_t)p, .len = PG }, .more = 1,
		};

		EXPECT_EQ(-E2BIG, npu_ioctl(w, _IOC(_IOC_READ | _IOC_WRITE,
						    NPUSHM_IOC_MAGIC, 0x21,
						    sizeof(big)), &big));
		big.more = 0;
		EXPECT_EQ(0, npu_ioctl(w, _IOC(_IOC_READ | _IOC_WRITE,
					       NPUSHM_IOC_MAGIC, 0x21,
					       sizeof(big)), &big));
		EXPECT_EQ(1, big.r.id);
	}
	/* Any alignment (whole pages watched); unmapped is fine; ids count up. */
	id = w_add(w, p + PG + 17, 3, 5);
	EXPECT_EQ(2, id);
	EXPECT_EQ(3, w_add(w, (void *)(uintptr_t)0x10000000, PG, 0));
	EXPECT_NO_EVENT(w);
	ASSERT_EQ(0, madvise(p + PG, PG, MADV_DONTNEED));
	EXPECT_ONE_EVENT(w, 2, 5);
	munmap(p, 2 * PG);
	EXPECT_ONE_EVENT(w, 1, 0);
	close(w);
}

TEST_F(npushm, munmap_fires_once)
{
	char *p = anon(4 * PG);
	int w = w_open(self->dev, false);
	volatile uint64_t *gen;
	long long id;

	ASSERT_NE(NULL, p);
	ASSERT_LE(0, w);
	gen = w_gen(w);
	ASSERT_NE(MAP_FAILED, gen);
	EXPECT_EQ(0, *gen);
	id = w_add(w, p + PG, 2 * PG, 0xc0ffee);
	ASSERT_LT(0, id);
	EXPECT_EQ(0, *gen);
	EXPECT_NO_EVENT(w);
	ASSERT_EQ(0, munmap(p, 4 * PG));
	EXPECT_EQ(1, *gen);
	EXPECT_ONE_EVENT(w, id, 0xc0ffee);
	/* Fired ranges do not fire again: remapping and unmapping again. */
	p = mmap(p, 4 * PG, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != MAP_FAILED) {
		p[PG] = 1;
		munmap(p, 4 * PG);
	}
	EXPECT_EQ(1, *gen);
	EXPECT_NO_EVENT(w);
	munmap((void *)gen, PG);
	close(w);
}

TEST_F(npushm, madv_dontneed_fires)
{
	char *p = anon(4 * PG);
	int w = w_open(self->dev, false);
	volatile uint64_t *gen;
	long long id;

	ASSERT_NE(NULL, p);
	ASSERT_LE(0, w);
	gen = w_gen(w);
	ASSERT_NE(MAP_FAILED, gen);
	id = w_add(w, p, 4 * PG, 7);
	ASSERT_LT(0, id);
	ASSERT_EQ(0, madvise(p + 3 * PG, PG, MADV_DONTNEED));
	EXPECT_EQ(1, *gen);
	EXPECT_ONE_EVENT(w, id, 7);
	munmap(p, 4 * PG);
	munmap((void *)gen, PG);
	close(w);
}

TEST_F(npushm, mremap_fires)
{
	char *p = anon(4 * PG), *q, *to;
	int w = w_open(self->dev, false);
	long long id, tail;

	ASSERT_NE(NULL, p);
	ASSERT_LE(0, w);
	/* A free destination: reserve, then move onto it. */
	to = mmap(NULL, 4 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, to);
	id = w_add(w, p, PG, 1);
	tail = w_add(w, p + 3 * PG, PG, 2);
	ASSERT_LT(0, id);
	ASSERT_LT(0, tail);
	/* Shrinking in place unmaps the tail only. */
	q = mremap(p, 4 * PG, 3 * PG, 0);
	ASSERT_EQ(p, q);
	EXPECT_ONE_EVENT(w, tail, 2);
	/* Moving the rest fires the head. */
	q = mremap(p, 3 * PG, 3 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, to);
	ASSERT_EQ(to, q);
	EXPECT_ONE_EVENT(w, id, 1);
	EXPECT_EQ(1, q[0]);
	munmap(q, 4 * PG);
	close(w);
}

TEST_F(npushm, brk_shrink_fires)
{
	char *top = sbrk(0), *p;
	int w = w_open(self->dev, false);
	long long id;

	ASSERT_LE(0, w);
	/* Whole pages of heap above whatever malloc holds. */
	p = (char *)(((uintptr_t)top + PG - 1) & ~(PG - 1));
	ASSERT_NE((void *)-1, sbrk(p - top + 4 * PG));
	memset(p, 3, 4 * PG);
	id = w_add(w, p + 2 * PG, 2 * PG, 9);
	ASSERT_LT(0, id);
	ASSERT_NE((void *)-1, sbrk(-(intptr_t)(2 * PG)));
	EXPECT_ONE_EVENT(w, id, 9);
	ASSERT_NE((void *)-1, sbrk(-(intptr_t)(p - top + 2 * PG)));
	close(w);
}

TEST_F(npushm, mprotect_and_touching_do_not_fire)
{
	char *p = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int w = w_open(self->dev, false);
	volatile uint64_t *gen;
	long long id;

	ASSERT_NE(MAP_FAILED, p);
	ASSERT_LE(0, w);
	gen = w_gen(w);
	ASSERT_NE(MAP_FAILED, gen);
	id = w_add(w, p, 4 * PG, 1);
	ASSERT_LT(0, id);
	/* First touches by writing (no zero page to replace), then more. */
	memset(p, 4, 4 * PG);
	memset(p, 5, 4 * PG);
	EXPECT_EQ(5, p[3 * PG]);
	ASSERT_EQ(0, mprotect(p, 4 * PG, PROT_READ));
	EXPECT_EQ(5, p[PG]);
	ASSERT_EQ(0, mprotect(p, 4 * PG, PROT_NONE));
	ASSERT_EQ(0, mprotect(p, 4 * PG, PROT_READ | PROT_WRITE));
	p[2 * PG] = 6;
	EXPECT_EQ(0, *gen);
	EXPECT_NO_EVENT(w);
	/* The range is still armed. */
	munmap(p, 4 * PG);
	EXPECT_EQ(1, *gen);
	EXPECT_ONE_EVENT(w, id, 1);
	munmap((void *)gen, PG);
	close(w);
}

TEST_F(npushm, reading_the_zero_page_then_writing_fires)
{
	char *p = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int w = w_open(self->dev, false);
	long long id;

	ASSERT_NE(MAP_FAILED, p);
	ASSERT_LE(0, w);
	id = w_add(w, p, PG, 1);
	ASSERT_LT(0, id);
	/* Reading maps the shared zero page; writing replaces it. */
	EXPECT_EQ(0, ((volatile char *)p)[0]);
	EXPECT_NO_EVENT(w);
	p[0] = 1;
	EXPECT_ONE_EVENT(w, id, 1);
	munmap(p, 2 * PG);
	close(w);
}

TEST_F(npushm, unrelated_and_adjacent_changes_do_not_fire)
{
	char *p = anon(8 * PG), *other = anon(PG);
	int w = w_open(self->dev, false);
	long long id, part;

	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, other);
	ASSERT_LE(0, w);
	id = w_add(w, p + 2 * PG, 2 * PG, 1);
	part = w_add(w, p + 5 * PG + 100, 2 * PG, 2);	/* pages 5..7 */
	ASSERT_LT(0, id);
	ASSERT_LT(0, part);
	munmap(other, PG);
	ASSERT_EQ(0, madvise(p, 2 * PG, MADV_DONTNEED));
	ASSERT_EQ(0, munmap(p + 4 * PG, PG));
	EXPECT_NO_EVENT(w);
	/* Partial overlaps fire: the last page of each. */
	ASSERT_EQ(0, munmap(p + 3 * PG, PG));
	EXPECT_ONE_EVENT(w, id, 1);
	ASSERT_EQ(0, madvise(p + 7 * PG, PG, MADV_DONTNEED));
	EXPECT_ONE_EVENT(w, part, 2);
	munmap(p, 8 * PG);
	close(w);
}

TEST_F(npushm, cow_break_after_fork_fires)
{
	char *p = anon(2 * PG);
	int w = w_open(self->dev, false), go[2], status;
	volatile uint64_t *gen;
	long long id;
	pid_t pid;

	ASSERT_NE(NULL, p);
	ASSERT_LE(0, w);
	gen = w_gen(w);
	ASSERT_NE(MAP_FAILED, gen);
	id = w_add(w, p, PG, 3);
	ASSERT_LT(0, id);
	ASSERT_EQ(0, pipe(go));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		char c;

		/* Keep the pages shared until the parent wrote. */
		close(go[1]);
		_exit(read(go[0], &c, 1) == 0 && p[0] == 1 ? 0 : 1);
	}
	close(go[0]);
	/* fork() write-protected the pages: a protection change only. */
	EXPECT_EQ(0, *gen);
	EXPECT_NO_EVENT(w);
	EXPECT_EQ(1, p[0]);
	EXPECT_NO_EVENT(w);
	/* The parent's write copies the page: a new page at that address. */
	p[0] = 2;
	EXPECT_EQ(1, *gen);
	EXPECT_ONE_EVENT(w, id, 3);
	close(go[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	munmap(p, 2 * PG);
	munmap((void *)gen, PG);
	close(w);
}

TEST_F(npushm, del_and_ids)
{
	char *p = anon(4 * PG);
	int w = w_open(self->dev, false);
	long long a, b, c;

	ASSERT_NE(NULL, p);
	ASSERT_LE(0, w);
	EXPECT_EQ(-ENOENT, w_del(w, 0));
	EXPECT_EQ(-ENOENT, w_del(w, 1));
	EXPECT_EQ(-ENOENT, w_del(w, UINT64_MAX));
	a = w_add(w, p, PG, 1);
	b = w_add(w, p + PG, PG, 2);
	EXPECT_EQ(1, a);
	EXPECT_EQ(2, b);
	EXPECT_EQ(0, w_del(w, a));
	EXPECT_EQ(-ENOENT, w_del(w, a));
	/* A deleted range's id is not handed out again, nor does it fire. */
	c = w_add(w, p, PG, 3);
	EXPECT_EQ(3, c);
	/* Fired and unread, then deleted: its event goes with it. */
	ASSERT_EQ(0, munmap(p + PG, PG));
	EXPECT_EQ(0, w_del(w, b));
	EXPECT_NO_EVENT(w);
	/* Fired and read: still there until deleted. */
	ASSERT_EQ(0, munmap(p, PG));
	EXPECT_ONE_EVENT(w, c, 3);
	EXPECT_EQ(0, w_del(w, c));
	EXPECT_EQ(-ENOENT, w_del(w, c));
	EXPECT_EQ(4, w_add(w, p + 2 * PG, PG, 4));
	EXPECT_EQ(-ENOENT, w_del(w, 5));
	munmap(p, 4 * PG);
	close(w);
}

TEST_F(npushm, read_whole_records_only)
{
	char *p = anon(4 * PG);
	int w = w_open(self->dev, false), i;
	struct npushm_watch_event ev[3];
	char small[sizeof(ev[0]) - 1];
	void *bad = mmap(NULL, PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long long id[3];

	ASSERT_NE(NULL, p);
	ASSERT_NE(MAP_FAILED, bad);
	ASSERT_LE(0, w);
	for (i = 0; i < 3; i++) {
		id[i] = w_add(w, p + i * PG, PG, 100 + i);
		ASSERT_LT(0, id[i]);
	}
	EXPECT_EQ(-1, read(w, small, sizeof(small)));
	EXPECT_EQ(EINVAL, errno);
	munmap(p, 4 * PG);
	EXPECT_EQ(-1, read(w, small, sizeof(small)));
	EXPECT_EQ(EINVAL, errno);
	/* A bad buffer loses nothing. */
	EXPECT_EQ(-1, read(w, bad, sizeof(ev)));
	EXPECT_EQ(EFAULT, errno);
	munmap(bad, PG);
	/* 40 bytes: two whole records. */
	EXPECT_EQ(2 * sizeof(ev[0]), read(w, ev, 2 * sizeof(ev[0]) + 8));
	EXPECT_EQ(1, w_read(w, &ev[2], 1));
	for (i = 0; i < 3; i++) {
		/* One munmap fires them in address order or not: match ids. */
		int j = (int)(ev[i].id - 1);

		ASSERT_LE(0, j);
		ASSERT_GT(3, j);
		EXPECT_EQ((uint64_t)id[j], ev[i].id);
		EXPECT_EQ(100 + j, ev[i].cookie);
	}
	EXPECT_NE(ev[0].id, ev[1].id);
	EXPECT_NE(ev[1].id, ev[2].id);
	EXPECT_NE(ev[0].id, ev[2].id);
	EXPECT_NO_EVENT(w);
	close(w);
}

TEST_F(npushm, poll_reports_events)
{
	char *p = anon(PG);
	int w = w_open(self->dev, false);
	struct pollfd pfd;
	long long id;

	ASSERT_NE(NULL, p);
	ASSERT_LE(0, w);
	pfd.fd = w;
	pfd.events = POLLIN | POLLRDNORM;
	id = w_add(w, p, PG, 0);
	ASSERT_LT(0, id);
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	munmap(p, PG);
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_EQ(POLLIN | POLLRDNORM, pfd.revents & (POLLIN | POLLRDNORM));
	EXPECT_ONE_EVENT(w, id, 0);
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	close(w);
}

struct unmapper {
	void *p;
	size_t len;
};

static void *unmap_later(void *arg)
{
	struct unmapper *u = arg;

	usleep(100 * 1000);
	munmap(u->p, u->len);
	return NULL;
}

TEST_F(npushm, blocking_read_is_woken)
{
	struct unmapper u = { .p = anon(2 * PG), .len = 2 * PG };
	int w = w_open(self->dev, true);
	struct npushm_watch_event ev[2];
	struct pollfd pfd = { .events = POLLIN };
	pthread_t t;
	long long id;

	ASSERT_NE(NULL, u.p);
	ASSERT_LE(0, w);
	id = w_add(w, u.p, PG, 42);
	ASSERT_LT(0, id);
	ASSERT_EQ(0, pthread_create(&t, NULL, unmap_later, &u));
	EXPECT_EQ(1, w_read(w, ev, 2));
	EXPECT_EQ((uint64_t)id, ev[0].id);
	EXPECT_EQ(42, ev[0].cookie);
	pthread_join(t, NULL);
	/* A blocking poll is woken too. */
	u.p = anon(PG);
	u.len = PG;
	ASSERT_NE(NULL, u.p);
	id = w_add(w, u.p, PG, 43);
	ASSERT_LT(0, id);
	pfd.fd = w;
	ASSERT_EQ(0, pthread_create(&t, NULL, unmap_later, &u));
	EXPECT_EQ(1, poll(&pfd, 1, 10000));
	pthread_join(t, NULL);
	EXPECT_EQ(1, w_read(w, ev, 2));
	EXPECT_EQ((uint64_t)id, ev[0].id);
	close(w);
}

static void on_alarm(int sig)
{
}

TEST_F(npushm, blocking_read_is_interruptible)
{
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	struct npushm_watch_event ev;
	char *p = anon(PG);
	int w = w_open(self->dev, true);

	ASSERT_NE(NULL, p);
	ASSERT_LE(0, w);
	ASSERT_LT(0, w_add(w, p, PG, 0));
	/* No SA_RESTART: the signal ends the wait with EINTR. */
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, &old));
	ualarm(100 * 1000, 0);
	EXPECT_EQ(-1, read(w, &ev, sizeof(ev)));
	EXPECT_EQ(EINTR, errno);
	sigaction(SIGALRM, &old, NULL);
	munmap(p, PG);
	EXPECT_EQ(sizeof(ev), read(w, &ev, sizeof(ev)));
	close(w);
}

TEST_F(npushm, other_process_reads_but_cannot_add_or_del)
{
	char *p = anon(2 * PG);
	int w = w_open(self->dev, false), status;
	long long id, id2;
	pid_t pid;

	ASSERT_NE(NULL, p);
	ASSERT_LE(0, w);
	id = w_add(w, p, PG, 11);
	id2 = w_add(w, p + PG, PG, 12);
	ASSERT_LT(0, id);
	ASSERT_LT(0, id2);
	ASSERT_EQ(0, munmap(p, PG));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct npushm_watch_event ev[2];
		int bad = 0;

		/* The child's address space is another mm. */
		bad |= w_add(w, p + PG, PG, 0) != -EPERM;
		bad |= w_del(w, id2) != -EPERM;
		bad |= (w_read(w, ev, 2) != 1 || ev[0].id != (uint64_t)id ||
			ev[0].cookie != 11) << 1;
		/* The child's own changes are not the watch's business. */
		munmap(p + PG, PG);
		bad |= (w_read(w, ev, 2) != -EAGAIN) << 2;
		_exit(bad);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	/* The child read it: reported once, to whoever read it. */
	EXPECT_NO_EVENT(w);
	EXPECT_EQ(0, w_del(w, id2));
	EXPECT_EQ(0, w_del(w, id));
	munmap(p, 2 * PG);
	close(w);
}

TEST_F(npushm, watch_outlives_its_process)
{
	struct npushm_watch_event ev[4];
	int sv[2], status, w;
	volatile uint64_t *gen;
	pid_t pid;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		char *p = anon(2 * PG);
		int cw = w_open(self->dev, false);

		if (!p || cw < 0 || w_add(cw, p, PG, 77) != 1 ||
		    w_add(cw, p + PG, PG, 78) != 2 || npu_send_fd(sv[1], cw))
			_exit(1);
		/* Exit with both ranges armed. */
		_exit(0);
	}
	close(sv[1]);
	w = npu_recv_fd(sv[0]);
	ASSERT_LE(0, w);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	/* The exit tore the address space down: every range fired. */
	gen = w_gen(w);
	ASSERT_NE(MAP_FAILED, gen);
	EXPECT_EQ(2, *gen);
	ASSERT_EQ(2, w_read(w, ev, 4));
	EXPECT_EQ(3, ev[0].id + ev[1].id);
	EXPECT_EQ(155, ev[0].cookie + ev[1].cookie);
	EXPECT_EQ(-EPERM, w_add(w, &status, 1, 0));
	EXPECT_EQ(-EPERM, w_del(w, 1));
	munmap((void *)gen, PG);
	/* Closing removes the notifiers of the dead address space. */
	close(w);
	close(sv[0]);
}

TEST_F(npushm, watch_mmap_is_one_read_only_page)
{
	int w = w_open(self->dev, false);
	volatile uint64_t *gen;
	void *p;

	ASSERT_LE(0, w);
	/* The watch is read-only: no writable shared mapping. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, w, 0));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, w, 0));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PG, PROT_READ, MAP_PRIVATE, w, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 2 * PG, PROT_READ, MAP_SHARED, w, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PG, PROT_READ, MAP_SHARED, w, PG));
	EXPECT_EQ(EINVAL, errno);
	gen = w_gen(w);
	ASSERT_NE(MAP_FAILED, gen);
	EXPECT_EQ(0, *gen);
	EXPECT_EQ(-1, mprotect((void *)gen, PG, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	p = mremap((void *)gen, PG, 2 * PG, MREMAP_MAYMOVE);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(0, *gen);
	munmap((void *)gen, PG);
	close(w);
}

#define RACE_N 2000

struct race {
	int w;
	volatile int done;
	unsigned char seen[RACE_N];
	int bad;
};

/* Reads until the adder is done and nothing is left. */
static void *race_reader(void *arg)
{
	struct race *rc = arg;
	struct npushm_watch_event ev[8];
	struct pollfd pfd = { .fd = rc->w, .events = POLLIN };
	int i, n;

	for (;;) {
		bool last = rc->done;

		n = w_read(rc->w, ev, 8);
		if (n == -EAGAIN) {
			if (last)
				return NULL;
			poll(&pfd, 1, 10);
			continue;
		}
		if (n <= 0) {
			rc->bad = 1;
			return NULL;
		}
		for (i = 0; i < n; i++) {
			if (ev[i].cookie >= RACE_N || ev[i].id != ev[i].cookie + 1)
				rc->bad = 1;
			else
				rc->seen[ev[i].cookie]++;
		}
	}
}

/*
 * One thread adds a range per fresh mapping, unmaps it (it fires) and, for
 * every other one, deletes it at once: the deletion races the reader taking
 * its event. Every range fires; each event is read at most once, and
 * exactly once unless deleted. RACE_N rounds, or fewer when they take
 * longer than RACE_MS (a debug kernel runs them ten times slower), never
 * fewer than RACE_MIN.
 */
#define RACE_MS 8000
#define RACE_MIN 200

TEST_F_TIMEOUT(npushm, add_fire_del_race_readers, 120)
{
	struct race *rc = calloc(1, sizeof(*rc));
	volatile uint64_t *gen;
	struct timespec t0, t1;
	pthread_t t[2];
	int i, n;

	ASSERT_NE(NULL, rc);
	rc->w = w_open(self->dev, false);
	ASSERT_LE(0, rc->w);
	gen = w_gen(rc->w);
	ASSERT_NE(MAP_FAILED, gen);
	ASSERT_EQ(0, pthread_create(&t[0], NULL, race_reader, rc));
	ASSERT_EQ(0, pthread_create(&t[1], NULL, race_reader, rc));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (n = 0; n < RACE_N; n++) {
		char *p = anon(PG);
		long long id;

		if (n >= RACE_MIN && n % 50 == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t1);
			if ((t1.tv_sec - t0.tv_sec) * 1000 +
			    (t1.tv_nsec - t0.tv_nsec) / 1000000 > RACE_MS)
				break;
		}
		ASSERT_NE(NULL, p);
		id = w_add(rc->w, p, PG, (uint64_t)n);
		ASSERT_EQ(n + 1, id);
		munmap(p, PG);
		if (n & 1)
			ASSERT_EQ(0, w_del(rc->w, id));
	}
	rc->done = 1;
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	TH_LOG("%d rounds", n);
	EXPECT_EQ(0, rc->bad);
	EXPECT_EQ(n, *gen);
	for (i = 0; i < n; i++) {
		EXPECT_GE(1, rc->seen[i]);
		if (!(i & 1))
			EXPECT_EQ(1, rc->seen[i]);
	}
	munmap((void *)gen, PG);
	close(rc->w);
	free(rc);
}

/* Fills a watch: about 65536 ioctls. */
TEST_F_TIMEOUT(npushm, watch_range_limit, 300)
{
	char *p = anon(PG);
	int w = w_open(self->dev, false), n;
	struct npushm_watch_event *ev;
	volatile uint64_t *gen;
	long long id = 0;
	int i;

	ASSERT_NE(NULL, p);
	ASSERT_LE(0, w);
	gen = w_gen(w);
	ASSERT_NE(MAP_FAILED, gen);
	for (i = 0; i < NPUSHM_WATCH_MAX_RANGES; i++) {
		id = w_add(w, p, PG, (uint64_t)i);
		if (id != i + 1)
			break;
	}
	ASSERT_EQ(NPUSHM_WATCH_MAX_RANGES, id);
	EXPECT_EQ(-ENOSPC, w_add(w, p, PG, 0));
	EXPECT_EQ(0, w_del(w, 1));
	EXPECT_EQ(NPUSHM_WATCH_MAX_RANGES + 1, w_add(w, p, PG, NPUSHM_WATCH_MAX_RANGES));
	EXPECT_EQ(-ENOSPC, w_add(w, p, PG, 0));
	/* All of them fire at once, each reported once. */
	munmap(p, PG);
	EXPECT_EQ(NPUSHM_WATCH_MAX_RANGES, *gen);
	ev = calloc(NPUSHM_WATCH_MAX_RANGES + 1, sizeof(*ev));
	ASSERT_NE(NULL, ev);
	n = w_read(w, ev, NPUSHM_WATCH_MAX_RANGES + 1);
	EXPECT_EQ(NPUSHM_WATCH_MAX_RANGES, n);
	for (i = 0; i < n; i++)
		if (ev[i].id != ev[i].cookie + 1)
			break;
	EXPECT_EQ(n, i);
	EXPECT_NO_EVENT(w);
	free(ev);
	munmap((void *)gen, PG);
	close(w);
}

/* The ranges of all of a uid's watches count against watch_ranges_per_uid. */
TEST_F(npushm, watch_ranges_per_uid_limit)
{
	unsigned long long saved = npu_param_get("watch_ranges_per_uid");
	char *p = anon(PG);
	int w1 = w_open(self->dev, false), w2 = w_open(self->dev, false), w3, i;
	long long id1 = 0;

	ASSERT_NE(NULL, p);
	ASSERT_LE(0, w1);
	ASSERT_LE(0, w2);
	EXPECT_EQ(4 * NPUSHM_WATCH_MAX_RANGES, saved);
	ASSERT_EQ(0, npu_param_set("watch_ranges_per_uid", "10"));
	for (i = 0; i < 6; i++)
		EXPECT_LT(0, (id1 = w_add(w1, p, PG, 1)));
	for (i = 0; i < 4; i++)
		EXPECT_LT(0, w_add(w2, p, PG, 2));
	EXPECT_EQ(-EDQUOT, w_add(w2, p, PG, 2));
	EXPECT_EQ(-EDQUOT, w_add(w1, p, PG, 1));
	/* a delete gives one back, a failed add took none */
	EXPECT_EQ(0, w_del(w1, id1));
	EXPECT_LT(0, w_add(w2, p, PG, 2));
	EXPECT_EQ(-EDQUOT, w_add(w2, p, PG, 2));
	/* closing a watch gives back all of its ranges, fired ones included */
	munmap(p, PG);
	p = anon(PG);
	ASSERT_NE(NULL, p);
	close(w1);
	for (i = 0; i < 5; i++)
		EXPECT_LT(0, w_add(w2, p, PG, 2));
	EXPECT_EQ(-EDQUOT, w_add(w2, p, PG, 2));
	close(w2);
	w3 = w_open(self->dev, false);
	ASSERT_LE(0, w3);
	for (i = 0; i < 10; i++)
		EXPECT_LT(0, w_add(w3, p, PG, 3));
	EXPECT_EQ(-EDQUOT, w_add(w3, p, PG, 3));
	close(w3);
	munmap(p, PG);
	EXPECT_EQ(0, npu_param_set_u64("watch_ranges_per_uid", saved));
}

TEST_HARNESS_MAIN
