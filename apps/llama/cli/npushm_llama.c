/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm_llama.c - npushm-llama: generate tokens with a Llama-style decoder
 * served from a shared npushm model (libnpllama).
 *
 *   npushm-llama MODEL --ids PROMPT.npy --max-new N
 *                [--greedy | --temperature T --top-p P --seed S]
 *                --out IDS.npy [--logits LOGITS.npy] [--tp N] [--threads N]
 *   npushm-llama MODEL --stream COUNT,MIN,MAX,NEW,SEED [--json] [--hold] ...
 *
 * MODEL is the name of a model loaded with `npushm load FILE --name NAME`, or a
 * .safetensors file, loaded for this run under a name of its content hash
 * and removed afterwards unless --keep. PROMPT.npy holds one prompt of token
 * ids (1-D, or one row); IDS.npy receives the N generated ids (int64) and
 * LOGITS.npy the [N, vocab] float32 logits each one was picked from (after
 * the prefill, then after each decode step). See --help.
 *
 * This file: the options, the model (a file loaded for the run), the ranks
 * (--tp: ranks.c forks them) and each rank's engine; the run modes are
 * generate.c (--ids) and serve.c (--stream).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "npllama.h"
#include "model_owner.h"
#include "npushm.h"
#include "nptensor.h"
#include "npy.h"
#include "pack.h"
#include "ranks.h"


static void usage(FILE *f)
{
	fprintf(f,
		"usage: npushm-llama MODEL --ids PROMPT.npy --max-new N [--greedy | --temperature T\n"
		"                    --top-p P --seed S] --out IDS.npy [--logits LOGITS.npy]\n"
		"                    [--tp N] [--threads N]\n"
		"       npushm-llama MODEL --stream COUNT,MIN,MAX,NEW,SEED [--json] [--hold] [--tp N]\n"
		"Generate tokens with a Llama-style decoder shared through npushm (weights read in\n"
		"place, the KV cache in an npushm region).\n\n"
		"MODEL                a model loaded with `npushm load FILE --name NAME`, or a\n"
		"                     .safetensors file (loaded for this run, removed afterwards\n"
		"                     unless --keep)\n"
		"  --ids FILE.npy     the prompt: token ids, 1-D (or one row), integers\n"
		"  --max-new N        how many tokens to generate (>= 1)\n"
		"  --greedy           pick the most likely token each step (the default)\n"
		"  --temperature T    sample instead: logits divided by T (> 0) ...\n"
		"  --top-p P          ... from the most likely tokens holding probability P (0 < P\n"
		"                     <= 1, default 1) ...\n"
		"  --seed S           ... with this seed (default 0): the same seed, the same tokens\n"
		"  --out FILE.npy     write the N generated ids (int64; --stream: the last request's)\n"
		"  --logits FILE.npy  write the [N, vocab] float32 logits they were picked from\n"
		"  --prompt-logits FILE.npy  also write the logits after each prompt token\n"
		"                     [prompt length, vocab] (the prompt is then fed one token at\n"
		"                     a time: for accuracy checks)\n"
		"  --stream COUNT,MIN,MAX,NEW,SEED  serve COUNT requests one after the other: prompts\n"
		"                     of MIN..MAX tokens drawn from SEED, NEW tokens each; prints\n"
		"                     the time to first token and the inter-token latency (p50,\n"
		"                     p99) and tokens/s (one warm-up request first, not counted)\n"
		"  --stream-prefix N  (--stream) every prompt starts with the same N tokens (drawn\n"
		"                     from SEED), then its own MIN..MAX\n"
		"  --json             (--stream) one JSON line with every latency and the memory\n"
		"  --hold             (--stream, for drivers) print 'ready', wait for a line on\n"
		"                     stdin, serve, report, then wait for end of input\n"
		"  --tp N             tensor parallel over N processes (heads, KV heads and FFN\n"
		"                     width must divide by N; they read their slices of 4-bit\n"
		"                     layouts in place, else f32 slices)\n"
		"  --dtype f32|bf16x3|bf16|int8|q4  (a .safetensors MODEL) also store the\n"
		"                     projections packed for this CPU's GEMM (bf16x3: float32 as\n"
		"                     two bfloat16 terms, for AMX; bf16: rounded; int8: quantised\n"
		"                     per output channel, inputs per row; q4: 4-bit groups of 32\n"
		"                     with an f16 scale), as `npushm load --dtype`\n"
		"  --threads N        threads of the projections (default $NPT_NUM_THREADS or all CPUs)\n"
		"  --attach-prefix    start from the longest prefix of the prompt another run of\n"
		"                     this model published (whole blocks of 16 tokens); prints\n"
		"                     'prefix: attached N tokens'. Only prefixes of this user or\n"
		"                     of the model's owner are used: another user's is ignored,\n"
		"                     and 'prefix: ignored ...' names it\n"
		"  --publish-prefix   after the prefill, publish the prompt's KV cache (its whole\n"
		"                     blocks of 16 tokens) as a sealed region for other runs;\n"
		"                     prints 'prefix: published N tokens as NAME'. A model's\n"
		"                     prefixes hold at most $NPLLAMA_PREFIX_MAX_BYTES (256 MiB):\n"
		"                     the oldest go first (--stream: the first request publishes\n"
		"                     the --stream-prefix tokens, else its prompt). A name\n"
		"                     another user's region holds: 'prefix: not published: ...'\n"
		"  --info             print the model's configuration and exit\n"
		"  --timing           print the prefill and decode times (and tokens/s); with --tp,\n"
		"                     the collectives' share of them and the latency of an\n"
		"                     AllReduce of one hidden vector\n"
		"  --keep             keep a model loaded from a file published after the run\n"
		"  --version          print the version and exit\n"
		"  -h, --help         this help\n"
		"Examples:\n"
		"  `npushm-llama llama.safetensors --ids prompt.npy --max-new 8 --out ids.npy`\n"
		"  `npushm-llama llama.safetensors --ids prompt.npy --max-new 8 --out ids.npy --tp 2`\n"
		"  `npushm-llama llama.safetensors --stream 4,8,16,8,1 --tp 2 --timing`\n"

		"Exit status: 0 done; 1 the model or the prompt was refused (the message says why);\n"
		"2 usage error.\n");
}

