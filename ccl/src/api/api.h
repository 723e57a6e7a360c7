/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * api.h - what the public API's files share (api/): making a communicator
 * from a rendezvous, for comm.c's init calls and launcher.c's
 * npccl_comm_init_env().
 */
#ifndef NPCCL_API_H
#define NPCCL_API_H

#include "npccl_internal.h"
#include "setup/setup.h"

NPCCL_HIDDEN npccl_status_t comm_init_common(npccl_comm_t *out, int nranks,
					     const struct boot_src *src, int rank, char *err,
					     size_t errlen);

#endif
