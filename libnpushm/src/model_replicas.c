/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * model_replicas.c - the per-node copies of a model (NPUSHM_LOAD_PER_NODE):
 * made by the loader after its own region is sealed, published before the
 * model's name, found by attach, removed with the model.
 *
 * Load: the loader's region was allocated bound to the first node
 * (model_load.c); here it is checked to be wholly there, then one copy per
 * other node is allocated bound to that node, filled from it byte for byte,
 * checked page by page, and sealed. Nothing is published until every copy
 * is made: a full node fails the load with nothing published. Then
 * "NAME@nodeN" is published for every node (the first names the loader's
 * region) and NAME last, so a reader that finds NAME finds the copies.
 *
 * Attach: after NAME is attached and validated, the copy of the calling
 * thread's node replaces it when there is one and its manifest carries the
 * same content hash and size (else CORRUPT: a copy never holds other
 * content). A "NAME@nodeN" of another user than the model's owner is no
 * copy: attach ignores it, a load does not count it, remove leaves it.
 * Remove: every other "NAME@nodeN" goes with NAME.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "manifest.h"
#include "model.h"
#include "loader.h"
#include "model_nodes.h"

/* Read one byte per page, so that move_pages(2) finds every page mapped. */
static void touch_pages(const void *p, uint64_t len, uint64_t page)
{
	volatile const char *c = p;

	for (uint64_t off = 0; off < len; off += page)
		(void)c[off];
}

/* Whether the mapped region @p of @len bytes lies wholly on @node. */
static npushm_status_t check_placement(const struct load *ld, const void *p, uint64_t len,
				       int node)
{
	long off;

	touch_pages(p, len, ld->r->dev->page_size);
	off = npi_node_pages_off(p, len, (long)ld->r->dev->page_size, node);
	if (off < 0)
		return npi_fail(NPUSHM_ERR_IO, errno,
				"cannot load '%s' per node: cannot tell where the copy for node %d lies (move_pages)",
				ld->path, node);
	if (off)
		return npi_fail(NPUSHM_ERR_NO_SPACE, 0,
				"cannot load '%s' per node: %ld pages of the copy for NUMA node %d are on another node; nothing was published",
				ld->path, off, node);
	return NPUSHM_OK;
}

npushm_status_t npi_replicas_alloc(struct load *ld, npushm_dev_t *dev, uint64_t size, int node,
				   npushm_region_t **rp)
{
	npushm_status_t st;

	/* Not lazy: every page is allocated by the sizing call, bound to @node. */
	npi_alloc_node = ld->rep.count > 1 ? node : -1;
	st = npushm_region_alloc(dev, size, 0, rp);
	npi_alloc_node = -1;
	if (st)
		npi_error_prefix("cannot load '%s' per node: no room for the copy for NUMA node %d; nothing was published",
				 ld->path, node);
	return st;
}

/* Copy @src (the sealed model, mapped) into a new region on @node, sealed. */
static npushm_status_t make_copy(struct load *ld, npushm_dev_t *dev, const void *src, int node,
				 npushm_region_t **rp)
{
	npushm_status_t st;
	void *dst = NULL;

	st = npi_replicas_alloc(ld, dev, ld->r->size, node, rp);
	if (st)
		return st;
	st = npushm_region_map(*rp, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, &dst);
	if (st)
		return st;
	memcpy(dst, src, ld->r->size);
	st = check_placement(ld, dst, ld->r->size, node);
	npushm_region_unmap(*rp, dst);
	if (!st)
		st = npushm_region_seal(*rp);
	return st;
}

npushm_status_t npi_replicas_make(struct load *ld, npushm_dev_t *dev)
{
	struct replicas *rep = &ld->rep;
	npushm_status_t st;
	void *src = NULL;

	st = npushm_region_map(ld->r, NPUSHM_PROT_READ, &src);
	if (st)
		return st;
	st = check_placement(ld, src, ld->r->size, rep->nodes[0]);
	for (int i = 1; !st && i < rep->count; i++) {
		npi_load_progress(ld, NPUSHM_LOAD_SEAL, (uint64_t)i, (uint64_t)rep->count);
		st = make_copy(ld, dev, src, rep->nodes[i], &rep->copy[i]);
	}
	npushm_region_unmap(ld->r, src);
	return st;
}

void npi_replicas_free(struct replicas *rep)
{
	for (int i = 1; i < rep->count; i++) {
		npushm_region_close(rep->copy[i]);
		rep->copy[i] = NULL;
	}
}

/* Unlink the copy names of nodes[0..n), keeping the caller's error. */
static void unpublish(npushm_dev_t *dev, const char *name, const struct replicas *rep, int n)
{
	struct npi_saved_error saved;
	char copy[NPUSHM_NAME_MAX + 32];

	npi_error_save(&saved);
	for (int i = 0; i < n; i++) {
		npi_node_copy_name(name, rep->nodes[i], copy, sizeof(copy));
		npushm_name_unlink(dev, copy);
	}
	npi_error_restore(&saved);
}

npushm_status_t npi_replicas_check_names(const struct load *ld, npushm_dev_t *dev)
{
	char copy[NPUSHM_NAME_MAX + 32], fname[300];
	npushm_status_t st;

	for (int i = 0; i < ld->rep.count; i++) {
		npi_node_copy_name(ld->name, ld->rep.nodes[i], copy, sizeof(copy));
		st = npi_name_check(copy);
		if (!st)
			st = npi_dir_file_name(dev, copy, fname, sizeof(fname));
		if (st) {
			npi_error_prefix("cannot load '%s' per node: the copy for NUMA node %d would be named '%s'; choose a shorter --name",
					 ld->path, ld->rep.nodes[i], copy);
			return st;
		}
	}
	return NPUSHM_OK;
}

