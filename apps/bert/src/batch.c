/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * batch.c - check a batch before anything is computed, so every refusal
 * names the first bad value in the user's terms (sequence and position) and
 * no rank starts a collective the others will not join.
 */
#include <stdint.h>

#include "internal.h"

npbert_status_t npb_batch_check(const npbert_config_t *c, const npbert_batch_t *b)
{
	int B, S;

	if (!b)
		return npb_fail(NPBERT_ERR_INVALID, "npbert_run: the batch is NULL");
	B = b->batch;
	S = b->seq_len;
	if (B <= 0)
		return npb_fail(NPBERT_ERR_INPUT, "empty batch: %d sequences; pass at least one", B);
	if (S <= 0)
		return npb_fail(NPBERT_ERR_INPUT, "empty sequences: seq_len is %d; every sequence "
				"needs at least one token", S);
	if (S > c->positions)
		return npb_fail(NPBERT_ERR_INPUT, "sequences of %d tokens are longer than the "
				"model's %d positions (rows of %sembeddings.position_embeddings."
				"weight); truncate or split them to at most %d tokens", S,
				c->positions, c->prefix, c->positions);
	if ((int64_t)B * S > INT32_MAX)
		return npb_fail(NPBERT_ERR_INPUT, "a batch of %d x %d tokens is too large: at most "
				"%d tokens per call", B, S, INT32_MAX);
	if (!b->input_ids)
		return npb_fail(NPBERT_ERR_INVALID, "npbert_run: input_ids is NULL");
	for (int i = 0; i < B; i++) {
		const int64_t *ids = b->input_ids + (int64_t)i * S;
		const int64_t *tt = b->token_type_ids ? b->token_type_ids + (int64_t)i * S : NULL;
		const int64_t *mk = b->attention_mask ? b->attention_mask + (int64_t)i * S : NULL;
		int tokens = 0;

		for (int j = 0; j < S; j++) {
			if (ids[j] < 0 || ids[j] >= c->vocab)
				return npb_fail(NPBERT_ERR_INPUT, "token id %lld (sequence %d, "
						"position %d) is outside the vocabulary: ids must be "
						"0..%d (%sembeddings.word_embeddings.weight has %d "
						"rows)", (long long)ids[j], i, j, c->vocab - 1,
						c->prefix, c->vocab);
			if (tt && (tt[j] < 0 || tt[j] >= c->type_vocab))
				return npb_fail(NPBERT_ERR_INPUT, "token type %lld (sequence %d, "
						"position %d) is outside 0..%d (%sembeddings."
						"token_type_embeddings.weight has %d rows)",
						(long long)tt[j], i, j, c->type_vocab - 1, c->prefix,
						c->type_vocab);
			if (mk && mk[j] != 0 && mk[j] != 1)
				return npb_fail(NPBERT_ERR_INPUT, "attention mask value %lld (sequence "
						"%d, position %d): the mask is 1 for a token and 0 "
						"for padding", (long long)mk[j], i, j);
			tokens += mk ? (int)mk[j] : 1;
		}
		if (!tokens)
			return npb_fail(NPBERT_ERR_INPUT, "sequence %d has no token: its attention "
					"mask is all 0 (a sequence needs at least one unmasked "
					"token)", i);
	}
	return NPBERT_OK;
}
