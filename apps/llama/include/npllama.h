/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npllama.h - libnpllama: Llama-style decoder inference served from a shared
 * npushm model, its projections computed with libnptensor, each sequence's
 * KV cache in an npushm region of the worker.
 *
 * Tutorial
 * --------
 * Load the safetensors file once,
 * `npushm load llama.safetensors --name llama`; every serving process
 * attaches it and makes an engine, which reads the weights in place from the
 * read-only shared mapping (no weight is copied).
 *
 *	npushm_model_t *m;
 *	npllama_t *llm;
 *	npllama_seq_t *seq;
 *	npllama_config_t c;
 *	npushm_model_attach("llama", &m);
 *	if (npllama_create(m, NULL, &llm) != NPLLAMA_OK)       // checks the layout
 *		fprintf(stderr, "%s\n", npllama_last_error());
 *	npllama_get_config(llm, &c);
 *	float *logits = malloc(sizeof(float) * c.vocab);
 *	int64_t prompt[3] = { 1, 15043, 29892 }, next;
 *	npllama_seq_create(llm, 0, &seq);                    // KV cache for c.context tokens
 *	npllama_seq_feed(seq, prompt, 3, logits);            // prefill: logits of the last token
 *	for (int i = 0; i < 16; i++) {
 *		npllama_sample(logits, c.vocab, NULL, NULL, &next);  // NULL: greedy
 *		npllama_seq_feed(seq, &next, 1, logits);         // one decode step
 *	}
 *	npllama_seq_destroy(seq);
 *	npllama_destroy(llm);
 *	npushm_model_detach(m);
 *
 * The model
 * ---------
 * Hugging Face's LlamaForCausalLM in eval mode, float32: token embedding;
 * L decoder layers (RMSNorm, self attention with rotate-half RoPE and
 * grouped-query attention, causal; RMSNorm, SwiGLU MLP down(silu(gate(x)) *
 * up(x))); a final RMSNorm and the output projection lm_head.weight, or the
 * embedding itself when the file has no lm_head.weight (tied). Tensor names
 * are Hugging Face's: model.embed_tokens.weight, model.layers.N.
 * {input_layernorm, post_attention_layernorm}.weight, model.layers.N.
 * self_attn.{q,k,v,o}_proj.weight, model.layers.N.mlp.{gate,up,down}_proj.
 * weight, model.norm.weight, lm_head.weight; no biases. Layers, hidden
 * size, FFN width and vocabulary come from the shapes; the head counts,
 * RoPE and epsilon from the file's __metadata__ (config.json's names, as
 * strings or numbers): num_attention_heads (default hidden / 64),
 * num_key_value_heads (default: the shapes of k_proj), rope_theta (10000),
 * rope_scaling (a JSON object {"type": "linear", "factor": F}) or
 * rope_scaling_factor (linear; 1), rms_norm_eps (1e-6),
 * max_position_embeddings (the context: 2048). Metadata that contradicts the
 * shapes (hidden_size, intermediate_size, vocab_size, num_hidden_layers,
 * head counts that do not fit the projections) is refused, naming both.
 *
 * Sequences and the KV cache
 * --------------------------
 * A sequence holds the keys and values of every token fed so far, one
 * region of npushm device memory (the worker's, not shared, not named),
 * [layers][2][context][kv_heads * head_dim] f32, allocated when the
 * sequence is made for its capacity and never grown. Feeding n tokens runs
 * them at the next n positions (a prompt in one call: prefill; then one
 * token per call: decode); logits are those of the last token fed.
 *
 * Errors and ownership
 * --------------------
 * Functions that can fail return npllama_status_t; npllama_last_error() has
 * a sentence for a human, per thread, until the thread's next failing call.
 * Nothing prints, nothing exits. The engine keeps a reference on the model;
 * a sequence keeps its engine alive until it is destroyed (destroy the
 * sequences first: a sequence whose engine was destroyed can only be
 * destroyed, every other call on it is INVALID). Input arrays are only read
 * during the call; output arrays are the caller's. A NULL handle makes a
 * function that returns a status INVALID; the queries (get_config,
 * get_profile, seq_len, ...) then give zeros.
 *
 * Thread safety: an engine and its sequences are used by one thread at a
 * time. libnptensor serialises evaluations; use npt_set_num_threads() for
 * the threads of each projection and processes for more engines.
 */
#ifndef NPLLAMA_H
#define NPLLAMA_H

#include <stddef.h>
#include <stdint.h>

#include "npccl.h"
#include "npushm.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(NPLLAMA_BUILDING_LIBRARY)
#define NPLLAMA_API __attribute__((visibility("default")))
#else
#define NPLLAMA_API
#endif

typedef enum npllama_status {
	NPLLAMA_OK = 0,
	NPLLAMA_ERR_INVALID,	/* bad argument (NULL, bad option, reserved field not zero) */
	NPLLAMA_ERR_LAYOUT,	/* the model is not a Llama layout, or its metadata contradicts
				   the shapes: the message names the tensor or the key */
	NPLLAMA_ERR_INPUT,	/* token ids outside the vocabulary, or no tokens */
	NPLLAMA_ERR_CONTEXT,	/* more tokens than the sequence (or the model's context) holds */
	NPLLAMA_ERR_NO_MEMORY,	/* out of memory (activations, or the KV cache's region) */
	NPLLAMA_ERR_REGION,	/* the npushm device refused the KV cache's region */
	NPLLAMA_ERR_TENSOR,	/* the tensor library refused an operation (a bug: report it) */
	NPLLAMA_ERR_SPLIT,	/* the model cannot be split over this many ranks (heads, KV
				   heads or FFN width do not divide by it) */
	NPLLAMA_ERR_COMM,	/* a collective between the ranks failed (a rank died, timed
				   out, or the ranks were not called alike) */
	NPLLAMA_ERR_UNTRUSTED,	/* (1.2) a prefix's name is held by a region of a user this
				   engine does not trust: nothing was published */
} npllama_status_t;

/* A short constant description of @status. */
NPLLAMA_API const char *npllama_strerror(npllama_status_t status);
/* The calling thread's last error message, "" if none. Never NULL. */
NPLLAMA_API const char *npllama_last_error(void);

typedef struct npllama npllama_t;
typedef struct npllama_seq npllama_seq_t;

typedef struct npllama_opts {
	uint32_t flags;		/* zero (none defined yet) */
	uint32_t reserved[7];	/* zero */
} npllama_opts_t;

typedef struct npllama_config {
	int layers;
	int hidden;
	int heads;
	int kv_heads;
	int head_dim;		/* hidden / heads */
	int ffn;		/* intermediate size */
	int vocab;
	int context;		/* max_position_embeddings: positions a sequence may reach */
	int tied;		/* 1: the output projection is the embedding */
	double rope_theta;
	double rope_scale;	/* linear scaling factor: positions are divided by it (1: none) */
	double rms_eps;
} npllama_config_t;

/*
 * Make an engine for an attached model: validate every tensor's name, dtype
 * (F32) and shape against the Llama layout and the metadata (LAYOUT naming
 * the first tensor or key that is wrong, with the shapes in numbers) and
 * take views of the weights (no copy). @opts may be NULL.
 * @out [out]: free with npllama_destroy().
 */
NPLLAMA_API npllama_status_t npllama_create(npushm_model_t *model, const npllama_opts_t *opts,
					    npllama_t **out);
/*
 * Tensor parallelism: the ranks of @comm (processes, one engine each, on one
 * host or more) serve ONE model instance. Rank r of N computes attention
 * heads [r*h/N, (r+1)*h/N) with their KV heads [r*kv/N, ...) (rows of
 * q/k/v_proj), FFN columns [r*F/N, ...) (rows of gate/up_proj) and vocabulary
 * rows [r*ceil(V/N), ...) of the output projection; o_proj and down_proj are
 * read by the matching columns (strided views, in place), so each rank holds
 * a partial [tokens, hidden] sum that an npccl AllReduce (SUM, f32, in
 * npccl_mem_alloc shared memory) completes, twice per layer; the logits are
 * joined by an AllGather. Every rank keeps only its KV heads in its
 * sequences' caches. Each rank reads its rows and columns of a 4-bit layout
 * in place (columns in whole groups of 32; a split that cuts a group reads
 * that projection's f32 slice), and f32 slices where the model has other
 * layouts (oneDNN's packed f32, bf16 and int8 are for an unsplit engine;
 * npllama_packed_weights says which it reads). SPLIT when the heads, the
 * KV heads or the FFN width do not divide by N.
 *
 * Collective: npllama_create_tp, npllama_destroy, npllama_seq_feed,
 * npllama_seq_publish_prefix and npllama_seq_attach_prefix are called by
 * every rank in the same order with the same arguments; every rank gets the
 * same logits (bit for bit). Sequences are made and freed locally. @comm
 * NULL or of one rank: npllama_create. The communicator must outlive the
 * engine. (NPLLAMA_1.1)
 */
NPLLAMA_API npllama_status_t npllama_create_tp(npushm_model_t *model, const npllama_opts_t *opts,
					       npccl_comm_t comm, npllama_t **out);
/* This engine's rank and the number of ranks (0 and 1 without tensor
 * parallelism). Either pointer may be NULL. (NPLLAMA_1.1) */
NPLLAMA_API void npllama_get_rank(const npllama_t *llm, int *rank, int *nranks);

/* Where the time of the feeds went, on this rank, since the engine was made
 * or the last reset. (NPLLAMA_1.1) */
typedef struct npllama_profile {
	double feed;		/* seconds in npllama_seq_feed */
	double allreduce;	/* of those, in the collectives between ranks (AllReduce of
				   the partial sums, AllGather of the logits) */
	uint64_t feeds;		/* calls of npllama_seq_feed */
	uint64_t tokens;	/* tokens they fed */
	uint64_t collectives;	/* collectives they made (2 per layer + 1 per feed) */
	uint64_t reserved[4];
} npllama_profile_t;
NPLLAMA_API void npllama_get_profile(const npllama_t *llm, npllama_profile_t *profile);
NPLLAMA_API void npllama_reset_profile(npllama_t *llm);

/* Free the engine; NULL is fine. Destroy its sequences first: those still
 * alive keep the engine's memory until the last is destroyed, and refuse
 * every call but npllama_seq_destroy (INVALID). Collective with tensor
 * parallelism. */
NPLLAMA_API void npllama_destroy(npllama_t *llm);
/* @config [out] (all zero when @llm is NULL). */
NPLLAMA_API void npllama_get_config(const npllama_t *llm, npllama_config_t *config);

/*
 * Packed projections (a model loaded with `npushm load --dtype f32|bf16|
 * int8`): how many the model carries (@total) and how many this engine reads
 * packed, in place (@used). NULL when every one is used or there are none,
 * else one line saying why the first was not (another CPU or library made
 * it): the engine then reads the plain f32 weight. Either pointer may be
 * NULL. bf16 and int8 layouts change the results (rounded or quantised
 * weights; int8 also quantises each input row): docs/llama.md states how
 * much.
 */
NPLLAMA_API const char *npllama_packed_weights(const npllama_t *llm, int *used, int *total);
/* Bytes of weights one decode step reads: every projection (its packed layout
 * where one is used) and the output projection, the norms and one row of the
 * embedding. Decode speed at batch 1 is bounded by memory bandwidth / this. */
NPLLAMA_API uint64_t npllama_weight_bytes(const npllama_t *llm);

/*
 * A new, empty sequence whose KV cache holds @capacity tokens (0: the
 * model's context; more than the context is CONTEXT, negative INVALID), in
 * a region of the npushm device (NPUSHM_BACKEND_AUTO). @out [out]:
 * npllama_seq_destroy().
 */
NPLLAMA_API npllama_status_t npllama_seq_create(npllama_t *llm, int capacity,
						npllama_seq_t **out);
/* Free the sequence and its region; NULL is fine. */
NPLLAMA_API void npllama_seq_destroy(npllama_seq_t *seq);
/* Empty the sequence for a new prompt, keeping its KV cache region (a
 * server's next request; nothing is freed or allocated). (NPLLAMA_1.1) */
NPLLAMA_API void npllama_seq_reset(npllama_seq_t *seq);
/* Tokens fed so far (the next token's position). */
NPLLAMA_API int npllama_seq_len(const npllama_seq_t *seq);
/* Bytes of the sequence's KV cache region. */
NPLLAMA_API uint64_t npllama_seq_kv_bytes(const npllama_seq_t *seq);

/*
 * Run @n tokens @ids (1 <= n; each 0 .. vocab-1, else INPUT naming the
 * position and the id) at the sequence's next n positions (CONTEXT when
 * they would pass its capacity; nothing is fed then). @logits [out, may be
 * NULL]: vocab floats, the next-token logits after the last of them
 * (with tensor parallelism NULL on every rank or on none).
 */
NPLLAMA_API npllama_status_t npllama_seq_feed(npllama_seq_t *seq, const int64_t *ids, int n,
					      float *logits);

/*
 * Shared prompt prefixes. A prefix's keys and values can be published as a
 * sealed npushm region named npllama-kv.<model hash>.<ids hash> (listed by
 * `npushm ls`), keyed by the model's content hash and the exact token ids;
 * another process whose prompt starts with those ids attaches it and
 * prefills only the rest, with the results of a full prefill. Prefixes are
 * whole blocks of NPLLAMA_PREFIX_BLOCK tokens. Eviction: a model's
 * prefixes hold at most $NPLLAMA_PREFIX_MAX_BYTES (default 256 MiB); a
 * publish past it first removes that model's oldest ones (prefix.c).
 *
 * Trust: a prefix is trusted exactly as much as the model it belongs to.
 * Anyone who may publish names can publish a region under a prefix's name,
 * so the name and the header prove nothing about who computed the keys and
 * values. An engine attaches, counts towards the budget and evicts only
 * regions owned (npushm_region_info_t.owner_uid, the region's creator; on
 * the POSIX backend the tmpfs file's owner) by the caller's effective uid
 * at the time of the call, or by the owner of the model's region
 * (npushm_model_owner_uid: whoever published the weights the engine runs).
 * Root is not special: a region of uid 0 is trusted only when the caller
 * runs as root or root loaded the model. A region of anyone else is skipped
 * as a hash collision is (never read, never attached, never removed) and
 * npllama_seq_untrusted_prefix() says so. Users who are neither the
 * model's owner nor each other therefore do not share prefixes: publish
 * them as the model's owner to share them with every user of the model.
 */
#define NPLLAMA_PREFIX_BLOCK 16
/* Bytes of a prefix's region name with its NUL: every name has this length. */
#define NPLLAMA_PREFIX_NAME_SIZE 45

/*
 * Publish the first tokens of @seq, its length rounded down to a block, as
 * a sealed region (already published by a trusted user, see Trust: fine).
 * @ntokens [out]: how many (0 when shorter than a block, or on failure:
 * nothing published). @name [out, may be NULL]: the region's name,
 * NUL-terminated ("" when the prompt is shorter than a block);
 * @name_size, its bytes, must be at least NPLLAMA_PREFIX_NAME_SIZE, else
 * INVALID before anything is published (a name is never cut short).
 * UNTRUSTED when the name is held by a region this engine does not trust
 * (or may not read): nothing is published, @name says which name, and
 * npllama_seq_untrusted_prefix() the owner; only that owner or root can
 * free the name (`npushm rm NAME`).
 */
NPLLAMA_API npllama_status_t npllama_seq_publish_prefix(npllama_seq_t *seq, int *ntokens,
							char *name, size_t name_size);
/*
 * On an empty sequence (else INVALID): attach the longest published prefix
 * of @ids[0..n) (leaving at least one token to feed) made by this same model
 * (content hash, sizes and every id compared; anything else is never
 * attached) and owned by a trusted user (see Trust above; regions of others
 * are skipped: npllama_seq_untrusted_prefix() counts them). @n: the prompt's length, 0 or more (negative: INVALID). Only
 * the ids a prefix could cover are read: the first min(n - 1, capacity)
 * rounded down to a block (none when n <= NPLLAMA_PREFIX_BLOCK); each of
 * them must lie in the vocabulary (else INPUT naming it), the ids after them
 * are left to the next npllama_seq_feed to check. @attached [out]: its
 * tokens (0: none); feed ids[attached..n) next.
 */
NPLLAMA_API npllama_status_t npllama_seq_attach_prefix(npllama_seq_t *seq, const int64_t *ids,
						       int n, int *attached);
/*
 * How many regions under a prefix's name the last npllama_seq_attach_prefix
 * or npllama_seq_publish_prefix on @seq found but did not trust (0: none;
 * with tensor parallelism, rank 0's count): they were skipped, or (publish)
 * held the name. For the first of them, the longest prefix: its name
 * (@name [out, may be NULL], @name_size at least NPLLAMA_PREFIX_NAME_SIZE
 * else left alone) and its owner's uid (@owner_uid [out, may be NULL],
 * UINT32_MAX when the region could not be read). 0 for NULL. (NPLLAMA_1.2)
 */
NPLLAMA_API int npllama_seq_untrusted_prefix(const npllama_seq_t *seq, char *name,
					     size_t name_size, uint32_t *owner_uid);

typedef struct npllama_sampling {
	double temperature;	/* > 0; the logits are divided by it */
	double top_p;		/* (0, 1]: sample from the smallest set of most likely tokens
				   whose probabilities add up to at least top_p */
	uint32_t reserved[4];	/* zero */
} npllama_sampling_t;

/*
 * Pick the next token from @logits [vocab]. @s NULL: greedy (the first
 * largest logit). Else temperature and nucleus (top-p) sampling, driven by
 * the generator state @rng (any 64-bit seed to start; advanced by the call;
 * the same seed gives the same choices). @token [out].
 */
NPLLAMA_API npllama_status_t npllama_sample(const float *logits, int vocab,
					    const npllama_sampling_t *s, uint64_t *rng,
					    int64_t *token);

#ifdef __cplusplus
}
#endif
#endif /* NPLLAMA_H */
