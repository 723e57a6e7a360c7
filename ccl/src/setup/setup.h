/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * setup.h - communicator setup (setup/): unique ids and the bootstrap that
 * connects a communicator's transports. For api/.
 */
#ifndef NPCCL_SETUP_H
#define NPCCL_SETUP_H

#include "npccl_internal.h"

/* ---- bootstrap (bootstrap.c) -------------------------------------------- */
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

#endif
