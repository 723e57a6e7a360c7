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
 *
 * A model loaded packed-only (`npushm load --dtype X --packed-only`) has no
 * plain copy of those weights: each is read in place from its layout
 * (npt_tensor_from_packed) when this process can; otherwise (another CPU or
 * library made the layout, or tensor parallelism slices the weight) it is
 * unpacked into this process's own memory (npt_unpack_weight: the layout's
 * tag describes its bytes), and npbert_packed_weights() says so with the
 * memory it took. A layout the engine cannot read at all (not one of
 * libnptensor's) is refused, naming the tensor and the layout.
 *
 * With the check on, every tensor is scanned for NaN and infinities
 * (finite.c) in the form it is read: a weight read packed in its layout.
 */
#include <dlpack/dlpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* the int8 layout's per-channel scales (the bytes' start): finite and > 0 */
static npbert_status_t check_scales(const npushm_tensor_t *t, const npushm_layout_t *l)
{
	for (int64_t n = 0; n < t->shape[0] && (uint64_t)(n + 1) * 4 <= l->nbytes; n++) {
		float s;

		memcpy(&s, (const char *)l->data + n * 4, sizeof(s));
		if (!(s > 0) || s > 3.4e38f)
			return npb_fail(NPBERT_ERR_WEIGHTS, "tensor '%s': the scale of output channel "
					"%lld in its packed (int8) layout is %g, not a finite positive "
					"number: the model is damaged; load it again", t->name,
					(long long)n, (double)s);
	}
	return NPBERT_OK;
}

/*
 * @t is stored only in its packed layout: read it in place (@in_place: this
 * engine reads the weight whole) if libnptensor takes the layout here, else
 * unpack it into this process's memory; with @check, refuse non-finite values.
 */
static npbert_status_t import_packed(npushm_model_t *m, const npushm_tensor_t *t, bool in_place,
				     bool check, npt_tensor_t **out, npb_weights_t *w)
{
	npushm_tensor_t un = *t;
	npushm_layout_t l;
	int64_t rows = t->shape[0], cols = t->ndim == 2 ? t->shape[1] : 0;
	float *p;

	if (npushm_model_layout_find(m, t->name, &l) || t->ndim != 2)
		return npb_fail(NPBERT_ERR_LAYOUT, "tensor '%s' has no plain data and no packed "
				"layout the engine can read", t->name);
	w->packed_total++;
	if (in_place && npt_tensor_from_packed(l.tag, l.data, (size_t)l.nbytes, rows, cols,
					       out) == NPT_OK) {
		w->packed_used++;
		if (!check)
			return NPBERT_OK;
		return strstr(l.tag, "/s8/") ? check_scales(t, &l) :
		       npb_check_finite_packed(t, l.tag, l.data, l.nbytes);
	}
	if (in_place && !w->packed_why[0])
		snprintf(w->packed_why, sizeof(w->packed_why), "%s", npt_last_error());
	if (!(p = malloc((size_t)(rows * cols) * sizeof(float))))
		return npb_fail(NPBERT_ERR_NO_MEMORY, "out of memory to unpack tensor '%s'", t->name);
	if (npt_unpack_weight(l.tag, l.data, (size_t)l.nbytes, rows, cols, p)) {
		npbert_status_t st = npb_fail(NPBERT_ERR_LAYOUT, "tensor '%s' is stored only in its "
					      "packed layout '%s', which this engine cannot "
					      "read (%s); load the model without --packed-only",
					      t->name, l.tag, npt_last_error());

		free(p);
		return st;
	}
	w->private_bytes += (uint64_t)(rows * cols) * sizeof(float);
	un.data = p;
	if (check && npb_check_finite(&un)) {
		free(p);
		return NPBERT_ERR_WEIGHTS;
	}
	if (npt_tensor_from_data(p, NPT_F32, 2, t->shape, NULL, NPT_BORROW_READONLY, free, p,
				 out)) {
		free(p);
		return npb_fail(NPBERT_ERR_NO_MEMORY, "cannot view unpacked tensor '%s': %s",
				t->name, npt_last_error());
	}
	return NPBERT_OK;
}

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

/*
 * Read linear weight @t from its packed layout in @m, if it has one this
 * process can use; with @check, refuse it if the bytes read (packed or
 * plain) hold a NaN or an infinity.
 */
static npbert_status_t use_packed(npushm_model_t *m, const npushm_tensor_t *src, npt_tensor_t *t,
				  bool check, npb_weights_t *w)
{
	npushm_layout_t l;

	if (!src->data)
		return NPBERT_OK;	/* packed only: read by import_packed() */
	if (npushm_model_layout_find(m, src->name, &l))
		return check ? npb_check_finite(src) : NPBERT_OK;
	w->packed_total++;
	if (npt_tensor_set_packed(t, l.tag, l.data, (size_t)l.nbytes) == NPT_OK) {
		w->packed_used++;
		return check ? npb_check_finite_packed(src, l.tag, l.data, l.nbytes) : NPBERT_OK;
	}
	if (!w->packed_why[0])
		snprintf(w->packed_why, sizeof(w->packed_why), "%s", npt_last_error());
	return check ? npb_check_finite(src) : NPBERT_OK;
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
			     int64_t Fl, bool check, npb_layer_t *w, npb_weights_t *all)
{
	uint64_t *total = &all->bytes;
	npbert_status_t st;
	const npushm_tensor_t *src[] = { &s->q_w, &s->q_b, &s->k_w, &s->k_b, &s->v_w, &s->v_b,
					 &s->o_w, &s->o_b, &s->ln1_w, &s->ln1_b, &s->i_w, &s->i_b,
					 &s->d_w, &s->d_b, &s->ln2_w, &s->ln2_b };
	npt_tensor_t **dst[] = { &w->q_w, &w->q_b, &w->k_w, &w->k_b, &w->v_w, &w->v_b,
				 &w->o_w, &w->o_b, &w->ln1_w, &w->ln1_b, &w->i_w, &w->i_b,
				 &w->d_w, &w->d_b, &w->ln2_w, &w->ln2_b };

	for (size_t i = 0; i < sizeof(src) / sizeof(src[0]); i++) {
		/* the linear weights of an unsplit engine are checked by use_packed() */
		bool linear = n == 1 && (src[i] == &s->q_w || src[i] == &s->k_w ||
					 src[i] == &s->v_w || src[i] == &s->o_w ||
					 src[i] == &s->i_w || src[i] == &s->d_w);

		if (!src[i]->data) {
			if ((st = import_packed(m, src[i], n == 1, check, dst[i], all)))
				return st;
			continue;
		}
		if ((st = import(m, src[i], dst[i])) ||
		    (check && !linear && (st = npb_check_finite(src[i]))))
			return st;
	}
	if (n == 1 &&
	    ((st = use_packed(m, &s->q_w, w->q_w, check, all)) ||
	     (st = use_packed(m, &s->k_w, w->k_w, check, all)) ||
	     (st = use_packed(m, &s->v_w, w->v_w, check, all)) ||
	     (st = use_packed(m, &s->o_w, w->o_w, check, all)) ||
	     (st = use_packed(m, &s->i_w, w->i_w, check, all)) ||
	     (st = use_packed(m, &s->d_w, w->d_w, check, all))))
		return st;
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

npbert_status_t npb_weights_make(npushm_model_t *m, const npb_layout_t *l, bool check,
				 npb_weights_t *w)
{
	const npushm_tensor_t *plain[] = { &l->word, &l->pos, &l->type, &l->eln_w, &l->eln_b,
					   &l->pool_b };
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
	if (c->has_pooler && !l->pool_w.data &&
	    ((st = import_packed(m, &l->pool_w, n == 1, check, &w->pool_w, w)) ||
	     (st = import(m, &l->pool_b, &w->pool_b))))
		return st;
	if (c->has_pooler && l->pool_w.data &&
	    ((st = import(m, &l->pool_w, &w->pool_w)) || (st = import(m, &l->pool_b, &w->pool_b))))
		return st;
	for (size_t i = 0; check && i < sizeof(plain) / sizeof(plain[0]); i++)
		if (plain[i]->name && (st = npb_check_finite(plain[i])))
			return st;
	w->bytes = bytes(w->word) + bytes(w->pos) + bytes(w->type) + bytes(w->eln_w) +
		   bytes(w->eln_b) + bytes(w->pool_w) + bytes(w->pool_b);
	for (int i = 0; i < c->layers; i++)
		if ((st = layer(m, &l->layers[i], r, n, c->hidden / n, c->ffn / n, check,
				&w->layers[i], w)))
			return st;
	if (c->has_pooler && n == 1 && (st = use_packed(m, &l->pool_w, w->pool_w, check, w)))
		return st;
	if (c->has_pooler && n > 1 && check && l->pool_w.data &&
	    (st = npb_check_finite(&l->pool_w)))
		return st;
	if (w->private_bytes) {
		char why[sizeof(w->packed_why)];

		snprintf(why, sizeof(why), "%s", w->packed_why);
		snprintf(w->packed_why, sizeof(w->packed_why), "the model holds them packed only: "
			 "unpacked into this process's memory (%.1f MiB)%s%.500s",
			 (double)w->private_bytes / 1048576.0, why[0] ? ", because " : "", why);
	}
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
