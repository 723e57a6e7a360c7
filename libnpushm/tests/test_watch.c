/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * test_watch.c - npushm_watch_*: with the module, ranges of this process's
 * memory fire on munmap, MADV_DONTNEED, mremap, free() of a large block and
 * not on mprotect or plain use; events come once, the generation counter
 * moves, ids are removed once, a forked child may not add. Without the
 * module, opening a watch fails with UNSUPPORTED and says what to load.
 */
#include <poll.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "npushm_watch.h"

static bool have_module(void)
{
	return access("/dev/npushm", F_OK) == 0;
}

static npushm_watch_t *watch_or_skip(void)
{
	npushm_watch_t *w = NULL;

	if (!have_module())
		th_skip("the npushm module is not loaded here (test watch_without_module covers this host)");
	REQUIRE_OK(npushm_watch_open(&w));
	return w;
}

/* the events now pending: their cookies OR'ed into *mask, their count returned */
static size_t drain(npushm_watch_t *w, uint64_t *mask, uint64_t *ids, size_t max_ids)
{
	npushm_watch_event_t ev[8];
	size_t n, total = 0;

	while (npushm_watch_read(w, ev, 8, &n) == NPUSHM_OK && n) {
		for (size_t i = 0; i < n; i++, total++) {
			*mask |= ev[i].cookie;
			if (ids && total < max_ids)
				ids[total] = ev[i].id;
		}
	}
	return total;
}

TEST(watch_without_module)
{
	npushm_watch_t *w = (npushm_watch_t *)1;

	if (have_module())
		th_skip("the npushm module is loaded here (the other watch tests cover it)");
	CHECK_ST_MSG(npushm_watch_open(&w), NPUSHM_ERR_UNSUPPORTED, "modprobe npushm");
	CHECK(w == NULL);
	CHECK_ST(npushm_watch_open(NULL), NPUSHM_ERR_INVALID);
	CHECK(npushm_watch_generation(NULL) == 0);
	CHECK(npushm_watch_fd(NULL) == -1);
	npushm_watch_close(NULL);
}

TEST(watch_fires_on_unmap_dontneed_mremap_and_not_on_mprotect)
{
	npushm_watch_t *w = watch_or_skip();
	long pg = sysconf(_SC_PAGESIZE);
	size_t len = 8 * (size_t)pg;
	char *a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *c = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *other = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t ida, idb, idc, mask = 0, ids[4];

	REQUIRE(a != MAP_FAILED && b != MAP_FAILED && c != MAP_FAILED && other != MAP_FAILED);
	memset(a, 1, len);
	memset(b, 2, len);
	memset(c, 3, len);
	/* an unaligned range is widened to its pages */
	REQUIRE_OK(npushm_watch_add(w, a + 100, len - 200, 1, &ida));
	REQUIRE_OK(npushm_watch_add(w, b, len, 2, &idb));
	REQUIRE_OK(npushm_watch_add(w, c, len, 4, &idc));
	CHECK(ida && idb && idc && ida != idb && idb != idc);
	uint64_t g0 = npushm_watch_generation(w);

	/* what leaves the pages in place fires nothing */
	memset(a, 5, len);
	CHECK(mprotect(b, len, PROT_READ) == 0);
	CHECK(mprotect(b, len, PROT_READ | PROT_WRITE) == 0);
	CHECK(munmap(other, len) == 0);
	CHECK(npushm_watch_generation(w) == g0);
	CHECK_EQ(drain(w, &mask, NULL, 0), 0);

	/* the last page of a: the unaligned range still covers it */
	CHECK(munmap(a + len - pg, (size_t)pg) == 0);
	CHECK(npushm_watch_generation(w) > g0);
	CHECK_EQ(drain(w, &mask, ids, 4), 1);
	CHECK_EQ(mask, 1);
	CHECK_EQ(ids[0], ida);
	/* once */
	CHECK(munmap(a, len - pg) == 0);
	CHECK_EQ(drain(w, &mask, NULL, 0), 0);

	CHECK(madvise(b + pg, (size_t)pg, MADV_DONTNEED) == 0);
	mask = 0;
	CHECK_EQ(drain(w, &mask, NULL, 0), 1);
	CHECK_EQ(mask, 2);

	char *moved = mremap(c, len, 2 * len, MREMAP_MAYMOVE);
	REQUIRE(moved != MAP_FAILED);
	mask = 0;
	CHECK_EQ(drain(w, &mask, NULL, 0), 1);
	CHECK_EQ(mask, 4);

	/* removed once; an unknown id is NOT_FOUND */
	CHECK_ST(npushm_watch_remove(w, ida), NPUSHM_OK);
	CHECK_ST(npushm_watch_remove(w, ida), NPUSHM_ERR_NOT_FOUND);
	CHECK_ST(npushm_watch_remove(w, idb), NPUSHM_OK);
	CHECK_ST(npushm_watch_remove(w, idc), NPUSHM_OK);
	CHECK_ST(npushm_watch_remove(w, 12345678), NPUSHM_ERR_NOT_FOUND);
	/* ids are not reused */
	uint64_t idd;
	REQUIRE_OK(npushm_watch_add(w, b, len, 8, &idd));
	CHECK(idd != ida && idd != idb && idd != idc);
	munmap(b, len);
	munmap(moved, 2 * len);
	npushm_watch_close(w);
}

