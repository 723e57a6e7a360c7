/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * model.h - the attached-model handle shared by model_attach.c (lookup),
 * model_dlpack.c (DLPack views) and model_remove.c.
 *
 * The model owns one read-only mapping of the region; it is reference
 * counted so that DLPack tensors handed to frameworks keep the mapping
 * alive after npushm_model_detach(). The last reference unmaps.
 */
#ifndef NPUSHM_MODEL_H
#define NPUSHM_MODEL_H

#include "internal.h"
#include "manifest.h"

struct npushm_model {
	atomic_int refs;
	void *base;			/* PROT_READ, MAP_SHARED */
	uint64_t size;
	uint64_t region_id;
	uint32_t owner_uid;		/* of that region: who loaded the weights */
	struct npi_manifest_view view;
	char *name;
	bool accept_packed_only;	/* npushm_model_accept_packed_only() was called */
	int node;			/* the NUMA node whose copy this is, -1: the model's own */
};

/* model_attach.c */
void npi_model_ref(npushm_model_t *m);
void npi_model_unref(npushm_model_t *m);
/* "model 'x' not found: ...; run `npushm load FILE --name x` first". */
npushm_status_t npi_model_not_found(const char *name);
/* model_remove.c: drop the hash alias of @r if it is the last name left (after a name moved away). */
void npi_model_drop_lone_alias(npushm_dev_t *dev, npushm_region_t *r, const char *why);
/* model_replicas.c: switch @m to the copy of the calling thread's node, if the model has one. */
npushm_status_t npi_replicas_attach_local(npushm_dev_t *dev, const char *name, npushm_model_t *m);
/* model_replicas.c: unlink every "NAME@nodeN" of @owner_uid's. */
void npi_replicas_remove(npushm_dev_t *dev, const char *name, uint32_t owner_uid);

#endif
