/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm_space.h - letting chosen peers read or write ranges of the calling
 * process's own memory, one copy, without ptrace: what single-copy
 * collectives between processes of a host need where process_vm_readv() is
 * refused (another uid, Yama ptrace_scope >= 2, a container's seccomp
 * profile).
 *
 * Tutorial
 * --------
 *	// the owner
 *	npushm_space_t *sp;
 *	uint64_t id;
 *	npushm_space_open(&sp);			// the module is not loaded...
 *	send_fd(peer_socket, npushm_space_fd(sp));	// SCM_RIGHTS: the permission
 *	npushm_space_grant(sp, buf, len, NPUSHM_SPACE_READ, &id);
 *	tell_peer(buf, len);			// the address is the key
 *	wait_until_peer_done();
 *	npushm_space_revoke(sp, id);		// no peer access in flight now
 *
 *	// the peer, holding the owner's descriptor
 *	size_t n;
 *	npushm_space_read(fd, (uint64_t)(uintptr_t)buf, dst, len, &n);
 *
 * A grant covers addresses of the owner's address space, not memory
 * objects: each access copies what the owner maps there at that moment
 * (never stale pages); revoke before unmapping or reusing the range. An
 * access outside every grant fails with NPUSHM_ERR_ACCESS; after the owner
 * exited or ran execve() with NPUSHM_ERR_NOT_FOUND; on addresses the owner
 * does not map (or maps read-only, for a write) with NPUSHM_ERR_INVALID
 * once nothing more could be copied (*np says how much was).
 *
 * Spaces need the npushm kernel module; without it npushm_space_open()
 * fails with NPUSHM_ERR_UNSUPPORTED.
 *
 * Threads: every call is thread-safe. A space belongs to the process that
 * opened it: after fork() the child cannot grant through its parent's
 * (NPUSHM_ERR_ACCESS) and opens its own.
 */
#ifndef NPUSHM_SPACE_H
#define NPUSHM_SPACE_H

#include "npushm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct npushm_space npushm_space_t;

#define NPUSHM_SPACE_READ	(1u << 0)	/* peers may read the range */
#define NPUSHM_SPACE_WRITE	(1u << 1)	/* peers may write it */

/* A space of the calling process's address space. NPUSHM_ERR_UNSUPPORTED
 * without the module (or a module without spaces), NPUSHM_ERR_ACCESS when
 * /dev/npushm may not be opened. */
NPUSHM_API npushm_status_t npushm_space_open(npushm_space_t **spp);
/* Close the handle; peers' copies of the descriptor keep working until
 * they close them, on the grants still in place. */
NPUSHM_API void npushm_space_close(npushm_space_t *sp);
/* The descriptor to pass to peers (SCM_RIGHTS); owned by the handle. */
NPUSHM_API int npushm_space_fd(const npushm_space_t *sp);

/* Grant exactly [@addr, @addr + @len), @len > 0, with @flags (READ and/or
 * WRITE). The range need not be mapped yet. NPUSHM_ERR_NO_SPACE past
 * 4096 grants. */
NPUSHM_API npushm_status_t npushm_space_grant(npushm_space_t *sp, const void *addr, size_t len,
					      unsigned int flags, uint64_t *idp);
/* Revoke a grant: when it returns, no peer access to it is in flight.
 * NPUSHM_ERR_NOT_FOUND for an unknown id. */
NPUSHM_API npushm_status_t npushm_space_revoke(npushm_space_t *sp, uint64_t id);

/* Copy @len bytes at the owner's address @addr into @dst (read), or from
 * @src to it (write), through a space descriptor @fd; *@np (if not NULL)
 * receives the bytes copied, also on failure. */
NPUSHM_API npushm_status_t npushm_space_read(int fd, uint64_t addr, void *dst, size_t len,
					     size_t *np);
NPUSHM_API npushm_status_t npushm_space_write(int fd, uint64_t addr, const void *src, size_t len,
					      size_t *np);

#ifdef __cplusplus
}
#endif

#endif /* NPUSHM_SPACE_H */
