/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * weights.c - the decoder's weights in place in the shared mapping.
 *
 * The projections are nptensor views made through DLPack
 * (npushm_model_tensor_dlpack -> npt_tensor_from_dlpack, read-only): each
 * holds a reference on the model, never a copy. The embedding and the
 * RMSNorm weights are read through plain pointers into the same mapping,
 * which those views keep alive. A tied model's output projection is a view
 * of the embedding.
 */
#include <dlpack/dlpack.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static npllama_status_t import(npushm_model_t *m, const npushm_tensor_t *t, npt_tensor_t **out)
{
	struct DLManagedTensor *dl;

	if (npushm_model_tensor_dlpack(m, t->index, &dl) != NPUSHM_OK)
		return npl_fail(NPLLAMA_ERR_LAYOUT, "cannot view tensor '%s': %s", t->name,
				npushm_last_error());
	if (npt_tensor_from_dlpack(dl, true, out) != NPT_OK) {
		dl->deleter(dl);
		return npl_fail(NPLLAMA_ERR_TENSOR, "cannot view tensor '%s': %s", t->name,
				npt_last_error());
	}
	return NPLLAMA_OK;
}

npllama_status_t npl_weights_make(npushm_model_t *m, const npl_layout_t *l, npl_weights_t *w)
{
	npllama_status_t st;

	memset(w, 0, sizeof(*w));
	w->layers = calloc((size_t)l->cfg.layers, sizeof(*w->layers));
	if (!w->layers)
		return npl_fail(NPLLAMA_ERR_NO_MEMORY, "out of memory for %d layers", l->cfg.layers);
	if ((st = import(m, &l->head, &w->head)))
		return st;
	w->embed = l->embed.data;
	w->norm = l->norm.data;
	for (int i = 0; i < l->cfg.layers; i++) {
		const npl_layer_src_t *s = &l->layers[i];
		npl_layer_t *d = &w->layers[i];

		if ((st = import(m, &s->q, &d->q)) || (st = import(m, &s->k, &d->k)) ||
		    (st = import(m, &s->v, &d->v)) || (st = import(m, &s->o, &d->o)) ||
		    (st = import(m, &s->gate, &d->gate)) || (st = import(m, &s->up, &d->up)) ||
		    (st = import(m, &s->down, &d->down)))
			return st;
		d->ln1 = s->ln1.data;
		d->ln2 = s->ln2.data;
	}
	return NPLLAMA_OK;
}

void npl_weights_free(npl_weights_t *w, int layers)
{
	for (int i = 0; w->layers && i < layers; i++) {
		npl_layer_t *d = &w->layers[i];

		npt_tensor_free(d->q);
		npt_tensor_free(d->k);
		npt_tensor_free(d->v);
		npt_tensor_free(d->o);
		npt_tensor_free(d->gate);
		npt_tensor_free(d->up);
		npt_tensor_free(d->down);
	}
	free(w->layers);
	npt_tensor_free(w->head);
	memset(w, 0, sizeof(*w));
}
