/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm_bert.c - npushm-bert: run BERT inference on a shared npushm model
 * from the command line (libnpbert), alone or tensor parallel over several
 * processes.
 *
 *   npushm-bert [options] MODEL
 *
 * MODEL is the name of a model loaded with `npushm load FILE --name NAME` (shared
 * by every process that attaches it), or a path to a .safetensors file,
 * which is then loaded for this run and removed afterwards unless --keep.
 * The batch comes from .npy files (--ids, --types, --mask), from a text
 * file (--text: one sequence of token ids per line, padded and masked
 * here) or from the deterministic stream of the demo and the benchmark
 * (--stream). --tp N forks N ranks that serve one model instance, each
 * with its slices of the weights, joined by npccl AllReduce. See --help.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memstat.h"
#include "npbert.h"
#include "npccl.h"
#include "model_owner.h"
#include "npushm.h"
#include "nptensor.h"
#include "npy.h"
#include "pack.h"
#include "signal_pipe.h"
#include "stream.h"

struct args {
	const char *model, *ids, *types, *mask, *text, *out, *stream_s, *dtype;
	int heads, tp, threads, repeat, info, profile, memory, keep, hold, json, pad_id;
	int eps_given, no_weight_check, packed_only, pad_given;
	double eps;
	stream_spec_t stream;
};

/* the batch built from the inputs (not for --stream) */
struct input {
	int64_t *ids, *types, *mask;
	int batch, seq_len;
};

static const char *prog = "npushm-bert";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: npushm-bert [options] MODEL\n"
		"Run a BERT encoder on a model shared through npushm (weights read in place).\n\n"
		"MODEL                 a model loaded with `npushm load FILE --name NAME`, or a\n"
		"                      .safetensors file (loaded for this run, removed afterwards\n"
		"                      unless --keep)\n"
		"input, one of:\n"
		"  --ids FILE.npy      token ids [batch, seq_len] (integers)\n"
		"    --types FILE.npy  token type ids [batch, seq_len] (default all 0)\n"
		"    --mask FILE.npy   attention mask, 1 token / 0 padding (default all 1)\n"
		"  --text FILE         one sequence of token ids per line (spaces between ids);\n"
		"                      sequences are padded with --pad-id (default 0) and masked\n"
		"  --stream C,B,MIN,MAX,SEED   C batches of B sequences of MIN..MAX tokens from the\n"
		"                      deterministic stream of the demo; prints latencies\n"
		"output:\n"
		"  --out PREFIX        write PREFIX.hidden.npy [batch, seq_len, hidden] and\n"
		"                      PREFIX.pooled.npy [batch, hidden]; else print a summary\n"
		"                      (--stream: the outputs of the last batch)\n"
		"  --json              (--stream) one JSON line with latencies, profile, memory\n"
		"options:\n"
		"  --tp N              tensor parallel over N processes (heads and FFN width must\n"
		"                      divide by N)\n"
		"  --threads N         threads per process (default: $NPT_NUM_THREADS or all CPUs)\n"
		"  --heads N           attention heads (default: the file's __metadata__, else\n"
		"                      hidden/64)\n"
		"  --eps X             LayerNorm epsilon, a number >= 0 (default: __metadata__,\n"
		"                      else 1e-12)\n"
		"  --no-weight-check   do not scan the weights for NaN and infinities at start\n"
		"                      (the scan reads every weight once)\n"
		"  --repeat N          run the batch N times and report the latency\n"
		"  --info              print the model's configuration and exit\n"
		"  --profile           print where the time went\n"
		"  --memory            print the memory figures (shared weights, workspace, RSS/PSS)\n"
		"  --keep              keep a model loaded from a file published after the run\n"
		"  --dtype f32|bf16x3|bf16|int8  (a .safetensors MODEL) also store the linear\n"
		"                      weights packed for this CPU's GEMM (bf16x3: float32 as two\n"
		"                      bfloat16 terms, three bf16 products on AMX; bf16: rounded;\n"
		"                      int8: quantised per output channel, inputs per row), as\n"
		"                      `npushm load --dtype` does\n"
		"  --packed-only       (with --dtype) store those weights packed only, without\n"
		"                      their plain copies, as `npushm load --packed-only` does\n"
		"  --hold              (--stream, for drivers) print 'ready', wait for a line on\n"
		"                      stdin, serve, report, then wait for end of input\n"
		"  --version           print the version and exit\n"
		"  -h, --help          this help\n"
		"The backend is $NPUSHM_BACKEND (kmod or posix) when set, else kmod when an npushm\n"
		"instance is mounted at $NPUSHM_DIR (default /run/npushm), else posix.\n"
		"Exit status: 0 done; 1 the model, the batch or a run was refused (the message\n"
		"says why); 2 usage error.\n");
}

/*
 * Set once the run is ending on SIGINT, SIGTERM or SIGHUP: die() says nothing
 * more (a model removed under a rank that was still attaching it, a rank
 * ended by the guard, are no errors of the user's).
 */
