/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm_llama.c - npushm-llama: generate tokens with a Llama-style decoder
 * served from a shared npushm model (libnpllama).
 *
 *   npushm-llama MODEL --ids PROMPT.npy --max-new N
 *                [--greedy | --temperature T --top-p P --seed S]
 *                --out IDS.npy [--logits LOGITS.npy] [--threads N]
 *
 * MODEL is the name of a model loaded with `npushm load FILE --name NAME`, or a
 * .safetensors file, loaded for this run under a name of its content hash
 * and removed afterwards unless --keep. PROMPT.npy holds one prompt of token
 * ids (1-D, or one row); IDS.npy receives the N generated ids (int64) and
 * LOGITS.npy the [N, vocab] float32 logits each one was picked from (after
 * the prefill, then after each decode step). See --help.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "npllama.h"
#include "npushm.h"
#include "nptensor.h"
#include "npy.h"
#include "pack.h"

struct args {
	const char *model, *ids, *out, *logits, *prompt_logits, *dtype;
	int max_new, threads, greedy, sampled, keep, info, attach_prefix, publish_prefix, timing;
	double temperature, top_p;
	unsigned long long seed;
};

static const char *prog = "npushm-llama";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: npushm-llama MODEL --ids PROMPT.npy --max-new N [--greedy | --temperature T\n"
		"                    --top-p P --seed S] --out IDS.npy [--logits LOGITS.npy]\n"
		"                    [--threads N]\n"
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
		"  --out FILE.npy     write the N generated ids (int64)\n"
		"  --logits FILE.npy  write the [N, vocab] float32 logits they were picked from\n"
		"  --prompt-logits FILE.npy  also write the logits after each prompt token\n"
		"                     [prompt length, vocab] (the prompt is then fed one token at\n"
		"                     a time: for accuracy checks)\n"
		"  --dtype f32|bf16|int8|q4  (a .safetensors MODEL) also store the projections packed\n"
		"                     for this CPU's GEMM (bf16: rounded; int8: quantised per\n"
		"                     output channel, inputs per row; q4: 4-bit groups of 32 with\n"
		"                     an f16 scale), as `npushm load --dtype`\n"
		"  --threads N        threads of the projections (default $NPT_NUM_THREADS or all CPUs)\n"
		"  --attach-prefix    start from the longest prefix of the prompt another run of\n"
		"                     this model published (whole blocks of 16 tokens); prints\n"
		"                     'prefix: attached N tokens'\n"
		"  --publish-prefix   after the prefill, publish the prompt's KV cache (its whole\n"
		"                     blocks of 16 tokens) as a sealed region for other runs;\n"
		"                     prints 'prefix: published N tokens as NAME'. A model's\n"
		"                     prefixes hold at most $NPLLAMA_PREFIX_MAX_BYTES (256 MiB):\n"
		"                     the oldest go first\n"
		"  --info             print the model's configuration and exit\n"
		"  --timing           print the prefill and decode times (and tokens/s)\n"
		"  --keep             keep a model loaded from a file published after the run\n"
		"  --version          print the version and exit\n"
		"  -h, --help         this help\n"
		"Exit status: 0 done; 1 the model or the prompt was refused (the message says why);\n"
		"2 usage error.\n");
}

static int die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
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

