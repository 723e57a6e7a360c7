/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * sock.c - small socket helpers: TCP listen/connect with deadlines and
 * retries, full reads/writes with deadlines, descriptor passing over Unix
 * sockets, address parsing. Return -errno (or a negative value with a
 * message in `err`) on failure; never print.
 */
#include "npccl_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

const char *ipv4_str(uint32_t ipv4_be, char *buf)
{
	struct in_addr a = { .s_addr = ipv4_be };
	inet_ntop(AF_INET, &a, buf, INET_ADDRSTRLEN);
	return buf;
}

int sock_set_nonblock(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -errno;
	fl = on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK);
	return fcntl(fd, F_SETFL, fl) < 0 ? -errno : 0;
}

static int remaining_ms(uint64_t deadline_ns)
{
	uint64_t now = now_ns();
	if (now >= deadline_ns)
		return 0;
	uint64_t ms = (deadline_ns - now + 999999) / 1000000;
	return ms > 1000000000 ? 1000000000 : (int)ms;
}

int sock_listen_tcp(uint32_t ipv4_be, uint16_t port_be, char *err, size_t errlen)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -errno;
	}
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = port_be,
				  .sin_addr.s_addr = ipv4_be };
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		char ip[INET_ADDRSTRLEN];
		if (e == EADDRINUSE)
			snprintf(err, errlen,
				 "cannot listen on %s:%u: the port is already in use (another job "
				 "or an earlier run still holds it); choose another port "
				 "(MASTER_PORT / NPCCL_ROOT_ADDR) or wait for it to be released",
				 ipv4_str(ipv4_be, ip), ntohs(port_be));
		else
			snprintf(err, errlen, "cannot bind %s:%u: %s", ipv4_str(ipv4_be, ip),
				 ntohs(port_be), strerror(e));
		close(fd);
		return -e;
	}
	if (listen(fd, 1024) < 0) {
		int e = errno;
		snprintf(err, errlen, "listen: %s", strerror(e));
		close(fd);
		return -e;
	}
	return fd;
}

int sock_connect_tcp(uint32_t ipv4_be, uint16_t port_be, uint64_t deadline_ns, char *err,
		     size_t errlen)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = port_be,
				  .sin_addr.s_addr = ipv4_be };
	int delay_ms = 1, last = 0;
	for (;;) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			snprintf(err, errlen, "socket: %s", strerror(errno));
			return -errno;
		}
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			int one = 1;
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			return fd;
		}
		last = errno;
		close(fd);
		if (last != ECONNREFUSED && last != ETIMEDOUT && last != EINTR &&
		    last != ENETUNREACH && last != EHOSTUNREACH && last != EAGAIN)
			break;
		if (remaining_ms(deadline_ns) == 0)
			break;
		usleep((useconds_t)MIN(delay_ms, remaining_ms(deadline_ns)) * 1000);
		delay_ms = MIN(delay_ms * 2, 100);
	}
	char ip[INET_ADDRSTRLEN];
	snprintf(err, errlen, "cannot connect to %s:%u: %s%s", ipv4_str(ipv4_be, ip),
		 ntohs(port_be), strerror(last),
		 last == ECONNREFUSED ? " (nothing listening there before the deadline)" : "");
	return -last;
}

int sock_accept(int lfd, uint64_t deadline_ns)
{
	for (;;) {
		struct pollfd p = { .fd = lfd, .events = POLLIN };
		int ms = remaining_ms(deadline_ns);
		int pr = poll(&p, 1, ms);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0)
			return -errno;
		if (pr == 0)
			return -ETIMEDOUT;
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			return fd;
		if (errno != EINTR && errno != ECONNABORTED && errno != EAGAIN)
			return -errno;
	}
}

/* TCP_NODELAY for latency; buffer sizes are left to the kernel's
 * autotuning (setting SO_SNDBUF/SO_RCVBUF would cap them at rmem_max and
 * switch autotuning off). */
void sock_tune_data(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int sock_write_full(int fd, const void *buf, size_t len, uint64_t deadline_ns)
{
	const char *p = buf;
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN)
			return -errno;
		struct pollfd pf = { .fd = fd, .events = POLLOUT };
		int ms = remaining_ms(deadline_ns);
		if (ms == 0)
			return -ETIMEDOUT;
		poll(&pf, 1, ms);
	}
	return 0;
}

int sock_read_full(int fd, void *buf, size_t len, uint64_t deadline_ns)
{
	char *p = buf;
	while (len) {
		ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -errno;
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		int ms = remaining_ms(deadline_ns);
		if (ms == 0)
			return -ETIMEDOUT;
		poll(&pf, 1, ms);
	}
	return 0;
}

int parse_host_port(const char *s, uint32_t *ipv4_be, uint16_t *port_be)
{
	char host[256];
	const char *colon = strrchr(s, ':');
	if (!colon || colon == s || (size_t)(colon - s) >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	char *end;
	long port = strtol(colon + 1, &end, 10);
	if (*end || port <= 0 || port > 65535)
		return -EINVAL;
	struct in_addr a;
	if (inet_pton(AF_INET, host, &a) != 1) {
		struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res;
		if (getaddrinfo(host, NULL, &hints, &res) != 0)
			return -EHOSTUNREACH;
		a = ((struct sockaddr_in *)res->ai_addr)->sin_addr;
		freeaddrinfo(res);
	}
	*ipv4_be = a.s_addr;
	*port_be = htons((uint16_t)port);
	return 0;
}

int send_fds(int sock, const void *data, size_t len, const int *fds, int nfds)
{
	struct iovec iov = { (void *)data, len };
	char cbuf[CMSG_SPACE(sizeof(int) * 8)];
	memset(cbuf, 0, sizeof(cbuf));
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (nfds > 0) {
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	ssize_t n;
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == (ssize_t)len ? 0 : -EPIPE;
}

int recv_fds(int sock, void *data, size_t len, int *fds, int maxfds, uint64_t deadline_ns)
{
	struct pollfd pf = { .fd = sock, .events = POLLIN };
	for (;;) {
		int pr = poll(&pf, 1, remaining_ms(deadline_ns));
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			return pr == 0 ? -ETIMEDOUT : -errno;
		break;
	}
	struct iovec iov = { data, len };
	char cbuf[CMSG_SPACE(sizeof(int) * 8)];
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	ssize_t n;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_WAITALL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n != (ssize_t)len)
		return -EPROTO;
	int got = 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		int tmp[8];
		memcpy(tmp, CMSG_DATA(cm), sizeof(int) * (size_t)k);
		for (int i = 0; i < k; i++) {
			if (got < maxfds)
				fds[got++] = tmp[i];
			else
				close(tmp[i]);
		}
	}
	return got;
}
