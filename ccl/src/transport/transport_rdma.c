/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * transport_rdma.c - two-sided messages over one RDMA reliable connection
 * per peer pair (the protocol is described in rdma.h): eager FIFO slots for
 * messages up to one pipeline chunk, CTS-driven transfers for larger ones,
 * straight into a registered receive buffer (zero copy) or chunk by chunk
 * through the FIFO (copied or reduced as they arrive), from a registered
 * send buffer without a copy. The completion queue is drained by every
 * progress call; failures become one verdict naming the peer: a failed work
 * completion (queue pair in the error state), a protocol violation, a
 * mismatched header, and a peer whose control channel closed (gone).
 */
#include "transport/rdma.h"
#include "transport/transport.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#define SLOT_NONE 0x7fff
#define IDX_USER 0x8000		/* the write reads the caller's buffer */

static char *tx_slot(const struct rdma_ctx *x, const struct rdma_peer *rp, uint64_t i)
{
	return rp->tx + (i % (uint64_t)x->nslots) * x->slot_bytes;
}

static char *rx_slot(const struct rdma_ctx *x, const struct rdma_peer *rp, uint64_t i)
{
	return rp->rx + (i % (uint64_t)x->nslots) * x->slot_bytes;
}

int rdma_post_recv(struct rdma_ctx *x, struct rdma_peer *rp, int idx)
{
	struct ibv_sge sge = { (uintptr_t)(rp->ctl_rx + (size_t)idx * RDMA_CTL_BYTES), RDMA_CTL_BYTES,
			       x->mem_mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = rdma_wr_id(WR_RECV, idx, rp->rank), .sg_list = &sge,
				  .num_sge = 1 }, *bad;
	return ibv_post_recv(rp->qp, &wr, &bad);
}

static const char *wr_kind_name(int kind)
{
	return kind == WR_RECV ? "receive" : kind == WR_CTL_TX ? "control send" : "write";
}

static void wc_error(struct npccl_comm *c, struct peer *p, const struct ibv_wc *wc, int kind)
{
	struct rdma_ctx *x = c->rdma;
	p->rdma->qp_error = true;
	if (c->failed)
		return;
	/* a peer that died takes its queue pair down with it: say that */
	if (p->gone || comm_peer_ctl_closed(c, p, 200)) {
		comm_peer_lost(c, p->rank, "its RDMA connection failed and its control connection "
					   "closed");
		return;
	}
	char who[128];
	peer_describe(c, p->rank, who, sizeof(who));
	/* a broken connection, as a reset TCP connection is */
	comm_fail(c, NPCCL_ERR_PEER_DEAD, p->rank,
		  "RDMA %s between rank %d and %s failed on %s: %s (work completion status %d, "
		  "vendor error 0x%x); the queue pair is in the error state and the communicator "
		  "is unusable, destroy it",
		  wr_kind_name(kind), c->rank, who, x->dev, x->v->wc_status_str(wc->status),
		  (int)wc->status, wc->vendor_err);
}

static void protocol_error(struct npccl_comm *c, struct peer *p, const char *what)
{
	char who[128];
	peer_describe(c, p->rank, who, sizeof(who));
	comm_fail(c, NPCCL_ERR_PROTOCOL, p->rank, "RDMA protocol error from %s: %s", who, what);
}

static void handle_ctl(struct npccl_comm *c, struct peer *p, const struct rdma_ctl *m,
		       uint32_t bytes)
{
	struct rdma_peer *rp = p->rdma;
	if (bytes < sizeof(*m) || m->magic != RDMA_CTL_MAGIC) {
		protocol_error(c, p, "a control message with a bad magic or size");
		return;
	}
	switch (m->type) {
	case CTL_CREDIT:
		if (m->consumed > rp->fifo_sent) {
			protocol_error(c, p, "it returned credit for slots never written");
			return;
		}
		if (m->consumed > rp->fifo_credit)
			rp->fifo_credit = m->consumed;
		break;
	case CTL_CTS:
		if (rp->ncts == RDMA_CTSQ) {
			protocol_error(c, p, "too many clear-to-send messages");
			return;
		}
		rp->cts[rp->ncts++] = *m;
		break;
	default:
		protocol_error(c, p, "an unknown control message");
	}
}

