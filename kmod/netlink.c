// SPDX-License-Identifier: GPL-2.0
/*
 * netlink.c - the generic netlink family "npushm": region dumps, pool
 * statistics and a multicast group of events.
 *
 * Callers see only what their IPC namespace may see: regions named in it,
 * and regions created in it that they own (all of those with CAP_SYS_ADMIN
 * over the namespace). Names of other namespaces are never reported. Pool
 * statistics report the caller's own uid unless it has CAP_SYS_ADMIN.
 * Events about a region go to the network namespace its creator was in;
 * allocation failures to the caller's.
 */
#include <linux/cred.h>
#include <linux/ipc_namespace.h>
#include <linux/nsproxy.h>
#include <linux/sched.h>
#include <linux/xarray.h>
#include <net/genetlink.h>

#include "npushm_internal.h"

static const struct nla_policy npushm_nl_policy[NPUSHM_A_MAX + 1] = {
	[NPUSHM_A_REGION_ID] = { .type = NLA_U64 },
};

static struct genl_family npushm_nl_family;

/* Caller holds npushm_names_lock. */
static bool npushm_nl_named_here(struct npushm_region *region)
{
	struct npushm_name *name;

	list_for_each_entry(name, &region->names, link)
		if (npushm_ns_is_current(name->ns))
			return true;
	return false;
}

static bool npushm_nl_visible(struct npushm_region *region)
{
	struct user_namespace *userns = current->nsproxy->ipc_ns->user_ns;

	lockdep_assert_held(&npushm_names_lock);
	if (npushm_nl_named_here(region))
		return true;
	if (!npushm_ns_is_current(region->ns))
		return false;
	return uid_eq(region->owner, current_euid()) ||
	       ns_capable(userns, CAP_SYS_ADMIN);
}

