/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm_cluster.h - one model load for a cluster of hosts: a safetensors
 * file read on one host is sent to every other host over the caller's
 * collectives and published there as a model (npushm_model_attach) under
 * the same name and content hash, on every host or on none.
 *
 * libnpushm has no network of its own: the caller brings its ranks (one or
 * more processes per host, each with its host's npushm instance) and two
 * collectives over them, as a table of callbacks. libnpccl's
 * npccl_model_load() is this function over a communicator's Broadcast and
 * AllGather; any other transport (MPI, a test harness) works the same way.
 *
 * Tutorial
 * --------
 *	static int bcast(void *ctx, void *buf, size_t len, int root)
 *	{ return MPI_Bcast(buf, (int)len, MPI_BYTE, root, ctx) != MPI_SUCCESS; }
 *	...
 *	npushm_cluster_ops_t ops = { .rank = me, .nranks = n, .host_of = host_of,
 *				     .broadcast = bcast, .allgather = gather,
 *				     .last_error = why, .ctx = comm };
 *	npushm_cluster_result_t res;
 *	if (npushm_cluster_load(&ops, 0, me == 0 ? "model.safetensors" : NULL,
 *				"bert", 0640, &res) != NPUSHM_OK)
 *		fprintf(stderr, "%s (%s)\n", npushm_last_error(), res.report);
 *
 * Steps: the root hashes the file (npushm_file_hash) and broadcasts name,
 * size and hash; the loading rank of every host (the root on its host, else
 * the host's lowest rank) checks that the name is free there; the bytes
 * are broadcast in chunks of at most 4 MiB into an anonymous memory file on
 * each host; each host loads its copy under a staging name
 * ("npccl-staging.<pid>.<hash>", a complete sealed model) and compares its
 * content hash with the root's. Only when every host holds a verified copy
 * does each publish the real name (and drop the staging name); a failure
 * while publishing removes the name on every host that published it. After
 * every step the ranks exchange verdicts (AllGather), so a failure on one
 * host fails the load on all, named in the result's report; a collective
 * that fails ends the load at once, leaving no name and no staging copy
 * from this rank. A staging name left by a killed loader is removed by the
 * next cluster load on its host.
 *
 * Threads: one load per set of ranks at a time; the callbacks are called
 * from the calling thread only.
 */
#ifndef NPUSHM_CLUSTER_H
#define NPUSHM_CLUSTER_H

#include "npushm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The caller's ranks and collectives. Collectives are called in the same
 * order on every rank and return 0, or non-zero once they failed (the
 * load then stops; last_error() says why). */
typedef struct npushm_cluster_ops {
	int rank, nranks;	/* this process's rank, the number of ranks */
	/* the host index of @rank: ranks with the same index share an npushm
	 * instance, and one of them loads for it */
	int (*host_of)(void *ctx, int rank);
	/* optional: a name of @rank's host for reports (NULL: none) */
	const char *(*host_name)(void *ctx, int rank);
	/* @root's @len bytes at @buf to every rank's @buf */
	int (*broadcast)(void *ctx, void *buf, size_t len, int root);
	/* every rank's @len bytes at @mine into @all (nranks * @len), rank order */
	int (*allgather)(void *ctx, const void *mine, void *all, size_t len);
	/* why the last collective failed (copied at once) */
	const char *(*last_error)(void *ctx);
	/* optional, both or neither: the buffer the chunks travel in (memory
	 * the transport moves without copies); the same calls on every rank;
	 * NULL from chunk_alloc is a failed collective. Default: malloc. */
	void *(*chunk_alloc)(void *ctx, size_t len);
	void (*chunk_free)(void *ctx, void *buf);
	void *ctx;
} npushm_cluster_ops_t;

/* Why a load failed, beyond npushm_status_t. */
typedef enum npushm_cluster_cause {
	NPUSHM_CLUSTER_OK = 0,
	NPUSHM_CLUSTER_INPUT,		/* a bad root, name, mode or file; the name taken on a host */
	NPUSHM_CLUSTER_MISMATCH,	/* the ranks passed different names or roots */
	NPUSHM_CLUSTER_HASH,		/* a host's copy has another content hash */
	NPUSHM_CLUSTER_HOST,		/* a host could not load, stage or publish */
	NPUSHM_CLUSTER_NO_MEMORY,	/* this process ran out of memory */
	NPUSHM_CLUSTER_TRANSPORT,	/* a collective failed */
} npushm_cluster_cause_t;

#define NPUSHM_CLUSTER_REPORT_LEN 1024
typedef struct npushm_cluster_result {
	uint8_t hash[16];	/* content hash, as npushm_model_info's */
	char hash_hex[33];
	uint64_t source_size;	/* bytes of the file */
	int nhosts;		/* hosts among the ranks */
	int published;		/* hosts where the name is published on return */
	int deduplicated;	/* this host reused an identical published copy */
	npushm_cluster_cause_t cause;
	char report[NPUSHM_CLUSTER_REPORT_LEN];	/* per host: "host 1 (rank 2 on h1): ..." */
} npushm_cluster_result_t;

/*
 * Collective over @ops' ranks: load the safetensors file @path (read on
 * rank @root only; others may pass NULL) and publish it as model @name (the
 * same on every rank) with permission bits @mode (0: 0640) on every host.
 * NPUSHM_OK when every host published it. Otherwise nothing is published,
 * npushm_last_error() names the failing host and rank, @result->cause says
 * why (INPUT and MISMATCH: NPUSHM_ERR_INVALID; HASH: NPUSHM_ERR_CORRUPT;
 * HOST: NPUSHM_ERR_SYSTEM; NO_MEMORY: NPUSHM_ERR_NO_MEMORY; TRANSPORT:
 * NPUSHM_ERR_PROTOCOL) and @result->report what happened on each host.
 * @result [out, may be NULL].
 */
NPUSHM_API npushm_status_t npushm_cluster_load(const npushm_cluster_ops_t *ops, int root,
					       const char *path, const char *name, uint32_t mode,
					       npushm_cluster_result_t *result);

#ifdef __cplusplus
}
#endif

#endif /* NPUSHM_CLUSTER_H */
