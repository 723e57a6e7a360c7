/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * model_load.c - load a safetensors file into one sealed, published region.
 *
 * Steps: validate the header (safetensors.c); check the name (taken by the
 * same content: done; by other content: EXISTS unless replacing); lay out the region
 * (model_layout.c); allocate an *unnamed* region; stream the file into it
 * while hashing it (model_copy.c, model_copy_direct.c); write the manifest;
 * seal; then publish.
 * Until the publish the region has no name and dies with the loader, so a
 * loader killed at any point leaves neither a name nor memory behind, and
 * nobody can attach a partial model. Dedup: the hash is published as the
 * alias "xxh3:<hex>"; a later load of identical bytes publishes its name on
 * the aliased region and drops its own copy, and a load that finds no room
 * for its copy hashes the file alone and looks for that alias. Only the
 * caller's own regions are reused (dedup, "already loaded"): anyone may
 * publish a region whose manifest claims any hash, and root could name it.
 * NPUSHM_LOAD_PER_NODE: the region is allocated on the first node with
 * CPUs, and after the seal one copy per other node is made before anything
 * is published (model_replicas.c); such a load never reuses a copy.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "content_hash.h"
#include "manifest.h"
#include "model.h"
#include "loader.h"

static npushm_status_t read_header(struct load *ld)
{
	uint8_t first8[8];
	uint64_t n;
	size_t got;
	int err;
	npushm_status_t st;

	err = npi_pread_full(ld->fd, first8, ld->st0.st_size < 8 ? (size_t)ld->st0.st_size : 8, 0, &got);
	if (err)
		return npi_fail(NPUSHM_ERR_IO, err, "cannot read '%s'", ld->path);
	st = npi_st_check_prefix(first8, (uint64_t)ld->st0.st_size, &n);
	if (st)
		return st;
	ld->prefix = malloc(8 + n);
	if (!ld->prefix)
		return npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot allocate %llu bytes for the header",
				(unsigned long long)n);
	err = npi_pread_full(ld->fd, ld->prefix, 8 + n, 0, &got);
	if (err)
		return npi_fail(NPUSHM_ERR_IO, err, "cannot read the header of '%s'", ld->path);
	if (got != 8 + n)
		return npi_fail(NPUSHM_ERR_FORMAT, 0, "the file ended after %zu of %llu header bytes", got,
				(unsigned long long)(8 + n));
	return npi_st_parse((const char *)ld->prefix + 8, (size_t)n, (uint64_t)ld->st0.st_size, &ld->h);
}

static bool same_file_state(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/*
 * Packed-only: the buffered copy, which leaves out the tensors stored only
 * as layouts (a backend without a write call is written through a mapping).
 */
static npushm_status_t copy_skipping_packed(struct load *ld, bool mapped)
{
	npushm_status_t st;

	if (mapped && (st = npushm_region_map(ld->r, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE,
					      &ld->map)))
		return st;
	return npi_load_copy(ld);
}

/*
 * The plain bytes of file tensor @i for the packer: in the region, or, for a
 * tensor stored only as its layout, read from the file into *@tmp (the
 * caller frees it).
 */
static npushm_status_t plain_bytes(struct load *ld, size_t i, const void **data, void **tmp)
{
	const struct npi_st_tensor *t = &ld->h->tensors[i];
	size_t got;
	int err;

	*tmp = NULL;
	if (ld->l.dst[i] != NPI_NOT_STORED) {
		*data = (const char *)ld->map + ld->l.dst[i];
		return NPUSHM_OK;
	}
	if (!(*tmp = malloc(t->nbytes ? t->nbytes : 1)))
		return npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot load '%s': no memory to pack "
				"tensor '%s' (%llu bytes)", ld->path, t->name,
				(unsigned long long)t->nbytes);
	err = npi_pread_full(ld->fd, *tmp, t->nbytes, ld->h->data_start + t->begin, &got);
	if (err || got != t->nbytes)
		return npi_fail(NPUSHM_ERR_IO, err, "cannot read tensor '%s' of '%s' to pack it",
				t->name, ld->path);
	*data = *tmp;
	return NPUSHM_OK;
}

