/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm.c - the npushm command: argument parsing and dispatch.
 *
 *   npushm [--backend kmod|posix] load FILE --name NAME [--mode 0640] [--no-dedup] [--replace]
 *                                  [--per-node]
 *   npushm ls [--all]
 *   npushm info NAME
 *   npushm rm NAME
 *   npushm hash FILE...
 *   npushm help [COMMAND], npushm [COMMAND] --help, npushm --version
 * Every command takes --json (one JSON document on stdout, errors and usage
 * errors too). Exit status: 0 success, 1 failure, 2 bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#ifndef NPUSHM_VERSION
#define NPUSHM_VERSION "unknown"
#endif

static const char usage[] =
	"usage: npushm [--backend kmod|posix|auto] COMMAND [--json] [OPTIONS] [OPERANDS]\n"
	"       npushm --help | --version\n"
	"       npushm COMMAND --help\n"
	"\n"
	"  load FILE.safetensors --name NAME [--dtype f32|bf16|bf16x3|int8|q4 [--packed-only]]\n"
	"                 [--mode 0640] [--no-dedup] [--replace] [--per-node] [--quiet]\n"
	"                 load a model once into shared memory, sealed, published as NAME\n"
	"  ls [--all]     list models and regions (--all: hash aliases and removed regions\n"
	"                 still mapped too)\n"
	"  info NAME      show a model's tensors\n"
	"  rm NAME        remove a model's name and its per-node copies (memory goes when\n"
	"                 the last user detaches)\n"
	"  hash FILE...   the content hash load would record (no backend needed)\n"
	"  help [COMMAND] this text, or a command's\n"
	"\n"
	"--json prints one JSON document on stdout, errors and usage errors included.\n"
	"The backend is the npushm module when an npushm filesystem is mounted at\n"
	"$NPUSHM_DIR (default /run/npushm), else POSIX shared memory in /dev/shm\n"
	"($NPUSHM_SHM_DIR); NPUSHM_BACKEND or --backend choose it.\n"
	"\n"
	"Exit status: 0 success, 1 failure (the message says why and what to do),\n"
	"2 bad usage. See npushm(1) and npushm-COMMAND(1).\n";

/* long options without a short form */
enum { OPT_PACKED_ONLY = 256 };

struct cmd_help {
	const char *name;
	const char *text;
};

