/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * stream.h - the deterministic request stream of the demo and the
 * benchmark: batch k of (seed, batch, min_len, max_len) is the same in C
 * (here) and in Python (apps/bert/demo/stream.py).
 */
#ifndef NPBERT_STREAM_H
#define NPBERT_STREAM_H

#include <stdint.h>

typedef struct {
	int count;		/* batches */
	int batch;		/* sequences per batch */
	int min_len, max_len;	/* tokens per sequence, uniform in [min_len, max_len] */
	uint64_t seed;
} stream_spec_t;

/* Parse "COUNT,BATCH,MIN_LEN,MAX_LEN,SEED"; 0 or -1. */
int stream_parse(const char *s, stream_spec_t *out);

/*
 * Batch k: sequence i has length L_i in [min_len, max_len]; the batch is
 * padded to S = max L_i (*seq_len). Token ids of real tokens are 1..vocab-1
 * (0 is padding), token types 0 for the first half of a sequence and 1 for
 * the second when the model has two types, mask 1 for tokens and 0 for
 * padding. Arrays hold batch * max_len elements.
 */
void stream_batch(const stream_spec_t *sp, int k, int vocab, int type_vocab, int64_t *ids,
		  int64_t *types, int64_t *mask, int *seq_len);

#endif
