/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * transport_tcp.c - two-sided messages over one nonblocking TCP connection
 * per peer pair. A message is a 48-byte wire header (operation, dtype, count,
 * root, sequence number, payload length, XXH32 checksum) followed by the
 * payload. The receiver checks the header against what it expects before it
 * accepts the payload: a bad checksum is a corrupt frame, a different
 * operation is a mismatched call, EOF mid-frame a truncated one. Payloads of
 * reduce-receives go through a per-peer bounce buffer of one pipeline chunk
 * and are reduced as they arrive. No one-sided operations (RDMA only).
 */
#include "npccl_internal.h"
#include "transport/transport.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

static int tcp_error(struct npccl_comm *c, struct peer *p, int err, bool mid)
{
	char how[160];
	if (err == 0)
		snprintf(how, sizeof(how), "its connection closed%s",
			 mid ? " in the middle of a frame (truncated frame)" : "");
	else
		snprintf(how, sizeof(how), "connection error: %s", strerror(err));
	p->gone = true;
	/* EOF in the middle of a frame: a killed process closes the control
	 * channel too (within microseconds), a truncated stream leaves it open */
	if (mid && err == 0 && !c->failed && comm_peer_ctl_closed(c, p, 200)) {
		snprintf(how, sizeof(how), "its connections closed in the middle of a message (the "
					   "process was killed, or its host went down)");
		mid = false;
	}
	if (c->failed)
		return -1;
	if (mid && err == 0) {
		char who[128];
		peer_describe(c, p->rank, who, sizeof(who));
		comm_fail(c, NPCCL_ERR_PROTOCOL, p->rank,
			  "truncated frame from %s: the connection closed mid-frame", who);
		return -1;
	}
	comm_peer_lost(c, p->rank, how);
	return -1;
}

static int tcp_progress_send(struct npccl_comm *c, struct peer *p, struct req *r)
{
	if (p->fault_stalled)
		return 0;
	if (p->gone)
		return tcp_error(c, p, 0, false);
	if (r->hdr_done == 0 && r->done == 0) {
		if (fault_should_fire(c, FAULT_CORRUPT_FRAME))
			r->hdr.check ^= 0x5a5a;
		if (fault_should_fire(c, FAULT_TRUNCATE_FRAME)) {
			ssize_t n = send(p->data_fd, &r->hdr, sizeof(r->hdr) / 2, MSG_NOSIGNAL);
			(void)n;
			shutdown(p->data_fd, SHUT_WR);
			p->fault_stalled = true;
			return 0;	/* never completes; the peer reports the truncation */
		}
	}
	for (;;) {
		struct iovec iov[2];
		int n = 0;
		if (r->hdr_done < sizeof(r->hdr))
			iov[n++] = (struct iovec){ (char *)&r->hdr + r->hdr_done,
						   sizeof(r->hdr) - r->hdr_done };
		if (r->done < r->len)
			iov[n++] = (struct iovec){ (char *)r->sbuf + r->done, r->len - r->done };
		if (n == 0)
			return 1;
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)n };
		ssize_t k = sendmsg(p->data_fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			return tcp_error(c, p, errno, false);
		}
		size_t left = (size_t)k;
		if (r->hdr_done < sizeof(r->hdr)) {
			size_t h = MIN(left, sizeof(r->hdr) - r->hdr_done);
			r->hdr_done += (uint32_t)h;
			left -= h;
		}
		r->done += left;
	}
}

static int check_header(struct npccl_comm *c, struct peer *p, struct req *r)
{
	const struct wire_hdr *h = &r->rxhdr;
	char who[128];
	if (!wire_hdr_valid(h)) {
		peer_describe(c, p->rank, who, sizeof(who));
		comm_fail(c, NPCCL_ERR_PROTOCOL, p->rank,
			  "corrupt frame from %s (bad %s): the stream is unusable", who,
			  h->magic != WIRE_MAGIC ? "magic" : "header checksum");
		return -1;
	}
	return wire_hdr_expect(c, p->rank, h, &r->hdr);
}

static int tcp_progress_recv(struct npccl_comm *c, struct peer *p, struct req *r)
{
	size_t chunk = npccl_config()->pipeline_chunk;
	size_t esize = npccl_dtype_size((npccl_dtype_t)r->dtype);
	for (;;) {
		struct iovec iov[2];
		int n = 0;
		char *target = NULL;
		size_t want = 0;
		if (r->hdr_done < sizeof(r->rxhdr))
			iov[n++] = (struct iovec){ (char *)&r->rxhdr + r->hdr_done,
						   sizeof(r->rxhdr) - r->hdr_done };
		if (r->done < r->len) {
			if (r->kind == REQ_RECV) {
				target = r->rbuf + r->done;
				want = r->len - r->done;
			} else {
				size_t piece = MIN(chunk, r->len - r->done);
				target = p->bounce + p->bounce_fill;
				want = piece - p->bounce_fill;
			}
			/* header and payload in one readv; payload bytes read before the
			 * header is checked stay within this request's buffer and are
			 * discarded with the communicator if the header is bad */
			iov[n++] = (struct iovec){ target, want };
		}
		if (n == 0)
			return 1;
		ssize_t k = readv(p->data_fd, iov, n);
		if (k < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			return tcp_error(c, p, errno, false);
		}
		if (k == 0)
			return tcp_error(c, p, 0, r->hdr_done > 0 || r->done > 0 || p->bounce_fill);
		size_t left = (size_t)k;
		if (r->hdr_done < sizeof(r->rxhdr)) {
			size_t h = MIN(left, sizeof(r->rxhdr) - r->hdr_done);
			r->hdr_done += (uint32_t)h;
			left -= h;
			if (r->hdr_done == sizeof(r->rxhdr) && check_header(c, p, r) < 0)
				return -1;
		}
		if (left == 0)
			continue;
		if (r->kind == REQ_RECV) {
			r->done += left;
		} else {
			p->bounce_fill += left;
			size_t piece = MIN(chunk, r->len - r->done);
			if (p->bounce_fill == piece) {
				reduce_into((npccl_dtype_t)r->dtype, (npccl_redop_t)r->redop,
					    r->rbuf + r->done, r->rsrc + r->done, p->bounce,
					    piece / esize);
				r->done += piece;
				p->bounce_fill = 0;
			}
		}
	}
}

static int tcp_poll_fd(struct peer *p, short *events)
{
	*events = (short)((p->recvq ? POLLIN : 0) | (p->sendq ? POLLOUT : 0));
	return p->data_fd;
}

const struct transport_ops tcp_transport = {
	.name = "tcp",
	.progress_send = tcp_progress_send,
	.progress_recv = tcp_progress_recv,
	.poll_fd = tcp_poll_fd,
};