static void handle_imm(struct npccl_comm *c, struct peer *p, uint32_t imm)
{
	struct rdma_ctx *x = c->rdma;
	struct rdma_peer *rp = p->rdma;
	switch (imm & IMM_KIND_MASK) {
	case IMM_SLOT:
		if ((imm & 0xffff) != rp->fifo_arrived % (uint64_t)x->nslots ||
		    rp->fifo_arrived - rp->fifo_recvd >= (uint64_t)x->nslots) {
			protocol_error(c, p, "a FIFO slot written out of order or without credit");
			return;
		}
		rp->fifo_arrived++;
		break;
	case IMM_ZC_DONE:
		if (!rp->recv_started || !rp->recv_zc || rp->recv_zc_done ||
		    ((imm >> 16) & 0x3fff) != (rp->recv_msg & 0x3fff)) {
			protocol_error(c, p, "a zero-copy completion for a message not asked for");
			return;
		}
		rp->recv_zc_done = true;
		break;
	default:
		protocol_error(c, p, "a write with an unknown immediate");
	}
}

static void handle_wc(struct npccl_comm *c, const struct ibv_wc *wc)
{
	struct rdma_ctx *x = c->rdma;
	int kind = (int)(wc->wr_id >> 48);
	int idx = (int)((wc->wr_id >> 32) & 0xffff);
	int rank = (int)(uint32_t)wc->wr_id;
	if (rank < 0 || rank >= c->nranks || !c->peers[rank].rdma)
		return;
	struct peer *p = &c->peers[rank];
	struct rdma_peer *rp = p->rdma;
	x->completions++;
	if (kind == WR_CTL_TX || kind == WR_DATA_TX) {
		rp->sq_used--;
		if (kind == WR_CTL_TX && idx < RDMA_CTL_TX)
			rp->ctl_busy[idx] = false;
		if (kind == WR_DATA_TX) {
			if ((idx & ~IDX_USER) < x->nslots)
				rp->tx_busy[idx & ~IDX_USER] = false;
			if (idx & IDX_USER)
				rp->send_inflight--;
		}
	}
	if (wc->status != IBV_WC_SUCCESS) {
		wc_error(c, p, wc, kind);
		return;
	}
	if (kind != WR_RECV)
		return;
	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM)
		handle_imm(c, p, ntohl(wc->imm_data));
	else if (wc->opcode == IBV_WC_RECV)
		handle_ctl(c, p, (const void *)(rp->ctl_rx + (size_t)idx * RDMA_CTL_BYTES),
			   wc->byte_len);
	if (!rp->qp_error && rdma_post_recv(x, rp, idx)) {
		rp->qp_error = true;
		comm_fail(c, NPCCL_ERR_SYSTEM, rank, "ibv_post_recv for rank %d failed on %s", rank,
			  x->dev);
	}
}

