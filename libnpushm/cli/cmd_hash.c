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
	struct json_object *arr = o->json ? json_object_new_array() : NULL;
	struct json_object *errs = o->json ? json_object_new_array() : NULL;
	char first_msg[1024] = "";
	npushm_status_t first = NPUSHM_OK;
	int failed = 0;

	for (int i = 0; i < o->nargs; i++) {
		uint8_t hash[16];
		char hex[33];
		npushm_status_t st = npushm_file_hash(o->args[i], hash, hex);

		if (st) {
			/* Like sha256sum: say so, go on, fail at the end. */
			const char *msg = *npushm_last_error() ? npushm_last_error() : npushm_strerror(st);

			char *safe = cli_text(msg);

			fprintf(stderr, "npushm: %s\n", safe ? safe : "(out of memory)");
			free(safe);
			if (!failed) {
				first = st;
				snprintf(first_msg, sizeof(first_msg), "%s", msg);
			}
			if (errs) {
				struct json_object *j = json_object_new_object();

				json_object_object_add(j, "file", cli_json_string(o->args[i]));
				json_object_object_add(j, "status", json_object_new_string(cli_status_name(st)));
				json_object_object_add(j, "message", cli_json_string(msg));
				json_object_array_add(errs, j);
			}
			failed++;
			continue;
		}
		if (arr) {
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
		struct json_object *root = json_object_new_object();

		json_object_object_add(root, "files", arr);
		if (failed) {
			struct json_object *err = json_object_new_object();
			char msg[1200];

			if (failed == 1)
				snprintf(msg, sizeof(msg), "%s", first_msg);
			else
				snprintf(msg, sizeof(msg), "%d of %d files could not be hashed; the first: %s",
					 failed, o->nargs, first_msg);
			json_object_object_add(err, "status", json_object_new_string(cli_status_name(first)));
			json_object_object_add(err, "message", cli_json_string(msg));
			json_object_object_add(root, "error", err);
			json_object_object_add(root, "errors", errs);
		} else {
			json_object_put(errs);
		}
		cli_print_json(root);
	}
	if (failed && o->nargs > 1)
		fprintf(stderr, "npushm: %d of %d files could not be hashed\n", failed, o->nargs);
	return failed ? 1 : 0;
}
