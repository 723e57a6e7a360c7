// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * pool.c - capacity and per-uid accounting of the device-memory pool.
 *
 * A region charges its size to the pool and to its owner's uid before any
 * of its memory is allocated and gives it back when it is destroyed, so the
 * bytes in use return exactly to where they were. Pages still pinned when
 * their region is destroyed (an RDMA MR, io_uring fixed buffers, O_DIRECT
 * in flight) are "orphans": they stay charged, to the pool and to the uid,
 * until the pins go; a worker checks them once a second.
 *
 * Quotas are per user, not per uid: a charge made from inside a user
 * namespace (by any uid of it, subordinate uids included) goes to the
 * creator of the outermost user namespace the task is in, so that a user
 * with a range of subordinate uids (/etc/subuid) has one quota, not one
 * per uid; a container's users share its creator's.
 *
 * The pool-wide figures (bytes in use, regions, peak, failed allocations,
 * orphaned pins) tell one tenant about the others' model loads: only a
 * caller in the initial user and network namespaces, or with CAP_SYS_ADMIN
 * there, reads them. Anyone else gets its own usage in their place (peak,
 * failures and orphans 0) and the capacity and quota.
 *
 * Limits are module parameters, writable at run time, in bytes with an
 * optional K, M, G, T, P or E suffix: "capacity" (default 0: a quarter of
 * the RAM) and "uid_quota" (default: half of the capacity at load time; 0:
 * no limit). Values above NPUSHM_PARAM_MAX or that do not fit 64 bits are
 * refused with ERANGE.
 */
#include <linux/cred.h>
#include <linux/ctype.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/nsproxy.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/user_namespace.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <net/genetlink.h>

#include "npushm_internal.h"

/* 4 PiB: more than any machine this runs on has, far below 64-bit overflow. */
#define NPUSHM_PARAM_MAX	BIT_ULL(52)
#define NPUSHM_QUOTA_UNSET	ULLONG_MAX

static u64 npushm_capacity;
static u64 npushm_uid_quota = NPUSHM_QUOTA_UNSET;

/**
 * npushm_parse_bytes - parse a byte count with an optional binary suffix
 * @str: digits, then at most one of K, M, G, T, P, E (either case), then
 *	at most a newline
 * @bytes: out: the value
 *
 * Return: 0, -EINVAL for anything else, -ERANGE when the value does not
 * fit 64 bits.
 */
int npushm_parse_bytes(const char *str, u64 *bytes)
{
	static const char suffixes[] = "KMGTPE";
	char digits[24];
	const char *s;
	unsigned int shift = 0;
	size_t n = 0;
	u64 val;
	int ret;

	while (isdigit(str[n]))
		n++;
	if (!n)
		return -EINVAL;
	if (n >= sizeof(digits))
		return -ERANGE;
	memcpy(digits, str, n);
	digits[n] = '\0';
	ret = kstrtou64(digits, 10, &val);
	if (ret)
		return ret;
	if (str[n]) {
		s = strchr(suffixes, toupper(str[n]));
		if (!s)
			return -EINVAL;
		shift = 10 * (s - suffixes + 1);
		n++;
	}
	if (str[n] == '\n')
		n++;
	if (str[n])
		return -EINVAL;
	if (check_shl_overflow(val, shift, &val))
		return -ERANGE;
	*bytes = val;
	return 0;
}

static int npushm_param_set_bytes(const char *val, const struct kernel_param *kp)
{
	u64 bytes;
	int ret;

	ret = npushm_parse_bytes(val, &bytes);
	if (ret)
		return ret;
	if (bytes > NPUSHM_PARAM_MAX)
		return -ERANGE;
	WRITE_ONCE(*(u64 *)kp->arg, bytes);
	return 0;
}

static int npushm_param_get_bytes(char *buffer, const struct kernel_param *kp)
{
	return sysfs_emit(buffer, "%llu\n", READ_ONCE(*(u64 *)kp->arg));
}

static const struct kernel_param_ops npushm_bytes_param_ops = {
	.set = npushm_param_set_bytes,
	.get = npushm_param_get_bytes,
};

module_param_cb(capacity, &npushm_bytes_param_ops, &npushm_capacity, 0644);
MODULE_PARM_DESC(capacity,
		 "Pool capacity in bytes, K/M/G/T/P/E suffixes allowed, at most 4P (default 0: a quarter of the RAM)");
