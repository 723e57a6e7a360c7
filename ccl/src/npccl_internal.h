/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npccl_internal.h - structures shared by the ccl sources: the communicator,
 * peers, point-to-point requests, the wire header, the shared-memory control
 * block, and the internal functions each file provides.
 *
 * Contracts: the communicator's state belongs to the thread holding its
 * exec role (request.c), one at a time; every blocking loop goes through comm_wait() so deadlines, dead peers and
 * control messages are handled in one place; errors are recorded once with
 * comm_fail() and every later call returns them.
 */
#ifndef NPCCL_INTERNAL_H
#define NPCCL_INTERNAL_H

#define NPCCL_BUILDING 1
#include "npccl.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/shm_region.h"

#define NPCCL_HIDDEN __attribute__((visibility("hidden")))
#define CACHELINE 64
#define ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

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

/* ---- wire format ------------------------------------------------------- */
#define WIRE_MAGIC 0x4e50434cu	/* "NPCL" */
enum frame_type {
	FRAME_DATA = 1, FRAME_ABORT, FRAME_QUERY, FRAME_REPLY, FRAME_BYE, FRAME_HELLO,
	FRAME_REGION		/* control channel: an npccl_mem_alloc region (fd attached) */
};

/* Internal operation codes next to npccl_coll_t, for descriptors and
 * messages only (never an index into per-collective arrays). */
#define COLL_MEM_ALLOC ((uint8_t)(NPCCL_NUM_COLLS + 1))
NPCCL_HIDDEN const char *coll_label(unsigned coll);

/* Description of one operation: identical on every rank for a matching call. */
struct op_desc {
	uint64_t seq;
	uint64_t count;
	int32_t root;
	uint8_t coll, dtype, redop, algo;
};

/* 48-byte header of every frame (TCP) and every FIFO slot (shm). */
struct wire_hdr {
	uint32_t magic;
	uint8_t type;
	uint8_t coll, dtype, redop;
	int32_t root;
	uint32_t src_rank;
	uint64_t seq;
	uint64_t count;
	uint64_t len;		/* payload bytes of the whole message */
	uint32_t algo;
	uint32_t check;		/* XXH32 of the 44 bytes before it */
};
_Static_assert(sizeof(struct wire_hdr) == 48, "wire header layout");

NPCCL_HIDDEN void wire_hdr_seal(struct wire_hdr *h);
NPCCL_HIDDEN bool wire_hdr_valid(const struct wire_hdr *h);

/* Control message (fixed size) on the per-peer control channel. */
struct ctl_msg {
	struct wire_hdr hdr;	/* type ABORT/QUERY/REPLY/BYE; desc of sender's op */
	int32_t culprit;
	int32_t status;
	uint32_t in_op;
	int32_t waiting_on;
	uint64_t completed_seq;
	char text[400];
};

/* ---- point-to-point requests ------------------------------------------ */
enum req_kind { REQ_SEND, REQ_RECV, REQ_RECV_REDUCE };

struct peer;
struct req {
	struct req *next;	/* per-peer queue */
	enum req_kind kind;
	struct peer *peer;
	const char *sbuf;
	char *rbuf;
	size_t len, done;
	struct wire_hdr hdr;	/* send: header sent; recv: expected */
	struct wire_hdr rxhdr;	/* recv: header received */
	uint32_t hdr_done;	/* TCP: header bytes moved so far */
	uint8_t dtype, redop;	/* RECV_REDUCE: rbuf[i] = rsrc[i] op in[i] */
	const char *rsrc;	/* RECV_REDUCE: first operand (rbuf itself, or another buffer) */
	bool complete;
	bool in_use;
	uint64_t gen;		/* operation that posted it (0: a non-blocking send/recv,
				 * completed by request.c, never by p2p_wait_all) */
};

/* ---- peers and transports ---------------------------------------------- */
struct peer_info {		/* exchanged at bootstrap, fixed layout */
	uint32_t rank;
	uint32_t pid;
	uint64_t host_id;
	uint64_t pidns_id;
	uint32_t ipv4;		/* network order: address peers connect to */
	uint16_t port;		/* network order: TCP listen port */
	uint16_t flags;		/* PEER_F_* */
	char hostname[40];
};
#define PEER_F_RDMA 1		/* has a usable RDMA device (NPCCL_TRANSPORT is not tcp) */
#define PEER_F_RDMA_REQUIRED 2	/* NPCCL_TRANSPORT=rdma */

