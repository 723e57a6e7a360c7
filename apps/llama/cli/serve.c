/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * serve.c - npushm-llama --stream COUNT,MIN,MAX,NEW,SEED: a serving loop over
 * a deterministic stream of requests, timed as a server sees them.
 *
 * Request k's prompt: the --stream-prefix tokens shared by every request
 * (drawn first from SEED), then MIN..MAX tokens of its own (splitmix64
 * seeded with SEED + (k + 1) * 2^32: its length, then its ids, all in
 * 0..vocab-1). Each request reuses the one sequence (npllama_seq_reset: its
 * KV cache region is made once), attaches a published prefix if
 * --attach-prefix, prefills the rest and picks NEW tokens (greedy, or
 * sampled with --seed + k). Time to first token: from the request's start
 * to its first token picked (attach, prefill, output projection, sampling);
 * inter-token latency: each later token's feed and pick. One warm-up
 * request (request 0's prompt, 2 tokens, no prefix options) runs first and
 * is not counted. --publish-prefix: request 0 publishes the shared prefix
 * (fed on its own first, then the rest; whole blocks of it) or, without
 * --stream-prefix, its prompt after its first token. --tp: every rank
 * serves the same stream in step; rank 0 reports.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "npy.h"
#include "nptensor.h"
#include "splitmix64.h"
#include "stream_field.h"

int stream_parse(const char *s, llama_stream_t *o)
{
	long long count, min_len, max_len, max_new;
	unsigned long long seed;
	char *end;

	if (stream_next_field(&s, 1, 1 << 20, &count) || stream_next_field(&s, 1, 1 << 24, &min_len) ||
	    stream_next_field(&s, min_len, 1 << 24, &max_len) ||
	    stream_next_field(&s, 1, 1 << 24, &max_new))
		return -1;
	/* any 64-bit seed, taken modulo 2^64 (-1 too) */
	errno = 0;
	seed = strtoull(s, &end, 10);
	if (end == s || errno || *end)
		return -1;
	o->count = (int)count;
	o->min_len = (int)min_len;
	o->max_len = (int)max_len;
	o->max_new = (int)max_new;
	o->seed = seed;
	return 0;
}

/* request @k's prompt into @ids (room for shared + max_len); its length */
static int request_prompt(const struct args *a, int k, int vocab, int64_t *ids)
{
	const llama_stream_t *sp = &a->stream;
	uint64_t rng = sp->seed;
	int n;

	for (int i = 0; i < a->shared_prefix; i++)
		ids[i] = (int64_t)(splitmix64(&rng) % (uint64_t)vocab);
	rng = sp->seed + ((uint64_t)(k + 1) << 32);
	n = sp->min_len + (int)(splitmix64(&rng) % (uint64_t)(sp->max_len - sp->min_len + 1));
	for (int i = 0; i < n; i++)
		ids[a->shared_prefix + i] = (int64_t)(splitmix64(&rng) % (uint64_t)vocab);
	return a->shared_prefix + n;
}

struct served {
	double *ttft;		/* [count] */
	double *itl;		/* [count * (max_new - 1)] */
	int *attached;		/* [count] prefix tokens attached */
	int64_t *last;		/* [max_new] the last request's tokens */
	int nitl;
};

static int said_untrusted;	/* the untrusted prefix line was printed */

/* one request: @new tokens after @prompt; @opts: 1 to use the prefix options */
static int serve_one(const struct rank_ctx *x, npllama_seq_t *seq, int k, const int64_t *prompt,
		     int n, int new, int opts, float *logits, struct served *o)
{
	const struct args *a = x->a;
	npllama_sampling_t sp = { .temperature = a->temperature, .top_p = a->top_p };
	uint64_t rng = a->seed + (uint64_t)k;
	double t0 = now(), t;
	int skip = 0, vocab = 0, pub = 0, published = 0;
	int publish = opts && k == 0 && a->publish_prefix;
	npllama_status_t st = NPLLAMA_OK;
	npllama_config_t c;
	int64_t tok;
	char name[NPUSHM_NAME_MAX + 1];

	npllama_get_config(x->llm, &c);
	vocab = c.vocab;
	npllama_seq_reset(seq);
	if (opts && a->attach_prefix && npllama_seq_attach_prefix(seq, prompt, n, &skip))
		return die("request %d: %s", k, npllama_last_error());
	/* said once per run (every request would find the same region) */
	if (opts && a->attach_prefix && x->rank == 0 && !a->json && !said_untrusted &&
	    npllama_seq_untrusted_prefix(seq, NULL, 0, NULL)) {
		prefix_say_untrusted(seq, 0);
		said_untrusted = 1;
	}
	/* the publisher feeds the shared prefix on its own first, to publish just that */
	if (publish && skip < a->shared_prefix && a->shared_prefix < n) {
		if (npllama_seq_feed(seq, prompt + skip, a->shared_prefix - skip, NULL))
			return die("request %d: %s", k, npllama_last_error());
		if ((st = npllama_seq_publish_prefix(seq, &pub, name, sizeof(name))) &&
		    st != NPLLAMA_ERR_UNTRUSTED)
			return die("request %d: %s", k, npllama_last_error());
		skip = a->shared_prefix;
		published = 1;
	}
	if (npllama_seq_feed(seq, prompt + skip, n - skip, logits) ||
	    npllama_sample(logits, vocab, a->sampled ? &sp : NULL, &rng, &tok))
		return die("request %d: %s", k, npllama_last_error());
	if (o) {
		o->ttft[k] = now() - t0;
		o->attached[k] = published ? 0 : skip;
		o->last[0] = tok;
	}
	if (publish && !published &&
	    (st = npllama_seq_publish_prefix(seq, &pub, name, sizeof(name))) &&
	    st != NPLLAMA_ERR_UNTRUSTED)
		return die("request %d: %s", k, npllama_last_error());
	/* another user's region holding the name is said, and serving goes on */
	if (publish && x->rank == 0 && !a->json && st == NPLLAMA_ERR_UNTRUSTED)
		prefix_say_untrusted(seq, 1);
	else if (publish && x->rank == 0 && !a->json)
		printf("prefix: published %d tokens as %s\n", pub, name);
	for (int i = 1; i < new; i++) {
		t = now();
		if (npllama_seq_feed(seq, &tok, 1, logits) ||
		    npllama_sample(logits, vocab, a->sampled ? &sp : NULL, &rng, &tok))
			return die("request %d, token %d: %s", k, i, npllama_last_error());
		if (o) {
			o->itl[o->nitl++] = now() - t;
			o->last[i] = tok;
		}
	}
	return 0;
}

/* --hold: rank 0 waits for the driver; every rank then starts together */
static int hold_here(const struct rank_ctx *x, int at_end)
{
	char buf[64];

	if (x->rank == 0) {
		if (!at_end) {
			printf("ready\n");
			fflush(stdout);
			if (!fgets(buf, sizeof(buf), stdin))
				return die("--hold: the input ended before the go line");
		} else {
			while (fgets(buf, sizeof(buf), stdin))
				;
		}
	}
	if (x->comm) {
		npccl_comm_set_timeout(x->comm, 3600 * 1000);
		if (npccl_barrier(x->comm))
			return die("rank %d: waiting for the other ranks: %s", x->rank,
				   npccl_comm_last_error(x->comm));
	}
	return 0;
}

static void print_list(const char *key, const double *v, int n)
{
	printf("\"%s\": [", key);
	for (int i = 0; i < n; i++)
		printf("%s%.6f", i ? ", " : "", v[i]);
	printf("]");
}

static void report(const struct rank_ctx *x, struct served *o, double wall, uint64_t kv_bytes)
{
	const llama_stream_t *sp = &x->a->stream;
	int ntok = sp->count * sp->max_new, att = 0;
	double ttft50, ttft99, itl50 = 0, itl99 = 0;

	for (int k = 0; k < sp->count; k++)
		att += o->attached[k] > 0;
	if (x->a->json) {
		printf("{\"engine\": \"npushm-llama\", \"tp\": %d, \"threads\": %d, \"pid\": %lld, "
		       "\"requests\": %d, \"shared_prefix\": %d, \"new\": %d, \"tokens\": %d, "
		       "\"wall_s\": %.6f, \"weight_bytes_per_token\": %llu, \"kv_bytes\": %llu, "
		       "\"attached\": [", x->nranks, npt_get_num_threads(), (long long)getpid(),
		       sp->count, x->a->shared_prefix, sp->max_new, ntok, wall,
		       (unsigned long long)npllama_weight_bytes(x->llm),
		       (unsigned long long)kv_bytes);
		for (int k = 0; k < sp->count; k++)
			printf("%s%d", k ? ", " : "", o->attached[k]);
		printf("], ");
		print_list("ttft_s", o->ttft, sp->count);
		printf(", ");
		print_list("itl_s", o->itl, o->nitl);
		printf("}\n");
	}
	ttft50 = percentile(o->ttft, sp->count, 0.5);
	ttft99 = percentile(o->ttft, sp->count, 0.99);
	if (o->nitl) {
		itl50 = percentile(o->itl, o->nitl, 0.5);
		itl99 = percentile(o->itl, o->nitl, 0.99);
	}
	if (!x->a->json)
		printf("%d requests of %d..%d prompt tokens (+%d shared), %d new each, tp %d: time to "
		       "first token p50 %.2f ms, p99 %.2f ms; inter-token latency p50 %.2f ms, p99 "
		       "%.2f ms; %.2f tokens/s; prefix attached by %d of %d requests\n", sp->count,
		       sp->min_len, sp->max_len, x->a->shared_prefix, sp->max_new, x->nranks,
		       1e3 * ttft50, 1e3 * ttft99, 1e3 * itl50, 1e3 * itl99, ntok / wall, att,
		       sp->count);
}

int run_stream(const struct rank_ctx *x)
{
	const struct args *a = x->a;
	const llama_stream_t *sp = &a->stream;
	struct served o = { 0 };
	npllama_config_t c;
	npllama_seq_t *seq = NULL;
	npllama_profile_t prof;
	int64_t *prompt = NULL;
	float *logits = NULL;
	int rc = 1, n, cap;
	double t0, wall;
	char err[512];

	npllama_get_config(x->llm, &c);
	cap = a->shared_prefix + sp->max_len + sp->max_new - 1;
	if ((int64_t)a->shared_prefix + sp->max_len + sp->max_new - 1 > c.context)
		return die("--stream's prompts of up to %d tokens (+%d shared) and %d new tokens "
			   "need %lld positions, but the model's context is %d", sp->max_len,
			   a->shared_prefix, sp->max_new,
			   (long long)a->shared_prefix + sp->max_len + sp->max_new - 1, c.context);
	prompt = malloc(sizeof(*prompt) * (size_t)(a->shared_prefix + sp->max_len));
	logits = malloc(sizeof(float) * (size_t)c.vocab);
	o.ttft = malloc(sizeof(double) * (size_t)sp->count);
	o.itl = malloc(sizeof(double) * (size_t)sp->count * (size_t)sp->max_new);
	o.attached = calloc((size_t)sp->count, sizeof(int));
	o.last = malloc(sizeof(int64_t) * (size_t)sp->max_new);
	if (!prompt || !logits || !o.ttft || !o.itl || !o.attached || !o.last) {
		die("out of memory for the stream's buffers");
		goto out;
	}
	if (npllama_seq_create(x->llm, cap, &seq)) {
		die("%s", npllama_last_error());
		goto out;
	}
	n = request_prompt(a, 0, c.vocab, prompt);
	if (serve_one(x, seq, 0, prompt, n, sp->max_new < 2 ? sp->max_new : 2, 0, logits, NULL))
		goto out;
	if (a->hold && hold_here(x, 0))
		goto out;
	npllama_reset_profile(x->llm);
	t0 = now();
	for (int k = 0; k < sp->count; k++) {
		n = request_prompt(a, k, c.vocab, prompt);
		if (serve_one(x, seq, k, prompt, n, sp->max_new, 1, logits, &o))
			goto out;
	}
	wall = now() - t0;
	npllama_get_profile(x->llm, &prof);
	if (x->rank == 0) {
		int64_t shape[1] = { sp->max_new };

		report(x, &o, wall, npllama_seq_kv_bytes(seq));
		if (a->out && npy_write_i64(a->out, 1, shape, o.last, err, sizeof(err))) {
			die("%s", err);
			goto out;
		}
		fflush(stdout);
	}
	if (a->timing && x->comm &&
	    print_collectives(x, &prof, sp->count * sp->max_new))
		goto out;
	fflush(stdout);
	if (a->hold && hold_here(x, 1))
		goto out;
	rc = 0;
out:
	fflush(stdout);
	npllama_seq_destroy(seq);
	free(prompt);
	free(logits);
	free(o.ttft);
	free(o.itl);
	free(o.attached);
	free(o.last);
	return rc;
}
