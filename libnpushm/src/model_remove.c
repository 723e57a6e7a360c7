/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * model_remove.c - remove a model's name, and its hash alias with it once no
 * other model name refers to the region.
 *
 * The region itself is never destroyed here: it goes away when the last
 * name, handle and mapping are gone, so attached workers keep running.
 * A name that is not a model is removed like npushm_name_unlink(). The
 * per-node copies of a model ("NAME@nodeN") go with its name.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "manifest.h"
#include "model.h"

static void alias_of(npushm_region_t *r, char *alias, size_t size)
{
	struct npi_manifest_view v;
	void *m = NULL;

	alias[0] = '\0';
	if (npushm_region_map(r, NPUSHM_PROT_READ, &m) == NPUSHM_OK &&
	    npi_manifest_check(m, r->size, &v) == NPUSHM_OK) {
		char hex[33];

		npi_hex(v.hdr->hash, 16, hex);
		snprintf(alias, size, "%s%s", NPUSHM_HASH_ALIAS_PREFIX, hex);
	}
	if (m)
		npushm_region_unmap(r, m);
}

/* Only the alias left on @r? Then drop it so the memory can go. */
static void drop_lone_alias(npushm_dev_t *dev, npushm_region_t *r, const char *alias, const char *why)
{
	npushm_region_info_t info;
	npushm_region_t *a = NULL;

	if (npushm_region_info(r, &info) == NPUSHM_OK && info.names == 1 &&
	    npushm_region_open(dev, alias, 0, &a) == NPUSHM_OK && a->id == r->id) {
		if (npushm_name_unlink(dev, alias))
			npi_log(NPUSHM_LOG_WARN, "%s but its alias '%s' stays: %s", why, alias,
				npushm_last_error());
	}
	npushm_region_close(a);
}

void npi_model_drop_lone_alias(npushm_dev_t *dev, npushm_region_t *r, const char *why)
{
	struct npi_saved_error saved;
	char alias[64];

	npi_error_save(&saved);
	alias_of(r, alias, sizeof(alias));
	if (alias[0])
		drop_lone_alias(dev, r, alias, why);
	npi_error_restore(&saved);
}

NPUSHM_API npushm_status_t npushm_model_remove(npushm_dev_t *dev, const char *name)
{
	npushm_region_info_t info;
	npushm_region_t *r = NULL;
	char alias[64] = "", why[320];
	npushm_status_t st;

	if (!dev)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_model_remove: NULL device");
	st = npushm_region_open(dev, name, 0, &r);
	/* not "load it first": there is nothing to remove */
	if (st == NPUSHM_ERR_NOT_FOUND)
		return npi_fail(NPUSHM_ERR_NOT_FOUND, 0,
				"cannot remove '%s': no model or region is published under that name (removed already?); `npushm ls --all` lists the names",
				name);
	if (st == NPUSHM_ERR_ACCESS) {
		/* Unreadable but perhaps still removable by its owner. */
		st = npushm_name_unlink(dev, name);
		if (st)
			npi_error_prefix("cannot remove '%s'", name);
		return st;
	}
	if (st)
		return st;
	alias_of(r, alias, sizeof(alias));
	if (npushm_region_info(r, &info) != NPUSHM_OK)
		info.owner_uid = (uint32_t)geteuid();
	st = npushm_name_unlink(dev, name);
	if (st) {
		npi_error_prefix("cannot remove model '%s'", name);
		goto out;
	}
	npi_replicas_remove(dev, name, info.owner_uid);
	if (alias[0] && strcmp(alias, name)) {
		snprintf(why, sizeof(why), "model '%s' removed", name);
		drop_lone_alias(dev, r, alias, why);
	}
	st = NPUSHM_OK;
out:
	npushm_region_close(r);
	return st;
}
