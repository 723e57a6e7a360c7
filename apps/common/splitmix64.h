/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * splitmix64.h - the one pseudo-random generator of the engines (apps/):
 * SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
 * generators", 2014), a 64-bit state advanced by the golden-ratio constant
 * and mixed, so that a seed gives the same numbers on every machine. Its
 * users: the demo and --stream request streams of npushm-bert and
 * npushm-llama (and their Python twins), npushm-bert-gen's models,
 * libnpllama's sampler.
 */
#ifndef NPUSHM_APPS_SPLITMIX64_H
#define NPUSHM_APPS_SPLITMIX64_H

#include <stdint.h>

/* the next number; advances *@state */
static inline uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

#endif
