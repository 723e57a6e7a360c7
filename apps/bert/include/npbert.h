/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npbert.h - libnpbert: BERT encoder inference served from a shared npushm
 * model, computed with libnptensor, optionally split across processes
 * (tensor parallelism) with libnpccl.
 *
 * Tutorial
 * --------
 * Load the safetensors file once,
 * `npushm load bert.safetensors --name bert` (or npushm_model_load()); then
 * every serving process attaches it and makes an engine. The engine reads
 * the weights in place from the read-only shared mapping: no weight byte is
 * copied into the process.
 *
 *	npushm_model_t *m;
 *	npbert_t *bert;
 *	npbert_config_t c;
 *	npushm_model_attach("bert", &m);
 *	if (npbert_create(m, NULL, &bert) != NPBERT_OK)        // checks the layout
 *		fprintf(stderr, "%s\n", npbert_last_error());
 *	npbert_get_config(bert, &c);                            // sizes from the shapes
 *	int64_t ids[2 * 4] = { 101, 7592, 102, 0,   101, 2088, 2003, 102 };
 *	int64_t mask[2 * 4] = { 1, 1, 1, 0,         1, 1, 1, 1 };  // 0 = padding
 *	npbert_batch_t in = { .batch = 2, .seq_len = 4, .input_ids = ids,
 *			      .attention_mask = mask };        // token types: all 0
 *	float *hidden = malloc(sizeof(float) * 2 * 4 * c.hidden);
 *	float *pooled = malloc(sizeof(float) * 2 * c.hidden);
 *	if (npbert_run(bert, &in, hidden, pooled) != NPBERT_OK)
 *		fprintf(stderr, "%s\n", npbert_last_error());
 *	npbert_destroy(bert);
 *	npushm_model_detach(m);
 *
 * The model
 * ---------
 * Hugging Face's BertModel in eval mode, float32: token + position + token
 * type embeddings and LayerNorm; L post-LayerNorm encoder layers (self
 * attention with the attention mask, GELU with erf); last hidden state
 * [batch, seq_len, hidden] and pooled output tanh(dense(hidden[:, 0]))
 * [batch, hidden]. Tensor names are Hugging Face's (embeddings.*,
 * encoder.layer.N.*, pooler.dense.*), optionally all prefixed with "bert."
 * (checkpoints of BertFor* heads; other tensors such as cls.* are ignored).
 * Layers, hidden size, FFN width, vocabulary, positions and token types come
 * from the tensor shapes; the head count from npbert_opts_t.heads, else the
 * file's __metadata__ "num_attention_heads" (or "heads"), else hidden / 64.
 * A masked key gets exactly zero attention weight, so padding never changes
 * the result of the tokens that are not padding.
 *
 * Tensor parallelism
 * ------------------
 * With npbert_opts_t.comm set, the communicator's N ranks (processes, one
 * engine each) serve ONE model instance: each rank computes its heads/N
 * attention heads and ffn/N FFN columns from views of the shared weights
 * (Q/K/V and the FFN's first dense split by rows of the stored [out, in]
 * weights, attention output and the FFN's second dense by columns), and an
 * npccl AllReduce (SUM, f32) joins the partial outputs twice per layer.
 * npbert_create() and npbert_run() are then collective: every rank calls
 * them in the same order with the same arguments, and every rank gets the
 * full outputs. Heads and FFN width must divide by N.
 *
 * Memory
 * ------
 * Weights: the model's mapping, shared by every process (npbert_memory_t
 * .weight_bytes says how much of it this rank reads). Activations: one
 * workspace per engine, sized for the largest batch seen so far (or
 * npbert_reserve()), reused by every layer and every later request: once
 * warm, a request takes no fresh memory (npbert_memory_t.fresh_bytes == 0).
 *
 * Errors and ownership
 * --------------------
 * Functions that can fail return npbert_status_t; npbert_last_error() has a
 * sentence for a human (naming the tensor, the sequence and position, ...),
 * per thread, until the thread's next failing call. Nothing prints, nothing
 * exits. The engine keeps a reference on the model (it may be detached
 * right after npbert_create()); input arrays are only read during the call;
 * output arrays are the caller's. A NULL engine makes the functions that
 * return a status INVALID; the queries (get_config, get_memory,
 * get_profile, packed_weights) then give zeros (and a prefix of "").
 *
 * Thread safety: an engine is used by one thread at a time. Several engines
 * may run in different threads, but libnptensor serialises evaluations, so
 * use processes (or tensor parallelism) to use more cores, and
 * npt_set_num_threads() for the threads of each evaluation.
 */
