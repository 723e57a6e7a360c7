/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * generate.c - npushm-llama --ids: one prompt, --max-new tokens, written to
 * --out (and --logits, --prompt-logits), with the prefix options and
 * --timing. With --tp every rank runs this in step (the engine's calls are
 * collective and give every rank the same logits, so every rank samples the
 * same tokens); rank 0 writes the files and prints.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "npy.h"

/* the prompt one token at a time, keeping the logits after each */
static int prompt_logits(const struct rank_ctx *x, npllama_seq_t *seq, int vocab, float *last)
{
	int n = x->prompt_len;
	float *all = malloc(sizeof(float) * (size_t)n * (size_t)vocab);
	int64_t shape[2] = { n, vocab };
	char err[512];
	int rc = 0;

	if (!all)
		return die("out of memory for %d x %d logits", n, vocab);
	for (int i = 0; i < n && !rc; i++)
		if (npllama_seq_feed(seq, &x->prompt[i], 1, all + (size_t)i * (size_t)vocab))
			rc = die("%s", npllama_last_error());
	if (!rc && x->rank == 0 &&
	    npy_write_f32(x->a->prompt_logits, 2, shape, all, err, sizeof(err)))
		rc = die("%s", err);
	if (!rc)
		memcpy(last, all + (size_t)(n - 1) * (size_t)vocab, sizeof(float) * (size_t)vocab);
	free(all);
	return rc;
}

/* after the prefill: the prompt's whole blocks, before any generated token */
static int publish(const struct rank_ctx *x, npllama_seq_t *seq)
{
	char name[NPUSHM_NAME_MAX + 1];
	npllama_status_t st;
	int n;

	st = npllama_seq_publish_prefix(seq, &n, name, sizeof(name));
	/* another user's region holds the name: said, and the run goes on */
	if (st == NPLLAMA_ERR_UNTRUSTED) {
		if (x->rank == 0)
			prefix_say_untrusted(seq, 1);
		return 0;
	}
	if (st)
		return die("%s", npllama_last_error());
	if (x->rank)
		return 0;
	if (n)
		printf("prefix: published %d tokens as %s\n", n, name);
	else
		printf("prefix: the prompt is shorter than a block of %d tokens: nothing "
		       "published\n", NPLLAMA_PREFIX_BLOCK);
	return 0;
}

static int write_outputs(const struct args *a, const int64_t *ids, const float *logits, int vocab)
{
	int64_t shape[2] = { a->max_new, vocab };
	char err[512];

	if (npy_write_i64(a->out, 1, shape, ids, err, sizeof(err)) ||
	    (a->logits && npy_write_f32(a->logits, 2, shape, logits, err, sizeof(err))))
		return die("%s", err);
	return 0;
}

int run_generate(const struct rank_ctx *x)
{
	const struct args *a = x->a;
	npllama_sampling_t sp = { .temperature = a->temperature, .top_p = a->top_p };
	npllama_config_t c;
	npllama_seq_t *seq = NULL;
	npllama_profile_t prof;
	int64_t *ids = NULL;
	uint64_t rng = a->seed;
	float *logits = NULL;
	int rc = 1, skip = 0, n = x->prompt_len;
	double t0 = now(), t1 = t0, t2;

	npllama_get_config(x->llm, &c);
	if ((int64_t)n + a->max_new - 1 > c.context)
		return die("the prompt's %d tokens and --max-new %d need %lld positions, but the "
			   "model's context is %d (max_position_embeddings): shorten the prompt or "
			   "ask for fewer tokens", n, a->max_new, (long long)n + a->max_new - 1,
			   c.context);
	ids = malloc(sizeof(*ids) * (size_t)a->max_new);
	logits = malloc(sizeof(float) * (size_t)c.vocab * (size_t)(a->logits ? a->max_new : 1));
	if (!ids || !logits) {
		die("out of memory for %d x %d logits", a->logits ? a->max_new : 1, c.vocab);
		goto out;
	}
	if (npllama_seq_create(x->llm, n + a->max_new - 1, &seq)) {
		die("%s", npllama_last_error());
		goto out;
	}
	if (a->prompt_logits && prompt_logits(x, seq, c.vocab, logits))
		goto out;
	if (a->attach_prefix) {
		if (npllama_seq_attach_prefix(seq, x->prompt, n, &skip)) {
			die("%s", npllama_last_error());
			goto out;
		}
		if (x->rank == 0) {
			prefix_say_untrusted(seq, 0);
			printf("prefix: attached %d tokens\n", skip);
		}
	}
	for (int i = 0; i < a->max_new; i++) {
		float *row = logits + (a->logits ? (size_t)i * (size_t)c.vocab : 0);
		int fed = !i && a->prompt_logits;	/* the prompt went in token by token */

		if ((!fed && npllama_seq_feed(seq, i ? &ids[i - 1] : x->prompt + skip,
					      i ? 1 : n - skip, row)) ||
		    npllama_sample(row, c.vocab, a->sampled ? &sp : NULL, &rng, &ids[i])) {
			die("%s", npllama_last_error());
			goto out;
		}
		if (!i && a->publish_prefix && publish(x, seq))
			goto out;
		if (!i) {
			t1 = now();
			npllama_reset_profile(x->llm);
		}
	}
	t2 = now();
	npllama_get_profile(x->llm, &prof);
	if (a->timing && x->rank == 0)
		printf("timing: prefill %d tokens %.6f s; decode %d tokens %.6f s, %.3f tokens/s; "
		       "%llu weight bytes per token\n", n - skip, t1 - t0, a->max_new - 1, t2 - t1,
		       a->max_new > 1 ? (a->max_new - 1) / (t2 - t1) : 0.0,
		       (unsigned long long)npllama_weight_bytes(x->llm));
	if (a->timing && x->comm && print_collectives(x, &prof, a->max_new - 1))
		goto out;
	if (x->rank == 0 && write_outputs(a, ids, logits, c.vocab))
		goto out;
	rc = 0;
out:
	fflush(stdout);
	npllama_seq_destroy(seq);
	free(logits);
	free(ids);
	return rc;
}