static atomic_int stopping_here;
static atomic_int *stopping = &stopping_here;

/* the flag in memory the ranks share with the parent (before they are
 * forked): a rank whose model the parent removed on its way out is silent */
static void stopping_share(void)
{
	void *p = mmap(NULL, sizeof(atomic_int), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p != MAP_FAILED)
		stopping = p;
}

static int die(const char *fmt, ...)
{
	va_list ap;

	if (atomic_load(stopping))
		return 1;
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

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int parse_int(const char *opt, const char *s, int lo, int hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "%s: %s wants an integer in %d..%d, got '%s'\n", prog, opt, lo, hi, s);
		return -1;
	}
	*out = (int)v;
	return 0;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	enum { O_IDS = 256, O_TYPES, O_MASK, O_TEXT, O_OUT, O_STREAM, O_HEADS, O_TP, O_THREADS,
	       O_REPEAT, O_INFO, O_PROFILE, O_MEMORY, O_KEEP, O_HOLD, O_JSON, O_EPS, O_PAD, O_VERSION,
	       O_DTYPE, O_NO_WEIGHT_CHECK, O_PACKED_ONLY };
	static const struct option lo[] = {
		{ "ids", required_argument, NULL, O_IDS }, { "types", required_argument, NULL, O_TYPES },
		{ "mask", required_argument, NULL, O_MASK }, { "text", required_argument, NULL, O_TEXT },
		{ "out", required_argument, NULL, O_OUT }, { "stream", required_argument, NULL, O_STREAM },
		{ "heads", required_argument, NULL, O_HEADS }, { "tp", required_argument, NULL, O_TP },
		{ "threads", required_argument, NULL, O_THREADS },
		{ "repeat", required_argument, NULL, O_REPEAT }, { "info", no_argument, NULL, O_INFO },
		{ "profile", no_argument, NULL, O_PROFILE }, { "memory", no_argument, NULL, O_MEMORY },
		{ "keep", no_argument, NULL, O_KEEP }, { "hold", no_argument, NULL, O_HOLD },
		{ "json", no_argument, NULL, O_JSON }, { "eps", required_argument, NULL, O_EPS },
		{ "pad-id", required_argument, NULL, O_PAD }, { "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, O_VERSION },
		{ "dtype", required_argument, NULL, O_DTYPE },
		{ "no-weight-check", no_argument, NULL, O_NO_WEIGHT_CHECK },
		{ "packed-only", no_argument, NULL, O_PACKED_ONLY },
		{ NULL, 0, NULL, 0 },
	};
	int o;

	memset(a, 0, sizeof(*a));
	a->tp = 1;
	a->repeat = 1;
	while ((o = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (o) {
		case O_IDS: a->ids = optarg; break;
		case O_TYPES: a->types = optarg; break;
		case O_MASK: a->mask = optarg; break;
		case O_TEXT: a->text = optarg; break;
		case O_OUT: a->out = optarg; break;
		case O_STREAM:
			a->stream_s = optarg;
			if (stream_parse(optarg, &a->stream)) {
				fprintf(stderr, "%s: --stream wants COUNT,BATCH,MIN_LEN,MAX_LEN,SEED "
					"(positive integers, BATCH and MAX_LEN at most 65536, MIN_LEN <= "
					"MAX_LEN), got '%s'\n", prog, optarg);
				return -1;
			}
			break;
		case O_HEADS: if (parse_int("--heads", optarg, 1, 1 << 20, &a->heads)) return -1; break;
		case O_TP: if (parse_int("--tp", optarg, 1, 64, &a->tp)) return -1; break;
		case O_THREADS: if (parse_int("--threads", optarg, 1, 256, &a->threads)) return -1; break;
		case O_REPEAT: if (parse_int("--repeat", optarg, 1, 1000000, &a->repeat)) return -1; break;
		case O_PAD:
			if (parse_int("--pad-id", optarg, 0, INT32_MAX, &a->pad_id))
				return -1;
			a->pad_given = 1;
			break;
		case O_EPS: {
			char *end;

			errno = 0;
			a->eps = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(a->eps >= 0) || !isfinite(a->eps)) {
				fprintf(stderr, "%s: --eps wants a finite number >= 0 (e.g. 1e-12), "
					"got '%s'\n", prog, optarg);
				return -1;
			}
			a->eps_given = 1;
			break;
		}
		case O_INFO: a->info = 1; break;
		case O_NO_WEIGHT_CHECK: a->no_weight_check = 1; break;
		case O_PACKED_ONLY: a->packed_only = 1; break;
		case O_PROFILE: a->profile = 1; break;
		case O_MEMORY: a->memory = 1; break;
		case O_KEEP: a->keep = 1; break;
		case O_DTYPE:
			if (strcmp(optarg, "f32") && strcmp(optarg, "bf16") &&
			    strcmp(optarg, "int8") && strcmp(optarg, "bf16x3")) {
				fprintf(stderr, "%s: --dtype '%s': use f32 (weights packed for this "
					"CPU), bf16x3 (float32 as two bfloat16 terms, for AMX), bf16 "
					"(rounded to bfloat16) or int8 (quantised per output "
					"channel)\n", prog, optarg);
				return -1;
			}
			a->dtype = optarg;
			break;
		case O_HOLD: a->hold = 1; break;
		case O_JSON: a->json = 1; break;
		case 'h': usage(stdout); exit(0);
		case O_VERSION: printf("npushm-bert %s\n", NPUSHM_VERSION_STRING); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (optind != argc - 1) {
		if (optind == argc)
			fprintf(stderr, "%s: which model? pass a model name or a .safetensors file\n", prog);
		else
			fprintf(stderr, "%s: one model only (extra argument '%s')\n", prog, argv[optind + 1]);
		usage(stderr);
		return -1;
	}
	a->model = argv[optind];
	if (a->packed_only && !a->dtype) {
		fprintf(stderr, "%s: --packed-only needs --dtype f32, bf16x3, bf16 or int8 (the packed "
			"weights that replace the plain ones)\n", prog);
		return -1;
	}
	int inputs = !!a->ids + !!a->text + !!a->stream_s;

	if (!a->info && inputs != 1) {
		fprintf(stderr, "%s: give the batch with exactly one of --ids, --text, --stream%s\n",
			prog, inputs ? " (not several)" : "");
		return -1;
	}
	if ((a->types || a->mask) && !a->ids) {
		fprintf(stderr, "%s: --types and --mask go with --ids\n", prog);
		return -1;
	}
	if (a->pad_given && !a->text) {
		fprintf(stderr, "%s: --pad-id goes with --text: it pads that file's shorter lines "
			"(--ids carries its own padding, masked with --mask)\n", prog);
		return -1;
	}
	if ((a->hold || a->json) && !a->stream_s) {
		fprintf(stderr, "%s: --hold and --json go with --stream\n", prog);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ inputs */

static int read_npy_inputs(const struct args *a, struct input *in)
{
	char err[512];
	int64_t r, c, r2, c2;

	if (npy_read_i64(a->ids, &r, &c, &in->ids, err, sizeof(err)))
		return die("%s", err);
	const char *other[2] = { a->types, a->mask };
	int64_t **dst[2] = { &in->types, &in->mask };

	for (int i = 0; i < 2; i++) {
		if (!other[i])
			continue;
		if (npy_read_i64(other[i], &r2, &c2, dst[i], err, sizeof(err)))
			return die("%s", err);
		if (r2 != r || c2 != c)
			return die("%s has shape [%lld, %lld] but the token ids in %s have [%lld, %lld]",
				   other[i], (long long)r2, (long long)c2, a->ids, (long long)r,
				   (long long)c);
	}
	if (r > INT32_MAX || c > INT32_MAX)
		return die("%s: too many sequences or tokens", a->ids);
	in->batch = (int)r;
	in->seq_len = (int)c;
	return 0;
}

static int read_text_input(const struct args *a, struct input *in)
{
	FILE *f = fopen(a->text, "re");
	char *line = NULL;
	size_t cap = 0, nseq = 0, maxlen = 0;
	int64_t **seqs = NULL;
	size_t *lens = NULL;
	int rc = 1, lineno = 0;

	if (!f)
		return die("cannot open %s: %s", a->text, strerror(errno));
	while (getline(&line, &cap, f) != -1) {
		int64_t *ids = NULL;
		size_t n = 0, room = 0;
		char *p = line, *end;

		lineno++;
		for (;;) {
			while (*p == ' ' || *p == '\t' || *p == ',' || *p == '\n' || *p == '\r')
				p++;
			if (!*p)
				break;
			errno = 0;
			long long v = strtoll(p, &end, 10);

			if (end == p || errno) {
				die("%s line %d: '%.*s' is not a token id (one sequence of integer "
				    "ids per line)", a->text, lineno,
				    (int)(strcspn(p, " \t,\r\n") < 20 ? strcspn(p, " \t,\r\n") : 20), p);
				free(ids);
				goto out;
			}
			if (n == room) {
				room = room ? 2 * room : 64;
				int64_t *t = realloc(ids, room * sizeof(*ids));

				if (!t) {
					free(ids);
					die("out of memory");
					goto out;
				}
				ids = t;
			}
			ids[n++] = v;
			p = end;
		}
		if (!n) {
			die("%s line %d is blank: each line is one sequence of token ids and an "
			    "empty sequence is invalid; remove the line", a->text, lineno);
			goto out;
		}
		int64_t **s2 = realloc(seqs, (nseq + 1) * sizeof(*seqs));
		size_t *l2 = realloc(lens, (nseq + 1) * sizeof(*lens));

		if (s2)
			seqs = s2;
		if (l2)
			lens = l2;
		if (!s2 || !l2) {
			free(ids);
			die("out of memory");
			goto out;
		}
		seqs[nseq] = ids;
		lens[nseq++] = n;
		if (n > maxlen)
			maxlen = n;
	}
	/* a read error (a directory, EIO) is not the end of the batch */
	if (ferror(f)) {
		die("cannot read %s: %s", a->text, strerror(errno));
		goto out;
	}
	if (nseq == 0) {
		die("%s holds no sequence: empty batch (write one line of token ids per sequence)",
		    a->text);
		goto out;
	}
	if (nseq > INT32_MAX || maxlen > INT32_MAX || (uint64_t)nseq * maxlen > INT32_MAX) {
		die("%s: too many tokens", a->text);
		goto out;
	}
	in->batch = (int)nseq;
	in->seq_len = (int)maxlen;
	in->ids = malloc(nseq * maxlen * sizeof(int64_t));
	in->mask = malloc(nseq * maxlen * sizeof(int64_t));
	if (!in->ids || !in->mask) {
		die("out of memory");
		goto out;
	}
	for (size_t i = 0; i < nseq; i++)
		for (size_t j = 0; j < maxlen; j++) {
			in->ids[i * maxlen + j] = j < lens[i] ? seqs[i][j] : a->pad_id;
			in->mask[i * maxlen + j] = j < lens[i];
		}
	rc = 0;
out:
	for (size_t i = 0; i < nseq; i++)
		free(seqs[i]);
	free(seqs);
	free(lens);
	free(line);
	fclose(f);
	return rc;
}

/* ------------------------------------------------------------------ output */

static void print_summary(const npbert_config_t *c, const struct input *in, const float *hidden,
			  const float *pooled)
{
	int H = c->hidden, show = H < 4 ? H : 4;

	printf("%d sequences x %d tokens, hidden %d\n", in->batch, in->seq_len, H);
	for (int i = 0; i < in->batch; i++) {
		int tokens = 0;

		for (int j = 0; j < in->seq_len; j++)
			tokens += in->mask ? (int)in->mask[(int64_t)i * in->seq_len + j] : 1;
		printf("sequence %d (%d tokens): hidden[0][:%d] =", i, tokens, show);
		for (int k = 0; k < show; k++)
			printf(" %.6f", hidden[(int64_t)i * in->seq_len * H + k]);
		if (pooled) {
			printf("  pooled[:%d] =", show);
			for (int k = 0; k < show; k++)
				printf(" %.6f", pooled[(int64_t)i * H + k]);
		}
		printf("\n");
	}
}

static int write_outputs(const char *prefix, const npbert_config_t *c, const struct input *in,
			 const float *hidden, const float *pooled)
{
	char path[4096], err[512];
	int64_t hs[3] = { in->batch, in->seq_len, c->hidden }, ps[2] = { in->batch, c->hidden };

	snprintf(path, sizeof(path), "%s.hidden.npy", prefix);
	if (npy_write_f32(path, 3, hs, hidden, err, sizeof(err)))
		return die("%s", err);
	if (pooled) {
		snprintf(path, sizeof(path), "%s.pooled.npy", prefix);
		if (npy_write_f32(path, 2, ps, pooled, err, sizeof(err)))
			return die("%s", err);
	}
	return 0;
}

static void print_profile(const npbert_profile_t *p, int rank)
{
	double other = p->total - p->embed - p->matmul - p->attention - p->elementwise - p->allreduce;
	double t = p->total > 0 ? p->total : 1;

	printf("rank %d: %llu runs, %llu sequences, %llu tokens in %.3f s\n", rank,
	       (unsigned long long)p->runs, (unsigned long long)p->sequences,
	       (unsigned long long)p->tokens, p->total);
	printf("  matmul (dense layers)   %8.3f s %5.1f %%\n", p->matmul, 100 * p->matmul / t);
	printf("  attention               %8.3f s %5.1f %%\n", p->attention, 100 * p->attention / t);
	printf("  elementwise + LayerNorm %8.3f s %5.1f %%\n", p->elementwise, 100 * p->elementwise / t);
	printf("  embeddings              %8.3f s %5.1f %%\n", p->embed, 100 * p->embed / t);
	printf("  AllReduce               %8.3f s %5.1f %%\n", p->allreduce, 100 * p->allreduce / t);
	printf("  other                   %8.3f s %5.1f %%\n", other, 100 * other / t);
}

static void print_memory(const npbert_memory_t *m, int rank)
{
	struct memstat_proc mp = { 0 };

	memstat_proc(getpid(), &mp);
	printf("rank %d: weights %.1f MiB read in place from the shared model (not copied); "
	       "workspace %.1f MiB (%.1f MiB shared with the other ranks) for %llu tokens\n",
	       rank, (double)m->weight_bytes / 1048576.0, (double)m->workspace_bytes / 1048576.0,
	       (double)m->shared_workspace_bytes / 1048576.0,
	       (unsigned long long)m->capacity_tokens);
	printf("rank %d: last run took %llu bytes fresh from the OS and copied %llu bytes "
	       "implicitly; process RSS %.1f MiB, PSS %.1f MiB, private (anonymous) %.1f MiB\n",
	       rank, (unsigned long long)m->fresh_bytes, (unsigned long long)m->copied_bytes,
	       (double)mp.rss_kb / 1024.0, (double)mp.pss_kb / 1024.0,
	       (double)mp.pss_anon_kb / 1024.0);
}

/* ------------------------------------------------------------------ ranks */

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

static double pct(const double *sorted, int n, double p)
{
	double pos = p * (n - 1);
	int lo = (int)pos;

	if (lo + 1 >= n)
		return sorted[n - 1];
	return sorted[lo] + (pos - lo) * (sorted[lo + 1] - sorted[lo]);
}

static int wait_line(void)
{
	char buf[64];

	return fgets(buf, sizeof(buf), stdin) ? 0 : -1;
}

static void wait_eof(void)
{
	char buf[64];

	while (fgets(buf, sizeof(buf), stdin))
		;
}

/* barrier with a long deadline: a driver may take its time between steps */
static int hold_barrier(npccl_comm_t comm)
{
	if (!comm)
		return 0;
	npccl_comm_set_timeout(comm, 3600 * 1000);
	return npccl_barrier(comm) ? -1 : 0;
}

static int serve_stream(const struct args *a, npbert_t *bert, const npbert_config_t *c,
			npccl_comm_t comm, int rank, int nranks)
{
	const stream_spec_t *sp = &a->stream;
	size_t n = (size_t)sp->batch * (size_t)sp->max_len;
	int64_t *ids = malloc(n * sizeof(int64_t)), *types = malloc(n * sizeof(int64_t));
	int64_t *mask = malloc(n * sizeof(int64_t)), pids[64];
	float *hidden = malloc(n * (size_t)c->hidden * sizeof(float));
	float *pooled = c->has_pooler ? malloc((size_t)sp->batch * (size_t)c->hidden * sizeof(float)) : NULL;
	double *lat = malloc(sizeof(double) * (size_t)sp->count), t0, wall, c0, cpu;
	npbert_memory_t mem;
	npbert_profile_t prof;
	uint64_t seqs = 0, tokens = 0;
	int rc = 1;

	if (!ids || !types || !mask || !hidden || !lat || (c->has_pooler && !pooled)) {
		die("out of memory for the stream's buffers");
		goto out;
	}
	if (sp->max_len > c->positions) {
		die("--stream asks for sequences of up to %d tokens but the model has %d positions",
		    sp->max_len, c->positions);
		goto out;
	}
	if (npbert_reserve(bert, sp->batch, sp->max_len)) {
		die("rank %d: %s", rank, npbert_last_error());
		goto out;
	}
	/* warm up on the first batch (not timed): page in the weights this rank reads */
	int S;

	stream_batch(sp, 0, c->vocab, c->type_vocab, ids, types, mask, &S);
	npbert_batch_t b = { sp->batch, S, ids, types, mask };

	if (npbert_run(bert, &b, hidden, pooled)) {
		die("rank %d: %s", rank, npbert_last_error());
		goto out;
	}
	npbert_reset_profile(bert);
	if (a->hold) {
		if (rank == 0) {
			printf("ready\n");
			fflush(stdout);
			if (wait_line())
				goto out;
		}
		if (hold_barrier(comm))
			goto out;
	}
	t0 = now();
	c0 = cpu_now();
	for (int k = 0; k < sp->count; k++) {
		double s0 = now();

		stream_batch(sp, k, c->vocab, c->type_vocab, ids, types, mask, &S);
		b.seq_len = S;
		if (npbert_run(bert, &b, hidden, pooled)) {
			die("rank %d, batch %d: %s", rank, k, npbert_last_error());
			goto out;
		}
		lat[k] = now() - s0;
		seqs += (uint64_t)sp->batch;
		tokens += (uint64_t)sp->batch * (uint64_t)S;
	}
	wall = now() - t0;
	cpu = cpu_now() - c0;
	npbert_get_memory(bert, &mem);
	npbert_get_profile(bert, &prof);
	pids[rank] = getpid();
	if (comm) {
		int64_t mine = getpid();

		if (npccl_allgather(&mine, pids, 1, NPCCL_INT64, comm)) {
			die("rank %d: gathering the ranks' pids: %s", rank, npccl_comm_last_error(comm));
			goto out;
		}
	}
	if (rank == 0 && a->out) {
		struct input last = { ids, types, mask, sp->batch, S };

		if (write_outputs(a->out, c, &last, hidden, pooled))
			goto out;
	}
	if (rank == 0) {
		double *sorted = malloc(sizeof(double) * (size_t)sp->count);

		if (!sorted) {
			die("out of memory");
			goto out;
		}
		memcpy(sorted, lat, sizeof(double) * (size_t)sp->count);
		qsort(sorted, (size_t)sp->count, sizeof(double), cmp_double);
		if (a->json) {
			printf("{\"engine\": \"npushm\", \"tp\": %d, \"threads\": %d, \"pids\": [", nranks,
			       npt_get_num_threads());
			for (int i = 0; i < nranks; i++)
				printf("%s%lld", i ? ", " : "", (long long)pids[i]);
			printf("], \"batches\": %d, \"sequences\": %llu, \"tokens\": %llu, "
			       "\"wall_s\": %.6f, \"cpu_s\": %.6f, \"latencies_s\": [", sp->count,
			       (unsigned long long)seqs, (unsigned long long)tokens, wall, cpu);
			for (int k = 0; k < sp->count; k++)
				printf("%s%.6f", k ? ", " : "", lat[k]);
			printf("], \"profile\": {\"total\": %.6f, \"embed\": %.6f, \"matmul\": %.6f, "
			       "\"attention\": %.6f, \"elementwise\": %.6f, \"allreduce\": %.6f}, ",
			       prof.total, prof.embed, prof.matmul, prof.attention, prof.elementwise,
			       prof.allreduce);
			printf("\"memory\": {\"weight_bytes\": %llu, \"workspace_bytes\": %llu, "
			       "\"shared_workspace_bytes\": %llu, \"fresh_bytes_last_run\": %llu, "
			       "\"copied_bytes_last_run\": %llu}}\n",
			       (unsigned long long)mem.weight_bytes,
			       (unsigned long long)mem.workspace_bytes,
			       (unsigned long long)mem.shared_workspace_bytes,
			       (unsigned long long)mem.fresh_bytes, (unsigned long long)mem.copied_bytes);
		} else {
			printf("%d batches of %d sequences (%d..%d tokens), tp %d: %.1f sequences/s, "
			       "latency p50 %.1f ms, p99 %.1f ms\n", sp->count, sp->batch, sp->min_len,
			       sp->max_len, nranks, (double)seqs / wall, 1e3 * pct(sorted, sp->count, 0.5),
			       1e3 * pct(sorted, sp->count, 0.99));
		}
		fflush(stdout);
		free(sorted);
	}
	if (a->profile)
		print_profile(&prof, rank);
	if (a->memory)
		print_memory(&mem, rank);
	fflush(stdout);
	if (a->hold) {
		if (rank == 0)
			wait_eof();
		if (hold_barrier(comm))
			goto out;
	}
	rc = 0;
out:
	free(ids);
	free(types);
	free(mask);
	free(hidden);
	free(pooled);
	free(lat);
	return rc;
}

static int run_batch(const struct args *a, npbert_t *bert, const npbert_config_t *c,
		     const struct input *in, int rank)
{
	size_t T = (size_t)in->batch * (size_t)in->seq_len;
	float *hidden = malloc(T * (size_t)c->hidden * sizeof(float) + 1);
	float *pooled = c->has_pooler ? malloc((size_t)in->batch * (size_t)c->hidden * sizeof(float) + 1)
				      : NULL;
	npbert_batch_t b = { in->batch, in->seq_len, in->ids, in->types, in->mask };
	double *lat = malloc(sizeof(double) * (size_t)a->repeat);
	npbert_memory_t mem;
	npbert_profile_t prof;
	int rc = 1;

	if (!hidden || !lat || (c->has_pooler && !pooled)) {
		die("out of memory for %zu output floats", T * (size_t)c->hidden);
		goto out;
	}
	for (int r = 0; r < a->repeat; r++) {
		double t0 = now();

		if (npbert_run(bert, &b, hidden, pooled)) {
			die("%s", npbert_last_error());
			goto out;
		}
		lat[r] = now() - t0;
	}
	if (rank == 0) {
		if (a->out ? write_outputs(a->out, c, in, hidden, pooled) : (print_summary(c, in, hidden, pooled), 0))
			goto out;
		if (a->repeat > 1) {
			qsort(lat, (size_t)a->repeat, sizeof(double), cmp_double);
			printf("%d runs: latency min %.2f ms, p50 %.2f ms, %.1f sequences/s at p50\n",
			       a->repeat, 1e3 * lat[0], 1e3 * pct(lat, a->repeat, 0.5),
			       (double)in->batch / pct(lat, a->repeat, 0.5));
		}
	}
	npbert_get_profile(bert, &prof);
	npbert_get_memory(bert, &mem);
	if (a->profile)
		print_profile(&prof, rank);
	if (a->memory)
		print_memory(&mem, rank);
	rc = 0;
out:
	fflush(stdout);
	free(hidden);
	free(pooled);
	free(lat);
	return rc;
}

static void print_info(const npbert_config_t *c, const npbert_memory_t *m, const char *model)
{
	printf("model %s: BERT, %d layers, hidden %d, %d heads of %d, FFN %d, vocabulary %d, "
	       "%d positions, %d token types, %s, LayerNorm eps %g%s%s%s\n", model, c->layers,
	       c->hidden, c->heads, c->head_dim, c->ffn, c->vocab, c->positions, c->type_vocab,
	       c->has_pooler ? "pooler" : "no pooler", c->layer_norm_eps,
	       c->prefix[0] ? ", tensor names prefixed '" : "", c->prefix,
	       c->prefix[0] ? "'" : "");
	printf("weights read by this process: %.1f MiB (in place, shared)\n",
	       (double)m->weight_bytes / 1048576.0);
}

/* One rank (or the only process): attach, build the engine, serve. */
static int rank_main(const struct args *a, const char *name, const struct input *in, int rank,
		     int nranks, const npccl_unique_id_t *id)
{
	npbert_opts_t o = { .heads = a->heads, .layer_norm_eps = a->eps,
			    .flags = (a->eps_given ? NPBERT_EPS_GIVEN : 0) |
				     (a->no_weight_check ? NPBERT_NO_WEIGHT_CHECK : 0) };
	npushm_model_t *m = NULL;
	npccl_comm_t comm = NULL;
	npbert_t *bert = NULL;
	npbert_config_t c;
	npbert_memory_t mem;
	npbert_status_t st;
	char err[512];
	int rc = 1;

	if (a->threads && npt_set_num_threads(a->threads))
		return die("%s", npt_last_error());
	if (npushm_model_attach(name, &m))
		return die("%s", npushm_last_error());
	if (nranks > 1) {
		if (npccl_comm_init_rank_err(&comm, nranks, id, rank, err, sizeof(err))) {
			die("rank %d: cannot join the other ranks: %s", rank, err);
			goto out;
		}
		o.comm = comm;
	}
	st = npbert_create(m, &o, &bert);
	if (st) {
		/*
		 * A layout or split refusal is the same on every rank: rank 0 says
		 * it, after a barrier, so that no rank leaves (aborting the
		 * communicator) while another is still joining. Any other failure
		 * is this rank's own: it says it and aborts.
		 */
		int same_everywhere = st == NPBERT_ERR_LAYOUT || st == NPBERT_ERR_SPLIT ||
				      st == NPBERT_ERR_WEIGHTS || st == NPBERT_ERR_INVALID;

		if (rank == 0)
			die("%s", npbert_last_error());
		else if (!same_everywhere)
			die("rank %d: %s", rank, npbert_last_error());
		if (comm && same_everywhere && npccl_barrier(comm) == NPCCL_OK) {
			npccl_comm_destroy(comm);
			comm = NULL;
		}
		goto out;
	}
	npushm_model_detach(m);	/* the engine holds its own references */
	m = NULL;
	{
		int used, total;
		const char *why = npbert_packed_weights(bert, &used, &total);

		const char *chk = npt_gemm_self_check();

		if (why && rank == 0)
			fprintf(stderr, "%s: %d of %d packed weights not used: %s\n", prog,
				total - used, total, why);
		if (chk && rank == 0)
			fprintf(stderr, "%s: GEMM self-check on this CPU: %s; worked around "
				"(GEMM: %s)\n", prog, chk, npt_gemm_backend());
	}
	npbert_get_config(bert, &c);
	npbert_get_memory(bert, &mem);
	if (a->info) {
		int used, total;

		npbert_packed_weights(bert, &used, &total);
		if (rank == 0) {
			print_info(&c, &mem, a->model);
			printf("packed linear weights read in place: %d of %d (%s)\n", used, total,
			       npt_gemm_backend());
		}
		rc = 0;
		goto out;
	}
	if (a->stream_s)
		rc = serve_stream(a, bert, &c, comm, rank, nranks);
	else
		rc = run_batch(a, bert, &c, in, rank);
out:
	npbert_destroy(bert);
	if (rc && comm)
		npccl_comm_abort(comm);
	else
		npccl_comm_destroy(comm);
	npushm_model_detach(m);
	return rc;
}

/* MODEL may be a file: load it (deduplicated by content) under a name of its hash */
static int resolve_model(const struct args *a, char *name, size_t len, int *loaded_here)
{
	struct stat sb;
	npushm_model_t *m;
	npushm_dev_t *dev;
	uint8_t hash[16];
	char hex[33];

	*loaded_here = 0;
	if (stat(a->model, &sb) == 0 && S_ISDIR(sb.st_mode))
		return die("%s is a directory: pass a .safetensors file or the name of a model "
			   "loaded with `npushm load`", a->model);
	if (stat(a->model, &sb) || !S_ISREG(sb.st_mode)) {
		if (strchr(a->model, '/') || strstr(a->model, ".safetensors")) {
			if (stat(a->model, &sb))
				return die("%s: %s (and a model name has no '/')", a->model,
					   strerror(errno));
			return die("%s is not a regular file: pass a .safetensors file", a->model);
		}
		if (a->dtype)
			return die("--dtype applies to a .safetensors MODEL; a loaded model carries "
				   "what `npushm load --dtype` stored for it");
		snprintf(name, len, "%s", a->model);
		return 0;
	}
	if (npushm_file_hash(a->model, hash, hex))
		return die("%s", npushm_last_error());
	snprintf(name, len, "npushm-bert.%.16s%s%s%s", hex, a->dtype ? "." : "",
		 a->dtype ? a->dtype : "", a->packed_only ? ".only" : "");
	if (npushm_model_attach(name, &m) == NPUSHM_OK) {
		char why[3 * NPUSHM_NAME_MAX + 2 * PATH_MAX];
		int own = model_of_this_user(m, a->model, name, why, sizeof(why));

		npushm_model_detach(m);
		if (own)
			return die("%s", why);
		return 0;	/* already loaded by this user (e.g. --keep earlier) */
	}
	if (npushm_dev_open(NPUSHM_BACKEND_AUTO, &dev))
		return die("%s", npushm_last_error());
	npushm_load_opts_t lo = { .mode = 0600, .packer = a->dtype ? cli_packer(a->dtype) : NULL,
				  .flags = a->packed_only ? NPUSHM_LOAD_PACKED_ONLY : 0 };

	if (npushm_model_load(dev, a->model, name, &lo, NULL)) {
		die("%s", npushm_last_error());
		npushm_dev_close(dev);
		return 1;
	}
	npushm_dev_close(dev);
	cli_packer_warn_unpacked(prog, a->dtype);
	*loaded_here = !a->keep;
	return 0;
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

/*
 * SIGINT, SIGTERM and SIGHUP (apps/common/signal_pipe.h: the handler only
 * writes the signal to a pipe, whichever thread runs it): one thread reads
 * it, ends the ranks, removes the model this run loaded (after the
 * load finished: a load in progress holds the lock, so its name and hash
 * alias are removed once published, never left), then dies of the signal.
 */
static struct {
	pthread_mutex_t lock;
	char name[NPUSHM_NAME_MAX + 1];	/* the model to remove, "" if none */
	pid_t ranks[64];
	int nranks;
} guard = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* the signal @sig ends the run (on signal_pipe.h's thread) */
static void guard_stop(int sig)
{
	pthread_mutex_lock(&guard.lock);
	atomic_store(stopping, 1);
	for (int r = 0; r < guard.nranks; r++)
		kill(guard.ranks[r], SIGTERM);
	if (guard.name[0])
		unload(guard.name);
	signal(sig, SIG_DFL);
	raise(sig);
	_exit(128 + sig);
}

/* a rank: signals as by default, and it dies with the parent however that ends */
static void rank_start(pid_t parent)
{
	signal_pipe_defaults();
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(1);
}

int main(int argc, char **argv)
{
	struct args a;
	struct input in = { 0 };
	char name[NPUSHM_NAME_MAX + 1];
	int loaded = 0, rc;

	if (parse_args(argc, argv, &a))
		return 2;
	if (a.ids ? read_npy_inputs(&a, &in) : a.text ? read_text_input(&a, &in) : 0)
		return 1;
	stopping_share();
	signal_pipe_start(guard_stop);
	pthread_mutex_lock(&guard.lock);
	rc = resolve_model(&a, name, sizeof(name), &loaded);
	if (loaded)
		snprintf(guard.name, sizeof(guard.name), "%s", name);
	pthread_mutex_unlock(&guard.lock);
	if (rc)
		return 1;
	if (a.tp == 1) {
		rc = rank_main(&a, name, &in, 0, 1, NULL);
	} else {
		npccl_unique_id_t id;
		pid_t pids[64], parent = getpid();
		int failed = 0;

		fflush(NULL);
		if (npccl_get_unique_id(&id)) {
			rc = die("cannot start the rendezvous of the %d ranks", a.tp);
			goto out;
		}
		pthread_mutex_lock(&guard.lock);
		for (int r = 0; r < a.tp; r++) {
			pids[r] = fork();
			if (pids[r] < 0) {
				die("fork: %s", strerror(errno));
				for (int k = 0; k < r; k++)
					kill(pids[k], SIGTERM);
				a.tp = r;
				failed = 1;
				break;
			}
			if (pids[r] == 0) {
				rank_start(parent);
				_exit(rank_main(&a, name, &in, r, a.tp, &id));
			}
			guard.ranks[guard.nranks++] = pids[r];
		}
		pthread_mutex_unlock(&guard.lock);
		for (int r = 0; r < a.tp; r++) {
			int st;

			while (waitpid(pids[r], &st, 0) < 0 && errno == EINTR)
				;
			if (!WIFEXITED(st) || WEXITSTATUS(st)) {
				if (WIFSIGNALED(st))
					die("rank %d died of signal %d", r, WTERMSIG(st));
				failed = 1;
			}
		}
		pthread_mutex_lock(&guard.lock);
		guard.nranks = 0;
		pthread_mutex_unlock(&guard.lock);
		rc = failed;
	}
out:
	pthread_mutex_lock(&guard.lock);
	if (guard.name[0])
		unload(guard.name);
	guard.name[0] = 0;
	pthread_mutex_unlock(&guard.lock);
	free(in.ids);
	free(in.types);
	free(in.mask);
	return rc;
}
