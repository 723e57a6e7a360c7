/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * transport.h - the transport layer's calls (transport/): point-to-point
 * messages and the one wait loop, failure diagnosis, npccl_mem_alloc
 * memory, the RDMA and shm transports' setup. For algo/, dispatch/,
 * queue/, setup/ and api/.
 */
#ifndef NPCCL_TRANSPORT_H
#define NPCCL_TRANSPORT_H

#include "npccl_internal.h"

/* npccl_mem_alloc / npccl_mem_free when their turn comes (exec role) */
NPCCL_HIDDEN npccl_status_t shm_mem_reserve(struct npccl_comm *c);
NPCCL_HIDDEN npccl_status_t shm_mem_alloc_run(struct npccl_comm *c, size_t bytes, void **ptr);
NPCCL_HIDDEN npccl_status_t shm_mem_free_run(struct npccl_comm *c, void *ptr);

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
/* wait until ready(arg) is true, handling control messages and deadline */
NPCCL_HIDDEN npccl_status_t comm_wait(struct npccl_comm *c, bool (*ready)(void *), void *arg,
				      int waiting_on);
NPCCL_HIDDEN void doorbell_ring(struct npccl_comm *c, int rank);
NPCCL_HIDDEN void doorbell_ring_all_local(struct npccl_comm *c);
/* a valid received data header h against the expected e: 0, or -1 with the
 * communicator failed (the mismatched call or length named) */
NPCCL_HIDDEN int wire_hdr_expect(struct npccl_comm *c, int rank, const struct wire_hdr *h,
				 const struct wire_hdr *e);
/* advance every per-peer queue; the failure status if a transport failed */
NPCCL_HIDDEN npccl_status_t p2p_progress_all(struct npccl_comm *c);
/* the communicator failed: sends still queued release their buffers (no
 * peer reaches them after it) */
NPCCL_HIDDEN void p2p_abandon(struct npccl_comm *c);

/* ---- message headers (wire.c; wire_hdr_seal/valid: npccl_internal.h) ---- */
/* a data header for the current operation, @len payload bytes, sealed */
NPCCL_HIDDEN void p2p_set_hdr(struct npccl_comm *c, struct wire_hdr *h, uint64_t len);
/* the operation a received header describes */
NPCCL_HIDDEN void wire_hdr_desc(const struct wire_hdr *h, struct op_desc *d);

/* ---- control channels (control.c) -------------------------------------- */
/* read every control channel (and peers' pidfds) for up to timeout_ms,
 * handling what arrives; the communicator's failure status */
NPCCL_HIDDEN npccl_status_t comm_poll_control(struct npccl_comm *c, int timeout_ms);
/* whether p's control channel closed (waiting up to timeout_ms for it, and
 * handling what arrives meanwhile): its process is gone, not just a stream */
NPCCL_HIDDEN bool comm_peer_ctl_closed(struct npccl_comm *c, struct peer *p, int timeout_ms);
NPCCL_HIDDEN npccl_status_t comm_peer_lost(struct npccl_comm *c, int rank, const char *how);
NPCCL_HIDDEN npccl_status_t comm_diagnose_timeout(struct npccl_comm *c);

/* ---- one copy to or from a local peer's private memory (peer_copy.c) ---- */
/* @len bytes between @local and local peer @rank's address @remote (read:
 * from the peer; write: to it): through its npushm space, or by
 * cross-memory attach where it has none; counted in c->copied */
NPCCL_HIDDEN npccl_status_t peer_copy(struct npccl_comm *c, int rank, char *local,
				      uint64_t remote, size_t len, bool write);

/* ---- failure handling (fault.c) ---------------------------------------- */
NPCCL_HIDDEN npccl_status_t comm_fail(struct npccl_comm *c, npccl_status_t st, int culprit,
				      const char *fmt, ...) __attribute__((format(printf, 4, 5)));
NPCCL_HIDDEN void comm_broadcast_abort(struct npccl_comm *c, int culprit);
/* A local peer's process state from /proc: 'T' stopped, 'Z'/'X' exited, 0 unknown. */
NPCCL_HIDDEN char peer_proc_state(struct npccl_comm *c, int rank);
NPCCL_HIDDEN void comm_send_ctl(struct npccl_comm *c, struct peer *p, int type, int culprit,
				int status, const char *text);
/* a control message carrying descriptor fd (SCM_RIGHTS) and hdr.len = len;
 * 0 or -errno */
NPCCL_HIDDEN int comm_send_ctl_fd(struct npccl_comm *c, struct peer *p, int type, uint64_t len,
				  int fd);
NPCCL_HIDDEN void op_desc_format(const struct op_desc *d, char *buf, size_t len);
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
			 * #fault_seq of an npccl_model_load (model/model_load.c) */
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
/* (shm_mem_lookup.c) the allocation holding [p, p + len) and the offset of p, or NULL */
NPCCL_HIDDEN struct shm_mem *shm_mem_find(struct npccl_comm *c, const void *p, size_t len,
					  size_t *off);
NPCCL_HIDDEN struct shm_mem *shm_mem_by_id(struct npccl_comm *c, uint64_t id);
NPCCL_HIDDEN void shm_mem_free_all(struct npccl_comm *c);

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
