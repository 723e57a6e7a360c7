/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * encoder.c - the forward pass: embeddings, L post-LayerNorm encoder layers,
 * pooler, all computed with libnptensor into the workspace.
 *
 * Per layer, with T = batch * seq_len tokens, this rank's hl heads of
 * head_dim d (width Hl = hl * d) and FFN width Fl:
 *   Q, K, V  = linear(x, W[qkv] slice, b slice)          [T, Hl]
 *   context  = attention(Q4, K4, V4, mask bias, 1/sqrt(d)) [B, S, hl, d] = [T, Hl]
 *   part     = linear(context, Wo column slice, bo on rank 0); AllReduce
 *   h1       = LayerNorm(part + x)                        (one pass: the sum is
 *                                                         LayerNorm's prologue)
 *   inter    = linear(h1, Wi slice, bi slice, GELU)       [T, Fl]
 *   part     = linear(inter, Wd column slice, bd on rank 0); AllReduce
 *   x        = LayerNorm(part + h1)
 * Q4/K4/V4 are [B, hl, S, d] permuted views of Q/K/V (no copy: the GEMMs
 * read them through their strides) and npt_attention writes the context
 * with the heads merged, so nothing is copied between the projections. The
 * mask bias is 0 for a token and the most negative float for padding, so a
 * masked key's weight is exactly 0.
 */
#include <float.h>
#include <string.h>
#include <time.h>

#include "internal.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* per-request views of the workspace and of the inputs */
typedef struct {
	npt_tensor_t *x2, *x3, *h1, *part2, *part3, *q2, *k2, *v2, *q4, *k4, *v4;
	npt_tensor_t *ctx4, *ctx2, *inter, *mask4;
	npt_tensor_t *ids, *types, *pos, *type0, *first, *pooled;
} views_t;

static void views_free(views_t *v)
{
	npt_tensor_t **t = (npt_tensor_t **)v;

	for (size_t i = 0; i < sizeof(*v) / sizeof(*t); i++)
		npt_tensor_free(t[i]);
}

/* evaluate src into dst and drop src */
static npbert_status_t into(npt_status_t built, npt_tensor_t *src, npt_tensor_t *dst,
			    const char *what)
{
	npt_status_t s = built;

	if (!s)
		s = npt_tensor_eval_into(src, dst);
	npt_tensor_free(src);
	return s ? npb_tensor_fail(s, what) : NPBERT_OK;
}

/* EVAL(op(..., &o_), dst, what): build the op, evaluate it into dst, free it */
#define EVAL(call, dst, what)                                                    \
	({                                                                       \
		npt_tensor_t *o_ = NULL;                                         \
		npt_status_t s_ = (call);                                        \
		into(s_, o_, (dst), (what));                                     \
	})

static npbert_status_t permuted(npt_tensor_t *flat, int64_t B, int64_t S, int64_t h, int64_t d,
				const int *perm, npt_tensor_t **out)
{
	int64_t shape[4] = { B, S, h, d };
	npt_tensor_t *r;
	npt_status_t s = npt_tensor_reshape(flat, 4, shape, &r);

	if (!s) {
		s = npt_tensor_permute(r, perm, out);
		npt_tensor_free(r);
	}
	return s ? npb_tensor_fail(s, "viewing heads") : NPBERT_OK;
}

static npbert_status_t make_views(struct npbert *e, const npbert_batch_t *b, float *pooled,
				  views_t *v)
{
	static const int bhsd[4] = { 0, 2, 1, 3 };
	int64_t B = b->batch, S = b->seq_len, T = B * S, H = e->cfg.hidden, hl = e->hl;
	int64_t d = e->cfg.head_dim, Hl = e->Hl, Fl = e->Fl;
	int64_t tH[2] = { T, H }, bsH[3] = { B, S, H }, tHl[2] = { T, Hl }, tFl[2] = { T, Fl };
	int64_t bssd[4] = { B, S, hl, d };
	int64_t b11s[4] = { B, 1, 1, S }, bs[2] = { B, S }, bH[2] = { B, H };
	npbert_status_t st;
	npt_status_t s;

	memset(v, 0, sizeof(*v));
	if ((st = npb_view(e, NPB_X, 2, tH, &v->x2)) || (st = npb_view(e, NPB_X, 3, bsH, &v->x3)) ||
	    (st = npb_view(e, NPB_H1, 2, tH, &v->h1)) ||
	    (st = npb_view(e, NPB_PART, 2, tH, &v->part2)) ||
	    (st = npb_view(e, NPB_PART, 3, bsH, &v->part3)) ||
	    (st = npb_view(e, NPB_Q, 2, tHl, &v->q2)) || (st = npb_view(e, NPB_K, 2, tHl, &v->k2)) ||
	    (st = npb_view(e, NPB_V, 2, tHl, &v->v2)) ||
	    (st = npb_view(e, NPB_CTX, 4, bssd, &v->ctx4)) ||
	    (st = npb_view(e, NPB_CTX, 2, tHl, &v->ctx2)) ||
	    (st = npb_view(e, NPB_INTER, 2, tFl, &v->inter)) ||
	    (st = npb_view(e, NPB_MASK, 4, b11s, &v->mask4)))
		return st;
	if ((st = permuted(v->q2, B, S, hl, d, bhsd, &v->q4)) ||
	    (st = permuted(v->k2, B, S, hl, d, bhsd, &v->k4)) ||
	    (st = permuted(v->v2, B, S, hl, d, bhsd, &v->v4)))
		return st;
	s = npt_tensor_from_data((void *)b->input_ids, NPT_I64, 2, bs, NULL, NPT_BORROW_READONLY,
				 NULL, NULL, &v->ids);
	if (!s && b->token_type_ids)
		s = npt_tensor_from_data((void *)b->token_type_ids, NPT_I64, 2, bs, NULL,
					 NPT_BORROW_READONLY, NULL, NULL, &v->types);
	if (!s)
		s = npt_tensor_slice(e->w.pos, 0, 0, S, 1, &v->pos);
	if (!s && !b->token_type_ids)
		s = npt_tensor_slice(e->w.type, 0, 0, 1, 1, &v->type0);
	if (s)
		return npb_tensor_fail(s, "viewing the inputs");
	if (pooled) {
		npt_tensor_t *col;

		s = npt_tensor_slice(v->x3, 1, 0, 1, 1, &col);
		if (!s) {
			s = npt_tensor_squeeze(col, 1, &v->first);
			npt_tensor_free(col);
		}
		if (!s)
			s = npt_tensor_from_data(pooled, NPT_F32, 2, bH, NULL, 0, NULL, NULL,
						 &v->pooled);
		if (s)
			return npb_tensor_fail(s, "viewing the pooler's input and output");
	}
	return NPBERT_OK;
}

static npbert_status_t allreduce(struct npbert *e, int64_t count)
{
	double t0 = now();
	npccl_status_t cs;

	if (!e->comm)
		return NPBERT_OK;
	cs = npccl_allreduce(e->ws.data[NPB_PART], e->ws.data[NPB_PART], (size_t)count,
			     NPCCL_FLOAT32, NPCCL_SUM, e->comm);
	e->prof.allreduce += now() - t0;
	if (cs)
		return npb_fail(NPBERT_ERR_COMM, "AllReduce of the dense layers' partial outputs "
				"(rank %d of %d) failed: %s", e->rank, e->nranks,
				npccl_comm_last_error(e->comm));
	return NPBERT_OK;
}

static npbert_status_t embed(struct npbert *e, views_t *v)
{
	npt_tensor_t *a = NULL, *sum = NULL;
	npbert_status_t st;
	npt_status_t s;

	if ((st = EVAL(npt_take(e->w.word, v->ids, 0, &o_), v->x3, "word embeddings")))
		return st;
	if (v->types) {
		if ((st = EVAL(npt_take(e->w.type, v->types, 0, &o_), v->part3,
			       "token type embeddings")))
			return st;
		s = npt_add(v->x3, v->part3, &sum);
	} else {
		s = npt_add(v->x3, v->type0, &sum);
	}
	if (!s) {
		s = npt_add(sum, v->pos, &a);
		npt_tensor_free(sum);
	}
	if ((st = into(s, a, v->part3, "embedding sum")))
		return st;
	return EVAL(npt_layernorm(v->part3, -1, e->w.eln_w, e->w.eln_b, e->cfg.layer_norm_eps,
				  &o_), v->x3, "embedding LayerNorm");
}

static npbert_status_t attention(struct npbert *e, const npb_layer_t *w, views_t *v)
{
	npbert_status_t st;
	double t0 = now(), t1;

	if ((st = EVAL(npt_linear(v->x2, w->q_w, w->q_b, NPT_ACT_NONE, &o_), v->q2, "query")) ||
	    (st = EVAL(npt_linear(v->x2, w->k_w, w->k_b, NPT_ACT_NONE, &o_), v->k2, "key")) ||
	    (st = EVAL(npt_linear(v->x2, w->v_w, w->v_b, NPT_ACT_NONE, &o_), v->v2, "value")))
		return st;
	t1 = now();
	e->prof.matmul += t1 - t0;
	if ((st = EVAL(npt_attention(v->q4, v->k4, v->v4, v->mask4, e->scale, NPT_ATTN_HEADS_LAST,
				     &o_), v->ctx4, "attention")))
		return st;
	t0 = now();
	e->prof.attention += t0 - t1;
	st = EVAL(npt_linear(v->ctx2, w->o_w, w->o_b, NPT_ACT_NONE, &o_), v->part2,
		  "attention output");
	e->prof.matmul += now() - t0;
	return st;
}

/* out = LayerNorm(part + resid) in one pass: the sum is layernorm's prologue,
 * computed row by row in its kernel (the dense layer's bias was its GEMM's
 * post-op), never stored */
static npbert_status_t add_norm(struct npbert *e, views_t *v, npt_tensor_t *resid,
				npt_tensor_t *g, npt_tensor_t *bias, npt_tensor_t *out)
{
	npt_tensor_t *sum = NULL;
	npt_status_t s = npt_add(v->part2, resid, &sum);
	npbert_status_t st;
	double t0 = now();

	st = EVAL(s ? s : npt_layernorm(sum, -1, g, bias, e->cfg.layer_norm_eps, &o_), out,
		  "residual + LayerNorm");
	npt_tensor_free(sum);
	e->prof.elementwise += now() - t0;
	return st;
}

static npbert_status_t ffn(struct npbert *e, const npb_layer_t *w, views_t *v)
{
	npbert_status_t st;
	double t0 = now();

	if (!(st = EVAL(npt_linear(v->h1, w->i_w, w->i_b, NPT_ACT_GELU, &o_), v->inter,
			"intermediate dense + GELU")))
		st = EVAL(npt_linear(v->inter, w->d_w, w->d_b, NPT_ACT_NONE, &o_), v->part2,
			  "output dense");
	e->prof.matmul += now() - t0;
	return st;
}

npbert_status_t npb_encode(struct npbert *e, const npbert_batch_t *b, float *hidden, float *pooled)
{
	int64_t B = b->batch, S = b->seq_len, T = B * S, H = e->cfg.hidden;
	npbert_status_t st;
	views_t v;
	double t0 = now(), t1;
	float *mb = e->ws.data[NPB_MASK];

	if ((st = make_views(e, b, pooled, &v)))
		goto out;
	for (int64_t i = 0; i < T; i++)
		mb[i] = (!b->attention_mask || b->attention_mask[i]) ? 0.0f : -FLT_MAX;
	if ((st = embed(e, &v)))
		goto out;
	t1 = now();
	e->prof.embed += t1 - t0;
	for (int l = 0; l < e->cfg.layers; l++) {
		const npb_layer_t *w = &e->w.layers[l];

		if ((st = attention(e, w, &v)) || (st = allreduce(e, T * H)) ||
		    (st = add_norm(e, &v, v.x2, w->ln1_w, w->ln1_b, v.h1)) || (st = ffn(e, w, &v)) ||
		    (st = allreduce(e, T * H)) ||
		    (st = add_norm(e, &v, v.h1, w->ln2_w, w->ln2_b, v.x2)))
			goto out;
	}
	if (pooled) {
		double t2 = now();

		st = EVAL(npt_linear(v.first, e->w.pool_w, e->w.pool_b, NPT_ACT_TANH, &o_), v.pooled,
			  "pooler");
		e->prof.matmul += now() - t2;
		if (st)
			goto out;
	}
	if (hidden)
		memcpy(hidden, e->ws.data[NPB_X], (size_t)(T * H) * sizeof(float));
out:
	views_free(&v);
	return st;
}
