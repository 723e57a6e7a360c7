/* SPDX-License-Identifier: GPL-2.0-only */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm_pin.h - pins for the selftests: a long-term write pin of user
 * memory (an AF_XDP umem: pin_user_pages(FOLL_WRITE | FOLL_LONGTERM), as an
 * RDMA MR does) where the kernel has AF_XDP, else page references held by a
 * pipe (vmsplice). Each returns a value or -errno, never asserts.
 */
#ifndef NPUSHM_PIN_H
#define NPUSHM_PIN_H

#include <sys/uio.h>
#include <linux/if_xdp.h>

#include "npushm_util.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef SOL_XDP
#define SOL_XDP 283
#endif

/* Pin [addr, addr + len) for writing, long-term, the way an RDMA MR does. */
static inline int xdp_pin(void *addr, size_t len)
{
	struct xdp_umem_reg mr = {
		.addr = (uintptr_t)addr, .len = len, .chunk_size = 4096,
	};
	int sk = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);

	if (sk < 0)
		return -errno;
	if (setsockopt(sk, SOL_XDP, XDP_UMEM_REG, &mr, sizeof(mr))) {
		int err = -errno;

		close(sk);
		return err;
	}
	return sk;
}

struct pin {
	int fd;		/* the AF_XDP socket, or the pipe's read end */
	int wfd;	/* the pipe's write end, or -1 */
	bool longterm;	/* a FOLL_LONGTERM write pin */
};

/* A long-term write pin if the kernel has AF_XDP, else page references held by a pipe. */
static inline int pin_pages(struct pin *pin, void *addr, size_t len)
{
	struct iovec iov = { .iov_base = addr, .iov_len = len };
	int pipefd[2];

	pin->wfd = -1;
	pin->fd = xdp_pin(addr, len);
	pin->longterm = pin->fd >= 0;
	if (pin->fd != -EAFNOSUPPORT)
		return pin->fd < 0 ? pin->fd : 0;
	if (pipe2(pipefd, O_CLOEXEC) || fcntl(pipefd[1], F_SETPIPE_SZ, (int)len) < 0 ||
	    vmsplice(pipefd[1], &iov, 1, 0) != (ssize_t)len)
		return -errno;
	pin->fd = pipefd[0];
	pin->wfd = pipefd[1];
	return 0;
}

static inline void unpin(struct pin *pin)
{
	close(pin->fd);
	if (pin->wfd >= 0)
		close(pin->wfd);
}

#endif /* NPUSHM_PIN_H */
