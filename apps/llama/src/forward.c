/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * forward.c - the decoder's forward pass over n new tokens of a sequence.
 *
 * Every projection is npt_linear over the shared weights, evaluated
 * straight into its destination: Q into the activation buffer, K and V into
 * the sequence's KV cache rows for the new positions (no copy afterwards),
 * then RoPE in place on Q and the new keys. Attention reads the cache
 * (kernels.c); the residual stream stays in x. Only the last token goes
 * through the final norm and the output projection.
 *
 * Tensor parallelism (split.c): the sizes are this rank's (its heads, KV
 * heads, FFN columns, output rows); o_proj and down_proj write partial sums
 * into the engine's shared buffer, which an AllReduce completes before the
 * residual add, and the logits are joined by an AllGather.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/*
 * y[n, out] = x[n, in] @ w^T, written into y: 4-bit weights through
 * npt_q4_linear_strided; a decode step's rows (n <= NPT_GEMV_MAX_ROWS) streaming the
 * weight once (npt_gemv_packed on its packed layout, npt_gemv_f32 on its
 * plain rows); more rows (a prefill) through npt_linear's GEMM.
 */
static npllama_status_t linear(const float *x, int n, int in, npl_proj_t *w, int out, float *y,
			       const char *what)
{
	int64_t xs[2] = { n, in }, ys[2] = { n, out };
	npt_tensor_t *xt = NULL, *yt = NULL, *lz = NULL;
	npt_status_t s;

	if (w->q4) {
		s = npt_q4_linear_strided(x, n, w->q4, w->q4_ld, out, in, y);
		return s ? npl_tensor_fail(s, what) : NPLLAMA_OK;
	}
	if (n <= NPT_GEMV_MAX_ROWS) {
		if (w->packed && w->gemv_packed) {
			s = npt_gemv_packed(x, n, w->tag, w->packed, w->packed_bytes, out, in, y);
			if (s != NPT_E_UNSUPPORTED)
				return s ? npl_tensor_fail(s, what) : NPLLAMA_OK;
			w->gemv_packed = 0;	/* not a layout it reads: npt_linear's */
		}
		if (!w->packed) {
			s = npt_gemv_f32(x, n, w->f32, w->ld, out, in, y);
			return s ? npl_tensor_fail(s, what) : NPLLAMA_OK;
		}
	}
	s = npt_tensor_from_data((void *)x, NPT_F32, 2, xs, NULL, NPT_BORROW_READONLY, NULL, NULL,
				 &xt);
	if (!s)
		s = npt_tensor_from_data(y, NPT_F32, 2, ys, NULL, 0, NULL, NULL, &yt);
	if (!s)
		s = npt_linear(xt, w->t, NULL, NPT_ACT_NONE, &lz);
	if (!s)
		s = npt_tensor_eval_into(lz, yt);
	npt_tensor_free(lz);
	npt_tensor_free(yt);
	npt_tensor_free(xt);
	return s ? npl_tensor_fail(s, what) : NPLLAMA_OK;
}

static npllama_status_t fit(struct npllama_seq *s, int n)
{
	const npllama_config_t *c = &s->e->cfg;
	const npl_split_t *sp = &s->e->sp;
	int64_t Q = (int64_t)sp->heads * c->head_dim;
	int64_t wide = Q > c->hidden ? Q : c->hidden;
	float **bufs[] = { &s->x, &s->h, &s->q, &s->att, &s->mid, &s->up };
	int64_t per[] = { c->hidden, wide, Q, Q, sp->ffn, sp->ffn };
	npllama_status_t st;

	if ((st = npl_split_reserve(s->e, n)))
		return st;
	if (n <= s->act_tokens)
		return NPLLAMA_OK;
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) {
		float *p = realloc(*bufs[i], sizeof(float) * (size_t)(per[i] * n));

		if (!p)
			return npl_fail(NPLLAMA_ERR_NO_MEMORY, "out of memory for the activations "
					"of %d tokens", n);
		*bufs[i] = p;
	}
	if (!s->scores) {
		s->scores = malloc(sizeof(float) * (size_t)s->capacity);
		if (!s->scores)
			return npl_fail(NPLLAMA_ERR_NO_MEMORY, "out of memory for the attention "
					"scores");
	}
	s->act_tokens = n;
	return NPLLAMA_OK;
}

