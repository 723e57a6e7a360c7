/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * loader.h - what the loader's files share: the state of one load
 * (model_load.c drives it), the region layout and manifest builder
 * (model_layout.c), the two copy pipelines (model_copy.c through a
 * buffer, model_copy_direct.c straight into a mapping) and the per-node
 * copies (model_replicas.c). Each of those steps takes the state from here,
 * none calls back into model_load.c.
 */
#ifndef NPUSHM_LOADER_H
#define NPUSHM_LOADER_H

#include <sys/stat.h>

#include "internal.h"
#include "model_nodes.h"
#include "safetensors.h"

#define LOAD_CHUNK (1u << 20)		/* bytes per read; fits in L2 */
#define LOAD_SLOTS 4			/* chunks in flight between reader and writer */

/* one packed layout to make (npushm_packer_t), in region order */
struct packed {
	size_t file_index;		/* of its tensor in the header */
	char tag[NPUSHM_LAYOUT_TAG_MAX];
	uint64_t offset, nbytes;
	uint8_t hash[16];
};

/* l.dst of a tensor stored only in its packed layout */
#define NPI_NOT_STORED UINT64_MAX

struct layout {
	bool packed_only;		/* NPUSHM_LOAD_PACKED_ONLY: packed tensors not stored */
	uint64_t manifest_size;
	uint64_t data_offset;
	uint64_t data_end;
	uint64_t region_size;
	uint64_t *dst;			/* region offset per tensor (file order), or NPI_NOT_STORED */
	uint64_t dims_count;
	uint64_t strings_size;
	uint64_t metadata_size;
	struct packed *packed;		/* npacked entries, after the tensors */
	size_t npacked;
	uint64_t layouts_offset;	/* in the manifest: the table, then the tags */
	uint64_t tags_size;
};

/* NPUSHM_LOAD_PER_NODE: the nodes that get a copy; copy[0] is the load's own region (ld->r) */
struct replicas {
	int count;			/* 0: not a per-node load */
	int nodes[NPI_MAX_NODES];
	npushm_region_t *copy[NPI_MAX_NODES];
};

struct load {
	const char *path;
	const char *name;
	uint32_t mode;
	const npushm_load_opts_t *opts;
	int fd;
	struct stat st0;
	uint8_t *prefix;		/* 8 + N bytes: length and header */
	struct npi_st_header *h;
	struct layout l;
	npushm_region_t *r;
	void *map;
	uint8_t hash[16];		/* the model's: the file's, or with layouts the content hash */
	uint8_t source_hash[16];	/* the file's */
	char hash_hex[33];
	uint64_t used_id, used_size;	/* the region the name ended up on */
	struct replicas rep;
};

/* Call the load's progress callback, if any. */
static inline void npi_load_progress(const struct load *ld, npushm_load_stage_t stage,
				     uint64_t done, uint64_t total)
{
	if (ld->opts && ld->opts->progress)
		ld->opts->progress(ld->opts->progress_arg, stage, done, total);
}

/* model_layout.c: where everything goes, and the manifest bytes (caller frees @out). */
npushm_status_t npi_load_plan(const struct npi_st_header *h, struct layout *l, uint64_t page,
			      const npushm_packer_t *packer);
/* @hash: the model's (the file's, or the content hash with layouts); @source_hash the file's */
npushm_status_t npi_load_manifest(const struct npi_st_header *h, const struct layout *l,
				  uint64_t source_size, const uint8_t source_hash[16],
				  const uint8_t hash[16], uint8_t **out);
/* npushm_tensor_t of tensor @i of @h (file order) at @data; @strides: room for its ndim */
void npi_load_tensor_view(const struct npi_st_header *h, size_t i, const void *data,
			  int64_t *strides, npushm_tensor_t *t);
/* Write @len bytes at region offset @off, through the handle or the mapping @map. */
npushm_status_t npi_load_put(npushm_region_t *r, void *map, const void *buf, size_t len,
			     uint64_t off);

/* model_copy.c: stream the data into ld->r while hashing the file. */
npushm_status_t npi_load_copy(struct load *ld);
/* model_copy_direct.c: the same, reading straight into the mapped region ld->map. */
npushm_status_t npi_load_copy_direct(struct load *ld);

/* model_replicas.c: the per-node copies (NPUSHM_LOAD_PER_NODE). */
/* A region of @size bytes allocated now with this thread's memory bound to @node. */
npushm_status_t npi_replicas_alloc(struct load *ld, npushm_dev_t *dev, uint64_t size, int node,
				   npushm_region_t **rp);
/* ld->r sealed: check it lies on the first node, make and seal the other copies. */
npushm_status_t npi_replicas_make(struct load *ld, npushm_dev_t *dev);
/* NAME before anything is copied when a copy's name ("NAME@nodeN") is too long. */
npushm_status_t npi_replicas_check_names(const struct load *ld, npushm_dev_t *dev);
/* Publish "NAME@nodeN" for every copy (all or none). */
npushm_status_t npi_replicas_publish(struct load *ld, npushm_dev_t *dev, uint32_t flags);
/* Unlink them again (NAME could not be published). */
void npi_replicas_unpublish(struct load *ld, npushm_dev_t *dev);
/* Whether every node's copy is published with content hash @hash. */
bool npi_replicas_complete(const struct load *ld, npushm_dev_t *dev, const uint8_t hash[16]);
void npi_replicas_free(struct replicas *rep);

#endif
