/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npccl.h - collective communication for npushm: AllReduce, AllGather,
 * ReduceScatter, Broadcast, Reduce, Gather, Scatter, AllToAll, Barrier and
 * Send/Recv between processes, over shared memory on one host and TCP
 * between hosts.
 *
 * Tutorial
 * --------
 * Every process ("rank") joins a communicator, then all ranks call the same
 * collectives in the same order:
 *
 *     npccl_unique_id_t id;                       // on one process:
 *     npccl_get_unique_id(&id);                   //   serves the rendezvous
 *     // ...hand `id` to every rank (fork, file, npccl_unique_id_to_string)...
 *     npccl_comm_t comm;
 *     npccl_status_t st = npccl_comm_init_rank(&comm, nranks, &id, rank);
 *     if (st == NPCCL_OK)
 *         st = npccl_allreduce(in, out, n, NPCCL_FLOAT32, NPCCL_SUM, comm);
 *     if (st != NPCCL_OK)
 *         fprintf(stderr, "npccl: %s\n", npccl_strerror(st));
 *     npccl_comm_destroy(comm);
 *
 * Under a launcher, npccl_comm_init_env() reads the launcher's variables
 * instead of taking an id (torchrun: RANK, WORLD_SIZE, MASTER_ADDR,
 * MASTER_PORT; Open MPI: OMPI_COMM_WORLD_RANK/SIZE; MPICH/Hydra:
 * PMI_RANK/PMI_SIZE), so `mpirun -np 4 ./app` and
 * `torchrun --nproc-per-node 4 app` both work:
 *
 *     char err[256];
 *     if (npccl_comm_init_env(&comm, err, sizeof(err)) != NPCCL_OK)
 *         fprintf(stderr, "npccl: %s\n", err);
 *
 * docs/ccl.md says how the rendezvous address is found in each case.
 *
 * Ranks on the same host (same boot id and network namespace) exchange data
 * through shared memory; the others over TCP. For each call the library picks
 * an algorithm from a cost model measured at init; npccl_explain() tells which
 * one and the predicted time, NPCCL_ALGO or npccl_comm_set_algo() override it.
 *
 * Failures: every call has a deadline (NPCCL_TIMEOUT_MS, default 30000 ms).
 * A peer that died, stopped or called a different operation makes the call
 * fail on every surviving rank with a status and a message naming the rank
 * and the operation's sequence number (npccl_comm_last_error()). After such a
 * failure the communicator only accepts npccl_comm_destroy/npccl_comm_abort.
 *
 * Buffers: the library never keeps a pointer to a caller's buffer after a call
 * returns, and never frees one. Send buffers are only read; receive buffers
 * are only written within the bytes the call names. A call is "in place" when
 * the send and receive pointers are equal (for AllGather and Gather: when the
 * send buffer is the caller's own block inside the receive buffer, for
 * ReduceScatter and Scatter the reverse); any other overlap is an error.
 *
 * Non-blocking calls: every collective and point-to-point call has an
 * `_async` form that returns at once with a request (npccl_request_test,
 * npccl_request_wait with or without a timeout, npccl_request_free). The
 * calls of a communicator run in the order they were issued, blocking and
 * non-blocking alike; collectives run one after the other, while
 * point-to-point messages, once their turn came, travel in the background,
 * so a rank may post a send and a receive to the same peer and then wait
 * for both (pairwise exchanges do not deadlock). npccl_group_start() /
 * npccl_group_end() do the same for the blocking npccl_send/npccl_recv:
 * between them they only record, npccl_group_end() posts them all at once
 * and waits for all (as NCCL's group calls).
 *
 * Thread safety: functions taking no communicator are thread-safe, and so
 * is every call on a communicator: several threads may issue calls on the
 * same communicator at once. Calls are serialised in the order they enter
 * the library; since every rank must issue the same collectives in the same
 * order, threads that issue collectives on one communicator concurrently
 * must agree on an order themselves (or use one communicator each). A
 * request may be tested, waited for and freed from any thread, once.
 * npccl_comm_last_error() is per thread. npccl_comm_abort() may be called
 * from any thread while other threads are blocked in calls on the same
 * communicator (they return NPCCL_ERR_ABORTED); npccl_comm_destroy() must
 * not race with other calls on the same communicator.
 */
#ifndef NPCCL_H
#define NPCCL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(NPCCL_BUILDING) && defined(__GNUC__)
#define NPCCL_API __attribute__((visibility("default")))
#else
#define NPCCL_API
#endif

#define NPCCL_VERSION_MAJOR 1
#define NPCCL_VERSION_MINOR 2	/* version nodes NPCCL_1.0 and NPCCL_1.1 (npccl_comm_copy_stats) */

/** Status of every call that can fail. npccl_strerror() names it. */
typedef enum npccl_status {
	NPCCL_OK = 0,
	NPCCL_ERR_INVALID_ARG,	/* bad argument: NULL, bad dtype, rank out of range... */
	NPCCL_ERR_NOMEM,	/* out of memory */
	NPCCL_ERR_SYSTEM,	/* a system call failed (see npccl_comm_last_error) */
	NPCCL_ERR_BOOTSTRAP,	/* rendezvous failed: root unreachable, rank missing, port in use */
	NPCCL_ERR_TIMEOUT,	/* a peer did not arrive within the deadline */
	NPCCL_ERR_PEER_DEAD,	/* a peer process exited or its connection closed */
	NPCCL_ERR_MISMATCH,	/* ranks called different operations/dtypes/counts/roots */
	NPCCL_ERR_PROTOCOL,	/* truncated or corrupt frame, peer of another communicator */
	NPCCL_ERR_ABORTED,	/* the communicator was aborted or failed earlier */
	NPCCL_ERR_UNSUPPORTED,	/* combination not supported (e.g. algorithm for this call) */
	NPCCL_IN_PROGRESS,	/* not an error: the request has not completed yet */
	NPCCL_NUM_STATUS
} npccl_status_t;

typedef enum npccl_dtype {
	NPCCL_INT8, NPCCL_UINT8, NPCCL_INT32, NPCCL_UINT32, NPCCL_INT64, NPCCL_UINT64,
	NPCCL_FLOAT16, NPCCL_BFLOAT16, NPCCL_FLOAT32, NPCCL_FLOAT64,
	NPCCL_NUM_DTYPES
} npccl_dtype_t;

/* f16 and bf16 are reduced in f32 and rounded to nearest even. AVG is the
 * SUM divided by the number of ranks once at the end (integer division
 * truncates toward zero). Integer SUM/PROD wrap modulo 2^bits. Floating-point
 * MIN/MAX propagate NaN (a NaN on any rank gives NaN; which NaN payload, when
 * several differ, is unspecified) and order -0 below +0, so every rank and
 * every algorithm give the same result. */
typedef enum npccl_redop {
	NPCCL_SUM, NPCCL_PROD, NPCCL_MIN, NPCCL_MAX, NPCCL_AVG,
	NPCCL_NUM_REDOPS
} npccl_redop_t;

typedef enum npccl_coll {
	NPCCL_COLL_ALLREDUCE, NPCCL_COLL_ALLGATHER, NPCCL_COLL_REDUCE_SCATTER,
	NPCCL_COLL_BROADCAST, NPCCL_COLL_REDUCE, NPCCL_COLL_GATHER, NPCCL_COLL_SCATTER,
	NPCCL_COLL_ALLTOALL, NPCCL_COLL_BARRIER, NPCCL_COLL_SEND, NPCCL_COLL_RECV,
	NPCCL_NUM_COLLS
} npccl_coll_t;

/* Algorithms. Not every collective has every algorithm:
 * npccl_algo_supported() tells. */
typedef enum npccl_algo {
	NPCCL_ALGO_AUTO = 0,	/* cost model picks (default) */
	NPCCL_ALGO_RING,	/* ring / pipelined chain */
	NPCCL_ALGO_TREE,	/* pipelined (double) binary tree */
	NPCCL_ALGO_RECDOUBLING,	/* recursive doubling (Bruck for AllGather) */
	NPCCL_ALGO_RABENSEIFNER,	/* recursive-halving reduce-scatter + doubling allgather */
	NPCCL_ALGO_DIRECT,	/* every rank talks to every rank; for tiny messages */
	NPCCL_ALGO_SHM,		/* one host only: ranks reduce slices straight out of shared memory */
	NPCCL_ALGO_HIER,	/* several hosts: intra-host reduce-scatter, inter-host, intra-host allgather */
	NPCCL_ALGO_CMA,		/* one host: each rank copies straight from (or into) its
				 * peers' private buffers, through their npushm spaces or
				 * by process_vm_readv, where the kernel allows it */
	NPCCL_ALGO_CANONICAL,	/* reductions in one canonical order per element (rank 0, 1,
				 * ..., p-1): the deterministic mode's algorithm; never
				 * picked by the cost model */
	NPCCL_NUM_ALGOS
} npccl_algo_t;

typedef struct npccl_comm *npccl_comm_t;

/** Opaque rendezvous token: the root's address and a random communicator tag. */
#define NPCCL_UNIQUE_ID_BYTES 128
typedef struct npccl_unique_id {
	char internal[NPCCL_UNIQUE_ID_BYTES];
} npccl_unique_id_t;

/** Hex text form of an id (for environment variables and files), NUL included. */
#define NPCCL_UNIQUE_ID_STRLEN (2 * NPCCL_UNIQUE_ID_BYTES + 1)

/* ---- status, logging -------------------------------------------------- */

/** Static English text for a status; never NULL. */
NPCCL_API const char *npccl_strerror(npccl_status_t status);

typedef enum npccl_log_level {
	NPCCL_LOG_ERROR = 1, NPCCL_LOG_WARN, NPCCL_LOG_INFO, NPCCL_LOG_DEBUG
} npccl_log_level_t;

/** Diagnostics go to `fn` (NULL: to stderr, but only up to the level set by
 * NPCCL_LOG=error|warn|info|debug, default: nothing). `msg` is valid during
 * the callback only. The callback may be called from any thread. */
typedef void (*npccl_log_fn)(npccl_log_level_t level, const char *msg, void *user);
NPCCL_API void npccl_set_log_callback(npccl_log_fn fn, void *user);

NPCCL_API const char *npccl_dtype_name(npccl_dtype_t dtype);
NPCCL_API const char *npccl_redop_name(npccl_redop_t op);
NPCCL_API const char *npccl_coll_name(npccl_coll_t coll);
NPCCL_API const char *npccl_algo_name(npccl_algo_t algo);
/** Bytes per element, 0 for an invalid dtype. */
NPCCL_API size_t npccl_dtype_size(npccl_dtype_t dtype);

/* ---- communicators ---------------------------------------------------- */

/** Starts a rendezvous server thread in the calling process (it serves one
 * communicator, then exits, or gives up after NPCCL_BOOTSTRAP_TIMEOUT_MS)
 * and writes its address into *id. The address is the one for
 * NPCCL_SOCKET_ADDR (an IPv4 address) if set, else 127.0.0.1. */
NPCCL_API npccl_status_t npccl_get_unique_id(npccl_unique_id_t *id);

/** Text form of an id: `str` must hold NPCCL_UNIQUE_ID_STRLEN bytes. The
 * reverse accepts trailing white space (a line read from a file). */
NPCCL_API npccl_status_t npccl_unique_id_to_string(const npccl_unique_id_t *id, char *str);
NPCCL_API npccl_status_t npccl_unique_id_from_string(const char *str, npccl_unique_id_t *id);

/** Collective over `nranks` processes: each calls it with its own `rank`
 * (0..nranks-1) and the same id. Blocks until all ranks joined or the
 * bootstrap deadline (NPCCL_BOOTSTRAP_TIMEOUT_MS, default 60000) passed.
 * On failure *comm is NULL and, if `errbuf` is not NULL, a message saying
 * what went wrong is written there (at most errlen bytes, NUL-terminated). */
NPCCL_API npccl_status_t npccl_comm_init_rank(npccl_comm_t *comm, int nranks,
					      const npccl_unique_id_t *id, int rank);
NPCCL_API npccl_status_t npccl_comm_init_rank_err(npccl_comm_t *comm, int nranks,
						  const npccl_unique_id_t *id, int rank,
						  char *errbuf, size_t errlen);

/** Out-of-band bootstrap through a key-value store the caller already has
 * (a framework's rendezvous: torch.distributed's Store, a PMIx server, a
 * shared file system...), the way UCC takes an out-of-band allgather.
 * `set` stores `len` bytes under the NUL-terminated `key`; `get` waits up to
 * `timeout_ms` for `key` to exist and copies its value (at most `cap`
 * bytes) into `val`, its length into *len. Both return 0 on success and
 * non-zero on failure (for `get`: also when the key did not appear in time).
 * They are called from the calling thread only, during
 * npccl_comm_init_kv(). Keys start with `prefix` (may be NULL); the store
 * must not hold keys of an earlier communicator under the same prefix. */
typedef struct npccl_kv_store {
	int (*set)(void *user, const char *key, const void *val, size_t len);
	int (*get)(void *user, const char *key, void *val, size_t cap, size_t *len,
		   int timeout_ms);
	void *user;
} npccl_kv_store_t;

/** Collective over `nranks` processes: each calls it with its own `rank`
 * and a store all of them reach. Every rank publishes its address and
 * reads the others' (deadline NPCCL_BOOTSTRAP_TIMEOUT_MS, or `timeout_ms`
 * if > 0); a rank that never publishes is named in the error. The address a
 * rank advertises is NPCCL_SOCKET_ADDR, else the one that routes to
 * NPCCL_ROOT_ADDR or MASTER_ADDR (the store's host), else 127.0.0.1 (enough
 * on one host). errbuf as for npccl_comm_init_rank_err. */
NPCCL_API npccl_status_t npccl_comm_init_kv(npccl_comm_t *comm, int nranks, int rank,
					    const npccl_kv_store_t *store, const char *prefix,
					    int timeout_ms, char *errbuf, size_t errlen);

/** Creates the communicator from the launcher's environment (see top). */
NPCCL_API npccl_status_t npccl_comm_init_env(npccl_comm_t *comm, char *errbuf, size_t errlen);

/** Collective over `comm`: ranks with the same `color` (>= 0) form a new
 * communicator ordered by (key, old rank). NPCCL_SPLIT_NOCOLOR yields NULL. */
#define NPCCL_SPLIT_NOCOLOR (-1)
NPCCL_API npccl_status_t npccl_comm_split(npccl_comm_t comm, int color, int key,
					  npccl_comm_t *newcomm);

/** Lets the calls already issued on `comm` finish (each within its deadline),
 * then releases everything; accepts NULL. Requests not yet freed stay valid
 * (completed) until npccl_request_free. Not collective: a rank may destroy its
 * communicator while the others still use theirs (they then see it as gone).
 * Must not race with other calls on `comm`. */
NPCCL_API npccl_status_t npccl_comm_destroy(npccl_comm_t comm);

/** Tells the peers this rank gives up (they fail with NPCCL_ERR_ABORTED
 * naming this rank), then releases everything like npccl_comm_destroy.
 * Never blocks for long and always returns; accepts NULL. */
NPCCL_API npccl_status_t npccl_comm_abort(npccl_comm_t comm);

NPCCL_API npccl_status_t npccl_comm_rank(npccl_comm_t comm, int *rank);
NPCCL_API npccl_status_t npccl_comm_size(npccl_comm_t comm, int *size);
/** Number of hosts in the communicator and the index of the caller's. */
NPCCL_API npccl_status_t npccl_comm_hosts(npccl_comm_t comm, int *nhosts, int *host);

/** Message for the calling thread's last failed call on `comm` ("" if none;
 * another thread's failure on `comm` if this thread made none). Calls on
 * other communicators leave it alone. Valid until the calling thread's next
 * call on `comm` (or until it used four other communicators since). */
NPCCL_API const char *npccl_comm_last_error(npccl_comm_t comm);

/** Deadline for each later call, in milliseconds (> 0). Local setting. */
NPCCL_API npccl_status_t npccl_comm_set_timeout(npccl_comm_t comm, int timeout_ms);

/** Forces `algo` for `coll` (NPCCL_ALGO_AUTO restores the cost model). Must
 * be called with the same arguments on every rank. NPCCL_ERR_UNSUPPORTED if
 * the collective has no such algorithm on this communicator. */
NPCCL_API npccl_status_t npccl_comm_set_algo(npccl_comm_t comm, npccl_coll_t coll,
					     npccl_algo_t algo);
/** Deterministic reductions (`on` != 0; default NPCCL_DETERMINISTIC, else
 * off): from the next call on, AllReduce, ReduceScatter and Reduce on
 * floating-point data run NPCCL_ALGO_CANONICAL (on one host: CMA where it
 * is forced or modelled, AllReduce otherwise SHM, both reducing in the same
 * order) whatever other algorithm is forced or modelled, so each result element is ((x0 op x1) op x2) ... op x(p-1)
 * over the ranks' inputs in rank order, with the same kernels: bitwise the
 * same for every algorithm setting, transport, message size, arrival order
 * and placement of ranks on hosts, and on every rank. (Integer reductions
 * are exact in any order and keep their algorithms.) Must be called with
 * the same value on every rank, between calls. */
NPCCL_API npccl_status_t npccl_comm_set_deterministic(npccl_comm_t comm, int on);
/** Whether `algo` can run `coll` on `comm` (e.g. SHM needs a single host). */
NPCCL_API int npccl_algo_supported(npccl_comm_t comm, npccl_coll_t coll, npccl_algo_t algo);

/** What the library would do for a call, and the cost model's prediction. */
typedef struct npccl_explanation {
	npccl_algo_t algo;
	double predicted_us;	/* predicted time of the call in microseconds */
	const char *transport;	/* "none" (one rank), "shm", "tcp", "rdma", "shm+tcp"
				 * or "shm+rdma" */
	char text[256];		/* human-readable: algorithm, model terms, why */
} npccl_explanation_t;

NPCCL_API npccl_status_t npccl_explain(npccl_comm_t comm, npccl_coll_t coll, size_t count,
				       npccl_dtype_t dtype, npccl_explanation_t *out);

/** Cost-model constants measured at init (agreed by all ranks). */
typedef struct npccl_cost_model {
	double shm_alpha_us, shm_beta_us_per_mb;	/* latency; inverse bandwidth */
	/* between hosts, measured over the transport that joins rank 0 and the
	 * first rank of another host (TCP or RDMA: npccl_explain's transport
	 * says which); defaults when there is one host */
	double tcp_alpha_us, tcp_beta_us_per_mb;
	double gamma_us_per_mb;				/* reduction (f32 sum) */
} npccl_cost_model_t;
NPCCL_API npccl_status_t npccl_comm_cost_model(npccl_comm_t comm, npccl_cost_model_t *out);

/** How this rank's data moved between the private buffers of ranks on its
 * host since the communicator was made (version node NPCCL_1.1): what a test or
 * a monitor reads to see which path calls took. A single copy goes through
 * a peer's npushm space (the module; no ptrace access needed) or, where a
 * peer has none, by cross-memory attach (process_vm_readv/writev); the
 * other path copies into shared memory and out again. Counts only grow;
 * any thread may read them while calls run. */
typedef struct npccl_copy_stats {
	uint64_t space_bytes, space_copies;	/* single copies through a peer's space */
	uint64_t cma_bytes, cma_copies;		/* single copies by cross-memory attach */
	uint64_t shm_bytes;	/* copied into shared memory (FIFOs, AllReduce staging) */
	uint64_t reserved[3];	/* 0 */
} npccl_copy_stats_t;
NPCCL_API npccl_status_t npccl_comm_copy_stats(npccl_comm_t comm, npccl_copy_stats_t *out);

/* ---- collectives -------------------------------------------------------
 * All are collective over the communicator (Send/Recv: over the pair) and
 * block until this rank's part is done. count == 0 is allowed everywhere. */

/** recvbuf[i] = op over ranks of sendbuf[i], i < count. */
NPCCL_API npccl_status_t npccl_allreduce(const void *sendbuf, void *recvbuf, size_t count,
					 npccl_dtype_t dtype, npccl_redop_t op, npccl_comm_t comm);
/** recvbuf (count*nranks) = rank 0's sendbuf (count), rank 1's, ... */
NPCCL_API npccl_status_t npccl_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
					 npccl_dtype_t dtype, npccl_comm_t comm);
