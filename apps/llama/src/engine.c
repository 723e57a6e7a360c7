/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * engine.c - libnpllama's public entry points for engines and sequences:
 * create (layout, this rank's part, weight views, RoPE table, the npushm
 * device for the KV caches), sequences (a KV cache region each), feed
 * (checks, then the forward pass, timed for the profile), destroy.
 *
 * Lifetime: an engine destroyed while sequences live releases what is shared
 * between the ranks then (npllama_destroy is the collective call) and the
 * rest when its last sequence is destroyed; those sequences refuse every
 * other call (npl_seq_usable).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

static npllama_status_t check_opts(const npllama_opts_t *o)
{
	if (!o)
		return NPLLAMA_OK;
	if (o->flags)
		return npl_fail(NPLLAMA_ERR_INVALID, "npllama_opts_t.flags is 0x%x; no flag is "
				"defined yet: pass 0", o->flags);
	for (size_t i = 0; i < sizeof(o->reserved) / sizeof(o->reserved[0]); i++)
		if (o->reserved[i])
			return npl_fail(NPLLAMA_ERR_INVALID, "npllama_opts_t.reserved[%zu] must be 0",
					i);
	return NPLLAMA_OK;
}

NPLLAMA_API npllama_status_t npllama_create(npushm_model_t *model, const npllama_opts_t *opts,
					    npllama_t **out)
{
	return npllama_create_tp(model, opts, NULL, out);
}

NPLLAMA_API npllama_status_t npllama_create_tp(npushm_model_t *model, const npllama_opts_t *opts,
					       npccl_comm_t comm, npllama_t **out)
{
	npushm_model_info_t info;
	struct npllama *e;
	npllama_status_t st;
	int half;

	if (!out)
		return npl_fail(NPLLAMA_ERR_INVALID, "npllama_create: out is NULL");
	*out = NULL;
	if (!model)
		return npl_fail(NPLLAMA_ERR_INVALID, "npllama_create: the model is NULL (attach one "
				"with npushm_model_attach)");
	if ((st = check_opts(opts)))
		return st;
	e = calloc(1, sizeof(*e));
	if (!e)
		return npl_fail(NPLLAMA_ERR_NO_MEMORY, "out of memory for the engine");
	npushm_model_info(model, &info);
	memcpy(e->hash, info.hash, sizeof(e->hash));
	memcpy(e->hash_hex, info.hash_hex, sizeof(e->hash_hex));
	e->model_uid = npushm_model_owner_uid(model);
	st = npl_layout_read(model, &e->layout);
	e->cfg = e->layout.cfg;
	if (st || (st = npl_split_make(&e->cfg, comm, &e->sp)))
		goto out_free;
	e->comm = e->sp.nranks > 1 ? comm : NULL;
	if ((st = npl_weights_make(model, e, &e->w)) || (st = npl_split_reserve(e, 1)))
		goto out_free;
	half = e->cfg.head_dim / 2;
	e->inv_freq = malloc(sizeof(float) * (size_t)half);
	if (!e->inv_freq) {
		st = npl_fail(NPLLAMA_ERR_NO_MEMORY, "out of memory for the RoPE table");
		goto out_free;
	}
	for (int i = 0; i < half; i++)
		e->inv_freq[i] = (float)(1.0 / pow(e->cfg.rope_theta,
						   (double)(2 * i) / e->cfg.head_dim));
	if (npushm_dev_open(NPUSHM_BACKEND_AUTO, &e->dev) != NPUSHM_OK) {
		st = npl_fail(NPLLAMA_ERR_REGION, "cannot open the npushm device for the KV "
			      "caches: %s", npushm_last_error());
		goto out_free;
	}
	*out = e;
	return NPLLAMA_OK;
out_free:
	npllama_destroy(e);
	return st;
}

static void engine_free(struct npllama *e)
{
	npushm_dev_close(e->dev);
	free(e->inv_freq);
	npl_weights_free(&e->w, e->cfg.layers);
	free(e->layout.layers);
	free(e);
}

NPLLAMA_API void npllama_destroy(npllama_t *e)
{
	if (!e || e->destroyed)
		return;
	npl_split_free(e);
	if (e->nseqs) {
		e->destroyed = 1;	/* the last sequence frees the rest */
		return;
	}
	engine_free(e);
}

npllama_status_t npl_seq_usable(const struct npllama_seq *s, const char *fn)
{
	if (!s)
		return npl_fail(NPLLAMA_ERR_INVALID, "%s: the sequence is NULL", fn);
	if (s->e->destroyed)
		return npl_fail(NPLLAMA_ERR_INVALID, "%s: the sequence's engine was destroyed; "
				"destroy its sequences before the engine", fn);
	return NPLLAMA_OK;
}

NPLLAMA_API void npllama_get_config(const npllama_t *e, npllama_config_t *c)
{
	if (c && e)
		*c = e->cfg;
	else if (c)
		memset(c, 0, sizeof(*c));
}

NPLLAMA_API void npllama_get_rank(const npllama_t *e, int *rank, int *nranks)
{
	if (rank)
		*rank = e ? e->sp.rank : 0;
	if (nranks)
		*nranks = e ? e->sp.nranks : 1;
}

NPLLAMA_API void npllama_get_profile(const npllama_t *e, npllama_profile_t *p)
{
	if (p && e)
		*p = e->prof;
	else if (p)
		memset(p, 0, sizeof(*p));
}

NPLLAMA_API void npllama_reset_profile(npllama_t *e)
{
	if (e)
		memset(&e->prof, 0, sizeof(e->prof));
}

