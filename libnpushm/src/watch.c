/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * watch.c - npushm_watch_*: the module's watches (NPUSHM_IOC_WATCH) behind
 * an opaque handle. The generation counter is the watch's read-only page,
 * mapped once at open.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/npushm.h>

#include "internal.h"
#include "npushm_watch.h"

struct npushm_watch {
	int fd;
	long page_size;
	const _Atomic uint64_t *generation;
};

static npushm_status_t watch_fd_open(int *fdp)
{
	struct npushm_watch_open wo = { 0 };
	npushm_status_t st;
	int ctl, err;

	st = npi_ctl_open(NPUSHM_FEAT_WATCH, "watches", &ctl);
	if (st)
		return st;
	if (ioctl(ctl, NPUSHM_IOC_WATCH, &wo)) {
		err = errno;
		close(ctl);
		return npi_fail(npi_status_from_errno(err), err, "the module refused a watch");
	}
	close(ctl);
	/* Reads never wait: waiting is the caller's, with poll(). */
	if (fcntl(wo.fd, F_SETFL, O_NONBLOCK)) {
		err = errno;
		close(wo.fd);
		return npi_fail(npi_status_from_errno(err), err, "cannot set up the watch");
	}
	*fdp = wo.fd;
	return NPUSHM_OK;
}

NPUSHM_API npushm_status_t npushm_watch_open(npushm_watch_t **wp)
{
	npushm_watch_t *w;
	npushm_status_t st;
	void *page;
	int err;

	if (!wp)
		return npi_fail(NPUSHM_ERR_INVALID, EINVAL, "npushm_watch_open: no result pointer");
	*wp = NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "out of memory");
	st = watch_fd_open(&w->fd);
	if (st)
		goto out_free;
	w->page_size = sysconf(_SC_PAGESIZE);
	page = mmap(NULL, (size_t)w->page_size, PROT_READ, MAP_SHARED, w->fd, 0);
	if (page == MAP_FAILED) {
		err = errno;
		st = npi_fail(npi_status_from_errno(err), err,
			      "cannot map the watch's generation counter");
		goto out_close;
	}
	w->generation = page;
	*wp = w;
	return NPUSHM_OK;

out_close:
	close(w->fd);
out_free:
	free(w);
	return st;
}

NPUSHM_API void npushm_watch_close(npushm_watch_t *w)
{
	if (!w)
		return;
	munmap((void *)w->generation, (size_t)w->page_size);
	close(w->fd);
	free(w);
}

NPUSHM_API npushm_status_t npushm_watch_add(npushm_watch_t *w, const void *addr, size_t len,
					    uint64_t cookie, uint64_t *idp)
{
	struct npushm_watch_range r = {
		.start = (uintptr_t)addr,
		.len = len,
		.cookie = cookie,
	};
	int err;

	if (!w || !idp)
		return npi_fail(NPUSHM_ERR_INVALID, EINVAL, "npushm_watch_add: no watch or no id pointer");
	if (!len)
		return npi_fail(NPUSHM_ERR_INVALID, EINVAL, "cannot watch an empty range");
	if (ioctl(w->fd, NPUSHM_IOC_WATCH_ADD, &r)) {
		err = errno;
		switch (err) {
		case ENOSPC:
			return npi_fail(NPUSHM_ERR_NO_SPACE, err,
					"the watch holds %d ranges already: remove some first",
					NPUSHM_WATCH_MAX_RANGES);
		case EDQUOT:
			return npi_fail(NPUSHM_ERR_QUOTA, err,
					"this user's watches hold as many ranges as the module allows (its parameter watch_ranges_per_uid): remove some first");
		case EPERM:
			return npi_fail(NPUSHM_ERR_ACCESS, err,
					"this watch belongs to another process (opened before fork()?): open a watch in this process");
		case EINVAL:
			return npi_fail(NPUSHM_ERR_INVALID, err,
					"cannot watch %p + %zu bytes: not within user space", addr, len);
		default:
			return npi_fail(npi_status_from_errno(err), err, "cannot watch %p + %zu bytes",
					addr, len);
		}
	}
	*idp = r.id;
	return NPUSHM_OK;
}

NPUSHM_API npushm_status_t npushm_watch_remove(npushm_watch_t *w, uint64_t id)
{
	struct npushm_watch_del d = { .id = id };
	int err;

	if (!w)
		return npi_fail(NPUSHM_ERR_INVALID, EINVAL, "npushm_watch_remove: no watch");
	if (ioctl(w->fd, NPUSHM_IOC_WATCH_DEL, &d)) {
		err = errno;
		if (err == ENOENT)
			return npi_fail(NPUSHM_ERR_NOT_FOUND, err, "the watch has no range %llu",
					(unsigned long long)id);
		if (err == EPERM)
			return npi_fail(NPUSHM_ERR_ACCESS, err,
					"this watch belongs to another process (opened before fork()?): open a watch in this process");
		return npi_fail(npi_status_from_errno(err), err, "cannot remove range %llu",
				(unsigned long long)id);
	}
	return NPUSHM_OK;
}

NPUSHM_API uint64_t npushm_watch_generation(const npushm_watch_t *w)
{
	return w ? atomic_load_explicit(w->generation, memory_order_acquire) : 0;
}

/* The kernel's records are read straight into the caller's array. */
_Static_assert(sizeof(npushm_watch_event_t) == sizeof(struct npushm_watch_event),
	       "npushm_watch_event_t is struct npushm_watch_event");

NPUSHM_API npushm_status_t npushm_watch_read(npushm_watch_t *w, npushm_watch_event_t *ev,
					     size_t max, size_t *np)
{
	ssize_t got;
	int err;

	if (!w || !np || (max && !ev))
		return npi_fail(NPUSHM_ERR_INVALID, EINVAL, "npushm_watch_read: bad arguments");
	*np = 0;
	if (!max)
		return NPUSHM_OK;
	if (max > SSIZE_MAX / sizeof(*ev))
		max = SSIZE_MAX / sizeof(*ev);
	do
		got = read(w->fd, ev, max * sizeof(*ev));
	while (got < 0 && errno == EINTR);
	if (got < 0) {
		err = errno;
		if (err == EAGAIN)
			return NPUSHM_OK;
		return npi_fail(npi_status_from_errno(err), err, "cannot read the watch's events");
	}
	*np = (size_t)got / sizeof(*ev);
	return NPUSHM_OK;
}

NPUSHM_API int npushm_watch_fd(const npushm_watch_t *w)
{
	return w ? w->fd : -1;
}
