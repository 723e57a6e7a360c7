// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * netlink.c - the generic netlink family "npushm": region statistics, pool
 * statistics and per-uid usage.
 *
 * Global figures (every region, every uid) are for callers that
 * netlink_capable(CAP_SYS_ADMIN) in the initial user namespace: the socket's
 * opener and the sender both. Anyone else sees the regions whose file it
 * owns and its own uid, and the pool-wide statistics only in the initial
 * user and network namespaces (the opener's user namespace, the socket's
 * network namespace), its own usage in their place elsewhere. A dump
 * decides this once, at its start, with the
 * socket opener's credentials, and keeps them: whoever calls recvmsg() for
 * the rest of the dump changes nothing. Uids are reported in the opener's
 * user namespace.
 *
 * Dumps hold npushm_regions_lock only to find the next region and take a
 * reference on it (its instance active, its inode): the message, with its
 * O(pages) pin scan, is filled under the region's lock alone.
 *
 * Every message has a fixed set of attributes: a region's names are not
 * reported (they are the filesystem's, and may be many), and uids come one
 * message each. There is no multicast group: an instance is watched with
 * inotify or fanotify, which check the watcher's access to it.
 */
#include <linux/cred.h>
#include <linux/device.h>
#include <linux/kdev_t.h>
#include <linux/net.h>
#include <linux/xarray.h>
#include <net/genetlink.h>
#include <net/sock.h>

#include "npushm_internal.h"

static const struct nla_policy npushm_nl_policy[NPUSHM_A_MAX + 1] = {
	[NPUSHM_A_REGION_ID] = { .type = NLA_U64 },
};

static struct genl_family npushm_nl_family;

/* What a dump keeps from its start, in cb->ctx. */
struct npushm_nl_dump {
	unsigned long pos;
	const struct cred *cred;
	bool admin;
};

/* The credentials of whoever opened the requesting socket. */
static const struct cred *npushm_nl_opener_cred(const struct sk_buff *skb)
{
	struct sock *sk = NETLINK_CB(skb).sk;

	if (sk && sk->sk_socket && sk->sk_socket->file)
		return get_cred(sk->sk_socket->file->f_cred);
	return get_current_cred();
}

static bool npushm_nl_visible(const struct npushm_region *region,
			      const struct cred *cred, bool admin)
{
	return admin || uid_eq(region->inode->i_uid, cred->euid);
}

/* A provider's name and device. Return: 0 or -EMSGSIZE. */
static int npushm_nl_put_provider_name(struct sk_buff *skb,
				       const struct npushm_provider *provider)
{
	if (nla_put_string(skb, NPUSHM_A_PROVIDER_NAME, provider->name) ||
	    (provider->dev && nla_put_string(skb, NPUSHM_A_PROVIDER_DEVICE,
					     dev_name(provider->dev))))
		return -EMSGSIZE;
	return 0;
}

/* Put one region message into @skb. Return: 0 or -EMSGSIZE. */
static int npushm_nl_fill_region(struct sk_buff *skb, struct npushm_region *region,
				 struct user_namespace *userns, u32 portid,
				 u32 seq, int flags)
{
	struct inode *inode = region->inode;
	unsigned int mappers;
	u64 mapped, pinned;
	void *hdr;

	hdr = genlmsg_put(skb, portid, seq, &npushm_nl_family, flags,
			  NPUSHM_CMD_REGION_GET);
	if (!hdr)
		return -EMSGSIZE;

	mutex_lock(&region->lock);
	npushm_region_map_stats(region, &mapped, &mappers);
	pinned = (u64)npushm_region_pinned_pages(region) << PAGE_SHIFT;
	if (nla_put_u64_64bit(skb, NPUSHM_A_REGION_ID, region->id, NPUSHM_A_PAD) ||
	    nla_put_u64_64bit(skb, NPUSHM_A_REGION_SIZE, region->size, NPUSHM_A_PAD) ||
	    nla_put_u32(skb, NPUSHM_A_REGION_OWNER_UID,
			from_kuid_munged(userns, inode->i_uid)) ||
	    nla_put_u32(skb, NPUSHM_A_REGION_OWNER_GID,
			from_kgid_munged(userns, inode->i_gid)) ||
	    nla_put_u32(skb, NPUSHM_A_REGION_MODE, inode->i_mode & 07777) ||
	    (region->sealed && nla_put_flag(skb, NPUSHM_A_REGION_SEALED)) ||
	    (region->anonymous && nla_put_flag(skb, NPUSHM_A_REGION_ANONYMOUS)) ||
	    nla_put_u32(skb, NPUSHM_A_REGION_NAMES, inode->i_nlink) ||
	    nla_put_u32(skb, NPUSHM_A_REGION_HANDLES, region->handles) ||
	    nla_put_u32(skb, NPUSHM_A_REGION_MAPPINGS, region->nr_vmas) ||
	    nla_put_u32(skb, NPUSHM_A_REGION_DMABUFS, region->dmabufs) ||
	    nla_put_u64_64bit(skb, NPUSHM_A_REGION_MAPPED_BYTES, mapped,
			      NPUSHM_A_PAD) ||
	    nla_put_u32(skb, NPUSHM_A_REGION_MAPPERS, mappers) ||
	    nla_put_u64_64bit(skb, NPUSHM_A_REGION_PINNED_BYTES, pinned,
			      NPUSHM_A_PAD) ||
	    (region->size &&
	     nla_put_u32(skb, NPUSHM_A_REGION_CHARGED_UID,
			 from_kuid_munged(userns, region->charged))) ||
	    nla_put_u32(skb, NPUSHM_A_REGION_DEV,
			new_encode_dev(inode->i_sb->s_dev)) ||
	    npushm_nl_put_provider_name(skb, region->provider) ||
	    (npushm_provider_revoked(region->provider) &&
	     nla_put_flag(skb, NPUSHM_A_REGION_REVOKED))) {
		mutex_unlock(&region->lock);
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	mutex_unlock(&region->lock);
	genlmsg_end(skb, hdr);
	return 0;
}

static int npushm_nl_dump_start(struct netlink_callback *cb)
{
	struct npushm_nl_dump *ctx = (void *)cb->ctx;

	BUILD_BUG_ON(sizeof(*ctx) > sizeof(cb->ctx));
	ctx->pos = 0;
	ctx->cred = npushm_nl_opener_cred(cb->skb);
	ctx->admin = netlink_capable(cb->skb, CAP_SYS_ADMIN);
	return 0;
}

static int npushm_nl_dump_done(struct netlink_callback *cb)
{
	struct npushm_nl_dump *ctx = (void *)cb->ctx;

	put_cred(ctx->cred);
	return 0;
}

/*
 * Take a region found under npushm_regions_lock: its instance stays active
 * (no unmount can find the inode busy) and its inode referenced. Fails for
 * an instance being unmounted or an inode being evicted. On failure, *@drop
 * is an instance to deactivate once the lock is dropped.
 */
static bool npushm_nl_get_region(struct npushm_region *region,
				 struct super_block **drop)
{
	struct super_block *sb = region->inode->i_sb;

	lockdep_assert_held(&npushm_regions_lock);
	if (!atomic_inc_not_zero(&sb->s_active))
		return false;
	if (igrab(region->inode))
		return true;
	*drop = sb;
	return false;
}

/* Undo npushm_nl_get_region(); not under npushm_regions_lock (may evict). */
static void npushm_nl_put_region(struct npushm_region *region)
{
	struct super_block *sb = region->inode->i_sb;

	iput(region->inode);
	deactivate_super(sb);
}

/*
 * The next region from *@pos that @cred may see, taken, or NULL; *@pos is
 * its index (creation order: regions made during a dump come after it).
 * The global lock is held only to find it: filling its message (a scan of
 * its pages for pins, an allocation) runs without, so creation and
 * eviction elsewhere never wait for a dump.
 */
static struct npushm_region *npushm_nl_next_region(unsigned long *pos,
						   const struct cred *cred,
						   bool admin)
{
	struct npushm_region *region, *found = NULL;
	struct super_block *drop = NULL;
	unsigned long id;

	mutex_lock(&npushm_regions_lock);
	xa_for_each_start(&npushm_regions, id, region, *pos) {
		if (npushm_nl_visible(region, cred, admin) &&
		    npushm_nl_get_region(region, &drop)) {
			found = region;
			*pos = id;
			break;
		}
		if (drop)
			break;
	}
	mutex_unlock(&npushm_regions_lock);
	if (drop) {
		/* An inode being evicted: go on after it, unlocked. */
		deactivate_super(drop);
		*pos = id + 1;
		return npushm_nl_next_region(pos, cred, admin);
	}
	return found;
}

static int npushm_nl_region_dumpit(struct sk_buff *skb,
				   struct netlink_callback *cb)
{
	struct npushm_nl_dump *ctx = (void *)cb->ctx;
	struct npushm_region *region;
	int ret = 0;

	while ((region = npushm_nl_next_region(&ctx->pos, ctx->cred,
					       ctx->admin))) {
		ret = npushm_nl_fill_region(skb, region, ctx->cred->user_ns,
					    NETLINK_CB(cb->skb).portid,
					    cb->nlh->nlmsg_seq, NLM_F_MULTI);
		npushm_nl_put_region(region);
		if (ret)
			break;
		ctx->pos++;
	}
	/* A message always fits an empty skb: only a full one stops early. */
	if (ret && !skb->len)
		return ret;
	return skb->len;
}

static int npushm_nl_region_doit(struct sk_buff *skb, struct genl_info *info)
{
	bool admin = netlink_capable(skb, CAP_SYS_ADMIN);
	const struct cred *cred = npushm_nl_opener_cred(skb);
	struct super_block *drop = NULL;
	struct npushm_region *region;
	struct sk_buff *msg;
	u64 index;
	int ret;

	if (GENL_REQ_ATTR_CHECK(info, NPUSHM_A_REGION_ID)) {
		ret = -EINVAL;
		goto out_put_cred;
	}
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg) {
		ret = -ENOMEM;
		goto out_put_cred;
	}
	mutex_lock(&npushm_regions_lock);
	index = npushm_id_to_index(nla_get_u64(info->attrs[NPUSHM_A_REGION_ID]));
	region = index <= ULONG_MAX ? xa_load(&npushm_regions, index) : NULL;
	if (!region || !npushm_nl_visible(region, cred, admin) ||
	    !npushm_nl_get_region(region, &drop))
		region = NULL;
	mutex_unlock(&npushm_regions_lock);
	if (drop)
		deactivate_super(drop);
	if (region) {
		ret = npushm_nl_fill_region(msg, region, cred->user_ns,
					    info->snd_portid, info->snd_seq, 0);
		npushm_nl_put_region(region);
	} else {
		ret = -ENOENT;
	}
	put_cred(cred);
	if (ret) {
		nlmsg_free(msg);
		return ret;
	}
	return genlmsg_reply(msg, info);

out_put_cred:
	put_cred(cred);
	return ret;
}

static int npushm_nl_stats_doit(struct sk_buff *skb, struct genl_info *info)
{
	const struct cred *cred = npushm_nl_opener_cred(skb);
	struct sk_buff *msg;
	void *hdr;
	int ret;

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg) {
		ret = -ENOMEM;
		goto out_put_cred;
	}
	hdr = genlmsg_put(msg, info->snd_portid, info->snd_seq, &npushm_nl_family,
			  0, NPUSHM_CMD_STATS_GET);
	if (!hdr) {
		ret = -EMSGSIZE;
		goto out_free;
	}
	ret = npushm_pool_fill_stats(msg, cred->user_ns,
				     npushm_account_uid_in(cred->user_ns, cred->euid),
				     (cred->user_ns == &init_user_ns &&
				      genl_info_net(info) == &init_net) ||
				     netlink_capable(skb, CAP_SYS_ADMIN));
	if (ret)
		goto out_free;
	genlmsg_end(msg, hdr);
	put_cred(cred);
	return genlmsg_reply(msg, info);

out_free:
	nlmsg_free(msg);
out_put_cred:
	put_cred(cred);
	return ret;
}

