/* SPDX-License-Identifier: MIT */
/*
 * kmod_netlink.c - list the module's regions over generic netlink (libnl).
 *
 * One NPUSHM_CMD_REGION_GET dump; every message is one region, whose
 * NPUSHM_A_REGION_NAME nests repeat once per name. Attributes we do not
 * know are ignored (the family may grow); a message without a region id is
 * skipped. The kernel decides what the caller may see.
 */
#include <errno.h>
#include <string.h>

#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>

#include <linux/npushm.h>

#include "internal.h"

struct dump_ctx {
	struct npushm_region_list *list;
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

static npushm_status_t add_name(npushm_region_entry_t *e, struct nlattr *nest)
{
	struct nlattr *a;
	const char *name = NULL;
	uint32_t mode = 0, uid = 0, gid = 0;
	bool persistent = false;
	int rem;

	nla_for_each_nested(a, nest, rem) {
		switch (nla_type(a)) {
		case NPUSHM_A_NAME_STRING:
			if (nla_len(a) > 0 && memchr(nla_data(a), '\0', (size_t)nla_len(a)))
				name = nla_data(a);
			break;
		case NPUSHM_A_NAME_MODE:
			mode = get_u32(a);
			break;
		case NPUSHM_A_NAME_UID:
			uid = get_u32(a);
			break;
		case NPUSHM_A_NAME_GID:
			gid = get_u32(a);
			break;
		case NPUSHM_A_NAME_PERSISTENT:
			persistent = true;
			break;
		}
	}
	if (!name)
		return NPUSHM_OK;
	return npi_list_add_name(e, name, mode, uid, gid, persistent);
}

static int on_region(struct nl_msg *msg, void *arg)
{
	struct dump_ctx *ctx = arg;
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	npushm_region_entry_t *e;
	struct nlattr *a;
	bool have_id = false;
	int rem;

	if (ctx->st)
		return NL_SKIP;
	nla_for_each_attr(a, genlmsg_attrdata(nlmsg_data(nlh), 0),
			  genlmsg_attrlen(nlmsg_data(nlh), 0), rem)
		if (nla_type(a) == NPUSHM_A_REGION_ID)
			have_id = true;
	if (!have_id)
		return NL_OK;
	e = npi_list_add(ctx->list);
	if (!e) {
		ctx->st = NPUSHM_ERR_NO_MEMORY;
		return NL_SKIP;
	}
	e->handles = e->mappings = e->dmabufs = e->mappers = NPUSHM_COUNT_UNKNOWN;
	e->mapped_bytes = UINT64_MAX;
	nla_for_each_attr(a, genlmsg_attrdata(nlmsg_data(nlh), 0),
			  genlmsg_attrlen(nlmsg_data(nlh), 0), rem) {
		switch (nla_type(a)) {
		case NPUSHM_A_REGION_ID: e->id = get_u64(a); break;
		case NPUSHM_A_REGION_SIZE: e->size = get_u64(a); break;
		case NPUSHM_A_REGION_OWNER_UID: e->owner_uid = get_u32(a); break;
		case NPUSHM_A_REGION_OWNER_GID: e->owner_gid = get_u32(a); break;
		case NPUSHM_A_REGION_SEALED: e->flags |= NPUSHM_REGION_SEALED; break;
		case NPUSHM_A_REGION_PERSISTENT: e->flags |= NPUSHM_REGION_PERSISTENT; break;
		case NPUSHM_A_REGION_HANDLES: e->handles = get_u32(a); break;
		case NPUSHM_A_REGION_MAPPINGS: e->mappings = get_u32(a); break;
		case NPUSHM_A_REGION_DMABUFS: e->dmabufs = get_u32(a); break;
		case NPUSHM_A_REGION_MAPPED_BYTES: e->mapped_bytes = get_u64(a); break;
		case NPUSHM_A_REGION_MAPPERS: e->mappers = get_u32(a); break;
		case NPUSHM_A_REGION_NAME:
			ctx->st = add_name(e, a);
			if (ctx->st)
				return NL_SKIP;
			e->flags |= NPUSHM_REGION_NAMED;
			break;
		}
	}
	return NL_OK;
}

npushm_status_t npi_kmod_netlink_list(struct npushm_region_list *list)
{
	struct dump_ctx ctx = { .list = list, .st = NPUSHM_OK };
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
	if (!msg || !genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, NLM_F_DUMP,
				 NPUSHM_CMD_REGION_GET, NPUSHM_GENL_VERSION)) {
		st = npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot build a netlink request");
		goto out_free_msg;
	}
	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, on_region, &ctx);
	err = nl_send_auto(sk, msg);
	if (err >= 0)
		err = nl_recvmsgs_default(sk);
	if (err < 0) {
		st = npi_fail(NPUSHM_ERR_SYSTEM, 0, "the netlink region dump failed: %s", nl_geterror(err));
		goto out_free_msg;
	}
	st = ctx.st;
out_free_msg:
	nlmsg_free(msg);
out_free_sock:
	nl_socket_free(sk);
	return st;
}