npushm_status_t npi_replicas_publish(struct load *ld, npushm_dev_t *dev, uint32_t flags)
{
	struct replicas *rep = &ld->rep;
	char copy[NPUSHM_NAME_MAX + 32];
	npushm_status_t st;

	for (int i = 0; i < rep->count; i++) {
		npi_node_copy_name(ld->name, rep->nodes[i], copy, sizeof(copy));
		st = npi_name_check(copy);
		if (!st)
			st = npushm_region_publish(i ? rep->copy[i] : ld->r, copy, ld->mode, flags);
		if (st) {
			npi_error_prefix("cannot load '%s' per node: cannot publish the copy for NUMA node %d as '%s'; nothing was published",
					 ld->path, rep->nodes[i], copy);
			unpublish(dev, ld->name, rep, i);
			return st;
		}
	}
	return NPUSHM_OK;
}

void npi_replicas_unpublish(struct load *ld, npushm_dev_t *dev)
{
	unpublish(dev, ld->name, &ld->rep, ld->rep.count);
}

/*
 * Whether region @r belongs to @uid. A name "NAME@nodeN" anyone may
 * publish: only a region of the model's owner is a copy of it, whatever
 * its manifest claims.
 */
static bool owned_by(npushm_region_t *r, uint32_t uid)
{
	npushm_region_info_t ri;

	return npushm_region_info(r, &ri) == NPUSHM_OK && ri.owner_uid == uid;
}

/* The manifest of region @r (mapped read-only at *@m), checked. */
static npushm_status_t map_manifest(npushm_region_t *r, void **m, struct npi_manifest_view *v)
{
	npushm_status_t st = npushm_region_map(r, NPUSHM_PROT_READ, m);

	if (!st)
		st = npi_manifest_check(*m, r->size, v);
	return st;
}

bool npi_replicas_complete(const struct load *ld, npushm_dev_t *dev, const uint8_t hash[16])
{
	struct npi_saved_error saved;
	char copy[NPUSHM_NAME_MAX + 32];
	bool complete = true;

	npi_error_save(&saved);
	for (int i = 0; complete && i < ld->rep.count; i++) {
		struct npi_manifest_view v;
		npushm_region_t *r = NULL;
		void *m = NULL;

		npi_node_copy_name(ld->name, ld->rep.nodes[i], copy, sizeof(copy));
		complete = !npushm_region_open(dev, copy, 0, &r) && !map_manifest(r, &m, &v) &&
			   !memcmp(v.hdr->hash, hash, 16) && owned_by(r, (uint32_t)geteuid());
		if (m)
			npushm_region_unmap(r, m);
		npushm_region_close(r);
	}
	npi_error_restore(&saved);
	return complete;
}

npushm_status_t npi_replicas_attach_local(npushm_dev_t *dev, const char *name, npushm_model_t *m)
{
	char copy[NPUSHM_NAME_MAX + 32];
	struct npi_saved_error saved;
	struct npi_manifest_view v;
	npushm_region_info_t ri;
	int node = npi_node_of_thread();
	npushm_region_t *r = NULL;
	bool sealed = false;
	npushm_status_t st;
	void *base = NULL;

	m->node = -1;
	if (node < 0)
		return NPUSHM_OK;
	npi_node_copy_name(name, node, copy, sizeof(copy));
	npi_error_save(&saved);
	if (npi_name_check(copy) || npushm_region_open(dev, copy, 0, &r)) {
		npi_error_restore(&saved);
		return NPUSHM_OK;	/* no copy for this node: the model's own */
	}
	if (r->id == m->region_id) {
		m->node = node;		/* the model's region is this node's copy */
		npushm_region_close(r);
		return NPUSHM_OK;
	}
	if (!owned_by(r, m->owner_uid)) {
		npi_log(NPUSHM_LOG_WARN,
			"'%s' is no copy of model '%s': it belongs to another user than the model (uid %u); mapping the model's own region",
			copy, name, m->owner_uid);
		npushm_region_close(r);
		npi_error_restore(&saved);
		return NPUSHM_OK;
	}
	st = dev->ops->region_sealed(r, &sealed);
	if (!st && !sealed)
		st = npi_fail(NPUSHM_ERR_CORRUPT, 0, "the copy '%s' of model '%s' is not sealed", copy, name);
	if (!st)
		st = npushm_region_info(r, &ri);
	if (!st)
		st = map_manifest(r, &base, &v);
	if (!st && (memcmp(v.hdr->hash, m->view.hdr->hash, 16) || r->size != m->size))
		st = npi_fail(NPUSHM_ERR_CORRUPT, 0,
			      "the copy '%s' of model '%s' holds other content than '%s' (another hash or size); load it again with --per-node --replace",
			      copy, name, name);
	if (st) {
		if (base)
			npushm_region_unmap(r, base);
		npushm_region_close(r);
		return st;
	}
	munmap(m->base, m->size);
	m->base = base;
	m->view = v;
	m->region_id = r->id;
	m->owner_uid = ri.owner_uid;
	m->node = node;
	npushm_region_close(r);
	return NPUSHM_OK;
}

void npi_replicas_remove(npushm_dev_t *dev, const char *name, uint32_t owner_uid)
{
	char copy[NPUSHM_NAME_MAX + 32];
	struct npi_saved_error saved;
	int max = npi_node_possible_max();
	uint32_t uid;

	npi_error_save(&saved);
	for (int node = 0; node <= max; node++) {
		npi_node_copy_name(name, node, copy, sizeof(copy));
		/* another user's region under a copy's name is theirs, not a copy */
		if (!npi_name_check(copy) && !npi_dir_name_owner(dev, copy, &uid) && uid == owner_uid)
			npushm_name_unlink(dev, copy);
	}
	npi_error_restore(&saved);
}
