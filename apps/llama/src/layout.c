/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * layout.c - check an attached model against the Llama layout (Hugging
 * Face's LlamaForCausalLM names) and derive the configuration from the
 * shapes and the file's __metadata__.
 *
 * Hidden size and vocabulary come from model.embed_tokens.weight, the FFN
 * width from layer 0's gate_proj, the layer count from the run of layers
 * model.layers.0 .. L-1; head counts, RoPE, epsilon and context from the
 * metadata. Every tensor the decoder reads must exist, be F32 and have the
 * shape the others imply; metadata that disagrees with the shapes is
 * refused naming the key, the value and the tensor. All refusals are
 * NPLLAMA_ERR_LAYOUT.
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

static void dims(char *buf, size_t len, uint32_t nd, const int64_t *s)
{
	size_t o = (size_t)snprintf(buf, len, "[");

	for (uint32_t i = 0; i < nd && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? ", " : "", (long long)s[i]);
	if (o < len)
		snprintf(buf + o, len - o, "]");
}

/* tensor @name: F32, @nd dims equal to @d0 (@d1), ANY meaning any size >= 1 */
static npllama_status_t need(npushm_model_t *m, const char *name, uint32_t nd, int64_t d0,
			     int64_t d1, const char *what, npushm_tensor_t *t)
{
	int64_t want[2] = { d0, d1 };
	char got[96], exp[96];
	size_t o;

	o = (size_t)snprintf(exp, sizeof(exp), "[");
	for (uint32_t i = 0; i < nd; i++)
		o += want[i] == ANY ? (size_t)snprintf(exp + o, sizeof(exp) - o, "%sN", i ? ", " : "")
				    : (size_t)snprintf(exp + o, sizeof(exp) - o, "%s%lld",
						       i ? ", " : "", (long long)want[i]);
	snprintf(exp + o, sizeof(exp) - o, "]");
	if (npushm_model_tensor_find(m, name, t) != NPUSHM_OK) {
		npushm_layout_t l;

		if (npushm_model_layout_find(m, name, &l) == NPUSHM_OK)
			return npl_fail(NPLLAMA_ERR_LAYOUT, "tensor '%s' is stored only in its packed "
					"layout (the model was loaded with --packed-only); this engine "
					"reads the plain weights and their layouts beside them: load the "
					"file again without --packed-only", name);
		return npl_fail(NPLLAMA_ERR_LAYOUT, "not a Llama layout: the model has no tensor "
				"'%s' (expected %s: %s)", name, exp, what);
	}
	if (t->dtype != NPUSHM_DTYPE_F32)
		return npl_fail(NPLLAMA_ERR_LAYOUT, "tensor '%s' is %s; this engine reads F32 "
				"weights: convert the checkpoint to float32", name,
				npushm_dtype_name(t->dtype));
	dims(got, sizeof(got), t->ndim, t->shape);
	if (t->ndim != nd)
		goto bad;
	for (uint32_t i = 0; i < nd; i++)
		if (t->shape[i] < 1 || t->shape[i] > INT_MAX ||
		    (want[i] != ANY && t->shape[i] != want[i]))
			goto bad;
	return NPLLAMA_OK;
bad:
	return npl_fail(NPLLAMA_ERR_LAYOUT, "not a Llama layout: tensor '%s' has shape %s, "
			"expected %s (%s)", name, got, exp, what);
}

static bool has(npushm_model_t *m, const char *name)
{
	npushm_tensor_t t;

	return npushm_model_tensor_find(m, name, &t) == NPUSHM_OK;
}

/* a number of __metadata__ (safetensors stores strings; numbers accepted):
 * 0 absent, 1 found, -1 not a number */
static int meta_num(json_object *meta, const char *key, double *out)
{
	json_object *v;
	const char *s;
	char *end;

	if (!meta || !json_object_object_get_ex(meta, key, &v))
		return 0;
	if (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)) {
		*out = json_object_get_double(v);
		return isfinite(*out) ? 1 : -1;
	}
	if (!json_object_is_type(v, json_type_string))
		return -1;
	s = json_object_get_string(v);
	errno = 0;
	*out = strtod(s, &end);
	return (errno || end == s || *end || !isfinite(*out)) ? -1 : 1;
}

