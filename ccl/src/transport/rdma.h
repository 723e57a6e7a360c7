/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * rdma.h - state of the RDMA verbs transport, shared by its files:
 * rdma_setup.c (device, queue pairs, connection through the bootstrap's
 * sockets, teardown), transport_rdma.c (the message protocol and the
 * completion queue), rdma_regcache.c (registered caller memory).
 *
 * Protocol, per direction (sender S, receiver R), over one reliable
 * connected queue pair per peer pair:
 *  - R owns a FIFO of `nslots` slots of `slot_bytes` (a 64-byte slot header,
 *    then up to `chunk` payload bytes), registered for remote write. S
 *    copies header and data into its own registered slot of the same index
 *    and RDMA-WRITEs it (with immediate: the slot) into R's; R consumes slots
 *    in order and gives each back with a CREDIT message (SEND).
 *  - Messages of at most `chunk` bytes are eager: one slot, and the send
 *    completes as soon as the data is copied (as TCP's socket buffer does).
 *  - Larger messages wait for R's CTS (SEND: R's expected header, and where
 *    the data goes): into R's own buffer with RDMA WRITEs when that buffer is
 *    registered (zero copy, the last write with immediate), else through the
 *    FIFO in chunks, which R copies or reduces as they arrive. S writes from
 *    its own buffer when registered, else through its slots.
 *  - Headers are checked as on TCP: a different operation is a mismatched
 *    call naming both; S checks R's CTS, R checks every slot header.
 * Every completion carries (kind, index, peer) in its wr_id; the completion
 * queue is shared by the communicator's queue pairs and drained by every
 * progress call, before any verdict on a peer (what it sent before it went
 * is delivered first).
 */
#ifndef NPCCL_RDMA_H
#define NPCCL_RDMA_H

#include "npccl_internal.h"
#include "transport/rdma_verbs.h"

#define RDMA_MAX_SLOTS 16
#define RDMA_RQ_DEPTH 64	/* receives posted per queue pair */
#define RDMA_SQ_DEPTH 64	/* send work requests per queue pair */
#define RDMA_CTL_TX 32		/* control send slots per peer */
#define RDMA_CTL_BYTES 128	/* one control message */
#define RDMA_SLOT_HDR 64
#define RDMA_CTSQ 8		/* CTS messages a sender may hold */
#define RDMA_ZC_PIECE (1u << 20)	/* zero-copy writes are cut into pieces of this */

enum rdma_wr_kind { WR_RECV = 1, WR_CTL_TX, WR_DATA_TX };
static inline uint64_t rdma_wr_id(int kind, int idx, int rank)
{
	return (uint64_t)kind << 48 | (uint64_t)(uint16_t)idx << 32 | (uint32_t)rank;
}

/* immediate data of a data write: kind | message number (low 14 bits) | slot */
#define IMM_SLOT 0x40000000u	/* a FIFO slot was written */
#define IMM_ZC_DONE 0x80000000u	/* the zero-copy message is complete */
#define IMM_KIND_MASK 0xc0000000u
static inline uint32_t imm_make(uint32_t kind, uint32_t msg, uint32_t slot)
{
	return kind | (msg & 0x3fff) << 16 | (slot & 0xffff);
}

/* control messages (SEND into the peer's posted receive buffers) */
enum { CTL_CREDIT = 1, CTL_CTS };
struct rdma_ctl {
	uint32_t magic;		/* RDMA_CTL_MAGIC */
	uint16_t type;
	uint16_t zc;		/* CTS: 1 = into addr/rkey, 0 = through the FIFO */
	uint32_t msg;		/* CTS: the message it is for (direction's count) */
	uint32_t rkey;
	uint64_t addr;
	uint64_t consumed;	/* CREDIT: slots consumed so far (cumulative) */
	struct wire_hdr hdr;	/* CTS: what the receiver expects */
};
#define RDMA_CTL_MAGIC 0x4e505243u	/* "NPRC" */
_Static_assert(sizeof(struct rdma_ctl) <= RDMA_CTL_BYTES, "control message size");

/* the 64 bytes in front of a FIFO slot's payload */
struct slot_hdr {
	struct wire_hdr hdr;	/* the message's header (len: the whole message) */
	uint64_t off;		/* of this piece in the message */
	uint64_t len;		/* of this piece */
};
_Static_assert(sizeof(struct slot_hdr) == RDMA_SLOT_HDR, "slot header size");

/* connection data, exchanged over the pair's bootstrap data socket */
struct rdma_conn {
	uint32_t magic, version;
	uint32_t qpn, psn;
	uint8_t gid[16];
	uint16_t lid;
	uint8_t mtu, is_roce;
	uint32_t rx_rkey;
	uint64_t rx_addr;	/* my FIFO slots for you */
	uint32_t nslots, slot_bytes;
	char dev[32];
};