NPLLAMA_API const char *npllama_packed_weights(const npllama_t *e, int *used, int *total)
{
	if (used)
		*used = e ? e->w.packed_used : 0;
	if (total)
		*total = e ? e->w.packed_total : 0;
	return e && e->w.packed_used < e->w.packed_total ? e->w.packed_why : NULL;
}

NPLLAMA_API uint64_t npllama_weight_bytes(const npllama_t *e)
{
	return e ? e->w.step_bytes : 0;
}

NPLLAMA_API npllama_status_t npllama_seq_create(npllama_t *e, int capacity, npllama_seq_t **out)
{
	struct npllama_seq *s;
	npllama_status_t st;
	uint64_t per_token;
	void *map;

	if (!out)
		return npl_fail(NPLLAMA_ERR_INVALID, "npllama_seq_create: out is NULL");
	*out = NULL;
	if (!e)
		return npl_fail(NPLLAMA_ERR_INVALID, "npllama_seq_create: the engine is NULL");
	if (capacity < 0)
		return npl_fail(NPLLAMA_ERR_INVALID, "npllama_seq_create: capacity is %d; pass 0 "
				"(the model's context, %d) or the tokens the sequence must hold",
				capacity, e->cfg.context);
	if (capacity > e->cfg.context)
		return npl_fail(NPLLAMA_ERR_CONTEXT, "a sequence of %d tokens does not fit the "
				"model's context of %d positions (max_position_embeddings)",
				capacity, e->cfg.context);
	s = calloc(1, sizeof(*s));
	if (!s)
		return npl_fail(NPLLAMA_ERR_NO_MEMORY, "out of memory for the sequence");
	s->e = e;
	s->capacity = capacity ? capacity : e->cfg.context;
	per_token = 2ull * (uint64_t)e->cfg.layers * (uint64_t)e->sp.kv_heads *
		    (uint64_t)e->cfg.head_dim * sizeof(float);
	s->kv_bytes = per_token * (uint64_t)s->capacity;
	s->ids = malloc(sizeof(*s->ids) * (size_t)s->capacity);
	if (!s->ids) {
		st = npl_fail(NPLLAMA_ERR_NO_MEMORY, "out of memory for the sequence");
		goto out_free;
	}
	if (npushm_region_alloc(e->dev, s->kv_bytes, NPUSHM_ALLOC_LAZY, &s->region) != NPUSHM_OK) {
		st = npl_fail(NPLLAMA_ERR_REGION, "cannot allocate the KV cache of %d tokens (%llu "
			      "bytes): %s", s->capacity, (unsigned long long)s->kv_bytes,
			      npushm_last_error());
		goto out_free;
	}
	if (npushm_region_map(s->region, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, &map) !=
	    NPUSHM_OK) {
		st = npl_fail(NPLLAMA_ERR_REGION, "cannot map the KV cache region: %s",
			      npushm_last_error());
		goto out_close;
	}
	s->kv = map;
	e->nseqs++;
	*out = s;
	return NPLLAMA_OK;
out_close:
	npushm_region_close(s->region);
out_free:
	free(s->ids);
	free(s);
	return st;
}

NPLLAMA_API void npllama_seq_destroy(npllama_seq_t *s)
{
	struct npllama *e;

	if (!s)
		return;
	e = s->e;
	npushm_region_unmap(s->region, s->kv);
	npushm_region_close(s->region);
	if (!--e->nseqs && e->destroyed)
		engine_free(e);
	free(s->x);
	free(s->h);
	free(s->q);
	free(s->att);
	free(s->mid);
	free(s->up);
	free(s->scores);
	free(s->ids);
	free(s);
}

NPLLAMA_API void npllama_seq_reset(npllama_seq_t *s)
{
	if (s)
		s->len = s->untrusted = 0;
}

NPLLAMA_API int npllama_seq_len(const npllama_seq_t *s)
{
	return s ? s->len : 0;
}

NPLLAMA_API uint64_t npllama_seq_kv_bytes(const npllama_seq_t *s)
{
	return s ? s->kv_bytes : 0;
}

NPLLAMA_API npllama_status_t npllama_seq_feed(npllama_seq_t *s, const int64_t *ids, int n,
					      float *logits)
{
	npllama_status_t st;

	if ((st = npl_seq_usable(s, "npllama_seq_feed")))
		return st;
	if (!ids)
		return npl_fail(NPLLAMA_ERR_INVALID, "npllama_seq_feed: ids is NULL");
	if (n < 1)
		return npl_fail(NPLLAMA_ERR_INPUT, "npllama_seq_feed: %d tokens; feed at least one",
				n);
	/* before the ids are read: n past the capacity may be past the caller's array */
	if (n > s->capacity - s->len)
		return npl_fail(NPLLAMA_ERR_CONTEXT, "%d more tokens after %d need %lld positions "
				"but the sequence holds %d (the model's context is %d)", n, s->len,
				(long long)s->len + n, s->capacity, s->e->cfg.context);
	for (int i = 0; i < n; i++)
		if (ids[i] < 0 || ids[i] >= s->e->cfg.vocab)
			return npl_fail(NPLLAMA_ERR_INPUT, "token %d of %d is id %lld, outside the "
					"vocabulary 0..%d", i, n, (long long)ids[i],
					s->e->cfg.vocab - 1);
	struct timespec t0, t1;

	memcpy(s->ids + s->len, ids, sizeof(*ids) * (size_t)n);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	st = npl_forward(s, ids, n, logits);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s->e->prof.feed += (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	s->e->prof.feeds++;
	s->e->prof.tokens += (uint64_t)n;
	return st;
}