/*
 * Copy the data in: straight into a mapping where the backend says that is
 * cheap (model_copy_direct.c: kmod, and posix on a huge-page tmpfs), else
 * through the backend's write call (model_copy.c).
 */
static npushm_status_t start_copy(struct load *ld)
{
	bool direct = !ld->r->dev->ops->region_write;
	npushm_status_t st;

	if (ld->l.packed_only)
		return copy_skipping_packed(ld, direct);
	if (!direct && ld->r->dev->ops->region_prepare_direct) {
		st = ld->r->dev->ops->region_prepare_direct(ld->r, &direct);
		if (st)
			return st;
	}
	if (!direct)
		return npi_load_copy(ld);
	st = npushm_region_map(ld->r, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, &ld->map);
	if (st)
		return st;
	return npi_load_copy_direct(ld);
}

static bool replacing(const struct load *ld);
static npushm_status_t name_taken(const struct load *ld, const char *what);

static const npushm_packer_t *packer_of(const struct load *ld)
{
	return ld->opts && ld->opts->packer && ld->opts->packer->size ? ld->opts->packer : NULL;
}

/*
 * After the copy: the packer writes each layout after the tensors, through
 * a writable mapping of the still unsealed region; each layout's bytes are
 * hashed, and the model's hash becomes the content hash of the file's and
 * the layouts' (manifest.h).
 */
static npushm_status_t pack_layouts(struct load *ld)
{
	const npushm_packer_t *pk = packer_of(ld);
	int64_t strides[NPUSHM_TENSOR_MAX_DIMS];
	const char **names = NULL, **tags = NULL;
	uint8_t (*hashes)[16] = NULL;
	npushm_status_t st = NPUSHM_OK;
	npushm_tensor_t t;
	char why[256];

	if (!ld->l.npacked)
		return NPUSHM_OK;
	if (!pk->pack)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_model_load: the packer has no pack function");
	if (!ld->map && (st = npushm_region_map(ld->r, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, &ld->map)))
		return st;
	names = calloc(ld->l.npacked, sizeof(*names));
	tags = calloc(ld->l.npacked, sizeof(*tags));
	hashes = calloc(ld->l.npacked, sizeof(*hashes));
	if (!names || !tags || !hashes) {
		st = npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot allocate the layouts' hashes");
		goto out;
	}
	for (size_t i = 0; i < ld->l.npacked; i++) {
		struct packed *p = &ld->l.packed[i];
		char *dst = (char *)ld->map + p->offset;
		XXH128_canonical_t c;
		const void *plain = NULL;
		void *tmp;
		int bad;

		npi_load_progress(ld, NPUSHM_LOAD_SEAL, i, ld->l.npacked);
		if ((st = plain_bytes(ld, p->file_index, &plain, &tmp))) {
			free(tmp);
			goto out;
		}
		npi_load_tensor_view(ld->h, p->file_index, plain, strides, &t);
		why[0] = '\0';
		bad = pk->pack(pk->arg, &t, p->tag, dst, p->nbytes, why, sizeof(why));
		why[sizeof(why) - 1] = '\0';	/* a packer that filled it without a NUL */
		free(tmp);
		if (bad) {
			st = npi_fail(NPUSHM_ERR_INVALID, 0, "cannot load '%s': packing tensor '%s' "
				      "as '%s' failed: %s", ld->path, t.name, p->tag,
				      why[0] ? why : "the packer gave no reason");
			goto out;
		}
		XXH128_canonicalFromHash(&c, npi_xxh3_128(dst, p->nbytes));
		memcpy(p->hash, c.digest, 16);
		memcpy(hashes[i], c.digest, 16);
		names[i] = t.name;
		tags[i] = p->tag;
	}
	memcpy(ld->source_hash, ld->hash, 16);
	npi_manifest_content_hash(ld->source_hash, ld->l.packed_only, ld->l.npacked, names, tags,
				  (const uint8_t (*)[16])hashes, ld->hash);
	npi_hex(ld->hash, 16, ld->hash_hex);
out:
	free(names);
	free(tags);
	free(hashes);
	return st;
}

