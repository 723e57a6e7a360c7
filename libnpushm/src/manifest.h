/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * manifest.h - the table of contents at the start of a model region.
 *
 * Layout of a model region (all integers little-endian, the host order of
 * every machine npushm supports; version bumps on any change):
 *
 *   0                 struct npi_manifest_hdr
 *   tensors_offset    struct npi_manifest_tensor[tensor_count], sorted by name
 *   dims_offset       int64_t[dims_count]: per tensor, shape then strides
 *   strings_offset    tensor names, each NUL-terminated
 *   metadata_offset   __metadata__ as JSON, NUL-terminated
 *   data_offset...    tensor data, each tensor at a 64-byte aligned offset
 *
 * manifest_hash is XXH3-64 of bytes [0, manifest_size) with the field itself
 * zero: a reader detects a damaged or foreign manifest in O(manifest), never
 * touching tensor data.
 */
#ifndef NPUSHM_MANIFEST_H
#define NPUSHM_MANIFEST_H

#include "npushm.h"

#define NPI_MANIFEST_MAGIC "NPUSHMWT"
#define NPI_MANIFEST_VERSION 1

struct npi_manifest_hdr {
	char magic[8];
	uint32_t version;
	uint32_t hdr_size;
	uint64_t manifest_size;
	uint64_t region_size;
	uint64_t data_offset;
	uint64_t data_end;
	uint64_t source_size;
	uint8_t hash[16];
	uint64_t tensor_count;
	uint64_t tensors_offset;
	uint64_t dims_offset;
	uint64_t dims_count;
	uint64_t strings_offset;
	uint64_t strings_size;
	uint64_t metadata_offset;
	uint64_t metadata_size;
	uint64_t reserved[4];
	uint64_t manifest_hash;
};

struct npi_manifest_tensor {
	uint64_t name_offset;	/* relative to strings_offset */
	uint32_t name_len;	/* without the NUL */
	uint16_t dtype;		/* npushm_dtype_t */
	uint16_t ndim;
	uint64_t dims_index;	/* shape at dims[i], strides at dims[i + ndim] */
	uint64_t offset;	/* of the data in the region */
	uint64_t nbytes;
	uint64_t source_offset;	/* of the data in the source file */
};

/* A validated manifest: pointers into the mapping. */
struct npi_manifest_view {
	const struct npi_manifest_hdr *hdr;
	const struct npi_manifest_tensor *tensors;
	const int64_t *dims;
	const char *strings;
	const char *metadata;
};

/*
 * Validate the manifest at @base of a @size-byte mapping (read-only use).
 * CORRUPT with the first problem found. @view [out].
 */
npushm_status_t npi_manifest_check(const void *base, uint64_t size, struct npi_manifest_view *view);
/* The hash as stored (big-endian XXH3-128). */
uint64_t npi_manifest_hash_of(const void *manifest, uint64_t manifest_size);
/* Fill @t from entry @i of @v. */
void npi_manifest_tensor(const struct npi_manifest_view *v, const void *base, size_t i,
			 npushm_tensor_t *t);

#endif
