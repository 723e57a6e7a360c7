/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * shm_mem.c - npccl_mem_alloc/npccl_mem_free: caller buffers in shared
 * regions that every rank on the host maps, so the shared-memory AllReduce
 * can reduce straight from all ranks' send buffers into all ranks' receive
 * buffers (algo_shm.c) instead of staging through its own slots.
 *
 * Contracts: npccl_mem_alloc is collective (every rank, same size, same
 * order relative to the other calls): each rank allocates a region
 * (shm_region.c: libnpushm, prefaulted), sends its descriptor to every
 * local peer as a FRAME_REGION control message (SCM_RIGHTS on the local
 * control channel), and waits, like any collective (deadline, dead or
 * mismatched peers), until it has mapped every peer's region. Allocations
 * are numbered in call order, so number k names the same buffer on every
 * rank. npccl_mem_free only unmaps locally (a peer's mapping keeps the
 * memory alive until it frees too); ranks that disagree on the set of
 * buffers are caught by the fast path, whose step hash includes mem_sig.
 * Nothing here runs on the data path except the lookups.
 */
#include "npccl_internal.h"
#include "transport/transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static void mem_release(struct npccl_comm *c, struct shm_mem *m)
{
	if (!m)
		return;
	for (int k = 0; m->peer_region && k < c->nlocal; k++)
		shm_region_close(m->peer_region[k]);
	/* the registration goes before the pages it pins are unmapped */
	if (m->base)
		rdma_mem_forget(c, m->base);
	shm_region_close(m->region);
	free(m->peer_region);
	free(m->addr);
	free(m);
}

void shm_mem_free_all(struct npccl_comm *c)
{
	for (int i = 0; i < c->nmems; i++)
		mem_release(c, c->mems[i]);
	free(c->mems);
	c->mems = NULL;
	c->nmems = c->mems_cap = 0;
	for (int i = 0; c->peers && i < c->nranks; i++) {
		struct peer *p = &c->peers[i];
		for (int k = 0; k < p->nrx_fds; k++)
			close(p->rx_fds[k]);
		for (int k = 0; k < p->nregion_in; k++)
			if (p->region_in[k].fd >= 0)
				close(p->region_in[k].fd);
		p->nrx_fds = p->nregion_in = 0;
	}
}

struct alloc_wait {
	struct npccl_comm *c;
	uint64_t seq;
};

static bool regions_arrived(void *arg)
{
	struct alloc_wait *w = arg;
	struct npccl_comm *c = w->c;
	for (int k = 0; k < c->nlocal; k++) {
		struct peer *p = &c->peers[c->local_ranks[k]];
		if (k == c->local_index)
			continue;
		bool found = false;
		for (int i = 0; i < p->nregion_in && !found; i++)
			found = p->region_in[i].seq == w->seq;
		if (!found) {
			c->waiting_on = p->rank;
			if (p->gone) {
				comm_peer_lost(c, p->rank, "its connection closed");
				return true;
			}
			return false;
		}
	}
	return true;
}

/* takes peer p's region message for call seq out of its queue */
static struct region_msg take_region(struct peer *p, uint64_t seq)
{
	struct region_msg r = { 0, 0, -1 };
	for (int i = 0; i < p->nregion_in; i++)
		if (p->region_in[i].seq == seq) {
			r = p->region_in[i];
			memmove(&p->region_in[i], &p->region_in[i + 1],
				sizeof(r) * (size_t)(p->nregion_in - i - 1));
			p->nregion_in--;
			break;
		}
	return r;
}

static npccl_status_t attach_peers(struct npccl_comm *c, struct shm_mem *m, size_t bytes)
{
	char err[256], who[128];
	for (int k = 0; k < c->nlocal; k++) {
		struct peer *p = &c->peers[c->local_ranks[k]];
		if (k == c->local_index)
			continue;
		struct region_msg r = take_region(p, c->cur.seq);
		peer_describe(c, p->rank, who, sizeof(who));
		if (r.fd < 0)
			return comm_fail(c, NPCCL_ERR_PROTOCOL, p->rank,
					 "%s sent its region without a descriptor", who);
		if (r.bytes != bytes) {
			close(r.fd);
			return comm_fail(c, NPCCL_ERR_MISMATCH, p->rank,
					 "%s allocated %llu bytes where this rank allocated %zu: "
					 "every rank must pass the same size", who,
					 (unsigned long long)r.bytes, bytes);
		}
		int rc = shm_region_import(r.fd, &m->peer_region[k], err, sizeof(err));
		close(r.fd);
		if (rc < 0)
			return comm_fail(c, NPCCL_ERR_SYSTEM, p->rank,
					 "cannot map the region of %s: %s", who, err);
		if (shm_region_size(m->peer_region[k]) < bytes)
			return comm_fail(c, NPCCL_ERR_PROTOCOL, p->rank,
					 "the region of %s is smaller (%zu bytes) than announced",
					 who, shm_region_size(m->peer_region[k]));
		m->addr[k] = shm_region_addr(m->peer_region[k]);
	}
	return NPCCL_OK;
}

