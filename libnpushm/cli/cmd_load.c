/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * cmd_load.c - `npushm load FILE --name NAME`: load a safetensors file into
 * shared memory through npushm_model_load() and report what happened
 * (a name that already holds the same content is a success: nothing to do;
 * --replace moves a name holding other content to the new model; --per-node
 * places one copy per NUMA node).
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

int cmd_load(const struct cli_opts *o)
{
	npushm_load_opts_t lo = { 0 };
	npushm_load_result_t res;
	struct cli_progress *bar;
	struct timespec t0, t1;
	npushm_dev_t *dev;
	npushm_status_t st;
	double secs;
	char sz[32];
	int rc = 0;

	dev = cli_open_dev(o, &rc);
	if (!dev)
		return rc;
	bar = cli_progress_new(o->name, !o->json && !o->quiet && isatty(STDERR_FILENO));
	lo.mode = o->mode;
	lo.flags = (o->no_dedup ? NPUSHM_LOAD_NO_DEDUP : 0) | (o->replace ? NPUSHM_LOAD_REPLACE : 0) |
		   (o->packed_only ? NPUSHM_LOAD_PACKED_ONLY : 0) |
		   (o->per_node ? NPUSHM_LOAD_PER_NODE : 0);
	lo.progress = cli_progress_cb;
	lo.progress_arg = bar;
	lo.packer = o->dtype ? cli_packer(o->dtype) : NULL;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	st = npushm_model_load(dev, o->args[0], o->name, &lo, &res);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cli_progress_free(bar);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	if (st) {
		rc = cli_fail(o, st, NULL);
	} else if (o->json) {
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "name", json_object_new_string(o->name));
		json_object_object_add(j, "file", cli_json_string(o->args[0]));
		json_object_object_add(j, "backend", json_object_new_string(npushm_backend_name(npushm_dev_backend(dev))));
		json_object_object_add(j, "tensors", json_object_new_uint64(res.tensor_count));
		json_object_object_add(j, "source_size", json_object_new_uint64(res.source_size));
		json_object_object_add(j, "region_size", json_object_new_uint64(res.region_size));
		json_object_object_add(j, "region_id", json_object_new_uint64(res.region_id));
		json_object_object_add(j, "hash", json_object_new_string(res.hash_hex));
		json_object_object_add(j, "dtype", json_object_new_string(o->dtype ? o->dtype : "as stored"));
		json_object_object_add(j, "packed_only", json_object_new_boolean(o->packed_only));
		json_object_object_add(j, "deduplicated", json_object_new_boolean(res.deduplicated));
		json_object_object_add(j, "already_loaded", json_object_new_boolean(res.already_loaded));
		json_object_object_add(j, "per_node", json_object_new_boolean(o->per_node));
		json_object_object_add(j, "seconds", json_object_new_double(secs));
		cli_print_json(j);
	} else if (!o->quiet && res.already_loaded) {
		printf("'%s' already holds %s (hash %s, region %llu): nothing to do\n", o->name, o->args[0],
		       res.hash_hex, (unsigned long long)res.region_id);
	} else if (!o->quiet) {
		printf("loaded '%s' from %s: %zu tensors, %s, hash %s, region %llu (%s) in %.2f s (%.2f GB/s)\n",
		       o->name, o->args[0], res.tensor_count, cli_size(res.source_size, sz, sizeof(sz)),
		       res.hash_hex, (unsigned long long)res.region_id,
		       res.deduplicated ? "reused the published copy" :
		       o->per_node ? "one copy per NUMA node, NAME@nodeN" : "new copy", secs,
		       secs > 0 ? (double)res.source_size / secs / 1e9 : 0.0);
	}
	if (!st && !res.already_loaded)
		cli_packer_warn_unpacked("npushm load", o->dtype);
	npushm_dev_close(dev);
	return rc;
}
