/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * safetensors.h - the safetensors header parser (safetensors.c).
 *
 * A safetensors file is: an 8-byte little-endian header length N, N bytes
 * of JSON (a '{' object, right-padded with spaces), then the data section.
 * The JSON maps tensor names to {"dtype", "shape", "data_offsets": [b, e]}
 * (offsets relative to the data section) plus an optional "__metadata__"
 * object of strings. npi_st_parse() accepts a header only if every rule
 * holds; otherwise it returns NPUSHM_ERR_FORMAT with a message naming the
 * tensor and the broken rule (without the file name: callers prefix it).
 */
#ifndef NPUSHM_SAFETENSORS_H
#define NPUSHM_SAFETENSORS_H

#include "npushm.h"

/* The reference implementation's limit on N. */
#define NPI_ST_MAX_HEADER 100000000ULL
/* JSON nesting deeper than this is rejected before it costs stack. */
#define NPI_ST_MAX_DEPTH 8

struct npi_st_tensor {
	char *name;		/* NUL-terminated, owned by the header */
	size_t name_len;
	npushm_dtype_t dtype;
	uint32_t ndim;
	int64_t shape[NPUSHM_TENSOR_MAX_DIMS];
	uint64_t nbytes;
	uint64_t begin, end;	/* relative to the data section */
};

struct npi_st_header {
	uint64_t header_len;	/* N */
	uint64_t data_start;	/* 8 + N */
	uint64_t data_len;	/* file size - data_start */
	size_t count;
	struct npi_st_tensor *tensors;	/* sorted by begin, contiguous */
	char *metadata_json;	/* "__metadata__" as compact JSON, "{}" if absent */
};

/*
 * Check the 8-byte length prefix @first8 of a @file_size-byte file.
 * @header_len [out]: N on success.
 */
npushm_status_t npi_st_check_prefix(const uint8_t *first8, uint64_t file_size,
				    uint64_t *header_len);
/*
 * Parse and validate the @hdr_len header bytes of a @file_size-byte file.
 * @out [out]: free with npi_st_free().
 */
npushm_status_t npi_st_parse(const char *hdr, size_t hdr_len, uint64_t file_size,
			     struct npi_st_header **out);
/* Both steps on an in-memory file (the fuzz entry point). */
npushm_status_t npi_st_parse_buffer(const uint8_t *file, size_t size, struct npi_st_header **out);
void npi_st_free(struct npi_st_header *h);

#endif