struct transport_ops;
struct shm_fifo;
struct rdma_peer;
struct rdma_ctx;

struct peer {
	int rank;
	struct peer_info info;
	bool local;		/* same host: shared memory */
	int local_index;	/* index among the local ranks, -1 if remote */
	int ctl_fd;		/* control channel: Unix socket (local) or TCP */
	int data_fd;		/* TCP data socket, -1 for local peers */
	int pidfd;		/* -1 if not available (other pid namespace) */
	int doorbell_fd;	/* local: the peer's eventfd */
	const struct transport_ops *tp;
	struct req *sendq, *sendq_tail;
	struct req *recvq, *recvq_tail;
	uint64_t p2p_send_seq, p2p_recv_seq;
	/* shm */
	struct shm_region *region;	/* the peer's region, mapped */
	struct shm_fifo *tx_fifo;	/* in the peer's region, written by us */
	struct shm_fifo *rx_fifo;	/* in our region, written by the peer */
	struct rdma_peer *rdma;	/* RDMA transport state, NULL for other peers */
	char *bounce;		/* TCP RECV_REDUCE staging */
	size_t bounce_fill;
	bool gone;		/* connection closed or process exited */
	bool exited;		/* its pidfd says the process exited */
	bool fault_stalled;	/* fault injection: our side stopped sending */
	bool said_bye;		/* closed through npccl_comm_destroy */
	bool ctl_eof;
	/* diagnosis */
	bool replied;
	struct ctl_msg reply;
	/* control channel receive buffer (partial messages) */
	size_t ctl_rx_fill;
	struct ctl_msg ctl_rx;
	/* descriptors received on the control channel (SCM_RIGHTS), oldest
	 * first, and the FRAME_REGION messages they came with (shm_mem.c) */
	int rx_fds[8];
	int nrx_fds;
	struct region_msg {
		uint64_t seq, bytes;
		int fd;
	} region_in[8];
	int nregion_in;
};

/* Transport interface: two-sided operations, used by every algorithm. The
 * RDMA transport (transport_rdma.c) implements them with one-sided writes,
 * registration and completion queues of its own behind this interface. */
struct transport_ops {
	const char *name;
	/* advance the head request of the queue: 1 done, 0 not yet, <0 failed */
	int (*progress_send)(struct npccl_comm *c, struct peer *p, struct req *r);
	int (*progress_recv)(struct npccl_comm *c, struct peer *p, struct req *r);
	/* file descriptor and poll events to sleep on for `p`, -1 if none */
	int (*poll_fd)(struct peer *p, short *events);
	/* optional, communicator-wide: a descriptor to sleep on for all of this
	 * transport's peers (-1 if none; *pending: work completed meanwhile,
	 * do not sleep), and what to do after the sleep */
	int (*sleep_fd)(struct npccl_comm *c, bool *pending);
	void (*after_sleep)(struct npccl_comm *c);
};
NPCCL_HIDDEN extern const struct transport_ops tcp_transport;
NPCCL_HIDDEN extern const struct transport_ops shm_transport;
NPCCL_HIDDEN extern const struct transport_ops rdma_transport;

/* ---- shared-memory layout (transport_shm.c, algo_shm.c) ---------------- */
struct shm_ctl {
	_Alignas(CACHELINE) atomic_uint sleeping;	/* 1: ring my doorbell */
	_Alignas(CACHELINE) atomic_uint_fast64_t op_seq;	/* desc of current op, */
	uint64_t op_count;					/* published at entry */
	int32_t op_root;
	uint8_t op_coll, op_dtype, op_redop, op_algo;
	uint64_t op_mem_sig;	/* signature of the npccl_mem_alloc buffers */
	_Alignas(CACHELINE) atomic_uint_fast64_t staged;	/* fast-path progress */
	uint64_t step_hash[4];	/* op hash of step g at [g % 4], same line as staged */
	/* AllReduce of at most 8 bytes: the data of step g at [g % 2], in the
	 * same line too (one cache-line transfer per peer and call) */
	uint64_t tiny[2];
	_Alignas(CACHELINE) atomic_uint_fast64_t reduced;
	_Alignas(CACHELINE) atomic_uint_fast64_t gathered;
	/* zero-copy AllReduce: where this rank's buffers are, for call zc_seq
	 * (published before `staged` of the call's first step) */
	_Alignas(CACHELINE) uint64_t zc_seq;
	uint64_t zc_sid, zc_soff, zc_rid, zc_roff;	/* allocation id + offset */
	/* single-copy collectives (algo_cma.c): this rank's buffers for the
	 * current call, and the address of its probe word (init) */
	_Alignas(CACHELINE) uint64_t cma_sbuf, cma_rbuf, cma_probe;
	/* core-distance probe (ping-pong between local ranks 0 and 1) */
	_Alignas(CACHELINE) atomic_uint_fast64_t probe;
	/* the last call this rank completed (a survivor reads it after this
	 * rank died: did it finish the call the survivor is in?) */
	_Alignas(CACHELINE) atomic_uint_fast64_t done_seq;
	_Alignas(CACHELINE) char pad[CACHELINE];
};

