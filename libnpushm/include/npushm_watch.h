/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm_watch.h - being told when a range of the caller's own address space
 * stops mapping the pages it mapped: what a registration cache (RDMA MRs,
 * pinned buffers) needs to never use a stale entry.
 *
 * Tutorial
 * --------
 *	npushm_watch_t *w;
 *	uint64_t id, gen;
 *	if (npushm_watch_open(&w) != NPUSHM_OK)	// the module is not loaded...
 *		return fall_back_to_copies(npushm_last_error());
 *	// watch first, then pin: no change in between is missed
 *	npushm_watch_add(w, buf, len, cookie, &id);
 *	mr = ibv_reg_mr(pd, buf, len, access);
 *	// pinning may break copy-on-write sharing, which fires the range:
 *	// read the events; if this id is among them, register again
 *	...
 *	// before trusting cached entries: one load, no system call
 *	if (npushm_watch_generation(w) != gen) {
 *		gen = npushm_watch_generation(w);
 *		npushm_watch_event_t ev[64];
 *		size_t n;
 *		while (npushm_watch_read(w, ev, 64, &n) == NPUSHM_OK && n)
 *			for (size_t i = 0; i < n; i++)
 *				drop(ev[i].cookie), npushm_watch_remove(w, ev[i].id);
 *	}
 *
 * Ranges fire (once each) when munmap(), mremap(), madvise(MADV_DONTNEED),
 * a brk() shrink (free() returning memory), a copy-on-write break or the
 * process's exit changes which pages they map, before that call returns;
 * mprotect() does not fire them. A range may also fire spuriously; it never
 * misses a change made after npushm_watch_add() returned.
 *
 * Watches need the npushm kernel module (its kernel MMU notifiers); without
 * it npushm_watch_open() fails with NPUSHM_ERR_UNSUPPORTED and the caller
 * must not cache registrations of memory it does not own.
 *
 * Threads: every call is thread-safe; npushm_watch_generation() is a
 * lock-free load. A watch belongs to the process that opened it: after
 * fork() the child must open its own (adding ranges fails with
 * NPUSHM_ERR_ACCESS in the child).
 */
#ifndef NPUSHM_WATCH_H
#define NPUSHM_WATCH_H

#include "npushm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct npushm_watch npushm_watch_t;

typedef struct {
	uint64_t id;		/* the range's id, as npushm_watch_add() returned it */
	uint64_t cookie;	/* the range's cookie */
} npushm_watch_event_t;

/* A watch of the calling process's address space. NPUSHM_ERR_UNSUPPORTED
 * without the module (or a module without watches), NPUSHM_ERR_ACCESS when
 * /dev/npushm may not be opened. */
NPUSHM_API npushm_status_t npushm_watch_open(npushm_watch_t **wp);
NPUSHM_API void npushm_watch_close(npushm_watch_t *w);

/* Watch [@addr, @addr + @len) (widened to whole pages); @len > 0. The range
 * need not be mapped yet. NPUSHM_ERR_NO_SPACE past 65536 ranges in the watch,
 * NPUSHM_ERR_QUOTA past the module's limit for the user's watches together. */
NPUSHM_API npushm_status_t npushm_watch_add(npushm_watch_t *w, const void *addr, size_t len,
					    uint64_t cookie, uint64_t *idp);
/* Stop watching a range, fired or not. NPUSHM_ERR_NOT_FOUND for an unknown id. */
NPUSHM_API npushm_status_t npushm_watch_remove(npushm_watch_t *w, uint64_t id);

/* A counter bumped after each range fires. */
NPUSHM_API uint64_t npushm_watch_generation(const npushm_watch_t *w);

/* Up to @max fired ranges not yet read, without waiting; *@np = 0 when none. */
NPUSHM_API npushm_status_t npushm_watch_read(npushm_watch_t *w, npushm_watch_event_t *ev,
					     size_t max, size_t *np);

/* The watch's descriptor: poll() it for POLLIN to wait for a firing. */
NPUSHM_API int npushm_watch_fd(const npushm_watch_t *w);

#ifdef __cplusplus
}
#endif

#endif /* NPUSHM_WATCH_H */