/** recvbuf (recvcount) = block `rank` of op over ranks of sendbuf (recvcount*nranks). */
NPCCL_API npccl_status_t npccl_reduce_scatter(const void *sendbuf, void *recvbuf,
					      size_t recvcount, npccl_dtype_t dtype,
					      npccl_redop_t op, npccl_comm_t comm);
/** recvbuf = root's sendbuf on every rank (sendbuf is only read on root). */
NPCCL_API npccl_status_t npccl_broadcast(const void *sendbuf, void *recvbuf, size_t count,
					 npccl_dtype_t dtype, int root, npccl_comm_t comm);
/** recvbuf on root = op over ranks of sendbuf (recvbuf unused elsewhere). */
NPCCL_API npccl_status_t npccl_reduce(const void *sendbuf, void *recvbuf, size_t count,
				      npccl_dtype_t dtype, npccl_redop_t op, int root,
				      npccl_comm_t comm);
/** recvbuf on root (sendcount*nranks) = every rank's sendbuf in rank order. */
NPCCL_API npccl_status_t npccl_gather(const void *sendbuf, void *recvbuf, size_t sendcount,
				      npccl_dtype_t dtype, int root, npccl_comm_t comm);
/** recvbuf (recvcount) = block `rank` of root's sendbuf (recvcount*nranks). */
NPCCL_API npccl_status_t npccl_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
				       npccl_dtype_t dtype, int root, npccl_comm_t comm);