struct npushm_nl_uid_put {
	struct netlink_callback *cb;
};

static int npushm_nl_put_uid(struct sk_buff *skb, void *arg, u32 uid,
			     u64 bytes, u32 regions)
{
	struct netlink_callback *cb = ((struct npushm_nl_uid_put *)arg)->cb;
	void *hdr;

	hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			  &npushm_nl_family, NLM_F_MULTI, NPUSHM_CMD_UID_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u32(skb, NPUSHM_A_UID, uid) ||
	    nla_put_u64_64bit(skb, NPUSHM_A_UID_BYTES, bytes, NPUSHM_A_PAD) ||
	    nla_put_u32(skb, NPUSHM_A_UID_REGIONS, regions)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

static int npushm_nl_uid_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct npushm_nl_dump *ctx = (void *)cb->ctx;
	struct npushm_nl_uid_put put = { .cb = cb };
	int ret;

	ret = npushm_pool_dump_uids(skb, ctx->cred->user_ns, ctx->admin,
				    npushm_account_uid_in(ctx->cred->user_ns,
							  ctx->cred->euid), &ctx->pos,
				    npushm_nl_put_uid, &put);
	if (ret && !skb->len)
		return ret;
	return skb->len;
}

struct npushm_nl_provider_put {
	struct sk_buff *skb;
	struct netlink_callback *cb;
	bool global;
};