#ifndef NPBERT_H
#define NPBERT_H

#include <stddef.h>
#include <stdint.h>

#include "npccl.h"
#include "npushm.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(NPBERT_BUILDING_LIBRARY)
#define NPBERT_API __attribute__((visibility("default")))
#else
#define NPBERT_API
#endif

typedef enum npbert_status {
	NPBERT_OK = 0,
	NPBERT_ERR_INVALID,	/* bad argument (NULL, bad option, reserved field not zero) */
	NPBERT_ERR_LAYOUT,	/* the model is not a BERT layout: the message names the tensor */
	NPBERT_ERR_INPUT,	/* the batch is refused: ids, types, mask or sizes */
	NPBERT_ERR_SPLIT,	/* tensor parallelism: heads or FFN width do not divide by N */
	NPBERT_ERR_NO_MEMORY,	/* out of memory for the activations */
	NPBERT_ERR_COMM,	/* a collective failed (a rank died, timed out, disagreed) */
	NPBERT_ERR_TENSOR,	/* the tensor library refused an operation (a bug: report it) */
	NPBERT_ERR_UNSUPPORTED,	/* e.g. a pooled output from a model without a pooler */
	NPBERT_ERR_WEIGHTS,	/* a weight the engine reads is NaN or infinite: the message
				   names the tensor and the element */
} npbert_status_t;

/* A short constant description of @status. */
NPBERT_API const char *npbert_strerror(npbert_status_t status);
/* The calling thread's last error message, "" if none. Never NULL. */
NPBERT_API const char *npbert_last_error(void);

typedef struct npbert npbert_t;

/* npbert_opts_t.flags */
enum {
	/* layer_norm_eps is the epsilon even when it is 0 (else 0 means "from the model") */
	NPBERT_EPS_GIVEN = 1u << 0,
	/* skip the scan of the weights for NaN and infinities (see npbert_create()) */
	NPBERT_NO_WEIGHT_CHECK = 1u << 1,
};

typedef struct npbert_opts {
	int heads;		/* attention heads; 0: __metadata__, else hidden / 64 */
	double layer_norm_eps;	/* 0 (without NPBERT_EPS_GIVEN): __metadata__
				   "layer_norm_eps", else 1e-12; must be finite, >= 0 */
	npccl_comm_t comm;	/* NULL: one process; else tensor parallel over its ranks */
	uint32_t flags;		/* NPBERT_EPS_GIVEN, NPBERT_NO_WEIGHT_CHECK; other bits zero */
	uint32_t reserved[7];	/* zero */
} npbert_opts_t;

typedef struct npbert_config {
	int layers;
	int hidden;
	int heads;
	int head_dim;
	int ffn;		/* intermediate size */
	int vocab;		/* rows of embeddings.word_embeddings.weight */
	int positions;		/* rows of embeddings.position_embeddings.weight: max seq_len */
	int type_vocab;		/* rows of embeddings.token_type_embeddings.weight */
	int has_pooler;
	double layer_norm_eps;
	int tp_rank, tp_size;	/* 0, 1 without tensor parallelism */
	const char *prefix;	/* "" or "bert." */
} npbert_config_t;

/*
 * Make an engine for an attached model: validate every tensor's name, dtype
 * (F32) and shape against the BERT layout (LAYOUT naming the first tensor
 * that is missing or wrong, with the expected shape in numbers), derive the
 * sizes, and build views of the weights (no copy). Then every weight the
 * engine reads is scanned for NaN and infinities (WEIGHTS naming the tensor
 * and the element): one pass over the weights, which also pages them in
 * (docs/bert.md says what it costs); NPBERT_NO_WEIGHT_CHECK skips it. An
 * eps in __metadata__ that is not a finite number >= 0 is INVALID, quoting
 * it. @opts may be NULL. Collective when opts->comm is set
 * (SPLIT when heads or FFN width do not divide by the number of ranks).
 * @out [out]: free with npbert_destroy().
 */
NPBERT_API npbert_status_t npbert_create(npushm_model_t *model, const npbert_opts_t *opts,
					 npbert_t **out);
/* Free the engine and its workspace; NULL is fine. Not collective, but with
 * tensor parallelism destroy the engine before the communicator. */
