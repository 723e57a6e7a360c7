// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * provider.c - the provider registry: providers by name, their capacity and
 * use, and the references instances and orphaned pages hold on them.
 *
 * Every allocation for a region goes through npushm_provider_alloc(), which
 * reserves the bytes against the provider's capacity first (-ENOSPC beyond
 * it), and every page given back through npushm_provider_free().
 *
 * A provider is referenced by the registry while registered, by every
 * instance using it and by every set of orphaned pinned pages it gave; its
 * release callback runs when the last reference goes. Revoking a provider
 * (its device is going) makes every later fault on its regions SIGBUS: the
 * fault path reads the revoked flag inside an SRCU read section, and
 * revoking (npushm_provider_revoke(), region.c) waits for those sections
 * (npushm_provider_mark_revoked()) before it zaps the regions' mappings, so
 * no fault that missed the flag can map a page after the zap.
 */
#include <linux/ctype.h>
#include <linux/device.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/srcu.h>
#include <linux/string.h>

#include "npushm_internal.h"

static DEFINE_MUTEX(npushm_providers_lock);
static LIST_HEAD(npushm_providers);
DEFINE_STATIC_SRCU(npushm_revoke_srcu);

static struct npushm_provider *npushm_provider_find(const char *name)
{
	struct npushm_provider *p;

	lockdep_assert_held(&npushm_providers_lock);
	list_for_each_entry(p, &npushm_providers, node)
		if (!strcmp(p->name, name))
			return p;
	return NULL;
}

static bool npushm_provider_name_valid(const char *name)
{
	size_t len = name ? strnlen(name, NPUSHM_PROVIDER_NAME_MAX) : 0;
	size_t i;

	if (!len || len == NPUSHM_PROVIDER_NAME_MAX)
		return false;
	for (i = 0; i < len; i++)
		if (!isalnum(name[i]) && !strchr(":.-_", name[i]))
			return false;
	return true;
}

/**
 * npushm_provider_register - make a provider mountable by its name
 * @provider: filled in but for @node and @used; stays registered (and must
 *	stay valid) until npushm_provider_unregister()
 *
 * Return: 0, -EINVAL for a bad name or missing callbacks, -EEXIST when the
 * name is taken.
 */
int npushm_provider_register(struct npushm_provider *provider)
{
	int ret = 0;

	if (!npushm_provider_name_valid(provider->name) || !provider->alloc ||
	    !provider->free || provider->chunk_order > MAX_ORDER - 1)
		return -EINVAL;
	atomic64_set(&provider->used, 0);
	refcount_set(&provider->refs, 1);
	provider->revoked = false;
	mutex_lock(&npushm_providers_lock);
	if (npushm_provider_find(provider->name))
		ret = -EEXIST;
	else
		list_add_tail(&provider->node, &npushm_providers);
	mutex_unlock(&npushm_providers_lock);
	if (!ret && provider->owner)
		pr_info("npushm: provider %s registered%s%s\n", provider->name,
			provider->dev ? " for " : "",
			provider->dev ? dev_name(provider->dev) : "");
	return ret;
}
EXPORT_SYMBOL_GPL(npushm_provider_register);

/**
 * npushm_provider_unregister - no new instance may use a provider
 * @provider: a registered provider
 *
 * Instances mounted with it keep it (they hold it and its module) until
 * unmounted; the registry's reference is dropped here, so @release may run
 * before this returns.
 *
 * Return: 0, or -EBUSY when pages it handed out are still in use (the
 * provider is unregistered all the same; its module cannot be unloaded
 * before they come back).
 */
int npushm_provider_unregister(struct npushm_provider *provider)
{
	int ret;

	mutex_lock(&npushm_providers_lock);
	list_del_init(&provider->node);
	mutex_unlock(&npushm_providers_lock);
	ret = atomic64_read(&provider->used) ? -EBUSY : 0;
	if (refcount_dec_and_test(&provider->refs) && provider->release)
		provider->release(provider);
	return ret;
}
EXPORT_SYMBOL_GPL(npushm_provider_unregister);

/**
 * npushm_provider_mark_revoked - a provider's device is going: set its
 *	revoked flag and wait until no fault that read it unset is in flight
 * @provider: a registered provider
 *
 * Every section npushm_provider_read_lock() opens after this returns sees
 * the flag. npushm_provider_revoke() (region.c) calls it, then zaps the
 * mappings of the provider's regions.
 */
void npushm_provider_mark_revoked(struct npushm_provider *provider)
{
	WRITE_ONCE(provider->revoked, true);
	synchronize_srcu(&npushm_revoke_srcu);
}

