// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * provider_node.c - one provider per NUMA node with memory, "node:N": pages
 * strictly from node N (__GFP_THISNODE, never a fallback to another node; a
 * full node is -ENOMEM), for memory-only nodes, which is how CXL type-3
 * expanders and the HBM of coherent accelerators appear to Linux. A node
 * that also has CPUs is refused at mount unless the instance asks for it
 * (fs.c, allow_cpus): its memory is the CPUs' own, and an instance taking
 * it strictly is rarely what was meant.
 *
 * The providers are registered at load for the nodes with memory then;
 * nodes hot-added later have none.
 */
#include <linux/nodemask.h>
#include <linux/slab.h>

#include "npushm_internal.h"

struct npushm_node_provider {
	struct npushm_provider provider;
	char name[NPUSHM_PROVIDER_NAME_MAX];
};

static struct npushm_node_provider *npushm_node_providers[MAX_NUMNODES];

static int npushm_node_of(const struct npushm_provider *provider)
{
	int nid;

	for_each_node(nid)
		if (npushm_node_providers[nid] &&
		    &npushm_node_providers[nid]->provider == provider)
			return nid;
	return NUMA_NO_NODE;
}

static int npushm_node_alloc(struct npushm_provider *provider,
			     struct page **pages, unsigned long n)
{
	return npushm_pages_alloc(pages, n, npushm_node_of(provider));
}

static void npushm_node_free(struct npushm_provider *provider,
			     struct page **pages, unsigned long n)
{
	npushm_pages_free(pages, n);
}

/**
 * npushm_provider_node - the node a provider draws from strictly
 * @provider: any provider
 *
 * Return: its node for a "node:N" provider, else NUMA_NO_NODE.
 */
int npushm_provider_node(const struct npushm_provider *provider)
{
	if (provider->alloc != npushm_node_alloc)
		return NUMA_NO_NODE;
	return npushm_node_of(provider);
}

/**
 * npushm_node_providers_init - register "node:N" for every node with memory
 *
 * Return: 0 or -errno.
 */
int npushm_node_providers_init(void)
{
	struct npushm_node_provider *np;
	int nid, ret;

	for_each_node_state(nid, N_MEMORY) {
		np = kzalloc(sizeof(*np), GFP_KERNEL);
		if (!np) {
			ret = -ENOMEM;
			goto out_unregister;
		}
		snprintf(np->name, sizeof(np->name), "node:%d", nid);
		np->provider.name = np->name;
		np->provider.chunk_order = npushm_sysmem_provider.chunk_order;
		np->provider.alloc = npushm_node_alloc;
		np->provider.free = npushm_node_free;
		npushm_node_providers[nid] = np;
		ret = npushm_provider_register(&np->provider);
		if (ret) {
			npushm_node_providers[nid] = NULL;
			kfree(np);
			goto out_unregister;
		}
	}
	return 0;

out_unregister:
	npushm_node_providers_exit();
	return ret;
}

/** npushm_node_providers_exit - unregister and free them */
void npushm_node_providers_exit(void)
{
	int nid;

	for_each_node(nid) {
		if (!npushm_node_providers[nid])
			continue;
		npushm_provider_unregister(&npushm_node_providers[nid]->provider);
		kfree(npushm_node_providers[nid]);
		npushm_node_providers[nid] = NULL;
	}
}
