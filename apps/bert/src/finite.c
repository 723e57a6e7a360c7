/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * finite.c - refuse a model whose weights hold NaN or infinities.
 *
 * A NaN or infinite weight makes every output NaN with no other sign, so
 * npbert_create() scans every tensor the engine reads once (weights.c calls
 * these: whole tensors on every rank, a rank's slices being views of them;
 * a weight read packed is checked in the layout read), and
 * NPBERT_ERR_WEIGHTS names the first bad tensor, element and value. The
 * scan reads the bits: a float is finite unless its exponent is all ones,
 * and ((bits & 0x7fffffff) + 0x00800000) sets the sign bit exactly then, so
 * a block is one OR-reduction the compiler vectorises; only a bad block is
 * looked at element by element. NPBERT_NO_WEIGHT_CHECK skips it all.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define BLOCK 4096

static uint32_t block_or(const uint32_t *u, size_t n)
{
	uint32_t acc = 0;

	for (size_t i = 0; i < n; i++)
		acc |= (u[i] & 0x7fffffffu) + 0x00800000u;
	return acc;
}

static int bad32(uint32_t u)
{
	return !!(((u & 0x7fffffffu) + 0x00800000u) & 0x80000000u);
}

static npbert_status_t refuse(const npushm_tensor_t *t, const char *value, const char *at)
{
	return npb_fail(NPBERT_ERR_WEIGHTS, "tensor '%s' holds %s %s: every output would be NaN; "
			"the checkpoint is damaged (re-export or re-download it), or skip this "
			"check with --no-weight-check (NPBERT_NO_WEIGHT_CHECK)", t->name, value, at);
}

npbert_status_t npb_check_finite(const npushm_tensor_t *t)
{
	const uint32_t *u = t->data;
	size_t n = (size_t)(t->nbytes / sizeof(float));

	for (size_t b = 0; b < n; b += BLOCK) {
		size_t len = n - b < BLOCK ? n - b : BLOCK;

		if (!(block_or(u + b, len) & 0x80000000u))
			continue;
		for (size_t i = b; i < b + len; i++) {
			float f;
			char at[64];

			if (!bad32(u[i]))
				continue;
			memcpy(&f, &u[i], sizeof(f));
			if (t->ndim == 2)
				snprintf(at, sizeof(at), "at [%zu, %zu]", i / (size_t)t->shape[1],
					 i % (size_t)t->shape[1]);
			else
				snprintf(at, sizeof(at), "at [%zu]", i);
			return refuse(t, f != f ? "NaN" : f > 0 ? "+Inf" : "-Inf", at);
		}
	}
	return NPBERT_OK;
}

/*
 * A weight read from its packed layout: the bytes read are the ones
 * checked. f32 layouts are the same floats reordered (padding is zero),
 * bf16 ones their upper halves (non-finite: exponent bits 0x7f80 all set),
 * bf16x3 ones two such blocks (a non-finite weight is in its high term);
 * int8 layouts cannot show a NaN that quantisation swallowed, but a
 * non-finite row makes its scale (the first N floats) non-finite.
 */
npbert_status_t npb_check_finite_packed(const npushm_tensor_t *t, const char *tag,
					const void *data, uint64_t nbytes)
{
	if (strstr(tag, "/f32/")) {
		npushm_tensor_t p = { .name = t->name, .data = data, .nbytes = nbytes };

		if (npb_check_finite(&p))
			return refuse(t, "a NaN or an infinity", "in its packed (f32) layout");
		return NPBERT_OK;
	}
	if (strstr(tag, "/bf16/") || strstr(tag, "/bf16x3/")) {
		const uint16_t *h = data;
		uint16_t acc = 0;

		for (size_t i = 0; i < nbytes / sizeof(uint16_t); i++)
			acc |= (uint16_t)((h[i] & 0x7fffu) + 0x0080u);
		if (acc & 0x8000u)
			return refuse(t, "a NaN or an infinity", "in its packed (bf16) layout");
		return NPBERT_OK;
	}
	if (strstr(tag, "/s8/") && t->ndim == 2 && (uint64_t)t->shape[0] * 4 <= nbytes) {
		npushm_tensor_t p = { .name = t->name, .data = data,
				      .nbytes = (uint64_t)t->shape[0] * 4 };

		if (npb_check_finite(&p))
			return refuse(t, "a NaN or an infinity", "in its int8 scales");
	}
	/* packed only: no plain elements to read */
	return t->data ? npb_check_finite(t) : NPBERT_OK;
}
