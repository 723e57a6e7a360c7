/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * internal.h - structures shared by the libnpllama sources: the layout read
 * from the model, the weight views, the engine and a sequence.
 */
#ifndef NPLLAMA_INTERNAL_H
#define NPLLAMA_INTERNAL_H

#define NPLLAMA_BUILDING_LIBRARY 1
#include "npllama.h"
#include "nptensor.h"

#define NPL_HIDDEN __attribute__((visibility("hidden")))

/* ---- status.c ---- */
NPL_HIDDEN npllama_status_t npl_fail(npllama_status_t st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* TENSOR (or NO_MEMORY) with the tensor library's message and what we did */
NPL_HIDDEN npllama_status_t npl_tensor_fail(npt_status_t s, const char *what);

/* ---- layout.c: the model's tensors checked against the Llama layout ---- */
typedef struct {
	npushm_tensor_t ln1, q, k, v, o, ln2, gate, up, down;
} npl_layer_src_t;

typedef struct {
	npllama_config_t cfg;
	npushm_tensor_t embed, norm, head;	/* head == embed when tied */
	npl_layer_src_t *layers;		/* cfg.layers of them; free() */
} npl_layout_t;

NPL_HIDDEN npllama_status_t npl_layout_read(npushm_model_t *m, npl_layout_t *out);

/* ---- weights.c: zero-copy nptensor views of the linear weights ---- */
/* the projections of a layer, in this order */
enum { NPL_Q, NPL_K, NPL_V, NPL_O, NPL_GATE, NPL_UP, NPL_DOWN, NPL_NPROJ };

/* the tag of a 4-bit layout (`npushm load --dtype q4`), then "/NxK" */
#define NPL_Q4_TAG "npt-q4_0/g32-f16"

/*
 * One projection [out, in] and the ways to compute with it: a 4-bit layout
 * (npt_q4_linear_strided; with tensor parallelism this rank's rows or
 * columns of it, in place), else for up to NPT_GEMV_MAX_ROWS input rows (decode) the
 * weight streamed once by npt_gemv_packed (its packed layout) or npt_gemv_f32
 * (the plain rows: f32, ld floats apart), else npt_linear on the view (with
 * its packed layout attached when there is one).
 */
typedef struct {
	npt_tensor_t *t;		/* the view [out, in] (a slice with tensor parallelism) */
	const float *f32;		/* its first element, in the mapping */
	int64_t ld;			/* floats between its rows */
	const void *q4;			/* 4-bit bytes in the mapping, or NULL */
	size_t q4_ld;			/* bytes between their rows (a rank's columns: more
					   than the row of its slice) */
	char tag[NPT_PACK_TAG_MAX];	/* the packed layout npt_linear reads, "" if none */
	const void *packed;		/* its bytes, in the mapping */
	size_t packed_bytes;
	int gemv_packed;		/* 1 until npt_gemv_packed refuses the layout */
} npl_proj_t;

typedef struct {
	npl_proj_t p[NPL_NPROJ];
	const float *ln1, *ln2;				/* [hidden], in the mapping */
} npl_layer_t;

typedef struct {
	const float *embed, *norm;	/* in the mapping */
	npl_proj_t head;		/* [vocab, hidden] (this rank's rows) */
	npl_layer_t *layers;
	uint64_t step_bytes;	/* weight bytes one decode step reads */
	int packed_total;	/* projections the model carries packed layouts for */
	int packed_used;	/* of those, read packed (the rest plain) */
	char packed_why[640];	/* why the first one was not used, "" if all were */
} npl_weights_t;

struct npllama;
/* views of the weights, this rank's slices with tensor parallelism (split.c's sizes) */
NPL_HIDDEN npllama_status_t npl_weights_make(npushm_model_t *m, const struct npllama *e,
					     npl_weights_t *w);
NPL_HIDDEN void npl_weights_free(npl_weights_t *w, int layers);

/* ---- kernels.c: the small per-token math around the projections ---- */
NPL_HIDDEN void npl_rmsnorm(const float *x, const float *w, int n, double eps, float *out);
/* rotate-half RoPE of @heads heads of @d floats each, at position @pos */
NPL_HIDDEN void npl_rope(float *x, int heads, int d, int pos, const float *inv_freq,
			 double scale);
NPL_HIDDEN void npl_swiglu(float *gate, const float *up, int n);
/* causal attention of one query row over @len cached keys/values */
NPL_HIDDEN void npl_attend(const float *q, const float *kc, const float *vc, int len, int stride,
			   int d, float scale, float *scores, float *out);

/* ---- split.c: tensor parallelism over an npccl communicator ---- */
/* this rank's part of the model (the whole model with one rank) */
typedef struct {
	int rank, nranks;
	int heads, kv_heads, ffn;	/* this rank's heads, KV heads, FFN columns */
	int head0, kv0, ffn0;		/* the first of each */
	int vocab0, vocab_rows;		/* its rows of the output projection */
	int vocab_chunk;		/* ceil(vocab / nranks): the AllGather's count */
} npl_split_t;

NPL_HIDDEN npllama_status_t npl_split_make(const npllama_config_t *c, npccl_comm_t comm,
					   npl_split_t *out);
/* the engine's shared buffers: partial sums for @tokens tokens (collective) */
NPL_HIDDEN npllama_status_t npl_split_reserve(struct npllama *e, int tokens);
NPL_HIDDEN void npl_split_free(struct npllama *e);
/* complete the partial sums e->part[0 .. n * hidden) (AllReduce SUM) */
NPL_HIDDEN npllama_status_t npl_split_allreduce(struct npllama *e, int n);
/* e->gather holds this rank's logits at rank * vocab_chunk: join them into @logits */
NPL_HIDDEN npllama_status_t npl_split_logits(struct npllama *e, float *logits);
/* collectives the prefix code needs: every rank ends with rank 0's @v */
NPL_HIDDEN npllama_status_t npl_split_bcast_int(struct npllama *e, int *v);
/* every rank ends with the smallest @v of all ranks */
NPL_HIDDEN npllama_status_t npl_split_min_int(struct npllama *e, int *v);
/* @all [nranks * count] = every rank's @mine [count] floats, in rank order */
NPL_HIDDEN npllama_status_t npl_split_gather(struct npllama *e, const float *mine, size_t count,
					     float *all);

/* ---- forward.c ---- */
struct npllama_seq;
NPL_HIDDEN npllama_status_t npl_forward(struct npllama_seq *s, const int64_t *ids, int n,
					float *logits);

struct npllama {
	npl_layout_t layout;
	npllama_config_t cfg;
	npl_split_t sp;			/* this rank's part */
	npccl_comm_t comm;		/* NULL: one process */
	float *part;			/* npccl_mem_alloc: [part_tokens, hidden] partial sums */
	int part_tokens;
	float *gather;			/* npccl_mem_alloc: [nranks * vocab_chunk] logits */
	npllama_profile_t prof;
	npl_weights_t w;
	npushm_dev_t *dev;		/* for the sequences' regions */
	uint8_t hash[16];		/* the model's content hash (prefix keys) */
	uint32_t model_uid;		/* who published the weights: prefixes of this uid
					   are trusted (prefix.c) */
	char hash_hex[33];
	float *inv_freq;		/* head_dim / 2 RoPE frequencies */
	int nseqs;			/* live sequences */
	int destroyed;			/* npllama_destroy() was called while sequences lived:
					   the last npllama_seq_destroy() frees the engine */
};

/* INVALID when @s's engine was destroyed (only npllama_seq_destroy is left) */
NPL_HIDDEN npllama_status_t npl_seq_usable(const struct npllama_seq *s, const char *fn);

struct npllama_seq {
	struct npllama *e;
	npushm_region_t *region;	/* the KV cache */
	float *kv;			/* its mapping: [layers][2][capacity][kv_heads * head_dim],
					   this rank's KV heads with tensor parallelism */
	uint64_t kv_bytes;
	int capacity, len;
	int64_t *ids;			/* the tokens fed so far, capacity of them */
	/* the last attach or publish: regions under a prefix's name it did not trust */
	int untrusted;
	uint32_t untrusted_uid;		/* the first one's owner, UINT32_MAX: unknown */
	char untrusted_name[NPLLAMA_PREFIX_NAME_SIZE];
	/* activations for up to act_tokens tokens, grown on demand */
	float *x, *h, *q, *att, *mid, *up, *scores;
	int act_tokens;
};

#endif