/** Block j of sendbuf (count each) goes to rank j's block `rank` of recvbuf. */
NPCCL_API npccl_status_t npccl_alltoall(const void *sendbuf, void *recvbuf, size_t count,
					npccl_dtype_t dtype, npccl_comm_t comm);
NPCCL_API npccl_status_t npccl_barrier(npccl_comm_t comm);
/** Point to point; messages between a pair match in call order; the counts
 * and dtypes of matching calls must agree (else NPCCL_ERR_MISMATCH). `peer`
 * is another rank: unlike NCCL's grouped ncclSend/ncclRecv, a rank cannot
 * send to itself, in a group or not (NPCCL_ERR_INVALID_ARG; copy locally). */
NPCCL_API npccl_status_t npccl_send(const void *buf, size_t count, npccl_dtype_t dtype, int peer,
				    npccl_comm_t comm);
NPCCL_API npccl_status_t npccl_recv(void *buf, size_t count, npccl_dtype_t dtype, int peer,
				    npccl_comm_t comm);
/** Send to `dst` and receive from `src` at the same time (no deadlock in rings).
 * The two buffers must not overlap (NPCCL_ERR_INVALID_ARG): there is no in
 * place form, as MPI_Sendrecv has none. */
NPCCL_API npccl_status_t npccl_sendrecv(const void *sendbuf, size_t sendcount, int dst,
					void *recvbuf, size_t recvcount, int src,
					npccl_dtype_t dtype, npccl_comm_t comm);

