/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * weights.c - the engine's weights as nptensor views of the shared mapping.
 *
 * Each tensor comes through DLPack (npushm_model_tensor_dlpack ->
 * npt_tensor_from_dlpack, read-only): a view of the model's read-only
 * mapping holding a reference on the model, never a copy. With tensor
 * parallelism rank r of N keeps slices, still views: rows [r*H/N, (r+1)*H/N)
 * of the Q/K/V weights and biases (its heads), rows [r*F/N, ...) of the FFN's
 * first dense, and the matching COLUMNS of the attention output and FFN
 * output weights (strided views the GEMM reads in place). Those two layers'
 * biases are kept by rank 0 only, so the AllReduce adds them once.
 *
 * Packed layouts: when the model carries one for a linear weight (`npushm
 * load --dtype f32`) and the engine runs unsplit, the weight is read from
 * it in place (npt_tensor_set_packed); a layout this CPU or library did not
 * make is refused by libnptensor and the plain weight is used, the first
 * refusal kept for npbert_packed_weights().
 */
#include <dlpack/dlpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static npbert_status_t import(npushm_model_t *m, const npushm_tensor_t *t, npt_tensor_t **out)
{
	struct DLManagedTensor *dl;
	npt_status_t s;

	if (npushm_model_tensor_dlpack(m, t->index, &dl) != NPUSHM_OK)
		return npb_fail(NPBERT_ERR_LAYOUT, "cannot view tensor '%s': %s", t->name,
				npushm_last_error());
	s = npt_tensor_from_dlpack(dl, true, out);
	if (s) {
		dl->deleter(dl);
		return npb_fail(NPBERT_ERR_TENSOR, "cannot view tensor '%s': %s", t->name,
				npt_last_error());
	}
	return NPBERT_OK;
}

/* read linear weight @t from its packed layout in @m, if it has one this process can use */
static void use_packed(npushm_model_t *m, const npushm_tensor_t *src, npt_tensor_t *t,
		       npb_weights_t *w)
{
	npushm_layout_t l;

	if (npushm_model_layout_find(m, src->name, &l))
		return;
	w->packed_total++;
	if (npt_tensor_set_packed(t, l.tag, l.data, (size_t)l.nbytes) == NPT_OK) {
		w->packed_used++;
		return;
	}
	if (!w->packed_why[0])
		snprintf(w->packed_why, sizeof(w->packed_why), "%s", npt_last_error());
}

/* replace *t by its slice [start, stop) along axis */
static npbert_status_t cut(npt_tensor_t **t, int axis, int64_t start, int64_t stop)
{
	npt_tensor_t *v;
	npt_status_t s = npt_tensor_slice(*t, axis, start, stop, 1, &v);

	if (s)
		return npb_tensor_fail(s, "slicing a weight for tensor parallelism");
	npt_tensor_free(*t);
	*t = v;
	return NPBERT_OK;
}

static uint64_t bytes(const npt_tensor_t *t)
{
	return t ? (uint64_t)npt_tensor_numel(t) * sizeof(float) : 0;
}