TEST(watch_free_of_a_large_block_fires_and_poll_wakes)
{
	npushm_watch_t *w = watch_or_skip();
	size_t len = 8u << 20;	/* above malloc's mmap threshold: free() unmaps it */
	char *p = malloc(len);
	uint64_t id, mask = 0;
	struct pollfd pfd = { .fd = npushm_watch_fd(w), .events = POLLIN };

	REQUIRE(p);
	memset(p, 7, len);
	REQUIRE_OK(npushm_watch_add(w, p, len, 42, &id));
	CHECK_EQ(poll(&pfd, 1, 0), 0);
	free(p);
	CHECK_EQ(poll(&pfd, 1, 1000), 1);
	CHECK(pfd.revents & POLLIN);
	CHECK_EQ(drain(w, &mask, NULL, 0), 1);
	CHECK_EQ(mask, 42);
	CHECK_EQ(poll(&pfd, 1, 0), 0);
	npushm_watch_close(w);
}

TEST(watch_belongs_to_its_process)
{
	npushm_watch_t *w = watch_or_skip();
	long pg = sysconf(_SC_PAGESIZE);
	char *a = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t id;

	REQUIRE(a != MAP_FAILED);
	REQUIRE_OK(npushm_watch_add(w, a, (size_t)pg, 1, &id));
	pid_t pid = fork();
	if (pid == 0) {
		uint64_t id2;
		int bad = 0;

		bad |= npushm_watch_add(w, a, (size_t)pg, 2, &id2) != NPUSHM_ERR_ACCESS;
		bad |= !strstr(npushm_last_error(), "another process");
		bad |= npushm_watch_remove(w, id) != NPUSHM_ERR_ACCESS;
		/* the child's own memory changes are not the parent's */
		bad |= munmap(a, (size_t)pg) != 0;
		_exit(bad);
	}
	int status;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	uint64_t mask = 0;
	CHECK_EQ(drain(w, &mask, NULL, 0), 0);
	CHECK_ST(npushm_watch_remove(w, id), NPUSHM_OK);
	munmap(a, (size_t)pg);
	npushm_watch_close(w);
}

TEST(watch_bad_arguments)
{
	npushm_watch_t *w = watch_or_skip();
	uint64_t id;
	npushm_watch_event_t ev;
	size_t n;

	CHECK_ST(npushm_watch_add(w, &id, 0, 1, &id), NPUSHM_ERR_INVALID);
	CHECK_ST(npushm_watch_add(w, &id, 8, 1, NULL), NPUSHM_ERR_INVALID);
	CHECK_ST(npushm_watch_add(NULL, &id, 8, 1, &id), NPUSHM_ERR_INVALID);
	/* beyond user space, and wrapping */
	CHECK_ST(npushm_watch_add(w, (void *)(uintptr_t)0xffff900000000000ull, 4096, 1, &id),
		 NPUSHM_ERR_INVALID);
	CHECK_ST(npushm_watch_add(w, (void *)(uintptr_t)-4096, 8192, 1, &id), NPUSHM_ERR_INVALID);
	CHECK_ST(npushm_watch_read(w, NULL, 1, &n), NPUSHM_ERR_INVALID);
	CHECK_ST(npushm_watch_read(w, &ev, 1, NULL), NPUSHM_ERR_INVALID);
	CHECK_ST(npushm_watch_read(w, &ev, 1, &n), NPUSHM_OK);
	CHECK_EQ(n, 0);
	CHECK_ST(npushm_watch_remove(NULL, 1), NPUSHM_ERR_INVALID);
	npushm_watch_close(w);
}

TEST_HARNESS_MAIN