static int npushm_nl_put_name(struct sk_buff *skb, struct npushm_name *name)
{
	struct user_namespace *userns = current_user_ns();
	struct nlattr *nest;

	nest = nla_nest_start(skb, NPUSHM_A_REGION_NAME);
	if (!nest)
		return -EMSGSIZE;
	if (nla_put_string(skb, NPUSHM_A_NAME_STRING, name->str) ||
	    nla_put_u32(skb, NPUSHM_A_NAME_MODE, name->mode) ||
	    nla_put_u32(skb, NPUSHM_A_NAME_UID, from_kuid_munged(userns, name->uid)) ||
	    nla_put_u32(skb, NPUSHM_A_NAME_GID, from_kgid_munged(userns, name->gid)) ||
	    (name->persistent && nla_put_flag(skb, NPUSHM_A_NAME_PERSISTENT))) {
		nla_nest_cancel(skb, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	return 0;
}

/*
 * Put one region message into @skb. Return: 0, -ENOENT if the caller may
 * not see it, -EMSGSIZE.
 */
static int npushm_nl_fill_region(struct sk_buff *skb, struct npushm_region *region,
				 u32 portid, u32 seq, int flags)
{
	struct user_namespace *userns = current_user_ns();
	struct npushm_name *name;
	unsigned int mappers;
	u64 mapped;
	void *hdr;
	int ret = -EMSGSIZE;

	mutex_lock(&npushm_names_lock);
	if (!npushm_nl_visible(region)) {
		mutex_unlock(&npushm_names_lock);
		return -ENOENT;
	}
	hdr = genlmsg_put(skb, portid, seq, &npushm_nl_family, flags,
			  NPUSHM_CMD_REGION_GET);
	if (!hdr)
		goto out_unlock_names;

	list_for_each_entry(name, &region->names, link)
		if (npushm_ns_is_current(name->ns) &&
		    npushm_nl_put_name(skb, name))
			goto out_cancel;

	mutex_lock(&region->lock);
	npushm_region_map_stats(region, &mapped, &mappers);
	if (nla_put_u64_64bit(skb, NPUSHM_A_REGION_ID, region->id, NPUSHM_A_PAD) ||
	    nla_put_u64_64bit(skb, NPUSHM_A_REGION_SIZE, region->size, NPUSHM_A_PAD) ||
	    nla_put_u32(skb, NPUSHM_A_REGION_OWNER_UID,
			from_kuid_munged(userns, region->owner)) ||
	    nla_put_u32(skb, NPUSHM_A_REGION_OWNER_GID,
			from_kgid_munged(userns, region->group)) ||
	    (region->sealed && nla_put_flag(skb, NPUSHM_A_REGION_SEALED)) ||
	    (region->nr_persistent &&
	     nla_put_flag(skb, NPUSHM_A_REGION_PERSISTENT)) ||
	    nla_put_u32(skb, NPUSHM_A_REGION_HANDLES, region->handles) ||
	    nla_put_u32(skb, NPUSHM_A_REGION_MAPPINGS, region->nr_vmas) ||
	    nla_put_u32(skb, NPUSHM_A_REGION_DMABUFS, region->dmabufs) ||
	    nla_put_u64_64bit(skb, NPUSHM_A_REGION_MAPPED_BYTES, mapped,
			      NPUSHM_A_PAD) ||
	    nla_put_u32(skb, NPUSHM_A_REGION_MAPPERS, mappers)) {
		mutex_unlock(&region->lock);
		goto out_cancel;
	}
	mutex_unlock(&region->lock);
	mutex_unlock(&npushm_names_lock);
	genlmsg_end(skb, hdr);
	return 0;

out_cancel:
	genlmsg_cancel(skb, hdr);
out_unlock_names:
	mutex_unlock(&npushm_names_lock);
	return ret;
}

static struct npushm_region *npushm_nl_next_region(unsigned long *id)
{
	struct npushm_region *region;

	rcu_read_lock();
	for (;;) {
		region = xa_find(&npushm_regions, id, ULONG_MAX, XA_PRESENT);
		if (!region || npushm_region_tryget(region))
			break;
		(*id)++;
	}
	rcu_read_unlock();
	return region;
}

static int npushm_nl_region_dumpit(struct sk_buff *skb,
				   struct netlink_callback *cb)
{
	unsigned long id = cb->args[0];
	struct npushm_region *region;
	int ret;

	while ((region = npushm_nl_next_region(&id))) {
		ret = npushm_nl_fill_region(skb, region, NETLINK_CB(cb->skb).portid,
					    cb->nlh->nlmsg_seq, NLM_F_MULTI);
		npushm_region_put(region);
		if (ret == -EMSGSIZE) {
			if (!skb->len)
				return ret;
			break;
		}
		id++;
	}
	cb->args[0] = id;
	return skb->len;
}

static int npushm_nl_region_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct npushm_region *region;
	struct sk_buff *msg;
	unsigned long id;
	int ret;

	if (GENL_REQ_ATTR_CHECK(info, NPUSHM_A_REGION_ID))
		return -EINVAL;
	id = nla_get_u64(info->attrs[NPUSHM_A_REGION_ID]);
	rcu_read_lock();
	region = xa_load(&npushm_regions, id);
	if (region && !npushm_region_tryget(region))
		region = NULL;
	rcu_read_unlock();
	if (!region)
		return -ENOENT;
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg) {
		ret = -ENOMEM;
		goto out_put;
	}
	ret = npushm_nl_fill_region(msg, region, info->snd_portid, info->snd_seq, 0);
	if (ret) {
		nlmsg_free(msg);
		goto out_put;
	}
	npushm_region_put(region);
	return genlmsg_reply(msg, info);

out_put:
	npushm_region_put(region);
	return ret;
}

static int npushm_nl_stats_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct user_namespace *userns = current->nsproxy->ipc_ns->user_ns;
	struct sk_buff *msg;
	void *hdr;
	int ret;

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put(msg, info->snd_portid, info->snd_seq, &npushm_nl_family,
			  0, NPUSHM_CMD_STATS_GET);
	if (!hdr) {
		ret = -EMSGSIZE;
		goto out_free;
	}
	ret = npushm_pool_fill_stats(msg, current_euid(),
				     ns_capable(userns, CAP_SYS_ADMIN));
	if (ret)
		goto out_free;
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);

