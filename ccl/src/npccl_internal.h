/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npccl_internal.h - structures shared by the ccl sources: the communicator,
 * peers, point-to-point requests, the wire header, the shared-memory control
 * block. The functions are declared per layer: base/base.h (included here),
 * transport/transport.h, algo/algo.h, dispatch/dispatch.h, queue/queue.h,
 * setup/setup.h; a file includes its own layer's header and those below.
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

/* the bottom layer, usable everywhere; the others have a header each:
 * transport/transport.h, algo/algo.h, dispatch/dispatch.h, queue/queue.h,
 * setup/setup.h */
#include "base/base.h"

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
	/* shm send by rendezvous (transport_shm.c): the receiver copies the
	 * message straight out of sbuf; done once it consumed slot rndv_slot */
	bool rndv;
	uint64_t rndv_slot;
	uint64_t grant;		/* sbuf's grant in my space, 0: none */
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
	int space_fd;		/* local: the peer's npushm space (its buffers), -1 if none */
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
	/* optional: a send the communicator's failure left in the queue; after
	 * it, the peer no longer reaches the send buffer */
	void (*abandon_send)(struct npccl_comm *c, struct peer *p, struct req *r);
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
	/* at init only (algo_cma.c): the area peers read to check and time
	 * single copies (its first word holds the pid), its grant */
	char *cma_probe_area;
	uint64_t cma_probe_grant;
	/* single copy between local ranks, timed at init and agreed (MAX over
	 * the ranks; 0: not timed): a copy's fixed cost, and how much longer
	 * than a local memcpy it takes per byte beyond that (page pinning) */
	double cma_call_us, cma_copy_ratio;
	struct npushm_space *space;	/* my space, peers read my buffers through it; NULL: none */
	uint64_t space_grants[2];	/* this call's grants (send, receive buffer), 0: none */
	/* npccl_comm_copy_stats: written by the exec role, read by any thread */
	struct {
		atomic_uint_fast64_t space_bytes, space_copies, cma_bytes, cma_copies, shm_bytes;
	} copied;

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


#endif
