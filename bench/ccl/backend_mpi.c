/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * backend_mpi.c - npccl-perf backend over MPI. Build with the MPI's own mpicc
 * (mpicc.openmpi, mpicc.mpich); launch with its mpirun.
 */
#include "backend.h"

#include <mpi.h>
#include <stdio.h>

static MPI_Datatype mdt(enum bk_dtype d)
{
	return d == BK_F64 ? MPI_DOUBLE : d == BK_I32 ? MPI_INT : MPI_FLOAT;
}

int bk_init(int *argc, char ***argv, int *rank, int *size)
{
	MPI_Init(argc, argv);
	MPI_Comm_rank(MPI_COMM_WORLD, rank);
	MPI_Comm_size(MPI_COMM_WORLD, size);
	return 0;
}

const char *bk_name(void)
{
	static char name[64];
	int len = 0;
	char lib[MPI_MAX_LIBRARY_VERSION_STRING];
	MPI_Get_library_version(lib, &len);
	snprintf(name, sizeof(name), "%.40s", lib);
	for (char *p = name; *p; p++)
		if (*p == '\n' || *p == ',')
			*p = 0;
	return name;
}

int bk_run(enum bk_coll coll, const void *s, void *r, size_t count, enum bk_dtype dt, int root)
{
	int me, n, rc = MPI_SUCCESS;
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	int c = (int)count;
	MPI_Datatype t = mdt(dt);
	int es = dt == BK_F64 ? 8 : 4;
	switch (coll) {
	case BK_ALLREDUCE:
		rc = MPI_Allreduce(s == r ? MPI_IN_PLACE : s, r, c, t, MPI_SUM, MPI_COMM_WORLD);
		break;
	case BK_ALLGATHER:
		rc = MPI_Allgather((const char *)s == (char *)r + (size_t)me * count * es ? MPI_IN_PLACE : s,
				   c, t, r, c, t, MPI_COMM_WORLD);
		break;
	case BK_REDUCE_SCATTER:
		rc = MPI_Reduce_scatter_block(s == r ? MPI_IN_PLACE : s, r, c, t, MPI_SUM, MPI_COMM_WORLD);
		break;
	case BK_BROADCAST:
		if (me == root && s != r) {
			/* out of place: copy like a library would, then broadcast */
			for (size_t i = 0; i < count * (size_t)es; i++)
				((char *)r)[i] = ((const char *)s)[i];
		}
		rc = MPI_Bcast(r, c, t, root, MPI_COMM_WORLD);
		break;
	case BK_REDUCE:
		rc = MPI_Reduce(s == r && me == root ? MPI_IN_PLACE : s, r, c, t, MPI_SUM, root,
				MPI_COMM_WORLD);
		break;
	case BK_ALLTOALL:
		rc = MPI_Alltoall(s == r ? MPI_IN_PLACE : s, c, t, r, c, t, MPI_COMM_WORLD);
		break;
	default:
		return -1;
	}
	if (rc != MPI_SUCCESS)
		fprintf(stderr, "MPI call failed: %d\n", rc);
	return rc == MPI_SUCCESS ? 0 : -1;
}

double bk_max(double v)
{
	double m;
	MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	return m;
}

double bk_sum(double v)
{
	double m;
	MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	return m;
}

void bk_barrier(void)
{
	MPI_Barrier(MPI_COMM_WORLD);
}

const char *bk_algo(enum bk_coll coll, size_t count, enum bk_dtype dt)
{
	return "";
}

void bk_finalize(void)
{
	MPI_Finalize();
}

void *bk_alloc_shared(size_t bytes)
{
	(void)bytes;
	return NULL;	/* MPI_Alloc_mem memory is not shared with the peers */
}

const char *bk_info(void)
{
	return "";
}