static uint32_t publish_flags(const struct load *ld)
{
	return NPUSHM_PUBLISH_PERSISTENT | (replacing(ld) ? NPUSHM_PUBLISH_REPLACE : 0);
}

/*
 * If the alias of our hash names a valid model with the same hash and
 * size, publish @name on it. *done = true when that worked.
 */
static npushm_status_t try_dedup(struct load *ld, npushm_dev_t *dev, bool *done)
{
	char alias[64];
	npushm_region_t *other = NULL;
	npushm_region_info_t info;
	struct npi_manifest_view v;
	void *m = NULL;
	npushm_status_t st;
	struct npi_saved_error saved;
	uint32_t want;

	*done = false;
	snprintf(alias, sizeof(alias), "%s%s", NPUSHM_HASH_ALIAS_PREFIX, ld->hash_hex);
	npi_error_save(&saved);
	if (npushm_region_open(dev, alias, 0, &other) != NPUSHM_OK)
		goto out;
	if (npushm_region_map(other, NPUSHM_PROT_READ, &m) != NPUSHM_OK)
		goto out;
	if (npi_manifest_check(m, other->size, &v) != NPUSHM_OK ||
	    memcmp(v.hdr->hash, ld->hash, 16) || v.hdr->source_size != (uint64_t)ld->st0.st_size) {
		npi_log(NPUSHM_LOG_WARN, "alias '%s' does not name a matching model; not reusing it", alias);
		goto out;
	}
	if (npushm_region_info(other, &info) != NPUSHM_OK || !(info.flags & NPUSHM_REGION_SEALED))
		goto out;
	/* Another user's copy: its bytes are theirs to choose (root could add a name to it) */
	if (info.owner_uid != (uint32_t)geteuid()) {
		npi_log(NPUSHM_LOG_INFO, "alias '%s' is a copy of uid %u; making this user's own copy",
			alias, info.owner_uid);
		goto out;
	}
	/* The mode is the region's: reusing it must not change it for its other names. */
	want = dev->backend == NPUSHM_BACKEND_POSIX ? ld->mode & ~0222u : ld->mode;
	if (info.mode != want) {
		npi_log(NPUSHM_LOG_INFO, "the published copy has mode %04o, not %04o; making a new copy",
			info.mode, want);
		goto out;
	}
	npi_load_progress(ld, NPUSHM_LOAD_PUBLISH, 0, 1);
	st = npushm_region_publish(other, ld->name, ld->mode, publish_flags(ld));
	if (st == NPUSHM_ERR_EXISTS || st == NPUSHM_ERR_ACCESS) {
		npushm_region_unmap(other, m);
		npushm_region_close(other);
		return st == NPUSHM_ERR_EXISTS ? name_taken(ld, "") : st;
	}
	if (st == NPUSHM_OK) {
		*done = true;
		ld->used_id = other->id;
		ld->used_size = other->size;
	}
out:
	if (m)
		npushm_region_unmap(other, m);
	npushm_region_close(other);
	npi_error_restore(&saved);
	return NPUSHM_OK;
}

static bool replacing(const struct load *ld)
{
	return ld->opts && (ld->opts->flags & NPUSHM_LOAD_REPLACE);
}

static npushm_status_t name_taken(const struct load *ld, const char *what)
{
	return npi_fail(NPUSHM_ERR_EXISTS, EEXIST,
			"cannot load '%s': the name '%s' is already published%s; run `npushm rm %s` first, choose another --name, or replace it with --replace",
			ld->path, ld->name, what, ld->name);
}

/*
 * The name is another user's (@owner, or unknown when UINT32_MAX): only
 * they or root may remove or replace it, so the advice is another name.
 */
