// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * provider_bar.c - PCI BAR providers, "bar:DOMAIN:BUS:SLOT.FN": the memory
 * behind one prefetchable memory BAR of a PCI device, given struct pages
 * (ZONE_DEVICE, MEMORY_DEVICE_GENERIC) so that regions on it map with
 * vm_insert_pages(), pin with GUP (FOLL_LONGTERM included: ZONE_DEVICE is
 * not a movable zone) and export as dma-buf like system pages.
 *
 * Binding is explicit: the pci_driver "npushm_bar" has no ID table and
 * matches no device by itself. The "bars" parameter names ADDR@BAR pairs;
 * at load each named device that has no driver gets driver_override set to
 * us and is bound; later, "echo npushm_bar > .../driver_override" and a
 * write to the driver's bind file bind a named device. A device not named
 * in "bars" is refused.
 *
 * Pages: the BAR's range is mapped with memremap_pages() and handed out by
 * a gen_pool, 2 MiB-aligned chunks first, zeroed through the kernel's
 * mapping. An idle ZONE_DEVICE page of this type has a reference count of
 * 1 (memmap_init_zone_device()); a region holds exactly that reference, so
 * the pin accounting of region.c (reference count minus map count) holds
 * unchanged, and npushm gives a page back only when that is its last one.
 * The count never reaches 0 (which would call the pgmap's page_free).
 *
 * Lifetime: the struct pages must outlive every user of a page (page table
 * entries, GUP pins, dma-buf scatter lists), and memunmap_pages() does not
 * wait for them for this memory type (it drops the pages' pgmap references
 * itself). So the pages are not tied to the binding (no devm): unbinding
 * (remove) revokes the provider (mappings zapped, later faults SIGBUS, read
 * and write EIO, no new regions), gives the BAR's resource back and drops
 * the registry's reference; the pages are unmapped and freed by the
 * provider's release, once the last instance, region and pin using it is
 * gone. Until then the same memory cannot be bound again (EBUSY).
 */
#include <linux/genalloc.h>
#include <linux/memremap.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "npushm_internal.h"

#define NPUSHM_BAR_DRIVER	"npushm_bar"
#define NPUSHM_BAR_ORDER	9

static char npushm_bars[256];
module_param_string(bars, npushm_bars, sizeof(npushm_bars), 0644);
MODULE_PARM_DESC(bars, "PCI BARs to serve as providers: DOMAIN:BUS:SLOT.FN@BAR[,...] (bound at load; later by sysfs bind)");

/**
 * struct npushm_bar - one BAR serving as a provider
 * @provider: registered as "bar:" and the device's name
 * @name: @provider's name
 * @pdev: the device (referenced until @teardown)
 * @bar: the BAR's index
 * @pgmap: its ZONE_DEVICE mapping
 * @pool: the pages not handed out, by kernel virtual address
 * @node: in npushm_bars_live until @teardown
 * @teardown: unmaps the pages and frees all this once nothing uses them
 */
struct npushm_bar {
	struct npushm_provider provider;
	char name[NPUSHM_PROVIDER_NAME_MAX];
	struct pci_dev *pdev;
	int bar;
	struct dev_pagemap pgmap;
	struct gen_pool *pool;
	struct list_head node;
	struct work_struct teardown;
};

/* BARs bound or still in use after their unbinding. */
static DEFINE_MUTEX(npushm_bars_lock);
static LIST_HEAD(npushm_bars_live);
static struct workqueue_struct *npushm_bar_wq;

static struct npushm_bar *to_npushm_bar(struct npushm_provider *provider)
{
	return container_of(provider, struct npushm_bar, provider);
}

static void npushm_bar_free(struct npushm_provider *provider,
			    struct page **pages, unsigned long n)
{
	struct npushm_bar *b = to_npushm_bar(provider);
	unsigned long i, run;

	for (i = 0; i < n; i += run) {
		for (run = 1; i + run < n && pages[i + run] == pages[i] + run; run++)
			;
		gen_pool_free(b->pool, (unsigned long)page_address(pages[i]),
			      run << PAGE_SHIFT);
	}
}

static struct page *npushm_bar_chunk(void *ctx, unsigned int order)
{
	struct npushm_bar *b = ctx;
	unsigned long addr = gen_pool_alloc(b->pool, PAGE_SIZE << order);

	if (!addr)
		return NULL;
	memset((void *)addr, 0, PAGE_SIZE << order);
	return virt_to_page((void *)addr);
}

static void npushm_bar_undo(void *ctx, struct page **pages, unsigned long n)
{
	npushm_bar_free(&((struct npushm_bar *)ctx)->provider, pages, n);
}

/* The capacity, checked before this is called, leaves the pool the pages. */
static int npushm_bar_alloc(struct npushm_provider *provider,
			    struct page **pages, unsigned long n)
{
	return npushm_pages_fill(pages, n, NPUSHM_BAR_ORDER, npushm_bar_chunk,
				 npushm_bar_undo, to_npushm_bar(provider));
}

static void npushm_bar_teardown(struct work_struct *work)
{
	struct npushm_bar *b = container_of(work, struct npushm_bar, teardown);

	memunmap_pages(&b->pgmap);
	gen_pool_destroy(b->pool);
	mutex_lock(&npushm_bars_lock);
	list_del(&b->node);
	mutex_unlock(&npushm_bars_lock);
	pci_info(b->pdev, "npushm: provider %s: memory given back\n", b->name);
	pci_dev_put(b->pdev);
	kfree(b);
}

/* The last user is gone: memunmap_pages() sleeps long, not in the caller. */
static void npushm_bar_release(struct npushm_provider *provider)
{
	queue_work(npushm_bar_wq, &to_npushm_bar(provider)->teardown);
}

/* The BAR "bars" names for @pdev, -ENODEV when none, -EINVAL if malformed. */
static int npushm_bar_named(struct pci_dev *pdev)
{
	char *list, *cur, *entry, *at;
	int bar = -ENODEV;
	unsigned int n;

	kernel_param_lock(THIS_MODULE);
	list = kstrdup(npushm_bars, GFP_KERNEL);
	kernel_param_unlock(THIS_MODULE);
	if (!list)
		return -ENOMEM;
	cur = strim(list);
	while ((entry = strsep(&cur, ",")) && bar == -ENODEV) {
		at = strchr(entry, '@');
		if (!at)
			continue;
		*at = '\0';
		if (strcmp(entry, pci_name(pdev)))
			continue;
		if (kstrtouint(at + 1, 10, &n) || n >= PCI_STD_NUM_BARS)
			bar = -EINVAL;
		else
			bar = n;
	}
	kfree(list);
	return bar;
}

/* Whether memory of a BAR still in use overlaps @res. */
static bool npushm_bar_busy(const struct resource *res)
{
	struct npushm_bar *b;
	bool busy = false;

	mutex_lock(&npushm_bars_lock);
	list_for_each_entry(b, &npushm_bars_live, node)
		if (b->pgmap.range.start <= res->end &&
		    res->start <= b->pgmap.range.end)
			busy = true;
	mutex_unlock(&npushm_bars_lock);
	return busy;
}

static int npushm_bar_check(struct pci_dev *pdev, int bar)
{
	const struct resource *res = &pdev->resource[bar];

	if (resource_type(res) != IORESOURCE_MEM ||
	    !(res->flags & IORESOURCE_PREFETCH)) {
		pci_err(pdev, "npushm: BAR %d is not prefetchable memory\n", bar);
		return -EINVAL;
	}
	if (!IS_ALIGNED(res->start | resource_size(res),
			memremap_compat_align())) {
		pci_err(pdev, "npushm: BAR %d %pR is not in whole %lu KiB blocks\n",
			bar, res, memremap_compat_align() >> 10);
		return -EINVAL;
	}
	if (npushm_bar_busy(res)) {
		pci_err(pdev, "npushm: BAR %d %pR: its pages from an earlier binding are still in use\n",
			bar, res);
		return -EBUSY;
	}
	return 0;
}

/* The BAR's pages and their allocator, for @b->pdev's BAR @b->bar. */
static int npushm_bar_map(struct npushm_bar *b)
{
	const struct resource *res = &b->pdev->resource[b->bar];
	int nid = dev_to_node(&b->pdev->dev);
	void *addr;
	int ret;

	b->pgmap.type = MEMORY_DEVICE_GENERIC;
	b->pgmap.range.start = res->start;
	b->pgmap.range.end = res->end;
	b->pgmap.nr_range = 1;
	b->pool = gen_pool_create(PAGE_SHIFT, nid);
	if (!b->pool)
		return -ENOMEM;
	gen_pool_set_algo(b->pool, gen_pool_first_fit_order_align, NULL);
	addr = memremap_pages(&b->pgmap, nid);
	if (IS_ERR(addr)) {
		ret = PTR_ERR(addr);
		goto out_destroy;
	}
	ret = gen_pool_add_virt(b->pool, (unsigned long)addr, res->start,
				resource_size(res), nid);
	if (ret)
		goto out_unmap;
	return 0;

out_unmap:
	memunmap_pages(&b->pgmap);
out_destroy:
	gen_pool_destroy(b->pool);
	return ret;
}

static int npushm_bar_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	int bar = npushm_bar_named(pdev);
	struct npushm_bar *b;
	int ret;

	if (bar < 0) {
		pci_err(pdev, "npushm: not named in npushm's bars parameter (%s@BAR)\n",
			pci_name(pdev));
		return bar;
	}
	ret = npushm_bar_check(pdev, bar);
	if (ret)
		return ret;
	ret = pci_enable_device_mem(pdev);
	if (ret)
		return ret;
	ret = pci_request_region(pdev, bar, NPUSHM_BAR_DRIVER);
	if (ret)
		goto out_disable;
	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b) {
		ret = -ENOMEM;
		goto out_release;
	}
	b->pdev = pdev;
	b->bar = bar;
	INIT_WORK(&b->teardown, npushm_bar_teardown);
	ret = npushm_bar_map(b);
	if (ret)
		goto out_free;

	snprintf(b->name, sizeof(b->name), "bar:%s", pci_name(pdev));
	b->provider.name = b->name;
	b->provider.owner = THIS_MODULE;
	b->provider.dev = &pdev->dev;
	b->provider.chunk_order = NPUSHM_BAR_ORDER;
	b->provider.capacity = resource_size(&pdev->resource[bar]);
	b->provider.alloc = npushm_bar_alloc;
	b->provider.free = npushm_bar_free;
	b->provider.release = npushm_bar_release;
	ret = npushm_provider_register(&b->provider);
	if (ret)
		goto out_unmap;
	pci_dev_get(pdev);
	mutex_lock(&npushm_bars_lock);
	list_add(&b->node, &npushm_bars_live);
	mutex_unlock(&npushm_bars_lock);
	pci_set_drvdata(pdev, b);
	return 0;

