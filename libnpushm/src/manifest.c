/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * manifest.c - validate a model region's manifest (see manifest.h).
 *
 * The reader trusts nothing: the region may have been published by anyone
 * with the rights to do so. Every offset and count is range-checked with
 * overflow-safe arithmetic before it is dereferenced, and every tensor's
 * bytes must lie inside the data area, aligned, with the size its shape and
 * dtype give. Cost is O(manifest): tensor data is never touched, which keeps
 * attach O(1) in model size.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "dtype.h"
#include "internal.h"
#include "manifest.h"

#define CORRUPT(...) npi_fail(NPUSHM_ERR_CORRUPT, 0, __VA_ARGS__)

uint64_t npi_manifest_hash_of(const void *manifest, uint64_t manifest_size)
{
	struct npi_manifest_hdr h;
	XXH3_state_t *st = XXH3_createState();
	uint64_t v;

	if (!st)
		return 0;	/* never matches a stored hash: reported as corrupt */
	memcpy(&h, manifest, sizeof(h));
	h.manifest_hash = 0;
	XXH3_64bits_reset(st);
	XXH3_64bits_update(st, &h, sizeof(h));
	XXH3_64bits_update(st, (const char *)manifest + sizeof(h), manifest_size - sizeof(h));
	v = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	return v;
}

/* [off, off + count * elem) inside [lo, hi)? */
/*
 * Whether @s[0..n) is UTF-8 (no overlong forms, surrogates or code points
 * past U+10FFFF), as every name and tag the loader writes is (the
 * safetensors header is strict UTF-8 JSON): readers decode them as such.
 */
static bool utf8_ok(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + n;

	while (p < end) {
		unsigned c = *p, len, i;
		uint32_t cp;

		if (c < 0x80) {
			p++;
			continue;
		}
		if (c < 0xc2 || c > 0xf4)
			return false;
		len = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
		if ((size_t)(end - p) < len)
			return false;
		cp = c & (0x7f >> len);
		for (i = 1; i < len; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i] & 0x3f);
		}
		if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		p += len;
	}
	return true;
}

static bool range_ok(uint64_t off, uint64_t count, uint64_t elem, uint64_t lo, uint64_t hi)
{
	uint64_t bytes, end;

	if (__builtin_mul_overflow(count, elem, &bytes) || __builtin_add_overflow(off, bytes, &end))
		return false;
	return off >= lo && end <= hi;
}

/*
 * version 3: the tensors without data (offset 0) are exactly those of the
 * layouts flagged NPI_LAYOUT_ONLY, and there is at least one
 */
static npushm_status_t check_only_layouts(const struct npi_manifest_hdr *h,
					  const struct npi_manifest_view *v)
{
	uint8_t *only = calloc(h->tensor_count + 1, 1);
	npushm_status_t st = NPUSHM_OK;
	uint64_t n = 0;

	if (!only)
		return npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot check the model's manifest");
	for (uint64_t i = 0; i < h->layouts_count; i++) {
		const struct npi_manifest_layout *l = &v->layouts[i];

		if (!(l->flags & NPI_LAYOUT_ONLY))
			continue;
		if (v->tensors[l->tensor_index].offset != 0) {
			st = CORRUPT("packed layout %llu replaces tensor %llu, which has data too",
				     (unsigned long long)i, (unsigned long long)l->tensor_index);
			goto out;
		}
		n += !only[l->tensor_index];
		only[l->tensor_index] = 1;
	}
	for (uint64_t i = 0; i < h->tensor_count && !st; i++)
		if (v->tensors[i].offset == 0 && !only[i])
			st = CORRUPT("tensor '%s' has neither data nor a layout replacing it",
				     v->strings + v->tensors[i].name_offset);
	if (!st && !n)
		st = CORRUPT("a version 3 manifest replaces no tensor by its layout");
out:
	free(only);
	return st;
}

/* version 2: the layout table, its tags, and every layout's bytes after the tensors */
static npushm_status_t check_layouts(const void *base, const struct npi_manifest_hdr *h,
				     struct npi_manifest_view *v)
{
	uint64_t tags_at, tags_size, prev_end = h->data_end;

