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
 *
 * Packed layouts: when the model carries one for a projection (`npushm
 * load --dtype f32|bf16|int8`: the GEMM's blocked layout, rounded to bf16 or
 * quantised to int8 per output channel), npt_linear reads it in place
 * (npt_tensor_set_packed); a layout this CPU or library did not make is
 * refused by libnptensor and the plain f32 weight is used, the first refusal
 * kept for npllama_packed_weights(). The layout's tag and bytes are also kept
 * for npt_gemv_packed (decode steps). A 4-bit layout (`--dtype q4`, tag
 * NPL_Q4_TAG/NxK) is read by npt_q4_linear instead of npt_linear.
 *
 * Tensor parallelism (split.c): a rank keeps views of its slices, rows of
 * q/k/v/gate/up_proj and of the output projection, columns of o_proj and
 * down_proj. A 4-bit layout is read in place there too (rows are whole
 * rows of it, columns whole groups of each row, ldq bytes apart:
 * npt_q4_linear_strided); the oneDNN layouts (f32, bf16, int8) are made for
 * whole weights, so with them a rank reads its f32 slices. step_bytes
 * counts its slices only.
 *
 * Attaching a model maps it without touching it; the bytes each projection
 * reads are then prefaulted here (MADV_POPULATE_READ: page-table entries
 * for pages the model already has, no copy), so that a worker's first
 * request does not pay a page fault per 4 KiB of weights. Where the
 * mapping cannot be populated so (an older kernel), it faults as before.
 */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#include <dlpack/dlpack.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define Q4_BLOCK (2 + NPT_Q4_GROUP / 2)	/* bytes of a 4-bit group: f16 scale, 16 bytes */

/* where the plain rows of @p's view are (after a slice, too) */
static npllama_status_t locate(npl_proj_t *p)
{
	void *d;

	if (npt_tensor_data(p->t, &d))
		return npl_tensor_fail(NPT_E_INVAL, "locating a weight's rows");
	p->f32 = d;
	p->ld = npt_tensor_strides(p->t)[0];
	return NPLLAMA_OK;
}

static npllama_status_t import(npushm_model_t *m, const npushm_tensor_t *t, npl_proj_t *p)
{
	struct DLManagedTensor *dl;

	memset(p, 0, sizeof(*p));
	p->gemv_packed = 1;
	if (npushm_model_tensor_dlpack(m, t->index, &dl) != NPUSHM_OK)
		return npl_fail(NPLLAMA_ERR_LAYOUT, "cannot view tensor '%s': %s", t->name,
				npushm_last_error());
	if (npt_tensor_from_dlpack(dl, true, &p->t) != NPT_OK) {
		dl->deleter(dl);
		return npl_fail(NPLLAMA_ERR_TENSOR, "cannot view tensor '%s': %s", t->name,
				npt_last_error());
	}
	return locate(p);
}

/*
 * Read projection @t from its packed layout in @m, if it has one this
 * process can use: a 4-bit layout for this shape goes to *@q4 (read by
 * npt_q4_linear), any other to libnptensor, which checks its tag.
 */
static void use_packed(npushm_model_t *m, const npushm_tensor_t *src, npl_proj_t *p,
		       npl_weights_t *w)
{
	char want[NPUSHM_LAYOUT_TAG_MAX];
	npushm_layout_t l;
	size_t nbytes;

	if (npushm_model_layout_find(m, src->name, &l)) {
		w->step_bytes += src->nbytes;
		return;
	}
	w->packed_total++;
	if (!strncmp(l.tag, NPL_Q4_TAG "/", strlen(NPL_Q4_TAG) + 1)) {
		snprintf(want, sizeof(want), "%s/%lldx%lld", NPL_Q4_TAG, (long long)src->shape[0],
			 (long long)src->shape[1]);
		if (!strcmp(l.tag, want) &&
		    npt_q4_size(src->shape[0], src->shape[1], &nbytes) == NPT_OK &&
		    nbytes == l.nbytes) {
			p->q4 = l.data;
			p->q4_ld = (size_t)(src->shape[1] / NPT_Q4_GROUP * Q4_BLOCK);
			w->packed_used++;
			w->step_bytes += l.nbytes;
			return;
		} else if (!w->packed_why[0]) {
			snprintf(w->packed_why, sizeof(w->packed_why), "tensor '%s' [%lld, %lld] has "
				 "a 4-bit layout '%s' of %llu bytes, not '%s': ignored", src->name,
				 (long long)src->shape[0], (long long)src->shape[1], l.tag,
				 (unsigned long long)l.nbytes, want);
		}
		w->step_bytes += src->nbytes;
		return;
	}
	if (npt_tensor_set_packed(p->t, l.tag, l.data, (size_t)l.nbytes) == NPT_OK) {
		snprintf(p->tag, sizeof(p->tag), "%s", l.tag);
		p->packed = l.data;
		p->packed_bytes = (size_t)l.nbytes;
		w->packed_used++;
		w->step_bytes += l.nbytes;
		return;
	}
	w->step_bytes += src->nbytes;
	if (!w->packed_why[0])
		snprintf(w->packed_why, sizeof(w->packed_why), "%s", npt_last_error());
}

