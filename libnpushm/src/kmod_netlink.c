/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * kmod_netlink.c - the module's generic netlink family through libnl:
 * the region dump (NPUSHM_CMD_REGION_GET, one message per region) and the
 * pool statistics (NPUSHM_CMD_STATS_GET). The kernel decides what the
 * caller may see: the regions it owns, every region for an administrator.
 * Attributes we do not know are ignored (the family may grow); a region
 * message without an id is skipped.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>

#include <linux/npushm.h>

#include "internal.h"

struct dump_ctx {
	struct npi_kmod_region *regions;
	size_t n, cap;
	struct npi_kmod_stats *stats;
	npushm_status_t st;
};

static uint32_t get_u32(const struct nlattr *a)
{
	return nla_len(a) >= 4 ? nla_get_u32((struct nlattr *)a) : 0;
}

static uint64_t get_u64(const struct nlattr *a)
{
	return nla_len(a) >= 8 ? nla_get_u64((struct nlattr *)a) : 0;
}

/* A string attribute into @buf, cut to fit, NUL-terminated even if it was not. */
static void get_string(const struct nlattr *a, char *buf, size_t len)
{
	size_t n = (size_t)nla_len(a);

	n = strnlen(nla_data(a), n < len ? n : len - 1);
	memcpy(buf, nla_data(a), n);
	buf[n] = '\0';
}

static int on_region(struct nl_msg *msg, void *arg)
{
	struct dump_ctx *ctx = arg;
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct npi_kmod_region r = { 0 };
	bool have_id = false;
	struct nlattr *a;
	int rem;

	if (ctx->st)
		return NL_SKIP;
	nla_for_each_attr(a, genlmsg_attrdata(nlmsg_data(nlh), 0),
			  genlmsg_attrlen(nlmsg_data(nlh), 0), rem) {
		switch (nla_type(a)) {
		case NPUSHM_A_REGION_ID: r.id = get_u64(a); have_id = true; break;
		case NPUSHM_A_REGION_SIZE: r.size = get_u64(a); break;
		case NPUSHM_A_REGION_OWNER_UID: r.owner_uid = get_u32(a); break;
		case NPUSHM_A_REGION_OWNER_GID: r.owner_gid = get_u32(a); break;
		case NPUSHM_A_REGION_MODE: r.mode = get_u32(a); break;
		case NPUSHM_A_REGION_SEALED: r.sealed = true; break;
		case NPUSHM_A_REGION_ANONYMOUS: r.anonymous = true; break;
		case NPUSHM_A_REGION_NAMES: r.names = get_u32(a); break;
		case NPUSHM_A_REGION_HANDLES: r.handles = get_u32(a); break;
		case NPUSHM_A_REGION_MAPPINGS: r.mappings = get_u32(a); break;
		case NPUSHM_A_REGION_DMABUFS: r.dmabufs = get_u32(a); break;
		case NPUSHM_A_REGION_MAPPED_BYTES: r.mapped_bytes = get_u64(a); break;
		case NPUSHM_A_REGION_MAPPERS: r.mappers = get_u32(a); break;
		case NPUSHM_A_REGION_PINNED_BYTES: r.pinned_bytes = get_u64(a); break;
		case NPUSHM_A_REGION_DEV: r.dev = get_u32(a); break;
		case NPUSHM_A_PROVIDER_NAME: get_string(a, r.provider, sizeof(r.provider)); break;
		case NPUSHM_A_PROVIDER_DEVICE: get_string(a, r.device, sizeof(r.device)); break;
		}
	}
	if (!have_id)
		return NL_OK;
	if (ctx->n == ctx->cap) {
		size_t cap = ctx->cap ? ctx->cap * 2 : 64;
		struct npi_kmod_region *p = realloc(ctx->regions, cap * sizeof(*p));

		if (!p) {
			ctx->st = npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot grow the region dump");
			return NL_SKIP;
		}
		ctx->regions = p;
		ctx->cap = cap;
	}
	ctx->regions[ctx->n++] = r;
	return NL_OK;
}