module_param_cb(uid_quota, &npushm_bytes_param_ops, &npushm_uid_quota, 0644);
MODULE_PARM_DESC(uid_quota,
		 "Bytes one uid may hold, same syntax, 0: no limit (default: half of the capacity at load time)");

struct npushm_uid_usage {
	u64 bytes;
	u32 regions;
};

/* Pages of a destroyed region that were still pinned. */
struct npushm_orphan {
	struct list_head node;
	kuid_t uid;
	struct npushm_provider *provider;
	unsigned long npages;
	struct page **pages;	/* the region's page array, pinned ones first */
};

static struct {
	struct mutex lock;	/* protects everything below */
	u64 in_use;
	u64 peak;
	u64 regions;
	u64 failed;
	u64 orphan_bytes;
	struct list_head orphans;
	struct xarray uids;	/* uid -> struct npushm_uid_usage */
} npushm_pool;

static void npushm_orphan_reap(struct work_struct *work);
static DECLARE_DELAYED_WORK(npushm_orphan_work, npushm_orphan_reap);

/**
 * npushm_pool_capacity - the pool's capacity in bytes
 *
 * Return: the "capacity" parameter, or a quarter of the RAM when it is 0.
 */
u64 npushm_pool_capacity(void)
{
	u64 cap = READ_ONCE(npushm_capacity);

	return cap ? cap : (u64)totalram_pages() * PAGE_SIZE / 4;
}

/**
 * npushm_pool_uid_quota - bytes one uid may hold, 0 for no limit
 *
 * Return: the "uid_quota" parameter.
 */
u64 npushm_pool_uid_quota(void)
{
	return READ_ONCE(npushm_uid_quota);
}

/**
 * npushm_account_uid_in - the uid a charge made from a user namespace goes to
 * @ns: the user namespace of the task (or credentials) making it
 * @uid: the uid it goes to from the initial user namespace (a file's
 *	owner, the caller's euid)
 *
 * Return: @uid when @ns is the initial user namespace, else the owner
 * (creator) of the outermost user namespace @ns is in.
 */
kuid_t npushm_account_uid_in(const struct user_namespace *ns, kuid_t uid)
{
	if (ns == &init_user_ns)
		return uid;
	while (ns->parent != &init_user_ns)
		ns = ns->parent;
	return ns->owner;
}

/**
 * npushm_account_uid - npushm_account_uid_in() for the current task
 * @uid: as there
 *
 * Return: as there.
 */
kuid_t npushm_account_uid(kuid_t uid)
{
	return npushm_account_uid_in(current_user_ns(), uid);
}

static unsigned long npushm_uid_key(kuid_t uid)
{
	return from_kuid(&init_user_ns, uid);
}

/* Add @bytes and @regions to @uid's usage and the pool's; lock held. */
static void npushm_pool_add(struct npushm_uid_usage *use, u64 bytes, u32 regions)
{
	use->bytes += bytes;
	use->regions += regions;
	npushm_pool.in_use += bytes;
	npushm_pool.regions += regions;
	npushm_pool.peak = max(npushm_pool.peak, npushm_pool.in_use);
}

/* Take @bytes and @regions off @uid's usage and the pool's; lock held. */
static void npushm_pool_sub(kuid_t uid, u64 bytes, u32 regions)
{
	unsigned long key = npushm_uid_key(uid);
	struct npushm_uid_usage *use;

	lockdep_assert_held(&npushm_pool.lock);
	use = xa_load(&npushm_pool.uids, key);
	if (!WARN_ON_ONCE(!use || use->bytes < bytes || use->regions < regions)) {
		use->bytes -= bytes;
		use->regions -= regions;
		if (!use->regions && !use->bytes) {
			xa_erase(&npushm_pool.uids, key);
			kfree(use);
		}
	}
	npushm_pool.in_use -= bytes;
	npushm_pool.regions -= regions;
}

/*
 * Charge @bytes and @regions to @uid within its quota and, when @new_memory,
 * the capacity; @fresh is a spare usage record, consumed (set to NULL) when
 * @uid had none. Lock held.
 */
static int npushm_pool_add_checked(kuid_t uid, u64 bytes, u32 regions,
				   bool new_memory,
				   struct npushm_uid_usage **fresh)
{
	unsigned long key = npushm_uid_key(uid);
	u64 quota = npushm_pool_uid_quota();
	u64 cap = npushm_pool_capacity();
	struct npushm_uid_usage *use;
	int ret;