static npbert_status_t layer(npushm_model_t *m, const npb_layer_src_t *s, int r, int n, int64_t Hl,
			     int64_t Fl, npb_layer_t *w, npb_weights_t *all)
{
	uint64_t *total = &all->bytes;
	npbert_status_t st;
	const npushm_tensor_t *src[] = { &s->q_w, &s->q_b, &s->k_w, &s->k_b, &s->v_w, &s->v_b,
					 &s->o_w, &s->o_b, &s->ln1_w, &s->ln1_b, &s->i_w, &s->i_b,
					 &s->d_w, &s->d_b, &s->ln2_w, &s->ln2_b };
	npt_tensor_t **dst[] = { &w->q_w, &w->q_b, &w->k_w, &w->k_b, &w->v_w, &w->v_b,
				 &w->o_w, &w->o_b, &w->ln1_w, &w->ln1_b, &w->i_w, &w->i_b,
				 &w->d_w, &w->d_b, &w->ln2_w, &w->ln2_b };

	for (size_t i = 0; i < sizeof(src) / sizeof(src[0]); i++)
		if ((st = import(m, src[i], dst[i])))
			return st;
	if (n == 1) {
		use_packed(m, &s->q_w, w->q_w, all);
		use_packed(m, &s->k_w, w->k_w, all);
		use_packed(m, &s->v_w, w->v_w, all);
		use_packed(m, &s->o_w, w->o_w, all);
		use_packed(m, &s->i_w, w->i_w, all);
		use_packed(m, &s->d_w, w->d_w, all);
	}
	if (n > 1) {
		int64_t a = r * Hl, b = a + Hl, f = r * Fl, g = f + Fl;

		if ((st = cut(&w->q_w, 0, a, b)) || (st = cut(&w->q_b, 0, a, b)) ||
		    (st = cut(&w->k_w, 0, a, b)) || (st = cut(&w->k_b, 0, a, b)) ||
		    (st = cut(&w->v_w, 0, a, b)) || (st = cut(&w->v_b, 0, a, b)) ||
		    (st = cut(&w->o_w, 1, a, b)) || (st = cut(&w->i_w, 0, f, g)) ||
		    (st = cut(&w->i_b, 0, f, g)) || (st = cut(&w->d_w, 1, f, g)))
			return st;
		if (r != 0) {
			npt_tensor_free(w->o_b);
			npt_tensor_free(w->d_b);
			w->o_b = w->d_b = NULL;
		}
	}
	for (size_t i = 0; i < sizeof(dst) / sizeof(dst[0]); i++)
		*total += bytes(*dst[i]);
	return NPBERT_OK;
}

npbert_status_t npb_weights_make(npushm_model_t *m, const npb_layout_t *l, npb_weights_t *w)
{
	const npbert_config_t *c = &l->cfg;
	int r = c->tp_rank, n = c->tp_size;
	npbert_status_t st;

	memset(w, 0, sizeof(*w));
	w->layers = calloc((size_t)c->layers, sizeof(*w->layers));
	if (!w->layers)
		return npb_fail(NPBERT_ERR_NO_MEMORY, "out of memory for %d layers", c->layers);
	if ((st = import(m, &l->word, &w->word)) || (st = import(m, &l->pos, &w->pos)) ||
	    (st = import(m, &l->type, &w->type)) || (st = import(m, &l->eln_w, &w->eln_w)) ||
	    (st = import(m, &l->eln_b, &w->eln_b)))
		return st;
	if (c->has_pooler &&
	    ((st = import(m, &l->pool_w, &w->pool_w)) || (st = import(m, &l->pool_b, &w->pool_b))))
		return st;
	w->bytes = bytes(w->word) + bytes(w->pos) + bytes(w->type) + bytes(w->eln_w) +
		   bytes(w->eln_b) + bytes(w->pool_w) + bytes(w->pool_b);
	for (int i = 0; i < c->layers; i++)
		if ((st = layer(m, &l->layers[i], r, n, c->hidden / n, c->ffn / n, &w->layers[i],
				w)))
			return st;
	if (c->has_pooler && n == 1)
		use_packed(m, &l->pool_w, w->pool_w, w);
	return NPBERT_OK;
}

void npb_weights_free(npb_weights_t *w, int layers)
{
	npt_tensor_t *top[] = { w->word, w->pos, w->type, w->eln_w, w->eln_b, w->pool_w,
				w->pool_b };

	if (w->layers) {
		for (int i = 0; i < layers; i++) {
			npt_tensor_t **t = (npt_tensor_t **)&w->layers[i];

			for (size_t k = 0; k < sizeof(npb_layer_t) / sizeof(npt_tensor_t *); k++)
				npt_tensor_free(t[k]);
		}
		free(w->layers);
	}
	for (size_t k = 0; k < sizeof(top) / sizeof(top[0]); k++)
		npt_tensor_free(top[k]);
	memset(w, 0, sizeof(*w));
}
