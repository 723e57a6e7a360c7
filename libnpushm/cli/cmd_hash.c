/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * cmd_hash.c - `npushm hash FILE...`: the content hash of each file as
 * `npushm load` would record it (npushm_file_hash()), printed like xxhsum
 * ("HASH  FILE"), so that a file can be matched against the HASH column of
 * `npushm ls` without loading it. Needs no backend. A file that cannot be
 * read is reported on stderr and the others are still hashed, as sha256sum
 * does; the exit status is then 1.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

int cmd_hash(const struct cli_opts *o)
{
	struct json_object *arr = o->json ? json_object_new_array() : NULL, *root = NULL;
	struct cli_many many;

	cli_many_init(&many, o, "file");
	for (int i = 0; i < o->nargs; i++) {
		uint8_t hash[16];
		char hex[33];
		npushm_status_t st = npushm_file_hash(o->args[i], hash, hex);

		if (st) {
			cli_many_fail(&many, o->args[i], st);
		} else if (arr) {
			struct json_object *j = json_object_new_object();

			json_object_object_add(j, "file", cli_json_string(o->args[i]));
			json_object_object_add(j, "hash", json_object_new_string(hex));
			json_object_array_add(arr, j);
		} else {
			char *safe = cli_text(o->args[i]);

			printf("%s  %s\n", hex, safe ? safe : o->args[i]);
			free(safe);
			fflush(stdout);
		}
	}
	if (arr) {
		root = json_object_new_object();
		json_object_object_add(root, "files", arr);
	}
	return cli_many_end(&many, root, "files could not be hashed");
}
