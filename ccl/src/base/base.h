/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * base.h - the bottom layer's calls (base/): logging, status and per-thread
 * errors, configuration, host identity, sockets, copy and reduction
 * kernels. Included by npccl_internal.h: every layer may use it.
 */
#ifndef NPCCL_BASE_H
#define NPCCL_BASE_H

/* ---- logging and errors (status.c) ------------------------------------ */
NPCCL_HIDDEN void npccl_log(npccl_log_level_t level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
NPCCL_HIDDEN uint64_t now_ns(void);
/* spin-wait hint */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* ---- configuration from the environment (config.c) -------------------- */
struct npccl_config {
	int timeout_ms;
	int bootstrap_timeout_ms;
	bool disable_shm;
	bool disable_cma;	/* NPCCL_DISABLE_CMA: no single-copy collectives */
	bool disable_space;	/* NPCCL_DISABLE_SPACE: single copies by CMA only (no npushm space) */
	size_t shm_slot_bytes;	/* p2p FIFO slot payload */
	int shm_slots;		/* p2p FIFO depth */
	size_t fp_chunk_bytes;	/* shm fast-path pipeline chunk */
	size_t fp_direct_max;	/* at or below: each rank reduces everything */
	size_t shm_nt_min;	/* from here on: streaming stores to the output */
	int stage_nt;		/* staging slots written with streaming stores:
				 * -1 auto (probe), 0 never, 1 always */
	size_t probe_min;	/* messages from here on probe the core distance */
	size_t pipeline_chunk;	/* tree/chain pipelining chunk */
	int spin_us;		/* busy-wait before sleeping */
	bool deterministic;	/* NPCCL_DETERMINISTIC: canonical-order reductions */
	npccl_algo_t algo[NPCCL_NUM_COLLS];
	char fault[128];	/* NPCCL_FAULT_INJECT, for tests */
	/* between hosts (NPCCL_TRANSPORT): TRANSPORT_AUTO uses RDMA where both
	 * ends have a device, TCP otherwise */
	int transport;
	char transport_str[32];	/* NPCCL_TRANSPORT as given */
	char ib_dev[64];	/* NPCCL_IB_DEV: device[:port], "" = first active */
	int ib_gid_index;	/* NPCCL_IB_GID_INDEX, -1 = a RoCE v2 IPv4 GID */
	int ib_timeout;		/* NPCCL_IB_TIMEOUT: 4.096 us * 2^x per retry */
	int ib_retry;		/* NPCCL_IB_RETRY_CNT */
	int rdma_slots;		/* NPCCL_RDMA_SLOTS: FIFO slots per direction */
	bool rdma_zcopy;	/* NPCCL_RDMA_ZCOPY: registered buffers without copies */
	size_t rdma_cache_bytes;	/* NPCCL_RDMA_CACHE_BYTES: caller buffers kept registered */
};
enum { TRANSPORT_AUTO, TRANSPORT_TCP, TRANSPORT_RDMA, TRANSPORT_INVALID };
NPCCL_HIDDEN const struct npccl_config *npccl_config(void);
NPCCL_HIDDEN void npccl_config_reload(void);
NPCCL_HIDDEN npccl_algo_t npccl_algo_from_name(const char *name);

/* ---- host identity (hostid.c) ------------------------------------------ */
struct host_identity {
	uint64_t host_id;	/* boot id + network namespace: same value = shm reachable */
	uint64_t pidns_id;	/* pid namespace inode: same value = pids comparable */
	char hostname[40];
};
NPCCL_HIDDEN void host_identity_get(struct host_identity *out);

/* per-thread error text (status.c) */
NPCCL_HIDDEN void tls_error_clear(struct npccl_comm *c);
NPCCL_HIDDEN void tls_error_set(struct npccl_comm *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
NPCCL_HIDDEN void tls_error_forget(struct npccl_comm *c);

/* ---- sockets (sock.c) --------------------------------------------------- */
NPCCL_HIDDEN int sock_listen_tcp(uint32_t ipv4_be, uint16_t port_be, char *err, size_t errlen);
NPCCL_HIDDEN int sock_connect_tcp(uint32_t ipv4_be, uint16_t port_be, uint64_t deadline_ns,
				  char *err, size_t errlen);
NPCCL_HIDDEN int sock_write_full(int fd, const void *buf, size_t len, uint64_t deadline_ns);
NPCCL_HIDDEN int sock_read_full(int fd, void *buf, size_t len, uint64_t deadline_ns);
NPCCL_HIDDEN int sock_accept(int lfd, uint64_t deadline_ns);
NPCCL_HIDDEN void sock_tune_data(int fd);
NPCCL_HIDDEN int sock_set_nonblock(int fd, bool on);
NPCCL_HIDDEN const char *ipv4_str(uint32_t ipv4_be, char *buf);
NPCCL_HIDDEN int parse_host_port(const char *s, uint32_t *ipv4_be, uint16_t *port_be);
NPCCL_HIDDEN int send_fds(int sock, const void *data, size_t len, const int *fds, int nfds);
NPCCL_HIDDEN int recv_fds(int sock, void *data, size_t len, int *fds, int maxfds,
			  uint64_t deadline_ns);

/* ---- bulk copies (copy_kernels.c) --------------------------------------- */
NPCCL_HIDDEN void copy_cached(void *dst, const void *src, size_t n);
/* non-temporal stores; copy_stream_fence() before publishing the data */
NPCCL_HIDDEN void copy_stream(void *dst, const void *src, size_t n);
NPCCL_HIDDEN void copy_stream_fence(void);

/* ---- reductions (reduce_kernels.c) ------------------------------------- */
/* dst[i] = dst[i] op src[i] */
NPCCL_HIDDEN void reduce_inplace(npccl_dtype_t dt, npccl_redop_t op, void *dst,
				 const void *src, size_t n);
/* dst[i] = a[i] op b[i] (dst may equal a or b) */
NPCCL_HIDDEN void reduce_into(npccl_dtype_t dt, npccl_redop_t op, void *dst, const void *a,
			      const void *b, size_t n);
/* Every dsts[d][i] = srcs[0][i] op srcs[1][i] op ... (in that order), i < n,
 * through an L1-sized block; destination d gets streaming stores when bit d
 * of nt_mask is set. A destination may equal a source exactly. */
NPCCL_HIDDEN void reduce_multi(npccl_dtype_t dt, npccl_redop_t op, void *const *dsts, int ndst,
			       uint64_t nt_mask, const void *const *srcs, int nsrc, size_t n);
/* dst[i] /= divisor (AVG finalisation) */
NPCCL_HIDDEN void reduce_scale_avg(npccl_dtype_t dt, void *dst, size_t n, int divisor);
NPCCL_HIDDEN float f16_to_f32(uint16_t h);
NPCCL_HIDDEN uint16_t f32_to_f16(float f);
NPCCL_HIDDEN float bf16_to_f32(uint16_t h);
NPCCL_HIDDEN uint16_t f32_to_bf16(float f);

#endif