static const struct cmd_help cmd_helps[] = {
	{ "load",
	  "usage: npushm load FILE.safetensors --name NAME\n"
	  "                   [--dtype f32|bf16|bf16x3|int8|q4 [--packed-only]]\n"
	  "                   [--mode MODE] [--no-dedup] [--replace] [--per-node] [--quiet] [--json]\n"
	  "\n"
	  "Check FILE, copy its tensors into one shared region, seal it and publish it\n"
	  "as NAME (with the alias xxh3:HASH). Atomic: the name appears only once the\n"
	  "model is complete. NAME is checked first: when it already holds this file's\n"
	  "content the load succeeds at once; when it holds anything else the load stops\n"
	  "before copying, unless --replace.\n"
	  "\n"
	  "  --name NAME   the name workers attach by (required)\n"
	  "  --dtype f32   also store the linear layers' weights (2-D float32 '*.weight'\n"
	  "                tensors outside the embeddings) packed for this machine's GEMM\n"
	  "                (oneDNN's layout for this CPU), used in place by every worker\n"
	  "                on the same kind of CPU; the model's hash then covers them\n"
	  "  --dtype bf16  the same rounded to bfloat16 where the CPU has AVX512_BF16\n"
	  "                (elsewhere nothing is packed); inputs rounded to bf16 too\n"
	  "  --dtype bf16x3 the same as float32 kept in two bfloat16 terms (w = hi + lo),\n"
	  "                where the CPU has AMX: the engine sums three bf16 products in\n"
	  "                float32 (each off by < 2^-15 of its terms; PyTorch's \"high\"\n"
	  "                float32 precision), faster there than float32 FMAs\n"
	  "  --dtype int8  the same with the weights quantised to int8 per output channel\n"
	  "                (scale = max |row| / 127); the engine then runs those layers in\n"
	  "                int8 (inputs quantised per row, exact int32 sums, VNNI if any)\n"
	  "  --dtype q4    the same in 4 bits: groups of 32 with an f16 scale (llama.cpp's\n"
	  "                Q4_0 numbers), for npushm-llama; K must divide by 32\n"
	  "  --packed-only with --dtype f32, bf16, bf16x3 or int8: store the packed weights\n"
	  "                instead of, not next to, their plain copies (the model takes\n"
	  "                the memory of one copy; its hash differs). A worker whose CPU\n"
	  "                or library cannot read the layout in place says so and\n"
	  "                unpacks it privately; programs that read plain tensors only\n"
	  "                refuse such a model\n"
	  "  --mode MODE   who may attach: octal within 0666 with a read bit (default 0640)\n"
	  "  --no-dedup    always make a new copy, even of content already published\n"
	  "  --replace     if NAME holds other content, move NAME to the new model\n"
	  "                (atomically; attached workers keep the old one)\n"
	  "  --per-node    one sealed copy on each NUMA node with CPUs, each in that node's\n"
	  "                memory (checked page by page), as NAME@nodeN; NAME is the first\n"
	  "                node's; a worker attaching NAME maps its own node's copy. All\n"
	  "                or nothing: a node without room publishes nothing\n"
	  "  --quiet       print nothing on success, and no warnings\n"
	  "  --json        print the result (or the error) as one JSON document\n"
	  "\n"
	  "Exit status: 0 the model is published under NAME (newly, or already was),\n"
	  "1 the load failed (invalid file, no room, NAME taken, no permission), 2 bad usage.\n" },
	{ "ls",
	  "usage: npushm ls [--all] [--json]\n"
	  "\n"
	  "List the models and regions the caller can see: names, kind, size, content\n"
	  "hash, tensors, whether sealed, processes mapping it, bytes pinned. A region\n"
	  "whose manifest the caller may not read is shown as kind 'region' with a note.\n"
	  "\n"
	  "  --all         also the hash aliases (xxh3:HASH) and the removed regions that\n"
	  "                processes still map (their memory is still in use)\n"
	  "  --json        print the list as one JSON document (modes as numbers and as\n"
	  "                octal strings)\n"
	  "\n"
	  "Exit status: 0 listed, 1 the backend cannot be opened or read, 2 bad usage.\n" },
	{ "info",
	  "usage: npushm info NAME [--json]\n"
	  "\n"
	  "Show the model published as NAME: backend, hash, sizes, metadata and one line\n"
	  "per tensor (name, dtype, shape, offset in the region, bytes).\n"
	  "\n"
	  "  --json        print it as one JSON document\n"
	  "\n"
	  "Exit status: 0 shown, 1 no such model or no permission, 2 bad usage.\n" },
	{ "rm",
	  "usage: npushm rm NAME... [--quiet] [--json]\n"
	  "\n"
	  "Remove each name NAME, and the names of its per-node copies (NAME@nodeN) with\n"
	  "it. Processes that attached the model keep it; its memory is freed when the\n"
	  "last of them detaches (npushm ls --all shows it until then). A name that\n"
	  "cannot be removed is reported and the others are still removed.\n"
	  "\n"
	  "  --quiet       print nothing on success\n"
	  "  --json        print the result (or the error) as one JSON document\n"
	  "\n"
	  "Exit status: 0 all removed, 1 a name missing or not yours, 2 bad usage.\n" },
	{ "hash",
	  "usage: npushm hash FILE... [--json]\n"
	  "\n"
	  "Print the content hash npushm load would record for each FILE (XXH3-128 over\n"
	  "the XXH3-128 digests of its 8 MiB blocks), as \"HASH  FILE\", without loading\n"
	  "it and without a backend. A FILE that cannot be read is reported and the\n"
	  "others are still hashed.\n"
	  "\n"
	  "  --json        print {\"files\": [...]} and, for failed files, \"errors\"\n"
	  "\n"
	  "Exit status: 0 every FILE hashed, 1 at least one could not be, 2 bad usage.\n" },
	{ "help",
	  "usage: npushm help [COMMAND]\n"
	  "\n"
	  "Print the usage of npushm, or of COMMAND.\n"
	  "\n"
	  "Exit status: 0, or 2 for an unknown COMMAND.\n" },
};

static const struct cmd_help *find_help(const char *cmd)
{
	if (cmd && !strcmp(cmd, "list"))
		cmd = "ls";
	for (size_t i = 0; cmd && i < sizeof(cmd_helps) / sizeof(cmd_helps[0]); i++)
		if (!strcmp(cmd, cmd_helps[i].name))
			return &cmd_helps[i];
	return NULL;
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
	for (int i = 0; i < nwarnings; i++) {
		char *safe = cli_text(warnings[i]);

		fprintf(stderr, "npushm: warning: %s\n", safe ? safe : warnings[i]);
		free(safe);
	}
	return rc;
}

/* --json anywhere on the command line: usage errors are JSON too. */
static bool json_usage;
static const char *usage_cmd;

static int usage_error(const char *fmt, const char *arg)
{
	const struct cmd_help *h = find_help(usage_cmd);
	char msg[512], *safe;

	snprintf(msg, sizeof(msg), fmt, arg);
	safe = cli_text(msg);
	fprintf(stderr, "npushm: %s\n\n%s", safe ? safe : msg, h ? h->text : usage);
	free(safe);
	if (json_usage) {
		struct json_object *err = json_object_new_object();
		struct json_object *root = json_object_new_object();

		json_object_object_add(err, "status", json_object_new_string("USAGE"));
		json_object_object_add(err, "message", cli_json_string(msg));
		json_object_object_add(err, "usage", json_object_new_string(h ? h->text : usage));
		json_object_object_add(root, "error", err);
		cli_print_json(root);
	}
	return 2;
}

