// SPDX-License-Identifier: GPL-2.0
/*
 * pool.c - capacity and per-uid accounting of the device-memory pool.
 *
 * Every region charges its size to the pool and to its owner's uid before
 * any memory is allocated, and uncharges it when it is destroyed, so the
 * bytes in use return exactly to where they were. Limits are module
 * parameters that may change at run time: "capacity" (default: half of the
 * RAM) and "uid_quota" (default 0: no per-uid limit); both take K/M/G
 * suffixes.
 */
#include <linux/cred.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/xarray.h>
#include <net/genetlink.h>

#include "npushm_internal.h"

static unsigned long npushm_capacity;
static unsigned long npushm_uid_quota;

static int npushm_param_set_bytes(const char *val, const struct kernel_param *kp)
{
	unsigned long long bytes;
	char *end;

	bytes = memparse(val, &end);
	if (end == val || (*end && *end != '\n'))
		return -EINVAL;
	if (bytes > (1ULL << 52))
		return -ERANGE;
	WRITE_ONCE(*(unsigned long *)kp->arg, bytes);
	return 0;
}

static const struct kernel_param_ops npushm_bytes_param_ops = {
	.set = npushm_param_set_bytes,
	.get = param_get_ulong,
};

module_param_cb(capacity, &npushm_bytes_param_ops, &npushm_capacity, 0644);
MODULE_PARM_DESC(capacity,
		 "Pool capacity in bytes, K/M/G suffixes allowed (default 0: half of the RAM)");
module_param_cb(uid_quota, &npushm_bytes_param_ops, &npushm_uid_quota, 0644);
MODULE_PARM_DESC(uid_quota,
		 "Bytes one uid may hold, K/M/G suffixes allowed (default 0: no limit)");

struct npushm_uid_usage {
	u64 bytes;
	u32 regions;
};

static struct {
	struct mutex lock;	/* protects everything below */
	u64 in_use;
	u64 peak;
	u64 regions;
	u64 failed;
	struct xarray uids;	/* uid -> struct npushm_uid_usage */
} npushm_pool;

/**
 * npushm_pool_capacity - the pool's capacity in bytes
 *
 * Return: the "capacity" parameter, or half of the RAM when it is 0.
 */
