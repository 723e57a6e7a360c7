/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * stream.c - the deterministic request stream (see stream.h); splitmix64
 * seeded with seed + k * 2^32 for batch k, in the order the Python twin
 * (apps/bert/demo/stream.py) draws: lengths first, then token ids row by row.
 */
#include <stdio.h>
#include <stdlib.h>

#include "stream.h"
#include "splitmix64.h"

int stream_parse(const char *s, stream_spec_t *o)
{
	unsigned long long seed;
	char tail;

	if (sscanf(s, "%d,%d,%d,%d,%llu%c", &o->count, &o->batch, &o->min_len, &o->max_len, &seed,
		   &tail) != 5)
		return -1;
	o->seed = seed;
	if (o->count < 1 || o->batch < 1 || o->min_len < 1 || o->max_len < o->min_len ||
	    o->batch > 65536 || o->max_len > 65536)
		return -1;
	return 0;
}

void stream_batch(const stream_spec_t *sp, int k, int vocab, int type_vocab, int64_t *ids,
		  int64_t *types, int64_t *mask, int *seq_len)
{
	uint64_t rng = sp->seed + ((uint64_t)k << 32);
	int B = sp->batch, S = 0, span = sp->max_len - sp->min_len + 1;
	int *len = malloc(sizeof(int) * (size_t)B);

	for (int i = 0; i < B; i++) {
		len[i] = sp->min_len + (int)(splitmix64(&rng) % (uint64_t)span);
		if (len[i] > S)
			S = len[i];
	}
	for (int i = 0; i < B; i++) {
		for (int j = 0; j < S; j++) {
			int64_t *p = ids + (int64_t)i * S + j;
			int tok = j < len[i];

			*p = tok ? 1 + (int64_t)(splitmix64(&rng) % (uint64_t)(vocab > 1 ? vocab - 1 : 1))
				 : 0;
			if (vocab == 1)
				*p = 0;
			types[(int64_t)i * S + j] = (tok && type_vocab > 1 && 2 * j >= len[i]) ? 1 : 0;
			mask[(int64_t)i * S + j] = tok;
		}
	}
	free(len);
	*seq_len = S;
}
