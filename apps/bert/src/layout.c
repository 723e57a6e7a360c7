/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * layout.c - check an attached model against the BERT layout and derive the
 * configuration from its tensor shapes.
 *
 * Names are Hugging Face BertModel's, all with the same optional "bert."
 * prefix. Every tensor the encoder reads must exist, be F32 and have the
 * shape the others imply (hidden H from the word embeddings, FFN width F from
 * layer 0); layers are encoder.layer.0 .. L-1 with no gap. The pooler is
 * optional (checkpoints of BertForMaskedLM have none). Tensors the encoder
 * does not read (cls.*, embeddings.position_ids) are ignored. Every refusal
 * is NPBERT_ERR_LAYOUT naming the tensor; heads/eps problems are INVALID.
 */
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define ANY (-1)

static const char *shape_str(char *buf, size_t len, uint32_t nd, const int64_t *s)
{
	size_t o = 0;

	o += (size_t)snprintf(buf + o, len - o, "[");
	for (uint32_t i = 0; i < nd && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? ", " : "", (long long)s[i]);
	if (o < len)
		snprintf(buf + o, len - o, "]");
	return buf;
}

/* the name of axis @i in @what ("vocabulary x hidden" -> "vocabulary", "hidden") */
static void axis_name(const char *what, uint32_t i, char *buf, size_t len)
{
	const char *s = what, *x;

	while (i-- && (x = strstr(s, " x ")))
		s = x + 3;
	x = strstr(s, " x ");
	snprintf(buf, len, "%.*s", (int)(x ? (size_t)(x - s) : strcspn(s, ",(")), s);
}

/*
 * Find prefix+name, F32, ndim dims matching d0/d1 (ANY: anything >= 1).
 * `what` names the dims for the message ("vocabulary x hidden"); an ANY
 * dim is shown as N (M for the second) with the known ones in numbers.
 */
static npbert_status_t need(npushm_model_t *m, const char *prefix, const char *name, uint32_t ndim,
			    int64_t d0, int64_t d1, const char *what, npushm_tensor_t *t)
{
	char full[256], got[96], want[128], axis[64];
	int64_t w[2] = { d0, d1 };
	size_t o = 0;

	snprintf(full, sizeof(full), "%s%s", prefix, name);
	o += (size_t)snprintf(want, sizeof(want), "[");
	for (uint32_t i = 0; i < ndim; i++)
		o += w[i] == ANY ? (size_t)snprintf(want + o, sizeof(want) - o, "%s%s", i ? ", " : "",
						    i ? "M" : "N")
				 : (size_t)snprintf(want + o, sizeof(want) - o, "%s%lld", i ? ", " : "",
						    (long long)w[i]);
	snprintf(want + o, sizeof(want) - o, "]%s", d0 != ANY ? "" :
		 ndim > 1 && d1 == ANY ? " with N, M >= 1" : " with N >= 1");
	if (npushm_model_tensor_find(m, full, t) != NPUSHM_OK)
		return npb_fail(NPBERT_ERR_LAYOUT, "not a BERT layout: the model has no tensor '%s' "
				"(expected shape %s: %s)", full, want, what);
	if (t->dtype != NPUSHM_DTYPE_F32)
		return npb_fail(NPBERT_ERR_LAYOUT, "tensor '%s' is %s; this engine computes in F32: "
				"convert the checkpoint to float32", full,
				npushm_dtype_name(t->dtype));
	shape_str(got, sizeof(got), t->ndim, t->shape);
	if (t->ndim != ndim)
		return npb_fail(NPBERT_ERR_LAYOUT, "not a BERT layout: tensor '%s' has shape %s, "
				"expected %s (%s)", full, got, want, what);
	for (uint32_t i = 0; i < ndim; i++) {
		if (t->shape[i] >= 1)
			continue;
		axis_name(what, i, axis, sizeof(axis));
		return npb_fail(NPBERT_ERR_LAYOUT, "not a BERT layout: tensor '%s' has shape %s: "
				"its %s size is 0; a BERT model needs at least 1 (expected %s: "
				"%s)", full, got, axis, want, what);
	}
	for (uint32_t i = 0; i < ndim; i++)
		if (t->shape[i] > INT_MAX || (w[i] != ANY && t->shape[i] != w[i]))
			return npb_fail(NPBERT_ERR_LAYOUT, "not a BERT layout: tensor '%s' has shape "
					"%s, expected %s (%s)", full, got, want, what);
	return NPBERT_OK;
}