	lockdep_assert_held(&npushm_pool.lock);
	use = xa_load(&npushm_pool.uids, key);
	if (new_memory &&
	    (npushm_pool.in_use > cap || bytes > cap - npushm_pool.in_use))
		return -ENOSPC;
	if (quota && (bytes > quota || (use && use->bytes > quota - bytes)))
		return -EDQUOT;
	if (!use) {
		ret = xa_insert(&npushm_pool.uids, key, *fresh, GFP_KERNEL);
		if (ret)
			return ret;
		use = *fresh;
		*fresh = NULL;
	}
	npushm_pool_add(use, bytes, regions);
	return 0;
}

/**
 * npushm_pool_charge - reserve @bytes of the pool for a region owned by @uid
 * @uid: the owner charged
 * @bytes: size of the region
 *
 * Return: 0, -ENOSPC when the pool lacks room, -EDQUOT when @uid would
 * exceed its quota, -ENOMEM.
 */
int npushm_pool_charge(kuid_t uid, u64 bytes)
{
	struct npushm_uid_usage *fresh;
	int ret;

	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL);
	if (!fresh)
		return -ENOMEM;
	mutex_lock(&npushm_pool.lock);
	ret = npushm_pool_add_checked(uid, bytes, 1, true, &fresh);
	mutex_unlock(&npushm_pool.lock);
	kfree(fresh);
	return ret;
}

/**
 * npushm_pool_uncharge - give back what npushm_pool_charge() reserved
 * @uid: the owner charged
 * @bytes: size of the region
 */
void npushm_pool_uncharge(kuid_t uid, u64 bytes)
{
	mutex_lock(&npushm_pool.lock);
	npushm_pool_sub(uid, bytes, 1);
	mutex_unlock(&npushm_pool.lock);
}

/**
 * npushm_pool_transfer - move a region's charge to another uid (chown)
 * @from: the uid charged now
 * @to: the new owner
 * @bytes: size of the region
 *
 * Not checked against the capacity (the pool's total does not change), only
 * against @to's quota.
 *
 * Return: 0, -EDQUOT when @to would exceed its quota, -ENOMEM.
 */
int npushm_pool_transfer(kuid_t from, kuid_t to, u64 bytes)
{
	struct npushm_uid_usage *fresh;
	int ret;

	if (uid_eq(from, to))
		return 0;
	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL);
	if (!fresh)
		return -ENOMEM;
	mutex_lock(&npushm_pool.lock);
	npushm_pool_sub(from, bytes, 1);
	ret = npushm_pool_add_checked(to, bytes, 1, false, &fresh);
	if (ret) {
		struct npushm_uid_usage *back = xa_load(&npushm_pool.uids,
							npushm_uid_key(from));

		if (back) {
			npushm_pool_add(back, bytes, 1);
		} else if (!xa_insert(&npushm_pool.uids, npushm_uid_key(from),
				      fresh, GFP_KERNEL)) {
			npushm_pool_add(fresh, bytes, 1);
			fresh = NULL;
		} else {
			WARN_ON_ONCE(1);
		}
	}
	mutex_unlock(&npushm_pool.lock);
	kfree(fresh);
	return ret;
}

/**
 * npushm_pool_count_failure - count an allocation that failed
 */
void npushm_pool_count_failure(void)
{
	mutex_lock(&npushm_pool.lock);
	npushm_pool.failed++;
	mutex_unlock(&npushm_pool.lock);
}

/* Free the orphans nobody pins any more; all of them if @all. */
static bool npushm_orphans_release(bool all)
{
	struct npushm_orphan *o, *tmp;
	unsigned long i, kept;
	bool pending = false;

	mutex_lock(&npushm_pool.lock);
	list_for_each_entry_safe(o, tmp, &npushm_pool.orphans, node) {
		for (i = 0, kept = 0; i < o->npages; i++) {
			struct page *page = o->pages[i];

			if (all || page_ref_count(page) == 1) {
				/* Unpinned: ours is the last reference. */
				npushm_provider_free(o->provider, &page, 1);
				continue;
			}
			o->pages[kept++] = page;
		}
		npushm_pool_sub(o->uid, (u64)(o->npages - kept) << PAGE_SHIFT,
				kept ? 0 : 1);
		npushm_pool.orphan_bytes -= (u64)(o->npages - kept) << PAGE_SHIFT;
		o->npages = kept;
		if (!kept) {
			list_del(&o->node);
			npushm_provider_put(o->provider);
			kvfree(o->pages);
			kfree(o);
		} else {
			pending = true;
		}
	}
	mutex_unlock(&npushm_pool.lock);
	return pending;
}

