/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * model_layout.c - where a model's bytes go in its region, and the manifest
 * that describes them (the format is in manifest.h).
 *
 * The manifest comes first; every tensor follows at a 64-byte aligned
 * offset, in file order, so the copy streams sequentially. The manifest's
 * tensor table is sorted by name for binary search and carries C-order
 * strides. Nothing here can overflow: the header was validated against the
 * file's size before.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"
#include "loader.h"

void npi_load_tensor_view(const struct npi_st_header *h, size_t i, const void *data,
			  int64_t *strides, npushm_tensor_t *t)
{
	const struct npi_st_tensor *s = &h->tensors[i];
	int64_t stride = 1;

	for (int d = (int)s->ndim - 1; d >= 0; d--) {
		strides[d] = stride;
		stride *= s->shape[d];
	}
	memset(t, 0, sizeof(*t));
	t->name = s->name;
	t->name_len = s->name_len;
	t->dtype = s->dtype;
	t->ndim = s->ndim;
	t->shape = s->shape;
	t->strides = strides;
	t->data = data;
	t->nbytes = s->nbytes;
	t->index = i;
}

/* ask @packer which tensors get a layout: l->packed, l->tags_size */
static npushm_status_t plan_packed(const struct npi_st_header *h, struct layout *l,
				   const npushm_packer_t *packer)
{
	int64_t strides[NPUSHM_TENSOR_MAX_DIMS];
	npushm_tensor_t t;

	l->packed = calloc(h->count + 1, sizeof(*l->packed));
	if (!l->packed)
		return npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot allocate the layout plan");
	for (size_t i = 0; i < h->count; i++) {
		struct packed *p = &l->packed[l->npacked];
		size_t len;

		npi_load_tensor_view(h, i, NULL, strides, &t);
		p->tag[0] = '\0';
		p->nbytes = packer->size(packer->arg, &t, p->tag);
		if (!p->nbytes)
			continue;
		len = strnlen(p->tag, sizeof(p->tag));
		if (len == 0 || len == sizeof(p->tag) || p->nbytes > (1ull << 48))
			return npi_fail(NPUSHM_ERR_INVALID, 0, "the packer gave tensor '%s' %s",
					h->tensors[i].name, len ? "an unterminated tag" :
					p->nbytes > (1ull << 48) ? "an absurd size" : "no tag");
		p->file_index = i;
		l->tags_size += len + 1;
		l->npacked++;
	}
	if (l->npacked > NPI_LAYOUTS_MAX)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "the packer asked for %zu layouts; at most %d",
				l->npacked, NPI_LAYOUTS_MAX);
	return NPUSHM_OK;
}

