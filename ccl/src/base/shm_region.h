/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * shm_region.h - the only interface through which ccl creates, maps, shares
 * and releases shared-memory regions. One implementation file
 * (shm_region.c) decides the backend; nothing else in ccl touches memfd,
 * /dev/shm or libnpushm.
 *
 * Contracts: a region is mapped read-write and prefaulted when created or
 * opened; shm_region_send() passes it to the peer at the other end of a
 * connected Unix socket (SCM_RIGHTS); shm_region_recv() maps what was sent;
 * shm_region_fd()/shm_region_import() do the same for a descriptor the
 * caller passes itself.
 * shm_region_close() unmaps and accepts NULL. Functions return 0 or -errno
 * and write a human-readable reason into `err`.
 */
#ifndef NPCCL_SHM_REGION_H
#define NPCCL_SHM_REGION_H

#include <stddef.h>

struct shm_region;

int shm_region_create(size_t size, const char *name, struct shm_region **out, char *err,
		      size_t errlen);
int shm_region_send(const struct shm_region *r, int unix_sock);
int shm_region_recv(int unix_sock, int timeout_ms, struct shm_region **out, char *err,
		    size_t errlen);
/* the region's descriptor (owned by the region: do not close it) */
int shm_region_fd(const struct shm_region *r);
/* maps (and prefaults) the region behind a descriptor received from a peer;
 * fd stays the caller's */
int shm_region_import(int fd, struct shm_region **out, char *err, size_t errlen);
void *shm_region_addr(const struct shm_region *r);
size_t shm_region_size(const struct shm_region *r);
void shm_region_close(struct shm_region *r);
/* "memfd" or "npushm" */
const char *shm_region_backend(void);

/* registers the whole region with an RDMA protection domain through
 * libnpushm (npushm_region_reg_mr: dma-buf or mapping), remotely writable;
 * *mr_addr is the region's first byte in the registration's address space.
 * 0 or -1 with the reason in `why`. */
struct ibv_pd;
struct npushm_mr;
int shm_region_reg_mr(const struct shm_region *r, struct ibv_pd *pd, struct npushm_mr **mr,
		      char **mr_addr, unsigned *lkey, unsigned *rkey, char *why, size_t whylen);

#endif
