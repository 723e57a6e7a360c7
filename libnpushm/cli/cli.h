/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * cli.h - what the npushm command's files share: parsed options, the
 * command entry points, output helpers. Commands return the process exit
 * status (0 ok, 1 failure, 2 usage) and print through cli_fail() so that
 * errors look the same in text and JSON mode.
 */
#ifndef NPUSHM_CLI_H
#define NPUSHM_CLI_H

#include <stdbool.h>

#include <json-c/json.h>

#include "npushm.h"

struct cli_opts {
	bool json;
	bool quiet;
	bool no_dedup;
	bool replace;
	bool packed_only;	/* load --packed-only */
	bool per_node;
	bool all;
	npushm_backend_t backend;
	const char *name;
	const char *dtype;	/* load --dtype: NULL (plain) or "f32" (packed linear weights) */
	unsigned mode;
	const char **args;	/* positional arguments after the command */
	int nargs;
};

int cmd_load(const struct cli_opts *o);
int cmd_ls(const struct cli_opts *o);
int cmd_info(const struct cli_opts *o);
int cmd_rm(const struct cli_opts *o);
int cmd_hash(const struct cli_opts *o);

/* Print the thread's libnpushm error (or @msg) and return 1. */
int cli_fail(const struct cli_opts *o, npushm_status_t st, const char *msg);
/* Print @obj as the JSON result and drop it; returns 0. */
int cli_print_json(struct json_object *obj);
/* Open the backend chosen by --backend / NPUSHM_BACKEND; message on failure. */
npushm_dev_t *cli_open_dev(const struct cli_opts *o, int *rc);
/*
 * @s for a terminal: control characters (C0, DEL, C1) and bytes that are no
 * UTF-8 written as \xNN, so that a tensor name or a message quoting a file
 * cannot move the cursor, retitle the window or hide text. Free it; NULL
 * when out of memory.
 */
char *cli_text(const char *s);
/*
 * @s with every byte that is no UTF-8 written as \xNN, everything else kept
 * (control characters too): what a JSON string may hold. Free it; NULL
 * when out of memory. cli_json_string(): a JSON string of it.
 */
char *cli_utf8(const char *s);
struct json_object *cli_json_string(const char *s);
/*
 * A command over several operands that goes on past one that fails, as
 * rm(1) and sha256sum do (hash, rm): each failure is said on stderr at
 * once and kept for --json; the first is kept for the summary.
 */
struct cli_many {
	const struct cli_opts *o;
	const char *key;		/* "file" or "name": the operand in --json's errors */
	struct json_object *errs;	/* --json: one object per failure */
	npushm_status_t first;
	char first_msg[1024];
	int failed;
};
void cli_many_init(struct cli_many *m, const struct cli_opts *o, const char *key);
void cli_many_fail(struct cli_many *m, const char *arg, npushm_status_t st);
/*
 * The end, @what saying what failed ("files could not be hashed"): with
 * --json, "error" and "errors" added to @root when some failed; on stderr
 * the count when there were several operands. Returns the exit status.
 */
int cli_many_end(struct cli_many *m, struct json_object *root, const char *what);
/* "1.5 GiB" into @buf. */
const char *cli_size(unsigned long long bytes, char *buf, unsigned len);
/* "NOT_FOUND" and so on. */
const char *cli_status_name(npushm_status_t st);

#include "pack.h"

/* progress.c: a progress bar on stderr, drawn only when it is a terminal. */
struct cli_progress;
struct cli_progress *cli_progress_new(const char *label, bool enabled);
void cli_progress_cb(void *arg, npushm_load_stage_t stage, uint64_t done, uint64_t total);
void cli_progress_free(struct cli_progress *p);

#endif