/* axis @axis of tensor prefix+name if it exists with @ndim dims, else 0 */
static int64_t dim_of(npushm_model_t *m, const char *prefix, const char *name, uint32_t ndim,
		      uint32_t axis)
{
	char full[256];
	npushm_tensor_t t;

	snprintf(full, sizeof(full), "%s%s", prefix, name);
	if (npushm_model_tensor_find(m, full, &t) != NPUSHM_OK || t.ndim != ndim)
		return 0;
	return t.shape[axis];
}

/* the value most of @v agree on (the first of the most frequent); 0s do not vote */
static int64_t majority(const int64_t *v, int n)
{
	int64_t best = v[0];
	int best_n = 0;

	for (int i = 0; i < n; i++) {
		int k = 0;

		for (int j = 0; j < n; j++)
			k += v[i] && v[j] == v[i];
		if (k > best_n) {
			best_n = k;
			best = v[i];
		}
	}
	return best;
}

static int has(npushm_model_t *m, const char *prefix, const char *name)
{
	char full[256];
	npushm_tensor_t t;

	snprintf(full, sizeof(full), "%s%s", prefix, name);
	return npushm_model_tensor_find(m, full, &t) == NPUSHM_OK;
}

/* a number from __metadata__ (safetensors stores strings; accept numbers too) */
static int meta_number(json_object *meta, const char *key, double *out)
{
	json_object *v;
	const char *s;
	char *end;

	if (!meta || !json_object_object_get_ex(meta, key, &v))
		return 0;
	if (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)) {
		*out = json_object_get_double(v);
		return 1;
	}
	if (!json_object_is_type(v, json_type_string))
		return -1;
	s = json_object_get_string(v);
	errno = 0;
	*out = strtod(s, &end);
	return (errno || end == s || *end) ? -1 : 1;
}

static npbert_status_t layer_tensors(npushm_model_t *m, const char *p, int l, int64_t H, int64_t F,
				     npb_layer_src_t *t)
{
	static const char *const hh = "hidden x hidden, the stored [out, in] of a dense layer";
	char n[160];
	npbert_status_t st = NPBERT_OK;

#define NEED(field, suffix, nd, a, b, what)                                              \
	do {                                                                             \
		snprintf(n, sizeof(n), "encoder.layer.%d.%s", l, suffix);                \
		if (!st)                                                                 \
			st = need(m, p, n, nd, a, b, what, &t->field);                   \
	} while (0)
	NEED(q_w, "attention.self.query.weight", 2, H, H, hh);
	NEED(q_b, "attention.self.query.bias", 1, H, 0, "hidden");
	NEED(k_w, "attention.self.key.weight", 2, H, H, hh);
	NEED(k_b, "attention.self.key.bias", 1, H, 0, "hidden");
	NEED(v_w, "attention.self.value.weight", 2, H, H, hh);
	NEED(v_b, "attention.self.value.bias", 1, H, 0, "hidden");
	NEED(o_w, "attention.output.dense.weight", 2, H, H, hh);
	NEED(o_b, "attention.output.dense.bias", 1, H, 0, "hidden");
	NEED(ln1_w, "attention.output.LayerNorm.weight", 1, H, 0, "hidden");
	NEED(ln1_b, "attention.output.LayerNorm.bias", 1, H, 0, "hidden");
	NEED(i_w, "intermediate.dense.weight", 2, F, H,
	     "intermediate size x hidden, the intermediate size as in encoder.layer.0");
	NEED(i_b, "intermediate.dense.bias", 1, F, 0, "intermediate size");
	NEED(d_w, "output.dense.weight", 2, H, F, "hidden x intermediate size");
	NEED(d_b, "output.dense.bias", 1, H, 0, "hidden");
	NEED(ln2_w, "output.LayerNorm.weight", 1, H, 0, "hidden");
	NEED(ln2_b, "output.LayerNorm.bias", 1, H, 0, "hidden");
#undef NEED
	return st;
}