static npccl_status_t mem_alloc(struct npccl_comm *c, size_t bytes, struct shm_mem *m)
{
	char err[256];
	int nl = MAX(c->nlocal, 1);
	m->peer_region = calloc((size_t)nl, sizeof(*m->peer_region));
	m->addr = calloc((size_t)nl, sizeof(*m->addr));
	if (!m->peer_region || !m->addr)
		return comm_fail(c, NPCCL_ERR_NOMEM, -1, "out of memory");
	if (shm_region_create(bytes, "npccl-mem", &m->region, err, sizeof(err)) < 0)
		return comm_fail(c, NPCCL_ERR_NOMEM, -1, "cannot allocate %zu bytes of shared "
				 "memory: %s", bytes, err);
	m->base = shm_region_addr(m->region);
	m->size = bytes;
	m->addr[c->nlocal > 1 ? c->local_index : 0] = m->base;
	if (c->nlocal <= 1)
		return NPCCL_OK;
	int fd = shm_region_fd(m->region);
	for (int k = 0; k < c->nlocal; k++) {
		struct peer *p = &c->peers[c->local_ranks[k]];
		if (k == c->local_index)
			continue;
		if (comm_send_ctl_fd(c, p, FRAME_REGION, bytes, fd) < 0)
			return comm_peer_lost(c, p->rank, "its control channel closed");
	}
	struct alloc_wait w = { c, c->cur.seq };
	npccl_status_t st = regions_arrived(&w) ? c->failed : comm_wait(c, regions_arrived, &w,
									   c->waiting_on);
	return st ? st : attach_peers(c, m, bytes);
}

/* Room for one more buffer in the table (before the operation starts). */
npccl_status_t shm_mem_reserve(struct npccl_comm *c)
{
	if (c->nmems == c->mems_cap) {
		int cap = c->mems_cap ? 2 * c->mems_cap : 8;
		struct shm_mem **n = realloc(c->mems, sizeof(*n) * (size_t)cap);
		if (!n) {
			snprintf(c->lasterr, sizeof(c->lasterr), "npccl_mem_alloc: out of memory");
			return NPCCL_ERR_NOMEM;
		}
		c->mems = n;
		c->mems_cap = cap;
	}
	return NPCCL_OK;
}

/* npccl_mem_alloc when its turn comes, inside its operation (dispatch.c) */
npccl_status_t shm_mem_alloc_run(struct npccl_comm *c, size_t bytes, void **ptr)
{
	struct shm_mem *m = calloc(1, sizeof(*m));
	npccl_status_t st = m ? mem_alloc(c, bytes, m)
			      : comm_fail(c, NPCCL_ERR_NOMEM, -1, "out of memory");
	if (st) {
		mem_release(c, m);
		return st;
	}
	m->id = c->mem_next_id++;
	c->mems[c->nmems++] = m;
	c->mem_sig ^= mix(m->id + 1);
	*ptr = m->base;
	return NPCCL_OK;
}

/* npccl_mem_free in call order (exec role): after the calls that may use it */
npccl_status_t shm_mem_free_run(struct npccl_comm *c, void *ptr)
{
	c->lasterr[0] = 0;
	for (int i = 0; i < c->nmems; i++) {
		struct shm_mem *m = c->mems[i];
		if (m->base != ptr)
			continue;
		c->mem_sig ^= mix(m->id + 1);
		memmove(&c->mems[i], &c->mems[i + 1], sizeof(*c->mems) * (size_t)(c->nmems - i - 1));
		c->nmems--;
		mem_release(c, m);
		return NPCCL_OK;
	}
	snprintf(c->lasterr, sizeof(c->lasterr), "npccl_mem_free: %p is not a buffer from "
		 "npccl_mem_alloc on this communicator (or it was freed already)", ptr);
	return NPCCL_ERR_INVALID_ARG;
}