static int print_help(const char *cmd)
{
	const struct cmd_help *h = find_help(cmd);

	if (cmd && !h) {
		usage_cmd = NULL;
		return usage_error("no help for '%s': it is not an npushm command", cmd);
	}
	fputs(h ? h->text : usage, stdout);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "name", required_argument, NULL, 'n' },
		{ "mode", required_argument, NULL, 'm' },
		{ "no-dedup", no_argument, NULL, 'D' },
		{ "replace", no_argument, NULL, 'R' },
		{ "packed-only", no_argument, NULL, OPT_PACKED_ONLY },
		{ "per-node", no_argument, NULL, 'P' },
		{ "dtype", required_argument, NULL, 't' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "all", no_argument, NULL, 'a' },
		{ "backend", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli_opts o = { .backend = NPUSHM_BACKEND_AUTO };
	const char *cmd = NULL;
	bool help = false, version = false;
	int c;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--json"))
			json_usage = true;
	/* Room for every operand; the process ends soon after, which frees it. */
	o.args = calloc((size_t)argc, sizeof(*o.args));
	if (!o.args) {
		fprintf(stderr, "npushm: out of memory\n");
		return 1;
	}

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:jn:m:DRPqab:hVt:", longopts, NULL)) != -1 || optind < argc) {
		if (c == -1) {
			/* A positional argument: the command or its operands. */
			if (!cmd)
				usage_cmd = cmd = argv[optind];
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
		case 'R': o.replace = true; break;
		case OPT_PACKED_ONLY: o.packed_only = true; break;
		case 'P': o.per_node = true; break;
		case 't':
			if (strcmp(optarg, "f32") && strcmp(optarg, "bf16") && strcmp(optarg, "int8") &&
			    strcmp(optarg, "q4") && strcmp(optarg, "bf16x3"))
				return usage_error("--dtype '%s': use f32 (linear weights packed for this "
						   "CPU's GEMM), bf16 (rounded to bfloat16), bf16x3 "
						   "(float32 as two bfloat16 terms, for AMX), int8 "
						   "(quantised per output channel) or q4 (4-bit groups "
						   "of 32)", optarg);
			o.dtype = optarg;
			break;
		case 'a': o.all = true; break;
		case 'h': help = true; break;
		case 'V': version = true; break;
		case 'm': {
			char *end;

			errno = 0;
			o.mode = (unsigned)strtoul(optarg, &end, 8);
			if (errno || *end || !*optarg || o.mode > 0666 || (o.mode & ~0666u))
				return usage_error("--mode '%s' is not an octal mode within 0666 (e.g. 0640)", optarg);
			/* A model is only ever read: write bits alone let nobody attach it. */
			if (!(o.mode & 0444))
				return usage_error("--mode '%s' would let nobody read the model: give it "
						   "read bits (e.g. 0640)", optarg);
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
		case ':':
			return usage_error("%s needs a value", argv[optind - 1]);
		default: {
			char opt[3] = { '-', (char)optopt, '\0' };

			return usage_error("unknown option '%s'", optopt ? opt : argv[optind - 1]);
		}
		}
	}
	if (version) {
		printf("npushm %s\n", NPUSHM_VERSION);
		return 0;
	}
	if (help)
		return print_help(cmd && !strcmp(cmd, "help") && o.nargs ? o.args[0] : cmd);
	if (!cmd)
		return usage_error("%s", "no command given");
	if (!find_help(cmd)) {
		usage_cmd = NULL;
		return usage_error("unknown command '%s'", cmd);
	}
	if (!o.quiet && !getenv("NPUSHM_LOG"))
		npushm_log_set(hold_warning, NULL, NPUSHM_LOG_WARN);
	if (strcmp(cmd, "load") && (o.name || o.mode || o.no_dedup || o.replace || o.dtype ||
				    o.packed_only || o.per_node))
		return usage_error("%s", "--name, --dtype, --packed-only, --mode, --no-dedup, "
				   "--replace and --per-node belong to load");
	if (o.packed_only && (!o.dtype || !strcmp(o.dtype, "q4")))
		return usage_error("%s", "--packed-only needs --dtype f32, bf16, bf16x3 or int8 (the layouts "
				   "that replace the plain weights; q4 is read next to them)");
	if (o.all && strcmp(cmd, "ls") && strcmp(cmd, "list"))
		return usage_error("%s", "--all belongs to ls");
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
		if (!o.nargs)
			return usage_error("%s", "rm takes one or more NAMEs");
		return print_warnings(cmd_rm(&o));
	}
	if (!strcmp(cmd, "hash")) {
		if (!o.nargs)
			return usage_error("%s", "hash takes one or more FILEs");
		return print_warnings(cmd_hash(&o));
	}
	/* help */
	if (o.nargs > 1)
		return usage_error("%s", "help takes at most one COMMAND");
	return print_help(o.nargs ? o.args[0] : NULL);
}
