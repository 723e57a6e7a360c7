/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npccl_load.c - npccl-load: one model load for a cluster from the command
 * line. Every rank runs it (launched by torchrun-style variables, mpirun or
 * NPCCL_UNIQUE_ID: npccl_comm_init_env); the root reads the file, every
 * host gets the model published under NAME (npccl_model_load).
 *
 *   npccl-load [--root R] [--mode 0640] [--json] NAME [FILE]
 *   npccl-load --help | --version
 *
 * FILE is needed on the root only. Exit status 0 when every host published
 * the model, 1 when the load failed (nothing published; the report says
 * which host and why), 2 for bad usage.
 */
#include "npccl.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(FILE *f)
{
	fprintf(f, "usage: npccl-load [--root R] [--mode MODE] [--json] NAME [FILE]\n"
		"       npccl-load --help | --version\n\n"
		"Publish the safetensors FILE as model NAME on every host of the job, all or\n"
		"none: the root rank reads FILE, every other host receives it, checks its\n"
		"content hash and publishes it only once every host holds a verified copy.\n"
		"Run it on every rank (torchrun-style RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT,\n"
		"mpirun, or NPCCL_UNIQUE_ID/NPCCL_RANK/NPCCL_NRANKS); FILE on the root only.\n\n"
		"  --root R      the rank that reads FILE (default 0)\n"
		"  --mode MODE   who may attach: octal within 0666 with a read bit (default 0640)\n"
		"  --json        one JSON line per rank with the result or the error\n\n"
		"Exit status: 0 published on every host, 1 the load failed (nothing published;\n"
		"the message says which host and why), 2 bad usage.\n");
	return 2;
}

/* A usage error: what was wrong, then the usage; exit status 2. */
static int bad_usage(const char *fmt, const char *arg)
{
	fputs("npccl-load: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs("\n\n", stderr);
	return usage(stderr);
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
		} else if (!strcmp(argv[i], "--version")) {
			printf("npccl-load %s\n", NPUSHM_VERSION);
			return 0;
		} else if (!strcmp(argv[i], "--root") || !strcmp(argv[i], "--mode")) {
			const char *opt = argv[i];
			long v;

			if (i + 1 >= argc)
				return bad_usage("%s needs a value", opt);
			errno = 0;
			v = strtol(argv[++i], &end, opt[2] == 'r' ? 10 : 8);
			/* a mode without a read bit would let nobody attach the model */
			if (errno || end == argv[i] || *end || v < 0 ||
			    (opt[2] == 'm' && (v & ~0666L || !(v & 0444))) || v > INT32_MAX)
				return bad_usage(opt[2] == 'r' ? "--root wants a rank number, got '%s'"
					     : "--mode wants octal permission bits within 0666 with a "
					       "read bit (e.g. 0640), got '%s'", argv[i]);
			if (opt[2] == 'r')
				root = (int)v;
			else
				mode = (unsigned long)v;
		} else if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			return bad_usage("unknown option '%s'", argv[i]);
		} else if (!name) {
			name = argv[i];
		} else if (!path) {
			path = argv[i];
		} else {
			return bad_usage("one NAME and one FILE at most (extra argument '%s')", argv[i]);
		}
	}
	if (!name)
		return bad_usage("%s", "which model name? give NAME (and FILE on the root)");
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
