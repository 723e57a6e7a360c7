/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * scratch.c - the algorithms' two persistent scratch buffers per
 * communicator (exec role only; unmapped with the communicator).
 */
#include "npccl_internal.h"
#include "transport/transport.h"
#include "algo/algo.h"

#include <sys/mman.h>

/* Persistent scratch, grown to a power of two and prefaulted once, so no
 * call pays first-touch page faults for temporaries after the first. */
static char *grow(char **buf, size_t *size, size_t bytes)
{
	if (bytes <= *size)
		return *buf;
	size_t n = 1 << 16;
	while (n < bytes)
		n <<= 1;
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		       -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	madvise(p, n, MADV_HUGEPAGE);
	if (*buf)
		munmap(*buf, *size);
	*buf = p;
	*size = n;
	return p;
}

char *comm_scratch(struct npccl_comm *c, size_t bytes)
{
	return grow(&c->scratch, &c->scratch_size, bytes);
}

char *comm_scratch2(struct npccl_comm *c, size_t bytes)
{
	return grow(&c->scratch2, &c->scratch2_size, bytes);
}