static int parse_args(int argc, char **argv, struct args *a)
{
	enum { O_IDS = 256, O_MAX_NEW, O_GREEDY, O_TEMP, O_TOP_P, O_SEED, O_OUT, O_LOGITS,
	       O_THREADS, O_INFO, O_KEEP, O_VERSION, O_PROMPT_LOGITS, O_DTYPE, O_ATTACH, O_PUBLISH, O_TIMING };
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
		{ "info", no_argument, NULL, O_INFO }, { "keep", no_argument, NULL, O_KEEP },
		{ "version", no_argument, NULL, O_VERSION }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	long long v;
	int o, top_p = 0, seed = 0;

	memset(a, 0, sizeof(*a));
	a->top_p = 1;
	while ((o = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (o) {
		case O_IDS: a->ids = optarg; break;
		case O_OUT: a->out = optarg; break;
		case O_LOGITS: a->logits = optarg; break;
		case O_PROMPT_LOGITS: a->prompt_logits = optarg; break;
		case O_DTYPE:
			if (!cli_packer(optarg)) {
				fprintf(stderr, "%s: --dtype '%s': use f32 (weights packed for this "
					"CPU), bf16 (rounded to bfloat16) or int8 (quantised per output "
					"channel)\n", prog, optarg);
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
	if (a->info)
		return 0;
	if (!a->ids || !a->out || !a->max_new) {
		fprintf(stderr, "%s: give the prompt (--ids), the number of tokens (--max-new) and "
			"the output (--out)\n", prog);
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
		npushm_model_detach(m);
		return 0;
	}
	if (npushm_dev_open(NPUSHM_BACKEND_AUTO, &dev))
		return die("%s", npushm_last_error());
	npushm_load_opts_t lo = { .mode = 0600, .packer = a->dtype ? cli_packer(a->dtype) : NULL };

	if (npushm_model_load(dev, a->model, name, &lo, NULL))
		rc = die("%s", npushm_last_error());
	else
		*loaded = !a->keep;
	npushm_dev_close(dev);
	return rc;
}

static void unload(const char *name)
{
	npushm_dev_t *dev;

	if (npushm_dev_open(NPUSHM_BACKEND_AUTO, &dev) == NPUSHM_OK) {
		if (npushm_model_remove(dev, name))
			fprintf(stderr, "%s: %s\n", prog, npushm_last_error());
		npushm_dev_close(dev);
	}
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

/* the prompt one token at a time, keeping the logits after each */
static int prompt_logits(const struct args *a, npllama_seq_t *seq, const int64_t *prompt, int n,
			 int vocab, float *last)
{
	float *all = malloc(sizeof(float) * (size_t)n * (size_t)vocab);
	int64_t shape[2] = { n, vocab };
	char err[512];
	int rc = 0;

	if (!all)
		return die("out of memory for %d x %d logits", n, vocab);
	for (int i = 0; i < n && !rc; i++)
		if (npllama_seq_feed(seq, &prompt[i], 1, all + (size_t)i * (size_t)vocab))
			rc = die("%s", npllama_last_error());
	if (!rc && npy_write_f32(a->prompt_logits, 2, shape, all, err, sizeof(err)))
		rc = die("%s", err);
	if (!rc)
		memcpy(last, all + (size_t)(n - 1) * (size_t)vocab, sizeof(float) * (size_t)vocab);
	free(all);
	return rc;
}

/* after the prefill: the prompt's whole blocks, before any generated token */
static int publish(npllama_seq_t *seq)
{
	char name[NPUSHM_NAME_MAX + 1];
	int n;

	if (npllama_seq_publish_prefix(seq, &n, name, sizeof(name)))
		return die("%s", npllama_last_error());
	if (n)
		printf("prefix: published %d tokens as %s\n", n, name);
	else
		printf("prefix: the prompt is shorter than a block of %d tokens: nothing "
		       "published\n", NPLLAMA_PREFIX_BLOCK);
	return 0;
}

static int generate(const struct args *a, npllama_t *llm, const int64_t *prompt, int n)
{
	npllama_sampling_t sp = { .temperature = a->temperature, .top_p = a->top_p };
	npllama_config_t c;
	npllama_seq_t *seq = NULL;
	int64_t *ids = NULL, rows = a->max_new, shape[2];
	uint64_t rng = a->seed;
	float *logits = NULL;
	char err[512];
	int rc = 1, skip = 0;
	double t0 = now(), t1 = t0;

	npllama_get_config(llm, &c);
	if ((int64_t)n + a->max_new - 1 > c.context)
		return die("the prompt's %d tokens and --max-new %d need %lld positions, but the "
			   "model's context is %d (max_position_embeddings): shorten the prompt or "
			   "ask for fewer tokens", n, a->max_new, (long long)n + a->max_new - 1,
			   c.context);
	ids = malloc(sizeof(*ids) * (size_t)a->max_new);
	logits = malloc(sizeof(float) * (size_t)c.vocab * (size_t)(a->logits ? rows : 1));
	if (!ids || !logits) {
		die("out of memory for %d x %d logits", a->logits ? a->max_new : 1, c.vocab);
		goto out;
	}
	if (npllama_seq_create(llm, n + a->max_new - 1, &seq)) {
		die("%s", npllama_last_error());
		goto out;
	}
	if (a->prompt_logits && prompt_logits(a, seq, prompt, n, c.vocab, logits))
		goto out;
	if (a->attach_prefix) {
		if (npllama_seq_attach_prefix(seq, prompt, n, &skip)) {
			die("%s", npllama_last_error());
			goto out;
		}
		printf("prefix: attached %d tokens\n", skip);
	}
	for (int i = 0; i < a->max_new; i++) {
		float *row = logits + (a->logits ? (size_t)i * (size_t)c.vocab : 0);
		int fed = !i && a->prompt_logits;	/* the prompt went in token by token */

		if ((!fed && npllama_seq_feed(seq, i ? &ids[i - 1] : prompt + skip, i ? 1 : n - skip,
					      row)) ||
		    npllama_sample(row, c.vocab, a->sampled ? &sp : NULL, &rng, &ids[i])) {
			die("%s", npllama_last_error());
			goto out;
		}
		if (!i && a->publish_prefix && publish(seq))
			goto out;
		if (!i)
			t1 = now();
	}
	if (a->timing) {
		double t2 = now();

		printf("timing: prefill %d tokens %.6f s; decode %d tokens %.6f s, %.3f tokens/s; "
		       "%llu weight bytes per token\n", n - skip, t1 - t0, a->max_new - 1, t2 - t1,
		       a->max_new > 1 ? (a->max_new - 1) / (t2 - t1) : 0.0,
		       (unsigned long long)npllama_weight_bytes(llm));
	}
	shape[0] = a->max_new;
	shape[1] = c.vocab;
	if (npy_write_i64(a->out, 1, shape, ids, err, sizeof(err)) ||
	    (a->logits && npy_write_f32(a->logits, 2, shape, logits, err, sizeof(err)))) {
		die("%s", err);
		goto out;
	}
	rc = 0;
out:
	npllama_seq_destroy(seq);
	free(logits);
	free(ids);
	return rc;
}

static int run(const struct args *a, const char *name, const int64_t *prompt, int n)
{
	npushm_model_t *m;
	npllama_t *llm;
	npllama_config_t c;
	int rc;

	if (npushm_model_attach(name, &m))
		return die("%s", npushm_last_error());
	rc = npllama_create(m, NULL, &llm);
	npushm_model_detach(m);
	if (rc)
		return die("%s", npllama_last_error());
	if (a->info) {
		npllama_get_config(llm, &c);
		print_info(llm, &c);
		rc = 0;
	} else {
		rc = generate(a, llm, prompt, n);
	}
	npllama_destroy(llm);
	return rc;
}

int main(int argc, char **argv)
{
	char name[NPUSHM_NAME_MAX + 1], err[512];
	int64_t rows = 0, cols = 0, *prompt = NULL;
	struct args a;
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
	if (a.threads && npt_set_num_threads(a.threads)) {
		free(prompt);
		return die("%s", npt_last_error());
	}
	if (resolve_model(&a, name, sizeof(name), &loaded)) {
		free(prompt);
		return 1;
	}
	rc = run(&a, name, prompt, (int)cols);
	if (loaded)
		unload(name);
	free(prompt);
	return rc;
}