static const char *meta_str(json_object *meta, const char *key)
{
	json_object *v;

	if (!meta || !json_object_object_get_ex(meta, key, &v))
		return "?";
	return json_object_get_string(v);
}

/* an integer key in lo..hi, or @def when absent */
static npllama_status_t meta_int(json_object *meta, const char *key, int lo, int hi, int def,
				 int *out)
{
	double v;
	int r = meta_num(meta, key, &v);

	if (r == 0) {
		*out = def;
		return NPLLAMA_OK;
	}
	if (r < 0 || v != floor(v) || v < lo || v > hi)
		return npl_fail(NPLLAMA_ERR_LAYOUT, "the model's __metadata__ has %s = '%s'; it "
				"must be an integer in %d..%d: fix the file's metadata", key,
				meta_str(meta, key), lo, hi);
	*out = (int)v;
	return NPLLAMA_OK;
}

/* a real key > 0 (>= 0 with @zero_ok), or @def when absent */
static npllama_status_t meta_real(json_object *meta, const char *key, bool zero_ok, double def,
				  double *out)
{
	int r = meta_num(meta, key, out);

	if (r == 0) {
		*out = def;
		return NPLLAMA_OK;
	}
	if (r < 0 || *out < 0 || (!zero_ok && *out == 0))
		return npl_fail(NPLLAMA_ERR_LAYOUT, "the model's __metadata__ has %s = '%s'; it "
				"must be a finite number %s 0: fix the file's metadata", key,
				meta_str(meta, key), zero_ok ? ">=" : ">");
	return NPLLAMA_OK;
}

/* rope_scaling {"type"|"rope_type": "linear", "factor": F} (a JSON string or
 * object), or rope_scaling_factor F */
static npllama_status_t rope_scaling(json_object *meta, double *scale)
{
	json_object *v, *obj = NULL, *type = NULL, *factor;
	npllama_status_t st = NPLLAMA_OK;
	const char *ts;

	*scale = 1;
	if (!meta || !json_object_object_get_ex(meta, "rope_scaling", &v))
		return meta_real(meta, "rope_scaling_factor", false, 1, scale);
	if (json_object_is_type(v, json_type_null))
		return NPLLAMA_OK;
	if (json_object_is_type(v, json_type_string)) {
		ts = json_object_get_string(v);
		if (!strcmp(ts, "null") || !ts[0])
			return NPLLAMA_OK;
		obj = json_tokener_parse(ts);
	} else {
		obj = json_object_get(v);
	}
	if (!obj || !json_object_is_type(obj, json_type_object))
		goto bad;
	if (!json_object_object_get_ex(obj, "type", &type))
		json_object_object_get_ex(obj, "rope_type", &type);
	if (!type || strcmp(json_object_get_string(type), "linear")) {
		st = npl_fail(NPLLAMA_ERR_LAYOUT, "the model's __metadata__ has rope_scaling '%s': "
			      "this engine knows linear scaling only ({\"type\": \"linear\", "
			      "\"factor\": F})", meta_str(meta, "rope_scaling"));
		goto out;
	}
	if (!json_object_object_get_ex(obj, "factor", &factor) ||
	    !(json_object_is_type(factor, json_type_double) ||
	      json_object_is_type(factor, json_type_int)) ||
	    !(json_object_get_double(factor) > 0) || !isfinite(json_object_get_double(factor)))
		goto bad;
	*scale = json_object_get_double(factor);
	goto out;
bad:
	st = npl_fail(NPLLAMA_ERR_LAYOUT, "the model's __metadata__ has rope_scaling '%s'; "
		      "expected {\"type\": \"linear\", \"factor\": F} with F > 0",
		      meta_str(meta, "rope_scaling"));
out:
	json_object_put(obj);
	return st;
}

/* metadata key @key, when present, must say @value (what the shapes say) */
static npllama_status_t agree(json_object *meta, const char *key, int value, const char *tensor,
			      const char *what)
{
	npllama_status_t st;
	int v;

	if ((st = meta_int(meta, key, 1, INT_MAX, value, &v)))
		return st;
	if (v != value)
		return npl_fail(NPLLAMA_ERR_LAYOUT, "the model's __metadata__ says %s = %d but "
				"tensor '%s' has %d %s: the metadata contradicts the shapes; fix "
				"one of them", key, v, tensor, value, what);
	return NPLLAMA_OK;
}

