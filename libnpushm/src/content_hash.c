/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * content_hash.c - the model content hash (see content_hash.h): XXH3-128
 * over the XXH3-128 digests of the file's 8 MiB blocks; and
 * npushm_file_hash(), the same for any file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "content_hash.h"
#include "internal.h"

#if defined(__x86_64__) || defined(__i386__)
/*
 * Weak: present in libxxhash.so, absent from Debian's libxxhash.a. A weak
 * reference pulls nothing out of an archive, so a static link still resolves
 * (to NULL) instead of failing on symbols the archive lacks.
 */
#define XXH_DISPATCH_DISABLE_REPLACE
#include <xxh_x86dispatch.h>
#pragma weak XXH3_128bits_dispatch
#pragma weak XXH3_128bits_update_dispatch
#define HAVE_DISPATCH 1
#else
#define HAVE_DISPATCH 0
#endif

XXH128_hash_t npi_xxh3_128(const void *p, size_t n)
{
#if HAVE_DISPATCH
	if (XXH3_128bits_dispatch)
		return XXH3_128bits_dispatch(p, n);
#endif
	return XXH3_128bits(p, n);
}

void npi_xxh3_128_update(XXH3_state_t *s, const void *p, size_t n)
{
#if HAVE_DISPATCH
	if (XXH3_128bits_update_dispatch) {
		XXH3_128bits_update_dispatch(s, p, n);
		return;
	}
#endif
	XXH3_128bits_update(s, p, n);
}

npushm_status_t npi_content_hash_init(struct npi_content_hash *c)
{
	c->block = XXH3_createState();
	c->top = XXH3_createState();
	c->pos = 0;
	if (!c->block || !c->top) {
		npi_content_hash_free(c);
		return npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot allocate the hash state");
	}
	XXH3_128bits_reset(c->block);
	XXH3_128bits_reset(c->top);
	return NPUSHM_OK;
}

/* Close the block being fed: its digest goes into the top-level hash. */
static void end_block(struct npi_content_hash *c)
{
	XXH128_canonical_t d;

	XXH128_canonicalFromHash(&d, XXH3_128bits_digest(c->block));
	XXH3_128bits_update(c->top, &d, sizeof(d));
	XXH3_128bits_reset(c->block);
}

void npi_content_hash_update(struct npi_content_hash *c, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		uint64_t room = NPI_HASH_BLOCK - c->pos % NPI_HASH_BLOCK;
		size_t k = n < room ? n : (size_t)room;

		npi_xxh3_128_update(c->block, b, k);
		c->pos += k;
		b += k;
		n -= k;
		if (c->pos % NPI_HASH_BLOCK == 0)
			end_block(c);
	}
}

void npi_content_hash_final(struct npi_content_hash *c, uint8_t out[16])
{
	if (c->pos % NPI_HASH_BLOCK)
		end_block(c);
	XXH128_canonicalFromHash((XXH128_canonical_t *)out, XXH3_128bits_digest(c->top));
}

void npi_content_hash_free(struct npi_content_hash *c)
{
	XXH3_freeState(c->block);
	XXH3_freeState(c->top);
	c->block = NULL;
	c->top = NULL;
}

void npi_content_hash_combine(const uint8_t (*blocks)[16], uint64_t n, uint8_t out[16])
{
	XXH128_canonicalFromHash((XXH128_canonical_t *)out, npi_xxh3_128(blocks, (size_t)n * 16));
}

#define FILE_HASH_CHUNK (1u << 20)

npushm_status_t npi_content_hash_fd(int fd, const char *path, uint8_t hash[16])
{
	struct npi_content_hash c = { 0 };
	uint8_t *buf = malloc(FILE_HASH_CHUNK);
	npushm_status_t st;
	ssize_t n;

	st = npi_content_hash_init(&c);
	if (!st && !buf)
		st = npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot allocate the hash buffer");
	if (st)
		goto out;
	while ((n = pread(fd, buf, FILE_HASH_CHUNK, (off_t)c.pos)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			st = npi_fail(NPUSHM_ERR_IO, errno, "cannot read '%s' at offset %llu", path,
				      (unsigned long long)c.pos);
			goto out;
		}
		npi_content_hash_update(&c, buf, (size_t)n);
	}
	npi_content_hash_final(&c, hash);
out:
	free(buf);
	npi_content_hash_free(&c);
	return st;
}

NPUSHM_API npushm_status_t npushm_file_hash(const char *path, uint8_t hash[16], char hex[33])
{
	npushm_status_t st;
	struct stat sb;
	int fd;

	if (!path || !hash)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_file_hash: NULL argument");
	/* O_NONBLOCK: a FIFO without a writer is refused below, not waited on. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		int err = errno;

		return npi_fail(err == ENOENT ? NPUSHM_ERR_NOT_FOUND :
				err == EACCES ? NPUSHM_ERR_ACCESS : NPUSHM_ERR_IO, err,
				"cannot open '%s'", path);
	}
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		st = npi_fail(NPUSHM_ERR_IO, 0, "'%s' is not a regular file", path);
	} else {
		fcntl(fd, F_SETFL, 0);
		posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
		st = npi_content_hash_fd(fd, path, hash);
	}
	if (!st && hex)
		npi_hex(hash, 16, hex);
	close(fd);
	return st;
}
