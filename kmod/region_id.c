// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * region_id.c - inode numbers (region ids) that carry no count.
 *
 * Every inode of every instance takes the next value of one counter: its
 * index in npushm_regions, never reused while the module is loaded, never
 * shown. What user space sees (st_ino, NPUSHM_IOC_INFO, ALLOC, netlink) is
 * the index through a keyed permutation of 64-bit values (an 8-round
 * Feistel network over SipHash, the key drawn at load): unique as the
 * counter is, but neither ordered nor spaced by it, so two ids tell their
 * holder nothing of how many inodes were made in between, anywhere.
 */
#include <linux/atomic.h>
#include <linux/random.h>
#include <linux/siphash.h>

#include "npushm_internal.h"

#define NPUSHM_ID_ROUNDS	8

static siphash_key_t npushm_id_key;
static atomic64_t npushm_next_index = ATOMIC64_INIT(0);

static u32 npushm_id_round(u32 half, unsigned int round)
{
	return siphash_2u32(half, round, &npushm_id_key);
}

static u64 npushm_id_permute(u64 v)
{
	u32 l = upper_32_bits(v), r = lower_32_bits(v), t;
	unsigned int i;

	for (i = 0; i < NPUSHM_ID_ROUNDS; i++) {
		t = r;
		r = l ^ npushm_id_round(r, i);
		l = t;
	}
	return (u64)l << 32 | r;
}

/**
 * npushm_id_to_index - the npushm_regions index of a region id
 * @id: an id from npushm_id_next(), or any value from user space
 *
 * Return: the index; for a value that is no id, an index nothing uses
 * (or one above ULONG_MAX, which no xarray holds).
 */
u64 npushm_id_to_index(u64 id)
{
	u32 l = upper_32_bits(id), r = lower_32_bits(id), t;
	unsigned int i;

	for (i = NPUSHM_ID_ROUNDS; i-- > 0;) {
		t = l;
		l = r ^ npushm_id_round(l, i);
		r = t;
	}
	return (u64)l << 32 | r;
}

/**
 * npushm_id_next - a new inode number
 * @index: set to its npushm_regions index
 *
 * Return: the id, never 0 (readdir callers skip d_ino 0).
 */
u64 npushm_id_next(unsigned long *index)
{
	u64 id;

	do {
		*index = atomic64_inc_return(&npushm_next_index);
		id = npushm_id_permute(*index);
	} while (!id);
	return id;
}

/** npushm_id_init - draw the permutation's key, before any inode exists */
void npushm_id_init(void)
{
	get_random_bytes(&npushm_id_key, sizeof(npushm_id_key));
}
