/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * region_socket.c - pass a region to another process over a Unix socket.
 *
 * Wire format: one struct npi_wire_region (little-endian, fixed size) sent
 * with exactly one file descriptor in an SCM_RIGHTS control message. The
 * receiver checks the magic, version and backend, rejects anything else
 * (closing every descriptor it was sent), and imports the descriptor through
 * the backend, which verifies that it really is a region of the stated size.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"

#define NPI_WIRE_MAGIC 0x5253504eU	/* "NPSR" */
#define NPI_WIRE_VERSION 1

struct npi_wire_region {
	uint32_t magic;
	uint16_t version;
	uint16_t backend;
	uint64_t size;
	uint64_t id;
	uint32_t flags;		/* bit 0: writable handle */
	uint32_t reserved;
};

NPUSHM_API npushm_status_t npushm_region_send(npushm_region_t *r, int sock)
{
	struct npi_wire_region w = { 0 };
	union {
		struct cmsghdr hdr;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = &w, .iov_len = sizeof(w) };
	struct msghdr msg = { 0 };
	struct cmsghdr *c;
	ssize_t n;

	if (!r)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_region_send: NULL region");
	w.magic = NPI_WIRE_MAGIC;
	w.version = NPI_WIRE_VERSION;
	w.backend = (uint16_t)r->dev->backend;
	w.size = r->size;
	w.id = r->id;
	w.flags = r->writable ? 1 : 0;
	memset(&ctl, 0, sizeof(ctl));
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = ctl.buf;
	msg.msg_controllen = sizeof(ctl.buf);
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &r->fd, sizeof(int));
	do
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		int err = errno;

		if (err == EPIPE || err == ECONNRESET || err == ENOTCONN)
			return npi_fail(NPUSHM_ERR_PROTOCOL, err,
					"cannot send region %llu: the peer closed socket %d",
					(unsigned long long)r->id, sock);
		return npi_fail(err == ENOTSOCK || err == EBADF ? NPUSHM_ERR_INVALID : NPUSHM_ERR_SYSTEM,
				err, "cannot send region %llu over socket %d", (unsigned long long)r->id, sock);
	}
	if ((size_t)n != sizeof(w)) {
		/* Stream socket, partial send: the fd went with the first byte. */
		size_t done = (size_t)n;

		while (done < sizeof(w)) {
			n = send(sock, (char *)&w + done, sizeof(w) - done, MSG_NOSIGNAL);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return npi_fail(NPUSHM_ERR_PROTOCOL, n < 0 ? errno : 0,
						"socket %d failed in the middle of sending region %llu",
						sock, (unsigned long long)r->id);
			done += (size_t)n;
		}
	}
	return NPUSHM_OK;
}

static void close_received(struct msghdr *msg)
{
	struct cmsghdr *c;

	for (c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			size_t nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int), i;

			for (i = 0; i < nfd; i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
				close(fd);
			}
		}
	}
}

NPUSHM_API npushm_status_t npushm_region_recv(npushm_dev_t *dev, int sock, npushm_region_t **rp)
{
	struct npi_wire_region w;
	union {
		struct cmsghdr hdr;
		char buf[CMSG_SPACE(sizeof(int) * 8)];
	} ctl;
	struct iovec iov = { .iov_base = &w, .iov_len = sizeof(w) };
	struct msghdr msg = { 0 };
	struct cmsghdr *c;
	npushm_region_t *r;
	npushm_status_t st;
	int fd = -1, nfds = 0;
	size_t done;
	ssize_t n;

	if (!dev || !rp)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_region_recv: NULL argument");
	*rp = NULL;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = ctl.buf;
	msg.msg_controllen = sizeof(ctl.buf);
	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return npi_fail(errno == ENOTSOCK || errno == EBADF ? NPUSHM_ERR_INVALID : NPUSHM_ERR_SYSTEM,
				errno, "cannot receive a region on socket %d", sock);
	if (n == 0)
		return npi_fail(NPUSHM_ERR_PROTOCOL, 0,
				"the peer closed socket %d before sending a region", sock);
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			nfds += (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			if (nfds >= 1)
				memcpy(&fd, CMSG_DATA(c), sizeof(int));
		}
	}
	if ((msg.msg_flags & MSG_CTRUNC) || nfds != 1) {
		close_received(&msg);
		return npi_fail(NPUSHM_ERR_PROTOCOL, 0,
				"socket %d: expected one region descriptor, got %d%s", sock, nfds,
				(msg.msg_flags & MSG_CTRUNC) ? " (and a truncated control message)" : "");
	}
	done = (size_t)n;
	while (done < sizeof(w)) {
		n = recv(sock, (char *)&w + done, sizeof(w) - done, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(fd);
			return npi_fail(NPUSHM_ERR_PROTOCOL, n < 0 ? errno : 0,
					"socket %d: the peer stopped in the middle of a region message", sock);
		}
		done += (size_t)n;
	}
	if (w.magic != NPI_WIRE_MAGIC || w.version != NPI_WIRE_VERSION) {
		close(fd);
		return npi_fail(NPUSHM_ERR_PROTOCOL, 0,
				"socket %d: the message is not an npushm region (magic 0x%08x version %u)",
				sock, w.magic, w.version);
	}
	if (w.backend != (uint16_t)dev->backend) {
		close(fd);
		return npi_fail(NPUSHM_ERR_PROTOCOL, 0,
				"socket %d: the peer sent a %s region but this process uses the %s backend; set NPUSHM_BACKEND alike on both sides",
				sock, npushm_backend_name((npushm_backend_t)w.backend),
				npushm_backend_name(dev->backend));
	}
	r = npi_region_new(dev);
	if (!r) {
		close(fd);
		return NPUSHM_ERR_NO_MEMORY;
	}
	r->fd = fd;
	st = dev->ops->region_import(dev, r);
	if (st) {
		npi_region_free_shell(r);
		return st;
	}
	if (r->size != w.size) {
		npi_region_free_shell(r);
		return npi_fail(NPUSHM_ERR_PROTOCOL, 0,
				"socket %d: the peer announced %llu bytes but the region has %llu",
				sock, (unsigned long long)w.size, (unsigned long long)r->size);
	}
	*rp = r;
	return NPUSHM_OK;
}