static int parse_real(const char *opt, const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(*out)) {
		fprintf(stderr, "%s: %s wants a number, got '%s'\n", prog, opt, s);
		return -1;
	}
	return 0;
}

static int parse_int(const char *opt, const char *s, long long lo, long long hi,
		     long long *out)
{
	char *end;

	errno = 0;
	*out = strtoll(s, &end, 10);
	if (errno || end == s || *end || *out < lo || *out > hi) {
		fprintf(stderr, "%s: %s wants an integer in %lld..%lld, got '%s'\n", prog, opt, lo,
			hi, s);
		return -1;
	}
	return 0;
}

/* the combinations of options that make no sense, once all are read */
static int check_args(struct args *a, int top_p, int seed)
{
	if (a->info)
		return 0;
	if (!!a->ids + !!a->stream_s != 1) {
		fprintf(stderr, "%s: give the prompt (--ids) or a request stream (--stream), one of "
			"them\n", prog);
		return -1;
	}
	if (a->ids && (!a->out || !a->max_new)) {
		fprintf(stderr, "%s: give the prompt (--ids), the number of tokens (--max-new) and "
			"the output (--out)\n", prog);
		return -1;
	}
	if (a->stream_s && (a->max_new || a->logits || a->prompt_logits)) {
		fprintf(stderr, "%s: --stream sets the tokens per request itself (NEW); --max-new, "
			"--logits and --prompt-logits go with --ids\n", prog);
		return -1;
	}
	if (!a->stream_s && (a->hold || a->json || a->shared_prefix)) {
		fprintf(stderr, "%s: --hold, --json and --stream-prefix go with --stream\n", prog);
		return -1;
	}
	if (a->greedy && (a->sampled || top_p || seed)) {
		fprintf(stderr, "%s: --greedy picks the most likely token: it takes no "
			"--temperature, --top-p or --seed\n", prog);
		return -1;
	}
	if (a->prompt_logits && (a->attach_prefix || a->publish_prefix)) {
		fprintf(stderr, "%s: --prompt-logits feeds the prompt token by token; it does not go "
			"with --attach-prefix or --publish-prefix\n", prog);
		return -1;
	}
	if (!a->sampled && (top_p || seed)) {
		fprintf(stderr, "%s: --top-p and --seed go with --temperature (sampling)\n", prog);
		return -1;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	enum { O_IDS = 256, O_MAX_NEW, O_GREEDY, O_TEMP, O_TOP_P, O_SEED, O_OUT, O_LOGITS,
	       O_THREADS, O_INFO, O_KEEP, O_VERSION, O_PROMPT_LOGITS, O_DTYPE, O_ATTACH,
	       O_PUBLISH, O_TIMING, O_TP, O_STREAM, O_STREAM_PREFIX, O_JSON, O_HOLD };
	static const struct option lo[] = {
		{ "ids", required_argument, NULL, O_IDS },
		{ "max-new", required_argument, NULL, O_MAX_NEW },
		{ "greedy", no_argument, NULL, O_GREEDY },
		{ "temperature", required_argument, NULL, O_TEMP },
		{ "top-p", required_argument, NULL, O_TOP_P },
		{ "seed", required_argument, NULL, O_SEED },
		{ "out", required_argument, NULL, O_OUT },
		{ "logits", required_argument, NULL, O_LOGITS },
		{ "prompt-logits", required_argument, NULL, O_PROMPT_LOGITS },
		{ "dtype", required_argument, NULL, O_DTYPE },
		{ "attach-prefix", no_argument, NULL, O_ATTACH },
		{ "publish-prefix", no_argument, NULL, O_PUBLISH },
		{ "timing", no_argument, NULL, O_TIMING },
		{ "threads", required_argument, NULL, O_THREADS },
		{ "tp", required_argument, NULL, O_TP },
		{ "stream", required_argument, NULL, O_STREAM },
		{ "stream-prefix", required_argument, NULL, O_STREAM_PREFIX },
		{ "json", no_argument, NULL, O_JSON }, { "hold", no_argument, NULL, O_HOLD },
		{ "info", no_argument, NULL, O_INFO }, { "keep", no_argument, NULL, O_KEEP },
		{ "version", no_argument, NULL, O_VERSION }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	long long v;
	int o, top_p = 0, seed = 0;

	memset(a, 0, sizeof(*a));
	a->top_p = 1;
	a->tp = 1;
	while ((o = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (o) {
		case O_IDS: a->ids = optarg; break;
		case O_OUT: a->out = optarg; break;
		case O_LOGITS: a->logits = optarg; break;
		case O_PROMPT_LOGITS: a->prompt_logits = optarg; break;
		case O_DTYPE:
			if (!cli_packer(optarg)) {
				fprintf(stderr, "%s: --dtype '%s': use f32 (weights packed for this "
					"CPU), bf16x3 (float32 as two bfloat16 terms, for AMX), bf16 "
					"(rounded to bfloat16), int8 (quantised per output channel) or "
					"q4 (4-bit groups)\n", prog, optarg);
				return -1;
			}
			a->dtype = optarg;
			break;
		case O_GREEDY: a->greedy = 1; break;
		case O_INFO: a->info = 1; break;
		case O_KEEP: a->keep = 1; break;
		case O_ATTACH: a->attach_prefix = 1; break;
		case O_PUBLISH: a->publish_prefix = 1; break;
		case O_TIMING: a->timing = 1; break;
		case O_JSON: a->json = 1; break;
		case O_HOLD: a->hold = 1; break;
		case O_STREAM:
			if (stream_parse(optarg, &a->stream)) {
				fprintf(stderr, "%s: --stream wants COUNT,MIN_LEN,MAX_LEN,NEW,SEED with "
					"1 <= MIN_LEN <= MAX_LEN <= 16777216, COUNT in 1..1048576, NEW in "
					"1..16777216, got '%s'\n", prog,
					optarg);
				return -1;
			}
			a->stream_s = optarg;
			break;
		case O_STREAM_PREFIX:
			if (parse_int("--stream-prefix", optarg, 1, 1 << 24, &v))
				return -1;
			a->shared_prefix = (int)v;
			break;
		case O_MAX_NEW:
			if (parse_int("--max-new", optarg, 1, 1 << 24, &v))
				return -1;
			a->max_new = (int)v;
			break;
		case O_THREADS:
			if (parse_int("--threads", optarg, 1, 256, &v))
				return -1;
			a->threads = (int)v;
			break;
		case O_TP:
			if (parse_int("--tp", optarg, 1, 64, &v))
				return -1;
			a->tp = (int)v;
			break;
		case O_SEED:
			if (parse_int("--seed", optarg, 0, INT64_MAX, &v))
				return -1;
			a->seed = (unsigned long long)v;
			seed = 1;
			break;
		case O_TEMP:
			if (parse_real("--temperature", optarg, &a->temperature))
				return -1;
			if (!(a->temperature > 0)) {
				fprintf(stderr, "%s: --temperature must be > 0 (use --greedy for the "
					"most likely token), got '%s'\n", prog, optarg);
				return -1;
			}
			a->sampled = 1;
			break;
		case O_TOP_P:
			if (parse_real("--top-p", optarg, &a->top_p))
				return -1;
			if (!(a->top_p > 0 && a->top_p <= 1)) {
				fprintf(stderr, "%s: --top-p must be in (0, 1], got '%s'\n", prog,
					optarg);
				return -1;
			}
			top_p = 1;
			break;
		case 'h': usage(stdout); exit(0);
		case O_VERSION: printf("npushm-llama %s\n", NPUSHM_VERSION_STRING); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, optind == argc ? "%s: which model? pass a model name or a "
			".safetensors file\n" : "%s: one model only (extra argument '%s')\n", prog,
			argv[optind + (optind < argc)]);
		usage(stderr);
		return -1;
	}
	a->model = argv[optind];
	return check_args(a, top_p, seed);
}

/* MODEL may be a file: load it (deduplicated by content) under a name of its hash */
static int resolve_model(const struct args *a, char *name, size_t len, int *loaded)
{
	npushm_model_t *m;
	npushm_dev_t *dev;
	struct stat sb;
	char hex[33];
	uint8_t hash[16];
	int rc = 0;

	*loaded = 0;
	if (stat(a->model, &sb) == 0 && S_ISDIR(sb.st_mode))
		return die("%s is a directory: pass a .safetensors file or the name of a model "
			   "loaded with `npushm load`", a->model);
	if (stat(a->model, &sb) || !S_ISREG(sb.st_mode)) {
		if (strchr(a->model, '/') || strstr(a->model, ".safetensors"))
			return die("%s: %s (a model name has no '/'; a file must be a regular "
				   ".safetensors file)", a->model,
				   errno ? strerror(errno) : "not a regular file");
		if (a->dtype)
			return die("--dtype applies to a .safetensors MODEL; a loaded model carries "
				   "what `npushm load --dtype` stored for it");
		snprintf(name, len, "%s", a->model);
		return 0;
	}
	if (npushm_file_hash(a->model, hash, hex))
		return die("%s", npushm_last_error());
	snprintf(name, len, "npushm-llama.%.16s%s%s", hex, a->dtype ? "." : "",
		 a->dtype ? a->dtype : "");
	if (npushm_model_attach(name, &m) == NPUSHM_OK) {
		char why[3 * NPUSHM_NAME_MAX + 2 * PATH_MAX];
		int own = model_of_this_user(m, a->model, name, why, sizeof(why));

		npushm_model_detach(m);
		if (own)
			return die("%s", why);
		return 0;
	}
	if (npushm_dev_open(NPUSHM_BACKEND_AUTO, &dev))
		return die("%s", npushm_last_error());
	npushm_load_opts_t lo = { .mode = 0600, .packer = a->dtype ? cli_packer(a->dtype) : NULL };

	if (npushm_model_load(dev, a->model, name, &lo, NULL)) {
		rc = die("%s", npushm_last_error());
	} else {
		*loaded = !a->keep;
		cli_packer_warn_unpacked(prog, a->dtype);
	}
	npushm_dev_close(dev);
	return rc;
}

static void print_info(const npllama_t *llm, const npllama_config_t *c)
{
	const char *why;
	int used, total;

	printf("layers %d\nhidden %d\nheads %d\nkv_heads %d\nhead_dim %d\nffn %d\nvocab %d\n"
	       "context %d\ntied %d\nrope_theta %g\nrope_scale %g\nrms_eps %g\n", c->layers,
	       c->hidden, c->heads, c->kv_heads, c->head_dim, c->ffn, c->vocab, c->context,
	       c->tied, c->rope_theta, c->rope_scale, c->rms_eps);
	why = npllama_packed_weights(llm, &used, &total);
	printf("packed %d/%d%s%s\n", used, total, why ? " " : "", why ? why : "");
	printf("weight_bytes_per_token %llu\n", (unsigned long long)npllama_weight_bytes(llm));
}

/* what a run on a model needs: the options, the model's name, the prompt */
struct job {
	const struct args *a;
	const char *name;
	const int64_t *prompt;
	int prompt_len;
};

/* One rank (or the only process): attach, make the engine, run the mode. */
static int rank_main(int rank, int nranks, const npccl_unique_id_t *id, void *arg)
{
	const struct job *j = arg;
	const struct args *a = j->a;
	struct rank_ctx x = { .a = a, .rank = rank, .nranks = nranks, .prompt = j->prompt,
			      .prompt_len = j->prompt_len };
	npushm_model_t *m = NULL;
	npllama_config_t c;
	npllama_status_t st;
	char err[512];
	int rc = 1;

	if (a->threads && npt_set_num_threads(a->threads))
		return die("%s", npt_last_error());
	if (npushm_model_attach(j->name, &m))
		return die("%s", npushm_last_error());
	if (nranks > 1 && npccl_comm_init_rank_err(&x.comm, nranks, id, rank, err, sizeof(err))) {
		die("rank %d: cannot join the other ranks: %s", rank, err);
		goto out;
	}
	st = npllama_create_tp(m, NULL, x.comm, &x.llm);
	npushm_model_detach(m);	/* the engine holds its own references */
	m = NULL;
	if (st) {
		/* a refusal of the model or the split is the same on every rank: rank 0 says it,
		 * after a barrier, so no rank aborts the communicator while another still joins */
		int same = st == NPLLAMA_ERR_LAYOUT || st == NPLLAMA_ERR_SPLIT;

		if (rank == 0 || !same)
			die("%s%s", nranks > 1 && !same ? "this rank: " : "", npllama_last_error());
		if (x.comm && same && npccl_barrier(x.comm) == NPCCL_OK) {
			npccl_comm_destroy(x.comm);
			x.comm = NULL;
		}
		goto out;
	}
	if (a->info) {
		if (rank == 0) {
			npllama_get_config(x.llm, &c);
			print_info(x.llm, &c);
		}
		rc = 0;
	} else {
		rc = a->stream_s ? run_stream(&x) : run_generate(&x);
	}
out:
	fflush(stdout);
	if (rc && x.comm) {
		npccl_comm_abort(x.comm);
		x.comm = NULL;
	}
	npllama_destroy(x.llm);
	npccl_comm_destroy(x.comm);
	npushm_model_detach(m);
	return rc;
}

/* ranks_run's cleanup on SIGINT, SIGTERM or SIGHUP: nothing more to say, the model goes */
static void stop_run(void *arg)
{
	(void)arg;
	atomic_store(cli_stopping, 1);
	guard_unload();
}

int main(int argc, char **argv)
{
	char name[NPUSHM_NAME_MAX + 1], err[512];
	int64_t rows = 0, cols = 0, *prompt = NULL;
	struct args a;
	struct job j = { .a = &a, .name = name };
	int loaded, rc;

	if (parse_args(argc, argv, &a))
		return 2;
	if (a.ids) {
		if (npy_read_i64(a.ids, &rows, &cols, &prompt, err, sizeof(err)))
			return die("%s", err);
		if (rows != 1 || cols < 1 || cols > INT32_MAX) {
			free(prompt);
			return die("%s holds %lld x %lld ids: give one prompt of at least one token "
				   "(a 1-D array, or one row)", a.ids, (long long)rows,
				   (long long)cols);
		}
	}
	j.prompt = prompt;
	j.prompt_len = (int)cols;
	cli_stopping_share();
	guard_start();
	guard_hold();
	rc = resolve_model(&a, name, sizeof(name), &loaded);
	if (loaded)
		guard_loaded(name);
	guard_release();
	if (rc) {
		free(prompt);
		return 1;
	}
	if (a.tp == 1)
		rc = rank_main(0, 1, NULL, &j);
	else
		rc = ranks_run(a.tp, rank_main, &j, stop_run, prog);
	guard_unload();
	free(prompt);
	return rc;
}
