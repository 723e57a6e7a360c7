/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * rdma_regcache.c - caller memory the RDMA transport may read and write
 * without copying: registrations looked up by address range.
 *
 * What is registered is memory whose lifetime npccl controls, so that a
 * registration can never outlive its pages: npccl_mem_alloc buffers,
 * registered through libnpushm (npushm_region_reg_mr on their region) the
 * first time the transport meets them, and dropped by npccl_mem_free and
 * npccl_comm_destroy before the buffer is unmapped (rdma_mem_forget).
 * Any other buffer (malloc, stack, a mapping of the caller's) goes through
 * the registered FIFO slots with a copy: npccl cannot see it being freed or
 * unmapped (that would need allocator hooks, or on-demand paging, which
 * soft-RoCE lacks on 6.1), and a stale registration would silently move the
 * old pages. A registration that fails is remembered, logged once, and the
 * buffer copied.
 */
#include "rdma.h"
#include "npushm.h"
#include "npushm_rdma.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct rdma_reg *reg_new(struct rdma_ctx *x)
{
	if (x->nregs == x->regs_cap) {
		int cap = x->regs_cap ? 2 * x->regs_cap : 8;
		struct rdma_reg *n = realloc(x->regs, sizeof(*n) * (size_t)cap);
		if (!n)
			return NULL;
		x->regs = n;
		x->regs_cap = cap;
	}
	struct rdma_reg *e = &x->regs[x->nregs++];
	memset(e, 0, sizeof(*e));
	return e;
}

static void reg_release(struct rdma_ctx *x, struct rdma_reg *e)
{
	if (e->nmr)
		npushm_mr_dereg(e->nmr);
	else if (e->mr)
		x->v->dereg_mr(e->mr);
}

static void reg_remove_at(struct rdma_ctx *x, int i)
{
	reg_release(x, &x->regs[i]);
	memmove(&x->regs[i], &x->regs[i + 1], sizeof(x->regs[0]) * (size_t)(x->nregs - i - 1));
	x->nregs--;
}

const struct rdma_reg *rdma_reg_find(struct npccl_comm *c, const void *p, size_t len,
				     bool writable, char **addr)
{
	struct rdma_ctx *x = c->rdma;
	const char *q = p;
	if (!x || !npccl_config()->rdma_zcopy || !len)
		return NULL;
	for (int i = 0; i < x->nregs; i++) {
		struct rdma_reg *e = &x->regs[i];
		if (q < e->base || q > e->base + e->len || len > e->len - (size_t)(q - e->base))
			continue;
		if (e->failed || (writable && !e->writable))
			return NULL;
		*addr = e->mr_addr + (q - e->base);
		return e;
	}
	size_t off;
	struct shm_mem *m = shm_mem_find(c, p, len, &off);
	if (!m)
		return NULL;
	struct rdma_reg *e = reg_new(x);
	if (!e)
		return NULL;
	char why[300];
	e->base = m->base;
	e->len = m->size;
	e->owner = m->id + 1;
	if (shm_region_reg_mr(m->region, x->pd, &e->nmr, &e->mr_addr, &e->lkey, &e->rkey, why,
			      sizeof(why))) {
		e->failed = true;
		npccl_log(NPCCL_LOG_INFO, "rank %d: rdma: npccl_mem_alloc buffer %p (%zu bytes) not "
			  "registered on %s (%s): copied through the FIFO instead", c->rank,
			  (void *)m->base, m->size, x->dev, why);
		return NULL;
	}
	e->writable = true;
	npccl_log(NPCCL_LOG_INFO, "rank %d: rdma: npccl_mem_alloc buffer %p (%zu bytes) registered "
		  "on %s through libnpushm (%s)", c->rank, (void *)m->base, m->size, x->dev, why);
	*addr = e->mr_addr + off;
	return e;
}

void rdma_mem_forget(struct npccl_comm *c, const void *base)
{
	struct rdma_ctx *x = c->rdma;
	for (int i = 0; x && i < x->nregs; i++)
		if (x->regs[i].base == base && x->regs[i].owner) {
			npccl_log(NPCCL_LOG_INFO, "rank %d: rdma: registration of npccl_mem_alloc "
				  "buffer %p dropped (freed)", c->rank, base);
			reg_remove_at(x, i);
			return;
		}
}

void rdma_reg_drop_all(struct npccl_comm *c)
{
	struct rdma_ctx *x = c->rdma;
	while (x && x->nregs)
		reg_remove_at(x, x->nregs - 1);
}