	if (h->version == NPI_MANIFEST_VERSION) {
		if (h->layouts_offset || h->layouts_count)
			return CORRUPT("a version 1 manifest lists packed layouts");
		return NPUSHM_OK;
	}
	if (h->layouts_count == 0 || h->layouts_count > NPI_LAYOUTS_MAX || h->layouts_offset % 8 ||
	    !range_ok(h->layouts_offset, h->layouts_count, sizeof(struct npi_manifest_layout),
		      sizeof(*h), h->manifest_size))
		return CORRUPT("the manifest's layout table is empty, misaligned or outside the manifest");
	v->layouts = (const void *)((const char *)base + h->layouts_offset);
	tags_at = h->layouts_offset + h->layouts_count * sizeof(struct npi_manifest_layout);
	tags_size = h->manifest_size - tags_at;
	v->layout_tags = (const char *)base + tags_at;
	for (uint64_t i = 0; i < h->layouts_count; i++) {
		const struct npi_manifest_layout *l = &v->layouts[i];
		const char *tag;
		uint64_t end;

		if ((l->flags & ~(h->version == NPI_MANIFEST_VERSION_ONLY ? NPI_LAYOUT_ONLY : 0)) ||
		    l->tensor_index >= h->tensor_count ||
		    !range_ok(l->tag_offset, (uint64_t)l->tag_len + 1, 1, 0, tags_size) ||
		    l->tag_len == 0 || l->tag_len >= NPI_LAYOUT_TAG_MAX)
			return CORRUPT("packed layout %llu names no tensor or has no valid tag",
				       (unsigned long long)i);
		tag = v->layout_tags + l->tag_offset;
		if (tag[l->tag_len] != '\0' || memchr(tag, '\0', l->tag_len))
			return CORRUPT("packed layout %llu's tag is not a NUL-terminated string",
				       (unsigned long long)i);
		if (!utf8_ok(tag, l->tag_len))
			return CORRUPT("packed layout %llu's tag is not UTF-8", (unsigned long long)i);
		if (l->offset % NPUSHM_TENSOR_ALIGN || l->offset < prev_end ||
		    __builtin_add_overflow(l->offset, l->nbytes, &end) || end > h->region_size)
			return CORRUPT("packed layout '%s' of tensor %llu lies outside the region, "
				       "overlaps another or is misaligned", tag,
				       (unsigned long long)l->tensor_index);
		prev_end = end;
	}
	return h->version == NPI_MANIFEST_VERSION_ONLY ? check_only_layouts(h, v) : NPUSHM_OK;
}

void npi_manifest_content_hash(const uint8_t source_hash[16], bool only, size_t n,
			       const char *const *names, const char *const *tags,
			       const uint8_t (*hashes)[16], uint8_t out[16])
{
	XXH3_state_t *st = XXH3_createState();
	XXH128_canonical_t c;

	if (!st) {
		memset(out, 0, 16);
		return;
	}
	XXH3_128bits_reset(st);
	XXH3_128bits_update(st, source_hash, 16);
	if (only)
		XXH3_128bits_update(st, "packed-only", sizeof("packed-only"));
	for (size_t i = 0; i < n; i++) {
		XXH3_128bits_update(st, names[i], strlen(names[i]) + 1);
		XXH3_128bits_update(st, tags[i], strlen(tags[i]) + 1);
		XXH3_128bits_update(st, hashes[i], 16);
	}
	XXH128_canonicalFromHash(&c, XXH3_128bits_digest(st));
	memcpy(out, c.digest, 16);
	XXH3_freeState(st);
}