/* ---- non-blocking calls and requests ------------------------------------
 * Each *_async call takes the arguments of its blocking form and returns a
 * request in *req (NULL on failure). Argument errors are reported at once,
 * as by the blocking form; everything else (peers, deadline, mismatches) by
 * the request. The buffers belong to the call until the request completed:
 * the caller must neither free nor touch (receive buffers) or change (send
 * buffers) them before npccl_request_test/_wait returned something else
 * than NPCCL_IN_PROGRESS. The call's deadline (npccl_comm_set_timeout)
 * starts when its turn comes, not when it is issued. */
typedef struct npccl_request *npccl_request_t;

NPCCL_API npccl_status_t npccl_allreduce_async(const void *sendbuf, void *recvbuf, size_t count,
					       npccl_dtype_t dtype, npccl_redop_t op,
					       npccl_comm_t comm, npccl_request_t *req);
NPCCL_API npccl_status_t npccl_allgather_async(const void *sendbuf, void *recvbuf,
					       size_t sendcount, npccl_dtype_t dtype,
					       npccl_comm_t comm, npccl_request_t *req);
NPCCL_API npccl_status_t npccl_reduce_scatter_async(const void *sendbuf, void *recvbuf,
						    size_t recvcount, npccl_dtype_t dtype,
						    npccl_redop_t op, npccl_comm_t comm,
						    npccl_request_t *req);
