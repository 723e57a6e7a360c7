/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * setup.h - communicator setup (setup/): unique ids, the bootstrap, launcher
 * environments. For api/.
 */
#ifndef NPCCL_SETUP_H
#define NPCCL_SETUP_H

#include "npccl_internal.h"

/* ---- bootstrap (bootstrap.c, launcher.c) -------------------------------- */
struct unique_id_wire {
	char tag[8];		/* "NPCCLID1" */
	uint64_t magic;		/* communicator tag */
	uint32_t ipv4;		/* network order */
	uint16_t port;		/* network order */
	uint16_t flags;
};
NPCCL_HIDDEN npccl_status_t unique_id_create(uint32_t ipv4_be, uint16_t port_be, int listen_fd,
					     uint64_t magic, npccl_unique_id_t *id, char *err,
					     size_t errlen);
/* where a communicator's ranks find each other: a unique id (the TCP
 * rendezvous root) or a caller's key-value store */
struct boot_src {
	const npccl_unique_id_t *id;
	const npccl_kv_store_t *kv;
	const char *prefix;
	int timeout_ms;
};
NPCCL_HIDDEN npccl_status_t bootstrap_run(struct npccl_comm *c, const struct boot_src *src,
					  char *err, size_t errlen);
NPCCL_HIDDEN npccl_status_t launcher_resolve(int *rank, int *nranks, npccl_unique_id_t *id,
					     int *listen_fd_for_root, char *err, size_t errlen);
NPCCL_HIDDEN npccl_status_t comm_init_common(npccl_comm_t *out, int nranks,
					     const struct boot_src *src, int rank, char *err,
					     size_t errlen);

#endif
