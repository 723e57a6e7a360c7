/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * control.c - what peers say over the control channels, and what a rank
 * concludes from it. Every peer pair keeps one control socket (Unix for
 * local peers, TCP otherwise) beside the data path; messages are fixed-size
 * (struct ctl_msg): ABORT verdicts, QUERY/REPLY while diagnosing, BYE, and
 * FRAME_REGION with an npccl_mem_alloc region's descriptor. Reading a
 * channel handles them at once (an adopted verdict fails this rank too, a
 * query is answered from any wait loop); its end, or the peer's pidfd,
 * marks the peer gone. comm_peer_lost() names a peer that is gone (after
 * reading its last words: a peer that found the root cause sent its verdict
 * before leaving); comm_diagnose_timeout() runs when a deadline passes: it
 * asks every peer what it is doing and blames, in this order, peers that
 * died, peers that did not answer (stopped or hung, checked through /proc
 * in the same pid namespace), peers in a different call (mismatch) or
 * still behind. Failures are recorded and broadcast by fault.c.
 */
#include "npccl_internal.h"
#include "transport/transport.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Descriptors arrive with the first byte of the message they belong to
 * (FRAME_REGION); keep them in arrival order until the message is handled.
 * Local sockets only: recvmsg on a TCP control channel never has any. */
static void ctl_take_fds(struct peer *p, struct msghdr *mh)
{
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		int nfd = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < nfd; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cm) + (size_t)i * sizeof(int), sizeof(int));
			if (p->nrx_fds < (int)(sizeof(p->rx_fds) / sizeof(p->rx_fds[0])))
				p->rx_fds[p->nrx_fds++] = fd;
			else
				close(fd);	/* its message then fails as "no descriptor" */
		}
	}
}

/* A FRAME_REGION message (an npccl_mem_alloc region of @p's) with the
 * descriptor that came with it: kept for shm_mem.c, oldest first. */
static void ctl_region_msg(struct npccl_comm *c, struct peer *p, const struct ctl_msg *m)
{
	int fd = -1;
	if (p->nrx_fds > 0) {
		fd = p->rx_fds[0];
		memmove(p->rx_fds, p->rx_fds + 1, sizeof(int) * (size_t)--p->nrx_fds);
	}
	if (p->nregion_in == (int)(sizeof(p->region_in) / sizeof(p->region_in[0]))) {
		if (fd >= 0)
			close(fd);
		comm_fail(c, NPCCL_ERR_PROTOCOL, p->rank,
			  "rank %d sent more npccl_mem_alloc regions than this rank allocated",
			  p->rank);
		return;
	}
	p->region_in[p->nregion_in++] = (struct region_msg){ m->hdr.seq, m->hdr.len, fd };
}

static void comm_handle_ctl(struct npccl_comm *c, struct peer *p, const struct ctl_msg *m)
{
	if (!wire_hdr_valid(&m->hdr)) {
		comm_fail(c, NPCCL_ERR_PROTOCOL, p->rank,
			  "corrupt control message from rank %d (bad magic or checksum)", p->rank);
		return;
	}
	switch (m->hdr.type) {
	case FRAME_QUERY:
		comm_send_ctl(c, p, FRAME_REPLY, -1, c->failed, NULL);
		break;
	case FRAME_REPLY:
		p->reply = *m;
		p->replied = true;
		break;
	case FRAME_BYE:
		p->said_bye = true;
		if (m->status == 0 || !c->in_op)
			break;
		/* it left because of a failure: adopt its verdict */
		__attribute__((fallthrough));
	case FRAME_ABORT:
		if (!c->failed) {
			c->failed = m->status > 0 && m->status < NPCCL_NUM_STATUS
					    ? (npccl_status_t)m->status
					    : NPCCL_ERR_ABORTED;
			char text[sizeof(m->text) + 1];
			memcpy(text, m->text, sizeof(m->text));
			text[sizeof(m->text)] = 0;
			if (strstr(text, "[reported by rank"))
				snprintf(c->errmsg, sizeof(c->errmsg), "%s", text);
			else
				snprintf(c->errmsg, sizeof(c->errmsg), "%s [reported by rank %d]", text,
					 p->rank);
			npccl_log(NPCCL_LOG_ERROR, "rank %d: %s", c->rank, c->errmsg);
		}
		break;
	case FRAME_REGION:
		ctl_region_msg(c, p, m);
		break;
	default:
		comm_fail(c, NPCCL_ERR_PROTOCOL, p->rank,
			  "unknown control message type %u from rank %d", m->hdr.type, p->rank);
	}
}