/*
 * This rank's part of a 4-bit layout of @src, if the model has one: rows
 * [start, start + len) (@axis 0) are whole rows of it; columns (@axis 1) are
 * whole groups of each row when start and len are multiples of the group,
 * read in place ldq bytes apart. 0 when the rank reads its f32 slice instead
 * (no 4-bit layout, or columns that cut a group).
 */
static int q4_slice(npushm_model_t *m, const npushm_tensor_t *src, npl_proj_t *p, int axis,
		    int64_t start, int64_t len, npl_weights_t *w)
{
	char want[NPUSHM_LAYOUT_TAG_MAX];
	const int64_t rows = src->shape[0], cols = src->shape[1];
	size_t nbytes, rb = (size_t)(cols / NPT_Q4_GROUP * Q4_BLOCK);
	npushm_layout_t l;

	if (npushm_model_layout_find(m, src->name, &l))
		return 0;
	w->packed_total++;
	snprintf(want, sizeof(want), "%s/%lldx%lld", NPL_Q4_TAG, (long long)rows, (long long)cols);
	if (strcmp(l.tag, want) || npt_q4_size(rows, cols, &nbytes) || nbytes != l.nbytes ||
	    (axis == 1 && (start % NPT_Q4_GROUP || len % NPT_Q4_GROUP))) {
		if (!w->packed_why[0])
			snprintf(w->packed_why, sizeof(w->packed_why), "tensor parallelism reads "
				 "'%s' [%lld, %lld] from f32 slices: its layout '%s' is %s",
				 src->name, (long long)rows, (long long)cols, l.tag,
				 strncmp(l.tag, NPL_Q4_TAG "/", strlen(NPL_Q4_TAG) + 1) ?
				 "not a 4-bit one (ranks read only 4-bit layouts in place)" :
				 strcmp(l.tag, want) || nbytes != l.nbytes ? "not this shape's" :
				 "cut inside a group of 32 by this split");
		return 0;
	}
	p->q4 = (const char *)l.data + (axis == 0 ? (size_t)start * rb :
				       (size_t)(start / NPT_Q4_GROUP * Q4_BLOCK));
	p->q4_ld = rb;
	w->packed_used++;
	w->step_bytes += axis == 0 ? (uint64_t)len * rb :
			 (uint64_t)rows * (uint64_t)(len / NPT_Q4_GROUP * Q4_BLOCK);
	return 1;
}

/* replace @p's view by its slice [start, start + len) along @axis of @src, and read its
 * part of the 4-bit layout when there is one; count its bytes */
static npllama_status_t slice(npushm_model_t *m, const npushm_tensor_t *src, npl_proj_t *p,
			      int axis, int64_t start, int64_t len, npl_weights_t *w)
{
	const int64_t *sh = npt_tensor_shape(p->t);
	npt_tensor_t *v;

	if (!q4_slice(m, src, p, axis, start, len, w))
		w->step_bytes += (uint64_t)len * (uint64_t)sh[1 - axis] * sizeof(float);
	if (npt_tensor_slice(p->t, axis, start, start + len, 1, &v))
		return npl_tensor_fail(NPT_E_INVAL, "slicing a weight for tensor parallelism");
	npt_tensor_free(p->t);
	p->t = v;
	return locate(p);
}

