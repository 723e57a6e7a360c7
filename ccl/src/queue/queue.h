/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * queue.h - the request layer's calls (queue/): submitting, draining and
 * shutting down the per-communicator queue, groups. For api/.
 */
#ifndef NPCCL_QUEUE_H
#define NPCCL_QUEUE_H

#include "npccl_internal.h"

NPCCL_HIDDEN npccl_status_t req_submit(struct npccl_comm *c, const struct op *op,
				       npccl_request_t *out);
NPCCL_HIDDEN npccl_status_t req_queue_init(struct npccl_comm *c);
/* waits for every queued call and pending message (destroy) */
NPCCL_HIDDEN void req_drain(struct npccl_comm *c);
/* stops the worker and completes everything still queued or pending with
 * `st` (destroy, abort); false if the worker did not stop within 2 s */
NPCCL_HIDDEN bool req_shutdown(struct npccl_comm *c, npccl_status_t st, const char *why);
NPCCL_HIDDEN void req_queue_free(struct npccl_comm *c);
/* the exec role's current call is running and more may be waiting */
NPCCL_HIDDEN bool req_queue_nonempty(struct npccl_comm *c);
/* groups (request.c): >0 while npccl_group_start is open in this thread */
NPCCL_HIDDEN int group_depth(void);
NPCCL_HIDDEN npccl_status_t group_record(struct npccl_comm *c, const struct op *op);
NPCCL_HIDDEN int group_suspend(void);
NPCCL_HIDDEN void group_resume(int depth);
/* posts `n` point-to-point ops together and waits for all of them */
NPCCL_HIDDEN npccl_status_t req_run_batch(struct npccl_comm *c, const struct op *ops, int n);

#endif