/* every encoder.layer.N.* tensor must have N < layers */
static npbert_status_t no_stray_layers(npushm_model_t *m, const char *p, int layers)
{
	size_t n = npushm_model_tensor_count(m), plen = strlen(p);
	static const char lay[] = "encoder.layer.";

	for (size_t i = 0; i < n; i++) {
		npushm_tensor_t t;
		const char *s;
		char *end;
		long idx;

		if (npushm_model_tensor_at(m, i, &t) != NPUSHM_OK)
			continue;
		if (strncmp(t.name, p, plen) || strncmp(t.name + plen, lay, sizeof(lay) - 1))
			continue;
		s = t.name + plen + sizeof(lay) - 1;
		errno = 0;
		idx = strtol(s, &end, 10);
		if (end == s || *end != '.' || errno || idx >= layers)
			return npb_fail(NPBERT_ERR_LAYOUT, "not a BERT layout: tensor '%s' does not "
					"belong to encoder layers 0..%d (the model has no "
					"'%sencoder.layer.%d.attention.self.query.weight'; layers "
					"must be numbered from 0 without gaps)", t.name, layers - 1, p,
					layers);
	}
	return NPBERT_OK;
}

static npbert_status_t heads_and_eps(npushm_model_t *m, const npbert_opts_t *o, npbert_config_t *c)
{
	npushm_model_info_t info;
	json_object *meta = NULL;
	double v;
	int r;

	npushm_model_info(m, &info);
	if (info.metadata_json)
		meta = json_tokener_parse(info.metadata_json);
	c->heads = o ? o->heads : 0;
	if (!c->heads) {
		r = meta_number(meta, "num_attention_heads", &v);
		if (r == 0)
			r = meta_number(meta, "heads", &v);
		if (r < 0 || (r > 0 && (v < 1 || v > c->hidden || v != floor(v)))) {
			json_object_put(meta);
			return npb_fail(NPBERT_ERR_INVALID, "the model's __metadata__ has a number of "
					"attention heads that is not an integer in 1..%d; pass the "
					"head count explicitly (npbert_opts_t.heads, --heads)",
					c->hidden);
		}
		c->heads = r > 0 ? (int)v : (c->hidden % 64 == 0 ? c->hidden / 64 : 0);
		if (!c->heads) {
			json_object_put(meta);
			return npb_fail(NPBERT_ERR_INVALID, "cannot tell the number of attention "
					"heads: the model's __metadata__ has no num_attention_heads "
					"and hidden size %d is no multiple of 64; pass it "
					"(npbert_opts_t.heads, --heads)", c->hidden);
		}
	}
	if (c->heads < 1 || c->hidden % c->heads) {
		json_object_put(meta);
		return npb_fail(NPBERT_ERR_INVALID, "%d attention heads do not divide the hidden "
				"size %d", c->heads, c->hidden);
	}
	c->head_dim = c->hidden / c->heads;
	c->layer_norm_eps = o ? o->layer_norm_eps : 0;
	if (!(c->layer_norm_eps >= 0) || !isfinite(c->layer_norm_eps)) {
		json_object_put(meta);
		return npb_fail(NPBERT_ERR_INVALID, "npbert_opts_t.layer_norm_eps is %g: the "
				"LayerNorm epsilon must be a finite number >= 0",
				c->layer_norm_eps);
	}
	if (c->layer_norm_eps == 0 && !(o && (o->flags & NPBERT_EPS_GIVEN))) {
		json_object *raw = NULL;

		r = meta_number(meta, "layer_norm_eps", &v);
		if (r < 0 || (r > 0 && (!(v >= 0) || !isfinite(v)))) {
			json_object_object_get_ex(meta, "layer_norm_eps", &raw);
			npb_fail(NPBERT_ERR_INVALID, "the model's __metadata__ has layer_norm_eps %s, "
				 "which is not a finite number >= 0; fix the file's metadata or "
				 "give the epsilon (--eps, npbert_opts_t.layer_norm_eps)",
				 json_object_to_json_string_ext(raw, JSON_C_TO_STRING_PLAIN));
			json_object_put(meta);
			return NPBERT_ERR_INVALID;
		}
		c->layer_norm_eps = r > 0 ? v : 1e-12;
	}
	json_object_put(meta);
	return NPBERT_OK;
}