NPCCL_API npccl_status_t npccl_broadcast_async(const void *sendbuf, void *recvbuf, size_t count,
					       npccl_dtype_t dtype, int root, npccl_comm_t comm,
					       npccl_request_t *req);
NPCCL_API npccl_status_t npccl_reduce_async(const void *sendbuf, void *recvbuf, size_t count,
					    npccl_dtype_t dtype, npccl_redop_t op, int root,
					    npccl_comm_t comm, npccl_request_t *req);
NPCCL_API npccl_status_t npccl_gather_async(const void *sendbuf, void *recvbuf, size_t sendcount,
					    npccl_dtype_t dtype, int root, npccl_comm_t comm,
					    npccl_request_t *req);
NPCCL_API npccl_status_t npccl_scatter_async(const void *sendbuf, void *recvbuf,
					     size_t recvcount, npccl_dtype_t dtype, int root,
					     npccl_comm_t comm, npccl_request_t *req);
NPCCL_API npccl_status_t npccl_alltoall_async(const void *sendbuf, void *recvbuf, size_t count,
					      npccl_dtype_t dtype, npccl_comm_t comm,
					      npccl_request_t *req);
NPCCL_API npccl_status_t npccl_barrier_async(npccl_comm_t comm, npccl_request_t *req);
/** The send completes once its data left the caller's buffer (it may still be
 * in flight); the receive once the data is in the buffer. */