static npllama_status_t layer(npushm_model_t *m, int l, const npllama_config_t *c,
			      npl_layer_src_t *t)
{
	int64_t H = c->hidden, Q = (int64_t)c->heads * c->head_dim;
	int64_t KV = (int64_t)c->kv_heads * c->head_dim, F = c->ffn;
	npllama_status_t st = NPLLAMA_OK;
	char n[160], what[160];

#define NEED(field, suffix, nd, a, b, fmt, ...)                                       \
	do {                                                                          \
		snprintf(n, sizeof(n), "model.layers.%d.%s", l, suffix);              \
		snprintf(what, sizeof(what), fmt, __VA_ARGS__);                       \
		if (!st)                                                              \
			st = need(m, n, nd, a, b, what, &t->field);                   \
	} while (0)
	NEED(ln1, "input_layernorm.weight", 1, H, 0, "hidden %lld", (long long)H);
	NEED(q, "self_attn.q_proj.weight", 2, Q, H, "heads %d x head_dim %d, hidden", c->heads,
	     c->head_dim);
	NEED(k, "self_attn.k_proj.weight", 2, KV, H, "KV heads %d x head_dim %d, hidden",
	     c->kv_heads, c->head_dim);
	NEED(v, "self_attn.v_proj.weight", 2, KV, H, "KV heads %d x head_dim %d, hidden",
	     c->kv_heads, c->head_dim);
	NEED(o, "self_attn.o_proj.weight", 2, H, Q, "hidden, heads %d x head_dim %d", c->heads,
	     c->head_dim);
	NEED(ln2, "post_attention_layernorm.weight", 1, H, 0, "hidden %lld", (long long)H);
	NEED(gate, "mlp.gate_proj.weight", 2, F, H, "FFN width %lld, hidden", (long long)F);
	NEED(up, "mlp.up_proj.weight", 2, F, H, "FFN width %lld, hidden", (long long)F);
	NEED(down, "mlp.down_proj.weight", 2, H, F, "hidden, FFN width %lld", (long long)F);
#undef NEED
	return st;
}

/* heads, KV heads and head_dim from the metadata and layer 0's shapes */
static npllama_status_t heads(npushm_model_t *m, json_object *meta, npllama_config_t *c)
{
	const char *kname = "model.layers.0.self_attn.k_proj.weight";
	npllama_status_t st;
	npushm_tensor_t k;

	if ((st = meta_int(meta, "num_attention_heads", 1, c->hidden,
			   c->hidden % 64 ? 0 : c->hidden / 64, &c->heads)))
		return st;
	if (!c->heads)
		return npl_fail(NPLLAMA_ERR_LAYOUT, "how many attention heads? the model's "
				"__metadata__ has no num_attention_heads and the hidden size %d "
				"is no multiple of 64: add num_attention_heads to the metadata",
				c->hidden);
	if (c->hidden % c->heads)
		return npl_fail(NPLLAMA_ERR_LAYOUT, "the model's __metadata__ says "
				"num_attention_heads = %d, which does not divide the hidden size %d "
				"(columns of model.embed_tokens.weight)", c->heads, c->hidden);
	if ((st = meta_int(meta, "head_dim", 2, c->hidden, c->hidden / c->heads, &c->head_dim)))
		return st;
	if (c->head_dim % 2)
		return npl_fail(NPLLAMA_ERR_LAYOUT, "head_dim %d is odd: rotate-half RoPE needs an "
				"even head size", c->head_dim);
	if ((st = need(m, kname, 2, ANY, c->hidden, "KV heads x head_dim, hidden", &k)))
		return st;
	if (k.shape[0] % c->head_dim)
		return npl_fail(NPLLAMA_ERR_LAYOUT, "tensor '%s' has %lld rows, no multiple of "
				"head_dim %d: the head counts and the shapes disagree", kname,
				(long long)k.shape[0], c->head_dim);
	if ((st = meta_int(meta, "num_key_value_heads", 1, c->heads,
			   (int)(k.shape[0] / c->head_dim), &c->kv_heads)))
		return st;
	if ((int64_t)c->kv_heads * c->head_dim != k.shape[0])
		return npl_fail(NPLLAMA_ERR_LAYOUT, "the model's __metadata__ says "
				"num_key_value_heads = %d but tensor '%s' has %lld rows, which is "
				"%lld KV heads of head_dim %d: the metadata contradicts the shapes",
				c->kv_heads, kname, (long long)k.shape[0],
				(long long)(k.shape[0] / c->head_dim), c->head_dim);
	if (c->heads % c->kv_heads)
		return npl_fail(NPLLAMA_ERR_LAYOUT, "%d KV heads do not divide %d attention heads: "
				"grouped-query attention shares each KV head among the same number "
				"of heads; the file's head counts are inconsistent", c->kv_heads,
				c->heads);
	return NPLLAMA_OK;
}

