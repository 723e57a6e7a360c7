/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * fuzz_safetensors.c - libFuzzer entry point for the safetensors header
 * parser (src/safetensors.c). The input is a whole file. Beyond "no crash,
 * no sanitizer report", every accepted header must satisfy the invariants
 * the loader relies on: tensors sorted and tiling the data section exactly,
 * sizes equal to shape x dtype size, names non-empty and NUL-free.
 *
 * Build and run: make fuzz (see libnpushm/libnpushm.mk).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../src/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct npi_st_header *h;
	uint64_t cursor = 0;

	if (npi_st_parse_buffer(data, size, &h) != NPUSHM_OK)
		return 0;
	if (h->data_start + h->data_len != size)
		abort();
	for (size_t i = 0; i < h->count; i++) {
		const struct npi_st_tensor *t = &h->tensors[i];
		uint64_t n = npushm_dtype_size(t->dtype);

		if (!n || t->begin != cursor || t->end < t->begin || t->end - t->begin != t->nbytes)
			abort();
		for (uint32_t d = 0; d < t->ndim; d++) {
			if (t->shape[d] < 0 || __builtin_mul_overflow(n, (uint64_t)t->shape[d], &n))
				abort();
		}
		if (n != t->nbytes || !t->name_len || strlen(t->name) != t->name_len)
			abort();
		cursor = t->end;
	}
	if (cursor != h->data_len || !h->metadata_json)
		abort();
	npi_st_free(h);
	return 0;
}