u64 npushm_pool_capacity(void)
{
	u64 cap = READ_ONCE(npushm_capacity);

	return cap ? cap : (u64)totalram_pages() * PAGE_SIZE / 2;
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

static unsigned long npushm_uid_key(kuid_t uid)
{
	return from_kuid(&init_user_ns, uid);
}

/**
 * npushm_pool_charge - reserve @bytes of the pool for @uid
 * @uid: the owner charged
 * @bytes: size of the region
 *
 * Return: 0, -ENOMEM when the pool lacks room, -EDQUOT when @uid would
 * exceed its quota.
 */
int npushm_pool_charge(kuid_t uid, u64 bytes)
{
	struct npushm_uid_usage *use, *fresh;
	u64 quota = npushm_pool_uid_quota();
	u64 cap = npushm_pool_capacity();
	int ret;

	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL);
	if (!fresh)
		return -ENOMEM;

	mutex_lock(&npushm_pool.lock);
	use = xa_load(&npushm_pool.uids, npushm_uid_key(uid));
	if (quota && bytes + (use ? use->bytes : 0) > quota) {
		ret = -EDQUOT;
		goto out_unlock;
	}
	if (npushm_pool.in_use > cap || bytes > cap - npushm_pool.in_use) {
		ret = -ENOMEM;
		goto out_unlock;
	}
	if (!use) {
		ret = xa_insert(&npushm_pool.uids, npushm_uid_key(uid), fresh,
				GFP_KERNEL);
		if (ret)
			goto out_unlock;
		use = fresh;
		fresh = NULL;
	}
	use->bytes += bytes;
	use->regions++;
	npushm_pool.in_use += bytes;
	npushm_pool.regions++;
	npushm_pool.peak = max(npushm_pool.peak, npushm_pool.in_use);
	ret = 0;
out_unlock:
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
	struct npushm_uid_usage *use;

	mutex_lock(&npushm_pool.lock);
	use = xa_load(&npushm_pool.uids, npushm_uid_key(uid));
	if (!WARN_ON_ONCE(!use || use->bytes < bytes || !use->regions)) {
		use->bytes -= bytes;
		if (!--use->regions) {
			xa_erase(&npushm_pool.uids, npushm_uid_key(uid));
			kfree(use);
		}
	}
	npushm_pool.in_use -= bytes;
	npushm_pool.regions--;
	mutex_unlock(&npushm_pool.lock);
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

/**
 * npushm_pool_query - fill the pool fields of NPUSHM_IOC_QUERY's reply
 * @q: the reply
 * @uid: the caller, whose use is reported
 */
void npushm_pool_query(struct npushm_query *q, kuid_t uid)
{
	struct npushm_uid_usage *use;

	q->capacity = npushm_pool_capacity();
	q->uid_quota = npushm_pool_uid_quota();
	mutex_lock(&npushm_pool.lock);
	q->in_use = npushm_pool.in_use;
	q->regions = npushm_pool.regions;
	use = xa_load(&npushm_pool.uids, npushm_uid_key(uid));
	q->uid_in_use = use ? use->bytes : 0;
	mutex_unlock(&npushm_pool.lock);
}

static int npushm_pool_put_uid(struct sk_buff *skb, unsigned long key,
			       const struct npushm_uid_usage *use)
{
	struct user_namespace *ns = current_user_ns();
	struct nlattr *nest;

	nest = nla_nest_start(skb, NPUSHM_A_UID_USAGE);
	if (!nest)
		return -EMSGSIZE;
	if (nla_put_u32(skb, NPUSHM_A_UID,
			from_kuid_munged(ns, make_kuid(&init_user_ns, key))) ||
	    nla_put_u64_64bit(skb, NPUSHM_A_UID_BYTES, use->bytes, NPUSHM_A_PAD) ||
	    nla_put_u32(skb, NPUSHM_A_UID_REGIONS, use->regions)) {
		nla_nest_cancel(skb, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	return 0;
}

/**
 * npushm_pool_fill_stats - put the pool statistics into a netlink message
 * @skb: the message
 * @only_uid: the uid whose usage is reported unless @all_uids
 * @all_uids: report every uid's usage
 *
 * Return: 0 or -EMSGSIZE.
 */
int npushm_pool_fill_stats(struct sk_buff *skb, kuid_t only_uid, bool all_uids)
{
	struct npushm_uid_usage *use;
	unsigned long key;
	int ret = -EMSGSIZE;

	mutex_lock(&npushm_pool.lock);
	if (nla_put_u64_64bit(skb, NPUSHM_A_STATS_CAPACITY,
			      npushm_pool_capacity(), NPUSHM_A_PAD) ||
	    nla_put_u64_64bit(skb, NPUSHM_A_STATS_IN_USE, npushm_pool.in_use,
			      NPUSHM_A_PAD) ||
	    nla_put_u64_64bit(skb, NPUSHM_A_STATS_PEAK, npushm_pool.peak,
			      NPUSHM_A_PAD) ||
	    nla_put_u64_64bit(skb, NPUSHM_A_STATS_REGIONS, npushm_pool.regions,
			      NPUSHM_A_PAD) ||
	    nla_put_u64_64bit(skb, NPUSHM_A_STATS_FAILED_ALLOCS,
			      npushm_pool.failed, NPUSHM_A_PAD) ||
	    nla_put_u64_64bit(skb, NPUSHM_A_STATS_UID_QUOTA,
			      npushm_pool_uid_quota(), NPUSHM_A_PAD))
		goto out_unlock;
	if (all_uids) {
		xa_for_each(&npushm_pool.uids, key, use)
			if (npushm_pool_put_uid(skb, key, use))
				goto out_unlock;
	} else {
		key = npushm_uid_key(only_uid);
		use = xa_load(&npushm_pool.uids, key);
		if (use && npushm_pool_put_uid(skb, key, use))
			goto out_unlock;
	}
	ret = 0;
out_unlock:
	mutex_unlock(&npushm_pool.lock);
	return ret;
}

/**
 * npushm_pool_init - set up the pool's accounting
 *
 * Return: 0.
 */
int npushm_pool_init(void)
{
	mutex_init(&npushm_pool.lock);
	xa_init(&npushm_pool.uids);
	return 0;
}

/**
 * npushm_pool_exit - tear down the accounting; every region is gone by now
 */
void npushm_pool_exit(void)
{
	struct npushm_uid_usage *use;
	unsigned long key;

	WARN_ON(npushm_pool.in_use || npushm_pool.regions);
	xa_for_each(&npushm_pool.uids, key, use)
		kfree(use);
	xa_destroy(&npushm_pool.uids);
}
