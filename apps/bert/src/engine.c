/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * engine.c - libnpbert's public entry points: create (layout, split,
 * weight views), run (batch check, workspace, forward pass, accounting),
 * reserve, the configuration, memory and profile queries, destroy.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static npbert_status_t check_opts(const npbert_opts_t *o)
{
	if (!o)
		return NPBERT_OK;
	if (o->flags & ~(uint32_t)(NPBERT_EPS_GIVEN | NPBERT_NO_WEIGHT_CHECK))
		return npb_fail(NPBERT_ERR_INVALID, "npbert_opts_t.flags 0x%x has unknown bits (known: "
				"NPBERT_EPS_GIVEN, NPBERT_NO_WEIGHT_CHECK)", o->flags);
	for (size_t i = 0; i < sizeof(o->reserved) / sizeof(o->reserved[0]); i++)
		if (o->reserved[i])
			return npb_fail(NPBERT_ERR_INVALID, "npbert_opts_t.reserved[%zu] must be 0",
					i);
	if (o->heads < 0)
		return npb_fail(NPBERT_ERR_INVALID, "npbert_opts_t.heads is %d; use 0 (from the "
				"model) or a positive head count", o->heads);
	return NPBERT_OK;
}

static npbert_status_t split(struct npbert *e)
{
	npbert_config_t *c = &e->cfg;
	int n = e->nranks;

	if (c->heads % n)
		return npb_fail(NPBERT_ERR_SPLIT, "tensor parallelism over %d ranks: the %d attention "
				"heads do not divide by %d (each rank computes whole heads); use a "
				"rank count that divides %d", n, c->heads, n, c->heads);
	if (c->ffn % n)
		return npb_fail(NPBERT_ERR_SPLIT, "tensor parallelism over %d ranks: the FFN width %d "
				"(rows of %sencoder.layer.0.intermediate.dense.weight) does not "
				"divide by %d; use a rank count that divides both %d and %d", n,
				c->ffn, c->prefix, n, c->heads, c->ffn);
	e->hl = c->heads / n;
	e->Hl = e->hl * c->head_dim;
	e->Fl = c->ffn / n;
	return NPBERT_OK;
}

NPBERT_API npbert_status_t npbert_create(npushm_model_t *model, const npbert_opts_t *opts,
					 npbert_t **out)
{
	struct npbert *e;
	npbert_status_t st;

	if (!out)
		return npb_fail(NPBERT_ERR_INVALID, "npbert_create: out is NULL");
	*out = NULL;
	if (!model)
		return npb_fail(NPBERT_ERR_INVALID, "npbert_create: the model is NULL (attach one "
				"with npushm_model_attach)");
	if ((st = check_opts(opts)))
		return st;
	npushm_model_accept_packed_only(model);	/* weights.c reads them through their layouts */
	if (!(e = calloc(1, sizeof(*e))))
		return npb_fail(NPBERT_ERR_NO_MEMORY, "out of memory for the engine");
	e->nranks = 1;
	if (opts && opts->comm) {
		if (npccl_comm_rank(opts->comm, &e->rank) || npccl_comm_size(opts->comm, &e->nranks)) {
			free(e);
			return npb_fail(NPBERT_ERR_INVALID, "npbert_create: the communicator is not "
					"usable: %s", npccl_comm_last_error(opts->comm));
		}
		e->comm = e->nranks > 1 ? opts->comm : NULL;
	}
	if ((st = npb_layout_read(model, opts, &e->layout))) {
		free(e);
		return st;
	}
	e->cfg = e->layout.cfg;
	e->cfg.tp_rank = e->rank;
	e->cfg.tp_size = e->nranks;
	e->layout.cfg = e->cfg;
	if ((st = split(e)) ||
	    (st = npb_weights_make(model, &e->layout,
				   !(opts && (opts->flags & NPBERT_NO_WEIGHT_CHECK)), &e->w)))
		goto fail;
	e->scale = 1.0 / sqrt((double)e->cfg.head_dim);
	e->mem.weight_bytes = e->w.bytes - e->w.private_bytes;
	*out = e;
	return NPBERT_OK;
fail:
	npbert_destroy(e);
	return st;
}