static npushm_status_t name_taken_by_other(const struct load *ld, const char *what, uint32_t owner)
{
	char whose[48] = "its owner";

	if (geteuid() == 0)
		return name_taken(ld, what);
	if (owner != UINT32_MAX)
		snprintf(whose, sizeof(whose), "its owner (uid %u)", owner);
	return npi_fail(NPUSHM_ERR_EXISTS, EEXIST,
			"cannot load '%s': the name '%s' is already published%s; choose another --name (only %s or root may remove or replace it)",
			ld->path, ld->name, what, whose);
}

/*
 * The name is a file of uid @owner, not the caller's. Without REPLACE:
 * EXISTS saying to choose another name. With it: go on (OK) unless the
 * directory is sticky and the caller not root, where the rename at the end
 * would fail: ACCESS now, before the file is copied.
 */
static npushm_status_t others_name(const struct load *ld, npushm_dev_t *dev, const char *what,
				   uint32_t owner)
{
	struct stat ds;

	if (!replacing(ld))
		return name_taken_by_other(ld, what, owner);
	if (geteuid() == 0 || fstat(dev->fd, &ds) || !(ds.st_mode & S_ISVTX))
		return NPUSHM_OK;
	return npi_fail(NPUSHM_ERR_ACCESS, EPERM,
			"cannot load '%s' in place of '%s': the name is uid %u's, and only they or root may replace it; choose another --name",
			ld->path, ld->name, owner);
}

/*
 * Before anything is copied: is the name taken? Free: go on (*done false).
 * Taken by a sealed model of this file's size, hash and mode: *done, the
 * load is already done (only then is the file read, to hash it). Taken by
 * anything else: EXISTS, or go on when replacing.
 */
static npushm_status_t check_name_first(struct load *ld, npushm_dev_t *dev, bool *done)
{
	npushm_region_t *other = NULL;
	struct npi_saved_error saved;
	struct npi_manifest_view v;
	npushm_region_info_t info;
	const char *what = "";
	npushm_status_t st;
	void *m = NULL;
	struct stat st1;
	uint32_t want;
	char whose[64];

	*done = false;
	npi_error_save(&saved);
	st = npushm_region_open(dev, ld->name, 0, &other);
	if (st == NPUSHM_ERR_NOT_FOUND) {
		npi_error_restore(&saved);
		return NPUSHM_OK;
	}
	if (st == NPUSHM_ERR_NAME) {	/* too long for this backend's file names: not taken */
		npi_error_prefix("cannot load '%s'", ld->path);
		return st;
	}
	if (st == NPUSHM_ERR_ACCESS) {
		uint32_t owner;

		what = " (by another user; you may not read it)";
		/* the owner: a file of the directory we may not open */
		if (!npi_dir_name_owner(dev, ld->name, &owner) && owner != (uint32_t)geteuid()) {
			st = others_name(ld, dev, what, owner);
			if (st)
				return st;
		}
		goto taken;
	}
	if (st) {
		what = "";
		goto taken;
	}
	if (npushm_region_map(other, NPUSHM_PROT_READ, &m) ||
	    npi_manifest_check(m, other->size, &v) ||
	    npushm_region_info(other, &info) || !(info.flags & NPUSHM_REGION_SEALED)) {
		what = " (not as a model loaded by npushm)";
		goto taken;
	}
	/* another user's model is never "already loaded": its bytes are theirs to choose */
	if (info.owner_uid != (uint32_t)geteuid()) {
		snprintf(whose, sizeof(whose), " by a model of uid %u", info.owner_uid);
		what = whose;
		st = others_name(ld, dev, what, info.owner_uid);
		if (!st)
			goto taken;
		goto out;
	}
	if (packer_of(ld))
		goto taken;	/* packed layouts: no "already loaded" shortcut */
	want = dev->backend == NPUSHM_BACKEND_POSIX ? ld->mode & ~0222u : ld->mode;
	if (v.hdr->source_size != (uint64_t)ld->st0.st_size) {
		what = " with other content (a file of another size)";
		goto taken;
	}
	st = npi_content_hash_fd(ld->fd, ld->path, ld->hash);
	if (st)
		goto out;
	if (fstat(ld->fd, &st1) || !same_file_state(&ld->st0, &st1)) {
		st = npi_fail(NPUSHM_ERR_IO, 0, "'%s' changed while it was being read; load it again",
			      ld->path);
		goto out;
	}
	npi_hex(ld->hash, 16, ld->hash_hex);
	if (memcmp(v.hdr->hash, ld->hash, 16)) {
		what = " with other content (another hash)";
		goto taken;
	}
	if (info.mode != want) {
		if (replacing(ld))
			goto out;
		npushm_region_unmap(other, m);
		npushm_region_close(other);
		return npi_fail(NPUSHM_ERR_EXISTS, EEXIST,
				"cannot load '%s': the name '%s' already holds this file but with mode %04o, not %04o; run `npushm rm %s` first or replace it with --replace",
				ld->path, ld->name, info.mode, want, ld->name);
	}
	if (ld->rep.count && !npi_replicas_complete(ld, dev, ld->hash)) {
		what = " without a copy on every NUMA node";
		goto taken;
	}
	*done = true;
	ld->used_id = other->id;
	ld->used_size = other->size;
	goto out;
taken:
	st = replacing(ld) ? NPUSHM_OK : name_taken(ld, what);
	if (!st)
		npi_error_restore(&saved);
out:
	if (m)
		npushm_region_unmap(other, m);
	npushm_region_close(other);
	return st;
}