NPCCL_API npccl_status_t npccl_send_async(const void *buf, size_t count, npccl_dtype_t dtype,
					  int peer, npccl_comm_t comm, npccl_request_t *req);
NPCCL_API npccl_status_t npccl_recv_async(void *buf, size_t count, npccl_dtype_t dtype, int peer,
					  npccl_comm_t comm, npccl_request_t *req);

/** NPCCL_OK once the call completed successfully, NPCCL_IN_PROGRESS while it
 * has not, else the call's failure status (npccl_request_error() says why,
 * with the same text a blocking call would have given). Never blocks. */
NPCCL_API npccl_status_t npccl_request_test(npccl_request_t req);
/** Waits for completion: timeout_ms < 0 without limit (the calling thread
 * then runs the communicator's pending calls itself when no other thread
 * does), 0 = test, > 0 at most that long (NPCCL_IN_PROGRESS when it passed;
 * the call goes on: a wait's timeout is not the call's deadline). Returns as
 * npccl_request_test. */
NPCCL_API npccl_status_t npccl_request_wait(npccl_request_t req, int timeout_ms);
/** Why the request failed ("" while it has not): valid until it is freed. */
NPCCL_API const char *npccl_request_error(npccl_request_t req);
/** Called once when the request completes, with its final status, from the
 * thread that completed it (a library thread, or one inside
 * npccl_request_wait); at once in the calling thread if it already has. The
 * callback must not block on calls of the same communicator. One callback
 * per request; setting another replaces it before it ran. */