static int ctl_send(struct npccl_comm *c, struct peer *p, const struct rdma_ctl *m)
{
	struct rdma_ctx *x = c->rdma;
	struct rdma_peer *rp = p->rdma;
	if (rp->sq_used >= RDMA_SQ_DEPTH)
		return 0;
	int k = -1;
	for (int i = 0; i < RDMA_CTL_TX && k < 0; i++) {
		int j = (rp->ctl_next + i) % RDMA_CTL_TX;
		if (!rp->ctl_busy[j])
			k = j;
	}
	if (k < 0)
		return 0;
	rp->ctl_next = (k + 1) % RDMA_CTL_TX;
	char *buf = rp->ctl_tx + (size_t)k * RDMA_CTL_BYTES;
	memcpy(buf, m, sizeof(*m));
	struct ibv_sge sge = { (uintptr_t)buf, sizeof(*m), x->mem_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = rdma_wr_id(WR_CTL_TX, k, p->rank), .sg_list = &sge,
				  .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	if (ibv_post_send(rp->qp, &wr, &bad)) {
		rp->qp_error = true;
		comm_fail(c, NPCCL_ERR_SYSTEM, p->rank, "ibv_post_send to rank %d failed on %s",
			  p->rank, x->dev);
		return -1;
	}
	rp->ctl_busy[k] = true;
	rp->sq_used++;
	return 1;
}

/* gives the peer back the slots consumed since the last report */
static void send_credit(struct npccl_comm *c, struct peer *p)
{
	struct rdma_peer *rp = p->rdma;
	if (rp->credit_sent == rp->fifo_recvd || rp->qp_error || c->failed)
		return;
	struct rdma_ctl m = { .magic = RDMA_CTL_MAGIC, .type = CTL_CREDIT,
			      .consumed = rp->fifo_recvd };
	if (ctl_send(c, p, &m) > 0)
		rp->credit_sent = rp->fifo_recvd;
}

void rdma_poll_cq(struct npccl_comm *c)
{
	struct rdma_ctx *x = c->rdma;
	struct ibv_wc wc[16];
	int n;
	if (!x || !x->cq)
		return;
	while ((n = ibv_poll_cq(x->cq, 16, wc)) > 0)
		for (int i = 0; i < n; i++)
			handle_wc(c, &wc[i]);
	if (n < 0 && !c->failed)
		comm_fail(c, NPCCL_ERR_SYSTEM, -1, "ibv_poll_cq failed on %s", x->dev);
	for (int j = 0; j < c->nranks; j++)
		if (c->peers[j].rdma)
			send_credit(c, &c->peers[j]);
}

void rdma_break_qps(struct npccl_comm *c)
{
	struct rdma_ctx *x = c->rdma;
	for (int j = 0; x && j < c->nranks; j++) {
		struct rdma_peer *rp = c->peers[j].rdma;
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
		if (rp && rp->qp)
			x->v->modify_qp(rp->qp, &a, IBV_QP_STATE);
	}
	npccl_log(NPCCL_LOG_WARN, "rank %d: fault injection: RDMA queue pairs moved to the error "
		  "state", c->rank);
}

/* after draining: the request cannot progress; the peer is gone or fine */
static int check_gone(struct npccl_comm *c, struct peer *p)
{
	if (c->failed)
		return -1;
	if (!p->gone)
		return 0;
	comm_peer_lost(c, p->rank, p->said_bye ? "it left the communicator" :
			"its control connection closed");
	return -1;
}

static void poll_and_inject(struct npccl_comm *c)
{
	if (fault_should_fire(c, FAULT_QP_ERROR))
		rdma_break_qps(c);
	rdma_poll_cq(c);
}

/* ---- sending -------------------------------------------------------------- */

static bool fifo_slot_free(const struct rdma_ctx *x, const struct rdma_peer *rp)
{
	return rp->fifo_sent - rp->fifo_credit < (uint64_t)x->nslots &&
	       !rp->tx_busy[rp->fifo_sent % (uint64_t)x->nslots] && rp->sq_used < RDMA_SQ_DEPTH - 4;
}

/* one piece of the message into the peer's next FIFO slot: header from our
 * slot, payload copied behind it, or read straight from the registered
 * caller buffer (second scatter entry) */
static int post_fifo_piece(struct npccl_comm *c, struct peer *p, struct req *r, uint64_t off,
			   uint64_t len, const char *user_addr, uint32_t user_lkey)
{
	struct rdma_ctx *x = c->rdma;
	struct rdma_peer *rp = p->rdma;
	uint64_t i = rp->fifo_sent;
	int slot = (int)(i % (uint64_t)x->nslots);
	char *s = tx_slot(x, rp, i);
	struct slot_hdr *sh = (struct slot_hdr *)s;
	sh->hdr = r->hdr;
	sh->off = off;
	sh->len = len;
	struct ibv_sge sge[2] = { { (uintptr_t)s, RDMA_SLOT_HDR, x->mem_mr->lkey } };
	int nsge = 1, idx = slot;
	if (user_addr && len) {
		sge[1] = (struct ibv_sge){ (uintptr_t)user_addr, (uint32_t)len, user_lkey };
		nsge = 2;
		idx |= IDX_USER;
	} else {
		copy_cached(s + RDMA_SLOT_HDR, r->sbuf + off, len);
		sge[0].length += (uint32_t)len;
	}
	struct ibv_send_wr wr = { .wr_id = rdma_wr_id(WR_DATA_TX, idx, p->rank), .sg_list = sge,
				  .num_sge = nsge, .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				  .send_flags = IBV_SEND_SIGNALED,
				  .imm_data = htonl(imm_make(IMM_SLOT, rp->send_msg, (uint32_t)slot)) },
			   *bad;
	wr.wr.rdma.remote_addr = rp->remote_rx + (uint64_t)slot * x->slot_bytes;
	wr.wr.rdma.rkey = rp->remote_rkey;
	if (ibv_post_send(rp->qp, &wr, &bad)) {
		rp->qp_error = true;
		comm_fail(c, NPCCL_ERR_SYSTEM, p->rank, "ibv_post_send to rank %d failed on %s",
			  p->rank, x->dev);
		return -1;
	}
	rp->tx_busy[slot] = true;
	rp->sq_used++;
	rp->fifo_sent++;
	if (idx & IDX_USER)
		rp->send_inflight++;
	return 0;
}

/* one piece straight into the receiver's registered buffer */
static int post_zc_piece(struct npccl_comm *c, struct peer *p, const struct rdma_ctl *cts,
			 uint64_t off, uint64_t len, const char *user_addr, uint32_t user_lkey,
			 int slot, bool last)
{
	struct rdma_ctx *x = c->rdma;
	struct rdma_peer *rp = p->rdma;
	struct ibv_sge sge;
	int idx;
	if (user_addr) {
		sge = (struct ibv_sge){ (uintptr_t)user_addr, (uint32_t)len, user_lkey };
		idx = SLOT_NONE | IDX_USER;
	} else {
		sge = (struct ibv_sge){ (uintptr_t)tx_slot(x, rp, (uint64_t)slot), (uint32_t)len,
					x->mem_mr->lkey };
		idx = slot;
	}
	struct ibv_send_wr wr = { .wr_id = rdma_wr_id(WR_DATA_TX, idx, p->rank), .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = last ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	if (last)
		wr.imm_data = htonl(imm_make(IMM_ZC_DONE, rp->send_msg, 0));
	wr.wr.rdma.remote_addr = cts->addr + off;
	wr.wr.rdma.rkey = cts->rkey;
	if (ibv_post_send(rp->qp, &wr, &bad)) {
		rp->qp_error = true;
		comm_fail(c, NPCCL_ERR_SYSTEM, p->rank, "ibv_post_send to rank %d failed on %s",
			  p->rank, x->dev);
		return -1;
	}
	if (!user_addr)
		rp->tx_busy[slot] = true;
	else
		rp->send_inflight++;
	rp->sq_used++;
	return 0;
}

/* the receiver's CTS against what we send: the same call, the same length */
static int check_cts(struct npccl_comm *c, struct peer *p, const struct rdma_ctl *cts,
		     const struct req *r)
{
	const struct wire_hdr *h = &cts->hdr, *e = &r->hdr;
	if (!wire_hdr_valid(h)) {
		protocol_error(c, p, "a clear-to-send with a corrupt header");
		return -1;
	}
	if (h->seq != e->seq || h->coll != e->coll || h->count != e->count ||
	    h->dtype != e->dtype || h->redop != e->redop || h->root != e->root ||
	    h->algo != e->algo) {
		struct op_desc d;
		wire_hdr_desc(h, &d);
		comm_mismatch(c, p->rank, &d);
		return -1;
	}
	if (h->len != e->len) {
		char who[128];
		peer_describe(c, p->rank, who, sizeof(who));
		comm_fail(c, NPCCL_ERR_MISMATCH, p->rank,
			  "%s expects %llu bytes where this rank sends %llu (different count or "
			  "algorithm on the two ranks)", who, (unsigned long long)h->len,
			  (unsigned long long)e->len);
		return -1;
	}
	return 0;
}

static int rdma_progress_send(struct npccl_comm *c, struct peer *p, struct req *r)
{
	struct rdma_ctx *x = c->rdma;
	struct rdma_peer *rp = p->rdma;
	poll_and_inject(c);
	if (c->failed || rp->qp_error)
		return -1;
	if (!rp->send_started) {
		rp->send_started = true;
		rp->send_checked = false;
		rp->send_msg++;
		rp->send_posted = 0;
	}
	char *uaddr = NULL;
	const struct rdma_reg *reg = r->len ? rdma_reg_find(c, r->sbuf, r->len, false, &uaddr) : NULL;
	if (r->len <= x->chunk) {
		/* eager: one slot; done once the data left the caller's buffer */
		if (rp->send_posted == 0 && !(rp->send_checked)) {
			if (!fifo_slot_free(x, rp))
				return check_gone(c, p);
			if (post_fifo_piece(c, p, r, 0, r->len, reg ? uaddr : NULL, reg ? reg->lkey : 0))
				return -1;
			rp->send_checked = true;	/* posted */
			rp->send_posted = r->len;
			x->stat_fifo_send++;
		}
		if (rp->send_inflight > 0) {
			rdma_poll_cq(c);
			if (rp->send_inflight > 0)
				return c->failed ? -1 : check_gone(c, p);
		}
		rp->send_started = false;
		return 1;
	}
	/* larger: wait for the receiver's CTS */
	if (!rp->ncts)
		return check_gone(c, p);
	struct rdma_ctl *cts = &rp->cts[0];
	if (cts->msg != rp->send_msg) {
		protocol_error(c, p, "a clear-to-send for another message");
		return -1;
	}
	if (!rp->send_checked) {
		if (check_cts(c, p, cts, r))
			return -1;
		rp->send_checked = true;
		if (cts->zc)
			x->stat_zc_send++;
		else
			x->stat_fifo_send++;
	}
	while (rp->send_posted < r->len) {
		uint64_t off = rp->send_posted;
		if (cts->zc) {
			uint64_t piece = MIN((uint64_t)RDMA_ZC_PIECE, r->len - off);
			bool last;
			if (reg) {
				if (rp->sq_used >= RDMA_SQ_DEPTH - 4 || rp->send_inflight >= 8)
					break;
				last = off + piece == r->len;
				if (post_zc_piece(c, p, cts, off, piece, uaddr + off, reg->lkey, 0, last))
					return -1;
			} else {
				int slot = -1;
				for (int k = 0; k < x->nslots && slot < 0; k++)
					if (!rp->tx_busy[k])
						slot = k;
				if (slot < 0 || rp->sq_used >= RDMA_SQ_DEPTH - 4)
					break;
				piece = MIN(piece, (uint64_t)x->chunk);
				last = off + piece == r->len;
				copy_cached(tx_slot(x, rp, (uint64_t)slot), r->sbuf + off, piece);
				if (post_zc_piece(c, p, cts, off, piece, NULL, 0, slot, last))
					return -1;
			}
			rp->send_posted += piece;
		} else {
			if (!fifo_slot_free(x, rp))
				break;
			uint64_t piece = MIN((uint64_t)x->chunk, r->len - off);
			if (post_fifo_piece(c, p, r, off, piece, reg ? uaddr + off : NULL,
					    reg ? reg->lkey : 0))
				return -1;
			rp->send_posted += piece;
		}
	}
	if (rp->send_posted < r->len || rp->send_inflight > 0)
		return check_gone(c, p);
	/* every byte is out of the caller's buffer */
	memmove(&rp->cts[0], &rp->cts[1], sizeof(rp->cts[0]) * (size_t)--rp->ncts);
	rp->send_started = false;
	return 1;
}

/* ---- receiving ------------------------------------------------------------ */

static int consume_slots(struct npccl_comm *c, struct peer *p, struct req *r, bool *got)
{
	struct rdma_ctx *x = c->rdma;
	struct rdma_peer *rp = p->rdma;
	size_t esize = npccl_dtype_size((npccl_dtype_t)r->dtype);
	while (rp->fifo_recvd < rp->fifo_arrived && (rp->recv_done < r->len || !*got)) {
		const struct slot_hdr *sh = (const void *)rx_slot(x, rp, rp->fifo_recvd);
		const char *data = (const char *)sh + RDMA_SLOT_HDR;
		if (!wire_hdr_valid(&sh->hdr)) {
			char who[128];
			peer_describe(c, p->rank, who, sizeof(who));
			comm_fail(c, NPCCL_ERR_PROTOCOL, p->rank, "corrupt message header from %s (bad "
				  "%s)", who, sh->hdr.magic != WIRE_MAGIC ? "magic" : "checksum");
			return -1;
		}
		if (wire_hdr_expect(c, p->rank, &sh->hdr, &r->hdr) < 0)
			return -1;
		if (sh->off != rp->recv_done || sh->len > x->chunk || sh->len > r->len - sh->off ||
		    (r->kind != REQ_RECV && esize && sh->len % esize)) {
			protocol_error(c, p, "a FIFO piece at the wrong offset or of a bad length");
			return -1;
		}
		if (r->kind == REQ_RECV)
			copy_cached(r->rbuf + sh->off, data, sh->len);
		else if (sh->len)
			reduce_into((npccl_dtype_t)r->dtype, (npccl_redop_t)r->redop, r->rbuf + sh->off,
				    r->rsrc + sh->off, data, sh->len / esize);
		rp->recv_done += sh->len;
		rp->fifo_recvd++;
		*got = true;
	}
	send_credit(c, p);
	return c->failed ? -1 : 0;
}

static int rdma_progress_recv(struct npccl_comm *c, struct peer *p, struct req *r)
{
	struct rdma_ctx *x = c->rdma;
	struct rdma_peer *rp = p->rdma;
	poll_and_inject(c);
	if (c->failed || rp->qp_error)
		return -1;
	if (!rp->recv_started) {
		rp->recv_started = true;
		rp->recv_msg++;
		rp->recv_done = 0;
		rp->recv_cts_sent = rp->recv_zc = rp->recv_zc_done = false;
		r->hdr_done = 0;	/* here: whether a slot of the message arrived */
	}
	bool large = r->len > x->chunk;
	if (large && !rp->recv_cts_sent) {
		char *addr = NULL;
		const struct rdma_reg *reg = r->kind == REQ_RECV
						     ? rdma_reg_find(c, r->rbuf, r->len, true, &addr)
						     : NULL;
		struct rdma_ctl m = { .magic = RDMA_CTL_MAGIC, .type = CTL_CTS, .zc = reg != NULL,
				      .msg = rp->recv_msg, .rkey = reg ? reg->rkey : 0,
				      .addr = (uintptr_t)addr, .hdr = r->hdr };
		int rc = ctl_send(c, p, &m);
		if (rc < 0)
			return -1;
		if (rc > 0) {
			rp->recv_cts_sent = true;
			rp->recv_zc = reg != NULL;
			if (reg)
				x->stat_zc_recv++;
			else
				x->stat_fifo_recv++;
		}
	}
	if (rp->recv_zc) {
		if (!rp->recv_zc_done)
			return check_gone(c, p);
		rp->recv_done = r->len;
	} else {
		bool got = r->hdr_done;
		if (consume_slots(c, p, r, &got))
			return -1;
		r->hdr_done = got;
		if (!got || rp->recv_done < r->len)
			return check_gone(c, p);
		if (!large)
			x->stat_fifo_recv++;
	}
	rp->recv_started = false;
	return 1;
}

static int rdma_poll_fd(struct peer *p, short *events)
{
	(void)p;
	*events = 0;
	return -1;	/* comm_wait sleeps on the completion channel (rdma_sleep_fd) */
}

const struct transport_ops rdma_transport = {
	.name = "rdma",
	.progress_send = rdma_progress_send,
	.progress_recv = rdma_progress_recv,
	.poll_fd = rdma_poll_fd,
	.sleep_fd = rdma_sleep_fd,
	.after_sleep = rdma_after_sleep,
};