static void fill_result(const struct load *ld, npushm_load_result_t *res, bool dedup)
{
	if (!res)
		return;
	memcpy(res->hash, ld->hash, 16);
	memcpy(res->hash_hex, ld->hash_hex, 33);
	res->region_id = ld->used_id;
	res->region_size = ld->used_size;
	res->source_size = (uint64_t)ld->st0.st_size;
	res->tensor_count = ld->h->count;
	res->deduplicated = dedup;
}

static void fill_already(const struct load *ld, npushm_load_result_t *res)
{
	fill_result(ld, res, true);
	if (res)
		res->already_loaded = true;
}

static npushm_status_t publish(struct load *ld, npushm_dev_t *dev, npushm_load_result_t *res)
{
	char alias[64];
	bool dedup = false;
	npushm_status_t st;

	/* Per node: a published copy may lie anywhere, so never reuse one. */
	if (!(ld->opts && (ld->opts->flags & NPUSHM_LOAD_NO_DEDUP)) && !ld->rep.count) {
		st = try_dedup(ld, dev, &dedup);
		if (st)
			return st;
	}
	if (!dedup) {
		ld->used_id = ld->r->id;
		ld->used_size = ld->r->size;
		npi_load_progress(ld, NPUSHM_LOAD_PUBLISH, 0, 1);
		if (ld->rep.count) {
			st = npi_replicas_publish(ld, dev, publish_flags(ld));
			if (st)
				return st;
		}
		st = npushm_region_publish(ld->r, ld->name, ld->mode, publish_flags(ld));
		if (st && ld->rep.count)
			npi_replicas_unpublish(ld, dev);
		if (st == NPUSHM_ERR_EXISTS)
			return name_taken(ld, "");
		if (st) {
			npi_error_prefix("cannot load '%s'", ld->path);
			return st;
		}
		snprintf(alias, sizeof(alias), "%s%s", NPUSHM_HASH_ALIAS_PREFIX, ld->hash_hex);
		st = npushm_region_publish(ld->r, alias, ld->mode, NPUSHM_PUBLISH_PERSISTENT);
		if (st && st != NPUSHM_ERR_EXISTS)
			npi_log(NPUSHM_LOG_WARN, "model '%s' loaded but its hash alias was not published: %s",
				ld->name, npushm_last_error());
	}
	fill_result(ld, res, dedup);
	return NPUSHM_OK;
}

/*
 * No room for a copy (pool, quota or tmpfs full): maybe an identical copy is
 * published already. Drop the partial region, hash the file alone and try
 * the alias; otherwise report the original failure.
 */
