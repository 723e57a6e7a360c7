/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * cmd_ls.c - `npushm ls`: the regions the caller can see, one per line,
 * with their names, size, content hash and tensor count when the region is
 * a model, whether it is sealed, how many processes map it and how many of
 * its bytes are pinned (RDMA MRs, O_DIRECT in flight; when the backend can
 * tell), and where its memory comes from (the module's provider, @device
 * when it has one; "shm" on the posix backend). Hash aliases are folded into their region's HASH
 * column unless --all; --all also shows the regions without a name that
 * processes still map (a model removed while workers use it). A region
 * whose manifest the caller may not read is marked, with a note saying
 * that permission hides whether it is a model. The mapper counts are read
 * before this process attaches anything, so they do not include `npushm ls`
 * itself.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static bool is_alias(const char *name)
{
	return !strncmp(name, NPUSHM_HASH_ALIAS_PREFIX, strlen(NPUSHM_HASH_ALIAS_PREFIX));
}

/* The name to attach by: the first non-alias name, else the alias. */
static const char *main_name(const npushm_region_entry_t *e)
{
	for (size_t i = 0; i < e->name_count; i++)
		if (!is_alias(e->names[i].name))
			return e->names[i].name;
	return e->name_count ? e->names[0].name : NULL;
}

static struct json_object *count_or_null(uint32_t v)
{
	return v == NPUSHM_COUNT_UNKNOWN ? NULL : json_object_new_uint64(v);
}

static struct json_object *bytes_or_null(uint64_t v)
{
	return v == UINT64_MAX ? NULL : json_object_new_uint64(v);
}