out_free:
	nlmsg_free(msg);
	return ret;
}

static const struct genl_ops npushm_nl_ops[] = {
	{
		.cmd = NPUSHM_CMD_REGION_GET,
		.doit = npushm_nl_region_doit,
		.dumpit = npushm_nl_region_dumpit,
	},
	{
		.cmd = NPUSHM_CMD_STATS_GET,
		.doit = npushm_nl_stats_doit,
	},
};

static const struct genl_multicast_group npushm_nl_mcgrps[] = {
	{ .name = NPUSHM_GENL_MCGRP_EVENTS },
};

static struct genl_family npushm_nl_family = {
	.name = NPUSHM_GENL_NAME,
	.version = NPUSHM_GENL_VERSION,
	.maxattr = NPUSHM_A_MAX,
	.policy = npushm_nl_policy,
	.netnsok = true,
	.parallel_ops = true,
	.module = THIS_MODULE,
	.ops = npushm_nl_ops,
	.n_ops = ARRAY_SIZE(npushm_nl_ops),
	.resv_start_op = NPUSHM_CMD_REGION_GET,
	.mcgrps = npushm_nl_mcgrps,
	.n_mcgrps = ARRAY_SIZE(npushm_nl_mcgrps),
};

/**
 * npushm_event - announce something that happened to a region
 * @type: what happened
 * @region: the region, or NULL (NPUSHM_EVENT_ALLOC_FAILED)
 * @name: the name published or unlinked, or NULL
 * @size: the region's size, or the size asked for
 * @err: the negative errno of a failure, else 0
 */
void npushm_event(enum npushm_genl_event type, struct npushm_region *region,
		  const char *name, u64 size, int err)
{
	struct net *net = region ? region->net : current->nsproxy->net_ns;
	u32 pid = (current->flags & PF_KTHREAD) ? 0 : task_tgid_vnr(current);
	struct sk_buff *skb;
	void *hdr;

	if (!genl_has_listeners(&npushm_nl_family, net, 0))
		return;
	skb = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!skb)
		return;
	hdr = genlmsg_put(skb, 0, 0, &npushm_nl_family, 0, NPUSHM_CMD_EVENT);
	if (!hdr)
		goto out_free;
	if (nla_put_u32(skb, NPUSHM_A_EVENT_TYPE, type) ||
	    nla_put_u32(skb, NPUSHM_A_EVENT_PID, pid) ||
	    nla_put_u64_64bit(skb, NPUSHM_A_REGION_SIZE, size, NPUSHM_A_PAD) ||
	    (err && nla_put_u32(skb, NPUSHM_A_EVENT_ERRNO, -err)) ||
	    (name && nla_put_string(skb, NPUSHM_A_EVENT_NAME, name)))
		goto out_free;
	if (region &&
	    (nla_put_u64_64bit(skb, NPUSHM_A_REGION_ID, region->id, NPUSHM_A_PAD) ||
	     nla_put_u32(skb, NPUSHM_A_REGION_OWNER_UID,
			 from_kuid(&init_user_ns, region->owner))))
		goto out_free;
	genlmsg_end(skb, hdr);
	genlmsg_multicast_netns(&npushm_nl_family, net, skb, 0, 0, GFP_KERNEL);
	return;

out_free:
	nlmsg_free(skb);
}

/**
 * npushm_netlink_init - register the generic netlink family
 *
 * Return: 0 or -errno.
 */
int npushm_netlink_init(void)
{
	return genl_register_family(&npushm_nl_family);
}

/**
 * npushm_netlink_exit - unregister it
 */
void npushm_netlink_exit(void)
{
	genl_unregister_family(&npushm_nl_family);
}
