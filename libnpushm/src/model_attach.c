/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * model_attach.c - attach a published model and look its tensors up.
 *
 * Attach = open the name read-only, check that the region is sealed, map it
 * read-only without MAP_POPULATE, validate the manifest. Only the manifest's
 * pages are touched, so the cost does not grow with the model's size; the
 * tensor data is faulted in by whoever reads it. Lookups are a binary search
 * over the name-sorted table. A model is immutable after attach and safe to
 * share between threads. A model loaded with one copy per NUMA node is
 * attached through the copy of the calling thread's node (model_replicas.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "model.h"

npushm_status_t npi_model_not_found(const char *name)
{
	return npi_fail(NPUSHM_ERR_NOT_FOUND, 0,
			"model '%s' not found: no region published under that name; run `npushm load FILE --name %s` first",
			name, name);
}

void npi_model_ref(npushm_model_t *m)
{
	atomic_fetch_add(&m->refs, 1);
}

void npi_model_unref(npushm_model_t *m)
{
	if (!m || atomic_fetch_sub(&m->refs, 1) != 1)
		return;
	if (m->base)
		munmap(m->base, m->size);
	free(m->name);
	free(m);
}

NPUSHM_API npushm_status_t npushm_model_attach_dev(npushm_dev_t *dev, const char *name,
						   npushm_model_t **modelp)
{
	npushm_region_info_t ri;
	npushm_region_t *r = NULL;
	npushm_model_t *m = NULL;
	bool sealed = false;
	npushm_status_t st;

	if (!dev || !modelp)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_model_attach: NULL argument");
	*modelp = NULL;
	st = npushm_region_open(dev, name, 0, &r);
	if (st == NPUSHM_ERR_NOT_FOUND)
		return npi_model_not_found(name);
	if (st) {
		npi_error_prefix("cannot attach model '%s'", name ? name : "(null)");
		return st;
	}
	st = dev->ops->region_sealed(r, &sealed);
	if (!st)
		st = npushm_region_info(r, &ri);
	if (st)
		goto out;
	if (!sealed) {
		st = npi_fail(NPUSHM_ERR_CORRUPT, 0,
			      "'%s' is not a finished model: its region is not sealed (a plain region, not a model loaded by npushm load)",
			      name);
		goto out;
	}
	m = calloc(1, sizeof(*m));
	if (!m || !(m->name = strdup(name))) {
		st = npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot allocate a model handle");
		goto out;
	}
	atomic_init(&m->refs, 1);
	m->size = r->size;
	m->region_id = r->id;
	m->owner_uid = ri.owner_uid;
	st = npushm_region_map(r, NPUSHM_PROT_READ, &m->base);
	if (st) {
		npi_error_prefix("cannot attach model '%s'", name);
		goto out;
	}
	st = npi_manifest_check(m->base, m->size, &m->view);
	if (!st)
		st = npi_replicas_attach_local(dev, name, m);
	if (st) {
		npi_error_prefix("cannot attach model '%s'", name);
		goto out;
	}
out:
	npushm_region_close(r);
	if (st) {
		npi_model_unref(m);
		return st;
	}
	*modelp = m;
	return NPUSHM_OK;
}

NPUSHM_API npushm_status_t npushm_model_attach(const char *name, npushm_model_t **modelp)
{
	npushm_dev_t *dev;
	npushm_status_t st;

	if (!modelp)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_model_attach: NULL argument");
	*modelp = NULL;
	st = npushm_dev_open(NPUSHM_BACKEND_AUTO, &dev);
	if (st)
		return st;
	st = npushm_model_attach_dev(dev, name, modelp);
	npushm_dev_close(dev);
	return st;
}

NPUSHM_API void npushm_model_detach(npushm_model_t *model)
{
	npi_model_unref(model);
}

NPUSHM_API uint32_t npushm_model_owner_uid(const npushm_model_t *m)
{
	return m ? m->owner_uid : UINT32_MAX;
}

NPUSHM_API void npushm_model_info(const npushm_model_t *m, npushm_model_info_t *info)
{
	const struct npi_manifest_hdr *h;

	if (!info)
		return;
	memset(info, 0, sizeof(*info));
	if (!m)
		return;
	h = m->view.hdr;
	memcpy(info->hash, h->hash, 16);
	npi_hex(h->hash, 16, info->hash_hex);
	info->source_size = h->source_size;
	info->region_size = m->size;
	info->region_id = m->region_id;
	info->data_size = h->data_end - h->data_offset;
	info->tensor_count = (size_t)h->tensor_count;
	info->metadata_json = m->view.metadata;
}

NPUSHM_API size_t npushm_model_tensor_count(const npushm_model_t *m)
{
	return m ? (size_t)m->view.hdr->tensor_count : 0;
}

NPUSHM_API int npushm_model_node(const npushm_model_t *m)
{
	return m ? m->node : -1;
}

NPUSHM_API const void *npushm_model_base(const npushm_model_t *m)
{
	return m ? m->base : NULL;
}

/* tensor @i into @t, unless it is stored only as a layout and @m's caller did not say it reads such */
static npushm_status_t tensor_out(const npushm_model_t *m, size_t i, npushm_tensor_t *t)
{
	if (!m->view.tensors[i].offset && !m->accept_packed_only) {
		npushm_layout_t l;
		const char *name = m->view.strings + m->view.tensors[i].name_offset;

		return npi_fail(NPUSHM_ERR_UNSUPPORTED, 0, "tensor '%s' of model '%s' is stored only "
				"in its packed layout '%s' (npushm load --packed-only): this program "
				"reads plain tensors; load the model without --packed-only for it",
				name, m->name, npushm_model_layout_find(m, name, &l) ? "?" : l.tag);
	}
	npi_manifest_tensor(&m->view, m->base, i, t);
	return NPUSHM_OK;
}

NPUSHM_API size_t npushm_model_accept_packed_only(npushm_model_t *m)
{
	size_t n = 0;

	if (!m)
		return 0;
	m->accept_packed_only = true;
	for (uint64_t i = 0; i < m->view.hdr->tensor_count; i++)
		n += !m->view.tensors[i].offset;
	return n;
}

NPUSHM_API npushm_status_t npushm_model_tensor_at(const npushm_model_t *m, size_t index,
						  npushm_tensor_t *t)
{
	if (!m || !t)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_model_tensor_at: NULL argument");
	if (index >= m->view.hdr->tensor_count)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "tensor index %zu is out of range: model '%s' has %llu tensors",
				index, m->name, (unsigned long long)m->view.hdr->tensor_count);
	return tensor_out(m, index, t);
}

NPUSHM_API npushm_status_t npushm_model_tensor_find(const npushm_model_t *m, const char *name,
						    npushm_tensor_t *t)
{
	size_t i;

	if (!m || !name || !t)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_model_tensor_find: NULL argument");
	if (npi_manifest_tensor_index(&m->view, name, &i))
		return tensor_out(m, i, t);
	return npi_fail(NPUSHM_ERR_NOT_FOUND, 0, "model '%s' has no tensor named '%s'; `npushm info %s` lists them",
			m->name, name, m->name);
}