NPBERT_API void npbert_destroy(npbert_t *bert);
/* @config [out]; its prefix string lives as long as @bert (all zero, prefix
 * "", when @bert is NULL). */
NPBERT_API void npbert_get_config(const npbert_t *bert, npbert_config_t *config);

typedef struct npbert_batch {
	int batch;			/* sequences, >= 1 */
	int seq_len;			/* padded length, 1 .. config.positions */
	const int64_t *input_ids;	/* [batch][seq_len], 0 .. vocab-1 (padding included) */
	const int64_t *token_type_ids;	/* [batch][seq_len], 0 .. type_vocab-1; NULL: all 0 */
	const int64_t *attention_mask;	/* [batch][seq_len], 1 token / 0 padding; NULL: all 1.
					   Every sequence needs at least one 1. */
} npbert_batch_t;

/*
 * Run the encoder on a padded batch. The batch is checked first (INPUT,
 * naming the sequence and position of the first bad value): empty batch or
 * sequences, seq_len above the position table, token ids outside the
 * vocabulary, token types outside the type table, mask values other than
 * 0/1, a sequence with no token. @hidden [out, may be NULL]: batch * seq_len
 * * hidden floats, row-major; @pooled [out, may be NULL]: batch * hidden
 * floats (UNSUPPORTED if the model has no pooler). A NULL @bert, @batch or
 * input_ids is INVALID. Collective with tensor parallelism (same batch on
 * every rank; every rank gets the outputs).
 */
NPBERT_API npbert_status_t npbert_run(npbert_t *bert, const npbert_batch_t *batch, float *hidden,
				      float *pooled);

/* Size the workspace for batches up to @batch x @seq_len now instead of at
 * the first such request: INVALID unless batch >= 1, seq_len 1 ..
 * config.positions and batch * seq_len <= INT32_MAX; NO_MEMORY when the
 * workspace cannot be had (the engine then holds none, and the next run
 * sizes it again). Collective with tensor parallelism. */
NPBERT_API npbert_status_t npbert_reserve(npbert_t *bert, int batch, int seq_len);

typedef struct npbert_memory {
	uint64_t weight_bytes;		/* bytes of shared weights this rank reads (not copied) */
	uint64_t workspace_bytes;	/* activation workspace, all buffers */
	uint64_t shared_workspace_bytes;/* part of it in npccl shared memory (tensor parallel) */
	uint64_t capacity_tokens;	/* batch * seq_len the workspace holds */
	uint64_t fresh_bytes;		/* memory the last npbert_run took from the OS */
	uint64_t copied_bytes;		/* implicit copies in the last run (0: weights read in place) */
} npbert_memory_t;

/* @mem [out] (all zero when @bert is NULL). */
NPBERT_API void npbert_get_memory(const npbert_t *bert, npbert_memory_t *mem);

/*
 * Packed linear weights (a model loaded with `npushm load --dtype f32`): how
 * many the model carries (@total) and how many this engine reads packed, in
 * place (@used; none with tensor parallelism, whose slices are plain). NULL
 * when every one is used or there are none, else one line saying why the
 * first was not (another CPU or library made it): the engine then reads the
 * plain weights, with the same results. A model loaded packed-only (`npushm
 * load --packed-only`) has no plain weights: those the engine cannot read in
 * place are unpacked into this process's memory, and the line says so with
 * the memory it took (not counted in npbert_memory_t.weight_bytes, which
 * counts the shared bytes read in place); a layout it cannot read at all
 * fails npbert_create(). Either pointer may be NULL.
 */
NPBERT_API const char *npbert_packed_weights(const npbert_t *bert, int *used, int *total);

/* Where the time of the runs since creation (or the last reset) went, in
 * seconds of wall time on this rank. */
typedef struct npbert_profile {
	uint64_t runs, sequences, tokens;
	double total;
	double embed;		/* embedding gathers, sum and LayerNorm */
	double matmul;		/* the dense layers: GEMM + fused bias/GELU/tanh */
	double attention;	/* scores, mask + softmax, context, head merge */
	double elementwise;	/* residual adds and LayerNorms of the layers */
	double allreduce;	/* tensor parallel AllReduce (0 with one rank) */
} npbert_profile_t;

/* @prof [out] (all zero when @bert is NULL). */
NPBERT_API void npbert_get_profile(const npbert_t *bert, npbert_profile_t *prof);
NPBERT_API void npbert_reset_profile(npbert_t *bert);

#ifdef __cplusplus
}
#endif
#endif /* NPBERT_H */
