/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * stream.c - the deterministic request stream (see stream.h); splitmix64
 * seeded with seed + k * 2^32 for batch k, in the order the Python twin
 * (apps/bert/demo/stream.py) draws: lengths first, then token ids row by row.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "stream.h"
#include "splitmix64.h"
#include "stream_field.h"

int stream_parse(const char *s, stream_spec_t *o)
{
	long long count, batch, min_len, max_len;
	unsigned long long seed;
	char *end;

	if (stream_next_field(&s, 1, INT_MAX, &count) || stream_next_field(&s, 1, 65536, &batch) ||
	    stream_next_field(&s, 1, 65536, &min_len) ||
	    stream_next_field(&s, min_len, 65536, &max_len))
		return -1;
	/* any 64-bit seed, taken modulo 2^64 as the Python twin does (-1 too) */
	errno = 0;
	seed = strtoull(s, &end, 10);
	if (end == s || errno || *end)
		return -1;
	o->count = (int)count;
	o->batch = (int)batch;
	o->min_len = (int)min_len;
	o->max_len = (int)max_len;
	o->seed = seed;
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
