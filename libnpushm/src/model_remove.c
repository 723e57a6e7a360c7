/* SPDX-License-Identifier: MIT */
/*
 * model_remove.c - remove a model's name, and its hash alias with it once no
 * other model name refers to the region.
 *
 * The region itself is never destroyed here: it goes away when the last
 * name, handle and mapping are gone, so attached workers keep running.
 * A name that is not a model is removed like npushm_name_unlink().
 */
#include <stdio.h>
#include <string.h>

#include "manifest.h"
#include "model.h"

NPUSHM_API npushm_status_t npushm_model_remove(npushm_dev_t *dev, const char *name)
{
	npushm_region_t *r = NULL, *a = NULL;
	npushm_region_info_t info;
	struct npi_manifest_view v;
	char alias[64] = "";
	void *m = NULL;
	npushm_status_t st;

	if (!dev)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_model_remove: NULL device");
	st = npushm_region_open(dev, name, 0, &r);
	if (st == NPUSHM_ERR_NOT_FOUND)
		return npi_model_not_found(name);
	if (st == NPUSHM_ERR_ACCESS) {
		/* Unreadable but perhaps still removable by its owner. */
		st = npushm_name_unlink(dev, name);
		if (st)
			npi_error_prefix("cannot remove '%s'", name);
		return st;
	}
	if (st)
		return st;
	if (npushm_region_map(r, NPUSHM_PROT_READ, &m) == NPUSHM_OK &&
	    npi_manifest_check(m, r->size, &v) == NPUSHM_OK) {
		char hex[33];

		npi_hex(v.hdr->hash, 16, hex);
		snprintf(alias, sizeof(alias), "%s%s", NPUSHM_HASH_ALIAS_PREFIX, hex);
	}
	if (m)
		npushm_region_unmap(r, m);
	st = npushm_name_unlink(dev, name);
	if (st) {
		npi_error_prefix("cannot remove model '%s'", name);
		goto out;
	}
	if (!alias[0] || !strcmp(alias, name))
		goto out;
	/* Only the alias left? Then drop it so the memory can go. */
	if (npushm_region_info(r, &info) == NPUSHM_OK && info.names == 1 &&
	    npushm_region_open(dev, alias, 0, &a) == NPUSHM_OK && a->id == r->id) {
		if (npushm_name_unlink(dev, alias))
			npi_log(NPUSHM_LOG_WARN, "model '%s' removed but its alias '%s' stays: %s", name,
				alias, npushm_last_error());
	}
	st = NPUSHM_OK;
out:
	npushm_region_close(a);
	npushm_region_close(r);
	return st;
}