struct rdma_peer {
	int rank;
	struct ibv_qp *qp;
	char *tx, *rx;		/* nslots x slot_bytes each (registered) */
	char *ctl_rx;		/* RDMA_RQ_DEPTH x RDMA_CTL_BYTES */
	char *ctl_tx;		/* RDMA_CTL_TX x RDMA_CTL_BYTES */
	uint64_t remote_rx;	/* the peer's FIFO for us */
	uint32_t remote_rkey;
	bool ctl_busy[RDMA_CTL_TX];
	int ctl_next;
	int sq_used;		/* send work requests not completed */
	bool qp_error;		/* a completion failed: the pair is unusable */

	/* ---- as sender */
	uint64_t fifo_sent;	/* slots written into the peer's FIFO */
	uint64_t fifo_credit;	/* slots the peer has consumed (credits returned) */
	bool tx_busy[RDMA_MAX_SLOTS];	/* our slot's write not completed yet */
	uint32_t send_msg;	/* number of the head send message (1, 2, ...) */
	bool send_started, send_checked;
	uint64_t send_posted;	/* payload bytes handed to the device or copied */
	int send_inflight;	/* zero-copy writes from the caller's buffer not completed */
	struct rdma_ctl cts[RDMA_CTSQ];	/* CTS received, oldest first */
	int ncts;

	/* ---- as receiver */
	uint64_t fifo_recvd;	/* slots consumed from our FIFO */
	uint64_t fifo_arrived;	/* slots written by the peer (completions seen) */
	uint64_t credit_sent;	/* consumption last reported */
	uint32_t recv_msg;
	bool recv_started, recv_cts_sent, recv_zc, recv_zc_done;
	uint64_t recv_done;	/* payload bytes delivered to the request */
};

/* registered caller memory (rdma_regcache.c) */
struct rdma_reg {
	const char *base;	/* the caller's address range */
	size_t len;
	char *mr_addr;		/* the same bytes in the MR's address space */
	uint32_t lkey, rkey;
	bool writable;
	bool failed;		/* registration refused: copy through the slots */
	bool stale;		/* out of the cache; deregistered once nothing is in flight */
	struct npushm_mr *nmr;	/* registered through libnpushm (NULL: plain ibv_reg_mr) */
	struct ibv_mr *mr;
	uint64_t owner;		/* npccl_mem_alloc id + 1; 0: a caller buffer */
	uint64_t watch_id;	/* caller buffers: the watched range */
	uint64_t last_use;	/* caller buffers: for eviction */
	size_t acct;		/* caller buffers: bytes counted against the cache's limit */
};

struct rdma_ctx {
	const struct verbs_api *v;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	uint8_t port;
	int gid_index;
	bool is_roce;
	union ibv_gid gid;
	uint16_t lid;
	enum ibv_mtu mtu;
	uint32_t max_msg;
	char dev[64];
	bool required;		/* NPCCL_TRANSPORT=rdma */
	int npeers;		/* peers connected over RDMA */
	size_t chunk, slot_bytes;
	int nslots;
	char *mem;		/* every peer's slots and control buffers */
	size_t mem_size;
	struct ibv_mr *mem_mr;
	unsigned unacked;	/* completion events to acknowledge */
	uint64_t completions;	/* work completions handled */
	struct rdma_reg *regs;
	int nregs, regs_cap;
	int nstale;		/* entries waiting to be deregistered */
	struct npushm_watch *watch;	/* caller buffers' ranges (NULL: they are copied) */
	bool watch_tried;
	uint64_t watch_gen;	/* the watch's generation last synced */
	uint64_t reg_serial, use_clock;
	uint64_t stat_zc_send, stat_zc_recv, stat_fifo_send, stat_fifo_recv;
};

/* rdma_regcache.c */
/* The registration covering [p, p + len) (writable if asked), registering
 * an npccl_mem_alloc allocation on first use; NULL if none (copy). *addr:
 * p in the MR's address space. */
const struct rdma_reg *rdma_reg_find(struct npccl_comm *c, const void *p, size_t len,
				     bool writable, char **addr);
void rdma_reg_drop_all(struct npccl_comm *c);

/* transport_rdma.c */
void rdma_poll_cq(struct npccl_comm *c);
int rdma_post_recv(struct rdma_ctx *x, struct rdma_peer *rp, int idx);
/* fault injection (tests): every queue pair of this rank to the error state */
void rdma_break_qps(struct npccl_comm *c);

#endif
