/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * fault.c - turning failures into one clear error on every surviving rank.
 *
 * comm_fail() records the first failure of a communicator (status + message
 * naming the operation, its sequence number and the culprit rank) and sends
 * it as an ABORT verdict over every control channel, so ranks blocked
 * elsewhere report the same culprit instead of blaming their neighbour;
 * comm_mismatch() names a peer in another call. Sending control messages
 * and describing peers and operations live here too; reading the channels,
 * a lost peer and the deadline's diagnosis are control.c's.
 */
#include "npccl_internal.h"
#include "transport/transport.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

const char *coll_label(unsigned coll)
{
	if (coll == COLL_MEM_ALLOC)
		return "npccl_mem_alloc";
	return npccl_coll_name((npccl_coll_t)coll);
}

void op_desc_format(const struct op_desc *d, char *buf, size_t len)
{
	npccl_coll_t coll = (npccl_coll_t)d->coll;
	if (d->coll == COLL_MEM_ALLOC) {
		snprintf(buf, len, "npccl_mem_alloc(%llu bytes)", (unsigned long long)d->count);
		return;
	}
	switch (coll) {
	case NPCCL_COLL_BARRIER:
		snprintf(buf, len, "barrier");
		break;
	case NPCCL_COLL_ALLGATHER:
	case NPCCL_COLL_ALLTOALL:
		snprintf(buf, len, "%s(count=%llu, %s)", npccl_coll_name(coll),
			 (unsigned long long)d->count, npccl_dtype_name(d->dtype));
		break;
	case NPCCL_COLL_BROADCAST:
	case NPCCL_COLL_GATHER:
	case NPCCL_COLL_SCATTER:
		snprintf(buf, len, "%s(count=%llu, %s, root=%d)", npccl_coll_name(coll),
			 (unsigned long long)d->count, npccl_dtype_name(d->dtype), d->root);
		break;
	case NPCCL_COLL_REDUCE:
		snprintf(buf, len, "reduce(count=%llu, %s, %s, root=%d)",
			 (unsigned long long)d->count, npccl_dtype_name(d->dtype),
			 npccl_redop_name(d->redop), d->root);
		break;
	case NPCCL_COLL_SEND:
	case NPCCL_COLL_RECV:
		snprintf(buf, len, "send/recv(count=%llu, %s)", (unsigned long long)d->count,
			 npccl_dtype_name(d->dtype));
		break;
	default:
		snprintf(buf, len, "%s(count=%llu, %s, %s)", npccl_coll_name(coll),
			 (unsigned long long)d->count, npccl_dtype_name(d->dtype),
			 npccl_redop_name(d->redop));
	}
}

void peer_describe(struct npccl_comm *c, int rank, char *buf, size_t len)
{
	if (rank < 0 || rank >= c->nranks) {
		snprintf(buf, len, "no single rank");
		return;
	}
	const struct peer_info *i = &c->peers[rank].info;
	snprintf(buf, len, "rank %d (pid %u on %s%s)", rank, i->pid, i->hostname,
		 c->peers[rank].local ? "" : ", remote host");
}

static void op_prefix(struct npccl_comm *c, char *buf, size_t len)
{
	if (c->cur.coll == NPCCL_COLL_SEND || c->cur.coll == NPCCL_COLL_RECV)
		snprintf(buf, len, "%s #%llu (point-to-point)", npccl_coll_name(c->cur.coll),
			 (unsigned long long)c->cur.seq);
	else
		snprintf(buf, len, "%s #%llu", coll_label(c->cur.coll),
			 (unsigned long long)c->cur.seq);
}

static void ctl_fill(struct npccl_comm *c, struct ctl_msg *m, int type, uint64_t len,
		     int culprit, int status, const char *text)
{
	memset(m, 0, sizeof(*m));
	p2p_set_hdr(c, &m->hdr, len);
	m->hdr.type = (uint8_t)type;
	wire_hdr_seal(&m->hdr);
	m->culprit = culprit;
	m->status = status;
	m->in_op = c->in_op;
	m->waiting_on = c->waiting_on;
	m->completed_seq = c->completed_seq;
	if (text)
		snprintf(m->text, sizeof(m->text), "%s", text);
}