typedef void (*npccl_request_fn)(npccl_request_t req, npccl_status_t status, void *user);
NPCCL_API npccl_status_t npccl_request_set_callback(npccl_request_t req, npccl_request_fn fn,
						    void *user);
/** Releases the caller's handle; accepts NULL. A request freed before it
 * completed still runs to completion (its buffers stay in use until then).
 * Requests stay valid after npccl_comm_destroy/abort until freed (those
 * complete the ones still pending with NPCCL_ERR_ABORTED). */
NPCCL_API npccl_status_t npccl_request_free(npccl_request_t req);

/** Grouped point-to-point calls (per thread, may nest): after
 * npccl_group_start(), npccl_send/npccl_recv/npccl_sendrecv only record the
 * message and return NPCCL_OK; the outermost npccl_group_end() posts all of
 * them at once, in the order they were made, and blocks until all completed
 * (first failure returned; npccl_comm_last_error() on its communicator says
 * why). A group holds the calls of one communicator; collectives inside a
 * group are NPCCL_ERR_UNSUPPORTED (use the _async forms to overlap them).
 * A receive's buffer must not overlap any other buffer of the group (sends
 * may share theirs): npccl_group_end() then posts nothing and returns
 * NPCCL_ERR_INVALID_ARG naming the two calls. */
NPCCL_API npccl_status_t npccl_group_start(void);
NPCCL_API npccl_status_t npccl_group_end(void);

/* ---- memory shared with the peers (zero-copy AllReduce) ----------------
 * Like NCCL's ncclMemAlloc + buffer registration: memory from
 * npccl_mem_alloc lives in a shared region that every rank on the host has
 * mapped. When the send and the receive buffer of an AllReduce both lie in
 * such memory on every rank of a single-host communicator, each rank reduces
 * its slice straight from all ranks' send buffers into all ranks' receive
 * buffers: no staging copies (docs/ccl.md, "Zero-copy AllReduce"). Any other
 * buffer keeps working through the staging slots; results are identical. */

