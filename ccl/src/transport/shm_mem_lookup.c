/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * shm_mem_lookup.c - finding npccl_mem_alloc allocations in the
 * communicator's table (made and freed by shm_mem.c): by address range,
 * for the zero-copy AllReduce and the RDMA registration cache, and by the
 * allocation number peers publish.
 */
#include "npccl_internal.h"
#include "transport/transport.h"

struct shm_mem *shm_mem_find(struct npccl_comm *c, const void *p, size_t len, size_t *off)
{
	const char *x = p;
	for (int i = 0; i < c->nmems; i++) {
		struct shm_mem *m = c->mems[i];
		if (x >= m->base && x <= m->base + m->size && len <= m->size - (size_t)(x - m->base)) {
			*off = (size_t)(x - m->base);
			return m;
		}
	}
	return NULL;
}

struct shm_mem *shm_mem_by_id(struct npccl_comm *c, uint64_t id)
{
	for (int i = 0; i < c->nmems; i++)
		if (c->mems[i]->id == id)
			return c->mems[i];
	return NULL;
}
