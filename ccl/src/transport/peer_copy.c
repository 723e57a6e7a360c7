/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * peer_copy.c - one copy between this rank's memory and a local peer's
 * private memory, the primitive of the single-copy collectives (algo_cma.c)
 * and of large shared-memory messages (transport_shm.c): through the
 * peer's npushm space (pread/pwrite on its descriptor: the module checks
 * the peer's grant, no ptrace access needed), or, where the peer has none,
 * by cross-memory attach (process_vm_readv/writev: same user, ptrace
 * access allowed). Counted by path for npccl_comm_copy_stats. Failures fail
 * the communicator: an exited peer as dead, anything else (an address it
 * no longer maps, a revoked grant) as a system error naming the peer.
 */
#include "npccl_internal.h"
#include "transport/transport.h"
#include "npushm_space.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

static void count(atomic_uint_fast64_t *bytes, atomic_uint_fast64_t *copies, size_t len)
{
	atomic_fetch_add_explicit(bytes, len, memory_order_relaxed);
	atomic_fetch_add_explicit(copies, 1, memory_order_relaxed);
}

static npccl_status_t copy_failed(struct npccl_comm *c, int rank, bool write, const char *why)
{
	char who[128];
	peer_describe(c, rank, who, sizeof(who));
	return comm_fail(c, NPCCL_ERR_SYSTEM, rank, "cannot %s the buffer of %s: %s",
			 write ? "write" : "read", who, why);
}

npccl_status_t peer_copy(struct npccl_comm *c, int rank, char *local, uint64_t remote, size_t len,
			 bool write)
{
	const struct peer *p = &c->peers[rank];
	size_t done = 0;
	if (!len)
		return NPCCL_OK;
	if (p->space_fd >= 0) {
		npushm_status_t ps = write ? npushm_space_write(p->space_fd, remote, local, len, &done)
					   : npushm_space_read(p->space_fd, remote, local, len, &done);
		if (ps == NPUSHM_OK) {
			count(&c->copied.space_bytes, &c->copied.space_copies, len);
			return NPCCL_OK;
		}
		if (ps == NPUSHM_ERR_NOT_FOUND)
			return comm_peer_lost(c, rank, "its process exited");
		return copy_failed(c, rank, write, npushm_last_error());
	}
	while (done < len) {
		struct iovec l = { local + done, len - done };
		struct iovec r = { (void *)(uintptr_t)(remote + done), len - done };
		ssize_t n = write ? process_vm_writev((pid_t)p->info.pid, &l, 1, &r, 1, 0)
				  : process_vm_readv((pid_t)p->info.pid, &l, 1, &r, 1, 0);
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		int e = n < 0 ? errno : EFAULT;
		if (e == ESRCH)
			return comm_peer_lost(c, rank, "its process exited");
		return copy_failed(c, rank, write, strerror(e));
	}
	count(&c->copied.cma_bytes, &c->copied.cma_copies, len);
	return NPCCL_OK;
}