static int on_stats(struct nl_msg *msg, void *arg)
{
	struct dump_ctx *ctx = arg;
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct npi_kmod_stats *s = ctx->stats;
	struct nlattr *a, *u;
	int rem, urem;

	nla_for_each_attr(a, genlmsg_attrdata(nlmsg_data(nlh), 0),
			  genlmsg_attrlen(nlmsg_data(nlh), 0), rem) {
		switch (nla_type(a)) {
		case NPUSHM_A_STATS_CAPACITY: s->capacity = get_u64(a); break;
		case NPUSHM_A_STATS_IN_USE: s->in_use = get_u64(a); break;
		case NPUSHM_A_STATS_REGIONS: s->regions = get_u64(a); break;
		case NPUSHM_A_STATS_UID_QUOTA: s->uid_quota = get_u64(a); break;
		case NPUSHM_A_STATS_ORPHAN_PINNED: s->orphan_pinned = get_u64(a); break;
		case NPUSHM_A_UID_USAGE:
			nla_for_each_nested(u, a, urem)
				if (nla_type(u) == NPUSHM_A_UID_BYTES)
					s->uid_in_use = get_u64(u);
			break;
		}
	}
	return NL_OK;
}

static npushm_status_t request(uint8_t cmd, int flags, nl_recvmsg_msg_cb_t handler,
			       struct dump_ctx *ctx)
{
	struct nl_sock *sk = nl_socket_alloc();
	struct nl_msg *msg = NULL;
	npushm_status_t st = NPUSHM_OK;
	int family, err;

	if (!sk)
		return npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot allocate a netlink socket");
	err = genl_connect(sk);
	if (err < 0) {
		st = npi_fail(NPUSHM_ERR_SYSTEM, 0, "cannot connect to generic netlink: %s", nl_geterror(err));
		goto out_free_sock;
	}
	family = genl_ctrl_resolve(sk, NPUSHM_GENL_NAME);
	if (family < 0) {
		st = npi_fail(NPUSHM_ERR_UNSUPPORTED, 0,
			      "the generic netlink family '%s' is not registered (%s); is the npushm module loaded?",
			      NPUSHM_GENL_NAME, nl_geterror(family));
		goto out_free_sock;
	}
	msg = nlmsg_alloc();
	if (!msg || !genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, flags, cmd,
				 NPUSHM_GENL_VERSION)) {
		st = npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot build a netlink request");
		goto out_free_msg;
	}
	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, handler, ctx);
	err = nl_send_auto(sk, msg);
	if (err >= 0)
		err = nl_recvmsgs_default(sk);
	if (err < 0) {
		st = npi_fail(NPUSHM_ERR_SYSTEM, 0, "the npushm netlink request %u failed: %s", cmd,
			      nl_geterror(err));
		goto out_free_msg;
	}
	st = ctx->st;
out_free_msg:
	nlmsg_free(msg);
out_free_sock:
	nl_socket_free(sk);
	return st;
}

npushm_status_t npi_kmod_netlink_regions(struct npi_kmod_region **regions, size_t *n)
{
	struct dump_ctx ctx = { .st = NPUSHM_OK };
	npushm_status_t st = request(NPUSHM_CMD_REGION_GET, NLM_F_DUMP, on_region, &ctx);

	if (st) {
		free(ctx.regions);
		return st;
	}
	*regions = ctx.regions;
	*n = ctx.n;
	return NPUSHM_OK;
}

npushm_status_t npi_kmod_netlink_stats(struct npi_kmod_stats *stats)
{
	struct dump_ctx ctx = { .stats = stats, .st = NPUSHM_OK };

	memset(stats, 0, sizeof(*stats));
	return request(NPUSHM_CMD_STATS_GET, 0, on_stats, &ctx);
}