/**
 * npushm_provider_read_lock - enter a section in which a provider seen
 *	unrevoked stays unrevoked for npushm_provider_revoke()'s zap
 *
 * Return: the cookie for npushm_provider_read_unlock().
 */
int npushm_provider_read_lock(void)
	__acquires(npushm_revoke_srcu)
{
	return srcu_read_lock(&npushm_revoke_srcu);
}

/**
 * npushm_provider_read_unlock - leave it
 * @idx: from npushm_provider_read_lock()
 */
void npushm_provider_read_unlock(int idx)
	__releases(npushm_revoke_srcu)
{
	srcu_read_unlock(&npushm_revoke_srcu, idx);
}

/**
 * npushm_provider_revoked - whether a provider's device went
 * @provider: any provider
 *
 * Return: true after npushm_provider_revoke().
 */
bool npushm_provider_revoked(const struct npushm_provider *provider)
{
	return READ_ONCE(provider->revoked);
}

/**
 * npushm_provider_get - a registered provider by name, its module held
 * @name: as given to "provider="
 *
 * Return: the provider, or NULL when none of that name is registered (or its
 * module is going away).
 */
struct npushm_provider *npushm_provider_get(const char *name)
{
	struct npushm_provider *p;

	mutex_lock(&npushm_providers_lock);
	p = npushm_provider_find(name);
	if (p && !try_module_get(p->owner))
		p = NULL;
	if (p)
		refcount_inc(&p->refs);
	mutex_unlock(&npushm_providers_lock);
	return p;
}

/**
 * npushm_provider_hold - another reference on a provider already held
 * @provider: the provider
 */
void npushm_provider_hold(struct npushm_provider *provider)
{
	__module_get(provider->owner);
	refcount_inc(&provider->refs);
}

/**
 * npushm_provider_put - drop a reference from npushm_provider_get() or
 *	npushm_provider_hold()
 * @provider: the provider, or NULL
 *
 * The last reference of an unregistered provider runs its release callback:
 * process context, none of npushm's locks held but what the caller holds.
 */
void npushm_provider_put(struct npushm_provider *provider)
{
	struct module *owner;

	if (!provider)
		return;
	owner = provider->owner;
	if (refcount_dec_and_test(&provider->refs) && provider->release)
		provider->release(provider);
	module_put(owner);
}

/**
 * npushm_provider_alloc - pages for a region, within the provider's capacity
 * @provider: the region's provider
 * @pages: filled with @n zeroed pages
 * @n: pages wanted
 *
 * Return: 0, -ENOSPC beyond the provider's capacity, -ENODEV once revoked,
 * or the provider's error.
 */
int npushm_provider_alloc(struct npushm_provider *provider, struct page **pages,
			  unsigned long n)
{
	u64 bytes = (u64)n << PAGE_SHIFT;
	int ret;

	if (npushm_provider_revoked(provider))
		return -ENODEV;
	if (atomic64_add_return(bytes, &provider->used) > provider->capacity &&
	    provider->capacity) {
		atomic64_sub(bytes, &provider->used);
		return -ENOSPC;
	}
	ret = provider->alloc(provider, pages, n);
	if (ret)
		atomic64_sub(bytes, &provider->used);
	return ret;
}

/**
 * npushm_provider_free - give pages back to their provider
 * @provider: where they came from
 * @pages: the pages, each with its last reference
 * @n: how many
 */
void npushm_provider_free(struct npushm_provider *provider, struct page **pages,
			  unsigned long n)
{
	if (!n)
		return;
	provider->free(provider, pages, n);
	atomic64_sub((u64)n << PAGE_SHIFT, &provider->used);
}

/**
 * npushm_provider_for_each - report registered providers, resumably
 * @pos: the index to start from; set past the last one reported
 * @put: reports one provider (name, device, capacity, chunk order, use);
 *	non-zero stops the walk (a full message buffer)
 * @ctx: for @put
 *
 * Return: 0 when every provider was reported, else @put's result.
 */
int npushm_provider_for_each(unsigned long *pos,
			     int (*put)(void *ctx, const struct npushm_provider *p,
					u64 used),
			     void *ctx)
{
	struct npushm_provider *p;
	unsigned long i = 0;
	int ret = 0;

	mutex_lock(&npushm_providers_lock);
	list_for_each_entry(p, &npushm_providers, node) {
		if (i++ < *pos)
			continue;
		ret = put(ctx, p, atomic64_read(&p->used));
		if (ret)
			break;
		*pos = i;
	}
	mutex_unlock(&npushm_providers_lock);
	return ret;
}