struct shm_fifo {
	_Alignas(CACHELINE) atomic_uint_fast64_t head;	/* slots written (sender) */
	_Alignas(CACHELINE) atomic_uint_fast64_t tail;	/* slots consumed (receiver) */
	_Alignas(CACHELINE) char slots[];	/* nslots x (64 header + slot_bytes) */
};

struct shm_layout {
	size_t slot_bytes, slot_stride, fifo_bytes;
	int nslots;
	size_t fifo_off;	/* first FIFO (one per local sender index) */
	size_t fp_chunk;	/* fast-path chunk bytes */
	int fp_slots;
	size_t fp_stage_off, fp_result_off;
	size_t total;
};

/* A group of ranks an algorithm runs over (the whole communicator, the
 * ranks of one host, or one rank per host). */
struct group {
	int n, me;
	const int *ranks;	/* comm rank of each member */
};

/* ---- calls in flight (request.c) ----------------------------------------
 * Every call becomes an `op` in the communicator's queue and runs in queue
 * order on whichever thread holds the "exec" role: the waiting caller itself
 * (npccl_request_wait without a timeout, every blocking call) or the
 * communicator's worker thread (started by the first non-blocking call).
 * Collectives run to completion; point-to-point messages are posted to the
 * per-peer queues and complete in the background (`pend` list). */
enum op_kind { OPK_COLL, OPK_SEND, OPK_RECV, OPK_MEM_ALLOC, OPK_MEM_FREE };

struct op {
	uint8_t kind;
	npccl_coll_t coll;
	const void *sbuf;
	void *rbuf;
	size_t count;
	npccl_dtype_t dtype;
	npccl_redop_t redop;
	int root;		/* collectives with a root; -1 otherwise */
	int peer;		/* point to point */
	npccl_algo_t forced;	/* npccl_comm_set_algo when the call was made */
	bool deterministic;	/* npccl_comm_set_deterministic when the call was made */
	int timeout_ms;		/* npccl_comm_set_timeout when the call was made */
	void **out_ptr;		/* npccl_mem_alloc */
};

struct npccl_request {
	struct npccl_request *qnext;	/* queue (q_lock) */
	struct npccl_request *pnext;	/* pending point-to-point list (exec role) */
	struct npccl_comm *comm;
	struct op op;
	atomic_int refs;	/* caller's handle + the communicator's while not done */
	atomic_int done;	/* set last, under q_lock; then only the owner touches it */
	atomic_int final;	/* status and text are final (callbacks run after) */
	bool heap;		/* malloc'ed (non-blocking) or on the caller's stack */
	bool cb_ran;
	npccl_status_t status;
	npccl_request_fn cb;
	void *cb_user;
	struct req *ireq;	/* point to point: the posted message */
	struct op_desc desc;	/* point to point: its descriptor, for diagnosis */
	uint64_t deadline_ns;
	char err[800];
};

NPCCL_HIDDEN npccl_status_t req_submit(struct npccl_comm *c, const struct op *op,
				       npccl_request_t *out);
NPCCL_HIDDEN npccl_status_t req_queue_init(struct npccl_comm *c);
/* waits for every queued call and pending message (destroy) */
NPCCL_HIDDEN void req_drain(struct npccl_comm *c);
/* stops the worker and completes everything still queued or pending with
 * `st` (destroy, abort); false if the worker did not stop within 2 s */
