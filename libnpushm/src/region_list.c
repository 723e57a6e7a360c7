/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * region_list.c - the immutable region list npushm_dev_list_regions()
 * returns. Backends fill it through npi_list_add()/npi_list_add_name();
 * the list owns every string and array in it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

npushm_region_entry_t *npi_list_add(struct npushm_region_list *list)
{
	npushm_region_entry_t *e;

	if (list->count == list->cap) {
		size_t cap = list->cap ? list->cap * 2 : 16;
		npushm_region_entry_t *n = realloc(list->entries, cap * sizeof(*n));

		if (!n) {
			npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot grow the region list");
			return NULL;
		}
		list->entries = n;
		list->cap = cap;
	}
	e = &list->entries[list->count++];
	memset(e, 0, sizeof(*e));
	return e;
}

npushm_status_t npi_list_add_name(npushm_region_entry_t *e, const char *name, uint32_t mode,
				  uint32_t uid, uint32_t gid, bool persistent)
{
	npushm_name_entry_t *names = realloc((void *)e->names, (e->name_count + 1) * sizeof(*names));
	char *copy;

	if (!names)
		return npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot grow the name list");
	e->names = names;
	copy = strdup(name);
	if (!copy)
		return npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot copy a name");
	names[e->name_count].name = copy;
	names[e->name_count].mode = mode;
	names[e->name_count].uid = uid;
	names[e->name_count].gid = gid;
	names[e->name_count].persistent = persistent;
	e->name_count++;
	return NPUSHM_OK;
}

static int by_id(const void *a, const void *b)
{
	const npushm_region_entry_t *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

NPUSHM_API npushm_status_t npushm_dev_list_regions(npushm_dev_t *dev, npushm_region_list_t **listp)
{
	struct npushm_region_list *list;
	npushm_status_t st;

	if (!dev || !listp)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_dev_list_regions: NULL argument");
	*listp = NULL;
	list = calloc(1, sizeof(*list));
	if (!list)
		return npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot allocate a region list");
	st = dev->ops->list_regions(dev, list);
	if (st) {
		npushm_region_list_free(list);
		return st;
	}
	if (list->count > 1)
		qsort(list->entries, list->count, sizeof(*list->entries), by_id);
	*listp = list;
	return NPUSHM_OK;
}

NPUSHM_API size_t npushm_region_list_count(const npushm_region_list_t *list)
{
	return list ? list->count : 0;
}

NPUSHM_API const npushm_region_entry_t *npushm_region_list_at(const npushm_region_list_t *list, size_t i)
{
	return list && i < list->count ? &list->entries[i] : NULL;
}

NPUSHM_API void npushm_region_list_free(npushm_region_list_t *list)
{
	size_t i, j;

	if (!list)
		return;
	for (i = 0; i < list->count; i++) {
		for (j = 0; j < list->entries[i].name_count; j++)
			free((void *)list->entries[i].names[j].name);
		free((void *)list->entries[i].names);
	}
	free(list->entries);
	free(list);
}
