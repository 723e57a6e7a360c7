/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * cmd_rm.c - `npushm rm NAME`: remove a model (or region) name through
 * npushm_model_remove(); attached workers keep their mapping.
 */
#include <stdio.h>

#include "cli.h"

int cmd_rm(const struct cli_opts *o)
{
	npushm_dev_t *dev;
	npushm_status_t st;
	int rc = 0;

	dev = cli_open_dev(o, &rc);
	if (!dev)
		return rc;
	st = npushm_model_remove(dev, o->args[0]);
	if (st) {
		rc = cli_fail(o, st, NULL);
	} else if (o->json) {
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "removed", json_object_new_string(o->args[0]));
		cli_print_json(j);
	} else if (!o->quiet) {
		printf("removed '%s'\n", o->args[0]);
	}
	npushm_dev_close(dev);
	return rc;
}
