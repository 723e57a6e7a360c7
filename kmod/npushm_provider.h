/* SPDX-License-Identifier: GPL-2.0-only */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm_provider.h - the interface by which a driver gives npushm its
 * memory: a provider hands out zeroed order-0 pages with struct pages
 * (mappable with vm_insert_page, GUP-able, exportable as dma-buf) and takes
 * them back. npushm.ko registers "sysmem", the default; an accelerator or
 * memory-device driver registers its own, and an instance mounted with
 * "-o provider=NAME" draws every region from it.
 *
 * Locking and lifetime: alloc and free are called in process context,
 * without npushm's locks, concurrently from any number of tasks. Every
 * instance using a provider, and every pinned page of a destroyed region
 * still waiting for its pin to go, holds a reference on the provider and on
 * @owner: a provider is unregistered from its module's exit, or when its
 * device goes. A device that goes while its memory is in use revokes it
 * first (npushm_provider_revoke(): user mappings are zapped, later faults
 * get SIGBUS, read and write EIO, sizing ENODEV); the provider's @release
 * then runs once the last instance, region and pin using it is gone, and
 * only then may the memory and its struct pages go.
 */
#ifndef NPUSHM_PROVIDER_H
#define NPUSHM_PROVIDER_H

#include <linux/atomic.h>
#include <linux/list.h>
#include <linux/refcount.h>
#include <linux/types.h>
#include <uapi/linux/npushm.h>

struct device;
struct module;
struct page;

/**
 * struct npushm_provider - a source of memory for regions
 * @name: what "provider=" names it by: letters, digits, ':', '.', '-', '_'
 *	(below %NPUSHM_PROVIDER_NAME_MAX bytes), unique among registered ones
 * @owner: the module implementing it (THIS_MODULE)
 * @dev: the device the memory belongs to, or NULL (reported per region)
 * @chunk_order: page order of the physically contiguous chunks it prefers
 *	(a mapping's first touch maps a whole chunk)
 * @capacity: bytes it may hand out at once, 0 for no limit of its own
 *	(the pool's capacity and quotas apply on top either way)
 * @alloc: fill @pages[0..@n) with zeroed pages, each with a single
 *	reference; 0 or -errno (-ENOMEM rather than invoking the OOM killer,
 *	-EINTR when killed)
 * @free: give back @n pages from @alloc; the caller holds the only
 *	reference to each
 * @release: called once, in process context and without npushm's locks,
 *	when the provider is unregistered and nothing uses it any more (no
 *	instance, region or pinned page); NULL when there is nothing to do
 * @node: npushm's (registry list)
 * @used: npushm's: bytes handed out and not yet given back
 * @refs: npushm's: the registry's reference, plus one per user
 * @revoked: npushm's: set by npushm_provider_revoke()
 */
struct npushm_provider {
	const char *name;
	struct module *owner;
	struct device *dev;
	unsigned int chunk_order;
	u64 capacity;
	int (*alloc)(struct npushm_provider *provider, struct page **pages,
		     unsigned long n);
	void (*free)(struct npushm_provider *provider, struct page **pages,
		     unsigned long n);
	void (*release)(struct npushm_provider *provider);

	struct list_head node;
	atomic64_t used;
	refcount_t refs;
	bool revoked;
};

int npushm_provider_register(struct npushm_provider *provider);
int npushm_provider_unregister(struct npushm_provider *provider);
void npushm_provider_revoke(struct npushm_provider *provider);

#endif /* NPUSHM_PROVIDER_H */