NPCCL_HIDDEN bool req_shutdown(struct npccl_comm *c, npccl_status_t st, const char *why);
NPCCL_HIDDEN void req_queue_free(struct npccl_comm *c);
/* the exec role's current call is running and more may be waiting */
NPCCL_HIDDEN bool req_queue_nonempty(struct npccl_comm *c);
/* groups (request.c): >0 while npccl_group_start is open in this thread */
NPCCL_HIDDEN int group_depth(void);
NPCCL_HIDDEN npccl_status_t group_record(struct npccl_comm *c, const struct op *op);
NPCCL_HIDDEN int group_suspend(void);
NPCCL_HIDDEN void group_resume(int depth);
/* posts `n` point-to-point ops together and waits for all of them */
NPCCL_HIDDEN npccl_status_t req_run_batch(struct npccl_comm *c, const struct op *ops, int n);
NPCCL_HIDDEN npccl_status_t shm_mem_reserve(struct npccl_comm *c);
NPCCL_HIDDEN npccl_status_t shm_mem_alloc_run(struct npccl_comm *c, size_t bytes, void **ptr);
NPCCL_HIDDEN npccl_status_t shm_mem_free_run(struct npccl_comm *c, void *ptr);
/* runs one op (collectives.c) with the exec role: fills r->status/r->err for
 * collectives; posts point-to-point messages (r->ireq) */