static void ctl_read(struct npccl_comm *c, struct peer *p)
{
	for (;;) {
		char *dst = (char *)&p->ctl_rx + p->ctl_rx_fill;
		struct iovec iov = { dst, sizeof(p->ctl_rx) - p->ctl_rx_fill };
		char cbuf[CMSG_SPACE(sizeof(int) * 4)];
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
				     .msg_controllen = sizeof(cbuf) };
		ssize_t n = recvmsg(p->ctl_fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n > 0 && mh.msg_controllen > 0)
			ctl_take_fds(p, &mh);
		if (n > 0) {
			p->ctl_rx_fill += (size_t)n;
			if (p->ctl_rx_fill == sizeof(p->ctl_rx)) {
				p->ctl_rx_fill = 0;
				comm_handle_ctl(c, p, &p->ctl_rx);
			}
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		/* EOF or error: the peer is gone. Not an error by itself: what it
		 * sent before leaving may still be queued for us; the transports
		 * and the shared-memory waits fail when they need it. */
		p->gone = true;
		p->ctl_eof = true;
		return;
	}
}

bool comm_peer_ctl_closed(struct npccl_comm *c, struct peer *p, int timeout_ms)
{
	uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000ull;
	while (!p->ctl_eof && p->ctl_fd >= 0 && !c->failed) {
		uint64_t t = now_ns();
		if (t >= end)
			break;
		struct pollfd pf = { .fd = p->ctl_fd, .events = POLLIN };
		if (poll(&pf, 1, (int)((end - t) / 1000000 + 1)) > 0)
			ctl_read(c, p);
	}
	return p->ctl_eof || p->ctl_fd < 0;
}

npccl_status_t comm_poll_control(struct npccl_comm *c, int timeout_ms)
{
	struct pollfd pf[2 * 64 + 1];
	int idx[2 * 64 + 1];
	int n = 0;
	for (int i = 0; i < c->nranks && n < 2 * 64; i++) {
		struct peer *p = &c->peers[i];
		if (i == c->rank || p->ctl_eof)
			continue;
		if (p->ctl_fd >= 0) {
			pf[n] = (struct pollfd){ .fd = p->ctl_fd, .events = POLLIN };
			idx[n++] = i;
		}
		if (p->pidfd >= 0 && !p->gone) {
			pf[n] = (struct pollfd){ .fd = p->pidfd, .events = POLLIN };
			idx[n++] = -1 - i;
		}
	}
	int pr = poll(pf, (nfds_t)n, timeout_ms);
	if (pr <= 0)
		return c->failed;
	for (int k = 0; k < n; k++) {
		if (!pf[k].revents)
			continue;
		if (idx[k] >= 0) {
			ctl_read(c, &c->peers[idx[k]]);
		} else {
			struct peer *p = &c->peers[-1 - idx[k]];
			/* read what is left on its control channel (a BYE) first */
			if (p->ctl_fd >= 0 && !p->ctl_eof)
				ctl_read(c, p);
			p->gone = true;
			p->exited = true;
		}
	}
	return c->failed;
}

npccl_status_t comm_peer_lost(struct npccl_comm *c, int rank, const char *how)
{
	struct peer *p = &c->peers[rank];
	/* a peer that found the root cause sent its verdict before leaving:
	 * prefer that to "connection closed" */
	if (!c->failed)
		comm_poll_control(c, 0);
	if (c->failed)
		return c->failed;
	if (p->said_bye)
		how = "it left the communicator (npccl_comm_destroy) before this call completed";
	else if (p->exited)
		how = "the process exited (killed or crashed)";
	char who[128];
	peer_describe(c, rank, who, sizeof(who));
	return comm_fail(c, NPCCL_ERR_PEER_DEAD, rank, "%s is gone: %s; the communicator is "
				  "unusable, destroy it", who, how);
}

