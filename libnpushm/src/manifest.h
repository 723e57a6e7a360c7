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
 *   layouts_offset    (version 2) struct npi_manifest_layout[layouts_count],
 *                     then their tags, each NUL-terminated
 *   data_offset...    tensor data, each tensor at a 64-byte aligned offset
 *   data_end...       (version 2) the packed layouts' bytes, 64-byte aligned
 *
 * Version 3 is version 2 where some layouts replace their tensor's plain
 * bytes (flag NPI_LAYOUT_ONLY, `npushm load --packed-only`): such a tensor
 * has offset 0 (no data in the region) and exactly its layouts carry the
 * flag; the content hash then starts with "packed-only" and a NUL after the
 * source hash, so the model is never taken for the one with both copies.
 *
 * Version 2 is written only for a model that carries packed layouts (extra
 * copies of tensors in the layout a GEMM library wants, npushm_packer_t); it
 * then records the source file's own hash in source_hash, and hash becomes
 * the content hash of everything the model holds: XXH3-128 of the source
 * hash followed by, per layout in table order, the tensor's name, a NUL, the
 * tag, a NUL and the XXH3-128 of the layout's bytes (npi_manifest_content_hash).
 *
 * manifest_hash is XXH3-64 of bytes [0, manifest_size) with the field itself
 * zero: a reader detects a damaged or foreign manifest in O(manifest), never
 * touching tensor data.
 */
#ifndef NPUSHM_MANIFEST_H
#define NPUSHM_MANIFEST_H

#include "npushm.h"

#define NPI_MANIFEST_MAGIC "NPUSHMWT"
#define NPI_MANIFEST_VERSION 1		/* plain tensors only */
#define NPI_MANIFEST_VERSION_LAYOUTS 2	/* with packed layouts */
#define NPI_MANIFEST_VERSION_ONLY 3	/* some tensors stored only as a layout */
#define NPI_LAYOUT_ONLY 1u		/* npi_manifest_layout.flags: no plain copy */
#define NPI_LAYOUT_TAG_MAX 256		/* bytes of a tag, NUL included */
#define NPI_LAYOUTS_MAX 65536

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
	uint64_t layouts_offset;	/* version 2; 0 in version 1 */
	uint64_t layouts_count;
	uint8_t source_hash[16];	/* version 2: the source file's hash */
	uint64_t manifest_hash;
};

struct npi_manifest_layout {
	uint64_t tensor_index;	/* in the name-sorted tensor table */
	uint64_t tag_offset;	/* relative to the end of the layout table */
	uint32_t tag_len;	/* without the NUL */
	uint32_t flags;		/* NPI_LAYOUT_ONLY (version 3), else zero */
	uint64_t offset;	/* of the bytes in the region */
	uint64_t nbytes;
	uint8_t hash[16];	/* XXH3-128 of the bytes, big-endian */
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
	const struct npi_manifest_layout *layouts;	/* NULL in version 1 */
	const char *layout_tags;
};

/*
 * Validate the manifest at @base of a @size-byte mapping (read-only use).
 * CORRUPT with the first problem found. @view [out].
 */
npushm_status_t npi_manifest_check(const void *base, uint64_t size, struct npi_manifest_view *view);
/* The hash as stored (big-endian XXH3-128). */
uint64_t npi_manifest_hash_of(const void *manifest, uint64_t manifest_size);
/*
 * The content hash of a model with layouts (above) into @out. @names and @tags
 * give each layout's tensor name and tag; @hashes their bytes' hashes; @only:
 * the layouts replace their tensors' plain bytes (version 3).
 */
void npi_manifest_content_hash(const uint8_t source_hash[16], bool only, size_t n,
			       const char *const *names, const char *const *tags,
			       const uint8_t (*hashes)[16], uint8_t out[16]);
/* Position of tensor @name in @v's name-sorted table; false if it has none. */
bool npi_manifest_tensor_index(const struct npi_manifest_view *v, const char *name, size_t *index);
/* Fill @t from entry @i of @v. */
void npi_manifest_tensor(const struct npi_manifest_view *v, const void *base, size_t i,
			 npushm_tensor_t *t);

#endif
