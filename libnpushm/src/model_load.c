/* SPDX-License-Identifier: MIT */
/*
 * model_load.c - load a safetensors file into one sealed, published region.
 *
 * Steps: validate the header (safetensors.c); lay out the region
 * (model_layout.c); allocate an *unnamed* region; stream the file into it
 * while hashing it (model_copy.c, model_copy_direct.c); write the manifest;
 * seal; then publish.
 * Until the publish the region has no name and dies with the loader, so a
 * loader killed at any point leaves neither a name nor memory behind, and
 * nobody can attach a partial model. Dedup: the hash is published as the
 * alias "xxh3:<hex>"; a later load of identical bytes publishes its name on
 * the aliased region and drops its own copy, and a load that finds no room
 * for its copy hashes the file alone and looks for that alias.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "content_hash.h"
#include "manifest.h"
#include "model_load.h"

void npi_load_progress(const struct load *ld, npushm_load_stage_t stage, uint64_t done,
		       uint64_t total)
{
	if (ld->opts && ld->opts->progress)
		ld->opts->progress(ld->opts->progress_arg, stage, done, total);
}

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
 * Copy the data in: straight into a mapping where the backend says that is
 * cheap (model_copy_direct.c: kmod, and posix on a huge-page tmpfs), else
 * through the backend's write call (model_copy.c).
 */
static npushm_status_t start_copy(struct load *ld)
{
	bool direct = !ld->r->dev->ops->region_write;
	npushm_status_t st;

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
	/* The mode is the region's: reusing it must not change it for its other names. */
	want = dev->backend == NPUSHM_BACKEND_POSIX ? ld->mode & ~0222u : ld->mode;
	if (info.mode != want) {
		npi_log(NPUSHM_LOG_INFO, "the published copy has mode %04o, not %04o; making a new copy",
			info.mode, want);
		goto out;
	}
	npi_load_progress(ld, NPUSHM_LOAD_PUBLISH, 0, 1);
	st = npushm_region_publish(other, ld->name, ld->mode, NPUSHM_PUBLISH_PERSISTENT);
	if (st == NPUSHM_ERR_EXISTS) {
		npushm_region_unmap(other, m);
		npushm_region_close(other);
		return npi_fail(NPUSHM_ERR_EXISTS, EEXIST,
				"cannot load '%s': the name '%s' is already published; run `npushm rm %s` first or choose another --name",
				ld->path, ld->name, ld->name);
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

static npushm_status_t publish(struct load *ld, npushm_dev_t *dev, npushm_load_result_t *res)
{
	char alias[64];
	bool dedup = false;
	npushm_status_t st;

	if (!(ld->opts && (ld->opts->flags & NPUSHM_LOAD_NO_DEDUP))) {
		st = try_dedup(ld, dev, &dedup);
		if (st)
			return st;
	}
	if (!dedup) {
		ld->used_id = ld->r->id;
		ld->used_size = ld->r->size;
		npi_load_progress(ld, NPUSHM_LOAD_PUBLISH, 0, 1);
		st = npushm_region_publish(ld->r, ld->name, ld->mode, NPUSHM_PUBLISH_PERSISTENT);
		if (st == NPUSHM_ERR_EXISTS)
			return npi_fail(st, EEXIST,
					"cannot load '%s': the name '%s' is already published; run `npushm rm %s` first or choose another --name",
					ld->path, ld->name, ld->name);
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
	if (opts && (opts->flags & ~NPUSHM_LOAD_NO_DEDUP))
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_model_load: unknown flags 0x%x", opts->flags);
	return NPUSHM_OK;
}

NPUSHM_API npushm_status_t npushm_model_load(npushm_dev_t *dev, const char *path, const char *name,
					     const npushm_load_opts_t *opts,
					     npushm_load_result_t *result)
{
	struct load ld = { .path = path, .name = name, .opts = opts, .fd = -1 };
	uint8_t *manifest = NULL;
	struct stat st1;
	npushm_status_t st;

	if (result)
		memset(result, 0, sizeof(*result));
	st = check_args(dev, path, name, opts, &ld.mode);
	if (st)
		return st;
	ld.fd = open(path, O_RDONLY | O_CLOEXEC);
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
	posix_fadvise(ld.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	st = read_header(&ld);
	if (st) {
		if (st == NPUSHM_ERR_FORMAT)
			npi_error_prefix("'%s' is not a valid safetensors file", path);
		goto out;
	}
	npi_load_progress(&ld, NPUSHM_LOAD_PARSE, ld.h->count, ld.h->count);
	st = npi_load_plan(ld.h, &ld.l, dev->page_size);
	if (st)
		goto out;
	st = npushm_region_alloc(dev, ld.l.region_size, NPUSHM_ALLOC_LAZY, &ld.r);
	if (!st)
		st = start_copy(&ld);
	if ((st == NPUSHM_ERR_NO_SPACE || st == NPUSHM_ERR_QUOTA) &&
	    !(opts && (opts->flags & NPUSHM_LOAD_NO_DEDUP))) {
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
	npi_load_progress(&ld, NPUSHM_LOAD_SEAL, 0, 1);
	st = npi_load_manifest(ld.h, &ld.l, (uint64_t)ld.st0.st_size, ld.hash, &manifest);
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
	st = publish(&ld, dev, result);
	if (!st)
		npi_load_progress(&ld, NPUSHM_LOAD_DONE, 1, 1);
out:
	free(manifest);
	if (ld.map)
		npushm_region_unmap(ld.r, ld.map);
	npushm_region_close(ld.r);
	free(ld.l.dst);
	npi_st_free(ld.h);
	free(ld.prefix);
	if (ld.fd >= 0)
		close(ld.fd);
	return st;
}
