/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * backend.h - the thin layer npccl-perf measures through. One implementation
 * is compiled in: backend_npccl.c (libnpccl) or backend_mpi.c (any MPI, via
 * its mpicc: Open MPI 4.1 and MPICH 4.0 here). The harness (perf.c) is the
 * same source for all of them.
 */
#ifndef CCL_PERF_BACKEND_H
#define CCL_PERF_BACKEND_H

#include <stddef.h>

enum bk_coll { BK_ALLREDUCE, BK_ALLGATHER, BK_REDUCE_SCATTER, BK_BROADCAST, BK_REDUCE,
	       BK_ALLTOALL, BK_NCOLLS };
enum bk_dtype { BK_F32, BK_F64, BK_I32, BK_NDTYPES };

/* Sets rank and size; may consume its own options from argv. 0 on success. */
int bk_init(int *argc, char ***argv, int *rank, int *size);
const char *bk_name(void);
/* one line on what the library measured or set up at init, "" if nothing */
const char *bk_info(void);
/* One collective; in place when sbuf == rbuf (allgather: sbuf is this rank's
 * block of rbuf). 0 on success, else prints why on stderr. */
int bk_run(enum bk_coll coll, const void *sbuf, void *rbuf, size_t count, enum bk_dtype dt,
	   int root);
/* max over ranks, for timing agreement */
double bk_max(double v);
double bk_sum(double v);
void bk_barrier(void);
/* what the library chose, "" if it does not say */
const char *bk_algo(enum bk_coll coll, size_t count, enum bk_dtype dt);
void bk_finalize(void);
/* --shared: buffers the library shares between the local ranks (npccl:
 * npccl_mem_alloc, zero-copy AllReduce). NULL if the backend has none. */
void *bk_alloc_shared(size_t bytes);

#endif