npbert_status_t npb_layout_read(npushm_model_t *m, const npbert_opts_t *o, npb_layout_t *l)
{
	npbert_config_t *c = &l->cfg;
	npushm_tensor_t first_ffn;
	npbert_status_t st;
	const char *p;
	int64_t H, F;

	memset(l, 0, sizeof(*l));
	if (has(m, "", "embeddings.word_embeddings.weight"))
		p = "";
	else if (has(m, "bert.", "embeddings.word_embeddings.weight"))
		p = "bert.";
	else
		return npb_fail(NPBERT_ERR_LAYOUT, "not a BERT layout: the model has no tensor "
				"'embeddings.word_embeddings.weight' (nor "
				"'bert.embeddings.word_embeddings.weight'); the engine expects "
				"Hugging Face BertModel tensor names");
	snprintf(l->prefix, sizeof(l->prefix), "%s", p);
	/* the hidden size most embedding tensors agree on, so the odd one is named */
	int64_t widths[] = {
		dim_of(m, p, "embeddings.word_embeddings.weight", 2, 1),
		dim_of(m, p, "embeddings.position_embeddings.weight", 2, 1),
		dim_of(m, p, "embeddings.token_type_embeddings.weight", 2, 1),
		dim_of(m, p, "embeddings.LayerNorm.weight", 1, 0),
		dim_of(m, p, "embeddings.LayerNorm.bias", 1, 0),
	};

	H = majority(widths, sizeof(widths) / sizeof(widths[0]));
	if ((st = need(m, p, "embeddings.word_embeddings.weight", 2, ANY, H < 1 ? ANY : H,
		       "vocabulary x hidden", &l->word)))
		return st;
	H = l->word.shape[1];
	if ((st = need(m, p, "embeddings.position_embeddings.weight", 2, ANY, H,
		       "positions x hidden", &l->pos)) ||
	    (st = need(m, p, "embeddings.token_type_embeddings.weight", 2, ANY, H,
		       "token types x hidden", &l->type)) ||
	    (st = need(m, p, "embeddings.LayerNorm.weight", 1, H, 0, "hidden", &l->eln_w)) ||
	    (st = need(m, p, "embeddings.LayerNorm.bias", 1, H, 0, "hidden", &l->eln_b)))
		return st;
	c->layers = 0;
	for (;;) {
		char n[96];

		snprintf(n, sizeof(n), "encoder.layer.%d.attention.self.query.weight", c->layers);
		if (!has(m, p, n) || c->layers == 100000)
			break;
		c->layers++;
	}
	if (!c->layers)
		return npb_fail(NPBERT_ERR_LAYOUT, "not a BERT layout: the model has no tensor "
				"'%sencoder.layer.0.attention.self.query.weight' (no encoder layer)",
				p);
	/* the FFN width most of layer 0's FFN tensors agree on, so the odd one is named */
	int64_t ffn[] = {
		dim_of(m, p, "encoder.layer.0.intermediate.dense.weight", 2, 0),
		dim_of(m, p, "encoder.layer.0.intermediate.dense.bias", 1, 0),
		dim_of(m, p, "encoder.layer.0.output.dense.weight", 2, 1),
	};

	F = majority(ffn, sizeof(ffn) / sizeof(ffn[0]));
	if ((st = need(m, p, "encoder.layer.0.intermediate.dense.weight", 2, F < 1 ? ANY : F, H,
		       "intermediate size x hidden", &first_ffn)))
		return st;
	F = first_ffn.shape[0];
	l->layers = calloc((size_t)c->layers, sizeof(*l->layers));
	if (!l->layers)
		return npb_fail(NPBERT_ERR_NO_MEMORY, "out of memory for %d layers", c->layers);
	for (int i = 0; i < c->layers; i++)
		if ((st = layer_tensors(m, p, i, H, F, &l->layers[i])))
			goto fail;
	if ((st = no_stray_layers(m, p, c->layers)))
		goto fail;
	c->has_pooler = has(m, p, "pooler.dense.weight") || has(m, p, "pooler.dense.bias");
	if (c->has_pooler &&
	    ((st = need(m, p, "pooler.dense.weight", 2, H, H, "hidden x hidden", &l->pool_w)) ||
	     (st = need(m, p, "pooler.dense.bias", 1, H, 0, "hidden", &l->pool_b))))
		goto fail;
	c->hidden = (int)H;
	c->ffn = (int)F;
	c->vocab = (int)l->word.shape[0];
	c->positions = (int)l->pos.shape[0];
	c->type_vocab = (int)l->type.shape[0];
	c->prefix = l->prefix;
	if ((st = heads_and_eps(m, o, c)))
		goto fail;
	return NPBERT_OK;
fail:
	free(l->layers);
	l->layers = NULL;
	return st;
}