NPCCL_HIDDEN void op_run(struct npccl_comm *c, struct npccl_request *r);
/* per-thread error text (status.c) */
NPCCL_HIDDEN void tls_error_clear(struct npccl_comm *c);
NPCCL_HIDDEN void tls_error_set(struct npccl_comm *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
NPCCL_HIDDEN void tls_error_forget(struct npccl_comm *c);

/* ---- the communicator --------------------------------------------------- */
struct npccl_comm {
	int rank, nranks;
	uint64_t magic;
	struct peer *peers;	/* nranks entries; peers[rank] is self */
	int nhosts, host_index;
	int *host_of;		/* host index per rank */
	int nlocal, local_index;
	int *local_ranks;	/* comm ranks on this host, ascending */
	bool uniform;		/* every host has nlocal ranks, same local order */
	int listen_fd;		/* TCP listen socket (closed after setup) */
	int unix_listen_fd;

	/* shared memory */
	struct shm_layout layout;
	struct shm_region *region;	/* mine */
	struct shm_ctl **ctl;		/* [nlocal]: control block of each local rank */
	char **fp_stage, **fp_result;	/* [nlocal] */
	char **fp_srcs, **fp_dsts;	/* [max(nlocal, 2)]: kernel arguments */
	int doorbell_fd;		/* my eventfd */
	uint64_t fp_step;
	bool oversubscribed;

	/* current operation */
	uint64_t next_seq;	/* collectives; point-to-point use per-peer counters */
	struct op_desc cur;
	uint64_t cur_hash;	/* hash of cur (seq excluded) for the shm check */
	bool in_op;
	uint64_t completed_seq;
	int waiting_on;
	uint64_t deadline_ns;
	uint64_t dead_seen_seq, dead_seen_ns;	/* a peer died in call dead_seen_seq, seen then */
	int timeout_ms;		/* setting for later calls (q_lock) */
	int op_timeout_ms;	/* the running call's */
	atomic_int aborting;
	atomic_int in_call;

	/* failure: set once */
	npccl_status_t failed;
	char errmsg[640];
	char lasterr[800];

	/* scratch, persistent and prefaulted */
	char *scratch;
	size_t scratch_size;
	char *scratch2;
	size_t scratch2_size;

	/* groups algorithms run over */
	struct group g_all, g_local, g_cross;
	int *all_ranks, *cross_ranks;

	/* requests */
	struct req *reqs;
	int nreqs;

	/* algorithm choice; last choice per collective cached (same on all ranks) */
	npccl_cost_model_t model;
	npccl_algo_t forced[NPCCL_NUM_COLLS];
	bool deterministic;	/* npccl_comm_set_deterministic (q_lock) */
	size_t choice_bytes[NPCCL_NUM_COLLS];
	npccl_algo_t choice[NPCCL_NUM_COLLS];
	uint64_t fp_seen_reduced[64];	/* last seen peers' `reduced`, by local index */
	uint64_t probe_seq;		/* core-distance probes so far (same on ranks 0, 1) */
	uint32_t probe_rtt_ns;		/* last probe's round trip, 0 if none */
	bool cma_ok;			/* every local rank can read every other's memory (agreed) */
	uint64_t cma_word;		/* the probe word peers read */

	/* npccl_mem_alloc buffers (shm_mem.c); mem_sig is identical on every
	 * rank that made the same allocations and is part of cur_hash */
	struct shm_mem **mems;
	int nmems, mems_cap;
	uint64_t mem_next_id, mem_sig;
	bool zc_logged;			/* "zero-copy in use" said once */

	/* calls in flight (request.c). q_lock guards the queue, exec_busy,
	 * the worker fields, forced[] and timeout_ms, shown_err; the rest of
	 * the communicator belongs to the holder of the exec role */
	pthread_mutex_t q_lock;
	pthread_cond_t q_cond;
	bool q_ready;
	struct npccl_request *q_head, *q_tail;
	atomic_int q_len;
	bool exec_busy;
	bool worker_started, worker_stop, worker_exited;
	pthread_t worker;
	struct npccl_request *pend_head, *pend_tail;
	int bg_p2p;		/* messages posted by non-blocking sends/receives, not yet done */
	uint64_t req_gen;	/* operation number for p2p_wait_all */
	int wake_fd;		/* eventfd: a call was queued while the exec role sleeps */
	atomic_int exec_polling;
	char shown_err[800];	/* last failure, for threads that made no call */

	/* RDMA verbs transport (rdma_setup.c), NULL when no peer uses it */
	struct rdma_ctx *rdma;
	char rdma_why[200];	/* why this rank has no RDMA, "" if it has */

	/* fault injection (tests) */
	int fault_kind;
	uint64_t fault_seq;
	int fault_rank;
};


/* ---- progress engine (progress.c) -------------------------------------- */
NPCCL_HIDDEN struct req *p2p_post_send(struct npccl_comm *c, int peer, const void *buf,
				       size_t len);
NPCCL_HIDDEN struct req *p2p_post_recv(struct npccl_comm *c, int peer, void *buf, size_t len);
NPCCL_HIDDEN struct req *p2p_post_recv_reduce(struct npccl_comm *c, int peer, void *buf,
					      size_t len, npccl_dtype_t dt, npccl_redop_t op);
/* buf[i] = src[i] op received[i] (src may equal buf) */
NPCCL_HIDDEN struct req *p2p_post_recv_reduce_from(struct npccl_comm *c, int peer, void *buf,
						   const void *src, size_t len, npccl_dtype_t dt,
						   npccl_redop_t op);
NPCCL_HIDDEN npccl_status_t p2p_wait(struct npccl_comm *c, struct req **r, int n);
NPCCL_HIDDEN npccl_status_t p2p_wait_all(struct npccl_comm *c);
NPCCL_HIDDEN npccl_status_t p2p_sendrecv(struct npccl_comm *c, int dst, const void *sbuf,
					 size_t slen, int src, void *rbuf, size_t rlen);
NPCCL_HIDDEN void p2p_set_hdr(struct npccl_comm *c, struct wire_hdr *h, uint64_t len);
/* wait until ready(arg) is true, handling control messages and deadline */
NPCCL_HIDDEN npccl_status_t comm_wait(struct npccl_comm *c, bool (*ready)(void *), void *arg,
				      int waiting_on);
NPCCL_HIDDEN void doorbell_ring(struct npccl_comm *c, int rank);
NPCCL_HIDDEN void doorbell_ring_all_local(struct npccl_comm *c);
NPCCL_HIDDEN npccl_status_t comm_poll_control(struct npccl_comm *c, int timeout_ms);
/* whether p's control channel closed (waiting up to timeout_ms for it, and
 * handling what arrives meanwhile): its process is gone, not just a stream */
NPCCL_HIDDEN bool comm_peer_ctl_closed(struct npccl_comm *c, struct peer *p, int timeout_ms);
/* advance every per-peer queue; the failure status if a transport failed */
NPCCL_HIDDEN npccl_status_t p2p_progress_all(struct npccl_comm *c);

/* ---- failure handling (fault.c) ---------------------------------------- */
NPCCL_HIDDEN npccl_status_t comm_fail(struct npccl_comm *c, npccl_status_t st, int culprit,
				      const char *fmt, ...) __attribute__((format(printf, 4, 5)));
NPCCL_HIDDEN void comm_broadcast_abort(struct npccl_comm *c, int culprit);
NPCCL_HIDDEN npccl_status_t comm_diagnose_timeout(struct npccl_comm *c);
/* A local peer's process state from /proc: 'T' stopped, 'Z'/'X' exited, 0 unknown. */
NPCCL_HIDDEN char peer_proc_state(struct npccl_comm *c, int rank);
NPCCL_HIDDEN npccl_status_t comm_peer_lost(struct npccl_comm *c, int rank, const char *how);
NPCCL_HIDDEN void comm_handle_ctl(struct npccl_comm *c, struct peer *p, const struct ctl_msg *m);
NPCCL_HIDDEN void comm_send_ctl(struct npccl_comm *c, struct peer *p, int type, int culprit,
				int status, const char *text);
/* a control message carrying descriptor fd (SCM_RIGHTS) and hdr.len = len;
 * 0 or -errno */
NPCCL_HIDDEN int comm_send_ctl_fd(struct npccl_comm *c, struct peer *p, int type, uint64_t len,
				  int fd);
NPCCL_HIDDEN void op_desc_format(const struct op_desc *d, char *buf, size_t len);
/* the operation a received header describes */
NPCCL_HIDDEN void wire_hdr_desc(const struct wire_hdr *h, struct op_desc *d);
/* a valid received data header h against the expected e: 0, or -1 with the
 * communicator failed (the mismatched call or length named) */
NPCCL_HIDDEN int wire_hdr_expect(struct npccl_comm *c, int rank, const struct wire_hdr *h,
				 const struct wire_hdr *e);
NPCCL_HIDDEN void peer_describe(struct npccl_comm *c, int rank, char *buf, size_t len);
NPCCL_HIDDEN npccl_status_t comm_mismatch(struct npccl_comm *c, int rank,
					  const struct op_desc *theirs);
NPCCL_HIDDEN bool fault_should_fire(struct npccl_comm *c, int kind);
enum { FAULT_NONE, FAULT_CORRUPT_FRAME, FAULT_TRUNCATE_FRAME,
       FAULT_SLOW_ALPHA,	/* the first fault_seq shm latency measurements of fault_rank
			 * read 100 ms more (costmodel.c) */
       FAULT_SETUP_KILL,	/* fault_rank's process is killed (SIGKILL) as it starts
			 * the shared-memory setup (transport_shm.c) */
       FAULT_SETUP_FAIL,	/* fault_rank's shared-memory setup fails at once; the
			 * process lives on */
       FAULT_QP_ERROR,	/* fault_rank moves its RDMA queue pairs to the error
			 * state in collective #fault_seq */
       FAULT_LOAD_KILL,	/* fault_rank's process is killed (SIGKILL) before chunk
			 * #fault_seq of an npccl_model_load (model_share.c) */
       FAULT_LOAD_CORRUPT	/* fault_rank damages one byte of chunk #fault_seq of an
			 * npccl_model_load after receiving it */ };

/* ---- npccl_mem_alloc buffers (shm_mem.c) ------------------------------- */
struct shm_mem {
	uint64_t id;		/* allocation number: the same on every rank */
	size_t size;		/* bytes the caller asked for (same on every rank) */
	char *base;		/* this rank's buffer */
	struct shm_region *region;	/* this rank's region */
	struct shm_region **peer_region;	/* [nlocal]: peers' regions, NULL for me */
	char **addr;		/* [nlocal]: every local rank's buffer as mapped here */
};
/* the allocation holding [p, p + len) and the offset of p, or NULL */
NPCCL_HIDDEN struct shm_mem *shm_mem_find(struct npccl_comm *c, const void *p, size_t len,
					  size_t *off);
NPCCL_HIDDEN struct shm_mem *shm_mem_by_id(struct npccl_comm *c, uint64_t id);
/* control channel: a FRAME_REGION message arrived from p (takes its fd) */
NPCCL_HIDDEN void shm_mem_region_msg(struct npccl_comm *c, struct peer *p,
				     const struct ctl_msg *m);
NPCCL_HIDDEN void shm_mem_free_all(struct npccl_comm *c);

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

/* ---- algorithms --------------------------------------------------------- */
struct coll_args {
	npccl_coll_t coll;
	const char *sbuf;
	char *rbuf;
	size_t count;		/* elements: per rank block for AG/RS/gather/scatter/a2a */
	npccl_dtype_t dtype;
	npccl_redop_t op;	/* AVG is run as SUM, then scaled */
	int root;
	size_t esize;
	npccl_algo_t algo;
};

NPCCL_HIDDEN void block_range(size_t n, int parts, int i, size_t *off, size_t *len);
NPCCL_HIDDEN char *comm_scratch(struct npccl_comm *c, size_t bytes);
NPCCL_HIDDEN char *comm_scratch2(struct npccl_comm *c, size_t bytes);

/* input in a->sbuf (may equal a->rbuf), result in a->rbuf */
NPCCL_HIDDEN npccl_status_t algo_allreduce(struct npccl_comm *c, const struct group *g,
					   const struct coll_args *a, npccl_algo_t algo);
NPCCL_HIDDEN npccl_status_t algo_allgather(struct npccl_comm *c, const struct group *g,
					   const struct coll_args *a, npccl_algo_t algo);
NPCCL_HIDDEN npccl_status_t algo_reduce_scatter(struct npccl_comm *c, const struct group *g,
						const struct coll_args *a, npccl_algo_t algo);
NPCCL_HIDDEN npccl_status_t algo_broadcast(struct npccl_comm *c, const struct group *g,
					   const struct coll_args *a, npccl_algo_t algo);
NPCCL_HIDDEN npccl_status_t algo_reduce(struct npccl_comm *c, const struct group *g,
					const struct coll_args *a, npccl_algo_t algo);
NPCCL_HIDDEN npccl_status_t algo_gather(struct npccl_comm *c, const struct group *g,
					const struct coll_args *a, npccl_algo_t algo);
NPCCL_HIDDEN npccl_status_t algo_scatter(struct npccl_comm *c, const struct group *g,
					 const struct coll_args *a, npccl_algo_t algo);
NPCCL_HIDDEN npccl_status_t algo_alltoall(struct npccl_comm *c, const struct group *g,
					  const struct coll_args *a, npccl_algo_t algo);
NPCCL_HIDDEN npccl_status_t algo_barrier(struct npccl_comm *c, const struct group *g,
					 npccl_algo_t algo);
NPCCL_HIDDEN npccl_status_t shm_allreduce(struct npccl_comm *c, const struct coll_args *a);
NPCCL_HIDDEN npccl_status_t shm_barrier(struct npccl_comm *c);
NPCCL_HIDDEN npccl_status_t hier_allreduce(struct npccl_comm *c, const struct coll_args *a);
NPCCL_HIDDEN npccl_status_t cma_allgather(struct npccl_comm *c, const struct coll_args *a);
NPCCL_HIDDEN npccl_status_t cma_broadcast(struct npccl_comm *c, const struct coll_args *a);
NPCCL_HIDDEN npccl_status_t cma_reduce_scatter(struct npccl_comm *c, const struct coll_args *a);
/* CMA probe: publish this rank's probe word (false: CMA not applicable),
 * then, once every local rank has, read the peers' (1: all readable) */
NPCCL_HIDDEN bool cma_probe_begin(struct npccl_comm *c);
NPCCL_HIDDEN int32_t cma_probe_peers(struct npccl_comm *c);
/* canonical-order reductions (algo_canonical.c): AllReduce, ReduceScatter, Reduce */
NPCCL_HIDDEN npccl_status_t canon_reduce(struct npccl_comm *c, const struct group *g,
					 const struct coll_args *a);
NPCCL_HIDDEN bool canon_applies(npccl_coll_t coll, npccl_dtype_t dt);
NPCCL_HIDDEN void p2p_free_all_reqs(struct npccl_comm *c);

/* ---- operation bracket (dispatch.c) ------------------------------------- */
/* Starts a collective-like operation `code` (deadline, sequence number,
 * descriptor published for the mismatch checks); op_end() finishes it. */
NPCCL_HIDDEN npccl_status_t comm_op_begin(struct npccl_comm *c, uint8_t code, uint64_t count);
NPCCL_HIDDEN npccl_status_t comm_op_end(struct npccl_comm *c, npccl_status_t st);
/* A collective the library needs itself (communicator setup: the cost
 * model's agreement, the CMA probe), run at once with the exec role, never
 * through the public calls or the queue. */
NPCCL_HIDDEN npccl_status_t coll_internal(struct npccl_comm *c, npccl_coll_t coll, const void *sbuf,
					  void *rbuf, size_t count, npccl_dtype_t dt,
					  npccl_redop_t op);

/* ---- cost model (costmodel.c) ------------------------------------------ */
NPCCL_HIDDEN npccl_status_t costmodel_measure(struct npccl_comm *c);
NPCCL_HIDDEN npccl_algo_t costmodel_choose(struct npccl_comm *c, npccl_coll_t coll,
					   size_t bytes, double *predicted_us);
NPCCL_HIDDEN double costmodel_predict(struct npccl_comm *c, npccl_coll_t coll,
				      npccl_algo_t algo, size_t bytes);
NPCCL_HIDDEN bool algo_valid(struct npccl_comm *c, npccl_coll_t coll, npccl_algo_t algo);
/* the deterministic mode's algorithm for a reducing collective */
NPCCL_HIDDEN npccl_algo_t canon_algo(struct npccl_comm *c, npccl_coll_t coll);

/* ---- bootstrap (bootstrap.c, launcher.c) -------------------------------- */
struct unique_id_wire {
	char tag[8];		/* "NPCCLID1" */
	uint64_t magic;		/* communicator tag */
	uint32_t ipv4;		/* network order */
	uint16_t port;		/* network order */
	uint16_t flags;
};
NPCCL_HIDDEN npccl_status_t unique_id_create(uint32_t ipv4_be, uint16_t port_be, int listen_fd,
					     uint64_t magic, npccl_unique_id_t *id, char *err,
					     size_t errlen);
/* where a communicator's ranks find each other: a unique id (the TCP
 * rendezvous root) or a caller's key-value store */
struct boot_src {
	const npccl_unique_id_t *id;
	const npccl_kv_store_t *kv;
	const char *prefix;
	int timeout_ms;
};
NPCCL_HIDDEN npccl_status_t bootstrap_run(struct npccl_comm *c, const struct boot_src *src,
					  char *err, size_t errlen);
NPCCL_HIDDEN npccl_status_t launcher_resolve(int *rank, int *nranks, npccl_unique_id_t *id,
					     int *listen_fd_for_root, char *err, size_t errlen);
NPCCL_HIDDEN npccl_status_t comm_init_common(npccl_comm_t *out, int nranks,
					     const struct boot_src *src, int rank, char *err,
					     size_t errlen);

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

/* ---- RDMA verbs transport (rdma_setup.c, transport_rdma.c, rdma_regcache.c) */
/* Before the address exchange: looks for a device as NPCCL_TRANSPORT and
 * NPCCL_IB_DEV say and sets PEER_F_* in *flags; fails only when
 * NPCCL_TRANSPORT=rdma and there is none. */
NPCCL_HIDDEN npccl_status_t rdma_probe(struct npccl_comm *c, uint16_t *flags, char *err,
				       size_t errlen);
/* After the address exchange: NPCCL_TRANSPORT=rdma on any rank needs RDMA
 * between every pair of hosts (same verdict on every rank). */
NPCCL_HIDDEN npccl_status_t rdma_check_table(struct npccl_comm *c, char *err, size_t errlen);
/* With the TCP connections up: queue pairs to the remote peers whose ends
 * both have a device, connected through their data sockets (then closed);
 * those peers get rdma_transport. Releases the device if no peer uses it. */
NPCCL_HIDDEN npccl_status_t rdma_connect(struct npccl_comm *c, char *err, size_t errlen);
/* destroy: waits (at most timeout_ms) until this rank's writes completed,
 * so what it sent is in the peers' memory before it says goodbye */
NPCCL_HIDDEN void rdma_flush(struct npccl_comm *c, int timeout_ms);
NPCCL_HIDDEN void rdma_teardown(struct npccl_comm *c);
/* comm_wait: the completion channel to sleep on (armed), -1 if none;
 * *pending when completions arrived meanwhile (do not sleep) */
NPCCL_HIDDEN int rdma_sleep_fd(struct npccl_comm *c, bool *pending);
NPCCL_HIDDEN void rdma_after_sleep(struct npccl_comm *c);
/* npccl_mem_free and destroy: forget the registration of an allocation */
NPCCL_HIDDEN void rdma_mem_forget(struct npccl_comm *c, const void *base);
/* "rdma0" or NULL */
NPCCL_HIDDEN const char *rdma_device(struct npccl_comm *c);

/* ---- shm transport setup (transport_shm.c) ------------------------------ */
NPCCL_HIDDEN npccl_status_t shm_listen(struct npccl_comm *c, char *err, size_t errlen);
NPCCL_HIDDEN void shm_layout_compute(struct shm_layout *l, int nlocal);
NPCCL_HIDDEN npccl_status_t shm_setup(struct npccl_comm *c, char *err, size_t errlen);
NPCCL_HIDDEN void shm_teardown(struct npccl_comm *c);

#endif
