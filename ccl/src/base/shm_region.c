/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * shm_region.c - shared-memory regions for the intra-host transport, through
 * libnpushm: npushm_region_alloc/map on the creating rank,
 * npushm_region_send/recv (SCM_RIGHTS over the ranks' Unix socket) to share
 * it. libnpushm uses the npushm kernel module when an npushm instance is
 * mounted at $NPUSHM_DIR (default /run/npushm) and its
 * POSIX backend (unnamed O_TMPFILE files in /dev/shm, or memfd) otherwise,
 * so no ptrace or CMA is involved and it works in containers. Regions are
 * prefaulted (MADV_POPULATE_WRITE) when created or received, so no
 * collective pays first-touch page faults. (libnpushm also registers
 * npccl buffers for RDMA, rdma_regcache.c, and loads models for a cluster,
 * model/model_load.c.)
 */
#include "base/shm_region.h"
#include "npushm.h"
#include "npushm_rdma.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

struct shm_region {
	npushm_dev_t *dev;
	npushm_region_t *r;
	void *addr;
	size_t size;
};

static void prefault(void *addr, size_t size)
{
	if (madvise(addr, size, MADV_POPULATE_WRITE) == 0)
		return;
	/* older kernels: fault every page in by reading and writing it back */
	long pg = sysconf(_SC_PAGESIZE);
	for (size_t off = 0; off < size; off += (size_t)pg) {
		volatile char *p = (volatile char *)addr + off;
		__atomic_fetch_add(p, 0, __ATOMIC_RELAXED);
	}
}

static int fail(struct shm_region *r, char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "%s: %s", what, npushm_last_error());
	if (r) {
		if (r->addr)
			npushm_region_unmap(r->r, r->addr);
		npushm_region_close(r->r);
		npushm_dev_close(r->dev);
		free(r);
	}
	return -EIO;
}

static int map_region(struct shm_region *r, char *err, size_t errlen)
{
	if (npushm_region_map(r->r, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, &r->addr) != NPUSHM_OK) {
		r->addr = NULL;
		return fail(r, err, errlen, "cannot map a shared region (libnpushm)");
	}
	r->size = (size_t)npushm_region_size(r->r);
	prefault(r->addr, r->size);
	return 0;
}

int shm_region_create(size_t size, const char *name, struct shm_region **out, char *err,
		      size_t errlen)
{
	(void)name;
	struct shm_region *r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (npushm_dev_open(NPUSHM_BACKEND_AUTO, &r->dev) != NPUSHM_OK)
		return fail(r, err, errlen, "cannot open the npushm device (libnpushm)");
	if (npushm_region_alloc(r->dev, size, 0, &r->r) != NPUSHM_OK)
		return fail(r, err, errlen, "cannot allocate a shared region (libnpushm)");
	int rc = map_region(r, err, errlen);
	if (rc == 0)
		*out = r;
	return rc;
}

int shm_region_send(const struct shm_region *r, int sock)
{
	return npushm_region_send(r->r, sock) == NPUSHM_OK ? 0 : -EPIPE;
}

/* A peer's region, received on socket `fd` (SCM_RIGHTS) or already held
 * as descriptor `fd` (duplicated, the caller keeps its own), mapped. */
static int adopt(int fd, bool from_socket, struct shm_region **out, char *err, size_t errlen)
{
	struct shm_region *r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (npushm_dev_open(NPUSHM_BACKEND_AUTO, &r->dev) != NPUSHM_OK)
		return fail(r, err, errlen, "cannot open the npushm device (libnpushm)");
	if (from_socket && npushm_region_recv(r->dev, fd, &r->r) != NPUSHM_OK)
		return fail(r, err, errlen, "peer closed or sent no shared region");
	if (!from_socket && npushm_region_import_fd(r->dev, fd, &r->r) != NPUSHM_OK)
		return fail(r, err, errlen, "the descriptor a peer sent is no shared region");
	int rc = map_region(r, err, errlen);
	if (rc == 0)
		*out = r;
	return rc;
}

int shm_region_recv(int sock, int timeout_ms, struct shm_region **out, char *err, size_t errlen)
{
	struct pollfd pfd = { .fd = sock, .events = POLLIN };
	int pr;
	do
		pr = poll(&pfd, 1, timeout_ms);
	while (pr < 0 && errno == EINTR);
	if (pr == 0) {
		snprintf(err, errlen, "peer did not send its shared region within %d ms", timeout_ms);
		return -ETIMEDOUT;
	}
	return adopt(sock, true, out, err, errlen);
}

int shm_region_fd(const struct shm_region *r)
{
	return npushm_region_fd(r->r);
}

int shm_region_import(int fd, struct shm_region **out, char *err, size_t errlen)
{
	return adopt(fd, false, out, err, errlen);
}

void *shm_region_addr(const struct shm_region *r)
{
	return r->addr;
}

size_t shm_region_size(const struct shm_region *r)
{
	return r->size;
}

void shm_region_close(struct shm_region *r)
{
	if (!r)
		return;
	if (r->addr)
		npushm_region_unmap(r->r, r->addr);
	npushm_region_close(r->r);
	npushm_dev_close(r->dev);
	free(r);
}

const char *shm_region_backend(void)
{
	return "libnpushm";
}

int shm_region_reg_mr(const struct shm_region *r, struct ibv_pd *pd, struct npushm_mr **mr,
		      char **mr_addr, unsigned *lkey, unsigned *rkey, char *why, size_t whylen)
{
	npushm_mr_info_t mi;
	if (npushm_region_reg_mr(r->r, pd, 0, 0, NPUSHM_MR_REMOTE_WRITE, 0, mr) != NPUSHM_OK) {
		snprintf(why, whylen, "%s", npushm_last_error());
		return -1;
	}
	npushm_mr_info(*mr, &mi);
	*mr_addr = mi.addr;
	*lkey = mi.lkey;
	*rkey = mi.rkey;
	snprintf(why, whylen, "%s: %s", npushm_mr_path_name(mi.path), mi.reason);
	return 0;
}
