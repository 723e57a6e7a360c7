/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * ranks.h - npushm-llama's tensor-parallel ranks: N forked processes that
 * join one npccl communicator and end with their parent however it ends.
 */
#ifndef NPLLAMA_CLI_RANKS_H
#define NPLLAMA_CLI_RANKS_H

#include "npccl.h"

/* one rank's work: its exit status (0 done) */
typedef int (*rank_fn)(int rank, int nranks, const npccl_unique_id_t *id, void *arg);

/*
 * Fork @n ranks running @fn and wait for them: 0 when every rank exited 0,
 * else 1 (a rank killed by a signal is named on stderr). Each rank dies of
 * SIGKILL when the parent dies (PR_SET_PDEATHSIG, checked against a parent
 * that died before it was set). SIGINT, SIGTERM or SIGHUP to the parent
 * end the ranks (SIGTERM), run @cleanup(@arg) (may be NULL), and the parent
 * dies of the same signal.
 */
int ranks_run(int n, rank_fn fn, void *arg, void (*cleanup)(void *), const char *prog);

#endif
