/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * model_layouts.c - the packed layouts an attached model carries (manifest
 * version 2, see manifest.h): lookups by position and by tensor name. The
 * table was validated at attach (manifest.c); nothing here touches the
 * layouts' bytes.
 */
#include <string.h>

#include "model.h"

NPUSHM_API size_t npushm_model_layout_count(const npushm_model_t *m)
{
	return m && m->view.layouts ? (size_t)m->view.hdr->layouts_count : 0;
}

NPUSHM_API npushm_status_t npushm_model_layout_at(const npushm_model_t *m, size_t index,
						  npushm_layout_t *l)
{
	const struct npi_manifest_layout *e;

	if (!m || !l)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_model_layout_at: NULL argument");
	if (index >= npushm_model_layout_count(m))
		return npi_fail(NPUSHM_ERR_INVALID, 0, "model '%s' has %zu packed layouts, not %zu",
				m->name, npushm_model_layout_count(m), index + 1);
	e = &m->view.layouts[index];
	l->tensor = m->view.strings + m->view.tensors[e->tensor_index].name_offset;
	l->tensor_index = (size_t)e->tensor_index;
	l->tag = m->view.layout_tags + e->tag_offset;
	l->data = (const char *)m->base + e->offset;
	l->nbytes = e->nbytes;
	l->offset = e->offset;
	memcpy(l->hash, e->hash, 16);
	return NPUSHM_OK;
}

NPUSHM_API npushm_status_t npushm_model_layout_find(const npushm_model_t *m, const char *name,
						    npushm_layout_t *l)
{
	size_t n = npushm_model_layout_count(m), ti;

	if (!m || !name || !l)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_model_layout_find: NULL argument");
	if (!npi_manifest_tensor_index(&m->view, name, &ti))
		return npi_fail(NPUSHM_ERR_NOT_FOUND, 0, "model '%s' has no tensor named '%s'",
				m->name, name);
	for (size_t i = 0; i < n; i++)
		if (m->view.layouts[i].tensor_index == ti)
			return npushm_model_layout_at(m, i, l);
	return npi_fail(NPUSHM_ERR_NOT_FOUND, 0, "tensor '%s' of model '%s' has no packed layout",
			name, m->name);
}