static void npushm_orphan_reap(struct work_struct *work)
{
	if (npushm_orphans_release(false))
		schedule_delayed_work(&npushm_orphan_work, HZ);
}

/**
 * npushm_pool_orphan - give back a destroyed region's memory, minus its pins
 * @uid: the uid the region was charged to
 * @size: the region's size (its charge)
 * @pages: the region's page array (kvmalloc'd), its @n pinned pages first;
 *	the pool takes it over, and the region's reference on those pages,
 *	when @n is not 0
 * @n: pinned pages (0: none)
 * @provider: where the pages came from (held until the last is freed)
 *
 * The unpinned part of the charge is given back now; each pinned page stays
 * charged to @uid until its pin is gone.
 */
void npushm_pool_orphan(kuid_t uid, u64 size, struct page **pages,
			unsigned long n, struct npushm_provider *provider)
{
	struct npushm_orphan *o = NULL;
	u64 pinned = (u64)n << PAGE_SHIFT;

	/* Small and rare: a pinned region going away. */
	if (n)
		o = kmalloc(sizeof(*o), GFP_KERNEL | __GFP_NOFAIL);
	mutex_lock(&npushm_pool.lock);
	npushm_pool_sub(uid, size - pinned, n ? 0 : 1);
	if (o) {
		o->uid = uid;
		o->provider = provider;
		npushm_provider_hold(provider);
		o->npages = n;
		o->pages = pages;
		list_add_tail(&o->node, &npushm_pool.orphans);
		npushm_pool.orphan_bytes += pinned;
	}
	mutex_unlock(&npushm_pool.lock);
	if (o)
		schedule_delayed_work(&npushm_orphan_work, HZ);
}

/**
 * npushm_pool_global_visible - whether the current task reads pool-wide figures
 *
 * Return: true in the initial user and network namespaces, or with
 * CAP_SYS_ADMIN in the initial user namespace.
 */
bool npushm_pool_global_visible(void)
{
	return (current_user_ns() == &init_user_ns &&
		current->nsproxy->net_ns == &init_net) ||
	       capable(CAP_SYS_ADMIN);
}

/**
 * npushm_pool_query - fill the pool fields of NPUSHM_IOC_QUERY's reply
 * @q: the reply
 * @uid: the caller, whose use is reported
 * @global: pool-wide figures, else the caller's own in their place
 */
void npushm_pool_query(struct npushm_query *q, kuid_t uid, bool global)
{
	struct npushm_uid_usage *use;

	q->capacity = npushm_pool_capacity();
	q->uid_quota = npushm_pool_uid_quota();
	mutex_lock(&npushm_pool.lock);
	use = xa_load(&npushm_pool.uids, npushm_uid_key(uid));
	q->uid_in_use = use ? use->bytes : 0;
	if (global) {
		q->in_use = npushm_pool.in_use;
		q->regions = npushm_pool.regions;
		q->orphan_pinned = npushm_pool.orphan_bytes;
	} else {
		q->in_use = q->uid_in_use;
		q->regions = use ? use->regions : 0;
		q->orphan_pinned = 0;
	}
	mutex_unlock(&npushm_pool.lock);
}

/**
 * npushm_pool_fill_stats - put the pool statistics into a netlink message
 * @skb: the message
 * @ns: the user namespace uids are reported in
 * @uid: the caller, whose own usage is added as one NPUSHM_A_UID_USAGE
 * @global: pool-wide figures, else the caller's own in their place
 *
 * The message has a fixed size whatever the number of uids.
 *
 * Return: 0 or -EMSGSIZE.
 */
