/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * rdma_verbs.c - libibverbs through dlopen: loaded once per process, at the
 * first communicator that looks for an RDMA device, and kept (providers
 * register themselves at load time and must not be unloaded under live
 * contexts). A missing library or symbol is a reason, not an error: the
 * communicator then uses TCP between hosts unless NPCCL_TRANSPORT=rdma.
 */
#include "npccl_internal.h"
#include "transport/transport.h"
#include "transport/rdma_verbs.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static struct verbs_api api;
static char api_why[256];
static bool api_ok;
static pthread_once_t api_once = PTHREAD_ONCE_INIT;

#define LOAD(field, sym)                                                            \
	do {                                                                        \
		*(void **)&api.field = dlsym(lib, sym);                             \
		if (!api.field) {                                                   \
			snprintf(api_why, sizeof(api_why),                          \
				 "libibverbs.so.1 has no %s (rdma-core too old?)", sym);    \
			return;                                                     \
		}                                                                   \
	} while (0)

static void api_load(void)
{
	void *lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *e = dlerror();
		snprintf(api_why, sizeof(api_why), "libibverbs.so.1 cannot be loaded (%s): install "
			 "rdma-core's libibverbs1 for RDMA", e ? e : "dlopen failed");
		return;
	}
	LOAD(get_device_list, "ibv_get_device_list");
	LOAD(free_device_list, "ibv_free_device_list");
	LOAD(get_device_name, "ibv_get_device_name");
	LOAD(open_device, "ibv_open_device");
	LOAD(close_device, "ibv_close_device");
	LOAD(query_device, "ibv_query_device");
	LOAD(query_port_compat, "ibv_query_port");
	LOAD(query_gid, "ibv_query_gid");
	LOAD(alloc_pd, "ibv_alloc_pd");
	LOAD(dealloc_pd, "ibv_dealloc_pd");
	LOAD(reg_mr, "ibv_reg_mr");
	LOAD(dereg_mr, "ibv_dereg_mr");
	LOAD(create_comp_channel, "ibv_create_comp_channel");
	LOAD(destroy_comp_channel, "ibv_destroy_comp_channel");
	LOAD(create_cq, "ibv_create_cq");
	LOAD(destroy_cq, "ibv_destroy_cq");
	LOAD(get_cq_event, "ibv_get_cq_event");
	LOAD(ack_cq_events, "ibv_ack_cq_events");
	LOAD(create_qp, "ibv_create_qp");
	LOAD(modify_qp, "ibv_modify_qp");
	LOAD(destroy_qp, "ibv_destroy_qp");
	LOAD(wc_status_str, "ibv_wc_status_str");
	*(void **)&api.query_gid_ex = dlsym(lib, "_ibv_query_gid_ex");
	api_ok = true;
}

const struct verbs_api *verbs_api_get(char *why, size_t len)
{
	pthread_once(&api_once, api_load);
	if (!api_ok && why)
		snprintf(why, len, "%s", api_why);
	return api_ok ? &api : NULL;
}

int rdma_query_port(const struct verbs_api *v, struct ibv_context *ctx, uint8_t port,
		    struct ibv_port_attr *attr)
{
	struct verbs_context *vctx = verbs_get_ctx_op(ctx, query_port);
	memset(attr, 0, sizeof(*attr));
	if (vctx)
		return vctx->query_port(ctx, port, attr, sizeof(*attr));
	return v->query_port_compat(ctx, port, attr);
}
