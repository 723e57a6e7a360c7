// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * chunks.c - filling a region's page array from a provider's contiguous
 * chunks, largest first: the system-memory, NUMA node and PCI BAR providers
 * share it.
 */
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>

#include "npushm_internal.h"

/**
 * npushm_pages_fill - fill a page array with contiguous chunks, largest first
 * @pages: filled with @n pages
 * @n: pages wanted
 * @order: the largest chunk to ask for (page order)
 * @chunk: gives 2^@order contiguous zeroed order-0 pages (the first of
 *	them), or NULL when it has none that large
 * @undo: gives back pages @chunk gave, on failure
 * @ctx: for @chunk and @undo
 *
 * Smaller chunks are asked for when @chunk has none of an order.
 *
 * Return: 0, -ENOMEM (not even one page), -EINTR (killed).
 */
int npushm_pages_fill(struct page **pages, unsigned long n, unsigned int order,
		      struct page *(*chunk)(void *ctx, unsigned int order),
		      void (*undo)(void *ctx, struct page **pages, unsigned long n),
		      void *ctx)
{
	unsigned long done = 0, i;
	struct page *page;
	int ret;

	while (done < n) {
		order = min_t(unsigned int, order, ilog2(n - done));
		page = chunk(ctx, order);
		if (!page) {
			if (!order) {
				ret = -ENOMEM;
				goto out_undo;
			}
			order--;
			continue;
		}
		for (i = 0; i < (1UL << order); i++)
			pages[done + i] = page + i;
		done += 1UL << order;
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			goto out_undo;
		}
		cond_resched();
	}
	return 0;

out_undo:
	undo(ctx, pages, done);
	return ret;
}
