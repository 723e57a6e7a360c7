/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * model_nodes.c - one sealed copy of a model per NUMA node
 * (NPUSHM_LOAD_PER_NODE): which nodes get one, where a thread runs, how a
 * copy is placed and checked, and the names the copies go by.
 *
 * The nodes are those with CPUs and memory (a memory-only node, a CXL
 * expander, runs no thread that a copy there would be local to). Copy N is
 * published as "NAME@nodeN"; NAME itself names the first node's copy, so a
 * reader that knows nothing of copies attaches that one. A copy is placed
 * by allocating it with the loading thread's memory policy set to prefer
 * its node (the kmod backend's system memory and tmpfs both follow the
 * policy), only around the system call that allocates it (npi_alloc_node),
 * and checked page by page with move_pages(2) before anything is
 * published: a copy that did not fit on its node fails the load. Not
 * MPOL_BIND: under it, any page the thread faults in meanwhile (its own
 * code, read from a file) comes from the full node too, and the kernel
 * OOM-kills the loader rather than fail a page-cache fault. Every copy
 * holds the same bytes, manifest included, so the same content hash.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "model_nodes.h"

#define MPOL_DEFAULT_ 0
#define MPOL_PREFERRED_ 1
#define NODE_SYSFS "/sys/devices/system/node/"

/* Parse a sysfs node list ("0-1,3") into a bit mask; false if unreadable. */
static bool read_node_mask(const char *file, uint64_t *mask)
{
	char buf[256], *p, *end;
	size_t n;
	FILE *f = fopen(file, "re");

	*mask = 0;
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (p = buf; *p && *p != '\n';) {
		long a = strtol(p, &end, 10), b = a;

		if (end == p)
			return false;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (long i = a; i <= b && i < NPI_MAX_NODES; i++)
			*mask |= 1ULL << i;
		p = *end == ',' ? end + 1 : end;
	}
	return true;
}

int npi_nodes_with_cpus(int nodes[NPI_MAX_NODES])
{
	uint64_t cpus, mem;
	int n = 0;

	if (!read_node_mask(NODE_SYSFS "has_cpu", &cpus) ||
	    !read_node_mask(NODE_SYSFS "has_memory", &mem)) {
		nodes[0] = 0;	/* no NUMA in this kernel: one node */
		return 1;
	}
	for (int i = 0; i < NPI_MAX_NODES; i++)
		if (cpus & mem & (1ULL << i))
			nodes[n++] = i;
	return n;
}

int npi_node_possible_max(void)
{
	uint64_t possible;
	int max = 0;

	if (!read_node_mask(NODE_SYSFS "possible", &possible))
		return 0;
	for (int i = 0; i < NPI_MAX_NODES; i++)
		if (possible & (1ULL << i))
			max = i;
	return max;
}

int npi_node_of_thread(void)
{
	unsigned int cpu, node;

	if (syscall(SYS_getcpu, &cpu, &node, NULL))
		return -1;
	return (int)node;
}

void npi_node_copy_name(const char *name, int node, char *out, size_t size)
{
	snprintf(out, size, "%s%s%d", name, NPI_NODE_COPY_INFIX, node);
}

/* Prefer @node for the calling thread's memory (MPOL_PREFERRED). */
static bool npi_node_bind(int node)
{
	unsigned long mask = 1UL << node;

	return !syscall(SYS_set_mempolicy, MPOL_PREFERRED_, &mask, (unsigned long)NPI_MAX_NODES + 1);
}

/* Back to the default policy (local allocation). */
static void npi_node_unbind(void)
{
	syscall(SYS_set_mempolicy, MPOL_DEFAULT_, NULL, 0UL);
}

__thread int npi_alloc_node = -1;

bool npi_alloc_node_bind(void)
{
	return npi_alloc_node < 0 || npi_node_bind(npi_alloc_node);
}

void npi_alloc_node_unbind(void)
{
	if (npi_alloc_node >= 0)
		npi_node_unbind();
}

long npi_node_pages_off(const void *p, uint64_t len, long page, int node)
{
	enum { BATCH = 1024 };
	void *addrs[BATCH];
	int status[BATCH];
	uint64_t n = len / (uint64_t)page;
	long off = 0;

	for (uint64_t i = 0; i < n; i += BATCH) {
		unsigned long k = n - i < BATCH ? (unsigned long)(n - i) : BATCH;

		for (unsigned long j = 0; j < k; j++)
			addrs[j] = (char *)p + (i + j) * (uint64_t)page;
		if (syscall(SYS_move_pages, 0, k, addrs, NULL, status, 0))
			return -1;
		for (unsigned long j = 0; j < k; j++)
			off += status[j] != node;
	}
	return off;
}