/** Allocates `bytes` (> 0) of shared memory: page-aligned, zeroed,
 * prefaulted. Collective: every rank of `comm` calls it with the same
 * `bytes`, in the same order relative to its other calls (it blocks until
 * the ranks on this host have exchanged the regions; deadline and failure
 * reports as for a collective). *ptr [out]: the buffer, NULL on failure. It
 * stays valid until npccl_mem_free or npccl_comm_destroy, whichever comes
 * first; the caller owns its contents. */
NPCCL_API npccl_status_t npccl_mem_alloc(npccl_comm_t comm, size_t bytes, void **ptr);
/** Releases a buffer from npccl_mem_alloc on `comm` (NULL: nothing to do).
 * Local: it talks to no peer, but runs once the calls issued before it on
 * `comm` are done (they may still use the buffer). Every rank must free the
 * same buffers in the same order relative to its collective calls (a later shared-memory AllReduce or
 * Barrier fails with NPCCL_ERR_MISMATCH otherwise). */
NPCCL_API npccl_status_t npccl_mem_free(npccl_comm_t comm, void *ptr);

/* ---- one model load for a cluster --------------------------------------
 * libnpushm's npushm_cluster_load (npushm_cluster.h) over this
 * communicator's collectives (ccl/src/model/model_load.c). A safetensors file read on one host is broadcast to every other host of
 * the communicator and published there as a libnpushm model (npushm.h:
 * npushm_model_attach) under the same name and content hash. On every host
 * the lowest rank (the root on the root's host) loads; the other ranks take
 * part in the broadcast only.
 *
 * Steps: the root hashes the file (npushm_file_hash) and sends name, size
 * and hash; every loading rank checks that the name is free on its host;
 * the file's bytes are broadcast in chunks (RDMA between hosts where there
 * is a device) into an anonymous memory file on each host; each host loads
 * its copy under a staging name ("npccl-staging.<pid>.<hash>", a complete
 * sealed model), and its content hash is compared with the root's: a
 * different hash fails the load. Only when every host holds a verified copy
 * does each publish the real name (and drop the staging name); a failure
 * while publishing removes the name on every host that published it.
 * So a failure anywhere before that point, a rank killed mid-broadcast
 * included, leaves no name on any host; the result's report says, per
 * host, what happened.
 *
 * Limits: each receiving host holds the file twice while loading (memory
 * file + region). A rank killed in the short window between its staging
 * load and the publish leaves its staging name on its host (the next
 * cluster load on that host removes staging names of processes that are
 * gone). Thread safety: as a collective; one load per communicator at
 * a time. */
#define NPCCL_MODEL_REPORT_LEN 1024
typedef struct npccl_model_load_result {
	uint8_t hash[16];	/* content hash, as npushm_model_info's */
	char hash_hex[33];
	uint64_t source_size;	/* bytes of the file */
	int nhosts;		/* hosts of the communicator */
	int published;		/* hosts where the name is published on return */
	int deduplicated;	/* this host reused an identical published copy */
	char report[NPCCL_MODEL_REPORT_LEN];	/* per host: "host 1 (rank 2 on h1): ok; ..." */
} npccl_model_load_result_t;

/** Collective: loads the safetensors file `path` (read on rank `root`
 * only; other ranks may pass NULL) and publishes it as model `name` (the
 * same on every rank) with permission bits `mode` (0: 0640) on every host
 * of `comm`. NPCCL_OK when every host published it; otherwise nothing is
 * published (see above) and npccl_comm_last_error() names the failing
 * host and rank: INVALID_ARG (bad name or root, the name is taken on a
 * host, a bad file), MISMATCH (ranks passed different names or roots),
 * PROTOCOL (a host's copy has another content hash), SYSTEM (a host could
 * not load or publish), or the collective's own error (a dead or stopped
 * rank: the communicator is then unusable). `result` [out, may be NULL]. */
NPCCL_API npccl_status_t npccl_model_load(npccl_comm_t comm, int root, const char *path,
					  const char *name, uint32_t mode,
					  npccl_model_load_result_t *result);

#ifdef __cplusplus
}
#endif
#endif /* NPCCL_H */
