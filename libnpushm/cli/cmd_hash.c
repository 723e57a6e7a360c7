/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * cmd_hash.c - `npushm hash FILE...`: the content hash of each file as
 * `npushm load` would record it (npushm_file_hash()), printed like xxhsum
 * ("HASH  FILE"), so that a file can be matched against the HASH column of
 * `npushm ls` without loading it. Needs no backend.
 */
#include <stdio.h>

#include "cli.h"

int cmd_hash(const struct cli_opts *o)
{
	struct json_object *arr = o->json ? json_object_new_array() : NULL;

	for (int i = 0; i < o->nargs; i++) {
		uint8_t hash[16];
		char hex[33];
		npushm_status_t st = npushm_file_hash(o->args[i], hash, hex);

		if (st) {
			json_object_put(arr);
			return cli_fail(o, st, NULL);
		}
		if (arr) {
			struct json_object *j = json_object_new_object();

			json_object_object_add(j, "file", json_object_new_string(o->args[i]));
			json_object_object_add(j, "hash", json_object_new_string(hex));
			json_object_array_add(arr, j);
		} else {
			printf("%s  %s\n", hex, o->args[i]);
		}
	}
	if (arr) {
		struct json_object *root = json_object_new_object();

		json_object_object_add(root, "files", arr);
		cli_print_json(root);
	}
	return 0;
}