static npushm_status_t reuse_without_room(struct load *ld, npushm_dev_t *dev,
					  npushm_load_result_t *result)
{
	struct npi_saved_error saved;
	struct stat st1;
	bool done = false;
	npushm_status_t st;

	npi_error_prefix("cannot load '%s' (%llu bytes)", ld->path, (unsigned long long)ld->l.region_size);
	npi_error_save(&saved);
	if (ld->map)
		npushm_region_unmap(ld->r, ld->map);
	ld->map = NULL;
	npushm_region_close(ld->r);
	ld->r = NULL;
	if (npi_content_hash_fd(ld->fd, ld->path, ld->hash) || fstat(ld->fd, &st1) ||
	    !same_file_state(&ld->st0, &st1))
		return npi_error_restore(&saved);
	npi_hex(ld->hash, 16, ld->hash_hex);
	st = try_dedup(ld, dev, &done);
	if (st)
		return st;
	if (!done)
		return npi_error_restore(&saved);
	npi_log(NPUSHM_LOG_INFO, "no room for a copy of '%s', reused the published one", ld->path);
	fill_result(ld, result, true);
	npi_load_progress(ld, NPUSHM_LOAD_DONE, 1, 1);
	return NPUSHM_OK;
}

static npushm_status_t check_args(npushm_dev_t *dev, const char *path, const char *name,
				  const npushm_load_opts_t *opts, uint32_t *mode)
{
	npushm_status_t st;

	if (!dev || !path)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_model_load: NULL argument");
	st = npi_name_check(name);
	if (st)
		return st;
	if (!strncmp(name, NPUSHM_HASH_ALIAS_PREFIX, strlen(NPUSHM_HASH_ALIAS_PREFIX)))
		return npi_fail(NPUSHM_ERR_NAME, 0,
				"model names may not start with '%s': that prefix is reserved for content-hash aliases",
				NPUSHM_HASH_ALIAS_PREFIX);
	*mode = opts && opts->mode ? opts->mode : 0640;
	if (*mode & ~0666u)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "mode %04o is not a subset of 0666", *mode);
	if (opts && (opts->flags & ~(NPUSHM_LOAD_NO_DEDUP | NPUSHM_LOAD_REPLACE |
				     NPUSHM_LOAD_PACKED_ONLY | NPUSHM_LOAD_PER_NODE)))
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_model_load: unknown flags 0x%x", opts->flags);
	if (opts && (opts->flags & NPUSHM_LOAD_PACKED_ONLY) &&
	    !(opts->packer && opts->packer->size))
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_model_load: NPUSHM_LOAD_PACKED_ONLY "
				"needs a packer (the layouts that replace the plain tensors)");
	return NPUSHM_OK;
}