out_unmap:
	memunmap_pages(&b->pgmap);
	gen_pool_destroy(b->pool);
out_free:
	kfree(b);
out_release:
	pci_release_region(pdev, bar);
out_disable:
	pci_disable_device(pdev);
	return ret;
}

static void npushm_bar_remove(struct pci_dev *pdev)
{
	struct npushm_bar *b = pci_get_drvdata(pdev);
	u64 used;

	npushm_provider_revoke(&b->provider);
	used = atomic64_read(&b->provider.used);
	if (used)
		pci_info(pdev, "npushm: provider %s revoked; %llu bytes stay until their regions and pins go\n",
			 b->name, used);
	pci_release_region(pdev, b->bar);
	pci_disable_device(pdev);
	pci_set_drvdata(pdev, NULL);
	npushm_provider_unregister(&b->provider);
}

static struct pci_driver npushm_bar_driver = {
	.name = NPUSHM_BAR_DRIVER,
	.probe = npushm_bar_probe,
	.remove = npushm_bar_remove,
};

/* Bind the devices "bars" names that have no driver yet. */
static void npushm_bar_bind_named(void)
{
	unsigned int domain, bus, slot, fn;
	char *list, *cur, *entry;
	struct pci_dev *pdev;

	kernel_param_lock(THIS_MODULE);
	list = kstrdup(npushm_bars, GFP_KERNEL);
	kernel_param_unlock(THIS_MODULE);
	if (!list)
		return;
	cur = strim(list);
	while ((entry = strsep(&cur, ","))) {
		if (!*entry)
			continue;
		if (sscanf(entry, "%x:%x:%x.%x@", &domain, &bus, &slot, &fn) != 4 ||
		    !strchr(entry, '@')) {
			pr_err("npushm: bars=%s: not DOMAIN:BUS:SLOT.FN@BAR\n", entry);
			continue;
		}
		pdev = pci_get_domain_bus_and_slot(domain, bus, PCI_DEVFN(slot, fn));
		if (!pdev) {
			pr_err("npushm: bars=%s: no such PCI device\n", entry);
			continue;
		}
		if (pdev->dev.driver)
			pci_err(pdev, "npushm: bars=%s: bound to another driver; unbind it, then bind npushm_bar\n",
				entry);
		else if (driver_set_override(&pdev->dev, &pdev->driver_override,
					     NPUSHM_BAR_DRIVER, strlen(NPUSHM_BAR_DRIVER)) ||
			 device_attach(&pdev->dev) <= 0)
			pci_err(pdev, "npushm: bars=%s: not bound\n", entry);
		pci_dev_put(pdev);
	}
	kfree(list);
}

/**
 * npushm_bar_providers_init - register the driver, bind what "bars" names
 *
 * Return: 0 or -errno.
 */
int npushm_bar_providers_init(void)
{
	int ret;

	npushm_bar_wq = alloc_workqueue("npushm_bar", 0, 0);
	if (!npushm_bar_wq)
		return -ENOMEM;
	ret = pci_register_driver(&npushm_bar_driver);
	if (ret) {
		destroy_workqueue(npushm_bar_wq);
		return ret;
	}
	npushm_bar_bind_named();
	return 0;
}

/** npushm_bar_providers_exit - unbind every BAR, wait for their teardown */
void npushm_bar_providers_exit(void)
{
	pci_unregister_driver(&npushm_bar_driver);
	destroy_workqueue(npushm_bar_wq);
}