int npushm_pool_fill_stats(struct sk_buff *skb, struct user_namespace *ns,
			   kuid_t uid, bool global)
{
	u64 in_use, peak, regions, failed, orphans;
	struct npushm_uid_usage *use;
	struct nlattr *nest;
	int ret = -EMSGSIZE;

	mutex_lock(&npushm_pool.lock);
	use = xa_load(&npushm_pool.uids, npushm_uid_key(uid));
	if (global) {
		in_use = npushm_pool.in_use;
		peak = npushm_pool.peak;
		regions = npushm_pool.regions;
		failed = npushm_pool.failed;
		orphans = npushm_pool.orphan_bytes;
	} else {
		in_use = use ? use->bytes : 0;
		regions = use ? use->regions : 0;
		peak = 0;
		failed = 0;
		orphans = 0;
	}
	if (nla_put_u64_64bit(skb, NPUSHM_A_STATS_CAPACITY,
			      npushm_pool_capacity(), NPUSHM_A_PAD) ||
	    nla_put_u64_64bit(skb, NPUSHM_A_STATS_IN_USE, in_use, NPUSHM_A_PAD) ||
	    nla_put_u64_64bit(skb, NPUSHM_A_STATS_PEAK, peak, NPUSHM_A_PAD) ||
	    nla_put_u64_64bit(skb, NPUSHM_A_STATS_REGIONS, regions, NPUSHM_A_PAD) ||
	    nla_put_u64_64bit(skb, NPUSHM_A_STATS_FAILED_ALLOCS, failed,
			      NPUSHM_A_PAD) ||
	    nla_put_u64_64bit(skb, NPUSHM_A_STATS_UID_QUOTA,
			      npushm_pool_uid_quota(), NPUSHM_A_PAD) ||
	    nla_put_u64_64bit(skb, NPUSHM_A_STATS_ORPHAN_PINNED, orphans,
			      NPUSHM_A_PAD))
		goto out_unlock;
	nest = nla_nest_start(skb, NPUSHM_A_UID_USAGE);
	if (!nest)
		goto out_unlock;
	if (nla_put_u32(skb, NPUSHM_A_UID, from_kuid_munged(ns, uid)) ||
	    nla_put_u64_64bit(skb, NPUSHM_A_UID_BYTES, use ? use->bytes : 0,
			      NPUSHM_A_PAD) ||
	    nla_put_u32(skb, NPUSHM_A_UID_REGIONS, use ? use->regions : 0)) {
		nla_nest_cancel(skb, nest);
		goto out_unlock;
	}
	nla_nest_end(skb, nest);
	ret = 0;
out_unlock:
	mutex_unlock(&npushm_pool.lock);
	return ret;
}

/**
 * npushm_pool_dump_uids - one netlink message per uid holding pool memory
 * @skb: the dump's buffer
 * @ns: the user namespace uids are reported in
 * @all: every uid, else only @uid
 * @uid: the caller
 * @pos: in/out: the next uid key to report
 * @put: puts one message; 0 or -EMSGSIZE
 * @ctx: for @put
 *
 * Return: 0 when done, -EMSGSIZE when @skb is full (call again with @pos).
 */
int npushm_pool_dump_uids(struct sk_buff *skb, struct user_namespace *ns,
			  bool all, kuid_t uid, unsigned long *pos,
			  int (*put)(struct sk_buff *skb, void *ctx, u32 uid,
				     u64 bytes, u32 regions),
			  void *ctx)
{
	struct npushm_uid_usage *use;
	unsigned long key;
	int ret = 0;

	mutex_lock(&npushm_pool.lock);
	xa_for_each_start(&npushm_pool.uids, key, use, *pos) {
		if (!all && key != npushm_uid_key(uid))
			continue;
		ret = put(skb, ctx,
			  from_kuid_munged(ns, make_kuid(&init_user_ns, key)),
			  use->bytes, use->regions);
		if (ret)
			break;
		*pos = key + 1;
	}
	mutex_unlock(&npushm_pool.lock);
	return ret;
}

/**
 * npushm_pool_init - set up the pool's accounting and the default quota
 *
 * Return: 0.
 */
int npushm_pool_init(void)
{
	mutex_init(&npushm_pool.lock);
	INIT_LIST_HEAD(&npushm_pool.orphans);
	xa_init(&npushm_pool.uids);
	if (npushm_uid_quota == NPUSHM_QUOTA_UNSET)
		npushm_uid_quota = npushm_pool_capacity() / 2;
	return 0;
}

/**
 * npushm_pool_exit - tear down the accounting; every region is gone by now
 *
 * Orphaned pages still pinned lose their charge: their last unpin frees them.
 */
void npushm_pool_exit(void)
{
	struct npushm_uid_usage *use;
	unsigned long key;

	cancel_delayed_work_sync(&npushm_orphan_work);
	if (npushm_pool.orphan_bytes)
		pr_info("npushm: %llu bytes still pinned at unload; freed when unpinned\n",
			npushm_pool.orphan_bytes);
	npushm_orphans_release(true);
	WARN_ON(npushm_pool.in_use || npushm_pool.regions);
	xa_for_each(&npushm_pool.uids, key, use)
		kfree(use);
	xa_destroy(&npushm_pool.uids);
}
