/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * internal.h - structures shared by the libnpbert sources: the engine, its
 * weight views and its activation workspace.
 */
#ifndef NPBERT_INTERNAL_H
#define NPBERT_INTERNAL_H

#define NPBERT_BUILDING_LIBRARY 1
#include "npbert.h"
#include "nptensor.h"

#define NPB_HIDDEN __attribute__((visibility("hidden")))

/* ---- status.c ---- */
NPB_HIDDEN npbert_status_t npb_fail(npbert_status_t st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* TENSOR (or NO_MEMORY) with the tensor library's message and what we did */
NPB_HIDDEN npbert_status_t npb_tensor_fail(npt_status_t s, const char *what);

/* ---- layout.c: the model's tensors checked against the BERT layout ---- */
typedef struct {
	npushm_tensor_t q_w, q_b, k_w, k_b, v_w, v_b, o_w, o_b, ln1_w, ln1_b;
	npushm_tensor_t i_w, i_b, d_w, d_b, ln2_w, ln2_b;
} npb_layer_src_t;

typedef struct {
	npbert_config_t cfg;
	char prefix[8];
	npushm_tensor_t word, pos, type, eln_w, eln_b, pool_w, pool_b;
	npb_layer_src_t *layers;	/* cfg.layers of them; free() */
} npb_layout_t;

NPB_HIDDEN npbert_status_t npb_layout_read(npushm_model_t *m, const npbert_opts_t *o,
					   npb_layout_t *out);

/* ---- finite.c: every weight the engine reads is a finite number (WEIGHTS naming it) ---- */
NPB_HIDDEN npbert_status_t npb_check_finite(const npushm_tensor_t *t);
/* @t read from its packed layout @tag (@data, @nbytes) */
NPB_HIDDEN npbert_status_t npb_check_finite_packed(const npushm_tensor_t *t, const char *tag,
						   const void *data, uint64_t nbytes);

/* ---- weights.c: zero-copy nptensor views of the weights (this rank's slices) ---- */
typedef struct {
	npt_tensor_t *q_w, *q_b, *k_w, *k_b, *v_w, *v_b;	/* [Hl, H], [Hl] */
	npt_tensor_t *o_w, *o_b;				/* [H, Hl], [H] (o_b: rank 0) */
	npt_tensor_t *ln1_w, *ln1_b;
	npt_tensor_t *i_w, *i_b;				/* [Fl, H], [Fl] */
	npt_tensor_t *d_w, *d_b;				/* [H, Fl], [H] (d_b: rank 0) */
	npt_tensor_t *ln2_w, *ln2_b;
} npb_layer_t;

typedef struct {
	npt_tensor_t *word, *pos, *type, *eln_w, *eln_b, *pool_w, *pool_b;
	npb_layer_t *layers;
	uint64_t bytes;		/* bytes of the views this rank reads */
	int packed_total;	/* linear weights the model carries packed layouts for */
	int packed_used;	/* of those, read packed (the rest plain) */
	char packed_why[640];	/* why the first one was not used, "" if all were */
	uint64_t private_bytes;	/* packed-only weights unpacked into this process */
} npb_weights_t;

/* @check: also refuse non-finite weights (finite.c) */
NPB_HIDDEN npbert_status_t npb_weights_make(npushm_model_t *m, const npb_layout_t *l, bool check,
					    npb_weights_t *w);
NPB_HIDDEN void npb_weights_free(npb_weights_t *w, int layers);

/* ---- workspace.c: activation buffers, grown to the largest batch ---- */
enum {
	NPB_X, NPB_H1, NPB_PART, NPB_Q, NPB_K, NPB_V, NPB_CTX, NPB_INTER, NPB_MASK, NPB_NBUF
};

typedef struct {
	npt_tensor_t *buf[NPB_NBUF];	/* flat f32 buffers */
	float *data[NPB_NBUF];
	uint64_t cap[NPB_NBUF];		/* elements */
	void *shared_part;		/* npccl_mem_alloc'd NPB_PART (tensor parallel) */
	uint64_t tokens;		/* capacity */
	uint64_t bytes, shared_bytes;
} npb_workspace_t;

struct npbert;
NPB_HIDDEN npbert_status_t npb_workspace_fit(struct npbert *e, int batch, int seq_len);
NPB_HIDDEN void npb_workspace_free(struct npbert *e);
/* a view [ndim/shape] of the first elements of buffer `which` */
NPB_HIDDEN npbert_status_t npb_view(struct npbert *e, int which, int ndim, const int64_t *shape,
				    npt_tensor_t **out);

/* ---- batch.c ---- */
NPB_HIDDEN npbert_status_t npb_batch_check(const npbert_config_t *c, const npbert_batch_t *b);

/* ---- encoder.c ---- */
NPB_HIDDEN npbert_status_t npb_encode(struct npbert *e, const npbert_batch_t *b, float *hidden,
				      float *pooled);

struct npbert {
	npb_layout_t layout;
	npbert_config_t cfg;
	npb_weights_t w;
	npb_workspace_t ws;
	npccl_comm_t comm;		/* NULL without tensor parallelism */
	int rank, nranks;
	int hl, Hl, Fl;			/* local heads, local attention width, local FFN width */
	double scale;			/* 1 / sqrt(head_dim) */
	npbert_profile_t prof;
	npbert_memory_t mem;
};

#endif