static npllama_status_t config(npushm_model_t *m, json_object *meta, npl_layout_t *l)
{
	npllama_config_t *c = &l->cfg;
	npllama_status_t st;
	npushm_tensor_t g;
	char n[96];

	if ((st = need(m, "model.embed_tokens.weight", 2, ANY, ANY, "vocabulary, hidden",
		       &l->embed)))
		return st;
	c->vocab = (int)l->embed.shape[0];
	c->hidden = (int)l->embed.shape[1];
	while (snprintf(n, sizeof(n), "model.layers.%d.self_attn.q_proj.weight", c->layers),
	       has(m, n) && c->layers < 1 << 20)
		c->layers++;
	if (!c->layers)
		return npl_fail(NPLLAMA_ERR_LAYOUT, "not a Llama layout: the model has no tensor "
				"'model.layers.0.self_attn.q_proj.weight' (no decoder layer)");
	if ((st = need(m, "model.layers.0.mlp.gate_proj.weight", 2, ANY, c->hidden,
		       "FFN width, hidden", &g)))
		return st;
	c->ffn = (int)g.shape[0];
	if ((st = agree(meta, "hidden_size", c->hidden, "model.embed_tokens.weight", "columns")) ||
	    (st = agree(meta, "vocab_size", c->vocab, "model.embed_tokens.weight", "rows")) ||
	    (st = agree(meta, "intermediate_size", c->ffn, "model.layers.0.mlp.gate_proj.weight",
			"rows")) ||
	    (st = agree(meta, "num_hidden_layers", c->layers, "model.layers.N.*",
			"consecutive layers from 0")) ||
	    (st = heads(m, meta, c)) ||
	    (st = meta_real(meta, "rope_theta", false, 10000, &c->rope_theta)) ||
	    (st = rope_scaling(meta, &c->rope_scale)) ||
	    (st = meta_real(meta, "rms_norm_eps", true, 1e-6, &c->rms_eps)) ||
	    (st = meta_int(meta, "max_position_embeddings", 1, 1 << 24, 2048, &c->context)))
		return st;
	return NPLLAMA_OK;
}

npllama_status_t npl_layout_read(npushm_model_t *m, npl_layout_t *l)
{
	npushm_model_info_t info;
	json_object *meta = NULL;
	npllama_status_t st;

	memset(l, 0, sizeof(*l));
	npushm_model_info(m, &info);
	if (info.metadata_json && !(meta = json_tokener_parse(info.metadata_json)))
		return npl_fail(NPLLAMA_ERR_LAYOUT, "the model's __metadata__ is not JSON");
	st = config(m, meta, l);
	json_object_put(meta);
	if (st)
		return st;
	if ((st = need(m, "model.norm.weight", 1, l->cfg.hidden, 0, "hidden", &l->norm)))
		return st;
	if (has(m, "lm_head.weight")) {
		if ((st = need(m, "lm_head.weight", 2, l->cfg.vocab, l->cfg.hidden,
			       "vocabulary, hidden", &l->head)))
			return st;
	} else {
		l->head = l->embed;
		l->cfg.tied = 1;
	}
	l->layers = calloc((size_t)l->cfg.layers, sizeof(*l->layers));
	if (!l->layers)
		return npl_fail(NPLLAMA_ERR_NO_MEMORY, "out of memory for %d layers",
				l->cfg.layers);
	for (int i = 0; i < l->cfg.layers; i++)
		if ((st = layer(m, i, &l->cfg, &l->layers[i])))
			return st;
	return NPLLAMA_OK;
}