static int npushm_nl_put_provider(void *arg, const struct npushm_provider *p,
				  u64 used)
{
	struct npushm_nl_provider_put *put = arg;
	struct sk_buff *skb = put->skb;
	void *hdr;

	hdr = genlmsg_put(skb, NETLINK_CB(put->cb->skb).portid,
			  put->cb->nlh->nlmsg_seq, &npushm_nl_family,
			  NLM_F_MULTI, NPUSHM_CMD_PROVIDER_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (npushm_nl_put_provider_name(skb, p) ||
	    nla_put_u64_64bit(skb, NPUSHM_A_PROVIDER_CAPACITY, p->capacity,
			      NPUSHM_A_PAD) ||
	    nla_put_u64_64bit(skb, NPUSHM_A_PROVIDER_CHUNK_SIZE,
			      PAGE_SIZE << p->chunk_order, NPUSHM_A_PAD) ||
	    (put->global &&
	     nla_put_u64_64bit(skb, NPUSHM_A_PROVIDER_IN_USE, used,
			       NPUSHM_A_PAD))) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

/* A provider's bytes in use are a pool-wide figure: initial namespaces only. */
static int npushm_nl_provider_dumpit(struct sk_buff *skb,
				     struct netlink_callback *cb)
{
	struct npushm_nl_dump *ctx = (void *)cb->ctx;
	struct npushm_nl_provider_put put = {
		.skb = skb,
		.cb = cb,
		.global = (ctx->cred->user_ns == &init_user_ns &&
			   sock_net(cb->skb->sk) == &init_net) || ctx->admin,
	};
	int ret;

	ret = npushm_provider_for_each(&ctx->pos, npushm_nl_put_provider, &put);
	if (ret && !skb->len)
		return ret;
	return skb->len;
}

static const struct genl_ops npushm_nl_ops[] = {
	{
		.cmd = NPUSHM_CMD_REGION_GET,
		.doit = npushm_nl_region_doit,
		.start = npushm_nl_dump_start,
		.dumpit = npushm_nl_region_dumpit,
		.done = npushm_nl_dump_done,
	},
	{
		.cmd = NPUSHM_CMD_STATS_GET,
		.doit = npushm_nl_stats_doit,
	},
	{
		.cmd = NPUSHM_CMD_UID_GET,
		.start = npushm_nl_dump_start,
		.dumpit = npushm_nl_uid_dumpit,
		.done = npushm_nl_dump_done,
	},
	{
		.cmd = NPUSHM_CMD_PROVIDER_GET,
		.start = npushm_nl_dump_start,
		.dumpit = npushm_nl_provider_dumpit,
		.done = npushm_nl_dump_done,
	},
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
};

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
 * npushm_netlink_exit - unregister it; requests in flight finish first
 */
void npushm_netlink_exit(void)
{
	genl_unregister_family(&npushm_nl_family);
}
