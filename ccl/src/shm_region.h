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

#endif