/* a rank's slices of layer @d's projections @src (tensor parallelism) */
static npllama_status_t split_layer(npushm_model_t *m, const npushm_tensor_t *const *src,
				    npl_layer_t *d, const npl_split_t *p, int hd, npl_weights_t *w)
{
	const int64_t start[NPL_NPROJ] = {
		(int64_t)p->head0 * hd, (int64_t)p->kv0 * hd, (int64_t)p->kv0 * hd,
		(int64_t)p->head0 * hd, p->ffn0, p->ffn0, p->ffn0 };
	const int64_t len[NPL_NPROJ] = {
		(int64_t)p->heads * hd, (int64_t)p->kv_heads * hd, (int64_t)p->kv_heads * hd,
		(int64_t)p->heads * hd, p->ffn, p->ffn, p->ffn };
	/* rows of q, k, v, gate and up; columns of o and down */
	const int axis[NPL_NPROJ] = { 0, 0, 0, 1, 0, 0, 1 };
	npllama_status_t st;

	for (int k = 0; k < NPL_NPROJ; k++)
		if ((st = slice(m, src[k], &d->p[k], axis[k], start[k], len[k], w)))
			return st;
	return NPLLAMA_OK;
}

/* map the page-table entries of the bytes projection @p reads (see above) */
static void prefault(const npl_proj_t *p)
{
	static long page;
	const char *b;
	size_t n;
	uintptr_t lo;

	if (p->q4) {
		const int64_t *sh = npt_tensor_shape(p->t);

		b = p->q4;
		n = (size_t)(sh[0] - 1) * p->q4_ld + (size_t)(sh[1] / NPT_Q4_GROUP * Q4_BLOCK);
	} else if (p->packed) {
		b = p->packed;
		n = p->packed_bytes;
	} else {
		const int64_t *sh = npt_tensor_shape(p->t);

		b = (const char *)p->f32;
		n = sizeof(float) * (size_t)((sh[0] - 1) * p->ld + sh[1]);
	}
	if (!page)
		page = sysconf(_SC_PAGESIZE);
	lo = (uintptr_t)b / (uintptr_t)page * (uintptr_t)page;
	(void)madvise((void *)lo, (size_t)((uintptr_t)b + n - lo), MADV_POPULATE_READ);
}

npllama_status_t npl_weights_make(npushm_model_t *m, const struct npllama *e, npl_weights_t *w)
{
	const npl_layout_t *l = &e->layout;
	const npl_split_t *p = &e->sp;
	npllama_status_t st;

	memset(w, 0, sizeof(*w));
	w->layers = calloc((size_t)l->cfg.layers, sizeof(*w->layers));
	if (!w->layers)
		return npl_fail(NPLLAMA_ERR_NO_MEMORY, "out of memory for %d layers", l->cfg.layers);
	if ((st = import(m, &l->head, &w->head)))
		return st;
	if (p->nranks > 1) {
		if (p->vocab_rows > 0 &&
		    (st = slice(m, &l->head, &w->head, 0, p->vocab0, p->vocab_rows, w)))
			return st;
	} else {
		use_packed(m, &l->head, &w->head, w);
	}
	w->embed = l->embed.data;
	w->norm = l->norm.data;
	w->step_bytes += (uint64_t)l->cfg.hidden * sizeof(float) * (2 * (uint64_t)l->cfg.layers + 2);
	for (int i = 0; i < l->cfg.layers; i++) {
		const npl_layer_src_t *s = &l->layers[i];
		npl_layer_t *d = &w->layers[i];
		const npushm_tensor_t *src[NPL_NPROJ] = { &s->q, &s->k, &s->v, &s->o, &s->gate,
							  &s->up, &s->down };

		for (int k = 0; k < NPL_NPROJ; k++)
			if ((st = import(m, src[k], &d->p[k])))
				return st;
		d->ln1 = s->ln1.data;
		d->ln2 = s->ln2.data;
		if (p->nranks > 1) {
			if ((st = split_layer(m, src, d, p, l->cfg.head_dim, w)))
				return st;
			continue;
		}
		for (int k = 0; k < NPL_NPROJ; k++)
			use_packed(m, src[k], &d->p[k], w);
	}
	for (int i = 0; i < l->cfg.layers; i++)
		for (int k = 0; k < NPL_NPROJ; k++)
			prefault(&w->layers[i].p[k]);
	if (p->vocab_rows > 0)
		prefault(&w->head);
	return NPLLAMA_OK;
}

void npl_weights_free(npl_weights_t *w, int layers)
{
	for (int i = 0; w->layers && i < layers; i++)
		for (int k = 0; k < NPL_NPROJ; k++)
			npt_tensor_free(w->layers[i].p[k].t);
	free(w->layers);
	npt_tensor_free(w->head.t);
	memset(w, 0, sizeof(*w));
}
