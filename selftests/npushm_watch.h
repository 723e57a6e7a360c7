/* SPDX-License-Identifier: GPL-2.0-only */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm_watch.h - helpers of the watch selftests (NPUSHM_IOC_WATCH): open
 * a watch, add and delete ranges, read events, map the generation page,
 * make anonymous memory. Each returns a value or -errno, never asserts.
 */
#ifndef NPUSHM_WATCH_H
#define NPUSHM_WATCH_H

#include <sys/mman.h>

#include "npushm_util.h"

#define PG 4096UL

/* A watch (O_NONBLOCK unless @blocking) or -errno. */
static inline int w_open(int dev, bool blocking)
{
	struct npushm_watch_open o = { 0 };
	long ret = npu_ioctl(dev, NPUSHM_IOC_WATCH, &o);

	if (ret)
		return (int)ret;
	if (!blocking && fcntl(o.fd, F_SETFL, O_NONBLOCK))
		return -errno;
	return o.fd;
}

/* Add [start, start + len); the range's id (> 0) or -errno. */
static inline long long w_add(int w, const void *start, uint64_t len, uint64_t cookie)
{
	struct npushm_watch_range r = {
		.start = (uintptr_t)start, .len = len, .cookie = cookie,
	};
	long ret = npu_ioctl(w, NPUSHM_IOC_WATCH_ADD, &r);

	return ret ? ret : (long long)r.id;
}

static inline int w_del(int w, uint64_t id)
{
	struct npushm_watch_del d = { .id = id };

	return (int)npu_ioctl(w, NPUSHM_IOC_WATCH_DEL, &d);
}

/* Events read into @ev (at most @n); their number or -errno. */
static inline int w_read(int w, struct npushm_watch_event *ev, size_t n)
{
	ssize_t got = read(w, ev, n * sizeof(*ev));

	if (got < 0)
		return -errno;
	if (got % sizeof(*ev))
		return -EPROTO;
	return (int)(got / sizeof(*ev));
}

/* The watch's generation page (read-only) or MAP_FAILED. */
static inline volatile uint64_t *w_gen(int w)
{
	return mmap(NULL, PG, PROT_READ, MAP_SHARED, w, 0);
}

static inline char *anon(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, 1, len);
	return p;
}

#endif /* NPUSHM_WATCH_H */