int cmd_ls(const struct cli_opts *o)
{
	npushm_region_list_t *list = NULL;
	struct json_object *jregions = NULL;
	npushm_dev_info_t di;
	npushm_dev_t *dev;
	npushm_status_t st;
	int rc = 0, denied = 0, unnamed = 0;

	dev = cli_open_dev(o, &rc);
	if (!dev)
		return rc;
	st = npushm_dev_list_regions(dev, &list);
	if (st) {
		rc = cli_fail(o, st, NULL);
		goto out;
	}
	if (o->json)
		jregions = json_object_new_array();
	else
		printf("%-32s %-6s %10s %-16s %7s %6s %5s %8s %-8s %s\n", "NAME", "KIND", "SIZE", "HASH",
		       "TENSORS", "SEALED", "PROCS", "PINNED", "PROVIDER", "LAYOUTS");
	for (size_t i = 0; i < npushm_region_list_count(list); i++) {
		const npushm_region_entry_t *e = npushm_region_list_at(list, i);
		const char *name = main_name(e);
		npushm_model_t *m = NULL;
		npushm_model_info_t mi = { 0 };
		char names[512] = "", sz[32], procs[16], pinned[32], lay[NPUSHM_LAYOUT_TAG_MAX + 32];
		npushm_status_t ast = NPUSHM_ERR_NOT_FOUND;
		size_t used = 0;

		if (!e->name_count && !o->all) {
			unnamed++;
			continue;
		}
		if (name) {
			ast = npushm_model_attach_dev(dev, name, &m);
			if (ast == NPUSHM_OK)
				npushm_model_info(m, &mi);
			else if (ast == NPUSHM_ERR_ACCESS)
				denied++;
		}
		for (size_t k = 0; k < e->name_count; k++) {
			if (is_alias(e->names[k].name) && !o->all && (m || ast == NPUSHM_ERR_ACCESS))
				continue;
			used += (size_t)snprintf(names + used, used < sizeof(names) ? sizeof(names) - used : 0,
						 "%s%s", used ? "," : "", e->names[k].name);
			if (used >= sizeof(names))
				break;
		}
		if (o->json) {
			struct json_object *j = json_object_new_object(), *jn = json_object_new_array();

			json_object_object_add(j, "id", json_object_new_uint64(e->id));
			json_object_object_add(j, "size", json_object_new_uint64(e->size));
			json_object_object_add(j, "sealed", json_object_new_boolean(e->flags & NPUSHM_REGION_SEALED));
			json_object_object_add(j, "persistent", json_object_new_boolean(e->flags & NPUSHM_REGION_PERSISTENT));
			json_object_object_add(j, "owner_uid", json_object_new_uint64(e->owner_uid));
			json_object_object_add(j, "owner_gid", json_object_new_uint64(e->owner_gid));
			json_object_object_add(j, "mappers", count_or_null(e->mappers));
			json_object_object_add(j, "mappings", count_or_null(e->mappings));
			json_object_object_add(j, "handles", count_or_null(e->handles));
			json_object_object_add(j, "mapped_bytes", bytes_or_null(e->mapped_bytes));
			json_object_object_add(j, "pinned_bytes", bytes_or_null(e->pinned_bytes));
			json_object_object_add(j, "provider", e->provider[0] ?
					       json_object_new_string(e->provider) : NULL);
			json_object_object_add(j, "device", e->device[0] ?
					       json_object_new_string(e->device) : NULL);
			for (size_t k = 0; k < e->name_count; k++) {
				struct json_object *n = json_object_new_object();

				json_object_object_add(n, "name", json_object_new_string(e->names[k].name));
				char oct[8];

				snprintf(oct, sizeof(oct), "%04o", e->names[k].mode);
				json_object_object_add(n, "mode", json_object_new_uint64(e->names[k].mode));
				json_object_object_add(n, "mode_octal", json_object_new_string(oct));
				json_object_object_add(n, "uid", json_object_new_uint64(e->names[k].uid));
				json_object_object_add(n, "gid", json_object_new_uint64(e->names[k].gid));
				json_object_object_add(n, "persistent", json_object_new_boolean(e->names[k].persistent));
				json_object_object_add(n, "hash_alias", json_object_new_boolean(is_alias(e->names[k].name)));
				json_object_array_add(jn, n);
			}
			json_object_object_add(j, "names", jn);
			json_object_object_add(j, "readable", json_object_new_boolean(ast != NPUSHM_ERR_ACCESS));
			if (m) {
				struct json_object *jm = json_object_new_object();

				json_object_object_add(jm, "hash", json_object_new_string(mi.hash_hex));
				json_object_object_add(jm, "tensors", json_object_new_uint64(mi.tensor_count));
				json_object_object_add(jm, "source_size", json_object_new_uint64(mi.source_size));
				json_object_object_add(jm, "layouts", json_object_new_uint64(npushm_model_layout_count(m)));
				json_object_object_add(jm, "layouts_made_by", json_object_new_string(cli_layouts_summary(m, lay, sizeof(lay))));
				json_object_object_add(jm, "packed_only_tensors", json_object_new_uint64(npushm_model_accept_packed_only(m)));
				json_object_object_add(j, "model", jm);
			} else {
				json_object_object_add(j, "model", NULL);
			}
			json_object_array_add(jregions, j);
		} else {
			char tensors[24] = "-", provider[2 * NPUSHM_PROVIDER_MAX];

			if (m)
				snprintf(tensors, sizeof(tensors), "%zu", mi.tensor_count);
			if (e->mappers == NPUSHM_COUNT_UNKNOWN)
				snprintf(procs, sizeof(procs), "?");
			else
				snprintf(procs, sizeof(procs), "%u", e->mappers);
			if (e->pinned_bytes == UINT64_MAX)
				snprintf(pinned, sizeof(pinned), "?");
			else
				cli_size(e->pinned_bytes, pinned, sizeof(pinned));
			snprintf(provider, sizeof(provider), "%s%s%s", e->provider[0] ? e->provider : "?",
				 e->device[0] ? "@" : "", e->device);
			/* the layouts' tags are the loader's: escaped for the terminal */
			char *made_by = cli_text(m ? cli_layouts_summary(m, lay, sizeof(lay)) : "-");

			printf("%-32s %-6s %10s %-16.16s %7s %6s %5s %8s %-8s %s\n", names[0] ? names : name ? name : "(no name)",
			       m ? "model" : ast == NPUSHM_ERR_ACCESS ? "region*" : "region", cli_size(e->size, sz, sizeof(sz)),
			       m ? mi.hash_hex : "-", tensors,
			       (e->flags & NPUSHM_REGION_SEALED) ? "yes" : "no", procs, pinned, provider,
			       made_by ? made_by : "?");
			free(made_by);
		}
		npushm_model_detach(m);
	}
	if (!o->json && denied)
		printf("\n* you (uid %u) may not read %s: whether %s, and %s, %s hidden\n"
		       "  by permission (ls --json shows the mode; ask the owner for read access)\n",
		       (unsigned)geteuid(), denied == 1 ? "this region" : "these regions",
		       denied == 1 ? "it is a model" : "they are models",
		       denied == 1 ? "its hash and tensors" : "their hashes and tensors",
		       "are");
	if (!o->json && o->all && npushm_region_list_count(list) > 0) {
		bool any = false;

		for (size_t i = 0; i < npushm_region_list_count(list); i++)
			any |= !npushm_region_list_at(list, i)->name_count;
		if (any)
			printf("\n(no name): regions whose names were removed (or never given) that processes\n"
			       "  still map; their memory is freed when the last of them unmaps it\n");
	}
	if (!o->json && unnamed)
		printf("\n(%d region%s without a name still mapped: npushm ls --all shows %s)\n", unnamed,
		       unnamed == 1 ? "" : "s", unnamed == 1 ? "it" : "them");
	if (o->json) {
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "backend", json_object_new_string(npushm_backend_name(npushm_dev_backend(dev))));
		if (npushm_dev_query(dev, &di) == NPUSHM_OK) {
			json_object_object_add(j, "capacity", json_object_new_uint64(di.capacity));
			json_object_object_add(j, "in_use", json_object_new_uint64(di.in_use));
		}
		json_object_object_add(j, "regions", jregions);
		cli_print_json(j);
	}
out:
	npushm_region_list_free(list);
	npushm_dev_close(dev);
	return rc;
}