NPBERT_API void npbert_destroy(npbert_t *e)
{
	if (!e)
		return;
	npb_workspace_free(e);
	npb_weights_free(&e->w, e->cfg.layers);
	free(e->layout.layers);
	free(e);
}

NPBERT_API void npbert_get_config(const npbert_t *e, npbert_config_t *c)
{
	if (!c)
		return;
	if (!e) {
		memset(c, 0, sizeof(*c));
		c->prefix = "";
		return;
	}
	*c = e->cfg;
	c->prefix = e->layout.prefix;
}

NPBERT_API npbert_status_t npbert_reserve(npbert_t *e, int batch, int seq_len)
{
	npbert_status_t st;

	if (!e)
		return npb_fail(NPBERT_ERR_INVALID, "npbert_reserve: the engine is NULL");
	if (batch <= 0 || seq_len <= 0 || seq_len > e->cfg.positions)
		return npb_fail(NPBERT_ERR_INVALID, "npbert_reserve: %d x %d tokens; batch must be "
				">= 1 and seq_len 1..%d", batch, seq_len, e->cfg.positions);
	if ((int64_t)batch * seq_len > INT32_MAX)
		return npb_fail(NPBERT_ERR_INVALID, "npbert_reserve: %d x %d tokens is too large: "
				"at most %d tokens per call", batch, seq_len, INT32_MAX);
	st = npb_workspace_fit(e, batch, seq_len);
	e->mem.workspace_bytes = e->ws.bytes;
	e->mem.shared_workspace_bytes = e->ws.shared_bytes;
	e->mem.capacity_tokens = e->ws.tokens;
	return st;
}

NPBERT_API npbert_status_t npbert_run(npbert_t *e, const npbert_batch_t *b, float *hidden,
				      float *pooled)
{
	npt_stats_t s0, s1;
	npbert_status_t st;
	double t0 = now();

	if (!e)
		return npb_fail(NPBERT_ERR_INVALID, "npbert_run: the engine is NULL");
	if ((st = npb_batch_check(&e->cfg, b)))
		return st;
	if (pooled && !e->cfg.has_pooler)
		return npb_fail(NPBERT_ERR_UNSUPPORTED, "this model has no pooler (no tensor "
				"'%spooler.dense.weight'): ask for the last hidden state only "
				"(pooled = NULL)", e->layout.prefix);
	npt_stats_get(&s0);
	if ((st = npbert_reserve(e, b->batch, b->seq_len)))
		return st;
	st = npb_encode(e, b, hidden, pooled);
	npt_stats_get(&s1);
	e->mem.fresh_bytes = s1.os_bytes - s0.os_bytes;
	e->mem.copied_bytes = s1.materialized_bytes - s0.materialized_bytes;
	if (!st) {
		e->prof.runs++;
		e->prof.sequences += (uint64_t)b->batch;
		e->prof.tokens += (uint64_t)b->batch * (uint64_t)b->seq_len;
		e->prof.total += now() - t0;
	}
	return st;
}

NPBERT_API void npbert_get_memory(const npbert_t *e, npbert_memory_t *m)
{
	if (m && e)
		*m = e->mem;
	else if (m)
		memset(m, 0, sizeof(*m));
}

NPBERT_API const char *npbert_packed_weights(const npbert_t *e, int *used, int *total)
{
	if (used)
		*used = e ? e->w.packed_used : 0;
	if (total)
		*total = e ? e->w.packed_total : 0;
	return e && e->w.packed_used < e->w.packed_total ? e->w.packed_why : NULL;
}

NPBERT_API void npbert_get_profile(const npbert_t *e, npbert_profile_t *p)
{
	if (p && e)
		*p = e->prof;
	else if (p)
		memset(p, 0, sizeof(*p));
}

NPBERT_API void npbert_reset_profile(npbert_t *e)
{
	if (e)
		memset(&e->prof, 0, sizeof(e->prof));
}
