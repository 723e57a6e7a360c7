/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm.c - the npushm command: argument parsing and dispatch.
 *
 *   npushm [--backend kmod|posix] load FILE --name NAME [--mode 0640] [--no-dedup]
 *   npushm ls [--all]
 *   npushm info NAME
 *   npushm rm NAME
 *   npushm hash FILE...
 * Every command takes --json (one JSON document on stdout, errors too).
 * Exit status: 0 success, 1 failure, 2 bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
	"usage: npushm [--backend kmod|posix] COMMAND [--json] ...\n"
	"\n"
	"  load FILE.safetensors --name NAME [--mode 0640] [--no-dedup] [--quiet]\n"
	"                 load a model once into shared memory, sealed, published as NAME\n"
	"  ls [--all]     list models and regions (--all: hash aliases too)\n"
	"  info NAME      show a model's tensors\n"
	"  rm NAME        remove a model's name (memory goes when the last user detaches)\n"
	"  hash FILE...   the content hash load would record (no backend needed)\n"
	"\n"
	"The backend is the npushm module when an npushm filesystem is mounted at\n"
	"$NPUSHM_DIR (default /run/npushm), else POSIX shared memory in /dev/shm\n"
	"($NPUSHM_SHM_DIR); NPUSHM_BACKEND or --backend choose it.\n";

const char *cli_status_name(npushm_status_t st)
{
	static const char *const names[] = {
		"OK", "INVALID", "NO_MEMORY", "NO_SPACE", "QUOTA", "NOT_FOUND", "EXISTS",
		"ACCESS", "SEALED", "BUSY", "NAME", "UNSUPPORTED", "NO_DEVICE", "IO", "FORMAT",
		"CORRUPT", "PROTOCOL", "SYSTEM",
	};

	return (unsigned)st < sizeof(names) / sizeof(names[0]) ? names[st] : "UNKNOWN";
}

int cli_print_json(struct json_object *obj)
{
	puts(json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(obj);
	return 0;
}

int cli_fail(const struct cli_opts *o, npushm_status_t st, const char *msg)
{
	const char *text = msg ? msg : npushm_last_error();

	if (!*text)
		text = npushm_strerror(st);
	fprintf(stderr, "npushm: %s\n", text);
	if (o && o->json) {
		struct json_object *err = json_object_new_object();
		struct json_object *root = json_object_new_object();

		json_object_object_add(err, "status", json_object_new_string(cli_status_name(st)));
		json_object_object_add(err, "message", json_object_new_string(text));
		json_object_object_add(root, "error", err);
		cli_print_json(root);
	}
	return 1;
}

npushm_dev_t *cli_open_dev(const struct cli_opts *o, int *rc)
{
	npushm_dev_t *dev;
	npushm_status_t st = npushm_dev_open(o->backend, &dev);

	if (st) {
		*rc = cli_fail(o, st, NULL);
		return NULL;
	}
	return dev;
}

const char *cli_size(unsigned long long b, char *buf, unsigned len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", b);
	else
		snprintf(buf, len, "%.1f %s", v, unit[u]);
	return buf;
}

/*
 * The library's warnings (what went slower or differently than asked, and
 * how to fix it), held until the command is done so that they do not break
 * the progress bar, then printed on stderr. Unless --quiet, and unless
 * $NPUSHM_LOG asks for the library's own stderr logging.
 */
#define CLI_MAX_WARNINGS 8
static char warnings[CLI_MAX_WARNINGS][1024];
static int nwarnings;

static void hold_warning(void *arg, npushm_log_level_t level, const char *msg)
{
	(void)arg;
	(void)level;
	if (nwarnings < CLI_MAX_WARNINGS)
		snprintf(warnings[nwarnings++], sizeof(warnings[0]), "%s", msg);
}

static int print_warnings(int rc)
{
	for (int i = 0; i < nwarnings; i++)
		fprintf(stderr, "npushm: warning: %s\n", warnings[i]);
	return rc;
}

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "npushm: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n\n%s", usage);
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "name", required_argument, NULL, 'n' },
		{ "mode", required_argument, NULL, 'm' },
		{ "no-dedup", no_argument, NULL, 'D' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "all", no_argument, NULL, 'a' },
		{ "backend", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli_opts o = { .backend = NPUSHM_BACKEND_AUTO };
	const char *cmd = NULL;
	int c;

	/* Room for every operand; the process ends soon after, which frees it. */
	o.args = calloc((size_t)argc, sizeof(*o.args));
	if (!o.args) {
		fprintf(stderr, "npushm: out of memory\n");
		return 1;
	}

	while ((c = getopt_long(argc, argv, "+jn:m:Dqab:h", longopts, NULL)) != -1 || optind < argc) {
		if (c == -1) {
			/* A positional argument: the command or its operands. */
			if (!cmd)
				cmd = argv[optind];
			else
				o.args[o.nargs++] = argv[optind];
			optind++;
			continue;
		}
		switch (c) {
		case 'j': o.json = true; break;
		case 'n': o.name = optarg; break;
		case 'q': o.quiet = true; break;
		case 'D': o.no_dedup = true; break;
		case 'a': o.all = true; break;
		case 'm': {
			char *end;

			errno = 0;
			o.mode = (unsigned)strtoul(optarg, &end, 8);
			if (errno || *end || !*optarg || o.mode > 0666 || (o.mode & ~0666u))
				return usage_error("--mode '%s' is not an octal mode within 0666 (e.g. 0640)", optarg);
			if (!o.mode)
				return usage_error("--mode '%s' would let nobody read the model", optarg);
			break;
		}
		case 'b':
			if (!strcmp(optarg, "kmod"))
				o.backend = NPUSHM_BACKEND_KMOD;
			else if (!strcmp(optarg, "posix"))
				o.backend = NPUSHM_BACKEND_POSIX;
			else if (!strcmp(optarg, "auto"))
				o.backend = NPUSHM_BACKEND_AUTO;
			else
				return usage_error("--backend '%s' is not kmod, posix or auto", optarg);
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fprintf(stderr, "\n%s", usage);
			return 2;
		}
	}
	if (!cmd)
		return usage_error("%s", "no command given");
	if (!o.quiet && !getenv("NPUSHM_LOG"))
		npushm_log_set(hold_warning, NULL, NPUSHM_LOG_WARN);
	if (!strcmp(cmd, "load")) {
		if (o.nargs != 1)
			return usage_error("%s", "load takes one FILE");
		if (!o.name)
			return usage_error("load %s: --name NAME is required", o.args[0]);
		return print_warnings(cmd_load(&o));
	}
	if (!strcmp(cmd, "ls") || !strcmp(cmd, "list")) {
		if (o.nargs)
			return usage_error("ls takes no operand ('%s')", o.args[0]);
		return print_warnings(cmd_ls(&o));
	}
	if (!strcmp(cmd, "info")) {
		if (o.nargs != 1)
			return usage_error("%s", "info takes one model NAME");
		return print_warnings(cmd_info(&o));
	}
	if (!strcmp(cmd, "rm")) {
		if (o.nargs != 1)
			return usage_error("%s", "rm takes one NAME");
		return print_warnings(cmd_rm(&o));
	}
	if (!strcmp(cmd, "hash")) {
		if (!o.nargs)
			return usage_error("%s", "hash takes one or more FILEs");
		return print_warnings(cmd_hash(&o));
	}
	if (!strcmp(cmd, "help")) {
		fputs(usage, stdout);
		return 0;
	}
	return usage_error("unknown command '%s'", cmd);
}
