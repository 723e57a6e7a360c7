/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * cmd_rm.c - `npushm rm NAME...`: remove model (or region) names through
 * npushm_model_remove(); attached workers keep their mapping. As rm(1), a
 * name that cannot be removed is reported on stderr and the others are
 * still removed; the exit status is then 1.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

int cmd_rm(const struct cli_opts *o)
{
	struct json_object *done = NULL, *root = NULL;
	struct cli_many many;
	npushm_status_t st;
	npushm_dev_t *dev;
	int rc = 0;

	dev = cli_open_dev(o, &rc);
	if (!dev)
		return rc;
	if (o->nargs == 1) {
		/* one name: its error as every command's (cli_fail), JSON {"removed": NAME} */
		st = npushm_model_remove(dev, o->args[0]);
		if (st) {
			rc = cli_fail(o, st, NULL);
		} else if (o->json) {
			struct json_object *j = json_object_new_object();

			json_object_object_add(j, "removed", cli_json_string(o->args[0]));
			cli_print_json(j);
		} else if (!o->quiet) {
			char *safe = cli_text(o->args[0]);

			printf("removed '%s'\n", safe ? safe : o->args[0]);
			free(safe);
		}
		npushm_dev_close(dev);
		return rc;
	}
	/* several: --json {"removed": [...]}, with "error" and "errors" when some failed */
	cli_many_init(&many, o, "name");
	if (o->json)
		done = json_object_new_array();
	for (int i = 0; i < o->nargs; i++) {
		st = npushm_model_remove(dev, o->args[i]);
		if (st) {
			cli_many_fail(&many, o->args[i], st);
		} else if (done) {
			json_object_array_add(done, cli_json_string(o->args[i]));
		} else if (!o->quiet) {
			char *safe = cli_text(o->args[i]);

			printf("removed '%s'\n", safe ? safe : o->args[i]);
			free(safe);
			fflush(stdout);
		}
	}
	npushm_dev_close(dev);
	if (done) {
		root = json_object_new_object();
		json_object_object_add(root, "removed", done);
	}
	return cli_many_end(&many, root, "names could not be removed");
}
