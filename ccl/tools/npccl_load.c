/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npccl_load.c - npccl-load: one model load for a cluster from the command
 * line. Every rank runs it (launched by torchrun-style variables, mpirun or
 * NPCCL_UNIQUE_ID: npccl_comm_init_env); the root reads the file, every
 * host gets the model published under NAME (npccl_model_load).
 *
 *   npccl-load [--root R] [--mode 0640] [--json] NAME [FILE]
 *   npccl-load --help
 *
 * FILE is needed on the root only. Exit status 0 when every host published
 * the model, 1 when the load failed (nothing published; the report says
 * which host and why), 2 for bad usage.
 */
#include "npccl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(FILE *f)
{
	fprintf(f, "usage: npccl-load [--root R] [--mode 0640] [--json] NAME [FILE]\n"
		"  run on every rank (torchrun-style RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT,\n"
		"  mpirun, or NPCCL_UNIQUE_ID/NPCCL_RANK/NPCCL_NRANKS); FILE on the root only.\n"
		"  Publishes the safetensors FILE as model NAME on every host, all or none.\n");
	return 2;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

int main(int argc, char **argv)
{
	int root = 0, json = 0;
	unsigned long mode = 0;
	const char *name = NULL, *path = NULL;
	for (int i = 1; i < argc; i++) {
		char *end;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--root") && i + 1 < argc) {
			root = (int)strtol(argv[++i], &end, 10);
			if (*end)
				return usage(stderr);
		} else if (!strcmp(argv[i], "--mode") && i + 1 < argc) {
			mode = strtoul(argv[++i], &end, 8);
			if (*end || mode > 0666)
				return usage(stderr);
		} else if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (argv[i][0] == '-') {
			return usage(stderr);
		} else if (!name) {
			name = argv[i];
		} else if (!path) {
			path = argv[i];
		} else {
			return usage(stderr);
		}
	}
	if (!name)
		return usage(stderr);
	npccl_comm_t comm;
	char err[512];
	if (npccl_comm_init_env(&comm, err, sizeof(err))) {
		fprintf(stderr, "npccl-load: cannot join the communicator: %s\n", err);
		return 1;
	}
	int me;
	npccl_comm_rank(comm, &me);
	npccl_model_load_result_t res;
	npccl_status_t st = npccl_model_load(comm, root, me == root ? path : NULL, name,
					     (uint32_t)mode, &res);
	if (json) {
		printf("{\"rank\":%d,\"ok\":%s,\"status\":", me, st ? "false" : "true");
		json_str(npccl_strerror(st));
		printf(",\"name\":");
		json_str(name);
		printf(",\"hash\":\"%s\",\"source_size\":%llu,\"hosts\":%d,\"published\":%d,"
		       "\"deduplicated\":%s,\"report\":", res.hash_hex,
		       (unsigned long long)res.source_size, res.nhosts, res.published,
		       res.deduplicated ? "true" : "false");
		json_str(res.report);
		if (st) {
			printf(",\"error\":");
			json_str(npccl_comm_last_error(comm));
		}
		printf("}\n");
	} else if (st) {
		fprintf(stderr, "npccl-load: rank %d: %s: %s\n", me, npccl_strerror(st),
			npccl_comm_last_error(comm));
	} else if (me == root) {
		printf("published '%s' (xxh3 %s, %llu bytes) on %d host(s): %s\n", name, res.hash_hex,
		       (unsigned long long)res.source_size, res.published, res.report);
	}
	npccl_comm_destroy(comm);
	return st ? 1 : 0;
}