NPUSHM_API npushm_status_t npushm_model_load(npushm_dev_t *dev, const char *path, const char *name,
					     const npushm_load_opts_t *opts,
					     npushm_load_result_t *result)
{
	struct load ld = { .path = path, .name = name, .opts = opts, .fd = -1 };
	npushm_region_t *old = NULL;
	uint8_t *manifest = NULL;
	bool done = false;
	struct stat st1;
	npushm_status_t st;

	if (result)
		memset(result, 0, sizeof(*result));
	st = check_args(dev, path, name, opts, &ld.mode);
	if (st)
		return st;
	if (opts && (opts->flags & NPUSHM_LOAD_PER_NODE)) {
		ld.rep.count = npi_nodes_with_cpus(ld.rep.nodes);
		st = npi_replicas_check_names(&ld, dev);
		if (st)
			return st;
	}
	/* O_NONBLOCK: a FIFO without a writer is refused below, not waited on. */
	ld.fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (ld.fd < 0) {
		int err = errno;

		return npi_fail(err == ENOENT ? NPUSHM_ERR_NOT_FOUND :
				err == EACCES ? NPUSHM_ERR_ACCESS : NPUSHM_ERR_IO, err,
				"cannot open '%s'", path);
	}
	if (fstat(ld.fd, &ld.st0) || !S_ISREG(ld.st0.st_mode)) {
		st = npi_fail(NPUSHM_ERR_IO, 0, "'%s' is not a regular file", path);
		goto out;
	}
	fcntl(ld.fd, F_SETFL, 0);
	posix_fadvise(ld.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	st = read_header(&ld);
	if (st) {
		if (st == NPUSHM_ERR_FORMAT)
			npi_error_prefix("'%s' is not a valid safetensors file", path);
		goto out;
	}
	npi_load_progress(&ld, NPUSHM_LOAD_PARSE, ld.h->count, ld.h->count);
	st = check_name_first(&ld, dev, &done);
	if (st)
		goto out;
	if (done) {
		fill_already(&ld, result);
		npi_load_progress(&ld, NPUSHM_LOAD_DONE, 1, 1);
		goto out;
	}
	ld.l.packed_only = opts && (opts->flags & NPUSHM_LOAD_PACKED_ONLY);
	st = npi_load_plan(ld.h, &ld.l, dev->page_size, packer_of(&ld));
	if (st)
		goto out;
	if (ld.rep.count)
		st = npi_replicas_alloc(&ld, dev, ld.l.region_size, ld.rep.nodes[0], &ld.r);
	else
		st = npushm_region_alloc(dev, ld.l.region_size, NPUSHM_ALLOC_LAZY, &ld.r);
	if (!st)
		st = start_copy(&ld);
	if ((st == NPUSHM_ERR_NO_SPACE || st == NPUSHM_ERR_QUOTA) &&
	    !(opts && (opts->flags & NPUSHM_LOAD_NO_DEDUP)) && !packer_of(&ld) && !ld.rep.count) {
		st = reuse_without_room(&ld, dev, result);
		goto out;
	}
	if (st)
		goto out;
	if (fstat(ld.fd, &st1) || !same_file_state(&ld.st0, &st1)) {
		st = npi_fail(NPUSHM_ERR_IO, 0, "'%s' changed while it was being loaded; load it again",
			      path);
		goto out;
	}
	memcpy(ld.source_hash, ld.hash, 16);
	st = pack_layouts(&ld);
	if (st)
		goto out;
	npi_load_progress(&ld, NPUSHM_LOAD_SEAL, 0, 1);
	st = npi_load_manifest(ld.h, &ld.l, (uint64_t)ld.st0.st_size, ld.source_hash, ld.hash,
			       &manifest);
	if (st)
		goto out;
	st = npi_load_put(ld.r, ld.map, manifest, ld.l.manifest_size, 0);
	if (st)
		goto out;
	if (ld.map) {
		npushm_region_unmap(ld.r, ld.map);
		ld.map = NULL;
	}
	st = npushm_region_seal(ld.r);
	if (st) {
		npi_error_prefix("cannot load '%s'", path);
		goto out;
	}
	if (ld.rep.count) {
		st = npi_replicas_make(&ld, dev);
		if (st)
			goto out;
	}
	if (replacing(&ld)) {
		/* The model the name leaves: its alias goes too if nothing else names it. */
		struct npi_saved_error saved;

		npi_error_save(&saved);
		if (npushm_region_open(dev, name, 0, &old) != NPUSHM_OK)
			old = NULL;
		npi_error_restore(&saved);
	}
	st = publish(&ld, dev, result);
	if (!st && old && old->id != ld.used_id)
		npi_model_drop_lone_alias(dev, old, "the name moved to the new model");
	if (!st)
		npi_load_progress(&ld, NPUSHM_LOAD_DONE, 1, 1);
out:
	npi_replicas_free(&ld.rep);
	npushm_region_close(old);
	free(manifest);
	if (ld.map)
		npushm_region_unmap(ld.r, ld.map);
	npushm_region_close(ld.r);
	free(ld.l.dst);
	free(ld.l.packed);
	npi_st_free(ld.h);
	free(ld.prefix);
	if (ld.fd >= 0)
		close(ld.fd);
	return st;
}