/* has file tensor @i a layout that replaces its plain bytes? (packed[] is in file order) */
static bool only_packed(const struct layout *l, size_t i)
{
	size_t lo = 0, hi = l->npacked;

	if (!l->packed_only)
		return false;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l->packed[mid].file_index == i)
			return true;
		if (l->packed[mid].file_index < i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

npushm_status_t npi_load_plan(const struct npi_st_header *h, struct layout *l, uint64_t page,
			      const npushm_packer_t *packer)
{
	uint64_t cursor, names = 0;
	npushm_status_t st;

	l->dims_count = 0;
	for (size_t i = 0; i < h->count; i++) {
		l->dims_count += 2 * (uint64_t)h->tensors[i].ndim;
		names += h->tensors[i].name_len + 1;
	}
	l->strings_size = names;
	l->metadata_size = strlen(h->metadata_json) + 1;
	cursor = sizeof(struct npi_manifest_hdr) + h->count * sizeof(struct npi_manifest_tensor) +
		 l->dims_count * sizeof(int64_t) + l->strings_size + l->metadata_size;
	if (packer && packer->size) {
		if ((st = plan_packed(h, l, packer)))
			return st;
		if (l->npacked) {
			npi_align_up(cursor, 8, &cursor);
			l->layouts_offset = cursor;
			cursor += l->npacked * sizeof(struct npi_manifest_layout) + l->tags_size;
		}
	}
	l->manifest_size = cursor;
	npi_align_up(cursor, NPUSHM_TENSOR_ALIGN, &cursor);
	l->data_offset = cursor;
	l->dst = calloc(h->count + 1, sizeof(*l->dst));
	if (!l->dst)
		return npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot allocate the layout");
	for (size_t i = 0; i < h->count; i++) {
		/* The header is bounded by the file size, so none of this overflows. */
		if (only_packed(l, i)) {
			l->dst[i] = NPI_NOT_STORED;
			continue;
		}
		npi_align_up(cursor, NPUSHM_TENSOR_ALIGN, &cursor);
		l->dst[i] = cursor;
		cursor += h->tensors[i].nbytes;
	}
	l->data_end = cursor;
	for (size_t i = 0; i < l->npacked; i++) {
		npi_align_up(cursor, NPUSHM_TENSOR_ALIGN, &cursor);
		l->packed[i].offset = cursor;
		if (__builtin_add_overflow(cursor, l->packed[i].nbytes, &cursor))
			return npi_fail(NPUSHM_ERR_INVALID, 0, "the packed model is too large");
	}
	if (!npi_align_up(cursor ? cursor : 1, page, &l->region_size))
		return npi_fail(NPUSHM_ERR_INVALID, 0, "the model is too large");
	return NPUSHM_OK;
}

static int by_name(const void *a, const void *b)
{
	const struct npi_st_tensor *const *x = a, *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

/* Build the manifest (without the hash fields' final values) in memory. */
npushm_status_t npi_load_manifest(const struct npi_st_header *h, const struct layout *l,
				  uint64_t source_size, const uint8_t source_hash[16],
				  const uint8_t hash[16], uint8_t **out)
{
	size_t *sorted_index = calloc(h->count + 1, sizeof(size_t));
	struct npi_manifest_hdr *mh;
	struct npi_manifest_tensor *mt;
	const struct npi_st_tensor **sorted;
	uint8_t *buf = calloc(1, l->manifest_size);
	uint64_t dims_at = 0, str_at = 0;
	int64_t *dims;
	char *strings;

	sorted = calloc(h->count + 1, sizeof(*sorted));
	if (!buf || !sorted || !sorted_index) {
		free(buf);
		free(sorted);
		free(sorted_index);
		return npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot allocate the manifest");
	}
	mh = (void *)buf;
	memcpy(mh->magic, NPI_MANIFEST_MAGIC, 8);
	mh->version = NPI_MANIFEST_VERSION;
	mh->hdr_size = sizeof(*mh);
	mh->manifest_size = l->manifest_size;
	mh->region_size = l->region_size;
	mh->data_offset = l->data_offset;
	mh->data_end = l->data_end;
	mh->source_size = source_size;
	memcpy(mh->hash, hash, 16);
	mh->tensor_count = h->count;
	mh->tensors_offset = sizeof(*mh);
	mh->dims_offset = mh->tensors_offset + h->count * sizeof(*mt);
	mh->dims_count = l->dims_count;
	mh->strings_offset = mh->dims_offset + l->dims_count * sizeof(int64_t);
	mh->strings_size = l->strings_size;
	mh->metadata_offset = mh->strings_offset + l->strings_size;
	mh->metadata_size = l->metadata_size;
	mt = (void *)(buf + mh->tensors_offset);
	dims = (void *)(buf + mh->dims_offset);
	strings = (char *)buf + mh->strings_offset;
	memcpy(buf + mh->metadata_offset, h->metadata_json, l->metadata_size);

	for (size_t i = 0; i < h->count; i++)
		sorted[i] = &h->tensors[i];
	qsort(sorted, h->count, sizeof(*sorted), by_name);
	for (size_t i = 0; i < h->count; i++) {
		const struct npi_st_tensor *t = sorted[i];
		size_t file_index = (size_t)(t - h->tensors);
		int64_t stride = 1;

		sorted_index[file_index] = i;
		mt[i].name_offset = str_at;
		mt[i].name_len = (uint32_t)t->name_len;
		mt[i].dtype = (uint16_t)t->dtype;
		mt[i].ndim = (uint16_t)t->ndim;
		mt[i].dims_index = dims_at;
		mt[i].offset = l->dst[file_index] == NPI_NOT_STORED ? 0 : l->dst[file_index];
		mt[i].nbytes = t->nbytes;
		mt[i].source_offset = h->data_start + t->begin;
		memcpy(strings + str_at, t->name, t->name_len + 1);
		str_at += t->name_len + 1;
		for (int d = (int)t->ndim - 1; d >= 0; d--) {
			dims[dims_at + (uint64_t)d] = t->shape[d];
			dims[dims_at + t->ndim + (uint64_t)d] = stride;
			stride *= t->shape[d];	/* bounded: nbytes did not overflow */
		}
		dims_at += 2 * (uint64_t)t->ndim;
	}
	if (l->npacked) {
		struct npi_manifest_layout *ml = (void *)(buf + l->layouts_offset);
		char *tags = (char *)(ml + l->npacked);
		uint64_t tag_at = 0;

		mh->version = l->packed_only ? NPI_MANIFEST_VERSION_ONLY : NPI_MANIFEST_VERSION_LAYOUTS;
		mh->layouts_offset = l->layouts_offset;
		mh->layouts_count = l->npacked;
		memcpy(mh->source_hash, source_hash, 16);
		for (size_t i = 0; i < l->npacked; i++) {
			const struct packed *p = &l->packed[i];
			size_t len = strlen(p->tag);

			ml[i].tensor_index = sorted_index[p->file_index];
			ml[i].tag_offset = tag_at;
			ml[i].tag_len = (uint32_t)len;
			ml[i].flags = l->packed_only ? NPI_LAYOUT_ONLY : 0;
			ml[i].offset = p->offset;
			ml[i].nbytes = p->nbytes;
			memcpy(ml[i].hash, p->hash, 16);
			memcpy(tags + tag_at, p->tag, len + 1);
			tag_at += len + 1;
		}
	}
	free(sorted);
	free(sorted_index);
	mh->manifest_hash = npi_manifest_hash_of(buf, l->manifest_size);
	*out = buf;
	return NPUSHM_OK;
}

/* Write @len bytes at region offset @off through the handle or the mapping. */
npushm_status_t npi_load_put(npushm_region_t *r, void *map, const void *buf, size_t len, uint64_t off)
{
	if (r->dev->ops->region_write)
		return r->dev->ops->region_write(r, buf, len, off);
	memcpy((char *)map + off, buf, len);
	return NPUSHM_OK;
}