npushm_status_t npi_manifest_check(const void *base, uint64_t size, struct npi_manifest_view *v)
{
	const struct npi_manifest_hdr *h = base;
	uint64_t ms;

	memset(v, 0, sizeof(*v));
	if (size < sizeof(*h) || memcmp(h->magic, NPI_MANIFEST_MAGIC, 8))
		return CORRUPT("the region holds no npushm model (no manifest at its start)");
	if (h->version < NPI_MANIFEST_VERSION || h->version > NPI_MANIFEST_VERSION_ONLY)
		return CORRUPT("the model's manifest has version %u but this library reads versions %u to %u; reload the model with this npushm",
			       h->version, NPI_MANIFEST_VERSION, NPI_MANIFEST_VERSION_ONLY);
	if (h->hdr_size != sizeof(*h))
		return CORRUPT("the manifest header is %u bytes, expected %zu", h->hdr_size, sizeof(*h));
	ms = h->manifest_size;
	if (ms < sizeof(*h) || ms > size || h->region_size > size)
		return CORRUPT("the manifest claims %llu bytes in a region of %llu",
			       (unsigned long long)ms, (unsigned long long)size);
	if (npi_manifest_hash_of(base, ms) != h->manifest_hash)
		return CORRUPT("the manifest's checksum does not match: the region was modified or damaged");
	if (h->data_offset < ms || h->data_offset > h->data_end || h->data_end > size)
		return CORRUPT("the data area [%llu, %llu) is not inside the region",
			       (unsigned long long)h->data_offset, (unsigned long long)h->data_end);
	if ((h->tensors_offset | h->dims_offset) % 8)
		return CORRUPT("the manifest tables are misaligned");
	if (!range_ok(h->tensors_offset, h->tensor_count, sizeof(struct npi_manifest_tensor), sizeof(*h), ms) ||
	    !range_ok(h->dims_offset, h->dims_count, sizeof(int64_t), sizeof(*h), ms) ||
	    !range_ok(h->strings_offset, h->strings_size, 1, sizeof(*h), ms) ||
	    !range_ok(h->metadata_offset, h->metadata_size, 1, sizeof(*h), ms))
		return CORRUPT("a manifest table lies outside the manifest");
	v->hdr = h;
	v->tensors = (const void *)((const char *)base + h->tensors_offset);
	v->dims = (const void *)((const char *)base + h->dims_offset);
	v->strings = (const char *)base + h->strings_offset;
	v->metadata = (const char *)base + h->metadata_offset;
	if (h->metadata_size == 0 || v->metadata[h->metadata_size - 1] != '\0' ||
	    strlen(v->metadata) != h->metadata_size - 1)
		return CORRUPT("the manifest's metadata is not a NUL-terminated string");
	if (!utf8_ok(v->metadata, h->metadata_size - 1))
		return CORRUPT("the manifest's metadata is not UTF-8");
	for (uint64_t i = 0; i < h->tensor_count; i++) {
		const struct npi_manifest_tensor *t = &v->tensors[i];
		const char *name;
		uint64_t nbytes, end, expect = 1;

		if (!range_ok(t->name_offset, (uint64_t)t->name_len + 1, 1, 0, h->strings_size))
			return CORRUPT("tensor %llu's name lies outside the string table", (unsigned long long)i);
		name = v->strings + t->name_offset;
		if (t->name_len == 0 || name[t->name_len] != '\0' || memchr(name, '\0', t->name_len))
			return CORRUPT("tensor %llu's name is not a non-empty NUL-terminated string",
				       (unsigned long long)i);
		if (!utf8_ok(name, t->name_len))
			return CORRUPT("tensor %llu's name is not UTF-8", (unsigned long long)i);
		if (i > 0) {
			const struct npi_manifest_tensor *p = &v->tensors[i - 1];
			const char *pname = v->strings + p->name_offset;

			if (strcmp(pname, name) >= 0)
				return CORRUPT("the tensor table is not sorted by name at '%s'", name);
		}
		if (t->dtype == NPUSHM_DTYPE_INVALID || t->dtype >= NPUSHM_DTYPE_COUNT_)
			return CORRUPT("tensor '%s' has the invalid dtype %u", name, t->dtype);
		if (t->ndim > NPUSHM_TENSOR_MAX_DIMS ||
		    !range_ok(t->dims_index, 2 * (uint64_t)t->ndim, 1, 0, h->dims_count))
			return CORRUPT("tensor '%s': its shape lies outside the dims table", name);
		nbytes = npushm_dtype_size((npushm_dtype_t)t->dtype);
		for (int d = (int)t->ndim - 1; d >= 0; d--) {
			int64_t extent = v->dims[t->dims_index + (uint64_t)d];
			int64_t stride = v->dims[t->dims_index + t->ndim + (uint64_t)d];

			if (extent < 0 || __builtin_mul_overflow(nbytes, (uint64_t)extent, &nbytes))
				return CORRUPT("tensor '%s': dimension %d is invalid", name, d);
			if (stride != (int64_t)expect)
				return CORRUPT("tensor '%s': strides are not C-contiguous", name);
			if (__builtin_mul_overflow(expect, (uint64_t)extent, &expect))
				expect = UINT64_MAX;
		}
		if (nbytes != t->nbytes)
			return CORRUPT("tensor '%s': %llu bytes recorded but its shape gives %llu", name,
				       (unsigned long long)t->nbytes, (unsigned long long)nbytes);
		if (t->offset == 0 && h->version == NPI_MANIFEST_VERSION_ONLY)
			continue;	/* stored only as a layout: check_only_layouts() */
		if (t->offset % NPUSHM_TENSOR_ALIGN || t->offset < h->data_offset ||
		    __builtin_add_overflow(t->offset, t->nbytes, &end) || end > h->data_end)
			return CORRUPT("tensor '%s': its data [%llu, +%llu) is misaligned or outside the data area",
				       name, (unsigned long long)t->offset, (unsigned long long)t->nbytes);
	}
	return check_layouts(base, h, v);
}

void npi_manifest_tensor(const struct npi_manifest_view *v, const void *base, size_t i,
			 npushm_tensor_t *t)
{
	const struct npi_manifest_tensor *e = &v->tensors[i];

	t->name = v->strings + e->name_offset;
	t->name_len = e->name_len;
	t->dtype = (npushm_dtype_t)e->dtype;
	t->ndim = e->ndim;
	t->shape = v->dims + e->dims_index;
	t->strides = v->dims + e->dims_index + e->ndim;
	t->data = e->offset ? (const char *)base + e->offset : NULL;
	t->nbytes = e->nbytes;
	t->offset = e->offset;
	t->index = i;
}

bool npi_manifest_tensor_index(const struct npi_manifest_view *v, const char *name, size_t *index)
{
	size_t lo = 0, hi = (size_t)v->hdr->tensor_count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name, v->strings + v->tensors[mid].name_offset);

		if (c == 0) {
			*index = mid;
			return true;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return false;
}
