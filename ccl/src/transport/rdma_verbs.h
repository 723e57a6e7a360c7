/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * rdma_verbs.h - the libibverbs functions the RDMA transport calls, through
 * a table filled by dlopen("libibverbs.so.1") at the first communicator that
 * looks for an RDMA device (rdma_verbs.c). libnpccl does not link
 * libibverbs, so hosts without rdma-core run every other transport; the
 * data path's calls (post_send, post_recv, poll_cq, req_notify_cq) are
 * verbs.h inlines through the device context and need no symbol.
 */
#ifndef NPCCL_RDMA_VERBS_H
#define NPCCL_RDMA_VERBS_H

#include <infiniband/verbs.h>

struct verbs_api {
	struct ibv_device **(*get_device_list)(int *num);
	void (*free_device_list)(struct ibv_device **list);
	const char *(*get_device_name)(struct ibv_device *dev);
	struct ibv_context *(*open_device)(struct ibv_device *dev);
	int (*close_device)(struct ibv_context *ctx);
	int (*query_device)(struct ibv_context *ctx, struct ibv_device_attr *attr);
	/* the compat entry point; rdma_query_port() prefers the provider's */
	int (*query_port_compat)(struct ibv_context *ctx, uint8_t port, void *attr);
	int (*query_gid)(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid);
	/* NULL before rdma-core 35 */
	int (*query_gid_ex)(struct ibv_context *ctx, uint32_t port, uint32_t index,
			    struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *ctx);
	int (*dealloc_pd)(struct ibv_pd *pd);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t len, int access);
	int (*dereg_mr)(struct ibv_mr *mr);
	struct ibv_comp_channel *(*create_comp_channel)(struct ibv_context *ctx);
	int (*destroy_comp_channel)(struct ibv_comp_channel *ch);
	struct ibv_cq *(*create_cq)(struct ibv_context *ctx, int cqe, void *cq_context,
				    struct ibv_comp_channel *ch, int comp_vector);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*get_cq_event)(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_context);
	void (*ack_cq_events)(struct ibv_cq *cq, unsigned int nevents);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
	int (*destroy_qp)(struct ibv_qp *qp);
	const char *(*wc_status_str)(enum ibv_wc_status status);
};

/* The table, or NULL with the reason in `why` (libibverbs missing). */
const struct verbs_api *verbs_api_get(char *why, size_t len);
/* ibv_query_port as verbs.h does it, through the table */
int rdma_query_port(const struct verbs_api *v, struct ibv_context *ctx, uint8_t port,
		    struct ibv_port_attr *attr);

#endif
