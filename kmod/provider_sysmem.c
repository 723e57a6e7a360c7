// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * provider_sysmem.c - the system-memory provider: regions backed by kernel
 * pages.
 *
 * Memory comes in physically contiguous chunks of up to 2 MiB (order 9),
 * falling back to smaller orders when the buddy allocator has none, zeroed
 * and charged to the allocating task's memory cgroup. Each chunk is split
 * into independent order-0 pages so that every page can be inserted into
 * user mappings and pinned by GUP (ibv_reg_mr) on its own. Pages are not
 * movable: long-term pins never need to migrate them. (Pages are order 0
 * and never compound: their reference count is read directly, which keeps
 * the module free of static keys.) An allocation the
 * machine (or the memory cgroup) cannot satisfy fails with ENOMEM instead
 * of invoking the OOM killer (__GFP_RETRY_MAYFAIL). The pages go where the
 * allocating task's NUMA memory policy says, as tmpfs and anonymous memory
 * do (the node local to its CPU by default; with MPOL_BIND strictly the
 * nodes bound, a full node being ENOMEM): the loader of a model places one
 * copy per node that way (docs/weights.md, "One copy per NUMA node").
 */
#include <linux/gfp.h>
#include <linux/mm.h>

#include "npushm_internal.h"

#define NPUSHM_SYSMEM_ORDER	9

/**
 * npushm_pages_free - free pages from npushm_pages_alloc()
 * @pages: the pages, each with its last reference
 * @n: how many
 */
void npushm_pages_free(struct page **pages, unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++) {
		__free_page(pages[i]);
		if (!(i % 4096))
			cond_resched();
	}
}

struct npushm_sysmem_chunk {
	gfp_t gfp;
	int nid;
};

static struct page *npushm_sysmem_chunk(void *ctx, unsigned int order)
{
	const struct npushm_sysmem_chunk *c = ctx;
	gfp_t gfp = order ? (c->gfp & ~__GFP_RETRY_MAYFAIL) | __GFP_NORETRY : c->gfp;
	struct page *page;

	/* Any node: where the task's memory policy puts its memory. */
	page = c->nid == NUMA_NO_NODE ? alloc_pages(gfp, order) :
	       alloc_pages_node(c->nid, gfp, order);
	if (page && order)
		split_page(page, order);
	return page;
}

static void npushm_sysmem_undo(void *ctx, struct page **pages, unsigned long n)
{
	npushm_pages_free(pages, n);
}

/**
 * npushm_pages_alloc - zeroed order-0 pages, in chunks where possible
 * @pages: filled with @npages pages
 * @npages: how many
 * @nid: the node they must all come from, or NUMA_NO_NODE for where the
 *	current task's memory policy puts them
 *
 * Return: 0, -ENOMEM (nothing left, on @nid when given), -EINTR (killed).
 */
int npushm_pages_alloc(struct page **pages, unsigned long npages, int nid)
{
	struct npushm_sysmem_chunk c = {
		.gfp = GFP_HIGHUSER | __GFP_ZERO | __GFP_ACCOUNT | __GFP_NOWARN |
		       __GFP_RETRY_MAYFAIL | (nid == NUMA_NO_NODE ? 0 : __GFP_THISNODE),
		.nid = nid,
	};

	return npushm_pages_fill(pages, npages, NPUSHM_SYSMEM_ORDER,
				 npushm_sysmem_chunk, npushm_sysmem_undo, &c);
}

static int npushm_sysmem_alloc(struct npushm_provider *provider,
			       struct page **pages, unsigned long n)
{
	return npushm_pages_alloc(pages, n, NUMA_NO_NODE);
}

static void npushm_sysmem_free(struct npushm_provider *provider,
			       struct page **pages, unsigned long n)
{
	npushm_pages_free(pages, n);
}

/* Part of npushm.ko itself: no owner, so it holds no reference on it. */
struct npushm_provider npushm_sysmem_provider = {
	.name = "sysmem",
	.chunk_order = NPUSHM_SYSMEM_ORDER,
	.alloc = npushm_sysmem_alloc,
	.free = npushm_sysmem_free,
};