npccl_status_t comm_diagnose_timeout(struct npccl_comm *c)
{
	if (c->failed)
		return c->failed;
	int tmo = c->op_timeout_ms;
	int diag_ms = MAX(20, MIN(1000, tmo / 10));
	for (int i = 0; i < c->nranks; i++) {
		struct peer *p = &c->peers[i];
		p->replied = false;
		if (i != c->rank && !p->gone)
			comm_send_ctl(c, p, FRAME_QUERY, -1, 0, NULL);
	}
	uint64_t end = now_ns() + (uint64_t)diag_ms * 1000000ull;
	for (;;) {
		if (c->failed)
			return c->failed;
		bool all = true;
		for (int i = 0; i < c->nranks; i++)
			if (i != c->rank && !c->peers[i].gone && !c->peers[i].replied)
				all = false;
		uint64_t t = now_ns();
		if (all || t >= end)
			break;
		comm_poll_control(c, (int)((end - t) / 1000000 + 1));
	}
	if (c->failed)
		return c->failed;
	char who[128];
	for (int i = 0; i < c->nranks; i++)
		if (i != c->rank && c->peers[i].gone)
			return comm_peer_lost(c, i, c->peers[i].said_bye ? "it left the communicator"
									  : "its connection closed");
	for (int i = 0; i < c->nranks; i++) {
		struct peer *p = &c->peers[i];
		if (i == c->rank || p->replied)
			continue;
		char st = peer_proc_state(c, i);
		const char *why = st == 'T' || st == 't'
					  ? "the process is stopped (SIGSTOP or a debugger)"
				  : st == 'Z' || st == 'X'
					  ? "the process has exited"
					  : "it does not answer (hung, busy outside npccl, or unreachable)";
		peer_describe(c, i, who, sizeof(who));
		return comm_fail(c, NPCCL_ERR_TIMEOUT, i, "%s did not arrive within %d ms: %s", who,
				 tmo, why);
	}
	for (int i = 0; i < c->nranks; i++) {
		struct peer *p = &c->peers[i];
		if (i == c->rank)
			continue;
		struct op_desc d;
		wire_hdr_desc(&p->reply.hdr, &d);
		if (p->reply.in_op && d.seq == c->cur.seq &&
		    (d.coll != c->cur.coll || d.count != c->cur.count || d.dtype != c->cur.dtype ||
		     d.redop != c->cur.redop || d.root != c->cur.root || d.algo != c->cur.algo))
			return comm_mismatch(c, i, &d);
	}
	for (int i = 0; i < c->nranks; i++) {
		struct peer *p = &c->peers[i];
		if (i == c->rank)
			continue;
		struct op_desc d;
		wire_hdr_desc(&p->reply.hdr, &d);
		bool here = p->reply.in_op && d.seq == c->cur.seq;
		if (here || c->cur.coll == NPCCL_COLL_SEND || c->cur.coll == NPCCL_COLL_RECV)
			continue;
		char other[128];
		op_desc_format(&d, other, sizeof(other));
		peer_describe(c, i, who, sizeof(who));
		if (p->reply.in_op)
			return comm_fail(c, NPCCL_ERR_MISMATCH, i,
					 "%s did not arrive within %d ms: it is in call #%llu, %s",
					 who, tmo, (unsigned long long)d.seq, other);
		return comm_fail(c, NPCCL_ERR_TIMEOUT, i,
				 "%s did not arrive within %d ms: it is not inside any npccl call "
				 "(last completed call #%llu)",
				 who, tmo, (unsigned long long)p->reply.completed_seq);
	}
	if (c->waiting_on >= 0 && c->waiting_on != c->rank) {
		peer_describe(c, c->waiting_on, who, sizeof(who));
		return comm_fail(c, NPCCL_ERR_TIMEOUT, c->waiting_on,
				 "no progress within %d ms while waiting for %s, although every rank "
				 "is inside this call (overloaded machine? raise NPCCL_TIMEOUT_MS)",
				 tmo, who);
	}
	return comm_fail(c, NPCCL_ERR_TIMEOUT, -1,
			 "no progress within %d ms although every rank is inside this call", tmo);
}
