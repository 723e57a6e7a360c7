/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * sample.c - the next token from a row of logits: greedy (first largest),
 * or temperature and nucleus (top-p) sampling driven by a caller-held
 * splitmix64 state, so that a seed replays the same choices on any machine.
 */
#include <math.h>
#include <stdlib.h>

#include "internal.h"
#include "splitmix64.h"

struct cand {
	double p;
	int64_t id;
};

/* by probability, descending; ties by id, ascending (a total order: stable on every libc) */
static int by_p(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->p != y->p)
		return x->p < y->p ? 1 : -1;
	return x->id < y->id ? -1 : x->id > y->id;
}

NPLLAMA_API npllama_status_t npllama_sample(const float *logits, int vocab,
					    const npllama_sampling_t *s, uint64_t *rng,
					    int64_t *token)
{
	struct cand *c;
	double max = -INFINITY, sum = 0, keep = 0, r;
	int64_t best = 0, n;

	if (!logits || !token || vocab < 1)
		return npl_fail(NPLLAMA_ERR_INVALID, "npllama_sample: %s",
				vocab < 1 ? "the vocabulary is empty" : "logits or token is NULL");
	for (int i = 0; i < vocab; i++)
		if (logits[i] > logits[best] || (isnan(logits[best]) && !isnan(logits[i])))
			best = i;
	max = logits[best];
	if (!isfinite(max))
		return npl_fail(NPLLAMA_ERR_INVALID, "npllama_sample: the largest logit is %g: the "
				"model produced no finite logits", max);
	if (!s) {
		*token = best;
		return NPLLAMA_OK;
	}
	if (!(s->temperature > 0) || !isfinite(s->temperature) || !(s->top_p > 0) ||
	    !(s->top_p <= 1) || !rng)
		return npl_fail(NPLLAMA_ERR_INVALID, "npllama_sample: temperature %g and top_p %g; "
				"the temperature must be > 0 and top_p in (0, 1], with a generator "
				"state", s->temperature, s->top_p);
	for (size_t i = 0; i < sizeof(s->reserved) / sizeof(s->reserved[0]); i++)
		if (s->reserved[i])
			return npl_fail(NPLLAMA_ERR_INVALID, "npllama_sampling_t.reserved[%zu] must "
					"be 0", i);
	c = malloc(sizeof(*c) * (size_t)vocab);
	if (!c)
		return npl_fail(NPLLAMA_ERR_NO_MEMORY, "out of memory for sampling");
	for (int i = 0; i < vocab; i++) {
		c[i].id = i;
		c[i].p = isnan(logits[i]) ? 0 : exp(((double)logits[i] - max) / s->temperature);
		sum += c[i].p;
	}
	qsort(c, (size_t)vocab, sizeof(*c), by_p);
	for (n = 0; n < vocab && (n == 0 || keep < s->top_p * sum); n++)
		keep += c[n].p;
	r = (double)(splitmix64(rng) >> 11) * 0x1.0p-53 * keep;
	*token = c[n - 1].id;
	for (int64_t i = 0; i < n; i++) {
		if (r < c[i].p) {
			*token = c[i].id;
			break;
		}
		r -= c[i].p;
	}
	free(c);
	return NPLLAMA_OK;
}