void comm_send_ctl(struct npccl_comm *c, struct peer *p, int type, int culprit, int status,
		   const char *text)
{
	if (p->ctl_fd < 0 || p->ctl_eof)
		return;
	struct ctl_msg m;
	ctl_fill(c, &m, type, 0, culprit, status, text);
	/* small message on a socket nobody else writes: all or nothing in practice */
	ssize_t n = send(p->ctl_fd, &m, sizeof(m), MSG_NOSIGNAL | MSG_DONTWAIT);
	(void)n;
}

int comm_send_ctl_fd(struct npccl_comm *c, struct peer *p, int type, uint64_t len, int fd)
{
	if (p->ctl_fd < 0 || p->ctl_eof)
		return -EPIPE;
	struct ctl_msg m;
	ctl_fill(c, &m, type, len, -1, 0, NULL);
	return send_fds(p->ctl_fd, &m, sizeof(m), &fd, 1);
}

void comm_broadcast_abort(struct npccl_comm *c, int culprit)
{
	for (int i = 0; i < c->nranks; i++)
		if (i != c->rank)
			comm_send_ctl(c, &c->peers[i], FRAME_ABORT, culprit, c->failed, c->errmsg);
}

npccl_status_t comm_fail(struct npccl_comm *c, npccl_status_t st, int culprit, const char *fmt,
			 ...)
{
	if (c->failed)
		return c->failed;
	char pre[96];
	op_prefix(c, pre, sizeof(pre));
	char body[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(body, sizeof(body), fmt, ap);
	va_end(ap);
	snprintf(c->errmsg, sizeof(c->errmsg), "%s: %s", pre, body);
	c->failed = st;
	npccl_log(NPCCL_LOG_ERROR, "rank %d: %s", c->rank, c->errmsg);
	comm_broadcast_abort(c, culprit);
	return st;
}

npccl_status_t comm_mismatch(struct npccl_comm *c, int rank, const struct op_desc *theirs)
{
	char mine[128], other[128], who[128];
	op_desc_format(&c->cur, mine, sizeof(mine));
	op_desc_format(theirs, other, sizeof(other));
	peer_describe(c, rank, who, sizeof(who));
	if (theirs->seq == c->cur.seq && !strcmp(mine, other))
		return comm_fail(c, NPCCL_ERR_MISMATCH, rank,
				 "%s runs %s with algorithm %s but this rank with %s: "
				 "npccl_comm_set_algo/NPCCL_ALGO must be the same on every rank",
				 who, other, npccl_algo_name(theirs->algo),
				 npccl_algo_name(c->cur.algo));
	return comm_fail(c, NPCCL_ERR_MISMATCH, rank,
			 "mismatched calls: rank %d called %s but %s called %s (its call #%llu); "
			 "every rank must make the same collective calls in the same order",
			 c->rank, mine, who, other, (unsigned long long)theirs->seq);
}

/* 'T' stopped/traced, 'Z'/'X' dead, 0 unknown (other pid namespace, gone) */
char peer_proc_state(struct npccl_comm *c, int rank)
{
	struct peer *p = &c->peers[rank];
	if (!p->local || p->info.pidns_id != c->peers[c->rank].info.pidns_id)
		return 0;
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%u/stat", p->info.pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 'X';
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' ? rp[2] : 0;
}

bool fault_should_fire(struct npccl_comm *c, int kind)
{
	if (c->fault_kind != kind || c->fault_rank != c->rank || c->cur.seq != c->fault_seq ||
	    c->cur.coll == NPCCL_COLL_SEND)
		return false;
	c->fault_kind = FAULT_NONE;
	return true;
}