static void attention(struct npllama_seq *s, const float *kc, const float *vc, int n)
{
	const npllama_config_t *c = &s->e->cfg;
	const npl_split_t *p = &s->e->sp;
	int d = c->head_dim, Q = p->heads * d, KVD = p->kv_heads * d;
	int group = c->heads / c->kv_heads;
	float scale = (float)(1.0 / sqrt((double)d));

	for (int i = 0; i < n; i++) {
		int len = s->len + i + 1;

		for (int h = 0; h < p->heads; h++) {
			int g = h / group;

			npl_attend(s->q + (int64_t)i * Q + (int64_t)h * d, kc + (int64_t)g * d,
				   vc + (int64_t)g * d, len, KVD, d, scale, s->scores,
				   s->att + (int64_t)i * Q + (int64_t)h * d);
		}
	}
}

/* x += the output @y of a projection whose partial sums the ranks complete */
static npllama_status_t residual(struct npllama_seq *s, const float *y, int n)
{
	struct npllama *e = s->e;
	int64_t count = (int64_t)n * e->cfg.hidden;
	npllama_status_t st;

	if (e->comm && (st = npl_split_allreduce(e, n)))
		return st;
	for (int64_t i = 0; i < count; i++)
		s->x[i] += y[i];
	return NPLLAMA_OK;
}

static npllama_status_t layer(struct npllama_seq *s, int l, int n)
{
	struct npllama *e = s->e;
	const npllama_config_t *c = &e->cfg;
	const npl_split_t *p = &e->sp;
	npl_layer_t *w = &e->w.layers[l];
	int H = c->hidden, d = c->head_dim, Q = p->heads * d, KVD = p->kv_heads * d;
	float *part = e->comm ? e->part : s->h;	/* where o_proj and down_proj write */
	float *kc = s->kv + (int64_t)l * 2 * s->capacity * KVD;
	float *vc = kc + (int64_t)s->capacity * KVD;
	float *knew = kc + (int64_t)s->len * KVD, *vnew = vc + (int64_t)s->len * KVD;
	npllama_status_t st;

	for (int i = 0; i < n; i++)
		npl_rmsnorm(s->x + (int64_t)i * H, w->ln1, H, c->rms_eps, s->h + (int64_t)i * H);
	if ((st = linear(s->h, n, H, &w->p[NPL_Q], Q, s->q, "q_proj")) ||
	    (st = linear(s->h, n, H, &w->p[NPL_K], KVD, knew, "k_proj")) ||
	    (st = linear(s->h, n, H, &w->p[NPL_V], KVD, vnew, "v_proj")))
		return st;
	for (int i = 0; i < n; i++) {
		npl_rope(s->q + (int64_t)i * Q, p->heads, d, s->len + i, e->inv_freq, c->rope_scale);
		npl_rope(knew + (int64_t)i * KVD, p->kv_heads, d, s->len + i, e->inv_freq,
			 c->rope_scale);
	}
	attention(s, kc, vc, n);
	if ((st = linear(s->att, n, Q, &w->p[NPL_O], H, part, "o_proj")) ||
	    (st = residual(s, part, n)))
		return st;
	for (int i = 0; i < n; i++)
		npl_rmsnorm(s->x + (int64_t)i * H, w->ln2, H, c->rms_eps, s->h + (int64_t)i * H);
	if ((st = linear(s->h, n, H, &w->p[NPL_GATE], p->ffn, s->mid, "gate_proj")) ||
	    (st = linear(s->h, n, H, &w->p[NPL_UP], p->ffn, s->up, "up_proj")))
		return st;
	npl_swiglu(s->mid, s->up, n * p->ffn);
	if ((st = linear(s->mid, n, p->ffn, &w->p[NPL_DOWN], H, part, "down_proj")) ||
	    (st = residual(s, part, n)))
		return st;
	return NPLLAMA_OK;
}

npllama_status_t npl_forward(struct npllama_seq *s, const int64_t *ids, int n, float *logits)
{
	struct npllama *e = s->e;
	const npllama_config_t *c = &e->cfg;
	int H = c->hidden;
	npllama_status_t st;

	if ((st = fit(s, n)))
		return st;
	for (int i = 0; i < n; i++)
		memcpy(s->x + (int64_t)i * H, e->w.embed + ids[i] * H, sizeof(float) * (size_t)H);
	for (int l = 0; l < c->layers; l++)
		if ((st = layer(s, l, n)))
			return st;
	s->len += n;
	if (!logits)
		return NPLLAMA_OK;
	npl_rmsnorm(s->x + (int64_t)(n - 1) * H, e->w.norm, H, c->rms_eps, s->h);
	if (!e->comm)
		return linear(s->h, 1, H, &e->w.head, c->vocab, logits, "lm_head");
	if (e->sp.vocab_rows > 0 &&
	    (st = linear(s->h, 1, H, &e->w.head, e->sp.vocab_rows,
			 e->gather + (int64_t)e->sp.rank * e->sp.vocab_chunk, "lm_head")))
		return st;
	return npl_split_logits(e, logits);
}
